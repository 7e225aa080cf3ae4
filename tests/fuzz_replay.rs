//! Replays the committed seed corpus of every fuzz target (`fuzz/corpus/<target>/seed-*`)
//! through the same code the libFuzzer targets run, so `cargo test` on stable covers
//! them. `fuzz/src/` holds the logic; the `fuzz/` crate itself needs nightly.
//!
//! Add a seed: copy a libFuzzer input (a crash reproducer, or one from a corpus
//! that `cargo fuzz cmin` kept) to `fuzz/corpus/<target>/seed-<name>`.

#[path = "../fuzz/src/concurrent.rs"]
mod concurrent;
#[path = "../fuzz/src/ops.rs"]
mod ops;
#[path = "../fuzz/src/scan.rs"]
mod scan;

/// Stands in for `fuzz/src/page.rs`, which ends the arrays at an inaccessible
/// page with `mmap` (the root crate does not depend on `libc`): here they are
/// plain heap arrays.
mod page {
    use std::sync::atomic::AtomicU32;

    pub fn at_page_end<R>(values: &[u32], excluded: &[u32], f: impl FnOnce(&[AtomicU32], &[u32]) -> R) -> R {
        let counters: Vec<AtomicU32> = values.iter().map(|&v| AtomicU32::new(v)).collect();
        f(&counters, excluded)
    }
}

use std::path::Path;

/// Runs `run` on every seed of `target`; fails if there is none, so a moved
/// corpus cannot pass silently.
fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable corpus directory").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-"))
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seed-* files in {}", dir.display());
    for seed in &seeds {
        let data = std::fs::read(seed).expect("readable seed");
        let outcome = std::panic::catch_unwind(|| run(&data));
        if let Err(panic) = outcome {
            eprintln!(
                "seed {} failed; replay it with `cargo +nightly fuzz run {target} {}`",
                seed.display(),
                seed.display()
            );
            std::panic::resume_unwind(panic);
        }
    }
}

#[test]
fn scan_seeds() {
    replay("scan", scan::run_bytes);
}

#[test]
fn ops_seeds() {
    replay("ops", ops::run_bytes);
}

#[test]
fn concurrent_seeds() {
    replay("concurrent", concurrent::run_bytes);
}
