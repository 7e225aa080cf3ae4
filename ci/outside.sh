#!/usr/bin/env bash
# A user's build of the crate (benches/outside: an outside package, its own
# workspace, depending on the crate by path with default features) beside the
# workspace's own release settings, for the plain reserve + drop through a
# Handle (issue 46: the same instructions ran ~3x slower in one build than in
# the other).
#
#   ci/outside.sh [--time [ROUNDS]] [--check]
#
# --check (default; ci/baseline.sh runs it): builds the user's profile
#   (release: one codegen unit, thin LTO) and fails when, in that build,
#   - a hot loop has a stack store-to-load forwarding hazard
#     (ci/outside/stlf.py): a value stored in parts and loaded whole, the
#     stall that made 97b26ce's reserve ~1.5x slower in ci/baseline-compare's
#     build than in a user's, with the same instructions;
#   - a function of the pick path is out of line (a symbol of its own in the
#     user's binary: each call is as many instructions as the release);
#   - with TREE_COUNTS (ci/baseline-compare.sh --counts output, as
#     ci/baseline.sh passes it) and valgrind: an operation executes more than
#     the in-tree build's instructions x 1.05 + 8, or other locked ones.
#   The same stlf check runs on ci/baseline-compare's tree side when that
#   program is built, and on the fixtures (so the check can fail). ~40 s
#   cold on 2 cores, seconds warm. Hardware-independent: no timing.
# --time [ROUNDS]: builds both profiles (release, and intree: 16 codegen
#   units, no cross-crate LTO, as the workspace's benches build) and runs
#   them alternately, ROUNDS rounds (default 11) each of every operation in
#   turn; prints each build's minimum and median of the per-round medians,
#   and fails when a user-build minimum is over RATIO (default 1.6) times the
#   in-tree one (minimums: the least disturbed rounds on a shared machine).
# Builds in target/outside.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=check
rounds=11
case "${1:-}" in
    --time) mode=time; rounds=${2:-11} ;;
    --check | "") ;;
    *) echo "outside: unknown argument '$1' (--check or --time [ROUNDS])" >&2; exit 2 ;;
esac
if ! [[ $rounds =~ ^[1-9][0-9]{0,3}$ ]]; then
    echo "outside: ROUNDS must be a whole number from 1 to 9999, not '$rounds'" >&2
    exit 2
fi
manifest=benches/outside/Cargo.toml
dir=target/outside
build() {
    echo "+ cargo build --profile $1 --manifest-path $manifest"
    # No RUSTFLAGS: the build a user gets.
    env -u RUSTFLAGS CARGO_TARGET_DIR="$dir" cargo build -q --profile "$1" --manifest-path "$manifest"
}

