//! Apply a placement plan (docs/plan-format.md) to a live process, and roll it back.
//!
//! Order of work (docs/apply.md):
//! 1. validate the plan ([`plan::parse_plan`]);
//! 2. [`check_target`]: same machine (node ids, distances), same process (pid + start time),
//!    listed threads still belong to it;
//! 3. permission pre-flight: the uid/capability rule for `sched_setaffinity`, and a
//!    `move_pages` query of every planned page (needs ptrace read access), before anything
//!    changes;
//! 4. move pages that are not already on their target node, in batches, under a time budget;
//! 5. pin threads to all cpus of their target nodes;
//! 6. verify: query every page again and read every thread's affinity back;
//! 7. return a report (planned vs achieved) and a rollback record of what was changed.
//!
//! Only the process named by the plan (or the rollback record) is touched.

pub mod audit;
pub mod plan;
pub mod sys;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::numa_sys::query_page_nodes;
use crate::procfs;
use crate::topology::Topology;
pub use plan::{parse_plan, Action, Expected, PageRange, Plan, PlanError, ThreadPin};

/// `CAP_SYS_NICE` and `CAP_SYS_PTRACE` bit numbers (linux/capability.h).
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_NICE: u32 = 23;

pub const ROLLBACK_FORMAT: &str = "numascope-rollback";
pub const ROLLBACK_VERSION: u64 = 1;

#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// List what would be done; change nothing.
    pub dry_run: bool,
    /// Stop moving pages after this long (pinning and verification still run).
    pub budget: Option<Duration>,
    /// Pages per `move_pages` call.
    pub batch_pages: usize,
    /// Progress lines on stderr.
    pub progress: bool,
    /// Also call move_pages for pages already on their target node (tests the move path on a
    /// one-node machine; the kernel treats such moves as no-ops).
    pub no_skip: bool,
    /// Pause between `move_pages` batches (limits the impact on the running process).
    pub pause: Option<Duration>,
    /// Threads issuing `move_pages` (and the page queries) on disjoint page sets at once; 0:
    /// the number of cpus, at most [`MAX_AUTO_JOBS`]. A pause between batches implies 1.
    pub jobs: usize,
    pub proc_root: PathBuf,
}

/// Upper bound of the automatic `jobs` (the number of cpus beyond this gains little: the
/// kernel serialises parts of a migration on the target's page tables and the LRU locks).
pub const MAX_AUTO_JOBS: usize = 8;

impl ApplyOptions {
    /// The number of threads a run uses for `work` pages: `jobs` (0: the number of cpus, at most
    /// [`MAX_AUTO_JOBS`]), 1 with a pause between batches, never more than there are batches.
    pub fn effective_jobs(&self, work: usize) -> usize {
        self.max_jobs().min(work.div_ceil(self.batch_pages.max(1))).max(1)
    }

    /// `jobs`, or the number of cpus (at most [`MAX_AUTO_JOBS`]) for 0; 1 with a pause.
    pub fn max_jobs(&self) -> usize {
        if self.pause.is_some() {
            1
        } else if self.jobs > 0 {
            self.jobs
        } else {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(MAX_AUTO_JOBS)
        }
    }
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            dry_run: false,
            budget: None,
            batch_pages: 4096,
            progress: false,
            no_skip: false,
            pause: None,
            jobs: 0,
            proc_root: PathBuf::from("/proc"),
        }
    }
}

/// Why Apply refused or failed before it changed anything.
#[derive(Debug)]
pub enum ApplyError {
    Plan(PlanError),
    /// The plan was made for another machine.
    WrongMachine(String),
    /// No such process (or it exited before anything was changed).
    NoProcess {
        pid: i32,
    },
    /// The pid is now another process.
    PidReused {
        pid: i32,
        expected: u64,
        found: u64,
    },
    /// A listed thread no longer belongs to the process.
    ThreadNotInProcess {
        tid: i32,
        pid: i32,
    },
    /// Not permitted; the message names the capability or access needed.
    Permission(String),
    Io(String),
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Plan(e) => write!(f, "{e}"),
            ApplyError::WrongMachine(m) => write!(f, "the plan was made for another machine: {m}"),
            ApplyError::NoProcess { pid } => {
                write!(f, "process {pid} does not exist (it exited?); nothing was changed")
            }
            ApplyError::PidReused { pid, expected, found } => write!(
                f,
                "process {pid} is not the process the plan was made for: its start time is {found} ticks, the plan \
                 expects {expected} (the pid was reused); nothing was changed"
            ),
            ApplyError::ThreadNotInProcess { tid, pid } => {
                write!(f, "thread {tid} no longer belongs to process {pid} (/proc/{pid}/task/{tid} is missing); nothing was changed")
            }
            ApplyError::Permission(m) => write!(f, "not permitted: {m}; nothing was changed"),
            ApplyError::Io(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ApplyError {}

impl From<PlanError> for ApplyError {
    fn from(e: PlanError) -> Self {
        ApplyError::Plan(e)
    }
}

// ---------------------------------------------------------------- report

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Dry run: nothing was changed.
    DryRun,
    /// Every planned page is on its target node and every thread is pinned.
    Complete,
    /// Done, but some pages could not be moved or some threads not pinned (see the counts).
    Partial,
    /// The time budget ran out before every page was moved.
    BudgetExhausted,
    /// The process exited midway; the report says what was done before.
    ProcessExited,
}

/// Pages that were not moved, by reason (from the `move_pages` status of each page).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotMoved {
    /// -EBUSY: page busy (locked, under I/O, pinned) — a retry may succeed.
    pub busy: u64,
    /// -EFAULT / -ENOENT: not mapped or never touched (nothing to move).
    pub not_present: u64,
    /// -EACCES / -EPERM: shared with other processes (needs MPOL_MF_MOVE_ALL + CAP_SYS_NICE) or not permitted.
    pub not_permitted: u64,
    /// Failed pages inside a transparent-huge-page mapping (smaps AnonHugePages > 0).
    pub huge_page: u64,
    /// Reported moved but found on another node than planned.
    pub elsewhere: u64,
    /// Other errno values by name.
    pub other: BTreeMap<String, u64>,
}

