//! `workerpick-proxy serve`: a reverse proxy for outside traffic over
//! workerpick's `HttpRoute`, with a Prometheus `/metrics` page, health from
//! failures (consecutive 5xx or connect errors eject an upstream for a
//! while) and a graceful stop on SIGTERM or ctrl-c. With `--nats` it is one
//! of several replicas in front of the same upstreams, sharing their load
//! over a NATS subject (`workerpick-nats`).

use crate::llm::{self, Body, Llm, LlmConfig, Watch};
use http::uri::Authority;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use workerpick::service::{
    Admission, BoxError, Forward, HttpClient, HyperRoute, OnBodyEnd, Route, Upstreams, http_client,
};
use workerpick::{Pool, Registry, WorkerInfo};

/// One `--upstream`: `host:port`, optionally `=CAP` (its capacity weight),
/// then optionally `,events=tcp://HOST:PORT` (its engine's KV event PUB
/// socket: exact credit for its token prompts) and `,replay=tcp://HOST:PORT`
/// (the engine's replay socket, asked for lost batches).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// Where it listens.
    pub authority: Authority,
    /// Its capacity weight (1 unless given).
    pub capacity: u32,
    /// Its engine's KV events, when given.
    pub events: Option<llm::events::EventSource>,
}

impl FromStr for UpstreamSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(',');
        let head = parts.next().unwrap_or_default();
        let (addr, capacity) = match head.split_once('=') {
            Some((addr, cap)) => {
                let cap = cap
                    .parse()
                    .map_err(|_| format!("capacity `{cap}` is not a whole number"))?;
                if cap == 0 || cap > workerpick::MAX_CAPACITY {
                    return Err(format!(
                        "capacity {cap} is outside 1..={}",
                        workerpick::MAX_CAPACITY
                    ));
                }
                (addr, cap)
            }
            None => (head, 1),
        };
        let authority: Authority = addr
            .parse()
            .map_err(|e| format!("`{addr}` is not host:port ({e})"))?;
        if authority.port_u16().is_none() || authority.as_str().contains('@') {
            return Err(format!("`{addr}` needs host:port"));
        }
        let (mut events, mut replay) = (None, None);
        for part in parts {
            let (key, value) = part.split_once('=').ok_or_else(|| {
                format!("`{part}`: expected events=tcp://HOST:PORT or replay=tcp://HOST:PORT")
            })?;
            let slot = match key {
                "events" => &mut events,
                "replay" => &mut replay,
                _ => return Err(format!("`{key}` is not an upstream option (events, replay)")),
            };
            if slot.is_some() {
                return Err(format!("`{key}` given twice"));
            }
            *slot = Some(llm::events::endpoint(value).map_err(|e| format!("{key}: {e}"))?);
        }
        let events = match (events, replay) {
            (Some(endpoint), replay) => Some(llm::events::EventSource { endpoint, replay }),
            (None, Some(_)) => return Err("`replay` needs `events`".into()),
            (None, None) => None,
        };
        Ok(Self {
            authority,
            capacity,
            events,
        })
    }
}

/// The upstreams a `--upstreams-file` lists: one `host:port[=CAP][,events=..]` a line;
/// blank lines and everything after a `#` are skipped. An error names its line.
pub fn read_upstreams(text: &str) -> Result<Vec<UpstreamSpec>, String> {
    let mut upstreams = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split_once('#').map_or(line, |(kept, _)| kept).trim();
        if !line.is_empty() {
            upstreams.push(line.parse().map_err(|e| format!("line {}: {e}", n + 1))?);
        }
    }
    if upstreams.is_empty() {
        return Err("lists no upstream".to_string());
    }
    Ok(upstreams)
}

/// An upstream as the pool's key: its authority, serializable (as
/// `host:port`) so that replica summaries can name it on a bus.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Addr(pub Authority);

impl serde::Serialize for Addr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Addr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map(Addr).map_err(serde::de::Error::custom)
    }
}

/// Replica sync over NATS: where and how often.
#[derive(Clone, Debug)]
pub struct Replicas {
    /// The NATS server, `nats://host:port`.
    pub url: String,
    /// The subject the fleet's replicas share.
    pub subject: String,
    /// How often this replica publishes its summary.
    pub period: Duration,
    /// How long a peer's summary counts after it arrives.
    pub max_age: Duration,
}

