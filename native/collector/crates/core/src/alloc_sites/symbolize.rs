//! Turns a parsed allocation-site file into tables: allocations (each with its lifetime where
//! the free was seen), a stack prefix tree, frames (function, file, line, column; one frame per
//! inlined function) and modules. Symbolization uses blazesym on the recorded modules' files
//! after the run; a module without debug information gives function + offset from its symbol
//! table, and one that cannot be read gives module + address.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use super::format::{AllocFile, AllocOp};

pub type StackIndex = u32;
pub type FrameIndex = u32;
pub type ModuleIndex = u32;

/// One recorded allocation (heap block or mapping).
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// CLOCK_MONOTONIC nanoseconds (perf's sample clock).
    pub time_ns: u64,
    pub tid: u32,
    pub op: AllocOp,
    pub address: u64,
    pub size: u64,
    /// Below the threshold, recorded by the byte sampler.
    pub sampled: bool,
    /// Bytes this record stands for: `size` when recorded by threshold, the sampler's unbiased
    /// estimate `size / (1 - exp(-size / sample_bytes))` when sampled.
    pub weight_bytes: f64,
    /// Innermost stack node (the allocation call), None when no stack was captured.
    pub stack: Option<StackIndex>,
    /// The allocation site: the innermost frame outside allocator and language runtimes.
    pub site: Option<FrameIndex>,
    pub stack_truncated: bool,
    /// realloc/mremap: the block this one replaced.
    pub old_address: Option<u64>,
    /// When the block was freed, unmapped or reallocated away, if that was seen.
    pub end_ns: Option<u64>,
    pub end_op: Option<AllocOp>,
    /// mmap: protection and flags as passed.
    pub mmap_prot: Option<u32>,
    pub mmap_flags: Option<u32>,
}

/// A node of the stack prefix tree: `frame` called from the stack `parent` (toward `main`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackNode {
    pub parent: Option<StackIndex>,
    pub frame: FrameIndex,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Demangled function name (C++ and Rust), None when no symbol covers the address.
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u16>,
    /// This frame is a function inlined into the next outer frame at the same address.
    pub inlined: bool,
    pub module: Option<ModuleIndex>,
    /// Address as in the module's ELF file (what `addr2line -e <module>` takes).
    pub module_address: u64,
    /// Offset from the start of `function`, when known.
    pub function_offset: Option<u64>,
}

