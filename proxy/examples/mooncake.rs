//! Replays the start of the Mooncake conversation trace over HTTP through
//! `serve` to three fake engines (`workerpick_proxy::engine`, block-LRU
//! prefix caches, prefill one request at a time for a time proportional to
//! its uncached blocks), time-scaled, once per mode; prints the engines'
//! cache hit rate and the clients' TTFT p50/p99 per mode: least-loaded,
//! cost with credit from the proxy's own routing (approximate), and cost
//! with credit from the engines' KV events (exact).
//!
//!     cargo run -p workerpick-proxy --release --example mooncake -- \
//!         [TRACE] [--requests N] [--seconds S]
//!
//! The same engines behind nginx's `least_conn` are the last row (the
//! system's `nginx`, started on a free port and stopped after; the row says
//! it was skipped where nginx cannot run).
//!
//! Each of the trace's `hash_ids` (a 512-token block) is sent as one token
//! id with `--block-tokens 1`, so a block of the index is a block of the trace.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use workerpick_proxy::engine::{Engine, EngineSpec};
use workerpick_proxy::llm::LlmConfig;
use workerpick_proxy::llm::events::EventSource;
use workerpick_proxy::serve::{Config, UpstreamSpec, serve};

struct Entry {
    at_ms: u64,
    blocks: Vec<u64>,
    output: u64,
}

fn read(path: &str, n: usize) -> Vec<Entry> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            Entry {
                at_ms: v["timestamp"].as_u64().unwrap_or(0),
                blocks: v["hash_ids"]
                    .as_array()
                    .map_or(Vec::new(), |a| a.iter().filter_map(|x| x.as_u64()).collect()),
                output: v["output_length"].as_u64().unwrap_or(1),
            }
        })
        .collect()
}

fn spec(events: bool) -> EngineSpec {
    EngineSpec {
        events,
        block_tokens: 1,
        cache_blocks: 4000,
        per_block: Duration::from_millis(1),
        per_token: Duration::from_millis(5),
        ..EngineSpec::default()
    }
}

struct Run {
    hit_rate: f64,
    ttft: Vec<Duration>,
    failed: usize,
}

