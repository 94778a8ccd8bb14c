//! Placement at allocation time, for `numascope run --plan` (docs/apply.md, "Applying at the
//! next launch"). numascope writes the plan's object and thread entries in a small line format
//! (below) to a file named by `NUMASCOPE_PLACE_PLAN`; the shim reads it once at start-up into
//! tables from the kernel (nothing from the allocator it wraps), and then:
//!
//! - for every allocation whose size falls in some object entry's range, captures the stack,
//!   turns each code address into (plan module, address as in the ELF file) and, when an entry's
//!   frames appear consecutively within the first 16 frames, sets the entry's memory policy on
//!   the whole pages inside the block with `mbind(MPOL_MF_MOVE)` before the allocation returns
//!   to the program, so the program's first touch lands on the planned nodes;
//! - pins threads by creation order (counted per process at `pthread_create`, the main thread is
//!   0) and name (comm: checked when the thread starts and when it is renamed through
//!   `pthread_setname_np` or `prctl(PR_SET_NAME)`) before the thread runs the program's code;
//! - appends what it did to the log file named by `NUMASCOPE_PLACE_LOG` (created by numascope),
//!   one `write` per line, and a summary per process at exit.
//!
//! Plan file (`NSPLACE 1`), hex numbers without `0x`, fields separated by one space:
//!
//! ```text
//! NSPLACE 1
//! M <module> <build-id hex or -> <path, hex-encoded bytes>
//! O <object> <mpol mode> <size min> <size max> <mask words> <word>... <frames> (<module> <offset>)...
//! T <entry> <order or -> <name, hex-encoded, or -> <cpu mask words> <word>...
//! E
//! ```
//!
//! Log lines (decimal pid/tid/indices, hex addresses and lengths):
//!
//! ```text
//! I <pid> <ppid>                                 the process started with the plan
//! F <pid> <line>                                 the plan file was refused at this line; nothing placed
//! P <pid> <tid> <object> <addr> <len> <errno>    mbind of [addr, addr+len) for object (errno 0 = done)
//! T <pid> <tid> <entry> <order> <errno>          thread pinned for thread entry (order - when unknown)
//! S <pid> <object> <matches> <bytes> <failures>  per object at exit (also counts unlogged matches)
//! M <pid> <module> <state>                       at exit: loaded | missing | build-id-differs
//! X <pid> <unlogged>                             at exit: P lines left out after the per-process cap
//! ```

use core::cell::Cell;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::{modules, sys, unwind};

pub const MAX_OBJECTS: usize = 1024;
pub const MAX_MODULES: usize = 256;
pub const MAX_FRAMES: usize = 16;
/// An entry's frames may start this many frames into the stack (allocator wrappers such as
/// `operator new` or Rust's `alloc::alloc` sit above the program's frames).
const SKIP_WINDOW: usize = 16;
const DEPTH: usize = SKIP_WINDOW + MAX_FRAMES;
pub const MAX_THREAD_ENTRIES: usize = 1024;
const NODE_WORDS: usize = 16;
const CPU_WORDS: usize = 128;
const MAX_FILE: usize = 8 << 20;
/// P lines per process; later matches are only counted (S lines).
const MAX_EVENT_LINES: u64 = 4096;
const REGISTRY: usize = 1024;

const MPOL_BIND: u32 = 2;
const MPOL_INTERLEAVE: u32 = 3;
const MPOL_WEIGHTED_INTERLEAVE: u32 = 6;
const MPOL_MF_MOVE: u64 = 1 << 1;

const ST_MISSING: u8 = 0;
const ST_LOADED: u8 = 1;
const ST_BUILD_ID_DIFFERS: u8 = 2;

