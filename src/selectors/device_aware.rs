use crate::device::DeviceKind;
use crate::error::Error;
use crate::context::{Context, Slot};
use crate::selectors::least_loaded::Minimum;
use crate::selectors::{Builtin, Choice, Configure, Selector};
use crate::scan::{self, Least};
use crate::snapshot::KindLanes;
use crate::sync::atomic::Ordering;

/// Balances requests between CPU and accelerator workers, and sends a request
/// whose cache keys a worker already holds to that worker for free.
///
/// Each worker's [`DeviceKind`] comes from its [`WorkerInfo`](crate::WorkerInfo)
/// (set with [`Pool::insert_with`](crate::Pool::insert_with), changed with
/// [`Pool::set_info`](crate::Pool::set_info); the default is an accelerator).
/// A request may carry [`CacheHits`](crate::CacheHits). Among the candidates:
///
/// 1. **Full cache hit.** If some candidates hold all the keys the request
///    needs (`held >= needed`, `needed > 0`), the least-loaded of them, booked
///    with no load (a reservation on it pins the worker and charges nothing).
/// 2. **One group.** If all candidates are CPUs, or all accelerators, the
///    least-loaded of them.
/// 3. **Ratio.** Otherwise, with `r` the CPU ratio (default 8):
///    `allowed = ⌊acc_total_load × cpu_count / (r × acc_count)⌋` (saturating);
///    the least-loaded CPU if `cpu_total_load < allowed`, else the
///    least-loaded accelerator. All idle → an accelerator. With one CPU, one
///    accelerator and `r = 1` picks alternate accelerator, CPU, accelerator…;
///    with `r = 8` the accelerator takes 8 in flight before the CPU its first.
///
/// Ties inside a group are broken uniformly at random. Charged picks are
/// booked with a compare-and-swap on the load seen, so a reservation lands on
/// a true minimum of its group when nobody releases meanwhile (as with
/// [`LeastLoaded`](crate::LeastLoaded)); the group totals that decide between
/// CPUs and accelerators are read without validation, so under concurrent
/// picks the split may lag by the picks in flight. A pick is one scalar pass
/// over the candidates (two when there is a tie) and allocates nothing.
/// Where the request carries no cache hits and the capacities are equal, the
/// pass is faster: when every candidate is of one kind, rule 2 is
/// least-loaded's pick, by least-loaded's scan (SIMD, sublinear on large
/// pools); on a mixed fleet with no health marks and no mask, the two
/// groups' totals come from one branch-free pass over the counters and the
/// group's minimum from the SIMD scan over the group as a mask.
///
/// A ratio below 1 is refused, not replaced by the default: the only way to
/// set one is [`with_cpu_ratio`](Self::with_cpu_ratio) (or the `cpu-ratio`
/// parameter, which calls it), so a misconfigured 0 is reported.
///
/// ```
/// use workerpick::{DeviceAware, DeviceKind, Pool, WorkerInfo};
/// let pool = Pool::new();
/// pool.insert_with("cpu", WorkerInfo::new().device(DeviceKind::Cpu)).unwrap();
/// pool.insert_with("gpu", WorkerInfo::new()).unwrap();
/// let mode = DeviceAware::with_cpu_ratio(1).unwrap();
/// let held: Vec<_> = (0..4).map(|_| pool.reserve(&mode).unwrap()).collect();
/// let order: Vec<_> = held.iter().map(|r| *r.worker()).collect();
/// assert_eq!(order, ["gpu", "cpu", "gpu", "cpu"]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceAware {
    cpu_ratio: u32,
}

impl DeviceAware {
    /// The CPU ratio [`new`](Self::new) uses.
    pub const DEFAULT_CPU_RATIO: u32 = 8;

    /// The device-aware mode with CPU ratio 8.
    pub const fn new() -> Self {
        Self {
            cpu_ratio: Self::DEFAULT_CPU_RATIO,
        }
    }

    /// The device-aware mode with CPU ratio `r`: CPU workers together take
    /// about one request in flight per `r` on an accelerator (scaled by the
    /// group sizes). `r = 0` is an [`Error::InvalidConfig`].
    ///
    /// ```
    /// use workerpick::DeviceAware;
    /// assert_eq!(DeviceAware::with_cpu_ratio(4).unwrap().cpu_ratio(), 4);
    /// assert!(DeviceAware::with_cpu_ratio(0).is_err());
    /// ```
    pub fn with_cpu_ratio(r: u32) -> Result<Self, Error> {
        if r == 0 {
            return Err(Error::InvalidConfig {
                what: "device-aware cpu-ratio",
                why: "must be at least 1 (8 is the default); 0 would divide by zero".into(),
            });
        }
        Ok(Self { cpu_ratio: r })
    }

    /// The CPU ratio.
    pub const fn cpu_ratio(&self) -> u32 {
        self.cpu_ratio
    }
}

impl Default for DeviceAware {
    fn default() -> Self {
        Self::new()
    }
}

/// Count, total load and minimum of one group of candidates.
#[derive(Clone, Copy)]
struct Group<'a> {
    count: u32,
    total: u64,
    least: Minimum<'a>,
}

impl<'a> Group<'a> {
    const EMPTY: Self = Self {
        count: 0,
        total: 0,
        least: Minimum::NONE,
    };

    /// Adds `slot`, whose counter is `load` and own load (less its health
    /// penalty) `own`: the totals the ratio compares are of own loads.
    #[inline(always)]
    fn add(&mut self, slot: Slot<'a>, load: u32, own: u32) {
        self.count += 1;
        self.total += u64::from(own);
        self.least.add(slot, load);
    }
}