impl NotMoved {
    pub fn total(&self) -> u64 {
        self.busy
            + self.not_present
            + self.not_permitted
            + self.huge_page
            + self.elsewhere
            + self.other.values().sum::<u64>()
    }
    fn add(&mut self, o: &NotMoved) {
        self.busy += o.busy;
        self.not_present += o.not_present;
        self.not_permitted += o.not_permitted;
        self.huge_page += o.huge_page;
        self.elsewhere += o.elsewhere;
        for (k, v) in &o.other {
            *self.other.entry(k.clone()).or_default() += v;
        }
    }
}

/// Page counts of one range (or the totals).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageStats {
    pub pages: u64,
    /// Pages per node before (present pages only).
    pub before: BTreeMap<u32, u64>,
    /// Pages not present before (never touched, swapped out, not mapped).
    pub not_present_before: u64,
    /// Pages per node the plan wants (present pages only).
    pub planned_after: BTreeMap<u32, u64>,
    pub to_move: u64,
    pub already_in_place: u64,
    /// `move_pages` reported these moved.
    pub moved: u64,
    pub not_moved: NotMoved,
    /// Not attempted because the time budget ran out or the process exited.
    pub not_attempted: u64,
    /// Pages per node found by the verification query (None in a dry run or if the process exited).
    pub after: Option<BTreeMap<u32, u64>>,
    /// Present pages found on their planned node by the verification query.
    pub on_target_after: Option<u64>,
}

impl PageStats {
    fn add(&mut self, o: &PageStats) {
        self.pages += o.pages;
        addmap(&mut self.before, &o.before);
        self.not_present_before += o.not_present_before;
        addmap(&mut self.planned_after, &o.planned_after);
        self.to_move += o.to_move;
        self.already_in_place += o.already_in_place;
        self.moved += o.moved;
        self.not_moved.add(&o.not_moved);
        self.not_attempted += o.not_attempted;
        match (&mut self.after, &o.after) {
            (Some(a), Some(b)) => addmap(a, b),
            (a @ None, Some(b)) if self.pages == o.pages => *a = Some(b.clone()),
            _ => self.after = None,
        }
        self.on_target_after = match (self.on_target_after, o.on_target_after) {
            (Some(a), Some(b)) => Some(a + b),
            (None, Some(b)) if self.pages == o.pages => Some(b),
            _ => None,
        };
    }
}

