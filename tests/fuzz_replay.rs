//! Replays the committed seed corpus of every fuzz target (`fuzz/corpus/<target>/seed-*`)
//! through the same code the libFuzzer targets run, so `cargo test` on stable covers
//! them. `fuzz/src/` holds the logic; the `fuzz/` crate itself needs nightly.
//!
//! Add a seed: copy a libFuzzer input (a crash reproducer, or one from a corpus
//! that `cargo fuzz cmin` kept) to `fuzz/corpus/<target>/seed-<name>`.

#[path = "../fuzz/src/concurrent.rs"]
mod concurrent;
#[cfg(feature = "kv-events")]
#[path = "../fuzz/src/kv_events.rs"]
mod kv_events;
#[path = "../fuzz/src/ops.rs"]
mod ops;
#[path = "../fuzz/src/prefix.rs"]
mod prefix;
#[path = "../fuzz/src/ranks.rs"]
mod ranks;
#[path = "../fuzz/src/scan.rs"]
mod scan;
#[path = "../fuzz/src/summary.rs"]
mod summary;

/// Stands in for `fuzz/src/page.rs`, which ends the arrays at an inaccessible
/// page with `mmap` (the root crate does not depend on `libc`): here they are
/// plain heap arrays.
mod page {
    use std::sync::atomic::AtomicU32;

    pub fn at_page_end<R>(values: &[u32], excluded: &[u32], f: impl FnOnce(&[AtomicU32], &[u32]) -> R) -> R {
        let counters: Vec<AtomicU32> = values.iter().map(|&v| AtomicU32::new(v)).collect();
        f(&counters, excluded)
    }
}

use std::path::Path;

/// Runs `run` on every seed of `target`; fails if there is none, so a moved
/// corpus cannot pass silently.
fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut seeds: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("readable corpus directory").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-"))
        })
        .collect();
    seeds.sort();
    assert!(!seeds.is_empty(), "no seed-* files in {}", dir.display());
    for seed in &seeds {
        let data = std::fs::read(seed).expect("readable seed");
        let outcome = std::panic::catch_unwind(|| run(&data));
        if let Err(panic) = outcome {
            eprintln!(
                "seed {} failed; replay it with `cargo +nightly fuzz run {target} {}`",
                seed.display(),
                seed.display()
            );
            std::panic::resume_unwind(panic);
        }
    }
}

#[test]
fn scan_seeds() {
    replay("scan", scan::run_bytes);
}

#[test]
fn ops_seeds() {
    replay("ops", ops::run_bytes);
}

#[test]
fn concurrent_seeds() {
    replay("concurrent", concurrent::run_bytes);
}

#[test]
fn summary_seeds() {
    replay("summary", summary::run_bytes);
}

#[test]
fn prefix_seeds() {
    replay("prefix", prefix::run_bytes);
}

#[test]
fn ranks_seeds() {
    replay("ranks", ranks::run_bytes);
}

