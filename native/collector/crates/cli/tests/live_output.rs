//! `numascope record --live-output FILE`: the live windows `numascope serve` streams, written one
//! JSON line each as they come. Contiguous windows, the last one final, and its totals equal to
//! the recording's summary (pages, samples); an unwritable file is refused before recording.

use std::process::Command;

use serde_json::Value;

mod common;
use common::{numascope, testload, Tmp};

#[test]
fn live_windows_are_written_one_json_line_each_and_agree_with_the_summary() {
    let tmp = Tmp::new("live-output");
    let lines = tmp.file("live.jsonl");
    let o = Command::new(numascope())
        .args(["record", "-q", "--json", "--live-output"])
        .arg(&lines)
        .arg("-o")
        .arg(tmp.file("t.numascope"))
        .arg("--")
        .arg(testload())
        .args(["--threads", "2", "--mib", "4", "--seconds", "0.6"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The launched program shares stdout: the summary is the last line.
    let stdout = String::from_utf8_lossy(&o.stdout);
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();

    let text = std::fs::read_to_string(&lines).unwrap();
    let windows: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("one JSON object a line")).collect();
    assert!(windows.len() >= 2, "a 0.6 s recording has windows of 250 ms: {text}");
    for (i, w) in windows.iter().enumerate() {
        assert_eq!(w["seq"], i as u64, "contiguous");
        assert_eq!(w["final"], i + 1 == windows.len(), "only the last is final");
        if i > 0 {
            assert_eq!(w["startUs"], windows[i - 1]["endUs"]);
        }
        assert_eq!(w["pid"], summary["pid"]);
        // One node and no NUMA balancing here: no access source, said as null; no PMU and no
        // uncore counters either: no bandwidth, its source null (both fields always there).
        assert!(w["accesses"].is_array() && w.get("accessSource").is_some(), "{w}");
        assert!(w["bandwidth"].is_array() && w.get("bandwidthSource").is_some(), "{w}");
        if let Some(src) = w["accessSource"].as_str() {
            assert!(["pmu-samples", "hinting-faults"].contains(&src), "{w}");
        }
        assert!(w["bandwidthSource"].is_null() || w["bandwidthSource"] == "uncore", "{w}");
    }
    let last = windows.last().unwrap();
    assert_eq!(last["totals"]["pages"], summary["pages"]);
    assert_eq!(last["totals"]["faults"], summary["samples"]);
}

#[test]
fn an_unwritable_live_output_is_refused_before_recording() {
    let tmp = Tmp::new("live-output-bad");
    let o = Command::new(numascope())
        .args(["record", "-q", "--live-output", "/nonexistent-dir/live.jsonl", "-o"])
        .arg(tmp.file("t.numascope"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--live-output /nonexistent-dir/live.jsonl"), "{err}");
    assert!(!tmp.file("t.numascope").exists(), "nothing recorded");
}
