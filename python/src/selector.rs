//! Modes by name, resolved through the crate's `Registry`: a mode added to
//! the library is a name here with no change to the binding.

use crate::error::IntoPy;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};
use std::sync::Arc;
use workerpick::{Params, Registry};

/// A selection mode resolved by name, with its parameters.
#[pyclass(module = "workerpick", frozen)]
pub struct Selector {
    pub(crate) inner: Arc<dyn workerpick::Selector>,
}

#[pymethods]
impl Selector {
    /// `Selector("device-aware", cpu_ratio=4)`: the mode called `name`
    /// (any spelling the library accepts), its parameters as keywords.
    #[new]
    #[pyo3(signature = (name, **params))]
    fn new(name: &str, params: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut p = Params::new();
        for (key, value) in params.into_iter().flatten() {
            let key: String = key.extract()?;
            // `str(True)` is "True"; the library's parameters are numbers.
            if value.is_instance_of::<PyBool>() {
                return Err(PyTypeError::new_err(format!(
                    "parameter `{key}` takes a number, got a bool"
                )));
            }
            let text = value.str()?;
            p.insert(&key, text.to_str()?);
        }
        let inner = Registry::new().resolve_with(name, &p).py()?;
        Ok(Self { inner })
    }

    /// The mode's canonical name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn __repr__(&self) -> String {
        format!("Selector({:?})", self.inner.name())
    }
}

/// `mode` as a selector: a `Selector` as is, a `str` resolved by name.
pub fn resolve(mode: &Bound<'_, PyAny>) -> PyResult<Arc<dyn workerpick::Selector>> {
    if let Ok(s) = mode.cast::<Selector>() {
        return Ok(s.get().inner.clone());
    }
    if let Ok(name) = mode.cast::<PyString>() {
        return Registry::new().resolve(name.to_str()?).py();
    }
    Err(PyTypeError::new_err(
        "mode is a mode name (str) or a workerpick.Selector",
    ))
}

/// Every mode name that resolves, in the library's order.
#[pyfunction]
pub fn modes() -> Vec<String> {
    Registry::new().names().map(str::to_owned).collect()
}
