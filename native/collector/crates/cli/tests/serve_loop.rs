//! `PUT/GET /api/recordings/:id/loop` and `GET /api/loop` (docs/live-api.md, "The live loop"):
//! the app's loop state kept with the server, so a reload or a new tab brings the loop back.
//! The server keeps what it is given, for a recording that exists, and refuses what is not one
//! JSON object, a duplicate key, an oversize body, a missing token or a foreign Origin.

use std::time::Duration;

use serde_json::{json, Value};

mod common;
mod serve_common;
use serve_common::Server;

fn put(s: &Server, path: &str, body: &str) -> serve_common::Resp {
    let auth = format!("Bearer {}", s.token);
    s.request(
        "PUT",
        path,
        &[("Authorization", &auth), ("Content-Type", "application/json"), ("Origin", &s.origin())],
        Some(body),
    )
}

fn finished_recording(s: &Server) -> String {
    let r = s.post("/api/recordings", r#"{"command":["true"]}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    let st = s.wait_finished(&id, Duration::from_secs(60));
    assert_eq!(st["status"], "finished", "{st}");
    id
}

#[test]
fn a_loop_saved_for_a_recording_comes_back_and_the_latest_is_listed() {
    let s = Server::start("loop");
    // Nothing saved yet.
    let r = s.api("/api/loop");
    assert_eq!((r.status, r.error_code()), (404, "no-loop".to_string()));

    let a = finished_recording(&s);
    let b = finished_recording(&s);
    let r = s.api(&format!("/api/recordings/{a}/loop"));
    assert_eq!((r.status, r.error_code()), (404, "no-loop".to_string()));

    let record_a = json!({ "version": 1, "before": { "recording": a, "pid": 42 }, "dry": { "kind": "done" } });
    let r = put(&s, &format!("/api/recordings/{a}/loop"), &record_a.to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["recording"], a.as_str());
    assert_eq!(s.api(&format!("/api/recordings/{a}/loop")).json(), record_a, "kept as given");

    let record_b = json!({ "version": 1, "before": { "recording": b, "pid": 43 } });
    assert_eq!(put(&s, &format!("/api/recordings/{b}/loop"), &record_b.to_string()).status, 200);
    let latest: Value = s.api("/api/loop").json();
    assert_eq!(latest, json!({ "recording": b, "loop": record_b }), "the most recently saved");

    // Saving a's loop again (a later step) makes it the latest, and replaces it.
    let record_a2 = json!({ "version": 1, "before": { "recording": a, "pid": 42 }, "apply": { "kind": "done" } });
    assert_eq!(put(&s, &format!("/api/recordings/{a}/loop"), &record_a2.to_string()).status, 200);
    assert_eq!(s.api("/api/loop").json()["recording"], a.as_str());
    assert_eq!(s.api(&format!("/api/recordings/{a}/loop")).json(), record_a2);
    assert_eq!(s.api(&format!("/api/recordings/{b}/loop")).json(), record_b, "b's loop is still there");
}

#[test]
fn bad_loop_records_are_refused_and_change_nothing() {
    let s = Server::start("loop-bad");
    let id = finished_recording(&s);
    let path = format!("/api/recordings/{id}/loop");
    let good = r#"{"version":1}"#;
    assert_eq!(put(&s, &path, good).status, 200);

    let cases: [(&str, String, u16, &str); 4] = [
        ("not JSON", "{\"version\":".into(), 400, "bad-json"),
        ("an array", "[1,2,3]".into(), 400, "invalid-loop"),
        ("a duplicate key", r#"{"version":1,"version":2}"#.into(), 400, "duplicate-key"),
        ("over 4 MiB", format!("{{\"pad\":\"{}\"}}", "x".repeat(4 * 1024 * 1024 + 1)), 413, "body-too-large"),
    ];
    for (what, body, status, code) in cases {
        let r = put(&s, &path, &body);
        assert_eq!((r.status, r.error_code().as_str()), (status, code), "{what}: {}", r.text());
        assert_eq!(s.api(&path).text().trim(), good, "{what} left the saved loop as it was");
    }

    // An unknown recording, a wrong method, no token, a foreign page.
    let r = put(&s, "/api/recordings/nope/loop", good);
    assert_eq!((r.status, r.error_code()), (404, "unknown-recording".to_string()));
    let r = s.api("/api/recordings/nope/loop");
    assert_eq!((r.status, r.error_code()), (404, "unknown-recording".to_string()));
    let r = s.post(&path, good);
    assert_eq!((r.status, r.error_code()), (405, "method-not-allowed".to_string()));
    let r = s.request("PUT", &path, &[("Content-Type", "application/json")], Some(good));
    assert_eq!(r.status, 401);
    let auth = format!("Bearer {}", s.token);
    let r = s.request("PUT", &path, &[("Authorization", &auth), ("Origin", "http://evil.example")], Some(good));
    assert_eq!((r.status, r.error_code()), (403, "forbidden-origin".to_string()));
    assert_eq!(s.api(&path).text().trim(), good);
}
