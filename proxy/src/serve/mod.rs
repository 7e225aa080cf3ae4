//! `workerpick-proxy serve`: a reverse proxy for outside traffic over
//! workerpick's `HttpRoute`, with a Prometheus `/metrics` page, health from
//! failures (consecutive 5xx or connect errors eject an upstream for a
//! while) and a graceful stop on SIGTERM or ctrl-c. With `--nats` it is one
//! of several replicas in front of the same upstreams, sharing their load
//! over a NATS subject (`workerpick-nats`). With `--queue` requests wait
//! for an upstream with room instead of being shed ([`queue`]).

use crate::llm::{self, Body, Llm, Watch};
use http::uri::Authority;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::TcpListener;
use workerpick::service::{
    Admission, Ejecting, Ejection, Forward, HttpClient, HyperRoute, OnBodyEnd, Route, Upstreams, http_client,
};
use workerpick::{Pool, Registry, WorkerInfo};

mod config;
mod metrics;
mod passthrough;
pub mod queue;

pub use config::{Addr, Config, Replicas, UpstreamSpec, read_upstreams};
pub use queue::QueueSettings;

/// What every connection shares.
struct Shared {
    pool: Arc<Pool<Addr>>,
    sync: Option<workerpick_nats::Sync>,
    admission: Option<Admission>,
    /// The admission queue, with `--queue`.
    lobby: Option<Arc<queue::Lobby>>,
    client: HttpClient,
    /// Per upstream: requests routed to it.
    picks: HashMap<Authority, AtomicU64>,
    order: Vec<Authority>,
    /// Per upstream: its failures, and its ejection after a run of them.
    ejection: Ejection<Addr>,
    llm: Arc<Llm>,
}

/// The LLM path's watch: picks counted, answers to the ejection.
struct Watching(Arc<Shared>);

impl Watch for Watching {
    fn picked(&self, upstream: &Authority) {
        if let Some(picks) = self.0.picks.get(upstream) {
            picks.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn answered(&self, upstream: &Authority, failed: bool) {
        self.0.ejection.record(&Addr(upstream.clone()), failed);
    }
}

/// The proxy's `Upstreams`: a `Forward` per pick, counted (the ejection
/// watches their answers).
struct Picks(Arc<Shared>);

impl Upstreams<Addr> for Picks {
    type Service = Forward;

    fn service(&self, worker: &Addr) -> Option<Forward> {
        // Called once per pick: the pick counter.
        self.0.picks.get(&worker.0)?.fetch_add(1, Ordering::Relaxed);
        Some(Forward::new(self.0.client.clone(), worker.0.clone()))
    }
}

type ProxyRoute = HyperRoute<Addr, Ejecting<Addr, Picks>, dyn workerpick::Selector, OnBodyEnd>;
type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// One connection's service: `GET /metrics` answered here, `POST` to the
/// LLM paths through [`Llm`], the rest routed by load.
struct Front {
    route: ProxyRoute,
    shared: Arc<Shared>,
    watch: Arc<dyn Watch>,
    /// The peer, for `X-Forwarded-For` on the queued pass-through path.
    peer: Option<http::HeaderValue>,
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
        let is_llm = request.method() == Method::POST && llm::prompt::is_llm_path(request.uri().path());
        if let Some(lobby) = &self.shared.lobby {
            let lobby = lobby.clone();
            if !is_llm {
                let (shared, peer) = (self.shared.clone(), self.peer.clone());
                return Box::pin(async move { Ok(passthrough::forward(shared, lobby, peer, request).await) });
            }
            let ask = match lobby.ask(request.headers(), std::time::Instant::now()) {
                Ok(ask) => ask,
                Err(refusal) => {
                    let body = llm::prompt::error_body(&refusal.message, refusal.kind());
                    return Box::pin(std::future::ready(Ok(llm::json(refusal.status, body))));
                }
            };
            let (router, watch) = (self.shared.llm.clone(), self.watch.clone());
            return Box::pin(async move { Ok(router.route(watch, request, None, Some((lobby, ask))).await) });
        }
        if is_llm {
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
            return Box::pin(async move { Ok(router.route(watch, request, permit, None).await) });
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
    let lobby = match &config.queue {
        Some(settings) => Some(Arc::new(
            queue::Lobby::new(
                pool.clone(),
                selector.clone(),
                settings.clone(),
                llm.sessions().cloned(),
            )
            .map_err(std::io::Error::other)?,
        )),
        None => None,
    };
    // Room that appears without a release through the queue (a summary,
    // a re-admitted upstream) is found by this ticker; stopped on return.
    let pumping = lobby.clone().map(|lobby| {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_millis(5));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                every.tick().await;
                lobby.pump();
            }
        })
    });
    let _stop_pumping = pumping.map(AbortOnDrop);
    let shared = Arc::new(Shared {
        pool: pool.clone(),
        sync,
        admission: config.max_in_flight.map(Admission::new),
        lobby,
        client: http_client(),
        picks: config
            .upstreams
            .iter()
            .map(|u| (u.authority.clone(), AtomicU64::new(0)))
            .collect(),
        order: config.upstreams.iter().map(|u| u.authority.clone()).collect(),
        ejection: Ejection::new(&pool, config.fail_after, config.eject_for),
        llm,
    });
    let upstreams = shared.ejection.watch(Picks(shared.clone()));
    let route = Route::new(&pool, selector, upstreams).until(OnBodyEnd);
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
                let peer = http::HeaderValue::try_from(peer.ip().to_string()).ok();
                let front = Front { route, shared: shared.clone(), watch: watch.clone(), peer };
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

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
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
