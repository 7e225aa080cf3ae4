//! Exact credit: each upstream engine's KV event stream (vLLM's ZMQ PUB
//! socket, and its replay socket when given) applied to the LLM path's
//! prefix index by a task of its own, which reconnects when the stream
//! fails. A failed stream drops the upstream's holdings first: what it
//! missed meanwhile cannot be known, so the credit starts again from the
//! engine's next events (it may miss blocks, never credit an evicted one).

use crate::llm::prompt::TOKENS;
use crate::serve::Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use workerpick::Pool;
use workerpick::kv_events::{ApplierStats, EventApplier, EventError, Subscriber};
use workerpick::prefix::PrefixIndex;

/// Where an upstream's engine publishes its KV events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSource {
    /// Its PUB socket, `tcp://HOST:PORT`.
    pub endpoint: String,
    /// Its replay (ROUTER) socket, `tcp://HOST:PORT`, when it has one.
    pub replay: Option<String>,
}

/// Checks a ZMQ TCP endpoint: `tcp://HOST:PORT`.
pub fn endpoint(text: &str) -> Result<String, String> {
    let hostport = text
        .strip_prefix("tcp://")
        .ok_or_else(|| format!("`{text}` is not tcp://HOST:PORT"))?;
    match hostport.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(text.to_string()),
        _ => Err(format!("`{text}` is not tcp://HOST:PORT")),
    }
}

/// One upstream's event counters, for `/metrics`.
#[derive(Debug, Default)]
pub struct EventCounters {
    /// Whether the subscription is up now (0 or 1).
    pub connected: AtomicU64,
    /// Times the stream failed and was connected again.
    pub reconnects: AtomicU64,
    /// Batches applied.
    pub batches: AtomicU64,
    /// Gaps seen (lost batches).
    pub gaps: AtomicU64,
    /// Of those, gaps the engine's replay socket filled.
    pub repaired: AtomicU64,
    /// Times the upstream's holdings were dropped because a gap could not
    /// be filled (no replay socket, or it no longer held the batches), or
    /// the engine restarted.
    pub resets: AtomicU64,
    /// Messages refused (did not decode, or did not fit the index).
    pub refused: AtomicU64,
    /// Whether the upstream's credit is degraded now (a gap is open: 0 or 1).
    pub degraded: AtomicU64,
    /// When the last batch was applied, in ms after the proxy started,
    /// plus 1 (0: never, as for an upstream without events).
    pub last_batch_ms: AtomicU64,
}

impl EventCounters {
    /// Seconds since the last batch was applied (`None`: none yet).
    pub fn age(&self, started: Instant) -> Option<f64> {
        let at = self.last_batch_ms.load(Relaxed).checked_sub(1)?;
        Some(started.elapsed().as_secs_f64() - at as f64 / 1e3)
    }
}

/// Adds what `now` counted past `before` (one applier's stats) to `c`.
fn count(c: &EventCounters, before: &mut ApplierStats, now: ApplierStats, started: Instant) {
    if now.batches > before.batches {
        c.batches.fetch_add(now.batches - before.batches, Relaxed);
        c.last_batch_ms
            .store(started.elapsed().as_millis() as u64 + 1, Relaxed);
    }
    c.gaps.fetch_add(now.gaps - before.gaps, Relaxed);
    c.repaired.fetch_add(now.repaired - before.repaired, Relaxed);
    c.resets.fetch_add(now.resets - before.resets, Relaxed);
    c.refused.fetch_add(now.refused - before.refused, Relaxed);
    *before = now;
}

/// Follows `source` for `upstream` until aborted: applies its batches to
/// `index` (keys salted as the proxy keys token prompts).
pub fn follow(
    index: Arc<PrefixIndex<Addr>>,
    pool: Arc<Pool<Addr>>,
    upstream: Addr,
    source: EventSource,
    counters: Arc<EventCounters>,
    started: Instant,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut was_up = false;
        for attempt in 0u64.. {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            let applier =
                EventApplier::new(index.clone(), pool.clone(), upstream.clone(), 0).key_salt(TOKENS);
            let sub = Subscriber::connect(applier, &source.endpoint, "", source.replay.as_deref()).await;
            let Ok(mut sub) = sub else { continue };
            if was_up {
                counters.reconnects.fetch_add(1, Relaxed);
            }
            was_up = true;
            counters.connected.store(1, Relaxed);
            let mut seen = ApplierStats::default();
            loop {
                let fed = sub.next().await;
                count(&counters, &mut seen, sub.applier().stats(), started);
                counters
                    .degraded
                    .store(u64::from(sub.applier().gap().is_some()), Relaxed);
                if let Err(EventError::Transport(_)) = fed {
                    break;
                }
            }
            counters.connected.store(0, Relaxed);
            counters.degraded.store(0, Relaxed);
            // What the engine did while the stream was down is unknown.
            index.cleared(&upstream, Some(0));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_tcp_host_port() {
        assert_eq!(endpoint("tcp://10.0.0.1:5557").unwrap(), "tcp://10.0.0.1:5557");
        for bad in [
            "10.0.0.1:5557",
            "tcp://10.0.0.1",
            "tcp://:5557",
            "tcp://h:99999",
            "ipc:///tmp/x",
        ] {
            assert!(endpoint(bad).is_err(), "{bad}");
        }
    }
}
