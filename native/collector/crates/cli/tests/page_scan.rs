//! The placement scan end to end: `numascope record` with its default settings must give every
//! resident page of the target a row with its node, whether the pages were faulted in while it
//! recorded (launch, adaptive fault sampling thins the first touches) or before (attach). The
//! reference is the kernel's own count, /proc/PID/numa_maps, read while the program holds its
//! memory still.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use numascope_core::procfs::parse_numa_maps;
use numascope_core::trace::reader::read_trace;
use numascope_core::trace::TraceData;

mod common;
use common::{numascope, testload, Tmp};

/// 2 workers x 96 MiB + 8 MiB shared = 200 MiB, then idle for a minute.
const LOAD: [&str; 10] = ["--threads", "2", "--mib", "96", "--shared-mib", "8", "--seconds", "0", "--hold", "60"];
const TOUCHED_PAGES: u64 = 200 * 256;

/// Kills the child on drop, so that a failing test leaves no program behind.
struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads lines until one starts with `prefix` (within `limit`), returning it.
fn wait_for(lines: &mut Lines<BufReader<ChildStdout>>, prefix: &str, limit: Duration) -> String {
    let end = Instant::now() + limit;
    for l in lines.by_ref() {
        let l = l.unwrap();
        if l.starts_with(prefix) {
            return l;
        }
        assert!(Instant::now() < end, "no {prefix:?} line within {limit:?}");
    }
    panic!("the program's output ended before a {prefix:?} line");
}

fn pid_of(ready: &str) -> i32 {
    ready.trim_start_matches("ready pid=").trim().parse().unwrap()
}

/// Pages resident per node by /proc/PID/numa_maps, in 4 KiB pages.
fn numa_maps_pages(pid: i32) -> BTreeMap<i32, u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/numa_maps")).unwrap();
    let mut per = BTreeMap::new();
    for e in parse_numa_maps(&text) {
        for &(n, p) in &e.nodes {
            *per.entry(n as i32).or_default() += p * e.page_size_bytes() / 4096;
        }
    }
    per
}

/// Rows of `pages` per node (-1: none).
fn trace_pages(t: &TraceData) -> BTreeMap<i32, u64> {
    let mut per = BTreeMap::new();
    for &n in &t.pages.node {
        *per.entry(n as i32).or_default() += 1;
    }
    per
}

fn within(a: u64, b: u64, share: f64) -> bool {
    (a as f64 - b as f64).abs() <= share * b as f64
}

#[test]
fn launched_program_has_every_resident_page_with_its_node_at_stop() {
    let tmp = Tmp::new("scan-launch");
    let out = tmp.file("launch.numascope");
    let tl = testload();
    // Default settings (adaptive fault sampling). The recording stops at 8 s, long after the
    // program has touched its 200 MiB and gone idle; it is then terminated by the recorder.
    let mut args = vec!["record", "-q", "-d", "8", "-o", out.to_str().unwrap(), "--", tl.to_str().unwrap()];
    args.extend(LOAD);
    let mut rec = Reaped(Command::new(numascope()).args(&args).stdout(Stdio::piped()).spawn().unwrap());
    let mut lines = BufReader::new(rec.0.stdout.take().unwrap()).lines();
    let pid = pid_of(&wait_for(&mut lines, "ready pid=", Duration::from_secs(20)));
    wait_for(&mut lines, "holding", Duration::from_secs(30));
    // The program's memory stays as it is from here to the stop.
    let kernel = numa_maps_pages(pid);
    let status = rec.0.wait().unwrap();
    assert!(status.success(), "numascope record failed: {status:?}");

    let t = read_trace(&out).unwrap().to_trace_data();
    let m = &t.manifest;
    assert_eq!(m.capture.stop_reason, "duration");
    let scan = m.capture.page_scan.as_ref().expect("capture.pageScan");
    assert!(scan.last_scan_at_stop, "{scan:?}");
    assert!(scan.scans >= 2, "periodic scans and the one at the stop: {scan:?}");
    assert!(!scan.limit_hit);
    let scanned: BTreeMap<i32, u64> = scan.resident_pages_by_node.iter().map(|n| (n.node, n.pages)).collect();
    let rows = trace_pages(&t);
    let kernel_total: u64 = kernel.values().sum();
    assert!(kernel_total >= TOUCHED_PAGES, "numa_maps counts {kernel_total} pages");
    for (&node, &k) in &kernel {
        let s = scanned.get(&node).copied().unwrap_or(0);
        let r = rows.get(&node).copied().unwrap_or(0);
        assert!(within(s, k, 0.01), "node {node}: the scan at the stop found {s} pages, numa_maps {k}");
        assert!(within(r, k, 0.01), "node {node}: {r} rows in `pages`, numa_maps {k}");
    }
    assert!(rows.get(&-1).copied().unwrap_or(0) * 100 < kernel_total, "pages without a node: {rows:?}");
    // The fault samples saw far fewer pages than the scan: most rows have no first touch, and
    // the pages a sample saw keep theirs.
    let first_touch = t.pages.first_touch_us.iter().filter(|&&u| u >= 0).count() as u64;
    assert!(first_touch > 0 && first_touch <= t.samples.time_us.len() as u64);
    let placement = m.capture.capabilities.iter().find(|c| c.metric == "page-placement").unwrap();
    assert_eq!(placement.status, "measured");
    assert!(placement.reason.starts_with("exhaustive scan of resident pages"), "{}", placement.reason);
}

