//! The engines' KV events (vLLM's and SGLang's), decoded and applied to a
//! [`PrefixIndex`](crate::prefix::PrefixIndex): the index's exact mode
//! (feature `kv-events`; the ZMQ subscriber: feature `kv-events-zmq`).
//!
//! - [`decode_batch`]: one msgpack payload → an [`EventBatch`] of
//!   [`KvEvent`]s (`BlockStored`, `BlockRemoved`, `AllBlocksCleared`), in
//!   both layouts the engines publish (tagged arrays and tagged maps), with
//!   typed [`DecodeError`]s for anything else.
//! - [`EventApplier`]: one engine rank's stream applied in sequence order:
//!   engine block hashes mapped to the router's own keys through the
//!   events' token ids, a gap marks the worker's credit degraded until a
//!   replay (or an `AllBlocksCleared`) makes it whole, and one engine's
//!   removals never touch another's holdings.
//! - `Subscriber` (feature `kv-events-zmq`): vLLM's ZMQ PUB socket and its
//!   ROUTER replay socket, on tokio, feeding an applier.
//!
//! Transports of your own (a NATS relay, a file) call
//! [`EventApplier::feed`] with the message's frames, or
//! [`EventApplier::feed_payload`] with a sequence number and a payload.
//!
//! ```
//! use std::sync::Arc;
//! use workerpick::kv_events::{EventApplier, Fed};
//! use workerpick::prefix::{IndexConfig, Matches, PrefixIndex, keys_of_tokens};
//! use workerpick::{CacheHits, Cost, Pool, Request};
//!
//! let pool = Arc::new(Pool::from_workers(["engine-0", "engine-1"]).unwrap());
//! let index = Arc::new(PrefixIndex::new(IndexConfig::exact(2)).unwrap());
//! let mut e1 = EventApplier::new(index.clone(), pool.clone(), "engine-1", 0);
//!
//! // engine-1 published batch 0: [ts, [["BlockStored", [101, 102], nil,
//! // [1, 2, 3, 4], 2, nil, "GPU"]], 0], as msgpack (vLLM's array layout).
//! let payload = [
//!     &[0x93, 0xcb][..], &0.5f64.to_be_bytes(), &[0x91, 0x97, 0xab], b"BlockStored",
//!     &[0x92, 0x65, 0x66, 0xc0, 0x94, 1, 2, 3, 4, 2, 0xc0, 0xa3], b"GPU", &[0x00],
//! ]
//! .concat();
//! let seq = 0u64.to_be_bytes();
//! assert_eq!(e1.feed(&[b"", &seq, &payload]), Ok(Fed::Applied));
//!
//! // A prompt starting with those 4 tokens: engine-1 caches 2 blocks of it.
//! let mut keys = Vec::new();
//! keys_of_tokens(&[1, 2, 3, 4, 5, 6], 2, 0, &mut keys);
//! let (mut found, mut hits) = (Matches::new(), CacheHits::new());
//! assert_eq!(index.lookup(&keys, &mut found), 2);
//! found.fill(&pool, &mut hits);
//! let r = pool.reserve_with(&Cost::new(), &Request::new().cache_hits(&hits)).unwrap();
//! assert_eq!(*r.worker(), "engine-1");
//! ```

mod applier;
mod error;
mod wire;
#[cfg(feature = "kv-events-zmq")]
#[cfg_attr(docsrs, doc(cfg(feature = "kv-events-zmq")))]
mod zmq;

pub use applier::{ApplierStats, EventApplier, Fed};
pub use error::{DecodeError, EventError};
pub use wire::{BlockRemoved, BlockStored, EngineHash, EventBatch, KvEvent, decode_batch};
#[cfg(feature = "kv-events-zmq")]
pub use zmq::Subscriber;
