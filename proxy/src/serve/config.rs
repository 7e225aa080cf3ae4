//! What `serve` runs: its [`Config`], the `--upstream` syntax and the
//! upstreams file, the pool's key [`Addr`].

use crate::llm::{self, LlmConfig};
use http::uri::Authority;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

/// One `--upstream`: `host:port`, optionally `=CAP` (its capacity weight),
/// then optionally `,events=tcp://HOST:PORT` (its engine's KV event PUB
/// socket: exact credit for its token prompts) and `,replay=tcp://HOST:PORT`
/// (the engine's replay socket, asked for lost batches).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// Where it listens.
    pub authority: Authority,
    /// Its capacity weight (1 unless given).
    pub capacity: u32,
    /// Its engine's KV events, when given.
    pub events: Option<llm::events::EventSource>,
}

impl FromStr for UpstreamSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(',');
        let head = parts.next().unwrap_or_default();
        let (addr, capacity) = match head.split_once('=') {
            Some((addr, cap)) => {
                let cap = cap
                    .parse()
                    .map_err(|_| format!("capacity `{cap}` is not a whole number"))?;
                if cap == 0 || cap > workerpick::MAX_CAPACITY {
                    return Err(format!(
                        "capacity {cap} is outside 1..={}",
                        workerpick::MAX_CAPACITY
                    ));
                }
                (addr, cap)
            }
            None => (head, 1),
        };
        let authority: Authority = addr
            .parse()
            .map_err(|e| format!("`{addr}` is not host:port ({e})"))?;
        if authority.port_u16().is_none() || authority.as_str().contains('@') {
            return Err(format!("`{addr}` needs host:port"));
        }
        let (mut events, mut replay) = (None, None);
        for part in parts {
            let (key, value) = part.split_once('=').ok_or_else(|| {
                format!("`{part}`: expected events=tcp://HOST:PORT or replay=tcp://HOST:PORT")
            })?;
            let slot = match key {
                "events" => &mut events,
                "replay" => &mut replay,
                _ => return Err(format!("`{key}` is not an upstream option (events, replay)")),
            };
            if slot.is_some() {
                return Err(format!("`{key}` given twice"));
            }
            *slot = Some(llm::events::endpoint(value).map_err(|e| format!("{key}: {e}"))?);
        }
        let events = match (events, replay) {
            (Some(endpoint), replay) => Some(llm::events::EventSource { endpoint, replay }),
            (None, Some(_)) => return Err("`replay` needs `events`".into()),
            (None, None) => None,
        };
        Ok(Self {
            authority,
            capacity,
            events,
        })
    }
}

/// The upstreams a `--upstreams-file` lists: one `host:port[=CAP][,events=..]` a line;
/// blank lines and everything after a `#` are skipped. An error names its line.
pub fn read_upstreams(text: &str) -> Result<Vec<UpstreamSpec>, String> {
    let mut upstreams = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split_once('#').map_or(line, |(kept, _)| kept).trim();
        if !line.is_empty() {
            upstreams.push(line.parse().map_err(|e| format!("line {}: {e}", n + 1))?);
        }
    }
    if upstreams.is_empty() {
        return Err("lists no upstream".to_string());
    }
    Ok(upstreams)
}

/// An upstream as the pool's key: its authority, serializable (as
/// `host:port`) so that replica summaries can name it on a bus.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Addr(pub Authority);

impl serde::Serialize for Addr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Addr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map(Addr).map_err(serde::de::Error::custom)
    }
}

/// Replica sync over NATS: where and how often.
#[derive(Clone, Debug)]
pub struct Replicas {
    /// The NATS server, `nats://host:port`.
    pub url: String,
    /// The subject the fleet's replicas share.
    pub subject: String,
    /// How often this replica publishes its summary.
    pub period: Duration,
    /// How long a peer's summary counts after it arrives.
    pub max_age: Duration,
}

/// What `serve` runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where it listens.
    pub listen: SocketAddr,
    /// The upstreams, each with its capacity.
    pub upstreams: Vec<UpstreamSpec>,
    /// The name of the mode it routes in, as [`registry`](super::registry) knows it.
    pub mode: String,
    /// Consecutive failures (5xx answers, connect or response errors) that
    /// mark an upstream unhealthy.
    pub fail_after: u32,
    /// How long an unhealthy upstream stays out before it is tried again.
    pub eject_for: Duration,
    /// How long a stop waits for requests in flight before it closes them.
    pub drain_for: Duration,
    /// The bound on requests in flight beyond which they are shed (503).
    pub max_in_flight: Option<u32>,
    /// Replica sync over NATS, if any.
    pub replicas: Option<Replicas>,
    /// The admission queue (`--queue`): requests wait for room instead of
    /// being shed.
    pub queue: Option<super::QueueSettings>,
    /// The LLM path's settings.
    pub llm: LlmConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstreams_file_lists_one_a_line_with_comments_and_blank_lines() {
        let text = "# the fleet\n10.0.0.1:8000\n\n  10.0.0.2:8000=2  # the big one\n";
        let listed = read_upstreams(text).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].authority, "10.0.0.1:8000");
        assert_eq!(
            (listed[1].authority.as_str(), listed[1].capacity),
            ("10.0.0.2:8000", 2)
        );
        assert_eq!(read_upstreams("# none\n\n").unwrap_err(), "lists no upstream");
        let bad = read_upstreams("10.0.0.1:8000\n10.0.0.2\n").unwrap_err();
        assert!(bad.starts_with("line 2: "), "{bad}");
    }

    #[test]
    fn an_upstream_names_its_engines_event_sockets() {
        let u: UpstreamSpec = "10.0.0.1:8000=2,events=tcp://10.0.0.1:5557,replay=tcp://10.0.0.1:5558"
            .parse()
            .unwrap();
        assert_eq!(u.capacity, 2);
        let e = u.events.unwrap();
        assert_eq!(e.endpoint, "tcp://10.0.0.1:5557");
        assert_eq!(e.replay.as_deref(), Some("tcp://10.0.0.1:5558"));
        let plain: UpstreamSpec = "10.0.0.1:8000,events=tcp://h:1".parse().unwrap();
        assert_eq!((plain.capacity, plain.events.unwrap().replay), (1, None));
        for (bad, says) in [
            ("10.0.0.1:8000,replay=tcp://h:1", "needs `events`"),
            ("10.0.0.1:8000,events=h:1", "tcp://"),
            ("10.0.0.1:8000,events=tcp://h", "tcp://"),
            ("10.0.0.1:8000,events=tcp://h:1,events=tcp://h:2", "twice"),
            ("10.0.0.1:8000,colour=red", "not an upstream option"),
            ("10.0.0.1:8000,events", "expected"),
        ] {
            let e = bad.parse::<UpstreamSpec>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
