//! Placement plan (docs/plan-format.md, version 1): parsing and validation.
//!
//! Parsing goes through `serde_json::Value` by hand so that every error names the offending
//! field path (`pageRanges[2].toNodes`), as the format requires.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// The only plan version this build understands.
pub const PLAN_VERSION: u64 = 1;
pub const PLAN_FORMAT: &str = "numascope-plan";

/// A validation error: the JSON path of the offending field and what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "invalid plan: {}", self.message)
        } else {
            write!(f, "invalid plan: {}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for PlanError {}

fn err<T>(path: &str, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError { path: path.to_string(), message: message.into() })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Move,
    Interleave,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub version: u64,
    pub created_at: Option<String>,
    pub source: Option<Value>,
    pub target: PlanTarget,
    pub page_ranges: Vec<PageRange>,
    pub threads: Vec<ThreadPin>,
    pub expected: Option<Expected>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanTarget {
    pub pid: i32,
    /// `/proc/PID/stat` field 22; `None` = do not check.
    pub start_time_ticks: Option<u64>,
    pub command: Option<Vec<String>>,
    pub machine: PlanMachine,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanMachine {
    pub node_ids: Vec<u32>,
    pub distances: Option<Vec<Vec<u32>>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageRange {
    #[serde(serialize_with = "ser_hex")]
    pub start: u64,
    #[serde(serialize_with = "ser_hex")]
    pub end: u64,
    pub action: Action,
    pub to_nodes: Vec<u32>,
    pub expected_nodes: Option<BTreeMap<u32, u64>>,
    pub reason: Option<String>,
}

impl PageRange {
    /// Target node of page `i` of the range.
    pub fn target_of(&self, i: u64) -> u32 {
        match self.action {
            Action::Move => self.to_nodes[0],
            Action::Interleave => self.to_nodes[(i % self.to_nodes.len() as u64) as usize],
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadPin {
    pub tid: i32,
    pub to_nodes: Vec<u32>,
    pub expected_node: Option<u32>,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Expected {
    pub pages_to_move: Option<u64>,
    pub bytes_to_move: Option<u64>,
    pub pages_per_node_after: Option<BTreeMap<u32, u64>>,
    pub threads_to_pin: Option<u64>,
}

pub fn ser_hex<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("0x{v:x}"))
}

// ---------------------------------------------------------------- field helpers

fn obj<'a>(v: &'a Value, path: &str) -> Result<&'a serde_json::Map<String, Value>, PlanError> {
    v.as_object().map_or_else(|| err(path, format!("expected an object, found {}", kind(v))), Ok)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn field<'a>(o: &'a serde_json::Map<String, Value>, path: &str, key: &str) -> Result<&'a Value, PlanError> {
    o.get(key).map_or_else(|| err(&join(path, key), "missing"), Ok)
}

/// A field that may be absent or null.
fn opt_field<'a>(o: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    o.get(key).filter(|v| !v.is_null())
}

fn uint(v: &Value, path: &str) -> Result<u64, PlanError> {
    v.as_u64().map_or_else(|| err(path, format!("expected a non-negative integer, found {}", short(v))), Ok)
}

fn node_id(v: &Value, path: &str) -> Result<u32, PlanError> {
    let n = uint(v, path)?;
    u32::try_from(n).map_or_else(|_| err(path, format!("node id {n} is out of range")), Ok)
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}…", &s[..40])
    } else {
        s
    }
}

fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, PlanError> {
    v.as_str().map_or_else(|| err(path, format!("expected a string, found {}", kind(v))), Ok)
}

fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, PlanError> {
    v.as_array().map_or_else(|| err(path, format!("expected an array, found {}", kind(v))), Ok)
}

fn hex_addr(v: &Value, path: &str, page: u64) -> Result<u64, PlanError> {
    let s = string(v, path)?;
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .map_or_else(|| err(path, format!("expected a hex string like \"0x7f3a2c000000\", found {s:?}")), Ok)?;
    let a = u64::from_str_radix(digits, 16)
        .map_or_else(|_| err(path, format!("{s:?} is not a hexadecimal address")), Ok)?;
    if a % page != 0 {
        return err(path, format!("{s} is not aligned to the {page}-byte page size"));
    }
    Ok(a)
}

fn node_list(v: &Value, path: &str) -> Result<Vec<u32>, PlanError> {
    let a = array(v, path)?;
    let mut out = Vec::with_capacity(a.len());
    for (i, n) in a.iter().enumerate() {
        out.push(node_id(n, &format!("{path}[{i}]"))?);
    }
    Ok(out)
}

