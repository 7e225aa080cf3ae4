//! What the tests that run `serve` as a binary share: starting it on an
//! ephemeral port, and killing it when a test ends before it exits; and the
//! HTTP client the LLM tests send through it with.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// Kills the proxy if the test ends before it has exited.
pub struct Proxy(pub Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `workerpick-proxy serve --listen 127.0.0.1:0` with `args`; returns
/// it and the address it printed (within 20 s, or the test fails).
pub fn start_proxy<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> (Proxy, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_workerpick-proxy"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let proxy = Proxy(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the proxy printed no address");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .expect(&line)
        .to_string();
    (proxy, addr)
}

/// A client for requests with whole bodies.
// Not every test file sends through a client (each compiles this module).
#[allow(dead_code)]
pub type TestClient = Client<HttpConnector, Full<Bytes>>;

/// A client without Nagle's delay: a test's small requests go at once.
#[allow(dead_code)]
pub fn client() -> TestClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).build(connector)
}

/// [`start_proxy`] with `args` and one `--upstream` per address of `upstreams`.
#[allow(dead_code)]
pub fn start_proxy_over(upstreams: &[std::net::SocketAddr], args: &[&str]) -> (Proxy, String) {
    let upstreams = upstreams
        .iter()
        .flat_map(|u| ["--upstream".to_string(), u.to_string()]);
    start_proxy(args.iter().map(|a| a.to_string()).chain(upstreams))
}
