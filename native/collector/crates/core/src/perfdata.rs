//! `numascope import`: perf.data (from `perf mem record`, `perf c2c record`,
//! `perf record -e ibs_op//`) → a numascope v1 trace.
//!
//! The file is untrusted (docs/robustness.md, "perf.data import (Rust)"). The container is
//! checked by [`crate::decode::perf_file`] before anything is allocated from it: header,
//! section table, feature sections and attrs against the file's length and limits; then
//! `linux-perf-data` 0.13.0 reads the header, the attrs (of any size) and the feature sections,
//! behind `catch_unwind` as a last line of defence; the records (framing, AUXTRACE, zstd
//! compression) are walked by [`crate::decode::perf_file::walk_records`], which bounds every
//! size and names the offset of a bad record; sample bodies are decoded by
//! [`crate::decode::sample`] because the crate's reader drops DATA_SRC/WEIGHT and misparses
//! WEIGHT_STRUCT (platform.md Q3). Header strings become valid UTF-8 (lossy). Metadata
//! features (hostname, cpus, NUMA topology, ...) that do not decode are ignored with a note
//! in the manifest; structural damage (sizes, offsets, records) is an [`ImportError`].
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
use std::io::{BufReader, Seek, SeekFrom};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::{PerfEventType, SamplingPolicy};
use linux_perf_data::{Feature, PerfFile, PerfFileReader};

use crate::decode::data_src::{C2cStats, DataSource, MemDataSrc, MemOp};
use crate::decode::ibs::AmdCpu;
use crate::decode::mem_sample::classify_attr;
pub use crate::decode::mem_sample::{to_mem_sample, AttrInfo, EventKind, MemSample, Skip};
use crate::decode::perf_file::{
    self, clean_string, feature, record_type, FileLayout, FormatError, RawRecord, SectionCursor,
};
use crate::decode::sample::{
    parse_sample, PerfSample, SampleLayout, SAMPLE_ADDR, SAMPLE_ID, SAMPLE_IDENTIFIER, SAMPLE_IP, SAMPLE_TID,
    SAMPLE_TIME,
};
use crate::topology::{clock_in_model_name, MAX_CLOCK_GHZ, MIN_CLOCK_GHZ};
use crate::trace::*;

/// Node ids a trace can hold (its `node` columns are int8).
pub const MAX_NODES: usize = 128;
/// Cpu ids a trace can hold (its `cpu` columns are int16).
pub const MAX_CPUS: u32 = 32_768;
/// Longest header string kept (hostname, kernel, cpu description, one command-line word).
pub const MAX_HEADER_STRING: usize = 4096;
/// Longest thread name kept (the kernel's is 16 bytes).
pub const MAX_COMM: usize = 64;

/// Why a perf.data file could not be imported. Every variant names the file and says what
/// to do; [`ImportError::kind`] is a stable short name for scripts and the fuzz harness.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: cannot read the file: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(
        "{path}: not a perf.data file: {detail}; expected the \"PERFILE2\" magic of a file written by `perf record`"
    )]
    NotPerfData { path: String, detail: String },
    #[error("{path}: unsupported perf.data: {what}; {hint}")]
    Unsupported { path: String, what: String, hint: String },
    #[error("{path}: perf.data is truncated: {what}; re-copy the file (or let perf finish writing it)")]
    Truncated { path: String, what: String },
    #[error("{path}: perf.data is corrupt: {what}; the file is damaged: re-copy it or record it again")]
    Corrupt { path: String, what: String },
    #[error("{path}: perf.data exceeds an import limit: {what}; {hint}")]
    Limit { path: String, what: String, hint: String },
    /// An error reported by linux-perf-data for a file that passed our checks.
    #[error("{path}: cannot read perf.data: {what}; check the file with `perf report --header-only -i FILE`")]
    Parse { path: String, what: String },
    /// A panic caught around linux-perf-data (never expected: the checks come first).
    #[error("{path}: internal error while reading perf.data ({what}); please report it with the file")]
    Internal { path: String, what: String },
    #[error("{path}: cannot write the trace there: {what}")]
    Output { path: String, what: String },
    #[error("writing the trace: {0}")]
    Trace(#[from] TraceError),
}

impl ImportError {
    /// Stable short name of the error class: `io`, `not-perf-data`, `unsupported`,
    /// `truncated`, `corrupt`, `limit`, `parse`, `internal`, `output`, `trace`.
    pub fn kind(&self) -> &'static str {
        match self {
            ImportError::Io { .. } => "io",
            ImportError::NotPerfData { .. } => "not-perf-data",
            ImportError::Unsupported { .. } => "unsupported",
            ImportError::Truncated { .. } => "truncated",
            ImportError::Corrupt { .. } => "corrupt",
            ImportError::Limit { .. } => "limit",
            ImportError::Parse { .. } => "parse",
            ImportError::Internal { .. } => "internal",
            ImportError::Output { .. } => "output",
            ImportError::Trace(_) => "trace",
        }
    }

    fn from_format(path: &str, e: FormatError) -> Self {
        let path = path.to_string();
        match e {
            FormatError::NotPerfData(detail) => ImportError::NotPerfData { path, detail },
            FormatError::Truncated(what) => ImportError::Truncated { path, what },
            FormatError::Corrupt(what) => ImportError::Corrupt { path, what },
            FormatError::Unsupported { what, hint } => ImportError::Unsupported { path, what, hint },
            FormatError::Limit { what, hint } => ImportError::Limit { path, what, hint },
            FormatError::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => ImportError::Truncated {
                path,
                what: "the file ended while it was being read (it shrank, or a size check missed a case)".into(),
            },
            FormatError::Io(source) => ImportError::Io { path, source },
        }
    }
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
    /// The first TIME_CONV record's (time_shift, time_mult): ns = (cycles × time_mult) >> time_shift
    /// for the time-stamp counter (x86: the TSC), so the counter's rate is 2^time_shift / time_mult GHz.
    pub time_conv: Option<(u64, u64)>,
    /// Header features that were present but could not be used, and why.
    pub notes: Vec<String>,
    /// Executable file mappings from the MMAP and MMAP2 records (at most
    /// [`crate::sources::pagefault::MAX_CODE_MAPPINGS`]), for the samples' code locations.
    pub code_mappings: Vec<crate::sources::callchain::CodeMapping>,
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

