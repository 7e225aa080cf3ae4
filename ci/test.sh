#!/usr/bin/env bash
# The README's test command, then the feature-gated tests (serde, futures,
# tower) and doctests, the proxy's loopback test, and the simulator's
# invariants (proxy, its NATS glue and simulator are packages of their own: the root's
# `cargo test` does not build them or their dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test
# The kernel tests' loops whole (a debug build samples them: `scan::tests::exhaustive`),
# on the binary just built.
WORKERPICK_EXHAUSTIVE=1 cargo test --lib -- scan::
# With every feature, the suite's modules that have feature-gated tests: serde round trips
# (registry, reported), the response-lifetime wrappers and the tower integration (hold,
# route), the hyper glue on loopback (http, ejection), session bindings (sessions) and the
# KV event decoder, applier and ZMQ subscriber against a loopback publisher (kv_events,
# kv_events_zmq), then fuzz_replay (its kv_events seeds). The other modules ran above: a
# feature adds API beside them and changes none of their paths (a module that gains a
# `cfg(feature)` test must join this list; `layout::feature_gated_modules_rerun` checks it).
cargo test --all-features --test suite -- ejection:: hold:: http:: kv_events registry:: reported:: route:: sessions::
cargo test --all-features --test fuzz_replay
cargo test --all-features --doc
# The proxy's integration tests: real loopback sockets, every mode, and `serve` as a binary (~6 s once built);
# tests/replicas.rs runs three replicas over a real NATS server: Debian's nats-server, installed here
# when missing (as root, or through sudo), and required: without it the test fails rather than skips
# (WORKERPICK_REQUIRE_NATS=0 lets it skip, on a machine that cannot install it).
if ! command -v nats-server >/dev/null && [ ! -x /usr/sbin/nats-server ] && command -v apt-get >/dev/null; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "==> test: installing nats-server"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends nats-server >/dev/null \
        || { "${sudo[@]}" apt-get update -qq \
             && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends nats-server >/dev/null; }
fi
export WORKERPICK_REQUIRE_NATS="${WORKERPICK_REQUIRE_NATS:-1}"
cargo test -p workerpick-proxy --release
cargo test -p workerpick-nats --release
# Optimised, as the proxy and NATS tests: the scenarios route hundreds of thousands of
# requests (a minute in the unoptimised test profile, 9 s here).
cargo test -p workerpick-sim --release
