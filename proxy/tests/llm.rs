//! `workerpick-proxy serve` as an LLM router: the binary in front of three
//! fake OpenAI-compatible engines (`workerpick_proxy::engine`, each with a
//! block-LRU prefix cache) on 127.0.0.1. Repeated prompts go to the engine
//! that caches them (a higher engine hit rate than least-loaded's), bad
//! bodies are refused with nothing booked, a streamed answer gives its
//! prefill share back at its first `data:` event and the rest at its end,
//! and a cancelled or failed request leaves nothing booked.

mod common;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use workerpick_proxy::engine::{Engine, EngineSpec};

/// Each test ends by itself well before this.
const LIMIT: Duration = Duration::from_secs(60);

use common::{TestClient, client, start_proxy_over as start_proxy};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

fn post(addr: &str, path: &str, body: impl Into<Bytes>) -> http::Request<Full<Bytes>> {
    http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(body.into()))
        .unwrap()
}

async fn send(client: &TestClient, request: http::Request<Full<Bytes>>) -> (StatusCode, String) {
    let answer = client.request(request).await.unwrap();
    let status = answer.status();
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

async fn metrics(client: &TestClient, addr: &str) -> String {
    let request = http::Request::get(format!("http://{addr}/metrics"))
        .body(Full::default())
        .unwrap();
    send(client, request).await.1
}

/// `family{upstream="addr"}` on a metrics page.
fn metric(page: &str, family: &str, upstream: &str) -> f64 {
    let key = format!("{family}{{upstream=\"{upstream}\"}} ");
    let line = page.lines().find_map(|l| l.strip_prefix(&key));
    line.unwrap_or_else(|| panic!("no {key} in:\n{page}"))
        .parse()
        .unwrap()
}

/// The sum of a family over the upstreams.
fn total(page: &str, family: &str) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// Polls until nothing is booked on any upstream (load, prefill, decode).
async fn nothing_booked(client: &TestClient, addr: &str) -> String {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let page = metrics(client, addr).await;
        let left: f64 = [
            "workerpick_upstream_in_flight",
            "workerpick_llm_prefill_in_flight",
            "workerpick_llm_decode_in_flight",
        ]
        .iter()
        .map(|f| total(&page, f))
        .sum();
        if left == 0.0 {
            return page;
        }
        assert!(Instant::now() < until, "load left booked:\n{page}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn tokens(prefix: u32, blocks: u32, tail: u32) -> String {
    // `blocks` blocks of 16 ids shared by every request of `prefix`, then
    // a block of its own.
    let ids: Vec<String> = (0..blocks * 16)
        .map(|i| (prefix * 100_000 + i).to_string())
        .chain((0..16).map(|i| (tail * 1000 + i + 7_000_000).to_string()))
        .collect();
    format!(
        "{{\"model\":\"m\",\"prompt\":[{}],\"max_tokens\":2,\"stream\":true}}",
        ids.join(",")
    )
}

/// The engines' hit rate over a run of repeated prompts through `mode`.
async fn hit_rate(mode: &str) -> f64 {
    let spec = EngineSpec {
        per_block: Duration::from_micros(300),
        ..EngineSpec::default()
    };
    let engines = [
        Engine::start(spec).await.unwrap(),
        Engine::start(spec).await.unwrap(),
        Engine::start(spec).await.unwrap(),
    ];
    let addrs: Vec<_> = engines.iter().map(Engine::addr).collect();
    let (_proxy, addr) = start_proxy(&addrs, &["--mode", mode]);
    let client = client();
    // 3 callers at once; 9 prompts of 8 shared blocks, each sent 6 times.
    let mut callers = tokio::task::JoinSet::new();
    for caller in 0..3u32 {
        let (client, addr) = (client.clone(), addr.clone());
        callers.spawn(async move {
            for round in 0..6u32 {
                for p in 0..3u32 {
                    let prefix = (caller * 3 + p + round) % 9;
                    let body = tokens(prefix, 8, caller * 100 + round * 10 + p);
                    let (status, text) = send(&client, post(&addr, "/v1/completions", body)).await;
                    assert_eq!(status, StatusCode::OK, "{text}");
                    assert!(text.contains("data: [DONE]"), "{text}");
                }
            }
        });
    }
    while let Some(done) = callers.join_next().await {
        done.unwrap();
    }
    let page = nothing_booked(&client, &addr).await;
    let (hits, blocks) = engines.iter().fold((0, 0), |(h, b), e| {
        (
            h + e.stats().hit_blocks.load(Relaxed),
            b + e.stats().prompt_blocks.load(Relaxed),
        )
    });
    assert_eq!(blocks, 54 * 9, "every request reached an engine once");
    if mode == "cost" {
        let credited = total(&page, "workerpick_llm_credited_blocks_total");
        assert!(credited > 0.0, "{page}");
        assert_eq!(total(&page, "workerpick_llm_prompt_blocks_total"), 54.0 * 9.0);
        assert!(metric(&page, "workerpick_llm_hit_rate", &addrs[0].to_string()) >= 0.0);
        assert!(total(&page, "workerpick_llm_index_blocks") == 0.0); // a family without upstreams
        assert!(page.contains("workerpick_llm_index_blocks "), "{page}");
    }
    hits as f64 / blocks as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_prompts_go_to_the_engine_that_caches_them() {
    tokio::time::timeout(LIMIT, async {
        let cost = hit_rate("cost").await;
        let least = hit_rate("least-loaded").await;
        println!("engine hit rate: cost {cost:.3}, least-loaded {least:.3}");
        // 9 prompts × 6 sends: at most 5 of 6 sends of 8 shared blocks of 9 hit.
        assert!(cost > 0.6, "cost: engine hit rate {cost:.3}");
        assert!(cost > least + 0.1, "cost {cost:.3} vs least-loaded {least:.3}");
    })
    .await
    .expect("the test took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_answered_400_or_413_with_nothing_booked() {
    tokio::time::timeout(LIMIT, async {
        let engine = Engine::start(EngineSpec::default()).await.unwrap();
        let (_proxy, addr) = start_proxy(&[engine.addr()], &["--mode", "cost", "--max-body-bytes", "1000"]);
        let client = client();
        for (path, body, status) in [
            ("/v1/completions", "{not json".to_string(), 400),
            ("/v1/completions", r#"{"model":"m"}"#.to_string(), 400),
            (
                "/v1/chat/completions",
                r#"{"model":"m","prompt":"x"}"#.to_string(),
                400,
            ),
            (
                "/v1/completions",
                format!(r#"{{"prompt":"{}"}}"#, "a".repeat(2000)),
                413,
            ),
        ] {
            let (got, text) = send(&client, post(&addr, path, body)).await;
            assert_eq!(got.as_u16(), status, "{text}");
            let error: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(error["error"]["type"], "invalid_request_error", "{text}");
        }
        // A bad override header.
        let mut r = post(&addr, "/v1/completions", r#"{"prompt":"hello"}"#);
        r.headers_mut()
            .insert("x-workerpick-temperature", "hot".parse().unwrap());
        assert_eq!(send(&client, r).await.0, StatusCode::BAD_REQUEST);
        // Not UTF-8.
        let (got, _) = send(
            &client,
            post(&addr, "/v1/completions", &b"{\"prompt\":\"\xff\xfe\"}"[..]),
        )
        .await;
        assert_eq!(got, StatusCode::BAD_REQUEST);
        // Over the bound without a length: a chunked body, read up to the bound.
        let chunks = Chunks(3000);
        let request = http::Request::post(format!("http://{addr}/v1/completions"))
            .body(chunks)
            .unwrap();
        let chunked: Client<HttpConnector, _> =
            Client::builder(TokioExecutor::new()).build(HttpConnector::new());
        let answer = chunked.request(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let page = nothing_booked(&client, &addr).await;
        assert_eq!(
            engine.stats().prompt_blocks.load(Relaxed),
            0,
            "nothing reached the engine"
        );
        assert_eq!(
            metric(
                &page,
                "workerpick_upstream_picks_total",
                &engine.addr().to_string()
            ),
            0.0
        );
        // A good one still goes through.
        let (ok, text) = send(
            &client,
            post(&addr, "/v1/completions", r#"{"prompt":"hello","max_tokens":1}"#),
        )
        .await;
        assert_eq!(ok, StatusCode::OK, "{text}");
    })
    .await
    .expect("the test took too long");
}

/// A body of `n` bytes in 100-byte chunks, without a length.
struct Chunks(usize);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.0 == 0 {
            return std::task::Poll::Ready(None);
        }
        let take = self.0.min(100);
        self.0 -= take;
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(vec![b' '; take])))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_gives_its_prefill_back_at_the_first_event_and_the_rest_at_its_end() {
    tokio::time::timeout(LIMIT, async {
        let spec = EngineSpec {
            per_block: Duration::from_millis(40),
            per_token: Duration::from_millis(400),
            ..EngineSpec::default()
        };
        let engine = Engine::start(spec).await.unwrap();
        let up = engine.addr().to_string();
        let (_proxy, addr) = start_proxy(&[engine.addr()], &["--mode", "cost", "--decode-weight", "3"]);
        let client = client();
        // 10 uncached blocks: 400 ms of prefill, then 3 tokens 400 ms apart.
        let body = tokens(1, 9, 1).replace("\"max_tokens\":2", "\"max_tokens\":3");
        let answer = client
            .request(post(&addr, "/v1/completions", body.clone()))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let page = metrics(&client, &addr).await;
        assert_eq!(
            metric(&page, "workerpick_llm_prefill_in_flight", &up),
            10.0,
            "{page}"
        );
        assert_eq!(metric(&page, "workerpick_llm_decode_in_flight", &up), 3.0);
        assert_eq!(metric(&page, "workerpick_upstream_in_flight", &up), 13.0);
        let mut body_in = answer.into_body();
        let first = body_in.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(first.starts_with(b"data: "), "{first:?}");
        let page = metrics(&client, &addr).await;
        assert_eq!(
            metric(&page, "workerpick_llm_prefill_in_flight", &up),
            0.0,
            "{page}"
        );
        assert_eq!(metric(&page, "workerpick_llm_decode_in_flight", &up), 3.0);
        assert_eq!(metric(&page, "workerpick_upstream_in_flight", &up), 3.0);
        while body_in.frame().await.is_some() {}
        nothing_booked(&client, &addr).await;

        // The same prompt again: cached by the index, so no prefill share.
        let answer = client
            .request(post(&addr, "/v1/completions", body.clone()))
            .await
            .unwrap();
        let page = metrics(&client, &addr).await;
        assert_eq!(
            metric(&page, "workerpick_llm_prefill_in_flight", &up),
            0.0,
            "{page}"
        );
        assert_eq!(metric(&page, "workerpick_upstream_in_flight", &up), 3.0);
        // Cancelled mid-stream: dropped after its first event.
        let mut body_in = answer.into_body();
        let _ = body_in.frame().await;
        drop(body_in);
        nothing_booked(&client, &addr).await;
        // Cancelled before any answer.
        let pending = tokio::spawn({
            let (client, addr, body) = (
                client.clone(),
                addr.clone(),
                body.replace("\"prompt\":[1", "\"prompt\":[2"),
            );
            async move { client.request(post(&addr, "/v1/completions", body)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        pending.abort();
        nothing_booked(&client, &addr).await;
    })
    .await
    .expect("the test took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_in_flight_bounds_the_llm_paths_until_their_streams_end() {
    tokio::time::timeout(LIMIT, async {
        let spec = EngineSpec {
            per_token: Duration::from_millis(200),
            ..EngineSpec::default()
        };
        let engine = Engine::start(spec).await.unwrap();
        let (_proxy, addr) = start_proxy(&[engine.addr()], &["--mode", "cost", "--max-in-flight", "1"]);
        let client = client();
        let shed_total = |page: &str| {
            page.lines()
                .find_map(|l| l.strip_prefix("workerpick_shed_total "))
                .unwrap_or_else(|| panic!("no workerpick_shed_total in:\n{page}"))
                .parse::<u64>()
                .unwrap()
        };
        let answer = client
            .request(post(&addr, "/v1/completions", tokens(1, 2, 1)))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        // While its stream goes on, the bound is full: an LLM request and a
        // pass-through one are both shed, at once.
        let (status, body) = send(&client, post(&addr, "/v1/completions", tokens(2, 2, 1))).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        let error: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["error"]["type"], "server_error", "{body}");
        let (status, _) = send(&client, post(&addr, "/other", "x")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(shed_total(&metrics(&client, &addr).await), 2);
        // Its end gives the place back.
        answer.into_body().collect().await.unwrap();
        nothing_booked(&client, &addr).await;
        let (status, body) = send(&client, post(&addr, "/v1/completions", tokens(2, 2, 1))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // A refused body gives its place back too.
        let (status, _) = send(&client, post(&addr, "/v1/completions", "{")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (status, body) = send(&client, post(&addr, "/v1/completions", tokens(3, 2, 1))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(shed_total(&metrics(&client, &addr).await), 2);
    })
    .await
    .expect("the test took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_is_down_answers_502_with_nothing_booked() {
    tokio::time::timeout(LIMIT, async {
        let down = workerpick_proxy::upstream::refusing_addr().await.unwrap();
        let (_proxy, addr) = start_proxy(&[down], &["--mode", "cost"]);
        let client = client();
        let (status, text) = send(
            &client,
            post(
                &addr,
                "/v1/chat/completions",
                r#"{"messages":[{"role":"user","content":"hi"}]}"#,
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{text}");
        assert!(serde_json::from_str::<serde_json::Value>(&text).unwrap()["error"].is_object());
        let page = nothing_booked(&client, &addr).await;
        assert_eq!(
            metric(&page, "workerpick_upstream_errors_total", &down.to_string()),
            1.0
        );
    })
    .await
    .expect("the test took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stays_on_its_engine() {
    session_turns(&[]).await;
}

/// The same through the admission queue, with room everywhere: the queue
/// books a keyed request by the session table too (the bound upstream
/// while it has room; `--session-bound` is not its rule).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stays_on_its_engine_under_the_queue() {
    session_turns(&["--queue", "--queue-in-flight", "1000"]).await;
}

/// Eleven turns of one session, two at a time after the first, through
/// least-loaded with `extra` flags: all on one engine.
async fn session_turns(extra: &[&str]) {
    tokio::time::timeout(LIMIT, async {
        let spec = EngineSpec::default();
        let engines = [
            Engine::start(spec).await.unwrap(),
            Engine::start(spec).await.unwrap(),
            Engine::start(spec).await.unwrap(),
        ];
        let addrs: Vec<_> = engines.iter().map(Engine::addr).collect();
        let mut args = vec![
            "--mode",
            "least-loaded",
            "--session-header",
            "x-conversation",
            "--session-bound",
            "10",
        ];
        args.extend_from_slice(extra);
        let (_proxy, addr) = start_proxy(&addrs, &args);
        let client = client();
        // Turns with nothing in common but the session; two at a time, so
        // least-loaded alone would spread them (the bound is wide: two at
        // once on one engine of three is over the default 1.25 × the mean).
        // The first alone: two first turns at once both find the session
        // unbound, and each may bind it where it goes.
        for turn in 0..6u32 {
            let sends: Vec<_> = (0..if turn == 0 { 1 } else { 2 })
                .map(|k| {
                    let mut r = post(&addr, "/v1/completions", tokens(turn * 2 + k, 1, turn));
                    r.headers_mut()
                        .insert("x-conversation", "chat-7".parse().unwrap());
                    let client = client.clone();
                    tokio::spawn(async move { send(&client, r).await })
                })
                .collect();
            for sent in sends {
                let (status, text) = sent.await.unwrap();
                assert_eq!(status, StatusCode::OK, "{text}");
            }
        }
        let served: Vec<u64> = engines.iter().map(|e| e.stats().requests.load(Relaxed)).collect();
        assert!(served.contains(&11), "every turn on one engine: {served:?}");
        nothing_booked(&client, &addr).await;
    })
    .await
    .expect("the test took too long");
}

/// Where a run's credit comes from.
#[derive(Clone, Copy)]
enum Feed {
    /// The proxy's own routing decisions.
    Routing,
    /// The engines' KV events; every `lose_every`th batch left off their
    /// PUB streams (0: none), with or without their replay sockets given
    /// to the proxy.
    Events { lose_every: u32, replay: bool },
}

/// One run of `prompts` (sent one at a time, each after the events of the
/// last were taken in) through `cost` in front of three engines with small
/// caches (they evict): (blocks the proxy credited, blocks the engines hit).
async fn credit_against_hits(feed: Feed, prompts: &[String]) -> (f64, u64, String) {
    let (events, lose_every, replay) = match feed {
        Feed::Routing => (false, 0, false),
        Feed::Events { lose_every, replay } => (true, lose_every, replay),
    };
    let spec = EngineSpec {
        cache_blocks: 24,
        per_block: Duration::from_micros(100),
        events,
        lose_every,
        ..EngineSpec::default()
    };
    let engines = [
        Engine::start(spec).await.unwrap(),
        Engine::start(spec).await.unwrap(),
        Engine::start(spec).await.unwrap(),
    ];
    let specs: Vec<String> = engines
        .iter()
        .map(|e| match (e.events_endpoint(), e.replay_endpoint()) {
            (Some(ep), Some(r)) if replay => format!("{},events={ep},replay={r}", e.addr()),
            (Some(ep), _) => format!("{},events={ep}", e.addr()),
            _ => e.addr().to_string(),
        })
        .collect();
    let mut args = vec!["--mode".to_string(), "cost".to_string()];
    for s in &specs {
        args.extend(["--upstream".to_string(), s.clone()]);
    }
    let (_proxy, addr) = common::start_proxy(args);
    let client = client();
    let mut probes = 0u32;
    // A prompt of its own sent to engine `n` directly (not through the
    // proxy: no credit, no hit), for a batch of its events.
    let probe = |n: usize, probes: &mut u32| {
        *probes += 1;
        let body = tokens(1_000 + n as u32 * 1_000 + *probes, 1, *probes);
        let direct = post(&engines[n].addr().to_string(), "/v1/completions", body);
        let client = client.clone();
        async move { assert_eq!(send(&client, direct).await.0, StatusCode::OK) }
    };
    let published = |n: usize| engines[n].stats().event_batches.load(Relaxed);
    // Engine `n`'s batches the proxy took in: applied, or lost in a gap
    // it gave up on (the lost batch and the one that showed the gap).
    let taken = |page: &str, n: usize| {
        let up = engines[n].addr().to_string();
        metric(page, "workerpick_llm_events_batches_total", &up)
            + 2.0 * metric(page, "workerpick_llm_events_resets_total", &up)
    };
    let mut missed = [0.0; 3];
    if events {
        let until = Instant::now() + Duration::from_secs(10);
        while total(&metrics(&client, &addr).await, "workerpick_llm_events_connected") < 3.0 {
            assert!(Instant::now() < until, "the proxy did not subscribe");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A PUB socket sends nothing to a subscription not yet through:
        // each engine is probed until one of its batches arrives; what it
        // published before is missed.
        for (n, missed) in missed.iter_mut().enumerate() {
            let until = Instant::now() + Duration::from_secs(20);
            loop {
                probe(n, &mut probes).await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                let page = metrics(&client, &addr).await;
                if taken(&page, n) > 0.0 {
                    *missed = published(n) as f64 - taken(&page, n);
                    break;
                }
                assert!(Instant::now() < until, "no batch of engine {n} arrived:\n{page}");
            }
        }
    }
    for body in prompts {
        let (status, text) = send(&client, post(&addr, "/v1/completions", body.clone())).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        // Until the proxy took in every batch: one left off the stream
        // shows as a gap only when the next arrives, so an engine whose
        // last batch was lost is probed for another.
        let until = Instant::now() + Duration::from_secs(10);
        for (n, missed) in missed.iter().enumerate().filter(|_| events) {
            loop {
                let page = metrics(&client, &addr).await;
                if taken(&page, n) + missed >= published(n) as f64 {
                    break;
                }
                assert!(
                    Instant::now() < until,
                    "engine {n}'s batches not taken in:\n{page}"
                );
                if lose_every > 0 && published(n).is_multiple_of(u64::from(lose_every)) {
                    probe(n, &mut probes).await;
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }
    let page = nothing_booked(&client, &addr).await;
    let hits = engines.iter().map(|e| e.stats().hit_blocks.load(Relaxed)).sum();
    (total(&page, "workerpick_llm_credited_blocks_total"), hits, page)
}

/// Every other request one of 3 hot conversations of 4 blocks, which stay
/// cached; between them 12 others of 6 blocks, each back after 24
/// requests, by when engines of 24 blocks have evicted it.
fn evicting_prompts() -> Vec<String> {
    (0..96u32)
        .map(|i| match i % 2 {
            0 => tokens((i / 2) % 3, 4, i),
            _ => tokens(100 + (i / 2) % 12, 6, i),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engines_kv_events_credit_exactly_what_they_hold() {
    tokio::time::timeout(LIMIT, async {
        let prompts = evicting_prompts();
        let (credited, hits, page) = credit_against_hits(
            Feed::Events {
                lose_every: 0,
                replay: false,
            },
            &prompts,
        )
        .await;
        println!("exact: credited {credited}, engines hit {hits}");
        assert!(hits > 40, "a run where the caches are reused: {hits}\n{page}");
        // Every credited block was a hit and every hit was credited.
        assert_eq!(credited, hits as f64, "{page}");
        assert_eq!(total(&page, "workerpick_llm_events_gaps_total"), 0.0, "{page}");
        assert_eq!(total(&page, "workerpick_llm_credit_degraded"), 0.0, "{page}");
        assert!(
            page.contains("workerpick_llm_events_age_seconds{upstream="),
            "{page}"
        );
        // Routing alone credits what the engines evicted since.
        let (credited, hits, page) = credit_against_hits(Feed::Routing, &prompts).await;
        println!("approximate: credited {credited}, engines hit {hits}");
        assert!(
            !page.contains("workerpick_llm_events_age_seconds{"),
            "no age for upstreams without events:\n{page}"
        );
        assert!(
            credited > hits as f64,
            "approximate credit {credited} vs {hits} hits"
        );
    })
    .await
    .expect("the test took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_lost_from_the_stream_are_replayed_and_the_credit_stays_exact() {
    tokio::time::timeout(LIMIT, async {
        let prompts = evicting_prompts();
        // Every 5th batch left off each engine's PUB stream, its replay
        // socket given: each gap is filled and nothing is lost.
        let feed = Feed::Events {
            lose_every: 5,
            replay: true,
        };
        let (credited, hits, page) = credit_against_hits(feed, &prompts).await;
        println!("replayed: credited {credited}, engines hit {hits}");
        let gaps = total(&page, "workerpick_llm_events_gaps_total");
        assert!(gaps >= 10.0, "{page}");
        assert_eq!(
            total(&page, "workerpick_llm_events_repaired_total"),
            gaps,
            "{page}"
        );
        assert_eq!(total(&page, "workerpick_llm_events_resets_total"), 0.0, "{page}");
        assert_eq!(total(&page, "workerpick_llm_credit_degraded"), 0.0, "{page}");
        assert!(hits > 40, "{hits}\n{page}");
        assert_eq!(credited, hits as f64, "{page}");
        // Without the replay socket each gap drops the engine's holdings:
        // what it still caches goes uncredited.
        let feed = Feed::Events {
            lose_every: 5,
            replay: false,
        };
        let (credited, hits, page) = credit_against_hits(feed, &prompts).await;
        println!("not replayed: credited {credited}, engines hit {hits}");
        let gaps = total(&page, "workerpick_llm_events_gaps_total");
        assert!(gaps >= 10.0, "{page}");
        assert_eq!(total(&page, "workerpick_llm_events_resets_total"), gaps, "{page}");
        assert!(
            credited < hits as f64,
            "{credited} credited for {hits} hits\n{page}"
        );
    })
    .await
    .expect("the test took too long");
}
