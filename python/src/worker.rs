//! Worker ids as Python gives them: an `int` or a `str`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyString};
use serde::de::{self, Visitor};
use serde::{Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// A worker's id. `Arc<str>` so that a reservation keeps its worker's name
/// with one reference-count increment rather than a string copy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkerId {
    /// A Python `int` that fits in 64 signed bits.
    Int(i64),
    /// A Python `str`.
    Str(Arc<str>),
}

impl WorkerId {
    /// Reads `obj` as a worker id; anything but an `int` or a `str` is a
    /// `TypeError`.
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(WorkerId::Str(Arc::from(s.to_str()?)));
        }
        if obj.is_instance_of::<PyInt>() {
            return Ok(WorkerId::Int(obj.extract::<i64>()?));
        }
        Err(PyTypeError::new_err(format!(
            "a worker id is an int or a str, got {}",
            obj.get_type().name()?
        )))
    }

    /// The Python object for this id.
    pub fn to_py<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self {
            WorkerId::Int(i) => PyInt::new(py, *i).into_any(),
            WorkerId::Str(s) => PyString::new(py, s).into_any(),
        }
    }
}

/// As a JSON number or string, so that replica summaries carry ids the way
/// Python wrote them.
impl Serialize for WorkerId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WorkerId::Int(i) => s.serialize_i64(*i),
            WorkerId::Str(v) => s.serialize_str(v),
        }
    }
}

impl<'de> serde::Deserialize<'de> for WorkerId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Id;
        impl Visitor<'_> for Id {
            type Value = WorkerId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a worker id (an integer or a string)")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<WorkerId, E> {
                Ok(WorkerId::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<WorkerId, E> {
                i64::try_from(v)
                    .map(WorkerId::Int)
                    .map_err(|_| E::custom("worker id out of the 64-bit signed range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<WorkerId, E> {
                Ok(WorkerId::Str(Arc::from(v)))
            }
        }
        d.deserialize_any(Id)
    }
}