/// Allocations at least this large (and at most MAX) are looked at; usize::MAX without a plan.
pub static MIN: AtomicUsize = AtomicUsize::new(usize::MAX);
static MAX: AtomicUsize = AtomicUsize::new(0);
static TABLES: AtomicPtr<Tables> = AtomicPtr::new(core::ptr::null_mut());
static PINS: AtomicBool = AtomicBool::new(false);
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static LOG_FD: AtomicI32 = AtomicI32::new(-1);
static LOG_DEV: AtomicU64 = AtomicU64::new(0);
static LOG_INO: AtomicU64 = AtomicU64::new(0);
static EVENT_LINES: AtomicU64 = AtomicU64::new(0);
static FINISHED_PID: AtomicU32 = AtomicU32::new(0);
/// The process whose counters the tables hold (a vfork child shares them and must not report).
static PLACE_PID: AtomicU32 = AtomicU32::new(0);
static NEXT_ORDER: AtomicU32 = AtomicU32::new(1);
static RES_LOCK: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's creation order (u32::MAX: not created through pthread_create).
    static ORDER: Cell<u32> = const { Cell::new(u32::MAX) };
}

#[repr(C)]
struct Obj {
    mode: u32,
    nframes: u32,
    min: u64,
    max: u64,
    mask_words: u64,
    mask: [u64; NODE_WORDS],
    frame_mod: [u32; MAX_FRAMES],
    frame_off: [u64; MAX_FRAMES],
}

#[repr(C)]
struct Module {
    /// The path's hex text in the plan buffer.
    path_at: usize,
    path_len: usize,
    id_len: usize,
    id: [u8; 64],
}

#[repr(C)]
struct Thr {
    order: u32,
    name_len: u32,
    name: [u8; 16],
    cpu_words: u64,
    cpus: [u64; CPU_WORDS],
}

/// Everything the plan needs, in one anonymous mapping (all-zero is a valid initial state).
#[repr(C)]
struct Tables {
    nobj: usize,
    nmod: usize,
    nthr: usize,
    buf: *mut u8,
    objs: [Obj; MAX_OBJECTS],
    mods: [Module; MAX_MODULES],
    thrs: [Thr; MAX_THREAD_ENTRIES],
    // module resolution, a seqlock: odd while being rewritten
    seq: AtomicU64,
    adds: AtomicU64,
    subs: AtomicU64,
    resolved_once: AtomicBool,
    res_lo: [AtomicUsize; MAX_MODULES],
    res_hi: [AtomicUsize; MAX_MODULES],
    res_bias: [AtomicUsize; MAX_MODULES],
    res_state: [AtomicU8; MAX_MODULES],
    // per-object counters of this process
    matches: [AtomicU64; MAX_OBJECTS],
    bytes: [AtomicU64; MAX_OBJECTS],
    failures: [AtomicU64; MAX_OBJECTS],
    // pthread_t -> (tid, order) of threads started through the trampoline
    reg_key: [AtomicUsize; REGISTRY],
    reg_tid: [AtomicU32; REGISTRY],
    reg_order: [AtomicU32; REGISTRY],
}

fn tables() -> Option<&'static Tables> {
    let p = TABLES.load(Ordering::Acquire);
    // SAFETY: set once after the tables were filled; never unmapped.
    if p.is_null() {
        None
    } else {
        Some(unsafe { &*p })
    }
}

