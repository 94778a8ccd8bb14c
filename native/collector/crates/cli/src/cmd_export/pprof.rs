//! `numascope export TRACE --format pprof`: the trace as one gzip'd pprof profile
//! (profile.proto, docs/fleet.md "pprof"), for `go tool pprof`, speedscope, Pyroscope and the
//! other flame-graph viewers.
//!
//! Two kinds of stack share the profile, told apart by their sample types:
//!
//! - **code**: each access or fault sample on the call stack of its sampled instruction
//!   (`samples.stack`): `accesses` (the sample's weight: the events it stands for) and
//!   `remote_accesses` (those whose cpu's node is not the page's node, as the Parquet export's
//!   `local` column says);
//! - **data**: each allocation's call stack (`allocations.stack`): `alloc_space` (bytes, the
//!   byte sampler's weight for sampled blocks), `object_accesses` and `object_remote_accesses`
//!   (the samples that fell in memory allocated there) and `pages`, `pages_node<N>` (its pages and
//!   the node each was on). Pages and samples are attributed to allocations by the engine's rule
//!   (packages/policy-engine/src/query/objects.ts, docs/engine.md "Objects"), so the figures are
//!   the Objects table's.
//!
//! What has no stack is filed under a bracketed pseudo-function (`[no call stack recorded]`,
//! `[not in a recorded allocation: heap]`) so that every sample type's total is the trace's.
//! Mappings carry the modules' paths and GNU build ids; a frame blazesym could not name is
//! `module+0xOFFSET`. Output is deterministic: the same trace gives the same bytes.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

use flate2::write::GzEncoder;
use numascope_core::trace::{Manifest, TraceData};
use prost::Message;

use super::proto as pb;
use super::tables::{dict, Identity};

/// Allocations considered per page, the latest allocated first (the engine's MAX_CANDIDATES_PER_PAGE).
const MAX_CANDIDATES_PER_PAGE: usize = 1024;
const PAGE: u64 = 4096;
/// Largest module offset placed in its module's mapping; a frame past it (a damaged trace) is
/// given no mapping and its raw offset as address.
const MAX_MODULE_SPAN: u64 = 1 << 40;
/// Most nodes given a `pages_node<N>` sample type.
const MAX_NODES: usize = 64;

/// Sample types in order; `pages_node<N>` follow, one per machine node.
const TYPES: [(&str, &str); 6] = [
    ("accesses", "count"),
    ("remote_accesses", "count"),
    ("alloc_space", "bytes"),
    ("object_accesses", "count"),
    ("object_remote_accesses", "count"),
    ("pages", "count"),
];
const ACCESSES: usize = 0;
const REMOTE: usize = 1;
const ALLOC_SPACE: usize = 2;
const OBJECT_ACCESSES: usize = 3;
const OBJECT_REMOTE: usize = 4;
const PAGES: usize = 5;

/// A stack of the profile: a trace stack, one frame (an allocation whose stack did not fit the
/// stack table), or a bracketed note.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum StackKey {
    Stack(u32),
    Frame(u32),
    Note(String),
}

/// A label: key, string value, number value (0 for the kind not used).
type LabelKey = (i64, i64, i64);

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings::default();
        s.id("");
        s
    }

    fn id(&mut self, v: &str) -> i64 {
        if let Some(&i) = self.index.get(v) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(v.to_string());
        self.index.insert(v.to_string(), i);
        i
    }
}

