//! The lock-based bounded-load consistent hash the `affinity/<workers>`
//! groups measure beside ours: a `BTreeMap` ring and the loads behind one
//! mutex (as a router that keeps its own table does), the total exact
//! because every booking and release takes the lock.

use std::collections::BTreeMap;
use std::sync::Mutex;

struct State {
    ring: BTreeMap<u64, usize>,
    loads: Vec<u32>,
    total: u64,
}

pub struct BoundedHash {
    state: Mutex<State>,
    factor: u64,
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl BoundedHash {
    /// `n` workers with 32 points each, balance factor `factor` percent.
    pub fn new(n: usize, factor: u64) -> Self {
        let mut ring = BTreeMap::new();
        for w in 0..n {
            for j in 0..32u64 {
                ring.insert(mix((w as u64) << 8 | j), w);
            }
        }
        Self {
            state: Mutex::new(State {
                ring,
                loads: vec![0; n],
                total: 0,
            }),
            factor,
        }
    }

    /// Books one on `key`'s first worker within the bound; returns it.
    pub fn reserve(&self, key: u64) -> usize {
        let mut s = self.state.lock().unwrap();
        let n = s.loads.len() as u64;
        let cap = (self.factor * (s.total + 1)).div_ceil(100 * n);
        let h = mix(key);
        let pick = s
            .ring
            .range(h..)
            .chain(s.ring.range(..h))
            .map(|(_, &w)| w)
            .find(|&w| u64::from(s.loads[w]) <= cap)
            .unwrap_or(0);
        s.loads[pick] += 1;
        s.total += 1;
        pick
    }

    /// Gives back one booking of `worker`.
    pub fn release(&self, worker: usize) {
        let mut s = self.state.lock().unwrap();
        s.loads[worker] -= 1;
        s.total -= 1;
    }
}
