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
//!
//! Resources (no local client can starve the token holder; docs/live-api.md, "Connections and
//! limits"): every connection is a task on a small async runtime, never a thread of its own. Each
//! step has a deadline (request head, body, every write). Connections that are not serving an
//! authenticated request are capped, the oldest evicted first; unauthenticated responses (UI
//! files, 401s) are capped and refused with a small 503 beyond that, before any large body;
//! WebSocket clients are capped, and one that falls behind skips to the latest window or is
//! dropped, never holding up the others. Blocking work runs on a bounded thread pool.
//!
//! Files: the traces of recordings are written in a private (0700) directory of their own and
//! moved into the out directory as 0600 files, whatever the umask and the out directory's mode.

mod bench;
mod http;
mod loops;
#[cfg(test)]
mod protocol_fixture;
mod runs;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use numascope_core::live::LiveSink;
use numascope_core::probe;
use numascope_core::recorder::{
    self, Naming, OptionError, OptionField, RecordError, RecordRequest, RecordSummary, Report, Target,
};
use numascope_core::topology::{self, Roots, Topology};
use serde_json::{json, Value};
use tokio::sync::{watch, Notify, Semaphore};

use self::http::{Body, BodyError, Conn, Framing, Head, HeadError, Resp};
use crate::{CliResult, EXIT_RUNTIME};

const MAX_BODY: u64 = 64 * 1024;
/// Plans and rollback records can list many page ranges.
const MAX_PLAN_BODY: u64 = 16 * 1024 * 1024;
/// Authenticated requests served at once (WebSockets not counted); 503 `busy` beyond.
const MAX_ACTIVE_REQUESTS: usize = 64;
const MAX_RUNNING_RECORDINGS: usize = 4;
/// Live windows kept per recording for late WebSocket subscribers (one minute at 4 Hz).
const KEEP_WINDOWS: usize = 240;

/// Connections not serving an authenticated request (waiting for a request, reading one, or
/// answering one without the token). At the cap the oldest of them is closed to make room, so
/// that a flood of idle or slow connections cannot keep the token holder out.
const MAX_IDLE_CONNECTIONS: usize = 256;
/// Unauthenticated responses (UI files, 401/403s) being written at once; 503 `busy` beyond.
const MAX_UNAUTH_RESPONSES: usize = 32;
/// Open WebSocket clients; 503 `busy` beyond.
const MAX_LIVE_SOCKETS: usize = 128;
/// A request head (request line and headers).
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The first request head on a connection must arrive within this.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// An idle keep-alive connection is closed when no complete request head arrives within this.
const IDLE_TIMEOUT: Duration = Duration::from_secs(15);
/// A request body must arrive within this.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Every write (a response, a WebSocket frame) must make progress within this.
const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(10);
/// A whole unauthenticated response must be written within this, plus a second per
/// `UNAUTH_MIN_BYTES_PER_S` of its body (a UI bundle of 8 MiB: 158 s, enough for a 512 kbit/s
/// forwarded port; a client that trickles cannot hold its slot longer).
const UNAUTH_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
const UNAUTH_MIN_BYTES_PER_S: u64 = 64 * 1024;
/// After an answer to a request whose body was not read, what the client still sends is read
/// and dropped for at most this long before the connection closes.
const LINGER: Duration = Duration::from_secs(2);
/// Kernel send buffer for unauthenticated responses with a file body: what a client that never
/// reads can hold of this server's memory per connection.
const UNAUTH_SNDBUF_BYTES: libc::c_int = 256 * 1024;
/// Kernel send buffer of a WebSocket connection: with the write deadline, what a client that
/// never reads can hold (windows are a few KiB, a few per second).
const LIVE_SNDBUF_BYTES: libc::c_int = 64 * 1024;
/// A WebSocket client more than this many windows behind skips to the latest window.
const WS_MAX_BACKLOG: usize = 16;
/// Largest frame a WebSocket client may send (the server expects none but control frames).
const WS_MAX_CLIENT_FRAME: usize = 64 * 1024;
/// Largest message (all its fragments) a WebSocket client may send.
const WS_MAX_CLIENT_MESSAGE: usize = 64 * 1024;
/// Threads for blocking work (probe, /proc, apply, starting recordings).
const MAX_BLOCKING_THREADS: usize = 16;

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
    /// directory under $TMPDIR). Created 0700 when missing; traces in it are 0600 files.
    #[arg(short = 'o', long = "output", alias = "out-dir", value_name = "DIR")]
    out_dir: Option<PathBuf>,

    /// Print one JSON line on stdout when listening ({"url", "port", "token", "outputDir",
    /// "webDir"}) instead of the bare URL; the other lines stay on stderr.
    #[arg(long = "json")]
    json: bool,
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
    stop: Arc<AtomicBool>,
    inner: Mutex<RecInner>,
    /// Bumped after every new window and at the end: wakes the WebSocket clients.
    wake: watch::Sender<u64>,
}

