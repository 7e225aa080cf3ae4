//! A global allocator that counts allocations, for the benchmarks that report
//! allocations per operation (`allocs.rs`, and the peers through `#[path]`).
//! A binary opts in with `#[global_allocator] static GLOBAL: Counting = Counting;`.
//!
//! It counts every thread's allocations, unlike the tests' per-thread one
//! (`tests/common/counting.rs`): tower's `Buffer` serves a request on a
//! runtime thread, and those allocations are part of its cost.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts every allocation and reallocation; defers to the system allocator.
pub struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: defers every call to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations made by `ops` calls of `f`, after a warm-up of the same size
/// (first-use buffers are not per-operation costs).
pub fn per(ops: u64, mut f: impl FnMut()) -> u64 {
    for _ in 0..ops {
        f();
    }
    let before = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..ops {
        f();
    }
    ALLOCS.load(Ordering::Relaxed) - before
}
