//! The /proc and /sys poller: thread placement and migrations, numa_maps snapshots, and NUMA
//! counters, every `interval` on its own thread.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::procfs::*;
use crate::time::{mono_now_ns, us_since};
use crate::topology::Roots;
use crate::trace::{Counters, RegionPlacements};

#[derive(Clone, Debug)]
pub struct PollerConfig {
    pub pid: i32,
    pub interval: Duration,
    /// CLOCK_MONOTONIC of the capture start.
    pub start_ns: u64,
    pub roots: Roots,
    pub cpu_to_node: Vec<i8>,
    pub node_ids: Vec<u32>,
    /// Attached to a running process: threads present at the first poll did not start during
    /// the capture.
    pub attached: bool,
    /// Read numa_maps (page placement per mapping). Throttled automatically so that reading it
    /// takes at most about a tenth of the time.
    pub numa_maps: bool,
}

/// What the poller knows about one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadObs {
    pub tid: i32,
    pub pid: i32,
    pub name: String,
    pub first_seen_us: i64,
    pub last_seen_us: i64,
    /// se.nr_migrations at the baseline (0 for a thread that started during the capture).
    pub migrations_base: Option<u64>,
    pub migrations_last: Option<u64>,
    pub last_cpu: i32,
    pub alive: bool,
}

impl ThreadObs {
    pub fn migrations(&self) -> i64 {
        match (self.migrations_base, self.migrations_last) {
            (Some(b), Some(l)) => l.saturating_sub(b) as i64,
            _ => -1,
        }
    }
}

/// A mapping as seen in maps + numa_maps.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionObs {
    pub start: u64,
    pub end: u64,
    pub kind: &'static str,
    pub path: Option<String>,
    pub policy: String,
    /// The maps permissions (`r--p`, `rw-s`; procfs::maps_prot), `None` if not understood.
    pub prot: Option<String>,
    pub first_seen_us: i64,
    pub last_seen_us: i64,
}

/// An event whose thread is still a tid (mapped to a thread index at the end).
#[derive(Clone, Debug, PartialEq)]
pub struct PendingEvent {
    pub time_us: i64,
    pub kind: &'static str,
    pub tid: Option<i32>,
    pub value: i64,
    pub detail: String,
}

/// What makes a mapping a new region row: start, end, path, policy, permissions.
type RegionKey = (u64, u64, Option<String>, String, Option<String>);

/// Most executable mappings the poller keeps.
pub const MAX_CODE_MAPS: usize = 65_536;

/// Everything the poller collected.
#[derive(Clone, Debug, Default)]
pub struct ProcfsData {
    pub threads: BTreeMap<i32, ThreadObs>,
    /// (time_us, tid, cpu, node)
    pub placements: Vec<(i64, i32, i16, i8)>,
    pub events: Vec<PendingEvent>,
    pub regions: Vec<RegionObs>,
    region_index: HashMap<RegionKey, usize>,
    /// Executable file mappings seen (the maps lines with `x`), for the samples' code
    /// locations (recorder/code.rs); at most [`MAX_CODE_MAPS`].
    pub code_maps: Vec<crate::sources::callchain::CodeMapping>,
    /// `region` holds indices into `regions`.
    pub region_placements: RegionPlacements,
    pub counters: Counters,
    pub polls: u64,
    pub numa_maps_snapshots: u64,
    /// Time of the last successful numa_maps snapshot.
    pub last_numa_maps_us: Option<i64>,
    /// Problems met (deduplicated, one line each).
    pub problems: Vec<String>,
    pub process_gone: bool,
    /// se.nr_migrations could not be read (no /proc/PID/task/TID/sched: CONFIG_SCHED_DEBUG off).
    pub sched_unavailable: bool,
}

impl ProcfsData {
    fn problem(&mut self, p: String) {
        if !self.problems.contains(&p) && self.problems.len() < 50 {
            self.problems.push(p);
        }
    }

