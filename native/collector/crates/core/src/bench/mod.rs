//! `numascope bench`: measures the machine it runs on. STREAM copy and triad bandwidth for
//! every (cpu node, memory node) pair, all nodes at once, idle latency by a dependent pointer
//! chase, and a loaded-latency curve per memory node; the result is a machine model in the
//! engine's loader format with every number's provenance and the raw points (docs/bench.md).

pub mod chase;
pub mod job;
pub mod kernels;
pub mod mem;
pub mod output;
pub mod plan;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::topology::{Roots, Topology};
use kernels::{Group, Kernel};
use output::{Calibration, KernelMatrices, LoadedCurve, LoadedPoint, Stat};
use plan::{Sizes, Step};

/// What to run.
#[derive(Clone, Debug, Default)]
pub struct BenchOptions {
    pub quick: bool,
    /// Bytes of each STREAM array per cpu node (default: from the last-level cache size).
    pub array_bytes: Option<u64>,
    /// Bytes of the pointer-chase buffer (default: from the last-level cache size).
    pub chase_bytes: Option<u64>,
    /// Stop (partial result) once this many seconds have passed.
    pub max_seconds: Option<f64>,
    /// Stop (partial result) after this many steps.
    pub max_steps: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Memory(String),
    #[error("{0}")]
    Usage(String),
    #[error("benchmark step failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A progress line: step i of n, its description, seconds elapsed and estimated remaining.
pub struct Progress {
    pub step: usize,
    pub steps: usize,
    pub what: String,
    pub elapsed_s: f64,
    pub remaining_s: Option<f64>,
}

/// Last-level cache size of cpu 0 in bytes (`/sys/devices/system/cpu/cpu0/cache/index*/`).
pub fn llc_bytes(sys: &Path) -> Option<u64> {
    let dir = sys.join("devices/system/cpu/cpu0/cache");
    let mut best: Option<(u32, u64)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |f: &str| std::fs::read_to_string(e.path().join(f)).ok().map(|s| s.trim().to_string());
        let (Some(level), Some(size)) = (read("level"), read("size")) else { continue };
        if read("type").as_deref() == Some("Instruction") {
            continue;
        }
        let (Ok(level), Some(bytes)) = (level.parse::<u32>(), parse_cache_size(&size)) else { continue };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, bytes));
        }
    }
    best.map(|(_, b)| b)
}

/// `32768K`, `36M`, `512` → bytes.
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mul)
}

/// "QEMU"/"KVM"/… when this looks like a virtual machine: the DMI system vendor or product, or
/// the cpuid hypervisor bit (`hypervisor` in /proc/cpuinfo flags).
pub fn virtual_machine(roots: &Roots) -> Option<String> {
    const VENDORS: [&str; 9] =
        ["QEMU", "KVM", "VMware", "Xen", "Microsoft Corporation", "innotek", "Amazon EC2", "Google", "Bochs"];
    for f in ["class/dmi/id/sys_vendor", "class/dmi/id/product_name"] {
        if let Ok(v) = std::fs::read_to_string(roots.sys.join(f)) {
            if let Some(hit) = VENDORS.iter().find(|x| v.contains(*x)) {
                return Some(format!("{} ({})", hit, f.rsplit('/').next().unwrap_or(f)));
            }
        }
    }
    let cpuinfo = std::fs::read_to_string(roots.proc.join("cpuinfo")).unwrap_or_default();
    cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"))
        .then(|| "hypervisor (cpuid hypervisor bit)".to_string())
}

/// Bytes the largest step maps at once.
pub fn peak_bytes(topo: &Topology, s: &Sizes) -> u64 {
    let cpu_nodes = plan::cpu_nodes(topo).len().max(1) as u64;
    let max_cpus = topo.nodes.iter().map(|n| n.cpus.len() as u64).max().unwrap_or(1);
    let streams = 3 * s.array_bytes * cpu_nodes;
    let loaded = s.chase_bytes + max_cpus * s.array_bytes;
    streams.max(loaded).max(s.chase_bytes + 3 * s.array_bytes)
}

