#!/usr/bin/env bash
# Miri gate: runs the library's unit tests, and the real-thread stress tests
# (which shrink to a few rounds under Miri), on the Miri interpreter, which
# checks every unsafe block and atomic access for undefined behaviour and
# data races. The least-loaded scan runs its scalar path under Miri.
#
# Exits 0 with a plain SKIPPED line when the nightly Miri component cannot be
# installed (offline machine, no nightly); non-zero when Miri finds UB.
#
#   MIRI_TESTS  integration test binaries to run besides --lib (default: "stress")
#   MIRI_SUITE  modules of the integration suite (tests/suite) to run (default: "owned::")
#   MIRI_SKIP   test names to skip: statistical tests that loop thousands of
#               times over code the other tests already cover (default below)
#   MIRIFLAGS   passed through (default: none; e.g. -Zmiri-many-seeds=0..8)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1; then
    echo "==> miri: SKIPPED: could not install the nightly 'miri' and 'rust-src' components"
    echo "    (try: rustup toolchain install nightly && rustup component add miri rust-src --toolchain nightly)"
    exit 0
fi
echo "==> miri: $(cargo +nightly miri --version 2>/dev/null || echo 'miri (version unknown)')"
start=$SECONDS
cargo +nightly miri setup >/dev/null 2>&1 || cargo +nightly miri setup

tests=()
for t in ${MIRI_TESTS-stress}; do
    tests+=(--test "$t")
done
skip=()
for t in ${MIRI_SKIP-least_loaded_breaks_ties_uniformly random_is_uniform}; do
    skip+=(--skip "$t")
done
echo "==> miri: MIRIFLAGS='${MIRIFLAGS:-}' cargo +nightly miri test -p workerpick --lib ${tests[*]} -- ${skip[*]}"
cargo +nightly miri test -p workerpick --lib "${tests[@]}" -- "${skip[@]}"
suite=${MIRI_SUITE-owned::}
if [ -n "$suite" ]; then
    echo "==> miri: cargo +nightly miri test -p workerpick --test suite -- $suite"
    # shellcheck disable=SC2086
    cargo +nightly miri test -p workerpick --test suite -- $suite
fi
echo "==> miri: no undefined behaviour found ($((SECONDS - start)) s)"
