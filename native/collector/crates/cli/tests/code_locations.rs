//! End-to-end: `numascope record` keeps the code location of every page-fault sample (trace
//! format v3 `samples.stack`). A C program (tests/fixtures/code_sites.c) first-touches three
//! buffers in three functions, one of them through memset; every first-touch fault of a buffer
//! must be attributed to the line marked `TOUCH:<name>` in the source (the innermost frame in
//! the program's own module: memset's caller for the third, which the frame-pointer walk skips
//! and the return address at the stack pointer gives). Built with frame pointers the stacks
//! reach `main` and the thread entry; built without, the capability says the stacks stop early.
//! Needs a C compiler (skipped with a message when `cc` is missing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use numascope_core::trace::reader::read_trace;
use numascope_core::trace::TraceData;

mod common;
use common::{numascope, Tmp};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code_sites.c")
}

fn compile(dir: &Path, name: &str, frame_pointers: bool) -> Option<PathBuf> {
    if !Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success()) {
        numascope_testsupport::skip_outside_ci(format_args!(
            "no `cc` on this machine, the code-location fixture is not built"
        ));
        return None;
    }
    let out = dir.join(name);
    let fp = if frame_pointers { "-fno-omit-frame-pointer" } else { "-fomit-frame-pointer" };
    let o = Command::new("cc").args(["-g", "-O1", fp]).arg(fixture()).arg("-o").arg(&out).output().unwrap();
    assert!(o.status.success(), "cc failed: {}", String::from_utf8_lossy(&o.stderr));
    Some(out)
}

/// `TOUCH:<name>` markers: name -> line.
fn markers() -> BTreeMap<String, i32> {
    let src = std::fs::read_to_string(fixture()).unwrap();
    src.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let m = l.split("TOUCH:").nth(1)?;
            Some((m.split_whitespace().next()?.to_string(), i as i32 + 1))
        })
        .collect()
}

struct Recorded {
    trace: TraceData,
    /// name -> (start, bytes)
    buffers: BTreeMap<String, (u64, u64)>,
}

fn record(bin: &Path, out: &Path) -> Recorded {
    // Every fault sampled (period 1): each page's first touch is in the trace.
    let o = Command::new(numascope())
        .args(["record", "--no-alloc-sites", "--fault-period", "1", "-o"])
        .arg(out)
        .arg("--")
        .arg(bin)
        .output()
        .expect("run numascope record");
    assert!(o.status.success(), "record failed: {}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let buffers = stdout
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("BUF ")?.split_whitespace();
            Some((w.next()?.to_string(), (w.next()?.parse().ok()?, w.next()?.parse().ok()?)))
        })
        .collect::<BTreeMap<_, _>>();
    assert_eq!(buffers.len(), 3, "the program prints its three buffers: {stdout}");
    Recorded { trace: read_trace(out).unwrap().to_trace_data(), buffers }
}

fn capability(t: &TraceData, metric: &str) -> (String, String) {
    let c = t.manifest.capture.capabilities.iter().find(|c| c.metric == metric).expect("capability listed");
    (c.status.clone(), c.reason.clone())
}

/// A stack's frame rows, innermost first.
fn frames_of(t: &TraceData, stack: i32) -> Vec<usize> {
    let st = &t.alloc.stacks;
    let mut rows: Vec<(u16, usize)> = (0..st.stack.len())
        .filter(|&i| st.stack[i] as i32 == stack)
        .map(|i| (st.depth[i], st.frame[i] as usize))
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, f)| f).collect()
}

/// For each buffer: (function, line) of the innermost frame in `bin` of its first-touch
/// samples, with how many samples had it; `None` where no frame of the stack is in `bin`.
fn sites(r: &Recorded, bin: &Path) -> BTreeMap<String, BTreeMap<Option<(String, i32)>, usize>> {
    let t = &r.trace;
    let module = t.alloc.modules.path.iter().position(|p| Path::new(p) == bin).expect("the program is a module") as i32;
    let mut out: BTreeMap<String, BTreeMap<Option<(String, i32)>, usize>> = BTreeMap::new();
    let s = &t.samples;
    for i in 0..s.len() {
        if s.op.get(i) != "fault" || s.page[i] < 0 {
            continue;
        }
        let addr = t.pages.address[s.page[i] as usize] + s.offset[i] as u64;
        let Some((name, _)) = r.buffers.iter().find(|(_, &(a, n))| addr >= a && addr < a + n) else { continue };
        assert!(s.stack[i] >= 0, "a fault sample of {name} has no stack");
        let f = &t.alloc.frames;
        let site = frames_of(t, s.stack[i])
            .into_iter()
            .find(|&k| f.module[k] == module)
            .map(|k| (f.function[k].clone().unwrap_or_default(), f.line[k]));
        *out.entry(name.clone()).or_default().entry(site).or_insert(0) += 1;
    }
    out
}

