//! A load simulator: router threads send requests through each mode to a
//! fleet of heterogeneous workers, and the report shows what every mode did
//! to the fleet.
//!
//! ```text
//! cargo run --release -p workerpick-sim              # every mode, ~30 s
//! cargo run --release -p workerpick-sim -- --help    # the knobs
//! cargo run --release -p workerpick-sim -- --modes least-loaded,random --plot load.svg
//! cargo run --release -p workerpick-sim -- --llm-plot llm.svg
//! ```

use workerpick_sim as sim;

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::report::Format;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};
use workerpick::DeviceKind;

/// Sends requests from real router threads through each workerpick mode to a
/// simulated fleet, and reports per mode: throughput, latency, per-worker load,
/// a mid-run fleet change, and the classic 8/8/8/8 check; then two
/// heterogeneous-fleet scenarios: capacity weights on a 4:2:1:1 fleet, and a
/// cold worker joining with and without slow start.
#[derive(Parser, Debug)]
#[command(version, allow_negative_numbers = true)]
struct Args {
    /// Workers in the fleet (at most 1048576; past 64 the table shows how load
    /// spread over them rather than a row each).
    #[arg(short, long, default_value_t = 8)]
    workers: usize,
    /// Least-loaded scans every counter, even on a fleet past 65 536 workers,
    /// whose pool keeps per-block bounds (the summarised pick) otherwise.
    #[arg(long)]
    flat_scan: bool,
    /// Relative speed of each worker, cycled over the fleet (0.5 = half as fast).
    #[arg(long, value_delimiter = ',', default_value = "1,1,1,1,1,1,0.5,0.25")]
    speeds: Vec<f64>,
    /// Workers that run on CPUs (device-aware balances them against the
    /// accelerators), comma-separated indices [default: the ones slower than 1].
    #[arg(long, value_delimiter = ',')]
    cpus: Option<Vec<usize>>,
    /// Requests a worker serves at once; more wait in its queue.
    #[arg(long, default_value_t = 4)]
    slots: usize,
    /// Service time of a request at speed 1, in ms (each request draws ±50%).
    #[arg(long, default_value_t = 2.0)]
    service_ms: f64,
    /// Requests in flight at once (a new one starts when one ends).
    #[arg(short, long, default_value_t = 32)]
    concurrency: usize,
    /// Requests per mode on the fleet.
    #[arg(short = 'n', long, default_value_t = 6000)]
    requests: usize,
    /// Modes to run, comma-separated (any name the crate's Registry resolves).
    #[arg(short, long, value_delimiter = ',', default_values_t = sim::modes::all())]
    modes: Vec<String>,
    /// Router threads, each with its own pool.handle().
    #[arg(short, long, default_value_t = 4)]
    threads: usize,
    /// Seeds the routers' draws and the service times.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    /// Also draw every worker's in-flight load over time, per mode, to this SVG
    /// file (a fleet of at most 64 workers).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Bursts of 32 held reservations in the classic check.
    #[arg(long, default_value_t = 200)]
    bursts: usize,
    /// The worker removed mid-run and re-added.
    #[arg(long, default_value_t = 0)]
    churn_worker: u32,
    /// How long it stays out, in ms [default: half a service time: some of its requests still run].
    #[arg(long)]
    out_ms: Option<f64>,
    /// Keep the fleet fixed.
    #[arg(long)]
    no_churn: bool,
    /// Router replica counts in the replica scenario (1: the single router).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    replicas: Vec<usize>,
    /// Periods of the workers' reports and the replicas' summaries, in ms (virtual time).
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    periods_ms: Vec<f64>,
    /// Offered load in the replica scenario, as a fraction of the fleet's capacity.
    #[arg(long, default_value_t = 0.8)]
    utilization: f64,
    /// Requests per run in the replica scenario and in the herding check that
    /// follows the report (0 skips both).
    #[arg(long, default_value_t = 40_000)]
    replica_requests: usize,
    /// Skip the heterogeneous-fleet scenarios (weighted fleet, scale-up).
    #[arg(long)]
    no_fleet_scenarios: bool,
    /// Skip the multi-turn sessions scenario (affinity and KV-cache hits;
    /// printed with the table format only).
    #[arg(long)]
    no_sessions: bool,
    /// Requests per run in the weighted-fleet scenario (0 skips it).
    #[arg(long, default_value_t = 6000)]
    fleet_requests: usize,
    /// The scale-up scenario's window, in ms: the newcomer's warm-up and its
    /// slow start (0 skips it).
    #[arg(long, default_value_t = 300.0)]
    scale_up_ms: f64,
    /// Requests per mode in the slow-not-busy scenarios (a worker whose
    /// latency spikes; one that fails fast), 0 skips them.
    #[arg(long, default_value_t = 80_000)]
    latency_requests: usize,
    /// Requests per policy in the LLM prefix-cache scenario (0 skips it).
    #[arg(long, default_value_t = 8000)]
    llm_requests: usize,
    /// Also draw the LLM scenario's TTFT and cache hit rate per policy to this
    /// SVG file.
    #[arg(long, value_name = "FILE.svg")]
    llm_plot: Option<PathBuf>,
    /// The Mooncake trace (JSON lines) the replay section reads [default:
    /// shared/data/mooncake/conversation_trace.jsonl in a folder above the
    /// repository if there is one, else a built-in excerpt of its first 300
    /// requests]. The replay is printed with the table format only.
    #[arg(long, value_name = "PATH")]
    trace: Option<PathBuf>,
    /// Skip the Mooncake trace replay.
    #[arg(long)]
    no_mooncake: bool,
    /// Speed-ups of the Mooncake replay, one table each (arrival = timestamp ÷ speed-up).
    #[arg(long, value_delimiter = ',', default_value = "5,8")]
    mooncake_speedups: Vec<f64>,
    /// The Mooncake replay's index capacity, as a multiple of the fleet's
    /// total cache (the approximate index gets 4x this).
    #[arg(long, default_value_t = 1)]
    mooncake_index_slack: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    Table,
    Csv,
    Json,
}

