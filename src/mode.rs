//! [`Mode`]: the built-in modes by name, generated from the mode list in
//! `selectors`.

use crate::error::Error;
use crate::names::same_name;
use crate::selectors::Selector;
use crate::selectors::{self, Configure};
use core::fmt;
use core::str::FromStr;
use std::sync::Arc;

/// `Mode`, its names and its factories, one arm per entry of the mode list.
macro_rules! define_mode {
    (() $($(#[$doc:meta])* $ty:ident($module:ident) $name:literal $(| $alias:literal)*;)*) => {
        /// The built-in modes, by name: what a `--router-mode` flag or a config
        /// file names.
        ///
        /// `Display` writes the canonical name (the one [`Selector::name`]
        /// returns); `FromStr` accepts it and the common spellings, ignoring
        /// ASCII case and treating `_` and spaces like `-`:
        ///
        /// | mode | accepted |
        /// |---|---|
        $(#[doc = concat!(
            "| [`", stringify!($ty), "`](Mode::", stringify!($ty), ") | `", $name, "`",
            $(", `", $alias, "`",)* " |"
        )])*
        ///
        /// With the `serde` feature it (de)serializes as that string, with the
        /// same spellings accepted.
        ///
        /// ```
        /// use workerpick::Mode;
        /// let mode: Mode = "Power_Of_Two_Choices".parse().unwrap();
        /// assert_eq!(mode, Mode::PowerOfTwo);
        /// assert_eq!(mode.to_string(), "power-of-two");
        /// let err = "fastest".parse::<Mode>().unwrap_err();
        /// assert!(err.to_string().contains("round-robin"));
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Mode {
            $($(#[$doc])* $ty,)*
        }

        impl Mode {
            /// Every built-in mode, in the order the registry lists them.
            pub const ALL: [Mode; [$(stringify!($ty)),*].len()] = [$(Mode::$ty),*];

            /// The canonical name.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Mode::$ty => $name,)*
                }
            }

            /// Every spelling `FromStr` accepts, in canonical form (lower case, `-`).
            const fn spellings(self) -> &'static [&'static str] {
                match self {
                    $(Mode::$ty => &[$name $(, $alias)*],)*
                }
            }

            /// The parameters this mode takes, by canonical name.
            pub const fn parameters(self) -> &'static [&'static str] {
                match self {
                    $(Mode::$ty => <selectors::$ty as Configure>::PARAMETERS,)*
                }
            }

            /// How this mode keeps load off a busy worker, as a phrase that
            /// follows "It" (`None`: it does not compare load, so neither
            /// load nor what other replicas report of it changes its picks).
            ///
            /// ```
            /// use workerpick::Mode;
            /// assert_eq!(Mode::RoundRobin.load_rule(), None);
            /// assert!(Mode::LeastLoaded.load_rule().unwrap().contains("fewest"));
            /// ```
            pub const fn load_rule(self) -> Option<&'static str> {
                match self {
                    $(Mode::$ty => <selectors::$ty as Configure>::LOAD_RULE,)*
                }
            }

            /// Whether reservations held together split exactly evenly over
            /// equal idle workers (n × k of them over n workers land k on
            /// each): round-robin's cursor and the minimum's scans do (the
            /// latency and replica minimums too, where the estimates are equal
            /// and no peer reports); random draws and the ring do not.
            pub const fn splits_evenly(self) -> bool {
                match self {
                    $(Mode::$ty => <selectors::$ty as Configure>::SPLITS_EVENLY,)*
                }
            }

            /// A new selector for this mode with its default parameters.
            ///
            /// ```
            /// use workerpick::{Mode, Pool};
            /// let pool = Pool::from_workers([1, 2, 3]).unwrap();
            /// let rr = Mode::RoundRobin.selector();
            /// assert_eq!(pool.select(&*rr).unwrap(), 1);
            /// ```
            pub fn selector(self) -> Arc<dyn Selector> {
                match self {
                    $(Mode::$ty => Arc::new(selectors::$ty::default()),)*
                }
            }

            /// A new selector for this mode, its parameters read by `param`.
            pub(crate) fn configure(
                self,
                param: impl Fn(&str) -> Result<Option<u32>, Error>,
            ) -> Result<Arc<dyn Selector>, Error> {
                Ok(match self {
                    $(Mode::$ty => Arc::new(selectors::$ty::configure(param)?),)*
                })
            }
        }
    };
}
selectors::builtins!(define_mode);

impl Mode {
    /// The mode `name` spells, if any (no allocation).
    pub(crate) fn lookup(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.spellings().iter().any(|s| same_name(name, s)))
    }

    /// The canonical names of every built-in mode.
    pub(crate) fn names() -> impl Iterator<Item = &'static str> {
        Mode::ALL.into_iter().map(Mode::name)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Mode::lookup(s).ok_or_else(|| Error::UnknownSelector {
            name: s.to_owned(),
            known: Mode::names().map(str::to_owned).collect(),
        })
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Mode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a worker selection mode name such as \"round-robin\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Mode, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}
