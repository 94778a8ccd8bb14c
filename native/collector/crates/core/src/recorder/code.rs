//! Code locations of the fault samples (trace format v3, `samples.stack`): the user call chains
//! the page-fault events carried ([`CallStacks`]) are placed in their modules by the executable
//! mappings seen (PERF_RECORD_MMAP2 records and the /proc polls' maps), symbolized after the run
//! with blazesym (the allocation sites' path: function, file:line, inlined frames; module +
//! offset without symbols), and written into the tables the allocation sites use (`stacks`,
//! `frames`, `modules`), so one function is one frame row whichever table names it.
//!
//! Nothing here can lose the recording: a module that cannot be read keeps its frames as module +
//! offset, a chain whose addresses no mapping covers keeps raw addresses, and the capability
//! `code-locations` says what was and was not resolved.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use blazesym::symbolize::Symbolizer;

use super::intervals::NewestWins;
use crate::alloc_sites::symbolize::{symbolize_module, Frame};
use crate::sources::callchain::{CallStacks, CodeMapping};
use crate::trace::alloc::{MAX_FRAMES, MAX_MODULES, MAX_STACK_ROWS};
use crate::trace::{Capability, TraceData};

/// The capability metric.
pub const METRIC: &str = "code-locations";

/// Functions where a complete user stack ends: the program's and the threads' entry points.
const ENTRY_FUNCTIONS: [&str; 9] = [
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "__libc_start_main_impl",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
];

/// Where code locations stand for one recording: (status, reason) of capability `code-locations`.
#[derive(Clone, Debug)]
pub(crate) struct CodeState {
    pub(crate) status: &'static str,
    pub(crate) reason: String,
}

impl CodeState {
    pub(super) fn off() -> Self {
        CodeState { status: "unavailable", reason: "not recorded: switched off (record --call-stack-depth 0)".into() }
    }

    /// Sets capability `code-locations` (added when the probe did not list it).
    pub(crate) fn update_capabilities(&self, caps: &mut Vec<Capability>) {
        match caps.iter_mut().find(|c| c.metric == METRIC) {
            Some(c) => {
                c.status = self.status.into();
                c.reason = self.reason.clone();
            }
            None => {
                caps.push(Capability { metric: METRIC.into(), status: self.status.into(), reason: self.reason.clone() })
            }
        }
    }
}

/// Executable mappings by address; a later mapping over the same addresses replaces the
/// earlier one (the /proc polls come first, then the MMAP2 records in arrival order).
struct CodeMap(NewestWins);

impl CodeMap {
    fn new(mappings: &[CodeMapping]) -> Self {
        CodeMap(NewestWins::new(mappings.iter().enumerate().map(|(i, m)| (m.start, m.end, i))))
    }

    fn find(&self, addr: u64) -> Option<usize> {
        self.0.find(addr)
    }
}

/// The PT_LOAD segments of an ELF file as (file offset, virtual address, file size), read from
/// its program headers (at most 64 KiB of them). Errors name the file and what is wrong.
pub(crate) fn elf_load_segments(path: &Path) -> Result<Vec<(u64, u64, u64)>, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut eh = [0u8; 64];
    f.read_exact(&mut eh).map_err(|e| format!("{}: ELF header: {e}", path.display()))?;
    if &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return Err(format!("{}: not a 64-bit little-endian ELF file", path.display()));
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as u64;
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (u64_at(&eh, 32), u16_at(&eh, 54), u16_at(&eh, 56));
    if phentsize < 56 || phnum == 0 || phentsize * phnum > 64 * 1024 {
        return Err(format!("{}: program headers of unexpected size ({phnum} × {phentsize} bytes)", path.display()));
    }
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(phoff)).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut ph = vec![0u8; (phentsize * phnum) as usize];
    f.read_exact(&mut ph).map_err(|e| format!("{}: program headers: {e}", path.display()))?;
    Ok(ph
        .chunks_exact(phentsize as usize)
        .filter(|p| u32_at(p, 0) == 1) // PT_LOAD
        .map(|p| (u64_at(p, 8), u64_at(p, 16), u64_at(p, 32)))
        .collect())
}

/// The ELF virtual address of file offset `off`, through the segment that maps it.
fn file_offset_to_vaddr(segments: &[(u64, u64, u64)], off: u64) -> Option<u64> {
    segments.iter().find(|&&(o, _, sz)| off >= o && off < o + sz).map(|&(o, v, _)| v + (off - o))
}

