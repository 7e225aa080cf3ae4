//! A bounded load generator: a fixed number of requests over a fixed number
//! of keep-alive connections, stopped by a deadline whatever happens, with
//! some requests cancelled before their answer and some mid-stream.

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What to send.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Requests in all.
    pub requests: usize,
    /// Requests in flight at once (one connection each).
    pub concurrency: usize,
    /// Chunks each response streams.
    pub tokens: u32,
    /// Every `cancel_every`-th request is dropped before its answer and the
    /// next one after its first chunk (a client disconnect); `0`: none.
    pub cancel_every: usize,
    /// The run stops here even if requests are left.
    pub deadline: Duration,
}

/// What came back.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Complete `200` responses.
    pub ok: usize,
    /// Answers with another status, by status.
    pub errors: Vec<(StatusCode, usize)>,
    /// Requests the generator cancelled on purpose.
    pub cancelled: usize,
    /// Requests that failed without an answer (transport errors).
    pub failed: usize,
    /// Requests not sent because the deadline passed.
    pub unsent: usize,
    /// Latency of each complete `200`, to its last chunk.
    pub latencies: Vec<Duration>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Outcome {
    /// Complete responses per second.
    pub fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    /// The `q`-quantile of the latencies (`0.5`, `0.99`).
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len().max(1)) - 1;
        sorted.get(i).copied().unwrap_or_default()
    }

    /// Answers of any status, plus deliberate cancellations: every request
    /// sent is one of these or a transport failure.
    pub fn answered(&self) -> usize {
        self.ok + self.errors.iter().map(|&(_, n)| n).sum::<usize>() + self.cancelled
    }

    fn merge(&mut self, other: Outcome) {
        self.ok += other.ok;
        for (status, n) in other.errors {
            match self.errors.iter_mut().find(|(s, _)| *s == status) {
                Some((_, m)) => *m += n,
                None => self.errors.push((status, n)),
            }
        }
        self.cancelled += other.cancelled;
        self.failed += other.failed;
        self.unsent += other.unsent;
        self.latencies.extend(other.latencies);
    }
}

enum Kind {
    Whole,
    CancelBeforeAnswer,
    CancelMidStream,
}

/// Sends `plan` to `target` and waits for every answer.
pub async fn run(target: SocketAddr, plan: Plan) -> Outcome {
    let start = Instant::now();
    let until = start + plan.deadline;
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..plan.concurrency.max(1) {
        let next = next.clone();
        workers.spawn(async move {
            // One client (and keep-alive connection) per worker.
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            let client = Client::builder(TokioExecutor::new()).build::<_, Empty<Bytes>>(connector);
            let uri: http::Uri = format!("http://{target}/stream?tokens={}", plan.tokens)
                .parse()
                .unwrap();
            let mut out = Outcome::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= plan.requests {
                    break;
                }
                if Instant::now() >= until {
                    out.unsent += 1;
                    continue;
                }
                let kind = match plan.cancel_every {
                    0 => Kind::Whole,
                    n if i.is_multiple_of(n) => Kind::CancelBeforeAnswer,
                    n if i % n == 1 => Kind::CancelMidStream,
                    _ => Kind::Whole,
                };
                let req = Request::get(uri.clone()).body(Empty::new()).unwrap();
                let sent = Instant::now();
                let call = client.request(req);
                let left = until.saturating_duration_since(sent);
                match kind {
                    Kind::CancelBeforeAnswer => {
                        // Long enough to reach the proxy, short of any answer.
                        let _ = tokio::time::timeout(Duration::from_micros(300), call).await;
                        out.cancelled += 1;
                        continue;
                    }
                    Kind::CancelMidStream | Kind::Whole => {}
                }
                let response = match tokio::time::timeout(left, call).await {
                    Ok(Ok(r)) => r,
                    Ok(Err(_)) | Err(_) => {
                        out.failed += 1;
                        continue;
                    }
                };
                let status = response.status();
                let mut body = response.into_body();
                if matches!(kind, Kind::CancelMidStream) && status == StatusCode::OK {
                    let _ = tokio::time::timeout(left, body.frame()).await;
                    drop(body); // the client goes away mid-stream
                    out.cancelled += 1;
                    continue;
                }
                match tokio::time::timeout(left, body.collect()).await {
                    Ok(Ok(_)) if status == StatusCode::OK => {
                        out.ok += 1;
                        out.latencies.push(sent.elapsed());
                    }
                    Ok(Ok(_)) => out.merge(Outcome {
                        errors: vec![(status, 1)],
                        ..Outcome::default()
                    }),
                    Ok(Err(_)) | Err(_) => out.failed += 1,
                }
            }
            out
        });
    }
    let mut all = Outcome::default();
    while let Some(done) = workers.join_next().await {
        all.merge(done.expect("a load worker panicked"));
    }
    all.elapsed = start.elapsed();
    all
}
