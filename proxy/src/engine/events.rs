//! The fake engine's KV events as vLLM publishes them: msgpack batches
//! `[ts, [event, ...], data_parallel_rank]` on a ZMQ PUB socket, each
//! message the frames `[topic, sequence number (8 bytes, big-endian),
//! payload]`, the topic empty.

use super::cache::Changes;
use bytes::Bytes;
use rmp::encode;
use tokio::sync::mpsc;
use workerpick::prefix::BlockKey;
use zeromq::{PubSocket, Socket, SocketSend, ZmqMessage};

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

/// Binds a PUB socket on 127.0.0.1 (any free port) and publishes what
/// `batches` receives, numbered from 0: its endpoint, `tcp://127.0.0.1:PORT`.
pub async fn publish(
    mut batches: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let mut socket = PubSocket::new();
    let endpoint = socket
        .bind("tcp://127.0.0.1:0")
        .await
        .map_err(std::io::Error::other)?
        .to_string();
    let task = tokio::spawn(async move {
        let mut seq = 0u64;
        while let Some(payload) = batches.recv().await {
            let mut m = ZmqMessage::from(payload);
            m.prepend(&ZmqMessage::from(Bytes::copy_from_slice(&seq.to_be_bytes())));
            m.prepend(&ZmqMessage::from(Vec::<u8>::new()));
            // A PUB socket drops what no subscriber takes: so does an engine.
            let _ = socket.send(m).await;
            seq += 1;
        }
    });
    Ok((endpoint, task))
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