/// Whether a word is a return address: the instruction before it is a call, read from the
/// mapped file (files opened once).
#[derive(Default)]
struct CallCheck {
    files: HashMap<String, Option<std::fs::File>>,
}

impl CallCheck {
    fn follows_call(&mut self, code: &CodeMap, mappings: &[CodeMapping], ret: u64) -> bool {
        use std::os::unix::fs::FileExt;
        let Some(i) = code.find(ret.wrapping_sub(1)) else { return false };
        let m = &mappings[i];
        let Some(off) = (ret - m.start).checked_add(m.pgoff) else { return false };
        if off < 7 {
            return false;
        }
        let Some(f) = self.files.entry(m.path.clone()).or_insert_with(|| std::fs::File::open(&m.path).ok()) else {
            return false;
        };
        let mut b = [0u8; 7];
        if f.read_exact_at(&mut b, off - 7).is_err() {
            return false;
        }
        is_call_before(&b)
    }
}

/// `b`: the 7 bytes before a return address. x86-64 calls that end there: `call rel32` (E8 +4),
/// `call r/m64` (FF /2) by register (FF D0–D7, 2 bytes, optionally REX-prefixed), through
/// `[rip+disp32]` (FF 15 +4) or `[reg+disp8]` (FF 50–57 +1, FF 14 24 forms aside).
fn is_call_before(b: &[u8; 7]) -> bool {
    b[2] == 0xE8
        || (b[5] == 0xFF && (0xD0..=0xD7).contains(&b[6]))
        || (b[1] == 0xFF && b[2] == 0x15)
        || (b[4] == 0xFF && (0x50..=0x57).contains(&b[5]))
}

/// Frame rows of the shared table by their identity, to add a frame only once.
type FrameKey = (i32, u64, Option<String>, i8);

struct Tables<'a> {
    trace: &'a mut TraceData,
    frame_index: HashMap<FrameKey, u32>,
    module_index: HashMap<(String, String), i32>,
    frames_full: bool,
    modules_full: bool,
}

impl<'a> Tables<'a> {
    /// The shared tables with an index of the frames and modules already in them (the
    /// allocation sites').
    fn new(trace: &'a mut TraceData) -> Self {
        let mut tables = Tables {
            frame_index: HashMap::new(),
            module_index: HashMap::new(),
            frames_full: false,
            modules_full: false,
            trace,
        };
        let fr = &tables.trace.alloc.frames;
        for i in 0..fr.module.len() {
            tables
                .frame_index
                .insert((fr.module[i], fr.module_offset[i], fr.function[i].clone(), fr.inlined[i]), i as u32);
        }
        let md = &tables.trace.alloc.modules;
        for i in 0..md.path.len() {
            tables.module_index.insert((md.path[i].clone(), md.build_id[i].clone()), i as i32);
        }
        tables
    }
}

impl Tables<'_> {
    fn module(&mut self, path: &str, build_id: &str) -> i32 {
        if let Some(&m) = self.module_index.get(&(path.to_string(), build_id.to_string())) {
            return m;
        }
        // One file under two paths (/lib and /usr/lib on a merged-/usr system: the shim names
        // the loader's path, the maps the resolved one) is one module.
        if !build_id.is_empty() {
            let md = &self.trace.alloc.modules;
            if let Some(i) = md.build_id.iter().position(|b| b == build_id) {
                return i as i32;
            }
        }
        let mods = &mut self.trace.alloc.modules;
        if mods.path.len() >= MAX_MODULES {
            self.modules_full = true;
            return -1;
        }
        let m = mods.path.len() as i32;
        mods.path.push(path.to_string());
        mods.build_id.push(build_id.to_string());
        self.module_index.insert((path.to_string(), build_id.to_string()), m);
        m
    }

    fn frame(&mut self, module: i32, offset: u64, f: &Frame) -> Option<u32> {
        let key = (module, offset, f.function.clone(), f.inlined as i8);
        if let Some(&i) = self.frame_index.get(&key) {
            return Some(i);
        }
        let fr = &mut self.trace.alloc.frames;
        if fr.module.len() >= MAX_FRAMES {
            self.frames_full = true;
            return None;
        }
        let i = fr.module.len() as u32;
        fr.module.push(module);
        fr.module_offset.push(offset);
        fr.function.push(f.function.clone());
        fr.function_offset.push(f.function_offset.map(|o| o as i64).unwrap_or(-1));
        fr.file.push(f.file.clone());
        fr.line.push(f.line.map(|l| l.min(i32::MAX as u32) as i32).unwrap_or(-1));
        fr.col.push(f.column.map(|c| c.min(i16::MAX as u16) as i16).unwrap_or(-1));
        fr.inlined.push(f.inlined as i8);
        self.frame_index.insert(key, i);
        Some(i)
    }
}

