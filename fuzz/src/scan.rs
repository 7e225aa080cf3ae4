//! Target `scan`: every scan backend the CPU offers returns exactly what the
//! scalar reference returns, and the reference matches a naive oracle.
//!
//! Arrays reach 20 000 lanes from a few input bytes (a palette or a cycle is
//! expanded by a seeded generator), start at every alignment, and carry any
//! exclusion values, since the scan's contract is "ORed in", not just `0` or
//! `u32::MAX`. The weighted scan (`least_weighted`) is held to a 64-bit oracle of
//! its scores, with capacities 1-16 repeated over the lanes.

use arbitrary::{Arbitrary, Unstructured};
use std::sync::atomic::AtomicU32;
use workerpick::scan::{self, Backend, Least, MinTies, Weighting};

/// The longest counter array a run builds.
pub const MAX_LEN: usize = 20_000;

/// One scan scenario.
#[derive(Arbitrary, Debug)]
pub struct Input {
    len: u16,
    /// Lanes past a 64-byte boundary where the counters start.
    counter_offset: u8,
    /// Lanes past a 64-byte boundary where the exclusion array starts.
    excluded_offset: u8,
    /// How much longer (or shorter) the exclusion array is than the counters:
    /// the shorter slice decides how many lanes there are.
    excluded_len_delta: i8,
    values: Values,
    mask: Mask,
    /// Single lanes overwritten after the fill: `(index, value)`.
    patches: Vec<(u16, u32)>,
    /// Extra tie indices to ask `nth_tie` for (beyond `0`, `ties - 1`, `ties`).
    ks: Vec<u32>,
    /// A value to search for that need not be the minimum.
    probe: u32,
    /// The weighted scan's capacities, repeated over the lanes (each byte taken
    /// as `1 + byte % 16`), and the request's weight.
    capacities: Vec<u8>,
    add: u32,
}

/// How the counters are filled.
#[derive(Arbitrary, Debug)]
enum Values {
    Const(u32),
    /// Each lane drawn from the palette by a generator seeded with `seed`.
    Palette {
        seed: u64,
        palette: Vec<u32>,
    },
    /// The values in order, repeated.
    Cycle(Vec<u32>),
}

/// How the exclusion array is filled.
#[derive(Arbitrary, Debug)]
enum Mask {
    /// Every lane a candidate.
    None,
    /// Every lane excluded.
    All,
    /// Each lane excluded with probability `density / 256`.
    Random { seed: u64, density: u8 },
    /// The pattern in order, repeated (`true` = excluded).
    Cycle(Vec<bool>),
    /// Arbitrary values ORed in, drawn from the palette.
    Raw { seed: u64, palette: Vec<u32> },
}

/// Decodes `data` as libFuzzer's `fuzz_target!` does and runs it.
pub fn run_bytes(data: &[u8]) {
    if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(input);
    }
}

