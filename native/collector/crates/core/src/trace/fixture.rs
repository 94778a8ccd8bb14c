//! A round-trip fixture: a trace with every table and column filled with distinctive known
//! values, plus the JSON of those values, for readers in other languages to compare against.
//!
//! `roundtrip.expected.json` layout:
//! `{ "format": "numascope-roundtrip-expected", "version": 1, "manifest": {…},
//!    "rows": { table: n }, "tables": { table: { column: [values…] } } }`.
//! int64/uint64 values are decimal strings (they exceed 2^53), other integers and float64 are
//! JSON numbers, dictionary columns are their strings, nulls are `null`.
//! This data is synthetic test data: its manifest says `origin.kind = "synthetic"`.

use std::path::Path;

use serde_json::{json, Value};

use crate::trace::*;

/// Builds the fixture trace. Deterministic.
pub fn fixture_trace() -> TraceData {
    let mut m = empty_manifest();
    m.created_at = "2026-11-21T19:50:00Z".into();
    m.host = Some("fixture-host".into());
    m.trace_id = Some("0123456789abcdef0123456789abcdef".into());
    m.origin = Origin {
        kind: "synthetic".into(),
        generator: "numascope debug write-fixture".into(),
        seed: Some(42),
        model: Some("roundtrip-fixture".into()),
        description: "Round-trip fixture with distinctive values in every column (not a measurement).".into(),
        command: vec!["numascope".into(), "debug".into(), "write-fixture".into(), "DIR".into()],
        from: None,
    };
    m.machine = Machine {
        name: "fixture-2node".into(),
        source: "json:fixture".into(),
        kernel: Some("6.18.0-fixture".into()),
        cpu_model: Some("Fixture CPU µarch ✓".into()),
        cpu_clock_ghz: Some(2.45),
        page_size_bytes: 4096,
        nodes: vec![
            MachineNode {
                id: 0,
                cpus: vec![0, 1],
                memory_bytes: Some(17_179_869_184),
                memory_bandwidth_gbps: Some(51.2),
                memory_tier: Some(0),
                memory_kind: None,
                hmat: None,
            },
            // A memory-only node with a tier, a kind and HMAT figures (one write figure unknown).
            MachineNode {
                id: 1,
                cpus: vec![],
                memory_bytes: None,
                memory_bandwidth_gbps: None,
                memory_tier: Some(1),
                memory_kind: Some("cxl".into()),
                hmat: Some(crate::trace::NodeHmat {
                    read_bandwidth_mbps: Some(24_000),
                    write_bandwidth_mbps: None,
                    read_latency_ns: Some(190),
                    write_latency_ns: Some(u64::from(u32::MAX)),
                    initiators: vec![0],
                }),
            },
        ],
        distances: vec![vec![10, 21], vec![21, 10]],
        latencies_ns: latencies_fixture(),
        links: vec![Link { from: 0, to: 1, capacity_gbps: Some(25.6) }, Link { from: 1, to: 0, capacity_gbps: None }],
        routes: Some([("0->1".to_string(), vec![0]), ("1->0".to_string(), vec![1])].into_iter().collect()),
        provenance: MachineProvenance {
            distances: "documented:fixture".into(),
            latencies_ns: "estimated:fixture".into(),
            links: "documented:fixture".into(),
            memory_bandwidth_gbps: "estimated:fixture".into(),
            memory_bytes: "unavailable:fixture node 1 has none".into(),
            memory_tier: Some("documented:fixture".into()),
            hmat: Some("documented:fixture (firmware figures, not measured)".into()),
            cpu_clock_ghz: Some("documented:fixture sysfs cpu0/cpufreq/base_frequency, 2450000 kHz".into()),
        },
    };
    m.capture = Capture {
        start_monotonic_ns: "18446744073709551615".into(),
        start_unix_ms: 1_795_290_600_000,
        duration_us: 9_007_199_254_740_991,
        stop_reason: "generated".into(),
        sources: vec![SourceStatus {
            id: "synthetic".into(),
            status: "used".into(),
            reason: Some("fixture values".into()),
            sample_period: Some(1),
            interval_ms: None,
        }],
        capabilities: vec![Capability {
            metric: "page-placement".into(),
            status: "synthetic".into(),
            reason: "fixture".into(),
        }],
        lost_samples: 7,
        sample_count: 0,
        notes: vec!["fixture: every value is chosen, none is measured".into()],
        page_scan: Some(PageScan {
            scans: 3,
            incomplete_scans: 1,
            last_scan_us: Some(4_294_967_295),
            last_scan_at_stop: true,
            resident_pages: 4_294_967_296,
            resident_pages_by_node: vec![NodePages { node: 0, pages: 5 }, NodePages { node: 1, pages: 0 }],
            swapped_pages: 2,
            unplaced_pages: 1,
            page_limit: 4_194_304,
            limit_hit: true,
            total_scan_ms: 12.5,
            max_scan_ms: 0.25,
            error: None,
        }),
    };
    m.process = Some(ProcessInfo {
        pid: 4242,
        start_time_ticks: Some("9007199254740993".into()),
        command: vec!["./app".into(), "--größe".into()],
        attached: false,
        exit_code: Some(-1),
        left_running: None,
    });

    let samples = Samples {
        time_us: vec![0, 6_000_000_000, 9_007_199_254_740_991],
        thread: vec![0, 1, 4_294_967_295],
        cpu: vec![-1, 0, 32_767],
        page: vec![-1, 0, 2_147_483_647],
        offset: vec![0, 4095, 65_535],
        op: ["load", "store", "fault"].into_iter().collect(),
        event: ["ibs-op", "pebs-store", "page-fault"].into_iter().collect(),
        data_source: ["remote-dram", "l1", "unknown"].into_iter().collect(),
        hops: vec![-1, 0, 127],
        node: vec![-1, 1, -128],
        latency_cycles: vec![0, 123_456, 4_294_967_295],
        weight: vec![1, 10_000, 4_294_967_295],
        stack: vec![-1, 1, 0],
        hitm: vec![-1, 2, 0],
    };
    let pages = Pages {
        address: vec![0, 0x7fff_ffff_f000, 0xffff_ffff_ffff_f000, 9_007_199_254_740_993],
        region: vec![-1, 0, 1, 2_147_483_647],
        node: vec![-1, 0, 1, 127],
        page_size: vec![0, 4096, 2_097_152, 4_294_967_295],
        first_touch_us: vec![-1, 0, 9_007_199_254_740_993, i64::MAX],
        first_touch_thread: vec![-1, 0, 1, i32::MAX],
        first_touch_cpu: vec![-1, 0, 1, i16::MIN],
    };
    let threads = Threads {
        tid: vec![4242, 4243, -1],
        pid: vec![4242, 4242, i32::MIN],
        name: vec!["main".into(), "wörker-ü 線程".into(), "".into()],
        first_seen_us: vec![0, 100, 9_007_199_254_740_991],
        last_seen_us: vec![9_007_199_254_740_991, 200, 0],
        migrations: vec![-1, 0, 9_007_199_254_740_993],
    };
    let regions = Regions {
        start: vec![0x5555_5555_0000, 0x7f00_0000_0000, 18_446_744_073_709_547_520],
        end: vec![0x5555_5556_0000, 0x7f00_0020_0000, 18_446_744_073_709_551_615],
        kind: ["heap", "file", "vdso"].into_iter().collect(),
        path: vec![None, Some("/tmp/ファイル with space.bin".into()), Some("[vdso]".into())],
        policy: vec!["default".into(), "interleave:0-1".into(), "unknown".into()],
        alloc_site: vec![Some("main.c:42 (alloc_buffers)".into()), None, None],
        // The optional column: a read-only shared file mapping, a private writable heap, unknown.
        prot: vec![Some("rw-p".into()), Some("r--s".into()), None],
    };
    let thread_placements = ThreadPlacements {
        time_us: vec![0, 50, 9_007_199_254_740_991],
        thread: vec![0, 1, 1],
        cpu: vec![0, 1, -1],
        node: vec![0, 1, -1],
    };
    let region_placements = RegionPlacements {
        time_us: vec![0, 0, 9_007_199_254_740_991],
        region: vec![0, 1, 4_294_967_295],
        node: vec![0, 1, 127],
        pages: vec![1, 4_294_967_295, 0],
        page_size: vec![4096, 2_097_152, 4096],
    };
    let counters = Counters {
        time_us: vec![0, 0, 100, 9_007_199_254_740_991],
        counter: ["numa_hit", "mem_free_bytes", "pgmigrate_success", "numa_hit"].into_iter().collect(),
        scope: ["system", "node", "thread", "link"].into_iter().collect(),
        scope_id: vec![-1, 1, 0, i32::MAX],
        value: vec![0.0, 17_179_869_184.0, 0.5, 1.0e300],
    };
    let events = Events {
        time_us: vec![0, 10, 20, 9_007_199_254_740_991],
        kind: ["thread-start", "thread-migration", "lost-samples", "process-exit"].into_iter().collect(),
        thread: vec![0, 1, -1, -1],
        value: vec![-1, 1, 9_007_199_254_740_993, i64::MIN],
        detail: vec!["thread 4242 (main) started".into(), "moved to cpu 1 → node 1".into(), "".into(), "exit ✓".into()],
    };
    let alloc = alloc_fixture();
    TraceData {
        manifest: m,
        samples,
        pages,
        threads,
        regions,
        thread_placements,
        region_placements,
        counters,
        events,
        alloc,
    }
}

