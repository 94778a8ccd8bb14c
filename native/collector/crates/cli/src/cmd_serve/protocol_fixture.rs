//! The collector's side of the cross-process contract: one example of every message it
//! serialises for another process (serve's answers and WebSocket messages, the napi binding's
//! results), built with realistic values from the collector's own types and the functions
//! serve answers with, written to `packages/protocol/fixtures/rust-messages.json`. The
//! TypeScript side (`packages/protocol/test/fixtures.test.ts`) parses every entry with the
//! package's strict zod schemas, so a field added, renamed or retyped here fails there, and a
//! message present on one side only fails there too.
//!
//! The file must equal what this test produces; after a deliberate change, rewrite it with
//!
//! ```sh
//! cd native/collector && UPDATE_FIXTURES=1 cargo test -p numascope-cli protocol_fixture
//! ```
//!
//! and update the schema in packages/protocol to match.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use numascope_core::apply::{
    weights::{SystemWeightsReport, WeightsState},
    ApplyReport, Expected, NotMoved, PageRun, PageStats, RangeReport, RollbackRecord, Status as ApplyStatus,
    ThreadAffinity, ThreadReport, WeightCheck,
};
use numascope_core::live::{
    LiveThread, LiveTotals, LiveWindow, NodeAccesses, NodeBandwidth, NodeCount, ACCESS_SOURCE_HINTING,
    ACCESS_SOURCE_PMU, BANDWIDTH_SOURCE_UNCORE,
};
use numascope_core::probe::{MetricProbe, Privileges, Probe, SourceProbe};
use numascope_core::probe_placement::PlacementFeature;
use numascope_core::recorder::RecordSummary;
use numascope_core::trace::{Link, Machine, MachineNode, MachineProvenance, NodeHmat};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::apply::apply_answer;
use super::processes::process_json;
use super::recordings::recording_json;
use super::respond::error_json;
use super::state::{RecInner, Recording, Status};
use super::websocket::{end_message, window_message};

const RECORDING_ID: &str = "01b677b58d686bfd";

fn nc(node: i32, count: u64) -> NodeCount {
    NodeCount { node, count }
}

fn summary(exit_code: Option<i32>, stop_reason: &str, warnings: Vec<String>) -> RecordSummary {
    RecordSummary {
        output: PathBuf::from(format!("/tmp/numascope-serve-27772-4ea1bfb0/{RECORDING_ID}.numascope")),
        size_bytes: 222_989,
        duration_us: 1_019_862,
        stop_reason: stop_reason.into(),
        pid: 27_803,
        exit_code,
        threads: 3,
        pages: 3157,
        samples: 3160,
        lost_samples: 0,
        page_faults: "used".into(),
        damon: "not-requested".into(),
        warnings,
        // Still running when the capture stopped (not by its own exit): left running.
        left_running: stop_reason != "process-exit",
    }
}

