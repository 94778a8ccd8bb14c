//! Writer -> reader round trip: every table, every column, every type as docs/trace-format.md
//! specifies.

mod common;

use std::io::Cursor;

use arrow_schema::DataType;
use numascope_core::fixture::{expected_json, fixture_trace, write_fixture};
use numascope_core::trace::reader::{read_trace, read_trace_from};
use numascope_core::trace::schema::table_schema;
use numascope_core::trace::writer::{table_ipc_bytes, write_trace_to};
use numascope_core::trace::TABLE_NAMES;

fn dict(k: DataType) -> DataType {
    DataType::Dictionary(Box::new(k), Box::new(DataType::Utf8))
}

/// The spec's column list, written out independently of schema.rs.
fn spec() -> Vec<(&'static str, Vec<(&'static str, DataType)>)> {
    use DataType::*;
    vec![
        (
            "samples",
            vec![
                ("time_us", Int64),
                ("thread", UInt32),
                ("cpu", Int16),
                ("page", Int32),
                ("offset", UInt16),
                ("op", dict(Int8)),
                ("event", dict(Int8)),
                ("data_source", dict(Int8)),
                ("hops", Int8),
                ("node", Int8),
                ("latency_cycles", UInt32),
                ("weight", UInt32),
                ("stack", Int32),
                ("hitm", Int8),
            ],
        ),
        (
            "pages",
            vec![
                ("address", UInt64),
                ("region", Int32),
                ("node", Int8),
                ("page_size", UInt32),
                ("first_touch_us", Int64),
                ("first_touch_thread", Int32),
                ("first_touch_cpu", Int16),
            ],
        ),
        (
            "threads",
            vec![
                ("tid", Int32),
                ("pid", Int32),
                ("name", Utf8),
                ("first_seen_us", Int64),
                ("last_seen_us", Int64),
                ("migrations", Int64),
            ],
        ),
        (
            "regions",
            vec![
                ("start", UInt64),
                ("end", UInt64),
                ("kind", dict(Int8)),
                ("path", Utf8),
                ("policy", Utf8),
                ("alloc_site", Utf8),
                ("prot", Utf8),
            ],
        ),
        ("thread_placements", vec![("time_us", Int64), ("thread", UInt32), ("cpu", Int16), ("node", Int8)]),
        (
            "region_placements",
            vec![("time_us", Int64), ("region", UInt32), ("node", Int8), ("pages", UInt32), ("page_size", UInt32)],
        ),
        (
            "counters",
            vec![
                ("time_us", Int64),
                ("counter", dict(Int16)),
                ("scope", dict(Int8)),
                ("scope_id", Int32),
                ("value", Float64),
            ],
        ),
        (
            "events",
            vec![("time_us", Int64), ("kind", dict(Int8)), ("thread", Int32), ("value", Int64), ("detail", Utf8)],
        ),
        (
            "allocations",
            vec![
                ("time_us", Int64),
                ("end_us", Int64),
                ("thread", Int32),
                ("tid", Int32),
                ("op", dict(Int8)),
                ("end_op", dict(Int8)),
                ("address", UInt64),
                ("size", UInt64),
                ("sampled", Int8),
                ("weight_bytes", Float64),
                ("stack", Int32),
                ("site", Int32),
                ("region", Int32),
            ],
        ),
        ("stacks", vec![("stack", UInt32), ("depth", UInt16), ("frame", UInt32)]),
        (
            "frames",
            vec![
                ("module", Int32),
                ("module_offset", UInt64),
                ("function", Utf8),
                ("function_offset", Int64),
                ("file", Utf8),
                ("line", Int32),
                ("col", Int16),
                ("inlined", Int8),
            ],
        ),
        ("modules", vec![("path", Utf8), ("build_id", Utf8)]),
    ]
}

#[test]
fn schemas_match_the_spec() {
    let spec = spec();
    assert_eq!(spec.iter().map(|(t, _)| *t).collect::<Vec<_>>(), TABLE_NAMES.to_vec());
    for (table, cols) in spec {
        let s = table_schema(table).unwrap();
        let got: Vec<(String, DataType)> =
            s.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect();
        let want: Vec<(String, DataType)> = cols.into_iter().map(|(n, t)| (n.to_string(), t)).collect();
        assert_eq!(got, want, "table {table}");
    }
}