/// Allocation-site rows: two allocations (one freed, one sampled and never freed) sharing a
/// module, with an inlined frame, a frame without line information and one without a module.
fn alloc_fixture() -> AllocTables {
    AllocTables {
        allocations: Allocations {
            time_us: vec![5, 9_007_199_254_740_991],
            end_us: vec![9_007_199_254_740_993, -1],
            thread: vec![0, -1],
            tid: vec![4242, 9999],
            op: ["mmap", "malloc"].into_iter().collect(),
            end_op: ["munmap", "none"].into_iter().collect(),
            address: vec![0x7f00_0000_0000, 18_446_744_073_709_551_615],
            size: vec![2_097_152, 9_007_199_254_740_993],
            sampled: vec![0, 1],
            weight_bytes: vec![2_097_152.0, 1.5e19],
            stack: vec![0, 1],
            site: vec![1, -1],
            region: vec![1, -1],
        },
        stacks: AllocStacks { stack: vec![0, 0, 0, 1], depth: vec![0, 1, 2, 0], frame: vec![0, 1, 2, 3] },
        frames: AllocFrames {
            module: vec![0, 0, 0, -1],
            module_offset: vec![0x1a2b, 0x1a2b, 18_446_744_073_709_551_615, 0x7fff_0000_1234],
            function: vec![Some("fill_rows".into()), Some("make_matrix(int)".into()), Some("main".into()), None],
            function_offset: vec![-1, 43, 9_007_199_254_740_993, -1],
            file: vec![Some("/src/matrix.h".into()), Some("/src/ファイル.c".into()), None, None],
            line: vec![12, 42, -1, -1],
            col: vec![5, -1, i16::MAX, -1],
            inlined: vec![1, 0, 0, 0],
        },
        modules: AllocModules {
            path: vec!["/opt/app/bin/matrix with space".into()],
            build_id: vec!["0123456789abcdef0123456789abcdef01234567".into()],
        },
    }
}

