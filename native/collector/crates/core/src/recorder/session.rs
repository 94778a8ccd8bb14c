//! A recording in progress: [`Session::open`] (open.rs) starts it, [`Session::poll`] runs one
//! turn of the capture (drain the sources, query new pages, send a live window, read the
//! counters, check the stop conditions), [`Session::run`] polls until a stop condition holds,
//! and [`Session::finish`] (finish.rs) takes the last observation and writes the trace.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::balancing::hinting_on;
use super::launch::{signal_received, try_reap};
use super::options::{RecordOptions, MAX_CAPTURE, MAX_RECORD_SAMPLES};
use super::pages::PageTracker;
use super::placement_scan::PageScanner;
use super::Warning;
use crate::decode::mem_sample::MemSample;
use crate::probe::Probe;
use crate::procfs;
use crate::sources::counters::ThreadCounters;
use crate::sources::damon::DamonSession;
use crate::sources::pagefault::{classify, FaultEvent, FaultKind, FaultSample, PageFaultOptions, PageFaultSampler};
use crate::sources::pmu::{MemEventSpec, PmuSampler};
use crate::sources::procfs::PollerHandle;
use crate::sources::uncore::UncoreCounters;
use crate::time::{mono_now_ns, us_since};
use crate::topology::{Roots, Topology};

/// The page-fault source.
pub(super) struct Faults {
    pub(super) sampler: Result<PageFaultSampler, String>,
    /// The options every fault event was opened with (before per-target changes).
    pub(super) base: PageFaultOptions,
    /// `--fault-event auto`: the tracepoint may fall back to the software event.
    pub(super) auto: bool,
    /// Why the fault event is not the one asked for, if it is not.
    pub(super) note: Option<String>,
    /// NUMA balancing is on: repeat faults are hinting faults (access samples).
    pub(super) hinting: bool,
    pub(super) hinting_at_start: bool,
    pub(super) last_lost: u64,
    /// (time_us, samples lost since the previous report)
    pub(super) lost_events: Vec<(i64, u64)>,
    /// Drained but not yet absorbed.
    pub(super) fresh: Vec<FaultSample>,
}

/// The PMU memory-access source (IBS, PEBS).
pub(super) struct Mem {
    pub(super) sampler: Option<Result<PmuSampler, String>>,
    pub(super) specs: Vec<MemEventSpec>,
    /// Events the plan refused, with the reason.
    pub(super) refused: Vec<(&'static str, String)>,
    pub(super) raw: Vec<MemSample>,
    /// Samples of child processes, not kept.
    pub(super) other: u64,
    /// The PMU samples' call stacks when there is no page-fault sampler to share its stacks with.
    pub(super) stacks: crate::sources::callchain::CallStacks,
}

/// What the fault samples showed so far.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) raw: Vec<FaultSample>,
    pub(super) pages: PageTracker,
    pub(super) other_pids: HashSet<u32>,
    pub(super) other_samples: u64,
    pub(super) tids_in_samples: HashMap<u32, String>,
    /// The program's threads from the kernel's task records (tasks.rs).
    pub(super) tasks: super::tasks::TaskLog,
}

/// Live windows (`numascope serve`, the Node binding's `onWindow`).
pub(super) struct Live {
    pub(super) agg: crate::live::LiveAggregator,
    /// `raw[..done]` were counted into windows, but for `pending`: samples whose page had no
    /// node yet.
    pub(super) done: usize,
    pub(super) pending: Vec<usize>,
    pub(super) next: Instant,
    /// `mem.raw[..mem_done]` were counted as accesses (with a PMU sampler open).
    pub(super) mem_done: usize,
    /// The node of pages only PMU samples touched.
    pub(super) pmu_pages: super::live_feed::PmuPages,
    /// The uncore readings, for the windows' bandwidth.
    pub(super) uncore: super::live_feed::UncoreTap,
}

pub(super) struct Clock {
    pub(super) t0: Instant,
    pub(super) limit: Duration,
    pub(super) query_every: Duration,
    pub(super) next_query: Instant,
    pub(super) next_counters: Instant,
    pub(super) next_progress: Instant,
}

/// Why and when the capture stopped.
#[derive(Clone, Debug)]
pub struct Stop {
    pub(super) reason: &'static str,
    pub(super) exit: Option<(i32, String)>,
    pub(super) signal: Option<i32>,
    pub(super) at_ns: u64,
}

impl Stop {
    fn now(reason: &'static str, exit: Option<(i32, String)>, signal: Option<i32>) -> Self {
        Stop { reason, exit, signal, at_ns: mono_now_ns() }
    }

