//! End-to-end: programs with known allocation sites run with the shim preloaded; their files
//! are read and symbolized by numascope-core, and every large allocation must be attributed to
//! the line of its `SITE:` marker in the source (markers, not hard-coded line numbers). Needs a
//! C compiler (skipped with a message when `cc` is missing; C++ parts need `c++`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use numascope_core::alloc_sites::{
    is_runtime_frame, load_dir, preload_possible, shim_path, AllocOp, AllocSites, PreloadBlocked, ReadLimits,
    SymbolizeOptions,
};

const MIN_BYTES: u64 = 64 * 1024;
const SAMPLE_BYTES: u64 = 4096;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn scratch(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "numascope-allocshim-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create scratch dir");
    d
}

/// The built shim. `cargo test` does not build a cdylib for integration tests, so the test
/// checks that the one there is not older than its sources (scripts/lib.sh's build_collector
/// builds it with `cargo build --workspace --lib`).
fn shim() -> PathBuf {
    let hint = "build it first: cd native/collector && cargo build -p numascope-allocshim";
    let p =
        shim_path().unwrap_or_else(|| panic!("libnumascope_allocshim.so not found next to the test binary; {hint}"));
    let built = std::fs::metadata(&p).and_then(|m| m.modified()).expect("shim mtime");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        if e.path().extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let m = e.metadata().unwrap().modified().unwrap();
        assert!(m <= built, "{} is older than {}; {hint}", p.display(), e.path().display());
    }
    p
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Compiles `src` with `compiler`; None (with a message) when the compiler is missing.
fn compile(compiler: &str, src: &Path, out: &Path, extra: &[&str]) -> Option<PathBuf> {
    if !have(compiler) {
        numascope_testsupport::skip_outside_ci(format_args!(
            "no `{compiler}` on this machine, {} not built",
            src.display()
        ));
        return None;
    }
    let o = Command::new(compiler)
        .args(["-g", "-O0", "-pthread"])
        .args(extra)
        .arg(src)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run compiler");
    assert!(o.status.success(), "{compiler} {} failed: {}", src.display(), String::from_utf8_lossy(&o.stderr));
    Some(out.to_path_buf())
}

/// Markers `SITE:<name> bytes=<n>[,<n>...]`: site name -> (line, sizes).
fn markers(src: &Path) -> BTreeMap<String, (u32, Vec<u64>)> {
    let text = std::fs::read_to_string(src).expect("read source");
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some(at) = line.find("SITE:") else { continue };
        let rest = &line[at + 5..];
        if !rest.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            continue; // prose about markers, not a marker
        }
        let name = rest.split_whitespace().next().expect("marker name").to_string();
        let bytes = rest.split("bytes=").nth(1).expect("marker bytes=");
        let sizes: Vec<u64> = bytes
            .split(|c: char| !(c.is_ascii_digit() || c == ','))
            .next()
            .unwrap()
            .split(',')
            .map(|s| s.parse().expect("marker size"))
            .collect();
        m.insert(name, ((i + 1) as u32, sizes));
    }
    assert!(!m.is_empty(), "no SITE: markers in {}", src.display());
    m
}

