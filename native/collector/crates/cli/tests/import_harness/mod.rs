//! Fuzz harness for `numascope import` (shared by tests/import_fuzz.rs and
//! tests/import_regressions.rs; docs/robustness.md, "perf.data import (Rust)").
//!
//! Each input is imported by the real binary in a child process, so that every way it can
//! fail is seen and counted rather than taking the harness down with it:
//! - a panic: "panicked" or the CLI's "internal error" (a caught panic) in stderr, exit 101/70;
//! - an abort or another signal (SIGABRT, SIGSEGV, ...) from the wait status;
//! - over-memory: the child runs under RLIMIT_AS = [`MEM_LIMIT`] (set with setrlimit between
//!   fork and exec), so an allocation beyond it fails and Rust aborts with "memory allocation
//!   of N bytes failed"; the peak RSS from wait4's rusage is also checked against the limit;
//! - a hang: the child is killed after [`TIMEOUT`] of wall-clock time;
//! - leftovers: the output directory must hold exactly the output after success and nothing
//!   after an error;
//! - bad output: a successful import must give a trace that numascope's reader opens (so
//!   manifest.json is valid UTF-8 JSON).
//!
//! Inputs are mutations of the real perf.data files in shared/data/perfdata, deterministic
//! from a seed (splitmix64), so any failure is reproduced by its seed and index; failing
//! inputs are also saved under CARGO_TARGET_TMPDIR/import-fuzz-failures.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use numascope_core::decode::perf_file;

/// Address-space limit of each child.
pub const MEM_LIMIT: u64 = 1 << 30;
/// Wall-clock limit of each child.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The binary under test; NUMASCOPE_IMPORT_BIN runs another one (e.g. an older build, to
/// see that a regression test fails there).
pub fn bin() -> PathBuf {
    std::env::var_os("NUMASCOPE_IMPORT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_numascope").into())
}

pub fn perfdata_dir() -> PathBuf {
    let base = std::env::var_os("NUMASCOPE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../../shared"));
    let d = base.join("data/perfdata");
    assert!(
        d.is_dir(),
        "real perf.data fixtures not found at {} (set NUMASCOPE_SHARED to the shared/ folder)",
        d.display()
    );
    d
}

pub const ZEN4: &str = "amd-zen4-epyc9254_ibs-op-c2c-phys-addr_ring.perf.data";
pub const IVB: &str = "intel-ivb-ep-4s_xeon-e5-4610v2_perf-mem-load_numatop-fork.perf.data";
pub const SKX: &str = "intel-skx-2s_platinum-8173m_ldlat64-weight-struct_quipper.perf.data";
pub const SNB: &str = "intel-snb-ep-2s_e5-2690_cycles-numa-topology-hdr_quipper.perf.data";

pub fn real_file(name: &str) -> Vec<u8> {
    std::fs::read(perfdata_dir().join(name)).unwrap()
}

// ---------------------------------------------------------------- random numbers

/// splitmix64: small, fast, deterministic.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())]
    }
}

// ---------------------------------------------------------------- perf.data layout (test side)

fn rd64(b: &[u8], at: usize) -> u64 {
    b.get(at..at.saturating_add(8)).map(|x| u64::from_le_bytes(x.try_into().unwrap())).unwrap_or(0)
}
fn rd32(b: &[u8], at: usize) -> u32 {
    b.get(at..at.saturating_add(4)).map(|x| u32::from_le_bytes(x.try_into().unwrap())).unwrap_or(0)
}
fn rd16(b: &[u8], at: usize) -> u16 {
    b.get(at..at.saturating_add(2)).map(|x| u16::from_le_bytes(x.try_into().unwrap())).unwrap_or(0)
}
pub fn wr64(b: &mut [u8], at: usize, v: u64) {
    if let Some(x) = b.get_mut(at..at.saturating_add(8)) {
        x.copy_from_slice(&v.to_le_bytes());
    }
}
pub fn wr32(b: &mut [u8], at: usize, v: u32) {
    if let Some(x) = b.get_mut(at..at.saturating_add(4)) {
        x.copy_from_slice(&v.to_le_bytes());
    }
}
pub fn wr16(b: &mut [u8], at: usize, v: u16) {
    if let Some(x) = b.get_mut(at..at.saturating_add(2)) {
        x.copy_from_slice(&v.to_le_bytes());
    }
}

