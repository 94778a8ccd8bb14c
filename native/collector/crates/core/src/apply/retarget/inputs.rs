//! What re-targeting reads besides the plan: the new (and original) process ([`ProcessView`])
//! and the new process's live allocations, from the allocation shim's records or a trace.

use std::collections::BTreeMap;
use std::path::Path;

use crate::procfs::{self, MapsEntry};

/// Allocations read from one recording (a bound on memory and time).
pub const MAX_ALLOCATIONS: usize = 1 << 22;
/// Frames of an allocation's stack that object entries are matched within (as `numascope run`).
pub const MATCH_DEPTH: usize = 16;

/// What re-targeting needs to know of a process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessView {
    pub pid: i32,
    pub start_ticks: Option<u64>,
    pub command: Vec<String>,
    /// The executable's real path (`/proc/PID/exe`).
    pub exe: Option<String>,
    /// Its GNU build id, lower-case hex.
    pub build_id: Option<String>,
    pub maps: Vec<MapsEntry>,
    /// (tid, name) of its threads.
    pub threads: Vec<(i32, String)>,
}

impl ProcessView {
    /// Reads a live process from `proc_root` (normally `/proc`).
    pub fn read(proc_root: &Path, pid: i32) -> Result<ProcessView, String> {
        let dir = proc_root.join(pid.to_string());
        let maps = std::fs::read_to_string(dir.join("maps")).map_err(|e| {
            format!("cannot read /proc/{pid}/maps: {e} (is process {pid} running, and yours or are you root?)")
        })?;
        let exe = std::fs::read_link(dir.join("exe")).ok().map(|p| p.to_string_lossy().into_owned());
        // The build id is read through /proc/PID/exe: it works even when the file was replaced.
        let build_id = blazesym::helper::read_elf_build_id(&dir.join("exe"))
            .ok()
            .flatten()
            .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>());
        let threads = procfs::list_tasks(proc_root, pid)
            .unwrap_or_default()
            .into_iter()
            .map(|t| (t, procfs::read_thread_name(proc_root, pid, t as u32)))
            .collect();
        Ok(ProcessView {
            pid,
            start_ticks: procfs::process_start_ticks(proc_root, pid),
            command: procfs::read_cmdline(proc_root, pid).unwrap_or_default(),
            exe,
            build_id,
            maps: procfs::parse_maps(&maps),
            threads,
        })
    }
}

/// One frame of a recorded allocation's stack (physical frames, innermost first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameKey {
    pub module: String,
    pub build_id: Option<String>,
    pub offset: u64,
}

/// An allocation of the new process that was live when its recording ended.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveAllocation {
    pub address: u64,
    pub size: u64,
    /// Physical frames from the allocation call's caller outward (inlined frames folded).
    pub frames: Vec<FrameKey>,
}

/// The new process's allocations and where they came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocations {
    /// `trace FILE` or `allocation-shim records FILE` (for the report).
    pub source: String,
    /// The pid the recording says it is of.
    pub pid: i32,
    /// The start time the recording names, when it does (traces).
    pub start_ticks: Option<u64>,
    pub live: Vec<LiveAllocation>,
}

/// Live allocations from the allocation shim's records of one process (alloc_sites).
pub fn allocations_from_sites(s: &crate::alloc_sites::AllocSites, source: &str) -> Allocations {
    let mut live = Vec::new();
    for a in s.allocations.iter().filter(|a| a.end_ns.is_none()).take(MAX_ALLOCATIONS) {
        let mut frames = Vec::new();
        let mut node = a.stack;
        let mut guard = 0;
        while let Some(i) = node {
            guard += 1;
            let Some(st) = s.stacks.get(i as usize) else { break };
            if guard > s.stacks.len() || frames.len() == MATCH_DEPTH {
                break;
            }
            node = st.parent;
            let Some(f) = s.frames.get(st.frame as usize) else { break };
            if f.inlined {
                continue;
            }
            let m = f.module.and_then(|m| s.modules.get(m as usize));
            frames.push(FrameKey {
                module: m.map(|m| m.path.to_string_lossy().into_owned()).unwrap_or_default(),
                build_id: m.filter(|m| !m.build_id.is_empty()).map(|m| m.build_id.clone()),
                offset: f.module_address,
            });
        }
        live.push(LiveAllocation { address: a.address, size: a.size, frames });
    }
    Allocations { source: source.to_string(), pid: s.pid as i32, start_ticks: None, live }
}

