"""Lock-free worker selection for routers: every workerpick mode, from Python.

    import workerpick
    pool = workerpick.Pool(["gpu-0", "gpu-1"], mode="least-loaded")
    with pool.reserve(weight=512) as r:
        send(r.worker)          # the load is given back when the block ends

Reservations are released exactly once: by ``release()``, by leaving the
``with`` block (an exception included), or when garbage-collected. A ``Pool``
is safe to share between threads and asyncio tasks.
"""

from ._workerpick import (
    CacheHits,
    CapacityExceededError,
    DrainingError,
    DuplicateWorkerError,
    Eligibility,
    InvalidConfigError,
    LoadOverflowError,
    NoAcceptableWorkerError,
    NoEligibleWorkerError,
    NoWorkersError,
    Pool,
    Reservation,
    Selector,
    UnknownSelectorError,
    UnknownWorkerError,
    WorkerpickError,
    modes,
)

__all__ = [
    "CacheHits",
    "CapacityExceededError",
    "DrainingError",
    "DuplicateWorkerError",
    "Eligibility",
    "InvalidConfigError",
    "LoadOverflowError",
    "NoAcceptableWorkerError",
    "NoEligibleWorkerError",
    "NoWorkersError",
    "Pool",
    "Reservation",
    "Selector",
    "UnknownSelectorError",
    "UnknownWorkerError",
    "WorkerpickError",
    "modes",
]
