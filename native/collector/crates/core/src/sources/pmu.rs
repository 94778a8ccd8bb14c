//! Live memory-access sampling with the CPU's PMU: AMD IBS op and Intel PEBS load latency and
//! stores (including Sapphire Rapids' `mem-loads-aux` group leader).
//!
//! What is opened is planned from sysfs, the way perf does it:
//! - **IBS op**: the dynamic PMU type in `/sys/bus/event_source/devices/ibs_op/type`, config 0
//!   (count cycles), RAW: the IBS registers, from which [`crate::decode::ibs`] derives data
//!   source, hops, latency and the linear and physical addresses exactly as the kernel's
//!   `perf_ibs_parse_ld_st_data()` does. DATA_SRC, ADDR and WEIGHT are not requested: kernels
//!   before 6.1 leave them N/A or 0 for IBS, and the raw registers hold the same facts.
//! - **PEBS**: the `cpu` (or hybrid `cpu_core`) PMU type; `events/mem-loads` and
//!   `events/mem-stores` encoded through `format/*` (e.g. `event=0xcd,umask=0x1,ldlat=3` with
//!   `event` = config:0-7, `umask` = config:8-15, `ldlat` = config1:0-15), load latency
//!   threshold 30 cycles as `perf mem` uses, precise_ip 3 (falling back to 2 and 1), WEIGHT_STRUCT
//!   (falling back to WEIGHT before Linux 5.12). Where `events/mem-loads-aux` exists (Sapphire
//!   Rapids and later) the load event needs it as its group leader, as perf does.
//!
//! Every event samples in frequency mode (`rate_hz` per event) with PERIOD, so each sample's
//! weight is the period in force; one event per (task, cpu) with `inherit`, enabled on exec for
//! a launched command, as the page-fault sampler ([`super::pagefault`]). Records are decoded by
//! the same code as `numascope import` ([`crate::decode::sample::parse_sample`] and
//! [`crate::decode::mem_sample::to_mem_sample`]).
//!
//! Tested here on byte-exact records (this project's machines have no PMU); the planning is
//! tested on sysfs trees with the documented event strings.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;

use perf_event_open::config::{Clock, Cpu, Inherit, OnExecve, Opts, Proc, Repr, SampleOn, SampleSkid};
use perf_event_open::count::group::CounterGroup;
use perf_event_open::count::Counter;
use perf_event_open::event::dp::DynamicPmu;
use perf_event_open::sample::Sampler;

use super::callchain::{self, CallStacks};
use crate::decode::ibs::AmdCpu;
use crate::decode::mem_sample::{to_mem_sample, AttrInfo, EventKind, MemSample, Skip};
use crate::decode::sample::*;
use crate::privileges::Privileges;

/// Load-latency threshold for PEBS loads, cycles (what `perf mem record` uses).
pub const PEBS_LDLAT: u64 = 30;
/// Default samples per second per event.
pub const DEFAULT_MEM_RATE_HZ: u64 = 4000;

/// Which attr field a format term lands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigField {
    Config,
    Config1,
    Config2,
}

/// A PMU's format terms: name → (attr field, bit ranges).
pub type Formats = HashMap<String, (ConfigField, Vec<(u32, u32)>)>;

/// A `format/<term>` file: `config:0-7`, `config1:0-15`, `config:19`, `config:0-7,32-35`.
pub fn parse_format(s: &str) -> Result<(ConfigField, Vec<(u32, u32)>), String> {
    let s = s.trim();
    let (field, bits) = s.split_once(':').ok_or_else(|| format!("bad format {s:?}: expected FIELD:BITS"))?;
    let field = match field {
        "config" => ConfigField::Config,
        "config1" => ConfigField::Config1,
        "config2" => ConfigField::Config2,
        f => return Err(format!("bad format {s:?}: unknown field {f:?}")),
    };
    let mut ranges = Vec::new();
    for part in bits.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
            None => (part.parse::<u32>(), part.parse::<u32>()),
        };
        match (lo, hi) {
            (Ok(lo), Ok(hi)) if lo <= hi && hi < 64 => ranges.push((lo, hi)),
            _ => return Err(format!("bad format {s:?}: bit range {part:?}")),
        }
    }
    Ok((field, ranges))
}

/// Encodes `event=0xcd,umask=0x1,ldlat=3` with a PMU's format terms into (config, config1,
/// config2). A value is spread over the term's bit ranges, lowest range first; a value that does
/// not fit is an error. `overrides` replace or add terms (e.g. `ldlat`).
pub fn encode_event(formats: &Formats, event: &str, overrides: &[(&str, u64)]) -> Result<[u64; 3], String> {
    let mut terms: Vec<(String, u64)> = Vec::new();
    for t in event.trim().split(',').filter(|t| !t.is_empty()) {
        let (k, v) = match t.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (t.trim(), "1"),
        };
        let v = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
            u64::from_str_radix(h, 16)
        } else {
            v.parse()
        }
        .map_err(|_| format!("bad value in event term {t:?}"))?;
        terms.push((k.to_string(), v));
    }
    for &(k, v) in overrides {
        match terms.iter_mut().find(|(name, _)| name == k) {
            Some(t) => t.1 = v,
            None => terms.push((k.to_string(), v)),
        }
    }
    let mut out = [0u64; 3];
    for (k, mut v) in terms {
        let (field, ranges) = formats.get(&k).ok_or_else(|| format!("event term {k:?} has no format/{k} file"))?;
        let slot = match field {
            ConfigField::Config => 0,
            ConfigField::Config1 => 1,
            ConfigField::Config2 => 2,
        };
        for &(lo, hi) in ranges {
            let width = hi - lo + 1;
            let mask = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
            out[slot] |= (v & mask) << lo;
            v = if width == 64 { 0 } else { v >> width };
        }
        if v != 0 {
            return Err(format!("value of event term {k:?} does not fit its format bits"));
        }
    }
    Ok(out)
}

pub(crate) fn read_formats(pmu_dir: &Path) -> Result<Formats, String> {
    let dir = pmu_dir.join("format");
    let mut out = HashMap::new();
    for e in fs::read_dir(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let name = e.file_name().to_string_lossy().into_owned();
        let text = fs::read_to_string(e.path()).map_err(|err| format!("reading {}: {err}", e.path().display()))?;
        out.insert(name, parse_format(&text)?);
    }
    Ok(out)
}

