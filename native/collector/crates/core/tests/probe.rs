//! The capability probe on fake /sys and /proc trees (no perf_event_open calls) and live.

mod common;

use std::fs;
use std::path::Path;

use numascope_core::probe::{parse_cap_eff, probe, probe_with, ProbeOptions, METRICS, SOURCE_IDS};
use numascope_core::topology::{read_topology, read_topology_at, Roots};

fn write(p: &Path, text: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn touch_dir(p: &Path) {
    fs::create_dir_all(p).unwrap();
}

#[test]
fn cap_eff() {
    let status = "Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
    let c = parse_cap_eff(status).unwrap();
    assert!(c & (1 << 38) != 0 && c & (1 << 21) != 0);
    assert_eq!(parse_cap_eff("CapEff:\t0000000000000000\n"), Some(0));
    assert_eq!(parse_cap_eff("nothing"), None);
}

/// An AMD machine with IBS, two nodes, DAMON and an unprivileged user.
#[test]
fn fake_amd_two_nodes_unprivileged() {
    let tmp = common::TempDir::new("probe-amd");
    let sys = tmp.0.join("sys");
    let proc_ = tmp.0.join("proc");
    for pmu in ["software", "tracepoint", "ibs_op", "ibs_fetch", "amd_df", "cpu"] {
        touch_dir(&sys.join(format!("bus/event_source/devices/{pmu}")));
    }
    touch_dir(&sys.join("kernel/mm/damon/admin"));
    let n = sys.join("devices/system/node");
    write(&n.join("node0/cpulist"), "0-1");
    write(&n.join("node0/distance"), "10 32");
    write(&n.join("node1/cpulist"), "2-3");
    write(&n.join("node1/distance"), "32 10");
    write(&proc_.join("sys/kernel/perf_event_paranoid"), "2\n");
    write(&proc_.join("self/status"), "Name:\tx\nCapEff:\t0000000000000000\n");
    write(&proc_.join("self/stat"), "1 (x) R 0");
    write(&proc_.join("self/numa_maps"), "");
    write(&proc_.join("vmstat"), "numa_hit 1\n");
    let roots = Roots { sys, proc: proc_ };
    let topo = read_topology_at(&roots).unwrap();
    let p = probe_with(&topo, &ProbeOptions { roots, try_open: false });

    assert_eq!(p.sources.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), SOURCE_IDS.to_vec());
    assert_eq!(p.capabilities.iter().map(|c| c.metric.as_str()).collect::<Vec<_>>(), METRICS.to_vec());
    assert_eq!(p.privileges.perf_event_paranoid, Some(2));
    assert!(!p.privileges.cap_perfmon && !p.privileges.cap_sys_admin);
    let src = |id: &str| p.source(id).unwrap().clone();
    // IBS present but not permitted for this user.
    let ibs = src("ibs-op");
    assert!(!ibs.available);
    assert!(ibs.reason.contains("CAP_PERFMON") && ibs.reason.contains("perf_event_paranoid=2"), "{}", ibs.reason);
    // A cpu PMU without mem-loads: not PEBS.
    assert!(!src("pebs-load").available);
    assert!(src("pebs-load").reason.contains("no mem-loads"));
    // DAMON is implemented; whether it is available depends on the (fake) admin tree being free
    // and on running as root, and the reason says which.
    assert!(src("damon").implemented && !src("damon").reason.is_empty());
    let unc = src("uncore");
    assert!(unc.reason.contains("amd_df"), "{}", unc.reason);
    assert!(src("sysfs-topology").available);
    assert!(src("sysfs-topology").reason.contains("2 NUMA node"));
    // Two nodes: the one-node remark is absent; link bandwidth needs uncore.
    let link = p.capabilities.iter().find(|c| c.metric == "link-bandwidth").unwrap();
    assert_eq!(link.status, "unavailable");
    assert!(!link.reason.contains("one NUMA node"));
    for c in &p.capabilities {
        assert!(["measured", "estimated", "unavailable"].contains(&c.status.as_str()));
        assert!(!c.reason.is_empty());
    }
}

