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

/// The tiers testbed guest's sysfs: node 2 has no cpus, HMAT figures from the nearest initiators
/// and the kernel's memory tiers (ids 4 and 22, ranked 0 and 1).
fn fake_tiered(root: &Path, with_tiers: bool) -> Roots {
    let sys = root.join("sys");
    let proc_ = root.join("proc");
    let n = sys.join("devices/system/node");
    let rows = ["10 20 28", "20 10 28", "28 28 10"];
    let cpus = ["0", "1", ""];
    let figures = [(20480, 20480, 80, 80, 0), (20480, 20480, 80, 80, 1), (5120, 5120, 250, 250, 0)];
    for i in 0..3 {
        let d = n.join(format!("node{i}"));
        write(&d.join("cpulist"), &format!("{}\n", cpus[i]));
        write(&d.join("distance"), &format!("{}\n", rows[i]));
        write(&d.join("meminfo"), &format!("Node {i} MemTotal:       262144 kB\n"));
        let (rb, wb, rl, wl, init) = figures[i];
        let a = d.join("access0/initiators");
        write(&a.join("read_bandwidth"), &format!("{rb}\n"));
        write(&a.join("write_bandwidth"), &format!("{wb}\n"));
        write(&a.join("read_latency"), &format!("{rl}\n"));
        write(&a.join("write_latency"), &format!("{wl}\n"));
        // sysfs holds a link nodeK to the initiator node; a directory stands in for it here
        fs::create_dir_all(a.join(format!("node{init}"))).unwrap();
    }
    if with_tiers {
        write(&sys.join("devices/virtual/memory_tiering/memory_tier4/nodelist"), "0-1\n");
        write(&sys.join("devices/virtual/memory_tiering/memory_tier22/nodelist"), "2\n");
    }
    write(&sys.join("devices/system/cpu/online"), "0-1\n");
    write(&proc_.join("sys/kernel/osrelease"), "6.12.0-fake\n");
    write(&proc_.join("sys/kernel/hostname"), "tiers\n");
    Roots { sys, proc: proc_ }
}

#[test]
fn tiers_and_hmat_reach_the_manifest_machine() {
    let tmp = common::TempDir::new("topo-tiers");
    let t = read_topology_at(&fake_tiered(&tmp.0, true)).unwrap();
    let m = serde_json::to_value(t.machine()).unwrap();
    let nodes = m["nodes"].as_array().unwrap();
    assert_eq!(nodes[2]["cpus"], serde_json::json!([]), "node 2 is memory-only");
    assert_eq!(nodes.iter().map(|x| x["memoryTier"].as_u64().unwrap()).collect::<Vec<_>>(), vec![0, 0, 1]);
    assert_eq!(
        nodes.iter().map(|x| x["memoryBandwidthGBps"].as_f64().unwrap()).collect::<Vec<_>>(),
        vec![20.48, 20.48, 5.12]
    );
    assert_eq!(nodes[2]["hmat"]["readBandwidthMBps"], 5120);
    assert_eq!(nodes[2]["hmat"]["writeLatencyNs"], 250);
    assert_eq!(nodes[2]["hmat"]["initiators"], serde_json::json!([0]));
    assert!(nodes[0].get("memoryKind").is_none(), "sysfs does not say what memory a node holds");
    // the engine's rule: L_m × SLIT[c][m] / the smallest SLIT from a node with cpus to m
    let lat: Vec<Vec<f64>> = serde_json::from_value(m["latenciesNs"].clone()).unwrap();
    assert_eq!(lat[0], vec![80.0, 160.0, 250.0]);
    assert_eq!(lat[1], vec![160.0, 80.0, 250.0]);
    assert_eq!(lat[2], vec![224.0, 224.0, 250.0 * 10.0 / 28.0]);
    let p = &m["provenance"];
    assert!(p["memoryBandwidthGBps"].as_str().unwrap().starts_with("documented:firmware HMAT"), "{p}");
    assert!(p["hmat"].as_str().unwrap().contains("not measured"), "{p}");
    assert!(p["memoryTier"].as_str().unwrap().starts_with("measured:"), "{p}");
    assert!(p["latenciesNs"].as_str().unwrap().starts_with("estimated:firmware HMAT"), "{p}");

    // a kernel without memory_tiering: no tiers, the HMAT figures stay
    let tmp2 = common::TempDir::new("topo-tiers2");
    let m2 = serde_json::to_value(read_topology_at(&fake_tiered(&tmp2.0, false)).unwrap().machine()).unwrap();
    assert!(m2["nodes"][0].get("memoryTier").is_none());
    assert!(m2["provenance"].get("memoryTier").is_none());
    assert_eq!(m2["nodes"][2]["memoryBandwidthGBps"], 5.12);
}

#[test]
fn machines_without_hmat_keep_their_manifest_shape() {
    let tmp = common::TempDir::new("topo-nohmat");
    let m = serde_json::to_value(read_topology_at(&fake_two_nodes(&tmp.0)).unwrap().machine()).unwrap();
    for key in ["memoryTier", "memoryKind", "hmat"] {
        assert!(m["nodes"][0].get(key).is_none(), "{key}");
    }
    assert!(m["nodes"][0]["memoryBandwidthGBps"].is_null());
    assert!(m["latenciesNs"].is_null());
    assert!(m["provenance"].get("hmat").is_none());
}