/// Checks `min_ties`, `nth_tie`, their `_all` forms and `least` on every available
/// backend.
pub fn run(input: Input) {
    // Mostly short arrays (vector tails, a few blocks: fast to run), a quarter
    // up to the full length.
    let len = usize::from(input.len);
    let len = match input.len >> 14 {
        0 | 1 => len % 64,
        2 => len % 1100,
        _ => len % (MAX_LEN + 1),
    };
    let mut values = fill_values(&input.values, len);
    for &(i, v) in &input.patches {
        if len > 0 {
            values[usize::from(i) % len] = v;
        }
    }
    let excluded_len = len.saturating_add_signed(isize::from(input.excluded_len_delta));
    let excluded_values = fill_mask(&input.mask, excluded_len);

    // Place both arrays at a chosen distance from a 64-byte boundary.
    let counter_store: Vec<AtomicU32> = (0..len + 32).map(|_| AtomicU32::new(0)).collect();
    let start = aligned_start(counter_store.as_ptr(), input.counter_offset);
    let counters = &counter_store[start..start + len];
    for (c, &v) in counters.iter().zip(&values) {
        c.store(v, std::sync::atomic::Ordering::Relaxed);
    }
    let mut excluded_store = vec![0u32; excluded_len + 32];
    let start = aligned_start(excluded_store.as_ptr(), input.excluded_offset);
    excluded_store[start..start + excluded_len].copy_from_slice(&excluded_values);
    let excluded = &excluded_store[start..start + excluded_len];

    // The oracle: effective values over the shorter slice.
    let effective: Vec<u32> = values.iter().zip(excluded).map(|(&v, &e)| v | e).collect();
    let expected = oracle_min_ties(&effective);

    let mut searches = vec![
        (expected.min, 0),
        (expected.min, expected.ties.saturating_sub(1)),
        (expected.min, expected.ties),
        (expected.min, expected.ties.saturating_add(1)),
        (input.probe, 0),
        (input.probe, u32::MAX),
        (u32::MAX, 0),
        (u32::MAX, u32::MAX),
    ];
    searches.extend(input.ks.iter().take(4).map(|&k| {
        let k = if expected.ties > 0 {
            k % (expected.ties + 2)
        } else {
            k
        };
        (expected.min, k)
    }));
    searches.extend(input.ks.iter().take(4).map(|&k| (input.probe, k % 64)));

    searches.dedup();
    let wanted: Vec<_> = searches
        .iter()
        .map(|&(min, k)| oracle_nth_tie(&effective, min, k))
        .collect();
    // The same over every counter, with no exclusion array (`min_ties_all`).
    let expected_all = oracle_min_ties(&values);
    let mut searches_all = searches.clone();
    searches_all.extend([
        (expected_all.min, 0),
        (expected_all.min, expected_all.ties.saturating_sub(1)),
        (expected_all.min, expected_all.ties),
    ]);
    searches_all.extend(input.ks.iter().take(4).map(|&k| {
        let k = if expected_all.ties > 0 {
            k % (expected_all.ties + 2)
        } else {
            k
        };
        (expected_all.min, k)
    }));
    let wanted_all: Vec<_> = searches_all
        .iter()
        .map(|&(min, k)| oracle_nth_tie(&values, min, k))
        .collect();
    let factors = Factors::of(&input.capacities, len);
    let check = |counters: &[AtomicU32], excluded: &[u32], place: &str| {
        for &backend in Backend::available() {
            let name = backend.name();
            let got = scan::min_ties(backend, counters, excluded);
            assert_eq!(
                got, expected,
                "min_ties on {name}, {place} (len {len}, excluded {excluded_len})"
            );
            for (&(min, k), want) in searches.iter().zip(&wanted) {
                let got = scan::nth_tie(backend, counters, excluded, min, k);
                assert_eq!(
                    got, *want,
                    "nth_tie(min {min}, k {k}) on {name}, {place} (len {len}, excluded {excluded_len})"
                );
            }
            for (excluded, expected, effective) in [
                (Some(excluded), expected, &effective),
                (None, expected_all, &values),
            ] {
                let what = format!(
                    "least on {name}, {place}, excluded {:?}",
                    excluded.map(<[u32]>::len)
                );
                check_least(&what, expected, effective, &input.ks, |draw| {
                    scan::least(backend, counters, excluded, draw)
                });
                let scores = oracle_scores(effective, &factors, input.add);
                let what = format!(
                    "least_weighted on {name}, {place}, excluded {:?}",
                    excluded.map(<[u32]>::len)
                );
                check_least(&what, oracle_min_ties(&scores), &scores, &input.ks, |draw| {
                    scan::least_weighted(backend, counters, excluded, factors.weighting(input.add), draw)
                });
            }
            let got = scan::min_ties_all(backend, counters);
            assert_eq!(got, expected_all, "min_ties_all on {name}, {place} (len {len})");
            for (&(min, k), want) in searches_all.iter().zip(&wanted_all) {
                let got = scan::nth_tie_all(backend, counters, min, k);
                assert_eq!(
                    got, *want,
                    "nth_tie_all(min {min}, k {k}) on {name}, {place} (len {len})"
                );
            }
        }
    };
    check(counters, excluded, "arrays at the chosen alignment");
    // Both arrays again, each ending where an inaccessible page begins.
    crate::page::at_page_end(&values, &excluded_values, |c, e| {
        check(c, e, "arrays at a page end")
    });
}

/// A least-loaded scan (`run`, given the draws) against the oracle over the values
/// it compares (`effective`: values or scores), twice per `k` of `ks`: with its
/// random tries over all lanes made to miss (then the result is exactly tie
/// `k % ties`), and with the tries naming the lanes `ks` name (then the result is
/// some lane at the minimum).
fn check_least(
    what: &str,
    expected: MinTies,
    effective: &[u32],
    ks: &[u32],
    run: impl Fn(&mut dyn FnMut(u32) -> u32) -> Least,
) {
    let n = effective.len();
    let at_min = |i: usize| effective[i] == expected.min;
    let miss = (0..n).find(|&i| !at_min(i));
    let want = |k: u32| match expected.ties {
        0 => Least::Empty,
        _ if expected.min == u32::MAX => Least::Saturated,
        ties => Least::Found {
            index: oracle_nth_tie(effective, expected.min, if ties == 1 { 0 } else { k % ties })
                .expect("the oracle has this tie"),
            min: expected.min,
        },
    };
    let among_ties = |m: u32, k: u32| {
        assert_eq!(m, expected.ties, "{what}: draw over the wrong tie count");
        assert!(m >= 2, "{what}: a draw for a single tie");
        k % m
    };
    for &k in ks.iter().take(4).chain(&[0]) {
        let got = run(&mut |m| match miss {
            Some(miss) if m as usize == n => miss as u32,
            _ => among_ties(m, k),
        });
        assert_eq!(got, want(k), "{what}, k {k}, tries missing");

        let mut tries = ks.iter().cycle().map(|&t| t % n.max(1) as u32);
        let got = run(&mut |m| {
            if m as usize == n && miss.is_some() {
                tries.next().unwrap_or(0)
            } else {
                among_ties(m, k)
            }
        });
        match (got, want(k)) {
            (Least::Found { index, min }, Least::Found { .. }) => {
                assert_eq!(min, expected.min, "{what}, k {k}, tries from the input");
                assert!(
                    index < n && at_min(index),
                    "{what}, k {k}: lane {index} is not at the minimum"
                );
            }
            (got, want) => assert_eq!(got, want, "{what}, k {k}, tries from the input"),
        }
    }
}

