//! The per-process output file and the per-thread event blocks.
//!
//! The file is made of fixed-size blocks (format.rs). Each recording thread owns one block,
//! mapped shared into the process: an event is stored into it and the block's `used` count is
//! then raised past it, so the file holds every finished event the moment it is made, without a
//! system call, and keeps it if the process is killed, calls `_exit`, execs or crashes. A full
//! mapping is unmapped and a new one reserved, twice as large up to 1 MiB (`fallocate`, so stores through the mapping never
//! fault for want of space). Rare records (module lists, the end record) are written with
//! `pwrite` into blocks of their own. A thread's state lives in a fixed registry of slots, never
//! freed: a thread that exits hands its slot, and its block's free room, to a later thread.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::format::*;
use crate::sys;

pub const MAX_THREADS: usize = 1024;

const FREE: u32 = 0;
const IDLE: u32 = 1;
const BUSY: u32 = 2;
const CLOSED: u32 = 3;

/// One thread's slot: its mapped block (null before the first event) and the record bytes in it.
pub struct ThreadBuf {
    state: AtomicU32,
    block: UnsafeCell<*mut u8>,
    /// Bytes mapped at `block` (its span of blocks).
    cap: UnsafeCell<usize>,
    /// Blocks the next mapping spans.
    next_span: UnsafeCell<usize>,
    used: UnsafeCell<usize>,
    /// File offset of the span at `block` when it is not a shared mapping of the file but
    /// anonymous memory whose records are written with `pwrite` (u64::MAX: shared).
    file_off: UnsafeCell<u64>,
    /// Events this slot has stored since the file was opened (summed into the end record).
    events: AtomicU64,
}

struct Slots([ThreadBuf; MAX_THREADS]);
// SAFETY: a slot's cells are touched only by the thread that moved its state to BUSY (or by the
// only thread of a forked child).
unsafe impl Sync for Slots {}

static SLOTS: Slots = Slots(
    [const {
        ThreadBuf {
            state: AtomicU32::new(FREE),
            block: UnsafeCell::new(core::ptr::null_mut()),
            cap: UnsafeCell::new(0),
            next_span: UnsafeCell::new(1),
            used: UnsafeCell::new(0),
            file_off: UnsafeCell::new(u64::MAX),
            events: AtomicU64::new(0),
        }
    }; MAX_THREADS],
);

pub static FD: AtomicI32 = AtomicI32::new(-1);
static FD_DEV: AtomicU64 = AtomicU64::new(0);
static FD_INO: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
pub static MAX_BYTES: AtomicU64 = AtomicU64::new(1 << 30);
/// Whether blocks are shared mappings of the file (NUMASCOPE_ALLOC_SHARED_MAP=0 turns it off, as a
/// file system that refuses shared writable mappings does): otherwise each event is written with
/// `pwrite` as it is made, two system calls per event.
pub static SHARED_MAP: AtomicBool = AtomicBool::new(true);

/// File offset of the next block to reserve.
static NEXT: AtomicU64 = AtomicU64::new(BLOCK_BYTES as u64);
pub static DROPPED: AtomicU64 = AtomicU64::new(0);
pub static END_FLAGS: AtomicU32 = AtomicU32::new(0);

/// The output directory, NUL terminated, kept so that a forked child can open its own file.
pub struct DirPath(pub UnsafeCell<[u8; 4096]>);
// SAFETY: written once in the constructor before recording starts, read-only afterwards.
unsafe impl Sync for DirPath {}
pub static DIR: DirPath = DirPath(UnsafeCell::new([0; 4096]));

