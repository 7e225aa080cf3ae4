//! Target `ops`: an arbitrary sequence of operations replayed on a
//! `Pool<u8>` and on a plain sequential model of it.
//!
//! The model is a list of members and the live guards as `(worker, weight)`
//! pairs; a worker's load is the sum of its guards' weights. It also tracks
//! what the pool documents about storage (which removed workers still drain,
//! how many slots are free, which snapshot each handle holds, the slot
//! limit), so `stats`, `CapacityExceeded` and stale eligibility masks are
//! checked exactly too, and the registry's names.
//!
//! After every operation: every count equals the model's, no pick falls
//! outside the candidates, the mask or its mode's rule (round-robin's ticket,
//! least-loaded's minimum, power-of-two's lighter draw, device-aware's group),
//! a preview changed nothing (loads and the round-robin cursor), a booking
//! past `u32::MAX` is refused, errors are the model's. At the end, with every
//! guard dropped, every count is 0 and removed workers are gone.

use arbitrary::{Arbitrary, Unstructured};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use workerpick::scan::Backend;
use workerpick::{Affinity, Decider, PairRequest, PairReservation, Pairs, Plan};
use workerpick::{
    CacheHits, Choice, Context, Cost, CreditWeight, DEFAULT_MAX_WORKERS, DeviceAware, DeviceKind,
    Eligibility, Error, Handle, LeastLoaded, MAX_REPORTED_LOAD, Params, Pool, PoolStats, PowerOfTwo, Random,
    Registry, Request, Reservation, Rng, RoundRobin, Selector, Temperature, UNHEALTHY_LOAD, WorkerInfo,
    WorkerToken,
};
#[cfg(feature = "sessions")]
use workerpick::{SessionBinding, Sessions, Stickiness};

/// Workers are `0..KEYS`: a small space, so inputs collide often.
pub const KEYS: u8 = 10;
/// Handles kept alive across operations (each caches its own snapshot).
pub const HANDLES: usize = 2;
const MASKS: usize = 3;
const MAX_OPS: usize = 512;

/// One scenario.
#[derive(Arbitrary, Debug)]
pub struct Input {
    /// Seeds the handles' generators and the thread-local one that plain
    /// `Pool` methods draw from, so a failure replays exactly.
    pub seed: u64,
    /// Which available scan backend the pool uses.
    pub backend: u8,
    /// `Pool::with_max_workers(limit % 32)`, or `Pool::from_workers` (the
    /// default limit, whose up-front storage makes a run slower) for `0`.
    pub limit: u8,
    /// The first set (`from_workers`, or `replace` on a limited pool).
    pub initial: Vec<u8>,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

/// One operation.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    Insert(u8),
    InsertWith {
        key: u8,
        cpu: bool,
        group: u8,
    },
    Remove(u8),
    Replace(Vec<u8>),
    SetInfo {
        key: u8,
        cpu: bool,
        group: u8,
    },
    Reclaim,
    /// `pool.eligibility(..)` into mask slot `slot`, admitting key `k` when bit `k` is set.
    BuildMask {
        slot: u8,
        admit: u16,
    },
    /// `Eligibility::rebuild` of mask slot `slot`.
    RebuildMask {
        slot: u8,
        admit: u16,
    },
    Select(Pick),
    Preview(Pick),
    Reserve {
        pick: Pick,
        weight: Weight,
    },
    /// A pinned reservation, through the pool or a handle.
    ReserveWorker {
        key: u8,
        weight: Weight,
        handle: Option<u8>,
    },
    /// Drops guard `index % guards`.
    Release(u8),
    Retarget {
        guard: u8,
        key: u8,
    },
    /// Replaces a handle with a fresh one (it caches the current snapshot).
    RenewHandle(u8),
    /// `Registry::register` of a custom selector (candidate 0, unvalidated).
    Register(Name),
    /// `Registry::resolve_with`, with a `cpu-ratio` parameter when given.
    Resolve {
        name: Name,
        ratio: Option<u8>,
    },
    /// `report_load(key, load)`: `load % 16`, or from 250 up `u32::MAX - (255 - load)`,
    /// so that effective loads saturate.
    Report {
        key: u8,
        load: u8,
    },
    /// Peer `peer` books `1 + (k + shift) % 4` on each key `k` whose bit is set (and
    /// nothing else), then its summary is applied to the pool.
    PeerSummary {
        peer: bool,
        keys: u16,
        shift: u8,
    },
    /// Every report ages out: age limit zero, then `expire_reports`.
    ExpireReports,
    /// `set_capacity(key, 1 + capacity % 16)`.
    SetCapacity {
        key: u8,
        capacity: u8,
    },
    /// `set_healthy(key, healthy)`.
    SetHealthy {
        key: u8,
        healthy: bool,
    },
    /// `drain(key)`.
    Drain(u8),
    /// `resume(key)`.
    Resume(u8),
    // -- The cost mode and phased loads (`cost_op`); other blocks of ops go
    // after this one, not inside it. --
    /// `reserve_with(&Cost, ..)` through the pool or handle `handle`, with cache
    /// hits on every worker (`dense`) or on those whose bit of `credit` is set.
    CostReserve(CostPick),
    /// `release_part(n % 8)` of guard `guard % guards`, leaving it at least 1 (a
    /// reservation emptied by it is not modelled as a pin).
    ReleasePart {
        guard: u8,
        n: u8,
    },
    /// `add_charge(n % 8)` of guard `guard % guards`.
    AddCharge {
        guard: u8,
        n: u8,
    },
    // Pairs: this pool as the decode pool beside a fixed prefill pool.
    /// `Pairs::reserve` (least-loaded both sides): prefill weight, decode
    /// weight, the decider's threshold, the caller's plan (`Some(true)`: local).
    PairReserve {
        prefill: u8,
        decode: u8,
        threshold: u8,
        local: Option<bool>,
    },
    /// `Pairs::preview` then `Pairs::admit` at once: the previewed worker and plan.
    PairPreviewAdmit {
        prefill: u8,
        decode: u8,
        threshold: u8,
    },
    /// `hand_off` of pair `index % pairs`.
    PairHandOff(u8),
    /// Drops pair `index % pairs`.
    PairRelease(u8),
    /// Drains (or resumes) prefill worker `key % PREFILL_KEYS`.
    PairPrefillDrain {
        key: u8,
        drain: bool,
    },
    // -- Affinity and session bindings (`affinity_op`, `session_op`). --
    /// `enable_affinity()` (once on, it stays on).
    EnableAffinity,
    /// `reserve_with(&Affinity, ..)` for key `key % AFFINITY_KEYS`, balance
    /// factor `[0, 100, 125, 200][factor % 4]`, through the pool or handle
    /// `handle`.
    AffinityReserve {
        key: u8,
        factor: u8,
        mask: MaskRef,
        handle: Option<u8>,
    },
    /// `Sessions::reserve` of session `session % SESSIONS` through handle
    /// `handle % HANDLES`, on the hard or the soft table (least-loaded picks
    /// for sessions that are not bound, or whose worker is gone, soft).
    #[cfg_attr(not(feature = "sessions"), allow(dead_code))]
    SessionReserve {
        session: u8,
        hard: bool,
        handle: u8,
    },
    /// `Sessions::unbind`.
    #[cfg_attr(not(feature = "sessions"), allow(dead_code))]
    SessionUnbind {
        session: u8,
        hard: bool,
    },
    /// `Sessions::sweep`: the bindings whose worker left go.
    #[cfg_attr(not(feature = "sessions"), allow(dead_code))]
    SessionSweep {
        hard: bool,
    },
    /// `Sessions::export`, against the model's bindings whose worker stays.
    #[cfg_attr(not(feature = "sessions"), allow(dead_code))]
    SessionExport {
        hard: bool,
    },
    /// `Sessions::import` of session `session % SESSIONS` bound to worker
    /// `key`, idle a minute, or (`stale`) two hours: past the TTL, refused.
    /// Skipped while the session has a binding whose worker stays (which of
    /// two bindings a few milliseconds apart was used last is the clock's).
    #[cfg_attr(not(feature = "sessions"), allow(dead_code))]
    SessionImport {
        session: u8,
        key: u8,
        hard: bool,
        stale: bool,
    },
}

/// Request keys of `Op::AffinityReserve`.
pub const AFFINITY_KEYS: u8 = 6;
/// Session ids of the `Op::Session*` ops.
#[cfg_attr(not(feature = "sessions"), allow(dead_code))]
pub const SESSIONS: u8 = 4;
/// Bindings a session table holds.
#[cfg_attr(not(feature = "sessions"), allow(dead_code))]
const SESSION_MAX: usize = 3;
/// The session tables' TTL: no binding made during a run expires by itself.
#[cfg_attr(not(feature = "sessions"), allow(dead_code))]
const SESSION_TTL: Duration = Duration::from_secs(3600);

/// How [`Op::CostReserve`] picks: weight `[0, 0.5, 1, 2.5][weight % 4]`,
/// temperature 0.5 when `hot`, a busy threshold of `busy % 4` on reported load.
/// The credit is built `[dense, from worker ids, from tokens][build % 3]`, the
/// sparse builds over an input that held other credit before (so a build must
/// retire the previous one's entries).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct CostPick {
    pub credit: u16,
    pub dense: bool,
    pub weight: u8,
    pub hot: bool,
    pub busy: Option<u8>,
    pub handle: Option<u8>,
    pub build: u8,
}

/// The load `Op::Report` reports.
fn report_value(load: u8) -> u32 {
    if load >= 250 {
        u32::MAX - u32::from(255 - load)
    } else {
        u32::from(load % 16)
    }
}

/// How a pick is made.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Pick {
    pub mode: Mode,
    pub via: Via,
    pub mask: MaskRef,
    /// Cache hits for the device-aware mode (the others ignore them).
    pub hits: Option<Hits>,
}

/// Cache hits built for the current set: the request needs `needed % 4` keys;
/// worker `k` holds all of them when bit `k` of `full` is set, else
/// `partial` of them (at most `needed - 1`).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Hits {
    pub needed: u8,
    pub full: u16,
    pub partial: u8,
}

impl Hits {
    fn needed(self) -> u32 {
        u32::from(self.needed % 4)
    }

    fn held(self, k: u8) -> u32 {
        if admits(self.full, k) {
            self.needed()
        } else {
            u32::from(self.partial).min(self.needed().saturating_sub(1))
        }
    }
}

/// A selector name: one of [`NAMES`], respelt (case, separators, padding).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Name {
    pub base: u8,
    /// Bit `i` upper-cases character `i`.
    pub case: u16,
    /// What each `-` becomes: `-`, `_` or a space.
    pub sep: u8,
    pub padded: bool,
}

