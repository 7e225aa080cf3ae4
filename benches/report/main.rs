//! Regenerates `BENCHMARKS.md` from the results of a real run: criterion's
//! `target/criterion/**/{passK,new}/{benchmark,estimates}.json`, the
//! `key=value` files `ci/bench-report.sh` and the benches write to
//! `target/bench-report/` (the run's facts, allocations per operation), and
//! the instruction counts the callgrind gate last measured
//! (`iai/budgets.toml`).
//!
//! The prose lives in `template.md`; every number comes from the files above.
//! Each table is a spec (rows × columns, see [`Col`]) filled from the results
//! by one function, [`grid`].
//!
//! `cargo bench --bench report -- --write` writes `BENCHMARKS.md` (or the file
//! named by `WORKERPICK_REPORT_OUT`) and, in the same folder,
//! `benches/least-loaded-scaling.svg` (the plot, [`plot`]); without `--write` (as under
//! `cargo bench -- --test`) it only renders, and says so.

mod plot;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use workerpick::Mode;

const WORKERS: [usize; 4] = [8, 64, 1024, 10_000];

/// The pool sizes of the weighted benchmarks.
const WEIGHTED_WORKERS: [usize; 3] = [8, 1024, 10_000];
struct Data {
    /// Each benchmark's median ns in every pass that measured it, the first
    /// pass (the whole suite) first; `elements` per iteration for throughputs.
    passes: HashMap<String, Vec<f64>>,
    elements: HashMap<String, f64>,
    /// Every `key=value` line of `target/bench-report/*.txt`.
    facts: BTreeMap<String, String>,
    /// `iai/budgets.toml`: (benchmark, instructions measured, budget), per operation.
    iai: Vec<(String, f64, f64)>,
    /// `target/bench-report/neon.md`: the NEON static-count table that
    /// `ci/aarch64-insns.sh` printed in this run, if the cross tools were there.
    neon: Option<String>,
}

impl Data {
    /// The first pass's median: what the tables show (ours and the reference
    /// measured in the same minute).
    fn ns(&self, id: &str) -> Option<f64> {
        self.passes.get(id).map(|p| p[0])
    }

    /// The lowest of the passes' medians: what the targets are judged on.
    /// Interference on a shared machine only adds time.
    fn best(&self, id: &str) -> Option<f64> {
        self.passes.get(id)?.iter().copied().min_by(f64::total_cmp)
    }

    /// Operations per second of a throughput benchmark.
    fn per_sec(&self, id: &str) -> Option<f64> {
        Some(self.elements.get(id)? * 1e9 / self.ns(id)?)
    }

    fn fact(&self, key: &str) -> &str {
        self.facts.get(key).map_or("(unknown)", String::as_str)
    }

    /// The fastest scan backend over `n` counters (best of the passes).
    fn scan(&self, n: usize) -> Option<f64> {
        self.backends()
            .iter()
            .filter_map(|b| self.best(&format!("scan/{n}/least/{b}")))
            .min_by(f64::total_cmp)
    }

    fn backends(&self) -> Vec<String> {
        let mut b: Vec<String> = (self.passes.keys())
            .filter_map(|k| k.strip_prefix("scan/8/least/").map(str::to_string))
            .collect();
        b.sort();
        b
    }

    /// The thread counts the thread groups ran at (`…/threads{T}…`).
    fn thread_counts(&self) -> Vec<usize> {
        let count = |k: &str| {
            k.split('/')
                .nth(2)?
                .strip_prefix("threads")?
                .split('-')
                .next()?
                .parse()
                .ok()
        };
        let mut c: Vec<usize> = self.passes.keys().filter_map(|k| count(k)).collect();
        c.sort_unstable();
        c.dedup();
        c
    }
}

// ---------------------------------------------------------------- loading

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Criterion's result in one output folder: its id, median and throughput.
fn read_result(dir: &Path) -> Option<(String, f64, Option<f64>)> {
    let read =
        |f: &str| -> Option<Value> { serde_json::from_str(&std::fs::read_to_string(dir.join(f)).ok()?).ok() };
    let (b, e) = (read("benchmark.json")?, read("estimates.json")?);
    Some((
        b["full_id"].as_str()?.to_string(),
        e["median"]["point_estimate"].as_f64()?,
        b["throughput"]["Elements"].as_f64(),
    ))
}

/// Walks criterion's output: a benchmark's folder holds `new` (its latest
/// run) and, when `ci/bench-report.sh` ran it, a `passK` baseline per pass.
fn collect(dir: &Path, data: &mut Data) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let subdirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    let pass = |p: &Path| -> Option<usize> { p.file_name()?.to_str()?.strip_prefix("pass")?.parse().ok() };
    if !subdirs.iter().any(|p| p.ends_with("new") || pass(p).is_some()) {
        return subdirs.iter().for_each(|p| collect(p, data));
    }
    let mut runs: Vec<(usize, PathBuf)> = subdirs
        .iter()
        .filter_map(|p| Some((pass(p)?, p.clone())))
        .collect();
    if runs.is_empty() {
        runs.push((0, dir.join("new")));
    }
    runs.sort();
    for (_, run) in runs {
        if let Some((id, median, elements)) = read_result(&run) {
            data.passes.entry(id.clone()).or_default().push(median);
            if let Some(e) = elements {
                data.elements.insert(id, e);
            }
        }
    }
}