/// The first index at or after `offset % 16` lanes past a 64-byte boundary.
fn aligned_start<T>(p: *const T, offset: u8) -> usize {
    let to_boundary = p.align_offset(64);
    let to_boundary = if to_boundary < 16 { to_boundary } else { 0 };
    to_boundary + usize::from(offset % 16)
}

fn fill_values(values: &Values, len: usize) -> Vec<u32> {
    match values {
        Values::Const(v) => vec![*v; len],
        Values::Palette { seed, palette } if !palette.is_empty() => {
            let mut rng = fastrand::Rng::with_seed(*seed);
            (0..len).map(|_| palette[rng.usize(..palette.len())]).collect()
        }
        Values::Cycle(cycle) if !cycle.is_empty() => cycle.iter().copied().cycle().take(len).collect(),
        _ => vec![0; len],
    }
}

fn fill_mask(mask: &Mask, len: usize) -> Vec<u32> {
    match mask {
        Mask::None => vec![0; len],
        Mask::All => vec![u32::MAX; len],
        Mask::Random { seed, density } => {
            let mut rng = fastrand::Rng::with_seed(*seed);
            (0..len)
                .map(|_| if rng.u8(..) < *density { u32::MAX } else { 0 })
                .collect()
        }
        Mask::Cycle(cycle) if !cycle.is_empty() => cycle
            .iter()
            .map(|&x| if x { u32::MAX } else { 0 })
            .cycle()
            .take(len)
            .collect(),
        Mask::Raw { seed, palette } if !palette.is_empty() => {
            let mut rng = fastrand::Rng::with_seed(*seed);
            (0..len).map(|_| palette[rng.usize(..palette.len())]).collect()
        }
        _ => vec![0; len],
    }
}

fn oracle_min_ties(effective: &[u32]) -> MinTies {
    let min = effective.iter().copied().min().unwrap_or(u32::MAX);
    let ties = effective.iter().filter(|&&v| v == min).count();
    MinTies {
        min,
        ties: ties as u32,
    }
}

fn oracle_nth_tie(effective: &[u32], min: u32, k: u32) -> Result<usize, u32> {
    let mut hits = effective
        .iter()
        .enumerate()
        .filter(|&(_, &v)| v == min)
        .map(|(i, _)| i);
    match hits.nth(k as usize) {
        Some(i) => Ok(i),
        None => Err(effective.iter().filter(|&&v| v == min).count() as u32),
    }
}

/// The weighted scan's factors over `len` lanes, as its caller builds them from
/// capacities `c_i`: `scale = L / c_i` with `L` their least common multiple (at
/// most 720 720 for capacities up to 16), `top = u32::MAX / max(scale)`.
struct Factors {
    scale: Vec<u32>,
    top: u32,
}

impl Factors {
    fn of(capacities: &[u8], len: usize) -> Factors {
        let c: Vec<u64> = match capacities {
            [] => vec![1; len],
            _ => (0..len)
                .map(|i| 1 + u64::from(capacities[i % capacities.len()] % 16))
                .collect(),
        };
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let lcm = c.iter().fold(1, |l, &x| l / gcd(l, x) * x);
        let scale: Vec<u32> = c.iter().map(|&x| (lcm / x) as u32).collect();
        let top = u32::MAX / scale.iter().copied().max().unwrap_or(1);
        Factors { scale, top }
    }

    /// The bound for a request of weight `add` (0 for one heavier than `top`,
    /// which is then scored as written).
    fn limit(&self, add: u32) -> u32 {
        self.top.saturating_sub(add)
    }

    fn weighting(&self, add: u32) -> Weighting<'_> {
        Weighting {
            scale: &self.scale,
            limit: self.limit(add),
            add,
        }
    }
}

/// Each lane's score by the definition, in 64 bits: it must fit 32 bits when the
/// request is light enough for the bound (`add <= top`); a heavier one is scored as
/// written, wrapping.
fn oracle_scores(effective: &[u32], f: &Factors, add: u32) -> Vec<u32> {
    let limit = u64::from(f.limit(add));
    effective
        .iter()
        .zip(&f.scale)
        .map(|(&x, &scale)| {
            let sum = u64::from(x).min(limit) + u64::from(add);
            if add <= f.top {
                u32::try_from(sum * u64::from(scale)).expect("a valid bound never wraps")
            } else {
                (sum as u32).wrapping_mul(scale)
            }
        })
        .collect()
}
