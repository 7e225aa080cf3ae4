//! Three `workerpick-proxy serve` replicas in front of one fleet, sharing load
//! over a real NATS server (`nats-server`, started here on 127.0.0.1 with an
//! ephemeral port), against three that count only their own requests.
//!
//! Under real concurrent traffic (client tasks in parallel against every
//! replica, upstreams that hold each request for [`HOLD`]), synced replicas
//! seldom send a request to an upstream that already holds one; replicas
//! counting alone do so for about a third of their requests. Faults: the bus
//! is killed mid-run (requests routed meanwhile succeed on local counts, the
//! peers' reports age out, nothing leaks, sync resumes when the bus is back)
//! and a replica is killed (its load ages out of the others). The unsynced
//! replicas also bound their requests in flight (`--max-in-flight`): one over
//! is shed with 503.
//!
//! Skips, saying so, where `nats-server` is not installed (Debian: `apt-get
//! install nats-server`), unless `WORKERPICK_REQUIRE_NATS` is set to anything
//! but `0` (`ci/test.sh` sets it): then a missing server fails the test.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::convert::Infallible;
use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use workerpick_proxy::server::Server;

/// The test ends by itself well before this.
const LIMIT: Duration = Duration::from_secs(60);
/// How long a peer's summary counts (`--report-max-age-ms`).
const MAX_AGE_MS: u64 = 300;
/// How often each replica publishes (`--sync-ms`): 1/25 of [`HOLD`], inside
/// the rule of 1/20 of a request's duration.
const SYNC_MS: u64 = 2;
/// Upstreams in the fleet, and requests held on it at once.
const UPSTREAMS: usize = 12;
/// How long, on average, an upstream holds each request of the concurrent
/// load (each draws 50..150 % of it, so the clients fall out of step).
const HOLD: Duration = Duration::from_millis(50);
/// Client tasks per replica in the concurrent load, each sending its next
/// request when its last one is answered: half the fleet busy at once.
const CLIENTS_PER_REPLICA: usize = 2;
/// Requests each client task sends in a load phase.
const REQUESTS_PER_CLIENT: usize = 30;

/// A child process, killed if the test ends first.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Process {
    /// Starts `command` and returns it with the first line of its output
    /// (stdout, or stderr when `on_stderr`) that `wanted` picks a value from.
    fn start(mut command: Command, on_stderr: bool, wanted: fn(&str) -> Option<String>) -> (Self, String) {
        let out = if on_stderr { Stdio::null() } else { Stdio::piped() };
        let err = if on_stderr {
            Stdio::piped()
        } else {
            Stdio::inherit()
        };
        let mut child = command.stdout(out).stderr(err).spawn().unwrap();
        let lines: Box<dyn std::io::Read + Send> = if on_stderr {
            Box::new(child.stderr.take().unwrap())
        } else {
            Box::new(child.stdout.take().unwrap())
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(lines).lines() {
                let Ok(line) = line else { break };
                if let Some(value) = wanted(&line) {
                    let _ = tx.send(value);
                }
            }
        });
        let value = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("{command:?} printed no line it should"));
        (Self(child), value)
    }
}

/// `nats-server` on PATH or where Debian puts it.
fn nats_server() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/bin".into()])
        .map(|dir| dir.join("nats-server"))
        .find(|p| p.is_file())
}

/// A NATS server on 127.0.0.1: on a free port (`None`) or on `port` again.
fn start_bus(binary: &PathBuf, port: Option<u16>) -> (Process, u16) {
    let mut command = Command::new(binary);
    let port_arg = port.map_or("-1".to_string(), |p| p.to_string());
    command.args(["-a", "127.0.0.1", "-p", &port_arg]);
    let (bus, addr) = Process::start(command, true, |line| {
        let (_, addr) = line.split_once("Listening for client connections on ")?;
        Some(addr.trim().to_string())
    });
    let port = addr.rsplit_once(':').unwrap().1.parse().unwrap();
    (bus, port)
}

/// One upstream: holds `/held` requests until released and every other one
/// for [`HOLD`], counting how many it holds at once, the most it held, and the
/// requests that arrived while it held another (crowded).
struct Held {
    server: Server,
    holding: Arc<AtomicU32>,
    peak: Arc<AtomicU32>,
    crowded: Arc<AtomicU32>,
}

/// Takes one back from the count when the request ends, however it ends.
struct Holding(Arc<AtomicU32>);

