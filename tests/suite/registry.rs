//! Resolving selectors by name: the built-ins are always there, clashes and
//! unknown names are clear errors, and `Mode` parses the common spellings.

use std::sync::Arc;
use workerpick::{
    Choice, Context, DeviceKind, Error, Mode, Params, Pool, Registry, Request, Rng, Selector, WorkerInfo,
};

/// The built-ins this suite was written against: each must stay (a new one
/// may join; the tests below take the list from `Mode::ALL`, so adding a mode
/// needs no edit here).
const SEED_BUILTINS: [&str; 10] = [
    "random",
    "round-robin",
    "least-loaded",
    "power-of-two",
    "device-aware",
    "affinity",
    "cost",
    "latency-power-of-two",
    "latency-least-loaded",
    "replica-least-loaded",
];

/// Every built-in's name, in `Mode::ALL`'s order.
fn builtins() -> Vec<&'static str> {
    Mode::ALL.iter().map(|m| m.name()).collect()
}

#[test]
fn the_seed_built_ins_stay() {
    let names = builtins();
    for seed in SEED_BUILTINS {
        assert!(
            names.contains(&seed),
            "{seed} is gone from the built-ins: {names:?}"
        );
    }
    // In the order they were added: a new mode goes at the end of the list.
    assert_eq!(names[..SEED_BUILTINS.len()], SEED_BUILTINS);
}

/// Always the first candidate.
struct First;
impl Selector for First {
    fn name(&self) -> &str {
        "first"
    }
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        cx.candidate(0).map(Choice::unvalidated)
    }
}

fn custom_only() -> Registry {
    let mut r = Registry::new();
    r.register("first", |_: &Params| Ok(First))
        .unwrap()
        .register("also-first", |_: &Params| Ok(First))
        .unwrap();
    r
}

#[test]
fn every_builtin_resolves_from_any_registry() {
    for registry in [Registry::new(), Registry::default(), custom_only()] {
        let pool = Pool::from_workers(0..4).unwrap();
        for name in builtins() {
            assert!(registry.contains(name));
            let selector = registry.resolve(name).unwrap();
            assert_eq!(selector.name(), name);
            // It works through the same pick and reserve paths.
            let r = pool.reserve(&*selector).unwrap();
            assert!(*r.worker() < 4);
            let mut h = pool.handle();
            assert!(*h.select(&*selector).unwrap() < 4);
            assert!(*h.reserve(&selector).unwrap().worker() < 4);
        }
    }
}

#[test]
fn every_mode_builds_the_selector_its_name_resolves() {
    let registry = Registry::new();
    for mode in Mode::ALL {
        assert_eq!(mode.selector().name(), mode.name());
        assert_eq!(registry.resolve(mode.name()).unwrap().name(), mode.name());
    }
    let names: Vec<_> = Registry::new().names().map(str::to_owned).collect();
    assert_eq!(names, builtins());
    let names: Vec<_> = custom_only().names().map(str::to_owned).collect();
    assert_eq!(names[..builtins().len()], builtins());
    assert_eq!(&names[builtins().len()..], ["first", "also-first"]);
}

#[test]
fn custom_selectors_resolve_by_name() {
    let registry = custom_only();
    let pool = Pool::from_workers(["a", "b"]).unwrap();
    for name in ["first", "First", "also_first", " ALSO-FIRST "] {
        let s = registry.resolve(name).unwrap();
        assert_eq!(pool.select(&*s).unwrap(), "a");
    }
}

#[test]
fn a_builtin_name_or_spelling_cannot_be_registered() {
    let mut registry = custom_only();
    for name in [
        "random",
        "Round_Robin",
        "rr",
        "p2c",
        "power_of_two_choices",
        "LEAST-LOADED",
        "device aware",
    ] {
        let err = registry.register(name, |_: &Params| Ok(First)).unwrap_err();
        assert_eq!(
            err,
            Error::DuplicateSelector {
                name: name.to_owned(),
                builtin: true
            }
        );
        assert!(err.to_string().contains(name), "{err}");
        assert!(err.to_string().contains("built-in"), "{err}");
    }
    // The built-ins still resolve to themselves.
    assert_eq!(registry.resolve("rr").unwrap().name(), "round-robin");
}

#[test]
fn a_custom_name_cannot_be_registered_twice() {
    let mut registry = custom_only();
    for name in ["first", "FIRST", "also first"] {
        let err = registry.register(name, |_: &Params| Ok(First)).unwrap_err();
        assert_eq!(
            err,
            Error::DuplicateSelector {
                name: name.to_owned(),
                builtin: false
            }
        );
        assert!(err.to_string().contains("already registered"), "{err}");
    }
    let err = registry.register("  ", |_: &Params| Ok(First)).unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }));
    assert_eq!(registry.names().count(), builtins().len() + 2);
}

