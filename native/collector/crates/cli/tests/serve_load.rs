//! `numascope serve` under load and under hostile local clients, on 127.0.0.1 only; every loop
//! is bounded in count and time. Figures are printed (run with `--nocapture`) and recorded in
//! docs/live-api.md.
//!
//! - `no_client_can_starve_the_api` (#20): 100 WebSocket clients that never read and 100
//!   downloads of a 16 MiB UI file without the token that never read; the token holder's API
//!   keeps answering fast, threads and memory stay bounded, the stalled clients are dropped.
//! - `load_with_hostile_bodies` (#19): requests over 20 kept-alive connections, hostile bodies
//!   mixed in, while reading WebSocket clients follow a recording: 2,000 requests and 50
//!   WebSocket clients (a few seconds), or `NUMASCOPE_SERVE_LOAD_REQUESTS=N` and
//!   `NUMASCOPE_SERVE_LOAD_WS=M`.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

mod common;
mod serve_common;
use common::testload;
use serve_common::{KeepAlive, Options, Server};

/// A loopback TCP connection whose receive buffer is small (4 KiB), so that a client that
/// never reads stalls the server's writes quickly.
fn small_rcvbuf_stream(addr: SocketAddr) -> TcpStream {
    let SocketAddr::V4(a) = addr else { panic!("IPv4 loopback only") };
    // SAFETY: plain socket calls on a descriptor we own; sockaddr_in filled as the kernel wants.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let size: libc::c_int = 4096;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &size as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: a.port().to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(*a.ip()).to_be() },
            sin_zero: [0; 8],
        };
        let r = libc::connect(
            fd,
            &sin as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(r, 0, "connect: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

/// Starts a recording of a testload process that holds `threads` idle threads for a minute
/// (windows every `interval_ms`, each listing the threads); answers its id.
fn start_hold_recording(s: &Server, threads: u32, interval_ms: u64) -> String {
    let body = json!({
        "command": [testload().to_str().unwrap(), "--threads", threads.to_string(), "--mib", "1",
                    "--shared-mib", "1", "--seconds", "0.1", "--hold", "60"],
        "durationS": 60,
        "intervalMs": interval_ms,
        // Ended with the recording: the test starts many.
        "killOnStop": true,
    });
    let r = s.post("/api/recordings", &body.to_string());
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_string()
}

fn ws_url(s: &Server, id: &str) -> String {
    format!("ws://127.0.0.1:{}/api/recordings/{id}/live?token={}", s.port, s.token)
}

/// Percentile (0..=100) of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p / 100.0).round() as usize]
}

/// Samples the server's threads and RSS every 100 ms until `stop`; answers the maxima.
fn sample_resources(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<(u64, u64)> {
    std::thread::spawn(move || {
        let (mut threads, mut rss) = (0, 0);
        let t0 = Instant::now();
        while !stop.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(120) {
            let (t, r) = serve_common::proc_threads_and_rss_kib(pid);
            threads = threads.max(t);
            rss = rss.max(r);
            std::thread::sleep(Duration::from_millis(100));
        }
        (threads, rss)
    })
}

/// A WebSocket client that reads until `stop` (or the end message); answers the windows it got
/// and the longest wait between two messages.
fn reading_ws_client(url: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<(u64, Duration)> {
    std::thread::spawn(move || {
        let stream = TcpStream::connect(url.trim_start_matches("ws://").split('/').next().unwrap()).unwrap();
        stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let (mut ws, _) = tungstenite::client::client(url.as_str(), stream).expect("WebSocket handshake");
        let (mut windows, mut longest, mut bytes) = (0u64, Duration::ZERO, 0u64);
        let mut last = Instant::now();
        let t0 = Instant::now();
        while !stop.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(120) {
            match ws.read() {
                Ok(tungstenite::Message::Text(t)) => {
                    if t.as_str().contains("\"type\":\"window\"") {
                        windows += 1;
                        bytes += t.len() as u64;
                    }
                    longest = longest.max(last.elapsed());
                    last = Instant::now();
                    if t.as_str().contains("\"type\":\"end\"") {
                        break;
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => panic!("a reading WebSocket client was dropped: {e}"),
            }
        }
        if let Some(avg) = bytes.checked_div(windows) {
            println!("a reading client: {windows} windows of {avg} bytes on average");
        }
        (windows, longest)
    })
}

#[test]
fn no_client_can_starve_the_api() {
    let s = Server::start_with("starve", Options { big_file_bytes: Some(16 << 20), ..Options::default() });
    let id = start_hold_recording(&s, 64, 100);
    let baseline_fds = s.open_fds();
    let stop = Arc::new(AtomicBool::new(false));
    let resources = sample_resources(s.child.id(), stop.clone());
    let reader = reading_ws_client(ws_url(&s, &id), stop.clone());

    // 100 authenticated WebSocket clients on the running recording that never read.
    let mut stalled_ws = Vec::new();
    for _ in 0..100 {
        let url = ws_url(&s, &id);
        let (ws, _) = tungstenite::client::client(url.as_str(), small_rcvbuf_stream(s.addr())).expect("handshake");
        stalled_ws.push(ws);
    }
    // 100 downloads of the 16 MiB file without the token that never read.
    let mut stalled_downloads = Vec::new();
    for _ in 0..100 {
        let mut c = small_rcvbuf_stream(s.addr());
        c.write_all(format!("GET /assets/big.js HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr()).as_bytes()).unwrap();
        stalled_downloads.push(c);
    }
    let opened = Instant::now();

    // The token holder's API, sampled every 50 ms for 20 s (long enough to see the stalled
    // clients dropped): a new connection each time, like curl, and one kept alive, like a page.
    let auth = format!("Bearer {}", s.token);
    let mut kept = KeepAlive::new(s.addr());
    let (mut fresh_ms, mut kept_ms) = (Vec::new(), Vec::new());
    let mut refused_while_stalled = None;
    let mut served_after_drop = None;
    while opened.elapsed() < Duration::from_secs(20) {
        let t = Instant::now();
        let r = s.request("GET", "/api/topology", &[("Authorization", &auth)], None);
        fresh_ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.status, 200, "{}", r.text());
        let t = Instant::now();
        let r = kept.request("GET", "/api/recordings", &[("Authorization", &auth)], b"");
        kept_ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.status, 200, "{}", r.text());
        // A UI file without the token: refused early (small 503) while the stalled downloads
        // hold every slot, served again once they were dropped.
        let since = opened.elapsed();
        if refused_while_stalled.is_none() && since > Duration::from_secs(2) {
            let r = s.get("/assets/app.js");
            refused_while_stalled = Some((r.status, r.body.len()));
        }
        if served_after_drop.is_none() && since > Duration::from_secs(14) {
            served_after_drop = Some(s.get("/assets/app.js").status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The stalled WebSocket clients are dropped once their socket buffers are full (64 KiB on
    // the server's side: a dozen seconds of windows) and a write has waited 10 s.
    let mut fds_at_end = s.open_fds();
    while fds_at_end >= baseline_fds + 20 && opened.elapsed() < Duration::from_secs(40) {
        std::thread::sleep(Duration::from_millis(250));
        fds_at_end = s.open_fds();
    }
    let dropped_after = opened.elapsed();
    stop.store(true, Ordering::SeqCst);
    let (max_threads, max_rss_kib) = resources.join().unwrap();
    let (windows, longest_gap) = reader.join().unwrap();

    for v in [&mut fresh_ms, &mut kept_ms] {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    println!(
        "starvation: API over a new connection: {} requests, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; kept alive: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        fresh_ms.len(),
        pct(&fresh_ms, 50.0),
        pct(&fresh_ms, 99.0),
        pct(&fresh_ms, 100.0),
        pct(&kept_ms, 50.0),
        pct(&kept_ms, 99.0),
        pct(&kept_ms, 100.0)
    );
    println!(
        "starvation: server threads max {max_threads}, RSS max {:.1} MiB; fds {baseline_fds} before, {fds_at_end} after {dropped_after:.1?}; reading client: {windows} windows, longest gap {longest_gap:?}; UI file while stalled: {refused_while_stalled:?}, after: {served_after_drop:?}",
        max_rss_kib as f64 / 1024.0
    );
    // Under 200 ms is the goal and what an idle machine gives (docs/live-api.md has the
    // figures); the asserted bounds leave room for a loaded 2-core machine.
    assert!(pct(&fresh_ms, 95.0) < 200.0, "p95 {:.1} ms", pct(&fresh_ms, 95.0));
    assert!(pct(&kept_ms, 95.0) < 200.0, "p95 {:.1} ms", pct(&kept_ms, 95.0));
    assert!(pct(&fresh_ms, 100.0) < 1000.0 && pct(&kept_ms, 100.0) < 1000.0, "max over 1 s");
    assert!(max_threads <= 40, "{max_threads} threads");
    assert!(max_rss_kib < 256 * 1024, "RSS {max_rss_kib} KiB");
    let (status, len) = refused_while_stalled.unwrap();
    assert!(status == 503 && len < 1024, "a UI file while the downloads stall: {status}, {len} bytes");
    assert_eq!(served_after_drop, Some(200), "UI files once the stalled downloads were dropped");
    // The stalled clients were dropped (their sockets closed on the server side).
    assert!(fds_at_end < baseline_fds + 20, "{fds_at_end} fds at the end, {baseline_fds} before");
    // The reading client kept getting windows (4 per second) all along.
    assert!(windows as f64 >= dropped_after.as_secs_f64() * 4.0 * 0.6, "{windows} windows in {dropped_after:?}");
    assert!(longest_gap < Duration::from_secs(2), "longest gap {longest_gap:?}");
    drop(stalled_ws);
    drop(stalled_downloads);
    assert_eq!(s.api("/api/topology").status, 200);
    // Stop the recording (its process is ended with it) before the server goes.
    assert_eq!(s.post(&format!("/api/recordings/{id}/stop"), "").status, 202);
    s.wait_finished(&id, Duration::from_secs(30));
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn load_with_hostile_bodies() {
    let requests = env_count("NUMASCOPE_SERVE_LOAD_REQUESTS", 2000);
    let ws_clients = env_count("NUMASCOPE_SERVE_LOAD_WS", 50);
    let connections = 20;
    let s = Server::start("load");
    let id = start_hold_recording(&s, 4, 100);
    std::thread::sleep(Duration::from_millis(300));
    let stop = Arc::new(AtomicBool::new(false));
    let resources = sample_resources(s.child.id(), stop.clone());
    let readers: Vec<_> = (0..ws_clients).map(|_| reading_ws_client(ws_url(&s, &id), stop.clone())).collect();

    let deep = format!("{{\"command\":{}{}}}", "[".repeat(5000), "]".repeat(5000));
    let oversize = format!("{{\"command\":[\"{}\"]}}", "x".repeat(70 * 1024));
    // (path, body, expected status, expected code); None: a GET.
    let cases: Vec<(String, Option<String>, u16, &str)> = vec![
        ("/api/topology".into(), None, 200, ""),
        ("/api/recordings".into(), None, 200, ""),
        (format!("/api/recordings/{id}"), None, 200, ""),
        ("/api/recordings".into(), Some(r#"{"pid":1,"pid":2}"#.into()), 400, "duplicate-key"),
        ("/api/recordings".into(), Some(oversize), 413, "body-too-large"),
        ("/api/recordings".into(), Some(r#"{"pid":1,"#.into()), 400, "bad-json"),
        ("/api/recordings".into(), Some(r#"{"pid":[1],"durationS":"long"}"#.into()), 400, "bad-duration"),
        ("/api/recordings".into(), Some(deep), 400, "bad-json"),
        ("/api/apply".into(), Some(r#"{"pid":1,"plan":{"format":7}}"#.into()), 400, ""),
        (
            "/api/rollback".into(),
            Some(r#"{"record":{"record":{"record":[]}},"record":1}"#.into()),
            400,
            "duplicate-key",
        ),
    ];
    let cases = Arc::new(cases);
    let next = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(requests)));
    let t0 = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let (cases, next, latencies) = (cases.clone(), next.clone(), latencies.clone());
            let (addr, auth, origin) = (s.addr(), format!("Bearer {}", s.token), s.origin());
            std::thread::spawn(move || {
                let mut c = KeepAlive::new(addr);
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                    if i >= requests || t0.elapsed() > Duration::from_secs(100) {
                        return c.reconnects;
                    }
                    let (path, body, status, code) = &cases[i % cases.len()];
                    let method = if body.is_some() { "POST" } else { "GET" };
                    let headers = [("Authorization", auth.as_str()), ("Origin", origin.as_str())];
                    let t = Instant::now();
                    let r = c.request(method, path, &headers, body.as_deref().unwrap_or("").as_bytes());
                    latencies.lock().unwrap().push(t.elapsed().as_secs_f64() * 1e3);
                    assert_eq!(r.status, *status, "{method} {path}: {}", r.text());
                    if !code.is_empty() {
                        assert_eq!(r.error_code(), *code, "{method} {path}");
                    }
                }
            })
        })
        .collect();
    let reconnects: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let elapsed = t0.elapsed();
    // The WebSocket clients follow the recording for 3 s at least (windows come at 4 Hz).
    while t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    let got: Vec<(u64, Duration)> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    let (max_threads, max_rss_kib) = resources.join().unwrap();
    let mut lat = latencies.lock().unwrap().clone();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let min_windows = got.iter().map(|g| g.0).min().unwrap_or(0);
    let longest_gap = got.iter().map(|g| g.1).max().unwrap_or_default();
    println!(
        "load: {} requests over {connections} connections ({reconnects} connects) in {:.2} s: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {ws_clients} WebSocket clients, fewest windows {min_windows}, longest gap {longest_gap:?}; server threads max {max_threads}, RSS max {:.1} MiB",
        lat.len(),
        elapsed.as_secs_f64(),
        pct(&lat, 50.0),
        pct(&lat, 99.0),
        pct(&lat, 100.0),
        max_rss_kib as f64 / 1024.0
    );
    assert_eq!(lat.len(), requests);
    assert!(max_threads <= 40, "{max_threads} threads");
    assert!(max_rss_kib < 256 * 1024, "RSS {max_rss_kib} KiB");
    // Every reading client followed the recording (4 windows a second) without a long gap.
    let followed = t0.elapsed();
    assert!(
        min_windows as f64 >= followed.as_secs_f64() * 4.0 * 0.6,
        "a client got only {min_windows} windows in {followed:?}"
    );
    assert!(longest_gap < Duration::from_secs(2), "longest gap {longest_gap:?}");
    assert_eq!(s.api("/api/topology").status, 200);
    // Stop the recording (its process is ended with it) before the server goes.
    assert_eq!(s.post(&format!("/api/recordings/{id}/stop"), "").status, 202);
    s.wait_finished(&id, Duration::from_secs(30));
}

/// 500 connections that send nothing (or half a request head): the server keeps at most 256 of
/// them (the oldest are closed to make room), runs no thread per connection, closes them when
/// the head deadline passes, and the token holder still gets in at once.
#[test]
fn idle_connections_are_bounded() {
    let s = Server::start("idle");
    let baseline_fds = s.open_fds();
    let mut idle = Vec::new();
    for i in 0..500 {
        let mut c = TcpStream::connect(s.addr()).unwrap();
        if i % 2 == 0 {
            // Half a head: a slow client that never finishes it.
            c.write_all(b"GET /assets/app.js HTTP/1.1\r\nHost: 127.").unwrap();
        }
        idle.push(c);
    }
    let t = Instant::now();
    let r = s.api("/api/topology");
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(r.status, 200);
    // Let the accept loop catch up, then count.
    std::thread::sleep(Duration::from_millis(500));
    let fds = s.open_fds();
    let (threads, rss_kib) = s.threads_and_rss_kib();
    println!(
        "idle: 500 idle connections: the API answered in {first_ms:.1} ms; server fds {fds} ({baseline_fds} before), threads {threads}, RSS {:.1} MiB",
        rss_kib as f64 / 1024.0
    );
    assert!(fds <= baseline_fds + 256 + 8, "{fds} fds");
    assert!(threads <= 40, "{threads} threads");
    // The head deadline (10 s) closes the rest.
    let t0 = Instant::now();
    let mut fds = s.open_fds();
    while fds > baseline_fds + 8 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(250));
        fds = s.open_fds();
    }
    assert!(fds <= baseline_fds + 8, "{fds} fds 20 s later");
    assert_eq!(s.api("/api/topology").status, 200);
}