    /// `duration`, `process-exit` or `signal` (the manifest's `capture.stopReason`).
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

/// Where a running capture stands (the CLI prints it about once a second).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub elapsed: Duration,
    pub threads: usize,
    pub pages: usize,
    pub samples: usize,
    pub lost: u64,
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>6.1} s  threads {}  pages {}  samples {}  lost {}",
            self.elapsed.as_secs_f64(),
            self.threads,
            self.pages,
            self.samples,
            self.lost
        )
    }
}

/// One recording, from [`Session::open`] to [`Session::finish`]. Dropping it without finishing
/// stops every source (and removes a DAMON kdamond) and writes nothing.
pub struct Session {
    pub(super) opts: RecordOptions,
    pub(super) roots: Roots,
    pub(super) topo: Topology,
    pub(super) probe: Probe,
    pub(super) cpu_to_node: Vec<i8>,
    pub(super) pid: i32,
    pub(super) attached: bool,
    pub(super) command: Vec<String>,
    /// The launched command (None when attached).
    pub(super) child: Option<i32>,
    pub(super) start_ns: u64,
    pub(super) start_unix_ms: u64,
    pub(super) start_ticks: Option<u64>,
    pub(super) faults: Faults,
    pub(super) mem: Mem,
    pub(super) counters: Option<Result<ThreadCounters, String>>,
    pub(super) uncore: Option<Result<UncoreCounters, String>>,
    /// Taken by the finish phase.
    pub(super) poller: Option<PollerHandle>,
    pub(super) damon: Option<Result<DamonSession, String>>,
    pub(super) seen: Seen,
    /// The placement scan of every resident page (placement_scan.rs).
    pub(super) scan: PageScanner,
    pub(super) live: Option<Live>,
    pub(super) clock: Clock,
    /// Problems found while opening; they also go into the manifest notes.
    pub(super) warnings: Vec<Warning>,
    pub(super) notes: Vec<String>,
    /// The launched command exited by itself during the capture.
    pub(super) exited: Option<(i32, String)>,
    /// `--numa-balancing on`: holds automatic NUMA balancing on until the finish phase.
    pub(super) balancing: Option<super::balancing::BalancingGuard>,
    /// The process was still running when the capture ended and was left running.
    pub(super) left_running: bool,
    /// `--numa-balancing on`: the balancer's (scan passes, hinting faults) for the process at the
    /// end, from /proc/PID/sched.
    pub(super) numa_sched: Option<(u64, u64)>,
    /// Allocation sites: the shim's state (recorder/alloc.rs).
    pub(super) alloc: super::alloc::AllocState,
    /// Code locations of the samples (recorder/code.rs): set when the trace is built.
    pub(super) code: Option<super::code::CodeState>,
}

impl Session {
    /// The pid being recorded.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// What went wrong while opening, for the caller to show: the problems the manifest notes
    /// as warnings, then DAMON's failure (which the manifest records as the damon source's
    /// status instead).
    pub fn warnings(&self) -> Vec<Warning> {
        let mut w = self.warnings.clone();
        if let Some(Err(e)) = &self.damon {
            w.push(Warning(format!("DAMON not used: {e}")));
        }
        w
    }

    pub fn progress(&self) -> Progress {
        Progress {
            elapsed: self.clock.t0.elapsed(),
            // Threads of the samples and of the task records (every thread created), or the
            // poller's, whichever saw more.
            threads: {
                let tasks = &self.seen.tasks.threads;
                let in_samples_only = self.seen.tids_in_samples.keys().filter(|t| !tasks.contains_key(t)).count();
                (tasks.len() + in_samples_only).max(self.poller.as_ref().map_or(0, |p| p.threads_seen()))
            },
            pages: self.seen.pages.pages.len(),
            samples: self.seen.raw.len(),
            lost: self.faults.last_lost,
        }
    }

