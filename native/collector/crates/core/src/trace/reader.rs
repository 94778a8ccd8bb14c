//! Reads a `.numascope` file back: the manifest and every table, with exact type checks. A v1
//! file (no allocation-site tables) is read with those tables empty; a file without an optional
//! column (schema::OPTIONAL_COLUMNS, e.g. `regions.prot`) with that column all null; the uint32
//! time columns of a version 1 to 3 file widened to int64 (schema::TIME_COLUMNS).

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ipc::reader::FileReader;
use arrow_schema::DataType;

pub use super::columns::{col_dict, col_f64, col_i16, col_i32, col_i64, col_i8, col_str, col_u16, col_u32, col_u64};
use super::model::*;
use super::schema::{is_optional_column, is_time_column, table_schema};
use super::TraceError;

/// One table of a current-version file as read: all batches concatenated into one.
pub fn read_table_bytes(table: &str, bytes: Vec<u8>) -> Result<RecordBatch, TraceError> {
    read_table_of_version(table, bytes, FORMAT_VERSION)
}

/// A v1 to v3 file's time column (uint32 µs) as the int64 column of v4.
fn widen_time(c: &ArrayRef) -> ArrayRef {
    let a = c.as_primitive::<UInt32Type>();
    std::sync::Arc::new(arrow_array::Int64Array::from_iter_values(a.values().iter().map(|&t| i64::from(t))))
}

/// One table of a file of format `version` as read, in the current version's types.
pub fn read_table_of_version(table: &str, bytes: Vec<u8>, version: u32) -> Result<RecordBatch, TraceError> {
    let expected = table_schema(table).ok_or_else(|| TraceError::Invalid(format!("unknown table {table}")))?;
    super::compressed::check_compressed_buffers(table, &bytes)?;
    let reader = FileReader::try_new(Cursor::new(bytes), None)?;
    let schema = reader.schema();
    for field in expected.fields() {
        let Ok(actual) = schema.field_with_name(field.name()) else {
            if is_optional_column(table, field.name()) {
                continue; // an older file: filled with nulls below
            }
            return Err(TraceError::Invalid(format!("table {table}: column {} is missing", field.name())));
        };
        let widened = version < 4 && is_time_column(table, field.name()) && actual.data_type() == &DataType::UInt32;
        if actual.data_type() != field.data_type() && !widened {
            return Err(TraceError::Invalid(format!(
                "table {table}: column {} has type {} but the format requires {}",
                field.name(),
                actual.data_type(),
                field.data_type()
            )));
        }
    }
    let mut batches = Vec::new();
    for b in reader {
        batches.push(b?);
    }
    // Project to the expected column order, then concatenate.
    let projected: Vec<RecordBatch> = batches
        .iter()
        .map(|b| {
            let cols: Vec<ArrayRef> = expected
                .fields()
                .iter()
                .map(|f| match b.column_by_name(f.name()) {
                    Some(c) if c.data_type() == &DataType::UInt32 && f.data_type() == &DataType::Int64 => widen_time(c),
                    Some(c) => c.clone(),
                    // A non-nullable column the file predates (`samples.stack`, `samples.hitm`): -1, unknown.
                    None if !f.is_nullable() && f.data_type() == &DataType::Int32 => {
                        std::sync::Arc::new(arrow_array::Int32Array::from(vec![-1; b.num_rows()])) as ArrayRef
                    }
                    None if !f.is_nullable() && f.data_type() == &DataType::Int8 => {
                        std::sync::Arc::new(arrow_array::Int8Array::from(vec![-1i8; b.num_rows()])) as ArrayRef
                    }
                    None => arrow_array::new_null_array(f.data_type(), b.num_rows()),
                })
                .collect();
            RecordBatch::try_new(expected.clone(), cols)
        })
        .collect::<Result<_, _>>()?;
    Ok(arrow_select::concat::concat_batches(&expected, &projected)?)
}

/// A trace file opened for reading: the manifest and each table as one record batch.
pub struct TraceFile {
    pub manifest: Manifest,
    pub manifest_json: serde_json::Value,
    pub tables: std::collections::BTreeMap<String, RecordBatch>,
}

impl TraceFile {
    pub fn table(&self, name: &str) -> &RecordBatch {
        &self.tables[name]
    }
}

