//! Shortest-uncached-first with aging, per class: a waiter's key is its
//! uncached tokens less `aging` for each millisecond it has waited. All
//! waiters age alike, so the order of two never changes and the key can be
//! fixed at the push: `uncached + aging × (push time in ms)`. One binary heap
//! per class over preallocated arrays, with each slot's place kept so that a
//! cancelled waiter leaves in O(log n).

/// No slot, no place.
const NONE: u32 = u32::MAX;

/// See the module docs.
pub(crate) struct Shortest {
    capacity: usize,
    /// Per class, `capacity` entries: the heap of slots, `lens[class]` used.
    heaps: Box<[u32]>,
    lens: Box<[usize]>,
    /// Per slot: its place in its class's heap, its class and its key
    /// (the fixed key, then a push count so that ties go first come first).
    place: Box<[u32]>,
    class: Box<[u8]>,
    keys: Box<[u128]>,
    pushes: u64,
}

impl Shortest {
    pub(crate) fn new(slots: usize, classes: usize) -> Self {
        Self {
            capacity: slots,
            heaps: vec![NONE; slots * classes].into(),
            lens: vec![0; classes].into(),
            place: vec![NONE; slots].into(),
            class: vec![0; slots].into(),
            keys: vec![0; slots].into(),
            pushes: 0,
        }
    }

    pub(crate) fn push(&mut self, slot: u32, class: usize, key: u64) {
        self.pushes += 1;
        self.keys[slot as usize] = (u128::from(key) << 64) | u128::from(self.pushes);
        self.class[slot as usize] = class as u8;
        let at = self.lens[class];
        self.lens[class] += 1;
        self.set(class, at, slot);
        self.up(class, at);
    }

    /// The least key of the highest class with waiters.
    pub(crate) fn head(&self) -> Option<u32> {
        let class = self.lens.iter().position(|&n| n > 0)?;
        Some(self.heaps[class * self.capacity])
    }

    pub(crate) fn remove(&mut self, slot: u32) {
        let class = self.class[slot as usize] as usize;
        let at = self.place[slot as usize] as usize;
        self.lens[class] -= 1;
        let last = self.lens[class];
        self.place[slot as usize] = NONE;
        if at != last {
            let moved = self.heaps[class * self.capacity + last];
            self.set(class, at, moved);
            self.up(class, at);
            self.down(class, self.place[moved as usize] as usize);
        }
    }

    fn slot(&self, class: usize, at: usize) -> u32 {
        self.heaps[class * self.capacity + at]
    }

    fn key(&self, class: usize, at: usize) -> u128 {
        self.keys[self.slot(class, at) as usize]
    }

    fn set(&mut self, class: usize, at: usize, slot: u32) {
        self.heaps[class * self.capacity + at] = slot;
        self.place[slot as usize] = at as u32;
    }

    fn swap(&mut self, class: usize, a: usize, b: usize) {
        let (sa, sb) = (self.slot(class, a), self.slot(class, b));
        self.set(class, a, sb);
        self.set(class, b, sa);
    }

    fn up(&mut self, class: usize, mut at: usize) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.key(class, parent) <= self.key(class, at) {
                break;
            }
            self.swap(class, parent, at);
            at = parent;
        }
    }

    fn down(&mut self, class: usize, mut at: usize) {
        let len = self.lens[class];
        loop {
            let (l, r) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if l < len && self.key(class, l) < self.key(class, least) {
                least = l;
            }
            if r < len && self.key(class, r) < self.key(class, least) {
                least = r;
            }
            if least == at {
                return;
            }
            self.swap(class, at, least);
            at = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_first_ties_first_come_and_cancels_anywhere() {
        let mut s = Shortest::new(8, 2);
        for (slot, key) in [(0, 50), (1, 10), (2, 30), (3, 10), (4, 70)] {
            s.push(slot, 1, key);
        }
        s.push(5, 0, 99);
        s.remove(2);
        let mut out = Vec::new();
        while let Some(slot) = s.head() {
            s.remove(slot);
            out.push(slot);
        }
        assert_eq!(out, [5, 1, 3, 0, 4]);
    }
}
