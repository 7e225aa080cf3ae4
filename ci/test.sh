#!/usr/bin/env bash
# The README's test command, then the optional serde feature's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test
cargo test --all-features --test registry
# The response-lifetime wrappers and the tower integration (feature-gated; no runtime).
cargo test --all-features --test hold --test route
cargo test --all-features --doc
# The proxy example's integration test: real loopback sockets, every mode (~5 s once built).
cargo test -p workerpick-proxy --release
