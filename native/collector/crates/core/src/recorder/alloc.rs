//! Allocation sites in a recording (docs/alloc-sites.md): for a launched program the
//! allocation-site shim is preloaded ([`prepare`]: `LD_PRELOAD`, a private `NUMASCOPE_ALLOC_DIR`);
//! after the run its per-process files are read and symbolized and become the trace's
//! `allocations`, `stacks`, `frames` and `modules` tables, and each region's
//! `alloc_site` ([`AllocState::collect`]). An attached process, a static or set-ID program, or a
//! missing shim gives no sites, and capability `allocation-sites` says why. Nothing here can lose
//! the recording: a file that cannot be read is a warning, and the trace is written without it.

use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::launch::child_environment;
use super::Warning;
use crate::alloc_sites::{self, AllocSites, ReadLimits, SymbolizeOptions};
use crate::time::us_since;
use crate::trace::alloc::{MAX_ALLOCATIONS, MAX_FRAMES, MAX_MODULES, MAX_STACK_ROWS};
use crate::trace::{AllocTables, Capability, TraceData};

/// The capability metric the recorder sets.
pub const METRIC: &str = "allocation-sites";

/// Per-process file limit the recorder gives the shim unless the environment sets one: bounds
/// what the recorder reads back (about a million events at 64 frames).
const MAX_FILE_BYTES: u64 = 512 << 20;

/// A private directory for the shim's files, removed with everything in it when dropped.
pub(super) struct ShimDir(PathBuf);

impl ShimDir {
    /// `$TMPDIR/numascope-alloc-XXXXXX`, mode 0700 (mkdtemp).
    fn create() -> std::io::Result<ShimDir> {
        let mut template = std::env::temp_dir().join("numascope-alloc-XXXXXX").into_os_string().into_vec();
        template.push(0);
        // SAFETY: a NUL-terminated template that mkdtemp rewrites in place.
        let r = unsafe { libc::mkdtemp(template.as_mut_ptr() as *mut libc::c_char) };
        if r.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        template.pop();
        Ok(ShimDir(PathBuf::from(OsString::from_vec(template))))
    }
}

impl Drop for ShimDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where allocation sites stand for one recording.
pub(super) enum AllocState {
    /// `--no-alloc-sites`.
    Off,
    /// Cannot be recorded (attached, static or set-ID program, shim not found): why.
    Unavailable(String),
    /// The shim is preloaded and writes into this directory.
    Preloaded(ShimDir),
    /// Read after the run: what the tables hold (the capability's reason).
    Recorded(String),
    /// The shim was preloaded but its output could not be used: why.
    Failed(String),
}

impl AllocState {
    /// (status, reason) of capability `allocation-sites`.
    fn capability(&self) -> (&'static str, String) {
        match self {
            AllocState::Off => (
                "unavailable",
                "not recorded: switched off (record --no-alloc-sites; serve and the binding: allocSites false)".into(),
            ),
            AllocState::Unavailable(why) | AllocState::Failed(why) => ("unavailable", why.clone()),
            AllocState::Preloaded(_) => {
                ("unavailable", "the shim's files were not read (the recording did not finish)".into())
            }
            AllocState::Recorded(how) => ("measured", how.clone()),
        }
    }

    /// Sets capability `allocation-sites` (added when the probe did not list it).
    pub(super) fn update_capabilities(&self, caps: &mut Vec<Capability>) {
        let (status, reason) = self.capability();
        match caps.iter_mut().find(|c| c.metric == METRIC) {
            Some(c) => {
                c.status = status.into();
                c.reason = reason;
            }
            None => caps.push(Capability { metric: METRIC.into(), status: status.into(), reason }),
        }
    }
}

/// The state of an attached process: the shim can only be preloaded at launch.
pub(super) fn attached() -> AllocState {
    AllocState::Unavailable(
        "attached to a running process: the allocation-site shim can only be preloaded into a program numascope launches; \
         regions come from /proc/PID/maps without allocation sites"
            .into(),
    )
}