/// Whether a plan with thread entries is loaded (pthread_create then goes through the trampoline).
#[inline]
pub fn pins_threads() -> bool {
    PINS.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------- log

struct Line {
    buf: [u8; 192],
    n: usize,
}

impl Line {
    fn new(kind: u8) -> Line {
        let mut l = Line { buf: [0; 192], n: 0 };
        l.raw(&[kind]);
        l.dec(sys::getpid() as u64);
        l
    }
    fn raw(&mut self, b: &[u8]) {
        for &c in b {
            if self.n < self.buf.len() - 1 {
                self.buf[self.n] = c;
                self.n += 1;
            }
        }
    }
    fn dec(&mut self, mut v: u64) {
        let mut d = [0u8; 20];
        let mut k = 0;
        loop {
            d[k] = b'0' + (v % 10) as u8;
            k += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.raw(b" ");
        while k > 0 {
            k -= 1;
            self.raw(&[d[k]]);
        }
    }
    fn hex(&mut self, v: u64) {
        let mut d = [0u8; 16];
        let mut k = 0;
        let mut v = v;
        loop {
            d[k] = b"0123456789abcdef"[(v & 15) as usize];
            k += 1;
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        self.raw(b" ");
        while k > 0 {
            k -= 1;
            self.raw(&[d[k]]);
        }
    }
    fn word(&mut self, w: &[u8]) {
        self.raw(b" ");
        self.raw(w);
    }
    fn write(mut self) {
        self.buf[self.n] = b'\n';
        self.n += 1;
        let fd = LOG_FD.load(Ordering::Acquire);
        if fd < 0 {
            return;
        }
        // Never write into a descriptor the program closed and reused for its own file.
        match sys::fd_identity(fd) {
            Some((d, i)) if d == LOG_DEV.load(Ordering::Relaxed) && i == LOG_INO.load(Ordering::Relaxed) => {}
            _ => {
                LOG_FD.store(-1, Ordering::Release);
                return;
            }
        }
        // SAFETY: buf[..n] is initialised.
        unsafe { sys::write_all(fd, self.buf.as_ptr(), self.n) };
    }
}

fn open_log(path: &[u8]) {
    let mut p = [0u8; 4096];
    if path.is_empty() || path.len() >= p.len() {
        return;
    }
    p[..path.len()].copy_from_slice(path);
    // SAFETY: p is NUL-terminated. No O_CREAT: numascope created the file for this run.
    let fd = unsafe { sys::openat(libc::AT_FDCWD, p.as_ptr(), libc::O_WRONLY | libc::O_APPEND, 0) };
    if fd < 0 {
        sys::say(b"numascope-allocshim: cannot open NUMASCOPE_PLACE_LOG; placements are not reported\n");
        return;
    }
    let fd = sys::move_high(fd);
    if let Some((d, i)) = sys::fd_identity(fd) {
        LOG_DEV.store(d, Ordering::Relaxed);
        LOG_INO.store(i, Ordering::Relaxed);
        LOG_FD.store(fd, Ordering::Release);
    } else {
        sys::close(fd);
    }
}

// ---------------------------------------------------------------- plan file

/// Reads the whole file into fresh anonymous memory (one spare byte); None when it cannot be
/// read or is larger than MAX_FILE.
fn read_file(path: &[u8]) -> Option<(*mut u8, usize)> {
    let mut p = [0u8; 4096];
    if path.is_empty() || path.len() >= p.len() {
        return None;
    }
    p[..path.len()].copy_from_slice(path);
    // SAFETY: p is NUL-terminated; the descriptor is closed on every path below.
    let fd = unsafe { sys::openat(libc::AT_FDCWD, p.as_ptr(), libc::O_RDONLY, 0) };
    if fd < 0 {
        return None;
    }
    let size = unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        if libc::syscall(libc::SYS_fstat, fd as i64, &mut st as *mut libc::stat) != 0 {
            -1
        } else {
            st.st_size
        }
    };
    if size < 0 || size as usize > MAX_FILE {
        sys::close(fd);
        return None;
    }
    let size = size as usize;
    // SAFETY: fresh mapping of size + 1 bytes, read into below.
    let buf = unsafe { sys::map_anon(size + 1) };
    if buf.is_null() {
        sys::close(fd);
        return None;
    }
    let mut got = 0usize;
    while got < size {
        // SAFETY: reads into buf[got..size].
        let r = unsafe { libc::syscall(libc::SYS_read, fd as i64, buf.add(got), size - got) };
        if r < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        if r <= 0 {
            break;
        }
        got += r as usize;
    }
    sys::close(fd);
    if got != size {
        return None;
    }
    Some((buf, size))
}

struct Tokens<'a> {
    line: &'a [u8],
    at: usize,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Option<(usize, usize)> {
        if self.at >= self.line.len() {
            return None;
        }
        let start = self.at;
        let mut end = start;
        while end < self.line.len() && self.line[end] != b' ' {
            end += 1;
        }
        self.at = end + 1;
        if end == start {
            None
        } else {
            Some((start, end))
        }
    }
    fn word(&mut self) -> Option<&'a [u8]> {
        self.next().map(|(a, b)| &self.line[a..b])
    }
    fn hex(&mut self) -> Option<u64> {
        parse_hex(self.word()?)
    }
    fn done(&mut self) -> bool {
        self.at >= self.line.len()
    }
}

fn parse_hex(w: &[u8]) -> Option<u64> {
    if w.is_empty() || w.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in w {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | d as u64;
    }
    Some(v)
}

