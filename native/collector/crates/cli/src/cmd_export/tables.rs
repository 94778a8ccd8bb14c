//! The trace's tables denormalised for SQL (docs/fleet.md): every row carries its trace id and
//! program, times are absolute UTC timestamps, and row indices (thread, page, region, frame,
//! module) are replaced by what they point at: the thread's tid and name, the page's address and
//! node, the region's kind, path and allocation site, the frame's function, file and line. A
//! reference past its table (a damaged or hostile trace) gives nulls, never a panic.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder, TimestampMicrosecondBuilder,
    UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use numascope_core::trace::{DictColumn, Manifest, TraceData};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// A host name as a path component: letters, digits, `.`, `-` and `_` kept, anything else `_`
/// (no `/`, `=` or `..` reaches the path); empty or dots-only names become `unknown`.
pub fn host_component(host: &str) -> String {
    let s: String =
        host.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' }).collect();
    if s.chars().all(|c| c == '.') {
        "unknown".to_string()
    } else {
        s.chars().take(255).collect()
    }
}

/// Which trace a row came from, and where its files go.
pub struct Identity {
    pub trace_id: String,
    pub host: String,
    /// `host` as a path component (host_component).
    pub host_dir: String,
    /// The capture's UTC start date, yyyy-mm-dd.
    pub date: String,
    /// The capture's start, µs since the Unix epoch.
    pub start_unix_us: i64,
    /// The recorded program's name (the base name of its command's first word), or null.
    pub program: Option<String>,
}

impl Identity {
    pub fn new(trace_id: String, host: String, manifest: &Manifest) -> Self {
        let start_unix_ms = i64::try_from(manifest.capture.start_unix_ms).unwrap_or(i64::MAX / 1000);
        let date = arrow_array::temporal_conversions::timestamp_ms_to_datetime(start_unix_ms)
            .map(|t| t.date().to_string())
            .unwrap_or_else(|| "unknown".into());
        let program =
            manifest.process.as_ref().and_then(|p| p.command.first()).map(|c| {
                Path::new(c).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| c.clone())
            });
        Identity {
            host_dir: host_component(&host),
            trace_id,
            host,
            date,
            start_unix_us: start_unix_ms.saturating_mul(1000),
            program,
        }
    }

    fn at(&self, us: i64) -> i64 {
        self.start_unix_us.saturating_add(us)
    }
}

/// One exported table.
pub struct Table {
    pub name: &'static str,
    pub batch: RecordBatch,
}