/// Page -> allocation and sample -> allocation (rows of `allocations`, -1 none), by the
/// engine's rule (module comment).
pub fn attribute_objects(t: &TraceData) -> (Vec<i32>, Vec<i32>) {
    let a = &t.alloc.allocations;
    let n_alloc = a.address.len().min(a.size.len()).min(a.time_us.len()).min(a.end_us.len());
    let n_pages = t.pages.address.len().min(t.pages.first_touch_us.len());
    let s = &t.samples;
    let n_samples = s.page.len().min(s.offset.len()).min(s.time_us.len());
    let mut page_alloc = vec![-1i32; t.pages.address.len()];
    let mut sample_alloc = vec![-1i32; s.page.len()];
    if n_alloc == 0 || n_pages == 0 {
        return (page_alloc, sample_alloc);
    }
    let end = |i: usize| a.address[i].saturating_add(a.size[i]);
    let live = |i: usize, t: i64| a.time_us[i] <= t && (a.end_us[i] < 0 || t < a.end_us[i]);
    let mut by_start: Vec<usize> = (0..n_alloc).collect();
    by_start.sort_by_key(|&i| (a.address[i], i));
    let mut page_order: Vec<usize> = (0..n_pages).collect();
    page_order.sort_by_key(|&p| (t.pages.address[p], p));
    // Samples grouped by page (counting sort).
    let mut start = vec![0usize; n_pages + 1];
    let page_of = |i: usize| usize::try_from(s.page[i]).ok().filter(|&p| p < n_pages);
    for i in 0..n_samples {
        if let Some(p) = page_of(i) {
            start[p + 1] += 1;
        }
    }
    for p in 0..n_pages {
        start[p + 1] += start[p];
    }
    let mut fill = start[..n_pages].to_vec();
    let mut by_page = vec![0usize; start[n_pages]];
    for i in 0..n_samples {
        if let Some(p) = page_of(i) {
            by_page[fill[p]] = i;
            fill[p] += 1;
        }
    }
    let mut active: Vec<usize> = Vec::new();
    let mut next = 0;
    for &p in &page_order {
        let lo = t.pages.address[p];
        let hi = lo.saturating_add(PAGE);
        while next < n_alloc && a.address[by_start[next]] < hi {
            active.push(by_start[next]);
            next += 1;
        }
        active.retain(|&i| end(i) > lo);
        if active.is_empty() {
            continue;
        }
        let mut cands = active.clone();
        cands.sort_by(|&x, &y| a.time_us[y].cmp(&a.time_us[x]).then(y.cmp(&x)));
        cands.truncate(MAX_CANDIDATES_PER_PAGE);
        let ft = t.pages.first_touch_us[p];
        let mut best = (-1i32, 0u64);
        for &i in &cands {
            if ft >= 0 && !live(i, ft) {
                continue;
            }
            let overlap = hi.min(end(i)).saturating_sub(lo.max(a.address[i]));
            if overlap > best.1 {
                best = (i as i32, overlap);
            }
        }
        page_alloc[p] = best.0;
        for &i in &by_page[start[p]..start[p + 1]] {
            let addr = lo.saturating_add(u64::from(s.offset[i]));
            let ts = s.time_us[i];
            if let Some(&hit) = cands.iter().find(|&&c| a.address[c] <= addr && addr < end(c) && live(c, ts)) {
                sample_alloc[i] = hit as i32;
            }
        }
    }
    (page_alloc, sample_alloc)
}

struct Builder<'a> {
    t: &'a TraceData,
    strings: Strings,
    functions: Vec<pb::Function>,
    function_ids: HashMap<(i64, i64), u64>,
    locations: Vec<pb::Location>,
    /// A group of frame rows (inlined ones, then the one that holds the code address) -> location.
    frame_locations: HashMap<Vec<u32>, u64>,
    note_locations: HashMap<String, u64>,
    /// Per module: (mapping id, base address of its synthetic range).
    module_base: Vec<u64>,
    mappings: Vec<pb::Mapping>,
    /// Stack id -> its frame rows in depth order.
    stack_frames: HashMap<u32, Vec<u32>>,
    stack_locations: HashMap<StackKey, Vec<u64>>,
}

impl<'a> Builder<'a> {
    fn new(t: &'a TraceData) -> Self {
        let mut b = Builder {
            t,
            strings: Strings::new(),
            functions: Vec::new(),
            function_ids: HashMap::new(),
            locations: Vec::new(),
            frame_locations: HashMap::new(),
            note_locations: HashMap::new(),
            module_base: Vec::new(),
            mappings: Vec::new(),
            stack_frames: HashMap::new(),
            stack_locations: HashMap::new(),
        };
        b.build_mappings();
        let st = &t.alloc.stacks;
        let mut rows: HashMap<u32, Vec<(u16, u32)>> = HashMap::new();
        for i in 0..st.stack.len().min(st.depth.len()).min(st.frame.len()) {
            rows.entry(st.stack[i]).or_default().push((st.depth[i], st.frame[i]));
        }
        for (s, mut r) in rows {
            r.sort_unstable();
            b.stack_frames.insert(s, r.into_iter().map(|(_, f)| f).collect());
        }
        b
    }