/// What `serve` runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where it listens.
    pub listen: SocketAddr,
    /// The upstreams, each with its capacity.
    pub upstreams: Vec<UpstreamSpec>,
    /// The name of the mode it routes in, as [`registry`] knows it.
    pub mode: String,
    /// Consecutive failures (5xx answers, connect or response errors) that
    /// mark an upstream unhealthy.
    pub fail_after: u32,
    /// How long an unhealthy upstream stays out before it is tried again.
    pub eject_for: Duration,
    /// How long a stop waits for requests in flight before it closes them.
    pub drain_for: Duration,
    /// The bound on requests in flight beyond which they are shed (503).
    pub max_in_flight: Option<u32>,
    /// Replica sync over NATS, if any.
    pub replicas: Option<Replicas>,
    /// The LLM path's settings.
    pub llm: LlmConfig,
}

/// Per-upstream counters.
#[derive(Debug, Default)]
struct Stats {
    picks: AtomicU64,
    errors: AtomicU64,
    consecutive: AtomicU32,
    ejected: AtomicBool,
    ejections: AtomicU64,
}

struct Shared {
    pool: Arc<Pool<Addr>>,
    sync: Option<workerpick_nats::Sync>,
    admission: Option<Admission>,
    client: HttpClient,
    stats: HashMap<Authority, Stats>,
    order: Vec<Authority>,
    fail_after: u32,
    eject_for: Duration,
    llm: Arc<Llm>,
}

impl Watch for Watching {
    fn picked(&self, upstream: &Authority) {
        if let Some(stats) = self.0.stats.get(upstream) {
            stats.picks.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn answered(&self, upstream: &Authority, failed: bool) {
        self.0.record(upstream, failed);
    }
}

/// The proxy's `Upstreams`: a `Forward` per pick, watched for failures.
#[derive(Clone)]
struct Watching(Arc<Shared>);

impl Upstreams<Addr> for Watching {
    type Service = Watched;

    fn service(&self, worker: &Addr) -> Option<Watched> {
        // Called once per pick: the pick counter.
        self.0.stats.get(&worker.0)?.picks.fetch_add(1, Ordering::Relaxed);
        Some(Watched {
            forward: Forward::new(self.0.client.clone(), worker.0.clone()),
            shared: self.0.clone(),
        })
    }
}

/// One upstream's forwarding service, counting its failures.
struct Watched {
    forward: Forward,
    shared: Arc<Shared>,
}

impl tower::Service<Request<Incoming>> for Watched {
    type Response = Response<Incoming>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Incoming>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.forward.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let sent = self.forward.call(request);
        let shared = self.shared.clone();
        let upstream = self.forward.authority().clone();
        Box::pin(async move {
            let answer = sent.await;
            let failed = answer.as_ref().map_or(true, |r| r.status().is_server_error());
            shared.record(&upstream, failed);
            answer
        })
    }
}

impl Shared {
    fn record(self: &Arc<Self>, upstream: &Authority, failed: bool) {
        let Some(stats) = self.stats.get(upstream) else {
            return;
        };
        if !failed {
            stats.consecutive.store(0, Ordering::Relaxed);
            return;
        }
        stats.errors.fetch_add(1, Ordering::Relaxed);
        let run = stats.consecutive.fetch_add(1, Ordering::Relaxed) + 1;
        if run < self.fail_after || stats.ejected.swap(true, Ordering::AcqRel) {
            return;
        }
        stats.ejections.fetch_add(1, Ordering::Relaxed);
        let _ = self.pool.set_healthy(&Addr(upstream.clone()), false);
        let shared = self.clone();
        let upstream = upstream.clone();
        tokio::spawn(async move {
            tokio::time::sleep(shared.eject_for).await;
            if let Some(stats) = shared.stats.get(&upstream) {
                stats.consecutive.store(0, Ordering::Relaxed);
                let _ = shared.pool.set_healthy(&Addr(upstream.clone()), true);
                // Pairs with the swap above: a failure after re-admission may eject again.
                stats.ejected.store(false, Ordering::Release);
            }
        });
    }