/// Code addresses of each chain: the sampled instruction exactly, then each return address
/// minus one (inside its call); the leaf word after the instruction where it is the return
/// address of a frameless leaf (it follows a call, and the walk did not already give it). Also
/// the mapping of each address, and how many chains got a leaf function's caller.
#[allow(clippy::type_complexity)]
fn code_addresses(
    stacks: &CallStacks,
    used: &[u32],
    code_map: &CodeMap,
    mappings: &[CodeMapping],
) -> (HashMap<u32, Vec<u64>>, HashMap<u64, Option<usize>>, usize) {
    let mut calls = CallCheck::default();
    let mut leaf_callers = 0usize;
    let mut chain_addrs: HashMap<u32, Vec<u64>> = HashMap::new();
    let mut addr_mapping: HashMap<u64, Option<usize>> = HashMap::new();
    for &id in used {
        let Some((chain, leaf)) = stacks.get(id) else { continue };
        let mut v = Vec::with_capacity(chain.len() + 1);
        v.extend(chain.first().copied());
        if leaf != 0 && chain.get(1) != Some(&leaf) && calls.follows_call(code_map, mappings, leaf) {
            v.push(leaf - 1);
            leaf_callers += 1;
        }
        v.extend(chain.iter().skip(1).map(|a| a.wrapping_sub(1)));
        for &addr in &v {
            addr_mapping.entry(addr).or_insert_with(|| code_map.find(addr));
        }
        chain_addrs.insert(id, v);
    }
    (chain_addrs, addr_mapping, leaf_callers)
}

/// The frames of every code address (innermost first), and what could not be resolved.
struct Resolved {
    frames: HashMap<u64, Vec<u32>>,
    /// Why modules could not be read or symbolized.
    problems: Vec<String>,
    /// Modules in which no address got a function name.
    unsymbolized: Vec<String>,
    /// Addresses in no executable mapping.
    unmapped: usize,
}

/// Symbolizes the addresses module by module (blazesym, from each mapping's file offset through
/// the module's program headers to its ELF address) into frame rows of `tables`.
fn resolve_addresses(
    tables: &mut Tables<'_>,
    addr_mapping: &HashMap<u64, Option<usize>>,
    mappings: &[CodeMapping],
) -> Resolved {
    // Per module (path): the file offsets and their ELF virtual addresses.
    let mut by_path: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (&addr, m) in addr_mapping {
        if let Some(i) = m {
            by_path.entry(mappings[*i].path.as_str()).or_default().push(addr);
        }
    }
    let symbolizer =
        Symbolizer::builder().enable_code_info(true).enable_inlined_fns(true).enable_demangling(true).build();
    let mut addr_frames: HashMap<u64, Vec<u32>> = HashMap::new();
    let mut problems: Vec<String> = Vec::new();
    let mut unsymbolized_modules: Vec<String> = Vec::new();
    for (path, mut addrs) in by_path {
        addrs.sort_unstable();
        let p = Path::new(path);
        let build_id = match blazesym::helper::read_elf_build_id(p) {
            Ok(Some(b)) => b.iter().map(|x| format!("{x:02x}")).collect::<String>(),
            _ => String::new(),
        };
        let module = tables.module(path, &build_id);
        let vaddrs: Vec<Option<u64>> = match elf_load_segments(p) {
            Ok(segs) => addrs
                .iter()
                .map(|&a| {
                    let m = &mappings[addr_mapping[&a].unwrap()];
                    file_offset_to_vaddr(&segs, a - m.start + m.pgoff)
                })
                .collect(),
            Err(e) => {
                problems.push(e);
                vec![None; addrs.len()]
            }
        };
        let known: Vec<u64> = vaddrs.iter().flatten().copied().collect();
        let symbolized = if known.is_empty() { Ok(Vec::new()) } else { symbolize_module(&symbolizer, p, &known) };
        let mut symbolized = match symbolized {
            Ok(s) => s.into_iter(),
            Err(e) => {
                problems.push(e);
                Vec::new().into_iter()
            }
        };
        let mut any_named = false;
        for (&addr, vaddr) in addrs.iter().zip(&vaddrs) {
            let offset = vaddr.unwrap_or_else(|| {
                let m = &mappings[addr_mapping[&addr].unwrap()];
                addr - m.start + m.pgoff
            });
            let logical = if vaddr.is_some() { symbolized.next().unwrap_or_default() } else { Vec::new() };
            any_named |= !logical.is_empty();
            let ids: Vec<u32> = if logical.is_empty() {
                tables.frame(module, offset, &Frame::bare(offset)).into_iter().collect()
            } else {
                let n = logical.len();
                logical
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, mut f)| {
                        f.inlined = i + 1 < n;
                        tables.frame(module, offset, &f)
                    })
                    .collect()
            };
            addr_frames.insert(addr, ids);
        }
        if !any_named {
            unsymbolized_modules.push(path.to_string());
        }
    }
    let mut unmapped = 0usize;
    for (&addr, m) in addr_mapping {
        if m.is_none() {
            unmapped += 1;
            let ids = tables.frame(-1, raw_address(addr), &Frame::bare(raw_address(addr))).into_iter().collect();
            addr_frames.insert(addr, ids);
        }
    }

    Resolved { frames: addr_frames, problems, unsymbolized: unsymbolized_modules, unmapped }
}

