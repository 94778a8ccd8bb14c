//! End-to-end: `numascope record` with its defaults preloads the allocation-site shim into a C
//! program the test builds (tests/fixtures/alloc_sites.c), and every large allocation in the
//! trace must be attributed to the line of its `SITE:` marker in the source (markers, not
//! hard-coded line numbers), with a module + offset that finds the same site in a second run.
//! Also: `--no-alloc-sites`, attaching, a static program and an unreadable shim file each give a
//! trace without sites and say why. Needs a C compiler (skipped with a message when `cc` is
//! missing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use numascope_core::trace::reader::read_trace;
use numascope_core::trace::TraceData;

mod common;
use common::{numascope, testload, Tmp};

const MIN_BYTES: u64 = 64 * 1024;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/alloc_sites.c")
}

/// Builds the shim beside `numascope` (a cdylib, which `cargo test` of this crate does not
/// build); cargo does nothing when it is up to date.
fn ensure_shim() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = numascope().parent().unwrap().to_path_buf();
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "numascope-allocshim", "--lib"]).current_dir(env!("CARGO_MANIFEST_DIR"));
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("run cargo to build numascope-allocshim");
        assert!(st.success(), "building numascope-allocshim failed");
        assert!(dir.join("libnumascope_allocshim.so").is_file(), "no shim beside {}", numascope().display());
    });
}

/// Compiles the fixture; None (with a message) when there is no C compiler.
fn compile(dir: &Path, name: &str, extra: &[&str]) -> Option<PathBuf> {
    if !Command::new("cc").arg("--version").output().is_ok_and(|o| o.status.success()) {
        numascope_testsupport::skip_outside_ci(format_args!(
            "no `cc` on this machine, the allocation-site fixture is not built"
        ));
        return None;
    }
    let out = dir.join(name);
    let o = Command::new("cc")
        .args(["-g", "-O0", "-pthread"])
        .args(extra)
        .arg(fixture())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        if extra.contains(&"-static") {
            numascope_testsupport::skip(format_args!("cannot link statically here: {err}"));
            return None;
        }
        panic!("cc failed: {err}");
    }
    Some(out)
}

fn record(args: &[&str], cmd: &[&str]) -> Output {
    ensure_shim();
    let mut c = Command::new(numascope());
    // A fixed sampler seed (passed through to the shim) keeps the sampled blocks reproducible.
    c.arg("record").args(args).arg("--").args(cmd).env_remove("NUMASCOPE_ALLOC_SHIM").env("NUMASCOPE_ALLOC_SEED", "7");
    let o = c.output().expect("run numascope record");
    assert!(o.status.success(), "record failed: {o:?}\n{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Markers `SITE:<name> bytes=<n>[,<n>...]`: size -> (name, line).
fn markers() -> BTreeMap<u64, (String, i32)> {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some(at) = line.find("SITE:") else { continue };
        let rest = &line[at + 5..];
        if !rest.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            continue; // prose about markers
        }
        let name = rest.split_whitespace().next().unwrap().to_string();
        let sizes =
            rest.split("bytes=").nth(1).unwrap().split(|c: char| !(c.is_ascii_digit() || c == ',')).next().unwrap();
        for s in sizes.split(',') {
            m.insert(s.parse().unwrap(), (name.clone(), (i + 1) as i32));
        }
    }
    assert!(m.len() >= 5, "markers not found in the fixture");
    m
}

fn capability<'a>(t: &'a TraceData, metric: &str) -> &'a numascope_core::trace::Capability {
    t.manifest
        .capture
        .capabilities
        .iter()
        .find(|c| c.metric == metric)
        .unwrap_or_else(|| panic!("no capability {metric}"))
}

/// (file name, line) of a frame.
fn file_line(t: &TraceData, f: i32) -> Option<(String, i32)> {
    let fr = &t.alloc.frames;
    let f = usize::try_from(f).ok()?;
    let file = Path::new(fr.file[f].as_ref()?).file_name()?.to_string_lossy().into_owned();
    Some((file, fr.line[f]))
}

fn no_sites(t: &TraceData) {
    assert_eq!(t.alloc.allocations.time_us.len(), 0);
    // The shared code tables hold the samples' stacks only (format v3).
    let sample_stacks: std::collections::HashSet<i32> = t.samples.stack.iter().copied().filter(|&s| s >= 0).collect();
    assert!(t.alloc.stacks.stack.iter().all(|&s| sample_stacks.contains(&(s as i32))), "a stack no sample names");
    assert!(t.regions.alloc_site.iter().all(|s| s.is_none()), "{:?}", t.regions.alloc_site);
    assert_eq!(capability(t, "allocation-sites").status, "unavailable");
}

