//! The source layout's rules, checked on the source text: modules import from
//! the module that defines a name (not through the crate root's re-exports),
//! file-level imports form no circle, and `unsafe` stays in the files that
//! hold the storage and the scan kernels, plus the few listed here with why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, by path relative to `src/`, without its
/// unit tests (`tests.rs` files, files under a `tests/` folder, and what
/// follows `#[cfg(test)] mod tests`).
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if name.ends_with("tests.rs") || name.contains("tests/") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let code = match text.find("#[cfg(test)]\nmod tests") {
                    Some(at) => text[..at].to_string(),
                    None => text,
                };
                out.insert(name, code);
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// The code lines of `text`: no comments, no doc lines.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// The module path (`["owned", "handle"]`) of a file (`owned/handle.rs`).
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The file that defines the longest prefix of `path` (module segments).
fn file_of(path: &[String], files: &BTreeMap<String, String>) -> Option<String> {
    (1..=path.len()).rev().find_map(|n| {
        let stem = path[..n].join("/");
        [format!("{stem}.rs"), format!("{stem}/mod.rs")]
            .into_iter()
            .find(|f| files.contains_key(f))
    })
}

/// The lower-case (module) segments that `rest` starts with:
/// `storage::keys::KeyPtr` gives `storage`, `keys`.
fn segments(rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = rest;
    loop {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let ident = &rest[..end];
        if ident.is_empty() || !ident.starts_with(|c: char| c.is_ascii_lowercase()) {
            return out;
        }
        out.push(ident.to_string());
        match rest[end..].strip_prefix("::") {
            Some(next) => rest = next,
            None => return out,
        }
    }
}

/// The crate root's re-exports: each name with the module path it comes from.
fn reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for line in code_lines(lib) {
        let Some(rest) = line.strip_prefix("pub use ") else {
            continue;
        };
        let path = segments(rest);
        let tail = &rest[path.iter().map(|p| p.len() + 2).sum::<usize>()..];
        let names = tail
            .trim_start_matches('{')
            .trim_end_matches(';')
            .trim_end_matches('}');
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            out.insert(name.to_string(), path.clone());
        }
    }
    out
}

/// File-level import edges: `file -> files it names through `crate::` or
/// `super::`; a name taken from the crate root counts as an edge to the
/// module it is re-exported from.
fn edges(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let reexported = reexports(&files["lib.rs"]);
    let mut graph = BTreeMap::new();
    for (file, text) in files {
        let module = module_of(file);
        let mut to = BTreeSet::new();
        for line in code_lines(text) {
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let mut paths = vec![segments(rest)];
                if paths[0].is_empty() {
                    let names = rest.trim_start_matches('{');
                    let names = &names[..names.find(['}', ';', '(', ':']).unwrap_or(names.len())];
                    paths = names
                        .split(',')
                        .filter_map(|n| reexported.get(n.trim()).cloned())
                        .collect();
                }
                for path in paths {
                    if let Some(target) = file_of(&path, files) {
                        to.insert(target);
                    }
                }
            }
            for (at, _) in line.match_indices("super::") {
                let mut path = module[..module.len().saturating_sub(1)].to_vec();
                path.extend(segments(&line[at + "super::".len()..]));
                if let Some(target) = file_of(&path, files) {
                    to.insert(target);
                }
            }
        }
        to.remove(file);
        to.remove("lib.rs");
        graph.insert(file.clone(), to);
    }
    graph
}

