//! `numascope record`: launch a command (or attach to a pid), sample its page faults, poll
//! /proc, and write a trace.
//!
//! In phases, each a method of [`Session`]:
//! - options ([`options`]): [`RecordRequest::validate`] checks every range against
//!   [`RECORD_LIMITS`] and fills in the defaults, for the CLI, `numascope serve` and the Node
//!   binding alike;
//! - open (open.rs): the output is checked, the target launched (stopped before its exec) or
//!   attached, and each source opened: page faults, PMU memory accesses, per-thread counters,
//!   uncore, the /proc poller, DAMON. Problems are [`Warning`]s on the session
//!   ([`Session::warnings`]), never printed here;
//! - poll (session.rs): drain the fault and PMU rings, query the nodes of new pages, send a live
//!   window, read the counters, check the stop conditions; [`Session::run`] polls until one holds;
//! - finish (finish.rs): the last observation, the events stopped, a launched command still
//!   running left running (detached) or, with `kill_on_stop`, terminated; NUMA balancing
//!   restored when `--numa-balancing on` switched it on (balancing.rs); the trace tables built
//!   (build.rs), the manifest filled in (manifest.rs), the trace written.
//!
//! Stopping: whatever stops the capture (the duration, Ctrl-C/SIGTERM to the CLI, serve's stop,
//! the Node binding's stop token), a launched command still running is left running by default:
//! the events are disabled and closed, nothing else holds it (the recorder never ptraces), it was
//! never stopped after its exec, and a thread reaps it when it exits (launch.rs `detach`). The
//! summary's `left_running` and the manifest's `process.leftRunning` say so. With
//! `kill_on_stop` it is sent SIGTERM (SIGKILL after 2 s), as before.
//!
//! [`record`], [`record_with`] and [`record_observed`] run all the phases.
//!
//! Which pages have rows: every page a fault sample saw, and every page the placement scan
//! (placement_scan.rs) found resident at its last complete scan: at the start of an attached
//! recording, periodically, and at the stop.
//!
//! Node of a page (`pages.node`, `samples.node`):
//! - While the capture runs, pages seen in new fault samples are queried with `move_pages`
//!   (nodes = NULL) every 20 ms (or the polling interval if shorter); a sample's `node` is the answer of the first
//!   query after its fault (the node the page landed on), or -1 if no query answered.
//! - The placement scan asks the node of every resident page; at the end, if the process is
//!   still alive, it scans once more and the pages it did not find are queried again:
//!   `pages.node` is the last node a query or scan reported (last known).
//! - A launched command that already exited cannot be queried (its address space is gone). For a
//!   page no query ever answered, `pages.node` falls back to the last numa_maps snapshot of the
//!   page's region when all of that region's pages were on a single node, else -1. The manifest
//!   notes say so whenever the fallback was used.

use std::path::PathBuf;

use crate::probe::Probe;
use crate::topology::{self, Roots, Topology};
use crate::trace::TraceError;

mod alloc;
mod balancing;
mod build;
pub(crate) mod code;
mod finish;
mod intervals;
mod launch;
mod live_feed;
mod manifest;
mod open;
pub mod options;
mod pages;
mod placement_scan;
mod session;
mod tasks;

pub use launch::{install_cleanup_on_exit_signals, install_signal_handlers, resolve_program, signal_received};
pub use options::{
    CounterChoice, FaultEventChoice, Limit, Naming, NumaBalancingChoice, OptionError, OptionField, RecordLimits,
    RecordOptions, RecordRequest, Target, DEFAULT_FAULT_RATE_HZ, MAX_CAPTURE, RECORD_LIMITS,
};
pub use session::{Progress, Session, Stop};

/// A problem found while a recording started (a source that could not be opened, a file that
/// could not be read): the recording goes on without it. The library never prints these; the
/// caller shows them ([`Session::warnings`], [`Report::Warning`]) and they are in the summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning(pub String);

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What [`record_observed`] reports while it records.
#[derive(Clone, Copy, Debug)]
pub enum Report<'a> {
    /// Once per warning, when the recording has started.
    Warning(&'a Warning),
    /// About once a second while the capture runs.
    Progress(&'a Progress),
}

/// What a finished recording reports.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordSummary {
    pub output: PathBuf,
    pub size_bytes: u64,
    pub duration_us: u64,
    pub stop_reason: String,
    pub pid: i32,
    pub exit_code: Option<i32>,
    pub threads: usize,
    pub pages: usize,
    pub samples: usize,
    pub lost_samples: u64,
    pub page_faults: String,
    /// `not-requested`, `used: …` or `failed: <reason>`.
    pub damon: String,
    pub warnings: Vec<String>,
    /// The process was still running when the capture ended and numascope left it running (an
    /// attached process always; a launched command unless `kill_on_stop`): a plan can be applied
    /// to it and it can be recorded again by pid.
    pub left_running: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("no process with pid {0} (it is not in /proc; check the pid with `ps`)")]
    PidNotFound(i32),
    #[error("command not found: {0} (not an executable file, and not found in PATH)")]
    CommandNotFound(String),
    #[error("cannot execute {program}: {error}")]
    Exec { program: String, error: std::io::Error },
    #[error("permission denied: {0}")]
    Permission(String),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(String),
    #[error("writing the trace: {0}")]
    Trace(#[from] TraceError),
}

/// Records until the duration elapses, the process exits, or a signal/stop flag arrives, then
/// writes the trace.
pub fn record(opts: &RecordOptions) -> Result<RecordSummary, RecordError> {
    let roots = Roots::default();
    let mut topo = topology::read_topology().map_err(RecordError::Io)?;
    crate::bench::output::describe_calibration(&mut topo, crate::bench::output::cache_dir().as_deref());
    let probe = crate::probe::probe(&topo);
    record_with(opts, &roots, &topo, &probe)
}

/// [`record`] on a given machine description and probe. Reports nothing while it runs: the
/// warnings are in the summary.
pub fn record_with(
    opts: &RecordOptions,
    roots: &Roots,
    topo: &Topology,
    probe: &Probe,
) -> Result<RecordSummary, RecordError> {
    record_observed(opts, roots, topo, probe, &mut |_| {})
}

/// [`record_with`], calling `on` with each warning once the recording has started and with the
/// progress about once a second.
pub fn record_observed(
    opts: &RecordOptions,
    roots: &Roots,
    topo: &Topology,
    probe: &Probe,
    on: &mut dyn FnMut(Report<'_>),
) -> Result<RecordSummary, RecordError> {
    let mut session = Session::open(opts, roots, topo, probe)?;
    for w in session.warnings() {
        on(Report::Warning(&w));
    }
    let stop = session.run(&mut |p| on(Report::Progress(p)));
    session.finish(stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes() {
        assert_eq!(open::ring_exp_for(2), 9);
        assert!(open::ring_exp_for(4096) >= 2 && open::ring_exp_for(4096) < 9);
    }

    #[test]
    fn resolve_program_errors() {
        assert!(matches!(resolve_program("definitely-not-a-command-xyz"), Err(RecordError::CommandNotFound(_))));
        assert!(resolve_program("sh").is_ok());
        assert!(matches!(resolve_program("/nonexistent/prog"), Err(RecordError::CommandNotFound(_))));
    }
}