    /// One mapping per module, each given a disjoint address range whose start stands for the
    /// module's file offset 0 (the trace keeps module offsets, not the run's load addresses).
    fn build_mappings(&mut self) {
        let fr = &self.t.alloc.frames;
        let m = &self.t.alloc.modules;
        let mut span = vec![0u64; m.path.len()];
        let (mut files, mut lines, mut inlined) =
            (vec![false; m.path.len()], vec![false; m.path.len()], vec![false; m.path.len()]);
        for f in 0..fr.module.len() {
            let Some(k) = usize::try_from(fr.module[f]).ok().filter(|&k| k < span.len()) else { continue };
            let offset = fr.module_offset.get(f).copied().unwrap_or(0);
            if offset < MAX_MODULE_SPAN {
                span[k] = span[k].max(offset + 1);
            }
            files[k] |= fr.file.get(f).is_some_and(Option::is_some);
            lines[k] |= fr.line.get(f).is_some_and(|&l| l > 0);
            inlined[k] |= fr.inlined.get(f).is_some_and(|&v| v == 1);
        }
        let mut base = 0x1_0000u64;
        for k in 0..m.path.len() {
            let size = span[k].div_ceil(PAGE).max(1).saturating_mul(PAGE);
            let filename = self.strings.id(&m.path[k]);
            let build_id = self.strings.id(m.build_id.get(k).map(String::as_str).unwrap_or(""));
            self.mappings.push(pb::Mapping {
                id: k as u64 + 1,
                memory_start: base,
                memory_limit: base.saturating_add(size),
                file_offset: 0,
                filename,
                build_id,
                // Every frame is named (module+offset where blazesym found no symbol), so
                // viewers need not look for the binary.
                has_functions: true,
                has_filenames: files[k],
                has_line_numbers: lines[k],
                has_inline_frames: inlined[k],
            });
            self.module_base.push(base);
            base = base.saturating_add(size).saturating_add(PAGE);
        }
    }

    fn function(&mut self, name: &str, file: &str) -> u64 {
        let key = (self.strings.id(name), self.strings.id(file));
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        self.functions.push(pb::Function { id, name: key.0, system_name: key.0, filename: key.1, start_line: 0 });
        self.function_ids.insert(key, id);
        id
    }

    fn note(&mut self, text: &str) -> u64 {
        if let Some(&id) = self.note_locations.get(text) {
            return id;
        }
        let function_id = self.function(text, "");
        let id = self.locations.len() as u64 + 1;
        self.locations.push(pb::Location {
            id,
            mapping_id: 0,
            address: 0,
            line: vec![pb::Line { function_id, line: 0, column: 0 }],
            is_folded: false,
        });
        self.note_locations.insert(text.to_string(), id);
        id
    }

    /// A frame's name: its function, else `module+0xOFFSET`, else the raw address.
    fn frame_name(&self, f: usize) -> String {
        let fr = &self.t.alloc.frames;
        if let Some(Some(name)) = fr.function.get(f) {
            return name.clone();
        }
        let offset = fr.module_offset.get(f).copied().unwrap_or(0);
        match usize::try_from(fr.module[f]).ok().and_then(|m| self.t.alloc.modules.path.get(m)) {
            Some(path) => {
                format!(
                    "{}+0x{offset:x}",
                    Path::new(path).file_name().map_or(path.clone(), |n| n.to_string_lossy().into())
                )
            }
            None => format!("0x{offset:x}"),
        }
    }

