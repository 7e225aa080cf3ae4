//! The accept loop the proxy and the upstreams share: HTTP/1 on an ephemeral
//! port of 127.0.0.1, one task per connection, and a stop that closes them all.

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use std::io;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use workerpick::service::BoxError;

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves each connection with a service from `per_connection`.
    pub async fn start<S, B>(mut per_connection: impl FnMut() -> S + Send + 'static) -> io::Result<Self>
    where
        S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
        S::Future: Send + 'static,
        S::Error: Into<BoxError>,
        B: http_body::Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        // Streamed chunks are small writes: without this,
                        // Nagle's algorithm and delayed ACKs add ~40 ms.
                        let _ = stream.set_nodelay(true);
                        let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), per_connection());
                        connections.spawn(connection);
                    }
                }
                while connections.try_join_next().is_some() {}
            }
            connections.shutdown().await;
        });
        Ok(Self { addr, stop, task })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and closes every open connection (dropping the
    /// requests in flight on them).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}