fn run_under_shim(bin: &Path, dir: &Path) {
    let out = Command::new(bin)
        .env("LD_PRELOAD", shim())
        .env("NUMASCOPE_ALLOC_DIR", dir)
        .env("NUMASCOPE_ALLOC_SAMPLE_BYTES", SAMPLE_BYTES.to_string())
        .env("NUMASCOPE_ALLOC_SEED", "7")
        .output()
        .expect("run workload");
    assert!(
        out.status.success(),
        "{} failed under the shim: {:?} {}",
        bin.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn load(dir: &Path) -> Vec<AllocSites> {
    let files = load_dir(dir, &ReadLimits::default(), &SymbolizeOptions::default()).expect("read dir");
    assert!(!files.is_empty(), "the shim wrote no file in {}", dir.display());
    files.into_iter().map(|(p, r)| r.unwrap_or_else(|e| panic!("{}: {e}", p.display()))).collect()
}

/// (file name, line) of an allocation's site.
fn site_of(s: &AllocSites, i: usize) -> Option<(String, u32)> {
    let f = &s.frames[s.allocations[i].site? as usize];
    let file = Path::new(f.file.as_ref()?).file_name()?.to_string_lossy().into_owned();
    Some((file, f.line?))
}

fn describe_stack(s: &AllocSites, i: usize) -> String {
    let mut out = String::new();
    let mut node = s.allocations[i].stack;
    while let Some(n) = node {
        let st = s.stacks[n as usize];
        let f = &s.frames[st.frame as usize];
        let module = f.module.map(|m| s.modules[m as usize].path.display().to_string()).unwrap_or_default();
        out += &format!(
            "\n    {} {}:{} [{module} {:#x}]{}",
            f.function.as_deref().unwrap_or("?"),
            f.file.as_deref().unwrap_or("?"),
            f.line.unwrap_or(0),
            f.module_address,
            if is_runtime_frame(f, &s.modules) { " (runtime)" } else { "" }
        );
        node = st.parent;
    }
    out
}

/// Asserts every allocation of at least MIN_BYTES maps to the marker of its size, and every
/// marker with large sizes is seen. Returns the allocations per marker.
fn check_sites(all: &[AllocSites], src: &Path) -> BTreeMap<String, Vec<(usize, usize)>> {
    let file_name = src.file_name().unwrap().to_string_lossy().into_owned();
    let marks = markers(src);
    let mut by_size: BTreeMap<u64, (&str, u32)> = BTreeMap::new();
    for (name, (line, sizes)) in &marks {
        for &s in sizes {
            by_size.insert(s, (name, *line));
        }
    }
    let mut seen: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for (fi, s) in all.iter().enumerate() {
        for (i, a) in s.allocations.iter().enumerate() {
            if a.size < MIN_BYTES {
                continue;
            }
            assert!(!a.sampled, "allocation of {} bytes marked sampled", a.size);
            let Some(&(name, line)) = by_size.get(&a.size) else {
                panic!("pid {}: unexpected large {} of {} bytes:{}", s.pid, a.op.name(), a.size, describe_stack(s, i));
            };
            let got = site_of(s, i);
            assert_eq!(
                got,
                Some((file_name.clone(), line)),
                "site `{name}` ({} bytes, {}) should be {file_name}:{line}; stack:{}",
                a.size,
                a.op.name(),
                describe_stack(s, i)
            );
            seen.entry(name.to_string()).or_default().push((fi, i));
        }
    }
    for (name, (_, sizes)) in &marks {
        if sizes.iter().any(|&s| s >= MIN_BYTES) {
            assert!(seen.contains_key(name), "no allocation recorded for site `{name}`");
        }
    }
    seen
}

#[test]
fn c_program_sites_threads_fork_and_sampling() {
    let dir = scratch("c");
    let src = fixtures().join("allocs.c");
    let Some(bin) = compile("cc", &src, &dir.join("allocs"), &[]) else { return };
    assert_eq!(preload_possible(&bin), Ok(()));
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    run_under_shim(&bin, &out);
    let all = load(&out);
    for s in &all {
        assert_eq!(s.incomplete, None, "pid {} file incomplete", s.pid);
        for m in &s.modules {
            if m.path.file_name().is_some_and(|n| n == "allocs") {
                assert!(m.problem.is_none(), "{:?}", m.problem);
            }
        }
    }
    assert_eq!(all.len(), 2, "one file for the program and one for its forked child");
    let parent = all.iter().find(|s| all.iter().any(|c| c.ppid == s.pid)).expect("parent file");
    let child = all.iter().find(|s| s.ppid == parent.pid).expect("child file");

    let seen = check_sites(&all, &src);
    let idx = |name: &str| seen.get(name).cloned().unwrap_or_default();
    // Every site in the parent, except the child's.
    for name in
        ["malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "valloc", "mmap", "mremap"]
    {
        let v = idx(name);
        assert_eq!(v.len(), 1, "site {name}: {v:?}");
        assert!(std::ptr::eq(&all[v[0].0], parent), "site {name} recorded in the wrong process");
    }
    let c = idx("child");
    assert_eq!(c.len(), 1);
    assert!(std::ptr::eq(&all[c[0].0], child));
    assert!(child.allocations[c[0].1].end_op == Some(AllocOp::Free), "the child's free was paired");

    // Operations, lifetimes and realloc linkage.
    let get = |name: &str| &parent.allocations[idx(name)[0].1];
    assert_eq!(get("malloc").op, AllocOp::Malloc);
    assert_eq!(get("calloc").op, AllocOp::Calloc);
    assert_eq!(get("realloc").op, AllocOp::Realloc);
    assert!(get("realloc").old_address.is_some());
    assert_eq!(get("posix_memalign").op, AllocOp::PosixMemalign);
    assert_eq!(get("aligned_alloc").op, AllocOp::AlignedAlloc);
    assert_eq!(get("memalign").op, AllocOp::Memalign);
    assert_eq!(get("valloc").op, AllocOp::Valloc);
    assert_eq!(get("mmap").op, AllocOp::Mmap);
    assert_eq!(get("mremap").op, AllocOp::Mremap);
    for name in ["malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign", "valloc"] {
        let a = get(name);
        assert_eq!(a.end_op, Some(AllocOp::Free), "{name} block's free paired");
        assert!(a.end_ns.unwrap() > a.time_ns);
    }
    assert_eq!(get("mmap").end_op, Some(AllocOp::Munmap));
    assert_eq!(get("mremap").end_op, Some(AllocOp::Munmap));
    assert_eq!(get("mmap").mmap_prot, Some((libc_prot_rw()) as u32));

    // Threads: four allocations at the thread site on four threads, none on the main thread.
    let t = idx("thread");
    assert_eq!(t.len(), 4);
    let main_tid = get("malloc").tid;
    let mut tids: Vec<u32> = t.iter().map(|&(_, i)| parent.allocations[i].tid).collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids.len(), 4, "thread site on four distinct threads");
    assert!(!tids.contains(&main_tid));
    assert_eq!(main_tid, parent.pid, "the main thread's tid is the pid");

    // Sampling: small blocks recorded by the byte sampler, attributed to their line, with an
    // unbiased estimate of the bytes allocated there (20,000 x 64 bytes).
    let marks = markers(&src);
    let small_line = marks["small"].0;
    let sampled: Vec<_> = parent
        .allocations
        .iter()
        .enumerate()
        .filter(|(i, a)| a.sampled && site_of(parent, *i).is_some_and(|(_, l)| l == small_line))
        .collect();
    assert!(!sampled.is_empty(), "no sampled small allocation at the small site");
    for (_, a) in &sampled {
        assert_eq!(a.size, 64);
        assert_eq!(a.end_op, None, "frees of sampled blocks are not recorded");
    }
    let estimate: f64 = sampled.iter().map(|(_, a)| a.weight_bytes).sum();
    let truth = 20_000.0 * 64.0;
    assert!(
        (estimate - truth).abs() < 0.25 * truth,
        "sampler estimate {estimate:.0} bytes vs {truth} allocated ({} samples)",
        sampled.len()
    );
}

/// Frees around the fast paths' decision (fixtures/frees.c): tracked blocks freed or
/// reallocated on another thread are paired; small blocks at a freed tracked block's address,
/// and the small block a tracked one was shrunk into, record no free (no unmatched end);
/// calloc overflow fails as without the shim; a forked child samples its own small blocks.
#[test]
fn frees_of_small_blocks_and_across_threads() {
    frees_under("frees", None);
}

/// The same with another allocator underneath the shim (fixtures/offset_alloc.c: blocks whose
/// preceding word is not a glibc chunk size), where every `free` consults the live-block set.
#[test]
fn frees_with_another_allocator_underneath() {
    let dir = scratch("offset-alloc");
    let Some(lib) = compile("cc", &fixtures().join("offset_alloc.c"), &dir.join("liboffset.so"), &["-shared", "-fPIC"])
    else {
        return;
    };
    frees_under("frees-offset", Some(&lib));
}

/// Runs fixtures/frees.c under the shim (with `other` preloaded after it) and checks its file.
fn frees_under(name: &str, other: Option<&Path>) {
    let dir = scratch(name);
    let src = fixtures().join("frees.c");
    let Some(bin) = compile("cc", &src, &dir.join("frees"), &[]) else { return };
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let mut preload = shim().into_os_string();
    if let Some(other) = other {
        preload.push(" ");
        preload.push(other);
    }
    let o = Command::new(&bin)
        .env("LD_PRELOAD", preload)
        .env("NUMASCOPE_ALLOC_DIR", &out)
        .env("NUMASCOPE_ALLOC_SAMPLE_BYTES", SAMPLE_BYTES.to_string())
        .env("NUMASCOPE_ALLOC_SEED", "11")
        .output()
        .expect("run frees");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "frees failed under the shim: {:?} {stdout} {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let reused: u32 = stdout.trim().strip_prefix("reused ").and_then(|n| n.parse().ok()).expect("reused count");
    assert!(
        reused > 0,
        "glibc did not hand the freed tracked block's address to a small block; the case is not exercised"
    );

    let all = load(&out);
    assert_eq!(all.len(), 2, "one file for the program and one for its forked child");
    for s in &all {
        assert_eq!(s.incomplete, None, "pid {} file incomplete", s.pid);
    }
    let parent = all.iter().find(|s| all.iter().any(|c| c.ppid == s.pid)).expect("parent file");
    let child = all.iter().find(|s| s.ppid == parent.pid).expect("child file");
    let seen = check_sites(&all, &src);
    let get = |name: &str| {
        let v = seen.get(name).cloned().unwrap_or_default();
        assert_eq!(v.len(), 1, "site {name}: {v:?}");
        assert!(std::ptr::eq(&all[v[0].0], parent), "site {name} recorded in the wrong process");
        &parent.allocations[v[0].1]
    };
    assert_eq!(get("cross").end_op, Some(AllocOp::Free), "freed on another thread");
    let (moved, grown) = (get("moved"), get("grown"));
    assert_eq!(moved.end_op, Some(AllocOp::Realloc), "reallocated on another thread");
    assert_eq!(grown.old_address, Some(moved.address));
    assert_ne!(grown.tid, moved.tid);
    assert_eq!(grown.end_op, Some(AllocOp::Free));
    assert_eq!(get("reused").end_op, Some(AllocOp::Free));
    let shrunk = get("shrunk");
    assert_eq!(shrunk.end_op, Some(AllocOp::Realloc));
    assert_eq!(parent.unmatched_ends, 0, "a free or unmap was recorded for a block that was not");
    assert_eq!(child.unmatched_ends, 0);

    let line = markers(&src)["childsmall"].0;
    let at_line = |s: &AllocSites| {
        (0..s.allocations.len())
            .filter(|&i| s.allocations[i].sampled && site_of(s, i).is_some_and(|(_, l)| l == line))
            .count()
    };
    assert!(at_line(child) > 0, "the forked child sampled none of its small blocks");
    assert_eq!(at_line(parent), 0);
}

/// The sampler when its interval (64 KiB) is longer than the threshold (4 KiB), so that each
/// thread's counter is refilled from the rest of the interval again and again
/// (fixtures/sampler.c): the estimate of the small blocks' bytes stays unbiased and every block
/// at or above the threshold is recorded as such, never as a sample.
#[test]
fn sampler_counts_across_refills() {
    let dir = scratch("sampler");
    let src = fixtures().join("sampler.c");
    let Some(bin) = compile("cc", &src, &dir.join("sampler"), &[]) else { return };
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let o = Command::new(&bin)
        .env("LD_PRELOAD", shim())
        .env("NUMASCOPE_ALLOC_DIR", &out)
        .env("NUMASCOPE_ALLOC_MIN_BYTES", "4096")
        .env("NUMASCOPE_ALLOC_SAMPLE_BYTES", "65536")
        .env("NUMASCOPE_ALLOC_SEED", "5")
        .output()
        .expect("run sampler");
    assert!(o.status.success(), "sampler failed under the shim: {:?}", o.status);
    let all = load(&out);
    assert_eq!(all.len(), 1);
    let s = &all[0];
    assert_eq!(s.incomplete, None);
    let marks = markers(&src);
    let (small_line, big_line) = (marks["small"].0, marks["big"].0);
    let at = |line: u32| -> Vec<&numascope_core::alloc_sites::Allocation> {
        (0..s.allocations.len())
            .filter(|&i| site_of(s, i).is_some_and(|(_, l)| l == line))
            .map(|i| &s.allocations[i])
            .collect()
    };
    let big = at(big_line);
    assert_eq!(big.len(), 100, "every block above the threshold recorded");
    assert!(big.iter().all(|a| !a.sampled && a.size == 8192 && a.end_op == Some(AllocOp::Free)));
    let small = at(small_line);
    assert!(small.iter().all(|a| a.sampled && a.size == 100));
    let estimate: f64 = small.iter().map(|a| a.weight_bytes).sum();
    let truth = 200_000.0 * 100.0;
    assert!(
        (estimate - truth).abs() < 0.25 * truth,
        "sampler estimate {estimate:.0} bytes vs {truth} allocated ({} samples)",
        small.len()
    );
}

fn libc_prot_rw() -> i32 {
    3 // PROT_READ | PROT_WRITE
}

#[test]
fn cxx_new_and_std_containers() {
    let dir = scratch("cxx");
    let src = fixtures().join("allocs_new.cpp");
    let Some(bin) = compile("c++", &src, &dir.join("allocs_new"), &[]) else { return };
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    run_under_shim(&bin, &out);
    let all = load(&out);
    assert_eq!(all.len(), 1);
    let seen = check_sites(&all, &src);
    assert_eq!(seen.len(), 3, "{seen:?}");
    // The C++ runtime frame (operator new) is in the stack, below the site.
    let s = &all[0];
    let (_, i) = seen["new"][0];
    let stack = describe_stack(s, i);
    assert!(stack.contains("operator new"), "operator new frame expected in:{stack}");
}

#[test]
fn rust_program_sites() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_numascope-allocshim-rustload"));
    let dir = scratch("rust");
    run_under_shim(&bin, &dir);
    let all = load(&dir);
    assert_eq!(all.len(), 1);
    let seen = check_sites(&all, &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin/rustload.rs"));
    assert_eq!(seen.len(), 5, "{seen:?}");
}

#[test]
fn static_and_setuid_programs_are_refused_with_a_reason() {
    let dir = scratch("static");
    let src = fixtures().join("allocs.c");
    // `cc -static` needs the static C library (libc6-dev's libc.a); skip that part without it.
    let static_bin = dir.join("allocs-static");
    let built = have("cc")
        && Command::new("cc")
            .args(["-O0", "-pthread", "-static"])
            .arg(&src)
            .arg("-o")
            .arg(&static_bin)
            .output()
            .is_ok_and(|o| o.status.success());
    if built {
        match preload_possible(&static_bin) {
            Err(e @ PreloadBlocked::Static { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("statically linked") && msg.contains("--no-alloc-sites"), "{msg}");
            }
            other => panic!("static binary: {other:?}"),
        }
    } else {
        numascope_testsupport::skip(format_args!(
            "`cc -static` cannot link here (no static C library), static refusal not checked"
        ));
    }
    // A script is judged by its interpreter.
    let script = dir.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    assert_eq!(preload_possible(&script), Ok(()));
    let not_elf = dir.join("data.txt");
    std::fs::write(&not_elf, "hello").unwrap();
    assert!(matches!(preload_possible(&not_elf), Err(PreloadBlocked::NotElf { .. })));
    assert!(matches!(preload_possible(&dir.join("missing")), Err(PreloadBlocked::Unreadable { .. })));

    // Set-user-ID to another user: as root, make one; otherwise use a system one if present.
    let euid = unsafe { libc::geteuid() };
    let setuid: Option<PathBuf> = if euid == 0 {
        let p = dir.join("suid");
        std::fs::copy("/bin/true", &p).unwrap();
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path of a file we own.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4755)).unwrap();
        Some(p)
    } else {
        ["/usr/bin/passwd", "/bin/su", "/usr/bin/su", "/usr/bin/mount"].iter().map(PathBuf::from).find(|p| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(p).is_ok_and(|m| m.mode() & 0o4000 != 0 && m.uid() != euid)
        })
    };
    match setuid {
        Some(p) => match preload_possible(&p) {
            Err(e @ PreloadBlocked::SetId { .. }) => assert!(e.to_string().contains("secure mode"), "{e}"),
            other => panic!("set-user-ID program {}: {other:?}", p.display()),
        },
        None => numascope_testsupport::skip(format_args!("no set-user-ID program owned by another user to check")),
    }
}

