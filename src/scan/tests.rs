//! Every backend against the scalar reference, and the reference against a naive oracle.
//!
//! All three backends are run everywhere: one the CPU lacks must quietly fall back to
//! scalar, which these tests check as well. Each backend is tested twice: through the
//! public functions (scalar for short arrays) and as its kernel, on every length.

use super::backend::choose;
use super::draw::Cut;
use super::outcome::{Drawn, FewAt};
use super::simd;
use super::vector::Vector;
use super::{Backend, Kernel, Least, MinTies, least, min_ties, min_ties_all, nth_tie, nth_tie_all, scalar};
use proptest::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

mod credited;
mod range;
mod weighted;

const ALL: [Backend; 4] = [Backend::Scalar, Backend::Avx2, Backend::Avx512, Backend::Neon];
/// The backends each check runs: all of them, or under Miri, where every one runs
/// the scalar code, the scalar one and one that falls back to it (each check's
/// cost grows with the list, and Miri interprets every step).
const CHECKED: &[Backend] = if cfg!(miri) {
    &[Backend::Scalar, Backend::Avx512]
} else {
    &ALL
};
/// Longest array in the exhaustive loops. Miri runs only the scalar code (every backend
/// falls back to it there), so a few short arrays cover it.
const MAX_LEN: usize = if cfg!(miri) { 10 } else { 300 };
/// Start offsets into a larger array, so vector loads see every alignment.
const OFFSETS: usize = if cfg!(miri) { 2 } else { 16 };
const EX: u32 = u32::MAX;
/// Every length up to here is checked even when the loops are sampled: each
/// backend's every tail (16 lanes, four vectors a step, and the next step).
const DENSE: usize = 100;

/// Whether the loops over lengths are exhaustive: in an optimised build
/// (`cargo test --release`), or with `WORKERPICK_EXHAUSTIVE` set (`ci/test.sh`
/// runs the debug binary so). An unoptimised `cargo test` (the test profile's
/// opt-level 0, where every intrinsic is a call and the exhaustive loops take
/// about 100 s of CPU) samples them: [`lengths`], [`repeats`].
fn exhaustive() -> bool {
    !cfg!(debug_assertions) || std::env::var_os("WORKERPICK_EXHAUSTIVE").is_some()
}

/// The lengths `0..=max`: all of them when [`exhaustive`], else every one up to
/// [`DENSE`], every eleventh past it, and `max`.
fn lengths(max: usize) -> impl Iterator<Item = usize> {
    let all = exhaustive();
    (0..=max).filter(move |&len| all || len <= DENSE || (len - DENSE).is_multiple_of(11) || len == max)
}

/// `n` random arrays a length when [`exhaustive`], else one.
fn repeats(n: usize) -> usize {
    if exhaustive() { n } else { 1 }
}

/// One way to run a scan: through the public functions (scalar for short arrays,
/// with or without an exclusion array), or straight through a backend's kernel on
/// every length.
#[derive(Clone, Copy, Debug)]
enum Via {
    Api(Backend),
    Kernel(Backend),
    /// The shared vector scan on [`Portable`] lanes.
    Portable,
}

impl Via {
    fn min_ties(self, counters: &[AtomicU32], excluded: Option<&[u32]>) -> MinTies {
        match (self, excluded) {
            (Via::Api(b), Some(e)) => min_ties(b, counters, e),
            (Via::Api(b), None) => min_ties_all(b, counters),
            (Via::Kernel(b), _) => Kernel::of(b).min_ties(counters, excluded),
            (Via::Portable, _) => simd::min_ties(Portable, counters, excluded),
        }
    }

    fn nth_tie(
        self,
        counters: &[AtomicU32],
        excluded: Option<&[u32]>,
        min: u32,
        k: u32,
    ) -> Result<usize, u32> {
        match (self, excluded) {
            (Via::Api(b), Some(e)) => nth_tie(b, counters, e, min, k),
            (Via::Api(b), None) => nth_tie_all(b, counters, min, k),
            (Via::Kernel(b), _) => Kernel::of(b).nth_tie(counters, excluded, min, k),
            (Via::Portable, _) => simd::nth_tie(Portable, counters, excluded, min, k),
        }
    }
}

