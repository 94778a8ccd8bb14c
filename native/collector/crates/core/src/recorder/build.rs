//! The trace build: the recording's fault samples, pages, /proc observations and events become the
//! trace tables (everything but the manifest, which [`super::manifest`] fills in).

use std::collections::HashMap;

use super::intervals::NewestWins;
use super::pages::PageTracker;
use super::tasks::TaskLog;
use crate::sources::pagefault::{FaultKind, FaultSample};
use crate::sources::procfs::{PendingEvent, ProcfsData, RegionObs};
use crate::time::us_since;
use crate::trace::*;

/// What the capture collected, handed over to the build.
pub(super) struct BuildInput<'a> {
    pub(super) start_ns: u64,
    pub(super) pid: i32,
    pub(super) raw: Vec<FaultSample>,
    pub(super) pages: PageTracker,
    pub(super) procfs: ProcfsData,
    pub(super) tids_in_samples: HashMap<u32, String>,
    pub(super) tasks: &'a TaskLog,
    pub(super) cpu_to_node: &'a [i8],
    pub(super) lost_events: Vec<(i64, u64)>,
    /// (time_us, code, description)
    pub(super) exit: Option<(i64, i32, String)>,
    pub(super) notes: &'a mut Vec<String>,
}

/// Region lookup: newest snapshot wins where mappings overlap.
struct RegionMap(NewestWins);

impl RegionMap {
    fn new(regions: &[RegionObs]) -> Self {
        let mut order: Vec<usize> = (0..regions.len()).collect();
        order.sort_by_key(|&i| (regions[i].last_seen_us, i));
        RegionMap(NewestWins::new(order.into_iter().map(|i| (regions[i].start, regions[i].end, i))))
    }

    fn find(&self, addr: u64) -> Option<usize> {
        self.0.find(addr)
    }
}

/// Builds every table of the trace; the manifest is left empty for the caller.
pub(super) fn build_trace(mut inp: BuildInput<'_>) -> TraceData {
    // Samples in time order, exact duplicates (two events seeing one fault) removed.
    inp.raw.sort_by_key(|s| (s.time_ns, s.tid, s.addr));
    inp.raw.dedup_by_key(|s| (s.time_ns, s.tid, s.addr));

    let (threads, tindex) = threads_table(&inp);
    let (pages, page_index) = pages_table(&mut inp, &tindex);
    let samples = samples_table(&inp, &tindex, &page_index);
    let thread_placements = thread_placements_table(&inp, &tindex);
    let events = events_table(&inp, &tindex, &threads);
    let p = &inp.procfs;
    if p.sched_unavailable {
        inp.notes.push(
            "/proc/PID/task/TID/sched unreadable (kernel without CONFIG_SCHED_DEBUG?): threads.migrations is -1".into(),
        );
    }
    for pr in &p.problems {
        inp.notes.push(pr.clone());
    }
    let mut regions = Regions::default();
    for r in &p.regions {
        regions.start.push(r.start);
        regions.end.push(r.end);
        regions.kind.push(r.kind);
        regions.path.push(r.path.clone());
        regions.policy.push(r.policy.clone());
        regions.alloc_site.push(None);
        regions.prot.push(r.prot.clone());
    }
    TraceData {
        manifest: empty_manifest(),
        samples,
        pages,
        threads,
        regions,
        thread_placements,
        region_placements: p.region_placements.clone(),
        counters: p.counters.clone(),
        events,
        alloc: Default::default(),
    }
}