/// The op model's reported-load operations, in a sequence the fuzzer may take a
/// while to find: reports and peer summaries steering every load-aware mode,
/// a worker leaving and coming back, capped reports beside near-overflowing
/// bookings, stale validation, and everything ageing out.
#[test]
fn reported_load_ops_agree_with_the_model() {
    use ops::{Charge, Input, MaskRef, Mode, Op, Pick, Via, Weight};
    let pick = |mode, via| Pick {
        mode,
        via,
        mask: MaskRef::All,
        hits: None,
    };
    let reserve = |mode, weight| Op::Reserve {
        pick: pick(mode, Via::Handle(0)),
        weight,
    };
    let mut ops = vec![
        Op::Report { key: 1, load: 9 },
        Op::PeerSummary {
            peer: false,
            keys: 0b1111,
            shift: 1,
        },
        Op::PeerSummary {
            peer: true,
            keys: 0b0110,
            shift: 3,
        },
    ];
    for mode in [
        Mode::LeastLoaded,
        Mode::PowerOfTwo,
        Mode::DeviceAware { ratio: 0 },
    ] {
        ops.extend([reserve(mode, Weight::One), Op::Select(pick(mode, Via::Pool))]);
    }
    ops.extend([
        Op::Reserve {
            pick: pick(
                Mode::Nth {
                    index: 1,
                    charge: Charge::Stale,
                },
                Via::Pool,
            ),
            weight: Weight::Small(3),
        },
        Op::Remove(2),
        Op::Report { key: 2, load: 4 },
        Op::Insert(2),
        Op::Report { key: 3, load: 255 },
        Op::ReserveWorker {
            key: 3,
            weight: Weight::NearMax(0),
            handle: None,
        },
        Op::ReserveWorker {
            key: 0,
            weight: Weight::NearMax(5),
            handle: None,
        },
        Op::Report { key: 0, load: 252 },
        reserve(Mode::LeastLoaded, Weight::Small(7)),
        Op::Release(0),
        Op::Release(0),
        Op::Report { key: 0, load: 252 },
        Op::PeerSummary {
            peer: false,
            keys: 0b1,
            shift: 0,
        },
        Op::ExpireReports,
        reserve(Mode::LeastLoaded, Weight::One),
    ]);
    ops::run(Input {
        seed: 7,
        backend: 0,
        limit: 6,
        initial: vec![0, 1, 2, 3],
        ops,
    });
}

/// The fleet controls on the `ops` model, in a scenario the fuzzer would take a
/// while to find: a drained worker with a guard (drained only once it is
/// released), health marks steering every built-in mode and masks, a mark on a
/// near-full counter (no room, so no mark), capacities, and a marked, draining
/// worker removed and inserted again (it comes back healthy, not draining).
#[test]
fn fleet_ops_agree_with_the_model() {
    use ops::{MaskRef, Mode, Op, Pick, Via, Weight};
    let pick = |mode, via, mask| Pick {
        mode,
        via,
        mask,
        hits: None,
    };
    let modes = [
        Mode::Random,
        Mode::RoundRobin,
        Mode::PowerOfTwo,
        Mode::LeastLoaded,
    ];
    let mut ops = vec![
        Op::ReserveWorker {
            key: 1,
            weight: Weight::One,
            handle: None,
        },
        Op::Drain(1),
        Op::Drain(1),
        Op::SetHealthy {
            key: 2,
            healthy: false,
        },
        Op::SetHealthy {
            key: 2,
            healthy: false,
        },
        Op::SetCapacity { key: 3, capacity: 4 },
        Op::BuildMask {
            slot: 0,
            admit: 0b0110,
        },
    ];
    for mode in modes {
        for mask in [MaskRef::All, MaskRef::Slot(0)] {
            ops.extend([
                Op::Reserve {
                    pick: pick(mode, Via::Handle(0), mask),
                    weight: Weight::One,
                },
                Op::Select(pick(mode, Via::Pool, mask)),
            ]);
        }
    }
    ops.extend([
        Op::Release(0),
        Op::ReserveWorker {
            key: 0,
            weight: Weight::NearMax(0),
            handle: None,
        },
        Op::SetHealthy {
            key: 0,
            healthy: false,
        },
        Op::Release(0),
        Op::SetCapacity { key: 3, capacity: 0 },
        Op::SetHealthy {
            key: 2,
            healthy: true,
        },
        Op::Resume(1),
        Op::SetHealthy {
            key: 1,
            healthy: false,
        },
        Op::Drain(1),
        Op::Remove(1),
        Op::Insert(1),
        Op::Resume(7),
        Op::SetHealthy {
            key: 7,
            healthy: false,
        },
    ]);
    for mode in modes {
        ops.push(Op::Reserve {
            pick: pick(mode, Via::Pool, MaskRef::All),
            weight: Weight::One,
        });
    }
    ops::run(ops::Input {
        seed: 11,
        backend: 0,
        limit: 6,
        initial: vec![0, 1, 2, 3],
        ops,
    });
}

