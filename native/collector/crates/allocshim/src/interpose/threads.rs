//! The interposed thread functions, for placement by thread (numascope run): `pthread_create`
//! (each new thread starts in a trampoline that knows its creation order), `pthread_setname_np`
//! and `prctl` (a thread's name).

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::Ordering;

use crate::place;
use crate::real::{r_free, r_malloc, r_prctl, r_pthread_create, r_pthread_setname_np, slots, state, StartFn};
use crate::state::{guarded, ST_PASS};

#[repr(C)]
struct ThreadStart {
    start: StartFn,
    arg: *mut c_void,
    order: u32,
}

unsafe extern "C" fn thread_trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: p is the ThreadStart pthread_create allocated for this thread.
    let b = unsafe { core::ptr::read(p as *const ThreadStart) };
    unsafe { r_free()(p) };
    guarded(|| place::thread_started(b.order));
    unsafe { (b.start)(b.arg) }
}

/// Threads are pinned by creation order before they run the program's code: with a plan that
/// has thread entries, each new thread starts in a trampoline that knows its order.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: StartFn,
    arg: *mut c_void,
) -> c_int {
    if state() < ST_PASS || slots::r_pthread_create.load(Ordering::Relaxed).is_null() {
        return libc::EAGAIN;
    }
    if !place::pins_threads() {
        return unsafe { r_pthread_create()(thread, attr, start, arg) };
    }
    let b = unsafe { r_malloc()(core::mem::size_of::<ThreadStart>()) } as *mut ThreadStart;
    if b.is_null() {
        return unsafe { r_pthread_create()(thread, attr, start, arg) };
    }
    unsafe { b.write(ThreadStart { start, arg, order: place::next_order() }) };
    let r = unsafe { r_pthread_create()(thread, attr, thread_trampoline, b as *mut c_void) };
    if r != 0 {
        unsafe { r_free()(b as *mut c_void) };
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_setname_np(thread: libc::pthread_t, name: *const c_char) -> c_int {
    if state() < ST_PASS || slots::r_pthread_setname_np.load(Ordering::Relaxed).is_null() {
        return libc::ENOSYS;
    }
    let r = unsafe { r_pthread_setname_np()(thread, name) };
    if r == 0 && place::pins_threads() && !name.is_null() {
        // SAFETY: the real call accepted name as a NUL-terminated string.
        let n = unsafe { core::ffi::CStr::from_ptr(name) }.to_bytes();
        guarded(|| place::renamed(thread as usize, Some(n)));
    }
    r
}

/// `prctl` is variadic in C; like `mremap` above, the five register arguments are passed on.
#[no_mangle]
pub unsafe extern "C" fn prctl(
    option: c_int,
    a2: libc::c_ulong,
    a3: libc::c_ulong,
    a4: libc::c_ulong,
    a5: libc::c_ulong,
) -> c_int {
    let r = if state() < ST_PASS || slots::r_prctl.load(Ordering::Relaxed).is_null() {
        unsafe { libc::syscall(libc::SYS_prctl, option as i64, a2, a3, a4, a5) as c_int }
    } else {
        unsafe { r_prctl()(option, a2, a3, a4, a5) }
    };
    if r == 0 && option == libc::PR_SET_NAME && place::pins_threads() {
        // SAFETY: pthread_self reads the thread pointer.
        let me = unsafe { libc::pthread_self() } as usize;
        guarded(|| place::renamed(me, None));
    }
    r
}