#[test]
fn unconfigured_or_unwritable_dir_leaves_the_program_alone() {
    // No NUMASCOPE_ALLOC_DIR: pass-through, no message.
    let o = Command::new("/bin/sh").args(["-c", "echo ok"]).env("LD_PRELOAD", shim()).output().unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n");
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    // An output dir that is a symlink is not followed; the program still runs, with a message.
    let dir = scratch("symlink");
    let real = dir.join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = Command::new("/bin/sh")
        .args(["-c", "echo ok"])
        .env("LD_PRELOAD", shim())
        .env("NUMASCOPE_ALLOC_DIR", &link)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot create the output file"));
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
    // A malformed setting: a message, no recording.
    let o = Command::new("/bin/sh")
        .args(["-c", "echo ok"])
        .env("LD_PRELOAD", shim())
        .env("NUMASCOPE_ALLOC_DIR", &real)
        .env("NUMASCOPE_ALLOC_MIN_BYTES", "64k")
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("NUMASCOPE_ALLOC_MIN_BYTES is not a non-negative integer"));
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
}

#[test]
fn output_file_is_private_and_never_overwritten() {
    let dir = scratch("excl");
    let o = Command::new("/bin/sh")
        .args(["-c", "exit 0"])
        .env("LD_PRELOAD", shim())
        .env("NUMASCOPE_ALLOC_DIR", &dir)
        .output()
        .unwrap();
    assert!(o.status.success());
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777, 0o600);
    let all = load(&dir);
    assert_eq!(all[0].incomplete, None);
}

