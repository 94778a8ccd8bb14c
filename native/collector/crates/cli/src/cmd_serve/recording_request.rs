//! The body of `POST /api/recordings` checked: its fields (docs/live-api.md) as the recorder's
//! options, validated as the CLI's are, and the target looked for; the recorder's errors as the
//! API's error codes.

use std::path::Path;

use numascope_core::recorder::{
    self, Naming, OptionError, OptionField, RecordError, RecordOptions, RecordRequest, Target,
};
use serde_json::{json, Value};

use super::http::Resp;
use super::respond::{api_error, check_duplicate_keys, duplicate_key_error};

/// A `POST /api/recordings` body that passed every check.
pub(super) struct Checked {
    pub(super) opts: RecordOptions,
    /// `durationS` as asked (the recording's JSON shows it).
    pub(super) duration_s: Option<f64>,
    /// The target as the recording's JSON shows it: `{"pid"}` or `{"command"}`.
    pub(super) target: Value,
}

/// Checks a `POST /api/recordings` body: no duplicate key, a JSON object of known fields, valid
/// options, a process that exists (not this server) or a program that can be found. `Err` is
/// the answer (400, or 404 for a pid that does not exist).
pub(super) fn check(body: &[u8]) -> Result<Checked, Resp> {
    if let Err(detail) = check_duplicate_keys(body) {
        return Err(duplicate_key_error(&detail));
    }
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Err(api_error(400, "bad-json", &format!("the body is not JSON: {e}"))),
    };
    let Some(obj) = v.as_object() else {
        return Err(api_error(
            400,
            "bad-request",
            "the body must be a JSON object: {\"pid\": N} or {\"command\": [..]}",
        ));
    };
    for k in obj.keys() {
        if !RECORDING_FIELDS.contains(&k.as_str()) {
            return Err(api_error(
                400,
                "bad-request",
                &format!("unknown field {k:?}: the fields are {}", RECORDING_FIELDS.join(", ")),
            ));
        }
    }
    let request = match record_request(obj) {
        Ok(r) => r,
        Err(e) => return Err(api_error(400, e.code(), &e.message(Naming::Serve))),
    };
    let duration_s = request.duration_s;
    let opts = match request.validate() {
        Ok(o) => o,
        Err(e) => return Err(api_error(400, e.code(), &e.message(Naming::Serve))),
    };
    let target = target_json(&opts.target)?;
    Ok(Checked { opts, duration_s, target })
}

/// The target as the recording's JSON shows it, once the process is found (and is not this
/// server) or the program is.
fn target_json(target: &Target) -> Result<Value, Resp> {
    match target {
        Target::Attach(pid) => {
            let pid = *pid;
            // A thread id of this server names it too (/proc/TID is there for every thread).
            let me = std::process::id() as i32;
            if pid == me || numascope_core::procfs::thread_group(Path::new("/proc"), pid) == Some(me) {
                let what = if pid == me { String::new() } else { format!(" (pid {pid} is one of its threads)") };
                return Err(api_error(400, "bad-pid", &format!("numascope serve cannot record itself{what}")));
            }
            if !Path::new(&format!("/proc/{pid}")).is_dir() {
                return Err(api_error(404, "pid-not-found", &format!("no process with pid {pid}")));
            }
            Ok(json!({ "pid": pid }))
        }
        Target::Launch(argv) => {
            if let Err(e) = recorder::resolve_program(&argv[0]) {
                return Err(api_error(400, error_code(&e), &e.to_string()));
            }
            Ok(json!({ "command": argv }))
        }
    }
}

/// The fields of a `POST /api/recordings` body (docs/live-api.md).
const RECORDING_FIELDS: [&str; 11] = [
    "pid",
    "command",
    "durationS",
    "intervalMs",
    "faultPeriod",
    "faultRateHz",
    "faultEvent",
    "killOnStop",
    "numaBalancing",
    "allocSites",
    "callStackDepth",
];

/// The record options of a `POST /api/recordings` body. A number or pid of the wrong JSON type
/// becomes a value outside its range (0, NaN) and a command that is not an array of strings an
/// empty one, so that `RecordRequest::validate` reports it, in its order, with the range's message.
fn record_request(obj: &serde_json::Map<String, Value>) -> Result<RecordRequest, OptionError> {
    let given = |k: &str| obj.get(k).filter(|v| !v.is_null());
    let int = |k: &str| given(k).map(|v| v.as_u64().unwrap_or(0));
    let fault_event = match given("faultEvent") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(OptionError::range(OptionField::FaultEvent)),
    };
    let numa_balancing = match given("numaBalancing") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(OptionError::range(OptionField::NumaBalancing)),
    };
    let kill_on_stop = match given("killOnStop") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(OptionError::range(OptionField::KillOnStop)),
    };
    let alloc_sites = match given("allocSites") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(OptionError::range(OptionField::AllocSites)),
    };
    Ok(RecordRequest {
        pid: given("pid").map(|p| p.as_i64().unwrap_or(0)),
        command: given("command").map(|c| {
            c.as_array()
                .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect::<Option<Vec<String>>>())
                .unwrap_or_default()
        }),
        duration_s: given("durationS").map(|d| d.as_f64().unwrap_or(f64::NAN)),
        interval_ms: int("intervalMs"),
        fault_period: int("faultPeriod"),
        fault_rate_hz: int("faultRateHz"),
        call_stack_depth: int("callStackDepth"),
        fault_event,
        numa_balancing,
        kill_on_stop,
        alloc_sites,
        ..Default::default()
    })
}

pub(super) fn error_code(e: &RecordError) -> &'static str {
    match e {
        RecordError::PidNotFound(_) => "pid-not-found",
        RecordError::CommandNotFound(_) => "command-not-found",
        RecordError::Exec { .. } => "exec-failed",
        RecordError::Permission(_) => "permission-denied",
        RecordError::Usage(_) => "bad-request",
        RecordError::Io(_) => "io-error",
        RecordError::Trace(_) => "trace-write-failed",
    }
}
