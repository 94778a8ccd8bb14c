//! `GET /api/processes`: the processes of this machine from /proc, marked when this user may
//! record them.

use std::path::Path;

use numascope_core::procfs;
use serde_json::{json, Value};

pub(super) fn list_processes() -> Vec<Value> {
    let euid = unsafe { libc::geteuid() };
    let mut out: Vec<(i32, Value)> = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else { continue };
        let field = |k: &str| procfs::status_field(&status, k);
        let name = field("Name").unwrap_or("").to_string();
        let threads: u64 = field("Threads").and_then(|v| v.parse().ok()).unwrap_or(0);
        let rss_kib: Option<u64> =
            field("VmRSS").and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok());
        let uid: Option<u32> = procfs::status_uids(&status).map(|u| u[0]);
        let command = procfs::read_cmdline(Path::new("/proc"), pid).unwrap_or_default();
        out.push((pid, process_json(pid, &name, &command, threads, rss_kib, uid, euid)));
    }
    out.sort_by_key(|(p, _)| *p);
    out.into_iter().map(|(_, v)| v).collect()
}

/// One entry of `GET /api/processes`.
pub(super) fn process_json(
    pid: i32,
    name: &str,
    command: &[String],
    threads: u64,
    rss_kib: Option<u64>,
    uid: Option<u32>,
    euid: u32,
) -> Value {
    json!({
        "pid": pid,
        "name": name,
        "command": command,
        "threads": threads,
        "rssBytes": rss_kib.map(|k| k * 1024),
        "uid": uid,
        "own": uid == Some(euid) || euid == 0,
    })
}

// ---- static files -----------------------------------------------------------------------------
