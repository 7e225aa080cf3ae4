//! Router replicas in one process: R routers in front of the same workers,
//! each with its own [`Pool`] (as several frontends behind one Kubernetes
//! service would be), each routing its share of the requests with
//! least-loaded. Every T ms each replica sends its [`Pool::summary`] — what it
//! has booked per worker — to the others over std `mpsc` channels, and each
//! applies what it receives with [`Pool::apply_summary`], so its picks compare
//! its own exact counts plus what the others booked, at most about T ms old.
//!
//! ```text
//! cargo run --example replicas                     # 4 replicas, a summary every 5 ms, 1 s
//! cargo run --example replicas -- 8 2              # 8 replicas, every 2 ms
//! cargo run --example replicas -- 4 0              # no summaries: each sees only its own
//! cargo run --example replicas --features serde    # summaries travel as JSON text
//! cargo run --example replicas -- --help           # the arguments
//! ```
//!
//! # Over a message bus
//!
//! The channels stand for a bus; the crate depends on none. With the `serde`
//! feature a [`Summary`] serializes (JSON here; any serde format) and travels
//! as one message:
//!
//! - **NATS**: publish on a subject per fleet (`workerpick.summary.<fleet>`),
//!   every replica subscribes to it. The bus echoes a replica's own messages back
//!   to it: `apply_summary` recognises them (by the summary's `origin`) and
//!   ignores them.
//! - **Redis pub/sub**: the same, on a channel per fleet. Delivery is at most
//!   once; a lost summary costs nothing lasting, because each one holds absolute
//!   loads and replaces the sender's previous one.
//! - **Kafka**: a topic per fleet, keyed by the summary's `origin` so one
//!   replica's summaries stay in order in one partition; a late or repeated
//!   message (an older or equal `seq`) is ignored anyway.
//!
//! A replica that stops publishing (crashed, scaled down) ages out of the others'
//! pools after [`Pool::set_report_max_age`] (5 s by default). Keep the period well
//! under the requests' service time: the others' bookings are as old as the last
//! summary, and replicas that all see the same stale "idle" worker send it their
//! next requests together. The simulator's replica scenario
//! (`cargo run --release -p workerpick-sim`) measures how much the period matters.

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};
use workerpick::{LeastLoaded, Pool, Reservation, Rng, Summary};

/// The fleet: per worker, how long it takes over a request, in ms. The last
/// one is four times slower: least-loaded should send it far fewer requests.
const WORKERS: [(&str, u64); 6] = [("w0", 4), ("w1", 4), ("w2", 4), ("w3", 4), ("w4", 4), ("w5", 16)];

/// How long the replicas route.
const RUN_FOR: Duration = Duration::from_secs(1);

/// A new request at each replica this often.
const EVERY: Duration = Duration::from_micros(500);

/// What travels between replicas: the summary itself, or its JSON text.
#[cfg(not(feature = "serde"))]
type Wire = Summary<String>;
#[cfg(feature = "serde")]
type Wire = String;

#[cfg(not(feature = "serde"))]
fn encode(s: &Summary<String>) -> Wire {
    s.clone()
}
#[cfg(not(feature = "serde"))]
fn decode(w: Wire) -> Summary<String> {
    w
}
#[cfg(feature = "serde")]
fn encode(s: &Summary<String>) -> Wire {
    serde_json::to_string(s).expect("a summary serializes")
}
#[cfg(feature = "serde")]
fn decode(w: Wire) -> Summary<String> {
    serde_json::from_str(&w).expect("a summary it sent")
}

/// The workers' own view: requests each holds from every replica, and the most at once.
struct Fleet {
    held: Vec<AtomicU32>,
    peak: Vec<AtomicU32>,
    routed: Vec<AtomicU32>,
}

/// What one replica did, and what it saw half-way.
struct Tally {
    routed: u32,
    sent: u32,
    applied: u32,
    peers: usize,
    /// Half-way through: per worker, its own in-flight count and the reported load.
    midway: Vec<(u32, u32)>,
    /// After the run and the last exchange: in-flight and reported load, all workers.
    end: Vec<(u32, u32)>,
}

struct Replica {
    id: usize,
    pool: Pool<String>,
    inbox: Receiver<Wire>,
    peers: Vec<Sender<Wire>>,
    period: Option<Duration>,
    fleet: Arc<Fleet>,
    done: Arc<Barrier>,
}