/// Decodes hex pairs of `src` into `dst`; returns the length.
fn unhex(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    if !src.len().is_multiple_of(2) || src.len() / 2 > dst.len() {
        return None;
    }
    for (k, pair) in src.chunks_exact(2).enumerate() {
        dst[k] = ((parse_hex(&pair[..1])? as u8) << 4) | parse_hex(&pair[1..])? as u8;
    }
    Some(src.len() / 2)
}

/// Whether `hex` is the hex encoding of `raw` (module paths stay encoded in the plan buffer).
fn hex_eq(hex: &[u8], raw: &[u8]) -> bool {
    const D: &[u8; 16] = b"0123456789abcdef";
    hex.len() == 2 * raw.len()
        && raw
            .iter()
            .enumerate()
            .all(|(k, &c)| hex[2 * k] == D[(c >> 4) as usize] && hex[2 * k + 1] == D[(c & 15) as usize])
}

fn parse_mask(tok: &mut Tokens, out: &mut [u64]) -> Option<u64> {
    let n = tok.hex()? as usize;
    if n == 0 || n > out.len() {
        return None;
    }
    for w in out.iter_mut().take(n) {
        *w = tok.hex()?;
    }
    Some(n as u64)
}

/// Parses the plan into `t`; on failure returns the 1-based line number at fault.
fn parse(t: &mut Tables, buf: *mut u8, len: usize) -> Result<(), u64> {
    // SAFETY: buf holds len bytes read from the file, never written again.
    let all = unsafe { core::slice::from_raw_parts(buf, len) };
    let mut at = 0usize;
    let mut lineno = 0u64;
    let mut ended = false;
    while at < len && !ended {
        lineno += 1;
        let mut end = at;
        while end < len && all[end] != b'\n' {
            end += 1;
        }
        let line = &all[at..end];
        let base = at;
        at = end + 1;
        let mut tok = Tokens { line, at: 0 };
        let Some(kind) = tok.word() else { return Err(lineno) };
        let ok = match kind {
            b"NSPLACE" if lineno == 1 => tok.word() == Some(b"1"),
            _ if lineno == 1 => false,
            b"M" => parse_module(t, &mut tok, base).is_some(),
            b"O" => parse_object(t, &mut tok).is_some(),
            b"T" => parse_thread(t, &mut tok).is_some(),
            b"E" => {
                ended = true;
                true
            }
            _ => false,
        };
        if !ok || !tok.done() {
            return Err(lineno);
        }
    }
    if !ended {
        return Err(lineno + 1);
    }
    Ok(())
}

fn parse_module(t: &mut Tables, tok: &mut Tokens, base: usize) -> Option<()> {
    let i = tok.hex()? as usize;
    if i != t.nmod || i >= MAX_MODULES {
        return None;
    }
    let m = &mut t.mods[i];
    let id = tok.word()?;
    if id != b"-" {
        m.id_len = unhex(id, &mut m.id)?;
        if m.id_len == 0 {
            return None;
        }
    }
    let (a, b) = tok.next()?;
    let path = &tok.line[a..b];
    if !path.len().is_multiple_of(2) || !path.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    m.path_at = base + a;
    m.path_len = b - a;
    t.nmod += 1;
    Some(())
}

fn parse_object(t: &mut Tables, tok: &mut Tokens) -> Option<()> {
    let i = tok.hex()? as usize;
    if i != t.nobj || i >= MAX_OBJECTS {
        return None;
    }
    let nmod = t.nmod as u64;
    let o = &mut t.objs[i];
    o.mode = tok.hex()? as u32;
    if ![MPOL_BIND, MPOL_INTERLEAVE, MPOL_WEIGHTED_INTERLEAVE].contains(&o.mode) {
        return None;
    }
    o.min = tok.hex()?;
    o.max = tok.hex()?;
    if o.min == 0 || o.max < o.min {
        return None;
    }
    o.mask_words = parse_mask(tok, &mut o.mask)?;
    let n = tok.hex()? as usize;
    if n == 0 || n > MAX_FRAMES {
        return None;
    }
    for k in 0..n {
        let m = tok.hex()?;
        if m >= nmod {
            return None;
        }
        o.frame_mod[k] = m as u32;
        o.frame_off[k] = tok.hex()?;
    }
    o.nframes = n as u32;
    t.nobj += 1;
    Some(())
}

