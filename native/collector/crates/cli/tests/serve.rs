//! End-to-end tests of `numascope serve`: they start the real binary with `--port 0`, parse the
//! URL it prints, and talk to it over loopback only (raw HTTP/1.1 and a tungstenite WebSocket).
//! The load and starvation tests are in serve_load.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use numascope_core::trace::reader::read_trace;
use serde_json::{json, Value};

mod common;
mod serve_common;
use common::{numascope, testload, Tmp};
use serve_common::{Options, Server, INDEX, SECRET};
#[test]
fn token_and_origin_are_enforced() {
    let s = Server::start("auth");
    // No token, wrong token.
    let r = s.get("/api/probe");
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.error_code(), "unauthorized");
    let r = s.get("/api/probe?token=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    assert_eq!(r.status, 401);
    assert_eq!(r.error_code(), "unauthorized");
    let r = s.request("GET", "/api/topology", &[("Authorization", "Bearer nope")], None);
    assert_eq!(r.status, 401);
    // The right token, as a query parameter or a bearer header.
    assert_eq!(s.api("/api/topology").status, 200);
    let auth = format!("Bearer {}", s.token);
    assert_eq!(s.request("GET", "/api/topology", &[("Authorization", &auth)], None).status, 200);
    // Origin: foreign ones are refused, this server's own (both spellings) accepted.
    for foreign in ["http://evil.example", "null", &format!("http://127.0.0.1:{}", s.port + 1), "https://127.0.0.1"] {
        let r = s.request("GET", &format!("/api/topology?token={}", s.token), &[("Origin", foreign)], None);
        assert_eq!(r.status, 403, "origin {foreign}: {}", r.text());
        assert_eq!(r.error_code(), "forbidden-origin");
    }
    for own in [format!("http://127.0.0.1:{}", s.port), format!("http://localhost:{}", s.port)] {
        let r = s.request("GET", &format!("/api/topology?token={}", s.token), &[("Origin", &own)], None);
        assert_eq!(r.status, 200, "origin {own}: {}", r.text());
    }
    // A foreign Origin cannot start a recording either, and a WebSocket from it is refused.
    let r = s.request(
        "POST",
        "/api/recordings",
        &[("Authorization", &auth), ("Origin", "http://evil.example")],
        Some(r#"{"command":["true"]}"#),
    );
    assert_eq!(r.status, 403);
    let r = s.request(
        "GET",
        &format!("/api/recordings/x/live?token={}", s.token),
        &[
            ("Origin", "http://evil.example"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("Sec-WebSocket-Version", "13"),
        ],
        None,
    );
    assert_eq!(r.status, 403);
    // DNS rebinding: a foreign Host header is refused, on static files too.
    let r = s.request("GET", "/", &[("Host", &format!("attacker.example:{}", s.port))], None);
    assert_eq!(r.status, 403);
    assert_eq!(r.error_code(), "forbidden-host");
    // Errors name the problem.
    let r = s.api("/api/nothing-here");
    assert_eq!((r.status, r.error_code().as_str()), (404, "not-found"));
    let r = s.api("/api/recordings/doesnotexist");
    assert_eq!((r.status, r.error_code().as_str()), (404, "unknown-recording"));
    let r = s.post("/api/recordings", "{not json");
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-json"));
    let r = s.post("/api/recordings", r#"{"command":["/no/such/numascope-program"]}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "command-not-found"));
    let r = s.post("/api/recordings", r#"{"pid":1,"command":["true"]}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-request"));
    let r = s.post("/api/recordings", r#"{"pid":1,"durationS":-1}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-duration"));
    let r = s.post("/api/recordings", r#"{"pid":1,"faultPeriod":0}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-fault-period"));
    let r = s.post("/api/recordings", r#"{"pid":1,"faultRateHz":5}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-fault-rate"));
    let r = s.post("/api/recordings", r#"{"pid":1,"faultPeriod":1,"faultRateHz":1000}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-request"));
    let r = s.post("/api/recordings", r#"{"pid":1,"faultEvent":"pmu"}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-fault-event"));
    let r = s.post("/api/recordings", r#"{"pid":1,"faultEvent":3}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-fault-event"));
    let r = s.post("/api/recordings", r#"{"pid":1,"killOnStop":"yes"}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-kill-on-stop"));
    assert!(r.text().contains("killOnStop must be true or false"), "{}", r.text());
    let r = s.post("/api/recordings", r#"{"pid":1,"allocSites":"no"}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-alloc-sites"));
    assert!(r.text().contains("allocSites must be true or false"), "{}", r.text());
    let r = s.post("/api/recordings", r#"{"pid":1,"numaBalancing":"off"}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-numa-balancing"));
    let r = s.post("/api/probe", "{}");
    assert_eq!((r.status, r.error_code().as_str()), (405, "method-not-allowed"));
}

/// The socket is bound to 127.0.0.1 and nothing else. Checked with /proc/net/tcp{,6} (the one
/// listening socket on the port has local address 127.0.0.1) and by connecting to other loopback
/// addresses (127.0.0.2, ::1), which a wildcard bind would accept. No address outside the
/// loopback range is contacted.
#[test]
fn listens_on_loopback_only() {
    let s = Server::start("loopback");
    let port_hex = format!("{:04X}", s.port);
    let mut listeners = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 3 && f[3] == "0A" && f[1].ends_with(&format!(":{port_hex}")) {
                listeners.push(format!("{table} {}", f[1]));
            }
        }
    }
    assert_eq!(listeners, vec![format!("/proc/net/tcp 0100007F:{port_hex}")], "listening sockets on the port");
    for other in [SocketAddr::from(([127, 0, 0, 2], s.port)), SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, s.port))]
    {
        match TcpStream::connect_timeout(&other, Duration::from_secs(2)) {
            Ok(_) => panic!("{other} accepted a connection: the server is not bound to 127.0.0.1 only"),
            Err(e) => {
                // ::1 may be missing altogether (no IPv6): that is also "not listening there".
                if e.kind() != std::io::ErrorKind::ConnectionRefused {
                    println!("connecting to {other}: {e} (counts as not listening)");
                }
            }
        }
    }
    assert_eq!(s.get("/").status, 200);
}

#[test]
fn static_files_are_safe() {
    let s = Server::start("static");
    let r = s.get("/");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), INDEX);
    assert!(r.headers["content-type"].starts_with("text/html"));
    assert_eq!(r.headers["x-content-type-options"], "nosniff");
    assert_eq!(r.headers["referrer-policy"], "no-referrer");
    let csp = &r.headers["content-security-policy"];
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    // The trace reader's zstd decoder is WebAssembly inlined as a data: URL: it may be compiled
    // and fetched, and nothing else is loosened (no 'unsafe-eval', nothing remote).
    assert!(csp.contains("script-src 'self' 'wasm-unsafe-eval';"), "{csp}");
    assert!(csp.contains("connect-src 'self' data: ws://127.0.0.1:"), "{csp}");
    assert!(!csp.contains("'unsafe-eval'") && !csp.contains("http"), "{csp}");
    // No token needed for UI files; the right content type for scripts.
    let r = s.get("/assets/app.js");
    assert_eq!(r.status, 200);
    assert!(r.headers["content-type"].starts_with("text/javascript"));
    // Traversal, raw and encoded, hidden files, symlinks out, directories.
    for bad in [
        "/../secret.txt",
        "/assets/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/assets/..%2f..%2fsecret.txt",
        "/..%5csecret.txt",
        "/.hidden",
        "/link.txt",
        "/emptydir/",
        "/emptydir",
        "/nothing.js",
        "/%zz",
    ] {
        let r = s.get(bad);
        assert!(r.status >= 400 && r.status < 500, "{bad}: status {}", r.status);
        assert!(!r.text().contains(SECRET), "{bad} leaked the secret");
        assert_eq!(r.headers["x-content-type-options"], "nosniff", "{bad}");
    }
    assert!(!Path::new(&s.tmp.0.join("web/emptydir/index.html")).exists());
    // A client-side route (no extension) gets the app.
    assert_eq!(s.get("/some/view").text(), INDEX);
}

#[test]
fn probe_topology_processes() {
    let s = Server::start("probe");
    let r = s.api("/api/probe");
    assert_eq!(r.status, 200);
    assert!(r.headers["content-type"].starts_with("application/json"));
    assert_eq!(r.headers["cache-control"], "no-store");
    let p = r.json();
    // Same shape as `numascope probe --json`.
    let cli = Command::new(numascope()).args(["probe", "--json"]).output().unwrap();
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(keys(&p), keys(&cli));
    let sources = p["sources"].as_array().unwrap();
    assert!(sources.iter().any(|s| s["id"] == "page-faults"));
    for src in sources {
        assert!(src["id"].is_string() && src["available"].is_boolean() && src["reason"].is_string(), "{src}");
    }
    for c in p["capabilities"].as_array().unwrap() {
        assert!(c["metric"].is_string() && c["status"].is_string() && c["reason"].is_string(), "{c}");
    }
    let t = s.api("/api/topology").json();
    assert!(!t["nodes"].as_array().unwrap().is_empty(), "{t}");
    let procs = s.api("/api/processes").json();
    let me = procs["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == s.child.id())
        .expect("the server itself is listed")
        .clone();
    assert!(me["threads"].as_u64().unwrap() >= 1);
    assert!(me["rssBytes"].as_u64().unwrap() > 0);
    assert_eq!(me["command"][1], "serve");
    assert_eq!(me["own"], true);
}

fn node_counts(v: &Value) -> BTreeMap<i64, u64> {
    v.as_array().unwrap().iter().map(|c| (c["node"].as_i64().unwrap(), c["count"].as_u64().unwrap())).collect()
}

#[test]
fn live_recording_agrees_with_trace() {
    let s = Server::start("live");
    let body = serde_json::json!({
        "command": [testload().to_str().unwrap(), "--threads", "4", "--mib", "8", "--seconds", "0.5", "--hold", "20"],
        "durationS": 30,
        // Every fault, so that every page of the buffers shows up live (the default is adaptive).
        "faultPeriod": 1,
    });
    let r = s.post("/api/recordings", &body.to_string());
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    // The trace is not there while recording.
    let r = s.api(&format!("/api/recordings/{id}/trace"));
    assert_eq!((r.status, r.error_code().as_str()), (409, "not-finished"));

    let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, s.port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let url = format!("ws://127.0.0.1:{}/api/recordings/{id}/live?token={}", s.port, s.token);
    let (mut ws, _) = tungstenite::client::client(url.as_str(), stream).expect("WebSocket handshake");

    let expected_pages = 4 * 8 * 256; // the workers' buffers alone
    let t0 = Instant::now();
    let mut windows: Vec<Value> = Vec::new();
    let mut end: Option<Value> = None;
    let mut stop_sent = false;
    while end.is_none() {
        assert!(t0.elapsed() < Duration::from_secs(40), "no end message");
        let msg = ws.read().expect("read a live message");
        let tungstenite::Message::Text(text) = msg else { continue };
        let v: Value = serde_json::from_str(text.as_str()).unwrap();
        match v["type"].as_str() {
            Some("window") => {
                // Stop once the workers' buffers are in and the threads are holding.
                let alive = v["threads"].as_array().unwrap().iter().filter(|t| t["alive"] == true).count();
                let done = v["totals"]["pages"].as_u64().unwrap() >= expected_pages && alive >= 5;
                if !stop_sent && done && v["endUs"].as_u64().unwrap() >= 1_000_000 {
                    let r = s.post(&format!("/api/recordings/{id}/stop"), "");
                    assert_eq!(r.status, 202, "{}", r.text());
                    stop_sent = true;
                }
                windows.push(v);
            }
            Some("end") => end = Some(v),
            other => panic!("unexpected message type {other:?}: {v}"),
        }
    }
    assert!(stop_sent, "the pages never arrived in the live windows");
    let end = end.unwrap();
    assert_eq!(end["status"], "finished", "{end}");

    // Windows: consecutive, contiguous, a few per second, the last one final.
    assert!(windows.len() >= 3, "{} windows", windows.len());
    for (i, w) in windows.iter().enumerate() {
        assert_eq!(w["seq"].as_u64().unwrap(), i as u64);
        assert_eq!(w["recording"], id.as_str());
        assert_eq!(w["final"], i + 1 == windows.len());
        if i > 0 {
            assert_eq!(w["startUs"], windows[i - 1]["endUs"]);
        }
        assert!(w["endUs"].as_u64() >= w["startUs"].as_u64());
    }
    let last = windows.last().unwrap();
    let elapsed_s = last["elapsedUs"].as_f64().unwrap() / 1e6;
    assert!(windows.len() as f64 >= elapsed_s * 2.0, "{} windows in {elapsed_s:.2} s", windows.len());
    let window_sum: u64 = windows.iter().map(|w| w["faults"].as_u64().unwrap()).sum();
    assert_eq!(window_sum, last["totals"]["faults"].as_u64().unwrap());

    // The status endpoint has the summary, and the trace downloads.
    let st = s.api(&format!("/api/recordings/{id}")).json();
    assert_eq!(st["status"], "finished");
    assert_eq!(st["stopRequested"], true);
    // The command was left running (the default); it holds for 20 s: end it here.
    assert_eq!(st["summary"]["leftRunning"], true, "{st}");
    // SAFETY: signalling the command this test had the server launch.
    unsafe { libc::kill(st["summary"]["pid"].as_i64().unwrap() as i32, libc::SIGKILL) };
    let r = s.api(&format!("/api/recordings/{id}/trace"));
    assert_eq!(r.status, 200);
    assert!(r.headers["content-disposition"].contains(".numascope"));
    let path = s.tmp.0.join("downloaded.numascope");
    std::fs::write(&path, &r.body).unwrap();
    let t = read_trace(&path).unwrap().to_trace_data();

    // The documented agreement rule (crates/core/src/live.rs, docs/live-api.md): launched, so
    // no duplicates; alive at the stop, so every page was answered by the final query.
    let samples = t.samples.time_us.len() as u64;
    assert_eq!(last["totals"]["faults"].as_u64().unwrap(), samples);
    assert_eq!(st["summary"]["samples"].as_u64().unwrap(), samples);
    let mut by_node: BTreeMap<i64, u64> = BTreeMap::new();
    for n in &t.samples.node {
        *by_node.entry(*n as i64).or_default() += 1;
    }
    assert_eq!(node_counts(&last["totals"]["faultsByNode"]), by_node);
    assert_eq!(last["totals"]["pages"].as_u64().unwrap(), t.pages.address.len() as u64);
    assert!(t.pages.address.len() as u64 >= expected_pages);
    let mut pages_by_node: BTreeMap<i64, u64> = BTreeMap::new();
    for n in &t.pages.node {
        *pages_by_node.entry(*n as i64).or_default() += 1;
    }
    // Pages move_pages never answered (e.g. a thread's stack freed when it exited before the
    // final query) are -1 live; the trace may give them their region's numa_maps node and says how
    // many in a note (the documented rule, crates/core/src/live.rs).
    let fallback: u64 = t
        .manifest
        .capture
        .notes
        .iter()
        .find_map(|n| n.split_once(" pages were never answered by move_pages").and_then(|(k, _)| k.parse().ok()))
        .unwrap_or(0);
    let mut live_pages = node_counts(&last["totals"]["pagesByNode"]);
    let unanswered = live_pages.get(&-1).copied().unwrap_or(0);
    assert!(unanswered >= fallback, "live {live_pages:?}, trace {pages_by_node:?}, {fallback} fallback pages");
    if fallback > 0 {
        *live_pages.entry(-1).or_default() -= fallback;
        live_pages.retain(|_, v| *v > 0);
        let moved: u64 = pages_by_node
            .iter()
            .filter(|(n, _)| **n >= 0)
            .map(|(n, v)| v - live_pages.get(n).copied().unwrap_or(0))
            .sum();
        assert_eq!(moved, fallback, "the fallback pages went to nodes: live {live_pages:?}, trace {pages_by_node:?}");
    } else {
        assert_eq!(live_pages, pages_by_node);
    }
    // Threads: the ones the windows showed are the trace's (main + 4 workers).
    let live_tids: BTreeSet<i64> = windows
        .iter()
        .flat_map(|w| w["threads"].as_array().unwrap().iter().map(|t| t["tid"].as_i64().unwrap()))
        .collect();
    let trace_tids: BTreeSet<i64> = t.threads.tid.iter().map(|&t| t as i64).collect();
    assert_eq!(live_tids, trace_tids);
    assert_eq!(last["threadsSeen"].as_u64().unwrap(), trace_tids.len() as u64);
    assert_eq!(trace_tids.len(), 5);
    assert_eq!(last["lostSamples"].as_u64().unwrap(), t.manifest.capture.lost_samples);
    // Every thread entry has a cpu and that cpu's node.
    for w in &windows {
        for th in w["threads"].as_array().unwrap() {
            assert!(th["cpu"].as_i64().unwrap() >= 0 && th["node"].as_i64().is_some(), "{th}");
        }
    }
}

/// The cpus this thread may run on, from /proc (Cpus_allowed_list).
fn allowed_cpus(pid: u32, tid: u32) -> String {
    let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap();
    s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap().trim().to_string()
}

#[test]
fn apply_and_rollback_through_the_api() {
    let srv = Server::start("apply");
    let mut child = Command::new(testload())
        .args(["--threads", "1", "--mib", "4", "--seconds", "0", "--hold", "20"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut line, mut buffer) = (String::new(), None);
    while out.read_line(&mut line).unwrap() > 0 {
        if line.starts_with("buffer ") {
            buffer = Some(line.trim().to_string());
        }
        if line.starts_with("holding") {
            break;
        }
        line.clear();
    }
    let buffer = buffer.expect("testload printed its buffer");
    let field = |k: &str| buffer.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap().to_string();
    let (tid, addr, len) = (field("tid="), field("addr="), field("len=").parse::<u64>().unwrap());
    let start = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
    let before = allowed_cpus(pid, tid.parse().unwrap());
    let plan = json!({
        "format": "numascope-plan", "version": 1,
        "target": { "pid": pid, "startTimeTicks": null, "machine": { "nodeIds": [0], "distances": null } },
        "pageRanges": [{ "start": addr, "end": format!("{:#x}", start + len), "action": "move", "toNodes": [0] }],
        "threads": [{ "tid": tid.parse::<u64>().unwrap(), "toNodes": [0] }]
    });

    // A plan for another pid is refused before anything happens.
    let r = srv.post("/api/apply", &json!({ "plan": plan, "pid": pid + 1 }).to_string());
    assert_eq!((r.status, r.error_code()), (400, "pid-mismatch".to_string()), "{}", r.text());
    // An invalid plan names the field.
    let mut bad = plan.clone();
    bad["pageRanges"][0]["toNodes"] = json!([7]);
    let r = srv.post("/api/apply", &json!({ "plan": bad, "pid": pid }).to_string());
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("toNodes"), "{}", r.text());
    // Without the token: 401, nothing applied.
    let r = srv.request("POST", "/api/apply", &[], Some(&json!({ "plan": plan, "pid": pid }).to_string()));
    assert_eq!(r.status, 401);

    // Dry run: a report, no change.
    let r = srv.post("/api/apply", &json!({ "plan": plan, "pid": pid, "dryRun": true }).to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    let rep = r.json();
    assert_eq!(rep["dryRun"], json!(true));
    assert!(rep.get("rollback").is_none());
    assert_eq!(allowed_cpus(pid, tid.parse().unwrap()), before);

    // Real apply: the thread is pinned to node 0's cpus; the answer carries the rollback record.
    let r = srv.post("/api/apply", &json!({ "plan": plan, "pid": pid }).to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    let rep = r.json();
    assert_eq!(rep["status"], json!("complete"), "{rep}");
    assert_eq!(rep["threads"][0]["pinned"], json!(true), "{rep}");
    let record = rep["rollback"].clone();
    assert!(record.is_object(), "{rep}");

    // Rollback restores the thread's affinity.
    let r = srv.post("/api/rollback", &json!({ "record": record }).to_string());
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(allowed_cpus(pid, tid.parse().unwrap()), before);
    let _ = child.kill();
    let _ = child.wait();
}

/// #19: a JSON body with a key twice in one object (at any depth) is refused, naming the key,
/// on every route that takes a body; serde_json alone would keep the last copy.
#[test]
fn duplicate_json_keys_are_refused() {
    let s = Server::start("dupkeys");
    for (path, body, key) in [
        ("/api/recordings", r#"{"pid":1,"pid":2}"#, "pid"),
        ("/api/recordings", r#"{"command":["true"],"durationS":1,"durationS":2}"#, "durationS"),
        ("/api/apply", r#"{"pid":1,"pid":1,"plan":{}}"#, "pid"),
        ("/api/apply", r#"{"pid":1,"plan":{"format":"numascope-plan","format":"x"}}"#, "format"),
        ("/api/rollback", r#"{"record":{"pages":[{"start":"0x1000","start":"0x2000"}]}}"#, "start"),
    ] {
        let r = s.post(path, body);
        assert_eq!((r.status, r.error_code().as_str()), (400, "duplicate-key"), "{path} {body}: {}", r.text());
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(&format!("duplicate key \"{key}\"")), "{msg}");
    }
    // The same key in sibling objects is fine (and reaches the handler's own checks).
    let r = s.post("/api/recordings", r#"{"pid":1,"command":[{"a":1},{"a":2}]}"#);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-request"), "{}", r.text());
    assert!(s.post("/api/recordings", "[1,").error_code() == "bad-json");
}

/// Hostile request shapes get a 4xx and the server goes on answering: bodies over the limit
/// (by Content-Length, refused before they are read, and chunked), deep nesting, wrong types,
/// a bad framing, an oversized head.
#[test]
fn hostile_requests_answer_4xx() {
    let s = Server::start("hostile");
    let auth = format!("Bearer {}", s.token);
    let big = "x".repeat(64 * 1024 + 1);
    let r = s.post("/api/recordings", &big);
    assert_eq!((r.status, r.error_code().as_str()), (413, "body-too-large"), "{}", r.text());
    assert_eq!(r.headers.get("connection").map(String::as_str), Some("close"));
    let r = s.post("/api/apply", &"y".repeat(16 * 1024 * 1024 + 1));
    assert_eq!((r.status, r.error_code().as_str()), (413, "body-too-large"), "{}", r.text());
    // Chunked: counted as it arrives.
    let mut chunked = String::new();
    for _ in 0..20 {
        chunked.push_str(&format!("{:x}\r\n{}\r\n", 4096, "z".repeat(4096)));
    }
    chunked.push_str("0\r\n\r\n");
    let r = s.request(
        "POST",
        "/api/recordings",
        &[("Authorization", &auth), ("Transfer-Encoding", "chunked")],
        Some(&chunked),
    );
    // (The helper adds Content-Length: both framings at once are refused as such.)
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-request"), "{}", r.text());
    let mut raw = TcpStream::connect(s.addr()).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    use std::io::{Read, Write};
    let head = format!(
        "POST /api/recordings HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        s.addr()
    );
    raw.write_all(head.as_bytes()).unwrap();
    let _ = raw.write_all(chunked.as_bytes());
    let mut out = Vec::new();
    let _ = raw.read_to_end(&mut out);
    let (r, _) = serve_common::parse_response(&out);
    assert_eq!((r.status, r.error_code().as_str()), (413, "body-too-large"), "{}", r.text());
    // A small chunked body is read like any other.
    let mut raw = TcpStream::connect(s.addr()).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = r#"{"pid":"one"}"#;
    raw.write_all(head.as_bytes()).unwrap();
    raw.write_all(format!("{:x}\r\n{body}\r\n0\r\n\r\n", body.len()).as_bytes()).unwrap();
    let mut out = Vec::new();
    raw.read_to_end(&mut out).unwrap();
    let (r, _) = serve_common::parse_response(&out);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-pid"), "{}", r.text());
    // Deep nesting, wrong types, not an object.
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert_eq!(s.post("/api/recordings", &format!(r#"{{"command":{}}}"#, deep(10_000))).error_code(), "bad-json");
    assert_eq!(s.post("/api/apply", &deep(1_000_000)).error_code(), "bad-json");
    assert_eq!(s.post("/api/recordings", r#"{"pid":"1"}"#).error_code(), "bad-pid");
    // The server itself, by its pid or by the tid of one of its threads (/proc/TID exists for
    // every thread), is refused: recording it would stop the server that serves the recording.
    let me = s.child.id();
    let r = s.post("/api/recordings", &format!(r#"{{"pid":{me},"durationS":1}}"#));
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-pid"), "{}", r.text());
    let other = std::fs::read_dir(format!("/proc/{me}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|&t| t != me)
        .expect("numascope serve runs more than one thread");
    let r = s.post("/api/recordings", &format!(r#"{{"pid":{other},"durationS":1}}"#));
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-pid"), "{}", r.text());
    assert!(r.text().contains("one of its threads"), "{}", r.text());
    assert_eq!(s.post("/api/recordings", r#"{"command":"true"}"#).error_code(), "bad-command");
    assert_eq!(s.post("/api/recordings", r#"{"pid":1,"intervalMs":-5}"#).error_code(), "bad-interval");
    assert_eq!(s.post("/api/recordings", "[]").error_code(), "bad-request");
    assert_eq!(s.post("/api/apply", r#"{"pid":"x","plan":{}}"#).error_code(), "bad-request");
    // Framing: two lengths, or a length that is not a number.
    let r = s.request(
        "POST",
        "/api/recordings",
        &[("Authorization", &auth), ("Content-Length", "5"), ("Content-Length", "6")],
        None,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    // A head over 16 KiB: 431, with or without the token.
    let long = "a".repeat(20 * 1024);
    let r = s.request("GET", &format!("/api/topology?token={}", s.token), &[("X-Long", &long)], None);
    assert_eq!((r.status, r.error_code().as_str()), (431, "head-too-large"), "{}", r.text());
    // Still answering.
    assert_eq!(s.api("/api/topology").status, 200);
}

/// HTTP details the browser and curl rely on: keep-alive, HEAD, `Expect: 100-continue`, and a
/// refusal without the token that closes a connection whose body was not read.
#[test]
fn http_keep_alive_head_and_continue() {
    let s = Server::start("http11");
    let auth = format!("Bearer {}", s.token);
    let mut c = serve_common::KeepAlive::new(s.addr());
    for _ in 0..5 {
        assert_eq!(c.request("GET", "/api/topology", &[("Authorization", &auth)], b"").status, 200);
        assert_eq!(c.request("GET", "/assets/app.js", &[], b"").status, 200);
    }
    let r = c.request("HEAD", "/", &[], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-length"], INDEX.len().to_string());
    assert_eq!(c.reconnects, 1, "one connection for all of them");
    // Without the token, a body is never read: 401 and the connection closes.
    let r = c.request("POST", "/api/recordings", &[], br#"{"pid":1}"#);
    assert_eq!(r.status, 401);
    assert_eq!(r.headers.get("connection").map(String::as_str), Some("close"));
    // Expect: 100-continue gets its interim answer, then the final one.
    let mut raw = TcpStream::connect(s.addr()).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    use std::io::{Read, Write};
    let body = r#"{"pid":"x"}"#;
    let head = format!(
        "POST /api/recordings HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\nExpect: 100-continue\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        s.addr(),
        body.len()
    );
    raw.write_all(head.as_bytes()).unwrap();
    let mut first = [0u8; 25];
    raw.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    raw.write_all(body.as_bytes()).unwrap();
    let mut out = Vec::new();
    raw.read_to_end(&mut out).unwrap();
    let (r, _) = serve_common::parse_response(&out);
    assert_eq!((r.status, r.error_code().as_str()), (400, "bad-pid"), "{}", r.text());
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// The state letter of /proc/PID/stat; None when the pid is gone.
fn proc_state(pid: i64) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

/// Stopping a recording of a launched command leaves it running by default (`summary.leftRunning`),
/// not stopped, and the server reaps it when it exits later; `killOnStop` terminates it.
#[test]
fn stop_leaves_the_command_running_unless_kill_on_stop() {
    let s = Server::start("stop");
    let gone_within = |pid: i64, limit: Duration| {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if proc_state(pid).is_none() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    };
    for kill in [false, true] {
        let body = json!({ "command": ["sleep", "30"], "killOnStop": kill });
        let r = s.post("/api/recordings", &body.to_string());
        assert_eq!(r.status, 201, "{}", r.text());
        let id = r.json()["id"].as_str().unwrap().to_string();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(s.post(&format!("/api/recordings/{id}/stop"), "").status, 202);
        let st = s.wait_finished(&id, Duration::from_secs(30));
        assert_eq!(st["status"], "finished", "{st}");
        let pid = st["summary"]["pid"].as_i64().unwrap();
        assert_eq!(st["summary"]["leftRunning"], !kill, "{st}");
        if kill {
            assert_eq!(proc_state(pid), None, "killOnStop: terminated");
        } else {
            let state = proc_state(pid).expect("still running after the stop");
            assert!(state == 'S' || state == 'R', "not stopped: state {state}");
            // SAFETY: signalling the command this test had the server launch.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            assert!(gone_within(pid, Duration::from_secs(5)), "serve did not reap pid {pid}: {:?}", proc_state(pid));
        }
    }
}

/// Records `true` through the API and answers the trace's path once finished.
fn record_true(s: &Server) -> std::path::PathBuf {
    let r = s.post("/api/recordings", r#"{"command":["true"]}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    let st = s.wait_finished(&id, Duration::from_secs(60));
    assert_eq!(st["status"], "finished", "{st}");
    std::path::PathBuf::from(st["summary"]["output"].as_str().unwrap())
}

/// #20: recordings are not readable by other users, in a given `--out-dir` (created 0700 when
/// missing; an existing open one gets a warning) and in the default one, even with umask 0.
#[test]
fn recordings_are_private_whatever_the_umask() {
    // A given directory that does not exist yet.
    let s = Server::start_with("private-new", Options { umask: Some(0), ..Options::default() });
    let out = s.tmp.0.join("out");
    assert_eq!(mode(&out), 0o700, "created --out-dir");
    let trace = record_true(&s);
    assert_eq!(trace, out.join(trace.file_name().unwrap()), "the trace is in --out-dir");
    assert_eq!(mode(&trace), 0o600, "{}", trace.display());
    let names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, vec![trace.file_name().unwrap().to_string_lossy().into_owned()], "nothing else left there");
    drop(s);

    // A given directory that exists and is open to everyone: the traces are 0600 all the same,
    // and the server says the directory is open.
    let tmp = Tmp::new("private-open-dir");
    let open = tmp.0.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let s = Server::start_with(
        "private-open",
        Options { umask: Some(0), out_dir: Some(Some(open.clone())), ..Options::default() },
    );
    let trace = record_true(&s);
    assert_eq!(trace.parent(), Some(open.as_path()));
    assert_eq!(mode(&trace), 0o600);
    assert_eq!(mode(&open), 0o777, "an existing directory is left as it is");
    let err = s.stderr.lock().unwrap().clone();
    assert!(err.contains("warning: --output") && err.contains("0777"), "stderr: {err}");
    drop(s);

    // The default directory.
    let s =
        Server::start_with("private-default", Options { umask: Some(0), out_dir: Some(None), ..Options::default() });
    let trace = record_true(&s);
    let dir = trace.parent().unwrap().to_path_buf();
    assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    assert_eq!(mode(&trace), 0o600);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The live WebSocket after the handshake is tokio-tungstenite's: a fragmented message is
/// reassembled (the connection goes on and answers a ping), a text frame that is not UTF-8 is
/// refused with Close 1007, a frame with an RSV bit with Close 1002, fragments over the message
/// limit with Close 1009, and a client's Close is echoed with its code.
#[test]
fn live_socket_protocol_fragments_utf8_and_close() {
    use tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
    use tungstenite::protocol::frame::Frame;
    use tungstenite::protocol::CloseFrame;
    use tungstenite::Message;
    let s = Server::start("live-protocol");
    let body = json!({ "command": ["sleep", "4"], "durationS": 4 });
    let r = s.post("/api/recordings", &body.to_string());
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    let connect = || {
        let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, s.port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let url = format!("ws://127.0.0.1:{}/api/recordings/{id}/live?token={}", s.port, s.token);
        tungstenite::client::client(url.as_str(), stream).expect("WebSocket handshake").0
    };
    // The first message that is not a window (the server's answer to what the client sent).
    let answer = |ws: &mut tungstenite::WebSocket<TcpStream>| loop {
        match ws.read() {
            Ok(Message::Text(t)) if t.as_str().contains("\"window\"") => continue,
            other => return other,
        }
    };
    let text = |data: &[u8], fin: bool| Message::Frame(Frame::message(data.to_vec(), OpCode::Data(Data::Text), fin));
    let more =
        |data: &[u8], fin: bool| Message::Frame(Frame::message(data.to_vec(), OpCode::Data(Data::Continue), fin));

    let mut ws = connect();
    ws.send(text(b"hel", false)).unwrap();
    ws.send(more(b"lo", true)).unwrap();
    ws.send(Message::Ping(b"p1".to_vec().into())).unwrap();
    match answer(&mut ws) {
        Ok(Message::Pong(p)) => assert_eq!(&p[..], b"p1"),
        other => panic!("a fragmented message then a ping: {other:?}"),
    }

    let mut ws = connect();
    ws.send(text(&[b'a', 0xFF, 0xFE], true)).unwrap();
    match answer(&mut ws) {
        Ok(Message::Close(Some(f))) => assert_eq!(f.code, CloseCode::Invalid, "{f:?}"),
        other => panic!("invalid UTF-8: {other:?}"),
    }

    let mut ws = connect();
    let mut f = Frame::message(b"x".to_vec(), OpCode::Data(Data::Text), true);
    f.header_mut().rsv1 = true; // no extension was negotiated
    ws.send(Message::Frame(f)).unwrap();
    match answer(&mut ws) {
        Ok(Message::Close(Some(f))) => assert_eq!(f.code, CloseCode::Protocol, "{f:?}"),
        other => panic!("an RSV bit: {other:?}"),
    }

    let mut ws = connect();
    let piece = vec![b'x'; 40 * 1024];
    ws.send(text(&piece, false)).unwrap();
    ws.send(more(&piece, true)).unwrap();
    match answer(&mut ws) {
        Ok(Message::Close(Some(f))) => assert_eq!(f.code, CloseCode::Size, "{f:?}"),
        other => panic!("a message over the limit: {other:?}"),
    }

    let mut ws = connect();
    ws.close(Some(CloseFrame { code: CloseCode::Away, reason: "bye".into() })).unwrap();
    match answer(&mut ws) {
        Ok(Message::Close(Some(f))) => assert_eq!(f.code, CloseCode::Away, "the Close is echoed: {f:?}"),
        other => panic!("close: {other:?}"),
    }
}