impl Replica {
    fn run(self) -> Tally {
        let pool = &self.pool;
        let mut router = pool.handle_with_rng(Rng::with_seed(self.id as u64 + 1));
        let mut jitter = Rng::with_seed(1000 + self.id as u64);
        let mut tally = Tally {
            routed: 0,
            sent: 0,
            applied: 0,
            peers: 0,
            midway: Vec::new(),
            end: Vec::new(),
        };
        let mut held: Vec<(Instant, usize, Reservation<'_, String>)> = Vec::new();
        let start = Instant::now();
        // Replicas keep no time together: each starts its period somewhere in it.
        let mut next_sync = self
            .period
            .map(|p| start + p.mul_f64((self.id as f64 + 1.0) / (self.peers.len() as f64 + 1.0)));
        let mut next_request = start;
        while start.elapsed() < RUN_FOR {
            let now = Instant::now();
            if let (Some(at), Some(period)) = (next_sync, self.period)
                && now >= at
            {
                self.publish(&mut tally);
                next_sync = Some(at + period);
            }
            self.receive(&mut tally);
            // Requests whose service is over give their load back.
            held.retain(|(until, w, _)| {
                let over = *until <= now;
                if over {
                    self.fleet.held[*w].fetch_sub(1, Relaxed);
                }
                !over
            });
            while next_request <= now {
                let r = router
                    .reserve(&LeastLoaded::new())
                    .expect("a fleet that is never empty");
                let w = WORKERS
                    .iter()
                    .position(|(name, _)| name == r.worker())
                    .expect("a worker of the fleet");
                let ms = WORKERS[w].1 as f64 * (0.5 + f64::from(jitter.below(1001)) / 1000.0);
                held.push((now + Duration::from_secs_f64(ms / 1e3), w, r));
                let now_held = self.fleet.held[w].fetch_add(1, Relaxed) + 1;
                self.fleet.peak[w].fetch_max(now_held, Relaxed);
                self.fleet.routed[w].fetch_add(1, Relaxed);
                tally.routed += 1;
                next_request += EVERY;
            }
            if tally.midway.is_empty() && start.elapsed() >= RUN_FOR / 2 {
                tally.midway = self.view();
            }
            thread::sleep(Duration::from_micros(100));
        }
        // Every request ends; a last summary (now empty) tells the others, and
        // once every replica has sent its own, each takes in what is left.
        for (_, w, r) in held.drain(..) {
            self.fleet.held[w].fetch_sub(1, Relaxed);
            drop(r);
        }
        if self.period.is_some() {
            self.publish(&mut tally);
        }
        self.done.wait();
        self.receive(&mut tally);
        tally.peers = pool.reporting_peers();
        tally.end = self.view();
        tally
    }

    /// Sends this replica's summary to every other.
    fn publish(&self, tally: &mut Tally) {
        let summary = self.pool.summary();
        for peer in &self.peers {
            // A peer that has finished has dropped its inbox: nothing to tell it.
            if peer.send(encode(&summary)).is_ok() {
                tally.sent += 1;
            }
        }
    }

    /// Applies every summary that has arrived.
    fn receive(&self, tally: &mut Tally) {
        while let Ok(msg) = self.inbox.try_recv() {
            if self.pool.apply_summary(&decode(msg)) {
                tally.applied += 1;
            }
        }
    }

    /// Per worker: this replica's own in-flight count and the load the others reported.
    fn view(&self) -> Vec<(u32, u32)> {
        WORKERS
            .iter()
            .map(|(name, _)| {
                let name = (*name).to_owned();
                (
                    self.pool.in_flight(&name).unwrap_or(0),
                    self.pool.reported_load(&name).unwrap_or(0),
                )
            })
            .collect()
    }
}

const USAGE: &str = "usage: replicas [REPLICAS] [PERIOD_MS]
  REPLICAS   routers in front of the workers, 1 to 64 (default 4)
  PERIOD_MS  each sends its summary to the others this often, 0 to 1000 ms (default 5; 0: never)";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    Help,
    Run { replicas: usize, period_ms: u64 },
}

/// Parses the arguments after the program's name (as the OS gave them: an
/// argument that is not UTF-8 is refused, not a panic); an error is one line.
fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let mut numbers = Vec::new();
    for arg in args {
        let arg = arg
            .into_string()
            .map_err(|a| format!("argument `{}` is not UTF-8 text", a.to_string_lossy()))?;
        match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            a if a.starts_with('-') && a.parse::<i64>().is_err() => {
                return Err(format!("unknown option `{a}`"));
            }
            _ => numbers.push(arg),
        }
    }
    if numbers.len() > 2 {
        return Err(format!("unexpected argument `{}`", numbers[2]));
    }
    let number = |i: usize, what: &str, range: std::ops::RangeInclusive<u64>, default: u64| {
        let Some(arg) = numbers.get(i) else {
            return Ok(default);
        };
        match arg.parse::<u64>() {
            Ok(n) if range.contains(&n) => Ok(n),
            _ => Err(format!(
                "{what} must be a whole number from {} to {}, not `{arg}`",
                range.start(),
                range.end()
            )),
        }
    };
    Ok(Command::Run {
        replicas: number(0, "REPLICAS", 1..=64, 4)? as usize,
        period_ms: number(1, "PERIOD_MS", 0..=1000, 5)?,
    })
}