#[test]
fn attaching_to_a_prefaulted_program_places_its_pages_and_threads() {
    let tmp = Tmp::new("scan-attach");
    let out = tmp.file("attach.numascope");
    let mut tl = Reaped(Command::new(testload()).args(LOAD).stdout(Stdio::piped()).spawn().unwrap());
    let mut lines = BufReader::new(tl.0.stdout.take().unwrap()).lines();
    let pid = pid_of(&wait_for(&mut lines, "ready pid=", Duration::from_secs(20)));
    // Every page is faulted in before the recording starts: no fault sample will see them.
    wait_for(&mut lines, "holding", Duration::from_secs(30));
    let kernel_total: u64 = numa_maps_pages(pid).values().sum();
    let o = Command::new(numascope())
        .args(["record", "-q", "-p", &pid.to_string(), "-d", "2", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(tl.0.try_wait().unwrap().is_none(), "the attached program must still run");

    let t = read_trace(&out).unwrap().to_trace_data();
    let placed = t.pages.node.iter().filter(|&&n| n >= 0).count() as u64;
    assert!(placed * 100 >= kernel_total * 99, "{placed} pages with a node, numa_maps counts {kernel_total}");
    assert!(placed >= TOUCHED_PAGES);
    let scan = t.manifest.capture.page_scan.as_ref().unwrap();
    assert!(scan.scans >= 2 && scan.last_scan_at_stop, "at the start and at the stop: {scan:?}");
    // The main thread and the two workers, with where they ran.
    assert!(t.threads.tid.len() >= 3, "threads {:?}", t.threads.tid);
    assert!(!t.thread_placements.time_us.is_empty());
    assert!(t.thread_placements.node.iter().all(|&n| n >= 0));
}

#[test]
fn a_program_that_exits_keeps_its_last_complete_scan() {
    let tmp = Tmp::new("scan-exit");
    let out = tmp.file("exit.numascope");
    let tl = testload();
    // 40 MiB, then idle 2.5 s and exit by itself: periodic scans run, the one at the stop cannot.
    let o = Command::new(numascope())
        .args(["record", "-q", "-o", out.to_str().unwrap(), "--", tl.to_str().unwrap()])
        .args(["--threads", "2", "--mib", "16", "--shared-mib", "8", "--seconds", "0", "--hold", "2.5"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = read_trace(&out).unwrap().to_trace_data();
    let m = &t.manifest;
    assert_eq!(m.capture.stop_reason, "process-exit");
    let scan = m.capture.page_scan.as_ref().unwrap();
    assert!(scan.scans >= 1 && !scan.last_scan_at_stop, "{scan:?}");
    let placed = t.pages.node.iter().filter(|&&n| n >= 0).count() as u64;
    assert!(placed >= 40 * 256, "{placed} pages with a node after the process exited");
    assert!(placed * 100 >= t.pages.node.len() as u64 * 99, "{placed} of {} rows have a node", t.pages.node.len());
}
