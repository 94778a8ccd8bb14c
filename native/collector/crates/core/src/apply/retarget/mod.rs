//! Re-targeting a plan to another run of the same program (`numascope apply --retarget PID PLAN`,
//! docs/apply.md, "Re-targeting a plan to another run").
//!
//! A plan names page ranges and tids of one process. Another run of the same program has other
//! addresses (ASLR, other inputs) and other tids. This module maps a plan onto a new process
//! where the mapping is exact, and lists everything else as skipped with its reason:
//!
//! - the program must be the same: the executable's GNU build id (or, without one, its real
//!   path) as recorded in the plan (`target.executable`), or as the original process still shows
//!   it; a plan that records neither is checked by the command's file name, said in a warning;
//! - a page range inside a **file-backed** mapping maps to the new process's mapping of the same
//!   file at the same file offset (and the same permissions); inside a **named** anonymous mapping
//!   (`[heap]`, `[anon:NAME]`) to the same offset from the mapping's start, inside `[stack]` to
//!   the same offset from its end; a range over an unnamed anonymous mapping, a special mapping
//!   (`[vdso]`…), a deleted file or no mapping at all is skipped: nothing names that memory in
//!   another run (object entries do: below);
//! - an **object entry** (allocation site) maps onto the new process's live allocations from that
//!   site, as a recording of it (trace) or the allocation shim's records (`*.nsalloc`) list them,
//!   with the same matching rule `numascope run` uses (docs/plan-format.md, "Object entries");
//!   each matching allocation's whole pages become one page range with the entry's policy;
//! - a thread entry maps onto the new thread with the same name when exactly one has it.
//!
//! Where the original range's mapping comes from: the range's own `mapping` (written by an
//! earlier re-targeting), else the original process's `/proc/PID/maps` if it still runs (same
//! start time). Nothing is guessed from addresses.
//!
//! `inputs.rs`: the processes and allocations read; `report.rs`: what re-targeting reports.

use serde_json::{json, Value};

mod inputs;
mod report;

pub use inputs::{
    allocations_from_sites, allocations_from_trace, Allocations, FrameKey, LiveAllocation, ProcessView, RetargetInput,
    MATCH_DEPTH, MAX_ALLOCATIONS,
};
pub use report::{describe, MappedRange, MappedThread, RetargetReport, Skipped};

use crate::apply::plan::{parse_plan, Action, ObjectFrame, ObjectPolicy, Plan, MAX_PAGE_RANGES};
use crate::procfs::MapsEntry;

/// Skipped items written into the re-targeted plan's `source.retarget.skipped` (all are in the
/// report; the plan keeps its size bounded).
pub const MAX_SKIPPED_IN_PLAN: usize = 1000;

fn hex(a: u64) -> String {
    format!("0x{a:x}")
}

/// The real path of an executable as the loader shows it in maps (`/usr/bin/x (deleted)` is not
/// the same file any more).
fn exe_identity(path: Option<&str>, build_id: Option<&str>) -> Option<(Option<String>, Option<String>)> {
    if path.is_none() && build_id.is_none() {
        return None;
    }
    Some((path.map(str::to_string), build_id.map(str::to_string)))
}

/// Checks the new process runs the program the plan was made for; returns how.
fn check_program(
    plan_json: &Value,
    plan: &Plan,
    input: &RetargetInput,
    warnings: &mut Vec<String>,
) -> Result<String, String> {
    let new = input.new;
    let recorded = plan_json["target"]["executable"]
        .as_object()
        .and_then(|e| exe_identity(e.get("path").and_then(Value::as_str), e.get("buildId").and_then(Value::as_str)));
    let (what, recorded) = match (recorded, input.original) {
        (Some(r), _) => ("target.executable", Some(r)),
        (None, Some(o)) => {
            ("the original process's /proc/PID/exe", exe_identity(o.exe.as_deref(), o.build_id.as_deref()))
        }
        (None, None) => ("", None),
    };
    let new_exe = new.exe.clone().unwrap_or_else(|| "(unknown)".into());
    if let Some((path, build_id)) = recorded {
        if let (Some(want), Some(got)) = (&build_id, &new.build_id) {
            if want != got {
                return Err(format!(
                    "process {} runs {new_exe} with build id {got}, but the plan was made for build id {want} ({what}{}): \
                     a different build of the program has other code and data addresses, so the plan cannot be \
                     re-targeted to it",
                    new.pid,
                    path.as_ref().map(|p| format!(", {p}")).unwrap_or_default()
                ));
            }
            return Ok(format!("same build id {got} ({what})"));
        }
        if let Some(want) = &path {
            if new.exe.as_deref() != Some(want.as_str()) {
                return Err(format!(
                    "process {} runs {new_exe}, but the plan was made for {want} ({what}): not the same program",
                    new.pid
                ));
            }
            warnings.push(format!("the program was checked by its path {want} only (no build id to compare)"));
            return Ok(format!("same executable path {want} ({what}); no build id to compare"));
        }
    }
    // Only the command is left: its file name against the new executable's.
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let Some(planned) = plan.target.command.as_ref().and_then(|c| c.first()) else {
        return Err(format!(
            "the plan records neither its program (target.executable) nor its command (target.command), and process {} \
             is gone, so nothing shows that process {} runs the same program: refusing to re-target",
            plan.target.pid, new.pid
        ));
    };
    let got = new.exe.as_deref().map(base).unwrap_or_default();
    if base(planned) != got {
        return Err(format!(
            "process {} runs {new_exe}, but the plan was made for {planned:?} (target.command[0]): not the same program",
            new.pid
        ));
    }
    warnings.push(format!(
        "the plan does not record its executable (target.executable) and process {} is gone: the program was \
         checked by its file name {:?} only",
        plan.target.pid, got
    ));
    Ok(format!("same file name {got:?} (target.command[0]; no path or build id recorded)"))
}

