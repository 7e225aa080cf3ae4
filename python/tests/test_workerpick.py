"""The binding's promises: exactly-once release on every path, thread and
asyncio safety, errors as exception classes, every mode by name."""

import asyncio
import gc
import json
import threading
import time

import pytest

import workerpick as wp


def idle(pool):
    return all(load == 0 for load in pool.loads().values())


def test_every_mode_by_name_reserves_and_releases():
    names = wp.modes()
    assert {"random", "round-robin", "least-loaded", "power-of-two", "device-aware"} <= set(names)
    for name in names:
        pool = wp.Pool(["a", "b", "c"], mode=name)
        assert pool.mode == name
        held = [pool.reserve() for _ in range(6)]
        assert all(r.worker in ("a", "b", "c") for r in held)
        assert sum(pool.loads().values()) == sum(r.weight for r in held)
        for r in held:
            assert r.release()
        assert idle(pool)
        # The same mode as a per-call override and as a Selector.
        with pool.reserve(mode=wp.Selector(name)) as r:
            assert r.worker in pool
        with pool.reserve(mode=name.upper().replace("-", "_")) as r:
            assert r.worker in pool


def test_context_manager_releases_exactly_once():
    pool = wp.Pool([1, 2])
    with pool.reserve(weight=7) as r:
        assert pool.in_flight(r.worker) == 7
        assert not r.released
    assert r.released
    assert idle(pool)
    assert r.release() is False  # already released: changes nothing
    assert idle(pool)
    # A released reservation still names its worker.
    assert r.worker in (1, 2) and r.weight == 7


def test_explicit_release_is_idempotent_inside_with():
    pool = wp.Pool(["x"])
    with pool.reserve(weight=3) as r:
        assert r.release() is True
        assert r.release() is False
        assert pool.in_flight("x") == 0
    assert pool.in_flight("x") == 0
    # Another reservation's load is untouched by a second release of the first.
    other = pool.reserve(weight=2)
    r.release()
    assert pool.in_flight("x") == 2
    other.release()


def test_exception_passes_through_and_releases():
    pool = wp.Pool(["a"])

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with pool.reserve(weight=4):
            assert pool.in_flight("a") == 4
            raise Boom()
    assert pool.in_flight("a") == 0


def test_garbage_collection_releases():
    pool = wp.Pool(["a"])
    pool.reserve(weight=5)  # dropped at once: refcount reaches zero
    assert pool.in_flight("a") == 0

    class Holder:
        pass

    h = Holder()
    h.me = h  # a cycle, freed only by the collector
    h.r = pool.reserve(weight=9)
    assert pool.in_flight("a") == 9
    del h
    gc.collect()
    assert pool.in_flight("a") == 0


def test_reservation_outlives_its_pool_object():
    pool = wp.Pool(["a"])
    r = pool.reserve()
    del pool
    gc.collect()
    assert r.release() is True  # the storage lives while the reservation does


def test_eligibility_weight_and_pinning():
    pool = wp.Pool(range(8), mode="least-loaded")
    mask = pool.eligibility({2, 5})
    assert len(mask) == 2
    held = [pool.reserve(eligible=mask, weight=10) for _ in range(4)]
    assert {r.worker for r in held} == {2, 5}
    assert pool.in_flight(2) == 20 and pool.in_flight(5) == 20
    odd = pool.eligibility(lambda w: w % 2 == 1)
    assert len(odd) == 4
    assert pool.select(eligible=odd) % 2 == 1
    pinned = pool.reserve_worker(7, weight=3)
    assert pinned.worker == 7 and pool.in_flight(7) == 3
    pinned.retarget(6)
    assert pool.in_flight(7) == 0 and pool.in_flight(6) == 3 and pinned.worker == 6
    for r in held + [pinned]:
        r.release()
    assert idle(pool)
    with pytest.raises(wp.NoEligibleWorkerError):
        pool.reserve(eligible=pool.eligibility([]))
    with pytest.raises(ZeroDivisionError):
        pool.eligibility(lambda w: 1 / 0)


def test_cache_hits_full_hit_books_nothing():
    pool = wp.Pool(["a", "b", "c"], mode="device-aware")
    hits = pool.cache_hits(4, {"b": 4, "c": 2})
    assert hits.needed == 4
    with pool.reserve(cache_hits=hits) as r:
        assert r.worker == "b"
        assert r.weight == 0