impl Recording {
    fn notify(&self) {
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// The connections that may be closed to make room (see `MAX_IDLE_CONNECTIONS`), oldest first.
#[derive(Default)]
struct IdleConnections {
    next_id: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<Notify>>>,
}

impl IdleConnections {
    /// Registers a new connection as idle, first closing the oldest idle one when at the cap.
    fn register(&self) -> (u64, Arc<Notify>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Notify::new());
        let mut open = self.open.lock().unwrap();
        while open.len() >= MAX_IDLE_CONNECTIONS {
            match open.pop_first() {
                Some((_, victim)) => victim.notify_one(),
                None => break,
            }
        }
        open.insert(id, evict.clone());
        (id, evict)
    }

    /// Takes the connection off the evictable list (it is serving an authenticated request);
    /// false when it was evicted already.
    fn claim(&self, id: u64) -> bool {
        self.open.lock().unwrap().remove(&id).is_some()
    }

    /// Puts the connection back on the list (its authenticated request is answered).
    fn release(&self, id: u64, evict: &Arc<Notify>) {
        self.open.lock().unwrap().insert(id, evict.clone());
    }

    fn forget(&self, id: u64) {
        self.open.lock().unwrap().remove(&id);
    }
}

struct State {
    token: String,
    port: u16,
    web_dir: Option<PathBuf>,
    out_dir: PathBuf,
    topo: Topology,
    recordings: Mutex<HashMap<String, Arc<Recording>>>,
    order: Mutex<Vec<String>>,
    /// Authenticated requests being served (not WebSockets).
    active: AtomicUsize,
    /// WebSocket clients connected.
    live_sockets: AtomicUsize,
    idle: IdleConnections,
    unauth: Arc<Semaphore>,
    /// `/api/bench` runs (cmd_serve/bench.rs).
    bench: bench::BenchRuns,
    /// `/api/runs`: programs launched with a plan (cmd_serve/runs.rs).
    runs: runs::PlanRuns,
    /// The live loop's state per recording (cmd_serve/loops.rs).
    loops: loops::Loops,
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
            if let Some(warning) =
                prepare_out_dir(d).map_err(|e| (EXIT_RUNTIME, format!("--output {}: {e}", d.display())))?
            {
                eprintln!("numascope: warning: --output {}: {warning}", d.display());
            }
            d.clone()
        }
        None => {
            let d = std::env::temp_dir().join(format!(
                "numascope-serve-{}-{}",
                std::process::id(),
                random_hex(4).unwrap_or_default()
            ));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&d)
                .map_err(|e| (EXIT_RUNTIME, format!("creating {}: {e}", d.display())))?;
            d
        }
    };
    let topo = topology::read_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", args.port))
        .and_then(|l| l.set_nonblocking(true).map(|_| l))
        .map_err(|e| (EXIT_RUNTIME, format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(args.port);
    raise_open_files_limit();
    // Ctrl-C still ends the server at once, but not with NUMA balancing left on or a kdamond left
    // behind by a recording in progress.
    recorder::install_cleanup_on_exit_signals();
    let state = Arc::new(State {
        token,
        port,
        web_dir,
        out_dir,
        topo,
        recordings: Mutex::new(HashMap::new()),
        order: Mutex::new(Vec::new()),
        active: AtomicUsize::new(0),
        live_sockets: AtomicUsize::new(0),
        idle: IdleConnections::default(),
        unauth: Arc::new(Semaphore::new(MAX_UNAUTH_RESPONSES)),
        bench: bench::BenchRuns::default(),
        runs: runs::PlanRuns::default(),
        loops: loops::Loops::default(),
    });
    // Two workers (the connections are I/O, and this is a profiler's helper, not a web farm);
    // blocking work goes to a bounded pool.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_name("serve")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| (EXIT_RUNTIME, format!("starting the server runtime: {e}")))?;
    let listener = {
        let _guard = runtime.enter();
        tokio::net::TcpListener::from_std(listener)
            .map_err(|e| (EXIT_RUNTIME, format!("cannot listen on 127.0.0.1:{port}: {e}")))?
    };
    match &state.web_dir {
        Some(d) => eprintln!("numascope: serving the web UI from {}", d.display()),
        None => eprintln!(
            "numascope: warning: no built web UI found (build apps/web with `npm run build`, or pass --web-dir); serving the API only"
        ),
    }
    eprintln!("numascope: traces of recordings go to {}", state.out_dir.display());
    eprintln!("numascope: listening on 127.0.0.1:{port} only; Ctrl-C stops the server. Open:");
    let url = format!("http://127.0.0.1:{port}/?token={}", state.token);
    if args.json {
        let line = serde_json::json!({
            "url": url,
            "port": port,
            "token": state.token,
            "outputDir": state.out_dir,
            "webDir": state.web_dir,
        });
        println!("{line}");
    } else {
        println!("{url}");
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();

    runtime.block_on(accept_loop(listener, state));
    Ok(())
}

/// Creates `--output` 0700 when it is missing (parents as the umask says); an existing one is
/// used as it is. Answers a warning when other users can list or enter it (the traces in it are
/// 0600 all the same), or when another user owns it.
fn prepare_out_dir(d: &Path) -> Result<Option<String>, String> {
    if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let created = match std::fs::DirBuilder::new().mode(0o700).create(d) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(e.to_string()),
    };
    let meta = std::fs::metadata(d).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a directory".into());
    }
    if created {
        // The umask may have taken bits from 0700 (never added any): make it exactly 0700.
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
        return Ok(None);
    }
    let mut warnings = Vec::new();
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid && euid != 0 {
        warnings
            .push(format!("it belongs to uid {}, not to you: its owner can remove or replace the traces", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        warnings.push(format!(
            "other users can list it (mode {mode:04o}): traces are written 0600, unreadable to them, but their names show; `chmod 700 {}` hides them",
            d.display()
        ));
    }
    Ok((!warnings.is_empty()).then(|| warnings.join("; ")))
}

/// Raises the soft limit on open files to the hard limit (capped at 65536): connections and
/// the recordings' perf events share it.
fn raise_open_files_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to our own struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            let want = lim.rlim_max.min(65_536);
            if lim.rlim_cur < want {
                lim.rlim_cur = want;
                let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
        }
    }
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

fn with_api_headers(r: Resp) -> Resp {
    r.with_header("X-Content-Type-Options", "nosniff")
        .with_header("Cache-Control", "no-store")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
}

fn json_response(status: u16, v: &Value) -> Resp {
    let body = serde_json::to_vec_pretty(v).unwrap_or_default();
    with_api_headers(
        Resp::new(status, Body::Bytes(body)).with_header("Content-Type", "application/json; charset=utf-8"),
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
        E::Unsupported(_) => (422, "kernel-unsupported"),
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
    let set_system_weights = v.get("setSystemWeights").and_then(Value::as_bool).unwrap_or(false);
    let opts = apply::ApplyOptions { dry_run, budget, set_system_weights, ..Default::default() };
    match apply::apply(&plan, &topo, &opts) {
        Ok(out) => json_response(200, &apply_answer(&out.report, (!dry_run).then_some(&out.rollback))),
        Err(e) => apply_error(&e),
    }
}

/// The answer of `POST /api/apply`: the report, and after a real apply the rollback record.
fn apply_answer(
    report: &numascope_core::apply::ApplyReport,
    rollback: Option<&numascope_core::apply::RollbackRecord>,
) -> Value {
    let mut r = serde_json::to_value(report).unwrap_or(Value::Null);
    if let (Some(rb), Some(o)) = (rollback, r.as_object_mut()) {
        o.insert("rollback".into(), serde_json::to_value(rb).unwrap_or(Value::Null));
    }
    r
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
    json_response(status, &error_json(code, message))
}

/// The body of every API error (packages/protocol `apiError`).
fn error_json(code: &str, message: &str) -> Value {
    json!({ "error": { "code": code, "message": message } })
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

/// Refuses a JSON text with a key twice in one object (at any depth), which serde_json would
/// otherwise accept, keeping the last. `Err` names the key and where its second copy is. A text
/// that is not JSON passes (the handler's parse reports that).
fn check_duplicate_keys(body: &[u8]) -> Result<(), String> {
    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

    struct Unique;
    struct UniqueVisitor;
    impl<'de> Deserialize<'de> for Unique {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Unique, D::Error> {
            d.deserialize_any(UniqueVisitor)
        }
    }
    impl<'de> Visitor<'de> for UniqueVisitor {
        type Value = Unique;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_str<E>(self, _: &str) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_unit<E>(self) -> Result<Unique, E> {
            Ok(Unique)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
            while seq.next_element::<Unique>()?.is_some() {}
            Ok(Unique)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if seen.contains(&key) {
                    return Err(de::Error::custom(format!("duplicate key {key:?}")));
                }
                map.next_value::<Unique>()?;
                seen.insert(key);
            }
            Ok(Unique)
        }
    }

    let mut de = serde_json::Deserializer::from_slice(body);
    match Unique::deserialize(&mut de).and_then(|_| de.end()) {
        Err(e) if e.classify() == serde_json::error::Category::Data => Err(e.to_string()),
        _ => Ok(()),
    }
}

fn duplicate_key_error(detail: &str) -> Resp {
    api_error(
        400,
        "duplicate-key",
        &format!("the request body has a {detail}: each key may appear only once in an object"),
    )
}

// ---- connections ------------------------------------------------------------------------------

/// What becomes of a connection after a request.
enum Next {
    /// Ready for the next request.
    KeepAlive,
    Close,
    /// Close, after letting the client finish sending a body that was not read.
    Linger,
}

async fn accept_loop(listener: tokio::net::TcpListener, st: Arc<State>) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                let (id, evict) = st.idle.register();
                let st = st.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = evict.notified() => {}
                        _ = connection(&st, sock, id, &evict) => {}
                    }
                    st.idle.forget(id);
                });
            }
            // Out of file descriptors, or a connection reset before it was accepted: back off a
            // little instead of spinning.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

