//! `numascope bench` through `numascope serve` (`/api/bench`, docs/live-api.md "Measuring the
//! machine"): a run with progress and its calibrated model, one run at a time, a stop that keeps
//! what was measured, and the refusals. Small arrays, so that each run takes seconds.

use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
mod serve_common;
use serve_common::Server;

const SMALL: &str = r#""arrayBytes": 1048576, "chaseBytes": 1048576, "save": false"#;

/// The servers started here store calibrations in a cache directory of this test binary's own,
/// never the user's (set once, before any server starts; only this file's tests run in it).
fn private_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::env::temp_dir().join(format!("numascope-serve-bench-cache-{}", std::process::id()));
        std::env::set_var("XDG_CACHE_HOME", dir);
    });
}

fn wait_bench(s: &Server, id: &str, limit: Duration) -> (Value, Vec<Value>) {
    let t0 = Instant::now();
    let mut progress = Vec::new();
    loop {
        let v = s.api(&format!("/api/bench/{id}")).json();
        if !v["progress"].is_null() && progress.last() != Some(&v["progress"]) {
            progress.push(v["progress"].clone());
        }
        if v["status"] != "running" {
            return (v, progress);
        }
        assert!(t0.elapsed() < limit, "bench {id} still running after {limit:?}: {v}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_quick_run_reports_progress_and_gives_a_calibrated_machine() {
    private_cache();
    let s = Server::start("bench-run");
    let r = s.post("/api/bench", &format!("{{\"quick\": true, {SMALL}}}"));
    assert_eq!(r.status, 201, "{}", r.text());
    let run = r.json();
    assert_eq!(run["status"], "running");
    assert_eq!(run["quick"], true);
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["urls"]["stop"], format!("/api/bench/{id}/stop"));
    // One run at a time: a second would measure the first.
    let again = s.post("/api/bench", &format!("{{\"quick\": true, {SMALL}}}"));
    if again.status != 201 {
        assert_eq!((again.status, again.error_code()), (409, "bench-running".to_string()), "{}", again.text());
    }
    let (done, progress) = wait_bench(&s, &id, Duration::from_secs(120));
    assert_eq!(done["status"], "finished", "{done}");
    assert!(done["error"].is_null());
    let machine = &done["result"]["machine"];
    let cal = &machine["calibration"];
    assert_eq!(cal["partial"], false, "{cal}");
    assert_eq!(cal["stepsDone"], cal["stepsPlanned"]);
    let last = done["progress"].clone();
    assert_eq!(last["step"], last["steps"], "the last progress message is the last step: {last}");
    assert!(!progress.is_empty());
    assert!(last["elapsedS"].as_f64().unwrap() >= 0.0 && last["what"].is_string());
    assert!(done["result"]["storedAs"].is_null());
    assert!(done["result"]["storeNote"].as_str().unwrap().contains("save was false"));
    let nodes = machine["nodes"].as_array().unwrap();
    assert!(cal["bandwidthGBps"]["triad"][0][0]["value"].as_f64().unwrap() > 0.0, "{cal}");
    assert!(cal["latencyNs"][0][0]["value"].as_f64().unwrap() > 0.0);
    assert!(machine["provenance"]["memoryBandwidthGBps"].as_str().unwrap().starts_with("measured:numascope-bench "));
    if nodes.len() == 1 {
        // This machine: the one pair, and why there is nothing more.
        let notes: Vec<&str> = cal["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(notes.iter().any(|n| n.contains("one NUMA node") && n.contains("no remote")), "{notes:?}");
        assert!(machine["links"].as_array().unwrap().is_empty());
    }
    // The list holds it.
    let list = s.api("/api/bench").json();
    assert!(list["runs"].as_array().unwrap().iter().any(|r| r["id"] == id.as_str()));
}

#[test]
fn stop_ends_a_run_with_what_was_measured() {
    private_cache();
    let s = Server::start("bench-stop");
    // Bigger arrays and full mode: the run lasts long enough to be stopped in its first steps.
    let r = s.post("/api/bench", r#"{"arrayBytes": 67108864, "chaseBytes": 67108864, "save": true}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    let t0 = Instant::now();
    // Wait for the first step to be under way, then stop.
    loop {
        let v = s.api(&format!("/api/bench/{id}")).json();
        if v["progress"]["step"].as_u64().is_some_and(|st| st >= 1) || v["status"] != "running" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{v}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stop = s.post(&format!("/api/bench/{id}/stop"), "");
    assert_eq!(stop.status, 202, "{}", stop.text());
    assert_eq!(stop.json()["stopRequested"], true);
    let (done, _) = wait_bench(&s, &id, Duration::from_secs(120));
    assert_eq!(done["status"], "finished", "{done}");
    let cal = &done["result"]["machine"]["calibration"];
    assert_eq!(cal["partial"], true, "{cal}");
    assert!(cal["stoppedBy"].as_str().unwrap().contains("interrupted"), "{cal}");
    assert!(cal["stepsDone"].as_u64().unwrap() < cal["stepsPlanned"].as_u64().unwrap());
    // A partial run is never stored as the machine's calibration.
    assert!(done["result"]["storedAs"].is_null());
    assert!(done["result"]["storeNote"].as_str().unwrap().contains("partial"));
    // Stopping a finished run changes nothing.
    assert_eq!(s.post(&format!("/api/bench/{id}/stop"), "").status, 202);
}

#[test]
fn bad_bench_requests_are_refused_with_their_reason() {
    private_cache();
    let s = Server::start("bench-bad");
    let r = s.post("/api/bench", r#"{"quik": true}"#);
    assert_eq!((r.status, r.error_code()), (400, "bad-request".to_string()), "{}", r.text());
    assert!(r.text().contains("quik"));
    let r = s.post("/api/bench", r#"{"maxSeconds": -1}"#);
    assert_eq!((r.status, r.error_code()), (400, "bad-bench-option".to_string()));
    assert!(r.text().contains("maxSeconds"));
    let r = s.post("/api/bench", r#"{"quick": true, "quick": false}"#);
    assert_eq!((r.status, r.error_code()), (400, "duplicate-key".to_string()));
    let r = s.post("/api/bench", "[1");
    assert_eq!((r.status, r.error_code()), (400, "bad-json".to_string()));
    let r = s.api("/api/bench/0123456789abcdef");
    assert_eq!((r.status, r.error_code()), (404, "unknown-bench".to_string()));
    let auth = format!("Bearer {}", s.token);
    let r = s.request("DELETE", "/api/bench", &[("Authorization", &auth)], None);
    assert_eq!(r.status, 405);
    assert_eq!(r.headers["allow"], "GET, POST");
    // Without the token: 401, like every API path.
    assert_eq!(s.get("/api/bench").status, 401);
}
