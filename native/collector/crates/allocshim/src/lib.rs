//! numascope allocation-site shim: a shared object loaded with `LD_PRELOAD` into a program that
//! `numascope record` launches. It interposes the C allocation functions and records, into a
//! per-process file, every allocation of at least NUMASCOPE_ALLOC_MIN_BYTES and a byte-sampled
//! share of smaller ones, each with thread, time, size, address and call stack. See README.md
//! and docs/alloc-sites.md.
//!
//! Rules this file keeps: nothing here allocates through the allocator it wraps (memory comes
//! from the kernel, files are written with raw system calls); every slow path runs under a
//! per-thread guard, so allocations made by the unwinder, the loader or a signal handler while
//! the shim is busy pass straight through; errno is preserved; any failure stops recording
//! (marked in the file) and leaves the program running with the real allocator.

#![allow(clippy::missing_safety_doc)]

mod boot;
mod format;
mod live;
mod modules;
mod out;
mod place;
mod sys;
mod unwind;

use core::cell::Cell;
use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use format::*;

// ---------------------------------------------------------------- state and configuration

const ST_UNINIT: u8 = 0;
/// Resolving the real functions: allocations are served from the bootstrap arena.
const ST_RESOLVING: u8 = 1;
/// Real functions known; nothing recorded (not configured, stopped, or after exit).
const ST_PASS: u8 = 2;
const ST_RECORDING: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(ST_UNINIT);

const DEFAULT_MIN_BYTES: usize = 64 * 1024;
const DEFAULT_SAMPLE_BYTES: u64 = 2 * 1024 * 1024;
const DEFAULT_MAX_DEPTH: usize = 64;
const MAX_DEPTH_LIMIT: usize = 128;

/// Allocations at least this large are always recorded (usize::MAX until configured).
static MIN_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Mean sampling interval in bytes for smaller allocations; 0 = record none of them.
static SAMPLE_BYTES: AtomicU64 = AtomicU64::new(0);
static MAX_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_DEPTH);
static SEED: AtomicU64 = AtomicU64::new(0);
static THREAD_SEQ: AtomicU64 = AtomicU64::new(0);
static PTHREAD_KEY: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The real allocator is glibc's (its chunk header layout is known).
static GLIBC_CHUNKS: AtomicBool = AtomicBool::new(false);
/// The process whose file is open.
static REC_PID: AtomicU32 = AtomicU32::new(0);
/// The smallest threshold: the recording threshold (while recording) or the placement
/// threshold, capped at FAST_CAP. Each thread's sampler counter never holds more than this, so
/// every allocation at least this large runs it out and takes the full path ("the sampler and
/// the fast path" below). 0 until start-up has read the settings: counters stay at 0 and
/// everything before takes the full path.
static FAST_BELOW: AtomicUsize = AtomicUsize::new(0);
/// Larger requests always take the full path (and the counters' sums cannot overflow).
const FAST_CAP: usize = 1 << 48;
/// `free` (and `realloc`) of a pointer at or below this take the full path without looking at
/// the block: NULL always, and every pointer until start-up has found glibc's allocator
/// underneath (with another allocator the word before a block is not ours to read).
static FREE_FULL_AT_OR_BELOW: AtomicUsize = AtomicUsize::new(usize::MAX);
/// With glibc underneath, a block whose chunk word is smaller than this is not tracked, and its
/// `free` goes straight on to the real one: the threshold while recording, everything (but the
/// bootstrap arena's all-ones word) otherwise.
static FREE_CHUNK_MIN: AtomicUsize = AtomicUsize::new(0);

/// Stops recording for good in this process (a failure or the size limit); the program goes on
/// with the real allocator.
pub(crate) fn stop_recording() {
    let _ = STATE.compare_exchange(ST_RECORDING, ST_PASS, Ordering::AcqRel, Ordering::Relaxed);
}

/// Sets the fast-path thresholds from the state and settings (after start-up has configured
/// recording and placement). A stale value after recording stops is harmless: the full paths
/// check the state again.
fn publish_fast_path() {
    let recording = STATE.load(Ordering::Acquire) == ST_RECORDING;
    let rec_min = if recording { MIN_BYTES.load(Ordering::Relaxed) } else { usize::MAX };
    let fast = rec_min.min(place::MIN.load(Ordering::Acquire)).min(FAST_CAP);
    // A multiple of 8, so that the chunk word's three flag bits need no masking: below it,
    // word and size alike are below the threshold (0 when the threshold is under 8: no fast free).
    let chunk_min = if recording { rec_min & !7 } else { usize::MAX };
    FREE_CHUNK_MIN.store(chunk_min, Ordering::Release);
    if GLIBC_CHUNKS.load(Ordering::Relaxed) {
        FREE_FULL_AT_OR_BELOW.store(0, Ordering::Release);
    }
    FAST_BELOW.store(fast, Ordering::Release);
}

// ---------------------------------------------------------------- per-thread state

struct Tls {
    /// Set while the shim itself is working on this thread.
    guard: Cell<bool>,
    /// The sampler's two counters off x86-64 (see "the sampler and the fast path").
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    countdown: Cell<u64>,
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    rest: Cell<u64>,
    sampler_ready: Cell<bool>,
    rng: Cell<u64>,
    tid: Cell<u32>,
    buf: Cell<*mut out::ThreadBuf>,
    /// The last stack captured on this thread (unwind.rs, "the per-thread stack cache").
    stack: core::cell::UnsafeCell<unwind::StackCache>,
}

thread_local! {
    // Constant-initialised and without a destructor: access never allocates or registers
    // anything, which matters inside malloc.
    static TLS: Tls = const {
        Tls {
            guard: Cell::new(false),
            countdown: Cell::new(0),
            rest: Cell::new(0),
            sampler_ready: Cell::new(false),
            rng: Cell::new(0),
            tid: Cell::new(0),
            buf: Cell::new(core::ptr::null_mut()),
            stack: core::cell::UnsafeCell::new(unwind::StackCache::new()),
        }
    };
}

// ---------------------------------------------------------------- the real functions

