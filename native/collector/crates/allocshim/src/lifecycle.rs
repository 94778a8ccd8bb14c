//! Start, fork and exit: the settings read from the environment at load, recording started (and
//! restarted in a fork child), the fork handlers, each thread's buffer retired at its exit, and
//! the file finished at exit (also before `_exit` and exec, interpose/process.rs).

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::real::state;
use crate::sampler::reset_sampler;
use crate::state::{
    guarded, publish_fast_path, DEFAULT_MAX_DEPTH, DEFAULT_MIN_BYTES, DEFAULT_SAMPLE_BYTES, MAX_DEPTH, MAX_DEPTH_LIMIT,
    MIN_BYTES, PTHREAD_KEY, REC_PID, SAMPLE_BYTES, SEED, STATE, ST_PASS, ST_RECORDING, TLS,
};
use crate::{modules, out, place, sys, unwind};

/// Parses a decimal value; None when not a plain non-negative integer.
fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &c in v {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (c - b'0') as u64;
    }
    Some(n)
}

struct Env<'a> {
    dir: Option<&'a [u8]>,
    min: Option<&'a [u8]>,
    sample: Option<&'a [u8]>,
    depth: Option<&'a [u8]>,
    max_file: Option<&'a [u8]>,
    seed: Option<&'a [u8]>,
    place_plan: Option<&'a [u8]>,
    place_log: Option<&'a [u8]>,
    stack_cache: Option<&'a [u8]>,
    shared_map: Option<&'a [u8]>,
}

unsafe fn read_env<'a>(envp: *const *const c_char) -> Env<'a> {
    let mut e = Env {
        dir: None,
        min: None,
        sample: None,
        depth: None,
        max_file: None,
        seed: None,
        place_plan: None,
        place_log: None,
        stack_cache: None,
        shared_map: None,
    };
    if envp.is_null() {
        return e;
    }
    let mut i = 0;
    loop {
        // SAFETY: envp is the NULL-terminated environment the loader passes to constructors.
        let s = unsafe { *envp.add(i) };
        if s.is_null() {
            break;
        }
        let kv = unsafe { core::ffi::CStr::from_ptr(s) }.to_bytes();
        for (key, slot) in [
            (&b"NUMASCOPE_ALLOC_DIR="[..], &mut e.dir),
            (b"NUMASCOPE_ALLOC_MIN_BYTES=", &mut e.min),
            (b"NUMASCOPE_ALLOC_SAMPLE_BYTES=", &mut e.sample),
            (b"NUMASCOPE_ALLOC_MAX_DEPTH=", &mut e.depth),
            (b"NUMASCOPE_ALLOC_MAX_FILE_BYTES=", &mut e.max_file),
            (b"NUMASCOPE_ALLOC_SEED=", &mut e.seed),
            (b"NUMASCOPE_PLACE_PLAN=", &mut e.place_plan),
            (b"NUMASCOPE_PLACE_LOG=", &mut e.place_log),
            (b"NUMASCOPE_ALLOC_STACK_CACHE=", &mut e.stack_cache),
            (b"NUMASCOPE_ALLOC_SHARED_MAP=", &mut e.shared_map),
        ] {
            if let Some(v) = kv.strip_prefix(key) {
                *slot = Some(v);
            }
        }
        i += 1;
    }
    e
}

fn bad_env(name: &[u8]) {
    sys::say(b"numascope-allocshim: ");
    sys::say(name);
    sys::say(b" is not a non-negative integer; allocation sites are not recorded\n");
}

/// Runs after libc is initialised (the loader calls constructors of preloaded objects after
/// those of their dependencies) with the program's environment.
extern "C" fn on_load(_argc: c_int, _argv: *const *const c_char, envp: *const *const c_char) {
    if state() != ST_PASS {
        return;
    }
    configure(envp);
    publish_fast_path();
}

/// Reads the settings, sets up placement and starts recording where asked.
fn configure(envp: *const *const c_char) {
    // SAFETY: envp comes from the loader.
    let env = unsafe { read_env(envp) };
    TLS.with(|t| t.guard.set(true));
    if place::init(env.place_plan, env.place_log) {
        register_atfork();
    }
    TLS.with(|t| t.guard.set(false));
    let Some(dir) = env.dir else { return };
    if dir.is_empty() || dir.len() >= 4096 {
        return;
    }
    let num = |v: Option<&[u8]>, name: &[u8], default: u64| -> Option<u64> {
        match v {
            None => Some(default),
            Some(v) => {
                let r = parse_u64(v);
                if r.is_none() {
                    bad_env(name);
                }
                r
            }
        }
    };
    let Some(min) = num(env.min, b"NUMASCOPE_ALLOC_MIN_BYTES", DEFAULT_MIN_BYTES as u64) else { return };
    let Some(sample) = num(env.sample, b"NUMASCOPE_ALLOC_SAMPLE_BYTES", DEFAULT_SAMPLE_BYTES) else { return };
    let Some(depth) = num(env.depth, b"NUMASCOPE_ALLOC_MAX_DEPTH", DEFAULT_MAX_DEPTH as u64) else { return };
    let Some(max_file) = num(env.max_file, b"NUMASCOPE_ALLOC_MAX_FILE_BYTES", 1 << 30) else { return };
    let seed = match env.seed {
        Some(v) => match parse_u64(v) {
            Some(s) => s,
            None => return bad_env(b"NUMASCOPE_ALLOC_SEED"),
        },
        None => sys::mono_ns() ^ ((sys::getpid() as u64) << 32),
    };
    let depth = (depth as usize).clamp(1, MAX_DEPTH_LIMIT);

    // SAFETY: DIR is written here, before recording starts, and only read afterwards.
    unsafe {
        let d = &mut *out::DIR.0.get();
        d[..dir.len()].copy_from_slice(dir);
        d[dir.len()] = 0;
    }
    MIN_BYTES.store(min.max(1) as usize, Ordering::Relaxed);
    SAMPLE_BYTES.store(sample, Ordering::Relaxed);
    MAX_DEPTH.store(depth, Ordering::Relaxed);
    unwind::CACHE_ON.store(env.stack_cache != Some(&b"0"[..]), Ordering::Relaxed);
    out::SHARED_MAP.store(env.shared_map != Some(&b"0"[..]), Ordering::Relaxed);
    SEED.store(seed, Ordering::Relaxed);
    out::MAX_BYTES.store(max_file, Ordering::Relaxed);

    TLS.with(|t| t.guard.set(true));
    let ok = start_recording(sys::getpid(), sys::getppid());
    if ok {
        // SAFETY: plain libc registration calls; allocations they make pass through the guard.
        unsafe {
            let mut key: libc::pthread_key_t = 0;
            if libc::pthread_key_create(&mut key, Some(thread_exit)) == 0 {
                PTHREAD_KEY.store(key as usize, Ordering::Relaxed);
            }
        }
        register_atfork();
    }
    TLS.with(|t| t.guard.set(false));
}

