//! The session table's clock, read on every bound request: milliseconds
//! since the table was made. On 64-bit Linux the kernel's coarse monotonic
//! clock (`CLOCK_MONOTONIC_COARSE`: one read of a page the kernel updates
//! every tick, 1–4 ms apart; ~5 ns here, against ~13 ns for `quanta`'s TSC
//! read scaled to milliseconds and ~28 ns for `Instant::elapsed`);
//! elsewhere, and under Miri, `Instant`. A TTL is seconds or minutes: a
//! tick of resolution is far below what it can tell.

/// What the clock reads when it starts, in ms (~35 years): a binding
/// imported as idle for up to that long gets a last use before the start
/// without the subtraction saturating at 0.
const START: u64 = 1 << 40;

#[cfg(all(target_os = "linux", target_pointer_width = "64", not(miri)))]
mod imp {
    /// A monotonic millisecond clock with its own epoch.
    pub(crate) struct Clock {
        epoch: u64,
    }

    impl Clock {
        pub(crate) fn new() -> Self {
            Self {
                epoch: coarse_millis(),
            }
        }

        /// Milliseconds since [`new`](Self::new), plus [`START`](super::START).
        #[inline]
        pub(crate) fn millis(&self) -> u64 {
            coarse_millis().saturating_sub(self.epoch) + super::START
        }
    }

    /// `struct timespec` on 64-bit Linux: `time_t` and `long` are 64 bits.
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }

    unsafe extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }

    /// Linux's id for it (the same on every architecture).
    const CLOCK_MONOTONIC_COARSE: i32 = 6;

    /// The coarse monotonic clock, in milliseconds.
    #[inline]
    fn coarse_millis() -> u64 {
        let mut t = Timespec { sec: 0, nsec: 0 };
        // SAFETY: `t` is a valid, writable `struct timespec` for this target
        // (64-bit Linux, as the module's cfg says), the only memory
        // `clock_gettime` writes. It cannot fail for a clock id Linux has had
        // since 2.6.32; were it to, `t` stays zero and the clock stands at its
        // epoch (bindings then expire late, never early). Not safe code: std
        // has no coarse clock (`Instant::elapsed`, ~28 ns, against ~5 here),
        // and a `libc` dependency for one call would be the same FFI.
        unsafe { clock_gettime(CLOCK_MONOTONIC_COARSE, &mut t) };
        (t.sec as u64).wrapping_mul(1000) + (t.nsec as u64) / 1_000_000
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64", not(miri))))]
mod imp {
    use std::time::Instant;

    /// A monotonic millisecond clock with its own epoch.
    pub(crate) struct Clock {
        epoch: Instant,
    }

    impl Clock {
        pub(crate) fn new() -> Self {
            Self {
                epoch: Instant::now(),
            }
        }

        /// Milliseconds since [`new`](Self::new), plus [`START`](super::START).
        #[inline]
        pub(crate) fn millis(&self) -> u64 {
            u64::try_from(self.epoch.elapsed().as_millis())
                .map_or(u64::MAX, |ms| ms.saturating_add(super::START))
        }
    }
}

pub(crate) use imp::Clock;
