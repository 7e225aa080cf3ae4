//! Weighted random in O(1): Walker's alias method, built in integers.
//!
//! Each of the `n` buckets holds one candidate's weight, or part of it, topped
//! up with part of one other candidate's ("its alias"): a draw names a bucket
//! uniformly and then takes its own candidate or the alias by one comparison.
//! Built exactly in integer units of `1/(n Σc)`; the only rounding is of each
//! bucket's threshold to 32 bits (an error below 2⁻³² per bucket).

/// The alias table over candidates `0..n` (in set order).
pub(crate) struct Alias {
    /// Per bucket: take the bucket's own candidate when the draw's high half
    /// is below this, else its alias.
    keep: Box<[u32]>,
    alias: Box<[u32]>,
}

impl Alias {
    /// The table for weights `w` (each ≥ 1).
    pub(crate) fn build(w: &[u32]) -> Self {
        let n = w.len();
        let total: u64 = w.iter().map(|&c| u64::from(c)).sum();
        // Bucket i starts with weight w_i * n in units where a bucket holds `total`.
        let mut left: Vec<u64> = w.iter().map(|&c| u64::from(c) * n as u64).collect();
        let mut keep = vec![u32::MAX; n].into_boxed_slice();
        let mut alias: Box<[u32]> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| left[i] < total);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            // Bucket s keeps left[s] of `total` and takes the rest from l.
            keep[s] = ((u128::from(left[s]) << 32) / u128::from(total)) as u32;
            alias[s] = l as u32;
            left[l] -= total - left[s];
            if left[l] < total {
                large.pop();
                small.push(l);
            }
        }
        // What remains holds exactly `total` (up to nothing: integers), so it
        // keeps its own candidate always (`keep` stays u32::MAX, alias itself).
        Self { keep, alias }
    }

    /// The candidate a 64-bit uniform draw names.
    #[inline(always)]
    pub(crate) fn pick(&self, draw: u64) -> usize {
        let n = self.keep.len() as u64;
        let bucket = (((draw & 0xffff_ffff) * n) >> 32) as usize;
        let high = (draw >> 32) as u32;
        match (self.keep.get(bucket), self.alias.get(bucket)) {
            (Some(&keep), Some(&alias)) => {
                if high < keep || keep == u32::MAX {
                    bucket
                } else {
                    alias as usize
                }
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact probability of each candidate, from the table, in units of 2⁻³²/n.
    fn masses(a: &Alias) -> Vec<u128> {
        let n = a.keep.len();
        let mut m = vec![0u128; n];
        for b in 0..n {
            let keep = if a.keep[b] == u32::MAX {
                1u128 << 32
            } else {
                u128::from(a.keep[b])
            };
            m[b] += keep;
            m[a.alias[b] as usize] += (1u128 << 32) - keep;
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
            let a = Alias::build(&w);
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
    fn draws_follow_the_weights() {
        let w = [4, 2, 1, 1];
        let a = Alias::build(&w);
        let mut rng = fastrand::Rng::with_seed(7);
        let mut hits = [0u32; 4];
        let draws = 1_000_000;
        for _ in 0..draws {
            hits[a.pick(rng.u64(..))] += 1;
        }
        for (i, &h) in hits.iter().enumerate() {
            let share = f64::from(h) / f64::from(draws);
            let want = f64::from(w[i]) / 8.0;
            assert!((share - want).abs() < 0.01 * want, "{i}: {share} vs {want}");
        }
    }
}
