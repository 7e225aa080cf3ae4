//! What the LLM path costs per request: `serve` in `--mode cost` in front of
//! three upstreams that read the body and answer at once, sent the same
//! 4 000-token completion body (token ids, `--block-tokens 16`: 250 blocks)
//! on the LLM path (`/v1/completions`: the body read and parsed, the prompt
//! keyed and looked up in the prefix index, the pick credited, the routing
//! decision stored) and on a pass-through path (`/v1/passthrough`: routed
//! by load, the body streamed through), one request at a time over one
//! keep-alive connection, the paths interleaved in rounds; the upstream
//! directly is the floor. Prints each path's latency p50/p99 and the LLM
//! path's overhead over pass-through, then the LLM steps alone, timed
//! in-process (parse, keys, lookup, the routing decision's store), beside
//! the floor of any reader that refuses invalid JSON (serde_json
//! validating the body, keeping nothing). A second `serve` beside it runs
//! with `--queue` (a limit no request reaches: nobody waits), its two
//! paths in the same rounds, for what the admission queue adds when it is
//! on and idle.
//!
//!     cargo run -p workerpick-proxy --release --example overhead -- [--requests N]
//!
//! The prompts: 64 conversations of a shared 3 000-token head, each request
//! with a 1 000-token tail of its own, so lookups find credit as in a fleet.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::convert::Infallible;
use std::hint::black_box;
use std::time::{Duration, Instant};
use workerpick::prefix::{IndexConfig, Matches, PrefixIndex};
use workerpick_proxy::llm::{LlmConfig, prompt};
use workerpick_proxy::serve::{Config, QueueSettings, UpstreamSpec, serve};
use workerpick_proxy::server::Server;

const TOKENS: u32 = 4_000;
const HEAD: u32 = 3_000;
const CONVERSATIONS: u32 = 64;

/// Request `i`'s body: conversation `i % 64`'s head, then a tail of its own.
fn body(i: u32) -> Bytes {
    let conversation = i % CONVERSATIONS;
    let ids: Vec<String> = (0..TOKENS)
        .map(|t| match t < HEAD {
            true => conversation * 10_000 + t,
            false => 1_000_000 + i * 1_000 + (t - HEAD),
        })
        .map(|t| t.to_string())
        .collect();
    Bytes::from(format!(
        "{{\"model\":\"m\",\"prompt\":[{}],\"max_tokens\":16}}",
        ids.join(",")
    ))
}

