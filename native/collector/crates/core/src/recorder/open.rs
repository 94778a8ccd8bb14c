//! The open phase: check the output and the options, choose the fault event, start (or find) the
//! target with its events open, then the other sources (counters, uncore, the /proc poller,
//! DAMON). Nothing is printed: problems become [`Warning`]s on the session.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::alloc::{self, AllocState};
use super::balancing::{hinting_on, BalancingGuard};
use super::launch::{resolve_program, spawn_stopped, tostop_warning, try_reap};
use super::options::{CounterChoice, FaultEventChoice, NumaBalancingChoice, RecordOptions, Target, MAX_CAPTURE};
use super::pages::PageTracker;
use super::placement_scan::PageScanner;
use super::session::{Clock, Faults, Live, Mem, Seen, Session};
use super::{RecordError, Warning};
use crate::privileges::{perf_open_error, Privileges};
use crate::probe::Probe;
use crate::procfs;
use crate::sources::counters::ThreadCounters;
use crate::sources::damon::DamonSession;
use crate::sources::pagefault::{self, FaultEvent, PageFaultOptions, PageFaultSampler};
use crate::sources::pmu::{self, PmuSampler};
use crate::sources::procfs::{PollerConfig, PollerHandle};
use crate::sources::uncore::UncoreCounters;
use crate::time::{mono_now_ns, unix_now_ms};
use crate::topology::{Roots, Topology};
use crate::trace::writer;

pub(super) fn ring_exp_for(events: usize) -> u8 {
    // Budget ~256 MiB of ring buffers in all, at most 2 MiB (2^9 pages) per event.
    let budget_pages = (256usize << 20) / 4096;
    let per = (budget_pages / events.max(1)).max(4);
    let exp = (usize::BITS - 1 - per.leading_zeros()) as u8;
    exp.clamp(2, 9)
}

fn describe_open_error(e: &pagefault::OpenError, privs: &Privileges) -> String {
    match e.error.raw_os_error() {
        Some(libc::ESRCH) => format!("{}: the task exited before the events could be opened", e),
        _ if e.stage.starts_with("mmap") => format!(
            "{e}: the perf ring buffer could not be mapped (locked-memory limit: /proc/sys/kernel/perf_event_mlock_kb, ulimit -l)"
        ),
        _ => format!("{} (task {}, cpu {}): {}", e.stage, e.tid, e.cpu, perf_open_error(&e.error, privs)),
    }
}

/// How the page-fault and PMU events will be opened, decided before the target starts.
struct Plan<'a> {
    privs: &'a Privileges,
    cpus: &'a [u32],
    faults: Faults,
    mem: Mem,
}

impl Plan<'_> {
    /// Opens the fault events; in auto mode a tracepoint that cannot be opened (permissions:
    /// its raw records need CAP_PERFMON) falls back to the software event, with a note.
    fn open_faults(&mut self, tids: &[u32], o: &PageFaultOptions) -> Result<PageFaultSampler, String> {
        match PageFaultSampler::open(tids, self.cpus, o) {
            Ok(s) => Ok(s),
            Err(e) if self.faults.auto && o.event != FaultEvent::Software => {
                self.faults.note = Some(format!(
                    "the tracepoint exceptions:page_fault_user could not be opened ({}): hinting faults (sampled accesses) were not told from first touches; the software page-fault event was used",
                    describe_open_error(&e, self.privs)
                ));
                let sw = PageFaultOptions { event: FaultEvent::Software, ..o.clone() };
                PageFaultSampler::open(tids, self.cpus, &sw).map_err(|e| describe_open_error(&e, self.privs))
            }
            Err(e) => Err(describe_open_error(&e, self.privs)),
        }
    }

    /// PMU memory-access events (IBS/PEBS) as planned from sysfs; None when none are planned.
    fn open_pmu(&self, tids: &[u32], on_exec: bool) -> Option<Result<PmuSampler, String>> {
        if self.mem.specs.is_empty() {
            return None;
        }
        let ring = ring_exp_for(self.cpus.len() * tids.len().max(1));
        Some(PmuSampler::open(self.mem.specs.clone(), tids, self.cpus, on_exec, ring))
    }
}

/// The target, started or found, with its events open.
struct Started {
    pid: i32,
    attached: bool,
    command: Vec<String>,
    child: Option<i32>,
    start_ns: u64,
    start_unix_ms: u64,
    alloc: AllocState,
}

