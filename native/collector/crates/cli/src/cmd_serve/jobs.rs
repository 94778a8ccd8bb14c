//! The records of the server's background jobs, which `State` holds: the status every job
//! reports, the `/api/bench` runs and the `/api/runs` plan runs. Types only: their routes
//! (bench.rs, runs.rs) use `State`, and `State` uses these, so they live below both.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use numascope_core::apply::launch::RunReport;
use numascope_core::bench::job::{BenchOutcome, BenchProgress};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Status {
    Running,
    Finished,
    Failed,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Finished => "finished",
            Status::Failed => "failed",
        }
    }
}

pub(super) struct BenchRun {
    pub(super) id: String,
    pub(super) quick: bool,
    pub(super) started_unix_ms: u64,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) inner: Mutex<BenchInner>,
}

pub(super) struct BenchInner {
    pub(super) status: Status,
    pub(super) stop_requested: bool,
    pub(super) progress: Option<BenchProgress>,
    pub(super) outcome: Option<BenchOutcome>,
    pub(super) error: Option<(String, String)>,
}

/// The server's benchmark runs, oldest first.
#[derive(Default)]
pub(super) struct BenchRuns(pub(super) Mutex<Vec<Arc<BenchRun>>>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RunStatus {
    Running,
    Exited,
    Failed,
}

impl RunStatus {
    pub(super) fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Exited => "exited",
            RunStatus::Failed => "failed",
        }
    }
}

pub(super) struct PlanRun {
    pub(super) id: String,
    pub(super) pid: u32,
    pub(super) command: Vec<String>,
    pub(super) started_unix_ms: u64,
    pub(super) inner: Mutex<RunInner>,
}

pub(super) struct RunInner {
    pub(super) status: RunStatus,
    pub(super) report: RunReport,
    pub(super) error: Option<String>,
}

#[derive(Default)]
pub(super) struct PlanRuns(pub(super) Mutex<Vec<Arc<PlanRun>>>);
