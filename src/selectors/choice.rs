//! A selector's answer: the candidate it chose, and how to book it.

use crate::context::Slot;

/// A selector's answer: a candidate, and how to book it.
///
/// ```
/// use workerpick::custom::{Choice, Context};
/// use workerpick::{Pool, Selector};
/// /// The least-loaded candidate, booked only if its load is still the one seen.
/// struct Careful;
/// impl Selector for Careful {
///     fn name(&self) -> &str { "careful" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         let (slot, load) = cx.least_loaded()?;
///         Some(Choice::validated(slot, load))
///     }
/// }
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let _busy = pool.reserve_worker(&"a", 2).unwrap();
/// assert_eq!(*pool.reserve(&Careful).unwrap().worker(), "b");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice<'a> {
    pub(crate) slot: Slot<'a>,
    pub(crate) seen: Option<u32>,
    pub(crate) charge: bool,
}

impl<'a> Choice<'a> {
    /// `slot`, chosen because its load was `seen` (as [`Context::load`] gives it,
    /// reported load included): a reservation books it only if the load is still
    /// `seen`, else the selector is asked again.
    ///
    /// [`Context::load`]: crate::Context::load
    pub fn validated(slot: Slot<'a>, seen: u32) -> Self {
        Self {
            slot,
            seen: Some(seen),
            charge: true,
        }
    }

    /// `slot`, whatever its load (random, round-robin, sticky choices).
    pub fn unvalidated(slot: Slot<'a>) -> Self {
        Self {
            slot,
            seen: None,
            charge: true,
        }
    }

    /// `slot`, and book no load for it (the device-aware full cache hit).
    pub fn uncharged(slot: Slot<'a>) -> Self {
        Self {
            slot,
            seen: None,
            charge: false,
        }
    }

    /// The chosen slot.
    pub fn slot(&self) -> Slot<'a> {
        self.slot
    }
}