fn every_way() -> impl Iterator<Item = Via> {
    CHECKED
        .iter()
        .copied()
        .flat_map(|b| [Via::Api(b), Via::Kernel(b)])
        .chain([Via::Portable])
}

/// Four lanes in plain Rust, one Relaxed load each: the primitives of a vector
/// backend without SIMD, so that the shared vector scan (`simd.rs`) runs on every
/// target, and under Miri (which cannot run the backends' inline asm) has its
/// pointer arithmetic and bounds checked.
#[derive(Clone, Copy)]
struct Portable;

impl Vector for Portable {
    type V = [u32; 4];
    const LANES: usize = 4;

    unsafe fn load(self, p: *const AtomicU32) -> [u32; 4] {
        // SAFETY: p[0..4] are live atomics (the caller's promise).
        core::array::from_fn(|j| unsafe { &*p.add(j) }.load(Relaxed))
    }

    unsafe fn load_tail(self, p: *const AtomicU32, len: usize) -> [u32; 4] {
        // SAFETY: p[0..len] are live atomics (the caller's promise).
        core::array::from_fn(|j| {
            if j < len {
                unsafe { &*p.add(j) }.load(Relaxed)
            } else {
                u32::MAX
            }
        })
    }

    unsafe fn load_plain(self, p: *const u32) -> [u32; 4] {
        // SAFETY: p[0..4] are readable (the caller's promise).
        core::array::from_fn(|j| unsafe { *p.add(j) })
    }

    unsafe fn load_plain_tail(self, p: *const u32, len: usize) -> [u32; 4] {
        // SAFETY: p[0..len] are readable (the caller's promise).
        core::array::from_fn(|j| if j < len { unsafe { *p.add(j) } } else { 0 })
    }

    fn splat(self, x: u32) -> [u32; 4] {
        [x; 4]
    }

    fn or(self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        core::array::from_fn(|j| a[j] | b[j])
    }

    fn xor(self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        core::array::from_fn(|j| a[j] ^ b[j])
    }

    fn min(self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        core::array::from_fn(|j| a[j].min(b[j]))
    }

    fn hmin(self, a: [u32; 4]) -> u32 {
        a.into_iter().fold(u32::MAX, u32::min)
    }

    fn eq_bits(self, a: [u32; 4], t: [u32; 4]) -> u64 {
        (0..4).fold(0, |bits, j| bits | u64::from(a[j] == t[j]) << j)
    }

    fn count_eq(self, acc: [u32; 4], a: [u32; 4], t: [u32; 4]) -> [u32; 4] {
        core::array::from_fn(|j| acc[j].wrapping_add(u32::from(a[j] == t[j])))
    }

    fn add(self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        core::array::from_fn(|j| a[j].wrapping_add(b[j]))
    }

    unsafe fn load_plain_fill(self, p: *const u32, len: usize, fill: u32) -> [u32; 4] {
        // SAFETY: p[0..len] are readable (the caller's promise).
        core::array::from_fn(|j| if j < len { unsafe { *p.add(j) } } else { fill })
    }

    fn mul(self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        core::array::from_fn(|j| a[j].wrapping_mul(b[j]))
    }

    fn hsum(self, a: [u32; 4]) -> u32 {
        a.into_iter().fold(0, u32::wrapping_add)
    }
}

fn atomics(values: &[u32]) -> Vec<AtomicU32> {
    values.iter().map(|&v| AtomicU32::new(v)).collect()
}

/// Obviously correct, two passes, no shared code with `scalar`.
fn oracle(values: &[u32], excluded: &[u32]) -> (MinTies, Vec<usize>) {
    let eff: Vec<u32> = values.iter().zip(excluded).map(|(v, e)| v | e).collect();
    let min = eff.iter().copied().min().unwrap_or(u32::MAX);
    let at: Vec<usize> = (0..eff.len()).filter(|&i| eff[i] == min).collect();
    let ties = at.len() as u32;
    (MinTies { min, ties }, at)
}

