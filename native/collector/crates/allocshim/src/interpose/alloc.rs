//! The interposed allocation functions: `malloc`, `calloc`, `free`, `realloc`, `reallocarray`,
//! `posix_memalign`, `aligned_alloc`, `memalign`, `valloc`, `pvalloc`.

use core::ffi::{c_int, c_void};
use core::sync::atomic::Ordering;

use crate::boot;
use crate::format::*;
use crate::live;
use crate::real::{
    r_aligned_alloc, r_calloc, r_free, r_malloc, r_memalign, r_posix_memalign, r_pvalloc, r_realloc, r_reallocarray,
    r_valloc, state,
};
use crate::record::{
    after_alloc, after_alloc_charged, glibc_chunk_word, may_be_tracked, maybe_place, on_free, record, record_plain,
};
use crate::sampler::{charge, fast_or, refill, settle};
use crate::state::{FREE_CHUNK_MIN, FREE_FULL_AT_OR_BELOW, MIN_BYTES, STATE, ST_PASS, ST_RECORDING};

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