fn parse_thread(t: &mut Tables, tok: &mut Tokens) -> Option<()> {
    let i = tok.hex()? as usize;
    if i != t.nthr || i >= MAX_THREAD_ENTRIES {
        return None;
    }
    let e = &mut t.thrs[i];
    let order = tok.word()?;
    e.order =
        if order == b"-" { u32::MAX } else { u32::try_from(parse_hex(order)?).ok().filter(|&o| o != u32::MAX)? };
    let name = tok.word()?;
    if name != b"-" {
        e.name_len = unhex(name, &mut e.name[..15])? as u32;
        if e.name_len == 0 {
            return None;
        }
    }
    if e.order == u32::MAX && e.name_len == 0 {
        return None;
    }
    e.cpu_words = parse_mask(tok, &mut e.cpus)?;
    t.nthr += 1;
    Some(())
}

// ---------------------------------------------------------------- start

/// Loads the plan (`NUMASCOPE_PLACE_PLAN`) and opens the log (`NUMASCOPE_PLACE_LOG`). Runs in
/// the constructor, on the main thread, with the shim's guard set. False when there is no plan.
pub fn init(plan: Option<&[u8]>, log: Option<&[u8]>) -> bool {
    let Some(plan) = plan else { return false };
    if let Some(l) = log {
        open_log(l);
    }
    // SAFETY: getauxval has no preconditions.
    let ps = unsafe { libc::getauxval(libc::AT_PAGESZ) } as usize;
    if ps.is_power_of_two() {
        PAGE.store(ps, Ordering::Relaxed);
    }
    let refuse = |line: u64| {
        sys::say(
            b"numascope-allocshim: the placement plan in NUMASCOPE_PLACE_PLAN cannot be read; nothing is placed\n",
        );
        let mut l = Line::new(b'F');
        l.dec(line);
        l.write();
        false
    };
    let Some((buf, len)) = read_file(plan) else { return refuse(0) };
    // SAFETY: a zero-filled mapping is a valid Tables (integers, atomics, a null pointer).
    let t = unsafe { sys::map_anon(core::mem::size_of::<Tables>()) } as *mut Tables;
    if t.is_null() {
        return refuse(0);
    }
    // SAFETY: t is ours alone until published below.
    let tm = unsafe { &mut *t };
    tm.buf = buf;
    if let Err(line) = parse(tm, buf, len) {
        return refuse(line);
    }
    let mut min = usize::MAX;
    let mut max = 0usize;
    for o in &tm.objs[..tm.nobj] {
        min = min.min(o.min as usize);
        max = max.max(o.max.min(usize::MAX as u64) as usize);
    }
    if let Some((lo, hi)) = modules::module_range(crate::interpose::alloc::malloc as *const () as usize) {
        unwind::OWN_LO.store(lo, Ordering::Relaxed);
        unwind::OWN_HI.store(hi, Ordering::Relaxed);
    }
    modules::init_exe_path();
    let mut l = Line::new(b'I');
    l.dec(sys::getppid() as u64);
    l.write();
    PLACE_PID.store(sys::getpid(), Ordering::Release);
    TABLES.store(t, Ordering::Release);
    MAX.store(max, Ordering::Relaxed);
    MIN.store(min, Ordering::Release);
    if tm.nthr > 0 {
        PINS.store(true, Ordering::Release);
        thread_started(0);
    }
    true
}

// ---------------------------------------------------------------- modules

