//! Machine topology from sysfs: NUMA nodes, their cpus, memory and SLIT distances, and the cpu clock.
//!
//! The sysfs and procfs roots are parameters so tests can point them at a fake tree.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::trace::{Machine, MachineNode, MachineProvenance, NodeHmat};

/// Where to read the machine description from (`/sys` and `/proc` on a live system).
#[derive(Clone, Debug)]
pub struct Roots {
    pub sys: PathBuf,
    pub proc: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots { sys: PathBuf::from("/sys"), proc: PathBuf::from("/proc") }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodeTopology {
    pub id: u32,
    pub cpus: Vec<u32>,
    /// `nodeN/meminfo` MemTotal in bytes.
    pub memory_bytes: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub hostname: String,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    /// The cpu clock, GHz ([`read_cpu_clock`]); its provenance is `provenance.cpu_clock_ghz`.
    pub cpu_clock_ghz: Option<f64>,
    pub page_size_bytes: u64,
    pub nodes: Vec<NodeTopology>,
    /// `distances[i][j]` from node index i to node index j.
    pub distances: Vec<Vec<u32>>,
    /// True when `/sys/devices/system/node` exists (a NUMA-aware kernel).
    pub has_node_sysfs: bool,
    pub online_cpus: Vec<u32>,
    pub provenance: MachineProvenance,
    /// Anything unusual found while reading (one line each).
    pub notes: Vec<String>,
    /// Memory tiers and firmware (HMAT) figures per node id, where the kernel shows them.
    pub memory: MemoryAttrs,
}

/// What sysfs says about each node's memory beyond its size: the kernel's memory tier
/// (`/sys/devices/virtual/memory_tiering/memory_tierK/nodelist`, Linux 6.1+) and the firmware's
/// HMAT figures from the node's nearest initiators (`nodeN/access0/initiators/`, Linux 5.2+).
/// Keyed by node id; empty on machines without them.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct MemoryAttrs {
    /// Node id → the kernel's memory tier id (`memory_tierK`; a lower K is a faster tier).
    pub tier_ids: BTreeMap<u32, u32>,
    pub hmat: BTreeMap<u32, NodeHmat>,
}

/// Reads the memory tiers and the HMAT access0 figures of `ids` under the sysfs root `sys`.
/// Missing directories are not errors (kernels and firmware without them); a tier nodelist
/// that does not parse is skipped with a note.
pub fn read_memory_attrs(sys: &Path, ids: &[u32], notes: &mut Vec<String>) -> MemoryAttrs {
    let mut out = MemoryAttrs::default();
    let tiering = sys.join("devices/virtual/memory_tiering");
    if let Ok(rd) = fs::read_dir(&tiering) {
        for e in rd.filter_map(|e| e.ok()) {
            let Some(tier) = e.file_name().to_str().and_then(|n| n.strip_prefix("memory_tier")?.parse::<u32>().ok())
            else {
                continue;
            };
            let Some(list) = read_trim(&e.path().join("nodelist")) else { continue };
            match parse_cpulist(&list) {
                Ok(nodes) => {
                    for node in nodes {
                        out.tier_ids.insert(node, tier);
                    }
                }
                Err(err) => notes.push(format!("{}/nodelist: {err}; memory tier ignored", e.path().display())),
            }
        }
    }
    let num = |p: &Path| read_trim(p).and_then(|s| s.parse::<u64>().ok()).filter(|&v| v > 0);
    for &id in ids {
        let dir = sys.join(format!("devices/system/node/node{id}/access0/initiators"));
        let Ok(rd) = fs::read_dir(&dir) else { continue };
        let mut initiators: Vec<u32> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse::<u32>().ok())
            .collect();
        initiators.sort_unstable();
        let h = NodeHmat {
            read_bandwidth_mbps: num(&dir.join("read_bandwidth")),
            write_bandwidth_mbps: num(&dir.join("write_bandwidth")),
            read_latency_ns: num(&dir.join("read_latency")),
            write_latency_ns: num(&dir.join("write_latency")),
            initiators,
        };
        if h.read_bandwidth_mbps.is_some()
            || h.write_bandwidth_mbps.is_some()
            || h.read_latency_ns.is_some()
            || h.write_latency_ns.is_some()
        {
            out.hmat.insert(id, h);
        }
    }
    out
}

