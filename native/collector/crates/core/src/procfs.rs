//! Parsers for the /proc and /sys files the collector reads: numa_maps, maps, task stat and
//! sched, vmstat, node numastat. Each parser takes the file text, so tests use fixtures.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

/// One line of `/proc/PID/numa_maps` (one mapping).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumaMapsEntry {
    pub start: u64,
    /// Memory policy as printed: `default`, `interleave:0-3`, `bind:1`, `prefer (many):0-1`,
    /// `weighted interleave:0-3`, ….
    pub policy: String,
    /// `N<node>=<pages>` pairs, in the order printed.
    pub nodes: Vec<(u32, u64)>,
    pub kernel_page_size_kb: Option<u64>,
    /// `file=` path with the kernel's octal escapes (`\040`) decoded.
    pub file: Option<String>,
    pub heap: bool,
    pub stack: bool,
    pub huge: bool,
    pub anon: Option<u64>,
    pub dirty: Option<u64>,
    pub mapped: Option<u64>,
    pub mapmax: Option<u64>,
    pub swapcache: Option<u64>,
    pub active: Option<u64>,
    pub writeback: Option<u64>,
}

impl NumaMapsEntry {
    /// Pages resident on any node.
    pub fn total_pages(&self) -> u64 {
        self.nodes.iter().map(|&(_, p)| p).sum()
    }

    /// Size of the pages counted in `N<node>=` (bytes; 4096 if not printed).
    pub fn page_size_bytes(&self) -> u64 {
        self.kernel_page_size_kb.map(|k| k * 1024).unwrap_or(4096)
    }
}

/// Decodes the kernel's `\ooo` octal escapes (seq_file mangle_path).
pub fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') as u32 * 64 + (b[i + 2] - b'0') as u32 * 8 + (b[i + 3] - b'0') as u32;
            if v <= 255 {
                out.push(v as u8);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Policy names that contain a space (mm/mempolicy.c `policy_modes[]`).
const SPACED_POLICIES: [&str; 2] = ["weighted interleave", "prefer (many)"];

/// Parses one numa_maps line; `None` for a blank or malformed line.
pub fn parse_numa_maps_line(line: &str) -> Option<NumaMapsEntry> {
    let line = line.trim_end();
    let (addr, rest) = line.split_once(' ')?;
    let start = u64::from_str_radix(addr, 16).ok()?;
    let rest = rest.trim_start();
    let (policy, rest) = match SPACED_POLICIES.iter().find(|p| rest.starts_with(*p)) {
        Some(p) => {
            let after = &rest[p.len()..];
            let end = after.find(' ').unwrap_or(after.len());
            (format!("{p}{}", &after[..end]), &after[end..])
        }
        None => {
            let end = rest.find(' ').unwrap_or(rest.len());
            (rest[..end].to_string(), &rest[end..])
        }
    };
    let mut e = NumaMapsEntry { start, policy, ..Default::default() };
    for tok in rest.split_whitespace() {
        match tok {
            "heap" => e.heap = true,
            "stack" => e.stack = true,
            "huge" => e.huge = true,
            _ => {
                let Some((k, v)) = tok.split_once('=') else { continue };
                if k == "file" {
                    e.file = Some(unescape_octal(v));
                    continue;
                }
                if let Some(node) = k.strip_prefix('N').and_then(|n| n.parse::<u32>().ok()) {
                    if let Ok(p) = v.parse() {
                        e.nodes.push((node, p));
                    }
                    continue;
                }
                let n = v.parse::<u64>().ok();
                match k {
                    "kernelpagesize_kB" => e.kernel_page_size_kb = n,
                    "anon" => e.anon = n,
                    "dirty" => e.dirty = n,
                    "mapped" => e.mapped = n,
                    "mapmax" => e.mapmax = n,
                    "swapcache" => e.swapcache = n,
                    "active" => e.active = n,
                    "writeback" => e.writeback = n,
                    _ => {}
                }
            }
        }
    }
    Some(e)
}

/// Parses a whole numa_maps file, skipping lines that do not start with a hex address.
pub fn parse_numa_maps(text: &str) -> Vec<NumaMapsEntry> {
    text.lines().filter_map(parse_numa_maps_line).collect()
}

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapsEntry {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub offset: u64,
    pub dev: String,
    pub inode: u64,
    /// Path or pseudo-name (`[heap]`, `[stack]`, `[anon:name]`); `None` for anonymous.
    pub path: Option<String>,
}

/// Parses one maps line. The path is everything after the inode column (it may hold spaces;
/// the kernel escapes only newlines, as `\012`).
pub fn parse_maps_line(line: &str) -> Option<MapsEntry> {
    let mut rest = line;
    let mut next = || -> Option<&str> {
        let t = rest.trim_start();
        let end = t.find(' ').unwrap_or(t.len());
        let (tok, r) = t.split_at(end);
        rest = r;
        if tok.is_empty() {
            None
        } else {
            Some(tok)
        }
    };
    let range = next()?;
    let perms = next()?.to_string();
    let offset = u64::from_str_radix(next()?, 16).ok()?;
    let dev = next()?.to_string();
    let inode = next()?.parse().ok()?;
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    let p = rest.trim_start();
    let path = if p.is_empty() { None } else { Some(unescape_octal(p)) };
    Some(MapsEntry { start, end, perms, offset, dev, inode, path })
}

pub fn parse_maps(text: &str) -> Vec<MapsEntry> {
    text.lines().filter_map(parse_maps_line).collect()
}

/// The `regions.prot` value of a maps permissions field: the kernel's four characters
/// (fs/proc/task_mmu.c `show_vma_header_prefix`: `r`/`-` VM_READ, `w`/`-` VM_WRITE, `x`/`-` VM_EXEC,
/// `s` VM_MAYSHARE or `p`), as printed, e.g. `r--p`, `rw-s`; `None` for anything else (not a
/// maps line the collector understands: the column says unknown rather than guess).
pub fn maps_prot(perms: &str) -> Option<String> {
    let b = perms.as_bytes();
    let ok = b.len() == 4
        && matches!(b[0], b'r' | b'-')
        && matches!(b[1], b'w' | b'-')
        && matches!(b[2], b'x' | b'-')
        && matches!(b[3], b's' | b'p');
    ok.then(|| perms.to_string())
}

/// The fields of `/proc/PID/task/TID/stat` the collector uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskStat {
    pub pid: i32,
    pub comm: String,
    pub state: char,
    /// Field 22: start time in clock ticks since boot.
    pub start_time_ticks: u64,
    /// Field 39: cpu the task last ran on.
    pub processor: i32,
}