/// Threads: the union of the poller's, the samples' and the task records', in order of first
/// appearance; and the row of each tid. A thread the task records saw created starts at its
/// creation, one they saw end ends at its exit, and its name is the kernel's last for it (a
/// thread never named carries its creator's).
fn threads_table(inp: &BuildInput<'_>) -> (Threads, HashMap<i32, usize>) {
    struct T {
        tid: i32,
        name: String,
        first: i64,
        last: i64,
        migrations: i64,
    }
    let mut threads: HashMap<i32, T> = HashMap::new();
    for (tid, o) in &inp.procfs.threads {
        threads.insert(
            *tid,
            T {
                tid: *tid,
                name: o.name.clone(),
                first: o.first_seen_us,
                last: o.last_seen_us,
                migrations: o.migrations(),
            },
        );
    }
    for s in &inp.raw {
        let t = us_since(inp.start_ns, s.time_ns);
        let e = threads.entry(s.tid as i32).or_insert_with(|| T {
            tid: s.tid as i32,
            name: inp.tids_in_samples.get(&s.tid).cloned().unwrap_or_default(),
            first: t,
            last: t,
            migrations: -1,
        });
        e.first = e.first.min(t);
        e.last = e.last.max(t);
    }
    let mut task_tids: Vec<&u32> = inp.tasks.threads.keys().collect();
    task_tids.sort();
    for &tid in task_tids {
        let info = &inp.tasks.threads[&tid];
        let created = info.created.map(|(ns, _, _)| us_since(inp.start_ns, ns));
        let exited = info.exited_ns.map(|ns| us_since(inp.start_ns, ns));
        let Some(at) = created.or(exited) else {
            // Only a name (the main thread's exec, a rename): it is listed by the others.
            if let (Some(e), Some(n)) = (threads.get_mut(&(tid as i32)), &info.name) {
                e.name = n.clone();
            }
            continue;
        };
        let e = threads.entry(tid as i32).or_insert_with(|| T {
            tid: tid as i32,
            name: String::new(),
            first: at,
            last: at,
            migrations: -1,
        });
        if let Some(c) = created {
            e.first = e.first.min(c);
        }
        e.last = e.last.max(exited.unwrap_or(e.last));
        if let Some(n) = &info.name {
            e.name = n.clone();
        }
    }
    // Threads never named and never polled: their creator's name (what the kernel gave them).
    // In creation order, so that a creator created during the recording is named first.
    let mut unnamed: Vec<(u64, i32, i32)> = threads
        .values()
        .filter(|t| t.name.is_empty())
        .filter_map(|t| inp.tasks.get(t.tid)?.created.map(|(ns, parent, _)| (ns, t.tid, parent as i32)))
        .collect();
    unnamed.sort_unstable();
    for (_, tid, parent) in unnamed {
        if let Some(name) = threads.get(&parent).map(|p| p.name.clone()).filter(|n| !n.is_empty()) {
            threads.get_mut(&tid).expect("listed above").name = name;
        }
    }
    let mut tlist: Vec<T> = threads.into_values().collect();
    tlist.sort_by_key(|t| (t.first, t.tid));
    let tindex: HashMap<i32, usize> = tlist.iter().enumerate().map(|(i, t)| (t.tid, i)).collect();
    let mut out = Threads::default();
    for t in &tlist {
        out.tid.push(t.tid);
        out.pid.push(inp.pid);
        out.name.push(if t.name.is_empty() { "?".into() } else { t.name.clone() });
        out.first_seen_us.push(t.first);
        out.last_seen_us.push(t.last);
        out.migrations.push(t.migrations);
    }
    (out, tindex)
}

