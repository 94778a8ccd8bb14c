//! Memory-controller and interconnect traffic from uncore PMUs, counted system-wide (every
//! process, not only the recorded one) and written as cumulative bytes into `counters`.
//!
//! | family | PMUs | counters | where the encoding comes from |
//! | --- | --- | --- | --- |
//! | Intel memory controller | `uncore_imc_*` (one per channel) | `mc-read-bytes`, `mc-write-bytes` | the kernel's sysfs events `cas_count_read` / `cas_count_write` with `.scale` and `.unit` |
//! | Intel UPI links | `uncore_upi_*` (one per link) | `link-tx-bytes`, `link-rx-bytes` | perf's event JSON per CPU model ([`intel_upi_model`]) |
//! | AMD Zen 4 / Zen 5 memory controller | `amd_umc_*` (one per channel) | `mc-read-bytes`, `mc-write-bytes` | perf's `amdzen4` / `amdzen5` `memory-controller.json` |
//! | AMD Zen 2 / Zen 3 data fabric | `amd_df` | `mc-bytes` (reads and writes together), `link-tx-bytes` (xGMI) | perf's `amdzen2` / `amdzen3` `data-fabric.json` |
//!
//! The kernel names no events for the UPI, UMC and DF PMUs, so their encodings are per CPU model
//! and taken from Linux perf's own lists (`tools/perf/pmu-events/arch/x86/<model>/*.json`, cited
//! at each table below); the bit positions of each term still come from the PMU's sysfs `format/`
//! files, as perf does. **None of this has run on hardware yet**: our machines have no uncore PMU,
//! so it is tested on sysfs trees with the documented files and on the failure path.
//!
//! Where the counts go: an uncore PMU's `cpumask` lists one cpu per socket (package), and an event
//! opened on that cpu counts that socket's boxes. Counts are summed per socket and written with
//! scope `node` (scope_id = the node id) when the socket holds exactly one NUMA node. A socket
//! split into several nodes (Intel SNC, AMD NPS2/NPS4, "L3 as NUMA node") does not say which
//! channel or link serves which node, so its totals are written with scope `socket` (scope_id =
//! the kernel's `physical_package_id`) and never attributed to one of its nodes; the source reason
//! says which nodes each such socket holds.
//!
//! System-wide uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid ≤ 0. Each
//! read is scaled by time_enabled / time_running when the kernel multiplexed an event (the Zen 2/3
//! data fabric has 4 counters for 12 events); a (counter, scope) sum is written only when every one
//! of its events could be read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::Counter;
use perf_event_open::event::dp::DynamicPmu;

use super::pmu::{encode_event, read_formats, Formats};
use crate::topology::Roots;
use crate::trace::{Capability, SourceStatus};

/// What a sum of counts belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// A NUMA node: its socket holds no other node.
    Node(i32),
    /// A socket (kernel `physical_package_id`) that holds several NUMA nodes.
    Socket(i32),
}

impl Scope {
    /// The `counters.scope` string.
    pub fn name(&self) -> &'static str {
        match self {
            Scope::Node(_) => "node",
            Scope::Socket(_) => "socket",
        }
    }

    /// The `counters.scope_id`.
    pub fn id(&self) -> i32 {
        match *self {
            Scope::Node(n) | Scope::Socket(n) => n,
        }
    }
}

/// One event to count on one cpu.
#[derive(Clone, Debug, PartialEq)]
pub struct UncoreSpec {
    pub pmu: String,
    pub ty: u32,
    pub config: [u64; 3],
    /// The cpu it is counted on (from the PMU's cpumask: one per socket).
    pub cpu: u32,
    /// Where its counts are summed.
    pub scope: Scope,
    /// `mc-read-bytes`, `mc-write-bytes`, `mc-bytes`, `link-tx-bytes` or `link-rx-bytes`.
    pub counter: &'static str,
    /// Bytes per count.
    pub bytes_per_count: f64,
    /// The event's name (perf's, or the sysfs event's).
    pub event: &'static str,
}

/// The CPU as `/proc/cpuinfo` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuId {
    pub vendor: String,
    pub family: u32,
    pub model: u32,
    pub stepping: Option<u32>,
}

impl CpuId {
    fn describe(&self) -> String {
        format!("{} family {:#x} model {:#04x}", self.vendor, self.family, self.model)
    }
}

/// Vendor, family, model and stepping of the first processor in `/proc/cpuinfo` text.
pub fn parse_cpuinfo(text: &str) -> Option<CpuId> {
    let block = text.split("\n\n").next()?;
    let field = |name: &str| {
        block.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    Some(CpuId {
        vendor: field("vendor_id")?,
        family: field("cpu family")?.parse().ok()?,
        model: field("model")?.parse().ok()?,
        stepping: field("stepping").and_then(|s| s.parse().ok()),
    })
}

/// [`parse_cpuinfo`] of `<proc>/cpuinfo`.
pub fn read_cpu_id(proc_root: &Path) -> Option<CpuId> {
    parse_cpuinfo(&fs::read_to_string(proc_root.join("cpuinfo")).ok()?)
}

/// One event of a per-model table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableEvent {
    /// perf's event name.
    pub name: &'static str,
    /// Terms for the PMU's sysfs `format/` files.
    pub terms: &'static str,
    pub counter: &'static str,
    pub bytes_per_count: f64,
}

/// Bytes per UPI data flit: perf's metrics `upi_data_transmit_bw` / `upi_data_receive_bw` use
/// `UNC_UPI_TxL_FLITS.ALL_DATA * 7.111111111111111` (= 64/9: nine data flits carry 64 bytes) in
/// skylakex/skx-metrics.json, cascadelakex/clx-metrics.json, icelakex/icx-metrics.json,
/// sapphirerapids/spr-metrics.json, emeraldrapids/emr-metrics.json (transmit only) and
/// graniterapids/gnr-metrics.json.
pub const UPI_BYTES_PER_FLIT: f64 = 64.0 / 9.0;

/// `UNC_UPI_TxL_FLITS.ALL_DATA`: EventCode 0x02, UMask 0x0f, Unit UPI in
/// `<model>/uncore-interconnect.json` of skylakex, cascadelakex, icelakex, sapphirerapids,
/// emeraldrapids and graniterapids alike.
pub const UPI_TX: TableEvent = TableEvent {
    name: "UNC_UPI_TxL_FLITS.ALL_DATA",
    terms: "event=0x02,umask=0x0f",
    counter: "link-tx-bytes",
    bytes_per_count: UPI_BYTES_PER_FLIT,
};

/// `UNC_UPI_RxL_FLITS.ALL_DATA`: EventCode 0x03, UMask 0x0f, Unit UPI in the same files.
pub const UPI_RX: TableEvent = TableEvent {
    name: "UNC_UPI_RxL_FLITS.ALL_DATA",
    terms: "event=0x03,umask=0x0f",
    counter: "link-rx-bytes",
    bytes_per_count: UPI_BYTES_PER_FLIT,
};

/// An Intel server model with UPI events in perf's JSON.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpiModel {
    pub label: &'static str,
    /// perf's `tools/perf/pmu-events/arch/x86/<dir>`.
    pub perf_dir: &'static str,
    pub events: &'static [TableEvent],
}

/// The UPI events of an Intel model, by perf's `arch/x86/mapfile.csv` (GenuineIntel-6-55-[01234]
/// skylakex, 6-55-[56789ABCDEF] cascadelakex, 6-6[AC] icelakex, 6-8F sapphirerapids, 6-CF
/// emeraldrapids, 6-A[DE] graniterapids). Received bytes only where perf has a receive metric
/// (`upi_data_receive_bw`): not for Emerald Rapids, whose emr-metrics.json has only the transmit one.
pub fn intel_upi_model(id: &CpuId) -> Option<UpiModel> {
    const TX_RX: &[TableEvent] = &[UPI_TX, UPI_RX];
    const TX: &[TableEvent] = &[UPI_TX];
    if id.vendor != "GenuineIntel" || id.family != 6 {
        return None;
    }
    let m = |label, perf_dir, events| Some(UpiModel { label, perf_dir, events });
    match id.model {
        0x55 if id.stepping.is_some_and(|s| s >= 5) => m("Cascade Lake-SP", "cascadelakex", TX_RX),
        0x55 => m("Skylake-SP", "skylakex", TX_RX),
        0x6a | 0x6c => m("Ice Lake-SP", "icelakex", TX_RX),
        0x8f => m("Sapphire Rapids", "sapphirerapids", TX_RX),
        0xcf => m("Emerald Rapids", "emeraldrapids", TX),
        0xad | 0xae => m("Granite Rapids", "graniterapids", TX_RX),
        _ => None,
    }
}

