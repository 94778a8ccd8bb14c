//! End-to-end tests of `numascope record` on this machine: launch, attach, process exit,
//! SIGINT, and error exits. They run the built `numascope` and `numascope-testload` binaries and
//! read the traces back with the Rust reader.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use numascope_core::trace::reader::read_trace;
use numascope_core::trace::TraceData;

mod common;
use common::{numascope, testload, Tmp};

#[derive(Debug, Clone, Copy)]
struct Buffer {
    tid: i32,
    addr: u64,
    len: u64,
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace().find_map(|t| t.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

fn parse_buffer(line: &str) -> Buffer {
    Buffer {
        tid: field(line, "tid=").parse().unwrap(),
        addr: u64::from_str_radix(field(line, "addr=").trim_start_matches("0x"), 16).unwrap(),
        len: field(line, "len=").parse().unwrap(),
    }
}

/// (worker buffers, shared buffer) from testload's stdout.
fn parse_testload(stdout: &str) -> (Vec<Buffer>, Option<Buffer>) {
    let bufs = stdout.lines().filter(|l| l.starts_with("buffer ")).map(parse_buffer).collect();
    let shared = stdout.lines().find(|l| l.starts_with("shared ")).map(parse_buffer);
    (bufs, shared)
}

fn run<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Output {
    Command::new(numascope()).args(args).output().expect("run numascope")
}

/// `numascope record FLAGS -o OUT -- numascope-testload LOAD`, the recording most of these tests
/// make; FLAGS and LOAD are words separated by spaces.
fn record_testload(flags: &str, out: &Path, load: &str) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["record".into()];
    argv.extend(flags.split_whitespace().map(OsString::from));
    argv.extend(["-o".into(), out.into(), "--".into(), testload().into()]);
    argv.extend(load.split_whitespace().map(OsString::from));
    argv
}

fn explain(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn wait_timeout(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("process {} did not finish within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks that every worker's own buffer was first-touched by that worker, page by page.
fn check_worker_buffers(t: &TraceData, buffers: &[Buffer]) {
    let tindex: HashMap<i32, usize> = t.threads.tid.iter().enumerate().map(|(i, &tid)| (tid, i)).collect();
    for b in buffers {
        let ti = *tindex
            .get(&b.tid)
            .unwrap_or_else(|| panic!("worker tid {} missing from threads {:?}", b.tid, t.threads.tid));
        let npages = (b.len / 4096) as usize;
        let in_buf = |a: u64| a >= b.addr && a < b.addr + b.len;
        // Samples that fall in this buffer.
        let mut pages_by_worker: HashSet<u64> = HashSet::new();
        let mut samples_in_buf = 0;
        for i in 0..t.samples.time_us.len() {
            let p = t.samples.page[i];
            assert!(p >= 0, "page-fault samples always have an address");
            let addr = t.pages.address[p as usize] + t.samples.offset[i] as u64;
            if !in_buf(addr) {
                continue;
            }
            samples_in_buf += 1;
            assert_eq!(
                t.samples.thread[i] as usize, ti,
                "a sample in worker {}'s buffer belongs to another thread",
                b.tid
            );
            assert_eq!(t.samples.op.get(i), "fault");
            assert_eq!(t.samples.event.get(i), "page-fault");
            assert_eq!(t.samples.data_source.get(i), "unknown");
            assert_eq!(t.samples.weight[i], 1);
            assert_eq!(t.samples.hops[i], -1);
            pages_by_worker.insert(addr & !4095);
        }
        assert!(
            pages_by_worker.len() * 10 >= npages * 9,
            "worker {}: samples cover {} of {npages} buffer pages ({samples_in_buf} samples in the buffer)",
            b.tid,
            pages_by_worker.len()
        );
        // The pages table says the worker touched them first, and where they are.
        let mut first_by_worker = 0;
        let mut on_node0 = 0;
        for i in 0..t.pages.address.len() {
            if in_buf(t.pages.address[i]) {
                assert_eq!(t.pages.address[i] % 4096, 0);
                if t.pages.first_touch_thread[i] == ti as i32 {
                    first_by_worker += 1;
                }
                if t.pages.node[i] == 0 {
                    on_node0 += 1;
                }
            }
        }
        assert!(
            first_by_worker * 10 >= npages * 9,
            "worker {}: first touch attributed for {first_by_worker}/{npages} pages",
            b.tid
        );
        if single_node() {
            assert!(on_node0 * 10 >= npages * 9, "worker {}: only {on_node0}/{npages} pages on node 0", b.tid);
        }
    }
}

fn single_node() -> bool {
    !Path::new("/sys/devices/system/node/node1").exists()
}

/// region_placements has a region containing the buffer, with pages on node 0.
fn check_region_holds(t: &TraceData, b: &Buffer) {
    let regions: Vec<usize> = (0..t.regions.start.len())
        .filter(|&r| t.regions.start[r] <= b.addr && b.addr + b.len <= t.regions.end[r])
        .collect();
    assert!(!regions.is_empty(), "no region contains buffer {b:?}");
    let rp = &t.region_placements;
    let max_pages = (0..rp.time_us.len())
        .filter(|&i| regions.contains(&(rp.region[i] as usize)) && (rp.node[i] == 0 || !single_node()))
        .map(|i| rp.pages[i] as u64)
        .max()
        .unwrap_or(0);
    assert!(max_pages * 10 >= (b.len / 4096) * 9, "region of buffer {b:?} shows at most {max_pages} pages on node 0");
    for &r in &regions {
        assert_eq!(t.regions.kind.get(r), "anon");
        assert_eq!(t.regions.path[r], None);
    }
}

fn check_common(t: &TraceData) {
    let m = &t.manifest;
    assert_eq!(m.format, "numascope-trace");
    assert_eq!(m.version, 4);
    assert_eq!(m.origin.kind, "recorded");
    assert_eq!(m.origin.generator, "numascope record");
    assert_eq!(m.machine.source, "sysfs");
    assert_eq!(m.capture.sample_count as usize, t.samples.time_us.len());
    assert_eq!(m.tables.len(), 12);
    let pf = m.capture.sources.iter().find(|s| s.id == "page-faults").unwrap();
    assert_eq!(pf.status, "used", "page-faults source: {pf:?}");
    // Every fault (--fault-period 1), or adaptive (the default: no fixed period).
    match pf.sample_period {
        Some(p) => assert_eq!(p, 1),
        None => assert!(pf.reason.as_deref().unwrap_or("").contains("adaptive"), "{pf:?}"),
    }
    let procfs = m.capture.sources.iter().find(|s| s.id == "procfs").unwrap();
    assert_eq!(procfs.status, "used");
    assert_eq!(m.capture.capabilities.len(), 15);
    assert!(m.capture.capabilities.iter().any(|c| c.metric == "allocation-sites"));
    assert!(m.capture.capabilities.iter().any(|c| c.metric == "code-locations"));
    // Times are µs since the start, within the capture.
    let dur = m.capture.duration_us;
    assert!(t.samples.time_us.windows(2).all(|w| w[0] <= w[1]), "samples are in time order");
    assert!(t.samples.time_us.iter().all(|&x| (x as u64) <= dur), "sample times within the capture");
    assert!(t.thread_placements.time_us.iter().all(|&x| (x as u64) <= dur + 1_000_000));
    // Placement and counters from /proc.
    assert!(!t.thread_placements.time_us.is_empty());
    if single_node() {
        assert!(t.thread_placements.node.iter().all(|&n| n == 0));
    }
    assert!(t.counters.counter.iter().any(|c| c == "numa_hit"), "numa_hit counter missing");
    assert!((0..t.counters.time_us.len()).any(|i| t.counters.scope.get(i) == "system" && t.counters.scope_id[i] == -1));
    // Thread indices are valid everywhere.
    let nt = t.threads.tid.len() as u32;
    assert!(t.samples.thread.iter().all(|&x| x < nt));
    assert!(t.thread_placements.thread.iter().all(|&x| x < nt));
    assert!(t.events.thread.iter().all(|&x| x >= -1 && x < nt as i32));
    assert!(t.pages.first_touch_thread.iter().all(|&x| x >= -1 && x < nt as i32));
    let nr = t.regions.start.len() as i32;
    assert!(t.pages.region.iter().all(|&r| r >= -1 && r < nr));
    assert!(t.region_placements.region.iter().all(|&r| (r as i32) < nr));
}

/// Threads that live between two /proc polls (polling every 60 s here, so the poller sees only
/// the main thread at the start) are all in the trace from the kernel's task records: each
/// worker with its name, its exact creation by the main thread and its exit; and its cpu from
/// its samples.
#[test]
fn short_lived_threads_come_from_the_task_records() {
    let tmp = Tmp::new("tasks");
    let out = tmp.file("tasks.numascope");
    // The workers start after 0.4 s, after the first poll; the next is at 60 s.
    let o = run(record_testload(
        "--interval-ms 60000 --fault-period 1",
        &out,
        "--start-delay 0.4 --threads 6 --mib 1 --shared-mib 1 --seconds 0.05",
    ));
    assert!(o.status.success(), "{}", explain(&o));
    let (buffers, shared) = parse_testload(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(buffers.len(), 6, "{}", explain(&o));
    let main_tid = shared.unwrap().tid;
    let t = read_trace(&out).unwrap().to_trace_data();
    let main_ti = t.threads.tid.iter().position(|&x| x == main_tid).expect("main thread") as u32;
    check_common(&t);
    let end_us = t.manifest.capture.duration_us;
    let mut names = HashSet::new();
    for b in &buffers {
        let ti = t.threads.tid.iter().position(|&x| x == b.tid).unwrap_or_else(|| panic!("worker {} missing", b.tid));
        assert!(
            t.threads.name[ti].starts_with("testload-w"),
            "the name the thread gave itself: {}",
            t.threads.name[ti]
        );
        names.insert(t.threads.name[ti].clone());
        let (first, last) = (t.threads.first_seen_us[ti], t.threads.last_seen_us[ti]);
        assert!(first <= last && (last as u64) <= end_us, "worker {}: {first}..{last} of {end_us} us", b.tid);
        let evs: Vec<usize> = (0..t.events.time_us.len()).filter(|&e| t.events.thread[e] == ti as i32).collect();
        let start: Vec<&usize> = evs.iter().filter(|&&e| t.events.kind.get(e) == "thread-start").collect();
        let exit: Vec<&usize> = evs.iter().filter(|&&e| t.events.kind.get(e) == "thread-exit").collect();
        assert_eq!((start.len(), exit.len()), (1, 1), "one start and one exit for {}: {evs:?}", b.tid);
        assert!(
            t.events.detail[*start[0]].contains(&format!("created by thread {main_tid}")),
            "{}",
            t.events.detail[*start[0]]
        );
        assert_eq!(t.events.time_us[*start[0]], first, "the thread starts at its creation");
        assert_eq!(t.events.time_us[*exit[0]], last, "and ends at its exit");
        // Its samples fall inside its life.
        let own: Vec<i64> = (0..t.samples.time_us.len())
            .filter(|&k| t.samples.thread[k] == ti as u32)
            .map(|k| t.samples.time_us[k])
            .collect();
        assert!(own.iter().all(|&ts| ts >= first && ts <= last), "samples {own:?} outside {first}..{last}");
        // Its placements: the cpu of its first sample, at that sample's time (every fault is
        // sampled here), unless a poll saw it after all (a poll row: the main thread has one at
        // the same time).
        let tp = &t.thread_placements;
        let rows: Vec<usize> = (0..tp.time_us.len()).filter(|&r| tp.thread[r] == ti as u32).collect();
        let k = (0..t.samples.time_us.len()).find(|&k| t.samples.thread[k] == ti as u32).expect("every fault sampled");
        let first = *rows.first().unwrap_or_else(|| panic!("worker {} has samples but no placement", b.tid));
        let polled = (0..tp.time_us.len()).any(|r| tp.thread[r] == main_ti && tp.time_us[r] == tp.time_us[first]);
        if !polled {
            assert_eq!(
                (tp.time_us[first], tp.cpu[first]),
                (t.samples.time_us[k], t.samples.cpu[k]),
                "worker {}",
                b.tid
            );
        }
    }
    assert_eq!(names.len(), 6, "each worker's own name: {names:?}");
    let cap = t.manifest.capture.capabilities.iter().find(|c| c.metric == "thread-placement").unwrap();
    assert!(cap.reason.contains("task records") && cap.reason.contains("6 created"), "{}", cap.reason);
}

/// A wrapper whose work runs in a child process (a shell running the program, then something
/// else): the recording says so on stderr and in the notes, naming the child's pid and what to do.
#[test]
fn a_wrapper_with_a_child_process_is_named() {
    let tmp = Tmp::new("wrapper");
    let out = tmp.file("wrapper.numascope");
    let cmd = format!("{} --threads 1 --mib 1 --shared-mib 1 --seconds 0; true", testload().display());
    let o = run(["record", "-o", out.to_str().unwrap(), "--", "sh", "-c", &cmd]);
    assert!(o.status.success(), "{}", explain(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let child: u32 =
        field(stdout.lines().find(|l| l.starts_with("ready ")).expect("ready line"), "pid=").parse().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let want = format!("started a child process (pid {child}): the trace holds pid ");
    assert!(stderr.contains("numascope: warning: pid ") && stderr.contains(&want), "{stderr}");
    assert!(stderr.contains("numascope record -p PID"), "{stderr}");
    let t = read_trace(&out).unwrap().to_trace_data();
    assert!(t.manifest.capture.notes.iter().any(|n| n.contains(&want)), "{:?}", t.manifest.capture.notes);
    assert!(!t.threads.tid.contains(&(child as i32)), "the child is not a thread of the trace");
}

#[test]
fn launch_records_every_worker_buffer() {
    let tmp = Tmp::new("launch");
    let out = tmp.file("launch.numascope");
    let tl = testload();
    // --fault-period 1: every fault, so every page's first touch can be checked below. --hold 1
    // keeps the buffers mapped a second after the reads, so that the numa_maps polls (every
    // 100 ms, late on a loaded machine) see every worker's buffer before the program exits.
    let o = run(record_testload("--fault-period 1", &out, "--threads 4 --mib 8 --hold 1"));
    assert!(o.status.success(), "{}", explain(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let (buffers, shared) = parse_testload(&stdout);
    assert_eq!(buffers.len(), 4, "{}", explain(&o));
    assert!(stdout.lines().any(|l| l == "done"), "testload's stdout is forwarded");
    assert!(stderr.contains("wrote ") && stderr.contains("samples"), "summary on stderr: {stderr}");

    let f = read_trace(&out).unwrap();
    let t = f.to_trace_data();
    check_common(&t);
    let m = &t.manifest;
    assert_eq!(m.capture.stop_reason, "process-exit");
    let p = m.process.as_ref().unwrap();
    assert!(!p.attached);
    assert_eq!(p.exit_code, Some(0));
    assert_eq!(p.command[0], tl.to_str().unwrap());
    assert!(p.start_time_ticks.is_some());
    assert_eq!(m.origin.command[1], "record");
    assert_eq!(m.capture.lost_samples, 0, "no samples should be lost for 32 MiB");

    assert!(t.threads.tid.len() >= 5, "main + 4 workers, got {:?}", t.threads.tid);
    let shared = shared.unwrap();
    assert!(t.threads.tid.contains(&shared.tid));
    assert!(t.threads.pid.iter().all(|&pid| pid == p.pid));
    // Every worker has samples.
    for b in &buffers {
        let ti = t.threads.tid.iter().position(|&x| x == b.tid).unwrap() as u32;
        assert!(t.samples.thread.contains(&ti), "no samples for worker {}", b.tid);
    }
    check_worker_buffers(&t, &buffers);
    for b in &buffers {
        check_region_holds(&t, b);
    }
    // The shared buffer was first touched by the main thread.
    let main_ti = t.threads.tid.iter().position(|&x| x == shared.tid).unwrap() as i32;
    let shared_pages: Vec<usize> = (0..t.pages.address.len())
        .filter(|&i| t.pages.address[i] >= shared.addr && t.pages.address[i] < shared.addr + shared.len)
        .collect();
    assert!(shared_pages.len() * 10 >= (shared.len / 4096) as usize * 9);
    assert!(shared_pages.iter().all(|&i| t.pages.first_touch_thread[i] == main_ti));
    // Events: the process exit is recorded with its code.
    let exit_ev: Vec<usize> = (0..t.events.time_us.len()).filter(|&i| t.events.kind.get(i) == "process-exit").collect();
    assert_eq!(exit_ev.len(), 1);
    assert_eq!(t.events.value[exit_ev[0]], 0);
    assert!(t.events.kind.iter().any(|k| k == "thread-start"));
    // Worker names from comm.
    let wi = t.threads.tid.iter().position(|&x| x == buffers[0].tid).unwrap();
    assert!(t.threads.name[wi].starts_with("testload-w"), "thread name {:?}", t.threads.name[wi]);
    assert!(t.threads.migrations.iter().all(|&m| m >= -1));
}

#[test]
fn attach_to_running_process() {
    let tmp = Tmp::new("attach");
    let out = tmp.file("attach.numascope");
    let mut tl = Command::new(testload())
        .args(["--threads", "2", "--mib", "4", "--delay", "1.0", "--seconds", "3"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(tl.stdout.take().unwrap()).lines();
    let ready = lines.next().unwrap().unwrap();
    let pid: i32 = field(&ready, "pid=").parse().unwrap();
    // Workers exist now and map their buffers after 1 s: attach before that.
    let o = run(["record", "--fault-period", "1", "-p", &pid.to_string(), "-d", "2.5", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", explain(&o));
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = wait_timeout(&mut tl, Duration::from_secs(20));
    assert!(status.success(), "the attached process must keep running and exit normally: {status:?}");
    let stdout = rest.join("\n");
    let (buffers, _) = parse_testload(&stdout);
    assert_eq!(buffers.len(), 2);

    let t = read_trace(&out).unwrap().to_trace_data();
    check_common(&t);
    let m = &t.manifest;
    assert_eq!(m.capture.stop_reason, "duration");
    let p = m.process.as_ref().unwrap();
    assert!(p.attached);
    assert_eq!(p.pid, pid);
    assert_eq!(p.exit_code, None);
    assert!(p.command.iter().any(|a| a == "--delay"), "command from /proc/PID/cmdline: {:?}", p.command);
    assert!((2_500_000..6_000_000).contains(&m.capture.duration_us), "duration {}", m.capture.duration_us);
    assert!(t.threads.tid.len() >= 3);
    check_worker_buffers(&t, &buffers);
    for b in &buffers {
        check_region_holds(&t, b);
    }
}

/// `-t TID` (perf record -t): page faults are sampled on that worker only; the other worker's
/// faults give no sample, the process is still attached and polled whole, and the notes say so.
/// `-p` with a list is refused: a trace holds one process.
#[test]
fn attach_sampling_only_the_given_thread() {
    let tmp = Tmp::new("attach-tid");
    let out = tmp.file("tid.numascope");
    let mut tl = Command::new(testload())
        .args(["--threads", "2", "--mib", "4", "--delay", "1.0", "--seconds", "3"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(tl.stdout.take().unwrap()).lines();
    let ready = lines.next().unwrap().unwrap();
    let pid: i32 = field(&ready, "pid=").parse().unwrap();
    // The workers start right after the ready line and map their buffers 1 s later: wait for
    // them to exist (created after the main thread: the highest tid is one of them).
    let tasks = || -> Vec<i32> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
            .unwrap_or_default()
    };
    let until = Instant::now() + Duration::from_millis(800);
    let mut tids = tasks();
    while tids.len() < 3 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
        tids = tasks();
    }
    assert!(tids.len() >= 3, "main and two workers: {tids:?}");
    let worker = *tids.iter().max().unwrap();
    let o = run(["record", "--fault-period", "1", "-t", &worker.to_string(), "-d", "2.5", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", explain(&o));
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = wait_timeout(&mut tl, Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
    let (buffers, _) = parse_testload(&rest.join("\n"));
    assert_eq!(buffers.len(), 2);
    assert!(buffers.iter().any(|b| b.tid == worker), "{buffers:?} {worker}");
    let t = read_trace(&out).unwrap().to_trace_data();
    assert_eq!(t.manifest.process.as_ref().unwrap().pid, pid);
    let sampled: HashSet<i32> = t.samples.thread.iter().map(|&i| t.threads.tid[i as usize]).collect();
    assert_eq!(sampled, HashSet::from([worker]), "only the given thread is sampled");
    // the other worker's buffer is placed (the scan covers the process) but has no fault sample
    let other = buffers.iter().find(|b| b.tid != worker).unwrap();
    assert!(t.threads.tid.contains(&other.tid), "the polls still see the other worker");
    assert!(
        t.manifest.capture.notes.iter().any(|n| n.contains(&format!("sampled on threads {worker} only"))),
        "{:?}",
        t.manifest.capture.notes
    );
    let o = run(["record", "-p", &format!("{pid},{}", pid + 1), "-d", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("a trace holds one process"), "{}", explain(&o));
}

#[test]
fn process_exit_before_duration() {
    let tmp = Tmp::new("exit");
    let out = tmp.file("exit.numascope");
    let t0 = Instant::now();
    let o = run(record_testload("-d 30", &out, "--threads 1 --mib 1 --seconds 0.05"));
    assert!(o.status.success(), "{}", explain(&o));
    assert!(t0.elapsed() < Duration::from_secs(20), "the recorder must stop when the process exits");
    let t = read_trace(&out).unwrap().to_trace_data();
    check_common(&t);
    assert_eq!(t.manifest.capture.stop_reason, "process-exit");
    assert!(t.manifest.capture.duration_us < 20_000_000);
    assert_eq!(t.manifest.process.as_ref().unwrap().exit_code, Some(0));

    // A failing command: its exit code is recorded, the recorder still succeeds.
    let out2 = tmp.file("exit3.numascope");
    let o = run(["record", "-q", "-o", out2.to_str().unwrap(), "--", "sh", "-c", "exit 3"]);
    assert!(o.status.success(), "{}", explain(&o));
    let t = read_trace(&out2).unwrap().to_trace_data();
    assert_eq!(t.manifest.capture.stop_reason, "process-exit");
    assert_eq!(t.manifest.process.as_ref().unwrap().exit_code, Some(3));
    assert!(t.manifest.capture.notes.iter().any(|n| n.contains("exited with code 3")));
}

#[test]
fn sigint_stops_and_writes_the_trace() {
    let tmp = Tmp::new("sigint");
    let out = tmp.file("sigint.numascope");
    let mut rec = Command::new(numascope())
        .args(record_testload("--kill-on-stop", &out, "--threads 1 --mib 2 --seconds 60"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(rec.stdout.take().unwrap()).lines();
    // Wait until the worker has touched its buffer.
    loop {
        let l = lines.next().expect("testload output ended early").unwrap();
        if l.starts_with("touched ") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    let status = wait_timeout(&mut rec, Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "recorder exit {status:?}; stderr:\n{err}");
    let t = read_trace(&out).unwrap().to_trace_data();
    check_common(&t);
    let m = &t.manifest;
    assert_eq!(m.capture.stop_reason, "signal");
    assert_eq!(m.process.as_ref().unwrap().exit_code, None);
    assert!(m.capture.notes.iter().any(|n| n.contains("SIGINT")), "{:?}", m.capture.notes);
    assert!(m.capture.notes.iter().any(|n| n.contains("SIGTERM")), "{:?}", m.capture.notes);
    assert_eq!(m.process.as_ref().unwrap().left_running, Some(false));
    assert!(!t.samples.time_us.is_empty());
}

#[test]
fn clear_errors_and_exit_codes() {
    let tmp = Tmp::new("errors");
    let out = tmp.file("x.numascope");
    let out_s = out.to_str().unwrap();

    let o = run(["record", "-o", out_s, "--", "no-such-command-numascope-test"]);
    assert_eq!(o.status.code(), Some(1), "{}", explain(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("command not found: no-such-command-numascope-test"), "{e}");
    assert!(!out.exists());

    // A pid that cannot exist (above pid_max).
    let o = run(["record", "-p", "2147483647", "-d", "1", "-o", out_s]);
    assert_eq!(o.status.code(), Some(1), "{}", explain(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no process with pid 2147483647"));

    // Usage errors exit with 2.
    assert_eq!(run(["record", "-o", out_s]).status.code(), Some(2));
    assert_eq!(run(["record", "-p", "1", "-o", out_s, "--", "true"]).status.code(), Some(2));
    assert_eq!(run(["record", "-d", "-3", "-o", out_s, "--", "true"]).status.code(), Some(2));
    // (without -o the trace goes to a default name: cli_habits.rs, record_default_output_and_json)
    assert_eq!(run(["record", "-o"]).status.code(), Some(2), "-o without its FILE");
    assert_eq!(run(["no-such-subcommand"]).status.code(), Some(2));
    let o = run(["record", "-o", "/nonexistent-dir-numascope/x.numascope", "--", "true"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not exist"));
}

#[test]
fn probe_and_topology_commands() {
    let o = run(["probe"]);
    assert!(o.status.success(), "{}", explain(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    for id in [
        "page-faults",
        "procfs",
        "sysfs-topology",
        "ibs-op",
        "pebs-load",
        "pebs-store",
        "damon",
        "core-counters",
        "uncore",
    ] {
        assert!(s.contains(id), "probe table lacks {id}:\n{s}");
    }
    let o = run(["probe", "--json"]);
    assert!(o.status.success());
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["sources"].as_array().unwrap().len(), 9);
    assert_eq!(j["capabilities"].as_array().unwrap().len(), 14);
    for s in j["sources"].as_array().unwrap() {
        assert!(!s["reason"].as_str().unwrap().is_empty());
    }
    // placement features: one line each on what they mean, the kernel's weighted interleave as sysfs says
    let ids: Vec<&str> = j["placement"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "weighted-interleave",
            "memory-tiers",
            "demotion",
            "numa-balancing",
            "cpu-less-nodes",
            "hmat",
            "damon-modules",
            "sched-ext"
        ]
    );
    assert!(j["placement"].as_array().unwrap().iter().all(|f| !f["meaning"].as_str().unwrap().is_empty()));
    let wi = std::path::Path::new("/sys/kernel/mm/mempolicy/weighted_interleave").is_dir();
    assert_eq!(j["placement"][0]["state"], if wi { "supported" } else { "absent" });
    assert!(s.contains("WHAT IT MEANS FOR PLACEMENT"), "{s}");
    let o = run(["topology", "--json"]);
    assert!(o.status.success());
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["source"], "sysfs");
    assert!(!j["nodes"].as_array().unwrap().is_empty());
    assert!(run(["topology"]).status.success());
}

#[test]
fn debug_write_fixture() {
    let tmp = Tmp::new("fixture");
    let o = run(["debug", "write-fixture", tmp.0.to_str().unwrap()]);
    assert!(o.status.success(), "{}", explain(&o));
    let t = read_trace(&tmp.file("roundtrip.numascope")).unwrap();
    assert_eq!(t.manifest.origin.kind, "synthetic");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.file("roundtrip.expected.json")).unwrap()).unwrap();
    assert_eq!(j["rows"]["samples"], 3);
    // Hidden from --help.
    let help = String::from_utf8_lossy(&run(["--help"]).stdout).to_string();
    assert!(!help.contains("debug"), "{help}");
}

/// With --kill-on-stop the command shares the recorder's process group: Ctrl-C in a terminal
/// reaches the whole foreground process group, the command dies of SIGINT, the recorder stops
/// and still writes the trace.
#[test]
fn ctrl_c_to_the_process_group_with_kill_on_stop() {
    use std::os::unix::process::CommandExt;
    let tmp = Tmp::new("ctrlc");
    let out = tmp.file("ctrlc.numascope");
    let mut rec = Command::new(numascope())
        .args(record_testload("--kill-on-stop -q", &out, "--threads 1 --mib 1 --seconds 60"))
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(rec.stdout.take().unwrap()).lines();
    loop {
        let l = lines.next().expect("testload output ended early").unwrap();
        if l.starts_with("touched ") {
            break;
        }
    }
    unsafe { libc::kill(-(rec.id() as i32), libc::SIGINT) };
    let status = wait_timeout(&mut rec, Duration::from_secs(30));
    assert!(status.success(), "recorder exit {status:?}");
    let t = read_trace(&out).unwrap().to_trace_data();
    let m = &t.manifest;
    assert_eq!(m.capture.stop_reason, "signal");
    assert_eq!(m.process.as_ref().unwrap().exit_code, Some(128 + libc::SIGINT));
    assert!(m.capture.notes.iter().any(|n| n.contains("killed by SIGINT")), "{:?}", m.capture.notes);
    assert!((0..t.events.time_us.len()).any(|i| t.events.kind.get(i) == "process-exit" && t.events.value[i] == 130));
}

/// The state letter of /proc/PID/stat; None when the pid is gone.
fn proc_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next())
}

/// By default the command gets a process group of its own: Ctrl-C to the terminal's foreground
/// group (the recorder's) stops the recording only. The command keeps running (not stopped),
/// the recorder prints its pid and exits, the command is reparented, and it is reaped when it
/// exits later (here by this test, made a subreaper, as init would).
#[test]
fn ctrl_c_leaves_the_launched_command_running() {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl on this process: orphaned descendants are reparented to it.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }, 0);
    let tmp = Tmp::new("detach");
    let out = tmp.file("detach.numascope");
    let err_path = tmp.file("stderr.txt");
    let mut rec = Command::new(numascope())
        .args(record_testload("", &out, "--threads 1 --mib 1 --seconds 60"))
        .stdout(Stdio::piped())
        // A file, not a pipe: the command inherits it and keeps it open after the recorder exits.
        .stderr(std::fs::File::create(&err_path).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(rec.stdout.take().unwrap()).lines();
    let mut pid = 0;
    loop {
        let l = lines.next().expect("testload output ended early").unwrap();
        if l.starts_with("ready ") {
            pid = field(&l, "pid=").parse().unwrap();
        }
        if l.starts_with("touched ") {
            break;
        }
    }
    assert!(pid > 0);
    unsafe { libc::kill(-(rec.id() as i32), libc::SIGINT) };
    let status = wait_timeout(&mut rec, Duration::from_secs(30));
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert!(status.success(), "recorder exit {status:?}; stderr:\n{err}");
    assert!(err.contains(&format!("pid {pid} is still running")), "{err}");
    assert!(err.contains(&format!("numascope apply PLAN.json -p {pid}")), "{err}");
    assert!(err.contains(&format!("kill {pid}")), "{err}");
    let st = proc_state(pid).expect("the command survives Ctrl-C and the recorder's exit");
    assert!(st == 'S' || st == 'R', "running, not stopped: state {st}");
    let t = read_trace(&out).unwrap().to_trace_data();
    let m = &t.manifest;
    assert_eq!(m.capture.stop_reason, "signal");
    let p = m.process.as_ref().unwrap();
    assert_eq!((p.exit_code, p.left_running), (None, Some(true)));
    assert!(m.capture.notes.iter().any(|n| n.contains("left it running")), "{:?}", m.capture.notes);
    assert!(m.capture.notes.iter().any(|n| n.contains("capture stopped by SIGINT")), "{:?}", m.capture.notes);
    // Reparented to this test (the subreaper): it is reaped as a normal child when it exits.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let mut wstatus = 0;
    let r = unsafe { libc::waitpid(pid, &mut wstatus, 0) };
    assert_eq!(r, pid, "waitpid: {}", std::io::Error::last_os_error());
    assert!(libc::WIFSIGNALED(wstatus) && libc::WTERMSIG(wstatus) == libc::SIGTERM, "status {wstatus:#x}");
    assert_eq!(proc_state(pid), None);
}

/// As an unprivileged user (run via setpriv when the tests run as root): attaching to another
/// user's process fails with a clear permission error; recording one's own command works, with
/// user-mode faults only at perf_event_paranoid 2.
#[test]
fn unprivileged_user() {
    use std::os::unix::fs::PermissionsExt;
    let setpriv = Path::new("/usr/bin/setpriv");
    if unsafe { libc::geteuid() } != 0 || !setpriv.exists() {
        numascope_testsupport::skip_outside_ci(format_args!("needs root and /usr/bin/setpriv to run as nobody"));
        return;
    }
    let tmp = Tmp::new("nobody");
    std::fs::set_permissions(&tmp.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    fn as_nobody<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Output {
        Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", numascope().to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    }
    // The binaries must be reachable for nobody (not so under a 0700 home directory).
    let probe_run = as_nobody(["--version"]);
    // Running it is not enough: `record` looks the command up first (stat), which a directory
    // nobody may not search refuses even where the exec itself went through (seen under a
    // `mktemp -d` clone).
    let nobody_ok = |args: &[&str]| {
        Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let tl = testload();
    let tl_ok = nobody_ok(&[tl.to_str().unwrap(), "--help"]) && nobody_ok(&["test", "-x", tl.to_str().unwrap()]);
    if !probe_run.status.success() || !tl_ok {
        numascope_testsupport::skip(format_args!("user nobody cannot run the test binaries here"));
        return;
    }
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let out = tmp.file("denied.numascope");
    let o = as_nobody(["record", "-p", &victim.id().to_string(), "-d", "1", "-o", out.to_str().unwrap()]);
    let _ = victim.kill();
    let _ = victim.wait();
    assert_eq!(o.status.code(), Some(1), "{}", explain(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("permission denied") && e.contains("another user") && e.contains("CAP_SYS_PTRACE"), "{e}");
    assert!(!out.exists());

    let paranoid: i32 =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap().trim().parse().unwrap();
    if paranoid > 2 {
        return;
    }
    let out = tmp.file("own.numascope");
    let o = as_nobody(record_testload("-q --fault-period 1", &out, "--threads 1 --mib 1 --seconds 0.3"));
    assert!(o.status.success(), "{}", explain(&o));
    let t = read_trace(&out).unwrap().to_trace_data();
    let pf = t.manifest.capture.sources.iter().find(|s| s.id == "page-faults").unwrap();
    assert_eq!(pf.status, "used");
    if paranoid == 2 {
        assert!(pf.reason.as_deref().unwrap().contains("user-mode faults only"), "{pf:?}");
    }
    let (buffers, _) = parse_testload(&String::from_utf8_lossy(&o.stdout));
    check_worker_buffers(&t, &buffers);
}

#[test]
fn fault_period_samples_one_fault_in_n() {
    let tmp = Tmp::new("period");
    let out = tmp.file("period.numascope");
    let o = run(record_testload("--fault-period 16", &out, "--threads 2 --mib 16"));
    assert!(o.status.success(), "{}", explain(&o));
    let t = read_trace(&out).unwrap().to_trace_data();
    let m = &t.manifest;
    let pf = m.capture.sources.iter().find(|s| s.id == "page-faults").unwrap();
    assert_eq!(pf.status, "used");
    assert_eq!(pf.sample_period, Some(16));
    assert!(pf.reason.as_deref().unwrap_or("").contains("one fault in 16"), "{:?}", pf.reason);
    let ft = m.capture.capabilities.iter().find(|c| c.metric == "first-touch").unwrap();
    assert!(ft.reason.contains("one fault in 16"), "{}", ft.reason);
    // 2 x 16 MiB = 8192 worker pages (+ the program's own): about 1 in 16 sampled, each weighing 16.
    let n = t.samples.weight.len();
    assert!(n > 0 && t.samples.weight.iter().all(|&w| w == 16), "weights {:?}", &t.samples.weight[..n.min(8)]);
    assert!((300..=1500).contains(&n), "expected about 8300/16 samples, got {n}");
}

#[test]
fn adaptive_default_bounds_samples_on_a_fault_storm() {
    // The default page-fault sampling is adaptive (kernel frequency mode, 10 000/s): a program
    // that first-touches 64 Ki pages as fast as it can is sampled, each sample weighing the
    // period in force, and the manifest says that first touches were sampled.
    let tmp = Tmp::new("adaptive");
    let out = tmp.file("adaptive.numascope");
    let o = run(record_testload("", &out, "--threads 2 --mib 128 --seconds 0"));
    assert!(o.status.success(), "{}", explain(&o));
    let t = read_trace(&out).unwrap().to_trace_data();
    check_common(&t);
    let m = &t.manifest;
    let pf = m.capture.sources.iter().find(|s| s.id == "page-faults").unwrap();
    assert_eq!(pf.sample_period, None, "{pf:?}");
    let reason = pf.reason.as_deref().unwrap_or("");
    assert!(reason.contains("adaptive: every fault while a thread faults under 10000 /s"), "{reason}");
    let faults: u64 = t.samples.weight.iter().map(|&w| w as u64).sum();
    let n = t.samples.weight.len() as u64;
    // 2 x 128 MiB + 4 MiB shared = 66 560 pages, plus the program's own faults.
    assert!(n * 2 < 66_560, "expected the storm to be sampled, got {n} samples");
    assert!(t.samples.weight.iter().any(|&w| w > 1), "some samples stand for several faults");
    assert!((33_000..=200_000).contains(&faults), "sampled faults weigh {faults}, expected about 66 560");
    assert!(reason.contains("samples had a period above 1"), "{reason}");
    let ft = m.capture.capabilities.iter().find(|c| c.metric == "first-touch").unwrap();
    assert!(ft.reason.contains("adaptive page-fault sampling"), "{}", ft.reason);
}

#[test]
fn per_thread_counters_are_recorded_and_core_counters_say_why_not() {
    // --counters software: the same per-thread counting machinery as the core set, with events
    // every kernel has. Each worker's page-fault counter must cover its own buffer.
    let tmp = Tmp::new("counters");
    let out = tmp.file("counters.numascope");
    // A thread's counters start when the recorder first sees it (the next poll): let the
    // workers exist a while before they touch their buffers.
    let o = run(record_testload(
        "--counters software --interval-ms 50",
        &out,
        "--threads 2 --mib 4 --seconds 0.3 --delay 0.4",
    ));
    assert!(o.status.success(), "{}", explain(&o));
    let (buffers, _) = parse_testload(&String::from_utf8_lossy(&o.stdout));
    let t = read_trace(&out).unwrap().to_trace_data();
    let src = t.manifest.capture.sources.iter().find(|s| s.id == "core-counters").unwrap();
    assert_eq!(src.status, "used", "{src:?}");
    assert!(src.reason.as_deref().unwrap().contains("task-clock-ns, page-faults, context-switches"), "{src:?}");
    let c = &t.counters;
    for b in &buffers {
        let ti = t.threads.tid.iter().position(|&x| x == b.tid).unwrap() as i32;
        let faults: Vec<f64> = (0..c.time_us.len())
            .filter(|&i| c.scope.get(i) == "thread" && c.scope_id[i] == ti && c.counter.get(i) == "page-faults")
            .map(|i| c.value[i])
            .collect();
        assert!(faults.len() >= 2, "worker {}: {} page-fault reads", b.tid, faults.len());
        assert!(faults.windows(2).all(|w| w[0] <= w[1]), "cumulative: {faults:?}");
        let last = *faults.last().unwrap();
        assert!(last >= (b.len / 4096) as f64, "worker {} counted {last} faults for {} pages", b.tid, b.len / 4096);
    }
    assert!(c.time_us.windows(2).all(|w| w[0] <= w[1]), "counters in time order");

    // The default core set: where there is no cpu PMU (our machines) the source says so and the
    // IPC / L3MPKI capabilities stay unavailable; the recording itself is not affected.
    let out2 = tmp.file("core.numascope");
    let o = run(["record", "-q", "-o", out2.to_str().unwrap(), "--", "true"]);
    assert!(o.status.success(), "{}", explain(&o));
    let t2 = read_trace(&out2).unwrap().to_trace_data();
    let src = t2.manifest.capture.sources.iter().find(|s| s.id == "core-counters").unwrap();
    let ipc = t2.manifest.capture.capabilities.iter().find(|c| c.metric == "ipc").unwrap();
    if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        assert_eq!(src.status, "used", "{src:?}");
    } else {
        assert_eq!(src.status, "failed", "{src:?}");
        assert!(src.reason.as_deref().unwrap().contains("no cpu PMU here"), "{src:?}");
        assert_eq!(ipc.status, "unavailable");
        assert!(ipc.reason.contains("core counters: cannot open the cycles counter"), "{}", ipc.reason);
    }
}

/// Mounts tracefs (test setup, as root) when it is not mounted; false when it cannot be had.
fn tracefs_here() -> bool {
    let root = Path::new("/sys/kernel/tracing");
    if !root.join("events").is_dir() {
        let _ = Command::new("mount").args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"]).status();
    }
    root.join("events/exceptions/page_fault_user/id").is_file()
}

#[test]
fn tracepoint_fault_event_records_the_same_first_touches() {
    // `--fault-event tracepoint`: the faults come from exceptions:page_fault_user (error codes).
    // With NUMA balancing off (this machine), every fault is an ordinary fault: the trace holds
    // the same first touches as with the software event, and the manifest names the event.
    if !tracefs_here() {
        numascope_testsupport::skip_outside_ci(format_args!(
            "no exceptions:page_fault_user tracepoint here (tracefs not mountable or not x86)"
        ));
        return;
    }
    let balancing = std::fs::read_to_string("/proc/sys/kernel/numa_balancing").unwrap_or_default();
    let tmp = Tmp::new("tracepoint");
    let out = tmp.file("tp.numascope");
    let o = run(record_testload("--fault-event tracepoint --fault-period 1", &out, "--threads 2 --mib 4"));
    if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("CAP_PERFMON") {
        numascope_testsupport::skip_outside_ci(format_args!(
            "the tracepoint's raw records need CAP_PERFMON: {}",
            explain(&o)
        ));
        return;
    }
    assert!(o.status.success(), "{}", explain(&o));
    let (buffers, _) = parse_testload(&String::from_utf8_lossy(&o.stdout));
    let t = read_trace(&out).unwrap().to_trace_data();
    check_common(&t);
    check_worker_buffers(&t, &buffers);
    let pf = t.manifest.capture.sources.iter().find(|s| s.id == "page-faults").unwrap();
    let reason = pf.reason.as_deref().unwrap_or("");
    assert!(reason.starts_with("tracepoint exceptions:page_fault_user (NUMA balancing"), "{reason}");
    if balancing.trim() == "0" {
        assert!(reason.contains("NUMA balancing was off, so no hinting faults"), "{reason}");
        assert!(t.samples.op.iter().all(|op| op == "fault"), "no access rows without balancing");
        assert!(t.samples.event.iter().all(|e| e == "page-fault"));
        let acc = t.manifest.capture.capabilities.iter().find(|c| c.metric == "memory-accesses").unwrap();
        assert_ne!(acc.status, "estimated", "{acc:?}");
    }
}

// ---------------------------------------------------------------- files created safely (issue 19)

/// Names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// The recorder used to create `OUT.numascope.partial` with a plain create that follows a link
/// planted there: a local user could make root overwrite a file of their choice. Now the
/// temporary file is made exclusively under a random name and the victim is untouched.
#[test]
fn planted_partial_symlink_is_not_followed_by_record() {
    let tmp = Tmp::new("plant");
    let victim = tmp.file("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let out = tmp.file("t.numascope");
    std::os::unix::fs::symlink(&victim, tmp.file("t.numascope.partial")).unwrap();
    let o = run(["record", "-q", "-o", out.to_str().unwrap(), "--", "sh", "-c", "exit 0"]);
    assert!(o.status.success(), "{}", explain(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n", "the victim was not written");
    read_trace(&out).unwrap();
    assert_eq!(names(&tmp.0), vec!["t.numascope", "t.numascope.partial", "victim"], "nothing else left behind");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "a trace written by root is private: {mode:o}");
    }
}

/// A tmpfs mounted for one test (root only), unmounted on drop.
struct Mount(std::path::PathBuf);
impl Mount {
    fn tmpfs(dir: &Path, opts: &str) -> Option<Mount> {
        std::fs::create_dir_all(dir).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let o = Command::new("mount").args(["-t", "tmpfs", "-o", opts, "tmpfs"]).arg(dir).output().ok()?;
        o.status.success().then(|| Mount(dir.to_path_buf()))
    }
}
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// An output that cannot be written used to be found only after the recording, losing it. Now
/// it is refused before the command starts (the command would create a marker file).
#[test]
fn unwritable_output_is_detected_before_recording() {
    let tmp = Tmp::new("unwritable");
    let marker = tmp.file("started");
    let cmd = format!("touch {}", marker.display());
    std::fs::create_dir(tmp.file("adir")).unwrap();
    let mut outputs = vec![
        (tmp.file("adir"), "is a directory"),
        (tmp.file("missing/t.numascope"), "does not exist"),
        (tmp.file("file/t.numascope"), "is not a directory"),
    ];
    std::fs::write(tmp.file("file"), "").unwrap();
    let ro = Mount::tmpfs(&tmp.file("ro"), "ro,size=1m");
    if ro.is_some() {
        outputs.push((tmp.file("ro/t.numascope"), "read-only"));
    } else {
        numascope_testsupport::skip(format_args!("the read-only file system case: needs root and tmpfs mounts"));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let d = tmp.file("noperm");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
        outputs.push((d.join("t.numascope"), "no permission"));
    }
    for (out, why) in outputs {
        let t0 = Instant::now();
        let o = run(["record", "-q", "-d", "5", "-o", out.to_str().unwrap(), "--", "sh", "-c", &cmd]);
        assert_eq!(o.status.code(), Some(2), "{}: {}", out.display(), explain(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(why) && e.contains("nothing was recorded"), "{}: {e}", out.display());
        assert!(!marker.exists(), "{}: the command must not have started", out.display());
        assert!(t0.elapsed() < Duration::from_secs(5), "refused at once");
    }
    drop(ro);
}

/// A full disk while writing used to destroy the trace already at the output (and leave a
/// `.partial` file). Now the old trace stays intact, nothing is left beside it, and the
/// recording is kept in a private fallback file whose path is printed. Needs root (a 1 MiB
/// tmpfs filled up while recording).
#[test]
fn existing_trace_kept_when_the_disk_fills() {
    let tmp = Tmp::new("diskfull");
    let small = tmp.file("small");
    let Some(mnt) = Mount::tmpfs(&small, "size=1m") else {
        numascope_testsupport::skip(format_args!("needs root and tmpfs mounts"));
        return;
    };
    let out = small.join("t.numascope");
    let o = run(["record", "-q", "-o", out.to_str().unwrap(), "--", "sh", "-c", "exit 0"]);
    assert!(o.status.success(), "{}", explain(&o));
    let before = std::fs::read(&out).unwrap();
    // Fill the file system (a recording that has started still creates its files: the check at
    // the start passes, the write at the end fails).
    let mut filler = std::fs::File::create(small.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &chunk).is_ok() {}
    drop(filler);
    let kept_dir = tmp.file("kept");
    let o = Command::new(numascope())
        .args(["record", "-q", "-o", out.to_str().unwrap(), "--", "sh", "-c", "exit 0"])
        .env("NUMASCOPE_FALLBACK_DIR", &kept_dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", explain(&o));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(e.contains("was left as it was") && e.contains("the recording was kept in"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), before, "the existing trace is intact");
    assert_eq!(names(&small), vec!["filler", "t.numascope"], "nothing left beside the output");
    let kept: Vec<_> = std::fs::read_dir(&kept_dir).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(e.contains(&kept[0].display().to_string()), "the printed path is the kept file: {e}");
    let t = read_trace(&kept[0]).unwrap().to_trace_data();
    assert_eq!(t.manifest.capture.stop_reason, "process-exit");
    drop(mnt);
}
