//! The modes the simulator can run, resolved by name through the crate's
//! `Registry`, as a router resolves its configured mode.

use std::sync::Arc;
use workerpick::{Mode, Registry, Selector};

/// Every mode the registry knows, in its order: the built-ins.
pub fn all() -> Vec<String> {
    Registry::new().names().map(str::to_owned).collect()
}

/// The selector registered under `name` (any spelling the registry accepts).
pub fn selector(name: &str) -> Result<Arc<dyn Selector>, String> {
    Registry::new().resolve(name).map_err(|e| e.to_string())
}

/// The built-in `mode` names (any spelling the registry accepts).
fn builtin(mode: &str) -> Option<Mode> {
    mode.parse().ok()
}

/// Whether `mode` promises an exact split of reservations held together
/// (every burst of 32 over 4 idle accelerators lands 8/8/8/8): the mode's
/// own [`Mode::splits_evenly`].
pub fn splits_exactly(mode: &str) -> bool {
    builtin(mode).is_some_and(Mode::splits_evenly)
}

/// How `mode` keeps load off a slow worker, if it looks at load at all: the
/// mode's own [`Mode::load_rule`], as a sentence.
pub fn how(mode: &str) -> Option<String> {
    let rule = builtin(mode)?.load_rule()?;
    Some(format!("It {rule}"))
}

/// Whether `mode` (any spelling the registry accepts) compares load, so that
/// what router replicas know of one another's load changes its picks.
pub fn looks_at_load(mode: &str) -> bool {
    builtin(mode).is_some_and(|m| m.load_rule().is_some())
}
