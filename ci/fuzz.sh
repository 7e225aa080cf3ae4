#!/usr/bin/env bash
# Fuzz gate: runs each cargo-fuzz target in fuzz/ (FUZZ_TARGETS, default all seven)
# for FUZZ_SECONDS (default 10) on nightly with AddressSanitizer. Without a nightly
# toolchain it says so and fuzzes on stable without sanitizers (`-s none`); it never
# skips. A crash (or a hang past 10 s) fails the gate, and the log carries the
# reproducer: cargo-fuzz prints the decoded input and the command to rerun it, and
# this script adds the raw input in base64
# (`base64 -d > crash <<< '...' && cargo +nightly fuzz run TARGET crash`).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${FUZZ_SECONDS:-10}
cargo_fuzz_version=0.13.2
read -r -a targets <<< "${FUZZ_TARGETS:-scan ops concurrent summary ranks prefix kv_events}"

if cargo fuzz --version 2>/dev/null | grep -qF "cargo-fuzz $cargo_fuzz_version"; then
    echo "using $(cargo fuzz --version)"
else
    echo "installing cargo-fuzz $cargo_fuzz_version"
    cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked
fi

if version=$(cargo +nightly --version 2>&1); then
    toolchain=(+nightly)
    sanitizer=()
    echo "fuzzing on $version with AddressSanitizer"
else
    toolchain=()
    sanitizer=(-s none)
    echo "NOTE: no usable nightly toolchain (\`cargo +nightly --version\` said: $version)"
    echo "NOTE: fuzzing on stable $(cargo --version) WITHOUT sanitizers (-s none)"
fi
# Without comparison tracing the targets run several times faster (the scan's
# per-lane compares dominate otherwise); their inputs are structured by
# `arbitrary`, so the fuzzer needs little help solving comparisons.
# `kv-events`: the KV event decoder's target, off in the fuzz crate by default.
flags=(--no-trace-compares --features kv-events)

cargo "${toolchain[@]}" fuzz build "${sanitizer[@]}" "${flags[@]}"

for target in "${targets[@]}"; do
    echo "=== fuzz target $target: ${secs} s, corpus fuzz/corpus/$target"
    rm -rf "fuzz/artifacts/$target"
    if ! cargo "${toolchain[@]}" fuzz run "${sanitizer[@]}" "${flags[@]}" "$target" -- \
        -max_total_time="$secs" -timeout=10 -print_final_stats=1; then
        echo "=== fuzz target $target FAILED"
        for input in "fuzz/artifacts/$target"/*; do
            [ -f "$input" ] || continue
            echo "reproducer $input, base64:"
            base64 -w0 "$input"
            echo
        done
        exit 1
    fi
done
echo "=== fuzz: every target ran ${secs} s without a failure"