/// The per-thread stack cache (unwind.rs) gives the stacks a full walk gives: the same site
/// reached through two callers whose frames have the same size (the same stack depth), and
/// through recursion of varying depth, each path twice in a row (the second from the cache) and
/// then another, each allocation compared with a run that walks every stack
/// (NUMASCOPE_ALLOC_STACK_CACHE=0).
#[test]
fn stack_cache_gives_the_walked_stacks() {
    let dir = scratch("stack-cache");
    let src = dir.join("callers.c");
    std::fs::write(
        &src,
        r#"#include <stdlib.h>
__attribute__((noinline)) void *big(size_t n) { return malloc(n); }
__attribute__((noinline)) void *via_f(size_t n) { return big(n); }
__attribute__((noinline)) void *via_g(size_t n) { return big(n); }
__attribute__((noinline)) void *deep(int d, size_t n) { return d == 0 ? big(n) : deep(d - 1, n); }
int main(void) {
  for (int k = 0; k < 600; k++) {
    size_t n = 65536 + 4096 * (k % 2);
    int c = k / 2;
    void *p = c % 3 == 0 ? via_f(n) : c % 3 == 1 ? via_g(n) : deep(c % 5, n);
    free(p);
  }
  return 0;
}
"#,
    )
    .unwrap();
    let Some(bin) = compile("cc", &src, &dir.join("callers"), &[]) else { return };
    let stacks = |cache: &str| -> Vec<String> {
        let out = dir.join(format!("out-{cache}"));
        std::fs::create_dir(&out).unwrap();
        let o = Command::new(&bin)
            .env("LD_PRELOAD", shim())
            .env("NUMASCOPE_ALLOC_DIR", &out)
            .env("NUMASCOPE_ALLOC_STACK_CACHE", cache)
            .output()
            .expect("run workload");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let all = load(&out);
        assert_eq!(all.len(), 1);
        let s = &all[0];
        (0..s.allocations.len()).filter(|&i| s.allocations[i].size >= MIN_BYTES).map(|i| describe_stack(s, i)).collect()
    };
    let walked = stacks("0");
    let cached = stacks("1");
    assert_eq!(walked.len(), 600, "every large allocation recorded");
    // Three distinct callers at least: via_f, via_g and deep at several depths.
    for caller in ["via_f", "via_g", "deep"] {
        assert!(walked.iter().any(|s| s.contains(caller)), "{caller} in the stacks");
    }
    for (k, (w, c)) in walked.iter().zip(&cached).enumerate() {
        assert_eq!(w, c, "allocation {k}: the cached stack differs from the walked one");
    }
    assert_eq!(walked.len(), cached.len());
}