/// Where the records are: (start, end), for a normal or pipe-mode file.
pub fn records_span(b: &[u8]) -> (usize, usize) {
    if rd64(b, 8) == 16 {
        return (16, b.len());
    }
    let off = rd64(b, 40) as usize;
    let size = rd64(b, 48) as usize;
    (off.min(b.len()), off.saturating_add(size).min(b.len()))
}

/// File offsets of the records (as far as their sizes make sense).
pub fn record_offsets(b: &[u8]) -> Vec<usize> {
    let (mut p, end) = records_span(b);
    let mut v = Vec::new();
    while p.saturating_add(8) <= end && v.len() < 200_000 {
        let size = rd16(b, p + 6) as usize;
        if size < 8 {
            break;
        }
        v.push(p);
        p += size;
    }
    v
}

/// Offsets of the records of one type.
pub fn records_of_type(b: &[u8], t: u32) -> Vec<usize> {
    record_offsets(b).into_iter().filter(|&o| rd32(b, o) == t).collect()
}

/// Feature table of a normal file: (bit, position of its table entry, offset, size).
pub fn feature_table(b: &[u8]) -> Vec<(u32, usize, u64, u64)> {
    if b.len() < 104 || rd64(b, 8) == 16 {
        return Vec::new();
    }
    let table = rd64(b, 40).saturating_add(rd64(b, 48)) as usize;
    let mut v = Vec::new();
    for bit in 0..256u32 {
        if rd64(b, 72 + (bit as usize / 64) * 8) >> (bit % 64) & 1 == 1 {
            let at = table.saturating_add(v.len() * 16);
            v.push((bit, at, rd64(b, at), rd64(b, at.saturating_add(8))));
        }
    }
    v
}

/// The (offset, size) of one feature section.
pub fn feature(b: &[u8], bit: u32) -> Option<(usize, usize)> {
    feature_table(b).into_iter().find(|f| f.0 == bit).map(|f| (f.2 as usize, f.3 as usize))
}

/// The file without feature `bit`: its bit cleared and its table entry removed (16 bytes of
/// zeros keep the sections after the table where they were).
pub fn drop_feature(b: &[u8], bit: u32) -> Vec<u8> {
    let Some(&(_, at, _, _)) = feature_table(b).iter().find(|f| f.0 == bit) else { return b.to_vec() };
    let table = feature_table(b);
    let end = table.last().map(|f| f.1 + 16).unwrap_or(at + 16);
    let mut out = b.to_vec();
    out.copy_within(at + 16..end, at);
    out[end - 16..end].fill(0);
    let word = 72 + (bit as usize / 64) * 8;
    let w = rd64(&out, word) & !(1u64 << (bit % 64));
    wr64(&mut out, word, w);
    out
}

