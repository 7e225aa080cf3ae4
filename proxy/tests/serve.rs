//! `workerpick-proxy serve` as a user runs it: the binary, started on
//! 127.0.0.1 with an ephemeral port in front of real upstreams (two healthy,
//! one answering 500, one refusing connections), driven by an HTTP client.
//! It balances by capacity, ejects the failing upstreams, reports all of it
//! on /metrics, and on SIGTERM finishes the request in flight before it exits.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::convert::Infallible;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use workerpick_proxy::server::Server;
use workerpick_proxy::upstream::{Speed, Upstream, refusing_addr};

/// The test ends by itself well before this.
const LIMIT: Duration = Duration::from_secs(60);

/// Kills the proxy if the test ends before it has exited.
struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

type TestClient = Client<HttpConnector, Empty<Bytes>>;

async fn get(client: &TestClient, url: &str) -> (StatusCode, String) {
    let response = client.get(url.parse().unwrap()).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The value of `family{upstream="addr"}` on a metrics page.
fn metric(page: &str, family: &str, upstream: &str) -> u64 {
    let key = format!("{family}{{upstream=\"{upstream}\"}} ");
    let line = page.lines().find_map(|l| l.strip_prefix(&key));
    line.unwrap_or_else(|| panic!("no {key} in:\n{page}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_balances_ejects_failing_upstreams_reports_metrics_and_drains_on_sigterm() {
    tokio::time::timeout(LIMIT, async {
        let speed = Speed {
            first_byte: Duration::from_millis(1),
            per_token: Duration::from_millis(50),
        };
        let small = Upstream::start(speed).await.unwrap();
        let big = Upstream::start(speed).await.unwrap();
        let failing = Server::start(|| {
            service_fn(|_| async {
                let mut answer = Response::new(Full::new(Bytes::from_static(b"broken\n")));
                *answer.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                Ok::<_, Infallible>(answer)
            })
        })
        .await
        .unwrap();
        let down = refusing_addr().await.unwrap();

        let mut child = Command::new(env!("CARGO_BIN_EXE_workerpick-proxy"))
            .args(["serve", "--listen", "127.0.0.1:0", "--mode", "round-robin"])
            .args(["--fail-after", "2", "--eject-ms", "60000", "--drain-ms", "10000"])
            .args(["--upstream", &small.addr().to_string()])
            .args(["--upstream", &format!("{}=2", big.addr())])
            .args(["--upstream", &failing.addr().to_string()])
            .args(["--upstream", &down.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let proxy = Proxy(child);
        let (line_tx, line_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = line_tx.send(line);
        });
        let line = line_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the proxy printed no address");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .expect(&line)
            .to_string();
        let client: TestClient = Client::builder(TokioExecutor::new()).build_http();

        // Each failing upstream fails twice, is ejected, and gets no more.
        let mut statuses = Vec::new();
        for _ in 0..40 {
            statuses.push(get(&client, &format!("http://{addr}/stream?tokens=0")).await.0);
        }
        let count = |s: StatusCode| statuses.iter().filter(|&&x| x == s).count();
        assert_eq!(count(StatusCode::INTERNAL_SERVER_ERROR), 2, "{statuses:?}"); // passed through
        assert_eq!(count(StatusCode::BAD_GATEWAY), 2, "{statuses:?}"); // connection refused
        assert_eq!(count(StatusCode::OK), 36, "{statuses:?}");
        assert!(
            statuses[12..].iter().all(|&s| s == StatusCode::OK),
            "{statuses:?}"
        );
        // Capacity 2 against 1: the big one takes more (round-robin's turns
        // skipped over the ejected upstreams shift the exact split).
        let (s, b) = (small.served(), big.served());
        assert_eq!(s + b, 36);
        assert!(s > 0 && b > s, "small {s}, big {b}");

        let (status, page) = get(&client, &format!("http://{addr}/metrics")).await;
        assert_eq!(status, StatusCode::OK);
        let (small_a, big_a, failing_a, down_a) = (
            small.addr().to_string(),
            big.addr().to_string(),
            failing.addr().to_string(),
            down.to_string(),
        );
        assert_eq!(metric(&page, "workerpick_upstream_picks_total", &small_a), s);
        assert_eq!(metric(&page, "workerpick_upstream_picks_total", &big_a), b);
        for (upstream, errors, healthy) in [
            (&small_a, 0, 1),
            (&big_a, 0, 1),
            (&failing_a, 2, 0),
            (&down_a, 2, 0),
        ] {
            assert_eq!(
                metric(&page, "workerpick_upstream_errors_total", upstream),
                errors
            );
            assert_eq!(metric(&page, "workerpick_upstream_healthy", upstream), healthy);
            assert_eq!(metric(&page, "workerpick_upstream_in_flight", upstream), 0);
        }
        assert!(page.contains("# TYPE workerpick_upstream_picks_total counter"));

        // SIGTERM during a 10-chunk (500 ms) stream: it arrives whole, then the proxy exits 0.
        let slow = tokio::spawn({
            let client = client.clone();
            let url = format!("http://{addr}/stream?tokens=10");
            async move { get(&client, &url).await }
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        let pid = proxy.0.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let (status, body) = slow.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "token\n".repeat(10));
        let mut proxy = proxy;
        let exited = (0..100).find_map(|_| {
            let done = proxy.0.try_wait().unwrap();
            if done.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            done
        });
        assert!(
            exited
                .expect("the proxy did not exit within 5 s of SIGTERM")
                .success()
        );

        small.stop().await;
        big.stop().await;
        failing.stop().await;
    })
    .await
    .expect("the test ran past its limit");
}
