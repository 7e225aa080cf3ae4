use crate::error::Error;
use crate::mode::Mode;
use crate::names::{canonical, same_name};
use crate::selectors::Selector;
use core::fmt;
use core::str::FromStr;
use std::sync::Arc;

type Factory = Arc<dyn Fn(&Params) -> Result<Arc<dyn Selector>, Error> + Send + Sync>;

/// Resolves selectors by name: the six built-in modes, always, and any
/// custom selectors registered beside them.
///
/// The built-ins (`random`, `round-robin`, `least-loaded`, `power-of-two`,
/// `device-aware`, `cost`, and the spellings [`Mode`] accepts) are not entries that a
/// registry could lack: every registry resolves them, however it was built,
/// and no custom selector can take their names. Names are compared ignoring
/// ASCII case, with `_` and spaces equal to `-`.
///
/// [`resolve`](Self::resolve) builds a new selector each time (a resolved
/// round-robin has its own cursor) and returns it as an `Arc<dyn Selector>`:
/// share that `Arc` between router threads, and pass `&*selector` to a pick.
/// Called this way a built-in costs one virtual call more than a direct call
/// (to learn which built-in it is), then runs the built-in's own inlined path:
/// a visible share of the cheapest modes (random, round-robin), hardly any of
/// a scanning one (BENCHMARKS.md has the counts). Where that matters, match on
/// the [`Mode`] and call the concrete type.
///
/// ```
/// use workerpick::custom::{Choice, Context};
/// use workerpick::{Params, Pool, Registry, Selector};
///
/// /// The last candidate, always.
/// struct Last;
/// impl Selector for Last {
///     fn name(&self) -> &str { "last" }
///     fn choose<'a>(&self, cx: &mut Context<'a>) -> Option<Choice<'a>> {
///         cx.candidate(cx.len().checked_sub(1)?).map(Choice::unvalidated)
///     }
/// }
///
/// let mut registry = Registry::new();
/// registry.register("last", |_: &Params| Ok(Last)).unwrap();
///
/// let pool = Pool::from_workers(["a", "b", "c"]).unwrap();
/// let mode = registry.resolve("last").unwrap();
/// assert_eq!(pool.select(&*mode).unwrap(), "c");
/// // The built-ins are always there, under their common spellings too.
/// let rr = registry.resolve("round_robin").unwrap();
/// assert_eq!(rr.name(), "round-robin");
/// // A ratio of 0 is refused when the selector is built, not replaced.
/// let bad = registry.resolve_with("device-aware", &"cpu-ratio=0".parse().unwrap());
/// assert!(bad.is_err());
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    /// Custom selectors: name as registered, name in canonical form, factory.
    custom: Vec<(String, String, Factory)>,
}

impl Registry {
    /// A registry holding the built-in modes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `factory` under `name`. It is called on every
    /// [`resolve`](Self::resolve) of that name with the caller's parameters;
    /// refuse the ones you do not take with [`Params::expect_only`].
    ///
    /// A name already present (a built-in mode or one of its spellings, or a
    /// custom name, compared as [`Registry`] compares names) is an
    /// [`Error::DuplicateSelector`]; an empty name is an
    /// [`Error::InvalidConfig`].
    pub fn register<S, F>(&mut self, name: &str, factory: F) -> Result<&mut Self, Error>
    where
        S: Selector + 'static,
        F: Fn(&Params) -> Result<S, Error> + Send + Sync + 'static,
    {
        let name = name.trim();
        if name.is_empty() {
            return Err(Error::InvalidConfig {
                what: "selector name",
                why: "it is empty; give the selector a name to resolve it by".into(),
            });
        }
        let builtin = Mode::lookup(name).is_some();
        if builtin || self.custom(name).is_some() {
            return Err(Error::DuplicateSelector {
                name: name.to_owned(),
                builtin,
            });
        }
        let canonical = canonical(name);
        let factory: Factory = Arc::new(move |params| Ok(Arc::new(factory(params)?) as Arc<dyn Selector>));
        self.custom.push((name.to_owned(), canonical, factory));
        Ok(self)
    }

