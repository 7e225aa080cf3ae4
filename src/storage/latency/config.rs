//! [`LatencyConfig`]: the knobs of the latency signal.

use crate::error::Error;
use std::time::Duration;

/// How a pool's latency signal behaves (see [`Pool::with_latency`](crate::Pool::with_latency)).
///
/// - `tau` (default 10 s): the decay time constant; a sample `Δt` old weighs
///   `exp(−Δt/τ)`. At least 1 ms.
/// - `default_rtt` (default 30 ms): the estimate of a worker with no sample yet.
/// - `failure_penalty` (default 1 s): a reservation that ends as failed counts
///   as a sample this long (or its own time, if longer), so a worker that fails
///   fast looks slow, not idle.
///
/// The defaults are linkerd's (τ 10 s, default RTT 30 ms); the penalty is ours.
///
/// ```
/// use std::time::Duration;
/// use workerpick::latency::LatencyConfig;
/// let c = LatencyConfig::new().tau(Duration::from_secs(2)).default_rtt(Duration::from_millis(5));
/// assert_eq!(c.tau_value(), Duration::from_secs(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyConfig {
    tau: Duration,
    default_rtt: Duration,
    failure_penalty: Duration,
}

impl LatencyConfig {
    /// The defaults: τ 10 s, default RTT 30 ms, failure penalty 1 s.
    pub const fn new() -> Self {
        Self {
            tau: Duration::from_secs(10),
            default_rtt: Duration::from_millis(30),
            failure_penalty: Duration::from_secs(1),
        }
    }

    /// Sets the decay time constant τ.
    pub const fn tau(mut self, tau: Duration) -> Self {
        self.tau = tau;
        self
    }

    /// Sets the estimate of a worker with no sample.
    pub const fn default_rtt(mut self, rtt: Duration) -> Self {
        self.default_rtt = rtt;
        self
    }

    /// Sets the sample a failed reservation counts as.
    pub const fn failure_penalty(mut self, penalty: Duration) -> Self {
        self.failure_penalty = penalty;
        self
    }

    /// The decay time constant τ.
    pub const fn tau_value(&self) -> Duration {
        self.tau
    }

    /// The estimate of a worker with no sample.
    pub const fn default_rtt_value(&self) -> Duration {
        self.default_rtt
    }

    /// The sample a failed reservation counts as.
    pub const fn failure_penalty_value(&self) -> Duration {
        self.failure_penalty
    }

    /// τ in whole milliseconds, checked.
    pub(crate) fn tau_ms(&self) -> Result<u32, Error> {
        match u32::try_from(self.tau.as_millis()) {
            Ok(ms) if ms >= 1 => Ok(ms),
            _ => Err(Error::InvalidConfig {
                what: "latency tau",
                why: format!("{:?} is outside 1 ms ..= 49 days", self.tau),
            }),
        }
    }
}

impl Default for LatencyConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// `d` in whole microseconds, saturating at `u32::MAX` (71 minutes).
pub(crate) fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}