unsafe extern "C" fn resolve_cb(info: *mut libc::dl_phdr_info, _size: usize, arg: *mut c_void) -> c_int {
    // SAFETY: valid info from the loader; arg is the tables.
    unsafe {
        let t = &*(arg as *const Tables);
        let info = &*info;
        let (lo, hi) = modules::load_range(info);
        if hi == 0 {
            return 0;
        }
        let name: &[u8] =
            if info.dlpi_name.is_null() { &[] } else { core::ffi::CStr::from_ptr(info.dlpi_name).to_bytes() };
        let path = if name.is_empty() { modules::exe_path() } else { name };
        let id = modules::build_id(info);
        for m in 0..t.nmod {
            let pm = &t.mods[m];
            let plan_path = core::slice::from_raw_parts(t.buf.add(pm.path_at), pm.path_len);
            let plan_id = &pm.id[..pm.id_len];
            let same_path = hex_eq(plan_path, path);
            let state = &t.res_state[m];
            if (pm.id_len > 0 && plan_id == id) || (pm.id_len == 0 && same_path) {
                t.res_lo[m].store(lo, Ordering::Relaxed);
                t.res_hi[m].store(hi, Ordering::Relaxed);
                t.res_bias[m].store(info.dlpi_addr as usize, Ordering::Relaxed);
                state.store(ST_LOADED, Ordering::Relaxed);
            } else if same_path && state.load(Ordering::Relaxed) != ST_LOADED {
                // The file at the planned path is another build: its offsets mean other code.
                state.store(ST_BUILD_ID_DIFFERS, Ordering::Relaxed);
            }
        }
    }
    0
}

/// Re-resolves the plan's modules when the loader's module list changed.
fn refresh(t: &Tables) {
    let (adds, subs) = modules::counters();
    if t.resolved_once.load(Ordering::Acquire)
        && adds == t.adds.load(Ordering::Relaxed)
        && subs == t.subs.load(Ordering::Relaxed)
    {
        return;
    }
    if RES_LOCK.swap(true, Ordering::Acquire) {
        return; // another thread is at it; this allocation uses what is there
    }
    t.seq.fetch_add(1, Ordering::AcqRel);
    for m in 0..t.nmod {
        t.res_state[m].store(ST_MISSING, Ordering::Relaxed);
    }
    // SAFETY: resolve_cb only reads the tables and stores into their atomics.
    unsafe { libc::dl_iterate_phdr(Some(resolve_cb), t as *const Tables as *mut c_void) };
    t.adds.store(adds, Ordering::Relaxed);
    t.subs.store(subs, Ordering::Relaxed);
    t.resolved_once.store(true, Ordering::Release);
    t.seq.fetch_add(1, Ordering::AcqRel);
    RES_LOCK.store(false, Ordering::Release);
}

/// Maps each code address to (plan module, ELF address); false if the module table was being
/// rewritten throughout.
fn map_frames(t: &Tables, ips: &[u64], fm: &mut [u32], fo: &mut [u64]) -> bool {
    for _ in 0..4 {
        let s1 = t.seq.load(Ordering::Acquire);
        if s1 % 2 == 1 {
            core::hint::spin_loop();
            continue;
        }
        for (k, &ip) in ips.iter().enumerate() {
            fm[k] = u32::MAX;
            let ip = ip as usize;
            for m in 0..t.nmod {
                if t.res_state[m].load(Ordering::Relaxed) == ST_LOADED
                    && t.res_lo[m].load(Ordering::Relaxed) <= ip
                    && ip < t.res_hi[m].load(Ordering::Relaxed)
                {
                    fm[k] = m as u32;
                    fo[k] = ip.wrapping_sub(t.res_bias[m].load(Ordering::Relaxed)) as u64;
                    break;
                }
            }
        }
        if t.seq.load(Ordering::Acquire) == s1 {
            return true;
        }
    }
    false
}

fn matches(o: &Obj, fm: &[u32], fo: &[u64]) -> bool {
    let k = o.nframes as usize;
    if fm.len() < k {
        return false;
    }
    let last = (fm.len() - k).min(SKIP_WINDOW);
    (0..=last).any(|s| (0..k).all(|j| fm[s + j] == o.frame_mod[j] && fo[s + j] == o.frame_off[j]))
}

// ---------------------------------------------------------------- allocations