impl Frame {
    /// A frame at `module_address` with nothing known about it (no symbol covers the address).
    pub fn bare(module_address: u64) -> Self {
        Frame {
            function: None,
            file: None,
            line: None,
            column: None,
            inlined: false,
            module: None,
            module_address,
            function_offset: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    pub path: PathBuf,
    /// GNU build id, lower-case hex, empty when the module has none.
    pub build_id: String,
    pub bias: u64,
    pub lo: u64,
    pub hi: u64,
    /// Why symbols could not be read from this module, if they could not.
    pub problem: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct AllocSites {
    pub pid: u32,
    pub ppid: u32,
    pub min_bytes: u64,
    pub sample_bytes: u64,
    pub allocations: Vec<Allocation>,
    pub stacks: Vec<StackNode>,
    pub frames: Vec<Frame>,
    pub modules: Vec<Module>,
    /// Frees and unmaps whose allocation was not recorded (or was recorded before a race).
    pub unmatched_ends: u64,
    /// None when the file is complete, else why not.
    pub incomplete: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct SymbolizeOptions {
    /// Directories searched for separate debug files (debug links); None = blazesym's defaults
    /// (/usr/lib/debug, /lib/debug).
    pub debug_dirs: Option<Vec<PathBuf>>,
}

/// Builds the tables of one file.
pub fn symbolize(file: &AllocFile, opts: &SymbolizeOptions) -> AllocSites {
    let mut out = AllocSites {
        pid: file.header.pid,
        ppid: file.header.ppid,
        min_bytes: file.header.min_bytes,
        sample_bytes: file.header.sample_bytes,
        incomplete: file.incomplete_reason(),
        ..AllocSites::default()
    };

    let snap_modules = collect_modules(file, &mut out);
    // Each distinct code address resolved to a module with the snapshot valid at its first use:
    // the latest taken at or before the event, else the earliest after it.
    let mut ip_module: HashMap<u64, Option<ModuleIndex>> = HashMap::new();
    for e in &file.events {
        for &ip in file.stack(e) {
            ip_module.entry(ip).or_insert_with(|| find_module(&snap_modules, e.time_ns, ip));
        }
    }

    let ip_frames = resolve_frames(&ip_module, opts, &mut out);
    build_allocations(file, &ip_frames, &mut out);
    out
}

/// Snapshot modules time-ordered as (time, [(lo, hi, module)]), each module once in `out.modules`
/// (deduplicated by path, bias and range).
/// A snapshot's modules: (start, end, module).
type ModuleRanges = Vec<(u64, u64, ModuleIndex)>;
type ModuleSnapshots = Vec<(u64, ModuleRanges)>;

fn collect_modules(file: &AllocFile, out: &mut AllocSites) -> ModuleSnapshots {
    let mut module_ids: HashMap<(PathBuf, u64, u64, u64), ModuleIndex> = HashMap::new();
    let mut snap_modules: ModuleSnapshots = Vec::new();
    let mut snaps: Vec<_> = file.snapshots.iter().collect();
    snaps.sort_by_key(|s| s.time_ns);
    for s in snaps {
        let mut list = Vec::new();
        for m in &s.modules {
            let key = (m.path.clone(), m.bias, m.lo, m.hi);
            let id = *module_ids.entry(key).or_insert_with(|| {
                out.modules.push(Module {
                    path: m.path.clone(),
                    build_id: m.build_id.iter().map(|b| format!("{b:02x}")).collect(),
                    bias: m.bias,
                    lo: m.lo,
                    hi: m.hi,
                    problem: None,
                });
                (out.modules.len() - 1) as ModuleIndex
            });
            list.push((m.lo, m.hi, id));
        }
        snap_modules.push((s.time_ns, list));
    }

    snap_modules
}

/// The frames of every code address, innermost first, symbolized per module.
fn resolve_frames(
    ip_module: &HashMap<u64, Option<ModuleIndex>>,
    opts: &SymbolizeOptions,
    out: &mut AllocSites,
) -> HashMap<u64, Vec<FrameIndex>> {
    let mut builder = Symbolizer::builder().enable_code_info(true).enable_inlined_fns(true).enable_demangling(true);
    if let Some(dirs) = &opts.debug_dirs {
        builder = builder.set_debug_dirs(Some(dirs.clone()));
    }
    let symbolizer = builder.build();
    let mut by_module: BTreeMap<ModuleIndex, Vec<u64>> = BTreeMap::new();
    for (&ip, m) in ip_module {
        if let Some(m) = m {
            by_module.entry(*m).or_default().push(ip);
        }
    }
    // Frames of each address, innermost first.
    let mut ip_frames: HashMap<u64, Vec<FrameIndex>> = HashMap::new();
    for (m, mut ips) in by_module {
        ips.sort_unstable();
        let module = &out.modules[m as usize];
        let bias = module.bias;
        let vaddrs: Vec<u64> = ips.iter().map(|ip| ip.wrapping_sub(bias)).collect();
        let resolved = symbolize_module(&symbolizer, &module.path, &vaddrs);
        let results = match resolved {
            Ok(r) => r,
            Err(problem) => {
                out.modules[m as usize].problem = Some(problem);
                vec![Vec::new(); vaddrs.len()]
            }
        };
        for ((ip, vaddr), logical) in ips.iter().zip(&vaddrs).zip(results) {
            let mut ids = Vec::new();
            if logical.is_empty() {
                ids.push(push_frame(&mut out.frames, Frame { module: Some(m), ..Frame::bare(*vaddr) }));
            } else {
                let n = logical.len();
                for (i, mut f) in logical.into_iter().enumerate() {
                    f.module = Some(m);
                    f.module_address = *vaddr;
                    f.inlined = i + 1 < n;
                    ids.push(push_frame(&mut out.frames, f));
                }
            }
            ip_frames.insert(*ip, ids);
        }
    }
    for (&ip, m) in ip_module {
        if m.is_none() {
            let id = push_frame(&mut out.frames, Frame::bare(ip));
            ip_frames.insert(ip, vec![id]);
        }
    }

    ip_frames
}

/// Stacks (a prefix tree) and allocations, in time order, pairing ends with starts.
fn build_allocations(file: &AllocFile, ip_frames: &HashMap<u64, Vec<FrameIndex>>, out: &mut AllocSites) {
    let mut node_ids: HashMap<(Option<StackIndex>, FrameIndex), StackIndex> = HashMap::new();
    let mut order: Vec<usize> = (0..file.events.len()).collect();
    order.sort_by_key(|&i| (file.events[i].time_ns, i));
    let mut heap: HashMap<u64, usize> = HashMap::new();
    let mut maps: BTreeMap<u64, usize> = BTreeMap::new();
    for i in order {
        let e = &file.events[i];
        let ends = |out: &mut AllocSites, idx: usize| {
            let a = &mut out.allocations[idx];
            a.end_ns = Some(e.time_ns);
            a.end_op = Some(e.op);
        };
        match e.op {
            AllocOp::Free => {
                match heap.remove(&e.address) {
                    Some(idx) => ends(out, idx),
                    None => out.unmatched_ends += 1,
                }
                continue;
            }
            AllocOp::Munmap => {
                let end = e.address.saturating_add(e.size);
                let inside: Vec<(u64, usize)> = maps.range(e.address..end).map(|(&a, &i)| (a, i)).collect();
                let mut any = false;
                for (a, idx) in inside {
                    if a.saturating_add(out.allocations[idx].size) <= end {
                        maps.remove(&a);
                        ends(out, idx);
                        any = true;
                    }
                }
                if !any {
                    out.unmatched_ends += 1;
                }
                continue;
            }
            AllocOp::Realloc | AllocOp::Reallocarray if e.old_address != 0 => {
                if let Some(idx) = heap.remove(&e.old_address) {
                    ends(out, idx);
                }
            }
            AllocOp::Mremap => {
                if let Some(idx) = maps.remove(&e.old_address) {
                    ends(out, idx);
                }
            }
            _ => {}
        }
        let stack_ips = file.stack(e);
        let mut stack: Option<StackIndex> = None;
        // Build from the outermost frame inward.
        for ip in stack_ips.iter().rev() {
            if let Some(frames) = ip_frames.get(ip) {
                for &f in frames.iter().rev() {
                    let next = out.stacks.len() as StackIndex;
                    let id = *node_ids.entry((stack, f)).or_insert_with(|| {
                        out.stacks.push(StackNode { parent: stack, frame: f });
                        next
                    });
                    stack = Some(id);
                }
            }
        }
        let site = stack_ips
            .iter()
            .flat_map(|ip| ip_frames.get(ip).into_iter().flatten().copied())
            .find(|&f| !is_runtime_frame(&out.frames[f as usize], &out.modules));
        let weight_bytes = if e.sampled && file.header.sample_bytes > 0 && e.size > 0 {
            let s = e.size as f64;
            s / (1.0 - (-s / file.header.sample_bytes as f64).exp())
        } else {
            e.size as f64
        };
        let (mmap_prot, mmap_flags) =
            if e.op == AllocOp::Mmap { (Some(e.aux as u32), Some((e.aux >> 32) as u32)) } else { (None, None) };
        out.allocations.push(Allocation {
            time_ns: e.time_ns,
            tid: e.tid,
            op: e.op,
            address: e.address,
            size: e.size,
            sampled: e.sampled,
            weight_bytes,
            stack,
            site,
            stack_truncated: e.stack_truncated,
            old_address: matches!(e.op, AllocOp::Realloc | AllocOp::Reallocarray | AllocOp::Mremap)
                .then_some(e.old_address)
                .filter(|&a| a != 0),
            end_ns: None,
            end_op: None,
            mmap_prot,
            mmap_flags,
        });
        let idx = out.allocations.len() - 1;
        if e.op.is_heap_alloc() {
            heap.insert(e.address, idx);
        } else {
            maps.insert(e.address, idx);
        }
    }
}

fn find_module(snaps: &[(u64, ModuleRanges)], t: u64, ip: u64) -> Option<ModuleIndex> {
    let hit = |list: &ModuleRanges| list.iter().find(|(lo, hi, _)| *lo <= ip && ip < *hi).map(|m| m.2);
    let split = snaps.partition_point(|(time, _)| *time <= t);
    snaps[..split].iter().rev().find_map(|(_, l)| hit(l)).or_else(|| snaps[split..].iter().find_map(|(_, l)| hit(l)))
}

fn push_frame(frames: &mut Vec<Frame>, f: Frame) -> FrameIndex {
    frames.push(f);
    (frames.len() - 1) as FrameIndex
}

/// Logical frames (innermost first) for each virtual address of one module.
pub(crate) fn symbolize_module(sym: &Symbolizer, path: &Path, vaddrs: &[u64]) -> Result<Vec<Vec<Frame>>, String> {
    if !path.is_absolute() || !path.is_file() {
        return Err(format!("{} is not a readable file (a virtual module, or deleted since the run)", path.display()));
    }
    let src = Source::Elf(Elf::new(path));
    let results = sym.symbolize(&src, Input::VirtOffset(vaddrs)).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(results
        .into_iter()
        .map(|r| match r {
            Symbolized::Sym(s) => {
                let code = |ci: Option<&blazesym::symbolize::CodeInfo>| match ci {
                    Some(ci) => (Some(ci.to_path().to_string_lossy().into_owned()), ci.line, ci.column),
                    None => (None, None, None),
                };
                let mut frames = Vec::with_capacity(s.inlined.len() + 1);
                // Innermost first: the last inlined function holds the instruction's location.
                for f in s.inlined.iter().rev() {
                    let (file, line, column) = code(f.code_info.as_ref());
                    frames.push(Frame {
                        function: Some(f.name.to_string()),
                        file,
                        line,
                        column,
                        inlined: true,
                        module: None,
                        module_address: 0,
                        function_offset: None,
                    });
                }
                let (file, line, column) = code(s.code_info.as_deref());
                frames.push(Frame {
                    function: Some(s.name.to_string()),
                    file,
                    line,
                    column,
                    inlined: false,
                    module: None,
                    module_address: 0,
                    function_offset: Some(s.offset as u64),
                });
                frames
            }
            Symbolized::Unknown(_) => Vec::new(),
        })
        .collect())
}

/// Frames that belong to allocators and language runtimes rather than to the program: the C
/// library, the C++, Fortran and GCC runtimes, the loader, this shim, and Rust's standard
/// library (its sources are under /rustc/ in every toolchain build), and code from system
/// headers.
pub fn is_runtime_frame(f: &Frame, modules: &[Module]) -> bool {
    if let Some(m) = f.module.and_then(|m| modules.get(m as usize)) {
        let name = m.path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        const RUNTIME: [&str; 8] = [
            "libc.so",
            "libstdc++.so",
            "libc++.so",
            "libc++abi.so",
            "libgfortran.so",
            "libgcc_s.so",
            "ld-linux",
            "libnumascope_allocshim",
        ];
        if RUNTIME.iter().any(|r| name.starts_with(r)) {
            return true;
        }
    }
    if let Some(file) = &f.file {
        // Rust's standard library, and C/C++ library code inlined from system headers (the
        // std::vector and std::make_unique templates that call operator new).
        if file.starts_with("/rustc/") || file.starts_with("/usr/include/") {
            return true;
        }
    }
    if let Some(func) = &f.function {
        const RUST_ALLOC: [&str; 8] = [
            "__rust_alloc",
            "__rust_realloc",
            "__rust_alloc_zeroed",
            "__rdl_",
            "__rg_",
            "alloc::",
            "<alloc::",
            "std::sys::",
        ];
        if RUST_ALLOC.iter().any(|p| func.starts_with(p)) {
            return true;
        }
    }
    false
}
