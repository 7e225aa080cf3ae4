//! Runs the proxy in every mode against its own upstreams and prints, per
//! mode, requests/s, latency p50/p99 and the requests each upstream got,
//! beside tower's p2c (through a `Buffer`) and a direct connection (the floor).
//!
//!     cargo run -p workerpick-proxy --release -- [bench] [--requests N] [--concurrency C] [--tokens T]
//!
//! `serve` puts it in front of upstreams of your own instead (see `serve --help`):
//!
//!     workerpick-proxy serve --listen 0.0.0.0:8080 --upstream 10.0.0.1:8000 --upstream 10.0.0.2:8000=2
//!
//! Exits 0 when every request was answered and no load stayed booked, 1 when
//! not, and 2 (with a one-line message) on arguments it cannot run.

use clap::{Args, Parser, Subcommand};
use std::process::ExitCode;
use std::time::Duration;
use workerpick_proxy::llm::LlmConfig;
use workerpick_proxy::load::Plan;
use workerpick_proxy::serve::{self, Config, Replicas, UpstreamSpec};
use workerpick_proxy::upstream::Speed;
use workerpick_proxy::{Fleet, Router, measure, modes};

/// An HTTP reverse proxy that routes with workerpick.
#[derive(Parser, Debug)]
#[command(
    version,
    allow_negative_numbers = true,
    args_conflicts_with_subcommands = true,
    after_help = "Exit status: 0 when every request got a complete answer and no load stayed booked, \
                  1 when not, 2 on arguments it cannot run."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    // With no command, these are the benchmark's flags.
    #[command(flatten)]
    bench: Bench,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Starts its own upstreams and drives every mode with a bounded load
    /// generator, beside tower's p2c and a direct connection (the default).
    Bench(Bench),
    /// Serves outside traffic: forwards every request but `GET /metrics`
    /// (Prometheus text) to the upstreams, until SIGTERM or ctrl-c.
    Serve(Box<Serve>),
}

