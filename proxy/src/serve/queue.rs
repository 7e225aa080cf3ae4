//! `serve --queue`: requests wait in workerpick's admission
//! [`Queue`](workerpick::queue::Queue) while every upstream is saturated,
//! instead of being shed. Its settings ([`QueueSettings`]), what a request
//! asks of it from its headers ([`Ask`]), the shared queue and its counters
//! ([`Lobby`]), an admitted request's booking ([`Place`]) and the answers
//! for the requests it refuses ([`Refusal`]: 429 full, 408 past the
//! deadline, 400 a bad header, 503 no upstream).

use super::Addr;
use http::{HeaderMap, StatusCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use workerpick::queue::{Entry, OwnedAdmitted, OwnedTicket, Queue, QueueConfig, QueueError};
use workerpick::{Pool, Request as Pick, Selector, Sessions};

/// The header that gives a request's priority class: `0` (served first) to
/// the number of classes less one.
pub const PRIORITY: &str = "x-workerpick-priority";
/// The header that names a request's tenant, one of `--queue-tenant`'s names.
pub const TENANT: &str = "x-workerpick-tenant";
/// The header that gives how long a request may wait, in milliseconds from
/// its arrival (at most the default deadline's 24 h bound).
pub const DEADLINE: &str = "x-workerpick-deadline-ms";

/// How `serve --queue` is sized, ordered and when an upstream is saturated.
#[derive(Clone, Debug)]
pub struct QueueSettings {
    /// How many requests may wait at once; one more is answered 429.
    pub capacity: usize,
    /// Strict priority classes, 1 to 8.
    pub classes: usize,
    /// The class of a request without the priority header.
    pub default_class: usize,
    /// The tenants by name with their fair-share weights; the first is the
    /// tenant of a request without the tenant header.
    pub tenants: Vec<(String, u32)>,
    /// Saturated at this load booked per unit of capacity weight (in the
    /// paths' load units: 1 a pass-through request, prompt blocks plus the
    /// decode share an LLM request).
    pub in_flight: Option<u32>,
    /// Saturated at this load reported by the other replicas.
    pub reported: Option<u32>,
    /// How long a request waits without the deadline header.
    pub deadline: Duration,
    /// Shortest uncached first with this aging (tokens per ms waited)
    /// instead of the tenants' fair shares.
    pub shortest_first: Option<u32>,
}

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            capacity: 1024,
            classes: 1,
            default_class: 0,
            tenants: vec![("default".to_string(), 1)],
            in_flight: None,
            reported: None,
            deadline: Duration::from_secs(60),
            shortest_first: None,
        }
    }
}

impl QueueSettings {
    /// Why these settings cannot run, if they cannot (the message names
    /// the flag).
    pub fn check(&self) -> Result<(), String> {
        self.config().map(drop)
    }

    /// The crate's configuration, or why it cannot be one.
    fn config(&self) -> Result<QueueConfig, String> {
        if self.in_flight.is_none() && self.reported.is_none() {
            return Err("--queue needs a saturation rule: --queue-in-flight or --queue-reported".into());
        }
        if self.default_class >= self.classes {
            return Err(format!(
                "--queue-default-class {} is not below --queue-classes {}",
                self.default_class, self.classes
            ));
        }
        for (i, (name, _)) in self.tenants.iter().enumerate() {
            if self.tenants[..i].iter().any(|(n, _)| n == name) {
                return Err(format!("tenant `{name}` is given twice"));
            }
        }
        let weights: Vec<u32> = self.tenants.iter().map(|&(_, w)| w).collect();
        let mut config = QueueConfig::new()
            .capacity(self.capacity)
            .classes(self.classes)
            .tenants(&weights);
        if let Some(n) = self.in_flight {
            config = config.in_flight_limit(n);
        }
        if let Some(n) = self.reported {
            config = config.reported_limit(n);
        }
        if let Some(aging) = self.shortest_first {
            config = config.shortest_first(aging);
        }
        config.check().map_err(|e| format!("--queue: {e}"))?;
        Ok(config)
    }
}

