//! The cost mode's passes over the candidates. `minimum` and `softmax` are
//! the reference: one scalar pass per step, in candidate order.
//! `minimum_sparse` answers `T = 0` from the SIMD least-loaded scan and the
//! credited workers alone, `minimum_dense` from one SIMD scan of every
//! candidate's cost key (`scan::least_credited`); each declines when only the
//! reference can answer.

use crate::credit::tuning::{CreditWeight, cost};
use crate::candidates::Candidates;
use crate::credit::{CacheHits, Credited};
use crate::storage::counters::Counters;
use crate::sync::atomic::Ordering::Relaxed;
use crate::scan::{self, Credit, Least, Range};
use crate::context::{Context, Slot};
use crate::selectors::Choice;

/// What a pick compares, fixed for the pick.
#[derive(Clone, Copy)]
pub(crate) struct Rule {
    pub(crate) weight: CreditWeight,
    pub(crate) busy: Option<u32>,
    /// Whether some worker is marked unhealthy (else nobody's tier is read).
    pub(crate) health: bool,
}

/// A candidate's rank: unhealthy after healthy, then by cost.
type Key = (bool, i64);

/// `slot`'s key and the load it was computed from; `None` when the busy
/// threshold leaves it out.
#[inline(always)]
fn judge(cx: &Context<'_>, rule: Rule, slot: Slot<'_>) -> Option<(Key, u32)> {
    if let Some(busy) = rule.busy
        && cx.reported_load(slot) > busy
    {
        return None;
    }
    let load = cx.load(slot);
    let credit = cx.cache_hit(slot).map_or(0, |(held, _)| held);
    let sick = rule.health && !cx.healthy(slot.index());
    Some(((sick, cost(load, credit, rule.weight)), load))
}

/// The `k`-th candidate (in candidate order) that `admit` takes, with the
/// load it was judged on.
#[inline]
fn nth<'a>(
    cx: &Context<'a>,
    rule: Rule,
    mut k: u32,
    mut admit: impl FnMut(Key) -> bool,
) -> Option<(Slot<'a>, u32)> {
    for i in 0..cx.len() {
        let Some(slot) = cx.candidate(i) else { break };
        if let Some((key, load)) = judge(cx, rule, slot)
            && admit(key)
        {
            if k == 0 {
                return Some((slot, load));
            }
            k -= 1;
        }
    }
    None
}

/// The least key, ties uniform: one pass, and a second only to find a drawn
/// tie. If that tie moved meanwhile, the first minimum seen (its booking's
/// compare-and-swap then fails and the pick is asked again).
pub(crate) fn minimum<'a>(cx: &mut Context<'a>, rule: Rule) -> Option<Choice<'a>> {
    let mut best: Option<(Key, Slot<'a>, u32)> = None;
    let mut ties = 0u32;
    for i in 0..cx.len() {
        let Some(slot) = cx.candidate(i) else { break };
        let Some((key, load)) = judge(cx, rule, slot) else { continue };
        match best {
            Some((least, _, _)) if key > least => {}
            Some((least, _, _)) if key == least => ties += 1,
            _ => {
                best = Some((key, slot, load));
                ties = 1;
            }
        }
    }
    let (least, first, load) = best?;
    if ties > 1 {
        let k = cx.rng().below(ties);
        if let Some((slot, load)) = nth(cx, rule, k, |key| key == least) {
            return Some(Choice::validated(slot, load));
        }
    }
    Some(Choice::validated(first, load))
}