/// What the default sizes must fit ([`plan::fit_to_memory`]): half of MemAvailable (the limit
/// [`check_memory`] enforces), and half of each node's free memory (`MemFree` of its sysfs
/// meminfo): [`peak_bytes`] is also the most one step binds to a single node (every cpu node's
/// arrays on one memory node), and every node is a memory node of some step. Half, not all: the
/// kernel, page cache and the rest of the system keep running beside it.
fn memory_limits(ctx: &Context, available: Option<u64>) -> Vec<plan::Limit> {
    let mut out: Vec<plan::Limit> = available
        .map(|a| plan::Limit { bytes: a / 2, what: format!("half of the {} MiB available (MemAvailable)", a >> 20) })
        .into_iter()
        .collect();
    for n in &ctx.topo.nodes {
        if let Some(free) =
            crate::procfs::read_node_meminfo(&ctx.roots.sys, n.id).ok().and_then(|m| m.get("MemFree").copied())
        {
            out.push(plan::Limit {
                bytes: free / 2,
                what: format!("half of node {}'s {} MiB free memory, where arrays are bound", n.id, free >> 20),
            });
        }
    }
    out
}

/// Refuses a run that would map more than half of the available memory.
pub fn check_memory(peak: u64, available: Option<u64>) -> Result<(), BenchError> {
    let Some(avail) = available else { return Ok(()) };
    if peak > avail / 2 {
        return Err(BenchError::Memory(format!(
            "the benchmark would map {} MiB at once, more than half of the {} MiB available (MemAvailable); pass a smaller --size (bytes of each array) and --chase-size, or free memory",
            peak >> 20,
            avail >> 20
        )));
    }
    Ok(())
}

/// Everything a run needs that is not a measurement.
pub struct Context<'a> {
    pub topo: &'a Topology,
    pub roots: &'a Roots,
    pub opts: &'a BenchOptions,
    /// Set from outside (Ctrl-C) to stop after the current repetition.
    pub stop: &'a AtomicBool,
}

/// Runs the benchmark; an interrupted run returns what was measured, marked partial.
pub fn run(ctx: &Context, progress: &mut dyn FnMut(&Progress)) -> Result<Calibration, BenchError> {
    let topo = ctx.topo;
    if topo.nodes.is_empty() || plan::cpu_nodes(topo).is_empty() {
        return Err(BenchError::Usage("no NUMA node with cpus found in sysfs: nothing to run the benchmark on".into()));
    }
    let llc = llc_bytes(&ctx.roots.sys);
    let mut sizes = plan::sizes(ctx.opts.quick, llc, plan::cpu_nodes(topo).len());
    if let Some(b) = ctx.opts.array_bytes {
        sizes.array_bytes = b;
    }
    if let Some(b) = ctx.opts.chase_bytes {
        sizes.chase_bytes = b;
    }
    if sizes.array_bytes < 4096 || sizes.chase_bytes < 64 * 1024 {
        return Err(BenchError::Usage(
            "--size must be at least 4096 bytes and --chase-size at least 65536 bytes".into(),
        ));
    }
    let available = mem::mem_available(&ctx.roots.proc);
    let fitted = plan::fit_to_memory(
        &mut sizes,
        ctx.opts.array_bytes.is_none(),
        ctx.opts.chase_bytes.is_none(),
        &|s| peak_bytes(topo, s),
        &memory_limits(ctx, available),
    );
    check_memory(peak_bytes(topo, &sizes), available)?;
    let mut cal = empty_calibration(ctx, &sizes);
    if let Some(f) = &fitted {
        cal.notes.push(plan::fitted_note(f, &sizes, llc));
    }
    let loaders = |m: usize| load_cpus(topo, m).1.len();
    let steps = plan::steps(topo, &sizes, &loaders);
    cal.steps_planned = steps.len();
    let t0 = Instant::now();
    for (i, step) in steps.iter().enumerate() {
        if let Some(reason) = stop_reason(ctx, t0, i) {
            cal.partial = true;
            cal.stopped_by = Some(reason);
            break;
        }
        let elapsed_s = t0.elapsed().as_secs_f64();
        let remaining_s = (i > 0).then(|| elapsed_s / i as f64 * (steps.len() - i) as f64);
        progress(&Progress { step: i + 1, steps: steps.len(), what: step.describe(topo), elapsed_s, remaining_s });
        run_step(ctx, &sizes, step, &mut cal)?;
        cal.steps_done = i + 1;
    }
    if !cal.partial && ctx.stop.load(Ordering::SeqCst) {
        cal.partial = true;
        cal.stopped_by = Some("interrupted during the last step".into());
    }
    cal.derive_sustained();
    let spread = cal.kernel_spread_notes();
    cal.notes.extend(spread);
    Ok(cal)
}

