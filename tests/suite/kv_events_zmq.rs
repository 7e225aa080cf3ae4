//! The ZMQ subscriber against a publisher on loopback that speaks vLLM's
//! wire format: PUB frames `[topic, seq (8 bytes, big-endian), payload]`, a
//! ROUTER replay socket answering `[identity, "", start seq]` with
//! `[identity, "", seq, payload]` per buffered batch and `[identity, "", -1, ""]`.
#![cfg(feature = "kv-events-zmq")]

use std::sync::Arc;
use std::time::Duration;
use workerpick::Pool;
use workerpick::kv_events::{EventApplier, Fed, Subscriber};
use workerpick::prefix::{IndexConfig, Matches, PrefixIndex, keys_of_tokens};
use zeromq::{PubSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

/// `[ts, [["BlockStored", [hash], parent, [t, t], 2, nil, "GPU"]], 0]`.
fn stored(hash: u8, parent: Option<u8>, t: u8) -> Vec<u8> {
    let mut b = vec![0x93, 0x00, 0x91, 0x97, 0xab];
    b.extend(b"BlockStored");
    b.extend([0x91, hash, parent.unwrap_or(0xc0), 0x92, t, t, 0x02, 0xc0, 0xa3]);
    b.extend(b"GPU");
    b.push(0x00);
    b
}

fn frames(parts: &[&[u8]]) -> ZmqMessage {
    let mut m = ZmqMessage::from(parts.last().unwrap().to_vec());
    for p in parts[..parts.len() - 1].iter().rev() {
        m.prepend(&ZmqMessage::from(p.to_vec()));
    }
    m
}

/// An engine: batches 0..n on PUB, except those in `lost`; the replay
/// socket holds the batches `buffer` (the range of its replay buffer).
async fn engine(batches: Vec<Vec<u8>>, lost: Vec<u64>, buffer: std::ops::Range<usize>) -> (String, String) {
    let mut publisher = PubSocket::new();
    let pub_ep = publisher.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let mut replay = RouterSocket::new();
    let replay_ep = replay.bind("tcp://127.0.0.1:0").await.unwrap().to_string();
    let replayed = batches.clone();
    tokio::spawn(async move {
        while let Ok(req) = replay.recv().await {
            let req = req.into_vec();
            let (id, start) = (
                req[0].to_vec(),
                u64::from_be_bytes(req[2][..].try_into().unwrap()),
            );
            let from = buffer.start.max(start as usize);
            for (seq, b) in replayed.iter().enumerate().take(buffer.end).skip(from) {
                let seq = (seq as u64).to_be_bytes();
                replay.send(frames(&[&id, b"", &seq, b])).await.unwrap();
            }
            replay.send(frames(&[&id, b"", &[0xff; 8], b""])).await.unwrap();
        }
    });
    tokio::spawn(async move {
        // Batch 0 again and again until the subscriber has joined (a
        // subscriber takes duplicates as such), then the rest.
        for _ in 0..40 {
            publisher
                .send(frames(&[b"kv", &0u64.to_be_bytes(), &batches[0]]))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        for (seq, b) in batches.iter().enumerate().skip(1) {
            if !lost.contains(&(seq as u64)) {
                publisher
                    .send(frames(&[b"kv", &(seq as u64).to_be_bytes(), b]))
                    .await
                    .unwrap();
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    (pub_ep, replay_ep)
}

fn credit(index: &PrefixIndex<&'static str>, tokens: &[u32]) -> u32 {
    let mut keys = Vec::new();
    keys_of_tokens(tokens, 2, 0, &mut keys);
    index.lookup(&keys, &mut Matches::new())
}

async fn subscriber(
    pub_ep: &str,
    replay_ep: &str,
) -> (Subscriber<&'static str>, Arc<PrefixIndex<&'static str>>) {
    let pool = Arc::new(Pool::from_workers(["e"]).unwrap());
    let index =
        Arc::new(PrefixIndex::new(IndexConfig::exact(2).capacity(64).entries(256).max_holders(4)).unwrap());
    let applier = EventApplier::new(index.clone(), pool, "e", 0);
    let sub = Subscriber::connect(applier, pub_ep, "kv", Some(replay_ep))
        .await
        .unwrap();
    (sub.replay_timeout(Duration::from_secs(2)), index)
}

/// Feeds messages until `n` batches have been applied (bounded in time).
async fn until_applied(sub: &mut Subscriber<&'static str>, n: u64) -> Vec<Fed> {
    let mut seen = Vec::new();
    let applied = tokio::time::timeout(Duration::from_secs(10), async {
        while sub.applier().stats().batches < n {
            let fed = sub.next().await.unwrap();
            if fed != Fed::Duplicate {
                seen.push(fed);
            }
        }
    })
    .await;
    assert!(
        applied.is_ok(),
        "not applied in time: {:?} {:?}",
        sub.applier().stats(),
        seen
    );
    seen
}

#[tokio::test]
async fn a_lost_batch_is_replayed_and_the_credit_is_whole() {
    // 0: block 1 [1,1]; 1 (lost on PUB): block 2 [2,2] after 1; 2: block 3 [3,3] after 2.
    let batches = vec![stored(1, None, 1), stored(2, Some(1), 2), stored(3, Some(2), 3)];
    let (pub_ep, replay_ep) = engine(batches, vec![1], 0..3).await;
    let (mut sub, index) = subscriber(&pub_ep, &replay_ep).await;
    let seen = until_applied(&mut sub, 3).await;
    assert_eq!(seen, [Fed::Applied, Fed::Gap { from: 1 }]);
    let s = sub.applier().stats();
    assert_eq!((s.gaps, s.repaired, s.resets), (1, 1, 0));
    assert_eq!(sub.applier().gap(), None);
    assert_eq!(credit(&index, &[1, 1, 2, 2, 3, 3]), 3);
    assert!(!index.is_degraded(&"e", 0));
}

#[tokio::test]
async fn a_gap_the_replay_no_longer_holds_drops_the_engines_holdings() {
    let batches = vec![
        stored(1, None, 1),
        stored(2, Some(1), 2),
        stored(3, None, 3),
        stored(4, None, 4),
    ];
    // 1 is lost and the replay buffer holds only 2: the gap cannot be filled.
    let (pub_ep, replay_ep) = engine(batches, vec![1], 2..3).await;
    let (mut sub, index) = subscriber(&pub_ep, &replay_ep).await;
    until_applied(&mut sub, 2).await;
    assert_eq!(sub.applier().stats().resets, 1);
    assert_eq!(credit(&index, &[1, 1]), 0, "holdings from before the gap dropped");
    // After the reset the stream starts again from batch 3 (2 went with the gap).
    assert_eq!((credit(&index, &[3, 3]), credit(&index, &[4, 4])), (0, 1));
    assert!(!index.is_degraded(&"e", 0));
}
