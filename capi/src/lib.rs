//! A C ABI for `workerpick`: opaque pool, selector, handle and reservation
//! pointers, every mode by name, `wp_status` codes with messages.
//!
//! Misuse is an error code, not undefined behaviour: NULL pointers, a
//! pointer of the wrong kind, a second release, a reservation passed with
//! another pool, and reservations or handles used after their pool was freed
//! (they keep its storage alive). The one rule C imposes anyway: a pointer
//! must not be used after its own `_free` function (a freed handle's tag is
//! cleared, which catches many such calls, but its memory is returned).
//!
//! Worker ids are `uint64_t`: index your endpoints by them.

#![deny(unsafe_op_in_unsafe_fn)]

mod handles;
mod status;

pub use handles::{wp_handle, wp_pool, wp_reservation, wp_selector};
pub use status::{wp_last_error, wp_status, wp_status_message};

use handles::{Held, live, put, put_new, take};
use status::{fail, from_error, guard};
use std::ffi::{CStr, CString, c_char};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use workerpick::{Params, Pool, Registry};

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}

fn ok(result: Result<(), workerpick::Error>) -> wp_status {
    result.map_or_else(from_error, |()| wp_status::WP_OK)
}

/// # Safety
/// `s` is NULL or a NUL-terminated string.
unsafe fn text<'a>(s: *const c_char, what: &str) -> Result<&'a str, wp_status> {
    if s.is_null() {
        return Err(fail(wp_status::WP_ERR_NULL, &format!("{what} is NULL")));
    }
    // SAFETY: not NULL and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str().map_err(|_| {
        fail(
            wp_status::WP_ERR_INVALID_ARGUMENT,
            &format!("{what} is not UTF-8"),
        )
    })
}

fn mode_names() -> &'static [CString] {
    static NAMES: OnceLock<Vec<CString>> = OnceLock::new();
    NAMES.get_or_init(|| {
        Registry::new()
            .names()
            .filter_map(|n| CString::new(n).ok())
            .collect()
    })
}

/// How many modes resolve by name (see `wp_mode_name`).
///
/// Thread safety: any thread, any time.
#[unsafe(no_mangle)]
pub extern "C" fn wp_mode_count() -> usize {
    mode_names().len()
}

/// The canonical name of mode `index` (`0..wp_mode_count()`), a static
/// string; NULL for an index out of range.
///
/// Thread safety: any thread, any time.
#[unsafe(no_mangle)]
pub extern "C" fn wp_mode_name(index: usize) -> *const c_char {
    mode_names().get(index).map_or(std::ptr::null(), |n| n.as_ptr())
}

/// A new pool for up to `max_workers` worker slots (0: the library's
/// default), written to `*out`. Free it with `wp_pool_free`.
///
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_new(max_workers: usize, out: *mut *mut wp_pool) -> wp_status {
    guard(|| {
        let pool = if max_workers == 0 {
            Pool::new()
        } else {
            tri!(Pool::with_max_workers(max_workers).map_err(from_error))
        };
        let pool = wp_pool {
            tag: <wp_pool as handles::Tagged>::TAG,
            pool: Arc::new(pool),
        };
        // SAFETY: the caller's contract on `out`.
        unsafe { put_new(out, pool) }
    })
}

/// Frees the pool handle. Its handles and reservations stay valid and keep
/// the pool's storage until the last of them is freed.
///
/// Thread safety: no other call may use `pool` concurrently or afterwards.
///
/// # Safety
/// `pool` is NULL or a pointer from `wp_pool_new` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_free(pool: *mut wp_pool) -> wp_status {
    // SAFETY: the caller's contract.
    guard(|| unsafe { take(pool) })
}

/// Runs `f` on the live pool behind `pool`.
///
/// # Safety
/// As `wp_pool_free`'s `pool`.
unsafe fn with_pool(pool: *const wp_pool, f: impl FnOnce(&Pool<u64>) -> wp_status) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let pool = tri!(unsafe { live(pool) });
        f(&pool.pool)
    })
}

/// Adds `worker` (an accelerator in group 0 of capacity 1).
///
/// Thread safety: any thread, concurrently with any call but `wp_pool_free`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_insert(pool: *const wp_pool, worker: u64) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe { with_pool(pool, |p| ok(p.insert(worker))) }
}

/// Removes `worker`; its reservations stay valid.
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_remove(pool: *const wp_pool, worker: u64) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe { with_pool(pool, |p| ok(p.remove(&worker))) }
}

/// Sets `worker`'s capacity weight (1 to 65536).
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_set_capacity(pool: *const wp_pool, worker: u64, capacity: u32) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe { with_pool(pool, |p| ok(p.set_capacity(&worker, capacity))) }
}

