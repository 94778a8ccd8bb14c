//! Property test of the allocation-site file reader: seeded random valid files (events with
//! stacks, module snapshots, an end record) are mutated (bytes flipped, inserted or cut, length
//! and count fields replaced by hostile values, records duplicated). Every input must parse to
//! `Ok` or a typed `AllocFileError`, never panic, and allocate at most a small multiple of its
//! own size whatever the numbers inside say (a counting global allocator measures it). Accepted
//! files respect the documented limits, and building the tables from them (with module paths
//! that do not exist) must not panic either.
//!
//! Budget: `NUMASCOPE_FUZZ_SECS` seconds (default 10) and at most `NUMASCOPE_FUZZ_ITERS`
//! inputs (default 200,000); seed `NUMASCOPE_FUZZ_SEED` (default 23). A failure prints the
//! seed and the iteration.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use numascope_core::alloc_sites::format::{MAX_DEPTH, MAX_PATH_BYTES};
use numascope_core::alloc_sites::{parse_alloc_file, symbolize, ReadLimits, SymbolizeOptions};

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        CURRENT.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let r = f();
    (r, PEAK.load(Ordering::SeqCst).saturating_sub(base))
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

// ---------------------------------------------------------------- a writer for valid files

fn header(out: &mut Vec<u8>, pid: u32, sample: u64) {
    out.extend_from_slice(b"NSALLOC\0");
    for v in [1u32, 64, pid, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [65536u64, sample, 1_000] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [64u32, 1, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn record(out: &mut Vec<u8>, kind: u16, flags: u16, payload: &[u8]) {
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

const OPS: [u8; 13] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 32, 33, 34];

fn valid_file(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    header(&mut out, 1000 + rng.below(1000) as u32, if rng.below(2) == 0 { 0 } else { 4096 });
    let mut p = Vec::new();
    p.extend_from_slice(&5u64.to_le_bytes());
    let n = rng.below(4) as u32;
    p.extend_from_slice(&n.to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes());
    for i in 0..n {
        let lo = 0x40_0000u64 * (i as u64 + 1);
        let path = format!("/nonexistent/numascope-fuzz/lib{i}.so");
        for v in [lo - 0x1000, lo, lo + 0x10_0000] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p.extend_from_slice(&(path.len() as u16).to_le_bytes());
        p.extend_from_slice(&4u16.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(path.as_bytes());
        p.extend_from_slice(&[0xab, 0xcd, 0xef, 0x01]);
        while p.len() % 8 != 0 {
            p.push(0);
        }
    }
    record(&mut out, 2, 0, &p);
    let addrs: Vec<u64> = (0..8).map(|i| 0x7f00_0000_0000 + i * 0x20_0000).collect();
    for t in 0..rng.below(40) {
        let depth = rng.below(6) as usize;
        let mut e = Vec::new();
        e.extend_from_slice(&(10 + t).to_le_bytes());
        e.extend_from_slice(&(1000 + rng.below(4) as u32).to_le_bytes());
        e.push(OPS[rng.below(OPS.len() as u64) as usize]);
        e.push(0);
        e.extend_from_slice(&(depth as u16).to_le_bytes());
        for v in [addrs[rng.below(8) as usize], rng.below(1 << 22), addrs[rng.below(8) as usize], rng.next()] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        for _ in 0..depth {
            e.extend_from_slice(&(0x40_0000 * (1 + rng.below(4)) + rng.below(0x10_0000)).to_le_bytes());
        }
        record(&mut out, 1, rng.below(4) as u16, &e);
    }
    if rng.below(3) != 0 {
        let mut e = Vec::new();
        for v in [99u64, 3, 0, 0] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        e.extend_from_slice(&[0; 8]);
        record(&mut out, 3, 0, &e);
    }
    out
}

// ---------------------------------------------------------------- mutations

fn mutate(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    const HOSTILE: [u64; 8] = [0, 1, 7, 8, 0xffff, 0xffff_ffff, 1 << 40, u64::MAX];
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            b.push(0);
        }
        let at = rng.below(b.len() as u64) as usize;
        match rng.below(7) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b.insert(at, rng.next() as u8),
            2 => b.truncate(at),
            3 => {
                // A length, count or depth field replaced by a hostile value.
                let v = HOSTILE[rng.below(HOSTILE.len() as u64) as usize];
                let w = [2usize, 4, 8][rng.below(3) as usize];
                let bytes = v.to_le_bytes();
                for i in 0..w.min(b.len() - at) {
                    b[at + i] = bytes[i];
                }
            }
            4 => {
                let end = (at + 8 + rng.below(200) as usize).min(b.len());
                let chunk = b[at..end].to_vec();
                let to = rng.below(b.len() as u64) as usize;
                b.splice(to..to, chunk);
            }
            5 => {
                let end = (at + rng.below(64) as usize).min(b.len());
                b.drain(at..end);
            }
            _ => b[at] = rng.next() as u8,
        }
    }
    b
}

#[test]
fn reader_survives_hostile_files_with_bounded_memory() {
    let seed = env_u64("NUMASCOPE_FUZZ_SEED", 23);
    let budget = Duration::from_secs(env_u64("NUMASCOPE_FUZZ_SECS", 10));
    let max_iters = env_u64("NUMASCOPE_FUZZ_ITERS", 200_000);
    let mut rng = Rng(seed);
    let limits = ReadLimits::default();
    let t0 = Instant::now();
    let (mut ok, mut err, mut iters) = (0u64, 0u64, 0u64);
    while iters < max_iters && t0.elapsed() < budget {
        let base = valid_file(&mut rng);
        let input = if iters % 10 == 0 { base } else { mutate(&mut rng, base) };
        let (r, peak) = measured(|| parse_alloc_file(&input, &limits));
        let bound = 8 * input.len() + (64 << 10);
        assert!(peak <= bound, "seed {seed} iteration {iters}: parsing {} bytes allocated {peak}", input.len());
        match r {
            Ok(f) => {
                ok += 1;
                for e in &f.events {
                    assert!(f.stack(e).len() <= MAX_DEPTH, "seed {seed} iteration {iters}");
                }
                for s in &f.snapshots {
                    for m in &s.modules {
                        assert!(m.path.as_os_str().len() <= MAX_PATH_BYTES);
                        assert!(m.lo <= m.hi);
                    }
                }
                if iters % 16 == 0 {
                    let sites = symbolize(&f, &SymbolizeOptions::default());
                    assert!(sites.allocations.len() <= f.events.len());
                    for a in &sites.allocations {
                        if let Some(s) = a.stack {
                            assert!((s as usize) < sites.stacks.len());
                        }
                        if let Some(fr) = a.site {
                            assert!((fr as usize) < sites.frames.len());
                        }
                    }
                }
            }
            Err(e) => {
                err += 1;
                assert!(!e.to_string().is_empty());
            }
        }
        iters += 1;
    }
    eprintln!("alloc-sites fuzz: {iters} inputs ({ok} accepted, {err} refused) in {:?}", t0.elapsed());
    assert!(ok > 0 && err > 0, "the mutations should produce both outcomes");
}

#[test]
fn refusals_name_the_problem() {
    let limits = ReadLimits::default();
    let e = parse_alloc_file(b"hello world, not ours", &limits).unwrap_err();
    assert!(e.to_string().contains("not a numascope allocation-site file"), "{e}");
    let mut f = Vec::new();
    header(&mut f, 1, 0);
    f[8] = 9; // version 9
    let e = parse_alloc_file(&f, &limits).unwrap_err();
    assert!(e.to_string().contains("version 9 is newer"), "{e}");
    let mut f = Vec::new();
    header(&mut f, 1, 0);
    record(&mut f, 1, 0, &[0u8; 12]);
    let e = parse_alloc_file(&f, &limits).unwrap_err();
    assert!(e.to_string().contains("record at byte 64") && e.to_string().contains("multiple of 8"), "{e}");
    // A file cut inside a record reads up to the last whole one and says so.
    let mut f = Vec::new();
    header(&mut f, 1, 0);
    let mut ev = vec![0u8; 48];
    ev[12] = 1; // malloc
    record(&mut f, 1, 0, &ev);
    let whole = f.len();
    record(&mut f, 1, 0, &ev);
    f.truncate(whole + 20);
    let r = parse_alloc_file(&f, &limits).unwrap();
    assert_eq!(r.events.len(), 1);
    assert!(r.cut_short && !r.complete());
    assert!(r.incomplete_reason().unwrap().contains("killed"));
}