/// A pipe-mode copy of a normal file (`perf record -o -`): the 16-byte pipe header, one
/// HEADER_ATTR record per attr (with its ids), one HEADER_FEATURE record per feature section
/// that fits a record, then the records.
pub fn to_pipe(b: &[u8]) -> Vec<u8> {
    let mut out = b"PERFILE2".to_vec();
    out.extend_from_slice(&16u64.to_le_bytes());
    let attr_size = rd64(b, 16) as usize;
    let (aoff, asize) = (rd64(b, 24) as usize, rd64(b, 32) as usize);
    let push_record = |out: &mut Vec<u8>, t: u32, body: &[u8]| {
        let size = (8 + body.len()).next_multiple_of(8);
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(size as u16).to_le_bytes());
        out.extend_from_slice(body);
        out.resize(out.len() + size - 8 - body.len(), 0);
    };
    for i in 0..asize / attr_size {
        let e = aoff + i * attr_size;
        let declared = rd32(b, e + 4) as usize;
        let (ids_off, ids_size) = (rd64(b, e + attr_size - 16) as usize, rd64(b, e + attr_size - 8) as usize);
        let mut body = b[e..e + declared].to_vec();
        body.extend_from_slice(&b[ids_off..ids_off + ids_size]);
        push_record(&mut out, 64, &body);
    }
    for (bit, _, off, size) in feature_table(b) {
        if size as usize + 16 <= 0xfff0 {
            let mut body = (bit as u64).to_le_bytes().to_vec();
            body.extend_from_slice(&b[off as usize..(off + size) as usize]);
            push_record(&mut out, 80, &body);
        }
    }
    let (s, e) = records_span(b);
    out.extend_from_slice(&b[s..e]);
    out
}

// ---------------------------------------------------------------- seeds and mutations

