//! The modes the simulator can run, resolved by name through the crate's
//! `Registry`, as a router resolves its configured mode.

use std::sync::Arc;
use workerpick::{Registry, Selector};

/// Every mode the registry knows, in its order: the built-ins.
pub fn all() -> Vec<String> {
    Registry::new().names().map(str::to_owned).collect()
}

/// The selector registered under `name` (any spelling the registry accepts).
pub fn selector(name: &str) -> Result<Arc<dyn Selector>, String> {
    Registry::new().resolve(name).map_err(|e| e.to_string())
}

/// Whether `mode` promises an exact split of reservations held together
/// (every burst of 32 over 4 idle accelerators lands 8/8/8/8).
pub fn splits_exactly(mode: &str) -> bool {
    matches!(mode, "round-robin" | "least-loaded" | "device-aware" | "cost")
}

/// How `mode` keeps load off a slow worker, if it looks at load at all.
pub fn how(mode: &str) -> Option<&'static str> {
    match mode {
        "least-loaded" => Some("It sends each request to the worker holding the fewest"),
        "power-of-two" => Some("It sends each request to the less loaded of two random workers"),
        "device-aware" => Some("It holds the CPU workers to about 1/8 of the accelerators' load"),
        "cost" => {
            Some("It sends each request to the least load less cache credit (none here, so the fewest held)")
        }
        "latency-power-of-two" => Some(
            "It sends each request to the cheaper of two random workers by latency estimate x (load + 1)",
        ),
        "latency-least-loaded" => Some("It sends each request to the least latency estimate x (load + 1)"),
        _ => None,
    }
}

/// Whether `mode` (any spelling the registry accepts) compares load, so that
/// what router replicas know of one another's load changes its picks.
pub fn looks_at_load(mode: &str) -> bool {
    selector(mode).is_ok_and(|s| how(s.name()).is_some())
}