    /// A new selector for `name` with its default parameters.
    pub fn resolve(&self, name: &str) -> Result<Arc<dyn Selector>, Error> {
        self.resolve_with(name, &Params::new())
    }

    /// A new selector for `name` configured by `params`, validated now: an
    /// unknown name is an [`Error::UnknownSelector`] listing every name that
    /// resolves; a parameter out of range or not taken by that selector, an
    /// [`Error::InvalidConfig`].
    pub fn resolve_with(&self, name: &str, params: &Params) -> Result<Arc<dyn Selector>, Error> {
        if let Some(mode) = Mode::lookup(name) {
            return mode.build(params);
        }
        match self.custom(name) {
            Some(factory) => factory(params),
            None => Err(Error::UnknownSelector {
                name: name.to_owned(),
                known: self.names().map(str::to_owned).collect(),
            }),
        }
    }

    /// Whether `name` resolves.
    pub fn contains(&self, name: &str) -> bool {
        Mode::lookup(name).is_some() || self.custom(name).is_some()
    }

    /// Every name that resolves: the built-ins' canonical names, then the
    /// custom names in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        let builtins = Mode::ALL.into_iter().map(|m| -> &str { m.name() });
        builtins.chain(self.custom.iter().map(|(name, _, _)| name.as_str()))
    }

    fn custom(&self, name: &str) -> Option<&Factory> {
        self.custom
            .iter()
            .find(|(_, canonical, _)| same_name(name, canonical))
            .map(|(_, _, factory)| factory)
    }
}

impl Mode {
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
        self.configure(|key| params.get_u32(key))
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

/// Named parameters for a selector, as strings from a command line or a
/// config file; each selector reads and validates its own when it is built.
///
/// Keys are compared as [`Registry`] compares names (`cpu_ratio` is
/// `cpu-ratio`). Parsed from `key=value` pairs separated by commas; a key or
/// value holding a comma or `=` is written in double quotes, as `Display`
/// does, so displayed parameters always parse back to the same ones.
///
/// ```
/// use workerpick::Params;
/// let p: Params = "cpu_ratio=4, zone=eu".parse().unwrap();
/// assert_eq!(p.get_u32("cpu-ratio").unwrap(), Some(4));
/// assert_eq!(p.get("zone"), Some("eu"));
/// assert_eq!(Params::new().set("cpu-ratio", 4), "cpu-ratio=4".parse().unwrap());
/// assert_eq!(p.to_string(), "cpu-ratio=4,zone=eu");
/// let tricky = Params::new().set("zones", "eu,us").set("expr", "a=b");
/// assert_eq!(tricky.to_string(), r#"zones="eu,us",expr="a=b""#);
/// assert_eq!(tricky.to_string().parse::<Params>().unwrap(), tricky);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    /// Key in canonical form, value.
    pairs: Vec<(String, String)>,
}

impl Params {
    /// No parameters.
    pub const fn new() -> Self {
        Self { pairs: Vec::new() }
    }

    /// Sets `key` to `value` (replacing an earlier value).
    pub fn set(mut self, key: &str, value: impl fmt::Display) -> Self {
        self.insert(key, value);
        self
    }