#[derive(Args, Debug)]
struct Serve {
    /// Where to listen (port 0: any free port; the address is printed).
    #[arg(long, value_name = "ADDR")]
    listen: std::net::SocketAddr,
    /// An upstream, host:port, with its capacity weight after `=` (default
    /// 1), and for an LLM engine its KV event sockets
    /// (`,events=tcp://HOST:PORT[,replay=tcp://HOST:PORT]`: exact credit for
    /// token prompts); repeat for each.
    #[arg(
        long = "upstream",
        value_name = "ADDR[=CAP][,events=..]",
        required_unless_present = "upstreams_file"
    )]
    upstreams: Vec<UpstreamSpec>,
    /// A file of upstreams, one `ADDR[=CAP][,events=..]` a line (blank lines and `#`
    /// comments skipped), added to any `--upstream`.
    #[arg(long, value_name = "PATH")]
    upstreams_file: Option<std::path::PathBuf>,
    /// The mode to route in: any name the registry knows (random, round-robin,
    /// power-of-two, least-loaded, ..., replica-least-loaded; a wrong name lists
    /// them all) [default: least-loaded; with --nats, replica-least-loaded,
    /// which counts the other replicas' load at half its own so that replicas
    /// do not all send their next requests to the same upstream].
    #[arg(long, value_name = "NAME", value_parser = mode_name)]
    mode: Option<String>,
    /// Consecutive failures (5xx, connect or response errors) that eject an
    /// upstream. With every upstream ejected, requests go on to all of them as
    /// if none were (panic routing): a fleet that is down answers 502 (or the
    /// upstreams' own 5xx), not 503, so a burst of errors across the fleet
    /// cannot stop all traffic for --eject-ms. 503 means no upstream could be
    /// named at all, or --max-in-flight shed the request.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    fail_after: u32,
    /// How long an ejected upstream stays out, in ms.
    #[arg(long, value_name = "MS", default_value_t = 5_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    eject_ms: u64,
    /// On SIGTERM, how long requests in flight may take to finish, in ms.
    #[arg(long, value_name = "MS", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(0..=86_400_000))]
    drain_ms: u64,
    /// Requests in flight at once, over all upstreams; one more is answered
    /// 503 at once (shed), not queued. Unbounded without it. Counts every
    /// path, the LLM paths included (an LLM request holds its place until
    /// its answer's stream ends).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_in_flight: Option<u32>,
    /// Queue requests instead of shedding them: while every upstream is
    /// saturated (--queue-in-flight, --queue-reported) a request waits, in
    /// one of SLOTS waiter slots [default: 1024], for its priority class
    /// (`x-workerpick-priority`), then its tenant's fair share
    /// (`x-workerpick-tenant`), until its deadline (`x-workerpick-deadline-ms`
    /// or --queue-deadline-ms: then 408). A full queue answers 429. Every
    /// path waits, the LLM paths weighed by their uncached prompt blocks.
    #[arg(long, value_name = "SLOTS", num_args = 0..=1, require_equals = true,
          default_missing_value = "1024", conflicts_with = "max_in_flight",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 24))]
    queue: Option<usize>,
    /// --queue: an upstream is saturated at this load booked per unit of its
    /// capacity weight (a pass-through request books 1, an LLM request its
    /// prompt blocks plus its decode share, less its cached blocks).
    #[arg(long, value_name = "N", requires = "queue",
          value_parser = clap::value_parser!(u32).range(1..))]
    queue_in_flight: Option<u32>,
    /// --queue: an upstream is saturated at this load reported for it by the
    /// other replicas (--nats).
    #[arg(long, value_name = "N", requires = "queue",
          value_parser = clap::value_parser!(u32).range(1..))]
    queue_reported: Option<u32>,
    /// --queue: strict priority classes, 0 (served first) to N-1, named by
    /// the `x-workerpick-priority` header.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=8))]
    queue_classes: usize,
    /// --queue: the class of a request without `x-workerpick-priority`.
    #[arg(long, value_name = "CLASS", default_value_t = 0,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..8))]
    queue_default_class: usize,
    /// --queue: a tenant and its fair-share weight, named by the
    /// `x-workerpick-tenant` header (an unknown name is answered 400); repeat
    /// for each (at most 64). The first is the tenant of a request without
    /// the header [default: one tenant, `default=1`].
    #[arg(long = "queue-tenant", value_name = "NAME=WEIGHT", value_parser = serve::queue::tenant)]
    queue_tenants: Vec<(String, u32)>,
    /// --queue: how long a request without `x-workerpick-deadline-ms` may
    /// wait, in ms; then it is answered 408.
    #[arg(long, value_name = "MS", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    queue_deadline_ms: u64,
    /// --queue: order each class shortest uncached first, aging by this many
    /// tokens per ms waited, instead of by the tenants' fair shares.
    #[arg(long, value_name = "AGING", requires = "queue",
          value_parser = clap::value_parser!(u32).range(1..))]
    queue_shortest_first: Option<u32>,
    /// Share load with the other replicas in front of the same upstreams over
    /// this NATS server (`nats://host:port`): publish this replica's summary,
    /// apply theirs. Without it, each replica counts only its own requests.
    #[arg(long, value_name = "URL", value_parser = nats_url)]
    nats: Option<String>,
    /// The subject the replicas of one fleet share.
    #[arg(
        long,
        value_name = "SUBJECT",
        default_value = "workerpick.summary",
        requires = "nats",
        value_parser = nats_subject
    )]
    nats_subject: String,
    /// How often this replica publishes its summary, in ms. Keep it at most
    /// 1/20 of a typical request's duration (the default suits requests of
    /// 100 ms and more): a longer period lets the replicas pile onto the same
    /// upstreams between summaries.
    #[arg(long, value_name = "MS", default_value_t = 5, requires = "nats",
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    sync_ms: u64,
    /// How long a peer's summary counts after it arrives, in ms (keep it
    /// several `--sync-ms` long): a replica or a bus that goes away stops
    /// counting after this.
    #[arg(long, value_name = "MS", default_value_t = 5_000, requires = "nats",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    report_max_age_ms: u64,
    /// LLM paths (`POST /v1/completions`, `/v1/chat/completions`): the
    /// largest body read, in bytes; a larger one is answered 413.
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 30))]
    max_body_bytes: usize,
    /// LLM paths: token ids per prompt block, for prompts given as token ids.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    block_tokens: u32,
    /// LLM paths: characters per prompt block, for text prompts (chat
    /// messages' contents joined in order, each followed by a newline).
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    block_chars: u32,
    /// LLM paths: the decode share each request books beside its prefill
    /// share (one unit per uncached block), kept until the response ends.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(0..=1 << 20))]
    decode_weight: u32,
    /// LLM paths: derive the decode share from `max_tokens` instead, one unit
    /// per this many tokens (requests without `max_tokens` book --decode-weight).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    decode_tokens: Option<u32>,
    /// LLM paths: how long a routing decision counts as its upstream caching
    /// the prompt's blocks, in ms [default: 120000, the approximate index's
    /// TTL; 2000 when any upstream gives its KV events, which then cover
    /// only the events' blind spot].
    #[arg(long, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    routed_ttl_ms: Option<u64>,
    /// LLM paths: the most distinct blocks the prefix index holds (memory is
    /// allocated up front for them).
    #[arg(long, value_name = "N", default_value_t = 1 << 20,
          value_parser = clap::value_parser!(u32).range(16..=1 << 28))]
    index_blocks: u32,
    /// LLM paths: the header that names a conversation; its requests go to
    /// the upstream its first one went to, within --session-bound.
    #[arg(long, value_name = "NAME", default_value = "x-session-id")]
    session_header: Option<http::HeaderName>,
    /// LLM paths: how long an idle session stays bound, in ms.
    #[arg(long, value_name = "MS", default_value_t = 600_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    session_ttl_ms: u64,
    /// LLM paths: a session leaves its upstream when that upstream's load is
    /// over this many times the fleet's mean.
    #[arg(long, value_name = "X", default_value_t = 1.25, value_parser = session_bound)]
    session_bound: f64,
}

