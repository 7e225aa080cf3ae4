use crate::{Choice, Context, Selector};

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
        "random"
    }

    #[inline(always)]
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let n = cx.len() as u32;
        let i = cx.rng().below(n);
        cx.candidate(i as usize).map(Choice::unvalidated)
    }

    fn charges(&self) -> bool {
        false
    }

    #[inline(always)]
    fn builtin(&self) -> Option<crate::selector::Builtin<'_>> {
        Some(crate::selector::Builtin::Random(self))
    }
}