/// A VM without PMUs, one node, root.
#[test]
fn fake_vm_without_pmu() {
    let tmp = common::TempDir::new("probe-vm");
    let sys = tmp.0.join("sys");
    let proc_ = tmp.0.join("proc");
    for pmu in ["software", "tracepoint", "breakpoint", "msr", "uprobe"] {
        touch_dir(&sys.join(format!("bus/event_source/devices/{pmu}")));
    }
    write(&sys.join("devices/system/node/node0/cpulist"), "0-1");
    write(&sys.join("devices/system/node/node0/distance"), "10");
    write(&proc_.join("sys/kernel/perf_event_paranoid"), "2\n");
    write(&proc_.join("self/status"), "CapEff:\t000001ffffffffff\n");
    let roots = Roots { sys, proc: proc_ };
    let topo = read_topology_at(&roots).unwrap();
    let p = probe_with(&topo, &ProbeOptions { roots, try_open: false });
    let src = |id: &str| p.source(id).unwrap().clone();
    assert!(src("ibs-op").reason.starts_with("no ibs_op PMU in /sys/bus/event_source/devices"));
    assert!(src("ibs-op").reason.contains("VMs usually lack PMU passthrough"));
    assert!(src("pebs-load").reason.starts_with("no cpu PMU: hardware events not supported"));
    assert!(src("core-counters").reason.contains("no cpu PMU"));
    assert!(!src("damon").available);
    assert!(src("damon").reason.contains("CONFIG_DAMON"));
    let link = p.capabilities.iter().find(|c| c.metric == "link-bandwidth").unwrap();
    assert!(link.reason.contains("one NUMA node: remote-access and link metrics cannot be measured here"));
    let ipc = p.capabilities.iter().find(|c| c.metric == "ipc").unwrap();
    assert_eq!(ipc.status, "unavailable");
    assert!(p.privileges.cap_perfmon && p.privileges.cap_sys_admin);
    assert!(p.privileges.describe().contains("CAP_PERFMON"));
}

/// The live machine: the page-fault counter is actually opened.
#[test]
fn live_probe_opens_a_page_fault_counter() {
    let t = read_topology().unwrap();
    let p = probe(&t);
    let pf = p.source("page-faults").unwrap();
    if pf.available {
        assert!(pf.reason.starts_with("software page-fault event opened"), "{}", pf.reason);
        let c = p.capabilities.iter().find(|c| c.metric == "first-touch").unwrap();
        assert_eq!(c.status, "measured");
    } else {
        assert!(pf.reason.contains("perf_event"), "a failure names the cause: {}", pf.reason);
    }
    let caps = p.capture_capabilities();
    assert_eq!(caps.len(), 14);
    let srcs = p.capture_sources(&[]);
    assert_eq!(srcs.len(), 9);
    assert!(srcs.iter().all(|s| ["unavailable", "not-requested"].contains(&s.status.as_str())));
}

