"""reserve + release through the binding against the plain-Python
least-loaded loop Python routers write (a dict of counters scanned per
request), at 8, 64 and 1024 workers: ns per request and the ratios, as
markdown table rows.

    python python/benches/reserve.py [SECONDS-PER-CASE (default 0.5)] [ROUNDS (default 3)]

Each case is timed on the thread's CPU clock (on a shared machine, time
spent waiting for a core is not the call's), the cases run one after the
other ROUNDS times, and each cell is the median of its rounds.
"""

import os
import statistics
import subprocess
import sys
import time

import workerpick


def per_op(fn, seconds):
    n, start = 0, time.thread_time()
    while True:
        for _ in range(200):
            fn()
        n += 200
        elapsed = time.thread_time() - start
        if elapsed >= seconds:
            return elapsed / n * 1e9


def plain_loop(counts):
    def request():
        best, best_load = None, None
        for w, load in counts.items():
            if best_load is None or load < best_load:
                best, best_load = w, load
        counts[best] += 1
        counts[best] -= 1

    return request


def plain_min(counts):
    def request():
        best = min(counts, key=counts.__getitem__)
        counts[best] += 1
        counts[best] -= 1

    return request


def binding(pool):
    def request():
        pool.reserve().release()

    return request


def binding_with(pool):
    def request():
        with pool.reserve():
            pass

    return request


def refuse(why):
    print(f"reserve.py: {why}", file=sys.stderr)
    sys.exit(2)


def argument(i, name, parse, low, high, default):
    if len(sys.argv) <= i:
        return default
    try:
        value = parse(sys.argv[i])
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        refuse(f"{name} must be a number from {low} to {high}, not {sys.argv[i]!r}")
    return value


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{model}, {os.cpu_count()} CPUs, load average {load}; commit {commit}, Python {sys.version.split()[0]}"


def main():
    if len(sys.argv) > 3:
        refuse(f"unexpected argument {sys.argv[3]!r}; usage: reserve.py [SECONDS-PER-CASE] [ROUNDS]")
    seconds = argument(1, "SECONDS-PER-CASE", float, 0.01, 60.0, 0.5)
    rounds = argument(2, "ROUNDS", int, 1, 99, 3)
    sizes = (8, 64, 1024)
    times = {(n, case): [] for n in sizes for case in ("loop", "min", "binding", "with")}
    for _ in range(rounds):
        for n in sizes:
            counts = {f"w{i}": 0 for i in range(n)}
            pool = workerpick.Pool([f"w{i}" for i in range(n)], mode="least-loaded")
            times[n, "loop"].append(per_op(plain_loop(counts), seconds))
            times[n, "min"].append(per_op(plain_min(counts), seconds))
            times[n, "binding"].append(per_op(binding(pool), seconds))
            times[n, "with"].append(per_op(binding_with(pool), seconds))
    print(
        "workerpick's Python binding (least-loaded reserve + release) vs plain-Python least-loaded: "
        f"ns per request, median of {rounds} rounds of {seconds} s a case (thread CPU time)"
    )
    print(f"machine: {machine()}")
    print()
    print("| workers | plain loop ns | plain `min()` ns | `reserve().release()` ns | `with reserve()` ns | loop / binding | `min()` / binding |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        loop, mn, b, bw = (statistics.median(times[n, c]) for c in ("loop", "min", "binding", "with"))
        print(f"| {n} | {loop:.0f} | {mn:.0f} | {b:.0f} | {bw:.0f} | {loop / b:.1f}× | {mn / b:.1f}× |")


if __name__ == "__main__":
    main()
