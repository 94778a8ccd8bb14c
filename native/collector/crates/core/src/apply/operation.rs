//! The two operations: [`apply`] a plan to its target process, and [`rollback`] what a
//! rollback record lists (docs/apply.md).

use std::path::Path;
use std::time::Instant;

use super::engine::{execute, Thread};
use super::options::{ApplyError, ApplyOptions};
use super::pages::{self, Group};
use super::plan::{self, Action, Plan, PlanError};
use super::query::ms;
use super::record::RollbackRecord;
use super::report::{ApplyOutcome, Status};
use super::target::{check_process, check_target, target_mappings, task_owner, TaskOwner};
use super::weights;
use crate::topology::Topology;

fn plan_groups(plan: &Plan, page: u64, proc_root: &Path, warnings: &mut Vec<String>) -> Result<Vec<Group>, ApplyError> {
    if plan.page_ranges.is_empty() {
        return Ok(Vec::new());
    }
    let pid = plan.target.pid;
    let maps = target_mappings(pid, proc_root)?;
    let mut groups = Vec::with_capacity(plan.page_ranges.len());
    for (i, r) in plan.page_ranges.iter().enumerate() {
        let node = match r.action {
            Action::Move => Some(r.to_nodes[0]),
            Action::Interleave | Action::WeightedInterleave => None,
        };
        let mut g = Group::new(r.start, r.end, r.action.name(), r.to_nodes.clone());
        g.slots = r.weights.as_deref().map(weights::Slots::new);
        g.weights = r.weights.clone();
        g.expected_nodes = r.expected_nodes.clone();
        for (s, e) in pages::clip(r.start, r.end, &maps) {
            g.push(s, (e - s) / page, node);
        }
        let all = (r.end - r.start) / page;
        g.unmapped = all - g.pages;
        if g.pages == 0 {
            return Err(ApplyError::RangeNotMapped {
                path: format!("pageRanges[{i}]"),
                start: r.start,
                end: r.end,
                pid,
            });
        }
        if g.unmapped > 0 {
            warnings.push(format!(
                "pageRanges[{i}] 0x{:x}-0x{:x}: {} of its {all} pages ({}) lie outside the mappings of process {pid} \
                 (/proc/{pid}/maps) and were skipped; the range was clipped to its {} mapped pages",
                r.start,
                r.end,
                g.unmapped,
                plan::pages_human(g.unmapped, page),
                g.pages
            ));
        }
        groups.push(g);
    }
    Ok(groups)
}

/// Applies `plan` (already parsed and validated) to its target process.
pub fn apply(plan: &Plan, topo: &Topology, opts: &ApplyOptions) -> Result<ApplyOutcome, ApplyError> {
    let t_prepare = Instant::now();
    let start_time = check_target(plan, topo, &opts.proc_root)?;
    let page = topo.page_size_bytes;
    let pid = plan.target.pid;
    let mut warnings = Vec::new();
    let mut threads = Vec::new();
    for t in &plan.threads {
        let mut cpus: Vec<u32> =
            topo.nodes.iter().filter(|n| t.to_nodes.contains(&n.id)).flat_map(|n| n.cpus.iter().copied()).collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return Err(ApplyError::WrongMachine(format!(
                "threads: nodes {:?} (for thread {}) have no cpus on this machine",
                t.to_nodes, t.tid
            )));
        }
        let start_ticks = match task_owner(pid, t.tid, &opts.proc_root) {
            TaskOwner::Ours { start_ticks } => start_ticks,
            TaskOwner::Gone => return Err(ApplyError::ThreadNotInProcess { tid: t.tid, pid }),
            TaskOwner::Foreign(owner) => return Err(ApplyError::ForeignThread { tid: t.tid, pid, owner }),
        };
        threads.push(Thread {
            tid: t.tid,
            to_nodes: t.to_nodes.clone(),
            cpus,
            start_ticks: Some(start_ticks),
            skip: None,
        });
    }
    let groups = plan_groups(plan, page, &opts.proc_root, &mut warnings)?;
    // System weights first: a refusal or a failed write leaves everything as it was.
    let system = set_system_weights(plan, opts, &mut warnings)?;
    let prepare_ms = ms(t_prepare);
    let mut out = match execute(pid, start_time, page, groups, threads, opts, "apply", warnings) {
        Ok(o) => o,
        Err(e) => {
            if let Some(r) = system.as_ref().filter(|_| !opts.dry_run) {
                let _ = weights::restore(&opts.weights_dir, &r.before);
            }
            return Err(e);
        }
    };
    out.timings.prepare_ms = prepare_ms;
    out.report.expected = plan.expected.clone();
    if let Some(r) = system {
        if !opts.dry_run {
            out.rollback.system_weights = Some(r.before.clone());
            if !r.matched && out.report.status == Status::Complete {
                out.report.status = Status::Partial;
                out.report.message.get_or_insert(format!(
                    "the system weights read back as {} instead of the plan's",
                    r.after.as_ref().map(|a| a.describe()).unwrap_or_default()
                ));
            }
        }
        out.report.system_weights = Some(r);
    }
    Ok(out)
}