pub struct Seed {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The seed corpus: every real file whole (the IVB one is also a small full file), each cut
/// to its first 300 records (faster, so mutations of headers and feature sections get more
/// runs), zstd-compressed copies and a pipe-mode copy.
pub fn seeds() -> Vec<Seed> {
    let mut v = Vec::new();
    for (short, name) in [("zen4", ZEN4), ("ivb", IVB), ("skx", SKX), ("snb", SNB)] {
        let b = real_file(name);
        if let Some(cut) = perf_file::cut_data_section(&b, 300) {
            v.push(Seed { name: format!("{short}-300-records"), bytes: cut });
        }
        v.push(Seed { name: format!("{short}-full"), bytes: b });
    }
    let ivb = real_file(IVB);
    v.push(Seed { name: "ivb-zstd".into(), bytes: perf_file::compress_data_section(&ivb, 2048).unwrap() });
    let zen4_cut = perf_file::cut_data_section(&real_file(ZEN4), 600).unwrap();
    v.push(Seed { name: "zen4-600-zstd".into(), bytes: perf_file::compress_data_section(&zen4_cut, 4096).unwrap() });
    v.push(Seed { name: "ivb-pipe".into(), bytes: to_pipe(&ivb) });
    v
}

/// Values that break size arithmetic.
fn boundary_u64(len: usize, rng: &mut Rng) -> u64 {
    let len = len as u64;
    rng.pick(&[
        0,
        1,
        7,
        8,
        16,
        64,
        104,
        len.saturating_sub(1),
        len,
        len + 1,
        len + 8,
        1 << 31,
        (1 << 32) - 1,
        1 << 32,
        1 << 40,
        1 << 62,
        1 << 63,
        u64::MAX - 7,
        u64::MAX,
    ])
}
fn boundary_u32(rng: &mut Rng) -> u32 {
    rng.pick(&[0, 1, 7, 8, 63, 64, 65, 127, 128, 4096, 0xffff, 0x10000, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff])
}

/// One mutation; returns what it did.
fn mutate_once(b: &mut Vec<u8>, rng: &mut Rng) -> String {
    let len = b.len();
    if len == 0 {
        b.extend_from_slice(b"PERFILE2");
        return "grow empty".into();
    }
    match rng.below(12) {
        0 => {
            let n = 1 + rng.below(8);
            for _ in 0..n {
                let i = rng.below(len);
                b[i] ^= 1 << rng.below(8);
            }
            format!("flip {n} bits")
        }
        1 => {
            let i = rng.below(len);
            let v = rng.pick(&[0u8, 0xff, 0x7f, 0x80, 0x01, 0xfe]);
            b[i] = v;
            format!("byte {i} = {v:#x}")
        }
        2 => {
            // header u64 fields: sizes, sections, feature words
            let at = 8 * (1 + rng.below(12));
            let v = boundary_u64(len, rng);
            wr64(b, at, v);
            format!("header u64 at {at} = {v:#x}")
        }
        3 => {
            let t = feature_table(b);
            if t.is_empty() {
                return mutate_once(b, rng);
            }
            let (bit, at, ..) = t[rng.below(t.len())];
            let at = at + 8 * rng.below(2);
            let v = boundary_u64(len, rng);
            wr64(b, at, v);
            format!("feature {bit} table entry at {at} = {v:#x}")
        }
        4 => {
            // a u32 inside a feature section (string lengths, counts, attr sizes)
            let t = feature_table(b);
            let f: Vec<_> = t.iter().filter(|f| f.3 >= 4 && f.2.saturating_add(f.3) <= len as u64).collect();
            if f.is_empty() {
                return mutate_once(b, rng);
            }
            let &&(bit, _, off, size) = &f[rng.below(f.len())];
            let at = off as usize + 4 * rng.below(size as usize / 4);
            let v = boundary_u32(rng);
            wr32(b, at, v);
            format!("u32 at {at} in feature {bit} = {v:#x}")
        }
        5 | 6 => {
            let offs = record_offsets(b);
            if offs.is_empty() {
                return mutate_once(b, rng);
            }
            let o = offs[rng.below(offs.len())];
            match rng.below(5) {
                0 => {
                    let cur = rd16(b, o + 6);
                    let v = rng.pick(&[0, 1, 7, 8, 9, 16, 0xffff, cur.wrapping_add(8), cur.wrapping_sub(8)]);
                    wr16(b, o + 6, v);
                    format!("record at {o}: size = {v}")
                }
                1 => {
                    let v = rng.pick(&[0u32, 1, 2, 3, 9, 10, 13, 64, 66, 68, 71, 80, 81, 83, 0xffff_ffff]);
                    wr32(b, o, v);
                    format!("record at {o}: type = {v}")
                }
                2 => {
                    let v = rng.pick(&[0x4000u16, 0xffff, 0, 0x2000]);
                    wr16(b, o + 4, v);
                    format!("record at {o}: misc = {v:#x}")
                }
                3 => {
                    let size = rd16(b, o + 6) as usize;
                    let at = o + 8 + 8 * rng.below((size.saturating_sub(8) / 8).max(1));
                    let v = boundary_u64(len, rng);
                    wr64(b, at, v);
                    format!("record at {o}: u64 at {at} = {v:#x}")
                }
                _ => {
                    let size = rd16(b, o + 6) as usize;
                    let at = o + 8 + 4 * rng.below((size.saturating_sub(8) / 4).max(1));
                    let v = boundary_u32(rng);
                    wr32(b, at, v);
                    format!("record at {o}: u32 at {at} = {v:#x}")
                }
            }
        }
        7 => {
            let at = match rng.below(3) {
                0 => rng.below(len),
                1 => rng.below(len.min(200)),
                _ => record_offsets(b).get(rng.below(8)).copied().unwrap_or(0).max(1) + rng.below(16),
            };
            b.truncate(at.min(len));
            format!("truncate to {at}")
        }
        8 => {
            let i = rng.below(len);
            let n = 1 + rng.below(512);
            let e = (i + n).min(len);
            b.drain(i..e);
            format!("delete {i}..{e}")
        }
        9 => {
            let i = rng.below(len);
            let n = 1 + rng.below(512);
            let e = (i + n).min(len);
            let chunk = b[i..e].to_vec();
            let at = rng.below(len);
            b.splice(at..at, chunk);
            format!("duplicate {i}..{e} at {at}")
        }
        10 => {
            // overwrite with a chunk from elsewhere (record bodies in headers, headers in records)
            let i = rng.below(len);
            let n = 8 + rng.below(120);
            let e = (i + n).min(len);
            let chunk = b[i..e].to_vec();
            let at = rng.below(len);
            let end = (at + chunk.len()).min(len);
            b[at..end].copy_from_slice(&chunk[..end - at]);
            format!("copy {i}..{e} over {at}")
        }
        _ => {
            // many random u64s
            let n = 1 + rng.below(4);
            for _ in 0..n {
                let at = rng.below(len);
                let v = boundary_u64(len, rng);
                wr64(b, at, v);
            }
            format!("{n} random u64 = boundary values")
        }
    }
}

/// A mutated input: 1 to 3 mutations of one seed.
pub fn mutate(seed: &Seed, rng: &mut Rng) -> (Vec<u8>, String) {
    let mut b = seed.bytes.clone();
    let n = 1 + rng.below(3);
    let mut what = Vec::new();
    for _ in 0..n {
        what.push(mutate_once(&mut b, rng));
    }
    (b, format!("{}: {}", seed.name, what.join("; ")))
}

// ---------------------------------------------------------------- running one input

/// How one run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A typed error: its kind (see [`error_kind`]) and message.
    Error(String, String),
    /// An error message that is not one of the typed ones.
    Untyped(String),
    Panic(String),
    Abort(String),
    OverMemory(String),
    Signal(i32, String),
    Timeout,
    /// Success, but the trace does not read back.
    BadOutput(String),
    /// Files left in the output directory (after an error, or besides the output).
    Leftover(Vec<String>),
}

