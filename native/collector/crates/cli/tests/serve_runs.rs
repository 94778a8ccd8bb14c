//! `POST /api/runs` / `GET /api/runs/:id` (docs/live-api.md, "Launching with a plan"): the
//! testload program launched with a plan through a real server, as `numascope run --plan` does.
//! The plan's object entry names the shared buffer's allocation site (its frames recorded by the
//! allocation shim in an earlier run) and binds it to node 0, and a thread entry pins the worker
//! by name; on this one-node machine that is node 0, where the pages would be anyway, so what is
//! checked is that the site matched in the launched process and the thread was pinned.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use numascope_core::alloc_sites::{load_dir, ReadLimits, SymbolizeOptions};
use serde_json::{json, Value};

mod common;
mod serve_common;
use common::{shim, testload, Tmp};
use serve_common::Server;

const ARGS: [&str; 8] = ["--threads", "1", "--mib", "1", "--shared-mib", "2", "--seconds", "0.05"];

/// One run of testload under the shim: the frames and size of the shared buffer's mmap.
fn shared_site(dir: &Path) -> (Vec<Value>, u64) {
    std::fs::create_dir_all(dir).unwrap();
    let o = Command::new(testload())
        .args(ARGS)
        .env("LD_PRELOAD", shim())
        .env("NUMASCOPE_ALLOC_DIR", dir)
        .env("NUMASCOPE_ALLOC_SAMPLE_BYTES", "0")
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let shared = out
        .lines()
        .find(|l| l.starts_with("shared "))
        .and_then(|l| l.split("addr=0x").nth(1))
        .map(|a| u64::from_str_radix(a.split_whitespace().next().unwrap(), 16).unwrap())
        .expect("shared buffer printed");
    let files = load_dir(dir, &ReadLimits::default(), &SymbolizeOptions::default()).unwrap();
    let s = files.into_iter().next().unwrap().1.unwrap();
    let i = s.allocations.iter().position(|a| a.address <= shared && shared < a.address + a.size).unwrap();
    let frames = numascope_core::apply::launch::plan_frames(&s, i, 3);
    (frames.iter().map(|f| serde_json::to_value(f).unwrap()).collect(), s.allocations[i].size)
}

#[test]
fn a_plan_launches_through_the_api_and_its_report_names_matches_and_pins() {
    let tmp = Tmp::new("serve-runs");
    let (frames, size) = shared_site(&tmp.file("alloc"));
    let exe = testload().canonicalize().unwrap().to_string_lossy().into_owned();
    let mut command = vec![exe.clone()];
    command.extend(ARGS.iter().map(|s| s.to_string()));
    let plan = json!({
        "format": "numascope-plan", "version": 1, "source": { "policy": "manual" },
        "target": { "pid": 1, "command": command, "machine": { "nodeIds": [0] } },
        "pageRanges": [],
        "threads": [{ "tid": 2, "order": 1, "name": "testload-w0", "toNodes": [0] }],
        "objects": [{ "site": "shared buffer", "frames": frames, "size": { "min": size, "max": size },
                      "policy": "bind", "nodes": [0] }],
    });
    let srv = Server::start("runs");

    // security: the token and the Origin are checked as for every endpoint
    let body = json!({ "plan": plan, "dryRun": true }).to_string();
    let r = srv.request("POST", "/api/runs", &[("Content-Type", "application/json")], Some(&body));
    assert_eq!(r.status, 401);
    let auth = format!("Bearer {}", srv.token);
    let r =
        srv.request("POST", "/api/runs", &[("Authorization", &auth), ("Origin", "http://evil.example")], Some(&body));
    assert_eq!((r.status, r.error_code()), (403, "forbidden-origin".to_string()));

    // a dry run answers the planned report and launches nothing
    let r = srv.post("/api/runs", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["status"], "dry-run");
    assert_eq!(v["report"]["dryRun"], true);
    assert_eq!(v["report"]["objects"][0]["matches"], 0);
    assert_eq!(v["command"][0], exe.as_str());
    assert_eq!(srv.api("/api/runs").json()["runs"], json!([]));

    // a real run: 201 with the pid, then the report when the program has exited
    let r = srv.post("/api/runs", &json!({ "plan": plan }).to_string());
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    assert_eq!(v["status"], "running");
    assert!(v["pid"].as_u64().unwrap() > 0);
    let id = v["id"].as_str().unwrap().to_string();
    let t0 = Instant::now();
    let done = loop {
        let v = srv.api(&format!("/api/runs/{id}")).json();
        if v["status"] != "running" {
            break v;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "the run did not end: {v}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["status"], "exited", "{done:#}");
    let rep = &done["report"];
    assert_eq!(rep["exitCode"], 0, "{rep:#}");
    assert_eq!(rep["pid"], v["pid"]);
    assert_eq!(rep["objects"][0]["matches"], 1, "{rep:#}");
    assert_eq!(rep["objects"][0]["bytesPerNode"]["0"].as_u64().unwrap() % 4096, 0);
    assert!(rep["objects"][0]["bytes"].as_u64().unwrap() >= 2 << 20, "{rep:#}");
    assert_eq!(rep["unmatchedObjects"], json!([]));
    assert_eq!(rep["threads"][0]["pinned"].as_array().unwrap().len(), 1, "{rep:#}");
    assert_eq!(rep["unmatchedThreads"], json!([]));
    assert_eq!(srv.api("/api/runs").json()["runs"][0]["id"], id.as_str());

    // refusals name the problem
    let r = srv.post("/api/runs", &json!({ "dryRun": true }).to_string());
    assert_eq!((r.status, r.error_code()), (400, "bad-request".to_string()));
    let mut no_objects = plan.clone();
    no_objects["objects"] = json!([]);
    no_objects["threads"] = json!([]);
    let r = srv.post("/api/runs", &json!({ "plan": no_objects, "dryRun": true }).to_string());
    assert_eq!((r.status, r.error_code()), (400, "invalid-plan".to_string()));
    assert!(r.text().contains("nothing to apply at launch"), "{}", r.text());
    let r = srv.post("/api/runs", &json!({ "plan": plan, "command": ["/no/such/program"] }).to_string());
    assert_eq!((r.status, r.error_code()), (409, "run-refused".to_string()), "{}", r.text());
    let r = srv.post("/api/runs", &json!({ "plan": plan, "command": "ls" }).to_string());
    assert_eq!((r.status, r.error_code()), (400, "bad-request".to_string()));
    let r = srv.post("/api/runs", r#"{"plan": {}, "plan": {}}"#);
    assert_eq!((r.status, r.error_code()), (400, "duplicate-key".to_string()));
    let r = srv.api("/api/runs/ffff");
    assert_eq!((r.status, r.error_code()), (404, "unknown-run".to_string()));
    let r = srv.request("DELETE", &format!("/api/runs?token={}", srv.token), &[], None);
    assert_eq!(r.status, 405);
}