/// A `--queue-tenant` value: `NAME=WEIGHT`.
pub fn tenant(text: &str) -> Result<(String, u32), String> {
    let (name, weight) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: expected NAME=WEIGHT"))?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "`{name}` is not a tenant name (visible ASCII, no spaces)"
        ));
    }
    match weight.parse::<u32>() {
        Ok(w) if w >= 1 => Ok((name.to_string(), w)),
        _ => Err(format!(
            "tenant `{name}`: weight `{weight}` is not a whole number of at least 1"
        )),
    }
}

/// What a request asks of the queue, from its headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    /// Its priority class.
    pub class: usize,
    /// Its tenant's index in the settings.
    pub tenant: usize,
    /// When it stops waiting.
    pub deadline: Instant,
}

impl Ask {
    /// The queue entry of a request of `weight` of which `credit` is cached.
    pub fn entry(&self, weight: u32, credit: u32) -> Entry {
        Entry::new()
            .class(self.class)
            .tenant(self.tenant)
            .weight(weight)
            .credit(credit)
            .deadline(self.deadline)
    }
}

/// Why a request was not admitted: its status and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// 429, 408, 400 or 503.
    pub status: StatusCode,
    /// What the client is told.
    pub message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// The OpenAI-style error type of its status.
    pub fn kind(&self) -> &'static str {
        match self.status {
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_exceeded",
            StatusCode::REQUEST_TIMEOUT => "timeout",
            StatusCode::BAD_REQUEST => "invalid_request_error",
            _ => "server_error",
        }
    }
}

/// What the queue counted.
#[derive(Debug, Default)]
pub struct QueueCounts {
    /// Requests admitted (at once or after a wait).
    pub admitted: AtomicU64,
    /// Of those, requests that waited.
    pub waited: AtomicU64,
    /// Requests whose deadline passed while they waited (408).
    pub timed_out: AtomicU64,
    /// Requests refused because every waiter slot was taken (429).
    pub full: AtomicU64,
    /// Requests whose client went away while they waited.
    pub cancelled: AtomicU64,
}

/// The queue every connection shares, with its settings and counters.
pub struct Lobby {
    queue: Arc<Queue<Addr, Arc<dyn Selector>>>,
    settings: QueueSettings,
    counts: QueueCounts,
}

impl Lobby {
    /// A queue over `pool` that books with `selector`, and keyed requests
    /// by `sessions`' bindings while the bound upstream has room.
    pub fn new(
        pool: Arc<Pool<Addr>>,
        selector: Arc<dyn Selector>,
        settings: QueueSettings,
        sessions: Option<Arc<Sessions>>,
    ) -> Result<Self, String> {
        let config = settings.config()?;
        let mut queue = Queue::new(pool, selector, config).map_err(|e| format!("--queue: {e}"))?;
        if let Some(sessions) = sessions {
            queue = queue.with_sessions(sessions);
        }
        let queue = Arc::new(queue);
        Ok(Self {
            queue,
            settings,
            counts: QueueCounts::default(),
        })
    }

    /// Admits waiters into room the queue did not see made (a replica's
    /// summary lowering a reported load, an ejected upstream back in);
    /// returns how many. Takes no lock while nobody waits.
    pub fn pump(&self) -> usize {
        if self.queue.waiting() == 0 {
            return 0;
        }
        self.queue.pump()
    }

    /// Requests waiting now.
    pub fn waiting(&self) -> usize {
        self.queue.waiting()
    }

    /// What it counted.
    pub fn counts(&self) -> &QueueCounts {
        &self.counts
    }

    /// Its settings.
    pub fn settings(&self) -> &QueueSettings {
        &self.settings
    }