async fn connection(st: &Arc<State>, sock: tokio::net::TcpStream, id: u64, evict: &Arc<Notify>) {
    let mut conn = Conn::new(sock);
    let mut wait = HEAD_TIMEOUT;
    loop {
        let head = match tokio::time::timeout(wait, conn.read_head(MAX_HEAD_BYTES)).await {
            Ok(Ok(head)) => head,
            Err(_) | Ok(Err(HeadError::Closed)) => return,
            Ok(Err(HeadError::TooLarge)) => {
                let msg =
                    format!("the request head is larger than {} KiB or has too many headers", MAX_HEAD_BYTES / 1024);
                let _ = conn.send(api_error(431, "head-too-large", &msg), false, true, WRITE_STALL_TIMEOUT).await;
                conn.linger_close(LINGER).await;
                return;
            }
            Ok(Err(HeadError::Bad(msg))) => {
                let _ = conn.send(api_error(400, "bad-request", &msg), false, true, WRITE_STALL_TIMEOUT).await;
                conn.linger_close(LINGER).await;
                return;
            }
        };
        wait = IDLE_TIMEOUT;
        match request(st, &mut conn, head, id, evict).await {
            Next::KeepAlive => {}
            Next::Close => return,
            Next::Linger => return conn.linger_close(LINGER).await,
        }
    }
}

/// Whether the token came with the request (`?token=` or `Authorization: Bearer`); `Err` says
/// why not.
fn token_ok(st: &State, head: &Head, query: &str) -> Result<(), &'static str> {
    let bearer = head.header("authorization").and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let given = query_param(query, "token").or(bearer);
    match given {
        Some(t) if same_secret(t, &st.token) => Ok(()),
        Some(_) => Err("wrong token"),
        None => Err("missing token"),
    }
}

async fn request(st: &Arc<State>, conn: &mut Conn, head: Head, id: u64, evict: &Arc<Notify>) -> Next {
    let target = head.target.clone();
    let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
    let is_api = path == "/api" || path.starts_with("/api/");
    // DNS rebinding: a page of another site that resolves to 127.0.0.1 sends its own Host.
    let refusal = if head.header_count("host") > 1 {
        Some(api_error(400, "bad-request", "more than one Host header"))
    } else if let Some(host) = head.header("host").filter(|h| !host_ok(h, st.port)) {
        Some(api_error(
            403,
            "forbidden-host",
            &format!("Host {host:?} is not this server (127.0.0.1:{0} or localhost:{0})", st.port),
        ))
    } else if !is_api {
        None
    } else {
        token_ok(st, &head, query).err().map(|msg| {
            api_error(
                401,
                "unauthorized",
                &format!(
                    "{msg}: every /api/ request needs the token from the URL `numascope serve` printed, as ?token=TOKEN or Authorization: Bearer TOKEN"
                ),
            )
        })
    };
    if refusal.is_some() || !is_api {
        return unauthenticated(st, conn, &head, path, refusal).await;
    }
    // The token holder's request: this connection may not be evicted while it is served.
    if !st.idle.claim(id) {
        return Next::Close;
    }
    let next = authenticated(st, conn, &head, path).await;
    if !matches!(next, Next::Close) {
        st.idle.release(id, evict);
    }
    next
}

