/// What kind of device a worker runs on; the device-aware mode balances
/// between the two groups.
///
/// ```
/// use workerpick::{DeviceKind, Pool, WorkerInfo};
/// let pool = Pool::new();
/// pool.insert("gpu").unwrap(); // an accelerator unless told otherwise
/// pool.insert_with("cpu", WorkerInfo::new().device(DeviceKind::Cpu)).unwrap();
/// assert_eq!(pool.info(&"gpu").unwrap().device_kind(), DeviceKind::Accelerator);
/// assert_eq!(pool.info(&"cpu").unwrap().device_kind(), DeviceKind::Cpu);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A CPU worker: cheap to run, slow to encode.
    Cpu,
    /// An accelerator (GPU, TPU, …) worker. The default.
    #[default]
    Accelerator,
}

/// The largest capacity weight a worker may have (see [`WorkerInfo::capacity`]).
pub const MAX_CAPACITY: u32 = 1 << 16;

/// The most data-parallel ranks a worker may have (see [`WorkerInfo::ranks`]).
pub const MAX_RANKS: u32 = 1024;

/// Per-worker attributes that selectors may read through
/// [`Context::info`](crate::Context::info).
///
/// ```
/// use workerpick::{DeviceKind, WorkerInfo};
/// let info = WorkerInfo::new().device(DeviceKind::Cpu).group(3).capacity(4);
/// assert_eq!(info.device_kind(), DeviceKind::Cpu);
/// assert_eq!(info.group_id(), 3);
/// assert_eq!(info.capacity_weight(), 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkerInfo {
    device: DeviceKind,
    group: u32,
    capacity: u32,
    /// Held in the padding a `u32` would not fit: the info stays 12 bytes.
    ranks: u16,
}

impl Default for WorkerInfo {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkerInfo {
    /// An accelerator in group 0, of capacity 1, with one rank.
    pub const fn new() -> Self {
        Self {
            device: DeviceKind::Accelerator,
            group: 0,
            capacity: 1,
            ranks: 1,
        }
    }

    /// Sets how many data-parallel ranks the worker runs, `1..=`[`MAX_RANKS`]
    /// (1 unless set): each rank is a candidate of its own, with its own
    /// load, reported load and cache credit, while the worker's identity,
    /// membership, health and drain are shared by all of them. A pick names
    /// the rank ([`Reservation::rank`](crate::Reservation::rank)). The count
    /// is fixed while the worker is in the set; out-of-range values are
    /// refused when the info is given to the pool. See
    /// [`docs::internal::sets`](crate::docs::internal::sets), "Data-parallel ranks".
    ///
    /// ```
    /// use workerpick::{LeastLoaded, Pool, WorkerInfo};
    /// let pool = Pool::new();
    /// pool.insert_with("node-0", WorkerInfo::new().ranks(4)).unwrap();
    /// let picks: Vec<_> = (0..4).map(|_| pool.reserve(&LeastLoaded::new()).unwrap()).collect();
    /// let mut ranks: Vec<u32> = picks.iter().map(|r| r.rank()).collect();
    /// ranks.sort();
    /// assert_eq!(ranks, [0, 1, 2, 3]); // one request on each rank
    /// assert_eq!(pool.in_flight(&"node-0"), Some(4));
    /// ```
    pub const fn ranks(mut self, ranks: u32) -> Self {
        // Out of range is kept out of range (checked when given to a pool).
        self.ranks = if ranks > MAX_RANKS { 0 } else { ranks as u16 };
        self
    }

    /// Sets the capacity weight, `1..=`[`MAX_CAPACITY`]: how much work this
    /// worker takes relative to the others (an 8-GPU node beside 2-GPU
    /// ones: 4 and 1). Every mode honours it: random and round-robin pick in
    /// proportion to it, power-of-two and least-loaded compare load ÷ capacity
    /// (see [`docs::fleets`](crate::docs::fleets), "Capacity weights"). A pool
    /// whose workers all have the same capacity picks exactly as an
    /// unweighted one. Out-of-range values are refused when the info is
    /// given to the pool.
    pub const fn capacity(mut self, capacity: u32) -> Self {
        self.capacity = capacity;
        self
    }

    /// Sets the device kind.
    pub const fn device(mut self, device: DeviceKind) -> Self {
        self.device = device;
        self
    }

    /// Sets a caller-defined group (a zone, a rack, a model replica set).
    pub const fn group(mut self, group: u32) -> Self {
        self.group = group;
        self
    }

    /// The device kind.
    pub const fn device_kind(&self) -> DeviceKind {
        self.device
    }

    /// The caller-defined group.
    pub const fn group_id(&self) -> u32 {
        self.group
    }

    /// The capacity weight (1 unless set).
    pub const fn capacity_weight(&self) -> u32 {
        self.capacity
    }

    /// How many data-parallel ranks the worker runs (1 unless set).
    pub const fn rank_count(&self) -> u32 {
        self.ranks as u32
    }

    /// Refuses a capacity outside `1..=MAX_CAPACITY` and a rank count
    /// outside `1..=MAX_RANKS`.
    pub(crate) fn check(&self) -> Result<(), crate::error::Error> {
        if !(1..=MAX_CAPACITY).contains(&self.capacity) {
            return Err(crate::error::Error::InvalidConfig {
                what: "worker capacity",
                why: format!("{} is outside 1..={MAX_CAPACITY}", self.capacity),
            });
        }
        if self.ranks == 0 {
            return Err(crate::error::Error::InvalidConfig {
                what: "worker ranks",
                why: format!("the rank count is outside 1..={MAX_RANKS}"),
            });
        }
        Ok(())
    }
}