/// What the trace is sent through.
#[derive(Clone, Copy)]
enum Router {
    /// `serve` in a mode, with the engines' KV events or without.
    Serve(&'static str, bool),
    /// nginx's `least_conn` (the system's nginx).
    Nginx,
}

/// A running front in front of the engines: `serve` in process, or nginx.
enum Front {
    Serve(tokio::task::JoinHandle<std::io::Result<()>>),
    Nginx(std::process::Child, std::path::PathBuf),
}

impl Drop for Front {
    fn drop(&mut self) {
        match self {
            Front::Serve(task) => task.abort(),
            Front::Nginx(child, dir) => {
                // A graceful stop takes its workers with it (a killed
                // master leaves them behind).
                let stopped = std::process::Command::new("nginx")
                    .arg("-p")
                    .arg(&*dir)
                    .arg("-c")
                    .arg(dir.join("nginx.conf"))
                    .args(["-s", "stop"])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if !stopped {
                    let _ = child.kill();
                }
                let _ = child.wait();
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// Starts nginx (`least_conn`, no buffering: SSE goes through as it comes)
/// in front of `engines` on a free port of 127.0.0.1; `None` when nginx
/// cannot be run here.
async fn nginx(engines: &[Engine]) -> Option<(Front, std::net::SocketAddr)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let dir = std::env::temp_dir().join(format!("mooncake-nginx-{}-{port}", std::process::id()));
    std::fs::create_dir_all(dir.join("logs")).ok()?;
    let servers: String = engines
        .iter()
        .map(|e| format!("        server {};\n", e.addr()))
        .collect();
    let conf = format!(
        "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n    access_log off;\n    client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n\
         \x20   client_max_body_size 16m;\n    upstream engines {{\n        least_conn;\n{servers}        keepalive 64;\n    }}\n\
         \x20   server {{\n        listen 127.0.0.1:{port};\n        location / {{\n            proxy_pass http://engines;\n\
         \x20           proxy_http_version 1.1;\n            proxy_set_header Connection \"\";\n            proxy_buffering off;\n        }}\n    }}\n}}\n",
        d = dir.display()
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).ok()?;
    let child = std::process::Command::new("nginx")
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(&path)
        .args(["-g", "daemon off;"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let front = Front::Nginx(child, dir);
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return Some((front, addr));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// `serve` in `mode` in front of `engines` (following their KV events when
/// they publish them), on a free port of 127.0.0.1.
async fn serve_in_front(mode: &str, engines: &[Engine]) -> (Front, std::net::SocketAddr) {
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstreams: engines
            .iter()
            .map(|e| UpstreamSpec {
                authority: e.addr().to_string().parse().unwrap(),
                capacity: 1,
                events: e.events_endpoint().map(|endpoint| EventSource {
                    endpoint: endpoint.to_string(),
                    replay: None,
                }),
            })
            .collect(),
        mode: mode.to_string(),
        fail_after: 1_000_000,
        eject_for: Duration::from_millis(1),
        drain_for: Duration::from_millis(1),
        max_in_flight: None,
        replicas: None,
        queue: None,
        llm: LlmConfig {
            block_tokens: 1,
            max_body: 16 << 20,
            ..LlmConfig::default()
        },
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(serve(config, move |addr| {
        let _ = tx.send(addr);
    }));
    let addr = rx.await.expect("serve started");
    (Front::Serve(server), addr)
}

/// Sends the trace through `router`; `None` when the router cannot run.
async fn run(router: Router, trace: &[Entry], seconds: f64) -> Option<Run> {
    let events = matches!(router, Router::Serve(_, true));
    let engines = [
        Engine::start(spec(events)).await.unwrap(),
        Engine::start(spec(events)).await.unwrap(),
        Engine::start(spec(events)).await.unwrap(),
    ];
    let (front, addr) = match router {
        Router::Nginx => nginx(&engines).await?,
        Router::Serve(mode, _) => serve_in_front(mode, &engines).await,
    };
    if events {
        // The subscriptions go through before the first request.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let span = trace.last().map_or(1, |e| e.at_ms.max(1)) as f64;
    let scale = seconds * 1e3 / span;
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build(HttpConnector::new());
    let start = Instant::now();
    let mut sent = tokio::task::JoinSet::new();
    for e in trace {
        let due = start + Duration::from_secs_f64(e.at_ms as f64 * scale / 1e3);
        tokio::time::sleep_until(due.into()).await;
        let ids: Vec<String> = e.blocks.iter().map(u64::to_string).collect();
        let tokens = (e.output / 32).clamp(1, 16);
        let body = format!(
            "{{\"model\":\"m\",\"prompt\":[{}],\"max_tokens\":{tokens},\"stream\":true}}",
            ids.join(",")
        );
        let request = http::Request::post(format!("http://{addr}/v1/completions"))
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let client = client.clone();
        sent.spawn(async move {
            let began = Instant::now();
            let answer = client.request(request).await.ok()?;
            if !answer.status().is_success() {
                return None;
            }
            let mut body = answer.into_body();
            let first = body.frame().await?.ok()?;
            let ttft = began.elapsed();
            first.into_data().ok()?;
            while let Some(frame) = body.frame().await {
                frame.ok()?;
            }
            Some(ttft)
        });
    }
    let mut ttft = Vec::new();
    let mut failed = 0;
    while let Some(done) = sent.join_next().await {
        match done.ok().flatten() {
            Some(t) => ttft.push(t),
            None => failed += 1,
        }
    }
    drop(front);
    let (hits, blocks) = engines.iter().fold((0, 0), |(h, b), e| {
        (
            h + e.stats().hit_blocks.load(Relaxed),
            b + e.stats().prompt_blocks.load(Relaxed),
        )
    });
    ttft.sort();
    Some(Run {
        hit_rate: hits as f64 / blocks.max(1) as f64,
        ttft,
        failed,
    })
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut path, mut requests, mut seconds) = (
        "../shared/data/mooncake/conversation_trace.jsonl".to_string(),
        1200usize,
        30.0f64,
    );
    while let Some(a) = args.next() {
        match a.as_str() {
            "--requests" => requests = args.next().and_then(|v| v.parse().ok()).expect("--requests N"),
            "--seconds" => seconds = args.next().and_then(|v| v.parse().ok()).expect("--seconds S"),
            other => path = other.to_string(),
        }
    }
    let trace = read(&path, requests);
    let span = trace.last().map_or(0, |e| e.at_ms);
    println!(
        "{} requests of {path} ({:.0} s of trace) in {seconds} s; 3 engines: LRU of {} blocks, {:?} prefill per uncached block (one prefill at a time), {:?} per token",
        trace.len(),
        span as f64 / 1e3,
        spec(false).cache_blocks,
        spec(false).per_block,
        spec(false).per_token
    );
    println!("| mode | engine hit rate | TTFT p50 ms | TTFT p99 ms | failed |");
    println!("|---|---|---|---|---|");
    for (router, name) in [
        (Router::Serve("least-loaded", false), "least-loaded"),
        (Router::Serve("cost", false), "cost, approximate (routing)"),
        (Router::Serve("cost", true), "cost, exact (KV events)"),
        (Router::Nginx, "nginx least_conn"),
    ] {
        match run(router, &trace, seconds).await {
            Some(r) => println!(
                "| {name} | {:.1} % | {:.1} | {:.1} | {} |",
                r.hit_rate * 100.0,
                quantile(&r.ttft, 0.5),
                quantile(&r.ttft, 0.99),
                r.failed
            ),
            None => {
                println!("| {name} | skipped: nginx could not be started (apt-get install nginx) | | | |")
            }
        }
    }
}
