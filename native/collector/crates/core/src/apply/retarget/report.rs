//! What re-targeting reports: the ranges and threads carried over, what was skipped and why
//! ([`RetargetReport`]), and its human-readable account ([`describe`]).

use serde::Serialize;

/// Something of the plan that was not carried over, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// `pageRanges[3]`, `objects[0]`, `threads[2]`.
    pub entry: String,
    /// The part of the range (or the allocation) concerned, when it is an address range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    pub reason: String,
}

/// A range of the new plan and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MappedRange {
    pub entry: String,
    /// The original addresses (for an object entry: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_start: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_end: Option<String>,
    pub start: String,
    pub end: String,
    /// How it was found: `file /usr/lib/x.so offset 0x2000`, `[heap] +0x1000`, `allocation 0x… of N bytes`.
    pub how: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MappedThread {
    pub entry: String,
    pub from_tid: i32,
    pub tid: i32,
    pub name: String,
}

/// What re-targeting did (the CLI prints it; `--json` emits it; the audit entry holds it).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetargetReport {
    pub operation: &'static str,
    pub from_pid: i32,
    pub from_start_time_ticks: Option<String>,
    pub pid: i32,
    pub start_time_ticks: Option<String>,
    /// How the program was found to be the same.
    pub program_check: String,
    /// Where the original ranges' mappings were read from (or why nowhere).
    pub mappings_source: String,
    /// Where the new process's allocations came from, when given.
    pub allocations_source: Option<String>,
    pub ranges: Vec<MappedRange>,
    pub threads: Vec<MappedThread>,
    pub skipped: Vec<Skipped>,
    pub warnings: Vec<String>,
    /// Where the re-targeted plan was written (set by the CLI).
    pub output: Option<String>,
}

/// A human-readable account of a re-targeting.
pub fn describe(r: &RetargetReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "numascope apply --retarget: plan of process {} re-targeted to process {} (start time {})",
        r.from_pid,
        r.pid,
        r.start_time_ticks.as_deref().unwrap_or("?")
    );
    let _ = writeln!(s, "program: {}", r.program_check);
    let _ = writeln!(s, "original mappings from: {}", r.mappings_source);
    if let Some(a) = &r.allocations_source {
        let _ = writeln!(s, "allocations from: {a}");
    }
    for m in &r.ranges {
        match (&m.from_start, &m.from_end) {
            (Some(fs), Some(fe)) => {
                let _ = writeln!(s, "mapped  {}: {fs}-{fe} -> {}-{} ({})", m.entry, m.start, m.end, m.how);
            }
            _ => {
                let _ = writeln!(s, "mapped  {}: -> {}-{} ({})", m.entry, m.start, m.end, m.how);
            }
        }
    }
    for t in &r.threads {
        let _ = writeln!(s, "mapped  {}: tid {} -> tid {} (name {:?})", t.entry, t.from_tid, t.tid, t.name);
    }
    for k in &r.skipped {
        let at = match (&k.start, &k.end) {
            (Some(a), Some(b)) => format!(" {a}-{b}"),
            _ => String::new(),
        };
        let _ = writeln!(s, "skipped {}{at}: {}", k.entry, k.reason);
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    let _ =
        writeln!(s, "{} ranges and {} threads mapped, {} skipped", r.ranges.len(), r.threads.len(), r.skipped.len());
    if let Some(o) = &r.output {
        let _ = writeln!(s, "re-targeted plan: {o}  (dry run: numascope apply {o} -p {} --dry-run)", r.pid);
    }
    s
}