/// Opens `<dir>/<pid>.nsalloc` (or `<pid>-<n>.nsalloc` when that exists, as after an exec)
/// with O_EXCL, mode 0600, never following a symlink, and writes the header.
pub unsafe fn open_output(pid: u32, ppid: u32, min: u64, sample: u64, depth: u32) -> bool {
    let dir = DIR.0.get() as *const u8;
    let dirfd = unsafe { sys::openat(libc::AT_FDCWD, dir, libc::O_RDONLY | libc::O_DIRECTORY, 0) };
    if dirfd < 0 {
        return false;
    }
    let mut fd = -1;
    for n in 0u32..1000 {
        let mut name = [0u8; 40];
        let mut p = Put::new(&mut name);
        put_decimal(&mut p, pid as u64);
        if n > 0 {
            p.u8(b'-');
            put_decimal(&mut p, n as u64);
        }
        p.bytes(b".nsalloc\0");
        fd = unsafe { sys::openat(dirfd, name.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600) };
        if fd >= 0 || unsafe { *libc::__errno_location() } != libc::EEXIST {
            break;
        }
    }
    sys::close(dirfd);
    if fd < 0 {
        return false;
    }
    let fd = sys::move_high(fd);
    let Some((dev, ino)) = sys::fd_identity(fd) else {
        sys::close(fd);
        return false;
    };
    FD_DEV.store(dev, Ordering::Relaxed);
    FD_INO.store(ino, Ordering::Relaxed);
    BYTES.store(0, Ordering::Relaxed);
    NEXT.store(BLOCK_BYTES as u64, Ordering::Relaxed);
    DROPPED.store(0, Ordering::Relaxed);
    END_FLAGS.store(0, Ordering::Relaxed);
    FD.store(fd, Ordering::Release);

    let mut h = [0u8; HEADER_LEN];
    let mut p = Put::new(&mut h);
    p.bytes(&MAGIC);
    p.u32(VERSION);
    p.u32(HEADER_LEN as u32);
    p.u32(pid);
    p.u32(ppid);
    p.u64(min);
    p.u64(sample);
    p.u64(sys::mono_ns());
    p.u32(depth);
    p.u32(CLOCK_MONOTONIC_ID);
    p.u32(0);
    p.u32(BLOCK_BYTES as u32);
    if unsafe { sys::pwrite_all(fd, h.as_ptr(), h.len(), 0) } {
        true
    } else {
        FD.store(-1, Ordering::Release);
        sys::close(fd);
        false
    }
}

fn put_decimal(p: &mut Put, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while n > 0 {
        n -= 1;
        p.u8(digits[n]);
    }
}

fn fail(flag: u32) -> bool {
    END_FLAGS.fetch_or(END_TRUNCATED | flag, Ordering::Relaxed);
    crate::state::stop_recording();
    false
}

/// Reserves `blocks` consecutive blocks of the file and returns the offset of the first, or
/// None (recording stops) when the file would pass NUMASCOPE_ALLOC_MAX_FILE_BYTES (unless
/// `budgeted` is false: the end record), the descriptor is no longer ours, or space is short.
unsafe fn reserve_blocks(blocks: usize, budgeted: bool) -> Option<(i32, u64)> {
    let fd = FD.load(Ordering::Acquire);
    if fd < 0 {
        return None;
    }
    let len = (blocks * BLOCK_BYTES) as u64;
    if budgeted {
        let before = BYTES.fetch_add(len, Ordering::Relaxed);
        if before + len > MAX_BYTES.load(Ordering::Relaxed) {
            fail(END_SIZE_LIMIT);
            return None;
        }
    }
    // The descriptor may have been closed by the program and its number reused for one of the
    // program's files: never touch anything but our own file.
    match sys::fd_identity(fd) {
        Some((dev, ino)) if dev == FD_DEV.load(Ordering::Relaxed) && ino == FD_INO.load(Ordering::Relaxed) => {}
        _ => {
            FD.store(-1, Ordering::Release);
            crate::state::stop_recording();
            return None;
        }
    }
    let off = NEXT.fetch_add(len, Ordering::Relaxed);
    if unsafe { sys::reserve(fd, off, len as usize) } {
        Some((fd, off))
    } else {
        fail(END_INTERNAL_FAILURE);
        None
    }
}

fn block_head(used: u32, span: u32) -> [u8; BLOCK_HEAD] {
    let mut h = [0u8; BLOCK_HEAD];
    let mut p = Put::new(&mut h);
    p.bytes(&BLOCK_MAGIC);
    p.u32(used);
    p.u32(span);
    p.u32(0);
    h
}