/// An upstream that reads the body and answers a short JSON body at once.
async fn upstream() -> Server {
    Server::start(|| {
        service_fn(|request: Request<Incoming>| async move {
            let _ = request.into_body().collect().await;
            Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(
                b"{\"choices\":[{\"index\":0,\"text\":\"ok\"}]}",
            ))))
        })
    })
    .await
    .expect("an upstream on 127.0.0.1")
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut requests = 4_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--requests" => requests = args.next().and_then(|n| n.parse().ok()).expect("--requests N"),
            other => panic!("unknown argument {other} (--requests N)"),
        }
    }
    let upstreams = [upstream().await, upstream().await, upstream().await];
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstreams: upstreams
            .iter()
            .map(|u| UpstreamSpec {
                authority: u.addr().to_string().parse().unwrap(),
                capacity: 1,
                events: None,
            })
            .collect(),
        mode: "cost".into(),
        fail_after: 1_000_000,
        eject_for: Duration::from_millis(1),
        drain_for: Duration::from_millis(1),
        max_in_flight: None,
        replicas: None,
        queue: None,
        llm: LlmConfig::default(),
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(serve(config.clone(), move |addr| {
        let _ = tx.send(addr);
    }));
    let proxy = rx.await.expect("serve started");
    config.queue = Some(QueueSettings {
        in_flight: Some(1 << 30),
        ..QueueSettings::default()
    });
    let (tx, rx) = tokio::sync::oneshot::channel();
    let queued_server = tokio::spawn(serve(config, move |addr| {
        let _ = tx.send(addr);
    }));
    let queued = rx.await.expect("serve --queue started");
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(1)
        .build(connector);
    let bodies: Vec<Bytes> = (0..256).map(body).collect();
    let paths = [
        (
            "upstream directly (floor)",
            upstreams[0].addr().to_string(),
            "/v1/completions",
        ),
        ("serve, pass-through", proxy.to_string(), "/v1/passthrough"),
        ("serve, LLM path (cost)", proxy.to_string(), "/v1/completions"),
        (
            "serve --queue, pass-through",
            queued.to_string(),
            "/v1/passthrough",
        ),
        ("serve --queue, LLM path", queued.to_string(), "/v1/completions"),
    ];
    let send = |addr: &str, path: &str, body: Bytes| {
        let request = Request::post(format!("http://{addr}{path}"))
            .header("content-type", "application/json")
            .body(Full::new(body))
            .unwrap();
        let client = client.clone();
        async move {
            let start = Instant::now();
            let answer = client.request(request).await.expect("an answer");
            assert!(answer.status().is_success(), "{}", answer.status());
            answer.into_body().collect().await.expect("a body");
            start.elapsed()
        }
    };
    // Warm-up: connections open, the index holds every conversation.
    for (i, b) in bodies.iter().enumerate() {
        for (_, addr, path) in &paths {
            send(addr, path, b.clone()).await;
        }
        let _ = i;
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(requests); paths.len()];
    let round = 100;
    for start in (0..requests).step_by(round) {
        for (p, (_, addr, path)) in paths.iter().enumerate() {
            for i in start..(start + round).min(requests) {
                let b = bodies[i % bodies.len()].clone();
                times[p].push(send(addr, path, b).await);
            }
        }
    }
    println!(
        "{requests} requests per path, {TOKENS}-token prompts ({} bytes), one at a time:",
        bodies[0].len()
    );
    println!("{:<28} {:>9} {:>9}", "path", "p50 µs", "p99 µs");
    let mut q = Vec::new();
    for (p, (name, _, _)) in paths.iter().enumerate() {
        times[p].sort();
        let (p50, p99) = (quantile(&times[p], 0.5), quantile(&times[p], 0.99));
        println!("{name:<28} {:>9.1} {:>9.1}", us(p50), us(p99));
        q.push((p50, p99));
    }
    println!(
        "{:<28} {:>9.1} {:>9.1}",
        "LLM path over pass-through",
        us(q[2].0) - us(q[1].0),
        us(q[2].1) - us(q[1].1)
    );
    println!(
        "{:<28} {:>9.1} {:>9.1}",
        "--queue, pass-through, more",
        us(q[3].0) - us(q[1].0),
        us(q[3].1) - us(q[1].1)
    );
    println!(
        "{:<28} {:>9.1} {:>9.1}",
        "--queue, LLM path, more",
        us(q[4].0) - us(q[2].0),
        us(q[4].1) - us(q[2].1)
    );
    server.abort();
    queued_server.abort();

    // The LLM path's own steps, in-process, on the same bodies.
    let index = PrefixIndex::new(IndexConfig::approximate(16).routed_ttl(Duration::from_secs(120))).unwrap();
    let pool = workerpick::Pool::from_workers(["a", "b", "c"]).unwrap();
    let (mut scratch, mut keys, mut found) = (Vec::new(), Vec::new(), Matches::new());
    for (i, b) in bodies.iter().enumerate() {
        let parsed = prompt::parse("/v1/completions", b).unwrap();
        keys.clear();
        prompt::keys(&parsed, 16, 64, &mut scratch, &mut keys);
        index.routed(&pool, &["a", "b", "c"][i % 3], 0, &keys).unwrap();
    }
    let mut steps: [Vec<Duration>; 5] = Default::default();
    for i in 0..requests {
        let b = &bodies[i % bodies.len()];
        let t0 = Instant::now();
        let parsed = black_box(prompt::parse("/v1/completions", b).unwrap());
        let t1 = Instant::now();
        keys.clear();
        prompt::keys(&parsed, 16, 64, &mut scratch, &mut keys);
        let t2 = Instant::now();
        index.lookup(&keys, &mut found);
        black_box(&found);
        let t3 = Instant::now();
        index.routed(&pool, &["a", "b", "c"][i % 3], 0, &keys).unwrap();
        let t4 = Instant::now();
        // The floor of any reader that refuses invalid JSON: validating
        // the body while keeping nothing.
        let _: serde::de::IgnoredAny = serde_json::from_slice(black_box(b)).unwrap();
        let t5 = Instant::now();
        for (s, d) in steps
            .iter_mut()
            .zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4])
        {
            s.push(d);
        }
    }
    println!("the LLM steps alone, in-process ({} blocks):", keys.len());
    for (name, s) in [
        "parse the body",
        "key the blocks",
        "look them up",
        "store the routing decision",
        "validate only (keep nothing)",
    ]
    .iter()
    .zip(steps.iter_mut())
    {
        s.sort();
        println!(
            "{name:<28} {:>9.1} {:>9.1}",
            us(quantile(s, 0.5)),
            us(quantile(s, 0.99))
        );
    }
}
