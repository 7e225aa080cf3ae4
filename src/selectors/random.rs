use crate::context::Context;
use crate::selector::{Choice, Selector};
use crate::selectors::{Builtin, Configure};

/// One uniform draw over the candidates. Reads no load.
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
        let n = cx.len() as u32;
        let i = cx.rng().below(n);
        cx.candidate(i as usize).map(Choice::unvalidated)
    }

    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for Random {}
