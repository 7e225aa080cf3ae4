#!/usr/bin/env bash
# Re-measures every benchmark of the instruction-count gate and rewrites
# iai/budgets.toml: instructions at 7% above today's counts, locked
# instructions (callgrind's global bus events, `name.locked`) at 1% above,
# which is less than one more locked instruction per operation. Commit the diff with the reason
# the counts moved: a raised budget is a visible, explained change.
#
#   ci/iai-update.sh            # all benchmarks
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/iai-runner.sh

margin_pct=7
locked_margin_pct=1
out=$(mktemp)
trap 'rm -f "$out" "$out.new"' EXIT

echo "+ WORKERPICK_IAI_UPDATE=1 cargo bench -p workerpick-iai --bench gate --bench pairs --bench prefix -- --callgrind-metrics=ir,ge"
WORKERPICK_IAI_UPDATE=1 cargo bench -p workerpick-iai --bench gate --bench pairs --bench prefix -- --callgrind-metrics=ir,ge | tee "$out"

{
    echo "# Instruction (Ir) budgets for the callgrind gate (iai/benches/gate.rs, ci/iai.sh)."
    echo "# A benchmark whose count exceeds its budget fails the gate with exit code 3."
    echo "# Written by ci/iai-update.sh: ${margin_pct}% above the count measured (the comment);"
    echo "# NAME.locked: locked instructions (Ge, --collect-bus=yes), ${locked_margin_pct}% above. Ir does"
    echo "# not weigh a lock (~5 ns here): one more per operation is +100 on a count of 100 operations."
    echo "# rustc: $(rustc --version)"
    echo "# measured with $(valgrind --version) on $(uname -m)"
    # Header lines name the benchmark ("gate::group::function ID:(args)"),
    # the next "Instructions:" line carries "NEW|OLD".
    awk -v pct="$margin_pct" -v lpct="$locked_margin_pct" '
        /^[^ ].*::/ { id = $2; sub(/:.*/, "", id) }
        $1 == "Instructions:" {
            split($2, v, "|")
            n = v[1] + 0
            printf "%s = %d  # %d\n", id, int((n * (100 + pct) + 99) / 100), n
        }
        $1 == "Ge:" {
            split($2, v, "|")
            n = v[1] + 0
            printf "%s.locked = %d  # %d\n", id, int((n * (100 + lpct) + 99) / 100), n
        }' "$out"
} >"$out.new"

count=$(grep -c ' = ' "$out.new" || true)
if [ "$(grep -c '\.locked = ' "$out.new" || true)" -ne "$((count / 2))" ]; then
    echo "iai-update: not every benchmark has a count of locked instructions; budgets left unchanged" >&2
    exit 1
fi
if [ "$count" -eq 0 ]; then
    echo "iai-update: no counts found in the output; budgets left unchanged" >&2
    exit 1
fi
cp "$out.new" iai/budgets.toml
echo "iai-update: wrote $count budgets to iai/budgets.toml"
git --no-pager diff --stat -- iai/budgets.toml || true