/// `iai/budgets.toml`'s `name = budget  # measured` lines, per operation (the
/// gate runs `OPS` operations per benchmark, `iai/benches/gate.rs`), and the
/// compiler they were measured with.
fn iai_counts() -> (Vec<(String, f64, f64)>, Option<String>) {
    let read =
        |p: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(p)).unwrap_or_default();
    let (gate, budgets) = (read("../iai/benches/gate.rs"), read("../iai/budgets.toml"));
    let ops = gate.lines().find_map(|l| {
        l.strip_prefix("const OPS: u32 = ")?
            .strip_suffix(';')?
            .parse()
            .ok()
    });
    let ops: f64 = ops.unwrap_or(f64::NAN);
    let num = |s: &str| s.trim().replace('_', "").parse::<f64>().ok();
    let counts = (budgets.lines())
        .filter_map(|l| {
            let (name, (budget, measured)) = l
                .split_once('=')
                .and_then(|(n, r)| Some((n, r.split_once('#')?)))?;
            Some((name.trim().to_string(), num(measured)? / ops, num(budget)? / ops))
        })
        .collect();
    let rustc = budgets
        .lines()
        .find_map(|l| l.strip_prefix("# rustc: "))
        .map(String::from);
    (counts, rustc)
}

fn load() -> Data {
    let target = target_dir();
    let (iai, iai_rustc) = iai_counts();
    let mut data = Data {
        passes: HashMap::new(),
        elements: HashMap::new(),
        facts: BTreeMap::new(),
        iai,
        neon: std::fs::read_to_string(target.join("bench-report/neon.md"))
            .ok()
            .filter(|t| t.contains("| pass |")),
    };
    data.facts.extend(iai_rustc.map(|r| ("iai_rustc".to_string(), r)));
    let files = std::fs::read_dir(target.join("bench-report"))
        .into_iter()
        .flatten()
        .flatten();
    for path in files
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
    {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for (k, v) in text.lines().filter_map(|l| l.split_once('=')) {
            data.facts.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    collect(&target.join("criterion"), &mut data);
    data
}

// ---------------------------------------------------------------- formatting

/// A duration in ns, with the precision its size deserves.
fn ns(v: f64) -> String {
    match v {
        v if !v.is_finite() => "—".into(),
        v if v < 10.0 => format!("{v:.2}"),
        v if v < 100.0 => format!("{v:.1}"),
        v => group_digits(v.round() as u64),
    }
}

fn group_digits(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ratio(r: f64) -> String {
    match r {
        r if r >= 100.0 => format!("{}×", group_digits(r.round() as u64)),
        r if r >= 10.0 => format!("{r:.0}×"),
        r => format!("{r:.2}×"),
    }
}

/// Operations per second, three significant digits.
fn per_sec(v: f64) -> String {
    match v {
        v if v >= 10e6 => format!("{:.1} M", v / 1e6),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 10e3 => format!("{:.0} k", v / 1e3),
        v => format!("{:.1} k", v / 1e3),
    }
}

fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut s = line(head);
    s += &format!("|{}\n", "---|".repeat(head.len()));
    rows.iter().for_each(|r| s += &line(r));
    s
}

// ---------------------------------------------------------------- table specs

/// A column of a [`grid`]: its heading and what each row puts under it.
/// Patterns name a result by id, with the row's variables (`{m}`, `{n}`, …)
/// filled in.
enum Col {
    /// Median ns of a criterion benchmark (first pass).
    Ns(String, String),
    /// Operations per second of a criterion throughput benchmark.
    PerSec(String, String),
    /// Allocations per operation, from the run's `key=value` files.
    Allocs(String, String),
    /// The row's variable, as text.
    Var(String, &'static str),
    /// Column `a` ÷ column `b` (indices among the columns).
    Ratio(String, usize, usize),
    /// Column `a` − column `b`, ns.
    Delta(String, usize, usize),
}

fn ns_col(head: &str, pattern: &str) -> Col {
    Col::Ns(head.into(), pattern.into())
}

fn ratio_col(head: &str, a: usize, b: usize) -> Col {
    Col::Ratio(head.into(), a, b)
}

/// A row of a [`grid`]: its label and its variables.
struct Row {
    label: String,
    vars: Vec<(&'static str, String)>,
}

fn row(label: impl Into<String>, vars: &[(&'static str, &dyn ToString)]) -> Row {
    let vars = vars.iter().map(|(k, v)| (*k, v.to_string())).collect();
    Row {
        label: label.into(),
        vars,
    }
}

/// `{m}/{n}` rows for every mode and worker count given.
fn mode_rows(modes: &[&str], workers: &[usize]) -> Vec<Row> {
    let mut rows = Vec::new();
    for m in modes {
        for n in workers {
            rows.push(row(format!("{m}/{n}"), &[("m", m), ("n", n)]));
        }
    }
    rows
}

/// The modes the single-thread groups cover: all but device-aware, which the
/// reference design has no counterpart for, and affinity and cost, which
/// have groups of their own (`affinity/<workers>` beside a lock-based
/// bounded hash, `cost/<workers>` beside a Dynamo-style loop).
fn mode_names() -> Vec<&'static str> {
    (Mode::ALL.iter())
        .filter(|m| !matches!(m, Mode::DeviceAware | Mode::Affinity | Mode::Cost))
        .map(|m| m.name())
        .collect()
}

/// One table: a row per spec row, a cell per column.
fn grid(d: &Data, corner: &str, rows: &[Row], cols: &[Col]) -> String {
    let head: Vec<String> = std::iter::once(corner.to_string())
        .chain(cols.iter().map(|c| match c {
            Col::Ns(h, _) | Col::PerSec(h, _) | Col::Allocs(h, _) | Col::Var(h, _) => h.clone(),
            Col::Ratio(h, ..) | Col::Delta(h, ..) => h.clone(),
        }))
        .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let fill = |p: &str| {
                r.vars
                    .iter()
                    .fold(p.to_string(), |s, (k, v)| s.replace(&format!("{{{k}}}"), v))
            };
            let mut nums: Vec<Option<f64>> = Vec::new();
            let mut cells = vec![r.label.clone()];
            for c in cols {
                let (num, text) = match c {
                    Col::Ns(_, p) => (d.ns(&fill(p)), None),
                    Col::PerSec(_, p) => {
                        let v = d.per_sec(&fill(p));
                        (v, Some(v.map_or("—".into(), per_sec)))
                    }
                    Col::Allocs(_, p) => {
                        let v: Option<f64> = d.facts.get(&fill(p)).and_then(|v| v.parse().ok());
                        (v, Some(v.map_or("—".into(), |v| format!("{v}"))))
                    }
                    Col::Var(_, k) => (None, Some(fill(&format!("{{{k}}}")))),
                    Col::Ratio(_, a, b) => {
                        let v = nums[*a].zip(nums[*b]).filter(|p| p.1 > 0.0).map(|(a, b)| a / b);
                        (v, Some(v.map_or("—".into(), ratio)))
                    }
                    Col::Delta(_, a, b) => {
                        let v = nums[*a].zip(nums[*b]).map(|(a, b)| a - b);
                        let signed = |v: f64| format!("{}{}", if v < 0.0 { "−" } else { "+" }, ns(v.abs()));
                        (v, Some(v.map_or("—".into(), signed)))
                    }
                };
                cells.push(text.unwrap_or_else(|| num.map_or("—".into(), ns)));
                nums.push(num);
            }
            cells
        })
        .collect();
    table(&head, &body)
}

// ---------------------------------------------------------------- targets

/// The primitives an operation cannot avoid, with how many of each: `floor/…`
/// benchmarks, or `scan` (the fastest scan backend at that worker count).
type Parts = &'static [(&'static str, f64)];

/// A single-thread target (reserve + release where the operation is
/// `reserve`): mode, operation, the worker counts it holds at (judged on the
/// worst), ns at most, the floor, and the floor at 10 000 workers (where a
/// drawn worker's counter or key is a read beyond L1).
type Target = (&'static str, &'static str, &'static [usize], f64, Parts, Parts);

const CACHE: (&str, f64) = ("arc_swap-cache-load", 1.0);
const CAS: (&str, f64) = ("compare_exchange", 1.0);
const XADD: (&str, f64) = ("fetch_add", 1.0);
const P2C: Parts = &[CACHE, ("rng-below", 2.0), CAS, XADD];
const P2C_FAR: Parts = &[CACHE, ("rng-below+load-40KB", 2.0), CAS, XADD];
const LL: Parts = &[("scan", 1.0), CACHE, CAS, XADD];
/// Workers from which a default pool's least-loaded pick is summarised.
const SUMMARISED: usize = 1024;

#[rustfmt::skip]
const TARGETS: [Target; 6] = [
    ("random", "select", &WORKERS, 3.0, &[CACHE, ("rng-below", 1.0)], &[CACHE, ("rng-below+load-160KB", 1.0)]),
    ("round-robin", "select", &WORKERS, 4.0, &[CACHE, XADD], &[CACHE, XADD]),
    ("power-of-two", "reserve", &WORKERS, 10.0, P2C, P2C_FAR),
    ("least-loaded", "reserve", &[8], 15.0, LL, LL),
    ("least-loaded", "reserve", &[1024], 45.0, LL, LL),
    ("least-loaded", "reserve", &[10_000], 350.0, LL, LL),
];

fn join(items: impl Iterator<Item = String>, sep: &str) -> String {
    items.collect::<Vec<_>>().join(sep)
}

/// One row of the targets table: met, or missed and how far the floor is.
fn target_row(d: &Data, &(mode, op, at, max, near, far): &Target) -> Vec<String> {
    let id = |n: usize| format!("{mode}/{n}/{op}/workerpick-handle");
    let what = if op == "reserve" {
        "reserve + release"
    } else {
        "select"
    };
    let at_text = if at.len() == 1 {
        format!("at n = {}", at[0])
    } else {
        "at every n".into()
    };
    let mut row = vec![format!("{mode} {what} ≤ {max} ns {at_text}")];
    let worst = (at.iter().filter_map(|&n| Some((d.best(&id(n))?, n)))).max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((v, n)) = worst else {
        row.extend(["—".into(), "not measured".into(), "—".into()]);
        return row;
    };
    let parts = if n >= 10_000 { far } else { near };
    // From `SUMMARISED` workers a default pool's least-loaded pick reads
    // per-block bounds and a few blocks, not every counter: no scan benchmark
    // measures that alone, so its floor leaves the scan out (and says so)
    // rather than count the flat scan it does not do.
    let summarised = n >= SUMMARISED && parts.iter().any(|&(p, _)| p == "scan");
    let parts: Vec<(&str, f64)> = (parts.iter().copied())
        .filter(|&(p, _)| !(summarised && p == "scan"))
        .collect();
    let part = |p: &str| {
        if p == "scan" {
            d.scan(n)
        } else {
            d.best(&format!("floor/{p}"))
        }
    };
    let floor: Option<f64> = parts.iter().map(|&(p, k)| part(p).map(|v| v * k)).sum();
    let all = join(
        at.iter()
            .map(|&n| format!("{n}: {}", d.best(&id(n)).map_or("—".into(), ns))),
        " · ",
    );
    let passes = join(d.passes[&id(n)].iter().map(|&v| ns(v)), " · ");
    row.push(format!(
        "{} at n = {n}<br>{all}<br>passes at n = {n}: {passes}",
        ns(v)
    ));
    row.push(if v <= max {
        format!("**met** ({:.0}% of target)", 100.0 * v / max)
    } else {
        let floor_share = floor.map_or(String::new(), |f| {
            format!("; floor {:.0}% of target", 100.0 * f / max)
        });
        format!(
            "**missed** by {} ns (+{:.0}%){floor_share}",
            ns(v - max),
            100.0 * (v - max) / max
        )
    });
    let names = join(
        parts
            .iter()
            .map(|&(p, k)| if k == 1.0 { p.into() } else { format!("{k}×{p}") }),
        " + ",
    );
    let unmeasured = if summarised {
        " + the summarised pick's reads (bounds, then the blocks at the least; not measured alone)"
    } else {
        ""
    };
    row.push(format!(
        "{} ns at n = {n} = {names}{unmeasured}",
        floor.map_or("—".into(), ns)
    ));
    row
}

fn targets_table(d: &Data) -> String {
    let passes = d.passes.values().map(Vec::len).max().unwrap_or(0);
    let rows: Vec<Vec<String>> = TARGETS.iter().map(|t| target_row(d, t)).collect();
    let head = [
        "target",
        &format!("measured: the lowest of {passes} passes' medians, ns"),
        "verdict",
        "floor",
    ];
    table(&head.map(String::from), &rows)
}

// ---------------------------------------------------------------- the other tables

/// Ours through the handle, `&dyn`, the plain `Pool`, and the reference, for `op`.
fn op_table(d: &Data, op: &str, modes: &[&str]) -> String {
    let p = |imp: &str| format!("{{m}}/{{n}}/{op}/{imp}");
    let cols = [
        ns_col("handle", &p("workerpick-handle")),
        ns_col("handle `&dyn`", &p("workerpick-handle-dyn")),
        Col::Delta("`&dyn` Δ ns".into(), 1, 0),
        ns_col("`Pool`", &p("workerpick-pool")),
        ns_col("reference", &p("reference")),
        ratio_col("reference ÷ handle", 4, 0),
    ];
    grid(d, "mode/workers", &mode_rows(modes, &WORKERS), &cols)
}

/// Ours beside the reference alone, for `op` in group `mode`.
fn vs_reference(d: &Data, op: &str, modes: &[&str]) -> String {
    let cols = [
        ns_col("handle", &format!("{{m}}/{{n}}/{op}/workerpick-handle")),
        ns_col("reference", &format!("{{m}}/{{n}}/{op}/reference")),
        ratio_col("reference ÷ handle", 1, 0),
    ];
    grid(d, "mode/workers", &mode_rows(modes, &WORKERS), &cols)
}

fn worker_read_table(d: &Data) -> String {
    let cols = [
        ns_col("reserve + release", "{m}/{n}/reserve-bare/workerpick-handle"),
        ns_col("… + `*r.worker()`", "{m}/{n}/reserve/workerpick-handle"),
        Col::Delta("Δ ns".into(), 1, 0),
    ];
    grid(d, "mode/workers", &mode_rows(&mode_names(), &WORKERS), &cols)
}

/// Ours beside the peers (`benches/peers`), single thread, with allocations.
fn peers_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for (m, o, peers) in [
        ("random", "select", &["pingora"][..]),
        ("round-robin", "select", &["pingora"]),
        ("power-of-two", "reserve", &["tower-p2c", "tower-p2c-buffer"]),
    ] {
        for p in peers {
            for n in WORKERS {
                rows.push(row(
                    format!("{m}/{n}"),
                    &[("m", &m), ("n", &n), ("o", &o), ("p", p)],
                ));
            }
        }
    }
    let cols = [
        Col::Var("peer, operation".into(), "p"),
        ns_col("peer ns", "{m}/{n}/{o}/{p}"),
        Col::Allocs("peer allocs/op".into(), "{m}/{n}/{o}/{p}".into()),
        ns_col("ours ns", "{m}/{n}/{o}/workerpick-handle"),
        Col::Allocs("ours allocs/op (1024)".into(), "{m}/{o}/workerpick-handle".into()),
        ratio_col("peer ÷ ours", 1, 3),
    ];
    grid(d, "mode/workers", &rows, &cols)
}

/// The owned path (`benches/owned.rs`) beside the borrowed one.
fn owned_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for m in ["random", "power-of-two", "least-loaded"] {
        for t in [1, 2] {
            rows.push(row(
                format!("{m}/64, {t} thread{}", if t > 1 { "s" } else { "" }),
                &[("m", &m), ("t", &t)],
            ));
        }
    }
    let p = |path: &str| format!("{{m}}/64/threads{{t}}/{path}");
    let cols = [
        ns_col("borrowed `Handle`", &p("borrowed")),
        ns_col("`OwnedHandle`", &p("owned")),
        ratio_col("owned ÷ borrowed", 1, 0),
        Col::Delta("Δ ns".into(), 1, 0),
        ns_col("borrowed + `Arc` clone per pick", &p("pool-arc-per-pick")),
        ratio_col("÷ borrowed", 4, 0),
    ];
    grid(d, "mode/workers, threads", &rows, &cols)
}

