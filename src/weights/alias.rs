//! Weighted random in O(1): Walker's alias method, built in integers.
//!
//! Each of the `n` buckets holds one candidate's weight, or part of it, topped
//! up with part of one other candidate's ("its alias"): a draw names a bucket
//! uniformly and then takes its own candidate or the alias by one comparison.
//! Built exactly in integer units of `1/(n Σc)`; the only rounding is of each
//! bucket's threshold to 32 bits (an error below 2⁻³² per bucket).

/// The alias table over `n` candidates, naming them by slot.
pub(crate) struct Alias {
    buckets: Box<[Bucket]>,
}

/// One bucket: its own candidate, the alias that tops it up, and the
/// threshold between them, together so that a draw reads one of them.
#[derive(Clone, Copy)]
#[repr(align(16))]
struct Bucket {
    /// Take `own` when the draw's high half is below this, else `alias`.
    /// A full bucket keeps `u32::MAX` and has itself as alias.
    keep: u32,
    own: u32,
    alias: u32,
}

impl Alias {
    /// The table for candidates `slots` of weights `w` (each ≥ 1).
    pub(crate) fn build(w: &[u32], slots: &[u32]) -> Self {
        let n = w.len();
        let total: u64 = w.iter().map(|&c| u64::from(c)).sum();
        // Bucket i starts with weight w_i * n in units where a bucket holds `total`.
        let mut left: Vec<u64> = w.iter().map(|&c| u64::from(c) * n as u64).collect();
        let mut buckets: Box<[Bucket]> = slots
            .iter()
            .map(|&own| Bucket {
                keep: u32::MAX,
                own,
                alias: own,
            })
            .collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| left[i] < total);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            // Bucket s keeps left[s] of `total` and takes the rest from l.
            buckets[s].keep = ((u128::from(left[s]) << 32) / u128::from(total)) as u32;
            buckets[s].alias = slots[l];
            left[l] -= total - left[s];
            if left[l] < total {
                large.pop();
                small.push(l);
            }
        }
        // What remains holds exactly `total` (up to nothing: integers), so it
        // keeps its own candidate always (`keep` stays u32::MAX, alias itself).
        Self { buckets }
    }

    /// The slot a 64-bit uniform draw names (`None` for an empty table).
    #[inline(always)]
    pub(crate) fn pick(&self, draw: u64) -> Option<u32> {
        let n = self.buckets.len() as u64;
        let bucket = self.buckets.get((((draw & 0xffff_ffff) * n) >> 32) as usize)?;
        Some(if ((draw >> 32) as u32) < bucket.keep {
            bucket.own
        } else {
            bucket.alias
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(n: usize) -> Vec<u32> {
        (0..n as u32).collect()
    }

    /// The exact probability of each candidate, from the table, in units of 2⁻³²/n.
    fn masses(a: &Alias) -> Vec<u128> {
        let n = a.buckets.len();
        let mut m = vec![0u128; n];
        for b in a.buckets.iter() {
            // A full bucket's alias is itself: the draw at u32::MAX stays.
            let keep = u128::from(b.keep);
            m[b.own as usize] += keep;
            m[b.alias as usize] += (1u128 << 32) - keep;
        }
        m
    }

    #[test]
    fn masses_match_the_weights() {
        for w in [
            vec![4, 2, 1, 1],
            vec![1, 1000],
            vec![7],
            vec![3, 5, 7, 11, 13, 1, 1, 2],
            vec![65536, 1, 1],
        ] {
            let a = Alias::build(&w, &identity(w.len()));
            let total: u128 = w.iter().map(|&c| u128::from(c)).sum();
            let n = w.len() as u128;
            for (i, m) in masses(&a).into_iter().enumerate() {
                let exact = (u128::from(w[i]) << 32) * n / total;
                // One rounding per bucket, at most n buckets give to one candidate.
                assert!(
                    m.abs_diff(exact) <= n,
                    "weights {w:?} candidate {i}: {m} vs {exact}"
                );
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "statistics over 10^6 draws: the masses test covers the table")]
    fn draws_follow_the_weights() {
        let w = [4, 2, 1, 1];
        let a = Alias::build(&w, &identity(w.len()));
        let mut rng = fastrand::Rng::with_seed(7);
        let mut hits = [0u32; 4];
        let draws = 1_000_000;
        for _ in 0..draws {
            hits[a.pick(rng.u64(..)).unwrap() as usize] += 1;
        }
        for (i, &h) in hits.iter().enumerate() {
            let share = f64::from(h) / f64::from(draws);
            let want = f64::from(w[i]) / 8.0;
            assert!((share - want).abs() < 0.01 * want, "{i}: {share} vs {want}");
        }
    }
}
