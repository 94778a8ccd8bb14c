//! Live per-window aggregates of a running recording (for `numascope serve`).
//!
//! A recorder given a [`LiveSink`] (the recorder's `RecordOptions::live`) sends one
//! [`LiveWindow`] every `RecordOptions::live_window` (250 ms by default) on the channel, and a last one
//! with `final: true` after the capture stopped (after the final drain and the final move_pages
//! query), just before the trace is assembled. Windows are aggregates, never raw samples.
//!
//! Agreement with the trace written at the end (the rule the server tests check):
//! - `totals.faults` of the final window = rows of `samples`, plus exact duplicates the writer
//!   removes (only possible when attaching, where one thread can be followed twice; 0 when
//!   launching).
//! - `totals.faultsByNode` of the final window = `samples.node` counted per node (the node of
//!   the first move_pages answer for the sample's page, -1 if none), duplicates aside.
//! - `totals.pages` (every page the placement scan found resident at its last complete scan,
//!   plus the pages fault samples saw) of the final window = rows of `pages`; `totals.pagesByNode` = `pages.node`
//!   counted per node, except pages that move_pages never answered: live counts them under -1,
//!   the trace may give them their region's numa_maps node (the manifest notes say how many).
//! - `threadsSeen` of the final window = threads seen in samples or in /proc by the live
//!   reader; the trace's `threads` table is the union of the sampled threads and the poller's,
//!   so it holds at least the sampled ones.
//!
//! A window covers the samples the recorder drained between `startUs` and `endUs` (µs since the
//! capture start); a sample's own time can be a little earlier than the window that counts it.
//! A sample whose page move_pages could not place yet (asked while the fault was still mapping
//! it) is counted in the first window after its node is known, the final one at the latest.
//!
//! Accesses (`accesses`, `accessSource`): from PMU samples (AMD IBS, Intel PEBS) when the
//! recording's PMU sampler is open, `"pmu-samples"`, else from NUMA hinting faults when automatic
//! NUMA balancing is on, `"hinting-faults"`; never both in one recording (the two sample at
//! unrelated rates, so a sum would mean nothing; the PMU also sees cache hits and every kind of
//! access, not only the first touch after the balancer unmapped a page). See [`pmu_access`] for
//! which PMU samples count and how local and remote are told.
//!
//! Bandwidth (`bandwidth`, `bandwidthSource`): per node, bytes per second read from and written
//! to its memory controllers in the window, from the uncore source's cumulative byte counts
//! (already scaled by bytes per CAS and by time_enabled / time_running when multiplexed): the
//! difference between the last reading before this window's end and the last one the previous
//! window used, over the time between the two readings. Whole machine, not only the recorded
//! process. A socket split into several nodes is counted per socket (sources/uncore.rs) and shown
//! for no node.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::mpsc::Sender;

use serde::Serialize;

use crate::decode::data_src::DataSource;

/// Where a recorder reports live windows.
#[derive(Clone, Debug)]
pub struct LiveSink {
    pub tx: Sender<LiveWindow>,
}

impl LiveSink {
    pub fn new(tx: Sender<LiveWindow>) -> Self {
        LiveSink { tx }
    }
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct NodeCount {
    pub node: i32,
    pub count: u64,
}

/// Sampled memory accesses to the pages of one node (the node the memory is on): from a cpu
/// of that node (`local`) or of another (`remote`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq, Default)]
pub struct NodeAccesses {
    pub node: i32,
    pub local: u64,
    pub remote: u64,
}

/// What the live windows' `accesses` are counted from (docs/live-api.md): NUMA hinting faults,
/// the accesses automatic NUMA balancing samples (a fault on a page faulted in before, with
/// balancing on). None: nothing this recording reads shows accesses (the Live screen says why).
pub const ACCESS_SOURCE_HINTING: &str = "hinting-faults";

/// `accesses` counted from PMU memory samples (AMD IBS op, Intel PEBS loads and stores), see
/// [`pmu_access`].
pub const ACCESS_SOURCE_PMU: &str = "pmu-samples";

/// `bandwidth` from the uncore memory-controller counters (sources/uncore.rs).
pub const BANDWIDTH_SOURCE_UNCORE: &str = "uncore";

/// Memory-controller traffic of one node in one window, bytes per second (whole machine, from
/// the uncore counters). `read` / `write` are None where the counters count both together (AMD
/// Zen 2 / Zen 3 data fabric: `mc-bytes`); `total` is their sum, or that combined count.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeBandwidth {
    pub node: i32,
    pub read_bytes_per_s: Option<f64>,
    pub write_bytes_per_s: Option<f64>,
    pub bytes_per_s: f64,
}