fn latencies_fixture() -> Option<Vec<Vec<f64>>> {
    Some(vec![vec![80.5, 135.0], vec![140.25, 81.0]])
}

fn nums<T: Into<Value> + Copy>(v: &[T]) -> Value {
    Value::Array(v.iter().map(|&x| x.into()).collect())
}

fn strs64<T: ToString>(v: &[T]) -> Value {
    Value::Array(v.iter().map(|x| Value::String(x.to_string())).collect())
}

fn dict(c: &DictColumn) -> Value {
    Value::Array(c.iter().map(|s| Value::String(s.to_string())).collect())
}

fn texts(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::String(s.clone())).collect())
}

fn opt_texts(v: &[Option<String>]) -> Value {
    Value::Array(v.iter().map(|s| s.clone().map(Value::String).unwrap_or(Value::Null)).collect())
}

/// The expected values of every table and column, as JSON (see the module docs).
pub fn expected_json(t: &TraceData) -> Value {
    let s = &t.samples;
    let p = &t.pages;
    let th = &t.threads;
    let r = &t.regions;
    let tp = &t.thread_placements;
    let rp = &t.region_placements;
    let c = &t.counters;
    let e = &t.events;
    let a = &t.alloc.allocations;
    let st = &t.alloc.stacks;
    let fr = &t.alloc.frames;
    let md = &t.alloc.modules;
    json!({
        "format": "numascope-roundtrip-expected",
        "version": 1,
        "manifest": t.manifest,
        "rows": {
            "samples": s.time_us.len(), "pages": p.address.len(), "threads": th.tid.len(),
            "regions": r.start.len(), "thread_placements": tp.time_us.len(),
            "region_placements": rp.time_us.len(), "counters": c.time_us.len(), "events": e.time_us.len(),
            "allocations": a.time_us.len(), "stacks": st.stack.len(), "frames": fr.module.len(),
            "modules": md.path.len(),
        },
        "tables": {
            "samples": {
                "time_us": nums(&s.time_us), "thread": nums(&s.thread), "cpu": nums(&s.cpu),
                "page": nums(&s.page), "offset": nums(&s.offset), "op": dict(&s.op),
                "event": dict(&s.event), "data_source": dict(&s.data_source), "hops": nums(&s.hops),
                "node": nums(&s.node), "latency_cycles": nums(&s.latency_cycles), "weight": nums(&s.weight),
                "stack": nums(&s.stack), "hitm": nums(&s.hitm),
            },
            "pages": {
                "address": strs64(&p.address), "region": nums(&p.region), "node": nums(&p.node),
                "page_size": nums(&p.page_size), "first_touch_us": strs64(&p.first_touch_us),
                "first_touch_thread": nums(&p.first_touch_thread), "first_touch_cpu": nums(&p.first_touch_cpu),
            },
            "threads": {
                "tid": nums(&th.tid), "pid": nums(&th.pid), "name": texts(&th.name),
                "first_seen_us": nums(&th.first_seen_us), "last_seen_us": nums(&th.last_seen_us),
                "migrations": strs64(&th.migrations),
            },
            "regions": {
                "start": strs64(&r.start), "end": strs64(&r.end), "kind": dict(&r.kind),
                "path": opt_texts(&r.path), "policy": texts(&r.policy), "alloc_site": opt_texts(&r.alloc_site),
                "prot": opt_texts(&r.prot),
            },
            "thread_placements": {
                "time_us": nums(&tp.time_us), "thread": nums(&tp.thread), "cpu": nums(&tp.cpu), "node": nums(&tp.node),
            },
            "region_placements": {
                "time_us": nums(&rp.time_us), "region": nums(&rp.region), "node": nums(&rp.node),
                "pages": nums(&rp.pages), "page_size": nums(&rp.page_size),
            },
            "counters": {
                "time_us": nums(&c.time_us), "counter": dict(&c.counter), "scope": dict(&c.scope),
                "scope_id": nums(&c.scope_id), "value": nums(&c.value),
            },
            "events": {
                "time_us": nums(&e.time_us), "kind": dict(&e.kind), "thread": nums(&e.thread),
                "value": strs64(&e.value), "detail": texts(&e.detail),
            },
            "allocations": {
                "time_us": nums(&a.time_us), "end_us": strs64(&a.end_us), "thread": nums(&a.thread),
                "tid": nums(&a.tid), "op": dict(&a.op), "end_op": dict(&a.end_op), "address": strs64(&a.address),
                "size": strs64(&a.size), "sampled": nums(&a.sampled), "weight_bytes": nums(&a.weight_bytes),
                "stack": nums(&a.stack), "site": nums(&a.site), "region": nums(&a.region),
            },
            "stacks": { "stack": nums(&st.stack), "depth": nums(&st.depth), "frame": nums(&st.frame) },
            "frames": {
                "module": nums(&fr.module), "module_offset": strs64(&fr.module_offset),
                "function": opt_texts(&fr.function), "function_offset": strs64(&fr.function_offset),
                "file": opt_texts(&fr.file), "line": nums(&fr.line), "col": nums(&fr.col), "inlined": nums(&fr.inlined),
            },
            "modules": { "path": texts(&md.path), "build_id": texts(&md.build_id) },
        }
    })
}

/// Writes `roundtrip.numascope` and `roundtrip.expected.json` into `dir`.
pub fn write_fixture(dir: &Path) -> Result<(std::path::PathBuf, std::path::PathBuf), TraceError> {
    std::fs::create_dir_all(dir).map_err(|e| TraceError::io(dir, e))?;
    let mut t = fixture_trace();
    let trace_path = dir.join("roundtrip.numascope");
    writer::write_trace(&mut t, &trace_path)?;
    let json_path = dir.join("roundtrip.expected.json");
    let text = serde_json::to_string_pretty(&expected_json(&t))?;
    std::fs::write(&json_path, text + "\n").map_err(|e| TraceError::io(&json_path, e))?;
    Ok((trace_path, json_path))
}