/// The summarised pool's target on a sequence that makes every bound move:
/// every worker loaded (the first picks raise all bounds), then releases,
/// a report withdrawn, a drain and a health mark on the least-loaded worker,
/// a removal and a newcomer in a reused slot, each followed by checked picks.
#[test]
fn summarised_pool_ops_find_the_least() {
    let checked = summary::run(summary::Input {
        seed: 19,
        workers: 500,
        ops: summarised_ops(),
    });
    assert_eq!(checked, 25);
}

/// The same sequence on a weighted pool: capacities 1 to 4 over the first
/// 1 200 workers (so every pick of weight 1 reads the bounds on scores),
/// changed twice more on the way (new factors, a new version of the bounds).
#[test]
fn weighted_summarised_pool_ops_find_the_least() {
    use summary::Op;
    let capacity = |worker: u16, capacity: u8| Op::Capacity { worker, capacity };
    let mut ops: Vec<Op> = (0..1200).map(|w| capacity(w, (w % 4) as u8)).collect();
    let rest = summarised_ops();
    let third = rest.len() / 3;
    for (i, op) in rest.into_iter().enumerate() {
        if i == third {
            ops.extend([capacity(5, 3), capacity(700, 0), Op::Select]);
        }
        if i == 2 * third {
            ops.extend([
                capacity(5, 0),
                Op::Pick {
                    weight: 0,
                    keep: false,
                },
            ]);
        }
        ops.push(op);
    }
    let checked = summary::run(summary::Input {
        seed: 23,
        workers: 500,
        ops,
    });
    assert_eq!(checked, 27);
}

/// Loads, releases, reports, drains, health marks and membership changes
/// that move every bound, each followed by checked picks (25 in all).
fn summarised_ops() -> Vec<summary::Op> {
    use summary::Op;
    let pick = |keep| Op::Pick { weight: 0, keep };
    let mut ops = Vec::new();
    // 1 524 workers, all at 2 (the last fill also names non-members).
    for from in [0, 511, 1022] {
        ops.push(Op::Fill {
            from,
            len: 511,
            weight: 1,
        });
    }
    ops.extend([pick(false), pick(false), Op::Select]);
    // Releases in different blocks: each worker freed is the only one below
    // the rest, behind a bound that a pick raised.
    for at in [700, 100, 1300, 5] {
        ops.extend([Op::Release { at, len: 0 }, pick(false), Op::Select, pick(true)]);
    }
    ops.extend([
        // A report lifts worker 3, then is withdrawn: its counter comes down.
        Op::Report { worker: 3, load: 40 },
        Op::Release { at: 3, len: 0 },
        pick(false),
        Op::Report { worker: 3, load: 0 },
        Op::Select,
        // The least worker drains, then is marked unhealthy, then both end.
        Op::Release { at: 900, len: 0 },
        Op::Select,
        Op::Drain {
            worker: 900,
            on: true,
        },
        pick(false),
        Op::Drain {
            worker: 900,
            on: false,
        },
        Op::Health {
            worker: 900,
            healthy: false,
        },
        pick(false),
        Op::Health {
            worker: 900,
            healthy: true,
        },
        Op::Select,
        // A loaded worker leaves; once its slot is free a newcomer takes it at 0.
        Op::Remove { worker: 1200 },
        Op::Release { at: 1150, len: 63 },
        Op::Reclaim,
        Op::Insert { worker: 1530 },
        pick(true),
        Op::Select,
        Op::Release { at: 0, len: 63 },
        pick(false),
    ]);
    ops
}

