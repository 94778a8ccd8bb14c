//! Node-API binding of the numascope collector core (loaded by the desktop app's main process
//! and by Node scripts). Every operation that does work is asynchronous: the blocking work runs
//! on the libuv thread pool (napi-rs `AsyncTask`) and the function returns a Promise;
//! `recordLimits()` only returns a constant table.
//!
//! Native exports: `probe()`, `topology()`, `record(options, token?, onWindow?)`,
//! `apply(planJson, options)`, `runPlan(planJson, options)`, `recordLimits()`, `bench(options, token?, onProgress?)`, the
//! `StopToken` class and `stopRecordings()`. `index.js` adds the AbortSignal wiring
//! (`record({…, signal})`, `bench({…, signal})`), `onWindow` / `onProgress` as options, and
//! `startRecording()` / `startBench()` (a handle with `.stop()`).
//!
//! Live windows: with `onWindow`, the recorder's own per-window aggregates (core `live.rs`, the
//! same windows `numascope serve` streams) are sent to that function from a forwarder thread
//! through a ThreadsafeFunction. The forwarder waits until JavaScript has run the callback for a
//! window before sending the next, and `record()` settles only after the forwarder has finished:
//! every window, the final one included, reaches JavaScript before the Promise resolves.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use numascope_core::apply as core_apply;
use numascope_core::live::{LiveSink, LiveWindow};
use numascope_core::recorder::{self as core_record, Naming, RecordOptions as CoreOptions, RecordRequest};
use numascope_core::{bench as core_bench, probe as core_probe, topology as core_topology};

fn err<E: std::fmt::Display>(e: E) -> Error {
    Error::new(Status::GenericFailure, e.to_string())
}

/// A blocking function run on the libuv pool, resolving to JSON.
pub struct JsonTask(Option<Box<dyn FnOnce() -> Result<serde_json::Value> + Send>>);

/// A JSON value handed to JavaScript as a plain object.
pub struct Json(serde_json::Value);

impl TypeName for Json {
    fn type_name() -> &'static str {
        "Object"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Json {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        // SAFETY: forwarded from napi-rs with the same env.
        unsafe { serde_json::Value::to_napi_value(env, val.0) }
    }
}

impl Task for JsonTask {
    type Output = serde_json::Value;
    type JsValue = Json;
    fn compute(&mut self) -> Result<Self::Output> {
        (self.0.take().expect("task runs once"))()
    }
    fn resolve(&mut self, _env: Env, v: Self::Output) -> Result<Self::JsValue> {
        Ok(Json(v))
    }
}

/// The capability probe of this machine (same object as `numascope probe --json`).
#[napi(ts_return_type = "Promise<Probe>")]
pub fn probe() -> AsyncTask<JsonTask> {
    AsyncTask::new(JsonTask(Some(Box::new(|| {
        let mut t = core_topology::read_topology().map_err(err)?;
        numascope_core::bench::output::describe_calibration(
            &mut t,
            numascope_core::bench::output::cache_dir().as_deref(),
        );
        serde_json::to_value(core_probe::probe(&t)).map_err(err)
    }))))
}

/// The machine description written into traces (manifest `machine` object).
#[napi(ts_return_type = "Promise<Machine>")]
pub fn topology() -> AsyncTask<JsonTask> {
    AsyncTask::new(JsonTask(Some(Box::new(|| {
        let mut t = core_topology::read_topology().map_err(err)?;
        numascope_core::bench::output::describe_calibration(
            &mut t,
            numascope_core::bench::output::cache_dir().as_deref(),
        );
        serde_json::to_value(t.machine()).map_err(err)
    }))))
}

/// Every range and default of the record options (`record()`, `numascope record`, `numascope
/// serve`), from the collector's one table: `{ durationMaxS, intervalMs: { min, max, default },
/// faultPeriod, faultRateHz, memRateHz, windowMs, faultEvents, counterSets }`. Synchronous.
#[napi(ts_return_type = "RecordLimits")]
pub fn record_limits() -> Result<Json> {
    serde_json::to_value(core_record::RECORD_LIMITS).map(Json).map_err(err)
}

