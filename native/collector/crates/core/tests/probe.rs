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
    assert_eq!(caps.len(), 13);
    let srcs = p.capture_sources(&[]);
    assert_eq!(srcs.len(), 9);
    assert!(srcs.iter().all(|s| ["unavailable", "not-requested"].contains(&s.status.as_str())));
}