/// The recording machine's cpu clock (manifest `machine.cpuClockGHz`), from a fake tree: each
/// source in order, each with its provenance, and `unavailable:` when there is none.
#[test]
fn the_cpu_clock_in_order_with_its_provenance() {
    let tmp = common::TempDir::new("topo-clock");
    let roots = fake_two_nodes(&tmp.0);
    let cpu0 = roots.sys.join("devices/system/cpu/cpu0");
    let xeon = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\ncpu MHz\t\t: 1000.125\n\n\
                processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\ncpu MHz\t\t: 3700.000\n\n";
    write(&roots.proc.join("cpuinfo"), xeon);
    write(&cpu0.join("cpufreq/base_frequency"), "2100000\n");
    write(&cpu0.join("cpufreq/cpuinfo_max_freq"), "3700000\n");
    write(&cpu0.join("acpi_cppc/nominal_freq"), "2200\n");
    let clock = |roots: &Roots| {
        let t = read_topology_at(roots).unwrap();
        let m = t.machine();
        assert_eq!(m.cpu_clock_ghz, t.cpu_clock_ghz);
        (m.cpu_clock_ghz, m.provenance.cpu_clock_ghz.unwrap())
    };
    // 1. cpufreq base_frequency (kHz)
    let (ghz, p) = clock(&roots);
    assert_eq!(ghz, Some(2.1));
    assert!(p.starts_with("documented:sysfs cpu0/cpufreq/base_frequency, 2100000 kHz"), "{p}");
    // 2. ACPI CPPC nominal_freq (MHz)
    fs::remove_file(cpu0.join("cpufreq/base_frequency")).unwrap();
    let (ghz, p) = clock(&roots);
    assert_eq!(ghz, Some(2.2));
    assert!(p.starts_with("documented:sysfs cpu0/acpi_cppc/nominal_freq, 2200 MHz"), "{p}");
    // 3. the model name's `@ x.xxGHz` (a nominal_freq of 0: firmware without it)
    write(&cpu0.join("acpi_cppc/nominal_freq"), "0\n");
    let (ghz, p) = clock(&roots);
    assert_eq!(ghz, Some(2.1));
    assert!(p.starts_with("documented:the cpu model name \"Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\""), "{p}");
    // 4. cpufreq cpuinfo_max_freq (a model name without a clock: AMD's)
    write(
        &roots.proc.join("cpuinfo"),
        &xeon.replace("Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz", "AMD EPYC 9254 24-Core Processor"),
    );
    let (ghz, p) = clock(&roots);
    assert_eq!(ghz, Some(3.7));
    assert!(p.starts_with("documented:sysfs cpu0/cpufreq/cpuinfo_max_freq, 3700000 kHz"), "{p}");
    // 5. /proc/cpuinfo cpu MHz of processor 0 (not of processor 1)
    fs::remove_file(cpu0.join("cpufreq/cpuinfo_max_freq")).unwrap();
    let (ghz, p) = clock(&roots);
    assert_eq!(ghz, Some(1.000125));
    assert!(p.starts_with("estimated:/proc/cpuinfo cpu MHz of cpu 0, 1000.125 MHz"), "{p}");
    // none: unavailable, with the reason; the JSON has no cpuClockGHz and says why in provenance
    write(&roots.proc.join("cpuinfo"), "processor\t: 0\nmodel name\t: AMD EPYC 9254 24-Core Processor\n\n");
    let (ghz, p) = clock(&roots);
    assert_eq!(ghz, None);
    assert!(p.starts_with("unavailable:no cpufreq base_frequency or cpuinfo_max_freq"), "{p}");
    let j = serde_json::to_value(read_topology_at(&roots).unwrap().machine()).unwrap();
    assert!(j.get("cpuClockGHz").is_none());
    assert!(j["provenance"]["cpuClockGHz"].as_str().unwrap().starts_with("unavailable:"));
    // a figure out of range (MHz written where kHz is meant) is skipped, not used
    write(&cpu0.join("cpufreq/base_frequency"), "2100\n");
    write(&cpu0.join("cpufreq/cpuinfo_max_freq"), "3700000\n");
    assert_eq!(clock(&roots).0, Some(3.7));
    let j = serde_json::to_value(read_topology_at(&roots).unwrap().machine()).unwrap();
    assert_eq!(j["cpuClockGHz"], serde_json::json!(3.7));
}

#[test]
fn clocks_in_model_names() {
    use numascope_core::topology::clock_in_model_name as c;
    assert_eq!(c("Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"), Some(2.1));
    assert_eq!(c("Intel(R) Pentium(R) 4 CPU 3.00GHz"), Some(3.0));
    assert_eq!(c("AMD Opteron 8385 (Shanghai, 4 cores, 2.3 GHz)"), Some(2.3));
    assert_eq!(c("AMD EPYC 9254 24-Core Processor"), None);
    assert_eq!(c("Fake x86GHz"), None);
    assert_eq!(c("CPU @ 2100GHz"), None);
}
