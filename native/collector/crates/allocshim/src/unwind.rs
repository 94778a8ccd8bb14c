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
    let mut w = Walk {
        ips: ips.as_mut_ptr(),
        cap: ips.len(),
        n: 0,
        skipping: true,
        truncated: false,
        lo: OWN_LO.load(Ordering::Relaxed),
        hi: OWN_HI.load(Ordering::Relaxed),
    };
    // SAFETY: step only touches w, which outlives the call.
    unsafe { _Unwind_Backtrace(step, &mut w as *mut Walk as *mut c_void) };
    (w.n, w.truncated)
}
