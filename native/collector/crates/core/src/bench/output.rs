//! The benchmark's results: statistics over repetitions, the calibration object (raw points),
//! the machine model in the engine's loader format, the machine fingerprint and the cache.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::topology::Topology;

/// A measured number over repetitions: the median, and the spread (min, max).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Stat {
    pub value: f64,
    pub min: f64,
    pub max: f64,
    pub repetitions: usize,
}

impl Stat {
    /// None when there is no finite sample.
    pub fn of(samples: &[f64]) -> Option<Stat> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let mid = v.len() / 2;
        let median = if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 };
        Some(Stat { value: median, min: v[0], max: v[v.len() - 1], repetitions: v.len() })
    }
}

/// One loaded-latency point.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoadedPoint {
    pub load_threads: usize,
    #[serde(rename = "deliveredGBps")]
    pub delivered_gbps: f64,
    pub latency_ns: f64,
}

/// The loaded-latency curve of one memory node.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoadedCurve {
    pub memory_node: u32,
    /// The cpu the chase ran on.
    pub chase_cpu: u32,
    pub points: Vec<LoadedPoint>,
}

/// Raw points of a run. Matrices are indexed [cpu node index][memory node index] over the
/// machine's nodes in order; rows of cpu-less nodes and unmeasured cells are null.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    pub tool: String,
    pub version: String,
    /// ISO 8601 UTC.
    pub date: String,
    pub fingerprint: String,
    pub quick: bool,
    /// True when the run stopped before its last step (Ctrl-C, --max-seconds, a step budget).
    pub partial: bool,
    pub stopped_by: Option<String>,
    pub steps_done: usize,
    pub steps_planned: usize,
    pub node_ids: Vec<u32>,
    pub array_bytes: u64,
    pub chase_bytes: u64,
    pub huge_pages: String,
    pub virtual_machine: Option<String>,
    #[serde(rename = "bandwidthGBps")]
    pub bandwidth_gbps: KernelMatrices,
    pub latency_ns: Vec<Vec<Option<Stat>>>,
    /// Per pair, the smallest share of the STREAM arrays' sampled pages that `move_pages` found on
    /// the memory node asked for (copy and triad): 1.0 when every sampled page was there; a share
    /// below 0.99 also gets a note. Null for unmeasured pairs.
    #[serde(default)]
    pub bound_share: Vec<Vec<Option<f64>>>,
    /// Triad GB/s of each node on its own memory while all nodes run at once.
    #[serde(rename = "allLocalGBps")]
    pub all_local_gbps: Vec<Option<Stat>>,
    /// Total triad GB/s delivered from each memory node while every cpu node runs on it.
    #[serde(rename = "allToOneGBps")]
    pub all_to_one_gbps: Vec<Option<Stat>>,
    /// Sustained capacity per memory node: the most triad GB/s delivered from it in any step.
    #[serde(rename = "sustainedGBps")]
    pub sustained_gbps: Vec<Option<f64>>,
    pub loaded_latency: Vec<LoadedCurve>,
    pub notes: Vec<String>,
}

/// Largest ratio between a pair's copy and triad GB/s that [`Calibration::kernel_spread_notes`]
/// lets pass without a note.
pub const KERNEL_SPREAD_LIMIT: f64 = 1.5;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct KernelMatrices {
    pub copy: Vec<Vec<Option<Stat>>>,
    pub triad: Vec<Vec<Option<Stat>>>,
}

impl Calibration {
    /// Fills `sustained_gbps` from the measured cells.
    pub fn derive_sustained(&mut self) {
        let n = self.node_ids.len();
        self.sustained_gbps = (0..n)
            .map(|m| {
                let pairs = self.bandwidth_gbps.triad.iter().filter_map(|row| row.get(m).cloned().flatten());
                let all =
                    [self.all_local_gbps.get(m), self.all_to_one_gbps.get(m)].into_iter().flatten().flatten().cloned();
                pairs.chain(all).map(|s| s.value).fold(None, |best: Option<f64>, v| Some(best.map_or(v, |b| b.max(v))))
            })
            .collect();
    }

