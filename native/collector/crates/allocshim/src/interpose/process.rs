//! The interposed functions that end or replace the image, or unload a module: `_exit`,
//! `_Exit`, the `exec` family (the recording is finished first), and `dlclose` (the closing
//! module's addresses kept symbolizable).

use core::ffi::{c_char, c_int, c_void};

use crate::format::*;
use crate::lifecycle::finish_recording;
use crate::real::{r_dlclose, r_execv, r_execve, r_execvp, r_execvpe, state};
use crate::state::{guarded, ST_RECORDING, TLS};
use crate::{modules, place, sys};

#[no_mangle]
pub unsafe extern "C" fn dlclose(handle: *mut c_void) -> c_int {
    if state() == ST_RECORDING {
        // Keep the closing module's addresses symbolizable.
        TLS.with(|t| {
            if !t.guard.get() {
                t.guard.set(true);
                let _errno = sys::ErrnoGuard::save();
                modules::snapshot(false);
                t.guard.set(false);
            }
        });
    }
    unsafe { r_dlclose()(handle) }
}

// `_exit` skips destructors and exec replaces the image: both would lose what the buffers hold.
// (exec variants that glibc implements on top of execve call it internally, not through the
// interposed symbol; the common ones are caught here one by one.)

#[no_mangle]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    guarded(place::finish);
    finish_recording(0);
    // SAFETY: the real _exit does not return.
    unsafe { libc::syscall(libc::SYS_exit_group, status as i64) };
    unsafe { libc::abort() }
}

#[no_mangle]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    unsafe { _exit(status) }
}

unsafe fn before_exec() {
    guarded(place::finish);
    if state() == ST_RECORDING {
        finish_recording(END_EXEC);
    }
}

#[no_mangle]
pub unsafe extern "C" fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execve()(path, argv, envp)
    }
}

#[no_mangle]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execvpe()(file, argv, envp)
    }
}

#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execv()(path, argv)
    }
}

#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    unsafe {
        before_exec();
        r_execvp()(file, argv)
    }
}
