//! Per-request inputs built from a pool: eligibility masks and cache hits.

use pyo3::prelude::*;

/// Which workers a request may go to; build it with `Pool.eligibility` and
/// reuse it while the set is unchanged.
#[pyclass(module = "workerpick", frozen)]
pub struct Eligibility {
    pub(crate) inner: workerpick::Eligibility,
}

#[pymethods]
impl Eligibility {
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("Eligibility({} workers)", self.inner.len())
    }
}

/// How many of a request's cache keys each worker holds, for the
/// device-aware mode; build it with `Pool.cache_hits`.
#[pyclass(module = "workerpick", frozen)]
pub struct CacheHits {
    pub(crate) inner: workerpick::CacheHits,
}

#[pymethods]
impl CacheHits {
    /// How many keys the request needs.
    #[getter]
    fn needed(&self) -> u32 {
        self.inner.needed()
    }

    fn __repr__(&self) -> String {
        format!("CacheHits(needed={})", self.inner.needed())
    }
}