/// Answers a request that came without the token (a UI file, or a refusal): one of at most
/// `MAX_UNAUTH_RESPONSES` at once, else a small 503 before anything large is sent; the whole
/// answer within `UNAUTH_RESPONSE_TIMEOUT` plus a second per `UNAUTH_MIN_BYTES_PER_S`. Its
/// body, if any, is never read.
async fn unauthenticated(st: &Arc<State>, conn: &mut Conn, head: &Head, path: &str, refusal: Option<Resp>) -> Next {
    let head_only = head.method == "HEAD";
    let has_body = head.framing() != Ok(Framing::None);
    let Ok(_permit) = st.unauth.clone().try_acquire_owned() else {
        let r = api_error(503, "busy", "too many requests without the token in progress; try again")
            .with_header("Retry-After", "1");
        let _ = conn.send(r, head_only, true, WRITE_STALL_TIMEOUT).await;
        return if has_body { Next::Linger } else { Next::Close };
    };
    let resp = match refusal {
        Some(r) => r,
        None => serve_static(st, &head.method, path),
    };
    if matches!(resp.body, Body::File(..)) && !head_only {
        set_send_buffer(conn, UNAUTH_SNDBUF_BYTES);
    }
    let close = has_body || head.wants_close();
    let body_bytes = if head_only { 0 } else { resp.body.len() };
    let deadline = UNAUTH_RESPONSE_TIMEOUT + Duration::from_secs(body_bytes / UNAUTH_MIN_BYTES_PER_S);
    let sent = tokio::time::timeout(deadline, conn.send(resp, head_only, close, WRITE_STALL_TIMEOUT));
    match sent.await {
        Ok(Ok(())) if has_body => Next::Linger,
        Ok(Ok(())) if !close => Next::KeepAlive,
        _ => Next::Close,
    }
}

fn set_send_buffer(conn: &Conn, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    let fd = conn.wr.as_ref().as_raw_fd();
    // SAFETY: setsockopt on our own open socket with a pointer to a c_int and its size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &bytes as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Decrements a counter when dropped.
struct CountGuard<'a>(&'a AtomicUsize);

impl Drop for CountGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves a request that carries the token.
async fn authenticated(st: &Arc<State>, conn: &mut Conn, head: &Head, path: &str) -> Next {
    let head_only = head.method == "HEAD";
    let origin_refusal = if head.header_count("origin") > 1 {
        Some("more than one Origin header".to_string())
    } else {
        head.header("origin").filter(|o| !origin_ok(o, st.port)).map(|origin| {
            format!(
                "Origin {origin:?} is not this server: only pages from http://127.0.0.1:{0} or http://localhost:{0} may call the API",
                st.port
            )
        })
    };
    let segs: Vec<&str> = path.trim_start_matches("/api").split('/').filter(|s| !s.is_empty()).collect();
    let (resp, body_read) = if let Some(msg) = origin_refusal {
        (api_error(403, "forbidden-origin", &msg), false)
    } else if let (["recordings", id, "live"], "GET") = (segs.as_slice(), head.method.as_str()) {
        match find(st, id) {
            Some(rec) => return live_socket(st, conn, head, rec).await,
            None => (unknown_recording(id), false),
        }
    } else if st.active.fetch_add(1, Ordering::SeqCst) >= MAX_ACTIVE_REQUESTS {
        st.active.fetch_sub(1, Ordering::SeqCst);
        (api_error(503, "busy", "too many requests in progress; try again"), false)
    } else {
        let _active = CountGuard(&st.active);
        route(st, conn, head, path, &segs).await
    };
    let has_body = head.framing() != Ok(Framing::None);
    let unread = has_body && !body_read;
    let close = unread || head.wants_close();
    match conn.send(resp, head_only, close, WRITE_STALL_TIMEOUT).await {
        Ok(()) if unread => Next::Linger,
        Ok(()) if !close => Next::KeepAlive,
        _ => Next::Close,
    }
}

/// Reads a request body of at most `limit` bytes within `BODY_TIMEOUT`; `Err` is the answer.
async fn read_request_body(conn: &mut Conn, head: &Head, limit: u64) -> Result<Vec<u8>, Resp> {
    let too_large = || {
        let size = if limit >= 1024 * 1024 { format!("{} MiB", limit >> 20) } else { format!("{} KiB", limit >> 10) };
        api_error(413, "body-too-large", &format!("the request body is larger than {size}"))
    };
    let framing =
        head.framing().map_err(|e| api_error(400, "bad-request", &format!("the request body cannot be read: {e}")))?;
    match framing {
        Framing::None => return Ok(Vec::new()),
        Framing::Length(n) if n > limit => return Err(too_large()),
        _ => {}
    }
    if head.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        let _ = conn.write_timed(b"HTTP/1.1 100 Continue\r\n\r\n", WRITE_STALL_TIMEOUT).await;
    }
    match tokio::time::timeout(BODY_TIMEOUT, conn.read_body(framing, limit)).await {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(BodyError::TooLarge)) => Err(too_large()),
        Ok(Err(BodyError::Bad(m))) => {
            Err(api_error(400, "bad-request", &format!("could not read the request body: {m}")))
        }
        Ok(Err(BodyError::Io(e))) => {
            Err(api_error(400, "bad-request", &format!("could not read the request body: {e}")))
        }
        Err(_) => Err(api_error(
            408,
            "body-timeout",
            &format!("the request body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
        )),
    }
}

/// Runs blocking work (files, /proc, perf, apply) on the bounded blocking pool.
async fn blocking(f: impl FnOnce() -> Resp + Send + 'static) -> Resp {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|_| api_error(500, "internal", "the request handler failed (see the server's log)"))
}

// ---- dispatch ---------------------------------------------------------------------------------

fn host_ok(host: &str, port: u16) -> bool {
    host == format!("127.0.0.1:{port}") || host == format!("localhost:{port}")
}

fn origin_ok(origin: &str, port: u16) -> bool {
    origin == format!("http://127.0.0.1:{port}") || origin == format!("http://localhost:{port}")
}