/// Checks every backend on `values`/`excluded` starting at every offset below `offsets`.
fn check(values: &[u32], excluded: &[u32], offsets: usize) {
    let counters = atomics(values);
    for off in 0..offsets.min(values.len() + 1) {
        check_slices(
            &counters[off..],
            &values[off..],
            &excluded[off.min(excluded.len())..],
        );
    }
}

/// Checks the scan of `counters` (holding `values`) with the exclusion array, and when
/// it excludes nothing, without one.
fn check_slices(counters: &[AtomicU32], values: &[u32], excluded: &[u32]) {
    check_lanes(counters, values, Some(excluded));
    let n = values.len().min(excluded.len());
    if excluded[..n].iter().all(|&e| e == 0) {
        check_lanes(&counters[..n], &values[..n], None);
    }
}

fn check_lanes(counters: &[AtomicU32], values: &[u32], excluded: Option<&[u32]>) {
    let zeros = vec![0; values.len()];
    let effective_excluded = excluded.unwrap_or(&zeros);
    let (want, at) = oracle(values, effective_excluded);
    assert_eq!(scalar::min_ties(counters, excluded), want, "scalar vs oracle");
    for (k, &idx) in at.iter().enumerate() {
        assert_eq!(scalar::nth_tie(counters, excluded, want.min, k as u32), Ok(idx));
    }
    assert_eq!(
        scalar::nth_tie(counters, excluded, want.min, want.ties),
        Err(want.ties)
    );
    assert_eq!(
        scalar::count(counters, excluded, want.min),
        want.ties,
        "scalar count"
    );
    // A value that is not the minimum (or absent) must be searched the same way.
    let other = values
        .first()
        .map_or(7, |v| v | effective_excluded.first().copied().unwrap_or(0));
    let (other_at, other_n) = {
        let at: Vec<usize> = (0..values.len().min(effective_excluded.len()))
            .filter(|&i| values[i] | effective_excluded[i] == other)
            .collect();
        let n = at.len() as u32;
        (at, n)
    };
    for via in every_way() {
        let ctx = || format!("{via:?}, len {}, excluded {}", at.len(), excluded.is_some());
        assert_eq!(via.min_ties(counters, excluded), want, "{}", ctx());
        for (k, &idx) in at.iter().enumerate() {
            assert_eq!(
                via.nth_tie(counters, excluded, want.min, k as u32),
                Ok(idx),
                "{} k {k}",
                ctx()
            );
        }
        for k in [want.ties, want.ties + 1, u32::MAX] {
            assert_eq!(
                via.nth_tie(counters, excluded, want.min, k),
                Err(want.ties),
                "{} k {k}",
                ctx()
            );
        }
        for (k, &idx) in other_at.iter().enumerate() {
            assert_eq!(
                via.nth_tie(counters, excluded, other, k as u32),
                Ok(idx),
                "{} other k {k}",
                ctx()
            );
        }
        assert_eq!(
            via.nth_tie(counters, excluded, other, other_n),
            Err(other_n),
            "{}",
            ctx()
        );
    }
    let mut first = [0; FewAt::MAX];
    for (f, &i) in first.iter_mut().zip(&at) {
        *f = i as u32;
    }
    let few = FewAt {
        found: want.ties.min(FewAt::MAX as u32 + 1),
        first,
    };
    for &b in CHECKED {
        let kernel = Kernel::of(b);
        if excluded.is_none() {
            assert_eq!(kernel.few_at(counters, want.min), few, "{b:?} few_at the minimum");
        }
        assert_eq!(
            kernel.count(counters, excluded, want.min),
            want.ties,
            "{b:?} count of the minimum"
        );
        assert_eq!(
            kernel.count(counters, excluded, other),
            other_n,
            "{b:?} count of {other}"
        );
    }
    for &backend in CHECKED {
        check_least(backend, counters, excluded, want, &at);
    }
    check_draw_in_blocks(counters, excluded, want.min, &at);
}