/// Marks `worker` healthy (non-zero) or not (0).
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_set_healthy(pool: *const wp_pool, worker: u64, healthy: i32) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe { with_pool(pool, |p| ok(p.set_healthy(&worker, healthy != 0).map(drop))) }
}

/// Starts (`draining` non-zero) or ends (0) `worker`'s drain: a draining
/// worker takes no new reservation.
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_set_draining(pool: *const wp_pool, worker: u64, draining: i32) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe {
        with_pool(pool, |p| {
            ok(if draining != 0 {
                p.drain(&worker)
            } else {
                p.resume(&worker)
            })
        })
    }
}

/// Records the load `worker` reports of itself; `WP_ERR_UNKNOWN_WORKER` if
/// it is not in the set.
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_report_load(pool: *const wp_pool, worker: u64, load: u32) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe {
        with_pool(pool, |p| {
            if p.report_load(&worker, load) {
                wp_status::WP_OK
            } else {
                from_error(workerpick::Error::UnknownWorker)
            }
        })
    }
}

/// Writes `worker`'s in-flight load (booked through this pool) to `*out`.
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_in_flight(pool: *const wp_pool, worker: u64, out: *mut u32) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe {
        with_pool(pool, |p| match p.in_flight(&worker) {
            // SAFETY: the caller's contract on `out`.
            Some(load) => tri!(put(out, load).map(|()| wp_status::WP_OK)),
            None => from_error(workerpick::Error::UnknownWorker),
        })
    }
}

/// Writes the number of workers in the set (draining ones included) to `*out`.
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_pool_len(pool: *const wp_pool, out: *mut usize) -> wp_status {
    // SAFETY: the caller's contract.
    unsafe { with_pool(pool, |p| tri!(put(out, p.len()).map(|()| wp_status::WP_OK))) }
}

/// The mode called `name` (any spelling the library accepts), configured
/// by `params` (`"cpu-ratio=4"`, comma-separated `key=value`; NULL or "" for
/// none), written to `*out`. Free it with `wp_selector_free`.
///
/// Thread safety: any thread. A selector may be shared by all threads.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `params` likewise; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_selector_new(
    name: *const c_char,
    params: *const c_char,
    out: *mut *mut wp_selector,
) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let name = tri!(unsafe { text(name, "the mode name") });
        let params: Params = if params.is_null() {
            Params::new()
        } else {
            // SAFETY: the caller's contract.
            tri!(tri!(Ok(unsafe { text(params, "params") })).and_then(|p| p.parse().map_err(from_error)))
        };
        let selector = tri!(Registry::new().resolve_with(name, &params).map_err(from_error));
        let selector = wp_selector {
            tag: <wp_selector as handles::Tagged>::TAG,
            selector,
        };
        // SAFETY: the caller's contract on `out`.
        unsafe { put_new(out, selector) }
    })
}

/// Frees a selector.
///
/// Thread safety: no other call may use `selector` concurrently or afterwards.
///
/// # Safety
/// `selector` is NULL or a pointer from `wp_selector_new` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_selector_free(selector: *mut wp_selector) -> wp_status {
    // SAFETY: the caller's contract.
    guard(|| unsafe { take(selector) })
}

/// A picking handle on `pool`, written to `*out`: one per thread. It keeps
/// the pool's storage alive; free it with `wp_handle_free`.
///
/// Thread safety: as `wp_pool_insert`.
///
/// # Safety
/// `pool` is NULL or a live pool pointer; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_handle_new(pool: *const wp_pool, out: *mut *mut wp_handle) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let pool = tri!(unsafe { live(pool) });
        let handle = wp_handle {
            tag: <wp_handle as handles::Tagged>::TAG,
            handle: pool.pool.owned_handle(),
        };
        // SAFETY: the caller's contract on `out`.
        unsafe { put_new(out, handle) }
    })
}

/// Frees a handle.
///
/// Thread safety: no other call may use `handle` concurrently or afterwards.
///
/// # Safety
/// `handle` is NULL or a pointer from `wp_handle_new` not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_handle_free(handle: *mut wp_handle) -> wp_status {
    // SAFETY: the caller's contract.
    guard(|| unsafe { take(handle) })
}

/// The reservation's state; nothing panics under the lock, so a poisoned one
/// is still consistent.
fn lock(r: &wp_reservation) -> MutexGuard<'_, Held> {
    r.held.lock().unwrap_or_else(|e| e.into_inner())
}

fn reservation(held: workerpick::OwnedReservation<u64>) -> *mut wp_reservation {
    Box::into_raw(Box::new(wp_reservation {
        tag: <wp_reservation as handles::Tagged>::TAG,
        pool: Arc::as_ptr(held.pool()),
        held: Mutex::new(Held {
            worker: *held.worker(),
            booking: Some(held),
        }),
    }))
}

