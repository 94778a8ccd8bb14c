//! The per-process output file and the per-thread event buffers.
//!
//! Each recording thread owns a 64 KiB buffer (anonymous memory from the kernel, never from the
//! allocator being recorded) in a fixed registry of slots. Events are appended without locks; a
//! full buffer is written with one `write` to the file, opened `O_APPEND`, so records from
//! different threads never interleave inside a write. Buffers are never unmapped: a thread that
//! exits flushes its buffer and marks it free for a later thread, so the exit handler can walk
//! the registry without racing an unmap. Memory is bounded by the slot count.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use crate::format::*;
use crate::sys;

const BUF_BYTES: usize = 64 * 1024;
const BUF_DATA: usize = BUF_BYTES - 64;
pub const MAX_THREADS: usize = 1024;

const IDLE: u32 = 0;
const BUSY: u32 = 1;
const CLOSED: u32 = 2;
const FREE: u32 = 3;

#[repr(C)]
pub struct ThreadBuf {
    state: AtomicU32,
    len: UnsafeCell<usize>,
    events: UnsafeCell<u64>,
    data: UnsafeCell<[u8; BUF_DATA]>,
}

static SLOTS: [AtomicPtr<ThreadBuf>; MAX_THREADS] = [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_THREADS];

pub static FD: AtomicI32 = AtomicI32::new(-1);
static FD_DEV: AtomicU64 = AtomicU64::new(0);
static FD_INO: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
pub static MAX_BYTES: AtomicU64 = AtomicU64::new(1 << 30);
pub static EVENTS: AtomicU64 = AtomicU64::new(0);
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
        fd = unsafe {
            sys::openat(dirfd, name.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_APPEND, 0o600)
        };
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
    EVENTS.store(0, Ordering::Relaxed);
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
    p.u32(0);
    unsafe { write_out(h.as_ptr(), h.len(), false) }
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

/// Writes bytes to the output file. `budgeted` writes count against NUMASCOPE_ALLOC_MAX_FILE_BYTES;
/// the end record is not, so a file cut at the limit still says so. On failure recording stops.
pub unsafe fn write_out(ptr: *const u8, len: usize, budgeted: bool) -> bool {
    let fd = FD.load(Ordering::Acquire);
    if fd < 0 {
        return false;
    }
    if budgeted {
        let before = BYTES.fetch_add(len as u64, Ordering::Relaxed);
        if before + len as u64 > MAX_BYTES.load(Ordering::Relaxed) {
            END_FLAGS.fetch_or(END_TRUNCATED | END_SIZE_LIMIT, Ordering::Relaxed);
            crate::stop_recording();
            return false;
        }
    }
    // The descriptor may have been closed by the program and its number reused for one of the
    // program's files: never write into anything but our own file.
    match sys::fd_identity(fd) {
        Some((dev, ino)) if dev == FD_DEV.load(Ordering::Relaxed) && ino == FD_INO.load(Ordering::Relaxed) => {}
        _ => {
            FD.store(-1, Ordering::Release);
            crate::stop_recording();
            return false;
        }
    }
    if unsafe { sys::write_all(fd, ptr, len) } {
        true
    } else {
        END_FLAGS.fetch_or(END_TRUNCATED | END_INTERNAL_FAILURE, Ordering::Relaxed);
        crate::stop_recording();
        false
    }
}

/// A buffer for the calling thread: a free one from the registry, or a new one; null when all
/// slots are taken or the kernel refuses memory.
pub fn claim_buffer() -> *mut ThreadBuf {
    for slot in SLOTS.iter() {
        let b = slot.load(Ordering::Acquire);
        if b.is_null() {
            continue;
        }
        // SAFETY: registered buffers are never unmapped.
        let st = unsafe { &(*b).state };
        if st.compare_exchange(FREE, IDLE, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            return b;
        }
    }
    // SAFETY: a fresh anonymous mapping of BUF_BYTES, zero-filled, so state = IDLE and len = 0.
    let b = unsafe { sys::map_anon(BUF_BYTES) } as *mut ThreadBuf;
    if b.is_null() {
        return b;
    }
    for slot in SLOTS.iter() {
        if slot.compare_exchange(core::ptr::null_mut(), b, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            return b;
        }
    }
    // SAFETY: b was mapped above and never published.
    unsafe { sys::unmap(b as *mut _, BUF_BYTES) };
    core::ptr::null_mut()
}

