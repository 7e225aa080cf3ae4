//! The weighted scan (`least_weighted`) on every backend: against an oracle that
//! scores each lane in 64 bits, and against the scalar reference draw for draw.

use super::super::weighting::Weighting;
use super::super::{Backend, Least, MinTies, least_weighted, scalar, simd};
use super::{
    CHECKED, EX, MAX_LEN, Portable, atomics, check_drawn, dispatched_backends, exhaustive, lengths, oracle,
    random_case, repeats,
};
use std::sync::atomic::AtomicU32;

/// Per-lane factors as a caller builds them from capacities `w_i`: with `L` their
/// least common multiple, `scale = L / w_i`, and `top = u32::MAX / max(scale)`, the
/// most a lane's value plus the request's weight may be for an exact score.
struct Factors {
    scale: Vec<u32>,
    top: u32,
}

impl Factors {
    fn of(capacities: &[u32]) -> Factors {
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let lcm = capacities
            .iter()
            .fold(1u64, |l, &w| l / gcd(l, u64::from(w)) * u64::from(w));
        assert!(lcm <= u64::from(u32::MAX), "test capacities too varied");
        let scale: Vec<u32> = capacities.iter().map(|&w| (lcm / u64::from(w)) as u32).collect();
        let top = u32::MAX / scale.iter().copied().max().unwrap_or(1);
        Factors { scale, top }
    }

    /// The bound for a request of weight `add`: exact scores when `add <= top`;
    /// a heavier request gets bound 0 and is scored as written.
    fn limit(&self, add: u32) -> u32 {
        self.top.saturating_sub(add)
    }

    fn weighting(&self, add: u32) -> Weighting<'_> {
        Weighting {
            scale: &self.scale,
            limit: self.limit(add),
            add,
        }
    }
}

/// Capacities for `len` lanes: the 4:2:1:1 of the benchmarks, all equal, or mixed
/// (least common multiples up to 1680).
fn random_capacities(rng: &mut fastrand::Rng, len: usize) -> Vec<u32> {
    match rng.u8(0..4) {
        0 => [4, 2, 1, 1].into_iter().cycle().take(len).collect(),
        1 => vec![3; len],
        2 => (0..len).map(|_| rng.u32(1..=8)).collect(),
        _ => (0..len).map(|_| [1, 3, 5, 7, 16][rng.usize(0..5)]).collect(),
    }
}

/// A request weight: small, or near the top, where the add saturates.
fn random_add(rng: &mut fastrand::Rng) -> u32 {
    [0, 1, 1, 2, rng.u32(0..100), 0x8000_0000, EX - 1, EX][rng.usize(0..8)]
}

/// The scores by the definition, computed in 64 bits, over as many lanes as every
/// array has: each must fit 32 bits when the request is light enough for the bound
/// (`add <= top`); a heavier one is scored as written, wrapping.
fn oracle_scores(values: &[u32], excluded: Option<&[u32]>, f: &Factors, add: u32) -> Vec<u32> {
    let n = values
        .len()
        .min(excluded.map_or(usize::MAX, <[u32]>::len))
        .min(f.scale.len());
    let limit = u64::from(f.limit(add));
    (0..n)
        .map(|i| {
            let x = u64::from(values[i] | excluded.map_or(0, |e| e[i]));
            let sum = x.min(limit) + u64::from(add);
            let score = sum * u64::from(f.scale[i]);
            if add <= f.top {
                u32::try_from(score).expect("a valid bound never wraps")
            } else {
                (sum as u32).wrapping_mul(f.scale[i])
            }
        })
        .collect()
}

