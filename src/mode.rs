use crate::registry::Params;
use crate::{DeviceAware, Error, LeastLoaded, PowerOfTwo, Random, RoundRobin, Selector};
use core::fmt;
use core::str::FromStr;
use std::sync::Arc;

/// The built-in modes, by name: what a `--router-mode` flag or a config file
/// names.
///
/// `Display` writes the canonical name (the one [`Selector::name`] returns);
/// `FromStr` accepts it and the common spellings, ignoring ASCII case and
/// treating `_` and spaces like `-`:
///
/// | mode | accepted |
/// |---|---|
/// | [`Random`](Mode::Random) | `random` |
/// | [`RoundRobin`](Mode::RoundRobin) | `round-robin`, `roundrobin`, `rr` |
/// | [`LeastLoaded`](Mode::LeastLoaded) | `least-loaded`, `leastloaded` |
/// | [`PowerOfTwo`](Mode::PowerOfTwo) | `power-of-two`, `poweroftwo`, `power-of-two-choices`, `p2c` |
/// | [`DeviceAware`](Mode::DeviceAware) | `device-aware`, `deviceaware`, `device-aware-weighted` |
///
/// With the `serde` feature it (de)serializes as that string, with the same
/// spellings accepted.
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
    /// [`Random`]: one uniform draw.
    Random,
    /// [`RoundRobin`]: a shared cursor.
    RoundRobin,
    /// [`LeastLoaded`]: the minimum in-flight load.
    LeastLoaded,
    /// [`PowerOfTwo`]: the less loaded of two draws.
    PowerOfTwo,
    /// [`DeviceAware`]: CPU/accelerator balance and cache hits.
    DeviceAware,
}

impl Mode {
    /// Every built-in mode, in the order the registry lists them.
    pub const ALL: [Mode; 5] = [
        Mode::Random,
        Mode::RoundRobin,
        Mode::LeastLoaded,
        Mode::PowerOfTwo,
        Mode::DeviceAware,
    ];

    /// The canonical name.
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Random => "random",
            Mode::RoundRobin => "round-robin",
            Mode::LeastLoaded => "least-loaded",
            Mode::PowerOfTwo => "power-of-two",
            Mode::DeviceAware => "device-aware",
        }
    }

    /// Every spelling `FromStr` accepts, in canonical form (lower case, `-`).
    const fn spellings(self) -> &'static [&'static str] {
        match self {
            Mode::Random => &["random"],
            Mode::RoundRobin => &["round-robin", "roundrobin", "rr"],
            Mode::LeastLoaded => &["least-loaded", "leastloaded"],
            Mode::PowerOfTwo => &["power-of-two", "poweroftwo", "power-of-two-choices", "p2c"],
            Mode::DeviceAware => &["device-aware", "deviceaware", "device-aware-weighted"],
        }
    }

    /// The mode `name` spells, if any (no allocation).
    pub(crate) fn lookup(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.spellings().iter().any(|s| same_name(name, s)))
    }

    /// The parameters this mode takes, by canonical name.
    pub const fn parameters(self) -> &'static [&'static str] {
        match self {
            Mode::DeviceAware => &["cpu-ratio"],
            _ => &[],
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
            Mode::Random => Arc::new(Random::new()),
            Mode::RoundRobin => Arc::new(RoundRobin::new()),
            Mode::LeastLoaded => Arc::new(LeastLoaded::new()),
            Mode::PowerOfTwo => Arc::new(PowerOfTwo::new()),
            Mode::DeviceAware => Arc::new(DeviceAware::new()),
        }
    }

    /// A new selector for this mode configured by `params`; a parameter the
    /// mode does not take, or a value out of range, is an
    /// [`Error::InvalidConfig`].
    ///
    /// ```
    /// use workerpick::{Mode, Params};
    /// let ok = Mode::DeviceAware.build(&Params::new().set("cpu-ratio", 4));
    /// assert!(ok.is_ok());
    /// assert!(Mode::DeviceAware.build(&Params::new().set("cpu-ratio", 0)).is_err());
    /// assert!(Mode::Random.build(&Params::new().set("cpu-ratio", 4)).is_err());
    /// ```
    pub fn build(self, params: &Params) -> Result<Arc<dyn Selector>, Error> {
        params.expect_only(self.name(), self.parameters())?;
        match self {
            Mode::DeviceAware => {
                let ratio = params
                    .get_u32("cpu-ratio")?
                    .unwrap_or(DeviceAware::DEFAULT_CPU_RATIO);
                Ok(Arc::new(DeviceAware::with_cpu_ratio(ratio)?))
            }
            _ => Ok(self.selector()),
        }
    }

    /// The canonical names of every built-in mode.
    pub(crate) fn names() -> impl Iterator<Item = &'static str> {
        Mode::ALL.into_iter().map(Mode::name)
    }
}

/// Whether `given` spells `canonical` (lower case, `-`-separated), ignoring
/// ASCII case, surrounding whitespace, and `_` or spaces in place of `-`.
pub(crate) fn same_name(given: &str, canonical: &str) -> bool {
    let given = given.trim();
    given.len() == canonical.len() && given.bytes().zip(canonical.bytes()).all(|(g, c)| fold(g) == c)
}

/// One byte of a name in canonical form (bytes of non-ASCII characters are
/// left as they are).
fn fold(b: u8) -> u8 {
    match b {
        b'_' | b' ' => b'-',
        _ => b.to_ascii_lowercase(),
    }
}

/// `name` in the canonical form [`same_name`] compares against.
pub(crate) fn canonical(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
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