fn stale_mask_table(d: &Data) -> String {
    let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
    let mut rows = Vec::new();
    for n in [1024, 10_000] {
        for m in &names {
            rows.push(row(format!("{m}/{n}"), &[("m", m), ("n", &n)]));
        }
    }
    let cols = [
        ns_col("fresh mask", "stale-mask/{n}/{m}/fresh"),
        ns_col("after an insert", "stale-mask/{n}/{m}/after-insert"),
        ratio_col("÷ fresh", 1, 0),
        ns_col("after a removal", "stale-mask/{n}/{m}/after-removal"),
        ratio_col("÷ fresh", 3, 0),
    ];
    grid(d, "mode/workers", &rows, &cols)
}

/// Reported load (issue 17): picks with every worker reported at the same load
/// beside the same pool without reports, and applying a 1024-worker summary.
fn reported_table(d: &Data) -> String {
    let rows: Vec<Row> = [8, 1024, 10_000]
        .iter()
        .map(|n| row(format!("{n} workers"), &[("n", n)]))
        .collect();
    let p = |what: &str, how: &str| format!("reported/{{n}}/{what}/{how}");
    let cols = [
        ns_col(
            "least-loaded, local only",
            &p("least-loaded-reserve", "local-only"),
        ),
        ns_col("least-loaded, reported", &p("least-loaded-reserve", "reported")),
        ratio_col("÷ local only", 1, 0),
        ns_col(
            "power-of-two, local only",
            &p("power-of-two-reserve", "local-only"),
        ),
        ns_col("power-of-two, reported", &p("power-of-two-reserve", "reported")),
        ratio_col("÷ local only", 4, 3),
        ns_col(
            "apply a summary, nothing changed",
            &p("apply-summary-steady", "workerpick-handle"),
        ),
        ns_col(
            "apply a summary, every load changed",
            &p("apply-summary-changed", "workerpick-handle"),
        ),
    ];
    grid(d, "pool", &rows, &cols)
}

