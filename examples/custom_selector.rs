//! Extending `workerpick` with a custom selector: sticky sessions with bounded
//! load, registered by name beside the built-ins and resolved from
//! configuration.
//!
//! A request that carries a session key goes to that session's home worker
//! (a jump consistent hash of the key over the candidates) unless the home
//! already has `max-load` requests in flight; then, and for requests without a
//! key, it goes to the least-loaded candidate. Both answers are
//! [`Choice::validated`]: the pool books the load only if it is still the load
//! the selector saw (compare-and-swap), so the bound holds under concurrent
//! routers without any lock.
//!
//! ```text
//! cargo run --release --example custom_selector
//! cargo run --release --example custom_selector -- --mode sticky_bounded --param max-load=2
//! cargo run --release --example custom_selector -- --mode p2c
//! ```

use std::process::ExitCode;
use std::time::Instant;
use workerpick::{Choice, Context, Error, Params, Pool, Registry, Request, Rng, Selector};

/// Sticky sessions with a per-worker bound on in-flight requests.
struct StickyBounded {
    max_load: u32,
}

impl StickyBounded {
    fn from_params(params: &Params) -> Result<Self, Error> {
        params.expect_only("sticky-bounded", &["max-load"])?;
        let max_load = params.get_u32("max-load")?.unwrap_or(4);
        if max_load == 0 {
            return Err(Error::InvalidConfig {
                what: "sticky-bounded max-load",
                why: "must be at least 1, or no session could stay on its home worker".into(),
            });
        }
        Ok(Self { max_load })
    }
}

impl Selector for StickyBounded {
    fn name(&self) -> &str {
        "sticky-bounded"
    }

    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        if let Some(key) = cx.request().get_key() {
            let home = cx.candidate(jump_hash(key, cx.len()))?;
            let load = cx.load(home);
            if load < self.max_load {
                // Booked only if the home still has `load` in flight, so it
                // never goes past `max_load`; otherwise we are asked again.
                return Some(Choice::validated(home, load));
            }
        }
        let (slot, load) = cx.least_loaded()?;
        Some(Choice::validated(slot, load))
    }
}

/// Lamping and Veach's jump consistent hash: a bucket in `0..buckets` that
/// moves for only 1/n of the keys when the n-th bucket is added.
fn jump_hash(mut key: u64, buckets: usize) -> usize {
    let (mut b, mut j) = (0i64, 0i64);
    while j < buckets as i64 {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as usize
}

/// `--mode NAME` and `--param key=value,...` from the command line.
fn config() -> Result<(String, Params), Error> {
    let mut mode = "sticky-bounded".to_owned();
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
    registry.register("sticky-bounded", StickyBounded::from_params)?;
    println!("selectors: {}", registry.names().collect::<Vec<_>>().join(", "));

    // The built-ins cannot be shadowed, and a typo lists what exists.
    if let Err(e) = registry.register("round_robin", StickyBounded::from_params) {
        println!("register(\"round_robin\") -> {e}");
    }
    if let Err(e) = registry.resolve("sticky") {
        println!("resolve(\"sticky\") -> {e}");
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

    // Six sessions send five requests each and keep them in flight.
    let mut held = Vec::new();
    for session in 0..6u64 {
        let key = session.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let home = &workers[jump_hash(key, workers.len())];
        let mut placed = Vec::new();
        for _ in 0..5 {
            let r = router.reserve_with(&*selector, &Request::new().key(key))?;
            placed.push(r.worker().clone());
            held.push(r);
        }
        println!("session {session} (home {home}): {}", placed.join(" "));
    }
    let loads: Vec<String> = pool.loads().iter().map(|(w, l)| format!("{w}={l}")).collect();
    println!("in flight: {}", loads.join(" "));
    drop(held);

    // Four router threads, 64 sessions, each thread keeping up to 2 requests
    // in flight: how often does a request land on its session's home?
    const THREADS: u64 = 4;
    const REQUESTS: u32 = 200_000;
    let start = Instant::now();
    let home_hits: u32 = std::thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (pool, selector, workers) = (&pool, &selector, &workers);
                s.spawn(move || {
                    let mut router = pool.handle_with_rng(Rng::with_seed(t));
                    let mut draw = Rng::with_seed(100 + t);
                    let mut in_flight: [Option<_>; 2] = Default::default();
                    let mut at_home = 0;
                    for i in 0..REQUESTS {
                        let key = u64::from(draw.below(64)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                        let r = router
                            .reserve_with(&**selector, &Request::new().key(key))
                            .expect("the pool is not empty");
                        at_home += u32::from(*r.worker() == workers[jump_hash(key, 8)]);
                        in_flight[i as usize % 2] = Some(r);
                    }
                    at_home
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    let total = THREADS as u32 * REQUESTS;
    let elapsed = start.elapsed();
    println!(
        "\n{THREADS} threads, {total} reservations in {elapsed:.2?} ({:.1} M/s)",
        f64::from(total) / elapsed.as_secs_f64() / 1e6
    );
    println!(
        "landed on the session's home worker: {:.1}% (8 workers: chance is 12.5%)",
        100.0 * f64::from(home_hits) / f64::from(total)
    );
    println!(
        "CAS fallbacks: {}; all load released: {}",
        pool.stats().fallbacks,
        pool.loads().iter().all(|&(_, l)| l == 0)
    );
    Ok(())
}