/// Chooses the fault event (the tracepoint where its error codes are wanted, see
/// [`FaultEventChoice`]) and the options every fault event is opened with.
fn plan_faults(opts: &RecordOptions, roots: &Roots, privs: &Privileges) -> Result<Faults, RecordError> {
    let hinting = hinting_on(&roots.proc);
    let tracefs: Vec<PathBuf> = vec![roots.sys.join("kernel/tracing"), roots.sys.join("kernel/debug/tracing")];
    let tracefs_refs: Vec<&Path> = tracefs.iter().map(|p| p.as_path()).collect();
    let mut note = None;
    let event = match opts.fault_event {
        FaultEventChoice::Software => FaultEvent::Software,
        FaultEventChoice::Tracepoint => match pagefault::find_fault_tracepoint(&tracefs_refs) {
            Ok(tp) => FaultEvent::Tracepoint(tp),
            Err(e) => return Err(RecordError::Usage(format!("--fault-event tracepoint: {e}"))),
        },
        FaultEventChoice::Auto if hinting => match pagefault::find_fault_tracepoint(&tracefs_refs) {
            Ok(tp) => FaultEvent::Tracepoint(tp),
            Err(e) => {
                note = Some(format!(
                    "automatic NUMA balancing is on, but its hinting faults (sampled accesses) could not be told from first touches: {e}; the software page-fault event was used"
                ));
                FaultEvent::Software
            }
        },
        FaultEventChoice::Auto => FaultEvent::Software,
    };
    let base = PageFaultOptions {
        exclude_kernel: !privs.can_profile_kernel(),
        enable_on_exec: false,
        ring_exp: 9,
        period: opts.fault_period.max(1),
        rate_hz: opts.fault_rate_hz,
        event,
        stack_depth: opts.call_stack_depth,
    };
    Ok(Faults {
        sampler: Err(String::new()),
        base,
        auto: opts.fault_event == FaultEventChoice::Auto,
        note,
        hinting,
        hinting_at_start: hinting,
        last_lost: 0,
        lost_events: Vec::new(),
        fresh: Vec::with_capacity(1 << 16),
    })
}

/// Forks the command stopped before its exec, opens its events (enabled on exec), then lets it
/// run. `own_group`: it is to be left running at the stop (see launch.rs).
fn launch(
    argv: &[String],
    own_group: bool,
    plan: &mut Plan<'_>,
    pmu: &mut Option<Result<PmuSampler, String>>,
    (alloc_sites, warnings): (bool, &mut Vec<Warning>),
) -> Result<Started, RecordError> {
    if argv.is_empty() {
        return Err(RecordError::Usage("no command given to launch".into()));
    }
    let program = resolve_program(&argv[0])?;
    let (alloc, env) = alloc::prepare(alloc_sites, &program, warnings);
    let stopped = spawn_stopped(&program, argv, own_group, env.as_deref())?;
    let pid = stopped.pid;
    let o =
        PageFaultOptions { enable_on_exec: true, ring_exp: ring_exp_for(plan.cpus.len()), ..plan.faults.base.clone() };
    plan.faults.sampler = plan.open_faults(&[pid as u32], &o);
    *pmu = plan.open_pmu(&[pid as u32], true);
    let start_ns = mono_now_ns();
    let start_unix_ms = unix_now_ms();
    if let Err(e) = stopped.release() {
        try_reap(pid, true);
        return Err(match e.raw_os_error() {
            Some(libc::ENOENT) => RecordError::CommandNotFound(argv[0].clone()),
            _ => RecordError::Exec { program: argv[0].clone(), error: e },
        });
    }
    Ok(Started { pid, attached: false, command: argv.to_vec(), child: Some(pid), start_ns, start_unix_ms, alloc })
}

/// Opens the events on every thread of a running process (or only on `only`, when not empty)
/// and enables them.
fn attach(
    pid: i32,
    only: &[u32],
    roots: &Roots,
    plan: &mut Plan<'_>,
    pmu: &mut Option<Result<PmuSampler, String>>,
    warnings: &mut Vec<Warning>,
) -> Result<Started, RecordError> {
    if pid <= 0 || !roots.proc.join(pid.to_string()).is_dir() {
        return Err(RecordError::PidNotFound(pid));
    }
    let command = procfs::read_cmdline(&roots.proc, pid).unwrap_or_default();
    let tids: Vec<u32> = procfs::list_tasks(&roots.proc, pid)
        .map_err(|_| RecordError::PidNotFound(pid))?
        .into_iter()
        .map(|t| t as u32)
        .collect();
    let tids = if only.is_empty() {
        tids
    } else {
        if let Some(t) = only.iter().find(|t| !tids.contains(t)) {
            return Err(RecordError::Usage(format!(
                "thread {t} is not a thread of process {pid} (not in /proc/{pid}/task): give thread ids of one process"
            )));
        }
        warnings.push(Warning(format!(
            "page faults and memory accesses are sampled on threads {} only (-t; and threads they create): \
             /proc polling, counters and the placement scan cover the whole process {pid}",
            only.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(",")
        )));
        only.to_vec()
    };
    let o =
        PageFaultOptions { ring_exp: ring_exp_for(plan.cpus.len() * tids.len().max(1)), ..plan.faults.base.clone() };
    plan.faults.sampler = plan.open_faults(&tids, &o);
    *pmu = plan.open_pmu(&tids, false);
    let start_ns = mono_now_ns();
    let start_unix_ms = unix_now_ms();
    let pf = &mut plan.faults.sampler;
    if let Ok(s) = pf {
        if let Err(e) = s.enable() {
            *pf = Err(format!("enabling page-fault events failed: {e}"));
        }
    }
    if let Some(Ok(m)) = pmu {
        if let Err(e) = m.enable() {
            *pmu = Some(Err(format!("enabling the PMU memory events failed: {e}")));
        }
    }
    // Threads created between the enumeration and the opening are not followed by
    // inheritance: look again once (duplicates are removed later).
    if let (Ok(s), true) = (pf, only.is_empty()) {
        if let Ok(now_tids) = procfs::list_tasks(&roots.proc, pid) {
            for t in now_tids {
                if let Err(e) = s.add_task(t as u32) {
                    warnings
                        .push(Warning(format!("thread {t} appeared while attaching and could not be followed: {e}")));
                }
            }
            let _ = s.enable();
        }
    }
    Ok(Started { pid, attached: true, command, child: None, start_ns, start_unix_ms, alloc: alloc::attached() })
}

