#!/usr/bin/env bash
# The README's test command, then the optional serde feature's tests, then the
# simulator's invariants (its own package: the root's `cargo test` does not
# build it or its dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test
cargo test --all-features --test registry
cargo test -p workerpick-sim
