use crate::error::Error;
use core::fmt;

/// Why a queued request was not admitted.
///
/// ```
/// use workerpick::queue::QueueError;
/// assert!(QueueError::Timeout.to_string().contains("deadline"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueueError {
    /// Every waiter slot is taken: shed the request (a 429).
    Full,
    /// The request's deadline passed before room was found (a 408 or 429);
    /// nothing is booked for it.
    Timeout,
    /// The entry names a class or tenant the queue was not configured with.
    Unknown,
    /// The ticket already answered (an admission or an error) and holds
    /// nothing more.
    Spent,
    /// Room was found but the pick refused (the set emptied, every worker
    /// drains, a load would overflow).
    Pick(Error),
}

impl fmt::Display for QueueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => f.write_str("the admission queue is full: shed the request or raise its capacity"),
            Self::Timeout => f.write_str("the request's deadline passed while it waited for room"),
            Self::Unknown => {
                f.write_str("the entry names a class or tenant beyond the queue's configuration")
            }
            Self::Spent => f.write_str("the ticket already answered: ask a new one"),
            Self::Pick(e) => write!(f, "room was found but the pick failed: {e}"),
        }
    }
}

impl std::error::Error for QueueError {}
