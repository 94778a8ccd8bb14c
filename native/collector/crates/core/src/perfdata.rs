//! `numascope import`: perf.data (from `perf mem record`, `perf c2c record`,
//! `perf record -e ibs_op//`) → a numascope v1 trace.
//!
//! The container (header, attrs of any size, feature sections, zstd compression, record
//! ordering by FINISHED_ROUND) is read with `linux-perf-data` 0.13.0; sample bodies are decoded
//! by [`crate::decode::sample`] because the bundled reader drops DATA_SRC/WEIGHT and misparses
//! WEIGHT_STRUCT (platform.md Q3).
//!
//! Decisions (documented in native/collector/README.md):
//! - **event**: an attr whose PMU (PMU_MAPPINGS header, by attr.type) is `ibs_op`, or whose name
//!   contains `ibs_op`, is `ibs-op`. An attr of PERF_TYPE_RAW (4) or of the `cpu`/`cpu_core`/
//!   `cpu_atom` PMU is PEBS: config 0x01cd/0x100b/0x05d0 → `pebs-load`, 0x82d0/0x02cd/0x06d0 →
//!   `pebs-store`; other configs by the name (`mem-loads`, `LOAD_LATENCY` → load; `mem-stores`,
//!   `STORES` → store), else by each sample's data_src op. Any other attr (cycles, dummy,
//!   software) gives no memory samples: its samples are skipped and counted.
//! - **skipped**: samples whose data_src op is N/A (perf "OP N/A": IBS ops that were not a load
//!   or store) and loads/stores without a data address (addr 0), each counted in notes.
//! - **latency_cycles**: WEIGHT (u64) or WEIGHT_STRUCT var1_dw (PEBS load latency, IBS
//!   dc_miss_lat); IBS RAW without a weight field: dc_miss_lat for DC-missing loads.
//! - **weight**: PERIOD if sampled, else the attr's sample_period (not in freq mode), else 1.
//! - **node**: -1 unless a physical address is present and the NUMA_TOPOLOGY header lists a
//!   single node (then 0). perf.data does not record which node a physical range belongs to
//!   (MEM_TOPOLOGY gives memory blocks per node, not yet parsed).
//! - **hops**: see [`crate::decode::data_src::MemDataSrc::trace_hops`].

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::{EventRecord, PerfEventType, RecordType, SamplingPolicy};
use linux_perf_data::{Feature, PerfFileReader, PerfFileRecord};

use crate::decode::data_src::{C2cStats, DataSource, MemDataSrc, MemOp};
use crate::decode::ibs::{self, AmdCpu, IbsOpRaw};
use crate::decode::pebs::{pebs_event_for_config, PebsEvent, Weight};
use crate::decode::sample::{parse_sample, PerfSample, SampleLayout};
use crate::trace::*;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}: not a perf.data file (magic {1:?}; expected \"PERFILE2\")")]
    NotPerfData(String, String),
    #[error("{0}: unsupported perf.data version: {1}")]
    Unsupported(String, String),
    #[error("{0}: truncated perf.data: {1}")]
    Truncated(String, String),
    #[error("{0}: cannot read perf.data: {1}")]
    Parse(String, String),
    #[error("{0}: no memory samples: {1}")]
    Empty(String, String),
    #[error("writing the trace: {0}")]
    Trace(#[from] TraceError),
}

/// How an attr's samples are turned into trace rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    IbsOp,
    PebsLoad,
    PebsStore,
    /// PEBS with an unknown config: load/store from each sample's data_src.
    PebsByOp,
    NonMemory,
}

#[derive(Clone, Debug)]
pub struct AttrInfo {
    pub name: String,
    pub type_: u32,
    pub config: u64,
    pub pmu: Option<String>,
    pub layout: SampleLayout,
    pub period: Option<u64>,
    pub kind: EventKind,
}

/// One decoded sample with its attr index.
#[derive(Clone, Debug)]
pub struct RawSample {
    pub attr_index: usize,
    pub sample: PerfSample,
}

