//! The interposed mapping functions: `mmap`, `mmap64`, `munmap`, `mremap`.

use core::ffi::{c_int, c_void};
use core::sync::atomic::Ordering;

use crate::format::*;
use crate::real::{r_mmap, r_mmap64, r_mremap, r_munmap, state, MmapFn};
use crate::record::{maybe_place, record, record_plain};
use crate::sampler::{charge, settle};
use crate::state::{MIN_BYTES, ST_PASS, ST_RECORDING};
use crate::sys;

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
