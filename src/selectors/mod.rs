//! The built-in modes.

mod device_aware;
mod least_loaded;
mod power_of_two;
mod random;
mod round_robin;

pub use device_aware::DeviceAware;
pub use least_loaded::LeastLoaded;
pub use power_of_two::PowerOfTwo;
pub use random::Random;
pub use round_robin::RoundRobin;

#[cfg(test)]
mod tests;