macro_rules! real_fns {
    ($($name:ident : $ty:ty = $sym:literal $(, $own:ident, $fallback:literal)?;)*) => {
        #[allow(non_upper_case_globals)]
        mod real {
            use core::sync::atomic::AtomicPtr;
            $(pub static $name: AtomicPtr<core::ffi::c_void> = AtomicPtr::new(core::ptr::null_mut());)*
        }
        $(
            #[inline(always)]
            #[allow(non_snake_case, dead_code)]
            unsafe fn $name() -> $ty {
                // SAFETY: only called once resolve() stored a non-null pointer of this type.
                unsafe { core::mem::transmute::<*mut c_void, $ty>(real::$name.load(Ordering::Relaxed)) }
            }
        )*
        unsafe fn resolve_all() -> bool {
            let mut ok = true;
            $(
                #[allow(unused_mut)]
                let mut p = unsafe { libc::dlsym(libc::RTLD_NEXT, $sym.as_ptr()) };
                $(
                    if p.is_null() || p == $own as *const () as *mut c_void {
                        p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, $fallback.as_ptr()) };
                    }
                    ok &= !p.is_null();
                )?
                real::$name.store(p, Ordering::Relaxed);
            )*
            ok
        }
    };
}

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type CallocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type PosixMemalignFn = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int;
type AlignFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocarrayFn = unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void;
type MmapFn = unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, c_int, i64) -> *mut c_void;
type MunmapFn = unsafe extern "C" fn(*mut c_void, usize) -> c_int;
type MremapFn = unsafe extern "C" fn(*mut c_void, usize, usize, c_int, ...) -> *mut c_void;
type DlcloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type StartFn = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type PthreadCreateFn =
    unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartFn, *mut c_void) -> c_int;
type SetnameFn = unsafe extern "C" fn(libc::pthread_t, *const c_char) -> c_int;
type PrctlFn = unsafe extern "C" fn(c_int, libc::c_ulong, libc::c_ulong, libc::c_ulong, libc::c_ulong) -> c_int;

real_fns! {
    r_malloc: MallocFn = c"malloc", malloc, c"__libc_malloc";
    r_calloc: CallocFn = c"calloc", calloc, c"__libc_calloc";
    r_realloc: ReallocFn = c"realloc", realloc, c"__libc_realloc";
    r_free: FreeFn = c"free", free, c"__libc_free";
    r_posix_memalign: PosixMemalignFn = c"posix_memalign";
    r_aligned_alloc: AlignFn = c"aligned_alloc";
    r_memalign: AlignFn = c"memalign", memalign, c"__libc_memalign";
    r_valloc: MallocFn = c"valloc", valloc, c"__libc_valloc";
    r_pvalloc: MallocFn = c"pvalloc", pvalloc, c"__libc_pvalloc";
    r_reallocarray: ReallocarrayFn = c"reallocarray";
    r_mmap: MmapFn = c"mmap";
    r_mmap64: MmapFn = c"mmap64";
    r_munmap: MunmapFn = c"munmap";
    r_mremap: MremapFn = c"mremap";
    r_dlclose: DlcloseFn = c"dlclose";
    r_execve: ExecveFn = c"execve";
    r_execvpe: ExecveFn = c"execvpe";
    r_execv: ExecvFn = c"execv";
    r_execvp: ExecvFn = c"execvp";
    r_pthread_create: PthreadCreateFn = c"pthread_create";
    r_pthread_setname_np: SetnameFn = c"pthread_setname_np";
    r_prctl: PrctlFn = c"prctl";
}

/// Resolves the real functions on the first call into the shim. Returns the state afterwards:
/// ST_RESOLVING means "use the bootstrap arena" (this thread is inside dlsym, or another
/// thread is resolving).
#[cold]
#[inline(never)]
fn ensure_resolved() -> u8 {
    match STATE.compare_exchange(ST_UNINIT, ST_RESOLVING, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            // SAFETY: dlsym calls may re-enter malloc/calloc, which see ST_RESOLVING.
            let ok = unsafe { resolve_all() };
            if !ok {
                sys::say(b"numascope-allocshim: the C library's malloc functions were not found; aborting\n");
                // SAFETY: nothing can be allocated without them.
                unsafe { libc::abort() };
            }
            // SAFETY: dlsym lookups of glibc's own names for the allocator.
            unsafe {
                let same = |a: *mut c_void, name: &core::ffi::CStr| {
                    !a.is_null() && a == libc::dlsym(libc::RTLD_NEXT, name.as_ptr())
                };
                let glibc = same(real::r_malloc.load(Ordering::Relaxed), c"__libc_malloc")
                    && same(real::r_free.load(Ordering::Relaxed), c"__libc_free")
                    && same(real::r_realloc.load(Ordering::Relaxed), c"__libc_realloc")
                    && same(real::r_memalign.load(Ordering::Relaxed), c"__libc_memalign");
                GLIBC_CHUNKS.store(glibc, Ordering::Relaxed);
            }
            STATE.store(ST_PASS, Ordering::Release);
            ST_PASS
        }
        Err(s) => s,
    }
}

#[inline(always)]
fn state() -> u8 {
    let s = STATE.load(Ordering::Acquire);
    if s >= ST_PASS {
        s
    } else {
        ensure_resolved()
    }
}

// ---------------------------------------------------------------- recording

/// Records an allocation that passed the threshold or the sampler.
#[cold]
#[inline(never)]
fn record(op: u8, addr: usize, size: usize, old: usize, aux: u64, flags: u16, track: bool) {
    TLS.with(|t| {
        if t.guard.get() {
            return;
        }
        t.guard.set(true);
        let _errno = sys::ErrnoGuard::save();
        let sp = stack_pointer();
        let mut ips = [0u64; MAX_DEPTH_LIMIT];
        let depth = MAX_DEPTH.load(Ordering::Relaxed).min(MAX_DEPTH_LIMIT);
        // SAFETY: this thread's own cache; the guard keeps the shim from re-entering here.
        let cache = unsafe { &mut *t.stack.get() };
        let (n, truncated) = unwind::capture_cached(&mut ips[..depth], cache, op, sp);
        let flags = if truncated { flags | EV_STACK_TRUNCATED } else { flags };
        if track {
            live::insert(addr);
        }
        emit(t, flags, op, addr as u64, size as u64, old as u64, aux, &ips[..n]);
        t.guard.set(false);
    });
}

