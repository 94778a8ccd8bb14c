//! `numascope run --plan PLAN -- CMD`: applying a plan's object and thread entries to a new run
//! of the program from its first allocation (docs/apply.md, "Applying at the next launch").
//!
//! This file holds what does not need a process: the checks (machine, program, weighted
//! interleave), the shim's plan file (the line format in crates/allocshim/src/place.rs), the
//! parser of the shim's log, the run report and the whole-process `numactl` line. `process.rs`
//! launches the program with the shim preloaded.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::apply::plan::{ObjectEntry, ObjectPolicy, Plan};
use crate::topology::Topology;

/// Thread entries with an order or a name that one run can use (the shim's table size).
pub const MAX_RUN_THREAD_ENTRIES: usize = 1024;
/// Cpu ids the shim's affinity masks hold (128 words).
pub const MAX_RUN_CPU: u32 = 128 * 64;
/// The largest log numascope reads back (the shim caps its per-event lines per process).
pub const MAX_LOG_BYTES: u64 = 64 << 20;

const MPOL_BIND: u32 = 2;
const MPOL_INTERLEAVE: u32 = 3;
const MPOL_WEIGHTED_INTERLEAVE: u32 = 6;

/// The kernel's system-wide weights for MPOL_WEIGHTED_INTERLEAVE (Linux >= 6.9).
pub const WEIGHTED_INTERLEAVE_SYSFS: &str = "/sys/kernel/mm/mempolicy/weighted_interleave";

/// What to do with `weighted-interleave` entries whose weights the kernel does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightsFallback {
    /// Refuse the run with a message saying how to set the weights.
    Refuse,
    /// Use plain interleave over the same nodes (reported as a warning).
    Interleave,
}

/// Checks that the plan was made on a machine with the same nodes (and distances, when given).
pub fn check_machine(plan: &Plan, topo: &Topology) -> Result<(), String> {
    let live: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    let want = &plan.target.machine.node_ids;
    if *want != live {
        return Err(format!(
            "the plan was made for a machine with nodes {want:?} (target.machine.nodeIds) but this machine has nodes {live:?}"
        ));
    }
    if let Some(d) = &plan.target.machine.distances {
        if *d != topo.distances {
            return Err(format!(
                "target.machine.distances {d:?} differ from this machine's {:?}: the plan was made for another machine",
                topo.distances
            ));
        }
    }
    Ok(())
}

