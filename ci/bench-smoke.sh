#!/usr/bin/env bash
# Keeps the benchmarks from rotting: compiles every bench target, then runs
# each benchmark once (criterion's --test mode; the allocation bench still
# fails if any of our paths allocates). Measures nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "+ cargo bench --no-run"
cargo bench --no-run
echo "+ cargo bench --benches -- --test"
cargo bench --benches -- --test