/// The stack pointer where `record` reads it (the stack cache's key; 0 where not x86-64).
#[inline(always)]
fn stack_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let sp: usize;
        // SAFETY: reads rsp, touches nothing.
        unsafe { core::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
        sp
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Records an event without a stack (frees, unmaps).
#[cold]
#[inline(never)]
fn record_plain(op: u8, addr: usize, size: usize) {
    TLS.with(|t| {
        if t.guard.get() {
            return;
        }
        t.guard.set(true);
        let _errno = sys::ErrnoGuard::save();
        emit(t, 0, op, addr as u64, size as u64, 0, 0, &[]);
        t.guard.set(false);
    });
}

#[allow(clippy::too_many_arguments)]
fn emit(t: &Tls, flags: u16, op: u8, addr: u64, size: u64, old: u64, aux: u64, ips: &[u64]) {
    if STATE.load(Ordering::Acquire) != ST_RECORDING {
        return;
    }
    let mut tid = t.tid.get();
    if tid == 0 {
        tid = sys::gettid();
        t.tid.set(tid);
    }
    let mut b = t.buf.get();
    if b.is_null() {
        b = out::claim_buffer();
        if b.is_null() {
            out::DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        t.buf.set(b);
        let key = PTHREAD_KEY.load(Ordering::Relaxed);
        if key != usize::MAX {
            // SAFETY: a key created in the constructor; the destructor flushes this buffer.
            // (pthread_setspecific may call calloc: the guard is set, so it passes through.)
            unsafe { libc::pthread_setspecific(key as libc::pthread_key_t, b as *const c_void) };
        }
    }
    // The event is in the file when append_event returns (a block of the file mapped into the
    // process), so a recording stopped while the program keeps running has every finished one.
    // SAFETY: b is this thread's slot.
    unsafe { out::append_event(b, flags, sys::mono_ns(), tid, op, addr, size, old, aux, ips) };
}

// ---------------------------------------------------------------- the sampler and the fast path
//
// Small allocations are sampled by bytes: Poisson sampling with mean interval SAMPLE_BYTES (as
// tcmalloc does), so a block of `s` bytes is sampled with probability 1 - exp(-s / SAMPLE_BYTES)
// and the reader's estimate is unbiased. Each thread's distance R to the next sample point is
// kept in two parts, R = fast + rest, with fast at most FAST_BELOW (the smallest threshold).
// Every allocation first counts its size down from `fast`; while that stays above zero the block
// is below every threshold and is not sampled, so the call goes straight on to the real function
// (one subtraction and one branch on the fast path: the counter is also the threshold test). When
// it reaches zero or would go below, the full path runs and `settle` sorts it out: a block at or
// above the threshold (recorded, not counted), the end of a sampling interval (sampled, a new
// interval drawn), or only a refill of `fast` from `rest` (once per FAST_BELOW bytes at most).

// On x86-64 the two parts live in initial-exec TLS (an `fs`-relative access, no
// `__tls_get_addr` call; a library loaded with LD_PRELOAD is in the static TLS block, which this
// model requires). `rest` is stored plus one: 0 means no interval has been drawn on this thread.
#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 4",
    ".globl numascope_allocshim_countdown",
    ".hidden numascope_allocshim_countdown",
    ".type numascope_allocshim_countdown, @object",
    ".size numascope_allocshim_countdown, 8",
    "numascope_allocshim_countdown:",
    ".zero 8",
    ".globl numascope_allocshim_rest",
    ".hidden numascope_allocshim_rest",
    ".type numascope_allocshim_rest, @object",
    ".size numascope_allocshim_rest, 8",
    "numascope_allocshim_rest:",
    ".zero 8",
    ".popsection",
);

/// The fast-path test: counts `$size` down from this thread's `fast`; runs `$full` (which must
/// return) when the count reaches zero or would go below it.
#[cfg(target_arch = "x86_64")]
macro_rules! fast_or {
    ($size:expr, $full:expr) => {
        // SAFETY: the variable's TLS offset applied to `fs` addresses this thread's copy of it.
        unsafe {
            core::arch::asm!(
                "sub qword ptr fs:[{off}], {size}",
                "jbe {full}",
                off = in(reg) countdown_offset(),
                size = in(reg) $size,
                full = label { return $full },
                options(nostack),
            );
        }
    };
}

#[cfg(not(target_arch = "x86_64"))]
macro_rules! fast_or {
    ($size:expr, $full:expr) => {
        let c = countdown_ptr();
        // SAFETY: this thread's own counter.
        let (left, borrow) = unsafe { *c }.overflowing_sub($size as u64);
        unsafe { *c = left };
        if borrow || left == 0 {
            return $full;
        }
    };
}

/// The offset of this thread's `fast` from the thread pointer.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn countdown_offset() -> usize {
    let off: usize;
    // SAFETY: reads the GOT slot the loader filled with the variable's TLS offset.
    unsafe {
        core::arch::asm!(
            "mov {off}, qword ptr [rip + numascope_allocshim_countdown@GOTTPOFF]",
            off = out(reg) off,
            options(nostack, pure, readonly, preserves_flags),
        );
    }
    off
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn countdown_ptr() -> *mut u64 {
    let p: *mut u64;
    // SAFETY: thread pointer plus the variable's TLS offset is this thread's copy of it.
    unsafe {
        core::arch::asm!(
            "mov {p}, qword ptr fs:[0]",
            "add {p}, qword ptr [rip + numascope_allocshim_countdown@GOTTPOFF]",
            p = out(reg) p,
            options(nostack, pure, readonly),
        );
    }
    p
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rest_ptr() -> *mut u64 {
    let p: *mut u64;
    // SAFETY: as for countdown_ptr.
    unsafe {
        core::arch::asm!(
            "mov {p}, qword ptr fs:[0]",
            "add {p}, qword ptr [rip + numascope_allocshim_rest@GOTTPOFF]",
            p = out(reg) p,
            options(nostack, pure, readonly),
        );
    }
    p
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn countdown_ptr() -> *mut u64 {
    TLS.with(|t| t.countdown.as_ptr())
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rest_ptr() -> *mut u64 {
    TLS.with(|t| t.rest.as_ptr())
}

/// Counts `size` down as the fast path does, for the functions without one (and for `realloc`
/// of a block that may be tracked); `settle` follows once the result is known.
#[inline(always)]
fn charge(size: usize) {
    let c = countdown_ptr();
    // SAFETY: this thread's own counter.
    unsafe { *c = (*c).wrapping_sub(size as u64) };
}

/// The sampler's bookkeeping for an allocation of `size` bytes that was charged and took the
/// full path, once its result is known (`ok`: it succeeded). Returns whether it is a sampled
/// small block; re-arms the counter.
#[inline(never)]
fn settle(size: usize, ok: bool, recording: bool) -> bool {
    let c = countdown_ptr();
    // SAFETY: this thread's own counters (here and below).
    let before = unsafe { *c }.wrapping_add(size as u64);
    let cap = FAST_BELOW.load(Ordering::Acquire) as u64;
    if !ok || (recording && size >= MIN_BYTES.load(Ordering::Relaxed)) {
        // A failed allocation counts nothing; one at or above the threshold is recorded as
        // such, and the sampler counts only smaller ones.
        unsafe { *c = before };
        return false;
    }
    if !recording {
        // Nothing is sampled: the counter only has to send blocks at or above FAST_BELOW here
        // (and `refill` keeps it going without the full path).
        unsafe {
            *c = cap;
            *rest_ptr() = (i64::MAX / 4) as u64;
        }
        return false;
    }
    let r = rest_ptr();
    let stored = unsafe { *r };
    let mut left: i128 =
        if stored == 0 { draw_interval() as i128 } else { before as i128 + (stored - 1) as i128 } - size as i128;
    // The interval ended inside this block: sample it; the process being memoryless, the next
    // interval starts fresh after it.
    let sampled = left <= 0;
    if sampled {
        left = draw_interval() as i128;
    }
    let fast = (left as u64).min(cap);
    unsafe {
        *c = fast;
        *r = (left as u64 - fast) + 1;
    }
    sampled
}

/// The common case of a full path entered because the counter ran out: a block below every
/// threshold whose size still lies inside the sampling interval. Moves the next FAST_BELOW bytes
/// of the interval from `rest` into the counter, charged with `size` (as `settle` would, without
/// its calls), and returns true; false when the full path must look (a larger block, the
/// interval's end, start-up, or no interval drawn yet).
#[inline(always)]
fn refill(size: usize) -> bool {
    let cap = FAST_BELOW.load(Ordering::Acquire) as u64;
    if size as u64 >= cap {
        return false;
    }
    let (c, r) = (countdown_ptr(), rest_ptr());
    // SAFETY: this thread's own counters.
    let (before, stored) = unsafe { ((*c).wrapping_add(size as u64), *r) };
    // before <= cap <= 2^48 and stored <= 2^62: no overflow.
    let total = before + stored;
    if stored == 0 || total <= size as u64 + 1 {
        return false;
    }
    let left = total - 1 - size as u64;
    let fast = left.min(cap);
    unsafe {
        *c = fast;
        *r = left - fast + 1;
    }
    true
}

/// A fresh distance to the next sample point, in bytes (at least 1; "never" when the sampler is
/// off).
#[cold]
fn draw_interval() -> i64 {
    let mean = SAMPLE_BYTES.load(Ordering::Relaxed);
    if mean == 0 {
        return i64::MAX / 4;
    }
    TLS.with(|t| {
        if !t.sampler_ready.get() {
            t.sampler_ready.set(true);
            let seq = THREAD_SEQ.fetch_add(1, Ordering::Relaxed) + 1;
            t.rng.set((SEED.load(Ordering::Relaxed) ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
        }
        draw(t, mean)
    })
}

/// Starts this thread's sampler afresh (a fork child's first thread).
fn reset_sampler() {
    // SAFETY: this thread's own counters.
    unsafe {
        *countdown_ptr() = 0;
        *rest_ptr() = 0;
    }
}

fn draw(t: &Tls, mean: u64) -> i64 {
    // xorshift64*
    let mut x = t.rng.get();
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t.rng.set(x);
    let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
    let u = ((r >> 11) as f64 + 1.0) / (1u64 << 53) as f64; // (0, 1]
    let v = -u.ln() * mean as f64;
    if v >= 1.0 {
        if v > (i64::MAX / 4) as f64 {
            i64::MAX / 4
        } else {
            v as i64
        }
    } else {
        1
    }
}

/// Records an allocation result if it is at or above the threshold or sampled, for the
/// functions without a fast path.
#[inline(always)]
fn after_alloc(op: u8, p: *mut c_void, size: usize) {
    charge(size);
    after_alloc_charged(ST_RECORDING, op, p, size);
}

/// What the full path of an allocation function does after the real call, its size charged.
#[inline(always)]
fn after_alloc_charged(st: u8, op: u8, p: *mut c_void, size: usize) {
    let recording = st == ST_RECORDING;
    let sampled = settle(size, !p.is_null(), recording);
    if !recording || p.is_null() {
        return;
    }
    if size >= MIN_BYTES.load(Ordering::Relaxed) {
        record(op, p as usize, size, 0, 0, 0, true);
    } else if sampled {
        // Sampled blocks are not tracked: watching their frees would cost every free a look-up.
        record(op, p as usize, size, 0, 0, EV_SAMPLED, false);
    }
}

#[cold]
#[inline(never)]
fn on_free(p: usize) {
    if live::remove(p) {
        record_plain(OP_FREE, p, 0);
    }
}

// ---------------------------------------------------------------- placement (numascope run)

/// Placement by allocation site: one compare unless a plan's object entries cover this size.
#[inline(always)]
fn maybe_place(p: *mut c_void, size: usize) {
    if size >= place::MIN.load(Ordering::Relaxed) && !p.is_null() {
        place_slow(p as usize, size);
    }
}

#[cold]
#[inline(never)]
fn place_slow(addr: usize, size: usize) {
    TLS.with(|t| {
        if t.guard.get() {
            return;
        }
        t.guard.set(true);
        let _errno = sys::ErrnoGuard::save();
        place::on_alloc(addr, size);
        t.guard.set(false);
    });
}

/// Runs `f` under the shim's guard (anything it allocates passes through), errno kept.
fn guarded(f: impl FnOnce()) {
    TLS.with(|t| {
        if t.guard.get() {
            return;
        }
        t.guard.set(true);
        let _errno = sys::ErrnoGuard::save();
        f();
        t.guard.set(false);
    });
}

#[repr(C)]
struct ThreadStart {
    start: StartFn,
    arg: *mut c_void,
    order: u32,
}

unsafe extern "C" fn thread_trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: p is the ThreadStart pthread_create allocated for this thread.
    let b = unsafe { core::ptr::read(p as *const ThreadStart) };
    unsafe { r_free()(p) };
    guarded(|| place::thread_started(b.order));
    unsafe { (b.start)(b.arg) }
}

/// Threads are pinned by creation order before they run the program's code: with a plan that
/// has thread entries, each new thread starts in a trampoline that knows its order.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartFn,
    arg: *mut c_void,
) -> c_int {
    if state() < ST_PASS || real::r_pthread_create.load(Ordering::Relaxed).is_null() {
        return libc::EAGAIN;
    }
    if !place::pins_threads() {
        return unsafe { r_pthread_create()(thread, attr, start, arg) };
    }
    let b = unsafe { r_malloc()(core::mem::size_of::<ThreadStart>()) } as *mut ThreadStart;
    if b.is_null() {
        return unsafe { r_pthread_create()(thread, attr, start, arg) };
    }
    unsafe { b.write(ThreadStart { start, arg, order: place::next_order() }) };
    let r = unsafe { r_pthread_create()(thread, attr, thread_trampoline, b as *mut c_void) };
    if r != 0 {
        unsafe { r_free()(b as *mut c_void) };
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setname_np(thread: libc::pthread_t, name: *const c_char) -> c_int {
    if state() < ST_PASS || real::r_pthread_setname_np.load(Ordering::Relaxed).is_null() {
        return libc::ENOSYS;
    }
    let r = unsafe { r_pthread_setname_np()(thread, name) };
    if r == 0 && place::pins_threads() && !name.is_null() {
        // SAFETY: the real call accepted name as a NUL-terminated string.
        let n = unsafe { core::ffi::CStr::from_ptr(name) }.to_bytes();
        guarded(|| place::renamed(thread as usize, Some(n)));
    }
    r
}

/// `prctl` is variadic in C; like `mremap` above, the five register arguments are passed on.
#[no_mangle]
pub unsafe extern "C" fn prctl(
    option: c_int,
    a2: libc::c_ulong,
    a3: libc::c_ulong,
    a4: libc::c_ulong,
    a5: libc::c_ulong,
) -> c_int {
    let r = if state() < ST_PASS || real::r_prctl.load(Ordering::Relaxed).is_null() {
        unsafe { libc::syscall(libc::SYS_prctl, option as i64, a2, a3, a4, a5) as c_int }
    } else {
        unsafe { r_prctl()(option, a2, a3, a4, a5) }
    };
    if r == 0 && option == libc::PR_SET_NAME && place::pins_threads() {
        // SAFETY: pthread_self reads the thread pointer.
        let me = unsafe { libc::pthread_self() } as usize;
        guarded(|| place::renamed(me, None));
    }
    r
}

// ---------------------------------------------------------------- interposed functions

// The fast paths decide before the real call (see "the sampler and the fast path"), so that a
// small block's allocation or free reaches the real function by a tail jump, with no frame and
// nothing after the call.

#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    fast_or!(size, unsafe { malloc_slow(size) });
    unsafe { r_malloc()(size) }
}

/// Where `malloc`'s counter ran out: mostly a refill, then still a tail jump; else the full path.
#[inline(never)]
unsafe extern "C" fn malloc_slow(size: usize) -> *mut c_void {
    if refill(size) {
        return unsafe { r_malloc()(size) };
    }
    unsafe { malloc_full(size) }
}

/// `malloc` at start-up, at or above a threshold, and when the sampler's counter runs out (its
/// size charged).
// The full paths are `extern "C"` (they cannot unwind), so that the fast paths reach them by
// a tail jump too, with no frame of their own.
#[inline(never)]
unsafe extern "C" fn malloc_full(size: usize) -> *mut c_void {
    let st = state();
    if st < ST_PASS {
        return boot::alloc(size, 16) as *mut c_void;
    }
    let p = unsafe { r_malloc()(size) };
    maybe_place(p, size);
    after_alloc_charged(st, OP_MALLOC, p, size);
    p
}

#[no_mangle]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    // An overflowing product takes the full path (no count is that large).
    let total = n.saturating_mul(size);
    fast_or!(total, unsafe { calloc_slow(n, size, total) });
    unsafe { r_calloc()(n, size) }
}

#[inline(never)]
unsafe extern "C" fn calloc_slow(n: usize, size: usize, total: usize) -> *mut c_void {
    if refill(total) {
        return unsafe { r_calloc()(n, size) };
    }
    unsafe { calloc_full(n, size) }
}

#[inline(never)]
unsafe extern "C" fn calloc_full(n: usize, size: usize) -> *mut c_void {
    let total = n.saturating_mul(size);
    let st = state();
    if st < ST_PASS {
        return match n.checked_mul(size) {
            Some(total) => boot::alloc(total, 16) as *mut c_void,
            None => core::ptr::null_mut(),
        };
    }
    let p = unsafe { r_calloc()(n, size) };
    maybe_place(p, total);
    after_alloc_charged(st, OP_CALLOC, p, total);
    p
}

#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // One compare rules out NULL and, until glibc's allocator is known to be underneath, every
    // block; then the chunk word.
    if p as usize > FREE_FULL_AT_OR_BELOW.load(Ordering::Acquire)
        && glibc_chunk_word(p) < FREE_CHUNK_MIN.load(Ordering::Acquire)
    {
        return unsafe { r_free()(p) };
    }
    unsafe { free_full(p) }
}

/// `free` of a block that may be tracked, from the bootstrap arena, or while not recording on
/// glibc (another allocator underneath, placement only, start-up).
#[inline(never)]
unsafe extern "C" fn free_full(p: *mut c_void) {
    if p.is_null() || boot::owns(p as *const u8) {
        return;
    }
    let st = STATE.load(Ordering::Acquire);
    if st == ST_RECORDING && may_be_tracked(p) {
        on_free(p as usize);
    }
    if st >= ST_PASS {
        unsafe { r_free()(p) };
    }
}

/// The word glibc's malloc keeps before a block it handed out (which its `free` and `realloc`
/// read next anyway): the chunk's size, at least the block's usable size, with three flag bits
/// below. For a block of the bootstrap arena the word is all ones (boot.rs), above every
/// threshold.
#[inline(always)]
fn glibc_chunk_word(p: *mut c_void) -> usize {
    // SAFETY: only called with GLIBC_CHUNKS true (FREE_FULL_AT_OR_BELOW below usize::MAX
    // implies it) on a live block of glibc's malloc, whose chunk header precedes it, or of the
    // bootstrap arena.
    unsafe { *(p as *const usize).sub(1) }
}

#[inline(always)]
fn glibc_chunk_size(p: *mut c_void) -> usize {
    glibc_chunk_word(p) & !7
}

/// Whether a block being freed may be a recorded one. With glibc's allocator underneath, the
/// chunk size rules out every block smaller than the threshold without touching the shim's
/// tables.
#[inline(always)]
fn may_be_tracked(p: *mut c_void) -> bool {
    if GLIBC_CHUNKS.load(Ordering::Relaxed) && glibc_chunk_size(p) < MIN_BYTES.load(Ordering::Relaxed) {
        return false;
    }
    live::maybe(p as usize)
}

/// `realloc` and `reallocarray` (`n` elements of `elem` bytes; `size` is their saturated
/// product) on their full path. `charged`: the fast path already charged `size`.
#[inline(never)]
unsafe extern "C" fn realloc_full(
    op: u8,
    p: *mut c_void,
    size: usize,
    n: usize,
    elem: usize,
    charged: bool,
) -> *mut c_void {
    let call = || unsafe {
        if op == OP_REALLOCARRAY {
            r_reallocarray()(p, n, elem)
        } else {
            r_realloc()(p, size)
        }
    };
    let st = state();
    if p.is_null() {
        if st < ST_PASS {
            return boot::alloc(size, 16) as *mut c_void;
        }
        if !charged {
            charge(size);
        }
        let q = call();
        maybe_place(q, size);
        after_alloc_charged(st, op, q, size);
        return q;
    }
    if boot::owns(p as *const u8) {
        // Out of the arena into real memory (malloc does the sampler's count).
        if charged {
            settle(size, false, false);
        }
        let q = unsafe { malloc(size) };
        if !q.is_null() {
            let n = boot::size_of(p as *const u8).min(size);
            unsafe { core::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, n) };
        }
        return q;
    }
    if st < ST_PASS {
        return core::ptr::null_mut();
    }
    if !charged {
        charge(size);
    }
    let tracked = st == ST_RECORDING && may_be_tracked(p) && live::remove(p as usize);
    let q = call();
    maybe_place(q, size);
    let recording = st == ST_RECORDING;
    let sampled = settle(size, !q.is_null(), recording);
    if !recording {
        return q;
    }
    if q.is_null() {
        if tracked {
            if size == 0 {
                record_plain(OP_FREE, p as usize, 0);
            } else {
                // The old block is still valid.
                live::insert(p as usize);
            }
        }
        return q;
    }
    let large = size >= MIN_BYTES.load(Ordering::Relaxed);
    if tracked || large {
        record(op, q as usize, size, p as usize, tracked as u64, 0, large);
    } else if sampled {
        record(op, q as usize, size, p as usize, 0, EV_SAMPLED, false);
    }
    q
}

#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // Fast when the old block cannot be tracked (no block, or a glibc chunk below the recording
    // threshold) and the new size passes the counter.
    if p.is_null()
        || (p as usize > FREE_FULL_AT_OR_BELOW.load(Ordering::Acquire)
            && glibc_chunk_word(p) < FREE_CHUNK_MIN.load(Ordering::Acquire))
    {
        fast_or!(size, unsafe { realloc_slow(p, size) });
        return unsafe { r_realloc()(p, size) };
    }
    unsafe { realloc_full(OP_REALLOC, p, size, 1, size, false) }
}

/// `realloc`'s counter ran out on a block the fast path let through (not tracked).
#[inline(never)]
unsafe extern "C" fn realloc_slow(p: *mut c_void, size: usize) -> *mut c_void {
    if refill(size) {
        return unsafe { r_realloc()(p, size) };
    }
    unsafe { realloc_full(OP_REALLOC, p, size, 1, size, true) }
}

#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    let total = n.saturating_mul(size);
    unsafe { realloc_full(OP_REALLOCARRAY, p, total, n, size, false) }
}