/// A program that keeps running after its allocations (a recording stopped without killing it):
/// every event, above the threshold and sampled below it, from the main thread and from a thread
/// that then sleeps, is in the file at once (each thread's block of the file is mapped into the
/// process), and stays there when the process is killed with SIGKILL.
#[test]
fn events_are_in_the_file_while_the_program_runs_and_after_sigkill() {
    let dir = scratch("write-through");
    let src = dir.join("held.c");
    std::fs::write(
        &src,
        r#"#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static volatile int go;
static void *keep[4000];
static void *worker(void *a) {
  char *p = malloc(3 << 20); memset(p, 1, 3 << 20);
  for (int i = 0; i < 4000; i++) keep[i] = malloc(200);
  go = 1;
  for (;;) pause();
  return a;
}
int main(void) {
  pthread_t t; pthread_create(&t, 0, worker, 0);
  char *q = malloc(5 << 18); memset(q, 2, 5 << 18);
  while (!go) usleep(1000);
  printf("ready\n"); fflush(stdout);
  for (;;) pause();
}
"#,
    )
    .unwrap();
    let Some(bin) = compile("cc", &src, &dir.join("held"), &[]) else { return };
    // Shared mappings of the file (the default), and pwrite per event (a file system without
    // shared writable mappings, forced here with NUMASCOPE_ALLOC_SHARED_MAP=0).
    for shared in ["1", "0"] {
        let out_dir = dir.join(format!("out-{shared}"));
        std::fs::create_dir_all(&out_dir).unwrap();
        let mut child = Command::new(&bin)
            .env("LD_PRELOAD", shim())
            .env("NUMASCOPE_ALLOC_DIR", &out_dir)
            .env("NUMASCOPE_ALLOC_SAMPLE_BYTES", "4096")
            .env("NUMASCOPE_ALLOC_SHARED_MAP", shared)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run held program");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        let running = load(&out_dir);
        let _ = child.kill();
        let _ = child.wait();
        let killed = load(&out_dir);
        for (when, sites) in [("while it runs", &running), ("after SIGKILL", &killed)] {
            let allocs: Vec<_> = sites.iter().flat_map(|s| s.allocations.iter()).collect();
            let sizes: Vec<u64> = allocs.iter().map(|a| a.size).collect();
            for want in [3u64 << 20, 5 << 18] {
                assert!(
                    sizes.contains(&want),
                    "shared map {shared}: allocation of {want} bytes not in the file {when}: {sizes:?}"
                );
            }
            // 800,000 bytes of 200-byte blocks at a 4,096-byte mean interval: about 195 samples.
            let sampled = allocs.iter().filter(|a| a.sampled && a.size == 200).count();
            assert!((100..=300).contains(&sampled), "shared map {shared}: {sampled} sampled 200-byte blocks {when}");
        }
        let raw: Vec<_> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| numascope_core::alloc_sites::read_alloc_file(&e.unwrap().path(), &ReadLimits::default()).unwrap())
            .collect();
        assert_eq!(raw.len(), 1);
        assert!(raw[0].end.is_none() && !raw[0].cut_short, "killed: no end record, nothing torn");
        assert!(raw[0].incomplete_reason().unwrap().contains("every event it finished"));
        assert_eq!(
            running.iter().map(|s| s.allocations.len()).sum::<usize>(),
            killed.iter().map(|s| s.allocations.len()).sum::<usize>()
        );
    }
}
