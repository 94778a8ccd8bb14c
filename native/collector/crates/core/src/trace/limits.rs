//! The limits every numascope trace reader enforces (packages/policy-engine/src/trace/limits.ts,
//! docs/robustness.md "Trace reader"), and the writer's check against them: a writer never makes
//! a file its readers refuse. `numascope debug trace-limits` prints these figures; the engine's
//! test (trace-limits.test.ts) holds them equal to its own.

use super::model::TraceData;
use super::TraceError;

/// Largest time any table or the manifest holds, µs since the capture started: 2^53 - 1, the
/// largest integer a JSON number or a JavaScript number holds exactly (285 years).
pub const MAX_TIME_US: i64 = (1 << 53) - 1;
/// Rows of one table (row indices are int32 in the format).
pub const MAX_TABLE_ROWS: u64 = (1 << 31) - 1;
/// Rows of the threads table.
pub const MAX_THREADS: u64 = 262_144;
/// Uncompressed bytes of one ZIP entry (a JavaScript reader holds an entry in one array).
pub const MAX_ENTRY_BYTES: u64 = (1 << 31) - 1;
/// Uncompressed bytes of all entries of a file, together.
pub const MAX_TOTAL_BYTES: u64 = 4 << 30;
/// Bytes of manifest.json.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;
/// NUMA nodes in manifest.machine (node columns are int8).
pub const MAX_NODES: u64 = 128;
/// Bytes of one string value (a thread name, an event's detail, a path).
pub const MAX_STRING_BYTES: u64 = 1 << 20;
/// Largest cpu id (cpu columns are int16).
pub const MAX_CPU_ID: u64 = 32_767;
/// Largest node id (Linux's MAX_NUMNODES is at most 1024).
pub const MAX_NODE_ID: u64 = 1023;
/// Bounds of `machine.cpuClockGHz`.
pub const MIN_CLOCK_GHZ: f64 = 0.1;
pub const MAX_CLOCK_GHZ: f64 = 10.0;

/// The limits as the JSON object `numascope debug trace-limits` prints (the engine's names).
pub fn limits_json() -> serde_json::Value {
    serde_json::json!({
        "maxTimeUs": MAX_TIME_US,
        "maxTableRows": MAX_TABLE_ROWS,
        "maxThreads": MAX_THREADS,
        "maxEntryBytes": MAX_ENTRY_BYTES,
        "maxTotalBytes": MAX_TOTAL_BYTES,
        "maxManifestBytes": MAX_MANIFEST_BYTES,
        "maxNodes": MAX_NODES,
        "maxStringBytes": MAX_STRING_BYTES,
        "maxCpuId": MAX_CPU_ID,
        "maxNodeId": MAX_NODE_ID,
        "minClockGHz": MIN_CLOCK_GHZ,
        "maxClockGHz": MAX_CLOCK_GHZ,
    })
}

fn refuse(what: String) -> TraceError {
    TraceError::Invalid(format!("{what}; numascope's trace readers refuse such a file, so it was not written"))
}

fn check_times(table: &str, column: &str, values: &[i64]) -> Result<(), TraceError> {
    if let Some((row, &t)) = values.iter().enumerate().find(|(_, &t)| !(0..=MAX_TIME_US).contains(&t)) {
        return Err(refuse(format!(
            "table {table}, column {column}, row {row}: time {t} µs is outside 0 to {MAX_TIME_US} µs"
        )));
    }
    Ok(())
}

fn check_rows(table: &str, rows: usize, max: u64) -> Result<(), TraceError> {
    if rows as u64 > max {
        return Err(refuse(format!("table {table} has {rows} rows, more than the {max} a trace may hold")));
    }
    Ok(())
}

fn check_strings<'a>(table: &str, column: &str, values: impl Iterator<Item = &'a str>) -> Result<(), TraceError> {
    for (row, s) in values.enumerate() {
        if s.len() as u64 > MAX_STRING_BYTES {
            return Err(refuse(format!(
                "table {table}, column {column}, row {row}: a string of {} bytes, more than {MAX_STRING_BYTES}",
                s.len()
            )));
        }
    }
    Ok(())
}

