//! What a scan reads: the lanes' counters, and optionally an exclusion array ORed in
//! and reported loads added (saturating).

use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// The lanes of one scan. The effective value of lane `i` is
/// `(counters[i] | excluded[i]).saturating_add(reported[i])`, each part present only
/// when given; there are as many lanes as the shortest given slice has.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The in-flight counters.
    pub counters: &'a [AtomicU32],
    /// `0` for a candidate, `u32::MAX` for a lane to skip.
    pub excluded: Option<&'a [u32]>,
    /// Load reported from outside (workers, other routers), added to the counter.
    pub reported: Option<&'a [AtomicU32]>,
}

impl<'a> Source<'a> {
    /// Every counter, nothing excluded or reported.
    #[inline(always)]
    pub fn all(counters: &'a [AtomicU32]) -> Self {
        Self {
            counters,
            excluded: None,
            reported: None,
        }
    }

    /// These lanes, skipping where `excluded` is `u32::MAX` (when `Some`).
    #[inline(always)]
    pub fn excluding(self, excluded: Option<&'a [u32]>) -> Self {
        Self { excluded, ..self }
    }

    /// These lanes, plus `reported` load (when `Some`).
    #[inline(always)]
    pub fn reported(self, reported: Option<&'a [AtomicU32]>) -> Self {
        Self { reported, ..self }
    }

    /// The number of lanes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        let n = self.counters.len();
        let n = self.excluded.map_or(n, |e| n.min(e.len()));
        self.reported.map_or(n, |r| n.min(r.len()))
    }

    /// Whether there is no lane.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The effective value of lane `i < len()`, read with scalar loads.
    #[inline(always)]
    pub fn value(&self, i: usize) -> u32 {
        let c = self.counters[i].load(Relaxed) | self.excluded.map_or(0, |e| e[i]);
        match self.reported {
            None => c,
            Some(r) => c.saturating_add(r[i].load(Relaxed)),
        }
    }
}
