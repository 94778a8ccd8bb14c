//! The finish phase: the last observation while the process may still be alive, the events
//! stopped, a launched command still running left running (or terminated with `kill_on_stop`),
//! NUMA balancing restored, then the trace built (build.rs), its manifest filled in
//! (manifest.rs) and written.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::balancing::Restored;
use super::build::{build_trace, BuildInput};
use super::launch::{detach, signal_name, try_reap};
use super::manifest::Tally;
use super::session::{Session, Stop};
use super::{RecordError, RecordSummary};
use crate::apply::audit;
use crate::procfs;
use crate::sources::damon::{DamonConfig, DamonData};
use crate::sources::procfs::{PendingEvent, ProcfsData};
use crate::time::{mono_now_ns, unix_now_ms, us_since};
use crate::trace::{writer, TraceData};

/// What the last observation collected besides the session's own state.
struct Final {
    damon: Option<Result<DamonData, String>>,
    procfs: ProcfsData,
    applied_plans: Vec<serde_json::Value>,
    end_ns: u64,
    /// Nodes of the pages only the PMU saw.
    mem_page_nodes: HashMap<u64, i8>,
}

impl Session {
    /// Ends the capture and writes the trace. If the output cannot be written now (disk full,
    /// directory gone), the recording is kept in a private fallback file and the error names it;
    /// an existing trace at the output stays.
    pub fn finish(mut self, stop: Stop) -> Result<RecordSummary, RecordError> {
        let fin = self.final_observation(&stop);
        if self.balancing.is_some() {
            // While the process may still be alive: the balancer's own counts for it.
            self.numa_sched = super::balancing::sched_numa_counts(&self.roots.proc, self.pid);
        }
        let exit = self.stop_child(&stop);
        self.restore_balancing();
        let end_ns = fin.end_ns;
        let duration_us = end_ns.saturating_sub(self.start_ns) / 1000;
        if let Some((_, how)) = &exit {
            self.notes.push(format!("process {} {how} after {:.2} s", self.pid, duration_us as f64 / 1e6));
        }
        let raw = std::mem::take(&mut self.seen.raw);
        // Adaptive fault sampling: how far the kernel raised the period.
        let max_period = raw.iter().map(|f| f.period).max().unwrap_or(1);
        let subsampled = raw.iter().filter(|f| f.period > 1).count();
        let touches = raw.iter().filter(|f| f.kind == crate::sources::pagefault::FaultKind::Touch);
        let (touch_samples, touch_weight) = touches.fold((0u64, 0u64), |(n, w), f| (n + 1, w + f.period.max(1)));
        let numa_snapshots = fin.procfs.numa_maps_snapshots;
        let mut code_maps = fin.procfs.code_maps.clone();
        let mut notes = std::mem::take(&mut self.notes);
        let mut trace = build_trace(BuildInput {
            start_ns: self.start_ns,
            pid: self.pid,
            raw,
            pages: std::mem::take(&mut self.seen.pages),
            procfs: fin.procfs,
            tids_in_samples: std::mem::take(&mut self.seen.tids_in_samples),
            tasks: &self.seen.tasks,
            cpu_to_node: &self.cpu_to_node,
            lost_events: std::mem::take(&mut self.faults.lost_events),
            exit: exit.clone().map(|(c, how)| (us_since(self.start_ns, stop.at_ns.min(end_ns)), c, how)),
            notes: &mut notes,
        });
        self.notes = notes;
        // After the command was reaped, so that the shim's files are complete.
        self.alloc.collect(&mut trace, self.start_ns, self.pid, &mut self.warnings, &mut self.notes);
        // The PMU's memory samples before the code locations, whose stack ids they share.
        let mem_rows =
            crate::sources::pmu::add_mem_samples(&mut trace, &self.mem.raw, self.start_ns, &fin.mem_page_nodes);
        // Code locations after the allocation sites: their frames and modules are shared.
        self.code = Some(match &self.faults.sampler {
            _ if self.opts.call_stack_depth == 0 => super::code::CodeState::off(),
            Ok(s) => {
                code_maps.extend(s.code_mappings.iter().filter(|m| m.pid == self.pid as u32).cloned());
                super::code::attach(&mut trace, &s.stacks, &code_maps, self.opts.call_stack_depth, &mut self.notes)
            }
            // Without page-fault events, the PMU samples' stacks alone (their modules from the
            // /proc polls' executable mappings).
            Err(_) if !self.mem.stacks.is_empty() => super::code::attach(
                &mut trace,
                &self.mem.stacks,
                &code_maps,
                self.opts.call_stack_depth,
                &mut self.notes,
            ),
            Err(e) => super::code::CodeState {
                status: "unavailable",
                reason: format!("not recorded: the page-fault events could not be opened ({e})"),
            },
        });
        self.sample_notes();
        let scan_notes = self.scan.notes();
        self.notes.extend(scan_notes.iter().cloned());
        let counts = (max_period, subsampled, duration_us, numa_snapshots);
        let mut tally = self.add_source_rows(&mut trace, mem_rows, counts);
        (tally.touch_samples, tally.touch_weight) = (touch_samples, touch_weight);
        trace.manifest = self.manifest(&tally, &stop, exit.as_ref().map(|(c, _)| *c), fin.applied_plans);
        let mut warnings: Vec<String> = self.warnings.iter().map(|w| w.0.clone()).collect();
        warnings.extend(scan_notes);
        let damon_summary =
            crate::sources::damon::add_to_trace(&mut trace, fin.damon.as_ref(), &DamonConfig::default(), &mut warnings);
        let size =
            writer::write_trace_or_keep(&mut trace, &self.opts.output).map_err(|f| RecordError::Io(f.to_string()))?;
        Ok(RecordSummary {
            output: self.opts.output.clone(),
            size_bytes: size,
            duration_us,
            stop_reason: stop.reason.into(),
            pid: self.pid,
            exit_code: exit.map(|(c, _)| c),
            threads: trace.threads.tid.len(),
            pages: trace.pages.address.len(),
            samples: trace.samples.time_us.len(),
            lost_samples: tally.lost,
            page_faults: match &self.faults.sampler {
                Ok(_) => "used".into(),
                Err(e) => format!("failed: {e}"),
            },
            damon: damon_summary,
            warnings,
            left_running: self.left_running,
        })
    }