impl Outcome {
    pub fn class(&self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Error(k, _) => format!("error:{k}"),
            Outcome::Untyped(_) => "untyped-error".into(),
            Outcome::Panic(_) => "panic".into(),
            Outcome::Abort(_) => "abort".into(),
            Outcome::OverMemory(_) => "over-memory".into(),
            Outcome::Signal(s, _) => format!("signal-{s}"),
            Outcome::Timeout => "timeout".into(),
            Outcome::BadOutput(_) => "bad-output".into(),
            Outcome::Leftover(_) => "leftover-files".into(),
        }
    }
    pub fn is_failure(&self) -> bool {
        !matches!(self, Outcome::Ok | Outcome::Error(..))
    }
}

/// The typed error phrases of `ImportError`'s messages, and their kinds.
pub const ERROR_KINDS: [(&str, &str); 10] = [
    ("cannot read the file", "io"),
    ("not a perf.data file", "not-perf-data"),
    ("unsupported perf.data", "unsupported"),
    ("perf.data is truncated", "truncated"),
    ("perf.data is corrupt", "corrupt"),
    ("exceeds an import limit", "limit"),
    ("cannot read perf.data", "parse"),
    ("internal error", "internal"),
    ("cannot write the trace there", "output"),
    ("writing the trace", "trace"),
];

pub fn error_kind(msg: &str) -> Option<&'static str> {
    ERROR_KINDS.iter().find(|(p, _)| msg.contains(p)).map(|(_, k)| *k)
}

pub struct Run {
    pub outcome: Outcome,
    /// Peak resident set of the child (wait4's ru_maxrss), KiB.
    pub max_rss_kib: u64,
    pub wall: Duration,
    pub stderr: String,
}

/// Extra settings for a run (regression tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// RLIMIT_FSIZE for the child (with SIGXFSZ ignored, so writes fail with EFBIG).
    pub file_size_limit: Option<u64>,
}