/// `draw_in_blocks` on every backend: for each draw `k`, tie `k` of the listed
/// blocks in list order, and the blocks holding none marked empty; one draw,
/// over the number of ties, only when there are two or more.
fn check_draw_in_blocks(counters: &[AtomicU32], excluded: Option<&[u32]>, min: u32, at: &[usize]) {
    // Not under Miri: there every backend runs as scalar, whose path here is
    // safe code, and the check multiplies each case's cost.
    if cfg!(miri) {
        return;
    }
    let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
    for width in [4, 13, 64] {
        let cut = Cut {
            counters: &counters[..n],
            excluded: excluded.map(|e| &e[..n]),
            width,
        };
        let blocks = n.div_ceil(width) as u32;
        // Every block (up to FewAt::MAX), then the odd ones backwards.
        let lists: [Vec<u32>; 2] = [
            (0..blocks.min(FewAt::MAX as u32)).collect(),
            (0..blocks).filter(|b| b % 2 == 1).rev().take(3).collect(),
        ];
        for list in &lists {
            let lanes: Vec<usize> = list
                .iter()
                .flat_map(|&b| at.iter().copied().filter(move |&i| i / width == b as usize))
                .collect();
            let empty = list
                .iter()
                .enumerate()
                .filter(|&(_, &b)| !at.iter().any(|&i| i / width == b as usize))
                .fold(0, |m, (j, _)| m | 1 << j);
            let ties = lanes.len() as u32;
            for &b in CHECKED {
                let kernel = Kernel::of(b);
                let ctx = format!("{b:?}, width {width}, blocks {list:?}");
                if lanes.is_empty() {
                    let got = kernel.draw_in_blocks(cut, list, min, |_| panic!("a draw with no tie"));
                    assert_eq!(got, Drawn { lane: Err(0), empty }, "{ctx}");
                }
                for (k, &lane) in lanes.iter().enumerate() {
                    let draw = |m: u32| {
                        assert!(ties > 1 && m == ties, "{ctx}: draw over {m} of {ties} ties");
                        k as u32
                    };
                    let got = kernel.draw_in_blocks(cut, list, min, draw);
                    assert_eq!(
                        got,
                        Drawn {
                            lane: Ok(lane),
                            empty
                        },
                        "{ctx}, k {k}"
                    );
                }
            }
        }
    }
}

/// `least` finds tie `k` for every draw `k`, draws only among 2 or more ties, and
/// reports no lanes and saturation as such.
fn check_least(
    backend: Backend,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    want: MinTies,
    at: &[usize],
) {
    check_least_at(backend, counters, excluded, want, at, 0..at.len());
}

/// [`check_least`] for the draws `ks` only.
fn check_least_at(
    backend: Backend,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    want: MinTies,
    at: &[usize],
    ks: impl IntoIterator<Item = usize>,
) {
    let ctx = format!(
        "least on {backend:?}, {} lanes, excluded {}",
        counters.len(),
        excluded.is_some()
    );
    let n = excluded.map_or(counters.len(), |e| e.len().min(counters.len()));
    check_drawn(&ctx, n, want, at, ks, |draw| {
        least(backend, counters, excluded, draw)
    });
}

/// A least-loaded scan `run` over `n` lanes whose minimum and ties are `want`, at the
/// lanes `at`: finds tie `k` for every draw `k` of `ks`, draws only among 2 or more
/// ties, and reports no lanes and saturation as such.
fn check_drawn(
    ctx: &str,
    n: usize,
    want: MinTies,
    at: &[usize],
    ks: impl IntoIterator<Item = usize>,
    run: impl Fn(&mut dyn FnMut(u32) -> u32) -> Least,
) {
    // Draws over all n lanes (least's random tries) miss: they name a lane off the
    // minimum, or when every lane ties, the lane of tie k. Draws among the ties name
    // tie k; there are none for fewer than 2 ties.
    let miss = (0..n).find(|i| at.binary_search(i).is_err());
    let draw_for = |k: usize| {
        move |m: u32| match miss {
            Some(miss) if m as usize == n => miss as u32,
            _ => {
                assert!(want.ties >= 2, "{ctx}: drew with {} ties", want.ties);
                assert_eq!(m, want.ties, "{ctx}");
                k as u32
            }
        }
    };
    let want = |k: usize| match want.ties {
        0 => Least::Empty,
        _ if want.min == EX => Least::Saturated,
        _ => Least::Found {
            index: at[k],
            min: want.min,
        },
    };
    if at.is_empty() || at.len() == 1 {
        assert_eq!(run(&mut draw_for(0)), want(0), "{ctx}");
    } else {
        for k in ks {
            assert_eq!(run(&mut draw_for(k)), want(k), "{ctx} k {k}");
        }
    }
}

