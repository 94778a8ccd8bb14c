//! What the live windows count besides page faults (live.rs): PMU memory samples as accesses,
//! and the uncore source's memory-controller bytes as bandwidth. The session (session.rs,
//! `emit_live`) calls these before each window.
//!
//! The uncore readings are taken from where the previous window stopped
//! (`UncoreCounters::readings_since`): the work per window follows the readings taken in it.

use std::collections::HashMap;

use crate::decode::mem_sample::MemSample;
use crate::live::LiveAggregator;
use crate::sources::uncore::{Scope, UncoreCounters};
#[cfg(test)]
use crate::trace::Counters;

/// The uncore rows' scope for a node (sources/uncore `Scope::Node`).
#[cfg(test)]
const NODE_SCOPE: &str = "node";

/// Whether the uncore source counts memory-controller bytes (the live windows' bandwidth).
pub(super) fn counts_memory(u: &UncoreCounters) -> bool {
    u.counter_names().iter().any(|n| n.starts_with("mc-"))
}

/// Reads the uncore source's readings for the live windows.
pub(super) struct UncoreTap {
    /// Readings already given to the aggregator.
    seen: usize,
}

impl UncoreTap {
    pub(super) fn new() -> Self {
        UncoreTap { seen: 0 }
    }

    /// Gives `agg` the readings of every memory-controller counter of a node taken since the
    /// previous call (the aggregator keeps the base and the latest of each).
    pub(super) fn feed(&mut self, u: &UncoreCounters, agg: &mut LiveAggregator) {
        let new = u.readings_since(self.seen);
        self.seen += new.len();
        for &(t, counter, scope, v) in new {
            if let Scope::Node(node) = scope {
                agg.uncore_reading(t, node, counter, v);
            }
        }
    }
}

/// What [`UncoreTap::feed`] gives the aggregator, from an uncore counters table as the trace
/// holds it (rows of cumulative bytes, scope `node` or `socket`): the first and the latest row of
/// each (counter, node), oldest first. The tests feed written tables through it.
#[cfg(test)]
pub(super) fn feed_counters(c: &Counters, agg: &mut LiveAggregator) {
    use std::collections::BTreeMap;
    let mut first: BTreeMap<(i32, u16), usize> = BTreeMap::new();
    let mut last: BTreeMap<(i32, u16), usize> = BTreeMap::new();
    for i in 0..c.time_us.len() {
        if c.scope.values[c.scope.keys[i] as usize] != NODE_SCOPE {
            continue;
        }
        let k = (c.scope_id[i], c.counter.keys[i]);
        first.entry(k).or_insert(i);
        let l = last.entry(k).or_insert(i);
        if c.time_us[i] >= c.time_us[*l] {
            *l = i;
        }
    }
    for i in first.values().chain(last.values()) {
        agg.uncore_reading(c.time_us[*i], c.scope_id[*i], &c.counter.values[c.counter.keys[*i] as usize], c.value[*i]);
    }
}

/// The node of the pages PMU samples touched that the fault samples did not (move_pages, asked
/// once per page; -1 when it did not answer).
#[derive(Default)]
pub(super) struct PmuPages {
    nodes: HashMap<u64, i8>,
}

impl PmuPages {
    /// Asks move_pages for the pages of `samples` that `known` does not place and that were not
    /// asked before.
    pub(super) fn query(&mut self, pid: i32, samples: &[MemSample], known: impl Fn(u64) -> Option<i8>) {
        let mut addrs: Vec<u64> = samples
            .iter()
            .map(|m| m.addr & !4095)
            .filter(|a| known(*a).is_none_or(|n| n < 0) && !self.nodes.contains_key(a))
            .collect();
        addrs.sort_unstable();
        addrs.dedup();
        if addrs.is_empty() {
            return;
        }
        let answers = crate::numa_sys::query_page_nodes(pid, &addrs).unwrap_or_default();
        for (k, a) in addrs.iter().enumerate() {
            let n = answers.get(k).copied().filter(|n| (0..=i8::MAX as i32).contains(n)).unwrap_or(-1);
            self.nodes.insert(*a, n as i8);
        }
    }

    pub(super) fn get(&self, page: u64) -> Option<i8> {
        self.nodes.get(&page).copied()
    }
}

