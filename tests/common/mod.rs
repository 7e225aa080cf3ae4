//! Helpers shared by the integration tests that include them (`mod common;`).
//! Each test crate uses some of them, so the rest are dead code there.
#![allow(dead_code)]

pub mod counting;
pub mod stats;