    /// What a request that arrived at `now` with `headers` asks: a 400 for
    /// a header that is not a class, a known tenant or a number of ms.
    pub fn ask(&self, headers: &HeaderMap, now: Instant) -> Result<Ask, Refusal> {
        let text = |name: &str| -> Result<Option<&str>, Refusal> {
            headers
                .get(name)
                .map(|v| {
                    v.to_str()
                        .map(str::trim)
                        .map_err(|_| Refusal::new(StatusCode::BAD_REQUEST, format!("`{name}` is not text")))
                })
                .transpose()
        };
        let s = &self.settings;
        let class = match text(PRIORITY)? {
            None => s.default_class,
            Some(t) => t
                .parse::<usize>()
                .ok()
                .filter(|&c| c < s.classes)
                .ok_or_else(|| {
                    Refusal::new(
                        StatusCode::BAD_REQUEST,
                        format!("`{PRIORITY}: {t}` is not a class from 0 to {}", s.classes - 1),
                    )
                })?,
        };
        let tenant = match text(TENANT)? {
            None => 0,
            Some(t) => s.tenants.iter().position(|(n, _)| n == t).ok_or_else(|| {
                Refusal::new(
                    StatusCode::BAD_REQUEST,
                    format!("`{TENANT}: {t}` is not a known tenant"),
                )
            })?,
        };
        let wait = match text(DEADLINE)? {
            None => s.deadline,
            Some(t) => t
                .parse::<u64>()
                .ok()
                .filter(|&ms| ms <= 86_400_000)
                .map(Duration::from_millis)
                .ok_or_else(|| {
                    Refusal::new(
                        StatusCode::BAD_REQUEST,
                        format!("`{DEADLINE}: {t}` is not a number of ms up to 86400000"),
                    )
                })?,
        };
        Ok(Ask {
            class,
            tenant,
            deadline: now + wait,
        })
    }

    /// Queues `entry`, booked by `request`'s cache hits, mask and tuning when
    /// given (its weight and key replace the entry's): at once, without the
    /// queue's lock, when nobody waits and an upstream has room.
    pub fn enqueue(&self, entry: Entry, request: Option<&Pick<'_>>) -> Result<Waiting, Refusal> {
        let ticket = match request {
            Some(r) => self.queue.enqueue_owned_with(entry, r),
            None => self.queue.enqueue_owned(entry),
        };
        ticket.map_err(|e| self.refused(e))
    }

    /// Waits for `ticket`'s admission until `deadline`. Dropping the future
    /// cancels the request and leaves no waiter behind.
    pub async fn admit(self: Arc<Self>, mut ticket: Waiting, deadline: Instant) -> Result<Place, Refusal> {
        let mut admitted = match ticket.try_admit() {
            Ok(Some(admitted)) => admitted,
            Ok(None) => {
                self.counts.waited.fetch_add(1, Ordering::Relaxed);
                let left = Left(&self.counts.cancelled);
                // The timer ends a wait on time with no request arriving:
                // the ticket drops (cancelled, nothing booked) at the deadline.
                let waited = tokio::time::timeout_at(deadline.into(), ticket).await;
                std::mem::forget(left);
                match waited {
                    Ok(Ok(admitted)) => admitted,
                    Ok(Err(e)) => return Err(self.refused(e)),
                    Err(_) => return Err(self.refused(QueueError::Timeout)),
                }
            }
            Err(e) => return Err(self.refused(e)),
        };
        self.counts.admitted.fetch_add(1, Ordering::Relaxed);
        let rank = admitted.reservation().rank();
        Ok(Place { admitted, rank })
    }

    fn refused(&self, e: QueueError) -> Refusal {
        match e {
            QueueError::Full => {
                self.counts.full.fetch_add(1, Ordering::Relaxed);
                Refusal::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "every upstream is saturated and the admission queue is full (--queue): retry later",
                )
            }
            QueueError::Timeout => {
                self.counts.timed_out.fetch_add(1, Ordering::Relaxed);
                Refusal::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "the request's deadline passed while it waited for an upstream with room",
                )
            }
            QueueError::Pick(e) => Refusal::new(StatusCode::SERVICE_UNAVAILABLE, format!("no upstream: {e}")),
            e => Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, format!("admission: {e}")),
        }
    }
}

/// Counts a wait that ended because its future was dropped (the client
/// went away); forgotten when the wait ends otherwise.
struct Left<'a>(&'a AtomicU64);