/// Routes an authenticated request; answers the response and whether the body was read.
async fn route(st: &Arc<State>, conn: &mut Conn, head: &Head, path: &str, segs: &[&str]) -> (Resp, bool) {
    let method = head.method.as_str();
    let not_allowed = |allow: &str| {
        api_error(405, "method-not-allowed", &format!("{method} is not allowed on {path}; use {allow}"))
            .with_header("Allow", allow)
    };
    if segs.first() == Some(&"bench") {
        return bench::route(st, conn, head, path, segs).await;
    }
    let resp = match (segs, method) {
        (["probe"], "GET") => {
            let st = st.clone();
            blocking(move || {
                let mut topo = st.topo.clone();
                numascope_core::bench::output::describe_calibration(
                    &mut topo,
                    numascope_core::bench::output::cache_dir().as_deref(),
                );
                let p = probe::probe(&topo);
                json_response(200, &serde_json::to_value(&p).unwrap_or(Value::Null))
            })
            .await
        }
        (["topology"], "GET") => {
            // The calibration state at the time of asking: a bench run may have stored one since.
            let mut topo = st.topo.clone();
            numascope_core::bench::output::describe_calibration(
                &mut topo,
                numascope_core::bench::output::cache_dir().as_deref(),
            );
            json_response(200, &serde_json::to_value(topo.machine()).unwrap_or(Value::Null))
        }
        (["processes"], "GET") => blocking(|| json_response(200, &json!({ "processes": list_processes() }))).await,
        (["recordings"], "GET") => {
            let order = st.order.lock().unwrap().clone();
            let recs = st.recordings.lock().unwrap();
            let list: Vec<Value> = order.iter().filter_map(|id| recs.get(id)).map(|r| recording_json(r)).collect();
            json_response(200, &json!({ "recordings": list }))
        }
        (["recordings"], "POST") => {
            let body = match read_request_body(conn, head, MAX_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let st = st.clone();
            return (blocking(move || start_recording(&st, &body)).await, true);
        }
        (["apply"], "POST") | (["rollback"], "POST") => {
            let body = match read_request_body(conn, head, MAX_PLAN_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let apply = segs[0] == "apply";
            let resp = blocking(move || match check_duplicate_keys(&body) {
                Err(detail) => duplicate_key_error(&detail),
                Ok(()) if apply => apply_plan(&body),
                Ok(()) => rollback_record(&body),
            })
            .await;
            return (resp, true);
        }
        (["runs"], "POST") => {
            let body = match read_request_body(conn, head, MAX_PLAN_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let st = st.clone();
            let resp = blocking(move || match check_duplicate_keys(&body) {
                Err(detail) => duplicate_key_error(&detail),
                Ok(()) => runs::start(&st, &body),
            })
            .await;
            return (resp, true);
        }
        (["recordings", id, "loop"], "PUT") => {
            if find(st, id).is_none() {
                return (unknown_recording(id), false);
            }
            let body = match read_request_body(conn, head, loops::MAX_LOOP_BODY).await {
                Ok(b) => b,
                Err(r) => return (r, false),
            };
            let resp = match check_duplicate_keys(&body) {
                Err(detail) => duplicate_key_error(&detail),
                Ok(()) => st.loops.save(id, body),
            };
            return (resp, true);
        }
        (["recordings", id, "loop"], "GET") => match find(st, id) {
            Some(_) => st.loops.get(id),
            None => unknown_recording(id),
        },
        (["loop"], "GET") => st.loops.latest(),
        (["runs"], "GET") => runs::list(st),
        (["runs", id], "GET") => runs::get(st, id),
        (["recordings", id], "GET") => match find(st, id) {
            Some(r) => json_response(200, &recording_json(&r)),
            None => unknown_recording(id),
        },
        (["recordings", id, "stop"], "POST") => match find(st, id) {
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
        (["recordings", id, "trace"], "GET") => match find(st, id) {
            Some(r) => {
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
                                .with_header(
                                    "Content-Disposition",
                                    &format!("attachment; filename=\"numascope-{id}.numascope\""),
                                ),
                        ),
                        Err(e) => api_error(500, "trace-unreadable", &format!("reading the trace of {id}: {e}")),
                    },
                }
            }
            None => unknown_recording(id),
        },
        (["probe"] | ["topology"] | ["processes"], _) => not_allowed("GET"),
        (["recordings"], _) => not_allowed("GET, POST"),
        (["recordings", _] | ["recordings", _, "trace"] | ["recordings", _, "live"], _) => not_allowed("GET"),
        (["recordings", _, "stop"], _) | (["apply"], _) | (["rollback"], _) => not_allowed("POST"),
        (["recordings", _, "loop"], _) => not_allowed("GET, PUT"),
        (["loop"], _) => not_allowed("GET"),
        (["runs"], _) => not_allowed("GET, POST"),
        (["runs", _], _) => not_allowed("GET"),
        _ => api_error(404, "not-found", &format!("no API endpoint {method} {path} (see docs/live-api.md)")),
    };
    (resp, false)
}

fn open_file(p: &Path) -> std::io::Result<(std::fs::File, u64)> {
    let f = std::fs::File::open(p)?;
    let len = f.metadata()?.len();
    Ok((f, len))
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
    if let Err(detail) = check_duplicate_keys(body) {
        return duplicate_key_error(&detail);
    }
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return api_error(400, "bad-json", &format!("the body is not JSON: {e}")),
    };
    let Some(obj) = v.as_object() else {
        return api_error(400, "bad-request", "the body must be a JSON object: {\"pid\": N} or {\"command\": [..]}");
    };
    for k in obj.keys() {
        if !RECORDING_FIELDS.contains(&k.as_str()) {
            return api_error(
                400,
                "bad-request",
                &format!("unknown field {k:?}: the fields are {}", RECORDING_FIELDS.join(", ")),
            );
        }
    }
    let request = match record_request(obj) {
        Ok(r) => r,
        Err(e) => return api_error(400, e.code(), &e.message(Naming::Serve)),
    };
    let duration_s = request.duration_s;
    let mut opts = match request.validate() {
        Ok(o) => o,
        Err(e) => return api_error(400, e.code(), &e.message(Naming::Serve)),
    };
    let target_json = match &opts.target {
        Target::Attach(pid) => {
            let pid = *pid;
            if pid as u32 == std::process::id() {
                return api_error(400, "bad-pid", "numascope serve cannot record itself");
            }
            if !Path::new(&format!("/proc/{pid}")).is_dir() {
                return api_error(404, "pid-not-found", &format!("no process with pid {pid}"));
            }
            json!({ "pid": pid })
        }
        Target::Launch(argv) => {
            if let Err(e) = recorder::resolve_program(&argv[0]) {
                return api_error(400, error_code(&e), &e.to_string());
            }
            json!({ "command": argv })
        }
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
    // The trace is written in a private directory of its own (0700, inside the out directory),
    // then made 0600 and moved into the out directory: never readable by other users, whatever
    // the umask or the out directory's mode (docs/live-api.md, "Files").
    let staging = st.out_dir.join(format!(".{id}.recording"));
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&staging) {
        return api_error(500, "io-error", &format!("creating {}: {e}", staging.display()));
    }
    let final_output = st.out_dir.join(format!("{id}.numascope"));
    let output = staging.join(format!("{id}.numascope"));
    let stop = Arc::new(AtomicBool::new(false));
    let rec = Arc::new(Recording {
        id: id.clone(),
        target: target_json,
        duration_s,
        started_unix_ms: unix_ms(),
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
        wake: watch::Sender::new(0),
    });

    let (tx, rx) = mpsc::channel::<numascope_core::live::LiveWindow>();
    opts.output = output;
    opts.command_line = vec!["numascope".into(), "serve".into(), format!("(recording {id})")];
    opts.stop = Some(stop);
    opts.live = Some(LiveSink::new(tx));

    // The forwarder turns windows into WebSocket messages; it ends when the recorder drops `tx`.
    let fwd_rec = rec.clone();
    let forwarder = std::thread::Builder::new().name(format!("live-{id}")).spawn(move || {
        for w in rx {
            let v = window_message(&fwd_rec.id, &w);
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
            fwd_rec.notify();
        }
    });
    let forwarder = match forwarder {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_dir(&staging);
            return api_error(500, "internal", &format!("cannot start a thread: {e}"));
        }
    };
    let staging2 = staging.clone();
    let topo = st.topo.clone();
    let rec2 = rec.clone();
    let spawned = std::thread::Builder::new().name(format!("record-{id}")).spawn(move || {
        let probe = probe::probe(&topo);
        let result = recorder::record_observed(&opts, &Roots::default(), &topo, &probe, &mut |r| {
            if let Report::Warning(w) = r {
                eprintln!("numascope: warning: {w}");
            }
        });
        drop(opts); // closes the live channel: the forwarder drains it and ends
        let _ = forwarder.join();
        let result = match result {
            Ok(s) => Ok(publish_trace(s, &staging2, &final_output)),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&staging2);
                Err(e)
            }
        };
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
        rec2.notify();
    });
    if let Err(e) = spawned {
        let _ = std::fs::remove_dir(&staging);
        return api_error(500, "internal", &format!("cannot start the recorder thread: {e}"));
    }
    st.recordings.lock().unwrap().insert(id.clone(), rec.clone());
    st.order.lock().unwrap().push(id);
    json_response(201, &recording_json(&rec))
}

