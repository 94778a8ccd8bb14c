//! End-to-end test of `numascope apply PLAN --retarget PID`: two runs of the testload program, a
//! plan made for the first (ranges in its executable's and libc's file mappings, in an anonymous
//! buffer, outside every mapping; an object entry for the shared buffer's allocation site), re-
//! targeted to the second, whose allocations the allocation shim records as it runs. The dry
//! run of the re-targeted plan must name the second pid and ranges that are its real mappings
//! (the same file offsets; the shared buffer's mmap). On this one-node machine every range goes
//! to node 0, so the dry run finds the pages in place; the mapping is what is checked.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use numascope_core::alloc_sites::{load_dir, ReadLimits, SymbolizeOptions};
use numascope_core::procfs::{parse_maps, MapsEntry};
use serde_json::{json, Value};

mod common;
use common::{numascope, shim, testload, Tmp};

/// A testload run that holds its memory; killed on drop.
struct Load {
    child: Child,
    pid: i32,
    shared: u64,
}
impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(alloc_dir: Option<&Path>) -> Load {
    let mut cmd = Command::new(testload());
    cmd.args(["--threads", "1", "--mib", "2", "--shared-mib", "2", "--seconds", "0.05", "--hold", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(d) = alloc_dir {
        cmd.env("LD_PRELOAD", shim()).env("NUMASCOPE_ALLOC_DIR", d).env("NUMASCOPE_ALLOC_SAMPLE_BYTES", "0");
    }
    let mut child = cmd.spawn().expect("start testload");
    let pid = child.id() as i32;
    let mut shared = 0;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for l in lines.by_ref() {
        let l = l.unwrap();
        if let Some(a) = l.split("addr=0x").nth(1).filter(|_| l.starts_with("shared ")) {
            shared = u64::from_str_radix(a.split_whitespace().next().unwrap(), 16).unwrap();
        }
        if l.starts_with("holding") {
            break;
        }
    }
    assert_ne!(shared, 0, "testload printed no shared buffer");
    // keep the pipe drained in the background (testload prints nothing more while holding)
    std::thread::spawn(move || for _ in lines {});
    Load { child, pid, shared }
}

fn maps(pid: i32) -> Vec<MapsEntry> {
    parse_maps(&std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap())
}

fn file_map<'a>(m: &'a [MapsEntry], name: &str, perms: &str) -> &'a MapsEntry {
    m.iter()
        .find(|e| e.path.as_deref().is_some_and(|p| p.ends_with(name)) && e.perms == perms)
        .unwrap_or_else(|| panic!("no {perms} mapping of {name}: {m:?}"))
}

fn hex(a: u64) -> String {
    format!("0x{a:x}")
}

fn range(s: u64, e: u64) -> Value {
    json!({ "start": hex(s), "end": hex(e), "action": "move", "toNodes": [0], "expectedNodes": null })
}

fn ticks(pid: i32) -> String {
    numascope_core::procfs::process_start_ticks(Path::new("/proc"), pid).unwrap().to_string()
}

