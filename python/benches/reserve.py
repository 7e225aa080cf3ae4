"""reserve + release through the binding against the plain-Python
least-loaded loop Python routers write (a dict of counters scanned per
request), at 8, 64 and 1024 workers. Prints ns per request and the ratios.

    python python/benches/reserve.py [seconds-per-case]

Short runs on a shared machine are noisy: read the ratios, not the digits.
"""

import sys
import time

import workerpick


def per_op(fn, seconds):
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(200):
            fn()
        n += 200
        elapsed = time.perf_counter() - start
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


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    print(f"workerpick Python binding vs plain Python least-loaded ({seconds} s a case, ns per request)")
    print(f"{'workers':>8} {'py loop':>10} {'py min()':>10} {'binding':>10} {'with':>10} {'loop/binding':>13} {'min/binding':>12}")
    for n in (8, 64, 1024):
        counts = {f"w{i}": 0 for i in range(n)}
        pool = workerpick.Pool([f"w{i}" for i in range(n)], mode="least-loaded")
        loop = per_op(plain_loop(counts), seconds)
        mn = per_op(plain_min(counts), seconds)
        b = per_op(binding(pool), seconds)
        bw = per_op(binding_with(pool), seconds)
        print(f"{n:>8} {loop:>10.0f} {mn:>10.0f} {b:>10.0f} {bw:>10.0f} {loop / b:>12.1f}x {mn / b:>11.1f}x")


if __name__ == "__main__":
    main()
