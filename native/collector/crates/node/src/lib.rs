//! Node-API binding of the numascope collector core (loaded by the desktop app's main process
//! and by Node scripts). Blocking work runs on the libuv thread pool.
//!
//! Exports: `probe()`, `topology()`, `record(options)` (a Promise) and `stopRecordings()`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use numascope_core::record::{self as core_record, RecordOptions as CoreOptions, Target};
use numascope_core::{probe as core_probe, topology as core_topology};

fn err<E: std::fmt::Display>(e: E) -> Error {
    Error::new(Status::GenericFailure, e.to_string())
}

/// The capability probe of this machine (same object as `numascope probe --json`).
#[napi]
pub fn probe() -> Result<serde_json::Value> {
    let t = core_topology::read_topology().map_err(err)?;
    serde_json::to_value(core_probe::probe(&t)).map_err(err)
}

/// The machine description written into traces (manifest `machine` object).
#[napi]
pub fn topology() -> Result<serde_json::Value> {
    let t = core_topology::read_topology().map_err(err)?;
    serde_json::to_value(t.machine()).map_err(err)
}

/// Options of `record()`: exactly one of `pid` and `command`.
#[napi(object)]
pub struct RecordOptions {
    /// Attach to this running process.
    pub pid: Option<i32>,
    /// Launch this argv.
    pub command: Option<Vec<String>>,
    /// Stop after this many milliseconds (default: when the process exits or stopRecordings()).
    pub duration_ms: Option<f64>,
    /// Trace file to write.
    pub output: String,
    /// /proc polling interval, ms (default 100).
    pub interval_ms: Option<u32>,
}

/// What `record()` resolves to.
#[napi(object)]
pub struct RecordResult {
    pub output: String,
    pub size_bytes: f64,
    pub duration_us: f64,
    pub stop_reason: String,
    pub pid: i32,
    pub exit_code: Option<i32>,
    pub threads: u32,
    pub pages: u32,
    pub samples: u32,
    pub lost_samples: f64,
    pub page_faults: String,
    pub warnings: Vec<String>,
}

static ACTIVE: Mutex<Vec<Arc<AtomicBool>>> = Mutex::new(Vec::new());

pub struct RecordTask {
    opts: CoreOptions,
}

impl Task for RecordTask {
    type Output = core_record::RecordSummary;
    type JsValue = RecordResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let r = core_record::record(&self.opts).map_err(err);
        if let Some(stop) = &self.opts.stop {
            ACTIVE.lock().unwrap().retain(|s| !Arc::ptr_eq(s, stop));
        }
        r
    }

    fn resolve(&mut self, _env: Env, s: Self::Output) -> Result<Self::JsValue> {
        Ok(RecordResult {
            output: s.output.display().to_string(),
            size_bytes: s.size_bytes as f64,
            duration_us: s.duration_us as f64,
            stop_reason: s.stop_reason,
            pid: s.pid,
            exit_code: s.exit_code,
            threads: s.threads as u32,
            pages: s.pages as u32,
            samples: s.samples as u32,
            lost_samples: s.lost_samples as f64,
            page_faults: s.page_faults,
            warnings: s.warnings,
        })
    }
}

/// Records a trace on a libuv worker thread; resolves when the trace is written.
#[napi(ts_return_type = "Promise<RecordResult>")]
pub fn record(options: RecordOptions) -> Result<AsyncTask<RecordTask>> {
    let target = match (options.pid, options.command) {
        (Some(pid), None) => Target::Attach(pid),
        (None, Some(cmd)) if !cmd.is_empty() => Target::Launch(cmd),
        _ => return Err(Error::new(Status::InvalidArg, "record: give exactly one of `pid` and a non-empty `command`")),
    };
    let mut opts = CoreOptions::new(target, PathBuf::from(options.output));
    if let Some(ms) = options.duration_ms {
        if !(ms > 0.0 && ms.is_finite()) {
            return Err(Error::new(Status::InvalidArg, "record: durationMs must be a positive number"));
        }
        opts.duration = Some(Duration::from_secs_f64(ms / 1000.0));
    }
    if let Some(i) = options.interval_ms {
        opts.interval = Duration::from_millis(i.max(1) as u64);
    }
    opts.command_line = vec!["numascope-node".into(), "record".into()];
    let stop = Arc::new(AtomicBool::new(false));
    ACTIVE.lock().unwrap().push(stop.clone());
    opts.stop = Some(stop);
    Ok(AsyncTask::new(RecordTask { opts }))
}

/// Asks every running `record()` to stop now; each still writes its trace (stopReason "signal").
/// Returns how many were running.
#[napi]
pub fn stop_recordings() -> u32 {
    let active = ACTIVE.lock().unwrap();
    for s in active.iter() {
        s.store(true, Ordering::SeqCst);
    }
    active.len() as u32
}
