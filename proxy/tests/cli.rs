//! The binary's command line: arguments it cannot run are refused at once with
//! one line and exit code 2, never a panic; `--help` prints usage and exits 0;
//! and a run in which requests fail exits non-zero.

use std::ffi::OsStr;
use std::fmt::Debug;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the proxy with `args`, killed after `limit`; returns (exit code,
/// stdout, stderr, whether it had to be killed).
fn proxy<S: AsRef<OsStr> + Debug>(args: &[S], limit: Duration) -> (Option<i32>, String, String, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_workerpick-proxy"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the proxy binary runs");
    let start = Instant::now();
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            killed = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (status.code(), stdout, stderr, killed)
}

/// `args` are refused at once (exit 2, nothing on stdout) with one line on
/// stderr that names `what`.
fn refused<S: AsRef<OsStr> + Debug>(args: &[S], what: &str) {
    let (code, stdout, stderr, killed) = proxy(args, Duration::from_secs(5));
    assert!(!killed, "{args:?}: ran instead of refusing: {stdout:?}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert_eq!(code, Some(2), "{args:?}: stdout {stdout:?} stderr {stderr:?}");
    assert_eq!(stdout, "", "{args:?}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr:?}");
    assert!(stderr.starts_with("workerpick-proxy: "), "{args:?}: {stderr:?}");
    assert!(stderr.contains(what), "{args:?}: {stderr:?} does not name {what}");
}

#[test]
fn arguments_it_cannot_run_are_refused_in_one_line() {
    refused(&["abc"], "abc");
    refused(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--upstreams-file",
            "/nonexistent/upstreams",
        ],
        "--upstreams-file",
    );
    refused(&["--bogus"], "--bogus");
    refused(&["--requests", "abc"], "--requests");
    refused(&["--requests", "-5"], "--requests");
    refused(&["--requests"], "--requests");
    refused(&["--requests", "0"], "--requests");
    refused(&["--concurrency", "0"], "--concurrency");
    refused(&["--concurrency", "20000"], "--concurrency");
    refused(&["--tokens", "4294967297"], "--tokens");
    refused(&["--cancel-every=x"], "--cancel-every");
    refused(&["bench", "--requests", "abc"], "--requests");
}

/// Before: an empty `--nats` URL, or a subject NATS cannot publish on, was
/// accepted and the replica served without ever syncing, saying nothing.
#[test]
fn a_nats_url_or_subject_it_cannot_use_is_refused() {
    fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let serve = ["serve", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1"];
        [&serve[..], extra].concat()
    }
    refused(&with(&["--nats", ""]), "--nats");
    refused(&with(&["--nats", " "]), "--nats");
    for subject in ["", "a b", "a..b", ".a", "a.", "a.*", "a.>", "a\tb"] {
        refused(
            &with(&["--nats", "nats://127.0.0.1:1", "--nats-subject", subject]),
            "--nats-subject",
        );
    }
}

/// `--queue` settings it cannot run are refused at once: no saturation rule,
/// a flag of the queue without it, beside `--max-in-flight`, a bad tenant.
#[test]
fn queue_settings_it_cannot_run_are_refused() {
    fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let serve = ["serve", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1"];
        [&serve[..], extra].concat()
    }
    refused(&with(&["--queue"]), "saturation rule");
    refused(&with(&["--queue-in-flight", "4"]), "required");
    refused(
        &with(&["--queue", "--queue-in-flight", "4", "--max-in-flight", "8"]),
        "--max-in-flight",
    );
    refused(&with(&["--queue=0", "--queue-in-flight", "4"]), "--queue");
    refused(
        &with(&["--queue", "--queue-in-flight", "4", "--queue-tenant", "web"]),
        "NAME=WEIGHT",
    );
    refused(
        &with(&[
            "--queue",
            "--queue-in-flight",
            "4",
            "--queue-tenant",
            "a=1",
            "--queue-tenant",
            "a=2",
        ]),
        "twice",
    );
    refused(
        &with(&[
            "--queue",
            "--queue-reported",
            "4",
            "--queue-classes",
            "2",
            "--queue-default-class",
            "2",
        ]),
        "--queue-default-class",
    );
}

/// Arguments that are not UTF-8, or empty, are refused like any other.
#[test]
fn arguments_that_are_not_text_are_refused() {
    let bad = OsStr::from_bytes(b"\xffx");
    refused(&[bad], "\u{fffd}x");
    refused(&[""], "''");
    refused(&["--requests", ""], "--requests");
    let serve = ["serve", "--listen", "127.0.0.1:0", "--upstream"].map(OsStr::new);
    refused(&[&serve[..], &[bad]].concat(), "UTF-8");
    refused(
        &["serve", "--listen", "127.0.0.1:0", "--upstream", ""],
        "--upstream",
    );
    refused(&["serve", "--listen", ""], "--listen");
}

#[test]
fn help_prints_usage_and_exits_0() {
    for args in [&["--help"][..], &["-h"], &["bench", "--help"]] {
        let (code, stdout, stderr, killed) = proxy(args, Duration::from_secs(5));
        assert!(!killed && code == Some(0), "{args:?}: {stdout:?} {stderr:?}");
        assert!(stdout.contains("--requests"), "{args:?}: {stdout}");
    }
    // serve's help says what a dead fleet answers, and the replicas' default mode.
    let (code, stdout, _, _) = proxy(&["serve", "--help"], Duration::from_secs(5));
    assert_eq!(code, Some(0));
    let text = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("a fleet that is down answers 502"), "{stdout}");
    assert!(text.contains("with --nats, replica-least-loaded"), "{stdout}");
}

#[test]
fn a_small_run_with_flag_equals_value_answers_everything() {
    let args = ["--requests=40", "--concurrency=4", "--tokens=1"];
    let (code, stdout, stderr, killed) = proxy(&args, Duration::from_secs(60));
    assert!(!killed, "{stdout}");
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("40 requests, 4 at once, 1 streamed"),
        "{stdout}"
    );
    assert!(stdout.contains("every request answered"), "{stdout}");
}

/// A deadline far too short for the requests: they go unanswered, and the
/// run says so and exits 1.
#[test]
fn a_run_whose_requests_fail_exits_non_zero() {
    let args = [
        "bench",
        "--requests",
        "400",
        "--concurrency",
        "2",
        "--deadline-ms",
        "1",
    ];
    let (code, stdout, stderr, killed) = proxy(&args, Duration::from_secs(60));
    assert!(!killed, "{stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("FAILED: requests without a complete answer"),
        "{stderr}"
    );
    assert!(!stdout.contains("every request answered"), "{stdout}");
}
