#!/usr/bin/env bash
# The C ABI's reserve + release against the same Rust calls, side by side:
# prints mode/workers, ns per request from C and from Rust, and the ratio.
# Usage: capi/bench.sh [milliseconds-per-case]. On a shared machine, run it
# twice and read the ratios, not the digits.
set -euo pipefail
cd "$(dirname "$0")"
ms=${1:-300}
cargo build --release --quiet --lib --example rust_baseline
cc -std=c11 -O2 -Iinclude tests/bench.c target/release/libworkerpick_c.a -lpthread -ldl -lm -o target/bench_c
./target/bench_c "$ms" >target/bench_c.txt
./target/release/examples/rust_baseline "$ms" >target/bench_rust.txt
echo "C ABI reserve + release vs Rust (ns per request, ${ms} ms a case)"
join target/bench_c.txt target/bench_rust.txt |
    awk '{ printf "%-18s C %7.1f  Rust %7.1f  C/Rust %.2fx\n", $1, $2, $3, $2 / $3 }'