/// Decides whether the shim can be preloaded into `program` and, when it can, makes its private
/// directory and the launched command's environment. Unavailable (with the reason, also a
/// warning) for static, set-ID and file-capability programs and when the shim is not found.
pub(super) fn prepare(
    enabled: bool,
    program: &Path,
    warnings: &mut Vec<Warning>,
) -> (AllocState, Option<Vec<CString>>) {
    if !enabled {
        return (AllocState::Off, None);
    }
    let unavailable = |why: String, warnings: &mut Vec<Warning>| {
        warnings.push(Warning(format!("allocation sites not recorded: {why}")));
        (AllocState::Unavailable(why), None)
    };
    if let Err(e) = alloc_sites::preload_possible(program) {
        return unavailable(e.to_string(), warnings);
    }
    let shim = match alloc_sites::find_shim() {
        Ok(p) => p,
        Err(e) => return unavailable(e, warnings),
    };
    // The loader splits LD_PRELOAD at spaces and colons.
    if shim.as_os_str().as_bytes().iter().any(|&b| b == b' ' || b == b':') {
        return unavailable(
            format!("the shim's path {} has a space or colon, which LD_PRELOAD cannot hold; set NUMASCOPE_ALLOC_SHIM to a copy elsewhere", shim.display()),
            warnings,
        );
    }
    let dir = match ShimDir::create() {
        Ok(d) => d,
        Err(e) => {
            return unavailable(
                format!(
                    "cannot create a private directory in {} for the shim's files: {e}",
                    std::env::temp_dir().display()
                ),
                warnings,
            )
        }
    };
    match child_environment(&shim_variables(&shim, &dir.0)) {
        Ok(env) => (AllocState::Preloaded(dir), Some(env)),
        Err(e) => unavailable(e.to_string(), warnings),
    }
}

/// The variables the launched command gets: the shim first in `LD_PRELOAD` (so that it sees the
/// allocation calls before an allocator the user preloads, which it then calls), the user's
/// entries kept after it; the directory; a file limit unless the user set one.
fn shim_variables(shim: &Path, dir: &Path) -> Vec<(&'static str, OsString)> {
    let mut preload = shim.as_os_str().to_os_string();
    if let Some(user) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(" ");
        preload.push(user);
    }
    let mut vars = vec![("LD_PRELOAD", preload), ("NUMASCOPE_ALLOC_DIR", dir.as_os_str().to_os_string())];
    if std::env::var_os("NUMASCOPE_ALLOC_MAX_FILE_BYTES").is_none() {
        vars.push(("NUMASCOPE_ALLOC_MAX_FILE_BYTES", MAX_FILE_BYTES.to_string().into()));
    }
    vars
}