/// Options of `record()`: exactly one of `pid` and `command`.
#[napi(object)]
pub struct RecordOptions {
    /// Attach to this running process.
    pub pid: Option<i32>,
    /// Launch this argv.
    pub command: Option<Vec<String>>,
    /// Stop after this many milliseconds (default: when the process exits or it is stopped).
    pub duration_ms: Option<f64>,
    /// Trace file to write.
    pub output: String,
    /// /proc polling interval, ms (default 100).
    pub interval_ms: Option<u32>,
    /// Also monitor region hotness with DAMON (root, free DAMON sysfs; default false).
    pub damon: Option<bool>,
    /// Sample one page fault in N (1 = every fault). Default: adaptive (`faultRateHz`).
    pub fault_period: Option<u32>,
    /// Adaptive page-fault sampling: every fault below this rate per thread, about this many
    /// samples/s above (default 10000).
    pub fault_rate_hz: Option<u32>,
    /// Live window length in ms when `onWindow` is given (default 250, as `numascope serve`).
    pub window_ms: Option<u32>,
    /// Which event carries the page faults: `auto` (default: the tracepoint
    /// exceptions:page_fault_user while automatic NUMA balancing is on, so that its hinting
    /// faults are recorded as accesses), `software` or `tracepoint` (`numascope record --fault-event`).
    pub fault_event: Option<String>,
    /// Terminate a launched command still running when the recording stops (default false: it is
    /// left running, in its own process group, and reaped when it exits; `numascope record --kill-on-stop`).
    pub kill_on_stop: Option<bool>,
    /// `on`: switch automatic NUMA balancing on for the recording (root; the previous value is
    /// restored afterwards), `leave` (default): leave it (`numascope record --numa-balancing`).
    pub numa_balancing: Option<String>,
    /// Preload the allocation-site shim into a launched command and store its allocations with
    /// their call stacks (default true; false = `numascope record --no-alloc-sites`). Ignored when
    /// attaching (docs/alloc-sites.md).
    pub alloc_sites: Option<bool>,
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
    pub damon: String,
    pub warnings: Vec<String>,
    /// The process was still running when the recording stopped and was left running.
    pub left_running: bool,
}

static ACTIVE: Mutex<Vec<Arc<AtomicBool>>> = Mutex::new(Vec::new());

/// Stops one recording early: `record(options, token)`, then `token.stop()`. The recording
/// still writes a valid trace (stopReason "signal") and its Promise resolves.
#[napi]
pub struct StopToken {
    flag: Arc<AtomicBool>,
}

#[napi]
impl StopToken {
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        StopToken { flag: Arc::new(AtomicBool::new(false)) }
    }

    /// Asks the recording to stop now (idempotent).
    #[napi]
    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    #[napi(getter)]
    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

/// `onWindow`: called on the JavaScript thread with each live window (a plain object).
pub type WindowCallback = ThreadsafeFunction<serde_json::Value, Unknown<'static>, serde_json::Value, Status, false>;

/// How long the forwarder waits for JavaScript to take one window (then it moves on).
const WINDOW_ACK_TIMEOUT: Duration = Duration::from_secs(10);

pub struct RecordTask {
    opts: CoreOptions,
    live: Option<(mpsc::Receiver<LiveWindow>, WindowCallback)>,
}

/// Sends each window to JavaScript, one at a time, until the recorder drops its sender.
fn forward_windows(rx: mpsc::Receiver<LiveWindow>, cb: WindowCallback) {
    let mut js_gone = false;
    for w in rx {
        if js_gone {
            continue; // drain, so the recorder never blocks
        }
        let Ok(v) = serde_json::to_value(&w) else { continue };
        let (ack_tx, ack_rx) = mpsc::sync_channel::<()>(1);
        let status = cb.call_with_return_value(v, ThreadsafeFunctionCallMode::Blocking, move |_ret, _env| {
            let _ = ack_tx.send(());
            Ok(())
        });
        if status != Status::Ok || ack_rx.recv_timeout(WINDOW_ACK_TIMEOUT).is_err() {
            // The environment is closing (or JavaScript is stuck): stop calling it.
            js_gone = true;
        }
    }
}