/// A uniform `f64` in `[0, 1)` from 53 random bits.
#[inline(always)]
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Dynamo's range-normalised softmax over the best tier (healthy, unless none
/// is): pass 1 finds the tier, `c_min` and `c_max`; pass 2 sums the weights
/// `exp(−(c − c_min)/((c_max − c_min)·t))`, per run of candidates; one draw
/// below the sum; pass 3 walks the runs' sums, then the running sum inside
/// the run that holds the draw. Each pass recomputes the same weights from
/// the same reads, so a sequential pick samples the formula exactly (up to
/// `f64` rounding); under concurrent bookings the passes may read different
/// loads, which shifts a draw, never the set it is drawn from.
pub(crate) fn softmax<'a>(cx: &mut Context<'a>, rule: Rule, t: f64) -> Option<Choice<'a>> {
    let mut tier: Option<bool> = None;
    let (mut lo, mut hi, mut count) = (0i64, 0i64, 0u32);
    // The first of the best tier: the answer if later passes, under
    // concurrent changes, find no member where pass 1 did.
    let mut first = None;
    for i in 0..cx.len() {
        let Some(slot) = cx.candidate(i) else { break };
        let Some(((sick, c), load)) = judge(cx, rule, slot) else { continue };
        match tier {
            Some(best) if sick && !best => continue,
            Some(best) if sick == best => {
                lo = lo.min(c);
                hi = hi.max(c);
                count += 1;
            }
            _ => {
                tier = Some(sick);
                (lo, hi, count) = (c, c, 1);
                first = Some((slot, load));
            }
        }
    }
    let sick = tier?;
    if lo == hi {
        let k = cx.rng().below(count);
        let (slot, load) = nth(cx, rule, k, |key| key.0 == sick).or(first)?;
        return Some(Choice::validated(slot, load));
    }
    // `hi − lo < 2^53`: exact in an `f64`, as is every `c − lo` below.
    let inv = 1.0 / ((hi - lo) as f64 * t);
    let weight = |c: i64| {
        if c <= lo {
            1.0
        } else {
            (-((c - lo) as f64) * inv).exp()
        }
    };
    // Pass 2 keeps the sum of each of up to `BLOCKS` runs of candidates, on
    // the stack, so pass 3 recomputes the weights of one run only.
    let n = cx.len();
    let run = n.div_ceil(BLOCKS).max(1);
    let mut sums = [0.0f64; BLOCKS];
    let mut sum = 0.0;
    for (b, part) in sums.iter_mut().enumerate().take(n.div_ceil(run)) {
        for i in b * run..n.min((b + 1) * run) {
            let Some(slot) = cx.candidate(i) else { break };
            if let Some(((s, c), _)) = judge(cx, rule, slot)
                && s == sick
            {
                *part += weight(c);
            }
        }
        sum += *part;
    }
    let target = unit(cx.rng().next_u64()) * sum;
    let mut acc = 0.0;
    let mut last = None;
    for (b, &part) in sums.iter().enumerate().take(n.div_ceil(run)) {
        if part == 0.0 || acc + part <= target {
            acc += part;
            continue;
        }
        for i in b * run..n.min((b + 1) * run) {
            let Some(slot) = cx.candidate(i) else { break };
            if let Some(((s, c), load)) = judge(cx, rule, slot)
                && s == sick
            {
                acc += weight(c);
                if acc > target {
                    return Some(Choice::validated(slot, load));
                }
                last = Some((slot, load));
            }
        }
        // Rounding (or loads that moved) left the run's sum short of the
        // draw: its last member of the tier.
        break;
    }
    let (slot, load) = last.or(first)?;
    Some(Choice::validated(slot, load))
}

/// Runs of candidates whose weight sums pass 2 of [`softmax`] keeps.
const BLOCKS: usize = 64;