/// A window in the middle of a recording (a gone thread, a page of unknown node) and the final one.
fn windows() -> [LiveWindow; 2] {
    let running = LiveWindow {
        seq: 3,
        start_us: 750_112,
        end_us: 1_000_340,
        elapsed_us: 1_000_340,
        is_final: false,
        pid: 27_803,
        faults: 2048,
        faults_by_node: vec![nc(-1, 8), nc(0, 2040)],
        accesses: vec![NodeAccesses { node: 0, local: 310, remote: 42 }],
        access_source: Some(ACCESS_SOURCE_HINTING),
        bandwidth: vec![NodeBandwidth {
            node: 0,
            read_bytes_per_s: Some(1.25e9),
            write_bytes_per_s: Some(4.5e8),
            bytes_per_s: 1.7e9,
        }],
        bandwidth_source: Some(BANDWIDTH_SOURCE_UNCORE),
        totals: LiveTotals {
            faults: 8200,
            faults_by_node: vec![nc(-1, 8), nc(0, 8192)],
            pages: 8196,
            pages_by_node: vec![nc(-1, 4), nc(0, 8192)],
            accesses: vec![NodeAccesses { node: 0, local: 1200, remote: 96 }],
            pages_moved: 17,
        },
        threads: vec![
            LiveThread { tid: 27_803, name: "numascope-testl".into(), cpu: 1, node: 0, faults: 0, alive: true },
            LiveThread { tid: 27_806, name: "testload-w1".into(), cpu: 0, node: 0, faults: 2048, alive: true },
            LiveThread { tid: 27_807, name: "testload-w2".into(), cpu: -1, node: -1, faults: 3, alive: false },
        ],
        threads_seen: 5,
        lost_samples: 0,
    };
    let last = LiveWindow {
        seq: 4,
        start_us: 1_000_340,
        end_us: 1_019_862,
        elapsed_us: 1_019_862,
        is_final: true,
        pid: 27_803,
        faults: 0,
        faults_by_node: vec![],
        accesses: vec![NodeAccesses { node: 0, local: 7, remote: 0 }],
        access_source: Some(ACCESS_SOURCE_PMU),
        bandwidth: vec![NodeBandwidth { node: 0, read_bytes_per_s: None, write_bytes_per_s: None, bytes_per_s: 9.5e8 }],
        bandwidth_source: Some(BANDWIDTH_SOURCE_UNCORE),
        totals: LiveTotals {
            faults: 8200,
            faults_by_node: vec![nc(0, 8200)],
            pages: 8196,
            pages_by_node: vec![nc(0, 8196)],
            accesses: vec![],
            pages_moved: 0,
        },
        threads: vec![],
        threads_seen: 5,
        lost_samples: 12,
    };
    [running, last]
}

fn recording(target: Value, duration_s: Option<f64>, inner: RecInner) -> Recording {
    Recording {
        id: RECORDING_ID.into(),
        target,
        duration_s,
        started_unix_ms: 1_795_294_308_230,
        stop: Arc::new(AtomicBool::new(false)),
        inner: Mutex::new(inner),
        wake: watch::Sender::new(0),
    }
}

fn inner(status: Status) -> RecInner {
    RecInner {
        status,
        summary: None,
        error: None,
        windows: VecDeque::new(),
        first_seq: 0,
        latest: None,
        stop_requested: false,
    }
}

/// A running attach, a finished launch (with its last window), a failed one stopped on request.
fn recordings() -> Vec<Recording> {
    let [w, last] = windows();
    let running = {
        let mut i = inner(Status::Running);
        i.latest = Some(window_message(RECORDING_ID, &w));
        recording(json!({ "pid": 27_803 }), Some(10.0), i)
    };
    let finished = {
        let mut i = inner(Status::Finished);
        i.latest = Some(window_message(RECORDING_ID, &last));
        i.summary = Some(summary(Some(0), "process-exit", vec![]));
        recording(json!({ "command": ["./numascope-testload", "--threads", "2"] }), None, i)
    };
    let failed = {
        let mut i = inner(Status::Failed);
        i.stop_requested = true;
        i.error = Some(("permission-denied".into(), "permission denied: perf_event_open: EACCES".into()));
        recording(json!({ "command": ["./app"] }), Some(0.5), i)
    };
    vec![running, finished, failed]
}

