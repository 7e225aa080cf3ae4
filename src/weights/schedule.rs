//! Weighted round-robin: one period of `Σc` picks in which candidate `i`
//! appears `c_i` times, spread evenly (Nginx-like smoothness: the largest
//! capacity takes a turn every generation). A pick is `period[ticket mod Σc]`;
//! a period too long to keep as a list ([`MAX_PERIOD`]) is walked by a stride
//! rule instead. The construction: [`docs::fleets`](crate::docs::fleets),
//! "The weighted round-robin schedule".

/// The longest period kept as a list (or 16 entries per candidate if more).
pub(crate) const MAX_PERIOD: usize = 1 << 16;

/// A weighted round-robin order over candidates `0..n`.
pub(crate) enum Schedule {
    /// The period as a list of candidates.
    Period(Box<[u32]>),
    /// The rule itself: per candidate its capacity, and the largest.
    Stride { capacity: Box<[u32]>, max: u32 },
}

impl Schedule {
    /// The schedule for capacities `c` (each ≥ 1, common divisor already removed).
    pub(crate) fn build(c: &[u32]) -> Self {
        let max = c.iter().copied().max().unwrap_or(1);
        let total: u64 = c.iter().map(|&x| u64::from(x)).sum();
        if total > MAX_PERIOD.max(16 * c.len()) as u64 {
            return Schedule::Stride {
                capacity: c.into(),
                max,
            };
        }
        // Bucket the turns by generation, then list the generations in order
        // (a counting sort: O(Σc + W)).
        let mut per_gen = vec![0u32; max as usize + 1];
        let turns =
            |ci: u32| (1..=ci).map(move |k| (u64::from(k) * u64::from(max)).div_ceil(u64::from(ci)) - 1);
        for &ci in c {
            for g in turns(ci) {
                per_gen[g as usize + 1] += 1;
            }
        }
        for g in 1..per_gen.len() {
            per_gen[g] += per_gen[g - 1];
        }
        let mut period = vec![0u32; total as usize];
        for (i, &ci) in c.iter().enumerate() {
            for g in turns(ci) {
                let at = &mut per_gen[g as usize];
                period[*at as usize] = i as u32;
                *at += 1;
            }
        }
        Schedule::Period(period.into_boxed_slice())
    }

    /// Whether candidate `i` has a turn at `ticket` (the stride rule).
    #[inline(always)]
    fn turn(capacity: &[u32], max: u32, ticket: usize) -> Option<usize> {
        let n = capacity.len();
        let i = ticket % n;
        let g = ((ticket / n) % max as usize) as u64;
        let c = u64::from(capacity[i]);
        let max = u64::from(max);
        ((g + 1) * c / max > g * c / max).then_some(i)
    }

    /// The candidate for `ticket`, and for the stride rule the tickets it
    /// walked: `next` hands out the following ones. `None` after `tries`
    /// tickets without a turn (only the stride rule can run out).
    #[inline(always)]
    pub(crate) fn pick(&self, ticket: usize, mut next: impl FnMut() -> usize, tries: u32) -> Option<usize> {
        match self {
            Schedule::Period(p) => p.get(ticket % p.len().max(1)).map(|&i| i as usize),
            Schedule::Stride { capacity, max } => {
                let mut t = ticket;
                for _ in 0..tries {
                    if let Some(i) = Self::turn(capacity, *max, t) {
                        return Some(i);
                    }
                    t = next();
                }
                None
            }
        }
    }

    /// The period's length in tickets.
    pub(crate) fn period(&self) -> usize {
        match self {
            Schedule::Period(p) => p.len(),
            Schedule::Stride { capacity, max } => capacity.len() * *max as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence(s: &Schedule, picks: usize) -> Vec<usize> {
        let mut t = 0usize;
        (0..picks)
            .map(|_| {
                let first = t;
                t += 1;
                let mut next = || {
                    t += 1;
                    t - 1
                };
                s.pick(first, &mut next, u32::MAX).unwrap()
            })
            .collect()
    }

    fn longest_run(seq: &[usize], who: usize) -> usize {
        let (mut best, mut run) = (0, 0);
        for &x in seq {
            run = if x == who { run + 1 } else { 0 };
            best = best.max(run);
        }
        best
    }

    #[test]
    fn small_period_is_even_and_proportional() {
        let c = [4, 2, 1, 1];
        let s = Schedule::build(&c);
        assert_eq!(s.period(), 8);
        let seq = sequence(&s, 8);
        assert_eq!(seq, [0, 0, 1, 0, 0, 1, 2, 3]);
        assert!(longest_run(&seq.repeat(3), 0) <= 4);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "arithmetic over periods of up to 10^5 tickets: too slow to interpret"
    )]
    fn both_forms_are_proportional_and_bounded() {
        let mut rng = fastrand::Rng::with_seed(3);
        for case in 0..40 {
            let n = rng.usize(2..40);
            let c: Vec<u32> = (0..n)
                .map(|_| rng.u32(1..if case % 2 == 0 { 9 } else { 5000 }))
                .collect();
            let g = c.iter().fold(0, |g, &x| super::super::gcd(g, x));
            let c: Vec<u32> = c.iter().map(|&x| x / g).collect();
            let s = Schedule::build(&c);
            let total: usize = c.iter().map(|&x| x as usize).sum();
            let seq = sequence(&s, total * 3);
            let min = *c.iter().min().unwrap() as usize;
            for (i, &ci) in c.iter().enumerate() {
                let got = seq.iter().filter(|&&x| x == i).count();
                assert_eq!(got, 3 * ci as usize, "case {case} candidate {i}: {c:?}");
                let bound = (ci as usize).div_ceil(min);
                assert!(
                    longest_run(&seq, i) <= bound,
                    "case {case} candidate {i} ran past {bound}"
                );
            }
        }
    }
}
