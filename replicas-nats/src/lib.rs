//! Router replicas over NATS: every replica in front of one fleet publishes its
//! pool's [`Summary`] (what it has booked, per worker) on one subject every
//! period, and applies the summaries its peers publish there, so each replica's
//! load-aware picks see its own exact counts plus what the others booked, at
//! most about one period old.
//!
//! workerpick itself depends on no bus: this crate is the glue for one, NATS,
//! through `async-nats` (the NATS project's own client, on tokio; only core
//! publish/subscribe is used). Summaries travel as JSON (workerpick's `serde`
//! feature), so the worker key must be `Serialize + DeserializeOwned`.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::{sync::Arc, time::Duration};
//! let pool = Arc::new(workerpick::Pool::from_workers(["10.0.0.1:8000".to_string()])?);
//! let bus = workerpick_nats::connect("nats://127.0.0.1:4222").await?;
//! let sync = workerpick_nats::spawn(pool.clone(), bus, "workerpick.summary.fleet-a", Duration::from_millis(5));
//! // ... route with `pool`; dropping `sync` stops publishing and applying.
//! # drop(sync); Ok(()) }
//! ```
//!
//! # What holds when the bus fails
//!
//! - **The bus goes away.** Nothing is published while the client is not
//!   connected (no stale summaries queue up to arrive late), and nothing
//!   arrives: every peer's last summary ages out of the pool after its report
//!   age limit ([`Pool::set_report_max_age`]), checked here every period, and the
//!   replica routes on its own counts alone. Its own bookings are never touched.
//!   The client reconnects by itself (every [`RECONNECT_DELAY`]), the
//!   subscription is renewed, and sync resumes with the next summaries.
//! - **A replica dies.** Its summaries stop; the others drop its load when its
//!   last one ages out.
//! - **A message is lost, repeated or late.** A summary holds absolute loads
//!   and replaces its sender's earlier one; an older or repeated one (by its
//!   number) is ignored. The bus echoes a replica's own summaries back to it:
//!   `apply_summary` recognises them and ignores them.
//!
//! Keep the period at most 1/20 of the requests' service time, the age limit
//! several periods long (a summary lost must not age a live peer out), and
//! pick with [`workerpick::ReplicaLeastLoaded`]: replicas that pick with plain
//! least-loaded over summaries a period old send their next requests to the
//! same worker at once (herding); weighing each replica's own bookings above
//! its peers' keeps 4 replicas within 10 % of one router's p99 in workerpick's
//! simulator, with that period. tokio's timer ticks no finer than 1 ms.

use bytes::Bytes;
use futures_util::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use tokio::task::JoinHandle;
use workerpick::{Pool, Summary};

pub use async_nats::Client;

/// How long the client waits between attempts to reach a bus that went away.
pub const RECONNECT_DELAY: Duration = Duration::from_millis(100);

/// A client for the NATS server at `url`, set up for replica sync: it returns
/// at once even when the server is not up yet (and connects when it is), and
/// it retries a lost connection every [`RECONNECT_DELAY`], forever.
pub async fn connect(url: &str) -> Result<Client, async_nats::ConnectError> {
    async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .max_reconnects(None)
        .reconnect_delay_callback(|_attempts| RECONNECT_DELAY)
        .connect(url)
        .await
}

/// Whether replicas can share summaries on `subject`: NATS publishes only on
/// a subject of non-empty `.`-separated tokens with no whitespace and no
/// wildcard (`*`, `>`). [`spawn`] on any other would never sync, silently.
pub fn check_subject(subject: &str) -> Result<(), String> {
    if subject.is_empty() {
        return Err("the subject is empty".into());
    }
    if subject.chars().any(char::is_whitespace) {
        return Err(format!("subject `{subject}` has whitespace in it"));
    }
    match subject
        .split('.')
        .find(|t| t.is_empty() || *t == "*" || *t == ">")
    {
        Some("") => Err(format!(
            "subject `{subject}` has an empty token (a `.` at an end, or two together)"
        )),
        Some(w) => Err(format!(
            "subject `{subject}` has the wildcard `{w}`: summaries are published on it"
        )),
        None => Ok(()),
    }
}

/// What one replica's sync has done so far.
#[derive(Debug, Default)]
pub struct Counts {
    published: AtomicU64,
    skipped: AtomicU64,
    applied: AtomicU64,
    ignored: AtomicU64,
    malformed: AtomicU64,
}

