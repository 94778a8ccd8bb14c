//! End-to-end tests of `numascope apply` and `numascope rollback` on this machine (usually one
//! NUMA node: moves are to node 0, so they are no-ops for the kernel but real syscalls, and
//! verification is real). Cross-node moves are tested in the emulated-NUMA testbed
//! (testbed/run-scenarios.sh).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{json, Value};

mod common;
use common::{numascope, testload, Tmp};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../..").canonicalize().unwrap()
}

/// A running testload: pid, a worker tid, the shared buffer.
struct Load {
    child: Child,
    pid: i32,
    tid: i32,
    shared: u64,
    shared_len: u64,
}

impl Load {
    fn start() -> Load {
        let mut child = Command::new(testload())
            .args(["--threads", "2", "--mib", "1", "--shared-mib", "2", "--seconds", "60"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start numascope-testload");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (mut pid, mut tid, mut shared, mut shared_len, mut touched) = (0, 0, 0, 0, 0);
        let mut line = String::new();
        while touched < 2 {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "testload ended early");
            let kv = |k: &str| line.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap_or("").to_string();
            if line.starts_with("ready") {
                pid = kv("pid=").parse().unwrap();
            } else if line.starts_with("shared") {
                shared = u64::from_str_radix(kv("addr=").trim_start_matches("0x"), 16).unwrap();
                shared_len = kv("len=").parse().unwrap();
            } else if line.starts_with("buffer") {
                tid = kv("tid=").parse().unwrap();
            } else if line.starts_with("touched") {
                touched += 1;
            }
        }
        // keep the pipe open (the testload prints "done" at the end)
        std::mem::forget(out);
        Load { child, pid, tid, shared, shared_len }
    }

    fn start_time(&self) -> String {
        let s = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap();
        let after = &s[s.rfind(')').unwrap() + 2..];
        after.split_whitespace().nth(19).unwrap().to_string()
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn machine() -> Value {
    let out = Command::new(numascope()).args(["topology", "--json"]).output().unwrap();
    assert!(out.status.success());
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<Value> = m["nodes"].as_array().unwrap().iter().map(|n| n["id"].clone()).collect();
    json!({ "nodeIds": ids, "distances": m["distances"] })
}

fn node0_cpus() -> Vec<u32> {
    let out = Command::new(numascope()).args(["topology", "--json"]).output().unwrap();
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    m["nodes"][0]["cpus"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap() as u32).collect()
}

fn plan(load: &Load, start_time: Value, machine: Value, to_node: u32) -> Value {
    json!({
        "format": "numascope-plan", "version": 1,
        "target": { "pid": load.pid, "startTimeTicks": start_time, "machine": machine },
        "pageRanges": [ { "start": format!("0x{:x}", load.shared), "end": format!("0x{:x}", load.shared + load.shared_len),
                          "action": "move", "toNodes": [to_node] } ],
        "threads": [ { "tid": load.tid, "toNodes": [to_node] } ],
        "expected": { "pagesToMove": 0, "pagesPerNodeAfter": { "0": load.shared_len / 4096 }, "threadsToPin": 1 }
    })
}

fn write(tmp: &Tmp, name: &str, v: &Value) -> PathBuf {
    let p = tmp.file(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

fn run(tmp: &Tmp, args: &[&str]) -> Output {
    Command::new(numascope()).args(args).current_dir(&tmp.0).output().unwrap()
}

fn affinity(tid: i32) -> Vec<u32> {
    // SAFETY: zeroed cpu_set_t, then filled by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
        (0..1024).filter(|&c| libc::CPU_ISSET(c, &set)).map(|c| c as u32).collect()
    }
}

fn set_affinity(tid: i32, cpus: &[u32]) {
    // SAFETY: as above.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c as usize, &mut set);
        }
        assert_eq!(libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set), 0);
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", String::from_utf8_lossy(&o.stdout), stderr(o)))
}

#[test]
fn apply_moves_to_node0_pins_and_rolls_back() {
    let tmp = Tmp::new("apply");
    let load = Load::start();
    let cpus = node0_cpus();
    // Narrow the thread first so pinning to all of node 0's cpus is observable.
    set_affinity(load.tid, &cpus[..1]);
    let p = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), machine(), 0));
    let rb = tmp.file("rb.json");
    let pid = load.pid.to_string();
    let o = run(
        &tmp,
        &[
            "apply",
            p.to_str().unwrap(),
            "-p",
            &pid,
            "--json",
            "--no-skip",
            "--batch",
            "100",
            "--rollback-out",
            rb.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json_out(&o);
    let pages = load.shared_len / 4096;
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(r["pages"]["pages"], pages);
    assert_eq!(r["pages"]["moved"], pages, "{r}");
    assert_eq!(r["pages"]["after"]["0"], pages);
    assert_eq!(r["pages"]["onTargetAfter"], pages);
    assert_eq!(r["threads"][0]["pinned"], true);
    assert!(stderr(&o).contains("numascope: moved"), "progress on stderr: {}", stderr(&o));
    // pinned to all cpus of node 0, read back with sched_getaffinity
    assert_eq!(affinity(load.tid), cpus);
    // rollback record lists the previous affinity and the moved pages
    let rec: Value = serde_json::from_str(&std::fs::read_to_string(&rb).unwrap()).unwrap();
    assert_eq!(rec["format"], "numascope-rollback");
    assert_eq!(rec["threads"][0]["cpus"], json!([cpus[0]]));
    assert_eq!(rec["pages"][0]["count"], pages);
    assert_eq!(rec["pages"][0]["node"], 0);
    // rollback restores the affinity
    let o = run(&tmp, &["rollback", rb.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json_out(&o);
    assert_eq!(r["operation"], "rollback");
    assert_eq!(r["status"], "complete", "{r}");
    assert_eq!(affinity(load.tid), vec![cpus[0]]);
}

#[test]
fn human_report_without_no_skip_skips_pages_in_place() {
    let tmp = Tmp::new("human");
    let load = Load::start();
    let p = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), machine(), 0));
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string(), "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("status: complete"), "{s}");
    assert!(s.contains(&format!("{} already in place", load.shared_len / 4096)), "{s}");
    assert!(s.contains("rollback record:"), "{s}"); // the thread's affinity was recorded
    assert!(stderr(&o).is_empty(), "quiet: {}", stderr(&o));
}