fn read_u32(p: &Path) -> Result<u32, String> {
    fs::read_to_string(p)
        .map_err(|e| format!("reading {}: {e}", p.display()))?
        .trim()
        .parse()
        .map_err(|_| format!("{} is not a number", p.display()))
}

/// One event to open (per task and cpu).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemEventSpec {
    /// The capture source it feeds: `ibs-op`, `pebs-load` or `pebs-store`.
    pub source: &'static str,
    pub pmu: String,
    pub ty: u32,
    pub config: [u64; 3],
    /// precise_ip to try first (lowered on EINVAL/EOPNOTSUPP down to 1 for PEBS).
    pub precise_ip: u8,
    pub sample_type: u64,
    pub rate_hz: u64,
    pub kind: EventKind,
    /// A non-sampling group leader that must be opened first (SPR `mem-loads-aux`).
    pub aux_leader: Option<[u64; 3]>,
    /// User call-stack frames asked per sample (PERF_SAMPLE_CALLCHAIN, user frames only); 0 none.
    pub stack_depth: u16,
}

/// Asks every event for the user call stack of its samples, `depth` frames at most (0: none),
/// as the page-fault events do (`--call-stack-depth`).
pub fn with_call_stacks(specs: &mut [MemEventSpec], depth: u16) {
    for s in specs {
        s.stack_depth = depth;
        if depth > 0 {
            s.sample_type |= SAMPLE_CALLCHAIN;
        } else {
            s.sample_type &= !SAMPLE_CALLCHAIN;
        }
    }
}

impl MemEventSpec {
    /// How `numascope import` would describe this attr: decodes the records.
    pub fn attr_info(&self) -> AttrInfo {
        AttrInfo {
            name: self.source.to_string(),
            type_: self.ty,
            config: self.config[0],
            pmu: Some(self.pmu.clone()),
            layout: SampleLayout { sample_type: self.sample_type, ..Default::default() },
            period: None,
            kind: self.kind,
        }
    }
}

/// Plans the memory-access events of this machine from sysfs (`sys` = `/sys`). Returns the
/// events, and per source that cannot be used the reason (no PMU, missing event, permissions).
pub fn plan_mem_events(
    sys: &Path,
    privs: &Privileges,
    rate_hz: u64,
) -> (Vec<MemEventSpec>, Vec<(&'static str, String)>) {
    let devices = sys.join("bus/event_source/devices");
    let mut specs = Vec::new();
    let mut refused = Vec::new();
    let base = SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD;
    let phys = if privs.can_profile_kernel() { SAMPLE_PHYS_ADDR } else { 0 };

    let ibs = devices.join("ibs_op");
    if ibs.is_dir() {
        if !privs.can_profile_kernel() {
            refused.push((
                "ibs-op",
                format!("IBS needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid <= 1 ({})", privs.describe()),
            ));
        } else {
            match read_u32(&ibs.join("type")) {
                Ok(ty) => specs.push(MemEventSpec {
                    source: "ibs-op",
                    pmu: "ibs_op".into(),
                    ty,
                    config: [0; 3],
                    precise_ip: 0,
                    sample_type: base | SAMPLE_RAW,
                    rate_hz,
                    kind: EventKind::IbsOp,
                    aux_leader: None,
                    stack_depth: 0,
                }),
                Err(e) => refused.push(("ibs-op", e)),
            }
        }
    }

    let cpu = ["cpu", "cpu_core"].into_iter().map(|p| (p, devices.join(p))).find(|(_, d)| d.is_dir());
    if let Some((name, dir)) = cpu {
        let plan = (|| -> Result<Vec<MemEventSpec>, String> {
            let ty = read_u32(&dir.join("type"))?;
            let formats = read_formats(&dir)?;
            let mut out = Vec::new();
            let aux = match fs::read_to_string(dir.join("events/mem-loads-aux")) {
                Ok(s) => Some(encode_event(&formats, &s, &[])?),
                Err(_) => None,
            };
            for (source, event, kind) in
                [("pebs-load", "mem-loads", EventKind::PebsLoad), ("pebs-store", "mem-stores", EventKind::PebsStore)]
            {
                let Ok(text) = fs::read_to_string(dir.join("events").join(event)) else { continue };
                let overrides: &[(&str, u64)] = if kind == EventKind::PebsLoad && formats.contains_key("ldlat") {
                    &[("ldlat", PEBS_LDLAT)]
                } else {
                    &[]
                };
                out.push(MemEventSpec {
                    source,
                    pmu: name.into(),
                    ty,
                    config: encode_event(&formats, &text, overrides)?,
                    precise_ip: 3,
                    sample_type: base | SAMPLE_ADDR | SAMPLE_DATA_SRC | SAMPLE_WEIGHT_STRUCT | phys,
                    rate_hz,
                    kind,
                    aux_leader: if kind == EventKind::PebsLoad { aux } else { None },
                    stack_depth: 0,
                });
            }
            Ok(out)
        })();
        match plan {
            Ok(v) if v.is_empty() => {}
            Ok(v) if !privs.can_profile_user() => {
                for s in v {
                    refused.push((
                        s.source,
                        format!("PEBS needs perf_event_paranoid <= 2 or CAP_PERFMON ({})", privs.describe()),
                    ));
                }
            }
            Ok(v) => specs.extend(v),
            Err(e) => {
                refused.push(("pebs-load", format!("{name} PMU: {e}")));
                refused.push(("pebs-store", format!("{name} PMU: {e}")));
            }
        }
    }
    (specs, refused)
}

/// What one ring-buffer record holds.
#[derive(Debug)]
pub enum PmuRecord {
    Sample(MemSample),
    /// A sample that is not a memory access with an address (counted, not kept).
    Skipped(Skip),
    Lost(u64),
    /// A record that does not decode under the spec's layout (counted).
    Bad(String),
    Other,
}

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_LOST_SAMPLES: u32 = 13;

/// Decodes one ring-buffer record of an event opened from `attr` (header included); a sample's
/// user call chain, if it has one, is interned into `stacks` (its id in [`MemSample::stack`]).
pub fn decode_pmu_record(
    bytes: &[u8],
    attr: &AttrInfo,
    cpu_model: Option<AmdCpu>,
    stacks: &mut CallStacks,
    scratch: &mut Vec<u64>,
) -> PmuRecord {
    if bytes.len() < 8 {
        return PmuRecord::Other;
    }
    let ty = u32::from_ne_bytes(bytes[0..4].try_into().unwrap());
    let body = &bytes[8..];
    let u64_at = |off: usize| body.get(off..off + 8).map(|b| u64::from_ne_bytes(b.try_into().unwrap()));
    match ty {
        PERF_RECORD_SAMPLE => match parse_sample(body, &attr.layout) {
            Ok(s) => match to_mem_sample(attr, &s, cpu_model) {
                Ok(mut m) => {
                    let entries = crate::decode::sample::callchain_entries(body, &s);
                    if !entries.is_empty() {
                        callchain::user_addresses(entries, scratch);
                        if scratch.is_empty() {
                            stacks.empty += 1;
                        } else {
                            m.stack = Some(stacks.intern(scratch, 0)).filter(|&id| id != callchain::NO_STACK);
                        }
                    }
                    PmuRecord::Sample(m)
                }
                Err(k) => PmuRecord::Skipped(k),
            },
            Err(e) => PmuRecord::Bad(format!("{e:?}")),
        },
        PERF_RECORD_LOST => u64_at(8).map(PmuRecord::Lost).unwrap_or(PmuRecord::Other),
        PERF_RECORD_LOST_SAMPLES => u64_at(0).map(PmuRecord::Lost).unwrap_or(PmuRecord::Other),
        _ => PmuRecord::Other,
    }
}

/// Counts of what the PMU sampler read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PmuCounts {
    pub samples: u64,
    pub skipped_not_load_store: u64,
    pub skipped_no_address: u64,
    pub bad: u64,
    pub lost: u64,
}

