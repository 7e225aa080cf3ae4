#!/usr/bin/env bash
# The plain-pool hot paths of the working tree beside a pinned baseline
# commit (default 97b26ce, the crate before owned handles, weights, health,
# reported load and the per-block bounds), linked into one program
# (ci/baseline-compare/main.rs), so both run in the same process on the same
# machine. Timing on a shared machine is noisy, so the CI gate (ci/baseline.sh)
# runs --counts: exact counts, judged against the pinned baseline.
#
#   ci/baseline-compare.sh [--counts|--markdown] [COMMIT] [ROUNDS]
#
# Default: interleaved timing (base, tree, base, ... per operation, ROUNDS
# rounds of ~2 ms batches, default 21), median ns of each and the median of
# the per-round ratios; TOLERANCE (default 1.05) flags a ratio over it.
# --counts: instructions (Ir) and locked instructions (callgrind's global bus
# events, Ge) per operation of each side, under callgrind: exact, not timed.
# Builds in target/baseline-compare (~1 min cold, seconds warm).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
counts=0
markdown=0
case "${1:-}" in
    --counts) counts=1; shift ;;
    --markdown) markdown=1; shift ;;
esac
commit=${1:-97b26ce}
rounds=${2:-21}
if ! [[ $rounds =~ ^[1-9][0-9]{0,3}$ ]]; then
    echo "baseline-compare: ROUNDS must be a whole number from 1 to 9999, not '$rounds'" >&2
    exit 2
fi
git rev-parse --quiet --verify "$commit^{commit}" >/dev/null || {
    echo "baseline-compare: COMMIT '$commit' is not a commit of this repository" >&2
    exit 2
}
dir=$root/target/baseline-compare
mkdir -p "$dir"

# The baseline as a copy of its tree whose package version differs, so that
# cargo can link both crates into one program.
base=$dir/base-$(git rev-parse --short "$commit")
if [ ! -f "$base/Cargo.toml" ]; then
    rm -rf "$base.tmp" && mkdir -p "$base.tmp"
    git archive "$commit" | tar -x -C "$base.tmp"
    sed -i '0,/^version = ".*"/s//version = "0.0.0-base"/' "$base.tmp/Cargo.toml"
    mv "$base.tmp" "$base"
fi
mkdir -p "$dir/driver"
cat >"$dir/driver/Cargo.toml" <<TOML
[package]
name = "baseline-compare"
version = "0.0.0"
edition = "2024"
publish = false

[[bin]]
name = "compare"
path = "$root/ci/baseline-compare/main.rs"

[dependencies]
base = { package = "workerpick", path = "$base" }
tree = { package = "workerpick", path = "$root" }

[profile.release]
debug = "line-tables-only"

[workspace]
TOML
echo "+ cargo build --release (baseline $commit beside the tree)"
# No extra flags: the default build the crate's speed targets hold for.
env -u RUSTFLAGS CARGO_TARGET_DIR="$dir/target" cargo build --release -q --manifest-path "$dir/driver/Cargo.toml"
bin=$dir/target/release/compare
echo "baseline $(git rev-parse --short "$commit"), tree $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + changes'), $(rustc --version)"

if [ "$counts" -eq 0 ]; then
    if [ "$markdown" -eq 1 ]; then
        "$bin" compare "$rounds" | awk 'NR == 1 { print "| operation/workers | 97b26ce ns | tree ns | ratio |"; print "|---|---:|---:|---:|"; next }
            NF >= 4 && $1 ~ /\// { printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4; next } { print }'
    else
        "$bin" compare "$rounds"
    fi
    exit 0
fi

ops=1000
printf '%-28s %8s %8s %7s %6s %6s\n' "operation/workers" "base Ir" "tree Ir" "ratio" "base Ge" "tree Ge"
for workers in 8 1024; do
    for op in random_select round_robin_select random_reserve round_robin_reserve power_of_two_reserve least_loaded_reserve; do
        line=()
        for side in base tree; do
            out=$(mktemp)
            valgrind --tool=callgrind --cache-sim=no --collect-bus=yes --toggle-collect='*measure*' \
                --callgrind-out-file="$out" "$bin" count "$side/$op/$workers" "$ops" >/dev/null 2>&1
            line+=($(awk '/^summary:/ { print $2, ($3 == "" ? 0 : $3) }' "$out"))
            rm -f "$out"
        done
        awk -v name="$op/$workers" -v ops="$ops" -v bi="${line[0]}" -v bg="${line[1]}" -v ti="${line[2]}" -v tg="${line[3]}" \
            'BEGIN { printf "%-28s %8.1f %8.1f %7.3f %6.2f %6.2f\n", name, bi / ops, ti / ops, ti / bi, bg / ops, tg / ops }'
    done
done