/// Opens a trace from any reader.
pub fn read_trace_from<R: Read + Seek>(input: R) -> Result<TraceFile, TraceError> {
    let mut zip = zip::ZipArchive::new(input)?;
    let mut manifest_bytes = Vec::new();
    zip.by_name("manifest.json")
        .map_err(|_| TraceError::Invalid("no manifest.json in the ZIP: not a numascope trace".into()))?
        .read_to_end(&mut manifest_bytes)?;
    let manifest_json: serde_json::Value = serde_json::from_slice(&manifest_bytes)?;
    let format = manifest_json.get("format").and_then(|v| v.as_str()).unwrap_or("");
    if format != FORMAT_NAME {
        return Err(TraceError::Invalid(format!(
            "manifest.json format is {format:?}, expected {FORMAT_NAME:?}: not a numascope trace"
        )));
    }
    let version = manifest_json.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version > FORMAT_VERSION as u64 {
        return Err(TraceError::Invalid(format!(
            "trace format version {version} is newer than version {FORMAT_VERSION}, the newest this \
             numascope reads: update numascope"
        )));
    }
    let manifest: Manifest = serde_json::from_value(manifest_json.clone())?;
    let mut tables = std::collections::BTreeMap::new();
    let names: &[&str] = if version < 2 { &V1_TABLE_NAMES } else { &TABLE_NAMES };
    for &table in names {
        // A v2 file keeps the shared code tables under their allocation-site names.
        let stored = match V2_RENAMED_TABLES.iter().find(|(now, _)| *now == table) {
            Some((_, v2)) if version < 3 => v2,
            _ => table,
        };
        let entry = format!("{stored}.arrow");
        let mut bytes = Vec::new();
        zip.by_name(&entry)
            .map_err(|_| TraceError::Invalid(format!("required table {entry} is missing")))?
            .read_to_end(&mut bytes)?;
        tables.insert(table.to_string(), read_table_of_version(table, bytes, version as u32)?);
    }
    Ok(TraceFile { manifest, manifest_json, tables })
}

/// Opens a trace file.
pub fn read_trace(path: &Path) -> Result<TraceFile, TraceError> {
    let f = File::open(path).map_err(|e| TraceError::io(path, e))?;
    read_trace_from(BufReader::new(f))
}

impl TraceFile {
    /// Converts the tables back into a [`TraceData`] (for round-trip tests and tools).
    pub fn to_trace_data(&self) -> TraceData {
        let s = self.table("samples");
        let p = self.table("pages");
        let t = self.table("threads");
        let r = self.table("regions");
        let tp = self.table("thread_placements");
        let rp = self.table("region_placements");
        let c = self.table("counters");
        let e = self.table("events");
        TraceData {
            manifest: self.manifest.clone(),
            samples: Samples {
                time_us: col_i64(s, "time_us"),
                thread: col_u32(s, "thread"),
                cpu: col_i16(s, "cpu"),
                page: col_i32(s, "page"),
                offset: col_u16(s, "offset"),
                op: col_dict(s, "op"),
                event: col_dict(s, "event"),
                data_source: col_dict(s, "data_source"),
                hops: col_i8(s, "hops"),
                node: col_i8(s, "node"),
                latency_cycles: col_u32(s, "latency_cycles"),
                weight: col_u32(s, "weight"),
                // A v2 file has no stacks: every sample's is -1 (filled when read).
                stack: col_i32(s, "stack"),
                hitm: col_i8(s, "hitm"),
            },
            pages: Pages {
                address: col_u64(p, "address"),
                region: col_i32(p, "region"),
                node: col_i8(p, "node"),
                page_size: col_u32(p, "page_size"),
                first_touch_us: col_i64(p, "first_touch_us"),
                first_touch_thread: col_i32(p, "first_touch_thread"),
                first_touch_cpu: col_i16(p, "first_touch_cpu"),
            },
            threads: Threads {
                tid: col_i32(t, "tid"),
                pid: col_i32(t, "pid"),
                name: col_str(t, "name").into_iter().map(|s| s.unwrap_or_default()).collect(),
                first_seen_us: col_i64(t, "first_seen_us"),
                last_seen_us: col_i64(t, "last_seen_us"),
                migrations: col_i64(t, "migrations"),
            },
            regions: Regions {
                start: col_u64(r, "start"),
                end: col_u64(r, "end"),
                kind: col_dict(r, "kind"),
                path: col_str(r, "path"),
                policy: col_str(r, "policy").into_iter().map(|s| s.unwrap_or_default()).collect(),
                alloc_site: col_str(r, "alloc_site"),
                prot: col_str(r, "prot"),
            },
            thread_placements: ThreadPlacements {
                time_us: col_i64(tp, "time_us"),
                thread: col_u32(tp, "thread"),
                cpu: col_i16(tp, "cpu"),
                node: col_i8(tp, "node"),
            },
            region_placements: RegionPlacements {
                time_us: col_i64(rp, "time_us"),
                region: col_u32(rp, "region"),
                node: col_i8(rp, "node"),
                pages: col_u32(rp, "pages"),
                page_size: col_u32(rp, "page_size"),
            },
            counters: Counters {
                time_us: col_i64(c, "time_us"),
                counter: col_dict(c, "counter"),
                scope: col_dict(c, "scope"),
                scope_id: col_i32(c, "scope_id"),
                value: col_f64(c, "value"),
            },
            events: Events {
                time_us: col_i64(e, "time_us"),
                kind: col_dict(e, "kind"),
                thread: col_i32(e, "thread"),
                value: col_i64(e, "value"),
                detail: col_str(e, "detail").into_iter().map(|s| s.unwrap_or_default()).collect(),
            },
            alloc: super::alloc::from_batches(|name| self.tables.get(name).cloned()),
        }
    }
}
