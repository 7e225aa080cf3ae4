//! Status codes, their messages, and the last error's full message per thread.

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use workerpick::Error;

/// What every fallible function returns. `WP_OK` is 0; every other value is
/// an error, described by `wp_status_message` and, in full for the last error
/// on the calling thread, by `wp_last_error`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum wp_status {
    /// Success.
    WP_OK = 0,
    /// A required pointer argument was NULL.
    WP_ERR_NULL = 1,
    /// A pointer does not point to a live object of the expected kind.
    WP_ERR_INVALID_HANDLE = 2,
    /// The reservation's load was already given back.
    WP_ERR_ALREADY_RELEASED = 3,
    /// The reservation belongs to another pool than the one passed.
    WP_ERR_FOREIGN_RESERVATION = 4,
    /// A string argument is not valid UTF-8, or an argument is out of range.
    WP_ERR_INVALID_ARGUMENT = 5,
    /// The worker set is empty.
    WP_ERR_NO_WORKERS = 6,
    /// The eligibility rules excluded every worker.
    WP_ERR_NO_ELIGIBLE_WORKER = 7,
    /// The selector declined every candidate.
    WP_ERR_NO_ACCEPTABLE_WORKER = 8,
    /// The worker named is not in the set.
    WP_ERR_UNKNOWN_WORKER = 9,
    /// The worker is already in the set.
    WP_ERR_DUPLICATE_WORKER = 10,
    /// No mode has that name.
    WP_ERR_UNKNOWN_MODE = 11,
    /// A configuration value or mode parameter is out of range.
    WP_ERR_INVALID_CONFIG = 12,
    /// The set would exceed the pool's worker limit.
    WP_ERR_CAPACITY_EXCEEDED = 13,
    /// Booking the weight would take the worker's load past UINT32_MAX.
    WP_ERR_LOAD_OVERFLOW = 14,
    /// The worker is draining and takes no new reservation.
    WP_ERR_DRAINING = 15,
    /// An error this version of the header has no code for.
    WP_ERR_OTHER = 16,
    /// A bug: the library panicked; the call had no effect that can be relied on.
    WP_ERR_PANIC = 17,
}

impl wp_status {
    const ALL: [wp_status; 18] = [
        wp_status::WP_OK,
        wp_status::WP_ERR_NULL,
        wp_status::WP_ERR_INVALID_HANDLE,
        wp_status::WP_ERR_ALREADY_RELEASED,
        wp_status::WP_ERR_FOREIGN_RESERVATION,
        wp_status::WP_ERR_INVALID_ARGUMENT,
        wp_status::WP_ERR_NO_WORKERS,
        wp_status::WP_ERR_NO_ELIGIBLE_WORKER,
        wp_status::WP_ERR_NO_ACCEPTABLE_WORKER,
        wp_status::WP_ERR_UNKNOWN_WORKER,
        wp_status::WP_ERR_DUPLICATE_WORKER,
        wp_status::WP_ERR_UNKNOWN_MODE,
        wp_status::WP_ERR_INVALID_CONFIG,
        wp_status::WP_ERR_CAPACITY_EXCEEDED,
        wp_status::WP_ERR_LOAD_OVERFLOW,
        wp_status::WP_ERR_DRAINING,
        wp_status::WP_ERR_OTHER,
        wp_status::WP_ERR_PANIC,
    ];

