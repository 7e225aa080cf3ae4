//! Extending `workerpick` with a custom selector: admission control (load
//! shedding), registered by name beside the built-ins and resolved from
//! configuration.
//!
//! A request goes to the least-loaded candidate while that one has fewer
//! than `max-load` requests in flight; when every candidate is at the cap
//! the selector refuses, and the router sheds the request
//! ([`Error::NoAcceptableWorker`]). The answer is [`Choice::validated`]: the
//! pool books the load only if it is still the load the selector saw
//! (compare-and-swap), so the cap holds under concurrent routers without any
//! lock. (Sticky sessions with a load bound are built in: `Affinity`.)
//!
//! ```text
//! cargo run --release --example custom_selector
//! cargo run --release --example custom_selector -- --mode capped --param max-load=2
//! cargo run --release --example custom_selector -- --mode p2c
//! ```

use std::process::ExitCode;
use std::time::Instant;
use workerpick::{Choice, Context, Error, Params, Pool, Registry, Rng, Selector};

/// Least-loaded, with a per-worker cap on in-flight requests.
struct Capped {
    max_load: u32,
}

impl Capped {
    fn from_params(params: &Params) -> Result<Self, Error> {
        params.expect_only("capped", &["max-load"])?;
        let max_load = params.get_u32("max-load")?.unwrap_or(4);
        if max_load == 0 {
            return Err(Error::InvalidConfig {
                what: "capped max-load",
                why: "must be at least 1, or every request would be shed".into(),
            });
        }
        Ok(Self { max_load })
    }
}

impl Selector for Capped {
    fn name(&self) -> &str {
        "capped"
    }

    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let (slot, load) = cx.least_loaded()?;
        // Booked only if the worker still has `load` in flight, so it never
        // goes past `max_load`; otherwise we are asked again.
        (load < self.max_load).then(|| Choice::validated(slot, load))
    }
}

/// `--mode NAME` and `--param key=value,...` from the command line.
fn config() -> Result<(String, Params), Error> {
    let mut mode = "capped".to_owned();
    let mut params = "max-load=3".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--mode", Some(v)) => {
                mode = v;
                params.clear();
            }
            ("--param", Some(v)) => params = v,
            _ => eprintln!("ignoring `{arg}`; use --mode NAME and --param key=value"),
        }
    }
    Ok((mode, params.parse()?))
}

/// Errors are printed with `Display` (one readable line), not the `Debug`
/// that returning them from `main` would print.
fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("custom_selector: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), Error> {
    let mut registry = Registry::new();
    registry.register("capped", Capped::from_params)?;
    println!("selectors: {}", registry.names().collect::<Vec<_>>().join(", "));

    // The built-ins cannot be shadowed, and a typo lists what exists.
    if let Err(e) = registry.register("round_robin", Capped::from_params) {
        println!("register(\"round_robin\") -> {e}");
    }
    if let Err(e) = registry.resolve("cap") {
        println!("resolve(\"cap\") -> {e}");
    }

    let (mode, params) = config()?;
    let selector = registry.resolve_with(&mode, &params)?;
    let shown = if params.is_empty() {
        "defaults".to_owned()
    } else {
        params.to_string()
    };
    println!("\nrouting with `{}` ({shown})\n", selector.name());

    let workers: Vec<String> = (0..8).map(|i| format!("w{i}")).collect();
    let pool = Pool::from_workers(workers.iter().cloned())?;
    let mut router = pool.handle_with_rng(Rng::with_seed(1));

    // Forty requests held at once over eight workers: past the cap, shed.
    let mut held = Vec::new();
    let mut shed = 0;
    for _ in 0..40 {
        match router.reserve(&*selector) {
            Ok(r) => held.push(r),
            Err(Error::NoAcceptableWorker) => shed += 1,
            Err(e) => return Err(e),
        }
    }
    let loads: Vec<String> = pool.loads().iter().map(|(w, l)| format!("{w}={l}")).collect();
    println!("in flight: {} (shed {shed} of 40)", loads.join(" "));
    drop(held);

    // Four router threads, each keeping up to 4 requests in flight: how
    // many are shed, and does the cap hold?
    const THREADS: u64 = 4;
    const REQUESTS: u32 = 200_000;
    let start = Instant::now();
    let shed: u32 = std::thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, selector) = (&pool, &selector);
                s.spawn(move || {
                    let mut router = pool.handle_with_rng(Rng::with_seed(t));
                    let mut in_flight: [Option<_>; 4] = Default::default();
                    let mut shed = 0;
                    for i in 0..REQUESTS {
                        match router.reserve(&**selector) {
                            Ok(r) => in_flight[i as usize % 4] = Some(r),
                            Err(_) => shed += 1,
                        }
                    }
                    shed
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    let total = THREADS as u32 * REQUESTS;
    let elapsed = start.elapsed();
    println!(
        "\n{THREADS} threads, {total} picks in {elapsed:.2?} ({:.1} M/s), shed {:.2}%",
        f64::from(total) / elapsed.as_secs_f64() / 1e6,
        100.0 * f64::from(shed) / f64::from(total)
    );
    println!(
        "CAS fallbacks: {}; all load released: {}",
        pool.stats().fallbacks,
        pool.loads().iter().all(|&(_, l)| l == 0)
    );
    Ok(())
}