/// Over more than 32 lanes `least` first tries random lanes, and takes the first at
/// the minimum.
#[test]
fn least_takes_a_drawn_lane_at_the_minimum() {
    let mut values = vec![3; 100];
    for i in [10, 50, 99] {
        values[i] = 1;
    }
    let counters = atomics(&values);
    for &backend in CHECKED {
        let mut draws = [7, 42, 50, 10].into_iter();
        let got = least(backend, &counters, None, |m| {
            assert_eq!(m, 100, "{backend:?}: draws over all lanes first");
            draws.next().unwrap()
        });
        assert_eq!(got, Least::Found { index: 50, min: 1 }, "{backend:?}");
    }
}

/// A real random draw picks every tie, and nothing else, about equally often: each
/// random try and the fallback draw among the ties are uniform. Every path of
/// `least`: up to 8 lanes (scalar, one try), up to 32 (one pass, one try), beyond
/// (up to 8 tries, then the count).
#[cfg(not(miri))]
#[test]
fn least_is_uniform_over_the_ties() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0005);
    for len in [5, 8, 13, 32, 400] {
        // A third of the lanes tie: both the tries and the fallback take part.
        let tie = |i: usize| i % 3 == 1;
        let values: Vec<u32> = (0..len)
            .map(|i| if tie(i) { 2 } else { 5 + (i as u32 % 3) })
            .collect();
        let counters = atomics(&values);
        let ties = (0..len).filter(|&i| tie(i)).count();
        let per_tie = 400;
        for backend in ALL {
            let mut seen = vec![0u32; len];
            for _ in 0..per_tie * ties {
                match least(backend, &counters, None, |m| rng.u32(..m)) {
                    Least::Found { index, min: 2 } => seen[index] += 1,
                    other => panic!("{backend:?}, {len} lanes: {other:?}"),
                }
            }
            // 400 picks expected per tie: a deviation of 6 standard deviations
            // (sqrt(400) = 20) is never reached by a uniform draw.
            for (i, &hits) in seen.iter().enumerate() {
                if tie(i) {
                    assert!(
                        (280..=520).contains(&hits),
                        "{backend:?}, {len} lanes: tie {i} picked {hits} times"
                    );
                } else {
                    assert_eq!(
                        hits, 0,
                        "{backend:?}, {len} lanes: lane {i} is not at the minimum"
                    );
                }
            }
        }
    }
}

/// The backends this CPU runs, each checked to be dispatched to its own kernel: a
/// backend that quietly ran as scalar would make a comparison with scalar vacuous.
/// (The AVX-512 kernel runs on every CI host under emulation, by `ci/avx512.sh`.)
fn dispatched_backends() -> &'static [Backend] {
    let available = Backend::available();
    for backend in ALL {
        let kernel = Kernel::of(backend).backend();
        if available.contains(&backend) {
            assert_eq!(
                kernel, backend,
                "{backend:?} is available but dispatches to {kernel:?}"
            );
        } else {
            assert_eq!(kernel, Backend::Scalar, "{backend:?} is not available");
        }
    }
    available
}

/// A kernel is checked against the CPU once, when made: a backend the CPU lacks is
/// replaced there, and reported as what runs.
#[test]
fn kernels_run_only_available_backends() {
    assert_eq!(dispatched_backends(), Backend::available());
    assert_eq!(Kernel::detect().backend(), Backend::detect());
    for backend in ALL {
        let pool = crate::Pool::<u32>::new().with_scan_backend(backend);
        let runs = if Backend::available().contains(&backend) {
            backend
        } else {
            Backend::Scalar
        };
        assert_eq!(pool.scan_backend(), runs, "{backend:?}");
    }
}