fn addmap(a: &mut BTreeMap<u32, u64>, b: &BTreeMap<u32, u64>) {
    for (k, v) in b {
        *a.entry(*k).or_default() += v;
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RangeReport {
    #[serde(serialize_with = "plan::ser_hex")]
    pub start: u64,
    #[serde(serialize_with = "plan::ser_hex")]
    pub end: u64,
    /// `move`, `interleave`, or `restore` (rollback).
    pub action: String,
    pub to_nodes: Vec<u32>,
    #[serde(flatten)]
    pub stats: PageStats,
    /// Expected pages per node when the plan was made.
    pub expected_nodes: Option<BTreeMap<u32, u64>>,
    /// Pages of the range in transparent-huge-page mappings (smaps AnonHugePages), in base pages.
    pub thp_pages: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReport {
    pub tid: i32,
    pub to_nodes: Vec<u32>,
    /// All cpus of the target nodes.
    pub cpus: Vec<u32>,
    pub previous_cpus: Option<Vec<u32>>,
    /// Affinity read back after pinning (None in a dry run or on error).
    pub read_back: Option<Vec<u32>>,
    pub pinned: bool,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyReport {
    /// `apply` or `rollback`.
    pub operation: String,
    pub pid: i32,
    #[serde(serialize_with = "ser_dec")]
    pub start_time_ticks: u64,
    pub dry_run: bool,
    pub status: Status,
    pub message: Option<String>,
    pub page_size: u64,
    pub pages: PageStats,
    pub ranges: Vec<RangeReport>,
    pub threads: Vec<ThreadReport>,
    /// The planner's totals (`expected` of the plan), for planned-vs-achieved.
    pub expected: Option<Expected>,
    pub warnings: Vec<String>,
    /// Threads that issued `move_pages` (`--jobs`; 1 in a dry run or with a pause).
    pub jobs: usize,
    pub elapsed_ms: f64,
    /// Where the rollback record was written (set by the caller).
    pub rollback_record: Option<String>,
}

fn ser_dec<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

// ---------------------------------------------------------------- rollback record

/// What Apply changed, so that `numascope rollback` can restore it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackRecord {
    pub format: String,
    pub version: u64,
    pub pid: i32,
    /// Decimal string, as in the plan.
    pub start_time_ticks: String,
    pub page_size: u64,
    /// Runs of consecutive pages that were moved, with the node they were on before.
    pub pages: Vec<PageRun>,
    /// Threads whose affinity was changed, with their previous affinity.
    pub threads: Vec<ThreadAffinity>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageRun {
    /// First page address, hex string.
    pub start: String,
    pub count: u64,
    /// Node the pages were on before Apply moved them.
    pub node: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadAffinity {
    pub tid: i32,
    pub cpus: Vec<u32>,
}

impl RollbackRecord {
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty() && self.threads.is_empty()
    }

    /// Parses a rollback record and checks its format and version.
    pub fn parse(text: &str) -> Result<RollbackRecord, String> {
        let r: RollbackRecord = serde_json::from_str(text).map_err(|e| format!("not a rollback record: {e}"))?;
        if r.format != ROLLBACK_FORMAT {
            return Err(format!("format: expected \"{ROLLBACK_FORMAT}\", found {:?}", r.format));
        }
        if r.version != ROLLBACK_VERSION {
            return Err(format!(
                "version: this numascope reads rollback records of version {ROLLBACK_VERSION}, found {}",
                r.version
            ));
        }
        for (i, p) in r.pages.iter().enumerate() {
            parse_hex(&p.start).ok_or_else(|| format!("pages[{i}].start: {:?} is not a hex address", p.start))?;
        }
        r.start_time_ticks
            .parse::<u64>()
            .map_err(|_| format!("startTimeTicks: {:?} is not a decimal number", r.start_time_ticks))?;
        Ok(r)
    }
}

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

// ---------------------------------------------------------------- checks

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
    check_process(pid, plan.target.start_time_ticks, proc_root).and_then(|st| {
        for t in &plan.threads {
            if !proc_root.join(format!("{pid}/task/{}", t.tid)).exists() {
                return Err(ApplyError::ThreadNotInProcess { tid: t.tid, pid });
            }
        }
        Ok(st)
    })
}

/// The process exists and (when `expected` is given) has that start time.
pub fn check_process(pid: i32, expected: Option<u64>, proc_root: &Path) -> Result<u64, ApplyError> {
    let st = procfs::process_start_ticks(proc_root, pid).ok_or(ApplyError::NoProcess { pid })?;
    if let Some(e) = expected {
        if e != st {
            return Err(ApplyError::PidReused { pid, expected: e, found: st });
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

struct Creds {
    uids: [u32; 4],
    cap_eff: u64,
}

fn read_creds(path: &Path) -> Option<Creds> {
    let text = fs::read_to_string(path).ok()?;
    let mut uids = None;
    let mut cap_eff = 0;
    for l in text.lines() {
        if let Some(v) = l.strip_prefix("Uid:") {
            let u: Vec<u32> = v.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if u.len() == 4 {
                uids = Some([u[0], u[1], u[2], u[3]]);
            }
        } else if let Some(v) = l.strip_prefix("CapEff:") {
            cap_eff = u64::from_str_radix(v.trim(), 16).unwrap_or(0);
        }
    }
    Some(Creds { uids: uids?, cap_eff })
}

/// `sched_setaffinity` rule (man 2 sched_setaffinity): our euid equals the target's ruid or
/// euid, or we have CAP_SYS_NICE. Checked before anything changes.
fn check_pin_permission(pid: i32, proc_root: &Path) -> Result<(), ApplyError> {
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

fn page_permission_message(pid: i32, proc_root: &Path, e: &io::Error) -> String {
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

/// Base pages of `[start, end)` that lie in mappings with transparent huge pages
/// (`/proc/PID/smaps` AnonHugePages > 0), as (mapping start, mapping end) pairs.
pub fn thp_mappings(pid: i32, proc_root: &Path) -> Vec<(u64, u64)> {
    let Ok(text) = fs::read_to_string(proc_root.join(format!("{pid}/smaps"))) else { return Vec::new() };
    parse_smaps_thp(&text)
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

fn in_thp(maps: &[(u64, u64)], addr: u64) -> bool {
    maps.iter().any(|&(a, b)| addr >= a && addr < b)
}

// ---------------------------------------------------------------- the engine

/// One group of pages with their target nodes (a plan range, or a rollback).
struct Group {
    start: u64,
    end: u64,
    action: String,
    to_nodes: Vec<u32>,
    expected_nodes: Option<BTreeMap<u32, u64>>,
    addrs: Vec<u64>,
    targets: Vec<u32>,
}

fn plan_groups(plan: &Plan, page: u64) -> Vec<Group> {
    plan.page_ranges
        .iter()
        .map(|r| {
            let n = (r.end - r.start) / page;
            Group {
                start: r.start,
                end: r.end,
                action: match r.action {
                    Action::Move => "move".into(),
                    Action::Interleave => "interleave".into(),
                },
                to_nodes: r.to_nodes.clone(),
                expected_nodes: r.expected_nodes.clone(),
                addrs: (0..n).map(|i| r.start + i * page).collect(),
                targets: (0..n).map(|i| r.target_of(i)).collect(),
            }
        })
        .collect()
}

struct Thread {
    tid: i32,
    to_nodes: Vec<u32>,
    cpus: Vec<u32>,
}

/// The result of [`apply`]: the report and what to write as the rollback record.
pub struct ApplyOutcome {
    pub report: ApplyReport,
    pub rollback: RollbackRecord,
}

/// Applies `plan` (already parsed and validated) to its target process.
pub fn apply(plan: &Plan, topo: &Topology, opts: &ApplyOptions) -> Result<ApplyOutcome, ApplyError> {
    let start_time = check_target(plan, topo, &opts.proc_root)?;
    let page = topo.page_size_bytes;
    let groups = plan_groups(plan, page);
    let mut threads = Vec::new();
    for t in &plan.threads {
        let mut cpus: Vec<u32> =
            topo.nodes.iter().filter(|n| t.to_nodes.contains(&n.id)).flat_map(|n| n.cpus.iter().copied()).collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return Err(ApplyError::WrongMachine(format!(
                "threads: nodes {:?} (for thread {}) have no cpus on this machine",
                t.to_nodes, t.tid
            )));
        }
        threads.push(Thread { tid: t.tid, to_nodes: t.to_nodes.clone(), cpus });
    }
    let mut out = run(plan.target.pid, start_time, page, groups, threads, opts, "apply")?;
    out.report.expected = plan.expected.clone();
    Ok(out)
}

/// Restores what a rollback record lists: pages back to their previous nodes and threads'
/// previous affinities. Threads that have exited are reported, not an error.
pub fn rollback(record: &RollbackRecord, topo: &Topology, opts: &ApplyOptions) -> Result<ApplyOutcome, ApplyError> {
    let st: u64 = record.start_time_ticks.parse().map_err(|_| ApplyError::Io("bad startTimeTicks".into()))?;
    let start_time = check_process(record.pid, Some(st), &opts.proc_root)?;
    let page = if record.page_size > 0 { record.page_size } else { topo.page_size_bytes };
    let live: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    let mut addrs = Vec::new();
    let mut targets = Vec::new();
    for (i, r) in record.pages.iter().enumerate() {
        if !live.contains(&r.node) {
            return Err(ApplyError::WrongMachine(format!(
                "pages[{i}].node: node {} does not exist on this machine",
                r.node
            )));
        }
        let s = parse_hex(&r.start).ok_or_else(|| ApplyError::Io(format!("pages[{i}].start is not a hex address")))?;
        for k in 0..r.count {
            addrs.push(s + k * page);
            targets.push(r.node);
        }
    }
    let mut groups = Vec::new();
    if !addrs.is_empty() {
        let mut nodes: Vec<u32> = targets.clone();
        nodes.sort_unstable();
        nodes.dedup();
        groups.push(Group {
            start: *addrs.iter().min().unwrap(),
            end: addrs.iter().max().unwrap() + page,
            action: "restore".into(),
            to_nodes: nodes,
            expected_nodes: None,
            addrs,
            targets,
        });
    }
    let threads =
        record.threads.iter().map(|t| Thread { tid: t.tid, to_nodes: Vec::new(), cpus: t.cpus.clone() }).collect();
    run(record.pid, start_time, page, groups, threads, opts, "rollback")
}

fn progress(opts: &ApplyOptions, done: u64, total: u64, t0: Instant) {
    if opts.progress {
        let pct = if total > 0 { done as f64 * 100.0 / total as f64 } else { 100.0 };
        eprintln!("numascope: moved {done}/{total} pages ({pct:.0}%) in {:.2} s", t0.elapsed().as_secs_f64());
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    pid: i32,
    start_time: u64,
    page: u64,
    groups: Vec<Group>,
    threads: Vec<Thread>,
    opts: &ApplyOptions,
    operation: &str,
) -> Result<ApplyOutcome, ApplyError> {
    let t0 = Instant::now();
    let proc_root = &opts.proc_root;
    let mut warnings = Vec::new();

    // -- permission pre-flight for pinning (nothing has changed yet)
    if !threads.is_empty() {
        check_pin_permission(pid, proc_root)?;
    }

    // -- query every page (also the permission pre-flight for move_pages)
    let mut befores: Vec<Vec<i32>> = Vec::with_capacity(groups.len());
    for g in &groups {
        match query_nodes(pid, &g.addrs, opts.max_jobs()) {
            Ok(s) => befores.push(s),
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(libc::ESRCH) => ApplyError::NoProcess { pid },
                    Some(libc::EPERM) | Some(libc::EACCES) => {
                        ApplyError::Permission(page_permission_message(pid, proc_root, &e))
                    }
                    _ => ApplyError::Io(format!("move_pages query of process {pid} failed: {e}")),
                })
            }
        }
    }
    let thp = thp_mappings(pid, proc_root);

    // -- per-group stats before, and the work list
    let mut ranges: Vec<RangeReport> = Vec::new();
    for (g, before) in groups.iter().zip(&befores) {
        let mut s = PageStats { pages: g.addrs.len() as u64, ..Default::default() };
        for (i, &b) in before.iter().enumerate() {
            if b >= 0 {
                *s.before.entry(b as u32).or_default() += 1;
                *s.planned_after.entry(g.targets[i]).or_default() += 1;
                if b as u32 == g.targets[i] && !opts.no_skip {
                    s.already_in_place += 1;
                } else {
                    s.to_move += 1;
                }
            } else {
                s.not_present_before += 1;
            }
        }
        let thp_pages = g.addrs.iter().filter(|&&a| in_thp(&thp, a)).count() as u64;
        if thp_pages > 0 {
            warnings.push(format!(
                "range 0x{:x}-0x{:x}: {thp_pages} pages are in mappings backed by transparent huge pages (smaps \
                 AnonHugePages): move_pages moves a whole 2 MiB page when asked to move any 4 KiB page of it, so an \
                 interleave at 4 KiB granularity cannot be achieved there, and tail pages may report EBUSY",
                g.start, g.end
            ));
        }
        ranges.push(RangeReport {
            start: g.start,
            end: g.end,
            action: g.action.clone(),
            to_nodes: g.to_nodes.clone(),
            stats: s,
            expected_nodes: g.expected_nodes.clone(),
            thp_pages,
        });
    }

    let mut status = if opts.dry_run { Status::DryRun } else { Status::Complete };
    let mut message = None;
    let mut rollback = RollbackRecord {
        format: ROLLBACK_FORMAT.into(),
        version: ROLLBACK_VERSION,
        pid,
        start_time_ticks: start_time.to_string(),
        page_size: page,
        pages: Vec::new(),
        threads: Vec::new(),
    };
    let mut thread_reports: Vec<ThreadReport> = threads
        .iter()
        .map(|t| ThreadReport {
            tid: t.tid,
            to_nodes: t.to_nodes.clone(),
            cpus: t.cpus.clone(),
            previous_cpus: sys::get_affinity(t.tid).ok(),
            read_back: None,
            pinned: false,
            error: None,
        })
        .collect();

    let mut jobs = 1;
    if !opts.dry_run {
        // -- move pages
        let total: u64 = ranges.iter().map(|r| r.stats.to_move).sum();
        jobs = opts.effective_jobs(total as usize);
        let mover = Mover {
            pid,
            start_time,
            proc_root,
            opts,
            t0,
            total,
            stop: AtomicBool::new(false),
            budget_hit: AtomicBool::new(false),
            done: AtomicU64::new(0),
            last_progress: Mutex::new(Instant::now()),
        };
        let mut moved_pages: Vec<(u64, u32)> = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            let before = &befores[gi];
            let work: Vec<usize> = (0..g.addrs.len())
                .filter(|&i| before[i] >= 0 && (opts.no_skip || before[i] as u32 != g.targets[i]))
                .collect();
            // Pass 0 moves the work list; pages that were busy (-EBUSY, outside THP mappings)
            // are retried once in pass 1.
            let mut retry: Vec<usize> = Vec::new();
            for pass in 0..2 {
                let list: Vec<usize> = if pass == 0 { work.clone() } else { std::mem::take(&mut retry) };
                let chunks: Vec<&[usize]> = list.chunks(opts.batch_pages.max(1)).collect();
                let results = mover.run_chunks(g, &chunks, pass == 0, jobs);
                let s = &mut ranges[gi].stats;
                for (chunk, result) in chunks.iter().zip(results) {
                    match result {
                        Chunk::NotAttempted => {
                            if pass == 0 {
                                s.not_attempted += chunk.len() as u64;
                            } else {
                                s.not_moved.busy += chunk.len() as u64;
                            }
                        }
                        Chunk::Done(st) => {
                            for (k, &i) in chunk.iter().enumerate() {
                                let r = st[k];
                                if r >= 0 && r as u32 == g.targets[i] {
                                    s.moved += 1;
                                    moved_pages.push((g.addrs[i], before[i] as u32));
                                } else if r >= 0 {
                                    s.not_moved.elsewhere += 1;
                                    moved_pages.push((g.addrs[i], before[i] as u32));
                                } else if in_thp(&thp, g.addrs[i]) {
                                    s.not_moved.huge_page += 1;
                                } else if pass == 0 && -r == libc::EBUSY {
                                    retry.push(i);
                                } else {
                                    classify(&mut s.not_moved, -r);
                                }
                            }
                        }
                        // ESRCH: gone; an exiting process (zombie, no mm) gives EINVAL.
                        Chunk::Failed { exited: true, .. } => {
                            status = Status::ProcessExited;
                            s.not_attempted += chunk.len() as u64;
                        }
                        Chunk::Failed { err: e, exited: false } => match e.raw_os_error() {
                            Some(libc::EPERM) | Some(libc::EACCES) => {
                                if status != Status::ProcessExited {
                                    status = Status::Partial;
                                }
                                message.get_or_insert_with(|| page_permission_message(pid, proc_root, &e));
                                s.not_attempted += chunk.len() as u64;
                            }
                            Some(n) => {
                                *s.not_moved.other.entry(sys::errno_name(n)).or_default() += chunk.len() as u64;
                            }
                            None => {
                                *s.not_moved.other.entry("unknown".into()).or_default() += chunk.len() as u64;
                            }
                        },
                    }
                }
            }
        }
        if let (true, Status::Complete, Some(b)) = (mover.budget_hit.load(Ordering::SeqCst), status, opts.budget) {
            status = Status::BudgetExhausted;
            message = Some(format!("the time budget of {} ms ran out; remaining pages were not moved", b.as_millis()));
        }
        if total > 0 {
            progress(opts, mover.done.load(Ordering::SeqCst), total, t0);
        }
        rollback.pages = runs(&mut moved_pages, page);

        // -- pin threads
        if status != Status::ProcessExited {
            for (t, r) in threads.iter().zip(thread_reports.iter_mut()) {
                match sys::set_affinity(t.tid, &t.cpus) {
                    Ok(()) => {
                        if let Some(prev) = &r.previous_cpus {
                            rollback.threads.push(ThreadAffinity { tid: t.tid, cpus: prev.clone() });
                        }
                        match sys::get_affinity(t.tid) {
                            Ok(rb) => {
                                r.pinned = rb == t.cpus;
                                if !r.pinned {
                                    r.error = Some(format!(
                                        "affinity read back as {rb:?}, not {:?} (a cpuset cgroup restricts the thread?)",
                                        t.cpus
                                    ));
                                }
                                r.read_back = Some(rb);
                            }
                            Err(e) => r.error = Some(format!("sched_getaffinity: {e}")),
                        }
                    }
                    Err(e) => {
                        r.error = Some(match e.raw_os_error() {
                            Some(libc::ESRCH) => "the thread has exited".to_string(),
                            Some(libc::EPERM) => {
                                format!("sched_setaffinity: {e} (needs CAP_SYS_NICE for another user's thread)")
                            }
                            Some(libc::EINVAL) => format!(
                                "sched_setaffinity: {e} (none of the cpus {:?} is allowed for the thread)",
                                t.cpus
                            ),
                            _ => format!("sched_setaffinity: {e}"),
                        });
                    }
                }
            }
        }

        // -- verify (is it still the same process?)
        let alive = check_process(pid, Some(start_time), proc_root).is_ok();
        if !alive {
            status = Status::ProcessExited;
        }
        if status == Status::ProcessExited {
            let moved: u64 = ranges.iter().map(|r| r.stats.moved).sum();
            let pinned = thread_reports.iter().filter(|t| t.pinned).count();
            message = Some(format!(
                "process {pid} exited midway: {moved} pages had been moved and {pinned} threads pinned before it exited"
            ));
        } else {
            for (gi, g) in groups.iter().enumerate() {
                if let Ok(after) = query_nodes(pid, &g.addrs, opts.max_jobs()) {
                    let s = &mut ranges[gi].stats;
                    let mut hist = BTreeMap::new();
                    let mut on = 0;
                    for (i, &a) in after.iter().enumerate() {
                        if a >= 0 {
                            *hist.entry(a as u32).or_default() += 1;
                            if a as u32 == g.targets[i] {
                                on += 1;
                            }
                        }
                    }
                    s.after = Some(hist);
                    s.on_target_after = Some(on);
                } else {
                    warnings.push(format!("verification query of range 0x{:x}-0x{:x} failed", g.start, g.end));
                }
            }
            let not_moved: u64 = ranges.iter().map(|r| r.stats.not_moved.total()).sum();
            if status == Status::Complete && (not_moved > 0 || thread_reports.iter().any(|t| !t.pinned)) {
                status = Status::Partial;
            }
            // The kernel's per-page status is not the last word (a THP moves as a whole, a
            // page can be migrated again by someone else): the verification query decides.
            let present: u64 = ranges.iter().map(|r| r.stats.pages - r.stats.not_present_before).sum();
            let on: u64 = ranges.iter().filter_map(|r| r.stats.on_target_after).sum();
            if on < present && matches!(status, Status::Complete | Status::Partial) {
                status = Status::Partial;
                let thp = if ranges.iter().any(|r| r.thp_pages > 0) {
                    " (transparent huge pages move as whole 2 MiB pages: see the warning)"
                } else {
                    ""
                };
                message.get_or_insert(format!(
                    "verification found {on} of {present} present pages on their planned node{thp}"
                ));
            }
        }
    }

    let mut totals = PageStats::default();
    for (i, r) in ranges.iter().enumerate() {
        if i == 0 {
            totals = r.stats.clone();
        } else {
            totals.add(&r.stats);
        }
    }
    if ranges.is_empty() && !opts.dry_run && status != Status::ProcessExited {
        totals.after = Some(BTreeMap::new());
        totals.on_target_after = Some(0);
    }
    Ok(ApplyOutcome {
        report: ApplyReport {
            operation: operation.into(),
            pid,
            start_time_ticks: start_time,
            dry_run: opts.dry_run,
            status,
            message,
            page_size: page,
            pages: totals,
            ranges,
            threads: thread_reports,
            expected: None,
            warnings,
            jobs,
            elapsed_ms: t0.elapsed().as_secs_f64() * 1e3,
            rollback_record: None,
        },
        rollback,
    })
}

/// What became of one batch of `move_pages`.
enum Chunk {
    /// Not issued: the time budget ran out or moving stopped (process exited, not permitted).
    NotAttempted,
    /// The per-page status the kernel returned.
    Done(Vec<i32>),
    /// The whole call failed; `exited`: the process is gone (checked right after the failure).
    Failed { err: io::Error, exited: bool },
}

/// Issues `move_pages` batches, on `jobs` threads at once when asked (disjoint page sets of one
/// process: the kernel allows concurrent `move_pages` on one mm). Shared state: a stop flag
/// (budget out, process gone, not permitted), the progress counter and its 250 ms throttle.
struct Mover<'a> {
    pid: i32,
    start_time: u64,
    proc_root: &'a Path,
    opts: &'a ApplyOptions,
    t0: Instant,
    total: u64,
    stop: AtomicBool,
    budget_hit: AtomicBool,
    done: AtomicU64,
    last_progress: Mutex<Instant>,
}

impl Mover<'_> {
    /// Moves each chunk (indices into `g`) to its targets; results in chunk order.
    fn run_chunks(&self, g: &Group, chunks: &[&[usize]], count_done: bool, jobs: usize) -> Vec<Chunk> {
        if jobs <= 1 || chunks.len() <= 1 {
            return chunks.iter().map(|c| self.one(g, c, count_done)).collect();
        }
        let next = AtomicUsize::new(0);
        let mut out: Vec<(usize, Chunk)> = std::thread::scope(|sc| {
            let workers: Vec<_> = (0..jobs.min(chunks.len()))
                .map(|_| {
                    sc.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let k = next.fetch_add(1, Ordering::SeqCst);
                            if k >= chunks.len() {
                                break;
                            }
                            mine.push((k, self.one(g, chunks[k], count_done)));
                        }
                        mine
                    })
                })
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("move_pages worker panicked")).collect()
        });
        out.sort_by_key(|(k, _)| *k);
        out.into_iter().map(|(_, c)| c).collect()
    }

    fn one(&self, g: &Group, chunk: &[usize], count_done: bool) -> Chunk {
        if self.stop.load(Ordering::SeqCst) {
            return Chunk::NotAttempted;
        }
        if let Some(b) = self.opts.budget {
            if self.t0.elapsed() >= b {
                self.budget_hit.store(true, Ordering::SeqCst);
                self.stop.store(true, Ordering::SeqCst);
                return Chunk::NotAttempted;
            }
        }
        if let (Some(p), true) = (self.opts.pause, self.done.load(Ordering::SeqCst) > 0) {
            std::thread::sleep(p);
        }
        let addrs: Vec<u64> = chunk.iter().map(|&i| g.addrs[i]).collect();
        let nodes: Vec<i32> = chunk.iter().map(|&i| g.targets[i] as i32).collect();
        let mut st = vec![0i32; chunk.len()];
        let result = match sys::move_pages(self.pid, &addrs, &nodes, &mut st) {
            Ok(_) => Chunk::Done(st),
            Err(e) => {
                let exited = e.raw_os_error() == Some(libc::ESRCH)
                    || check_process(self.pid, Some(self.start_time), self.proc_root).is_err();
                if exited || matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) {
                    self.stop.store(true, Ordering::SeqCst);
                }
                Chunk::Failed { err: e, exited }
            }
        };
        let done = if count_done {
            self.done.fetch_add(chunk.len() as u64, Ordering::SeqCst) + chunk.len() as u64
        } else {
            self.done.load(Ordering::SeqCst)
        };
        if let Ok(mut last) = self.last_progress.lock() {
            if last.elapsed() >= Duration::from_millis(250) {
                progress(self.opts, done, self.total, self.t0);
                *last = Instant::now();
            }
        }
        result
    }
}