/// Built-in spellings, custom names, and names nothing registers.
pub const NAMES: [&str; 20] = [
    "random",
    "round-robin",
    "roundrobin",
    "rr",
    "least-loaded",
    "leastloaded",
    "power-of-two",
    "poweroftwo",
    "power-of-two-choices",
    "p2c",
    "device-aware",
    "deviceaware",
    "device-aware-weighted",
    "first",
    "my-zone",
    "sticky",
    "",
    "nope",
    "least-loaded-x",
    "round",
];

impl Name {
    pub fn text(self) -> String {
        let base = NAMES[usize::from(self.base) % NAMES.len()];
        let sep = ['-', '_', ' '][usize::from(self.sep) % 3];
        let body: String = base
            .chars()
            .enumerate()
            .map(|(i, c)| match c {
                '-' => sep,
                c if i < 16 && self.case & (1 << i) != 0 => c.to_ascii_uppercase(),
                c => c,
            })
            .collect();
        if self.padded { format!(" {body}\t") } else { body }
    }
}

/// Which selector: a built-in, a custom one, or a name resolved through a
/// `Registry`. Not `workerpick::Mode`: this is input grammar (its variants'
/// order fixes how the committed corpus decodes), and most of it is not a
/// built-in.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Mode {
    Random,
    RoundRobin,
    PowerOfTwo,
    LeastLoaded,
    /// A custom selector: candidate `index % len`, answered as `charge` says.
    Nth {
        index: u8,
        charge: Charge,
    },
    /// A custom selector that finds nothing acceptable.
    Refuse,
    /// `DeviceAware::with_cpu_ratio(1 + ratio % 12)`.
    DeviceAware {
        ratio: u8,
    },
    /// The selector a `Registry` resolves `name` to (a fresh one each time).
    Resolved(Name),
}

/// How the custom `Nth` selector answers.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Charge {
    Unvalidated,
    /// Validated with the load it read: the compare-and-swap succeeds.
    Validated,
    /// Validated with a load that is never current: every compare-and-swap
    /// fails and the booking takes the bounded fallback.
    Stale,
    Uncharged,
}

/// Which entry point.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Via {
    Pool,
    /// The pool, through `&dyn Selector`.
    PoolDyn,
    Handle(u8),
    /// A handle, through `&dyn Selector`.
    HandleDyn(u8),
}

/// Which eligibility mask.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum MaskRef {
    All,
    /// Mask slot `n % MASKS` (`Eligibility::new()` until built).
    Slot(u8),
    /// A mask built for another pool.
    Foreign,
}

/// The weight a reservation charges.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Weight {
    One,
    Zero,
    Small(u8),
    Large(u32),
    /// `u32::MAX - n`.
    NearMax(u8),
}

impl Weight {
    pub fn get(self) -> u32 {
        match self {
            Weight::One => 1,
            Weight::Zero => 0,
            Weight::Small(w) => u32::from(w),
            Weight::Large(w) => w,
            Weight::NearMax(n) => u32::MAX - u32::from(n),
        }
    }
}

/// Normalises an input byte to a worker.
pub fn key(k: u8) -> u8 {
    k % KEYS
}

/// The custom selector behind [`Mode::Nth`].
pub struct Nth {
    pub index: u8,
    pub charge: Charge,
}

impl Selector for Nth {
    fn name(&self) -> &str {
        "nth"
    }

    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let n = cx.len();
        let slot = cx.candidate(usize::from(self.index) % n.max(1))?;
        Some(match self.charge {
            Charge::Unvalidated => Choice::unvalidated(slot),
            Charge::Validated => Choice::validated(slot, cx.load(slot)),
            Charge::Stale => Choice::validated(slot, cx.load(slot).wrapping_add(1)),
            Charge::Uncharged => Choice::uncharged(slot),
        })
    }
}

/// The custom selector behind [`Mode::Refuse`].
pub struct Refuse;

impl Selector for Refuse {
    fn name(&self) -> &str {
        "refuse"
    }

    fn choose<'a>(&self, _: &mut Context<'a>) -> Option<Choice<'a>> {
        None
    }
}

/// The built-in selectors a run shares (the round-robin cursor persists).
#[derive(Default)]
pub struct Selectors {
    pub device_aware: DeviceAware,
    pub random: Random,
    pub round_robin: RoundRobin,
    pub power_of_two: PowerOfTwo,
    pub least_loaded: LeastLoaded,
}

/// What a pick does with its choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Select,
    Preview,
    Reserve(u32),
}

/// The result of one pick, whatever its kind.
pub enum Outcome<'p> {
    Picked(Result<u8, Error>),
    Reserved(Result<Reservation<'p, u8>, Error>),
}

/// Runs one pick through `via` with selector `s`.
fn apply<'p, S: Selector + ?Sized>(
    pool: &'p Pool<u8>,
    handles: &mut [Handle<'p, u8>],
    via: Via,
    s: &S,
    request: &Request<'_>,
    kind: Kind,
) -> Outcome<'p> {
    let request = match kind {
        Kind::Reserve(w) => request.weight(w),
        _ => *request,
    };
    match via {
        Via::Pool | Via::PoolDyn => match kind {
            Kind::Select => Outcome::Picked(pool.select_with(s, &request)),
            Kind::Preview => Outcome::Picked(pool.preview_with(s, &request)),
            Kind::Reserve(_) => Outcome::Reserved(pool.reserve_with(s, &request)),
        },
        Via::Handle(h) | Via::HandleDyn(h) => {
            let h = &mut handles[usize::from(h) % HANDLES];
            match kind {
                Kind::Select => Outcome::Picked(h.select_with(s, &request).copied()),
                Kind::Preview => Outcome::Picked(h.preview_with(s, &request).copied()),
                Kind::Reserve(_) => Outcome::Reserved(h.reserve_with(s, &request)),
            }
        }
    }
}

/// Runs one pick with `mode`'s selector, statically or through `&dyn Selector`
/// as `via` says.
pub fn dispatch<'p>(
    pool: &'p Pool<u8>,
    handles: &mut [Handle<'p, u8>],
    selectors: &Selectors,
    pick: Pick,
    request: &Request<'_>,
    kind: Kind,
) -> Outcome<'p> {
    let nth = match pick.mode {
        Mode::Nth { index, charge } => Nth { index, charge },
        _ => Nth {
            index: 0,
            charge: Charge::Unvalidated,
        },
    };
    let device_aware = match pick.mode {
        Mode::DeviceAware { ratio } => device_aware(ratio),
        _ => selectors.device_aware,
    };
    if matches!(pick.via, Via::PoolDyn | Via::HandleDyn(_)) {
        let s: &dyn Selector = match pick.mode {
            Mode::Random => &selectors.random,
            Mode::RoundRobin => &selectors.round_robin,
            Mode::PowerOfTwo => &selectors.power_of_two,
            Mode::LeastLoaded => &selectors.least_loaded,
            Mode::Nth { .. } => &nth,
            Mode::Refuse => &Refuse,
            Mode::DeviceAware { .. } => &device_aware,
            Mode::Resolved(_) => unreachable!("resolved selectors are picked by `Run::pick`"),
        };
        return apply(pool, handles, pick.via, s, request, kind);
    }
    match pick.mode {
        Mode::Random => apply(pool, handles, pick.via, &selectors.random, request, kind),
        Mode::RoundRobin => apply(pool, handles, pick.via, &selectors.round_robin, request, kind),
        Mode::PowerOfTwo => apply(pool, handles, pick.via, &selectors.power_of_two, request, kind),
        Mode::LeastLoaded => apply(pool, handles, pick.via, &selectors.least_loaded, request, kind),
        Mode::Nth { .. } => apply(pool, handles, pick.via, &nth, request, kind),
        Mode::Refuse => apply(pool, handles, pick.via, &Refuse, request, kind),
        Mode::DeviceAware { .. } => apply(pool, handles, pick.via, &device_aware, request, kind),
        Mode::Resolved(_) => unreachable!("resolved selectors are picked by `Run::pick`"),
    }
}

fn device_aware(ratio: u8) -> DeviceAware {
    DeviceAware::with_cpu_ratio(1 + u32::from(ratio % 12)).expect("a ratio of at least 1")
}

/// Whether two errors are the same kind (the text of `InvalidConfig` aside).
pub fn same_error(a: &Error, b: &Error) -> bool {
    match (a, b) {
        (Error::InvalidConfig { what: x, .. }, Error::InvalidConfig { what: y, .. }) => x == y,
        _ => a == b,
    }
}

fn foreign_mask_error() -> Error {
    Error::InvalidConfig {
        what: "eligibility mask",
        why: String::new(),
    }
}

fn admits(bits: u16, k: u8) -> bool {
    bits & (1 << k) != 0
}

/// A mask as the model sees it: the epoch it was built at and the members it
/// admitted, in set order, with their identities.
#[derive(Clone, Debug, Default)]
struct MaskModel {
    epoch: u64,
    entries: Vec<(u8, u64)>,
}

/// The sequential reference.
#[derive(Debug, Default)]
struct Model {
    members: Vec<(u8, WorkerInfo)>,
    /// The identity of every member and draining worker: a re-added worker
    /// keeps it while it still drains, and gets a new one after its storage
    /// was reclaimed.
    identity: HashMap<u8, u64>,
    next_identity: u64,
    /// Removed workers whose storage is not reusable yet, with the epoch of
    /// the first snapshot without them.
    retired: HashMap<u8, u64>,
    free: usize,
    capacity: usize,
    /// The pool's limit on slots.
    max: usize,
    epoch: u64,
    handle_epochs: Vec<u64>,
    guards: Vec<(u8, u32)>,
    /// Live pairs, in the order of `Run::pairs`.
    pairs: Vec<PairModel>,
    cursor: usize,
    fallbacks: u64,
    /// `None`: never built (`Eligibility::new()`).
    masks: Vec<Option<MaskModel>>,
    /// Custom selector names as registered (trimmed), in order.
    custom: Vec<String>,
    /// Load reported by the workers themselves.
    direct: HashMap<u8, u32>,
    /// Each peer's last summary, as applied (members only); `None`: never sent.
    peers: [Option<HashMap<u8, u32>>; 2],
    /// The reported load folded into each member's counter.
    applied: HashMap<u8, u32>,
    /// Draining members (`Pool::drain`): no pick chooses them.
    draining: HashSet<u8>,
    /// Members marked unhealthy, with the load the mark added to the counter.
    unhealthy: HashMap<u8, u32>,
    /// Whether `enable_affinity` was called.
    affinity: bool,
    /// Per request key: where its last unbounded, unmasked affinity pick
    /// went, and the healthy candidates then.
    homes: HashMap<u64, (u8, Vec<u8>)>,
    /// Per session table (soft, hard): session → its worker and that
    /// worker's identity when bound.
    #[cfg_attr(not(feature = "sessions"), allow(dead_code))]
    bound: [HashMap<u64, (u8, u64)>; 2],
}

