//! A candidate as a selector sees it: a storage index tied to one pick.

use core::marker::PhantomData;

/// One candidate, as a selector sees it.
///
/// Only a [`Context`](crate::Context) hands these out, and only for its candidates; the
/// lifetime ties a slot to the pick it came from, so a selector cannot keep one
/// and answer a later pick (with other candidates) with it:
///
/// ```compile_fail
/// use std::sync::Mutex;
/// use workerpick::custom::{Choice, Context, Slot};
/// use workerpick::Selector;
/// struct Sticky(Mutex<Option<Slot<'static>>>);
/// impl Selector for Sticky {
///     fn name(&self) -> &str { "sticky" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         let s = cx.candidate(0)?;
///         *self.0.lock().unwrap() = Some(s); // error: `'a` must outlive `'static`
///         Some(Choice::unvalidated(s))
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot<'a> {
    index: u32,
    _pick: PhantomData<&'a ()>,
}

impl Slot<'_> {
    #[inline(always)]
    pub(crate) fn new(index: u32) -> Self {
        Self {
            index,
            _pick: PhantomData,
        }
    }

    /// The storage index (stable while the worker is in the set).
    #[inline(always)]
    pub fn index(self) -> u32 {
        self.index
    }
}