/// The `ops` target's pair operations, mixed with removals, drains and
/// releases on the decode pool, from seeded generated inputs (the seed
/// corpus predates them).
#[test]
fn ops_pairs_generated() {
    use ops::{Input, Op, Weight};
    let mut rng = fastrand::Rng::with_seed(35);
    for seed in 0..if cfg!(miri) { 2 } else { 150 } {
        let mut ops = Vec::new();
        for _ in 0..40 {
            let (a, b, c) = (rng.u8(..), rng.u8(..), rng.u8(..));
            ops.push(match rng.u8(..12) {
                0 | 1 => Op::PairReserve {
                    prefill: a,
                    decode: b % 4,
                    threshold: c,
                    local: [None, Some(true), Some(false)][usize::from(a % 3)],
                },
                2 | 3 => Op::PairPreviewAdmit {
                    prefill: a,
                    decode: b % 4,
                    threshold: c,
                },
                4 | 5 => Op::PairHandOff(a),
                6 => Op::PairRelease(a),
                7 => Op::PairPrefillDrain {
                    key: a,
                    drain: b % 2 == 0,
                },
                8 => Op::Remove(a),
                9 => Op::Insert(a),
                10 => Op::Drain(a),
                _ => Op::Reserve {
                    pick: arbitrary_pick(&mut rng),
                    weight: Weight::Small(b),
                },
            });
        }
        ops::run(Input {
            seed,
            backend: 0,
            limit: (seed % 3) as u8 * 7,
            initial: vec![0, 1, 2, 3],
            ops,
        });
    }
}

/// The `ops` target's affinity and session ops, mixed with membership
/// changes, drains, health marks, releases and other picks, from seeded
/// generated inputs (the seed corpus predates them). Without the `sessions`
/// feature the session ops do nothing. Seed 395 here found unbounded
/// affinity picks failing with every candidate unhealthy (test `affinity`,
/// `unhealthy_and_draining_workers_are_skipped`).
#[test]
fn ops_affinity_and_sessions_generated() {
    use ops::{Input, MaskRef, Op, Weight};
    let mut rng = fastrand::Rng::with_seed(41);
    for seed in 0..if cfg!(miri) { 2 } else { 400 } {
        let mut ops = vec![Op::EnableAffinity; usize::from(seed % 4 != 0)];
        for _ in 0..48 {
            let (a, b, c) = (rng.u8(..), rng.u8(..), rng.u8(..));
            let hard = a % 2 == 0;
            ops.push(match rng.u8(..23) {
                0..=3 => Op::AffinityReserve {
                    key: a,
                    factor: b,
                    mask: [MaskRef::All, MaskRef::All, MaskRef::Slot(c), MaskRef::Foreign]
                        [usize::from(c % 4)],
                    handle: [None, Some(b)][usize::from(c % 2)],
                },
                4..=7 => Op::SessionReserve {
                    session: b,
                    hard,
                    handle: c,
                },
                8 => Op::SessionUnbind { session: b, hard },
                9 => Op::SessionSweep { hard },
                10 => Op::SessionExport { hard },
                11 => Op::SessionImport {
                    session: b,
                    key: c,
                    hard,
                    stale: a % 5 == 0,
                },
                12 => Op::Remove(a),
                13 => Op::Insert(a),
                14 => Op::Drain(a),
                15 => Op::Resume(a),
                16 => Op::SetHealthy {
                    key: a,
                    healthy: b % 2 == 0,
                },
                17 => Op::Release(a),
                18 => Op::BuildMask {
                    slot: a,
                    admit: u16::from(b) | u16::from(c) << 8,
                },
                19 => Op::Reserve {
                    pick: arbitrary_pick(&mut rng),
                    weight: Weight::Small(b),
                },
                20 => Op::SetCapacity { key: a, capacity: b },
                21 => Op::ReserveWorker {
                    key: a,
                    weight: Weight::Small(b),
                    handle: [None, Some(c)][usize::from(c % 2)],
                },
                _ => match c % 3 {
                    0 => Op::Reclaim,
                    1 => Op::RenewHandle(a),
                    _ => Op::Replace(vec![a, b, c]),
                },
            });
        }
        ops::run(Input {
            seed,
            backend: seed as u8,
            limit: (seed % 3) as u8 * 7,
            initial: vec![0, 1, 2, 3, 4],
            ops,
        });
    }
}

