#!/usr/bin/env bash
# What adding a built-in mode takes, shown on a throwaway one: in a scratch
# copy of the committed tree, one new file (src/selectors/throwaway.rs) and
# one entry in the `builtins!` list (src/selectors/mod.rs), nothing else.
# Then the mode must be known by name (Mode, Registry), pass the tests that
# hold every mode to the list's promises, and run in the simulator beside a
# seed mode, which reads its facts (LOAD_RULE, SPLITS_EVENLY) from it.
#
# Not part of .ci/run: it rebuilds the crate, its suite and the simulator
# (about 4 minutes on 2 cores). Run it after changing how modes are
# declared:   ci/new-mode.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
git archive HEAD | tar -x -C "$scratch"
(cd "$scratch" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm base)

cat > "$scratch/src/selectors/throwaway.rs" <<'RS'
use crate::context::Context;
use crate::selectors::{Builtin, Choice, Configure, Selector};

/// A throwaway mode: the first candidate, always.
///
/// ```
/// use workerpick::{Pool, Throwaway};
/// let pool = Pool::from_workers([1, 2]).unwrap();
/// assert_eq!(*pool.reserve(&Throwaway::new()).unwrap().worker(), 1);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Throwaway;

impl Throwaway {
    /// The throwaway mode.
    pub const fn new() -> Self {
        Throwaway
    }
}

impl Selector for Throwaway {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
        let slot = cx.candidate(0)?;
        Some(Choice::validated(slot, cx.load(slot)))
    }

    fn builtin(&self) -> Option<Builtin<'_>> {
        Some(self.into())
    }
}

impl Configure for Throwaway {
    const LOAD_RULE: Option<&'static str> = None;
    const SPLITS_EVENLY: bool = false;
}
RS
# The one entry, after the last built-in.
python3 - "$scratch/src/selectors/mod.rs" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
last = '            ReplicaLeastLoaded(replica_least_loaded) "replica-least-loaded" | "replica-ll";\n'
assert last in text, "the builtins! list changed: update ci/new-mode.sh"
text = text.replace(last, last + '            /// [`Throwaway`](crate::Throwaway): the first candidate.\n            Throwaway(throwaway) "throwaway";\n')
open(path, "w").write(text)
PY
echo "==> new-mode: the whole change to the committed tree:"
(cd "$scratch" && git add -A && git status --short && git diff --cached --stat | tail -n 1)

export CARGO_TARGET_DIR=$root/target/new-mode
cd "$scratch"
echo "==> new-mode: the mode list's tests, the registry and the modes' own suites"
cargo test --quiet --test suite -- registry:: small_defects:: accounting:: churn:: threads::
cargo test --quiet --doc -- Throwaway
echo "==> new-mode: the simulator, with the throwaway mode beside random"
out=$(cargo run --quiet --release -p workerpick-sim -- --modes throwaway,random)
echo "$out" | grep -i throwaway | head -n 20
grep -qi throwaway <<< "$out" || { echo "new-mode: FAILED: the simulator did not run the throwaway mode"; exit 1; }
echo "==> new-mode: passed: one file and one entry make a mode the registry, the tests and the simulator know"
