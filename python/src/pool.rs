//! `Pool`: the crate's `Pool` over `int`/`str` worker ids, shared by every
//! Python thread and task.

use crate::error::IntoPy;
use crate::inputs::{CacheHits, Eligibility};
use crate::reservation::Reservation;
use crate::selector;
use crate::summary;
use crate::worker::WorkerId;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMapping};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use workerpick::{DeviceKind, OwnedHandle, Request, WorkerInfo};

/// Handles kept for reuse; more are made when more threads pick at once.
const SPARE_HANDLES: usize = 64;

/// A set of workers with their in-flight load, and the mode that picks
/// among them.
#[pyclass(module = "workerpick", frozen)]
pub struct Pool {
    pool: Arc<workerpick::Pool<WorkerId>>,
    selector: Arc<dyn workerpick::Selector>,
    /// Picking handles (they cache the worker-set snapshot) lent to one
    /// call at a time, so that concurrent callers never share one.
    handles: Mutex<Vec<OwnedHandle<WorkerId>>>,
}

impl Pool {
    fn with_handle<R>(&self, pick: impl FnOnce(&mut OwnedHandle<WorkerId>) -> R) -> R {
        let spare = self.handles.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut handle = spare.unwrap_or_else(|| self.pool.owned_handle());
        let out = pick(&mut handle);
        let mut spares = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if spares.len() < SPARE_HANDLES {
            spares.push(handle);
        }
        out
    }

    fn selector_for(&self, mode: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<dyn workerpick::Selector>> {
        match mode {
            None => Ok(self.selector.clone()),
            Some(mode) => selector::resolve(mode),
        }
    }
}

fn ids(workers: &Bound<'_, PyAny>) -> PyResult<Vec<WorkerId>> {
    if workers.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyTypeError::new_err("workers is an iterable of ids, not a str"));
    }
    workers.try_iter()?.map(|w| WorkerId::extract(&w?)).collect()
}

fn device(name: &str) -> PyResult<DeviceKind> {
    match name.to_ascii_lowercase().as_str() {
        "cpu" => Ok(DeviceKind::Cpu),
        "accelerator" | "gpu" | "tpu" => Ok(DeviceKind::Accelerator),
        _ => Err(PyValueError::new_err(format!(
            "device is \"cpu\" or \"accelerator\", got {name:?}"
        ))),
    }
}

