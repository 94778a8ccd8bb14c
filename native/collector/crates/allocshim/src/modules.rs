//! Snapshots of the loaded modules (executable and shared objects) with `dl_iterate_phdr`, so
//! that code addresses can be symbolized after the run: each module's load bias, address range,
//! path and GNU build id. A snapshot is written at start, whenever the loader's add/remove
//! counters have moved (checked at each buffer flush), before each `dlclose`, and at exit.

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::format::*;
use crate::{out, sys};

const SCRATCH_BYTES: usize = 256 * 1024;
const MAX_PATH: usize = 4096;
const MAX_BUILD_ID: usize = 64;

struct Scratch(UnsafeCell<[u8; SCRATCH_BYTES]>);
// SAFETY: only touched while LOCK is held.
unsafe impl Sync for Scratch {}
static SCRATCH: Scratch = Scratch(UnsafeCell::new([0; SCRATCH_BYTES]));

struct ExePath(UnsafeCell<[u8; MAX_PATH]>);
// SAFETY: written once during initialisation (and in a forked child), read under LOCK.
unsafe impl Sync for ExePath {}
static EXE: ExePath = ExePath(UnsafeCell::new([0; MAX_PATH]));
static EXE_LEN: AtomicUsize = AtomicUsize::new(0);

pub static LOCK: AtomicBool = AtomicBool::new(false);
static ADDS: AtomicU64 = AtomicU64::new(u64::MAX);
static SUBS: AtomicU64 = AtomicU64::new(u64::MAX);

/// Reads /proc/self/exe once (the loader reports the executable with an empty name).
pub fn init_exe_path() {
    // SAFETY: EXE is written before recording starts.
    let n = unsafe { sys::readlink(c"/proc/self/exe".as_ptr() as *const u8, EXE.0.get() as *mut u8, MAX_PATH) };
    EXE_LEN.store(n, Ordering::Release);
}

/// The executable's path as read by [`init_exe_path`] (empty before).
pub fn exe_path() -> &'static [u8] {
    let n = EXE_LEN.load(Ordering::Acquire);
    // SAFETY: EXE is written once before EXE_LEN is published and never again (but in a fork
    // child, which rewrites the same path).
    unsafe { &(&*EXE.0.get())[..n] }
}

/// The loader's module add/remove counters (they change on every dlopen/dlclose).
pub fn counters() -> (u64, u64) {
    let mut c = (0u64, 0u64);
    // SAFETY: counters_cb writes only the tuple.
    unsafe { libc::dl_iterate_phdr(Some(counters_cb), &mut c as *mut (u64, u64) as *mut c_void) };
    c
}

/// The text range of the module containing `addr`.
pub fn module_range(addr: usize) -> Option<(usize, usize)> {
    struct Find {
        addr: usize,
        found: Option<(usize, usize)>,
    }
    unsafe extern "C" fn cb(info: *mut libc::dl_phdr_info, _size: usize, arg: *mut c_void) -> c_int {
        // SAFETY: the loader passes a valid info; arg is our &mut Find.
        unsafe {
            let f = &mut *(arg as *mut Find);
            let (lo, hi) = load_range(&*info);
            if lo <= f.addr && f.addr < hi {
                f.found = Some((lo, hi));
                return 1;
            }
        }
        0
    }
    let mut f = Find { addr, found: None };
    // SAFETY: cb matches the callback contract and only touches f.
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut f as *mut Find as *mut c_void) };
    f.found
}

pub(crate) unsafe fn load_range(info: &libc::dl_phdr_info) -> (usize, usize) {
    let mut lo = usize::MAX;
    let mut hi = 0usize;
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: dlpi_phdr has dlpi_phnum entries.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        if ph.p_type == libc::PT_LOAD {
            let a = (info.dlpi_addr as usize).wrapping_add(ph.p_vaddr as usize);
            lo = lo.min(a);
            hi = hi.max(a.wrapping_add(ph.p_memsz as usize));
        }
    }
    if lo > hi {
        (0, 0)
    } else {
        (lo, hi)
    }
}