#[test]
fn fixture_round_trip_in_memory() {
    let mut t = fixture_trace();
    let buf = write_trace_to(&mut t, Cursor::new(Vec::new())).unwrap().into_inner();
    let f = read_trace_from(Cursor::new(buf.clone())).unwrap();
    // Every column's Arrow type is the spec's.
    for (table, cols) in spec() {
        let b = f.table(table);
        for (name, ty) in cols {
            assert_eq!(b.column_by_name(name).unwrap().data_type(), &ty, "{table}.{name}");
        }
    }
    let back = f.to_trace_data();
    assert_eq!(back, t);
    assert_eq!(f.manifest.tables.len(), 12);
    assert_eq!(f.manifest.capture.sample_count, 3);
    // Nullable columns really hold nulls.
    assert_eq!(back.regions.path[0], None);
    assert_eq!(back.regions.alloc_site[1], None);
    assert_eq!(back.regions.prot, vec![Some("rw-p".to_string()), Some("r--s".to_string()), None]);
    // u64 above 2^53 survive.
    assert!(back.pages.address.contains(&0xffff_ffff_ffff_f000));
    assert!(back.regions.end.contains(&u64::MAX));
    // Manifest JSON spelling.
    let m = &f.manifest_json;
    assert_eq!(m["format"], "numascope-trace");
    assert_eq!(m["version"], 4);
    assert_eq!(m["host"], "fixture-host");
    assert_eq!(m["traceId"], "0123456789abcdef0123456789abcdef");
    assert_eq!(m["capture"]["startMonotonicNs"], "18446744073709551615");
    assert!(m["appliedPlans"].is_array());
    assert!(m["machine"]["links"][0].get("capacityGBps").is_some());
    assert_eq!(m["machine"]["routes"]["0->1"][0], 0);
}

#[test]
fn zip_layout_stored_and_aligned() {
    let mut t = fixture_trace();
    let buf = write_trace_to(&mut t, Cursor::new(Vec::new())).unwrap().into_inner();
    let mut z = zip::ZipArchive::new(Cursor::new(buf.clone())).unwrap();
    let names: Vec<String> = (0..z.len()).map(|i| z.by_index(i).unwrap().name().unwrap().to_string()).collect();
    assert_eq!(names[0], "manifest.json");
    for table in TABLE_NAMES {
        let entry = format!("{table}.arrow");
        let f = z.by_name(&entry).unwrap();
        assert_eq!(f.compression(), zip::CompressionMethod::Stored, "{entry} must be stored");
        let start = f.data_start().unwrap();
        assert_eq!(start % 64, 0, "{entry} data must be 64-byte aligned");
        let len = f.size() as usize;
        let data = &buf[start as usize..start as usize + len];
        assert_eq!(&data[..6], b"ARROW1", "{entry} is an Arrow IPC file");
        assert_eq!(&data[len - 6..], b"ARROW1");
    }
    assert_eq!(z.by_name("manifest.json").unwrap().compression(), zip::CompressionMethod::Deflated);
}

#[test]
fn empty_tables_and_many_batches() {
    let mut t = fixture_trace();
    t.events = Default::default();
    // 200k samples: several 65,536-row batches sharing one dictionary.
    let n = 200_000;
    let s = &mut t.samples;
    *s = Default::default();
    for i in 0..n {
        s.time_us.push(i as i64);
        s.thread.push((i % 7) as u32);
        s.cpu.push((i % 3) as i16 - 1);
        s.page.push(i as i32);
        s.offset.push((i % 4096) as u16);
        s.op.push(["load", "store", "fault"][i % 3]);
        s.event.push("page-fault");
        s.data_source.push(["unknown", "l1"][i % 2]);
        s.hops.push(-1);
        s.node.push((i % 2) as i8);
        s.latency_cycles.push(0);
        s.weight.push(1);
        s.stack.push(-1);
        s.hitm.push(-1);
    }
    let (bytes, rows) = table_ipc_bytes(&t, "samples").unwrap();
    assert_eq!(rows, n as u64);
    let reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None).unwrap();
    assert_eq!(reader.num_batches(), 4);
    let buf = write_trace_to(&mut t, Cursor::new(Vec::new())).unwrap().into_inner();
    let back = read_trace_from(Cursor::new(buf)).unwrap().to_trace_data();
    assert_eq!(back, t);
    assert_eq!(back.events.time_us.len(), 0);
}

#[test]
fn reader_rejects_newer_versions_and_wrong_types() {
    let mut t = fixture_trace();
    t.manifest.version = 5;
    let buf = write_trace_to(&mut t, Cursor::new(Vec::new())).unwrap().into_inner();
    let err = read_trace_from(Cursor::new(buf)).err().expect("version 5 must be refused").to_string();
    assert!(err.contains("version 5") && err.contains("version 4") && err.contains("update numascope"), "{err}");

    // A table with a wrong column type is rejected naming table, column and both types.
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new("tid", DataType::Int64, false)]));
    let batch =
        arrow_array::RecordBatch::try_new(schema.clone(), vec![Arc::new(arrow_array::Int64Array::from(vec![1i64]))])
            .unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &schema).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    let err =
        numascope_core::trace::reader::read_table_bytes("threads", w.into_inner().unwrap()).err().unwrap().to_string();
    assert!(err.contains("threads") && err.contains("tid") && err.contains("Int64") && err.contains("Int32"), "{err}");
}