/// The fields of a `POST /api/recordings` body (docs/live-api.md).
const RECORDING_FIELDS: [&str; 11] = [
    "pid",
    "command",
    "durationS",
    "intervalMs",
    "faultPeriod",
    "faultRateHz",
    "faultEvent",
    "killOnStop",
    "numaBalancing",
    "allocSites",
    "callStackDepth",
];

/// The record options of a `POST /api/recordings` body. A number or pid of the wrong JSON type
/// becomes a value outside its range (0, NaN) and a command that is not an array of strings an
/// empty one, so that `RecordRequest::validate` reports it, in its order, with the range's message.
fn record_request(obj: &serde_json::Map<String, Value>) -> Result<RecordRequest, OptionError> {
    let given = |k: &str| obj.get(k).filter(|v| !v.is_null());
    let int = |k: &str| given(k).map(|v| v.as_u64().unwrap_or(0));
    let fault_event = match given("faultEvent") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(OptionError::range(OptionField::FaultEvent)),
    };
    let numa_balancing = match given("numaBalancing") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(OptionError::range(OptionField::NumaBalancing)),
    };
    let kill_on_stop = match given("killOnStop") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(OptionError::range(OptionField::KillOnStop)),
    };
    let alloc_sites = match given("allocSites") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(OptionError::range(OptionField::AllocSites)),
    };
    Ok(RecordRequest {
        pid: given("pid").map(|p| p.as_i64().unwrap_or(0)),
        command: given("command").map(|c| {
            c.as_array()
                .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect::<Option<Vec<String>>>())
                .unwrap_or_default()
        }),
        duration_s: given("durationS").map(|d| d.as_f64().unwrap_or(f64::NAN)),
        interval_ms: int("intervalMs"),
        fault_period: int("faultPeriod"),
        fault_rate_hz: int("faultRateHz"),
        call_stack_depth: int("callStackDepth"),
        fault_event,
        numa_balancing,
        kill_on_stop,
        alloc_sites,
        ..Default::default()
    })
}