/// Router threads a run may start.
const MAX_ROUTER_THREADS: usize = 1024;

/// Requests per mode: the run keeps three 8-byte records per request.
const MAX_REQUESTS: usize = 10_000_000;

/// Bursts in the classic check: the run keeps a record of each.
const MAX_BURSTS: usize = 1_000_000;

/// Requests in flight: a run starts a server thread for each one that can be
/// served at once, so this bounds its threads whatever the fleet's size.
const MAX_CONCURRENCY: usize = 4096;

/// Router replicas in one run of the replica scenario.
const MAX_REPLICAS: usize = 64;

/// The longest one request may be served for at the slowest speed: a run
/// is meant to take seconds.
const MAX_SERVICE: Duration = Duration::from_secs(10);

/// The largest fleet a run takes: a run keeps per-worker records for every
/// mode, and this one takes about 15 s at the default settings.
const MAX_FLEET: usize = 1 << 20;

/// Most workers `--plot` draws, one line and legend entry each.
const MAX_PLOTTED: usize = 64;

impl Args {
    /// The heterogeneous-fleet scenarios, on the modes of `--modes` that have
    /// them, at `--service-ms`, from `--threads` routers.
    fn scenarios(&self) -> Result<sim::fleet::Scenarios, String> {
        if self.no_fleet_scenarios {
            return Ok(sim::fleet::Scenarios::default());
        }
        if self.fleet_requests > MAX_REQUESTS {
            return Err(format!(
                "--fleet-requests {} is above this simulator's limit of {MAX_REQUESTS}",
                self.fleet_requests
            ));
        }
        let max_ms = MAX_SERVICE.as_secs_f64() * 1e3;
        if !(0.0..=max_ms).contains(&self.scale_up_ms) {
            return Err(format!(
                "--scale-up-ms {} is outside 0..={max_ms}",
                self.scale_up_ms
            ));
        }
        let service = Duration::from_secs_f64(self.service_ms / 1e3);
        let weighted =
            sim::fleet::Weighted::new(service, self.fleet_requests, self.threads, self.seed, &self.modes)?;
        let window = Duration::from_secs_f64(self.scale_up_ms / 1e3);
        let scale_up = sim::fleet::ScaleUp::new(service, window, self.threads, self.seed, &self.modes)?;
        if scale_up.requests() > MAX_REQUESTS {
            return Err(format!(
                "--scale-up-ms {} at --service-ms {} needs {} requests a run, above this simulator's limit of {MAX_REQUESTS}",
                self.scale_up_ms,
                self.service_ms,
                scale_up.requests()
            ));
        }
        Ok(sim::fleet::Scenarios {
            weighted: (self.fleet_requests > 0 && !weighted.modes.is_empty()).then_some(weighted),
            scale_up: (self.scale_up_ms > 0.0 && !scale_up.modes.is_empty()).then_some(scale_up),
        })
    }

