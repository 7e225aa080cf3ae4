#!/usr/bin/env bash
# Re-measures every benchmark of the instruction-count gate and rewrites
# iai/budgets.toml at 7% above today's counts. Commit the diff with the reason
# the counts moved: a raised budget is a visible, explained change.
#
#   ci/iai-update.sh            # all benchmarks
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/iai-runner.sh

margin_pct=7
out=$(mktemp)
trap 'rm -f "$out" "$out.new"' EXIT

echo "+ WORKERPICK_IAI_UPDATE=1 cargo bench -p workerpick-iai --bench gate -- --callgrind-metrics=ir"
WORKERPICK_IAI_UPDATE=1 cargo bench -p workerpick-iai --bench gate -- --callgrind-metrics=ir | tee "$out"

{
    echo "# Instruction (Ir) budgets for the callgrind gate (iai/benches/gate.rs, ci/iai.sh)."
    echo "# A benchmark whose count exceeds its budget fails the gate with exit code 3."
    echo "# Written by ci/iai-update.sh: ${margin_pct}% above the count measured (the comment)."
    echo "# rustc: $(rustc --version)"
    echo "# measured with $(valgrind --version) on $(uname -m)"
    # Header lines name the benchmark ("gate::group::function ID:(args)"),
    # the next "Instructions:" line carries "NEW|OLD".
    awk -v pct="$margin_pct" '
        /^[^ ].*::/ { id = $2; sub(/:.*/, "", id) }
        $1 == "Instructions:" {
            split($2, v, "|")
            n = v[1] + 0
            printf "%s = %d  # %d\n", id, int((n * (100 + pct) + 99) / 100), n
        }' "$out"
} >"$out.new"

count=$(grep -c ' = ' "$out.new" || true)
if [ "$count" -eq 0 ]; then
    echo "iai-update: no counts found in the output; budgets left unchanged" >&2
    exit 1
fi
cp "$out.new" iai/budgets.toml
echo "iai-update: wrote $count budgets to iai/budgets.toml"
git --no-pager diff --stat -- iai/budgets.toml || true
