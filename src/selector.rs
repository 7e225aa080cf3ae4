//! The plug-in point: one object-safe trait that the built-in modes and
//! custom policies implement alike, and the answer it gives.

use crate::context::{Context, Slot};
use crate::selectors::Builtin;

/// A selection policy.
///
/// `choose` looks at the candidates through a [`Context`] and names one. It is
/// called with `&self` from many threads at once, so any state it keeps must
/// be atomic (as [`RoundRobin`](crate::RoundRobin)'s cursor is). The pool does
/// the booking: when the choice carries the load it compared
/// ([`Choice::validated`]), a reservation lands only if that load is still
/// current (compare-and-swap), and otherwise `choose` is asked again, a bounded
/// number of times.
///
/// ```
/// use workerpick::{Choice, Context, Pool, Selector};
///
/// /// Always the first candidate.
/// struct First;
/// impl Selector for First {
///     fn name(&self) -> &str { "first" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         cx.candidate(0).map(Choice::unvalidated)
///     }
/// }
///
/// let pool = Pool::from_workers([10, 20, 30]).unwrap();
/// let dynamic: &dyn Selector = &First;
/// assert_eq!(pool.select(dynamic).unwrap(), 10);
/// ```
pub trait Selector: Send + Sync {
    /// The name a [`Registry`](crate::Registry) knows it by.
    fn name(&self) -> &str;

    /// Picks one candidate, or `None` if it finds none acceptable.
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>>;

    /// The built-in mode behind this selector, if it is one: lets a call
    /// through `&dyn Selector` take the same inlined path as a direct call.
    /// Custom selectors keep the default.
    #[doc(hidden)]
    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        None
    }
}

impl<S: Selector + ?Sized> Selector for &S {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        (**self).choose(cx)
    }
    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        (**self).builtin()
    }
}

impl<S: Selector + ?Sized> Selector for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        (**self).choose(cx)
    }
    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        (**self).builtin()
    }
}

impl<S: Selector + ?Sized> Selector for std::sync::Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        (**self).choose(cx)
    }
    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        (**self).builtin()
    }
}

/// A selector's answer: a candidate, and how to book it.
///
/// ```
/// use workerpick::{Choice, Context, Pool, Selector};
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