    fn config(&self) -> Result<sim::Config, String> {
        let positive = |what: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(format!("{what} must be positive"))
            }
        };
        positive("--workers", self.workers > 0)?;
        positive("--slots", self.slots > 0)?;
        positive("--concurrency", self.concurrency > 0)?;
        positive("--threads", self.threads > 0)?;
        positive(
            "--speeds",
            !self.speeds.is_empty() && self.speeds.iter().all(|&s| s > 0.0 && s.is_finite()),
        )?;
        positive(
            "--service-ms",
            self.service_ms > 0.0 && self.service_ms.is_finite(),
        )?;
        if self.workers > workerpick::MAX_WORKERS_LIMIT {
            return Err(format!(
                "--workers {} is above the pool's limit of {} workers",
                self.workers,
                workerpick::MAX_WORKERS_LIMIT
            ));
        }
        for (flag, value, max) in [
            ("--workers", self.workers, MAX_FLEET),
            ("--threads", self.threads, MAX_ROUTER_THREADS),
            ("--requests", self.requests, MAX_REQUESTS),
            ("--concurrency", self.concurrency, MAX_CONCURRENCY),
            ("--replica-requests", self.replica_requests, MAX_REQUESTS),
            ("--bursts", self.bursts, MAX_BURSTS),
            ("--llm-requests", self.llm_requests, MAX_REQUESTS),
            ("--latency-requests", self.latency_requests, MAX_REQUESTS),
        ] {
            if value > max {
                return Err(format!("{flag} {value} is above this simulator's limit of {max}"));
            }
        }
        let replicas = self.replica_scenario()?;
        let max_ms = MAX_SERVICE.as_secs_f64() * 1e3;
        if let Some(ms) = self.out_ms
            && !(0.0..=max_ms).contains(&ms)
        {
            return Err(format!("--out-ms {ms} is outside 0..={max_ms}"));
        }
        let slowest = self.speeds.iter().copied().fold(f64::INFINITY, f64::min);
        let longest = self.service_ms / 1e3 / slowest;
        if longest.is_nan() || longest > MAX_SERVICE.as_secs_f64() {
            return Err(format!(
                "--speeds {slowest} makes a request of --service-ms {} take {longest:.3e} s, over {} s",
                self.service_ms,
                MAX_SERVICE.as_secs()
            ));
        }
        for m in &self.modes {
            sim::modes::selector(m)?;
        }
        let service = Duration::from_secs_f64(self.service_ms / 1e3);
        let churn = (!self.no_churn && self.workers > 1).then_some(sim::Churn {
            worker: self.churn_worker,
            at: 0.4,
            out_for: self
                .out_ms
                .map_or(service / 2, |ms| Duration::from_secs_f64(ms / 1e3)),
        });
        if churn.is_some() && self.churn_worker as usize >= self.workers {
            return Err(format!(
                "--churn-worker must be below --workers ({})",
                self.workers
            ));
        }
        let speeds: Vec<f64> = self.speeds.iter().copied().cycle().take(self.workers).collect();
        let cpus = match &self.cpus {
            Some(cpus) => cpus.clone(),
            None => (0..self.workers).filter(|&w| speeds[w] < 1.0).collect(),
        };
        if let Some(&w) = cpus.iter().find(|&&w| w >= self.workers) {
            return Err(format!(
                "--cpus names w{w}, but the fleet is w0..w{}",
                self.workers - 1
            ));
        }
        if let Some(path) = &self.plot {
            if self.workers > MAX_PLOTTED {
                return Err(format!(
                    "--plot draws one line per worker: at most {MAX_PLOTTED}, not --workers {}",
                    self.workers
                ));
            }
            writable_svg("--plot", path)?;
        }
        if let Some(path) = &self.llm_plot {
            if self.llm_requests == 0 {
                return Err(format!(
                    "--llm-plot {}: draws the LLM scenario, which --llm-requests 0 skips",
                    path.display()
                ));
            }
            writable_svg("--llm-plot", path)?;
        }
        let mut is_cpu = vec![false; self.workers];
        for &w in &cpus {
            is_cpu[w] = true;
        }
        let devices = (0..self.workers)
            .map(|w| {
                if is_cpu[w] {
                    DeviceKind::Cpu
                } else {
                    DeviceKind::Accelerator
                }
            })
            .collect();
        Ok(sim::Config {
            modes: self.modes.clone(),
            load: sim::Load {
                fleet: sim::Fleet {
                    speeds,
                    devices,
                    slots: self.slots,
                    service,
                    flat_scan: self.flat_scan,
                    capacities: Vec::new(),
                    weighted: false,
                },
                concurrency: self.concurrency,
                requests: self.requests,
                threads: self.threads,
                seed: self.seed,
                churn,
                // Every sample holds one count per worker: large fleets are
                // sampled less often, so memory stays bounded.
                sample_every: Duration::from_micros(self.workers.max(1000) as u64),
                join: None,
            },
            bursts: self.bursts,
            classic_requests: 400,
            rate_window: Duration::from_millis(100),
            replicas,
        })
    }

    /// The replica scenario the flags ask for, if any.
    fn replica_scenario(&self) -> Result<Option<sim::replicas::Scenario>, String> {
        if self.replica_requests == 0 || self.replicas.is_empty() {
            return Ok(None);
        }
        if let Some(r) = self.replicas.iter().find(|&&r| r == 0 || r > MAX_REPLICAS) {
            return Err(format!("--replicas {r} is outside 1..={MAX_REPLICAS}"));
        }
        // At least a microsecond: a period of 0 would never let virtual time pass.
        if self.periods_ms.is_empty() || self.periods_ms.iter().any(|&p| !(0.001..=60_000.0).contains(&p)) {
            return Err("--periods-ms must be between 0.001 and 60000 ms each".into());
        }
        if !(self.utilization > 0.0 && self.utilization <= 2.0) {
            return Err(format!("--utilization {} is outside (0, 2]", self.utilization));
        }
        let mut replicas = self.replicas.clone();
        replicas.sort_unstable();
        replicas.dedup();
        let mut periods: Vec<Duration> = self
            .periods_ms
            .iter()
            .map(|&ms| Duration::from_secs_f64(ms / 1e3))
            .collect();
        periods.sort_unstable();
        periods.dedup();
        Ok(Some(sim::replicas::Scenario {
            replicas,
            periods,
            utilization: self.utilization,
            requests: self.replica_requests,
            seed: self.seed,
        }))
    }
}