struct Opened {
    spec: usize,
    /// Keeps a group leader alive (SPR aux); the sampling member is `counter`.
    _group: Option<CounterGroup>,
    counter: Option<Counter>,
    _member: Option<std::rc::Rc<Counter>>,
    sampler: Sampler,
}

/// The PMU memory-access events of one process: every spec on every (task, cpu).
pub struct PmuSampler {
    specs: Vec<MemEventSpec>,
    attrs: Vec<AttrInfo>,
    opened: Vec<Opened>,
    opened_tids: Vec<u32>,
    cpus: Vec<u32>,
    enable_on_exec: bool,
    ring_exp: u8,
    cpu_model: Option<AmdCpu>,
    pub counts: PmuCounts,
}

#[allow(clippy::field_reassign_with_default)]
fn opts_for(spec: &MemEventSpec, precise: u8, weight_struct: bool, enable_on_exec: bool) -> Opts {
    let mut o = Opts::default();
    o.sample_on = SampleOn::Freq(spec.rate_hz.max(1));
    o.sample_skid = match precise {
        0 => SampleSkid::Arbitrary,
        1 => SampleSkid::Const,
        2 => SampleSkid::ReqZero,
        _ => SampleSkid::Zero,
    };
    let st = spec.sample_type;
    o.sample_format.code_addr = st & SAMPLE_IP != 0;
    o.sample_format.data_addr = st & SAMPLE_ADDR != 0;
    o.sample_format.data_phys_addr = st & SAMPLE_PHYS_ADDR != 0;
    o.sample_format.data_source = st & SAMPLE_DATA_SRC != 0;
    o.sample_format.raw = st & SAMPLE_RAW != 0;
    o.sample_format.period = st & SAMPLE_PERIOD != 0;
    if st & SAMPLE_CALLCHAIN != 0 && spec.stack_depth > 0 {
        // User frames only, as the page-fault events ask: the code of the program that made the
        // access (a sample taken in the kernel gets the user code that entered it).
        o.sample_format.call_chain = Some(perf_event_open::config::CallChain {
            exclude_user: false,
            exclude_kernel: true,
            defer_user: false,
            max_stack_frames: spec.stack_depth,
        });
    }
    if st & (SAMPLE_WEIGHT | SAMPLE_WEIGHT_STRUCT) != 0 {
        o.sample_format.weight =
            Some(if weight_struct && st & SAMPLE_WEIGHT_STRUCT != 0 { Repr::Vars } else { Repr::Full });
    }
    o.record_id_format.task = st & SAMPLE_TID != 0;
    o.record_id_format.time = st & SAMPLE_TIME != 0;
    o.record_id_format.cpu = st & SAMPLE_CPU != 0;
    o.inherit = Some(Inherit::NewChild);
    o.timer = Some(Clock::Monotonic);
    o.exclude.hv = true;
    o.enable = false;
    if enable_on_exec {
        o.on_execve = Some(OnExecve::Enable);
    }
    o
}

/// The same options for a group member (perf-event-open keeps them in a separate type).
#[allow(clippy::field_reassign_with_default)]
fn sibling_opts(o: &Opts) -> perf_event_open::config::sibling::Opts {
    let mut s = perf_event_open::config::sibling::Opts::default();
    s.exclude = o.exclude.clone();
    s.inherit = o.inherit;
    s.on_execve = o.on_execve;
    s.enable = o.enable;
    s.sample_on = o.sample_on.clone();
    s.sample_skid = o.sample_skid;
    s.sample_format = o.sample_format.clone();
    s.record_id_format = o.record_id_format.clone();
    s
}

/// The AMD family and model of this host from /proc/cpuinfo (IBS decoding has model errata).
pub fn amd_cpu_of(cpuinfo: &str) -> Option<AmdCpu> {
    let field = |k: &str| {
        cpuinfo.lines().find(|l| l.starts_with(k)).and_then(|l| l.split(':').nth(1)).map(|v| v.trim().to_string())
    };
    if field("vendor_id")? != "AuthenticAMD" {
        return None;
    }
    AmdCpu::from_cpuid_header(&format!("AuthenticAMD,{},{},0", field("cpu family")?, field("model")?))
}

fn dyn_pmu(ty: u32, c: [u64; 3]) -> DynamicPmu {
    DynamicPmu { ty, config: c[0], config1: c[1], config2: c[2], config3: 0 }
}