/// Heterogeneous fleets (issue 18): each mode over capacities 4:2:1:1 beside
/// the same pool unweighted, select and reserve + release, worker read.
fn weighted_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for m in ["random", "round-robin", "power-of-two", "least-loaded"] {
        for n in WEIGHTED_WORKERS {
            rows.push(row(format!("{m}/{n}"), &[("m", &m), ("n", &n)]));
        }
    }
    let p = |op: &str, how: &str| format!("weighted-{{m}}/{{n}}/{op}/{how}");
    let cols = [
        ns_col("select, weighted", &p("select", "workerpick-handle")),
        ns_col("select, unweighted", &p("select", "workerpick-unweighted")),
        ratio_col("÷ unweighted", 0, 1),
        ns_col("reserve, weighted", &p("reserve", "workerpick-handle")),
        ns_col("reserve, unweighted", &p("reserve", "workerpick-unweighted")),
        ratio_col("÷ unweighted", 3, 4),
        ns_col(
            "reserve, unweighted, flat scan",
            &p("reserve", "workerpick-unweighted-flat"),
        ),
        ratio_col("weighted ÷ that", 3, 6),
        ns_col(
            "reserve, unweighted, a quarter at the least load",
            &p("reserve", "workerpick-unweighted-quarter"),
        ),
        ratio_col("weighted ÷ that", 3, 8),
    ];
    grid(d, "mode/workers", &rows, &cols)
}