/// Imports `input` into `work/out/x.numascope` in a child process under the limits.
pub fn run_import(input: &Path, work: &Path, opts: RunOptions) -> Run {
    let out_dir = work.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("x.numascope");
    let err_path = work.join("stderr.txt");
    let err_file = std::fs::File::create(&err_path).unwrap();
    let mut cmd = Command::new(bin());
    cmd.arg("import")
        .arg("-q")
        .arg(input)
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .env("RUST_BACKTRACE", "0");
    let fsize = opts.file_size_limit;
    // SAFETY: only async-signal-safe calls (setrlimit, signal) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let as_limit = libc::rlimit { rlim_cur: MEM_LIMIT, rlim_max: MEM_LIMIT };
            if libc::setrlimit(libc::RLIMIT_AS, &as_limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            if let Some(n) = fsize {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let l = libc::rlimit { rlim_cur: n, rlim_max: n };
                libc::setrlimit(libc::RLIMIT_FSIZE, &l);
            }
            Ok(())
        });
    }
    let start = Instant::now();
    // Reaped below with wait4 (for its rusage), not with Child::wait.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("spawning numascope");
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; zeroed is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut timed_out = false;
    loop {
        // SAFETY: waiting for our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4 failed: {}", std::io::Error::last_os_error());
        if start.elapsed() > TIMEOUT {
            timed_out = true;
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::wait4(pid, &mut status, 0, &mut usage);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(if start.elapsed() < Duration::from_millis(50) { 1 } else { 5 }));
    }
    let wall = start.elapsed();
    let max_rss_kib = usage.ru_maxrss.max(0) as u64;
    let stderr = String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned();
    let mut left: Vec<String> = std::fs::read_dir(&out_dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    left.sort();

    let outcome = if timed_out {
        Outcome::Timeout
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        if stderr.contains("memory allocation of") {
            Outcome::OverMemory(stderr.clone())
        } else if stderr.contains("panicked") {
            Outcome::Panic(stderr.clone())
        } else if sig == libc::SIGABRT {
            Outcome::Abort(stderr.clone())
        } else {
            Outcome::Signal(sig, stderr.clone())
        }
    } else if max_rss_kib > MEM_LIMIT / 1024 {
        Outcome::OverMemory(format!("peak RSS {max_rss_kib} KiB"))
    } else {
        let code = libc::WEXITSTATUS(status);
        if stderr.contains("panicked") || code == 101 || code == 70 || stderr.contains("internal error") {
            Outcome::Panic(stderr.clone())
        } else if code == 0 {
            if left != ["x.numascope"] {
                Outcome::Leftover(left.clone())
            } else {
                match numascope_core::trace::reader::read_trace(&out) {
                    Ok(_) => Outcome::Ok,
                    Err(e) => Outcome::BadOutput(e.to_string()),
                }
            }
        } else if !left.is_empty() {
            Outcome::Leftover(left.clone())
        } else {
            let msg = stderr.trim().to_string();
            match error_kind(&msg) {
                Some(k) if msg.starts_with("numascope: error: ") && msg.lines().count() == 1 => {
                    Outcome::Error(k.to_string(), msg)
                }
                _ => Outcome::Untyped(msg),
            }
        }
    };
    Run { outcome, max_rss_kib, wall, stderr }
}

/// Writes `bytes` to `work/in.data` and imports it.
pub fn run_bytes(bytes: &[u8], work: &Path, opts: RunOptions) -> Run {
    let input = work.join("in.data");
    std::fs::write(&input, bytes).unwrap();
    run_import(&input, work, opts)
}

/// A fresh scratch directory under the test target dir.
pub fn work_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---------------------------------------------------------------- a fuzz campaign

#[derive(Default)]
pub struct Report {
    pub inputs: u64,
    pub counts: BTreeMap<String, u64>,
    pub peak_rss_kib: u64,
    pub peak_rss_input: String,
    pub slowest: Duration,
    pub slowest_input: String,
    pub total: Duration,
    /// (index, description, outcome class, message, saved input).
    pub failures: Vec<(u64, String, String, String, PathBuf)>,
    /// A message of each error kind.
    pub examples: BTreeMap<String, String>,
}