#[test]
fn modules_import_from_the_defining_module() {
    let mut hub = Vec::new();
    for (file, text) in sources() {
        if file == "lib.rs" {
            continue;
        }
        for line in code_lines(&text) {
            for (at, _) in line.match_indices("crate::") {
                let next = line[at + "crate::".len()..].chars().next();
                if next.is_some_and(|c| c == '{' || c.is_ascii_uppercase()) {
                    hub.push(format!("{file}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        hub.is_empty(),
        "imports through the crate root's re-exports:\n{}",
        hub.join("\n")
    );
}

#[test]
fn file_imports_form_no_circle() {
    let files = sources();
    let graph = edges(&files);
    // Depth-first search for a back edge; report the circle it closes.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(circle) = visit(node, &graph, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", circle.join(" -> "));
        }
    }
}

#[test]
fn unsafe_stays_in_the_storage_and_the_scan() {
    // Files outside `storage/` and `scan/` that may say `unsafe`, with the
    // number of code lines that do, and why it cannot be safe code (each
    // site's SAFETY comment says it in full). A new file, a new site in a
    // listed one, or a listed file that no longer needs it fails here: the
    // list is kept exact.
    let allowed: [(&str, usize); 8] = [
        // The counter array: a zeroed allocation (an array sized for the
        // worker limit, untouched pages until used) read through a raw base
        // (a boxed slice would make a reference to all of it on every pick,
        // which Miri pays for), so `Send`/`Sync` by hand; freed in `drop`.
        ("sync.rs", 6),
        // The per-snapshot cache of translated masks: cells filled once by a
        // compare-and-swap of a boxed pointer (a `OnceLock` blocks racing
        // initialisers, and this runs on the lock-free pick), freed with the
        // snapshot.
        ("remap.rs", 4),
        // Assigning and clearing a slot's key: picks read keys with no lock
        // or count, so only the writer can prove nothing reaches the slot
        // (fresh, or shown quiet by `reclaim`).
        ("membership.rs", 2),
        // Reading a chosen slot's key address before the compare-and-swap:
        // the pick's snapshot, then the booking, keeps the slot (no `Arc`
        // per key: a locked instruction per pick).
        ("booking.rs", 3),
        // Reading the booked key back: the owner (a pool borrow, an anchor)
        // keeps the storage and the booking keeps the slot; no copy of the
        // key per reservation.
        ("reservation.rs", 1),
        ("owned/reservation.rs", 1),
        // The bounds on scores, installed once and freed with the counters'
        // bounds: an `AtomicPtr` from `crate::sync` so that loom models its
        // publication (std's `OnceLock` is invisible to loom).
        ("bounds/loads.rs", 3),
        // The session table's clock: one FFI call (`clock_gettime` on the
        // coarse monotonic clock, into a local `timespec`), on 64-bit Linux;
        // std has no coarse clock.
        ("affinity/clock.rs", 2),
    ];
    let mut found = BTreeMap::new();
    for (file, text) in sources() {
        let sites = code_lines(&text)
            .filter(|l| l.contains("unsafe ") || l.contains("unsafe{"))
            .count();
        if sites > 0 && !file.starts_with("storage/") && !file.starts_with("scan/") && file != "lib.rs" {
            found.insert(file, sites);
        }
    }
    let allowed: BTreeMap<String, usize> = allowed.iter().map(|&(f, n)| (f.to_string(), n)).collect();
    assert_eq!(
        found, allowed,
        "`unsafe` outside the storage and the scan (file: code lines) differs from the list \
         above: move it behind the storage or the scan, or list it with why it cannot be safe code"
    );
}

/// The top-level module (`owned` for `owned/handle.rs`, `booking` for
/// `booking.rs`) a file belongs to.
fn top_of(file: &str) -> String {
    module_of(file).first().cloned().unwrap_or_default()
}

/// The strongly connected groups of more than one node (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, node: &'g str) {
            let at = self.index.len();
            self.index.insert(node, at);
            self.low.insert(node, at);
            self.stack.push(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let at = self.stack.iter().rposition(|&n| n == node).unwrap();
                let group: Vec<String> = self.stack.drain(at..).map(String::from).collect();
                if group.len() > 1 {
                    self.out.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.out
}

#[test]
fn top_level_modules_form_no_circle() {
    let files = sources();
    let mut folded: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut arrows: Vec<(String, String, String, String)> = Vec::new();
    for (file, to) in edges(&files) {
        let from = top_of(&file);
        let entry = folded.entry(from.clone()).or_default();
        for target in to {
            let top = top_of(&target);
            if top != from && top != "docs" {
                entry.insert(top.clone());
                arrows.push((from.clone(), top, file.clone(), target));
            }
        }
    }
    let found = circles(&folded);
    let mut why = String::new();
    for group in &found {
        why.push_str(&format!("\ncircle of {}: {}\n", group.len(), group.join(", ")));
        for (from, to, file, target) in &arrows {
            if group.contains(from) && group.contains(to) {
                why.push_str(&format!("  {file} -> {target}\n"));
            }
        }
    }
    assert!(found.is_empty(), "top-level modules form circles:{why}");
}

#[test]
fn the_root_shows_about_twenty_names() {
    // The names the crate root documents (its `pub use` items not hidden),
    // besides the built-in modes (`builtins!(reexport)`): the rest belong in
    // the topic modules (`pairs`, `replicas`, `sessions`, `latency`, `custom`,
    // `tuning`, `limits`, ...), as hashbrown's root keeps a handful.
    let lib = &sources()["lib.rs"];
    let mut shown = Vec::new();
    let mut hidden = false;
    let mut item = String::new();
    for raw in code_lines(lib) {
        // Items of the root only: the topic modules' own `pub use` lines are indented.
        let line = raw.trim();
        if raw.starts_with(' ') && item.is_empty() {
            continue;
        }
        if line == "#[doc(hidden)]" {
            hidden = true;
            continue;
        }
        if line.starts_with("#[") {
            continue;
        }
        if item.is_empty() && !line.starts_with("pub use ") {
            hidden = false;
            continue;
        }
        item.push_str(line);
        if !line.ends_with(';') {
            continue;
        }
        if !hidden {
            let names = item.rsplit("::").next().unwrap().trim_matches(['{', '}', ';']);
            shown.extend(
                names
                    .split(',')
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty()),
            );
        }
        item.clear();
        hidden = false;
    }
    assert!(
        shown.len() <= 22,
        "the crate root documents {} names (at most 22): {shown:?}",
        shown.len()
    );
}

#[test]
fn feature_gated_modules_rerun() {
    // `ci/test.sh` reruns, with every feature, only the suite's modules that
    // hold feature-gated tests; a module that gains one and is not named
    // there would never run it.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(root.join("ci/test.sh")).unwrap();
    let line = script
        .lines()
        .find(|l| l.starts_with("cargo test --all-features --test suite -- "))
        .expect("ci/test.sh reruns the suite with every feature, filtered");
    let filters: Vec<&str> = line.split(" -- ").nth(1).unwrap().split_whitespace().collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("tests/suite")).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()) else {
            continue;
        };
        // This file names the patterns, and has no gated test.
        if name == "layout" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let gated = ["cfg(feature", "cfg(all(feature", "cfg(any(feature"]
            .iter()
            .any(|p| text.contains(p));
        if gated && !filters.iter().any(|f| format!("{name}::").starts_with(f)) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "suite modules with feature-gated tests that ci/test.sh does not rerun with every feature: {missing:?}"
    );
}