/// Where the least score is below `top * min(scale)` (and the request is light
/// enough for the bound), the lanes holding it are exactly the candidates of least
/// `(load + add) / capacity`, compared exactly: the contract the caller relies on
/// (see `weighting.rs`).
fn check_exact_below_bound(
    values: &[u32],
    excluded: Option<&[u32]>,
    capacities: &[u32],
    (n, f, add): (usize, &Factors, u32),
    want: MinTies,
    at: &[usize],
) {
    let min_scale = f.scale[..n].iter().copied().min().unwrap_or(1);
    if add > f.top || u64::from(want.min) >= u64::from(f.top) * u64::from(min_scale) {
        return;
    }
    let candidates: Vec<usize> = (0..n).filter(|&i| excluded.is_none_or(|e| e[i] == 0)).collect();
    let ratio = |i: usize| (u64::from(values[i]) + u64::from(add), u64::from(capacities[i]));
    let least = candidates
        .iter()
        .map(|&i| ratio(i))
        .reduce(|a, b| if b.0 * a.1 < a.0 * b.1 { b } else { a })
        .expect("a score this low is a candidate's");
    let exact: Vec<usize> = candidates
        .into_iter()
        .filter(|&i| ratio(i).0 * least.1 == least.0 * ratio(i).1)
        .collect();
    assert_eq!(exact, at, "lanes at the least score against the exact ratios");
}

/// `least_weighted` and the scalar weighted scans over `counters` (holding `values`)
/// against the oracle, on every backend and on the portable vector scan.
fn check_weighted(
    counters: &[AtomicU32],
    values: &[u32],
    excluded: Option<&[u32]>,
    capacities: &[u32],
    add: u32,
    ks: Option<&[usize]>,
) {
    let f = Factors::of(capacities);
    let w = f.weighting(add);
    let scores = oracle_scores(values, excluded, &f, add);
    let (want, at) = oracle(&scores, &vec![0; scores.len()]);
    let n = scores.len();
    check_exact_below_bound(values, excluded, capacities, (n, &f, add), want, &at);
    let ctx = format!("{n} lanes, excluded {}, add {add:#x}", excluded.is_some());
    assert_eq!(
        scalar::min_ties_keyed(counters, excluded, w),
        want,
        "scalar, {ctx}"
    );
    for (k, &i) in at.iter().enumerate() {
        assert_eq!(
            scalar::nth_tie_keyed(counters, excluded, w, want.min, k as u32),
            Ok(i),
            "scalar, {ctx}"
        );
    }
    let ks = || -> Vec<usize> { ks.map_or_else(|| (0..at.len()).collect(), <[usize]>::to_vec) };
    for &backend in CHECKED {
        check_drawn(&format!("{backend:?}, {ctx}"), n, want, &at, ks(), |draw| {
            least_weighted(backend, counters, excluded, w, draw)
        });
    }
    check_drawn(&format!("portable, {ctx}"), n, want, &at, ks(), |draw| {
        simd::least_weighted(Portable, counters, excluded, w, draw)
    });
}

#[test]
fn weighted_random_arrays_of_every_length() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0101);
    for len in lengths(MAX_LEN) {
        for _ in 0..if cfg!(miri) { 1 } else { repeats(3) } {
            let (values, excluded) = random_case(&mut rng, len + 16);
            let capacities = random_capacities(&mut rng, len + 16);
            let counters = atomics(&values);
            let add = random_add(&mut rng);
            // Every alignment of the counters against the vectors; the factors start
            // elsewhere.
            let (off, woff) = (rng.usize(0..16), rng.usize(0..16));
            let (c, v) = (&counters[off..off + len], &values[off..off + len]);
            let caps = &capacities[woff..woff + len];
            check_weighted(c, v, Some(&excluded[off..off + len]), caps, add, None);
            check_weighted(c, v, None, caps, add, None);
        }
    }
}

/// The shorter of the counters (with the exclusions) and the factors decides how
/// many lanes there are.
#[test]
fn weighted_factors_cut_the_lanes() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0102);
    for len in 0..=MAX_LEN.min(100) {
        let (values, excluded) = random_case(&mut rng, len);
        let counters = atomics(&values);
        let f = Factors::of(&random_capacities(&mut rng, len));
        let cut = rng.usize(0..=len);
        let add = random_add(&mut rng);
        let short = Factors {
            scale: f.scale[..cut].to_vec(),
            top: f.top,
        };
        let w = short.weighting(add);
        let want = oracle(
            &oracle_scores(&values, Some(&excluded), &short, add),
            &vec![0; cut],
        )
        .0;
        for &backend in CHECKED {
            let got = least_weighted(backend, &counters, Some(&excluded), w, |_| 0);
            match got {
                Least::Found { index, min } => {
                    assert!(
                        index < cut && min == want.min,
                        "{backend:?}: {got:?}, want {want:?}"
                    )
                }
                Least::Empty => assert_eq!(cut, 0, "{backend:?}"),
                Least::Saturated => assert_eq!(want.min, EX, "{backend:?}"),
                Least::Moved => panic!("{backend:?}: moved with no writer"),
            }
        }
    }
}

