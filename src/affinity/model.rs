//! The session binding decision without the session map, for the loom
//! models (`loom-tests/tests/sessions.rs`): `papaya`, which stores the
//! bindings, is not loom-aware. Not part of the API.

use crate::affinity::binding::{self, Outcome, Target};
use crate::error::Error;
use crate::handle::Handle;
use crate::pool::Pool;
use crate::request::Request;
use crate::reservation::Reservation;
use crate::selectors::Selector;
use core::hash::Hash;

impl<'p, W: Clone + Eq + Hash + Send + Sync> Handle<'p, W> {
    /// What `Sessions::reserve` does once it has looked the session
    /// up: books `target`'s worker, or fails (`hard`), or books
    /// `selector`'s pick, and says which.
    #[doc(hidden)]
    pub fn reserve_bound<S: Selector + ?Sized>(
        &mut self,
        selector: &S,
        request: &Request<'_>,
        target: Option<Target>,
        hard: bool,
    ) -> (Result<Reservation<'p, W>, Error>, Outcome) {
        let mut outcome = Outcome::default();
        let picked = binding::reserve(self, selector, request, target, hard, &mut outcome);
        (picked, outcome)
    }
}

impl<W: Clone + Eq + Hash + Send + Sync> Pool<W> {
    /// The binding a session bound to `worker` now holds.
    #[doc(hidden)]
    pub fn binding_target(&self, worker: &W) -> Option<Target> {
        let snap = self.raw.snapshot();
        let &slot = snap.index.get(worker)?;
        Some(Target::new(slot, snap.view.gens[slot as usize]))
    }
}