/// Everything read from a perf.data file.
#[derive(Clone, Debug, Default)]
pub struct PerfDataContents {
    pub attrs: Vec<AttrInfo>,
    pub samples: Vec<RawSample>,
    pub comms: HashMap<i32, (i32, String)>,
    pub lost: u64,
    pub hostname: Option<String>,
    pub os_release: Option<String>,
    pub cpu_desc: Option<String>,
    pub cpu_id: Option<String>,
    pub perf_version: Option<String>,
    pub nr_cpus: Option<u32>,
    pub total_mem_kb: Option<u64>,
    pub numa_nodes: Option<Vec<(u32, u64, Vec<u32>)>>,
    pub cmdline: Option<Vec<String>>,
}

fn type_and_config(t: &PerfEventType) -> (u32, u64) {
    match t {
        PerfEventType::Hardware(..) => (0, 0),
        PerfEventType::Software(_) => (1, 0),
        PerfEventType::Tracepoint(c) => (2, *c),
        PerfEventType::HwCache(..) => (3, 0),
        PerfEventType::Breakpoint(..) => (5, 0),
        PerfEventType::DynamicPmu(t, c, _, _) => (*t, *c),
    }
}

fn classify_attr(name: &str, type_: u32, config: u64, pmu: Option<&str>) -> EventKind {
    if pmu == Some("ibs_op") || name.contains("ibs_op") {
        return EventKind::IbsOp;
    }
    let cpu_pmu = type_ == 4 || matches!(pmu, Some("cpu" | "cpu_core" | "cpu_atom"));
    if !cpu_pmu {
        return EventKind::NonMemory;
    }
    match pebs_event_for_config(config) {
        PebsEvent::Load => EventKind::PebsLoad,
        PebsEvent::Store => EventKind::PebsStore,
        PebsEvent::LoadAux => EventKind::NonMemory,
        PebsEvent::Other => {
            let n = name.to_ascii_lowercase();
            if n.contains("mem-loads") || n.contains("load_latency") {
                EventKind::PebsLoad
            } else if n.contains("mem-stores") || n.contains("stores") {
                EventKind::PebsStore
            } else {
                EventKind::PebsByOp
            }
        }
    }
}

/// perf header string: u32 len (incl. padding) + NUL-padded bytes.
fn read_perf_string(b: &[u8], pos: &mut usize) -> Option<String> {
    let len = u32::from_le_bytes(b.get(*pos..*pos + 4)?.try_into().ok()?) as usize;
    *pos += 4;
    let s = b.get(*pos..*pos + len)?;
    *pos += len;
    Some(String::from_utf8_lossy(s).trim_end_matches('\0').to_string())
}

/// NUMA_TOPOLOGY feature: u32 nr; per node u32 id, u64 mem_total kB, u64 mem_free kB, string cpulist.
pub fn parse_numa_topology(b: &[u8]) -> Option<Vec<(u32, u64, Vec<u32>)>> {
    let nr = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
    let mut pos = 4;
    let mut out = Vec::new();
    for _ in 0..nr {
        let id = u32::from_le_bytes(b.get(pos..pos + 4)?.try_into().ok()?);
        let total = u64::from_le_bytes(b.get(pos + 4..pos + 12)?.try_into().ok()?);
        pos += 20;
        let list = read_perf_string(b, &mut pos)?;
        let cpus = crate::topology::parse_cpulist(&list).ok()?;
        out.push((id, total, cpus));
    }
    Some(out)
}

/// PMU_MAPPINGS feature: u32 nr; per pmu u32 type, string name.
fn parse_pmu_mappings(b: &[u8]) -> HashMap<u32, String> {
    let mut m = HashMap::new();
    let Some(nr) = b.get(0..4).map(|x| u32::from_le_bytes(x.try_into().unwrap())) else { return m };
    let mut pos = 4;
    for _ in 0..nr {
        let Some(t) = b.get(pos..pos + 4).map(|x| u32::from_le_bytes(x.try_into().unwrap())) else { break };
        pos += 4;
        let Some(name) = read_perf_string(b, &mut pos) else { break };
        m.insert(t, name);
    }
    m
}

