//! Topology from a fake sysfs tree and from the live machine.

mod common;

use std::fs;
use std::path::Path;

use numascope_core::topology::{parse_cpulist, read_topology, read_topology_at, Roots};

fn write(p: &Path, text: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn fake_two_nodes(root: &Path) -> Roots {
    let sys = root.join("sys");
    let proc_ = root.join("proc");
    let n = sys.join("devices/system/node");
    write(&n.join("node0/cpulist"), "0-3,8-11\n");
    write(&n.join("node0/distance"), "10 21\n");
    write(
        &n.join("node0/meminfo"),
        "Node 0 MemTotal:       16384000 kB\nNode 0 MemFree:         8000000 kB\nNode 0 MemUsed:         8384000 kB\n",
    );
    write(&n.join("node1/cpulist"), "4-7,12-15\n");
    write(&n.join("node1/distance"), "21 10\n");
    write(&n.join("node1/meminfo"), "Node 1 MemTotal:       16777216 kB\n");
    write(&n.join("online"), "0-1\n");
    write(&n.join("possible"), "0-1\n");
    write(&sys.join("devices/system/cpu/online"), "0-15\n");
    write(
        &proc_.join("cpuinfo"),
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: Fake EPYC 9999 64-Core Processor\n\n",
    );
    write(&proc_.join("sys/kernel/osrelease"), "6.1.0-fake\n");
    write(&proc_.join("sys/kernel/hostname"), "fakehost\n");
    Roots { sys, proc: proc_ }
}

#[test]
fn fake_two_node_tree() {
    let tmp = common::TempDir::new("topo");
    let roots = fake_two_nodes(&tmp.0);
    let t = read_topology_at(&roots).unwrap();
    assert!(t.has_node_sysfs);
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.nodes[0].cpus, vec![0, 1, 2, 3, 8, 9, 10, 11]);
    assert_eq!(t.nodes[1].cpus, vec![4, 5, 6, 7, 12, 13, 14, 15]);
    assert_eq!(t.nodes[0].memory_bytes, Some(16_384_000 * 1024));
    assert_eq!(t.nodes[1].memory_bytes, Some(16_777_216 * 1024));
    assert_eq!(t.distances, vec![vec![10, 21], vec![21, 10]]);
    assert_eq!(t.cpu_model.as_deref(), Some("Fake EPYC 9999 64-Core Processor"));
    assert_eq!(t.kernel.as_deref(), Some("6.1.0-fake"));
    assert_eq!(t.hostname, "fakehost");
    let c2n = t.cpu_to_node();
    assert_eq!(c2n[0], 0);
    assert_eq!(c2n[4], 1);
    assert_eq!(c2n[11], 0);
    assert_eq!(c2n[15], 1);

    let m = t.machine();
    assert_eq!(m.source, "sysfs");
    assert_eq!(m.name, "fakehost");
    assert!(m.links.is_empty());
    assert!(m.routes.is_none());
    assert!(m.latencies_ns.is_none());
    assert!(m.nodes.iter().all(|n| n.memory_bandwidth_gbps.is_none()));
    assert_eq!(m.provenance.distances, "measured:sysfs node*/distance (ACPI SLIT)");
    assert!(m.provenance.memory_bytes.starts_with("measured:sysfs node*/meminfo"));
    assert!(m.provenance.links.starts_with("unavailable:"));
    assert!(m.provenance.memory_bandwidth_gbps.starts_with("unavailable:"));
    assert!(m.provenance.latencies_ns.starts_with("unavailable:"));
    // JSON field names as the trace format spells them.
    let j = serde_json::to_value(&m).unwrap();
    assert!(j["nodes"][0].get("memoryBandwidthGBps").is_some());
    assert!(j.get("pageSizeBytes").is_some() && j.get("cpuModel").is_some() && j.get("latenciesNs").is_some());
    assert!(j["provenance"].get("memoryBandwidthGBps").is_some());
}

#[test]
fn memoryless_node_and_sparse_ids() {
    let tmp = common::TempDir::new("topo-sparse");
    let sys = tmp.0.join("sys");
    let n = sys.join("devices/system/node");
    write(&n.join("node0/cpulist"), "0-1\n");
    write(&n.join("node0/distance"), "10 20\n");
    write(&n.join("node2/cpulist"), "\n"); // CXL-style memory-only node
    write(&n.join("node2/distance"), "20 10\n");
    write(&n.join("node2/meminfo"), "Node 2 MemTotal:        1048576 kB\n");
    let roots = Roots { sys, proc: tmp.0.join("proc") };
    let t = read_topology_at(&roots).unwrap();
    assert_eq!(t.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), vec![0, 2]);
    assert!(t.nodes[1].cpus.is_empty());
    assert_eq!(t.nodes[0].memory_bytes, None);
    assert_eq!(t.distances, vec![vec![10, 20], vec![20, 10]]);
    assert!(t.provenance.memory_bytes.contains("missing for some nodes"));
}

#[test]
fn no_node_directory_means_one_node() {
    let tmp = common::TempDir::new("topo-none");
    let sys = tmp.0.join("sys");
    write(&sys.join("devices/system/cpu/online"), "0-3\n");
    write(&tmp.0.join("proc/meminfo"), "MemTotal:        8192000 kB\nMemFree: 100 kB\n");
    let t = read_topology_at(&Roots { sys, proc: tmp.0.join("proc") }).unwrap();
    assert!(!t.has_node_sysfs);
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.nodes[0].cpus, vec![0, 1, 2, 3]);
    assert_eq!(t.nodes[0].memory_bytes, Some(8_192_000 * 1024));
    assert_eq!(t.distances, vec![vec![10]]);
    assert!(t.provenance.distances.starts_with("estimated:"));
    assert!(t.provenance.distances.contains("one node"));
    assert!(t.notes[0].contains("treated as one NUMA node"));
}

#[test]
fn cpulists() {
    assert_eq!(parse_cpulist("0-3,8-11").unwrap(), vec![0, 1, 2, 3, 8, 9, 10, 11]);
    assert_eq!(parse_cpulist("").unwrap(), Vec::<u32>::new());
    assert_eq!(parse_cpulist("5").unwrap(), vec![5]);
    assert_eq!(parse_cpulist("0-7:2").unwrap(), vec![0, 2, 4, 6]);
    assert!(parse_cpulist("3-1").is_err());
    assert!(parse_cpulist("x").is_err());
    // Bounded: a hostile list is an error, not gigabytes.
    assert!(parse_cpulist("0-4294967295").unwrap_err().contains("beyond the 32768 cpus"));
    assert!(parse_cpulist("0-32767").is_ok());
}

#[test]
fn live_machine() {
    let t = read_topology().unwrap();
    assert!(!t.nodes.is_empty());
    let all: usize = t.nodes.iter().map(|n| n.cpus.len()).sum();
    assert!(all >= 1);
    assert_eq!(t.distances.len(), t.nodes.len());
    assert!(t.distances.iter().enumerate().all(|(i, row)| row.len() == t.nodes.len() && row[i] == 10));
}
