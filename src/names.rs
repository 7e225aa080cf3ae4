//! How names are compared: selector names, their spellings, and parameter
//! keys all fold the same way, whoever asks (the mode list, the registry,
//! parameters).

/// Whether `given` spells `canonical` (lower case, `-`-separated), ignoring
/// ASCII case, surrounding whitespace, and `_` or spaces in place of `-`.
/// Allocates nothing, so lookups by name may run anywhere.
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
    let fold_char = |c: char| {
        if c.is_ascii() {
            char::from(fold(c as u8))
        } else {
            c
        }
    };
    name.trim().chars().map(fold_char).collect()
}
