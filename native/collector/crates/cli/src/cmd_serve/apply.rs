//! `POST /api/apply` and `POST /api/rollback`: a plan applied to a process, and undone with the
//! rollback record the apply answered; Apply's refusals as HTTP statuses and error codes.

use std::time::Duration;

use numascope_core::topology;
use serde_json::Value;

use super::http::Resp;
use super::respond::{api_error, json_response};

/// Maps an Apply refusal to an HTTP status and a stable error code.
fn apply_error(e: &numascope_core::apply::ApplyError) -> Resp {
    use numascope_core::apply::ApplyError as E;
    let (status, code) = match e {
        E::Plan(p) => return plan_error(p),
        E::WrongMachine(_) => (409, "wrong-machine"),
        E::NoProcess { .. } => (404, "no-process"),
        E::PidReused { .. } => (409, "pid-reused"),
        E::ThreadNotInProcess { .. } => (409, "thread-not-in-process"),
        E::ForeignThread { .. } => (409, "foreign-thread"),
        E::RangeNotMapped { .. } => (409, "range-not-mapped"),
        E::Permission(_) => (403, "permission"),
        E::Unsupported(_) => (422, "kernel-unsupported"),
        E::Io(_) => (500, "io"),
    };
    api_error(status, code, &e.to_string())
}

/// An invalid plan or rollback record: 400, or 413 where it exceeds a documented limit.
fn plan_error(e: &numascope_core::apply::PlanError) -> Resp {
    use numascope_core::apply::PlanErrorKind;
    let record = e.input != "plan";
    let (status, code) = match (e.kind, record) {
        (PlanErrorKind::TooLarge, false) => (413, "plan-too-large"),
        (PlanErrorKind::TooLarge, true) => (413, "record-too-large"),
        (PlanErrorKind::Invalid, false) => (400, "invalid-plan"),
        (PlanErrorKind::Invalid, true) => (400, "invalid-record"),
    };
    api_error(status, code, &e.to_string())
}

/// `POST /api/apply` `{plan, pid, dryRun?, budgetMs?}`: applies a plan (docs/plan-format.md) to
/// the process `pid`, which must be the plan's `target.pid`; answers the report, and for a real
/// apply the rollback record (`rollback`) to send to `POST /api/rollback` to undo it.
pub(super) fn apply_plan(body: &[u8]) -> Resp {
    use numascope_core::apply;
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return api_error(400, "bad-json", &format!("the request body is not JSON: {e}")),
    };
    let Some(pid) = v.get("pid").and_then(Value::as_i64) else {
        return api_error(400, "bad-request", "field pid (the process to change) is required");
    };
    let Some(plan_v) = v.get("plan") else {
        return api_error(400, "bad-request", "field plan (the plan object) is required");
    };
    let dry_run = v.get("dryRun").and_then(Value::as_bool).unwrap_or(false);
    let budget = v.get("budgetMs").and_then(Value::as_u64).map(Duration::from_millis);
    let topo = match topology::read_topology() {
        Ok(t) => t,
        Err(e) => return api_error(500, "topology", &format!("reading this machine's topology: {e}")),
    };
    let plan = match apply::parse_plan(&plan_v.to_string(), topo.page_size_bytes) {
        Ok(p) => p,
        Err(e) => return plan_error(&e),
    };
    if plan.target.pid as i64 != pid {
        return api_error(
            400,
            "pid-mismatch",
            &format!(
                "the plan targets process {} (target.pid), not {pid}; numascope only touches the process it is given",
                plan.target.pid
            ),
        );
    }
    let set_system_weights = v.get("setSystemWeights").and_then(Value::as_bool).unwrap_or(false);
    let opts = apply::ApplyOptions { dry_run, budget, set_system_weights, ..Default::default() };
    match apply::apply(&plan, &topo, &opts) {
        Ok(out) => json_response(200, &apply_answer(&out.report, (!dry_run).then_some(&out.rollback))),
        Err(e) => apply_error(&e),
    }
}

/// The answer of `POST /api/apply`: the report, and after a real apply the rollback record.
pub(super) fn apply_answer(
    report: &numascope_core::apply::ApplyReport,
    rollback: Option<&numascope_core::apply::RollbackRecord>,
) -> Value {
    let mut r = serde_json::to_value(report).unwrap_or(Value::Null);
    if let (Some(rb), Some(o)) = (rollback, r.as_object_mut()) {
        o.insert("rollback".into(), serde_json::to_value(rb).unwrap_or(Value::Null));
    }
    r
}

/// `POST /api/rollback` `{record}`: restores what an apply changed (the `rollback` it answered).
pub(super) fn rollback_record(body: &[u8]) -> Resp {
    use numascope_core::apply;
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return api_error(400, "bad-json", &format!("the request body is not JSON: {e}")),
    };
    let Some(rec_v) = v.get("record") else {
        return api_error(400, "bad-request", "field record (the rollback record an apply answered) is required");
    };
    let record = match apply::RollbackRecord::parse(&rec_v.to_string()) {
        Ok(r) => r,
        Err(e) => return plan_error(&e),
    };
    let topo = match topology::read_topology() {
        Ok(t) => t,
        Err(e) => return api_error(500, "topology", &format!("reading this machine's topology: {e}")),
    };
    match apply::rollback(&record, &topo, &apply::ApplyOptions::default()) {
        Ok(out) => json_response(200, &serde_json::to_value(&out.report).unwrap_or(Value::Null)),
        Err(e) => apply_error(&e),
    }
}