fn probe() -> Vec<Probe> {
    let sources = vec![
        SourceProbe {
            id: "page-faults".into(),
            available: true,
            implemented: true,
            reason: "perf_event_open software event page-faults with PERF_SAMPLE_ADDR".into(),
        },
        SourceProbe {
            id: "ibs-op".into(),
            available: false,
            implemented: true,
            reason: "no ibs_op PMU in /sys/bus/event_source/devices (not an AMD CPU with IBS)".into(),
        },
    ];
    let capabilities = vec![
        MetricProbe {
            metric: "page-placement".into(),
            status: "measured".into(),
            reason: "move_pages(2) query of every sampled page".into(),
        },
        MetricProbe {
            metric: "remote-access-ratio".into(),
            status: "estimated".into(),
            reason: "from page faults and thread placement (no memory-access sampling PMU)".into(),
        },
        MetricProbe { metric: "memory-bandwidth".into(), status: "unavailable".into(), reason: "no uncore PMU".into() },
    ];
    let user = Probe {
        privileges: Privileges {
            perf_event_paranoid: Some(2),
            cap_perfmon: false,
            cap_sys_admin: false,
            cap_sys_nice: false,
            cap_sys_ptrace: false,
            euid: 1000,
        },
        pmus: vec!["cpu".into(), "software".into(), "tracepoint".into()],
        nodes: 2,
        sources: sources.clone(),
        capabilities: capabilities.clone(),
        // As probe_placement reads a DRAM + cpu-less node machine on Linux 6.12.
        placement: vec![
            PlacementFeature {
                id: "weighted-interleave".into(),
                state: "supported".into(),
                value: json!({ "weights": { "0": 1, "1": 1 }, "auto": true }),
                meaning: "MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+): plans with weighted-interleave ranges apply; system weights change with --set-system-weights only".into(),
            },
            PlacementFeature {
                id: "cpu-less-nodes".into(),
                state: "1".into(),
                value: json!([1]),
                meaning: "memory-only nodes (CXL, HBM in flat mode): no thread runs there; pages get there by policy or migration".into(),
            },
            PlacementFeature {
                id: "hmat".into(),
                state: "2nodes".into(),
                value: json!({ "1": { "initiators": [0], "readBandwidthMBps": 5120, "readLatencyNs": 250, "writeBandwidthMBps": 5120, "writeLatencyNs": 250 } }),
                meaning: "firmware bandwidth and latency per node (ACPI HMAT): the kernel's auto weights and the engine's recommendations start from them".into(),
            },
            PlacementFeature {
                id: "sched-ext".into(),
                state: "absent".into(),
                value: Value::Null,
                meaning: "no sched_ext scheduler: the kernel's own scheduler places threads".into(),
            },
        ],
    };
    // perf_event_paranoid unreadable (a container without /proc/sys), as root.
    let root = Probe {
        privileges: Privileges {
            perf_event_paranoid: None,
            cap_perfmon: true,
            cap_sys_admin: true,
            cap_sys_nice: true,
            cap_sys_ptrace: true,
            euid: 0,
        },
        pmus: vec![],
        nodes: 1,
        sources,
        capabilities,
        placement: vec![],
    };
    vec![user, root]
}