/// An allocation of `size` bytes at `addr` returned by the real allocator (size already at or
/// above MIN). Runs under the shim's guard.
pub fn on_alloc(addr: usize, size: usize) {
    let Some(t) = tables() else { return };
    if size > MAX.load(Ordering::Relaxed) || addr == 0 {
        return;
    }
    refresh(t);
    let mut ips = [0u64; DEPTH];
    let (n, _) = unwind::capture(&mut ips);
    let mut fm = [u32::MAX; DEPTH];
    let mut fo = [0u64; DEPTH];
    if !map_frames(t, &ips[..n], &mut fm[..n], &mut fo[..n]) {
        return;
    }
    let size64 = size as u64;
    for (oi, o) in t.objs[..t.nobj].iter().enumerate() {
        if size64 < o.min || size64 > o.max || !matches(o, &fm[..n], &fo[..n]) {
            continue;
        }
        place(t, oi, o, addr, size);
        return;
    }
}

fn place(t: &Tables, oi: usize, o: &Obj, addr: usize, size: usize) {
    let ps = PAGE.load(Ordering::Relaxed);
    // Whole pages inside the block: a heap block's first bytes share a page with its allocator
    // header (already touched), and the pages at either end may hold other blocks.
    let start = addr.saturating_add(ps - 1) & !(ps - 1);
    let end = addr.saturating_add(size) & !(ps - 1);
    let (len, errno) = if end > start {
        // SAFETY: mbind on pages of a block the allocator just handed out; mask holds
        // mask_words words.
        let r = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                start,
                end - start,
                o.mode as u64,
                o.mask.as_ptr(),
                o.mask_words * 64 + 1,
                MPOL_MF_MOVE,
            )
        };
        (end - start, if r < 0 { unsafe { *libc::__errno_location() } } else { 0 })
    } else {
        (0, 0)
    };
    t.matches[oi].fetch_add(1, Ordering::Relaxed);
    if errno == 0 {
        t.bytes[oi].fetch_add(len as u64, Ordering::Relaxed);
    } else {
        t.failures[oi].fetch_add(1, Ordering::Relaxed);
    }
    if EVENT_LINES.fetch_add(1, Ordering::Relaxed) < MAX_EVENT_LINES {
        let mut l = Line::new(b'P');
        l.dec(sys::gettid() as u64);
        l.dec(oi as u64);
        l.hex(start as u64);
        l.hex(len as u64);
        l.dec(errno as u64);
        l.write();
    }
}

// ---------------------------------------------------------------- threads

/// The creation order for the next thread (called in pthread_create).
pub fn next_order() -> u32 {
    NEXT_ORDER.fetch_add(1, Ordering::Relaxed)
}

fn own_name() -> ([u8; 16], usize) {
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes.
    unsafe { libc::syscall(libc::SYS_prctl, libc::PR_GET_NAME as i64, name.as_mut_ptr()) };
    let n = name.iter().position(|&c| c == 0).unwrap_or(15).min(15);
    (name, n)
}

fn find_entry(t: &Tables, order: u32, name: &[u8]) -> Option<usize> {
    t.thrs[..t.nthr].iter().position(|e| {
        (e.order == u32::MAX || e.order == order) && (e.name_len == 0 || &e.name[..e.name_len as usize] == name)
    })
}

fn pin(t: &Tables, entry: usize, tid: u32, order: u32) {
    let e = &t.thrs[entry];
    // SAFETY: the mask holds cpu_words words.
    let r =
        unsafe { libc::syscall(libc::SYS_sched_setaffinity, tid as i64, (e.cpu_words * 8) as usize, e.cpus.as_ptr()) };
    let errno = if r < 0 { unsafe { *libc::__errno_location() } } else { 0 };
    let mut l = Line::new(b'T');
    l.dec(tid as u64);
    l.dec(entry as u64);
    if order == u32::MAX {
        l.word(b"-");
    } else {
        l.dec(order as u64);
    }
    l.dec(errno as u64);
    l.write();
}

fn register(t: &Tables, key: usize, tid: u32, order: u32) {
    let h = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize;
    for k in 0..REGISTRY {
        let i = (h.wrapping_add(k)) % REGISTRY;
        let cur = t.reg_key[i].load(Ordering::Acquire);
        if cur == key
            || (cur == 0 && t.reg_key[i].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire).is_ok())
        {
            t.reg_tid[i].store(tid, Ordering::Release);
            t.reg_order[i].store(order, Ordering::Release);
            return;
        }
    }
}

