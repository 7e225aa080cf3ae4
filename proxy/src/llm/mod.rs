//! The LLM path of `serve`: `POST /v1/completions` and
//! `/v1/chat/completions` are read (bounded), keyed into prompt blocks,
//! looked up in a [`PrefixIndex`] fed by the proxy's own routing (the
//! approximate index: each pick counts as its upstream caching the prompt's
//! blocks for a TTL), routed by the configured mode with that credit, and
//! booked in two phases ([`phased`]). The body is forwarded unchanged.
//!
//! Exact credit: an upstream given with its engine's KV event socket
//! (`--upstream ADDR,events=tcp://HOST:PORT`) has the index fed by its
//! engine's stores and evictions ([`events`]); the proxy's routing
//! decisions then only cover the events' blind spot, for a short TTL (2 s
//! unless `--routed-ttl-ms` says). The events key blocks by their token
//! ids, so they credit prompts given as token ids; text prompts get the
//! routing's credit only.

pub mod events;
pub mod phased;
pub mod prompt;

use crate::serve::Addr;
use crate::serve::queue::{Ask, Lobby};
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http::uri::Authority;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use phased::{Booking, PhasedBody, Reserved};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use tower::Service;
use workerpick::prefix::{IndexConfig, Matches, PrefixIndex};
use workerpick::service::{BoxError, Forward, HttpClient, Permit};
use workerpick::{
    CacheHits, CreditWeight, OwnedReservation, Pool, Request as Pick, Selector, Sessions, Stickiness,
    Temperature,
};

/// The body every `serve` answer has.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// The LLM path's settings.
#[derive(Clone, Debug)]
pub struct LlmConfig {
    /// The largest request body read, in bytes (413 over it).
    pub max_body: usize,
    /// Token ids per block, for prompts given as token ids.
    pub block_tokens: u32,
    /// Characters per block, for prompts given as text.
    pub block_chars: u32,
    /// The decode share a request books (unless `decode_tokens` derives it).
    pub decode_weight: u32,
    /// When set: the decode share is `ceil(max_tokens / decode_tokens)` for a
    /// request that gives `max_tokens`.
    pub decode_tokens: Option<u32>,
    /// How long a routing decision counts as its upstream caching the
    /// blocks (`None`: 120 s, or 2 s when any upstream has KV events).
    pub routed_ttl: Option<Duration>,
    /// The most blocks the index holds.
    pub index_capacity: u32,
    /// The header that names a conversation (none: no sessions).
    pub session_header: Option<HeaderName>,
    /// How long an idle session stays bound.
    pub session_ttl: Duration,
    /// A bound session leaves its upstream when that upstream's load is over
    /// this many times the fleet's mean (with the request counted).
    pub session_bound: f64,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            max_body: 4 << 20,
            block_tokens: 16,
            block_chars: 64,
            decode_weight: 1,
            decode_tokens: None,
            routed_ttl: None,
            index_capacity: 1 << 20,
            session_header: None,
            session_ttl: Duration::from_secs(600),
            session_bound: 1.25,
        }
    }
}

/// One upstream's LLM counters.
#[derive(Debug, Default)]
pub struct Counters {
    /// Prompt blocks routed to it.
    pub prompt_blocks: AtomicU64,
    /// Of those, blocks the index credited it with.
    pub credited_blocks: AtomicU64,
    /// Prefill load booked now (uncached blocks before their first token).
    pub prefill: AtomicU64,
    /// Decode load booked now.
    pub decode: AtomicU64,
    /// Its engine's KV event stream (all 0 when it has none).
    pub events: Arc<events::EventCounters>,
}

/// What `serve` tells of each LLM answer (its health watch).
pub trait Watch: Send + Sync {
    /// `upstream` was picked.
    fn picked(&self, upstream: &Authority);
    /// `upstream` answered (`failed`: a 5xx or no answer).
    fn answered(&self, upstream: &Authority, failed: bool);
}