#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    let st = state();
    if st < ST_PASS {
        let p = boot::alloc(size, align);
        if p.is_null() {
            return libc::ENOMEM;
        }
        unsafe { *out = p as *mut c_void };
        return 0;
    }
    let r = unsafe { r_posix_memalign()(out, align, size) };
    if r == 0 {
        maybe_place(unsafe { *out }, size);
    }
    if st == ST_RECORDING && r == 0 {
        after_alloc(OP_POSIX_MEMALIGN, unsafe { *out }, size);
    }
    r
}

macro_rules! aligned {
    ($name:ident, $real:ident, $op:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(align: usize, size: usize) -> *mut c_void {
            let st = state();
            if st < ST_PASS {
                return boot::alloc(size, align) as *mut c_void;
            }
            let p = unsafe { $real()(align, size) };
            maybe_place(p, size);
            if st == ST_RECORDING {
                after_alloc($op, p, size);
            }
            p
        }
    };
}
aligned!(aligned_alloc, r_aligned_alloc, OP_ALIGNED_ALLOC);
aligned!(memalign, r_memalign, OP_MEMALIGN);

macro_rules! page_aligned {
    ($name:ident, $real:ident, $op:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(size: usize) -> *mut c_void {
            let st = state();
            if st < ST_PASS {
                return boot::alloc(size, 4096) as *mut c_void;
            }
            let p = unsafe { $real()(size) };
            maybe_place(p, size);
            if st == ST_RECORDING {
                after_alloc($op, p, size);
            }
            p
        }
    };
}
page_aligned!(valloc, r_valloc, OP_VALLOC);
page_aligned!(pvalloc, r_pvalloc, OP_PVALLOC);