impl Task for RecordTask {
    type Output = core_record::RecordSummary;
    type JsValue = RecordResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let forwarder = self.live.take().map(|(rx, cb)| {
            std::thread::Builder::new().name("numascope-live".into()).spawn(move || forward_windows(rx, cb))
        });
        let forwarder = match forwarder.transpose() {
            Ok(f) => f,
            Err(e) => {
                self.opts.live = None;
                return Err(err(format!("cannot start the live-window thread: {e}")));
            }
        };
        let r = core_record::record(&self.opts).map_err(err);
        // Dropping the sender ends the forwarder once it has delivered every window.
        self.opts.live = None;
        if let Some(f) = forwarder {
            let _ = f.join();
        }
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
            damon: s.damon,
            warnings: s.warnings,
            left_running: s.left_running,
        })
    }
}

/// Records a trace on a libuv worker thread; resolves when the trace is written. `token`
/// (a `StopToken`) stops it early; `on_window` receives the live windows (see the module docs).
#[napi(ts_return_type = "Promise<RecordResult>")]
pub fn record(
    options: RecordOptions,
    token: Option<&StopToken>,
    on_window: Option<WindowCallback>,
) -> Result<AsyncTask<RecordTask>> {
    let request = RecordRequest {
        pid: options.pid.map(i64::from),
        command: options.command,
        output: PathBuf::from(options.output),
        duration_s: options.duration_ms.map(|ms| ms / 1000.0),
        interval_ms: options.interval_ms.map(u64::from),
        fault_period: options.fault_period.map(u64::from),
        fault_rate_hz: options.fault_rate_hz.map(u64::from),
        fault_event: options.fault_event,
        window_ms: options.window_ms.map(u64::from),
        damon: options.damon,
        kill_on_stop: options.kill_on_stop,
        numa_balancing: options.numa_balancing,
        alloc_sites: options.alloc_sites,
        ..Default::default()
    };
    let mut opts = request
        .validate()
        .map_err(|e| Error::new(Status::InvalidArg, format!("record: {}", e.message(Naming::Node))))?;
    opts.command_line = vec!["numascope-node".into(), "record".into()];
    let live = on_window.map(|cb| {
        let (tx, rx) = mpsc::channel();
        opts.live = Some(LiveSink::new(tx));
        (rx, cb)
    });
    let stop = token.map(|t| t.flag.clone()).unwrap_or_else(|| Arc::new(AtomicBool::new(false)));
    ACTIVE.lock().unwrap().push(stop.clone());
    opts.stop = Some(stop);
    Ok(AsyncTask::new(RecordTask { opts, live }))
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

/// Options of `apply()`.
#[napi(object)]
pub struct ApplyOptions {
    /// The process to change; must equal the plan's `target.pid`.
    pub pid: i32,
    /// List what would be done; change nothing (default false).
    pub dry_run: Option<bool>,
    /// Stop moving pages after this many ms (pinning and verification still run).
    pub budget_ms: Option<u32>,
    /// Also write the plan's `systemWeights` to the kernel's system-wide weighted-interleave
    /// weights (global: every process's weighted-interleave allocations use them; the rollback
    /// record keeps the previous ones and rollback restores them). Default false: not written,
    /// and the report warns.
    pub set_system_weights: Option<bool>,
}

/// Applies a plan (docs/plan-format.md, as JSON text) to a running process; resolves to the
/// report (same object as `numascope apply --json`). A real apply (dryRun false) writes no
/// rollback file: the record is returned as `report.rollback`.
#[napi(ts_return_type = "Promise<ApplyReport>")]
pub fn apply(plan_json: String, options: ApplyOptions) -> AsyncTask<JsonTask> {
    AsyncTask::new(JsonTask(Some(Box::new(move || {
        let topo = core_topology::read_topology().map_err(err)?;
        let plan = core_apply::parse_plan(&plan_json, topo.page_size_bytes)
            .map_err(|e| Error::new(Status::InvalidArg, format!("plan: {e}")))?;
        if plan.target.pid != options.pid {
            return Err(Error::new(
                Status::InvalidArg,
                format!(
                    "the plan targets process {} (target.pid), not {}; numascope only touches the process it is given",
                    plan.target.pid, options.pid
                ),
            ));
        }
        let dry_run = options.dry_run.unwrap_or(false);
        let opts = core_apply::ApplyOptions {
            dry_run,
            budget: options.budget_ms.map(|ms| Duration::from_millis(ms as u64)),
            set_system_weights: options.set_system_weights.unwrap_or(false),
            ..Default::default()
        };
        let out = core_apply::apply(&plan, &topo, &opts).map_err(err)?;
        let mut v = serde_json::to_value(&out.report).map_err(err)?;
        // A real apply also hands back the rollback record (what `numascope apply` writes to a
        // file): keep it to undo the change with `numascope rollback`.
        if let (false, Some(o)) = (dry_run, v.as_object_mut()) {
            o.insert("rollback".into(), serde_json::to_value(&out.rollback).map_err(err)?);
        }
        Ok(v)
    }))))
}

/// Options of `runPlan()` (`numascope run --plan`; all optional).
#[napi(object)]
pub struct RunPlanOptions {
    /// The argv to launch (default: the plan's `target.command`).
    pub command: Option<Vec<String>>,
    /// Check everything and resolve to what would be placed and pinned; launch nothing.
    pub dry_run: Option<bool>,
    /// Run even if the program's file name differs from the plan's `target.command[0]`.
    pub any_program: Option<bool>,
    /// `"refuse"` (default) or `"interleave"`: weighted-interleave entries the kernel cannot do.
    pub weights_fallback: Option<String>,
    /// Write the system-wide weighted-interleave weights the plan needs for the run (root; global:
    /// every process's weighted-interleave allocations use them) and restore the previous ones
    /// when the program exits; in a dry run only read them (a warning says what would be
    /// written). Default false.
    pub set_system_weights: Option<bool>,
}

/// Launches a program with a plan's object entries (placement by allocation site) and thread
/// entries applied from its first allocation, as `numascope run --plan` does (docs/apply.md,
/// "Applying at the next launch"); resolves when the program exits, to the report (the object
/// `numascope run --report` writes: matches and bytes per object entry, threads pinned, entries
/// never matched), or at once to the planned report in a dry run. The program's stdin is
/// /dev/null; its stdout and stderr are this process's.
#[napi(ts_return_type = "Promise<RunReport>")]
pub fn run_plan(plan_json: String, options: RunPlanOptions) -> AsyncTask<JsonTask> {
    use core_apply::launch::{self, WeightsFallback};
    AsyncTask::new(JsonTask(Some(Box::new(move || {
        let invalid = |m: String| Error::new(Status::InvalidArg, m);
        if plan_json.len() > core_apply::MAX_PLAN_BYTES {
            return Err(invalid(format!(
                "plan: {} bytes, more than the limit of {} bytes",
                plan_json.len(),
                core_apply::MAX_PLAN_BYTES
            )));
        }
        let command = match options.command {
            Some(c) => c,
            None => {
                let v: serde_json::Value =
                    serde_json::from_str(&plan_json).map_err(|e| invalid(format!("plan: not JSON: {e}")))?;
                v["target"]["command"]
                    .as_array()
                    .map(|a| a.iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect::<Vec<_>>())
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| {
                        invalid("command: the plan names no command (target.command); pass options.command".into())
                    })?
            }
        };
        if command.is_empty()
            || command[0].is_empty()
            || command.len() > 4096
            || command.iter().any(|a| a.contains('\0'))
        {
            return Err(invalid("command: a non-empty argv of at most 4096 strings without NUL".into()));
        }
        let weights_fallback = match options.weights_fallback.as_deref() {
            None | Some("refuse") => Some(WeightsFallback::Refuse),
            Some("interleave") => Some(WeightsFallback::Interleave),
            Some(o) => return Err(invalid(format!("weightsFallback: \"refuse\" or \"interleave\", not {o:?}"))),
        };
        let opts = launch::RunOptions {
            plan_text: plan_json,
            plan_label: "plan".into(),
            command,
            dry_run: options.dry_run.unwrap_or(false),
            any_program: options.any_program.unwrap_or(false),
            weights_fallback,
            set_system_weights: options.set_system_weights.unwrap_or(false),
        };
        let status = |code: u8| if code == launch::EXIT_USAGE { Status::InvalidArg } else { Status::GenericFailure };
        let p = launch::prepare(&opts).map_err(|(c, m)| Error::new(status(c), m))?;
        let report = if opts.dry_run {
            p.planned_report()
        } else {
            let launched = launch::launch(p, launch::Stdio3::NullStdin).map_err(|(c, m)| Error::new(status(c), m))?;
            launched.wait().map_err(|(c, m)| Error::new(status(c), m))?
        };
        serde_json::to_value(&report).map_err(err)
    }))))
}

