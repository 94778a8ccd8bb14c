//! Apply a placement plan (docs/plan-format.md) to a live process, and roll it back.
//!
//! Order of work (docs/apply.md):
//! 1. validate the plan ([`plan::parse_plan`]), within the documented size limits;
//! 2. [`check_target`]: same machine (node ids, distances), same process (pid + start time),
//!    listed threads belong to it (a thread of another process is refused, naming its owner);
//! 3. the page ranges are clipped to the target's mappings (`/proc/PID/maps`): a range outside
//!    every mapping is refused, the unmapped part of a range is skipped and reported;
//! 4. permission pre-flight: the uid/capability rule for `sched_setaffinity`, and a
//!    `move_pages` query of every planned page (needs ptrace read access), before anything
//!    changes;
//! 5. move pages that are not already on their target node, in batches, under a time budget;
//! 6. pin threads to all cpus of their target nodes (each thread checked again just before);
//! 7. verify: query every page again and read every thread's affinity back;
//! 8. return a report (planned vs achieved) and a rollback record of what was changed.
//!
//! Pages are never listed: every pass walks the clipped ranges in batches ([`pages`]), so
//! memory is proportional to ranges, mappings and batches, not to pages. Only the process named
//! by the plan (or the rollback record) is touched.

pub mod audit;
pub mod launch;
pub mod pages;
pub mod plan;
pub mod plan_objects;
pub mod retarget;
pub mod run;
pub mod sys;
pub mod vma_view;
pub mod weights;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::procfs;
use crate::topology::Topology;
use pages::{Cursor, Group, RunBuilder, Sizer, MAX_BATCH_PAGES, MAX_PAGES_IN_FLIGHT, QUERY_BATCH_PAGES};
pub use plan::{
    parse_plan, Action, Expected, PageRange, Plan, PlanError, PlanErrorKind, ThreadPin, APPLY_MAX_RUNS, MAX_CPUS,
    MAX_NODES, MAX_PAGES_PER_RANGE, MAX_PAGE_RANGES, MAX_PLAN_BYTES, MAX_RECORD_BYTES, MAX_ROLLBACK_RUNS, MAX_THREADS,
    MAX_TOTAL_PAGES,
};

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
    /// Pages per `move_pages` call (1 to [`pages::MAX_BATCH_PAGES`]; clamped), or 0: adaptive,
    /// as many as one call moves in about [`pages::TARGET_CALL`] ([`pages::Sizer`]).
    pub batch_pages: usize,
    /// Progress lines on stderr.
    pub progress: bool,
    /// Also call move_pages for pages already on their target node (tests the move path on a
    /// one-node machine; the kernel treats such moves as no-ops).
    pub no_skip: bool,
    /// Query every page with `move_pages` before and after the moves, never numa_maps
    /// (`vma_view`): the per-page way, to compare or to rule numa_maps out.
    pub query_every_page: bool,
    /// Pause between `move_pages` batches (limits the impact on the running process).
    pub pause: Option<Duration>,
    /// Threads issuing `move_pages` (and the page queries) on disjoint page sets at once; 0:
    /// the number of cpus, at most [`MAX_AUTO_JOBS`]. A pause between batches implies 1.
    pub jobs: usize,
    pub proc_root: PathBuf,
    /// Write the plan's `systemWeights` (`--set-system-weights`); without it they are reported
    /// as not applied.
    pub set_system_weights: bool,
    /// The kernel's weighted-interleave weights ([`weights::WEIGHTS_SYSFS`]; tests use a copy).
    pub weights_dir: PathBuf,
}

/// Upper bound of the automatic `jobs` (the number of cpus beyond this gains little: the
/// kernel serialises parts of a migration on the target's page tables and the LRU locks).
pub const MAX_AUTO_JOBS: usize = 8;

impl ApplyOptions {
    /// The number of threads a run uses for `work` pages: `jobs` (0: the number of cpus, at most
    /// [`MAX_AUTO_JOBS`]), 1 with a pause between batches, never more than there are batches.
    pub fn effective_jobs(&self, work: usize) -> usize {
        let (first, largest) = match self.fixed_batch() {
            Some(b) => (b, b),
            None => (pages::PAGES_PER_JOB, MAX_BATCH_PAGES),
        };
        self.max_jobs().min(work.div_ceil(first)).min(MAX_PAGES_IN_FLIGHT / largest).max(1)
    }

    /// `batch_pages` within 1..=[`MAX_BATCH_PAGES`], or `None` for adaptive batches (0).
    pub fn fixed_batch(&self) -> Option<usize> {
        (self.batch_pages > 0).then(|| self.batch_pages.clamp(1, MAX_BATCH_PAGES))
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
            batch_pages: 0,
            progress: false,
            no_skip: false,
            query_every_page: false,
            pause: None,
            jobs: 0,
            proc_root: PathBuf::from("/proc"),
            set_system_weights: false,
            weights_dir: PathBuf::from(weights::WEIGHTS_SYSFS),
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
    /// A listed thread is a thread of another process (`owner`).
    ForeignThread {
        tid: i32,
        pid: i32,
        owner: i32,
    },
    /// A plan range lies outside every mapping of the process.
    RangeNotMapped {
        /// `pageRanges[i]`
        path: String,
        start: u64,
        end: u64,
        pid: i32,
    },
    /// Not permitted; the message names the capability or access needed.
    Permission(String),
    /// The kernel lacks a feature the plan needs; the message names the kernel version needed.
    Unsupported(String),
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
            ApplyError::ForeignThread { tid, pid, owner } => write!(
                f,
                "thread {tid} belongs to process {owner}, not to process {pid}: numascope only touches the process it \
                 was pointed at; refused, nothing was changed"
            ),
            ApplyError::RangeNotMapped { path, start, end, pid } => write!(
                f,
                "{path} 0x{start:x}-0x{end:x} lies outside every mapping of process {pid} (/proc/{pid}/maps): there \
                 is nothing there to move (was it unmapped since the plan was made?); nothing was changed"
            ),
            ApplyError::Permission(m) => write!(f, "not permitted: {m}; nothing was changed"),
            ApplyError::Unsupported(m) => write!(f, "refused: {m}; nothing was changed"),
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
    /// Pages outside every mapping of the process (`/proc/PID/maps`): skipped, not queried.
    pub unmapped: u64,
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
        self.unmapped += o.unmapped;
        self.add_counts(o);
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
    /// `move`, `interleave`, `weighted-interleave`, or `restore` (rollback).
    pub action: String,
    pub to_nodes: Vec<u32>,
    /// `weighted-interleave`: the weights of `to_nodes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<u8>>,
    #[serde(flatten)]
    pub stats: PageStats,
    /// `weighted-interleave`, after verification: do the per-node counts match the weights?
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight_check: Option<WeightCheck>,
    /// Expected pages per node when the plan was made.
    pub expected_nodes: Option<BTreeMap<u32, u64>>,
    /// Pages of the range in transparent-huge-page mappings (smaps AnonHugePages), in base pages.
    pub thp_pages: u64,
}

/// The verification of a weighted-interleave range (docs/apply.md, "Weighted interleave"): the
/// present pages per node against their share by weight. Whole weight cycles give each node
/// exactly its weight; the last, partial cycle can put up to `w` pages more or less on a node of
/// weight `w` than its exact share, so that is the tolerance (per node: at most one page per
/// slot of a cycle), and no page may be left on a node outside `toNodes`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightCheck {
    /// Present pages found by the verification query.
    pub present: u64,
    /// Weight cycles the present pages span (`ceil(present / sum(weights))`).
    pub cycles: u64,
    /// Per target node: pages by weight (`present × w / sum(weights)`, rounded).
    pub expected: BTreeMap<u32, u64>,
    /// Per node (target or not): pages found.
    pub found: BTreeMap<u32, u64>,
    /// Every target node within its weight of its share, and no page elsewhere.
    pub ok: bool,
}

impl WeightCheck {
    pub fn new(to_nodes: &[u32], weights: &[u8], found: &BTreeMap<u32, u64>) -> WeightCheck {
        let present: u64 = found.values().sum();
        let total: u64 = weights.iter().map(|&w| w as u64).sum::<u64>().max(1);
        let cycles = present.div_ceil(total);
        let mut expected = BTreeMap::new();
        let mut ok = true;
        for (n, w) in to_nodes.iter().zip(weights) {
            let e = ((present as u128 * *w as u128 + total as u128 / 2) / total as u128) as u64;
            expected.insert(*n, e);
            ok &= found.get(n).copied().unwrap_or(0).abs_diff(e) <= *w as u64;
        }
        ok &= found.iter().all(|(n, c)| *c == 0 || to_nodes.contains(n));
        WeightCheck { present, cycles, expected, found: found.clone(), ok }
    }
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
    /// The system-wide weighted-interleave weights written or restored (`--set-system-weights`,
    /// a plan's `systemWeights`; absent when the plan has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_weights: Option<weights::SystemWeightsReport>,
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
    /// The kernel's weighted-interleave weights and `auto` mode before `--set-system-weights`
    /// changed them (absent when they were not changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_weights: Option<weights::WeightsState>,
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
#[serde(rename_all = "camelCase")]
pub struct ThreadAffinity {
    pub tid: i32,
    pub cpus: Vec<u32>,
    /// The thread's own start time when Apply pinned it (`/proc/PID/task/TID/stat` field 22,
    /// decimal string): rollback restores the affinity only while the tid still has it. Absent
    /// in records written before it existed (then not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time_ticks: Option<String>,
}

fn rec_err<T>(path: &str, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::invalid("rollback record", path, message))
}