#[inline(always)]
fn full_hit<'a>(cx: &Context<'a>, slot: Slot<'a>, needed: u32) -> bool {
    cx.cache_hit(slot).is_some_and(|(held, _)| held >= needed)
}

impl DeviceAware {
    /// Rules 2 and 3 over every candidate of a fleet that mixes kinds, by
    /// the snapshot's per-kind lanes: one pass over the counters for the two
    /// groups' totals (branch-free, no per-candidate lookups), then
    /// least-loaded's SIMD scan over the chosen group's lanes. For unmasked
    /// picks with no health marks, equal capacities and no cache hits; `None`
    /// where the scan cannot answer (saturated counters, or lanes that kept
    /// moving between its passes), and the rule's own pass answers.
    #[inline]
    fn by_kind_lanes<'a>(&self, cx: &mut Context<'a>, kinds: &'a KindLanes) -> Option<Choice<'a>> {
        let [cpu_lanes, acc_lanes] = &kinds.lanes;
        let counters = cx.counters.slice(cpu_lanes.len());
        let (mut cpu_total, mut acc_total) = (0u64, 0u64);
        for ((c, &cpu), &acc) in counters.iter().zip(cpu_lanes.iter()).zip(acc_lanes.iter()) {
            let load = c.load(Ordering::Relaxed);
            cpu_total += u64::from(load & !cpu);
            acc_total += u64::from(load & !acc);
        }
        let [cpu_count, acc_count] = kinds.counts.map(u64::from);
        let allowed = acc_total.saturating_mul(cpu_count) / (u64::from(self.cpu_ratio) * acc_count);
        let kind = if cpu_total < allowed { DeviceKind::Cpu } else { DeviceKind::Accelerator };
        let lanes = &kinds.lanes[KindLanes::of(kind)];
        let backend = cx.backend();
        for _ in 0..4 {
            match scan::least(backend, counters, Some(lanes), |m| cx.rng.below(m)) {
                Least::Found { index, min } => return Some(Choice::validated(Slot::new(index as u32), min)),
                Least::Moved => {}
                Least::Empty | Least::Saturated => break,
            }
        }
        None
    }
}

impl Selector for DeviceAware {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let needed = cx.request().get_cache_hits().map_or(0, |h| h.needed());
        // No full hit to look for and one group: rule 2 is least-loaded's
        // pick, so it takes least-loaded's scan (SIMD, and per-block bounds
        // on large pools). Capacities aside: this mode weighs raw loads.
        if needed == 0 && cx.weights().is_none() {
            if cx.set.one_device_kind {
                let (slot, load) = cx.least_loaded()?;
                return Some(Choice::validated(slot, load));
            }
            if let Some(kinds) = cx.set.kinds.as_deref()
                && !cx.masked
                && !cx.health_any()
                && let Some(choice) = self.by_kind_lanes(cx, kinds)
            {
                return Some(choice);
            }
        }
        let mut full = Minimum::NONE;
        let mut cpu = Group::EMPTY;
        let mut acc = Group::EMPTY;
        // While some candidate is healthy, only healthy ones take part; when
        // none is, all do, weighed by own load (as on a healthy fleet).
        let marks = cx.health_any();
        let healthy_only = marks && cx.any_healthy_candidate();
        let counted = move |cx: &Context<'a>, s: Slot<'a>| !healthy_only || cx.is_healthy(s);
        for i in 0..cx.len() {
            let slot = cx.candidate(i)?;
            if !counted(cx, slot) {
                continue;
            }
            let load = cx.load(slot);
            let own = if marks { cx.own_load(slot.index(), load) } else { load };
            if needed > 0 && full_hit(cx, slot, needed) {
                full.add(slot, load);
            }
            match cx.info(slot).device_kind() {
                DeviceKind::Cpu => cpu.add(slot, load, own),
                DeviceKind::Accelerator => acc.add(slot, load, own),
            }
        }
        if let Some(slot) = full.draw(cx, |cx, s| counted(cx, s) && full_hit(cx, s, needed)) {
            return Some(Choice::uncharged(slot));
        }
        let kind = if acc.count == 0 {
            DeviceKind::Cpu
        } else if cpu.count == 0 {
            DeviceKind::Accelerator
        } else {
            let allowed = acc.total.saturating_mul(u64::from(cpu.count))
                / (u64::from(self.cpu_ratio) * u64::from(acc.count));
            if cpu.total < allowed {
                DeviceKind::Cpu
            } else {
                DeviceKind::Accelerator
            }
        };
        let group = match kind {
            DeviceKind::Cpu => cpu,
            DeviceKind::Accelerator => acc,
        };
        let slot = group.least.draw(cx, |cx, s| counted(cx, s) && cx.info(s).device_kind() == kind)?;
        Some(Choice::validated(slot, group.least.min))
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for DeviceAware {
    const LOAD_RULE: Option<&'static str> = Some("holds the CPU workers to about 1/8 of the accelerators' load");
    const SPLITS_EVENLY: bool = true;
    const PARAMETERS: &'static [&'static str] = &["cpu-ratio"];

    fn configure(param: impl Fn(&str) -> Result<Option<u32>, Error>) -> Result<Self, Error> {
        Self::with_cpu_ratio(param("cpu-ratio")?.unwrap_or(Self::DEFAULT_CPU_RATIO))
    }
}
