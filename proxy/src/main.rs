//! Runs the proxy in every mode against its own upstreams and prints, per
//! mode, requests/s, latency p50/p99 and the requests each upstream got,
//! beside tower's p2c (through a `Buffer`) and a direct connection (the floor).
//!
//!     cargo run -p workerpick-proxy --release -- [--requests N] [--concurrency C] [--tokens T]

use std::time::Duration;
use workerpick_proxy::load::Plan;
use workerpick_proxy::upstream::Speed;
use workerpick_proxy::{Fleet, MODES, Router, measure};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .find(|w| w[0] == name)
        .map(|w| w[1].parse().unwrap_or_else(|_| panic!("{name} takes a number")))
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let plan = Plan {
        requests: arg("--requests", 4000),
        concurrency: arg("--concurrency", 32),
        tokens: arg("--tokens", 8) as u32,
        cancel_every: arg("--cancel-every", 0),
        deadline: Duration::from_secs(60),
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
    let routers = MODES
        .iter()
        .map(|&m| Router::Workerpick(m))
        .chain([Router::TowerP2c, Router::Direct]);
    let mut leaked = false;
    for router in routers {
        let r = measure(&fleet, router, plan).await?;
        let o = &r.outcome;
        let errors = o.answered() - o.ok - o.cancelled + o.failed + o.unsent;
        leaked |= r.left_booked.is_some_and(|l| l != 0);
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
    if leaked {
        eprintln!("FAILED: load left booked after a run");
        std::process::exit(1);
    }
    println!("every in-flight count is back to 0");
    Ok(())
}
