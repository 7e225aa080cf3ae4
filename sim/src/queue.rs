//! The two waiting places of a run: the workers' queues and the admission gate.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};

/// Every worker's queue of booked requests, served by one shared set of
/// server threads.
///
/// A worker serves at most `slots` jobs at once and queues the rest, exactly as
/// if it had `slots` threads of its own; the threads are shared, so a fleet of
/// any size needs only as many as can be busy at once, which is at most the
/// requests in flight.
pub struct Servers<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    /// Per worker: the jobs it serves at once.
    slots: Vec<usize>,
}

struct State<T> {
    /// Per worker: jobs waiting for one of its slots.
    waiting: Vec<VecDeque<T>>,
    /// Per worker: slots in use.
    busy: Vec<usize>,
    /// Jobs that hold a slot, with their worker, waiting for a thread.
    started: VecDeque<(usize, T)>,
}

impl<T> Servers<T> {
    /// Queues for workers of `slots` slots each (one entry per worker).
    pub fn new(slots: Vec<usize>) -> Self {
        let workers = slots.len();
        Self {
            state: Mutex::new(State {
                waiting: (0..workers).map(|_| VecDeque::new()).collect(),
                busy: vec![0; workers],
                started: VecDeque::new(),
            }),
            ready: Condvar::new(),
            slots,
        }
    }

    /// Hands `job` to worker `w`: it starts if one of `w`'s slots is free, and
    /// waits in `w`'s queue otherwise.
    pub fn push(&self, w: usize, job: T) {
        let mut s = self.state.lock().unwrap();
        if s.busy[w] < self.slots[w] {
            s.busy[w] += 1;
            s.started.push_back((w, job));
            drop(s);
            self.ready.notify_one();
        } else {
            s.waiting[w].push_back(job);
        }
    }

    /// The next started job and its worker, or `None` once `closed` is set and
    /// none is left.
    pub fn next(&self, closed: &AtomicBool) -> Option<(usize, T)> {
        let mut s = self.state.lock().unwrap();
        loop {
            if let Some(job) = s.started.pop_front() {
                return Some(job);
            }
            if closed.load(Relaxed) {
                return None;
            }
            s = self.ready.wait(s).unwrap();
        }
    }

    /// Worker `w` finished a job: the slot goes to its next waiting job, if any.
    pub fn done(&self, w: usize) {
        let mut s = self.state.lock().unwrap();
        if let Some(job) = s.waiting[w].pop_front() {
            s.started.push_back((w, job));
            drop(s);
            self.ready.notify_one();
        } else {
            s.busy[w] -= 1;
        }
    }

    /// Wakes every server to see that the run is closed.
    pub fn close(&self) {
        // Taking the lock orders this wake-up after any server's check of `closed`.
        drop(self.state.lock().unwrap());
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