impl PmuSampler {
    /// Opens (disabled, or enabled on exec) every spec for each task in `tids` on each cpu.
    pub fn open(
        specs: Vec<MemEventSpec>,
        tids: &[u32],
        cpus: &[u32],
        enable_on_exec: bool,
        ring_exp: u8,
    ) -> Result<Self, String> {
        let attrs = specs.iter().map(|s| s.attr_info()).collect();
        let mut s = PmuSampler {
            specs,
            attrs,
            opened: Vec::new(),
            opened_tids: Vec::new(),
            cpus: cpus.to_vec(),
            enable_on_exec,
            ring_exp,
            cpu_model: amd_cpu_of(&fs::read_to_string("/proc/cpuinfo").unwrap_or_default()),
            counts: PmuCounts::default(),
        };
        for &tid in tids {
            s.add_task(tid)?;
        }
        Ok(s)
    }

    pub fn sources(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self.specs.iter().map(|s| s.source).collect();
        v.dedup();
        v
    }

    pub fn event_count(&self) -> usize {
        self.opened.len()
    }

    /// Opens every spec for one more task (a thread found later).
    pub fn add_task(&mut self, tid: u32) -> Result<(), String> {
        if self.opened_tids.contains(&tid) {
            return Ok(());
        }
        for k in 0..self.specs.len() {
            for &cpu in &self.cpus.clone() {
                match self.open_one(k, tid, cpu) {
                    Ok(o) => self.opened.push(o),
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) && !self.opened_tids.is_empty() => return Ok(()),
                    Err(e) => {
                        return Err(format!("perf_event_open {} (task {tid}, cpu {cpu}): {e}", self.specs[k].source))
                    }
                }
            }
        }
        self.opened_tids.push(tid);
        Ok(())
    }

    #[allow(clippy::field_reassign_with_default)]
    fn open_one(&mut self, k: usize, tid: u32, cpu: u32) -> io::Result<Opened> {
        let spec = self.specs[k].clone();
        let target = (Proc(tid), Cpu(cpu));
        let mut last = None;
        // precise_ip from the spec down to 1 (PEBS), and WEIGHT_STRUCT then WEIGHT.
        let precise_levels: Vec<u8> =
            if spec.precise_ip == 0 { vec![0] } else { (1..=spec.precise_ip).rev().collect() };
        for weight_struct in [true, false] {
            for &p in &precise_levels {
                let opts = opts_for(&spec, p, weight_struct, self.enable_on_exec);
                let attempt = (|| -> io::Result<Opened> {
                    match spec.aux_leader {
                        None => {
                            let counter = Counter::new(dyn_pmu(spec.ty, spec.config), target, &opts)?;
                            let sampler = counter.sampler(self.ring_exp)?;
                            Ok(Opened { spec: k, _group: None, counter: Some(counter), _member: None, sampler })
                        }
                        Some(aux) => {
                            let mut lo = Opts::default();
                            lo.inherit = Some(Inherit::NewChild);
                            lo.exclude.hv = true;
                            lo.enable = false;
                            if self.enable_on_exec {
                                lo.on_execve = Some(OnExecve::Enable);
                            }
                            let leader = Counter::new(dyn_pmu(spec.ty, aux), target, &lo)?;
                            let mut group = CounterGroup::from(leader);
                            let member = group.add(dyn_pmu(spec.ty, spec.config), sibling_opts(&opts))?;
                            let sampler = member.sampler(self.ring_exp)?;
                            Ok(Opened { spec: k, _group: Some(group), counter: None, _member: Some(member), sampler })
                        }
                    }
                })();
                match attempt {
                    Ok(o) => {
                        // Decode with the layout actually opened.
                        if !weight_struct {
                            let st = &mut self.attrs[k].layout.sample_type;
                            if *st & SAMPLE_WEIGHT_STRUCT != 0 {
                                *st = (*st & !SAMPLE_WEIGHT_STRUCT) | SAMPLE_WEIGHT;
                            }
                        }
                        return Ok(o);
                    }
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)) => last = Some(e),
                    Err(e) => return Err(e),
                }
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL)))
    }

    pub fn enable(&self) -> io::Result<()> {
        for o in &self.opened {
            if let Some(g) = &o._group {
                g.enable()?;
            } else if let Some(c) = &o.counter {
                c.enable()?;
            }
        }
        Ok(())
    }

    pub fn disable(&self) -> io::Result<()> {
        for o in &self.opened {
            if let Some(g) = &o._group {
                g.disable()?;
            } else if let Some(c) = &o.counter {
                c.disable()?;
            }
        }
        Ok(())
    }

    /// Reads every ring buffer empty, appending memory samples to `out`.
    /// Reads every ring buffer into `out`; call chains are interned into `stacks` (the recorder
    /// shares them with the page-fault samples).
    pub fn drain(&mut self, out: &mut Vec<MemSample>, stacks: &mut CallStacks) -> usize {
        let before = out.len();
        let mut scratch = Vec::new();
        for o in &self.opened {
            let Some(iter) = o.sampler.iter() else { continue };
            let mut cow = iter.into_cow();
            while let Some(rec) = cow.lending_next() {
                match decode_pmu_record(
                    rec.as_raw().as_bytes(),
                    &self.attrs[o.spec],
                    self.cpu_model,
                    stacks,
                    &mut scratch,
                ) {
                    PmuRecord::Sample(m) => {
                        self.counts.samples += 1;
                        out.push(m);
                    }
                    PmuRecord::Skipped(Skip::NoAddress) => self.counts.skipped_no_address += 1,
                    PmuRecord::Skipped(_) => self.counts.skipped_not_load_store += 1,
                    PmuRecord::Lost(n) => self.counts.lost += n,
                    PmuRecord::Bad(_) => self.counts.bad += 1,
                    PmuRecord::Other => {}
                }
            }
        }
        out.len() - before
    }
}

