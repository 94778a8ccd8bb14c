//! perf's habits on the command line (docs/user-guide.md, "Command-line conventions"): the main
//! output of every command is `-o`/`--output`, other outputs `--WHAT-output`, and the earlier
//! spellings still work without being shown in `--help`.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

mod common;
use common::{numascope, shim, Tmp};

fn help(command: &str) -> String {
    let o = Command::new(numascope()).args([command, "--help"]).env("COLUMNS", "200").output().unwrap();
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The long flags `--help` shows (every `--word` at the start of an option line).
fn shown_flags(help: &str) -> Vec<String> {
    help.lines()
        .flat_map(|l| l.split([' ', ',', '=', '[', '<']))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(['.', ')', ':']).to_string())
        .collect()
}

#[test]
fn help_shows_only_the_output_spellings() {
    let cases: [(&str, &[&str], &[&str]); 3] = [
        ("apply", &["--output", "--rollback-output"], &["--out", "--rollback-out"]),
        ("run", &["--output"], &["--report"]),
        ("serve", &["--output"], &["--out-dir"]),
    ];
    for (command, new, old) in cases {
        let h = help(command);
        let flags = shown_flags(&h);
        for f in new {
            assert!(flags.iter().any(|x| x == f), "{command} --help lacks {f}: {flags:?}");
        }
        for f in old {
            assert!(!flags.iter().any(|x| x == f), "{command} --help shows the old {f}: {flags:?}");
        }
        assert!(h.contains("-o, --output"), "{command}: {h}");
    }
}

