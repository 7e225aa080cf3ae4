//! The credited scan (`least_credited`, the cost mode's dense pass) on every backend:
//! against an oracle that computes each lane's cost in 64 bits, and against the
//! scalar reference draw for draw.

use super::super::credit::Credit;
use super::super::{Backend, Least, least_credited, scalar, simd};
use super::{
    CHECKED, EX, MAX_LEN, Portable, atomics, check_drawn, dispatched_backends, lengths, oracle, random_case,
    repeats,
};
use std::sync::atomic::AtomicU32;

/// Credits for `len` lanes: none, a few, dense small, or large.
fn random_held(rng: &mut fastrand::Rng, len: usize) -> Vec<u32> {
    match rng.u8(0..4) {
        0 => vec![0; len],
        1 => (0..len)
            .map(|_| if rng.u8(0..16) == 0 { rng.u32(1..40) } else { 0 })
            .collect(),
        2 => (0..len).map(|_| rng.u32(0..8)).collect(),
        _ => (0..len).map(|_| rng.u32(0..100_000)).collect(),
    }
}

/// A weight in thousandths: 0, α = 1, a fraction, a large one.
fn random_weight(rng: &mut fastrand::Rng) -> u32 {
    [0, 1000, 1000, 250, 1500, rng.u32(0..5000), 40_000][rng.usize(0..7)]
}

/// The exact costs `1000·x − α·o` (`x` the effective value) of the lanes, in 64
/// bits, over as many lanes as every array has; `None` for an excluded lane.
fn oracle_costs(values: &[u32], excluded: Option<&[u32]>, held: &[u32], weight: u32) -> Vec<Option<i64>> {
    let n = values
        .len()
        .min(excluded.map_or(usize::MAX, <[u32]>::len))
        .min(held.len());
    (0..n)
        .map(|i| {
            let out = excluded.is_some_and(|e| e[i] != 0);
            (!out).then(|| 1000 * i64::from(values[i]) - i64::from(weight) * i64::from(held[i]))
        })
        .collect()
}

/// `least_credited` and the scalar credited scans over `counters` (holding
/// `values`) against the scalar reference's keys, and, where the least key is below
/// the exact bound, its lanes against the exact least cost over the candidates.
fn check_credited(
    counters: &[AtomicU32],
    values: &[u32],
    excluded: Option<&[u32]>,
    held: &[u32],
    weight: u32,
) {
    let top = held.iter().copied().max().unwrap_or(0);
    let Some(c) = Credit::new(held, weight, top) else {
        return;
    };
    let n = values
        .len()
        .min(excluded.map_or(usize::MAX, <[u32]>::len))
        .min(held.len());
    let keys: Vec<u32> = (0..n)
        .map(|i| c.key_at(i, values[i] | excluded.map_or(0, |e| e[i])))
        .collect();
    let (want, at) = oracle(&keys, &vec![0; n]);
    let ctx = format!(
        "{n} lanes, excluded {}, weight {weight}, top {top}",
        excluded.is_some()
    );
    if want.min < c.exact_below() {
        let costs = oracle_costs(values, excluded, held, weight);
        let least = costs
            .iter()
            .flatten()
            .min()
            .copied()
            .expect("a low key is a candidate's");
        let exact: Vec<usize> = (0..n).filter(|&i| costs[i] == Some(least)).collect();
        assert_eq!(exact, at, "lanes at the least key against the exact costs, {ctx}");
        let base = i64::from(weight) * i64::from(top);
        assert_eq!(
            i64::from(want.min) - base,
            least,
            "the key is the cost plus α·K, {ctx}"
        );
        for &i in &at {
            assert_eq!(
                c.load_of(want.min, held[i]),
                values[i],
                "load from the key, {ctx}"
            );
        }
    }
    assert_eq!(
        scalar::min_ties_keyed(counters, excluded, c),
        want,
        "scalar, {ctx}"
    );
    for (k, &i) in at.iter().enumerate() {
        assert_eq!(
            scalar::nth_tie_keyed(counters, excluded, c, want.min, k as u32),
            Ok(i),
            "scalar, {ctx}"
        );
    }
    for &backend in CHECKED {
        check_drawn(
            &format!("{backend:?}, {ctx}"),
            n,
            want,
            &at,
            0..at.len(),
            |draw| least_credited(backend, counters, excluded, c, draw),
        );
    }
    check_drawn(&format!("portable, {ctx}"), n, want, &at, 0..at.len(), |draw| {
        simd::least_credited(Portable, counters, excluded, c, draw)
    });
}