/// A version 3 file's uint32 time columns read as v4's int64, values unchanged; a v4 file with a
/// uint32 time column is refused like any other wrong type.
#[test]
fn version_3_time_columns_are_widened() {
    use numascope_core::trace::reader::read_table_of_version;
    use std::sync::Arc;
    let fields = vec![
        arrow_schema::Field::new("time_us", DataType::UInt32, false),
        arrow_schema::Field::new("thread", DataType::UInt32, false),
        arrow_schema::Field::new("cpu", DataType::Int16, false),
        arrow_schema::Field::new("node", DataType::Int8, false),
    ];
    let schema = Arc::new(arrow_schema::Schema::new(fields));
    let cols: Vec<arrow_array::ArrayRef> = vec![
        Arc::new(arrow_array::UInt32Array::from(vec![0u32, 4_294_967_295])),
        Arc::new(arrow_array::UInt32Array::from(vec![0u32, 0])),
        Arc::new(arrow_array::Int16Array::from(vec![0i16, 1])),
        Arc::new(arrow_array::Int8Array::from(vec![0i8, 0])),
    ];
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), cols).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &schema).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();
    let bytes = w.into_inner().unwrap();
    let b = read_table_of_version("thread_placements", bytes.clone(), 3).unwrap();
    assert_eq!(b.column_by_name("time_us").unwrap().data_type(), &DataType::Int64);
    assert_eq!(numascope_core::trace::reader::col_i64(&b, "time_us"), vec![0, 4_294_967_295]);
    let err = read_table_of_version("thread_placements", bytes, 4).err().unwrap().to_string();
    assert!(err.contains("time_us") && err.contains("UInt32") && err.contains("Int64"), "{err}");
}

#[test]
fn write_fixture_files() {
    let tmp = common::TempDir::new("fixture");
    let (trace, json) = write_fixture(&tmp.0).unwrap();
    let f = read_trace(&trace).unwrap();
    let expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(expected, expected_json(&f.to_trace_data()));
    let tables = &expected["tables"];
    assert_eq!(tables["pages"]["address"][2], "18446744073709547520");
    assert_eq!(tables["regions"]["path"][0], serde_json::Value::Null);
    assert_eq!(tables["samples"]["time_us"][1], 6_000_000_000u64);
    assert_eq!(tables["samples"]["time_us"][2], 9_007_199_254_740_991u64);
    assert_eq!(expected["manifest"]["traceId"], "0123456789abcdef0123456789abcdef");
    assert_eq!(expected["manifest"]["host"], "fixture-host");
    assert_eq!(tables["samples"]["op"][2], "fault");
    assert_eq!(tables["threads"]["name"][1], "wörker-ü 線程");
    assert_eq!(tables["events"]["value"][3], i64::MIN.to_string());
    for (table, cols) in spec() {
        for (col, _) in cols {
            let v = &tables[table][col];
            assert!(v.is_array() && !v.as_array().unwrap().is_empty(), "{table}.{col} missing from expected JSON");
        }
    }
}

/// A real version-1 recording (no allocation-site tables) reads with those tables empty.
#[test]
fn version_1_file_reads_with_empty_allocation_tables() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../sample-traces/recorded-testload-4threads.numascope");
    let f = read_trace(&p).unwrap();
    assert_eq!(f.manifest.version, 1);
    let t = f.to_trace_data();
    assert_eq!(t.alloc, Default::default());
    assert!(t.samples.time_us.len() > 1000);
    // No code locations before v3: every sample's stack reads as -1.
    assert_eq!(t.samples.stack.len(), t.samples.time_us.len());
    assert!(t.samples.stack.iter().all(|&s| s == -1));
    assert!(t.regions.alloc_site.iter().all(|s| s.is_none()));
    // Written before regions.prot existed: the optional column reads as unknown, row for row.
    assert_eq!(t.regions.prot.len(), t.regions.start.len());
    assert!(t.regions.prot.iter().all(|p| p.is_none()));
}

/// A real version-2 recording (allocation-site tables under their v2 names, no samples.stack)
/// reads with the shared code tables filled from the v2 ones and every sample without a stack.
#[test]
fn version_2_file_reads_with_renamed_code_tables() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../sample-traces/recorded-alloc-sites.numascope");
    let f = read_trace(&p).unwrap();
    assert_eq!(f.manifest.version, 2);
    let t = f.to_trace_data();
    assert!(
        !t.alloc.allocations.time_us.is_empty() && !t.alloc.frames.module.is_empty(),
        "the v2 alloc_* tables are read"
    );
    assert!(t.alloc.allocations.stack.iter().all(|&s| s < t.alloc.stack_count() as i32));
    assert!(!t.samples.is_empty() && t.samples.stack.iter().all(|&s| s == -1));
}

#[test]
fn allocation_tables_round_trip_and_describe_sites() {
    let mut t = fixture_trace();
    let buf = write_trace_to(&mut t, Cursor::new(Vec::new())).unwrap().into_inner();
    let back = read_trace_from(Cursor::new(buf)).unwrap().to_trace_data();
    assert_eq!(back.alloc, t.alloc);
    assert_eq!(back.alloc.stack_count(), 2);
    assert_eq!(back.alloc.stack_frames(0), vec![0, 1, 2]);
    assert_eq!(back.alloc.describe_frame(1), "make_matrix(int) ファイル.c:42");
    assert_eq!(back.alloc.describe_frame(2), "main+0x20000000000001 (matrix with space)");
    assert_eq!(back.alloc.describe_frame(3), "?+0x7fff00001234");
    assert_eq!(back.alloc.frames.function[3], None);
}