#[test]
fn dry_run_changes_nothing() {
    let tmp = Tmp::new("dry");
    let load = Load::start();
    let cpus = node0_cpus();
    set_affinity(load.tid, &cpus[..1]);
    let p = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), machine(), 0));
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string(), "--dry-run", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json_out(&o);
    assert_eq!(r["status"], "dry-run");
    assert_eq!(r["dryRun"], true);
    assert_eq!(r["pages"]["moved"], 0);
    assert_eq!(r["pages"]["after"], Value::Null);
    assert_eq!(r["pages"]["alreadyInPlace"], load.shared_len / 4096);
    assert_eq!(r["threads"][0]["cpus"], json!(cpus));
    assert_eq!(r["threads"][0]["pinned"], false);
    assert_eq!(affinity(load.tid), vec![cpus[0]], "dry run must not pin");
    let files: Vec<_> = std::fs::read_dir(&tmp.0).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(files.len(), 1, "no rollback record in a dry run: {files:?}");
    // the human dry run lists the operations
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string(), "--dry-run"]);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("dry run (nothing changed)") && s.contains("pin to nodes [0]"), "{s}");
}

#[test]
fn wrong_start_time_is_refused() {
    let tmp = Tmp::new("start");
    let load = Load::start();
    let wrong = (load.start_time().parse::<u64>().unwrap() + 1).to_string();
    let p = write(&tmp, "plan.json", &plan(&load, json!(wrong), machine(), 0));
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("pid was reused") && e.contains(&wrong) && e.contains("nothing was changed"), "{e}");
}

#[test]
fn dead_pid_is_refused() {
    let tmp = Tmp::new("dead");
    let mut load = Load::start();
    let _ = load.child.kill();
    let _ = load.child.wait();
    let p = write(&tmp, "plan.json", &plan(&load, Value::Null, machine(), 0));
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains(&format!("process {} does not exist", load.pid)), "{e}");
}

#[test]
fn plan_for_another_machine_is_refused_naming_the_node() {
    let tmp = Tmp::new("machine");
    let load = Load::start();
    let mut m = machine();
    let mut ids: Vec<Value> = m["nodeIds"].as_array().unwrap().clone();
    if ids.contains(&json!(3)) {
        return; // a machine with a node 3: not this test's case
    }
    ids.push(json!(3));
    m["nodeIds"] = json!(ids);
    m["distances"] = Value::Null;
    let p = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), m, 3));
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("another machine") && e.contains("node 3 does not exist here"), "{e}");
}

#[test]
fn invalid_plan_names_the_field_and_pid_must_match() {
    let tmp = Tmp::new("invalid");
    let load = Load::start();
    let mut v = plan(&load, Value::Null, machine(), 0);
    v["pageRanges"][0]["toNodes"] = json!([0, 0]);
    let p = write(&tmp, "plan.json", &v);
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("pageRanges[0].toNodes"), "{}", stderr(&o));
    v["version"] = json!(2);
    let p = write(&tmp, "plan2.json", &v);
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()]);
    assert!(stderr(&o).contains("version 2 is newer"), "{}", stderr(&o));
    // -p must equal target.pid: never touch a process the plan was not made for
    let p = write(&tmp, "plan3.json", &plan(&load, Value::Null, machine(), 0));
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not 1"), "{}", stderr(&o));
}

