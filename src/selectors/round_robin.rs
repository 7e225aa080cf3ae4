use crate::context::{Context, Intent};
use crate::selector::{Choice, Selector};
use crate::selectors::{Builtin, Configure};
use crate::sync::CachePadded;
use crate::sync::atomic::{AtomicUsize, Ordering};

/// A shared cursor, one `fetch_add(1)` per pick; candidate = cursor mod n.
///
/// In a weighted pool the cursor walks a smooth schedule in which each worker
/// has turns in proportion to its capacity, spread evenly (see
/// [`docs::design`](crate::docs::design), "Capacity weights"). Unhealthy
/// workers are passed over (their turn goes to the next healthy worker)
/// while any candidate is healthy.
///
/// The cursor sits alone on its cache line so that the threads that share a
/// `RoundRobin` contend on nothing else. A preview reads it without advancing.
///
/// ```
/// use workerpick::{Pool, RoundRobin};
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let rr = RoundRobin::new();
/// assert_eq!(pool.preview(&rr).unwrap(), "a");
/// let picks: Vec<_> = (0..4).map(|_| pool.select(&rr).unwrap()).collect();
/// assert_eq!(picks, ["a", "b", "c", "a"]);
/// ```
#[derive(Debug, Default)]
pub struct RoundRobin {
    cursor: CachePadded<AtomicUsize>,
}

impl RoundRobin {
    /// A cursor starting at the first candidate.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next ticket the cursor will hand out.
    pub fn cursor(&self) -> usize {
        self.cursor.load(Ordering::Relaxed)
    }
}

impl Selector for RoundRobin {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        // Relaxed: tickets need only be distinct (the RMW guarantees that);
        // nothing else is published through the cursor.
        let preview = cx.intent() == Intent::Preview;
        let ticket = if preview {
            self.cursor.load(Ordering::Relaxed)
        } else {
            self.cursor.fetch_add(1, Ordering::Relaxed)
        };
        // The stride schedule of a weighted pool may walk on to later tickets.
        let mut peek = ticket;
        let next = || {
            if preview {
                peek += 1;
                peek
            } else {
                self.cursor.fetch_add(1, Ordering::Relaxed)
            }
        };
        cx.round_robin_candidate(ticket, next).map(Choice::unvalidated)
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for RoundRobin {}
