//! Target `concurrent`: two threads run their own operation lists on one
//! `Pool<u8>` at once (picks, reservations, releases, retargets, and writers
//! changing the set under them), then the final state is checked against the
//! guards the threads hand back.
//!
//! Interleavings are not reproducible, so the checks are the invariants that
//! hold under every interleaving: a masked pick stays inside its mask, a guard
//! names the worker its pick returned and holds the weight it asked for, every
//! final count is the sum of the surviving guards' weights, storage is
//! conserved (members + draining + free = allocated), and once every guard is
//! dropped every count is 0 and no removed worker drains. A second phase
//! checks least-loaded's exactness: two threads reserving `k` times each over
//! idle workers, with no releases, end with loads that differ by at most 1.

use crate::ops::{KEYS, Selectors, key};
use arbitrary::{Arbitrary, Unstructured};
use std::collections::HashMap;
use std::sync::Barrier;
use workerpick::scan::Backend;
use workerpick::{Eligibility, Error, Mode, Pool, Request, Reservation, Rng, Selector};

const MAX_STEPS: usize = 64;

/// One scenario.
#[derive(Arbitrary, Debug)]
pub struct Input {
    pub seed: u64,
    pub backend: u8,
    pub initial: Vec<u8>,
    /// Each thread's mask: key `k` is admitted when bit `k` is set.
    pub admit: [u16; 2],
    pub threads: [Vec<Step>; 2],
    /// The exactness phase: workers (`1..=KEYS`) and reservations per thread.
    pub exact: Option<(u8, u8)>,
}

/// One operation of one thread.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Step {
    Select {
        mode: Builtin,
        masked: bool,
    },
    Preview {
        mode: Builtin,
        masked: bool,
    },
    Reserve {
        mode: Builtin,
        masked: bool,
        weight: u8,
    },
    ReserveWorker {
        key: u8,
        weight: u8,
    },
    Release(u8),
    Retarget {
        guard: u8,
        key: u8,
    },
    Insert(u8),
    Remove(u8),
    Replace {
        keys: u16,
    },
    /// Rebuilds this thread's mask from the current set.
    Rebuild,
}

/// The built-ins a step picks with: every `workerpick::Mode` but device-aware
/// (which the `ops` target covers with its cache hits).
const PICKS: [Mode; 4] = [
    Mode::Random,
    Mode::RoundRobin,
    Mode::PowerOfTwo,
    Mode::LeastLoaded,
];

/// Which built-in selector: one of [`PICKS`], decoded from the input as
/// `#[derive(Arbitrary)]` decodes a four-variant enum (the committed corpus
/// was written that way).
#[derive(Clone, Copy, Debug)]
pub struct Builtin(pub Mode);

impl<'a> Arbitrary<'a> for Builtin {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let index = (u64::from(u32::arbitrary(u)?) * PICKS.len() as u64) >> 32;
        Ok(Builtin(PICKS[index as usize]))
    }

    fn size_hint(depth: usize) -> (usize, Option<usize>) {
        u32::size_hint(depth)
    }
}

impl Builtin {
    fn get(self, s: &Selectors) -> &dyn Selector {
        match self.0 {
            Mode::Random => &s.random,
            Mode::RoundRobin => &s.round_robin,
            Mode::PowerOfTwo => &s.power_of_two,
            Mode::LeastLoaded => &s.least_loaded,
            other => unreachable!("{other} is not in PICKS"),
        }
    }
}

fn admits(bits: u16, k: u8) -> bool {
    bits & (1 << k) != 0
}

/// Decodes `data` as libFuzzer's `fuzz_target!` does and runs it.
pub fn run_bytes(data: &[u8]) {
    if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(input);
    }
}

