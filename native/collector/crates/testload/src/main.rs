//! numascope-testload: a small, predictable memory workload for recorder tests.
//!
//! Each worker thread maps its own buffer, prints one line describing it *before* touching it,
//! then writes one byte per page; afterwards every thread reads a shared buffer that the main
//! thread touched first. Uses only std and libc so it can be linked statically for a VM guest.
//!
//! Output lines (stdout, flushed one by one):
//!   ready pid=<pid>
//!   shared tid=<main tid> addr=0x<hex> len=<bytes>
//!   buffer tid=<tid> addr=0x<hex> len=<bytes>     (one per worker)
//!   touched tid=<tid> pages=<n>                    (one per worker, after its buffer is touched)
//!   pinned tid=<tid> node=<n> cpus=<a,b,..>        (with --pin: main thread, then each worker)
//!   bound addr=0x<hex> node=0                      (with --bind-shared-hinting, before the first touch)
//!   holding seconds=<T>                            (with --hold: after the read phase)
//!   done

use std::io::Write;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const USAGE: &str = "\
numascope-testload: per-thread buffers touched page by page, then a shared read phase

USAGE:
    numascope-testload [--threads N] [--mib M] [--shared-mib S] [--seconds T] [--passes P] [--delay D] [--start-delay S] [--thp] [--pin] [--hold H] [--bind-shared-hinting] [--shared-writes]

OPTIONS:
    --threads N      worker threads, each with its own buffer (default 4; 0: the main thread
                     alone, holding only the shared buffer)
    --mib M          MiB per worker buffer (default 8)
    --shared-mib S   MiB of the shared buffer the main thread touches first (default 4)
    --seconds T      how long all threads read the shared buffer, seconds (default 0.3)
    --passes P       fixed work before that: each worker reads its own buffer P times, the
                     main thread the shared buffer P times (default 0), e.g. for benchmarks
    --delay D        seconds the workers wait before mapping their buffers (default 0)
    --start-delay S  seconds to wait after `ready pid=` before anything is mapped or pinned
                     (default 0), e.g. to attach `numascope record -p PID` first
    --thp            allow transparent huge pages (default: MADV_NOHUGEPAGE, so that every
                     4 KiB page takes its own fault)
    --pin            pin the main thread to node 0's cpus before it first-touches the shared
                     buffer, and worker i to the cpus of the i-th node (round robin over
                     /sys/devices/system/node)
    --hold H         after the read phase, all threads stay alive but idle (sleeping) for H
                     seconds before exiting (default 0), e.g. to apply a plan to them
    --bind-shared-hinting
                     before the main thread touches the shared buffer, bind it to node 0 with
                     MPOL_BIND | MPOL_F_NUMA_BALANCING (Linux >= 5.12): automatic NUMA balancing
                     still scans it (NUMA hinting faults, which numascope records as accesses)
                     but may only move its pages towards node 0, where they are; so the kernel
                     samples the accesses without moving the pages
    --shared-writes  in the shared phase every other pass writes one byte per page instead of
                     reading (so the buffer is read-write shared, not read-only)
    -h, --help       print this help
";

struct Args {
    threads: usize,
    mib: usize,
    shared_mib: usize,
    seconds: f64,
    passes: u32,
    delay: f64,
    start_delay: f64,
    thp: bool,
    pin: bool,
    hold: f64,
    bind_shared_hinting: bool,
    shared_writes: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: 4,
        mib: 8,
        shared_mib: 4,
        seconds: 0.3,
        passes: 0,
        delay: 0.0,
        start_delay: 0.0,
        thp: false,
        pin: false,
        hold: 0.0,
        bind_shared_hinting: false,
        shared_writes: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--threads" => a.threads = val("--threads")?.parse().map_err(|_| "--threads: not a number")?,
            "--mib" => a.mib = val("--mib")?.parse().map_err(|_| "--mib: not a number")?,
            "--shared-mib" => a.shared_mib = val("--shared-mib")?.parse().map_err(|_| "--shared-mib: not a number")?,
            "--seconds" => a.seconds = val("--seconds")?.parse().map_err(|_| "--seconds: not a number")?,
            "--passes" => a.passes = val("--passes")?.parse().map_err(|_| "--passes: not a number")?,
            "--delay" => a.delay = val("--delay")?.parse().map_err(|_| "--delay: not a number")?,
            "--start-delay" => {
                a.start_delay = val("--start-delay")?.parse().map_err(|_| "--start-delay: not a number")?
            }
            "--thp" => a.thp = true,
            "--pin" => a.pin = true,
            "--hold" => a.hold = val("--hold")?.parse().map_err(|_| "--hold: not a number")?,
            "--bind-shared-hinting" => a.bind_shared_hinting = true,
            "--shared-writes" => a.shared_writes = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.mib == 0 {
        return Err("--mib must be at least 1".into());
    }
    if !(a.seconds >= 0.0 && a.delay >= 0.0 && a.start_delay >= 0.0 && a.hold >= 0.0) {
        return Err("--seconds, --delay, --start-delay and --hold must be >= 0".into());
    }
    Ok(a)
}

