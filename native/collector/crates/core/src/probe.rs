//! Capability probe: which data sources work on this machine, and which metrics can be
//! measured, each with a one-line reason naming the cause.

use std::fs;
use std::path::Path;

use serde::Serialize;

pub use crate::privileges::{
    parse_cap_eff, perf_open_error, read_privileges, Privileges, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_NICE,
    CAP_SYS_PTRACE,
};
use crate::topology::{Roots, Topology};
use crate::trace::{Capability, SourceStatus};

/// Source ids in the order the probe reports them.
pub const SOURCE_IDS: [&str; 9] = [
    "page-faults",
    "procfs",
    "sysfs-topology",
    "ibs-op",
    "pebs-load",
    "pebs-store",
    "damon",
    "core-counters",
    "uncore",
];

/// Metric ids of `capture.capabilities`.
pub const METRICS: [&str; 14] = [
    "page-placement",
    "first-touch",
    "thread-placement",
    "thread-migrations",
    "memory-accesses",
    "access-latency",
    "data-source",
    "numa-counters",
    "memory-bandwidth",
    "link-bandwidth",
    "ipc",
    "l3-mpki",
    "region-hotness",
    "allocation-sites",
];

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SourceProbe {
    pub id: String,
    /// The machine and kernel provide this source.
    pub available: bool,
    /// This version of the collector can record it live.
    pub implemented: bool,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MetricProbe {
    pub metric: String,
    /// `measured`, `estimated` or `unavailable`.
    pub status: String,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    pub privileges: Privileges,
    /// PMUs in /sys/bus/event_source/devices.
    pub pmus: Vec<String>,
    pub nodes: usize,
    pub sources: Vec<SourceProbe>,
    pub capabilities: Vec<MetricProbe>,
    /// Kernel features and running agents that decide or change placement (weighted interleave,
    /// memory tiers, demotion, NUMA balancing, cpu-less nodes, HMAT, DAMON modules, sched_ext),
    /// each with what it means for placement (docs/capabilities.md, "Placement features").
    /// Left out when empty (serialised probes written before it had none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<crate::probe_placement::PlacementFeature>,
}

fn list_pmus(sys_root: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(sys_root.join("bus/event_source/devices"))
        .map(|rd| rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Result of actually opening a software page-fault counter on this process.
pub fn try_open_page_fault_counter(exclude_kernel: bool) -> Result<(), std::io::Error> {
    use perf_event_open::config::{Cpu, Opts, Proc};
    use perf_event_open::count::Counter;
    use perf_event_open::event::sw::Software;
    let mut opts = Opts::default();
    opts.exclude.kernel = exclude_kernel;
    opts.exclude.hv = true;
    Counter::new(Software::PageFault, (Proc::CURRENT, Cpu::ALL), &opts).map(|_| ())
}

fn try_open_hw_instructions() -> Result<(), std::io::Error> {
    use perf_event_open::config::{Cpu, Opts, Proc};
    use perf_event_open::count::Counter;
    use perf_event_open::event::hw::Hardware;
    let mut opts = Opts::default();
    opts.exclude.kernel = true;
    opts.exclude.hv = true;
    Counter::new(Hardware::Instr, (Proc::CURRENT, Cpu::ALL), &opts).map(|_| ())
}

/// Options for [`probe_with`].
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    pub roots: Roots,
    /// Actually open perf events (page-fault counter, hardware counter) to confirm.
    pub try_open: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions { roots: Roots::default(), try_open: true }
    }
}

/// Probes the live machine.
/// Whether `record` can take NUMA hinting faults as access samples here: Ok(how) or Err(why not).
fn hinting_faults(sys: &Path, proc_: &Path, privs: &Privileges) -> Result<String, String> {
    use crate::sources::pagefault::{find_fault_tracepoint, numa_balancing_mode};
    let mode = match numa_balancing_mode(proc_) {
        None => return Err("the kernel has no automatic NUMA balancing (no /proc/sys/kernel/numa_balancing)".into()),
        Some(m) if m & 1 == 0 => {
            return Err(format!(
                "automatic NUMA balancing is off (kernel.numa_balancing={m}{}); with it on (sysctl kernel.numa_balancing=1; the kernel then also moves pages) `numascope record` records the kernel's hinting faults as accesses",
                if m != 0 { ": memory tiering only, no hinting faults on ordinary memory" } else { "" }
            ))
        }
        Some(m) => m,
    };
    let roots = [sys.join("kernel/tracing"), sys.join("kernel/debug/tracing")];
    let refs: Vec<&Path> = roots.iter().map(|p| p.as_path()).collect();
    find_fault_tracepoint(&refs)?;
    if !privs.can_read_tracepoints() {
        return Err("the tracepoint's raw records need CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid -1".into());
    }
    Ok(format!("kernel.numa_balancing={mode}, tracepoint exceptions:page_fault_user"))
}

/// Where the machine's memory bandwidth capacity comes from, as `numascope topology` says it
/// (its provenance without the status prefix): a stored bench calibration, or why there is none.
fn capacity_source(topology: &Topology) -> &str {
    let p = topology.provenance.memory_bandwidth_gbps.as_str();
    p.split_once(':').map_or(p, |(_, why)| why)
}

pub fn probe(topology: &Topology) -> Probe {
    probe_with(topology, &ProbeOptions::default())
}

pub fn probe_with(topology: &Topology, opts: &ProbeOptions) -> Probe {
    let sys = &opts.roots.sys;
    let proc_ = &opts.roots.proc;
    let privs = read_privileges(proc_);
    let pmus = list_pmus(sys);
    let has_pmu = |n: &str| pmus.iter().any(|p| p == n);
    let nodes = topology.nodes.len();
    let mut sources = Vec::new();
    let mut push = |id: &str, available: bool, implemented: bool, reason: String| {
        sources.push(SourceProbe { id: id.into(), available, implemented, reason })
    };

    // page-faults (software event)
    let pf = if !opts.try_open {
        (privs.can_profile_user(), format!("not opened (probe without --try-open); {}", privs.describe()))
    } else {
        let exclude_kernel = !privs.can_profile_kernel();
        match try_open_page_fault_counter(exclude_kernel) {
            Ok(()) => (
                true,
                format!(
                    "software page-fault event opened ({}{})",
                    privs.describe(),
                    if exclude_kernel { "; user-mode faults only" } else { "" }
                ),
            ),
            Err(e) => (false, perf_open_error(&e, &privs)),
        }
    };
    // NUMA hinting faults: access samples without a PMU, while automatic NUMA balancing is on.
    let hinting = hinting_faults(sys, proc_, &privs);
    let pf_reason = format!(
        "{}; NUMA hinting faults as access samples: {}",
        pf.1,
        match &hinting {
            Ok(s) => format!("yes ({s})"),
            Err(e) => format!("no: {e}"),
        }
    );
    push("page-faults", pf.0, true, pf_reason);

    // procfs
    let numa_maps = proc_.join("self/numa_maps").exists();
    push(
        "procfs",
        proc_.join("self/stat").exists(),
        true,
        if numa_maps {
            "/proc/PID/{numa_maps,maps,task/*/stat,task/*/sched} and /proc/vmstat readable".into()
        } else {
            "/proc/PID/numa_maps missing (kernel without CONFIG_NUMA): thread placement only".into()
        },
    );

    // sysfs topology
    push(
        "sysfs-topology",
        topology.has_node_sysfs,
        true,
        if topology.has_node_sysfs {
            format!("{nodes} NUMA node(s) in /sys/devices/system/node")
        } else {
            "no /sys/devices/system/node: one node assumed".into()
        },
    );

    // IBS
    let vm_hint = "this CPU/VM does not expose it; VMs usually lack PMU passthrough";
    if has_pmu("ibs_op") {
        let ok = privs.can_profile_kernel();
        push(
            "ibs-op",
            ok,
            true,
            if ok {
                format!(
                    "ibs_op PMU present ({}): `numascope record` samples IBS ops (memory accesses, data source, latency, addresses)",
                    privs.describe()
                )
            } else {
                format!("ibs_op PMU present but IBS needs CAP_PERFMON or perf_event_paranoid<=1 ({})", privs.describe())
            },
        );
    } else {
        push("ibs-op", false, false, format!("no ibs_op PMU in /sys/bus/event_source/devices (AMD IBS: {vm_hint})"));
    }

    // PEBS
    let cpu_pmu = ["cpu", "cpu_core"].into_iter().find(|p| has_pmu(p));
    for (id, ev) in [("pebs-load", "mem-loads"), ("pebs-store", "mem-stores")] {
        match cpu_pmu {
            None => {
                push(id, false, false, format!("no cpu PMU: hardware events not supported (Intel PEBS: {vm_hint})"))
            }
            Some(p) => {
                let ev_path = sys.join(format!("bus/event_source/devices/{p}/events/{ev}"));
                if ev_path.exists() {
                    push(
                        id,
                        privs.can_profile_user(),
                        true,
                        format!(
                            "{p}/events/{ev} present ({}): `numascope record` samples it with PEBS",
                            privs.describe()
                        ),
                    );
                } else {
                    push(
                        id,
                        false,
                        false,
                        format!("{p} PMU has no {ev} event (not an Intel CPU with PEBS load latency/store sampling)"),
                    );
                }
            }
        }
    }

    // DAMON
    let damon = sys.join("kernel/mm/damon/admin");
    if damon.exists() {
        match crate::sources::damon::check_available(&damon) {
            Ok(()) => push(
                "damon",
                true,
                true,
                "DAMON sysfs interface present and free (/sys/kernel/mm/damon/admin, nr_kdamonds 0): `record --damon` adds a vaddr kdamond".into(),
            ),
            Err(e) => push("damon", false, true, e),
        }
    } else {
        push("damon", false, false, "no /sys/kernel/mm/damon/admin (kernel without CONFIG_DAMON_SYSFS)".into());
    }

    // core counters (instructions, cycles)
    let core = match cpu_pmu {
        None if !opts.try_open => {
            (false, "no cpu PMU: hardware events not supported (VM without PMU passthrough)".to_string())
        }
        _ if !opts.try_open => (true, format!("{} PMU present", cpu_pmu.unwrap())),
        _ => match try_open_hw_instructions() {
            Ok(()) => (true, "hardware instructions counter opened: `numascope record` counts cycles, instructions and llc-misses per thread".into()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP)) => {
                (false, "no cpu PMU: hardware events not supported (VM without PMU passthrough)".into())
            }
            Err(e) => (false, perf_open_error(&e, &privs)),
        },
    };
    push("core-counters", core.0, true, core.1);

    // uncore: planned from sysfs and /proc/cpuinfo as `record` would, without opening anything.
    let cpu_to_node = topology.cpu_to_node();
    let node_of = |cpu: u32| cpu_to_node.get(cpu as usize).map(|&n| n as i32).unwrap_or(-1);
    let plan = crate::sources::uncore::plan_uncore(&opts.roots, &node_of);
    let system_wide = privs.cap_perfmon || privs.cap_sys_admin || privs.perf_event_paranoid.is_some_and(|p| p <= 0);
    let uncore_kinds = (system_wide && plan.counts("mc-"), system_wide && plan.counts("link-"));
    if !plan.any_pmu() {
        push("uncore", false, false, "no memory-controller or interconnect uncore PMU (uncore_imc, uncore_upi, amd_umc, amd_df, …) in /sys/bus/event_source/devices".into());
    } else if plan.specs.is_empty() {
        push("uncore", false, false, plan.summary());
    } else {
        push(
            "uncore",
            system_wide,
            true,
            if system_wide {
                format!("`numascope record` counts: {}", plan.summary())
            } else {
                format!(
                    "{} (system-wide uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid <= 0; here {})",
                    plan.summary(),
                    privs.describe()
                )
            },
        );
    }
    // Why memory-controller / link bandwidth cannot be measured (empty: the source's reason says it).
    let why = |prefix: &str, families: &[&str]| -> String {
        if !plan.any_pmu() {
            String::new()
        } else if plan.counts(prefix) && !system_wide {
            format!(
                "uncore counters are planned but system-wide uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid <= 0 (here {})",
                privs.describe()
            )
        } else {
            plan.lines_for(families)
        }
    };
    let uncore_why =
        (why("mc-", &["uncore_imc", "amd_umc", "amd_df"]), why("link-", &["uncore_upi", "uncore_qpi", "amd_df"]));

    let capabilities = metric_capabilities(&sources, topology, proc_, uncore_kinds, &uncore_why, &hinting);
    let placement = crate::probe_placement::placement_features(sys, proc_, topology);
    Probe { privileges: privs, pmus, nodes, sources, capabilities, placement }
}

