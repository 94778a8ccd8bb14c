//! `/api/runs`: `numascope run --plan` started from the app (docs/live-api.md, "Launching with a
//! plan"). `POST /api/runs` checks the plan and the command as the CLI does; a dry run answers
//! the planned report at once; a real run launches the program with the allocation shim (stdin
//! from /dev/null, stdout and stderr the server's), answers `201` with its pid, and a thread of
//! its own waits for the program to exit and keeps the report for `GET /api/runs/:id`.

use std::sync::{Arc, Mutex};

use crate::exit::EXIT_USAGE;
use numascope_core::apply::launch::{self, RunOptions, RunReport, WeightsFallback};
use serde_json::{json, Value};

use super::http::Resp;
use super::ids::{random_hex, unix_ms};
use super::jobs::{PlanRun, RunInner, RunStatus};
use super::respond::{api_error, json_response};
use super::state::State;

/// Runs kept for `GET /api/runs` (the oldest exited one is dropped beyond this).
const KEEP_RUNS: usize = 32;
/// Programs launched from the server running at once.
pub(super) const MAX_RUNNING: usize = 4;

fn run_json(r: &PlanRun) -> Value {
    let inner = r.inner.lock().unwrap();
    json!({
        "id": r.id,
        "status": inner.status.name(),
        "pid": r.pid,
        "command": r.command,
        "startedUnixMs": r.started_unix_ms,
        "report": inner.report,
        "error": inner.error,
    })
}

/// `GET /api/runs`.
pub(super) fn list(st: &State) -> Resp {
    let runs = st.runs.0.lock().unwrap().clone();
    json_response(200, &json!({ "runs": runs.iter().map(|r| run_json(r)).collect::<Vec<_>>() }))
}

/// `GET /api/runs/:id`.
pub(super) fn get(st: &State, id: &str) -> Resp {
    let found = st.runs.0.lock().unwrap().iter().find(|r| r.id == id).cloned();
    match found {
        Some(r) => json_response(200, &run_json(&r)),
        None => api_error(404, "unknown-run", &format!("no run with id {id:?} (GET /api/runs lists them)")),
    }
}

fn bad(field: &str, what: &str) -> Resp {
    api_error(400, "bad-request", &format!("field {field}: {what}"))
}

/// The request body as run options; `Err` answers a 400.
fn options(v: &Value) -> Result<RunOptions, Resp> {
    let Some(plan) = v.get("plan").filter(|p| p.is_object()) else {
        return Err(bad("plan", "the plan object (docs/plan-format.md) is required"));
    };
    let command: Vec<String> = match v.get("command") {
        None | Some(Value::Null) => match plan["target"]["command"].as_array() {
            Some(c) if !c.is_empty() => c.iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect(),
            _ => return Err(bad(
                "command",
                "required: the plan names no command (target.command) to launch; give the argv as an array of strings",
            )),
        },
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= 4096 => {
            let mut out = Vec::with_capacity(a.len());
            for x in a {
                match x.as_str() {
                    Some(s) if !s.contains('\0') => out.push(s.to_string()),
                    _ => return Err(bad("command", "every element must be a string without NUL")),
                }
            }
            out
        }
        Some(_) => return Err(bad("command", "the argv to launch, a non-empty array of at most 4096 strings")),
    };
    if command[0].is_empty() {
        return Err(bad("command", "the program (command[0]) is empty"));
    }
    let flag = |k: &str| -> Result<bool, Resp> {
        match v.get(k) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(k, "a boolean")),
        }
    };
    let weights_fallback = match v.get("weightsFallback").and_then(|x| if x.is_null() { None } else { Some(x) }) {
        None => None,
        Some(Value::String(s)) if s == "refuse" => Some(WeightsFallback::Refuse),
        Some(Value::String(s)) if s == "interleave" => Some(WeightsFallback::Interleave),
        Some(_) => return Err(bad("weightsFallback", "\"refuse\" or \"interleave\"")),
    };
    Ok(RunOptions {
        plan_text: plan.to_string(),
        plan_label: "plan".into(),
        command,
        dry_run: flag("dryRun")?,
        any_program: flag("anyProgram")?,
        weights_fallback,
        set_system_weights: flag("setSystemWeights")?,
    })
}

