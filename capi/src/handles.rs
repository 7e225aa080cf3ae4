//! The opaque handles and their checks: every pointer the caller passes is
//! tested for NULL and for the tag of its kind before it is used.

use crate::status::{fail, wp_status};
use std::sync::{Arc, Mutex};
use workerpick::{OwnedHandle, OwnedReservation, Pool, Selector};

/// A set of workers (`uint64_t` ids) with their in-flight load.
#[allow(non_camel_case_types)]
pub struct wp_pool {
    pub(crate) tag: u64,
    pub(crate) pool: Arc<Pool<u64>>,
}

/// A mode, resolved by name, with its parameters.
#[allow(non_camel_case_types)]
pub struct wp_selector {
    pub(crate) tag: u64,
    pub(crate) selector: Arc<dyn Selector>,
}

/// A picking handle for one thread at a time: it caches the pool's worker
/// set, so picks through it load no shared pointer.
#[allow(non_camel_case_types)]
pub struct wp_handle {
    pub(crate) tag: u64,
    pub(crate) handle: OwnedHandle<u64>,
}

/// Load booked on a worker. It holds the pool's storage alive: a reservation
/// may outlive `wp_pool_free` and is released as usual.
#[allow(non_camel_case_types)]
pub struct wp_reservation {
    pub(crate) tag: u64,
    /// The pool it was booked in, to refuse it in another pool's calls.
    pub(crate) pool: *const Pool<u64>,
    pub(crate) held: Mutex<Held>,
}

/// A reservation's state, under its lock.
pub(crate) struct Held {
    /// `None` once released: the `take` that empties it is the one release.
    pub(crate) booking: Option<OwnedReservation<u64>>,
    /// The worker, kept for reading after the release.
    pub(crate) worker: u64,
}

// SAFETY: `pool` is only compared, never dereferenced; the rest is Send + Sync.
unsafe impl Send for wp_reservation {}
// SAFETY: as above.
unsafe impl Sync for wp_reservation {}

/// A handle kind and the tag its live objects carry; freeing one clears it.
pub(crate) trait Tagged {
    const TAG: u64;
    const KIND: &'static str;
    fn tag(&self) -> u64;
    /// Marks it freed ([`FREED`]).
    fn clear_tag(&mut self);
}

macro_rules! tagged {
    ($($ty:ident $tag:literal $kind:literal;)*) => {$(
        impl Tagged for $ty {
            const TAG: u64 = $tag;
            const KIND: &'static str = $kind;
            fn tag(&self) -> u64 {
                self.tag
            }
            fn clear_tag(&mut self) {
                self.tag = FREED;
            }
        }
    )*};
}
tagged! {
    wp_pool 0x5750_504f_4f4c_0001 "wp_pool";
    wp_selector 0x5750_5345_4c45_0002 "wp_selector";
    wp_handle 0x5750_4841_4e44_0003 "wp_handle";
    wp_reservation 0x5750_5245_5356_0004 "wp_reservation";
}

/// The tag written over a freed object's, so that a stale pointer whose
/// memory was not yet reused reads as no handle of any kind.
pub(crate) const FREED: u64 = 0;

/// `ptr` as a reference, or the status for a NULL or mistyped pointer.
/// Inlined: every call checks one or two pointers this way, and the error
/// paths stay out of line.
///
/// # Safety
/// `ptr` is NULL or points to memory that is readable for a `T` (a handle
/// of some kind this library returned and that was not freed).
#[inline(always)]
pub(crate) unsafe fn live<'a, T: Tagged>(ptr: *const T) -> Result<&'a T, wp_status> {
    if ptr.is_null() {
        return Err(null::<T>());
    }
    // SAFETY: not NULL, and readable by the caller's contract.
    let obj = unsafe { &*ptr };
    if obj.tag() != T::TAG {
        return Err(not_live::<T>());
    }
    Ok(obj)
}

#[cold]
#[inline(never)]
fn null<T: Tagged>() -> wp_status {
    fail(wp_status::WP_ERR_NULL, &format!("{} is NULL", T::KIND))
}

#[cold]
#[inline(never)]
fn not_live<T: Tagged>() -> wp_status {
    fail(
        wp_status::WP_ERR_INVALID_HANDLE,
        &format!("not a live {} (freed, or another kind of handle)", T::KIND),
    )
}

/// Checks `ptr` as [`live`] does, clears its tag and frees it.
///
/// # Safety
/// As [`live`]; and no other thread uses `ptr` from now on.
#[inline(always)]
pub(crate) unsafe fn take<T: Tagged>(ptr: *mut T) -> wp_status {
    // SAFETY: the caller's contract.
    if let Err(status) = unsafe { live(ptr.cast_const()) } {
        return status;
    }
    // SAFETY: a live handle is a `Box` this library leaked, and the caller
    // hands it back for good.
    let mut obj = unsafe { Box::from_raw(ptr) };
    obj.clear_tag();
    drop(obj);
    wp_status::WP_OK
}

/// Boxes `value` and writes the pointer through `out`; a NULL `out` fails
/// and drops `value` (nothing leaks).
///
/// # Safety
/// `out` is NULL or valid for a write of a pointer.
pub(crate) unsafe fn put_new<T>(out: *mut *mut T, value: T) -> wp_status {
    if out.is_null() {
        return fail(wp_status::WP_ERR_NULL, "the output pointer is NULL");
    }
    // SAFETY: not NULL, and writable by the caller's contract.
    unsafe { out.write(Box::into_raw(Box::new(value))) };
    wp_status::WP_OK
}

/// Writes `value` through `out`, or fails for a NULL `out`.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> Result<(), wp_status> {
    if out.is_null() {
        return Err(fail(wp_status::WP_ERR_NULL, "the output pointer is NULL"));
    }
    // SAFETY: not NULL, and writable by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}