impl Drop for Left<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A queued request's ticket (`'static + Send`: it holds the queue).
pub type Waiting = OwnedTicket<Addr, Arc<dyn Selector>>;

/// An admitted request's booking: its release (a part, or all of it on
/// drop) admits the next waiters.
pub struct Place {
    admitted: OwnedAdmitted<Addr, Arc<dyn Selector>>,
    rank: u32,
}

impl Place {
    /// The upstream it is booked on.
    pub fn worker(&self) -> &Addr {
        self.admitted.worker()
    }

    /// The rank it is booked on.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Gives back `n` of the booked load now and admits waiters into the
    /// room it made; returns how much it gave back.
    pub fn release_part(&mut self, n: u32) -> u32 {
        self.admitted.release_part(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use workerpick::LeastLoaded;

    fn lobby(settings: QueueSettings) -> Lobby {
        let pool = Arc::new(Pool::from_workers([Addr("127.0.0.1:1".parse().unwrap())]).unwrap());
        Lobby::new(pool, Arc::new(LeastLoaded::new()), settings, None).unwrap()
    }

    #[test]
    fn headers_give_the_class_the_tenant_and_the_deadline() {
        let settings = QueueSettings {
            classes: 3,
            default_class: 1,
            tenants: vec![("web".into(), 4), ("batch".into(), 1)],
            in_flight: Some(1),
            deadline: Duration::from_secs(5),
            ..QueueSettings::default()
        };
        let lobby = lobby(settings);
        let now = Instant::now();
        let mut h = HeaderMap::new();
        let ask = lobby.ask(&h, now).unwrap();
        assert_eq!(
            (ask.class, ask.tenant, ask.deadline),
            (1, 0, now + Duration::from_secs(5))
        );
        h.insert(PRIORITY, HeaderValue::from_static("0"));
        h.insert(TENANT, HeaderValue::from_static("batch"));
        h.insert(DEADLINE, HeaderValue::from_static("250"));
        let ask = lobby.ask(&h, now).unwrap();
        assert_eq!(
            (ask.class, ask.tenant, ask.deadline),
            (0, 1, now + Duration::from_millis(250))
        );
        for (name, bad) in [
            (PRIORITY, "3"),
            (PRIORITY, "-1"),
            (TENANT, "nobody"),
            (DEADLINE, "soon"),
        ] {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::from_static(bad));
            let refusal = lobby.ask(&h, now).unwrap_err();
            assert_eq!(refusal.status, StatusCode::BAD_REQUEST, "{name}: {bad}");
            assert!(refusal.message.contains(name), "{}", refusal.message);
        }
    }

    #[test]
    fn settings_need_a_saturation_rule_and_distinct_tenants() {
        assert!(
            QueueSettings::default()
                .config()
                .unwrap_err()
                .contains("saturation")
        );
        let twice = QueueSettings {
            in_flight: Some(1),
            tenants: vec![("a".into(), 1), ("a".into(), 2)],
            ..QueueSettings::default()
        };
        assert!(twice.config().unwrap_err().contains("twice"));
        let class = QueueSettings {
            reported: Some(4),
            default_class: 2,
            classes: 2,
            ..QueueSettings::default()
        };
        assert!(class.config().unwrap_err().contains("default-class"));
        let nine = QueueSettings {
            in_flight: Some(1),
            classes: 9,
            ..QueueSettings::default()
        };
        assert!(nine.config().unwrap_err().contains("classes"));
        assert_eq!(tenant("web=4").unwrap(), ("web".to_string(), 4));
        for bad in ["web", "web=0", "=2", "a b=1", "web=x"] {
            assert!(tenant(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refusals_map_to_429_408_and_503() {
        let lobby = lobby(QueueSettings {
            in_flight: Some(1),
            ..QueueSettings::default()
        });
        let full = lobby.refused(QueueError::Full);
        assert_eq!(
            (full.status, full.kind()),
            (StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded")
        );
        let late = lobby.refused(QueueError::Timeout);
        assert_eq!(
            (late.status, late.kind()),
            (StatusCode::REQUEST_TIMEOUT, "timeout")
        );
        let none = lobby.refused(QueueError::Pick(workerpick::Error::NoEligibleWorker));
        assert_eq!(none.status, StatusCode::SERVICE_UNAVAILABLE);
        let c = lobby.counts();
        assert_eq!(
            (
                c.full.load(Ordering::Relaxed),
                c.timed_out.load(Ordering::Relaxed)
            ),
            (1, 1)
        );
    }
}
