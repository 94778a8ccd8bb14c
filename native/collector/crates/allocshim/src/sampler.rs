//! The sampler and the fast path (the description below): each thread's counter, the `fast_or!`
//! test the interposers make before the real call, and the bookkeeping of the full path.

use core::sync::atomic::Ordering;

use crate::state::{Tls, FAST_BELOW, MIN_BYTES, SAMPLE_BYTES, SEED, THREAD_SEQ, TLS};

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
                off = in(reg) $crate::sampler::countdown_offset(),
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
        let c = $crate::sampler::countdown_ptr();
        // SAFETY: this thread's own counter.
        let (left, borrow) = unsafe { *c }.overflowing_sub($size as u64);
        unsafe { *c = left };
        if borrow || left == 0 {
            return $full;
        }
    };
}

pub(crate) use fast_or;

/// The offset of this thread's `fast` from the thread pointer.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn countdown_offset() -> usize {
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
pub(crate) fn countdown_ptr() -> *mut u64 {
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
pub(crate) fn countdown_ptr() -> *mut u64 {
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
pub(crate) fn charge(size: usize) {
    let c = countdown_ptr();
    // SAFETY: this thread's own counter.
    unsafe { *c = (*c).wrapping_sub(size as u64) };
}

/// The sampler's bookkeeping for an allocation of `size` bytes that was charged and took the
/// full path, once its result is known (`ok`: it succeeded). Returns whether it is a sampled
/// small block; re-arms the counter.
#[inline(never)]
pub(crate) fn settle(size: usize, ok: bool, recording: bool) -> bool {
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
pub(crate) fn refill(size: usize) -> bool {
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
pub(crate) fn reset_sampler() {
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