/// Makes a finished trace 0600 and moves it from its private directory into the out directory.
/// Should that fail, the trace stays where it is (private all the same) and the summary's
/// output and warnings say so.
fn publish_trace(mut s: RecordSummary, staging: &Path, final_output: &Path) -> RecordSummary {
    let written = s.output.clone();
    let moved = std::fs::set_permissions(&written, std::fs::Permissions::from_mode(0o600))
        .and_then(|_| std::fs::rename(&written, final_output));
    match moved {
        Ok(()) => {
            s.output = final_output.to_path_buf();
            let _ = std::fs::remove_dir(staging);
        }
        Err(e) => s.warnings.push(format!(
            "the trace stays at {} (moving it to {} failed: {e})",
            written.display(),
            final_output.display()
        )),
    }
    s
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

/// `GET /api/recordings/:id/live`: upgrades to a WebSocket and streams the recording's windows.
async fn live_socket(st: &Arc<State>, conn: &mut Conn, head: &Head, rec: Arc<Recording>) -> Next {
    let upgrade = head.header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let key = head.header("sec-websocket-key");
    let refusal = match (upgrade, key) {
        (true, Some(_)) if st.live_sockets.fetch_add(1, Ordering::SeqCst) >= MAX_LIVE_SOCKETS => {
            st.live_sockets.fetch_sub(1, Ordering::SeqCst);
            Some(
                api_error(503, "busy", &format!("{MAX_LIVE_SOCKETS} live clients are connected (at most); try again"))
                    .with_header("Retry-After", "1"),
            )
        }
        (true, Some(_)) => None,
        _ => Some(api_error(
            400,
            "websocket-required",
            "this endpoint is a WebSocket: connect with ws://…/live?token=TOKEN (Upgrade: websocket)",
        )),
    };
    if let Some(r) = refusal {
        let unread = head.framing() != Ok(Framing::None);
        let close = unread || head.wants_close();
        return match conn.send(r, false, close, WRITE_STALL_TIMEOUT).await {
            Ok(()) if unread => Next::Linger,
            Ok(()) if !close => Next::KeepAlive,
            _ => Next::Close,
        };
    }
    let _live = CountGuard(&st.live_sockets);
    let accept = tungstenite::handshake::derive_accept_key(key.unwrap_or("").trim().as_bytes());
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let switching = format!(
        "HTTP/1.1 101 Switching Protocols\r\nDate: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n",
        http::http_date(now)
    );
    set_send_buffer(conn, LIVE_SNDBUF_BYTES);
    if conn.write_timed(switching.as_bytes(), WRITE_STALL_TIMEOUT).await.is_ok() {
        stream_windows(conn, &rec).await;
    }
    Next::Close
}

/// Which kept windows a client gets next: it has had every window before `next_seq`, and the
/// ring holds `len` windows from `first_seq`. Answers the index of the first window to send and
/// the client's new `next_seq`. The first round replays every kept window (history for a late
/// subscriber); after that a client more than `WS_MAX_BACKLOG` windows behind gets only the
/// latest one (the windows' totals are cumulative, so the latest says where things stand).
fn windows_to_send(first_seq: u64, len: usize, next_seq: u64, first_round: bool) -> (usize, u64) {
    let from = (next_seq.max(first_seq) - first_seq) as usize;
    let from = from.min(len);
    let from = if !first_round && len - from > WS_MAX_BACKLOG { len - 1 } else { from };
    (from, first_seq + len as u64)
}

/// A live window as the WebSocket's `window` message of recording `id`.
fn window_message(id: &str, w: &numascope_core::live::LiveWindow) -> Value {
    let mut v = serde_json::to_value(w).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert("type".into(), json!("window"));
        m.insert("recording".into(), json!(id));
    }
    v
}

/// The WebSocket's last message: how the recording ended.
fn end_message(id: &str, inner: &RecInner) -> Value {
    json!({
        "type": "end",
        "recording": id,
        "status": inner.status.as_str(),
        "summary": inner.summary,
        "error": inner.error.as_ref().map(|(c, m)| json!({ "code": c, "message": m })),
    })
}

/// Streams the windows, then the end message and a Close frame. Every message must be written
/// within `WRITE_STALL_TIMEOUT`, else the client is dropped; it never holds up the recording or
/// the other clients (they all read the recording's shared ring of windows). The WebSocket
/// protocol after the handshake is tokio-tungstenite's (frames, masking, fragmented messages,
/// UTF-8 of text, pings and the Close reply), with the frame and message limits of
/// [`live_config`]; a client that breaks the protocol gets a Close with the matching code.
async fn stream_windows(conn: &mut Conn, rec: &Recording) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let read_ahead = std::mem::take(&mut conn.buf);
    let io = http::Halves { rd: &mut conn.rd, wr: &mut conn.wr };
    let mut ws = tokio_tungstenite::WebSocketStream::from_partially_read(
        io,
        read_ahead,
        tokio_tungstenite::tungstenite::protocol::Role::Server,
        Some(live_config()),
    )
    .await;
    let mut wake = rec.wake.subscribe();
    let mut next_seq: u64 = 0;
    let mut first_round = true;
    loop {
        wake.mark_unchanged();
        let (msgs, done) = {
            let inner = rec.inner.lock().unwrap();
            let (from, next) = windows_to_send(inner.first_seq, inner.windows.len(), next_seq, first_round);
            next_seq = next;
            let msgs: Vec<Arc<String>> = inner.windows.iter().skip(from).cloned().collect();
            let done = (inner.status != Status::Running).then(|| end_message(&rec.id, &inner).to_string());
            (msgs, done)
        };
        first_round = false;
        for m in msgs.iter().map(|m| m.as_str().to_owned()).chain(done.clone()) {
            match tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.send(Message::text(m))).await {
                Ok(Ok(())) => {}
                _ => return,
            }
        }
        if done.is_some() {
            // The Close, then a moment for the client's answer.
            let _ = tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.send(Message::Close(None))).await;
            let _ = tokio::time::timeout(Duration::from_secs(1), async { while let Some(Ok(_)) = ws.next().await {} })
                .await;
            return;
        }
        tokio::select! {
            changed = wake.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            got = ws.next() => {
                // Pings are answered and a Close is echoed by the library (on the next write or
                // flush: flushed here); data messages are not expected and are dropped.
                let close = match got {
                    None => return,
                    Some(Ok(Message::Close(_))) => {
                        let _ = tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.flush()).await;
                        return;
                    }
                    Some(Ok(_)) => None,
                    Some(Err(e)) => refusal_close(&e),
                };
                match close {
                    None => {
                        if !matches!(tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.flush()).await, Ok(Ok(()))) {
                            return;
                        }
                    }
                    Some(frame) => {
                        let _ = tokio::time::timeout(WRITE_STALL_TIMEOUT, ws.close(Some(frame))).await;
                        return;
                    }
                }
            }
        }
    }
}

/// The live WebSocket's limits: clients send only control frames and small messages.
fn live_config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_frame_size(Some(WS_MAX_CLIENT_FRAME))
        .max_message_size(Some(WS_MAX_CLIENT_MESSAGE))
}

