//! The cost mode's two knobs as validated values: the credit weight `α` in
//! thousandths, and the softmax temperature. Invalid values are refused when
//! they are made, so a pick that carries one never has to.

use crate::error::Error;

/// The fixed-point scale of the cost: costs are kept as `SCALE × cost`.
pub(crate) const SCALE: i64 = 1000;

/// How much one block of cache credit is worth in load, `α`, in thousandths
/// (`1000` is `α = 1`: one cached block offsets one unit of load).
///
/// At most [`MAX_MILLI`](Self::MAX_MILLI), so that `α · credit` of any
/// `u32` credit stays below `2^52` and every cost is exact in an `i64` (and
/// every difference of two costs in an `f64`).
///
/// ```
/// use workerpick::tuning::CreditWeight;
/// assert_eq!(CreditWeight::from_milli(1500).unwrap().milli(), 1500);
/// assert!(CreditWeight::from_milli(CreditWeight::MAX_MILLI + 1).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CreditWeight(u32);

impl CreditWeight {
    /// The largest weight: `α = 1000`.
    pub const MAX_MILLI: u32 = 1_000_000;

    /// `α = 1`: one cached block is worth one unit of load.
    pub const ONE: Self = Self(1000);

    /// `α = milli / 1000`; above [`MAX_MILLI`](Self::MAX_MILLI) is an
    /// [`Error::InvalidConfig`].
    pub fn from_milli(milli: u32) -> Result<Self, Error> {
        if milli > Self::MAX_MILLI {
            return Err(Error::InvalidConfig {
                what: "cost credit-weight-milli",
                why: format!(
                    "{milli} is over {} (α = 1000); costs would no longer be exact",
                    Self::MAX_MILLI
                ),
            });
        }
        Ok(Self(milli))
    }

    /// `α` in thousandths.
    pub const fn milli(self) -> u32 {
        self.0
    }
}

impl Default for CreditWeight {
    fn default() -> Self {
        Self::ONE
    }
}

/// The softmax temperature of a cost pick: `0` takes the minimum cost; above
/// `0` samples with `P(i) ∝ exp(−(c_i − c_min) / ((c_max − c_min) · T))`, so
/// `T` is relative to the spread of the costs, not to their scale.
///
/// Finite and not negative: NaN, infinities and negative values are an
/// [`Error::InvalidConfig`].
///
/// ```
/// use workerpick::tuning::Temperature;
/// assert_eq!(Temperature::new(0.5).unwrap().get(), 0.5);
/// assert!(Temperature::new(-1.0).is_err());
/// assert!(Temperature::new(f64::NAN).is_err());
/// assert_eq!(Temperature::ZERO.get(), 0.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Temperature(f64);

impl Temperature {
    /// `T = 0`: the minimum cost, ties uniform.
    pub const ZERO: Self = Self(0.0);

    /// `T = t`, if `t` is finite and `>= 0` (`-0.0` is `0`).
    pub fn new(t: f64) -> Result<Self, Error> {
        if !t.is_finite() || t < 0.0 {
            return Err(Error::InvalidConfig {
                what: "cost temperature",
                why: format!("{t} is not a finite number >= 0; use 0 for the minimum cost"),
            });
        }
        Ok(Self(if t == 0.0 { 0.0 } else { t }))
    }

    /// `T = milli / 1000` (the registry's `temperature-milli`).
    pub fn from_milli(milli: u32) -> Self {
        Self(f64::from(milli) / 1000.0)
    }

    /// The temperature.
    pub const fn get(self) -> f64 {
        self.0
    }
}

impl Default for Temperature {
    fn default() -> Self {
        Self::ZERO
    }
}

/// A request's overrides of the mode's knobs (see
/// [`Request::credit_weight`](crate::Request::credit_weight) and
/// [`Request::temperature`](crate::Request::temperature)).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tuning {
    pub(crate) weight: Option<CreditWeight>,
    pub(crate) temperature: Option<Temperature>,
}

/// `SCALE × (load − α · credit)`, exact: `SCALE × load < 2^42` and
/// `α_milli × credit <= 10^6 × (2^32 − 1) < 2^52`, so the result lies in
/// `(−2^52, 2^42)` and nothing wraps.
#[inline(always)]
pub(crate) fn cost(load: u32, credit: u32, weight: CreditWeight) -> i64 {
    SCALE * i64::from(load) - i64::from(weight.0) * i64::from(credit)
}