fn gettid() -> i64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i64 }
}

fn say(line: String) {
    let out = std::io::stdout();
    let mut l = out.lock();
    let _ = l.write_all(format!("{line}\n").as_bytes());
    let _ = l.flush();
}

/// An anonymous private mapping (address kept as usize so it can cross threads), between two
/// PROT_NONE guard pages so that it is a mapping of its own: the kernel cannot merge it with a
/// neighbour (newer kernels place and merge anonymous mappings more eagerly), and its numa_maps
/// line starts at the address printed. 2 MiB aligned, so that with --thp every 2 MiB of it can
/// be a huge page.
fn map(len: usize, thp: bool) -> usize {
    const GUARD: usize = 4096;
    const HUGE: usize = 2 << 20;
    // SAFETY: plain anonymous mmap; checked for failure.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + HUGE + 2 * GUARD,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        eprintln!("numascope-testload: mmap of {len} bytes failed: {}", std::io::Error::last_os_error());
        std::process::exit(1);
    }
    let buf = ((p as usize + GUARD + HUGE - 1) & !(HUGE - 1)) as *mut libc::c_void;
    // SAFETY: buf..buf+len lies inside the mapping just made, with at least a guard page either side.
    if unsafe { libc::mprotect(buf, len, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        eprintln!("numascope-testload: mprotect of {len} bytes failed: {}", std::io::Error::last_os_error());
        std::process::exit(1);
    }
    if !thp {
        // SAFETY: buf..buf+len is our mapping.
        unsafe { libc::madvise(buf, len, libc::MADV_NOHUGEPAGE) };
    }
    buf as usize
}

fn touch(addr: usize, len: usize) -> usize {
    let mut pages = 0;
    let mut off = 0;
    while off < len {
        // SAFETY: inside our mapping; volatile so the write is not elided.
        unsafe { std::ptr::write_volatile((addr + off) as *mut u8, (off >> 12) as u8 | 1) };
        pages += 1;
        off += 4096;
    }
    pages
}

/// One pass of the shared phase: a read of every cache line, or with `writes` every other pass a
/// write to every page instead.
fn shared_pass(addr: usize, len: usize, pass: &mut u64, writes: bool) -> u64 {
    *pass += 1;
    if writes && pass.is_multiple_of(2) {
        touch(addr, len) as u64
    } else {
        read_all(addr, len)
    }
}

fn read_all(addr: usize, len: usize) -> u64 {
    let mut sum = 0u64;
    let mut off = 0;
    while off < len {
        // SAFETY: inside the shared mapping.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile((addr + off) as *const u8) } as u64);
        off += 64;
    }
    sum
}

/// Cpus of each NUMA node, in node id order (one node with all cpus if sysfs has none).
fn node_cpus() -> Vec<(u32, Vec<usize>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/sys/devices/system/node") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_prefix("node").and_then(|n| n.parse::<u32>().ok()) else { continue };
            let list = std::fs::read_to_string(e.path().join("cpulist")).unwrap_or_default();
            let mut cpus = Vec::new();
            for part in list.trim().split(',').filter(|p| !p.is_empty()) {
                match part.split_once('-') {
                    Some((a, b)) => {
                        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                            cpus.extend(a..=b)
                        }
                    }
                    None => cpus.extend(part.parse::<usize>().ok()),
                }
            }
            if !cpus.is_empty() {
                out.push((id, cpus));
            }
        }
    }
    out.sort();
    if out.is_empty() {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
        out.push((0, (0..n).collect()));
    }
    out
}

