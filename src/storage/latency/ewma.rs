//! The peak-EWMA arithmetic on one packed cell, in exact integers.
//!
//! A cell is one `u64`: the estimate in microseconds in the high half, the
//! millisecond stamp of its last sample in the low half; `0` means no sample
//! yet. The decay `w = exp(−Δt/τ)` is `2^−x` with `x = Δt/(τ·ln 2)` in 1/256
//! steps: a table of `2^−f/256` in Q32 for the fraction, a shift for the
//! whole part. Every product fits `u64` (estimate < 2^32, `w` ≤ 2^32), so a
//! read is two multiplies and a shift, and the same inputs give the same
//! answer on every machine.

use crate::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// `w` in Q32: `ONE` is 1.0.
const ONE: u64 = 1 << 32;

/// How many times an update retries its compare-and-swap before it drops
/// its sample. A strong compare-and-swap: only other updates of the same cell
/// make it fail, and losing 8 in a row means 8 samples landed meanwhile, each
/// as recent as this one.
const MAX_TRIES: u32 = 8;

/// The decay for one τ: a rate and a table, computed once per pool.
#[derive(Clone, Debug)]
pub(crate) struct Decay {
    /// Half-lives per millisecond in Q32: `2^32 / (τ_ms · ln 2)`.
    rate: u64,
    /// Past this many milliseconds `w` is 0 (below 2^−64).
    horizon: u32,
    /// `2^(−f/256)` in Q32, `f` in `0..256`.
    table: [u32; 256],
}

impl Decay {
    /// The decay for `tau_ms` ≥ 1 milliseconds.
    pub(crate) fn new(tau_ms: u32) -> Self {
        let tau = u64::from(tau_ms.max(1));
        let rate = ((ONE as f64) / (tau as f64 * core::f64::consts::LN_2)).round() as u64;
        let mut table = [0u32; 256];
        for (f, w) in table.iter_mut().enumerate() {
            // 2^(−f/256) < 1 for f > 0, and f = 0 is kept as the largest u32.
            *w = ((ONE as f64) * (-(f as f64) / 256.0).exp2()).min(u32::MAX as f64) as u32;
        }
        // 45 τ: w = e^−45 < 2^−64.
        let horizon = tau.saturating_mul(45).min(u64::from(u32::MAX)) as u32;
        Self { rate, horizon, table }
    }

    /// `w = exp(−dt/τ)` in Q32 for `dt_ms` milliseconds.
    #[inline(always)]
    pub(crate) fn weight(&self, dt_ms: u32) -> u64 {
        if dt_ms == 0 {
            return ONE;
        }
        if dt_ms >= self.horizon {
            return 0;
        }
        // dt < 45 τ, so x < 65 · 2^32: no overflow.
        let x = u64::from(dt_ms) * self.rate;
        let whole = x >> 32;
        if whole >= 32 {
            return 0;
        }
        u64::from(self.table[((x >> 24) & 0xff) as usize]) >> whole
    }
}

/// Milliseconds from `stamp` to `now`, 0 when `now` reads before it (a
/// reader whose clock read preceded the last update).
#[inline(always)]
fn elapsed(stamp: u32, now: u32) -> u32 {
    let dt = now.wrapping_sub(stamp);
    if dt > i32::MAX as u32 { 0 } else { dt }
}

#[inline(always)]
fn unpack(cell: u64) -> (u32, u32) {
    ((cell >> 32) as u32, cell as u32)
}

#[inline(always)]
fn pack(cost_us: u32, stamp_ms: u32) -> u64 {
    // At least 1 µs, so a cell with history is never 0.
    (u64::from(cost_us.max(1)) << 32) | u64::from(stamp_ms)
}

/// The estimate in `cell` read at `now_ms`, as if a 0-RTT sample arrived
/// then: `cost · w`. `None` for a cell with no sample.
#[inline(always)]
pub(crate) fn read(cell: u64, now_ms: u32, decay: &Decay) -> Option<u32> {
    if cell == 0 {
        return None;
    }
    let (cost, stamp) = unpack(cell);
    Some(((u64::from(cost) * decay.weight(elapsed(stamp, now_ms))) >> 32) as u32)
}