/// Adds PMU memory samples to a trace built from the page-fault recording (`start_ns` = the
/// capture start, CLOCK_MONOTONIC). Pages not in the pages table yet are appended (first touch
/// unknown, node from `page_node` — move_pages answers by page address — else -1, region = the
/// mapping that contains them); a thread seen only here is appended; rows are merged into the
/// samples table in time order, each with its page's node. Returns the rows added.
pub fn add_mem_samples(
    trace: &mut crate::trace::TraceData,
    mem: &[MemSample],
    start_ns: u64,
    page_node: &HashMap<u64, i8>,
) -> usize {
    if mem.is_empty() {
        return 0;
    }
    let mut page_index: HashMap<u64, usize> = trace.pages.address.iter().enumerate().map(|(i, &a)| (a, i)).collect();
    let mut thread_index: HashMap<i32, usize> = trace.threads.tid.iter().enumerate().map(|(i, &t)| (t, i)).collect();
    // Regions sorted by start for the lookup of new pages (the last listed wins on overlap).
    let mut regions: Vec<(u64, u64, usize)> =
        (0..trace.regions.start.len()).map(|r| (trace.regions.start[r], trace.regions.end[r], r)).collect();
    regions.sort_by_key(|&(s, _, r)| (s, r));
    let region_of = |a: u64| -> i32 {
        let upto = regions.partition_point(|&(s, _, _)| s <= a);
        regions[..upto].iter().rev().find(|&&(_, e, _)| a < e).map(|&(_, _, r)| r as i32).unwrap_or(-1)
    };
    let us = |t: u64| -> i64 { crate::time::us_since(start_ns, t) };
    let old = trace.samples.time_us.len();
    let s = &mut trace.samples;
    for m in mem {
        let page = m.addr & !4095;
        let pi = *page_index.entry(page).or_insert_with(|| {
            let p = &mut trace.pages;
            p.address.push(page);
            p.region.push(region_of(page));
            p.node.push(page_node.get(&page).copied().unwrap_or(-1));
            p.page_size.push(4096);
            p.first_touch_us.push(-1);
            p.first_touch_thread.push(-1);
            p.first_touch_cpu.push(-1);
            p.address.len() - 1
        });
        let ti = *thread_index.entry(m.tid).or_insert_with(|| {
            let t = &mut trace.threads;
            t.tid.push(m.tid);
            t.pid.push(m.pid);
            t.name.push(String::new());
            t.first_seen_us.push(us(m.time));
            t.last_seen_us.push(us(m.time));
            t.migrations.push(-1);
            t.tid.len() - 1
        });
        let t = &mut trace.threads;
        t.first_seen_us[ti] = t.first_seen_us[ti].min(us(m.time));
        t.last_seen_us[ti] = t.last_seen_us[ti].max(us(m.time));
        s.time_us.push(us(m.time));
        s.thread.push(ti as u32);
        s.cpu.push(m.cpu.map(|c| c.min(i16::MAX as u32) as i16).unwrap_or(-1));
        s.page.push(pi as i32);
        s.offset.push((m.addr & 4095) as u16);
        s.op.push(match m.op {
            crate::decode::data_src::MemOp::Store => "store",
            _ => "load",
        });
        s.event.push(m.event);
        s.data_source.push(m.source.as_str());
        s.hops.push(m.hops);
        s.node.push(trace.pages.node[pi]);
        s.latency_cycles.push(m.latency.min(u32::MAX as u64) as u32);
        s.weight.push(m.weight.clamp(1, u32::MAX as u64) as u32);
        // The user call stack, as the page-fault samples' (an interned id until code::attach
        // turns the ids into rows of the stacks table).
        s.stack.push(m.stack.map_or(-1, |id| id as i32));
        // perf c2c's HITM class, from the data source (IBS: as the kernel's ibs driver derives it).
        s.hitm.push(crate::decode::data_src::hitm_class(&m.data_src));
    }
    // Time order, stable (faults before accesses at the same µs, then arrival order).
    let n = s.time_us.len();
    let mut perm: Vec<usize> = (0..n).collect();
    perm.sort_by_key(|&i| (s.time_us[i], i >= old, i));
    if perm.iter().enumerate().any(|(k, &i)| k != i) {
        fn pick<T: Clone>(v: &mut Vec<T>, perm: &[usize]) {
            *v = perm.iter().map(|&i| v[i].clone()).collect();
        }
        pick(&mut s.time_us, &perm);
        pick(&mut s.thread, &perm);
        pick(&mut s.cpu, &perm);
        pick(&mut s.page, &perm);
        pick(&mut s.offset, &perm);
        pick(&mut s.op.keys, &perm);
        pick(&mut s.event.keys, &perm);
        pick(&mut s.data_source.keys, &perm);
        pick(&mut s.hops, &perm);
        pick(&mut s.node, &perm);
        pick(&mut s.latency_cycles, &perm);
        pick(&mut s.weight, &perm);
        pick(&mut s.stack, &perm);
        pick(&mut s.hitm, &perm);
    }
    mem.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::data_src::{DataSource, MemOp};
    use std::path::PathBuf;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numascope-pmu-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn privileged() -> Privileges {
        Privileges {
            perf_event_paranoid: Some(2),
            cap_perfmon: true,
            cap_sys_admin: true,
            cap_sys_nice: false,
            cap_sys_ptrace: false,
            euid: 0,
        }
    }

    fn unprivileged() -> Privileges {
        Privileges {
            perf_event_paranoid: Some(2),
            cap_perfmon: false,
            cap_sys_admin: false,
            cap_sys_nice: false,
            cap_sys_ptrace: false,
            euid: 1000,
        }
    }

    fn intel_formats() -> Formats {
        [
            ("event", "config:0-7"),
            ("umask", "config:8-15"),
            ("ldlat", "config1:0-15"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), parse_format(v).unwrap()))
        .collect()
    }

    #[test]
    fn parses_format_files() {
        assert_eq!(parse_format("config:0-7\n").unwrap(), (ConfigField::Config, vec![(0, 7)]));
        assert_eq!(parse_format("config1:0-15").unwrap(), (ConfigField::Config1, vec![(0, 15)]));
        assert_eq!(parse_format("config:19").unwrap(), (ConfigField::Config, vec![(19, 19)]));
        assert_eq!(parse_format("config:0-7,32-35").unwrap(), (ConfigField::Config, vec![(0, 7), (32, 35)]));
        assert!(parse_format("config3:0-7").unwrap_err().contains("unknown field"));
        assert!(parse_format("config:9-2").unwrap_err().contains("bit range"));
        assert!(parse_format("config:0-64").unwrap_err().contains("bit range"));
        assert!(parse_format("nonsense").unwrap_err().contains("FIELD:BITS"));
    }

    #[test]
    fn encodes_the_documented_intel_memory_events() {
        let f = intel_formats();
        // sysfs cpu/events strings (Intel: mem-loads, mem-stores; SPR mem-loads-aux).
        assert_eq!(encode_event(&f, "event=0xcd,umask=0x1,ldlat=3", &[]).unwrap(), [0x01cd, 3, 0]);
        assert_eq!(encode_event(&f, "event=0xcd,umask=0x1,ldlat=3", &[("ldlat", 30)]).unwrap(), [0x01cd, 30, 0]);
        assert_eq!(encode_event(&f, "event=0xd0,umask=0x82", &[]).unwrap(), [0x82d0, 0, 0]);
        assert_eq!(encode_event(&f, "event=0x03,umask=0x82", &[]).unwrap(), [0x8203, 0, 0]);
        // A bare term is 1; split ranges take the low bits first.
        assert_eq!(encode_event(&f, "event=0xc0,inv", &[]).unwrap(), [0x8000c0, 0, 0]);
        let mut g = f.clone();
        g.insert("event".into(), parse_format("config:0-7,32-35").unwrap());
        assert_eq!(encode_event(&g, "event=0x1cd", &[]).unwrap(), [0xcd | (1 << 32), 0, 0]);
        assert!(encode_event(&f, "umask=0x1ff", &[]).unwrap_err().contains("does not fit"));
        assert!(encode_event(&f, "frob=1", &[]).unwrap_err().contains("no format/frob"));
        assert!(encode_event(&f, "event=zz", &[]).unwrap_err().contains("bad value"));
    }

    fn intel_sysfs(root: &Path, spr: bool) {
        put(root, "bus/event_source/devices/cpu/type", "4\n");
        for (k, v) in [("event", "config:0-7"), ("umask", "config:8-15"), ("ldlat", "config1:0-15")] {
            put(root, &format!("bus/event_source/devices/cpu/format/{k}"), &format!("{v}\n"));
        }
        put(root, "bus/event_source/devices/cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
        put(root, "bus/event_source/devices/cpu/events/mem-stores", "event=0xd0,umask=0x82\n");
        if spr {
            put(root, "bus/event_source/devices/cpu/events/mem-loads-aux", "event=0x03,umask=0x82\n");
        }
    }

    #[test]
    fn plans_pebs_with_the_sapphire_rapids_aux_leader() {
        let root = tmp("spr");
        intel_sysfs(&root, true);
        let (specs, refused) = plan_mem_events(&root, &privileged(), 4000);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(specs.len(), 2);
        let load = &specs[0];
        assert_eq!(
            (load.source, load.ty, load.config, load.kind),
            ("pebs-load", 4, [0x01cd, PEBS_LDLAT, 0], EventKind::PebsLoad)
        );
        assert_eq!(load.aux_leader, Some([0x8203, 0, 0]));
        assert_eq!(load.precise_ip, 3);
        assert_eq!(
            load.sample_type,
            SAMPLE_IP
                | SAMPLE_TID
                | SAMPLE_TIME
                | SAMPLE_CPU
                | SAMPLE_PERIOD
                | SAMPLE_ADDR
                | SAMPLE_DATA_SRC
                | SAMPLE_WEIGHT_STRUCT
                | SAMPLE_PHYS_ADDR
        );
        let store = &specs[1];
        assert_eq!(
            (store.source, store.config, store.aux_leader, store.kind),
            ("pebs-store", [0x82d0, 0, 0], None, EventKind::PebsStore)
        );
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn plans_pebs_without_aux_before_spr_and_without_phys_unprivileged() {
        let root = tmp("icx");
        intel_sysfs(&root, false);
        let (specs, refused) = plan_mem_events(&root, &unprivileged(), 1000);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(specs[0].aux_leader, None);
        assert_eq!(specs[0].rate_hz, 1000);
        assert_eq!(specs[0].sample_type & SAMPLE_PHYS_ADDR, 0, "physical addresses need kernel profiling rights");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn plans_ibs_from_the_dynamic_pmu_type_and_refuses_it_unprivileged() {
        let root = tmp("amd");
        put(&root, "bus/event_source/devices/ibs_op/type", "11\n");
        let (specs, refused) = plan_mem_events(&root, &privileged(), 4000);
        assert!(refused.is_empty());
        assert_eq!(specs.len(), 1);
        assert_eq!(
            (specs[0].source, specs[0].pmu.as_str(), specs[0].ty, specs[0].kind),
            ("ibs-op", "ibs_op", 11, EventKind::IbsOp)
        );
        assert_eq!(
            specs[0].sample_type,
            SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD | SAMPLE_RAW
        );
        let (specs, refused) = plan_mem_events(&root, &unprivileged(), 4000);
        assert!(specs.is_empty());
        assert_eq!(refused.len(), 1);
        assert!(refused[0].1.contains("IBS needs CAP_PERFMON"), "{:?}", refused[0]);
        // No PMU at all (this project's VMs): nothing planned, nothing to explain here (the probe does).
        let empty = tmp("none");
        let (specs, refused) = plan_mem_events(&empty, &privileged(), 4000);
        assert!(specs.is_empty() && refused.is_empty());
        let _ = fs::remove_dir_all(&root);
        let _ = fs::remove_dir_all(&empty);
    }

    fn record(ty: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn decodes_a_pebs_load_record_as_opened() {
        let root = tmp("dec-pebs");
        intel_sysfs(&root, true);
        let (specs, _) = plan_mem_events(&root, &privileged(), 4000);
        let attr = specs[0].attr_info();
        let s = PerfSample {
            ip: Some(0x401000),
            pid: Some(100),
            tid: Some(101),
            time: Some(5_000_000),
            addr: Some(0x7f00_0000_2040),
            cpu: Some(3),
            period: Some(2503),
            weight: Some(180), // WEIGHT_STRUCT var1_dw: load latency 180 cycles
            weight_is_struct: true,
            data_src: Some(0x0000_103a_0000_2042), // load from remote DRAM (REM_RAM1)
            phys_addr: Some(0x1234_5040),
            ..Default::default()
        };
        let bytes = record(PERF_RECORD_SAMPLE, &encode_sample(&s, &attr.layout));
        let PmuRecord::Sample(m) = decode_pmu_record(&bytes, &attr, None, &mut CallStacks::default(), &mut Vec::new())
        else {
            panic!("not a sample")
        };
        assert_eq!((m.pid, m.tid, m.cpu, m.time), (100, 101, Some(3), 5_000_000));
        assert_eq!((m.addr, m.phys_addr), (0x7f00_0000_2040, Some(0x1234_5040)));
        assert_eq!((m.op, m.source, m.event), (MemOp::Load, DataSource::RemoteDram, "pebs-load"));
        assert_eq!((m.latency, m.weight), (180, 2503), "latency from WEIGHT_STRUCT, weight = the period in force");
        // Lost records are counted; a truncated sample is reported, not misread.
        let mut lost = Vec::new();
        lost.extend_from_slice(&1u64.to_ne_bytes());
        lost.extend_from_slice(&42u64.to_ne_bytes());
        assert!(matches!(
            decode_pmu_record(
                &record(PERF_RECORD_LOST, &lost),
                &attr,
                None,
                &mut CallStacks::default(),
                &mut Vec::new()
            ),
            PmuRecord::Lost(42)
        ));
        let body = encode_sample(&s, &attr.layout);
        assert!(matches!(
            decode_pmu_record(
                &record(PERF_RECORD_SAMPLE, &body[..20]),
                &attr,
                None,
                &mut CallStacks::default(),
                &mut Vec::new()
            ),
            PmuRecord::Bad(_)
        ));
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_pebs_sample_s_user_call_chain_is_interned() {
        let root = tmp("dec-pebs-chain");
        intel_sysfs(&root, true);
        let (mut specs, _) = plan_mem_events(&root, &privileged(), 4000);
        with_call_stacks(&mut specs, 16);
        assert!(specs.iter().all(|s| s.sample_type & SAMPLE_CALLCHAIN != 0 && s.stack_depth == 16));
        let o = opts_for(&specs[0], 3, true, false);
        let cc = o.sample_format.call_chain.as_ref().expect("a call chain is asked");
        assert!(cc.exclude_kernel && !cc.exclude_user && cc.max_stack_frames == 16);
        let attr = specs[0].attr_info();
        let s = PerfSample {
            ip: Some(0x401000),
            pid: Some(100),
            tid: Some(101),
            time: Some(5_000_000),
            addr: Some(0x7f00_0000_2040),
            cpu: Some(3),
            period: Some(2503),
            weight: Some(180),
            weight_is_struct: true,
            data_src: Some(0x0000_103a_0000_2042),
            phys_addr: Some(0x1234_5040),
            ..Default::default()
        };
        // encode_sample writes an empty chain (nr 0) after PERIOD: put a real one there.
        let mut body = encode_sample(&s, &attr.layout);
        let at = 8 * 6; // IP TID TIME ADDR CPU PERIOD
        assert_eq!(&body[at..at + 8], &0u64.to_le_bytes());
        let chain = [(-512i64) as u64, 0x401000, 0x402345, 0x403456];
        let mut words = Vec::new();
        chain.iter().for_each(|w| words.extend_from_slice(&w.to_le_bytes()));
        body.splice(at..at + 8, (chain.len() as u64).to_le_bytes().into_iter().chain(words));
        let (mut stacks, mut scratch) = (CallStacks::default(), Vec::new());
        let bytes = record(PERF_RECORD_SAMPLE, &body);
        let PmuRecord::Sample(m) = decode_pmu_record(&bytes, &attr, None, &mut stacks, &mut scratch) else {
            panic!("not a sample")
        };
        assert_eq!(
            (m.addr, m.latency, m.source),
            (0x7f00_0000_2040, 180, DataSource::RemoteDram),
            "the fields after the chain"
        );
        assert_eq!(stacks.get(m.stack.unwrap()).map(|(c, _)| c.to_vec()), Some(vec![0x401000, 0x402345, 0x403456]));
        // The same chain again: the same id; a sample without a chain: none.
        let PmuRecord::Sample(m2) = decode_pmu_record(&bytes, &attr, None, &mut stacks, &mut scratch) else { panic!() };
        assert_eq!(m2.stack, m.stack);
        let plain = record(PERF_RECORD_SAMPLE, &encode_sample(&s, &attr.layout));
        let PmuRecord::Sample(m3) = decode_pmu_record(&plain, &attr, None, &mut stacks, &mut scratch) else { panic!() };
        assert_eq!(m3.stack, None);
        // Off: no CALLCHAIN in the attr.
        with_call_stacks(&mut specs, 0);
        assert!(specs.iter().all(|s| s.sample_type & SAMPLE_CALLCHAIN == 0));
        assert!(opts_for(&specs[0], 3, true, false).sample_format.call_chain.is_none());
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn decodes_an_ibs_op_record_from_its_raw_registers() {
        let root = tmp("dec-ibs");
        put(&root, "bus/event_source/devices/ibs_op/type", "11\n");
        let (specs, _) = plan_mem_events(&root, &privileged(), 4000);
        let attr = specs[0].attr_info();
        // decode/fixtures.rs "remote DRAM load (DataSrc 3 + RmtNode), phys": IbsDcLinAd
        // 0x7f0000001040, IbsDcPhysAd 0x12345040, dc_miss_lat 200.
        let raw = unhex("1f080000001004000000000000104000000000000000300000000000130000000000000081001600c800000040100000007f00004050341200000000");
        let s = PerfSample {
            ip: Some(0x401000),
            pid: Some(7),
            tid: Some(8),
            time: Some(9),
            cpu: Some(1),
            period: Some(65536),
            raw: Some(raw),
            ..Default::default()
        };
        let bytes = record(PERF_RECORD_SAMPLE, &encode_sample(&s, &attr.layout));
        let PmuRecord::Sample(m) = decode_pmu_record(&bytes, &attr, None, &mut CallStacks::default(), &mut Vec::new())
        else {
            panic!("not a sample")
        };
        assert_eq!((m.op, m.source, m.hops, m.event), (MemOp::Load, DataSource::RemoteDram, 1, "ibs-op"));
        assert_eq!((m.addr, m.phys_addr, m.latency, m.weight), (0x7f00_0000_1040, Some(0x1234_5040), 200, 65536));
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn adds_memory_samples_to_a_recorded_trace_in_time_order() {
        use crate::decode::data_src::MemDataSrc;
        use crate::trace::TraceData;
        let mut t = TraceData {
            manifest: crate::trace::empty_manifest(),
            samples: Default::default(),
            pages: Default::default(),
            threads: Default::default(),
            regions: Default::default(),
            thread_placements: Default::default(),
            region_placements: Default::default(),
            counters: Default::default(),
            events: Default::default(),
            alloc: Default::default(),
        };
        // A fault-only recording: thread 100 first-touched page 0x7000 at 5 µs and 0x9000 at 30 µs.
        t.threads.tid = vec![100];
        t.threads.pid = vec![100];
        t.threads.name = vec!["main".into()];
        t.threads.first_seen_us = vec![5];
        t.threads.last_seen_us = vec![30];
        t.threads.migrations = vec![0];
        t.regions.start = vec![0x7000];
        t.regions.end = vec![0x20000];
        t.regions.kind.push("anon");
        t.regions.path = vec![None];
        for (addr, us, node) in [(0x7000u64, 5i64, 0i8), (0x9000, 30, 1)] {
            t.pages.address.push(addr);
            t.pages.region.push(0);
            t.pages.node.push(node);
            t.pages.page_size.push(4096);
            t.pages.first_touch_us.push(us);
            t.pages.first_touch_thread.push(0);
            t.pages.first_touch_cpu.push(0);
        }
        for (us, page) in [(5i64, 0i32), (30, 1)] {
            let s = &mut t.samples;
            s.time_us.push(us);
            s.thread.push(0);
            s.cpu.push(0);
            s.page.push(page);
            s.offset.push(0);
            s.op.push("fault");
            s.event.push("page-fault");
            s.data_source.push("unknown");
            s.hops.push(-1);
            s.node.push(t.pages.node[page as usize]);
            s.latency_cycles.push(0);
            s.weight.push(1);
            s.stack.push(-1);
            s.hitm.push(-1);
        }
        let start = 1_000_000u64;
        let mk = |time_us: u64, tid: i32, addr: u64, op: MemOp, source: DataSource| MemSample {
            time: start + time_us * 1000,
            pid: 100,
            tid,
            cpu: Some(2),
            addr,
            phys_addr: None,
            data_src: MemDataSrc::decode(crate::decode::data_src::PERF_MEM_NA),
            op,
            event: "pebs-load",
            source,
            hops: if source == DataSource::RemoteDram { 1 } else { 0 },
            latency: 300,
            weight: 2000,
            stack: None,
        };
        let mem = vec![
            mk(20, 100, 0x9010, MemOp::Load, DataSource::RemoteDram), // faulted page
            mk(10, 101, 0xb123, MemOp::Store, DataSource::LocalDram), // new page, new thread
            mk(40, 100, 0x50_0000, MemOp::Load, DataSource::L3),      // outside every region
        ];
        let nodes: HashMap<u64, i8> = [(0xb000u64, 2i8)].into_iter().collect();
        assert_eq!(add_mem_samples(&mut t, &mem, start, &nodes), 3);
        let s = &t.samples;
        assert_eq!(s.time_us, vec![5, 10, 20, 30, 40]);
        assert_eq!(s.op.iter().collect::<Vec<_>>(), vec!["fault", "store", "load", "fault", "load"]);
        assert_eq!(
            s.data_source.iter().collect::<Vec<_>>(),
            vec!["unknown", "local-dram", "remote-dram", "unknown", "l3"]
        );
        assert_eq!(s.weight, vec![1, 2000, 2000, 1, 2000]);
        assert_eq!(s.latency_cycles, vec![0, 300, 300, 0, 300]);
        assert_eq!(s.offset[2], 0x10);
        // Pages: the faulted one reused, two appended (node from move_pages, or -1), with regions.
        assert_eq!(t.pages.address, vec![0x7000, 0x9000, 0xb000, 0x50_0000]);
        assert_eq!(s.page, vec![0, 2, 1, 1, 3]);
        assert_eq!(t.pages.node, vec![0, 1, 2, -1]);
        assert_eq!(s.node, vec![0, 2, 1, 1, -1]);
        assert_eq!(t.pages.region, vec![0, 0, 0, -1]);
        assert_eq!(t.pages.first_touch_thread[2], -1, "first touch of a page seen only by the PMU is unknown");
        // Thread 101 appended, seen at 10 µs.
        assert_eq!(t.threads.tid, vec![100, 101]);
        assert_eq!(s.thread, vec![0, 1, 0, 0, 0]);
        assert_eq!((t.threads.first_seen_us[1], t.threads.last_seen_us[0]), (10, 40));
    }

    #[test]
    fn reads_the_amd_model_from_cpuinfo() {
        let amd = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n";
        assert_eq!(amd_cpu_of(amd), Some(AmdCpu { family: 25, model: 17 }));
        assert_eq!(amd_cpu_of("vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"), None);
    }

    #[test]
    fn opening_without_a_pmu_fails_with_the_event_named() {
        // This machine has no ibs_op PMU: an event of a made-up dynamic type cannot be opened,
        // and the error names the source, the task and the cpu.
        let spec = MemEventSpec {
            source: "ibs-op",
            pmu: "ibs_op".into(),
            ty: 0x7fff_0000,
            config: [0; 3],
            precise_ip: 0,
            sample_type: SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU | SAMPLE_PERIOD | SAMPLE_RAW,
            rate_hz: 1000,
            kind: EventKind::IbsOp,
            aux_leader: None,
            stack_depth: 0,
        };
        let me = std::process::id();
        let e = PmuSampler::open(vec![spec], &[me], &[0], false, 2).err().expect("no such PMU");
        assert!(e.starts_with(&format!("perf_event_open ibs-op (task {me}, cpu 0):")), "{e}");
    }
}
