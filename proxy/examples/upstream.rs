//! A stand-in upstream for trying `workerpick-proxy serve` by hand: answers
//! every request with `ok` after a fixed delay.
//!
//!     cargo run -p workerpick-proxy --release --example upstream -- 127.0.0.1:9001 2
//!
//! (the address to listen on, then the delay in ms, 0 by default).

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().ok_or("usage: upstream LISTEN [DELAY_MS]")?;
    let delay = Duration::from_millis(args.next().map_or(Ok(0), |d| d.parse())?);
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!(
        "upstream on {}, answering after {delay:?}",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let answer = service_fn(move |_| async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok\n"))))
        });
        tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), answer));
    }
}
