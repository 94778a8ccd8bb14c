//! Starting a recording from `POST /api/recordings`, in phases: the body checked
//! (cmd_serve/recording_request.rs), room for one more, a private directory for its trace, then
//! two threads of its own: the recorder, and the forwarder that turns its live windows into
//! WebSocket messages. When the recorder ends, the trace is published into the out directory and
//! the recording's status says how it ended.

use std::collections::VecDeque;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use numascope_core::live::{LiveSink, LiveWindow};
use numascope_core::probe;
use numascope_core::recorder::{self, RecordError, RecordOptions, RecordSummary, Report};
use numascope_core::topology::{Roots, Topology};
use serde_json::Value;
use tokio::sync::watch;

use super::http::Resp;
use super::ids::{random_hex, unix_ms};
use super::limits::{KEEP_WINDOWS, MAX_RUNNING_RECORDINGS};
use super::recording_request::{self, error_code, Checked};
use super::recordings::recording_json;
use super::respond::{api_error, json_response};
use super::state::{RecInner, Recording, State, Status};
use super::websocket::window_message;

/// `POST /api/recordings`: answers 201 with the recording started, or why it was not.
pub(super) fn start_recording(st: &State, body: &[u8]) -> Resp {
    start(st, body).unwrap_or_else(|refusal| refusal)
}

fn start(st: &State, body: &[u8]) -> Result<Resp, Resp> {
    let Checked { mut opts, duration_s, target } = recording_request::check(body)?;
    check_room(st)?;
    let id = random_hex(8).map_err(|e| api_error(500, "internal", &format!("random id: {e}")))?;
    let files = TraceFiles::create(&st.out_dir, &id)?;
    let stop = Arc::new(AtomicBool::new(false));
    let rec = new_recording(&id, target, duration_s, stop.clone());

    let (tx, rx) = mpsc::channel::<LiveWindow>();
    opts.output = files.output.clone();
    opts.command_line = vec!["numascope".into(), "serve".into(), format!("(recording {id})")];
    opts.stop = Some(stop);
    opts.live = Some(LiveSink::new(tx));

    let forwarder = match spawn_forwarder(rec.clone(), rx) {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_dir(&files.staging);
            return Err(api_error(500, "internal", &format!("cannot start a thread: {e}")));
        }
    };
    let staging = files.staging.clone();
    if let Err(e) = spawn_recorder(opts, st.topo.clone(), rec.clone(), forwarder, files) {
        let _ = std::fs::remove_dir(&staging);
        return Err(api_error(500, "internal", &format!("cannot start the recorder thread: {e}")));
    }
    st.recordings.lock().unwrap().insert(id.clone(), rec.clone());
    st.order.lock().unwrap().push(id);
    Ok(json_response(201, &recording_json(&rec)))
}

/// At most `MAX_RUNNING_RECORDINGS` run at once; 429 beyond.
fn check_room(st: &State) -> Result<(), Resp> {
    let recs = st.recordings.lock().unwrap();
    let running = recs.values().filter(|r| r.inner.lock().unwrap().status == Status::Running).count();
    if running >= MAX_RUNNING_RECORDINGS {
        return Err(api_error(
            429,
            "too-many-recordings",
            &format!("{running} recordings are running (at most {MAX_RUNNING_RECORDINGS}): stop one first"),
        ));
    }
    Ok(())
}

/// Where a recording's trace is written and where it ends up.
struct TraceFiles {
    /// The recording's private directory (0700, inside the out directory).
    staging: PathBuf,
    /// The trace being written, in `staging`.
    output: PathBuf,
    /// The trace once published, in the out directory.
    final_output: PathBuf,
}

impl TraceFiles {
    /// The trace is written in a private directory of its own (0700, inside the out directory),
    /// then made 0600 and moved into the out directory: never readable by other users, whatever
    /// the umask or the out directory's mode (docs/live-api.md, "Files").
    fn create(out_dir: &Path, id: &str) -> Result<TraceFiles, Resp> {
        let staging = out_dir.join(format!(".{id}.recording"));
        if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&staging) {
            return Err(api_error(500, "io-error", &format!("creating {}: {e}", staging.display())));
        }
        let final_output = out_dir.join(format!("{id}.numascope"));
        let output = staging.join(format!("{id}.numascope"));
        Ok(TraceFiles { staging, output, final_output })
    }
}

/// A recording that has just started: running, no window yet.
fn new_recording(id: &str, target: Value, duration_s: Option<f64>, stop: Arc<AtomicBool>) -> Arc<Recording> {
    Arc::new(Recording {
        id: id.to_string(),
        target,
        duration_s,
        started_unix_ms: unix_ms(),
        stop,
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
    })
}

/// The forwarder turns windows into WebSocket messages kept in the recording's ring (at most
/// `KEEP_WINDOWS`) and wakes the clients; it ends when the recorder drops the channel's sender.
fn spawn_forwarder(rec: Arc<Recording>, rx: mpsc::Receiver<LiveWindow>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(format!("live-{}", rec.id)).spawn(move || {
        for w in rx {
            let v = window_message(&rec.id, &w);
            let msg = Arc::new(v.to_string());
            let mut inner = rec.inner.lock().unwrap();
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
            rec.notify();
        }
    })
}

/// The recorder's thread: records, waits for the forwarder to drain the last windows, publishes
/// the trace (or removes its directory when the recording failed), and says how it ended.
fn spawn_recorder(
    opts: RecordOptions,
    topo: Topology,
    rec: Arc<Recording>,
    forwarder: JoinHandle<()>,
    files: TraceFiles,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(format!("record-{}", rec.id)).spawn(move || {
        let probe = probe::probe(&topo);
        let result = recorder::record_observed(&opts, &Roots::default(), &topo, &probe, &mut |r| {
            if let Report::Warning(w) = r {
                eprintln!("numascope: warning: {w}");
            }
        });
        drop(opts); // closes the live channel: the forwarder drains it and ends
        let _ = forwarder.join();
        let result = match result {
            Ok(s) => Ok(publish_trace(s, &files.staging, &files.final_output)),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&files.staging);
                Err(e)
            }
        };
        finish(&rec, result);
    })
}

/// Records how the recording ended and wakes its WebSocket clients (they send the end message).
fn finish(rec: &Recording, result: Result<RecordSummary, RecordError>) {
    let mut inner = rec.inner.lock().unwrap();
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
    rec.notify();
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
