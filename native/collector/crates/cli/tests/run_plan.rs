//! End-to-end test of `numascope run --plan`: a C program (tests/fixtures/place.c) is first run
//! under the allocation shim in recording mode, which gives the call stacks of its allocation
//! sites as module + ELF address, as a recording would; a plan built from them binds one site,
//! interleaves another, gives a third weighted interleave (plain interleave where the kernel
//! lacks it) and has an entry that never matches; thread entries pin by creation order and by
//! name. The program dumps its own /proc/self/numa_maps and per-thread affinity, so the checks
//! see what the kernel holds. On this one-node machine every policy uses node 0, which numa_maps
//! still shows per range (`bind:0`, `interleave:0`); pins are seen because numascope is started
//! with affinity {cpu 0} and the pinned threads get all cpus of node 0. Needs a C compiler
//! (skipped with a message without one).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use numascope_core::alloc_sites::{load_dir, AllocSites, ReadLimits, SymbolizeOptions};
use serde_json::{json, Value};

mod common;
use common::{numascope, shim, Tmp};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/place.c")
}

fn compile(out: &Path) -> bool {
    let ok = Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        numascope_testsupport::skip_outside_ci(format_args!("no `cc` on this machine"));
        return false;
    }
    let o =
        Command::new("cc").args(["-g", "-O0", "-pthread"]).arg(fixture()).arg("-o").arg(out).output().expect("run cc");
    assert!(o.status.success(), "cc failed: {}", String::from_utf8_lossy(&o.stderr));
    true
}

/// Site name -> size, from the fixture's `SITE:<name> bytes=<n>` markers.
fn markers() -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(fixture()).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = &l[l.find("SITE:")? + 5..];
            let name = rest.split_whitespace().next()?.to_string();
            let bytes = rest.split("bytes=").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
            Some((name, bytes))
        })
        .collect()
}

/// The plan frames of an allocation (the same function `numascope debug alloc-frames` uses).
fn frames_of(s: &AllocSites, alloc: usize, n: usize) -> Vec<Value> {
    numascope_core::apply::launch::plan_frames(s, alloc, n).iter().map(|f| serde_json::to_value(f).unwrap()).collect()
}

/// Runs the program once with the shim recording; site name -> plan frames.
fn record_sites(bin: &Path, tmp: &Tmp) -> BTreeMap<String, Vec<Value>> {
    let dir = tmp.file("alloc");
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(bin)
        .env("LD_PRELOAD", shim())
        .env("NUMASCOPE_ALLOC_DIR", &dir)
        .env("NUMASCOPE_ALLOC_SAMPLE_BYTES", "0")
        .output()
        .unwrap();
    assert!(o.status.success(), "recording run failed: {}", String::from_utf8_lossy(&o.stderr));
    let files = load_dir(&dir, &ReadLimits::default(), &SymbolizeOptions::default()).unwrap();
    let s = files.into_iter().next().unwrap().1.unwrap();
    let mut out = BTreeMap::new();
    for (name, size) in markers() {
        let i = s.allocations.iter().position(|a| a.size == size).unwrap_or_else(|| panic!("site {name} not recorded"));
        let frames = frames_of(&s, i, 4);
        assert!(frames.len() >= 2, "site {name}: {frames:?}");
        out.insert(name, frames);
    }
    out
}

fn node0_cpus() -> Vec<u32> {
    let s = std::fs::read_to_string("/sys/devices/system/node/node0/cpulist").unwrap_or_else(|_| "0".into());
    numascope_core::topology::parse_cpulist(s.trim()).unwrap()
}

