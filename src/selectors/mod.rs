//! The plug-in point, [`Selector`], which built-ins and custom policies
//! implement alike; its answer, [`Choice`]; the built-in modes and the one
//! list that declares them ([`builtins!`]). The trait lives beside the list
//! because its hidden hook names the built-ins. A new built-in is its own
//! file here plus one entry in the list, which feeds the modules, the
//! re-exports, the [`Builtin`] dispatch enum, [`Mode`](crate::Mode) and the
//! registry. See [`docs::design`](crate::docs::design), "The mode list".

mod choice;
pub(crate) mod rules;

pub use choice::Choice;

use crate::context::Context;
use crate::error::Error;

/// Calls `$then!` with `($($args)*)` and then the list of built-in modes, one
/// entry each: its doc line, its type and module, its canonical name, then the
/// other spellings `Mode`'s `FromStr` accepts (all in canonical form: lower
/// case, `-`). The order is the order `Mode::ALL` and the registry list them.
macro_rules! builtins {
    ($then:ident $(($($args:tt)*))?) => {
        $then! {
            ($($($args)*)?)
            /// [`Random`](crate::Random): one uniform draw.
            Random(random) "random";
            /// [`RoundRobin`](crate::RoundRobin): a shared cursor.
            RoundRobin(round_robin) "round-robin" | "roundrobin" | "rr";
            /// [`LeastLoaded`](crate::LeastLoaded): the minimum in-flight load.
            LeastLoaded(least_loaded) "least-loaded" | "leastloaded";
            /// [`PowerOfTwo`](crate::PowerOfTwo): the less loaded of two draws.
            PowerOfTwo(power_of_two) "power-of-two" | "poweroftwo" | "power-of-two-choices" | "p2c";
            /// [`DeviceAware`](crate::DeviceAware): CPU/accelerator balance and cache hits.
            DeviceAware(device_aware) "device-aware" | "deviceaware" | "device-aware-weighted";
            /// [`Affinity`](crate::Affinity): consistent hashing with bounded loads.
            Affinity(affinity) "affinity" | "consistent-hash" | "bounded-load";
            /// [`Cost`](crate::Cost): load less weighted cache credit, minimum or softmax.
            Cost(cost) "cost" | "kv-cost" | "cache-cost";
            /// [`LatencyPowerOfTwo`](crate::LatencyPowerOfTwo): the cheaper of two draws by latency × load.
            LatencyPowerOfTwo(latency_power_of_two) "latency-power-of-two" | "latency-p2c" | "peak-ewma" | "peak-ewma-p2c";
            /// [`LatencyLeastLoaded`](crate::LatencyLeastLoaded): the minimum latency × load.
            LatencyLeastLoaded(latency_least_loaded) "latency-least-loaded" | "peak-ewma-least-loaded";
            /// [`ReplicaLeastLoaded`](crate::ReplicaLeastLoaded): own bookings over peers' stale reports.
            ReplicaLeastLoaded(replica_least_loaded) "replica-least-loaded" | "replica-ll";
        }
    };
}
pub(crate) use builtins;

/// The crate root's re-exports of the built-in types (`builtins!(reexport)`
/// in `lib.rs`), so a new mode is public without a second list.
macro_rules! reexport {
    (() $($(#[$doc:meta])* $ty:ident($module:ident) $name:literal $(| $alias:literal)*;)*) => {
        pub use crate::selectors::{$($ty),*};
    };
}
pub(crate) use reexport;

/// The modules, their re-exports, the [`Builtin`] enum and each type's
/// canonical name.
macro_rules! declare {
    (() $($(#[$doc:meta])* $ty:ident($module:ident) $name:literal $(| $alias:literal)*;)*) => {
        $(
            pub(crate) mod $module;
            pub use $module::$ty;

            impl $ty {
                /// The canonical name, as the mode list spells it.
                pub(crate) const NAME: &'static str = $name;
            }

            impl<'s> From<&'s $ty> for Builtin<'s> {
                #[inline(always)]
                fn from(s: &'s $ty) -> Self {
                    Builtin::$ty(s)
                }
            }
        )*

        /// The built-in modes, by reference (see [`Selector::builtin`]).
        #[doc(hidden)]
        #[derive(Clone, Copy, Debug)]
        pub enum Builtin<'s> {
            $($ty(&'s $ty),)*
        }
    };
}
builtins!(declare);

pub use crate::credit::tuning::{CreditWeight, Temperature};

/// A selection policy.
///
/// `choose` looks at the candidates through a [`Context`] and names one. It is
/// called with `&self` from many threads at once, so any state it keeps must
/// be atomic (as [`RoundRobin`](crate::RoundRobin)'s cursor is). The pool does
/// the booking: when the choice carries the load it compared
/// ([`Choice::validated`]), a reservation lands only if that load is still
/// current (compare-and-swap), and otherwise `choose` is asked again, a bounded
/// number of times.
///
/// ```
/// use workerpick::custom::{Choice, Context};
/// use workerpick::{Pool, Selector};
///
/// /// Always the first candidate.
/// struct First;
/// impl Selector for First {
///     fn name(&self) -> &str { "first" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         cx.candidate(0).map(Choice::unvalidated)
///     }
/// }
///
/// let pool = Pool::from_workers([10, 20, 30]).unwrap();
/// let dynamic: &dyn Selector = &First;
/// assert_eq!(pool.select(dynamic).unwrap(), 10);
/// ```
pub trait Selector: Send + Sync {
    /// The name a [`Registry`](crate::Registry) knows it by.
    fn name(&self) -> &str;

    /// Picks one candidate, or `None` if it finds none acceptable.
    fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>>;

    /// The built-in mode behind this selector, if it is one: lets a call
    /// through `&dyn Selector` take the same inlined path as a direct call.
    /// Custom selectors keep the default.
    #[doc(hidden)]
    #[inline(always)]
    fn builtin(&self) -> Option<Builtin<'_>> {
        None
    }
}

/// A selector behind a reference or a smart pointer is the selector: the
/// pointer forwards every call, the hidden hook included, so a boxed or
/// shared built-in still takes its inlined path.
macro_rules! forward {
    ($($pointer:ty),*) => {$(
        impl<S: Selector + ?Sized> Selector for $pointer {
            fn name(&self) -> &str {
                (**self).name()
            }

            #[inline(always)]
            fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
                (**self).choose(cx)
            }

            #[inline(always)]
            fn builtin(&self) -> Option<Builtin<'_>> {
                (**self).builtin()
            }
        }
    )*};
}
forward!(&S, Box<S>, std::sync::Arc<S>);

/// How a built-in is made from its parameters. Parameters are whole numbers,
/// read by canonical name; which ones a mode takes is part of the mode, so its
/// own file says.
pub(crate) trait Configure: Selector + Default + 'static {
    /// The parameters it takes, by canonical name.
    const PARAMETERS: &'static [&'static str] = &[];

    /// How it keeps load off a busy worker, as a phrase that follows "It"
    /// (`None`: it does not compare load). No default: a new built-in says.
    const LOAD_RULE: Option<&'static str>;

    /// Whether reservations held together split exactly evenly over equal
    /// idle workers (n × k of them over n workers land k on each). No
    /// default: a new built-in says.
    const SPLITS_EVENLY: bool;

    /// The selector for the values `param` reads (`None`: not set). The
    /// default takes no parameters.
    fn configure(param: impl Fn(&str) -> Result<Option<u32>, Error>) -> Result<Self, Error> {
        let _ = param;
        Ok(Self::default())
    }
}

#[cfg(test)]
mod tests;