/// `umc_cas_cmd.rd` (EventCode 0x0a, RdWrMask 0x1, Unit UMCPMC) in amdzen4/memory-controller.json
/// and amdzen5/memory-controller.json; perf's metric `umc_mem_read_bandwidth` in
/// amdzen4/recommended.json and amdzen5/recommended.json is `umc_cas_cmd.rd * 64`.
pub const UMC_READ: TableEvent = TableEvent {
    name: "umc_cas_cmd.rd",
    terms: "event=0x0a,rdwrmask=0x1",
    counter: "mc-read-bytes",
    bytes_per_count: 64.0,
};

/// `umc_cas_cmd.wr` (EventCode 0x0a, RdWrMask 0x2); metric `umc_mem_write_bandwidth` =
/// `umc_cas_cmd.wr * 64`.
pub const UMC_WRITE: TableEvent = TableEvent {
    name: "umc_cas_cmd.wr",
    terms: "event=0x0a,rdwrmask=0x2",
    counter: "mc-write-bytes",
    bytes_per_count: 64.0,
};

const fn df_dram(name: &'static str, terms: &'static str) -> TableEvent {
    TableEvent { name, terms, counter: "mc-bytes", bytes_per_count: 64.0 }
}

/// `dram_channel_data_controller_0..7` in amdzen2/data-fabric.json and amdzen3/data-fabric.json:
/// "DRAM Channel Controller Request Types: Requests with Data (64B)", EventCode 0x07, 0x47, 0x87,
/// 0xc7, 0x107, 0x147, 0x187, 0x1c7, UMask 0x38, Unit DFPMC. Reads and writes together (perf's
/// metric `nps1_die_to_dram` sums them, ScaleUnit 6.1e-5MiB: 64 bytes rounded); the high bits of
/// event codes above 0xff land in config bits 32-35 through the PMU's `format/event`.
pub const DF_DRAM_CHANNELS: [TableEvent; 8] = [
    df_dram("dram_channel_data_controller_0", "event=0x07,umask=0x38"),
    df_dram("dram_channel_data_controller_1", "event=0x47,umask=0x38"),
    df_dram("dram_channel_data_controller_2", "event=0x87,umask=0x38"),
    df_dram("dram_channel_data_controller_3", "event=0xc7,umask=0x38"),
    df_dram("dram_channel_data_controller_4", "event=0x107,umask=0x38"),
    df_dram("dram_channel_data_controller_5", "event=0x147,umask=0x38"),
    df_dram("dram_channel_data_controller_6", "event=0x187,umask=0x38"),
    df_dram("dram_channel_data_controller_7", "event=0x1c7,umask=0x38"),
];

const fn df_link(name: &'static str, terms: &'static str) -> TableEvent {
    TableEvent { name, terms, counter: "link-tx-bytes", bytes_per_count: 32.0 }
}

/// `remote_outbound_data_controller_0..3` in amdzen2/data-fabric.json and amdzen3/data-fabric.json:
/// "Remote Link Controller Outbound Packet Types: Data (32B)", EventCode 0x7c7, 0x807, 0x847,
/// 0x887, UMask 0x02, Unit DFPMC: data leaving the socket over its xGMI links (perf's metric
/// `all_remote_links_outbound` sums them, ScaleUnit 3e-5MiB: 32 bytes rounded).
pub const DF_XGMI_OUT: [TableEvent; 4] = [
    df_link("remote_outbound_data_controller_0", "event=0x7c7,umask=0x02"),
    df_link("remote_outbound_data_controller_1", "event=0x807,umask=0x02"),
    df_link("remote_outbound_data_controller_2", "event=0x847,umask=0x02"),
    df_link("remote_outbound_data_controller_3", "event=0x887,umask=0x02"),
];

/// AMD Zen generations by perf's mapfile.csv (AuthenticAMD-23-([12][0-9A-F]|[0-9A-F]) amdzen1,
/// AuthenticAMD-23 other models amdzen2, AuthenticAMD-25-([245][0-9A-F]|[0-9A-F]) amdzen3,
/// AuthenticAMD-25 other models amdzen4, AuthenticAMD-26 amdzen5): (label, perf dir, generation).
pub fn amd_zen(id: &CpuId) -> Option<(&'static str, &'static str, u32)> {
    if id.vendor != "AuthenticAMD" {
        return None;
    }
    match (id.family, id.model) {
        (0x17, 0x00..=0x2f) => Some(("Zen 1", "amdzen1", 1)),
        (0x17, _) => Some(("Zen 2", "amdzen2", 2)),
        (0x19, 0x00..=0x0f) | (0x19, 0x20..=0x5f) => Some(("Zen 3", "amdzen3", 3)),
        (0x19, _) => Some(("Zen 4", "amdzen4", 4)),
        (0x1a, _) => Some(("Zen 5", "amdzen5", 5)),
        _ => None,
    }
}

/// What the planner made of one PMU family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No such PMU.
    Absent,
    /// Events planned.
    Planned,
    /// PMUs present but not counted (unknown model, no events); the line says why.
    NotCounted,
    /// The sysfs files could not be read or used; the line says which.
    Failed,
}

/// One PMU family's verdict, as the probe and the source reason show it.
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyVerdict {
    /// `uncore_imc`, `uncore_upi`, `uncore_qpi`, `amd_umc`, `amd_df`, `arm_cmn`.
    pub family: &'static str,
    pub pmus: Vec<String>,
    pub outcome: Outcome,
    pub line: String,
}

/// The planner's result: the events to count and a verdict per PMU family.
#[derive(Clone, Debug, Default)]
pub struct UncorePlan {
    pub cpu: Option<CpuId>,
    pub specs: Vec<UncoreSpec>,
    pub families: Vec<FamilyVerdict>,
    /// Sockets counted with scope `socket`, with the nodes each holds.
    pub split_sockets: BTreeMap<i32, BTreeSet<i32>>,
}

impl UncorePlan {
    /// Some uncore PMU of a known family is present.
    pub fn any_pmu(&self) -> bool {
        self.families.iter().any(|f| f.outcome != Outcome::Absent)
    }

    /// Some planned event writes a counter starting with `prefix` (`mc-`, `link-`).
    pub fn counts(&self, prefix: &str) -> bool {
        self.specs.iter().any(|s| s.counter.starts_with(prefix))
    }

    /// The verdict lines, `; `-separated, then which nodes each socket-scope socket holds.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self.families.iter().map(|f| f.line.clone()).collect();
        if let Some(s) = split_sockets_note(&self.split_sockets) {
            parts.push(s);
        }
        parts.join("; ")
    }

    /// The lines of families whose sysfs files could not be used.
    pub fn failure(&self) -> Option<String> {
        let v: Vec<&str> =
            self.families.iter().filter(|f| f.outcome == Outcome::Failed).map(|f| f.line.as_str()).collect();
        (!v.is_empty()).then(|| v.join("; "))
    }

    /// The verdict lines of the named families (`uncore_upi`, `amd_df`, …), `; `-separated.
    pub fn lines_for(&self, families: &[&str]) -> String {
        self.families
            .iter()
            .filter(|f| families.contains(&f.family))
            .map(|f| f.line.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn split_sockets_note(split: &BTreeMap<i32, BTreeSet<i32>>) -> Option<String> {
    if split.is_empty() {
        return None;
    }
    let each: Vec<String> = split
        .iter()
        .map(|(s, nodes)| {
            format!("socket {s} holds nodes {}", nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", "))
        })
        .collect();
    Some(format!(
        "{} (SNC/NPS: the kernel does not say which channel or link serves which node, so these are counted per socket, scope socket)",
        each.join(", ")
    ))
}

/// cpu → socket from `devices/system/cpu/cpuN/topology/physical_package_id`.
struct Sockets {
    package_of: BTreeMap<u32, i32>,
    node_dirs: usize,
}

impl Sockets {
    fn read(sys: &Path) -> Sockets {
        let mut package_of = BTreeMap::new();
        if let Ok(rd) = fs::read_dir(sys.join("devices/system/cpu")) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else { continue };
                if let Some(p) = fs::read_to_string(e.path().join("topology/physical_package_id"))
                    .ok()
                    .and_then(|s| s.trim().parse::<i32>().ok())
                {
                    package_of.insert(cpu, p);
                }
            }
        }
        let node_dirs = fs::read_dir(sys.join("devices/system/node"))
            .map(|rd| {
                rd.flatten()
                    .filter(|e| {
                        e.file_name().to_string_lossy().strip_prefix("node").is_some_and(|n| n.parse::<u32>().is_ok())
                    })
                    .count()
            })
            .unwrap_or(0);
        Sockets { package_of, node_dirs }
    }

    fn nodes_of(&self, pkg: i32, node_of: &dyn Fn(u32) -> i32) -> BTreeSet<i32> {
        self.package_of.iter().filter(|(_, &p)| p == pkg).map(|(&c, _)| node_of(c)).filter(|&n| n >= 0).collect()
    }

    /// Node scope when the cpu's socket holds exactly one node, socket scope otherwise.
    fn scope(
        &self,
        cpu: u32,
        node_of: &dyn Fn(u32) -> i32,
        split: &mut BTreeMap<i32, BTreeSet<i32>>,
    ) -> Result<Scope, String> {
        match self.package_of.get(&cpu) {
            Some(&pkg) => {
                let nodes = self.nodes_of(pkg, node_of);
                if nodes.len() == 1 {
                    Ok(Scope::Node(*nodes.first().unwrap()))
                } else {
                    split.insert(pkg, nodes);
                    Ok(Scope::Socket(pkg))
                }
            }
            None if self.node_dirs <= 1 => Ok(Scope::Node(node_of(cpu).max(0))),
            None => Err(format!(
                "cannot tell which socket cpu {cpu} belongs to (no devices/system/cpu/cpu{cpu}/topology/physical_package_id), so its counts cannot be attributed"
            )),
        }
    }
}

