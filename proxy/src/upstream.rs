//! Stand-in upstream servers: each answers `GET /stream?tokens=N` with `N`
//! chunks, at its own speed, and counts the requests it received.

use crate::server::Server;
use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame};
use hyper::body::Incoming;
use hyper::service::service_fn;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// How fast an upstream answers: a wait before the response head (time to
/// first token), then one chunk per `per_token`.
#[derive(Clone, Copy, Debug)]
pub struct Speed {
    /// Time to the response head.
    pub first_byte: Duration,
    /// Time between chunks.
    pub per_token: Duration,
}

impl Speed {
    /// A fleet of `n` upstreams, the first the fastest, each next one twice
    /// as slow (the simulator's mixed fleet in miniature).
    pub fn fleet(n: usize) -> Vec<Speed> {
        (0..n)
            .map(|i| Speed {
                first_byte: Duration::from_millis(1 << i),
                per_token: Duration::from_micros(250 << i),
            })
            .collect()
    }
}

/// A running upstream server on 127.0.0.1.
pub struct Upstream {
    server: Server,
    speed: Speed,
    served: Arc<AtomicU64>,
}

impl Upstream {
    /// Starts one on an ephemeral port.
    pub async fn start(speed: Speed) -> io::Result<Self> {
        let served = Arc::new(AtomicU64::new(0));
        let counter = served.clone();
        let server = Server::start(move || {
            let served = counter.clone();
            service_fn(move |req| answer(req, speed, served.clone()))
        })
        .await?;
        Ok(Self {
            server,
            speed,
            served,
        })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Its speed.
    pub fn speed(&self) -> Speed {
        self.speed
    }

    /// Requests received so far.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Stops accepting and closes every open connection.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// An address on 127.0.0.1 that refuses connections (bound, then closed).
pub async fn refusing_addr() -> io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    listener.local_addr()
}

async fn answer(
    req: Request<Incoming>,
    speed: Speed,
    served: Arc<AtomicU64>,
) -> Result<Response<Tokens>, Infallible> {
    served.fetch_add(1, Ordering::Relaxed);
    let tokens = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("tokens=")))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    tokio::time::sleep(speed.first_byte).await;
    Ok(Response::new(Tokens {
        left: tokens,
        per_token: speed.per_token,
        wait: None,
    }))
}

/// A streamed body: `left` chunks, one per `per_token`.
pub struct Tokens {
    left: u32,
    per_token: Duration,
    wait: Option<Pin<Box<Sleep>>>,
}

impl Body for Tokens {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        let per_token = self.per_token;
        let wait = self
            .wait
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(per_token)));
        std::task::ready!(wait.as_mut().poll(cx));
        self.wait = None;
        self.left -= 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"token\n")))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }
}