fn check_header(path: &Path) -> Result<(), ImportError> {
    let p = path.display().to_string();
    let mut f = File::open(path).map_err(|e| ImportError::Io { path: p.clone(), source: e })?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut h = [0u8; 104];
    let n = f.read(&mut h).map_err(|e| ImportError::Io { path: p.clone(), source: e })?;
    if n < 8 {
        return Err(ImportError::NotPerfData(p, String::from_utf8_lossy(&h[..n]).into()));
    }
    match &h[..8] {
        b"PERFILE2" => {}
        b"2ELIFREP" => return Err(ImportError::Unsupported(p, "big-endian perf.data is not supported".into())),
        m if m.starts_with(b"PERFFILE") => {
            return Err(ImportError::Unsupported(
                p,
                "version 1 (PERFFILE) is not supported; re-record with perf ≥ 2.6.32".into(),
            ))
        }
        m => return Err(ImportError::NotPerfData(p, String::from_utf8_lossy(m).into())),
    }
    if n < 16 {
        return Err(ImportError::Truncated(p, format!("only {n} bytes")));
    }
    let hsize = u64::from_le_bytes(h[8..16].try_into().unwrap());
    if hsize == 16 {
        return Ok(()); // pipe mode: linux-perf-data parses it as a stream
    }
    if n < 104 {
        return Err(ImportError::Truncated(p, format!("header needs 104 bytes, file has {n}")));
    }
    let data_off = u64::from_le_bytes(h[40..48].try_into().unwrap());
    let data_size = u64::from_le_bytes(h[48..56].try_into().unwrap());
    if data_off.saturating_add(data_size) > len {
        return Err(ImportError::Truncated(
            p,
            format!("the data section ends at byte {} but the file has {len} bytes", data_off + data_size),
        ));
    }
    Ok(())
}

/// Reads every sample, COMM and LOST record of a perf.data file.
pub fn read_perf_data(path: &Path) -> Result<PerfDataContents, ImportError> {
    check_header(path)?;
    let p = path.display().to_string();
    let f = File::open(path).map_err(|e| ImportError::Io { path: p.clone(), source: e })?;
    let pipe = {
        let mut h = [0u8; 16];
        File::open(path).and_then(|mut g| g.read_exact(&mut h)).is_ok()
            && u64::from_le_bytes(h[8..16].try_into().unwrap()) == 16
    };
    let reader = BufReader::new(f);
    let parsed = if pipe { PerfFileReader::parse_pipe(reader) } else { PerfFileReader::parse_file(reader) };
    let PerfFileReader { mut perf_file, mut record_iter } =
        parsed.map_err(|e| ImportError::Parse(p.clone(), e.to_string()))?;

    let pmus = perf_file.feature_section_data(Feature::PMU_MAPPINGS).map(parse_pmu_mappings).unwrap_or_default();
    let mut out = PerfDataContents {
        hostname: perf_file.hostname().ok().flatten().map(str::to_string),
        os_release: perf_file.os_release().ok().flatten().map(str::to_string),
        cpu_desc: perf_file.cpu_desc().ok().flatten().map(str::to_string),
        cpu_id: perf_file.cpu_id().ok().flatten().map(str::to_string),
        perf_version: perf_file.perf_version().ok().flatten().map(str::to_string),
        nr_cpus: perf_file.nr_cpus().ok().flatten().map(|n| n.nr_cpus_available),
        total_mem_kb: perf_file.total_mem().ok().flatten(),
        numa_nodes: perf_file.feature_section_data(Feature::NUMA_TOPOLOGY).and_then(parse_numa_topology),
        cmdline: perf_file.cmdline().ok().flatten().map(|v| v.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    };
    for a in perf_file.event_attributes() {
        let attr = a.attributes();
        let (type_, config) = type_and_config(&attr.type_);
        let name = a.name().unwrap_or("").to_string();
        let pmu = pmus.get(&type_).cloned();
        let period = match attr.sampling_policy {
            SamplingPolicy::Period(n) => Some(n.get()),
            _ => None,
        };
        out.attrs.push(AttrInfo {
            kind: classify_attr(&name, type_, config, pmu.as_deref()),
            name,
            type_,
            config,
            pmu,
            layout: SampleLayout {
                sample_type: attr.sample_format.bits(),
                read_format: attr.read_format.bits(),
                branch_sample_type: attr.branch_sample_format.bits(),
                sample_regs_user: attr.sample_regs_user,
                sample_regs_intr: attr.sample_regs_intr,
            },
            period,
        });
    }

    loop {
        let rec = match record_iter.next_record(&mut perf_file) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                let msg = e.to_string();
                return Err(if msg.to_lowercase().contains("eof") || msg.contains("fill whole buffer") {
                    ImportError::Truncated(p, msg)
                } else {
                    ImportError::Parse(p, msg)
                });
            }
        };
        let PerfFileRecord::EventRecord { attr_index, record } = rec else { continue };
        let body = record.data.as_slice();
        match record.record_type {
            RecordType::SAMPLE => {
                let layout = out.attrs.get(attr_index).map(|a| a.layout).unwrap_or_default();
                let s = parse_sample(&body, &layout).map_err(|e| ImportError::Truncated(p.clone(), e.to_string()))?;
                out.samples.push(RawSample { attr_index, sample: s });
            }
            RecordType::LOST_SAMPLES => {
                if body.len() >= 8 {
                    out.lost += u64::from_le_bytes(body[0..8].try_into().unwrap());
                }
            }
            _ => match record.parse() {
                Ok(EventRecord::Comm(c)) => {
                    let name = String::from_utf8_lossy(&c.name.as_slice()).trim_end_matches('\0').to_string();
                    out.comms.insert(c.tid, (c.pid, name));
                }
                Ok(EventRecord::Lost(l)) => out.lost += l.count,
                _ => {}
            },
        }
    }
    Ok(out)
}

