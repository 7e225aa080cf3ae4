//! Statistics for the tests that check draws are uniform.

/// The chi-square statistic of `counts` against a uniform split of `draws`.
pub fn chi_square(counts: impl ExactSizeIterator<Item = u32>, draws: u32) -> f64 {
    let expected = f64::from(draws) / counts.len() as f64;
    counts.map(|n| (f64::from(n) - expected).powi(2) / expected).sum()
}
