#!/usr/bin/env bash
# A user's build of the crate (benches/outside: an outside package, its own
# workspace, depending on the crate by path with default features) beside the
# workspace's own release settings, for the plain reserve + drop through a
# Handle (issue 46: the same instructions ran ~3x slower in one build than in
# the other).
#
#   ci/outside.sh [--time [ROUNDS]] [--check]
#
# --check (default): builds the user's profile (release: one codegen unit,
#   thin LTO) and checks its hot loops for stack store-to-load forwarding
#   hazards (ci/outside/stlf.py): a value stored in parts and loaded whole,
#   the stall behind the issue's slow builds. Hardware-independent.
# --time [ROUNDS]: builds both profiles (release, and intree: 16 codegen
#   units, no cross-crate LTO, as the workspace's benches build) and runs
#   them alternately, ROUNDS rounds (default 11) each of every operation in
#   turn; prints each build's minimum and median of the per-round medians.
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
    build release
    python3 ci/outside/stlf.py "$dir/release/outside" '^outside::reserve'
    exit 0
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
awk '
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
            printf "%-26s %11.2f %11.2f %11.2f %11.2f %7.3f\n", op, stat(1, op, "min"), stat(1, op, "med"), stat(2, op, "min"), stat(2, op, "med"), stat(1, op, "min") / stat(2, op, "min")
        }
    }' "$out/release" "$out/intree"