    /// The location of frame rows `group` (all in the frames table): inlined frames first.
    fn frame_location(&mut self, group: Vec<u32>) -> u64 {
        if let Some(&id) = self.frame_locations.get(&group) {
            return id;
        }
        let mut line = Vec::with_capacity(group.len());
        for &f in &group {
            let f = f as usize;
            let name = self.frame_name(f);
            let file = self.t.alloc.frames.file.get(f).cloned().flatten().unwrap_or_default();
            let function_id = self.function(&name, &file);
            let fr = &self.t.alloc.frames;
            let l = fr.line.get(f).copied().unwrap_or(-1).max(0);
            let col = fr.col.get(f).copied().unwrap_or(-1).max(0);
            line.push(pb::Line { function_id, line: i64::from(l), column: i64::from(col) });
        }
        let outer = *group.last().unwrap_or(&0) as usize;
        let fr = &self.t.alloc.frames;
        let offset = fr.module_offset.get(outer).copied().unwrap_or(0);
        let module =
            usize::try_from(fr.module[outer]).ok().filter(|&m| m < self.module_base.len() && offset < MAX_MODULE_SPAN);
        let (mapping_id, address) = match module {
            Some(m) => (m as u64 + 1, self.module_base[m].saturating_add(offset)),
            None => (0, offset),
        };
        let id = self.locations.len() as u64 + 1;
        self.locations.push(pb::Location { id, mapping_id, address, line, is_folded: false });
        self.frame_locations.insert(group, id);
        id
    }

    /// Frame rows (innermost first) -> locations, leaf first; a row past the frames table is a note.
    fn frames_to_locations(&mut self, frames: &[u32]) -> Vec<u64> {
        let fr = &self.t.alloc.frames;
        let n = fr.module.len().min(fr.module_offset.len());
        let mut out = Vec::new();
        let mut group = Vec::new();
        for &f in frames {
            if (f as usize) >= n {
                if !group.is_empty() {
                    out.push(self.frame_location(std::mem::take(&mut group)));
                }
                out.push(self.note(&format!("[frame {f} missing from the trace]")));
                continue;
            }
            group.push(f);
            if self.t.alloc.frames.inlined.get(f as usize).copied().unwrap_or(0) != 1 {
                out.push(self.frame_location(std::mem::take(&mut group)));
            }
        }
        if !group.is_empty() {
            out.push(self.frame_location(group));
        }
        out
    }

    fn locations_of(&mut self, key: &StackKey) -> Vec<u64> {
        if let Some(l) = self.stack_locations.get(key) {
            return l.clone();
        }
        let locs = match key {
            StackKey::Stack(s) => match self.stack_frames.get(s).cloned() {
                Some(frames) => self.frames_to_locations(&frames),
                None => vec![self.note(&format!("[stack {s} missing from the trace]"))],
            },
            StackKey::Frame(f) => self.frames_to_locations(&[*f]),
            StackKey::Note(text) => vec![self.note(text)],
        };
        self.stack_locations.insert(key.clone(), locs.clone());
        locs
    }
}

/// A dictionary string; a key past the dictionary reads `unknown`.
/// The machine's node ids, sorted, at most MAX_NODES.
fn node_ids(m: &Manifest) -> Vec<i64> {
    let mut ids: Vec<i64> = m.machine.nodes.iter().map(|n| i64::from(n.id)).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.truncate(MAX_NODES);
    ids
}

/// Where memory outside every recorded allocation is filed: its region's kind (and file).
fn outside_note(t: &TraceData, page: Option<usize>) -> String {
    let Some(p) = page else { return "[address unknown]".into() };
    let r = t.pages.region.get(p).and_then(|&r| usize::try_from(r).ok()).filter(|&r| r < t.regions.start.len());
    match r {
        Some(r) => {
            let kind = dict(&t.regions.kind, r);
            match t.regions.path.get(r).cloned().flatten() {
                Some(path) if kind == "file" => format!("[not in a recorded allocation: file {path}]"),
                _ => format!("[not in a recorded allocation: {kind}]"),
            }
        }
        None => "[not in a recorded allocation: no region]".into(),
    }
}

