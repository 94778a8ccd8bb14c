//! `numascope record` embeds the latest `numascope bench` calibration of this machine in the
//! trace's manifest when the cache directory holds one, and says so (stderr and a capture note);
//! with an empty cache directory it embeds nothing. The cache directory is a temp dir
//! (`XDG_CACHE_HOME`), so the user's own calibrations are neither read nor written.

use std::process::Command;

use numascope_core::trace::reader::read_trace;

mod common;
use common::{numascope, testload, Tmp};

fn record(cache: &std::path::Path, out: &std::path::Path) -> std::process::Output {
    let tl = testload();
    Command::new(numascope())
        .args(["record", "-d", "5", "--no-alloc-sites", "-o", out.to_str().unwrap(), "--"])
        .arg(&tl)
        .args(["--threads", "1", "--mib", "1", "--seconds", "0.05"])
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("run numascope record")
}

/// `numascope ARGS` with the cache dir; stdout.
fn cli(cache: &std::path::Path, args: &[&str]) -> String {
    let o = Command::new(numascope()).args(args).env("XDG_CACHE_HOME", cache).output().expect("run numascope");
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// What `topology` (text and JSON) and `probe` say about the calibration (issue 30: one state).
fn calibration_state(cache: &std::path::Path) -> (String, String, String) {
    let text = cli(cache, &["topology"]);
    let line = text.lines().find(|l| l.starts_with("calibration")).expect("a calibration line").to_string();
    let topo: serde_json::Value = serde_json::from_str(&cli(cache, &["topology", "--json"])).unwrap();
    let probe: serde_json::Value = serde_json::from_str(&cli(cache, &["probe", "--json"])).unwrap();
    let bw = probe["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "memory-bandwidth")
        .map(|c| c["reason"].as_str().unwrap().to_string())
        .unwrap();
    (line, topo["provenance"]["latenciesNs"].as_str().unwrap().to_string(), bw)
}

#[test]
fn record_embeds_the_stored_calibration_and_says_so() {
    let tmp = Tmp::new("calembed");
    let cache = tmp.file("cache");
    std::fs::create_dir_all(&cache).unwrap();

    // No calibration stored yet: nothing embedded, nothing said.
    let before = tmp.file("before.numascope");
    let o = record(&cache, &before);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("machine calibration"), "{stderr}");
    let t = read_trace(&before).unwrap().to_trace_data();
    assert!(t.manifest.calibration.is_none());
    assert!(!t.manifest.capture.notes.iter().any(|n| n.contains("calibration")), "{:?}", t.manifest.capture.notes);

    // topology, probe and the recording's machine say that none is stored.
    let (line, lat, bw) = calibration_state(&cache);
    assert!(line.contains("none stored"), "{line}");
    assert!(
        lat.starts_with("unavailable:") && lat.contains("no numascope bench calibration of this machine is stored"),
        "{lat}"
    );
    assert!(bw.contains("no numascope bench calibration of this machine is stored"), "{bw}");
    assert_eq!(t.manifest.machine.provenance.latencies_ns, lat);

    // A quick bench stores this machine's calibration under its fingerprint in the cache dir.
    let b = Command::new(numascope())
        .args(["bench", "--quick", "--json", "--size", "1048576", "--chase-size", "1048576"])
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .expect("run numascope bench");
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let bench: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
    let fingerprint = bench["calibration"]["fingerprint"].as_str().unwrap().to_string();
    let date = bench["calibration"]["date"].as_str().unwrap().to_string();
    let stored = cache.join("numascope/machines").join(format!("{fingerprint}.json"));
    assert!(stored.exists(), "{}", stored.display());

    let after = tmp.file("after.numascope");
    let o = record(&cache, &after);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("machine calibration: embedded this machine's numascope bench calibration of {date}")),
        "{stderr}"
    );
    assert!(stderr.contains(&stored.display().to_string()), "{stderr}");
    let t = read_trace(&after).unwrap().to_trace_data();
    let cal = t.manifest.calibration.as_ref().expect("manifest.calibration");
    // The stored model as it is: same fingerprint, date and measured numbers.
    assert_eq!(cal["calibration"]["fingerprint"], fingerprint.as_str());
    assert_eq!(cal["calibration"]["date"], date.as_str());
    assert_eq!(cal["calibration"]["bandwidthGBps"], bench["calibration"]["bandwidthGBps"]);
    assert_eq!(cal["nodes"].as_array().unwrap().len(), t.manifest.machine.nodes.len());
    assert!(cal["provenance"]["memoryBandwidthGBps"].as_str().unwrap().starts_with("measured:numascope-bench "));
    let note =
        t.manifest.capture.notes.iter().find(|n| n.contains("numascope bench calibration")).expect("capture note");
    assert!(note.contains(&fingerprint) && note.contains(&date), "{note}");

    // topology, probe and the recording's machine now name the same stored calibration.
    let (line, lat, bw) = calibration_state(&cache);
    assert!(
        line.contains(&format!("numascope bench of {date}")) && line.contains(&stored.display().to_string()),
        "{line}"
    );
    assert!(lat.contains(&format!("calibration of {date} has them")), "{lat}");
    assert!(bw.contains(&format!("calibration of {date} has them")), "{bw}");
    assert_eq!(t.manifest.machine.provenance.latencies_ns, lat);

    // A file that is not a calibration is ignored: nothing embedded, nothing said.
    std::fs::write(&stored, "{\"nodes\": []}").unwrap();
    let broken = tmp.file("broken.numascope");
    let o = record(&cache, &broken);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("machine calibration"), "{stderr}");
    assert!(read_trace(&broken).unwrap().to_trace_data().manifest.calibration.is_none());
}