/// Every allocation of at least MIN_BYTES in the trace maps to its marker's line, and every
/// marker is seen. Returns size -> (module path, build id, module offset of the site frame).
fn check_sites(t: &TraceData, bin: &Path) -> BTreeMap<u64, (String, String, u64)> {
    let marks = markers();
    let a = &t.alloc.allocations;
    let mut seen = BTreeMap::new();
    for i in 0..a.size.len() {
        if a.size[i] < MIN_BYTES {
            assert_eq!(a.sampled[i], 1, "a small allocation not marked sampled");
            continue;
        }
        assert_eq!(a.sampled[i], 0, "allocation of {} bytes marked sampled", a.size[i]);
        let (name, line) =
            marks.get(&a.size[i]).unwrap_or_else(|| panic!("unexpected large {} of {} bytes", a.op.get(i), a.size[i]));
        assert_eq!(
            file_line(t, a.site[i]),
            Some(("alloc_sites.c".into(), *line)),
            "site `{name}` ({} bytes)",
            a.size[i]
        );
        // The stack: innermost frame first, the site among its frames, `main` at the outer end.
        let frames = t.alloc.stack_frames(a.stack[i] as u32);
        assert!(frames.contains(&(a.site[i] as u32)), "site not in its stack");
        let outer: Vec<String> = frames.iter().filter_map(|&f| t.alloc.frames.function[f as usize].clone()).collect();
        assert!(outer.iter().any(|f| f == "main" || f == "start_thread" || f == "worker"), "stack {outer:?}");
        // Thread, region and time.
        let row = usize::try_from(a.thread[i]).expect("allocating thread in the threads table");
        assert_eq!(t.threads.tid[row], a.tid[i]);
        // Regions come from /proc polls (every 100 ms): one that lived 250 ms was seen.
        let end = if a.end_us[i] < 0 { t.manifest.capture.duration_us as i64 } else { a.end_us[i] };
        match usize::try_from(a.region[i]) {
            Ok(r) => assert!(t.regions.start[r] <= a.address[i] && a.address[i] < t.regions.end[r]),
            Err(_) => {
                assert!(end - a.time_us[i] < 250_000, "`{name}` at {:#x} is in no region", a.address[i])
            }
        }
        assert!(a.time_us[i] as u64 <= t.manifest.capture.duration_us);
        assert!(a.end_us[i] == -1 || a.end_us[i] >= a.time_us[i]);
        let f = a.site[i] as usize;
        let m = t.alloc.frames.module[f];
        assert!(m >= 0, "site frame without a module");
        let path = t.alloc.modules.path[m as usize].clone();
        assert_eq!(Path::new(&path).canonicalize().unwrap(), bin.canonicalize().unwrap(), "site module");
        seen.insert(a.size[i], (path, t.alloc.modules.build_id[m as usize].clone(), t.alloc.frames.module_offset[f]));
    }
    for (size, (name, _)) in &marks {
        assert!(seen.contains_key(size), "no allocation of {size} bytes (site `{name}`) in the trace");
    }
    seen
}

/// The recording itself is kept: its page-fault samples stand for the program's ~4,000 first
/// touches. The count of sample rows depends on timing (above the sampling rate a fault row stands
/// for many: a clean-clone run on a busy 2-core machine kept 89 rows for thousands of faults), so
/// the faults the rows stand for (their weights) and the samples the kernel dropped are counted.
fn assert_recording_kept(t: &TraceData) {
    let kept = t.samples.time_us.len() as u64;
    let stand_for: u64 = t.samples.weight.iter().map(|&w| u64::from(w.max(1))).sum();
    let lost = t.manifest.capture.lost_samples;
    assert!(kept > 0, "the recording itself is kept");
    assert!(
        stand_for + lost > 1000,
        "the recording itself is kept: {kept} samples standing for {stand_for} events, {lost} lost"
    );
}

