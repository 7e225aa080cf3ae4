/// Per-request cache-hit inputs for the device-aware mode (completed with the
/// device-aware selector).
#[derive(Clone, Debug, Default)]
pub struct CacheHits {
    pub(crate) needed: u32,
}

impl CacheHits {
    /// How many cache keys the request needs.
    pub fn needed(&self) -> u32 {
        self.needed
    }
}