/// `uncore`: (memory-controller, link) counters planned and permitted; `uncore_why`: why not, per
/// kind (empty: the `uncore` source's reason says it).
fn metric_capabilities(
    sources: &[SourceProbe],
    topology: &Topology,
    proc_root: &Path,
    uncore: (bool, bool),
    uncore_why: &(String, String),
    hinting: &Result<String, String>,
) -> Vec<MetricProbe> {
    let src = |id: &str| sources.iter().find(|s| s.id == id).unwrap();
    let usable = |id: &str| {
        let s = src(id);
        s.available && s.implemented
    };
    let one_node = topology.nodes.len() <= 1;
    let one_node_note = "one NUMA node: remote-access and link metrics cannot be measured here";
    let sampling_reason = |what: &str| {
        let ibs = src("ibs-op");
        let pebs = src("pebs-load");
        if !ibs.available && !pebs.available {
            format!("{what} needs AMD IBS or Intel PEBS; here: {}; {}", short(&ibs.reason), short(&pebs.reason))
        } else {
            format!("{what} is recorded by `numascope record` with IBS or PEBS (here: {}; {}); the probe itself measures nothing", short(&ibs.reason), short(&pebs.reason))
        }
    };
    let procfs = usable("procfs");
    let mut out = Vec::new();
    let mut m = |metric: &str, status: &str, reason: String| {
        out.push(MetricProbe { metric: metric.into(), status: status.into(), reason })
    };
    if procfs {
        m(
            "page-placement",
            "measured",
            "numascope record: a scan of every resident page (pagemap + move_pages), numa_maps snapshots per mapping, move_pages queries per faulted page".into(),
        );
    } else {
        m("page-placement", "unavailable", short(&src("procfs").reason));
    }
    if usable("page-faults") {
        m(
            "first-touch",
            "measured",
            format!(
                "page-fault sampling: every fault while a thread faults under {} /s (record's default --fault-rate), sampled above; --fault-period 1 for every fault",
                crate::sources::pagefault::DEFAULT_RATE_HZ
            ),
        );
    } else {
        m("first-touch", "unavailable", format!("page-fault source: {}", src("page-faults").reason));
    }
    m(
        "thread-placement",
        "measured",
        if usable("page-faults") {
            "every thread from the kernel's task records (perf fork, exit and comm records on the page-fault events: \
             start, end and name, even of a thread that lives between two polls); each thread's cpu from \
             /proc/PID/task/TID/stat field 39 (processor), polled"
                .into()
        } else {
            "/proc/PID/task/TID/stat field 39 (processor), polled (threads that live between two polls are missed \
             without page-fault events)"
                .into()
        },
    );
    m(
        "thread-migrations",
        "measured",
        "/proc/PID/task/TID/sched se.nr_migrations deltas and cpu changes between polls".into(),
    );
    let pmu_status =
        if usable("ibs-op") || usable("pebs-load") || usable("pebs-store") { "measured" } else { "unavailable" };
    match hinting {
        Ok(how) if pmu_status == "unavailable" && usable("page-faults") => m(
            "memory-accesses",
            "estimated",
            format!(
                "no PMU ({}); `numascope record` takes the kernel's NUMA hinting faults as access samples ({how}): which thread touched which page, about once per page per scan pass, not how often",
                short(&sampling_reason("access sampling"))
            ),
        ),
        _ => m("memory-accesses", pmu_status, sampling_reason("access sampling")),
    }
    m("access-latency", pmu_status, sampling_reason("load latency"));
    m("data-source", pmu_status, sampling_reason("data source (local/remote DRAM, cache)"));
    if fs::metadata(proc_root.join("vmstat")).is_ok() {
        m(
            "numa-counters",
            "measured",
            if one_node {
                format!("/proc/vmstat numa_* and node*/numastat, polled ({one_node_note})")
            } else {
                "/proc/vmstat numa_* and node*/numastat, polled".into()
            },
        );
    } else {
        m("numa-counters", "unavailable", "/proc/vmstat not readable".into());
    }
    let unc = src("uncore");
    let (mc_why, link_why) = uncore_why;
    if uncore.0 {
        m(
            "memory-bandwidth",
            "measured",
            format!("uncore memory-controller counters, with `numascope record`: {}", unc.reason),
        );
    } else if mc_why.is_empty() {
        m(
            "memory-bandwidth",
            "unavailable",
            format!("{}; the capacity: {}", short(&unc.reason), capacity_source(topology)),
        );
    } else {
        m("memory-bandwidth", "unavailable", format!("{mc_why}; the capacity: {}", capacity_source(topology)));
    }
    if uncore.1 {
        m("link-bandwidth", "measured", format!("uncore link counters, with `numascope record`: {}", unc.reason));
    } else if one_node {
        m("link-bandwidth", "unavailable", one_node_note.into());
    } else if link_why.is_empty() {
        m("link-bandwidth", "unavailable", format!("needs interconnect uncore counters: {}", short(&unc.reason)));
    } else {
        m("link-bandwidth", "unavailable", format!("needs interconnect uncore counters: {link_why}"));
    }
    let core = src("core-counters");
    let (core_status, core_reason) = if core.available {
        ("measured", "per-thread cycles, instructions and llc-misses, counted by `numascope record`".to_string())
    } else {
        ("unavailable", short(&core.reason))
    };
    m("ipc", core_status, core_reason.clone());
    m("l3-mpki", core_status, core_reason);
    let damon = src("damon");
    if damon.available {
        m("region-hotness", "measured", "DAMON vaddr region access frequency (with `record --damon`)".into());
    } else {
        m("region-hotness", "unavailable", format!("DAMON: {}", damon.reason));
    }
    match crate::alloc_sites::find_shim() {
        Ok(p) => m(
            "allocation-sites",
            "measured",
            format!(
                "recorded by `numascope record` for dynamically linked programs it launches (LD_PRELOAD shim {}); not for attached processes",
                p.display()
            ),
        ),
        Err(e) => m("allocation-sites", "unavailable", e),
    }
    out
}

/// The reason up to its first parenthesised detail.
fn short(s: &str) -> String {
    match s.find(" (") {
        Some(i) => s[..i].to_string(),
        None => s.to_string(),
    }
}

impl Probe {
    /// `capture.sources` entries: `used` for the ids in `used` (with their reason), otherwise
    /// `unavailable` or `not-requested` from the probe.
    pub fn capture_sources(&self, used: &[SourceStatus]) -> Vec<SourceStatus> {
        self.sources
            .iter()
            .map(|s| {
                if let Some(u) = used.iter().find(|u| u.id == s.id) {
                    return u.clone();
                }
                SourceStatus {
                    id: s.id.clone(),
                    status: if s.available { "not-requested".into() } else { "unavailable".into() },
                    reason: Some(s.reason.clone()),
                    sample_period: None,
                    interval_ms: None,
                }
            })
            .collect()
    }

    pub fn capture_capabilities(&self) -> Vec<Capability> {
        self.capabilities
            .iter()
            .map(|c| Capability { metric: c.metric.clone(), status: c.status.clone(), reason: c.reason.clone() })
            .collect()
    }

    pub fn source(&self, id: &str) -> Option<&SourceProbe> {
        self.sources.iter().find(|s| s.id == id)
    }
}