unsafe fn mmap_impl(
    real: unsafe fn() -> MmapFn,
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    let st = state();
    if st < ST_PASS {
        return unsafe { sys::mmap_raw(addr, len, prot, flags, fd, off) };
    }
    let p = unsafe { real()(addr, len, prot, flags, fd, off) };
    if p != libc::MAP_FAILED && flags & libc::MAP_ANONYMOUS != 0 {
        maybe_place(p, len);
    }
    if st == ST_RECORDING && p != libc::MAP_FAILED {
        let aux = (prot as u32 as u64) | ((flags as u32 as u64) << 32);
        charge(len);
        let sampled = settle(len, true, true);
        if len >= MIN_BYTES.load(Ordering::Relaxed) {
            record(OP_MMAP, p as usize, len, 0, aux, 0, false);
        } else if sampled {
            record(OP_MMAP, p as usize, len, 0, aux, EV_SAMPLED, false);
        }
    }
    p
}

#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    unsafe { mmap_impl(r_mmap, addr, len, prot, flags, fd, off) }
}

#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    unsafe { mmap_impl(r_mmap64, addr, len, prot, flags, fd, off) }
}

#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: usize) -> c_int {
    let st = state();
    if st < ST_PASS {
        return unsafe { libc::syscall(libc::SYS_munmap, addr, len) as c_int };
    }
    let r = unsafe { r_munmap()(addr, len) };
    if st == ST_RECORDING && r == 0 {
        record_plain(OP_MUNMAP, addr as usize, len);
    }
    r
}

