//! `numascope record`: launch a command (or attach to a pid), sample its page faults, poll
//! /proc, and write a trace.
//!
//! Node of a page (`pages.node`, `samples.node`):
//! - While the capture runs, pages seen in new fault samples are queried with `move_pages`
//!   (nodes = NULL) every 20 ms (or the polling interval if shorter); a sample's `node` is the answer of the first
//!   query after its fault (the node the page landed on), or -1 if no query answered.
//! - At the end, if the process is still alive, every page is queried again: `pages.node` is the
//!   last node a query reported (last known).
//! - A launched command that already exited cannot be queried (its address space is gone). For a
//!   page no query ever answered, `pages.node` falls back to the last numa_maps snapshot of the
//!   page's region when all of that region's pages were on a single node, else -1. The manifest
//!   notes say so whenever the fallback was used.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::privileges::{perf_open_error, Privileges};
use crate::probe::Probe;
use crate::procfs;
use crate::sources::pagefault::{classify, FaultEvent, FaultKind, FaultSample, PageFaultOptions, PageFaultSampler};
use crate::sources::procfs::{PendingEvent, PollerConfig, PollerHandle, ProcfsData};
use crate::time::{iso8601_utc, mono_now_ns, unix_now_ms, us_since};
use crate::topology::{self, Roots, Topology};
use crate::trace::*;

/// The longest capture format v1 can describe (u32 µs), less a safety margin.
pub const MAX_CAPTURE: Duration = Duration::from_secs(4290);

/// What to record.
#[derive(Clone, Debug)]
pub enum Target {
    /// Launch this argv (program resolved through PATH) and record it from its exec.
    Launch(Vec<String>),
    /// Attach to a running process.
    Attach(i32),
}

#[derive(Clone, Debug)]
pub struct RecordOptions {
    pub target: Target,
    pub output: PathBuf,
    /// Stop after this long (None: until the process exits or a signal arrives).
    pub duration: Option<Duration>,
    /// /proc polling interval.
    pub interval: Duration,
    /// The numascope command line, for `origin.command`.
    pub command_line: Vec<String>,
    /// Print progress about once a second and a summary to stderr.
    pub progress: bool,
    /// An extra stop flag (for embedders such as the Node binding).
    pub stop: Option<Arc<AtomicBool>>,
    /// Live per-window aggregates (for `numascope serve`): see [`crate::live`] for the window
    /// contents and how they agree with the trace. None: no live reporting.
    pub live: Option<crate::live::LiveSink>,
    /// Also run a DAMON vaddr monitor on the target (`--damon`; see [`crate::sources::damon`]).
    pub damon: bool,
    /// Sample one page fault in this many (`--fault-period`; 1 = every fault, exact first touch).
    /// Used when `fault_rate_hz` is 0.
    pub fault_period: u64,
    /// Adaptive page-fault sampling (`--fault-rate`, the default): every fault while a thread
    /// faults less than this many times a second, about this many samples a second above (the
    /// kernel's frequency mode). 0 = the fixed `fault_period`.
    pub fault_rate_hz: u64,
    /// Sample memory accesses with the PMU (AMD IBS op, Intel PEBS) where the machine has one
    /// (`--no-pmu` turns it off; see [`crate::sources::pmu`]).
    pub mem_sampling: bool,
    /// Samples per second per PMU event (`--mem-rate`).
    pub mem_rate_hz: u64,
    /// Per-thread counting events read on every poll (`--counters`): the core set (cycles,
    /// instructions, llc-misses: IPC and L3MPKI), software stand-ins, or none.
    pub counters: CounterChoice,
    /// Count memory-controller and interconnect-link traffic with uncore PMUs where the machine
    /// has them (`--no-uncore` turns it off; see [`crate::sources::uncore`]).
    pub uncore: bool,
    /// Which event carries the page faults (`--fault-event`).
    pub fault_event: FaultEventChoice,
}

/// Which perf event [`RecordOptions::fault_event`] samples page faults with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultEventChoice {
    /// The tracepoint `exceptions:page_fault_user` while automatic NUMA balancing is on (its
    /// error codes' write bit makes the kernel's hinting faults, i.e. sampled accesses, loads or
    /// stores; see [`classify`]),
    /// falling back to the software event when the tracepoint cannot be used; the software event
    /// otherwise.
    Auto,
    /// The software event `page-faults` (every kernel, no error code).
    Software,
    /// The tracepoint, or an error saying why it cannot be used.
    Tracepoint,
}

impl std::str::FromStr for FaultEventChoice {
    type Err = String;
    /// `auto`, `software` or `tracepoint` (the CLI's `--fault-event`, serve's and napi's `faultEvent`).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(FaultEventChoice::Auto),
            "software" => Ok(FaultEventChoice::Software),
            "tracepoint" => Ok(FaultEventChoice::Tracepoint),
            _ => Err(format!("fault event {s:?}: expected auto, software or tracepoint")),
        }
    }
}

/// NUMA hinting faults on ordinary memory happen in the classic mode (bit 0).
fn hinting_on(proc_root: &Path) -> bool {
    crate::sources::pagefault::numa_balancing_mode(proc_root).is_some_and(|m| m & 1 != 0)
}

/// Which per-thread counters [`RecordOptions::counters`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterChoice {
    /// cycles, instructions, llc-misses (needs a cpu PMU; the source is `failed` without one).
    Core,
    /// task-clock, page-faults, context-switches (every kernel).
    Software,
    Off,
}

/// Default of [`RecordOptions::fault_rate_hz`].
pub const DEFAULT_FAULT_RATE_HZ: u64 = crate::sources::pagefault::DEFAULT_RATE_HZ;

impl RecordOptions {
    pub fn new(target: Target, output: PathBuf) -> Self {
        RecordOptions {
            target,
            output,
            duration: None,
            interval: Duration::from_millis(100),
            command_line: Vec::new(),
            progress: false,
            stop: None,
            live: None,
            damon: false,
            fault_period: 1,
            fault_rate_hz: DEFAULT_FAULT_RATE_HZ,
            mem_sampling: true,
            mem_rate_hz: crate::sources::pmu::DEFAULT_MEM_RATE_HZ,
            counters: CounterChoice::Core,
            uncore: true,
            fault_event: FaultEventChoice::Auto,
        }
    }
}

/// What a finished recording reports.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordSummary {
    pub output: PathBuf,
    pub size_bytes: u64,
    pub duration_us: u64,
    pub stop_reason: String,
    pub pid: i32,
    pub exit_code: Option<i32>,
    pub threads: usize,
    pub pages: usize,
    pub samples: usize,
    pub lost_samples: u64,
    pub page_faults: String,
    /// `not-requested`, `used: …` or `failed: <reason>`.
    pub damon: String,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("no process with pid {0} (it is not in /proc; check the pid with `ps`)")]
    PidNotFound(i32),
    #[error("command not found: {0} (not an executable file, and not found in PATH)")]
    CommandNotFound(String),
    #[error("cannot execute {program}: {error}")]
    Exec { program: String, error: std::io::Error },
    #[error("permission denied: {0}")]
    Permission(String),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(String),
    #[error("writing the trace: {0}")]
    Trace(#[from] TraceError),
}

// ---- signals ---------------------------------------------------------------------------------

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