#[test]
fn thread_of_another_process_is_refused() {
    let tmp = Tmp::new("thread");
    let load = Load::start();
    let mut v = plan(&load, Value::Null, machine(), 0);
    v["threads"][0]["tid"] = json!(std::process::id()); // our own pid: not a thread of the target
    let p = write(&tmp, "plan.json", &v);
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()]);
    assert_eq!(o.status.code(), Some(1));
    let want = format!("thread {0} belongs to process {0}, not to process {1}", std::process::id(), load.pid);
    assert!(stderr(&o).contains(&want) && stderr(&o).contains("nothing was changed"), "{}", stderr(&o));
    // a thread that has exited (no such tid at all)
    v["threads"][0]["tid"] = json!(i32::MAX);
    let p = write(&tmp, "plan2.json", &v);
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no longer belongs to process"), "{}", stderr(&o));
}

#[test]
fn example_plans_parse() {
    let dir = repo_root().join("docs/examples");
    let Ok(rd) = std::fs::read_dir(&dir) else { return };
    let mut n = 0;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("plan-") && name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(e.path()).unwrap();
        let r = numascope_core::apply::parse_plan(&text, 4096);
        if name.contains("invalid") {
            assert!(r.is_err(), "{name} should be invalid");
        } else {
            let p = r.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.page_ranges.is_empty() || !p.threads.is_empty(), "{name}");
        }
        n += 1;
    }
    assert!(n > 0 || !dir.exists());
}

#[test]
fn budget_exhausted_is_reported_as_partial() {
    let tmp = Tmp::new("budget");
    let load = Load::start();
    let p = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), machine(), 0));
    let o = run(
        &tmp,
        &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string(), "--json", "--no-skip", "--budget-ms", "0", "-q"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = json_out(&o);
    assert_eq!(r["status"], "budget-exhausted");
    assert_eq!(r["pages"]["moved"], 0);
    assert_eq!(r["pages"]["notAttempted"], load.shared_len / 4096);
    assert_eq!(r["threads"][0]["pinned"], true, "threads are pinned even when the page budget ran out");
    assert!(stderr(&o).contains("time budget of 0 ms ran out"), "{}", stderr(&o));
}

#[test]
fn parallel_jobs_move_every_page_and_pause_implies_one_job() {
    let tmp = Tmp::new("jobs");
    let load = Load::start();
    let pages = load.shared_len / 4096;
    let p = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), machine(), 0));
    let pid = load.pid.to_string();
    for (extra, jobs) in
        [(&["--jobs", "3"][..], 3), (&["--jobs", "1"][..], 1), (&["--jobs", "3", "--pause-ms", "1"][..], 1)]
    {
        let mut args = vec!["apply", p.to_str().unwrap(), "-p", &pid, "--json", "--no-skip", "-q", "--batch", "7"];
        args.extend_from_slice(extra);
        let rb = tmp.file(&format!("rb-{jobs}-{}.json", extra.len()));
        args.extend_from_slice(&["--rollback-out", rb.to_str().unwrap()]);
        let o = run(&tmp, &args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let r = json_out(&o);
        assert_eq!(r["status"], "complete", "{extra:?}: {r}");
        assert_eq!(r["jobs"], jobs, "{extra:?}");
        assert_eq!(r["pages"]["moved"], pages, "{extra:?}: {r}");
        assert_eq!(r["pages"]["onTargetAfter"], pages, "{extra:?}");
        let rec: Value = serde_json::from_str(&std::fs::read_to_string(&rb).unwrap()).unwrap();
        assert_eq!(rec["pages"][0]["count"], pages, "{extra:?}: one run of every moved page");
    }
    // --jobs 0 is a usage error
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &pid, "--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Run as `nobody` against a root-owned process: refused before anything changes, naming the
/// capability. Only when the tests run as root (else there is no other user to try).
#[test]
fn other_users_process_is_refused_with_the_capability() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let tmp = Tmp::new("perm");
    // SAFETY: chmod of our own temp dir so that nobody can read the plan.
    std::fs::set_permissions(&tmp.0, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let load = Load::start();
    let before = affinity(load.tid);
    let mut v = plan(&load, json!(load.start_time()), machine(), 0);
    let p = write(&tmp, "plan.json", &v);
    let o = match Command::new(numascope())
        .args(["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()])
        .current_dir(&tmp.0)
        .uid(65534)
        .gid(65534)
        .output()
    {
        Ok(o) => o,
        // The checkout lies under a directory nobody may enter (a clone in `mktemp -d`, 0700).
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            numascope_testsupport::skip(format_args!("nobody cannot run {} here: {e}", numascope().display()));
            return;
        }
        Err(e) => panic!("run numascope as nobody: {e}"),
    };
    if !o.status.success() && stderr(&o).contains("Permission denied") && stderr(&o).contains("reading") {
        return; // the binary or plan is not readable by nobody here
    }
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("not permitted") && e.contains("CAP_SYS_NICE") && e.contains("nothing was changed"), "{e}");
    assert_eq!(affinity(load.tid), before);
    // pages only: the move_pages query is refused (ptrace read access)
    v["threads"] = json!([]);
    let p = write(&tmp, "pages.json", &v);
    let o = Command::new(numascope())
        .args(["apply", p.to_str().unwrap(), "-p", &load.pid.to_string()])
        .current_dir(&tmp.0)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("ptrace read access") && e.contains("CAP_SYS_PTRACE"), "{e}");
}