    fn message(self) -> &'static str {
        match self {
            wp_status::WP_OK => "ok\0",
            wp_status::WP_ERR_NULL => "a required pointer argument is NULL\0",
            wp_status::WP_ERR_INVALID_HANDLE => "the pointer is not a live handle of the expected kind\0",
            wp_status::WP_ERR_ALREADY_RELEASED => "the reservation was already released\0",
            wp_status::WP_ERR_FOREIGN_RESERVATION => "the reservation belongs to another pool\0",
            wp_status::WP_ERR_INVALID_ARGUMENT => "an argument is out of range or not valid UTF-8\0",
            wp_status::WP_ERR_NO_WORKERS => "no workers: the worker set is empty\0",
            wp_status::WP_ERR_NO_ELIGIBLE_WORKER => "no eligible worker\0",
            wp_status::WP_ERR_NO_ACCEPTABLE_WORKER => "no acceptable worker\0",
            wp_status::WP_ERR_UNKNOWN_WORKER => "unknown worker: it is not in the current worker set\0",
            wp_status::WP_ERR_DUPLICATE_WORKER => "duplicate worker: it is already in the set\0",
            wp_status::WP_ERR_UNKNOWN_MODE => "unknown mode name\0",
            wp_status::WP_ERR_INVALID_CONFIG => "invalid configuration\0",
            wp_status::WP_ERR_CAPACITY_EXCEEDED => "capacity exceeded: the pool's worker limit is reached\0",
            wp_status::WP_ERR_LOAD_OVERFLOW => "load overflow: the worker's load would pass UINT32_MAX\0",
            wp_status::WP_ERR_DRAINING => "worker draining: it takes no new reservations\0",
            wp_status::WP_ERR_OTHER => "error\0",
            wp_status::WP_ERR_PANIC => "internal error (a panic in the library)\0",
        }
    }
}

thread_local! {
    static LAST: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error and returns `status`.
pub(crate) fn fail(status: wp_status, message: &str) -> wp_status {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST.with(|last| *last.borrow_mut() = text);
    status
}

/// The status for `err`, recording its `Display` text as the last error.
pub(crate) fn from_error(err: Error) -> wp_status {
    let status = match err {
        Error::NoWorkers => wp_status::WP_ERR_NO_WORKERS,
        Error::NoEligibleWorker => wp_status::WP_ERR_NO_ELIGIBLE_WORKER,
        Error::NoAcceptableWorker => wp_status::WP_ERR_NO_ACCEPTABLE_WORKER,
        Error::UnknownWorker => wp_status::WP_ERR_UNKNOWN_WORKER,
        Error::DuplicateWorker => wp_status::WP_ERR_DUPLICATE_WORKER,
        Error::UnknownSelector { .. } => wp_status::WP_ERR_UNKNOWN_MODE,
        Error::InvalidConfig { .. } => wp_status::WP_ERR_INVALID_CONFIG,
        Error::CapacityExceeded { .. } => wp_status::WP_ERR_CAPACITY_EXCEEDED,
        Error::LoadOverflow => wp_status::WP_ERR_LOAD_OVERFLOW,
        Error::Draining => wp_status::WP_ERR_DRAINING,
        _ => wp_status::WP_ERR_OTHER,
    };
    fail(status, &err.to_string())
}

/// Runs `body`, turning a panic into `WP_ERR_PANIC` (unwinding into C is
/// undefined behaviour).
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> wp_status) -> wp_status {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .unwrap_or_else(|_| fail(wp_status::WP_ERR_PANIC, "internal error: the library panicked"))
}

/// A static, NUL-terminated description of the status code `status`
/// (a `wp_status` value; an int so that any value is safe to pass: unknown
/// ones get "unknown status"). Never NULL.
///
/// Thread safety: any thread, any time.
#[unsafe(no_mangle)]
pub extern "C" fn wp_status_message(status: i32) -> *const c_char {
    let known = wp_status::ALL.iter().find(|s| **s as i32 == status);
    known.map_or("unknown status\0", |s| s.message()).as_ptr().cast()
}

/// The full message of the last error on the calling thread (the library's
/// own text, saying what to do about it); an empty string if none. Valid
/// until the next call into this library on the same thread.
///
/// Thread safety: any thread; each thread has its own last error.
#[unsafe(no_mangle)]
pub extern "C" fn wp_last_error() -> *const c_char {
    LAST.with(|last| last.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_listed_in_order_with_a_message() {
        for (code, status) in wp_status::ALL.iter().enumerate() {
            assert_eq!(*status as usize, code);
            let text = status.message();
            assert!(text.ends_with('\0') && text.len() > 1, "{status:?}");
        }
        // SAFETY: the function returns a static NUL-terminated string.
        let unknown = unsafe { std::ffi::CStr::from_ptr(wp_status_message(99)) };
        assert_eq!(unknown.to_str(), Ok("unknown status"));
    }
}