    /// For each region index: the nodes holding its pages in the last snapshot that saw it.
    pub fn last_region_nodes(&self) -> HashMap<usize, Vec<(i8, u32)>> {
        let rp = &self.region_placements;
        let mut last_time: HashMap<usize, i64> = HashMap::new();
        for i in 0..rp.time_us.len() {
            let r = rp.region[i] as usize;
            let t = last_time.entry(r).or_insert(0);
            *t = (*t).max(rp.time_us[i]);
        }
        let mut out: HashMap<usize, Vec<(i8, u32)>> = HashMap::new();
        for i in 0..rp.time_us.len() {
            let r = rp.region[i] as usize;
            if rp.time_us[i] == last_time[&r] && rp.pages[i] > 0 {
                out.entry(r).or_default().push((rp.node[i], rp.pages[i]));
            }
        }
        out
    }
}

/// The poller state; [`Poller::poll`] takes one observation.
/// Share of one cpu the numa_maps snapshots may take (the recorder shares the cpus with the
/// program it records: bench/overhead.sh).
pub const NUMA_MAPS_BUDGET: f64 = 0.02;

pub struct Poller {
    pub cfg: PollerConfig,
    pub data: ProcfsData,
    numa_maps_skip: u32,
    numa_maps_budget_skip: u32,
}

impl Poller {
    pub fn new(cfg: PollerConfig) -> Self {
        Poller { cfg, data: ProcfsData::default(), numa_maps_skip: 0, numa_maps_budget_skip: 0 }
    }

    fn now_us(&self) -> i64 {
        us_since(self.cfg.start_ns, mono_now_ns())
    }

    fn node_of(&self, cpu: i32) -> i8 {
        if cpu < 0 {
            return -1;
        }
        self.cfg.cpu_to_node.get(cpu as usize).copied().unwrap_or(-1)
    }

    /// One observation. `force_numa_maps` ignores the throttle (used for the final snapshot).
    pub fn poll(&mut self, force_numa_maps: bool) {
        let first = self.data.polls == 0;
        self.data.polls += 1;
        let pid = self.cfg.pid;
        let proc_root = self.cfg.roots.proc.clone();
        let now = self.now_us();

        // Threads.
        let tids = match list_tasks(&proc_root, pid) {
            Ok(t) => t,
            Err(_) => {
                self.data.process_gone = true;
                self.mark_exited(&[], now);
                return;
            }
        };
        for &tid in &tids {
            let base = proc_root.join(format!("{pid}/task/{tid}"));
            let Some(stat) = fs::read_to_string(base.join("stat")).ok().and_then(|s| parse_task_stat(&s)) else {
                continue; // exited between readdir and read
            };
            let nr_mig = fs::read_to_string(base.join("sched")).ok().and_then(|s| parse_sched_nr_migrations(&s));
            if nr_mig.is_none() {
                self.data.sched_unavailable = true;
            }
            let cpu = stat.processor;
            let node = self.node_of(cpu);
            let started_in_capture = !(first && self.cfg.attached);
            match self.data.threads.get_mut(&tid) {
                Some(t) => {
                    t.last_seen_us = now;
                    t.name = stat.comm.clone();
                    if nr_mig.is_some() {
                        t.migrations_last = nr_mig;
                        if t.migrations_base.is_none() {
                            t.migrations_base = nr_mig;
                        }
                    }
                    if t.last_cpu != cpu {
                        let from = t.last_cpu;
                        t.last_cpu = cpu;
                        let from_node = self.node_of(from);
                        self.data.events.push(PendingEvent {
                            time_us: now,
                            kind: "thread-migration",
                            tid: Some(tid),
                            value: cpu as i64,
                            detail: format!(
                                "thread {tid} ({}) moved from cpu {from} (node {from_node}) to cpu {cpu} (node {node})",
                                stat.comm
                            ),
                        });
                    }
                }
                None => {
                    self.data.threads.insert(
                        tid,
                        ThreadObs {
                            tid,
                            pid,
                            name: stat.comm.clone(),
                            first_seen_us: now,
                            last_seen_us: now,
                            migrations_base: if started_in_capture { nr_mig.map(|_| 0) } else { nr_mig },
                            migrations_last: nr_mig,
                            last_cpu: cpu,
                            alive: true,
                        },
                    );
                    if started_in_capture {
                        self.data.events.push(PendingEvent {
                            time_us: now,
                            kind: "thread-start",
                            tid: Some(tid),
                            value: -1,
                            detail: format!("thread {tid} ({}) first seen on cpu {cpu} (node {node})", stat.comm),
                        });
                    }
                }
            }
            self.data.placements.push((now, tid, cpu.clamp(-1, i16::MAX as i32) as i16, node));
        }
        self.mark_exited(&tids, now);

        // maps + numa_maps snapshot (throttled).
        {
            if force_numa_maps || self.numa_maps_skip == 0 {
                let t0 = Instant::now();
                self.snapshot_regions(now, self.cfg.numa_maps);
                let took = t0.elapsed();
                // Keep numa_maps reading under NUMA_MAPS_BUDGET of the time: skip ticks if it was
                // slow (it walks the page tables of every mapping).
                let ratio = took.as_secs_f64() / self.cfg.interval.as_secs_f64().max(1e-3);
                self.numa_maps_budget_skip = (ratio / NUMA_MAPS_BUDGET).floor().min(600.0) as u32;
                self.numa_maps_skip = self.numa_maps_budget_skip;
            } else {
                self.numa_maps_skip -= 1;
            }
        }

        // Counters.
        self.read_counters(now);
    }