/// `mremap` is variadic in C (the fifth argument only with MREMAP_FIXED). On the System V
/// x86-64 and AArch64 ABIs a variadic caller passes it in the same register as a fixed
/// argument, so reading five arguments and passing all five on is what glibc itself does.
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    let st = state();
    if st < ST_PASS {
        return unsafe {
            libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags as i64, new_addr) as *mut c_void
        };
    }
    let p = unsafe { r_mremap()(old, old_len, new_len, flags, new_addr) };
    if st == ST_RECORDING && p != libc::MAP_FAILED {
        record(OP_MREMAP, p as usize, new_len, old as usize, old_len as u64, 0, false);
    }
    p
}

#[no_mangle]
pub unsafe extern "C" fn dlclose(handle: *mut c_void) -> c_int {
    if state() == ST_RECORDING {
        // Keep the closing module's addresses symbolizable.
        TLS.with(|t| {
            if !t.guard.get() {
                t.guard.set(true);
                let _errno = sys::ErrnoGuard::save();
                modules::snapshot(false);
                t.guard.set(false);
            }
        });
    }
    unsafe { r_dlclose()(handle) }
}

// ---------------------------------------------------------------- start, fork, exit

/// Parses a decimal value; None when not a plain non-negative integer.
fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &c in v {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (c - b'0') as u64;
    }
    Some(n)
}

