//! The cost mode's passes over the candidates. `minimum` and `softmax` are
//! the reference: one scalar pass per step, in candidate order.
//! `minimum_sparse` answers `T = 0` from the SIMD least-loaded scan and the
//! credited workers alone, `minimum_dense` from one SIMD scan of every
//! candidate's cost key (`scan::least_credited`); each declines when only the
//! reference can answer.

use crate::selectors::tuning::{CreditWeight, cost};
use crate::candidates::Candidates;
use crate::scan::{self, Credit, Least};
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

/// The `T = 0` answer from the SIMD least-loaded scan plus the credited
/// workers, or `None` when only [`minimum`] can give it.
///
/// An uncredited candidate costs its load, so the least cost among them is
/// at least the least load `m` over all candidates; a credited one costs
/// less than its load. Hence if the least credited cost is below `1000·m`
/// it is the minimum and only credited workers tie at it; if it is above,
/// the scan's least-loaded worker (uncredited, or its cost would be below
/// `1000·m`) is the minimum and its ties are exactly the scan's. Only
/// equality mixes both kinds of ties: then the reference answers. So do
/// picks with a busy threshold, marked health, capacity weights, a stale
/// mask, or credit on more than a quarter of the candidates.
#[inline]
pub(crate) fn minimum_sparse<'a>(cx: &mut Context<'a>, rule: Rule) -> Option<Option<Choice<'a>>> {
    if rule.busy.is_some() || rule.health || cx.weights().is_some() {
        return None;
    }
    let Candidates::Fresh { slots, lanes } = cx.candidates else {
        return None;
    };
    let hits = match cx.request().get_cache_hits() {
        Some(hits) if rule.weight.milli() > 0 => hits,
        // No credit: the cost is the load.
        _ => return Some(cx.least_loaded().map(|(s, load)| Choice::validated(s, load))),
    };
    let credited = hits.credited();
    if credited.len() > slots.len() / 4 {
        return None;
    }
    let Some((least, least_load)) = cx.least_loaded() else {
        return Some(None);
    };
    let set = cx.set;
    let admitted = |s: u32| match lanes {
        None => (s as usize) < slots.len(),
        Some(excluded) => excluded.get(s as usize) == Some(&0),
    };
    let judge = |cx: &Context<'a>, s: u32| -> Option<(i64, u32)> {
        let held = hits.held_in(set, s);
        if held == 0 || !admitted(s) {
            return None;
        }
        let load = cx.load(Slot::new(s));
        Some((cost(load, held, rule.weight), load))
    };
    let mut best: Option<(i64, u32, u32)> = None;
    let mut ties = 0u32;
    for &s in credited {
        let Some((c, load)) = judge(cx, s) else { continue };
        match best {
            Some((least, _, _)) if c > least => {}
            Some((least, _, _)) if c == least => ties += 1,
            _ => {
                best = Some((c, s, load));
                ties = 1;
            }
        }
    }
    let base = cost(least_load, 0, rule.weight);
    let Some((c, first, load)) = best else {
        return Some(Some(Choice::validated(least, least_load)));
    };
    if c > base {
        return Some(Some(Choice::validated(least, least_load)));
    }
    if c == base {
        return None;
    }
    if ties > 1 {
        let mut k = cx.rng().below(ties);
        for &s in credited {
            if let Some((cs, load)) = judge(cx, s)
                && cs == c
            {
                if k == 0 {
                    return Some(Some(Choice::validated(Slot::new(s), load)));
                }
                k -= 1;
            }
        }
    }
    Some(Some(Choice::validated(Slot::new(first), load)))
}

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