/// Parses a stat line. `comm` (field 2) is in parentheses and may itself contain spaces and
/// parentheses, so fields after it are located from the *last* `)`.
pub fn parse_task_stat(text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // fields[0] is field 3 (state); field N is fields[N - 3].
    let state = fields.first()?.chars().next()?;
    let start_time_ticks = fields.get(22 - 3)?.parse().ok()?;
    let processor = fields.get(39 - 3)?.parse().ok()?;
    Some(TaskStat { pid, comm, state, start_time_ticks, processor })
}

/// `se.nr_migrations` from `/proc/PID/task/TID/sched` (needs CONFIG_SCHED_DEBUG for the file).
pub fn parse_sched_nr_migrations(text: &str) -> Option<u64> {
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            if k.trim() == "se.nr_migrations" {
                return v.trim().parse().ok();
            }
        }
    }
    None
}

/// `name value` lines (vmstat, numastat).
pub fn parse_name_values(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            let v = it.next()?.parse().ok()?;
            Some((k.to_string(), v))
        })
        .collect()
}

/// The NUMA-related counters of /proc/vmstat: `numa_*` and `pgmigrate_*`.
pub fn parse_vmstat_numa(text: &str) -> Vec<(String, u64)> {
    parse_name_values(text).into_iter().filter(|(k, _)| k.starts_with("numa_") || k.starts_with("pgmigrate_")).collect()
}

/// Reads a node's numastat (`numa_hit`, `numa_miss`, …).
pub fn read_node_numastat(sys_root: &Path, node: u32) -> io::Result<Vec<(String, u64)>> {
    let text = fs::read_to_string(sys_root.join(format!("devices/system/node/node{node}/numastat")))?;
    Ok(parse_name_values(&text))
}

/// Reads a node's meminfo as bytes (`MemTotal`, `MemFree`, `MemUsed`, …).
pub fn read_node_meminfo(sys_root: &Path, node: u32) -> io::Result<BTreeMap<String, u64>> {
    let text = fs::read_to_string(sys_root.join(format!("devices/system/node/node{node}/meminfo")))?;
    Ok(crate::topology::parse_node_meminfo(&text))
}

/// The region kind of a mapping: `heap`, `stack`, `anon`, `file`, `shm`, `vdso`, `other`.
pub fn region_kind(path: Option<&str>, numa: Option<&NumaMapsEntry>) -> &'static str {
    if let Some(n) = numa {
        if n.heap {
            return "heap";
        }
        if n.stack {
            return "stack";
        }
    }
    match path {
        None => "anon",
        Some("[heap]") => "heap",
        Some(p) if p == "[stack]" || p.starts_with("[stack:") => "stack",
        Some("[vdso]" | "[vvar]" | "[vsyscall]" | "[vvar_vclock]") => "vdso",
        Some(p) if p.starts_with("[anon:") || p.starts_with("[anon_shmem:") => "anon",
        Some(p) if p.starts_with("/dev/shm/") || p.starts_with("/SYSV") || p.starts_with("/memfd:") => "shm",
        Some(p) if p.starts_with('/') => "file",
        Some(_) => "other",
    }
}