/// NUMA_TOPOLOGY feature: u32 nr; per node u32 id, u64 mem_total kB, u64 mem_free kB, string
/// cpulist. At most [`MAX_NODES`] nodes with distinct ids below [`MAX_NODES`].
pub fn numa_topology(b: &[u8], offset: u64) -> Result<Vec<(u32, u64, Vec<u32>)>, FormatError> {
    let mut c = SectionCursor::new(b, offset, "the NUMA_TOPOLOGY feature section");
    let nr = c.u32("the node count")?;
    if nr as usize > MAX_NODES {
        return Err(FormatError::Limit {
            what: format!("{nr} nodes; a trace holds at most {MAX_NODES}"),
            hint: String::new(),
        });
    }
    let mut out: Vec<(u32, u64, Vec<u32>)> = Vec::with_capacity(nr as usize);
    for _ in 0..nr {
        let id = c.u32("a node id")?;
        let total = c.u64("a node's MemTotal")?;
        let _free = c.u64("a node's MemFree")?;
        let list = c.string("a node's cpu list", MAX_HEADER_STRING)?;
        if id as usize >= MAX_NODES || out.iter().any(|n| n.0 == id) {
            return Err(FormatError::Corrupt(format!(
                "node id {id} is repeated or beyond the {MAX_NODES} ids a trace can hold"
            )));
        }
        let cpus = crate::topology::parse_cpulist_limited(&list, MAX_CPUS)
            .map_err(|e| FormatError::Corrupt(format!("node {id}: {e}")))?;
        out.push((id, total, cpus));
    }
    Ok(out)
}

/// NUMA_TOPOLOGY feature (see [`numa_topology`]); `None` if it does not decode.
pub fn parse_numa_topology(b: &[u8]) -> Option<Vec<(u32, u64, Vec<u32>)>> {
    numa_topology(b, 0).ok()
}

/// PMU_MAPPINGS feature: u32 nr; per pmu u32 type, string name. Stops at the first entry
/// that does not fit.
fn parse_pmu_mappings(b: &[u8]) -> HashMap<u32, String> {
    let mut m = HashMap::new();
    let mut c = SectionCursor::new(b, 0, "the PMU_MAPPINGS feature section");
    let Ok(nr) = c.u32("the count") else { return m };
    for _ in 0..nr {
        let Ok(t) = c.u32("a pmu type") else { break };
        let Ok(name) = c.string("a pmu name", 256) else { break };
        m.insert(t, name);
    }
    m
}

/// CMDLINE feature: u32 nr; nr strings.
fn parse_cmdline(b: &[u8], offset: u64) -> Result<Vec<String>, FormatError> {
    let mut c = SectionCursor::new(b, offset, "the CMDLINE feature section");
    let nr = c.u32("the word count")? as usize;
    if nr > c.remaining() / 4 {
        return Err(FormatError::Corrupt(format!(
            "{nr} words cannot fit in the section's {} remaining bytes",
            c.remaining()
        )));
    }
    (0..nr).map(|_| c.string("a word", MAX_HEADER_STRING)).collect()
}

fn format_reason(e: &FormatError) -> String {
    match e {
        FormatError::Truncated(w) | FormatError::Corrupt(w) | FormatError::NotPerfData(w) => w.clone(),
        FormatError::Unsupported { what, .. } | FormatError::Limit { what, .. } => what.clone(),
        FormatError::Io(e) => e.to_string(),
    }
}