fn stop_reason(ctx: &Context, t0: Instant, done: usize) -> Option<String> {
    if ctx.stop.load(Ordering::SeqCst) {
        return Some("interrupted (signal)".into());
    }
    if ctx.opts.max_steps.is_some_and(|m| done >= m) {
        return Some(format!("step budget of {} reached", done));
    }
    if let Some(max) = ctx.opts.max_seconds {
        if t0.elapsed().as_secs_f64() >= max {
            return Some(format!("--max-seconds {max} reached"));
        }
    }
    None
}

fn empty_calibration(ctx: &Context, sizes: &Sizes) -> Calibration {
    let n = ctx.topo.nodes.len();
    let matrix = || vec![vec![None; n]; n];
    let thp = mem::thp_available(&ctx.roots.sys);
    let vm = virtual_machine(ctx.roots);
    let mut notes = Vec::new();
    if let Some(v) = &vm {
        notes.push(format!("this is a virtual machine ({v}): bandwidth and latency are those of the host's memory as the guest sees it; an emulated NUMA topology's nodes do not differ in hardware, so the matrix does not show real NUMA effects"));
    }
    if n == 1 {
        notes.push(format!(
            "this machine has one NUMA node (node {}): the only pair is its cpus on its own memory; there is no remote memory, so no remote pair, interconnect link or contention between nodes to measure",
            ctx.topo.nodes[0].id
        ));
    }
    if !thp {
        notes.push("transparent huge pages are not available (transparent_hugepage/enabled is never or missing): the latency chase runs on base pages and its numbers include TLB misses".into());
    }
    Calibration {
        tool: "numascope-bench".into(),
        version: crate::VERSION.into(),
        date: crate::time::iso8601_utc(crate::time::unix_now_ms()),
        fingerprint: output::fingerprint(ctx.topo),
        quick: ctx.opts.quick,
        partial: false,
        stopped_by: None,
        steps_done: 0,
        steps_planned: 0,
        node_ids: ctx.topo.nodes.iter().map(|x| x.id).collect(),
        array_bytes: sizes.array_bytes,
        chase_bytes: sizes.chase_bytes,
        huge_pages: if thp { "requested (MADV_HUGEPAGE) for the chase buffer".into() } else { "not available".into() },
        virtual_machine: vm,
        bandwidth_gbps: KernelMatrices { copy: matrix(), triad: matrix() },
        latency_ns: matrix(),
        bound_share: vec![vec![None; n]; n],
        all_local_gbps: vec![None; n],
        all_to_one_gbps: vec![None; n],
        sustained_gbps: vec![None; n],
        loaded_latency: Vec::new(),
        notes,
    }
}

/// The cpu the loaded-latency chase of memory node `m` runs on, and the cpus of its load threads:
/// the node's own cpus, or the nearest cpu node's for a cpu-less node.
fn load_cpus(topo: &Topology, m: usize) -> (u32, Vec<u32>) {
    let near = plan::cpu_nodes(topo)
        .into_iter()
        .min_by_key(|&c| topo.distances.get(c).and_then(|r| r.get(m)).copied().unwrap_or(u32::MAX))
        .unwrap_or(0);
    let cpus = &topo.nodes[near].cpus;
    (cpus[0], cpus[1..].to_vec())
}

fn node_group(topo: &Topology, cpu: usize, mem: usize, sizes: &Sizes) -> Group {
    Group { cpus: topo.nodes[cpu].cpus.clone(), mem_node: topo.nodes[mem].id, elems: (sizes.array_bytes / 8) as usize }
}

fn check_binding(cal: &mut Calibration, share: f64, what: &str) {
    if share < 0.99 {
        cal.notes
            .push(format!("{what}: only {:.0}% of sampled pages were on the bound node (move_pages)", share * 100.0));
    }
}

