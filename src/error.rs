use core::fmt;

/// Everything a pick, a reservation or a change to the worker set can refuse.
///
/// Picks never panic: every failure is one of these. The `Display` text says
/// what to do about it.
///
/// ```
/// use workerpick::{Error, Pool, Random, Request};
/// let pool: Pool<&str> = Pool::new();
/// assert_eq!(pool.select(&Random), Err(Error::NoWorkers));
/// pool.insert("a").unwrap();
/// let none = pool.eligibility(|_| false);
/// let err = pool.select_with(&Random, &Request::new().eligible(&none)).unwrap_err();
/// assert_eq!(err, Error::NoEligibleWorker);
/// assert!(err.to_string().contains("widen the mask"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The worker set is empty.
    NoWorkers,
    /// Every worker in the set is draining (see
    /// [`Pool::drain`](crate::Pool::drain)): none is a candidate until one is
    /// resumed or a worker is inserted.
    AllDraining,
    /// The eligibility mask excluded every worker in the set.
    NoEligibleWorker,
    /// The selector declined every candidate (a custom selector's
    /// [`choose`](crate::Selector::choose) returned `None`).
    NoAcceptableWorker,
    /// A worker named by the caller (a pinned reservation, a retarget, a
    /// removal or an attribute change) is not in the current set.
    UnknownWorker,
    /// A worker was inserted twice.
    DuplicateWorker,
    /// No selector is registered under `name`.
    UnknownSelector {
        /// The name that was asked for.
        name: String,
        /// Every name that would have resolved.
        known: Vec<String>,
    },
    /// A selector was registered under a name that is already taken.
    DuplicateSelector {
        /// The name that clashed.
        name: String,
        /// Whether the clash is with a built-in mode.
        builtin: bool,
    },
    /// A configuration value is out of range.
    InvalidConfig {
        /// Which setting.
        what: &'static str,
        /// Why it was refused.
        why: String,
    },
    /// The set would exceed the pool's worker limit (see
    /// [`Pool::with_max_workers`](crate::Pool::with_max_workers)).
    CapacityExceeded {
        /// The pool's limit on worker slots.
        limit: usize,
    },
    /// Booking the request's weight would take the worker's in-flight load
    /// past `u32::MAX`; nothing was booked.
    LoadOverflow,
    /// The worker named by the caller is draining (see
    /// [`Pool::drain`](crate::Pool::drain)): it takes no new reservation.
    Draining,
    /// A hard session binding's worker is gone (removed, draining, unhealthy
    /// or outside the request's mask); the binding went with it.
    SessionWorkerGone,
    // Last: a variant before the others would renumber them, and the error
    // paths of every pick would compile differently.
    /// A rank named by the caller (a pinned reservation, a report) is not
    /// one of the worker's data-parallel ranks.
    UnknownRank {
        /// The rank that was asked for.
        rank: u32,
        /// How many ranks the worker has (`0..ranks` are valid).
        ranks: u32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoWorkers => f.write_str("no workers: the worker set is empty; insert workers before picking"),
            Error::AllDraining => f.write_str(
                "every worker is draining: none takes new picks; `resume` one or insert workers before picking",
            ),
            Error::NoEligibleWorker => f.write_str(
                "no eligible worker: the eligibility mask excludes every worker in the set; widen the mask or add workers",
            ),
            Error::NoAcceptableWorker => f.write_str(
                "no acceptable worker: the selector declined every candidate; check the conditions it requires or add workers that meet them",
            ),
            Error::UnknownWorker => f.write_str(
                "unknown worker: it is not in the current worker set; insert it first or pick without pinning",
            ),
            Error::UnknownRank { rank, ranks } => write!(
                f,
                "unknown rank: the worker has {ranks} data-parallel rank(s), numbered 0..{ranks}, so rank {rank} \
                 is not one of them; name a rank below {ranks} or reserve the worker without a rank"
            ),
            Error::DuplicateWorker => f.write_str(
                "duplicate worker: it is already in the set; remove it first or use `replace` to set the whole set",
            ),
            Error::UnknownSelector { name, known } => {
                write!(f, "unknown selector `{name}`; known selectors: {}", known.join(", "))
            }
            Error::DuplicateSelector { name, builtin: true } => write!(
                f,
                "selector name `{name}` is a built-in mode and cannot be replaced; register yours under another name"
            ),
            Error::DuplicateSelector { name, builtin: false } => {
                write!(f, "selector name `{name}` is already registered; choose another name")
            }
            Error::InvalidConfig { what, why } => write!(f, "invalid configuration: {what}: {why}"),
            Error::CapacityExceeded { limit } => write!(
                f,
                "capacity exceeded: this pool holds at most {limit} worker slots (live workers plus removed \
                 ones still draining); build it with `Pool::with_max_workers` for more"
            ),
            Error::Draining => f.write_str(
                "worker draining: it takes no new reservations until it is resumed; reserve another worker or `resume` it",
            ),
            Error::SessionWorkerGone => f.write_str(
                "session worker gone: the worker this session is bound to (hard) cannot take it; the binding is \
                 dropped, so retry to bind the session anew, or use soft stickiness to fall back by itself",
            ),
            Error::LoadOverflow => f.write_str(
                "load overflow: booking this weight would take the worker's in-flight load past u32::MAX; charge smaller weights",
            ),
        }
    }
}

impl std::error::Error for Error {}