/// Feature metadata, decoded leniently: what does not decode is left out with a note.
fn read_metadata(pf: &PerfFile, layout: &FileLayout, out: &mut PerfDataContents) {
    let offset = |bit: u32| layout.features.iter().find(|(b, _)| *b == bit).map(|(_, s)| s.offset).unwrap_or(0);
    let data = |bit: u32| pf.feature_section_data(Feature(bit));
    let mut notes = Vec::new();
    let mut string = |bit: u32| -> Option<String> {
        let b = data(bit)?;
        let mut c = SectionCursor::new(b, offset(bit), "the feature section");
        match c.string("the string", MAX_HEADER_STRING) {
            Ok(s) => Some(s),
            Err(e) => {
                notes.push(format!("{} header ignored: {}", feature::name(bit), format_reason(&e)));
                None
            }
        }
    };
    out.hostname = string(feature::HOSTNAME);
    out.os_release = string(feature::OSRELEASE);
    out.cpu_desc = string(feature::CPUDESC);
    out.cpu_id = string(feature::CPUID);
    out.perf_version = string(feature::VERSION);
    if let Some(b) = data(feature::NRCPUS) {
        match b.get(0..4).map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]])) {
            Some(n) if (1..=MAX_CPUS).contains(&n) => out.nr_cpus = Some(n),
            Some(n) => notes.push(format!("NRCPUS header ignored: {n} cpus (a trace holds 1 to {MAX_CPUS})")),
            None => notes.push(format!("NRCPUS header ignored: {} bytes, expected 8", b.len())),
        }
    }
    if let Some(b) = data(feature::TOTAL_MEM) {
        match b.get(0..8).map(|x| u64::from_le_bytes(x.try_into().unwrap_or([0; 8]))) {
            Some(kb) if kb.checked_mul(1024).is_some() => out.total_mem_kb = Some(kb),
            Some(kb) => notes.push(format!("TOTAL_MEM header ignored: {kb} kB overflows a byte count")),
            None => notes.push(format!("TOTAL_MEM header ignored: {} bytes, expected 8", b.len())),
        }
    }
    if let Some(b) = data(feature::NUMA_TOPOLOGY) {
        match numa_topology(b, offset(feature::NUMA_TOPOLOGY)) {
            Ok(nodes) => {
                if nodes.iter().any(|n| n.1.checked_mul(1024).is_none()) {
                    notes.push("NUMA_TOPOLOGY header ignored: a node's MemTotal overflows a byte count".into());
                } else {
                    out.numa_nodes = Some(nodes);
                }
            }
            Err(e) => notes.push(format!("NUMA_TOPOLOGY header ignored: {}", format_reason(&e))),
        }
    }
    if let Some(b) = data(feature::CMDLINE) {
        match parse_cmdline(b, offset(feature::CMDLINE)) {
            Ok(v) => out.cmdline = Some(v),
            Err(e) => notes.push(format!("CMDLINE header ignored: {}", format_reason(&e))),
        }
    }
    out.notes = notes;
}

/// Byte offset of the event id in a SAMPLE body of this layout (IDENTIFIER first, else ID
/// after IP, TID, TIME, ADDR), as linux-perf-data finds a sample's attr.
fn sample_id_offset(layout: &SampleLayout) -> Option<usize> {
    let st = layout.sample_type;
    if st & SAMPLE_IDENTIFIER != 0 {
        Some(0)
    } else if st & SAMPLE_ID != 0 {
        Some(8 * (st & (SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_ADDR)).count_ones() as usize)
    } else {
        None
    }
}

/// A perf.data file whose header, attrs and features have been read.
struct OpenedPerfData {
    path: String,
    file: File,
    layout: FileLayout,
    contents: PerfDataContents,
    /// Event id → attr index (later attrs win, as in linux-perf-data).
    id_to_attr: HashMap<u64, usize>,
}

fn io_err(path: &str) -> impl Fn(std::io::Error) -> ImportError + '_ {
    move |source| ImportError::Io { path: path.to_string(), source }
}

/// A linux-perf-data error for a file that passed our checks, as a typed error.
fn crate_error(path: String, e: linux_perf_data::Error) -> ImportError {
    use linux_perf_data::{Error as E, ReadError};
    let what = e.to_string();
    match e {
        E::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => ImportError::Truncated {
            path,
            what: format!("the file ends inside its header, attrs or feature sections ({what})"),
        },
        E::Read(ReadError::PerfEventAttr) => ImportError::Corrupt {
            path,
            what: "an event attribute (perf_event_attr) does not decode: unknown event type, hardware event, \
                   cache event or clock id"
                .into(),
        },
        E::Read(_) | E::InvalidPerfEventSize | E::InconsistentAttributeSizes(..) | E::NoAttributes => {
            ImportError::Corrupt { path, what }
        }
        E::NoIdentifierDespiteMultiEvent(_) | E::InconsistentSampleIdAllWithMultiEvent(_) => ImportError::Unsupported {
            path,
            what: format!("several events whose records cannot be told apart ({what})"),
            hint: "record with a perf that writes IDENTIFIER and sample_id_all for every event".into(),
        },
        _ => ImportError::Parse { path, what },
    }
}

