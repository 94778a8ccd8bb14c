//! `numascope serve`: the built web UI and a live API on 127.0.0.1 (docs/live-api.md).
//!
//! Security model:
//! - The listening socket is bound to 127.0.0.1 only; there is no option to change that.
//! - A fresh random token (256 bits from getrandom, hex) is printed in the URL to open. Every
//!   `/api/` request needs it (`?token=` or `Authorization: Bearer`), else 401.
//! - A request carrying an `Origin` header must come from this server's own origin
//!   (`http://127.0.0.1:PORT` or `http://localhost:PORT`), else 403. The `Host` header, when
//!   present, must name this server too (defeats DNS rebinding), else 403.
//! - Static UI files need no token (they hold no data). They are served with a CSP,
//!   `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` (the token is in the page
//!   URL), no directory listing, and no path outside the web directory (`..`, encoded or not,
//!   hidden files and symlinks leading out are refused).

use std::collections::{HashMap, VecDeque};
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use numascope_core::live::LiveSink;
use numascope_core::probe;
use numascope_core::record::{self, RecordError, RecordOptions, RecordSummary, Target};
use numascope_core::topology::{self, Roots, Topology};
use serde_json::{json, Value};
use tiny_http::{Header, Method, Request, Response, StatusCode};

use crate::{CliResult, EXIT_RUNTIME};

const MAX_BODY: u64 = 64 * 1024;
/// Plans and rollback records can list many page ranges.
const MAX_PLAN_BODY: u64 = 16 * 1024 * 1024;
const MAX_ACTIVE_REQUESTS: usize = 64;
const MAX_RUNNING_RECORDINGS: usize = 4;
/// Live windows kept per recording for late WebSocket subscribers (one minute at 4 Hz).
const KEEP_WINDOWS: usize = 240;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// TCP port on 127.0.0.1 (0: any free port). The server never listens on other addresses.
    #[arg(long, default_value_t = 8737)]
    port: u16,

    /// Directory of the built web UI (apps/web/dist). Default: found next to the binary or in
    /// the repository it was built in.
    #[arg(long, value_name = "DIR")]
    web_dir: Option<PathBuf>,

    /// Directory for the traces of recordings started through the API (default: a new private
    /// directory under $TMPDIR).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

// ---- state ------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Running,
    Finished,
    Failed,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Finished => "finished",
            Status::Failed => "failed",
        }
    }
}

struct RecInner {
    status: Status,
    summary: Option<RecordSummary>,
    error: Option<(String, String)>,
    /// Serialized `window` messages; `first_seq` is the seq of `windows[0]`.
    windows: VecDeque<Arc<String>>,
    first_seq: u64,
    latest: Option<Value>,
    stop_requested: bool,
}

struct Recording {
    id: String,
    target: Value,
    duration_s: Option<f64>,
    started_unix_ms: u64,
    output: PathBuf,
    stop: Arc<AtomicBool>,
    inner: Mutex<RecInner>,
    changed: Condvar,
}

struct State {
    token: String,
    port: u16,
    web_dir: Option<PathBuf>,
    out_dir: PathBuf,
    topo: Topology,
    recordings: Mutex<HashMap<String, Arc<Recording>>>,
    order: Mutex<Vec<String>>,
    active: AtomicUsize,
}

// ---- entry ------------------------------------------------------------------------------------

