//! The fake engine's KV events as vLLM publishes them: msgpack batches
//! `[ts, [event, ...], data_parallel_rank]` on a ZMQ PUB socket, each
//! message the frames `[topic, sequence number (8 bytes, big-endian),
//! payload]`, the topic empty; and vLLM's ROUTER replay socket, which
//! answers `[identity, "", start sequence]` with `[identity, "", sequence,
//! payload]` for each batch it still holds from there on (the last
//! [`REPLAY_BATCHES`]), then `[identity, "", -1, ""]`.

use super::cache::Changes;
use bytes::Bytes;
use rmp::encode;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use workerpick::prefix::BlockKey;
use zeromq::{PubSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

/// The batches the replay socket holds (vLLM's `buffer_steps`).
pub const REPLAY_BATCHES: usize = 1024;

/// The engine's own hash of a block: not the router's key (the router maps
/// one to the other through the event's tokens).
pub fn engine_hash(key: BlockKey) -> u64 {
    key.raw().rotate_left(17) ^ 0x5eed_e4a1_0c0f_fee5
}

/// One admission's events, encoded: `BlockRemoved` for what it evicted,
/// then a `BlockStored` per run of new blocks, with its parent's hash and
/// its tokens (`tokens` holds the prompt's, `block` per block; `None` for a
/// text prompt: its evictions only are published). `None` when it changed
/// nothing that is published.
pub fn batch(
    keys: &[BlockKey],
    tokens: Option<&[u32]>,
    block: usize,
    changes: &Changes,
    ts: f64,
) -> Option<Vec<u8>> {
    let stored: &[(usize, usize)] = if tokens.is_some() { &changes.stored } else { &[] };
    let events = usize::from(!changes.removed.is_empty()) + stored.len();
    if events == 0 {
        return None;
    }
    let mut b = Vec::new();
    let ok = "a Vec takes every write";
    encode::write_array_len(&mut b, 3).expect(ok);
    encode::write_f64(&mut b, ts).expect(ok);
    encode::write_array_len(&mut b, events as u32).expect(ok);
    if !changes.removed.is_empty() {
        // ["BlockRemoved", [hash, ...], medium]
        encode::write_array_len(&mut b, 3).expect(ok);
        encode::write_str(&mut b, "BlockRemoved").expect(ok);
        encode::write_array_len(&mut b, changes.removed.len() as u32).expect(ok);
        for &k in &changes.removed {
            encode::write_uint(&mut b, engine_hash(k)).expect(ok);
        }
        encode::write_str(&mut b, "GPU").expect(ok);
    }
    for &(first, n) in stored {
        // ["BlockStored", [hash, ...], parent, [token, ...], block_size, lora_id, medium]
        encode::write_array_len(&mut b, 7).expect(ok);
        encode::write_str(&mut b, "BlockStored").expect(ok);
        encode::write_array_len(&mut b, n as u32).expect(ok);
        for &k in &keys[first..first + n] {
            encode::write_uint(&mut b, engine_hash(k)).expect(ok);
        }
        match first.checked_sub(1) {
            Some(p) => encode::write_uint(&mut b, engine_hash(keys[p]))
                .map(drop)
                .expect(ok),
            None => encode::write_nil(&mut b).expect(ok),
        }
        let run = &tokens.unwrap_or_default()[first * block..(first + n) * block];
        encode::write_array_len(&mut b, run.len() as u32).expect(ok);
        for &t in run {
            encode::write_uint(&mut b, u64::from(t)).expect(ok);
        }
        encode::write_uint(&mut b, block as u64).expect(ok);
        encode::write_nil(&mut b).expect(ok);
        encode::write_str(&mut b, "GPU").expect(ok);
    }
    encode::write_nil(&mut b).expect(ok);
    Some(b)
}

/// The sockets [`publish`] bound, and its tasks (stopped on drop).
pub struct Publisher {
    /// The PUB socket, `tcp://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The ROUTER replay socket, `tcp://127.0.0.1:PORT`.
    pub replay: String,
    tasks: [tokio::task::JoinHandle<()>; 2],
}

impl Drop for Publisher {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// One message of the frames `parts` (at least one).
fn message(parts: &[&[u8]]) -> ZmqMessage {
    let (last, head) = parts.split_last().expect("a message has a frame");
    let mut m = ZmqMessage::from(last.to_vec());
    for p in head.iter().rev() {
        m.prepend(&ZmqMessage::from(p.to_vec()));
    }
    m
}

/// Binds a PUB and a ROUTER replay socket on 127.0.0.1 (any free ports) and
/// publishes what `batches` receives, numbered from 0. With `lose_every`
/// N > 0, every Nth batch (numbers N−1, 2N−1, …) is left off the PUB
/// stream, as a PUB socket over its high-water mark drops it, and only the
/// replay socket has it; `lost` counts them.
pub async fn publish(
    mut batches: mpsc::UnboundedReceiver<Vec<u8>>,
    lose_every: u32,
    lost: Arc<std::sync::atomic::AtomicU64>,
) -> std::io::Result<Publisher> {
    let mut socket = PubSocket::new();
    let endpoint = socket
        .bind("tcp://127.0.0.1:0")
        .await
        .map_err(std::io::Error::other)?
        .to_string();
    let mut router = RouterSocket::new();
    let replay = router
        .bind("tcp://127.0.0.1:0")
        .await
        .map_err(std::io::Error::other)?
        .to_string();
    let held: Arc<Mutex<VecDeque<(u64, Bytes)>>> = Arc::default();
    let kept = held.clone();
    let publishing = tokio::spawn(async move {
        let mut seq = 0u64;
        while let Some(payload) = batches.recv().await {
            let payload = Bytes::from(payload);
            if let Ok(mut h) = kept.lock() {
                if h.len() == REPLAY_BATCHES {
                    h.pop_front();
                }
                h.push_back((seq, payload.clone()));
            }
            if lose_every > 0 && (seq + 1).is_multiple_of(u64::from(lose_every)) {
                lost.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            } else {
                // A PUB socket drops what no subscriber takes: so does an engine.
                let _ = socket.send(message(&[b"", &seq.to_be_bytes(), &payload])).await;
            }
            seq += 1;
        }
    });
    let replaying = tokio::spawn(async move {
        while let Ok(request) = router.recv().await {
            // [identity, "", start sequence]; anything else is ignored.
            let frames = request.into_vec();
            let (Some(id), Some(start)) = (frames.first(), frames.last()) else {
                continue;
            };
            let Ok(start) = <[u8; 8]>::try_from(&start[..]).map(u64::from_be_bytes) else {
                continue;
            };
            let answer: Vec<(u64, Bytes)> = held
                .lock()
                .map(|h| h.iter().filter(|(s, _)| *s >= start).cloned().collect())
                .unwrap_or_default();
            for (seq, payload) in answer {
                let _ = router
                    .send(message(&[id, b"", &seq.to_be_bytes(), &payload]))
                    .await;
            }
            let _ = router.send(message(&[id, b"", &[0xff; 8], b""])).await;
        }
    });
    Ok(Publisher {
        endpoint,
        replay,
        tasks: [publishing, replaying],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use workerpick::kv_events::{KvEvent, decode_batch};

    #[test]
    fn a_batch_decodes_as_the_engines_events() {
        let keys: Vec<_> = (1..=3).map(BlockKey::from_raw).collect();
        let tokens: Vec<u32> = (0..6).collect();
        let changes = Changes {
            removed: vec![BlockKey::from_raw(9)],
            stored: vec![(1, 2)],
        };
        let decoded = decode_batch(&batch(&keys, Some(&tokens), 2, &changes, 1.5).unwrap()).unwrap();
        let [KvEvent::BlockRemoved(r), KvEvent::BlockStored(s)] = &decoded.events[..] else {
            panic!("{decoded:?}");
        };
        assert_eq!(r.block_hashes[0].raw(), engine_hash(BlockKey::from_raw(9)));
        assert_eq!(s.parent_block_hash.map(|h| h.raw()), Some(engine_hash(keys[0])));
        assert_eq!((s.token_ids.as_slice(), s.block_size), (&[2, 3, 4, 5][..], 2));
        assert_eq!(s.block_hashes.len(), 2);
        assert!(batch(&keys, Some(&tokens), 2, &Changes::default(), 0.0).is_none());
        // A text prompt's batch: its evictions only.
        let text = decode_batch(&batch(&keys, None, 2, &changes, 0.0).unwrap()).unwrap();
        assert!(matches!(&text.events[..], [KvEvent::BlockRemoved(_)]), "{text:?}");
    }
}
