#!/usr/bin/env bash
# The C ABI's reserve + release against the same Rust calls, side by side:
# per mode/workers, ns per request through the C ABI (tests/bench.c) and
# from Rust (examples/rust_baseline.rs), and their ratio, printed as markdown
# table rows. The two programs run alternately ROUNDS times and each cell is
# the median of its runs, so that a shared machine's load falls on both
# sides alike.
# Usage: capi/bench.sh [MS-PER-CASE (default 300)] [ROUNDS (default 5)]
set -euo pipefail
cd "$(dirname "$0")"
ms=${1:-300}
rounds=${2:-5}
if ! [[ $ms =~ ^[1-9][0-9]{0,4}$ && $ms -le 60000 ]]; then
    echo "bench.sh: MS-PER-CASE must be a whole number from 1 to 60000, not '$ms'" >&2
    exit 2
fi
if ! [[ $rounds =~ ^[1-9][0-9]?$ ]]; then
    echo "bench.sh: ROUNDS must be a whole number from 1 to 99, not '$rounds'" >&2
    exit 2
fi
cargo build --release --quiet --lib --example rust_baseline
cc -std=c11 -O2 -Iinclude tests/bench.c target/release/libworkerpick_c.a -lpthread -ldl -lm -o target/bench_c
: >target/bench_c.txt
: >target/bench_rust.txt
load=$(cut -d' ' -f1-3 /proc/loadavg)
for _ in $(seq "$rounds"); do
    ./target/bench_c "$ms" >>target/bench_c.txt
    ./target/release/examples/rust_baseline "$ms" >>target/bench_rust.txt
done
# The median of each case's runs, in the programs' order of cases.
median() {
    awk '{ if (!($1 in n)) order[++cases] = $1; v[$1, ++n[$1]] = $2 }
         END {
             for (c = 1; c <= cases; c++) {
                 k = order[c]
                 for (i = 1; i <= n[k]; i++) s[i] = v[k, i]
                 for (i = 2; i <= n[k]; i++)
                     for (j = i; j > 1 && s[j - 1] > s[j]; j--) { t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
                 m = n[k] % 2 ? s[(n[k] + 1) / 2] : (s[n[k] / 2] + s[n[k] / 2 + 1]) / 2
                 print k, m
             }
         }' "$1"
}
cpu=$(lscpu | sed -n 's/^Model name: *//p')
echo "C ABI reserve + release vs Rust: ns per request, median of $rounds alternating runs of ${ms} ms a case"
echo "machine: $cpu, $(nproc) CPUs, load average $load (before) $(cut -d' ' -f1-3 /proc/loadavg) (after);" \
    "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ../src ../Cargo.toml || echo ' + changes')"
echo
echo "| mode/workers | C ABI ns | Rust ns | C / Rust |"
echo "|---|---:|---:|---:|"
join <(median target/bench_c.txt) <(median target/bench_rust.txt) |
    awk '{ printf "| %s | %.1f | %.1f | %.2f× |\n", $1, $2, $3, $2 / $3 }'