/// Replaces the chain ids in `trace.samples.stack` (as the build left them) by stack ids of the
/// shared `stacks` table, adding the frames and modules they need, and says what it did.
pub(crate) fn attach(
    trace: &mut TraceData,
    stacks: &CallStacks,
    mappings: &[CodeMapping],
    depth: u16,
    notes: &mut Vec<String>,
) -> CodeState {
    attach_from(trace, stacks, mappings, Source::PageFaults { depth }, notes)
}

/// Where the chains came from, for what the capability says.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source {
    /// The recorder's page-fault events: user call chains of at most `depth` frames.
    PageFaults { depth: u16 },
    /// A perf.data import: each sample's instruction (PERF_SAMPLE_IP) and, for `chains` of them,
    /// the return addresses of its user call chain (PERF_SAMPLE_CALLCHAIN); the mappings from its
    /// MMAP records; addresses carry their process in bits 48-63 ([`space_address`]).
    Imported { chains: u64 },
}

/// An address in process (address space) `space` as the import keys it: user addresses are
/// below 2^47, so `space << 48 | addr` keeps processes apart without colliding with kernel
/// addresses (0xffff8…, left as they are). `space` < 0xffff.
pub(crate) fn space_address(space: u16, addr: u64) -> u64 {
    if addr < 1 << 47 {
        (space as u64) << 48 | addr
    } else {
        addr
    }
}

/// The address a frame without a module stores: the process bits of [`space_address`] removed.
fn raw_address(addr: u64) -> u64 {
    if addr < 0xffff_0000_0000_0000 {
        addr & ((1 << 48) - 1)
    } else {
        addr
    }
}

