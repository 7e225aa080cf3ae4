//! Python bindings for `workerpick`: the `workerpick._workerpick` extension
//! module that the `workerpick` package re-exports.

mod error;
mod inputs;
mod pool;
mod reservation;
mod selector;
mod summary;
mod worker;

use pyo3::prelude::*;

#[pymodule]
fn _workerpick(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<pool::Pool>()?;
    m.add_class::<reservation::Reservation>()?;
    m.add_class::<selector::Selector>()?;
    m.add_class::<inputs::Eligibility>()?;
    m.add_class::<inputs::CacheHits>()?;
    m.add_function(wrap_pyfunction!(selector::modes, m)?)?;
    error::register(m)?;
    Ok(())
}
