//! Regenerates `BENCHMARKS.md` from the results of a real run: criterion's
//! `target/criterion/**/{pass1,new}/{benchmark,estimates}.json` (plus the
//! `pass2`, `pass3`, … baselines of the repeated target benchmarks), the allocation
//! counts in `target/bench-report/allocations.json` and the run's facts in
//! `target/bench-report/run.txt` (both written by `ci/bench-report.sh`).
//!
//! The prose lives in `benches/report/template.md`; every number in the output
//! comes from the files above, never from the template.
//!
//! `cargo bench --bench report -- --write` writes `BENCHMARKS.md`; without
//! `--write` (as under `cargo bench -- --test`) it only renders, and says so.

mod targets;

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use targets::{ANCHORS, SEED};

const WORKERS: [usize; 4] = [8, 64, 1024, 10_000];
const MODES: [&str; 4] = ["random", "round-robin", "power-of-two", "least-loaded"];
const OURS: &str = "workerpick-handle";
const DYN: &str = "workerpick-handle-dyn";
const POOL: &str = "workerpick-pool";
const REF: &str = "reference";
/// The peers (`benches/peers`): what a Rust router would use instead.
const PINGORA: &str = "pingora";
const TOWER: &str = "tower-p2c";
const TOWER_BUFFER: &str = "tower-p2c-buffer";

/// One criterion result: the median time per iteration and its 95% interval.
#[derive(Clone, Copy)]
struct Est {
    median: f64,
    lo: f64,
    hi: f64,
    /// Elements per iteration, for throughput benchmarks.
    elements: Option<f64>,
}

struct Data {
    /// Each benchmark's result in the first pass (the whole suite).
    est: HashMap<String, Est>,
    /// The median of every pass that measured a benchmark, the first pass first:
    /// the target benchmarks run in several passes, minutes apart (see
    /// `ci/bench-report.sh`), the others once.
    passes: HashMap<String, Vec<f64>>,
    allocs: Option<Value>,
    run: BTreeMap<String, String>,
    /// Instructions per operation (callgrind), by `mode/workers/op`.
    ir: BTreeMap<String, u64>,
    /// The peers' allocations per operation, by benchmark id
    /// (`benches/peers`, `peer-allocations.txt`).
    peer_allocs: BTreeMap<String, String>,
}

impl Data {
    fn get(&self, id: &str) -> Option<Est> {
        self.est.get(id).copied()
    }

    /// Median ns of `group/function/value`.
    fn ns(&self, group: &str, function: &str, value: &str) -> Option<f64> {
        self.get(&format!("{group}/{function}/{value}")).map(|e| e.median)
    }

    fn op(&self, mode: &str, n: usize, op: &str, imp: &str) -> Option<f64> {
        self.ns(&format!("{mode}/{n}"), op, imp)
    }

    /// The lowest of the passes' medians of `id`: what the targets are judged on.
    /// Interference on a shared machine only ever adds time, so the quietest pass
    /// is the closest to what the code costs.
    fn best(&self, id: &str) -> Option<f64> {
        self.passes.get(id)?.iter().copied().min_by(f64::total_cmp)
    }

    /// [`Self::best`] of `mode/n/op/imp`.
    fn best_op(&self, mode: &str, n: usize, op: &str, imp: &str) -> Option<f64> {
        self.best(&format!("{mode}/{n}/{op}/{imp}"))
    }

    /// The passes' medians of `id`, as "a · b · c" (empty for a single pass).
    fn pass_list(&self, id: &str) -> String {
        match self.passes.get(id) {
            Some(p) if p.len() > 1 => p.iter().map(|&v| ns(v)).collect::<Vec<_>>().join(" · "),
            _ => String::new(),
        }
    }

    /// The most passes any benchmark ran in.
    fn pass_count(&self) -> usize {
        self.passes.values().map(Vec::len).max().unwrap_or(0)
    }

    fn floor(&self, name: &str) -> Option<f64> {
        self.best(&format!("floor/{name}"))
    }