/// A PMU of a fake tree: name, cpumask, `format/` files.
type FakePmu<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A fake tree for the uncore probe tests: `sockets` × 4 cpus, the given nodes (cpu lists),
/// `/proc/cpuinfo` of one CPU model, and PMUs `(name, cpumask, formats)`.
fn uncore_tree(
    tag: &str,
    sockets: u32,
    nodes: &[&str],
    cpuinfo: (&str, u32, u32, u32),
    pmus: &[FakePmu],
    cap_eff: &str,
) -> (common::TempDir, Roots) {
    let tmp = common::TempDir::new(tag);
    let sys = tmp.0.join("sys");
    let proc_ = tmp.0.join("proc");
    for c in 0..sockets * 4 {
        write(&sys.join(format!("devices/system/cpu/cpu{c}/topology/physical_package_id")), &format!("{}\n", c / 4));
    }
    for (i, cpus) in nodes.iter().enumerate() {
        let n = sys.join(format!("devices/system/node/node{i}"));
        write(&n.join("cpulist"), cpus);
        let d: Vec<&str> = (0..nodes.len()).map(|j| if i == j { "10" } else { "21" }).collect();
        write(&n.join("distance"), &d.join(" "));
    }
    let (vendor, family, model, stepping) = cpuinfo;
    write(
        &proc_.join("cpuinfo"),
        &format!("processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\nstepping\t: {stepping}\n\n"),
    );
    for (i, (name, mask, formats)) in pmus.iter().enumerate() {
        let d = sys.join(format!("bus/event_source/devices/{name}"));
        write(&d.join("type"), &format!("{}\n", 30 + i));
        write(&d.join("cpumask"), &format!("{mask}\n"));
        for (f, v) in formats.iter() {
            write(&d.join(format!("format/{f}")), &format!("{v}\n"));
        }
    }
    touch_dir(&sys.join("bus/event_source/devices/cpu"));
    write(&proc_.join("sys/kernel/perf_event_paranoid"), "2\n");
    write(&proc_.join("self/status"), &format!("CapEff:\t{cap_eff}\n"));
    write(&proc_.join("self/stat"), "1 (x) R 0");
    write(&proc_.join("vmstat"), "numa_hit 1\n");
    (tmp, Roots { sys, proc: proc_ })
}

const INTEL_FORMATS: &[(&str, &str)] = &[("event", "config:0-7"), ("umask", "config:8-15")];

fn skx_tree(tag: &str, cap_eff: &str) -> (common::TempDir, Roots) {
    let (tmp, roots) = uncore_tree(
        tag,
        2,
        &["0-3", "4-7"],
        ("GenuineIntel", 6, 85, 4),
        &[
            ("uncore_imc_0", "0,4", INTEL_FORMATS),
            ("uncore_upi_0", "0,4", INTEL_FORMATS),
            ("uncore_upi_1", "0,4", INTEL_FORMATS),
            ("uncore_upi_2", "0,4", INTEL_FORMATS),
        ],
        cap_eff,
    );
    let ev = roots.sys.join("bus/event_source/devices/uncore_imc_0/events");
    write(&ev.join("cas_count_read"), "event=0x04,umask=0x03\n");
    write(&ev.join("cas_count_read.scale"), "6.103515625e-5\n");
    write(&ev.join("cas_count_read.unit"), "MiB\n");
    write(&ev.join("cas_count_write"), "event=0x04,umask=0x0c\n");
    write(&ev.join("cas_count_write.scale"), "6.103515625e-5\n");
    write(&ev.join("cas_count_write.unit"), "MiB\n");
    (tmp, roots)
}

fn probe_tree(roots: Roots) -> numascope_core::probe::Probe {
    let topo = read_topology_at(&roots).unwrap();
    probe_with(&topo, &ProbeOptions { roots, try_open: false })
}

/// A two-socket Skylake-SP with 3 UPI links per socket, as root: memory and link bandwidth are
/// measurable, and the probe says with which events.
#[test]
fn fake_skx_two_sockets_uncore_links() {
    let (_tmp, roots) = skx_tree("probe-skx", "000001ffffffffff");
    let p = probe_tree(roots);
    let unc = p.source("uncore").unwrap();
    assert!(unc.available && unc.implemented, "{unc:?}");
    assert_eq!(
        unc.reason,
        "`numascope record` counts: uncore_imc: 1 PMUs, sysfs events cas_count_read/cas_count_write × .scale × .unit → mc-read-bytes, mc-write-bytes, per node; \
         uncore_upi: 3 links, Skylake-SP (GenuineIntel family 0x6 model 0x55), UNC_UPI_TxL_FLITS.ALL_DATA and UNC_UPI_RxL_FLITS.ALL_DATA from perf's skylakex JSON, 64/9 bytes per flit → link-tx-bytes, link-rx-bytes summed over the socket's links, per node"
    );
    let cap = |m: &str| p.capabilities.iter().find(|c| c.metric == m).unwrap().clone();
    assert_eq!(cap("memory-bandwidth").status, "measured");
    let link = cap("link-bandwidth");
    assert_eq!(link.status, "measured", "{link:?}");
    assert!(link.reason.starts_with("uncore link counters, with `numascope record`: "), "{link:?}");
    assert!(link.reason.contains("UNC_UPI_TxL_FLITS.ALL_DATA"), "{link:?}");
}

