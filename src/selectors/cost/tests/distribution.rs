//! The softmax pick's whole distribution against its formula
//! `exp(−(c − c_min)/((c_max − c_min)·T))`, one chi-square test per case:
//! fleets where few workers are credited (the sparse sampler answers) and
//! one where many are (the reference does), credit built dense and sparse,
//! masked and not, the temperature the mode's and the request's, at
//! `T ∈ {0.1, 0.5, 1, 5}`. Each case draws from a seeded handle, so the test
//! is deterministic; it fails when a case's p-value is at most 0.001.

use super::super::Cost;
use crate::credit::CacheHits;
use crate::pool::Pool;
use crate::request::Request;
use crate::rng::Rng;
use crate::credit::tuning::Temperature;

/// A fleet: per worker its booked load and its credit (0: none).
struct Fleet {
    name: &'static str,
    loads: Vec<u32>,
    credits: Vec<u32>,
}

fn fleets() -> Vec<Fleet> {
    let credit_at = |n: u32, at: &[(u32, u32)]| -> Vec<u32> {
        (0..n)
            .map(|w| at.iter().find(|&&(x, _)| x == w).map_or(0, |&(_, o)| o))
            .collect()
    };
    vec![
        // Normalised costs [0, 1, 1, 1] whatever the weight: the cheapest's
        // share is 1 / (1 + 3·e^(−1/T)).
        Fleet {
            name: "4 at load 1, one credited 1 block",
            loads: vec![1; 4],
            credits: credit_at(4, &[(0, 1)]),
        },
        Fleet {
            name: "8, two credited",
            loads: vec![3, 1, 4, 1, 5, 2, 6, 2],
            credits: credit_at(8, &[(2, 3), (5, 1)]),
        },
        Fleet {
            name: "16, one far cheaper",
            loads: (0..16).map(|w| 2 + w % 3).collect(),
            credits: credit_at(16, &[(8, 40)]),
        },
        Fleet {
            name: "64, six credited",
            loads: (0..64).map(|w| w % 7).collect(),
            credits: credit_at(64, &[(2, 4), (10, 5), (18, 3), (30, 8), (42, 3), (62, 4)]),
        },
        // More than a quarter credited: the reference pass answers.
        Fleet {
            name: "8, five credited",
            loads: vec![2, 0, 3, 1, 4, 2, 1, 3],
            credits: vec![1, 0, 2, 0, 3, 1, 0, 2],
        },
    ]
}

/// Picks per case: enough to see the cheapest workers' share off by a few
/// points (the error this test was written for shows as a chi-square in
/// the hundreds), few enough that all cases run in seconds unoptimised.
const DRAWS: u32 = 8_000;

/// The formula's probabilities (0 for a non-candidate).
fn formula(f: &Fleet, admitted: &[bool], t: f64) -> Vec<f64> {
    let costs: Vec<Option<f64>> = (0..f.loads.len())
        .map(|w| admitted[w].then(|| f64::from(f.loads[w]) - f64::from(f.credits[w])))
        .collect();
    let (lo, hi) = costs
        .iter()
        .flatten()
        .fold((f64::MAX, f64::MIN), |(a, b), &c| (a.min(c), b.max(c)));
    let w: Vec<f64> = costs
        .iter()
        .map(|c| match *c {
            None => 0.0,
            Some(_) if hi == lo => 1.0,
            Some(c) => (-(c - lo) / ((hi - lo) * t)).exp(),
        })
        .collect();
    let sum: f64 = w.iter().sum();
    w.iter().map(|x| x / sum).collect()
}

/// The chi-square statistic and its degrees of freedom, cells expected
/// below 5 pooled (into the smallest other cell if the pool stays below
/// 5); `None` when one cell holds everything (nothing to test).
fn chi_square(counts: &[u32], probs: &[f64], draws: u32) -> Option<(f64, u32)> {
    let n = f64::from(draws);
    let mut cells: Vec<(f64, f64)> = Vec::new();
    let (mut rest_e, mut rest_o) = (0.0, 0.0);
    for (&o, &p) in counts.iter().zip(probs) {
        if p == 0.0 {
            continue;
        }
        if p * n < 5.0 {
            rest_e += p * n;
            rest_o += f64::from(o);
        } else {
            cells.push((p * n, f64::from(o)));
        }
    }
    if rest_e >= 5.0 {
        cells.push((rest_e, rest_o));
    } else if rest_e > 0.0 {
        let smallest = cells
            .iter_mut()
            .min_by(|a, b| a.0.total_cmp(&b.0))?;
        smallest.0 += rest_e;
        smallest.1 += rest_o;
    }
    let df = cells.len().checked_sub(1).filter(|&df| df > 0)? as u32;
    let chi2 = cells.iter().map(|&(e, o)| (o - e).powi(2) / e).sum();
    Some((chi2, df))
}

