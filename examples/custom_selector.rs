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
//! cargo run --release --example custom_selector -- --help
//! ```

use std::ffi::OsString;
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

const USAGE: &str = "usage: custom_selector [--mode NAME] [--param KEY=VALUE,...]
  --mode NAME   a built-in selector's name, or capped (the default)
  --param LIST  the selector's parameters (default: max-load=3 for capped, none otherwise)";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Help,
    Run { mode: String, params: String },
}

/// `--mode NAME` and `--param key=value,...` from the arguments after the
/// program's name (as the OS gave them: one that is not UTF-8 is refused,
/// not a panic); an error is one line.
fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let text = |a: OsString| {
        a.into_string()
            .map_err(|a| format!("argument `{}` is not UTF-8 text", a.to_string_lossy()))
    };
    let mut mode = None;
    let mut params = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = text(arg)?;
        let slot = match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--mode" => &mut mode,
            "--param" => &mut params,
            _ => return Err(format!("unexpected argument `{arg}`")),
        };
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        *slot = Some(text(value)?);
    }
    let mode = mode.unwrap_or_else(|| "capped".to_owned());
    let params = params.unwrap_or_else(|| if mode == "capped" { "max-load=3" } else { "" }.to_owned());
    Ok(Command::Run { mode, params })
}

/// Errors are printed with `Display` (one readable line), not the `Debug`
/// that returning them from `main` would print.
fn main() -> ExitCode {
    let (mode, params) = match parse(std::env::args_os().skip(1)) {
        Ok(Command::Run { mode, params }) => (mode, params),
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("custom_selector: {e} (see --help)");
            return ExitCode::from(2);
        }
    };
    match run(&mode, &params) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("custom_selector: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(mode: &str, params: &str) -> Result<(), Error> {
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

    let params: Params = params.parse()?;
    let selector = registry.resolve_with(mode, &params)?;
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

#[cfg(test)]
mod tests {
    use super::{Command, parse};
    use std::ffi::OsString;

    fn args(a: &[&str]) -> Result<Command, String> {
        parse(a.iter().map(|s| (*s).into()))
    }

    fn run(mode: &str, params: &str) -> Result<Command, String> {
        Ok(Command::Run {
            mode: mode.into(),
            params: params.into(),
        })
    }

    #[test]
    fn defaults_and_flags_in_any_order() {
        assert_eq!(args(&[]), run("capped", "max-load=3"));
        assert_eq!(args(&["--mode", "p2c"]), run("p2c", ""));
        assert_eq!(
            args(&["--param", "max-load=2", "--mode", "capped"]),
            run("capped", "max-load=2")
        );
        assert_eq!(args(&["--mode", "x", "--help"]), Ok(Command::Help));
        assert_eq!(args(&["-h"]), Ok(Command::Help));
    }

    /// Before: unknown flags and a flag without its value were ignored
    /// (exit 0), `--help` too.
    #[test]
    fn what_it_cannot_run_is_one_line_naming_the_argument() {
        for (bad, names) in [
            (&["--bogus"][..], "--bogus"),
            (&["capped"], "capped"),
            (&["--mode"], "--mode"),
            (&["--mode", "capped", "--param"], "--param"),
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
        let bad = || OsString::from_vec(b"p\xff".to_vec());
        for a in [vec![bad()], vec!["--mode".into(), bad()]] {
            let e = parse(a).unwrap_err();
            assert!(e.contains("not UTF-8") && e.contains("p\u{fffd}"), "{e}");
        }
    }
}