fn machines() -> Vec<Machine> {
    let provenance = MachineProvenance {
        distances: "measured:sysfs node*/distance (ACPI SLIT)".into(),
        latencies_ns: "unavailable:no latency benchmark has been run (numascope bench)".into(),
        links: "unavailable:no interconnect description in sysfs".into(),
        memory_bandwidth_gbps: "unavailable:no uncore counters or bandwidth benchmark data".into(),
        memory_bytes: "measured:sysfs node*/meminfo MemTotal".into(),
        memory_tier: None,
        hmat: None,
        cpu_clock_ghz: Some(
            "documented:sysfs cpu0/acpi_cppc/nominal_freq, 3000 MHz (the firmware's ACPI CPPC nominal frequency)"
                .into(),
        ),
    };
    // What the collector reads from sysfs (topology::machine()).
    let sysfs = Machine {
        name: "box".into(),
        source: "sysfs".into(),
        kernel: Some("6.8.0-52-generic".into()),
        cpu_model: Some("AMD EPYC 7302P 16-Core Processor".into()),
        cpu_clock_ghz: Some(3.0),
        page_size_bytes: 4096,
        nodes: vec![
            MachineNode {
                id: 0,
                cpus: vec![0, 1, 2, 3],
                memory_bytes: Some(33_554_432_000),
                memory_bandwidth_gbps: None,
                memory_tier: None,
                memory_kind: None,
                hmat: None,
            },
            MachineNode {
                id: 1,
                cpus: vec![4, 5, 6, 7],
                memory_bytes: None,
                memory_bandwidth_gbps: None,
                memory_tier: None,
                memory_kind: None,
                hmat: None,
            },
        ],
        distances: vec![vec![10, 21], vec![21, 10]],
        latencies_ns: None,
        links: vec![],
        routes: None,
        provenance: provenance.clone(),
    };
    // Every optional field filled in (the manifest type allows it).
    let described = Machine {
        name: "model".into(),
        source: "preset".into(),
        kernel: None,
        cpu_model: None,
        cpu_clock_ghz: Some(3.0),
        page_size_bytes: 4096,
        nodes: vec![
            MachineNode {
                id: 0,
                cpus: vec![0, 1],
                memory_bytes: Some(8_589_934_592),
                memory_bandwidth_gbps: Some(21.3),
                memory_tier: None,
                memory_kind: None,
                hmat: None,
            },
            MachineNode {
                id: 1,
                cpus: vec![2, 3],
                memory_bytes: Some(8_589_934_592),
                memory_bandwidth_gbps: Some(21.3),
                memory_tier: None,
                memory_kind: None,
                hmat: None,
            },
        ],
        distances: vec![vec![10, 20], vec![20, 10]],
        latencies_ns: Some(vec![vec![95.0, 140.5], vec![140.5, 95.0]]),
        links: vec![Link { from: 0, to: 1, capacity_gbps: Some(12.8) }, Link { from: 1, to: 0, capacity_gbps: None }],
        routes: Some(BTreeMap::from([("0-1".to_string(), vec![0, 1])])),
        provenance,
    };
    // A recorded DRAM + cpu-less (CXL-like) machine with memory tiers and HMAT figures
    // (topology::machine() on such a /sys: bandwidth and latencies from the HMAT).
    let hmat = |bw: u64, ns: u64| NodeHmat {
        read_bandwidth_mbps: Some(bw),
        write_bandwidth_mbps: Some(bw),
        read_latency_ns: Some(ns),
        write_latency_ns: None,
        initiators: vec![0],
    };
    let tiered = Machine {
        name: "tiers".into(),
        source: "sysfs".into(),
        kernel: Some("6.12.57+deb12-amd64".into()),
        cpu_model: None,
        cpu_clock_ghz: None,
        page_size_bytes: 4096,
        nodes: vec![
            MachineNode {
                id: 0,
                cpus: vec![0],
                memory_bytes: Some(536_870_912),
                memory_bandwidth_gbps: Some(20.48),
                memory_tier: Some(0),
                memory_kind: None,
                hmat: Some(hmat(20_480, 80)),
            },
            MachineNode {
                id: 1,
                cpus: vec![],
                memory_bytes: Some(268_435_456),
                memory_bandwidth_gbps: Some(5.12),
                memory_tier: Some(1),
                memory_kind: Some("cxl".into()),
                hmat: Some(hmat(5_120, 250)),
            },
        ],
        distances: vec![vec![10, 28], vec![28, 10]],
        latencies_ns: Some(vec![vec![80.0, 250.0], vec![224.0, 250.0]]),
        links: vec![],
        routes: None,
        provenance: MachineProvenance {
            memory_bandwidth_gbps: "documented:firmware HMAT figures in sysfs nodeN/access0/initiators/read_bandwidth"
                .into(),
            memory_tier: Some(
                "measured:sysfs devices/virtual/memory_tiering/memory_tier*/nodelist, ranked by tier id".into(),
            ),
            hmat: Some(
                "documented:firmware ACPI HMAT figures as sysfs nodeN/access0/initiators/ shows them; not measured"
                    .into(),
            ),
            cpu_clock_ghz: Some("unavailable:no cpufreq base_frequency or cpuinfo_max_freq, no ACPI CPPC nominal_freq, no clock in the cpu model name and no cpu MHz in /proc/cpuinfo (a VM or a container hides them)".into()),
            ..sysfs.provenance.clone()
        },
    };
    vec![sysfs, described, tiered]
}

