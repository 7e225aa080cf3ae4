#!/usr/bin/env bash
# Loom gate: builds the library against loom's primitives (`--cfg loom`) and
# explores every interleaving of the models in loom-tests/tests/ up to a
# preemption bound. Extra arguments go to the test binaries' harness (e.g. a
# test name filter, or `--nocapture` to see each model's iteration count).
#
#   LOOM_MAX_PREEMPTIONS  preemption bound (default here: 3)
#   LOOM_TARGET_DIR       target directory (default: target/loom; changing
#                         RUSTFLAGS rebuilds everything, so keep it separate)
set -euo pipefail
cd "$(dirname "$0")/.."

export RUSTFLAGS="--cfg loom${RUSTFLAGS:+ $RUSTFLAGS}"
export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"

echo "==> loom: RUSTFLAGS='$RUSTFLAGS' CARGO_TARGET_DIR=$CARGO_TARGET_DIR LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS"
echo "==> loom: cargo test -p loom-tests --release --tests --no-fail-fast -- $*"
start=$SECONDS
cargo test -p loom-tests --release --tests --no-fail-fast -- "$@"
echo "==> loom: all models passed in $((SECONDS - start)) s"
