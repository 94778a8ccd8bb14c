//! Memory-controller traffic from uncore PMUs: Intel's `uncore_imc_*` (one PMU per memory
//! channel) `cas_count_read` / `cas_count_write`, counted system-wide on one cpu of the socket
//! each PMU belongs to (its `cpumask`), summed per NUMA node and written as cumulative bytes:
//! counters `mc-read-bytes` / `mc-write-bytes`, scope `node`, scope_id = the node id.
//!
//! Planned from sysfs as perf does: `type`, `cpumask`, `format/*` and `events/<name>` with its
//! `.scale` (e.g. 6.103515625e-5) and `.unit` (`MiB`): bytes = count × scale × unit. System-wide
//! uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid ≤ 0. Tested on sysfs
//! trees with the documented files (our machines have no uncore PMU); there the planner finds
//! nothing and the probe says why.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::Counter;
use perf_event_open::event::dp::DynamicPmu;

use super::pmu::{encode_event, read_formats};

/// One memory-channel event to count.
#[derive(Clone, Debug, PartialEq)]
pub struct UncoreSpec {
    pub pmu: String,
    pub ty: u32,
    pub config: [u64; 3],
    /// The cpu it is counted on (first of the PMU's cpumask).
    pub cpu: u32,
    /// NUMA node id of that cpu.
    pub node: i32,
    /// `mc-read-bytes` or `mc-write-bytes`.
    pub counter: &'static str,
    /// Bytes per count (`.scale` × `.unit`).
    pub bytes_per_count: f64,
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

/// Plans the memory-controller events of `sys` (= `/sys`). `node_of_cpu` maps a cpu to its node.
pub fn plan_uncore(sys: &Path, node_of_cpu: &dyn Fn(u32) -> i32) -> Result<Vec<UncoreSpec>, String> {
    let devices = sys.join("bus/event_source/devices");
    let Ok(dir) = fs::read_dir(&devices) else { return Ok(Vec::new()) };
    let mut pmus: Vec<String> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("uncore_imc"))
        .collect();
    pmus.sort();
    let mut out = Vec::new();
    for name in pmus {
        let d = devices.join(&name);
        let read = |f: &str| {
            fs::read_to_string(d.join(f)).map(|s| s.trim().to_string()).map_err(|e| format!("{name}/{f}: {e}"))
        };
        let ty: u32 = read("type")?.parse().map_err(|_| format!("{name}/type is not a number"))?;
        let mask = read("cpumask")?;
        let cpu = crate::topology::parse_cpulist(&mask)?
            .first()
            .copied()
            .ok_or_else(|| format!("{name}/cpumask is empty"))?;
        let formats = read_formats(&d)?;
        for (event, counter) in [("cas_count_read", "mc-read-bytes"), ("cas_count_write", "mc-write-bytes")] {
            let Ok(text) = read(&format!("events/{event}")) else { continue };
            let scale: f64 = match read(&format!("events/{event}.scale")) {
                Ok(s) => s.parse().map_err(|_| format!("{name}/events/{event}.scale is not a number: {s:?}"))?,
                Err(_) => 1.0,
            };
            let unit = read(&format!("events/{event}.unit")).unwrap_or_default();
            let per =
                unit_bytes(&unit).ok_or_else(|| format!("{name}/events/{event}.unit {unit:?} is not a byte unit"))?;
            out.push(UncoreSpec {
                pmu: name.clone(),
                ty,
                config: encode_event(&formats, &text, &[]).map_err(|e| format!("{name}/events/{event}: {e}"))?,
                cpu,
                node: node_of_cpu(cpu),
                counter,
                bytes_per_count: scale * per,
            });
        }
    }
    Ok(out)
}

/// The opened memory-controller events and the per-node rows read from them.
pub struct UncoreCounters {
    specs: Vec<UncoreSpec>,
    counters: Vec<Counter>,
    /// (time_us, counter, node, cumulative bytes)
    rows: Vec<(u32, &'static str, i32, f64)>,
}

impl UncoreCounters {
    /// Opens every planned event (system-wide on its cpu); the first failure is the error.
    #[allow(clippy::field_reassign_with_default)]
    pub fn open(specs: Vec<UncoreSpec>) -> Result<Self, String> {
        let mut opts = Opts::default();
        opts.enable = true;
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
                format!("cannot open {}/{} on cpu {}: {e}{hint}", s.pmu, s.counter, s.cpu)
            })?;
            counters.push(c);
        }
        Ok(UncoreCounters { specs, counters, rows: Vec::new() })
    }

    pub fn pmus(&self) -> Vec<String> {
        let mut v: Vec<String> = self.specs.iter().map(|s| s.pmu.clone()).collect();
        v.dedup();
        v
    }

    /// Reads every event and adds one row per (counter, node): the sum over that node's channels.
    pub fn read(&mut self, time_us: u32) {
        let values: Vec<Option<u64>> = self.counters.iter().map(|c| c.stat().ok().map(|s| s.count)).collect();
        for (k, v) in sum_by_node(&self.specs, &values) {
            self.rows.push((time_us, k.0, k.1, v));
        }
    }

    /// Writes the rows into `counters` (scope `node`), keeping the table in time order.
    pub fn add_to_trace(&self, trace: &mut crate::trace::TraceData) -> usize {
        let c = &mut trace.counters;
        for &(t, name, node, v) in &self.rows {
            c.time_us.push(t);
            c.counter.push(name);
            c.scope.push("node");
            c.scope_id.push(node);
            c.value.push(v);
        }
        crate::sources::damon::sort_counters_by_time(c);
        self.rows.len()
    }
}