    /// The Prometheus text exposition of every upstream's counters.
    fn metrics(&self) -> String {
        let mut out = String::new();
        let addr = |a: &Authority| Addr(a.clone());
        let families: [(&str, &str, &str, &Reading); 6] = [
            (
                "workerpick_upstream_in_flight",
                "gauge",
                "Requests in flight on the upstream (their load, booked until the response body ends).",
                &|a, _| u64::from(self.pool.in_flight(&addr(a)).unwrap_or(0)),
            ),
            (
                "workerpick_upstream_reported_load",
                "gauge",
                "Load the other replicas booked on the upstream, from their last live summaries.",
                &|a, _| u64::from(self.pool.reported_load(&addr(a)).unwrap_or(0)),
            ),
            (
                "workerpick_upstream_picks_total",
                "counter",
                "Requests routed to the upstream.",
                &|_, s| s.picks.load(Ordering::Relaxed),
            ),
            (
                "workerpick_upstream_errors_total",
                "counter",
                "Requests the upstream failed: a 5xx answer, a connect or response error.",
                &|_, s| s.errors.load(Ordering::Relaxed),
            ),
            (
                "workerpick_upstream_healthy",
                "gauge",
                "1 while the upstream receives picks, 0 while ejected after consecutive failures.",
                &|a, _| u64::from(self.pool.is_healthy(&addr(a)).unwrap_or(false)),
            ),
            (
                "workerpick_upstream_ejections_total",
                "counter",
                "Times the upstream was marked unhealthy.",
                &|_, s| s.ejections.load(Ordering::Relaxed),
            ),
        ];
        for (name, kind, help, value) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for upstream in &self.order {
                if let Some(stats) = self.stats.get(upstream) {
                    let _ = writeln!(
                        out,
                        "{name}{{upstream=\"{upstream}\"}} {}",
                        value(upstream, stats)
                    );
                }
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

/// How an LLM metric family reads one upstream's counters.
type LlmReading<'a> = dyn Fn(&llm::Counters) -> f64 + 'a;

/// How a metric family reads one upstream's value.
type Reading<'a> = dyn Fn(&Authority, &Stats) -> u64 + 'a;

type ProxyRoute = HyperRoute<Addr, Watching, dyn workerpick::Selector, OnBodyEnd>;
type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// One connection's service: `GET /metrics` answered here, `POST` to the
/// LLM paths through [`Llm`], the rest routed by load.
struct Front {
    route: ProxyRoute,
    shared: Arc<Shared>,
    watch: Arc<dyn Watch>,
}

impl hyper::service::Service<Request<Incoming>> for Front {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Answer {
        if request.method() == Method::GET && request.uri().path() == "/metrics" {
            let mut page = llm::json(StatusCode::OK, self.shared.metrics());
            page.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            return Box::pin(std::future::ready(Ok(page)));
        }
        if request.method() == Method::POST && llm::prompt::is_llm_path(request.uri().path()) {
            // The same bound as the other paths (HyperRoute's): shed at once
            // when full, else held until the answer ends.
            let permit = match self.shared.admission.as_ref().map(Admission::try_admit) {
                Some(None) => {
                    let shed = llm::json(
                        StatusCode::SERVICE_UNAVAILABLE,
                        llm::prompt::error_body(
                            "over the admission limit (--max-in-flight): shed",
                            "server_error",
                        ),
                    );
                    return Box::pin(std::future::ready(Ok(shed)));
                }
                Some(permit) => permit,
                None => None,
            };
            let (router, watch) = (self.shared.llm.clone(), self.watch.clone());
            return Box::pin(async move { Ok(router.route(watch, request, permit).await) });
        }
        let routed = self.route.call(request);
        Box::pin(async move {
            let answer = routed.await?;
            Ok(answer.map(|body| body.map_err(Into::into).boxed_unsync()))
        })
    }
}

/// The modes `serve` routes in: the registry's built-ins, among them
/// [`ReplicaLeastLoaded`](workerpick::ReplicaLeastLoaded)
/// (`replica-least-loaded`, with an optional `discount` parameter), the
/// default for replicas.
pub fn registry() -> Registry {
    Registry::new()
}

/// Serves `config` until SIGTERM or ctrl-c, then stops accepting, lets the
/// requests in flight finish (for at most `drain_for`) and returns. `ready`
/// receives the bound address once connections are accepted.
pub async fn serve(config: Config, ready: impl FnOnce(SocketAddr)) -> std::io::Result<()> {
    let selector = registry().resolve(&config.mode).map_err(std::io::Error::other)?;
    let pool = Arc::new(Pool::new());
    for u in &config.upstreams {
        pool.insert_with(Addr(u.authority.clone()), WorkerInfo::new().capacity(u.capacity))
            .map_err(|e| std::io::Error::other(format!("upstream {}: {e}", u.authority)))?;
    }
    let sync = match &config.replicas {
        Some(r) => {
            pool.set_report_max_age(r.max_age);
            let bus = workerpick_nats::connect(&r.url)
                .await
                .map_err(|e| std::io::Error::other(format!("nats {}: {e}", r.url)))?;
            Some(workerpick_nats::spawn(
                pool.clone(),
                bus,
                r.subject.clone(),
                r.period,
            ))
        }
        None => None,
    };
    let sources: Vec<_> = config
        .upstreams
        .iter()
        .filter_map(|u| Some((u.authority.clone(), u.events.clone()?)))
        .collect();
    let llm = Arc::new(
        Llm::new(config.llm.clone(), pool.clone(), selector.clone(), &sources)
            .map_err(std::io::Error::other)?,
    );
    let shared = Arc::new(Shared {
        pool: pool.clone(),
        sync,
        admission: config.max_in_flight.map(Admission::new),
        client: http_client(),
        stats: config
            .upstreams
            .iter()
            .map(|u| (u.authority.clone(), Stats::default()))
            .collect(),
        order: config.upstreams.iter().map(|u| u.authority.clone()).collect(),
        fail_after: config.fail_after,
        eject_for: config.eject_for,
        llm,
    });
    let route = Route::new(&pool, selector, Watching(shared.clone())).until(OnBodyEnd);
    let watch: Arc<dyn Watch> = Arc::new(Watching(shared.clone()));
    let mut stop = std::pin::pin!(stop_signal()?);
    let listener = TcpListener::bind(config.listen).await?;
    ready(listener.local_addr()?);
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let mut route = HyperRoute::new(route.clone()).forwarded_for(peer.ip());
                if let Some(admission) = &shared.admission {
                    route = route.admission(admission.clone());
                }
                let front = Front { route, shared: shared.clone(), watch: watch.clone() };
                let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), front);
                tokio::spawn(graceful.watch(connection));
            }
        }
    }
    drop(listener);
    // Idle keep-alive connections close now; busy ones after their response.
    if tokio::time::timeout(config.drain_for, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!(
            "workerpick-proxy: stopped with requests still in flight after {:?}",
            config.drain_for
        );
    }
    Ok(())
}

