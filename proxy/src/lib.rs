//! An HTTP reverse proxy on hyper 1 + tokio that routes with `workerpick`:
//! the crate's example of a real router. It starts its own upstreams on
//! 127.0.0.1 ([`upstream`]), serves a front end ([`front`]) over a routing
//! service ([`route`]: workerpick's `Route` in any mode, or tower's p2c behind
//! a `Buffer`), and drives itself with a bounded load generator ([`load`]).
//! [`measure`] runs one mode and reports what the binary prints and what the
//! integration test asserts. [`serve`] is the other half: the proxy in front
//! of upstreams of your own.

pub mod engine;
pub mod front;
pub mod llm;
pub mod load;
pub mod route;
pub mod serve;
pub mod server;
pub mod upstream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use upstream::{Speed, Upstream};
use workerpick::Pool;

/// The modes workerpick routes in: every built-in, by registry name (a new
/// built-in joins the self-driving benchmark and its test without an edit here).
pub fn modes() -> impl Iterator<Item = &'static str> {
    workerpick::Mode::ALL.into_iter().map(workerpick::Mode::name)
}

/// A set of running upstreams.
pub struct Fleet {
    upstreams: Vec<Upstream>,
}

impl Fleet {
    /// Starts one upstream per speed.
    pub async fn start(speeds: &[Speed]) -> std::io::Result<Self> {
        let mut upstreams = Vec::new();
        for &speed in speeds {
            upstreams.push(Upstream::start(speed).await?);
        }
        Ok(Self { upstreams })
    }

    /// Their addresses, in start order.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.upstreams.iter().map(Upstream::addr).collect()
    }

    /// Requests each has received so far.
    pub fn served(&self) -> Vec<u64> {
        self.upstreams.iter().map(Upstream::served).collect()
    }

    /// Stops them all.
    pub async fn stop(self) {
        for u in self.upstreams {
            u.stop().await;
        }
    }
}

/// Which router a measurement goes through.
#[derive(Clone, Copy, Debug)]
pub enum Router {
    /// workerpick's `Route` in the mode of this registry name.
    Workerpick(&'static str),
    /// tower's `balance::p2c` through a `Buffer`.
    TowerP2c,
    /// No proxy: straight to the first upstream (the floor).
    Direct,
}

impl Router {
    /// A short name for reports.
    pub fn name(&self) -> String {
        match self {
            Router::Workerpick(mode) => (*mode).to_string(),
            Router::TowerP2c => "tower p2c + Buffer".into(),
            Router::Direct => "direct (upstream 0)".into(),
        }
    }
}

/// One mode's run.
#[derive(Debug)]
pub struct Report {
    /// The router.
    pub router: Router,
    /// What the load generator saw.
    pub outcome: load::Outcome,
    /// Requests each upstream received during the run.
    pub per_upstream: Vec<u64>,
    /// For workerpick: the load still booked once the proxy had answered
    /// everything and the disconnects had been noticed (must be 0).
    pub left_booked: Option<u64>,
}

/// Runs `plan` through `router` to `fleet`.
pub async fn measure(fleet: &Fleet, router: Router, plan: load::Plan) -> std::io::Result<Report> {
    let before = fleet.served();
    let addrs = fleet.addrs();
    let (outcome, left_booked) = match router {
        Router::Workerpick(mode) => {
            let pool = Arc::new(Pool::from_workers(addrs).map_err(std::io::Error::other)?);
            let route = route::workerpick(&pool, mode, workerpick::service::http_client())
                .map_err(std::io::Error::other)?;
            let proxy = front::start(route).await?;
            let outcome = load::run(proxy.addr(), plan).await;
            // Mid-stream disconnects reach the proxy a moment after the client
            // moves on; give them that moment, bounded.
            let left = drain(&pool, Duration::from_secs(5)).await;
            proxy.stop().await;
            (outcome, Some(left))
        }
        Router::TowerP2c => {
            let proxy = front::start(route::tower_p2c(&addrs, workerpick::service::http_client())).await?;
            let outcome = load::run(proxy.addr(), plan).await;
            proxy.stop().await;
            (outcome, None)
        }
        Router::Direct => (load::run(addrs[0], plan).await, None),
    };
    let per_upstream = fleet.served().iter().zip(&before).map(|(a, b)| a - b).collect();
    Ok(Report {
        router,
        outcome,
        per_upstream,
        left_booked,
    })
}

/// Waits until `pool` has no load booked, at most `limit`; returns what is left.
pub async fn drain<W: Clone + Eq + std::hash::Hash + Send + Sync>(pool: &Pool<W>, limit: Duration) -> u64 {
    let until = Instant::now() + limit;
    loop {
        let left: u64 = pool.loads().iter().map(|&(_, l)| u64::from(l)).sum();
        if left == 0 || Instant::now() >= until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