/// The same machine without CAP_PERFMON and with perf_event_paranoid 2: planned but not usable,
/// and the reason says what is missing.
#[test]
fn fake_skx_unprivileged_uncore_needs_perfmon() {
    let (_tmp, roots) = skx_tree("probe-skx-user", "0000000000000000");
    let p = probe_tree(roots);
    let unc = p.source("uncore").unwrap();
    assert!(!unc.available && unc.implemented, "{unc:?}");
    assert!(unc.reason.ends_with("(system-wide uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid <= 0; here perf_event_paranoid=2, neither CAP_PERFMON nor CAP_SYS_ADMIN held)"), "{}", unc.reason);
    for m in ["memory-bandwidth", "link-bandwidth"] {
        let c = p.capabilities.iter().find(|c| c.metric == m).unwrap();
        assert_eq!(c.status, "unavailable");
        assert!(
            c.reason.contains("uncore counters are planned but system-wide uncore counting needs CAP_PERFMON"),
            "{c:?}"
        );
    }
}

/// Zen 3 with an amd_df PMU: data-fabric DRAM bytes and xGMI bytes are planned.
#[test]
fn fake_zen3_amd_df_probe() {
    let (_tmp, roots) = uncore_tree(
        "probe-zen3",
        2,
        &["0-3", "4-7"],
        ("AuthenticAMD", 25, 1, 1),
        &[("amd_df", "0,4", &[("event", "config:0-7,32-35,59-60"), ("umask", "config:8-15")])],
        "000001ffffffffff",
    );
    let p = probe_tree(roots);
    let unc = p.source("uncore").unwrap();
    assert!(unc.available && unc.implemented, "{unc:?}");
    assert!(unc.reason.starts_with("`numascope record` counts: no amd_umc PMU; amd_df: Zen 3 (AuthenticAMD family 0x19 model 0x01), dram_channel_data_controller_0..7"), "{}", unc.reason);
    for m in ["memory-bandwidth", "link-bandwidth"] {
        assert_eq!(p.capabilities.iter().find(|c| c.metric == m).unwrap().status, "measured", "{m}");
    }
}

/// A Zen 4 whose kernel has amd_df but no amd_umc PMU: nothing is counted, and the probe says why.
#[test]
fn fake_zen4_without_umc_is_not_counted() {
    let (_tmp, roots) = uncore_tree(
        "probe-zen4",
        2,
        &["0-3", "4-7"],
        ("AuthenticAMD", 25, 17, 1),
        &[("amd_df", "0,4", &[("event", "config:0-7,32-37"), ("umask", "config:8-15,24-27")])],
        "000001ffffffffff",
    );
    let p = probe_tree(roots);
    let unc = p.source("uncore").unwrap();
    assert!(!unc.available && !unc.implemented, "{unc:?}");
    assert_eq!(
        unc.reason,
        "no amd_umc PMU; amd_df present but AuthenticAMD family 0x19 model 0x11 (Zen 4) has no data-fabric encoding here and no usable amd_umc PMU: not counted"
    );
    let link = p.capabilities.iter().find(|c| c.metric == "link-bandwidth").unwrap();
    assert_eq!(link.status, "unavailable");
    assert_eq!(
        link.reason,
        "needs interconnect uncore counters: amd_df present but AuthenticAMD family 0x19 model 0x11 (Zen 4) has no data-fabric encoding here and no usable amd_umc PMU: not counted"
    );
    let bw = p.capabilities.iter().find(|c| c.metric == "memory-bandwidth").unwrap();
    assert_eq!(bw.status, "unavailable");
    assert!(bw.reason.starts_with("no amd_umc PMU; amd_df present but"), "{bw:?}");
}

