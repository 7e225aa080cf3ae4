//! The public constants mean the same under loom as in a real build: loom's
//! tiny storage comes from the crate's sync facade, not from its API.
#![cfg(loom)]

#[test]
fn default_max_workers_is_the_same_under_loom() {
    assert_eq!(workerpick::DEFAULT_MAX_WORKERS, 1 << 16);
}