fn rec_too_large<T>(path: &str, message: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError::too_large("rollback record", path, message))
}

impl RollbackRecord {
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty() && self.threads.is_empty() && self.system_weights.is_none()
    }

    /// Parses a rollback record and checks it with the same care as a plan: format and version,
    /// a positive pid and tids, aligned non-overlapping page runs that stay inside the address
    /// space, and the limits ([`MAX_RECORD_BYTES`], [`MAX_ROLLBACK_RUNS`],
    /// [`MAX_PAGES_PER_RANGE`] per run, [`MAX_TOTAL_PAGES`], [`MAX_THREADS`], [`MAX_CPUS`]).
    pub fn parse(text: &str) -> Result<RollbackRecord, PlanError> {
        if text.len() > MAX_RECORD_BYTES {
            return rec_too_large(
                "",
                format!("the record is {} bytes, more than the limit of {MAX_RECORD_BYTES} bytes", text.len()),
            );
        }
        let r: RollbackRecord = serde_json::from_str(text)
            .map_err(|e| PlanError::invalid("rollback record", "", format!("not JSON of a rollback record: {e}")))?;
        r.validate()?;
        Ok(r)
    }

    /// The checks of [`RollbackRecord::parse`] (format and version included).
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.format != ROLLBACK_FORMAT {
            let f: String = self.format.chars().take(40).collect();
            return rec_err("format", format!("expected \"{ROLLBACK_FORMAT}\", found {f:?}"));
        }
        if self.version != ROLLBACK_VERSION {
            return rec_err(
                "version",
                format!("this numascope reads rollback records of version {ROLLBACK_VERSION}, found {}", self.version),
            );
        }
        if self.pid <= 0 {
            return rec_err("pid", format!("expected a positive process id, found {}", self.pid));
        }
        if self.start_time_ticks.parse::<u64>().is_err() {
            let s: String = self.start_time_ticks.chars().take(40).collect();
            return rec_err("startTimeTicks", format!("{s:?} is not a decimal number"));
        }
        if self.page_size != 0 && (!self.page_size.is_power_of_two() || !(4096..=1 << 30).contains(&self.page_size)) {
            return rec_err(
                "pageSize",
                format!("{} is not a page size (a power of two, 4096 to 1 GiB)", self.page_size),
            );
        }
        self.checked_runs()?;
        if let Some(w) = &self.system_weights {
            w.validate("systemWeights")?;
        }
        if self.threads.len() > MAX_THREADS {
            return rec_too_large(
                "threads",
                format!("{} threads, more than the limit of {MAX_THREADS}", self.threads.len()),
            );
        }
        let mut tids = std::collections::HashSet::new();
        for (i, t) in self.threads.iter().enumerate() {
            let p = format!("threads[{i}]");
            if t.tid <= 0 {
                return rec_err(&format!("{p}.tid"), format!("expected a positive thread id, found {}", t.tid));
            }
            if !tids.insert(t.tid) {
                return rec_err(&format!("{p}.tid"), format!("thread {} is listed twice", t.tid));
            }
            if t.cpus.is_empty() {
                return rec_err(&format!("{p}.cpus"), "must list at least one cpu");
            }
            if t.cpus.len() > MAX_CPUS {
                return rec_too_large(&format!("{p}.cpus"), format!("more than {MAX_CPUS} cpus"));
            }
            if let Some((j, c)) = t.cpus.iter().enumerate().find(|(_, &c)| c as usize >= MAX_CPUS) {
                return rec_err(
                    &format!("{p}.cpus[{j}]"),
                    format!("cpu {c} is beyond the largest cpu id ({})", MAX_CPUS - 1),
                );
            }
            if let Some(s) = &t.start_time_ticks {
                if s.parse::<u64>().is_err() {
                    let s: String = s.chars().take(40).collect();
                    return rec_err(&format!("{p}.startTimeTicks"), format!("{s:?} is not a decimal number"));
                }
            }
        }
        Ok(())
    }

    /// The page runs as (start, count, node), sorted by address, after checking each run
    /// (hex address aligned to the page size, 1 to [`MAX_PAGES_PER_RANGE`] pages, inside the
    /// address space, a possible node id), that they do not overlap, and the limits.
    pub fn checked_runs(&self) -> Result<Vec<(u64, u64, u32)>, PlanError> {
        if self.pages.len() > MAX_ROLLBACK_RUNS {
            return rec_too_large(
                "pages",
                format!("{} page runs, more than the limit of {MAX_ROLLBACK_RUNS}", self.pages.len()),
            );
        }
        // 0: written without a page size; the base page is at least 4 KiB (rollback checks
        // the real one against the machine's).
        let page = if self.page_size == 0 { 4096 } else { self.page_size };
        let mut out: Vec<(u64, u64, u32, usize)> = Vec::with_capacity(self.pages.len());
        let mut total: u64 = 0;
        for (i, r) in self.pages.iter().enumerate() {
            let p = format!("pages[{i}]");
            let Some(start) = parse_hex(&r.start) else {
                let s: String = r.start.chars().take(40).collect();
                return rec_err(&format!("{p}.start"), format!("{s:?} is not a hex address like \"0x7f3a2c000000\""));
            };
            if start % page != 0 {
                return rec_err(
                    &format!("{p}.start"),
                    format!("0x{start:x} is not aligned to the {page}-byte page size"),
                );
            }
            if r.count == 0 {
                return rec_err(&format!("{p}.count"), "must be at least 1");
            }
            if r.count > MAX_PAGES_PER_RANGE {
                return rec_too_large(
                    &format!("{p}.count"),
                    format!(
                        "{} pages ({}), more than the limit of {MAX_PAGES_PER_RANGE} pages per run",
                        r.count,
                        plan::pages_human(r.count, page)
                    ),
                );
            }
            if r.count.checked_mul(page).and_then(|b| start.checked_add(b)).is_none() {
                return rec_err(&p, format!("0x{start:x} + {} pages runs past the end of the address space", r.count));
            }
            if r.node as usize >= MAX_NODES {
                return rec_err(&format!("{p}.node"), format!("node {} is not a possible node id", r.node));
            }
            total += r.count;
            if total > MAX_TOTAL_PAGES {
                return rec_too_large(
                    &p,
                    format!(
                        "the runs up to this one hold {total} pages ({}), more than the limit of {MAX_TOTAL_PAGES} pages",
                        plan::pages_human(total, page)
                    ),
                );
            }
            out.push((start, r.count, r.node, i));
        }
        out.sort_unstable();
        for w in out.windows(2) {
            if w[0].0 + w[0].1 * page > w[1].0 {
                return rec_err(&format!("pages[{}]", w[1].3), format!("overlaps pages[{}]", w[0].3));
            }
        }
        Ok(out.into_iter().map(|(s, c, n, _)| (s, c, n)).collect())
    }
}

/// Reads a plan or rollback record file of at most `limit` bytes (a larger file is refused
/// without reading it: [`MAX_PLAN_BYTES`], [`MAX_RECORD_BYTES`]).
pub fn read_limited(path: &Path, limit: usize, what: &'static str) -> Result<String, ApplyError> {
    use std::io::Read;
    let f = fs::File::open(path).map_err(|e| ApplyError::Io(format!("reading {}: {e}", path.display())))?;
    let mut buf = Vec::new();
    f.take(limit as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ApplyError::Io(format!("reading {}: {e}", path.display())))?;
    if buf.len() > limit {
        return Err(ApplyError::Plan(PlanError::too_large(
            what,
            "",
            format!("{} is larger than the limit of {limit} bytes", path.display()),
        )));
    }
    String::from_utf8(buf).map_err(|e| {
        ApplyError::Plan(PlanError::invalid(what, "", format!("{} is not UTF-8 text: {e}", path.display())))
    })
}

