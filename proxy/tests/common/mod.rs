//! What the tests that run `serve` as a binary share: starting it on an
//! ephemeral port, and killing it when a test ends before it exits.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

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
