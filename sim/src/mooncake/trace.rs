//! The Mooncake trace's JSON lines: `{"timestamp", "input_length",
//! "output_length", "hash_ids"}` per request, one per line.

use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// Tokens per block of the trace's `hash_ids`.
pub const BLOCK_TOKENS: u32 = 512;

/// The first 300 requests of the released trace (kvcache-ai/Mooncake,
/// FAST25-release/traces/conversation_trace.jsonl, Apache-2.0), so a clone
/// without the full file still runs the replay.
const EXCERPT: &str = include_str!("excerpt.jsonl");

/// Where the full trace lies beside a checkout of this repository.
const SHARED: &str = "shared/data/mooncake/conversation_trace.jsonl";

/// One request of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRequest {
    /// Arrival, in ms from the trace's start.
    pub timestamp_ms: u64,
    /// Prompt tokens.
    pub input_length: u32,
    /// Output tokens.
    pub output_length: u32,
    /// One id per 512-token block of the prompt; equal ids at equal
    /// positions are a shared prefix.
    pub hash_ids: Vec<u64>,
}

/// A parsed trace and where it came from.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The requests, in arrival order.
    pub requests: Vec<TraceRequest>,
    /// The file it was read from, or the built-in excerpt.
    pub source: String,
}

/// A line of a trace that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The line, from 1 (0: the trace as a whole).
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.why)
        } else {
            write!(f, "line {}: {}", self.line, self.why)
        }
    }
}

impl std::error::Error for TraceError {}

/// Parses the JSON lines of a trace (blank lines skipped). Requests are put
/// in arrival order (a stable sort: equal timestamps keep the file's order).
pub fn parse(text: &str) -> Result<Vec<TraceRequest>, TraceError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(parse_line(line).map_err(|why| TraceError { line: i + 1, why })?);
    }
    if out.is_empty() {
        return Err(TraceError {
            line: 0,
            why: "no requests in the trace".into(),
        });
    }
    out.sort_by_key(|r| r.timestamp_ms);
    Ok(out)
}

fn parse_line(line: &str) -> Result<TraceRequest, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(o) = &v else {
        return Err("not a JSON object".into());
    };
    let uint = |name: &str, max: u64| -> Result<u64, String> {
        match o.get(name) {
            None => Err(format!("no `{name}` field")),
            Some(x) => x
                .as_u64()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("`{name}` is {x}, not an integer in 0..={max}")),
        }
    };
    let timestamp_ms = uint("timestamp", u64::from(u32::MAX) * 1000)?;
    let input_length = uint("input_length", u64::from(u32::MAX))? as u32;
    let output_length = uint("output_length", u64::from(u32::MAX))? as u32;
    let ids = match o.get("hash_ids") {
        None => return Err("no `hash_ids` field".into()),
        Some(Value::Array(a)) => a,
        Some(x) => return Err(format!("`hash_ids` is {x}, not an array")),
    };
    let hash_ids = ids
        .iter()
        .enumerate()
        .map(|(k, x)| {
            x.as_u64()
                .filter(|&n| n < 1 << 40)
                .ok_or_else(|| format!("`hash_ids[{k}]` is {x}, not an integer in 0..2^40"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let blocks = input_length.div_ceil(BLOCK_TOKENS) as usize;
    if hash_ids.len() != blocks {
        return Err(format!(
            "{} hash_ids for input_length {input_length}: {BLOCK_TOKENS}-token blocks need {blocks}",
            hash_ids.len()
        ));
    }
    Ok(TraceRequest {
        timestamp_ms,
        input_length,
        output_length,
        hash_ids,
    })
}

/// Reads and parses the trace at `path`.
pub fn load(path: &Path) -> Result<Trace, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let requests = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Trace {
        requests,
        source: path.display().to_string(),
    })
}

/// The built-in excerpt (the trace's first 300 requests).
pub fn excerpt() -> Trace {
    Trace {
        requests: parse(EXCERPT).expect("the excerpt parses"),
        source: "built-in excerpt (the trace's first 300 requests)".into(),
    }
}

/// The full trace beside the checkout, if there is one: `shared/data/mooncake/`
/// in a folder above the repository (`../shared` of the main checkout).
pub fn default_path() -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    repo.ancestors()
        .skip(1)
        .map(|dir| dir.join(SHARED))
        .find(|p| p.is_file())
}

/// The trace `path` names, or the default one (the full trace if found,
/// else the excerpt).
pub fn resolve(path: Option<&Path>) -> Result<Trace, String> {
    match path {
        Some(p) => load(p),
        None => match default_path() {
            Some(p) => load(&p),
            None => Ok(excerpt()),
        },
    }
}