/// `least` on `backend` with draws from a generator seeded with `seed`: the answer and
/// every draw made, as (bound, value).
fn least_transcript(
    backend: Backend,
    counters: &[AtomicU32],
    excluded: Option<&[u32]>,
    seed: u64,
) -> (Least, Vec<(u32, u32)>) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut draws = Vec::new();
    let got = least(backend, counters, excluded, |m| {
        let d = rng.u32(..m);
        draws.push((m, d));
        d
    });
    (got, draws)
}

/// Every backend's `least` makes the same draws as scalar's and gives the same answer
/// for them, whatever they are: ties dense and sparse, masked and not, on both sides of
/// each length where the dispatch changes path (8, 32, and the segments beyond).
#[test]
fn least_matches_scalar_draw_for_draw() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0006);
    let lengths = (0..=if cfg!(miri) { 12 } else { 80 }).chain(if cfg!(miri) {
        vec![]
    } else {
        vec![100, 127, 128, 129, 300, 511, 512, 513, 1000]
    });
    for len in lengths {
        for _ in 0..if cfg!(miri) { 2 } else { 24 } {
            let (values, excluded) = random_case(&mut rng, len);
            let counters = atomics(&values);
            let seed = rng.u64(..);
            for excluded in [None, Some(&excluded[..])] {
                let want = least_transcript(Backend::Scalar, &counters, excluded, seed);
                let mut rng = fastrand::Rng::with_seed(seed);
                let mut draws = Vec::new();
                let portable = simd::least(Portable, &counters, excluded, |m| {
                    let d = rng.u32(..m);
                    draws.push((m, d));
                    d
                });
                assert_eq!(
                    (portable, draws),
                    want,
                    "portable vector scan against scalar: {len} lanes, seed {seed:#x}"
                );
                for &backend in dispatched_backends() {
                    assert_eq!(
                        least_transcript(backend, &counters, excluded, seed),
                        want,
                        "{backend:?} against scalar: {len} lanes, excluded {}, seed {seed:#x}\n\
                         values {values:?}\nexcluded {excluded:?}",
                        excluded.is_some(),
                    );
                }
            }
        }
    }
}

fn random_case(rng: &mut fastrand::Rng, len: usize) -> (Vec<u32>, Vec<u32>) {
    let values: Vec<u32> = match rng.u8(0..4) {
        0 => (0..len).map(|_| rng.u32(0..3)).collect(),
        1 => (0..len).map(|_| rng.u32(0..64)).collect(),
        // Around the sign bit and the top, where a signed compare would go wrong.
        2 => (0..len)
            .map(|_| [0, 1, 0x7fff_ffff, 0x8000_0000, 0x8000_0001, EX - 1, EX][rng.usize(0..7)])
            .collect(),
        _ => (0..len).map(|_| rng.u32(..)).collect(),
    };
    let density = rng.u8(0..4);
    let excluded = (0..len)
        .map(|_| if rng.u8(0..4) < density { EX } else { 0 })
        .collect();
    (values, excluded)
}

#[test]
fn random_arrays_of_every_length() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0001);
    for len in lengths(MAX_LEN) {
        for _ in 0..if cfg!(miri) { 1 } else { repeats(4) } {
            let (values, excluded) = random_case(&mut rng, len);
            check(&values, &excluded, OFFSETS);
        }
    }
}

