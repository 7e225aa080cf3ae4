#!/usr/bin/env bash
# Runs the benchmark suite on this machine and regenerates BENCHMARKS.md from
# its results (criterion's JSON and the allocation counts): no number in
# BENCHMARKS.md is typed by hand. Beside it the report writes the least-loaded
# scaling plot, benches/least-loaded-scaling.svg (relative to the report's
# folder, so a WORKERPICK_REPORT_OUT run leaves the committed one alone). The peers (benches/peers: pingora, tower) run
# in the same run; pingora's zlib-ng (libz-ng-sys, through flate2) builds with
# cmake, which this script installs with apt-get when it is missing.
# Instruction counts are not re-measured here: the report quotes the callgrind
# gate's (iai/budgets.toml, ci/iai-update.sh).
#
#   ci/bench-report.sh                 full run (~10 min on 2 busy cores), then the report
#   ci/bench-report.sh --render-only   rebuild BENCHMARKS.md from the last run's results
#   ci/bench-report.sh -- ARGS         pass ARGS to the criterion binaries
#
# Knobs (environment; the report records them with the command):
#   WORKERPICK_BENCH_THREADS=1,2       thread counts (1,2,4,8,16 on a machine with more cores)
#   WORKERPICK_BENCH_PASSES=3          passes of the target benchmarks
#   WORKERPICK_BENCH_MS=600            measurement time per benchmark, ms
#   WORKERPICK_BENCH_SAMPLES=50        samples per benchmark (at least 10)
#   WORKERPICK_REPORT_OUT=FILE         write the report there instead of BENCHMARKS.md
# A smoke run of the whole pipeline (under a minute once built):
#   WORKERPICK_BENCH_PASSES=1 WORKERPICK_BENCH_MS=20 WORKERPICK_BENCH_SAMPLES=10 \
#       WORKERPICK_REPORT_OUT=target/bench-report/smoke.md ci/bench-report.sh
#
# The benchmarks the targets are judged on (ours through the Handle, the
# floor primitives, the scan alone) run in several passes: the first with the
# whole suite, the others after the thread, peer and owned runs, minutes
# apart. Each pass is a criterion baseline (target/criterion/**/passK); the
# report judges the targets on the lowest of the passes' medians and lists them
# all. On this shared machine interference only adds time, and it comes in
# phases longer than one benchmark, so one pass can land in a slow phase.
set -euo pipefail
cd "$(dirname "$0")/.."

render_only=0
crit_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --render-only) render_only=1 ;;
        --) shift; crit_args=("$@"); break ;;
        *) echo "usage: $0 [--render-only] [-- CRITERION_ARGS...]" >&2; exit 2 ;;
    esac
    shift
done

target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
out=$target/bench-report
export WORKERPICK_BENCH_THREADS=${WORKERPICK_BENCH_THREADS:-1,2}
passes=${WORKERPICK_BENCH_PASSES:-3}
export WORKERPICK_BENCH_MS=${WORKERPICK_BENCH_MS:-600}
export WORKERPICK_BENCH_SAMPLES=${WORKERPICK_BENCH_SAMPLES:-50}
if [ -n "${WORKERPICK_REPORT_OUT:-}" ]; then
    # The report binary runs in benches/: make the path the caller meant absolute.
    export WORKERPICK_REPORT_OUT=$(realpath -m "$WORKERPICK_REPORT_OUT")
fi
# Criterion's id filter (a regex) for the target benchmarks.
target_benches='^(floor/|scan/[0-9]+/least/|(random|round-robin|power-of-two|least-loaded)/[0-9]+/(select|reserve)/workerpick-handle|weighted-(random|round-robin)/[0-9]+/select/workerpick-handle$|weighted-least-loaded/1024/reserve/workerpick-(handle|unweighted)$)'

if [ "$render_only" = 0 ]; then
    echo "=== building the benches"
    cargo bench -p workerpick-benches --no-run --bench allocs --bench single --bench threads --bench owned --bench report
    echo "=== building the peers"
    if ! command -v cmake >/dev/null; then
        echo "+ apt-get install -y cmake (pingora's libz-ng-sys needs it)"
        sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
        $sudo apt-get install -y cmake || { $sudo apt-get update && $sudo apt-get install -y cmake; }
    fi
    cargo bench --manifest-path benches/peers/Cargo.toml --no-run
    # A full run starts clean so no result from an older run is reported.
    rm -rf "$target/criterion" "$out"
    mkdir -p "$out"
    flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
    features=""
    for f in sse4_2 avx2 avx512f avx512bw; do
        if [[ " $flags " == *" $f "* ]]; then features+="$f "; fi
    done
    {
        echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "command=WORKERPICK_BENCH_THREADS=$WORKERPICK_BENCH_THREADS WORKERPICK_BENCH_PASSES=$passes WORKERPICK_BENCH_MS=$WORKERPICK_BENCH_MS WORKERPICK_BENCH_SAMPLES=$WORKERPICK_BENCH_SAMPLES ci/bench-report.sh${crit_args[*]:+ -- ${crit_args[*]}}"
        echo "passes=$passes"
        echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
        echo "cores=$(nproc)"
        echo "features=${features:-none of sse4_2/avx2/avx512}"
        echo "rustc=$(rustc -V)"
        echo "commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src benches Cargo.toml || echo ' + uncommitted changes')"
        echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
        echo "autogroup=$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo unknown)"
    } >"$out/run.txt"
    start=$SECONDS
    echo "=== allocations"
    cargo bench -p workerpick-benches --bench allocs
    echo "=== single thread (pass 1 of $passes for the target benchmarks)"
    cargo bench -p workerpick-benches --bench single -- --save-baseline pass1 "${crit_args[@]}"
    echo "=== threads ($WORKERPICK_BENCH_THREADS)"
    cargo bench -p workerpick-benches --bench threads -- "${crit_args[@]}"
    echo "=== the owned path (1 and 2 threads)"
    cargo bench -p workerpick-benches --bench owned -- "${crit_args[@]}"
    echo "=== peers (benches/peers: pingora-load-balancing, tower)"
    # Its own workspace and lockfile (target dir benches/peers/target unless
    # CARGO_TARGET_DIR says otherwise); results go into the same criterion tree.
    WORKERPICK_REPORT_DIR="$out" CRITERION_HOME="$target/criterion" \
        cargo bench --manifest-path benches/peers/Cargo.toml --bench peers -- "${crit_args[@]}"
    echo "=== the prefix index beside kv-index (benches/peers/kvindex.rs)"
    cargo bench --manifest-path benches/peers/Cargo.toml --bench kvindex
    for ((k = 2; k <= passes; k++)); do
        echo "=== target benchmarks, pass $k of $passes"
        cargo bench -p workerpick-benches --bench single -- --save-baseline "pass$k" "${crit_args[@]}" "$target_benches"
    done
    echo "=== NEON static instruction counts (ci/aarch64-insns.sh)"
    if command -v aarch64-linux-gnu-objdump >/dev/null && rustup component list --toolchain nightly --installed 2>/dev/null | grep -q rust-src; then
        bash ci/aarch64-insns.sh >"$out/neon.md" || echo "aarch64-insns failed: the report says so"
    else
        echo "skipped: no aarch64 cross tools (run ci/aarch64.sh once to install them)"
    fi
    {
        echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)"
        echo "seconds=$((SECONDS - start))"
    } >>"$out/run.txt"
fi

echo "=== report"
cargo bench -p workerpick-benches --bench report -- --write
