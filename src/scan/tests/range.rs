//! The range pass (`scan::range`, the cost mode's softmax span) on every backend:
//! against an oracle over the candidates, and against the scalar reference.

use super::super::{Backend, Range, range, scalar, simd};
use super::{CHECKED, EX, MAX_LEN, Portable, atomics, lengths, random_case, repeats};

/// The least effective value and the largest candidate counter, from their
/// definitions: plain iterators, no complement trick.
fn oracle(values: &[u32], excluded: Option<&[u32]>) -> Range {
    let n = excluded.map_or(values.len(), |e| e.len().min(values.len()));
    let ex = |i: usize| excluded.map_or(0, |e| e[i]);
    let min = (0..n).map(|i| values[i] | ex(i)).min().unwrap_or(EX);
    let max = (0..n)
        .filter(|&i| ex(i) == 0)
        .map(|i| values[i])
        .max()
        .unwrap_or(0);
    Range { min, max }
}

#[test]
fn range_matches_the_oracle_on_every_backend() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_0301);
    for len in lengths(MAX_LEN) {
        for _ in 0..if cfg!(miri) { 1 } else { repeats(3) } {
            let (values, excluded) = random_case(&mut rng, len + 16);
            let counters = atomics(&values);
            let off = rng.usize(0..16);
            let (c, v, e) = (
                &counters[off..off + len],
                &values[off..off + len],
                &excluded[off..off + len],
            );
            for excluded in [None, Some(e)] {
                let want = oracle(v, excluded);
                assert_eq!(
                    scalar::range(c, excluded),
                    want,
                    "scalar, {len} lanes, {excluded:?}"
                );
                for &backend in CHECKED {
                    assert_eq!(range(backend, c, excluded), want, "{backend:?}, {len} lanes");
                }
                assert_eq!(simd::range(Portable, c, excluded), want, "portable, {len} lanes");
            }
        }
    }
}

#[test]
fn range_of_nothing_and_of_excluded_lanes() {
    let none = Range { min: EX, max: 0 };
    for &backend in CHECKED {
        assert_eq!(range(backend, &[], None), none);
        let c = atomics(&[4; 40]);
        assert_eq!(range(backend, &c, Some(&[EX; 40])), none, "{backend:?}");
        // Slices of different lengths: the shorter decides.
        assert_eq!(range(backend, &c[..3], Some(&[0; 40])), Range { min: 4, max: 4 });
        assert_eq!(
            range(Backend::Scalar, &c, Some(&[0; 2])),
            Range { min: 4, max: 4 }
        );
    }
}