/// The weighted modes' targets, judged like the main ones on the lowest of
/// the passes' medians (`ci/bench-report.sh` runs these benchmarks in every
/// pass): weighted random select ≤ 5 ns and weighted round-robin select ≤
/// 8 ns at every n, weighted least-loaded reserve + release at 1 024 workers
/// ≤ 1.5× the same pool unweighted.
fn weighted_targets_table(d: &Data) -> String {
    let id = |m: &str, n: usize, op: &str, how: &str| format!("weighted-{m}/{n}/{op}/workerpick-{how}");
    let verdict = |v: f64, max: f64, unit: &str| {
        if v <= max {
            format!("**met** ({:.0}% of target)", 100.0 * v / max)
        } else {
            format!(
                "**missed** by {:.2}{unit} (+{:.0}%)",
                v - max,
                100.0 * (v - max) / max
            )
        }
    };
    let mut rows = Vec::new();
    for (mode, max) in [("random", 5.0), ("round-robin", 8.0)] {
        let measured: Vec<(usize, f64)> = WEIGHTED_WORKERS
            .iter()
            .filter_map(|&n| Some((n, d.best(&id(mode, n, "select", "handle"))?)))
            .collect();
        let mut row = vec![format!("weighted {mode} select ≤ {max} ns at every n")];
        match measured.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)) {
            Some((n, v)) => {
                let all = join(measured.iter().map(|&(n, v)| format!("{n}: {}", ns(v))), " · ");
                let passes = join(
                    d.passes[&id(mode, n, "select", "handle")].iter().map(|&v| ns(v)),
                    " · ",
                );
                row.push(format!(
                    "{} at n = {n}<br>{all}<br>passes at n = {n}: {passes}",
                    ns(v)
                ));
                row.push(verdict(v, max, " ns"));
            }
            None => row.extend(["—".into(), "not measured".into()]),
        }
        rows.push(row);
    }
    let (w, u) = (
        id("least-loaded", 1024, "reserve", "handle"),
        id("least-loaded", 1024, "reserve", "unweighted"),
    );
    let mut row = vec!["weighted least-loaded reserve + release at n = 1024 ≤ 1.5× unweighted".to_string()];
    match (d.best(&w), d.best(&u)) {
        (Some(a), Some(b)) => {
            let passes = |id: &str| join(d.passes[id].iter().map(|&v| ns(v)), " · ");
            row.push(format!(
                "{:.2}× ({} ÷ {})<br>passes, weighted: {}<br>passes, unweighted: {}",
                a / b,
                ns(a),
                ns(b),
                passes(&w),
                passes(&u)
            ));
            row.push(verdict(a / b, 1.5, "×"));
        }
        _ => row.extend(["—".into(), "not measured".into()]),
    }
    rows.push(row);
    let passes = d.passes.values().map(Vec::len).max().unwrap_or(0);
    let head = [
        "target",
        &format!("measured: the lowest of {passes} passes' medians, ns"),
        "verdict",
    ];
    table(&head.map(String::from), &rows)
}

