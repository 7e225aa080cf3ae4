//! What a scan answers.

/// The minimum effective value and how many lanes hold it.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, MinTies};
///
/// let counters: Vec<AtomicU32> = [3, 1, 4, 1].into_iter().map(AtomicU32::new).collect();
/// let got = scan::min_ties(Backend::detect(), &counters, &[0, 0, 0, 0]);
/// assert_eq!(got, MinTies { min: 1, ties: 2 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinTies {
    /// The smallest `counters[i] | excluded[i]`; `u32::MAX` when there is no lane, or
    /// when every lane is excluded (or holds `u32::MAX`).
    pub min: u32,
    /// How many lanes equal `min`: 0 when there is no lane, and at least 1 otherwise,
    /// unless other threads change the counters during the scan (the vector backends
    /// count in a second pass, by when the lanes at the minimum may have moved).
    pub ties: u32,
}

/// The least effective value and the largest candidate counter, read in one
/// pass ([`range`](super::range)): the span of loads the cost mode's softmax
/// normalises by.
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use workerpick::scan::{self, Backend, Range};
///
/// let counters: Vec<AtomicU32> = [3, 1, 9, 4].into_iter().map(AtomicU32::new).collect();
/// // Lane 2 is not a candidate: its 9 counts for neither end.
/// let got = scan::range(Backend::detect(), &counters, Some(&[0, 0, u32::MAX, 0]));
/// assert_eq!(got, Range { min: 1, max: 4 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// The smallest `counters[i] | excluded[i]`, as [`MinTies::min`]: `u32::MAX`
    /// when there is no lane, or every lane is excluded (or holds `u32::MAX`).
    pub min: u32,
    /// The largest `counters[i]` over the lanes with `excluded[i] == 0`
    /// (exactly: `!min(!counters[i] | excluded[i])`); 0 when there is none.
    pub max: u32,
}

/// The outcome of [`least`](super::least).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Least {
    /// A lane at the minimum, as read.
    Found {
        /// The lane.
        index: usize,
        /// Its value when read: the minimum.
        min: u32,
    },
    /// There are no lanes, or every lane is excluded.
    Empty,
    /// The minimum is `u32::MAX`: saturated counters, which look like excluded lanes.
    Saturated,
    /// The lanes at the minimum changed between the passes of the scan: scan again.
    Moved,
}

impl Least {
    /// `self` as two scalars, which an out-of-line kernel returns in registers.
    /// Returned as an enum it goes through the caller's stack, and the caller
    /// read `min` and `index` back with one 8-byte load across the kernel's
    /// two stores, which stalls on store forwarding: a least-loaded reserve +
    /// release at 8 workers took 36.2 ns with it, 26.5 ns without
    /// (`cargo bench -p workerpick-benches --bench pair`).
    #[inline(always)]
    pub(crate) fn pack(self) -> (usize, u32) {
        match self {
            Least::Found { index, min } => {
                // A lane's index is below the slice's length.
                debug_assert!(index != usize::MAX);
                (index, min)
            }
            Least::Empty => (usize::MAX, 0),
            Least::Saturated => (usize::MAX, 1),
            Least::Moved => (usize::MAX, 2),
        }
    }

    /// The inverse of [`pack`](Self::pack).
    #[inline(always)]
    pub(crate) fn unpack((index, min): (usize, u32)) -> Self {
        match (index, min) {
            (usize::MAX, 0) => Least::Empty,
            (usize::MAX, 1) => Least::Saturated,
            (usize::MAX, _) => Least::Moved,
            (index, min) => Least::Found { index, min },
        }
    }
}

/// Where the entries equal to a value lie, when they are few: the summarised
/// pick's look at its per-block bounds (`Kernel::few_at`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FewAt {
    /// How many entries hold the value, up to [`FewAt::MAX`] + 1 (the search
    /// stops there: "more than fit").
    pub(crate) found: u32,
    /// The first `found.min(MAX)` of them, in index order.
    pub(crate) first: [u32; FewAt::MAX],
}

impl FewAt {
    /// The most positions noted.
    pub(crate) const MAX: usize = 8;

    /// Where the entries lie, if there are at most [`FewAt::MAX`].
    #[inline(always)]
    pub(crate) fn few(&self) -> Option<&[u32]> {
        self.first.get(..self.found as usize)
    }

    /// Notes the set bits of `bits` (bit j = entry `start + j`); false once
    /// more than [`FewAt::MAX`] were found.
    #[inline(always)]
    pub(crate) fn note(&mut self, start: usize, mut bits: u64) -> bool {
        while bits != 0 {
            match self.first.get_mut(self.found as usize) {
                Some(slot) => *slot = (start + bits.trailing_zeros() as usize) as u32,
                None => {
                    self.found += 1;
                    return false;
                }
            }
            self.found += 1;
            bits &= bits - 1;
        }
        true
    }
}

/// What a draw among the lanes at one value in a few blocks found
/// (`Kernel::draw_in_blocks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Drawn {
    /// The lane drawn; else how many lanes at the value were counted: none,
    /// or some whose lanes moved before the search for the one drawn.
    pub(crate) lane: Result<usize, u32>,
    /// Bit `j` set: the `j`-th block held no lane at the value.
    pub(crate) empty: u32,
}
