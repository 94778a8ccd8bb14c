//! The placement part of the probe (`numascope probe`, `placement` in `probe --json`): kernel
//! features and running agents that decide or change where pages and threads go, each with one
//! line on what it means for placement (docs/capabilities.md, "Placement features").
//!
//! Everything is read from sysfs and procfs under the probe's roots; nothing is written.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use crate::topology::{parse_cpulist, Topology};

/// One placement feature: its id, a short state, the details read, and what it means.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PlacementFeature {
    /// `weighted-interleave`, `memory-tiers`, `demotion`, `numa-balancing`, `cpu-less-nodes`,
    /// `hmat`, `damon-modules`, `sched-ext`.
    pub id: String,
    /// One word or value: `supported`, `absent`, `on`, `off`, `tiering`, …
    pub state: String,
    /// What was read (feature-specific object; `null` when nothing could be read).
    pub value: Value,
    /// One line: what it means for placement.
    pub meaning: String,
}

fn read(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn truthy(s: &str) -> Option<bool> {
    match s {
        "Y" | "y" | "1" | "true" | "on" => Some(true),
        "N" | "n" | "0" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// Files `<prefix>N` in `dir` with their id, sorted by id.
fn numbered(dir: &Path, prefix: &str) -> Vec<(u32, std::path::PathBuf)> {
    let mut v: Vec<(u32, std::path::PathBuf)> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| {
                let e = e.ok()?;
                let n: u32 = e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok()?;
                Some((n, e.path()))
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.truncate(4096);
    v
}

fn weighted_interleave(sys: &Path) -> PlacementFeature {
    let dir = sys.join("kernel/mm/mempolicy/weighted_interleave");
    if !dir.is_dir() {
        return PlacementFeature {
            id: "weighted-interleave".into(),
            state: "absent".into(),
            value: Value::Null,
            meaning: format!(
                "no {}: this kernel has no MPOL_WEIGHTED_INTERLEAVE (needs Linux 6.9): `numascope run --plan` \
                 refuses weighted object entries (or falls back to plain interleave) and `apply --set-system-weights` \
                 is refused; weighted-interleave page ranges still apply (move_pages)",
                dir.display()
            ),
        };
    }
    let weights: BTreeMap<String, Value> = numbered(&dir, "node")
        .into_iter()
        .map(|(n, p)| (n.to_string(), read(&p).and_then(|s| s.parse::<u64>().ok()).map_or(Value::Null, Value::from)))
        .collect();
    let auto = crate::apply::weights::auto_file(&dir).and_then(|p| read(&p)).and_then(|s| truthy(&s));
    let mode = match auto {
        Some(true) => "auto",
        Some(false) => "manual",
        None => "manual (no auto file: before Linux 6.16)",
    };
    let list: Vec<String> = weights.iter().map(|(n, w)| format!("N{n}={w}")).collect();
    PlacementFeature {
        id: "weighted-interleave".into(),
        state: "supported".into(),
        value: json!({ "weights": weights, "auto": auto }),
        meaning: format!(
            "MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+) places new allocations by these system-wide weights ({}, mode {mode}{}): \
             `numascope run --plan` weighted object entries need them to equal the plan's; `apply --set-system-weights` \
             changes them (rollback restores them)",
            list.join(" "),
            if auto == Some(true) { ": derived from the firmware's bandwidth figures" } else { "" }
        ),
    }
}

fn memory_tiers(sys: &Path) -> PlacementFeature {
    let dir = sys.join("devices/virtual/memory_tiering");
    let tiers: Vec<(u32, String)> =
        numbered(&dir, "memory_tier").into_iter().filter_map(|(n, p)| Some((n, read(&p.join("nodelist"))?))).collect();
    if tiers.is_empty() {
        return PlacementFeature {
            id: "memory-tiers".into(),
            state: "absent".into(),
            value: Value::Null,
            meaning: format!(
                "no {}/memory_tier*: the kernel sees one kind of memory (no tiers to demote to)",
                dir.display()
            ),
        };
    }
    let value: BTreeMap<String, String> = tiers.iter().map(|(n, l)| (n.to_string(), l.clone())).collect();
    // The kernel's tier ids (memory_tierN, N from its abstract distance) ranked as the trace and
    // `numascope topology` rank them (0 = fastest), so the two say the same thing.
    let mut ranked = tiers.clone();
    ranked.sort_by_key(|(n, _)| *n);
    let desc: Vec<String> = ranked
        .iter()
        .enumerate()
        .map(|(rank, (n, l))| {
            format!("memory_tier{n} (rank {rank}{}): nodes {l}", if rank == 0 { ", fastest" } else { "" })
        })
        .collect();
    PlacementFeature {
        id: "memory-tiers".into(),
        state: format!("{} tier{}", tiers.len(), if tiers.len() == 1 { "" } else { "s" }),
        value: json!(value),
        meaning: format!(
            "{} (a higher rank is slower memory, e.g. CXL or cpu-less nodes){}",
            desc.join("; "),
            if tiers.len() > 1 {
                ": with demotion on, reclaim moves cold pages down a tier instead of swapping, behind any plan"
            } else {
                ""
            }
        ),
    }
}

fn demotion(sys: &Path) -> PlacementFeature {
    let p = sys.join("kernel/mm/numa/demotion_enabled");
    let v = read(&p).and_then(|s| truthy(&s));
    let (state, meaning) = match v {
        None => ("absent", format!("no {}: the kernel does not demote pages between tiers", p.display())),
        Some(true) => ("on", "reclaim demotes cold pages to a slower tier (a lower memory tier's node) instead of dropping them: pages a plan placed on a fast node can move to a slow one under memory pressure".to_string()),
        Some(false) => ("off", "reclaim does not demote: pages stay on their node until swapped or moved (echo true > demotion_enabled turns it on)".to_string()),
    };
    PlacementFeature { id: "demotion".into(), state: state.into(), value: v.map_or(Value::Null, Value::from), meaning }
}

fn numa_balancing(proc_: &Path) -> PlacementFeature {
    let v = read(&proc_.join("sys/kernel/numa_balancing")).and_then(|s| s.parse::<u32>().ok());
    let (state, meaning) = match v {
        None => ("absent", "the kernel has no automatic NUMA balancing: pages and threads stay where they were put"),
        Some(0) => ("off", "automatic NUMA balancing is off: applied plans stay as applied"),
        Some(1) => ("normal", "automatic NUMA balancing (mode 1) migrates pages towards the nodes whose cpus touch them and moves tasks: it can undo or redo a plan's placement (the hinting faults are also access samples for `record`)"),
        Some(2) => ("tiering", "memory tiering mode (2): hot pages on slow-tier nodes are promoted to fast nodes (with demotion, cold pages go the other way); pages on ordinary nodes are not balanced"),
        Some(3) => ("normal+tiering", "modes 1 and 2 together: pages migrate towards their users and hot pages are promoted from slow tiers: a plan's placement is not stable"),
        Some(_) => ("other", "an unknown kernel.numa_balancing mode: pages may be migrated by the kernel"),
    };
    PlacementFeature {
        id: "numa-balancing".into(),
        state: state.into(),
        value: v.map_or(Value::Null, Value::from),
        meaning: meaning.into(),
    }
}

/// Nodes with memory and no cpus (CXL expanders, HBM in flat mode, emulated memory-only nodes).
fn cpu_less_nodes(sys: &Path, topo: &Topology) -> PlacementFeature {
    let has_cpu = read(&sys.join("devices/system/node/has_cpu")).and_then(|s| parse_cpulist(&s).ok());
    let ids: Vec<u32> = match has_cpu {
        Some(with) => topo.nodes.iter().map(|n| n.id).filter(|id| !with.contains(id)).collect(),
        None => topo.nodes.iter().filter(|n| n.cpus.is_empty()).map(|n| n.id).collect(),
    };
    let meaning = if ids.is_empty() {
        "every node has cpus".to_string()
    } else {
        let list = ids.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",");
        let (s, has) = if ids.len() == 1 { ("", "has") } else { ("s", "have") };
        format!(
            "node{s} {list} {has} memory only: no thread runs there, so every access to it is remote; first touch \
             never lands there by itself (bind, interleave or weighted interleave put pages there, or demotion does)"
        )
    };
    PlacementFeature { id: "cpu-less-nodes".into(), state: ids.len().to_string(), value: json!(ids), meaning }
}

/// HMAT figures per memory node (`nodeN/access0/initiators/*`: from the nearest initiator;
/// bandwidth MB/s, latency ns).
fn hmat(sys: &Path) -> PlacementFeature {
    let mut nodes = BTreeMap::new();
    let mut lines = Vec::new();
    for (n, p) in numbered(&sys.join("devices/system/node"), "node") {
        let a = p.join("access0/initiators");
        if !a.is_dir() {
            continue;
        }
        let f = |k: &str| read(&a.join(k)).and_then(|s| s.parse::<u64>().ok());
        let (rb, wb, rl, wl) = (f("read_bandwidth"), f("write_bandwidth"), f("read_latency"), f("write_latency"));
        let initiators: Vec<u32> = numbered(&a, "node").into_iter().map(|(i, _)| i).collect();
        lines.push(format!(
            "N{n}: read {} MB/s {} ns from node{} {:?}",
            rb.map_or("?".into(), |v| v.to_string()),
            rl.map_or("?".into(), |v| v.to_string()),
            if initiators.len() == 1 { "" } else { "s" },
            initiators
        ));
        nodes.insert(
            n.to_string(),
            json!({ "readBandwidthMBps": rb, "writeBandwidthMBps": wb, "readLatencyNs": rl, "writeLatencyNs": wl,
                    "initiators": initiators }),
        );
    }
    if nodes.is_empty() {
        return PlacementFeature {
            id: "hmat".into(),
            state: "absent".into(),
            value: Value::Null,
            meaning: "no nodeN/access0 figures (no ACPI HMAT): the kernel's auto weights and tiers have no bandwidth or latency to go by".into(),
        };
    }
    PlacementFeature {
        id: "hmat".into(),
        state: format!("{} node{}", nodes.len(), if nodes.len() == 1 { "" } else { "s" }),
        value: json!(nodes),
        meaning: format!(
            "firmware (HMAT) figures from each node's nearest initiator: {}; weighted interleave's auto weights and the \
             memory tiers come from these, and the engine can start its weights from the bandwidth ratios",
            lines.join("; ")
        ),
    }
}

fn damon_modules(sys: &Path) -> PlacementFeature {
    let mut running = Vec::new();
    let mut value = serde_json::Map::new();
    for m in ["damon_reclaim", "damon_lru_sort"] {
        let e = read(&sys.join(format!("module/{m}/parameters/enabled"))).and_then(|s| truthy(&s));
        value.insert(m.into(), e.map_or(Value::Null, Value::from));
        if e == Some(true) {
            running.push(m);
        }
    }
    let meaning = if running.is_empty() {
        "no DAMON module (damon_reclaim, damon_lru_sort) is enabled".to_string()
    } else {
        format!(
            "{} enabled: {} (it acts on the whole machine's physical memory, behind any plan)",
            running.join(", "),
            running
                .iter()
                .map(|m| if *m == "damon_reclaim" {
                    "cold pages are reclaimed (paged out) proactively"
                } else {
                    "the LRU lists are sorted by DAMON's hotness, which steers reclaim and demotion"
                })
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    PlacementFeature {
        id: "damon-modules".into(),
        state: if running.is_empty() { "none".into() } else { running.join(",") },
        value: Value::Object(value),
        meaning,
    }
}

fn sched_ext(sys: &Path) -> PlacementFeature {
    let d = sys.join("kernel/sched_ext");
    let Some(state) = read(&d.join("state")) else {
        return PlacementFeature {
            id: "sched-ext".into(),
            state: "absent".into(),
            value: Value::Null,
            meaning: "no /sys/kernel/sched_ext (kernel without sched_ext, before Linux 6.12): the kernel's own scheduler places threads".into(),
        };
    };
    let ops = read(&d.join("root/ops")).filter(|s| !s.is_empty());
    let meaning = match (&ops, state.as_str()) {
        (Some(o), "enabled") => format!(
            "the BPF scheduler {o:?} places threads: where a thread runs (and so which node is local to it) is its \
             policy; thread pins (affinity) still bind it, but its own NUMA awareness replaces the kernel's"
        ),
        _ => format!("sched_ext is {state}: the kernel's own scheduler places threads"),
    };
    PlacementFeature { id: "sched-ext".into(), state, value: json!({ "ops": ops }), meaning }
}

/// Every placement feature, in the order the probe prints them.
pub fn placement_features(sys: &Path, proc_: &Path, topo: &Topology) -> Vec<PlacementFeature> {
    vec![
        weighted_interleave(sys),
        memory_tiers(sys),
        demotion(sys),
        numa_balancing(proc_),
        cpu_less_nodes(sys, topo),
        hmat(sys),
        damon_modules(sys),
        sched_ext(sys),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NodeTopology;

    fn w(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn topo() -> Topology {
        let mut t = crate::topology::read_topology().unwrap();
        t.nodes = vec![
            NodeTopology { id: 0, cpus: vec![0, 1], memory_bytes: None },
            NodeTopology { id: 1, cpus: vec![], memory_bytes: None },
        ];
        t
    }

    #[test]
    fn reads_a_tiered_machine() {
        let root = std::env::temp_dir().join(format!("numascope-probe-placement-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let (sys, proc_) = (root.join("sys"), root.join("proc"));
        w(&sys, "kernel/mm/mempolicy/weighted_interleave/node0", "5\n");
        w(&sys, "kernel/mm/mempolicy/weighted_interleave/node1", "2\n");
        w(&sys, "kernel/mm/mempolicy/weighted_interleave/auto", "Y\n");
        w(&sys, "devices/virtual/memory_tiering/memory_tier4/nodelist", "0\n");
        w(&sys, "devices/virtual/memory_tiering/memory_tier22/nodelist", "1\n");
        w(&sys, "kernel/mm/numa/demotion_enabled", "true\n");
        w(&proc_, "sys/kernel/numa_balancing", "2\n");
        w(&sys, "devices/system/node/has_cpu", "0\n");
        w(&sys, "devices/system/node/node1/access0/initiators/read_bandwidth", "10000\n");
        w(&sys, "devices/system/node/node1/access0/initiators/read_latency", "300\n");
        fs::create_dir_all(sys.join("devices/system/node/node1/access0/initiators/node0")).unwrap();
        w(&sys, "module/damon_reclaim/parameters/enabled", "Y\n");
        w(&sys, "module/damon_lru_sort/parameters/enabled", "N\n");
        w(&sys, "kernel/sched_ext/state", "enabled\n");
        w(&sys, "kernel/sched_ext/root/ops", "scx_lavd\n");
        let f = placement_features(&sys, &proc_, &topo());
        let by = |id: &str| f.iter().find(|x| x.id == id).unwrap().clone();
        let wi = by("weighted-interleave");
        assert_eq!(
            (wi.state.as_str(), wi.value["weights"]["1"].as_u64(), wi.value["auto"].as_bool()),
            ("supported", Some(2), Some(true))
        );
        assert!(wi.meaning.contains("N0=5 N1=2") && wi.meaning.contains("mode auto"), "{}", wi.meaning);
        let t = by("memory-tiers");
        assert_eq!((t.state.as_str(), t.value["22"].as_str()), ("2 tiers", Some("1")));
        // Ranked as the trace's machine and `numascope topology` rank them (0 = fastest).
        assert!(
            t.meaning.contains("memory_tier4 (rank 0, fastest): nodes 0; memory_tier22 (rank 1): nodes 1"),
            "{}",
            t.meaning
        );
        assert_eq!(by("demotion").state, "on");
        let nb = by("numa-balancing");
        assert_eq!((nb.state.as_str(), nb.value.as_u64()), ("tiering", Some(2)));
        assert!(nb.meaning.contains("promoted"));
        let c = by("cpu-less-nodes");
        assert_eq!((c.state.as_str(), c.value.clone()), ("1", json!([1])));
        let h = by("hmat");
        assert_eq!(h.value["1"]["readBandwidthMBps"], json!(10000));
        assert_eq!(h.value["1"]["initiators"], json!([0]));
        assert!(h.meaning.contains("N1: read 10000 MB/s 300 ns from node [0]"), "{}", h.meaning);
        assert_eq!(by("damon-modules").state, "damon_reclaim");
        let s = by("sched-ext");
        assert_eq!((s.state.as_str(), s.value["ops"].as_str()), ("enabled", Some("scx_lavd")));
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_bare_machine_says_what_is_absent() {
        let root = std::env::temp_dir().join(format!("numascope-probe-bare-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let mut t = topo();
        t.nodes[1].cpus = vec![2];
        let f = placement_features(&root, &root, &t);
        let ids: Vec<&str> = f.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "weighted-interleave",
                "memory-tiers",
                "demotion",
                "numa-balancing",
                "cpu-less-nodes",
                "hmat",
                "damon-modules",
                "sched-ext"
            ]
        );
        assert!(f[0].meaning.contains("Linux 6.9") && f[0].state == "absent");
        assert!(f.iter().filter(|x| x.id != "cpu-less-nodes" && x.id != "damon-modules").all(|x| x.state == "absent"));
        assert_eq!(f[4].state, "0");
        let _ = fs::remove_dir_all(&root);
    }
}