/// Long arrays, where `least` counts ties per segment and searches one segment: ties
/// dense or few, in every segment or only some, with and without exclusions, at
/// lengths around the segment size and past the point where segments grow.
#[cfg(not(miri))]
#[test]
fn least_over_segments() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0004);
    for len in [511, 512, 513, 1000, 1536, 4097, 65_536, 65_537, 100_003] {
        for shape in 0..4 {
            let values: Vec<u32> = match shape {
                0 => vec![4; len],
                1 => (0..len).map(|_| rng.u32(0..3)).collect(),
                // A few minima, anywhere.
                2 => {
                    let mut v = vec![9; len];
                    for _ in 0..3 {
                        v[rng.usize(..len)] = 1;
                    }
                    v
                }
                // Minima only in the last lanes.
                _ => (0..len)
                    .map(|i| if i + 40 > len { i as u32 % 2 } else { 7 })
                    .collect(),
            };
            let counters = atomics(&values);
            let density = rng.u8(0..3);
            let excluded: Vec<u32> = (0..len)
                .map(|_| if rng.u8(0..4) < density { EX } else { 0 })
                .collect();
            let zeros = vec![0; len];
            for excluded in [None, Some(&excluded[..])] {
                let (want, at) = oracle(&values, excluded.unwrap_or(&zeros));
                let n = at.len();
                let ks = [0, n / 3, n / 2, n.saturating_sub(1), rng.usize(..n.max(1))];
                for &backend in CHECKED {
                    check_least_at(
                        backend,
                        &counters,
                        excluded,
                        want,
                        &at,
                        ks.into_iter().filter(|&k| k < n),
                    );
                }
            }
        }
    }
}

#[test]
fn all_equal() {
    for len in lengths(MAX_LEN) {
        check(&vec![5; len], &vec![0; len], 1);
        check(&vec![0; len], &vec![0; len], 1);
    }
}

#[test]
fn all_max_and_all_excluded() {
    for len in lengths(MAX_LEN) {
        // Unexcluded u32::MAX values and excluded lanes are indistinguishable ties.
        check(&vec![EX; len], &vec![0; len], 1);
        check(&vec![3; len], &vec![EX; len], 1);
        let counters = atomics(&vec![3; len]);
        for via in every_way() {
            let got = via.min_ties(&counters, Some(&vec![EX; len]));
            assert_eq!(
                got,
                MinTies {
                    min: EX,
                    ties: len as u32
                }
            );
        }
    }
}

#[test]
fn single_minimum_at_every_position() {
    for len in 1..=MAX_LEN.min(80) {
        // Under Miri only the ends: the lanes a kernel's tail handling reads
        // do not depend on where the minimum sits (every position took 97 s).
        let positions: Vec<usize> = if cfg!(miri) {
            vec![0, len - 1]
        } else if exhaustive() {
            (0..len).collect()
        } else {
            // Sampled: every third position, and the last lane.
            (0..len).filter(|p| p.is_multiple_of(3) || p + 1 == len).collect()
        };
        for pos in positions {
            let mut values = vec![9; len];
            values[pos] = 2;
            check(&values, &vec![0; len], 1);
            // The minimum excluded: the next level becomes the minimum.
            let mut excluded = vec![0; len];
            excluded[pos] = EX;
            check(&values, &excluded, 1);
        }
    }
}

#[test]
fn unequal_lengths_use_the_shorter() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0002);
    for len in 0..=MAX_LEN.min(100) {
        let (values, excluded) = random_case(&mut rng, len);
        let cut = rng.usize(0..=len);
        check(&values, &excluded[..cut], 1);
        check(&values[..cut], &excluded, 1);
    }
}

#[test]
fn empty() {
    for via in every_way() {
        for excluded in [Some(&[][..]), None] {
            assert_eq!(via.min_ties(&[], excluded), MinTies { min: EX, ties: 0 });
            assert_eq!(via.nth_tie(&[], excluded, 0, 0), Err(0));
        }
    }
}

#[test]
fn available_and_detect() {
    let available = Backend::available();
    assert_eq!(available[0], Backend::Scalar);
    assert!(available.contains(&Backend::detect()));
    assert_eq!(Backend::detect(), Backend::detect());
    assert!(std::ptr::eq(available, Backend::available()), "cached");
    let names: Vec<&str> = ALL.iter().map(|b| b.name()).collect();
    assert_eq!(names, ["scalar", "avx2", "avx512", "neon"]);
    if cfg!(miri) || !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert_eq!(available, [Backend::Scalar]);
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        assert_eq!(available, [Backend::Scalar, Backend::Neon]);
        assert!(
            std::env::var_os("WORKERPICK_SCAN").is_some() || Backend::detect() == Backend::Neon,
            "NEON is the default on aarch64"
        );
    }
}

