//! The load signals a pick compares, and how they combine: booked and
//! reported load and the health penalty share one counter per worker
//! ([`reported`], [`health`]), and what routers report or tell one another
//! lands there too ([`reports`]); capacity scales it ([`ratio`]); latency
//! multiplies it (`storage::latency`, whose table the counters hold); a
//! request's cache credit subtracts from it (`credit`). See [`docs::load`](crate::docs::load).

pub(crate) mod health;
pub(crate) mod ratio;
pub(crate) mod reported;
pub(crate) mod reports;
