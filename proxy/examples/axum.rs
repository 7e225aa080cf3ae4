//! A reverse proxy in axum: `HttpRoute` is a plain type, so it sits in the
//! router's state; each request clones it (one small allocation: its own
//! handle on the pool) and is forwarded to the least-loaded upstream, its
//! load held until the response body ends.
//!
//!     cargo run -p workerpick-proxy --example axum -- 127.0.0.1:8080 127.0.0.1:8081 127.0.0.1:8082
//!
//! (listen address first, then the upstreams; `--help` says so).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use std::ffi::OsString;
use std::process::ExitCode;
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

const USAGE: &str = "usage: axum LISTEN UPSTREAM...
  LISTEN    where to serve, host:port
  UPSTREAM  an upstream's host:port; one or more";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Help,
    Run {
        listen: String,
        upstreams: Vec<http::uri::Authority>,
    },
}

/// The arguments after the program's name (as the OS gave them: one that is
/// not UTF-8 is refused, not a panic); an error is one line.
fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut words = Vec::new();
    for arg in args {
        let arg = arg
            .into_string()
            .map_err(|a| format!("argument `{}` is not UTF-8 text", a.to_string_lossy()))?;
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            a if a.starts_with('-') => return Err(format!("unknown option `{a}`")),
            _ => words.push(arg),
        }
    }
    let mut words = words.into_iter();
    let listen = words.next().ok_or("give LISTEN and at least one UPSTREAM")?;
    let upstreams = words
        .map(|a| a.parse().map_err(|e| format!("UPSTREAM `{a}`: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    if upstreams.is_empty() {
        return Err("give at least one UPSTREAM after LISTEN".into());
    }
    Ok(Command::Run { listen, upstreams })
}

fn main() -> ExitCode {
    let (listen, upstreams) = match parse(std::env::args_os().skip(1)) {
        Ok(Command::Run { listen, upstreams }) => (listen, upstreams),
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("axum: {e} (see --help)");
            return ExitCode::from(2);
        }
    };
    let served = tokio::runtime::Runtime::new()
        .map_err(Into::into)
        .and_then(|rt| rt.block_on(serve(&listen, upstreams)));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("axum: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(listen: &str, upstreams: Vec<http::uri::Authority>) -> Result<(), Box<dyn std::error::Error>> {
    let pool = Arc::new(Pool::from_workers(upstreams)?);
    let route: HttpRoute<Body> =
        HttpRoute::forward(&pool, Registry::new().resolve("least-loaded")?, http_client());
    let app = axum::Router::new().fallback(forward).with_state(route);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    println!("listening on {}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Command, parse};
    use std::ffi::OsString;

    fn args(a: &[&str]) -> Result<Command, String> {
        parse(a.iter().map(|s| (*s).into()))
    }

    #[test]
    fn listen_then_upstreams() {
        let Ok(Command::Run { listen, upstreams }) = args(&["127.0.0.1:0", "a:1", "b:2"]) else {
            panic!("runs");
        };
        assert_eq!(listen, "127.0.0.1:0");
        assert_eq!(upstreams.len(), 2);
        assert_eq!(args(&["x", "--help"]), Ok(Command::Help));
    }

    /// Before: `--help` was taken for the listen address, a bad upstream or a
    /// missing one printed a `Debug` error with exit 1.
    #[test]
    fn what_it_cannot_run_is_one_line_naming_the_argument() {
        for (bad, names) in [
            (&[][..], "LISTEN"),
            (&["127.0.0.1:0"], "UPSTREAM"),
            (&["127.0.0.1:0", "a b:1"], "`a b:1`"),
            (&["127.0.0.1:0", ""], "UPSTREAM ``"),
            (&["--bogus"], "--bogus"),
        ] {
            let e = args(bad).unwrap_err();
            assert!(e.contains(names) && !e.contains('\n'), "{bad:?}: {e}");
        }
    }

    /// Before: `std::env::args()` panicked on it (exit 101).
    #[cfg(unix)]
    #[test]
    fn an_argument_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(b"h\xff:1".to_vec());
        let e = parse([OsString::from("127.0.0.1:0"), bad]).unwrap_err();
        assert!(e.contains("not UTF-8") && e.contains("h\u{fffd}:1"), "{e}");
    }
}