fn open_perf_data(path: &Path) -> Result<OpenedPerfData, ImportError> {
    let p = path.display().to_string();
    let not_regular = || ImportError::Io {
        path: p.clone(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a pipe or device cannot be imported: save the stream to a file first)",
        ),
    };
    // Checked before opening too: opening a FIFO would wait for a writer.
    if !std::fs::metadata(path).map_err(io_err(&p))?.is_file() {
        return Err(not_regular());
    }
    let file = File::open(path).map_err(io_err(&p))?;
    let meta = file.metadata().map_err(io_err(&p))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let len = meta.len();
    let mut r = BufReader::new(&file);
    let layout = perf_file::check_file_layout(&mut r, len).map_err(|e| ImportError::from_format(&p, e))?;
    drop(r);

    // linux-perf-data reads the checked header, attrs and feature sections, through the same
    // open file (a path swapped meanwhile is not read).
    let mut reader = BufReader::new(&file);
    reader.seek(SeekFrom::Start(0)).map_err(io_err(&p))?; // the crate reads from where it is
    let parsed = catch_unwind(AssertUnwindSafe(|| {
        if layout.pipe {
            PerfFileReader::parse_pipe(reader).map(|r| r.perf_file)
        } else {
            PerfFileReader::parse_file(reader).map(|r| r.perf_file)
        }
    }));
    let perf_file = match parsed {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => return Err(crate_error(p, e)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic in linux-perf-data".into());
            return Err(ImportError::Internal { path: p, what: format!("linux-perf-data panicked: {what}") });
        }
    };

    let mut out = PerfDataContents::default();
    read_metadata(&perf_file, &layout, &mut out);
    let pmus = perf_file.feature_section_data(Feature::PMU_MAPPINGS).map(parse_pmu_mappings).unwrap_or_default();
    let mut id_to_attr = HashMap::new();
    for (i, a) in perf_file.event_attributes().iter().enumerate() {
        let attr = a.attributes();
        let (type_, config) = type_and_config(&attr.type_);
        let first_id = a.ids().first().copied();
        for id in a.ids() {
            id_to_attr.insert(*id, i);
        }
        // The name from our own EVENT_DESC walk (lossy UTF-8): by position in a normal file,
        // by first event id in a pipe-mode one.
        let desc = layout.event_desc.as_ref().and_then(|ev| {
            if layout.pipe {
                ev.iter().find(|e| e.first_id.is_some() && e.first_id == first_id)
            } else {
                ev.get(i)
            }
        });
        let name = match desc {
            Some(d) => d.name.clone(),
            None => clean_string(a.name().unwrap_or("").as_bytes(), perf_file::MAX_NAME),
        };
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
    if out.attrs.is_empty() {
        return Err(ImportError::Corrupt { path: p, what: "the file describes no events".into() });
    }
    Ok(OpenedPerfData { path: p, file, layout, contents: out, id_to_attr })
}

impl OpenedPerfData {
    /// Walks the records: samples go to `on_sample` (attrs, attr index, sample), COMM and LOST
    /// records into the contents.
    fn read_records(
        &mut self,
        mut on_sample: impl FnMut(&[AttrInfo], usize, PerfSample, &[u8]),
    ) -> Result<(), ImportError> {
        let out = &mut self.contents;
        let attrs = &out.attrs;
        let id_offset = if attrs.len() > 1 { sample_id_offset(&attrs[0].layout) } else { None };
        let id_to_attr = &self.id_to_attr;
        let comms = &mut out.comms;
        let lost = &mut out.lost;
        let time_conv = &mut out.time_conv;
        let code_mappings = &mut out.code_mappings;
        let short = |rec: &RawRecord, name: &str, need: usize| {
            FormatError::Corrupt(format!(
                "{name} record at {} has a {}-byte body; it needs at least {need}",
                rec.place(),
                rec.body.len()
            ))
        };
        let le64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let mut r = BufReader::with_capacity(1 << 18, &self.file);
        let stats = perf_file::walk_records(&mut r, self.layout.records, self.layout.pipe, |rec| {
            match rec.type_ {
                record_type::SAMPLE => {
                    let index = id_offset
                        .and_then(|o| rec.body.get(o..o + 8))
                        .and_then(|id| id_to_attr.get(&le64(id)).copied())
                        .filter(|&i| i < attrs.len())
                        .unwrap_or(0);
                    let attr = &attrs[index];
                    let s = parse_sample(rec.body, &attr.layout).map_err(|e| {
                        FormatError::Corrupt(format!(
                            "SAMPLE record at {} (event {:?}, sample_type {:#x}): {e}",
                            rec.place(),
                            attr.name,
                            attr.layout.sample_type
                        ))
                    })?;
                    on_sample(attrs, index, s, rec.body);
                }
                record_type::COMM => {
                    if rec.body.len() < 8 {
                        return Err(short(rec, "COMM", 8));
                    }
                    let pid = i32::from_le_bytes([rec.body[0], rec.body[1], rec.body[2], rec.body[3]]);
                    let tid = i32::from_le_bytes([rec.body[4], rec.body[5], rec.body[6], rec.body[7]]);
                    comms.insert(tid, (pid, clean_string(&rec.body[8..], MAX_COMM)));
                }
                record_type::LOST => {
                    if rec.body.len() < 16 {
                        return Err(short(rec, "LOST", 16));
                    }
                    *lost = lost.saturating_add(le64(&rec.body[8..16]));
                }
                record_type::MMAP | record_type::MMAP2 => {
                    if let Some(m) = decode_mmap(rec.type_, rec.misc, rec.body) {
                        if code_mappings.len() < crate::sources::pagefault::MAX_CODE_MAPPINGS
                            && !code_mappings.contains(&m)
                        {
                            code_mappings.push(m);
                        }
                    }
                }
                record_type::TIME_CONV if time_conv.is_none() && rec.body.len() >= 16 => {
                    *time_conv = Some((le64(&rec.body[0..8]), le64(&rec.body[8..16])));
                }
                record_type::LOST_SAMPLES => {
                    if rec.body.len() < 8 {
                        return Err(short(rec, "LOST_SAMPLES", 8));
                    }
                    *lost = lost.saturating_add(le64(&rec.body[0..8]));
                }
                _ => {}
            }
            Ok(())
        })
        .map_err(|e| ImportError::from_format(&self.path, e))?;
        if let Some((at, left)) = stats.cut_at {
            out.notes.push(format!(
                "the pipe-mode stream ends inside the record at offset {at}: its last {left} bytes were not imported \
                 (perf says \"unexpected end of event stream\" and keeps the rest too)"
            ));
        }
        Ok(())
    }
}