    /// A note per node pair whose copy and triad bandwidths differ by more than
    /// [`KERNEL_SPREAD_LIMIT`]: the two STREAM kernels stream the same memory (triad one array
    /// more), and on a quiet machine they agree within about a third; a wider gap means the run
    /// was disturbed (a busy or shared machine, a run too short for its repetitions), and the
    /// figures should not be trusted as the machine's.
    pub fn kernel_spread_notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let copy = &self.bandwidth_gbps.copy;
        for (c, row) in self.bandwidth_gbps.triad.iter().enumerate() {
            for (m, t) in row.iter().enumerate() {
                let (Some(t), Some(Some(k))) = (t, copy.get(c).and_then(|r| r.get(m))) else { continue };
                let (lo, hi) = (t.value.min(k.value), t.value.max(k.value));
                if lo > 0.0 && hi / lo > KERNEL_SPREAD_LIMIT {
                    let (cn, mn) = (
                        self.node_ids.get(c).copied().unwrap_or(c as u32),
                        self.node_ids.get(m).copied().unwrap_or(m as u32),
                    );
                    out.push(format!(
                        "cpu node {cn} on memory node {mn}: triad {:.1} GB/s against copy {:.1} GB/s (×{:.1} apart; on a quiet machine the two agree within ×{KERNEL_SPREAD_LIMIT}): the run was disturbed (a busy or shared machine, or too short): run numascope bench again, without --quick, before trusting these figures",
                        t.value,
                        k.value,
                        hi / lo
                    ));
                }
            }
        }
        out
    }

    fn provenance(&self, what: &str) -> String {
        let vm = if self.virtual_machine.is_some() {
            "; a virtual machine: the numbers are the host's, not the guest's NUMA"
        } else {
            ""
        };
        let partial = if self.partial { "; partial run" } else { "" };
        format!(
            "measured:numascope-bench {} {} {what}; spread over repetitions in calibration{vm}{partial}",
            self.version, self.date
        )
    }
}

/// The machine model (a TraceMachine, docs/trace-format.md "machine") with the calibration inside.
pub fn machine_json(topo: &Topology, cal: &Calibration) -> Value {
    let mut machine = serde_json::to_value(topo.machine()).unwrap_or(Value::Null);
    let n = topo.nodes.len();
    let cpu_rows: Vec<usize> = super::plan::cpu_nodes(topo);
    // Idle latency: measured rows; a cpu-less node's row copies the nearest cpu node's row (no thread runs there).
    let nearest_cpu_row = |i: usize| -> Option<usize> {
        cpu_rows
            .iter()
            .copied()
            .min_by_key(|&c| topo.distances.get(i).and_then(|r| r.get(c)).copied().unwrap_or(u32::MAX))
    };
    let lat: Option<Vec<Vec<f64>>> = (0..n)
        .map(|i| {
            let row = if topo.nodes[i].cpus.is_empty() { nearest_cpu_row(i)? } else { i };
            (0..n).map(|m| cal.latency_ns.get(row)?.get(m)?.as_ref().map(|s| s.value)).collect()
        })
        .collect();
    let links: Vec<Value> = if n > 1 {
        let mut out = Vec::new();
        for c in 0..n {
            for m in 0..n {
                if c != m && !topo.nodes[c].cpus.is_empty() {
                    let cap =
                        cal.bandwidth_gbps.triad.get(c).and_then(|r| r.get(m)).cloned().flatten().map(|s| s.value);
                    out.push(json!({ "from": topo.nodes[m].id, "to": topo.nodes[c].id, "capacityGBps": cap }));
                }
            }
        }
        out
    } else {
        Vec::new()
    };
    let obj = machine.as_object_mut().expect("machine serialises to an object");
    obj.insert("source".into(), json!(format!("numascope-bench:{}", cal.fingerprint)));
    if let Some(nodes) = obj.get_mut("nodes").and_then(Value::as_array_mut) {
        for (i, node) in nodes.iter_mut().enumerate() {
            node["memoryBandwidthGBps"] = json!(cal.sustained_gbps.get(i).cloned().flatten());
        }
    }
    obj.insert("latenciesNs".into(), json!(lat));
    obj.insert("links".into(), json!(links));
    let prov = obj.entry("provenance").or_insert_with(|| json!({}));
    prov["memoryBandwidthGBps"] = json!(cal.provenance("sustained memory bandwidth per node: the most STREAM triad GB/s delivered from the node's memory in any step (one pair, all nodes local, all nodes on it)"));
    prov["latenciesNs"] = json!(if lat.is_some() {
        cal.provenance("idle latency per (cpu node, memory node): median ns per load of a dependent pointer chase; rows of cpu-less nodes copy the nearest cpu node's row")
    } else {
        "unavailable:numascope-bench measured only part of the latency matrix (see calibration.latencyNs)".to_string()
    });
    prov["links"] = json!(cal.provenance("one direct link per ordered pair of a cpu node and another node, capacity = STREAM triad GB/s of the cpu node on that memory (a lower bound: the link may not have been the bottleneck)"));
    obj.insert("calibration".into(), serde_json::to_value(cal).unwrap_or(Value::Null));
    machine
}

