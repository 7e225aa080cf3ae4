//! Arrays that end exactly where an inaccessible page begins, so a scan that
//! reads past the end of its slice faults. AddressSanitizer cannot catch that:
//! the vector backends issue their counter loads from inline `asm!`, which it
//! does not instrument. (The stable replay test stands in a heap version.)

use std::sync::atomic::{AtomicU32, Ordering};

/// `values` as counters ending at an inaccessible page, and `excluded` as a
/// plain array ending at another; runs `f` on them.
pub fn at_page_end<R>(values: &[u32], excluded: &[u32], f: impl FnOnce(&[AtomicU32], &[u32]) -> R) -> R {
    let counters = Mapping::new(values.len());
    let lanes = Mapping::new(excluded.len());
    // SAFETY: each mapping holds `len` zeroed, 4-aligned, writable u32 lanes at
    // `start`, alive until the mappings drop after `f` returns; zero bytes are a
    // valid `AtomicU32`, and the two mappings do not overlap.
    let (c, e) = unsafe {
        let c = std::slice::from_raw_parts(counters.start.cast::<AtomicU32>(), values.len());
        let e = std::slice::from_raw_parts_mut(lanes.start, excluded.len());
        (c, e)
    };
    for (c, &v) in c.iter().zip(values) {
        c.store(v, Ordering::Relaxed);
    }
    e.copy_from_slice(excluded);
    f(c, e)
}

/// `len` u32 lanes ending at a `PROT_NONE` page.
struct Mapping {
    base: *mut libc::c_void,
    size: usize,
    start: *mut u32,
}

impl Mapping {
    fn new(len: usize) -> Self {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).expect("page size");
        let bytes = len * 4;
        let data = bytes.div_ceil(page).max(1) * page;
        let size = data + page;
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED, "mmap");
        // SAFETY: `base + data .. base + size` is the last page of the mapping above.
        let guard = unsafe { base.cast::<u8>().add(data) };
        // SAFETY: as above; that page is ours and nothing points into it.
        assert_eq!(
            unsafe { libc::mprotect(guard.cast(), page, libc::PROT_NONE) },
            0,
            "mprotect"
        );
        // SAFETY: `bytes <= data`, so the start stays inside the mapping.
        let start = unsafe { guard.sub(bytes) }.cast::<u32>();
        Self { base, size, start }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `new` made; the slices into it died
        // with the `at_page_end` call that borrowed them.
        unsafe { libc::munmap(self.base, self.size) };
    }
}