/// The Close frame for a client that broke the protocol (RFC 6455 §7.4.1): 1007 for a text
/// message that is not UTF-8, 1009 for a frame or message over the limits, 1002 otherwise;
/// `None` when the connection is gone (nothing to send).
fn refusal_close(
    e: &tokio_tungstenite::tungstenite::Error,
) -> Option<tokio_tungstenite::tungstenite::protocol::CloseFrame> {
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::Error as E;
    let (code, reason) = match e {
        E::Utf8(_) => (CloseCode::Invalid, "text message is not UTF-8"),
        E::Capacity(_) => (CloseCode::Size, "frame or message too large"),
        E::Protocol(_) => (CloseCode::Protocol, "WebSocket protocol violation"),
        _ => return None,
    };
    Some(tokio_tungstenite::tungstenite::protocol::CloseFrame { code, reason: reason.into() })
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
        out.push((pid, process_json(pid, &name, &command, threads, rss_kib, uid, euid)));
    }
    out.sort_by_key(|(p, _)| *p);
    out.into_iter().map(|(_, v)| v).collect()
}

/// One entry of `GET /api/processes`.
fn process_json(
    pid: i32,
    name: &str,
    command: &[String],
    threads: u64,
    rss_kib: Option<u64>,
    uid: Option<u32>,
    euid: u32,
) -> Value {
    json!({
        "pid": pid,
        "name": name,
        "command": command,
        "threads": threads,
        "rssBytes": rss_kib.map(|k| k * 1024),
        "uid": uid,
        "own": uid == Some(euid) || euid == 0,
    })
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

fn static_error(status: u16, msg: &str) -> Resp {
    let r = Resp::new(status, Body::Bytes(msg.as_bytes().to_vec()));
    static_headers(r, 0).with_header("Content-Type", "text/plain; charset=utf-8")
}

fn static_headers(r: Resp, port: u16) -> Resp {
    let csp = format!(
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; \
         font-src 'self'; worker-src 'self' blob:; connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}; \
         object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    r.with_header("X-Content-Type-Options", "nosniff")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("X-Frame-Options", "DENY")
        .with_header("Cross-Origin-Opener-Policy", "same-origin")
        .with_header("Content-Security-Policy", &csp)
}

fn serve_static(st: &State, method: &str, raw_path: &str) -> Resp {
    if !matches!(method, "GET" | "HEAD") {
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
    // Regular files only (opening a FIFO would wait for a writer).
    let Some((f, len)) = resolved.is_file().then(|| open_file(&resolved).ok()).flatten() else {
        return static_error(404, "not found");
    };
    let cache = if segs.first() == Some(&"assets") { "public, max-age=31536000, immutable" } else { "no-cache" };
    static_headers(Resp::new(200, Body::File(f, len)), st.port)
        .with_header("Content-Type", content_type(&resolved))
        .with_header("Cache-Control", cache)
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

    #[test]
    fn duplicate_keys() {
        assert_eq!(check_duplicate_keys(br#"{"pid":1,"command":["a"]}"#), Ok(()));
        let e = check_duplicate_keys(br#"{"pid":1,"pid":2}"#).unwrap_err();
        assert!(e.starts_with("duplicate key \"pid\" at line 1 column"), "{e}");
        // At any depth, in arrays too; the same key in sibling objects is fine.
        let e = check_duplicate_keys(br#"{"plan":{"pageRanges":[{"start":1},{"start":2,"start":3}]}}"#).unwrap_err();
        assert!(e.contains("\"start\""), "{e}");
        assert_eq!(check_duplicate_keys(br#"[{"a":1},{"a":2}]"#), Ok(()));
        // Escapes are decoded before comparing.
        assert!(check_duplicate_keys(br#"{"pid":1,"p\u0069d":2}"#).is_err());
        // Not JSON, or too deep: left to the handler's own parse (bad-json).
        assert_eq!(check_duplicate_keys(b"{not json"), Ok(()));
        assert_eq!(check_duplicate_keys(&[b'['; 100_000]), Ok(()));
        assert_eq!(check_duplicate_keys(br#"{"a":1} trailing"#), Ok(()));
    }

    #[test]
    fn slow_clients_skip_to_the_latest_window() {
        // First round: the whole kept history, whatever its length.
        assert_eq!(windows_to_send(0, 240, 0, true), (0, 240));
        assert_eq!(windows_to_send(100, 240, 0, true), (0, 340));
        // Later rounds: what is new, while within the backlog.
        assert_eq!(windows_to_send(0, 10, 9, false), (9, 10));
        assert_eq!(windows_to_send(0, 10, 10, false), (10, 10));
        assert_eq!(windows_to_send(0, 30, 30 - WS_MAX_BACKLOG as u64, false), (30 - WS_MAX_BACKLOG, 30));
        // Further behind: the latest window only.
        assert_eq!(windows_to_send(0, 30, 30 - WS_MAX_BACKLOG as u64 - 1, false), (29, 30));
        assert_eq!(windows_to_send(500, 240, 3, false), (239, 740));
    }

    #[test]
    fn idle_connections_are_evicted_oldest_first() {
        let idle = IdleConnections::default();
        let first: Vec<(u64, Arc<Notify>)> = (0..MAX_IDLE_CONNECTIONS).map(|_| idle.register()).collect();
        // An authenticated one is not evictable, and leaves room for one more.
        assert!(idle.claim(first[0].0));
        let _a = idle.register();
        // At the cap: the oldest evictable one (index 1) is told to close and leaves the list.
        let _b = idle.register();
        assert!(!idle.claim(first[1].0));
        assert!(idle.claim(first[2].0));
        idle.release(first[0].0, &first[0].1);
        assert_eq!(idle.open.lock().unwrap().len(), MAX_IDLE_CONNECTIONS);
    }

    #[test]
    fn out_dir_is_created_private() {
        let base = std::env::temp_dir().join(format!("numascope-outdir-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let d = base.join("a/b");
        assert_eq!(prepare_out_dir(&d), Ok(None));
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        // An existing open directory is used, with a warning.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let w = prepare_out_dir(&d).unwrap().expect("a warning");
        assert!(w.contains("0755") && w.contains("0600"), "{w}");
        std::fs::write(base.join("file"), "").unwrap();
        assert!(prepare_out_dir(&base.join("file")).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