/// How the model judges a pick: the rule of the selector that made it.
#[derive(Clone, Copy, Debug)]
enum Rule {
    Random,
    /// `shared`: the run's round-robin, whose cursor the model tracks; else a
    /// freshly resolved one, at ticket 0.
    RoundRobin {
        shared: bool,
    },
    PowerOfTwo,
    LeastLoaded,
    Nth {
        index: u8,
        charge: Charge,
    },
    Refuse,
    DeviceAware {
        ratio: u32,
    },
}

impl Rule {
    fn of(mode: Mode) -> Rule {
        match mode {
            Mode::Random => Rule::Random,
            Mode::RoundRobin => Rule::RoundRobin { shared: true },
            Mode::PowerOfTwo => Rule::PowerOfTwo,
            Mode::LeastLoaded => Rule::LeastLoaded,
            Mode::Nth { index, charge } => Rule::Nth { index, charge },
            Mode::Refuse => Rule::Refuse,
            Mode::DeviceAware { ratio } => Rule::DeviceAware {
                ratio: device_aware(ratio).cpu_ratio(),
            },
            Mode::Resolved(_) => unreachable!("resolved by the model's registry"),
        }
    }
}

/// The canonical form of a selector name: trimmed, ASCII lower case, `_` and
/// spaces as `-`.
fn canonical(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The built-in mode a canonical name spells: its canonical name, and its rule.
fn builtin(canonical: &str) -> Option<(&'static str, Rule)> {
    Some(match canonical {
        "random" => ("random", Rule::Random),
        "round-robin" | "roundrobin" | "rr" => ("round-robin", Rule::RoundRobin { shared: false }),
        "least-loaded" | "leastloaded" => ("least-loaded", Rule::LeastLoaded),
        "power-of-two" | "poweroftwo" | "power-of-two-choices" | "p2c" => ("power-of-two", Rule::PowerOfTwo),
        "device-aware" | "deviceaware" | "device-aware-weighted" => {
            ("device-aware", Rule::DeviceAware { ratio: 8 })
        }
        _ => return None,
    })
}

/// The affinity, cost, latency-aware and replica modes are listed (every registry
/// resolves them) but no name in [`NAMES`] spells them, so no resolved pick
/// uses them; the cost mode is modelled through its own op, [`Op::CostReserve`].
const BUILTIN_NAMES: [&str; 10] = [
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

impl Model {
    /// Every name a registry resolves: built-ins first, then customs.
    fn names(&self) -> Vec<String> {
        BUILTIN_NAMES
            .iter()
            .map(|&n| n.to_owned())
            .chain(self.custom.iter().cloned())
            .collect()
    }

    fn custom(&self, name: &str) -> bool {
        let name = canonical(name);
        self.custom.iter().any(|c| canonical(c) == name)
    }

    fn register(&mut self, name: &str) -> Result<(), Error> {
        let trimmed = name.trim();
        if trimmed.is_empty() {
            return Err(Error::InvalidConfig {
                what: "selector name",
                why: String::new(),
            });
        }
        let is_builtin = builtin(&canonical(trimmed)).is_some();
        if is_builtin || self.custom(trimmed) {
            return Err(Error::DuplicateSelector {
                name: trimmed.to_owned(),
                builtin: is_builtin,
            });
        }
        self.custom.push(trimmed.to_owned());
        Ok(())
    }

    /// What `resolve_with(name, cpu-ratio=ratio)` gives: the selector's name
    /// and rule.
    fn resolve(&self, name: &str, ratio: Option<u8>) -> Result<(&'static str, Rule), Error> {
        let parameter = || Error::InvalidConfig {
            what: "selector parameter",
            why: String::new(),
        };
        match builtin(&canonical(name)) {
            Some(("device-aware", _)) => match ratio {
                Some(0) => Err(Error::InvalidConfig {
                    what: "device-aware cpu-ratio",
                    why: String::new(),
                }),
                Some(r) => Ok(("device-aware", Rule::DeviceAware { ratio: r.into() })),
                None => Ok(("device-aware", Rule::DeviceAware { ratio: 8 })),
            },
            Some(_) if ratio.is_some() => Err(parameter()),
            Some(found) => Ok(found),
            None if self.custom(name) && ratio.is_some() => Err(parameter()),
            None if self.custom(name) => Ok((
                "nth",
                Rule::Nth {
                    index: 0,
                    charge: Charge::Unvalidated,
                },
            )),
            None => Err(Error::UnknownSelector {
                name: name.to_owned(),
                known: self.names(),
            }),
        }
    }

    fn info(&self, k: u8) -> WorkerInfo {
        self.members
            .iter()
            .find(|&&(m, _)| m == k)
            .map(|&(_, i)| i)
            .expect("a member")
    }

    fn is_member(&self, k: u8) -> bool {
        self.members.iter().any(|&(m, _)| m == k)
    }

    fn load(&self, k: u8) -> u64 {
        let pairs: u64 = self
            .pairs
            .iter()
            .filter(|p| p.decode == k)
            .map(|p| u64::from(p.weight))
            .sum();
        self.guards
            .iter()
            .filter(|&&(g, _)| g == k)
            .map(|&(_, w)| u64::from(w))
            .sum::<u64>()
            + pairs
    }

    /// The load reported for `k` from outside, summed exactly.
    fn reported(&self, k: u8) -> u64 {
        let peers: u64 = self
            .peers
            .iter()
            .flatten()
            .filter_map(|p| p.get(&k))
            .map(|&l| u64::from(l))
            .sum();
        peers + self.direct.get(&k).map_or(0, |&l| u64::from(l))
    }

    /// The reported load counted in `k`'s counter.
    fn published(&self, k: u8) -> u32 {
        self.applied.get(&k).copied().unwrap_or(0)
    }

    /// `k`'s load as the pool counts it: its bookings plus the reported load.
    fn effective(&self, k: u8) -> u64 {
        self.load(k) + u64::from(self.published(k)) + u64::from(self.penalty(k))
    }

    /// The load a health mark added to `k`'s counter.
    fn penalty(&self, k: u8) -> u32 {
        self.unhealthy.get(&k).copied().unwrap_or(0)
    }

    /// Whether a fleet control bends the picks away from the plain rules:
    /// a draining or unhealthy member, or a capacity other than 1. While one
    /// does, picks are checked against what every mode promises (a candidate,
    /// never a draining worker, never an unhealthy one while one is healthy)
    /// rather than against each mode's exact rule.
    fn bent(&self) -> bool {
        !self.draining.is_empty()
            || !self.unhealthy.is_empty()
            || self.members.iter().any(|&(_, i)| i.capacity_weight() != 1)
    }

    /// A worker that left loses its drain and its health mark.
    fn forget_fleet(&mut self, k: u8) {
        self.draining.remove(&k);
        self.unhealthy.remove(&k);
    }

    /// After a report change touching `k`: its sum, capped, is counted in its
    /// counter, as much of it as fits beside the bookings.
    fn refold(&mut self, k: u8) {
        let cap = u64::from(MAX_REPORTED_LOAD);
        let target = self.reported(k).min(cap);
        if target != u64::from(self.published(k)) {
            let room = u64::from(u32::MAX) - self.load(k) - u64::from(self.penalty(k));
            let now = u32::try_from(target.min(room)).expect("at most the cap");
            self.applied.insert(k, now);
        }
    }

    /// A worker that left takes its reports with it.
    fn forget_reports(&mut self, k: u8) {
        self.applied.remove(&k);
        self.direct.remove(&k);
        for peer in self.peers.iter_mut().flatten() {
            peer.remove(&k);
        }
    }

    /// Whether booking `weight` on `k` would take its counter past `u32::MAX`.
    fn overflows(&self, k: u8, weight: u32) -> bool {
        weight > 0 && self.effective(k) + u64::from(weight) > u64::from(u32::MAX)
    }

    fn pins(&self, k: u8) -> usize {
        let pairs = self
            .pairs
            .iter()
            .filter(|p| p.decode == k && p.weight == 0)
            .count();
        self.guards.iter().filter(|&&(g, w)| g == k && w == 0).count() + pairs
    }

    fn publish(&mut self) {
        self.epoch += 1;
    }

    /// Frees the storage of removed workers that nothing reaches any more.
    fn reclaim(&mut self) -> usize {
        let oldest = self
            .handle_epochs
            .iter()
            .copied()
            .chain([self.epoch])
            .min()
            .unwrap_or(self.epoch);
        let quiet: Vec<u8> = self
            .retired
            .iter()
            .filter(|&(&k, &removed_at)| removed_at <= oldest && self.load(k) == 0 && self.pins(k) == 0)
            .map(|(&k, _)| k)
            .collect();
        for k in &quiet {
            self.retired.remove(k);
            self.identity.remove(k);
            self.free += 1;
        }
        quiet.len()
    }

    /// Room for `fresh` new identities, reclaiming first if the free list is
    /// short; fails without changing the set.
    fn make_room(&mut self, fresh: usize) -> Result<(), Error> {
        if self.free < fresh {
            self.reclaim();
        }
        if self.free + (self.max - self.capacity) < fresh {
            return Err(Error::CapacityExceeded { limit: self.max });
        }
        Ok(())
    }

    fn fresh(&self, keys: &[u8]) -> usize {
        keys.iter()
            .filter(|&&k| !self.is_member(k) && !self.retired.contains_key(&k))
            .count()
    }

    /// `k` joins the set: its draining identity if it has one, else new storage.
    fn join(&mut self, k: u8) {
        if self.retired.remove(&k).is_some() {
            return;
        }
        if self.free > 0 {
            self.free -= 1;
        } else {
            self.capacity += 1;
        }
        self.identity.insert(k, self.next_identity);
        self.next_identity += 1;
    }

    fn insert(&mut self, k: u8, info: WorkerInfo) -> Result<(), Error> {
        if self.is_member(k) {
            return Err(Error::DuplicateWorker);
        }
        if !self.retired.contains_key(&k) {
            self.make_room(1)?;
        }
        self.join(k);
        self.members.push((k, info));
        self.publish();
        Ok(())
    }

    fn remove(&mut self, k: u8) -> Result<(), Error> {
        let i = self
            .members
            .iter()
            .position(|&(m, _)| m == k)
            .ok_or(Error::UnknownWorker)?;
        self.members.remove(i);
        self.publish();
        self.forget_reports(k);
        self.forget_fleet(k);
        self.retired.insert(k, self.epoch);
        self.reclaim();
        Ok(())
    }

    fn replace(&mut self, keys: &[u8]) -> Result<(), Error> {
        for (i, k) in keys.iter().enumerate() {
            if keys[..i].contains(k) {
                return Err(Error::DuplicateWorker);
            }
        }
        let fresh = self.fresh(keys);
        self.make_room(fresh)?;
        // Reclaiming may have turned a draining worker named in `keys` into a
        // fresh one: it needs room too.
        let fresh = self.fresh(keys);
        self.make_room(fresh)?;
        let old: HashMap<u8, WorkerInfo> = self.members.drain(..).collect();
        let mut members = Vec::with_capacity(keys.len());
        for &k in keys {
            let info = match old.get(&k) {
                Some(&info) => info,
                None => {
                    self.join(k);
                    WorkerInfo::default()
                }
            };
            members.push((k, info));
        }
        self.members = members;
        self.publish();
        for &k in old.keys() {
            if !keys.contains(&k) {
                self.forget_reports(k);
                self.forget_fleet(k);
                self.retired.insert(k, self.epoch);
            }
        }
        self.reclaim();
        Ok(())
    }

    fn set_info(&mut self, k: u8, info: WorkerInfo) -> Result<(), Error> {
        let m = self
            .members
            .iter_mut()
            .find(|(m, _)| *m == k)
            .ok_or(Error::UnknownWorker)?;
        m.1 = info;
        self.publish();
        Ok(())
    }

    fn build_mask(&self, admit: u16) -> MaskModel {
        MaskModel {
            epoch: self.epoch,
            entries: self
                .members
                .iter()
                // A draining member is no candidate: masks leave it out.
                .filter(|&&(k, _)| admits(admit, k) && !self.draining.contains(&k))
                .map(|&(k, _)| (k, self.identity[&k]))
                .collect(),
        }
    }

    /// The candidates a pick with `mask` chooses from, in order.
    fn candidates(&self, mask: MaskRef) -> Result<Vec<u8>, Error> {
        let cands: Vec<u8> = match mask {
            MaskRef::All => self.members.iter().map(|&(k, _)| k).collect(),
            MaskRef::Foreign => return Err(foreign_mask_error()),
            MaskRef::Slot(s) => match &self.masks[usize::from(s) % MASKS] {
                // An unbuilt mask admits nothing.
                None => Vec::new(),
                Some(m) => m
                    .entries
                    .iter()
                    .filter(|&&(k, id)| {
                        m.epoch == self.epoch || (self.is_member(k) && self.identity.get(&k) == Some(&id))
                    })
                    .map(|&(k, _)| k)
                    .collect(),
            },
        };
        let cands: Vec<u8> = cands.into_iter().filter(|k| !self.draining.contains(k)).collect();
        if cands.is_empty() {
            // With every member draining there are workers, none to pick from.
            Err(if self.members.is_empty() {
                Error::NoWorkers
            } else if self.members.iter().all(|(k, _)| self.draining.contains(k)) {
                Error::AllDraining
            } else {
                Error::NoEligibleWorker
            })
        } else {
            Ok(cands)
        }
    }
}

struct Run<'p> {
    pool: &'p Pool<u8>,
    /// Two other routers over every key, whose summaries `Op::PeerSummary` applies.
    peers: &'p [Pool<u8>; 2],
    peer_guards: [Vec<Reservation<'p, u8>>; 2],
    /// The prefill pool of `Op::Pair*`: workers `0..PREFILL_KEYS`.
    prefill: &'p Pool<u8>,
    pairs: Vec<PairReservation<Reservation<'p, u8>, Reservation<'p, u8>>>,
    seed: u64,
    renewals: u64,
    handles: Vec<Handle<'p, u8>>,
    guards: Vec<Reservation<'p, u8>>,
    masks: Vec<Eligibility>,
    foreign: Eligibility,
    selectors: Selectors,
    registry: Registry,
    /// The session tables: soft, hard.
    #[cfg(feature = "sessions")]
    sessions: [Sessions; 2],
    model: Model,
    step: usize,
}

/// Decodes `data` as libFuzzer's `fuzz_target!` does and runs it.
pub fn run_bytes(data: &[u8]) {
    if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(input);
    }
}

/// Replays `input` on a pool and on the model, checking after every step.
pub fn run(input: Input) {
    fastrand::seed(input.seed);
    let backends = Backend::available();
    let backend = backends[usize::from(input.backend) % backends.len()];
    let initial: Vec<u8> = input.initial.iter().map(|&k| key(k)).collect();

    let fresh_model = |max| Model {
        handle_epochs: vec![0; HANDLES],
        masks: vec![None; MASKS],
        max,
        ..Model::default()
    };
    let mut model = fresh_model(DEFAULT_MAX_WORKERS);
    let e = Pool::<u8>::with_max_workers(0).err();
    assert!(
        matches!(
            e,
            Some(Error::InvalidConfig {
                what: "max_workers",
                ..
            })
        ),
        "{e:?}"
    );
    let pool = match usize::from(input.limit % 32) {
        0 => match Pool::from_workers(initial.iter().copied()) {
            Ok(pool) => {
                model
                    .replace(&initial)
                    .expect("the pool took a set the model refuses");
                pool
            }
            Err(e) => {
                assert_eq!(Err(e), model.replace(&initial), "from_workers");
                model = fresh_model(DEFAULT_MAX_WORKERS);
                Pool::new()
            }
        },
        max => {
            let pool = Pool::with_max_workers(max).expect("a limit in range");
            model = fresh_model(max);
            assert_eq!(
                pool.replace(initial.iter().copied()),
                model.replace(&initial),
                "replace {initial:?}"
            );
            pool
        }
    }
    .with_scan_backend(backend);
    let foreign = Pool::with_max_workers(KEYS.into()).expect("a limit in range");
    foreign.replace(0..KEYS).expect("distinct workers");
    let foreign = foreign.eligibility(|_| true);
    let peers = [0, 1].map(|_| Pool::from_workers(0..KEYS).expect("distinct workers"));
    let prefill = Pool::from_workers(0..PREFILL_KEYS).expect("distinct workers");
    // Nothing ages out but through `Op::ExpireReports`.
    pool.set_report_max_age(Duration::from_secs(3600));
    let mut run = Run {
        pool: &pool,
        peers: &peers,
        peer_guards: [Vec::new(), Vec::new()],
        prefill: &prefill,
        pairs: Vec::new(),
        seed: input.seed,
        renewals: 0,
        handles: Vec::new(),
        guards: Vec::new(),
        masks: (0..MASKS).map(|_| Eligibility::new()).collect(),
        foreign,
        selectors: Selectors::default(),
        registry: Registry::new(),
        #[cfg(feature = "sessions")]
        sessions: [Stickiness::Soft, Stickiness::Hard].map(|st| Sessions::new(SESSION_TTL, SESSION_MAX, st)),
        model,
        step: 0,
    };
    for h in 0..HANDLES {
        let handle = pool.handle_with_rng(Rng::with_seed(input.seed ^ h as u64));
        run.handles.push(handle);
        run.model.handle_epochs[h] = run.model.epoch;
    }
    run.check("start");
    for op in input.ops.iter().take(MAX_OPS) {
        run.step += 1;
        run.apply(op);
        run.check(op);
    }
    run.finish();
}

impl<'p> Run<'p> {
    fn apply(&mut self, op: &Op) {
        let pool = self.pool;
        match *op {
            Op::Insert(k) => {
                let k = key(k);
                let got = pool.insert(k);
                assert_eq!(got, self.model.insert(k, WorkerInfo::default()), "insert {k}");
            }
            Op::InsertWith { key: k, cpu, group } => {
                let (k, info) = (key(k), info(cpu, group));
                let got = pool.insert_with(k, info);
                assert_eq!(got, self.model.insert(k, info), "insert_with {k}");
            }
            Op::Remove(k) => {
                let k = key(k);
                assert_eq!(pool.remove(&k), self.model.remove(k), "remove {k}");
            }
            Op::Replace(ref keys) => {
                let keys: Vec<u8> = keys.iter().take(2 * KEYS as usize).map(|&k| key(k)).collect();
                let got = pool.replace(keys.iter().copied());
                assert_eq!(got, self.model.replace(&keys), "replace {keys:?}");
            }
            Op::SetInfo { key: k, cpu, group } => {
                let (k, info) = (key(k), info(cpu, group));
                assert_eq!(
                    pool.set_info(&k, info),
                    self.model.set_info(k, info),
                    "set_info {k}"
                );
            }
            Op::Reclaim => {
                assert_eq!(pool.reclaim(), self.model.reclaim(), "reclaim");
            }
            Op::BuildMask { slot, admit } => {
                let s = usize::from(slot) % MASKS;
                self.masks[s] = pool.eligibility(|&k| admits(admit, k));
                let m = self.model.build_mask(admit);
                assert_eq!(self.masks[s].len(), m.entries.len(), "eligibility len");
                self.model.masks[s] = Some(m);
            }
            Op::RebuildMask { slot, admit } => {
                let s = usize::from(slot) % MASKS;
                self.masks[s].rebuild(pool, |&k| admits(admit, k));
                let m = self.model.build_mask(admit);
                assert_eq!(self.masks[s].len(), m.entries.len(), "rebuilt eligibility len");
                self.model.masks[s] = Some(m);
            }
            Op::Report { key: k, load } => {
                let (k, load) = (key(k), report_value(load));
                let member = self.model.is_member(k);
                assert_eq!(pool.report_load(&k, load), member, "report_load({k}, {load})");
                if member {
                    // The sum is touched when a load goes or comes (not for 0 in
                    // place of none).
                    let before = self.model.direct.remove(&k);
                    if load > 0 {
                        self.model.direct.insert(k, load);
                    }
                    if before.is_some() || load > 0 {
                        self.model.refold(k);
                    }
                }
            }
            Op::PeerSummary { peer, keys, shift } => {
                let p = usize::from(peer);
                self.peer_guards[p].clear();
                let mut booked = HashMap::new();
                for k in (0..KEYS).filter(|&k| keys & (1 << k) != 0) {
                    let load = 1 + (u32::from(k) + u32::from(shift)) % 4;
                    let guard = self.peers[p].reserve_worker(&k, load).expect("a peer's member");
                    self.peer_guards[p].push(guard);
                    if self.model.is_member(k) {
                        booked.insert(k, load);
                    }
                }
                let summary = self.peers[p].summary();
                assert!(pool.apply_summary(&summary), "a newer summary is applied");
                assert!(!pool.apply_summary(&summary), "the same one again is not");
                let old = self.model.peers[p].replace(booked).unwrap_or_default();
                let new = self.model.peers[p].iter().flat_map(|b| b.keys());
                let touched: Vec<u8> = old.keys().chain(new).copied().collect();
                for k in touched {
                    self.model.refold(k);
                }
            }
            Op::ExpireReports => {
                pool.set_report_max_age(Duration::ZERO);
                let want = self.model.direct.len() + self.model.peers.iter().flatten().count();
                assert_eq!(pool.expire_reports(), want, "expire_reports");
                assert_eq!(pool.reporting_peers(), 0, "peers after expiry");
                let peers = self.model.peers.iter().flatten().flat_map(|p| p.keys());
                let touched: Vec<u8> = self.model.direct.keys().chain(peers).copied().collect();
                self.model.direct.clear();
                self.model.peers = [None, None];
                for k in touched {
                    self.model.refold(k);
                }
                pool.set_report_max_age(Duration::from_secs(3600));
            }
            Op::SetCapacity { key: k, capacity } => {
                let (k, c) = (key(k), 1 + u32::from(capacity % 16));
                let want = match self.model.is_member(k) {
                    true => self.model.set_info(k, self.model.info(k).capacity(c)),
                    false => Err(Error::UnknownWorker),
                };
                assert_eq!(pool.set_capacity(&k, c), want, "set_capacity({k}, {c})");
            }
            Op::SetHealthy { key: k, healthy } => {
                let k = key(k);
                let want = if !self.model.is_member(k) {
                    Err(Error::UnknownWorker)
                } else if healthy {
                    Ok(self.model.unhealthy.remove(&k).is_none())
                } else {
                    // The mark is kept whatever the room; the counter takes
                    // what fits of the penalty, and marking again tops it up.
                    let have = self.model.unhealthy.get(&k).copied();
                    let missing = UNHEALTHY_LOAD - have.unwrap_or(0);
                    let room = u64::from(u32::MAX) - self.model.effective(k);
                    let add = u32::try_from(room.min(u64::from(missing))).expect("fits");
                    self.model.unhealthy.insert(k, have.unwrap_or(0) + add);
                    Ok(have.is_none())
                };
                assert_eq!(pool.set_healthy(&k, healthy), want, "set_healthy({k}, {healthy})");
            }
            Op::CostReserve(_) | Op::ReleasePart { .. } | Op::AddCharge { .. } => self.cost_op(op),
            Op::PairReserve { .. }
            | Op::PairPreviewAdmit { .. }
            | Op::PairHandOff(_)
            | Op::PairRelease(_)
            | Op::PairPrefillDrain { .. } => self.pair_op(op),
            Op::EnableAffinity | Op::AffinityReserve { .. } => self.affinity_op(op),
            Op::SessionReserve { .. }
            | Op::SessionUnbind { .. }
            | Op::SessionSweep { .. }
            | Op::SessionExport { .. }
            | Op::SessionImport { .. } => self.session_op(op),
            Op::Drain(k) | Op::Resume(k) => {
                let (k, drain) = (key(k), matches!(*op, Op::Drain(_)));
                let want = if self.model.is_member(k) {
                    let changed = if drain {
                        self.model.draining.insert(k)
                    } else {
                        self.model.draining.remove(&k)
                    };
                    if changed {
                        self.model.publish();
                    }
                    Ok(())
                } else {
                    Err(Error::UnknownWorker)
                };
                let got = if drain { pool.drain(&k) } else { pool.resume(&k) };
                assert_eq!(got, want, "drain {k}: {drain}");
            }
            Op::Select(pick) => self.pick(pick, Kind::Select),
            Op::Preview(pick) => self.pick(pick, Kind::Preview),
            Op::Reserve { pick, weight } => self.pick(pick, Kind::Reserve(weight.get())),
            Op::ReserveWorker {
                key: k,
                weight,
                handle,
            } => {
                let (k, w) = (key(k), weight.get());
                let got = match handle {
                    None => pool.reserve_worker(&k, w),
                    Some(h) => {
                        let h = usize::from(h) % HANDLES;
                        self.model.handle_epochs[h] = self.model.epoch;
                        self.handles[h].reserve_worker(&k, w)
                    }
                };
                let want = if !self.model.is_member(k) {
                    Err(Error::UnknownWorker)
                } else if self.model.draining.contains(&k) {
                    // Pinned or not, no new booking lands on a draining worker.
                    Err(Error::Draining)
                } else if self.model.overflows(k, w) {
                    Err(Error::LoadOverflow)
                } else {
                    Ok(())
                };
                match got {
                    Ok(r) => {
                        assert_eq!(want, Ok(()), "reserve_worker({k}, {w})");
                        self.push_guard(r, k, w);
                    }
                    Err(e) => assert_eq!(Err(e), want, "reserve_worker({k}, {w})"),
                }
            }
            Op::Release(i) => {
                if !self.guards.is_empty() {
                    let i = usize::from(i) % self.guards.len();
                    self.guards.swap_remove(i).release();
                    self.model.guards.swap_remove(i);
                }
            }
            Op::Retarget { guard, key: k } => {
                if !self.guards.is_empty() {
                    let (i, k) = (usize::from(guard) % self.guards.len(), key(k));
                    let got = self.guards[i].retarget(&k);
                    let (from, w) = self.model.guards[i];
                    let want = if !self.model.is_member(k) {
                        Err(Error::UnknownWorker)
                    } else if k != from && self.model.draining.contains(&k) {
                        Err(Error::Draining)
                    } else if k != from && self.model.overflows(k, w) {
                        Err(Error::LoadOverflow)
                    } else {
                        Ok(())
                    };
                    assert_eq!(got, want, "retarget {from} -> {k} (weight {w})");
                    if got.is_ok() {
                        self.model.guards[i].0 = k;
                    }
                }
            }
            Op::Register(name) => {
                let name = name.text();
                let got = self.registry.register(&name, |p: &Params| {
                    p.expect_only("nth", &[])?;
                    Ok(Nth {
                        index: 0,
                        charge: Charge::Unvalidated,
                    })
                });
                let got = got.map(|_| ());
                let want = self.model.register(&name);
                match (&got, &want) {
                    (Err(e), Err(w)) => {
                        assert!(same_error(e, w), "register({name:?}): {e:?}, expected {w:?}")
                    }
                    _ => assert_eq!(got, want, "register({name:?})"),
                }
                let names: Vec<&str> = self.registry.names().collect();
                assert_eq!(names, self.model.names(), "registry names");
            }
            Op::Resolve { name, ratio } => {
                let name = name.text();
                let params = ratio.map_or_else(Params::new, |r| Params::new().set("cpu-ratio", r));
                let got = self.registry.resolve_with(&name, &params);
                let want = self.model.resolve(&name, ratio);
                assert_eq!(
                    self.registry.contains(&name),
                    self.model.resolve(&name, None).is_ok(),
                    "contains({name:?})"
                );
                match (got, want) {
                    (Ok(s), Ok((want, _))) => assert_eq!(s.name(), want, "resolve({name:?}, {params})"),
                    (Err(e), Err(w)) => assert!(
                        same_error(&e, &w),
                        "resolve({name:?}, {params}): {e:?}, expected {w:?}"
                    ),
                    (got, want) => panic!(
                        "resolve({name:?}, {params}): {:?}, expected {want:?}",
                        got.map(|s| s.name().to_owned())
                    ),
                }
            }
            Op::RenewHandle(h) => {
                let h = usize::from(h) % HANDLES;
                self.renewals += 1;
                let rng = Rng::with_seed(self.seed.wrapping_add(self.renewals));
                self.handles[h] = pool.handle_with_rng(rng);
                self.model.handle_epochs[h] = self.model.epoch;
            }
        }
    }

    /// The cost mode and phased loads, against the model: a `T = 0` pick lands
    /// on a least `(unhealthy, 1000·load − α·credit)` among the candidates
    /// (members not draining, not over the busy threshold), a `T > 0` pick in
    /// the best tier; part releases and added charges move the model's load,
    /// which the run's checks hold the pool's counters to.
    fn cost_op(&mut self, op: &Op) {
        let pool = self.pool;
        match *op {
            Op::CostReserve(c) => {
                let held = |k: u8| {
                    if admits(c.credit, k) {
                        1 + u32::from(k % 4)
                    } else if c.dense {
                        u32::from(k % 3)
                    } else {
                        0
                    }
                };
                let hits = match c.build % 3 {
                    0 => CacheHits::build(pool, 8, |&k| held(k)),
                    build => {
                        let members: Vec<u8> = self.model.members.iter().map(|&(k, _)| k).collect();
                        let mut hits = CacheHits::new();
                        // Credit on every member first: the real build must retire it.
                        hits.rebuild_sparse(pool, 8, members.iter().map(|k| (k, 9)));
                        let credited = members.iter().filter(|&&k| held(k) > 0);
                        if build == 1 {
                            hits.rebuild_sparse(pool, 8, credited.map(|k| (k, held(*k))));
                        } else {
                            let tokens: Vec<_> = credited
                                .filter_map(|&k| Some((WorkerToken::of(pool, &k)?, held(k))))
                                .collect();
                            hits.rebuild_tokens(pool, 8, tokens);
                        }
                        hits
                    }
                };
                let milli = [0, 500, 1000, 2500][usize::from(c.weight % 4)];
                let mut sel = Cost::new().with_weight(CreditWeight::from_milli(milli).unwrap());
                if c.hot {
                    sel = sel.with_temperature(Temperature::new(0.5).unwrap());
                }
                let busy = c.busy.map(|b| u32::from(b % 4));
                if let Some(b) = busy {
                    sel = sel.with_busy_threshold(b);
                }
                let req = Request::new().cache_hits(&hits);
                let got = match c.handle {
                    None => pool.reserve_with(&sel, &req),
                    Some(h) => {
                        let h = usize::from(h) % HANDLES;
                        self.model.handle_epochs[h] = self.model.epoch;
                        self.handles[h].reserve_with(&sel, &req)
                    }
                };
                let m = &self.model;
                let cands: Vec<u8> = m
                    .members
                    .iter()
                    .map(|&(k, _)| k)
                    .filter(|k| !m.draining.contains(k))
                    .filter(|&k| busy.is_none_or(|b| m.published(k) <= b))
                    .collect();
                let cost_of = |k: u8| {
                    let sick = m.unhealthy.contains_key(&k);
                    (
                        sick,
                        1000 * m.effective(k) as i128 - i128::from(milli) * i128::from(held(k)),
                    )
                };
                let best = cands.iter().map(|&k| cost_of(k)).min();
                let overflow = cands.iter().any(|&k| m.overflows(k, 1));
                match got {
                    Ok(r) => {
                        let k = *r.worker();
                        assert!(
                            cands.contains(&k),
                            "cost picked {k}, not a candidate of {cands:?}"
                        );
                        let (tier, least) = best.expect("a candidate was picked");
                        if c.hot {
                            assert_eq!(cost_of(k).0, tier, "cost T > 0 left the best tier");
                        } else {
                            assert_eq!(cost_of(k), (tier, least), "cost T = 0 missed the least cost");
                        }
                        self.push_guard(r, k, 1);
                    }
                    Err(Error::LoadOverflow) => assert!(overflow, "cost: overflow with room"),
                    Err(e) => assert!(cands.is_empty(), "cost: {e:?} with candidates {cands:?}"),
                }
            }
            Op::ReleasePart { guard, n } => {
                if self.guards.is_empty() {
                    return;
                }
                let i = usize::from(guard) % self.guards.len();
                let held = self.model.guards[i].1;
                let n = u32::from(n % 8).min(held.saturating_sub(1));
                let given = self.guards[i].release_part(n);
                assert_eq!(given, n, "release_part({n}) of {held}");
                self.model.guards[i].1 -= given;
                assert_eq!(
                    self.guards[i].weight(),
                    self.model.guards[i].1,
                    "weight after release_part"
                );
            }
            Op::AddCharge { guard, n } => {
                if self.guards.is_empty() {
                    return;
                }
                let i = usize::from(guard) % self.guards.len();
                let (k, held) = self.model.guards[i];
                let n = u32::from(n % 8);
                let got = self.guards[i].add_charge(n);
                match got {
                    Ok(()) => {
                        assert!(
                            !self.model.overflows(k, n),
                            "add_charge({n}) past u32::MAX on {k}"
                        );
                        self.model.guards[i].1 += n;
                    }
                    Err(Error::LoadOverflow) => {
                        assert!(self.model.overflows(k, n), "add_charge({n}): overflow with room")
                    }
                    Err(Error::UnknownWorker) => {
                        assert!(
                            held == 0 && !self.model.is_member(k),
                            "add_charge on a member: unknown"
                        )
                    }
                    Err(e) => panic!("add_charge({n}) on {k}: {e:?}"),
                }
                assert_eq!(
                    self.guards[i].weight(),
                    self.model.guards[i].1,
                    "weight after add_charge"
                );
            }
            _ => unreachable!("not a cost op"),
        }
    }

    /// Affinity picks: a candidate, healthy while one is; with the ring
    /// and a bound, one within `⌈f · (total + 1) / (100 n)⌉` over the healthy
    /// candidates (fewer than 64: the pick sums the total itself, exactly)
    /// or, when none is, the least loaded; unbounded and unmasked, a key
    /// leaves its worker only for one that joined (or healed) since.
    fn affinity_op(&mut self, op: &Op) {
        let pool = self.pool;
        match *op {
            Op::EnableAffinity => {
                pool.enable_affinity();
                assert!(pool.affinity_enabled());
                self.model.affinity = true;
            }
            Op::AffinityReserve {
                key: k,
                factor,
                mask,
                handle,
            } => {
                let factor = [0, 100, 125, 200][usize::from(factor % 4)];
                let sel = Affinity::with_balance_factor(factor).expect("a valid factor");
                let key = u64::from(k % AFFINITY_KEYS);
                let request = match mask {
                    MaskRef::All => Request::new(),
                    MaskRef::Slot(s) => Request::new().eligible(&self.masks[usize::from(s) % MASKS]),
                    MaskRef::Foreign => Request::new().eligible(&self.foreign),
                }
                .key(key);
                let got = match handle {
                    None => pool.reserve_with(&sel, &request),
                    Some(h) => {
                        let h = usize::from(h) % HANDLES;
                        self.model.handle_epochs[h] = self.model.epoch;
                        self.handles[h].reserve_with(&sel, &request)
                    }
                };
                let what = format!("affinity {factor}% key {key} {mask:?}");
                let cands = match self.model.candidates(mask) {
                    Err(want) => {
                        let e = got
                            .err()
                            .unwrap_or_else(|| panic!("{what}: picked, expected {want:?}"));
                        assert!(same_error(&e, &want), "{what}: got {e:?}, expected {want:?}");
                        return;
                    }
                    Ok(cands) => cands,
                };
                let m = &self.model;
                let r = match got {
                    Ok(r) => r,
                    Err(Error::LoadOverflow) => {
                        assert!(
                            cands.iter().any(|&k| m.overflows(k, 1)),
                            "{what}: overflow with room"
                        );
                        return;
                    }
                    Err(e) => panic!("{what}: {e:?} with candidates {cands:?}"),
                };
                let k = *r.worker();
                assert!(cands.contains(&k), "{what}: picked {k}, not one of {cands:?}");
                let healthy: Vec<u8> = cands
                    .iter()
                    .copied()
                    .filter(|c| !m.unhealthy.contains_key(c))
                    .collect();
                assert!(
                    healthy.is_empty() || healthy.contains(&k),
                    "{what}: picked unhealthy {k} beside {healthy:?}"
                );
                let equal = m.members.iter().all(|&(_, i)| i.capacity_weight() == 1);
                if m.affinity && factor > 0 && equal && !healthy.is_empty() {
                    let total: u64 = healthy.iter().map(|&c| m.effective(c)).sum();
                    let cap = (u64::from(factor) * (total + 1)).div_ceil(100 * healthy.len() as u64);
                    if m.effective(k) > cap {
                        let least = healthy
                            .iter()
                            .map(|&c| m.effective(c))
                            .min()
                            .expect("a healthy one");
                        assert!(
                            healthy.iter().all(|&c| m.effective(c) > cap) && m.effective(k) == least,
                            "{what}: {k} at {} over the bound {cap} (total {total})",
                            m.effective(k)
                        );
                    }
                }
                if m.affinity && factor == 0 && matches!(mask, MaskRef::All) {
                    if let Some((home, then)) = self.model.homes.get(&key)
                        && healthy.contains(home)
                    {
                        assert!(
                            k == *home || !then.contains(&k),
                            "{what}: left {home} (still here) for {k}, which was here too ({then:?})"
                        );
                    }
                    self.model.homes.insert(key, (k, healthy));
                }
                self.push_guard(r, k, 1);
            }
            _ => unreachable!("not an affinity op"),
        }
    }

    #[cfg(not(feature = "sessions"))]
    fn session_op(&mut self, _: &Op) {}

    /// Session bindings against the model's table: a bound session's
    /// request books its worker while that worker stays under the same
    /// identity as a healthy candidate; else hard fails and drops the
    /// binding, soft drops it and binds the least-loaded pick (as an unbound
    /// session does), when the table has room after sweeping out bindings
    /// whose worker left.
    #[cfg(feature = "sessions")]
    fn session_op(&mut self, op: &Op) {
        let pool = self.pool;
        // A binding whose worker is still in the set as the same identity.
        let held = |m: &Model, &(k, id): &(u8, u64)| m.is_member(k) && m.identity.get(&k) == Some(&id);
        match *op {
            Op::SessionReserve {
                session,
                hard,
                handle,
            } => {
                let (t, s, h) = (
                    usize::from(hard),
                    u64::from(session % SESSIONS),
                    usize::from(handle) % HANDLES,
                );
                let got = self.sessions[t].reserve(
                    &mut self.handles[h],
                    &self.selectors.least_loaded,
                    &Request::new().key(s),
                );
                self.model.handle_epochs[h] = self.model.epoch;
                let what = format!("session {s} ({})", if hard { "hard" } else { "soft" });
                let m = &mut self.model;
                if let Some(&(k, id)) = m.bound[t].get(&s) {
                    let live = held(m, &(k, id)) && !m.draining.contains(&k) && !m.unhealthy.contains_key(&k);
                    if live {
                        match got {
                            Ok(r) => self.push_guard(r, k, 1),
                            Err(Error::LoadOverflow) => {
                                assert!(m.overflows(k, 1), "{what}: overflow with room")
                            }
                            Err(e) => panic!("{what}: bound to {k}, got {e:?}"),
                        }
                        return;
                    }
                    m.bound[t].remove(&s);
                    if hard {
                        assert_eq!(got.err(), Some(Error::SessionWorkerGone), "{what}: {k} is gone");
                        return;
                    }
                }
                let cands = match m.candidates(MaskRef::All) {
                    Err(want) => {
                        let e = got
                            .err()
                            .unwrap_or_else(|| panic!("{what}: picked, expected {want:?}"));
                        assert!(same_error(&e, &want), "{what}: got {e:?}, expected {want:?}");
                        return;
                    }
                    Ok(cands) => cands,
                };
                let r = match got {
                    Ok(r) => r,
                    Err(Error::LoadOverflow) => {
                        assert!(
                            cands.iter().any(|&k| m.overflows(k, 1)),
                            "{what}: overflow with room"
                        );
                        return;
                    }
                    Err(e) => panic!("{what}: {e:?} with candidates {cands:?}"),
                };
                let k = *r.worker();
                let healthy: Vec<u8> = cands
                    .iter()
                    .copied()
                    .filter(|c| !m.unhealthy.contains_key(c))
                    .collect();
                assert!(cands.contains(&k), "{what}: picked {k}, not one of {cands:?}");
                assert!(
                    healthy.is_empty() || healthy.contains(&k),
                    "{what}: unhealthy {k}"
                );
                if m.bound[t].len() >= SESSION_MAX {
                    let keep: HashMap<u64, (u8, u64)> = m.bound[t]
                        .iter()
                        .filter(|(_, b)| held(m, b))
                        .map(|(&s, &b)| (s, b))
                        .collect();
                    m.bound[t] = keep;
                }
                if m.bound[t].len() < SESSION_MAX {
                    let id = m.identity[&k];
                    m.bound[t].insert(s, (k, id));
                }
                self.push_guard(r, k, 1);
            }
            Op::SessionUnbind { session, hard } => {
                let (t, s) = (usize::from(hard), u64::from(session % SESSIONS));
                let had = self.model.bound[t].remove(&s).is_some();
                assert_eq!(self.sessions[t].unbind(s), had, "unbind {s}");
            }
            Op::SessionSweep { hard } => {
                let t = usize::from(hard);
                let m = &mut self.model;
                let before = m.bound[t].len();
                let keep: HashMap<u64, (u8, u64)> = m.bound[t]
                    .iter()
                    .filter(|(_, b)| held(m, b))
                    .map(|(&s, &b)| (s, b))
                    .collect();
                m.bound[t] = keep;
                assert_eq!(self.sessions[t].sweep(pool), before - m.bound[t].len(), "sweep");
                assert_eq!(self.sessions[t].len(), m.bound[t].len(), "bindings after a sweep");
            }
            Op::SessionExport { hard } => {
                let t = usize::from(hard);
                let m = &self.model;
                let mut got: Vec<(u64, u8)> = self.sessions[t]
                    .export(pool)
                    .iter()
                    .map(|b| (b.session(), *b.worker()))
                    .collect();
                got.sort_unstable();
                let mut want: Vec<(u64, u8)> = m.bound[t]
                    .iter()
                    .filter(|(_, b)| held(m, b))
                    .map(|(&s, &(k, _))| (s, k))
                    .collect();
                want.sort_unstable();
                assert_eq!(got, want, "export");
            }
            Op::SessionImport {
                session,
                key: k,
                hard,
                stale,
            } => {
                let (t, s, k) = (usize::from(hard), u64::from(session % SESSIONS), key(k));
                let m = &mut self.model;
                if m.bound[t].get(&s).is_some_and(|b| held(m, b)) {
                    return;
                }
                let idle = if stale {
                    2 * SESSION_TTL
                } else {
                    Duration::from_secs(60)
                };
                let got = self.sessions[t].import(pool, [SessionBinding::new(s, k, idle)]);
                let want = !stale
                    && m.is_member(k)
                    && (m.bound[t].contains_key(&s) || m.bound[t].len() < SESSION_MAX);
                assert_eq!(got, usize::from(want), "import {s} -> {k} (stale: {stale})");
                if want {
                    let id = m.identity[&k];
                    m.bound[t].insert(s, (k, id));
                }
            }
            _ => unreachable!("not a session op"),
        }
    }

    fn push_guard(&mut self, r: Reservation<'p, u8>, k: u8, weight: u32) {
        assert_eq!(*r.worker(), k, "reservation's worker");
        assert_eq!(r.weight(), weight, "reservation's weight");
        self.guards.push(r);
        self.model.guards.push((k, weight));
    }

    fn pick(&mut self, pick: Pick, kind: Kind) {
        let pool = self.pool;
        let loads_before = pool.loads();
        let cursor_before = self.selectors.round_robin.cursor();
        let hits = pick
            .hits
            .map(|h| CacheHits::build(pool, h.needed(), |&k| h.held(k)));
        let mut request = match pick.mask {
            MaskRef::All => Request::new(),
            MaskRef::Slot(s) => Request::new().eligible(&self.masks[usize::from(s) % MASKS]),
            MaskRef::Foreign => Request::new().eligible(&self.foreign),
        };
        if let Some(hits) = &hits {
            request = request.cache_hits(hits);
        }
        let (outcome, rule) = match pick.mode {
            Mode::Resolved(name) => {
                let name = name.text();
                let got = self.registry.resolve(&name);
                match (got, self.model.resolve(&name, None)) {
                    (Ok(selector), Ok((want, rule))) => {
                        assert_eq!(selector.name(), want, "resolve({name:?})");
                        let outcome = apply(pool, &mut self.handles, pick.via, &*selector, &request, kind);
                        (outcome, rule)
                    }
                    (Err(e), Err(want)) => {
                        assert!(
                            same_error(&e, &want),
                            "resolve({name:?}): {e:?}, expected {want:?}"
                        );
                        return;
                    }
                    (got, want) => panic!(
                        "resolve({name:?}): {:?}, expected {want:?}",
                        got.map(|s| s.name().to_owned())
                    ),
                }
            }
            mode => {
                let outcome = dispatch(pool, &mut self.handles, &self.selectors, pick, &request, kind);
                (outcome, Rule::of(mode))
            }
        };
        if let Via::Handle(h) | Via::HandleDyn(h) = pick.via {
            self.model.handle_epochs[usize::from(h) % HANDLES] = self.model.epoch;
        }
        let (got, guard) = match outcome {
            Outcome::Picked(r) => (r, None),
            Outcome::Reserved(Ok(r)) => (Ok(*r.worker()), Some(r)),
            Outcome::Reserved(Err(e)) => (Err(e), None),
        };
        let what = Described(kind, pick);

        let cands = match self.model.candidates(pick.mask) {
            Err(want) => {
                match got {
                    Err(e) => assert!(same_error(&e, &want), "{what}: got {e:?}, expected {want:?}"),
                    Ok(w) => panic!("{what}: picked {w}, expected {want:?}"),
                }
                return;
            }
            Ok(cands) => cands,
        };
        if let Rule::Refuse = rule {
            assert_eq!(got, Err(Error::NoAcceptableWorker), "{what}");
            return;
        }
        if self.model.bent() {
            self.bent_pick(what, rule, &cands, got, guard, &loads_before, kind);
            return;
        }
        let n = cands.len();
        // Loads as the pool counts them: bookings plus the reported load folded in.
        let loads: HashMap<u8, u64> = cands.iter().map(|&k| (k, self.model.effective(k))).collect();
        let load = |k: u8| loads[&k];
        let weight = match kind {
            Kind::Reserve(w) => u64::from(w),
            _ => 0,
        };
        // The candidates the rule allows, and whether the booking is charged.
        let (allowed, charged): (Vec<u8>, u64) = match rule {
            Rule::DeviceAware { ratio } => {
                let needed = pick.hits.map_or(0, Hits::needed);
                let full: Vec<u8> = match pick.hits {
                    Some(h) if needed > 0 => cands.iter().copied().filter(|&k| h.held(k) >= needed).collect(),
                    _ => Vec::new(),
                };
                if full.is_empty() {
                    let (cpu, acc): (Vec<u8>, Vec<u8>) = cands
                        .iter()
                        .partition(|&&k| self.model.info(k).device_kind() == DeviceKind::Cpu);
                    let total = |g: &[u8]| g.iter().map(|&k| load(k)).sum::<u64>();
                    let group = if acc.is_empty() {
                        cpu
                    } else if cpu.is_empty() {
                        acc
                    } else {
                        let allowed = total(&acc).saturating_mul(cpu.len() as u64)
                            / (u64::from(ratio) * acc.len() as u64);
                        if total(&cpu) < allowed { cpu } else { acc }
                    };
                    (group, weight)
                } else {
                    (full, 0)
                }
            }
            Rule::Nth {
                charge: Charge::Uncharged,
                ..
            } => (cands.clone(), 0),
            _ => (cands.clone(), weight),
        };
        let min = allowed
            .iter()
            .map(|&k| load(k))
            .min()
            .expect("allowed candidates");
        let stale = charged > 0
            && matches!(
                rule,
                Rule::Nth {
                    charge: Charge::Stale,
                    ..
                }
            );
        // A stale validation overflows one unit early (it adds to load + 1).
        let limit = u64::from(u32::MAX) - u64::from(stale);
        let too_heavy = |k: u8| charged > 0 && load(k) + charged > limit;
        // The worker the rule determines, where it does.
        let determined = match rule {
            Rule::RoundRobin { shared: true } => Some(cands[self.model.cursor % n]),
            Rule::RoundRobin { shared: false } => Some(cands[0]),
            Rule::Nth { index, .. } => Some(cands[usize::from(index) % n]),
            _ => None,
        };
        if matches!(rule, Rule::RoundRobin { shared: true }) && kind != Kind::Preview {
            // The ticket is taken whether or not the booking then lands.
            self.model.cursor += 1;
        }
        // Whether the booking may, or must, fail with `LoadOverflow`.
        let (may_overflow, must_overflow) = match (determined, rule) {
            (Some(d), _) => (too_heavy(d), too_heavy(d)),
            (None, Rule::LeastLoaded | Rule::DeviceAware { .. }) => {
                let heavy = charged > 0 && min + charged > limit;
                (heavy, heavy)
            }
            (None, Rule::PowerOfTwo) => {
                // It books the lighter of two distinct draws.
                let mut sorted: Vec<u64> = cands.iter().map(|&k| load(k)).collect();
                sorted.sort_unstable_by(|a, b| b.cmp(a));
                let second = sorted.get(1).copied().unwrap_or(sorted[0]);
                (
                    charged > 0 && second + charged > limit,
                    cands.iter().all(|&k| too_heavy(k)),
                )
            }
            _ => (
                cands.iter().any(|&k| too_heavy(k)),
                cands.iter().all(|&k| too_heavy(k)),
            ),
        };
        let w = match got {
            Err(Error::LoadOverflow) if may_overflow => {
                assert_eq!(
                    pool.loads(),
                    loads_before,
                    "{what}: a refused booking changed loads"
                );
                assert_eq!(
                    self.selectors.round_robin.cursor(),
                    self.model.cursor,
                    "{what}: cursor"
                );
                return;
            }
            Err(e) => panic!("{what}: {e:?} with candidates {cands:?} loads {loads:?}"),
            Ok(w) => w,
        };
        assert!(
            !must_overflow,
            "{what}: booked {charged} on {w}, past u32::MAX; loads {loads:?}"
        );
        assert!(cands.contains(&w), "{what}: picked {w}, candidates {cands:?}");
        assert!(
            allowed.contains(&w),
            "{what}: picked {w}, the rule allows {allowed:?} of {cands:?}"
        );
        assert!(
            !too_heavy(w),
            "{what}: booked {charged} on {w} at load {}",
            load(w)
        );
        if let Some(d) = determined {
            assert_eq!(w, d, "{what}: candidates {cands:?}, cursor {}", self.model.cursor);
        }
        match rule {
            Rule::LeastLoaded | Rule::DeviceAware { .. } => {
                assert_eq!(load(w), min, "{what}: picked {w} of {allowed:?}, loads {loads:?}")
            }
            Rule::PowerOfTwo if n > 1 => assert!(
                cands.iter().any(|&k| k != w && load(k) >= load(w)),
                "{what}: picked {w}, the only most loaded of {loads:?}"
            ),
            _ => {}
        }
        assert_eq!(
            self.selectors.round_robin.cursor(),
            self.model.cursor,
            "{what}: cursor"
        );
        match kind {
            Kind::Select | Kind::Preview => {
                assert_eq!(pool.loads(), loads_before, "{what} changed loads");
                if kind == Kind::Preview {
                    assert_eq!(
                        self.selectors.round_robin.cursor(),
                        cursor_before,
                        "{what} moved the cursor"
                    );
                }
            }
            Kind::Reserve(_) => {
                if stale {
                    self.model.fallbacks += 1;
                }
                let guard = guard.expect("reserve returned a guard");
                self.push_guard(guard, w, charged as u32);
            }
        }
    }

    /// Checks a pick made while a fleet control bends the rules (see
    /// `Model::bent`): it chose a candidate (so never a draining worker), and
    /// a built-in mode never an unhealthy one while some candidate is healthy;
    /// a refused booking changed nothing; a booking is counted with its weight.
    #[allow(clippy::too_many_arguments)]
    fn bent_pick(
        &mut self,
        what: Described,
        rule: Rule,
        cands: &[u8],
        got: Result<u8, Error>,
        guard: Option<Reservation<'p, u8>>,
        loads_before: &[(u8, u32)],
        kind: Kind,
    ) {
        let pool = self.pool;
        // The cursor and the fallbacks follow the pool here (the exact rules
        // take them up again once nothing bends the picks).
        self.model.cursor = self.selectors.round_robin.cursor();
        self.model.fallbacks = pool.stats().fallbacks;
        let w = match got {
            Err(Error::LoadOverflow) => {
                assert_eq!(
                    pool.loads(),
                    loads_before,
                    "{what}: a refused booking changed loads"
                );
                return;
            }
            Err(e) => panic!("{what}: {e:?} with candidates {cands:?}"),
            Ok(w) => w,
        };
        assert!(
            cands.contains(&w),
            "{what}: picked {w}, candidates {cands:?} (draining {:?})",
            self.model.draining
        );
        let healthy: Vec<u8> = cands
            .iter()
            .copied()
            .filter(|k| !self.model.unhealthy.contains_key(k))
            .collect();
        let builtin = !matches!(rule, Rule::Nth { .. } | Rule::DeviceAware { .. });
        if builtin && !healthy.is_empty() {
            assert!(
                healthy.contains(&w),
                "{what}: picked unhealthy {w}, healthy candidates {healthy:?}"
            );
        }
        match kind {
            Kind::Select | Kind::Preview => {
                assert_eq!(pool.loads(), loads_before, "{what} changed loads")
            }
            Kind::Reserve(weight) => {
                let guard = guard.expect("reserve returned a guard");
                let charged = guard.weight();
                assert!(charged == weight || charged == 0, "{what}: charged {charged}");
                self.push_guard(guard, w, charged);
            }
        }
    }

    /// Compares everything observable with the model.
    fn check(&self, after: impl std::fmt::Debug) {
        let pool = self.pool;
        let m = &self.model;
        let ctx = || format!("step {} after {after:?}", self.step);
        // The candidates in set order, then the draining members.
        let (serving, draining): (Vec<u8>, Vec<u8>) = m
            .members
            .iter()
            .map(|&(k, _)| k)
            .partition(|k| !m.draining.contains(k));
        let expected: Vec<(u8, u32)> = serving
            .iter()
            .chain(&draining)
            .map(|&k| (k, u32::try_from(m.load(k)).expect("model load fits u32")))
            .collect();
        assert_eq!(pool.loads(), expected, "loads, {}", ctx());
        assert_eq!(pool.len(), m.members.len(), "len, {}", ctx());
        for k in 0..KEYS {
            let member = m.members.iter().find(|&&(x, _)| x == k);
            assert_eq!(pool.contains(&k), member.is_some(), "contains {k}, {}", ctx());
            assert_eq!(pool.info(&k), member.map(|&(_, i)| i), "info {k}, {}", ctx());
            let load = m.load(k);
            let in_flight = if member.is_some() || load > 0 {
                Some(load as u32)
            } else {
                None
            };
            assert_eq!(pool.in_flight(&k), in_flight, "in_flight {k}, {}", ctx());
            let reported = member.map(|_| m.published(k));
            assert_eq!(pool.reported_load(&k), reported, "reported_load {k}, {}", ctx());
            let draining = member.map(|_| m.draining.contains(&k));
            assert_eq!(pool.is_draining(&k), draining, "is_draining {k}, {}", ctx());
            let drained = draining.filter(|&d| d).map(|_| load == 0 && m.pins(k) == 0);
            assert_eq!(pool.drained(&k), drained, "drained {k}, {}", ctx());
            let healthy = member.map(|_| !m.unhealthy.contains_key(&k));
            assert_eq!(pool.is_healthy(&k), healthy, "is_healthy {k}, {}", ctx());
            if member.is_none() && (load > 0 || m.pins(k) > 0) {
                assert!(m.retired.contains_key(&k), "model: {k} has guards but no storage");
            }
        }
        for (g, &(k, w)) in self.guards.iter().zip(&m.guards) {
            assert_eq!((*g.worker(), g.weight()), (k, w), "guard, {}", ctx());
        }
        self.check_pairs(&ctx());
        let stats = pool.stats();
        let want = (m.members.len(), m.retired.len(), m.free, m.capacity, m.fallbacks);
        let PoolStats {
            workers,
            draining,
            free_slots,
            capacity,
            fallbacks,
            ..
        } = stats;
        assert_eq!(
            (workers, draining, free_slots, capacity, fallbacks),
            want,
            "stats (workers, draining, free, capacity, fallbacks), {}",
            ctx()
        );
        assert_eq!(self.selectors.round_robin.cursor(), m.cursor, "cursor, {}", ctx());
    }

    /// Drops every guard and handle: every count is 0, and once reclaimed no
    /// removed worker remains.
    fn finish(mut self) {
        self.guards.clear();
        self.model.guards.clear();
        self.pairs.clear();
        self.model.pairs.clear();
        self.check("dropping every guard");
        for (k, load) in self.pool.loads() {
            assert_eq!(load, 0, "{k} still loaded with no guard alive");
        }
        self.handles.clear();
        self.model.handle_epochs.clear();
        assert_eq!(self.pool.reclaim(), self.model.reclaim(), "final reclaim");
        self.check("final reclaim");
        assert_eq!(self.pool.stats().draining, 0, "removed workers still draining");
        for k in 0..KEYS {
            if !self.model.is_member(k) {
                assert_eq!(self.pool.in_flight(&k), None, "removed {k} still in flight");
            }
        }
    }
}

/// A pick, as failure messages name it.
struct Described(Kind, Pick);

impl std::fmt::Display for Described {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {:?}", self.0, self.1)
    }
}