/// Pins the calling thread to `cpus` and says so.
fn pin_self(node: u32, cpus: &[usize]) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays inside it for cpus < 1024.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus.iter().filter(|&&c| c < 1024) {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!("numascope-testload: sched_setaffinity: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
    }
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    say(format!("pinned tid={} node={node} cpus={}", gettid(), list.join(",")));
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("numascope-testload: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    say(format!("ready pid={}", std::process::id()));
    if a.start_delay > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(a.start_delay));
    }
    let shared_len = a.shared_mib.max(1) << 20;
    let nodes = node_cpus();
    if a.pin {
        pin_self(nodes[0].0, &nodes[0].1);
    }
    let shared = map(shared_len, a.thp);
    say(format!("shared tid={} addr=0x{shared:x} len={shared_len}", gettid()));
    if a.bind_shared_hinting {
        // include/uapi/linux/mempolicy.h: MPOL_BIND = 2, MPOL_F_NUMA_BALANCING = 1 << 13.
        const MPOL_BIND: libc::c_long = 2;
        const MPOL_F_NUMA_BALANCING: libc::c_long = 1 << 13;
        let mask: libc::c_ulong = 1; // node 0
                                     // SAFETY: mbind on our own mapping with a one-word node mask.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                shared as libc::c_ulong,
                shared_len as libc::c_ulong,
                MPOL_BIND | MPOL_F_NUMA_BALANCING,
                &mask as *const libc::c_ulong,
                (8 * std::mem::size_of::<libc::c_ulong>()) as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if rc != 0 {
            eprintln!(
                "numascope-testload: mbind(MPOL_BIND | MPOL_F_NUMA_BALANCING, node 0) failed: {} (needs Linux >= 5.12 with NUMA)",
                std::io::Error::last_os_error()
            );
            std::process::exit(1);
        }
        say(format!("bound addr=0x{shared:x} node=0"));
    }
    touch(shared, shared_len);

    let len = a.mib << 20;
    let barrier = Arc::new(Barrier::new(a.threads + 1));
    let read_for = Duration::from_secs_f64(a.seconds);
    let delay = Duration::from_secs_f64(a.delay);
    let hold = Duration::from_secs_f64(a.hold);
    let passes = a.passes;
    let mut handles = Vec::new();
    for i in 0..a.threads {
        let barrier = barrier.clone();
        let thp = a.thp;
        let writes = a.shared_writes;
        let pin = if a.pin { Some(nodes[i % nodes.len()].clone()) } else { None };
        let h = std::thread::Builder::new()
            .name(format!("testload-w{i}"))
            .spawn(move || {
                if let Some((node, cpus)) = &pin {
                    pin_self(*node, cpus);
                }
                std::thread::sleep(delay);
                let buf = map(len, thp);
                let tid = gettid();
                say(format!("buffer tid={tid} addr=0x{buf:x} len={len}"));
                let pages = touch(buf, len);
                say(format!("touched tid={tid} pages={pages}"));
                barrier.wait();
                let mut sum = 0u64;
                for _ in 0..passes {
                    sum = sum.wrapping_add(read_all(buf, len));
                }
                let end = Instant::now() + read_for;
                let mut pass = 0u64;
                loop {
                    sum = sum.wrapping_add(shared_pass(shared, shared_len, &mut pass, writes));
                    if Instant::now() >= end {
                        break;
                    }
                }
                std::hint::black_box(sum);
                std::thread::sleep(hold);
            })
            .expect("spawn worker thread");
        handles.push(h);
    }
    barrier.wait();
    let mut sum = 0u64;
    for _ in 0..passes {
        sum = sum.wrapping_add(read_all(shared, shared_len));
    }
    let end = Instant::now() + read_for;
    let mut pass = 0u64;
    loop {
        sum = sum.wrapping_add(shared_pass(shared, shared_len, &mut pass, a.shared_writes));
        if Instant::now() >= end {
            break;
        }
    }
    std::hint::black_box(sum);
    if a.hold > 0.0 {
        say(format!("holding seconds={}", a.hold));
        std::thread::sleep(hold);
    }
    for h in handles {
        h.join().expect("worker thread panicked");
    }
    say("done".into());
}
