//! Entry points that keep requests on a worker: bounded-load affinity's
//! binding, and (feature `sessions`) the session table. The ring that
//! [`Affinity`](crate::Affinity) walks is data a snapshot holds
//! (`snapshot::ring`). See
//! [`docs::affinity`](crate::docs::affinity) ("Bounded-load affinity").

#[cfg(any(feature = "sessions", loom))]
pub(crate) mod binding;
#[cfg(feature = "sessions")]
mod clock;
#[cfg(loom)]
mod model;
#[cfg(feature = "sessions")]
pub(crate) mod sessions;
