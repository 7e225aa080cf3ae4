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