    /// Final observation while the process may still be alive, then the events stopped (the
    /// capture ends when they are disabled), the last samples drained and the last live window sent.
    fn final_observation(&mut self, stop: &Stop) -> Final {
        let damon = self.damon.take().map(|d| d.map(|s| s.finish()));
        let mut procfs = self.poller.take().map(|p| p.finish()).unwrap_or_default();
        // Plans `numascope apply` carried out on this process during the capture (apply/audit.rs).
        let applied_plans =
            audit::collect(&audit::spool_dir(), self.pid, self.start_ticks, self.start_unix_ms, unix_now_ms());
        for e in &applied_plans {
            let t = e["finishedUnixMs"].as_u64().unwrap_or(self.start_unix_ms).saturating_sub(self.start_unix_ms);
            procfs.events.push(PendingEvent {
                time_us: (t.saturating_mul(1000)).min(crate::trace::limits::MAX_TIME_US as u64) as i64,
                kind: "plan-applied",
                tid: None,
                value: e["report"]["pages"]["moved"].as_i64().unwrap_or(-1),
                detail: audit::describe(e),
            });
        }
        if let Ok(s) = &mut self.faults.sampler {
            let _ = s.disable();
        }
        if let Some(Ok(m)) = &self.mem.sampler {
            let _ = m.disable();
        }
        let end_ns = mono_now_ns().max(stop.at_ns);
        self.drain_pmu();
        let t = us_since(self.start_ns, end_ns);
        if let Some(Ok(c)) = self.counters.as_mut() {
            c.read(t);
        }
        if let Some(Ok(u)) = self.uncore.as_mut() {
            u.read(t);
        }
        self.drain_faults(end_ns);
        self.absorb();
        let mut mem_page_nodes = HashMap::new();
        let alive = self.exited.is_none() && procfs::process_alive(&self.roots.proc, self.pid, self.start_ticks);
        self.scan.finish(&mut self.seen.pages, self.start_ns, alive);
        if alive {
            mem_page_nodes = self.query_all_pages();
        }
        self.emit_live(end_ns.saturating_sub(self.start_ns) / 1000, true);
        Final { damon, procfs, applied_plans, end_ns, mem_page_nodes }
    }