if [ "$mode" = check ]; then
    for tool in python3 objdump nm; do
        if ! command -v "$tool" >/dev/null; then
            echo "==> outside: SKIPPED: $tool is not installed"
            exit 0
        fi
    done
    # The checker finds the fixture's hazard and passes its repair.
    if python3 ci/outside/stlf.py --dump ci/outside/stlf-fixture.txt '^fixture::split$' >/dev/null \
        || ! python3 ci/outside/stlf.py --dump ci/outside/stlf-fixture.txt '^fixture::whole$' >/dev/null; then
        echo "outside: FAILED: ci/outside/stlf.py misjudges its fixtures" >&2
        exit 1
    fi
    build release
    bin=$dir/release/outside
    status=0
    echo "+ stlf: the user's build"
    python3 ci/outside/stlf.py "$bin" '^outside::reserve(_unwrap|_held)?$' || status=1
    compare=target/baseline-compare/target/release/compare
    if [ -x "$compare" ]; then
        echo "+ stlf: ci/baseline-compare's tree side"
        python3 ci/outside/stlf.py "$compare" '^compare::tree::reserve$' || status=1
    fi
    # The pick path, inlined into the caller's loop in every build: none of
    # these may have a body of its own in the user's binary.
    hot='workerpick::(handle::Handle<W>::(reserve|reserve_with|reserve_inlined|select|pick)|booking::|storage::Slots<W>::(charge|charge_if|pin|release|book)$|sync::.*Cached.*::load|candidates::Candidates::of|context::Context::new|rng::Rng::)|<workerpick::reservation::Reservation<W> as core::ops::drop::Drop>::drop'
    echo "+ nm: no pick-path function out of line"
    symbols=$(nm -C "$bin" | sed 's/^[0-9a-f]* [A-Za-z] //' | sort -u)
    outlined=$(grep -E "$hot" <<<"$symbols" || true)
    if ! grep -qx 'outside::reserve' <<<"$symbols"; then
        echo "outside: FAILED: no outside::reserve in $bin (symbols stripped?)" >&2
        status=1
    elif [ -n "$outlined" ]; then
        echo "outside: FAILED: out of line in the user's build (mark them #[inline] / #[inline(always)]):" >&2
        echo "$outlined" >&2
        status=1
    else
        echo "outside: the pick path is inlined into the caller's loop"
    fi
    if [ -n "${TREE_COUNTS:-}" ] && command -v valgrind >/dev/null; then
        echo "+ callgrind: the user's build against the in-tree build's counts"
        printf '%-24s %9s %9s %7s %9s %9s\n' "operation/workers" "tree Ir" "user Ir" "ratio" "tree Ge" "user Ge"
        for spec in random/8 round-robin/8 power-of-two/8 least-loaded/8 least-loaded/1024; do
            op=${spec%/*}
            workers=${spec#*/}
            name="${op//-/_}_reserve/$workers"
            read -r tree_ir tree_ge < <(awk -v n="$name" '$1 == n { print $3, $6 }' "$TREE_COUNTS")
            if [ -z "${tree_ir:-}" ]; then
                echo "outside: FAILED: no $name in $TREE_COUNTS" >&2
                status=1
                continue
            fi
            cg=$(mktemp)
            # The scan's AVX2 kernel: valgrind decodes no AVX-512.
            WORKERPICK_SCAN=avx2 valgrind --tool=callgrind --cache-sim=no --collect-bus=yes --toggle-collect='*measure*' \
                --callgrind-out-file="$cg" "$bin" count "$spec" 1000 >/dev/null 2>&1
            read -r ir ge < <(awk '/^summary:/ { print $2 / 1000, ($3 == "" ? 0 : $3 / 1000) }' "$cg")
            rm -f "$cg"
            awk -v n="$spec" -v ti="$tree_ir" -v tg="$tree_ge" -v ui="$ir" -v ug="$ge" 'BEGIN {
                printf "%-24s %9.1f %9.1f %7.3f %9.2f %9.2f\n", n, ti, ui, ui / ti, tg, ug
                if (ug != tg) { printf "outside: FAILED: %s: %s locked instructions, in-tree %s\n", n, ug, tg; exit 1 }
                if (ui > ti * 1.05 + 8) { printf "outside: FAILED: %s: %.1f instructions, over %.1f\n", n, ui, ti * 1.05 + 8; exit 1 }
            }' || status=1
        done
    fi
    [ "$status" -eq 0 ] && echo "outside: the user's build passes"
    exit "$status"
fi

build release
build intree
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "$rounds rounds, alternating; each round runs every operation once in each build"
for ((r = 0; r < rounds; r++)); do
    # Alternate which build goes first.
    if ((r % 2 == 0)); then order="release intree"; else order="intree release"; fi
    for p in $order; do
        "$dir/$p/outside" time 3 | awk -v r="$r" '{ print r, $1, $3 }' >>"$out/$p"
    done
done
printf '%-26s %11s %11s %11s %11s %7s\n' "operation/workers" "user min" "user med" "intree min" "intree med" "ratio"
awk -v ratio="${RATIO:-1.6}" '
    FNR == 1 { file++ }
    { v[file, $2, ++n[file, $2]] = $3; if (file == 1) { if (!($2 in seen)) { seen[$2] = 1; ops[++k] = $2 } } }
    function stat(f, op, want,   i, m, t, j, x) {
        m = n[f, op]
        for (i = 1; i <= m; i++) t[i] = v[f, op, i]
        for (i = 2; i <= m; i++) { x = t[i]; for (j = i - 1; j >= 1 && t[j] > x; j--) t[j + 1] = t[j]; t[j + 1] = x }
        return want == "min" ? t[1] : t[int((m + 1) / 2)]
    }
    END {
        for (i = 1; i <= k; i++) {
            op = ops[i]
            r = stat(1, op, "min") / stat(2, op, "min")
            printf "%-26s %11.2f %11.2f %11.2f %11.2f %7.3f%s\n", op, stat(1, op, "min"), stat(1, op, "med"), stat(2, op, "min"), stat(2, op, "med"), r, (r > ratio ? "  over" : "")
            if (r > ratio) bad++
        }
        if (bad) { printf "outside: FAILED: %d operations over %.2fx the in-tree build\n", bad, ratio; exit 1 }
        printf "outside: every operation within %.2fx of the in-tree build\n", ratio
    }' "$out/release" "$out/intree"