/// Pages in first-touch order (pages no fault saw, found by the placement scan, last, by
/// address), with the node rule's fallback to the region's numa_maps node; and the row of each
/// tracked page (-1: a page only an earlier scan found, freed since, which gets no row).
fn pages_table(inp: &mut BuildInput<'_>, tindex: &HashMap<i32, usize>) -> (Pages, Vec<i32>) {
    let p = &inp.procfs;
    let rmap = RegionMap::new(&p.regions);
    let region_nodes = p.last_region_nodes();
    let region_page_size: HashMap<usize, u32> = {
        let rp = &p.region_placements;
        (0..rp.time_us.len()).map(|i| (rp.region[i] as usize, rp.page_size[i])).collect()
    };
    let tracked = &inp.pages.pages;
    let mut page_order: Vec<usize> = (0..tracked.len()).filter(|&i| inp.pages.kept(&tracked[i])).collect();
    page_order.sort_by_key(|&i| (tracked[i].first_time_ns, tracked[i].addr));
    let mut page_index = vec![-1i32; tracked.len()];
    let mut out = Pages::default();
    let mut fallback_used = 0usize;
    let mut unknown_nodes = 0usize;
    for (row, &i) in page_order.iter().enumerate() {
        page_index[i] = row as i32;
        let ps = &tracked[i];
        let region = rmap.find(ps.addr);
        let mut node = ps.node_last;
        if node < 0 {
            if let Some(nodes) = region.and_then(|r| region_nodes.get(&r)) {
                if nodes.len() == 1 {
                    node = nodes[0].0;
                    fallback_used += 1;
                }
            }
        }
        if node < 0 {
            unknown_nodes += 1;
        }
        out.address.push(ps.addr);
        out.region.push(region.map(|r| r as i32).unwrap_or(-1));
        out.node.push(node);
        out.page_size.push(region.and_then(|r| region_page_size.get(&r).copied()).unwrap_or(4096));
        if ps.first_time_ns == u64::MAX {
            // Seen only in hinting faults: touched before the recording started.
            out.first_touch_us.push(-1);
            out.first_touch_thread.push(-1);
            out.first_touch_cpu.push(-1);
        } else {
            out.first_touch_us.push(us_since(inp.start_ns, ps.first_time_ns));
            out.first_touch_thread.push(tindex.get(&(ps.first_tid as i32)).map(|&t| t as i32).unwrap_or(-1));
            out.first_touch_cpu.push(ps.first_cpu.min(i16::MAX as u32) as i16);
        }
    }
    if fallback_used > 0 {
        inp.notes.push(format!(
            "{fallback_used} pages were never answered by move_pages (the process had exited, or the query was refused): their node comes from the last numa_maps snapshot of their region, which had all its pages on one node"
        ));
    }
    if unknown_nodes > 0 {
        inp.notes.push(format!("{unknown_nodes} pages have no known node (-1): never answered by move_pages and not in a single-node region"));
    }
    if let Some(e) = &inp.pages.query_error {
        inp.notes.push(e.clone());
    }
    (out, page_index)
}

/// One row per fault sample: first touches as `fault`/`page-fault`, hinting faults as accesses.
fn samples_table(inp: &BuildInput<'_>, tindex: &HashMap<i32, usize>, page_index: &[i32]) -> Samples {
    let mut s = Samples::default();
    let k_fault = s.op.intern("fault");
    let k_pf = s.event.intern("page-fault");
    let k_unknown = s.data_source.intern("unknown");
    // Hinting faults (error code: protection fault while NUMA balancing was on) are accesses:
    // op load/store, event `access-fault`. Keys are interned only when such a row exists.
    let mut access_keys: Option<(u16, u16, u16)> = None;
    s.time_us.reserve(inp.raw.len());
    for f in &inp.raw {
        let pi = inp.pages.index[&(f.addr & !4095)];
        s.time_us.push(us_since(inp.start_ns, f.time_ns));
        s.thread.push(tindex[&(f.tid as i32)] as u32);
        s.cpu.push(f.cpu.min(i16::MAX as u32) as i16);
        s.page.push(page_index[pi]);
        s.offset.push((f.addr & 4095) as u16);
        match f.kind {
            FaultKind::Touch => {
                s.op.push_key(k_fault);
                s.event.push_key(k_pf);
            }
            kind => {
                let (load, store, ev) = *access_keys
                    .get_or_insert_with(|| (s.op.intern("load"), s.op.intern("store"), s.event.intern("access-fault")));
                s.op.push_key(if kind == FaultKind::AccessStore { store } else { load });
                s.event.push_key(ev);
            }
        }
        s.data_source.push_key(k_unknown);
        s.hops.push(-1);
        s.node.push(inp.pages.pages[pi].node_first);
        s.latency_cycles.push(0);
        s.weight.push(f.period.clamp(1, u32::MAX as u64) as u32);
        // The sampler's chain id for now: recorder/code.rs turns it into a stack id.
        s.stack.push(if f.stack == crate::sources::callchain::NO_STACK { -1 } else { f.stack as i32 });
        s.hitm.push(-1);
    }
    s
}