/// What the recorder counts a window's accesses from, and its bandwidth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveSources {
    /// [`ACCESS_SOURCE_PMU`], [`ACCESS_SOURCE_HINTING`] or None.
    pub access: Option<&'static str>,
    /// [`BANDWIDTH_SOURCE_UNCORE`] or None.
    pub bandwidth: Option<&'static str>,
}

/// How one PMU memory sample counts as an access: `Some((node of the memory, local))`, or None
/// when it does not count. A sample served by the sampling cpu's own caches (L1, fill buffer,
/// L2, L3), by I/O or uncached memory touched no node's memory and does not count. Local or
/// remote: by the data source where the hardware says (local DRAM: local, on the cpu's node;
/// remote DRAM or a remote cache: remote, on the page's node), otherwise (PMem, CXL, data source
/// unknown) by the cpu's node against the page's node. `cpu_node` / `page_node` -1: not known;
/// a sample whose memory node or local/remote cannot be told does not count.
pub fn pmu_access(source: DataSource, cpu_node: i32, page_node: i32) -> Option<(i32, bool)> {
    use DataSource as D;
    match source {
        D::L1 | D::Lfb | D::L2 | D::L3 | D::Io | D::Uncached => None,
        D::LocalDram if cpu_node >= 0 => Some((cpu_node, true)),
        D::LocalDram => (page_node >= 0).then_some((page_node, true)),
        // Remote by the hardware's word; the memory is the page's (if the page is on the cpu's
        // own node by move_pages, it moved since the access: counted remote to where it is now).
        D::RemoteDram | D::RemoteCache => (page_node >= 0).then_some((page_node, false)),
        D::Pmem | D::Cxl | D::Unknown => {
            (cpu_node >= 0 && page_node >= 0).then_some((page_node, cpu_node == page_node))
        }
    }
}

/// Which memory-controller byte counter an uncore reading is (the uncore source's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum McCounter {
    Read,
    Write,
    Both,
}

