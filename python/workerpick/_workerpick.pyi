"""Type stubs for the compiled extension; see the package docstring."""

from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Literal, TypedDict, final

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

_WorkerId = int | str
_Mode = str | Selector

class _WorkerInfo(TypedDict):
    device: Literal["cpu", "accelerator"]
    group: int
    capacity: int

class _Summary(TypedDict):
    origin: int
    seq: int
    loads: list[tuple[_WorkerId, int]]

class _PoolStats(TypedDict):
    workers: int
    draining: int
    free_slots: int
    capacity: int
    fallbacks: int
    snapshots: int

def modes() -> list[str]:
    """Every mode name that resolves, canonical names in the library's order."""

@final
class Selector:
    """A mode resolved by name with its parameters: ``Selector("device-aware", cpu_ratio=4)``.

    Keep one per pool or router: a round-robin selector owns its cursor."""

    def __new__(cls, name: str, **params: int | str) -> Selector: ...
    @property
    def name(self) -> str:
        """The mode's canonical name."""

@final
class Eligibility:
    """Which workers a request may go to; made by ``Pool.eligibility``."""

    def __len__(self) -> int: ...

@final
class CacheHits:
    """Per-worker cache hits for the device-aware mode; made by ``Pool.cache_hits``."""

    @property
    def needed(self) -> int: ...

@final
class Reservation:
    """Load booked on a worker, given back exactly once: by ``release()``, on
    leaving a ``with`` block (also by an exception), or when collected."""

    @property
    def worker(self) -> _WorkerId: ...
    @property
    def weight(self) -> int: ...
    @property
    def released(self) -> bool: ...
    def release(self) -> bool:
        """Gives the load back; True the first time, False after."""
    def retarget(self, worker: _WorkerId) -> None:
        """Moves the booked load to ``worker``."""
    def __enter__(self) -> Reservation: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]: ...

@final
class Pool:
    """Workers with their in-flight load and the mode that picks among them.

    Safe to share between threads and asyncio tasks."""

    def __new__(
        cls,
        workers: Iterable[_WorkerId] | None = None,
        mode: _Mode | None = None,
        *,
        max_workers: int | None = None,
    ) -> Pool: ...
    @property
    def mode(self) -> str: ...
    def reserve(
        self,
        *,
        weight: int = 1,
        eligible: Eligibility | None = None,
        cache_hits: CacheHits | None = None,
        key: int | None = None,
        mode: _Mode | None = None,
    ) -> Reservation:
        """Books ``weight`` on the worker the mode picks; raises a ``WorkerpickError`` subclass if none.

        A ``mode`` given as a str is resolved on every call (a round-robin one
        starts over): pass a ``Selector`` to keep its state."""
    def reserve_worker(self, worker: _WorkerId, weight: int = 1) -> Reservation: ...
    def select(
        self,
        *,
        weight: int = 1,
        eligible: Eligibility | None = None,
        cache_hits: CacheHits | None = None,
        key: int | None = None,
        mode: _Mode | None = None,
    ) -> _WorkerId:
        """The worker a pick chooses, booking nothing."""
    def insert(
        self,
        worker: _WorkerId,
        *,
        device: Literal["cpu", "accelerator", "gpu", "tpu"] = "accelerator",
        group: int = 0,
        capacity: int = 1,
    ) -> None: ...
    def remove(self, worker: _WorkerId) -> None: ...
    def replace(self, workers: Iterable[_WorkerId]) -> None: ...
    def workers(self) -> list[_WorkerId]: ...
    def __len__(self) -> int: ...
    def __contains__(self, worker: _WorkerId, /) -> bool: ...
    def in_flight(self, worker: _WorkerId) -> int | None: ...
    def loads(self) -> dict[_WorkerId, int]: ...
    def info(self, worker: _WorkerId) -> _WorkerInfo | None: ...
    def set_capacity(self, worker: _WorkerId, capacity: int) -> None: ...
    def set_healthy(self, worker: _WorkerId, healthy: bool) -> bool: ...
    def is_healthy(self, worker: _WorkerId) -> bool | None: ...
    def drain(self, worker: _WorkerId) -> None: ...
    def resume(self, worker: _WorkerId) -> None: ...
    def is_draining(self, worker: _WorkerId) -> bool | None: ...
    def drained(self, worker: _WorkerId) -> bool | None: ...
    def report_load(self, worker: _WorkerId, load: int) -> bool: ...
    def report_loads(self, reports: Mapping[_WorkerId, int]) -> int: ...
    def reported_load(self, worker: _WorkerId) -> int | None: ...
    report_max_age: float
    def expire_reports(self) -> int: ...
    def summary(self) -> _Summary: ...
    def summary_bytes(self) -> bytes: ...
    def apply_summary(self, summary: _Summary | bytes | str) -> bool: ...
    def eligibility(self, workers: Iterable[_WorkerId] | Callable[[_WorkerId], bool]) -> Eligibility: ...
    def cache_hits(self, needed: int, held: Mapping[_WorkerId, int]) -> CacheHits: ...
    def stats(self) -> _PoolStats: ...

class WorkerpickError(Exception): ...
class NoWorkersError(WorkerpickError): ...
class NoEligibleWorkerError(WorkerpickError): ...
class NoAcceptableWorkerError(WorkerpickError): ...
class UnknownWorkerError(WorkerpickError): ...
class DuplicateWorkerError(WorkerpickError): ...
class UnknownSelectorError(WorkerpickError): ...
class InvalidConfigError(WorkerpickError): ...
class CapacityExceededError(WorkerpickError): ...
class LoadOverflowError(WorkerpickError): ...
class DrainingError(WorkerpickError): ...