fn info(cpu: bool, group: u8) -> WorkerInfo {
    let device = if cpu {
        DeviceKind::Cpu
    } else {
        DeviceKind::Accelerator
    };
    WorkerInfo::new().device(device).group(u32::from(group))
}

/// Prefill workers of the pair operations: `0..PREFILL_KEYS`.
pub const PREFILL_KEYS: u8 = 3;

/// A live pair as the model sees it: the decode booking (its prefill share
/// included until the hand-off) and the prefill booking, if any.
#[derive(Clone, Debug)]
struct PairModel {
    decode: u8,
    weight: u32,
    share: u32,
    prefill: Option<(u8, u32)>,
}

/// The pair operations, apart from the rest so that other blocks merge
/// cleanly. Which decode worker a pair takes is not predicted (the
/// least-loaded rule is checked by `Op::Reserve`); what is checked is the
/// accounting: both bookings or neither, each side's load to the unit, the
/// plan the decider or the caller gave, and preview-then-admit booking what
/// was previewed. A pair pick may count a health fallback; the model takes
/// the pool's count after one.
impl<'p> Run<'p> {
    fn pair_op(&mut self, op: &Op) {
        match *op {
            Op::PairReserve {
                prefill,
                decode,
                threshold,
                local,
            } => {
                let mut req = PairRequest::new(
                    Request::new().weight(prefill.into()),
                    Request::new().weight(decode.into()),
                );
                if let Some(local) = local {
                    req = req.plan(if local { Plan::Local } else { Plan::Disaggregate });
                }
                let decider = Decider::new(threshold.into());
                let want = req.get_plan().unwrap_or_else(|| decider.decide(prefill.into()));
                let (prefill_pool, pool) = (self.prefill, self.pool);
                let mut pairs = Pairs::new(prefill_pool.handle(), pool.handle(), decider);
                let ll = LeastLoaded::new();
                let got = pairs.reserve(&ll, &ll, &req);
                drop(pairs);
                self.book_pair(got, want, prefill.into(), decode.into(), "reserve");
            }
            Op::PairPreviewAdmit {
                prefill,
                decode,
                threshold,
            } => {
                let req = PairRequest::new(
                    Request::new().weight(prefill.into()),
                    Request::new().weight(decode.into()),
                );
                let decider = Decider::new(threshold.into());
                let (prefill_pool, pool) = (self.prefill, self.pool);
                let mut pairs = Pairs::new(prefill_pool.handle(), pool.handle(), decider);
                let ll = LeastLoaded::new();
                let before = (self.pool.loads(), self.prefill.loads());
                let Ok(seen) = pairs.preview(&ll, &req) else {
                    self.model.fallbacks = self.pool.stats().fallbacks;
                    return;
                };
                assert_eq!(
                    (self.pool.loads(), self.prefill.loads()),
                    before,
                    "a pair preview booked"
                );
                assert_eq!(seen.plan(), decider.decide(prefill.into()), "preview plan");
                let fits = !self
                    .model
                    .overflows(*seen.decode(), u32::from(decode) + u32::from(prefill));
                let got = pairs.admit(&seen, &ll, &ll, &req);
                drop(pairs);
                if let (Ok(pair), true) = (&got, fits) {
                    assert_eq!(
                        (pair.decode(), pair.plan()),
                        (seen.decode(), seen.plan()),
                        "admit != preview"
                    );
                }
                self.book_pair(got, seen.plan(), prefill.into(), decode.into(), "admit");
            }
            Op::PairHandOff(i) => {
                if !self.pairs.is_empty() {
                    let i = usize::from(i) % self.pairs.len();
                    self.pairs[i].hand_off();
                    let m = &mut self.model.pairs[i];
                    m.weight -= core::mem::take(&mut m.share);
                    m.prefill = None;
                }
            }
            Op::PairRelease(i) => {
                if !self.pairs.is_empty() {
                    let i = usize::from(i) % self.pairs.len();
                    drop(self.pairs.swap_remove(i));
                    self.model.pairs.swap_remove(i);
                }
            }
            Op::PairPrefillDrain { key, drain } => {
                let k = key % PREFILL_KEYS;
                let got = if drain {
                    self.prefill.drain(&k)
                } else {
                    self.prefill.resume(&k)
                };
                assert_eq!(got, Ok(()), "prefill drain {k}");
            }
            _ => unreachable!("not a pair operation"),
        }
    }

