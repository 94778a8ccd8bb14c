//! The CPU model from `/proc/cpuinfo`, which picks the per-model event tables.

use std::fs;
use std::path::Path;

/// The CPU as `/proc/cpuinfo` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuId {
    pub vendor: String,
    pub family: u32,
    pub model: u32,
    pub stepping: Option<u32>,
}

impl CpuId {
    pub(super) fn describe(&self) -> String {
        format!("{} family {:#x} model {:#04x}", self.vendor, self.family, self.model)
    }
}

/// Vendor, family, model and stepping of the first processor in `/proc/cpuinfo` text.
pub fn parse_cpuinfo(text: &str) -> Option<CpuId> {
    let block = text.split("\n\n").next()?;
    let field = |name: &str| {
        block.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    Some(CpuId {
        vendor: field("vendor_id")?,
        family: field("cpu family")?.parse().ok()?,
        model: field("model")?.parse().ok()?,
        stepping: field("stepping").and_then(|s| s.parse().ok()),
    })
}

/// [`parse_cpuinfo`] of `<proc>/cpuinfo`.
pub fn read_cpu_id(proc_root: &Path) -> Option<CpuId> {
    parse_cpuinfo(&fs::read_to_string(proc_root.join("cpuinfo")).ok()?)
}
