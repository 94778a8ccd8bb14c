//! `/api/recordings/:id/loop` and `/api/loop`: the live loop's state kept with the server
//! (docs/live-api.md, "The live loop"), so that a reload or a new tab on the same server brings
//! back the loop panel and its before/after table.
//!
//! The server does not interpret the record: the app writes its loop state (the recording it
//! started from, the plan, the dry run, the apply report, the second recording and its
//! prediction) as one JSON object and reads it back. What the server checks is what keeps it
//! safe: the recording exists, the body is one JSON object without duplicate keys, at most
//! `MAX_LOOP_BODY` bytes, and at most `KEEP_LOOPS` loops are kept (the least recently saved is
//! dropped). A record read back goes through the same checks in the app as any other server
//! answer, and a plan in it is checked again by `POST /api/apply` before anything moves.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::http::{Body, Resp};
use super::respond::{api_error, json_response, with_api_headers};

/// Largest loop record accepted: a plan of a few thousand page ranges and its reports fit.
pub(super) const MAX_LOOP_BODY: u64 = 4 * 1024 * 1024;
/// Loops kept (one per recording a loop started from; the least recently saved goes first).
const KEEP_LOOPS: usize = 16;

/// The saved loops, most recently saved last.
#[derive(Default)]
pub(super) struct Loops(Mutex<VecDeque<(String, Vec<u8>)>>);

impl Loops {
    /// Stores `body` as the loop of recording `id` (the caller checked that it exists).
    pub(super) fn save(&self, id: &str, body: Vec<u8>) -> Resp {
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(_)) => {}
            Ok(_) => return api_error(400, "invalid-loop", "a loop record is one JSON object"),
            Err(e) => return api_error(400, "bad-json", &format!("the request body is not JSON: {e}")),
        }
        let bytes = body.len();
        let mut loops = self.0.lock().unwrap();
        loops.retain(|(k, _)| k != id);
        loops.push_back((id.to_string(), body));
        while loops.len() > KEEP_LOOPS {
            loops.pop_front();
        }
        json_response(200, &json!({ "recording": id, "bytes": bytes }))
    }

    /// The loop saved for recording `id`.
    pub(super) fn get(&self, id: &str) -> Resp {
        let loops = self.0.lock().unwrap();
        match loops.iter().find(|(k, _)| k == id) {
            Some((_, body)) => raw_json(body.clone()),
            None => no_loop(&format!("no loop was saved for recording {:?}", shown(id))),
        }
    }

    /// The most recently saved loop, as `{ "recording": id, "loop": {…} }`.
    pub(super) fn latest(&self) -> Resp {
        let loops = self.0.lock().unwrap();
        match loops.back() {
            Some((id, body)) => {
                // Built by hand: the record is kept as the bytes the app sent (no re-encoding).
                let mut out = Vec::with_capacity(body.len() + id.len() + 32);
                out.extend_from_slice(b"{\"recording\":");
                out.extend_from_slice(&serde_json::to_vec(id).unwrap_or_default());
                out.extend_from_slice(b",\"loop\":");
                out.extend_from_slice(body);
                out.push(b'}');
                raw_json(out)
            }
            None => no_loop("no loop has been saved on this server yet"),
        }
    }
}

fn shown(id: &str) -> String {
    id.chars().take(40).collect()
}

fn no_loop(message: &str) -> Resp {
    api_error(404, "no-loop", message)
}

fn raw_json(body: Vec<u8>) -> Resp {
    with_api_headers(Resp::new(200, Body::Bytes(body)).with_header("Content-Type", "application/json; charset=utf-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(r: &Resp) -> Value {
        match &r.body {
            Body::Bytes(b) => serde_json::from_slice(b).unwrap(),
            _ => panic!("not a byte body"),
        }
    }

    #[test]
    fn saves_reads_and_keeps_the_latest() {
        let l = Loops::default();
        assert_eq!(l.latest().status, 404);
        assert_eq!(l.get("r1").status, 404);
        assert_eq!(l.save("r1", br#"{"version":1,"step":"dry"}"#.to_vec()).status, 200);
        assert_eq!(l.save("r2", br#"{"version":1,"step":"plan"}"#.to_vec()).status, 200);
        assert_eq!(body(&l.get("r1"))["step"], "dry");
        let latest = body(&l.latest());
        assert_eq!(latest["recording"], "r2");
        assert_eq!(latest["loop"]["step"], "plan");
        // Saving r1 again makes it the latest.
        assert_eq!(l.save("r1", br#"{"version":1,"step":"apply"}"#.to_vec()).status, 200);
        assert_eq!(body(&l.latest())["recording"], "r1");
        assert_eq!(body(&l.get("r1"))["step"], "apply");
    }

    #[test]
    fn refuses_what_is_not_one_object_and_keeps_a_bounded_number() {
        let l = Loops::default();
        assert_eq!(l.save("r1", b"[1,2]".to_vec()).status, 400);
        assert_eq!(l.save("r1", b"{\"a\":".to_vec()).status, 400);
        assert_eq!(l.get("r1").status, 404);
        for i in 0..KEEP_LOOPS + 5 {
            assert_eq!(l.save(&format!("r{i}"), b"{}".to_vec()).status, 200);
        }
        assert_eq!(l.0.lock().unwrap().len(), KEEP_LOOPS);
        assert_eq!(l.get("r0").status, 404, "the least recently saved loop is dropped");
        assert_eq!(l.get(&format!("r{}", KEEP_LOOPS + 4)).status, 200);
    }
}
