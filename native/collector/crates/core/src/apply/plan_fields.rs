//! What the plan parsers share (plan.rs, plan_objects.rs, weights.rs): the format's limits, the
//! error type that names the failing field path ([`PlanError`]), and the readers of JSON fields
//! that produce it. Below the parsers: it imports none of them.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

// ---------------------------------------------------------------- limits

/// Largest plan text accepted (bytes of JSON). The live server's body limit is the same.
pub const MAX_PLAN_BYTES: usize = 16 * 1024 * 1024;
/// Largest rollback record accepted (bytes of JSON).
pub const MAX_RECORD_BYTES: usize = 256 * 1024 * 1024;
/// Page ranges per plan.
pub const MAX_PAGE_RANGES: usize = 1 << 18;
/// Base pages in one range (or one run of a rollback record): 512 GiB of 4 KiB pages.
pub const MAX_PAGES_PER_RANGE: u64 = 1 << 27;
/// Base pages in all ranges of a plan (or all runs of a rollback record): 1 TiB of 4 KiB pages.
pub const MAX_TOTAL_PAGES: u64 = 1 << 28;
/// Threads per plan or rollback record.
pub const MAX_THREADS: usize = 1 << 16;
/// Node ids per plan (the kernel's MAX_NUMNODES is at most 1024).
pub const MAX_NODES: usize = 1024;
/// Page runs in a rollback record. Apply stops moving pages before its record could hold more
/// than [`APPLY_MAX_RUNS`], which leaves room for the runs a batch in flight can add.
pub const MAX_ROLLBACK_RUNS: usize = 1 << 22;
/// Runs at which Apply stops moving pages (so that its rollback record stays readable).
pub const APPLY_MAX_RUNS: usize = 1 << 21;
/// Cpu ids in one thread's affinity (the kernel's CONFIG_NR_CPUS is at most 8192).
pub const MAX_CPUS: usize = 8192;

/// What kind of problem a [`PlanError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanErrorKind {
    /// The input breaks a rule of the format.
    Invalid,
    /// The input is well-formed but exceeds one of the documented limits.
    TooLarge,
}

/// A validation error of a plan or a rollback record: the JSON path of the offending field and
/// what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanError {
    /// `"plan"` or `"rollback record"`.
    pub input: &'static str,
    pub path: String,
    pub message: String,
    pub kind: PlanErrorKind,
}

impl PlanError {
    pub fn invalid(input: &'static str, path: &str, message: impl Into<String>) -> PlanError {
        PlanError { input, path: path.to_string(), message: message.into(), kind: PlanErrorKind::Invalid }
    }

    pub fn too_large(input: &'static str, path: &str, message: impl Into<String>) -> PlanError {
        PlanError { input, path: path.to_string(), message: message.into(), kind: PlanErrorKind::TooLarge }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            PlanErrorKind::Invalid => "invalid",
            PlanErrorKind::TooLarge => "refused",
        };
        if self.path.is_empty() {
            write!(f, "{what} {}: {}", self.input, self.message)
        } else {
            write!(f, "{what} {}: {}: {}", self.input, self.path, self.message)
        }
    }
}

impl std::error::Error for PlanError {}

pub(super) fn err<T>(path: &str, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::invalid("plan", path, message))
}

pub(super) fn too_large<T>(path: &str, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::too_large("plan", path, message))
}

/// `n` base pages of `page` bytes, human-readable (`128 TiB`).
pub fn pages_human(n: u64, page: u64) -> String {
    let b = n as f64 * page as f64;
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", units[u])
    } else {
        format!("{v:.1} {}", units[u])
    }
}

pub fn ser_hex<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("0x{v:x}"))
}

// ---------------------------------------------------------------- field helpers

pub(super) fn obj<'a>(v: &'a Value, path: &str) -> Result<&'a serde_json::Map<String, Value>, PlanError> {
    v.as_object().map_or_else(|| err(path, format!("expected an object, found {}", kind(v))), Ok)
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

pub(super) fn field<'a>(o: &'a serde_json::Map<String, Value>, path: &str, key: &str) -> Result<&'a Value, PlanError> {
    o.get(key).map_or_else(|| err(&join(path, key), "missing"), Ok)
}

/// A field that may be absent or null.
pub(super) fn opt_field<'a>(o: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    o.get(key).filter(|v| !v.is_null())
}

pub(super) fn uint(v: &Value, path: &str) -> Result<u64, PlanError> {
    v.as_u64().map_or_else(|| err(path, format!("expected a non-negative integer, found {}", short(v))), Ok)
}

pub(super) fn node_id(v: &Value, path: &str) -> Result<u32, PlanError> {
    let n = uint(v, path)?;
    u32::try_from(n).map_or_else(|_| err(path, format!("node id {n} is out of range")), Ok)
}

pub(super) fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

pub(super) fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, PlanError> {
    v.as_str().map_or_else(|| err(path, format!("expected a string, found {}", kind(v))), Ok)
}

pub(super) fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, PlanError> {
    v.as_array().map_or_else(|| err(path, format!("expected an array, found {}", kind(v))), Ok)
}

pub(super) fn hex_addr(v: &Value, path: &str, page: u64) -> Result<u64, PlanError> {
    let s = string(v, path)?;
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .map_or_else(|| err(path, format!("expected a hex string like \"0x7f3a2c000000\", found {}", short(v))), Ok)?;
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return err(path, format!("{:?} is not a 64-bit hexadecimal address", short(v)));
    }
    let a = u64::from_str_radix(digits, 16)
        .map_or_else(|_| err(path, format!("{} is not a hexadecimal address", short(v))), Ok)?;
    if a % page != 0 {
        return err(path, format!("{s} is not aligned to the {page}-byte page size"));
    }
    Ok(a)
}

pub(super) fn node_list(v: &Value, path: &str) -> Result<Vec<u32>, PlanError> {
    let a = array(v, path)?;
    let mut out = Vec::with_capacity(a.len());
    for (i, n) in a.iter().enumerate() {
        out.push(node_id(n, &format!("{path}[{i}]"))?);
    }
    Ok(out)
}

pub(super) fn node_map(v: &Value, path: &str) -> Result<BTreeMap<u32, u64>, PlanError> {
    let o = obj(v, path)?;
    let mut out = BTreeMap::new();
    for (k, n) in o {
        let p = join(path, k);
        let id: u32 = k.parse().map_or_else(|_| err(&p, format!("key {k:?} is not a node id")), Ok)?;
        out.insert(id, uint(n, &p)?);
    }
    Ok(out)
}

/// Every node of `nodes` is in `known` (`sorted`: the same ids, sorted) and none is listed twice.
pub(super) fn check_nodes_known(nodes: &[u32], known: &[u32], sorted: &[u32], path: &str) -> Result<(), PlanError> {
    for (i, n) in nodes.iter().enumerate() {
        if sorted.binary_search(n).is_err() {
            return err(&format!("{path}[{i}]"), format!("node {n} is not in target.machine.nodeIds {known:?}"));
        }
    }
    let mut seen = nodes.to_vec();
    seen.sort_unstable();
    if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
        let i = nodes.iter().rposition(|n| *n == w[0]).unwrap_or(0);
        return err(&format!("{path}[{i}]"), format!("node {} listed twice", w[0]));
    }
    Ok(())
}