/// `choose` is pure: tested on every target, with the lists each CPU can give.
#[test]
fn env_choice_never_exceeds_the_cpu() {
    use Backend::{Avx2, Avx512, Scalar};
    use std::ffi::OsStr;

    let all = [Scalar, Avx2, Avx512];
    let os = |s: &'static str| Some(OsStr::new(s));
    assert_eq!(choose(&all, None), Avx512);
    assert_eq!(choose(&all, os("scalar")), Scalar);
    assert_eq!(choose(&all, os(" AVX2\n")), Avx2);
    assert_eq!(choose(&all, os("avx512")), Avx512);
    assert_eq!(choose(&all, os("sse9")), Avx512);
    assert_eq!(choose(&all, os("")), Avx512);
    assert_eq!(choose(&[Scalar, Avx2], os("avx512")), Avx2);
    assert_eq!(choose(&[Scalar], os("avx2")), Scalar);
    assert_eq!(choose(&[Scalar, Avx512], os("avx2")), Avx512);
    assert_eq!(choose(&[], os("avx2")), Scalar);
    assert_eq!(choose(&all, os("neon")), Avx512);
}

#[test]
fn env_choice_on_aarch64() {
    use Backend::{Neon, Scalar};
    use std::ffi::OsStr;

    let all = [Scalar, Neon];
    let os = |s: &'static str| Some(OsStr::new(s));
    assert_eq!(choose(&all, None), Neon);
    assert_eq!(choose(&all, os("scalar")), Scalar);
    assert_eq!(choose(&all, os(" NEON\n")), Neon);
    assert_eq!(choose(&all, os("avx2")), Neon);
}

/// Writers flip lanes between two values whose halves differ: a lane read in two
/// pieces would show up as a third value (0 or u32::MAX).
#[cfg(not(miri))]
#[test]
fn concurrent_writers_never_tear_a_lane() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    const A: u32 = 0x0000_ffff;
    const B: u32 = 0xffff_0000;
    let counters = atomics(&[A; 141]);
    let excluded = vec![0; counters.len()];
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = fastrand::Rng::with_seed(0x5eed_0003);
            while !stop.load(Relaxed) {
                let lane = &counters[rng.usize(..counters.len())];
                lane.store(if lane.load(Relaxed) == A { B } else { A }, Relaxed);
            }
        });
        for round in 0..20_000 {
            let backend = Backend::available()[round % Backend::available().len()];
            let got = min_ties(backend, &counters, &excluded);
            assert!(got.min == A || got.min == B, "{backend:?} saw {:#x}", got.min);
            // Counted in a second pass: the lanes at the minimum may have moved.
            assert!(got.ties <= counters.len() as u32);
            if let Ok(i) = nth_tie(backend, &counters, &excluded, got.min, got.ties / 2) {
                assert!(i < counters.len());
            }
        }
        stop.store(true, Relaxed);
    });
}

fn case() -> impl Strategy<Value = (Vec<u32>, Vec<u32>)> {
    let lane = prop_oneof![0u32..4, any::<u32>(), Just(EX), Just(0x8000_0000)];
    proptest::collection::vec((lane, any::<bool>()), 0..MAX_LEN).prop_map(|lanes| {
        lanes
            .into_iter()
            .map(|(v, ex)| (v, if ex { EX } else { 0 }))
            .unzip()
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 512 },
        // Miri's isolation forbids the file system that regression files need.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]

    #[test]
    fn backends_match_the_reference((values, excluded) in case(), off in 0usize..16) {
        let off = off.min(values.len());
        check_slices(&atomics(&values)[off..], &values[off..], &excluded[off..]);
    }
}

#[test]
fn a_packed_outcome_unpacks_to_itself() {
    for least in [
        Least::Found { index: 0, min: 0 },
        Least::Found {
            index: 7,
            min: u32::MAX - 1,
        },
        Least::Found {
            index: usize::MAX - 1,
            min: 2,
        },
        Least::Empty,
        Least::Saturated,
        Least::Moved,
    ] {
        assert_eq!(Least::unpack(least.pack()), least);
    }
}