#[test]
fn record_attributes_every_large_allocation_to_its_line() {
    let tmp = Tmp::new("alloc-sites");
    let Some(bin) = compile(&tmp.0, "alloc_sites", &[]) else { return };
    let out = tmp.file("a.numascope");
    record(&["-q", "-o", out.to_str().unwrap()], &[bin.to_str().unwrap()]);
    let t = read_trace(&out).unwrap().to_trace_data();
    assert_eq!(t.manifest.version, 4);
    let cap = capability(&t, "allocation-sites");
    assert_eq!(cap.status, "measured", "{}", cap.reason);
    let first = check_sites(&t, &bin);

    // Region sites: the 8 MiB mapping's region is named after its line.
    let marks = markers();
    let (_, table_line) = &marks[&8_388_608];
    let a = &t.alloc.allocations;
    let i = a.size.iter().position(|&s| s == 8_388_608).unwrap();
    let site = t.regions.alloc_site[a.region[i] as usize].as_deref().expect("region of the table has a site");
    assert!(site.ends_with(&format!("alloc_sites.c:{table_line}")), "{site}");
    assert!(site.starts_with("main "), "{site}");
    // Sampled small blocks stand for more bytes than their size.
    let sampled: Vec<usize> = (0..a.size.len()).filter(|&i| a.sampled[i] == 1).collect();
    assert!(!sampled.is_empty(), "the byte sampler recorded none of 100,000 small blocks (25 MB)");
    assert!(sampled.iter().all(|&i| a.weight_bytes[i] > a.size[i] as f64));

    // A second run of the same binary: every site is found again by module + offset.
    let out2 = tmp.file("b.numascope");
    record(&["-q", "-o", out2.to_str().unwrap()], &[bin.to_str().unwrap()]);
    let second = check_sites(&read_trace(&out2).unwrap().to_trace_data(), &bin);
    assert_eq!(first, second, "sites by (module, build id, offset) differ between runs");
    assert!(first.values().all(|(_, build_id, _)| build_id.len() == 40), "gcc links a 20-byte GNU build id");
}

#[test]
fn no_alloc_sites_records_none_and_says_so() {
    let tmp = Tmp::new("alloc-off");
    let Some(bin) = compile(&tmp.0, "alloc_sites", &[]) else { return };
    let out = tmp.file("off.numascope");
    record(&["-q", "--no-alloc-sites", "-o", out.to_str().unwrap()], &[bin.to_str().unwrap()]);
    let t = read_trace(&out).unwrap().to_trace_data();
    no_sites(&t);
    assert!(capability(&t, "allocation-sites").reason.contains("--no-alloc-sites"));
}

#[test]
fn attached_process_has_regions_without_sites() {
    let tmp = Tmp::new("alloc-attach");
    ensure_shim();
    let mut load = Command::new(testload())
        .args(["--threads", "1", "--mib", "1", "--seconds", "0.2", "--hold", "30"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = tmp.file("attach.numascope");
    let o = Command::new(numascope())
        .args(["record", "-q", "-d", "0.5", "-p", &load.id().to_string(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = load.kill();
    let _ = load.wait();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = read_trace(&out).unwrap().to_trace_data();
    no_sites(&t);
    assert!(!t.regions.start.is_empty(), "regions from /proc/PID/maps");
    let reason = &capability(&t, "allocation-sites").reason;
    assert!(reason.contains("attached") && reason.contains("/proc/PID/maps"), "{reason}");
}

#[test]
fn static_program_is_recorded_without_sites_with_a_warning() {
    let tmp = Tmp::new("alloc-static");
    let Some(bin) = compile(&tmp.0, "alloc_sites_static", &["-static"]) else { return };
    let out = tmp.file("static.numascope");
    let o = record(&["-q", "-o", out.to_str().unwrap()], &[bin.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("warning: allocation sites not recorded") && stderr.contains("statically linked"),
        "{stderr}"
    );
    let t = read_trace(&out).unwrap().to_trace_data();
    no_sites(&t);
    assert!(capability(&t, "allocation-sites").reason.contains("statically linked"));
    assert!(t.manifest.capture.notes.iter().any(|n| n.contains("statically linked")));
    assert_recording_kept(&t);
}

#[test]
fn unreadable_shim_file_keeps_the_recording() {
    let tmp = Tmp::new("alloc-corrupt");
    let Some(bin) = compile(&tmp.0, "alloc_sites", &[]) else { return };
    let out = tmp.file("corrupt.numascope");
    let o = record(&["-q", "-o", out.to_str().unwrap()], &[bin.to_str().unwrap(), "corrupt"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let t = read_trace(&out).unwrap().to_trace_data();
    no_sites(&t);
    let reason = &capability(&t, "allocation-sites").reason;
    assert!(reason.contains("no readable file"), "{reason}");
    assert!(
        t.manifest.capture.notes.iter().any(|n| n.contains("not a numascope allocation-site file")),
        "{:?}",
        t.manifest.capture.notes
    );
    assert!(
        stderr.contains("warning: allocation-site file") && stderr.contains("not a numascope allocation-site file"),
        "{stderr}"
    );
    assert_recording_kept(&t);
}
