//! The API's routing table: every authenticated `/api/` request (but the live WebSocket,
//! cmd_serve/connection.rs) to its handler, and 405 or 404 for the others (docs/live-api.md).

use std::sync::Arc;

use numascope_core::probe;
use serde_json::{json, Value};

use super::apply::{apply_plan, rollback_record};
use super::http::{Conn, Head, Resp};
use super::limits::{MAX_BODY, MAX_PLAN_BODY};
use super::processes::list_processes;
use super::recording_job::start_recording;
use super::recordings::{self, find, recording_json, unknown_recording};
use super::request::{blocking, read_request_body};
use super::respond::{api_error, check_duplicate_keys, duplicate_key_error, json_response};
use super::state::State;
use super::{bench, loops, runs};

/// Routes an authenticated request; answers the response and whether the body was read.
pub(super) async fn route(st: &Arc<State>, conn: &mut Conn, head: &Head, path: &str, segs: &[&str]) -> (Resp, bool) {
    let method = head.method.as_str();
    if segs.first() == Some(&"bench") {
        return bench::route(st, conn, head, path, segs).await;
    }
    let resp = match (segs, method) {
        (["probe"], "GET") => probe(st).await,
        (["topology"], "GET") => topology(st),
        (["processes"], "GET") => blocking(|| json_response(200, &json!({ "processes": list_processes() }))).await,
        (["recordings"], "GET") => recordings::list(st),
        (["recordings"], "POST") => {
            let body = match read_request_body(conn, head, MAX_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let st = st.clone();
            return (blocking(move || start_recording(&st, &body)).await, true);
        }
        (["apply"], "POST") | (["rollback"], "POST") => {
            let body = match read_request_body(conn, head, MAX_PLAN_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let apply = segs[0] == "apply";
            let resp = blocking(move || match check_duplicate_keys(&body) {
                Err(detail) => duplicate_key_error(&detail),
                Ok(()) if apply => apply_plan(&body),
                Ok(()) => rollback_record(&body),
            })
            .await;
            return (resp, true);
        }
        (["runs"], "POST") => {
            let body = match read_request_body(conn, head, MAX_PLAN_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let st = st.clone();
            let resp = blocking(move || match check_duplicate_keys(&body) {
                Err(detail) => duplicate_key_error(&detail),
                Ok(()) => runs::start(&st, &body),
            })
            .await;
            return (resp, true);
        }
        (["recordings", id, "loop"], "PUT") => {
            if find(st, id).is_none() {
                return (unknown_recording(id), false);
            }
            let body = match read_request_body(conn, head, loops::MAX_LOOP_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let resp = match check_duplicate_keys(&body) {
                Err(detail) => duplicate_key_error(&detail),
                Ok(()) => st.loops.save(id, body),
            };
            return (resp, true);
        }
        (["recordings", id, "loop"], "GET") => match find(st, id) {
            Some(_) => st.loops.get(id),
            None => unknown_recording(id),
        },
        (["loop"], "GET") => st.loops.latest(),
        (["runs"], "GET") => runs::list(st),
        (["runs", id], "GET") => runs::get(st, id),
        (["recordings", id], "GET") => match find(st, id) {
            Some(r) => json_response(200, &recording_json(&r)),
            None => unknown_recording(id),
        },
        (["recordings", id, "stop"], "POST") => match find(st, id) {
            Some(r) => recordings::stop(&r),
            None => unknown_recording(id),
        },
        (["recordings", id, "trace"], "GET") => match find(st, id) {
            Some(r) => recordings::trace(&r, id),
            None => unknown_recording(id),
        },
        _ => not_routed(segs, method, path),
    };
    (resp, false)
}

/// `GET /api/probe`: the capability probe, with the calibration state at the time of asking.
async fn probe(st: &Arc<State>) -> Resp {
    let st = st.clone();
    blocking(move || {
        let mut topo = st.topo.clone();
        numascope_core::bench::output::describe_calibration(
            &mut topo,
            numascope_core::bench::output::cache_dir().as_deref(),
        );
        let p = probe::probe(&topo);
        json_response(200, &serde_json::to_value(&p).unwrap_or(Value::Null))
    })
    .await
}

/// `GET /api/topology`: the machine. The calibration state at the time of asking: a bench run may
/// have stored one since.
fn topology(st: &State) -> Resp {
    let mut topo = st.topo.clone();
    numascope_core::bench::output::describe_calibration(
        &mut topo,
        numascope_core::bench::output::cache_dir().as_deref(),
    );
    json_response(200, &serde_json::to_value(topo.machine()).unwrap_or(Value::Null))
}

/// A request no route above took: 405 with the methods allowed on a known endpoint, else 404.
fn not_routed(segs: &[&str], method: &str, path: &str) -> Resp {
    let not_allowed = |allow: &str| {
        api_error(405, "method-not-allowed", &format!("{method} is not allowed on {path}; use {allow}"))
            .with_header("Allow", allow)
    };
    match segs {
        ["probe"] | ["topology"] | ["processes"] => not_allowed("GET"),
        ["recordings"] => not_allowed("GET, POST"),
        ["recordings", _] | ["recordings", _, "trace"] | ["recordings", _, "live"] => not_allowed("GET"),
        ["recordings", _, "stop"] | ["apply"] | ["rollback"] => not_allowed("POST"),
        ["recordings", _, "loop"] => not_allowed("GET, PUT"),
        ["loop"] => not_allowed("GET"),
        ["runs"] => not_allowed("GET, POST"),
        ["runs", _] => not_allowed("GET"),
        _ => api_error(404, "not-found", &format!("no API endpoint {method} {path} (see docs/live-api.md)")),
    }
}