fn node_map(v: &Value, path: &str) -> Result<BTreeMap<u32, u64>, PlanError> {
    let o = obj(v, path)?;
    let mut out = BTreeMap::new();
    for (k, n) in o {
        let p = join(path, k);
        let id: u32 = k.parse().map_or_else(|_| err(&p, format!("key {k:?} is not a node id")), Ok)?;
        out.insert(id, uint(n, &p)?);
    }
    Ok(out)
}

fn check_nodes_known(nodes: &[u32], known: &[u32], path: &str) -> Result<(), PlanError> {
    for (i, n) in nodes.iter().enumerate() {
        if !known.contains(n) {
            return err(&format!("{path}[{i}]"), format!("node {n} is not in target.machine.nodeIds {known:?}"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- parse

/// Parses and validates a plan. `page_size` is the machine's base page size (alignment rule).
pub fn parse_plan(text: &str, page_size: u64) -> Result<Plan, PlanError> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| PlanError { path: String::new(), message: format!("not JSON: {e}") })?;
    plan_from_value(&v, page_size)
}

pub fn plan_from_value(v: &Value, page_size: u64) -> Result<Plan, PlanError> {
    let root = obj(v, "")?;
    let format = string(field(root, "", "format")?, "format")?;
    if format != PLAN_FORMAT {
        return err("format", format!("expected \"{PLAN_FORMAT}\", found {format:?}"));
    }
    let version = uint(field(root, "", "version")?, "version")?;
    if version > PLAN_VERSION {
        return err(
            "version",
            format!("plan version {version} is newer than the version this numascope understands ({PLAN_VERSION}); upgrade numascope"),
        );
    }
    if version != PLAN_VERSION {
        return err(
            "version",
            format!("unsupported plan version {version} (this numascope reads version {PLAN_VERSION})"),
        );
    }
    let created_at = match opt_field(root, "createdAt") {
        Some(c) => Some(string(c, "createdAt")?.to_string()),
        None => None,
    };
    let source = opt_field(root, "source").cloned();

    // target
    let t = obj(field(root, "", "target")?, "target")?;
    let pid = uint(field(t, "target", "pid")?, "target.pid")?;
    if pid == 0 || pid > i32::MAX as u64 {
        return err("target.pid", format!("expected a positive process id, found {pid}"));
    }
    let start_time_ticks =
        match opt_field(t, "startTimeTicks") {
            Some(s) => {
                let s = string(s, "target.startTimeTicks")?;
                Some(s.parse::<u64>().map_or_else(
                    |_| err("target.startTimeTicks", format!("expected a decimal string, found {s:?}")),
                    Ok,
                )?)
            }
            None => None,
        };
    let command = match opt_field(t, "command") {
        Some(c) => {
            let a = array(c, "target.command")?;
            let mut out = Vec::new();
            for (i, s) in a.iter().enumerate() {
                out.push(string(s, &format!("target.command[{i}]"))?.to_string());
            }
            Some(out)
        }
        None => None,
    };
    let m = obj(field(t, "target", "machine")?, "target.machine")?;
    let node_ids = node_list(field(m, "target.machine", "nodeIds")?, "target.machine.nodeIds")?;
    if node_ids.is_empty() {
        return err("target.machine.nodeIds", "must list at least one node");
    }
    for i in 1..node_ids.len() {
        if node_ids[..i].contains(&node_ids[i]) {
            return err(&format!("target.machine.nodeIds[{i}]"), format!("node {} listed twice", node_ids[i]));
        }
    }
    let distances = match opt_field(m, "distances") {
        Some(d) => {
            let rows = array(d, "target.machine.distances")?;
            if rows.len() != node_ids.len() {
                return err("target.machine.distances", format!("{} rows for {} nodes", rows.len(), node_ids.len()));
            }
            let mut out = Vec::new();
            for (i, r) in rows.iter().enumerate() {
                let p = format!("target.machine.distances[{i}]");
                let row = array(r, &p)?;
                if row.len() != node_ids.len() {
                    return err(&p, format!("{} columns for {} nodes", row.len(), node_ids.len()));
                }
                let mut rr = Vec::new();
                for (j, x) in row.iter().enumerate() {
                    rr.push(node_id(x, &format!("{p}[{j}]"))?);
                }
                out.push(rr);
            }
            Some(out)
        }
        None => None,
    };
    let target = PlanTarget {
        pid: pid as i32,
        start_time_ticks,
        command,
        machine: PlanMachine { node_ids: node_ids.clone(), distances },
    };

    // pageRanges
    let mut page_ranges = Vec::new();
    if let Some(prs) = opt_field(root, "pageRanges") {
        for (i, r) in array(prs, "pageRanges")?.iter().enumerate() {
            let p = format!("pageRanges[{i}]");
            let o = obj(r, &p)?;
            let start = hex_addr(field(o, &p, "start")?, &join(&p, "start"), page_size)?;
            let end = hex_addr(field(o, &p, "end")?, &join(&p, "end"), page_size)?;
            if start >= end {
                return err(&join(&p, "end"), format!("end 0x{end:x} must be greater than start 0x{start:x}"));
            }
            let action = match string(field(o, &p, "action")?, &join(&p, "action"))? {
                "move" => Action::Move,
                "interleave" => Action::Interleave,
                other => {
                    return err(&join(&p, "action"), format!("expected \"move\" or \"interleave\", found {other:?}"))
                }
            };
            let tp = join(&p, "toNodes");
            let to_nodes = node_list(field(o, &p, "toNodes")?, &tp)?;
            match action {
                Action::Move if to_nodes.len() != 1 => {
                    return err(&tp, format!("action \"move\" needs exactly one node, found {}", to_nodes.len()))
                }
                Action::Interleave if to_nodes.len() < 2 => {
                    return err(
                        &tp,
                        format!("action \"interleave\" needs at least two nodes, found {}", to_nodes.len()),
                    )
                }
                _ => {}
            }
            check_nodes_known(&to_nodes, &node_ids, &tp)?;
            let expected_nodes = match opt_field(o, "expectedNodes") {
                Some(e) => Some(node_map(e, &join(&p, "expectedNodes"))?),
                None => None,
            };
            let reason = match opt_field(o, "reason") {
                Some(s) => Some(string(s, &join(&p, "reason"))?.to_string()),
                None => None,
            };
            page_ranges.push(PageRange { start, end, action, to_nodes, expected_nodes, reason });
        }
    }
    // overlaps
    let mut order: Vec<usize> = (0..page_ranges.len()).collect();
    order.sort_by_key(|&i| page_ranges[i].start);
    for w in order.windows(2) {
        let (a, b) = (&page_ranges[w[0]], &page_ranges[w[1]]);
        if b.start < a.end {
            return err(&format!("pageRanges[{}]", w[1]), format!("overlaps pageRanges[{}]", w[0]));
        }
    }

    // threads
    let mut threads = Vec::new();
    if let Some(ts) = opt_field(root, "threads") {
        for (i, t) in array(ts, "threads")?.iter().enumerate() {
            let p = format!("threads[{i}]");
            let o = obj(t, &p)?;
            let tid = uint(field(o, &p, "tid")?, &join(&p, "tid"))?;
            if tid == 0 || tid > i32::MAX as u64 {
                return err(&join(&p, "tid"), format!("expected a positive thread id, found {tid}"));
            }
            let tp = join(&p, "toNodes");
            let to_nodes = node_list(field(o, &p, "toNodes")?, &tp)?;
            if to_nodes.is_empty() {
                return err(&tp, "must list at least one node");
            }
            check_nodes_known(&to_nodes, &node_ids, &tp)?;
            let expected_node = match opt_field(o, "expectedNode") {
                Some(n) => Some(node_id(n, &join(&p, "expectedNode"))?),
                None => None,
            };
            let reason = match opt_field(o, "reason") {
                Some(s) => Some(string(s, &join(&p, "reason"))?.to_string()),
                None => None,
            };
            if threads.iter().any(|x: &ThreadPin| x.tid == tid as i32) {
                return err(&join(&p, "tid"), format!("thread {tid} is listed twice"));
            }
            threads.push(ThreadPin { tid: tid as i32, to_nodes, expected_node, reason });
        }
    }

    let expected = match opt_field(root, "expected") {
        Some(e) => {
            let o = obj(e, "expected")?;
            let u = |k: &str| -> Result<Option<u64>, PlanError> {
                match opt_field(o, k) {
                    Some(v) => Ok(Some(uint(v, &join("expected", k))?)),
                    None => Ok(None),
                }
            };
            Some(Expected {
                pages_to_move: u("pagesToMove")?,
                bytes_to_move: u("bytesToMove")?,
                pages_per_node_after: match opt_field(o, "pagesPerNodeAfter") {
                    Some(m) => Some(node_map(m, "expected.pagesPerNodeAfter")?),
                    None => None,
                },
                threads_to_pin: u("threadsToPin")?,
            })
        }
        None => None,
    };

    Ok(Plan { version, created_at, source, target, page_ranges, threads, expected })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Value {
        serde_json::json!({
            "format": "numascope-plan", "version": 1,
            "target": { "pid": 42, "startTimeTicks": "100", "machine": { "nodeIds": [0, 1], "distances": [[10, 20], [20, 10]] } },
            "pageRanges": [
                { "start": "0x1000", "end": "0x5000", "action": "interleave", "toNodes": [0, 1], "expectedNodes": { "0": 4 } },
                { "start": "0x8000", "end": "0x9000", "action": "move", "toNodes": [1] }
            ],
            "threads": [ { "tid": 43, "toNodes": [1], "expectedNode": 0 } ],
            "expected": { "pagesToMove": 3, "pagesPerNodeAfter": { "0": 2, "1": 3 }, "threadsToPin": 1 }
        })
    }

    fn bad(f: impl FnOnce(&mut Value)) -> PlanError {
        let mut v = base();
        f(&mut v);
        plan_from_value(&v, 4096).unwrap_err()
    }

    #[test]
    fn parses_valid_plan() {
        let p = plan_from_value(&base(), 4096).unwrap();
        assert_eq!(p.target.pid, 42);
        assert_eq!(p.target.start_time_ticks, Some(100));
        assert_eq!(p.page_ranges[0].start, 0x1000);
        assert_eq!(p.page_ranges[0].target_of(0), 0);
        assert_eq!(p.page_ranges[0].target_of(3), 1);
        assert_eq!(p.page_ranges[1].action, Action::Move);
        assert_eq!(p.threads[0].tid, 43);
        assert_eq!(p.expected.unwrap().pages_per_node_after.unwrap()[&1], 3);
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(bad(|v| v["pageRanges"][1]["toNodes"] = serde_json::json!([0, 1])).path, "pageRanges[1].toNodes");
        assert_eq!(bad(|v| v["pageRanges"][0]["toNodes"] = serde_json::json!([0, 5])).path, "pageRanges[0].toNodes[1]");
        assert_eq!(bad(|v| v["pageRanges"][0]["start"] = "0x1001".into()).path, "pageRanges[0].start");
        assert_eq!(bad(|v| v["pageRanges"][0]["end"] = "0x1000".into()).path, "pageRanges[0].end");
        assert_eq!(bad(|v| v["pageRanges"][1]["start"] = "0x4000".into()).path, "pageRanges[1]");
        assert_eq!(bad(|v| v["pageRanges"][1]["action"] = "spread".into()).path, "pageRanges[1].action");
        assert_eq!(bad(|v| v["threads"][0]["toNodes"] = serde_json::json!([])).path, "threads[0].toNodes");
        assert_eq!(bad(|v| v["threads"][0]["tid"] = serde_json::json!(-1)).path, "threads[0].tid");
        assert_eq!(bad(|v| v["target"]["pid"] = serde_json::json!(0)).path, "target.pid");
        assert_eq!(bad(|v| v["target"]["startTimeTicks"] = serde_json::json!(100)).path, "target.startTimeTicks");
        assert_eq!(
            bad(|v| v["target"]["machine"]["distances"][1] = serde_json::json!([1])).path,
            "target.machine.distances[1]"
        );
        assert_eq!(bad(|v| v["format"] = "x".into()).path, "format");
        assert_eq!(
            bad(|v| {
                v["target"].as_object_mut().unwrap().remove("machine");
            })
            .path,
            "target.machine"
        );
    }

    #[test]
    fn refuses_newer_version() {
        let e = bad(|v| v["version"] = serde_json::json!(2));
        assert_eq!(e.path, "version");
        assert!(e.message.contains("version 2") && e.message.contains("(1)"), "{e}");
    }

    #[test]
    fn nulls_mean_unchecked() {
        let mut v = base();
        v["target"]["startTimeTicks"] = Value::Null;
        v["target"]["machine"]["distances"] = Value::Null;
        v["pageRanges"][0]["expectedNodes"] = Value::Null;
        let p = plan_from_value(&v, 4096).unwrap();
        assert_eq!(p.target.start_time_ticks, None);
        assert_eq!(p.target.machine.distances, None);
    }
}