pub fn cmd_serve(args: ServeArgs) -> CliResult {
    let web_dir = match &args.web_dir {
        Some(d) => {
            let c = d.canonicalize().map_err(|e| (EXIT_RUNTIME, format!("--web-dir {}: {e}", d.display())))?;
            if !c.join("index.html").is_file() {
                return Err((EXIT_RUNTIME, format!("--web-dir {}: no index.html there", d.display())));
            }
            Some(c)
        }
        None => find_web_dir(),
    };
    let token = random_hex(32).map_err(|e| (EXIT_RUNTIME, format!("reading random bytes for the token: {e}")))?;
    let out_dir = match &args.out_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| (EXIT_RUNTIME, format!("--out-dir {}: {e}", d.display())))?;
            d.clone()
        }
        None => {
            let d = std::env::temp_dir().join(format!(
                "numascope-serve-{}-{}",
                std::process::id(),
                random_hex(4).unwrap_or_default()
            ));
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&d)
                .map_err(|e| (EXIT_RUNTIME, format!("creating {}: {e}", d.display())))?;
            d
        }
    };
    let topo = topology::read_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let server = tiny_http::Server::http(("127.0.0.1", args.port))
        .map_err(|e| (EXIT_RUNTIME, format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = server.server_addr().to_ip().map(|a| a.port()).unwrap_or(args.port);
    let state = Arc::new(State {
        token,
        port,
        web_dir,
        out_dir,
        topo,
        recordings: Mutex::new(HashMap::new()),
        order: Mutex::new(Vec::new()),
        active: AtomicUsize::new(0),
    });
    match &state.web_dir {
        Some(d) => eprintln!("numascope: serving the web UI from {}", d.display()),
        None => eprintln!(
            "numascope: warning: no built web UI found (build apps/web with `npm run build`, or pass --web-dir); serving the API only"
        ),
    }
    eprintln!("numascope: traces of recordings go to {}", state.out_dir.display());
    eprintln!("numascope: listening on 127.0.0.1:{port} only; Ctrl-C stops the server. Open:");
    println!("http://127.0.0.1:{port}/?token={}", state.token);
    use std::io::Write;
    let _ = std::io::stdout().flush();

    for req in server.incoming_requests() {
        if state.active.fetch_add(1, Ordering::SeqCst) >= MAX_ACTIVE_REQUESTS {
            state.active.fetch_sub(1, Ordering::SeqCst);
            let _ = req.respond(api_error(503, "busy", "too many requests in progress; try again"));
            continue;
        }
        let st = state.clone();
        let spawned = std::thread::Builder::new().name("serve-request".into()).spawn(move || {
            handle(&st, req);
            st.active.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            state.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// Looks for `apps/web/dist/index.html` above the binary and above the working directory, and
/// for `../share/numascope/web` next to the binary (an installed layout).
fn find_web_dir() -> Option<PathBuf> {
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let share = dir.join("../share/numascope/web");
            if share.join("index.html").is_file() {
                return share.canonicalize().ok();
            }
            starts.push(dir.to_path_buf());
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    for s in starts {
        for dir in s.ancestors() {
            let cand = dir.join("apps/web/dist");
            if cand.join("index.html").is_file() {
                return cand.canonicalize().ok();
            }
        }
    }
    None
}

fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    let mut got = 0;
    while got < bytes {
        // SAFETY: writing into our own buffer, within its length.
        let n = unsafe { libc::getrandom(buf[got..].as_mut_ptr() as *mut libc::c_void, bytes - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // Kernels without getrandom(2): fall back to /dev/urandom.
            std::fs::File::open("/dev/urandom")?.read_exact(&mut buf[got..])?;
            break;
        }
        got += n as usize;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

// ---- responses --------------------------------------------------------------------------------

type Resp = Response<Cursor<Vec<u8>>>;

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

/// Every response has a Content-Length (tiny_http would switch to chunked encoding past 32 KiB).
fn with_api_headers<R: Read>(r: Response<R>) -> Response<R> {
    r.with_chunked_threshold(usize::MAX)
        .with_header(header("X-Content-Type-Options", "nosniff"))
        .with_header(header("Cache-Control", "no-store"))
        .with_header(header("Referrer-Policy", "no-referrer"))
        .with_header(header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"))
}

fn json_response(status: u16, v: &Value) -> Resp {
    let body = serde_json::to_vec_pretty(v).unwrap_or_default();
    with_api_headers(
        Response::from_data(body)
            .with_status_code(StatusCode(status))
            .with_header(header("Content-Type", "application/json; charset=utf-8")),
    )
}

/// Maps an Apply refusal to an HTTP status and a stable error code.
fn apply_error(e: &numascope_core::apply::ApplyError) -> Resp {
    use numascope_core::apply::ApplyError as E;
    let (status, code) = match e {
        E::Plan(p) => return plan_error(p),
        E::WrongMachine(_) => (409, "wrong-machine"),
        E::NoProcess { .. } => (404, "no-process"),
        E::PidReused { .. } => (409, "pid-reused"),
        E::ThreadNotInProcess { .. } => (409, "thread-not-in-process"),
        E::ForeignThread { .. } => (409, "foreign-thread"),
        E::RangeNotMapped { .. } => (409, "range-not-mapped"),
        E::Permission(_) => (403, "permission"),
        E::Io(_) => (500, "io"),
    };
    api_error(status, code, &e.to_string())
}

/// An invalid plan or rollback record: 400, or 413 where it exceeds a documented limit.
fn plan_error(e: &numascope_core::apply::PlanError) -> Resp {
    use numascope_core::apply::PlanErrorKind;
    let record = e.input != "plan";
    let (status, code) = match (e.kind, record) {
        (PlanErrorKind::TooLarge, false) => (413, "plan-too-large"),
        (PlanErrorKind::TooLarge, true) => (413, "record-too-large"),
        (PlanErrorKind::Invalid, false) => (400, "invalid-plan"),
        (PlanErrorKind::Invalid, true) => (400, "invalid-record"),
    };
    api_error(status, code, &e.to_string())
}

/// `POST /api/apply` `{plan, pid, dryRun?, budgetMs?}`: applies a plan (docs/plan-format.md) to
/// the process `pid`, which must be the plan's `target.pid`; answers the report, and for a real
/// apply the rollback record (`rollback`) to send to `POST /api/rollback` to undo it.
fn apply_plan(body: &[u8]) -> Resp {
    use numascope_core::apply;
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return api_error(400, "bad-json", &format!("the request body is not JSON: {e}")),
    };
    let Some(pid) = v.get("pid").and_then(Value::as_i64) else {
        return api_error(400, "bad-request", "field pid (the process to change) is required");
    };
    let Some(plan_v) = v.get("plan") else {
        return api_error(400, "bad-request", "field plan (the plan object) is required");
    };
    let dry_run = v.get("dryRun").and_then(Value::as_bool).unwrap_or(false);
    let budget = v.get("budgetMs").and_then(Value::as_u64).map(Duration::from_millis);
    let topo = match topology::read_topology() {
        Ok(t) => t,
        Err(e) => return api_error(500, "topology", &format!("reading this machine's topology: {e}")),
    };
    let plan = match apply::parse_plan(&plan_v.to_string(), topo.page_size_bytes) {
        Ok(p) => p,
        Err(e) => return plan_error(&e),
    };
    if plan.target.pid as i64 != pid {
        return api_error(
            400,
            "pid-mismatch",
            &format!(
                "the plan targets process {} (target.pid), not {pid}; numascope only touches the process it is given",
                plan.target.pid
            ),
        );
    }
    let opts = apply::ApplyOptions { dry_run, budget, ..Default::default() };
    match apply::apply(&plan, &topo, &opts) {
        Ok(out) => {
            let mut r = serde_json::to_value(&out.report).unwrap_or(Value::Null);
            if let (false, Some(o)) = (dry_run, r.as_object_mut()) {
                o.insert("rollback".into(), serde_json::to_value(&out.rollback).unwrap_or(Value::Null));
            }
            json_response(200, &r)
        }
        Err(e) => apply_error(&e),
    }
}

/// `POST /api/rollback` `{record}`: restores what an apply changed (the `rollback` it answered).
fn rollback_record(body: &[u8]) -> Resp {
    use numascope_core::apply;
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return api_error(400, "bad-json", &format!("the request body is not JSON: {e}")),
    };
    let Some(rec_v) = v.get("record") else {
        return api_error(400, "bad-request", "field record (the rollback record an apply answered) is required");
    };
    let record = match apply::RollbackRecord::parse(&rec_v.to_string()) {
        Ok(r) => r,
        Err(e) => return plan_error(&e),
    };
    let topo = match topology::read_topology() {
        Ok(t) => t,
        Err(e) => return api_error(500, "topology", &format!("reading this machine's topology: {e}")),
    };
    match apply::rollback(&record, &topo, &apply::ApplyOptions::default()) {
        Ok(out) => json_response(200, &serde_json::to_value(&out.report).unwrap_or(Value::Null)),
        Err(e) => apply_error(&e),
    }
}

fn api_error(status: u16, code: &str, message: &str) -> Resp {
    json_response(status, &json!({ "error": { "code": code, "message": message } }))
}

fn get_header(req: &Request, name: &'static str) -> Option<String> {
    req.headers().iter().find(|h| h.field.equiv(name)).map(|h| h.value.as_str().to_string())
}

/// Constant-time comparison (the token must not leak through timing).
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn query_param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| kv.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

// ---- dispatch ---------------------------------------------------------------------------------

fn handle(st: &State, req: Request) {
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
    // DNS rebinding: a page of another site that resolves to 127.0.0.1 sends its own Host.
    if let Some(host) = get_header(&req, "Host") {
        if !host_ok(&host, st.port) {
            let _ = req.respond(api_error(
                403,
                "forbidden-host",
                &format!("Host {host:?} is not this server (127.0.0.1:{0} or localhost:{0})", st.port),
            ));
            return;
        }
    }
    if path == "/api" || path.starts_with("/api/") {
        api(st, req, path, query);
    } else {
        let resp = serve_static(st, &req, path);
        let _ = req.respond(resp);
    }
}

fn host_ok(host: &str, port: u16) -> bool {
    host == format!("127.0.0.1:{port}") || host == format!("localhost:{port}")
}

fn origin_ok(origin: &str, port: u16) -> bool {
    origin == format!("http://127.0.0.1:{port}") || origin == format!("http://localhost:{port}")
}

fn api(st: &State, mut req: Request, path: &str, query: &str) {
    let auth = get_header(&req, "Authorization");
    let bearer = auth.as_deref().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let given = query_param(query, "token").or(bearer);
    if !given.is_some_and(|t| same_secret(t, &st.token)) {
        let msg = if given.is_some() { "wrong token" } else { "missing token" };
        let _ = req.respond(api_error(
            401,
            "unauthorized",
            &format!(
                "{msg}: every /api/ request needs the token from the URL `numascope serve` printed, as ?token=TOKEN or Authorization: Bearer TOKEN"
            ),
        ));
        return;
    }
    if let Some(origin) = get_header(&req, "Origin") {
        if !origin_ok(&origin, st.port) {
            let _ = req.respond(api_error(
                403,
                "forbidden-origin",
                &format!(
                    "Origin {origin:?} is not this server: only pages from http://127.0.0.1:{0} or http://localhost:{0} may call the API",
                    st.port
                ),
            ));
            return;
        }
    }
    let segs: Vec<&str> = path.trim_start_matches("/api").split('/').filter(|s| !s.is_empty()).collect();
    let method = req.method().clone();
    let not_allowed = |allow: &str| {
        api_error(405, "method-not-allowed", &format!("{method} is not allowed on {path}; use {allow}"))
            .with_header(header("Allow", allow))
    };
    let resp = match (segs.as_slice(), &method) {
        (["probe"], Method::Get) => {
            let p = probe::probe(&st.topo);
            json_response(200, &serde_json::to_value(&p).unwrap_or(Value::Null))
        }
        (["topology"], Method::Get) => {
            json_response(200, &serde_json::to_value(st.topo.machine()).unwrap_or(Value::Null))
        }
        (["processes"], Method::Get) => json_response(200, &json!({ "processes": list_processes() })),
        (["recordings"], Method::Get) => {
            let order = st.order.lock().unwrap().clone();
            let recs = st.recordings.lock().unwrap();
            let list: Vec<Value> = order.iter().filter_map(|id| recs.get(id)).map(|r| recording_json(r)).collect();
            json_response(200, &json!({ "recordings": list }))
        }
        (["recordings"], Method::Post) => {
            let mut body = Vec::new();
            let read = req.as_reader().take(MAX_BODY + 1).read_to_end(&mut body);
            if read.is_err() {
                api_error(400, "bad-request", "could not read the request body")
            } else if body.len() as u64 > MAX_BODY {
                api_error(413, "body-too-large", "the request body is larger than 64 KiB")
            } else {
                start_recording(st, &body)
            }
        }
        (["apply"], Method::Post) | (["rollback"], Method::Post) => {
            let mut body = Vec::new();
            let read = req.as_reader().take(MAX_PLAN_BODY + 1).read_to_end(&mut body);
            if read.is_err() {
                api_error(400, "bad-request", "could not read the request body")
            } else if body.len() as u64 > MAX_PLAN_BODY {
                api_error(413, "body-too-large", "the request body is larger than 16 MiB")
            } else if segs[0] == "apply" {
                apply_plan(&body)
            } else {
                rollback_record(&body)
            }
        }
        (["recordings", id], Method::Get) => match find(st, id) {
            Some(r) => json_response(200, &recording_json(&r)),
            None => unknown_recording(id),
        },
        (["recordings", id, "stop"], Method::Post) => match find(st, id) {
            Some(r) => {
                {
                    let mut inner = r.inner.lock().unwrap();
                    if inner.status == Status::Running {
                        inner.stop_requested = true;
                        r.stop.store(true, Ordering::SeqCst);
                    }
                }
                json_response(202, &recording_json(&r))
            }
            None => unknown_recording(id),
        },
        (["recordings", id, "trace"], Method::Get) => match find(st, id) {
            Some(r) => {
                let status = r.inner.lock().unwrap().status;
                match status {
                    Status::Running => api_error(
                        409,
                        "not-finished",
                        &format!("recording {id} is still running: stop it or wait for it to finish"),
                    ),
                    Status::Failed => api_error(409, "no-trace", &format!("recording {id} failed and wrote no trace")),
                    Status::Finished => match std::fs::File::open(&r.output) {
                        Ok(f) => {
                            let resp = with_api_headers(
                                Response::from_file(f)
                                    .with_header(header("Content-Type", "application/zip"))
                                    .with_header(header(
                                        "Content-Disposition",
                                        &format!("attachment; filename=\"numascope-{id}.numascope\""),
                                    )),
                            );
                            let _ = req.respond(resp);
                            return;
                        }
                        Err(e) => api_error(500, "trace-unreadable", &format!("reading the trace of {id}: {e}")),
                    },
                }
            }
            None => unknown_recording(id),
        },
        (["recordings", id, "live"], Method::Get) => match find(st, id) {
            Some(r) => {
                live_socket(req, r);
                return;
            }
            None => unknown_recording(id),
        },
        (["probe"] | ["topology"] | ["processes"], _) => not_allowed("GET"),
        (["recordings"], _) => not_allowed("GET, POST"),
        (["recordings", _] | ["recordings", _, "trace"] | ["recordings", _, "live"], _) => not_allowed("GET"),
        (["recordings", _, "stop"], _) | (["apply"], _) | (["rollback"], _) => not_allowed("POST"),
        _ => api_error(404, "not-found", &format!("no API endpoint {method} {path} (see docs/live-api.md)")),
    };
    let _ = req.respond(resp);
}

fn find(st: &State, id: &str) -> Option<Arc<Recording>> {
    st.recordings.lock().unwrap().get(id).cloned()
}

fn unknown_recording(id: &str) -> Resp {
    let shown: String = id.chars().take(40).collect();
    api_error(404, "unknown-recording", &format!("no recording with id {shown:?}"))
}

fn recording_json(r: &Recording) -> Value {
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

// ---- recordings -------------------------------------------------------------------------------

fn start_recording(st: &State, body: &[u8]) -> Resp {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return api_error(400, "bad-json", &format!("the body is not JSON: {e}")),
    };
    let Some(obj) = v.as_object() else {
        return api_error(400, "bad-request", "the body must be a JSON object: {\"pid\": N} or {\"command\": [..]}");
    };
    for k in obj.keys() {
        if !["pid", "command", "durationS", "intervalMs", "faultPeriod", "faultRateHz", "faultEvent"]
            .contains(&k.as_str())
        {
            return api_error(
                400,
                "bad-request",
                &format!(
                    "unknown field {k:?}: the fields are pid, command, durationS, intervalMs, faultPeriod, faultRateHz, faultEvent"
                ),
            );
        }
    }
    // Page-fault sampling: adaptive by default (record's --fault-rate), or a fixed period.
    let fault_period = match obj.get("faultPeriod") {
        None | Some(Value::Null) => None,
        Some(p) => match p.as_u64() {
            Some(n) if (1..=1_000_000).contains(&n) => Some(n),
            _ => return api_error(400, "bad-fault-period", "faultPeriod must be an integer from 1 to 1000000"),
        },
    };
    let fault_rate = match obj.get("faultRateHz") {
        None | Some(Value::Null) => None,
        Some(p) => match p.as_u64() {
            Some(n) if (100..=1_000_000).contains(&n) => Some(n),
            _ => return api_error(400, "bad-fault-rate", "faultRateHz must be an integer from 100 to 1000000"),
        },
    };
    if fault_period.is_some() && fault_rate.is_some() {
        return api_error(400, "bad-request", "give faultPeriod or faultRateHz, not both");
    }
    // Which event carries the faults (record's --fault-event): auto by default.
    let fault_event: record::FaultEventChoice = match obj.get("faultEvent") {
        None | Some(Value::Null) => record::FaultEventChoice::Auto,
        Some(Value::String(s)) => match s.parse() {
            Ok(c) => c,
            Err(e) => return api_error(400, "bad-fault-event", &format!("faultEvent: {e}")),
        },
        Some(_) => {
            return api_error(400, "bad-fault-event", "faultEvent must be \"auto\", \"software\" or \"tracepoint\"")
        }
    };
    let duration_s = match obj.get("durationS") {
        None | Some(Value::Null) => None,
        Some(d) => match d.as_f64() {
            Some(s) if s > 0.0 && s <= record::MAX_CAPTURE.as_secs_f64() => Some(s),
            _ => {
                return api_error(
                    400,
                    "bad-duration",
                    &format!("durationS must be a number of seconds > 0 and <= {}", record::MAX_CAPTURE.as_secs()),
                )
            }
        },
    };
    let interval_ms = match obj.get("intervalMs") {
        None | Some(Value::Null) => 100,
        Some(i) => match i.as_u64() {
            Some(ms) if (1..=60_000).contains(&ms) => ms,
            _ => return api_error(400, "bad-interval", "intervalMs must be an integer from 1 to 60000"),
        },
    };
    let (target, target_json) = match (obj.get("pid"), obj.get("command")) {
        (Some(p), None) => {
            let Some(pid) = p.as_i64().filter(|&p| p > 0 && p <= i32::MAX as i64) else {
                return api_error(400, "bad-pid", "pid must be a positive integer");
            };
            let pid = pid as i32;
            if pid as u32 == std::process::id() {
                return api_error(400, "bad-pid", "numascope serve cannot record itself");
            }
            if !Path::new(&format!("/proc/{pid}")).is_dir() {
                return api_error(404, "pid-not-found", &format!("no process with pid {pid}"));
            }
            (Target::Attach(pid), json!({ "pid": pid }))
        }
        (None, Some(c)) => {
            let argv: Option<Vec<String>> =
                c.as_array().and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect());
            let Some(argv) = argv.filter(|a| !a.is_empty() && !a[0].is_empty()) else {
                return api_error(400, "bad-command", "command must be a non-empty array of strings (argv)");
            };
            if let Err(e) = record::resolve_program(&argv[0]) {
                return api_error(400, error_code(&e), &e.to_string());
            }
            (Target::Launch(argv.clone()), json!({ "command": argv }))
        }
        (Some(_), Some(_)) => return api_error(400, "bad-request", "give either pid or command, not both"),
        (None, None) => return api_error(400, "bad-request", "nothing to record: give pid or command"),
    };
    {
        let recs = st.recordings.lock().unwrap();
        let running = recs.values().filter(|r| r.inner.lock().unwrap().status == Status::Running).count();
        if running >= MAX_RUNNING_RECORDINGS {
            return api_error(
                429,
                "too-many-recordings",
                &format!("{running} recordings are running (at most {MAX_RUNNING_RECORDINGS}): stop one first"),
            );
        }
    }
    let id = match random_hex(8) {
        Ok(id) => id,
        Err(e) => return api_error(500, "internal", &format!("random id: {e}")),
    };
    let output = st.out_dir.join(format!("{id}.numascope"));
    let stop = Arc::new(AtomicBool::new(false));
    let rec = Arc::new(Recording {
        id: id.clone(),
        target: target_json,
        duration_s,
        started_unix_ms: unix_ms(),
        output: output.clone(),
        stop: stop.clone(),
        inner: Mutex::new(RecInner {
            status: Status::Running,
            summary: None,
            error: None,
            windows: VecDeque::new(),
            first_seq: 0,
            latest: None,
            stop_requested: false,
        }),
        changed: Condvar::new(),
    });

    let (tx, rx) = mpsc::channel::<numascope_core::live::LiveWindow>();
    let mut opts = RecordOptions::new(target, output);
    opts.duration = duration_s.map(Duration::from_secs_f64);
    opts.interval = Duration::from_millis(interval_ms);
    opts.command_line = vec!["numascope".into(), "serve".into(), format!("(recording {id})")];
    opts.stop = Some(stop);
    opts.live = Some(LiveSink::new(tx));
    if let Some(n) = fault_period {
        opts.fault_period = n;
        opts.fault_rate_hz = 0;
    }
    if let Some(hz) = fault_rate {
        opts.fault_rate_hz = hz;
    }
    opts.fault_event = fault_event;

    // The forwarder turns windows into WebSocket messages; it ends when the recorder drops `tx`.
    let fwd_rec = rec.clone();
    let forwarder = std::thread::Builder::new().name(format!("live-{id}")).spawn(move || {
        for w in rx {
            let mut v = serde_json::to_value(&w).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut v {
                m.insert("type".into(), json!("window"));
                m.insert("recording".into(), json!(fwd_rec.id));
            }
            let msg = Arc::new(v.to_string());
            let mut inner = fwd_rec.inner.lock().unwrap();
            if inner.windows.is_empty() {
                inner.first_seq = w.seq;
            }
            inner.windows.push_back(msg);
            while inner.windows.len() > KEEP_WINDOWS {
                inner.windows.pop_front();
                inner.first_seq += 1;
            }
            inner.latest = Some(v);
            drop(inner);
            fwd_rec.changed.notify_all();
        }
    });
    let forwarder = match forwarder {
        Ok(f) => f,
        Err(e) => return api_error(500, "internal", &format!("cannot start a thread: {e}")),
    };
    let topo = st.topo.clone();
    let rec2 = rec.clone();
    let spawned = std::thread::Builder::new().name(format!("record-{id}")).spawn(move || {
        let probe = probe::probe(&topo);
        let result = record::record_with(&opts, &Roots::default(), &topo, &probe);
        drop(opts); // closes the live channel: the forwarder drains it and ends
        let _ = forwarder.join();
        let mut inner = rec2.inner.lock().unwrap();
        match result {
            Ok(s) => {
                inner.status = Status::Finished;
                inner.summary = Some(s);
            }
            Err(e) => {
                inner.status = Status::Failed;
                inner.error = Some((error_code(&e).into(), e.to_string()));
            }
        }
        drop(inner);
        rec2.changed.notify_all();
    });
    if let Err(e) = spawned {
        return api_error(500, "internal", &format!("cannot start the recorder thread: {e}"));
    }
    st.recordings.lock().unwrap().insert(id.clone(), rec.clone());
    st.order.lock().unwrap().push(id);
    json_response(201, &recording_json(&rec))
}

fn error_code(e: &RecordError) -> &'static str {
    match e {
        RecordError::PidNotFound(_) => "pid-not-found",
        RecordError::CommandNotFound(_) => "command-not-found",
        RecordError::Exec { .. } => "exec-failed",
        RecordError::Permission(_) => "permission-denied",
        RecordError::Usage(_) => "bad-request",
        RecordError::Io(_) => "io-error",
        RecordError::Trace(_) => "trace-write-failed",
    }
}

// ---- WebSocket --------------------------------------------------------------------------------

fn live_socket(req: Request, rec: Arc<Recording>) {
    let upgrade = get_header(&req, "Upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let key = get_header(&req, "Sec-WebSocket-Key");
    let (true, Some(key)) = (upgrade, key) else {
        let _ = req.respond(api_error(
            400,
            "websocket-required",
            "this endpoint is a WebSocket: connect with ws://…/live?token=TOKEN (Upgrade: websocket)",
        ));
        return;
    };
    let accept = tungstenite::handshake::derive_accept_key(key.trim().as_bytes());
    let resp = Response::new_empty(StatusCode(101))
        .with_header(header("Upgrade", "websocket"))
        .with_header(header("Connection", "Upgrade"))
        .with_header(header("Sec-WebSocket-Accept", &accept));
    let stream = req.upgrade("websocket", resp);
    let mut ws = tungstenite::WebSocket::from_raw_socket(stream, tungstenite::protocol::Role::Server, None);
    let mut next_seq: u64 = 0;
    loop {
        let (msgs, done) = {
            let mut inner = rec.inner.lock().unwrap();
            loop {
                let have_new = next_seq < inner.first_seq + inner.windows.len() as u64;
                if have_new || inner.status != Status::Running {
                    break;
                }
                inner = rec.changed.wait_timeout(inner, Duration::from_secs(1)).unwrap().0;
            }
            next_seq = next_seq.max(inner.first_seq);
            let skip = (next_seq - inner.first_seq) as usize;
            let msgs: Vec<Arc<String>> = inner.windows.iter().skip(skip).cloned().collect();
            next_seq += msgs.len() as u64;
            let done = (inner.status != Status::Running).then(|| {
                json!({
                    "type": "end",
                    "recording": rec.id,
                    "status": inner.status.as_str(),
                    "summary": inner.summary,
                    "error": inner.error.as_ref().map(|(c, m)| json!({ "code": c, "message": m })),
                })
                .to_string()
            });
            (msgs, done)
        };
        for m in msgs {
            if ws.send(tungstenite::Message::text(m.as_str())).is_err() {
                return;
            }
        }
        if let Some(end) = done {
            let _ = ws.send(tungstenite::Message::text(end));
            let _ = ws.close(None);
            let _ = ws.flush();
            return;
        }
    }
}

// ---- processes --------------------------------------------------------------------------------

fn list_processes() -> Vec<Value> {
    let euid = unsafe { libc::geteuid() };
    let mut out: Vec<(i32, Value)> = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else { continue };
        let field = |k: &str| status.lines().find_map(|l| l.strip_prefix(k)).map(str::trim);
        let name = field("Name:").unwrap_or("").to_string();
        let threads: u64 = field("Threads:").and_then(|v| v.parse().ok()).unwrap_or(0);
        let rss_kib: Option<u64> =
            field("VmRSS:").and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok());
        let uid: Option<u32> = field("Uid:").and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok());
        let command = numascope_core::procfs::read_cmdline(Path::new("/proc"), pid).unwrap_or_default();
        out.push((
            pid,
            json!({
                "pid": pid,
                "name": name,
                "command": command,
                "threads": threads,
                "rssBytes": rss_kib.map(|k| k * 1024),
                "uid": uid,
                "own": uid == Some(euid) || euid == 0,
            }),
        ));
    }
    out.sort_by_key(|(p, _)| *p);
    out.into_iter().map(|(_, v)| v).collect()
}

// ---- static files -----------------------------------------------------------------------------

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "wasm" => "application/wasm",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn static_error(status: u16, msg: &str) -> Response<Box<dyn Read + Send>> {
    let r = Response::from_string(msg.to_string()).with_status_code(StatusCode(status));
    static_headers(r, 0).with_header(header("Content-Type", "text/plain; charset=utf-8")).boxed()
}

fn static_headers<R: Read>(r: Response<R>, port: u16) -> Response<R> {
    let csp = format!(
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; \
         font-src 'self'; worker-src 'self' blob:; connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}; \
         object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    r.with_chunked_threshold(usize::MAX)
        .with_header(header("X-Content-Type-Options", "nosniff"))
        .with_header(header("Referrer-Policy", "no-referrer"))
        .with_header(header("X-Frame-Options", "DENY"))
        .with_header(header("Cross-Origin-Opener-Policy", "same-origin"))
        .with_header(header("Content-Security-Policy", &csp))
}

fn serve_static(st: &State, req: &Request, raw_path: &str) -> Response<Box<dyn Read + Send>> {
    if !matches!(req.method(), Method::Get | Method::Head) {
        return static_error(405, "only GET and HEAD are allowed for UI files");
    }
    let Some(root) = &st.web_dir else {
        return static_error(
            404,
            "the web UI is not built here: run `npm run build` in apps/web, or start numascope serve with --web-dir DIR",
        );
    };
    let Some(path) = percent_decode(raw_path) else {
        return static_error(400, "bad path encoding");
    };
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if path.contains('\0') || path.contains('\\') || segs.iter().any(|s| *s == ".." || s.starts_with('.')) {
        return static_error(400, "path refused: no '..', hidden files or backslashes");
    }
    let mut file = root.clone();
    for s in &segs {
        file.push(s);
    }
    let mut resolved = file.canonicalize().ok();
    // Client-side routes (no file extension) get the app's index.html.
    if resolved.is_none() && segs.last().is_some_and(|s| !s.contains('.')) {
        resolved = root.join("index.html").canonicalize().ok();
    }
    let Some(mut resolved) = resolved else {
        return static_error(404, "not found");
    };
    if !resolved.starts_with(root) {
        return static_error(404, "not found");
    }
    if resolved.is_dir() {
        resolved.push("index.html");
        if !resolved.is_file() {
            return static_error(404, "not found (directories are not listed)");
        }
    }
    let Ok(f) = std::fs::File::open(&resolved) else {
        return static_error(404, "not found");
    };
    let cache = if segs.first() == Some(&"assets") { "public, max-age=31536000, immutable" } else { "no-cache" };
    static_headers(Response::from_file(f), st.port)
        .with_header(header("Content-Type", content_type(&resolved)))
        .with_header(header("Cache-Control", cache))
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_and_origins() {
        assert_eq!(percent_decode("/a%2e%2E/b").as_deref(), Some("/a../b"));
        assert_eq!(percent_decode("/%zz"), None);
        assert_eq!(percent_decode("/%2"), None);
        assert!(origin_ok("http://127.0.0.1:80", 80));
        assert!(origin_ok("http://localhost:80", 80));
        assert!(!origin_ok("http://localhost:81", 80));
        assert!(!origin_ok("https://127.0.0.1:80", 80));
        assert!(!origin_ok("null", 80));
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("abc", "ab"));
        assert_eq!(query_param("a=1&token=xyz", "token"), Some("xyz"));
        assert_eq!(query_param("tokenx=1", "token"), None);
        assert_eq!(random_hex(32).unwrap().len(), 64);
    }
}