/// How a mapping is named, for finding it in another process.
enum Naming<'a> {
    /// A file: matched by path, permissions and file offset.
    File(&'a str),
    /// `[heap]`, `[anon:NAME]`: offset from the start.
    FromStart(&'a str),
    /// `[stack]`: offset from the end.
    FromEnd(&'a str),
    /// Nothing names it in another run: the reason.
    None(String),
}

fn naming(m: &MapsEntry) -> Naming<'_> {
    match m.path.as_deref() {
        None => Naming::None(
            "anonymous mapping: nothing names it in another run (object entries, keyed by allocation site, place such \
             memory)"
                .into(),
        ),
        Some(p) if p.ends_with(" (deleted)") => Naming::None(format!("the mapped file {p} was deleted")),
        Some(p) if p.starts_with('/') => Naming::File(p),
        Some(p @ "[heap]") => Naming::FromStart(p),
        Some(p) if p.starts_with("[anon:") => Naming::FromStart(p),
        Some(p @ "[stack]") => Naming::FromEnd(p),
        Some(p) => Naming::None(format!("special mapping {p}")),
    }
}

/// The new address range of `[start, end)`, a piece of the original mapping `m`, or why none.
fn map_piece(m: &MapsEntry, start: u64, end: u64, new: &[MapsEntry]) -> Result<(u64, u64, String), String> {
    let len = end - start;
    let (cands, how): (Vec<(u64, &MapsEntry)>, String) = match naming(m) {
        Naming::None(why) => return Err(why),
        Naming::File(path) => {
            let off = m.offset + (start - m.start);
            let c = new
                .iter()
                .filter(|n| {
                    n.path.as_deref() == Some(path)
                        && n.perms == m.perms
                        && n.offset <= off
                        && off + len <= n.offset + (n.end - n.start)
                })
                .map(|n| (n.start + (off - n.offset), n))
                .collect();
            (c, format!("file {path} offset {} ({})", hex(off), m.perms))
        }
        Naming::FromStart(name) => {
            let off = start - m.start;
            let c = new
                .iter()
                .filter(|n| n.path.as_deref() == Some(name) && off + len <= n.end - n.start)
                .map(|n| (n.start + off, n))
                .collect();
            (c, format!("{name} +{}", hex(off)))
        }
        Naming::FromEnd(name) => {
            let back = m.end - start;
            let c = new
                .iter()
                .filter(|n| n.path.as_deref() == Some(name) && back <= n.end - n.start)
                .map(|n| (n.end - back, n))
                .collect();
            (c, format!("{name} end-{}", hex(back)))
        }
    };
    match cands.as_slice() {
        [(s, _)] => Ok((*s, *s + len, how)),
        [] => Err(format!("{how}: the new process has no mapping there")),
        many => {
            Err(format!("{how}: the new process has {} such mappings, so which one is meant is unknown", many.len()))
        }
    }
}

/// Entry frames appear consecutively in the allocation's first frames (the rule of `numascope run`).
fn frames_match(entry: &[ObjectFrame], frames: &[FrameKey]) -> bool {
    let same = |e: &ObjectFrame, f: &FrameKey| {
        e.offset == f.offset
            && match &e.build_id {
                Some(b) => f.build_id.as_deref() == Some(b.as_str()),
                None => e.module == f.module,
            }
    };
    !entry.is_empty()
        && frames.len() >= entry.len()
        && frames.windows(entry.len()).any(|w| w.iter().zip(entry).all(|(f, e)| same(e, f)))
}

/// Whether `[start, end)` is covered by the process's mappings without a gap.
fn fully_mapped(maps: &[MapsEntry], start: u64, end: u64) -> bool {
    let mut at = start;
    let mut sorted: Vec<&MapsEntry> = maps.iter().filter(|m| m.end > start && m.start < end).collect();
    sorted.sort_by_key(|m| m.start);
    for m in sorted {
        if m.start > at {
            return false;
        }
        at = at.max(m.end);
        if at >= end {
            return true;
        }
    }
    at >= end
}

fn skip(rep: &mut RetargetReport, entry: String, se: Option<(u64, u64)>, reason: String) {
    rep.skipped.push(Skipped { entry, start: se.map(|x| hex(x.0)), end: se.map(|x| hex(x.1)), reason });
}

/// A new-plan page range as JSON.
fn range_json(start: u64, end: u64, action: Action, to_nodes: &[u32], weights: Option<&[u8]>, reason: String) -> Value {
    let mut r = json!({
        "start": hex(start), "end": hex(end), "action": action.name(), "toNodes": to_nodes,
        "expectedNodes": null, "reason": reason,
    });
    if let Some(w) = weights {
        r["weights"] = json!(w);
    }
    r
}

/// Object entries onto the new process's live allocations: one range per matching allocation.
fn map_objects(
    plan: &Plan,
    input: &RetargetInput,
    rep: &mut RetargetReport,
    out_ranges: &mut Vec<(u64, u64, String, Value)>,
) {
    let (new, page) = (input.new, input.page_size.max(1));
    // -- object entries onto the new process's live allocations
    for (i, o) in plan.objects.iter().enumerate() {
        let entry = format!("objects[{i}]");
        let Some(allocs) = input.allocations else {
            skip(
                rep,
                entry,
                None,
                "no recording of the new process's allocations was given (--allocations): its objects are not known; \
                 the entry still applies at the next launch (numascope run --plan)"
                    .into(),
            );
            continue;
        };
        let action = match (o.policy, o.nodes.len()) {
            (ObjectPolicy::Bind, 1) | (ObjectPolicy::Interleave, 1) => Action::Move,
            (ObjectPolicy::Interleave, _) => Action::Interleave,
            (ObjectPolicy::WeightedInterleave, _) => Action::WeightedInterleave,
            (ObjectPolicy::Bind, n) => {
                skip(
                    rep,
                    entry,
                    None,
                    format!(
                        "bind to {n} nodes lets the kernel pick among them page by page: a live process's pages have no \
                         such placement to move to"
                    ),
                );
                continue;
            }
        };
        let mut found = 0;
        for a in allocs.live.iter().filter(|a| a.size >= o.size.min && a.size <= o.size.max) {
            if !frames_match(&o.frames, &a.frames) {
                continue;
            }
            found += 1;
            let s = a.address.div_ceil(page) * page;
            let e = (a.address.saturating_add(a.size)) / page * page;
            let what =
                format!("allocation {}-{} ({} bytes)", hex(a.address), hex(a.address.saturating_add(a.size)), a.size);
            if e <= s {
                skip(rep, entry.clone(), Some((a.address, a.address + a.size)), format!("{what} holds no whole page"));
                continue;
            }
            if !fully_mapped(&new.maps, s, e) {
                skip(
                    rep,
                    entry.clone(),
                    Some((s, e)),
                    format!("{what} is not mapped in process {} now (freed?)", new.pid),
                );
                continue;
            }
            let reason = format!(
                "{entry} ({}) {what}, from {}{}",
                o.site.as_deref().unwrap_or("allocation site"),
                allocs.source,
                o.reason.as_ref().map(|x| format!(": {x}")).unwrap_or_default()
            );
            let v = range_json(s, e, action, &o.nodes, o.weights.as_deref(), reason);
            rep.ranges.push(MappedRange {
                entry: entry.clone(),
                from_start: None,
                from_end: None,
                start: hex(s),
                end: hex(e),
                how: what,
            });
            out_ranges.push((s, e, entry.clone(), v));
        }
        if found == 0 {
            skip(
                rep,
                entry,
                None,
                format!(
                    "no live allocation of {} bytes from this site in {}",
                    if o.size.min == o.size.max {
                        o.size.min.to_string()
                    } else {
                        format!("{}-{}", o.size.min, o.size.max)
                    },
                    allocs.source
                ),
            );
        }
    }
}

/// Thread entries by name, when exactly one thread of the new process has it.
fn map_threads(plan_json: &Value, plan: &Plan, new: &ProcessView, rep: &mut RetargetReport) -> Vec<Value> {
    // -- threads: by name, when exactly one thread of the new process has it
    let mut threads = Vec::new();
    for (i, t) in plan.threads.iter().enumerate() {
        let entry = format!("threads[{i}]");
        let Some(name) = &t.name else {
            skip(
                rep,
                entry,
                None,
                format!(
                    "tid {} of process {} names no thread of another process, and the entry has no name",
                    t.tid, plan.target.pid
                ),
            );
            continue;
        };
        let m: Vec<i32> = new.threads.iter().filter(|(_, n)| n == name).map(|(t, _)| *t).collect();
        match m.as_slice() {
            [tid] => {
                let mut v = plan_json["threads"][i].clone();
                v["tid"] = json!(tid);
                v["expectedNode"] = Value::Null;
                threads.push(v);
                rep.threads.push(MappedThread { entry, from_tid: t.tid, tid: *tid, name: name.clone() });
            }
            [] => skip(rep, entry, None, format!("no thread of process {} is named {name:?}", new.pid)),
            many => skip(
                rep,
                entry,
                None,
                format!(
                    "{} threads of process {} are named {name:?}: which one is meant is unknown",
                    many.len(),
                    new.pid
                ),
            ),
        }
    }

    threads
}

/// Maps `plan` (its JSON text parsed as `plan_json`) onto `input.new`. Returns the re-targeted
/// plan (validated) and the report. Errors refuse the whole re-targeting (another program,
/// a recording of another process).
pub fn retarget(plan_json: &Value, plan: &Plan, input: &RetargetInput) -> Result<(Value, RetargetReport), String> {
    let new = input.new;
    let page = input.page_size.max(1);
    let mut rep = RetargetReport {
        operation: "retarget",
        from_pid: plan.target.pid,
        from_start_time_ticks: plan.target.start_time_ticks.map(|t| t.to_string()),
        pid: new.pid,
        start_time_ticks: new.start_ticks.map(|t| t.to_string()),
        ..Default::default()
    };
    if new.pid == plan.target.pid && new.start_ticks.is_some() && new.start_ticks == plan.target.start_time_ticks {
        return Err(format!(
            "process {} is the process the plan was made for (same pid and start time): apply the plan as it is",
            new.pid
        ));
    }
    rep.program_check = check_program(plan_json, plan, input, &mut rep.warnings)?;
    if let Some(a) = input.allocations {
        if a.pid != new.pid {
            return Err(format!(
                "{} is a recording of process {}, not of process {}: its allocations say nothing of process {}",
                a.source, a.pid, new.pid, new.pid
            ));
        }
        if let (Some(want), Some(got)) = (a.start_ticks, new.start_ticks) {
            if want != got {
                return Err(format!(
                    "{} recorded an earlier process {} (start time {want}, now {got}): the pid was reused",
                    a.source, a.pid
                ));
            }
        }
        rep.allocations_source = Some(format!("{} ({} live allocations)", a.source, a.live.len()));
    }
    rep.mappings_source = match input.original {
        Some(_) => format!(
            "the plan's own pageRanges[].mapping, else /proc/{}/maps (the original process still runs)",
            plan.target.pid
        ),
        None => format!("the plan's own pageRanges[].mapping only (process {} is gone)", plan.target.pid),
    };

    let mut out_ranges: Vec<(u64, u64, String, Value)> = Vec::new();

    // -- page ranges
    for (i, r) in plan.page_ranges.iter().enumerate() {
        let entry = format!("pageRanges[{i}]");
        let rj = &plan_json["pageRanges"][i];
        // The original mapping(s): the range's own record, else the original process's maps.
        let own: Option<MapsEntry> = rj["mapping"].as_object().and_then(|m| {
            let path = m.get("path")?.as_str()?.to_string();
            let perms = m.get("perms").and_then(Value::as_str).unwrap_or("").to_string();
            let parse = |k: &str| {
                m.get(k).and_then(Value::as_str).and_then(|s| u64::from_str_radix(s.strip_prefix("0x")?, 16).ok())
            };
            // `mapping` describes the mapping around the range: its start and end and file offset
            Some(MapsEntry {
                start: parse("start")?,
                end: parse("end")?,
                perms,
                offset: parse("offset").unwrap_or(0),
                path: Some(path),
                ..Default::default()
            })
        });
        let pieces: Vec<MapsEntry> = match (&own, input.original) {
            (Some(m), _) if m.start <= r.start && r.end <= m.end => vec![m.clone()],
            (Some(_), _) => {
                skip(&mut rep, entry, Some((r.start, r.end)), "pageRanges[].mapping does not contain the range".into());
                continue;
            }
            (None, Some(o)) => o.maps.iter().filter(|m| m.end > r.start && m.start < r.end).cloned().collect(),
            (None, None) => {
                skip(
                    &mut rep,
                    entry,
                    Some((r.start, r.end)),
                    format!(
                        "the plan does not say which mapping the range was in, and process {} is gone: nothing says \
                         where it is in the new process",
                        plan.target.pid
                    ),
                );
                continue;
            }
        };
        // Parts of the range outside every original mapping.
        let mut at = r.start;
        let mut holes = Vec::new();
        for m in &pieces {
            if m.start > at {
                holes.push((at, m.start));
            }
            at = at.max(m.end);
        }
        if at < r.end {
            holes.push((at, r.end));
        }
        for h in holes {
            skip(&mut rep, entry.clone(), Some(h), format!("outside every mapping of process {}", plan.target.pid));
        }
        for m in &pieces {
            let (s, e) = (r.start.max(m.start), r.end.min(m.end));
            match map_piece(m, s, e, &new.maps) {
                Err(why) => skip(&mut rep, entry.clone(), Some((s, e)), why),
                Ok((ns, ne, how)) => {
                    // page i of the original range keeps its node: the cycle starts where the piece does
                    let first = (s - r.start) / page;
                    let (to_nodes, note) = match r.action {
                        Action::Interleave => {
                            let n = r.to_nodes.len() as u64;
                            let k = (first % n) as usize;
                            (r.to_nodes[k..].iter().chain(&r.to_nodes[..k]).copied().collect::<Vec<_>>(), String::new())
                        }
                        Action::WeightedInterleave => {
                            let cycle: u64 = r.weights.as_deref().unwrap_or(&[]).iter().map(|&w| w as u64).sum();
                            let note = if cycle > 0 && !first.is_multiple_of(cycle) {
                                "; the weight cycle restarts at this piece".to_string()
                            } else {
                                String::new()
                            };
                            (r.to_nodes.clone(), note)
                        }
                        Action::Move => (r.to_nodes.clone(), String::new()),
                    };
                    let reason = format!(
                        "{entry} of process {} ({}-{}, {how}){note}{}",
                        plan.target.pid,
                        hex(s),
                        hex(e),
                        r.reason.as_ref().map(|x| format!(": {x}")).unwrap_or_default()
                    );
                    let mut v = range_json(ns, ne, r.action, &to_nodes, r.weights.as_deref(), reason);
                    // the new process's mapping, so that the new plan can be re-targeted again
                    if let Some(nm) = new.maps.iter().find(|n| n.start <= ns && ne <= n.end) {
                        v["mapping"] = json!({
                            "path": nm.path, "perms": nm.perms, "start": hex(nm.start), "end": hex(nm.end),
                            "offset": hex(nm.offset),
                        });
                    }
                    rep.ranges.push(MappedRange {
                        entry: entry.clone(),
                        from_start: Some(hex(s)),
                        from_end: Some(hex(e)),
                        start: hex(ns),
                        end: hex(ne),
                        how,
                    });
                    out_ranges.push((ns, ne, entry.clone(), v));
                }
            }
        }
    }

    map_objects(plan, input, &mut rep, &mut out_ranges);

    // -- overlaps: the earlier range (page ranges first, then objects in plan order) is kept
    out_ranges.sort_by_key(|x| x.0);
    let mut kept: Vec<(u64, u64, String, Value)> = Vec::with_capacity(out_ranges.len());
    for (s, e, entry, v) in out_ranges {
        let why = match kept.last() {
            Some(prev) if s < prev.1 => {
                Some(format!("overlaps the re-targeted range {}-{} of {}", hex(prev.0), hex(prev.1), prev.2))
            }
            _ if kept.len() == MAX_PAGE_RANGES => Some(format!("more than {MAX_PAGE_RANGES} ranges")),
            _ => None,
        };
        if let Some(reason) = why {
            rep.ranges.retain(|m| m.entry != entry || m.start != hex(s) || m.end != hex(e));
            skip(&mut rep, entry, Some((s, e)), reason);
            continue;
        }
        kept.push((s, e, entry, v));
    }

    let threads = map_threads(plan_json, plan, new, &mut rep);

    // -- the new plan: the original with the new target, ranges and threads
    let mut out = plan_json.clone();
    out["target"]["pid"] = json!(new.pid);
    out["target"]["startTimeTicks"] = new.start_ticks.map(|t| json!(t.to_string())).unwrap_or(Value::Null);
    out["target"]["command"] = json!(new.command);
    out["target"]["executable"] = json!({ "path": new.exe, "buildId": new.build_id });
    out["pageRanges"] = Value::Array(kept.into_iter().map(|x| x.3).collect());
    out["threads"] = Value::Array(threads);
    if let Some(o) = out.as_object_mut() {
        // the planner's totals were for the original process's pages
        o.remove("expected");
    }
    if !out["source"].is_object() {
        out["source"] = json!({});
    }
    out["source"]["retarget"] = json!({
        "at": input.now_iso,
        "fromPid": plan.target.pid,
        "fromStartTimeTicks": rep.from_start_time_ticks,
        "programCheck": rep.program_check,
        "allocations": rep.allocations_source,
        "skippedCount": rep.skipped.len(),
        "skipped": rep.skipped.iter().take(MAX_SKIPPED_IN_PLAN).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string(&out).map_err(|e| e.to_string())?;
    parse_plan(&text, page).map_err(|e| format!("the re-targeted plan is invalid (a numascope bug): {e}"))?;
    Ok((out, rep))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::plan::ObjectFrame;

    const PAGE: u64 = 4096;

    fn view(pid: i32, exe: &str, build_id: Option<&str>, maps: &str) -> ProcessView {
        ProcessView {
            pid,
            start_ticks: Some(1000 + pid as u64),
            command: vec![exe.to_string()],
            exe: Some(exe.to_string()),
            build_id: build_id.map(str::to_string),
            maps: crate::procfs::parse_maps(maps),
            threads: vec![
                (pid, "app".into()),
                (pid + 1, "worker-0".into()),
                (pid + 2, "pool".into()),
                (pid + 3, "pool".into()),
            ],
        }
    }

    const OLD_MAPS: &str = "\
555500000000-555500002000 r--p 00000000 08:01 11 /opt/app/bin/app
555500002000-555500005000 r-xp 00002000 08:01 11 /opt/app/bin/app
555500010000-555500020000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7f0000200000-7f0000204000 r--p 00000000 08:01 12 /data/table.bin
7f0000204000-7f0000210000 rw-p 00004000 08:01 12 /data/table.bin
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
";
    const NEW_MAPS: &str = "\
5600aa000000-5600aa002000 r--p 00000000 08:01 11 /opt/app/bin/app
5600aa002000-5600aa005000 r-xp 00002000 08:01 11 /opt/app/bin/app
5600aa100000-5600aa120000 rw-p 00000000 00:00 0 [heap]
7fa000000000-7fa000400000 rw-p 00000000 00:00 0
7fb000200000-7fb000204000 r--p 00000000 08:01 12 /data/table.bin
7fb000204000-7fb000210000 rw-p 00004000 08:01 12 /data/table.bin
7ffe00000000-7ffe00031000 rw-p 00000000 00:00 0 [stack]
";

    fn plan_json(ranges: Value, objects: Value, threads: Value, target_extra: Value) -> Value {
        let mut target = json!({ "pid": 100, "startTimeTicks": "1100", "command": ["/opt/app/bin/app"], "machine": { "nodeIds": [0, 1] } });
        if let (Some(t), Some(x)) = (target.as_object_mut(), target_extra.as_object()) {
            t.extend(x.clone());
        }
        json!({
            "format": "numascope-plan", "version": 1, "source": { "policy": "interleave" },
            "target": target, "pageRanges": ranges, "threads": threads, "objects": objects,
            "expected": { "pagesToMove": 3 },
        })
    }

    fn parse(v: &Value) -> Plan {
        parse_plan(&v.to_string(), PAGE).unwrap()
    }

    fn input<'a>(
        orig: Option<&'a ProcessView>,
        new: &'a ProcessView,
        allocs: Option<&'a Allocations>,
    ) -> RetargetInput<'a> {
        RetargetInput {
            original: orig,
            new,
            allocations: allocs,
            page_size: PAGE,
            now_iso: "2026-11-24T00:00:00Z".into(),
        }
    }

    fn range(s: u64, e: u64, action: &str, nodes: Value) -> Value {
        json!({ "start": format!("0x{s:x}"), "end": format!("0x{e:x}"), "action": action, "toNodes": nodes, "expectedNodes": null })
    }

    #[test]
    fn file_backed_and_named_ranges_map_by_offset_and_the_rest_is_skipped_with_reasons() {
        let old = view(100, "/opt/app/bin/app", Some("abcd"), OLD_MAPS);
        let new = view(200, "/opt/app/bin/app", Some("abcd"), NEW_MAPS);
        let pj = plan_json(
            json!([
                // heap +0x1000..+0x3000
                range(0x555500011000, 0x555500013000, "move", json!([1])),
                // spans table.bin's two mappings (offsets 0x3000..0x6000): split, interleave phase kept
                range(0x7f0000203000, 0x7f0000206000, "interleave", json!([0, 1])),
                // anonymous: nothing names it
                range(0x7f0000010000, 0x7f0000012000, "move", json!([1])),
                // outside every mapping
                range(0x100000, 0x102000, "move", json!([1])),
                // stack: the top two pages
                range(0x7ffd0001f000, 0x7ffd00021000, "move", json!([0])),
            ]),
            json!([]),
            json!([{ "tid": 101, "name": "worker-0", "toNodes": [1] }, { "tid": 102, "name": "pool", "toNodes": [1] },
                   { "tid": 103, "toNodes": [0] }]),
            json!({}),
        );
        let plan = parse(&pj);
        let (out, rep) = retarget(&pj, &plan, &input(Some(&old), &new, None)).unwrap();
        assert_eq!(out["target"]["pid"], 200);
        assert_eq!(out["target"]["startTimeTicks"], "1200");
        assert_eq!(out["target"]["executable"]["buildId"], "abcd");
        assert!(out.get("expected").is_none());
        let r = out["pageRanges"].as_array().unwrap();
        let spans: Vec<(&str, &str, &str)> = r
            .iter()
            .map(|x| (x["start"].as_str().unwrap(), x["end"].as_str().unwrap(), x["action"].as_str().unwrap()))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("0x5600aa101000", "0x5600aa103000", "move"),
                ("0x7fb000203000", "0x7fb000204000", "interleave"),
                ("0x7fb000204000", "0x7fb000206000", "interleave"),
                ("0x7ffe0002f000", "0x7ffe00031000", "move"),
            ]
        );
        // page 0 of the original range went to node 0, page 1 (the second piece's first) to node 1
        assert_eq!(r[1]["toNodes"], json!([0, 1]));
        assert_eq!(r[2]["toNodes"], json!([1, 0]));
        assert_eq!(r[2]["mapping"]["path"], "/data/table.bin");
        assert!(rep.skipped.iter().any(|s| s.entry == "pageRanges[2]" && s.reason.starts_with("anonymous mapping")));
        assert!(rep
            .skipped
            .iter()
            .any(|s| s.entry == "pageRanges[3]" && s.reason.contains("outside every mapping of process 100")));
        // threads: by a unique name only
        assert_eq!(out["threads"], json!([{ "tid": 201, "name": "worker-0", "toNodes": [1], "expectedNode": null }]));
        assert!(rep.skipped.iter().any(|s| s.entry == "threads[1]" && s.reason.contains("2 threads")));
        assert!(rep.skipped.iter().any(|s| s.entry == "threads[2]" && s.reason.contains("no name")));
        assert_eq!(out["source"]["retarget"]["fromPid"], 100);
        assert_eq!(out["source"]["retarget"]["skippedCount"], rep.skipped.len());
        assert!(rep.program_check.contains("build id abcd"));
        // the output is a valid plan for the new pid, and can be re-targeted again from its own mapping records
        let p2 = parse(&out);
        let third = view(300, "/opt/app/bin/app", Some("abcd"), NEW_MAPS.replace("7fb000", "7fc000").as_str());
        let (out3, rep3) = retarget(&out, &p2, &input(None, &third, None)).unwrap();
        assert_eq!(out3["pageRanges"][1]["start"], "0x7fc000203000", "{rep3:?}");
        assert!(describe(&rep).contains("skipped pageRanges[3] 0x100000-0x102000: outside every mapping"));
    }

    #[test]
    fn hostile_plans_are_refused_or_skipped_never_guessed() {
        let new = view(200, "/opt/app/bin/app", Some("abcd"), NEW_MAPS);
        // overlapping ranges: the plan itself is refused before anything is mapped
        let pj = plan_json(
            json!([
                range(0x555500011000, 0x555500013000, "move", json!([1])),
                range(0x555500012000, 0x555500014000, "move", json!([0]))
            ]),
            json!([]),
            json!([]),
            json!({}),
        );
        let e = parse_plan(&pj.to_string(), PAGE).unwrap_err().to_string();
        assert!(e.contains("pageRanges[1]") && e.contains("overlaps pageRanges[0]"), "{e}");
        // another build of the program
        let pj = plan_json(
            json!([]),
            json!([]),
            json!([]),
            json!({ "executable": { "path": "/opt/app/bin/app", "buildId": "ffff" } }),
        );
        let e = retarget(&pj, &parse(&pj), &input(None, &new, None)).unwrap_err();
        assert!(e.contains("build id abcd") && e.contains("build id ffff"), "{e}");
        // another program by path, by name
        let other = view(200, "/usr/bin/other", None, NEW_MAPS);
        let pj = plan_json(
            json!([]),
            json!([]),
            json!([]),
            json!({ "executable": { "path": "/opt/app/bin/app", "buildId": null } }),
        );
        let e = retarget(&pj, &parse(&pj), &input(None, &other, None)).unwrap_err();
        assert!(e.contains("/usr/bin/other") && e.contains("not the same program"), "{e}");
        let pj = plan_json(json!([]), json!([]), json!([]), json!({}));
        let e = retarget(&pj, &parse(&pj), &input(None, &other, None)).unwrap_err();
        assert!(e.contains("target.command[0]"), "{e}");
        // the same file name, nothing else recorded: allowed, with a warning
        let (_, rep) = retarget(&pj, &parse(&pj), &input(None, &new, None)).unwrap();
        assert!(rep.warnings.iter().any(|w| w.contains("file name")), "{rep:?}");
        // the very process the plan is for
        let same = ProcessView { pid: 100, start_ticks: Some(1100), ..new.clone() };
        assert!(retarget(&pj, &parse(&pj), &input(None, &same, None)).unwrap_err().contains("apply the plan as it is"));
        // the original is gone and the plan has no mapping records: every range skipped, none guessed
        let pj = plan_json(
            json!([range(0x555500011000, 0x555500013000, "move", json!([1]))]),
            json!([]),
            json!([]),
            json!({}),
        );
        let (out, rep) = retarget(&pj, &parse(&pj), &input(None, &new, None)).unwrap();
        assert_eq!(out["pageRanges"], json!([]));
        assert!(rep.skipped[0].reason.contains("process 100 is gone"));
        // a range whose mapping exists twice in the new process at that offset: ambiguous, skipped
        let old = view(100, "/opt/app/bin/app", Some("abcd"), OLD_MAPS);
        let twice = view(
            200,
            "/opt/app/bin/app",
            Some("abcd"),
            &format!("{NEW_MAPS}7fd000204000-7fd000210000 rw-p 00004000 08:01 12 /data/table.bin\n"),
        );
        let pj = plan_json(
            json!([range(0x7f0000205000, 0x7f0000206000, "move", json!([1]))]),
            json!([]),
            json!([]),
            json!({}),
        );
        let (out, rep) = retarget(&pj, &parse(&pj), &input(Some(&old), &twice, None)).unwrap();
        assert_eq!(out["pageRanges"], json!([]));
        assert!(rep.skipped[0].reason.contains("2 such mappings"), "{rep:?}");
        // a mapped file range the new process does not map that far
        let short = view(
            200,
            "/opt/app/bin/app",
            Some("abcd"),
            &NEW_MAPS.replace("7fb000204000-7fb000210000", "7fb000204000-7fb000205000"),
        );
        let (_, rep) = retarget(&pj, &parse(&pj), &input(Some(&old), &short, None)).unwrap();
        assert!(rep.skipped[0].reason.contains("no mapping there"), "{rep:?}");
    }

    fn frame(offset: u64) -> FrameKey {
        FrameKey { module: "/opt/app/bin/app".into(), build_id: Some("abcd".into()), offset }
    }

    #[test]
    fn object_entries_map_onto_the_new_process_live_allocations_by_site() {
        let new = view(200, "/opt/app/bin/app", Some("abcd"), NEW_MAPS);
        let libc = FrameKey { module: "/usr/lib/libc.so.6".into(), build_id: None, offset: 0x99 };
        let allocs = Allocations {
            source: "trace new.numascope".into(),
            pid: 200,
            start_ticks: Some(1200),
            live: vec![
                // matches objects[0]: a wrapper frame above the site does not matter
                LiveAllocation {
                    address: 0x7fa000000010,
                    size: 0x100000,
                    frames: vec![libc.clone(), frame(0x2100), frame(0x2200)],
                },
                // the same site, a size outside the range
                LiveAllocation { address: 0x7fa000200000, size: 0x1000, frames: vec![frame(0x2100), frame(0x2200)] },
                // matches objects[1] but is not mapped any more
                LiveAllocation { address: 0x7fa100000000, size: 0x10000, frames: vec![frame(0x2300)] },
                // matches objects[1] and lies inside the objects[0] allocation's range: overlap, skipped
                LiveAllocation { address: 0x7fa000010000, size: 0x4000, frames: vec![frame(0x2300)] },
            ],
        };
        let obj = |off: u64, policy: &str, nodes: Value, min: u64| {
            json!({ "site": "app.c:1", "frames": [{ "module": "/opt/app/bin/app", "buildId": "abcd", "offset": format!("0x{off:x}") }],
                    "size": { "min": min, "max": 1 << 30 }, "policy": policy, "nodes": nodes })
        };
        let pj = plan_json(
            json!([]),
            json!([
                obj(0x2100, "interleave", json!([0, 1]), 0x10000),
                obj(0x2300, "bind", json!([1]), 4096),
                obj(0x2400, "bind", json!([0, 1]), 4096),
                obj(0x2500, "bind", json!([1]), 4096)
            ]),
            json!([]),
            json!({}),
        );
        let plan = parse(&pj);
        let (out, rep) = retarget(&pj, &plan, &input(None, &new, Some(&allocs))).unwrap();
        let r = out["pageRanges"].as_array().unwrap();
        assert_eq!(r.len(), 1, "{rep:#?}");
        // whole pages only: the block starts 0x10 into a page
        assert_eq!(
            (r[0]["start"].as_str().unwrap(), r[0]["end"].as_str().unwrap()),
            ("0x7fa000001000", "0x7fa000100000")
        );
        assert_eq!(r[0]["action"], "interleave");
        let why = |e: &str| {
            rep.skipped.iter().filter(|s| s.entry == e).map(|s| s.reason.clone()).collect::<Vec<_>>().join(" | ")
        };
        assert!(why("objects[1]").contains("not mapped in process 200"), "{}", why("objects[1]"));
        assert!(
            why("objects[1]").contains("overlaps the re-targeted range 0x7fa000001000-0x7fa000100000 of objects[0]"),
            "{}",
            why("objects[1]")
        );
        assert!(why("objects[2]").contains("bind to 2 nodes"));
        assert!(why("objects[3]").contains("no live allocation"));
        // the entries stay in the plan for the next launch
        assert_eq!(out["objects"].as_array().unwrap().len(), 4);
        // a recording of another process is refused; no recording at all skips the objects
        let other = Allocations { pid: 201, ..allocs.clone() };
        assert!(retarget(&pj, &plan, &input(None, &new, Some(&other))).unwrap_err().contains("not of process 200"));
        let reused = Allocations { start_ticks: Some(7), ..allocs.clone() };
        assert!(retarget(&pj, &plan, &input(None, &new, Some(&reused))).unwrap_err().contains("pid was reused"));
        let (_, rep) = retarget(&pj, &plan, &input(None, &new, None)).unwrap();
        assert_eq!(rep.skipped.iter().filter(|s| s.reason.contains("--allocations")).count(), 4);
        // frames must be consecutive and in order
        let e = [
            ObjectFrame { module: "/x".into(), build_id: Some("abcd".into()), offset: 0x2200 },
            ObjectFrame { module: "/x".into(), build_id: Some("abcd".into()), offset: 0x2100 },
        ];
        assert!(!frames_match(&e, &[frame(0x2100), frame(0x2200)]));
        assert!(frames_match(&e[1..], &[libc, frame(0x2100)]));
    }
}