/// Small loads, so that costs tie across credited and uncredited lanes.
fn small_values(rng: &mut fastrand::Rng, len: usize) -> Vec<u32> {
    (0..len).map(|_| rng.u32(0..6)).collect()
}

#[test]
fn credited_random_arrays_of_every_length() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0201);
    for len in lengths(MAX_LEN) {
        for round in 0..if cfg!(miri) { 1 } else { repeats(3) } {
            let (mut values, excluded) = random_case(&mut rng, len + 16);
            if round == 0 {
                values = small_values(&mut rng, len + 16);
            }
            let held = random_held(&mut rng, len + 16);
            let counters = atomics(&values);
            let weight = random_weight(&mut rng);
            // Every alignment of the counters against the vectors; the credits start
            // elsewhere.
            let (off, hoff) = (rng.usize(0..16), rng.usize(0..16));
            let (c, v) = (&counters[off..off + len], &values[off..off + len]);
            let h = &held[hoff..hoff + len];
            check_credited(c, v, Some(&excluded[off..off + len]), h, weight);
            check_credited(c, v, None, h, weight);
        }
    }
}

/// No room for a load: refused when built.
#[test]
fn credit_refuses_a_bound_with_no_room() {
    assert!(Credit::new(&[], 1_000_000, 4295).is_none());
    assert!(Credit::new(&[], 1_000_000, 4294).is_some());
    assert!(Credit::new(&[], 0, u32::MAX).is_some());
}

/// `least_credited` on `backend` (the portable vector scan for `None`) with draws
/// from a generator seeded with `seed`: the answer and every draw made.
fn transcript(
    backend: Option<Backend>,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    c: Credit<'_>,
    seed: u64,
) -> (Least, Vec<(u32, u32)>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draws = Vec::new();
    let draw = |m| {
        let d = rng.u32(..m);
        draws.push((m, d));
        d
    };
    let got = match backend {
        Some(backend) => least_credited(backend, counters, excluded, c, draw),
        None => simd::least_credited(Portable, counters, excluded, c, draw),
    };
    (got, draws)
}

/// Every backend makes the draws scalar makes and answers as it does, for valid
/// bounds and for any (wrapping arithmetic is the same everywhere), on both sides
/// of each length where the path changes, and over segments.
#[test]
fn credited_matches_scalar_draw_for_draw() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0202);
    let lengths = (0..=if cfg!(miri) { 12 } else { 80 }).chain(if cfg!(miri) {
        vec![]
    } else {
        vec![100, 127, 128, 129, 300, 511, 512, 513, 1000, 4097]
    });
    for len in lengths {
        for round in 0..if cfg!(miri) { 2 } else { 16 } {
            let (mut values, excluded) = random_case(&mut rng, len);
            if round % 2 == 0 {
                values = small_values(&mut rng, len);
            }
            let counters = atomics(&values);
            let held = random_held(&mut rng, len);
            let top = held.iter().copied().max().unwrap_or(0);
            let c = if round % 4 == 3 {
                // Any bound, wrapping keys included.
                Credit {
                    held: &held,
                    weight: rng.u32(..),
                    top: rng.u32(..),
                    limit: [0, 1, rng.u32(..), EX][rng.usize(0..4)],
                }
            } else {
                match Credit::new(&held, random_weight(&mut rng), top) {
                    Some(c) => c,
                    None => continue,
                }
            };
            let seed = rng.u64(..);
            for excluded in [None, Some(&excluded[..])] {
                let want = transcript(Some(Backend::Scalar), &counters, excluded, c, seed);
                let backends = dispatched_backends().iter().map(|&b| Some(b));
                for backend in backends.chain([None]) {
                    assert_eq!(
                        transcript(backend, &counters, excluded, c, seed),
                        want,
                        "{backend:?} (None: portable) against scalar: {len} lanes, \
                         excluded {}, seed {seed:#x}, {c:?}\nvalues {values:?}\nexcluded {excluded:?}",
                        excluded.is_some(),
                    );
                }
            }
        }
    }
}
