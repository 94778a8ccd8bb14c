//! Checks of the target before anything changes: the machine, the process and its threads
//! (`/proc`), the credentials and capabilities that pinning and moving pages need, the
//! mappings, and the transparent-huge-page mappings (`/proc/PID/smaps`).

use std::fs;
use std::io;
use std::path::Path;

use super::options::ApplyError;
use super::pages;
use super::plan::Plan;
use crate::procfs;
use crate::topology::Topology;

/// `CAP_SYS_NICE` and `CAP_SYS_PTRACE` bit numbers (linux/capability.h).
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_NICE: u32 = 23;

/// Checks the machine, the process and its threads. Returns the process start time.
pub fn check_target(plan: &Plan, topo: &Topology, proc_root: &Path) -> Result<u64, ApplyError> {
    let live: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    let want = &plan.target.machine.node_ids;
    if *want != live {
        let missing: Vec<String> = want.iter().filter(|n| !live.contains(n)).map(|n| n.to_string()).collect();
        let detail = if missing.is_empty() {
            String::new()
        } else {
            format!(
                ": node{} {} do{} not exist here",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", "),
                if missing.len() > 1 { "" } else { "es" }
            )
        };
        return Err(ApplyError::WrongMachine(format!(
            "target.machine.nodeIds is {want:?} but this machine has nodes {live:?}{detail}"
        )));
    }
    if let Some(d) = &plan.target.machine.distances {
        if *d != topo.distances {
            return Err(ApplyError::WrongMachine(format!(
                "target.machine.distances {d:?} differ from this machine's {:?}",
                topo.distances
            )));
        }
    }
    let pid = plan.target.pid;
    let st = check_process(pid, plan.target.start_time_ticks, proc_root)?;
    for t in &plan.threads {
        match task_owner(pid, t.tid, proc_root) {
            TaskOwner::Ours { .. } => {}
            TaskOwner::Gone => return Err(ApplyError::ThreadNotInProcess { tid: t.tid, pid }),
            TaskOwner::Foreign(owner) => return Err(ApplyError::ForeignThread { tid: t.tid, pid, owner }),
        }
    }
    Ok(st)
}

/// The process exists, is a process (not a thread of one) and (when `expected` is given) has
/// that start time.
pub fn check_process(pid: i32, expected: Option<u64>, proc_root: &Path) -> Result<u64, ApplyError> {
    if pid <= 0 {
        return Err(ApplyError::NoProcess { pid });
    }
    let st = procfs::process_start_ticks(proc_root, pid).ok_or(ApplyError::NoProcess { pid })?;
    if let Some(e) = expected {
        if e != st {
            return Err(ApplyError::PidReused { pid, expected: e, found: st });
        }
    }
    // /proc/TID resolves for any thread: a thread id is not the process.
    if let Some(owner) = crate::procfs::thread_group(proc_root, pid) {
        if owner != pid {
            return Err(ApplyError::ForeignThread { tid: pid, pid, owner });
        }
    }
    // A zombie has no memory left to move.
    if let Ok(s) = fs::read_to_string(proc_root.join(format!("{pid}/stat"))) {
        if procfs::parse_task_stat(&s).map(|t| t.state == 'Z' || t.state == 'X').unwrap_or(false) {
            return Err(ApplyError::NoProcess { pid });
        }
    }
    Ok(st)
}

/// Where a thread id stands with respect to a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskOwner {
    /// A thread of the process, with its start time.
    Ours { start_ticks: u64 },
    /// No such thread (it exited).
    Gone,
    /// A thread of another process.
    Foreign(i32),
}

pub(super) fn task_owner(pid: i32, tid: i32, proc_root: &Path) -> TaskOwner {
    if tid <= 0 || pid <= 0 {
        return TaskOwner::Gone;
    }
    if let Ok(s) = fs::read_to_string(proc_root.join(format!("{pid}/task/{tid}/stat"))) {
        if let Some(t) = procfs::parse_task_stat(&s) {
            return TaskOwner::Ours { start_ticks: t.start_time_ticks };
        }
    }
    match crate::procfs::thread_group(proc_root, tid) {
        Some(owner) if owner != pid => TaskOwner::Foreign(owner),
        _ => TaskOwner::Gone,
    }
}

struct Creds {
    uids: [u32; 4],
    cap_eff: u64,
}

fn read_creds(path: &Path) -> Option<Creds> {
    let text = fs::read_to_string(path).ok()?;
    let cap_eff =
        crate::procfs::status_field(&text, "CapEff").and_then(|v| u64::from_str_radix(v, 16).ok()).unwrap_or(0);
    Some(Creds { uids: crate::procfs::status_uids(&text)?, cap_eff })
}

/// `sched_setaffinity` rule (man 2 sched_setaffinity): our euid equals the target's ruid or
/// euid, or we have CAP_SYS_NICE. Checked before anything changes.
pub(super) fn check_pin_permission(pid: i32, proc_root: &Path) -> Result<(), ApplyError> {
    let (Some(me), Some(them)) =
        (read_creds(&proc_root.join("self/status")), read_creds(&proc_root.join(format!("{pid}/status"))))
    else {
        return Ok(()); // cannot tell; the syscall will say
    };
    let euid = me.uids[1];
    if me.cap_eff & (1 << CAP_SYS_NICE) != 0 || euid == them.uids[0] || euid == them.uids[1] {
        return Ok(());
    }
    Err(ApplyError::Permission(format!(
        "pinning threads of process {pid} (uid {}) as uid {euid} needs CAP_SYS_NICE (run as root, or give numascope \
         `setcap cap_sys_nice,cap_sys_ptrace+ep`), or run numascope as uid {}",
        them.uids[0], them.uids[0]
    )))
}

