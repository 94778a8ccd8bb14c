//! The target process: launching a command stopped before its exec (so that the events are open
//! before its first instruction), reaping it, and the signals that stop a recording.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use super::RecordError;

static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if SIGNALLED.swap(sig, Ordering::SeqCst) != 0 {
        // Second signal while stopping: give up at once, but do not leave a kdamond behind.
        crate::sources::damon::emergency_cleanup();
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// Installs SIGINT/SIGTERM/SIGHUP handlers that make a running [`record`] stop and still write
/// its trace (stopReason `signal`). A second signal exits immediately.
pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: on_signal only touches an atomic and calls _exit.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal that asked us to stop, if any.
pub fn signal_received() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

pub(super) fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        s => format!("signal {s}"),
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Resolves a program name the way execvp would (PATH search for names without a slash).
pub fn resolve_program(name: &str) -> Result<PathBuf, RecordError> {
    if name.is_empty() {
        return Err(RecordError::Usage("empty command".into()));
    }
    if name.contains('/') {
        let p = PathBuf::from(name);
        if !p.exists() {
            return Err(RecordError::CommandNotFound(name.into()));
        }
        if !is_executable(&p) {
            return Err(RecordError::Exec {
                program: name.into(),
                error: std::io::Error::from_raw_os_error(libc::EACCES),
            });
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(name);
        if is_executable(&cand) {
            return Ok(cand);
        }
    }
    Err(RecordError::CommandNotFound(name.into()))
}

/// A forked child blocked before exec until [`StoppedChild::release`].
pub(super) struct StoppedChild {
    pub(super) pid: i32,
    release_w: libc::c_int,
    err_r: libc::c_int,
}

fn pipe_cloexec() -> std::io::Result<[libc::c_int; 2]> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fds)
}

/// This process's environment with the variables of `set` added or replaced, as `KEY=VALUE`
/// strings for execve (the launched command's environment when the recorder adds variables, such
/// as the allocation-site shim's; recorder/alloc.rs).
pub(super) fn child_environment(set: &[(&str, std::ffi::OsString)]) -> Result<Vec<CString>, RecordError> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let entry = |k: &[u8], v: &[u8]| {
        CString::new([k, b"=", v].concat())
            .map_err(|_| RecordError::Usage("NUL byte in an environment variable".into()))
    };
    for (k, v) in std::env::vars_os() {
        if !set.iter().any(|(name, _)| k.as_bytes() == name.as_bytes()) {
            out.push(entry(k.as_bytes(), v.as_bytes())?);
        }
    }
    for (k, v) in set {
        out.push(entry(k.as_bytes(), v.as_bytes())?);
    }
    Ok(out)
}

/// Forks a child that waits on a pipe, then execs `argv` (stdin/stdout/stderr inherited) with
/// `env` as its environment, or this process's when None.
pub(super) fn spawn_stopped(
    program: &Path,
    argv: &[String],
    env: Option<&[CString]>,
) -> Result<StoppedChild, RecordError> {
    use std::os::unix::ffi::OsStrExt;
    let io = |what: &str, e: std::io::Error| RecordError::Io(format!("{what}: {e}"));
    let path =
        CString::new(program.as_os_str().as_bytes()).map_err(|_| RecordError::Usage("NUL in program path".into()))?;
    let args: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| RecordError::Usage("NUL byte in a command argument".into()))?;
    let mut arg_ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    arg_ptrs.push(std::ptr::null());
    let env_ptrs: Option<Vec<*const libc::c_char>> =
        env.map(|e| e.iter().map(|v| v.as_ptr()).chain(std::iter::once(std::ptr::null())).collect());
    let release = pipe_cloexec().map_err(|e| io("pipe", e))?;
    let err = pipe_cloexec().map_err(|e| io("pipe", e))?;
    // SAFETY: after fork the child calls only async-signal-safe functions (close, read, execv,
    // execve, write, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io("fork", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        unsafe {
            libc::close(release[1]);
            libc::close(err[0]);
            let mut b = 0u8;
            let n = loop {
                let n = libc::read(release[0], &mut b as *mut u8 as *mut libc::c_void, 1);
                if n < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break n;
            };
            if n != 1 {
                libc::_exit(125); // the recorder gave up before releasing us
            }
            // The default signal dispositions are restored by exec for handled signals.
            match &env_ptrs {
                Some(envp) => libc::execve(path.as_ptr(), arg_ptrs.as_ptr(), envp.as_ptr()),
                None => libc::execv(path.as_ptr(), arg_ptrs.as_ptr()),
            };
            let e = *libc::__errno_location();
            let bytes = e.to_ne_bytes();
            libc::write(err[1], bytes.as_ptr() as *const libc::c_void, 4);
            libc::_exit(127);
        }
    }
    // SAFETY: closing our copies of the child's ends.
    unsafe {
        libc::close(release[0]);
        libc::close(err[1]);
    }
    Ok(StoppedChild { pid, release_w: release[1], err_r: err[0] })
}

impl StoppedChild {
    /// Lets the child exec; returns the exec error if exec failed.
    pub(super) fn release(self) -> Result<(), std::io::Error> {
        // SAFETY: fds are ours.
        unsafe {
            libc::write(self.release_w, [1u8].as_ptr() as *const libc::c_void, 1);
            libc::close(self.release_w);
            let mut buf = [0u8; 4];
            let mut got = 0usize;
            while got < 4 {
                let n = libc::read(self.err_r, buf[got..].as_mut_ptr() as *mut libc::c_void, 4 - got);
                if n < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                if n <= 0 {
                    break;
                }
                got += n as usize;
            }
            libc::close(self.err_r);
            if got == 4 {
                return Err(std::io::Error::from_raw_os_error(i32::from_ne_bytes(buf)));
            }
        }
        Ok(())
    }
}

/// Non-blocking reap of a child: Some(exit code, description) once it exited.
pub(super) fn try_reap(pid: i32, block: bool) -> Option<(i32, String)> {
    let mut status = 0;
    // SAFETY: plain waitpid.
    let r = unsafe { libc::waitpid(pid, &mut status, if block { 0 } else { libc::WNOHANG }) };
    if r != pid {
        return None;
    }
    if libc::WIFEXITED(status) {
        let c = libc::WEXITSTATUS(status);
        Some((c, format!("exited with code {c}")))
    } else if libc::WIFSIGNALED(status) {
        let s = libc::WTERMSIG(status);
        Some((128 + s, format!("was killed by {}", signal_name(s))))
    } else {
        None
    }
}