/// Writes records (whole, 8-byte aligned) into blocks of their own: the records first, then the
/// block's `used`, so a process killed in between leaves an empty block, not a torn record.
pub unsafe fn write_records(ptr: *const u8, len: usize, budgeted: bool) -> bool {
    let blocks = (BLOCK_HEAD + len).div_ceil(BLOCK_BYTES);
    let Some((fd, off)) = (unsafe { reserve_blocks(blocks, budgeted) }) else { return false };
    let head = block_head(0, blocks as u32);
    let used = (len as u32).to_le_bytes();
    let ok = unsafe {
        sys::pwrite_all(fd, ptr, len, off + BLOCK_HEAD as u64)
            && sys::pwrite_all(fd, head.as_ptr(), head.len(), off)
            && sys::pwrite_all(fd, used.as_ptr(), used.len(), off + 4)
    };
    ok || fail(END_INTERNAL_FAILURE)
}

/// A slot for the calling thread (a free one from the registry); null when all are taken.
pub fn claim_buffer() -> *mut ThreadBuf {
    for b in SLOTS.0.iter() {
        if b.state.compare_exchange(FREE, IDLE, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            return b as *const ThreadBuf as *mut ThreadBuf;
        }
    }
    core::ptr::null_mut()
}

/// Maps a fresh span of blocks for slot `b` (held BUSY by the caller), unmapping the full one.
unsafe fn next_block(b: &ThreadBuf) -> bool {
    unsafe {
        let old = *b.block.get();
        if !old.is_null() {
            sys::unmap(old as *mut _, *b.cap.get());
            *b.block.get() = core::ptr::null_mut();
            *b.cap.get() = 0;
        }
        *b.used.get() = 0;
        let span = (*b.next_span.get()).clamp(1, MAX_THREAD_SPAN);
        let len = span * BLOCK_BYTES;
        let Some((fd, off)) = reserve_blocks(span, true) else { return false };
        let mut p = core::ptr::null_mut();
        if SHARED_MAP.load(Ordering::Relaxed) {
            p = sys::map_file(fd, off, len);
            if p.is_null() {
                SHARED_MAP.store(false, Ordering::Relaxed);
            }
        }
        *b.file_off.get() = u64::MAX;
        let head = block_head(0, span as u32);
        if p.is_null() {
            p = sys::map_anon(len);
            if p.is_null() || !sys::pwrite_all(fd, head.as_ptr(), head.len(), off) {
                return fail(END_INTERNAL_FAILURE);
            }
            *b.file_off.get() = off;
        }
        core::ptr::copy_nonoverlapping(head.as_ptr(), p, BLOCK_HEAD);
        *b.block.get() = p;
        *b.cap.get() = len;
        *b.next_span.get() = (span * 2).min(MAX_THREAD_SPAN);
    }
    true
}

/// What runs when a thread takes a new block, before its record goes in: lifecycle.rs sets the
/// module list's snapshot (modules.rs) here, so that this file, which modules.rs writes
/// through, does not call back up into it. 0: nothing.
static NEW_BLOCK_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Sets what runs when a thread takes a new block (see NEW_BLOCK_HOOK).
pub fn set_new_block_hook(hook: fn()) {
    NEW_BLOCK_HOOK.store(hook as usize, Ordering::Release);
}

fn run_new_block_hook() {
    let p = NEW_BLOCK_HOOK.load(Ordering::Acquire);
    if p != 0 {
        // SAFETY: only set_new_block_hook stores here, and it stores a `fn()`.
        let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(p) };
        hook();
    }
}

