//! Smaller defects, each pinned by a test: a declining selector's error, the
//! `Params` text round trip, and the crate-root docs.

use workerpick::{Choice, Context, Error, Params, Pool, Request, Selector};

/// A custom selector that accepts no candidate.
struct Picky;

impl Selector for Picky {
    fn name(&self) -> &str {
        "picky"
    }
    fn choose<'a>(&self, _: &mut Context<'a>) -> Option<Choice<'a>> {
        None
    }
}

#[test]
fn a_declining_selector_without_a_mask_does_not_blame_a_mask() {
    let pool = Pool::from_workers(0..3u32).unwrap();
    let err = pool.select(&Picky).unwrap_err();
    assert!(!err.to_string().contains("mask"), "{err}");
    assert_eq!(err, Error::NoAcceptableWorker);
    assert_eq!(pool.reserve(&Picky).err(), Some(Error::NoAcceptableWorker));
    assert!(
        pool.loads().iter().all(|&(_, load)| load == 0),
        "a refused pick books nothing"
    );
    assert_eq!(
        pool.handle().preview(&Picky).err(),
        Some(Error::NoAcceptableWorker)
    );
    // With a mask that admits some workers, the mask is not to blame either.
    let some = pool.eligibility(|w| *w == 1);
    let err = pool
        .select_with(&Picky, &Request::new().eligible(&some))
        .unwrap_err();
    assert_eq!(err, Error::NoAcceptableWorker);
    // A mask that admits nobody still says so.
    let none = pool.eligibility(|_| false);
    let err = pool
        .select_with(&Picky, &Request::new().eligible(&none))
        .unwrap_err();
    assert_eq!(err, Error::NoEligibleWorker);
}

#[test]
fn params_display_parses_back() {
    let cases = [
        Params::new().set("zones", "eu,us"),
        Params::new().set("expr", "a=b").set("cpu-ratio", 4),
        Params::new().set("quote", "say \"hi\"").set("path", r"C:\tmp\,x"),
        Params::new().set("padded", "  both ends ").set("empty", ""),
        Params::new().set("odd,key", "v").set("k=2", "=,\"\\"),
        Params::new().set("plain", "eu"),
    ];
    for p in cases {
        let text = p.to_string();
        let back: Params = text.parse().unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(back, p, "{text:?}");
    }
    assert_eq!(Params::new().set("plain", "eu").to_string(), "plain=eu");
    for bad in [r#"a="open"#, r#"a="x"y"#, r#"a="x\"#] {
        assert!(bad.parse::<Params>().is_err(), "{bad:?} should not parse");
    }
}

/// The doc comment just above `pub struct NAME` / `pub enum NAME` in `src`.
fn doc_of(src: &str, name: &str) -> String {
    let lines: Vec<&str> = src.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            l.starts_with(&format!("pub struct {name}")) || l.starts_with(&format!("pub enum {name}"))
        })
        .unwrap_or_else(|| panic!("{name} not found"));
    let mut doc: Vec<&str> = lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim())
        .skip_while(|l| l.starts_with("#["))
        .take_while(|l| l.starts_with("///"))
        .collect();
    doc.reverse();
    doc.join("\n")
}

#[test]
fn public_types_have_runnable_examples() {
    let sources = [
        ("Choice", include_str!("../../src/selectors/choice.rs")),
        ("Intent", include_str!("../../src/context/intent.rs")),
        ("Error", include_str!("../../src/error.rs")),
        ("DeviceKind", include_str!("../../src/device.rs")),
        ("PoolStats", include_str!("../../src/pool/stats.rs")),
    ];
    for (name, src) in sources {
        let doc = doc_of(src, name);
        assert!(doc.contains("/// ```"), "{name} has no example:\n{doc}");
    }
}

#[test]
fn the_crate_root_mode_table_lists_every_mode() {
    let root = include_str!("../../src/lib.rs");
    let table: Vec<&str> = root.lines().filter(|l| l.starts_with("//! | [`")).collect();
    for ty in ["Random", "RoundRobin", "PowerOfTwo", "LeastLoaded", "DeviceAware"] {
        assert!(
            table
                .iter()
                .any(|row| row.starts_with(&format!("//! | [`{ty}`]"))),
            "the mode table has no row for {ty}"
        );
    }
}
