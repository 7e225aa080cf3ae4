//! A fake OpenAI-compatible engine for tests and the trace replay: it keys
//! each prompt's blocks as the proxy does ([`crate::llm::prompt`]), keeps a
//! block-LRU prefix cache, prefills one request at a time for a time
//! proportional to its uncached blocks, and then streams `max_tokens` SSE
//! `data:` chunks (or answers one JSON body when `stream` is not set).
//! With [`EngineSpec::events`] it publishes its cache's stores and
//! evictions as vLLM's KV events on a ZMQ PUB socket, with vLLM's replay
//! socket beside it ([`events`]), for the blocks of prompts given as token
//! ids (its text blocks are its own characters, which no router's
//! tokenizer would give). [`EngineSpec::lose_every`] leaves batches off
//! the PUB stream, for tests of gaps and their replay.

mod cache;
pub mod events;

use crate::llm::prompt;
use bytes::Bytes;
use cache::{Changes, Lru};
use http::{Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// How an engine behaves.
#[derive(Clone, Copy, Debug)]
pub struct EngineSpec {
    /// Token ids per block (as the proxy's `--block-tokens`).
    pub block_tokens: u32,
    /// Characters per block (as the proxy's `--block-chars`).
    pub block_chars: u32,
    /// Blocks its cache holds (least recently used out first).
    pub cache_blocks: usize,
    /// Prefill time per uncached block.
    pub per_block: Duration,
    /// Time between streamed tokens.
    pub per_token: Duration,
    /// Tokens generated when the request gives no `max_tokens`.
    pub default_tokens: u64,
    /// Publishes KV events (see [`Engine::events_endpoint`]).
    pub events: bool,
    /// With events: every Nth batch is left off the PUB stream (0: none),
    /// as a PUB socket over its high-water mark drops one; the replay
    /// socket still has it.
    pub lose_every: u32,
}

impl Default for EngineSpec {
    fn default() -> Self {
        Self {
            block_tokens: 16,
            block_chars: 64,
            cache_blocks: 4096,
            per_block: Duration::from_micros(200),
            per_token: Duration::from_millis(1),
            default_tokens: 4,
            events: false,
            lose_every: 0,
        }
    }
}

/// What an engine counted.
#[derive(Debug, Default)]
pub struct EngineStats {
    /// Requests answered 200.
    pub requests: AtomicU64,
    /// Prompt blocks received.
    pub prompt_blocks: AtomicU64,
    /// Of those, blocks found in its cache (leading blocks only).
    pub hit_blocks: AtomicU64,
    /// KV event batches published (those left off the PUB stream too).
    pub event_batches: AtomicU64,
    /// Of those, batches left off the PUB stream ([`EngineSpec::lose_every`]).
    pub lost_batches: Arc<AtomicU64>,
}

struct State {
    spec: EngineSpec,
    cache: Mutex<(Lru, Changes)>,
    /// Where its KV event batches go, in the order of its cache's changes.
    events: Option<mpsc::UnboundedSender<Vec<u8>>>,
    /// One prefill at a time.
    prefill: tokio::sync::Mutex<()>,
    stats: Arc<EngineStats>,
}

/// A running engine (stopped on drop).
pub struct Engine {
    addr: SocketAddr,
    stats: Arc<EngineStats>,
    task: tokio::task::JoinHandle<()>,
    events: Option<events::Publisher>,
}

impl Engine {
    /// Starts one on 127.0.0.1, any free port.
    pub async fn start(spec: EngineSpec) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(EngineStats::default());
        let (events, publisher) = if spec.events {
            let (tx, rx) = mpsc::unbounded_channel();
            let publisher = events::publish(rx, spec.lose_every, stats.lost_batches.clone()).await?;
            (Some(tx), Some(publisher))
        } else {
            (None, None)
        };
        let state = Arc::new(State {
            spec,
            cache: Mutex::new((Lru::default(), Changes::default())),
            events,
            prefill: tokio::sync::Mutex::new(()),
            stats: stats.clone(),
        });
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let state = state.clone();
                let service = service_fn(move |r| answer(state.clone(), r));
                connections.spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self {
            addr,
            stats,
            task,
            events: publisher,
        })
    }

    /// Its KV events' PUB endpoint (`tcp://127.0.0.1:PORT`), when it
    /// publishes them.
    pub fn events_endpoint(&self) -> Option<&str> {
        self.events.as_ref().map(|p| p.endpoint.as_str())
    }

    /// Its KV events' replay (ROUTER) endpoint, when it publishes them.
    pub fn replay_endpoint(&self) -> Option<&str> {
        self.events.as_ref().map(|p| p.replay.as_str())
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counters.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type EngineBody = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

fn text(status: StatusCode, body: String) -> Response<EngineBody> {
    let mut r = Response::new(http_body_util::Full::new(Bytes::from(body)).boxed_unsync());
    *r.status_mut() = status;
    r
}

async fn answer(
    state: Arc<State>,
    request: http::Request<Incoming>,
) -> Result<Response<EngineBody>, Infallible> {
    let path = request.uri().path().to_string();
    let Ok(body) = request.into_body().collect().await.map(|b| b.to_bytes()) else {
        return Ok(text(StatusCode::BAD_REQUEST, "unreadable body".into()));
    };
    let parsed = match prompt::parse(&path, &body) {
        Ok(p) if prompt::is_llm_path(&path) => p,
        Ok(_) => return Ok(text(StatusCode::NOT_FOUND, "no such path".into())),
        Err(prompt::Invalid(why)) => return Ok(text(StatusCode::BAD_REQUEST, why)),
    };
    let stream = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("stream").and_then(serde_json::Value::as_bool))
        .unwrap_or(false);
    let spec = state.spec;
    let mut keys = Vec::new();
    prompt::keys(
        &parsed,
        spec.block_tokens as usize,
        spec.block_chars as usize,
        &mut Vec::new(),
        &mut keys,
    );
    let tokens = parsed.max_tokens.unwrap_or(spec.default_tokens).min(10_000);
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let work = async move {
        {
            let _turn = state.prefill.lock().await;
            let hits = state
                .cache
                .lock()
                .map(|mut held| {
                    let (lru, changes) = &mut *held;
                    let hits = lru.serve(&keys, spec.cache_blocks, changes);
                    if let Some(tx) = &state.events {
                        let tokens = match &parsed.prompt {
                            prompt::Prompt::Tokens(t) => Some(t.as_slice()),
                            prompt::Prompt::Text(_) => None,
                        };
                        let ts = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map_or(0.0, |d| d.as_secs_f64());
                        if let Some(b) = events::batch(&keys, tokens, spec.block_tokens as usize, changes, ts)
                        {
                            state.stats.event_batches.fetch_add(1, Relaxed);
                            let _ = tx.send(b);
                        }
                    }
                    hits
                })
                .unwrap_or(0);
            state.stats.prompt_blocks.fetch_add(keys.len() as u64, Relaxed);
            state.stats.hit_blocks.fetch_add(hits as u64, Relaxed);
            let uncached = u32::try_from(keys.len() - hits).unwrap_or(u32::MAX);
            tokio::time::sleep(spec.per_block * uncached).await;
        }
        state.stats.requests.fetch_add(1, Relaxed);
        for i in 0..tokens {
            if i > 0 {
                tokio::time::sleep(spec.per_token).await;
            }
            if stream {
                let chunk = format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"t{i}\"}}]}}\n\n");
                if tx.send(Bytes::from(chunk)).await.is_err() {
                    return; // the client went away
                }
            }
        }
        let end = if stream {
            "data: [DONE]\n\n".to_string()
        } else {
            format!("{{\"choices\":[{{\"index\":0,\"text\":\"{tokens} tokens\"}}]}}")
        };
        let _ = tx.send(Bytes::from(end)).await;
    };
    tokio::spawn(work);
    let mut r = Response::new(Channel(rx).boxed_unsync());
    let kind = if stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    r.headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(kind));
    Ok(r)
}

/// A body fed by a channel: its end is the sender's drop.
struct Channel(mpsc::Receiver<Bytes>);

impl Body for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}