fn session_bound(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 1.0 => Ok(x),
        _ => Err(format!("`{text}` is not a number of at least 1")),
    }
}

fn mode_name(name: &str) -> Result<String, String> {
    serve::registry()
        .resolve(name)
        .map(|_| name.to_string())
        .map_err(|e| e.to_string())
}

fn nats_url(url: &str) -> Result<String, String> {
    if url.trim().is_empty() {
        return Err("give the NATS server's address, nats://host:port".into());
    }
    Ok(url.to_string())
}

fn nats_subject(subject: &str) -> Result<String, String> {
    workerpick_nats::check_subject(subject).map(|()| subject.to_string())
}

#[derive(Args, Debug)]
struct Bench {
    /// Requests per router.
    #[arg(long, value_name = "N", default_value_t = 4000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    requests: u64,
    /// Requests in flight at once, one connection each.
    #[arg(long, value_name = "C", default_value_t = 32,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    concurrency: u64,
    /// Chunks each response streams.
    #[arg(long, value_name = "T", default_value_t = 8,
          value_parser = clap::value_parser!(u32).range(0..=1000))]
    tokens: u32,
    /// Every K-th request is cancelled before its answer and the next one
    /// mid-stream (0: none).
    #[arg(long, value_name = "K", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    cancel_every: u64,
    /// Each router's run stops here, in ms, even with requests left (they count as failed).
    #[arg(long, value_name = "MS", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    deadline_ms: u64,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // clap's first line names the argument and the problem; its usage
            // hint follows in lines of its own.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            eprintln!("workerpick-proxy: {}", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let bench = match cli.command {
        Some(Command::Bench(bench)) => bench,
        Some(Command::Serve(serve)) => return run_serve(*serve),
        None => cli.bench,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("workerpick-proxy: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&bench)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("workerpick-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_serve(serve: Serve) -> ExitCode {
    let mut upstreams = serve.upstreams;
    if let Some(path) = &serve.upstreams_file {
        let listed = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| serve::read_upstreams(&text));
        match listed {
            Ok(listed) => upstreams.extend(listed),
            Err(e) => {
                eprintln!("workerpick-proxy: --upstreams-file {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let config = Config {
        listen: serve.listen,
        upstreams,
        mode: serve.mode.unwrap_or_else(|| {
            let replicated = serve.nats.is_some();
            let mode = if replicated {
                workerpick::Mode::ReplicaLeastLoaded.name()
            } else {
                "least-loaded"
            };
            mode.to_string()
        }),
        fail_after: serve.fail_after,
        eject_for: Duration::from_millis(serve.eject_ms),
        drain_for: Duration::from_millis(serve.drain_ms),
        max_in_flight: serve.max_in_flight,
        queue: serve.queue.map(|capacity| serve::QueueSettings {
            capacity,
            classes: serve.queue_classes,
            default_class: serve.queue_default_class,
            tenants: if serve.queue_tenants.is_empty() {
                serve::QueueSettings::default().tenants
            } else {
                serve.queue_tenants
            },
            in_flight: serve.queue_in_flight,
            reported: serve.queue_reported,
            deadline: Duration::from_millis(serve.queue_deadline_ms),
            shortest_first: serve.queue_shortest_first,
        }),
        replicas: serve.nats.map(|url| Replicas {
            url,
            subject: serve.nats_subject,
            period: Duration::from_millis(serve.sync_ms),
            max_age: Duration::from_millis(serve.report_max_age_ms),
        }),
        llm: LlmConfig {
            max_body: serve.max_body_bytes,
            block_tokens: serve.block_tokens,
            block_chars: serve.block_chars,
            decode_weight: serve.decode_weight,
            decode_tokens: serve.decode_tokens,
            routed_ttl: serve.routed_ttl_ms.map(Duration::from_millis),
            index_capacity: serve.index_blocks,
            session_header: serve.session_header,
            session_ttl: Duration::from_millis(serve.session_ttl_ms),
            session_bound: serve.session_bound,
        },
    };
    if let Some(Err(e)) = config.queue.as_ref().map(serve::QueueSettings::check) {
        eprintln!("workerpick-proxy: {e}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("workerpick-proxy: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(serve::serve(config, |addr| {
        use std::io::Write;
        println!("listening on {addr}");
        let _ = std::io::stdout().flush();
    }));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("workerpick-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the benchmark; whether every request was answered and no load stayed booked.
async fn run(bench: &Bench) -> std::io::Result<bool> {
    // The parser bounds each value far below usize::MAX.
    let plan = Plan {
        requests: bench.requests as usize,
        concurrency: bench.concurrency as usize,
        tokens: bench.tokens,
        cancel_every: bench.cancel_every as usize,
        deadline: Duration::from_millis(bench.deadline_ms),
    };
    let speeds = Speed::fleet(4);
    let fleet = Fleet::start(&speeds).await?;
    println!(
        "{} requests, {} at once, {} streamed chunks each; upstreams (first byte / per chunk): {}",
        plan.requests,
        plan.concurrency,
        plan.tokens,
        speeds
            .iter()
            .map(|s| format!("{:?}/{:?}", s.first_byte, s.per_token))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "{:<20} {:>9} {:>8} {:>8} {:>6} {:>6}  {:<28} load left",
        "router", "req/s", "p50 ms", "p99 ms", "ok", "errors", "requests per upstream"
    );
    let routers = modes()
        .map(Router::Workerpick)
        .chain([Router::TowerP2c, Router::Direct]);
    let mut leaked = false;
    let mut failing = Vec::new();
    for router in routers {
        let r = measure(&fleet, router, plan).await?;
        let o = &r.outcome;
        let errors = o.answered() - o.ok - o.cancelled + o.failed + o.unsent;
        leaked |= r.left_booked.is_some_and(|l| l != 0);
        if errors > 0 {
            failing.push(format!("{} ({errors})", router.name()));
        }
        println!(
            "{:<20} {:>9.0} {:>8.2} {:>8.2} {:>6} {:>6}  {:<28} {}",
            router.name(),
            o.rate(),
            o.quantile(0.5).as_secs_f64() * 1e3,
            o.quantile(0.99).as_secs_f64() * 1e3,
            o.ok,
            errors,
            format!("{:?}", r.per_upstream),
            r.left_booked.map_or("-".into(), |l| l.to_string()),
        );
    }
    fleet.stop().await;
    if !failing.is_empty() {
        eprintln!(
            "workerpick-proxy: FAILED: requests without a complete answer (of {} each): {}",
            plan.requests,
            failing.join(", ")
        );
    }
    if leaked {
        eprintln!("workerpick-proxy: FAILED: load left booked after a run");
    }
    if failing.is_empty() && !leaked {
        println!("every request answered; every in-flight count is back to 0");
    }
    Ok(failing.is_empty() && !leaked)
}
