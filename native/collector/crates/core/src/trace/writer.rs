//! Writes a [`TraceData`] as a `.numascope` file: a ZIP holding `manifest.json` (deflated) and
//! one Arrow IPC file per table (stored, 64-byte aligned).

use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::{Int16Type, Int8Type};
use arrow_array::{
    ArrayRef, DictionaryArray, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray,
    UInt16Array, UInt32Array, UInt64Array,
};
use arrow_ipc::writer::FileWriter;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::model::*;
use super::schema::table_schema;
use super::TraceError;

/// Rows per Arrow record batch.
const BATCH_ROWS: usize = 65_536;

fn dict8(col: &DictColumn, table: &str, column: &str) -> Result<ArrayRef, TraceError> {
    if col.values.len() > 128 {
        return Err(TraceError::Invalid(format!(
            "{table}.{column}: {} distinct strings do not fit a Dictionary<Int8, Utf8>",
            col.values.len()
        )));
    }
    let keys = Int8Array::from_iter_values(col.keys.iter().map(|&k| k as i8));
    let values = Arc::new(StringArray::from_iter_values(col.values.iter()));
    Ok(Arc::new(DictionaryArray::<Int8Type>::try_new(keys, values)?))
}

fn dict16(col: &DictColumn, table: &str, column: &str) -> Result<ArrayRef, TraceError> {
    if col.values.len() > i16::MAX as usize + 1 {
        return Err(TraceError::Invalid(format!(
            "{table}.{column}: {} distinct strings do not fit a Dictionary<Int16, Utf8>",
            col.values.len()
        )));
    }
    let keys = Int16Array::from_iter_values(col.keys.iter().map(|&k| k as i16));
    let values = Arc::new(StringArray::from_iter_values(col.values.iter()));
    Ok(Arc::new(DictionaryArray::<Int16Type>::try_new(keys, values)?))
}

fn check_len(table: &str, columns: &[(&str, usize)]) -> Result<usize, TraceError> {
    let n = columns[0].1;
    for (name, len) in columns {
        if *len != n {
            return Err(TraceError::Invalid(format!(
                "{table}: column {name} has {len} rows but {} has {n}",
                columns[0].0
            )));
        }
    }
    Ok(n)
}

