//! Helpers shared by the suite's modules (`crate::common::…`).
//! Some modules use only some of them.
#![allow(dead_code)]

pub mod counting;
pub mod stats;