/// The poller's observations; and for a thread no poll saw (one that lived between two polls,
/// known from its samples or the task records), the cpu of its samples: a row at its first
/// sample and at each sample on another cpu.
fn thread_placements_table(inp: &BuildInput<'_>, tindex: &HashMap<i32, usize>) -> ThreadPlacements {
    let node_of = |cpu: i16, fallback: i8| {
        if cpu >= 0 {
            inp.cpu_to_node.get(cpu as usize).copied().unwrap_or(fallback)
        } else {
            -1
        }
    };
    let mut rows: Vec<(i64, u32, i16, i8)> = Vec::with_capacity(inp.procfs.placements.len());
    let mut polled = std::collections::HashSet::new();
    for &(t, tid, cpu, node) in &inp.procfs.placements {
        if let Some(&ti) = tindex.get(&tid) {
            rows.push((t, ti as u32, cpu, node_of(cpu, node)));
            polled.insert(tid);
        }
    }
    let mut last_cpu: HashMap<i32, i16> = HashMap::new();
    let poll_rows = rows.len();
    // inp.raw is in time order (build_trace sorted it).
    for s in &inp.raw {
        let tid = s.tid as i32;
        if polled.contains(&tid) {
            continue;
        }
        let (Some(&ti), Ok(cpu)) = (tindex.get(&tid), i16::try_from(s.cpu)) else { continue };
        if last_cpu.insert(tid, cpu) != Some(cpu) {
            rows.push((us_since(inp.start_ns, s.time_ns), ti as u32, cpu, node_of(cpu, -1)));
        }
    }
    if rows.len() > poll_rows {
        rows.sort_by_key(|r| (r.0, r.1));
    }
    let mut tp = ThreadPlacements::default();
    for (t, ti, cpu, node) in rows {
        tp.time_us.push(t);
        tp.thread.push(ti);
        tp.cpu.push(cpu);
        tp.node.push(node);
    }
    tp
}

/// The poller's events, lost-sample events and the process exit, in time order.
fn events_table(inp: &BuildInput<'_>, tindex: &HashMap<i32, usize>, threads: &Threads) -> Events {
    let mut ev = Events::default();
    let mut pending: Vec<PendingEvent> = inp.procfs.events.clone();
    task_events(inp, tindex, threads, &mut pending);
    for &(t, n) in &inp.lost_events {
        pending.push(PendingEvent {
            time_us: t,
            kind: "lost-samples",
            tid: None,
            value: n as i64,
            detail: format!("the kernel dropped {n} page-fault samples (ring buffer full)"),
        });
    }
    if let Some((t, code, how)) = &inp.exit {
        pending.push(PendingEvent {
            time_us: *t,
            kind: "process-exit",
            tid: None,
            value: *code as i64,
            detail: format!("process {} {how}", inp.pid),
        });
    }
    pending.sort_by_key(|e| e.time_us);
    for e in pending {
        ev.time_us.push(e.time_us);
        ev.kind.push(e.kind);
        ev.thread.push(e.tid.and_then(|t| tindex.get(&t)).map(|&i| i as i32).unwrap_or(-1));
        ev.value.push(e.value);
        ev.detail.push(e.detail);
    }
    ev
}