/// Options of `bench()` (`numascope bench`; all optional).
#[napi(object)]
pub struct BenchOptions {
    /// Quick mode: fewer repetitions and points, smaller arrays (default false).
    pub quick: Option<bool>,
    /// Stop after this many seconds with what was measured (partial).
    pub max_seconds: Option<f64>,
    /// Bytes of each STREAM array per cpu node (default: 4 to 8 × the last-level caches).
    pub array_bytes: Option<f64>,
    /// Bytes of the pointer-chase buffer (default: 4 to 8 × the last-level caches).
    pub chase_bytes: Option<f64>,
    /// Store a complete run as this machine's calibration in the cache directory (default true).
    pub save: Option<bool>,
}

/// `onProgress`: called on the JavaScript thread with each progress message (a plain object).
pub type ProgressCallback = ThreadsafeFunction<serde_json::Value, Unknown<'static>, serde_json::Value, Status, false>;

pub struct BenchTask {
    opts: numascope_core::bench::BenchOptions,
    save: bool,
    stop: Arc<AtomicBool>,
    progress: Option<ProgressCallback>,
}

fn byte_option(name: &str, v: Option<f64>) -> Result<Option<u64>> {
    match v {
        None => Ok(None),
        Some(b) if b.is_finite() && b >= 0.0 && b.fract() == 0.0 && b <= 9.007_199_254_740_991e15 => Ok(Some(b as u64)),
        Some(b) => {
            Err(Error::new(Status::InvalidArg, format!("bench: {name} must be a whole number of bytes, got {b}")))
        }
    }
}