/// Per-thread counters: opened for the threads there are now, more as the session finds them.
fn open_counters(
    opts: &RecordOptions,
    roots: &Roots,
    pid: i32,
    privs: &Privileges,
) -> Option<Result<ThreadCounters, String>> {
    use crate::sources::counters::{core_counters, software_counters};
    let specs = match opts.counters {
        CounterChoice::Off => return None,
        CounterChoice::Core => core_counters(),
        CounterChoice::Software => software_counters(),
    };
    let r = ThreadCounters::open(specs, pid as u32, !privs.can_profile_kernel());
    Some(r.map(|mut c| {
        for t in procfs::list_tasks(&roots.proc, pid).unwrap_or_default() {
            c.add_thread(t as u32);
        }
        c
    }))
}

/// Memory-controller and link traffic (uncore), system-wide per socket, with a first reading.
fn open_uncore(opts: &RecordOptions, roots: &Roots, cpu_to_node: &[i8]) -> Option<Result<UncoreCounters, String>> {
    if !opts.uncore {
        return None;
    }
    let node_of = |cpu: u32| cpu_to_node.get(cpu as usize).map(|&n| n as i32).unwrap_or(-1);
    let mut uncore = UncoreCounters::start(roots, &node_of);
    if let Some(Ok(u)) = uncore.as_mut() {
        u.read(0);
    }
    uncore
}

/// Another user's process: says what is missing, and refuses when nothing could be observed.
fn check_attach_access(
    roots: &Roots,
    pid: i32,
    privs: &Privileges,
    numa_maps_ok: bool,
    pf: &mut Result<PageFaultSampler, String>,
    warnings: &mut Vec<Warning>,
) -> Result<(), RecordError> {
    let other_user = procfs::process_uid(&roots.proc, pid).is_some_and(|u| u != privs.euid) && privs.euid != 0;
    let maps_denied = numa_maps_ok
        && std::fs::File::open(roots.proc.join(format!("{pid}/numa_maps")))
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
    if let Err(e) = pf.as_mut() {
        if other_user {
            e.push_str(&format!(
                "; pid {pid} belongs to another user: attaching needs root, CAP_SYS_PTRACE or CAP_PERFMON"
            ));
        }
    }
    if let (true, Err(e)) = (maps_denied, &pf) {
        return Err(RecordError::Permission(format!(
            "cannot observe pid {pid}: /proc/{pid}/numa_maps is not readable (needs the same user as the \
             process, root or CAP_SYS_PTRACE) and page-fault sampling failed: {e}"
        )));
    }
    if maps_denied {
        warnings.push(Warning(format!(
            "/proc/{pid}/numa_maps is not readable (needs the same user, root or CAP_SYS_PTRACE): no page placement snapshots"
        )));
    }
    Ok(())
}