/// The weighted least-loaded scan beside the plain one, per backend, taken
/// apart into the cost of its ties and of its arithmetic.
fn weighted_scan_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for b in d.backends() {
        for n in [8, 1024, 10_000] {
            rows.push(row(format!("`{b}`, {n}"), &[("b", &b), ("n", &n)]));
        }
    }
    let p = |what: &str| format!("weighted-scan/{{n}}/{what}/{{b}}");
    let cols = [
        ns_col("plain, idle (every lane tied)", &p("least")),
        ns_col("plain, a quarter tied", &p("least-quarter-ties")),
        ns_col("weighted, equal capacities", &p("least-weighted-equal")),
        ns_col("weighted, 4:2:1:1", &p("least-weighted")),
        ratio_col("weighted 4:2:1:1 ÷ plain idle", 3, 0),
        ratio_col("ties alone (plain)", 1, 0),
        ratio_col("arithmetic alone", 2, 0),
    ];
    grid(d, "backend, lanes", &rows, &cols)
}

/// Health transitions: mark + unmark, and marking a marked worker again.
fn health_table(d: &Data) -> String {
    let rows: Vec<Row> = [8, 1024]
        .iter()
        .map(|n| row(format!("{n} workers"), &[("n", n)]))
        .collect();
    let cols = [
        ns_col(
            "mark unhealthy + mark healthy",
            "health/{n}/mark-unmark/workerpick-handle",
        ),
        ns_col(
            "mark an unhealthy worker again",
            "health/{n}/mark-again/workerpick-handle",
        ),
    ];
    grid(d, "pool", &rows, &cols)
}

/// The worker counts of `least-loaded-large/{n}` (`benches/single.rs`).
const LARGE: [usize; 3] = [10_000, 100_000, 1_000_000];

/// Least-loaded on large pools: the summarised pick beside the flat scan, idle
/// and with 4 ties, and the reference where it ran.
fn large_table(d: &Data) -> String {
    // The reference at 10 000 workers is `least-loaded/10000`'s.
    let reference = |n: usize| match n {
        10_000 => "least-loaded/10000/reserve/reference".to_string(),
        n => format!("least-loaded-large/{n}/reserve/reference"),
    };
    let rows: Vec<Row> = (LARGE.iter())
        .map(|&n| row(group_digits(n as u64), &[("n", &n), ("r", &reference(n))]))
        .collect();
    let p = |what: &str, how: &str| format!("least-loaded-large/{{n}}/{what}/{how}");
    let cols = [
        ns_col("summarised", &p("reserve", "summarised")),
        ns_col("flat scan", &p("reserve", "flat")),
        ratio_col("flat ÷ summarised", 1, 0),
        ns_col("summarised, 4 ties", &p("reserve-4-ties", "summarised")),
        ratio_col("÷ idle", 3, 0),
        ns_col("flat scan, 4 ties", &p("reserve-4-ties", "flat")),
        ns_col("reference", "{r}"),
        ns_col("floor: random reserve", &p("reserve", "random")),
        Col::Delta("summarised − floor".into(), 0, 7),
        ns_col("random reserve, no bounds", &p("reserve", "random-no-bounds")),
        Col::Delta("bounds' cost to a release".into(), 7, 9),
    ];
    grid(d, "workers", &rows, &cols)
}

/// Where `--write` puts the scaling plot, relative to the report's folder
/// (the link in `template.md`).
const SCALING_SVG: &str = "benches/least-loaded-scaling.svg";

