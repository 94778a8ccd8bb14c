//! Overhead of the allocation-site shim on allocation-heavy loops. Not part of the test suite:
//! run bench/overhead.sh (it builds in release mode first).
//!
//! The driver runs each workload as a child process, in rounds: each round runs it once without
//! any preload, once with the floor (bench/floor.c, a pass-through interposer that jumps straight
//! on to glibc: what any LD_PRELOAD shim costs at least), once with `check` (the same plus a
//! threshold compare in malloc and a chunk-word compare in free: what a shim that filters each
//! call costs at least; both present when overhead.sh could build them), once with the shim (default settings unless NUMASCOPE_ALLOC_* variables are set), and
//! once with each BENCH_PEERS shim ("name=/path/lib.so,...", e.g. an older build), starting at
//! a different one each round. It prints each one's median time, the ratio of that median to
//! the run without, and the median of the per-round ratios (each run against the run without
//! of the same round, which cancels the slow drifts of a shared machine) with a 95 % interval
//! for it (distribution-free, from the order statistics: the noise shows there); for the shims,
//! the same paired ratio against `check`, what any filtering interposer costs, so that what the
//! shim adds above it shows apart from what interposition costs. Workloads call the C allocator
//! directly:
//!
//! - `small`: 20 M malloc/free of 16..1024-byte blocks over a ring of 4,096 live blocks, each
//!   written once; nothing reaches the threshold, so this measures the fast path and sampler.
//! - `mixed`: the same with every 256th iteration a 64 KiB..1 MiB buffer that is written in
//!   full (a program that allocates buffers in order to use them); those are all recorded.
//! - `strings`: a word-count style program in Rust: 3 M formatted `String` keys into a
//!   `HashMap<String, Vec<u32>>`, rebuilt 4 times (allocation-heavy code that also works).
//! - `threads`: 4 threads (BENCH_THREADS), each 4 M malloc/free of mixed sizes over its own
//!   ring of 4,096 live blocks: 90 % 16 B..1 KiB, 9 % 1..32 KiB, 1 % 64..512 KiB (recorded by
//!   the shim at its defaults), each block written at its first byte and once per 4 KiB page
//!   (a multi-threaded allocation-heavy program that touches what it allocates).
//! - `large`: 400 K malloc/free of 256 KiB blocks that are barely touched: the worst case, each
//!   iteration records an event with a stack and the work around it is nearly nothing.
//!
//! Times are the child's CPU time (user + system, from wait4), which the other load on a
//! shared machine disturbs less than wall time; wall times are printed too.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[inline(never)]
fn churn(iters: usize, big_every: usize) -> u64 {
    const RING: usize = 4096;
    let mut ring = [std::ptr::null_mut::<libc::c_void>(); RING];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut big: *mut libc::c_void = std::ptr::null_mut();
    let mut sum = 0u64;
    for i in 0..iters {
        let slot = (rng.next() as usize) % RING;
        let size = 16 + (rng.next() as usize) % 1009;
        // SAFETY: plain C allocator calls on pointers this loop owns.
        unsafe {
            libc::free(ring[slot]);
            let p = libc::malloc(size) as *mut u8;
            *p = i as u8;
            ring[slot] = p as *mut libc::c_void;
            sum = sum.wrapping_add(*p as u64);
            if big_every > 0 && i % big_every == 0 {
                libc::free(big);
                let n = (64 << 10) + (rng.next() as usize) % (960 << 10);
                big = libc::malloc(n);
                std::ptr::write_bytes(big as *mut u8, i as u8, n);
            }
        }
    }
    // SAFETY: as above.
    unsafe {
        for p in ring {
            libc::free(p);
        }
        libc::free(big);
    }
    sum
}

/// One thread of `threads`: mixed sizes, most small, a few above the shim's 64 KiB threshold.
#[inline(never)]
fn mixed_sizes(iters: usize, seed: u64) -> u64 {
    const RING: usize = 4096;
    let mut ring = vec![std::ptr::null_mut::<libc::c_void>(); RING];
    let mut rng = Rng(seed | 1);
    let mut sum = 0u64;
    for i in 0..iters {
        let slot = (rng.next() as usize) % RING;
        let class = rng.next() % 100;
        let size = if class < 90 {
            16 + (rng.next() as usize) % 1009
        } else if class < 99 {
            1024 + (rng.next() as usize) % (31 << 10)
        } else {
            (64 << 10) + (rng.next() as usize) % (448 << 10)
        };
        // SAFETY: plain C allocator calls on pointers this loop owns; writes stay inside `size`.
        unsafe {
            libc::free(ring[slot]);
            let p = libc::malloc(size) as *mut u8;
            let mut off = 0;
            while off < size {
                *p.add(off) = i as u8;
                off += 4096;
            }
            ring[slot] = p as *mut libc::c_void;
            sum = sum.wrapping_add(*p as u64);
        }
    }
    // SAFETY: as above.
    unsafe {
        for p in ring {
            libc::free(p);
        }
    }
    sum
}