impl Task for BenchTask {
    type Output = serde_json::Value;
    type JsValue = Json;

    fn compute(&mut self) -> Result<Self::Output> {
        let topo = core_topology::read_topology().map_err(err)?;
        let cb = self.progress.take();
        let out = core_bench::job::run_outcome(
            &topo,
            &core_topology::Roots::default(),
            &self.opts,
            self.save,
            core_bench::output::cache_dir(),
            &self.stop,
            &mut |p| {
                if let (Some(cb), Ok(v)) = (&cb, serde_json::to_value(p)) {
                    // Progress is advisory: never hold the benchmark up for JavaScript.
                    cb.call(v, ThreadsafeFunctionCallMode::NonBlocking);
                }
            },
        )
        .map_err(|e| Error::new(Status::GenericFailure, format!("bench ({}): {e}", core_bench::job::error_code(&e))))?;
        serde_json::to_value(&out).map_err(err)
    }

    fn resolve(&mut self, _env: Env, v: Self::Output) -> Result<Self::JsValue> {
        Ok(Json(v))
    }
}

/// Measures this machine (`numascope bench`) on a libuv worker thread; resolves to
/// `{ machine, storedAs, storeNote }`: the calibrated machine model, stored as this machine's
/// calibration when the run is complete and `save` is not false. `token` (a `StopToken`) stops it
/// after the current repetition; it still resolves, with `machine.calibration.partial`.
/// `on_progress` receives `{ step, steps, what, elapsedS, remainingS }` as each step starts.
#[napi(ts_return_type = "Promise<BenchOutcome>")]
pub fn bench(
    options: Option<BenchOptions>,
    token: Option<&StopToken>,
    on_progress: Option<ProgressCallback>,
) -> Result<AsyncTask<BenchTask>> {
    let o = options.unwrap_or(BenchOptions {
        quick: None,
        max_seconds: None,
        array_bytes: None,
        chase_bytes: None,
        save: None,
    });
    let request = core_bench::job::BenchRequest {
        quick: o.quick,
        max_seconds: o.max_seconds,
        array_bytes: byte_option("arrayBytes", o.array_bytes)?,
        chase_bytes: byte_option("chaseBytes", o.chase_bytes)?,
        save: o.save,
    };
    let (opts, save) = request.validate().map_err(|m| Error::new(Status::InvalidArg, format!("bench: {m}")))?;
    let stop = token.map(|t| t.flag.clone()).unwrap_or_else(|| Arc::new(AtomicBool::new(false)));
    Ok(AsyncTask::new(BenchTask { opts, save, stop, progress: on_progress }))
}