fn parse_hex(s: &str) -> Option<u64> {
    let d = s.strip_prefix("0x")?;
    if d.is_empty() || d.len() > 16 || !d.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(d, 16).ok()
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
    if let Some(owner) = tgid_of(pid, proc_root) {
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

/// The thread group (process) of thread `tid` (`/proc/TID/status` Tgid).
fn tgid_of(tid: i32, proc_root: &Path) -> Option<i32> {
    let s = fs::read_to_string(proc_root.join(format!("{tid}/status"))).ok()?;
    s.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// Where a thread id stands with respect to a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskOwner {
    /// A thread of the process, with its start time.
    Ours { start_ticks: u64 },
    /// No such thread (it exited).
    Gone,
    /// A thread of another process.
    Foreign(i32),
}

fn task_owner(pid: i32, tid: i32, proc_root: &Path) -> TaskOwner {
    if tid <= 0 || pid <= 0 {
        return TaskOwner::Gone;
    }
    if let Ok(s) = fs::read_to_string(proc_root.join(format!("{pid}/task/{tid}/stat"))) {
        if let Some(t) = procfs::parse_task_stat(&s) {
            return TaskOwner::Ours { start_ticks: t.start_time_ticks };
        }
    }
    match tgid_of(tid, proc_root) {
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

/// The target's mappings, or the refusal that reading them gives.
fn target_mappings(pid: i32, proc_root: &Path) -> Result<Vec<(u64, u64)>, ApplyError> {
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

// ---------------------------------------------------------------- the engine

/// The plan's ranges clipped to the target's mappings: a range with no mapped page is refused,
/// a partly mapped one keeps its mapped parts (a warning says how much was skipped).
fn plan_groups(plan: &Plan, page: u64, proc_root: &Path, warnings: &mut Vec<String>) -> Result<Vec<Group>, ApplyError> {
    if plan.page_ranges.is_empty() {
        return Ok(Vec::new());
    }
    let pid = plan.target.pid;
    let maps = target_mappings(pid, proc_root)?;
    let mut groups = Vec::with_capacity(plan.page_ranges.len());
    for (i, r) in plan.page_ranges.iter().enumerate() {
        let node = match r.action {
            Action::Move => Some(r.to_nodes[0]),
            Action::Interleave | Action::WeightedInterleave => None,
        };
        let mut g = Group::new(r.start, r.end, r.action.name(), r.to_nodes.clone());
        g.slots = r.weights.as_deref().map(weights::Slots::new);
        g.weights = r.weights.clone();
        g.expected_nodes = r.expected_nodes.clone();
        for (s, e) in pages::clip(r.start, r.end, &maps) {
            g.push(s, (e - s) / page, node);
        }
        let all = (r.end - r.start) / page;
        g.unmapped = all - g.pages;
        if g.pages == 0 {
            return Err(ApplyError::RangeNotMapped {
                path: format!("pageRanges[{i}]"),
                start: r.start,
                end: r.end,
                pid,
            });
        }
        if g.unmapped > 0 {
            warnings.push(format!(
                "pageRanges[{i}] 0x{:x}-0x{:x}: {} of its {all} pages ({}) lie outside the mappings of process {pid} \
                 (/proc/{pid}/maps) and were skipped; the range was clipped to its {} mapped pages",
                r.start,
                r.end,
                g.unmapped,
                plan::pages_human(g.unmapped, page),
                g.pages
            ));
        }
        groups.push(g);
    }
    Ok(groups)
}

struct Thread {
    tid: i32,
    to_nodes: Vec<u32>,
    cpus: Vec<u32>,
    /// The thread's start time when checked; pinning checks it again just before.
    start_ticks: Option<u64>,
    /// Why the thread is not to be changed (rollback: it exited, or the tid was reused).
    skip: Option<String>,
}

/// The result of [`apply`]: the report and what to write as the rollback record.
pub struct ApplyOutcome {
    pub report: ApplyReport,
    pub rollback: RollbackRecord,
    /// Where the time went (`numascope apply --timings`; not part of the report).
    pub timings: Timings,
}

/// Wall-clock time of each phase of an apply or rollback, in milliseconds, and the
/// `move_pages` calls it made (docs/apply.md, "Where the time goes").
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Checking the target and its threads, reading `/proc/PID/maps`, clipping the ranges.
    pub prepare_ms: f64,
    /// The pre-flight query of every page.
    pub query_ms: f64,
    /// Reading `/proc/PID/smaps` (transparent-huge-page mappings).
    pub thp_ms: f64,
    /// The move pass (busy retries included).
    pub move_ms: f64,
    /// Of the move pass, summed over its threads: in queries just before a move.
    pub move_query_ms: f64,
    /// Of the move pass, summed over its threads: in `move_pages` calls that move.
    pub move_call_ms: f64,
    /// `move_pages` calls that move pages (retries included).
    pub move_calls: u64,
    /// The largest batch handed to one `move_pages` call.
    pub move_batch_max: u64,
    /// Pinning threads.
    pub pin_ms: f64,
    /// Verification: the process checked again, every page queried again.
    pub verify_ms: f64,
    /// Reading `/proc/PID/numa_maps` + maps before the moves and for the verification
    /// (`vma_view`; included in `move_ms` and `verify_ms`).
    pub numa_maps_ms: f64,
    /// Pages whose node before the move came from numa_maps instead of a query.
    pub view_pages_before: u64,
    /// Pages verified from numa_maps instead of a query.
    pub view_pages_after: u64,
}

/// Applies `plan` (already parsed and validated) to its target process.
pub fn apply(plan: &Plan, topo: &Topology, opts: &ApplyOptions) -> Result<ApplyOutcome, ApplyError> {
    let t_prepare = Instant::now();
    let start_time = check_target(plan, topo, &opts.proc_root)?;
    let page = topo.page_size_bytes;
    let pid = plan.target.pid;
    let mut warnings = Vec::new();
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
        let start_ticks = match task_owner(pid, t.tid, &opts.proc_root) {
            TaskOwner::Ours { start_ticks } => start_ticks,
            TaskOwner::Gone => return Err(ApplyError::ThreadNotInProcess { tid: t.tid, pid }),
            TaskOwner::Foreign(owner) => return Err(ApplyError::ForeignThread { tid: t.tid, pid, owner }),
        };
        threads.push(Thread {
            tid: t.tid,
            to_nodes: t.to_nodes.clone(),
            cpus,
            start_ticks: Some(start_ticks),
            skip: None,
        });
    }
    let groups = plan_groups(plan, page, &opts.proc_root, &mut warnings)?;
    // System weights first: a refusal or a failed write leaves everything as it was.
    let system = set_system_weights(plan, opts, &mut warnings)?;
    let prepare_ms = ms(t_prepare);
    let mut out = match run(pid, start_time, page, groups, threads, opts, "apply", warnings) {
        Ok(o) => o,
        Err(e) => {
            if let Some(r) = system.as_ref().filter(|_| !opts.dry_run) {
                let _ = weights::restore(&opts.weights_dir, &r.before);
            }
            return Err(e);
        }
    };
    out.timings.prepare_ms = prepare_ms;
    out.report.expected = plan.expected.clone();
    if let Some(r) = system {
        if !opts.dry_run {
            out.rollback.system_weights = Some(r.before.clone());
            if !r.matched && out.report.status == Status::Complete {
                out.report.status = Status::Partial;
                out.report.message.get_or_insert(format!(
                    "the system weights read back as {} instead of the plan's",
                    r.after.as_ref().map(|a| a.describe()).unwrap_or_default()
                ));
            }
        }
        out.report.system_weights = Some(r);
    }
    Ok(out)
}

/// The plan's `systemWeights`: written (or, in a dry run, only compared) with
/// `--set-system-weights`, else reported as not applied. A kernel without weighted interleave
/// is refused with the version it needs.
fn set_system_weights(
    plan: &Plan,
    opts: &ApplyOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<weights::SystemWeightsReport>, ApplyError> {
    let Some(sw) = &plan.system_weights else { return Ok(None) };
    let want = weights::WeightsState { weights: sw.weights.clone(), auto: None }.describe();
    if !opts.set_system_weights {
        warnings.push(format!(
            "the plan's systemWeights ({want}) were not applied: they are system-wide (every process's weighted \
             interleave uses them); pass --set-system-weights to write them (rollback restores the previous ones)"
        ));
        return Ok(None);
    }
    if let Some(m) = weights::missing_feature(&opts.weights_dir) {
        return Err(ApplyError::Unsupported(m));
    }
    weights::apply_system(&opts.weights_dir, sw, opts.dry_run).map(Some).map_err(|e| {
        if e.contains("Permission denied") || e.contains("Read-only file system") {
            ApplyError::Permission(format!("{e} (writing the system weights needs root)"))
        } else {
            ApplyError::Io(format!("{e}; the system weights were left as they were"))
        }
    })
}

/// Restores what a rollback record lists: pages back to their previous nodes and threads'
/// previous affinities. Threads that have exited are reported, not an error; a thread id that
/// now belongs to another process is refused before anything changes. Recorded pages that are
/// no longer mapped are skipped (a warning says how many).
pub fn rollback(record: &RollbackRecord, topo: &Topology, opts: &ApplyOptions) -> Result<ApplyOutcome, ApplyError> {
    let t_prepare = Instant::now();
    record.validate()?;
    let proc_root = &opts.proc_root;
    let pid = record.pid;
    let st: u64 = record.start_time_ticks.parse().map_err(|_| {
        ApplyError::Plan(PlanError::invalid("rollback record", "startTimeTicks", "not a decimal number"))
    })?;
    // System weights are global, not the process's: restored even when the process has exited.
    let mut warnings = Vec::new();
    let system = match &record.system_weights {
        Some(snap) => {
            let (r, skipped) = weights::restore_system(&opts.weights_dir, snap).map_err(|e| {
                if weights::missing_feature(&opts.weights_dir).is_some() {
                    ApplyError::Unsupported(e)
                } else {
                    ApplyError::Io(format!("restoring the system weights: {e}"))
                }
            })?;
            if !skipped.is_empty() {
                warnings.push(format!("system weights not restored (gone from the kernel): {}", skipped.join(", ")));
            }
            Some(r)
        }
        None => None,
    };
    let start_time = match check_process(pid, Some(st), proc_root) {
        Ok(t) => t,
        Err(e) if system.is_some() && record.pages.is_empty() && record.threads.is_empty() => {
            // Nothing of the process to restore: report the system weights alone.
            let _ = e;
            st
        }
        Err(e) => {
            return Err(match system {
                Some(r) => ApplyError::Io(format!(
                    "{e}; but the system weights were restored first: {}",
                    r.after.map(|a| a.describe()).unwrap_or_default()
                )),
                None => e,
            })
        }
    };
    let page = topo.page_size_bytes;
    if record.page_size != 0 && record.page_size != page {
        return Err(ApplyError::WrongMachine(format!(
            "pageSize: the record's pages are {} bytes, this machine's base pages {page} bytes",
            record.page_size
        )));
    }
    let runs = record.checked_runs()?;
    let live: Vec<u32> = topo.nodes.iter().map(|n| n.id).collect();
    for (i, r) in record.pages.iter().enumerate() {
        if !live.contains(&r.node) {
            return Err(ApplyError::WrongMachine(format!(
                "pages[{i}].node: node {} does not exist on this machine",
                r.node
            )));
        }
    }
    // Threads first: a foreign thread refuses the whole rollback before anything changes.
    let mut threads = Vec::with_capacity(record.threads.len());
    for t in &record.threads {
        let want: Option<u64> = t.start_time_ticks.as_deref().and_then(|s| s.parse().ok());
        let (start_ticks, skip) = match task_owner(pid, t.tid, proc_root) {
            TaskOwner::Foreign(owner) => return Err(ApplyError::ForeignThread { tid: t.tid, pid, owner }),
            TaskOwner::Gone => (None, Some("the thread has exited".to_string())),
            TaskOwner::Ours { start_ticks } => match want {
                Some(w) if w != start_ticks => (
                    None,
                    Some(format!(
                        "thread {} is not the thread the record was made for: it started at {start_ticks} ticks, the \
                         record says {w} (the thread id was reused); its affinity was left alone",
                        t.tid
                    )),
                ),
                _ => (Some(start_ticks), None),
            },
        };
        threads.push(Thread { tid: t.tid, to_nodes: Vec::new(), cpus: t.cpus.clone(), start_ticks, skip });
    }
    let mut groups = Vec::new();
    if let (Some(first), Some(last)) = (runs.first(), runs.last()) {
        let maps = target_mappings(pid, proc_root)?;
        let mut nodes: Vec<u32> = runs.iter().map(|r| r.2).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut g = Group::new(first.0, last.0 + last.1 * page, "restore", nodes);
        let mut all = 0;
        for &(s, c, n) in &runs {
            all += c;
            for (a, b) in pages::clip(s, s + c * page, &maps) {
                g.push(a, (b - a) / page, Some(n));
            }
        }
        g.unmapped = all - g.pages;
        if g.unmapped > 0 {
            warnings.push(format!(
                "{} of the {all} recorded pages are no longer mapped in process {pid} (/proc/{pid}/maps; unmapped \
                 since the apply?) and were skipped",
                g.unmapped
            ));
        }
        groups.push(g);
    }
    let prepare_ms = ms(t_prepare);
    let mut out = run(pid, start_time, page, groups, threads, opts, "rollback", warnings)?;
    out.timings.prepare_ms = prepare_ms;
    if let Some(r) = system {
        if record.pages.is_empty() && record.threads.is_empty() {
            // only the system weights: the process's state does not matter
            out.report.status = Status::Complete;
            out.report.message = None;
        }
        if !r.matched && out.report.status == Status::Complete {
            out.report.status = Status::Partial;
            out.report.message.get_or_insert("the system weights did not read back as recorded".into());
        }
        out.report.system_weights = Some(r);
    }
    Ok(out)
}

/// Milliseconds since `t`.
fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Locks, also after a worker panicked (the data are counters).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PageStats {
    /// Adds the counters of `o` (not `pages`, `unmapped`, `after`, `onTargetAfter`).
    fn add_counts(&mut self, o: &PageStats) {
        addmap(&mut self.before, &o.before);
        self.not_present_before += o.not_present_before;
        addmap(&mut self.planned_after, &o.planned_after);
        self.to_move += o.to_move;
        self.already_in_place += o.already_in_place;
        self.moved += o.moved;
        self.not_moved.add(&o.not_moved);
        self.not_attempted += o.not_attempted;
    }
}

/// Adds the pages of one queried batch to `d`: per node before, per planned node, in place or
/// to move (the indices of those to move go to `work` when given), not present.
fn count_before(status: &[i32], targets: &[u32], no_skip: bool, d: &mut PageStats, mut work: Option<&mut Vec<usize>>) {
    let (mut before, mut planned) = (NodeCounts::default(), NodeCounts::default());
    for (i, (&b, &t)) in status.iter().zip(targets).enumerate() {
        if b >= 0 {
            before.add(b as u32);
            planned.add(t);
            if b as u32 == t && !no_skip {
                d.already_in_place += 1;
            } else {
                d.to_move += 1;
                if let Some(w) = work.as_deref_mut() {
                    w.push(i);
                }
            }
        } else {
            d.not_present_before += 1;
        }
    }
    before.into_map(&mut d.before);
    planned.into_map(&mut d.planned_after);
}

/// Pages per node of one batch, counted in an array (no map operation per page).
#[derive(Default)]
struct NodeCounts(Vec<u64>);

impl NodeCounts {
    fn add(&mut self, node: u32) {
        let n = node as usize;
        if n >= self.0.len() {
            // bounded: the kernel's node ids and the plan's (checked) are below MAX_NODES
            self.0.resize(n + 1, 0);
        }
        self.0[n] += 1;
    }

    fn into_map(self, m: &mut BTreeMap<u32, u64>) {
        for (n, &c) in self.0.iter().enumerate().filter(|(_, &c)| c > 0) {
            *m.entry(n as u32).or_default() += c;
        }
    }
}

/// One thread's buffers of a query pass (reused from batch to batch).
#[derive(Default)]
struct QueryBufs {
    addrs: Vec<u64>,
    targets: Vec<u32>,
    status: Vec<i32>,
}

impl QueryBufs {
    /// Fills the buffers with pages `from..from + n` of `g` and queries their nodes.
    fn query(&mut self, pid: i32, g: &Group, from: u64, n: u64, page: u64) -> io::Result<()> {
        g.fill(from, n, page, &mut self.addrs, &mut self.targets);
        self.status.resize(self.addrs.len(), 0);
        sys::query_nodes(pid, &self.addrs, &mut self.status)
    }
}

/// Query pass: walks the pages `cursor` has not handed out (in batches, on `jobs` threads) and
/// adds them to the before/planned/to-move counters of their group in `stats`. The dry run walks
/// every page this way; a real apply only what a stopped move pass did not reach.
#[allow(clippy::too_many_arguments)]
fn query_pass(
    pid: i32,
    page: u64,
    groups: &[Group],
    cursor: &Cursor,
    jobs: usize,
    no_skip: bool,
    stats: &mut [PageStats],
) -> io::Result<()> {
    let shared = Mutex::new(stats);
    let failed: Mutex<Option<io::Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    pages::par_batches(jobs, jobs, QueryBufs::default, |q, _| {
        while !stop.load(Ordering::SeqCst) {
            let Some((g, from, n)) = cursor.claim(groups, QUERY_BATCH_PAGES as u64) else { return };
            match q.query(pid, &groups[g], from, n, page) {
                Ok(()) => {
                    let mut d = PageStats::default();
                    count_before(&q.status, &q.targets, no_skip, &mut d, None);
                    lock(&shared)[g].add_counts(&d);
                }
                Err(e) => {
                    // never queried: counted as not attempted (a dry run reports the error)
                    lock(&shared)[g].not_attempted += n;
                    stop.store(true, Ordering::SeqCst);
                    lock(&failed).get_or_insert(e);
                }
            }
        }
    });
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The permission pre-flight of a real apply, before anything changes: one query of the first
/// page of every range. Reading (and moving) another process's pages is allowed or refused per
/// process (ptrace read access), so one page says what every page would; the move pass queries
/// each batch just before it moves it.
fn preflight(pid: i32, groups: &[Group]) -> io::Result<()> {
    let addrs: Vec<u64> = groups.iter().filter_map(|g| g.segs.first()).map(|s| s.start).collect();
    let mut status = vec![0; addrs.len()];
    if addrs.is_empty() {
        return Ok(());
    }
    sys::query_nodes(pid, &addrs, &mut status)
}

/// Pages per node found by the verification, and how many are on their planned node.
type Found = Option<(BTreeMap<u32, u64>, u64)>;

/// numa_maps joined with maps (`vma_view`), when the `move` groups hold at least half of the
/// process's resident pages (reading it walks every mapping); `None` otherwise or unreadable.
fn view_if_worth(pid: i32, page: u64, groups: &[Group], opts: &ApplyOptions) -> Option<Vec<vma_view::Vma>> {
    if opts.query_every_page {
        return None;
    }
    let proc_root = &opts.proc_root;
    let covered: u64 = groups.iter().filter(|g| g.action == "move").map(|g| g.pages).sum();
    let resident = vma_view::resident_pages(pid, proc_root)?;
    if !vma_view::worth_reading(covered, resident) {
        return None;
    }
    vma_view::read(pid, proc_root, page)
}

/// Verification pass: pages per node after, and pages on their planned node, per group
/// (`None` where a query failed).
/// Groups whose counts `from_view` has (numa_maps, `vma_view::counts`) are not queried.
fn verify(pid: i32, page: u64, groups: &[Group], jobs: usize, from_view: Vec<Found>) -> Vec<Found> {
    let cursor = Cursor::new(groups);
    let served: Vec<bool> = from_view.iter().map(Option::is_some).collect();
    let acc: Mutex<Vec<Found>> = Mutex::new(from_view.into_iter().map(|f| Some(f.unwrap_or_default())).collect());
    pages::par_batches(jobs, jobs, QueryBufs::default, |q, _| {
        while let Some((g, from, n)) = cursor.claim(groups, QUERY_BATCH_PAGES as u64) {
            if served[g] || lock(&acc)[g].is_none() {
                continue;
            }
            match q.query(pid, &groups[g], from, n, page) {
                Ok(()) => {
                    let mut counts = NodeCounts::default();
                    let mut on = 0;
                    for (&a, &t) in q.status.iter().zip(&q.targets) {
                        if a >= 0 {
                            counts.add(a as u32);
                            if a as u32 == t {
                                on += 1;
                            }
                        }
                    }
                    let mut hist = BTreeMap::new();
                    counts.into_map(&mut hist);
                    if let Some((h, o)) = lock(&acc)[g].as_mut() {
                        addmap(h, &hist);
                        *o += on;
                    }
                }
                Err(_) => lock(&acc)[g] = None,
            }
        }
    });
    acc.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Pins each thread not skipped, after checking it is still the process's thread from the plan,
/// reading the affinity back; the previous affinity goes into the rollback record.
fn pin_threads(
    pid: i32,
    threads: &[Thread],
    reports: &mut [ThreadReport],
    proc_root: &Path,
    rollback: &mut RollbackRecord,
) {
    for (t, r) in threads.iter().zip(reports.iter_mut()) {
        if t.skip.is_some() {
            continue;
        }
        match task_owner(pid, t.tid, proc_root) {
            TaskOwner::Ours { start_ticks } if t.start_ticks.is_none_or(|s| s == start_ticks) => {}
            TaskOwner::Ours { .. } => {
                r.error = Some("the thread exited and its id was reused by a new thread; not pinned".into());
                continue;
            }
            TaskOwner::Gone => {
                r.error = Some("the thread has exited".into());
                continue;
            }
            TaskOwner::Foreign(owner) => {
                r.error = Some(format!("the thread id now belongs to process {owner}; not pinned"));
                continue;
            }
        }
        match sys::set_affinity(t.tid, &t.cpus) {
            Ok(()) => {
                if let Some(prev) = &r.previous_cpus {
                    rollback.threads.push(ThreadAffinity {
                        tid: t.tid,
                        cpus: prev.clone(),
                        start_time_ticks: t.start_ticks.map(|s| s.to_string()),
                    });
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
                    Some(libc::EINVAL) => {
                        format!("sched_setaffinity: {e} (none of the cpus {:?} is allowed for the thread)", t.cpus)
                    }
                    _ => format!("sched_setaffinity: {e}"),
                });
            }
        }
    }
}

/// The pages of every range together (after the apply, an empty plan has nothing off its node).
fn totals(ranges: &[RangeReport], dry_run: bool, status: Status) -> PageStats {
    let mut totals = PageStats::default();
    for (i, r) in ranges.iter().enumerate() {
        if i == 0 {
            totals = r.stats.clone();
        } else {
            totals.add(&r.stats);
        }
    }
    if ranges.is_empty() && !dry_run && status != Status::ProcessExited {
        totals.after = Some(BTreeMap::new());
        totals.on_target_after = Some(0);
    }
    totals
}

/// Threads of a query pass over `mapped` pages: `jobs`, one per 65536 pages at most (a query
/// is cheap per page; concurrent queries of one process contend for its page tables' locks).
fn query_jobs(opts: &ApplyOptions, mapped: u64) -> usize {
    opts.max_jobs().min(mapped.div_ceil(65_536) as usize).max(1)
}

/// What the move pass did.
struct Moved {
    jobs: usize,
    status: Status,
    message: Option<String>,
    /// The rollback record's page runs.
    runs: Vec<PageRun>,
    /// Pages never queried because the process exited first.
    unreached: u64,
    warning: Option<String>,
}

/// Moves the pages of `groups` (each batch queried just before it is moved), retries busy pages
/// once, then queries what a stop left unreached (so that every page is counted) and adds the
/// counters to `ranges`.
#[allow(clippy::too_many_arguments)]
fn move_pass(
    pid: i32,
    start_time: u64,
    page: u64,
    groups: &[Group],
    thp: &[(u64, u64)],
    opts: &ApplyOptions,
    t0: Instant,
    ranges: &mut [RangeReport],
    timings: &mut Timings,
) -> Moved {
    let mapped: u64 = groups.iter().map(|g| g.pages).sum();
    let jobs = opts.effective_jobs(mapped as usize);
    let t = Instant::now();
    let known: Vec<Option<u32>> = match view_if_worth(pid, page, groups, opts) {
        Some(v) => groups.iter().map(|g| vma_view::single_node(g, &v, page)).collect(),
        None => vec![None; groups.len()],
    };
    timings.numa_maps_ms += ms(t);
    timings.view_pages_before = groups.iter().zip(&known).filter(|(_, k)| k.is_some()).map(|(g, _)| g.pages).sum();
    let mover = Mover {
        pid,
        known,
        start_time,
        proc_root: &opts.proc_root,
        opts,
        page,
        groups,
        thp,
        t0,
        share: mapped.div_ceil(jobs as u64),
        cursor: Cursor::new(groups),
        stop: AtomicBool::new(false),
        budget_hit: AtomicBool::new(false),
        exited: AtomicBool::new(false),
        runs_full: AtomicBool::new(false),
        runs_used: AtomicUsize::new(0),
        done: AtomicU64::new(0),
        moved: AtomicU64::new(0),
        last_progress: Mutex::new(Instant::now()),
        message: Mutex::new(None),
        query_error: Mutex::new(None),
        counts: Mutex::new(vec![(PageStats::default(), 0); groups.len()]),
        query_ns: AtomicU64::new(0),
        call_ns: AtomicU64::new(0),
        calls: AtomicU64::new(0),
        batch_max: AtomicU64::new(0),
    };
    let mut states = pages::par_batches(jobs, jobs, || MoveState::new(opts.fixed_batch()), |st, _| mover.work(st));
    // Pass 1: pages that were busy (-EBUSY, outside THP mappings) are retried once.
    for st in states.iter_mut() {
        mover.retry(st);
    }
    timings.move_query_ms = mover.query_ns.load(Ordering::SeqCst) as f64 / 1e6;
    timings.move_call_ms = mover.call_ns.load(Ordering::SeqCst) as f64 / 1e6;
    timings.move_calls = mover.calls.load(Ordering::SeqCst);
    timings.move_batch_max = mover.batch_max.load(Ordering::SeqCst);
    let mut all_runs = Vec::new();
    for st in states {
        all_runs.extend(st.runs.runs);
    }
    let runs = pages::merge_runs(all_runs, page)
        .into_iter()
        .map(|(a, c, n)| PageRun { start: format!("0x{a:x}"), count: c, node: n })
        .collect();
    let mut counts = std::mem::take(&mut *lock(&mover.counts));
    // What a stop (time budget, rollback record full, not permitted) left unreached is queried
    // now, so that its pages count as in place, to move (not attempted) or not present.
    let mut unreached = 0;
    let mut warning = lock(&mover.query_error).take();
    let mut exited = mover.exited.load(Ordering::SeqCst);
    let mut unknown = exited;
    if mover.cursor.left() > 0 && !exited {
        let mut rest = vec![PageStats::default(); groups.len()];
        let t = Instant::now();
        let jobs = query_jobs(opts, mover.cursor.left());
        let r = query_pass(pid, page, groups, &mover.cursor, jobs, opts.no_skip, &mut rest);
        timings.query_ms += ms(t);
        for (c, d) in counts.iter_mut().zip(&rest) {
            c.0.add_counts(d);
            unreached += d.not_attempted;
        }
        if let Err(e) = r {
            if mover.failed(&e).is_some() {
                warning.get_or_insert(format!("the query of the pages the move pass did not reach failed: {e}"));
            }
            exited = mover.exited.load(Ordering::SeqCst);
            unknown = true;
        }
    }
    if unknown {
        // Never queried (the process exited, or the query failed): their placement is unknown;
        // they count as not attempted.
        for (c, left) in counts.iter_mut().zip(mover.cursor.left_per_group(groups)) {
            c.0.not_attempted += left;
            unreached += left;
        }
    }
    for (r, (d, attempted)) in ranges.iter_mut().zip(counts) {
        r.stats.add_counts(&d);
        r.stats.not_attempted += r.stats.to_move.saturating_sub(attempted);
    }
    let (status, message) = move_status(&mover, exited, opts);
    if mapped > 0 {
        mover.progress();
    }
    Moved { jobs, status, message, runs, unreached, warning }
}

/// The status after the move pass and why it is not `complete`.
fn move_status(mover: &Mover, exited: bool, opts: &ApplyOptions) -> (Status, Option<String>) {
    let mut status = Status::Complete;
    let mut message = None;
    if exited {
        status = Status::ProcessExited;
    } else if let Some(m) = lock(&mover.message).clone() {
        status = Status::Partial;
        message = Some(m);
    }
    if mover.runs_full.load(Ordering::SeqCst) && status != Status::ProcessExited {
        status = Status::Partial;
        message.get_or_insert(format!(
            "the rollback record reached its limit of {APPLY_MAX_RUNS} page runs (the pages' previous nodes \
             alternate too often to record compactly), so the remaining pages were not moved: split the plan \
             into smaller plans"
        ));
    }
    if let (true, Status::Complete, Some(b)) = (mover.budget_hit.load(Ordering::SeqCst), status, opts.budget) {
        status = Status::BudgetExhausted;
        message = Some(format!("the time budget of {} ms ran out; remaining pages were not moved", b.as_millis()));
    }
    (status, message)
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
    mut warnings: Vec<String>,
) -> Result<ApplyOutcome, ApplyError> {
    let t0 = Instant::now();
    let proc_root = &opts.proc_root;
    let mut timings = Timings::default();

    // -- permission pre-flight for pinning (nothing has changed yet)
    if threads.iter().any(|t| t.skip.is_none()) {
        check_pin_permission(pid, proc_root)?;
    }

    // -- the dry run queries every page; a real apply one page per range (the permission
    // pre-flight for move_pages) and each batch just before it moves it
    let mapped: u64 = groups.iter().map(|g| g.pages).sum();
    let query_jobs = query_jobs(opts, mapped);
    let mut stats: Vec<PageStats> = groups
        .iter()
        .map(|g| PageStats { pages: g.pages + g.unmapped, unmapped: g.unmapped, ..Default::default() })
        .collect();
    let queried = if opts.dry_run {
        query_pass(pid, page, &groups, &Cursor::new(&groups), query_jobs, opts.no_skip, &mut stats)
    } else {
        preflight(pid, &groups)
    };
    queried.map_err(|e| match e.raw_os_error() {
        Some(libc::ESRCH) => ApplyError::NoProcess { pid },
        Some(libc::EPERM) | Some(libc::EACCES) => ApplyError::Permission(page_permission_message(pid, proc_root, &e)),
        _ => ApplyError::Io(format!("move_pages query of process {pid} failed: {e}")),
    })?;
    timings.query_ms = ms(t0);
    let t = Instant::now();
    let thp = pages::normalise(thp_mappings(pid, proc_root));
    timings.thp_ms = ms(t);

    let mut ranges: Vec<RangeReport> = Vec::with_capacity(groups.len());
    for (g, s) in groups.iter().zip(stats) {
        let thp_pages = if thp.is_empty() { 0 } else { g.pages_in(&thp, page) };
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
            weights: g.weights.clone(),
            stats: s,
            weight_check: None,
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
        system_weights: None,
    };
    let mut thread_reports: Vec<ThreadReport> = threads
        .iter()
        .map(|t| ThreadReport {
            tid: t.tid,
            to_nodes: t.to_nodes.clone(),
            cpus: t.cpus.clone(),
            previous_cpus: if t.skip.is_none() { sys::get_affinity(t.tid).ok() } else { None },
            read_back: None,
            pinned: false,
            error: t.skip.clone(),
        })
        .collect();

    let mut jobs = 1;
    if !opts.dry_run {
        // -- move pages
        let t_move = Instant::now();
        let m = move_pass(pid, start_time, page, &groups, &thp, opts, t0, &mut ranges, &mut timings);
        timings.move_ms = ms(t_move);
        let unreached = m.unreached;
        (jobs, status, message) = (m.jobs, m.status, m.message);
        rollback.pages = m.runs;
        warnings.extend(m.warning);

        // -- pin threads (each checked again just before: still ours, same start time)
        let t = Instant::now();
        if status != Status::ProcessExited {
            pin_threads(pid, &threads, &mut thread_reports, proc_root, &mut rollback);
        }
        timings.pin_ms = ms(t);
        let t = Instant::now();

        // -- verify (is it still the same process?)
        let alive = check_process(pid, Some(start_time), proc_root).is_ok();
        if !alive {
            status = Status::ProcessExited;
        }
        if status == Status::ProcessExited {
            let moved: u64 = ranges.iter().map(|r| r.stats.moved).sum();
            let pinned = thread_reports.iter().filter(|t| t.pinned).count();
            let rest = if unreached > 0 {
                format!("; {unreached} pages of the plan were not reached (counted as not attempted)")
            } else {
                String::new()
            };
            message = Some(format!(
                "process {pid} exited midway: {moved} pages had been moved and {pinned} threads pinned before it \
                 exited{rest}"
            ));
        } else {
            let tv = Instant::now();
            let from_view: Vec<Found> = match view_if_worth(pid, page, &groups, opts) {
                Some(v) => groups.iter().map(|g| vma_view::counts(g, &v, page)).collect(),
                None => vec![None; groups.len()],
            };
            timings.numa_maps_ms += ms(tv);
            timings.view_pages_after =
                groups.iter().zip(&from_view).filter(|(_, f)| f.is_some()).map(|(g, _)| g.pages).sum();
            for (r, after) in ranges.iter_mut().zip(verify(pid, page, &groups, query_jobs, from_view)) {
                match after {
                    Some((hist, on)) => {
                        if let Some(w) = &r.weights {
                            r.weight_check = Some(WeightCheck::new(&r.to_nodes, w, &hist));
                        }
                        r.stats.after = Some(hist);
                        r.stats.on_target_after = Some(on);
                    }
                    None => warnings.push(format!("verification query of range 0x{:x}-0x{:x} failed", r.start, r.end)),
                }
            }
            let not_moved: u64 = ranges.iter().map(|r| r.stats.not_moved.total()).sum();
            if status == Status::Complete && (not_moved > 0 || thread_reports.iter().any(|t| !t.pinned)) {
                status = Status::Partial;
            }
            // The kernel's per-page status is not the last word (a THP moves as a whole, a
            // page can be migrated again by someone else): the verification query decides.
            let present: u64 =
                ranges.iter().map(|r| r.stats.pages - r.stats.unmapped - r.stats.not_present_before).sum();
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
        timings.verify_ms = ms(t);
    }

    let totals = totals(&ranges, opts.dry_run, status);
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
            system_weights: None,
        },
        rollback,
        timings,
    })
}

/// The order in which to hand the pages `work` (indices into `targets`, ascending addresses) to
/// one `move_pages` call: positions in `work`, grouped by target node, stable (ascending addresses
/// within a node); the identity when there is one target.
fn grouped_by_target(work: &[usize], targets: &[u32], order: &mut Vec<usize>) {
    order.clear();
    order.extend(0..work.len());
    if work.windows(2).any(|w| targets[w[0]] != targets[w[1]]) {
        order.sort_by_key(|&j| targets[work[j]]);
    }
}

/// One worker's buffers and findings during the move pass.
struct MoveState {
    sizer: Sizer,
    q: QueryBufs,
    /// Indices (into `q`) of the batch's pages to move, and their addresses, target nodes and
    /// statuses as handed to `move_pages`.
    work: Vec<usize>,
    wa: Vec<u64>,
    wn: Vec<i32>,
    /// Statuses in `work` order; `call_status` in the call's order (`order`: grouped by target).
    status: Vec<i32>,
    order: Vec<usize>,
    call_status: Vec<i32>,
    /// Moved pages with the node they were on before (the rollback record).
    runs: RunBuilder,
    /// Busy pages to retry once: (group, address, target, node before).
    retry: Vec<(usize, u64, u32, u32)>,
}

impl MoveState {
    fn new(fixed_batch: Option<usize>) -> MoveState {
        MoveState {
            sizer: Sizer::new(fixed_batch),
            q: QueryBufs::default(),
            work: Vec::new(),
            wa: Vec::new(),
            wn: Vec::new(),
            status: Vec::new(),
            order: Vec::new(),
            call_status: Vec::new(),
            runs: RunBuilder::default(),
            retry: Vec::new(),
        }
    }
}

/// Issues `move_pages` batches, on `jobs` threads at once when asked (disjoint page sets of one
/// process: the kernel allows concurrent `move_pages` on one mm). Each thread claims its next
/// batch from the shared cursor, sized by its own [`Sizer`], and queries it just before moving it
/// (the current node decides what to move, is what the rollback record keeps, and gives the
/// report's before / to-move counters). Shared state: the stop flag (budget out, process gone,
/// not permitted, rollback record full), the progress counters and their 250 ms throttle, the
/// per-group counters.
struct Mover<'a> {
    pid: i32,
    start_time: u64,
    proc_root: &'a Path,
    opts: &'a ApplyOptions,
    page: u64,
    groups: &'a [Group],
    /// Per group: the node all its pages were on when numa_maps was read before the pass
    /// (`vma_view::single_node`), which then stands for the query before each move.
    known: Vec<Option<u32>>,
    thp: &'a [(u64, u64)],
    t0: Instant,
    /// Each thread's share of the work (pages / threads, rounded up): no batch is larger, so
    /// that every thread gets work at once.
    share: u64,
    cursor: Cursor,
    stop: AtomicBool,
    budget_hit: AtomicBool,
    exited: AtomicBool,
    runs_full: AtomicBool,
    /// Runs the workers' rollback builders hold (reserved before each move).
    runs_used: AtomicUsize,
    /// Pages handed to `move_pages` (first pass), and pages it reported moved.
    done: AtomicU64,
    moved: AtomicU64,
    last_progress: Mutex<Instant>,
    /// Why moving stopped for lack of permission.
    message: Mutex<Option<String>>,
    query_error: Mutex<Option<String>>,
    /// Per group: the batches' counters, and pages handed to move_pages in pass 0.
    counts: Mutex<Vec<(PageStats, u64)>>,
    /// Nanoseconds in queries and in moving `move_pages` calls (summed over threads), calls,
    /// and the largest batch.
    query_ns: AtomicU64,
    call_ns: AtomicU64,
    calls: AtomicU64,
    batch_max: AtomicU64,
}

impl Mover<'_> {
    /// Reserves room for `n` more runs in the rollback record; false (and moving stops) when
    /// the record would exceed [`APPLY_MAX_RUNS`].
    fn reserve_runs(&self, n: usize) -> bool {
        let mut cur = self.runs_used.load(Ordering::SeqCst);
        loop {
            if cur + n > APPLY_MAX_RUNS {
                self.runs_full.store(true, Ordering::SeqCst);
                self.stop.store(true, Ordering::SeqCst);
                return false;
            }
            match self.runs_used.compare_exchange(cur, cur + n, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(x) => cur = x,
            }
        }
    }

    /// Replaces a reservation of `reserved` runs by the `added` runs a move really made.
    fn settle_runs(&self, reserved: usize, added: usize) {
        if added > reserved {
            self.runs_used.fetch_add(added - reserved, Ordering::SeqCst);
        } else {
            self.runs_used.fetch_sub(reserved - added, Ordering::SeqCst);
        }
    }

    /// A whole call failed. Returns the errno name when the pages count as not moved; `None`
    /// when moving stops (the process exited, or it is not permitted).
    fn failed(&self, e: &io::Error) -> Option<String> {
        let exited = e.raw_os_error() == Some(libc::ESRCH)
            || check_process(self.pid, Some(self.start_time), self.proc_root).is_err();
        if exited {
            self.exited.store(true, Ordering::SeqCst);
            self.stop.store(true, Ordering::SeqCst);
            return None;
        }
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                self.stop.store(true, Ordering::SeqCst);
                lock(&self.message).get_or_insert_with(|| page_permission_message(self.pid, self.proc_root, e));
                None
            }
            Some(n) => Some(sys::errno_name(n)),
            None => Some("unknown".into()),
        }
    }

    fn out_of_time(&self) -> bool {
        if let Some(b) = self.opts.budget {
            if self.t0.elapsed() >= b {
                self.budget_hit.store(true, Ordering::SeqCst);
                self.stop.store(true, Ordering::SeqCst);
                return true;
            }
        }
        false
    }

    fn budget_left(&self) -> Option<Duration> {
        self.opts.budget.map(|b| b.saturating_sub(self.t0.elapsed()))
    }

    /// `numascope: moved M pages; W/T pages of the plan walked (P%) in S s` on stderr.
    fn progress(&self) {
        if self.opts.progress {
            let total: u64 = self.groups.iter().map(|g| g.pages).sum();
            let walked = total - self.cursor.left();
            let pct = if total > 0 { walked as f64 * 100.0 / total as f64 } else { 100.0 };
            eprintln!(
                "numascope: moved {} pages; {walked}/{total} pages of the plan walked ({pct:.0}%) in {:.2} s",
                self.moved.load(Ordering::SeqCst),
                self.t0.elapsed().as_secs_f64()
            );
        }
    }

    /// One thread of the move pass: claims batches until the pages run out or moving stops.
    fn work(&self, st: &mut MoveState) {
        loop {
            if self.stop.load(Ordering::SeqCst) || self.out_of_time() {
                return;
            }
            if let (Some(p), true) = (self.opts.pause, self.done.load(Ordering::SeqCst) > 0) {
                std::thread::sleep(p);
            }
            let want = st.sizer.size(self.budget_left(), self.share);
            let Some((g, from, n)) = self.cursor.claim(self.groups, want) else { return };
            let t = Instant::now();
            self.batch(st, g, from, n);
            st.sizer.observe(n, t.elapsed());
            if let Ok(mut last) = self.last_progress.lock() {
                if last.elapsed() >= Duration::from_millis(250) {
                    self.progress();
                    *last = Instant::now();
                }
            }
            if st.retry.len() >= self.opts.fixed_batch().unwrap_or(pages::PAGES_PER_JOB) {
                self.retry(st);
            }
        }
    }

    /// Queries pages `from..from + n` of group `g` and moves those not on their target node.
    fn batch(&self, st: &mut MoveState, g: usize, from: u64, n: u64) {
        let page = self.page;
        let tq = Instant::now();
        let queried = match self.known[g] {
            Some(node) => {
                let q = &mut st.q;
                self.groups[g].fill(from, n, page, &mut q.addrs, &mut q.targets);
                q.status.clear();
                q.status.resize(q.addrs.len(), node as i32);
                Ok(())
            }
            None => st.q.query(self.pid, &self.groups[g], from, n, page),
        };
        self.query_ns.fetch_add(tq.elapsed().as_nanos() as u64, Ordering::SeqCst);
        let mut d = PageStats::default();
        if let Err(e) = queried {
            if let Some(name) = self.failed(&e) {
                lock(&self.query_error).get_or_insert(format!(
                    "a move_pages query of process {} failed with {name}: the {n} pages of that batch were not \
                     moved (counted as to move, not attempted)",
                    self.pid
                ));
                d.to_move += n;
                lock(&self.counts)[g].0.add_counts(&d);
            } else {
                // not counted: the process exited, or moving stopped for lack of permission
                lock(&self.counts)[g].0.not_attempted += n;
            }
            return;
        }
        st.work.clear();
        count_before(&st.q.status, &st.q.targets, self.opts.no_skip, &mut d, Some(&mut st.work));
        let attempted = self.move_work(st, g, &mut d);
        let mut c = lock(&self.counts);
        c[g].0.add_counts(&d);
        c[g].1 += attempted;
    }

    /// Moves the pages `st.work` lists; returns how many were handed to `move_pages`.
    fn move_work(&self, st: &mut MoveState, g: usize, d: &mut PageStats) -> u64 {
        let (page, q) = (self.page, &st.q);
        if st.work.is_empty() {
            return 0;
        }
        let reserved = pages::count_runs(st.work.iter().map(|&i| (q.addrs[i], q.status[i] as u32)), page);
        if !self.reserve_runs(reserved) {
            return 0;
        }
        // The kernel migrates the pages it has gathered each time the target node changes from
        // one entry to the next (do_pages_move), so pages in address order with alternating
        // targets (an interleave) were moved one migration at a time. The call gets them grouped
        // by target node (stable: ascending addresses within a node); `st.order[k]` is the
        // position in `st.work` of call entry k, and the statuses are put back in work order.
        grouped_by_target(&st.work, &q.targets, &mut st.order);
        st.wa.clear();
        st.wa.extend(st.order.iter().map(|&j| q.addrs[st.work[j]]));
        st.wn.clear();
        st.wn.extend(st.order.iter().map(|&j| q.targets[st.work[j]] as i32));
        st.call_status.clear();
        st.call_status.resize(st.work.len(), sys::STATUS_UNSET);
        let runs_before = st.runs.runs.len();
        let tc = Instant::now();
        let moved = sys::move_pages(self.pid, &st.wa, &st.wn, &mut st.call_status);
        st.status.clear();
        st.status.resize(st.work.len(), sys::STATUS_UNSET);
        for (k, &j) in st.order.iter().enumerate() {
            st.status[j] = st.call_status[k];
        }
        self.call_ns.fetch_add(tc.elapsed().as_nanos() as u64, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.batch_max.fetch_max(st.work.len() as u64, Ordering::SeqCst);
        let n = st.work.len() as u64;
        match moved {
            Ok(_) => {
                for (j, &i) in st.work.iter().enumerate() {
                    let (r, a, t, b0) = (st.status[j], q.addrs[i], q.targets[i], q.status[i] as u32);
                    if r >= 0 {
                        if r as u32 == t {
                            d.moved += 1;
                        } else {
                            d.not_moved.elsewhere += 1;
                        }
                        st.runs.push(a, b0, page);
                    } else if pages::contains(self.thp, a) {
                        d.not_moved.huge_page += 1;
                    } else if r == sys::STATUS_UNSET || -r == libc::EBUSY {
                        // busy, or not reached after the kernel gave up on another page: once more
                        st.retry.push((g, a, t, b0));
                    } else {
                        classify(&mut d.not_moved, -r);
                    }
                }
            }
            Err(e) => {
                if let Some(name) = self.failed(&e) {
                    *d.not_moved.other.entry(name).or_default() += n;
                } else {
                    self.settle_runs(reserved, 0);
                    return 0;
                }
            }
        }
        self.settle_runs(reserved, st.runs.runs.len() - runs_before);
        self.done.fetch_add(n, Ordering::SeqCst);
        self.moved.fetch_add(d.moved, Ordering::SeqCst);
        n
    }

    /// Moves the busy pages of `st` once more; what still fails is counted as busy.
    fn retry(&self, st: &mut MoveState) {
        let mut list = std::mem::take(&mut st.retry);
        if list.is_empty() {
            return;
        }
        // grouped by target node, as in move_work (one migration per node, not per change)
        list.sort_by_key(|x| x.2);
        let page = self.page;
        let mut d: BTreeMap<usize, PageStats> = BTreeMap::new();
        let give_up = |d: &mut BTreeMap<usize, PageStats>| {
            for &(g, ..) in &list {
                d.entry(g).or_default().not_moved.busy += 1;
            }
        };
        let reserved = pages::count_runs(list.iter().map(|&(_, a, _, b0)| (a, b0)), page);
        if self.stop.load(Ordering::SeqCst) || self.out_of_time() || !self.reserve_runs(reserved) {
            give_up(&mut d);
        } else {
            let wa: Vec<u64> = list.iter().map(|x| x.1).collect();
            let wn: Vec<i32> = list.iter().map(|x| x.2 as i32).collect();
            let mut status = vec![0i32; list.len()];
            let runs_before = st.runs.runs.len();
            let tc = Instant::now();
            let moved = sys::move_pages(self.pid, &wa, &wn, &mut status);
            self.call_ns.fetch_add(tc.elapsed().as_nanos() as u64, Ordering::SeqCst);
            self.calls.fetch_add(1, Ordering::SeqCst);
            match moved {
                Ok(_) => {
                    for (j, &(g, a, t, b0)) in list.iter().enumerate() {
                        let s = d.entry(g).or_default();
                        let r = status[j];
                        if r >= 0 {
                            if r as u32 == t {
                                s.moved += 1;
                            } else {
                                s.not_moved.elsewhere += 1;
                            }
                            st.runs.push(a, b0, page);
                        } else if r == sys::STATUS_UNSET || -r == libc::EBUSY {
                            s.not_moved.busy += 1;
                        } else {
                            classify(&mut s.not_moved, -r);
                        }
                    }
                }
                Err(e) => match self.failed(&e) {
                    Some(name) => {
                        for &(g, ..) in &list {
                            *d.entry(g).or_default().not_moved.other.entry(name.clone()).or_default() += 1;
                        }
                    }
                    None => give_up(&mut d),
                },
            }
            self.settle_runs(reserved, st.runs.runs.len() - runs_before);
        }
        let mut c = lock(&self.counts);
        for (g, s) in d {
            c[g].0.add_counts(&s);
        }
    }
}

