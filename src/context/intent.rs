//! What the caller is doing with a pick: select, reserve or preview.

/// What the caller is doing with the pick.
///
/// A selector with state reads it to change nothing on a preview:
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use workerpick::custom::{Choice, Context, Intent};
/// use workerpick::{Pool, Selector};
/// /// Takes turns, like round-robin, but counts only booked picks.
/// struct Turns(AtomicUsize);
/// impl Selector for Turns {
///     fn name(&self) -> &str { "turns" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         let turn = match cx.intent() {
///             Intent::Reserve => self.0.fetch_add(1, Ordering::Relaxed),
///             _ => self.0.load(Ordering::Relaxed),
///         };
///         cx.candidate(turn % cx.len()).map(Choice::unvalidated)
///     }
/// }
/// let pool = Pool::from_workers(["a", "b"]).unwrap();
/// let turns = Turns(AtomicUsize::new(0));
/// assert_eq!(pool.preview(&turns).unwrap(), "a");
/// assert_eq!(*pool.reserve(&turns).unwrap().worker(), "a");
/// assert_eq!(pool.preview(&turns).unwrap(), "b");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Intent {
    /// Pick without booking load.
    Select,
    /// Pick and book load.
    Reserve,
    /// Say what would be picked, changing nothing (no cursor advance).
    Preview,
}
