//! The order waiters leave in: strict priority classes; within a class,
//! start-time fair queuing over tenants, charged in uncached tokens (or, if
//! configured, shortest uncached first with aging: [`Shortest`]). Plain
//! data, kept under the queue's lock (see [`docs::internal::admission`](crate::docs::internal::admission)).

use super::shortest::Shortest;
use std::time::Instant;

/// No waiter: the end of a list.
pub(crate) const NONE: u32 = u32::MAX;

/// The most tenants a queue tells apart: one bit each in a class's mask of
/// tenants with waiters.
pub(crate) const MAX_TENANTS: usize = 64;

/// The most priority classes.
pub(crate) const MAX_CLASSES: usize = 8;

/// Virtual time per uncached token at weight 1: fine enough that a cost of 1
/// over a weight of 1000 still moves the clock.
const SCALE: u32 = 1 << 20;

/// `tokens` per unit of weight in virtual time.
pub(crate) fn virtual_tokens(tokens: u32) -> u128 {
    u128::from(tokens) * u128::from(SCALE)
}

/// One tenant's waiters in one class, first come first.
#[derive(Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: List = List {
    head: NONE,
    tail: NONE,
};

/// Per waiter slot: its links and what it is charged when it leaves.
#[derive(Clone, Copy)]
struct Link {
    next: u32,
    prev: u32,
    class: u8,
    tenant: u8,
    cost: u32,
}

/// See the module docs. Every array is sized at construction: pushing,
/// removing and popping allocate nothing.
pub(crate) struct Order {
    tenants: usize,
    weights: Box<[u32]>,
    links: Box<[Link]>,
    /// `class * tenants + tenant`.
    lists: Box<[List]>,
    /// Virtual finish time of each tenant's last admitted waiter, as `lists`.
    finish: Box<[u128]>,
    /// Per class, the start tag of its last admitted waiter.
    clock: Box<[u128]>,
    /// Per class, the tenants with waiters.
    active: Box<[u64]>,
    /// As `lists`: uncached tokens admitted through the order, ever (the
    /// counters replicas exchange, see `shares`).
    served: Box<[u64]>,
    /// Shortest first instead of fair shares: the heaps, the aging in
    /// tokens per millisecond, and the time keys count from.
    shortest: Option<(Shortest, u32, Instant)>,
}

impl Order {
    /// An order over `slots` waiter slots, `classes` classes and one tenant
    /// per weight (each `>= 1`; callers check the bounds).
    pub(crate) fn new(slots: usize, classes: usize, weights: &[u32], aging: Option<u32>) -> Self {
        let tenants = weights.len();
        let link = Link {
            next: NONE,
            prev: NONE,
            class: 0,
            tenant: 0,
            cost: 0,
        };
        Self {
            tenants,
            weights: weights.into(),
            links: vec![link; slots].into(),
            lists: vec![EMPTY; classes * tenants].into(),
            finish: vec![0; classes * tenants].into(),
            clock: vec![0; classes].into(),
            active: vec![0; classes].into(),
            served: vec![0; classes * tenants].into(),
            shortest: aging.map(|a| (Shortest::new(slots, classes), a, Instant::now())),
        }
    }

    /// Queues `slot` last among `tenant`'s waiters in `class`, costing `cost`
    /// uncached tokens when it leaves.
    pub(crate) fn push(&mut self, slot: u32, class: usize, tenant: usize, cost: u32) {
        if let Some((heaps, aging, epoch)) = &mut self.shortest {
            let ms = epoch.elapsed().as_millis().min(u128::from(u32::MAX)) as u64;
            heaps.push(slot, class, u64::from(cost) + u64::from(*aging) * ms);
            return;
        }
        let at = class * self.tenants + tenant;
        let tail = self.lists[at].tail;
        self.links[slot as usize] = Link {
            next: NONE,
            prev: tail,
            class: class as u8,
            tenant: tenant as u8,
            cost,
        };
        match tail {
            NONE => self.lists[at].head = slot,
            t => self.links[t as usize].next = slot,
        }
        self.lists[at].tail = slot;
        self.active[class] |= 1 << tenant;
    }

    /// Takes `slot` out without charging anyone: a cancelled or timed-out
    /// waiter leaves no trace in the shares.
    pub(crate) fn remove(&mut self, slot: u32) {
        if let Some((heaps, ..)) = &mut self.shortest {
            heaps.remove(slot);
            return;
        }
        let Link {
            next,
            prev,
            class,
            tenant,
            ..
        } = self.links[slot as usize];
        let (class, tenant) = (class as usize, tenant as usize);
        let at = class * self.tenants + tenant;
        match prev {
            NONE => self.lists[at].head = next,
            p => self.links[p as usize].next = next,
        }
        match next {
            NONE => self.lists[at].tail = prev,
            n => self.links[n as usize].prev = prev,
        }
        if self.lists[at].head == NONE {
            self.active[class] &= !(1 << tenant);
        }
    }

