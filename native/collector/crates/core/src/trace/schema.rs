//! Arrow schemas of the v4 tables, exactly as docs/trace-format.md specifies them.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};

fn dict8() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8))
}

fn dict16() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8))
}

fn f(name: &str, ty: DataType) -> Field {
    Field::new(name, ty, false)
}

fn nullable(name: &str, ty: DataType) -> Field {
    Field::new(name, ty, true)
}

/// Columns added within a version (docs/trace-format.md, "Optional columns"): a file written
/// before one existed lacks it, and the reader fills it with nulls. The writer always writes it.
/// `samples.stack` and `samples.hitm` are new in v3 (not within a version), listed here so that a
/// v2 file, which lacks them, reads with every value -1 (unknown).
pub const OPTIONAL_COLUMNS: [(&str, &str); 3] = [("regions", "prot"), ("samples", "stack"), ("samples", "hitm")];

/// The time columns: int64 µs since the capture started in v4, uint32 in versions 1 to 3 (which
/// the reader widens).
pub const TIME_COLUMNS: [(&str, &str); 8] = [
    ("samples", "time_us"),
    ("threads", "first_seen_us"),
    ("threads", "last_seen_us"),
    ("thread_placements", "time_us"),
    ("region_placements", "time_us"),
    ("counters", "time_us"),
    ("events", "time_us"),
    ("allocations", "time_us"),
];

/// Whether `table.column` is one of [`TIME_COLUMNS`].
pub fn is_time_column(table: &str, column: &str) -> bool {
    TIME_COLUMNS.iter().any(|&(t, c)| t == table && c == column)
}

/// Whether `table.column` is one of [`OPTIONAL_COLUMNS`].
pub fn is_optional_column(table: &str, column: &str) -> bool {
    OPTIONAL_COLUMNS.iter().any(|&(t, c)| t == table && c == column)
}

/// The schema of one table, or `None` for an unknown table name.
pub fn table_schema(table: &str) -> Option<Arc<Schema>> {
    use DataType::*;
    let fields = match table {
        "samples" => vec![
            f("time_us", Int64),
            f("thread", UInt32),
            f("cpu", Int16),
            f("page", Int32),
            f("offset", UInt16),
            f("op", dict8()),
            f("event", dict8()),
            f("data_source", dict8()),
            f("hops", Int8),
            f("node", Int8),
            f("latency_cycles", UInt32),
            f("weight", UInt32),
            f("stack", Int32),
            f("hitm", Int8),
        ],
        "pages" => vec![
            f("address", UInt64),
            f("region", Int32),
            f("node", Int8),
            f("page_size", UInt32),
            f("first_touch_us", Int64),
            f("first_touch_thread", Int32),
            f("first_touch_cpu", Int16),
        ],
        "threads" => vec![
            f("tid", Int32),
            f("pid", Int32),
            f("name", Utf8),
            f("first_seen_us", Int64),
            f("last_seen_us", Int64),
            f("migrations", Int64),
        ],
        "regions" => vec![
            f("start", UInt64),
            f("end", UInt64),
            f("kind", dict8()),
            nullable("path", Utf8),
            f("policy", Utf8),
            nullable("alloc_site", Utf8),
            nullable("prot", Utf8),
        ],
        "thread_placements" => vec![f("time_us", Int64), f("thread", UInt32), f("cpu", Int16), f("node", Int8)],
        "region_placements" => {
            vec![f("time_us", Int64), f("region", UInt32), f("node", Int8), f("pages", UInt32), f("page_size", UInt32)]
        }
        "counters" => vec![
            f("time_us", Int64),
            f("counter", dict16()),
            f("scope", dict8()),
            f("scope_id", Int32),
            f("value", Float64),
        ],
        "events" => {
            vec![f("time_us", Int64), f("kind", dict8()), f("thread", Int32), f("value", Int64), f("detail", Utf8)]
        }
        other => super::alloc::fields(other)?,
    };
    Some(Arc::new(Schema::new(fields)))
}