/// NUMA hinting faults as access samples: the probe says, for each missing piece, why not, and
/// with balancing on, the tracepoint and CAP_PERFMON, memory-accesses becomes `estimated`.
#[test]
fn numa_hinting_faults_reported_per_missing_piece() {
    let case = |tag: &str, balancing: Option<&str>, tracefs: bool, cap_eff: &str| {
        let tmp = common::TempDir::new(&format!("probe-hint-{tag}"));
        let sys = tmp.0.join("sys");
        let proc_ = tmp.0.join("proc");
        for pmu in ["software", "tracepoint"] {
            touch_dir(&sys.join(format!("bus/event_source/devices/{pmu}")));
        }
        write(&sys.join("devices/system/node/node0/cpulist"), "0-1");
        write(&sys.join("devices/system/node/node0/distance"), "10 20");
        write(&sys.join("devices/system/node/node1/cpulist"), "2-3");
        write(&sys.join("devices/system/node/node1/distance"), "20 10");
        if tracefs {
            let d = sys.join("kernel/tracing/events/exceptions/page_fault_user");
            write(&d.join("id"), "190\n");
            write(
                &d.join("format"),
                "name: page_fault_user\nID: 190\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:unsigned long ip;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned long error_code;\toffset:24;\tsize:8;\tsigned:0;\n",
            );
        }
        if let Some(b) = balancing {
            write(&proc_.join("sys/kernel/numa_balancing"), b);
        }
        write(&proc_.join("sys/kernel/perf_event_paranoid"), "2\n");
        write(&proc_.join("self/status"), &format!("CapEff:\t{cap_eff}\n"));
        write(&proc_.join("self/stat"), "1 (x) R 0");
        write(&proc_.join("self/numa_maps"), "");
        let roots = Roots { sys, proc: proc_ };
        let topo = read_topology_at(&roots).unwrap();
        let p = probe_with(&topo, &ProbeOptions { roots, try_open: false });
        let pf = p.source("page-faults").unwrap().reason.clone();
        let acc = p.capabilities.iter().find(|c| c.metric == "memory-accesses").unwrap().clone();
        (pf, acc.status, acc.reason)
    };
    const ROOT: &str = "000001ffffffffff";
    let (pf, status, _) = case("none", None, true, ROOT);
    assert!(
        pf.contains("NUMA hinting faults as access samples: no: the kernel has no automatic NUMA balancing"),
        "{pf}"
    );
    assert_eq!(status, "unavailable");
    let (pf, status, _) = case("off", Some("0\n"), true, ROOT);
    assert!(
        pf.contains(
            "no: automatic NUMA balancing is off (kernel.numa_balancing=0); with it on (sysctl kernel.numa_balancing=1"
        ),
        "{pf}"
    );
    assert_eq!(status, "unavailable");
    let (pf, status, _) = case("notracefs", Some("1\n"), false, ROOT);
    assert!(pf.contains("no: tracefs is not mounted"), "{pf}");
    assert_eq!(status, "unavailable");
    let (pf, status, _) = case("unpriv", Some("1\n"), true, "0000000000000000");
    assert!(pf.contains("no: the tracepoint's raw records need CAP_PERFMON"), "{pf}");
    assert_eq!(status, "unavailable");
    let (pf, status, reason) = case("yes", Some("1\n"), true, ROOT);
    assert!(pf.contains("NUMA hinting faults as access samples: yes (kernel.numa_balancing=1, tracepoint exceptions:page_fault_user)"), "{pf}");
    assert_eq!(status, "estimated");
    assert!(
        reason.starts_with("no PMU (") && reason.contains("about once per page per scan pass, not how often"),
        "{reason}"
    );
    // Tiering mode only (2): no hinting faults on ordinary memory.
    let (pf, _, _) = case("tiering", Some("2\n"), true, ROOT);
    assert!(pf.contains("is off (kernel.numa_balancing=2: memory tiering only"), "{pf}");
}
