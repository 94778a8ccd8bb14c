//! Raw system calls. The shim calls the kernel directly for its own memory, files and clock so
//! that none of its work goes through the functions it interposes (its own `mmap` export would
//! otherwise catch its buffer allocations) or through libc code that may take locks.

use core::ffi::c_void;

/// Saves errno on creation and restores it on drop: the shim's slow paths make system calls, and
/// a host program may rely on `free` and successful allocations leaving errno alone.
pub struct ErrnoGuard(i32);

impl ErrnoGuard {
    #[inline]
    pub fn save() -> Self {
        // SAFETY: __errno_location returns this thread's errno slot, valid for the thread's life.
        ErrnoGuard(unsafe { *libc::__errno_location() })
    }
}

impl Drop for ErrnoGuard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

/// Anonymous private read-write memory, or null.
pub unsafe fn map_anon(len: usize) -> *mut u8 {
    unsafe { map_rw(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) }
}

/// A read-write `mmap` by raw system call; null on failure.
unsafe fn map_rw(len: usize, flags: i32, fd: i32, off: u64) -> *mut u8 {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let r = unsafe { libc::syscall(libc::SYS_mmap, 0usize, len, prot as i64, flags as i64, fd as i64, off as i64) };
    if r < 0 || r as usize > usize::MAX - 4096 {
        core::ptr::null_mut()
    } else {
        r as *mut u8
    }
}

pub unsafe fn unmap(p: *mut c_void, len: usize) {
    unsafe { libc::syscall(libc::SYS_munmap, p, len) };
}

/// A raw `mmap` for the rare calls that arrive before the real `mmap` is resolved.
pub unsafe fn mmap_raw(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut c_void {
    let r = unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot as i64, flags as i64, fd as i64, off) };
    if r == -1 {
        libc::MAP_FAILED
    } else {
        r as *mut c_void
    }
}

pub fn gettid() -> u32 {
    // SAFETY: no arguments, no memory.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

pub fn getpid() -> u32 {
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_getpid) as u32 }
}

pub fn getppid() -> u32 {
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_getppid) as u32 }
}

/// CLOCK_MONOTONIC in nanoseconds, the clock perf uses for its sample times (vDSO, no syscall).
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// `openat` without following a final symlink; returns the fd or a negative value.
pub unsafe fn openat(dirfd: i32, path: *const u8, flags: i32, mode: u32) -> i32 {
    unsafe {
        libc::syscall(
            libc::SYS_openat,
            dirfd as i64,
            path,
            (flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) as i64,
            mode as i64,
        ) as i32
    }
}

pub fn close(fd: i32) {
    // SAFETY: closing a descriptor the shim opened.
    unsafe { libc::syscall(libc::SYS_close, fd as i64) };
}

/// Moves `fd` to a descriptor number at or above 900 (close-on-exec) so that programs that
/// reuse low descriptors rarely meet it; returns the new fd or the old one if that failed.
pub fn move_high(fd: i32) -> i32 {
    // SAFETY: fcntl on an fd the shim owns.
    let hi = unsafe { libc::syscall(libc::SYS_fcntl, fd as i64, libc::F_DUPFD_CLOEXEC as i64, 900i64) as i32 };
    if hi >= 0 {
        close(fd);
        hi
    } else {
        fd
    }
}

/// Device and inode of an open descriptor, to check before each write that the descriptor is
/// still the shim's file (a program may close every descriptor and reuse the number).
pub fn fd_identity(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: st is a valid out buffer of the kernel's struct stat layout.
    unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        let r = libc::syscall(libc::SYS_fstat, fd as i64, &mut st as *mut libc::stat);
        if r != 0 {
            return None;
        }
        Some((st.st_dev, st.st_ino))
    }
}

/// Writes all of `buf`, retrying on EINTR and short writes. False on any error.
pub unsafe fn write_all(fd: i32, buf: *const u8, len: usize) -> bool {
    unsafe { write_loop(fd, buf, len, None) }
}

/// Writes all of `buf` at file offset `off`, retrying on EINTR and short writes. False on any error.
pub unsafe fn pwrite_all(fd: i32, buf: *const u8, len: usize, off: u64) -> bool {
    unsafe { write_loop(fd, buf, len, Some(off)) }
}

unsafe fn write_loop(fd: i32, mut buf: *const u8, mut len: usize, mut off: Option<u64>) -> bool {
    while len > 0 {
        let r = unsafe {
            match off {
                Some(o) => libc::syscall(libc::SYS_pwrite64, fd as i64, buf, len, o as i64),
                None => libc::syscall(libc::SYS_write, fd as i64, buf, len),
            }
        };
        if r < 0 {
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return false;
        }
        if r == 0 {
            return false;
        }
        let r = r as usize;
        buf = unsafe { buf.add(r) };
        len -= r;
        off = off.map(|o| o + r as u64);
    }
    true
}

/// Gives `len` bytes at `off` real storage (and extends the file), so that later stores through a
/// shared mapping of them cannot fault for want of space (SIGBUS in the host program). Where the
/// file system has no `fallocate`, writes zeros instead. False when the space cannot be had.
pub unsafe fn reserve(fd: i32, off: u64, len: usize) -> bool {
    loop {
        let r = unsafe { libc::syscall(libc::SYS_fallocate, fd as i64, 0i64, off as i64, len as i64) };
        if r == 0 {
            return true;
        }
        match unsafe { *libc::__errno_location() } {
            libc::EINTR => continue,
            libc::EOPNOTSUPP | libc::ENOSYS => break,
            _ => return false,
        }
    }
    static ZEROS: [u8; 4096] = [0; 4096];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(ZEROS.len());
        if !unsafe { pwrite_all(fd, ZEROS.as_ptr(), n, off + done as u64) } {
            return false;
        }
        done += n;
    }
    true
}

/// A shared read-write mapping of `len` bytes of `fd` at `off`, not inherited by forked
/// children; null on failure. (Not MAP_POPULATE: for a shared mapping it reads the pages in, with
/// readahead, and each still takes a write fault on its first store: twice the faults.)
pub unsafe fn map_file(fd: i32, off: u64, len: usize) -> *mut u8 {
    let r = unsafe { map_rw(len, libc::MAP_SHARED, fd, off) };
    if r.is_null() {
        return r;
    }
    unsafe { libc::syscall(libc::SYS_madvise, r, len, libc::MADV_DONTFORK as i64) };
    // Fault every page in writable with one call (MADV_POPULATE_WRITE, Linux 5.14) rather than
    // one fault per page at its first store (measured: 15 % less time per recorded event on ext4);
    // older kernels refuse it, and then no readahead at each fault (MADV_RANDOM) is what helps.
    const MADV_POPULATE_WRITE: i64 = 23;
    if unsafe { libc::syscall(libc::SYS_madvise, r, len, MADV_POPULATE_WRITE) } != 0 {
        unsafe { libc::syscall(libc::SYS_madvise, r, len, libc::MADV_RANDOM as i64) };
    }
    r
}

/// readlink into `buf`; returns the length written (not NUL terminated) or 0.
pub unsafe fn readlink(path: *const u8, buf: *mut u8, cap: usize) -> usize {
    let r = unsafe { libc::syscall(libc::SYS_readlinkat, libc::AT_FDCWD as i64, path, buf, cap) };
    if r <= 0 || r as usize >= cap {
        0
    } else {
        r as usize
    }
}

/// Writes a message to stderr (fd 2), ignoring failure.
pub fn say(msg: &[u8]) {
    // SAFETY: msg is a valid slice.
    unsafe { write_all(2, msg.as_ptr(), msg.len()) };
}
