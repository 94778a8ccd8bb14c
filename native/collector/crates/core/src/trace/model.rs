//! In-memory form of a numascope trace (format v2, docs/trace-format.md).
//!
//! Tables are stored column-wise (one `Vec` per column) so a 10-million-row `samples` table costs
//! a few bytes per row. Dictionary columns are [`DictColumn`]s: interned strings plus keys.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::columns::DictColumn;

/// The format name written in `manifest.json`.
pub const FORMAT_NAME: &str = "numascope-trace";
/// The newest trace format version this crate reads and the one it writes.
pub const FORMAT_VERSION: u32 = 4;

// ---------------------------------------------------------------------------------------------
// manifest.json
// ---------------------------------------------------------------------------------------------

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub producer: Producer,
    pub created_at: String,
    /// The name of the host the capture ran on (`uname -n`; an import's perf.data HOSTNAME
    /// header); `None` for synthetic traces and files upgraded from version 3 (v4).
    #[serde(default)]
    pub host: Option<String>,
    /// An id of this capture, 32 lower-case hex digits, the same in every copy and export of it
    /// (v4): random for a recording, a hash of the source file for an import; `None` in a file
    /// upgraded from version 3 (exports then use a hash of the file's bytes).
    #[serde(default)]
    pub trace_id: Option<String>,
    pub origin: Origin,
    pub machine: Machine,
    pub capture: Capture,
    pub process: Option<ProcessInfo>,
    pub applied_plans: Vec<serde_json::Value>,
    pub tables: Vec<TableEntry>,
    /// The latest `numascope bench` calibration of the recording machine (a machine object with a
    /// `calibration` key, docs/bench.md), when one was stored; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Producer {
    pub name: String,
    pub version: String,
}