    /// The waiter to admit next: the highest class with waiters, and in it
    /// the tenant whose next waiter starts earliest in virtual time (the
    /// lowest tenant on a tie). `None` when nobody waits.
    pub(crate) fn head(&self) -> Option<u32> {
        if let Some((heaps, ..)) = &self.shortest {
            return heaps.head();
        }
        let class = self.active.iter().position(|&a| a != 0)?;
        Some(self.lists[class * self.tenants + self.first(class)].head)
    }

    /// The highest class with waiters.
    pub(crate) fn first_class(&self) -> Option<usize> {
        self.active.iter().position(|&a| a != 0)
    }

    /// The first waiter of `tenant` in `class` (one of [`active`](Self::active)'s).
    pub(crate) fn head_of(&self, class: usize, tenant: usize) -> u32 {
        self.lists[class * self.tenants + tenant].head
    }

    pub(crate) fn tenants(&self) -> usize {
        self.tenants
    }

    pub(crate) fn is_fair(&self) -> bool {
        self.shortest.is_none()
    }

    /// The tenants of `class` with waiters, one bit each.
    pub(crate) fn active(&self, class: usize) -> u64 {
        self.active[class]
    }

    /// Uncached tokens admitted for `tenant` in `class`.
    pub(crate) fn served(&self, class: usize, tenant: usize) -> u64 {
        self.served[class * self.tenants + tenant]
    }

    /// `tokens` of `tenant`'s service in virtual time: over its weight.
    pub(crate) fn normalized(&self, tokens: u128, tenant: usize) -> u128 {
        tokens * u128::from(SCALE) / u128::from(self.weights[tenant])
    }

    /// The tenant of `class` with the earliest start tag.
    fn first(&self, class: usize) -> usize {
        let mut bits = self.active[class];
        let (mut best, mut best_start) = (0, u128::MAX);
        while bits != 0 {
            let tenant = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let start = self.start(class, tenant);
            if start < best_start {
                (best, best_start) = (tenant, start);
            }
        }
        best
    }

    /// A tenant's next start tag: its last finish, or the class clock if it
    /// was idle past it (an idle tenant banks no credit).
    fn start(&self, class: usize, tenant: usize) -> u128 {
        self.finish[class * self.tenants + tenant].max(self.clock[class])
    }

    /// Takes [`head`](Self::head) out and charges its tenant its cost over
    /// its weight (nobody is charged in shortest-first order).
    pub(crate) fn admit_head(&mut self, slot: u32) {
        if self.shortest.is_some() {
            return self.remove(slot);
        }
        let Link {
            class, tenant, cost, ..
        } = self.links[slot as usize];
        let (class, tenant) = (class as usize, tenant as usize);
        let start = self.start(class, tenant);
        let step = self.normalized(u128::from(cost.max(1)), tenant);
        self.finish[class * self.tenants + tenant] = start + step;
        self.served[class * self.tenants + tenant] += u64::from(cost.max(1));
        self.clock[class] = start;
        self.remove(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(order: &mut Order) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(slot) = order.head() {
            order.admit_head(slot);
            out.push(slot);
        }
        out
    }

    #[test]
    fn classes_are_strict_and_tenants_first_come_first() {
        let mut o = Order::new(8, 2, &[1, 1], None);
        o.push(0, 1, 0, 10);
        o.push(1, 1, 0, 10);
        o.push(2, 0, 1, 10);
        o.push(3, 0, 1, 10);
        assert_eq!(drain(&mut o), [2, 3, 0, 1]);
    }

    #[test]
    fn weights_split_service_by_cost() {
        let mut o = Order::new(16, 1, &[3, 1], None);
        for slot in 0..8 {
            o.push(slot, 0, 0, 100);
            o.push(slot + 8, 0, 1, 100);
        }
        let first: Vec<u32> = drain(&mut o).into_iter().take(8).collect();
        let heavy = first.iter().filter(|&&s| s < 8).count();
        assert_eq!(heavy, 6, "{first:?}");
    }

    #[test]
    fn shortest_first_keeps_classes_strict() {
        let mut o = Order::new(4, 2, &[1], Some(1));
        o.push(0, 1, 0, 5);
        o.push(1, 1, 0, 1);
        o.push(2, 0, 0, 500);
        assert_eq!(drain(&mut o), [2, 1, 0]);
    }

    #[test]
    fn a_removed_waiter_charges_nobody() {
        let mut o = Order::new(4, 1, &[1, 1], None);
        o.push(0, 0, 0, 1000);
        o.push(1, 0, 1, 1);
        o.remove(0);
        o.push(2, 0, 0, 1);
        // Tenant 0 was not charged for the removed waiter: a tie, lowest first.
        assert_eq!(drain(&mut o), [2, 1]);
        o.push(3, 0, 1, 1);
        o.remove(3);
        assert_eq!(o.head(), None);
    }
}
