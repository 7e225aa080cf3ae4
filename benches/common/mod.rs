//! Shared by the bench binaries: the modes, ours and the reference's, side by
//! side; the worker counts; where results are written.

// Each bench binary uses a different part of this module.
#![allow(dead_code)]

pub mod counting;
pub mod cpu_time;
pub mod reference;
pub mod thread_counts;

use reference::{Policy, RefLeastLoaded, RefPowerOfTwo, RefRandom, RefRoundRobin};
use std::path::PathBuf;

/// Worker counts every single-thread group is measured at.
pub const WORKERS: [usize; 4] = [8, 64, 1024, 10_000];

/// The built-in modes, named as in the registry and in the group names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Random,
    RoundRobin,
    PowerOfTwo,
    LeastLoaded,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Random,
        Mode::RoundRobin,
        Mode::PowerOfTwo,
        Mode::LeastLoaded,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Random => "random",
            Mode::RoundRobin => "round-robin",
            Mode::PowerOfTwo => "power-of-two",
            Mode::LeastLoaded => "least-loaded",
        }
    }

    /// The reference design's plugin for this mode.
    pub fn reference(self) -> &'static dyn Policy<u64> {
        match self {
            Mode::Random => &RefRandom,
            Mode::RoundRobin => &RefRoundRobin,
            Mode::PowerOfTwo => &RefPowerOfTwo,
            Mode::LeastLoaded => &RefLeastLoaded,
        }
    }
}

/// Runs `$body` with `$sel` bound to a fresh instance of `$mode`'s built-in,
/// as its concrete type (so direct calls stay direct).
#[macro_export]
macro_rules! with_selector {
    ($mode:expr, |$sel:ident| $body:expr) => {
        match $mode {
            $crate::common::Mode::Random => {
                let $sel = workerpick::Random::new();
                $body
            }
            $crate::common::Mode::RoundRobin => {
                let $sel = workerpick::RoundRobin::new();
                $body
            }
            $crate::common::Mode::PowerOfTwo => {
                let $sel = workerpick::PowerOfTwo::new();
                $body
            }
            $crate::common::Mode::LeastLoaded => {
                let $sel = workerpick::LeastLoaded::new();
                $body
            }
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