/// A weighted-interleave apply with `--set-system-weights` (a range's `weights` and `weightCheck`,
/// the report's `systemWeights`), its rollback record (`systemWeights`: the snapshot) and the
/// rollback's report (`operation: "restore"`).
fn weighted_reports(dry: &ApplyReport) -> (ApplyReport, RollbackRecord, ApplyReport) {
    let before = WeightsState { weights: BTreeMap::from([(0, 1), (1, 1)]), auto: Some(true) };
    let planned = BTreeMap::from([(0, 4), (1, 1)]);
    let found = BTreeMap::from([(0, 1639), (1, 409)]);
    let range = RangeReport {
        start: 0x7f3a_2c00_0000,
        end: 0x7f3a_2c80_0000,
        action: "weighted-interleave".into(),
        to_nodes: vec![0, 1],
        weights: Some(vec![4, 1]),
        stats: PageStats { after: Some(found.clone()), ..stats(false) },
        weight_check: Some(WeightCheck::new(&[0, 1], &[4, 1], &found)),
        expected_nodes: Some(BTreeMap::from([(0, 1639), (1, 409)])),
        thp_pages: 0,
    };
    let real = ApplyReport {
        dry_run: false,
        status: ApplyStatus::Complete,
        ranges: vec![range],
        threads: vec![],
        expected: None,
        system_weights: Some(SystemWeightsReport {
            operation: "apply".into(),
            before: before.clone(),
            planned,
            after: Some(WeightsState { weights: BTreeMap::from([(0, 4), (1, 1)]), auto: Some(false) }),
            matched: true,
        }),
        ..dry.clone()
    };
    let record = RollbackRecord {
        format: numascope_core::apply::ROLLBACK_FORMAT.into(),
        version: numascope_core::apply::ROLLBACK_VERSION,
        pid: 27_803,
        start_time_ticks: "12345678".into(),
        page_size: 4096,
        pages: vec![PageRun { start: "0x7f3a2c000000".into(), count: 409, node: 0 }],
        threads: vec![],
        system_weights: Some(before.clone()),
    };
    let rollback = ApplyReport {
        operation: "rollback".into(),
        system_weights: Some(SystemWeightsReport {
            operation: "restore".into(),
            before: WeightsState { weights: BTreeMap::from([(0, 4), (1, 1)]), auto: Some(false) },
            planned: before.weights.clone(),
            after: Some(before),
            matched: true,
        }),
        ..real.clone()
    };
    (real, record, rollback)
}

fn stats(dry_run: bool) -> PageStats {
    PageStats {
        pages: 2048,
        unmapped: 16,
        before: BTreeMap::from([(0, 1536), (1, 480)]),
        not_present_before: 16,
        planned_after: BTreeMap::from([(1, 2016)]),
        to_move: 1536,
        already_in_place: 480,
        moved: if dry_run { 0 } else { 1530 },
        not_moved: if dry_run {
            NotMoved::default()
        } else {
            NotMoved {
                busy: 4,
                not_present: 0,
                not_permitted: 0,
                huge_page: 0,
                elsewhere: 1,
                other: BTreeMap::from([("ENOMEM".to_string(), 1)]),
            }
        },
        not_attempted: 0,
        after: (!dry_run).then(|| BTreeMap::from([(0, 6), (1, 2010)])),
        on_target_after: (!dry_run).then_some(2010),
    }
}

