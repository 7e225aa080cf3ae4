//! Three `workerpick-proxy serve` replicas in front of one fleet, sharing load
//! over a real NATS server (`nats-server`, started here on 127.0.0.1 with an
//! ephemeral port): with sync, every request lands on an idle upstream
//! (per-upstream peak 1); the same requests through three replicas that count
//! only their own land on one another's. Faults: the bus is killed mid-run
//! (every replica falls back to its own counts, the peers' reports age out,
//! nothing leaks, sync resumes when the bus is back) and a replica is killed
//! (its load ages out of the others). The unsynced replicas also bound their
//! requests in flight (`--max-in-flight`): one over is shed with 503.
//!
//! Skips, saying so, where `nats-server` is not installed (Debian: `apt-get
//! install nats-server`), unless `WORKERPICK_REQUIRE_NATS` is set (CI sets it).

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
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use workerpick_proxy::server::Server;

/// The test ends by itself well before this.
const LIMIT: Duration = Duration::from_secs(60);
/// How long a peer's summary counts (`--report-max-age-ms`).
const MAX_AGE_MS: u64 = 300;
/// How often each replica publishes (`--sync-ms`).
const SYNC_MS: u64 = 10;
/// Upstreams in the fleet, and requests held on it at once.
const UPSTREAMS: usize = 12;

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

/// One upstream: holds every request until released, counting how many it
/// holds at once.
struct Held {
    server: Server,
    holding: Arc<AtomicU32>,
    peak: Arc<AtomicU32>,
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
    let (h, p) = (holding.clone(), peak.clone());
    let server = Server::start(move || {
        let (h, p, release) = (h.clone(), p.clone(), release.clone());
        service_fn(move |_| {
            let (h, p, mut release) = (h.clone(), p.clone(), release.clone());
            async move {
                let now = h.fetch_add(1, SeqCst) + 1;
                p.fetch_max(now, SeqCst);
                let _holding = Holding(h);
                let until = *release.borrow_and_update() + 1;
                let _ = release.wait_for(|&r| r >= until).await;
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
    }
}

type TestClient = Client<HttpConnector, Empty<Bytes>>;

/// A replica: the proxy binary over the whole fleet, with sync over `bus`
/// (the fleet named by an `--upstreams-file`) or without (by `--upstream`s).
fn start_replica(fleet: &[Held], bus: Option<u16>) -> (Process, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_workerpick-proxy"));
    command.args(["serve", "--listen", "127.0.0.1:0", "--mode", "least-loaded"]);
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
        assert!(
            std::env::var_os("WORKERPICK_REQUIRE_NATS").is_none(),
            "WORKERPICK_REQUIRE_NATS is set but nats-server is not installed"
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
        let synced_requests = drive(&client, &addrs, &fleet, true).await;
        let synced_peak = peak(&fleet);
        assert_eq!(
            synced_peak, 1,
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
        let local_requests = drive(&client, &addrs, &fleet, false).await;
        let local_peak = peak(&fleet);
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
            "per-upstream peak over {UPSTREAMS} requests through 3 replicas: synced {synced_peak}, \
             local-only {local_peak}; bus gone: reports aged out in {aged:?} (limit {MAX_AGE_MS} ms); \
             bus back: synced again in {resumed:?}"
        );
        assert!(local_peak >= synced_peak);
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