impl Report {
    pub fn print(&self, seed: u64) {
        eprintln!("import fuzz: seed {seed}, {} inputs in {:.1} s", self.inputs, self.total.as_secs_f64());
        for (k, v) in &self.counts {
            eprintln!("  {k:<24} {v}");
        }
        eprintln!("  peak RSS {:.1} MiB ({})", self.peak_rss_kib as f64 / 1024.0, self.peak_rss_input);
        eprintln!("  slowest {:.2} s ({})", self.slowest.as_secs_f64(), self.slowest_input);
        for (k, m) in &self.examples {
            eprintln!("  e.g. {k}: {m}");
        }
        for (i, what, class, msg, saved) in self.failures.iter().take(20) {
            eprintln!("  FAILURE #{i} {class}: {what}\n    {}\n    input saved as {}", msg.trim(), saved.display());
        }
    }
}

/// Runs every seed unmodified, then `count` mutated inputs from `seed`.
pub fn campaign(count: u64, seed: u64) -> Report {
    let seeds = seeds();
    let work = work_dir(&format!("import-fuzz-{seed}"));
    let failures_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("import-fuzz-failures");
    let mut rng = Rng::new(seed);
    let mut report = Report::default();
    // NUMASCOPE_FUZZ_LOG=FILE: one line per input (index, outcome class, what, message).
    let mut log = std::env::var_os("NUMASCOPE_FUZZ_LOG").map(|p| std::fs::File::create(p).unwrap());
    let start = Instant::now();
    let n_seeds = seeds.len() as u64;
    for i in 0..n_seeds + count {
        let (bytes, what) = if i < n_seeds {
            let s = &seeds[i as usize];
            (s.bytes.clone(), format!("{} (unmodified)", s.name))
        } else {
            let s = &seeds[rng.below(seeds.len())];
            mutate(s, &mut rng)
        };
        let run = run_bytes(&bytes, &work, RunOptions::default());
        report.inputs += 1;
        let class = run.outcome.class();
        if let Some(f) = log.as_mut() {
            use std::io::Write;
            let msg = run.stderr.trim().replace('\n', " | ");
            let _ = writeln!(f, "{i}\t{class}\t{what}\t{msg}");
        }
        *report.counts.entry(class.clone()).or_insert(0) += 1;
        if run.max_rss_kib > report.peak_rss_kib {
            report.peak_rss_kib = run.max_rss_kib;
            report.peak_rss_input = format!("#{i} {what}");
        }
        if run.wall > report.slowest {
            report.slowest = run.wall;
            report.slowest_input = format!("#{i} {what}");
        }
        if let Outcome::Error(_, msg) = &run.outcome {
            report.examples.entry(class.clone()).or_insert_with(|| msg.clone());
        }
        let seed_failed = i < n_seeds && run.outcome != Outcome::Ok;
        // NUMASCOPE_FUZZ_SAVE=CLASS saves the inputs of that outcome class too (debugging).
        if std::env::var("NUMASCOPE_FUZZ_SAVE").is_ok_and(|c| c == class) {
            std::fs::create_dir_all(&failures_dir).unwrap();
            let saved = failures_dir.join(format!("seed{seed}-input{i}-{class}.data"));
            std::fs::write(&saved, &bytes).unwrap();
            eprintln!("saved {class} input #{i} ({what}) as {}: {}", saved.display(), run.stderr.trim());
        }
        if run.outcome.is_failure() || seed_failed {
            // The first 50 failing inputs are kept (a broken build could fail thousands).
            let saved = failures_dir.join(format!("seed{seed}-input{i}.data"));
            if report.failures.len() < 50 {
                std::fs::create_dir_all(&failures_dir).unwrap();
                std::fs::write(&saved, &bytes).unwrap();
            }
            let msg = match &run.outcome {
                Outcome::Leftover(v) => format!("left {v:?}; stderr: {}", run.stderr),
                Outcome::BadOutput(e) => e.clone(),
                _ => run.stderr.clone(),
            };
            report.failures.push((i, what, class, msg, saved));
        }
    }
    report.total = start.elapsed();
    let _ = std::fs::remove_dir_all(&work);
    report
}

pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}