fn signal_name(sig: i32) -> String {
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

// ---- launching -------------------------------------------------------------------------------

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
struct StoppedChild {
    pid: i32,
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

/// Forks a child that waits on a pipe, then execs `argv` (stdin/stdout/stderr inherited).
fn spawn_stopped(program: &Path, argv: &[String]) -> Result<StoppedChild, RecordError> {
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
    let release = pipe_cloexec().map_err(|e| io("pipe", e))?;
    let err = pipe_cloexec().map_err(|e| io("pipe", e))?;
    // SAFETY: after fork the child calls only async-signal-safe functions (close, read, execv,
    // write, _exit) on memory prepared before the fork.
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
            libc::execv(path.as_ptr(), arg_ptrs.as_ptr());
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
    fn release(self) -> Result<(), std::io::Error> {
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
fn try_reap(pid: i32, block: bool) -> Option<(i32, String)> {
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

// ---- pages ------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct PageState {
    addr: u64,
    /// The earliest first-touch fault seen ([`FaultKind::Touch`]); u64::MAX while the page was
    /// only seen in hinting faults (touched before the recording started).
    first_time_ns: u64,
    first_tid: u32,
    first_cpu: u32,
    /// Node reported by the first query after the page was seen.
    node_first: i8,
    /// Last node any query reported.
    node_last: i8,
}

#[derive(Default)]
struct PageTracker {
    index: HashMap<u64, usize>,
    pages: Vec<PageState>,
    unqueried: Vec<usize>,
    query_failures: u64,
    query_error: Option<String>,
}

impl PageTracker {
    fn add(&mut self, s: &FaultSample) {
        let addr = s.addr & !4095;
        // Only a first-touch fault says who touched a page first; a hinting fault is a later access.
        let touch = s.kind == FaultKind::Touch;
        match self.index.get(&addr) {
            Some(&i) => {
                let p = &mut self.pages[i];
                if touch && s.time_ns < p.first_time_ns {
                    p.first_time_ns = s.time_ns;
                    p.first_tid = s.tid;
                    p.first_cpu = s.cpu;
                }
            }
            None => {
                let i = self.pages.len();
                self.pages.push(PageState {
                    addr,
                    first_time_ns: if touch { s.time_ns } else { u64::MAX },
                    first_tid: s.tid,
                    first_cpu: s.cpu,
                    node_first: -1,
                    node_last: -1,
                });
                self.index.insert(addr, i);
                self.unqueried.push(i);
            }
        }
    }

    /// Queries the pages listed in `which` and records their nodes.
    fn query(&mut self, pid: i32, which: &[usize]) {
        if which.is_empty() {
            return;
        }
        let addrs: Vec<u64> = which.iter().map(|&i| self.pages[i].addr).collect();
        match crate::numa_sys::query_page_nodes(pid, &addrs) {
            Ok(status) => {
                for (&i, &st) in which.iter().zip(&status) {
                    if st >= 0 {
                        let n = st.min(127) as i8;
                        let p = &mut self.pages[i];
                        if p.node_first < 0 {
                            p.node_first = n;
                        }
                        p.node_last = n;
                    }
                }
            }
            Err(e) => {
                self.query_failures += 1;
                if self.query_error.is_none() {
                    self.query_error = Some(match e.raw_os_error() {
                        Some(libc::EPERM) | Some(libc::EACCES) => format!(
                            "move_pages query refused ({e}): needs the same user as the target or CAP_SYS_NICE/CAP_SYS_PTRACE"
                        ),
                        Some(libc::ENOSYS) => "move_pages not available (kernel without CONFIG_NUMA/MIGRATION)".into(),
                        // find_mm_struct() answers EINVAL when the task has no mm any more, ESRCH when it is gone.
                        Some(libc::EINVAL) | Some(libc::ESRCH) => format!(
                            "move_pages query after the process had exited ({e}): its address space was gone, so the last query could not run"
                        ),
                        _ => format!("move_pages query failed: {e}"),
                    });
                }
            }
        }
    }

    fn query_new(&mut self, pid: i32) {
        let which = std::mem::take(&mut self.unqueried);
        self.query(pid, &which);
    }

    fn query_all(&mut self, pid: i32) {
        self.unqueried.clear();
        let which: Vec<usize> = (0..self.pages.len()).collect();
        self.query(pid, &which);
    }
}

// ---- the recording ----------------------------------------------------------------------------

struct Stopped {
    reason: &'static str,
    exit: Option<(i32, String)>,
    signal: Option<i32>,
    at_ns: u64,
}

fn ring_exp_for(events: usize) -> u8 {
    // Budget ~256 MiB of ring buffers in all, at most 2 MiB (2^9 pages) per event.
    let budget_pages = (256usize << 20) / 4096;
    let per = (budget_pages / events.max(1)).max(4);
    let exp = (usize::BITS - 1 - per.leading_zeros()) as u8;
    exp.clamp(2, 9)
}

/// Records until the duration elapses, the process exits, or a signal/stop flag arrives, then
/// writes the trace.
pub fn record(opts: &RecordOptions) -> Result<RecordSummary, RecordError> {
    let roots = Roots::default();
    let topo = topology::read_topology().map_err(RecordError::Io)?;
    let probe = crate::probe::probe(&topo);
    record_with(opts, &roots, &topo, &probe)
}

pub fn record_with(
    opts: &RecordOptions,
    roots: &Roots,
    topo: &Topology,
    probe: &Probe,
) -> Result<RecordSummary, RecordError> {
    let mut warnings: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();

    // Output path checks first: fail before starting anything (a directory, a missing parent, a
    // read-only file system or no permission is found here, by creating and removing an
    // exclusive temporary file beside the output).
    writer::check_output(&opts.output).map_err(|e| RecordError::Usage(format!("{e}; nothing was recorded")))?;
    if opts.interval.is_zero() {
        return Err(RecordError::Usage("the polling interval must be at least 1 ms".into()));
    }
    let privs: Privileges = probe.privileges.clone();
    let cpus = topo.online_cpus.clone();
    let cpu_to_node = topo.cpu_to_node();
    let fault_period = opts.fault_period.max(1);
    // The fault event: the tracepoint where its error codes are wanted (see FaultEventChoice).
    let mut hinting = hinting_on(&roots.proc);
    let hinting_at_start = hinting;
    let tracefs: Vec<PathBuf> = vec![roots.sys.join("kernel/tracing"), roots.sys.join("kernel/debug/tracing")];
    let tracefs_refs: Vec<&Path> = tracefs.iter().map(|p| p.as_path()).collect();
    let mut fault_event_note: Option<String> = None;
    let fault_event = match opts.fault_event {
        FaultEventChoice::Software => FaultEvent::Software,
        FaultEventChoice::Tracepoint => match crate::sources::pagefault::find_fault_tracepoint(&tracefs_refs) {
            Ok(tp) => FaultEvent::Tracepoint(tp),
            Err(e) => return Err(RecordError::Usage(format!("--fault-event tracepoint: {e}"))),
        },
        FaultEventChoice::Auto if hinting => match crate::sources::pagefault::find_fault_tracepoint(&tracefs_refs) {
            Ok(tp) => FaultEvent::Tracepoint(tp),
            Err(e) => {
                fault_event_note = Some(format!(
                    "automatic NUMA balancing is on, but its hinting faults (sampled accesses) could not be told from first touches: {e}; the software page-fault event was used"
                ));
                FaultEvent::Software
            }
        },
        FaultEventChoice::Auto => FaultEvent::Software,
    };
    let auto_event = opts.fault_event == FaultEventChoice::Auto;
    let pf_opts_base = PageFaultOptions {
        exclude_kernel: !privs.can_profile_kernel(),
        enable_on_exec: false,
        ring_exp: 9,
        period: opts.fault_period.max(1),
        rate_hz: opts.fault_rate_hz,
        event: fault_event,
    };
    // Opens the fault events; in auto mode a tracepoint that cannot be opened (permissions:
    // its raw records need CAP_PERFMON) falls back to the software event, with a note.
    let open_faults = |tids: &[u32], o: &PageFaultOptions, note: &mut Option<String>| match PageFaultSampler::open(
        tids, &cpus, o,
    ) {
        Ok(s) => Ok(s),
        Err(e) if auto_event && o.event != FaultEvent::Software => {
            *note = Some(format!(
                    "the tracepoint exceptions:page_fault_user could not be opened ({}): hinting faults (sampled accesses) were not told from first touches; the software page-fault event was used",
                    describe_open_error(&e, &privs)
                ));
            let sw = PageFaultOptions { event: FaultEvent::Software, ..o.clone() };
            PageFaultSampler::open(tids, &cpus, &sw).map_err(|e| describe_open_error(&e, &privs))
        }
        Err(e) => Err(describe_open_error(&e, &privs)),
    };
    let adaptive = opts.fault_rate_hz > 0;
    // PMU memory-access events (IBS/PEBS), planned from sysfs; opened with the page-fault events.
    let (mem_specs, mem_refused) = if opts.mem_sampling {
        crate::sources::pmu::plan_mem_events(&roots.sys, &privs, opts.mem_rate_hz)
    } else {
        (Vec::new(), Vec::new())
    };
    let mut pmu: Option<Result<crate::sources::pmu::PmuSampler, String>>;
    let open_pmu = |tids: &[u32], on_exec: bool| -> Option<Result<crate::sources::pmu::PmuSampler, String>> {
        if mem_specs.is_empty() {
            return None;
        }
        Some(crate::sources::pmu::PmuSampler::open(
            mem_specs.clone(),
            tids,
            &cpus,
            on_exec,
            ring_exp_for(cpus.len() * tids.len().max(1)),
        ))
    };

    // Start the target and open the page-fault events.
    let attached;
    let pid;
    let command: Vec<String>;
    let mut child: Option<i32> = None;
    let mut pf: Result<PageFaultSampler, String>;
    let start_ns;
    let start_unix_ms;
    match &opts.target {
        Target::Launch(argv) => {
            if argv.is_empty() {
                return Err(RecordError::Usage("no command given to launch".into()));
            }
            let program = resolve_program(&argv[0])?;
            let stopped = spawn_stopped(&program, argv)?;
            pid = stopped.pid;
            attached = false;
            command = argv.clone();
            child = Some(pid);
            let o =
                PageFaultOptions { enable_on_exec: true, ring_exp: ring_exp_for(cpus.len()), ..pf_opts_base.clone() };
            pf = open_faults(&[pid as u32], &o, &mut fault_event_note);
            pmu = open_pmu(&[pid as u32], true);
            start_ns = mono_now_ns();
            start_unix_ms = unix_now_ms();
            if let Err(e) = stopped.release() {
                try_reap(pid, true);
                return Err(match e.raw_os_error() {
                    Some(libc::ENOENT) => RecordError::CommandNotFound(argv[0].clone()),
                    _ => RecordError::Exec { program: argv[0].clone(), error: e },
                });
            }
        }
        Target::Attach(p) => {
            pid = *p;
            attached = true;
            if pid <= 0 || !roots.proc.join(pid.to_string()).is_dir() {
                return Err(RecordError::PidNotFound(pid));
            }
            command = procfs::read_cmdline(&roots.proc, pid).unwrap_or_default();
            let tids: Vec<u32> = procfs::list_tasks(&roots.proc, pid)
                .map_err(|_| RecordError::PidNotFound(pid))?
                .into_iter()
                .map(|t| t as u32)
                .collect();
            let o = PageFaultOptions { ring_exp: ring_exp_for(cpus.len() * tids.len().max(1)), ..pf_opts_base.clone() };
            pf = open_faults(&tids, &o, &mut fault_event_note);
            pmu = open_pmu(&tids, false);
            start_ns = mono_now_ns();
            start_unix_ms = unix_now_ms();
            if let Ok(s) = &mut pf {
                if let Err(e) = s.enable() {
                    pf = Err(format!("enabling page-fault events failed: {e}"));
                }
            }
            if let Some(Ok(m)) = &pmu {
                if let Err(e) = m.enable() {
                    pmu = Some(Err(format!("enabling the PMU memory events failed: {e}")));
                }
            }
            // Threads created between the enumeration and the opening are not followed by
            // inheritance: look again once (duplicates are removed later).
            if let Ok(s) = &mut pf {
                if let Ok(now_tids) = procfs::list_tasks(&roots.proc, pid) {
                    for t in now_tids {
                        if let Err(e) = s.add_task(t as u32) {
                            warnings
                                .push(format!("thread {t} appeared while attaching and could not be followed: {e}"));
                        }
                    }
                    let _ = s.enable();
                }
            }
        }
    }
    let start_ticks = procfs::process_start_ticks(&roots.proc, pid);
    // Per-thread counters: opened for the threads there are now, more as the loop finds them.
    let mut counters: Option<Result<crate::sources::counters::ThreadCounters, String>> = match opts.counters {
        CounterChoice::Off => None,
        choice => {
            use crate::sources::counters::{core_counters, software_counters, ThreadCounters};
            let specs = if choice == CounterChoice::Core { core_counters() } else { software_counters() };
            let r = ThreadCounters::open(specs, pid as u32, !privs.can_profile_kernel());
            Some(r.map(|mut c| {
                for t in procfs::list_tasks(&roots.proc, pid).unwrap_or_default() {
                    c.add_thread(t as u32);
                }
                c
            }))
        }
    };
    // Memory-controller and link traffic (uncore), system-wide per socket.
    let mut uncore: Option<Result<crate::sources::uncore::UncoreCounters, String>> = if opts.uncore {
        let node_of = |cpu: u32| cpu_to_node.get(cpu as usize).map(|&n| n as i32).unwrap_or(-1);
        crate::sources::uncore::UncoreCounters::start(roots, &node_of)
    } else {
        None
    };
    if let Some(Ok(u)) = uncore.as_mut() {
        u.read(0);
    }
    let mut next_counters = Instant::now();
    let numa_maps_ok = roots.proc.join("self/numa_maps").exists();
    if attached {
        // Another user's process: say what is missing before recording nothing.
        let other_user = procfs::process_uid(&roots.proc, pid).is_some_and(|u| u != privs.euid) && privs.euid != 0;
        let maps_denied = numa_maps_ok
            && std::fs::File::open(roots.proc.join(format!("{pid}/numa_maps")))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
        if let Err(e) = &mut pf {
            if other_user {
                e.push_str(&format!(
                    "; pid {pid} belongs to another user: attaching needs root, CAP_SYS_PTRACE or CAP_PERFMON"
                ));
            }
        }
        if maps_denied && pf.is_err() {
            return Err(RecordError::Permission(format!(
                "cannot observe pid {pid}: /proc/{pid}/numa_maps is not readable (needs the same user as the \
                 process, root or CAP_SYS_PTRACE) and page-fault sampling failed: {}",
                pf.as_ref().err().unwrap()
            )));
        }
        if maps_denied {
            warnings.push(format!(
                "/proc/{pid}/numa_maps is not readable (needs the same user, root or CAP_SYS_PTRACE): no page placement snapshots"
            ));
        }
    }
    if let Err(e) = &pf {
        warnings.push(format!("page-fault sampling unavailable, recording /proc data only: {e}"));
    }
    if let Some(Err(e)) = &pmu {
        warnings.push(format!("memory-access sampling (PMU) unavailable: {e}"));
    }
    for w in &warnings {
        eprintln!("numascope: warning: {w}");
    }

    let poller = PollerHandle::spawn(PollerConfig {
        pid,
        interval: opts.interval,
        start_ns,
        roots: roots.clone(),
        cpu_to_node: cpu_to_node.clone(),
        node_ids: topo.nodes.iter().map(|n| n.id).collect(),
        attached,
        numa_maps: numa_maps_ok,
    })
    .map_err(|e| RecordError::Io(format!("cannot start the /proc poller thread: {e}")))?;
    // DAMON (opt-in). Dropping the session on any early return removes the kdamond.
    let damon: Option<Result<crate::sources::damon::DamonSession, String>> = opts.damon.then(|| {
        let admin = Path::new(crate::sources::damon::DEFAULT_ADMIN);
        crate::sources::damon::DamonSession::start(admin, pid, Default::default(), start_ns)
    });
    if let Some(Err(e)) = &damon {
        eprintln!("numascope: warning: DAMON not used: {e}");
    }

    // Main loop.
    let t0 = Instant::now();
    let mut raw: Vec<FaultSample> = Vec::new();
    let mut fresh: Vec<FaultSample> = Vec::with_capacity(1 << 16);
    let mut pages = PageTracker::default();
    let mut other_pids: HashSet<u32> = HashSet::new();
    let mut other_samples: u64 = 0;
    let mut tids_in_samples: HashMap<u32, String> = HashMap::new();
    let mut lost_events: Vec<(u32, u64)> = Vec::new();
    let mut last_lost = 0u64;
    let mut mem_raw: Vec<crate::perfdata::MemSample> = Vec::new();
    let mut mem_other = 0u64;
    let mut drain_pmu = |pmu: &mut Option<Result<crate::sources::pmu::PmuSampler, String>>,
                         mem_raw: &mut Vec<crate::perfdata::MemSample>| {
        if let Some(Ok(m)) = pmu {
            let before = mem_raw.len();
            m.drain(mem_raw);
            // Inherited events also see the process's children: keep one address space.
            let mut k = before;
            for i in before..mem_raw.len() {
                if mem_raw[i].pid == pid {
                    mem_raw.swap(k, i);
                    k += 1;
                } else {
                    mem_other += 1;
                }
            }
            mem_raw.truncate(k);
        }
    };
    // New pages are queried often (every 20 ms at most) so that short-lived processes still get
    // their nodes before they exit.
    let query_every = opts.interval.min(Duration::from_millis(20));
    let mut next_query = Instant::now() + query_every;
    let mut next_progress = Instant::now() + Duration::from_secs(1);
    let limit = opts.duration.map(|d| d.min(MAX_CAPTURE)).unwrap_or(MAX_CAPTURE);
    let mut exited: Option<(i32, String)> = None;
    let mut live = opts.live.clone().map(|sink| crate::live::LiveAggregator::new(sink, pid));
    let mut live_done = 0usize; // raw[..live_done] were counted into live windows, but for:
    let mut live_pending: Vec<usize> = Vec::new(); // samples whose page had no node yet
    let mut next_live = Instant::now() + live.as_ref().map(|l| l.every()).unwrap_or_default();

    let mut absorb = |fresh: &mut Vec<FaultSample>,
                      raw: &mut Vec<FaultSample>,
                      pages: &mut PageTracker,
                      tids: &mut HashMap<u32, String>,
                      hinting: bool| {
        // In time order, so that a page's first fault is classified before its later ones.
        fresh.sort_by_key(|s| s.time_ns);
        for mut s in fresh.drain(..) {
            if s.pid as i32 != pid {
                other_samples += 1;
                other_pids.insert(s.pid);
                continue;
            }
            // NUMA hinting faults: a not-present fault on a page faulted in before (see classify).
            s.kind = classify(s.error_code, hinting, pages.index.contains_key(&(s.addr & !4095)));
            pages.add(&s);
            tids.entry(s.tid).or_insert_with(|| procfs::read_thread_name(&roots.proc, pid, s.tid));
            raw.push(s);
        }
    };

    let stopped = loop {
        if let Ok(s) = &mut pf {
            s.drain(&mut fresh);
            if s.lost > last_lost {
                lost_events.push((us_since(start_ns, mono_now_ns()), s.lost - last_lost));
                last_lost = s.lost;
            }
        }
        absorb(&mut fresh, &mut raw, &mut pages, &mut tids_in_samples, hinting);
        drain_pmu(&mut pmu, &mut mem_raw);

        let now = Instant::now();
        if now >= next_query {
            pages.query_new(pid);
            next_query = now + query_every;
        }
        if let Some(l) = live.as_mut().filter(|_| now >= next_live) {
            next_live = now + l.every();
            let end_us = mono_now_ns().saturating_sub(start_ns) / 1000;
            live_emit(
                l,
                &mut live_done,
                &mut live_pending,
                &raw,
                &mut pages,
                pid,
                true,
                end_us,
                false,
                last_lost,
                roots,
                &cpu_to_node,
            );
        }
        if now >= next_counters {
            next_counters = now + opts.interval;
            let t = us_since(start_ns, mono_now_ns());
            // Balancing may be switched on while recording: hinting faults count from then on.
            if !hinting && matches!(pf.as_ref().map(|s| s.event()), Ok(FaultEvent::Tracepoint(_))) {
                hinting = hinting_on(&roots.proc);
            }
            if let Some(Ok(c)) = counters.as_mut() {
                for tid in procfs::list_tasks(&roots.proc, pid).unwrap_or_default() {
                    c.add_thread(tid as u32);
                }
                c.read(t);
            }
            if let Some(Ok(u)) = uncore.as_mut() {
                u.read(t);
            }
        }
        if opts.progress && now >= next_progress {
            next_progress = now + Duration::from_secs(1);
            eprintln!(
                "numascope: {:>6.1} s  threads {}  pages {}  samples {}  lost {}",
                t0.elapsed().as_secs_f64(),
                tids_in_samples.len().max(poller.threads_seen()),
                pages.pages.len(),
                raw.len(),
                last_lost
            );
        }

        // Stop conditions.
        if let Some(sig) = signal_received() {
            break Stopped { reason: "signal", exit: None, signal: Some(sig), at_ns: mono_now_ns() };
        }
        if opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            break Stopped { reason: "signal", exit: None, signal: None, at_ns: mono_now_ns() };
        }
        if let Some(c) = child {
            if let Some(e) = try_reap(c, false) {
                exited = Some(e.clone());
                break Stopped { reason: "process-exit", exit: Some(e), signal: None, at_ns: mono_now_ns() };
            }
        } else if !procfs::process_alive(&roots.proc, pid, start_ticks) {
            break Stopped { reason: "process-exit", exit: None, signal: None, at_ns: mono_now_ns() };
        }
        if t0.elapsed() >= limit {
            if opts.duration.is_none_or(|d| d > MAX_CAPTURE) {
                notes.push(format!(
                    "stopped at {} s: trace format v1 stores times as u32 microseconds (at most 71 minutes)",
                    MAX_CAPTURE.as_secs()
                ));
            }
            break Stopped { reason: "duration", exit: None, signal: None, at_ns: mono_now_ns() };
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Final observation while the process may still be alive, then stop the events; the
    // capture ends when they are disabled.
    let damon_cfg = crate::sources::damon::DamonConfig::default();
    let damon: Option<Result<crate::sources::damon::DamonData, String>> = damon.map(|d| d.map(|s| s.finish()));
    let mut procfs_data = poller.finish();
    // Plans `numascope apply` carried out on this process during the capture (apply/audit.rs).
    let applied_plans =
        crate::apply::audit::collect(&crate::apply::audit::spool_dir(), pid, start_ticks, start_unix_ms, unix_now_ms());
    for e in &applied_plans {
        let t = e["finishedUnixMs"].as_u64().unwrap_or(start_unix_ms).saturating_sub(start_unix_ms);
        procfs_data.events.push(crate::sources::procfs::PendingEvent {
            time_us: (t.saturating_mul(1000)).min(u32::MAX as u64) as u32,
            kind: "plan-applied",
            tid: None,
            value: e["report"]["pages"]["moved"].as_i64().unwrap_or(-1),
            detail: crate::apply::audit::describe(e),
        });
    }
    let numa_snapshots = procfs_data.numa_maps_snapshots;
    if let Ok(s) = &mut pf {
        let _ = s.disable();
    }
    if let Some(Ok(m)) = &pmu {
        let _ = m.disable();
    }
    let end_ns = mono_now_ns().max(stopped.at_ns);
    drain_pmu(&mut pmu, &mut mem_raw);
    if let Some(Ok(c)) = counters.as_mut() {
        c.read(us_since(start_ns, end_ns));
    }
    if let Some(Ok(u)) = uncore.as_mut() {
        u.read(us_since(start_ns, end_ns));
    }
    if let Ok(s) = &mut pf {
        s.drain(&mut fresh);
        if s.lost > last_lost {
            lost_events.push((us_since(start_ns, end_ns), s.lost - last_lost));
        }
    }
    absorb(&mut fresh, &mut raw, &mut pages, &mut tids_in_samples, hinting);
    // Nodes of the pages only the PMU saw (move_pages, while the process is alive).
    let mut mem_page_nodes: HashMap<u64, i8> = HashMap::new();
    if exited.is_none() && procfs::process_alive(&roots.proc, pid, start_ticks) {
        pages.query_all(pid);
        let mut addrs: Vec<u64> =
            mem_raw.iter().map(|m| m.addr & !4095).filter(|a| !pages.index.contains_key(a)).collect();
        addrs.sort_unstable();
        addrs.dedup();
        if let Ok(nodes) = crate::numa_sys::query_page_nodes(pid, &addrs) {
            for (a, n) in addrs.iter().zip(nodes) {
                if (0..=i8::MAX as i32).contains(&n) {
                    mem_page_nodes.insert(*a, n as i8);
                }
            }
        }
    }
    if let Some(l) = live.as_mut() {
        let lost = pf.as_ref().map(|s| s.lost).unwrap_or(0);
        let end_us = end_ns.saturating_sub(start_ns) / 1000;
        live_emit(
            l,
            &mut live_done,
            &mut live_pending,
            &raw,
            &mut pages,
            pid,
            false,
            end_us,
            true,
            lost,
            roots,
            &cpu_to_node,
        );
    }

    // A launched command still running when we stop is terminated.
    let mut exit = stopped.exit;
    if let (Some(c), None) = (child, &exit) {
        // A Ctrl-C in a terminal reaches the command too: give it a moment to exit on its own.
        let grace = if stopped.reason == "signal" { Duration::from_millis(300) } else { Duration::ZERO };
        let deadline = Instant::now() + grace;
        loop {
            if let Some(e) = try_reap(c, false) {
                exit = Some(e);
                break;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    if let (Some(c), None) = (child, &exit) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(c, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut reaped = None;
        while Instant::now() < deadline {
            if let Some(e) = try_reap(c, false) {
                reaped = Some(e);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if reaped.is_none() {
            unsafe { libc::kill(c, libc::SIGKILL) };
            reaped = try_reap(c, true);
        }
        notes.push(format!(
            "the launched command was still running when the capture stopped ({}); numascope sent it SIGTERM{}",
            stopped.reason,
            if reaped.as_ref().is_some_and(|(code, _)| *code == 128 + libc::SIGKILL) {
                " and then SIGKILL"
            } else {
                ""
            }
        ));
        exit = None; // it did not exit on its own during the capture
    }
    if let Some(sig) = stopped.signal {
        notes.push(format!("capture stopped by {}", signal_name(sig)));
    } else if stopped.reason == "signal" {
        notes.push("capture stopped on request (stop flag set by the embedding program)".into());
    }

    let duration_us = end_ns.saturating_sub(start_ns) / 1000;
    if let Some((_, how)) = &exit {
        notes.push(format!("process {pid} {how} after {:.2} s", duration_us as f64 / 1e6));
    }

    // Adaptive fault sampling: how far the kernel raised the period.
    let max_period = raw.iter().map(|f| f.period).max().unwrap_or(1);
    let subsampled = raw.iter().filter(|f| f.period > 1).count();

    // ---- assemble the trace ------------------------------------------------------------------
    let mut trace = build_trace(BuildInput {
        start_ns,
        pid,
        raw,
        pages,
        procfs: procfs_data,
        tids_in_samples,
        cpu_to_node: &cpu_to_node,
        lost_events,
        exit: exit.clone().map(|(c, how)| (us_since(start_ns, stopped.at_ns.min(end_ns)), c, how)),
        notes: &mut notes,
    });

    notes.push(
        "node rule: samples.node = node reported by the first move_pages query after the fault (-1 if none answered); \
         pages.node = last node move_pages reported (all pages are queried again at the end while the process is alive); \
         a page never answered gets the node of its region's last numa_maps snapshot when all that region's pages were on one node, else -1"
            .into(),
    );
    for w in &warnings {
        notes.push(format!("warning: {w}"));
    }
    if other_samples > 0 {
        let mut pids: Vec<u32> = other_pids.into_iter().collect();
        pids.sort_unstable();
        notes.push(format!(
            "{other_samples} page-fault samples from child processes (pids {}) were not kept: a trace holds one address space",
            pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    let mem_rows = crate::sources::pmu::add_mem_samples(&mut trace, &mem_raw, start_ns, &mem_page_nodes);
    let counter_rows = match &counters {
        Some(Ok(c)) => c.add_to_trace(&mut trace),
        _ => 0,
    };
    if let Some(Ok(u)) = &uncore {
        u.add_to_trace(&mut trace);
    }
    let mut used_sources: Vec<SourceStatus> = Vec::new();
    match &counters {
        Some(Ok(c)) => used_sources.push(SourceStatus {
            id: "core-counters".into(),
            status: "used".into(),
            reason: Some(format!(
                "per-thread counting events {} ({}), {} threads, {counter_rows} rows (scope thread, cumulative, scaled by time_enabled/time_running{}){}{}",
                c.names().join(", "),
                if opts.counters == CounterChoice::Software { "software events: this machine's stand-in for the core set" } else { "hardware" },
                c.thread_count(),
                if c.multiplexed_reads > 0 { format!("; {} reads were multiplexed", c.multiplexed_reads) } else { String::new() },
                if c.exclude_kernel() { "; user mode only (no kernel profiling permission)" } else { "" },
                if c.failed_threads.is_empty() { String::new() } else { format!("; {} threads could not be followed: {}", c.failed_threads.len(), c.failed_threads[0].1) }
            )),
            sample_period: None,
            interval_ms: Some(opts.interval.as_millis() as u64),
        }),
        Some(Err(e)) => used_sources.push(SourceStatus { id: "core-counters".into(), status: "failed".into(), reason: Some(e.clone()), sample_period: None, interval_ms: None }),
        None => {}
    }
    used_sources.extend(crate::sources::uncore::source_status(&uncore, opts.interval.as_millis() as u64));
    for (id, why) in &mem_refused {
        used_sources.push(SourceStatus {
            id: (*id).into(),
            status: "failed".into(),
            reason: Some(why.clone()),
            sample_period: None,
            interval_ms: None,
        });
    }
    match &pmu {
        Some(Ok(m)) => {
            let c = &m.counts;
            for id in m.sources() {
                let n = mem_raw.iter().filter(|s| s.event == id).count();
                used_sources.push(SourceStatus {
                    id: id.into(),
                    status: "used".into(),
                    reason: Some(format!(
                        "{n} memory-access samples at about {} samples/s per event (frequency mode; weight = the period in force), {} event(s); \
                         all PMU events together: {} samples read, {} not a load/store, {} without a data address, {} undecodable, {} lost{}",
                        opts.mem_rate_hz,
                        m.event_count(),
                        c.samples + c.skipped_not_load_store + c.skipped_no_address,
                        c.skipped_not_load_store,
                        c.skipped_no_address,
                        c.bad,
                        c.lost,
                        if mem_other > 0 { format!(", {mem_other} from child processes not kept") } else { String::new() }
                    )),
                    sample_period: None,
                    interval_ms: None,
                });
            }
        }
        Some(Err(e)) => {
            for spec in &mem_specs {
                if !used_sources.iter().any(|u| u.id == spec.source) {
                    used_sources.push(SourceStatus {
                        id: spec.source.into(),
                        status: "failed".into(),
                        reason: Some(e.clone()),
                        sample_period: None,
                        interval_ms: None,
                    });
                }
            }
        }
        None => {}
    }
    if let Some(Ok(m)) = &pmu {
        if m.counts.lost > 0 {
            notes.push(format!("{} PMU memory-access records were lost (ring buffers full)", m.counts.lost));
        }
    }
    let lost = pf.as_ref().map(|s| s.lost).unwrap_or(0);
    // Hinting-fault rows (accesses the NUMA-balancing scanner caught), by op.
    let (hint_loads, hint_stores) = {
        let ev = &trace.samples.event;
        match ev.values.iter().position(|v| v == "access-fault") {
            None => (0usize, 0usize),
            Some(k) => {
                let store = trace.samples.op.values.iter().position(|v| v == "store").map(|i| i as u16);
                let mut loads = 0;
                let mut stores = 0;
                for (i, &key) in ev.keys.iter().enumerate() {
                    if key as usize == k {
                        if Some(trace.samples.op.keys[i]) == store {
                            stores += 1;
                        } else {
                            loads += 1;
                        }
                    }
                }
                (loads, stores)
            }
        }
    };
    let hint_rows = hint_loads + hint_stores;
    if let Some(n) = &fault_event_note {
        notes.push(n.clone());
    }
    if hinting && !hinting_at_start {
        notes.push("automatic NUMA balancing was switched on during the recording: hinting faults are access samples from then on".into());
    }
    let pf_event = match pf.as_ref().map(|s| s.event()) {
        Ok(FaultEvent::Tracepoint(_)) => format!(
            "tracepoint exceptions:page_fault_user ({})",
            if hinting {
                format!("NUMA balancing on: a repeat fault on a page is a hinting fault, a load or store by the error code's write bit; {hint_rows} access rows")
            } else {
                "NUMA balancing was off, so no hinting faults: every fault is an ordinary one".to_string()
            }
        ),
        _ => "software page-fault event".to_string(),
    };
    let pf_status = match &pf {
        Ok(s) => SourceStatus {
            id: "page-faults".into(),
            status: "used".into(),
            reason: Some(format!(
                "{pf_event}, {}, {} event(s) ({} cpus{}), {} KiB ring each{}",
                if adaptive {
                    format!(
                        "adaptive: every fault while a thread faults under {} /s, about {} samples/s above (kernel frequency mode; each sample's weight is the period in force: {})",
                        opts.fault_rate_hz,
                        opts.fault_rate_hz,
                        if max_period > 1 { format!("{subsampled} samples had a period above 1, up to {max_period}") } else { "every fault was sampled".to_string() }
                    )
                } else if fault_period == 1 {
                    "every fault sampled".to_string()
                } else {
                    format!("one fault in {fault_period} sampled")
                },
                s.event_count(),
                cpus.len(),
                if attached { format!(" x {} threads", s.opened_tids().len()) } else { String::new() },
                s.ring_bytes_per_event() / 1024,
                if pf_opts_base.exclude_kernel {
                    "; user-mode faults only (no kernel profiling permission)"
                } else {
                    ""
                }
            )),
            sample_period: if adaptive { None } else { Some(fault_period) },
            interval_ms: None,
        },
        Err(e) => SourceStatus {
            id: "page-faults".into(),
            status: "failed".into(),
            reason: Some(e.clone()),
            sample_period: if adaptive { None } else { Some(fault_period) },
            interval_ms: None,
        },
    };
    let procfs_status = SourceStatus {
        id: "procfs".into(),
        status: "used".into(),
        reason: Some(format!(
            "thread cpu (task stat), se.nr_migrations, numa_maps ({numa_snapshots} snapshots), vmstat and node numastat, polled"
        )),
        sample_period: None,
        interval_ms: Some(opts.interval.as_millis() as u64),
    };
    let sysfs_status = SourceStatus {
        id: "sysfs-topology".into(),
        status: "used".into(),
        reason: Some(probe.source("sysfs-topology").map(|s| s.reason.clone()).unwrap_or_default()),
        sample_period: None,
        interval_ms: None,
    };
    let mut capabilities = probe.capture_capabilities();
    if !adaptive && fault_period > 1 {
        if let Some(c) = capabilities.iter_mut().find(|c| c.metric == "first-touch") {
            c.reason = format!(
                "software page-fault sampling, one fault in {fault_period}: a page's first touch is known only when its fault was sampled (about 1 page in {fault_period}); page placement (numa_maps) is unaffected"
            );
        }
    }
    if (!adaptive && fault_period == 1) || (adaptive && max_period <= 1) {
        if let Some(c) = capabilities.iter_mut().find(|c| c.metric == "first-touch") {
            c.reason = if adaptive {
                format!(
                    "page-fault sampling: every fault was sampled (adaptive sampling at {} /s never had to thin them)",
                    opts.fault_rate_hz
                )
            } else {
                "page-fault sampling, every fault (--fault-period 1)".to_string()
            };
        }
    }
    if adaptive && max_period > 1 {
        if let Some(c) = capabilities.iter_mut().find(|c| c.metric == "first-touch") {
            c.reason = format!(
                "adaptive page-fault sampling (at most about {} samples/s per thread): while the program faulted faster, faults were sampled ({subsampled} samples stood for up to {max_period} faults each), so a page's first touch is known only when its fault was sampled; record with --fault-period 1 for every first touch; page placement (numa_maps) is unaffected",
                opts.fault_rate_hz
            );
        }
    }
    crate::sources::uncore::update_capabilities(&mut capabilities, &uncore, opts.uncore);
    if counter_rows > 0 && opts.counters == CounterChoice::Core {
        for (metric, what) in [("ipc", "instructions / cycles"), ("l3-mpki", "llc-misses per 1000 instructions")] {
            if let Some(c) = capabilities.iter_mut().find(|c| c.metric == metric) {
                c.status = "measured".into();
                c.reason = format!("{what} from per-thread counting events ({counter_rows} rows)");
            }
        }
    } else if let Some(Err(e)) = &counters {
        for metric in ["ipc", "l3-mpki"] {
            if let Some(c) = capabilities.iter_mut().find(|c| c.metric == metric) {
                c.status = "unavailable".into();
                c.reason = format!("core counters: {e}");
            }
        }
    }
    if mem_rows == 0 && hint_rows > 0 {
        if let Some(c) = capabilities.iter_mut().find(|c| c.metric == "memory-accesses") {
            c.status = "estimated".into();
            c.reason = format!(
                "from NUMA hinting faults ({hint_loads} loads, {hint_stores} stores; automatic NUMA balancing was on): which thread touched which page, about once per page per scan pass of the kernel's balancer, not how often; traffic from them is relative, and stores include copy-on-write faults"
            );
        }
    }
    if mem_rows > 0 {
        let by: Vec<&str> = pmu.as_ref().and_then(|p| p.as_ref().ok()).map(|m| m.sources()).unwrap_or_default();
        for (metric, what) in [
            ("memory-accesses", "sampled memory accesses"),
            ("access-latency", "load latency"),
            ("data-source", "data source per access"),
        ] {
            if let Some(c) = capabilities.iter_mut().find(|c| c.metric == metric) {
                c.status = "measured".into();
                c.reason = format!("{what} from {} ({mem_rows} samples)", by.join(", "));
            }
        }
    } else {
        // The probe may have promised IBS/PEBS: say why this recording has no access samples.
        let why: Vec<String> = used_sources
            .iter()
            .filter(|u| u.status != "used")
            .map(|u| format!("{}: {}", u.id, u.reason.clone().unwrap_or_default()))
            .collect();
        for metric in ["memory-accesses", "access-latency", "data-source"] {
            if let Some(c) = capabilities.iter_mut().find(|c| c.metric == metric && c.status == "measured") {
                if metric == "memory-accesses" && hint_rows > 0 {
                    continue;
                }
                c.status = "unavailable".into();
                c.reason = if !opts.mem_sampling {
                    "PMU memory-access sampling was turned off (--no-pmu)".into()
                } else if why.is_empty() {
                    "the PMU memory events recorded no load/store sample with an address".into()
                } else {
                    format!("PMU memory-access sampling failed: {}", why.join("; "))
                };
            }
        }
    }
    if let Err(e) = &pf {
        if let Some(c) = capabilities.iter_mut().find(|c| c.metric == "first-touch") {
            c.status = "unavailable".into();
            c.reason = format!("page-fault sampling failed: {e}");
        }
    }
    let host = topo.hostname.clone();
    trace.manifest = Manifest {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        producer: Producer::default(),
        created_at: iso8601_utc(unix_now_ms()),
        origin: Origin {
            kind: "recorded".into(),
            generator: "numascope record".into(),
            seed: None,
            model: None,
            description: format!(
                "{} {} (pid {pid}) on {host} for {:.1} s: page faults{} and /proc placement",
                if attached { "Attached to" } else { "Launched" },
                command.first().map(|s| s.as_str()).unwrap_or("?"),
                duration_us as f64 / 1e6,
                if mem_rows > 0 {
                    ", PMU memory-access samples"
                } else if hint_rows > 0 {
                    ", NUMA hinting faults"
                } else {
                    ""
                }
            ),
            command: opts.command_line.clone(),
            from: None,
        },
        machine: topo.machine(),
        capture: Capture {
            start_monotonic_ns: start_ns.to_string(),
            start_unix_ms,
            duration_us,
            stop_reason: stopped.reason.into(),
            sources: probe.capture_sources(&[vec![pf_status, procfs_status, sysfs_status], used_sources].concat()),
            capabilities,
            lost_samples: lost,
            sample_count: 0,
            notes: std::mem::take(&mut notes),
        },
        process: Some(ProcessInfo {
            pid,
            start_time_ticks: start_ticks.map(|t| t.to_string()),
            command,
            attached,
            exit_code: exit.as_ref().map(|(c, _)| *c),
        }),
        applied_plans,
        tables: Vec::new(),
    };
    for n in &topo.notes {
        trace.manifest.capture.notes.push(n.clone());
    }
    let damon_summary = crate::sources::damon::add_to_trace(&mut trace, damon.as_ref(), &damon_cfg, &mut warnings);
    // If the output cannot be written now (disk full, directory gone), the recording is kept in
    // a private fallback file and the error names it; an existing trace at the output stays.
    let size = writer::write_trace_or_keep(&mut trace, &opts.output).map_err(|f| RecordError::Io(f.to_string()))?;

    let summary = RecordSummary {
        output: opts.output.clone(),
        size_bytes: size,
        duration_us,
        stop_reason: stopped.reason.into(),
        pid,
        exit_code: exit.map(|(c, _)| c),
        threads: trace.threads.tid.len(),
        pages: trace.pages.address.len(),
        samples: trace.samples.time_us.len(),
        lost_samples: lost,
        page_faults: match &pf {
            Ok(_) => "used".into(),
            Err(e) => format!("failed: {e}"),
        },
        damon: damon_summary,
        warnings,
    };
    Ok(summary)
}

/// Counts the samples absorbed since the last live window (`raw[*done..]`) with the node of
/// their page, then sends a window. `query`: ask move_pages about new pages first (the periodic
/// query the loop does anyway), so that a window's faults have the node the trace will give them.
/// A sample whose page has no node yet (move_pages answered before the fault had mapped the
/// page) waits in `pending` for a later window, the final one at the latest, so that it is
/// counted with the node the trace gives it.
#[allow(clippy::too_many_arguments)]
fn live_emit(
    agg: &mut crate::live::LiveAggregator,
    done: &mut usize,
    pending: &mut Vec<usize>,
    raw: &[FaultSample],
    pages: &mut PageTracker,
    pid: i32,
    query: bool,
    end_us: u64,
    is_final: bool,
    lost: u64,
    roots: &Roots,
    cpu_to_node: &[i8],
) {
    if query {
        pages.query_new(pid);
    }
    let waiting = std::mem::take(pending);
    for k in waiting.into_iter().chain(*done..raw.len()) {
        let s = &raw[k];
        let node = pages.index.get(&(s.addr & !4095)).map(|&i| pages.pages[i].node_first).unwrap_or(-1);
        if node < 0 && !is_final {
            pending.push(k);
            continue;
        }
        agg.fault(s.tid, s.cpu, node);
    }
    *done = raw.len();
    agg.emit(end_us, is_final, pages.pages.iter().map(|p| p.node_last), lost, &roots.proc, cpu_to_node);
}

fn describe_open_error(e: &crate::sources::pagefault::OpenError, privs: &Privileges) -> String {
    match e.error.raw_os_error() {
        Some(libc::ESRCH) => format!("{}: the task exited before the events could be opened", e),
        _ if e.stage.starts_with("mmap") => format!(
            "{e}: the perf ring buffer could not be mapped (locked-memory limit: /proc/sys/kernel/perf_event_mlock_kb, ulimit -l)"
        ),
        _ => format!("{} (task {}, cpu {}): {}", e.stage, e.tid, e.cpu, perf_open_error(&e.error, privs)),
    }
}

struct BuildInput<'a> {
    start_ns: u64,
    pid: i32,
    raw: Vec<FaultSample>,
    pages: PageTracker,
    procfs: ProcfsData,
    tids_in_samples: HashMap<u32, String>,
    cpu_to_node: &'a [i8],
    lost_events: Vec<(u32, u64)>,
    /// (time_us, code, description)
    exit: Option<(u32, i32, String)>,
    notes: &'a mut Vec<String>,
}

/// Region lookup: newest snapshot wins where mappings overlap.
struct RegionMap {
    /// start -> (end, region index)
    map: BTreeMap<u64, (u64, usize)>,
}

impl RegionMap {
    fn new(regions: &[crate::sources::procfs::RegionObs]) -> Self {
        let mut order: Vec<usize> = (0..regions.len()).collect();
        order.sort_by_key(|&i| (regions[i].last_seen_us, i));
        let mut map: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
        for i in order {
            let (s, e) = (regions[i].start, regions[i].end);
            // Cut older entries that overlap [s, e).
            let overlapping: Vec<(u64, (u64, usize))> =
                map.range(..e).filter(|(&ks, &(ke, _))| ks < e && ke > s).map(|(&k, &v)| (k, v)).collect();
            for (ks, (ke, idx)) in overlapping {
                map.remove(&ks);
                if ks < s {
                    map.insert(ks, (s, idx));
                }
                if ke > e {
                    map.insert(e, (ke, idx));
                }
            }
            map.insert(s, (e, i));
        }
        RegionMap { map }
    }

    fn find(&self, addr: u64) -> Option<usize> {
        let (_, &(end, idx)) = self.map.range(..=addr).next_back()?;
        (addr < end).then_some(idx)
    }
}

fn build_trace(mut inp: BuildInput<'_>) -> TraceData {
    let start_ns = inp.start_ns;
    let p = &inp.procfs;

    // Samples in time order, exact duplicates (two events seeing one fault) removed.
    inp.raw.sort_by_key(|s| (s.time_ns, s.tid, s.addr));
    inp.raw.dedup_by_key(|s| (s.time_ns, s.tid, s.addr));

    // Threads: union of the poller's and the samples'.
    struct T {
        tid: i32,
        name: String,
        first: u32,
        last: u32,
        migrations: i64,
    }
    let mut threads: HashMap<i32, T> = HashMap::new();
    for (tid, o) in &p.threads {
        threads.insert(
            *tid,
            T {
                tid: *tid,
                name: o.name.clone(),
                first: o.first_seen_us,
                last: o.last_seen_us,
                migrations: o.migrations(),
            },
        );
    }
    for s in &inp.raw {
        let t = us_since(start_ns, s.time_ns);
        let e = threads.entry(s.tid as i32).or_insert_with(|| T {
            tid: s.tid as i32,
            name: inp.tids_in_samples.get(&s.tid).cloned().unwrap_or_default(),
            first: t,
            last: t,
            migrations: -1,
        });
        e.first = e.first.min(t);
        e.last = e.last.max(t);
    }
    let mut tlist: Vec<T> = threads.into_values().collect();
    tlist.sort_by_key(|t| (t.first, t.tid));
    let tindex: HashMap<i32, usize> = tlist.iter().enumerate().map(|(i, t)| (t.tid, i)).collect();
    let mut out_threads = Threads::default();
    for t in &tlist {
        out_threads.tid.push(t.tid);
        out_threads.pid.push(inp.pid);
        out_threads.name.push(if t.name.is_empty() { "?".into() } else { t.name.clone() });
        out_threads.first_seen_us.push(t.first);
        out_threads.last_seen_us.push(t.last);
        out_threads.migrations.push(t.migrations);
    }

    // Regions.
    let mut regions = Regions::default();
    for r in &p.regions {
        regions.start.push(r.start);
        regions.end.push(r.end);
        regions.kind.push(r.kind);
        regions.path.push(r.path.clone());
        regions.policy.push(r.policy.clone());
        regions.alloc_site.push(None);
    }
    let rmap = RegionMap::new(&p.regions);
    let region_nodes = p.last_region_nodes();
    let region_page_size: HashMap<usize, u32> = {
        let rp = &p.region_placements;
        (0..rp.time_us.len()).map(|i| (rp.region[i] as usize, rp.page_size[i])).collect()
    };

    // Pages in first-touch order.
    let mut page_order: Vec<usize> = (0..inp.pages.pages.len()).collect();
    page_order.sort_by_key(|&i| (inp.pages.pages[i].first_time_ns, inp.pages.pages[i].addr));
    let mut page_index = vec![0i32; inp.pages.pages.len()];
    let mut out_pages = Pages::default();
    let mut fallback_used = 0usize;
    let mut unknown_nodes = 0usize;
    for (row, &i) in page_order.iter().enumerate() {
        page_index[i] = row as i32;
        let ps = &inp.pages.pages[i];
        let region = rmap.find(ps.addr);
        let mut node = ps.node_last;
        if node < 0 {
            if let Some(nodes) = region.and_then(|r| region_nodes.get(&r)) {
                if nodes.len() == 1 {
                    node = nodes[0].0;
                    fallback_used += 1;
                }
            }
        }
        if node < 0 {
            unknown_nodes += 1;
        }
        out_pages.address.push(ps.addr);
        out_pages.region.push(region.map(|r| r as i32).unwrap_or(-1));
        out_pages.node.push(node);
        out_pages.page_size.push(region.and_then(|r| region_page_size.get(&r).copied()).unwrap_or(4096));
        if ps.first_time_ns == u64::MAX {
            // Seen only in hinting faults: touched before the recording started.
            out_pages.first_touch_us.push(-1);
            out_pages.first_touch_thread.push(-1);
            out_pages.first_touch_cpu.push(-1);
        } else {
            out_pages.first_touch_us.push(us_since(start_ns, ps.first_time_ns) as i64);
            out_pages.first_touch_thread.push(tindex.get(&(ps.first_tid as i32)).map(|&t| t as i32).unwrap_or(-1));
            out_pages.first_touch_cpu.push(ps.first_cpu.min(i16::MAX as u32) as i16);
        }
    }
    if fallback_used > 0 {
        inp.notes.push(format!(
            "{fallback_used} pages were never answered by move_pages (the process had exited, or the query was refused): their node comes from the last numa_maps snapshot of their region, which had all its pages on one node"
        ));
    }
    if unknown_nodes > 0 {
        inp.notes.push(format!("{unknown_nodes} pages have no known node (-1): never answered by move_pages and not in a single-node region"));
    }
    if let Some(e) = &inp.pages.query_error {
        inp.notes.push(e.clone());
    }

    // Samples table.
    let mut s = Samples::default();
    let k_fault = s.op.intern("fault");
    let k_pf = s.event.intern("page-fault");
    let k_unknown = s.data_source.intern("unknown");
    // Hinting faults (error code: protection fault while NUMA balancing was on) are accesses:
    // op load/store, event `access-fault`. Keys are interned only when such a row exists.
    let mut access_keys: Option<(u16, u16, u16)> = None;
    s.time_us.reserve(inp.raw.len());
    for f in &inp.raw {
        let pi = inp.pages.index[&(f.addr & !4095)];
        s.time_us.push(us_since(start_ns, f.time_ns));
        s.thread.push(tindex[&(f.tid as i32)] as u32);
        s.cpu.push(f.cpu.min(i16::MAX as u32) as i16);
        s.page.push(page_index[pi]);
        s.offset.push((f.addr & 4095) as u16);
        match f.kind {
            FaultKind::Touch => {
                s.op.push_key(k_fault);
                s.event.push_key(k_pf);
            }
            kind => {
                let (load, store, ev) = *access_keys
                    .get_or_insert_with(|| (s.op.intern("load"), s.op.intern("store"), s.event.intern("access-fault")));
                s.op.push_key(if kind == FaultKind::AccessStore { store } else { load });
                s.event.push_key(ev);
            }
        }
        s.data_source.push_key(k_unknown);
        s.hops.push(-1);
        s.node.push(inp.pages.pages[pi].node_first);
        s.latency_cycles.push(0);
        s.weight.push(f.period.clamp(1, u32::MAX as u64) as u32);
    }

    // Thread placements.
    let mut tp = ThreadPlacements::default();
    for &(t, tid, cpu, node) in &p.placements {
        if let Some(&ti) = tindex.get(&tid) {
            tp.time_us.push(t);
            tp.thread.push(ti as u32);
            tp.cpu.push(cpu);
            tp.node.push(if cpu >= 0 { inp.cpu_to_node.get(cpu as usize).copied().unwrap_or(node) } else { -1 });
        }
    }

    // Events.
    let mut ev = Events::default();
    let mut pending: Vec<PendingEvent> = p.events.clone();
    for &(t, n) in &inp.lost_events {
        pending.push(PendingEvent {
            time_us: t,
            kind: "lost-samples",
            tid: None,
            value: n as i64,
            detail: format!("the kernel dropped {n} page-fault samples (ring buffer full)"),
        });
    }
    if let Some((t, code, how)) = &inp.exit {
        pending.push(PendingEvent {
            time_us: *t,
            kind: "process-exit",
            tid: None,
            value: *code as i64,
            detail: format!("process {} {how}", inp.pid),
        });
    }
    pending.sort_by_key(|e| e.time_us);
    for e in pending {
        ev.time_us.push(e.time_us);
        ev.kind.push(e.kind);
        ev.thread.push(e.tid.and_then(|t| tindex.get(&t)).map(|&i| i as i32).unwrap_or(-1));
        ev.value.push(e.value);
        ev.detail.push(e.detail);
    }

    if p.sched_unavailable {
        inp.notes.push(
            "/proc/PID/task/TID/sched unreadable (kernel without CONFIG_SCHED_DEBUG?): threads.migrations is -1".into(),
        );
    }
    for pr in &p.problems {
        inp.notes.push(pr.clone());
    }

    TraceData {
        manifest: empty_manifest(),
        samples: s,
        pages: out_pages,
        threads: out_threads,
        regions,
        thread_placements: tp,
        region_placements: p.region_placements.clone(),
        counters: p.counters.clone(),
        events: ev,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::procfs::RegionObs;

    fn r(start: u64, end: u64, t: u32) -> RegionObs {
        RegionObs { start, end, kind: "anon", path: None, policy: "default".into(), first_seen_us: t, last_seen_us: t }
    }

    #[test]
    fn region_map_newest_wins() {
        let regs = vec![r(0x1000, 0x9000, 10), r(0x3000, 0x5000, 20), r(0x20000, 0x30000, 5)];
        let m = RegionMap::new(&regs);
        assert_eq!(m.find(0x1000), Some(0));
        assert_eq!(m.find(0x2fff), Some(0));
        assert_eq!(m.find(0x3000), Some(1));
        assert_eq!(m.find(0x4fff), Some(1));
        assert_eq!(m.find(0x5000), Some(0));
        assert_eq!(m.find(0x8fff), Some(0));
        assert_eq!(m.find(0x9000), None);
        assert_eq!(m.find(0x25000), Some(2));
        assert_eq!(m.find(0x0), None);
    }

    #[test]
    fn ring_sizes() {
        assert_eq!(ring_exp_for(2), 9);
        assert!(ring_exp_for(4096) >= 2 && ring_exp_for(4096) < 9);
    }

    #[test]
    fn resolve_program_errors() {
        assert!(matches!(resolve_program("definitely-not-a-command-xyz"), Err(RecordError::CommandNotFound(_))));
        assert!(resolve_program("sh").is_ok());
        assert!(matches!(resolve_program("/nonexistent/prog"), Err(RecordError::CommandNotFound(_))));
    }
}
