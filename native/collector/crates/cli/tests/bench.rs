//! `numascope bench --quick --json` on this machine, with small sizes.

use std::process::Command;

fn bin() -> String {
    env!("CARGO_BIN_EXE_numascope").to_string()
}

fn positive(v: &serde_json::Value) -> bool {
    v.as_f64().is_some_and(|x| x.is_finite() && x > 0.0)
}

#[test]
fn quick_json_run_gives_a_machine_with_measured_numbers() {
    let cache = std::env::temp_dir().join(format!("numascope-bench-test-{}", std::process::id()));
    let out = Command::new(bin())
        .args(["bench", "--quick", "--json", "--size", "1048576", "--chase-size", "1048576"])
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .expect("run numascope bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("step 1 of"), "progress on stderr: {stderr}");
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let n = m["nodes"].as_array().expect("nodes").len();
    assert!(n >= 1);
    let cal = &m["calibration"];
    assert_eq!(cal["partial"], false);
    assert_eq!(cal["tool"], "numascope-bench");
    for (c, node) in m["nodes"].as_array().unwrap().iter().enumerate() {
        assert!(positive(&node["memoryBandwidthGBps"]), "node {c}: {}", node["memoryBandwidthGBps"]);
        if node["cpus"].as_array().unwrap().is_empty() {
            continue;
        }
        for mem in 0..n {
            for k in ["copy", "triad"] {
                let s = &cal["bandwidthGBps"][k][c][mem];
                assert!(positive(&s["value"]) && positive(&s["min"]) && positive(&s["max"]), "{k} {c}->{mem}: {s}");
            }
            assert!(positive(&cal["latencyNs"][c][mem]["value"]));
            assert!(positive(&m["latenciesNs"][c][mem]));
        }
    }
    let curves = cal["loadedLatency"].as_array().unwrap();
    assert_eq!(curves.len(), n);
    assert!(curves.iter().all(|c| c["points"].as_array().unwrap().iter().all(|p| positive(&p["latencyNs"]))));
    assert!(m["provenance"]["memoryBandwidthGBps"].as_str().unwrap().starts_with("measured:numascope-bench "));
    // Stored under the machine's fingerprint.
    let stored = cache.join("numascope/machines").join(format!("{}.json", cal["fingerprint"].as_str().unwrap()));
    assert!(stored.exists(), "{}", stored.display());
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn sizes_beyond_memory_are_refused_with_a_usage_error() {
    let out =
        Command::new(bin()).args(["bench", "--quick", "--size", "1125899906842624", "--no-save"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("smaller --size"));
}

#[test]
fn max_seconds_zero_writes_a_partial_result() {
    let out = Command::new(bin())
        .args([
            "bench",
            "--quick",
            "--json",
            "--no-save",
            "--max-seconds",
            "0",
            "--size",
            "1048576",
            "--chase-size",
            "1048576",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["calibration"]["partial"], true);
    assert_eq!(m["calibration"]["stepsDone"], 0);
}