/// Least-loaded reserve + read + release against workers, log-log: the flat
/// scan (default pools, `least-loaded/{n}`, then the flat pools of
/// `least-loaded-large/{n}`), the summarised pick, and the reference. A
/// benchmark that did not run leaves its point out.
fn scaling_svg(d: &Data) -> String {
    let at = |ns: &[usize], id: &dyn Fn(usize) -> String| -> Vec<(f64, f64)> {
        (ns.iter())
            .filter_map(|&n| Some((n as f64, d.ns(&id(n))?)))
            .collect()
    };
    let small = |imp: &'static str| move |n: usize| format!("least-loaded/{n}/reserve/{imp}");
    let large = |imp: &'static str| move |n: usize| format!("least-loaded-large/{n}/reserve/{imp}");
    let below_large: Vec<usize> = WORKERS.iter().copied().filter(|&n| n < LARGE[0]).collect();
    let series = |label: &str, colour, small_id: &'static str, large_id: &'static str| {
        // A count in both groups (10 000) is plotted from the large group's.
        let mut points = at(&below_large, &small(small_id));
        let mut far = at(&LARGE, &large(large_id));
        if !far.iter().any(|p| p.0 == LARGE[0] as f64) {
            points.extend(at(&[LARGE[0]], &small(small_id)));
        }
        points.append(&mut far);
        plot::Series {
            label: label.into(),
            colour,
            points,
        }
    };
    let summarised = plot::Series {
        label: "summarised pick (large pools)".into(),
        colour: "#1b9e77",
        points: at(&LARGE, &large("summarised")),
    };
    let lines = [
        series("flat scan", "#d95f02", "workerpick-handle", "flat"),
        summarised,
        series("lock-based reference", "#7570b3", "reference", "reference"),
    ];
    plot::log_log(
        "Least-loaded reserve + read the worker + release, idle pool, 1 thread",
        "workers",
        "median time per pick (thread CPU time)",
        &lines,
    )
}

/// Operations per second at each thread count for each implementation
/// (`(heading, id)`), and ours ÷ `imps[vs]`; `held` fills `threads{T}-held…`.
fn per_thread(d: &Data, corner: &str, rows: &[Row], held: &str, imps: &[(&str, &str)], vs: usize) -> String {
    let mut cols = Vec::new();
    for t in d.thread_counts() {
        let i = cols.len();
        for (head, imp) in imps {
            let id = format!("{{m}}/{{n}}/threads{t}-held{held}/{imp}");
            cols.push(Col::PerSec(format!("{head} {t}T"), id));
        }
        cols.push(ratio_col(&format!("ours ÷ {} {t}T", imps[vs].0), i, i + vs));
    }
    grid(d, corner, rows, &cols)
}

const OURS_AND_REF: [(&str, &str); 2] = [("ours", "workerpick-handle"), ("reference", "reference")];

/// Ours and the reference per thread count, holding `R` reservations each.
fn threads_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for m in ["power-of-two", "least-loaded", "round-robin"] {
        for n in [64, 1024] {
            for r in [0, n] {
                rows.push(row(
                    format!("{m}/{n}, R = {r}"),
                    &[("m", &m), ("n", &n), ("r", &r)],
                ));
            }
        }
    }
    per_thread(d, "mode/workers, held", &rows, "{r}", &OURS_AND_REF, 1)
}

/// The thread-safe peers beside ours and the reference, nothing held.
fn peer_threads_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for (m, p) in [("round-robin", "pingora"), ("power-of-two", "tower-p2c-buffer")] {
        for n in [64, 1024] {
            rows.push(row(format!("{m}/{n} ({p})"), &[("m", &m), ("n", &n), ("p", &p)]));
        }
    }
    let imps = [OURS_AND_REF[0], OURS_AND_REF[1], ("peer", "{p}")];
    per_thread(d, "mode/workers (peer)", &rows, "0", &imps, 2)
}

fn allocs_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for m in mode_names() {
        for o in [
            "select",
            "reserve",
            "preview",
            "masked-reserve",
            "reserve-held-64",
        ] {
            rows.push(row(format!("{m} {o}"), &[("m", &m), ("o", &o)]));
        }
    }
    let imps = [
        "workerpick-handle",
        "workerpick-handle-dyn",
        "workerpick-pool",
        "reference",
    ];
    let cols: Vec<Col> = imps
        .iter()
        .map(|i| Col::Allocs(format!("`{i}`"), format!("{{m}}/{{o}}/{i}")))
        .collect();
    grid(d, "mode, operation", &rows, &cols)
}

/// The primitives a pick is built from (`floor/…` in `benches/single.rs`).
#[rustfmt::skip]
const FLOOR: [(&str, &str); 10] = [
    ("fetch_add", "one uncontended atomic RMW (`lock xadd`): every release"),
    ("compare_exchange", "one uncontended CAS (`lock cmpxchg`): a validated booking"),
    ("load-relaxed", "one relaxed load of a counter"),
    ("arc_swap-cache-load", "`arc_swap::Cache::load`: the handle's snapshot revalidation"),
    ("arc_swap-load", "`ArcSwap::load`: what a plain `Pool` method pays instead"),
    ("rng-below", "one bounded random draw (`fastrand`)"),
    ("rng-below+load-40KB", "a draw and a read in 40 KB (a 10 000-worker pool's counters)"),
    ("rng-below+load-160KB", "a draw and a read in 160 KB (a 10 000-worker pool's keys)"),
    ("mutex-lock-unlock", "uncontended `std::sync::Mutex` lock + unlock: the reference's admission"),
    ("dashmap-get", "one `DashMap` lookup: the reference's per-worker load read"),
];

fn floor_table(d: &Data) -> String {
    let items = FLOOR;
    let rows: Vec<Row> = items
        .iter()
        .map(|(k, what)| row(format!("`{k}`"), &[("k", k), ("w", what)]))
        .collect();
    grid(
        d,
        "primitive",
        &rows,
        &[
            ns_col("median ns", "floor/{k}"),
            Col::Var("what it stands for".into(), "w"),
        ],
    )
}