/// Apply during `numascope record -p PID`: the plan and its report land in the trace's
/// manifest.appliedPlans and a `plan-applied` events row (apply/audit.rs).
#[test]
fn apply_during_record_lands_in_the_audit_log() {
    let tmp = Tmp::new("audit");
    let spool = tmp.file("spool");
    let load = Load::start();
    let p = plan(&load, json!(load.start_time()), machine(), node0_cpus_node());
    let plan_file = write(&tmp, "plan.json", &p);
    let trace = tmp.file("t.numascope");
    let mut rec = Command::new(numascope())
        .args(["record", "-q", "-p", &load.pid.to_string(), "-d", "2", "-o"])
        .arg(&trace)
        .env("NUMASCOPE_SPOOL_DIR", &spool)
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    let out = Command::new(numascope())
        .args(["apply"])
        .arg(&plan_file)
        .args(["-p", &load.pid.to_string(), "--no-skip", "--json", "-q"])
        .arg("--rollback-out")
        .arg(tmp.file("undo.json"))
        .env("NUMASCOPE_SPOOL_DIR", &spool)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(rec.wait().unwrap().success());
    let f = numascope_core::trace::reader::read_trace(&trace).unwrap();
    let plans = f.manifest_json["appliedPlans"].as_array().unwrap();
    assert_eq!(plans.len(), 1, "{:#}", f.manifest_json["appliedPlans"]);
    let e = &plans[0];
    assert_eq!(e["tool"], "numascope apply");
    assert_eq!(e["pid"], load.pid);
    assert_eq!(e["startTimeTicks"], load.start_time());
    assert_eq!(e["status"], "complete");
    assert_eq!(e["plan"]["target"]["pid"], load.pid);
    assert_eq!(e["report"]["operation"], "apply");
    assert_eq!(e["report"]["pages"]["moved"], load.shared_len / 4096);
    assert!(e["finishedUnixMs"].as_u64().unwrap() >= e["startedUnixMs"].as_u64().unwrap());
    let t = f.to_trace_data();
    let rows: Vec<usize> = (0..t.events.time_us.len()).filter(|&i| t.events.kind.get(i) == "plan-applied").collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(t.events.value[rows[0]], (load.shared_len / 4096) as i64);
    assert!(t.events.detail[rows[0]].contains("complete"), "{}", t.events.detail[rows[0]]);
    // a recording of another time window does not pick it up
    let later = numascope_core::apply::audit::collect(&spool, load.pid, None, u64::MAX - 1, u64::MAX);
    assert!(later.is_empty());
}

fn node0_cpus_node() -> u32 {
    0
}

// ---------------------------------------------------------------- robustness (issue 19)

/// How a bounded run of `numascope` ended.
struct Finished {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    /// Peak resident memory of the run (wait4 rusage), KiB.
    max_rss_kib: i64,
}