/// Bytes per (counter, node) from raw counts (None: that event could not be read).
pub fn sum_by_node(specs: &[UncoreSpec], counts: &[Option<u64>]) -> BTreeMap<(&'static str, i32), f64> {
    let mut out = BTreeMap::new();
    for (s, v) in specs.iter().zip(counts) {
        if let Some(v) = v {
            *out.entry((s.counter, s.node)).or_insert(0.0) += *v as f64 * s.bytes_per_count;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// Two sockets × two memory channels, with the files a Skylake-SP/Ice Lake kernel exposes.
    fn two_socket_sys(name: &str) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("numascope-uncore-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        for (i, (ty, mask)) in [(14, "0"), (15, "0"), (16, "28"), (17, "28")].iter().enumerate() {
            let d = format!("bus/event_source/devices/uncore_imc_{i}");
            put(&root, &format!("{d}/type"), &format!("{ty}\n"));
            put(&root, &format!("{d}/cpumask"), &format!("{mask}\n"));
            put(&root, &format!("{d}/format/event"), "config:0-7\n");
            put(&root, &format!("{d}/format/umask"), "config:8-15\n");
            put(&root, &format!("{d}/events/cas_count_read"), "event=0x04,umask=0x03\n");
            put(&root, &format!("{d}/events/cas_count_read.scale"), "6.103515625e-5\n");
            put(&root, &format!("{d}/events/cas_count_read.unit"), "MiB\n");
            put(&root, &format!("{d}/events/cas_count_write"), "event=0x04,umask=0x0c\n");
            put(&root, &format!("{d}/events/cas_count_write.scale"), "6.103515625e-5\n");
            put(&root, &format!("{d}/events/cas_count_write.unit"), "MiB\n");
        }
        put(&root, "bus/event_source/devices/cpu/type", "4\n");
        root
    }

    #[test]
    fn plans_imc_channels_per_socket_with_their_scale() {
        let root = two_socket_sys("plan");
        let specs = plan_uncore(&root, &|cpu| if cpu < 28 { 0 } else { 1 }).unwrap();
        assert_eq!(specs.len(), 8, "4 channels x read/write");
        let r0 = &specs[0];
        assert_eq!(
            (r0.pmu.as_str(), r0.ty, r0.config, r0.cpu, r0.node, r0.counter),
            ("uncore_imc_0", 14, [0x0304, 0, 0], 0, 0, "mc-read-bytes")
        );
        // 6.103515625e-5 MiB per count = 64 bytes (one cache line per CAS).
        assert!((r0.bytes_per_count - 64.0).abs() < 1e-9, "{}", r0.bytes_per_count);
        assert_eq!(specs[1].config, [0x0c04, 0, 0]);
        assert_eq!((specs[4].cpu, specs[4].node), (28, 1));
        // Per node: the channels are summed.
        let counts: Vec<Option<u64>> = vec![Some(10), Some(1), Some(20), Some(2), Some(100), None, Some(300), Some(3)];
        let by = sum_by_node(&specs, &counts);
        assert_eq!(by[&("mc-read-bytes", 0)], 30.0 * 64.0);
        assert_eq!(by[&("mc-write-bytes", 0)], 3.0 * 64.0);
        assert_eq!(by[&("mc-read-bytes", 1)], 400.0 * 64.0);
        assert_eq!(by[&("mc-write-bytes", 1)], 3.0 * 64.0, "an unreadable event adds nothing");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn bad_sysfs_files_are_named() {
        let root = two_socket_sys("bad");
        put(&root, "bus/event_source/devices/uncore_imc_1/events/cas_count_read.unit", "furlongs\n");
        let e = plan_uncore(&root, &|_| 0).unwrap_err();
        assert!(e.contains("uncore_imc_1/events/cas_count_read.unit \"furlongs\" is not a byte unit"), "{e}");
        let _ = fs::remove_dir_all(&root);
        // No uncore PMU (our machines): nothing to plan.
        let empty = std::env::temp_dir().join(format!("numascope-uncore-none-{}", std::process::id()));
        fs::create_dir_all(&empty).unwrap();
        assert!(plan_uncore(&empty, &|_| 0).unwrap().is_empty());
        let _ = fs::remove_dir_all(&empty);
    }

    #[test]
    fn an_unopenable_event_names_pmu_counter_and_cpu() {
        let root = two_socket_sys("open");
        let mut specs = plan_uncore(&root, &|_| 0).unwrap();
        specs.truncate(1);
        specs[0].ty = 0x7fff_0000; // no such PMU on this kernel
        let e = UncoreCounters::open(specs).err().expect("cannot open");
        assert!(e.starts_with("cannot open uncore_imc_0/mc-read-bytes on cpu 0:"), "{e}");
        let _ = fs::remove_dir_all(&root);
    }
}
