#!/usr/bin/env bash
# The README's test command, then the feature-gated tests (serde, futures,
# tower) and doctests, the proxy's loopback test, and the simulator's
# invariants (proxy and simulator are packages of their own: the root's
# `cargo test` does not build them or their dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test
cargo test --all-features --test registry --test reported
# The response-lifetime wrappers and the tower integration (feature-gated; no runtime), and
# the hyper glue on loopback (one short test).
cargo test --all-features --test hold --test route --test http
# Session bindings (feature `sessions`: the papaya map).
cargo test --all-features --test sessions
cargo test --all-features --doc
# The proxy's integration tests: real loopback sockets, every mode, and `serve` as a binary (~6 s once built).
cargo test -p workerpick-proxy --release
cargo test -p workerpick-sim
