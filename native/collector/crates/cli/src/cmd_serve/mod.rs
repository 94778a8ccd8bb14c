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
//!
//! Files by concern: `connection.rs` (the accept loop, connections, authenticated or not),
//! `auth.rs` (token, `Host`, `Origin`), `routes.rs` (the routing table), `request.rs` (reading a
//! body, blocking work), `respond.rs` (answers and errors), `state.rs` (the server's state),
//! `limits.rs` (sizes, caps, deadlines), `recordings.rs`, `recording_request.rs` and
//! `recording_job.rs` (the recordings: endpoints, the body checked, the job started),
//! `websocket.rs` (their live stream), `apply.rs`, `processes.rs`, `static_files.rs` (the UI),
//! `setup.rs` (directories and limits at start), `ids.rs`; `http.rs` (HTTP/1.1 on a socket),
//! `bench.rs`, `runs.rs`, `loops.rs` (their own endpoints), `protocol_fixture.rs` (a test).

mod apply;
mod auth;
mod bench;
mod connection;
mod http;
mod ids;
mod jobs;
mod limits;
mod loops;
mod processes;
#[cfg(test)]
mod protocol_fixture;
mod recording_job;
mod recording_request;
mod recordings;
mod request;
mod respond;
mod routes;
mod runs;
mod setup;
mod state;
mod static_files;
mod websocket;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use numascope_core::recorder;
use numascope_core::topology;
use tokio::sync::Semaphore;

use self::ids::random_hex;
use self::limits::{MAX_BLOCKING_THREADS, MAX_UNAUTH_RESPONSES};
use self::state::{IdleConnections, State};
use crate::exit::EXIT_RUNTIME;
use crate::CliResult;

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

pub fn cmd_serve(args: ServeArgs) -> CliResult {
    let web_dir = setup::web_dir(args.web_dir.as_deref()).map_err(|e| (EXIT_RUNTIME, e))?;
    let token = random_hex(32).map_err(|e| (EXIT_RUNTIME, format!("reading random bytes for the token: {e}")))?;
    let out_dir = setup::out_dir(args.out_dir.as_deref()).map_err(|e| (EXIT_RUNTIME, e))?;
    let topo = topology::read_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", args.port))
        .and_then(|l| l.set_nonblocking(true).map(|_| l))
        .map_err(|e| (EXIT_RUNTIME, format!("cannot listen on 127.0.0.1:{}: {e}", args.port)))?;
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(args.port);
    setup::raise_open_files_limit();
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
        bench: jobs::BenchRuns::default(),
        runs: jobs::PlanRuns::default(),
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

    runtime.block_on(connection::accept_loop(listener, state));
    Ok(())
}
