//! Helpers shared by the tests of `numascope serve` (serve.rs, serve_load.rs): start the real
//! binary with `--port 0`, parse the URL it prints, and talk to it over loopback only (raw
//! HTTP/1.1, one request per connection or kept alive).
#![allow(dead_code)] // each test file uses its own subset

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{numascope, Tmp};

pub const SECRET: &str = "TOP-SECRET-OUTSIDE-WEB-DIR";
pub const INDEX: &str = "<!doctype html><title>numascope test ui</title>";

/// How to start the server; `Options::default()` is what most tests use.
#[derive(Default)]
pub struct Options {
    /// `--out-dir`: `None` gives `TMP/out` (not created beforehand); `Some(None)` passes none
    /// (the server's default directory).
    pub out_dir: Option<Option<PathBuf>>,
    /// The umask the server runs under (default: the test's own).
    pub umask: Option<u32>,
    /// A file of this many bytes at `/assets/big.js` in the web dir.
    pub big_file_bytes: Option<usize>,
}

/// A running `numascope serve --port 0` with a fake web dir inside `tmp/web` and a secret file
/// beside it (outside the web dir). What it writes on stderr is kept in `stderr`.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub token: String,
    pub tmp: Tmp,
    pub stderr: Arc<Mutex<String>>,
}

impl Server {
    pub fn start(tag: &str) -> Server {
        Server::start_with(tag, Options::default())
    }

    pub fn start_with(tag: &str, opts: Options) -> Server {
        let tmp = Tmp::new(tag);
        let web = tmp.0.join("web");
        std::fs::create_dir_all(web.join("assets")).unwrap();
        std::fs::create_dir_all(web.join("emptydir")).unwrap();
        std::fs::write(web.join("index.html"), INDEX).unwrap();
        std::fs::write(web.join("assets/app.js"), "console.log('ui');").unwrap();
        if let Some(n) = opts.big_file_bytes {
            let chunk: Vec<u8> = (0..1024 * 1024).map(|i| b'a' + (i % 26) as u8).collect();
            let mut f = std::fs::File::create(web.join("assets/big.js")).unwrap();
            let mut left = n;
            while left > 0 {
                let k = left.min(chunk.len());
                f.write_all(&chunk[..k]).unwrap();
                left -= k;
            }
        }
        std::fs::write(web.join(".hidden"), SECRET).unwrap();
        std::fs::write(tmp.0.join("secret.txt"), SECRET).unwrap();
        std::os::unix::fs::symlink(tmp.0.join("secret.txt"), web.join("link.txt")).unwrap();
        let mut cmd = Command::new(numascope());
        cmd.args(["serve", "--port", "0", "--web-dir"]).arg(&web);
        match opts.out_dir {
            None => {
                cmd.arg("--out-dir").arg(tmp.0.join("out"));
            }
            Some(Some(d)) => {
                cmd.arg("--out-dir").arg(d);
            }
            Some(None) => {}
        }
        if let Some(mask) = opts.umask {
            use std::os::unix::process::CommandExt;
            // SAFETY: umask is async-signal-safe and touches nothing else.
            unsafe {
                cmd.pre_exec(move || {
                    libc::umask(mask as libc::mode_t);
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start numascope serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let err_pipe = child.stderr.take().unwrap();
        let err_sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err_pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = err_sink.lock().unwrap();
                // Keep the first 64 KiB: what the tests look for comes first.
                if s.len() < 64 * 1024 {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        });
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
        Server { child, port: port.parse().unwrap(), token: token.to_string(), tmp, stderr }
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn request(&self, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Resp {
        http(self.addr(), method, target, headers, body)
    }

    pub fn get(&self, target: &str) -> Resp {
        self.request("GET", target, &[], None)
    }

    /// GET with the token as a query parameter.
    pub fn api(&self, path: &str) -> Resp {
        let sep = if path.contains('?') { '&' } else { '?' };
        self.get(&format!("{path}{sep}token={}", self.token))
    }

    pub fn post(&self, path: &str, body: &str) -> Resp {
        let auth = format!("Bearer {}", self.token);
        self.request(
            "POST",
            path,
            &[("Authorization", &auth), ("Content-Type", "application/json"), ("Origin", &self.origin())],
            Some(body),
        )
    }

    /// Polls `GET /api/recordings/ID` until it is no longer running (at most `limit`).
    pub fn wait_finished(&self, id: &str, limit: Duration) -> Value {
        let t0 = Instant::now();
        loop {
            let v = self.api(&format!("/api/recordings/{id}")).json();
            if v["status"] != "running" {
                return v;
            }
            assert!(t0.elapsed() < limit, "recording {id} still running after {limit:?}: {v}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's thread count and resident memory (KiB), from /proc.
    pub fn threads_and_rss_kib(&self) -> (u64, u64) {
        proc_threads_and_rss_kib(self.child.id())
    }

    /// Open file descriptors of the server (sockets included).
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map(|d| d.count()).unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn proc_threads_and_rss_kib(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| -> u64 {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Threads:"), field("VmRSS:"))
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn error_code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_else(|| panic!("no error.code in {}", self.text())).into()
    }
}

/// A minimal HTTP/1.1 client (`Connection: close`, the target sent exactly as given, so that
/// `..` reaches the server unnormalised).
pub fn http(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: Option<&str>) -> Resp {
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
    // The server may answer (and stop reading) before it has read a body it refuses: a failed
    // write is not an error as long as the answer comes.
    let _ = s.write_all(req.as_bytes());
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the response");
    parse_response(&raw).0
}

/// Parses one response at the start of `raw`; answers it and the bytes it took (its
/// Content-Length, or all that follows the head without one).
pub fn parse_response(raw: &[u8]) -> (Resp, usize) {
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
    let used = split + 4 + body.len();
    (Resp { status, headers, body }, used)
}

/// A kept-alive HTTP/1.1 connection: requests one after another, reconnecting when the server
/// closed it (as it does after a 413 or a refused body).
pub struct KeepAlive {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    pub reconnects: u64,
}

impl KeepAlive {
    pub fn new(addr: SocketAddr) -> KeepAlive {
        KeepAlive { addr, stream: None, reconnects: 0 }
    }

    /// Sends one request with a body (`Content-Length`) and reads its response.
    pub fn request(&mut self, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut req = format!("{method} {target} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        if self.stream.is_none() {
            let s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            s.set_nodelay(true).unwrap();
            self.stream = Some(s);
            self.reconnects += 1;
        }
        let s = self.stream.as_mut().unwrap();
        // The server may answer (and close) before it has read a body it refuses: a failed
        // write is not an error as long as the answer comes.
        let _ = s.write_all(&bytes);
        let mut raw = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let resp = loop {
            if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .filter(|_| method != "HEAD")
                    .unwrap_or(0);
                if raw.len() >= end + 4 + len {
                    let mut r = parse_response(&raw).0;
                    r.body.truncate(len);
                    break r;
                }
            }
            match s.read(&mut buf) {
                Ok(0) => panic!("{method} {target}: the connection closed before a whole response"),
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                Err(e) => panic!("{method} {target}: reading the response: {e}"),
            }
        };
        if resp.headers.get("connection").is_some_and(|c| c.eq_ignore_ascii_case("close")) {
            self.stream = None;
        }
        resp
    }
}
