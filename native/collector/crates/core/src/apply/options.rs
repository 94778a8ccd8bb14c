//! The options of an apply or rollback ([`ApplyOptions`]) and why one refused or failed
//! ([`ApplyError`]).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::pages::{self, MAX_BATCH_PAGES, MAX_PAGES_IN_FLIGHT};
use super::plan::PlanError;
use super::weights;

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