/// The profile of a trace (module comment).
pub fn build_profile(t: &TraceData, id: &Identity, source: &str) -> pb::Profile {
    let mut b = Builder::new(t);
    let nodes = node_ids(&t.manifest);
    let node_slot: HashMap<i64, usize> = nodes.iter().enumerate().map(|(i, &n)| (n, TYPES.len() + i)).collect();
    let width = TYPES.len() + nodes.len();
    let cpu_node: HashMap<i64, i64> = t
        .manifest
        .machine
        .nodes
        .iter()
        .flat_map(|n| n.cpus.iter().map(move |&c| (i64::from(c), i64::from(n.id))))
        .collect();
    let mut agg: BTreeMap<(StackKey, Vec<LabelKey>), Vec<i64>> = BTreeMap::new();
    let mut add = |key: StackKey, labels: Vec<LabelKey>, slot: usize, v: i64| {
        let e = agg.entry((key, labels)).or_insert_with(|| vec![0; width]);
        e[slot] = e[slot].saturating_add(v);
    };
    let (k_event, k_op, k_source, k_cpu_node, k_page_node) = (
        b.strings.id("event"),
        b.strings.id("op"),
        b.strings.id("data_source"),
        b.strings.id("cpu_node"),
        b.strings.id("page_node"),
    );
    let (page_alloc, sample_alloc) = attribute_objects(t);
    let a = &t.alloc.allocations;
    let alloc_key = |i: usize| match (a.stack.get(i).copied().unwrap_or(-1), a.site.get(i).copied().unwrap_or(-1)) {
        (s, _) if s >= 0 => StackKey::Stack(s as u32),
        (_, f) if f >= 0 => StackKey::Frame(f as u32),
        _ => StackKey::Note("[allocation without a recorded stack]".into()),
    };
    let s = &t.samples;
    let mut stacked = false;
    for i in 0..s.time_us.len() {
        let w = i64::from(s.weight.get(i).copied().unwrap_or(1).max(1));
        let page = usize::try_from(s.page.get(i).copied().unwrap_or(-1)).ok().filter(|&p| p < t.pages.address.len());
        let cn = s.cpu.get(i).and_then(|&c| cpu_node.get(&i64::from(c))).copied();
        let pn = s.node.get(i).map(|&n| i64::from(n)).filter(|&n| n >= 0);
        let remote = matches!((cn, pn), (Some(c), Some(p)) if c != p);
        let mut labels = vec![
            (k_event, b.strings.id(dict(&s.event, i)), 0),
            (k_op, b.strings.id(dict(&s.op, i)), 0),
            (k_source, b.strings.id(dict(&s.data_source, i)), 0),
        ];
        labels.extend(cn.map(|c| (k_cpu_node, 0, c)));
        labels.extend(pn.map(|p| (k_page_node, 0, p)));
        let code = match s.stack.get(i).copied().unwrap_or(-1) {
            st if st >= 0 => {
                stacked = true;
                StackKey::Stack(st as u32)
            }
            _ => StackKey::Note("[no call stack recorded]".into()),
        };
        add(code.clone(), labels.clone(), ACCESSES, w);
        let data = match sample_alloc.get(i).and_then(|&x| usize::try_from(x).ok()) {
            Some(x) => alloc_key(x),
            None => StackKey::Note(outside_note(t, page)),
        };
        add(data.clone(), labels.clone(), OBJECT_ACCESSES, w);
        if remote {
            add(code, labels.clone(), REMOTE, w);
            add(data, labels, OBJECT_REMOTE, w);
        }
    }
    for i in 0..a.time_us.len() {
        let bytes = a.weight_bytes.get(i).copied().filter(|b| b.is_finite() && *b > 0.0).unwrap_or(0.0);
        let op = b.strings.id(dict(&a.op, i));
        add(alloc_key(i), vec![(k_op, op, 0)], ALLOC_SPACE, bytes.round().min(i64::MAX as f64) as i64);
    }
    for p in 0..t.pages.address.len() {
        let key = match page_alloc.get(p).and_then(|&x| usize::try_from(x).ok()) {
            Some(x) => alloc_key(x),
            None => StackKey::Note(outside_note(t, Some(p))),
        };
        let node = t.pages.node.get(p).map(|&n| i64::from(n)).filter(|&n| n >= 0);
        let labels: Vec<LabelKey> = node.map(|n| (k_page_node, 0, n)).into_iter().collect();
        add(key.clone(), labels.clone(), PAGES, 1);
        if let Some(&slot) = node.and_then(|n| node_slot.get(&n)) {
            add(key, labels, slot, 1);
        }
    }

    let mut sample = Vec::with_capacity(agg.len());
    for ((key, labels), value) in agg {
        let location_id = b.locations_of(&key);
        let label = labels.into_iter().map(|(key, str, num)| pb::Label { key, str, num, num_unit: 0 }).collect();
        sample.push(pb::Sample { location_id, value, label });
    }
    let mut sample_type: Vec<pb::ValueType> =
        TYPES.iter().map(|(ty, unit)| pb::ValueType { r#type: b.strings.id(ty), unit: b.strings.id(unit) }).collect();
    for n in &nodes {
        let ty = b.strings.id(&format!("pages_node{n}"));
        sample_type.push(pb::ValueType { r#type: ty, unit: b.strings.id("count") });
    }
    let default = if !stacked && !a.time_us.is_empty() { "object_accesses" } else { "accesses" };
    let comments = [
        format!("numascope export of {source}: trace {} of host {} ({})", id.trace_id, id.host, id.date),
        "accesses, remote_accesses: samples on the stack of their instruction, weighted by the events each stands \
         for; remote: the cpu's node is not the page's node"
            .to_string(),
        "alloc_space, object_accesses, object_remote_accesses, pages, pages_node<N>: by allocation stack \
         (the engine's Objects attribution)"
            .to_string(),
    ];
    let comment = comments.iter().map(|c| b.strings.id(c)).collect();
    let default_sample_type = b.strings.id(default);
    let period_type = Some(sample_type[ACCESSES].clone());
    let start_ms = i64::try_from(t.manifest.capture.start_unix_ms).unwrap_or(0);
    let duration_us = i64::try_from(t.manifest.capture.duration_us).unwrap_or(0);
    pb::Profile {
        sample_type,
        sample,
        mapping: b.mappings,
        location: b.locations,
        function: b.functions,
        string_table: b.strings.table,
        time_nanos: start_ms.saturating_mul(1_000_000),
        duration_nanos: duration_us.saturating_mul(1000),
        period_type,
        period: 1,
        comment,
        default_sample_type,
    }
}

/// Writes the profile gzip'd into `PATH.tmp`, then renames it over `path`.
pub fn write_pprof(path: &Path, profile: &pb::Profile) -> Result<u64, String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let result = (|| {
        let file = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
        let mut gz = GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::default());
        gz.write_all(&profile.encode_to_vec()).map_err(|e| e.to_string())?;
        let mut w = gz.finish().map_err(|e| e.to_string())?;
        w.flush().map_err(|e| e.to_string())?;
        drop(w);
        std::fs::rename(&tmp, path).map_err(|e| e.to_string())?;
        std::fs::metadata(path).map(|m| m.len()).map_err(|e| e.to_string())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use numascope_core::trace::fixture::fixture_trace;
    use std::io::Read;

    fn profile() -> (TraceData, pb::Profile) {
        let t = fixture_trace();
        let id = Identity::new("0123456789abcdef".into(), "db-07".into(), &t.manifest);
        let p = build_profile(&t, &id, "fixture.numascope");
        (t, p)
    }

    fn total(p: &pb::Profile, ty: &str) -> i128 {
        let k = p.sample_type.iter().position(|v| p.string_table[v.r#type as usize] == ty).unwrap();
        p.sample.iter().map(|s| i128::from(s.value[k])).sum()
    }

    #[test]
    fn every_sample_type_totals_the_trace() {
        let (t, p) = profile();
        let weights: i128 = t.samples.weight.iter().map(|&w| i128::from(w.max(1))).sum();
        assert_eq!(total(&p, "accesses"), weights);
        assert_eq!(total(&p, "object_accesses"), weights);
        assert_eq!(total(&p, "pages"), t.pages.address.len() as i128);
        // 1.5e19 bytes (a hostile weight) is held at i64::MAX, not wrapped
        let bytes: i128 =
            t.alloc.allocations.weight_bytes.iter().map(|&b| b.round().min(i64::MAX as f64) as i64 as i128).sum();
        assert_eq!(total(&p, "alloc_space"), bytes);
        assert!(total(&p, "remote_accesses") <= weights);
        let per_node: i128 = t.manifest.machine.nodes.iter().map(|n| total(&p, &format!("pages_node{}", n.id))).sum();
        let on_machine = |n: i8| t.manifest.machine.nodes.iter().any(|m| i64::from(m.id) == i64::from(n));
        let known = t.pages.node.iter().filter(|&&n| on_machine(n)).count() as i128;
        assert!(known < t.pages.address.len() as i128, "the fixture has a page on no node of the machine");
        assert_eq!(per_node, known, "pages on a machine node, each counted once");
    }

    #[test]
    fn ids_resolve_and_strings_start_empty() {
        let (_, p) = profile();
        assert_eq!(p.string_table[0], "");
        let width = p.sample_type.len();
        for s in &p.sample {
            assert_eq!(s.value.len(), width);
            assert!(!s.location_id.is_empty());
            for &l in &s.location_id {
                assert!(l >= 1 && (l as usize) <= p.location.len());
            }
        }
        for (i, l) in p.location.iter().enumerate() {
            assert_eq!(l.id, i as u64 + 1);
            assert!(l.mapping_id as usize <= p.mapping.len());
            if l.mapping_id > 0 {
                let m = &p.mapping[l.mapping_id as usize - 1];
                assert!(m.memory_start <= l.address && l.address < m.memory_limit);
            }
            for line in &l.line {
                assert!(line.function_id >= 1 && (line.function_id as usize) <= p.function.len());
            }
        }
        for f in &p.function {
            assert!((f.name as usize) < p.string_table.len() && (f.filename as usize) < p.string_table.len());
        }
    }

    #[test]
    fn the_written_file_is_gzip_of_the_profile_and_the_same_trace_gives_the_same_bytes() {
        let (_, p) = profile();
        let dir = std::env::temp_dir().join(format!("numascope-pprof-test-{}", std::process::id()));
        let path = dir.join("fixture.pb.gz");
        write_pprof(&path, &p).unwrap();
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()).read_to_end(&mut raw).unwrap();
        assert_eq!(pb::Profile::decode(raw.as_slice()).unwrap(), p);
        let (_, again) = profile();
        assert_eq!(again.encode_to_vec(), raw, "deterministic output");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_engines_attribution_rule_latest_live_allocation_holding_the_address() {
        let mut t = fixture_trace();
        t.pages.address = vec![0x10000, 0x20000];
        t.pages.first_touch_us = vec![50, -1];
        t.pages.region = vec![-1, -1];
        t.pages.node = vec![0, 1];
        t.pages.page_size = vec![4096, 4096];
        t.pages.first_touch_thread = vec![-1, -1];
        t.pages.first_touch_cpu = vec![-1, -1];
        let a = &mut t.alloc.allocations;
        // 0: [0x10000, +8 KiB) live 0..40; 1: same range live from 45; 2: [0x20000, +64) never freed.
        a.address = vec![0x10000, 0x10000, 0x20000];
        a.size = vec![8192, 8192, 64];
        a.time_us = vec![0, 45, 10];
        a.end_us = vec![40, -1, -1];
        let s = &mut t.samples;
        s.page = vec![0, 0, 1];
        s.offset = vec![16, 16, 100];
        s.time_us = vec![30, 60, 20];
        let (pages, samples) = attribute_objects(&t);
        assert_eq!(pages, vec![1, 2], "page 0 first touched at 50: allocation 1 is live then");
        assert_eq!(samples, vec![0, 1, -1], "sample 2 is past allocation 2's 64 bytes");
    }
}
