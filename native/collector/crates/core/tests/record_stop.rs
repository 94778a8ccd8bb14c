//! Stopping a recording of a launched command, in-process (as `numascope serve` and the Node
//! binding record): by default the command is left running, in its own process group, not
//! stopped, and reaped by the recorder when it exits later (no zombie); with `kill_on_stop` it is
//! terminated. Also `--numa-balancing on`: the sysctl is restored after the recording (as root).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use numascope_core::recorder::{self, RecordRequest};
use numascope_core::trace::reader::read_trace;

mod common;
use common::TempDir;

/// The state letter of /proc/PID/stat (R, S, T, Z, …); None when the pid is gone.
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

/// Waits until /proc/PID is gone (reaped); false after `limit`.
fn gone_within(pid: i32, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if state(pid).is_none() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn request(out: &Path, command: &[&str]) -> RecordRequest {
    RecordRequest {
        command: Some(command.iter().map(|s| s.to_string()).collect()),
        output: out.to_path_buf(),
        interval_ms: Some(50),
        counters: Some("off".into()),
        uncore: Some(false),
        mem_sampling: Some(false),
        ..Default::default()
    }
}

#[test]
fn a_launched_command_is_left_running_and_reaped_when_it_exits() {
    let tmp = TempDir::new("stop-detach");
    let out = tmp.0.join("detach.numascope");
    let opts = RecordRequest { duration_s: Some(0.5), ..request(&out, &["sleep", "30"]) }.validate().unwrap();
    let s = recorder::record(&opts).unwrap();
    let pid = s.pid;
    assert_eq!(s.stop_reason, "duration");
    assert!(s.left_running, "left running by default");
    assert_eq!(s.exit_code, None);
    let st = state(pid).expect("still alive after the recording stopped");
    assert!(st == 'S' || st == 'R', "running, not stopped: state {st}");
    // SAFETY: getpgid on a pid.
    assert_eq!(unsafe { libc::getpgid(pid) }, pid, "in a process group of its own (Ctrl-C does not reach it)");
    let m = read_trace(&out).unwrap().to_trace_data().manifest;
    let p = m.process.unwrap();
    assert_eq!((p.left_running, p.exit_code, p.attached), (Some(true), None, false));
    assert!(
        m.capture
            .notes
            .iter()
            .any(|n| n.contains(&format!("(pid {pid}) was still running")) && n.contains("left it running")),
        "{:?}",
        m.capture.notes
    );
    assert!(!m.capture.notes.iter().any(|n| n.contains("SIGTERM")), "{:?}", m.capture.notes);

    // It exits later: the recorder's reaper thread reaps it (no zombie left in this process).
    // SAFETY: signalling the child this test launched.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(gone_within(pid, Duration::from_secs(5)), "pid {pid} not reaped: state {:?}", state(pid));
}

#[test]
fn a_stop_request_leaves_the_command_running_too() {
    let tmp = TempDir::new("stop-flag");
    let out = tmp.0.join("flag.numascope");
    let mut opts = request(&out, &["sleep", "30"]).validate().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    opts.stop = Some(stop.clone());
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        stop.store(true, Ordering::SeqCst);
    });
    let s = recorder::record(&opts).unwrap();
    stopper.join().unwrap();
    assert_eq!((s.stop_reason.as_str(), s.left_running), ("signal", true));
    assert!(matches!(state(s.pid), Some('S') | Some('R')), "state {:?}", state(s.pid));
    // SAFETY: as above.
    unsafe { libc::kill(s.pid, libc::SIGKILL) };
    assert!(gone_within(s.pid, Duration::from_secs(5)), "pid {} not reaped", s.pid);
}

#[test]
fn kill_on_stop_terminates_the_command() {
    let tmp = TempDir::new("stop-kill");
    let out = tmp.0.join("kill.numascope");
    let opts = RecordRequest { duration_s: Some(0.5), kill_on_stop: Some(true), ..request(&out, &["sleep", "30"]) }
        .validate()
        .unwrap();
    let s = recorder::record(&opts).unwrap();
    assert!(!s.left_running);
    assert_eq!(state(s.pid), None, "terminated and reaped before record() returned");
    let m = read_trace(&out).unwrap().to_trace_data().manifest;
    assert_eq!(m.process.unwrap().left_running, Some(false));
    assert!(m.capture.notes.iter().any(|n| n.contains("sent it SIGTERM")), "{:?}", m.capture.notes);
}

#[test]
fn a_command_that_exits_by_itself_is_not_left_running() {
    let tmp = TempDir::new("stop-exit");
    let out = tmp.0.join("exit.numascope");
    let opts = RecordRequest { duration_s: Some(10.0), ..request(&out, &["true"]) }.validate().unwrap();
    let s = recorder::record(&opts).unwrap();
    assert_eq!((s.stop_reason.as_str(), s.left_running, s.exit_code), ("process-exit", false, Some(0)));
}

/// As root: `--numa-balancing on` switches the sysctl on for the recording and restores it.
#[test]
fn numa_balancing_is_restored_after_the_recording() {
    let sysctl = Path::new("/proc/sys/kernel/numa_balancing");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !sysctl.exists() {
        numascope_testsupport::skip_outside_ci(format_args!(
            "numa_balancing_is_restored_after_the_recording: needs root and {}",
            sysctl.display()
        ));
        return;
    }
    let before = std::fs::read_to_string(sysctl).unwrap();
    let tmp = TempDir::new("stop-balancing");
    let out = tmp.0.join("balancing.numascope");
    let opts = RecordRequest {
        duration_s: Some(0.5),
        numa_balancing: Some("on".into()),
        kill_on_stop: Some(true),
        ..request(&out, &["sleep", "30"])
    }
    .validate()
    .unwrap();
    let s = recorder::record(&opts).unwrap();
    assert_eq!(std::fs::read_to_string(sysctl).unwrap(), before, "numa_balancing restored");
    let m = read_trace(&out).unwrap().to_trace_data().manifest;
    let notes = m.capture.notes.join("\n");
    if before.trim().parse::<u32>().unwrap() & 1 == 0 {
        assert!(notes.contains("switched on for this recording"), "{notes}");
        assert!(
            notes.contains(&format!("restored to {}", before.trim()))
                || notes.contains("another recording still held it on"),
            "{notes}"
        );
    } else {
        assert!(notes.contains("already on"), "{notes}");
    }
    let pf = m.capture.sources.iter().find(|x| x.id == "page-faults").unwrap();
    if pf.status == "used" && pf.reason.as_deref().unwrap_or("").contains("tracepoint") {
        assert!(pf.reason.as_deref().unwrap().contains("--numa-balancing on"), "{:?}", pf.reason);
    }
    if s.samples > 0 {
        assert!(notes.contains("hinting faults"), "{notes}");
    }
}
