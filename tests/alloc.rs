//! Picks, previews, reservations and releases never touch the heap.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use workerpick::{LeastLoaded, Pool, PowerOfTwo, Random, Request, RoundRobin, Selector};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: defers to the system allocator; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCS.load(Ordering::Relaxed);
    f();
    ALLOCS.load(Ordering::Relaxed) - before
}

#[test]
fn the_hot_path_allocates_nothing() {
    for workers in [1u64, 8, 1024, 5000] {
        let pool = Pool::from_workers(0..workers).unwrap();
        let half = pool.eligibility(|w| w % 2 == 0);
        let masked = Request::new().eligible(&half);
        let heavy = Request::new().weight(7);
        let rr = RoundRobin::new();
        let modes: [&dyn Selector; 4] = [&Random, &rr, &PowerOfTwo, &LeastLoaded];
        let mut h = pool.handle();
        let mut run = || {
            for mode in modes {
                for req in [&Request::new(), &masked, &heavy] {
                    let _ = h.select_with(mode, req).unwrap();
                    let _ = h.preview_with(mode, req).unwrap();
                    let r = h.reserve_with(mode, req).unwrap();
                    let mut pinned = h.reserve_worker(&0, 1).unwrap();
                    pinned.retarget(r.worker()).unwrap();
                    drop((r, pinned));
                    let _ = pool.select_with(mode, req).unwrap();
                    drop(pool.reserve_with(mode, req).unwrap());
                }
            }
        };
        run(); // first use of thread-locals may set them up
        let n = allocations(|| {
            for _ in 0..100 {
                run();
            }
        });
        assert_eq!(n, 0, "{workers} workers: {n} allocations");
    }
}