/// The `T = 0` answer from the credited workers alone, or with the SIMD
/// least-loaded scan, or `None` when only [`minimum`] can give it. Time in
/// the credited workers (and the scan's, sublinear on large pools), not in
/// the candidates.
///
/// An uncredited candidate costs its load, so the least cost among them is
/// `1000·m`, `m` the least load over all candidates (a credited candidate at
/// `m` costs less than `1000·m`); that is at least 0. So a least credited
/// cost below 0 is the minimum with no scan, and only credited workers tie
/// there. Otherwise the scan gives `m`: a least credited cost below `1000·m`
/// is the minimum (its ties are credited), one above it leaves the scan's
/// answer (its ties are the scan's), and at equality both kinds tie: the
/// lanes at `m` (uncredited all: a credited one would cost less) counted
/// by one SIMD pass, plus the credited ties, one draw among them all. Picks
/// with a busy threshold, marked health, capacity weights or a stale mask
/// decline, as do dense credits on more than a quarter of the candidates
/// (the dense pass reads them faster).
#[inline]
pub(crate) fn minimum_sparse<'a>(cx: &mut Context<'a>, rule: Rule) -> Option<Option<Choice<'a>>> {
    if rule.busy.is_some() || rule.health || cx.weights().is_some() {
        return None;
    }
    let Candidates::Fresh { slots, lanes } = cx.candidates else {
        return None;
    };
    let hits = match cx.request().get_cache_hits() {
        Some(hits) if rule.weight.milli() > 0 && !hits.entries().is_empty() => hits,
        // No credit: the cost is the load.
        _ => return Some(cx.least_loaded().map(|(s, load)| Choice::validated(s, load))),
    };
    if hits.is_dense() && hits.entries().len() > slots.len() / 4 {
        return None;
    }
    let view = CreditView::new(cx, Some(hits), slots, lanes, rule);
    // The least credited cost, how many tie at it, and the first `TIED` of
    // them (so that a draw among few ties reads nothing again).
    let mut c = i64::MAX;
    let mut tied = [(0u32, 0u32); TIED];
    let mut ties = 0u32;
    for &e in view.entries {
        let Some((ce, load)) = view.judge(e) else { continue };
        if ce < c {
            c = ce;
            ties = 0;
        } else if ce > c {
            continue;
        }
        if let Some(t) = tied.get_mut(ties as usize) {
            *t = (e.slot, load);
        }
        ties += 1;
    }
    if ties == 0 {
        return Some(cx.least_loaded().map(|(s, load)| Choice::validated(s, load)));
    }
    // The `k`-th credited tie (the first, if they moved since).
    let credited = |k: u32| {
        let (slot, load) = match tied.get(k as usize) {
            Some(&t) if ties as usize <= TIED => t,
            _ => view.nth_at(c, k).unwrap_or(tied[0]),
        };
        Some(Some(Choice::validated(Slot::new(slot), load)))
    };
    if c < 0 {
        let k = if ties > 1 { cx.rng().below(ties) } else { 0 };
        return credited(k);
    }
    let Some((least, least_load)) = cx.least_loaded() else {
        return Some(None);
    };
    let base = cost(least_load, 0, rule.weight);
    if c > base {
        return Some(Some(Choice::validated(least, least_load)));
    }
    let at_least = if c < base {
        0
    } else {
        let counters = cx.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
        cx.backend().count(counters, lanes, least_load)
    };
    let k = if ties + at_least > 1 { cx.rng().below(ties.saturating_add(at_least)) } else { 0 };
    if k < ties {
        return credited(k);
    }
    // The lanes at the least load moved since the scan: the reference answers.
    let counters = cx.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
    let index = cx.backend().nth_tie(counters, lanes, least_load, k - ties).ok()?;
    Some(Some(Choice::validated(Slot::new(index as u32), least_load)))
}

/// Ties at the least credited cost that [`minimum_sparse`] keeps as it finds
/// them.
const TIED: usize = 4;

/// The credited entries as a pick reads them: each one's incarnation checked
/// against the pick's set, its candidacy, its load and its cost.
struct CreditView<'a, 'h> {
    entries: &'h [Credited],
    /// The set's incarnations, which each entry's must match.
    incs: &'a [u32],
    /// The candidates' exclusion array, or their count when they are the
    /// lanes `0..len`.
    lanes: Result<&'a [u32], usize>,
    counters: &'a Counters,
    weight: CreditWeight,
}

impl<'a, 'h> CreditView<'a, 'h> {
    #[inline(always)]
    fn new(
        cx: &Context<'a>,
        hits: Option<&'h CacheHits>,
        slots: &'a [u32],
        lanes: Option<&'a [u32]>,
        rule: Rule,
    ) -> Self {
        Self {
            entries: hits.map_or(&[], CacheHits::entries),
            incs: &cx.set.incs,
            lanes: lanes.ok_or(slots.len()),
            counters: cx.counters,
            weight: rule.weight,
        }
    }

    /// `e`'s cost and load, if its slot still holds its incarnation, holds credit and
    /// is a candidate.
    #[inline(always)]
    fn judge(&self, e: Credited) -> Option<(i64, u32)> {
        let s = e.slot as usize;
        let admitted = match self.lanes {
            Err(len) => s < len,
            Ok(excluded) => excluded.get(s) == Some(&0),
        };
        if !admitted || e.held == 0 || self.incs.get(s) != Some(&e.incarnation) {
            return None;
        }
        let load = self.counters.get(e.slot).load(Relaxed);
        Some((cost(load, e.held, self.weight), load))
    }

    /// The `k`-th entry (in order) that costs `c` now: its slot and load.
    #[inline]
    fn nth_at(&self, c: i64, mut k: u32) -> Option<(u32, u32)> {
        for &e in self.entries {
            if let Some((ce, load)) = self.judge(e)
                && ce == c
            {
                if k == 0 {
                    return Some((e.slot, load));
                }
                k -= 1;
            }
        }
        None
    }
}