/// `numascope run --dry-run` writes its report with `-o`, `--output` and the old `--report`.
#[test]
fn run_report_output_old_and_new_spellings() {
    let tmp = Tmp::new("habits-run");
    let _ = shim();
    let plan = tmp.file("plan.json");
    let v = json!({
        "format": "numascope-plan", "version": 1,
        "target": { "pid": 1, "command": ["true"], "machine": { "nodeIds": [0] } },
        "objects": [{ "frames": [ { "module": "/bin/true", "offset": "0x10" } ],
                      "size": { "min": 4096, "max": 8192 }, "policy": "bind", "nodes": [0] }]
    });
    std::fs::write(&plan, v.to_string()).unwrap();
    for flag in ["-o", "--output", "--report"] {
        let report = tmp.file(&format!("report{flag}.json"));
        let o = Command::new(numascope())
            .args(["run", "--plan", plan.to_str().unwrap(), "--dry-run", "-q", flag, report.to_str().unwrap()])
            .args(["--", "true"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{flag}: {}", String::from_utf8_lossy(&o.stderr));
        let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(r["dryRun"], true, "{flag}: {r}");
    }
    // the alias is the same option: given twice it is refused
    let o = Command::new(numascope())
        .args([
            "run",
            "--plan",
            plan.to_str().unwrap(),
            "--dry-run",
            "-o",
            "a.json",
            "--report",
            "b.json",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be used multiple times"));
}

/// `numascope serve -o DIR` and the old `--out-dir DIR` both create the recordings directory 0700.
#[test]
fn serve_output_dir_old_and_new_spellings() {
    let tmp = Tmp::new("habits-serve");
    let web = tmp.file("web");
    std::fs::create_dir_all(&web).unwrap();
    std::fs::write(web.join("index.html"), "<!doctype html>").unwrap();
    for flag in ["-o", "--output", "--out-dir"] {
        let out = tmp.file(&format!("out{flag}"));
        let mut child = Command::new(numascope())
            .args(["serve", "--port", "0", "--web-dir", web.to_str().unwrap(), flag, out.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(line.starts_with("http://127.0.0.1:"), "{flag}: {line:?}");
        let mode = std::fs::metadata(&out).unwrap_or_else(|e| panic!("{flag}: {}: {e}", out.display())).permissions();
        assert_eq!(mode.mode() & 0o777, 0o700, "{flag}");
    }
}

/// `apply --retarget`'s plan: `-o`, `--output` and the old `--out` are one option.
#[test]
fn apply_output_aliases_are_one_option() {
    for (a, b) in [("-o", "--out"), ("--output", "--out"), ("--rollback-output", "--rollback-out")] {
        let o = Command::new(numascope())
            .args(["apply", "plan.json", "--retarget", "1", a, "x.json", b, "y.json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{a} {b}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("cannot be used multiple times"), "{a} {b}: {err}");
    }
}

/// The real perf.data fixtures (shared/data/perfdata; NUMASCOPE_SHARED overrides the folder).
fn perf_fixture() -> std::path::PathBuf {
    let base = std::env::var_os("NUMASCOPE_SHARED")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../../shared"));
    let p = base.join("data/perfdata/intel-ivb-ep-4s_xeon-e5-4610v2_perf-mem-load_numatop-fork.perf.data");
    assert!(p.is_file(), "{} not found (set NUMASCOPE_SHARED to the shared/ folder)", p.display());
    p
}

/// `numascope record` without -o writes numascope-YYYYMMDD-HHMMSS.numascope in the current
/// directory, never replacing one (a second recording in the same second gets -2); --json prints
/// one object on stdout naming it, with the summary and the capabilities as data.
#[test]
fn record_default_output_and_json() {
    let tmp = Tmp::new("habits-record");
    let record = || {
        Command::new(numascope())
            .current_dir(&tmp.0)
            .args(["record", "--json", "-q", "--no-alloc-sites", "--", "true"])
            .output()
            .unwrap()
    };
    let (a, b) = (record(), record());
    let mut written = Vec::new();
    for o in [&a, &b] {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(text.lines().count(), 1, "one JSON line: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        let name = v["output"].as_str().unwrap().to_string();
        let stem = name
            .strip_prefix("numascope-")
            .and_then(|n| n.strip_suffix(".numascope"))
            .unwrap_or_else(|| panic!("{name}"));
        let (date, rest) = stem.split_at(8);
        assert!(date.chars().all(|c| c.is_ascii_digit()) && rest.starts_with('-'), "{name}");
        assert!(tmp.0.join(&name).is_file(), "{name} written in the current directory");
        assert_eq!(v["stopReason"], "process-exit", "{v}");
        assert_eq!(v["exitCode"], 0);
        assert_eq!(v["traceId"].as_str().map(str::len), Some(32), "the trace's id (format v4): {v}");
        assert!(v["host"].is_string(), "{v}");
        assert!(v["sizeBytes"].as_u64().unwrap() > 0);
        assert!(v["durationS"].as_f64().is_some() && v["threads"].as_u64().unwrap() >= 1, "{v}");
        let caps = v["capabilities"].as_array().unwrap_or_else(|| panic!("capabilities: {v}"));
        assert!(caps.iter().any(|c| c["metric"] == "page-placement"), "{v}");
        // this machine has no PMU: memory accesses are unavailable, with the reason
        let acc = caps.iter().find(|c| c["metric"] == "memory-accesses").unwrap();
        assert!(acc["status"].is_string() && !acc["reason"].as_str().unwrap().is_empty(), "{acc}");
        written.push(name);
    }
    assert_ne!(written[0], written[1], "a default name never replaces a trace");
}

/// `numascope import` reads perf.data by default (-i FILE or the positional otherwise) and writes
/// STEM.numascope in the current directory; --json prints one object.
#[test]
fn import_default_input_output_and_json() {
    let tmp = Tmp::new("habits-import");
    let fixture = perf_fixture();
    // no perf.data here: the error says what to do
    let o = Command::new(numascope()).current_dir(&tmp.0).arg("import").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("perf.data") && err.contains("-i FILE"), "{err}");
    std::fs::copy(&fixture, tmp.0.join("perf.data")).unwrap();
    let o = Command::new(numascope()).current_dir(&tmp.0).args(["import", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["input"], "perf.data");
    assert_eq!(v["output"], "perf.numascope");
    assert!(tmp.0.join("perf.numascope").is_file());
    assert!(v["samples"].as_u64().unwrap() > 0 && v["samples"].as_u64() <= v["totalSamples"].as_u64(), "{v}");
    assert!(v["capabilities"].as_array().is_some_and(|c| !c.is_empty()), "{v}");
    assert!(v["dataSources"].is_object() && v["skipped"]["notMemoryEvent"].is_u64(), "{v}");
    // -i and the positional name the same input; both at once is refused
    for args in [&["import", "-i", fixture.to_str().unwrap()][..], &["import", fixture.to_str().unwrap()][..]] {
        let o = Command::new(numascope())
            .current_dir(&tmp.0)
            .args(args)
            .args(["-q", "-o", "x.numascope"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stdout.is_empty(), "no --json, nothing on stdout");
    }
    let o = Command::new(numascope())
        .current_dir(&tmp.0)
        .args(["import", "-i", "perf.data", "perf.data"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // without -o the stem of -i's file
    let o = Command::new(numascope()).current_dir(&tmp.0).args(["import", "-q", "-i"]).arg(&fixture).output().unwrap();
    assert!(o.status.success());
    let stem = fixture.file_stem().unwrap().to_str().unwrap();
    assert!(tmp.0.join(format!("{stem}.numascope")).is_file(), "{stem}.numascope");
}

/// `numascope serve --json` prints one JSON line when it listens; the URL works with its token.
#[test]
fn serve_json_line() {
    let tmp = Tmp::new("habits-serve-json");
    let web = tmp.file("web");
    std::fs::create_dir_all(&web).unwrap();
    std::fs::write(web.join("index.html"), "<!doctype html>").unwrap();
    let out = tmp.file("out");
    let mut child = Command::new(numascope())
        .args(["serve", "--port", "0", "--json", "--web-dir", web.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let v: Result<Value, _> = serde_json::from_str(&line);
    let reply = v.as_ref().ok().map(|v| {
        let port = v["port"].as_u64().unwrap();
        let token = v["token"].as_str().unwrap();
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
        use std::io::{Read, Write};
        write!(s, "GET /api/topology?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut r = String::new();
        let _ = s.read_to_string(&mut r);
        r
    });
    let _ = child.kill();
    let _ = child.wait();
    let v = v.unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let (port, token) = (v["port"].as_u64().unwrap(), v["token"].as_str().unwrap());
    assert_eq!(v["url"], format!("http://127.0.0.1:{port}/?token={token}"));
    assert_eq!(v["outputDir"], out.to_str().unwrap());
    assert!(token.len() >= 32);
    let reply = reply.unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "the token from the JSON line works: {reply}");
}