def test_capacity_health_and_draining():
    pool = wp.Pool()
    pool.insert("big", capacity=3)
    pool.insert("cpu", device="cpu", group=2)
    assert pool.info("big") == {"device": "accelerator", "group": 0, "capacity": 3}
    assert pool.info("cpu")["device"] == "cpu"
    assert pool.info("nope") is None
    pool.set_capacity("cpu", 2)
    assert pool.info("cpu")["capacity"] == 2
    assert pool.is_healthy("big") is True
    assert pool.set_healthy("big", False) is True
    assert pool.is_healthy("big") is False
    for _ in range(10):
        with pool.reserve() as r:
            assert r.worker == "cpu"
    pool.set_healthy("big", True)
    r = pool.reserve_worker("cpu")
    pool.drain("cpu")
    assert pool.is_draining("cpu") and pool.drained("cpu") is False
    with pytest.raises(wp.DrainingError):
        pool.reserve_worker("cpu")
    for _ in range(10):
        with pool.reserve() as x:
            assert x.worker == "big"
    r.release()
    assert pool.drained("cpu") is True
    pool.resume("cpu")
    assert pool.is_draining("cpu") is False
    pool.remove("cpu")
    assert "cpu" not in pool and len(pool) == 1


def test_reported_load_and_summaries():
    a = wp.Pool(["w1", "w2"])
    b = wp.Pool(["w1", "w2"])
    assert a.report_load("w1", 40) is True
    assert a.report_loads({"w2": 3, "ghost": 1}) == 1
    assert a.reported_load("w1") == 40
    a.report_max_age = 2.5
    assert a.report_max_age == 2.5
    assert a.expire_reports() == 0
    held = a.reserve_worker("w2", weight=6)
    s = a.summary()
    assert set(s) == {"origin", "seq", "loads"}
    assert ("w2", 6) in s["loads"]
    assert b.apply_summary(s) is True
    assert b.reported_load("w2") == 6
    assert b.loads()["w2"] == 0  # loads() is this router's own booking
    # The wire form: JSON bytes; an old or repeated summary is ignored.
    raw = a.summary_bytes()
    assert json.loads(raw)["seq"] == s["seq"] + 1
    assert b.apply_summary(raw) is True
    assert b.apply_summary(raw) is False
    held.release()
    assert b.apply_summary(a.summary_bytes()) is True
    assert b.reported_load("w2") == 0
    with pytest.raises(ValueError):
        b.apply_summary(b"not json")


def test_errors_are_exception_classes_with_the_library_message():
    with pytest.raises(wp.NoWorkersError, match="insert workers before picking"):
        wp.Pool().reserve()
    pool = wp.Pool(["a"], max_workers=1)
    with pytest.raises(wp.CapacityExceededError, match="at most 1"):
        pool.insert("b")
    with pytest.raises(wp.DuplicateWorkerError):
        pool.replace(["a", "a"])
    with pytest.raises(wp.UnknownWorkerError):
        pool.remove("zzz")
    with pytest.raises(wp.UnknownSelectorError, match="round-robin"):
        wp.Pool(["a"], mode="fastest")
    with pytest.raises(wp.InvalidConfigError):
        wp.Selector("device-aware", cpu_ratio=0)
    with pytest.raises(wp.InvalidConfigError):
        wp.Pool(max_workers=0)
    with pytest.raises(wp.LoadOverflowError):
        held = pool.reserve(weight=2**32 - 1)
        pool.reserve(weight=1)
    held.release()
    with pytest.raises(TypeError):
        pool.reserve_worker(1.5)
    for cls in (wp.NoWorkersError, wp.DrainingError, wp.LoadOverflowError):
        assert issubclass(cls, wp.WorkerpickError)
    assert wp.Selector("p2c").name == "power-of-two"
    assert wp.Selector("device-aware", cpu_ratio=4).name == "device-aware"


def test_threads_stress():
    pool = wp.Pool(range(16), mode="power-of-two")
    deadline = time.monotonic() + 1.0
    errors = []

    def worker():
        try:
            n = 0
            while time.monotonic() < deadline:
                with pool.reserve(weight=3) as r:
                    assert pool.in_flight(r.worker) >= 3
                r2 = pool.reserve(mode="least-loaded")
                r2.release()
                r2.release()
                n += 1
                if n % 500 == 0:
                    pool.replace(range(16))  # a membership change meanwhile
        except Exception as e:  # reported to the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not errors
    assert not any(t.is_alive() for t in threads)
    assert idle(pool)


def test_asyncio_tasks_hold_reservations_across_awaits():
    pool = wp.Pool(["a", "b", "c", "d"], mode="least-loaded")
    peak = 0

    async def request(i):
        nonlocal peak
        with pool.reserve(weight=1 + i % 3):
            peak = max(peak, sum(pool.loads().values()))
            await asyncio.sleep(0.001)

    async def main():
        await asyncio.gather(*(request(i) for i in range(200)))

    asyncio.run(main())
    assert peak > 4  # many were in flight at once
    assert idle(pool)


def test_concurrent_releases_release_once():
    pool = wp.Pool(["a"])
    for _ in range(50):
        r = pool.reserve(weight=2)
        other = pool.reserve(weight=1)
        barrier = threading.Barrier(4)
        results = []

        def release():
            barrier.wait()
            results.append(r.release())

        threads = [threading.Thread(target=release) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        assert sorted(results) == [False, False, False, True]
        assert pool.in_flight("a") == 1  # the other reservation's load is intact
        other.release()