fn arbitrary_pick(rng: &mut fastrand::Rng) -> ops::Pick {
    use arbitrary::{Arbitrary, Unstructured};
    let bytes: Vec<u8> = (0..64).map(|_| rng.u8(..)).collect();
    ops::Pick::arbitrary(&mut Unstructured::new(&bytes)).expect("enough bytes")
}

/// The cost mode and phased loads on the `ops` model: sparse and dense credit,
/// both temperatures, a busy threshold, health marks and draining, part
/// releases and added charges (one near the top of a counter), a worker leaving
/// under a guard, on every backend.
#[test]
fn cost_and_phased_ops_agree_with_the_model() {
    use ops::{CostPick, Input, Op, Weight};
    let mut builds = 0u8;
    let mut cost = |credit, dense, weight, hot, busy, handle| {
        builds += 1;
        Op::CostReserve(CostPick {
            credit,
            dense,
            weight,
            hot,
            busy,
            handle,
            build: builds,
        })
    };
    let mut ops = vec![
        Op::ReserveWorker {
            key: 1,
            weight: Weight::Small(5),
            handle: None,
        },
        cost(0b0010, false, 2, false, None, None),
        cost(0b1110, true, 1, false, None, Some(0)),
        Op::ReleasePart { guard: 0, n: 3 },
        Op::AddCharge { guard: 1, n: 2 },
        Op::Report { key: 2, load: 3 },
        cost(0, true, 3, false, Some(1), None),
        cost(0b0100, false, 0, true, None, Some(1)),
        Op::SetHealthy {
            key: 3,
            healthy: false,
        },
        cost(0b1000, true, 3, false, None, None),
        cost(0b1000, true, 3, true, None, None),
        Op::Drain(0),
        cost(0b0001, true, 2, false, None, Some(0)),
        Op::ReserveWorker {
            key: 2,
            weight: Weight::NearMax(2),
            handle: None,
        },
        Op::AddCharge { guard: 7, n: 7 },
        Op::Remove(1),
        Op::AddCharge { guard: 0, n: 1 },
        Op::ReleasePart { guard: 0, n: 7 },
        cost(0xffff, true, 2, false, Some(0), None),
    ];
    for i in 0..24u8 {
        ops.push(cost(u16::from(i) * 37, i % 3 == 0, i, i % 4 == 1, None, Some(i)));
        ops.push(Op::ReleasePart { guard: i, n: i });
        if i % 5 == 0 {
            ops.push(Op::Release(i));
        }
    }
    for backend in 0..4 {
        ops::run(Input {
            seed: 11,
            backend,
            limit: 0,
            initial: vec![0, 1, 2, 3, 4, 5],
            ops: ops.clone(),
        });
    }
}

