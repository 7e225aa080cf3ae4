//! Shared by the bench binaries: the modes compared (ours and the
//! reference's, side by side), the worker counts, the settings, where results
//! are written.

// Each bench binary uses a different part of this module.
#![allow(dead_code)]

pub mod bounded_hash;
pub mod counting;
pub mod cpu_time;
pub mod reference;
pub mod results;
pub mod settings;
pub mod thread_counts;

use reference::{Policy, RefLeastLoaded, RefPowerOfTwo, RefRandom, RefRoundRobin};
use std::path::PathBuf;
use workerpick::Mode;

/// Worker counts every single-thread group is measured at.
pub const WORKERS: [usize; 4] = [8, 64, 1024, 10_000];

/// The built-in modes the reference design has a counterpart for (every one
/// but device-aware), in `Mode::ALL`'s order.
pub const MODES: [Mode; 4] = [
    Mode::Random,
    Mode::RoundRobin,
    Mode::PowerOfTwo,
    Mode::LeastLoaded,
];

/// The reference design's plugin for `mode` (one of [`MODES`]).
pub fn reference_policy(mode: Mode) -> &'static dyn Policy<u64> {
    match mode {
        Mode::Random => &RefRandom,
        Mode::RoundRobin => &RefRoundRobin,
        Mode::PowerOfTwo => &RefPowerOfTwo,
        Mode::LeastLoaded => &RefLeastLoaded,
        other => panic!("the reference design has no {other} mode"),
    }
}

/// Runs `$body` with `$sel` bound to a fresh instance of `$mode`'s built-in
/// (one of [`MODES`]), as its concrete type, so direct calls stay direct
/// (`Mode::selector` would hand out a `dyn Selector`).
#[macro_export]
macro_rules! with_selector {
    ($mode:expr, |$sel:ident| $body:expr) => {
        match $mode {
            workerpick::Mode::Random => {
                let $sel = workerpick::Random::new();
                $body
            }
            workerpick::Mode::RoundRobin => {
                let $sel = workerpick::RoundRobin::new();
                $body
            }
            workerpick::Mode::PowerOfTwo => {
                let $sel = workerpick::PowerOfTwo::new();
                $body
            }
            workerpick::Mode::LeastLoaded => {
                let $sel = workerpick::LeastLoaded::new();
                $body
            }
            other => panic!("no direct selector for {other} in the benches"),
        }
    };
}

/// Where the non-criterion bench results go (`target/bench-report/`).
pub fn report_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("bench-report")
}

/// Whether the binary runs in `--test` mode (`cargo bench -- --test`): each
/// benchmark once, as a smoke test.
pub fn test_mode() -> bool {
    std::env::args().any(|a| a == "--test")
}
