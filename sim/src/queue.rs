//! The two waiting places of a run: a worker's queue and the admission gate.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};

/// A worker's queue of booked requests, served by its server threads.
pub struct Queue<T> {
    jobs: Mutex<VecDeque<T>>,
    ready: Condvar,
}

impl<T> Queue<T> {
    /// An empty queue with room for `n` jobs.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            jobs: Mutex::new(VecDeque::with_capacity(n)),
            ready: Condvar::new(),
        }
    }

    /// Adds a job and wakes one server.
    pub fn push(&self, job: T) {
        self.jobs.lock().unwrap().push_back(job);
        self.ready.notify_one();
    }

    /// The next job, or `None` once `closed` is set and the queue is empty.
    pub fn pop(&self, closed: &AtomicBool) -> Option<T> {
        let mut jobs = self.jobs.lock().unwrap();
        loop {
            if let Some(job) = jobs.pop_front() {
                return Some(job);
            }
            if closed.load(Relaxed) {
                return None;
            }
            jobs = self.ready.wait(jobs).unwrap();
        }
    }

    /// Wakes every server to see that the run is closed.
    pub fn close(&self) {
        // Taking the lock orders this wake-up after any server's check of `closed`.
        drop(self.jobs.lock().unwrap());
        self.ready.notify_all();
    }
}

/// Admission: at most `n` requests in flight.
pub struct Permits {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Permits {
    /// A gate letting `n` requests in at once.
    pub fn new(n: usize) -> Self {
        Self {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    /// Waits for a free permit and takes it.
    pub fn acquire(&self) {
        let mut free = self.free.lock().unwrap();
        while *free == 0 {
            free = self.freed.wait(free).unwrap();
        }
        *free -= 1;
    }

    /// Gives a permit back.
    pub fn release(&self) {
        *self.free.lock().unwrap() += 1;
        self.freed.notify_one();
    }
}