/// A thread's start and exit from the task records replace the poller's (which only say when a
/// poll first found it, or first missed it); threads the poller never saw get theirs too.
fn task_events(inp: &BuildInput<'_>, tindex: &HashMap<i32, usize>, threads: &Threads, pending: &mut Vec<PendingEvent>) {
    let info = |tid: i32| inp.tasks.get(tid);
    pending.retain(|e| match (e.kind, e.tid.and_then(info)) {
        ("thread-start", Some(t)) => t.created.is_none(),
        ("thread-exit", Some(t)) => t.exited_ns.is_none(),
        _ => true,
    });
    let name = |tid: i32| tindex.get(&tid).map(|&i| threads.name[i].as_str()).unwrap_or("?");
    let node = |cpu: u32| inp.cpu_to_node.get(cpu as usize).copied().unwrap_or(-1);
    let mut tids: Vec<&u32> = inp.tasks.threads.keys().collect();
    tids.sort();
    for &tid in tids {
        let t = &inp.tasks.threads[&tid];
        let tid = tid as i32;
        if let Some((ns, parent, cpu)) = t.created {
            pending.push(PendingEvent {
                time_us: us_since(inp.start_ns, ns),
                kind: "thread-start",
                tid: Some(tid),
                value: -1,
                detail: format!(
                    "thread {tid} ({}) created by thread {parent} on cpu {cpu} (node {})",
                    name(tid),
                    node(cpu)
                ),
            });
        }
        if let Some(ns) = t.exited_ns {
            pending.push(PendingEvent {
                time_us: us_since(inp.start_ns, ns),
                kind: "thread-exit",
                tid: Some(tid),
                value: -1,
                detail: format!("thread {tid} ({}) exited", name(tid)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::pagefault::{TaskEvent, TaskKind};

    /// Threads only the task records saw: listed with their creation and exit, named by the
    /// kernel or after their creator (also a creator created during the recording, whatever the
    /// order of the map), with exact start and exit events replacing the poller's.
    #[test]
    fn threads_and_events_from_the_task_records() {
        let start_ns = 1_000_000;
        let mut procfs = ProcfsData::default();
        procfs.threads.insert(
            100,
            crate::sources::procfs::ThreadObs {
                tid: 100,
                pid: 100,
                name: "prog".into(),
                first_seen_us: 1,
                last_seen_us: 50,
                migrations_base: Some(0),
                migrations_last: Some(0),
                last_cpu: 0,
                alive: true,
            },
        );
        // The poller's approximate start of 101 (it found it at 40 µs) is replaced.
        procfs.events.push(PendingEvent {
            time_us: 40,
            kind: "thread-start",
            tid: Some(101),
            value: -1,
            detail: "poll".into(),
        });
        let mut tasks = TaskLog::default();
        let ev = |kind, tid, us: u64| TaskEvent { kind, pid: 100, tid, time_ns: start_ns + us * 1000, cpu: 1 };
        tasks.add(
            100,
            vec![
                // 103 is created by 102, itself created by 101 (named "worker"); 102 and 103 never named.
                ev(TaskKind::Fork { parent_pid: 100, parent_tid: 102 }, 103, 30),
                ev(TaskKind::Fork { parent_pid: 100, parent_tid: 101 }, 102, 20),
                ev(TaskKind::Fork { parent_pid: 100, parent_tid: 100 }, 101, 10),
                ev(TaskKind::Comm { name: "worker".into(), exec: false }, 101, 11),
                ev(TaskKind::Exit, 103, 35),
            ],
        );
        let mut notes = Vec::new();
        let inp = BuildInput {
            start_ns,
            pid: 100,
            raw: Vec::new(),
            pages: PageTracker::default(),
            procfs,
            tids_in_samples: HashMap::new(),
            tasks: &tasks,
            cpu_to_node: &[0, 0],
            lost_events: Vec::new(),
            exit: None,
            notes: &mut notes,
        };
        let (threads, tindex) = threads_table(&inp);
        assert_eq!(threads.tid, vec![100, 101, 102, 103]);
        assert_eq!(threads.name, vec!["prog", "worker", "worker", "worker"]);
        assert_eq!(threads.first_seen_us, vec![1, 10, 20, 30]);
        assert_eq!(threads.last_seen_us, vec![50, 10, 20, 35]);
        assert_eq!(threads.migrations, vec![0, -1, -1, -1]);
        let events = events_table(&inp, &tindex, &threads);
        let rows: Vec<(i64, &str, i32)> =
            (0..events.time_us.len()).map(|i| (events.time_us[i], events.kind.get(i), events.thread[i])).collect();
        assert_eq!(
            rows,
            vec![(10, "thread-start", 1), (20, "thread-start", 2), (30, "thread-start", 3), (35, "thread-exit", 3)]
        );
        assert_eq!(events.detail[0], "thread 101 (worker) created by thread 100 on cpu 1 (node 0)");
    }

    fn r(start: u64, end: u64, t: i64) -> RegionObs {
        RegionObs {
            start,
            end,
            kind: "anon",
            path: None,
            policy: "default".into(),
            prot: Some("rw-p".into()),
            first_seen_us: t,
            last_seen_us: t,
        }
    }

    #[test]
    fn region_map_newest_wins() {
        let regs = vec![r(0x1000, 0x9000, 10), r(0x3000, 0x5000, 20), r(0x20000, 0x30000, 5)];
        let m = RegionMap::new(&regs);
        assert_eq!(m.find(0x1000), Some(0));
        assert_eq!(m.find(0x2fff), Some(0));
        assert_eq!(m.find(0x3000), Some(1));
        assert_eq!(m.find(0x4fff), Some(1));
        assert_eq!(m.find(0x5000), Some(0));
        assert_eq!(m.find(0x8fff), Some(0));
        assert_eq!(m.find(0x9000), None);
        assert_eq!(m.find(0x25000), Some(2));
        assert_eq!(m.find(0x0), None);
    }
}