    /// Polls until a stop condition holds (the duration, the process's exit, a signal, the stop
    /// flag), calling `on_progress` about once a second.
    pub fn run(&mut self, on_progress: &mut dyn FnMut(&Progress)) -> Stop {
        loop {
            if let Some(stop) = self.poll() {
                return stop;
            }
            let now = Instant::now();
            if now >= self.clock.next_progress {
                self.clock.next_progress = now + Duration::from_secs(1);
                on_progress(&self.progress());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// One turn of the capture; Some when it should stop.
    pub fn poll(&mut self) -> Option<Stop> {
        self.drain();
        let now = Instant::now();
        if now >= self.clock.next_query {
            self.seen.pages.query_new(self.pid);
            self.clock.next_query = now + self.clock.query_every;
        }
        self.scan.poll(&mut self.seen.pages, self.start_ns);
        if self.live.as_ref().is_some_and(|l| now >= l.next) {
            if let Some(l) = self.live.as_mut() {
                l.next = now + self.opts.live_window;
            }
            let end_us = mono_now_ns().saturating_sub(self.start_ns) / 1000;
            self.emit_live(end_us, false);
        }
        if now >= self.clock.next_counters {
            self.clock.next_counters = now + self.opts.interval;
            self.read_counters(us_since(self.start_ns, mono_now_ns()));
        }
        self.check_stop()
    }

    /// Drains the page-fault and PMU events.
    pub(super) fn drain(&mut self) {
        self.drain_faults(mono_now_ns());
        self.absorb();
        self.drain_pmu();
    }

    /// Reads the fault rings into `fresh`, noting samples the kernel lost (at `now_ns`).
    pub(super) fn drain_faults(&mut self, now_ns: u64) {
        let f = &mut self.faults;
        if let Ok(s) = &mut f.sampler {
            s.drain(&mut f.fresh);
            self.seen.tasks.add(self.pid, s.take_tasks());
            if s.lost > f.last_lost {
                f.lost_events.push((us_since(self.start_ns, now_ns), s.lost - f.last_lost));
                f.last_lost = s.lost;
            }
        }
    }

    /// Moves `fresh` samples of the process into `raw`, classified, with their pages tracked.
    pub(super) fn absorb(&mut self) {
        let (pid, hinting) = (self.pid, self.faults.hinting);
        let seen = &mut self.seen;
        let fresh = &mut self.faults.fresh;
        // In time order, so that a page's first fault is classified before its later ones.
        fresh.sort_by_key(|s| s.time_ns);
        for mut s in fresh.drain(..) {
            if s.pid as i32 != pid {
                seen.other_samples += 1;
                seen.other_pids.insert(s.pid);
                continue;
            }
            // NUMA hinting faults: a not-present fault on a page faulted in before (see classify).
            s.kind = classify(s.error_code, hinting, seen.pages.seen_before(s.addr & !4095, s.time_ns));
            seen.pages.add(&s);
            let proc_root = &self.roots.proc;
            seen.tids_in_samples.entry(s.tid).or_insert_with(|| procfs::read_thread_name(proc_root, pid, s.tid));
            seen.raw.push(s);
        }
    }

    /// Reads the PMU rings, keeping the process's own samples.
    pub(super) fn drain_pmu(&mut self) {
        let m = &mut self.mem;
        if let Some(Ok(p)) = &mut m.sampler {
            let before = m.raw.len();
            // One set of stacks for the page-fault and PMU samples, so code::attach turns both.
            let stacks = match &mut self.faults.sampler {
                Ok(s) => &mut s.stacks,
                Err(_) => &mut m.stacks,
            };
            p.drain(&mut m.raw, stacks);
            // Inherited events also see the process's children: keep one address space.
            let mut k = before;
            for i in before..m.raw.len() {
                if m.raw[i].pid == self.pid {
                    m.raw.swap(k, i);
                    k += 1;
                } else {
                    m.other += 1;
                }
            }
            m.raw.truncate(k);
        }
    }

    /// Reads the counters and uncore at `t` µs, following new threads; notices NUMA balancing
    /// switched on while recording (hinting faults count from then on).
    pub(super) fn read_counters(&mut self, t: i64) {
        let tracepoint = matches!(self.faults.sampler.as_ref().map(|s| s.event()), Ok(FaultEvent::Tracepoint(_)));
        if !self.faults.hinting && tracepoint {
            self.faults.hinting = hinting_on(&self.roots.proc);
        }
        if let Some(Ok(c)) = self.counters.as_mut() {
            for tid in procfs::list_tasks(&self.roots.proc, self.pid).unwrap_or_default() {
                c.add_thread(tid as u32);
            }
            c.read(t);
        }
        if let Some(Ok(u)) = self.uncore.as_mut() {
            u.read(t);
        }
    }

    /// Counts the samples absorbed since the last live window with the node of their page, then
    /// sends a window ending at `end_us`. Before a periodic window, new pages are queried first
    /// (the query the loop does anyway), so that a window's faults have the node the trace will
    /// give them. A sample whose page has no node yet (move_pages answered before the fault had
    /// mapped the page) waits for a later window, the final one at the latest, so that it is
    /// counted with the node the trace gives it.
    ///
    /// Accesses: from the PMU samples drained since the last window when a PMU sampler is open
    /// (then hinting faults are not counted as accesses: one source per recording, live.rs),
    /// else from the hinting faults; bandwidth from the uncore memory-controller readings.
    pub(super) fn emit_live(&mut self, end_us: u64, is_final: bool) {
        let Some(l) = self.live.as_mut() else { return };
        let pages = &mut self.seen.pages;
        let raw = &self.seen.raw;
        if !is_final {
            pages.query_new(self.pid);
        }
        let pmu = matches!(self.mem.sampler, Some(Ok(_)));
        let waiting = std::mem::take(&mut l.pending);
        for k in waiting.into_iter().chain(l.done..raw.len()) {
            let s = &raw[k];
            let node = pages.index.get(&(s.addr & !4095)).map(|&i| pages.pages[i].node_first).unwrap_or(-1);
            if node < 0 && !is_final {
                l.pending.push(k);
                continue;
            }
            l.agg.fault(s.tid, s.cpu, node);
            if s.kind != FaultKind::Touch && !pmu {
                // A hinting fault: an access sampled by NUMA balancing, local or remote by the
                // node of the cpu it ran on against the node of its page.
                let cpu_node = self.cpu_to_node.get(s.cpu as usize).map_or(-1, |&n| n as i32);
                l.agg.access(cpu_node, node as i32);
            }
        }
        l.done = raw.len();
        if pmu {
            // The page's current node as the fault samples' queries know it, else move_pages.
            let fresh = &self.mem.raw[l.mem_done.min(self.mem.raw.len())..];
            let tracked = |a: u64| pages.index.get(&a).map(|&i| pages.pages[i].node_last);
            l.pmu_pages.query(self.pid, fresh, tracked);
            let pmu_pages = &l.pmu_pages;
            let node_of = |a: u64| tracked(a).filter(|&n| n >= 0).or_else(|| pmu_pages.get(a)).map_or(-1, |n| n as i32);
            super::live_feed::count_pmu(&mut l.agg, fresh, &self.cpu_to_node, node_of);
            l.mem_done = self.mem.raw.len();
        }
        let bandwidth = match &self.uncore {
            Some(Ok(u)) if super::live_feed::counts_memory(u) => {
                l.uncore.feed(u, &mut l.agg);
                Some(crate::live::BANDWIDTH_SOURCE_UNCORE)
            }
            _ => None,
        };
        let access = if pmu {
            Some(crate::live::ACCESS_SOURCE_PMU)
        } else {
            self.faults.hinting.then_some(crate::live::ACCESS_SOURCE_HINTING)
        };
        let lost =
            if is_final { self.faults.sampler.as_ref().map(|s| s.lost).unwrap_or(0) } else { self.faults.last_lost };
        let nodes = pages.pages.iter().filter(|p| pages.kept(p)).map(|p| (p.node_first, p.node_last));
        let sources = crate::live::LiveSources { access, bandwidth };
        l.agg.emit(end_us, is_final, nodes, sources, lost, &self.roots.proc, &self.cpu_to_node);
    }

    /// The stop conditions, in order: a signal, the stop flag, the process's exit, the duration.
    fn check_stop(&mut self) -> Option<Stop> {
        if let Some(sig) = signal_received() {
            return Some(Stop::now("signal", None, Some(sig)));
        }
        if self.opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Some(Stop::now("signal", None, None));
        }
        if let Some(c) = self.child {
            if let Some(e) = try_reap(c, false) {
                self.exited = Some(e.clone());
                return Some(Stop::now("process-exit", Some(e), None));
            }
        } else if !procfs::process_alive(&self.roots.proc, self.pid, self.start_ticks) {
            return Some(Stop::now("process-exit", None, None));
        }
        if self.clock.t0.elapsed() >= self.clock.limit {
            if self.opts.duration.is_none_or(|d| d > MAX_CAPTURE) {
                self.notes.push(format!(
                    "stopped at {} s, the longest recording numascope runs (30 days)",
                    MAX_CAPTURE.as_secs()
                ));
            }
            return Some(Stop::now("duration", None, None));
        }
        let rows = self.seen.raw.len() + self.mem.raw.len();
        if rows >= MAX_RECORD_SAMPLES {
            self.notes.push(format!(
                "stopped after {:.0} s at {rows} sample rows, the most one trace keeps (its samples table stays under the readers' 2 GiB): lower --fault-rate or --mem-rate to record longer",
                self.clock.t0.elapsed().as_secs_f64()
            ));
            return Some(Stop::now("sample-limit", None, None));
        }
        None
    }
}