/// A PMU's sysfs directory, read.
struct PmuDir {
    name: String,
    ty: u32,
    cpus: Vec<u32>,
    formats: Formats,
}

fn read_pmu(devices: &Path, name: &str) -> Result<PmuDir, String> {
    let d = devices.join(name);
    let read =
        |f: &str| fs::read_to_string(d.join(f)).map(|s| s.trim().to_string()).map_err(|e| format!("{name}/{f}: {e}"));
    let ty: u32 = read("type")?.parse().map_err(|_| format!("{name}/type is not a number"))?;
    let cpus = crate::topology::parse_cpulist(&read("cpumask")?)?;
    if cpus.is_empty() {
        return Err(format!("{name}/cpumask is empty"));
    }
    let formats = read_formats(&d)?;
    Ok(PmuDir { name: name.to_string(), ty, cpus, formats })
}

/// `MiB`, `KiB`, `Bytes`… → bytes.
fn unit_bytes(unit: &str) -> Option<f64> {
    match unit.trim() {
        "" | "Bytes" | "B" | "bytes" => Some(1.0),
        "KiB" | "KB" => Some(1024.0),
        "MiB" | "MB" => Some(1048576.0),
        "GiB" | "GB" => Some(1073741824.0),
        _ => None,
    }
}

/// PMUs whose name starts with `prefix`, sorted by their numeric suffix.
fn pmus_named(all: &[String], prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = all.iter().filter(|p| p.starts_with(prefix)).cloned().collect();
    v.sort_by_key(|p| {
        let digits: String =
            p.chars().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), p.clone())
    });
    v
}

struct Planner<'a> {
    devices: std::path::PathBuf,
    sockets: Sockets,
    node_of: &'a dyn Fn(u32) -> i32,
    plan: UncorePlan,
}