/// Counts PMU samples as accesses (live.rs `pmu_access`): the cpu's node from `cpu_to_node`, the
/// page's from `page_node` (-1 unknown). Returns how many counted.
pub(super) fn count_pmu(
    agg: &mut LiveAggregator,
    samples: &[MemSample],
    cpu_to_node: &[i8],
    page_node: impl Fn(u64) -> i32,
) -> usize {
    let mut counted = 0;
    for m in samples {
        let cpu_node = m.cpu.and_then(|c| cpu_to_node.get(c as usize)).map_or(-1, |&n| n as i32);
        if agg.pmu_sample(m.source, cpu_node, page_node(m.addr & !4095)) {
            counted += 1;
        }
    }
    counted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::data_src::{DataSource, MemDataSrc, MemOp};
    use crate::live::{LiveSink, LiveSources, NodeAccesses, NodeBandwidth, ACCESS_SOURCE_PMU, BANDWIDTH_SOURCE_UNCORE};
    use std::path::Path;

    fn sample(cpu: u32, addr: u64, source: DataSource) -> MemSample {
        MemSample {
            time: 0,
            pid: 1,
            tid: 1,
            cpu: Some(cpu),
            addr,
            phys_addr: None,
            data_src: MemDataSrc::default(),
            op: MemOp::Load,
            event: "ibs_op",
            source,
            hops: 0,
            latency: 0,
            weight: 1,
            stack: None,
        }
    }

    #[test]
    fn decoded_samples_and_counter_rows_make_a_window() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut agg = LiveAggregator::new(LiveSink::new(tx), -1);
        // cpus 0-1 on node 0, 2-3 on node 1; page 0x1000 on node 0, 0x2000 on node 1, 0x3000 unknown.
        let cpu_to_node = [0i8, 0, 1, 1];
        let page = |a: u64| match a {
            0x1000 => 0,
            0x2000 => 1,
            _ => -1,
        };
        let samples = [
            sample(0, 0x1010, DataSource::LocalDram),  // node 0, local
            sample(2, 0x1020, DataSource::RemoteDram), // node 0's memory from node 1: remote
            sample(3, 0x2fff, DataSource::Unknown),    // node 1 from node 1: local
            sample(0, 0x2000, DataSource::L2),         // a cache hit: not an access to memory
            sample(1, 0x3000, DataSource::RemoteDram), // remote to a node not known: not counted
            sample(1, 0x3000, DataSource::LocalDram),  // local DRAM: on the cpu's node 0
        ];
        assert_eq!(count_pmu(&mut agg, &samples, &cpu_to_node, page), 4);

        // An uncore table as the source writes it: cumulative bytes per (counter, scope).
        let mut c = Counters::default();
        let mut row = |t: i64, counter: &str, scope: &str, id: i32, v: f64| {
            c.time_us.push(t);
            c.counter.push(counter);
            c.scope.push(scope);
            c.scope_id.push(id);
            c.value.push(v);
        };
        row(0, "mc-read-bytes", "node", 0, 0.0);
        row(0, "mc-write-bytes", "node", 0, 0.0);
        row(0, "mc-read-bytes", "socket", 1, 0.0); // a split socket: no node to show it for
        row(125_000, "mc-read-bytes", "node", 0, 1e6);
        row(250_000, "mc-read-bytes", "node", 0, 2.5e6);
        row(250_000, "mc-write-bytes", "node", 0, 5e5);
        row(250_000, "mc-read-bytes", "socket", 1, 9e9);
        row(250_000, "link-tx-bytes", "node", 0, 7e7);
        feed_counters(&c, &mut agg);
        let sources = LiveSources { access: Some(ACCESS_SOURCE_PMU), bandwidth: Some(BANDWIDTH_SOURCE_UNCORE) };
        agg.emit(250_000, false, std::iter::empty(), sources, 0, Path::new("/nonexistent"), &cpu_to_node);
        let w = rx.recv().unwrap();
        assert_eq!(
            w.accesses,
            vec![NodeAccesses { node: 0, local: 2, remote: 1 }, NodeAccesses { node: 1, local: 1, remote: 0 }]
        );
        assert_eq!(
            w.bandwidth,
            vec![NodeBandwidth {
                node: 0,
                read_bytes_per_s: Some(1e7),
                write_bytes_per_s: Some(2e6),
                bytes_per_s: 1.2e7
            }]
        );
        let j = serde_json::to_value(&w).unwrap();
        assert_eq!((j["accessSource"].as_str(), j["bandwidthSource"].as_str()), (Some("pmu-samples"), Some("uncore")));
    }

    #[test]
    fn pmu_pages_are_asked_once_and_unknown_without_an_answer() {
        let mut p = PmuPages::default();
        let samples = [sample(0, 0x1010, DataSource::LocalDram), sample(0, 0x5000, DataSource::LocalDram)];
        // pid -1: move_pages answers nothing here; 0x1000 is placed by the fault samples.
        p.query(-1, &samples, |a| (a == 0x1000).then_some(0));
        assert_eq!(p.get(0x1000), None);
        assert_eq!(p.get(0x5000), Some(-1));
    }
}