#[test]
fn retarget_maps_a_plan_onto_a_second_run_and_its_dry_run_names_that_process() {
    let tmp = Tmp::new("retarget");
    let alloc = tmp.file("alloc");
    std::fs::create_dir_all(&alloc).unwrap();
    let a = start(None);
    let b = start(Some(&alloc));
    let (ma, mb) = (maps(a.pid), maps(b.pid));
    let exe = testload().canonicalize().unwrap().to_string_lossy().into_owned();
    let a_text = file_map(&ma, "numascope-testload", "r-xp");
    let a_libc = file_map(&ma, "/libc.so.6", "rw-p");
    // The shared buffer's allocation in run B, as the shim recorded it: its site's frames.
    let sites = load_dir(&alloc, &ReadLimits::default(), &SymbolizeOptions::default()).unwrap();
    let s = sites.into_iter().find_map(|(_, r)| r.ok().filter(|s| s.pid as i32 == b.pid)).expect("shim records of B");
    let i = s
        .allocations
        .iter()
        .position(|x| x.address <= b.shared && b.shared < x.address + x.size)
        .expect("the shared buffer's mmap recorded");
    let (b_alloc_start, b_alloc_size) = (s.allocations[i].address, s.allocations[i].size);
    let frames = numascope_core::apply::launch::plan_frames(&s, i, 3);
    assert!(!frames.is_empty());
    let plan = json!({
        "format": "numascope-plan", "version": 1,
        "source": { "policy": "manual" },
        "target": { "pid": a.pid, "startTimeTicks": ticks(a.pid), "command": [exe], "machine": { "nodeIds": [0] } },
        "pageRanges": [
            range(0x10000, 0x12000),                                    // outside every mapping
            range(a_text.start + 0x1000, a_text.start + 0x3000),         // the executable's code
            range(a.shared, a.shared + 0x4000),                          // anonymous: skipped
            range(a_libc.start, a_libc.start + 0x1000),                  // libc's data
        ],
        "threads": [],
        "objects": [{ "site": "shared buffer", "frames": frames, "size": { "min": b_alloc_size, "max": b_alloc_size },
                      "policy": "bind", "nodes": [0] }],
    });
    let plan_path = tmp.file("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let out = tmp.file("retargeted.json");
    let spool = tmp.file("spool");
    let o = Command::new(numascope())
        .arg("apply")
        .arg(&plan_path)
        .args(["--retarget", &b.pid.to_string(), "--allocations"])
        .arg(&alloc)
        .arg("--out")
        .arg(&out)
        .env("NUMASCOPE_SPOOL_DIR", &spool)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // two ranges were skipped: exit 3, with each listed and why
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("skipped pageRanges[0] 0x10000-0x12000: outside every mapping"), "{stdout}");
    assert!(stdout.contains("skipped pageRanges[2]") && stdout.contains("anonymous mapping"), "{stdout}");
    assert!(stdout.contains("same build id"), "{stdout}");
    let new: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(new["target"]["pid"], b.pid);
    assert_eq!(new["target"]["startTimeTicks"], ticks(b.pid));
    let b_text = file_map(&mb, "numascope-testload", "r-xp");
    let b_libc = file_map(&mb, "/libc.so.6", "rw-p");
    let want = [
        (b_text.start + 0x1000, b_text.start + 0x3000),
        (b_libc.start, b_libc.start + 0x1000),
        (b_alloc_start, b_alloc_start + b_alloc_size),
    ];
    let mut want = want.to_vec();
    want.sort();
    let got: Vec<(u64, u64)> = new["pageRanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let p = |k: &str| u64::from_str_radix(&r[k].as_str().unwrap()[2..], 16).unwrap();
            (p("start"), p("end"))
        })
        .collect();
    assert_eq!(got, want, "{}", serde_json::to_string_pretty(&new).unwrap());
    // the run-to-run check: B's text is at another address than A's (ASLR), yet the same offset
    assert_ne!(a_text.start, b_text.start);
    // the audit log has the re-targeting for B
    let entries: Vec<_> = std::fs::read_dir(spool.join(b.pid.to_string())).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1);
    let e: Value = serde_json::from_str(&std::fs::read_to_string(entries[0].path()).unwrap()).unwrap();
    assert_eq!(e["tool"], "numascope apply --retarget");
    assert_eq!(e["report"]["fromPid"], a.pid);

    // the dry run of the re-targeted plan acts on B and names B's real ranges
    let o = Command::new(numascope())
        .arg("apply")
        .arg(&out)
        .args(["-p", &b.pid.to_string(), "--dry-run"])
        .env("NUMASCOPE_SPOOL_DIR", &spool)
        .output()
        .unwrap();
    let dry = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{dry}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(dry.contains(&format!("on process {} ", b.pid)), "{dry}");
    for (s, e) in &want {
        assert!(dry.contains(&format!("0x{s:x}-0x{e:x}")), "{dry} lacks 0x{s:x}-0x{e:x}");
    }
    // and the old plan is still refused for B
    let o = Command::new(numascope())
        .arg("apply")
        .arg(&plan_path)
        .args(["-p", &b.pid.to_string(), "--dry-run"])
        .output()
        .unwrap();
    assert!(!o.status.success());

    // another program is refused
    let sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let o = Command::new(numascope())
        .arg("apply")
        .arg(&plan_path)
        .args(["--retarget", &sleeper.id().to_string(), "--out"])
        .arg(tmp.file("never.json"))
        .env("NUMASCOPE_SPOOL_DIR", &spool)
        .output()
        .unwrap();
    let mut sleeper = sleeper;
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("not the same program") || err.contains("build id"), "{err}");
    assert!(!tmp.file("never.json").exists());
}
