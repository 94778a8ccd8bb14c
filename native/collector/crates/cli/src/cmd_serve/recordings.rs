//! The recordings' endpoints other than starting one (cmd_serve/recording_job.rs) and their
//! live stream (cmd_serve/websocket.rs): finding a recording, its JSON, the list, stopping it,
//! and downloading its trace.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};

use super::http::{Body, Resp};
use super::respond::{api_error, json_response, open_file, with_api_headers};
use super::state::{Recording, State, Status};

pub(super) fn find(st: &State, id: &str) -> Option<Arc<Recording>> {
    st.recordings.lock().unwrap().get(id).cloned()
}

pub(super) fn unknown_recording(id: &str) -> Resp {
    let shown: String = id.chars().take(40).collect();
    api_error(404, "unknown-recording", &format!("no recording with id {shown:?}"))
}

pub(super) fn recording_json(r: &Recording) -> Value {
    let inner = r.inner.lock().unwrap();
    json!({
        "id": r.id,
        "status": inner.status.as_str(),
        "target": r.target,
        "durationS": r.duration_s,
        "startedAtUnixMs": r.started_unix_ms,
        "stopRequested": inner.stop_requested,
        "latest": inner.latest,
        "summary": inner.summary,
        "error": inner.error.as_ref().map(|(c, m)| json!({ "code": c, "message": m })),
        "urls": {
            "status": format!("/api/recordings/{}", r.id),
            "stop": format!("/api/recordings/{}/stop", r.id),
            "trace": format!("/api/recordings/{}/trace", r.id),
            "live": format!("/api/recordings/{}/live", r.id),
        }
    })
}

/// `GET /api/recordings`: every recording, in the order they were started.
pub(super) fn list(st: &State) -> Resp {
    let order = st.order.lock().unwrap().clone();
    let recs = st.recordings.lock().unwrap();
    let list: Vec<Value> = order.iter().filter_map(|id| recs.get(id)).map(|r| recording_json(r)).collect();
    json_response(200, &json!({ "recordings": list }))
}

/// `POST /api/recordings/:id/stop`: asks a running recording to stop (it ends after its current
/// window); answers 202 with the recording.
pub(super) fn stop(r: &Recording) -> Resp {
    {
        let mut inner = r.inner.lock().unwrap();
        if inner.status == Status::Running {
            inner.stop_requested = true;
            r.stop.store(true, Ordering::SeqCst);
        }
    }
    json_response(202, &recording_json(r))
}

/// `GET /api/recordings/:id/trace`: the trace of a finished recording, as a download; 409 while
/// it runs or when it failed.
pub(super) fn trace(r: &Recording, id: &str) -> Resp {
    let (status, output) = {
        let inner = r.inner.lock().unwrap();
        (inner.status, inner.summary.as_ref().map(|s| s.output.clone()))
    };
    match (status, output) {
        (Status::Running, _) => api_error(
            409,
            "not-finished",
            &format!("recording {id} is still running: stop it or wait for it to finish"),
        ),
        (Status::Failed, _) | (_, None) => {
            api_error(409, "no-trace", &format!("recording {id} failed and wrote no trace"))
        }
        (Status::Finished, Some(output)) => match open_file(&output) {
            Ok((f, len)) => with_api_headers(
                Resp::new(200, Body::File(f, len))
                    .with_header("Content-Type", "application/zip")
                    .with_header("Content-Disposition", &format!("attachment; filename=\"numascope-{id}.numascope\"")),
            ),
            Err(e) => api_error(500, "trace-unreadable", &format!("reading the trace of {id}: {e}")),
        },
    }
}