/// Long arrays, where the scan counts ties per segment: idle (every lane of the
/// highest capacity ties), a few low lanes, minima only at the end.
#[cfg(not(miri))]
#[test]
fn weighted_over_segments() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0103);
    // Sampled (see `exhaustive`): not the two longest.
    let longest = if exhaustive() { 65_537 } else { 4097 };
    for len in [511, 513, 1024, 4097, 10_000, 65_537]
        .into_iter()
        .filter(|&l| l <= longest)
    {
        for shape in 0..3 {
            let values: Vec<u32> = match shape {
                0 => vec![0; len],
                1 => {
                    let mut v: Vec<u32> = (0..len).map(|_| rng.u32(4..8)).collect();
                    for _ in 0..3 {
                        v[rng.usize(..len)] = 0;
                    }
                    v
                }
                _ => (0..len)
                    .map(|i| if i + 40 > len { i as u32 % 3 } else { 9 })
                    .collect(),
            };
            let counters = atomics(&values);
            let capacities = random_capacities(&mut rng, len);
            let excluded: Vec<u32> = (0..len).map(|_| if rng.u8(0..4) == 0 { EX } else { 0 }).collect();
            let add = rng.u32(0..3);
            for excluded in [None, Some(&excluded[..])] {
                let ks: Vec<usize> = (0..6).map(|_| rng.usize(..len)).collect();
                // `check_drawn` asks only for ties that exist.
                let f = Factors::of(&capacities);
                let ties = oracle(&oracle_scores(&values, excluded, &f, add), &vec![0; len])
                    .1
                    .len();
                let ks: Vec<usize> = ks
                    .into_iter()
                    .map(|k| k % ties.max(1))
                    .chain([0, ties.saturating_sub(1)])
                    .collect();
                check_weighted(&counters, &values, excluded, &capacities, add, Some(&ks));
            }
        }
    }
}

/// `least_weighted` on `backend` with draws from a generator seeded with `seed`: the
/// answer and every draw made.
fn transcript(
    backend: Option<Backend>,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    w: Weighting<'_>,
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
        Some(backend) => least_weighted(backend, counters, excluded, w, draw),
        None => simd::least_weighted(Portable, counters, excluded, w, draw),
    };
    (got, draws)
}

/// Every backend makes the draws scalar makes and answers as it does, for valid
/// factors and for any (a wrapping multiply is the same everywhere), on both sides of
/// each length where the path changes.
#[test]
fn weighted_matches_scalar_draw_for_draw() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0104);
    let lengths = (0..=if cfg!(miri) { 12 } else { 80 }).chain(if cfg!(miri) {
        vec![]
    } else {
        vec![100, 127, 128, 129, 300, 511, 512, 513, 1000]
    });
    for len in lengths {
        for round in 0..if cfg!(miri) { 2 } else { 24 } {
            let (values, excluded) = random_case(&mut rng, len);
            let counters = atomics(&values);
            let f = if round % 3 == 2 {
                // Any factors, zero and wrapping products included.
                let any = |rng: &mut fastrand::Rng| [0, 1, 2, rng.u32(..), EX][rng.usize(0..5)];
                Factors {
                    scale: (0..len).map(|_| any(&mut rng)).collect(),
                    top: any(&mut rng),
                }
            } else {
                Factors::of(&random_capacities(&mut rng, len))
            };
            let w = f.weighting(random_add(&mut rng));
            let seed = rng.u64(..);
            for excluded in [None, Some(&excluded[..])] {
                let want = transcript(Some(Backend::Scalar), &counters, excluded, w, seed);
                let backends = dispatched_backends().iter().map(|&b| Some(b));
                for backend in backends.chain([None]) {
                    assert_eq!(
                        transcript(backend, &counters, excluded, w, seed),
                        want,
                        "{backend:?} (None: portable) against scalar: {len} lanes, \
                         excluded {}, seed {seed:#x}, {w:?}\nvalues {values:?}\nexcluded {excluded:?}",
                        excluded.is_some(),
                    );
                }
            }
        }
    }
}
