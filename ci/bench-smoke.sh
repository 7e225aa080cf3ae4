#!/usr/bin/env bash
# Keeps the benchmarks from rotting: compiles every bench target, then runs
# each benchmark once (criterion's --test mode; the allocation bench still
# fails if any of our paths allocates). Measures nothing. Bench targets only
# (`--bench '*'`): the library's unit tests run in the test gate.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "+ cargo bench -p workerpick-benches --no-run --bench '*'"
cargo bench -p workerpick-benches --no-run --bench '*'
echo "+ cargo bench -p workerpick-benches --bench '*' -- --test"
cargo bench -p workerpick-benches --bench '*' -- --test
