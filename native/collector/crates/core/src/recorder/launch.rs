//! The target process: launching a command stopped before its exec (so that the events are open
//! before its first instruction), reaping it, leaving it running at the stop, and the signals that
//! stop a recording.
//!
//! A command launched to be left running at the stop (the default; not `--kill-on-stop`) gets a
//! process group of its own, so that Ctrl-C in a terminal (SIGINT to the foreground process
//! group) stops the recording without reaching the program. Being in a background group of the
//! terminal, it would be stopped (SIGTTIN) when it read the terminal: when stdin is a terminal,
//! its stdin is /dev/null instead. It still writes to the terminal (unless `stty tostop` is set:
//! see [`tostop_warning`]). With `--kill-on-stop` it shares the recorder's process group and
//! stdin, as a plain child: Ctrl-C reaches both.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use super::RecordError;

static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    if SIGNALLED.swap(sig, Ordering::SeqCst) != 0 {
        // Second signal while stopping: give up at once, but do not leave a kdamond behind, nor
        // NUMA balancing switched on.
        crate::sources::damon::emergency_cleanup();
        super::balancing::emergency_restore();
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

extern "C" fn cleanup_then_die(sig: libc::c_int) {
    crate::sources::damon::emergency_cleanup();
    super::balancing::emergency_restore();
    // SAFETY: signal and raise are async-signal-safe; the default action then ends the process
    // as the signal would have.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// For long-lived embedders that do not stop on signals (`numascope serve`): SIGINT, SIGTERM and
/// SIGHUP still end the process as before, but first remove a DAMON kdamond and restore NUMA
/// balancing that a running recording set up (async-signal-safe writes only).
pub fn install_cleanup_on_exit_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: cleanup_then_die only makes async-signal-safe calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = cleanup_then_die as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESETHAND;
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

/// Resolves a program name the way execvp would (PATH search for names without a slash).
pub fn resolve_program(name: &str) -> Result<PathBuf, RecordError> {
    use crate::program::{find_program, FindError};
    find_program(name).map_err(|e| match e {
        FindError::Empty => RecordError::Usage("empty command".into()),
        FindError::NotFound => RecordError::CommandNotFound(name.into()),
        FindError::NotExecutable => {
            RecordError::Exec { program: name.into(), error: std::io::Error::from_raw_os_error(libc::EACCES) }
        }
    })
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

/// Forks a child that waits on a pipe, then execs `argv` (stdout/stderr inherited) with `env` as
/// its environment, or this process's when None. `own_group`: the child gets a process group of
/// its own, and stdin from /dev/null when stdin is a terminal (see the module docs); else it shares
/// the recorder's group and stdin.
pub(super) fn spawn_stopped(
    program: &Path,
    argv: &[String],
    own_group: bool,
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
    // SAFETY: isatty on a descriptor number has no preconditions.
    let null_stdin = own_group && unsafe { libc::isatty(0) } == 1;
    let dev_null = c"/dev/null";
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
            if own_group {
                libc::setpgid(0, 0);
            }
            if null_stdin {
                let fd = libc::open(dev_null.as_ptr(), libc::O_RDONLY);
                if fd > 0 {
                    libc::dup2(fd, 0);
                    libc::close(fd);
                }
            }
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
    // SAFETY: closing our copies of the child's ends; setpgid on our own child (also done in the
    // child: whichever runs first, the group exists before the child execs).
    unsafe {
        libc::close(release[0]);
        libc::close(err[1]);
        if own_group {
            libc::setpgid(pid, pid);
        }
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

/// When a program in its own process group would be stopped writing to the terminal (`stty
/// tostop` set on stdout's or stderr's terminal), the warning to show.
pub(super) fn tostop_warning() -> Option<String> {
    for fd in [1, 2] {
        // SAFETY: isatty/tcgetattr on a descriptor number with our own termios struct.
        unsafe {
            if libc::isatty(fd) != 1 {
                continue;
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) == 0 && t.c_lflag & libc::TOSTOP != 0 {
                return Some(
                    "the terminal has `tostop` set: the launched program runs in its own process group (so that Ctrl-C stops only \
                     the recording) and is stopped (SIGTTOU) when it writes to the terminal; run `stty -tostop`, redirect its output, \
                     or record with --kill-on-stop"
                        .into(),
                );
            }
        }
    }
    None
}

/// Leaves a launched child running: a thread waits for its exit, so that it never stays a
/// zombie while the recorder's process lives on (`numascope serve`, the Node binding). When the
/// recorder's process exits first, the child is reparented (to init or the nearest subreaper),
/// which reaps it.
pub(super) fn detach(pid: i32) -> std::io::Result<()> {
    std::thread::Builder::new().name(format!("reap-{pid}")).spawn(move || {
        let mut status = 0;
        loop {
            // SAFETY: plain blocking waitpid on our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == pid || (r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                break;
            }
        }
    })?;
    Ok(())
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
