//! The sample converter shared by live recording ([`crate::sources::pmu`]) and perf.data import
//! ([`crate::perfdata`]): how an event's attr is classified ([`classify_attr`]) and how one decoded
//! sample becomes a memory sample with its data source, hops, latency and weight
//! ([`to_mem_sample`]).

use super::data_src::{DataSource, MemDataSrc, MemOp};
use super::ibs::{self, AmdCpu, IbsOpRaw};
use super::pebs::{pebs_event_for_config, PebsEvent, Weight};
use super::sample::{PerfSample, SampleLayout};

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

/// Which [`EventKind`] an attr is: by its PMU (`ibs_op`, the cpu PMUs) and config, else by name.
pub fn classify_attr(name: &str, type_: u32, config: u64, pmu: Option<&str>) -> EventKind {
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
    /// The sample's user call stack: its id in the recorder's interned stacks
    /// (`sources::callchain::CallStacks`), None without one.
    pub stack: Option<u32>,
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
        stack: None,
    })
}