/// The LLM path's state, shared by every connection.
pub struct Llm {
    config: LlmConfig,
    pool: Arc<Pool<Addr>>,
    selector: Arc<dyn Selector>,
    client: HttpClient<Full<Bytes>>,
    index: Arc<PrefixIndex<Addr>>,
    sessions: Arc<Sessions>,
    counters: HashMap<Authority, Arc<Counters>>,
    started: Instant,
    /// The tasks that follow the upstreams' KV events (stopped on drop).
    followers: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Llm {
    fn drop(&mut self) {
        for f in &self.followers {
            f.abort();
        }
    }
}

/// A JSON answer made here.
pub fn json(status: StatusCode, text: String) -> Response<Body> {
    let mut answer = Response::new(
        Full::new(Bytes::from(text))
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    answer
}

fn refuse(status: StatusCode, message: &str) -> Response<Body> {
    json(status, prompt::error_body(message, "invalid_request_error"))
}

impl Llm {
    /// The LLM path over `pool`, routing with `selector`, following the KV
    /// events of the upstreams `sources` names (from within a tokio
    /// runtime when it names any).
    pub fn new(
        config: LlmConfig,
        pool: Arc<Pool<Addr>>,
        selector: Arc<dyn Selector>,
        sources: &[(Authority, events::EventSource)],
    ) -> Result<Self, String> {
        if config.block_tokens == 0 || config.block_chars == 0 {
            return Err("block sizes are at least 1".into());
        }
        let ttl = config.routed_ttl.unwrap_or(if sources.is_empty() {
            Duration::from_secs(120)
        } else {
            Duration::from_secs(2)
        });
        let index = Arc::new(
            PrefixIndex::new(
                IndexConfig::approximate(config.block_tokens)
                    .capacity(config.index_capacity)
                    .routed_ttl(ttl),
            )
            .map_err(|e| e.to_string())?,
        );
        let counters: HashMap<Authority, Arc<Counters>> = pool
            .loads()
            .into_iter()
            .map(|(a, _)| (a.0, Arc::new(Counters::default())))
            .collect();
        let started = Instant::now();
        let mut followers = Vec::new();
        for (upstream, source) in sources {
            let c = counters
                .get(upstream)
                .ok_or_else(|| format!("events for {upstream}, which is not an upstream"))?;
            followers.push(events::follow(
                index.clone(),
                pool.clone(),
                Addr(upstream.clone()),
                source.clone(),
                c.events.clone(),
                started,
            ));
        }
        Ok(Self {
            sessions: Arc::new(Sessions::new(config.session_ttl, 1 << 20, Stickiness::Soft)),
            config,
            pool,
            selector,
            client: workerpick::service::http_client(),
            index,
            counters,
            started,
            followers,
        })
    }

    /// The session table, when requests name sessions: `--queue` books
    /// keyed requests through it too.
    pub fn sessions(&self) -> Option<&Arc<Sessions>> {
        self.config.session_header.as_ref().map(|_| &self.sessions)
    }

    /// When the path started (the events' ages count from it).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The upstream's counters.
    pub fn counters(&self, upstream: &Authority) -> Option<&Counters> {
        self.counters.get(upstream).map(|c| &**c)
    }

    /// The index's size: (blocks, bytes allocated).
    pub fn index_size(&self) -> (u64, u64) {
        self.index.size()
    }

    /// Routes one LLM request, holding `permit` (its place under
    /// `--max-in-flight`) until its answer ends; with `queued` (`--queue`),
    /// it waits in that queue for room as `ask` says, weighed by its prompt
    /// blocks and decode share, credited with its cached blocks.
    pub async fn route(
        self: Arc<Self>,
        watch: Arc<dyn Watch>,
        request: Request<Incoming>,
        permit: Option<Permit>,
        queued: Option<(Arc<Lobby>, Ask)>,
    ) -> Response<Body> {
        let (head, body) = request.into_parts();
        let declared = head
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        let too_large = || {
            refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the body is over {} bytes", self.config.max_body),
            )
        };
        if declared.is_some_and(|n| n > self.config.max_body as u64) {
            return too_large();
        }
        let bytes = match Limited::new(body, self.config.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
            Err(e) => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    &format!("the body could not be read: {e}"),
                );
            }
        };
        let parsed = match prompt::parse(head.uri.path(), &bytes) {
            Ok(p) => p,
            Err(prompt::Invalid(why)) => return refuse(StatusCode::BAD_REQUEST, &why),
        };
        let (mut scratch, mut keys) = (Vec::new(), Vec::new());
        prompt::keys(
            &parsed,
            self.config.block_tokens as usize,
            self.config.block_chars as usize,
            &mut scratch,
            &mut keys,
        );
        let blocks = u32::try_from(keys.len()).unwrap_or(u32::MAX);
        let (mut found, mut hits) = (Matches::new(), CacheHits::new());
        self.index.lookup(&keys, &mut found);
        found.fill(&self.pool, &mut hits);
        let decode = match (self.config.decode_tokens, parsed.max_tokens) {
            (Some(per), Some(max)) => u32::try_from(max.div_ceil(u64::from(per)))
                .unwrap_or(u32::MAX)
                .max(1),
            _ => self.config.decode_weight,
        };
        let weight = blocks.saturating_add(decode);
        let session = self
            .config
            .session_header
            .as_ref()
            .and_then(|h| head.headers.get(h))
            .map(|v| fold(v.as_bytes()));
        let (credit, temperature) = match overrides(&head.headers) {
            Ok(o) => o,
            Err(why) => return refuse(StatusCode::BAD_REQUEST, &why),
        };
        let mut pick = Pick::new().weight(weight).cache_hits(&hits);
        if let Some(w) = credit {
            pick = pick.credit_weight(w);
        }
        if let Some(t) = temperature {
            pick = pick.temperature(t);
        }
        let booked = match queued {
            Some((lobby, ask)) => {
                // The fair share counts the uncached tokens: the credit is
                // the most any upstream is expected to hold.
                let credit = hits.most_held(&self.pool).min(blocks);
                if let Some(id) = session {
                    pick = pick.key(id);
                }
                // The pick's cache hits travel with the waiter: admitted
                // now or later, it is booked by its cache credit.
                let queued = lobby
                    .enqueue(ask.entry(weight, credit), Some(&pick))
                    .map(|ticket| lobby.clone().admit(ticket, ask.deadline));
                let admitted = match queued {
                    Ok(waiting) => waiting.await,
                    Err(refusal) => Err(refusal),
                };
                match admitted {
                    Ok(place) => Reserved::Queued(place),
                    Err(refusal) => {
                        return json(
                            refusal.status,
                            prompt::error_body(&refusal.message, refusal.kind()),
                        );
                    }
                }
            }
            None => {
                let booked = match session {
                    Some(id) => self.reserve_session(&pick.key(id), id),
                    None => self.pool.owned_handle().reserve_with(&*self.selector, &pick),
                };
                match booked {
                    Ok(r) => Reserved::Plain(r),
                    Err(e) => {
                        return json(
                            StatusCode::SERVICE_UNAVAILABLE,
                            prompt::error_body(&format!("no upstream: {e}"), "server_error"),
                        );
                    }
                }
            }
        };
        let mut reservation = booked;
        let upstream = reservation.worker().0.clone();
        let cached = hits.held_by(&self.pool, reservation.worker()).min(blocks);
        reservation.release_part(cached);
        let _ = self
            .index
            .routed(&self.pool, reservation.worker(), reservation.rank(), &keys);
        let Some(counters) = self.counters.get(&upstream).cloned() else {
            return json(
                StatusCode::BAD_GATEWAY,
                prompt::error_body("unknown upstream", "server_error"),
            );
        };
        counters.prompt_blocks.fetch_add(u64::from(blocks), Relaxed);
        counters.credited_blocks.fetch_add(u64::from(cached), Relaxed);
        let booking = Booking::new(reservation, permit, blocks - cached, decode, counters);
        watch.picked(&upstream);
        let sent = Forward::new(self.client.clone(), upstream.clone())
            .call(Request::from_parts(head, Full::new(bytes)))
            .await;
        match sent {
            Ok(answer) => {
                watch.answered(&upstream, answer.status().is_server_error());
                answer.map(|body| PhasedBody::new(body, booking).boxed_unsync())
            }
            Err(e) => {
                watch.answered(&upstream, true);
                drop(booking);
                json(
                    workerpick::service::error_status(&e),
                    prompt::error_body(&format!("upstream {upstream}: {e}"), "server_error"),
                )
            }
        }
    }

    /// Books `pick` on its session's upstream while that upstream's load is
    /// within the bound, else through the selector (binding the session anew).
    fn reserve_session(&self, pick: &Pick<'_>, id: u64) -> Result<OwnedReservation<Addr>, workerpick::Error> {
        let mut handle = self.pool.handle();
        let bound = self.sessions.reserve(&mut handle, &*self.selector, pick)?;
        let load = self.pool.in_flight(bound.worker()).unwrap_or(0);
        let loads = self.pool.loads();
        let total: u64 = loads.iter().map(|&(_, l)| u64::from(l)).sum();
        let mean = total as f64 / loads.len().max(1) as f64;
        let bound = if f64::from(load) > self.config.session_bound * mean.max(f64::from(pick.get_weight())) {
            drop(bound);
            self.sessions.unbind(id);
            self.sessions.reserve(&mut handle, &*self.selector, pick)?
        } else {
            bound
        };
        // The same booking, owned (it outlives this call): booked before the
        // borrowed one goes, so the load never dips.
        let owned = self
            .pool
            .owned_handle()
            .reserve_rank(bound.worker(), bound.rank(), bound.weight())?;
        drop(bound);
        Ok(owned)
    }
}