/// A dry run, a real apply (partial, with its rollback record) and a rollback.
fn apply_reports() -> (ApplyReport, ApplyReport, RollbackRecord, ApplyReport) {
    let range = |dry_run: bool| RangeReport {
        start: 0x7f3a_2c00_0000,
        end: 0x7f3a_2c80_0000,
        action: "move".into(),
        to_nodes: vec![1],
        stats: stats(dry_run),
        expected_nodes: Some(BTreeMap::from([(1, 2048)])),
        thp_pages: 0,
        weights: None,
        weight_check: None,
    };
    let expected = Expected {
        pages_to_move: Some(1536),
        bytes_to_move: Some(6_291_456),
        pages_per_node_after: Some(BTreeMap::from([(1, 2048)])),
        threads_to_pin: Some(1),
    };
    let dry = ApplyReport {
        operation: "apply".into(),
        pid: 27_803,
        start_time_ticks: 12_345_678,
        dry_run: true,
        status: ApplyStatus::DryRun,
        message: None,
        page_size: 4096,
        pages: stats(true),
        ranges: vec![range(true)],
        threads: vec![ThreadReport {
            tid: 27_806,
            to_nodes: vec![1],
            cpus: vec![4, 5, 6, 7],
            previous_cpus: Some(vec![0, 1, 2, 3, 4, 5, 6, 7]),
            read_back: None,
            pinned: false,
            error: None,
        }],
        expected: Some(expected),
        warnings: vec![],
        jobs: 1,
        elapsed_ms: 3.25,
        rollback_record: None,
        system_weights: None,
    };
    let real = ApplyReport {
        dry_run: false,
        status: ApplyStatus::Partial,
        message: Some("6 pages could not be moved (see notMoved)".into()),
        pages: stats(false),
        ranges: vec![range(false)],
        threads: vec![
            ThreadReport {
                tid: 27_806,
                to_nodes: vec![1],
                cpus: vec![4, 5, 6, 7],
                previous_cpus: Some(vec![0, 1, 2, 3, 4, 5, 6, 7]),
                read_back: Some(vec![4, 5, 6, 7]),
                pinned: true,
                error: None,
            },
            ThreadReport {
                tid: 27_807,
                to_nodes: vec![1],
                cpus: vec![4, 5, 6, 7],
                previous_cpus: None,
                read_back: None,
                pinned: false,
                error: Some("thread 27807 exited before it was pinned".into()),
            },
        ],
        expected: None,
        warnings: vec!["2 pages of the range lie in transparent huge pages".into()],
        jobs: 2,
        elapsed_ms: 41.5,
        ..dry.clone()
    };
    let record = RollbackRecord {
        format: numascope_core::apply::ROLLBACK_FORMAT.into(),
        version: numascope_core::apply::ROLLBACK_VERSION,
        pid: 27_803,
        start_time_ticks: "12345678".into(),
        page_size: 4096,
        pages: vec![PageRun { start: "0x7f3a2c000000".into(), count: 1530, node: 0 }],
        threads: vec![
            ThreadAffinity {
                tid: 27_806,
                cpus: vec![0, 1, 2, 3, 4, 5, 6, 7],
                start_time_ticks: Some("12345690".into()),
            },
            // A record written before threads carried their start time.
            ThreadAffinity { tid: 27_808, cpus: vec![0, 1], start_time_ticks: None },
        ],
        system_weights: None,
    };
    let rollback = ApplyReport {
        operation: "rollback".into(),
        dry_run: false,
        status: ApplyStatus::Complete,
        ranges: vec![RangeReport { action: "restore".into(), to_nodes: vec![0], expected_nodes: None, ..range(false) }],
        threads: vec![],
        expected: None,
        // What `numascope apply` (the CLI, not serve) reports: where it wrote the record.
        rollback_record: Some("/home/u/.local/state/numascope/rollback/27803-12345678.json".into()),
        ..dry.clone()
    };
    (dry, real, record, rollback)
}