/// Checks, before the run, that the plot `flag` asks for can be written to
/// `path`: an `.svg` name (every plot is SVG) in a place that takes it.
fn writable_svg(flag: &str, path: &Path) -> Result<(), String> {
    if !path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) {
        return Err(format!(
            "{flag} {}: the plot is SVG; give a file name that ends in .svg",
            path.display()
        ));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{flag} {}: cannot write it: {e}", path.display()))?;
    if !existed {
        // Written after the run: no empty file left behind if the run fails.
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// A progress bar on stderr that appears once the run has taken a second
/// (never when stderr is not a terminal).
struct Bar {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
}

impl sim::Progress for Bar {
    fn stage(&self, what: &str) {
        self.bar.set_message(what.to_owned());
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
        if self.start.elapsed() > Duration::from_secs(1) && !self.shown.swap(true, Relaxed) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // clap's first line names the argument and the problem; its usage
            // hint follows in lines of its own.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            eprintln!("simulate: {}", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let (config, scenarios) = match args.config().and_then(|c| Ok((c, args.scenarios()?))) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("simulate: {e}");
            return ExitCode::from(2);
        }
    };
    // Read before the run: a trace that does not parse is refused at once.
    let mooncake = if args.no_mooncake || args.format != FormatArg::Table {
        None
    } else {
        if let Some(&x) = args.mooncake_speedups.iter().find(|&&x| !(x > 0.0 && x <= 1e6)) {
            eprintln!("simulate: --mooncake-speedups {x} is outside (0, 1e6]");
            return ExitCode::from(2);
        }
        if !(1..=64).contains(&args.mooncake_index_slack) {
            eprintln!(
                "simulate: --mooncake-index-slack {} is outside 1..=64",
                args.mooncake_index_slack
            );
            return ExitCode::from(2);
        }
        match sim::mooncake::trace::resolve(args.trace.as_deref()) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("simulate: --trace {e}");
                return ExitCode::from(2);
            }
        }
    };
    let bar = Bar {
        bar: ProgressBar::with_draw_target(
            Some(config.progress_total() + scenarios.progress_total()),
            ProgressDrawTarget::hidden(),
        )
        .with_style(
            ProgressStyle::with_template("{elapsed:>3} [{bar:30}] {percent:>3}% {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        ),
        start: Instant::now(),
        shown: AtomicBool::new(false),
    };
    let timer_ns = sim::stats::timer_overhead_ns();
    let reports = match sim::run(&config, &bar) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("simulate: {e}");
            return ExitCode::from(2);
        }
    };
    let fleet = match sim::fleet::run(&scenarios, &bar) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("simulate: {e}");
            return ExitCode::from(2);
        }
    };
    bar.bar.finish_and_clear();
    let format = match args.format {
        FormatArg::Table => Format::Table,
        FormatArg::Csv => Format::Csv,
        FormatArg::Json => Format::Json,
    };
    let with = scenarios.any().then_some((&scenarios, &fleet));
    print!(
        "{}",
        sim::report::render_with(format, &config, &reports, with, timer_ns)
    );
    // Herding: the replica rule against one router, on identical and mixed workers.
    let replicas = config.replicas.as_ref().filter(|_| format == Format::Table);
    let herding = replicas.map(|scenario| {
        // The default fleet's size whatever --workers says: the rule's pick is
        // a scalar pass, and the check is about that fleet.
        let h = sim::replicas::herding::Herding {
            workers: sim::replicas::herding::MIXED.len(),
            slots: args.slots,
            service: config.load.fleet.service,
            utilization: scenario.utilization,
            requests: scenario.requests,
            seed: scenario.seed,
        };
        let runs = h.run();
        print!("\n{}", h.table(&runs));
        runs
    });
    if !args.no_sessions && format == Format::Table {
        let scenario = sim::sessions::Sessions {
            seed: args.seed,
            ..Default::default()
        };
        let runs = scenario.run();
        let moved = sim::sessions::disruption(100, 50_000);
        print!("{}", sim::sessions::render(&scenario, &runs, &moved));
    }
    if args.llm_requests > 0 {
        let s = sim::llm::Scenario {
            requests: args.llm_requests,
            seed: args.seed,
            ..sim::llm::Scenario::default()
        };
        let runs = sim::llm::run_all(&s);
        print!("\n{}", sim::llm::table(&s, &runs));
        if let Some(path) = &args.llm_plot {
            if let Err(e) = sim::llm_plot::svg(path, &runs) {
                eprintln!("simulate: {e}");
                return ExitCode::FAILURE;
            }
            eprintln!("simulate: wrote {}", path.display());
        }
        let f = sim::disagg::Fleet {
            load: sim::llm::Scenario {
                seed: args.seed,
                ..sim::disagg::Fleet::default().load
            },
            ..sim::disagg::Fleet::default()
        };
        print!("\n{}", sim::disagg::table(&f, &sim::disagg::run_all(&f)));
        let a = sim::admission::Scenario {
            seed: args.seed,
            ..Default::default()
        };
        print!("\n{}", sim::admission::table(&a, &sim::admission::run_all(&a)));
        let f = sim::shares::Scenario {
            seed: args.seed,
            ..Default::default()
        };
        print!("\n{}", sim::shares::table(&f, &sim::shares::run_all(&f)));
    }
    if let Some(trace) = &mooncake {
        let a = sim::admission::Scenario {
            seed: args.seed,
            ..sim::admission::Scenario::mooncake(&trace.requests)
        };
        print!("\n{}", sim::admission::table(&a, &sim::admission::run_all(&a)));
        for &speedup in &args.mooncake_speedups {
            let s = sim::mooncake::Scenario {
                speedup,
                index_slack: args.mooncake_index_slack,
                seed: args.seed,
                ..Default::default()
            };
            let runs = sim::mooncake::run_all(&s, trace);
            print!("\n{}", sim::mooncake::table(&s, trace, &runs));
        }
    }
    if args.latency_requests > 0 {
        for base in [
            sim::latency::Scenario::spiking(),
            sim::latency::Scenario::failing(),
        ] {
            let s = sim::latency::Scenario {
                requests: args.latency_requests,
                seed: args.seed,
                ..base
            };
            print!("\n{}", sim::latency::table(&s, &s.run_all()));
        }
    }
    if let Some(path) = &args.plot {
        if let Err(e) = sim::plot::svg(path, &reports, &config.load.fleet) {
            eprintln!("simulate: {e}");
            return ExitCode::FAILURE;
        }
        eprintln!("simulate: wrote {}", path.display());
    }
    let mut broken = sim::violations(&reports);
    broken.extend(fleet.violations());
    for r in herding.iter().flatten() {
        for (_, run) in &r.runs {
            broken.extend(
                run.violations()
                    .into_iter()
                    .map(|v| format!("herding, {} workers, {v}", r.fleet)),
            );
        }
    }
    for v in &broken {
        eprintln!("simulate: invariant broken: {v}");
    }
    if broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