    /// Sets `key` to `value` in place (replacing an earlier value).
    pub fn insert(&mut self, key: &str, value: impl fmt::Display) -> &mut Self {
        let value = value.to_string();
        match self.pairs.iter_mut().find(|(k, _)| same_name(key, k)) {
            Some((_, v)) => *v = value,
            None => {
                self.pairs.push((canonical(key), value));
            }
        }
        self
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| same_name(key, k))
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key` as a whole number, if set; any other value is an
    /// [`Error::InvalidConfig`].
    pub fn get_u32(&self, key: &str) -> Result<Option<u32>, Error> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        value.trim().parse().map(Some).map_err(|_| Error::InvalidConfig {
            what: "selector parameter",
            why: format!(
                "`{key}` must be a whole number from 0 to {}, got `{value}`",
                u32::MAX
            ),
        })
    }

    /// Every key (in canonical form) and value, in the order first set.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether no parameter is set.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Refuses every key that is not in `allowed`, naming `selector` and what
    /// it takes, so that a misspelt parameter is an error rather than ignored.
    ///
    /// ```
    /// use workerpick::Params;
    /// let p = Params::new().set("cpu-ration", 4);
    /// let err = p.expect_only("device-aware", &["cpu-ratio"]).unwrap_err();
    /// assert!(err.to_string().contains("cpu-ration"));
    /// ```
    pub fn expect_only(&self, selector: &str, allowed: &[&str]) -> Result<(), Error> {
        let Some((key, _)) = self
            .pairs
            .iter()
            .find(|(k, _)| !allowed.iter().any(|a| same_name(a, k)))
        else {
            return Ok(());
        };
        let takes = if allowed.is_empty() {
            "it takes none".to_owned()
        } else {
            format!("it takes: {}", allowed.join(", "))
        };
        Err(Error::InvalidConfig {
            what: "selector parameter",
            why: format!("`{selector}` has no parameter `{key}`; {takes}"),
        })
    }
}

/// `key=value` pairs separated by commas, as [`FromStr`] reads them. A key or
/// value that would not read back as written (one holding `,`, `=`, `"` or
/// `\`, or with space at either end) is written in double quotes, with `"`
/// and `\` escaped by a backslash.
impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, value)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write_part(f, key)?;
            f.write_str("=")?;
            write_part(f, value)?;
        }
        Ok(())
    }
}

fn write_part(f: &mut fmt::Formatter<'_>, part: &str) -> fmt::Result {
    let plain = !part.contains([',', '=', '"', '\\']) && part.trim() == part;
    if plain {
        return f.write_str(part);
    }
    f.write_str("\"")?;
    for c in part.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}

/// Byte offsets of `sep` outside double quotes (a backslash escapes the next
/// character inside them).
fn unquoted(s: &str, sep: char) -> impl Iterator<Item = usize> + '_ {
    let (mut quoted, mut escaped) = (false, false);
    s.char_indices().filter_map(move |(i, c)| {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => return Some(i),
            _ => {}
        }
        None
    })
}

/// One key or value as written: trimmed, and unquoted if it is quoted.
fn read_part(part: &str) -> Result<String, Error> {
    let part = part.trim();
    let Some(inner) = part.strip_prefix('"') else {
        return Ok(part.to_owned());
    };
    let bad = || Error::InvalidConfig {
        what: "selector parameters",
        why: format!("`{part}` opens a quote it does not close, or goes on after it"),
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next().ok_or_else(bad)?),
            '"' if chars.as_str().is_empty() => return Ok(out),
            _ => out.push(c),
        }
    }
    Err(bad())
}

impl FromStr for Params {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let mut params = Params::new();
        let mut start = 0;
        let ends = unquoted(s, ',').chain([s.len()]);
        for end in ends {
            let pair = &s[start..end];
            start = end + 1;
            if pair.trim().is_empty() {
                continue;
            }
            match unquoted(pair, '=').next() {
                Some(eq) if !pair[..eq].trim().is_empty() => {
                    let key = read_part(&pair[..eq])?;
                    params.insert(&key, read_part(&pair[eq + 1..])?);
                }
                _ => {
                    return Err(Error::InvalidConfig {
                        what: "selector parameters",
                        why: format!("`{}` is not `key=value`", pair.trim()),
                    });
                }
            }
        }
        Ok(params)
    }
}

/// Shows a resolved selector by its name, so `Result<Arc<dyn Selector>, _>`
/// can be debugged and unwrapped either way.
impl fmt::Debug for dyn Selector + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Selector").field(&self.name()).finish()
    }
}