fn classify(n: &mut NotMoved, errno: i32) {
    match errno {
        libc::EBUSY => n.busy += 1,
        libc::EFAULT | libc::ENOENT => n.not_present += 1,
        libc::EACCES | libc::EPERM => n.not_permitted += 1,
        e => *n.other.entry(sys::errno_name(e)).or_default() += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn move_calls_get_pages_grouped_by_target_node() {
        // an interleave over 3 nodes, page 4 already in place (not in the work list)
        let targets = [0u32, 1, 2, 0, 1, 2, 0];
        let work = [0usize, 1, 2, 3, 5, 6];
        let mut order = Vec::new();
        grouped_by_target(&work, &targets, &mut order);
        let call: Vec<(usize, u32)> = order.iter().map(|&j| (work[j], targets[work[j]])).collect();
        assert_eq!(call, vec![(0, 0), (3, 0), (6, 0), (1, 1), (2, 2), (5, 2)]);
        // one target: the work order as it is
        grouped_by_target(&[2, 4, 7], &[1; 8], &mut order);
        assert_eq!(order, vec![0, 1, 2]);
        grouped_by_target(&[], &targets, &mut order);
        assert!(order.is_empty());
    }

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

    fn record() -> RollbackRecord {
        RollbackRecord {
            format: ROLLBACK_FORMAT.into(),
            version: 1,
            pid: 5,
            start_time_ticks: "77".into(),
            page_size: 4096,
            pages: vec![
                PageRun { start: "0x5000".into(), count: 1, node: 0 },
                PageRun { start: "0x1000".into(), count: 3, node: 1 },
            ],
            threads: vec![ThreadAffinity { tid: 6, cpus: vec![0, 1], start_time_ticks: Some("80".into()) }],
            system_weights: None,
        }
    }

    #[test]
    fn weight_check_allows_one_page_per_cycle() {
        let found = BTreeMap::from([(1, 75), (0, 25)]);
        let c = WeightCheck::new(&[1, 0], &[3, 1], &found);
        assert_eq!((c.present, c.cycles, c.ok), (100, 25, true));
        assert_eq!(c.expected, BTreeMap::from([(1, 75), (0, 25)]));
        // a partial cycle: 10 pages of 3:1 are 8 + 2 by slots, 7.5 + 2.5 by share
        assert!(WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 8), (0, 2)])).ok);
        // 3 cycles of 4 pages: node 0 (weight 1) has 5 more than its share
        assert!(!WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 4), (0, 8)])).ok);
        // one page off on the weight-1 node of 100 pages is within the tolerance, two are not
        assert!(WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 74), (0, 26)])).ok);
        assert!(!WeightCheck::new(&[1, 0], &[3, 1], &BTreeMap::from([(1, 73), (0, 27)])).ok);
        // a page left on another node fails the check
        let c = WeightCheck::new(&[1, 0], &[1, 1], &BTreeMap::from([(1, 2), (0, 2), (3, 1)]));
        assert!(!c.ok, "{c:?}");
    }

    #[test]
    fn rollback_record_with_system_weights() {
        let mut r = record();
        r.system_weights = Some(weights::WeightsState { weights: BTreeMap::from([(0, 1), (1, 4)]), auto: Some(true) });
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains(r#""systemWeights":{"weights":{"0":1,"1":4},"auto":true}"#), "{s}");
        assert_eq!(RollbackRecord::parse(&s).unwrap(), r);
        let e = RollbackRecord::parse(&s.replace(r#""1":4"#, r#""1":0"#)).unwrap_err();
        assert_eq!(e.path, "systemWeights.weights.1");
        assert!(RollbackRecord::parse(&s.replace(r#""1":4"#, r#""1":999"#)).is_err());
        assert!(RollbackRecord::parse(&s.replace(r#""1":4"#, r#""../../x":4"#)).is_err());
        let e = RollbackRecord::parse(&s.replace(r#""1":4"#, r#""4096":4"#)).unwrap_err();
        assert_eq!(e.path, "systemWeights.weights.4096");
        // a record with only system weights is not empty
        let only = RollbackRecord { pages: vec![], threads: vec![], ..r };
        assert!(!only.is_empty());
    }

    #[test]
    fn rollback_record_round_trip() {
        let r = record();
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains("\"startTimeTicks\":\"77\"") && s.contains("\"startTimeTicks\":\"80\""), "{s}");
        assert_eq!(RollbackRecord::parse(&s).unwrap(), r);
        assert_eq!(r.checked_runs().unwrap(), vec![(0x1000, 3, 1), (0x5000, 1, 0)]);
        assert!(RollbackRecord::parse(&s.replace("numascope-rollback", "x")).is_err());
        // a record without thread start times (older writers) still parses
        let old = s.replace(",\"startTimeTicks\":\"80\"", "");
        assert_eq!(RollbackRecord::parse(&old).unwrap().threads[0].start_time_ticks, None);
    }

    fn bad(f: impl FnOnce(&mut RollbackRecord)) -> PlanError {
        let mut r = record();
        f(&mut r);
        RollbackRecord::parse(&serde_json::to_string(&r).unwrap()).unwrap_err()
    }

    #[test]
    fn rollback_record_errors_name_the_field() {
        assert_eq!(bad(|r| r.pid = 0).path, "pid");
        assert_eq!(bad(|r| r.threads[0].tid = -1).path, "threads[0].tid");
        assert_eq!(bad(|r| r.threads[0].cpus.clear()).path, "threads[0].cpus");
        assert_eq!(bad(|r| r.threads[0].cpus = vec![0, 9000]).path, "threads[0].cpus[1]");
        assert_eq!(bad(|r| r.pages[1].start = "0x1001".into()).path, "pages[1].start");
        assert_eq!(bad(|r| r.pages[1].start = "0x+1000".into()).path, "pages[1].start");
        assert_eq!(bad(|r| r.pages[1].count = 0).path, "pages[1].count");
        assert_eq!(bad(|r| r.pages[1].count = 5).path, "pages[0]"); // 0x1000 + 5 pages overlaps 0x5000
        assert_eq!(bad(|r| r.pages[0].start = "0xfffffffffffff000".into()).path, "pages[0]");
        assert_eq!(bad(|r| r.page_size = 3).path, "pageSize");
        let e = bad(|r| r.pages[0].count = 1 << 40);
        assert_eq!((e.path.as_str(), e.kind), ("pages[0].count", PlanErrorKind::TooLarge));
        assert!(e.to_string().contains("limit of 134217728 pages"), "{e}");
        let e = bad(|r| {
            r.pages = (0..3)
                .map(|i| PageRun { start: format!("0x{:x}", (i + 1u64) << 40), count: 1 << 27, node: 0 })
                .collect()
        });
        assert_eq!((e.path.as_str(), e.kind), ("pages[2]", PlanErrorKind::TooLarge));
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
