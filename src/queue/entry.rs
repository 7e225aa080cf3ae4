use std::time::Instant;

/// What a queued request is: its class, tenant, weight, cache credit and
/// deadline. Built on the stack; nothing here allocates.
///
/// Its fair-share cost is its uncached tokens, `weight − credit` (at least 1).
///
/// ```
/// use workerpick::queue::Entry;
/// let e = Entry::new().class(1).tenant(3).weight(1024).credit(768).key(42);
/// assert_eq!(e.uncached(), 256);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub(crate) class: usize,
    pub(crate) tenant: usize,
    pub(crate) weight: u32,
    pub(crate) credit: u32,
    pub(crate) key: Option<u64>,
    pub(crate) deadline: Option<Instant>,
}

impl Entry {
    /// Class 0 (the highest), tenant 0, weight 1, no credit, no key, no deadline.
    pub const fn new() -> Self {
        Self {
            class: 0,
            tenant: 0,
            weight: 1,
            credit: 0,
            key: None,
            deadline: None,
        }
    }

    /// The priority class: 0 is served first; a class waits while any
    /// higher one has waiters.
    pub const fn class(mut self, class: usize) -> Self {
        self.class = class;
        self
    }

    /// The tenant whose fair share this request is counted in.
    pub const fn tenant(mut self, tenant: usize) -> Self {
        self.tenant = tenant;
        self
    }

    /// The load the admission books (as [`Request::weight`](crate::Request::weight)): prompt tokens, say.
    pub const fn weight(mut self, weight: u32) -> Self {
        self.weight = weight;
        self
    }

    /// The tokens of the weight a worker already caches (the prefix index's
    /// credit): they cost the fleet little, so the tenant is not charged them.
    pub const fn credit(mut self, credit: u32) -> Self {
        self.credit = credit;
        self
    }

    /// A request key for sticky selectors (as [`Request::key`](crate::Request::key)).
    pub const fn key(mut self, key: u64) -> Self {
        self.key = Some(key);
        self
    }

    /// When to give up waiting: past it the request ends with
    /// [`QueueError::Timeout`](super::QueueError::Timeout), nothing booked.
    pub const fn deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    /// The tokens charged to the tenant's share: `weight − credit`, at least 1.
    pub const fn uncached(&self) -> u32 {
        let left = self.weight.saturating_sub(self.credit);
        if left == 0 { 1 } else { left }
    }
}

impl Default for Entry {
    fn default() -> Self {
        Self::new()
    }
}
