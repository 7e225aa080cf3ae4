//! Prefill/decode pairs over two pools: preview the decode worker, decide
//! between a local prefill and a disaggregated one, then book both sides or
//! neither. Built on the pools' public picks; see `docs::llm` ("Prefill/decode pairs").

mod decider;
mod pairs;
mod reservation;
mod side;
#[cfg(test)]
mod tests;

pub use decider::{Decider, Plan};
pub use pairs::{PairPreview, PairRequest, Pairs};
pub use reservation::{OwnedPairReservation, PairReservation};
pub use side::{PairGuard, PairHandle};
