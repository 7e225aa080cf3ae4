//! A reservation as a Python object: released exactly once, by `release()`,
//! by leaving a `with` block (normally or by an exception), or when it is
//! garbage-collected, whichever comes first.

use crate::error::IntoPy;
use crate::worker::WorkerId;
use pyo3::prelude::*;
use std::sync::{Mutex, MutexGuard};
use workerpick::OwnedReservation;

/// Load booked on a worker until released.
#[pyclass(module = "workerpick", frozen)]
pub struct Reservation {
    state: Mutex<State>,
}

struct State {
    /// `None` once released: the `take` that empties it is the one release.
    held: Option<OwnedReservation<WorkerId>>,
    /// The worker, kept for reading after the release.
    worker: WorkerId,
    weight: u32,
}

impl Reservation {
    pub(crate) fn new(held: OwnedReservation<WorkerId>) -> Self {
        let state = State {
            worker: held.worker().clone(),
            weight: held.weight(),
            held: Some(held),
        };
        Self {
            state: Mutex::new(state),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned one is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self) -> bool {
        let held = self.state().held.take();
        // Dropped outside the lock: the drop is the release.
        held.is_some()
    }
}

#[pymethods]
impl Reservation {
    /// The worker this reservation books load on.
    #[getter]
    fn worker<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.state().worker.to_py(py)
    }

    /// The load it books (0 for a device-aware full cache hit).
    #[getter]
    fn weight(&self) -> u32 {
        self.state().weight
    }

    /// Whether the load has been given back.
    #[getter]
    fn released(&self) -> bool {
        self.state().held.is_none()
    }

    /// Gives the load back. Returns True the first time, False after (a
    /// second call changes nothing).
    fn release(&self) -> bool {
        self.take()
    }

    /// Moves the booked load to `worker` (which must be in the set); an
    /// error leaves it where it was.
    fn retarget(&self, worker: &Bound<'_, PyAny>) -> PyResult<()> {
        let to = WorkerId::extract(worker)?;
        let mut state = self.state();
        let Some(held) = state.held.as_mut() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "reservation already released: nothing to retarget",
            ));
        };
        held.retarget(&to).py()?;
        state.worker = to;
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Releases; never swallows the exception that left the block.
    fn __exit__(
        &self,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> bool {
        self.take();
        false
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let state = self.state();
        let worker = state.worker.to_py(py).repr()?.to_string();
        let status = if state.held.is_some() { "held" } else { "released" };
        Ok(format!(
            "Reservation(worker={worker}, weight={}, {status})",
            state.weight
        ))
    }
}
