//! `serve`'s `/metrics` page: the Prometheus text exposition of the
//! upstreams' counters, the LLM path's and the replicas'.

use super::{Addr, Shared};
use crate::llm;
use http::uri::Authority;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

impl Shared {
    /// The Prometheus text exposition of every upstream's counters.
    pub(super) fn metrics(&self) -> String {
        let mut out = String::new();
        let addr = |a: &Authority| Addr(a.clone());
        let ejection = |a: &Authority| self.ejection.stats(&addr(a));
        let families: [(&str, &str, &str, &Reading); 6] = [
            (
                "workerpick_upstream_in_flight",
                "gauge",
                "Requests in flight on the upstream (their load, booked until the response body ends).",
                &|a| u64::from(self.pool.in_flight(&addr(a)).unwrap_or(0)),
            ),
            (
                "workerpick_upstream_reported_load",
                "gauge",
                "Load the other replicas booked on the upstream, from their last live summaries.",
                &|a| u64::from(self.pool.reported_load(&addr(a)).unwrap_or(0)),
            ),
            (
                "workerpick_upstream_picks_total",
                "counter",
                "Requests routed to the upstream.",
                &|a| self.picks.get(a).map_or(0, |p| p.load(Ordering::Relaxed)),
            ),
            (
                "workerpick_upstream_errors_total",
                "counter",
                "Requests the upstream failed: a 5xx answer, a connect or response error.",
                &|a| ejection(a).errors,
            ),
            (
                "workerpick_upstream_healthy",
                "gauge",
                "1 while the upstream receives picks, 0 while ejected after consecutive failures.",
                &|a| u64::from(self.pool.is_healthy(&addr(a)).unwrap_or(false)),
            ),
            (
                "workerpick_upstream_ejections_total",
                "counter",
                "Times the upstream was marked unhealthy.",
                &|a| ejection(a).ejections,
            ),
        ];
        for (name, kind, help, value) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for upstream in &self.order {
                let _ = writeln!(out, "{name}{{upstream=\"{upstream}\"}} {}", value(upstream));
            }
        }
        self.llm_metrics(&mut out);
        if let Some(admission) = &self.admission {
            let name = "workerpick_shed_total";
            let _ = writeln!(
                out,
                "# HELP {name} Requests answered 503 over the in-flight bound ({}).\n# TYPE {name} counter\n{name} {}",
                admission.limit(),
                admission.shed()
            );
        }
        if let Some(lobby) = &self.lobby {
            queue_metrics(lobby, &mut out);
        }
        if let Some(sync) = &self.sync {
            let counts = sync.counts();
            let replica: [(&str, &str, &str, u64); 3] = [
                (
                    "workerpick_replica_peers",
                    "gauge",
                    "Other replicas whose summaries count here now.",
                    self.pool.reporting_peers() as u64,
                ),
                (
                    "workerpick_replica_summaries_published_total",
                    "counter",
                    "Summaries this replica published.",
                    counts.published(),
                ),
                (
                    "workerpick_replica_summaries_applied_total",
                    "counter",
                    "Other replicas' summaries applied here.",
                    counts.applied(),
                ),
            ];
            for (name, kind, help, value) in replica {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
            }
        }
        out
    }
}

