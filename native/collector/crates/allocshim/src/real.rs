//! The real functions the shim wraps: found with `dlsym(RTLD_NEXT)` on the first call into the
//! shim (glibc's `__libc_*` names where that finds the shim itself), and whether glibc's
//! allocator is the one underneath.

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::Ordering;

use crate::interpose::alloc::{calloc, free, malloc, memalign, pvalloc, realloc, valloc};
use crate::state::{GLIBC_CHUNKS, STATE, ST_PASS, ST_RESOLVING, ST_UNINIT};
use crate::sys;

macro_rules! real_fns {
    ($($name:ident : $ty:ty = $sym:literal $(, $own:ident, $fallback:literal)?;)*) => {
        #[allow(non_upper_case_globals)]
        pub(crate) mod slots {
            use core::sync::atomic::AtomicPtr;
            $(pub static $name: AtomicPtr<core::ffi::c_void> = AtomicPtr::new(core::ptr::null_mut());)*
        }
        $(
            #[inline(always)]
            #[allow(non_snake_case, dead_code)]
            pub(crate) unsafe fn $name() -> $ty {
                // SAFETY: only called once resolve() stored a non-null pointer of this type.
                unsafe { core::mem::transmute::<*mut c_void, $ty>(slots::$name.load(Ordering::Relaxed)) }
            }
        )*
        unsafe fn resolve_all() -> bool {
            let mut ok = true;
            $(
                #[allow(unused_mut)]
                let mut p = unsafe { libc::dlsym(libc::RTLD_NEXT, $sym.as_ptr()) };
                $(
                    if p.is_null() || p == $own as *const () as *mut c_void {
                        p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, $fallback.as_ptr()) };
                    }
                    ok &= !p.is_null();
                )?
                slots::$name.store(p, Ordering::Relaxed);
            )*
            ok
        }
    };
}

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type CallocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type PosixMemalignFn = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int;
type AlignFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocarrayFn = unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void;
pub(crate) type MmapFn = unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, c_int, i64) -> *mut c_void;
type MunmapFn = unsafe extern "C" fn(*mut c_void, usize) -> c_int;
type MremapFn = unsafe extern "C" fn(*mut c_void, usize, usize, c_int, ...) -> *mut c_void;
type ExecveFn = unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
type ExecvFn = unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int;
type DlcloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;
pub(crate) type StartFn = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type PthreadCreateFn =
    unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartFn, *mut c_void) -> c_int;
type SetnameFn = unsafe extern "C" fn(libc::pthread_t, *const c_char) -> c_int;
type PrctlFn = unsafe extern "C" fn(c_int, libc::c_ulong, libc::c_ulong, libc::c_ulong, libc::c_ulong) -> c_int;

real_fns! {
    r_malloc: MallocFn = c"malloc", malloc, c"__libc_malloc";
    r_calloc: CallocFn = c"calloc", calloc, c"__libc_calloc";
    r_realloc: ReallocFn = c"realloc", realloc, c"__libc_realloc";
    r_free: FreeFn = c"free", free, c"__libc_free";
    r_posix_memalign: PosixMemalignFn = c"posix_memalign";
    r_aligned_alloc: AlignFn = c"aligned_alloc";
    r_memalign: AlignFn = c"memalign", memalign, c"__libc_memalign";
    r_valloc: MallocFn = c"valloc", valloc, c"__libc_valloc";
    r_pvalloc: MallocFn = c"pvalloc", pvalloc, c"__libc_pvalloc";
    r_reallocarray: ReallocarrayFn = c"reallocarray";
    r_mmap: MmapFn = c"mmap";
    r_mmap64: MmapFn = c"mmap64";
    r_munmap: MunmapFn = c"munmap";
    r_mremap: MremapFn = c"mremap";
    r_dlclose: DlcloseFn = c"dlclose";
    r_execve: ExecveFn = c"execve";
    r_execvpe: ExecveFn = c"execvpe";
    r_execv: ExecvFn = c"execv";
    r_execvp: ExecvFn = c"execvp";
    r_pthread_create: PthreadCreateFn = c"pthread_create";
    r_pthread_setname_np: SetnameFn = c"pthread_setname_np";
    r_prctl: PrctlFn = c"prctl";
}

/// Resolves the real functions on the first call into the shim. Returns the state afterwards:
/// ST_RESOLVING means "use the bootstrap arena" (this thread is inside dlsym, or another
/// thread is resolving).
#[cold]
#[inline(never)]
fn ensure_resolved() -> u8 {
    match STATE.compare_exchange(ST_UNINIT, ST_RESOLVING, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            // SAFETY: dlsym calls may re-enter malloc/calloc, which see ST_RESOLVING.
            let ok = unsafe { resolve_all() };
            if !ok {
                sys::say(b"numascope-allocshim: the C library's malloc functions were not found; aborting\n");
                // SAFETY: nothing can be allocated without them.
                unsafe { libc::abort() };
            }
            // SAFETY: dlsym lookups of glibc's own names for the allocator.
            unsafe {
                let same = |a: *mut c_void, name: &core::ffi::CStr| {
                    !a.is_null() && a == libc::dlsym(libc::RTLD_NEXT, name.as_ptr())
                };
                let glibc = same(slots::r_malloc.load(Ordering::Relaxed), c"__libc_malloc")
                    && same(slots::r_free.load(Ordering::Relaxed), c"__libc_free")
                    && same(slots::r_realloc.load(Ordering::Relaxed), c"__libc_realloc")
                    && same(slots::r_memalign.load(Ordering::Relaxed), c"__libc_memalign");
                GLIBC_CHUNKS.store(glibc, Ordering::Relaxed);
            }
            STATE.store(ST_PASS, Ordering::Release);
            ST_PASS
        }
        Err(s) => s,
    }
}

#[inline(always)]
pub(crate) fn state() -> u8 {
    let s = STATE.load(Ordering::Acquire);
    if s >= ST_PASS {
        s
    } else {
        ensure_resolved()
    }
}