#[test]
fn an_unknown_name_lists_every_known_one() {
    let registry = custom_only();
    let err = registry.resolve("fastest").unwrap_err();
    let mut known: Vec<String> = builtins().iter().map(|s| s.to_string()).collect();
    known.extend(["first".into(), "also-first".into()]);
    assert_eq!(
        err,
        Error::UnknownSelector {
            name: "fastest".into(),
            known: known.clone()
        }
    );
    let text = err.to_string();
    assert!(text.contains("fastest"), "{text}");
    for name in &known {
        assert!(text.contains(name.as_str()), "{text} lacks {name}");
    }
    assert!(!registry.contains("fastest"));
}

#[test]
fn modes_parse_the_common_spellings() {
    let cases = [
        (Mode::Random, &["random", "RANDOM", " Random "][..]),
        (
            Mode::RoundRobin,
            &[
                "round-robin",
                "round_robin",
                "roundrobin",
                "RoundRobin",
                "rr",
                "RR",
                "round robin",
            ],
        ),
        (
            Mode::LeastLoaded,
            &["least-loaded", "least_loaded", "leastloaded", "Least-Loaded"],
        ),
        (
            Mode::PowerOfTwo,
            &[
                "power-of-two",
                "power_of_two",
                "poweroftwo",
                "power_of_two_choices",
                "p2c",
                "P2C",
            ],
        ),
        (
            Mode::DeviceAware,
            &[
                "device-aware",
                "device_aware",
                "deviceaware",
                "device-aware-weighted",
            ],
        ),
        (
            Mode::Affinity,
            &["affinity", "consistent-hash", "Consistent_Hash", "bounded-load"],
        ),
    ];
    let registry = Registry::new();
    for (mode, spellings) in cases {
        for s in spellings {
            assert_eq!(s.parse::<Mode>().unwrap(), mode, "{s}");
            assert_eq!(registry.resolve(s).unwrap().name(), mode.name(), "{s}");
        }
    }
}

#[test]
fn display_round_trips() {
    for mode in Mode::ALL {
        assert_eq!(mode.to_string(), mode.name());
        assert_eq!(mode.to_string().parse::<Mode>().unwrap(), mode);
    }
}

#[test]
fn a_bad_mode_lists_the_accepted_names() {
    for bad in ["", "round-robbin", "p3c", "least--loaded"] {
        let err = bad.parse::<Mode>().unwrap_err();
        assert_eq!(
            err,
            Error::UnknownSelector {
                name: bad.into(),
                known: builtins().iter().map(|s| s.to_string()).collect()
            }
        );
        for name in builtins() {
            assert!(err.to_string().contains(name), "{err}");
        }
    }
}

#[test]
fn parameters_are_validated_at_resolve_time() {
    let registry = Registry::new();
    let resolve = |spec: &str| registry.resolve_with("device-aware", &spec.parse().unwrap());

    assert!(resolve("").is_ok());
    assert!(resolve("cpu-ratio=1").is_ok());
    assert!(resolve("cpu_ratio = 4").is_ok());
    for bad in [
        "cpu-ratio=0",
        "cpu-ratio=-1",
        "cpu-ratio=eight",
        "cpu-ratio=",
        "cpu-ration=4",
    ] {
        let err = resolve(bad).unwrap_err();
        assert!(matches!(err, Error::InvalidConfig { .. }), "{bad}: {err}");
        assert!(err.to_string().contains("cpu-ratio"), "{bad}: {err}");
    }
    // A parameter a selector does not take is refused too.
    let p = Params::new().set("cpu-ratio", 4);
    for name in ["random", "round-robin", "least-loaded", "power-of-two"] {
        let err = registry.resolve_with(name, &p).unwrap_err();
        assert!(err.to_string().contains("takes none"), "{err}");
    }
    assert!(matches!(
        "cpu-ratio".parse::<Params>(),
        Err(Error::InvalidConfig { .. })
    ));
}

#[test]
fn the_cpu_ratio_reaches_the_selector() {
    let registry = Registry::new();
    let pool = Pool::new();
    pool.insert_with("cpu", WorkerInfo::new().device(DeviceKind::Cpu))
        .unwrap();
    pool.insert("gpu").unwrap();
    for (ratio, gpu_first) in [(1, 1), (3, 3), (8, 8)] {
        let s = registry
            .resolve_with("device-aware", &Params::new().set("cpu-ratio", ratio))
            .unwrap();
        let held: Vec<_> = (0..=gpu_first).map(|_| pool.reserve(&*s).unwrap()).collect();
        let order: Vec<_> = held.iter().map(|r| *r.worker()).collect();
        assert!(order[..gpu_first].iter().all(|&w| w == "gpu"), "{order:?}");
        assert_eq!(order[gpu_first], "cpu", "ratio {ratio}: {order:?}");
    }
}

