//! Figures quoted from the design targets (not measured by this run): the
//! reference anchors measured earlier on this kind of machine, and the numbers
//! published for the plugin-based router this crate replaces (other hardware).

/// The lock-based reference as measured earlier, median ns per select + reserve +
/// release at 8, 64, 1024 and 10 000 workers, in the order of `MODES`.
pub const ANCHORS: [[f64; 4]; 4] = [
    [15.0, 15.0, 15.0, 16.0],
    [19.0, 19.0, 21.0, 19.0],
    [98.0, 98.0, 99.0, 100.0],
    [188.0, 1016.0, 15228.0, 154748.0],
];

/// The numbers published for the router this crate replaces (other hardware).
pub struct Seed {
    pub random: &'static str,
    pub round_robin: &'static str,
    pub power_of_two: &'static str,
    pub least_loaded_1024: &'static str,
    pub least_loaded_10000: &'static str,
    pub plugin: &'static str,
    pub host_least_loaded: &'static str,
    pub threads: &'static str,
}

pub const SEED: Seed = Seed {
    random: "2.1 ns inline; ~32 as a plugin",
    round_robin: "9.6 ns inline",
    power_of_two: "3.8 ns inline (no booking); 163–169 ns in the routing host",
    least_loaded_1024: "627 ns inline; 19.6 µs in the routing host",
    least_loaded_10000: "5.85 µs inline",
    plugin: "~30 ns per plugin call",
    host_least_loaded: "routing host 19.6 µs at 1024",
    threads: "lock-bound power-of-two fell from 6.1 M to 385 k selections/s at 12 threads",
};