/// Builds the Arrow columns of one table, checking that all columns have the same length.
pub fn table_columns(trace: &TraceData, table: &str) -> Result<Vec<ArrayRef>, TraceError> {
    let cols: Vec<ArrayRef> = match table {
        "samples" => {
            let s = &trace.samples;
            check_len(
                table,
                &[
                    ("time_us", s.time_us.len()),
                    ("thread", s.thread.len()),
                    ("cpu", s.cpu.len()),
                    ("page", s.page.len()),
                    ("offset", s.offset.len()),
                    ("op", s.op.len()),
                    ("event", s.event.len()),
                    ("data_source", s.data_source.len()),
                    ("hops", s.hops.len()),
                    ("node", s.node.len()),
                    ("latency_cycles", s.latency_cycles.len()),
                    ("weight", s.weight.len()),
                ],
            )?;
            vec![
                Arc::new(UInt32Array::from(s.time_us.clone())),
                Arc::new(UInt32Array::from(s.thread.clone())),
                Arc::new(Int16Array::from(s.cpu.clone())),
                Arc::new(Int32Array::from(s.page.clone())),
                Arc::new(UInt16Array::from(s.offset.clone())),
                dict8(&s.op, table, "op")?,
                dict8(&s.event, table, "event")?,
                dict8(&s.data_source, table, "data_source")?,
                Arc::new(Int8Array::from(s.hops.clone())),
                Arc::new(Int8Array::from(s.node.clone())),
                Arc::new(UInt32Array::from(s.latency_cycles.clone())),
                Arc::new(UInt32Array::from(s.weight.clone())),
            ]
        }
        "pages" => {
            let p = &trace.pages;
            check_len(
                table,
                &[
                    ("address", p.address.len()),
                    ("region", p.region.len()),
                    ("node", p.node.len()),
                    ("page_size", p.page_size.len()),
                    ("first_touch_us", p.first_touch_us.len()),
                    ("first_touch_thread", p.first_touch_thread.len()),
                    ("first_touch_cpu", p.first_touch_cpu.len()),
                ],
            )?;
            vec![
                Arc::new(UInt64Array::from(p.address.clone())),
                Arc::new(Int32Array::from(p.region.clone())),
                Arc::new(Int8Array::from(p.node.clone())),
                Arc::new(UInt32Array::from(p.page_size.clone())),
                Arc::new(Int64Array::from(p.first_touch_us.clone())),
                Arc::new(Int32Array::from(p.first_touch_thread.clone())),
                Arc::new(Int16Array::from(p.first_touch_cpu.clone())),
            ]
        }
        "threads" => {
            let t = &trace.threads;
            check_len(
                table,
                &[
                    ("tid", t.tid.len()),
                    ("pid", t.pid.len()),
                    ("name", t.name.len()),
                    ("first_seen_us", t.first_seen_us.len()),
                    ("last_seen_us", t.last_seen_us.len()),
                    ("migrations", t.migrations.len()),
                ],
            )?;
            vec![
                Arc::new(Int32Array::from(t.tid.clone())),
                Arc::new(Int32Array::from(t.pid.clone())),
                Arc::new(StringArray::from_iter_values(t.name.iter())),
                Arc::new(UInt32Array::from(t.first_seen_us.clone())),
                Arc::new(UInt32Array::from(t.last_seen_us.clone())),
                Arc::new(Int64Array::from(t.migrations.clone())),
            ]
        }
        "regions" => {
            let r = &trace.regions;
            check_len(
                table,
                &[
                    ("start", r.start.len()),
                    ("end", r.end.len()),
                    ("kind", r.kind.len()),
                    ("path", r.path.len()),
                    ("policy", r.policy.len()),
                    ("alloc_site", r.alloc_site.len()),
                ],
            )?;
            vec![
                Arc::new(UInt64Array::from(r.start.clone())),
                Arc::new(UInt64Array::from(r.end.clone())),
                dict8(&r.kind, table, "kind")?,
                Arc::new(StringArray::from(r.path.iter().map(|p| p.as_deref()).collect::<Vec<_>>())),
                Arc::new(StringArray::from_iter_values(r.policy.iter())),
                Arc::new(StringArray::from(r.alloc_site.iter().map(|p| p.as_deref()).collect::<Vec<_>>())),
            ]
        }
        "thread_placements" => {
            let t = &trace.thread_placements;
            check_len(
                table,
                &[
                    ("time_us", t.time_us.len()),
                    ("thread", t.thread.len()),
                    ("cpu", t.cpu.len()),
                    ("node", t.node.len()),
                ],
            )?;
            vec![
                Arc::new(UInt32Array::from(t.time_us.clone())),
                Arc::new(UInt32Array::from(t.thread.clone())),
                Arc::new(Int16Array::from(t.cpu.clone())),
                Arc::new(Int8Array::from(t.node.clone())),
            ]
        }
        "region_placements" => {
            let r = &trace.region_placements;
            check_len(
                table,
                &[
                    ("time_us", r.time_us.len()),
                    ("region", r.region.len()),
                    ("node", r.node.len()),
                    ("pages", r.pages.len()),
                    ("page_size", r.page_size.len()),
                ],
            )?;
            vec![
                Arc::new(UInt32Array::from(r.time_us.clone())),
                Arc::new(UInt32Array::from(r.region.clone())),
                Arc::new(Int8Array::from(r.node.clone())),
                Arc::new(UInt32Array::from(r.pages.clone())),
                Arc::new(UInt32Array::from(r.page_size.clone())),
            ]
        }
        "counters" => {
            let c = &trace.counters;
            check_len(
                table,
                &[
                    ("time_us", c.time_us.len()),
                    ("counter", c.counter.len()),
                    ("scope", c.scope.len()),
                    ("scope_id", c.scope_id.len()),
                    ("value", c.value.len()),
                ],
            )?;
            vec![
                Arc::new(UInt32Array::from(c.time_us.clone())),
                dict16(&c.counter, table, "counter")?,
                dict8(&c.scope, table, "scope")?,
                Arc::new(Int32Array::from(c.scope_id.clone())),
                Arc::new(Float64Array::from(c.value.clone())),
            ]
        }
        "events" => {
            let e = &trace.events;
            check_len(
                table,
                &[
                    ("time_us", e.time_us.len()),
                    ("kind", e.kind.len()),
                    ("thread", e.thread.len()),
                    ("value", e.value.len()),
                    ("detail", e.detail.len()),
                ],
            )?;
            vec![
                Arc::new(UInt32Array::from(e.time_us.clone())),
                dict8(&e.kind, table, "kind")?,
                Arc::new(Int32Array::from(e.thread.clone())),
                Arc::new(Int64Array::from(e.value.clone())),
                Arc::new(StringArray::from_iter_values(e.detail.iter())),
            ]
        }
        other => return Err(TraceError::Invalid(format!("unknown table {other}"))),
    };
    Ok(cols)
}