/// `P(χ² ≥ x)` with `df` degrees of freedom: `1 − P(df/2, x/2)`, the
/// regularised lower incomplete gamma by its power series
/// `P(a, h) = h^a·e^(−h)·Σ_k h^k / Γ(a + k + 1)`. `a` is a whole or half
/// number, so `Γ(a + 1)` is a finite product. For `x` up to a few hundred
/// (where the critical values below lie).
fn p_value(x: f64, df: u32) -> f64 {
    let (a, h) = (f64::from(df) / 2.0, x / 2.0);
    if h <= 0.0 {
        return 1.0;
    }
    let (mut s, mut ln_gamma) = if df.is_multiple_of(2) {
        (1.0, 0.0)
    } else {
        (0.5, 0.5 * core::f64::consts::PI.ln())
    };
    while s <= a {
        ln_gamma += f64::ln(s);
        s += 1.0;
    }
    let mut term = (a * h.ln() - h - ln_gamma).exp();
    let (mut sum, mut k) = (term, 1.0);
    while term > sum * 1e-17 {
        term *= h / (a + k);
        sum += term;
        k += 1.0;
    }
    (1.0 - sum).max(0.0)
}

/// The statistic whose p-value is 0.001 at `df`, by bisection.
fn critical(df: u32) -> f64 {
    let (mut lo, mut hi) = (0.0, f64::from(df) + 12.0 * f64::from(2 * df).sqrt() + 40.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if p_value(mid, df) > 0.001 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[test]
fn critical_values_match_the_tables() {
    for (df, table) in [(1, 10.828), (2, 13.816), (3, 16.266), (5, 20.515), (10, 29.588), (30, 59.703), (60, 99.607)] {
        let got = critical(df);
        assert!((got - table).abs() < 0.01, "df {df}: {got} against {table}");
    }
}

#[test]
fn softmax_samples_the_formula_on_every_fleet() {
    let mut failed = Vec::new();
    let mut tested = 0;
    let mut seed = 0u64;
    for f in fleets() {
        let n = f.loads.len() as u32;
        let pool = Pool::from_workers(0..n).unwrap();
        for w in 0..n {
            if f.loads[w as usize] > 0 {
                core::mem::forget(pool.reserve_worker(&w, f.loads[w as usize]).unwrap());
            }
        }
        let dense = CacheHits::build(&pool, 64, |w| f.credits[*w as usize]);
        let mut sparse = CacheHits::new();
        let named: Vec<(u32, u32)> = (0..n)
            .filter(|&w| f.credits[w as usize] > 0)
            .map(|w| (w, f.credits[w as usize]))
            .collect();
        sparse.rebuild_sparse(&pool, 64, named.iter().map(|(w, o)| (w, *o)));
        for masked in [false, true] {
            let admitted: Vec<bool> = (0..n).map(|w| !masked || w % 2 == 0).collect();
            let mask = pool.eligibility(|w| admitted[*w as usize]);
            for (form, hits) in [("dense", &dense), ("sparse", &sparse)] {
                for per_request in [false, true] {
                    for t in [0.1, 0.5, 1.0, 5.0] {
                        let temp = Temperature::new(t).unwrap();
                        let mut req = Request::new().cache_hits(hits);
                        if masked {
                            req = req.eligible(&mask);
                        }
                        let sel = if per_request {
                            req = req.temperature(temp);
                            Cost::new()
                        } else {
                            Cost::new().with_temperature(temp)
                        };
                        seed += 1;
                        let mut h = pool.handle_with_rng(Rng::with_seed(seed));
                        let mut counts = vec![0u32; n as usize];
                        for _ in 0..DRAWS {
                            counts[*h.select_with(&sel, &req).unwrap() as usize] += 1;
                        }
                        let probs = formula(&f, &admitted, t);
                        let case = format!(
                            "{}, {form}{}, T = {t} ({})",
                            f.name,
                            if masked { ", masked to half" } else { "" },
                            if per_request { "request's" } else { "mode's" },
                        );
                        for w in 0..n as usize {
                            assert!(admitted[w] || counts[w] == 0, "{case}: drew masked worker {w}");
                        }
                        let Some((chi2, df)) = chi_square(&counts, &probs, DRAWS) else {
                            continue;
                        };
                        tested += 1;
                        if chi2 >= critical(df) {
                            let p = p_value(chi2, df);
                            // The cheapest worker's share, expected and drawn.
                            let top = (0..n as usize).max_by(|&a, &b| probs[a].total_cmp(&probs[b])).unwrap_or(0);
                            failed.push(format!(
                                "{case}: chi-square {chi2:.1} over {df} df (p {p:.1e}); worker {top} expected {:.1} %, drawn {:.1} %",
                                100.0 * probs[top],
                                100.0 * f64::from(counts[top]) / f64::from(DRAWS),
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(tested >= 120, "only {tested} cases had two cells to compare");
    assert!(failed.is_empty(), "{} of {tested} cases fail at p ≤ 0.001:\n{}", failed.len(), failed.join("\n"));
}