impl Default for Producer {
    fn default() -> Self {
        Producer { name: "numascope".into(), version: env!("CARGO_PKG_VERSION").into() }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Origin {
    /// `recorded`, `imported`, `synthetic` or `derived`.
    pub kind: String,
    pub generator: String,
    pub seed: Option<u64>,
    pub model: Option<String>,
    pub description: String,
    pub command: Vec<String>,
    pub from: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    pub name: String,
    pub source: String,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    /// The machine's cpu clock, GHz: what PMU load latencies in cycles (`samples.latency_cycles`)
    /// are divided by to give time. Absent when unknown (an addition within format version 2);
    /// `provenance.cpuClockGHz` says where it came from, or why it is unknown.
    #[serde(rename = "cpuClockGHz", default, skip_serializing_if = "Option::is_none")]
    pub cpu_clock_ghz: Option<f64>,
    pub page_size_bytes: u64,
    pub nodes: Vec<MachineNode>,
    pub distances: Vec<Vec<u32>>,
    pub latencies_ns: Option<Vec<Vec<f64>>>,
    pub links: Vec<Link>,
    pub routes: Option<BTreeMap<String, Vec<u32>>>,
    pub provenance: MachineProvenance,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineNode {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub memory_bytes: Option<u64>,
    #[serde(rename = "memoryBandwidthGBps")]
    pub memory_bandwidth_gbps: Option<f64>,
    /// The node's memory tier, 0 = fastest (the kernel's memory_tiering tiers ranked by id);
    /// absent when unknown (an addition within format version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_tier: Option<u32>,
    /// What memory the node holds (`dram`, `cxl`, `hbm`, …), display only; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kind: Option<String>,
    /// The firmware's (ACPI HMAT) figures for this node from its nearest initiators, as sysfs
    /// `nodeN/access0/initiators/` shows them; absent without an HMAT. Firmware figures, not
    /// measured ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmat: Option<NodeHmat>,
}

/// sysfs `nodeN/access0/initiators/{read,write}_{bandwidth,latency}` and the initiator nodes
/// (the `nodeK` links in that directory). A file the kernel does not show is None.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeHmat {
    #[serde(rename = "readBandwidthMBps")]
    pub read_bandwidth_mbps: Option<u64>,
    #[serde(rename = "writeBandwidthMBps")]
    pub write_bandwidth_mbps: Option<u64>,
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
    pub initiators: Vec<u32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Link {
    pub from: u32,
    pub to: u32,
    #[serde(rename = "capacityGBps")]
    pub capacity_gbps: Option<f64>,
}

/// Where each machine number came from: `measured:<how>`, `documented:<source>`,
/// `estimated:<rule>` or `unavailable:<why>`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct MachineProvenance {
    pub distances: String,
    pub latencies_ns: String,
    pub links: String,
    #[serde(rename = "memoryBandwidthGBps")]
    pub memory_bandwidth_gbps: String,
    pub memory_bytes: String,
    /// Where `nodes[].memoryTier` came from (absent when no node has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_tier: Option<String>,
    /// Where `nodes[].hmat` came from (absent when no node has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmat: Option<String>,
    /// Where `cpuClockGHz` came from, or `unavailable:<why>` (absent when the producer did not look).
    #[serde(rename = "cpuClockGHz", default, skip_serializing_if = "Option::is_none")]
    pub cpu_clock_ghz: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Capture {
    /// CLOCK_MONOTONIC at capture start, decimal u64 (exceeds 2^53).
    pub start_monotonic_ns: String,
    pub start_unix_ms: u64,
    pub duration_us: u64,
    /// `duration`, `process-exit`, `signal`, `error`, `generated`.
    pub stop_reason: String,
    pub sources: Vec<SourceStatus>,
    pub capabilities: Vec<Capability>,
    pub lost_samples: u64,
    pub sample_count: u64,
    pub notes: Vec<String>,
    /// The placement scan's facts (recorded traces since the scan exists; absent before, and
    /// in imported or synthetic traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_scan: Option<PageScan>,
}

/// `capture.pageScan`: what the recorder's scan of every resident page (/proc/PID/pagemap for
/// presence, move_pages for the node) found. The counts are 4 KiB pages.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PageScan {
    /// Complete scans.
    pub scans: u32,
    /// Scans cut short (the process exited mid-scan, a read failed): their results were dropped.
    pub incomplete_scans: u32,
    /// Start of the last complete scan, µs since the capture start; None when none completed.
    pub last_scan_us: Option<i64>,
    /// The last complete scan ran at the stop (the process still lived).
    pub last_scan_at_stop: bool,
    /// Pages present with a node at the last complete scan.
    pub resident_pages: u64,
    pub resident_pages_by_node: Vec<NodePages>,
    /// Pages swapped out at the last complete scan (no node).
    pub swapped_pages: u64,
    /// Pages present in pagemap that move_pages gave no node at the last complete scan (the
    /// shared zero page, special mappings, a page freed between the two reads).
    pub unplaced_pages: u64,
    /// Most present pages one scan records (`RECORD_LIMITS.scan_max_pages`).
    pub page_limit: u64,
    /// A scan stopped at `page_limit`, or at the address-space budget: some resident pages have
    /// no row (the notes say which limit); `region_placements` (numa_maps) still counts them all.
    pub limit_hit: bool,
    /// Time all scans took together, and the longest one, ms.
    pub total_scan_ms: f64,
    pub max_scan_ms: f64,
    /// Why the scan did not run or stopped (permissions), if it did.
    pub error: Option<String>,
}

/// A count of pages on one node.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NodePages {
    pub node: i32,
    pub pages: u64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceStatus {
    pub id: String,
    /// `used`, `unavailable`, `failed`, `not-requested`.
    pub status: String,
    pub reason: Option<String>,
    pub sample_period: Option<u64>,
    pub interval_ms: Option<u64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Capability {
    pub metric: String,
    /// `measured`, `estimated`, `synthetic`, `unavailable`.
    pub status: String,
    pub reason: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInfo {
    pub pid: i32,
    /// `/proc/PID/stat` field 22 as a decimal string.
    pub start_time_ticks: Option<String>,
    pub command: Vec<String>,
    pub attached: bool,
    pub exit_code: Option<i32>,
    /// Recorded traces: the process was still running when the capture ended and the recorder
    /// left it running (true), or it had exited or was terminated (false). Absent (None) in
    /// older, imported and synthetic traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_running: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TableEntry {
    pub name: String,
    pub entry: String,
    pub rows: u64,
}

// ---------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------

/// `samples`: one row per memory-access sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    pub time_us: Vec<i64>,
    pub thread: Vec<u32>,
    pub cpu: Vec<i16>,
    pub page: Vec<i32>,
    pub offset: Vec<u16>,
    /// `load`, `store`, `fault`, `unknown`.
    pub op: DictColumn,
    /// `page-fault`, `access-fault` (NUMA hinting faults), `ibs-op`, `pebs-load`, `pebs-store`, `synthetic`.
    pub event: DictColumn,
    /// `l1`, `lfb`, `l2`, `l3`, `local-dram`, `remote-dram`, `remote-cache`, `pmem`, `cxl`, `io`,
    /// `uncached`, `unknown`.
    pub data_source: DictColumn,
    pub hops: Vec<i8>,
    pub node: Vec<i8>,
    pub latency_cycles: Vec<u32>,
    pub weight: Vec<u32>,
    /// Stack id of `stacks` (the sampled instruction and its user call stack, v3), -1 none.
    pub stack: Vec<i32>,
    /// A load that hit a line modified in another cache (v3, perf c2c's HITM): 0 no, 1 local
    /// (another core of the node), 2 remote (a cache on another node); -1 unknown.
    pub hitm: Vec<i8>,
}

/// `pages`: one row per distinct 4 KiB page seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pages {
    pub address: Vec<u64>,
    pub region: Vec<i32>,
    pub node: Vec<i8>,
    pub page_size: Vec<u32>,
    pub first_touch_us: Vec<i64>,
    pub first_touch_thread: Vec<i32>,
    pub first_touch_cpu: Vec<i16>,
}

/// `threads`: one row per thread seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Threads {
    pub tid: Vec<i32>,
    pub pid: Vec<i32>,
    pub name: Vec<String>,
    pub first_seen_us: Vec<i64>,
    pub last_seen_us: Vec<i64>,
    pub migrations: Vec<i64>,
}

/// `regions`: one row per mapping.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Regions {
    pub start: Vec<u64>,
    pub end: Vec<u64>,
    /// `heap`, `stack`, `anon`, `file`, `shm`, `vdso`, `other`.
    pub kind: DictColumn,
    pub path: Vec<Option<String>>,
    pub policy: Vec<String>,
    pub alloc_site: Vec<Option<String>>,
    /// Optional column (added within v2): the maps permissions, `r--p`, `rw-s`, …; `None`
    /// unknown. A file written before the column existed reads as all `None`.
    pub prot: Vec<Option<String>>,
}