/// Process start time (stat field 22) or `None` if the process is gone.
pub fn process_start_ticks(proc_root: &Path, pid: i32) -> Option<u64> {
    let text = fs::read_to_string(proc_root.join(format!("{pid}/stat"))).ok()?;
    parse_task_stat(&text).map(|s| s.start_time_ticks)
}

/// Thread ids of a process (`/proc/PID/task/*`).
pub fn list_tasks(proc_root: &Path, pid: i32) -> io::Result<Vec<i32>> {
    let mut out: Vec<i32> = fs::read_dir(proc_root.join(format!("{pid}/task")))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// `/proc/PID/cmdline` split at NULs.
pub fn read_cmdline(proc_root: &Path, pid: i32) -> io::Result<Vec<String>> {
    let b = fs::read(proc_root.join(format!("{pid}/cmdline")))?;
    Ok(b.split(|&c| c == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect())
}

/// One field of a `/proc/PID/status` text ("Name", "Tgid", "Uid", "CapEff", …): what follows
/// "Field:" on its line, trimmed; `None` where the text has no such line.
pub fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

/// The four uids of a status text's `Uid:` line: real, effective, saved, file system.
pub fn status_uids(status: &str) -> Option<[u32; 4]> {
    let mut it = status_field(status, "Uid")?.split_whitespace().map(|v| v.parse::<u32>().ok());
    let uids = [it.next()??, it.next()??, it.next()??, it.next()??];
    Some(uids)
}

/// Real uid of a process (`/proc/PID/status` Uid line).
pub fn process_uid(proc_root: &Path, pid: i32) -> Option<u32> {
    let s = fs::read_to_string(proc_root.join(format!("{pid}/status"))).ok()?;
    status_uids(&s).map(|u| u[0])
}

/// The thread group (process) thread `tid` belongs to (`/proc/TID/status` Tgid): the tid itself
/// for a process's main thread; `None` when the thread is gone.
pub fn thread_group(proc_root: &Path, tid: i32) -> Option<i32> {
    let s = fs::read_to_string(proc_root.join(format!("{tid}/status"))).ok()?;
    status_field(&s, "Tgid")?.parse().ok()
}

/// The process is a zombie or dead (`/proc/PID/stat` state Z or X).
pub fn is_zombie(proc_root: &Path, pid: i32) -> bool {
    fs::read_to_string(proc_root.join(format!("{pid}/stat")))
        .ok()
        .and_then(|s| parse_task_stat(&s))
        .is_some_and(|s| s.state == 'Z' || s.state == 'X')
}

/// The process still runs: it is in /proc, not a zombie, and (given `start_ticks`) started at
/// that time, so a reused pid is not taken for it.
pub fn process_alive(proc_root: &Path, pid: i32, start_ticks: Option<u64>) -> bool {
    match process_start_ticks(proc_root, pid) {
        Some(t) => start_ticks.is_none_or(|s| s == t) && !is_zombie(proc_root, pid),
        None => false,
    }
}

/// A thread's name (`/proc/PID/task/TID/comm`, without the newline), or "" when unreadable.
pub fn read_thread_name(proc_root: &Path, pid: i32, tid: u32) -> String {
    fs::read_to_string(proc_root.join(format!("{pid}/task/{tid}/comm")))
        .map(|c| c.trim_end().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_prot_keeps_the_four_permission_characters() {
        let text = "\
7f0000000000-7f0040000000 r--s 00000000 fd:01 77 /models/llama 70b.gguf
7f1000000000-7f1000021000 rw-p 00000000 00:00 0
7f2000000000-7f2000001000 ---p 00000000 00:00 0
7f3000000000-7f3000010000 r-xp 00001000 fd:01 12 /usr/lib/libc.so.6
7f4000000000-7f4000001000 rw-s 00000000 00:05 42 /dev/shm/ring
";
        let prots: Vec<Option<String>> = parse_maps(text).iter().map(|m| maps_prot(&m.perms)).collect();
        let want = ["r--s", "rw-p", "---p", "r-xp", "rw-s"].map(|p| Some(p.to_string()));
        assert_eq!(prots, want);
        // Anything but the kernel's four characters is unknown, not guessed.
        for bad in ["", "rw-", "rw-pp", "RW-P", "rwxq", "w--p", "-r-p"] {
            assert_eq!(maps_prot(bad), None, "{bad:?}");
        }
    }
}
