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
//!   done

use std::io::Write;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const USAGE: &str = "\
numascope-testload: per-thread buffers touched page by page, then a shared read phase

USAGE:
    numascope-testload [--threads N] [--mib M] [--shared-mib S] [--seconds T] [--delay D] [--thp]

OPTIONS:
    --threads N      worker threads, each with its own buffer (default 4)
    --mib M          MiB per worker buffer (default 8)
    --shared-mib S   MiB of the shared buffer the main thread touches first (default 4)
    --seconds T      how long all threads read the shared buffer, seconds (default 0.3)
    --delay D        seconds the workers wait before mapping their buffers (default 0)
    --thp            allow transparent huge pages (default: MADV_NOHUGEPAGE, so that every
                     4 KiB page takes its own fault)
    -h, --help       print this help
";

struct Args {
    threads: usize,
    mib: usize,
    shared_mib: usize,
    seconds: f64,
    delay: f64,
    thp: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { threads: 4, mib: 8, shared_mib: 4, seconds: 0.3, delay: 0.0, thp: false };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--threads" => a.threads = val("--threads")?.parse().map_err(|_| "--threads: not a number")?,
            "--mib" => a.mib = val("--mib")?.parse().map_err(|_| "--mib: not a number")?,
            "--shared-mib" => a.shared_mib = val("--shared-mib")?.parse().map_err(|_| "--shared-mib: not a number")?,
            "--seconds" => a.seconds = val("--seconds")?.parse().map_err(|_| "--seconds: not a number")?,
            "--delay" => a.delay = val("--delay")?.parse().map_err(|_| "--delay: not a number")?,
            "--thp" => a.thp = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.threads == 0 || a.mib == 0 {
        return Err("--threads and --mib must be at least 1".into());
    }
    if !(a.seconds >= 0.0 && a.delay >= 0.0) {
        return Err("--seconds and --delay must be >= 0".into());
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

/// An anonymous private mapping (address kept as usize so it can cross threads).
fn map(len: usize, thp: bool) -> usize {
    // SAFETY: plain anonymous mmap; checked for failure.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        eprintln!("numascope-testload: mmap of {len} bytes failed: {}", std::io::Error::last_os_error());
        std::process::exit(1);
    }
    if !thp {
        // SAFETY: p..p+len is our mapping.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
    }
    p as usize
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

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("numascope-testload: {e}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    say(format!("ready pid={}", std::process::id()));
    let shared_len = a.shared_mib.max(1) << 20;
    let shared = map(shared_len, a.thp);
    say(format!("shared tid={} addr=0x{shared:x} len={shared_len}", gettid()));
    touch(shared, shared_len);

    let len = a.mib << 20;
    let barrier = Arc::new(Barrier::new(a.threads + 1));
    let read_for = Duration::from_secs_f64(a.seconds);
    let delay = Duration::from_secs_f64(a.delay);
    let mut handles = Vec::new();
    for i in 0..a.threads {
        let barrier = barrier.clone();
        let thp = a.thp;
        let h = std::thread::Builder::new()
            .name(format!("testload-w{i}"))
            .spawn(move || {
                std::thread::sleep(delay);
                let buf = map(len, thp);
                let tid = gettid();
                say(format!("buffer tid={tid} addr=0x{buf:x} len={len}"));
                let pages = touch(buf, len);
                say(format!("touched tid={tid} pages={pages}"));
                barrier.wait();
                let end = Instant::now() + read_for;
                let mut sum = 0u64;
                loop {
                    sum = sum.wrapping_add(read_all(shared, shared_len));
                    if Instant::now() >= end {
                        break;
                    }
                }
                std::hint::black_box(sum);
            })
            .expect("spawn worker thread");
        handles.push(h);
    }
    barrier.wait();
    let end = Instant::now() + read_for;
    let mut sum = 0u64;
    loop {
        sum = sum.wrapping_add(read_all(shared, shared_len));
        if Instant::now() >= end {
            break;
        }
    }
    std::hint::black_box(sum);
    for h in handles {
        h.join().expect("worker thread panicked");
    }
    say("done".into());
}