fn lookup(t: &Tables, key: usize) -> Option<(u32, u32)> {
    let h = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) as usize;
    for k in 0..REGISTRY {
        let i = (h.wrapping_add(k)) % REGISTRY;
        match t.reg_key[i].load(Ordering::Acquire) {
            0 => return None,
            c if c == key => {
                return Some((t.reg_tid[i].load(Ordering::Acquire), t.reg_order[i].load(Ordering::Acquire)))
            }
            _ => {}
        }
    }
    None
}

/// In a new thread before the program's start routine (and for the main thread at start-up):
/// records the thread's order and pins it if an entry names its order or its inherited name.
pub fn thread_started(order: u32) {
    ORDER.with(|o| o.set(order));
    let Some(t) = tables() else { return };
    // SAFETY: pthread_self reads the thread pointer.
    let me = unsafe { libc::pthread_self() } as usize;
    let tid = sys::gettid();
    register(t, me, tid, order);
    let (name, n) = own_name();
    if let Some(e) = find_entry(t, order, &name[..n]) {
        pin(t, e, tid, order);
    }
}

/// After a successful rename of `thread` (pthread_setname_np, or prctl(PR_SET_NAME) on the
/// calling thread). `name` None: read the calling thread's name back.
pub fn renamed(thread: usize, name: Option<&[u8]>) {
    let Some(t) = tables() else { return };
    // SAFETY: as above.
    let me = unsafe { libc::pthread_self() } as usize;
    let (tid, order) = if thread == me {
        (sys::gettid(), ORDER.with(|o| o.get()))
    } else {
        // A thread that has not reached the trampoline yet is checked there, with its new name.
        match lookup(t, thread) {
            Some(x) => x,
            None => return,
        }
    };
    let own;
    let name = match name {
        Some(n) => &n[..n.len().min(15)],
        None => {
            own = own_name();
            &own.0[..own.1]
        }
    };
    if let Some(e) = find_entry(t, order, name) {
        pin(t, e, tid, order);
    }
}

// ---------------------------------------------------------------- fork and exit

/// In a fork child: counts and orders start again for the new process.
pub fn after_fork() {
    let Some(t) = tables() else { return };
    for i in 0..t.nobj {
        t.matches[i].store(0, Ordering::Relaxed);
        t.bytes[i].store(0, Ordering::Relaxed);
        t.failures[i].store(0, Ordering::Relaxed);
    }
    for k in &t.reg_key {
        k.store(0, Ordering::Relaxed);
    }
    EVENT_LINES.store(0, Ordering::Relaxed);
    FINISHED_PID.store(0, Ordering::Relaxed);
    NEXT_ORDER.store(1, Ordering::Relaxed);
    PLACE_PID.store(sys::getpid(), Ordering::Release);
    let mut l = Line::new(b'I');
    l.dec(sys::getppid() as u64);
    l.write();
    // The forking thread is the child's main thread.
    ORDER.with(|o| o.set(0));
    // SAFETY: as above.
    register(t, unsafe { libc::pthread_self() } as usize, sys::gettid(), 0);
}

/// Writes the per-process summary once (exit, _exit, exec).
pub fn finish() {
    let Some(t) = tables() else { return };
    let pid = sys::getpid();
    if pid != PLACE_PID.load(Ordering::Acquire) || FINISHED_PID.swap(pid, Ordering::AcqRel) == pid {
        return;
    }
    for i in 0..t.nobj {
        let mut l = Line::new(b'S');
        l.dec(i as u64);
        l.dec(t.matches[i].load(Ordering::Relaxed));
        l.dec(t.bytes[i].load(Ordering::Relaxed));
        l.dec(t.failures[i].load(Ordering::Relaxed));
        l.write();
    }
    refresh(t);
    for m in 0..t.nmod {
        let mut l = Line::new(b'M');
        l.dec(m as u64);
        l.word(match t.res_state[m].load(Ordering::Relaxed) {
            ST_LOADED => b"loaded",
            ST_BUILD_ID_DIFFERS => b"build-id-differs",
            _ => b"missing",
        });
        l.write();
    }
    let mut l = Line::new(b'X');
    l.dec(EVENT_LINES.load(Ordering::Relaxed).saturating_sub(MAX_EVENT_LINES));
    l.write();
}
