//! Property test of the allocation-site file reader: seeded random valid files (events with
//! stacks, module snapshots, an end record; format version 1, and version 2 with its records in
//! small blocks, some left unwritten) are mutated (bytes flipped, inserted or cut, length
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
    header_v(out, 1, 0, pid, sample)
}

fn header_v(out: &mut Vec<u8>, version: u32, block: u32, pid: u32, sample: u64) {
    out.extend_from_slice(b"NSALLOC\0");
    for v in [version, 64, pid, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [65536u64, sample, 1_000] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for v in [64u32, 1, 0, block] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// The same records laid out as format version 2 with `block`-byte blocks: each block filled
/// with whole records up to its `used` count (a record too large for one block gets a block
/// spanning several), with an unwritten (all-zero) block now and then and stale bytes after
/// `used`, as a thread's block has while it is being filled.
fn to_v2(rng: &mut Rng, v1: &[u8], block: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let pid = u32::from_le_bytes(v1[16..20].try_into().unwrap());
    let sample = u64::from_le_bytes(v1[32..40].try_into().unwrap());
    header_v(&mut out, 2, block as u32, pid, sample);
    out.resize(block, 0);
    let mut recs: Vec<&[u8]> = Vec::new();
    let mut at = 64;
    while at + 8 <= v1.len() {
        let len = u32::from_le_bytes(v1[at + 4..at + 8].try_into().unwrap()) as usize;
        recs.push(&v1[at..at + 8 + len]);
        at += 8 + len;
    }
    let mut i = 0;
    while i < recs.len() {
        if rng.below(6) == 0 {
            out.resize(out.len() + block, 0);
            continue;
        }
        let start = out.len();
        let mut body = Vec::new();
        while i < recs.len() && (body.is_empty() || 16 + body.len() + recs[i].len() <= block) {
            body.extend_from_slice(recs[i]);
            i += 1;
            if rng.below(3) == 0 {
                break;
            }
        }
        let span = (16 + body.len()).div_ceil(block);
        out.extend_from_slice(b"NSBK");
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&(span as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&body);
        let end = start + span * block;
        while out.len() < end {
            out.push(if rng.below(2) == 0 { 0 } else { rng.next() as u8 });
        }
    }
    out
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
                let n = w.min(b.len() - at);
                b[at..at + n].copy_from_slice(&bytes[..n]);
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
        let mut base = valid_file(&mut rng);
        if iters % 2 == 1 {
            base = to_v2(&mut rng, &base, 512);
        }
        let input = if iters % 10 == 0 { base } else { mutate(&mut rng, base) };
        let (r, peak) = measured(|| parse_alloc_file(&input, &limits));
        if iters % 10 == 0 {
            assert!(r.is_ok(), "seed {seed} iteration {iters}: a valid file was refused: {:?}", r.err());
        }
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

/// Version 2: blocks are read up to their `used` count (stale bytes after it ignored), all-zero
/// blocks skipped, and hostile block heads refused by name; the same records read the same in
/// both versions.
#[test]
fn version_2_blocks() {
    let limits = ReadLimits::default();
    let mut rng = Rng(7);
    let v1 = valid_file(&mut rng);
    let a = parse_alloc_file(&v1, &limits).unwrap();
    for seed in 0..20 {
        let mut r2 = Rng(seed);
        let v2 = to_v2(&mut r2, &v1, 512);
        let b = parse_alloc_file(&v2, &limits).unwrap();
        assert_eq!(
            (b.events.clone(), b.ips.clone(), b.snapshots.clone(), b.end.clone()),
            (a.events.clone(), a.ips.clone(), a.snapshots.clone(), a.end.clone()),
            "seed {seed}"
        );
        assert!(!b.cut_short);
    }
    // A head with a record running past `used`: refused, naming the block.
    let mut f = Vec::new();
    header_v(&mut f, 2, 512, 1, 0);
    f.resize(512, 0);
    let mut ev = vec![0u8; 48];
    ev[12] = 1;
    let mut body = Vec::new();
    record(&mut body, 1, 0, &ev);
    f.extend_from_slice(b"NSBK");
    f.extend_from_slice(&((body.len() - 8) as u32).to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&body);
    f.resize(1024, 0);
    let e = parse_alloc_file(&f, &limits).unwrap_err();
    assert!(e.to_string().contains("runs past its block"), "{e}");
    // The right count reads the event; no end record: the process has not exited.
    f[516..520].copy_from_slice(&(body.len() as u32).to_le_bytes());
    let r = parse_alloc_file(&f, &limits).unwrap();
    assert_eq!(r.events.len(), 1);
    assert!(r.incomplete_reason().unwrap().contains("every event it finished is in the file"));
    // Hostile spans, counts, magic and block sizes.
    for (at, v, what) in [
        (520usize, 0u32, "spans 0 blocks"),
        (520, u32::MAX, "blocks, expected 1 to"),
        (516, 4096, "within its 496 bytes"),
        (516, 12, "not a multiple of 8"),
        (512, 0x1234_5678, "does not start with"),
        (60, 1000, "block size 1000"),
        (60, 1 << 30, "block size"),
        (60, 256, "block size 256"),
    ] {
        let mut g = f.clone();
        g[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let e = parse_alloc_file(&g, &limits).unwrap_err();
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    // A file cut inside a block (a partial copy) reads what is whole and says so.
    let r = parse_alloc_file(&f[..512 + 16 + 20], &limits).unwrap();
    assert!(r.cut_short && r.events.is_empty());
}
