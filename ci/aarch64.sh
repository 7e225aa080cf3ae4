#!/usr/bin/env bash
# aarch64 gate: builds the crate for aarch64-unknown-linux-gnu and runs, under
# qemu-aarch64 (user-mode emulation), the library's unit tests (among them the scan
# tests that hold the NEON backend to the scalar reference, and their property
# tests) and the real-thread stress tests; then builds the library, without running
# it, for a 32-bit target (armv7-unknown-linux-gnueabihf: neither x86-64 nor aarch64,
# so the portable scan, and weakly ordered, 64-bit atomics through ldrexd/strexd).
#
# qemu runs the aarch64 code on the host's stronger memory ordering: this checks the
# logic and the instruction encodings, not ARM's weak memory model (the loom models
# cover the orderings).
#
# Installs what it needs: Debian's qemu-user and aarch64 cross gcc and libc (apt),
# and nightly's rust-src, since std is built from source (-Zbuild-std) rather than
# downloaded for each target. Host builds are untouched: the linker and runner go in
# environment variables, the builds in target/cross.
#
# Exits 0 with a plain SKIPPED line on a machine with neither the tools nor apt-get;
# non-zero when an install, a build or a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
sysroot=/usr/aarch64-linux-gnu
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null \
    || [ ! -e "$sysroot/lib/ld-linux-aarch64.so.1" ]; then
    if ! command -v apt-get >/dev/null; then
        echo "==> aarch64: SKIPPED: no qemu-aarch64/aarch64-linux-gnu-gcc and no apt-get to install them"
        exit 0
    fi
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "==> aarch64: installing qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross >/dev/null
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
rustup component add rust-src --toolchain nightly >/dev/null 2>&1
echo "==> aarch64: tools ready in $((SECONDS - start)) s: $(qemu-aarch64 --version | head -n 1); $(cargo +nightly --version)"

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L $sysroot"
cross=(+nightly -Zbuild-std)
dir=(--target-dir target/cross)
# The NEON kernel's tests whole, optimised as they always ran here (the test profile is
# opt-level 0, where a debug build samples them, for a fast cold `cargo test`).
export CARGO_PROFILE_TEST_OPT_LEVEL=1 WORKERPICK_EXHAUSTIVE=1

step=$SECONDS
cargo "${cross[@]}" test "${dir[@]}" --target aarch64-unknown-linux-gnu --lib --test stress --no-run
echo "==> aarch64: test build in $((SECONDS - step)) s"

step=$SECONDS
# Fails unless NEON is the default backend there (scan::tests::available_and_detect).
env -u WORKERPICK_SCAN cargo "${cross[@]}" test "${dir[@]}" --target aarch64-unknown-linux-gnu --lib --test stress
echo "==> aarch64: tests under qemu in $((SECONDS - step)) s"

step=$SECONDS
cargo "${cross[@]}" build "${dir[@]}" --target armv7-unknown-linux-gnueabihf --lib
echo "==> aarch64: armv7 library build in $((SECONDS - step)) s"
echo "==> aarch64: passed in $((SECONDS - start)) s"