/// `POST /api/runs` `{plan, command?, dryRun?, anyProgram?, weightsFallback?, setSystemWeights?}`.
pub(super) fn start(st: &Arc<State>, body: &[u8]) -> Resp {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return api_error(400, "bad-json", &format!("the request body is not JSON: {e}")),
    };
    let opts = match options(&v) {
        Ok(o) => o,
        Err(r) => return r,
    };
    let refused = |(code, msg): (u8, String)| {
        if code == EXIT_USAGE {
            api_error(400, "invalid-plan", &msg)
        } else {
            api_error(409, "run-refused", &msg)
        }
    };
    if !opts.dry_run {
        let running =
            st.runs.0.lock().unwrap().iter().filter(|r| r.inner.lock().unwrap().status == RunStatus::Running).count();
        if running >= MAX_RUNNING {
            return api_error(
                429,
                "too-many-runs",
                &format!("{running} programs launched with a plan are still running (at most {MAX_RUNNING})"),
            );
        }
    }
    let prepared = match launch::prepare(&opts) {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    if opts.dry_run {
        return json_response(200, &dry_run_json(&opts.command, &prepared.planned_report()));
    }
    let id = match random_hex(8) {
        Ok(id) => id,
        Err(e) => return api_error(500, "internal", &format!("no random id: {e}")),
    };
    let planned = prepared.planned_report();
    let launched = match launch::launch(prepared, launch::Stdio3::NullStdin) {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let r = Arc::new(PlanRun {
        id: id.clone(),
        pid: launched.pid(),
        command: opts.command.clone(),
        started_unix_ms: unix_ms(),
        inner: Mutex::new(RunInner { status: RunStatus::Running, report: planned, error: None }),
    });
    {
        let mut runs = st.runs.0.lock().unwrap();
        runs.push(r.clone());
        while runs.len() > KEEP_RUNS {
            match runs.iter().position(|x| x.inner.lock().unwrap().status != RunStatus::Running) {
                Some(i) => drop(runs.remove(i)),
                None => break,
            }
        }
    }
    let waiter = r.clone();
    let spawned = std::thread::Builder::new().name(format!("run-{id}")).spawn(move || {
        let out = launched.wait();
        let mut inner = waiter.inner.lock().unwrap();
        match out {
            Ok(report) => {
                inner.report = report;
                inner.status = RunStatus::Exited;
            }
            Err((_, e)) => {
                inner.error = Some(e);
                inner.status = RunStatus::Failed;
            }
        }
    });
    if let Err(e) = spawned {
        let mut inner = r.inner.lock().unwrap();
        inner.status = RunStatus::Failed;
        inner.error = Some(format!("could not start the thread that waits for the program: {e}"));
    }
    json_response(201, &run_json(&r))
}

/// The dry-run answer of `POST /api/runs` (not kept).
fn dry_run_json(command: &[String], report: &RunReport) -> Value {
    json!({ "id": null, "status": "dry-run", "pid": null, "command": command,
            "startedUnixMs": null, "report": report, "error": null })
}

/// Runs for packages/protocol's fixture (protocol_fixture.rs): running, exited, failed, a dry run.
#[cfg(test)]
pub(super) mod fixture {
    use super::*;
    use numascope_core::apply::launch::{ModuleRunReport, ObjectRunReport, ThreadPinned, ThreadRunReport};
    use numascope_core::apply::plan::ObjectPolicy;
    use std::collections::BTreeMap;

    fn report(done: bool) -> RunReport {
        let command = vec!["/opt/app/bin/app".to_string(), "--size".into(), "1G".into()];
        RunReport {
            operation: "run",
            command,
            dry_run: false,
            pid: done.then_some(5151),
            exit_code: done.then_some(0),
            signal: None,
            processes: usize::from(done),
            objects: vec![ObjectRunReport {
                index: 0,
                site: Some("app.c:84 alloc_points".into()),
                policy: ObjectPolicy::Interleave,
                nodes: vec![0, 1],
                matches: if done { 1 } else { 0 },
                bytes: if done { 1 << 30 } else { 0 },
                bytes_per_node: if done { BTreeMap::from([(0, 1 << 29), (1, 1 << 29)]) } else { BTreeMap::new() },
                failures: BTreeMap::new(),
            }],
            unmatched_objects: if done { vec![] } else { vec![0] },
            threads: vec![ThreadRunReport {
                index: 0,
                order: Some(1),
                name: Some("worker-0".into()),
                to_nodes: vec![1],
                pinned: if done {
                    vec![ThreadPinned { pid: 5151, tid: 5153, order: Some(1), error: None }]
                } else {
                    vec![]
                },
            }],
            unmatched_threads: vec![],
            tid_only_threads: vec![1],
            modules: vec![ModuleRunReport {
                path: "/opt/app/bin/app".into(),
                build_id: Some("3f2a6c0e".into()),
                state: if done { "loaded" } else { "missing" }.into(),
            }],
            fallback: Some("numactl --interleave=0,1 --cpunodebind=1 -- /opt/app/bin/app --size 1G".into()),
            warnings: if done { vec![] } else { vec!["the arguments differ from the recorded run's ([])".into()] },
            elapsed_ms: if done { 5230.5 } else { 0.0 },
        }
    }

    pub(crate) fn reports() -> Vec<RunReport> {
        let mut dry = report(false);
        dry.dry_run = true;
        vec![dry, report(true)]
    }

    pub(crate) fn runs() -> Vec<Value> {
        let run = |id: &str, status: RunStatus, done: bool, error: Option<&str>| PlanRun {
            id: id.into(),
            pid: 5151,
            command: report(done).command,
            started_unix_ms: 1_790_000_000_000,
            inner: Mutex::new(RunInner { status, report: report(done), error: error.map(str::to_string) }),
        };
        let mut dry = report(false);
        dry.dry_run = true;
        vec![
            run_json(&run("a1b2c3d4e5f60718", RunStatus::Running, false, None)),
            run_json(&run("a1b2c3d4e5f60718", RunStatus::Exited, true, None)),
            run_json(&run("0011223344556677", RunStatus::Failed, false, Some("waiting for 5151: No child processes"))),
            dry_run_json(&dry.command, &dry),
        ]
    }
}
