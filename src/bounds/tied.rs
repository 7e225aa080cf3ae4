//! What a bounded pick counted: up to `N` blocks with their ties, to draw one
//! tie among them.

/// Up to `N` blocks, each with its ties, in the order pushed, unless more
/// were pushed: what a summarised pick counted, to draw one tie among them.
pub(crate) struct Tied<const N: usize> {
    blocks: [(u32, u32); N],
    len: usize,
}

impl<const N: usize> Default for Tied<N> {
    fn default() -> Self {
        Self {
            blocks: [(0, 0); N],
            len: 0,
        }
    }
}

impl<const N: usize> Tied<N> {
    /// Adds block `b` holding `ties`.
    pub(crate) fn push(&mut self, b: usize, ties: u32) {
        if let Some(slot) = self.blocks.get_mut(self.len) {
            *slot = (b as u32, ties);
        }
        self.len += 1;
    }

    /// Whether `N` blocks were pushed: one more would not fit.
    pub(crate) fn is_full(&self) -> bool {
        self.len >= N
    }

    /// Every block pushed, if they all fit.
    pub(crate) fn blocks(&self) -> Option<&[(u32, u32)]> {
        self.blocks.get(..self.len)
    }
}
