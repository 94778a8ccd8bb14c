//! Planning: which events to count on which cpus, read from sysfs and `/proc/cpuinfo` (nothing
//! is opened), and a verdict per PMU family saying what was found or why it is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use super::amd::{amd_zen, DF_DRAM_CHANNELS, DF_XGMI_OUT, UMC_READ, UMC_WRITE};
use super::cpu::{read_cpu_id, CpuId};
use super::intel::intel_upi_model;
use super::spec::{Scope, TableEvent, UncoreSpec};
use super::sysfs::{pmus_named, read_pmu, unit_bytes, Sockets};
use crate::sources::pmu::encode_event;
use crate::topology::Roots;

/// What the planner made of one PMU family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No such PMU.
    Absent,
    /// Events planned.
    Planned,
    /// PMUs present but not counted (unknown model, no events); the line says why.
    NotCounted,
    /// The sysfs files could not be read or used; the line says which.
    Failed,
}

/// One PMU family's verdict, as the probe and the source reason show it.
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyVerdict {
    /// `uncore_imc`, `uncore_upi`, `uncore_qpi`, `amd_umc`, `amd_df`, `arm_cmn`.
    pub family: &'static str,
    pub pmus: Vec<String>,
    pub outcome: Outcome,
    pub line: String,
}

/// The planner's result: the events to count and a verdict per PMU family.
#[derive(Clone, Debug, Default)]
pub struct UncorePlan {
    pub cpu: Option<CpuId>,
    pub specs: Vec<UncoreSpec>,
    pub families: Vec<FamilyVerdict>,
    /// Sockets counted with scope `socket`, with the nodes each holds.
    pub split_sockets: BTreeMap<i32, BTreeSet<i32>>,
}

impl UncorePlan {
    /// Some uncore PMU of a known family is present.
    pub fn any_pmu(&self) -> bool {
        self.families.iter().any(|f| f.outcome != Outcome::Absent)
    }

    /// Some planned event writes a counter starting with `prefix` (`mc-`, `link-`).
    pub fn counts(&self, prefix: &str) -> bool {
        self.specs.iter().any(|s| s.counter.starts_with(prefix))
    }

    /// The verdict lines, `; `-separated, then which nodes each socket-scope socket holds.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self.families.iter().map(|f| f.line.clone()).collect();
        if let Some(s) = split_sockets_note(&self.split_sockets) {
            parts.push(s);
        }
        parts.join("; ")
    }

    /// The lines of families whose sysfs files could not be used.
    pub fn failure(&self) -> Option<String> {
        let v: Vec<&str> =
            self.families.iter().filter(|f| f.outcome == Outcome::Failed).map(|f| f.line.as_str()).collect();
        (!v.is_empty()).then(|| v.join("; "))
    }

    /// The verdict lines of the named families (`uncore_upi`, `amd_df`, …), `; `-separated.
    pub fn lines_for(&self, families: &[&str]) -> String {
        self.families
            .iter()
            .filter(|f| families.contains(&f.family))
            .map(|f| f.line.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn split_sockets_note(split: &BTreeMap<i32, BTreeSet<i32>>) -> Option<String> {
    if split.is_empty() {
        return None;
    }
    let each: Vec<String> = split
        .iter()
        .map(|(s, nodes)| {
            format!("socket {s} holds nodes {}", nodes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", "))
        })
        .collect();
    Some(format!(
        "{} (SNC/NPS: the kernel does not say which channel or link serves which node, so these are counted per socket, scope socket)",
        each.join(", ")
    ))
}

struct Planner<'a> {
    devices: std::path::PathBuf,
    sockets: Sockets,
    node_of: &'a dyn Fn(u32) -> i32,
    plan: UncorePlan,
}