/// Columns in order, each named.
#[derive(Default)]
struct Cols(Vec<(&'static str, ArrayRef)>);

impl Cols {
    fn add(&mut self, name: &'static str, a: impl arrow_array::Array + 'static) {
        self.0.push((name, Arc::new(a)));
    }

    /// trace_id and program, repeated on each of `rows` rows.
    fn identity(&mut self, id: &Identity, rows: usize) {
        let mut t = StringBuilder::new();
        let mut p = StringBuilder::new();
        for _ in 0..rows {
            t.append_value(&id.trace_id);
            p.append_option(id.program.as_deref());
        }
        self.add("trace_id", t.finish());
        self.add("program", p.finish());
    }

    fn batch(self) -> Result<RecordBatch, String> {
        RecordBatch::try_from_iter(self.0).map_err(|e| e.to_string())
    }
}

/// A dictionary string; a key past the dictionary reads `unknown` (the format's rule for unknown values).
pub(super) fn dict(d: &DictColumn, row: usize) -> &str {
    d.keys.get(row).and_then(|&k| d.values.get(k as usize)).map(String::as_str).unwrap_or("unknown")
}

/// -1 (or anything negative) is unknown: null.
fn known(v: i64) -> Option<i64> {
    (v >= 0).then_some(v)
}

/// Each cpu's node, from the machine's nodes.
fn cpu_nodes(m: &Manifest) -> std::collections::HashMap<i64, i64> {
    m.machine.nodes.iter().flat_map(|n| n.cpus.iter().map(move |&c| (i64::from(c), i64::from(n.id)))).collect()
}

fn hitm_class(v: i8) -> Option<&'static str> {
    match v {
        0 => Some("none"),
        1 => Some("local-hitm"),
        2 => Some("remote-hitm"),
        3 => Some("remote-hit"),
        _ => None,
    }
}

/// Every table of the export, in the order they are written.
pub fn export_tables(t: &TraceData, id: &Identity) -> Result<Vec<Table>, String> {
    Ok(vec![
        Table { name: "traces", batch: traces(t, id)? },
        Table { name: "samples", batch: samples(t, id)? },
        Table { name: "pages", batch: pages(t, id)? },
        Table { name: "threads", batch: threads(t, id)? },
        Table { name: "thread_placements", batch: thread_placements(t, id)? },
        Table { name: "region_placements", batch: region_placements(t, id)? },
        Table { name: "allocations", batch: allocations(t, id)? },
        Table { name: "code_frames", batch: code_frames(t, id)? },
    ])
}

/// One row: the trace itself (host, program, machine, when, how long, how it was made).
fn traces(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let m = &t.manifest;
    let mut c = Cols::default();
    c.identity(id, 1);
    let mut s = StringBuilder::new();
    s.append_value(&id.host);
    c.add("host", s.finish());
    let mut start = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    start.append_value(id.start_unix_us);
    c.add("start", start.finish());
    let mut dur = Float64Builder::new();
    dur.append_value(m.capture.duration_us as f64 / 1e6);
    c.add("duration_s", dur.finish());
    for (name, v) in [
        ("origin", Some(m.origin.kind.clone())),
        ("machine", Some(m.machine.name.clone())),
        ("cpu_model", m.machine.cpu_model.clone()),
        ("kernel", m.machine.kernel.clone()),
        ("command", m.process.as_ref().map(|p| p.command.join(" "))),
        ("stop_reason", Some(m.capture.stop_reason.clone())),
    ] {
        let mut b = StringBuilder::new();
        b.append_option(v);
        c.add(name, b.finish());
    }
    let mut n = Int64Builder::new();
    n.append_value(m.machine.nodes.len() as i64);
    c.add("nodes", n.finish());
    let mut pid = Int64Builder::new();
    pid.append_option(m.process.as_ref().map(|p| i64::from(p.pid)));
    c.add("pid", pid.finish());
    let mut clock = Float64Builder::new();
    clock.append_option(m.machine.cpu_clock_ghz);
    c.add("cpu_clock_ghz", clock.finish());
    let mut rows = Int64Builder::new();
    rows.append_value(t.samples.time_us.len() as i64);
    c.add("sample_rows", rows.finish());
    let mut lost = Int64Builder::new();
    lost.append_value(i64::try_from(m.capture.lost_samples).unwrap_or(i64::MAX));
    c.add("lost_samples", lost.finish());
    c.batch()
}

/// What a region index stands for: kind, path, allocation site.
struct RegionInfo<'a> {
    kind: Option<&'a str>,
    path: Option<&'a str>,
    site: Option<&'a str>,
}

fn region(t: &TraceData, r: i64) -> RegionInfo<'_> {
    let Some(r) = usize::try_from(r).ok().filter(|&r| r < t.regions.start.len()) else {
        return RegionInfo { kind: None, path: None, site: None };
    };
    RegionInfo {
        kind: Some(dict(&t.regions.kind, r)),
        path: t.regions.path.get(r).and_then(|p| p.as_deref()),
        site: t.regions.alloc_site.get(r).and_then(|p| p.as_deref()),
    }
}