/// A stable key for "this machine": cpu model, node count, memory per node (GiB, rounded
/// to the nearest GiB so that a few MiB reserved differently at boot do not change it) and kernel.
pub fn fingerprint(topo: &Topology) -> String {
    let mems: Vec<String> =
        // Rounded to the nearest GiB: MemTotal moves by a few MiB from boot to boot (reserved
        // memory), and nominal sizes sit on power-of-two boundaries that rounding down would split.
        topo.nodes.iter().map(|n| n.memory_bytes.map_or("?".into(), |b| ((b + (1 << 29)) >> 30).to_string())).collect();
    let key = format!(
        "cpu={}|nodes={}|mem_gib={}|kernel={}",
        topo.cpu_model.as_deref().unwrap_or("?"),
        topo.nodes.len(),
        mems.join(","),
        topo.kernel.as_deref().unwrap_or("?")
    );
    // FNV-1a 64: short, stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `$XDG_CACHE_HOME/numascope` or `~/.cache/numascope` (None without either variable).
pub fn cache_dir_from(xdg: Option<String>, home: Option<String>) -> Option<PathBuf> {
    match (xdg.filter(|x| !x.is_empty()), home.filter(|h| !h.is_empty())) {
        (Some(x), _) => Some(Path::new(&x).join("numascope")),
        (None, Some(h)) => Some(Path::new(&h).join(".cache").join("numascope")),
        _ => None,
    }
}

pub fn cache_dir() -> Option<PathBuf> {
    cache_dir_from(std::env::var("XDG_CACHE_HOME").ok(), std::env::var("HOME").ok())
}

/// Where the latest calibration of machine `fingerprint` is kept.
pub fn calibration_path(dir: &Path, fingerprint: &str) -> PathBuf {
    dir.join("machines").join(format!("{fingerprint}.json"))
}

/// Writes `machine` (machine_json's value) as the latest calibration; returns its path.
pub fn store(dir: &Path, fingerprint: &str, machine: &Value) -> std::io::Result<PathBuf> {
    let path = calibration_path(dir, fingerprint);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(machine).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

/// The latest stored calibration of this machine, if any (a file that does not parse is ignored).
pub fn latest(dir: &Path, topo: &Topology) -> Option<(PathBuf, Value)> {
    let path = calibration_path(dir, &fingerprint(topo));
    let text = std::fs::read_to_string(&path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("calibration")?;
    Some((path, v))
}

/// Where a topology's latencies and bandwidth stand with respect to `numascope bench`: sysfs
/// gives neither, so the provenance says whether a calibration of this machine is stored (the
/// one `record` embeds beside the machine and the engine replays on) or none is, the same words
/// for `topology`, `serve`'s topology and a recording's machine. Returns the stored calibration.
/// A provenance some other source filled (a measured figure) is kept as it is.
pub fn describe_calibration(topo: &mut Topology, dir: Option<&Path>) -> Option<(PathBuf, Value)> {
    let stored = dir.and_then(|d| latest(d, topo));
    let what = match &stored {
        Some((path, m)) => format!(
            "not in sysfs; this machine's numascope bench calibration of {} has them ({}): `numascope record` embeds it beside the machine and the engine uses it",
            m["calibration"]["date"].as_str().unwrap_or("date unknown"),
            path.display()
        ),
        None => "not in sysfs, and no numascope bench calibration of this machine is stored (run `numascope bench`)".to_string(),
    };
    let p = &mut topo.provenance;
    if p.latencies_ns.starts_with("unavailable:") {
        p.latencies_ns = format!("unavailable:{what}");
    }
    if p.memory_bandwidth_gbps.starts_with("unavailable:") {
        p.memory_bandwidth_gbps = format!("unavailable:no uncore counters; {what}");
    }
    stored
}
