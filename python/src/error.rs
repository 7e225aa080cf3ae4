//! The crate's `Error` as Python exceptions: one class per variant, all
//! subclasses of `WorkerpickError`, each carrying the crate's message.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use workerpick::Error;

create_exception!(
    workerpick,
    WorkerpickError,
    PyException,
    "Base class of every error workerpick raises; str() is the library's message."
);
create_exception!(
    workerpick,
    NoWorkersError,
    WorkerpickError,
    "The worker set is empty."
);
create_exception!(
    workerpick,
    NoEligibleWorkerError,
    WorkerpickError,
    "The eligibility mask excluded every worker."
);
create_exception!(
    workerpick,
    NoAcceptableWorkerError,
    WorkerpickError,
    "The selector declined every candidate."
);
create_exception!(
    workerpick,
    UnknownWorkerError,
    WorkerpickError,
    "A worker named by the caller is not in the set."
);
create_exception!(
    workerpick,
    DuplicateWorkerError,
    WorkerpickError,
    "A worker was inserted twice."
);
create_exception!(
    workerpick,
    UnknownSelectorError,
    WorkerpickError,
    "No mode or selector has that name."
);
create_exception!(
    workerpick,
    InvalidConfigError,
    WorkerpickError,
    "A configuration value or mode parameter is out of range."
);
create_exception!(
    workerpick,
    CapacityExceededError,
    WorkerpickError,
    "The set would exceed the pool's worker limit."
);
create_exception!(
    workerpick,
    LoadOverflowError,
    WorkerpickError,
    "Booking the weight would take a worker's load past 2**32 - 1."
);
create_exception!(
    workerpick,
    DrainingError,
    WorkerpickError,
    "The worker named is draining and takes no new reservation."
);

/// The Python exception for `err`, its message the crate's `Display`.
pub fn to_py(err: Error) -> PyErr {
    let msg = err.to_string();
    match err {
        Error::NoWorkers => NoWorkersError::new_err(msg),
        Error::NoEligibleWorker => NoEligibleWorkerError::new_err(msg),
        Error::NoAcceptableWorker => NoAcceptableWorkerError::new_err(msg),
        Error::UnknownWorker => UnknownWorkerError::new_err(msg),
        Error::DuplicateWorker => DuplicateWorkerError::new_err(msg),
        Error::UnknownSelector { .. } => UnknownSelectorError::new_err(msg),
        Error::InvalidConfig { .. } => InvalidConfigError::new_err(msg),
        Error::CapacityExceeded { .. } => CapacityExceededError::new_err(msg),
        Error::LoadOverflow => LoadOverflowError::new_err(msg),
        Error::Draining => DrainingError::new_err(msg),
        // Selector-name clashes need a custom registry, which this binding
        // does not expose; future variants land on the base class.
        _ => WorkerpickError::new_err(msg),
    }
}

/// `Result<T, Error>` into `PyResult<T>`.
pub trait IntoPy<T> {
    /// The value, or the Python exception for the error.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("WorkerpickError", py.get_type::<WorkerpickError>())?;
    m.add("NoWorkersError", py.get_type::<NoWorkersError>())?;
    m.add("NoEligibleWorkerError", py.get_type::<NoEligibleWorkerError>())?;
    m.add(
        "NoAcceptableWorkerError",
        py.get_type::<NoAcceptableWorkerError>(),
    )?;
    m.add("UnknownWorkerError", py.get_type::<UnknownWorkerError>())?;
    m.add("DuplicateWorkerError", py.get_type::<DuplicateWorkerError>())?;
    m.add("UnknownSelectorError", py.get_type::<UnknownSelectorError>())?;
    m.add("InvalidConfigError", py.get_type::<InvalidConfigError>())?;
    m.add("CapacityExceededError", py.get_type::<CapacityExceededError>())?;
    m.add("LoadOverflowError", py.get_type::<LoadOverflowError>())?;
    m.add("DrainingError", py.get_type::<DrainingError>())?;
    Ok(())
}