/// [`attach`] for any [`Source`].
pub(crate) fn attach_from(
    trace: &mut TraceData,
    stacks: &CallStacks,
    mappings: &[CodeMapping],
    source: Source,
    notes: &mut Vec<String>,
) -> CodeState {
    let depth = match source {
        Source::PageFaults { depth } => depth,
        Source::Imported { .. } => u16::MAX,
    };
    let samples = trace.samples.stack.len();
    let used: Vec<u32> = {
        let mut u: Vec<u32> = trace.samples.stack.iter().filter(|&&s| s >= 0).map(|&s| s as u32).collect();
        u.sort_unstable();
        u.dedup();
        u
    };
    let with_stack = trace.samples.stack.iter().filter(|&&s| s >= 0).count();
    if used.is_empty() {
        let why = match source {
            Source::Imported { .. } => {
                "no imported memory sample carries its instruction address (PERF_SAMPLE_IP)".to_string()
            }
            Source::PageFaults { .. } if stacks.empty > 0 => {
                format!(
                    "the kernel gave no user call chain for the {} page-fault samples that asked for one",
                    stacks.empty
                )
            }
            Source::PageFaults { .. } => "no page-fault sample carried a call chain".into(),
        };
        trace.samples.stack.iter_mut().for_each(|s| *s = -1);
        return CodeState { status: "unavailable", reason: format!("not recorded: {why}") };
    }

    let code_map = CodeMap::new(mappings);
    let (chain_addrs, addr_mapping, leaf_callers) = code_addresses(stacks, &used, &code_map, mappings);
    let mut tables = Tables::new(trace);
    let resolved = resolve_addresses(&mut tables, &addr_mapping, mappings);
    let addr_frames = &resolved.frames;

    // Stacks: ids continue after the allocations'.
    let st = &tables.trace.alloc.stacks;
    let mut next_id = st.stack.last().map(|&s| s + 1).unwrap_or(0);
    let mut stack_of: HashMap<u32, i32> = HashMap::new();
    // Chains that differ only in a leaf word not used are one stack.
    let mut by_frames: HashMap<Vec<u32>, i32> = HashMap::new();
    let mut rows_full = false;
    let (mut complete, mut cut_short, mut at_limit) = (0usize, 0usize, 0usize);
    let mut cut_in: BTreeMap<String, usize> = BTreeMap::new();
    let mut new_rows: (Vec<u32>, Vec<u16>, Vec<u32>) = (Vec::new(), Vec::new(), Vec::new());
    for &id in &used {
        let kernel_frames = stacks.get(id).map(|(c, _)| c.len()).unwrap_or(0);
        let frames: Vec<u32> = chain_addrs
            .get(&id)
            .map(|v| v.iter().flat_map(|a| addr_frames.get(a).cloned().unwrap_or_default()).collect())
            .unwrap_or_default();
        if let Some(&sid) = by_frames.get(&frames) {
            stack_of.insert(id, sid);
            continue;
        }
        if frames.is_empty() || st.stack.len() + new_rows.0.len() + frames.len() > MAX_STACK_ROWS {
            rows_full |= !frames.is_empty();
            continue;
        }
        let outer = *frames.last().unwrap() as usize;
        let fr = &tables.trace.alloc.frames;
        let reaches_entry = fr.function[outer].as_deref().is_some_and(|f| ENTRY_FUNCTIONS.contains(&f));
        if reaches_entry {
            complete += 1;
        } else if kernel_frames >= depth as usize {
            at_limit += 1;
        } else {
            cut_short += 1;
            let m = fr.module[outer];
            let name = if m >= 0 {
                let p = &tables.trace.alloc.modules.path[m as usize];
                p.rsplit('/').next().unwrap_or(p).to_string()
            } else {
                "no module".into()
            };
            *cut_in.entry(name).or_insert(0) += 1;
        }
        for (d, &f) in frames.iter().enumerate() {
            new_rows.0.push(next_id);
            new_rows.1.push(d.min(u16::MAX as usize) as u16);
            new_rows.2.push(f);
        }
        stack_of.insert(id, next_id as i32);
        by_frames.insert(frames, next_id as i32);
        next_id += 1;
    }
    let st = &mut tables.trace.alloc.stacks;
    st.stack.extend(new_rows.0);
    st.depth.extend(new_rows.1);
    st.frame.extend(new_rows.2);
    let (frames_full, modules_full) = (tables.frames_full, tables.modules_full);
    let trace = tables.trace;
    let mut lost_to_bounds = 0usize;
    for s in trace.samples.stack.iter_mut() {
        if *s >= 0 {
            *s = match stack_of.get(&(*s as u32)) {
                Some(&id) => id,
                None => {
                    lost_to_bounds += 1;
                    -1
                }
            };
        }
    }
    if rows_full || frames_full || modules_full {
        notes.push(format!(
            "code locations: the shared stacks/frames/modules tables reached their bounds ({MAX_STACK_ROWS} rows, {MAX_FRAMES} frames, {MAX_MODULES} modules); {lost_to_bounds} samples lost their stack"
        ));
    }
    if stacks.dropped > 0 {
        notes.push(format!(
            "code locations: {} samples' call chains were not kept (more than the recorder's bound of distinct stacks)",
            stacks.dropped
        ));
    }

    let distinct = stack_of.len();
    let (frames_n, modules_n) = (trace.alloc.frames.module.len(), trace.alloc.modules.path.len());
    let mut reason = match source {
        Source::PageFaults { .. } => format!(
            "user call stacks of page-fault samples (perf callchain, walked by frame pointers, up to {depth} frames): \
             {with_stack} of {samples} samples have one ({distinct} distinct stacks, {frames_n} frames in {modules_n} modules); \
             {complete} stacks reach a thread entry"
        ),
        Source::Imported { chains: 0 } => format!(
            "the sampled instruction of each memory sample (perf.data PERF_SAMPLE_IP; the file has no call chains: \
             record with -g for them): \
             {with_stack} of {samples} samples have one ({distinct} distinct instructions, {frames_n} frames in {modules_n} modules, \
             from the file's MMAP records; symbolized where the module's file is on this machine)"
        ),
        Source::Imported { chains } => format!(
            "the sampled instruction and user call chain of each memory sample (perf.data PERF_SAMPLE_IP and CALLCHAIN): \
             {with_stack} of {samples} samples have a code location, {chains} of them with return addresses \
             ({distinct} distinct stacks, {frames_n} frames in {modules_n} modules, from the file's MMAP records; \
             symbolized where the module's file is on this machine; the walk is perf's: without frame pointers \
             the callers may be missing)"
        ),
    };
    if cut_short > 0 && matches!(source, Source::PageFaults { .. }) {
        let places: Vec<String> = cut_in.iter().map(|(m, n)| format!("{m} ({n})")).collect();
        reason.push_str(&format!(
            ", {cut_short} stop before one (code built without frame pointers: the caller frames are missing or wrong; outermost frame in {})",
            places.join(", ")
        ));
    }
    if leaf_callers > 0 {
        reason.push_str(&format!(
            "; {leaf_callers} stacks got the caller of a frameless leaf function (memset and the like) from the return address at the stack pointer"
        ));
    }
    if at_limit > 0 && matches!(source, Source::PageFaults { .. }) {
        reason.push_str(&format!(", {at_limit} reach the depth limit (--call-stack-depth)"));
    }
    let Resolved { problems, unsymbolized: unsymbolized_modules, unmapped, .. } = resolved;
    if unmapped > 0 {
        reason.push_str(&format!("; {unmapped} code addresses in no executable mapping seen (kept as raw addresses)"));
    }
    if !unsymbolized_modules.is_empty() {
        let names: Vec<&str> = unsymbolized_modules.iter().map(|p| p.rsplit('/').next().unwrap_or(p)).collect();
        reason.push_str(&format!("; no symbols found in {} (module + offset only)", names.join(", ")));
    }
    if !problems.is_empty() {
        let uniq: HashSet<&String> = problems.iter().collect();
        let mut v: Vec<&String> = uniq.into_iter().collect();
        v.sort();
        reason.push_str(&format!(
            "; not symbolized: {}",
            v.iter().take(5).map(|s| s.as_str()).collect::<Vec<_>>().join("; ")
        ));
    }
    CodeState { status: "measured", reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_mappings_replace_earlier_ones() {
        let m = |start, end, path: &str| CodeMapping { pid: 1, start, end, pgoff: 0, path: path.into(), time_ns: 0 };
        let maps = vec![m(0x1000, 0x5000, "/a"), m(0x2000, 0x3000, "/b")];
        let cm = CodeMap::new(&maps);
        assert_eq!(cm.find(0x1000), Some(0));
        assert_eq!(cm.find(0x2fff), Some(1));
        assert_eq!(cm.find(0x3000), Some(0));
        assert_eq!(cm.find(0x5000), None);
        assert_eq!(cm.find(0xfff), None);
    }

    #[test]
    fn call_instructions_before_a_return_address() {
        assert!(is_call_before(&[0x90, 0x90, 0xE8, 1, 2, 3, 4]));
        assert!(is_call_before(&[0x90, 0x90, 0x90, 0x90, 0x90, 0xFF, 0xD3]));
        assert!(is_call_before(&[0x90, 0xFF, 0x15, 1, 2, 3, 4]));
        assert!(is_call_before(&[0x90, 0x90, 0x90, 0x90, 0xFF, 0x50, 8]));
        assert!(!is_call_before(&[0x48, 0x89, 0xE5, 0x48, 0x83, 0xEC, 0x10]), "mov rbp, rsp; sub rsp, 16");
        assert!(!is_call_before(&[0; 7]));
    }

    #[test]
    fn the_test_binary_s_own_segments_translate_offsets() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let segs = elf_load_segments(&exe).unwrap();
        assert!(!segs.is_empty());
        let (o, v, _) = segs[0];
        assert_eq!(file_offset_to_vaddr(&segs, o), Some(v));
        let err = elf_load_segments(Path::new("/proc/self/status")).unwrap_err();
        assert!(err.contains("ELF"), "{err}");
    }
}
