//! The applied-plans audit log (docs/apply.md, "Audit log"): `numascope apply` drops each plan
//! it carried out, with its report, into a per-pid spool directory; `numascope record` of that
//! process collects the entries whose time falls in its capture into `manifest.appliedPlans` and
//! a `plan-applied` event row (docs/trace-format.md).
//!
//! Spool directory: `$NUMASCOPE_SPOOL_DIR`, else `/run/numascope/applied` for root, else
//! `$XDG_RUNTIME_DIR/numascope/applied`, else `/tmp/numascope-<uid>/applied`; entries go to
//! `<dir>/<pid>/<unix-ns>-<apply pid>.json`. Apply and record must run as the same user (or share
//! `NUMASCOPE_SPOOL_DIR`) to meet there.
//!
//! Files are created safely: the default directories are private (created with mode 0700,
//! refused if they are links or belong to someone else: `/tmp/numascope-<uid>` could have been
//! planted), directories numascope creates are 0700, and each entry is written to an exclusive
//! temporary file (mode 0600 as root) renamed to a name that must not exist yet.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::ApplyReport;
use crate::trace::writer::{file_mode, private_dir, TempFile};

/// Where entries are spooled (see the module comment).
pub fn spool_dir() -> PathBuf {
    spool_location().0
}

/// The spool directory, and for the default locations the numascope directory above it that
/// must be private (`None` for `$NUMASCOPE_SPOOL_DIR`, the user's own choice).
fn spool_location() -> (PathBuf, Option<PathBuf>) {
    if let Some(d) = std::env::var_os("NUMASCOPE_SPOOL_DIR").filter(|d| !d.is_empty()) {
        return (PathBuf::from(d), None);
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let base = if uid == 0 && Path::new("/run").is_dir() {
        PathBuf::from("/run/numascope")
    } else if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        PathBuf::from(d).join("numascope")
    } else {
        PathBuf::from(format!("/tmp/numascope-{uid}"))
    };
    (base.join("applied"), Some(base))
}

fn unix_now_ns() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
}

/// One audit entry (the shape docs/trace-format.md documents for `appliedPlans[]`).
pub fn entry(plan: &Value, report: &ApplyReport, started_unix_ms: u64, finished_unix_ms: u64) -> Value {
    json!({
        "tool": "numascope apply",
        "appliedAt": crate::time::iso8601_utc(finished_unix_ms),
        "startedUnixMs": started_unix_ms,
        "finishedUnixMs": finished_unix_ms,
        "pid": report.pid,
        "startTimeTicks": report.start_time_ticks.to_string(),
        "status": report.status,
        "plan": plan,
        "report": report,
    })
}

/// The entry `numascope run` writes when it launches a program with a plan (docs/apply.md,
/// "Applying at the next launch"): the plan is in force from the program's first allocation, so
/// the entry is written at launch (a recording of the run then finds it inside its capture);
/// `report` is what run planned (objects and threads), the outcome is in run's own report.
pub fn run_entry(plan: &Value, report: &Value, pid: i32, start_ticks: Option<u64>, launched_unix_ms: u64) -> Value {
    json!({
        "tool": "numascope run",
        "appliedAt": crate::time::iso8601_utc(launched_unix_ms),
        "startedUnixMs": launched_unix_ms,
        "finishedUnixMs": launched_unix_ms,
        "pid": pid,
        // "" when the program was gone before its start time could be read
        "startTimeTicks": start_ticks.map(|t| t.to_string()).unwrap_or_default(),
        "status": "launched",
        "plan": plan,
        "report": report,
    })
}

/// The entry `numascope apply --retarget` writes for the new process: the plan was re-targeted to
/// it (nothing applied yet); `report` lists what was mapped and what was skipped, and why.
pub fn retarget_entry(
    plan: &Value,
    report: &super::retarget::RetargetReport,
    started_unix_ms: u64,
    finished_unix_ms: u64,
) -> Value {
    json!({
        "tool": "numascope apply --retarget",
        "appliedAt": crate::time::iso8601_utc(finished_unix_ms),
        "startedUnixMs": started_unix_ms,
        "finishedUnixMs": finished_unix_ms,
        "pid": report.pid,
        "startTimeTicks": report.start_time_ticks.clone().unwrap_or_default(),
        "status": "retargeted",
        "plan": plan,
        "report": report,
    })
}

/// Writes an entry for a finished (not dry-run) apply; returns the file.
pub fn spool(dir: &Path, entry: &Value) -> io::Result<PathBuf> {
    let pid = entry["pid"].as_i64().unwrap_or(-1);
    let d = dir.join(pid.to_string());
    match spool_location() {
        (default, Some(base)) if default == dir => {
            private_dir(&base)?;
            private_dir(dir)?;
            private_dir(&d)?;
        }
        _ => match fs::DirBuilder::new().recursive(true).mode(0o700).create(&d) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        },
    }
    let name = format!("{}-{}.json", unix_now_ns(), std::process::id());
    let mut tmp = TempFile::new_in(&d, std::ffi::OsStr::new(&name), file_mode())?;
    tmp.file().write_all((serde_json::to_string(entry).map_err(io::Error::other)? + "\n").as_bytes())?;
    let path = d.join(name);
    tmp.persist_new(&path)?;
    Ok(path)
}