impl Planner<'_> {
    /// Specs of `events` on every cpu of every PMU in `pmus`; errors name the PMU and file.
    fn table_specs(&mut self, pmus: &[String], events: &[TableEvent]) -> Result<Vec<UncoreSpec>, String> {
        let mut out = Vec::new();
        for name in pmus {
            let p = read_pmu(&self.devices, name)?;
            for ev in events {
                let config =
                    encode_event(&p.formats, ev.terms, &[]).map_err(|e| format!("{name}: {}: {e}", ev.name))?;
                for &cpu in &p.cpus {
                    out.push(UncoreSpec {
                        pmu: p.name.clone(),
                        ty: p.ty,
                        config,
                        cpu,
                        scope: self.sockets.scope(cpu, self.node_of, &mut self.plan.split_sockets)?,
                        counter: ev.counter,
                        bytes_per_count: ev.bytes_per_count,
                        event: ev.name,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Intel memory channels from the sysfs events `cas_count_read` / `cas_count_write`.
    fn imc_specs(&mut self, pmus: &[String]) -> Result<Vec<UncoreSpec>, String> {
        let mut out = Vec::new();
        for name in pmus {
            let d = self.devices.join(name);
            let read = |f: &str| {
                fs::read_to_string(d.join(f)).map(|s| s.trim().to_string()).map_err(|e| format!("{name}/{f}: {e}"))
            };
            let has_events = ["cas_count_read", "cas_count_write"].iter().any(|e| d.join("events").join(e).exists());
            if !has_events {
                continue;
            }
            let p = read_pmu(&self.devices, name)?;
            for (event, counter) in [("cas_count_read", "mc-read-bytes"), ("cas_count_write", "mc-write-bytes")] {
                let Ok(text) = read(&format!("events/{event}")) else { continue };
                let scale: f64 = match read(&format!("events/{event}.scale")) {
                    Ok(s) => s.parse().map_err(|_| format!("{name}/events/{event}.scale is not a number: {s:?}"))?,
                    Err(_) => 1.0,
                };
                let unit = read(&format!("events/{event}.unit")).unwrap_or_default();
                let per = unit_bytes(&unit)
                    .ok_or_else(|| format!("{name}/events/{event}.unit {unit:?} is not a byte unit"))?;
                let config = encode_event(&p.formats, &text, &[]).map_err(|e| format!("{name}/events/{event}: {e}"))?;
                for &cpu in &p.cpus {
                    out.push(UncoreSpec {
                        pmu: p.name.clone(),
                        ty: p.ty,
                        config,
                        cpu,
                        scope: self.sockets.scope(cpu, self.node_of, &mut self.plan.split_sockets)?,
                        counter,
                        bytes_per_count: scale * per,
                        event,
                    });
                }
            }
        }
        Ok(out)
    }

    fn push(&mut self, family: &'static str, pmus: &[String], outcome: Outcome, line: String) {
        self.plan.families.push(FamilyVerdict { family, pmus: pmus.to_vec(), outcome, line });
    }

    /// Adds `specs` as the family's plan (or its error as a failed verdict).
    fn take(&mut self, family: &'static str, pmus: &[String], r: Result<Vec<UncoreSpec>, String>, what: String) {
        match r {
            Ok(specs) if specs.is_empty() => self.push(family, pmus, Outcome::NotCounted, what),
            Ok(specs) => {
                let line = format!("{what}, {}", scope_words(&specs));
                self.plan.specs.extend(specs);
                self.push(family, pmus, Outcome::Planned, line);
            }
            Err(e) => self.push(family, pmus, Outcome::Failed, format!("{family}: {e}")),
        }
    }
}

fn scope_words(specs: &[UncoreSpec]) -> &'static str {
    let node = specs.iter().any(|s| matches!(s.scope, Scope::Node(_)));
    let socket = specs.iter().any(|s| matches!(s.scope, Scope::Socket(_)));
    match (node, socket) {
        (true, false) => "per node",
        (false, true) => "per socket",
        _ => "per node or socket",
    }
}

fn counters_of(events: &[TableEvent]) -> String {
    let mut v: Vec<&str> = events.iter().map(|e| e.counter).collect();
    v.dedup();
    v.join(", ")
}

/// Plans the uncore events of the machine under `roots` (`/sys`, `/proc`). `node_of_cpu` maps a
/// cpu to its NUMA node (-1: none). Reads files only; opens nothing.
pub fn plan_uncore(roots: &Roots, node_of_cpu: &dyn Fn(u32) -> i32) -> UncorePlan {
    let devices = roots.sys.join("bus/event_source/devices");
    let all: Vec<String> = fs::read_dir(&devices)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let cpu = read_cpu_id(&roots.proc);
    let mut p = Planner {
        devices,
        sockets: Sockets::read(&roots.sys),
        node_of: node_of_cpu,
        plan: UncorePlan { cpu: cpu.clone(), ..Default::default() },
    };
    let vendor = cpu.as_ref().map(|c| c.vendor.as_str()).unwrap_or("");
    let (intel, amd) = match vendor {
        "GenuineIntel" => (true, false),
        "AuthenticAMD" => (false, true),
        _ => (true, true),
    };
    let cpu_words =
        cpu.as_ref().map(|c| c.describe()).unwrap_or_else(|| "the CPU model is unknown (no /proc/cpuinfo)".into());

    // Intel memory controllers: sysfs names the events.
    let imc = pmus_named(&all, "uncore_imc");
    if !imc.is_empty() {
        // Free-running and client IMC PMUs have other events: only channels with CAS events count.
        let cas: Vec<String> = imc
            .iter()
            .filter(|n| {
                let ev = p.devices.join(n).join("events");
                ev.join("cas_count_read").exists() || ev.join("cas_count_write").exists()
            })
            .cloned()
            .collect();
        let r = p.imc_specs(&cas);
        let what = if cas.is_empty() {
            format!(
                "uncore_imc present ({} PMUs) but without cas_count_read/cas_count_write events in sysfs: not counted",
                imc.len()
            )
        } else {
            format!(
                "uncore_imc: {} PMUs, sysfs events cas_count_read/cas_count_write × .scale × .unit → mc-read-bytes, mc-write-bytes",
                cas.len()
            )
        };
        p.take("uncore_imc", &imc, r, what);
    } else if intel {
        p.push("uncore_imc", &[], Outcome::Absent, "no uncore_imc PMU".into());
    }

    // Intel UPI links.
    let upi = pmus_named(&all, "uncore_upi");
    if !upi.is_empty() {
        match cpu.as_ref().and_then(intel_upi_model) {
            Some(m) => {
                let r = p.table_specs(&upi, m.events);
                let what = format!(
                    "uncore_upi: {} links, {} ({}), {} from perf's {} JSON, 64/9 bytes per flit → {} summed over the socket's links",
                    upi.len(),
                    m.label,
                    cpu_words,
                    m.events.iter().map(|e| e.name).collect::<Vec<_>>().join(" and "),
                    m.perf_dir,
                    counters_of(m.events),
                );
                p.take("uncore_upi", &upi, r, what);
            }
            None => {
                let line = if cpu.is_some() {
                    format!("uncore_upi present but {cpu_words} has no known encoding: not counted")
                } else {
                    format!("uncore_upi present but {cpu_words}: not counted")
                };
                p.push("uncore_upi", &upi, Outcome::NotCounted, line);
            }
        }
    } else if intel {
        p.push("uncore_upi", &[], Outcome::Absent, "no uncore_upi PMU".into());
    }
    let qpi = pmus_named(&all, "uncore_qpi");
    if !qpi.is_empty() {
        p.push(
            "uncore_qpi",
            &qpi,
            Outcome::NotCounted,
            "uncore_qpi present (QPI, before Skylake-SP): no encoding here: not counted".into(),
        );
    }

    // AMD memory controllers (Zen 4 / Zen 5).
    let zen = cpu.as_ref().and_then(amd_zen);
    let umc = pmus_named(&all, "amd_umc");
    let mut umc_planned = false;
    if !umc.is_empty() {
        match zen {
            Some((label, dir, 4 | 5)) => {
                let events = [UMC_READ, UMC_WRITE];
                let r = p.table_specs(&umc, &events);
                umc_planned = matches!(&r, Ok(s) if !s.is_empty());
                let what = format!(
                    "amd_umc: {} channels, {label} ({cpu_words}), umc_cas_cmd.rd/umc_cas_cmd.wr from perf's {dir} JSON, 64 bytes per CAS → mc-read-bytes, mc-write-bytes",
                    umc.len()
                );
                p.take("amd_umc", &umc, r, what);
            }
            _ => {
                let line = if cpu.is_some() {
                    format!("amd_umc present but {cpu_words} has no known encoding: not counted")
                } else {
                    format!("amd_umc present but {cpu_words}: not counted")
                };
                p.push("amd_umc", &umc, Outcome::NotCounted, line);
            }
        }
    } else if amd {
        p.push("amd_umc", &[], Outcome::Absent, "no amd_umc PMU".into());
    }

    // AMD data fabric (Zen 2 / Zen 3).
    let df: Vec<String> = all.iter().filter(|n| *n == "amd_df").cloned().collect();
    if !df.is_empty() {
        match zen {
            Some((label, dir, 2 | 3)) => {
                let events: Vec<TableEvent> = DF_DRAM_CHANNELS.iter().chain(DF_XGMI_OUT.iter()).copied().collect();
                let r = p.table_specs(&df, &events);
                let what = format!(
                    "amd_df: {label} ({cpu_words}), dram_channel_data_controller_0..7 (64 bytes each) and remote_outbound_data_controller_0..3 (xGMI, 32 bytes each) from perf's {dir} JSON → mc-bytes (reads and writes together), link-tx-bytes; {} events share the data fabric's counters (multiplexed, scaled)",
                    events.len()
                );
                p.take("amd_df", &df, r, what);
            }
            Some((label, _, 4 | 5)) if umc_planned => p.push(
                "amd_df",
                &df,
                Outcome::NotCounted,
                format!("amd_df present: not used ({label} memory traffic comes from amd_umc; its data-fabric link events are not encoded here)"),
            ),
            Some((label, _, 4 | 5)) => p.push(
                "amd_df",
                &df,
                Outcome::NotCounted,
                format!("amd_df present but {cpu_words} ({label}) has no data-fabric encoding here and no usable amd_umc PMU: not counted"),
            ),
            _ if cpu.is_some() => p.push(
                "amd_df",
                &df,
                Outcome::NotCounted,
                format!("amd_df present but {cpu_words} has no known encoding: not counted"),
            ),
            _ => p.push("amd_df", &df, Outcome::NotCounted, format!("amd_df present but {cpu_words}: not counted")),
        }
    } else if amd {
        p.push("amd_df", &[], Outcome::Absent, "no amd_df PMU".into());
    }

    let cmn = pmus_named(&all, "arm_cmn");
    if !cmn.is_empty() {
        p.push("arm_cmn", &cmn, Outcome::NotCounted, "arm_cmn present: no encoding here: not counted".into());
    }
    p.plan
}

/// The opened events and the rows read from them.
pub struct UncoreCounters {
    specs: Vec<UncoreSpec>,
    counters: Vec<Counter>,
    /// (time_us, counter, scope, cumulative bytes)
    rows: Vec<(i64, &'static str, Scope, f64)>,
    /// Reads where the kernel had multiplexed an event (scaled by time_enabled / time_running).
    pub multiplexed_reads: u64,
    /// (counter, scope) sums left out of a poll because one of their events could not be read.
    pub incomplete_sums: u64,
    /// What was planned and why (the plan's summary).
    summary: String,
}

impl UncoreCounters {
    /// Opens every planned event (system-wide on its cpu); the first failure is the error.
    #[allow(clippy::field_reassign_with_default)]
    pub fn open(specs: Vec<UncoreSpec>) -> Result<Self, String> {
        let mut opts = Opts::default();
        opts.enable = true;
        opts.stat_format.time_enabled = true;
        opts.stat_format.time_running = true;
        let mut counters = Vec::new();
        for s in &specs {
            let ev =
                DynamicPmu { ty: s.ty, config: s.config[0], config1: s.config[1], config2: s.config[2], config3: 0 };
            let c = Counter::new(ev, (Proc::ALL, Cpu(s.cpu)), &opts).map_err(|e| {
                let hint = match e.raw_os_error() {
                    Some(libc::EACCES) | Some(libc::EPERM) => {
                        " (system-wide uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid <= 0)"
                    }
                    _ => "",
                };
                format!("cannot open {}/{} ({}) on cpu {}: {e}{hint}", s.pmu, s.counter, s.event, s.cpu)
            })?;
            counters.push(c);
        }
        Ok(UncoreCounters {
            specs,
            counters,
            rows: Vec::new(),
            multiplexed_reads: 0,
            incomplete_sums: 0,
            summary: String::new(),
        })
    }

    /// Plans and opens the uncore events of the machine under `roots`. `None`: nothing to count
    /// (no uncore PMU with a known encoding, and no sysfs file that failed); `Some(Err)`: the
    /// source failed, with the reason.
    pub fn start(roots: &Roots, node_of_cpu: &dyn Fn(u32) -> i32) -> Option<Result<Self, String>> {
        let plan = plan_uncore(roots, node_of_cpu);
        if plan.specs.is_empty() {
            return plan.failure().map(Err);
        }
        let summary = plan.summary();
        Some(UncoreCounters::open(plan.specs).map(|mut u| {
            u.summary = summary;
            u
        }))
    }

    /// The PMUs counted, each once.
    pub fn pmus(&self) -> Vec<String> {
        let mut v: Vec<String> = self.specs.iter().map(|s| s.pmu.clone()).collect();
        v.dedup();
        v
    }

    /// The counters written, each once.
    pub fn counter_names(&self) -> Vec<&'static str> {
        let set: BTreeSet<&'static str> = self.specs.iter().map(|s| s.counter).collect();
        set.into_iter().collect()
    }

    /// Reads every event and adds one row per (counter, scope): the sum over that scope's events.
    pub fn read(&mut self, time_us: i64) {
        let mut values: Vec<Option<f64>> = Vec::with_capacity(self.counters.len());
        for c in &self.counters {
            values.push(match c.stat() {
                Ok(st) => {
                    let (en, run) = (st.time_enabled.unwrap_or(0), st.time_running.unwrap_or(0));
                    if run > 0 && run < en {
                        self.multiplexed_reads += 1;
                        Some(st.count as f64 * en as f64 / run as f64)
                    } else if run == 0 && en > 0 {
                        None // enabled but never on the PMU yet: no count to scale
                    } else {
                        Some(st.count as f64)
                    }
                }
                Err(_) => None,
            });
        }
        let (sums, incomplete) = sum_by_scope(&self.specs, &values);
        self.incomplete_sums += incomplete as u64;
        for ((counter, scope), v) in sums {
            self.rows.push((time_us, counter, scope, v));
        }
    }

    /// Rows read so far whose counter starts with `prefix`.
    pub fn rows_of(&self, prefix: &str) -> usize {
        self.rows.iter().filter(|r| r.1.starts_with(prefix)).count()
    }

    /// Writes the rows into `counters` (scope `node` or `socket`), keeping the table in time order.
    pub fn add_to_trace(&self, trace: &mut crate::trace::TraceData) -> usize {
        self.write_counters(&mut trace.counters)
    }

    fn write_counters(&self, c: &mut crate::trace::Counters) -> usize {
        for &(t, name, scope, v) in &self.rows {
            c.time_us.push(t);
            c.counter.push(name);
            c.scope.push(scope.name());
            c.scope_id.push(scope.id());
            c.value.push(v);
        }
        crate::sources::damon::sort_counters_by_time(c);
        self.rows.len()
    }

    /// The `uncore` source's reason for a recording.
    pub fn source_reason(&self) -> String {
        let mut s = format!(
            "system-wide uncore counting of {} ({}), cumulative bytes ({} rows); encodings from the kernel's sysfs events and Linux perf's event JSON, not yet checked on hardware by this project",
            self.pmus().join(", "),
            self.counter_names().join(", "),
            self.rows.len()
        );
        if !self.summary.is_empty() {
            s.push_str(&format!(": {}", self.summary));
        }
        if self.multiplexed_reads > 0 {
            s.push_str(&format!("; {} reads were multiplexed and scaled", self.multiplexed_reads));
        }
        if self.incomplete_sums > 0 {
            s.push_str(&format!(
                "; {} sums were left out because one of their events could not be read",
                self.incomplete_sums
            ));
        }
        s
    }
}

/// Bytes per (counter, scope) from raw counts (None: that event could not be read), and how many
/// sums were left out because one of their events was unreadable.
pub fn sum_by_scope(specs: &[UncoreSpec], counts: &[Option<f64>]) -> (BTreeMap<(&'static str, Scope), f64>, usize) {
    let mut out: BTreeMap<(&'static str, Scope), f64> = BTreeMap::new();
    let mut broken: BTreeSet<(&'static str, Scope)> = BTreeSet::new();
    for (s, v) in specs.iter().zip(counts) {
        let k = (s.counter, s.scope);
        match v {
            Some(v) => *out.entry(k).or_insert(0.0) += v * s.bytes_per_count,
            None => {
                broken.insert(k);
            }
        }
    }
    for k in &broken {
        out.remove(k);
    }
    (out, broken.len())
}

/// The `uncore` entry of `capture.sources` for a recording (None: not planned, the probe's
/// verdict stands).
pub fn source_status(u: &Option<Result<UncoreCounters, String>>, interval_ms: u64) -> Option<SourceStatus> {
    match u {
        Some(Ok(u)) => Some(SourceStatus {
            id: "uncore".into(),
            status: "used".into(),
            reason: Some(u.source_reason()),
            sample_period: None,
            interval_ms: Some(interval_ms),
        }),
        Some(Err(e)) => Some(SourceStatus {
            id: "uncore".into(),
            status: "failed".into(),
            reason: Some(e.clone()),
            sample_period: None,
            interval_ms: None,
        }),
        None => None,
    }
}

/// Sets `memory-bandwidth` and `link-bandwidth` from what a recording read: measured when rows
/// were read, unavailable with the reason otherwise. `enabled`: uncore counting was asked for.
pub fn update_capabilities(caps: &mut [Capability], u: &Option<Result<UncoreCounters, String>>, enabled: bool) {
    for (metric, prefix, what) in [
        ("memory-bandwidth", "mc-", "memory-controller bytes"),
        ("link-bandwidth", "link-", "interconnect link bytes (UPI / xGMI data)"),
    ] {
        let Some(c) = caps.iter_mut().find(|c| c.metric == metric) else { continue };
        match u {
            Some(Ok(u)) if u.rows_of(prefix) > 0 => {
                c.status = "measured".into();
                c.reason = format!(
                    "{what} from uncore counters ({} rows of {}; whole machine, not only the recorded process; encodings not yet checked on hardware)",
                    u.rows_of(prefix),
                    u.counter_names().iter().filter(|n| n.starts_with(prefix)).copied().collect::<Vec<_>>().join(", ")
                );
            }
            Some(Err(e)) => {
                c.status = "unavailable".into();
                c.reason = format!("uncore counters: {e}");
            }
            Some(Ok(u)) if u.specs.iter().any(|s| s.counter.starts_with(prefix)) => {
                c.status = "unavailable".into();
                c.reason = format!("uncore {what}: no rows were read");
            }
            _ if c.status == "measured" => {
                c.status = "unavailable".into();
                c.reason = if enabled {
                    format!("no uncore {what} were read")
                } else {
                    "uncore counting was turned off (--no-uncore)".into()
                };
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn fresh(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("numascope-uncore-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        root
    }

    fn roots(root: &Path) -> Roots {
        Roots { sys: root.join("sys"), proc: root.join("proc") }
    }

    /// `sockets` sockets × `per` cpus; cpu c is in socket c / per; node of each socket listed.
    fn topology(root: &Path, sockets: u32, per: u32, nodes: &[&[u32]]) {
        for c in 0..sockets * per {
            put(
                root,
                &format!("sys/devices/system/cpu/cpu{c}/topology/physical_package_id"),
                &format!("{}\n", c / per),
            );
        }
        for (n, cpus) in nodes.iter().enumerate() {
            let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
            put(root, &format!("sys/devices/system/node/node{n}/cpulist"), &list.join(","));
        }
    }

    fn node_map<'a>(nodes: &'a [&'a [u32]]) -> impl Fn(u32) -> i32 + 'a {
        move |cpu| nodes.iter().position(|n| n.contains(&cpu)).map(|n| n as i32).unwrap_or(-1)
    }

    fn cpuinfo(root: &Path, vendor: &str, family: u32, model: u32, stepping: u32) {
        put(
            root,
            "proc/cpuinfo",
            &format!(
                "processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\nmodel name\t: x\nstepping\t: {stepping}\n\nprocessor\t: 1\nvendor_id\t: {vendor}\n"
            ),
        );
    }

    fn pmu(root: &Path, name: &str, ty: u32, mask: &str, formats: &[(&str, &str)]) {
        let d = format!("sys/bus/event_source/devices/{name}");
        put(root, &format!("{d}/type"), &format!("{ty}\n"));
        put(root, &format!("{d}/cpumask"), &format!("{mask}\n"));
        for (f, v) in formats {
            put(root, &format!("{d}/format/{f}"), &format!("{v}\n"));
        }
    }

    fn imc(root: &Path, name: &str, ty: u32, mask: &str) {
        pmu(root, name, ty, mask, &[("event", "config:0-7"), ("umask", "config:8-15")]);
        let d = format!("sys/bus/event_source/devices/{name}");
        put(root, &format!("{d}/events/cas_count_read"), "event=0x04,umask=0x03\n");
        put(root, &format!("{d}/events/cas_count_read.scale"), "6.103515625e-5\n");
        put(root, &format!("{d}/events/cas_count_read.unit"), "MiB\n");
        put(root, &format!("{d}/events/cas_count_write"), "event=0x04,umask=0x0c\n");
        put(root, &format!("{d}/events/cas_count_write.scale"), "6.103515625e-5\n");
        put(root, &format!("{d}/events/cas_count_write.unit"), "MiB\n");
    }

    const SKX_NODES: &[&[u32]] = &[&[0, 1, 2, 3], &[4, 5, 6, 7]];

    /// A two-socket Skylake-SP: 2 memory channels and 3 UPI links per socket, each PMU's cpumask
    /// one cpu per socket (0 and 4), one node per socket.
    fn skx(name: &str) -> PathBuf {
        let root = fresh(name);
        topology(&root, 2, 4, SKX_NODES);
        cpuinfo(&root, "GenuineIntel", 6, 0x55, 4);
        imc(&root, "uncore_imc_0", 14, "0,4");
        imc(&root, "uncore_imc_1", 15, "0,4");
        for (i, ty) in [(0, 20), (1, 21), (2, 22)] {
            pmu(&root, &format!("uncore_upi_{i}"), ty, "0,4", &[("event", "config:0-7"), ("umask", "config:8-15")]);
        }
        put(&root, "sys/bus/event_source/devices/cpu/type", "4\n");
        root
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn parses_cpuinfo_first_processor() {
        let id = parse_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9654\nstepping\t: 1\n\nprocessor\t: 1\n").unwrap();
        assert_eq!(id, CpuId { vendor: "AuthenticAMD".into(), family: 0x19, model: 0x11, stepping: Some(1) });
        assert_eq!(id.describe(), "AuthenticAMD family 0x19 model 0x11");
        assert_eq!(parse_cpuinfo("processor : 0\n"), None);
    }

    #[test]
    fn models_follow_perfs_mapfile() {
        let intel =
            |model, stepping| CpuId { vendor: "GenuineIntel".into(), family: 6, model, stepping: Some(stepping) };
        let dir = |id: CpuId| intel_upi_model(&id).map(|m| (m.perf_dir, m.events.len()));
        assert_eq!(dir(intel(0x55, 4)), Some(("skylakex", 2)));
        assert_eq!(dir(intel(0x55, 7)), Some(("cascadelakex", 2)));
        assert_eq!(dir(intel(0x6a, 6)), Some(("icelakex", 2)));
        assert_eq!(dir(intel(0x8f, 8)), Some(("sapphirerapids", 2)));
        assert_eq!(dir(intel(0xcf, 2)), Some(("emeraldrapids", 1)), "perf has no receive metric for EMR");
        assert_eq!(dir(intel(0xad, 1)), Some(("graniterapids", 2)));
        assert_eq!(dir(intel(0xaf, 3)), None, "Sierra Forest: not in the table");
        assert_eq!(dir(intel(0x9e, 3)), None, "a client part");
        let amd = |family, model| CpuId { vendor: "AuthenticAMD".into(), family, model, stepping: None };
        let gen = |id: CpuId| amd_zen(&id).map(|z| z.2);
        assert_eq!(gen(amd(0x17, 0x01)), Some(1));
        assert_eq!(gen(amd(0x17, 0x31)), Some(2));
        assert_eq!(gen(amd(0x19, 0x01)), Some(3));
        assert_eq!(gen(amd(0x19, 0x21)), Some(3));
        assert_eq!(gen(amd(0x19, 0x11)), Some(4));
        assert_eq!(gen(amd(0x19, 0xa0)), Some(4));
        assert_eq!(gen(amd(0x1a, 0x02)), Some(5));
        assert_eq!(gen(amd(0x18, 0x00)), None, "Hygon");
    }

    #[test]
    fn skx_two_sockets_imc_and_upi_links_per_node() {
        let root = skx("skx");
        let nodes = node_map(SKX_NODES);
        let plan = plan_uncore(&roots(&root), &nodes);
        // 2 channels × 2 events × 2 sockets + 3 links × 2 events × 2 sockets.
        assert_eq!(plan.specs.len(), 8 + 12, "{:#?}", plan.families);
        let r0 = &plan.specs[0];
        assert_eq!(
            (r0.pmu.as_str(), r0.ty, r0.config, r0.cpu, r0.scope, r0.counter),
            ("uncore_imc_0", 14, [0x0304, 0, 0], 0, Scope::Node(0), "mc-read-bytes")
        );
        // 6.103515625e-5 MiB per count = 64 bytes (one cache line per CAS).
        assert!(close(r0.bytes_per_count, 64.0), "{}", r0.bytes_per_count);
        assert_eq!((plan.specs[1].cpu, plan.specs[1].scope), (4, Scope::Node(1)), "the second cpu of the cpumask");
        assert_eq!(plan.specs[2].config, [0x0c04, 0, 0]);
        let upi: Vec<&UncoreSpec> = plan.specs.iter().filter(|s| s.pmu.starts_with("uncore_upi")).collect();
        assert_eq!(upi.len(), 12);
        let tx0 = upi[0];
        assert_eq!(
            (tx0.pmu.as_str(), tx0.ty, tx0.config, tx0.cpu, tx0.scope, tx0.counter, tx0.event),
            ("uncore_upi_0", 20, [0x0f02, 0, 0], 0, Scope::Node(0), "link-tx-bytes", "UNC_UPI_TxL_FLITS.ALL_DATA")
        );
        assert!(close(tx0.bytes_per_count, 64.0 / 9.0));
        let rx1 = upi[3];
        assert_eq!((rx1.config, rx1.cpu, rx1.scope, rx1.counter), ([0x0f03, 0, 0], 4, Scope::Node(1), "link-rx-bytes"));
        // Sums: socket 1's three links' transmitted flits go to node 1.
        let counts: Vec<Option<f64>> = plan
            .specs
            .iter()
            .map(|s| {
                Some(match (s.counter, s.cpu) {
                    ("link-tx-bytes", 4) => 900.0,
                    ("link-tx-bytes", 0) => 90.0,
                    ("mc-read-bytes", 0) => 10.0,
                    _ => 1.0,
                })
            })
            .collect();
        let (by, incomplete) = sum_by_scope(&plan.specs, &counts);
        assert_eq!(incomplete, 0);
        assert!(close(by[&("link-tx-bytes", Scope::Node(1))], 3.0 * 900.0 * 64.0 / 9.0));
        assert!(close(by[&("link-tx-bytes", Scope::Node(0))], 3.0 * 90.0 * 64.0 / 9.0));
        assert!(close(by[&("link-rx-bytes", Scope::Node(0))], 3.0 * 64.0 / 9.0));
        assert!(close(by[&("mc-read-bytes", Scope::Node(0))], 2.0 * 10.0 * 64.0));
        assert!(close(by[&("mc-write-bytes", Scope::Node(1))], 2.0 * 64.0));
        assert!(plan.counts("mc-") && plan.counts("link-"));
        assert_eq!(plan.failure(), None);
        assert_eq!(
            plan.summary(),
            "uncore_imc: 2 PMUs, sysfs events cas_count_read/cas_count_write × .scale × .unit → mc-read-bytes, mc-write-bytes, per node; \
             uncore_upi: 3 links, Skylake-SP (GenuineIntel family 0x6 model 0x55), UNC_UPI_TxL_FLITS.ALL_DATA and UNC_UPI_RxL_FLITS.ALL_DATA from perf's skylakex JSON, 64/9 bytes per flit → link-tx-bytes, link-rx-bytes summed over the socket's links, per node"
        );
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn an_unreadable_event_leaves_its_sum_out() {
        let root = skx("unreadable");
        let plan = plan_uncore(&roots(&root), &node_map(SKX_NODES));
        let mut counts: Vec<Option<f64>> = vec![Some(1.0); plan.specs.len()];
        counts[1] = None; // uncore_imc_0 cas_count_read on cpu 4 (node 1)
        let (by, incomplete) = sum_by_scope(&plan.specs, &counts);
        assert_eq!(incomplete, 1);
        assert!(!by.contains_key(&("mc-read-bytes", Scope::Node(1))), "no partial sum is written");
        assert!(by.contains_key(&("mc-read-bytes", Scope::Node(0))));
        let _ = fs::remove_dir_all(&root);
    }

    /// Sapphire Rapids with SNC-2: two nodes per socket, four UPI links with the wider umask.
    #[test]
    fn spr_with_snc_counts_per_socket() {
        let root = fresh("spr");
        let nodes: &[&[u32]] = &[&[0, 1], &[2, 3], &[4, 5], &[6, 7]];
        topology(&root, 2, 4, nodes);
        cpuinfo(&root, "GenuineIntel", 6, 0x8f, 8);
        for i in 0..4 {
            pmu(
                &root,
                &format!("uncore_upi_{i}"),
                30 + i,
                "0,4",
                &[("event", "config:0-7"), ("umask", "config:8-15,32-55")],
            );
        }
        imc(&root, "uncore_imc_0", 40, "0,4");
        let plan = plan_uncore(&roots(&root), &node_map(nodes));
        let upi: Vec<&UncoreSpec> = plan.specs.iter().filter(|s| s.pmu.starts_with("uncore_upi")).collect();
        assert_eq!(upi.len(), 4 * 2 * 2);
        assert_eq!((upi[0].config, upi[0].scope), ([0x0f02, 0, 0], Scope::Socket(0)));
        assert_eq!((upi[1].cpu, upi[1].scope), (4, Scope::Socket(1)));
        assert!(plan.specs.iter().all(|s| matches!(s.scope, Scope::Socket(_))), "never one node of several");
        let counts = vec![Some(9.0); plan.specs.len()];
        let (by, _) = sum_by_scope(&plan.specs, &counts);
        assert!(close(by[&("link-tx-bytes", Scope::Socket(1))], 4.0 * 9.0 * 64.0 / 9.0));
        assert!(close(by[&("mc-write-bytes", Scope::Socket(0))], 9.0 * 64.0));
        let s = plan.summary();
        assert!(s.contains("uncore_upi: 4 links, Sapphire Rapids (GenuineIntel family 0x6 model 0x8f)"), "{s}");
        assert!(s.contains("from perf's sapphirerapids JSON"), "{s}");
        assert!(s.contains("socket 0 holds nodes 0, 1, socket 1 holds nodes 2, 3 (SNC/NPS"), "{s}");
        assert!(s.contains(", per socket"), "{s}");
        let _ = fs::remove_dir_all(&root);
    }

    /// Zen 3 (Milan), two sockets, NPS1: amd_df with one cpu per socket in its cpumask.
    #[test]
    fn zen3_data_fabric_dram_and_xgmi() {
        let root = fresh("zen3");
        let nodes: &[&[u32]] = &[&[0, 1, 2, 3], &[4, 5, 6, 7]];
        topology(&root, 2, 4, nodes);
        cpuinfo(&root, "AuthenticAMD", 25, 0x01, 1);
        pmu(&root, "amd_df", 11, "0,4", &[("event", "config:0-7,32-35,59-60"), ("umask", "config:8-15")]);
        pmu(&root, "amd_l3", 12, "0,4", &[("event", "config:0-7")]);
        let plan = plan_uncore(&roots(&root), &node_map(nodes));
        assert_eq!(plan.specs.len(), 12 * 2);
        let find = |event: &str, cpu: u32| plan.specs.iter().find(|s| s.event == event && s.cpu == cpu).unwrap();
        let ch0 = find("dram_channel_data_controller_0", 0);
        assert_eq!((ch0.ty, ch0.config, ch0.scope, ch0.counter), (11, [0x3807, 0, 0], Scope::Node(0), "mc-bytes"));
        assert_eq!(ch0.bytes_per_count, 64.0);
        // EventCode 0x107: 0x07 in bits 0-7, 0x1 in bits 32-35.
        assert_eq!(find("dram_channel_data_controller_4", 4).config, [0x1_0000_3807, 0, 0]);
        assert_eq!(find("dram_channel_data_controller_7", 4).config, [0x1_0000_38c7, 0, 0]);
        let x0 = find("remote_outbound_data_controller_0", 4);
        assert_eq!((x0.config, x0.scope, x0.counter), ([0x7_0000_02c7, 0, 0], Scope::Node(1), "link-tx-bytes"));
        assert_eq!(x0.bytes_per_count, 32.0);
        assert_eq!(find("remote_outbound_data_controller_3", 0).config, [0x8_0000_0287, 0, 0]);
        let counts: Vec<Option<f64>> = plan.specs.iter().map(|s| Some(if s.cpu == 0 { 2.0 } else { 5.0 })).collect();
        let (by, _) = sum_by_scope(&plan.specs, &counts);
        assert!(close(by[&("mc-bytes", Scope::Node(0))], 8.0 * 2.0 * 64.0));
        assert!(close(by[&("link-tx-bytes", Scope::Node(1))], 4.0 * 5.0 * 32.0));
        let s = plan.summary();
        assert!(s.starts_with("no amd_umc PMU; amd_df: Zen 3 (AuthenticAMD family 0x19 model 0x01)"), "{s}");
        assert!(s.contains("from perf's amdzen3 JSON → mc-bytes (reads and writes together), link-tx-bytes"), "{s}");
        assert!(s.contains("12 events share the data fabric's counters (multiplexed, scaled), per node"), "{s}");
        let _ = fs::remove_dir_all(&root);
    }

    /// Zen 4 (Genoa), one socket, NPS2: amd_umc_0..3 each counted on cpu 0, per socket.
    #[test]
    fn zen4_umc_channels_nps2_per_socket() {
        let root = fresh("zen4");
        let nodes: &[&[u32]] = &[&[0, 1], &[2, 3]];
        topology(&root, 1, 4, nodes);
        cpuinfo(&root, "AuthenticAMD", 25, 0x11, 1);
        for i in 0..4 {
            pmu(&root, &format!("amd_umc_{i}"), 50 + i, "0", &[("event", "config:0-7"), ("rdwrmask", "config:8-9")]);
        }
        pmu(&root, "amd_df", 11, "0", &[("event", "config:0-7,32-37"), ("umask", "config:8-15,24-27")]);
        let plan = plan_uncore(&roots(&root), &node_map(nodes));
        assert_eq!(plan.specs.len(), 4 * 2);
        let rd = &plan.specs[0];
        assert_eq!(
            (rd.pmu.as_str(), rd.ty, rd.config, rd.cpu, rd.scope, rd.counter, rd.event),
            ("amd_umc_0", 50, [0x010a, 0, 0], 0, Scope::Socket(0), "mc-read-bytes", "umc_cas_cmd.rd")
        );
        assert_eq!(rd.bytes_per_count, 64.0);
        assert_eq!((plan.specs[1].config, plan.specs[1].counter), ([0x020a, 0, 0], "mc-write-bytes"));
        assert_eq!(plan.specs[7].pmu, "amd_umc_3");
        let counts: Vec<Option<f64>> = (0..8).map(|i| Some(i as f64)).collect();
        let (by, _) = sum_by_scope(&plan.specs, &counts);
        assert!(close(by[&("mc-read-bytes", Scope::Socket(0))], (0.0 + 2.0 + 4.0 + 6.0) * 64.0));
        assert!(close(by[&("mc-write-bytes", Scope::Socket(0))], (1.0 + 3.0 + 5.0 + 7.0) * 64.0));
        assert!(!plan.counts("link-"));
        let s = plan.summary();
        assert!(s.starts_with("amd_umc: 4 channels, Zen 4 (AuthenticAMD family 0x19 model 0x11), umc_cas_cmd.rd/umc_cas_cmd.wr from perf's amdzen4 JSON, 64 bytes per CAS → mc-read-bytes, mc-write-bytes, per socket"), "{s}");
        assert!(s.contains("amd_df present: not used (Zen 4 memory traffic comes from amd_umc"), "{s}");
        assert!(s.ends_with("socket 0 holds nodes 0, 1 (SNC/NPS: the kernel does not say which channel or link serves which node, so these are counted per socket, scope socket)"), "{s}");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn unknown_models_are_not_counted_and_say_why() {
        let root = fresh("unknown");
        topology(&root, 1, 2, &[&[0, 1]]);
        cpuinfo(&root, "AuthenticAMD", 0x18, 0x00, 1);
        pmu(&root, "amd_df", 11, "0", &[("event", "config:0-7,32-35,59-60"), ("umask", "config:8-15")]);
        let plan = plan_uncore(&roots(&root), &node_map(&[&[0, 1]]));
        assert!(plan.specs.is_empty() && plan.any_pmu() && plan.failure().is_none());
        assert_eq!(
            plan.summary(),
            "no amd_umc PMU; amd_df present but AuthenticAMD family 0x18 model 0x00 has no known encoding: not counted"
        );
        // An Intel model outside perf's UPI tables, and a kernel with QPI.
        cpuinfo(&root, "GenuineIntel", 6, 0xaf, 3);
        fs::remove_dir_all(root.join("sys/bus/event_source/devices/amd_df")).unwrap();
        pmu(&root, "uncore_upi_0", 20, "0", &[("event", "config:0-7"), ("umask", "config:8-15")]);
        pmu(&root, "uncore_qpi_0", 21, "0", &[("event", "config:0-7")]);
        let plan = plan_uncore(&roots(&root), &node_map(&[&[0, 1]]));
        assert!(plan.specs.is_empty());
        assert_eq!(
            plan.summary(),
            "no uncore_imc PMU; uncore_upi present but GenuineIntel family 0x6 model 0xaf has no known encoding: not counted; \
             uncore_qpi present (QPI, before Skylake-SP): no encoding here: not counted"
        );
        // No /proc/cpuinfo at all.
        fs::remove_file(root.join("proc/cpuinfo")).unwrap();
        let plan = plan_uncore(&roots(&root), &node_map(&[&[0, 1]]));
        assert!(plan
            .summary()
            .contains("uncore_upi present but the CPU model is unknown (no /proc/cpuinfo): not counted"));
        assert!(
            UncoreCounters::start(&roots(&root), &node_map(&[&[0, 1]])).is_none(),
            "nothing to count, nothing failed"
        );
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn bad_sysfs_files_are_named() {
        let root = skx("bad");
        put(&root, "sys/bus/event_source/devices/uncore_imc_1/events/cas_count_read.unit", "furlongs\n");
        let plan = plan_uncore(&roots(&root), &node_map(SKX_NODES));
        let e = plan.failure().unwrap();
        assert_eq!(e, "uncore_imc: uncore_imc_1/events/cas_count_read.unit \"furlongs\" is not a byte unit");
        assert!(plan.specs.iter().all(|s| s.pmu.starts_with("uncore_upi")), "the links are still planned");
        // Without the links, nothing is left: the source fails with the reason.
        for i in 0..3 {
            fs::remove_dir_all(root.join(format!("sys/bus/event_source/devices/uncore_upi_{i}"))).unwrap();
        }
        match UncoreCounters::start(&roots(&root), &node_map(SKX_NODES)) {
            Some(Err(e)) => assert!(e.contains("is not a byte unit"), "{e}"),
            _ => panic!("expected a failure"),
        }
        // A socket that cannot be told on a machine with several nodes: not attributed.
        let root2 = skx("nosocket");
        fs::remove_dir_all(root2.join("sys/devices/system/cpu/cpu4")).unwrap();
        let plan = plan_uncore(&roots(&root2), &node_map(SKX_NODES));
        assert!(plan.failure().unwrap().contains("cannot tell which socket cpu 4 belongs to"), "{:?}", plan.failure());
        let _ = fs::remove_dir_all(&root);
        let _ = fs::remove_dir_all(&root2);
        // No uncore PMU (our machines): nothing to plan.
        let empty = fresh("none");
        let plan = plan_uncore(&roots(&empty), &|_| 0);
        assert!(plan.specs.is_empty() && !plan.any_pmu());
        let _ = fs::remove_dir_all(&empty);
    }

    #[test]
    fn an_unopenable_event_names_pmu_counter_event_and_cpu() {
        let root = skx("open");
        let mut specs = plan_uncore(&roots(&root), &node_map(SKX_NODES)).specs;
        specs.truncate(1);
        specs[0].ty = 0x7fff_0000; // no such PMU on this kernel
        let e = UncoreCounters::open(specs).err().expect("cannot open");
        assert!(e.starts_with("cannot open uncore_imc_0/mc-read-bytes (cas_count_read) on cpu 0:"), "{e}");
        let u: Option<Result<UncoreCounters, String>> = Some(Err(e.clone()));
        let st = source_status(&u, 100).unwrap();
        assert_eq!((st.status.as_str(), st.reason.as_deref()), ("failed", Some(e.as_str())));
        let mut caps: Vec<Capability> = ["memory-bandwidth", "link-bandwidth"]
            .iter()
            .map(|m| Capability { metric: (*m).into(), status: "measured".into(), reason: "probe".into() })
            .collect();
        update_capabilities(&mut caps, &u, true);
        for c in &caps {
            assert_eq!(c.status, "unavailable");
            assert!(c.reason.starts_with("uncore counters: cannot open"), "{c:?}");
        }
        let mut caps2 = caps.clone();
        caps2.iter_mut().for_each(|c| c.status = "measured".into());
        update_capabilities(&mut caps2, &None, false);
        assert!(caps2.iter().all(|c| c.status == "unavailable" && c.reason.contains("--no-uncore")));
        let _ = fs::remove_dir_all(&root);
    }

    /// A recording's side, without a PMU: rows as `read` leaves them, written into the table,
    /// the source reason and the capabilities.
    #[test]
    fn recorded_rows_source_reason_and_capabilities() {
        let root = skx("recorded");
        let plan = plan_uncore(&roots(&root), &node_map(SKX_NODES));
        let summary = plan.summary();
        let u = UncoreCounters {
            specs: plan.specs,
            counters: Vec::new(),
            rows: vec![
                (0, "mc-read-bytes", Scope::Node(0), 0.0),
                (0, "link-tx-bytes", Scope::Node(1), 0.0),
                (100, "mc-read-bytes", Scope::Node(0), 6400.0),
                (100, "link-tx-bytes", Scope::Node(1), 640.0),
                (100, "mc-bytes", Scope::Socket(1), 128.0),
            ],
            multiplexed_reads: 3,
            incomplete_sums: 0,
            summary,
        };
        let mut c = crate::trace::Counters::default();
        assert_eq!(u.write_counters(&mut c), 5);
        assert_eq!(c.time_us, vec![0, 0, 100, 100, 100]);
        let scopes: Vec<&str> = c.scope.keys.iter().map(|&k| c.scope.values[k as usize].as_str()).collect();
        assert_eq!(scopes, vec!["node", "node", "node", "node", "socket"]);
        assert_eq!(c.scope_id, vec![0, 1, 0, 1, 1]);
        assert_eq!(c.value[3], 640.0);
        let st = source_status(&Some(Ok(u)), 100).unwrap();
        assert_eq!((st.status.as_str(), st.interval_ms), ("used", Some(100)));
        let reason = st.reason.unwrap();
        assert!(
            reason.starts_with("system-wide uncore counting of uncore_imc_0, uncore_imc_1, uncore_upi_0, uncore_upi_1, uncore_upi_2 (link-rx-bytes, link-tx-bytes, mc-read-bytes, mc-write-bytes), cumulative bytes (5 rows); encodings from the kernel's sysfs events and Linux perf's event JSON, not yet checked on hardware by this project: uncore_imc: 2 PMUs"),
            "{reason}"
        );
        assert!(reason.ends_with("; 3 reads were multiplexed and scaled"), "{reason}");
        let u = UncoreCounters {
            specs: plan_uncore(&roots(&root), &node_map(SKX_NODES)).specs,
            counters: Vec::new(),
            rows: vec![(100, "mc-read-bytes", Scope::Node(0), 64.0)],
            multiplexed_reads: 0,
            incomplete_sums: 0,
            summary: String::new(),
        };
        let mut caps: Vec<Capability> = ["memory-bandwidth", "link-bandwidth"]
            .iter()
            .map(|m| Capability { metric: (*m).into(), status: "measured".into(), reason: "probe".into() })
            .collect();
        update_capabilities(&mut caps, &Some(Ok(u)), true);
        assert_eq!(caps[0].status, "measured");
        assert_eq!(caps[0].reason, "memory-controller bytes from uncore counters (1 rows of mc-read-bytes, mc-write-bytes; whole machine, not only the recorded process; encodings not yet checked on hardware)");
        assert_eq!(
            (caps[1].status.as_str(), caps[1].reason.as_str()),
            ("unavailable", "uncore interconnect link bytes (UPI / xGMI data): no rows were read")
        );
        let _ = fs::remove_dir_all(&root);
    }
}