/// One sample after decoding and classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemSample {
    pub time: u64,
    pub pid: i32,
    pub tid: i32,
    pub cpu: Option<u32>,
    pub addr: u64,
    pub phys_addr: Option<u64>,
    pub data_src: MemDataSrc,
    pub op: MemOp,
    pub event: &'static str,
    pub source: DataSource,
    pub hops: i8,
    pub latency: u64,
    pub weight: u64,
}

/// Why a sample did not become a trace row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    NonMemoryEvent,
    NotLoadOrStore,
    NoAddress,
}

/// Turns one decoded sample into a memory sample (or says why not).
pub fn to_mem_sample(attr: &AttrInfo, s: &PerfSample, cpu_model: Option<AmdCpu>) -> Result<MemSample, Skip> {
    if attr.kind == EventKind::NonMemory {
        return Err(Skip::NonMemoryEvent);
    }
    let mut data_src = s.data_src;
    let mut addr = s.addr;
    let mut phys = s.phys_addr;
    let mut latency = s.weight.map(|w| Weight::decode(w, s.weight_is_struct).latency);
    if attr.kind == EventKind::IbsOp {
        if let Some(raw) = s.raw.as_deref().and_then(|r| IbsOpRaw::parse(r).ok()) {
            let n = ibs::normalise(&raw, cpu_model, true);
            data_src.get_or_insert(n.data_src);
            if addr.is_none() {
                addr = n.addr;
            }
            if phys.is_none() {
                phys = n.phys_addr;
            }
            if latency.is_none() {
                latency = n.weight_var1;
            }
        }
    }
    let d = MemDataSrc::decode(data_src.unwrap_or(crate::decode::data_src::PERF_MEM_NA));
    let c = d.classify();
    let op = match attr.kind {
        EventKind::PebsLoad => MemOp::Load,
        EventKind::PebsStore => MemOp::Store,
        _ => c.op,
    };
    if d.is_non_memory() && !matches!(attr.kind, EventKind::PebsLoad | EventKind::PebsStore) {
        return Err(Skip::NotLoadOrStore);
    }
    let addr = addr.unwrap_or(0);
    if addr == 0 {
        return Err(Skip::NoAddress);
    }
    let event = match (attr.kind, op) {
        (EventKind::IbsOp, _) => "ibs-op",
        (EventKind::PebsStore, _) | (EventKind::PebsByOp, MemOp::Store) => "pebs-store",
        _ => "pebs-load",
    };
    Ok(MemSample {
        time: s.time.unwrap_or(0),
        pid: s.pid.unwrap_or(-1),
        tid: s.tid.unwrap_or(-1),
        cpu: s.cpu,
        addr,
        phys_addr: phys.filter(|&p| p != 0),
        data_src: d,
        op,
        event,
        source: c.source,
        hops: c.hops,
        latency: latency.unwrap_or(0),
        weight: s.period.or(attr.period).unwrap_or(1).max(1),
    })
}