/// Entries for `pid` (with start time `start_ticks` when known) finished within
/// `[from_unix_ms, to_unix_ms]`, oldest first. Unreadable or foreign files are skipped.
pub fn collect(dir: &Path, pid: i32, start_ticks: Option<u64>, from_unix_ms: u64, to_unix_ms: u64) -> Vec<Value> {
    let Ok(rd) = fs::read_dir(dir.join(pid.to_string())) else { return Vec::new() };
    let mut out: Vec<(u64, String, Value)> = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        let Ok(text) = fs::read_to_string(e.path()) else { continue };
        let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
        let t = v["finishedUnixMs"].as_u64().unwrap_or(0);
        if v["pid"].as_i64() != Some(pid as i64) || t < from_unix_ms || t > to_unix_ms {
            continue;
        }
        if let (Some(want), Some(got)) = (start_ticks, v["startTimeTicks"].as_str()) {
            if got != want.to_string() {
                continue;
            }
        }
        out.push((t, name, v));
    }
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    out.into_iter().map(|(_, _, v)| v).collect()
}

/// One line for the `plan-applied` event's detail.
pub fn describe(entry: &Value) -> String {
    let r = &entry["report"];
    let policy = entry["plan"]["source"]["policy"].as_str().unwrap_or("?");
    if entry["tool"] == "numascope run" {
        let n = |k: &str| entry["plan"][k].as_array().map_or(0, |a| a.len());
        return format!(
            "numascope run: plan ({policy}) applied at launch: {} object entries, {} thread entries",
            n("objects"),
            n("threads")
        );
    }
    if entry["tool"] == "numascope apply --retarget" {
        let n = |k: &str| r[k].as_array().map_or(0, |a| a.len());
        return format!(
            "numascope apply --retarget: plan ({policy}) of process {} re-targeted here (not applied): {} ranges and {} \
             threads mapped, {} entries skipped",
            r["fromPid"],
            n("ranges"),
            n("threads"),
            n("skipped")
        );
    }
    let pinned = r["threads"].as_array().map(|t| t.iter().filter(|t| t["pinned"] == true).count()).unwrap_or(0);
    // System-wide weights are global state: the entry says what they were and what they became.
    let weights = |v: &Value| -> String {
        v.as_object()
            .map(|m| m.iter().map(|(n, w)| format!("N{n}={w}")).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    let sw = &r["systemWeights"];
    let system = if sw.is_object() {
        format!(
            "; system weighted-interleave weights {} -> {}",
            weights(&sw["before"]["weights"]),
            weights(&sw["after"]["weights"])
        )
    } else {
        String::new()
    };
    format!(
        "numascope apply: plan ({policy}) {}: {} pages moved, {pinned} threads pinned{system}",
        r["status"].as_str().unwrap_or("?"),
        r["pages"]["moved"].as_u64().unwrap_or(0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retarget_entry_and_its_one_line_description() {
        use super::super::retarget::{MappedRange, RetargetReport, Skipped};
        let skipped = |i: usize| Skipped { entry: format!("objects[{i}]"), start: None, end: None, reason: "x".into() };
        let rep = RetargetReport {
            operation: "retarget",
            from_pid: 100,
            pid: 200,
            start_time_ticks: Some("1200".into()),
            ranges: vec![MappedRange {
                entry: "objects[0]".into(),
                from_start: None,
                from_end: None,
                start: "0x7fa000001000".into(),
                end: "0x7fa000100000".into(),
                how: "allocation".into(),
            }],
            skipped: (0..4).map(skipped).collect(),
            ..Default::default()
        };
        let plan = json!({"source": {"policy": "interleave"}});
        let e = retarget_entry(&plan, &rep, 1, 2);
        assert_eq!((e["pid"].as_i64(), e["startTimeTicks"].as_str()), (Some(200), Some("1200")));
        assert_eq!(
            describe(&e),
            "numascope apply --retarget: plan (interleave) of process 100 re-targeted here (not applied): 1 ranges and \
             0 threads mapped, 4 entries skipped"
        );
    }

    #[test]
    fn spool_and_collect_by_pid_start_and_time() {
        let dir = std::env::temp_dir().join(format!("numascope-audit-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mk = |pid: i32, ticks: &str, t: u64| {
            json!({"pid": pid, "startTimeTicks": ticks, "finishedUnixMs": t, "plan": {"source": {"policy": "interleave"}},
                   "report": {"status": "complete", "pages": {"moved": 3}, "threads": [{"pinned": true}]}})
        };
        spool(&dir, &mk(7, "100", 1_000)).unwrap();
        spool(&dir, &mk(7, "100", 5_000)).unwrap();
        spool(&dir, &mk(7, "999", 2_000)).unwrap(); // a reused pid
        spool(&dir, &mk(8, "100", 2_000)).unwrap();
        let got = collect(&dir, 7, Some(100), 500, 4_000);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["finishedUnixMs"], 1_000);
        assert_eq!(collect(&dir, 7, None, 0, 10_000).len(), 3);
        assert_eq!(describe(&got[0]), "numascope apply: plan (interleave) complete: 3 pages moved, 1 threads pinned");
        assert!(collect(&dir, 9, None, 0, u64::MAX).is_empty());
        // a run entry is collected like an apply entry and described as a launch
        let plan = json!({"source": {"policy": "interleave"}, "objects": [{}, {}], "threads": [{}]});
        spool(&dir, &run_entry(&plan, &json!({}), 9, Some(55), 3_000)).unwrap();
        let got = collect(&dir, 9, Some(55), 0, 10_000);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["tool"], "numascope run");
        assert_eq!(
            describe(&got[0]),
            "numascope run: plan (interleave) applied at launch: 2 object entries, 1 thread entries"
        );
        // entries are private when written by root, and nothing else is left in the pid dir
        let names: Vec<_> = fs::read_dir(dir.join("7")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            use std::os::unix::fs::PermissionsExt;
            for n in names {
                assert_eq!(fs::metadata(dir.join("7").join(n)).unwrap().permissions().mode() & 0o077, 0);
            }
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