/// The latency matrix the engine's sysfs loader builds from each memory node's HMAT read
/// latency from its nearest initiator: lat[c][m] = L_m × SLIT[c][m] / min over nodes i with cpus
/// of SLIT[i][m]. None when some node has no figure, no node has cpus, or the SLIT is incomplete.
pub fn hmat_latency_matrix(
    nodes: &[(u32, bool)],
    distances: &[Vec<u32>],
    read_ns: &BTreeMap<u32, u64>,
) -> Option<Vec<Vec<f64>>> {
    let n = nodes.len();
    if distances.len() != n || distances.iter().any(|r| r.len() != n) {
        return None;
    }
    let base: Vec<f64> = nodes.iter().map(|(id, _)| read_ns.get(id).map(|&v| v as f64)).collect::<Option<_>>()?;
    let with_cpus: Vec<usize> = (0..n).filter(|&i| nodes[i].1).collect();
    if with_cpus.is_empty() {
        return None;
    }
    Some(
        (0..n)
            .map(|c| {
                (0..n)
                    .map(|m| {
                        let nearest = with_cpus.iter().map(|&i| distances[i][m]).min().unwrap_or(0);
                        if nearest > 0 {
                            base[m] * distances[c][m] as f64 / nearest as f64
                        } else {
                            base[m]
                        }
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Cpu ids a cpu list read from sysfs may name (the kernel's NR_CPUS is at most 8192 on x86 and
/// a few times that elsewhere; the trace's cpu columns are int16).
pub const CPULIST_MAX_CPUS: u32 = 32_768;

/// Parses a kernel cpu/node list such as `0-3,8-11` or `` (empty), with ids below
/// [`CPULIST_MAX_CPUS`].
pub fn parse_cpulist(s: &str) -> Result<Vec<u32>, String> {
    parse_cpulist_limited(s, CPULIST_MAX_CPUS)
}

/// Parses a cpu list (`0-3,8,10-11`, `0-7:2`; ranges may carry a stride suffix in some kernel
/// lists) whose ids must lie below `max_cpus`, with at most `max_cpus` entries: a list like
/// `0-4294967295` from a file is an error, not 16 GB.
pub fn parse_cpulist_limited(s: &str, max_cpus: u32) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in s.trim().split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (range, stride) = match part.split_once(':') {
            Some((r, st)) => (r, st.parse::<u32>().map_err(|_| format!("bad stride in {part:?}"))?),
            None => (part, 1),
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (range.parse::<u32>(), range.parse::<u32>()),
        };
        let (Ok(a), Ok(b)) = (a, b) else { return Err(format!("bad cpu list entry {part:?}")) };
        if b < a || stride == 0 {
            return Err(format!("bad cpu range {part:?}"));
        }
        if b >= max_cpus {
            return Err(format!("cpu {b} is beyond the {max_cpus} cpus a trace can name"));
        }
        for c in (a..=b).step_by(stride as usize) {
            if out.len() >= max_cpus as usize {
                return Err(format!("more than {max_cpus} cpus listed"));
            }
            out.push(c);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Reads `Node N MemTotal: X kB` style values from a node meminfo file, in bytes.
pub fn parse_node_meminfo(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        // "Node 0 MemTotal:       24528108 kB"
        let rest = match line.strip_prefix("Node ") {
            Some(r) => r.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start(),
            None => line,
        };
        let Some((key, val)) = rest.split_once(':') else { continue };
        let mut it = val.split_whitespace();
        let Some(num) = it.next().and_then(|n| n.parse::<u64>().ok()) else { continue };
        let mult = if it.next() == Some("kB") { 1024 } else { 1 };
        out.insert(key.trim().to_string(), num * mult);
    }
    out
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// `model name` (x86), else `cpu model`/`Processor`/`uarch` style fields from /proc/cpuinfo.
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "cpu model", "Model", "Processor", "cpu"] {
        for line in cpuinfo.lines() {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim() == key && !v.trim().is_empty() {
                    return Some(v.trim().to_string());
                }
            }
        }
    }
    None
}

/// Bounds on a cpu clock, GHz (as the trace reader's `machine.cpuClockGHz`): a figure outside them
/// is a unit mistake or a broken file, and is not used.
pub const MIN_CLOCK_GHZ: f64 = 0.1;
pub const MAX_CLOCK_GHZ: f64 = 10.0;

fn clock_ok(ghz: f64) -> bool {
    ghz.is_finite() && (MIN_CLOCK_GHZ..=MAX_CLOCK_GHZ).contains(&ghz)
}

/// GHz to the kHz, the finest unit the sources give (2596.148 MHz is 2.596148, not 2.5961480000000003).
fn to_khz(ghz: f64) -> f64 {
    (ghz * 1e6).round() / 1e6
}

/// The clock a cpu model string names, GHz: the number before `GHz` (`… CPU @ 2.10GHz`,
/// `… 2.3 GHz)`), preceded by the start, a space, `@`, `(` or `,`; the first one in range.
pub fn clock_in_model_name(model: &str) -> Option<f64> {
    let lower = model.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(at) = lower[from..].find("ghz").map(|i| i + from) {
        from = at + 3;
        // the number ends at `at`, after optional spaces
        let mut end = at;
        while end > 0 && bytes[end - 1] == b' ' {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && (bytes[start - 1].is_ascii_digit() || bytes[start - 1] == b'.') {
            start -= 1;
        }
        if start == end || (start > 0 && !matches!(bytes[start - 1], b' ' | b'@' | b'(' | b',' | b'\t')) {
            continue;
        }
        if let Ok(v) = lower[start..end].parse::<f64>() {
            if clock_ok(v) {
                return Some(v);
            }
        }
    }
    None
}

/// `cpu MHz` of processor 0 in /proc/cpuinfo (x86: its frequency when the file was read), MHz.
pub fn cpuinfo_mhz_of_cpu0(cpuinfo: &str) -> Option<f64> {
    for block in cpuinfo.split("\n\n") {
        let field = |key: &str| {
            block.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == key).map(|(_, v)| v.trim()))
        };
        if field("processor").and_then(|p| p.parse::<u32>().ok()) != Some(0) {
            continue;
        }
        return field("cpu MHz").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v > 0.0);
    }
    None
}

/// The recording machine's cpu clock, GHz, and where it came from, in this order (the first
/// that gives a clock between 0.1 and 10 GHz):
/// 1. `sys/devices/system/cpu/cpu0/cpufreq/base_frequency` (kHz): the base (nominal) frequency
///    the cpufreq driver reports (intel_pstate with HWP; any frequency above it is turbo);
/// 2. `sys/devices/system/cpu/cpu0/acpi_cppc/nominal_freq` (MHz): the firmware's ACPI CPPC
///    nominal frequency (AMD and ARM servers with CPPC, where amd-pstate's cpufreq maximum is the
///    boost clock);
/// 3. a `@ x.xxGHz` in the cpu model name (the vendor's nominal clock);
/// 4. `sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq` (kHz): the highest frequency the
///    driver allows (turbo or boost included where the driver counts it);
/// 5. `cpu MHz` of processor 0 in /proc/cpuinfo: its frequency when read (estimated);
///
/// else None with an `unavailable:` reason. PMU latencies count core cycles at the frequency the
/// core ran at, so a nominal clock is the figure closest to a loaded core's on most servers.
pub fn read_cpu_clock(sys: &Path, cpu_model: Option<&str>, cpuinfo: Option<&str>) -> (Option<f64>, String) {
    let cpu0 = sys.join("devices/system/cpu/cpu0");
    let number = |rel: &str| read_trim(&cpu0.join(rel)).and_then(|s| s.parse::<f64>().ok());
    if let Some(khz) = number("cpufreq/base_frequency").filter(|k| clock_ok(k / 1e6)) {
        return (
            Some(to_khz(khz / 1e6)),
            format!("documented:sysfs cpu0/cpufreq/base_frequency, {khz} kHz (the cpufreq driver's base, nominal, frequency)"),
        );
    }
    if let Some(mhz) = number("acpi_cppc/nominal_freq").filter(|m| clock_ok(m / 1e3)) {
        return (
            Some(to_khz(mhz / 1e3)),
            format!(
                "documented:sysfs cpu0/acpi_cppc/nominal_freq, {mhz} MHz (the firmware's ACPI CPPC nominal frequency)"
            ),
        );
    }
    if let Some((model, ghz)) = cpu_model.and_then(|m| clock_in_model_name(m).map(|g| (m, g))) {
        return (
            Some(ghz),
            format!("documented:the cpu model name \"{model}\" (/proc/cpuinfo) names {ghz} GHz, its nominal clock"),
        );
    }
    if let Some(khz) = number("cpufreq/cpuinfo_max_freq").filter(|k| clock_ok(k / 1e6)) {
        return (
            Some(to_khz(khz / 1e6)),
            format!(
                "documented:sysfs cpu0/cpufreq/cpuinfo_max_freq, {khz} kHz (the highest frequency the cpufreq driver allows, turbo or boost included where it counts them)"
            ),
        );
    }
    if let Some(mhz) = cpuinfo.and_then(cpuinfo_mhz_of_cpu0).filter(|m| clock_ok(m / 1e3)) {
        return (
            Some(to_khz(mhz / 1e3)),
            format!("estimated:/proc/cpuinfo cpu MHz of cpu 0, {mhz} MHz (its frequency when read, which varies with load and power management)"),
        );
    }
    (
        None,
        "unavailable:no cpufreq base_frequency or cpuinfo_max_freq, no ACPI CPPC nominal_freq, no clock in the cpu model name and no cpu MHz in /proc/cpuinfo (a VM or a container hides them)".into(),
    )
}

fn uname() -> (Option<String>, String) {
    // SAFETY: uname fills a zeroed struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return (None, "unknown".into());
    }
    let s = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (Some(s(&u.release)), s(&u.nodename))
}

pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Reads the topology of the live machine (`/sys`, `/proc`).
pub fn read_topology() -> Result<Topology, String> {
    read_topology_at(&Roots::default())
}

/// The live machine's nodes, cpus, distances and memory, without the cpu model (`cpu_model` is
/// None): reading /proc/cpuinfo makes the kernel ask every cpu for its current frequency, 10 to
/// 20 ms in an emulated 4-cpu guest, and apply and rollback only compare and pin by node.
pub fn read_numa_topology() -> Result<Topology, String> {
    read_topology_with(&Roots::default(), false)
}

/// Reads the topology from the given roots. Kernel and host name come from `uname` (the live
/// machine) unless the roots hold `proc/sys/kernel/{osrelease,hostname}`.
pub fn read_topology_at(roots: &Roots) -> Result<Topology, String> {
    read_topology_with(roots, true)
}

fn read_topology_with(roots: &Roots, with_cpu_model: bool) -> Result<Topology, String> {
    let (uname_release, uname_host) = uname();
    let kernel = read_trim(&roots.proc.join("sys/kernel/osrelease")).or(uname_release);
    let hostname = read_trim(&roots.proc.join("sys/kernel/hostname")).unwrap_or(uname_host);
    let cpuinfo = if with_cpu_model { fs::read_to_string(roots.proc.join("cpuinfo")).ok() } else { None };
    let cpu_model = cpuinfo.as_deref().and_then(parse_cpu_model);
    let (cpu_clock_ghz, clock_source) = if with_cpu_model {
        let (ghz, source) = read_cpu_clock(&roots.sys, cpu_model.as_deref(), cpuinfo.as_deref());
        (ghz, Some(source))
    } else {
        (None, None)
    };
    let online_cpus = read_trim(&roots.sys.join("devices/system/cpu/online"))
        .and_then(|s| parse_cpulist(&s).ok())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            // SAFETY: sysconf has no preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
            (0..n).collect()
        });
    let node_dir = roots.sys.join("devices/system/node");
    let mut notes = Vec::new();

    let mut ids: Vec<u32> = match fs::read_dir(&node_dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse::<u32>().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    ids.sort_unstable();

    if ids.is_empty() {
        // No NUMA sysfs (kernel without CONFIG_NUMA, or a container hiding it): one node.
        let mem = fs::read_to_string(roots.proc.join("meminfo"))
            .ok()
            .and_then(|s| parse_node_meminfo(&s).get("MemTotal").copied());
        notes.push(format!(
            "{} not found: treated as one NUMA node holding all {} online cpus",
            node_dir.display(),
            online_cpus.len()
        ));
        return Ok(Topology {
            hostname,
            kernel,
            cpu_model,
            cpu_clock_ghz,
            page_size_bytes: page_size(),
            nodes: vec![NodeTopology { id: 0, cpus: online_cpus.clone(), memory_bytes: mem }],
            distances: vec![vec![10]],
            has_node_sysfs: false,
            online_cpus,
            provenance: MachineProvenance {
                distances: "estimated:no /sys/devices/system/node (kernel without CONFIG_NUMA?); one node assumed, local distance 10".into(),
                latencies_ns: "unavailable:not in sysfs (a numascope bench calibration of this machine measures them)".into(),
                links: "unavailable:one NUMA node assumed, so no interconnect links".into(),
                memory_bandwidth_gbps: "unavailable:no uncore counters, and not in sysfs (a numascope bench calibration of this machine measures it)".into(),
                memory_bytes: if mem.is_some() {
                    "measured:/proc/meminfo MemTotal (no per-node sysfs)".into()
                } else {
                    "unavailable:/proc/meminfo not readable".into()
                },
                memory_tier: None,
                hmat: None,
                cpu_clock_ghz: clock_source,
            },
            notes,
            memory: MemoryAttrs::default(),
        });
    }

    let mut nodes = Vec::new();
    let mut distances = Vec::new();
    let mut all_mem = true;
    for &id in &ids {
        let dir = node_dir.join(format!("node{id}"));
        let cpus = match read_trim(&dir.join("cpulist")) {
            Some(s) => parse_cpulist(&s).map_err(|e| format!("{}: {e}", dir.join("cpulist").display()))?,
            None => {
                notes.push(format!("{}/cpulist missing: node {id} listed without cpus", dir.display()));
                Vec::new()
            }
        };
        let memory_bytes =
            fs::read_to_string(dir.join("meminfo")).ok().and_then(|s| parse_node_meminfo(&s).get("MemTotal").copied());
        all_mem &= memory_bytes.is_some();
        let dist: Vec<u32> = read_trim(&dir.join("distance"))
            .map(|s| s.split_whitespace().filter_map(|d| d.parse().ok()).collect())
            .unwrap_or_default();
        distances.push(dist);
        nodes.push(NodeTopology { id, cpus, memory_bytes });
    }
    // sysfs distance rows are indexed by node id over *possible* nodes; keep the columns of the
    // nodes present (ids may be sparse, e.g. node0 and node2).
    let n = ids.len();
    let mut dist_ok = true;
    let max_id = *ids.last().unwrap() as usize;
    let distances: Vec<Vec<u32>> = distances
        .into_iter()
        .enumerate()
        .map(|(i, row)| {
            if row.len() == n {
                row
            } else if row.len() > max_id {
                ids.iter().map(|&j| row[j as usize]).collect()
            } else {
                dist_ok = false;
                (0..n).map(|j| if i == j { 10 } else { 20 }).collect()
            }
        })
        .collect();
    if !dist_ok {
        notes.push("some nodeN/distance files were missing or malformed; 10 local / 20 remote assumed".into());
    }
    let memory = read_memory_attrs(&roots.sys, &ids, &mut notes);
    let links = if n == 1 {
        "unavailable:one NUMA node, so no interconnect links".to_string()
    } else {
        "unavailable:sysfs does not describe interconnect links (no preset or hwloc data given)".to_string()
    };
    Ok(Topology {
        hostname,
        kernel,
        cpu_model,
        cpu_clock_ghz,
        page_size_bytes: page_size(),
        nodes,
        distances,
        has_node_sysfs: true,
        online_cpus,
        provenance: MachineProvenance {
            distances: if dist_ok {
                "measured:sysfs node*/distance (ACPI SLIT)".into()
            } else {
                "estimated:sysfs node*/distance incomplete; 10 local / 20 remote assumed".into()
            },
            latencies_ns: "unavailable:not in sysfs (a numascope bench calibration of this machine measures them)".into(),
            links,
            memory_bandwidth_gbps: "unavailable:no uncore counters, and not in sysfs (a numascope bench calibration of this machine measures it)".into(),
            memory_bytes: if all_mem {
                "measured:sysfs node*/meminfo MemTotal".into()
            } else {
                "measured:sysfs node*/meminfo MemTotal (missing for some nodes: null there)".into()
            },
            memory_tier: None,
            hmat: None,
            cpu_clock_ghz: clock_source,
        },
        notes,
        memory,
    })
}

impl Topology {
    /// Node id of each cpu (index = cpu id), -1 for a cpu in no node.
    pub fn cpu_to_node(&self) -> Vec<i8> {
        let max_cpu = self
            .nodes
            .iter()
            .flat_map(|n| n.cpus.iter().copied())
            .chain(self.online_cpus.iter().copied())
            .max()
            .unwrap_or(0) as usize;
        let mut map = vec![-1i8; max_cpu + 1];
        for n in &self.nodes {
            for &c in &n.cpus {
                map[c as usize] = n.id.min(127) as i8;
            }
        }
        map
    }

    /// The manifest `machine` object. Where sysfs shows them, the memory tiers and the firmware's
    /// HMAT figures fill `nodes[].memoryTier`, `nodes[].hmat`, `memoryBandwidthGBps` (HMAT read
    /// bandwidth) and `latenciesNs` (HMAT read latency scaled by the SLIT) with the same rules as
    /// the engine's `machineFromSysfs`, so a recording gives the engine the model that loader
    /// gives from the same /sys.
    pub fn machine(&self) -> Machine {
        let attrs = &self.memory;
        let n = self.nodes.len();
        // Tiers only when every node has one (a partial listing would rank the rest as unknown).
        let ranks: Option<BTreeMap<u32, u32>> =
            if !self.nodes.is_empty() && self.nodes.iter().all(|x| attrs.tier_ids.contains_key(&x.id)) {
                let mut ids: Vec<u32> = self.nodes.iter().map(|x| attrs.tier_ids[&x.id]).collect();
                ids.sort_unstable();
                ids.dedup();
                Some(
                    self.nodes
                        .iter()
                        .map(|x| (x.id, ids.iter().position(|&t| t == attrs.tier_ids[&x.id]).unwrap_or(0) as u32))
                        .collect(),
                )
            } else {
                None
            };
        let bw = |id: u32| attrs.hmat.get(&id).and_then(|h| h.read_bandwidth_mbps).map(|mb| mb as f64 / 1000.0);
        let bw_count = self.nodes.iter().filter(|x| bw(x.id).is_some()).count();
        let read_ns: BTreeMap<u32, u64> =
            attrs.hmat.iter().filter_map(|(&id, h)| h.read_latency_ns.map(|v| (id, v))).collect();
        let shape: Vec<(u32, bool)> = self.nodes.iter().map(|x| (x.id, !x.cpus.is_empty())).collect();
        let latencies = hmat_latency_matrix(&shape, &self.distances, &read_ns);
        let mut provenance = self.provenance.clone();
        if bw_count == n && n > 0 {
            provenance.memory_bandwidth_gbps = "documented:firmware HMAT figures in sysfs nodeN/access0/initiators/read_bandwidth (from each node's nearest initiators; firmware figures, not measured)".into();
        } else if bw_count > 0 {
            provenance.memory_bandwidth_gbps = format!("estimated:HMAT read_bandwidth for {bw_count} of {n} nodes (sysfs nodeN/access0/initiators); the engine gives the others rule M1b");
        }
        if latencies.is_some() {
            provenance.latencies_ns = "estimated:firmware HMAT sysfs nodeN/access0/initiators/read_latency from each node's nearest initiators; other pairs scaled by the SLIT ratio".into();
        }
        if ranks.is_some() {
            provenance.memory_tier = Some(
                "measured:sysfs devices/virtual/memory_tiering/memory_tier*/nodelist, ranked by tier id (0 = fastest)"
                    .into(),
            );
        }
        if !attrs.hmat.is_empty() {
            provenance.hmat = Some("documented:firmware ACPI HMAT figures as sysfs nodeN/access0/initiators/ shows them (MB/s, ns; from the node's nearest initiators); not measured".into());
        }
        Machine {
            name: self.hostname.clone(),
            source: "sysfs".into(),
            kernel: self.kernel.clone(),
            cpu_model: self.cpu_model.clone(),
            cpu_clock_ghz: self.cpu_clock_ghz,
            page_size_bytes: self.page_size_bytes,
            nodes: self
                .nodes
                .iter()
                .map(|x| MachineNode {
                    id: x.id,
                    cpus: x.cpus.clone(),
                    memory_bytes: x.memory_bytes,
                    memory_bandwidth_gbps: bw(x.id),
                    memory_tier: ranks.as_ref().map(|r| r[&x.id]),
                    memory_kind: None,
                    hmat: attrs.hmat.get(&x.id).cloned(),
                })
                .collect(),
            distances: self.distances.clone(),
            latencies_ns: latencies,
            links: Vec::new(),
            routes: None,
            provenance,
        }
    }
}