/// A custom selector with a parameter: the candidate at a fixed position.
struct Nth(usize);
impl Selector for Nth {
    fn name(&self) -> &str {
        "nth"
    }
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let slot = cx.candidate(self.0 % cx.len())?;
        Some(Choice::validated(slot, cx.load(slot)))
    }
}

#[test]
fn custom_factories_get_their_parameters() {
    let mut registry = Registry::new();
    registry
        .register("nth", |p: &Params| {
            p.expect_only("nth", &["index"])?;
            Ok(Nth(p.get_u32("index")?.unwrap_or(0) as usize))
        })
        .unwrap();
    let pool = Pool::from_workers([10, 20, 30]).unwrap();
    let s = registry.resolve_with("nth", &"index=2".parse().unwrap()).unwrap();
    let r = pool.reserve(&*s).unwrap();
    assert_eq!((*r.worker(), pool.in_flight(&30)), (30, Some(1)));
    let err = registry
        .resolve_with("nth", &"idx=2".parse().unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("idx"), "{err}");
}

#[test]
fn each_resolve_is_a_new_selector_and_an_arc_is_shared() {
    let registry = Registry::new();
    let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
    let one = registry.resolve("round-robin").unwrap();
    let two = registry.resolve("round-robin").unwrap();
    assert_eq!(pool.select(&*one).unwrap(), "a");
    assert_eq!(pool.select(&*one).unwrap(), "b");
    assert_eq!(pool.select(&*two).unwrap(), "a", "a fresh cursor");

    // One Arc shared by threads shares one cursor: every ticket once.
    let shared: Arc<dyn Selector> = registry.resolve("rr").unwrap();
    let picks = std::thread::scope(|s| {
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let shared = Arc::clone(&shared);
                let pool = &pool;
                s.spawn(move || {
                    let mut h = pool.handle_with_rng(Rng::with_seed(1));
                    (0..300).map(|_| *h.select(&*shared).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    });
    for w in ["a", "b", "c"] {
        assert_eq!(picks.iter().filter(|&&p| p == w).count(), 300);
    }
}

#[test]
fn a_registry_is_shareable() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Registry>();
    assert_send_sync::<Arc<dyn Selector>>();
    let registry = custom_only();
    let copy = registry.clone();
    assert_eq!(copy.names().count(), builtins().len() + 2);
    assert!(format!("{registry:?}").contains("also-first"));
}

#[test]
fn resolved_device_aware_uses_cache_hits() {
    let registry = Registry::new();
    let pool = Pool::from_workers(["a", "b"]).unwrap();
    let busy = pool.reserve_worker(&"b", 10).unwrap();
    let hits = workerpick::CacheHits::build(&pool, 2, |&w| if w == "b" { 2 } else { 0 });
    let s = registry.resolve("device_aware").unwrap();
    let r = pool.reserve_with(&*s, &Request::new().cache_hits(&hits)).unwrap();
    assert_eq!((*r.worker(), r.weight()), ("b", 0));
    drop((r, busy));
}

#[cfg(feature = "serde")]
#[test]
fn modes_serialize_as_their_names() {
    for mode in Mode::ALL {
        let json = serde_json::to_string(&mode).unwrap();
        assert_eq!(json, format!("\"{}\"", mode.name()));
        assert_eq!(serde_json::from_str::<Mode>(&json).unwrap(), mode);
    }
    assert_eq!(
        serde_json::from_str::<Mode>("\"power_of_two_choices\"").unwrap(),
        Mode::PowerOfTwo
    );
    let err = serde_json::from_str::<Mode>("\"fastest\"").unwrap_err();
    assert!(err.to_string().contains("round-robin"), "{err}");
    assert!(serde_json::from_str::<Mode>("3").is_err());
}

#[test]
fn a_mode_that_says_it_splits_evenly_does_and_its_load_rule_is_a_phrase() {
    for mode in Mode::ALL {
        if let Some(rule) = mode.load_rule() {
            assert!(rule.starts_with(char::is_lowercase), "{mode}: {rule}");
        }
        if !mode.splits_evenly() {
            continue;
        }
        // 8 reservations held together over 4 idle equal workers: 2 each.
        let pool = Pool::from_workers([0, 1, 2, 3]).unwrap();
        let selector = mode.selector();
        let held: Vec<_> = (0..8).map(|_| pool.reserve(&*selector).unwrap()).collect();
        let mut per = [0; 4];
        for r in &held {
            per[*r.worker()] += 1;
        }
        assert_eq!(per, [2; 4], "{mode}");
    }
}
