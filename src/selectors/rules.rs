//! The rules several modes share, as free functions a mode imports by name
//! (not `impl Context` blocks reached across files): the two-draw rule and
//! its weighted pair, the answer when two choices' winner is unhealthy, and
//! the exact least candidate by health. A new mode reuses these; what is one
//! mode's own stays in its file.

use crate::context::{Context, Slot, below, same};
use crate::load::ratio::Ratio;
use crate::rng::Rng;
use crate::selectors::Choice;
use crate::sync::atomic::Ordering::Relaxed;
use crate::weights::Weights;

/// Pairs power-of-two draws again before it takes the exact scan.
const REDRAWS: u32 = 8;

/// The second of two distinct uniform draws over `n >= 2`, the first being
/// `a`: `(a + 1 + draw over n - 1) mod n`, so the two differ. (n = 1 takes
/// one draw and no second.)
#[inline(always)]
pub(crate) fn other_draw(rng: &mut Rng, a: u32, n: u32) -> u32 {
    // a + 1 + draw < 2n, so one subtraction replaces `% n` (a division).
    let b = a + 1 + rng.below(n - 1);
    if b >= n { b - n } else { b }
}

/// Two choices' answer once the pair is ordered (`chosen` won, `other`
/// lost): `chosen`, unless it is unhealthy while some worker is marked,
/// then [`two_choices_unhealthy`] out of line.
#[inline(always)]
pub(crate) fn two_choices_answer<'a>(
    cx: &mut Context<'a>,
    chosen: (Slot<'a>, u32),
    other: (Slot<'a>, u32),
) -> Option<Choice<'a>> {
    if cx.health_any() && !cx.healthy(chosen.0.index()) {
        let (slot, load) = cx.detached_choice(|cx| {
            let c = two_choices_unhealthy(cx, chosen, other)?;
            Some((c.slot.index(), c.seen?))
        })?;
        return Some(Choice::validated(slot, load));
    }
    Some(Choice::validated(chosen.0, chosen.1))
}

/// A power-of-two pair in a weighted, unmasked pick: two draws in
/// proportion to capacity, so that a large worker is in enough pairs to
/// take its share (uniform draws put a worker in at most 2/n of them,
/// whatever its capacity). A second draw that meets the first is drawn
/// again, then replaced by a uniform candidate other than the first: the
/// two are always distinct, as unweighted.
#[inline(always)]
pub(crate) fn weighted_pair<'a>(cx: &mut Context<'a>, w: &Weights) -> Option<(Slot<'a>, Slot<'a>)> {
    let a = w.alias.pick(cx.rng.next_u64())?;
    let mut b = w.alias.pick(cx.rng.next_u64())?;
    if b == a {
        b = w.alias.pick(cx.rng.next_u64())?;
        if b == a {
            let n = cx.len();
            let i = cx.rng.below(n as u32) as usize;
            b = cx.candidate(i)?.index();
            if b == a {
                b = cx.candidate((i + 1) % n)?.index();
            }
        }
    }
    Some((Slot::new(a), Slot::new(b)))
}

/// Two choices when the winner `chosen` is unhealthy (`other` is the
/// other draw): the other if healthy; else, while some candidate is
/// healthy, pairs drawn again (a bounded number of times), then the exact
/// least-loaded healthy candidate; else the pair compared by own load.
#[cold]
#[inline(never)]
pub(crate) fn two_choices_unhealthy<'a>(
    cx: &mut Context<'a>,
    chosen: (Slot<'a>, u32),
    other: (Slot<'a>, u32),
) -> Option<Choice<'a>> {
    if cx.healthy(other.0.index()) {
        return Some(Choice::validated(other.0, other.1));
    }
    if !cx.any_healthy_candidate() {
        return Some(better_of(cx, chosen, other));
    }
    for _ in 0..REDRAWS {
        let (a, b) = redraw_pair(cx)?;
        if cx.healthy(a.index()) || cx.healthy(b.index()) {
            let (la, lb) = (cx.load(a), cx.load(b));
            return Some(better_of(cx, (a, la), (b, lb)));
        }
    }
    let (slot, load) = least_by_health(cx)?;
    Some(Choice::validated(slot, load))
}

/// Another two-choices pair, drawn as power-of-two draws its first: by
/// capacity when weighted and unmasked, else uniformly (two distinct
/// candidates).
fn redraw_pair<'a>(cx: &mut Context<'a>) -> Option<(Slot<'a>, Slot<'a>)> {
    if let Some(w) = cx.weights()
        && !cx.masked
    {
        return weighted_pair(cx, w);
    }
    let n = cx.len() as u32;
    let a = cx.rng.below(n);
    let b = other_draw(cx.rng, a, n);
    Some((cx.candidate(a as usize)?, cx.candidate(b as usize)?))
}

/// The better of two candidates and their loads by `Context::weigh` (health
/// first, then own load per capacity), the first on a tie.
pub(crate) fn better_of<'a>(cx: &Context<'a>, a: (Slot<'a>, u32), b: (Slot<'a>, u32)) -> Choice<'a> {
    let (sick_a, ra) = cx.weigh(a.0, a.1);
    let (sick_b, rb) = cx.weigh(b.0, b.1);
    let b_wins = if sick_a != sick_b { sick_a } else { rb.lt(ra) };
    let (slot, load) = if b_wins { b } else { a };
    Choice::validated(slot, load)
}

/// The exact least candidate by `Context::weigh`, ties uniform (one draw,
/// none when unique); the load returned is the counter read.
pub(crate) fn least_by_health<'a>(cx: &mut Context<'a>) -> Option<(Slot<'a>, u32)> {
    let mut least: Option<((bool, Ratio), Slot<'a>, u32)> = None;
    let mut ties = 0;
    for i in 0..cx.len() {
        let slot = cx.candidate(i)?;
        let load = cx.counters.get(slot.index()).load(Relaxed);
        let key = cx.weigh(slot, load);
        match least {
            Some((m, _, _)) if same(key, m) => ties += 1,
            Some((m, _, _)) if !below(key, m) => {}
            _ => {
                least = Some((key, slot, load));
                ties = 1;
            }
        }
    }
    let (key, first, load) = least?;
    if ties > 1 {
        let mut k = cx.rng.below(ties);
        for i in 0..cx.len() {
            let slot = cx.candidate(i)?;
            let now = cx.counters.get(slot.index()).load(Relaxed);
            if same(cx.weigh(slot, now), key) {
                if k == 0 {
                    return Some((slot, now));
                }
                k -= 1;
            }
        }
    }
    Some((first, load))
}
