use crate::context::Context;
use crate::selector::{Choice, Selector};
use crate::selectors::{Builtin, Configure};

/// One uniform draw over the candidates, in proportion to their capacity in
/// a weighted pool (an alias table: still one draw). Reads no load; passes
/// over unhealthy workers while any candidate is healthy.
///
/// ```
/// use workerpick::{Pool, Random};
/// let pool = Pool::from_workers(0..8).unwrap();
/// let w = pool.select(&Random::new()).unwrap();
/// assert!((0..8).contains(&w));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Random;

impl Random {
    /// The random mode.
    pub const fn new() -> Self {
        Random
    }
}

impl Selector for Random {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        cx.random_candidate().map(Choice::unvalidated)
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for Random {}
