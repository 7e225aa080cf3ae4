//! Replica summaries between Python and the crate: a dict for Python code,
//! JSON bytes (the crate's serde form) for the wire.

use crate::worker::WorkerId;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use workerpick::Summary;

/// `{"origin": int, "seq": int, "loads": [(worker, load), ...]}`.
pub fn to_dict<'py>(py: Python<'py>, summary: &Summary<WorkerId>) -> PyResult<Bound<'py, PyDict>> {
    let loads = summary
        .loads()
        .iter()
        .map(|(w, load)| PyTuple::new(py, [w.to_py(py), load.into_pyobject(py)?.into_any()]))
        .collect::<PyResult<Vec<_>>>()?;
    let out = PyDict::new(py);
    out.set_item("origin", summary.origin())?;
    out.set_item("seq", summary.seq())?;
    out.set_item("loads", PyList::new(py, loads)?)?;
    Ok(out)
}

/// A summary from the dict `to_dict` makes, or from JSON bytes or str.
pub fn from_py(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Summary<WorkerId>> {
    let parsed = if let Ok(bytes) = obj.cast::<PyBytes>() {
        let bytes = bytes.as_bytes();
        py.detach(|| serde_json::from_slice(bytes))
    } else if let Ok(text) = obj.cast::<PyString>() {
        serde_json::from_str(text.to_str()?)
    } else if let Ok(dict) = obj.cast::<PyDict>() {
        let field = |name: &str| {
            dict.get_item(name)?
                .ok_or_else(|| PyValueError::new_err(format!("a summary dict has `{name}`")))
        };
        let origin: u64 = field("origin")?.extract()?;
        let seq: u64 = field("seq")?.extract()?;
        let mut loads = Vec::new();
        for item in field("loads")?.try_iter()? {
            let (w, load): (Bound<'_, PyAny>, u32) = item?.extract()?;
            loads.push((WorkerId::extract(&w)?, load));
        }
        let value = serde_json::json!({ "origin": origin, "seq": seq, "loads": loads });
        serde_json::from_value(value)
    } else {
        return Err(PyTypeError::new_err(
            "a summary is a dict from summary() or bytes from summary_bytes()",
        ));
    };
    parsed.map_err(|e| PyValueError::new_err(format!("not a workerpick summary: {e}")))
}