/// The code locations of an import, interned per process (address space): each sample's
/// instruction, then the return addresses of its user call chain where the file has them
/// (`perf record -g`, `perf c2c record -g`, `perf mem record -g`).
#[derive(Default)]
struct ImportedCode {
    spaces: HashMap<i32, u16>,
    stacks: crate::sources::callchain::CallStacks,
    /// Samples whose code location has return addresses from a call chain.
    with_chain: u64,
    /// Reused buffers.
    user: Vec<u64>,
    chain: Vec<u64>,
}

impl ImportedCode {
    /// The stack id of a sample of process `pid` at instruction `ip` with the raw callchain
    /// `entries` (empty: none), -1 without an instruction. The stack is `ip`, then the chain's
    /// user return addresses: a sample taken in the kernel keeps its kernel instruction innermost
    /// (as perf c2c and perf mem report it), followed by the user code that entered the kernel.
    fn stack_of(&mut self, pid: i32, ip: u64, entries: &[u8]) -> i32 {
        if ip == 0 || pid < 0 || (self.spaces.len() >= 0xfffe && !self.spaces.contains_key(&pid)) {
            return -1;
        }
        let next = self.spaces.len() as u16;
        let space = *self.spaces.entry(pid).or_insert(next);
        crate::sources::callchain::user_addresses(entries, &mut self.user);
        let kernel_ip = ip >= 1 << 47;
        // The chain's first user entry is the sampled instruction itself for a user sample.
        let returns = if !kernel_ip && self.user.first() == Some(&ip) { &self.user[1..] } else { &self.user[..] };
        let returns = &returns[..returns.len().min(crate::sources::callchain::MAX_CHAIN_ENTRIES as usize)];
        self.chain.clear();
        self.chain.push(crate::recorder::code::space_address(space, ip));
        self.chain.extend(returns.iter().map(|&a| crate::recorder::code::space_address(space, a)));
        if !returns.is_empty() {
            self.with_chain += 1;
        }
        match self.stacks.intern(&self.chain, 0) {
            crate::sources::callchain::NO_STACK => -1,
            id => id as i32,
        }
    }
}

/// Code locations of an import: each sample's instruction (interned per process in `stacks`, its
/// process's space index in `spaces`) in the module its process had mapped there.
fn import_code_locations(
    trace: &mut TraceData,
    mappings: &[crate::sources::callchain::CodeMapping],
    code: &ImportedCode,
) {
    let (spaces, stacks) = (&code.spaces, &code.stacks);
    // Code locations: each sample's instruction in the module its process had mapped there.
    let space_maps: Vec<crate::sources::callchain::CodeMapping> = mappings
        .iter()
        .filter_map(|c| {
            let &sp = spaces.get(&(c.pid as i32))?;
            let addr = |a: u64| crate::recorder::code::space_address(sp, a);
            (c.end <= 1 << 47).then(|| crate::sources::callchain::CodeMapping {
                start: addr(c.start),
                end: addr(c.end - 1) + 1,
                ..c.clone()
            })
        })
        .collect();
    let mut code_notes = Vec::new();
    let code = crate::recorder::code::attach_from(
        trace,
        stacks,
        &space_maps,
        crate::recorder::code::Source::Imported { chains: code.with_chain },
        &mut code_notes,
    );
    code.update_capabilities(&mut trace.manifest.capture.capabilities);
    trace.manifest.capture.notes.extend(code_notes);
}

/// An executable file mapping of a perf.data MMAP (`u32 pid, tid; u64 addr, len, pgoff; char
/// filename[]`; data mappings carry PERF_RECORD_MISC_MMAP_DATA) or MMAP2 record (`… pgoff; u32
/// maj, min; u64 ino, ino_generation` or a build id; `u32 prot, flags; char filename[]`: code
/// when prot has PROT_EXEC). The trailing sample_id (if any) follows the NUL-padded name. None
/// for data, anonymous and pseudo (`[vdso]`, `//anon`) mappings, and for malformed records.
fn decode_mmap(ty: u32, misc: u16, b: &[u8]) -> Option<crate::sources::callchain::CodeMapping> {
    const PERF_RECORD_MISC_MMAP_DATA: u16 = 1 << 13;
    let u32_at = |o: usize| b.get(o..o + 4).map(|x| u32::from_le_bytes(x.try_into().unwrap()));
    let u64_at = |o: usize| b.get(o..o + 8).map(|x| u64::from_le_bytes(x.try_into().unwrap()));
    let pid = u32_at(0)?;
    let (start, len, pgoff) = (u64_at(8)?, u64_at(16)?, u64_at(24)?);
    let name_at = if ty == record_type::MMAP2 {
        let prot = u32_at(56)?;
        if prot & libc::PROT_EXEC as u32 == 0 {
            return None;
        }
        64
    } else {
        if misc & PERF_RECORD_MISC_MMAP_DATA != 0 {
            return None;
        }
        32
    };
    let name = b.get(name_at..)?;
    let name = &name[..name.iter().position(|&c| c == 0)?];
    if name.first() != Some(&b'/') || len == 0 {
        return None;
    }
    Some(crate::sources::callchain::CodeMapping {
        pid,
        start,
        end: start.checked_add(len)?,
        pgoff,
        path: String::from_utf8_lossy(name).into_owned(),
        time_ns: 0,
    })
}

