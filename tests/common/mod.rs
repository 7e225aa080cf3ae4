//! Helpers shared by the integration tests that include them (`mod common;`).

pub mod counting;