/// The plan's `systemWeights`: written (or, in a dry run, only compared) with
/// `--set-system-weights`, else reported as not applied. A kernel without weighted interleave
/// is refused with the version it needs.
fn set_system_weights(
    plan: &Plan,
    opts: &ApplyOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<weights::SystemWeightsReport>, ApplyError> {
    let Some(sw) = &plan.system_weights else { return Ok(None) };
    let want = weights::WeightsState { weights: sw.weights.clone(), auto: None }.describe();
    if !opts.set_system_weights {
        warnings.push(format!(
            "the plan's systemWeights ({want}) were not applied: they are system-wide (every process's weighted \
             interleave uses them); pass --set-system-weights to write them (rollback restores the previous ones)"
        ));
        return Ok(None);
    }
    if let Some(m) = weights::missing_feature(&opts.weights_dir) {
        return Err(ApplyError::Unsupported(m));
    }
    weights::apply_system(&opts.weights_dir, sw, opts.dry_run).map(Some).map_err(|e| {
        if e.contains("Permission denied") || e.contains("Read-only file system") {
            ApplyError::Permission(format!("{e} (writing the system weights needs root)"))
        } else {
            ApplyError::Io(format!("{e}; the system weights were left as they were"))
        }
    })
}

/// Restores what a rollback record lists: pages back to their previous nodes and threads'
/// previous affinities. Threads that have exited are reported, not an error; a thread id that
/// now belongs to another process is refused before anything changes. Recorded pages that are
/// no longer mapped are skipped (a warning says how many).
pub fn rollback(record: &RollbackRecord, topo: &Topology, opts: &ApplyOptions) -> Result<ApplyOutcome, ApplyError> {
    let t_prepare = Instant::now();
    record.validate()?;
    let proc_root = &opts.proc_root;
    let pid = record.pid;
    let st: u64 = record.start_time_ticks.parse().map_err(|_| {
        ApplyError::Plan(PlanError::invalid("rollback record", "startTimeTicks", "not a decimal number"))
    })?;
    // System weights are global, not the process's: restored even when the process has exited.
    let mut warnings = Vec::new();
    let system = match &record.system_weights {
        Some(snap) => {
            let (r, skipped) = weights::restore_system(&opts.weights_dir, snap).map_err(|e| {
                if weights::missing_feature(&opts.weights_dir).is_some() {
                    ApplyError::Unsupported(e)
                } else {
                    ApplyError::Io(format!("restoring the system weights: {e}"))
                }
            })?;
            if !skipped.is_empty() {
                warnings.push(format!("system weights not restored (gone from the kernel): {}", skipped.join(", ")));
            }
            Some(r)
        }
        None => None,
    };
    let start_time = match check_process(pid, Some(st), proc_root) {
        Ok(t) => t,
        Err(e) if system.is_some() && record.pages.is_empty() && record.threads.is_empty() => {
            // Nothing of the process to restore: report the system weights alone.
            let _ = e;
            st
        }
        Err(e) => {
            return Err(match system {
                Some(r) => ApplyError::Io(format!(
                    "{e}; but the system weights were restored first: {}",
                    r.after.map(|a| a.describe()).unwrap_or_default()
                )),
                None => e,
            })
        }
    };
    let page = topo.page_size_bytes;
    if record.page_size != 0 && record.page_size != page {
        return Err(ApplyError::WrongMachine(format!(
            "pageSize: the record's pages are {} bytes, this machine's base pages {page} bytes",
            record.page_size
        )));
    }
    let runs = record.checked_runs()?;
    let live: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    for (i, r) in record.pages.iter().enumerate() {
        if !live.contains(&r.node) {
            return Err(ApplyError::WrongMachine(format!(
                "pages[{i}].node: node {} does not exist on this machine",
                r.node
            )));
        }
    }
    // Threads first: a foreign thread refuses the whole rollback before anything changes.
    let mut threads = Vec::with_capacity(record.threads.len());
    for t in &record.threads {
        let want: Option<u64> = t.start_time_ticks.as_deref().and_then(|s| s.parse().ok());
        let (start_ticks, skip) = match task_owner(pid, t.tid, proc_root) {
            TaskOwner::Foreign(owner) => return Err(ApplyError::ForeignThread { tid: t.tid, pid, owner }),
            TaskOwner::Gone => (None, Some("the thread has exited".to_string())),
            TaskOwner::Ours { start_ticks } => match want {
                Some(w) if w != start_ticks => (
                    None,
                    Some(format!(
                        "thread {} is not the thread the record was made for: it started at {start_ticks} ticks, the \
                         record says {w} (the thread id was reused); its affinity was left alone",
                        t.tid
                    )),
                ),
                _ => (Some(start_ticks), None),
            },
        };
        threads.push(Thread { tid: t.tid, to_nodes: Vec::new(), cpus: t.cpus.clone(), start_ticks, skip });
    }
    let mut groups = Vec::new();
    if let (Some(first), Some(last)) = (runs.first(), runs.last()) {
        let maps = target_mappings(pid, proc_root)?;
        let mut nodes: Vec<u32> = runs.iter().map(|r| r.2).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut g = Group::new(first.0, last.0 + last.1 * page, "restore", nodes);
        let mut all = 0;
        for &(s, c, n) in &runs {
            all += c;
            for (a, b) in pages::clip(s, s + c * page, &maps) {
                g.push(a, (b - a) / page, Some(n));
            }
        }
        g.unmapped = all - g.pages;
        if g.unmapped > 0 {
            warnings.push(format!(
                "{} of the {all} recorded pages are no longer mapped in process {pid} (/proc/{pid}/maps; unmapped \
                 since the apply?) and were skipped",
                g.unmapped
            ));
        }
        groups.push(g);
    }
    let prepare_ms = ms(t_prepare);
    let mut out = execute(pid, start_time, page, groups, threads, opts, "rollback", warnings)?;
    out.timings.prepare_ms = prepare_ms;
    if let Some(r) = system {
        if record.pages.is_empty() && record.threads.is_empty() {
            // only the system weights: the process's state does not matter
            out.report.status = Status::Complete;
            out.report.message = None;
        }
        if !r.matched && out.report.status == Status::Complete {
            out.report.status = Status::Partial;
            out.report.message.get_or_insert("the system weights did not read back as recorded".into());
        }
        out.report.system_weights = Some(r);
    }
    Ok(out)
}