/// Result of an import.
#[derive(Clone, Debug)]
pub struct ImportSummary {
    pub trace: TraceData,
    pub total_samples: u64,
    pub skipped_non_memory_event: u64,
    pub skipped_not_load_store: u64,
    pub skipped_no_address: u64,
    pub by_source: BTreeMap<String, u64>,
    pub by_event: BTreeMap<String, u64>,
    pub c2c: C2cStats,
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}

/// Imports a perf.data file into an in-memory trace.
pub fn import_perf_data(path: &Path) -> Result<ImportSummary, ImportError> {
    let pd = read_perf_data(path)?;
    let from = file_name(path);
    let amd = pd.cpu_id.as_deref().and_then(AmdCpu::from_cpuid_header);
    let host = pd.hostname.clone().unwrap_or_else(|| "unknown host".into());

    let mut mem = Vec::new();
    let (mut sk_ev, mut sk_op, mut sk_addr) = (0u64, 0u64, 0u64);
    let mut c2c = C2cStats::default();
    for rs in &pd.samples {
        let attr = &pd.attrs[rs.attr_index];
        if attr.kind != EventKind::NonMemory {
            if let Some(ds) = rs.sample.data_src {
                c2c.add(&MemDataSrc::decode(ds), rs.sample.addr.unwrap_or(0));
            }
        }
        match to_mem_sample(attr, &rs.sample, amd) {
            Ok(m) => mem.push(m),
            Err(Skip::NonMemoryEvent) => sk_ev += 1,
            Err(Skip::NotLoadOrStore) => sk_op += 1,
            Err(Skip::NoAddress) => sk_addr += 1,
        }
    }
    mem.sort_by_key(|m| m.time);
    let t0 = pd.samples.iter().filter_map(|s| s.sample.time).min().unwrap_or(0);
    let t1 = pd.samples.iter().filter_map(|s| s.sample.time).max().unwrap_or(t0);
    let us = |t: u64| -> u32 { (t.saturating_sub(t0) / 1000).min(u32::MAX as u64) as u32 };

    // machine
    let mut m = crate::record::empty_manifest();
    m.origin = Origin {
        kind: "imported".into(),
        generator: "numascope import".into(),
        seed: None,
        model: None,
        description: format!(
            "Imported from perf.data {from} (recorded on {host}, kernel {}, perf {})",
            pd.os_release.as_deref().unwrap_or("unknown"),
            pd.perf_version.as_deref().unwrap_or("unknown")
        ),
        command: pd.cmdline.clone().unwrap_or_default(),
        from: Some(serde_json::Value::String(from.clone())),
    };
    let mach = &mut m.machine;
    mach.name = host.clone();
    mach.source = format!("perf.data:{from}");
    mach.kernel = pd.os_release.clone();
    mach.cpu_model = pd.cpu_desc.clone();
    mach.page_size_bytes = 4096;
    let nodes_known = pd.numa_nodes.as_ref().is_some_and(|n| !n.is_empty());
    if let Some(nodes) = pd.numa_nodes.as_ref().filter(|n| !n.is_empty()) {
        for (id, kb, cpus) in nodes {
            mach.nodes.push(MachineNode {
                id: *id,
                cpus: cpus.clone(),
                memory_bytes: Some(kb * 1024),
                memory_bandwidth_gbps: None,
            });
        }
        mach.provenance.memory_bytes =
            "documented:perf.data NUMA_TOPOLOGY header (node MemTotal at record time)".into();
    } else {
        let n = pd.nr_cpus.unwrap_or(1);
        mach.nodes.push(MachineNode {
            id: 0,
            cpus: (0..n).collect(),
            memory_bytes: pd.total_mem_kb.map(|k| k * 1024),
            memory_bandwidth_gbps: None,
        });
        mach.provenance.memory_bytes =
            "estimated:perf.data has no NUMA_TOPOLOGY header; one node holding TOTAL_MEM and all NRCPUS cpus assumed"
                .into();
    }
    let nn = mach.nodes.len();
    mach.distances = (0..nn).map(|i| (0..nn).map(|j| if i == j { 10 } else { 20 }).collect()).collect();
    mach.provenance.distances = "estimated:perf.data records no SLIT distances; default 10 local / 20 remote".into();
    mach.provenance.latencies_ns = "unavailable:not recorded in perf.data".into();
    mach.provenance.links = "unavailable:not recorded in perf.data".into();
    mach.provenance.memory_bandwidth_gbps = "unavailable:not recorded in perf.data".into();
    let single_node = nodes_known && nn == 1;

    // threads
    let mut threads = Threads::default();
    let mut tindex: HashMap<i32, u32> = HashMap::new();
    for s in &mem {
        let idx = *tindex.entry(s.tid).or_insert_with(|| {
            let (pid, name) = pd.comms.get(&s.tid).cloned().unwrap_or((s.pid, String::new()));
            threads.tid.push(s.tid);
            threads.pid.push(if s.pid >= 0 { s.pid } else { pid });
            threads.name.push(name);
            threads.first_seen_us.push(us(s.time));
            threads.last_seen_us.push(us(s.time));
            threads.migrations.push(-1);
            (threads.tid.len() - 1) as u32
        });
        threads.last_seen_us[idx as usize] = us(s.time);
    }

    // pages + samples
    let mut pages = Pages::default();
    let mut pindex: HashMap<u64, i32> = HashMap::new();
    let mut samples = Samples::default();
    let mut by_source = BTreeMap::new();
    let mut by_event = BTreeMap::new();
    let mut any_latency = false;
    let mut any_phys = false;
    for s in &mem {
        let page_addr = s.addr & !0xfff;
        let node: i8 = if single_node && s.phys_addr.is_some() { mach_node0(&m.machine) } else { -1 };
        any_phys |= s.phys_addr.is_some();
        let pi = *pindex.entry(page_addr).or_insert_with(|| {
            pages.address.push(page_addr);
            pages.region.push(-1);
            pages.node.push(-1);
            pages.page_size.push(0);
            pages.first_touch_us.push(-1);
            pages.first_touch_thread.push(-1);
            pages.first_touch_cpu.push(-1);
            (pages.address.len() - 1) as i32
        });
        if node >= 0 {
            pages.node[pi as usize] = node;
        }
        samples.time_us.push(us(s.time));
        samples.thread.push(tindex[&s.tid]);
        samples.cpu.push(s.cpu.map(|c| c as i16).unwrap_or(-1));
        samples.page.push(pi);
        samples.offset.push((s.addr & 0xfff) as u16);
        samples.op.push(s.op.as_str());
        samples.event.push(s.event);
        samples.data_source.push(s.source.as_str());
        samples.hops.push(s.hops);
        samples.node.push(node);
        samples.latency_cycles.push(s.latency.min(u32::MAX as u64) as u32);
        samples.weight.push(s.weight.min(u32::MAX as u64) as u32);
        any_latency |= s.latency > 0;
        *by_source.entry(s.source.as_str().to_string()).or_insert(0u64) += 1;
        *by_event.entry(s.event.to_string()).or_insert(0u64) += 1;
    }

    // capture
    let cap = &mut m.capture;
    cap.start_monotonic_ns = t0.to_string();
    cap.start_unix_ms = 0;
    cap.duration_us = t1.saturating_sub(t0) / 1000;
    cap.stop_reason = "duration".into();
    let reason_base = format!(
        "imported from perf.data recorded on {host} (kernel {}, perf {})",
        pd.os_release.as_deref().unwrap_or("unknown"),
        pd.perf_version.as_deref().unwrap_or("unknown")
    );
    for id in crate::probe::SOURCE_IDS {
        let used = by_event.get(id).copied().unwrap_or(0);
        let attr_names: Vec<&str> = pd
            .attrs
            .iter()
            .filter(|a| match id {
                "ibs-op" => a.kind == EventKind::IbsOp,
                "pebs-load" => matches!(a.kind, EventKind::PebsLoad | EventKind::PebsByOp),
                "pebs-store" => matches!(a.kind, EventKind::PebsStore | EventKind::PebsByOp),
                _ => false,
            })
            .map(|a| a.name.as_str())
            .collect();
        let (status, reason, period) = if used > 0 || !attr_names.is_empty() {
            let per = pd.attrs.iter().find(|a| attr_names.contains(&a.name.as_str())).and_then(|a| a.period);
            ("used", format!("{reason_base}: event {} ({used} memory samples)", attr_names.join(", ")), per)
        } else {
            ("not-requested", "not in the imported perf.data".to_string(), None)
        };
        cap.sources.push(SourceStatus {
            id: id.into(),
            status: status.into(),
            reason: Some(reason),
            sample_period: period,
            interval_ms: None,
        });
    }
    for metric in crate::probe::METRICS {
        let (status, reason) = match metric {
            "memory-accesses" | "data-source" if !mem.is_empty() => {
                ("measured", format!("{reason_base}: sampled loads/stores with data_src"))
            }
            "access-latency" if any_latency => {
                ("measured", format!("{reason_base}: sample weight (load latency, core cycles)"))
            }
            "page-placement" if any_phys && single_node => {
                ("measured", format!("{reason_base}: physical addresses on a single-node machine (node 0)"))
            }
            _ => ("unavailable", "not in a perf.data import".to_string()),
        };
        cap.capabilities.push(Capability { metric: metric.into(), status: status.into(), reason });
    }
    cap.lost_samples = pd.lost;
    cap.notes.push(format!(
        "{} samples in the file: {} imported, {} skipped (not a memory event), {} skipped (data_src op N/A: not a load or store), {} skipped (load/store without a data address)",
        pd.samples.len(),
        mem.len(),
        sk_ev,
        sk_op,
        sk_addr
    ));
    cap.notes.push(format!(
        "events: {}",
        pd.attrs
            .iter()
            .map(|a| format!(
                "{} (type {}, config {:#x}, sample_type {:#x}) -> {:?}",
                a.name, a.type_, a.config, a.layout.sample_type, a.kind
            ))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    cap.notes.push(if single_node {
        "sample node: 0 where a physical address was sampled (single-node machine), else -1".into()
    } else {
        "sample node: -1 (perf.data does not say which node a physical address belongs to)".into()
    });
    cap.notes.push("times are perf_clock (sched_clock) nanoseconds; startUnixMs is unknown (0)".into());

    let mut trace = TraceData {
        manifest: m,
        samples,
        pages,
        threads,
        regions: Regions::default(),
        thread_placements: ThreadPlacements::default(),
        region_placements: RegionPlacements::default(),
        counters: Counters::default(),
        events: Events::default(),
    };
    trace.manifest.capture.sample_count = trace.samples.len() as u64;
    if pd.lost > 0 {
        trace.events.time_us.push(0);
        trace.events.kind.push("lost-samples");
        trace.events.thread.push(-1);
        trace.events.value.push(pd.lost as i64);
        trace.events.detail.push(format!("{} samples lost (PERF_RECORD_LOST / LOST_SAMPLES)", pd.lost));
    }
    Ok(ImportSummary {
        trace,
        total_samples: pd.samples.len() as u64,
        skipped_non_memory_event: sk_ev,
        skipped_not_load_store: sk_op,
        skipped_no_address: sk_addr,
        by_source,
        by_event,
        c2c,
    })
}

fn mach_node0(m: &Machine) -> i8 {
    m.nodes.first().map(|n| n.id as i8).unwrap_or(0)
}

/// Imports and writes `out`.
pub fn import_to_file(path: &Path, out: &Path) -> Result<ImportSummary, ImportError> {
    let mut s = import_perf_data(path)?;
    s.trace.manifest.created_at = crate::time::iso8601_utc(crate::time::unix_now_ms());
    crate::trace::writer::write_trace(&mut s.trace, out)?;
    Ok(s)
}