/// Live allocations (`end_us` = -1) from a trace's allocation-site tables.
pub fn allocations_from_trace(
    t: &crate::trace::alloc::AllocTables,
    pid: i32,
    start_ticks: Option<u64>,
    source: &str,
) -> Allocations {
    let a = &t.allocations;
    let mut live = Vec::new();
    let mut cache: BTreeMap<i32, Vec<FrameKey>> = BTreeMap::new();
    for i in 0..a.address.len() {
        if a.end_us.get(i).copied().unwrap_or(0) != -1 || live.len() == MAX_ALLOCATIONS {
            continue;
        }
        let stack = a.stack.get(i).copied().unwrap_or(-1);
        let frames = cache
            .entry(stack)
            .or_insert_with(|| {
                let Ok(s) = u32::try_from(stack) else { return Vec::new() };
                let mut out = Vec::new();
                for f in t.stack_frames(s) {
                    let f = f as usize;
                    if t.frames.inlined.get(f).copied().unwrap_or(0) == 1 {
                        continue;
                    }
                    if out.len() == MATCH_DEPTH {
                        break;
                    }
                    let m = usize::try_from(t.frames.module.get(f).copied().unwrap_or(-1)).ok();
                    out.push(FrameKey {
                        module: m.and_then(|m| t.modules.path.get(m)).cloned().unwrap_or_default(),
                        build_id: m.and_then(|m| t.modules.build_id.get(m)).filter(|b| !b.is_empty()).cloned(),
                        offset: t.frames.module_offset.get(f).copied().unwrap_or(0),
                    });
                }
                out
            })
            .clone();
        live.push(LiveAllocation { address: a.address[i], size: a.size.get(i).copied().unwrap_or(0), frames });
    }
    Allocations { source: source.to_string(), pid, start_ticks, live }
}

/// Inputs besides the plan.
pub struct RetargetInput<'a> {
    /// The original process, when it still runs with the plan's start time.
    pub original: Option<&'a ProcessView>,
    pub new: &'a ProcessView,
    pub allocations: Option<&'a Allocations>,
    pub page_size: u64,
    /// The time written into `source.retarget.at`.
    pub now_iso: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(offset: u64) -> FrameKey {
        FrameKey { module: "/opt/app/bin/app".into(), build_id: Some("abcd".into()), offset }
    }

    #[test]
    fn trace_allocations_are_the_live_ones_with_physical_frames() {
        use crate::trace::alloc::AllocTables;
        let mut t = AllocTables::default();
        t.modules.path = vec!["/opt/app/bin/app".into()];
        t.modules.build_id = vec!["abcd".into()];
        // frame 0 inlined into frame 1 (same address); frame 2 its caller
        t.frames.module = vec![0, 0, 0];
        t.frames.module_offset = vec![0x2100, 0x2100, 0x2200];
        t.frames.inlined = vec![1, 0, 0];
        t.stacks.stack = vec![0, 0, 0];
        t.stacks.depth = vec![0, 1, 2];
        t.stacks.frame = vec![0, 1, 2];
        t.allocations.address = vec![0x1000, 0x9000];
        t.allocations.size = vec![0x4000, 0x4000];
        t.allocations.end_us = vec![-1, 500];
        t.allocations.stack = vec![0, 0];
        let a = allocations_from_trace(&t, 200, Some(1200), "trace x");
        assert_eq!(a.live.len(), 1, "the freed one is not live");
        assert_eq!(a.live[0].address, 0x1000);
        assert_eq!(a.live[0].frames, vec![frame(0x2100), frame(0x2200)]);
    }
}