impl AllocState {
    /// After the run: reads the shim's files of process `pid`, symbolizes them and adds the
    /// allocation-site tables and `regions.alloc_site` to `trace`. Problems are warnings; the
    /// tables then stay empty and the capability says why.
    pub(super) fn collect(
        &mut self,
        trace: &mut TraceData,
        start_ns: u64,
        pid: i32,
        warnings: &mut Vec<Warning>,
        notes: &mut Vec<String>,
    ) {
        let AllocState::Preloaded(dir) = &*self else { return };
        let files = match alloc_sites::load_dir(&dir.0, &ReadLimits::default(), &SymbolizeOptions::default()) {
            Ok(f) => f,
            Err(e) => {
                let why = format!("the shim's directory {} could not be read: {e}", dir.0.display());
                warnings.push(Warning(format!("allocation sites not recorded: {why}")));
                *self = AllocState::Failed(why);
                return;
            }
        };
        let mut mine = Vec::new();
        let mut others = 0usize;
        for (path, r) in files {
            match r {
                Ok(s) if s.pid == pid as u32 => mine.push(s),
                Ok(_) => others += 1,
                Err(e) => warnings.push(Warning(format!("allocation-site file {} not used: {e}", file_name(&path)))),
            }
        }
        if others > 0 {
            notes.push(format!(
                "allocation sites: {others} child process file(s) of the shim were not kept (a trace holds one address space)"
            ));
        }
        if mine.is_empty() {
            let why = format!(
                "the shim wrote no readable file for pid {pid} (it was not loaded: the program may clear its environment, \
                 or the loader refused it; see the warnings)"
            );
            warnings.push(Warning(format!("allocation sites not recorded: {why}")));
            *self = AllocState::Failed(why);
            return;
        }
        let (tables, stats) = build_tables(&mine, start_ns, trace);
        trace.alloc = tables;
        let sited = fill_region_sites(trace);
        for s in &mine {
            if let Some(why) = &s.incomplete {
                notes.push(format!("allocation sites of pid {}: incomplete: {why}", s.pid));
            }
        }
        notes.extend(stats.notes());
        *self = AllocState::Recorded(stats.describe(&mine, trace, sited));
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string())
}

/// What [`build_tables`] kept and left out.
#[derive(Default)]
struct Stats {
    recorded: usize,
    kept: usize,
    sampled: usize,
    stacks_dropped: usize,
    frames_dropped: bool,
    modules_dropped: bool,
    no_line: usize,
}

impl Stats {
    fn notes(&self) -> Vec<String> {
        let mut n = Vec::new();
        if self.kept < self.recorded {
            n.push(format!(
                "allocation sites: {} of {} recorded allocations kept (the trace holds at most {MAX_ALLOCATIONS}: those recorded by threshold first, largest first, then sampled ones)",
                self.kept, self.recorded
            ));
        }
        if self.stacks_dropped > 0 {
            n.push(format!(
                "allocation sites: {} allocations have stack -1: stacks reached its {MAX_STACK_ROWS}-row limit",
                self.stacks_dropped
            ));
        }
        if self.frames_dropped {
            n.push(format!("allocation sites: frames reached its {MAX_FRAMES}-row limit; later frames are missing"));
        }
        if self.modules_dropped {
            n.push(format!(
                "allocation sites: modules reached its {MAX_MODULES}-row limit; later frames have module -1"
            ));
        }
        n
    }

    fn describe(&self, files: &[AllocSites], trace: &TraceData, regions_with_site: usize) -> String {
        let a = &trace.alloc;
        let min = files.iter().map(|s| s.min_bytes).max().unwrap_or(0);
        let interval = files.iter().map(|s| s.sample_bytes).max().unwrap_or(0);
        let mut r = format!(
            "LD_PRELOAD allocation-site shim: {} allocations ({} of at least {} recorded by threshold, {} sampled by bytes{}), \
             {} distinct stacks, {} frames in {} modules, symbolized after the run (blazesym: DWARF lines and inlined functions, \
             else symbol+offset); {} of {} regions have a site",
            a.allocations.time_us.len(),
            self.kept - self.sampled,
            human(min),
            self.sampled,
            if interval > 0 { format!(", mean interval {}", human(interval)) } else { String::new() },
            a.stack_count(),
            a.frames.module.len(),
            a.modules.path.len(),
            regions_with_site,
            trace.regions.start.len()
        );
        if self.no_line > 0 {
            r.push_str(&format!("; {} frames have no line information", self.no_line));
        }
        if let Some(why) = files.iter().find_map(|s| s.incomplete.as_ref()) {
            r.push_str(&format!("; incomplete: {why}"));
        }
        r
    }
}