#[test]
fn first_touches_are_attributed_to_their_function_and_line() {
    let tmp = Tmp::new("code-fp");
    let Some(bin) = compile(&tmp.0, "code-sites-fp", true) else { return };
    let r = record(&bin, &tmp.file("fp.numascope"));
    assert_eq!(r.trace.manifest.version, 4);
    let (status, reason) = capability(&r.trace, "code-locations");
    assert_eq!(status, "measured", "{reason}");
    let lines = markers();
    let got = sites(&r, &bin);
    for (name, func) in [("alpha", "init_alpha"), ("beta", "init_beta"), ("gamma", "init_gamma")] {
        let want = Some((func.to_string(), lines[name]));
        let seen = &got[name];
        // 4 MiB without huge pages: 1024 first touches, each sampled (period 1).
        let total: usize = seen.values().sum();
        assert!(total >= 1000, "{name}: {total} first-touch samples");
        assert_eq!(seen.get(&want).copied().unwrap_or(0), total, "{name}: every first touch at {want:?}, got {seen:?}");
    }
    // With frame pointers, the stacks of the program's own faults reach main and the entry.
    let t = &r.trace;
    let f = &t.alloc.frames;
    let s = &t.samples;
    let alpha = r.buffers["alpha"];
    let i = (0..s.len())
        .find(|&i| {
            s.page[i] >= 0
                && t.pages.address[s.page[i] as usize] >= alpha.0
                && t.pages.address[s.page[i] as usize] < alpha.0 + alpha.1
        })
        .unwrap();
    let names: Vec<String> = frames_of(t, s.stack[i]).into_iter().filter_map(|k| f.function[k].clone()).collect();
    assert_eq!(&names[..2], ["init_alpha", "main"], "{names:?}");
    assert!(names.last().is_some_and(|n| n.starts_with("__libc_start")), "{names:?}");
    // The sampled instruction is exact: depth 0 of a sample's stack is a store in init_alpha.
    assert!(reason.contains("reach a thread entry"), "{reason}");
}

#[test]
fn without_frame_pointers_the_stacks_are_partial_and_the_trace_says_so() {
    let tmp = Tmp::new("code-nofp");
    let Some(bin) = compile(&tmp.0, "code-sites-nofp", false) else { return };
    let r = record(&bin, &tmp.file("nofp.numascope"));
    let (status, reason) = capability(&r.trace, "code-locations");
    assert_eq!(status, "measured");
    assert!(reason.contains("stop before one") && reason.contains("frame pointers"), "{reason}");
    assert!(reason.contains("code-sites-nofp"), "names the module the stacks stop in: {reason}");
    let lines = markers();
    let got = sites(&r, &bin);
    // The faulting instruction itself is exact whatever the frame pointers, and memset's caller
    // comes from the return address at the stack pointer (memset keeps no frame).
    for (name, func) in [("alpha", "init_alpha"), ("beta", "init_beta"), ("gamma", "init_gamma")] {
        let want = Some((func.to_string(), lines[name]));
        let total: usize = got[name].values().sum();
        assert!(total >= 1000, "{name}: {total} first-touch samples");
        assert_eq!(got[name].get(&want).copied().unwrap_or(0), total, "{name}: {:?}", got[name]);
    }
    assert!(reason.contains("frameless leaf function"), "{reason}");
}

#[test]
fn call_stack_depth_zero_records_no_code_locations() {
    let tmp = Tmp::new("code-off");
    let Some(bin) = compile(&tmp.0, "code-sites-off", true) else { return };
    let out = tmp.file("off.numascope");
    let o = Command::new(numascope())
        .args(["record", "--no-alloc-sites", "--call-stack-depth", "0", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = read_trace(&out).unwrap().to_trace_data();
    assert!(t.samples.stack.iter().all(|&s| s == -1));
    let (status, reason) = capability(&t, "code-locations");
    assert_eq!((status.as_str(), reason.contains("--call-stack-depth 0")), ("unavailable", true), "{reason}");
    let bad = Command::new(numascope())
        .args(["record", "--call-stack-depth", "128", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--call-stack-depth must be an integer from 0 to 127"));
}