impl Planner<'_> {
    /// Specs of `events` on every cpu of every PMU in `pmus`; errors name the PMU and file.
    fn table_specs(&mut self, pmus: &[String], events: &[TableEvent]) -> Result<Vec<UncoreSpec>, String> {
        let mut out = Vec::new();
        for name in pmus {
            let p = read_pmu(&self.devices, name)?;
            for ev in events {
                let config =
                    encode_event(&p.formats, ev.terms, &[]).map_err(|e| format!("{name}: {}: {e}", ev.name))?;
                for &cpu in &p.cpus {
                    out.push(UncoreSpec {
                        pmu: p.name.clone(),
                        ty: p.ty,
                        config,
                        cpu,
                        scope: self.sockets.scope(cpu, self.node_of, &mut self.plan.split_sockets)?,
                        counter: ev.counter,
                        bytes_per_count: ev.bytes_per_count,
                        event: ev.name,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Intel memory channels from the sysfs events `cas_count_read` / `cas_count_write`.
    fn imc_specs(&mut self, pmus: &[String]) -> Result<Vec<UncoreSpec>, String> {
        let mut out = Vec::new();
        for name in pmus {
            let d = self.devices.join(name);
            let read = |f: &str| {
                fs::read_to_string(d.join(f)).map(|s| s.trim().to_string()).map_err(|e| format!("{name}/{f}: {e}"))
            };
            let has_events = ["cas_count_read", "cas_count_write"].iter().any(|e| d.join("events").join(e).exists());
            if !has_events {
                continue;
            }
            let p = read_pmu(&self.devices, name)?;
            for (event, counter) in [("cas_count_read", "mc-read-bytes"), ("cas_count_write", "mc-write-bytes")] {
                let Ok(text) = read(&format!("events/{event}")) else { continue };
                let scale: f64 = match read(&format!("events/{event}.scale")) {
                    Ok(s) => s.parse().map_err(|_| format!("{name}/events/{event}.scale is not a number: {s:?}"))?,
                    Err(_) => 1.0,
                };
                let unit = read(&format!("events/{event}.unit")).unwrap_or_default();
                let per = unit_bytes(&unit)
                    .ok_or_else(|| format!("{name}/events/{event}.unit {unit:?} is not a byte unit"))?;
                let config = encode_event(&p.formats, &text, &[]).map_err(|e| format!("{name}/events/{event}: {e}"))?;
                for &cpu in &p.cpus {
                    out.push(UncoreSpec {
                        pmu: p.name.clone(),
                        ty: p.ty,
                        config,
                        cpu,
                        scope: self.sockets.scope(cpu, self.node_of, &mut self.plan.split_sockets)?,
                        counter,
                        bytes_per_count: scale * per,
                        event,
                    });
                }
            }
        }
        Ok(out)
    }

    fn push(&mut self, family: &'static str, pmus: &[String], outcome: Outcome, line: String) {
        self.plan.families.push(FamilyVerdict { family, pmus: pmus.to_vec(), outcome, line });
    }

    /// Adds `specs` as the family's plan (or its error as a failed verdict).
    fn take(&mut self, family: &'static str, pmus: &[String], r: Result<Vec<UncoreSpec>, String>, what: String) {
        match r {
            Ok(specs) if specs.is_empty() => self.push(family, pmus, Outcome::NotCounted, what),
            Ok(specs) => {
                let line = format!("{what}, {}", scope_words(&specs));
                self.plan.specs.extend(specs);
                self.push(family, pmus, Outcome::Planned, line);
            }
            Err(e) => self.push(family, pmus, Outcome::Failed, format!("{family}: {e}")),
        }
    }
}

fn scope_words(specs: &[UncoreSpec]) -> &'static str {
    let node = specs.iter().any(|s| matches!(s.scope, Scope::Node(_)));
    let socket = specs.iter().any(|s| matches!(s.scope, Scope::Socket(_)));
    match (node, socket) {
        (true, false) => "per node",
        (false, true) => "per socket",
        _ => "per node or socket",
    }
}

fn counters_of(events: &[TableEvent]) -> String {
    let mut v: Vec<&str> = events.iter().map(|e| e.counter).collect();
    v.dedup();
    v.join(", ")
}

/// Plans the uncore events of the machine under `roots` (`/sys`, `/proc`). `node_of_cpu` maps a
/// cpu to its NUMA node (-1: none). Reads files only; opens nothing.
pub fn plan_uncore(roots: &Roots, node_of_cpu: &dyn Fn(u32) -> i32) -> UncorePlan {
    let devices = roots.sys.join("bus/event_source/devices");
    let all: Vec<String> = fs::read_dir(&devices)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let cpu = read_cpu_id(&roots.proc);
    let mut p = Planner {
        devices,
        sockets: Sockets::read(&roots.sys),
        node_of: node_of_cpu,
        plan: UncorePlan { cpu: cpu.clone(), ..Default::default() },
    };
    let vendor = cpu.as_ref().map(|c| c.vendor.as_str()).unwrap_or("");
    let (intel, amd) = match vendor {
        "GenuineIntel" => (true, false),
        "AuthenticAMD" => (false, true),
        _ => (true, true),
    };
    let cpu_words =
        cpu.as_ref().map(|c| c.describe()).unwrap_or_else(|| "the CPU model is unknown (no /proc/cpuinfo)".into());
    plan_intel(&mut p, &all, cpu.as_ref(), &cpu_words, intel);
    plan_amd(&mut p, &all, cpu.as_ref(), &cpu_words, amd);
    let cmn = pmus_named(&all, "arm_cmn");
    if !cmn.is_empty() {
        p.push("arm_cmn", &cmn, Outcome::NotCounted, "arm_cmn present: no encoding here: not counted".into());
    }
    p.plan
}

/// The Intel families: memory controllers (`uncore_imc`), UPI links (`uncore_upi`), and QPI
/// (`uncore_qpi`, never counted). `intel`: an Intel CPU, or an unknown one (absent PMUs get a
/// verdict).
fn plan_intel(p: &mut Planner, all: &[String], cpu: Option<&CpuId>, cpu_words: &str, intel: bool) {
    // Intel memory controllers: sysfs names the events.
    let imc = pmus_named(all, "uncore_imc");
    if !imc.is_empty() {
        // Free-running and client IMC PMUs have other events: only channels with CAS events count.
        let cas: Vec<String> = imc
            .iter()
            .filter(|n| {
                let ev = p.devices.join(n).join("events");
                ev.join("cas_count_read").exists() || ev.join("cas_count_write").exists()
            })
            .cloned()
            .collect();
        let r = p.imc_specs(&cas);
        let what = if cas.is_empty() {
            format!(
                "uncore_imc present ({} PMUs) but without cas_count_read/cas_count_write events in sysfs: not counted",
                imc.len()
            )
        } else {
            format!(
                "uncore_imc: {} PMUs, sysfs events cas_count_read/cas_count_write × .scale × .unit → mc-read-bytes, mc-write-bytes",
                cas.len()
            )
        };
        p.take("uncore_imc", &imc, r, what);
    } else if intel {
        p.push("uncore_imc", &[], Outcome::Absent, "no uncore_imc PMU".into());
    }

    // Intel UPI links.
    let upi = pmus_named(all, "uncore_upi");
    if !upi.is_empty() {
        match cpu.and_then(intel_upi_model) {
            Some(m) => {
                let r = p.table_specs(&upi, m.events);
                let what = format!(
                    "uncore_upi: {} links, {} ({}), {} from perf's {} JSON, 64/9 bytes per flit → {} summed over the socket's links",
                    upi.len(),
                    m.label,
                    cpu_words,
                    m.events.iter().map(|e| e.name).collect::<Vec<_>>().join(" and "),
                    m.perf_dir,
                    counters_of(m.events),
                );
                p.take("uncore_upi", &upi, r, what);
            }
            None => {
                let line = if cpu.is_some() {
                    format!("uncore_upi present but {cpu_words} has no known encoding: not counted")
                } else {
                    format!("uncore_upi present but {cpu_words}: not counted")
                };
                p.push("uncore_upi", &upi, Outcome::NotCounted, line);
            }
        }
    } else if intel {
        p.push("uncore_upi", &[], Outcome::Absent, "no uncore_upi PMU".into());
    }
    let qpi = pmus_named(all, "uncore_qpi");
    if !qpi.is_empty() {
        p.push(
            "uncore_qpi",
            &qpi,
            Outcome::NotCounted,
            "uncore_qpi present (QPI, before Skylake-SP): no encoding here: not counted".into(),
        );
    }
}

/// The AMD families: memory controllers (`amd_umc`, Zen 4 / Zen 5) and the data fabric
/// (`amd_df`, Zen 2 / Zen 3). `amd`: an AMD CPU, or an unknown one.
fn plan_amd(p: &mut Planner, all: &[String], cpu: Option<&CpuId>, cpu_words: &str, amd: bool) {
    // AMD memory controllers (Zen 4 / Zen 5).
    let zen = cpu.and_then(amd_zen);
    let umc = pmus_named(all, "amd_umc");
    let mut umc_planned = false;
    if !umc.is_empty() {
        match zen {
            Some((label, dir, 4 | 5)) => {
                let events = [UMC_READ, UMC_WRITE];
                let r = p.table_specs(&umc, &events);
                umc_planned = matches!(&r, Ok(s) if !s.is_empty());
                let what = format!(
                    "amd_umc: {} channels, {label} ({cpu_words}), umc_cas_cmd.rd/umc_cas_cmd.wr from perf's {dir} JSON, 64 bytes per CAS → mc-read-bytes, mc-write-bytes",
                    umc.len()
                );
                p.take("amd_umc", &umc, r, what);
            }
            _ => {
                let line = if cpu.is_some() {
                    format!("amd_umc present but {cpu_words} has no known encoding: not counted")
                } else {
                    format!("amd_umc present but {cpu_words}: not counted")
                };
                p.push("amd_umc", &umc, Outcome::NotCounted, line);
            }
        }
    } else if amd {
        p.push("amd_umc", &[], Outcome::Absent, "no amd_umc PMU".into());
    }

    // AMD data fabric (Zen 2 / Zen 3).
    let df: Vec<String> = all.iter().filter(|n| *n == "amd_df").cloned().collect();
    if !df.is_empty() {
        match zen {
            Some((label, dir, 2 | 3)) => {
                let events: Vec<TableEvent> = DF_DRAM_CHANNELS.iter().chain(DF_XGMI_OUT.iter()).copied().collect();
                let r = p.table_specs(&df, &events);
                let what = format!(
                    "amd_df: {label} ({cpu_words}), dram_channel_data_controller_0..7 (64 bytes each) and remote_outbound_data_controller_0..3 (xGMI, 32 bytes each) from perf's {dir} JSON → mc-bytes (reads and writes together), link-tx-bytes; {} events share the data fabric's counters (multiplexed, scaled)",
                    events.len()
                );
                p.take("amd_df", &df, r, what);
            }
            Some((label, _, 4 | 5)) if umc_planned => p.push(
                "amd_df",
                &df,
                Outcome::NotCounted,
                format!("amd_df present: not used ({label} memory traffic comes from amd_umc; its data-fabric link events are not encoded here)"),
            ),
            Some((label, _, 4 | 5)) => p.push(
                "amd_df",
                &df,
                Outcome::NotCounted,
                format!("amd_df present but {cpu_words} ({label}) has no data-fabric encoding here and no usable amd_umc PMU: not counted"),
            ),
            _ if cpu.is_some() => p.push(
                "amd_df",
                &df,
                Outcome::NotCounted,
                format!("amd_df present but {cpu_words} has no known encoding: not counted"),
            ),
            _ => p.push("amd_df", &df, Outcome::NotCounted, format!("amd_df present but {cpu_words}: not counted")),
        }
    } else if amd {
        p.push("amd_df", &[], Outcome::Absent, "no amd_df PMU".into());
    }
}
