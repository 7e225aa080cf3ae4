//! The budgets the callgrind benchmarks are held under (`gate`, `pairs`).

use gungraun::{Callgrind, EventKind, LibraryBenchmarkConfig};

/// `name = instructions` lines, rewritten by `ci/iai-update.sh`.
const BUDGETS: &str = include_str!("../../budgets.toml");

/// Set by `ci/iai-update.sh`: measure with no limits (and no budget needed).
const UPDATE_ENV: &str = "WORKERPICK_IAI_UPDATE";

/// The configuration that holds benchmark `name` under its budgets: `Ir`
/// (instructions) and `Ge` (global bus events: callgrind's count of executed
/// locked instructions, `--collect-bus=yes`). `Ir` does not weigh a lock: one
/// more `fetch_add` per operation is ~1 % more instructions and ~5 ns, twice
/// a plain random pick. So the locked instructions have a budget of their own,
/// with no margin but what `ci/iai-update.sh` states.
pub fn budget(name: &str) -> LibraryBenchmarkConfig {
    // No cache simulation: it would only slow the run down.
    let mut callgrind = Callgrind::with_args(["--cache-sim=no", "--collect-bus=yes"]);
    if std::env::var_os(UPDATE_ENV).is_none() {
        callgrind.hard_limits([
            (EventKind::Ir, limit(name)),
            (EventKind::Ge, limit(&format!("{name}.locked"))),
        ]);
    }
    let mut config = LibraryBenchmarkConfig::default();
    config.tool(callgrind);
    // glibc's fastbins are emptied by `malloc_consolidate`, one locked
    // exchange per bin, whenever a large request meets a non-empty one; how
    // often depends on the heap left by everything before the benchmark (the
    // length of the binary's path moved a writer benchmark's count by 30
    // between two machines). No fastbins: no consolidation, and the count of
    // locked instructions is the crate's and its dependencies' alone.
    config.env("GLIBC_TUNABLES", "glibc.malloc.mxfast=0");
    config
}

/// Budget `key` from `BUDGETS` (`name` for `Ir`, `name.locked` for `Ge`); a
/// missing one fails the run loudly.
fn limit(key: &str) -> u64 {
    let value = BUDGETS
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .filter_map(|line| line.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, value)| value.trim().replace('_', ""))
        .unwrap_or_else(|| panic!("no budget for `{key}` in iai/budgets.toml: run ci/iai-update.sh"));
    value
        .parse()
        .unwrap_or_else(|e| panic!("budget for `{key}` is not a number ({value:?}): {e}"))
}