fn threads() -> u64 {
    let n: usize = std::env::var("BENCH_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(4).clamp(1, 64);
    let handles: Vec<_> = (0..n)
        .map(|t| std::thread::spawn(move || mixed_sizes(4_000_000, 0x9e37_79b9_7f4a_7c15 ^ (t as u64) << 8)))
        .collect();
    handles.into_iter().map(|h| h.join().expect("bench thread")).fold(0, u64::wrapping_add)
}

#[inline(never)]
fn large(iters: usize) -> u64 {
    let mut sum = 0u64;
    for i in 0..iters {
        // SAFETY: as above.
        unsafe {
            let p = std::hint::black_box(libc::malloc(256 << 10)) as *mut u8;
            *p = i as u8;
            sum = sum.wrapping_add(*p as u64);
            libc::free(p as *mut libc::c_void);
        }
    }
    sum
}

#[inline(never)]
fn strings() -> u64 {
    use std::collections::HashMap;
    let mut sum = 0u64;
    for round in 0..4u32 {
        let mut m: HashMap<String, Vec<u32>> = HashMap::new();
        for i in 0..750_000u32 {
            let key = format!("key-{}-{}", i % 100_003, round);
            m.entry(key).or_default().push(i);
        }
        sum += m.values().map(|v| v.len() as u64).sum::<u64>();
    }
    sum
}

fn workload(name: &str) {
    let r = match name {
        "small" => churn(20_000_000, 0),
        "mixed" => churn(20_000_000, 256),
        "strings" => strings(),
        "threads" => threads(),
        "large" => large(400_000),
        other => {
            eprintln!("unknown workload {other}");
            std::process::exit(2);
        }
    };
    std::hint::black_box(r);
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

/// The median of `v` and a distribution-free interval around it of at least 95 % confidence:
/// the k-th smallest and k-th largest values, k the largest rank with P(Binomial(n, 1/2) < k)
/// ≤ 2.5 % (the whole range when there are too few rounds for that, as with fewer than 6).
fn median_ci(v: &[f64]) -> (f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    // P(B < k) for k = 0, 1, ...: cumulative binomial probabilities with p = 1/2.
    let mut k = 0;
    let mut below = 0.0; // P(B < k + 1) as k grows
    let mut term = 0.5f64.powi(n as i32); // P(B = 0)
    for j in 0..n {
        below += term;
        if below > 0.025 {
            break;
        }
        k = j + 1;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    let k = k.max(1); // 1-based rank; k = 1 is the full range
    (med, v[k - 1], v[n - k])
}

/// Runs the command; returns (wall, user + system CPU time) of the child.
// The child is reaped by wait4 (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn timed(cmd: &mut Command) -> (Duration, Duration) {
    let t = Instant::now();
    let child = cmd.spawn().expect("run workload");
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 on our own child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    let wall = t.elapsed();
    assert!(r > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "workload failed");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (wall, tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// One way of running the workloads: no preload, the floor, the shim, or another shim.
struct Peer {
    name: String,
    lib: Option<PathBuf>,
    /// Whether NUMASCOPE_ALLOC_DIR is set (the shims record; the floor ignores it).
    records: bool,
}

fn peers(exe: &std::path::Path) -> Vec<Peer> {
    let shim = std::env::var_os("NUMASCOPE_ALLOC_SHIM")
        .map(PathBuf::from)
        .unwrap_or_else(|| exe.with_file_name("libnumascope_allocshim.so"));
    if !shim.is_file() {
        eprintln!("{} not found: build it (cargo build --release -p numascope-allocshim)", shim.display());
        std::process::exit(2);
    }
    let mut v = vec![Peer { name: "without".into(), lib: None, records: false }];
    for name in ["floor", "check"] {
        let lib = exe.with_file_name(format!("libnumascope_allocshim_{name}.so"));
        if lib.is_file() {
            v.push(Peer { name: name.into(), lib: Some(lib), records: false });
        } else {
            eprintln!("{} not found (overhead.sh builds it with cc): no {name} peer", lib.display());
        }
    }
    v.push(Peer { name: "shim".into(), lib: Some(shim), records: true });
    for spec in std::env::var("BENCH_PEERS").unwrap_or_default().split(',').filter(|s| !s.is_empty()) {
        let Some((name, path)) = spec.split_once('=') else {
            eprintln!("BENCH_PEERS entry {spec:?} is not name=/path/lib.so");
            std::process::exit(2);
        };
        if !std::path::Path::new(path).is_file() {
            eprintln!("BENCH_PEERS: {path} not found");
            std::process::exit(2);
        }
        v.push(Peer { name: name.into(), lib: Some(path.into()), records: true });
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--workload") {
        workload(args.get(2).map(String::as_str).unwrap_or(""));
        return;
    }
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(7).max(5);
    let exe = std::env::current_exe().expect("own path");
    let peers = peers(&exe);
    let out = std::env::temp_dir().join(format!("numascope-allocshim-bench-{}", std::process::id()));
    println!(
        "runs per case: {runs} (rounds, each peer once per round; medians of CPU time, and of the per-round ratios \
         with a 95 % interval)"
    );
    for p in &peers {
        if let Some(lib) = &p.lib {
            println!("  {}: {}", p.name, lib.display());
        }
    }
    println!(
        "{:<8} {:<8} {:>10} {:>7} {:>23} {:>23}   {:>10} {:>7} {:>9}",
        "workload", "peer", "cpu", "ratio", "paired [95 % interval]", "vs check [95 %]", "wall", "ratio", "file"
    );
    let cases: Vec<String> = match args.get(1) {
        Some(w) => vec![w.clone()],
        None => vec!["small".into(), "mixed".into(), "strings".into(), "threads".into(), "large".into()],
    };
    for w in cases {
        let n = peers.len();
        let mut cpu = vec![Vec::new(); n];
        let mut wall = vec![Vec::new(); n];
        let mut file_bytes = vec![0u64; n];
        for round in 0..runs {
            for k in 0..n {
                let i = (round + k) % n;
                let p = &peers[i];
                let _ = std::fs::remove_dir_all(&out);
                std::fs::create_dir_all(&out).expect("bench output dir");
                let mut cmd = Command::new(&exe);
                cmd.args(["--workload", &w]);
                if let Some(lib) = &p.lib {
                    cmd.env("LD_PRELOAD", lib);
                }
                if p.records {
                    cmd.env("NUMASCOPE_ALLOC_DIR", &out);
                }
                let (wt, ct) = timed(&mut cmd);
                cpu[i].push(ct);
                wall[i].push(wt);
                if p.records {
                    file_bytes[i] = std::fs::read_dir(&out)
                        .map(|d| d.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
                        .unwrap_or(0);
                }
            }
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let (base_cpu, base_wall) = (median(&cpu[0]), median(&wall[0]));
        let check = peers.iter().position(|p| p.name == "check");
        // The per-round ratios of peer i to peer j (each pair ran in the same round).
        let paired = |i: usize, j: usize| {
            let r: Vec<f64> = cpu[i].iter().zip(&cpu[j]).map(|(a, b)| ms(*a) / ms(*b)).collect();
            let (m, lo, hi) = median_ci(&r);
            format!("{m:.3} [{lo:.3}..{hi:.3}]")
        };
        for i in 0..n {
            let (c, wt) = (median(&cpu[i]), median(&wall[i]));
            let (ratio, rounds, wall_ratio) = if i == 0 {
                ("-".to_string(), String::new(), "-".to_string())
            } else {
                (format!("{:.3}", ms(c) / ms(base_cpu)), paired(i, 0), format!("{:.3}", ms(wt) / ms(base_wall)))
            };
            let vs_check = match check {
                Some(k) if peers[i].records => paired(i, k),
                _ => String::new(),
            };
            let file = if peers[i].records { format!("{}K", file_bytes[i] / 1024) } else { String::new() };
            println!(
                "{:<8} {:<8} {:>8.1}ms {:>7} {:>23} {:>23}   {:>8.1}ms {:>7} {:>9}",
                w,
                peers[i].name,
                ms(c),
                ratio,
                rounds,
                vs_check,
                ms(wt),
                wall_ratio,
                file
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[cfg(test)]
mod tests {
    use super::median_ci;

    #[test]
    fn interval_ranks_match_the_binomial_table() {
        // n = 9: P(B <= 1) = 10/512 = 1.95 %, P(B <= 2) = 46/512 = 9 %: ranks 2 and 8.
        let v: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(median_ci(&v), (5.0, 2.0, 8.0));
        // n = 5: P(B = 0) = 3.1 % > 2.5 %: the whole range.
        assert_eq!(median_ci(&[5.0, 1.0, 3.0, 2.0, 4.0]), (3.0, 1.0, 5.0));
        // n = 20: P(B <= 5) = 2.07 %, P(B <= 6) = 5.8 %: ranks 6 and 15.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_ci(&v), (10.5, 6.0, 15.0));
    }
}