fn start_recording(pid: u32, ppid: u32) -> bool {
    // any function of the shim tells which loaded module is the shim itself
    let own = modules::module_range(start_recording as *const () as usize);
    if let Some((lo, hi)) = own {
        unwind::OWN_LO.store(lo, Ordering::Relaxed);
        unwind::OWN_HI.store(hi, Ordering::Relaxed);
    }
    modules::init_exe_path();
    out::set_new_block_hook(|| modules::snapshot(false));
    // SAFETY: called with the guard set, before or instead of recording.
    let opened = unsafe {
        out::open_output(
            pid,
            ppid,
            MIN_BYTES.load(Ordering::Relaxed) as u64,
            SAMPLE_BYTES.load(Ordering::Relaxed),
            MAX_DEPTH.load(Ordering::Relaxed) as u32,
        )
    };
    REC_PID.store(pid, Ordering::Release);
    if !opened {
        sys::say(b"numascope-allocshim: cannot create the output file in NUMASCOPE_ALLOC_DIR; allocation sites are not recorded\n");
        return false;
    }
    STATE.store(ST_RECORDING, Ordering::Release);
    modules::snapshot(true);
    true
}

extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> c_int;
}

/// Registers the fork handlers once (recording and placement share them).
fn register_atfork() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if !DONE.swap(true, Ordering::AcqRel) {
        // SAFETY: a libc registration call; what it allocates passes through the guard.
        unsafe { pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child)) };
    }
}

unsafe extern "C" fn fork_prepare() {
    // Hold the modules lock across fork so the child never inherits it taken.
    while modules::LOCK.swap(true, Ordering::Acquire) {
        core::hint::spin_loop();
    }
}

unsafe extern "C" fn fork_parent() {
    modules::LOCK.store(false, Ordering::Release);
}

unsafe extern "C" fn fork_child() {
    modules::LOCK.store(false, Ordering::Release);
    let was = STATE.swap(ST_PASS, Ordering::AcqRel);
    TLS.with(|t| {
        t.tid.set(0);
        t.guard.set(true);
        // SAFETY: only this thread exists in the child.
        unsafe { out::reset_in_child(t.buf.get()) };
        // A fresh sampling interval (and a fresh generator) for the child's first thread.
        t.sampler_ready.set(false);
        reset_sampler();
        if was == ST_RECORDING {
            start_recording(sys::getpid(), sys::getppid());
        }
        place::after_fork();
        t.guard.set(false);
    });
}

unsafe extern "C" fn thread_exit(arg: *mut c_void) {
    TLS.with(|t| {
        t.guard.set(true);
        let b = arg as *mut out::ThreadBuf;
        if !b.is_null() {
            // SAFETY: the buffer this thread registered; registry buffers are never unmapped.
            unsafe { out::retire(b) };
        }
        t.buf.set(core::ptr::null_mut());
        t.guard.set(false);
    });
}

/// Runs at exit (after atexit handlers, from the loader's destructor pass), and before `_exit`
/// and exec.
extern "C" fn on_exit() {
    guarded(place::finish);
    finish_recording(0);
}

pub(crate) fn finish_recording(end_flags: u32) {
    // A vfork child (or a raw clone) shares the parent's memory and file: it must not end the
    // parent's recording. fork children re-open their own file and update REC_PID.
    if sys::getpid() != REC_PID.load(Ordering::Acquire) {
        return;
    }
    if STATE.load(Ordering::Acquire) != ST_RECORDING {
        // Recording stopped early: still close the file with an end record saying so.
        if out::FD.load(Ordering::Acquire) >= 0 {
            // SAFETY: writes the end record with raw system calls.
            unsafe { out::finish() };
        }
        return;
    }
    TLS.with(|t| t.guard.set(true));
    let _errno = sys::ErrnoGuard::save();
    STATE.store(ST_PASS, Ordering::Release);
    // SAFETY: see out::close_all_at_exit.
    unsafe { out::close_all_at_exit() };
    modules::snapshot(true);
    out::END_FLAGS.fetch_or(end_flags, Ordering::Relaxed);
    // SAFETY: as above.
    unsafe { out::finish() };
    TLS.with(|t| t.guard.set(false));
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_EXIT: extern "C" fn() = on_exit;