/// Runs `numascope ARGS` in `tmp` with at most 4 GiB of address space, killing it (and failing
/// the test) after `limit`; reaps it with wait4 to read its own peak memory.
#[allow(clippy::zombie_processes)] // reaped by wait4/waitpid below, not by Child::wait
fn run_bounded(tmp: &Tmp, args: &[&str], limit: std::time::Duration) -> Finished {
    let (out, err) = (tmp.file("bounded.stdout"), tmp.file("bounded.stderr"));
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(numascope());
    cmd.args(args)
        .current_dir(&tmp.0)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    // SAFETY: setrlimit is async-signal-safe. A 4 GiB address-space cap keeps a run that does
    // allocate without bound from taking the machine down with it (it aborts instead).
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: 4 << 30, rlim_max: 4 << 30 };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id() as i32;
    let t0 = std::time::Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage, filled by the kernel; pid is our child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            let f = Finished {
                code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
                signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
                stdout: std::fs::read_to_string(&out).unwrap(),
                stderr: std::fs::read_to_string(&err).unwrap(),
                max_rss_kib: ru.ru_maxrss,
            };
            return f;
        }
        if t0.elapsed() > limit {
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("numascope {args:?} ran longer than {limit:?} (killed): its work is not bounded");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

const BOUND: std::time::Duration = std::time::Duration::from_secs(30);
/// Peak memory a refused or clipped plan may take (KiB).
const MAX_RSS_KIB: i64 = 256 * 1024;

/// A valid plan whose page range spans the whole user address space: `apply --dry-run` used to
/// try to allocate 2^35 entries and abort. Now it is refused at parse, naming the range and the
/// limit, at once and in little memory.
#[test]
fn whole_address_space_plan_is_refused_in_dry_run() {
    let tmp = Tmp::new("whole");
    let load = Load::start();
    let mut v = plan(&load, json!(load.start_time()), machine(), 0);
    v["pageRanges"] = json!([{ "start": "0x1000", "end": "0x7ffffffff000", "action": "move", "toNodes": [0] }]);
    let p = write(&tmp, "plan.json", &v);
    let f = run_bounded(&tmp, &["apply", p.to_str().unwrap(), "-p", &load.pid.to_string(), "--dry-run"], BOUND);
    assert_eq!((f.code, f.signal), (Some(2), None), "{}", f.stderr);
    assert!(
        f.stderr.contains("pageRanges[0]") && f.stderr.contains("limit of 134217728 pages") && f.stderr.contains("TiB"),
        "{}",
        f.stderr
    );
    assert!(f.max_rss_kib < MAX_RSS_KIB, "peak memory {} KiB", f.max_rss_kib);
}

/// A range under the limits but mostly outside the target's mappings is clipped to its mapped
/// pages (the work follows what is mapped); a range outside every mapping is refused.
#[test]
fn plan_ranges_are_clipped_to_the_targets_mappings() {
    let tmp = Tmp::new("clip");
    let load = Load::start();
    let pid = load.pid.to_string();
    let gib: u64 = 1 << 30;
    let start = (load.shared & !(gib - 1)).saturating_sub(gib).max(gib);
    let end = start + 3 * gib;
    let mut v = plan(&load, json!(load.start_time()), machine(), 0);
    v["pageRanges"][0]["start"] = json!(format!("0x{start:x}"));
    v["pageRanges"][0]["end"] = json!(format!("0x{end:x}"));
    let p = write(&tmp, "plan.json", &v);
    let f = run_bounded(&tmp, &["apply", p.to_str().unwrap(), "-p", &pid, "--dry-run", "--json", "-q"], BOUND);
    assert_eq!(f.code, Some(0), "{}", f.stderr);
    let r: Value = serde_json::from_str(&f.stdout).unwrap();
    let (pages, unmapped) = (r["pages"]["pages"].as_u64().unwrap(), r["pages"]["unmapped"].as_u64().unwrap());
    assert_eq!(pages, 3 * gib / 4096);
    assert!(unmapped > 0 && pages - unmapped >= load.shared_len / 4096, "{r}");
    assert!(r["warnings"].to_string().contains("lie outside the mappings of process"), "{r}");
    assert!(f.max_rss_kib < MAX_RSS_KIB, "peak memory {} KiB", f.max_rss_kib);
    // below mmap_min_addr nothing is ever mapped
    v["pageRanges"][0]["start"] = json!("0x1000");
    v["pageRanges"][0]["end"] = json!("0x10000");
    let p = write(&tmp, "outside.json", &v);
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &pid, "--dry-run"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pageRanges[0] 0x1000-0x10000 lies outside every mapping of process"),
        "{}",
        stderr(&o)
    );
}

fn rollback_record(load: &Load, pages: Value, threads: Value) -> Value {
    json!({ "format": "numascope-rollback", "version": 1, "pid": load.pid, "startTimeTicks": load.start_time(),
            "pageSize": 4096, "pages": pages, "threads": threads })
}

/// A rollback record with a page count of 2^40 used to grow a list without bound. Now it is
/// refused at parse, naming the run and the limit.
#[test]
fn huge_rollback_page_count_is_refused() {
    let tmp = Tmp::new("hugerb");
    let load = Load::start();
    let rec = rollback_record(
        &load,
        json!([{ "start": format!("0x{:x}", load.shared), "count": 1u64 << 40, "node": 0 }]),
        json!([]),
    );
    let p = write(&tmp, "rb.json", &rec);
    let f = run_bounded(&tmp, &["rollback", p.to_str().unwrap()], BOUND);
    assert_eq!((f.code, f.signal), (Some(2), None), "{}", f.stderr);
    assert!(f.stderr.contains("pages[0].count") && f.stderr.contains("limit of 134217728 pages"), "{}", f.stderr);
    assert!(f.max_rss_kib < MAX_RSS_KIB, "peak memory {} KiB", f.max_rss_kib);
}

