//! Load held for a response's lifetime: wrappers that keep a reservation until
//! a future completes or a stream ends, and give it back exactly once, also
//! when they are dropped early (a client disconnect, a timeout, a cancelled
//! task). They need no runtime: any executor polls them.

mod future;
mod stream;

pub use future::ReservedFuture;
pub use stream::ReservedStream;