    /// The fastest scan backend's time over `n` counters (best of the passes).
    fn scan(&self, n: usize) -> Option<(f64, String)> {
        let prefix = format!("scan/{n}/least/");
        self.passes
            .keys()
            .filter_map(|k| {
                let backend = k.strip_prefix(&prefix)?;
                Some((self.best(k)?, backend.to_string()))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    fn backends(&self) -> Vec<String> {
        let mut b: Vec<String> = self
            .est
            .keys()
            .filter_map(|k| k.strip_prefix("scan/8/least/").map(str::to_string))
            .collect();
        b.sort();
        b
    }

    /// " · N instructions" for `name`, when counted.
    fn ir_note(&self, name: &str) -> String {
        self.ir
            .get(name)
            .map_or(String::new(), |n| format!("<br>{n} instructions / op"))
    }

    fn run(&self, key: &str) -> &str {
        self.run.get(key).map_or("(unknown)", String::as_str)
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Criterion's result in one output folder (`new`, `pass1`, …): its id and estimate.
fn read_result(dir: &Path) -> Option<(String, Est)> {
    let read =
        |f: &str| -> Option<Value> { serde_json::from_str(&std::fs::read_to_string(dir.join(f)).ok()?).ok() };
    let (b, e) = (read("benchmark.json")?, read("estimates.json")?);
    let m = &e["median"];
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    Some((
        b["full_id"].as_str().unwrap_or_default().to_string(),
        Est {
            median: f(&m["point_estimate"]),
            lo: f(&m["confidence_interval"]["lower_bound"]),
            hi: f(&m["confidence_interval"]["upper_bound"]),
            elements: b["throughput"]["Elements"].as_f64(),
        },
    ))
}

/// Walks criterion's output: a benchmark's folder holds `new` (the latest run) and,
/// when run by `ci/bench-report.sh`, a `passK` baseline per pass. The first pass
/// is the result (`new` when there are no passes); every pass adds its median.
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
        subdirs.iter().for_each(|p| collect(p, data));
        return;
    }
    let mut passes: Vec<(usize, String, Est)> = subdirs
        .iter()
        .filter_map(|p| Some((pass(p)?, read_result(p)?)))
        .map(|(k, (id, e))| (k, id, e))
        .collect();
    passes.sort_by_key(|p| p.0);
    let first = match passes.first() {
        Some((_, id, e)) => Some((id.clone(), *e)),
        None => read_result(&dir.join("new")),
    };
    if let Some((id, e)) = first {
        let medians = if passes.is_empty() {
            vec![e.median]
        } else {
            passes.iter().map(|p| p.2.median).collect()
        };
        data.passes.insert(id.clone(), medians);
        data.est.insert(id, e);
    }
}

fn load() -> Data {
    let target = target_dir();
    let report = target.join("bench-report");
    let allocs = std::fs::read_to_string(report.join("allocations.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok());
    let pairs = |file: &str| -> BTreeMap<String, String> {
        std::fs::read_to_string(report.join(file))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                l.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            })
            .collect()
    };
    let run = pairs("run.txt");
    let ir = pairs("instructions.txt")
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    let peer_allocs = pairs("peer-allocations.txt");
    let mut data = Data {
        est: HashMap::new(),
        passes: HashMap::new(),
        allocs,
        run,
        ir,
        peer_allocs,
    };
    collect(&target.join("criterion"), &mut data);
    data
}

/// A duration in ns, with the precision its size deserves.
fn ns(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        group_digits(v.round() as u64)
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

fn opt_ns(v: Option<f64>) -> String {
    v.map_or("—".into(), ns)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => {
            let r = a / b;
            if r >= 100.0 {
                format!("{}×", group_digits(r.round() as u64))
            } else if r >= 10.0 {
                format!("{r:.0}×")
            } else {
                format!("{r:.2}×")
            }
        }
        _ => "—".into(),
    }
}

fn with_ci(e: Option<Est>) -> String {
    e.map_or("—".into(), |e| {
        format!("{} [{}–{}]", ns(e.median), ns(e.lo), ns(e.hi))
    })
}

/// "met" or how far off, for an upper bound in ns.
fn verdict_max(v: Option<f64>, target: f64) -> String {
    match v {
        None => "not measured".into(),
        Some(v) if v <= target => format!("**met** ({:.0}% of target)", 100.0 * v / target),
        Some(v) => format!(
            "**missed** by {} ns (+{:.0}%)",
            ns(v - target),
            100.0 * (v - target) / target
        ),
    }
}

/// Sums the floor primitives named, if all were measured.
fn floor_sum(d: &Data, parts: &[(&str, f64)]) -> Option<f64> {
    parts.iter().map(|&(p, k)| d.floor(p).map(|v| v * k)).sum()
}

fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", head.join(" | "));
    let _ = writeln!(s, "|{}", head.iter().map(|_| "---|").collect::<String>());
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
    s
}

/// The worst (largest) best-of-passes figure over the worker counts, with the count.
fn worst(d: &Data, mode: &str, op: &str) -> Option<(f64, usize)> {
    WORKERS
        .iter()
        .filter_map(|&n| d.best_op(mode, n, op, OURS).map(|v| (v, n)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// "<br>passes: a · b · c" for `id`, when it ran in more than one pass.
fn passes_note(d: &Data, id: &str) -> String {
    match d.pass_list(id) {
        l if l.is_empty() => l,
        l => format!("<br>passes: {l}"),
    }
}

fn targets_table(d: &Data) -> String {
    let measured_head = match d.pass_count() {
        0 | 1 => "measured, median ns".to_string(),
        k => format!("measured: the lowest of {k} passes' medians, ns"),
    };
    let mut rows = Vec::new();
    // random / round-robin / power-of-two: one row each, the worst worker count.
    // (mode, operation, target ns, published figure, primitives that bound it, and the
    // draw-and-read primitive that stands for each `rng-below` at 10 000 workers,
    // where a drawn worker's counter or key is a read beyond L1)
    type Row<'a> = (&'a str, &'a str, f64, &'a str, Vec<(&'a str, f64)>, &'a str);
    let simple: [Row<'_>; 3] = [
        (
            "random",
            "select",
            3.0,
            SEED.random,
            vec![("arc_swap-cache-load", 1.0), ("rng-below", 1.0)],
            "rng-below+load-160KB",
        ),
        (
            "round-robin",
            "select",
            4.0,
            SEED.round_robin,
            vec![("arc_swap-cache-load", 1.0), ("fetch_add", 1.0)],
            "rng-below",
        ),
        (
            "power-of-two",
            "reserve",
            10.0,
            SEED.power_of_two,
            vec![
                ("arc_swap-cache-load", 1.0),
                ("rng-below", 2.0),
                ("compare_exchange", 1.0),
                ("fetch_add", 1.0),
            ],
            "rng-below+load-40KB",
        ),
    ];
    for (mode, op, target, seed, mut parts, draw_at_10000) in simple {
        let w = worst(d, mode, op);
        if w.is_some_and(|w| w.1 >= 10_000) {
            for part in &mut parts {
                if part.0 == "rng-below" {
                    part.0 = draw_at_10000;
                }
            }
        }
        let what = if op == "reserve" {
            "reserve + release"
        } else {
            "select"
        };
        let list = WORKERS
            .iter()
            .map(|&n| format!("{n}: {}", opt_ns(d.best_op(mode, n, op, OURS))))
            .collect::<Vec<_>>()
            .join(" · ");
        rows.push(vec![
            format!("{mode} {what} ≤ {target} ns (any n)"),
            format!(
                "worst {} at n = {}{}<br>{list}",
                opt_ns(w.map(|w| w.0)),
                w.map_or(0, |w| w.1),
                passes_note(d, &format!("{mode}/{}/{op}/{OURS}", w.map_or(0, |w| w.1))),
            ),
            verdict_max(w.map(|w| w.0), target),
            seed.into(),
            format!(
                "{} ns at n = {} = {}{}",
                opt_ns(floor_sum(d, &parts)),
                w.map_or(0, |w| w.1),
                parts
                    .iter()
                    .map(|(p, k)| if *k == 1.0 {
                        p.to_string()
                    } else {
                        format!("{k}×{p}")
                    })
                    .collect::<Vec<_>>()
                    .join(" + "),
                d.ir_note(&format!("{mode}/64/{op}")),
            ),
        ]);
    }
    for (n, target, seed) in [
        (8, 15.0, "—"),
        (1024, 45.0, SEED.least_loaded_1024),
        (10_000, 350.0, SEED.least_loaded_10000),
    ] {
        let id = format!("least-loaded/{n}/reserve/{OURS}");
        let v = d.best(&id);
        let scan = d.scan(n);
        let rest = floor_sum(
            d,
            &[
                ("arc_swap-cache-load", 1.0),
                ("compare_exchange", 1.0),
                ("fetch_add", 1.0),
            ],
        );
        let bound = match (scan.as_ref(), rest) {
            (Some((s, b)), Some(r)) => format!(
                "{} ns = scan ({b}) {} + cache load + CAS + fetch_add",
                ns(s + r),
                ns(*s)
            ),
            _ => "—".into(),
        };
        rows.push(vec![
            format!("least-loaded reserve + release ≤ {target} ns at n = {n}"),
            format!(
                "{}{}<br>first pass: {}",
                opt_ns(v),
                passes_note(d, &id),
                with_ci(d.get(&id))
            ),
            verdict_max(v, target),
            seed.into(),
            bound + &d.ir_note(&format!("least-loaded/{n}/reserve")),
        ]);
    }
    // &dyn Selector overhead, where an operation is cheap enough for a 2 ns
    // difference to be visible above the noise.
    let mut deltas: Vec<(f64, String)> = Vec::new();
    for mode in MODES {
        for n in WORKERS {
            if mode == "least-loaded" && n > 8 {
                continue;
            }
            for op in ["select", "reserve"] {
                if let (Some(a), Some(b)) = (d.best_op(mode, n, op, DYN), d.best_op(mode, n, op, OURS)) {
                    deltas.push((a - b, format!("{mode}/{n} {op}")));
                }
            }
        }
    }
    deltas.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median_dyn = deltas.get(deltas.len() / 2).map(|d| d.0);
    let ir_dyn: Vec<String> = ["random/64", "round-robin/64", "power-of-two/64", "least-loaded/8"]
        .iter()
        .filter_map(|c| {
            let direct = d.ir.get(&format!("{c}/select"))?;
            let dynamic = d.ir.get(&format!("{c}/select-dyn"))?;
            Some(format!("{c} {:+}", *dynamic as i64 - *direct as i64))
        })
        .collect();
    rows.push(vec![
        "`&dyn Selector` ≤ 2 ns over the direct call".into(),
        match (median_dyn, deltas.last()) {
            (Some(m), Some((w, at))) => format!(
                "median {:+.2} ns, worst {:+.2} ns ({at}) over {} pairs (random, round-robin, power-of-two at every n; least-loaded at 8)",
                m,
                w,
                deltas.len()
            ),
            _ => "—".into(),
        },
        verdict_max(median_dyn, 2.0),
        SEED.plugin.into(),
        if ir_dyn.is_empty() {
            "one indirect call; see the dyn table".into()
        } else {
            format!("instructions added per select: {}", ir_dyn.join(", "))
        },
    ]);
    // least-loaded at 1024 vs the reference.
    // Both from the first pass: the same minute of the same run.
    let ours = d.op("least-loaded", 1024, "reserve", OURS);
    let theirs = d.op("least-loaded", 1024, "reserve", REF);
    let r = theirs.zip(ours).map(|(t, o)| t / o);
    rows.push(vec![
        "least-loaded at 1024 ≥ 100× faster than the reference".into(),
        format!(
            "{} against this run's reference ({} vs {} ns); {} against the earlier anchor ({} ns)",
            ratio(theirs, ours),
            opt_ns(theirs),
            opt_ns(ours),
            ratio(Some(ANCHORS[3][2]), ours),
            ns(ANCHORS[3][2])
        ),
        match r {
            None => "not measured".into(),
            Some(r) if r >= 100.0 => "**met**".into(),
            Some(r) => format!("**missed**: {r:.0}× of 100×"),
        },
        SEED.host_least_loaded.into(),
        "—".into(),
    ]);
    // Scaling.
    let (ours_s, ref_s) = (
        scaling(d, "power-of-two", 64, 0, OURS),
        scaling(d, "power-of-two", 64, 0, REF),
    );
    let load: f64 = d
        .run("load_before")
        .split_whitespace()
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or(0.0);
    let cores: f64 = d.run("cores").parse().unwrap_or(f64::INFINITY);
    let verdict = match (ours_s, ref_s) {
        _ if load >= cores => format!(
            "**not measurable in this run**: {load} runnable tasks on {cores} cores, so extra threads got no extra CPU"
        ),
        (Some((o, t)), Some((r, _))) => {
            let need = 1.6 * (t as f64 / 2.0).max(1.0);
            let mut v = if o >= need {
                "**met**".to_string()
            } else {
                format!("**missed**: {o:.2}× of {need:.1}×")
            };
            let _ = write!(
                v,
                "; reference {}",
                if r < 1.2 { "does not scale" } else { "scales" }
            );
            v
        }
        _ => "not measured (needs ≥ 2 thread counts)".into(),
    };
    rows.push(vec![
        "power-of-two, 2 threads ≥ 1.6× one thread; the reference does not scale".into(),
        match (ours_s, ref_s) {
            (Some((o, t)), Some((r, _))) => {
                format!("ours {o:.2}×, reference {r:.2}× ({t} vs 1 threads, 64 workers, R = 0)")
            }
            _ => "—".into(),
        },
        verdict,
        SEED.threads.into(),
        format!(
            "{} cores, load average {}, scheduler autogroups {}: see *Threads*",
            d.run("cores"),
            d.run("load_before"),
            if d.run("autogroup") == "1" { "on" } else { "off" }
        ),
    ]);
    table(
        &[
            "target",
            &measured_head,
            "verdict",
            "published for the replaced router (other hardware)",
            "floor on this machine (sum of primitives)",
        ],
        &rows,
    )
}

/// Throughput ratio max-threads / 1-thread and the max thread count.
fn scaling(d: &Data, mode: &str, n: usize, held: usize, imp: &str) -> Option<(f64, usize)> {
    let counts = thread_counts(d);
    let top = *counts.iter().max()?;
    if top < 2 {
        return None;
    }
    let one = sel_per_s(d, mode, n, held, 1, imp)?;
    let many = sel_per_s(d, mode, n, held, top, imp)?;
    Some((many / one, top))
}

fn sel_per_s(d: &Data, mode: &str, n: usize, held: usize, t: usize, imp: &str) -> Option<f64> {
    let e = d.get(&format!("{mode}/{n}/threads{t}-held{held}/{imp}"))?;
    Some(e.elements? * 1e9 / e.median)
}

fn thread_counts(d: &Data) -> Vec<usize> {
    let mut c: Vec<usize> = d
        .est
        .keys()
        .filter_map(|k| {
            let f = k.split('/').nth(2)?;
            let t = f.strip_prefix("threads")?.split('-').next()?;
            t.parse().ok()
        })
        .collect();
    c.sort_unstable();
    c.dedup();
    c
}

fn anchors_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for (mode, anchors) in MODES.iter().zip(ANCHORS) {
        for (&n, anchor) in WORKERS.iter().zip(anchors) {
            let now = d.op(mode, n, "reserve", REF);
            let ours = d.op(mode, n, "reserve", OURS);
            rows.push(vec![
                format!("{mode}/{n}"),
                ns(anchor),
                opt_ns(now),
                opt_ns(ours),
                ratio(now, ours),
            ]);
        }
    }
    table(
        &[
            "mode/workers",
            "earlier anchor (reference)",
            "reference, this run",
            "workerpick-handle, this run",
            "reference ÷ ours",
        ],
        &rows,
    )
}

fn op_table(d: &Data, op: &str, modes: &[&str], cols: &[&str]) -> String {
    let mut rows = Vec::new();
    for mode in modes {
        for n in WORKERS {
            let mut r = vec![format!("{mode}/{n}")];
            r.extend(cols.iter().map(|c| opt_ns(d.op(mode, n, op, c))));
            r.push(ratio(d.op(mode, n, op, REF), d.op(mode, n, op, OURS)));
            rows.push(r);
        }
    }
    let mut head = vec!["mode/workers"];
    head.extend(cols);
    head.push("reference ÷ handle");
    table(&head, &rows)
}

fn dyn_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for mode in MODES {
        for n in WORKERS {
            let mut r = vec![format!("{mode}/{n}")];
            for op in ["select", "reserve"] {
                let (a, b) = (d.op(mode, n, op, OURS), d.op(mode, n, op, DYN));
                r.push(opt_ns(a));
                r.push(opt_ns(b));
                r.push(a.zip(b).map_or("—".into(), |(a, b)| format!("{:+.2}", b - a)));
            }
            rows.push(r);
        }
    }
    table(
        &[
            "mode/workers",
            "select direct",
            "select `&dyn`",
            "Δ ns",
            "reserve direct",
            "reserve `&dyn`",
            "Δ ns",
        ],
        &rows,
    )
}

fn threads_table(d: &Data) -> String {
    let counts = thread_counts(d);
    if counts.is_empty() {
        return "_No thread results in this run._\n".into();
    }
    let mut head: Vec<String> = vec!["mode/workers, held R".into()];
    for imp in ["ours", "reference"] {
        for t in &counts {
            head.push(format!("{imp} {t}T"));
        }
    }
    let top = *counts.last().unwrap();
    head.push(format!("ours {top}T ÷ 1T"));
    head.push(format!("reference {top}T ÷ 1T"));
    head.push(format!("ours ÷ reference at {top}T"));
    let mut rows = Vec::new();
    for mode in ["power-of-two", "least-loaded", "round-robin"] {
        for n in [64, 1024] {
            for held in [0, n] {
                let mut r = vec![format!("{mode}/{n}, R = {held}")];
                for imp in [OURS, REF] {
                    for &t in &counts {
                        r.push(sel_per_s(d, mode, n, held, t, imp).map_or("—".into(), mops));
                    }
                }
                for imp in [OURS, REF] {
                    r.push(scaling(d, mode, n, held, imp).map_or("—".into(), |(s, _)| format!("{s:.2}×")));
                }
                r.push(ratio(
                    sel_per_s(d, mode, n, held, top, OURS),
                    sel_per_s(d, mode, n, held, top, REF),
                ));
                rows.push(r);
            }
        }
    }
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    table(&head, &rows)
}

/// Selections per second, with a unit that keeps three significant digits.
fn mops(v: f64) -> String {
    match v {
        v if v >= 10e6 => format!("{:.1} M", v / 1e6),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 10e3 => format!("{:.0} k", v / 1e3),
        v => format!("{:.1} k", v / 1e3),
    }
}

fn allocs_table(d: &Data) -> String {
    let Some(a) = &d.allocs else {
        return "_No allocation results (run `cargo bench --bench allocs`)._\n".into();
    };
    let mut cells: BTreeMap<(String, String), BTreeMap<String, u64>> = BTreeMap::new();
    let mut order = Vec::new();
    for r in a["rows"].as_array().into_iter().flatten() {
        let key = (
            r["mode"].as_str().unwrap_or("").to_string(),
            r["op"].as_str().unwrap_or("").to_string(),
        );
        if !cells.contains_key(&key) {
            order.push(key.clone());
        }
        cells.entry(key).or_default().insert(
            r["impl"].as_str().unwrap_or("").to_string(),
            r["allocs"].as_u64().unwrap_or(0),
        );
    }
    let imps = [OURS, DYN, POOL, REF];
    let rows: Vec<Vec<String>> = order
        .iter()
        .map(|k| {
            let mut r = vec![k.0.clone(), k.1.clone()];
            r.extend(
                imps.iter()
                    .map(|i| cells[k].get(*i).map_or("—".into(), u64::to_string)),
            );
            r
        })
        .collect();
    let mut s = format!(
        "Allocations per {} operations at {} workers, after a warm-up of as many:\n\n",
        a["ops"], a["workers"]
    );
    s += &table(&["mode", "operation", OURS, DYN, POOL, REF], &rows);
    s
}

fn floor_table(d: &Data) -> String {
    let items = [
        (
            "fetch_add",
            "one uncontended atomic RMW (`lock xadd`): a booking without validation, every release",
        ),
        (
            "compare_exchange",
            "one uncontended CAS (`lock cmpxchg`): a validated booking",
        ),
        ("load-relaxed", "one relaxed load of a counter"),
        (
            "arc_swap-cache-load",
            "`arc_swap::Cache::load`: the handle's snapshot revalidation",
        ),
        (
            "arc_swap-load",
            "`ArcSwap::load`: what a plain `Pool` method pays instead",
        ),
        ("rng-below", "one bounded random draw (`fastrand`)"),
        (
            "rng-below+load-40KB",
            "a draw and a read at the drawn place in 40 KB (a 10 000-worker pool's counters; beyond L1)",
        ),
        (
            "rng-below+load-160KB",
            "a draw and a read at the drawn place in 160 KB (a 10 000-worker pool's keys; beyond L1)",
        ),
        (
            "mutex-lock-unlock",
            "an uncontended `std::sync::Mutex` lock + unlock: the reference's admission",
        ),
        (
            "dashmap-get",
            "one `DashMap` lookup: the reference's per-worker load read",
        ),
    ];
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|(k, what)| {
            vec![
                format!("`{k}`"),
                with_ci(d.get(&format!("floor/{k}"))),
                (*what).into(),
            ]
        })
        .collect();
    table(&["primitive", "median ns [95% CI]", "what it stands for"], &rows)
}

fn scan_table(d: &Data) -> String {
    let backends = d.backends();
    if backends.is_empty() {
        return "_No scan results._\n".into();
    }
    let mut rows = Vec::new();
    for n in WORKERS {
        let mut r = vec![n.to_string()];
        for b in &backends {
            let v = d.ns(&format!("scan/{n}"), "least", b);
            r.push(format!(
                "{} ({} / worker)",
                opt_ns(v),
                v.map_or("—".into(), |v| format!("{:.3}", v / n as f64))
            ));
        }
        r.push(opt_ns(d.op("least-loaded", n, "select", OURS)));
        r.push(opt_ns(d.op("least-loaded", n, "reserve", OURS)));
        rows.push(r);
    }
    let mut head = vec!["workers".to_string()];
    head.extend(backends.iter().map(|b| format!("scan `{b}` ns")));
    head.push("least-loaded select".into());
    head.push("least-loaded reserve + release".into());
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    table(&head, &rows)
}

fn ir_table(d: &Data) -> String {
    if d.ir.is_empty() {
        return "_No instruction counts (valgrind was not found)._\n".into();
    }
    let mut cases: Vec<String> = Vec::new();
    for k in d.ir.keys() {
        let case = k.rsplit_once('/').map_or(k.as_str(), |(c, _)| c).to_string();
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    // Modes in the usual order, then by worker count.
    let key = |c: &String| {
        let (m, n) = c.split_once('/').unwrap_or((c, "0"));
        (
            MODES.iter().position(|x| *x == m),
            n.parse::<usize>().unwrap_or(0),
        )
    };
    cases.sort_by_key(key);
    let ops = [
        "select",
        "select-dyn",
        "reserve",
        "reserve-dyn",
        "reserve-reference",
    ];
    let rows: Vec<Vec<String>> = cases
        .iter()
        .map(|c| {
            let mut r = vec![c.clone()];
            r.extend(ops.iter().map(|op| {
                d.ir.get(&format!("{c}/{op}"))
                    .map_or("—".into(), |v| group_digits(*v))
            }));
            r
        })
        .collect();
    table(
        &[
            "mode/workers",
            "select",
            "select `&dyn`",
            "reserve + release",
            "reserve + release `&dyn`",
            "reference reserve + release",
        ],
        &rows,
    )
}

fn render(d: &Data) -> String {
    let template = include_str!("template.md");
    let backend = d
        .allocs
        .as_ref()
        .and_then(|a| a["scan_backend"].as_str())
        .unwrap_or("(unknown)");
    let fills: [(&str, String); 19] = [
        ("backend", format!("`{backend}`")),
        ("date", d.run("date").to_string()),
        ("command", d.run("command").to_string()),
        ("cpu", d.run("cpu").to_string()),
        ("cores", d.run("cores").to_string()),
        ("features", d.run("features").to_string()),
        ("rustc", d.run("rustc").to_string()),
        ("commit", d.run("commit").to_string()),
        (
            "load",
            format!("{} before, {} after", d.run("load_before"), d.run("load_after")),
        ),
        ("duration", d.run("seconds").to_string()),
        ("targets", targets_table(d)),
        ("anchors", anchors_table(d)),
        ("select", op_table(d, "select", &MODES, &[OURS, POOL, REF])),
        ("reserve", op_table(d, "reserve", &MODES, &[OURS, POOL, REF])),
        ("preview", op_table(d, "preview", &MODES, &[OURS, REF])),
        (
            "few-ties",
            op_table(d, "reserve", &["least-loaded-4-ties"], &[OURS, REF]),
        ),
        ("masked", masked_tables(d)),
        ("dyn", dyn_table(d)),
        ("threads", threads_table(d)),
    ];
    let mut out = template.to_string();
    for (k, v) in fills {
        out = out.replace(&format!("{{{{{k}}}}}"), v.trim_end());
    }
    for (k, v) in [
        ("peers", peers_table(d)),
        ("worker-read", worker_read_table(d)),
        ("peer-threads", peer_threads_table(d)),
        ("allocations", allocs_table(d)),
        ("floor", floor_table(d)),
        ("scan", scan_table(d)),
        ("instructions", ir_table(d)),
    ] {
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

/// Ours beside the peers, single thread, with allocations per operation.
fn peers_table(d: &Data) -> String {
    let cases: [(&str, &str, &[&str]); 3] = [
        ("random", "select", &[PINGORA]),
        ("round-robin", "select", &[PINGORA]),
        ("power-of-two", "reserve", &[TOWER, TOWER_BUFFER]),
    ];
    let mut rows = Vec::new();
    for (mode, op, peers) in cases {
        for n in WORKERS {
            let ours = d.op(mode, n, op, OURS);
            for peer in peers {
                let theirs = d.op(mode, n, op, peer);
                let allocs = d
                    .peer_allocs
                    .get(&format!("{mode}/{n}/{op}/{peer}"))
                    .map_or("—".into(), Clone::clone);
                rows.push(vec![
                    format!("{mode}/{n}"),
                    format!("{op}: {peer}"),
                    opt_ns(theirs),
                    allocs,
                    opt_ns(ours),
                    ratio(theirs, ours),
                ]);
            }
        }
    }
    if rows.iter().all(|r| r[2] == "—") {
        return "_No peer results in this run (`benches/peers`, built by `ci/bench-report.sh`)._\n".into();
    }
    table(
        &[
            "mode/workers",
            "peer",
            "peer ns",
            "peer allocs/op",
            "workerpick-handle ns",
            "peer ÷ ours",
        ],
        &rows,
    )
}

/// What reading the worker adds to a reservation: `reserve` reads it,
/// `reserve-bare` does not.
fn worker_read_table(d: &Data) -> String {
    let mut rows = Vec::new();
    for mode in MODES {
        for n in WORKERS {
            let (read, bare) = (
                d.op(mode, n, "reserve", OURS),
                d.op(mode, n, "reserve-bare", OURS),
            );
            let ir = |op: &str| {
                d.ir.get(&format!("{mode}/{n}/{op}"))
                    .map_or("—".into(), u64::to_string)
            };
            rows.push(vec![
                format!("{mode}/{n}"),
                opt_ns(bare),
                opt_ns(read),
                read.zip(bare)
                    .map_or("—".into(), |(a, b)| format!("{:+.2}", a - b)),
                ir("reserve-bare"),
                ir("reserve"),
            ]);
        }
    }
    table(
        &[
            "mode/workers",
            "reserve + release",
            "… + `*r.worker()`",
            "Δ ns",
            "instructions",
            "instructions with the read",
        ],
        &rows,
    )
}

/// Thread-safe peers beside ours and the reference, per thread count, with
/// nothing held (`R = 0`).
fn peer_threads_table(d: &Data) -> String {
    let counts = thread_counts(d);
    let mut rows = Vec::new();
    for (mode, peer) in [("round-robin", PINGORA), ("power-of-two", TOWER_BUFFER)] {
        for n in [64, 1024] {
            for &t in &counts {
                let cell = |imp: &str| sel_per_s(d, mode, n, 0, t, imp).map_or("—".into(), mops);
                rows.push(vec![
                    format!("{mode}/{n}"),
                    t.to_string(),
                    cell(OURS),
                    cell(REF),
                    format!("{} ({peer})", cell(peer)),
                ]);
            }
        }
    }
    if rows.is_empty() {
        return "_No thread results in this run._\n".into();
    }
    table(&["mode/workers", "threads", "ours", "reference", "peer"], &rows)
}

fn masked_tables(d: &Data) -> String {
    let modes = ["power-of-two", "least-loaded"];
    format!(
        "Select (no charge):\n\n{}\nReserve + release:\n\n{}",
        op_table(d, "masked-select", &modes, &[OURS, REF]),
        op_table(d, "masked-reserve", &modes, &[OURS, REF])
    )
}

fn main() {
    let data = load();
    let out = render(&data);
    if std::env::args().any(|a| a == "--write") {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
        std::fs::write(&path, out).unwrap();
        println!("report: wrote {} from {} results", path.display(), data.est.len());
    } else {
        println!(
            "report: rendered from {} results; pass `--write` to update BENCHMARKS.md (ci/bench-report.sh does)",
            data.est.len()
        );
    }
}