/// `cell` after a sample of `rtt_us` at `now_ms`: the sample if it is above the
/// estimate (the peak), else `cost · w + rtt · (1 − w)`.
#[inline]
pub(crate) fn update(cell: u64, now_ms: u32, rtt_us: u32, decay: &Decay) -> u64 {
    if cell == 0 {
        return pack(rtt_us, now_ms);
    }
    let (cost, stamp) = unpack(cell);
    if rtt_us >= cost {
        return pack(rtt_us, now_ms);
    }
    let dt = elapsed(stamp, now_ms);
    if dt == 0 {
        // w = 1: the estimate stays, and so does its stamp.
        return cell;
    }
    let w = decay.weight(dt);
    // cost · w < 2^64 and rtt · (1 − w) < 2^64: their sum fits u128, and the
    // result, between rtt and cost, fits u32.
    let mixed = (u128::from(cost) * u128::from(w) + u128::from(rtt_us) * u128::from(ONE - w)) >> 32;
    pack(mixed as u32, now_ms)
}

/// Folds a sample into `cell`, lock-free: a bounded compare-and-swap loop
/// (see [`MAX_TRIES`]). A sample that leaves the cell as it is (one below the
/// estimate in the millisecond of the last, where `w = 1`) writes nothing:
/// no locked instruction, and the line stays shared with the picks that read
/// it. Relaxed: the cell is its own only datum.
#[inline]
pub(crate) fn record(cell: &AtomicU64, now_ms: u32, rtt_us: u32, decay: &Decay) {
    let mut seen = cell.load(Relaxed);
    for _ in 0..MAX_TRIES {
        let next = update(seen, now_ms, rtt_us, decay);
        if next == seen {
            return;
        }
        match cell.compare_exchange(seen, next, Relaxed, Relaxed) {
            Ok(_) => return,
            Err(now) => seen = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decay() -> Decay {
        Decay::new(1000)
    }

    #[test]
    fn weight_is_exp_of_minus_dt_over_tau() {
        let d = decay();
        assert_eq!(d.weight(0), ONE);
        assert_eq!(d.weight(45_000), 0);
        for dt in [1u32, 10, 100, 500, 1000, 2000, 5000, 20_000] {
            let exact = (-(f64::from(dt)) / 1000.0).exp();
            let got = d.weight(dt) as f64 / ONE as f64;
            // 1/256 of a half-life: at most 0.28 % low.
            assert!(
                (got - exact).abs() <= exact * 0.003 + 1e-9,
                "dt {dt}: {got} vs {exact}"
            );
        }
        // Monotone in dt.
        let ws: Vec<u64> = (0..3000).step_by(7).map(|dt| d.weight(dt)).collect();
        assert!(ws.windows(2).all(|p| p[0] >= p[1]));
    }

    #[test]
    fn no_history_reads_none_and_the_first_sample_sets_it() {
        let d = decay();
        assert_eq!(read(0, 5, &d), None);
        let c = update(0, 5, 700, &d);
        assert_eq!(read(c, 5, &d), Some(700));
        // A 0-µs sample still leaves history.
        assert_ne!(update(0, 5, 0, &d), 0);
    }

    #[test]
    fn jumps_to_a_peak_at_once() {
        let d = decay();
        let c = update(0, 0, 1_000, &d);
        let c = update(c, 1, 50_000, &d);
        assert_eq!(read(c, 1, &d), Some(50_000));
    }

    #[test]
    fn decays_toward_lower_samples_by_time() {
        let d = decay();
        let c = update(0, 0, 10_000, &d);
        // One τ later a 1 000 µs sample: 10 000·e^−1 + 1 000·(1 − e^−1) ≈ 4 311.
        let c = update(c, 1000, 1_000, &d);
        let v = read(c, 1000, &d).unwrap();
        assert!((4290..=4330).contains(&v), "{v}");
        // A lower sample in the same millisecond moves nothing (w = 1).
        assert_eq!(read(update(c, 1000, 1, &d), 1000, &d), Some(v));
    }

    #[test]
    fn reads_decay_without_writing() {
        let d = decay();
        let c = update(0, 0, 8_000, &d);
        assert_eq!(read(c, 0, &d), Some(8_000));
        let later = read(c, 693, &d).unwrap(); // one half-life
        assert!((3_980..=4_010).contains(&later), "{later}");
        assert_eq!(read(c, 100_000, &d), Some(0));
        // A reader whose clock lags the stamp reads the estimate undecayed.
        let c = update(0, 50, 8_000, &d);
        assert_eq!(read(c, 49, &d), Some(8_000));
    }

    #[test]
    fn stamps_wrap() {
        let d = decay();
        let c = update(0, u32::MAX - 10, 8_000, &d);
        let v = read(c, 682, &d).unwrap(); // 693 ms after, across the wrap
        assert!((3_980..=4_010).contains(&v), "{v}");
    }

    #[test]
    fn record_lands_lock_free() {
        let d = decay();
        let cell = AtomicU64::new(0);
        record(&cell, 3, 2_000, &d);
        record(&cell, 3, 9_000, &d);
        assert_eq!(read(cell.load(Relaxed), 3, &d), Some(9_000));
    }
}
