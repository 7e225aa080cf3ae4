//! The index's clock in ms: real (since the index was built) or manual.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub(super) struct Clock {
    start: Option<Instant>,
    manual: AtomicU64,
}

impl Clock {
    pub(super) fn new(manual: bool) -> Self {
        Self {
            start: (!manual).then(Instant::now),
            manual: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(super) fn now(&self) -> u64 {
        match self.start {
            Some(s) => s.elapsed().as_millis() as u64,
            None => self.manual.load(Ordering::Relaxed),
        }
    }

    pub(super) fn set(&self, ms: u64) {
        self.manual.fetch_max(ms, Ordering::Relaxed);
    }
}