struct Env<'a> {
    dir: Option<&'a [u8]>,
    min: Option<&'a [u8]>,
    sample: Option<&'a [u8]>,
    depth: Option<&'a [u8]>,
    max_file: Option<&'a [u8]>,
    seed: Option<&'a [u8]>,
    place_plan: Option<&'a [u8]>,
    place_log: Option<&'a [u8]>,
    stack_cache: Option<&'a [u8]>,
    shared_map: Option<&'a [u8]>,
}

unsafe fn read_env<'a>(envp: *const *const c_char) -> Env<'a> {
    let mut e = Env {
        dir: None,
        min: None,
        sample: None,
        depth: None,
        max_file: None,
        seed: None,
        place_plan: None,
        place_log: None,
        stack_cache: None,
        shared_map: None,
    };
    if envp.is_null() {
        return e;
    }
    let mut i = 0;
    loop {
        // SAFETY: envp is the NULL-terminated environment the loader passes to constructors.
        let s = unsafe { *envp.add(i) };
        if s.is_null() {
            break;
        }
        let kv = unsafe { core::ffi::CStr::from_ptr(s) }.to_bytes();
        for (key, slot) in [
            (&b"NUMASCOPE_ALLOC_DIR="[..], &mut e.dir),
            (b"NUMASCOPE_ALLOC_MIN_BYTES=", &mut e.min),
            (b"NUMASCOPE_ALLOC_SAMPLE_BYTES=", &mut e.sample),
            (b"NUMASCOPE_ALLOC_MAX_DEPTH=", &mut e.depth),
            (b"NUMASCOPE_ALLOC_MAX_FILE_BYTES=", &mut e.max_file),
            (b"NUMASCOPE_ALLOC_SEED=", &mut e.seed),
            (b"NUMASCOPE_PLACE_PLAN=", &mut e.place_plan),
            (b"NUMASCOPE_PLACE_LOG=", &mut e.place_log),
            (b"NUMASCOPE_ALLOC_STACK_CACHE=", &mut e.stack_cache),
            (b"NUMASCOPE_ALLOC_SHARED_MAP=", &mut e.shared_map),
        ] {
            if let Some(v) = kv.strip_prefix(key) {
                *slot = Some(v);
            }
        }
        i += 1;
    }
    e
}

fn bad_env(name: &[u8]) {
    sys::say(b"numascope-allocshim: ");
    sys::say(name);
    sys::say(b" is not a non-negative integer; allocation sites are not recorded\n");
}

/// Runs after libc is initialised (the loader calls constructors of preloaded objects after
/// those of their dependencies) with the program's environment.
extern "C" fn on_load(_argc: c_int, _argv: *const *const c_char, envp: *const *const c_char) {
    if state() != ST_PASS {
        return;
    }
    configure(envp);
    publish_fast_path();
}

/// Reads the settings, sets up placement and starts recording where asked.
fn configure(envp: *const *const c_char) {
    // SAFETY: envp comes from the loader.
    let env = unsafe { read_env(envp) };
    TLS.with(|t| t.guard.set(true));
    if place::init(env.place_plan, env.place_log) {
        register_atfork();
    }
    TLS.with(|t| t.guard.set(false));
    let Some(dir) = env.dir else { return };
    if dir.is_empty() || dir.len() >= 4096 {
        return;
    }
    let num = |v: Option<&[u8]>, name: &[u8], default: u64| -> Option<u64> {
        match v {
            None => Some(default),
            Some(v) => {
                let r = parse_u64(v);
                if r.is_none() {
                    bad_env(name);
                }
                r
            }
        }
    };
    let Some(min) = num(env.min, b"NUMASCOPE_ALLOC_MIN_BYTES", DEFAULT_MIN_BYTES as u64) else { return };
    let Some(sample) = num(env.sample, b"NUMASCOPE_ALLOC_SAMPLE_BYTES", DEFAULT_SAMPLE_BYTES) else { return };
    let Some(depth) = num(env.depth, b"NUMASCOPE_ALLOC_MAX_DEPTH", DEFAULT_MAX_DEPTH as u64) else { return };
    let Some(max_file) = num(env.max_file, b"NUMASCOPE_ALLOC_MAX_FILE_BYTES", 1 << 30) else { return };
    let seed = match env.seed {
        Some(v) => match parse_u64(v) {
            Some(s) => s,
            None => return bad_env(b"NUMASCOPE_ALLOC_SEED"),
        },
        None => sys::mono_ns() ^ ((sys::getpid() as u64) << 32),
    };
    let depth = (depth as usize).clamp(1, MAX_DEPTH_LIMIT);

    // SAFETY: DIR is written here, before recording starts, and only read afterwards.
    unsafe {
        let d = &mut *out::DIR.0.get();
        d[..dir.len()].copy_from_slice(dir);
        d[dir.len()] = 0;
    }
    MIN_BYTES.store(min.max(1) as usize, Ordering::Relaxed);
    SAMPLE_BYTES.store(sample, Ordering::Relaxed);
    MAX_DEPTH.store(depth, Ordering::Relaxed);
    unwind::CACHE_ON.store(env.stack_cache != Some(&b"0"[..]), Ordering::Relaxed);
    out::SHARED_MAP.store(env.shared_map != Some(&b"0"[..]), Ordering::Relaxed);
    SEED.store(seed, Ordering::Relaxed);
    out::MAX_BYTES.store(max_file, Ordering::Relaxed);

    TLS.with(|t| t.guard.set(true));
    let ok = start_recording(sys::getpid(), sys::getppid());
    if ok {
        // SAFETY: plain libc registration calls; allocations they make pass through the guard.
        unsafe {
            let mut key: libc::pthread_key_t = 0;
            if libc::pthread_key_create(&mut key, Some(thread_exit)) == 0 {
                PTHREAD_KEY.store(key as usize, Ordering::Relaxed);
            }
        }
        register_atfork();
    }
    TLS.with(|t| t.guard.set(false));
}

