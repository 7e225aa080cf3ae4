//! A reverse proxy in axum: `HttpRoute` is a plain type, so it sits in the
//! router's state; each request clones it (one small allocation: its own
//! handle on the pool) and is forwarded to the least-loaded upstream, its
//! load held until the response body ends.
//!
//!     cargo run -p workerpick-proxy --example axum -- 127.0.0.1:8080 127.0.0.1:8081 127.0.0.1:8082
//!
//! (listen address first, then the upstreams).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use std::sync::Arc;
use tower::ServiceExt;
use workerpick::service::{HttpRoute, error_response, http_client};
use workerpick::{Pool, Registry};

async fn forward(State(route): State<HttpRoute<Body>>, request: Request) -> Response {
    match route.oneshot(request).await {
        Ok(answer) => answer.map(Body::new),
        Err(e) => error_response::<Body>(&e).map(Body::new), // 503 no upstream, 502 upstream failed
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().ok_or("usage: axum LISTEN UPSTREAM...")?;
    let upstreams: Vec<http::uri::Authority> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    let pool = Arc::new(Pool::from_workers(upstreams)?);
    let route: HttpRoute<Body> =
        HttpRoute::forward(&pool, Registry::new().resolve("least-loaded")?, http_client());
    let app = axum::Router::new().fallback(forward).with_state(route);
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