/// A future that ends at the first SIGTERM or ctrl-c (registered now, so a
/// signal that arrives before it is polled is not lost).
fn stop_signal() -> std::io::Result<impl Future<Output = ()>> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstreams_file_lists_one_a_line_with_comments_and_blank_lines() {
        let text = "# the fleet\n10.0.0.1:8000\n\n  10.0.0.2:8000=2  # the big one\n";
        let listed = read_upstreams(text).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].authority, "10.0.0.1:8000");
        assert_eq!(
            (listed[1].authority.as_str(), listed[1].capacity),
            ("10.0.0.2:8000", 2)
        );
        assert_eq!(read_upstreams("# none\n\n").unwrap_err(), "lists no upstream");
        let bad = read_upstreams("10.0.0.1:8000\n10.0.0.2\n").unwrap_err();
        assert!(bad.starts_with("line 2: "), "{bad}");
    }

    #[test]
    fn an_upstream_names_its_engines_event_sockets() {
        let u: UpstreamSpec = "10.0.0.1:8000=2,events=tcp://10.0.0.1:5557,replay=tcp://10.0.0.1:5558"
            .parse()
            .unwrap();
        assert_eq!(u.capacity, 2);
        let e = u.events.unwrap();
        assert_eq!(e.endpoint, "tcp://10.0.0.1:5557");
        assert_eq!(e.replay.as_deref(), Some("tcp://10.0.0.1:5558"));
        let plain: UpstreamSpec = "10.0.0.1:8000,events=tcp://h:1".parse().unwrap();
        assert_eq!((plain.capacity, plain.events.unwrap().replay), (1, None));
        for (bad, says) in [
            ("10.0.0.1:8000,replay=tcp://h:1", "needs `events`"),
            ("10.0.0.1:8000,events=h:1", "tcp://"),
            ("10.0.0.1:8000,events=tcp://h", "tcp://"),
            ("10.0.0.1:8000,events=tcp://h:1,events=tcp://h:2", "twice"),
            ("10.0.0.1:8000,colour=red", "not an upstream option"),
            ("10.0.0.1:8000,events", "expected"),
        ] {
            let e = bad.parse::<UpstreamSpec>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_replica_mode_is_known_by_name_with_its_discount() {
        let registry = registry();
        let rule = registry.resolve("replica-least-loaded").unwrap();
        assert_eq!(rule.name(), "replica-least-loaded");
        let params = workerpick::Params::new().set("discount", 4);
        assert!(registry.resolve_with("replica-least-loaded", &params).is_ok());
        let zero = workerpick::Params::new().set("discount", 0);
        let e = registry
            .resolve_with("replica-least-loaded", &zero)
            .err()
            .unwrap();
        assert!(e.to_string().contains("discount"), "{e}");
        assert!(registry.resolve("least-loaded").is_ok());
    }

    #[test]
    fn an_upstream_key_travels_as_host_port() {
        let key = Addr("10.0.0.1:8000".parse().unwrap());
        let text = serde_json::to_string(&key).unwrap();
        assert_eq!(text, "\"10.0.0.1:8000\"");
        assert_eq!(serde_json::from_str::<Addr>(&text).unwrap(), key);
        assert!(serde_json::from_str::<Addr>("\"not a/host\"").is_err());
    }
}