    /// Records a pair pick's result: on success both sides as the plan says,
    /// on failure nothing booked on either pool.
    fn book_pair(
        &mut self,
        got: Result<PairReservation<Reservation<'p, u8>, Reservation<'p, u8>>, Error>,
        plan: Plan,
        prefill: u32,
        decode: u32,
        what: &str,
    ) {
        self.model.fallbacks = self.pool.stats().fallbacks;
        let pair = match got {
            Ok(pair) => pair,
            Err(_) => return, // `check` finds any load left behind
        };
        assert_eq!(pair.plan(), plan, "pair {what}: plan");
        let k = *pair.decode();
        assert!(
            self.model.is_member(k) && !self.model.draining.contains(&k),
            "pair {what} on {k}"
        );
        let m = match plan {
            Plan::Local => PairModel {
                decode: k,
                weight: decode + prefill,
                share: prefill,
                prefill: None,
            },
            Plan::Disaggregate => PairModel {
                decode: k,
                weight: decode,
                share: 0,
                prefill: Some((*pair.prefill().expect("a disaggregated pair's prefill"), prefill)),
            },
        };
        self.pairs.push(pair);
        self.model.pairs.push(m);
    }

    fn check_pairs(&self, ctx: &str) {
        for (p, m) in self.pairs.iter().zip(&self.model.pairs) {
            assert_eq!(*p.decode(), m.decode, "pair decode, {ctx}");
            assert_eq!(
                p.prefill().copied(),
                m.prefill.map(|(k, _)| k),
                "pair prefill, {ctx}"
            );
        }
        for k in 0..PREFILL_KEYS {
            let want: u32 = self
                .model
                .pairs
                .iter()
                .filter_map(|m| m.prefill)
                .filter(|&(p, _)| p == k)
                .map(|(_, w)| w)
                .sum();
            assert_eq!(self.prefill.in_flight(&k), Some(want), "prefill {k} load, {ctx}");
        }
    }
}