impl Drop for Holding {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

async fn held_upstream(release: watch::Receiver<u64>) -> Held {
    let holding = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let crowded = Arc::new(AtomicU32::new(0));
    let (h, p, c) = (holding.clone(), peak.clone(), crowded.clone());
    let server = Server::start(move || {
        let (h, p, c, release) = (h.clone(), p.clone(), c.clone(), release.clone());
        service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let (h, p, c, mut release) = (h.clone(), p.clone(), c.clone(), release.clone());
            async move {
                let now = h.fetch_add(1, SeqCst) + 1;
                p.fetch_max(now, SeqCst);
                if now > 1 {
                    c.fetch_add(1, SeqCst);
                }
                let _holding = Holding(h);
                if request.uri().path() == "/held" {
                    let until = *release.borrow_and_update() + 1;
                    let _ = release.wait_for(|&r| r >= until).await;
                } else {
                    tokio::time::sleep(HOLD.mul_f64(0.5 + draw())).await;
                }
                Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"done\n"))))
            }
        })
    })
    .await
    .unwrap();
    Held {
        server,
        holding,
        peak,
        crowded,
    }
}

/// A number in [0, 1), a new one each call (splitmix64 over a shared counter).
fn draw() -> f64 {
    static NEXT: AtomicU64 = AtomicU64::new(0x5eed);
    let mut z = NEXT.fetch_add(0x9e37_79b9_7f4a_7c15, SeqCst);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as f64 / 2f64.powi(64)
}

/// What a load phase did to the fleet.
#[derive(Debug)]
struct Spread {
    /// Requests sent (every one answered 200).
    requests: u32,
    /// The most requests one upstream held at once.
    peak: u32,
    /// Requests that arrived at an upstream already holding one.
    crowded: u32,
}

/// Concurrent load: [`CLIENTS_PER_REPLICA`] tasks per replica, in parallel,
/// each sending `per_client` requests one after the other (each held
/// [`HOLD`] by its upstream). Every request must be answered 200.
async fn load(client: &TestClient, replicas: &[String], fleet: &[Held], per_client: usize) -> Spread {
    for u in fleet {
        u.peak.store(0, SeqCst);
        u.crowded.store(0, SeqCst);
    }
    let tasks: Vec<JoinHandle<()>> = replicas
        .iter()
        .flat_map(|via| std::iter::repeat_n(via.clone(), CLIENTS_PER_REPLICA))
        .enumerate()
        .map(|(k, via)| {
            let c = client.clone();
            tokio::spawn(async move {
                // Staggered starts: the clients do not send in step.
                let clients = 3 * CLIENTS_PER_REPLICA as u32;
                tokio::time::sleep(HOLD * k as u32 / clients).await;
                for _ in 0..per_client {
                    let url = format!("http://{via}/work").parse().unwrap();
                    let response = c.get(url).await.expect("the replica answers");
                    assert_eq!(response.status(), StatusCode::OK, "via {via}");
                    response.into_body().collect().await.unwrap();
                }
            })
        })
        .collect();
    let requests = (tasks.len() * per_client) as u32;
    for t in futures_join(tasks).await {
        let () = t;
    }
    Spread {
        requests,
        peak: peak(fleet),
        crowded: fleet.iter().map(|u| u.crowded.load(SeqCst)).sum(),
    }
}

type TestClient = Client<HttpConnector, Empty<Bytes>>;

/// A replica: the proxy binary over the whole fleet, with sync over `bus`
/// (the fleet named by an `--upstreams-file`) or without (by `--upstream`s).
fn start_replica(fleet: &[Held], bus: Option<u16>) -> (Process, String) {
    // Each in its default mode: replica-least-loaded with --nats, least-loaded without.
    let mut command = Command::new(env!("CARGO_BIN_EXE_workerpick-proxy"));
    command.args(["serve", "--listen", "127.0.0.1:0"]);
    let mut listed = None;
    if bus.is_some() {
        let file = std::env::temp_dir().join(format!("workerpick-replicas-{}.txt", std::process::id()));
        let mut text = String::from("# the fleet, one upstream a line\n");
        for u in fleet {
            text += &format!("{}=1\n", u.server.addr());
        }
        std::fs::write(&file, text).unwrap();
        command.arg("--upstreams-file").arg(&file);
        listed = Some(file);
    } else {
        for u in fleet {
            command.args(["--upstream", &u.server.addr().to_string()]);
        }
        // Its share of the run: one more is shed.
        command.args(["--max-in-flight", &(UPSTREAMS / 3).to_string()]);
    }
    if let Some(port) = bus {
        command.args(["--nats", &format!("nats://127.0.0.1:{port}")]);
        command.args(["--sync-ms", &SYNC_MS.to_string()]);
        command.args(["--report-max-age-ms", &MAX_AGE_MS.to_string()]);
    }
    let started = Process::start(command, false, |line| {
        line.strip_prefix("listening on ").map(|a| a.trim().to_string())
    });
    if let Some(file) = listed {
        let _ = std::fs::remove_file(file); // read before it listens
    }
    started
}

