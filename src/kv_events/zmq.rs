//! vLLM's ZMQ sockets: the PUB stream and the ROUTER replay socket.

use super::applier::{EventApplier, Fed};
use super::error::EventError;
use std::hash::Hash;
use std::time::Duration;
use zeromq::{DealerSocket, Socket, SocketRecv, SocketSend, SubSocket, ZmqMessage};

/// The replay socket's "no more" sequence number (−1 as 8 bytes).
const END_SEQ: [u8; 8] = [0xff; 8];

fn transport(e: zeromq::ZmqError) -> EventError {
    EventError::Transport(e.to_string())
}

/// One engine's KV event stream over ZMQ, applied by an [`EventApplier`]:
/// a SUB socket on the engine's PUB endpoint (vLLM's `--kv-events-config`
/// `endpoint`, `tcp://*:5557` by default: connect to `tcp://engine:5557`;
/// data-parallel rank `r` publishes on the port plus `r`), and, when the
/// engine offers one (`replay_endpoint`), its ROUTER replay socket, asked
/// for the missing batches whenever a gap opens.
///
/// Pure Rust ([`zeromq`](https://docs.rs/zeromq)), on tokio; TCP endpoints
/// only. The engine's PUB socket drops messages for a subscriber that
/// falls behind its high-water mark: that is a gap like any other.
///
/// ```no_run
/// # async fn run() -> Result<(), workerpick::kv_events::EventError> {
/// use std::sync::Arc;
/// use workerpick::Pool;
/// use workerpick::kv_events::{EventApplier, Subscriber};
/// use workerpick::prefix::{IndexConfig, PrefixIndex};
///
/// let pool = Arc::new(Pool::from_workers(["engine-0"]).unwrap());
/// let index = Arc::new(PrefixIndex::new(IndexConfig::exact(16)).unwrap());
/// let applier = EventApplier::new(index.clone(), pool.clone(), "engine-0", 0);
/// let mut sub =
///     Subscriber::connect(applier, "tcp://10.0.0.5:5557", "", Some("tcp://10.0.0.5:5558")).await?;
/// loop {
///     match sub.next().await {
///         Ok(_) => {}
///         Err(e @ workerpick::kv_events::EventError::Transport(_)) => return Err(e),
///         Err(_bad_message) => {} // counted in sub.applier().stats().refused
///     }
/// }
/// # }
/// ```
pub struct Subscriber<W> {
    applier: EventApplier<W>,
    sub: SubSocket,
    replay: Option<String>,
    replay_timeout: Duration,
}

impl<W: Clone + Eq + Hash + Send + Sync> Subscriber<W> {
    /// Subscribes to `topic` (vLLM's default is `""`: everything) on the
    /// engine's PUB `endpoint`, with its replay socket at `replay` if any.
    /// Waits until the engine's socket accepts the connection.
    pub async fn connect(
        applier: EventApplier<W>,
        endpoint: &str,
        topic: &str,
        replay: Option<&str>,
    ) -> Result<Self, EventError> {
        let mut sub = SubSocket::new();
        sub.connect(endpoint).await.map_err(transport)?;
        sub.subscribe(topic).await.map_err(transport)?;
        Ok(Self {
            applier,
            sub,
            replay: replay.map(str::to_owned),
            replay_timeout: Duration::from_secs(2),
        })
    }

    /// How long a replay may wait for the engine, to connect and between
    /// two of its messages (default 2 s); past it the gap is given up (see
    /// [`EventApplier::replay_done`]).
    pub fn replay_timeout(mut self, timeout: Duration) -> Self {
        self.replay_timeout = timeout;
        self
    }

    /// The applier (its stats, its worker).
    pub fn applier(&self) -> &EventApplier<W> {
        &self.applier
    }

    /// Receives and applies the next message; when it opens a gap, first
    /// asks the replay socket for the missing batches and applies them
    /// ([`Fed::Gap`] is returned after that replay: [`EventApplier::gap`]
    /// says whether it was filled). [`EventError::Transport`] is the socket
    /// failing; any other error is one bad message, counted and skipped.
    pub async fn next(&mut self) -> Result<Fed, EventError> {
        let msg = self.sub.recv().await.map_err(transport)?;
        let frames: Vec<&[u8]> = msg.iter().map(|f| &f[..]).collect();
        let fed = self.applier.feed(&frames)?;
        if let Fed::Gap { from } = fed {
            self.replay_from(from).await;
        }
        Ok(fed)
    }

    /// Asks the replay socket for the batches from `from` on and applies
    /// them; then the gap is either filled or given up.
    async fn replay_from(&mut self, from: u64) {
        if let Some(endpoint) = self.replay.clone() {
            let _ = self.replay(&endpoint, from, self.replay_timeout).await;
        }
        self.applier.replay_done();
    }

    async fn replay(&mut self, endpoint: &str, from: u64, step: Duration) -> Result<(), EventError> {
        let mut dealer = DealerSocket::new();
        tokio::time::timeout(step, dealer.connect(endpoint))
            .await
            .map_err(|_| EventError::Transport("replay socket unreachable".into()))?
            .map_err(transport)?;
        // [empty delimiter, start sequence]: the ROUTER sees [identity, "", seq].
        let mut request = ZmqMessage::from(from.to_be_bytes().to_vec());
        request.prepend(&ZmqMessage::from(Vec::new()));
        dealer.send(request).await.map_err(transport)?;
        loop {
            let reply = tokio::time::timeout(step, dealer.recv())
                .await
                .map_err(|_| EventError::Transport("replay timed out".into()))?
                .map_err(transport)?;
            // [empty delimiter, sequence, payload]; the end is sequence -1.
            let frames: Vec<&[u8]> = reply
                .iter()
                .map(|f| &f[..])
                .skip_while(|f| f.is_empty())
                .collect();
            if frames.first().is_some_and(|s| *s == END_SEQ) {
                return Ok(());
            }
            // A bad replayed message is counted; the gap stays open for it.
            let _ = self.applier.feed(&frames);
        }
    }
}

impl<W: std::fmt::Debug> std::fmt::Debug for Subscriber<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("applier", &self.applier)
            .field("replay", &self.replay)
            .finish_non_exhaustive()
    }
}