/// Reads every sample, COMM and LOST record of a perf.data file.
pub fn read_perf_data(path: &Path) -> Result<PerfDataContents, ImportError> {
    let mut f = open_perf_data(path)?;
    let mut samples = Vec::new();
    f.read_records(|_, attr_index, sample, _| samples.push(RawSample { attr_index, sample }))?;
    f.contents.samples = samples;
    Ok(f.contents)
}

/// A memory sample as kept until the trace is built: 56 bytes instead of a [`MemSample`]'s
/// 184, since a file of small memory samples is mostly this.
struct Row {
    time: u64,
    addr: u64,
    pid: i32,
    tid: i32,
    latency: u32,
    weight: u32,
    cpu: i16,
    phys: bool,
    op: MemOp,
    source: DataSource,
    hops: i8,
    event: &'static str,
    /// perf c2c's HITM class (`data_src::hitm_class`), -1 without DATA_SRC.
    hitm: i8,
    /// The code location: the sampled instruction (PERF_SAMPLE_IP) and the user call chain
    /// (PERF_SAMPLE_CALLCHAIN) interned in [`ImportedCode`], -1 without an instruction.
    stack: i32,
}

impl From<&MemSample> for Row {
    fn from(m: &MemSample) -> Self {
        Row {
            time: m.time,
            addr: m.addr,
            pid: m.pid,
            tid: m.tid,
            latency: u32::try_from(m.latency).unwrap_or(u32::MAX),
            weight: u32::try_from(m.weight).unwrap_or(u32::MAX),
            cpu: m.cpu.and_then(|c| i16::try_from(c).ok()).unwrap_or(-1),
            phys: m.phys_addr.is_some(),
            op: m.op,
            source: m.source,
            hops: m.hops,
            event: m.event,
            hitm: -1,
            stack: -1,
        }
    }
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

/// Trace times are µs since the start up to 2^53 - 1 (285 years, the trace readers' limit,
/// trace/limits.rs): a wider span can only come from a damaged timestamp, and is refused with
/// what to do rather than written with clamped times.
fn check_span(path: &Path, t0: u64, t1: u64) -> Result<(), ImportError> {
    let span_us = (t1 - t0) / 1000;
    if span_us > crate::trace::limits::MAX_TIME_US as u64 {
        return Err(ImportError::Limit {
            path: path.display().to_string(),
            what: format!(
                "its samples span {:.0} days from the first timestamp to the last, more than a trace holds (2^53 - 1 µs, 285 years)",
                span_us as f64 / 86_400e6
            ),
            hint: "a timestamp that far off means a damaged file: record it again, or import the part before the damage".into(),
        });
    }
    Ok(())
}

/// The trace id of an import (`manifest.traceId`): 32 hex digits of the SHA-1 of the source
/// file's size, host name, first and last sample times and memory-sample count, so that the same
/// perf.data file imports to the same id (a fleet dataset then holds it once), without reading
/// the file a second time.
fn import_trace_id(path: &Path, host: Option<&str>, t0: u64, t1: u64, samples: usize) -> String {
    use sha1::{Digest, Sha1};
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut h = Sha1::new();
    h.update(b"numascope import\0");
    h.update(size.to_le_bytes());
    h.update(host.unwrap_or("").as_bytes());
    h.update([0u8]);
    h.update(t0.to_le_bytes());
    h.update(t1.to_le_bytes());
    h.update((samples as u64).to_le_bytes());
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Imports a perf.data file into an in-memory trace.
pub fn import_perf_data(path: &Path) -> Result<ImportSummary, ImportError> {
    let mut opened = open_perf_data(path)?;
    let from = file_name(path);
    let amd = opened.contents.cpu_id.as_deref().and_then(AmdCpu::from_cpuid_header);

    // Samples are converted as they are read: only memory samples are kept.
    let mut mem = Vec::new();
    let (mut sk_ev, mut sk_op, mut sk_addr) = (0u64, 0u64, 0u64);
    let mut c2c = C2cStats::default();
    let mut total = 0u64;
    let (mut t0, mut t1) = (u64::MAX, 0u64);
    let mut code = ImportedCode::default();
    opened.read_records(|attrs, attr_index, sample, body| {
        total += 1;
        if let Some(t) = sample.time {
            t0 = t0.min(t);
            t1 = t1.max(t);
        }
        let attr = &attrs[attr_index];
        if attr.kind != EventKind::NonMemory {
            if let Some(ds) = sample.data_src {
                c2c.add(&MemDataSrc::decode(ds), sample.addr.unwrap_or(0));
            }
        }
        match to_mem_sample(attr, &sample, amd) {
            Ok(m) => {
                let mut row = Row::from(&m);
                row.hitm = sample
                    .data_src
                    .map(|ds| crate::decode::data_src::hitm_class(&MemDataSrc::decode(ds)))
                    .unwrap_or(-1);
                row.stack = code.stack_of(
                    m.pid,
                    sample.ip.unwrap_or(0),
                    crate::decode::sample::callchain_entries(body, &sample),
                );
                mem.push(row)
            }
            Err(Skip::NonMemoryEvent) => sk_ev += 1,
            Err(Skip::NotLoadOrStore) => sk_op += 1,
            Err(Skip::NoAddress) => sk_addr += 1,
        }
    })?;
    let pd = opened.contents;
    let host = pd.hostname.clone().unwrap_or_else(|| "unknown host".into());
    mem.sort_by_key(|m| m.time);
    if t0 > t1 {
        (t0, t1) = (0, 0);
    }
    check_span(path, t0, t1)?;
    let us = |t: u64| -> i64 { crate::time::us_since(t0, t) };

    // machine
    let mut m = crate::trace::empty_manifest();
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
    let single_node = import_machine(&mut m.machine, &pd, &from, &host);

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
        let node: i8 = if single_node && s.phys { mach_node0(&m.machine) } else { -1 };
        any_phys |= s.phys;
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
        samples.cpu.push(s.cpu);
        samples.page.push(pi);
        samples.offset.push((s.addr & 0xfff) as u16);
        samples.op.push(s.op.as_str());
        samples.event.push(s.event);
        samples.data_source.push(s.source.as_str());
        samples.hops.push(s.hops);
        samples.node.push(node);
        samples.latency_cycles.push(s.latency);
        samples.weight.push(s.weight);
        // The sampled instruction and its call chain, keyed by its process: the same address in
        // two processes is two codes.
        samples.stack.push(s.stack);
        samples.hitm.push(s.hitm);
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
    import_sources(cap, &pd, &reason_base, &by_event);
    import_capabilities(cap, &reason_base, !mem.is_empty(), any_latency, any_phys && single_node);
    cap.lost_samples = pd.lost;
    cap.notes.push(format!(
        "{} samples in the file: {} imported, {} skipped (not a memory event), {} skipped (data_src op N/A: not a load or store), {} skipped (load/store without a data address)",
        total,
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
    cap.notes.extend(pd.notes.iter().cloned());

    let mut trace = TraceData { samples, pages, threads, ..TraceData::empty(m) };
    trace.manifest.capture.sample_count = trace.samples.len() as u64;
    trace.manifest.host = pd.hostname.clone();
    trace.manifest.trace_id = Some(import_trace_id(path, pd.hostname.as_deref(), t0, t1, trace.samples.len()));
    import_code_locations(&mut trace, &pd.code_mappings, &code);
    if pd.lost > 0 {
        trace.events.time_us.push(0);
        trace.events.kind.push("lost-samples");
        trace.events.thread.push(-1);
        trace.events.value.push(i64::try_from(pd.lost).unwrap_or(i64::MAX));
        trace.events.detail.push(format!("{} samples lost (PERF_RECORD_LOST / LOST_SAMPLES)", pd.lost));
    }
    Ok(ImportSummary {
        trace,
        total_samples: total,
        skipped_non_memory_event: sk_ev,
        skipped_not_load_store: sk_op,
        skipped_no_address: sk_addr,
        by_source,
        by_event,
        c2c,
    })
}

/// The machine of an import: the perf.data header's NUMA topology (or one node holding every
/// cpu), default distances; returns whether the file says the machine had a single node.
fn import_machine(mach: &mut Machine, pd: &PerfDataContents, from: &str, host: &str) -> bool {
    mach.name = host.to_string();
    mach.source = format!("perf.data:{from}");
    mach.kernel = pd.os_release.clone();
    mach.cpu_model = pd.cpu_desc.clone();
    (mach.cpu_clock_ghz, mach.provenance.cpu_clock_ghz) = {
        let (ghz, source) = import_clock(pd);
        (ghz, Some(source))
    };
    mach.page_size_bytes = 4096;
    let nodes_known = pd.numa_nodes.as_ref().is_some_and(|n| !n.is_empty());
    if let Some(nodes) = pd.numa_nodes.as_ref().filter(|n| !n.is_empty()) {
        for (id, kb, cpus) in nodes {
            mach.nodes.push(MachineNode {
                id: *id,
                cpus: cpus.clone(),
                memory_bytes: kb.checked_mul(1024),
                memory_bandwidth_gbps: None,
                memory_tier: None,
                memory_kind: None,
                hmat: None,
            });
        }
        mach.provenance.memory_bytes =
            "documented:perf.data NUMA_TOPOLOGY header (node MemTotal at record time)".into();
    } else {
        let n = pd.nr_cpus.unwrap_or(1).clamp(1, MAX_CPUS);
        mach.nodes.push(MachineNode {
            id: 0,
            cpus: (0..n).collect(),
            memory_bytes: pd.total_mem_kb.and_then(|k| k.checked_mul(1024)),
            memory_bandwidth_gbps: None,
            memory_tier: None,
            memory_kind: None,
            hmat: None,
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
    nodes_known && nn == 1
}

/// The cpu clock of an imported recording, GHz, and where it came from: the `@ x.xxGHz` of the
/// CPUDESC header (the vendor's nominal clock), else, on x86 (CPUID header GenuineIntel,
/// AuthenticAMD or HygonGenuine), the rate of the TSC from the first TIME_CONV record (the
/// kernel's calibration: an invariant TSC ticks at the nominal clock), else None with the reason.
/// perf.data's other headers (CLOCKID, CLOCK_DATA) describe the timestamp clock, not the cpu's.
pub fn import_clock(pd: &PerfDataContents) -> (Option<f64>, String) {
    if let Some((desc, ghz)) = pd.cpu_desc.as_deref().and_then(|d| clock_in_model_name(d).map(|g| (d, g))) {
        return (
            Some(ghz),
            format!("documented:perf.data CPUDESC header \"{desc}\" names {ghz} GHz, its nominal clock"),
        );
    }
    let x86 = pd
        .cpu_id
        .as_deref()
        .is_some_and(|id| ["GenuineIntel", "AuthenticAMD", "HygonGenuine"].iter().any(|v| id.starts_with(v)));
    let tsc = pd.time_conv.filter(|&(shift, mult)| shift < 64 && mult > 0).map(|(shift, mult)| {
        let ghz = (1u64 << shift) as f64 / mult as f64;
        ((ghz * 1e4).round() / 1e4, shift, mult)
    });
    let desc = match pd.cpu_desc.as_deref() {
        Some(d) => format!("the perf.data CPUDESC header \"{d}\" names no clock"),
        None => "the perf.data file has no CPUDESC header".to_string(),
    };
    match tsc {
        Some((ghz, shift, mult)) if x86 && (MIN_CLOCK_GHZ..=MAX_CLOCK_GHZ).contains(&ghz) => (
            Some(ghz),
            format!(
                "measured:perf.data TIME_CONV record, the kernel's TSC rate {ghz} GHz (2^time_shift / time_mult = 2^{shift} / {mult}); \
                 an x86 invariant TSC ticks at the nominal clock ({desc})"
            ),
        ),
        Some((ghz, ..)) if x86 => {
            (None, format!("unavailable:{desc}, and its TIME_CONV record gives a TSC rate of {ghz} GHz, out of range"))
        }
        Some(_) => (
            None,
            format!(
                "unavailable:{desc}, and its TIME_CONV counter is not an x86 TSC (CPUID header {:?}), so its rate is not the cpu clock",
                pd.cpu_id.as_deref().unwrap_or("absent")
            ),
        ),
        None => (None, format!("unavailable:{desc}, and it has no TIME_CONV record (the TSC rate newer perf versions write)")),
    }
}

/// One source status per probe source id: the PMU events the file holds are `used`.
fn import_sources(cap: &mut Capture, pd: &PerfDataContents, reason_base: &str, by_event: &BTreeMap<String, u64>) {
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
}

/// What an import measures: accesses and data sources from the samples, latency from their
/// weights, placement only from physical addresses on a single-node machine.
fn import_capabilities(
    cap: &mut Capture,
    reason_base: &str,
    any_memory: bool,
    any_latency: bool,
    phys_single_node: bool,
) {
    for metric in crate::probe::METRICS {
        let (status, reason) = match metric {
            "memory-accesses" | "data-source" if any_memory => {
                ("measured", format!("{reason_base}: sampled loads/stores with data_src"))
            }
            "access-latency" if any_latency => {
                ("measured", format!("{reason_base}: sample weight (load latency, core cycles)"))
            }
            "page-placement" if phys_single_node => {
                ("measured", format!("{reason_base}: physical addresses on a single-node machine (node 0)"))
            }
            _ => ("unavailable", "not in a perf.data import".to_string()),
        };
        cap.capabilities.push(Capability { metric: metric.into(), status: status.into(), reason });
    }
}

fn mach_node0(m: &Machine) -> i8 {
    m.nodes.first().map(|n| n.id as i8).unwrap_or(0)
}

/// Checks, before any work, that `out` can be a new file: not a directory, in an existing
/// directory where a file can be created (the writer's own check: it creates and removes its
/// exclusive temporary file there, so a read-only or full file system is found now, not after
/// the conversion).
fn check_output(out: &Path) -> Result<(), ImportError> {
    let p = out.display().to_string();
    if out.is_dir() {
        return Err(ImportError::Output {
            path: p,
            what: "it is a directory; give a file name such as NAME.numascope".into(),
        });
    }
    let parent = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(ImportError::Output {
            path: p,
            what: format!("the directory {} does not exist", parent.display()),
        });
    }
    crate::trace::writer::check_output(out).map_err(|msg| {
        let prefix = format!("cannot write the trace to {p}: ");
        let what = msg.strip_prefix(&prefix).map(str::to_string).unwrap_or(msg);
        ImportError::Output { path: p, what }
    })
}

/// Imports and writes `out`. The input is read and converted completely before the output is
/// created, so a bad input never leaves a file behind; if writing fails, the temporary file
/// the writer created is removed.
pub fn import_to_file(path: &Path, out: &Path) -> Result<ImportSummary, ImportError> {
    check_output(out)?;
    let mut s = import_perf_data(path)?;
    s.trace.manifest.created_at = crate::time::iso8601_utc(crate::time::unix_now_ms());
    // The writer creates its temporary file exclusively under a unique name in `out`'s
    // directory and removes it on failure; an existing `out` is replaced only by a complete file.
    crate::trace::writer::write_trace(&mut s.trace, out)?;
    Ok(s)
}