    fn mark_exited(&mut self, alive: &[i32], now: i64) {
        let mut exited = Vec::new();
        for (tid, t) in self.data.threads.iter_mut() {
            if t.alive && alive.binary_search(tid).is_err() {
                t.alive = false;
                exited.push((*tid, t.name.clone(), t.last_seen_us));
            }
        }
        for (tid, name, last) in exited {
            self.data.events.push(PendingEvent {
                time_us: now,
                kind: "thread-exit",
                tid: Some(tid),
                value: -1,
                detail: format!("thread {tid} ({name}) gone (last seen alive at {:.1} ms)", last as f64 / 1000.0),
            });
        }
    }

    /// Regions from maps, with per-node pages from numa_maps when `with_numa` (else policy
    /// `unknown` and no region_placements rows).
    fn snapshot_regions(&mut self, now: i64, with_numa: bool) {
        let pid = self.cfg.pid;
        let dir = self.cfg.roots.proc.join(pid.to_string());
        let maps = match fs::read_to_string(dir.join("maps")) {
            Ok(m) => parse_maps(&m),
            Err(e) => {
                self.data.problem(format!("cannot read /proc/{pid}/maps: {e}"));
                return;
            }
        };
        if maps.is_empty() {
            return; // zombie or exiting process
        }
        let numa = if with_numa {
            match fs::read_to_string(dir.join("numa_maps")) {
                Ok(m) => Some(parse_numa_maps(&m)),
                Err(e) => {
                    self.data.problem(format!("cannot read /proc/{pid}/numa_maps: {e}"));
                    None
                }
            }
        } else {
            None
        };
        for m in maps.iter().filter(|m| m.perms.contains('x')) {
            let Some(path) = m.path.as_deref().filter(|p| p.starts_with('/')) else { continue };
            let c = crate::sources::callchain::CodeMapping {
                pid: pid as u32,
                start: m.start,
                end: m.end,
                pgoff: m.offset,
                path: path.to_string(),
                time_ns: 0,
            };
            if self.data.code_maps.len() < MAX_CODE_MAPS && !self.data.code_maps.contains(&c) {
                self.data.code_maps.push(c);
            }
        }
        let numa_by_start: HashMap<u64, &NumaMapsEntry> = numa.iter().flatten().map(|n| (n.start, n)).collect();
        for m in &maps {
            let n = numa_by_start.get(&m.start).copied();
            if numa.is_some() && n.is_none() {
                continue; // the mapping changed between the two reads
            }
            let path = m.path.clone();
            let kind = region_kind(path.as_deref(), n);
            let policy = n.map(|n| n.policy.clone()).unwrap_or_else(|| "unknown".into());
            // An mprotect of the whole mapping keeps its range: a new row, as for a new policy.
            let prot = maps_prot(&m.perms);
            let key = (m.start, m.end, path.clone(), policy.clone(), prot.clone());
            let idx = match self.data.region_index.get(&key) {
                Some(&i) => i,
                None => {
                    let i = self.data.regions.len();
                    self.data.regions.push(RegionObs {
                        start: m.start,
                        end: m.end,
                        kind,
                        path: path.clone(),
                        policy,
                        prot,
                        first_seen_us: now,
                        last_seen_us: now,
                    });
                    self.data.region_index.insert(key, i);
                    i
                }
            };
            self.data.regions[idx].last_seen_us = now;
            let Some(n) = n else { continue };
            let page_size = n.page_size_bytes().min(u32::MAX as u64) as u32;
            for &(node, pages) in &n.nodes {
                let rp = &mut self.data.region_placements;
                rp.time_us.push(now);
                rp.region.push(idx as u32);
                rp.node.push(node.min(127) as i8);
                rp.pages.push(pages.min(u32::MAX as u64) as u32);
                rp.page_size.push(page_size);
            }
        }
        if numa.is_some() {
            self.data.numa_maps_snapshots += 1;
            self.data.last_numa_maps_us = Some(now);
        }
    }