/// The file name of a command word (`./bin/app` -> `app`).
fn base_name(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Checks that `command` runs the program the plan was made for (the same file name; the
/// arguments may differ). `Ok(Some(note))` when there is something to say.
pub fn check_program(plan: &Plan, command: &[String]) -> Result<Option<String>, String> {
    let Some(run) = command.first() else { return Err("no command given after --".into()) };
    let Some(planned) = plan.target.command.as_ref().and_then(|c| c.first()) else {
        return Ok(Some("the plan names no command (target.command): the program is not checked".into()));
    };
    if base_name(planned) != base_name(run) {
        return Err(format!(
            "the plan was made for {planned:?} (target.command[0]) but the command runs {run:?}; its object entries \
             name code addresses of that program. Pass --any-program to run it anyway"
        ));
    }
    let planned_args = plan.target.command.as_ref().map(|c| &c[1..]).unwrap_or(&[]);
    if planned_args != &command[1..] {
        return Ok(Some(format!("the arguments differ from the recorded run's ({planned_args:?})")));
    }
    Ok(None)
}

/// Checks `weighted-interleave` entries against the kernel: MPOL_WEIGHTED_INTERLEAVE exists
/// (its sysfs directory) and its system-wide weights (`nodeN`) are the plan's. Returns the
/// policy to use per object (plain interleave where the fallback applies) and warnings.
pub fn check_weights(
    plan: &Plan,
    sysfs_dir: &Path,
    fallback: WeightsFallback,
) -> Result<(Vec<ObjectPolicy>, Vec<String>), String> {
    let mut policies = Vec::with_capacity(plan.objects.len());
    let mut warnings = Vec::new();
    for (i, o) in plan.objects.iter().enumerate() {
        if o.policy != ObjectPolicy::WeightedInterleave {
            policies.push(o.policy);
            continue;
        }
        let problem = weights_problem(o, sysfs_dir);
        match (problem, fallback) {
            (None, _) => policies.push(o.policy),
            (Some(p), WeightsFallback::Interleave) => {
                warnings.push(format!(
                    "objects[{i}]: {p}; using plain interleave over nodes {:?} (--weights-fallback interleave)",
                    o.nodes
                ));
                policies.push(ObjectPolicy::Interleave);
            }
            (Some(p), WeightsFallback::Refuse) => {
                let set = if sysfs_dir.is_dir() {
                    "Pass --set-system-weights (as root) to write the plan's weights for the run and restore the \
                     previous ones when it ends, or "
                } else {
                    "Pass "
                };
                return Err(format!(
                    "objects[{i}]: {p}. {set}--weights-fallback interleave to use plain interleave over the same nodes"
                ));
            }
        }
    }
    Ok((policies, warnings))
}

/// The system-wide weights `numascope run --set-system-weights` writes for the run: the plan's
/// `systemWeights`, and every `weighted-interleave` object entry's weights per node. The kernel
/// has one weight per node for all processes, so entries (or `systemWeights`) that give one node
/// different weights are refused, naming both. `None` when nothing asks for weights.
pub fn run_system_weights(plan: &Plan) -> Result<Option<crate::apply::weights::SystemWeights>, String> {
    let mut want: BTreeMap<u32, (u8, String)> = BTreeMap::new();
    let mut add = |n: u32, w: u8, who: String| -> Result<(), String> {
        match want.get(&n) {
            Some((have, by)) if *have != w => Err(format!(
                "{who} gives node {n} weight {w} but {by} gives it {have}: the kernel has one system-wide weight per \
                 node, so these entries cannot all have their weights in one run"
            )),
            Some(_) => Ok(()),
            None => {
                want.insert(n, (w, who));
                Ok(())
            }
        }
    };
    if let Some(sw) = &plan.system_weights {
        for (n, w) in &sw.weights {
            add(*n, *w, format!("systemWeights.weights.{n}"))?;
        }
    }
    for (i, o) in plan.objects.iter().enumerate() {
        if o.policy != ObjectPolicy::WeightedInterleave {
            continue;
        }
        for (k, (n, w)) in o.nodes.iter().zip(o.weights.as_deref().unwrap_or(&[])).enumerate() {
            add(*n, *w, format!("objects[{i}].weights[{k}]"))?;
        }
    }
    if want.is_empty() {
        return Ok(None);
    }
    Ok(Some(crate::apply::weights::SystemWeights {
        weights: want.into_iter().map(|(n, (w, _))| (n, w)).collect(),
        reason: Some("numascope run --set-system-weights".into()),
    }))
}

fn weights_problem(o: &ObjectEntry, dir: &Path) -> Option<String> {
    if !dir.is_dir() {
        return Some(format!(
            "this kernel has no weighted interleave ({} is missing: MPOL_WEIGHTED_INTERLEAVE needs Linux 6.9 or later)",
            dir.display()
        ));
    }
    let weights = o.weights.as_deref().unwrap_or(&[]);
    let mut differ = Vec::new();
    for (n, w) in o.nodes.iter().zip(weights) {
        let f = dir.join(format!("node{n}"));
        match std::fs::read_to_string(&f).ok().and_then(|s| s.trim().parse::<u32>().ok()) {
            Some(have) if have == *w as u32 => {}
            Some(have) => differ.push(format!("node {n}: {have} (plan: {w})")),
            None => differ.push(format!("node {n}: unreadable {} (plan: {w})", f.display())),
        }
    }
    if differ.is_empty() {
        None
    } else {
        Some(format!(
            "the kernel's weighted-interleave weights are system-wide and differ from the plan's: {}",
            differ.join(", ")
        ))
    }
}

/// The plan in the shim's line format, and which plan entries its lines stand for.
#[derive(Clone, Debug, PartialEq)]
pub struct ShimPlan {
    pub text: String,
    /// `T` line index -> index in `plan.threads`.
    pub thread_entries: Vec<usize>,
    /// `M` line index -> (path, build id).
    pub modules: Vec<(String, Option<String>)>,
    /// Thread entries a new run cannot use (a tid only): indices in `plan.threads`.
    pub tid_only_threads: Vec<usize>,
}

fn hex_bytes(out: &mut String, b: &[u8]) {
    for c in b {
        let _ = write!(out, "{c:02x}");
    }
}

fn mask_words(ids: impl Iterator<Item = u32>) -> Vec<u64> {
    let ids: Vec<u32> = ids.collect();
    let words = ids.iter().max().map_or(1, |m| *m as usize / 64 + 1);
    let mut w = vec![0u64; words];
    for i in ids {
        w[i as usize / 64] |= 1 << (i % 64);
    }
    w
}

fn push_mask(out: &mut String, w: &[u64]) {
    let _ = write!(out, " {:x}", w.len());
    for x in w {
        let _ = write!(out, " {x:x}");
    }
}

/// Writes the shim's plan file (crates/allocshim/src/place.rs). `policies` from
/// [`check_weights`]. Thread entries pin to every cpu of their nodes.
pub fn shim_plan(plan: &Plan, policies: &[ObjectPolicy], topo: &Topology) -> Result<ShimPlan, String> {
    let mut text = String::from("NSPLACE 1\n");
    let mut modules: Vec<(String, Option<String>)> = Vec::new();
    let mut index: BTreeMap<(String, Option<String>), usize> = BTreeMap::new();
    for o in &plan.objects {
        for f in &o.frames {
            let key = (f.module.clone(), f.build_id.clone());
            if !index.contains_key(&key) {
                index.insert(key.clone(), modules.len());
                modules.push(key);
            }
        }
    }
    for (i, (path, id)) in modules.iter().enumerate() {
        let _ = write!(text, "M {i:x} {} ", id.as_deref().unwrap_or("-"));
        hex_bytes(&mut text, path.as_bytes());
        text.push('\n');
    }
    for (i, o) in plan.objects.iter().enumerate() {
        let mode = match policies.get(i).copied().unwrap_or(o.policy) {
            ObjectPolicy::Bind => MPOL_BIND,
            ObjectPolicy::Interleave => MPOL_INTERLEAVE,
            ObjectPolicy::WeightedInterleave => MPOL_WEIGHTED_INTERLEAVE,
        };
        let _ = write!(text, "O {i:x} {mode:x} {:x} {:x}", o.size.min, o.size.max);
        push_mask(&mut text, &mask_words(o.nodes.iter().copied()));
        let _ = write!(text, " {:x}", o.frames.len());
        for f in &o.frames {
            let m = index[&(f.module.clone(), f.build_id.clone())];
            let _ = write!(text, " {m:x} {:x}", f.offset);
        }
        text.push('\n');
    }
    let mut thread_entries = Vec::new();
    let mut tid_only_threads = Vec::new();
    for (i, t) in plan.threads.iter().enumerate() {
        if t.order.is_none() && t.name.is_none() {
            tid_only_threads.push(i);
            continue;
        }
        if thread_entries.len() >= MAX_RUN_THREAD_ENTRIES {
            return Err(format!(
                "threads: more than {MAX_RUN_THREAD_ENTRIES} entries with an order or a name, more than one run can use"
            ));
        }
        let cpus: Vec<u32> =
            topo.nodes.iter().filter(|n| t.to_nodes.contains(&n.id)).flat_map(|n| n.cpus.clone()).collect();
        if cpus.is_empty() {
            return Err(format!("threads[{i}].toNodes: nodes {:?} have no cpus on this machine", t.to_nodes));
        }
        if let Some(c) = cpus.iter().find(|c| **c >= MAX_RUN_CPU) {
            return Err(format!("threads[{i}]: cpu {c} is beyond the {MAX_RUN_CPU} cpus numascope run can pin to"));
        }
        let _ = write!(text, "T {:x} ", thread_entries.len());
        match t.order {
            Some(o) => {
                let _ = write!(text, "{o:x} ");
            }
            None => text.push_str("- "),
        }
        match &t.name {
            Some(n) => hex_bytes(&mut text, n.as_bytes()),
            None => text.push('-'),
        }
        push_mask(&mut text, &mask_words(cpus.into_iter()));
        text.push('\n');
        thread_entries.push(i);
    }
    text.push_str("E\n");
    Ok(ShimPlan { text, thread_entries, modules, tid_only_threads })
}

/// The object-entry frames of recorded allocation `alloc` (alloc_sites): its physical frames
/// (inlined ones share an address) from the allocation site (the first frame outside allocator
/// and runtimes) outward, at most `n`, cut at the first frame without a module file.
pub fn plan_frames(s: &crate::alloc_sites::AllocSites, alloc: usize, n: usize) -> Vec<crate::apply::plan::ObjectFrame> {
    let mut out = Vec::new();
    let Some(a) = s.allocations.get(alloc) else { return out };
    let mut node = a.stack;
    let mut started = false;
    let mut guard = 0;
    while let Some(i) = node {
        guard += 1;
        let Some(st) = s.stacks.get(i as usize) else { break };
        if guard > s.stacks.len() {
            break;
        }
        node = st.parent;
        let Some(f) = s.frames.get(st.frame as usize) else { break };
        if f.inlined {
            continue;
        }
        if !started && crate::alloc_sites::is_runtime_frame(f, &s.modules) {
            continue;
        }
        started = true;
        let Some(m) = f.module.and_then(|m| s.modules.get(m as usize)) else { break };
        let path = m.path.to_string_lossy();
        if !path.starts_with('/') || out.len() == n {
            break;
        }
        out.push(crate::apply::plan::ObjectFrame {
            module: path.into_owned(),
            build_id: (!m.build_id.is_empty()).then(|| m.build_id.clone()),
            offset: f.module_address,
        });
    }
    out
}

// ---------------------------------------------------------------- the shim's log

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessLog {
    pub ppid: Option<u32>,
    /// Refused plan file at this line (0: unreadable).
    pub refused_at: Option<u64>,
    pub placements: Vec<Placement>,
    pub pins: Vec<Pin>,
    /// object -> (matches, bytes, failures), from the exit summary.
    pub summary: BTreeMap<usize, (u64, u64, u64)>,
    pub modules: BTreeMap<usize, String>,
    pub unlogged: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub tid: u32,
    pub object: usize,
    pub addr: u64,
    pub len: u64,
    pub errno: i32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    pub tid: u32,
    pub entry: usize,
    pub order: Option<u32>,
    pub errno: i32,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShimLog {
    pub processes: BTreeMap<u32, ProcessLog>,
    /// Lines that did not parse (a torn write when a process was killed, or not the shim's).
    pub bad_lines: u64,
}

fn parse_line(log: &mut ShimLog, line: &str) -> Option<()> {
    let mut w = line.split(' ');
    let kind = w.next()?;
    let pid: u32 = w.next()?.parse().ok()?;
    let dec = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok());
    let hex = |s: Option<&str>| s.and_then(|s| u64::from_str_radix(s, 16).ok());
    let mut fields: Vec<&str> = w.collect();
    let p = log.processes.entry(pid).or_default();
    let mut it = fields.drain(..);
    match kind {
        "I" => p.ppid = Some(dec(it.next())? as u32),
        "F" => p.refused_at = Some(dec(it.next())?),
        "P" => p.placements.push(Placement {
            tid: dec(it.next())? as u32,
            object: dec(it.next())? as usize,
            addr: hex(it.next())?,
            len: hex(it.next())?,
            errno: dec(it.next())? as i32,
        }),
        "T" => {
            let tid = dec(it.next())? as u32;
            let entry = dec(it.next())? as usize;
            let order = match it.next()? {
                "-" => None,
                s => Some(s.parse().ok()?),
            };
            p.pins.push(Pin { tid, entry, order, errno: dec(it.next())? as i32 });
        }
        "S" => {
            let o = dec(it.next())? as usize;
            let v = (dec(it.next())?, dec(it.next())?, dec(it.next())?);
            p.summary.insert(o, v);
        }
        "M" => {
            let m = dec(it.next())? as usize;
            p.modules.insert(m, it.next()?.to_string());
        }
        "X" => p.unlogged = dec(it.next())?,
        _ => return None,
    }
    if it.next().is_some() {
        return None;
    }
    Some(())
}

/// Parses the shim's log (any input: unknown or torn lines are counted, not fatal).
pub fn parse_shim_log(text: &str) -> ShimLog {
    let mut log = ShimLog::default();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if parse_line(&mut log, line).is_none() {
            log.bad_lines += 1;
        }
    }
    log
}

// ---------------------------------------------------------------- report

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRunReport {
    pub index: usize,
    pub site: Option<String>,
    /// The policy used (plain interleave where the weights fallback applied).
    pub policy: ObjectPolicy,
    pub nodes: Vec<u32>,
    /// Allocations that matched the entry, in all processes of the run.
    pub matches: u64,
    /// Bytes given the policy (whole pages inside the matched blocks).
    pub bytes: u64,
    /// Those bytes per node as the policy places them on first touch (planned, not measured:
    /// `bind` to several nodes is left out, the kernel picks among them at each fault).
    pub bytes_per_node: BTreeMap<u32, u64>,
    /// mbind calls that failed, by errno name.
    pub failures: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadPinned {
    pub pid: u32,
    pub tid: u32,
    pub order: Option<u32>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRunReport {
    /// Index in the plan's `threads`.
    pub index: usize,
    pub order: Option<u32>,
    pub name: Option<String>,
    pub to_nodes: Vec<u32>,
    pub pinned: Vec<ThreadPinned>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleRunReport {
    pub path: String,
    pub build_id: Option<String>,
    /// `loaded`, `missing` (never loaded in any process), or `build-id-differs` (the file at that
    /// path is another build: its offsets mean other code).
    pub state: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub operation: &'static str,
    pub command: Vec<String>,
    pub dry_run: bool,
    /// The launched process (None in a dry run).
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Processes that ran with the plan (the program and its fork children and exec'd images).
    pub processes: usize,
    pub objects: Vec<ObjectRunReport>,
    /// Object entries no allocation matched (indices in the plan's `objects`).
    pub unmatched_objects: Vec<usize>,
    pub threads: Vec<ThreadRunReport>,
    /// Thread entries with an order or a name that no thread matched.
    pub unmatched_threads: Vec<usize>,
    /// Thread entries with only a tid (they name threads of the recorded process).
    pub tid_only_threads: Vec<usize>,
    pub modules: Vec<ModuleRunReport>,
    /// The whole-process `numactl` line (coarser: every allocation and thread).
    pub fallback: Option<String>,
    pub warnings: Vec<String>,
    pub elapsed_ms: f64,
}

fn errno_name(e: i32) -> String {
    crate::apply::sys::errno_name(e)
}

/// Splits `bytes` of one placement over the policy's nodes, page by page.
fn spread(policy: ObjectPolicy, o: &ObjectEntry, bytes: u64, page: u64, into: &mut BTreeMap<u32, u64>) {
    match policy {
        ObjectPolicy::Bind if o.nodes.len() == 1 => *into.entry(o.nodes[0]).or_default() += bytes,
        ObjectPolicy::Bind => {}
        ObjectPolicy::Interleave | ObjectPolicy::WeightedInterleave => {
            let weights: Vec<u64> = match (policy, &o.weights) {
                (ObjectPolicy::WeightedInterleave, Some(w)) => w.iter().map(|w| *w as u64).collect(),
                _ => vec![1; o.nodes.len()],
            };
            let cycle: u64 = weights.iter().sum();
            let pages = bytes / page;
            for (n, w) in o.nodes.iter().zip(&weights) {
                *into.entry(*n).or_default() += pages / cycle * w * page;
            }
            // the pages of the last partial cycle, in node order
            let mut rest = pages % cycle;
            for (n, w) in o.nodes.iter().zip(&weights) {
                let take = rest.min(*w);
                *into.entry(*n).or_default() += take * page;
                rest -= take;
            }
        }
    }
}

/// Builds the report of a finished (or dry) run from the plan and the shim's log.
pub fn run_report(
    plan: &Plan,
    policies: &[ObjectPolicy],
    shim: &ShimPlan,
    log: &ShimLog,
    page_size: u64,
    command: &[String],
) -> RunReport {
    let mut objects: Vec<ObjectRunReport> = plan
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| ObjectRunReport {
            index: i,
            site: o.site.clone(),
            policy: policies.get(i).copied().unwrap_or(o.policy),
            nodes: o.nodes.clone(),
            matches: 0,
            bytes: 0,
            bytes_per_node: BTreeMap::new(),
            failures: BTreeMap::new(),
        })
        .collect();
    let mut threads: Vec<ThreadRunReport> = shim
        .thread_entries
        .iter()
        .map(|&i| {
            let t = &plan.threads[i];
            ThreadRunReport {
                index: i,
                order: t.order,
                name: t.name.clone(),
                to_nodes: t.to_nodes.clone(),
                pinned: Vec::new(),
            }
        })
        .collect();
    let mut module_state: Vec<BTreeSet<String>> = vec![BTreeSet::new(); shim.modules.len()];
    let mut warnings = Vec::new();
    for (pid, p) in &log.processes {
        if let Some(line) = p.refused_at {
            warnings
                .push(format!("process {pid}: the shim refused the plan file (line {line}); nothing was placed in it"));
        }
        // Counts from the exit summary when the process wrote one (it includes placements past
        // the per-process line cap), else from the placement lines.
        let mut counted: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
        for pl in &p.placements {
            let Some(r) = objects.get_mut(pl.object) else { continue };
            let e = counted.entry(pl.object).or_default();
            e.0 += 1;
            if pl.errno == 0 {
                e.1 += pl.len;
                spread(r.policy, &plan.objects[pl.object], pl.len, page_size, &mut r.bytes_per_node);
            } else {
                *r.failures.entry(errno_name(pl.errno)).or_default() += 1;
            }
        }
        for (o, r) in objects.iter_mut().enumerate() {
            let (m, b) = match p.summary.get(&o) {
                Some(&(m, b, _)) => (m, b),
                None => counted.get(&o).copied().unwrap_or((0, 0)),
            };
            r.matches += m;
            r.bytes += b;
            if let Some(&(_, b2)) = counted.get(&o) {
                // bytes of placements past the line cap: spread as well
                if b > b2 {
                    spread(r.policy, &plan.objects[o], b - b2, page_size, &mut r.bytes_per_node);
                }
            } else if b > 0 {
                spread(r.policy, &plan.objects[o], b, page_size, &mut r.bytes_per_node);
            }
        }
        for pin in &p.pins {
            if let Some(t) = threads.get_mut(pin.entry) {
                t.pinned.push(ThreadPinned {
                    pid: *pid,
                    tid: pin.tid,
                    order: pin.order,
                    error: (pin.errno != 0).then(|| errno_name(pin.errno)),
                });
            }
        }
        for (m, s) in &p.modules {
            if let Some(set) = module_state.get_mut(*m) {
                set.insert(s.clone());
            }
        }
    }
    if log.bad_lines > 0 {
        warnings
            .push(format!("{} lines of the shim's log could not be read (a process killed mid-write?)", log.bad_lines));
    }
    let modules = shim
        .modules
        .iter()
        .zip(module_state)
        .map(|((path, id), states)| ModuleRunReport {
            path: path.clone(),
            build_id: id.clone(),
            state: if states.contains("loaded") {
                "loaded"
            } else if states.contains("build-id-differs") {
                "build-id-differs"
            } else {
                "missing"
            }
            .to_string(),
        })
        .collect();
    let unmatched_objects = objects.iter().filter(|o| o.matches == 0).map(|o| o.index).collect();
    let unmatched_threads = threads.iter().filter(|t| t.pinned.is_empty()).map(|t| t.index).collect();
    RunReport {
        operation: "run",
        command: command.to_vec(),
        dry_run: false,
        pid: None,
        exit_code: None,
        signal: None,
        processes: log.processes.len(),
        objects,
        unmatched_objects,
        threads,
        unmatched_threads,
        tid_only_threads: shim.tid_only_threads.clone(),
        modules,
        fallback: numactl_line(plan, command),
        warnings,
        elapsed_ms: 0.0,
    }
}

fn node_list(nodes: &BTreeSet<u32>) -> String {
    nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",")
}

/// A word for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The whole-process equivalent: `numactl` with the nodes of every object entry (membind when
/// all bind, weighted interleave when all are weighted, interleave otherwise) and the nodes of
/// every thread entry (cpunodebind). Coarser than the plan: every allocation and every thread of
/// the program gets it. None when the plan has neither.
pub fn numactl_line(plan: &Plan, command: &[String]) -> Option<String> {
    let mem: BTreeSet<u32> = plan.objects.iter().flat_map(|o| o.nodes.iter().copied()).collect();
    let cpu: BTreeSet<u32> = plan.threads.iter().flat_map(|t| t.to_nodes.iter().copied()).collect();
    if mem.is_empty() && cpu.is_empty() {
        return None;
    }
    let mut line = String::from("numactl");
    if !mem.is_empty() {
        let all = |p: ObjectPolicy| plan.objects.iter().all(|o| o.policy == p);
        let opt = if all(ObjectPolicy::Bind) {
            "--membind"
        } else if all(ObjectPolicy::WeightedInterleave) {
            "--weighted-interleave"
        } else {
            "--interleave"
        };
        let _ = write!(line, " {opt}={}", node_list(&mem));
    }
    if !cpu.is_empty() {
        let _ = write!(line, " --cpunodebind={}", node_list(&cpu));
    }
    line.push_str(" --");
    for w in command {
        line.push(' ');
        line.push_str(&shell_quote(w));
    }
    Some(line)
}

/// The report as text (what `numascope run` prints on stderr).
pub fn describe_report(r: &RunReport, plan: &Plan) -> String {
    let mut s = String::new();
    let what = if r.dry_run { "would place" } else { "placed" };
    for o in &r.objects {
        let site = o.site.as_deref().unwrap_or("(no site name)");
        let _ = write!(s, "  object {} {site}: {} {:?}", o.index, o.policy.name(), o.nodes);
        if r.dry_run {
            let e = &plan.objects[o.index];
            let _ = writeln!(s, ", {}-{} bytes, {} frames", e.size.min, e.size.max, e.frames.len());
            continue;
        }
        if o.matches == 0 {
            let _ = writeln!(s, ": never matched");
            continue;
        }
        let per: Vec<String> = o.bytes_per_node.iter().map(|(n, b)| format!("node {n}: {b}")).collect();
        let _ = write!(s, ": {} allocations, {what} {} bytes", o.matches, o.bytes);
        if !per.is_empty() {
            let _ = write!(s, " ({})", per.join(", "));
        }
        if !o.failures.is_empty() {
            let _ = write!(s, ", mbind failed: {:?}", o.failures);
        }
        s.push('\n');
    }
    for t in &r.threads {
        let who = match (t.order, &t.name) {
            (Some(o), Some(n)) => format!("order {o} named {n:?}"),
            (Some(o), None) => format!("order {o}"),
            (None, Some(n)) => format!("named {n:?}"),
            (None, None) => "?".into(),
        };
        if r.dry_run {
            let _ = writeln!(s, "  thread {who} -> nodes {:?}", t.to_nodes);
        } else if t.pinned.is_empty() {
            let _ = writeln!(s, "  thread {who} -> nodes {:?}: no such thread", t.to_nodes);
        } else {
            let tids: Vec<String> = t
                .pinned
                .iter()
                .map(|p| match &p.error {
                    Some(e) => format!("{} ({e})", p.tid),
                    None => p.tid.to_string(),
                })
                .collect();
            let _ = writeln!(s, "  thread {who} -> nodes {:?}: pinned tid {}", t.to_nodes, tids.join(", "));
        }
    }
    if !r.tid_only_threads.is_empty() {
        let _ = writeln!(
            s,
            "  {} thread entries have only a tid (a thread of the recorded process) and are not used",
            r.tid_only_threads.len()
        );
    }
    for m in r.modules.iter().filter(|m| m.state != "loaded" && !r.dry_run) {
        let _ = writeln!(s, "  module {}: {}", m.path, m.state);
    }
    if !r.dry_run {
        let _ = writeln!(
            s,
            "  summary: {}/{} object entries matched, {}/{} thread entries pinned",
            r.objects.len() - r.unmatched_objects.len(),
            r.objects.len(),
            r.threads.len() - r.unmatched_threads.len(),
            r.threads.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::plan::plan_from_value;
    use crate::topology::NodeTopology;
    use serde_json::json;

    fn plan() -> Plan {
        let v = json!({
            "format": "numascope-plan", "version": 1,
            "target": { "pid": 42, "command": ["./points", "-n", "4"], "machine": { "nodeIds": [0, 1] } },
            "objects": [
                { "site": "points.c:84 alloc_points",
                  "frames": [ { "module": "/opt/a b", "buildId": "ab12", "offset": "0x1a2b" }, { "module": "/opt/a b", "buildId": "ab12", "offset": "0x20" } ],
                  "size": { "min": 8192, "max": 16777216 }, "policy": "bind", "nodes": [1] },
                { "frames": [ { "module": "/usr/lib/libc.so.6", "offset": "0x10" } ],
                  "size": { "min": 4096, "max": 4096 }, "policy": "weighted-interleave", "nodes": [0, 1], "weights": [3, 1] }
            ],
            "threads": [
                { "tid": 43, "order": 1, "toNodes": [1] },
                { "tid": 44, "toNodes": [0] },
                { "tid": 45, "name": "io", "toNodes": [0, 1] }
            ]
        });
        plan_from_value(&v, 4096).unwrap()
    }

    fn topo() -> Topology {
        let mut t = crate::topology::read_topology().unwrap();
        t.nodes = vec![
            NodeTopology { id: 0, cpus: vec![0, 1], memory_bytes: None },
            NodeTopology { id: 1, cpus: vec![2, 3, 64], memory_bytes: None },
        ];
        t.distances = vec![vec![10, 20], vec![20, 10]];
        t
    }

    #[test]
    fn shim_plan_lines() {
        let p = plan();
        let s = shim_plan(&p, &[ObjectPolicy::Bind, ObjectPolicy::WeightedInterleave], &topo()).unwrap();
        let lines: Vec<&str> = s.text.lines().collect();
        assert_eq!(lines[0], "NSPLACE 1");
        // "/opt/a b" hex-encoded, the space included
        assert_eq!(lines[1], "M 0 ab12 2f6f70742f612062");
        assert_eq!(lines[2], "M 1 - 2f7573722f6c69622f6c6962632e736f2e36");
        assert_eq!(lines[3], "O 0 2 2000 1000000 1 2 2 0 1a2b 0 20");
        assert_eq!(lines[4], "O 1 6 1000 1000 1 3 1 1 10");
        // order 1 to node 1's cpus 2, 3 and 64 (two mask words); the tid-only entry is left out
        assert_eq!(lines[5], "T 0 1 - 2 c 1");
        assert_eq!(lines[6], "T 1 - 696f 2 f 1");
        assert_eq!(lines[7], "E");
        assert_eq!(s.thread_entries, vec![0, 2]);
        assert_eq!(s.tid_only_threads, vec![1]);
        // the fallback turns weighted interleave into mode 3
        let s = shim_plan(&p, &[ObjectPolicy::Bind, ObjectPolicy::Interleave], &topo()).unwrap();
        assert!(s.text.contains("\nO 1 3 1000 1000 1 3 1 1 10\n"), "{}", s.text);
    }

    #[test]
    fn checks_program_machine_and_weights() {
        let p = plan();
        assert!(check_program(&p, &["/home/u/points".into(), "-n".into(), "4".into()]).unwrap().is_none());
        assert!(check_program(&p, &["points".into()]).unwrap().unwrap().contains("arguments differ"));
        assert!(check_program(&p, &["./other".into()]).unwrap_err().contains("--any-program"));
        assert!(check_machine(&p, &topo()).is_ok());
        let mut t = topo();
        t.nodes.pop();
        assert!(check_machine(&p, &t).unwrap_err().contains("[0, 1]"));

        let dir = std::env::temp_dir().join(format!("numascope-wi-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let e = check_weights(&p, &dir, WeightsFallback::Refuse).unwrap_err();
        assert!(e.starts_with("objects[1]: this kernel has no weighted interleave") && e.contains("Linux 6.9"), "{e}");
        let (pol, warn) = check_weights(&p, &dir, WeightsFallback::Interleave).unwrap();
        assert_eq!(pol, vec![ObjectPolicy::Bind, ObjectPolicy::Interleave]);
        assert_eq!(warn.len(), 1);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("node0"), "3\n").unwrap();
        std::fs::write(dir.join("node1"), "2\n").unwrap();
        let e = check_weights(&p, &dir, WeightsFallback::Refuse).unwrap_err();
        assert!(e.contains("node 1: 2 (plan: 1)") && !e.contains("node 0"), "{e}");
        std::fs::write(dir.join("node1"), "1\n").unwrap();
        let (pol, warn) = check_weights(&p, &dir, WeightsFallback::Refuse).unwrap();
        assert_eq!((pol[1], warn.len()), (ObjectPolicy::WeightedInterleave, 0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn log_to_report() {
        let p = plan();
        let pol = vec![ObjectPolicy::Bind, ObjectPolicy::WeightedInterleave];
        let s = shim_plan(&p, &pol, &topo()).unwrap();
        let log = parse_shim_log(
            "I 100 99\nP 100 100 0 7f0000001000 3000 0\nP 100 101 0 7f0000010000 2000 12\nT 100 101 0 1 0\n\
             garbage\nP 100 100 1 7f0000020000 5000 0\n\
             S 100 0 3 20480 1\nS 100 1 1 20480 0\nM 100 0 loaded\nM 100 1 missing\nX 100 1\n\
             I 200 100\nP 200 200 0 7f00000\n",
        );
        assert_eq!(log.bad_lines, 2, "{log:?}");
        let r = run_report(&p, &pol, &s, &log, 4096, &["./points".into()]);
        // object 0: the summary (3 matches, one past the line cap) wins over the lines
        assert_eq!((r.objects[0].matches, r.objects[0].bytes), (3, 20480));
        assert_eq!(r.objects[0].bytes_per_node, BTreeMap::from([(1, 20480)]));
        assert_eq!(r.objects[0].failures, BTreeMap::from([("ENOMEM".to_string(), 1)]));
        // object 1: 5 pages weighted 3:1 -> 4 on node 0, 1 on node 1
        assert_eq!(r.objects[1].bytes_per_node, BTreeMap::from([(0, 4 * 4096), (1, 4096)]));
        assert!(r.unmatched_objects.is_empty());
        assert_eq!(r.threads[0].pinned, vec![ThreadPinned { pid: 100, tid: 101, order: Some(1), error: None }]);
        assert_eq!(r.unmatched_threads, vec![2]);
        assert_eq!(r.tid_only_threads, vec![1]);
        assert_eq!(r.modules[0].state, "loaded");
        assert_eq!(r.modules[1].state, "missing");
        assert_eq!(r.processes, 2);
        assert_eq!(r.warnings.len(), 1);
        let text = describe_report(&r, &p);
        assert!(
            text.contains(
                "object 0 points.c:84 alloc_points: bind [1]: 3 allocations, placed 20480 bytes (node 1: 20480)"
            ),
            "{text}"
        );
        assert!(text.contains("thread named \"io\" -> nodes [0, 1]: no such thread"), "{text}");
        // an entry nobody matched is reported unmatched
        let r = run_report(&p, &pol, &s, &parse_shim_log("I 5 1\n"), 4096, &[]);
        assert_eq!(r.unmatched_objects, vec![0, 1]);
        assert!(describe_report(&r, &p).contains("never matched"));
    }

    #[test]
    fn run_system_weights_merges_entries_and_refuses_clashes() {
        let mut p = plan();
        let w = run_system_weights(&p).unwrap().unwrap();
        assert_eq!(w.weights, BTreeMap::from([(0, 3), (1, 1)]));
        p.system_weights =
            Some(crate::apply::weights::SystemWeights { weights: BTreeMap::from([(1, 2)]), reason: None });
        let e = run_system_weights(&p).unwrap_err();
        assert!(
            e.starts_with("objects[1].weights[1] gives node 1 weight 1 but systemWeights.weights.1 gives it 2"),
            "{e}"
        );
        p.system_weights = None;
        p.objects.retain(|o| o.policy != ObjectPolicy::WeightedInterleave);
        assert_eq!(run_system_weights(&p).unwrap(), None);
    }

    #[test]
    fn numactl_fallback() {
        let p = plan();
        assert_eq!(
            numactl_line(&p, &["./points".into(), "a b".into(), "it's".into()]).unwrap(),
            "numactl --interleave=0,1 --cpunodebind=0,1 -- ./points 'a b' 'it'\\''s'"
        );
        let mut q = p.clone();
        q.objects.truncate(1);
        q.threads.clear();
        assert_eq!(numactl_line(&q, &["x".into()]).unwrap(), "numactl --membind=1 -- x");
        q.objects.clear();
        assert_eq!(numactl_line(&q, &["x".into()]), None);
    }
}