impl Shared {
    /// The LLM path's families: per upstream its blocks, credit, hit rate
    /// and phased load in flight, its KV event stream's state; the index's
    /// size.
    fn llm_metrics(&self, out: &mut String) {
        let ev = |read: fn(&llm::events::EventCounters) -> &AtomicU64| {
            move |c: &llm::Counters| read(&c.events).load(Ordering::Relaxed) as f64
        };
        let (connected, reconnects, batches, gaps, repaired, resets, refused, degraded) = (
            ev(|e| &e.connected),
            ev(|e| &e.reconnects),
            ev(|e| &e.batches),
            ev(|e| &e.gaps),
            ev(|e| &e.repaired),
            ev(|e| &e.resets),
            ev(|e| &e.refused),
            ev(|e| &e.degraded),
        );
        let families: [(&str, &str, &str, &LlmReading); 13] = [
            (
                "workerpick_llm_prompt_blocks_total",
                "counter",
                "Prompt blocks routed to the upstream.",
                &|c| c.prompt_blocks.load(Ordering::Relaxed) as f64,
            ),
            (
                "workerpick_llm_credited_blocks_total",
                "counter",
                "Of those, blocks the prefix index credited the upstream with (its expected cache hits).",
                &|c| c.credited_blocks.load(Ordering::Relaxed) as f64,
            ),
            (
                "workerpick_llm_hit_rate",
                "gauge",
                "Credited blocks / prompt blocks routed to the upstream (0 before any).",
                &|c| {
                    let all = c.prompt_blocks.load(Ordering::Relaxed);
                    if all == 0 {
                        0.0
                    } else {
                        c.credited_blocks.load(Ordering::Relaxed) as f64 / all as f64
                    }
                },
            ),
            (
                "workerpick_llm_prefill_in_flight",
                "gauge",
                "Prefill load booked on the upstream (uncached blocks of requests before their first streamed token).",
                &|c| c.prefill.load(Ordering::Relaxed) as f64,
            ),
            (
                "workerpick_llm_decode_in_flight",
                "gauge",
                "Decode load booked on the upstream (requests not yet ended).",
                &|c| c.decode.load(Ordering::Relaxed) as f64,
            ),
            (
                "workerpick_llm_events_connected",
                "gauge",
                "Whether the upstream's KV event subscription is up (0 without events).",
                &connected,
            ),
            (
                "workerpick_llm_events_reconnects_total",
                "counter",
                "Times the upstream's KV event stream failed and was connected again (its holdings dropped each time).",
                &reconnects,
            ),
            (
                "workerpick_llm_events_batches_total",
                "counter",
                "KV event batches applied to the index.",
                &batches,
            ),
            (
                "workerpick_llm_events_gaps_total",
                "counter",
                "Gaps in the upstream's KV event stream (lost batches).",
                &gaps,
            ),
            (
                "workerpick_llm_events_repaired_total",
                "counter",
                "Of those gaps, the ones the engine's replay socket filled.",
                &repaired,
            ),
            (
                "workerpick_llm_events_resets_total",
                "counter",
                "Times the upstream's holdings were dropped for a gap that could not be filled (no replay socket, or it no longer held the batches) or an engine restart.",
                &resets,
            ),
            (
                "workerpick_llm_events_refused_total",
                "counter",
                "KV event messages refused (not decoded, or not fitting the index).",
                &refused,
            ),
            (
                "workerpick_llm_credit_degraded",
                "gauge",
                "Whether the upstream's exact credit is off while a gap waits for its replay (0 or 1).",
                &degraded,
            ),
        ];
        for (name, kind, help, value) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for upstream in &self.order {
                if let Some(c) = self.llm.counters(upstream) {
                    let _ = writeln!(out, "{name}{{upstream=\"{upstream}\"}} {}", value(c));
                }
            }
        }
        let name = "workerpick_llm_events_age_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Seconds since the upstream's last KV event batch was applied (upstreams with events, once one was).\n# TYPE {name} gauge"
        );
        for upstream in &self.order {
            if let Some(age) = self
                .llm
                .counters(upstream)
                .and_then(|c| c.events.age(self.llm.started()))
            {
                let _ = writeln!(out, "{name}{{upstream=\"{upstream}\"}} {age:.3}");
            }
        }
        let (blocks, bytes) = self.llm.index_size();
        for (name, help, value) in [
            (
                "workerpick_llm_index_blocks",
                "Distinct prompt blocks the prefix index holds.",
                blocks,
            ),
            (
                "workerpick_llm_index_bytes",
                "Bytes the prefix index allocated.",
                bytes,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        }
    }
}

/// The admission queue's families (`--queue`).
fn queue_metrics(lobby: &super::queue::Lobby, out: &mut String) {
    let c = lobby.counts();
    let read = |n: &AtomicU64| n.load(Ordering::Relaxed);
    let families: [(&str, &str, &str, u64); 6] = [
        (
            "workerpick_queue_waiting",
            "gauge",
            "Requests waiting now for an upstream with room.",
            lobby.waiting() as u64,
        ),
        (
            "workerpick_queue_admitted_total",
            "counter",
            "Requests admitted by the queue, at once or after a wait.",
            read(&c.admitted),
        ),
        (
            "workerpick_queue_waited_total",
            "counter",
            "Requests that had to wait, whatever their end (admitted, timed out or cancelled).",
            read(&c.waited),
        ),
        (
            "workerpick_queue_timed_out_total",
            "counter",
            "Requests answered 408: their deadline passed while they waited.",
            read(&c.timed_out),
        ),
        (
            "workerpick_queue_full_total",
            "counter",
            "Requests answered 429: every waiter slot was taken.",
            read(&c.full),
        ),
        (
            "workerpick_queue_cancelled_total",
            "counter",
            "Requests whose client went away while they waited.",
            read(&c.cancelled),
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
    }
    let name = "workerpick_queue_capacity";
    let _ = writeln!(
        out,
        "# HELP {name} Waiter slots (--queue).\n# TYPE {name} gauge\n{name} {}",
        lobby.settings().capacity
    );
}

/// How an LLM metric family reads one upstream's counters.
type LlmReading<'a> = dyn Fn(&llm::Counters) -> f64 + 'a;

/// How a metric family reads one upstream's value.
type Reading<'a> = dyn Fn(&Authority) -> u64 + 'a;