/// The header that sets the cost mode's credit weight for one request (a
/// decimal number, 0 to the mode's most).
pub const CREDIT_WEIGHT: &str = "x-workerpick-credit-weight";
/// The header that sets the cost mode's temperature for one request.
pub const TEMPERATURE: &str = "x-workerpick-temperature";

/// A request's overrides of the cost mode's tuning, from its headers.
fn overrides(headers: &http::HeaderMap) -> Result<(Option<CreditWeight>, Option<Temperature>), String> {
    let number = |name: &str| -> Result<Option<f64>, String> {
        headers
            .get(name)
            .map(|v| {
                v.to_str()
                    .ok()
                    .and_then(|t| t.trim().parse::<f64>().ok())
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| format!("`{name}` is not a non-negative number"))
            })
            .transpose()
    };
    let credit = number(CREDIT_WEIGHT)?
        .map(|x| {
            let milli = (x * 1000.0).round();
            if milli > f64::from(u32::MAX) {
                return Err(format!("`{CREDIT_WEIGHT}`: {x} is too large"));
            }
            CreditWeight::from_milli(milli as u32).map_err(|e| format!("`{CREDIT_WEIGHT}`: {e}"))
        })
        .transpose()?;
    let temperature = number(TEMPERATURE)?
        .map(|t| Temperature::new(t).map_err(|e| format!("`{TEMPERATURE}`: {e}")))
        .transpose()?;
    Ok((credit, temperature))
}

/// FNV-1a of a session header's value.
fn fold(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_override_the_credit_weight_and_temperature() {
        let mut h = http::HeaderMap::new();
        assert_eq!(overrides(&h).unwrap(), (None, None));
        h.insert(CREDIT_WEIGHT, HeaderValue::from_static("1.5"));
        h.insert(TEMPERATURE, HeaderValue::from_static("0.25"));
        let (w, t) = overrides(&h).unwrap();
        assert_eq!(w, Some(CreditWeight::from_milli(1500).unwrap()));
        assert_eq!(t, Some(Temperature::new(0.25).unwrap()));
        for bad in ["-1", "x", "NaN", "1e30"] {
            h.insert(CREDIT_WEIGHT, HeaderValue::from_static(bad));
            assert!(overrides(&h).is_err(), "{bad}");
        }
    }
}