/// The GNU build id from the module's PT_NOTE segments, as mapped in memory.
pub(crate) unsafe fn build_id(info: &libc::dl_phdr_info) -> &'static [u8] {
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: dlpi_phdr has dlpi_phnum entries.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        if ph.p_type != libc::PT_NOTE {
            continue;
        }
        let start = (info.dlpi_addr as usize).wrapping_add(ph.p_vaddr as usize);
        let len = ph.p_memsz as usize;
        let mut at = 0usize;
        while at + 12 <= len {
            // SAFETY: PT_NOTE lies in a loaded segment; every read stays below start + len.
            unsafe {
                let namesz = *((start + at) as *const u32) as usize;
                let descsz = *((start + at + 4) as *const u32) as usize;
                let ty = *((start + at + 8) as *const u32);
                let name_at = at + 12;
                let desc_at = name_at + ((namesz + 3) & !3);
                let next = desc_at + ((descsz + 3) & !3);
                if namesz > len || descsz > len || next > len {
                    break;
                }
                if ty == 3
                    && namesz == 4
                    && *((start + name_at) as *const [u8; 4]) == *b"GNU\0"
                    && descsz <= MAX_BUILD_ID
                {
                    return core::slice::from_raw_parts((start + desc_at) as *const u8, descsz);
                }
                at = next;
            }
        }
    }
    &[]
}

struct Build<'a> {
    put: Put<'a>,
    count: u32,
    flags: u32,
}

unsafe extern "C" fn entry_cb(info: *mut libc::dl_phdr_info, _size: usize, arg: *mut c_void) -> c_int {
    // SAFETY: valid info from the loader; arg is our &mut Build.
    unsafe {
        let b = &mut *(arg as *mut Build);
        let info = &*info;
        let (lo, hi) = load_range(info);
        if hi == 0 {
            return 0;
        }
        let name: &[u8] =
            if info.dlpi_name.is_null() { &[] } else { core::ffi::CStr::from_ptr(info.dlpi_name).to_bytes() };
        let path: &[u8] = if name.is_empty() {
            let n = EXE_LEN.load(Ordering::Acquire);
            &(&*EXE.0.get())[..n]
        } else {
            name
        };
        let path = &path[..path.len().min(MAX_PATH)];
        let id = build_id(info);
        let need = 32 + path.len() + id.len() + 8;
        if b.put.at + need > b.put.buf.len() {
            b.flags |= MOD_LIST_TRUNCATED;
            return 1;
        }
        b.put.u64(info.dlpi_addr);
        b.put.u64(lo as u64);
        b.put.u64(hi as u64);
        b.put.u16(path.len() as u16);
        b.put.u16(id.len() as u16);
        b.put.u32(0);
        b.put.bytes(path);
        b.put.bytes(id);
        b.put.pad8();
        b.count += 1;
    }
    0
}

unsafe extern "C" fn counters_cb(info: *mut libc::dl_phdr_info, size: usize, arg: *mut c_void) -> c_int {
    let out = arg as *mut (u64, u64);
    if size >= core::mem::size_of::<libc::dl_phdr_info>() {
        // SAFETY: the loader's struct is at least as large as ours, so the counters are present.
        unsafe { *out = ((*info).dlpi_adds, (*info).dlpi_subs) };
    }
    1
}

/// Writes a modules record if the module list changed since the last one (or always, with
/// `force`). Skipped when another thread is writing one at the same moment.
pub fn snapshot(force: bool) {
    if LOCK.swap(true, Ordering::Acquire) {
        if !force {
            return;
        }
        let mut spins = 0u32;
        while LOCK.swap(true, Ordering::Acquire) {
            spins += 1;
            if spins > 1_000_000 {
                return;
            }
            core::hint::spin_loop();
        }
    }
    let mut counters = (0u64, 0u64);
    // SAFETY: counters_cb writes only the tuple.
    unsafe { libc::dl_iterate_phdr(Some(counters_cb), &mut counters as *mut (u64, u64) as *mut c_void) };
    let changed = counters.0 != ADDS.load(Ordering::Relaxed) || counters.1 != SUBS.load(Ordering::Relaxed);
    if changed || force {
        ADDS.store(counters.0, Ordering::Relaxed);
        SUBS.store(counters.1, Ordering::Relaxed);
        // SAFETY: SCRATCH is ours while LOCK is held.
        let buf = unsafe { &mut *SCRATCH.0.get() };
        let mut b = Build { put: Put::new(buf), count: 0, flags: 0 };
        b.put.at = 8 + MODULES_FIXED;
        // SAFETY: entry_cb only appends to b.
        unsafe { libc::dl_iterate_phdr(Some(entry_cb), &mut b as *mut Build as *mut c_void) };
        let end = b.put.at;
        let (count, flags) = (b.count, b.flags);
        let mut head = Put::new(&mut buf[..8 + MODULES_FIXED]);
        head.u16(REC_MODULES);
        head.u16(0);
        head.u32((end - 8) as u32);
        head.u64(sys::mono_ns());
        head.u32(count);
        head.u32(flags);
        // SAFETY: buf[..end] was written above.
        unsafe { out::write_records(buf.as_ptr(), end, true) };
    }
    LOCK.store(false, Ordering::Release);
}
