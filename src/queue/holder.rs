//! How a ticket and an admission hold their queue: borrowed
//! (`&Queue`: [`Ticket`](super::Ticket), [`Admitted`](super::Admitted)) or
//! shared (`Arc<Queue>`: [`OwnedTicket`](super::OwnedTicket),
//! [`OwnedAdmitted`](super::OwnedAdmitted), `'static` for spawned tasks).
//! One implementation serves both; this trait is what differs.

use super::Queue;
use crate::owned::reservation::OwnedReservation;
use crate::reservation::Reservation;
use crate::selectors::Selector;
use crate::storage::Booked;
use core::hash::Hash;
use std::sync::Arc;

/// A reference to a [`Queue`] that a [`TicketOf`](super::TicketOf) and an
/// [`AdmittedOf`](super::AdmittedOf) keep: `&'q Queue<W, S>` or
/// `Arc<Queue<W, S>>`. Sealed: implemented for those two only.
pub trait QueueRef: sealed::Sealed {}

pub(crate) mod sealed {
    use super::{Booked, Queue, Selector};
    use core::hash::Hash;

    /// The queue reference's parts: its worker and selector types, the
    /// reservation its admissions hold, and how to reach the queue.
    pub trait Sealed: Sized + Unpin {
        type Worker: Clone + Eq + Hash + Send + Sync;
        type Selector: Selector;
        /// [`Reservation`](crate::Reservation) or
        /// [`OwnedReservation`](crate::OwnedReservation).
        type Reservation;

        fn queue(&self) -> &Queue<Self::Worker, Self::Selector>;

        // Unreachable from outside the crate: the trait is sealed.
        #[allow(private_interfaces)]
        fn hold(&self, booked: Booked<Self::Worker>) -> Self::Reservation;

        fn worker(r: &Self::Reservation) -> &Self::Worker;
        fn weight(r: &Self::Reservation) -> u32;
        fn release_part(r: &mut Self::Reservation, n: u32) -> u32;
    }
}

impl<'q, W: Clone + Eq + Hash + Send + Sync, S: Selector> sealed::Sealed for &'q Queue<W, S> {
    type Worker = W;
    type Selector = S;
    type Reservation = Reservation<'q, W>;

    fn queue(&self) -> &Queue<W, S> {
        self
    }

    #[allow(private_interfaces)]
    fn hold(&self, booked: Booked<W>) -> Reservation<'q, W> {
        Reservation::new(&self.pool, booked)
    }

    fn worker<'r>(r: &'r Reservation<'q, W>) -> &'r W {
        r.worker()
    }

    fn weight(r: &Reservation<'q, W>) -> u32 {
        r.weight()
    }

    fn release_part(r: &mut Reservation<'q, W>, n: u32) -> u32 {
        r.release_part(n)
    }
}

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> QueueRef for &Queue<W, S> {}

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> sealed::Sealed for Arc<Queue<W, S>> {
    type Worker = W;
    type Selector = S;
    type Reservation = OwnedReservation<W>;

    fn queue(&self) -> &Queue<W, S> {
        self
    }

    #[allow(private_interfaces)]
    fn hold(&self, booked: Booked<W>) -> OwnedReservation<W> {
        OwnedReservation::new(&self.anchor, booked)
    }

    fn worker(r: &OwnedReservation<W>) -> &W {
        r.worker()
    }

    fn weight(r: &OwnedReservation<W>) -> u32 {
        r.weight()
    }

    fn release_part(r: &mut OwnedReservation<W>, n: u32) -> u32 {
        r.release_part(n)
    }
}

impl<W: Clone + Eq + Hash + Send + Sync, S: Selector> QueueRef for Arc<Queue<W, S>> {}
