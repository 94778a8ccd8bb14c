//! End-to-end tests of `numascope serve`: they start the real binary with `--port 0`, parse the
//! URL it prints, and talk to it over loopback only (raw HTTP/1.1 and a tungstenite WebSocket).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use numascope_core::trace::reader::read_trace;
use serde_json::{json, Value};

mod common;
use common::{numascope, testload, Tmp};

const SECRET: &str = "TOP-SECRET-OUTSIDE-WEB-DIR";
const INDEX: &str = "<!doctype html><title>numascope test ui</title>";

/// A running `numascope serve --port 0` with a fake web dir inside `tmp/web` and a secret file
/// beside it (outside the web dir).
struct Server {
    child: Child,
    port: u16,
    token: String,
    tmp: Tmp,
}

impl Server {
    fn start(tag: &str) -> Server {
        let tmp = Tmp::new(tag);
        let web = tmp.0.join("web");
        std::fs::create_dir_all(web.join("assets")).unwrap();
        std::fs::create_dir_all(web.join("emptydir")).unwrap();
        std::fs::write(web.join("index.html"), INDEX).unwrap();
        std::fs::write(web.join("assets/app.js"), "console.log('ui');").unwrap();
        std::fs::write(web.join(".hidden"), SECRET).unwrap();
        std::fs::write(tmp.0.join("secret.txt"), SECRET).unwrap();
        std::os::unix::fs::symlink(tmp.0.join("secret.txt"), web.join("link.txt")).unwrap();
        let out = tmp.0.join("out");
        let mut child = Command::new(numascope())
            .args(["serve", "--port", "0", "--web-dir"])
            .arg(&web)
            .arg("--out-dir")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start numascope serve");
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        lines.read_line(&mut line).expect("read the URL line");
        // Keep draining stdout (launched commands share it) so nothing blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = lines.read_to_end(&mut sink);
        });
        let url = line.trim();
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("unexpected URL line {url:?}"));
        let (port, token) = rest.split_once("/?token=").unwrap_or_else(|| panic!("no token in {url:?}"));
        assert!(token.len() >= 32 && token.chars().all(|c| c.is_ascii_hexdigit()), "token {token:?}");
        Server { child, port: port.parse().unwrap(), token: token.to_string(), tmp }
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn request(&self, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Resp {
        http(SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)), method, target, headers, body)
    }

    fn get(&self, target: &str) -> Resp {
        self.request("GET", target, &[], None)
    }

    /// GET with the token as a query parameter.
    fn api(&self, path: &str) -> Resp {
        let sep = if path.contains('?') { '&' } else { '?' };
        self.get(&format!("{path}{sep}token={}", self.token))
    }

    fn post(&self, path: &str, body: &str) -> Resp {
        let auth = format!("Bearer {}", self.token);
        self.request(
            "POST",
            path,
            &[("Authorization", &auth), ("Content-Type", "application/json"), ("Origin", &self.origin())],
            Some(body),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    fn error_code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_else(|| panic!("no error.code in {}", self.text())).into()
    }
}

/// A minimal HTTP/1.1 client (`Connection: close`, the target sent exactly as given, so that
/// `..` reaches the server unnormalised).
fn http(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Resp {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.map_or(0, |b| b.len())));
    req.push_str(body.unwrap_or(""));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the response");
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if let Some(n) = headers.get("content-length").and_then(|n| n.parse::<usize>().ok()) {
        body.truncate(n);
    }
    Resp { status, headers, body }
}

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