fn run_step(ctx: &Context, sizes: &Sizes, step: &Step, cal: &mut Calibration) -> Result<(), BenchError> {
    let topo = ctx.topo;
    match *step {
        Step::Pair { cpu, mem } => {
            for kernel in [Kernel::Copy, Kernel::Triad] {
                let r = kernels::run_groups(&[node_group(topo, cpu, mem, sizes)], kernel, sizes.reps, ctx.stop)?;
                check_binding(cal, r[0].on_node_share, &step.describe(topo));
                let seen = cal.bound_share[cpu][mem].map_or(r[0].on_node_share, |s: f64| s.min(r[0].on_node_share));
                cal.bound_share[cpu][mem] = Some(seen);
                let m =
                    if kernel == Kernel::Copy { &mut cal.bandwidth_gbps.copy } else { &mut cal.bandwidth_gbps.triad };
                m[cpu][mem] = Stat::of(&r[0].gbps);
            }
            cal.latency_ns[cpu][mem] = idle_latency(topo, cpu, mem, sizes, ctx.stop)?;
        }
        Step::AllLocal => {
            let cpus = plan::cpu_nodes(topo);
            let groups: Vec<Group> = cpus.iter().map(|&c| node_group(topo, c, c, sizes)).collect();
            let r = kernels::run_groups(&groups, Kernel::Triad, sizes.reps, ctx.stop)?;
            for (k, &c) in cpus.iter().enumerate() {
                cal.all_local_gbps[c] = Stat::of(&r[k].gbps);
            }
        }
        Step::AllToOne { mem } => {
            let groups: Vec<Group> = plan::cpu_nodes(topo).iter().map(|&c| node_group(topo, c, mem, sizes)).collect();
            let r = kernels::run_groups(&groups, Kernel::Triad, sizes.reps, ctx.stop)?;
            let reps = r.iter().map(|g| g.gbps.len()).min().unwrap_or(0);
            let totals: Vec<f64> = (0..reps).map(|i| r.iter().map(|g| g.gbps[i]).sum()).collect();
            cal.all_to_one_gbps[mem] = Stat::of(&totals);
        }
        Step::Loaded { mem, load } => loaded_point(topo, mem, load, sizes, cal)?,
    }
    Ok(())
}

fn chase_buffer(topo: &Topology, mem: usize, sizes: &Sizes) -> Result<mem::NodeBuffer, BenchError> {
    let buf = mem::NodeBuffer::new(sizes.chase_bytes as usize, topo.nodes[mem].id, true)?;
    chase::build_chase(&buf, 0x6e75_6d61 ^ mem as u64);
    Ok(buf)
}

fn idle_latency(
    topo: &Topology,
    cpu: usize,
    mem: usize,
    sizes: &Sizes,
    stop: &AtomicBool,
) -> Result<Option<Stat>, BenchError> {
    let buf = chase_buffer(topo, mem, sizes)?;
    let cpu_id = topo.nodes[cpu].cpus[0];
    let steps = chase::steps_for(sizes.chase_ms, 100.0);
    let mut samples = Vec::new();
    for rep in 0..sizes.latency_reps {
        if rep > 0 && stop.load(Ordering::SeqCst) {
            break;
        }
        samples.push(
            std::thread::scope(|s| s.spawn(|| chase::chase_ns(&buf, cpu_id, steps)).join()).unwrap_or(Ok(f64::NAN))?,
        );
    }
    Ok(Stat::of(&samples))
}

fn loaded_point(
    topo: &Topology,
    mem: usize,
    load: usize,
    sizes: &Sizes,
    cal: &mut Calibration,
) -> Result<(), BenchError> {
    let (chase_cpu, load_cpus) = load_cpus(topo, mem);
    let buf = chase_buffer(topo, mem, sizes)?;
    let loads: Vec<mem::NodeBuffer> = (0..load)
        .map(|_| mem::NodeBuffer::new(sizes.array_bytes as usize, topo.nodes[mem].id, false))
        .collect::<Result<_, _>>()?;
    // Touched here, so that the load threads' timed run reads memory that is already there.
    loads.iter().for_each(|b| b.f64s().iter_mut().for_each(|x| *x = 1.0));
    let pairs: Vec<(u32, &mem::NodeBuffer)> = load_cpus.iter().copied().zip(loads.iter()).collect();
    let steps = chase::steps_for(sizes.chase_ms, 150.0);
    let (ns, gbps) = std::thread::scope(|s| s.spawn(|| chase::loaded_chase(&buf, chase_cpu, &pairs, steps)).join())
        .unwrap_or_else(|_| Err(std::io::Error::other("loaded-latency thread panicked")))?;
    let id = topo.nodes[mem].id;
    let curve = match cal.loaded_latency.iter_mut().position(|c| c.memory_node == id) {
        Some(i) => &mut cal.loaded_latency[i],
        None => {
            cal.loaded_latency.push(LoadedCurve { memory_node: id, chase_cpu, points: Vec::new() });
            cal.loaded_latency.last_mut().expect("just pushed")
        }
    };
    curve.points.push(LoadedPoint { load_threads: load, delivered_gbps: gbps, latency_ns: ns });
    Ok(())
}

#[cfg(test)]
mod tests;