fn main() -> ExitCode {
    let (replicas, period_ms) = match parse(std::env::args_os().skip(1)) {
        Ok(Command::Run { replicas, period_ms }) => (replicas, period_ms),
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("replicas: {e} (see --help)");
            return ExitCode::from(2);
        }
    };
    let period = (period_ms > 0).then(|| Duration::from_millis(period_ms));

    let fleet = Arc::new(Fleet {
        held: WORKERS.iter().map(|_| AtomicU32::new(0)).collect(),
        peak: WORKERS.iter().map(|_| AtomicU32::new(0)).collect(),
        routed: WORKERS.iter().map(|_| AtomicU32::new(0)).collect(),
    });
    let (senders, inboxes): (Vec<Sender<Wire>>, Vec<Receiver<Wire>>) =
        (0..replicas).map(|_| channel()).unzip();
    let done = Arc::new(Barrier::new(replicas));
    let threads: Vec<_> = inboxes
        .into_iter()
        .enumerate()
        .map(|(id, inbox)| {
            let replica = Replica {
                id,
                pool: Pool::from_workers(WORKERS.iter().map(|(name, _)| (*name).to_owned()))
                    .expect("distinct names"),
                inbox,
                peers: (0..replicas)
                    .filter(|&o| o != id)
                    .map(|o| senders[o].clone())
                    .collect(),
                period,
                fleet: Arc::clone(&fleet),
                done: Arc::clone(&done),
            };
            thread::spawn(move || replica.run())
        })
        .collect();
    drop(senders);
    let tallies: Vec<Tally> = threads
        .into_iter()
        .map(|t| t.join().expect("replica thread"))
        .collect();

    let how = match period {
        Some(p) => format!("a summary every {} ms over mpsc channels", p.as_millis()),
        None => "no summaries: each replica counts only its own requests".into(),
    };
    let wire = if cfg!(feature = "serde") { " (as JSON)" } else { "" };
    println!(
        "{replicas} replica(s) routing with least-loaded for {} s, a request each every {} µs; {how}{wire}.\n",
        RUN_FOR.as_secs_f64(),
        EVERY.as_micros()
    );
    println!("replica  routed  summaries sent  applied  live peers at the end");
    for (r, t) in tallies.iter().enumerate() {
        println!(
            "r{r:<7}{:>7}{:>16}{:>9}{:>23}",
            t.routed, t.sent, t.applied, t.peers
        );
    }
    println!("\nworker  service  routed  peak held   r0 half-way: own + reported by the others = compared");
    for (w, (name, ms)) in WORKERS.iter().enumerate() {
        let (own, reported) = tallies[0].midway.get(w).copied().unwrap_or_default();
        println!(
            "{name:<8}{:>4} ms{:>8}{:>11}{:>18}{:>12}{:>13}",
            ms,
            fleet.routed[w].load(Relaxed),
            fleet.peak[w].load(Relaxed),
            own,
            reported,
            own + reported,
        );
    }
    let clean = tallies
        .iter()
        .all(|t| t.end.iter().all(|&(own, reported)| own == 0 && reported == 0));
    if !clean {
        eprintln!(
            "replicas: FAILED: load left counted after every reservation dropped and every last summary"
        );
        return ExitCode::FAILURE;
    }
    println!("\nAfter the run every replica's in-flight counts and reported loads are back to 0.");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::{Command, parse};

    fn args(a: &[&str]) -> Result<Command, String> {
        parse(a.iter().map(|s| (*s).into()))
    }

    #[test]
    fn defaults_and_numbers_in_range_run() {
        assert_eq!(
            args(&[]),
            Ok(Command::Run {
                replicas: 4,
                period_ms: 5
            })
        );
        assert_eq!(
            args(&["8", "2"]),
            Ok(Command::Run {
                replicas: 8,
                period_ms: 2
            })
        );
        assert_eq!(
            args(&["1", "0"]),
            Ok(Command::Run {
                replicas: 1,
                period_ms: 0
            })
        );
        assert_eq!(
            args(&["64"]),
            Ok(Command::Run {
                replicas: 64,
                period_ms: 5
            })
        );
    }

    #[test]
    fn help_asks_for_the_usage() {
        assert_eq!(args(&["--help"]), Ok(Command::Help));
        assert_eq!(args(&["4", "-h"]), Ok(Command::Help));
    }

    #[test]
    fn what_it_cannot_run_is_one_line_naming_the_argument() {
        for (bad, names) in [
            (&["abc"][..], "REPLICAS"),
            (&["0"], "REPLICAS"),
            (&["100"], "REPLICAS"),
            (&["-5"], "REPLICAS"),
            (&["4", "x"], "PERIOD_MS"),
            (&["4", "-1"], "PERIOD_MS"),
            (&["4", "99999999999999999999"], "PERIOD_MS"),
            (&["--fast"], "--fast"),
            (&["4", "5", "6"], "`6`"),
            (&[""], "REPLICAS"),
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
        for at in 0..2 {
            let mut a: Vec<std::ffi::OsString> = vec!["4".into(); at];
            a.push(std::ffi::OsString::from_vec(b"8\xff".to_vec()));
            let e = parse(a).unwrap_err();
            assert!(e.contains("not UTF-8") && e.contains("8\u{fffd}"), "{e}");
        }
    }
}