/// Runs both phases.
pub fn run(input: Input) {
    let backends = Backend::available();
    let backend = backends[usize::from(input.backend) % backends.len()];
    let mut initial: Vec<u8> = input.initial.iter().map(|&k| key(k)).collect();
    initial.dedup();
    let pool = Pool::with_max_workers(2 * usize::from(KEYS))
        .expect("a limit in range")
        .with_scan_backend(backend);
    // Duplicates that are not adjacent are refused; start empty then.
    let _ = pool.replace(initial.iter().copied());
    let selectors = Selectors::default();
    let barrier = Barrier::new(2);

    let survivors: Vec<(Reservation<'_, u8>, u8, u32)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|t| {
                let (pool, selectors, barrier) = (&pool, &selectors, &barrier);
                let steps = &input.threads[t];
                let (admit, seed) = (input.admit[t], input.seed ^ t as u64);
                s.spawn(move || {
                    barrier.wait();
                    thread(pool, selectors, steps, admit, seed)
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });

    // Every count is what the surviving guards hold.
    let mut held: HashMap<u8, u64> = HashMap::new();
    for (r, k, w) in &survivors {
        assert_eq!((*r.worker(), r.weight()), (*k, *w), "guard changed hands");
        *held.entry(*k).or_default() += u64::from(*w);
    }
    check_counts(&pool, &held, "with the surviving guards");
    drop(survivors);
    check_counts(&pool, &HashMap::new(), "after dropping every guard");
    pool.reclaim();
    assert_eq!(
        pool.stats().draining,
        0,
        "removed workers still drain with no guard alive"
    );

    if let Some((workers, per_thread)) = input.exact {
        exactness(backend, 1 + workers % KEYS, per_thread % 64);
    }
}

/// One thread's steps; returns the guards it still holds.
fn thread<'p>(
    pool: &'p Pool<u8>,
    selectors: &Selectors,
    steps: &[Step],
    admit: u16,
    seed: u64,
) -> Vec<(Reservation<'p, u8>, u8, u32)> {
    let mut handle = pool.handle_with_rng(Rng::with_seed(seed));
    let mut mask: Eligibility = pool.eligibility(|&k| admits(admit, k));
    let mut guards: Vec<(Reservation<'p, u8>, u8, u32)> = Vec::new();
    for &step in steps.iter().take(MAX_STEPS) {
        match step {
            Step::Select { mode, masked } | Step::Preview { mode, masked } => {
                let request = if masked {
                    Request::new().eligible(&mask)
                } else {
                    Request::new()
                };
                let s = mode.get(selectors);
                let got = match step {
                    Step::Select { .. } => handle.select_with(s, &request).copied(),
                    _ => handle.preview_with(s, &request).copied(),
                };
                check_pick(got, masked, admit, step);
            }
            Step::Reserve { mode, masked, weight } => {
                let base = if masked {
                    Request::new().eligible(&mask)
                } else {
                    Request::new()
                };
                let w = u32::from(weight);
                let got = handle.reserve_with(mode.get(selectors), &base.weight(w));
                let picked = got.as_ref().map(|r| *r.worker()).map_err(Clone::clone);
                check_pick(picked, masked, admit, step);
                if let Ok(r) = got {
                    assert_eq!(r.weight(), w, "{step:?}");
                    let k = *r.worker();
                    guards.push((r, k, w));
                }
            }
            Step::ReserveWorker { key: k, weight } => {
                let (k, w) = (key(k), u32::from(weight));
                match pool.reserve_worker(&k, w) {
                    Ok(r) => {
                        assert_eq!((*r.worker(), r.weight()), (k, w), "{step:?}");
                        guards.push((r, k, w));
                    }
                    Err(e) => assert_eq!(e, Error::UnknownWorker, "{step:?}"),
                }
            }
            Step::Release(i) => {
                if !guards.is_empty() {
                    let i = usize::from(i) % guards.len();
                    guards.swap_remove(i).0.release();
                }
            }
            Step::Retarget { guard, key: k } => {
                if !guards.is_empty() {
                    let (i, k) = (usize::from(guard) % guards.len(), key(k));
                    let g = &mut guards[i];
                    match g.0.retarget(&k) {
                        Ok(()) => g.1 = k,
                        Err(e) => assert_eq!(e, Error::UnknownWorker, "{step:?}"),
                    }
                    assert_eq!(*g.0.worker(), g.1, "{step:?}");
                }
            }
            Step::Insert(k) => match pool.insert(key(k)) {
                Ok(()) | Err(Error::DuplicateWorker) => {}
                Err(e) => panic!("{step:?}: {e:?}"),
            },
            Step::Remove(k) => match pool.remove(&key(k)) {
                Ok(()) | Err(Error::UnknownWorker) => {}
                Err(e) => panic!("{step:?}: {e:?}"),
            },
            Step::Replace { keys } => {
                let keys: Vec<u8> = (0..KEYS).filter(|&k| admits(keys, k)).collect();
                assert_eq!(pool.replace(keys), Ok(()), "{step:?}");
            }
            Step::Rebuild => mask.rebuild(pool, |&k| admits(admit, k)),
        }
    }
    guards
}

fn check_pick(got: Result<u8, Error>, masked: bool, admit: u16, step: Step) {
    match got {
        Ok(k) => {
            assert!(k < KEYS, "{step:?}: picked {k}, never inserted");
            assert!(
                !masked || admits(admit, k),
                "{step:?}: picked {k} outside the mask {admit:#b}"
            );
        }
        Err(Error::NoWorkers | Error::AllDraining | Error::NoEligibleWorker) => {}
        Err(e) => panic!("{step:?}: {e:?}"),
    }
}

/// Every count equals `held` (absent: 0), members or draining, and storage
/// adds up.
fn check_counts(pool: &Pool<u8>, held: &HashMap<u8, u64>, when: &str) {
    let loads = pool.loads();
    for (k, load) in &loads {
        let want = held.get(k).copied().unwrap_or(0);
        assert_eq!(u64::from(*load), want, "load of member {k} {when}");
    }
    for k in 0..KEYS {
        let want = held.get(&k).copied().unwrap_or(0);
        let got = pool.in_flight(&k);
        if pool.contains(&k) {
            assert_eq!(got.map(u64::from), Some(want), "in_flight({k}) {when}");
        } else {
            let want = Some(want).filter(|&w| w > 0);
            assert_eq!(got.map(u64::from), want, "in_flight({k}), removed, {when}");
        }
    }
    let stats = pool.stats();
    assert_eq!(stats.workers, loads.len(), "{when}");
    assert_eq!(
        stats.workers + stats.draining + stats.free_slots,
        stats.capacity,
        "storage leaked {when}: {stats:?}"
    );
}

/// Two threads reserve `per_thread` times each with least-loaded over
/// `workers` idle workers and release nothing: the loads end at most 1 apart
/// (unless a reservation took the bounded-retry fallback, which may book a
/// load that is no longer the minimum).
fn exactness(backend: Backend, workers: u8, per_thread: u8) {
    let pool = Pool::with_max_workers(KEYS.into())
        .expect("a limit in range")
        .with_scan_backend(backend);
    pool.replace(0..workers).expect("distinct workers");
    let selectors = Selectors::default();
    let barrier = Barrier::new(2);
    let held: Vec<Reservation<'_, u8>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (pool, ll, barrier) = (&pool, &selectors.least_loaded, &barrier);
                s.spawn(move || {
                    let mut h = pool.handle();
                    barrier.wait();
                    (0..per_thread)
                        .map(|_| h.reserve(ll).expect("idle workers"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let loads: Vec<u32> = pool.loads().into_iter().map(|(_, l)| l).collect();
    assert_eq!(loads.iter().sum::<u32>(), 2 * u32::from(per_thread));
    let (min, max) = (loads.iter().min().unwrap(), loads.iter().max().unwrap());
    if pool.stats().fallbacks == 0 {
        assert!(max - min <= 1, "least-loaded not exact: loads {loads:?}");
    }
    drop(held);
}

#[cfg(test)]
mod tests {
    use super::Builtin;
    use arbitrary::{Arbitrary, Unstructured};
    use workerpick::Mode;

    /// The enum `Builtin` replaced, as it was declared.
    #[derive(Arbitrary, Debug)]
    enum Derived {
        Random,
        RoundRobin,
        PowerOfTwo,
        LeastLoaded,
    }

    /// Every input picks the mode the derived enum picked, so the committed
    /// corpus still means what it meant.
    #[test]
    fn a_builtin_decodes_as_the_derived_enum_did() {
        for x in (0..=u32::MAX)
            .step_by(0x0100_0001)
            .chain([u32::MAX, 0x3fff_ffff, 0x4000_0000])
        {
            let bytes = x.to_le_bytes();
            let new = Builtin::arbitrary(&mut Unstructured::new(&bytes)).unwrap().0;
            let old = match Derived::arbitrary(&mut Unstructured::new(&bytes)).unwrap() {
                Derived::Random => Mode::Random,
                Derived::RoundRobin => Mode::RoundRobin,
                Derived::PowerOfTwo => Mode::PowerOfTwo,
                Derived::LeastLoaded => Mode::LeastLoaded,
            };
            assert_eq!(new, old, "input {x:#x}");
        }
    }
}
