//! Fair shares across replicas: each router's served counters travel in its
//! [`Summary`](crate::Summary), and a queue that has applied its peers'
//! orders each class by the fleet-wide counters instead of its own alone.
//! See [`docs::admission`](crate::docs::admission), "Replicas".

use super::order::Order;
use crate::load::reports::Shares;
use std::time::{Duration, Instant};

/// The peers' latest counters, by origin, with when they came.
#[derive(Default)]
pub(crate) struct Peers {
    peers: Vec<(u64, Instant, Shares)>,
    /// How long a peer's counters count (the pool's report age limit).
    max_age: Duration,
}

impl Peers {
    pub(crate) fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// Replaces what `origin` sent before with `shares` (reusing its buffers),
    /// and forgets peers silent for longer than `max_age`.
    pub(crate) fn apply(&mut self, origin: u64, shares: &Shares, now: Instant, max_age: Duration) {
        self.max_age = max_age;
        self.peers
            .retain(|(o, at, _)| *o == origin || now.saturating_duration_since(*at) < max_age);
        match self.peers.iter_mut().find(|(o, ..)| *o == origin) {
            Some((_, at, old)) => {
                *at = now;
                old.clone_from(shares);
            }
            None => self.peers.push((origin, now, shares.clone())),
        }
    }

    /// Whether any live peer has waiters (then a newcomer queues rather
    /// than book past them).
    pub(crate) fn any_waiting(&self, now: Instant) -> bool {
        self.live(now).any(|s| s.waiting.iter().any(|&bits| bits != 0))
    }

    fn live(&self, now: Instant) -> impl Iterator<Item = &Shares> {
        self.peers
            .iter()
            .filter(move |(_, at, _)| now.saturating_duration_since(*at) < self.max_age)
            .map(|(_, _, s)| s)
    }

    /// The tenant of `class` to admit next by the fleet-wide counters, or
    /// `None` to hold the class back: a tenant waiting at a peer is behind
    /// every local one by more than `slack`, so that peer should take the
    /// room. Each tenant's service is its uncached tokens over its weight,
    /// summed over this router (`order`) and its live peers, and lifted to
    /// at least the most-served waiting tenant's less `window` (an idle
    /// tenant banks at most `window`).
    pub(crate) fn choose(
        &self,
        order: &Order,
        class: usize,
        now: Instant,
        window: u128,
        slack: u128,
        served: impl Fn(usize) -> u64,
    ) -> Option<usize> {
        let tenants = order.tenants();
        let local = order.active(class);
        let mut waiting = local;
        let mut norm = [0u128; super::order::MAX_TENANTS];
        for shares in self.live(now).filter(|s| s.tenants as usize == tenants) {
            waiting |= shares.waiting.get(class).copied().unwrap_or(0);
            for (tenant, n) in norm.iter_mut().enumerate().take(tenants) {
                *n += u128::from(shares.served(class, tenant));
            }
        }
        for (tenant, n) in norm.iter_mut().enumerate().take(tenants) {
            *n = order.normalized(*n + u128::from(served(tenant)), tenant);
        }
        let bits = |mask: u64| (0..tenants).filter(move |&t| (mask >> t) & 1 == 1);
        let top = bits(waiting).map(|t| norm[t]).max()?;
        let lifted = |t: usize| norm[t].max(top.saturating_sub(window));
        let least = bits(waiting).map(lifted).min()?;
        let (chosen, at) = bits(local).map(|t| (t, lifted(t))).min_by_key(|&(t, n)| (n, t))?;
        (at <= least + slack).then_some(chosen)
    }
}