/// Appends one event record to the calling thread's slot `b`, taking a new block when the
/// current one is full. The record is complete in the file when this returns.
#[allow(clippy::too_many_arguments)]
pub unsafe fn append_event(
    b: *mut ThreadBuf,
    flags: u16,
    time: u64,
    tid: u32,
    op: u8,
    addr: u64,
    size: u64,
    old: u64,
    aux: u64,
    ips: &[u64],
) {
    // SAFETY: slots live in a static.
    let b = unsafe { &*b };
    if b.state.compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed).is_err() {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let payload = EVENT_FIXED + 8 * ips.len();
    let need = 8 + payload;
    unsafe {
        let used = *b.used.get();
        if (*b.block.get()).is_null() || BLOCK_HEAD + used + need > *b.cap.get() {
            if !next_block(b) {
                DROPPED.fetch_add(1, Ordering::Relaxed);
                b.state.store(IDLE, Ordering::Release);
                return;
            }
            run_new_block_hook();
        }
        let used = *b.used.get();
        let block = *b.block.get();
        if BLOCK_HEAD + used + need <= *b.cap.get() {
            let dst = core::slice::from_raw_parts_mut(block.add(BLOCK_HEAD + used), need);
            let mut p = Put::new(dst);
            p.u16(REC_EVENT);
            p.u16(flags);
            p.u32(payload as u32);
            p.u64(time);
            p.u32(tid);
            p.u8(op);
            p.u8(0);
            p.u16(ips.len() as u16);
            p.u64(addr);
            p.u64(size);
            p.u64(old);
            p.u64(aux);
            for &ip in ips {
                p.u64(ip);
            }
            *b.used.get() = used + need;
            // The record's bytes are in place before a reader of the file can see `used` past them.
            (*(block.add(4) as *const AtomicU32)).store((used + need) as u32, Ordering::Release);
            let off = *b.file_off.get();
            let fd = FD.load(Ordering::Acquire);
            if off != u64::MAX
                && !(fd >= 0
                    && sys::pwrite_all(fd, block.add(BLOCK_HEAD + used), need, off + (BLOCK_HEAD + used) as u64)
                    && sys::pwrite_all(fd, block.add(4), 4, off + 4))
            {
                fail(END_INTERNAL_FAILURE);
            }
            b.events.fetch_add(1, Ordering::Relaxed);
        } else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
    b.state.store(IDLE, Ordering::Release);
}

/// At thread exit: hand the slot (and its block's free room) back to the registry.
pub unsafe fn retire(b: *mut ThreadBuf) {
    // SAFETY: slots live in a static.
    let st = unsafe { &(*b).state };
    if st.compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed).is_ok() {
        st.store(FREE, Ordering::Release);
    }
}

/// At process exit: close every slot; a thread caught storing an event loses that one event.
pub unsafe fn close_all_at_exit() {
    for b in SLOTS.0.iter() {
        loop {
            match b.state.load(Ordering::Acquire) {
                BUSY => {
                    END_FLAGS.fetch_or(END_TRUNCATED | END_BUFFERS_LOST, Ordering::Relaxed);
                    break;
                }
                CLOSED => break,
                s => {
                    if b.state.compare_exchange(s, CLOSED, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                        break;
                    }
                }
            }
        }
    }
}

/// In a forked child: the slots belong to threads that do not exist here, and their blocks (not
/// inherited: MADV_DONTFORK) are the parent's. Forget them all; `keep` stays the calling thread's.
pub unsafe fn reset_in_child(keep: *mut ThreadBuf) {
    for b in SLOTS.0.iter() {
        unsafe {
            // A pwrite-mode block is private memory this child holds a copy of; a shared one
            // was not inherited.
            if *b.file_off.get() != u64::MAX && !(*b.block.get()).is_null() {
                sys::unmap(*b.block.get() as *mut _, *b.cap.get());
            }
            *b.file_off.get() = u64::MAX;
            *b.block.get() = core::ptr::null_mut();
            *b.cap.get() = 0;
            *b.next_span.get() = 1;
            *b.used.get() = 0;
        }
        b.events.store(0, Ordering::Relaxed);
        let mine = core::ptr::eq(b, keep);
        b.state.store(if mine { IDLE } else { FREE }, Ordering::Release);
    }
    let fd = FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        sys::close(fd);
    }
}

/// Writes the end record and closes the file.
pub unsafe fn finish() {
    let events: u64 = SLOTS.0.iter().map(|b| b.events.load(Ordering::Relaxed)).sum();
    let mut rec = [0u8; 8 + END_LEN];
    let mut p = Put::new(&mut rec);
    p.u16(REC_END);
    p.u16(0);
    p.u32(END_LEN as u32);
    p.u64(sys::mono_ns());
    p.u64(events);
    p.u64(DROPPED.load(Ordering::Relaxed));
    p.u64(crate::live::UNTRACKED.load(Ordering::Relaxed));
    p.u32(END_FLAGS.load(Ordering::Relaxed));
    p.u32(0);
    unsafe { write_records(rec.as_ptr(), rec.len(), false) };
    let fd = FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        sys::close(fd);
    }
}