impl Session {
    /// Starts a recording: checks the output and the options, starts (or finds) the target with
    /// its events open, and starts the other sources. An error here has recorded nothing.
    pub fn open(opts: &RecordOptions, roots: &Roots, topo: &Topology, probe: &Probe) -> Result<Session, RecordError> {
        // Output path checks first: fail before starting anything (a directory, a missing parent, a
        // read-only file system or no permission is found here, by creating and removing an
        // exclusive temporary file beside the output).
        writer::check_output(&opts.output).map_err(|e| RecordError::Usage(format!("{e}; nothing was recorded")))?;
        opts.validate().map_err(|e| RecordError::Usage(e.to_string()))?;
        let privs = &probe.privileges;
        // Before the fault event is chosen: with balancing on, auto picks the tracepoint.
        let balancing = match opts.numa_balancing {
            NumaBalancingChoice::On => Some(BalancingGuard::switch_on(&roots.proc)?),
            NumaBalancingChoice::Leave => None,
        };
        let faults = plan_faults(opts, roots, privs)?;
        let (specs, refused) = if opts.mem_sampling {
            let (mut specs, refused) = pmu::plan_mem_events(&roots.sys, privs, opts.mem_rate_hz);
            pmu::with_call_stacks(&mut specs, opts.call_stack_depth);
            (specs, refused)
        } else {
            (Vec::new(), Vec::new())
        };
        let mem = Mem { sampler: None, specs, refused, raw: Vec::new(), other: 0, stacks: Default::default() };
        let mut plan = Plan { privs, cpus: &topo.online_cpus, faults, mem };
        let mut warnings = Vec::new();
        let mut pmu = None;
        let started = match &opts.target {
            Target::Launch(argv) => {
                if !opts.kill_on_stop {
                    warnings.extend(tostop_warning().map(Warning));
                }
                launch(argv, !opts.kill_on_stop, &mut plan, &mut pmu, (opts.alloc_sites, &mut warnings))?
            }
            Target::Attach(pid) => attach(*pid, &opts.sample_tids, roots, &mut plan, &mut pmu, &mut warnings)?,
        };
        let Plan { mut faults, mut mem, .. } = plan;
        mem.sampler = pmu;
        let pid = started.pid;
        let cpu_to_node = topo.cpu_to_node();
        let start_ticks = procfs::process_start_ticks(&roots.proc, pid);
        let counters = open_counters(opts, roots, pid, privs);
        let uncore = open_uncore(opts, roots, &cpu_to_node);
        let next_counters = Instant::now();
        let numa_maps_ok = roots.proc.join("self/numa_maps").exists();
        if started.attached {
            check_attach_access(roots, pid, privs, numa_maps_ok, &mut faults.sampler, &mut warnings)?;
        }
        if let Err(e) = &faults.sampler {
            warnings.push(Warning(format!("page-fault sampling unavailable, recording /proc data only: {e}")));
        }
        if let Some(Err(e)) = &mem.sampler {
            warnings.push(Warning(format!("memory-access sampling (PMU) unavailable: {e}")));
        }
        let poller = PollerHandle::spawn(PollerConfig {
            pid,
            interval: opts.interval,
            start_ns: started.start_ns,
            roots: roots.clone(),
            cpu_to_node: cpu_to_node.clone(),
            node_ids: topo.nodes.iter().map(|n| n.id).collect(),
            attached: started.attached,
            numa_maps: numa_maps_ok,
        })
        .map_err(|e| RecordError::Io(format!("cannot start the /proc poller thread: {e}")))?;
        // DAMON (opt-in). Dropping the session on any early return removes the kdamond.
        let damon: Option<Result<DamonSession, String>> = opts.damon.then(|| {
            let admin = Path::new(crate::sources::damon::DEFAULT_ADMIN);
            DamonSession::start(admin, pid, Default::default(), started.start_ns)
        });
        let now = Instant::now();
        // New pages are queried often (every 20 ms at most) so that short-lived processes still
        // get their nodes before they exit.
        let query_every = opts.interval.min(Duration::from_millis(20));
        let live = opts.live.clone().map(|sink| Live {
            agg: crate::live::LiveAggregator::new(sink, pid),
            done: 0,
            pending: Vec::new(),
            next: now + opts.live_window,
            mem_done: 0,
            pmu_pages: Default::default(),
            uncore: super::live_feed::UncoreTap::new(),
        });
        Ok(Session {
            opts: opts.clone(),
            roots: roots.clone(),
            topo: topo.clone(),
            probe: probe.clone(),
            cpu_to_node,
            pid,
            attached: started.attached,
            command: started.command,
            child: started.child,
            start_ns: started.start_ns,
            start_unix_ms: started.start_unix_ms,
            start_ticks,
            faults,
            mem,
            counters,
            uncore,
            poller: Some(poller),
            damon,
            seen: Seen { raw: Vec::new(), pages: PageTracker::default(), ..Default::default() },
            // An attached process's pages were faulted in before: scan them at once.
            scan: PageScanner::new(pid, &roots.proc, opts.scan_max_pages, started.attached),
            live,
            clock: Clock {
                t0: now,
                limit: opts.duration.map(|d| d.min(MAX_CAPTURE)).unwrap_or(MAX_CAPTURE),
                query_every,
                next_query: now + query_every,
                next_counters,
                next_progress: now + Duration::from_secs(1),
            },
            warnings,
            notes: Vec::new(),
            exited: None,
            balancing,
            left_running: false,
            numa_sched: None,
            alloc: started.alloc,
            code: None,
        })
    }
}