/// Checks what the writer can know before it encodes: the manifest's times, clock and machine
/// size, each table's rows, times and strings. Entry and file sizes are checked as they are made.
pub fn check_trace(trace: &TraceData) -> Result<(), TraceError> {
    let m = &trace.manifest;
    if m.capture.duration_us > MAX_TIME_US as u64 {
        return Err(refuse(format!("capture.durationUs is {} µs, more than {MAX_TIME_US} µs", m.capture.duration_us)));
    }
    if let Some(t) = m.capture.page_scan.as_ref().and_then(|p| p.last_scan_us) {
        if !(0..=MAX_TIME_US).contains(&t) {
            return Err(refuse(format!("capture.pageScan.lastScanUs is {t} µs, more than {MAX_TIME_US} µs")));
        }
    }
    if let Some(ghz) = m.machine.cpu_clock_ghz {
        if !(MIN_CLOCK_GHZ..=MAX_CLOCK_GHZ).contains(&ghz) {
            return Err(refuse(format!(
                "machine.cpuClockGHz is {ghz}, outside {MIN_CLOCK_GHZ} to {MAX_CLOCK_GHZ} GHz"
            )));
        }
    }
    if m.machine.nodes.len() as u64 > MAX_NODES {
        return Err(refuse(format!("the machine has {} nodes, more than {MAX_NODES}", m.machine.nodes.len())));
    }
    for n in &m.machine.nodes {
        if n.id as u64 > MAX_NODE_ID {
            return Err(refuse(format!("node id {} is above {MAX_NODE_ID}", n.id)));
        }
        if let Some(c) = n.cpus.iter().find(|&&c| c as u64 > MAX_CPU_ID) {
            return Err(refuse(format!("cpu id {c} of node {} is above {MAX_CPU_ID}", n.id)));
        }
    }
    let s = &trace.samples;
    check_rows("samples", s.time_us.len(), MAX_TABLE_ROWS)?;
    check_times("samples", "time_us", &s.time_us)?;
    check_rows("pages", trace.pages.address.len(), MAX_TABLE_ROWS)?;
    let t = &trace.threads;
    check_rows("threads", t.tid.len(), MAX_THREADS)?;
    check_times("threads", "first_seen_us", &t.first_seen_us)?;
    check_times("threads", "last_seen_us", &t.last_seen_us)?;
    check_strings("threads", "name", t.name.iter().map(String::as_str))?;
    let r = &trace.regions;
    check_rows("regions", r.start.len(), MAX_TABLE_ROWS)?;
    check_strings("regions", "path", r.path.iter().flatten().map(String::as_str))?;
    check_strings("regions", "alloc_site", r.alloc_site.iter().flatten().map(String::as_str))?;
    check_rows("thread_placements", trace.thread_placements.time_us.len(), MAX_TABLE_ROWS)?;
    check_times("thread_placements", "time_us", &trace.thread_placements.time_us)?;
    check_rows("region_placements", trace.region_placements.time_us.len(), MAX_TABLE_ROWS)?;
    check_times("region_placements", "time_us", &trace.region_placements.time_us)?;
    check_rows("counters", trace.counters.time_us.len(), MAX_TABLE_ROWS)?;
    check_times("counters", "time_us", &trace.counters.time_us)?;
    let e = &trace.events;
    check_rows("events", e.time_us.len(), MAX_TABLE_ROWS)?;
    check_times("events", "time_us", &e.time_us)?;
    check_strings("events", "detail", e.detail.iter().map(String::as_str))?;
    check_rows("allocations", trace.alloc.allocations.time_us.len(), MAX_TABLE_ROWS)?;
    check_times("allocations", "time_us", &trace.alloc.allocations.time_us)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::empty_manifest;

    fn trace() -> TraceData {
        TraceData::empty(empty_manifest())
    }

    #[test]
    fn times_beyond_the_exact_range_are_refused_by_name() {
        let mut t = trace();
        t.samples.time_us = vec![0, MAX_TIME_US];
        check_trace(&t).expect("2^53 - 1 µs is the last time a trace holds");
        t.events.time_us = vec![MAX_TIME_US + 1];
        let e = check_trace(&t).unwrap_err().to_string();
        assert!(e.contains("table events, column time_us, row 0"), "{e}");
        t.events.time_us = vec![-1];
        assert!(check_trace(&t).is_err());
    }

    #[test]
    fn a_long_capture_is_accepted_and_a_wild_one_refused() {
        let mut t = trace();
        // Three days: far past version 3's 71-minute cap.
        t.manifest.capture.duration_us = 3 * 86_400 * 1_000_000;
        t.samples.time_us = vec![t.manifest.capture.duration_us as i64];
        check_trace(&t).expect("a three-day capture");
        t.manifest.capture.duration_us = u64::MAX;
        assert!(check_trace(&t).unwrap_err().to_string().contains("capture.durationUs"));
    }

    #[test]
    fn strings_and_clock_outside_the_limits_are_refused() {
        let mut t = trace();
        t.manifest.machine.cpu_clock_ghz = Some(2300.0);
        assert!(check_trace(&t).unwrap_err().to_string().contains("cpuClockGHz"));
        let mut t = trace();
        t.threads.tid = vec![1];
        t.threads.pid = vec![1];
        t.threads.name = vec!["x".repeat(MAX_STRING_BYTES as usize + 1)];
        t.threads.first_seen_us = vec![0];
        t.threads.last_seen_us = vec![0];
        t.threads.migrations = vec![0];
        assert!(check_trace(&t).unwrap_err().to_string().contains("threads, column name"));
    }
}