/// `thread_placements`: a thread's cpu and node over time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadPlacements {
    pub time_us: Vec<i64>,
    pub thread: Vec<u32>,
    pub cpu: Vec<i16>,
    pub node: Vec<i8>,
}

/// `region_placements`: numa_maps snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionPlacements {
    pub time_us: Vec<i64>,
    pub region: Vec<u32>,
    pub node: Vec<i8>,
    pub pages: Vec<u32>,
    pub page_size: Vec<u32>,
}

/// `counters`: time series in long format.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub time_us: Vec<i64>,
    /// Dictionary<Int16, Utf8>.
    pub counter: DictColumn,
    /// `system`, `node`, `thread`, `link`.
    pub scope: DictColumn,
    pub scope_id: Vec<i32>,
    pub value: Vec<f64>,
}

/// `events`: things that happened at a moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Events {
    pub time_us: Vec<i64>,
    /// `thread-migration`, `thread-start`, `thread-exit`, `page-migration`, `lost-samples`,
    /// `phase`, `plan-applied`, `process-exit`.
    pub kind: DictColumn,
    pub thread: Vec<i32>,
    pub value: Vec<i64>,
    pub detail: Vec<String>,
}

/// A whole trace: manifest plus the twelve tables.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceData {
    pub manifest: Manifest,
    pub samples: Samples,
    pub pages: Pages,
    pub threads: Threads,
    pub regions: Regions,
    pub thread_placements: ThreadPlacements,
    pub region_placements: RegionPlacements,
    pub counters: Counters,
    pub events: Events,
    /// `allocations`, `stacks`, `frames`, `modules` (new in v2).
    pub alloc: super::alloc::AllocTables,
}

impl TraceData {
    /// A trace with `manifest` and every table empty.
    pub fn empty(manifest: Manifest) -> TraceData {
        TraceData {
            manifest,
            samples: Samples::default(),
            pages: Pages::default(),
            threads: Threads::default(),
            regions: Regions::default(),
            thread_placements: ThreadPlacements::default(),
            region_placements: RegionPlacements::default(),
            counters: Counters::default(),
            events: Events::default(),
            alloc: Default::default(),
        }
    }
}

/// The table names of format v3 and v4 (docs/trace-format.md lists twelve), in the order they are written.
pub const TABLE_NAMES: [&str; 12] = [
    "samples",
    "pages",
    "threads",
    "regions",
    "thread_placements",
    "region_placements",
    "counters",
    "events",
    "allocations",
    "stacks",
    "frames",
    "modules",
];

/// The names format v2 gave the tables v3 calls `stacks`, `frames` and `modules`.
pub const V2_RENAMED_TABLES: [(&str, &str); 3] =
    [("stacks", "alloc_stacks"), ("frames", "alloc_frames"), ("modules", "alloc_modules")];

/// The tables format v1 has (a v1 file is read with the allocation-site tables empty).
pub const V1_TABLE_NAMES: [&str; 8] =
    ["samples", "pages", "threads", "regions", "thread_placements", "region_placements", "counters", "events"];

impl Samples {
    pub fn len(&self) -> usize {
        self.time_us.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_us.is_empty()
    }
}

/// A manifest with only the format name and version set; the caller fills in every other field.
pub fn empty_manifest() -> Manifest {
    Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        producer: Producer::default(),
        created_at: String::new(),
        host: None,
        trace_id: None,
        origin: Origin {
            kind: "recorded".into(),
            generator: String::new(),
            seed: None,
            model: None,
            description: String::new(),
            command: Vec::new(),
            from: None,
        },
        machine: Machine {
            name: String::new(),
            source: String::new(),
            kernel: None,
            cpu_model: None,
            cpu_clock_ghz: None,
            page_size_bytes: 4096,
            nodes: Vec::new(),
            distances: Vec::new(),
            latencies_ns: None,
            links: Vec::new(),
            routes: None,
            provenance: MachineProvenance {
                distances: String::new(),
                latencies_ns: String::new(),
                links: String::new(),
                memory_bandwidth_gbps: String::new(),
                memory_bytes: String::new(),
                memory_tier: None,
                hmat: None,
                cpu_clock_ghz: None,
            },
        },
        capture: Capture {
            start_monotonic_ns: "0".into(),
            start_unix_ms: 0,
            duration_us: 0,
            stop_reason: String::new(),
            sources: Vec::new(),
            capabilities: Vec::new(),
            lost_samples: 0,
            sample_count: 0,
            notes: Vec::new(),
            page_scan: None,
        },
        process: None,
        applied_plans: Vec::new(),
        tables: Vec::new(),
        calibration: None,
    }
}