/// `move_pages` query of `addrs` on up to `jobs` threads (disjoint slices).
fn query_nodes(pid: i32, addrs: &[u64], jobs: usize) -> io::Result<Vec<i32>> {
    const MIN_PER_JOB: usize = 8192;
    let j = jobs.min(addrs.len().div_ceil(MIN_PER_JOB)).max(1);
    if j <= 1 {
        return query_page_nodes(pid, addrs);
    }
    let per = addrs.len().div_ceil(j);
    let parts: Vec<io::Result<Vec<i32>>> = std::thread::scope(|sc| {
        let hs: Vec<_> = addrs.chunks(per).map(|c| sc.spawn(move || query_page_nodes(pid, c))).collect();
        hs.into_iter().map(|h| h.join().expect("query worker panicked")).collect()
    });
    let mut out = Vec::with_capacity(addrs.len());
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

fn classify(n: &mut NotMoved, errno: i32) {
    match errno {
        libc::EBUSY => n.busy += 1,
        libc::EFAULT | libc::ENOENT => n.not_present += 1,
        libc::EACCES | libc::EPERM => n.not_permitted += 1,
        e => *n.other.entry(sys::errno_name(e)).or_default() += 1,
    }
}

/// Run-length encodes (address, previous node) pairs into runs of consecutive pages.
fn runs(pages: &mut [(u64, u32)], page: u64) -> Vec<PageRun> {
    pages.sort_unstable();
    let mut out: Vec<(u64, u64, u32)> = Vec::new();
    for &(a, n) in pages.iter() {
        if let Some(last) = out.last_mut() {
            if last.2 == n && last.0 + last.1 * page == a {
                last.1 += 1;
                continue;
            }
        }
        out.push((a, 1, n));
    }
    out.into_iter().map(|(a, c, n)| PageRun { start: format!("0x{a:x}"), count: c, node: n }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_consecutive_pages() {
        let mut p = vec![(0x3000, 1), (0x1000, 0), (0x2000, 0), (0x5000, 0)];
        let r = runs(&mut p, 0x1000);
        assert_eq!(
            r,
            vec![
                PageRun { start: "0x1000".into(), count: 2, node: 0 },
                PageRun { start: "0x3000".into(), count: 1, node: 1 },
                PageRun { start: "0x5000".into(), count: 1, node: 0 },
            ]
        );
    }

    #[test]
    fn smaps_thp_ranges() {
        let t = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nSize: 4096 kB\nAnonHugePages:   2048 kB\n\
                 7f0000400000-7f0000500000 rw-p 00000000 00:00 0\nAnonHugePages:      0 kB\n";
        assert_eq!(parse_smaps_thp(t), vec![(0x7f0000000000, 0x7f0000400000)]);
    }

    #[test]
    fn rollback_record_round_trip() {
        let r = RollbackRecord {
            format: ROLLBACK_FORMAT.into(),
            version: 1,
            pid: 5,
            start_time_ticks: "77".into(),
            page_size: 4096,
            pages: vec![PageRun { start: "0x1000".into(), count: 3, node: 0 }],
            threads: vec![ThreadAffinity { tid: 6, cpus: vec![0, 1] }],
        };
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains("\"startTimeTicks\":\"77\""), "{s}");
        assert_eq!(RollbackRecord::parse(&s).unwrap(), r);
        assert!(RollbackRecord::parse(&s.replace("numascope-rollback", "x")).is_err());
    }
}
