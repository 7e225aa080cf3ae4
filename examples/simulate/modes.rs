//! The modes the simulator can run, by name.

use workerpick::{LeastLoaded, PowerOfTwo, Random, RoundRobin, Selector};

/// Every built-in mode, in the order the report shows them.
pub const ALL: &[&str] = &["random", "round-robin", "power-of-two", "least-loaded"];

/// The selector registered under `name`.
pub fn selector(name: &str) -> Result<Box<dyn Selector>, String> {
    Ok(match name {
        "random" => Box::new(Random::new()),
        "round-robin" => Box::new(RoundRobin::new()),
        "power-of-two" => Box::new(PowerOfTwo::new()),
        "least-loaded" => Box::new(LeastLoaded::new()),
        _ => {
            return Err(format!("unknown mode {name:?}; known modes: {}", ALL.join(", ")));
        }
    })
}

/// Whether `mode` promises an exact split of reservations held together
/// (every burst of 32 over 4 idle workers lands 8/8/8/8).
pub fn splits_exactly(mode: &str) -> bool {
    matches!(mode, "round-robin" | "least-loaded")
}

/// How `mode` keeps load off a slow worker, if it looks at load at all.
pub fn how(mode: &str) -> Option<&'static str> {
    match mode {
        "least-loaded" => Some("It sends each request to the worker holding the fewest"),
        "power-of-two" => Some("It sends each request to the less loaded of two random workers"),
        "device-aware" => Some("It holds the CPU workers to about 1/8 of the accelerators' load"),
        _ => None,
    }
}
