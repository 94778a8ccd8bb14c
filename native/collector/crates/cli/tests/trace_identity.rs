//! Trace format v4's identity fields, end to end: a recording carries this host's name and a
//! fresh random trace id; an import the perf.data file's host and an id that is the same each
//! time the same file is imported; `numascope export` files the trace under both.

use std::path::Path;
use std::process::{Command, Output};

use numascope_core::trace::reader::read_trace;
use numascope_core::trace::Manifest;

mod common;
mod import_harness;
use common::{numascope, testload, Tmp};

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(numascope()).args(args).output().expect("run numascope")
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "status {:?}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn manifest(path: &Path) -> Manifest {
    read_trace(path).expect("the trace reads back").manifest
}

fn is_trace_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn record(out: &Path) -> Manifest {
    let tl = testload();
    ok(run(&[
        "record".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
        "--".as_ref(),
        tl.as_os_str(),
        "--threads".as_ref(),
        "1".as_ref(),
        "--mib".as_ref(),
        "1".as_ref(),
        "--seconds".as_ref(),
        "0.05".as_ref(),
    ]));
    manifest(out)
}

#[test]
fn a_recording_names_its_host_and_gets_a_fresh_trace_id() {
    let tmp = Tmp::new("identity-record");
    let (a, b) = (tmp.file("a.numascope"), tmp.file("b.numascope"));
    let (ma, mb) = (record(&a), record(&b));
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    assert_eq!(ma.version, 4);
    assert_eq!(ma.host.as_deref(), Some(host.as_str()));
    let (ia, ib) = (ma.trace_id.expect("a trace id"), mb.trace_id.expect("a trace id"));
    assert!(is_trace_id(&ia) && is_trace_id(&ib), "{ia} {ib}");
    assert_ne!(ia, ib, "two recordings, two ids");

    // export files the trace under the manifest's id and host.
    let dir = tmp.file("dataset");
    ok(run(&["export".as_ref(), a.as_os_str(), "-o".as_ref(), dir.as_os_str(), "-q".as_ref()]));
    let threads = dir.join("threads").join(format!("host={host}"));
    let dates: Vec<_> = std::fs::read_dir(&threads).expect("the host's partition").flatten().collect();
    assert_eq!(dates.len(), 1);
    assert!(dates[0].path().join(format!("{ia}.parquet")).is_file(), "{:?} holds no {ia}.parquet", dates[0].path());
}

#[test]
fn an_import_keeps_the_files_host_and_the_same_id_each_time() {
    let tmp = Tmp::new("identity-import");
    let src = import_harness::perfdata_dir().join(import_harness::IVB);
    let mut ids = Vec::new();
    for name in ["a.numascope", "b.numascope"] {
        let out = tmp.file(name);
        ok(run(&["import".as_ref(), src.as_os_str(), "-o".as_ref(), out.as_os_str()]));
        let m = manifest(&out);
        assert_eq!(m.version, 4);
        assert!(m.host.as_deref().is_some_and(|h| !h.is_empty()), "the perf.data HOSTNAME header: {:?}", m.host);
        ids.push(m.trace_id.expect("a trace id"));
    }
    assert!(is_trace_id(&ids[0]), "{}", ids[0]);
    assert_eq!(ids[0], ids[1], "the same file imports to the same id");
}

/// A perf.data file without one memory sample (a `cycles` profile) imports with exit 0, the
/// machine and threads kept, and says plainly, on stderr and in `--json`, that it holds nothing
/// to analyse and how to record a file that does (issue 35).
#[test]
fn a_cycles_profile_imports_with_a_warning_that_it_has_no_memory_samples() {
    let tmp = Tmp::new("identity-cycles");
    let src = import_harness::perfdata_dir().join(import_harness::SNB);
    let out = tmp.file("snb.numascope");
    let o = ok(run(&["import".as_ref(), src.as_os_str(), "-o".as_ref(), out.as_os_str(), "--json".as_ref()]));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("holds no memory-access samples") && stderr.contains("perf mem record"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["samples"], 0);
    assert!(v["totalSamples"].as_u64().unwrap() > 0, "{v}");
    assert!(v["warning"].as_str().is_some_and(|w| w.contains("no memory-access samples")), "{v}");
    assert_eq!(manifest(&out).capture.sample_count, 0);
}