    /// Queries every tracked page again (but those the scan at the stop placed), and the pages
    /// only the PMU saw (their nodes returned).
    fn query_all_pages(&mut self) -> HashMap<u64, i8> {
        let pages = &mut self.seen.pages;
        pages.query_all(self.pid, self.scan.last_at_stop());
        let mut addrs: Vec<u64> =
            self.mem.raw.iter().map(|m| m.addr & !4095).filter(|a| !pages.index.contains_key(a)).collect();
        addrs.sort_unstable();
        addrs.dedup();
        let mut nodes = HashMap::new();
        if let Ok(answers) = crate::numa_sys::query_page_nodes(self.pid, &addrs) {
            for (a, n) in addrs.iter().zip(answers) {
                if (0..=i8::MAX as i32).contains(&n) {
                    nodes.insert(*a, n as i8);
                }
            }
        }
        nodes
    }

    /// A launched command still running when the capture stops is left running (detached), or
    /// with `kill_on_stop` terminated (with a note); returns how the process exited by itself, if
    /// it did. Sets `left_running` when the process runs on after the capture.
    fn stop_child(&mut self, stop: &Stop) -> Option<(i32, String)> {
        let mut exit = stop.exit.clone();
        let Some(c) = self.child else {
            // Attached: never touched; it runs on unless it exited.
            self.left_running =
                stop.reason != "process-exit" && procfs::process_alive(&self.roots.proc, self.pid, self.start_ticks);
            if self.left_running {
                self.notes.push(format!("process {} (attached) was left running", self.pid));
            }
            self.stop_notes(stop);
            return exit;
        };
        if exit.is_none() && !self.opts.kill_on_stop {
            exit = try_reap(c, false);
            if exit.is_none() {
                let how = match detach(c) {
                    Ok(()) => String::new(),
                    // Without the reaper thread it is reaped when this process exits.
                    Err(e) => format!(" (no thread to reap it when it exits: {e})"),
                };
                self.left_running = true;
                self.notes.push(format!(
                    "the launched command (pid {c}) was still running when the capture stopped ({}); numascope left it running{how} \
                     (record with --kill-on-stop to terminate it instead)",
                    stop.reason
                ));
            }
        }
        if exit.is_none() && !self.left_running {
            // A Ctrl-C in a terminal reaches the command too: give it a moment to exit on its own.
            let grace = if stop.reason == "signal" { Duration::from_millis(300) } else { Duration::ZERO };
            exit = reap_within(c, grace, true);
        }
        if exit.is_none() && !self.left_running {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c, libc::SIGTERM) };
            let mut reaped = reap_within(c, Duration::from_secs(2), false);
            if reaped.is_none() {
                // SAFETY: as above.
                unsafe { libc::kill(c, libc::SIGKILL) };
                reaped = try_reap(c, true);
            }
            self.notes.push(format!(
                "the launched command was still running when the capture stopped ({}); numascope sent it SIGTERM{} (--kill-on-stop)",
                stop.reason,
                if reaped.as_ref().is_some_and(|(code, _)| *code == 128 + libc::SIGKILL) {
                    " and then SIGKILL"
                } else {
                    ""
                }
            ));
            exit = None; // it did not exit on its own during the capture
        }
        self.stop_notes(stop);
        exit
    }

    fn stop_notes(&mut self, stop: &Stop) {
        if let Some(sig) = stop.signal {
            self.notes.push(format!("capture stopped by {}", signal_name(sig)));
        } else if stop.reason == "signal" {
            self.notes.push("capture stopped on request (stop flag set by the embedding program)".into());
        }
    }

    /// `--numa-balancing on`: the previous value back (or why not), in the notes.
    fn restore_balancing(&mut self) {
        let Some(mut g) = self.balancing.take() else { return };
        let restored = g.restore();
        let note = match (&g.wrote, restored) {
            (None, _) => format!(
                "--numa-balancing on: automatic NUMA balancing was already on (kernel.numa_balancing = {}); left as it was",
                g.previous
            ),
            (Some(w), Ok(Restored::WroteBack(prev))) => format!(
                "automatic NUMA balancing was switched on for this recording (--numa-balancing on: kernel.numa_balancing {prev} -> {w}) and restored to {prev} afterwards"
            ),
            (Some(w), Ok(_)) => format!(
                "automatic NUMA balancing was switched on for this recording (--numa-balancing on: kernel.numa_balancing {} -> {w}); \
                 another recording still held it on at the end and restores {} when it ends",
                g.previous, g.previous
            ),
            (Some(_), Err(e)) => {
                self.warnings.push(super::Warning(e.clone()));
                format!("--numa-balancing on: {e}")
            }
        };
        self.notes.push(note);
    }

    /// Notes on the fault samples: the node rule, the warnings, child processes' samples.
    fn sample_notes(&mut self) {
        self.notes.push(
            "node rule: samples.node = node reported by the first move_pages query after the fault (-1 if none answered); \
             pages.node = last node move_pages reported, by a query of a faulted page or by the placement scan of every resident page (capture.pageScan; at the end the process, while alive, is scanned again and the other pages queried again); \
             a page never answered gets the node of its region's last numa_maps snapshot when all that region's pages were on one node, else -1"
                .into(),
        );
        for w in &self.warnings {
            self.notes.push(format!("warning: {w}"));
        }
        let seen = &self.seen;
        if seen.other_samples > 0 {
            let mut pids: Vec<u32> = seen.other_pids.iter().copied().collect();
            pids.sort_unstable();
            self.notes.push(format!(
                "{} page-fault samples from child processes (pids {}) were not kept: a trace holds one address space",
                seen.other_samples,
                pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        // A wrapper (a shell script, a launcher) whose work runs in a child: say so where the user
        // reads, not only in the manifest.
        let log = &seen.tasks;
        if log.child_processes > 0 {
            let more = log.child_processes as usize - log.child_pids.len();
            let pids = log.child_pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
            let msg = format!(
                "pid {} started {} (pid{} {pids}{}): the trace holds pid {} only{}; to profile a child, launch it directly (numascope record -- PROGRAM) or attach to it (numascope record -p PID)",
                self.pid,
                if log.child_processes == 1 { "a child process".to_string() } else { format!("{} child processes", log.child_processes) },
                if log.child_pids.len() == 1 { "" } else { "s" },
                if more > 0 { format!(" and {more} more") } else { String::new() },
                self.pid,
                if seen.other_samples > 0 { format!(", without the children's {} page-fault samples", seen.other_samples) } else { String::new() },
            );
            self.notes.push(msg.clone());
            self.warnings.push(super::Warning(msg));
        }
    }

    /// Adds the counter and uncore rows to the trace (the PMU's `mem_rows` are in), and counts
    /// what the manifest reports.
    fn add_source_rows(
        &self,
        trace: &mut TraceData,
        mem_rows: usize,
        (max_period, subsampled, duration_us, numa_snapshots): (u64, usize, u64, u64),
    ) -> Tally {
        let counter_rows = match &self.counters {
            Some(Ok(c)) => c.add_to_trace(trace),
            _ => 0,
        };
        if let Some(Ok(u)) = &self.uncore {
            u.add_to_trace(trace);
        }
        let (hint_loads, hint_stores) = hint_rows(trace);
        Tally {
            max_period,
            subsampled,
            mem_rows,
            counter_rows,
            hint_loads,
            hint_stores,
            duration_us,
            lost: self.faults.sampler.as_ref().map(|s| s.lost).unwrap_or(0),
            numa_snapshots,
            touch_samples: 0,
            touch_weight: 0,
        }
    }
}

/// Waits up to `within` for the child to exit (`once`: try at least once even with no time).
fn reap_within(pid: i32, within: Duration, once: bool) -> Option<(i32, String)> {
    let deadline = Instant::now() + within;
    if once {
        loop {
            if let Some(e) = try_reap(pid, false) {
                return Some(e);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    while Instant::now() < deadline {
        if let Some(e) = try_reap(pid, false) {
            return Some(e);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Hinting-fault rows (accesses the NUMA-balancing scanner caught), by op: (loads, stores).
fn hint_rows(trace: &TraceData) -> (usize, usize) {
    let ev = &trace.samples.event;
    let Some(k) = ev.values.iter().position(|v| v == "access-fault") else { return (0, 0) };
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