/// A rollback record for process A that lists a thread of process B: rollback used to re-pin
/// B's thread. Now it refuses before anything changes, naming the tid and its process, and B's
/// affinity is unchanged.
#[test]
fn foreign_tid_in_rollback_record_is_refused() {
    let tmp = Tmp::new("foreignrb");
    let a = Load::start();
    let b = Load::start();
    let cpus = node0_cpus();
    set_affinity(b.tid, &cpus);
    let before = affinity(b.tid);
    for tid in [b.tid, b.pid] {
        let rec = rollback_record(&a, json!([]), json!([{ "tid": tid, "cpus": [cpus[cpus.len() - 1]] }]));
        let p = write(&tmp, "rb.json", &rec);
        let o = run(&tmp, &["rollback", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let want = format!("thread {tid} belongs to process {}, not to process {}", b.pid, a.pid);
        assert!(stderr(&o).contains(&want) && stderr(&o).contains("nothing was changed"), "{}", stderr(&o));
        assert_eq!(affinity(b.tid), before, "B's thread was not touched");
        assert_eq!(affinity(b.pid), before, "B's main thread was not touched");
    }
    // A's own thread in the same record is restored; a thread that exited is reported.
    set_affinity(a.tid, &cpus);
    let rec = rollback_record(
        &a,
        json!([]),
        json!([{ "tid": a.tid, "cpus": [cpus[0]] }, { "tid": i32::MAX, "cpus": [cpus[0]] }]),
    );
    let p = write(&tmp, "rb-own.json", &rec);
    let o = run(&tmp, &["rollback", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let r = json_out(&o);
    assert_eq!(affinity(a.tid), vec![cpus[0]]);
    assert_eq!(r["threads"][1]["error"], "the thread has exited", "{r}");
}

/// A record whose thread start time differs (the tid was reused by a new thread of the same
/// process) leaves that thread alone.
#[test]
fn rollback_skips_a_thread_whose_start_time_changed() {
    let tmp = Tmp::new("rbstart");
    let load = Load::start();
    let cpus = node0_cpus();
    set_affinity(load.tid, &cpus);
    let mut rec =
        rollback_record(&load, json!([]), json!([{ "tid": load.tid, "cpus": [cpus[0]], "startTimeTicks": "1" }]));
    let p = write(&tmp, "rb.json", &rec);
    let o = run(&tmp, &["rollback", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(json_out(&o)["threads"][0]["error"].as_str().unwrap().contains("the thread id was reused"));
    assert_eq!(affinity(load.tid), cpus, "left alone");
    // apply writes the thread's start time into the record
    let thread_start = {
        let s = std::fs::read_to_string(format!("/proc/{}/task/{}/stat", load.pid, load.tid)).unwrap();
        s[s.rfind(')').unwrap() + 2..].split_whitespace().nth(19).unwrap().to_string()
    };
    rec["threads"][0]["startTimeTicks"] = json!(thread_start);
    let p = write(&tmp, "rb2.json", &rec);
    let o = run(&tmp, &["rollback", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(affinity(load.tid), vec![cpus[0]]);
    let pl = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), machine(), 0));
    let rb = tmp.file("undo.json");
    let o = run(
        &tmp,
        &["apply", pl.to_str().unwrap(), "-p", &load.pid.to_string(), "-q", "--rollback-out", rb.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rec: Value = serde_json::from_str(&std::fs::read_to_string(&rb).unwrap()).unwrap();
    assert_eq!(rec["threads"][0]["startTimeTicks"], json!(thread_start), "{rec}");
}

/// Rollback records are written like traces: never through a planted link, privately when
/// root, and the default name never replaces an earlier record.
#[test]
fn rollback_records_are_written_safely() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = Tmp::new("rbfile");
    let load = Load::start();
    let p = write(&tmp, "plan.json", &plan(&load, json!(load.start_time()), machine(), 0));
    let pid = load.pid.to_string();
    for _ in 0..2 {
        let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &pid, "-q", "--no-skip"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let recs: Vec<_> = std::fs::read_dir(&tmp.0)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("numascope-rollback-"))
        .collect();
    assert_eq!(recs.len(), 2, "two applies, two records: {:?}", recs.iter().map(|e| e.file_name()).collect::<Vec<_>>());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        for e in &recs {
            assert_eq!(e.metadata().unwrap().permissions().mode() & 0o077, 0, "{:?} is private", e.file_name());
        }
    }
    let victim = tmp.file("victim");
    std::fs::write(&victim, "precious").unwrap();
    let out = tmp.file("undo.json");
    std::os::unix::fs::symlink(&victim, &out).unwrap();
    let o = run(&tmp, &["apply", p.to_str().unwrap(), "-p", &pid, "-q", "--rollback-out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(&out).unwrap().file_type().is_file());
    assert!(std::fs::read_dir(&tmp.0).unwrap().flatten().all(|e| !e.file_name().to_string_lossy().ends_with(".tmp")));
}

/// `numascope serve --port 0` and a POST helper (loopback, token, own Origin).
struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Server {
    fn start(tmp: &Tmp) -> Server {
        let web = tmp.file("web");
        std::fs::create_dir_all(&web).unwrap();
        std::fs::write(web.join("index.html"), "<!doctype html>").unwrap();
        let mut child = Command::new(numascope())
            .args(["serve", "--port", "0", "--web-dir"])
            .arg(&web)
            .arg("--out-dir")
            .arg(tmp.file("out"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut lines, &mut sink);
        });
        let rest = line.trim().strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("URL line {line:?}"));
        let (port, token) = rest.split_once("/?token=").unwrap();
        Server { child, port: port.parse().unwrap(), token: token.into() }
    }

    /// (status, JSON body) of a request.
    fn call(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
        let origin = format!("http://127.0.0.1:{}", self.port);
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nAuthorization: Bearer {}\r\n\
             Origin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            self.token,
            body.len()
        );
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response");
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        let v = serde_json::from_slice(&raw[split + 4..]).unwrap_or(Value::Null);
        (status, v)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Through `numascope serve`, the whole-address-space plan used to kill the server. Now every
/// hostile plan or record is answered with a 4xx and a JSON error, and the server keeps
/// answering.
#[test]
fn serve_answers_hostile_plans_and_records_with_4xx_and_keeps_running() {
    let tmp = Tmp::new("servehostile");
    let a = Load::start();
    let b = Load::start();
    let srv = Server::start(&tmp);
    let cpus = node0_cpus();
    set_affinity(b.tid, &cpus);
    let before = affinity(b.tid);
    let mut whole = plan(&a, json!(a.start_time()), machine(), 0);
    whole["pageRanges"] = json!([{ "start": "0x1000", "end": "0x7ffffffff000", "action": "move", "toNodes": [0] }]);
    let mut outside = whole.clone();
    outside["pageRanges"][0]["end"] = json!("0x10000");
    let cases = [
        ("/api/apply", json!({ "plan": whole, "pid": a.pid, "dryRun": true }), 413, "plan-too-large"),
        ("/api/apply", json!({ "plan": whole, "pid": a.pid }), 413, "plan-too-large"),
        ("/api/apply", json!({ "plan": outside, "pid": a.pid, "dryRun": true }), 409, "range-not-mapped"),
        ("/api/apply", json!({ "plan": { "format": "numascope-plan" }, "pid": a.pid }), 400, "invalid-plan"),
        (
            "/api/rollback",
            json!({ "record": rollback_record(&a, json!([{ "start": "0x1000", "count": 1u64 << 40, "node": 0 }]), json!([])) }),
            413,
            "record-too-large",
        ),
        (
            "/api/rollback",
            json!({ "record": rollback_record(&a, json!([]), json!([{ "tid": b.tid, "cpus": [cpus[cpus.len() - 1]] }])) }),
            409,
            "foreign-thread",
        ),
        ("/api/rollback", json!({ "record": { "format": "numascope-rollback", "pid": -1 } }), 400, "invalid-record"),
    ];
    for (path, body, status, code) in cases {
        let (s, v) = srv.call("POST", path, &body.to_string());
        assert_eq!((s, v["error"]["code"].as_str()), (status, Some(code)), "{path}: {v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        let (s, _) = srv.call("GET", "/api/topology", "");
        assert_eq!(s, 200, "the server still answers after {path} {code}");
    }
    assert_eq!(affinity(b.tid), before, "B's thread was not touched");
    // and a valid dry run still works
    let (s, v) = srv.call(
        "POST",
        "/api/apply",
        &json!({ "plan": plan(&a, json!(a.start_time()), machine(), 0), "pid": a.pid, "dryRun": true }).to_string(),
    );
    assert_eq!(s, 200, "{v}");
}

// ---------------------------------------------------------------- weighted interleave (issue 17)

/// A weighted-interleave range is placed by move_pages on any kernel (here over node 0 only:
/// every slot is node 0) and verified against its weights; the plan's system weights are only
/// reported without --set-system-weights, and with it a kernel without weighted interleave is
/// refused naming the version it needs (this host's 6.1), before anything changes.
#[test]
fn weighted_interleave_range_and_system_weights() {
    let tmp = Tmp::new("apply-weighted");
    let load = Load::start();
    let m = machine();
    let n0 = m["nodeIds"][0].as_u64().unwrap() as u32;
    let mut p = plan(&load, json!(load.start_time()), m, n0);
    p["pageRanges"][0]["action"] = json!("weighted-interleave");
    p["pageRanges"][0]["weights"] = json!([3]);
    p["threads"] = json!([]);
    let pid = load.pid.to_string();
    let path = write(&tmp, "weighted.json", &p);
    let o = run(
        &tmp,
        &["apply", path.to_str().unwrap(), "-p", &pid, "--json", "--no-skip", "-q", "--rollback-out", "rb.json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json_out(&o);
    let g = &r["ranges"][0];
    assert_eq!((g["action"].as_str(), g["weights"].clone()), (Some("weighted-interleave"), json!([3])), "{g}");
    let pages = load.shared_len / 4096;
    assert_eq!(g["weightCheck"]["present"], json!(pages), "{g}");
    assert_eq!(g["weightCheck"]["ok"], json!(true), "{g}");
    assert_eq!(g["weightCheck"]["expected"][n0.to_string()], json!(pages));
    let o = run(&tmp, &["apply", path.to_str().unwrap(), "-p", &pid, "--dry-run"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("weighted-interleave to nodes"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    p["systemWeights"] = json!({ "weights": { n0.to_string(): 2 }, "reason": "test" });
    let path = write(&tmp, "system.json", &p);
    let o = run(&tmp, &["apply", path.to_str().unwrap(), "-p", &pid, "--dry-run", "--json", "-q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w = json_out(&o)["warnings"].to_string();
    assert!(w.contains("systemWeights (N0=2) were not applied") && w.contains("--set-system-weights"), "{w}");
    let o =
        run(&tmp, &["apply", path.to_str().unwrap(), "-p", &pid, "--dry-run", "--json", "-q", "--set-system-weights"]);
    if Path::new("/sys/kernel/mm/mempolicy/weighted_interleave").is_dir() {
        // a 6.9+ kernel: the dry run reads the weights and writes nothing
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(json_out(&o)["systemWeights"]["before"]["weights"].is_object());
    } else {
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("has no weighted interleave") && e.contains("Linux 6.9") && e.contains("nothing was changed"),
            "{e}"
        );
    }
}

/// A `move` range covering a whole anonymous mapping whose pages are all on one node is served
/// from /proc/PID/numa_maps (no per-page query before the move, nor in the verification), and
/// gives the same report and rollback record as the per-page queries (`--query-every-page`).
#[test]
fn numa_maps_serves_a_whole_mapping_like_the_per_page_queries() {
    let tmp = Tmp::new("apply-view");
    // a process holding essentially one 64 MiB buffer: the range is most of its resident pages
    let mut child = Command::new(testload())
        .args(["--threads", "0", "--shared-mib", "64", "--seconds", "0", "--hold", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start numascope-testload");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut pid, mut shared, mut len) = (0i32, 0u64, 0u64);
    let mut line = String::new();
    while !line.starts_with("holding") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "testload ended early");
        let kv = |k: &str| line.split_whitespace().find_map(|w| w.strip_prefix(k)).unwrap_or("").to_string();
        if line.starts_with("ready") {
            pid = kv("pid=").parse().unwrap();
        } else if line.starts_with("shared") {
            shared = u64::from_str_radix(kv("addr=").trim_start_matches("0x"), 16).unwrap();
            len = kv("len=").parse().unwrap();
        }
    }
    let pages = len / 4096;
    let plan = json!({
        "format": "numascope-plan", "version": 1,
        "target": { "pid": pid, "startTimeTicks": null, "machine": machine() },
        "pageRanges": [ { "start": format!("0x{shared:x}"), "end": format!("0x{:x}", shared + len),
                          "action": "move", "toNodes": [0] } ],
        "threads": []
    });
    let p = write(&tmp, "plan.json", &plan);
    let pid_s = pid.to_string();
    let mut reports = Vec::new();
    for (i, per_page) in [false, true].into_iter().enumerate() {
        let rb = tmp.file(&format!("rb{i}.json"));
        let mut args = vec!["apply", p.to_str().unwrap(), "-p", &pid_s, "--json", "--no-skip", "-q", "--timings"];
        args.extend(["--rollback-out", rb.to_str().unwrap()]);
        if per_page {
            args.push("--query-every-page");
        }
        let o = run(&tmp, &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let key = |k: &str| -> u64 {
            err.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .unwrap_or_else(|| panic!("{k} in {err}"))
                .parse()
                .unwrap()
        };
        let served = if per_page { 0 } else { pages };
        assert_eq!(key("view_pages_before="), served, "{err}");
        assert_eq!(key("view_pages_after="), served, "{err}");
        let r = json_out(&o);
        assert_eq!(r["status"], "complete", "{r}");
        assert_eq!(r["pages"]["before"], json!({ "0": pages }), "{r}");
        assert_eq!(r["pages"]["moved"], pages, "{r}");
        assert_eq!(r["pages"]["after"], json!({ "0": pages }), "{r}");
        assert_eq!(r["pages"]["onTargetAfter"], pages, "{r}");
        let rec: Value = serde_json::from_str(&std::fs::read_to_string(&rb).unwrap()).unwrap();
        assert_eq!(rec["pages"], json!([{ "start": format!("0x{shared:x}"), "count": pages, "node": 0 }]));
        reports.push(r["pages"].clone());
    }
    assert_eq!(reports[0], reports[1]);
    let _ = child.kill();
    let _ = child.wait();
}