/// The samples: one row per memory-access or fault sample, with who, where, what and how long.
fn samples(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let s = &t.samples;
    let n = s.time_us.len();
    let nodes = cpu_nodes(&t.manifest);
    let clock = t.manifest.machine.cpu_clock_ghz.filter(|g| g.is_finite() && *g > 0.0);
    let mut c = Cols::default();
    c.identity(id, n);
    let mut time = TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC");
    let mut time_us = Int64Builder::with_capacity(n);
    let (mut tid, mut pid, mut cpu, mut cpu_node, mut page_node, mut hops) = (
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
    );
    let mut thread_name = StringBuilder::with_capacity(n, n * 8);
    let mut address = UInt64Builder::with_capacity(n);
    let mut local = BooleanBuilder::with_capacity(n);
    let (mut op, mut event, mut source, mut hitm) =
        (StringBuilder::new(), StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    let (mut kind, mut path, mut site) = (StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    let mut lat_cycles = Int64Builder::with_capacity(n);
    let mut lat_ns = Float64Builder::with_capacity(n);
    let mut weight = Int64Builder::with_capacity(n);
    let mut stack = Int32Builder::with_capacity(n);
    for i in 0..n {
        time.append_value(id.at(s.time_us[i]));
        time_us.append_value(s.time_us[i]);
        let th = s.thread[i] as usize;
        tid.append_option(t.threads.tid.get(th).copied());
        pid.append_option(t.threads.pid.get(th).copied());
        thread_name.append_option(t.threads.name.get(th));
        let c_id = known(i64::from(s.cpu[i]));
        cpu.append_option(c_id.map(|v| v as i32));
        let cn = c_id.and_then(|c| nodes.get(&c).copied());
        cpu_node.append_option(cn.map(|v| v as i32));
        let pn = known(i64::from(s.node[i]));
        page_node.append_option(pn.map(|v| v as i32));
        local.append_option(cn.zip(pn).map(|(a, b)| a == b));
        hops.append_option(known(i64::from(s.hops[i])).map(|v| v as i32));
        let page = usize::try_from(s.page[i]).ok().filter(|&p| p < t.pages.address.len());
        address.append_option(page.map(|p| t.pages.address[p].saturating_add(u64::from(s.offset[i]))));
        let r = region(t, page.map(|p| i64::from(t.pages.region[p])).unwrap_or(-1));
        kind.append_option(r.kind);
        path.append_option(r.path);
        site.append_option(r.site);
        op.append_value(dict(&s.op, i));
        event.append_value(dict(&s.event, i));
        source.append_value(dict(&s.data_source, i));
        hitm.append_option(hitm_class(s.hitm[i]));
        let cycles = (s.latency_cycles[i] > 0).then_some(i64::from(s.latency_cycles[i]));
        lat_cycles.append_option(cycles);
        lat_ns.append_option(cycles.zip(clock).map(|(c, g)| c as f64 / g));
        weight.append_value(i64::from(s.weight[i].max(1)));
        stack.append_option(known(i64::from(s.stack[i])).map(|v| v as i32));
    }
    c.add("time", time.finish());
    c.add("time_us", time_us.finish());
    c.add("tid", tid.finish());
    c.add("pid", pid.finish());
    c.add("thread_name", thread_name.finish());
    c.add("cpu", cpu.finish());
    c.add("cpu_node", cpu_node.finish());
    c.add("address", address.finish());
    c.add("page_node", page_node.finish());
    c.add("local", local.finish());
    c.add("hops", hops.finish());
    c.add("op", op.finish());
    c.add("event", event.finish());
    c.add("data_source", source.finish());
    c.add("hitm", hitm.finish());
    c.add("latency_cycles", lat_cycles.finish());
    c.add("latency_ns", lat_ns.finish());
    c.add("weight", weight.finish());
    c.add("region_kind", kind.finish());
    c.add("region_path", path.finish());
    c.add("alloc_site", site.finish());
    c.add("stack", stack.finish());
    c.batch()
}

/// The pages: address, node, size, what region and site they belong to, who touched them first.
fn pages(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let p = &t.pages;
    let n = p.address.len();
    let mut c = Cols::default();
    c.identity(id, n);
    let mut address = UInt64Builder::with_capacity(n);
    let (mut node, mut size, mut ft_cpu, mut ft_tid) =
        (Int32Builder::new(), Int64Builder::new(), Int32Builder::new(), Int32Builder::new());
    let mut ft_time = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut ft_name = StringBuilder::new();
    let (mut kind, mut path, mut site) = (StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    for i in 0..n {
        address.append_value(p.address[i]);
        node.append_option(known(i64::from(p.node[i])).map(|v| v as i32));
        size.append_value(i64::from(p.page_size[i]));
        ft_time.append_option(known(p.first_touch_us[i]).map(|us| id.at(us)));
        let th = usize::try_from(p.first_touch_thread[i]).ok();
        ft_tid.append_option(th.and_then(|th| t.threads.tid.get(th).copied()));
        ft_name.append_option(th.and_then(|th| t.threads.name.get(th)));
        ft_cpu.append_option(known(i64::from(p.first_touch_cpu[i])).map(|v| v as i32));
        let r = region(t, i64::from(p.region[i]));
        kind.append_option(r.kind);
        path.append_option(r.path);
        site.append_option(r.site);
    }
    c.add("address", address.finish());
    c.add("node", node.finish());
    c.add("page_size", size.finish());
    c.add("region_kind", kind.finish());
    c.add("region_path", path.finish());
    c.add("alloc_site", site.finish());
    c.add("first_touch_time", ft_time.finish());
    c.add("first_touch_tid", ft_tid.finish());
    c.add("first_touch_thread_name", ft_name.finish());
    c.add("first_touch_cpu", ft_cpu.finish());
    c.batch()
}

fn threads(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let th = &t.threads;
    let n = th.tid.len();
    let mut c = Cols::default();
    c.identity(id, n);
    let (mut tid, mut pid) = (Int32Builder::new(), Int32Builder::new());
    let mut name = StringBuilder::new();
    let mut first = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut last = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut migrations = Int64Builder::new();
    for i in 0..n {
        tid.append_value(th.tid[i]);
        pid.append_value(th.pid[i]);
        name.append_value(&th.name[i]);
        first.append_value(id.at(th.first_seen_us[i]));
        last.append_value(id.at(th.last_seen_us[i]));
        migrations.append_option(known(th.migrations[i]));
    }
    c.add("tid", tid.finish());
    c.add("pid", pid.finish());
    c.add("name", name.finish());
    c.add("first_seen", first.finish());
    c.add("last_seen", last.finish());
    c.add("migrations", migrations.finish());
    c.batch()
}

fn thread_placements(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let tp = &t.thread_placements;
    let n = tp.time_us.len();
    let mut c = Cols::default();
    c.identity(id, n);
    let mut time = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let (mut tid, mut cpu, mut node) = (Int32Builder::new(), Int32Builder::new(), Int32Builder::new());
    let mut name = StringBuilder::new();
    for i in 0..n {
        time.append_value(id.at(tp.time_us[i]));
        let th = tp.thread[i] as usize;
        tid.append_option(t.threads.tid.get(th).copied());
        name.append_option(t.threads.name.get(th));
        cpu.append_option(known(i64::from(tp.cpu[i])).map(|v| v as i32));
        node.append_option(known(i64::from(tp.node[i])).map(|v| v as i32));
    }
    c.add("time", time.finish());
    c.add("tid", tid.finish());
    c.add("thread_name", name.finish());
    c.add("cpu", cpu.finish());
    c.add("node", node.finish());
    c.batch()
}

fn region_placements(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let rp = &t.region_placements;
    let n = rp.time_us.len();
    let mut c = Cols::default();
    c.identity(id, n);
    let mut time = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let (mut start, mut end) = (UInt64Builder::new(), UInt64Builder::new());
    let (mut node, mut pages, mut size) = (Int32Builder::new(), Int64Builder::new(), Int64Builder::new());
    let (mut kind, mut path, mut site) = (StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    for i in 0..n {
        time.append_value(id.at(rp.time_us[i]));
        let r = rp.region[i] as usize;
        start.append_option(t.regions.start.get(r).copied());
        end.append_option(t.regions.end.get(r).copied());
        let info = region(t, i64::from(rp.region[i]));
        kind.append_option(info.kind);
        path.append_option(info.path);
        site.append_option(info.site);
        node.append_option(known(i64::from(rp.node[i])).map(|v| v as i32));
        pages.append_value(i64::from(rp.pages[i]));
        size.append_value(i64::from(rp.page_size[i]));
    }
    c.add("time", time.finish());
    c.add("region_start", start.finish());
    c.add("region_end", end.finish());
    c.add("region_kind", kind.finish());
    c.add("region_path", path.finish());
    c.add("alloc_site", site.finish());
    c.add("node", node.finish());
    c.add("pages", pages.finish());
    c.add("page_size", size.finish());
    c.batch()
}

/// A frame's function, file, line and module path; nulls for an index past the tables.
struct FrameInfo<'a> {
    function: Option<&'a str>,
    file: Option<&'a str>,
    line: Option<i32>,
    module: Option<&'a str>,
    build_id: Option<&'a str>,
    module_offset: Option<u64>,
    inlined: Option<bool>,
}

fn frame(t: &TraceData, f: i64) -> FrameInfo<'_> {
    let fr = &t.alloc.frames;
    let Some(f) = usize::try_from(f).ok().filter(|&f| f < fr.module.len()) else {
        return FrameInfo {
            function: None,
            file: None,
            line: None,
            module: None,
            build_id: None,
            module_offset: None,
            inlined: None,
        };
    };
    let m = usize::try_from(fr.module[f]).ok();
    FrameInfo {
        function: fr.function.get(f).and_then(|v| v.as_deref()),
        file: fr.file.get(f).and_then(|v| v.as_deref()),
        line: fr.line.get(f).copied().filter(|&l| l > 0),
        module: m.and_then(|m| t.alloc.modules.path.get(m)).map(String::as_str),
        build_id: m.and_then(|m| t.alloc.modules.build_id.get(m)).map(String::as_str).filter(|b| !b.is_empty()),
        module_offset: fr.module_offset.get(f).copied(),
        inlined: fr.inlined.get(f).map(|&v| v != 0),
    }
}

/// The allocations the shim recorded, each with its allocation site's function, file and line.
fn allocations(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let a = &t.alloc.allocations;
    let n = a.time_us.len();
    let mut c = Cols::default();
    c.identity(id, n);
    let mut time = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let mut end = TimestampMicrosecondBuilder::new().with_timezone("UTC");
    let (mut tid, mut stack, mut line) = (Int32Builder::new(), Int32Builder::new(), Int32Builder::new());
    let (mut op, mut end_op, mut func, mut file, mut module) =
        (StringBuilder::new(), StringBuilder::new(), StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    let (mut address, mut size) = (UInt64Builder::new(), UInt64Builder::new());
    let mut sampled = BooleanBuilder::new();
    let mut weight = Float64Builder::new();
    for i in 0..n {
        time.append_value(id.at(a.time_us[i]));
        end.append_option(known(a.end_us[i]).map(|us| id.at(us)));
        tid.append_option(known(i64::from(a.tid[i])).map(|v| v as i32));
        op.append_value(dict(&a.op, i));
        end_op.append_value(dict(&a.end_op, i));
        address.append_value(a.address[i]);
        size.append_value(a.size[i]);
        sampled.append_value(a.sampled[i] != 0);
        weight.append_value(a.weight_bytes[i]);
        stack.append_option(known(i64::from(a.stack[i])).map(|v| v as i32));
        let f = frame(t, i64::from(a.site[i]));
        func.append_option(f.function);
        file.append_option(f.file);
        line.append_option(f.line);
        module.append_option(f.module);
    }
    c.add("time", time.finish());
    c.add("end_time", end.finish());
    c.add("tid", tid.finish());
    c.add("op", op.finish());
    c.add("end_op", end_op.finish());
    c.add("address", address.finish());
    c.add("size", size.finish());
    c.add("sampled", sampled.finish());
    c.add("weight_bytes", weight.finish());
    c.add("site_function", func.finish());
    c.add("site_file", file.finish());
    c.add("site_line", line.finish());
    c.add("site_module", module.finish());
    c.add("stack", stack.finish());
    c.batch()
}

/// Every stack's frames, innermost (depth 0) first: join samples or allocations on (trace_id, stack).
fn code_frames(t: &TraceData, id: &Identity) -> Result<RecordBatch, String> {
    let st = &t.alloc.stacks;
    let n = st.stack.len();
    let mut c = Cols::default();
    c.identity(id, n);
    let (mut stack, mut depth, mut line) = (Int64Builder::new(), Int32Builder::new(), Int32Builder::new());
    let (mut func, mut file, mut module, mut build) =
        (StringBuilder::new(), StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    let mut offset = UInt64Builder::new();
    let mut inlined = BooleanBuilder::new();
    for i in 0..n {
        stack.append_value(i64::from(st.stack[i]));
        depth.append_value(i32::from(st.depth[i]));
        let f = frame(t, i64::from(st.frame[i]));
        func.append_option(f.function);
        file.append_option(f.file);
        line.append_option(f.line);
        module.append_option(f.module);
        build.append_option(f.build_id);
        offset.append_option(f.module_offset);
        inlined.append_option(f.inlined);
    }
    c.add("stack", stack.finish());
    c.add("depth", depth.finish());
    c.add("function", func.finish());
    c.add("file", file.finish());
    c.add("line", line.finish());
    c.add("module", module.finish());
    c.add("build_id", build.finish());
    c.add("module_offset", offset.finish());
    c.add("inlined", inlined.finish());
    c.batch()
}

/// Writes one table as a Snappy-compressed Parquet file: into `PATH.tmp`, then renamed over `path`
/// (a reader never sees half a file; an export of the same trace again replaces it).
pub fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<(), String> {
    let dir = path.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?;
    let tmp = path.with_extension("parquet.tmp");
    let result = (|| {
        let file = File::create(&tmp).map_err(|e| e.to_string())?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
        w.write(batch).map_err(|e| e.to_string())?;
        w.close().map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, path).map_err(|e| e.to_string())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType, UInt64Type};
    use arrow_array::Array;
    use numascope_core::trace::fixture::fixture_trace;

    fn exported() -> (TraceData, Vec<Table>) {
        let t = fixture_trace();
        let id = Identity::new("0123456789abcdef".into(), "db-07".into(), &t.manifest);
        let tables = export_tables(&t, &id).expect("export");
        (t, tables)
    }

    fn table<'a>(tables: &'a [Table], name: &str) -> &'a RecordBatch {
        &tables.iter().find(|t| t.name == name).unwrap().batch
    }

    #[test]
    fn samples_carry_what_their_indices_point_at_and_nulls_where_an_index_is_past_its_table() {
        let (t, tables) = exported();
        let s = table(&tables, "samples");
        assert_eq!(s.num_rows(), 3);
        let tid = s.column_by_name("tid").unwrap().as_primitive::<Int32Type>();
        // row 1: thread 1; row 2: thread 4294967295, past the threads table
        assert_eq!((tid.value(1), tid.is_null(2)), (4243, true));
        let name = s.column_by_name("thread_name").unwrap().as_string::<i32>();
        assert_eq!(name.value(1), "wörker-ü 線程");
        let addr = s.column_by_name("address").unwrap().as_primitive::<UInt64Type>();
        assert!(addr.is_null(0), "page -1: no address");
        assert_eq!(addr.value(1), 4095, "page 0 (address 0) + offset 4095");
        assert!(addr.is_null(2), "page past the pages table");
        let kind = s.column_by_name("region_kind").unwrap().as_string::<i32>();
        assert!(kind.is_null(1), "page 0 is in no region");
        let col_i32 = |c: &str| s.column_by_name(c).unwrap().as_primitive::<Int32Type>().clone();
        let (cpu_node, page_node) = (col_i32("cpu_node"), col_i32("page_node"));
        assert_eq!((cpu_node.value(1), page_node.value(1)), (0, 1));
        assert!(cpu_node.is_null(2), "cpu 32767 is on no node");
        assert!(!s.column_by_name("local").unwrap().as_boolean().value(1));
        let ns = s.column_by_name("latency_ns").unwrap().as_primitive::<Float64Type>();
        assert!(ns.is_null(0), "0 cycles: not measured");
        assert!((ns.value(1) - 123_456.0 / 2.45).abs() < 1e-9);
        let hitm = s.column_by_name("hitm").unwrap().as_string::<i32>();
        assert_eq!((hitm.is_null(0), hitm.value(1), hitm.value(2)), (true, "remote-hitm", "none"));
        let time = s.column_by_name("time").unwrap().as_primitive::<TimestampMicrosecondType>();
        assert_eq!(time.value(2), t.manifest.capture.start_unix_ms as i64 * 1000 + 9_007_199_254_740_991);
        let weight = s.column_by_name("weight").unwrap().as_primitive::<Int64Type>();
        assert_eq!(weight.value(1), 10_000);
        let trace = s.column_by_name("trace_id").unwrap().as_string::<i32>();
        let program = s.column_by_name("program").unwrap().as_string::<i32>();
        assert_eq!((trace.value(0), program.value(2)), ("0123456789abcdef", "app"));
    }

    #[test]
    fn every_table_has_a_row_per_trace_row_and_hostile_indices_give_nulls() {
        let (t, tables) = exported();
        let rows = |n: &str| table(&tables, n).num_rows();
        assert_eq!(rows("traces"), 1);
        assert_eq!(rows("pages"), t.pages.address.len());
        assert_eq!(rows("threads"), t.threads.tid.len());
        assert_eq!(rows("thread_placements"), t.thread_placements.time_us.len());
        assert_eq!(rows("region_placements"), t.region_placements.time_us.len());
        assert_eq!(rows("allocations"), t.alloc.allocations.time_us.len());
        assert_eq!(rows("code_frames"), t.alloc.stacks.stack.len());
        let p = table(&tables, "pages");
        let kind = p.column_by_name("region_kind").unwrap().as_string::<i32>();
        assert_eq!((kind.value(1), kind.value(2), kind.is_null(3)), ("heap", "file", true));
        let site = p.column_by_name("alloc_site").unwrap().as_string::<i32>();
        assert_eq!((site.value(1), site.is_null(2)), ("main.c:42 (alloc_buffers)", true));
        let ft = p.column_by_name("first_touch_tid").unwrap().as_primitive::<Int32Type>();
        assert_eq!((ft.is_null(0), ft.value(1), ft.is_null(3)), (true, 4242, true));
        let rp = table(&tables, "region_placements");
        let start = rp.column_by_name("region_start").unwrap().as_primitive::<UInt64Type>();
        assert!(start.is_null(2), "region 4294967295 is past the regions table");
    }

    #[test]
    fn a_written_table_reads_back_with_its_rows_and_schema() {
        let (_, tables) = exported();
        let dir = std::env::temp_dir().join(format!("numascope-export-test-{}", std::process::id()));
        let path = dir.join("samples/host=db-07/date=2026-11-21/0123456789abcdef.parquet");
        let s = table(&tables, "samples");
        write_parquet(&path, s).unwrap();
        let file = File::open(&path).unwrap();
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
        let batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
        assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
        assert_eq!(batches[0].schema().fields().len(), s.schema().fields().len());
        assert!(!path.with_extension("parquet.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