/// Encodes one table as an Arrow IPC file (magic `ARROW1`), in batches of 65,536 rows.
pub fn table_ipc_bytes(trace: &TraceData, table: &str) -> Result<(Vec<u8>, u64), TraceError> {
    let schema = table_schema(table).ok_or_else(|| TraceError::Invalid(format!("unknown table {table}")))?;
    let columns = table_columns(trace, table)?;
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let rows = batch.num_rows();
    let mut writer = FileWriter::try_new(Vec::new(), &schema)?;
    if rows == 0 {
        writer.write(&batch)?;
    }
    let mut offset = 0;
    while offset < rows {
        let len = BATCH_ROWS.min(rows - offset);
        writer.write(&batch.slice(offset, len))?;
        offset += len;
    }
    writer.finish()?;
    Ok((writer.into_inner()?, rows as u64))
}

/// Fills `manifest.tables` and `capture.sampleCount` from the tables.
pub fn finalize_manifest(trace: &mut TraceData) {
    let rows = |t: &str| -> u64 {
        (match t {
            "samples" => trace.samples.time_us.len(),
            "pages" => trace.pages.address.len(),
            "threads" => trace.threads.tid.len(),
            "regions" => trace.regions.start.len(),
            "thread_placements" => trace.thread_placements.time_us.len(),
            "region_placements" => trace.region_placements.time_us.len(),
            "counters" => trace.counters.time_us.len(),
            "events" => trace.events.time_us.len(),
            _ => 0,
        }) as u64
    };
    let tables = TABLE_NAMES
        .iter()
        .map(|t| TableEntry { name: t.to_string(), entry: format!("{t}.arrow"), rows: rows(t) })
        .collect();
    trace.manifest.tables = tables;
    trace.manifest.capture.sample_count = trace.samples.time_us.len() as u64;
}

/// Writes the trace as a ZIP to any seekable writer. Updates `manifest.tables` and
/// `capture.sampleCount` first.
pub fn write_trace_to<W: Write + Seek>(trace: &mut TraceData, out: W) -> Result<W, TraceError> {
    finalize_manifest(trace);
    let mut zip = ZipWriter::new(out);
    let manifest = serde_json::to_vec_pretty(&trace.manifest)?;
    let deflated = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    zip.start_file("manifest.json", deflated)?;
    zip.write_all(&manifest)?;
    let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored).with_alignment(64);
    for table in TABLE_NAMES {
        let (bytes, _rows) = table_ipc_bytes(trace, table)?;
        if bytes.len() as u64 >= u32::MAX as u64 {
            return Err(TraceError::Invalid(format!(
                "table {table} is {} bytes; format v1 has no ZIP64 (entries must stay under 4 GiB)",
                bytes.len()
            )));
        }
        zip.start_file(format!("{table}.arrow"), stored)?;
        zip.write_all(&bytes)?;
    }
    Ok(zip.finish()?)
}

/// Writes the trace to `path` (via a temporary file renamed into place).
pub fn write_trace(trace: &mut TraceData, path: &Path) -> Result<u64, TraceError> {
    let tmp = path.with_extension("numascope.partial");
    let file = File::create(&tmp).map_err(|e| TraceError::io(&tmp, e))?;
    let w = write_trace_to(trace, BufWriter::new(file))?;
    let file = w.into_inner().map_err(|e| TraceError::io(&tmp, e.into_error()))?;
    file.sync_all().map_err(|e| TraceError::io(&tmp, e))?;
    let size = file.metadata().map_err(|e| TraceError::io(&tmp, e))?.len();
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| TraceError::io(path, e))?;
    Ok(size)
}