/// Every message, by the name packages/protocol's `RUST_MESSAGES` gives it.
fn messages() -> Value {
    let [w, last] = windows();
    let recs = recordings();
    let (dry, real, record, rollback) = apply_reports();
    let (w_real, w_record, w_rollback) = weighted_reports(&dry);
    let euid = 1000;
    let mut ended = inner(Status::Finished);
    ended.summary = Some(summary(None, "signal", vec!["the process was attached: its exit code is not known".into()]));
    let mut failed = inner(Status::Failed);
    failed.error = Some((
        "command-not-found".into(),
        "command not found: ./app (not an executable file, and not found in PATH)".into(),
    ));
    let own: Vec<String> = vec!["./numascope-testload".into(), "--threads".into(), "2".into()];
    let processes = vec![
        // As list_processes() lists them: an own process, another user's, a kernel thread.
        process_json(27_803, "numascope-testl", &own, 3, Some(10_240), Some(euid), euid),
        process_json(812, "sshd", &["sshd: /usr/sbin/sshd -D".into()], 1, Some(7_936), Some(0), euid),
        process_json(2, "kthreadd", &[], 1, None, None, euid),
    ];
    let none: Vec<Value> = vec![];
    json!({
        "probe": probe().iter().map(to).collect::<Vec<_>>(),
        "machine": machines().iter().map(to).collect::<Vec<_>>(),
        "processList": [{ "processes": processes }, { "processes": none }],
        "recording": recs.iter().map(recording_json).collect::<Vec<_>>(),
        "recordingList": [{ "recordings": recs.iter().map(recording_json).collect::<Vec<_>>() }, { "recordings": none }],
        "liveWindow": [window_message(RECORDING_ID, &w), window_message(RECORDING_ID, &last)],
        "liveEnd": [end_message(RECORDING_ID, &ended), end_message(RECORDING_ID, &failed)],
        "collectorWindow": [to(&w), to(&last)],
        "recordSummary": [to(&summary(Some(0), "process-exit", vec![])), to(&summary(None, "duration", vec!["12 samples lost".into()]))],
        "applyReport": [
            apply_answer(&dry, None),
            apply_answer(&real, Some(&record)),
            apply_answer(&rollback, None),
            apply_answer(&w_real, Some(&w_record)),
            apply_answer(&w_rollback, None),
        ],
        "rollbackRecord": [to(&record), to(&w_record)],
        // The binding's recordLimits(): the ranges every front end checks record options against.
        "recordLimits": [to(&numascope_core::recorder::RECORD_LIMITS)],
        // /api/bench (cmd_serve/bench.rs) and the binding's bench(): runs, progress, outcome.
        "benchRun": super::bench::fixture::runs().iter().map(super::bench::bench_json).collect::<Vec<_>>(),
        "benchRunList": [{ "runs": super::bench::fixture::runs().iter().map(super::bench::bench_json).collect::<Vec<_>>() }, { "runs": none }],
        "benchProgress": [to(&super::bench::fixture::progress(1)), to(&super::bench::fixture::progress(2))],
        "benchOutcome": [to(&super::bench::fixture::outcome(false)), to(&super::bench::fixture::outcome(true))],
        // /api/runs (cmd_serve/runs.rs), `numascope run -o` and the binding's runPlan().
        "planRun": super::runs::fixture::runs(),
        "planRunList": [{ "runs": super::runs::fixture::runs()[..3].to_vec() }, { "runs": none }],
        "runReport": super::runs::fixture::reports().iter().map(to).collect::<Vec<_>>(),
        "apiError": [
            error_json("unauthorized", "missing token: every /api/ request needs the token from the URL `numascope serve` printed"),
            error_json("bad-duration", "durationS must be a number of seconds > 0 and <= 2592000"),
            error_json(
                "kernel-unsupported",
                "the kernel has no weighted interleave (/sys/kernel/mm/mempolicy/weighted_interleave is missing): system weights need Linux 6.9 or newer; this kernel is 6.1.0-37-amd64",
            ),
        ],
    })
}

fn to<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("the collector's messages serialise")
}

fn fixture_path() -> PathBuf {
    // crates/cli → the repository root, four levels up.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(4).expect("the repository root");
    root.join("packages/protocol/fixtures/rust-messages.json")
}

#[test]
fn rust_messages_fixture_is_current() {
    let mut text = serde_json::to_string_pretty(&messages()).unwrap();
    text.push('\n');
    let path = fixture_path();
    if std::env::var_os("UPDATE_FIXTURES").is_some_and(|v| v == "1") {
        std::fs::write(&path, &text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "reading {}: {e}; write it with UPDATE_FIXTURES=1 cargo test -p numascope-cli protocol_fixture",
            path.display()
        )
    });
    assert!(
        have == text,
        "{} is not what the collector serialises now. If the change is deliberate, rewrite it with \
         `UPDATE_FIXTURES=1 cargo test -p numascope-cli protocol_fixture` (in native/collector), then make \
         packages/protocol's schemas accept it (npx vitest run packages/protocol).",
        path.display()
    );
}