impl McCounter {
    fn of(counter: &str) -> Option<McCounter> {
        match counter {
            "mc-read-bytes" => Some(McCounter::Read),
            "mc-write-bytes" => Some(McCounter::Write),
            "mc-bytes" => Some(McCounter::Both),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveThread {
    pub tid: i32,
    pub name: String,
    /// cpu the thread last ran on (/proc task stat field 39), or of its last sample when gone.
    pub cpu: i32,
    /// node of that cpu (-1 unknown).
    pub node: i32,
    /// Faults sampled from this thread in this window.
    pub faults: u64,
    /// Still listed in /proc/PID/task at the end of the window.
    pub alive: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveTotals {
    pub faults: u64,
    pub faults_by_node: Vec<NodeCount>,
    pub pages: u64,
    pub pages_by_node: Vec<NodeCount>,
    /// Sampled accesses per node of the memory, local and remote (see [`NodeAccesses`]).
    pub accesses: Vec<NodeAccesses>,
    /// Pages now on another node than the one move_pages first answered for them (moved by
    /// the kernel's balancing, an apply or a migration during the recording).
    pub pages_moved: u64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveWindow {
    /// 0, 1, 2, ... per recording.
    pub seq: u64,
    pub start_us: u64,
    pub end_us: u64,
    /// Time since the capture started (= end_us).
    pub elapsed_us: u64,
    /// The last window, sent after the capture stopped.
    #[serde(rename = "final")]
    pub is_final: bool,
    pub pid: i32,
    /// Faults sampled in this window, and per node of their page (first move_pages answer).
    pub faults: u64,
    pub faults_by_node: Vec<NodeCount>,
    /// Accesses sampled in this window, per node of the memory (empty without a source).
    pub accesses: Vec<NodeAccesses>,
    /// What `accesses` are counted from ([`ACCESS_SOURCE_PMU`], [`ACCESS_SOURCE_HINTING`]); null
    /// when nothing this recording reads shows accesses.
    pub access_source: Option<&'static str>,
    /// Memory-controller bytes per second per node in this window (empty without a source, and
    /// in a window with no new reading).
    pub bandwidth: Vec<NodeBandwidth>,
    /// What `bandwidth` is read from ([`BANDWIDTH_SOURCE_UNCORE`]); null when the recording
    /// counts no memory-controller bytes.
    pub bandwidth_source: Option<&'static str>,
    /// Cumulative counts since the start.
    pub totals: LiveTotals,
    /// Threads alive now, and threads that faulted in this window.
    pub threads: Vec<LiveThread>,
    /// Distinct threads seen so far (samples or /proc).
    pub threads_seen: u64,
    /// Lost perf records so far.
    pub lost_samples: u64,
}

fn by_node(m: &BTreeMap<i32, u64>) -> Vec<NodeCount> {
    m.iter().filter(|(_, &c)| c > 0).map(|(&node, &count)| NodeCount { node, count }).collect()
}

fn accesses_by_node(m: &BTreeMap<i32, (u64, u64)>) -> Vec<NodeAccesses> {
    m.iter()
        .filter(|(_, &(l, r))| l + r > 0)
        .map(|(&node, &(local, remote))| NodeAccesses { node, local, remote })
        .collect()
}

/// Builds windows from what the recorder hands it; owned by the recording loop.
pub struct LiveAggregator {
    sink: LiveSink,
    pid: i32,
    seq: u64,
    last_end_us: u64,
    total_faults: BTreeMap<i32, u64>,
    window_faults: BTreeMap<i32, u64>,
    /// node of the memory -> (local, remote) sampled accesses
    total_accesses: BTreeMap<i32, (u64, u64)>,
    window_accesses: BTreeMap<i32, (u64, u64)>,
    /// tid -> (faults this window, cpu of the last sample)
    window_threads: HashMap<u32, (u64, u32)>,
    /// (node, counter) -> the latest uncore reading (time µs, cumulative bytes), and the one
    /// the previous window ended with.
    mc_latest: BTreeMap<(i32, McCounter), (i64, f64)>,
    mc_base: BTreeMap<(i32, McCounter), (i64, f64)>,
    seen: HashSet<i32>,
    names: HashMap<i32, String>,
    /// The receiver went away: stop building windows.
    closed: bool,
}

impl LiveAggregator {
    pub fn new(sink: LiveSink, pid: i32) -> Self {
        LiveAggregator {
            sink,
            pid,
            seq: 0,
            last_end_us: 0,
            total_faults: BTreeMap::new(),
            window_faults: BTreeMap::new(),
            total_accesses: BTreeMap::new(),
            window_accesses: BTreeMap::new(),
            window_threads: HashMap::new(),
            mc_latest: BTreeMap::new(),
            mc_base: BTreeMap::new(),
            seen: HashSet::new(),
            names: HashMap::new(),
            closed: false,
        }
    }

    /// Counts one sampled fault: its thread, cpu and the node of its page (-1 unknown).
    pub fn fault(&mut self, tid: u32, cpu: u32, node: i8) {
        *self.total_faults.entry(node as i32).or_default() += 1;
        *self.window_faults.entry(node as i32).or_default() += 1;
        let e = self.window_threads.entry(tid).or_default();
        e.0 += 1;
        e.1 = cpu;
        self.seen.insert(tid as i32);
    }

    /// Counts one sampled access (a NUMA hinting fault) to memory on `page_node` from a cpu on
    /// `cpu_node`; either unknown (-1) and it is not counted: local or remote cannot be told.
    pub fn access(&mut self, cpu_node: i32, page_node: i32) {
        if cpu_node < 0 || page_node < 0 {
            return;
        }
        self.count_access(page_node, cpu_node == page_node);
    }

    /// Counts one PMU memory sample as an access, if it is one ([`pmu_access`]); true if counted.
    pub fn pmu_sample(&mut self, source: DataSource, cpu_node: i32, page_node: i32) -> bool {
        match pmu_access(source, cpu_node, page_node) {
            Some((node, local)) => {
                self.count_access(node, local);
                true
            }
            None => false,
        }
    }

    fn count_access(&mut self, node: i32, local: bool) {
        for m in [&mut self.total_accesses, &mut self.window_accesses] {
            let e = m.entry(node).or_default();
            if local {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
    }

    /// Takes one uncore reading: the cumulative bytes of `counter` (`mc-read-bytes`,
    /// `mc-write-bytes`, `mc-bytes`; others are ignored) on `node` at `time_us`, as the uncore
    /// source wrote it (scaled). Readings older than the latest one taken are ignored; the first
    /// one of a counter is also the base the first rate is counted from.
    pub fn uncore_reading(&mut self, time_us: i64, node: i32, counter: &str, cumulative_bytes: f64) {
        let Some(c) = McCounter::of(counter) else { return };
        if node < 0 || !cumulative_bytes.is_finite() {
            return;
        }
        self.mc_base.entry((node, c)).or_insert((time_us, cumulative_bytes));
        let e = self.mc_latest.entry((node, c)).or_insert((time_us, cumulative_bytes));
        if time_us >= e.0 {
            *e = (time_us, cumulative_bytes);
        }
    }

    /// Bytes per second per node since the previous window's readings; the latest readings
    /// become the next window's base. A counter without a base yet (its first reading) gives no
    /// rate; one that went backwards (a counter reset) gives none and restarts from there.
    fn take_bandwidth(&mut self) -> Vec<NodeBandwidth> {
        let mut per: BTreeMap<i32, [Option<f64>; 3]> = BTreeMap::new();
        for (&(node, c), &(t, v)) in &self.mc_latest {
            let Some(&(t0, v0)) = self.mc_base.get(&(node, c)) else { continue };
            if t <= t0 || v < v0 {
                continue;
            }
            let rate = (v - v0) / ((t - t0) as f64 / 1e6);
            per.entry(node).or_default()[c as usize] = Some(rate);
        }
        for (k, &(t, v)) in &self.mc_latest {
            let keep = self.mc_base.get(k).is_some_and(|&(t0, _)| t0 >= t);
            if !keep {
                self.mc_base.insert(*k, (t, v));
            }
        }
        per.into_iter()
            .filter_map(|(node, [read, write, both])| {
                let total = match (read, write) {
                    (Some(r), Some(w)) => Some(r + w),
                    _ => both.or(read).or(write),
                };
                total.map(|bytes_per_s| NodeBandwidth {
                    node,
                    read_bytes_per_s: read,
                    write_bytes_per_s: write,
                    bytes_per_s,
                })
            })
            .collect()
    }

    /// Ends the window at `end_us` and sends it. `page_nodes` yields, for every page seen so
    /// far, the node move_pages first answered and its current one (-1 unknown). `sources`: what
    /// the accesses counted with [`Self::access`] / [`Self::pmu_sample`] are, and whether uncore
    /// readings ([`Self::uncore_reading`]) are taken. Reads /proc/PID/task for thread placement.
    #[allow(clippy::too_many_arguments)]
    pub fn emit(
        &mut self,
        end_us: u64,
        is_final: bool,
        page_nodes: impl Iterator<Item = (i8, i8)>,
        sources: LiveSources,
        lost_samples: u64,
        proc_root: &Path,
        cpu_to_node: &[i8],
    ) {
        if self.closed {
            return;
        }
        let mut pages_by: BTreeMap<i32, u64> = BTreeMap::new();
        let mut pages = 0u64;
        let mut pages_moved = 0u64;
        for (first, now) in page_nodes {
            *pages_by.entry(now as i32).or_default() += 1;
            pages += 1;
            if first >= 0 && now >= 0 && first != now {
                pages_moved += 1;
            }
        }
        let node_of = |cpu: i32| -> i32 {
            if cpu < 0 {
                -1
            } else {
                cpu_to_node.get(cpu as usize).map(|&n| n as i32).unwrap_or(-1)
            }
        };
        let mut threads: BTreeMap<i32, LiveThread> = BTreeMap::new();
        if let Ok(tids) = crate::procfs::list_tasks(proc_root, self.pid) {
            for tid in tids {
                let stat = std::fs::read_to_string(proc_root.join(format!("{}/task/{tid}/stat", self.pid)))
                    .ok()
                    .and_then(|s| crate::procfs::parse_task_stat(&s));
                let Some(st) = stat else { continue };
                if st.state == 'Z' || st.state == 'X' {
                    continue;
                }
                self.seen.insert(tid);
                self.names.insert(tid, st.comm.clone());
                threads.insert(
                    tid,
                    LiveThread {
                        tid,
                        name: st.comm,
                        cpu: st.processor,
                        node: node_of(st.processor),
                        faults: 0,
                        alive: true,
                    },
                );
            }
        }
        for (&tid, &(faults, cpu)) in &self.window_threads {
            let tid = tid as i32;
            let name = self.names.get(&tid).cloned().unwrap_or_default();
            threads
                .entry(tid)
                .or_insert_with(|| LiveThread {
                    tid,
                    name,
                    cpu: cpu as i32,
                    node: node_of(cpu as i32),
                    faults: 0,
                    alive: false,
                })
                .faults = faults;
        }
        let faults = self.window_faults.values().sum();
        let w = LiveWindow {
            seq: self.seq,
            start_us: self.last_end_us,
            end_us,
            elapsed_us: end_us,
            is_final,
            pid: self.pid,
            faults,
            faults_by_node: by_node(&self.window_faults),
            accesses: accesses_by_node(&self.window_accesses),
            access_source: sources.access,
            bandwidth: if sources.bandwidth.is_some() { self.take_bandwidth() } else { Vec::new() },
            bandwidth_source: sources.bandwidth,
            totals: LiveTotals {
                faults: self.total_faults.values().sum(),
                faults_by_node: by_node(&self.total_faults),
                pages,
                pages_by_node: by_node(&pages_by),
                accesses: accesses_by_node(&self.total_accesses),
                pages_moved,
            },
            threads: threads.into_values().collect(),
            threads_seen: self.seen.len() as u64,
            lost_samples,
        };
        self.seq += 1;
        self.last_end_us = end_us;
        self.window_faults.clear();
        self.window_accesses.clear();
        self.window_threads.clear();
        if self.sink.tx.send(w).is_err() {
            self.closed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_count_and_reset() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut a = LiveAggregator::new(LiveSink::new(tx), -1);
        a.fault(10, 0, 0);
        a.fault(10, 1, 0);
        a.fault(11, 2, -1);
        let same = |v: &[i8]| v.iter().map(|&n| (n, n)).collect::<Vec<_>>().into_iter();
        a.emit(250_000, false, same(&[0, 0, -1]), LiveSources::default(), 0, Path::new("/nonexistent"), &[0, 0, 1]);
        a.fault(11, 2, 1);
        a.emit(500_000, true, same(&[0, 0, -1, 1]), LiveSources::default(), 3, Path::new("/nonexistent"), &[0, 0, 1]);
        let w0 = rx.recv().unwrap();
        assert_eq!(w0.faults, 3);
        assert_eq!(w0.faults_by_node, vec![NodeCount { node: -1, count: 1 }, NodeCount { node: 0, count: 2 }]);
        assert_eq!(w0.threads.len(), 2);
        let t10 = w0.threads.iter().find(|t| t.tid == 10).unwrap();
        assert_eq!((t10.faults, t10.cpu, t10.node, t10.alive), (2, 1, 0, false));
        let w1 = rx.recv().unwrap();
        assert_eq!((w1.seq, w1.start_us, w1.end_us, w1.is_final), (1, 250_000, 500_000, true));
        assert_eq!(w1.faults, 1);
        assert_eq!(w1.totals.faults, 4);
        assert_eq!(w1.totals.pages, 4);
        assert_eq!(w1.threads_seen, 2);
        assert_eq!(w1.lost_samples, 3);
        let j = serde_json::to_value(&w1).unwrap();
        assert_eq!(j["final"], true);
        assert_eq!(j["totals"]["faultsByNode"][2]["node"], 1);
        // No hinting faults: no access source, no accesses.
        assert_eq!(j["accessSource"], serde_json::Value::Null);
        assert_eq!(j["accesses"], serde_json::json!([]));
        assert_eq!(j["totals"]["pagesMoved"], 0);
    }

    fn hinting() -> LiveSources {
        LiveSources { access: Some(ACCESS_SOURCE_HINTING), bandwidth: None }
    }

    #[test]
    fn hinting_faults_count_local_and_remote_per_node_of_the_memory() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut a = LiveAggregator::new(LiveSink::new(tx), -1);
        a.access(0, 0); // local on node 0
        a.access(1, 0); // node 1's cpu reading node 0's memory: remote
        a.access(1, 0);
        a.access(-1, 1); // cpu node unknown: not counted
        a.access(1, -1); // page node unknown: not counted
                         // Page 2 moved from node 0 to node 1; page 3's first answer is unknown.
        let pages = [(0i8, 0i8), (0, 1), (-1, 1)];
        a.emit(250_000, false, pages.into_iter(), hinting(), 0, Path::new("/nonexistent"), &[0, 1]);
        a.access(1, 1);
        a.emit(500_000, true, pages.into_iter(), hinting(), 0, Path::new("/nonexistent"), &[0, 1]);
        let w0 = rx.recv().unwrap();
        assert_eq!(w0.access_source, Some(ACCESS_SOURCE_HINTING));
        assert_eq!(w0.accesses, vec![NodeAccesses { node: 0, local: 1, remote: 2 }]);
        assert_eq!(w0.totals.pages_moved, 1);
        let w1 = rx.recv().unwrap();
        assert_eq!(w1.accesses, vec![NodeAccesses { node: 1, local: 1, remote: 0 }], "per window");
        assert_eq!(
            w1.totals.accesses,
            vec![NodeAccesses { node: 0, local: 1, remote: 2 }, NodeAccesses { node: 1, local: 1, remote: 0 }],
            "cumulative"
        );
        let j = serde_json::to_value(&w1).unwrap();
        assert_eq!(j["accessSource"], "hinting-faults");
        assert_eq!(j["totals"]["accesses"][0], serde_json::json!({ "node": 0, "local": 1, "remote": 2 }));
    }

    #[test]
    fn pmu_samples_count_by_data_source_then_by_node() {
        use DataSource as D;
        // Cache hits touch no node's memory.
        for d in [D::L1, D::Lfb, D::L2, D::L3, D::Io, D::Uncached] {
            assert_eq!(pmu_access(d, 0, 1), None, "{d:?}");
        }
        // The hardware's word wins: local DRAM is on the cpu's node, remote on the page's.
        assert_eq!(pmu_access(D::LocalDram, 1, 0), Some((1, true)));
        assert_eq!(pmu_access(D::LocalDram, -1, 0), Some((0, true)));
        assert_eq!(pmu_access(D::LocalDram, -1, -1), None);
        assert_eq!(pmu_access(D::RemoteDram, 0, 1), Some((1, false)));
        assert_eq!(pmu_access(D::RemoteCache, 0, 1), Some((1, false)));
        assert_eq!(pmu_access(D::RemoteDram, 0, -1), None, "remote, but to which node's memory is not known");
        // No word from the hardware: cpu node against page node.
        assert_eq!(pmu_access(D::Unknown, 0, 0), Some((0, true)));
        assert_eq!(pmu_access(D::Cxl, 0, 2), Some((2, false)));
        assert_eq!(pmu_access(D::Pmem, -1, 2), None);

        let (tx, rx) = std::sync::mpsc::channel();
        let mut a = LiveAggregator::new(LiveSink::new(tx), -1);
        assert!(a.pmu_sample(D::LocalDram, 0, 0));
        assert!(a.pmu_sample(D::RemoteDram, 1, 0));
        assert!(!a.pmu_sample(D::L1, 1, 0));
        assert!(a.pmu_sample(D::Unknown, 0, 1));
        let pmu = LiveSources { access: Some(ACCESS_SOURCE_PMU), bandwidth: None };
        a.emit(250_000, false, std::iter::empty(), pmu, 0, Path::new("/nonexistent"), &[0, 1]);
        let w = rx.recv().unwrap();
        assert_eq!(
            w.accesses,
            vec![NodeAccesses { node: 0, local: 1, remote: 1 }, NodeAccesses { node: 1, local: 0, remote: 1 }]
        );
        let j = serde_json::to_value(&w).unwrap();
        assert_eq!(j["accessSource"], "pmu-samples");
        assert_eq!(j["bandwidthSource"], serde_json::Value::Null);
        assert_eq!(j["bandwidth"], serde_json::json!([]));
    }

    #[test]
    fn uncore_readings_give_bytes_per_second_per_node_and_window() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut a = LiveAggregator::new(LiveSink::new(tx), -1);
        let unc = LiveSources { access: None, bandwidth: Some(BANDWIDTH_SOURCE_UNCORE) };
        let emit = |a: &mut LiveAggregator, end: u64| {
            a.emit(end, false, std::iter::empty(), unc, 0, Path::new("/nonexistent"), &[0, 1]);
        };
        // The opening reading (t = 0) is the base; 0.25 s later 2.5 MB read and 1.25 MB written on
        // node 0, 5 MB read and written together on node 1 (one counter of both, as the Zen 2/3
        // data fabric).
        a.uncore_reading(0, 0, "mc-read-bytes", 1e6);
        a.uncore_reading(0, 0, "mc-write-bytes", 0.0);
        a.uncore_reading(0, 1, "mc-bytes", 0.0);
        a.uncore_reading(0, 0, "link-tx-bytes", 0.0); // not a memory controller: ignored
        a.uncore_reading(250_000, 0, "mc-read-bytes", 3.5e6);
        a.uncore_reading(250_000, 0, "mc-write-bytes", 1.25e6);
        a.uncore_reading(250_000, 1, "mc-bytes", 5e6);
        a.uncore_reading(100_000, 1, "mc-bytes", 1e6); // older than the latest: ignored
        emit(&mut a, 250_000);
        let w0 = rx.recv().unwrap();
        assert_eq!(w0.bandwidth_source, Some(BANDWIDTH_SOURCE_UNCORE));
        assert_eq!(
            w0.bandwidth,
            vec![
                NodeBandwidth {
                    node: 0,
                    read_bytes_per_s: Some(1e7),
                    write_bytes_per_s: Some(5e6),
                    bytes_per_s: 1.5e7
                },
                NodeBandwidth { node: 1, read_bytes_per_s: None, write_bytes_per_s: None, bytes_per_s: 2e7 },
            ]
        );
        // Next window: from the readings the last one ended with (t = 0.25 s) to t = 0.5 s.
        a.uncore_reading(500_000, 0, "mc-read-bytes", 6e6);
        a.uncore_reading(500_000, 0, "mc-write-bytes", 1.25e6);
        emit(&mut a, 500_000);
        let w1 = rx.recv().unwrap();
        assert_eq!(
            w1.bandwidth,
            vec![NodeBandwidth {
                node: 0,
                read_bytes_per_s: Some(1e7),
                write_bytes_per_s: Some(0.0),
                bytes_per_s: 1e7
            }],
            "node 1 had no new reading: no rate this window"
        );
        // A counter that went backwards (reset) gives no rate, and counts on from there.
        a.uncore_reading(750_000, 0, "mc-read-bytes", 1e6);
        emit(&mut a, 750_000);
        assert_eq!(rx.recv().unwrap().bandwidth, vec![]);
        a.uncore_reading(1_000_000, 0, "mc-read-bytes", 2e6);
        emit(&mut a, 1_000_000);
        let w3 = rx.recv().unwrap();
        assert_eq!(w3.bandwidth[0].read_bytes_per_s, Some(4e6));
        assert_eq!(w3.bandwidth[0].write_bytes_per_s, None);
        let j = serde_json::to_value(&w3).unwrap();
        assert_eq!(j["bandwidthSource"], "uncore");
        assert_eq!(
            j["bandwidth"][0],
            serde_json::json!({ "node": 0, "readBytesPerS": 4e6, "writeBytesPerS": null, "bytesPerS": 4e6 })
        );
    }
}