pub(super) fn page_permission_message(pid: i32, proc_root: &Path, e: &io::Error) -> String {
    let who = match (read_creds(&proc_root.join("self/status")), read_creds(&proc_root.join(format!("{pid}/status")))) {
        (Some(me), Some(them)) => {
            let mut s = format!(" (process {pid} runs as uid {}, numascope as uid {}", them.uids[0], me.uids[0]);
            if me.cap_eff & (1 << CAP_SYS_PTRACE) == 0 {
                s.push_str(", without CAP_SYS_PTRACE");
            }
            if me.cap_eff & (1 << CAP_SYS_NICE) == 0 {
                s.push_str(", without CAP_SYS_NICE");
            }
            s.push(')');
            s
        }
        _ => String::new(),
    };
    format!(
        "move_pages on process {pid} failed with {e}{who}: reading and moving another process's pages needs ptrace \
         read access to it (same user and a dumpable process, or CAP_SYS_PTRACE), and CAP_SYS_NICE for another \
         user's process"
    )
}

/// The target's mappings, or the refusal that reading them gives.
pub(super) fn target_mappings(pid: i32, proc_root: &Path) -> Result<Vec<(u64, u64)>, ApplyError> {
    pages::read_mappings(pid, proc_root).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ESRCH) => ApplyError::NoProcess { pid },
        Some(libc::EACCES) | Some(libc::EPERM) => ApplyError::Permission(format!(
            "reading /proc/{pid}/maps: {e}; {}",
            page_permission_message(pid, proc_root, &e)
        )),
        _ => ApplyError::Io(format!("reading /proc/{pid}/maps: {e}")),
    })
}

/// Base pages of `[start, end)` that lie in mappings with transparent huge pages
/// (`/proc/PID/smaps` AnonHugePages > 0), as (mapping start, mapping end) pairs.
/// When `/proc/vmstat` says no anonymous transparent huge page exists on the machine
/// (`nr_anon_transparent_hugepages 0`), smaps is not read: it walks every page table of the
/// process, which costs as much as a query of its pages.
pub fn thp_mappings(pid: i32, proc_root: &Path) -> Vec<(u64, u64)> {
    if let Ok(v) = fs::read_to_string(proc_root.join("vmstat")) {
        if vmstat_value(&v, "nr_anon_transparent_hugepages") == Some(0) {
            return Vec::new();
        }
    }
    let Ok(text) = fs::read_to_string(proc_root.join(format!("{pid}/smaps"))) else { return Vec::new() };
    parse_smaps_thp(&text)
}

/// The value of `key` in `/proc/vmstat` text.
fn vmstat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse().ok())
}

pub fn parse_smaps_thp(text: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut cur: Option<(u64, u64)> = None;
    for l in text.lines() {
        let first = l.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                cur = Some((a, b));
                continue;
            }
        }
        if let Some(v) = l.strip_prefix("AnonHugePages:") {
            let kb: u64 = v.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0);
            if let (true, Some(c)) = (kb > 0, cur) {
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn vmstat_says_whether_huge_pages_exist() {
        let t = "nr_anon_pages 12\nnr_anon_transparent_hugepages 0\nnr_anon_transparent_hugepages_x 5\n";
        assert_eq!(vmstat_value(t, "nr_anon_transparent_hugepages"), Some(0));
        assert_eq!(vmstat_value(t, "nr_anon_pages"), Some(12));
        assert_eq!(vmstat_value("nr_anon_transparent_hugepages 3\n", "nr_anon_transparent_hugepages"), Some(3));
        assert_eq!(vmstat_value("", "nr_anon_transparent_hugepages"), None);
    }

    #[test]
    fn smaps_thp_ranges() {
        let t = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nSize: 4096 kB\nAnonHugePages:   2048 kB\n\
                 7f0000400000-7f0000500000 rw-p 00000000 00:00 0\nAnonHugePages:      0 kB\n";
        assert_eq!(parse_smaps_thp(t), vec![(0x7f0000000000, 0x7f0000400000)]);
    }

    #[test]
    fn thread_owner_is_told_apart() {
        let me = std::process::id() as i32;
        let root = Path::new("/proc");
        assert!(matches!(task_owner(me, me, root), TaskOwner::Ours { .. }));
        // pid 1 is not one of our threads: it is init's
        assert_eq!(task_owner(me, 1, root), TaskOwner::Foreign(1));
        assert_eq!(task_owner(me, i32::MAX, root), TaskOwner::Gone);
        assert_eq!(task_owner(me, 0, root), TaskOwner::Gone);
        // a thread id is not a process id
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            tx.send(unsafe { libc::syscall(libc::SYS_gettid) } as i32).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        assert!(matches!(task_owner(me, tid, root), TaskOwner::Ours { .. }));
        assert!(matches!(check_process(tid, None, root), Err(ApplyError::ForeignThread { owner, .. }) if owner == me));
        done_tx.send(()).unwrap();
        h.join().unwrap();
    }
}