struct Output {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

/// `numascope run` with affinity {cpu 0}, so that a pin to node 0 is visible.
fn run(args: &[&str], spool: &Path) -> Output {
    let mut cmd = Command::new(numascope());
    cmd.args(args).env("NUMASCOPE_SPOOL_DIR", spool);
    // SAFETY: sched_setaffinity on the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(0, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    Output {
        status: o.status,
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The policy numa_maps shows for the range starting at the first page boundary of `addr`.
fn policy_at(numa_maps: &BTreeMap<u64, String>, addr: u64) -> Option<String> {
    let start = (addr + 4095) & !4095;
    let line = numa_maps.get(&start)?;
    // "7f... bind:0 anon=..." or "7f... weighted interleave:0 anon=..."
    let rest = line.split_once(' ')?.1;
    let end = rest.find(" anon=").or_else(|| rest.find(" dirty=")).unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Site addresses, affinity per thread, numa_maps lines by start address.
type ProgramOutput = (BTreeMap<String, u64>, BTreeMap<String, Vec<u32>>, BTreeMap<u64, String>);

fn parse_output(stdout: &str) -> ProgramOutput {
    let mut addrs = BTreeMap::new();
    let mut aff = BTreeMap::new();
    let mut maps = BTreeMap::new();
    for l in stdout.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.first() {
            Some(&"ADDR") => {
                addrs.insert(w[1].to_string(), u64::from_str_radix(w[2], 16).unwrap());
            }
            Some(&"AFFINITY") => {
                aff.insert(w[1].to_string(), w[2..].iter().map(|c| c.parse().unwrap()).collect());
            }
            Some(&"NUMA_MAPS") => {
                maps.insert(u64::from_str_radix(w[1], 16).unwrap(), l["NUMA_MAPS ".len()..].to_string());
            }
            _ => {}
        }
    }
    (addrs, aff, maps)
}

fn node0_weight() -> Option<u64> {
    std::fs::read_to_string("/sys/kernel/mm/mempolicy/weighted_interleave/node0").ok()?.trim().parse().ok()
}

#[test]
fn run_plan_places_objects_by_site_and_pins_threads() {
    let tmp = Tmp::new("run-plan");
    let bin = tmp.file("place");
    if !compile(&bin) {
        return;
    }
    let sites = record_sites(&bin, &tmp);
    let weight = node0_weight();
    let object = |site: &str, policy: &str| {
        let mut o = json!({
            "site": format!("place.c {site}"),
            "frames": sites[site],
            "size": { "min": markers()[site], "max": markers()[site] },
            "policy": policy, "nodes": [0],
        });
        if policy == "weighted-interleave" {
            o["weights"] = json!([weight.unwrap_or(1)]);
        }
        o
    };
    let mut never = object("d", "bind");
    never["frames"][0]["offset"] = json!("0x1");
    never["site"] = json!("nowhere");
    let plan = json!({
        "format": "numascope-plan", "version": 1,
        "source": { "policy": "manual" },
        "target": { "pid": 1, "command": [bin.to_string_lossy()], "machine": { "nodeIds": [0] } },
        "objects": [ object("a", "bind"), object("b", "interleave"), object("c", "weighted-interleave"), never ],
        "threads": [
            { "tid": 101, "order": 1, "toNodes": [0] },
            { "tid": 102, "name": "beta", "toNodes": [0] },
            { "tid": 104, "order": 4, "name": "delta", "toNodes": [0] },
            { "tid": 109, "name": "never", "toNodes": [0] },
            { "tid": 110, "toNodes": [0] }
        ]
    });
    let plan_path = tmp.file("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let report_path = tmp.file("report.json");
    let spool = tmp.file("spool");
    let fallback = if weight.is_some() { "refuse" } else { "interleave" };
    let o = run(
        &[
            "run",
            "--plan",
            plan_path.to_str().unwrap(),
            "--weights-fallback",
            fallback,
            "--report",
            report_path.to_str().unwrap(),
            "--",
            bin.to_str().unwrap(),
        ],
        &spool,
    );
    assert!(o.status.success(), "numascope run failed: {:?}\n{}", o.status, o.stderr);
    eprintln!("{}", o.stderr);
    let (addrs, aff, maps) = parse_output(&o.stdout);

    // numa_maps: each planned site's range carries its policy, the unplanned one the default
    assert_eq!(policy_at(&maps, addrs["a"]).as_deref(), Some("bind:0"), "{}", o.stdout);
    assert_eq!(policy_at(&maps, addrs["b"]).as_deref(), Some("interleave:0"), "{}", o.stdout);
    let want_c = if weight.is_some() { "weighted interleave:0" } else { "interleave:0" };
    assert_eq!(policy_at(&maps, addrs["c"]).as_deref(), Some(want_c), "{}", o.stdout);
    let d = addrs["d"];
    for (start, line) in maps.range(d & !4095..d + (4 << 20)) {
        assert!(line.split_whitespace().nth(1) == Some("default"), "site d was never planned: {start:x} {line}");
    }

    // threads: order 1, the one renamed "beta" by prctl and order 4 renamed "delta" by
    // pthread_setname_np are pinned to node 0; thread 3 and main keep numascope's {0}
    let node0 = node0_cpus();
    if node0.len() >= 2 {
        assert_eq!(aff["first"], node0, "{}", o.stdout);
        assert_eq!(aff["beta"], node0);
        assert_eq!(aff["delta"], node0);
        assert_eq!(aff["third"], vec![0]);
        assert_eq!(aff["main"], vec![0]);
    } else {
        numascope_testsupport::skip(format_args!("affinity checks: node 0 has one cpu, a pin to it cannot be seen"));
    }

    // the report
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!(r["exitCode"], 0);
    assert_eq!(r["unmatchedObjects"], json!([3]), "{r:#}");
    assert_eq!(r["objects"][0]["matches"], 1);
    let interior = |size: u64, addr: u64| ((addr + size) & !4095) - ((addr + 4095) & !4095);
    assert_eq!(r["objects"][0]["bytes"], interior(8 << 20, addrs["a"]));
    assert_eq!(r["objects"][0]["bytesPerNode"]["0"], interior(8 << 20, addrs["a"]));
    assert_eq!(r["objects"][1]["bytes"], interior(6 << 20, addrs["b"]));
    assert_eq!(r["objects"][3]["matches"], 0);
    assert_eq!(r["unmatchedThreads"], json!([3]), "{r:#}");
    assert_eq!(r["tidOnlyThreads"], json!([4]));
    assert_eq!(r["threads"][0]["pinned"].as_array().unwrap().len(), 1);
    assert_eq!(r["threads"][0]["pinned"][0]["order"], 1);
    assert!(r["modules"].as_array().unwrap().iter().all(|m| m["state"] == "loaded"), "{r:#}");
    assert_eq!(r["fallback"], format!("numactl --interleave=0 --cpunodebind=0 -- {}", bin.display()));
    assert!(o.stderr.contains("object 3 nowhere: bind [0]: never matched"), "{}", o.stderr);
    assert!(o.stderr.contains("whole-process fallback (coarser): numactl"), "{}", o.stderr);

    // the audit entry, written at launch
    let pid = r["pid"].as_i64().unwrap() as i32;
    let entries = numascope_core::apply::audit::collect(&spool, pid, None, 0, u64::MAX);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["tool"], "numascope run");
    assert_eq!(entries[0]["status"], "launched");
}

#[test]
fn run_plan_refusals() {
    let tmp = Tmp::new("run-plan-refuse");
    let plan = |objects: Value, command: &str| {
        json!({
            "format": "numascope-plan", "version": 1,
            "target": { "pid": 1, "command": [command], "machine": { "nodeIds": [0] } },
            "objects": objects
        })
    };
    let obj = json!([{ "frames": [ { "module": "/bin/true", "offset": "0x10" } ],
                       "size": { "min": 4096, "max": 8192 }, "policy": "bind", "nodes": [0] }]);
    let write = |name: &str, v: &Value| {
        let p = tmp.file(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    // numascope run's own failures exit 125 (env(1)'s convention): a hostile entry is refused
    // naming the field
    let mut bad = plan(obj.clone(), "true");
    bad["objects"][0]["nodes"] = json!([5]);
    let p = write("bad.json", &bad);
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--", "true"], &tmp.0);
    assert_eq!(o.status.code(), Some(125), "{}", o.stderr);
    assert!(o.stderr.contains("objects[0].nodes[0]: node 5 is not in target.machine.nodeIds"), "{}", o.stderr);
    // nothing usable at launch
    let p = write("empty.json", &plan(json!([]), "true"));
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--", "true"], &tmp.0);
    assert_eq!(o.status.code(), Some(125));
    assert!(o.stderr.contains("nothing to apply at launch"), "{}", o.stderr);
    // another program
    let p = write("other.json", &plan(obj.clone(), "./app"));
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--", "true"], &tmp.0);
    assert_eq!(o.status.code(), Some(125));
    assert!(o.stderr.contains("--any-program"), "{}", o.stderr);
    // a dry run launches nothing and prints the numactl line
    let marker = tmp.file("launched");
    let p = write("sh.json", &plan(obj.clone(), "sh"));
    let o = run(
        &["run", "--plan", p.to_str().unwrap(), "--dry-run", "--", "sh", "-c", &format!("touch {}", marker.display())],
        &tmp.0,
    );
    assert!(o.status.success(), "{}", o.stderr);
    assert!(!marker.exists());
    assert!(o.stderr.contains("numactl --membind=0 -- sh -c 'touch "), "{}", o.stderr);
    // the exit code is the program's
    let o = run(&["run", "--plan", p.to_str().unwrap(), "-q", "--", "sh", "-c", "exit 7"], &tmp.0);
    assert_eq!(o.status.code(), Some(7), "{}", o.stderr);
    // killed by a signal: 128 + N
    let o = run(&["run", "--plan", p.to_str().unwrap(), "-q", "--", "sh", "-c", "kill -9 $$"], &tmp.0);
    assert_eq!(o.status.code(), Some(128 + 9), "{}", o.stderr);
    // a static program is refused before launch (the loader would ignore LD_PRELOAD)
    let stat = tmp.file("static");
    let src = tmp.file("s.c");
    std::fs::write(&src, "int main(void){return 0;}\n").unwrap();
    let built = Command::new("cc").arg("-static").arg(&src).arg("-o").arg(&stat).output();
    if built.is_ok_and(|o| o.status.success()) {
        let p = write("static.json", &plan(obj, stat.to_str().unwrap()));
        let o = run(&["run", "--plan", p.to_str().unwrap(), "--", stat.to_str().unwrap()], &tmp.0);
        assert_eq!(o.status.code(), Some(125), "{}", o.stderr);
        assert!(o.stderr.contains("statically linked") && o.stderr.contains("numactl --membind=0"), "{}", o.stderr);
    } else {
        numascope_testsupport::skip(format_args!("static refusal: cc -static does not work here"));
    }
}

/// `numascope run` exits as env(1) does: 125 for its own failures (usage too, unlike the other
/// commands' 2), 126 when the command cannot be executed, 127 when it is not found.
#[test]
fn run_exit_codes_follow_env() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = Tmp::new("run-plan-codes");
    let plan_for = |command: &str| {
        let p = tmp.file(&format!("plan-{}.json", command.rsplit('/').next().unwrap()));
        let v = json!({
            "format": "numascope-plan", "version": 1,
            "target": { "pid": 1, "command": [command], "machine": { "nodeIds": [0] } },
            "objects": [{ "frames": [ { "module": "/bin/true", "offset": "0x10" } ],
                          "size": { "min": 4096, "max": 8192 }, "policy": "bind", "nodes": [0] }]
        });
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    // usage: no command after --, an unknown option; the other commands keep clap's 2
    let p = plan_for("true");
    let o = run(&["run", "--plan", p.to_str().unwrap()], &tmp.0);
    assert_eq!(o.status.code(), Some(125), "{}", o.stderr);
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--no-such-flag", "--", "true"], &tmp.0);
    assert_eq!(o.status.code(), Some(125), "{}", o.stderr);
    assert!(o.stderr.contains("--no-such-flag"), "{}", o.stderr);
    let o = run(&["probe", "--no-such-flag"], &tmp.0);
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    // a plan that is not there
    let missing = tmp.file("missing.json");
    let o = run(&["run", "--plan", missing.to_str().unwrap(), "--", "true"], &tmp.0);
    assert_eq!(o.status.code(), Some(125), "{}", o.stderr);
    assert!(o.stderr.contains("missing.json"), "{}", o.stderr);
    // not found: 127
    let p = plan_for("numascope-no-such-command");
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--", "numascope-no-such-command"], &tmp.0);
    assert_eq!(o.status.code(), Some(127), "{}", o.stderr);
    assert!(o.stderr.contains("command not found: numascope-no-such-command"), "{}", o.stderr);
    // found, not executable (no execute bit): 126
    let noexec = tmp.file("noexec");
    std::fs::write(&noexec, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&noexec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let p = plan_for(noexec.to_str().unwrap());
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--", noexec.to_str().unwrap()], &tmp.0);
    assert_eq!(o.status.code(), Some(126), "{}", o.stderr);
    assert!(o.stderr.contains("permission denied"), "{}", o.stderr);
    // found and executable, but not an executable format: 126
    let junk = tmp.file("junk");
    std::fs::write(&junk, "not a program\n").unwrap();
    std::fs::set_permissions(&junk, std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = plan_for(junk.to_str().unwrap());
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--", junk.to_str().unwrap()], &tmp.0);
    assert_eq!(o.status.code(), Some(126), "{}", o.stderr);
    assert!(o.stderr.contains("not an ELF executable"), "{}", o.stderr);
    // the program's own 125-127 are passed through (as env(1) does)
    let p = plan_for("sh");
    let o = run(&["run", "--plan", p.to_str().unwrap(), "-q", "--", "sh", "-c", "exit 126"], &tmp.0);
    assert_eq!(o.status.code(), Some(126), "{}", o.stderr);
    // --help documents the codes
    let o = run(&["run", "--help"], &tmp.0);
    assert!(o.status.success());
    for code in ["125", "126", "127"] {
        assert!(o.stdout.contains(code), "{}", o.stdout);
    }
}

/// Weighted-interleave entries whose weights the kernel does not have: refused with both numbers
/// and the two ways out; `--set-system-weights --dry-run` says what it would write and writes
/// nothing (the real write is exercised in the testbed's tiers guest); two entries giving one node
/// different weights cannot share a run.
#[test]
fn run_plan_weighted_entries_and_system_weights() {
    let tmp = Tmp::new("run-plan-weights");
    let dir = Path::new("/sys/kernel/mm/mempolicy/weighted_interleave");
    let have = node0_weight();
    let other = have.map_or(7, |w| if w == 7 { 8 } else { 7 });
    let entry = |w: u64, off: &str| {
        json!({ "frames": [ { "module": "/bin/true", "offset": off } ], "size": { "min": 4096, "max": 8192 },
                "policy": "weighted-interleave", "nodes": [0], "weights": [w] })
    };
    let plan = |objects: Value| {
        json!({ "format": "numascope-plan", "version": 1,
                "target": { "pid": 1, "command": ["sh"], "machine": { "nodeIds": [0] } }, "objects": objects })
    };
    let write = |name: &str, v: &Value| {
        let p = tmp.file(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let p = write("w.json", &plan(json!([entry(other, "0x10")])));
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--", "sh", "-c", "exit 0"], &tmp.0);
    assert_eq!(o.status.code(), Some(125), "{}", o.stderr);
    assert!(o.stderr.contains("--weights-fallback interleave"), "{}", o.stderr);
    if dir.is_dir() {
        assert!(
            o.stderr.contains(&format!("plan: {other}")) && o.stderr.contains("--set-system-weights"),
            "{}",
            o.stderr
        );
        let o = run(&["run", "--plan", p.to_str().unwrap(), "--dry-run", "--set-system-weights", "--", "sh"], &tmp.0);
        assert!(o.status.success(), "{}", o.stderr);
        assert!(o.stderr.contains(&format!("would write the system-wide weights N0={other}")), "{}", o.stderr);
        assert!(o.stderr.contains("numactl --weighted-interleave=0 -- sh"), "{}", o.stderr);
        assert_eq!(node0_weight(), have, "a dry run writes nothing");
    } else {
        assert!(o.stderr.contains("Linux 6.9"), "{}", o.stderr);
    }
    let p = write("clash.json", &plan(json!([entry(2, "0x10"), entry(3, "0x20")])));
    let o = run(&["run", "--plan", p.to_str().unwrap(), "--dry-run", "--set-system-weights", "--", "sh"], &tmp.0);
    assert_eq!(o.status.code(), Some(125), "{}", o.stderr);
    assert!(
        o.stderr.contains("objects[1].weights[0] gives node 0 weight 3 but objects[0].weights[0] gives it 2"),
        "{}",
        o.stderr
    );
}
