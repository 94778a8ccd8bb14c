//! Call-stack capture inside the allocator: the system DWARF unwinder (`_Unwind_Backtrace` from
//! libgcc_s, already loaded by every Rust program and C++ runtime). It walks `.eh_frame` call
//! frame information, so it works on Debian binaries built without frame pointers; on glibc
//! 2.35+ with GCC 12+ it finds frame tables with `_dl_find_object`, which takes no lock and does
//! not allocate. The callback below writes into a caller-provided array and allocates nothing.
//! (The `backtrace` crate's `trace_unsynchronized` makes the same call; it is not used to keep
//! its symbolization dependencies out of a library preloaded into every process.)

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};

#[repr(C)]
pub struct UnwindContext {
    _private: [u8; 0],
}

type TraceFn = extern "C" fn(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int;

#[link(name = "gcc_s")]
extern "C" {
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIPInfo(ctx: *mut UnwindContext, ip_before_insn: *mut c_int) -> usize;
    fn _Unwind_GetCFA(ctx: *mut UnwindContext) -> usize;
}

const URC_NO_REASON: c_int = 0;
const URC_NORMAL_STOP: c_int = 4;

/// The shim's own text range: frames inside it are skipped at the top of every stack.
pub static OWN_LO: AtomicUsize = AtomicUsize::new(0);
pub static OWN_HI: AtomicUsize = AtomicUsize::new(0);

struct Walk {
    ips: *mut u64,
    cap: usize,
    n: usize,
    skipping: bool,
    truncated: bool,
    lo: usize,
    hi: usize,
    /// Per program frame (first CACHED), for the stack cache: the unwinder's CFA when it reports
    /// the frame, which is the CFA of the frame inside it (the callee), so that the frame's own
    /// return address (`ras[k]`) sits at `cfas[k] - 8` (x86-64).
    cfas: [usize; CACHED],
    ras: [usize; CACHED],
    /// A signal frame was walked: the stack is not cached (an alternate signal stack may go away).
    signal: bool,
}

extern "C" fn step(ctx: *mut UnwindContext, arg: *mut c_void) -> c_int {
    // SAFETY: arg is the &mut Walk passed to _Unwind_Backtrace by capture(), alive for the walk.
    let w = unsafe { &mut *(arg as *mut Walk) };
    let mut before: c_int = 0;
    // SAFETY: ctx is the live context the unwinder hands to this callback.
    let ip = unsafe { _Unwind_GetIPInfo(ctx, &mut before) };
    if ip == 0 {
        return URC_NORMAL_STOP;
    }
    if w.skipping && ip >= w.lo && ip < w.hi {
        return URC_NO_REASON;
    }
    w.skipping = false;
    if w.n >= w.cap {
        w.truncated = true;
        return URC_NORMAL_STOP;
    }
    if before != 0 {
        w.signal = true;
    }
    if w.n < CACHED {
        w.ras[w.n] = ip;
        // SAFETY: as above.
        w.cfas[w.n] = unsafe { _Unwind_GetCFA(ctx) };
    }
    // A return address points after the call; one byte back lies inside the call instruction,
    // whose line is the call site. Signal frames already point at the interrupted instruction.
    let pc = if before != 0 { ip } else { ip - 1 };
    // SAFETY: n < cap, and ips has cap elements.
    unsafe { *w.ips.add(w.n) = pc as u64 };
    w.n += 1;
    URC_NO_REASON
}

/// Fills `ips` with the caller's stack (innermost first, the shim's own frames left out);
/// returns the number of frames and whether the stack was deeper than `ips`.
pub fn capture(ips: &mut [u64]) -> (usize, bool) {
    walk(ips).0
}

fn walk(ips: &mut [u64]) -> ((usize, bool), Walk) {
    let mut w = Walk {
        ips: ips.as_mut_ptr(),
        cap: ips.len(),
        n: 0,
        skipping: true,
        truncated: false,
        lo: OWN_LO.load(Ordering::Relaxed),
        hi: OWN_HI.load(Ordering::Relaxed),
        cfas: [0; CACHED],
        ras: [0; CACHED],
        signal: false,
    };
    // SAFETY: step only touches w, which outlives the call.
    unsafe { _Unwind_Backtrace(step, &mut w as *mut Walk as *mut c_void) };
    ((w.n, w.truncated), w)
}

// ---------------------------------------------------------------- the per-thread stack cache
//
// A program that allocates large blocks in a loop asks for the same stack again and again, and
// the DWARF unwinder costs about 1.3 µs plus 0.15 µs a frame each time. The cache keeps, per
// thread, the last stack with where each of its return addresses was found (x86-64: just below
// the CFA of the frame it returns from; the first is the interposed function's return address
// into the program). The next capture reads the stack pointer in `record`; the distance from there
// to the interposed function's CFA is fixed for a given entry point (learned per op from the last
// full walk). When the interposed function's CFA is the cached one and every cached slot still
// holds its cached return address, the same return addresses sit at the same stack addresses:
// the stack is the cached one (each frame's CFA follows from its caller's CFA and its own code
// address), and it is copied instead of walked. Anything else walks the stack and refills the
// cache. Only this thread's own stack is read (cached addresses came from it and lie above the
// current frame); stacks through a signal frame (an alternate signal stack can be unmapped) or
// deeper than CACHED frames are not cached. The one case the check cannot see: a frame whose
// size varies at the same code address (alloca, variable-length arrays) reached at the same
// depth, with the old return address left over in the memory now inside that frame; the outer
// frames would then be the earlier stack's (the innermost frame, the allocation site, is always
// checked). NUMASCOPE_ALLOC_STACK_CACHE=0 turns the cache off.

/// Program frames a cached stack may have.
pub const CACHED: usize = 32;
/// Op codes (format.rs) below this have a learned entry distance.
const OPS: usize = 64;

/// Whether the cache is used (NUMASCOPE_ALLOC_STACK_CACHE=0 turns it off).
pub static CACHE_ON: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(true);

pub struct StackCache {
    /// Per op: the interposed function's CFA minus `record`'s stack pointer (0: not learned).
    delta: [usize; OPS],
    /// The cached stack: 0 frames = none.
    n: usize,
    truncated: bool,
    ips: [u64; CACHED],
    /// slots[k]: where frame k's return address (ras[k], its raw code address) is; slots[0] + 8
    /// is the interposed function's CFA.
    slots: [usize; CACHED],
    ras: [usize; CACHED],
}

impl StackCache {
    pub const fn new() -> Self {
        StackCache { delta: [0; OPS], n: 0, truncated: false, ips: [0; CACHED], slots: [0; CACHED], ras: [0; CACHED] }
    }

    /// Whether the cached stack is the current one, `sp` being `record`'s stack pointer.
    fn hit(&self, op: usize, sp: usize) -> bool {
        let d = self.delta[op];
        if self.n == 0 || d == 0 || sp.wrapping_add(d) != self.slots[0] + 8 {
            return false;
        }
        // SAFETY: every slot is an address in this thread's own stack, found by the walk that
        // filled the cache, at or above the interposed function's frame, which is at the same
        // address now: memory of this stack that the current callers use.
        (0..self.n).all(|k| unsafe { core::ptr::read_volatile(self.slots[k] as *const usize) } == self.ras[k])
    }
}

/// As `capture`, through this thread's stack cache: `op` is the event's op code and `sp` the
/// stack pointer `record` read (both only pick and check the cache entry).
pub fn capture_cached(ips: &mut [u64], cache: &mut StackCache, op: u8, sp: usize) -> (usize, bool) {
    let op = op as usize;
    if !CACHE_ON.load(Ordering::Relaxed) || op >= OPS || sp == 0 {
        return capture(ips);
    }
    if cache.hit(op, sp) && cache.n <= ips.len() {
        ips[..cache.n].copy_from_slice(&cache.ips[..cache.n]);
        return (cache.n, cache.truncated);
    }
    let ((n, truncated), w) = walk(ips);
    cache.n = 0;
    if w.signal || n == 0 || n > CACHED {
        return (n, truncated);
    }
    // The return addresses must lie where the walk says (just below each CFA), the CFAs growing
    // outwards from the current frame (one stack, no signal frame).
    let mut prev = sp;
    for k in 0..n {
        let slot = w.cfas[k].wrapping_sub(8);
        if w.cfas[k] <= prev {
            return (n, truncated);
        }
        prev = w.cfas[k];
        // SAFETY: a CFA the unwinder found on this thread's stack, above the current frame.
        if unsafe { core::ptr::read_volatile(slot as *const usize) } != w.ras[k] {
            return (n, truncated);
        }
        cache.slots[k] = slot;
    }
    cache.delta[op] = w.cfas[0].wrapping_sub(sp);
    cache.ras[..n].copy_from_slice(&w.ras[..n]);
    cache.ips[..n].copy_from_slice(&ips[..n]);
    cache.truncated = truncated;
    cache.n = n;
    (n, truncated)
}