fn start_recording(pid: u32, ppid: u32) -> bool {
    let own = modules::module_range(malloc as *const () as usize);
    if let Some((lo, hi)) = own {
        unwind::OWN_LO.store(lo, Ordering::Relaxed);
        unwind::OWN_HI.store(hi, Ordering::Relaxed);
    }
    modules::init_exe_path();
    // SAFETY: called with the guard set, before or instead of recording.
    let opened = unsafe {
        out::open_output(
            pid,
            ppid,
            MIN_BYTES.load(Ordering::Relaxed) as u64,
            SAMPLE_BYTES.load(Ordering::Relaxed),
            MAX_DEPTH.load(Ordering::Relaxed) as u32,
        )
    };
    REC_PID.store(pid, Ordering::Release);
    if !opened {
        sys::say(b"numascope-allocshim: cannot create the output file in NUMASCOPE_ALLOC_DIR; allocation sites are not recorded\n");
        return false;
    }
    STATE.store(ST_RECORDING, Ordering::Release);
    modules::snapshot(true);
    true
}

extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
}

/// Registers the fork handlers once (recording and placement share them).
fn register_atfork() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if !DONE.swap(true, Ordering::AcqRel) {
        // SAFETY: a libc registration call; what it allocates passes through the guard.
        unsafe { pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child)) };
    }
}

unsafe extern "C" fn fork_prepare() {
    // Hold the modules lock across fork so the child never inherits it taken.
    while modules::LOCK.swap(true, Ordering::Acquire) {
        core::hint::spin_loop();
    }
}

unsafe extern "C" fn fork_parent() {
    modules::LOCK.store(false, Ordering::Release);
}

unsafe extern "C" fn fork_child() {
    modules::LOCK.store(false, Ordering::Release);
    let was = STATE.swap(ST_PASS, Ordering::AcqRel);
    TLS.with(|t| {
        t.tid.set(0);
        t.guard.set(true);
        // SAFETY: only this thread exists in the child.
        unsafe { out::reset_in_child(t.buf.get()) };
        // A fresh sampling interval (and a fresh generator) for the child's first thread.
        t.sampler_ready.set(false);
        reset_sampler();
        if was == ST_RECORDING {
            start_recording(sys::getpid(), sys::getppid());
        }
        place::after_fork();
        t.guard.set(false);
    });
}

unsafe extern "C" fn thread_exit(arg: *mut c_void) {
    TLS.with(|t| {
        t.guard.set(true);
        let b = arg as *mut out::ThreadBuf;
        if !b.is_null() {
            // SAFETY: the buffer this thread registered; registry buffers are never unmapped.
            unsafe { out::retire(b) };
        }
        t.buf.set(core::ptr::null_mut());
        t.guard.set(false);
    });
}

/// Runs at exit (after atexit handlers, from the loader's destructor pass), and before `_exit`
/// and exec.
extern "C" fn on_exit() {
    guarded(place::finish);
    finish_recording(0);
}

fn finish_recording(end_flags: u32) {
    // A vfork child (or a raw clone) shares the parent's memory and file: it must not end the
    // parent's recording. fork children re-open their own file and update REC_PID.
    if sys::getpid() != REC_PID.load(Ordering::Acquire) {
        return;
    }
    if STATE.load(Ordering::Acquire) != ST_RECORDING {
        // Recording stopped early: still close the file with an end record saying so.
        if out::FD.load(Ordering::Acquire) >= 0 {
            // SAFETY: writes the end record with raw system calls.
            unsafe { out::finish() };
        }
        return;
    }
    TLS.with(|t| t.guard.set(true));
    let _errno = sys::ErrnoGuard::save();
    STATE.store(ST_PASS, Ordering::Release);
    // SAFETY: see out::close_all_at_exit.
    unsafe { out::close_all_at_exit() };
    modules::snapshot(true);
    out::END_FLAGS.fetch_or(end_flags, Ordering::Relaxed);
    // SAFETY: as above.
    unsafe { out::finish() };
    TLS.with(|t| t.guard.set(false));
}

// `_exit` skips destructors and exec replaces the image: both would lose what the buffers hold.
// (exec variants that glibc implements on top of execve call it internally, not through the
// interposed symbol; the common ones are caught here one by one.)

#[no_mangle]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    guarded(place::finish);
    finish_recording(0);
    // SAFETY: the real _exit does not return.
    unsafe { libc::syscall(libc::SYS_exit_group, status as i64) };
    unsafe { libc::abort() }
}

#[no_mangle]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    unsafe { _exit(status) }
}

type ExecveFn = unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
type ExecvFn = unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int;

unsafe fn before_exec() {
    guarded(place::finish);
    if state() == ST_RECORDING {
        finish_recording(END_EXEC);
    }
}

#[no_mangle]
pub unsafe extern "C" fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execve()(path, argv, envp)
    }
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execvpe()(file, argv, envp)
    }
}

#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execv()(path, argv)
    }
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execvp()(file, argv)
    }
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_EXIT: extern "C" fn() = on_exit;

// Keep the unused-import lint quiet for AtomicPtr in the macro's module.
#[allow(dead_code)]
fn _uses(_: &AtomicPtr<c_void>) {}