/// The `ranks` model through a scenario the fuzzer may take a while to find:
/// workers with ranks booked rank by rank, a stale mask, reports and credit
/// on one rank, health and drain over every rank, a removal while two ranks
/// hold guards, a re-insert with another rank count (refused until they
/// drain), runs of slots reused, and the limit reached.
#[test]
fn ranks_ops_agree_with_the_model() {
    use ranks::{Input, Kind, Mode, Op, Pick};
    let pick = |mode, kind, mask, credit| {
        Op::Pick(Pick {
            mode,
            kind,
            handle: Some(0),
            mask,
            credit,
            weight: 1,
        })
    };
    let mut ops = vec![
        // A worker removed while only its rank 1 is booked drains until that
        // booking ends, however idle its rank 0.
        Op::Insert { key: 5, ranks: 1 },
        Op::ReserveRank {
            key: 5,
            rank: 1,
            weight: 1,
            handle: None,
        },
        Op::Remove(5),
        Op::RenewHandle(0),
        Op::RenewHandle(1),
        Op::Reclaim,
        Op::Release(0),
        Op::Reclaim,
        Op::Insert { key: 0, ranks: 3 },
        Op::Insert { key: 1, ranks: 0 },
        Op::Insert { key: 2, ranks: 1 },
        Op::BuildMask {
            slot: 0,
            admit: 0b101,
        },
        Op::ReportRank {
            key: 0,
            rank: 1,
            load: 9,
        },
        Op::Report { key: 2, load: 7 },
    ];
    for mode in [
        Mode::LeastLoaded,
        Mode::RoundRobin,
        Mode::PowerOfTwo,
        Mode::Random,
        Mode::Cost,
    ] {
        for kind in [Kind::Reserve, Kind::Preview, Kind::Select] {
            ops.push(pick(mode, kind, None, None));
            ops.push(pick(mode, kind, Some(0), None));
        }
        ops.push(pick(mode, Kind::Reserve, None, Some((0, 2, 7))));
    }
    ops.extend([
        Op::ReserveRank {
            key: 0,
            rank: 2,
            weight: 2,
            handle: None,
        },
        Op::ReserveRank {
            key: 0,
            rank: 3,
            weight: 1,
            handle: Some(1),
        },
        Op::ReserveWorker { key: 2, weight: 0 },
        Op::SetHealthy {
            key: 0,
            healthy: false,
        },
        pick(Mode::LeastLoaded, Kind::Reserve, None, None),
        Op::Drain(1),
        pick(Mode::RoundRobin, Kind::Reserve, None, None),
        Op::Retarget { guard: 0, key: 2 },
        Op::Remove(0),
        pick(Mode::LeastLoaded, Kind::Reserve, Some(0), None),
        Op::Insert { key: 0, ranks: 1 },
        Op::Insert { key: 0, ranks: 2 },
        Op::Remove(0),
        Op::Insert { key: 3, ranks: 3 },
        Op::Release(0),
        Op::Release(0),
        Op::Release(0),
        Op::Reclaim,
        Op::RenewHandle(0),
        Op::RenewHandle(1),
        Op::Reclaim,
        Op::Insert { key: 4, ranks: 3 },
        Op::Replace(vec![4, 3, 5, 1]),
        Op::SetRanks { key: 4, ranks: 0 },
        Op::SetRanks { key: 4, ranks: 3 },
        Op::SetCapacity { key: 3, capacity: 2 },
        Op::Resume(1),
        pick(Mode::Cost, Kind::Reserve, None, None),
        Op::Insert { key: 0, ranks: 3 },
        Op::Insert { key: 2, ranks: 3 },
    ]);
    ranks::run(Input {
        seed: 11,
        limit: 4,
        ops,
    });
}

#[cfg(feature = "kv-events")]
#[test]
fn kv_events_seeds() {
    replay("kv_events", kv_events::run_bytes);
}

/// A lost eviction, the batch after it, a replay, a delayed and a doubled
/// batch, a clear, and a gap given up: fails if a batch past a gap is applied
/// before the gap is filled (the lost eviction's block would be credited).
#[cfg(feature = "kv-events")]
#[test]
fn kv_events_lost_eviction() {
    use kv_events::{Fate, Op};
    let store = |parent, tokens| Op::Store {
        parent,
        len: 1,
        tokens,
    };
    kv_events::run(&[
        store(None, [0, 1, 0, 0, 0, 0]),
        store(Some(0), [2, 2, 0, 0, 0, 0]),
        Op::Send(Fate::Deliver),
        Op::Remove(0),
        Op::Send(Fate::Lose),
        store(None, [1, 1, 0, 0, 0, 0]),
        Op::Send(Fate::Deliver),
        Op::Replay { full: true },
        Op::Send(Fate::Late),
        store(Some(1), [0, 2, 0, 0, 0, 0]),
        Op::Send(Fate::Deliver),
        Op::DeliverLate,
        Op::Send(Fate::Twice),
        Op::Clear,
        Op::Send(Fate::Lose),
        store(None, [2, 0, 0, 0, 0, 0]),
        Op::Send(Fate::Deliver),
        Op::Replay { full: false },
        store(None, [2, 1, 0, 0, 0, 0]),
        Op::Send(Fate::Deliver),
    ]);
}