async fn metrics(client: &TestClient, addr: &str) -> String {
    let response = client
        .get(format!("http://{addr}/metrics").parse().unwrap())
        .await
        .unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// The sum of a family's values over every upstream (or its one value).
fn total(page: &str, family: &str) -> u64 {
    page.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix(family))
        .filter(|rest| rest.starts_with('{') || rest.starts_with(' '))
        .map(|rest| rest.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

/// What one replica's page says: (peers, own in flight, reported by peers).
async fn view(client: &TestClient, addr: &str) -> (u64, u64, u64) {
    let page = metrics(client, addr).await;
    (
        total(&page, "workerpick_replica_peers"),
        total(&page, "workerpick_upstream_in_flight"),
        total(&page, "workerpick_upstream_reported_load"),
    )
}

/// Polls `check` every 5 ms until it holds; panics naming `what` after 10 s.
/// Returns how long it took.
async fn until<F: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) -> Duration {
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    start.elapsed()
}

/// Sends `UPSTREAMS` requests, one at a time, through the replicas in turn;
/// each is held by its upstream before the next is sent, and (`synced`) every
/// other replica has its sender's summary with it. Returns the requests.
async fn drive(
    client: &TestClient,
    replicas: &[String],
    fleet: &[Held],
    synced: bool,
) -> Vec<JoinHandle<Option<StatusCode>>> {
    let mut sent = Vec::new();
    for k in 0..UPSTREAMS {
        let via = &replicas[k % replicas.len()];
        let url = format!("http://{via}/held");
        let c = client.clone();
        sent.push(tokio::spawn(async move {
            c.get(url.parse().unwrap()).await.ok().map(|r| r.status())
        }));
        let held = k as u32 + 1;
        until("the request reaches its upstream", || async {
            fleet.iter().map(|u| u.holding.load(SeqCst)).sum::<u32>() == held
        })
        .await;
        if synced {
            for (i, other) in replicas.iter().enumerate() {
                // Requests sent so far through the replicas other than `i`.
                let others = (0..=k).filter(|j| j % replicas.len() != i).count() as u64;
                until("the summaries reach every replica", || async {
                    view(client, other).await.2 == others
                })
                .await;
            }
        }
    }
    sent
}

fn peak(fleet: &[Held]) -> u32 {
    fleet.iter().map(|u| u.peak.load(SeqCst)).max().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_load_over_nats_and_survive_the_bus_and_a_replica_dying() {
    let Some(binary) = nats_server() else {
        let required = std::env::var_os("WORKERPICK_REQUIRE_NATS").is_some_and(|v| v != "0");
        assert!(
            !required,
            "WORKERPICK_REQUIRE_NATS is set but nats-server is not installed (Debian: apt-get install nats-server)"
        );
        eprintln!("SKIPPED: nats-server is not installed (Debian: apt-get install nats-server)");
        return;
    };
    tokio::time::timeout(LIMIT, async {
        let (release, released) = watch::channel(0u64);
        let mut fleet = Vec::new();
        for _ in 0..UPSTREAMS {
            fleet.push(held_upstream(released.clone()).await);
        }
        let client: TestClient = Client::builder(TokioExecutor::new()).build_http();
        let (bus, port) = start_bus(&binary, None);

        // Synced: each of the 12 requests finds an idle upstream.
        let mut procs = Vec::new();
        let mut addrs = Vec::new();
        for _ in 0..3 {
            let (p, a) = start_replica(&fleet, Some(port));
            procs.push(p);
            addrs.push(a);
        }
        for a in &addrs {
            until("every replica hears the other two", || async {
                view(&client, a).await.0 == 2
            })
            .await;
        }
        let synced = load(&client, &addrs, &fleet, REQUESTS_PER_CLIENT).await;
        for a in &addrs {
            until("the load's bookings end", || async {
                view(&client, a).await == (2, 0, 0)
            })
            .await;
        }

        // Held requests, one at a time, each once every replica knows the last.
        for u in &fleet {
            u.peak.store(0, SeqCst);
        }
        let synced_requests = drive(&client, &addrs, &fleet, true).await;
        assert_eq!(
            peak(&fleet),
            1,
            "with sync every request lands on an idle upstream"
        );

        // The bus dies: the peers' reports age out, own counts stay exact.
        drop(bus);
        let mut aged = Duration::ZERO;
        for a in &addrs {
            let took = until("the peers' reports age out with the bus gone", || async {
                view(&client, a).await == (0, 4, 0)
            })
            .await;
            aged = aged.max(took);
        }
        assert!(
            aged >= Duration::from_millis(MAX_AGE_MS / 2),
            "aged out after {aged:?}: too early"
        );
        // Requests routed with the bus gone succeed on each replica's own counts,
        // and leave nothing booked.
        let outage = load(&client, &addrs, &fleet, 5).await;
        for a in &addrs {
            until("the outage's requests end", || async {
                view(&client, a).await == (0, 4, 0)
            })
            .await;
        }
        // It comes back on the same port: sync resumes by itself.
        let (bus, _) = start_bus(&binary, Some(port));
        let mut resumed = Duration::ZERO;
        for a in &addrs {
            let took = until("sync resumes with the bus back", || async {
                view(&client, a).await == (2, 4, 8)
            })
            .await;
            resumed = resumed.max(took);
        }

        // A replica dies: its load ages out of the other two.
        drop(procs.pop());
        let dead = addrs.pop().unwrap();
        for a in &addrs {
            until("the dead replica's load ages out", || async {
                view(&client, a).await == (1, 4, 4)
            })
            .await;
        }

        // Every request ends: nothing stays booked or reported.
        release.send_modify(|r| *r += 1);
        for a in &addrs {
            until("nothing left booked", || async {
                view(&client, a).await == (1, 0, 0)
            })
            .await;
        }
        let answers: Vec<_> = futures_join(synced_requests).await;
        for (k, status) in answers.iter().enumerate() {
            let via = &[addrs[0].as_str(), addrs[1].as_str(), dead.as_str()][k % 3];
            if via == &dead.as_str() {
                assert!(status.is_none(), "a request through the killed replica answered");
            } else {
                assert_eq!(*status, Some(StatusCode::OK));
            }
        }
        drop(procs);
        drop(bus);
        until("the fleet is idle", || async {
            fleet.iter().all(|u| u.holding.load(SeqCst) == 0)
        })
        .await;

        // The same requests through replicas that count only their own.
        for u in &fleet {
            u.peak.store(0, SeqCst);
        }
        let mut procs = Vec::new();
        let mut addrs = Vec::new();
        for _ in 0..3 {
            let (p, a) = start_replica(&fleet, None);
            procs.push(p);
            addrs.push(a);
        }
        let local = load(&client, &addrs, &fleet, REQUESTS_PER_CLIENT).await;
        let local_requests = drive(&client, &addrs, &fleet, false).await;
        // Each holds its `--max-in-flight`: one more is answered 503 at once.
        let over = client
            .get(format!("http://{}/held", addrs[0]).parse().unwrap())
            .await
            .unwrap();
        assert_eq!(over.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            total(&metrics(&client, &addrs[0]).await, "workerpick_shed_total"),
            1
        );
        release.send_modify(|r| *r += 1);
        for status in futures_join(local_requests).await {
            assert_eq!(status, Some(StatusCode::OK));
        }
        eprintln!(
            "{} requests through 3 replicas, {} in flight, {HOLD:?} each, on {UPSTREAMS} upstreams: \
             synced: peak {} per upstream, {} crowded; local counts: peak {}, {} crowded; \
             bus gone: reports aged out in {aged:?} (limit {MAX_AGE_MS} ms), {} requests routed \
             meanwhile; bus back: synced again in {resumed:?}",
            synced.requests,
            3 * CLIENTS_PER_REPLICA,
            synced.peak,
            synced.crowded,
            local.peak,
            local.crowded,
            outage.requests,
        );
        // Counting alone, a replica sends a request where the others' are
        // (about a third of the time here); synced, it seldom does. Asserted with
        // a factor-2 margin for a loaded machine, where summaries come late.
        assert!(
            local.crowded * 5 >= local.requests,
            "local counts crowded only {local:?}: the load shows nothing"
        );
        assert!(
            synced.crowded * 2 < local.crowded,
            "synced {synced:?} against local counts {local:?}"
        );
        assert!(synced.peak <= local.peak, "synced {synced:?}, local {local:?}");
        drop(procs);
        for u in fleet {
            u.server.stop().await;
        }
    })
    .await
    .expect("the test ran past its limit");
}

async fn futures_join<T>(handles: Vec<JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