fn scan_table(d: &Data) -> String {
    let rows: Vec<Row> = WORKERS.iter().map(|n| row(n.to_string(), &[("n", n)])).collect();
    let mut cols: Vec<Col> = (d.backends().iter())
        .map(|b| ns_col(&format!("scan `{b}`"), &format!("scan/{{n}}/least/{b}")))
        .collect();
    cols.push(ns_col(
        "least-loaded select",
        "least-loaded/{n}/select/workerpick-handle",
    ));
    cols.push(ns_col(
        "least-loaded reserve + release",
        "least-loaded/{n}/reserve/workerpick-handle",
    ));
    grid(d, "workers", &rows, &cols)
}

fn iai_table(d: &Data) -> String {
    let rows: Vec<Vec<String>> = (d.iai.iter())
        .map(|(name, measured, budget)| {
            vec![
                format!("`{name}`"),
                format!("{measured:.0}"),
                format!("{budget:.0}"),
            ]
        })
        .collect();
    table(
        &[
            "gate benchmark".into(),
            "instructions / op".into(),
            "budget / op".into(),
        ],
        &rows,
    )
}

/// What the thread tables can and cannot say on this machine.
fn scaling_note(d: &Data) -> String {
    let cores: usize = d.fact("cores").parse().unwrap_or(0);
    let counts = d.thread_counts();
    if cores >= 16 && counts.last().is_some_and(|&t| t >= 16) {
        return format!("Measured on {cores} cores: read each row across the thread counts for scaling.");
    }
    let counts = join(counts.iter().map(usize::to_string), ", ");
    format!(
        "**Scaling is unmeasured.** This run had {} cores (load average {} before it) and \
         thread counts {counts}: with more runnable tasks than cores a second thread gets no \
         second core's worth of time, so neither ours nor the reference can show scaling, or \
         its absence, here; only the ratios within one thread count mean something. No \
         machine with 16 cores was lent to this run. On one, run \
         `WORKERPICK_BENCH_THREADS=1,2,4,8,16 ci/bench-report.sh`.",
        d.fact("cores"),
        d.fact("load_before"),
    )
}

/// The run's facts the template names (`{{date}}`, …), from
/// `target/bench-report/*.txt` and `iai/budgets.toml`.
#[rustfmt::skip]
const FACTS: [&str; 12] = [
    "date", "command", "cpu", "cores", "features", "scan_backend", "rustc", "commit",
    "load_before", "load_after", "seconds", "iai_rustc",
];

/// The NEON instruction counts of this run, or why there are none.
fn neon_table(d: &Data) -> String {
    d.neon.clone().unwrap_or_else(|| {
        "Not counted in this run: `ci/aarch64-insns.sh` was skipped or failed (see the \
         run's log; it needs the cross tools that `ci/aarch64.sh` installs: \
         gcc-aarch64-linux-gnu, nightly rust-src)."
            .to_string()
    })
}

fn render(d: &Data) -> String {
    let names = mode_names();
    let two = ["power-of-two", "least-loaded"];
    let tables: [(&str, String); 25] = [
        ("targets", targets_table(d)),
        ("peers", peers_table(d)),
        ("owned", owned_table(d)),
        ("select", op_table(d, "select", &names)),
        ("reserve", op_table(d, "reserve", &names)),
        ("worker-read", worker_read_table(d)),
        ("few-ties", vs_reference(d, "reserve", &["least-loaded-4-ties"])),
        ("preview", vs_reference(d, "preview", &names)),
        ("masked-select", vs_reference(d, "masked-select", &two)),
        ("masked-reserve", vs_reference(d, "masked-reserve", &two)),
        ("stale-mask", stale_mask_table(d)),
        ("reported", reported_table(d)),
        ("weighted", weighted_table(d)),
        ("weighted-targets", weighted_targets_table(d)),
        ("weighted-scan", weighted_scan_table(d)),
        ("health", health_table(d)),
        ("large", large_table(d)),
        ("threads", threads_table(d)),
        ("peer-threads", peer_threads_table(d)),
        ("scaling", scaling_note(d)),
        ("allocations", allocs_table(d)),
        ("floor", floor_table(d)),
        ("scan", scan_table(d)),
        ("instructions", iai_table(d)),
        ("neon", neon_table(d)),
    ];
    let facts = FACTS.map(|k| (k, d.fact(k).to_string()));
    let mut out = include_str!("template.md").to_string();
    for (k, v) in tables.iter().chain(&facts) {
        out = out.replace(&format!("{{{{{k}}}}}"), v.trim_end());
    }
    if let Some(left) = out.find("{{") {
        panic!(
            "template placeholder not filled: {}",
            &out[left..(left + 30).min(out.len())]
        );
    }
    out
}

fn main() {
    let data = load();
    let out = render(&data);
    let plot = scaling_svg(&data);
    let missing = out.matches("| — |").count();
    if std::env::args_os().any(|a| a == "--write") {
        let path = std::env::var_os("WORKERPICK_REPORT_OUT").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md"),
            PathBuf::from,
        );
        std::fs::write(&path, out).unwrap();
        // Beside the report, so its relative link holds wherever it went.
        let svg = path.parent().unwrap_or(Path::new(".")).join(SCALING_SVG);
        std::fs::create_dir_all(svg.parent().unwrap()).unwrap();
        std::fs::write(&svg, plot).unwrap();
        println!(
            "report: wrote {} and {} from {} results ({missing} empty cells)",
            path.display(),
            svg.display(),
            data.passes.len()
        );
    } else {
        println!(
            "report: rendered from {} results; pass `--write` to update BENCHMARKS.md (ci/bench-report.sh does)",
            data.passes.len()
        );
    }
}