/// The `T > 0` draw from the credited workers and one SIMD pass, or `None`
/// when only [`softmax`] can give it: exactly the formula's distribution
/// (up to `f64` rounding), in time linear in the credited workers plus the
/// pass, with `exp` evaluated per credited worker, not per candidate.
///
/// An uncredited candidate's cost is `1000·L`, so the costs' range needs
/// only the least and the largest load over the candidates (`scan::range`,
/// one pass) and the credited costs: when some uncredited candidate holds
/// each end (the pass's count at an end exceeds the credited there; counted
/// only when a credited worker sits at an end), `c_min` and `c_max` follow.
/// The draw is then rejection sampling with an exact envelope: a draw `x`
/// below `Q = W_c + n·w(1000·m)` (`W_c` the credited weights' sum, `n` the
/// candidates, `w(1000·m)` the largest weight an uncredited one can have)
/// names a credited worker by its weight when `x < W_c`; else one of the
/// `n` candidates uniformly, refused if credited (its weight was counted in
/// `W_c`), kept with probability `w(1000·L)/w(1000·m) =
/// exp(−1000·(L − m)/((c_max − c_min)·T))`. So each round returns credited
/// worker `i` with probability `w_i/Q` and uncredited worker `j` with
/// `(n·w(1000·m)/Q)·(1/n)·(w_j/w(1000·m)) = w_j/Q`: the answer has
/// probability `w_i/Σw`. (The envelope must count all `n` proposals, not
/// only the `u` uncredited: with `u·w(1000·m)` every uncredited worker came
/// out `u/n` times too rare.) A round succeeds with probability
/// `Σw/Q ≥ (W_c + u·exp(−1/T)·w(1000·m))/(W_c + n·w(1000·m))`, and after
/// [`ROUNDS`] misses the reference answers (each round's answer, given that
/// it answers, is an exact draw, so the mixture is exact). Declines
/// as [`minimum_sparse`] does for busy thresholds, marked health and stale
/// masks, and for credit on more than a quarter of the candidates.
#[inline]
pub(crate) fn softmax_sparse<'a>(cx: &mut Context<'a>, rule: Rule, t: f64) -> Option<Option<Choice<'a>>> {
    if rule.busy.is_some() || rule.health {
        return None;
    }
    let Candidates::Fresh { slots, lanes } = cx.candidates else {
        return None;
    };
    let n = slots.len() as u32;
    if n == 0 {
        return Some(None);
    }
    let hits = cx.request().get_cache_hits().filter(|_| rule.weight.milli() > 0);
    let view = CreditView::new(cx, hits, slots, lanes, rule);
    if view.entries.len() > slots.len() / 4 {
        return None;
    }
    let counters = cx.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
    let Range { min: m, max: top } = cx.backend().range(counters, lanes);
    if m == u32::MAX || top == u32::MAX || m > top {
        return None;
    }
    let (mut credited, mut at_min, mut at_top) = (0u32, 0u32, 0u32);
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for &e in view.entries {
        let Some((c, load)) = view.judge(e) else { continue };
        if load < m || load > top {
            // Loads moved since the pass.
            return None;
        }
        credited += 1;
        at_min += u32::from(load == m);
        at_top += u32::from(load == top);
        lo = lo.min(c);
        hi = hi.max(c);
    }
    let uncredited = n.checked_sub(credited)?;
    if uncredited > 0 {
        // Some uncredited candidate must hold each end of the loads' range.
        let held_by_others = |at: u32, load: u32| {
            at == 0 || m == top || cx.backend().count(counters, lanes, load) > at
        };
        if !held_by_others(at_min, m) || !held_by_others(at_top, top) {
            return None;
        }
        lo = lo.min(cost(m, 0, rule.weight));
        hi = hi.max(cost(top, 0, rule.weight));
    }
    if lo == hi {
        let i = cx.rng().below(n) as usize;
        let slot = cx.candidate(i)?;
        return Some(Some(Choice::validated(slot, cx.load(slot))));
    }
    // `hi − lo < 2^53`: exact in an `f64`, as is every `c − lo` below.
    let inv = 1.0 / ((hi - lo) as f64 * t);
    let weight = |c: i64| {
        if c <= lo {
            1.0
        } else {
            (-((c - lo) as f64) * inv).exp()
        }
    };
    // The credited weights as prefix sums, for up to `KEPT` of them; past
    // that a draw walks them again.
    let mut sums = [0.0f64; KEPT];
    let mut kept = 0usize;
    let mut credit_sum = 0.0;
    for &e in view.entries {
        if let Some((c, _)) = view.judge(e) {
            credit_sum += weight(c);
            if let Some(s) = sums.get_mut(kept) {
                *s = credit_sum;
            }
            kept += 1;
        }
    }
    // The envelope: every candidate, credited or not, is proposed with the
    // same probability `top_weight / q` (a credited one is then refused), so
    // each uncredited worker is drawn with probability `w / q`, as each
    // credited one is by its prefix sum.
    let top_weight = if uncredited > 0 { weight(cost(m, 0, rule.weight)) } else { 0.0 };
    let q = credit_sum + f64::from(n) * top_weight;
    for _ in 0..ROUNDS {
        let x = unit(cx.rng().next_u64()) * q;
        if x < credit_sum {
            // The credited worker whose share of the prefix sums holds `x`.
            let target = if kept <= KEPT {
                sums[..kept].partition_point(|&s| s <= x)
            } else {
                usize::MAX
            };
            let (mut k, mut acc, mut last) = (0usize, 0.0, None);
            for &e in view.entries {
                let Some((c, load)) = view.judge(e) else { continue };
                let hit = if target == usize::MAX {
                    acc += weight(c);
                    acc > x
                } else {
                    k == target
                };
                if hit {
                    return Some(Some(Choice::validated(Slot::new(e.slot), load)));
                }
                last = Some((e.slot, load));
                k += 1;
            }
            // Rounding (or loads that moved): the last credited worker.
            let (slot, load) = last?;
            return Some(Some(Choice::validated(Slot::new(slot), load)));
        }
        let i = cx.rng().below(n) as usize;
        let slot = cx.candidate(i)?;
        if hits.is_some_and(|h| h.held_in(cx.set, slot.index()) > 0) {
            continue;
        }
        let load = cx.load(slot);
        if load > m {
            let keep = (-((cost(load, 0, rule.weight) - cost(m, 0, rule.weight)) as f64) * inv).exp();
            if unit(cx.rng().next_u64()) >= keep {
                continue;
            }
        }
        return Some(Some(Choice::validated(slot, load)));
    }
    None
}