    fn read_counters(&mut self, now: i64) {
        let proc_root = self.cfg.roots.proc.clone();
        let sys_root = self.cfg.roots.sys.clone();
        if let Ok(text) = fs::read_to_string(proc_root.join("vmstat")) {
            for (k, v) in parse_vmstat_numa(&text) {
                self.push_counter(now, &k, "system", -1, v as f64);
            }
        }
        for node in self.cfg.node_ids.clone() {
            if let Ok(vals) = read_node_numastat(&sys_root, node) {
                for (k, v) in vals {
                    self.push_counter(now, &k, "node", node as i32, v as f64);
                }
            }
            if let Ok(mi) = read_node_meminfo(&sys_root, node) {
                if let Some(&free) = mi.get("MemFree") {
                    self.push_counter(now, "mem_free_bytes", "node", node as i32, free as f64);
                }
                if let Some(&used) = mi.get("MemUsed") {
                    self.push_counter(now, "mem_used_bytes", "node", node as i32, used as f64);
                }
            }
        }
    }

    fn push_counter(&mut self, now: i64, name: &str, scope: &str, scope_id: i32, value: f64) {
        let c = &mut self.data.counters;
        c.time_us.push(now);
        c.counter.push(name);
        c.scope.push(scope);
        c.scope_id.push(scope_id);
        c.value.push(value);
    }
}

/// A poller running on its own thread.
pub struct PollerHandle {
    stop: Arc<AtomicBool>,
    threads_seen: Arc<std::sync::atomic::AtomicUsize>,
    thread: Option<JoinHandle<ProcfsData>>,
}

impl PollerHandle {
    /// Starts polling now and then every `cfg.interval`.
    pub fn spawn(cfg: PollerConfig) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let threads_seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen2 = threads_seen.clone();
        let thread = std::thread::Builder::new().name("numascope-procfs".into()).spawn(move || {
            let interval = cfg.interval;
            let mut p = Poller::new(cfg);
            let mut next = Instant::now();
            loop {
                p.poll(false);
                seen2.store(p.data.threads.len(), Ordering::Relaxed);
                next += interval;
                loop {
                    if stop2.load(Ordering::Relaxed) {
                        // Final observation with a forced numa_maps snapshot.
                        p.poll(true);
                        return p.data;
                    }
                    let now = Instant::now();
                    if now >= next {
                        if now > next + interval {
                            next = now; // fell behind: do not burst
                        }
                        break;
                    }
                    std::thread::sleep((next - now).min(Duration::from_millis(5)));
                }
            }
        })?;
        Ok(PollerHandle { stop, threads_seen, thread: Some(thread) })
    }

    /// Threads seen so far (for progress lines).
    pub fn threads_seen(&self) -> usize {
        self.threads_seen.load(Ordering::Relaxed)
    }

    /// Asks for a final observation and returns everything collected.
    pub fn finish(mut self) -> ProcfsData {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap_or_default()
    }
}

impl Drop for PollerHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Path helper used in notes.
pub fn proc_path(roots: &Roots, pid: i32, file: &str) -> PathBuf {
    roots.proc.join(format!("{pid}/{file}"))
}
