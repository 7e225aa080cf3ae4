//! This run's criterion medians read back, for the tables that `benches/cost.rs`
//! and `benches/latency.rs` print when they end: their sections of
//! BENCHMARKS.md are pasted from that output (numbers, command, commit and
//! load average), not typed.
//!
//! A before/after comparison interleaves two builds group by group: the old
//! binary with `--save-baseline before`, the new one plain, each with a group
//! filter, and at the end the new one with a filter that matches nothing and
//! `WORKERPICK_TABLE_SINCE` set to the Unix time the sequence began: it prints
//! the table from every result written since, the old build's (criterion's
//! `before` baseline) beside the new.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The medians (ns) of the benchmarks criterion wrote since a moment: this
/// build's, and a `before` baseline's.
pub struct Results {
    medians: HashMap<String, f64>,
    before: HashMap<String, f64>,
}

impl Results {
    /// Every benchmark whose estimates were written after `start`, or after
    /// `WORKERPICK_TABLE_SINCE` (Unix seconds) when that is set.
    pub fn since(start: SystemTime) -> Self {
        let start = std::env::var("WORKERPICK_TABLE_SINCE")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(start, |secs| {
                SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)
            });
        let (mut medians, mut before) = (HashMap::new(), HashMap::new());
        let dir = target_dir().join("criterion");
        collect(&dir, "new", start, &mut medians);
        collect(&dir, "before", start, &mut before);
        Self { medians, before }
    }

    /// Whether a `before` baseline was written in the window.
    pub fn has_before(&self) -> bool {
        !self.before.is_empty()
    }

    /// "old → new (ratio)" for `id`, from the `before` baseline and this build.
    pub fn before_after(&self, id: &str) -> String {
        match (self.before.get(id), self.ns(id)) {
            (Some(&b), Some(a)) => format!("{} → {} ({})", time(b), time(a), times(b / a)),
            (None, Some(a)) => format!("— → {}", time(a)),
            _ => "—".into(),
        }
    }

    /// The median of `id` (criterion's full id, `group/function/parameter`).
    pub fn ns(&self, id: &str) -> Option<f64> {
        self.medians.get(id).copied()
    }

    /// [`ns`](Self::ns) formatted, or "—" when it did not run.
    pub fn cell(&self, id: &str) -> String {
        self.ns(id).map_or("—".into(), time)
    }

    /// `num / den` as "12×" (or "—").
    pub fn ratio(&self, num: &str, den: &str) -> String {
        match (self.ns(num), self.ns(den)) {
            (Some(a), Some(b)) if b > 0.0 => times(a / b),
            _ => "—".into(),
        }
    }
}

/// A ratio with sensible digits: "0.93×", "5.8×", "546×", "1 790×".
pub fn times(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.2}×")
    } else if r < 100.0 {
        format!("{r:.1}×")
    } else {
        format!("{}×", thousands(r.round() as u64))
    }
}

/// A duration in ns with three significant digits and its unit.
pub fn time(ns: f64) -> String {
    let (v, unit) = match ns {
        t if t < 1e3 => (t, "ns"),
        t if t < 1e6 => (t / 1e3, "µs"),
        t if t < 1e9 => (t / 1e6, "ms"),
        t => (t / 1e9, "s"),
    };
    let digits = if v < 10.0 {
        2
    } else if v < 100.0 {
        1
    } else {
        0
    };
    format!("{v:.digits$} {unit}")
}

pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(ch);
    }
    out
}

/// The facts a table's caption states: the command (with the settings knobs set),
/// the commit (and whether the tree had changes), the CPU, the scan backend and
/// the load average when the run began and ended.
pub fn facts(bench: &str, load_at_start: &str) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let dirty = if git(&["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        ""
    } else {
        " (uncommitted changes)"
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "(unknown CPU)".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let knobs: Vec<String> = ["WORKERPICK_BENCH_MS", "WORKERPICK_BENCH_SAMPLES"]
        .iter()
        .filter_map(|k| Some(format!("{k}={} ", std::env::var(k).ok()?)))
        .collect();
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    format!(
        "`{}cargo bench -p workerpick-benches --bench {bench} -- {}`, commit {}{dirty}, {cpu}, \
         {cores} cores, scan backend {}, load average {load_at_start} at the start, {} at the end",
        knobs.concat(),
        args.join(" "),
        git(&["rev-parse", "--short", "HEAD"]),
        workerpick::scan::Backend::detect().name(),
        load_average(),
    )
}

/// The 1-minute load average (`/proc/loadavg`), or "?".
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Every result in a folder named `which` (criterion's `new`, or a saved
/// baseline's name) under `dir`, written after `start`.
fn collect(dir: &Path, which: &str, start: SystemTime, out: &mut HashMap<String, f64>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
        if !path.ends_with(which) {
            if !["new", "base", "before", "change", "report"]
                .iter()
                .any(|w| path.ends_with(w))
            {
                collect(&path, which, start, out);
            }
            continue;
        }
        let read = |f: &str| -> Option<(Value, SystemTime)> {
            let file = path.join(f);
            let modified = std::fs::metadata(&file).ok()?.modified().ok()?;
            Some((
                serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?,
                modified,
            ))
        };
        if let (Some((b, _)), Some((e, when))) = (read("benchmark.json"), read("estimates.json"))
            && when >= start
            && let (Some(id), Some(median)) = (b["full_id"].as_str(), e["median"]["point_estimate"].as_f64())
        {
            out.insert(id.to_string(), median);
        }
    }
}
