//! What the interposers do around the real call: record an allocation (with its stack) or a
//! free, the threshold and sampler decision after an allocation, placement by allocation site
//! (numascope run), and glibc's chunk word, which rules out small blocks without a look-up.

use core::ffi::c_void;
use core::sync::atomic::Ordering;

use crate::format::*;
use crate::sampler::{charge, settle};
use crate::state::{Tls, GLIBC_CHUNKS, MAX_DEPTH, MAX_DEPTH_LIMIT, MIN_BYTES, PTHREAD_KEY, STATE, ST_RECORDING, TLS};
use crate::{live, out, place, sys, unwind};

/// Records an allocation that passed the threshold or the sampler.
#[cold]
#[inline(never)]
pub(crate) fn record(op: u8, addr: usize, size: usize, old: usize, aux: u64, flags: u16, track: bool) {
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
pub(crate) fn record_plain(op: u8, addr: usize, size: usize) {
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

/// Records an allocation result if it is at or above the threshold or sampled, for the
/// functions without a fast path.
#[inline(always)]
pub(crate) fn after_alloc(op: u8, p: *mut c_void, size: usize) {
    charge(size);
    after_alloc_charged(ST_RECORDING, op, p, size);
}

/// What the full path of an allocation function does after the real call, its size charged.
#[inline(always)]
pub(crate) fn after_alloc_charged(st: u8, op: u8, p: *mut c_void, size: usize) {
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
pub(crate) fn on_free(p: usize) {
    if live::remove(p) {
        record_plain(OP_FREE, p, 0);
    }
}

/// Placement by allocation site: one compare unless a plan's object entries cover this size.
#[inline(always)]
pub(crate) fn maybe_place(p: *mut c_void, size: usize) {
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

/// The word glibc's malloc keeps before a block it handed out (which its `free` and `realloc`
/// read next anyway): the chunk's size, at least the block's usable size, with three flag bits
/// below. For a block of the bootstrap arena the word is all ones (boot.rs), above every
/// threshold.
#[inline(always)]
pub(crate) fn glibc_chunk_word(p: *mut c_void) -> usize {
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
pub(crate) fn may_be_tracked(p: *mut c_void) -> bool {
    if GLIBC_CHUNKS.load(Ordering::Relaxed) && glibc_chunk_size(p) < MIN_BYTES.load(Ordering::Relaxed) {
        return false;
    }
    live::maybe(p as usize)
}