/// Credited weights [`softmax_sparse`] keeps as prefix sums (on the stack).
const KEPT: usize = 32;

/// Rounds of [`softmax_sparse`]'s rejection sampling before the reference
/// answers.
const ROUNDS: u32 = 32;

/// The `T = 0` answer from one SIMD scan over every candidate's counter and
/// credit (see `scan::credit` for the key and its exactness bound), or `None`
/// when only [`minimum`] can give it: the cases [`minimum_sparse`] declines
/// for (but many credits), credits built for another set than the pick's, a
/// weight and credit so large that no load keys exactly, or a least key at or
/// above the exact bound (a load near `u32::MAX / 1000`, or every candidate
/// excluded). The draws are the least-loaded scan's: ties uniform.
#[inline]
pub(crate) fn minimum_dense<'a>(cx: &mut Context<'a>, rule: Rule) -> Option<Option<Choice<'a>>> {
    if rule.busy.is_some() || rule.health || cx.weights().is_some() {
        return None;
    }
    let Candidates::Fresh { slots, lanes } = cx.candidates else {
        return None;
    };
    let (held, top) = cx.request().get_cache_hits()?.dense_in(cx.set)?;
    let counters = cx.counters.slice(lanes.map_or(slots.len(), <[u32]>::len));
    if held.len() < counters.len() {
        return None;
    }
    let credit = Credit::new(&held[..counters.len()], rule.weight.milli(), top)?;
    for _ in 0..4 {
        match scan::least_credited(cx.backend(), counters, lanes, credit, |m| cx.rng.below(m)) {
            Least::Found { index, min } if min < credit.exact_below() => {
                let load = credit.load_of(min, credit.held[index]);
                return Some(Some(Choice::validated(Slot::new(index as u32), load)));
            }
            Least::Empty => return Some(None),
            Least::Moved => {}
            _ => return None,
        }
    }
    None
}