/// Books `weight` on the worker `selector` picks and writes the reservation
/// to `*out`. Release it with `wp_reservation_release` (optional) and free
/// it with `wp_reservation_free` (which releases it if still held).
///
/// Thread safety: one thread at a time per `handle` (it may move between
/// threads); `selector` may be shared.
///
/// # Safety
/// `handle` and `selector` are NULL or live pointers of their kinds; `out`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_reserve(
    handle: *mut wp_handle,
    selector: *const wp_selector,
    weight: u32,
    out: *mut *mut wp_reservation,
) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let selector = tri!(unsafe { live(selector) });
        // SAFETY: the caller's contract.
        tri!(unsafe { live(handle.cast_const()) });
        if out.is_null() {
            return fail(wp_status::WP_ERR_NULL, "the output pointer is NULL");
        }
        // SAFETY: live, and used by one thread at a time by the contract.
        let handle = unsafe { &mut *handle };
        let request = workerpick::Request::new().weight(weight);
        let held = tri!(
            handle
                .handle
                .reserve_with(&*selector.selector, &request)
                .map_err(from_error)
        );
        // SAFETY: checked not NULL; writable by the contract.
        unsafe { out.write(reservation(held)) };
        wp_status::WP_OK
    })
}

/// Books `weight` on `worker` itself; as `wp_reserve` otherwise.
///
/// Thread safety: one thread at a time per `handle`.
///
/// # Safety
/// `handle` is NULL or a live handle; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_reserve_worker(
    handle: *mut wp_handle,
    worker: u64,
    weight: u32,
    out: *mut *mut wp_reservation,
) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        tri!(unsafe { live(handle.cast_const()) });
        if out.is_null() {
            return fail(wp_status::WP_ERR_NULL, "the output pointer is NULL");
        }
        // SAFETY: live, and used by one thread at a time by the contract.
        let handle = unsafe { &mut *handle };
        let held = tri!(handle.handle.reserve_worker(&worker, weight).map_err(from_error));
        // SAFETY: checked not NULL; writable by the contract.
        unsafe { out.write(reservation(held)) };
        wp_status::WP_OK
    })
}

/// Writes the reserved worker's id to `*worker` (also after the release).
///
/// Thread safety: any thread, concurrently with any call but `wp_reservation_free`.
///
/// # Safety
/// `r` is NULL or a reservation not yet freed; `worker` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_reservation_worker(r: *const wp_reservation, worker: *mut u64) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = tri!(unsafe { live(r) });
        let id = lock(r).worker;
        // SAFETY: the caller's contract.
        tri!(unsafe { put(worker, id) });
        wp_status::WP_OK
    })
}

/// Gives the reservation's load back: `WP_OK` the first time,
/// `WP_ERR_ALREADY_RELEASED` after (changing nothing). Works after the pool
/// was freed.
///
/// Thread safety: any thread, concurrently with any call but
/// `wp_reservation_free`; of concurrent releases exactly one succeeds.
///
/// # Safety
/// `r` is NULL or a reservation not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_reservation_release(r: *const wp_reservation) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = tri!(unsafe { live(r) });
        let held = lock(r).booking.take();
        match held {
            // Dropped outside the lock: the drop is the release.
            Some(held) => {
                drop(held);
                wp_status::WP_OK
            }
            None => fail(
                wp_status::WP_ERR_ALREADY_RELEASED,
                "the reservation was already released",
            ),
        }
    })
}

/// Moves the reservation's load to `worker` in `pool`, which must be the
/// pool it was booked in (`WP_ERR_FOREIGN_RESERVATION` otherwise); an error
/// leaves it where it was.
///
/// Thread safety: as `wp_reservation_release`.
///
/// # Safety
/// `pool` is NULL or a live pool; `r` NULL or a reservation not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_reservation_retarget(
    pool: *const wp_pool,
    r: *const wp_reservation,
    worker: u64,
) -> wp_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let pool = tri!(unsafe { live(pool) });
        // SAFETY: the caller's contract.
        let r = tri!(unsafe { live(r) });
        if !std::ptr::eq(Arc::as_ptr(&pool.pool), r.pool) {
            return fail(
                wp_status::WP_ERR_FOREIGN_RESERVATION,
                "the reservation was booked in another pool",
            );
        }
        let mut held = lock(r);
        match held.booking.as_mut() {
            Some(h) => {
                tri!(h.retarget(&worker).map_err(from_error));
                held.worker = worker;
                wp_status::WP_OK
            }
            None => fail(
                wp_status::WP_ERR_ALREADY_RELEASED,
                "the reservation was already released",
            ),
        }
    })
}

/// Frees a reservation, releasing its load if it is still held.
///
/// Thread safety: no other call may use `r` concurrently or afterwards.
///
/// # Safety
/// `r` is NULL or a reservation not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wp_reservation_free(r: *mut wp_reservation) -> wp_status {
    // SAFETY: the caller's contract.
    guard(|| unsafe { take(r) })
}