fn human(b: u64) -> String {
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Global ids while merging several files (one per image of the process).
#[derive(Default)]
struct Merge {
    modules: HashMap<(PathBuf, String), i32>,
    frames: HashMap<FrameKey, u32>,
    stacks: HashMap<Vec<u32>, i32>,
}

type FrameKey = (i32, u64, Option<String>, i64, Option<String>, i32, i16, i8);

/// The four tables from the process's files: the allocations kept (at most [`MAX_ALLOCATIONS`]),
/// in time order, with their stacks, frames and modules merged across files.
fn build_tables(files: &[AllocSites], start_ns: u64, trace: &TraceData) -> (AllocTables, Stats) {
    let mut picked: Vec<(usize, usize)> =
        files.iter().enumerate().flat_map(|(f, s)| (0..s.allocations.len()).map(move |i| (f, i))).collect();
    let mut stats = Stats { recorded: picked.len(), ..Stats::default() };
    if picked.len() > MAX_ALLOCATIONS {
        let a = |&(f, i): &(usize, usize)| &files[f].allocations[i];
        picked.sort_by_key(|k| (a(k).sampled, std::cmp::Reverse(a(k).size)));
        picked.truncate(MAX_ALLOCATIONS);
    }
    picked.sort_by_key(|&(f, i)| (files[f].allocations[i].time_ns, f, i));
    stats.kept = picked.len();

    let thread_row: HashMap<i32, i32> = trace.threads.tid.iter().enumerate().map(|(i, &t)| (t, i as i32)).collect();
    let regions = RegionIndex::new(trace);
    let mut t = AllocTables::default();
    let mut m = Merge::default();
    for (f, i) in picked {
        let s = &files[f];
        let a = &s.allocations[i];
        stats.sampled += a.sampled as usize;
        let mut frames = Vec::new();
        let mut node = a.stack;
        while let Some(n) = node {
            let st = s.stacks[n as usize];
            frames.push(st.frame);
            node = st.parent;
        }
        let mut ids = Vec::with_capacity(frames.len());
        for fr in frames {
            match frame_id(&mut m, &mut t, &mut stats, s, fr as usize) {
                Some(id) => ids.push(id),
                None => break,
            }
        }
        let stack = stack_id(&mut m, &mut t, &mut stats, ids, a.stack.is_some());
        let site = a.site.and_then(|fr| frame_id(&mut m, &mut t, &mut stats, s, fr as usize)).map_or(-1, |x| x as i32);
        let al = &mut t.allocations;
        al.time_us.push(us_since(start_ns, a.time_ns));
        al.end_us.push(a.end_ns.map_or(-1, |e| us_since(start_ns, e)));
        al.thread.push(*thread_row.get(&(a.tid as i32)).unwrap_or(&-1));
        al.tid.push(a.tid as i32);
        al.op.push(a.op.name());
        al.end_op.push(a.end_op.map_or("none", |o| o.name()));
        al.address.push(a.address);
        al.size.push(a.size);
        al.sampled.push(a.sampled as i8);
        al.weight_bytes.push(a.weight_bytes);
        al.stack.push(stack);
        al.site.push(site);
        al.region.push(regions.find(a.address).map_or(-1, |r| r as i32));
    }
    (t, stats)
}

fn module_id(m: &mut Merge, t: &mut AllocTables, stats: &mut Stats, s: &AllocSites, module: Option<u32>) -> i32 {
    let Some(md) = module.and_then(|i| s.modules.get(i as usize)) else { return -1 };
    let key = (md.path.clone(), md.build_id.clone());
    if let Some(&id) = m.modules.get(&key) {
        return id;
    }
    if t.modules.path.len() >= MAX_MODULES {
        stats.modules_dropped = true;
        return -1;
    }
    t.modules.path.push(md.path.to_string_lossy().into_owned());
    t.modules.build_id.push(md.build_id.clone());
    let id = (t.modules.path.len() - 1) as i32;
    m.modules.insert(key, id);
    id
}

/// The global row of frame `f` of file `s`, added when new; None past [`MAX_FRAMES`].
fn frame_id(m: &mut Merge, t: &mut AllocTables, stats: &mut Stats, s: &AllocSites, f: usize) -> Option<u32> {
    let fr = s.frames.get(f)?;
    let module = module_id(m, t, stats, s, fr.module);
    let key: FrameKey = (
        module,
        fr.module_address,
        fr.function.clone(),
        fr.function_offset.map_or(-1, |o| o.min(i64::MAX as u64) as i64),
        fr.file.clone(),
        fr.line.map_or(-1, |l| l.min(i32::MAX as u32) as i32),
        fr.column.map_or(-1, |c| c.min(i16::MAX as u16) as i16),
        fr.inlined as i8,
    );
    if let Some(&id) = m.frames.get(&key) {
        return Some(id);
    }
    if t.frames.module.len() >= MAX_FRAMES {
        stats.frames_dropped = true;
        return None;
    }
    let x = &mut t.frames;
    x.module.push(key.0);
    x.module_offset.push(key.1);
    x.function.push(key.2.clone());
    x.function_offset.push(key.3);
    x.file.push(key.4.clone());
    x.line.push(key.5);
    x.col.push(key.6);
    x.inlined.push(key.7);
    if key.5 < 0 {
        stats.no_line += 1;
    }
    let id = (x.module.len() - 1) as u32;
    m.frames.insert(key, id);
    Some(id)
}

/// The stack id of a frame list (innermost first), added when new; -1 for none or past the limit.
fn stack_id(m: &mut Merge, t: &mut AllocTables, stats: &mut Stats, ids: Vec<u32>, had_stack: bool) -> i32 {
    if ids.is_empty() {
        return -1;
    }
    if let Some(&id) = m.stacks.get(&ids) {
        return id;
    }
    if t.stacks.stack.len() + ids.len() > MAX_STACK_ROWS || ids.len() > u16::MAX as usize {
        stats.stacks_dropped += had_stack as usize;
        return -1;
    }
    let id = t.stack_count() as u32;
    for (depth, &f) in ids.iter().enumerate() {
        t.stacks.stack.push(id);
        t.stacks.depth.push(depth as u16);
        t.stacks.frame.push(f);
    }
    m.stacks.insert(ids, id as i32);
    id as i32
}

/// The regions of the trace by start address, to find the one holding an address.
struct RegionIndex {
    /// (start, end, row), by start.
    by_start: Vec<(u64, u64, usize)>,
}

impl RegionIndex {
    fn new(trace: &TraceData) -> Self {
        let r = &trace.regions;
        let mut by_start: Vec<(u64, u64, usize)> = (0..r.start.len()).map(|i| (r.start[i], r.end[i], i)).collect();
        by_start.sort_unstable();
        RegionIndex { by_start }
    }

    /// The region holding `addr`: of those that start at or below it, the nearest that still
    /// covers it (looking back at most 64 regions: snapshots of one mapping overlap).
    fn find(&self, addr: u64) -> Option<usize> {
        let n = self.by_start.partition_point(|&(s, _, _)| s <= addr);
        self.by_start[..n].iter().rev().take(64).find(|&&(_, e, _)| addr < e).map(|&(_, _, i)| i)
    }
}

/// `regions.alloc_site`: the site of the largest allocation in each region, where one is known.
/// Returns how many regions got one.
fn fill_region_sites(trace: &mut TraceData) -> usize {
    let a = &trace.alloc.allocations;
    let mut best: HashMap<usize, usize> = HashMap::new();
    for i in 0..a.region.len() {
        let (Ok(r), true) = (usize::try_from(a.region[i]), a.site[i] >= 0) else { continue };
        let e = best.entry(r).or_insert(i);
        if a.size[i] > a.size[*e] {
            *e = i;
        }
    }
    for (&r, &i) in &best {
        if let Some(slot) = trace.regions.alloc_site.get_mut(r) {
            *slot = Some(trace.alloc.describe_frame(trace.alloc.allocations.site[i] as usize));
        }
    }
    best.len()
}
