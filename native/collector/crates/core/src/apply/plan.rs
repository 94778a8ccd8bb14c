//! Placement plan (docs/plan-format.md, version 1): parsing and validation.
//!
//! Parsing goes through `serde_json::Value` by hand so that every error names the offending
//! field path (`pageRanges[2].toNodes`), as the format requires.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::plan_fields::{
    array, check_nodes_known, err, field, hex_addr, join, node_id, node_list, node_map, obj, opt_field, string,
    too_large, uint,
};
pub use super::plan_fields::{
    pages_human, ser_hex, PlanError, PlanErrorKind, APPLY_MAX_RUNS, MAX_CPUS, MAX_NODES, MAX_PAGES_PER_RANGE,
    MAX_PAGE_RANGES, MAX_PLAN_BYTES, MAX_RECORD_BYTES, MAX_ROLLBACK_RUNS, MAX_THREADS, MAX_TOTAL_PAGES,
};
pub use super::plan_objects::{
    ObjectEntry, ObjectFrame, ObjectPolicy, SizeRange, MAX_FRAMES_PER_OBJECT, MAX_MODULE_PATH_BYTES, MAX_OBJECTS,
    MAX_OBJECT_BYTES, MAX_PLAN_MODULES, MAX_SITE_CHARS, MAX_THREAD_NAME_BYTES, MAX_THREAD_ORDER,
};

/// The only plan version this build understands.
pub const PLAN_VERSION: u64 = 1;
pub const PLAN_FORMAT: &str = "numascope-plan";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Move,
    Interleave,
    /// Page i of the range to the node of weighted slot `i mod sum(weights)`
    /// ([`super::weights::Slots`]).
    WeightedInterleave,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Move => "move",
            Action::Interleave => "interleave",
            Action::WeightedInterleave => "weighted-interleave",
        }
    }
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
    /// Object entries keyed by allocation site, for `numascope run` (docs/plan-format.md,
    /// "Object entries"); empty when the plan has none.
    pub objects: Vec<ObjectEntry>,
    /// System-wide weighted-interleave weights (`numascope apply --set-system-weights`).
    pub system_weights: Option<super::weights::SystemWeights>,
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
    /// `weighted-interleave` only: one weight (1-255) per node of `to_nodes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<u8>>,
    pub expected_nodes: Option<BTreeMap<u32, u64>>,
    pub reason: Option<String>,
}

