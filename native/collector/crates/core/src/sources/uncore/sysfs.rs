//! Discovery from sysfs: which socket each cpu is on, a PMU's directory (type, cpumask, format
//! files), byte units, and the PMUs of a family.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use super::spec::Scope;
use crate::sources::pmu::{read_formats, Formats};

/// cpu → socket from `devices/system/cpu/cpuN/topology/physical_package_id`.
pub(super) struct Sockets {
    package_of: BTreeMap<u32, i32>,
    node_dirs: usize,
}

impl Sockets {
    pub(super) fn read(sys: &Path) -> Sockets {
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
    pub(super) fn scope(
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
pub(super) struct PmuDir {
    pub(super) name: String,
    pub(super) ty: u32,
    pub(super) cpus: Vec<u32>,
    pub(super) formats: Formats,
}

pub(super) fn read_pmu(devices: &Path, name: &str) -> Result<PmuDir, String> {
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
pub(super) fn unit_bytes(unit: &str) -> Option<f64> {
    match unit.trim() {
        "" | "Bytes" | "B" | "bytes" => Some(1.0),
        "KiB" | "KB" => Some(1024.0),
        "MiB" | "MB" => Some(1048576.0),
        "GiB" | "GB" => Some(1073741824.0),
        _ => None,
    }
}

/// PMUs whose name starts with `prefix`, sorted by their numeric suffix.
pub(super) fn pmus_named(all: &[String], prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = all.iter().filter(|p| p.starts_with(prefix)).cloned().collect();
    v.sort_by_key(|p| {
        let digits: String =
            p.chars().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), p.clone())
    });
    v
}
