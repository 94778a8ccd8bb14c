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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::mpsc::Sender;

use serde::Serialize;

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
    /// What `accesses` are counted from ([`ACCESS_SOURCE_HINTING`]); null when nothing this
    /// recording reads shows accesses.
    pub access_source: Option<&'static str>,
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
        for m in [&mut self.total_accesses, &mut self.window_accesses] {
            let e = m.entry(page_node).or_default();
            if cpu_node == page_node {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
    }

    /// Ends the window at `end_us` and sends it. `page_nodes` yields, for every page seen so
    /// far, the node move_pages first answered and its current one (-1 unknown). `hinting`:
    /// NUMA balancing is on, so the faults counted with [`Self::access`] are hinting faults.
    /// Reads /proc/PID/task for thread placement.
    #[allow(clippy::too_many_arguments)]
    pub fn emit(
        &mut self,
        end_us: u64,
        is_final: bool,
        page_nodes: impl Iterator<Item = (i8, i8)>,
        hinting: bool,
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
            access_source: hinting.then_some(ACCESS_SOURCE_HINTING),
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
        a.emit(250_000, false, same(&[0, 0, -1]), false, 0, Path::new("/nonexistent"), &[0, 0, 1]);
        a.fault(11, 2, 1);
        a.emit(500_000, true, same(&[0, 0, -1, 1]), false, 3, Path::new("/nonexistent"), &[0, 0, 1]);
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
        a.emit(250_000, false, pages.into_iter(), true, 0, Path::new("/nonexistent"), &[0, 1]);
        a.access(1, 1);
        a.emit(500_000, true, pages.into_iter(), true, 0, Path::new("/nonexistent"), &[0, 1]);
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
}