impl Counts {
    /// Summaries sent.
    pub fn published(&self) -> u64 {
        self.published.load(Relaxed)
    }
    /// Periods with no summary sent: the bus was not connected.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Relaxed)
    }
    /// Peers' summaries applied.
    pub fn applied(&self) -> u64 {
        self.applied.load(Relaxed)
    }
    /// Summaries received and ignored: this replica's own echo, or one older
    /// than what its sender had already sent.
    pub fn ignored(&self) -> u64 {
        self.ignored.load(Relaxed)
    }
    /// Messages on the subject that were not a summary of this key type.
    pub fn malformed(&self) -> u64 {
        self.malformed.load(Relaxed)
    }
}

/// A replica's running sync (two tokio tasks): stops when dropped.
#[derive(Debug)]
pub struct Sync {
    counts: Arc<Counts>,
    tasks: [JoinHandle<()>; 2],
}

impl Sync {
    /// What it has done so far.
    pub fn counts(&self) -> &Arc<Counts> {
        &self.counts
    }
}

impl Drop for Sync {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Starts `pool`'s sync on `subject` (one subject per fleet): every `period`
/// it drops peers' reports that are past their age, then publishes the pool's
/// summary (while connected); every summary that arrives on the subject is
/// applied. Must be called within a tokio runtime; check a subject from
/// configuration with [`check_subject`] first.
pub fn spawn<W>(pool: Arc<Pool<W>>, client: Client, subject: impl Into<String>, period: Duration) -> Sync
where
    W: Clone + Eq + Hash + Send + std::marker::Sync + Serialize + DeserializeOwned + 'static,
{
    let subject: String = subject.into();
    let counts = Arc::new(Counts::default());
    let publisher = tokio::spawn(publish(
        pool.clone(),
        client.clone(),
        subject.clone(),
        period,
        counts.clone(),
    ));
    let applier = tokio::spawn(apply(pool, client, subject, counts.clone()));
    Sync {
        counts,
        tasks: [publisher, applier],
    }
}

async fn publish<W>(
    pool: Arc<Pool<W>>,
    client: Client,
    subject: String,
    period: Duration,
    counts: Arc<Counts>,
) where
    W: Clone + Eq + Hash + Send + std::marker::Sync + Serialize,
{
    let mut tick = tokio::time::interval(period.max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        // With the bus gone no report arrives to trigger ageing, and a quiet
        // replica makes few reservations: check the peers' ages here.
        pool.expire_reports();
        if client.connection_state() != async_nats::connection::State::Connected {
            counts.skipped.fetch_add(1, Relaxed);
            continue;
        }
        let Ok(text) = serde_json::to_vec(&pool.summary()) else {
            continue; // a key whose `Serialize` fails: nothing to send
        };
        if client.publish(subject.clone(), Bytes::from(text)).await.is_ok() {
            counts.published.fetch_add(1, Relaxed);
        }
    }
}

async fn apply<W>(pool: Arc<Pool<W>>, client: Client, subject: String, counts: Arc<Counts>)
where
    W: Clone + Eq + Hash + Send + std::marker::Sync + DeserializeOwned,
{
    // The subscription lives across reconnects (the client renews it); it
    // fails only on a client that has been closed.
    let mut summaries = loop {
        match client.subscribe(subject.clone()).await {
            Ok(subscriber) => break subscriber,
            Err(_) => tokio::time::sleep(RECONNECT_DELAY).await,
        }
    };
    while let Some(message) = summaries.next().await {
        match serde_json::from_slice::<Summary<W>>(&message.payload) {
            Ok(summary) if pool.apply_summary(&summary) => counts.applied.fetch_add(1, Relaxed),
            Ok(_) => counts.ignored.fetch_add(1, Relaxed),
            Err(_) => counts.malformed.fetch_add(1, Relaxed),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::check_subject;

    #[test]
    fn subjects_replicas_can_publish_on() {
        for ok in ["workerpick.summary", "a", "fleet-a.summary_1", "a.b*c"] {
            assert_eq!(check_subject(ok), Ok(()), "{ok}");
        }
        for bad in ["", "a b", "a\tb", "a..b", ".a", "a.", "a.*", ">", "a.>"] {
            assert!(check_subject(bad).is_err(), "{bad:?}");
        }
    }
}