impl PageRange {
    /// Target node of page `i` of the range.
    pub fn target_of(&self, i: u64) -> u32 {
        match self.action {
            Action::Move => self.to_nodes[0],
            Action::Interleave => self.to_nodes[(i % self.to_nodes.len() as u64) as usize],
            Action::WeightedInterleave => {
                let slots = super::weights::Slots::new(self.weights.as_deref().unwrap_or(&[]));
                self.to_nodes[slots.index(i).min(self.to_nodes.len() - 1)]
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadPin {
    pub tid: i32,
    /// Creation order in the recorded run (0 = the main thread, 1 = the first thread the
    /// program created, ...): identifies the thread in a new run, where tids differ.
    pub order: Option<u32>,
    /// The thread's name (comm, at most 15 bytes) in the recorded run.
    pub name: Option<String>,
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

// ---------------------------------------------------------------- parse

/// Parses and validates a plan. `page_size` is the machine's base page size (alignment rule).
///
/// Besides the format's rules, the documented limits are checked here ([`MAX_PLAN_BYTES`],
/// [`MAX_PAGE_RANGES`], [`MAX_PAGES_PER_RANGE`], [`MAX_TOTAL_PAGES`], [`MAX_THREADS`],
/// [`MAX_NODES`]), so that nothing later allocates or works in proportion to a hostile size.
pub fn parse_plan(text: &str, page_size: u64) -> Result<Plan, PlanError> {
    if text.len() > MAX_PLAN_BYTES {
        return too_large(
            "",
            format!("the plan is {} bytes, more than the limit of {MAX_PLAN_BYTES} bytes", text.len()),
        );
    }
    let v: Value = serde_json::from_str(text).map_err(|e| PlanError::invalid("plan", "", format!("not JSON: {e}")))?;
    plan_from_value(&v, page_size)
}

/// The plan's `target`: the process (pid, start time, command) and its machine's nodes.
fn parse_target(root: &serde_json::Map<String, Value>) -> Result<PlanTarget, PlanError> {
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
    let nv = field(m, "target.machine", "nodeIds")?;
    if array(nv, "target.machine.nodeIds")?.len() > MAX_NODES {
        return too_large("target.machine.nodeIds", format!("more than {MAX_NODES} nodes"));
    }
    let node_ids = node_list(nv, "target.machine.nodeIds")?;
    if node_ids.is_empty() {
        return err("target.machine.nodeIds", "must list at least one node");
    }
    let mut sorted_ids = node_ids.clone();
    sorted_ids.sort_unstable();
    if let Some(w) = sorted_ids.windows(2).find(|w| w[0] == w[1]) {
        let i = node_ids.iter().rposition(|n| *n == w[0]).unwrap_or(0);
        return err(&format!("target.machine.nodeIds[{i}]"), format!("node {} listed twice", w[0]));
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
    Ok(PlanTarget { pid: pid as i32, start_time_ticks, command, machine: PlanMachine { node_ids, distances } })
}

/// The plan's `pageRanges`: each range checked (addresses, action, nodes, weights) and the
/// limits on ranges and pages.
fn parse_page_ranges(
    root: &serde_json::Map<String, Value>,
    node_ids: &[u32],
    sorted_ids: &[u32],
    page_size: u64,
) -> Result<Vec<PageRange>, PlanError> {
    let mut page_ranges = Vec::new();
    let mut total_pages: u64 = 0;
    if let Some(prs) = opt_field(root, "pageRanges") {
        let prs = array(prs, "pageRanges")?;
        if prs.len() > MAX_PAGE_RANGES {
            return too_large(
                "pageRanges",
                format!("{} ranges, more than the limit of {MAX_PAGE_RANGES} ranges per plan", prs.len()),
            );
        }
        page_ranges.reserve(prs.len());
        for (i, r) in prs.iter().enumerate() {
            let p = format!("pageRanges[{i}]");
            let o = obj(r, &p)?;
            let start = hex_addr(field(o, &p, "start")?, &join(&p, "start"), page_size)?;
            let end = hex_addr(field(o, &p, "end")?, &join(&p, "end"), page_size)?;
            if start >= end {
                return err(&join(&p, "end"), format!("end 0x{end:x} must be greater than start 0x{start:x}"));
            }
            let pages = (end - start) / page_size;
            if pages > MAX_PAGES_PER_RANGE {
                return too_large(
                    &p,
                    format!(
                        "0x{start:x}-0x{end:x} is {pages} pages ({}), more than the limit of {MAX_PAGES_PER_RANGE} \
                         pages ({}) per range",
                        pages_human(pages, page_size),
                        pages_human(MAX_PAGES_PER_RANGE, page_size)
                    ),
                );
            }
            total_pages += pages;
            if total_pages > MAX_TOTAL_PAGES {
                return too_large(
                    &p,
                    format!(
                        "the ranges up to this one hold {total_pages} pages ({}), more than the limit of \
                         {MAX_TOTAL_PAGES} pages ({}) per plan",
                        pages_human(total_pages, page_size),
                        pages_human(MAX_TOTAL_PAGES, page_size)
                    ),
                );
            }
            let action = match string(field(o, &p, "action")?, &join(&p, "action"))? {
                "move" => Action::Move,
                "interleave" => Action::Interleave,
                "weighted-interleave" => Action::WeightedInterleave,
                other => {
                    return err(
                        &join(&p, "action"),
                        format!("expected \"move\", \"interleave\" or \"weighted-interleave\", found {other:?}"),
                    )
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
                Action::WeightedInterleave if to_nodes.is_empty() => {
                    return err(&tp, "action \"weighted-interleave\" needs at least one node")
                }
                _ => {}
            }
            check_nodes_known(&to_nodes, node_ids, sorted_ids, &tp)?;
            let wp = join(&p, "weights");
            let weights = match (action, opt_field(o, "weights")) {
                (Action::WeightedInterleave, Some(w)) => Some(super::weights::parse_weights(w, &wp, to_nodes.len())?),
                (Action::WeightedInterleave, None) => {
                    return err(&wp, "action \"weighted-interleave\" needs one weight (1-255) per node of toNodes")
                }
                (a, Some(_)) => {
                    return err(&wp, format!("weights are only for \"weighted-interleave\", not {:?}", a.name()))
                }
                (_, None) => None,
            };
            let expected_nodes = match opt_field(o, "expectedNodes") {
                Some(e) => Some(node_map(e, &join(&p, "expectedNodes"))?),
                None => None,
            };
            let reason = match opt_field(o, "reason") {
                Some(s) => Some(string(s, &join(&p, "reason"))?.to_string()),
                None => None,
            };
            page_ranges.push(PageRange { start, end, action, to_nodes, weights, expected_nodes, reason });
        }
    }
    Ok(page_ranges)
}

pub fn plan_from_value(v: &Value, page_size: u64) -> Result<Plan, PlanError> {
    if !page_size.is_power_of_two() {
        return err("", format!("the machine's page size {page_size} is not a power of two"));
    }
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

    let target = parse_target(root)?;
    let node_ids = target.machine.node_ids.clone();
    let mut sorted_ids = node_ids.clone();
    sorted_ids.sort_unstable();

    let page_ranges = parse_page_ranges(root, &node_ids, &sorted_ids, page_size)?;
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
    let mut tids = std::collections::HashSet::new();
    let mut identities = std::collections::HashSet::new();
    if let Some(ts) = opt_field(root, "threads") {
        let ts = array(ts, "threads")?;
        if ts.len() > MAX_THREADS {
            return too_large(
                "threads",
                format!("{} threads, more than the limit of {MAX_THREADS} threads per plan", ts.len()),
            );
        }
        for (i, t) in ts.iter().enumerate() {
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
            check_nodes_known(&to_nodes, &node_ids, &sorted_ids, &tp)?;
            let expected_node = match opt_field(o, "expectedNode") {
                Some(n) => Some(node_id(n, &join(&p, "expectedNode"))?),
                None => None,
            };
            let reason = match opt_field(o, "reason") {
                Some(s) => Some(string(s, &join(&p, "reason"))?.to_string()),
                None => None,
            };
            if !tids.insert(tid) {
                return err(&join(&p, "tid"), format!("thread {tid} is listed twice"));
            }
            let (order, name) = super::plan_objects::thread_identity(o, &p, &mut identities)?;
            threads.push(ThreadPin { tid: tid as i32, order, name, to_nodes, expected_node, reason });
        }
    }

    let objects = match opt_field(root, "objects") {
        Some(v) => super::plan_objects::parse_objects(v, &node_ids, &sorted_ids, page_size)?,
        None => Vec::new(),
    };

    let system_weights = match opt_field(root, "systemWeights") {
        Some(v) => Some(super::weights::parse_system_weights(v, &sorted_ids)?),
        None => None,
    };

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

    Ok(Plan { version, created_at, source, target, page_ranges, threads, objects, system_weights, expected })
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
    fn weighted_interleave_ranges_and_system_weights() {
        use serde_json::json;
        let mut v = base();
        v["pageRanges"][0] = json!({ "start": "0x1000", "end": "0x8000", "action": "weighted-interleave",
                                     "toNodes": [1, 0], "weights": [3, 1] });
        v["systemWeights"] = json!({ "weights": { "0": 1, "1": 3 }, "reason": "HMAT bandwidth" });
        let p = plan_from_value(&v, 4096).unwrap();
        let r = &p.page_ranges[0];
        assert_eq!((r.action, r.weights.as_deref()), (Action::WeightedInterleave, Some(&[3u8, 1][..])));
        let t: Vec<u32> = (0..8).map(|i| r.target_of(i)).collect();
        assert_eq!(t, vec![1, 1, 1, 0, 1, 1, 1, 0]);
        assert_eq!(p.system_weights.as_ref().unwrap().weights, BTreeMap::from([(0, 1), (1, 3)]));
        let j = serde_json::to_value(r).unwrap();
        assert_eq!((j["action"].as_str(), j["weights"].clone()), (Some("weighted-interleave"), json!([3, 1])));
        // one node is allowed (all pages there)
        let mut one = v.clone();
        one["pageRanges"][0]["toNodes"] = json!([1]);
        one["pageRanges"][0]["weights"] = json!([7]);
        assert_eq!(plan_from_value(&one, 4096).unwrap().page_ranges[0].target_of(5), 1);
        type Case = (Box<dyn FnOnce(&mut Value)>, &'static str);
        let cases: Vec<Case> = vec![
            (Box::new(|v| v["pageRanges"][0]["weights"] = json!([3])), "pageRanges[0].weights"),
            (Box::new(|v| v["pageRanges"][0]["weights"] = json!([0, 1])), "pageRanges[0].weights[0]"),
            (Box::new(|v| v["pageRanges"][0]["weights"] = json!([3, 256])), "pageRanges[0].weights[1]"),
            (
                Box::new(|v| {
                    v["pageRanges"][0].as_object_mut().unwrap().remove("weights");
                }),
                "pageRanges[0].weights",
            ),
            (Box::new(|v| v["pageRanges"][0]["toNodes"] = json!([])), "pageRanges[0].toNodes"),
            (Box::new(|v| v["pageRanges"][0]["toNodes"] = json!([1, 1])), "pageRanges[0].toNodes[1]"),
            (Box::new(|v| v["pageRanges"][1]["weights"] = json!([1])), "pageRanges[1].weights"),
            (Box::new(|v| v["systemWeights"]["weights"]["5"] = json!(1)), "systemWeights.weights.5"),
            (Box::new(|v| v["systemWeights"]["weights"]["0"] = json!(0)), "systemWeights.weights.0"),
        ];
        for (i, (f, path)) in cases.into_iter().enumerate() {
            let mut w = v.clone();
            f(&mut w);
            let e = plan_from_value(&w, 4096).unwrap_err();
            assert_eq!(e.path, path, "case {i}: {e}");
        }
    }

    #[test]
    fn refuses_newer_version() {
        let e = bad(|v| v["version"] = serde_json::json!(2));
        assert_eq!(e.path, "version");
        assert!(e.message.contains("version 2") && e.message.contains("(1)"), "{e}");
    }

    #[test]
    fn limits_are_checked_at_parse() {
        let e = bad(|v| {
            v["pageRanges"] =
                serde_json::json!([{ "start": "0x1000", "end": "0x7ffffffff000", "action": "move", "toNodes": [0] }])
        });
        assert_eq!((e.path.as_str(), e.kind), ("pageRanges[0]", PlanErrorKind::TooLarge));
        assert!(
            e.to_string().starts_with("refused plan: pageRanges[0]: 0x1000-0x7ffffffff000 is 34359738366 pages"),
            "{e}"
        );
        let big = MAX_PAGES_PER_RANGE * 4096;
        let r = |i: u64| serde_json::json!({ "start": format!("0x{:x}", (i + 1) * big), "end": format!("0x{:x}", (i + 2) * big), "action": "move", "toNodes": [0] });
        let e = bad(|v| v["pageRanges"] = serde_json::json!([r(0), r(1), r(2)]));
        assert_eq!((e.path.as_str(), e.kind), ("pageRanges[2]", PlanErrorKind::TooLarge));
        let many = serde_json::json!({ "start": "0x1000", "end": "0x2000", "action": "move", "toNodes": [0] });
        let e = bad(|v| v["pageRanges"] = Value::Array(vec![many; MAX_PAGE_RANGES + 1]));
        assert_eq!((e.path.as_str(), e.kind), ("pageRanges", PlanErrorKind::TooLarge));
        let t = serde_json::json!({ "tid": 1, "toNodes": [0] });
        assert_eq!(bad(|v| v["threads"] = Value::Array(vec![t; MAX_THREADS + 1])).kind, PlanErrorKind::TooLarge);
        let e = parse_plan(&" ".repeat(MAX_PLAN_BYTES + 1), 4096).unwrap_err();
        assert_eq!(e.kind, PlanErrorKind::TooLarge);
    }

    #[test]
    fn hostile_values_give_errors_not_panics() {
        assert_eq!(
            bad(|v| v["pageRanges"][0]["toNodes"] = serde_json::json!([0, 1, 0])).path,
            "pageRanges[0].toNodes[2]"
        );
        assert_eq!(bad(|v| v["pageRanges"][0]["start"] = "0x+1000".into()).path, "pageRanges[0].start");
        assert_eq!(bad(|v| v["pageRanges"][0]["start"] = "0x10000000000000000".into()).path, "pageRanges[0].start");
        // a long multi-byte string in an error message is cut at a character boundary
        let e = bad(|v| v["pageRanges"][0]["start"] = "💥".repeat(50).into());
        assert!(e.message.contains('…'), "{e}");
        assert_eq!(
            bad(|v| v["target"]["machine"]["nodeIds"] = serde_json::json!([0, 1, 1])).path,
            "target.machine.nodeIds[2]"
        );
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

    fn with_objects() -> Value {
        let mut v = base();
        v["objects"] = serde_json::json!([
            { "site": "points.c:84 alloc_points",
              "frames": [ { "module": "/opt/app/bin/app", "buildId": "3F2A00", "offset": "0x1a2b" },
                          { "module": "/opt/app/bin/app", "buildId": "3f2a00", "offset": "0x2000" } ],
              "size": { "min": 16777216, "max": 16777216 },
              "policy": "bind", "nodes": [1] },
            { "frames": [ { "module": "/usr/lib/libx.so", "offset": "0x10" } ],
              "size": { "min": 4096, "max": 1073741824 },
              "policy": "weighted-interleave", "nodes": [0, 1], "weights": [3, 1], "reason": "bandwidth" }
        ]);
        v["threads"] = serde_json::json!([
            { "tid": 43, "order": 1, "name": "worker-a", "toNodes": [1] },
            { "tid": 44, "order": 2, "toNodes": [0] }
        ]);
        v
    }

    fn bad_obj(f: impl FnOnce(&mut Value)) -> PlanError {
        let mut v = with_objects();
        f(&mut v);
        plan_from_value(&v, 4096).unwrap_err()
    }

    #[test]
    fn parses_object_entries_and_thread_identities() {
        let p = plan_from_value(&with_objects(), 4096).unwrap();
        assert_eq!(p.objects.len(), 2);
        let o = &p.objects[0];
        assert_eq!(o.site.as_deref(), Some("points.c:84 alloc_points"));
        assert_eq!(o.frames[0].build_id.as_deref(), Some("3f2a00"), "build ids are lower-cased");
        assert_eq!(o.frames[0].offset, 0x1a2b);
        assert_eq!((o.size.min, o.size.max), (16 << 20, 16 << 20));
        assert_eq!((o.policy, o.nodes.as_slice(), o.weights.as_deref()), (ObjectPolicy::Bind, &[1u32][..], None));
        let w = &p.objects[1];
        assert_eq!(w.frames[0].build_id, None);
        assert_eq!((w.policy, w.weights.as_deref()), (ObjectPolicy::WeightedInterleave, Some(&[3u8, 1][..])));
        assert_eq!((p.threads[0].order, p.threads[0].name.as_deref()), (Some(1), Some("worker-a")));
        assert_eq!((p.threads[1].order, p.threads[1].name.as_deref()), (Some(2), None));
        // a plan without the new fields still parses, with none of them
        let old = plan_from_value(&base(), 4096).unwrap();
        assert!(old.objects.is_empty() && old.threads[0].order.is_none() && old.threads[0].name.is_none());
        // serialised back with the documented field names
        let j = serde_json::to_value(&p.objects[1]).unwrap();
        assert_eq!(j["policy"], "weighted-interleave");
        assert_eq!(j["frames"][0]["offset"], "0x10");
        assert_eq!(j["size"]["max"], 1073741824);
    }

    #[test]
    fn object_errors_name_the_field() {
        use serde_json::json;
        type Case = (Box<dyn FnOnce(&mut Value)>, &'static str);
        let cases: Vec<Case> = vec![
            (Box::new(|v| v["objects"] = json!({})), "objects"),
            (Box::new(|v| v["objects"][0]["frames"] = json!([])), "objects[0].frames"),
            (Box::new(|v| v["objects"][0]["frames"][1]["module"] = json!("app")), "objects[0].frames[1].module"),
            (Box::new(|v| v["objects"][0]["frames"][1]["module"] = json!("/a\nb")), "objects[0].frames[1].module"),
            (Box::new(|v| v["objects"][0]["frames"][0]["buildId"] = json!("xyz")), "objects[0].frames[0].buildId"),
            (Box::new(|v| v["objects"][0]["frames"][0]["buildId"] = json!("abc")), "objects[0].frames[0].buildId"),
            (Box::new(|v| v["objects"][0]["frames"][0]["offset"] = json!(4096)), "objects[0].frames[0].offset"),
            (Box::new(|v| v["objects"][0]["frames"][0]["offset"] = json!("0x")), "objects[0].frames[0].offset"),
            (
                Box::new(|v| v["objects"][0]["frames"][0]["offset"] = json!("0x10000000000000000")),
                "objects[0].frames[0].offset",
            ),
            (Box::new(|v| v["objects"][0]["size"]["min"] = json!(100)), "objects[0].size.min"),
            (Box::new(|v| v["objects"][0]["size"]["max"] = json!(4096)), "objects[0].size.max"),
            (
                Box::new(|v| {
                    v["objects"][0].as_object_mut().unwrap().remove("size");
                }),
                "objects[0].size",
            ),
            (Box::new(|v| v["objects"][0]["policy"] = json!("preferred")), "objects[0].policy"),
            (Box::new(|v| v["objects"][0]["nodes"] = json!([])), "objects[0].nodes"),
            (Box::new(|v| v["objects"][0]["nodes"] = json!([7])), "objects[0].nodes[0]"),
            (Box::new(|v| v["objects"][0]["nodes"] = json!([1, 1])), "objects[0].nodes[1]"),
            (Box::new(|v| v["objects"][0]["nodes"] = json!([-1])), "objects[0].nodes[0]"),
            (Box::new(|v| v["objects"][0]["weights"] = json!([1])), "objects[0].weights"),
            (Box::new(|v| v["objects"][1]["weights"] = json!([3])), "objects[1].weights"),
            (Box::new(|v| v["objects"][1]["weights"] = json!([0, 1])), "objects[1].weights[0]"),
            (Box::new(|v| v["objects"][1]["weights"] = json!([3, 256])), "objects[1].weights[1]"),
            (Box::new(|v| v["objects"][1]["weights"] = json!([3, 1.5])), "objects[1].weights[1]"),
            (
                Box::new(|v| {
                    v["objects"][1].as_object_mut().unwrap().remove("weights");
                }),
                "objects[1].weights",
            ),
            (Box::new(|v| v["objects"][1] = v["objects"][0].clone()), "objects[1]"),
            (Box::new(|v| v["threads"][0]["name"] = json!("a-name-longer-than-15")), "threads[0].name"),
            (Box::new(|v| v["threads"][0]["name"] = json!("")), "threads[0].name"),
            (Box::new(|v| v["threads"][0]["order"] = json!(-2)), "threads[0].order"),
            (Box::new(|v| v["threads"][1]["order"] = json!(1)), "threads[1]"),
        ];
        for (i, (f, path)) in cases.into_iter().enumerate() {
            let e = bad_obj(f);
            assert_eq!(e.path, path, "case {i}: {e}");
            assert_eq!(e.kind, PlanErrorKind::Invalid, "case {i}: {e}");
        }
        // duplicate nodes name the second occurrence
        assert!(bad_obj(|v| v["objects"][0]["nodes"] = json!([1, 1])).message.contains("twice"));
    }

    #[test]
    fn hostile_object_entries_are_refused_within_bounds() {
        use serde_json::json;
        let one = with_objects()["objects"][0].clone();
        let e = bad_obj(|v| v["objects"] = Value::Array(vec![one.clone(); MAX_OBJECTS + 1]));
        assert_eq!((e.path.as_str(), e.kind), ("objects", PlanErrorKind::TooLarge));
        let frame = json!({ "module": "/a", "offset": "0x1" });
        let e = bad_obj(|v| v["objects"][0]["frames"] = Value::Array(vec![frame; MAX_FRAMES_PER_OBJECT + 1]));
        assert_eq!((e.path.as_str(), e.kind), ("objects[0].frames", PlanErrorKind::TooLarge));
        let e = bad_obj(|v| {
            v["objects"][0]["frames"][0]["module"] = format!("/{}", "a".repeat(MAX_MODULE_PATH_BYTES)).into()
        });
        assert_eq!((e.path.as_str(), e.kind), ("objects[0].frames[0].module", PlanErrorKind::TooLarge));
        let e = bad_obj(|v| v["objects"][0]["site"] = "x".repeat(MAX_SITE_CHARS + 1).into());
        assert_eq!((e.path.as_str(), e.kind), ("objects[0].site", PlanErrorKind::TooLarge));
        let e = bad_obj(|v| v["objects"][0]["size"]["max"] = json!(u64::MAX));
        assert_eq!((e.path.as_str(), e.kind), ("objects[0].size.max", PlanErrorKind::TooLarge));
        let e = bad_obj(|v| v["threads"][0]["order"] = json!(u64::MAX));
        assert_eq!((e.path.as_str(), e.kind), ("threads[0].order", PlanErrorKind::TooLarge));
        // more distinct modules than the shim's table holds
        let many: Vec<Value> = (0..MAX_PLAN_MODULES + 1)
            .map(|i| {
                json!({ "frames": [ { "module": format!("/lib/m{i}.so"), "offset": "0x1" } ],
                             "size": { "min": 4096, "max": 4096 }, "policy": "bind", "nodes": [0] })
            })
            .collect();
        let e = bad_obj(|v| v["objects"] = Value::Array(many));
        assert_eq!(
            (e.path.as_str(), e.kind),
            (format!("objects[{MAX_PLAN_MODULES}].frames").as_str(), PlanErrorKind::TooLarge)
        );
        // a node list longer than the machine's is refused before it is walked
        let e = bad_obj(|v| v["objects"][0]["nodes"] = Value::Array(vec![json!(0); 100_000]));
        assert_eq!(e.path, "objects[0].nodes");
    }
}