/// Builds the request from the keyword arguments every pick takes, and runs
/// `f` on it.
fn with_request<R>(
    weight: u32,
    eligible: Option<&Bound<'_, Eligibility>>,
    cache_hits: Option<&Bound<'_, CacheHits>>,
    key: Option<u64>,
    f: impl FnOnce(&Request<'_>) -> R,
) -> R {
    let mut request = Request::new().weight(weight);
    if let Some(mask) = eligible {
        request = request.eligible(&mask.get().inner);
    }
    if let Some(hits) = cache_hits {
        request = request.cache_hits(&hits.get().inner);
    }
    if let Some(key) = key {
        request = request.key(key);
    }
    f(&request)
}

#[pymethods]
impl Pool {
    /// `Pool(workers, mode="least-loaded", *, max_workers=None)`: a pool
    /// holding `workers` (ints or strs, no repeats), picking by `mode` (a
    /// name from `workerpick.modes()` or a `Selector`).
    #[new]
    #[pyo3(signature = (workers = None, mode = None, *, max_workers = None))]
    fn new(
        py: Python<'_>,
        workers: Option<&Bound<'_, PyAny>>,
        mode: Option<&Bound<'_, PyAny>>,
        max_workers: Option<usize>,
    ) -> PyResult<Self> {
        let selector = match mode {
            Some(mode) => selector::resolve(mode)?,
            None => workerpick::Mode::LeastLoaded.selector(),
        };
        let pool = match max_workers {
            Some(max) => workerpick::Pool::with_max_workers(max).py()?,
            None => workerpick::Pool::new(),
        };
        if let Some(workers) = workers {
            let workers = ids(workers)?;
            py.detach(|| pool.replace(workers)).py()?;
        }
        Ok(Self {
            pool: Arc::new(pool),
            selector,
            handles: Mutex::new(Vec::new()),
        })
    }

    /// The pool's mode, by canonical name.
    #[getter]
    fn mode(&self) -> &str {
        self.selector.name()
    }

    /// Books `weight` on a worker chosen by the pool's mode (or `mode`)
    /// among the `eligible` ones, and returns the reservation that gives it
    /// back. `cache_hits` feeds the device-aware mode; `key` is the request
    /// key for selectors that use one. A `mode` given as a str is resolved
    /// on every call (a round-robin one starts over each time): pass a
    /// `Selector` to keep its state.
    #[pyo3(signature = (*, weight = 1, eligible = None, cache_hits = None, key = None, mode = None))]
    fn reserve(
        &self,
        weight: u32,
        eligible: Option<&Bound<'_, Eligibility>>,
        cache_hits: Option<&Bound<'_, CacheHits>>,
        key: Option<u64>,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Reservation> {
        // The GIL stays held: a pick takes tens of nanoseconds, less than
        // releasing and retaking it.
        let selector = self.selector_for(mode)?;
        let held = with_request(weight, eligible, cache_hits, key, |req| {
            self.with_handle(|h| h.reserve_with(&*selector, req))
        });
        held.map(Reservation::new).py()
    }

    /// Books `weight` on `worker` itself.
    #[pyo3(signature = (worker, weight = 1))]
    fn reserve_worker(&self, worker: &Bound<'_, PyAny>, weight: u32) -> PyResult<Reservation> {
        let worker = WorkerId::extract(worker)?;
        self.with_handle(|h| h.reserve_worker(&worker, weight))
            .map(Reservation::new)
            .py()
    }

    /// The worker a pick chooses, booking nothing (random and round-robin
    /// still advance).
    #[pyo3(signature = (*, weight = 1, eligible = None, cache_hits = None, key = None, mode = None))]
    fn select<'py>(
        &self,
        py: Python<'py>,
        weight: u32,
        eligible: Option<&Bound<'_, Eligibility>>,
        cache_hits: Option<&Bound<'_, CacheHits>>,
        key: Option<u64>,
        mode: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let selector = self.selector_for(mode)?;
        let picked = with_request(weight, eligible, cache_hits, key, |req| {
            self.with_handle(|h| h.select_with(&*selector, req).map(|w| w.to_py(py)))
        });
        picked.py()
    }

    /// Adds `worker`: `device` is "accelerator" (the default) or "cpu",
    /// `group` a number of your choosing, `capacity` its relative weight.
    #[pyo3(signature = (worker, *, device = "accelerator", group = 0, capacity = 1))]
    fn insert(&self, worker: &Bound<'_, PyAny>, device: &str, group: u32, capacity: u32) -> PyResult<()> {
        let info = WorkerInfo::new()
            .device(self::device(device)?)
            .group(group)
            .capacity(capacity);
        self.pool.insert_with(WorkerId::extract(worker)?, info).py()
    }

    /// Removes `worker`; its live reservations stay valid.
    fn remove(&self, worker: &Bound<'_, PyAny>) -> PyResult<()> {
        self.pool.remove(&WorkerId::extract(worker)?).py()
    }

    /// Replaces the set with `workers`; those that stay keep their load.
    fn replace(&self, py: Python<'_>, workers: &Bound<'_, PyAny>) -> PyResult<()> {
        let workers = ids(workers)?;
        py.detach(|| self.pool.replace(workers)).py()
    }

    /// The worker ids, in set order (draining ones last).
    fn workers<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyAny>> {
        self.pool.loads().iter().map(|(w, _)| w.to_py(py)).collect()
    }

    fn __len__(&self) -> usize {
        self.pool.len()
    }

    fn __contains__(&self, worker: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.pool.contains(&WorkerId::extract(worker)?))
    }

    /// `worker`'s booked load, or None if it is not in the set.
    fn in_flight(&self, worker: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
        Ok(self.pool.in_flight(&WorkerId::extract(worker)?))
    }

    /// Every worker's load booked through this pool (reported load is apart:
    /// see `reported_load`).
    fn loads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let loads = py.detach(|| self.pool.loads());
        let out = PyDict::new(py);
        for (w, load) in loads {
            out.set_item(w.to_py(py), load)?;
        }
        Ok(out)
    }

    /// `worker`'s attributes as a dict (device, group, capacity), or None.
    fn info<'py>(&self, py: Python<'py>, worker: &Bound<'_, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(info) = self.pool.info(&WorkerId::extract(worker)?) else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        let kind = match info.device_kind() {
            DeviceKind::Cpu => "cpu",
            _ => "accelerator",
        };
        out.set_item("device", kind)?;
        out.set_item("group", info.group_id())?;
        out.set_item("capacity", info.capacity_weight())?;
        Ok(Some(out))
    }

    /// Sets `worker`'s capacity weight (1 to 65536).
    fn set_capacity(&self, worker: &Bound<'_, PyAny>, capacity: u32) -> PyResult<()> {
        self.pool.set_capacity(&WorkerId::extract(worker)?, capacity).py()
    }

    /// Marks `worker` healthy or not; returns whether that changed anything.
    fn set_healthy(&self, worker: &Bound<'_, PyAny>, healthy: bool) -> PyResult<bool> {
        self.pool.set_healthy(&WorkerId::extract(worker)?, healthy).py()
    }

    /// Whether `worker` is healthy, or None if it is not in the set.
    fn is_healthy(&self, worker: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
        Ok(self.pool.is_healthy(&WorkerId::extract(worker)?))
    }

    /// Stops new picks of `worker`; its reservations run on.
    fn drain(&self, worker: &Bound<'_, PyAny>) -> PyResult<()> {
        self.pool.drain(&WorkerId::extract(worker)?).py()
    }

    /// Ends `worker`'s drain.
    fn resume(&self, worker: &Bound<'_, PyAny>) -> PyResult<()> {
        self.pool.resume(&WorkerId::extract(worker)?).py()
    }

    /// Whether `worker` is draining, or None if it is not in the set.
    fn is_draining(&self, worker: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
        Ok(self.pool.is_draining(&WorkerId::extract(worker)?))
    }

    /// Whether draining `worker` has no reservation left, or None.
    fn drained(&self, worker: &Bound<'_, PyAny>) -> PyResult<Option<bool>> {
        Ok(self.pool.drained(&WorkerId::extract(worker)?))
    }

    /// Records the load `worker` reports of itself (a queue length, KV-cache
    /// use); returns False if it is not in the set.
    fn report_load(&self, worker: &Bound<'_, PyAny>, load: u32) -> PyResult<bool> {
        Ok(self.pool.report_load(&WorkerId::extract(worker)?, load))
    }

    /// Records many reports from a `{worker: load}` mapping; returns how
    /// many workers were in the set.
    fn report_loads(&self, py: Python<'_>, reports: &Bound<'_, PyMapping>) -> PyResult<usize> {
        let reports = reports
            .items()?
            .iter()
            .map(|item| {
                let (w, load): (Bound<'_, PyAny>, u32) = item.extract()?;
                Ok((WorkerId::extract(&w)?, load))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(py.detach(|| self.pool.report_loads(reports.iter().map(|(w, l)| (w, *l)))))
    }

    /// The load `worker` last reported, if fresh.
    fn reported_load(&self, worker: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
        Ok(self.pool.reported_load(&WorkerId::extract(worker)?))
    }

    /// How long reports and peers' summaries count, in seconds.
    #[getter]
    fn report_max_age(&self) -> f64 {
        self.pool.report_max_age().as_secs_f64()
    }

    #[setter]
    fn set_report_max_age(&self, seconds: f64) -> PyResult<()> {
        let age = Duration::try_from_secs_f64(seconds)
            .map_err(|_| PyValueError::new_err("report_max_age is a non-negative number of seconds"))?;
        self.pool.set_report_max_age(age);
        Ok(())
    }

    /// Drops reports older than `report_max_age`; returns how many.
    fn expire_reports(&self) -> usize {
        self.pool.expire_reports()
    }

    /// What this router has booked, for its peers: a dict with `origin`,
    /// `seq` and `loads` (a list of `(worker, load)`).
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        summary::to_dict(py, &py.detach(|| self.pool.summary()))
    }

    /// The same summary as JSON bytes, to send over a message bus.
    fn summary_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| serde_json::to_vec(&self.pool.summary()));
        let bytes = bytes.map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Applies a peer's summary (a dict from `summary()` or bytes from
    /// `summary_bytes()`); returns False for an old or own one.
    fn apply_summary(&self, py: Python<'_>, summary: &Bound<'_, PyAny>) -> PyResult<bool> {
        let summary = summary::from_py(py, summary)?;
        Ok(py.detach(|| self.pool.apply_summary(&summary)))
    }

    /// A mask admitting the current workers in `workers` (an iterable of
    /// ids) or those for which `workers(id)` is true (a callable).
    fn eligibility(&self, workers: &Bound<'_, PyAny>) -> PyResult<Eligibility> {
        let py = workers.py();
        if workers.is_callable() {
            let mut failed = None;
            let inner = self.pool.eligibility(|w| {
                if failed.is_some() {
                    return false;
                }
                match workers.call1((w.to_py(py),)).and_then(|r| r.is_truthy()) {
                    Ok(admit) => admit,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            });
            return match failed {
                Some(e) => Err(e),
                None => Ok(Eligibility { inner }),
            };
        }
        let admit: HashSet<WorkerId> = ids(workers)?.into_iter().collect();
        let inner = py.detach(|| self.pool.eligibility(|w| admit.contains(w)));
        Ok(Eligibility { inner })
    }

    /// Cache hits for the device-aware mode: the request needs `needed`
    /// keys and worker `w` holds `held[w]` of them (workers absent hold none).
    fn cache_hits(&self, needed: u32, held: &Bound<'_, PyMapping>) -> PyResult<CacheHits> {
        let held = held
            .items()?
            .iter()
            .map(|item| {
                let (w, n): (Bound<'_, PyAny>, u32) = item.extract()?;
                Ok((WorkerId::extract(&w)?, n))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut inner = workerpick::CacheHits::new();
        inner.rebuild_sparse(&self.pool, needed, held.iter().map(|(w, n)| (w, *n)));
        Ok(CacheHits { inner })
    }

    /// Storage counters as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.pool.stats();
        let out = PyDict::new(py);
        out.set_item("workers", s.workers)?;
        out.set_item("draining", s.draining)?;
        out.set_item("free_slots", s.free_slots)?;
        out.set_item("capacity", s.capacity)?;
        out.set_item("fallbacks", s.fallbacks)?;
        out.set_item("snapshots", s.snapshots)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!(
            "Pool({} workers, mode={:?})",
            self.pool.len(),
            self.selector.name()
        )
    }
}