/// Writes a buffer's content (its state must be BUSY, held by the caller).
unsafe fn flush_locked(b: *mut ThreadBuf) {
    unsafe {
        let len = *(*b).len.get();
        if len > 0 {
            if write_out((*b).data.get() as *const u8, len, true) {
                EVENTS.fetch_add(*(*b).events.get(), Ordering::Relaxed);
            }
            *(*b).len.get() = 0;
            *(*b).events.get() = 0;
        }
    }
}

/// Appends one event record to the calling thread's buffer `b`, flushing first when full.
/// `write_through` writes the buffer out right after the event: a thread that makes one large
/// allocation and then computes for minutes would otherwise hold it in its buffer, unseen by a
/// recording that stops while the program keeps running.
#[allow(clippy::too_many_arguments)]
pub unsafe fn append_event(
    b: *mut ThreadBuf,
    write_through: bool,
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
    let st = unsafe { &(*b).state };
    if st.compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed).is_err() {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let payload = EVENT_FIXED + 8 * ips.len();
    let need = 8 + payload;
    unsafe {
        if *(*b).len.get() + need > BUF_DATA {
            flush_locked(b);
            crate::modules::snapshot(false);
        }
        let len = *(*b).len.get();
        let data = &mut *(*b).data.get();
        if let Some(dst) = data.get_mut(len..len + need) {
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
            *(*b).len.get() = len + need;
            *(*b).events.get() += 1;
            if write_through {
                flush_locked(b);
            }
        } else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
    st.store(IDLE, Ordering::Release);
}

/// At thread exit: flush the thread's buffer and hand it back to the registry.
pub unsafe fn retire(b: *mut ThreadBuf) {
    let st = unsafe { &(*b).state };
    if st.compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed).is_ok() {
        unsafe { flush_locked(b) };
        st.store(FREE, Ordering::Release);
    }
}

/// At process exit: flush every idle buffer and close them; count busy ones as lost.
pub unsafe fn flush_all_at_exit() {
    for slot in SLOTS.iter() {
        let b = slot.load(Ordering::Acquire);
        if b.is_null() {
            continue;
        }
        let st = unsafe { &(*b).state };
        match st.compare_exchange(IDLE, BUSY, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => {
                unsafe { flush_locked(b) };
                st.store(CLOSED, Ordering::Release);
            }
            Err(BUSY) => {
                END_FLAGS.fetch_or(END_TRUNCATED | END_BUFFERS_LOST, Ordering::Relaxed);
            }
            Err(_) => {}
        }
    }
}

/// In a forked child: the buffers hold the parent's events (the parent writes them) and belong
/// to threads that do not exist here. Empty them all and free them; `keep` stays the calling
/// thread's.
pub unsafe fn reset_in_child(keep: *mut ThreadBuf) {
    for slot in SLOTS.iter() {
        let b = slot.load(Ordering::Acquire);
        if b.is_null() {
            continue;
        }
        unsafe {
            *(*b).len.get() = 0;
            *(*b).events.get() = 0;
            (*b).state.store(if b == keep { IDLE } else { FREE }, Ordering::Release);
        }
    }
    let fd = FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        sys::close(fd);
    }
}

/// Writes the end record and closes the file.
pub unsafe fn finish() {
    let mut rec = [0u8; 8 + END_LEN];
    let mut p = Put::new(&mut rec);
    p.u16(REC_END);
    p.u16(0);
    p.u32(END_LEN as u32);
    p.u64(sys::mono_ns());
    p.u64(EVENTS.load(Ordering::Relaxed));
    p.u64(DROPPED.load(Ordering::Relaxed));
    p.u64(crate::live::UNTRACKED.load(Ordering::Relaxed));
    p.u32(END_FLAGS.load(Ordering::Relaxed));
    p.u32(0);
    unsafe { write_out(rec.as_ptr(), rec.len(), false) };
    let fd = FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        sys::close(fd);
    }
}
