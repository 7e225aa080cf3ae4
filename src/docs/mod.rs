//! Design notes, rendered with the API docs. Nothing to call here: start at
//! [`design`], which links the other pages.

pub mod affinity;
pub mod bounds;
pub mod design;
pub mod fleets;
pub mod http;
pub mod limitations;
pub mod llm;
pub mod load;
pub mod performance;
pub mod prefix;
pub mod proofs;
pub mod scan;
pub mod sets;
