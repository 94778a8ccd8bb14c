//! The recorded trace's manifest: each source's status with the reason, what each metric is
//! (measured, estimated, unavailable and why), the origin, capture and process.

use super::options::{CounterChoice, NumaBalancingChoice};
use super::session::{Session, Stop};
use crate::sources::pagefault::FaultEvent;
use crate::time::{iso8601_utc, unix_now_ms};
use crate::trace::*;

/// Counts from the finished capture that the manifest reports.
pub(super) struct Tally {
    /// Largest sampling period in force on a fault sample (1: every fault was sampled).
    pub(super) max_period: u64,
    /// Fault samples with a period above 1.
    pub(super) subsampled: usize,
    pub(super) mem_rows: usize,
    pub(super) counter_rows: usize,
    pub(super) hint_loads: usize,
    pub(super) hint_stores: usize,
    pub(super) duration_us: u64,
    /// Fault samples the kernel lost.
    pub(super) lost: u64,
    pub(super) numa_snapshots: u64,
    /// First-touch fault samples, and the faults they stand for (sum of their periods).
    pub(super) touch_samples: u64,
    pub(super) touch_weight: u64,
}

impl Tally {
    fn hint_rows(&self) -> usize {
        self.hint_loads + self.hint_stores
    }
}

fn failed(id: &str, reason: &str) -> SourceStatus {
    SourceStatus {
        id: id.into(),
        status: "failed".into(),
        reason: Some(reason.into()),
        sample_period: None,
        interval_ms: None,
    }
}

fn set(caps: &mut [Capability], metric: &str, status: Option<&str>, reason: String) {
    if let Some(c) = caps.iter_mut().find(|c| c.metric == metric) {
        if let Some(s) = status {
            c.status = s.into();
        }
        c.reason = reason;
    }
}

impl Session {
    fn adaptive(&self) -> bool {
        self.opts.fault_rate_hz > 0
    }

    fn fault_period(&self) -> u64 {
        self.opts.fault_period.max(1)
    }

    /// Why `--numa-balancing on` gave no access samples, with the balancer's own counts for the
    /// process where the kernel shows them.
    fn no_hinting_note(&self) -> String {
        let counts = match self.numa_sched {
            Some((passes, faults)) => format!(
                "; the kernel counted {passes} completed scan passes and {faults} hinting faults in this process (/proc/{}/sched: mm->numa_scan_seq, total_numa_faults)",
                self.pid
            ),
            None => String::new(),
        };
        let why = if !matches!(self.faults.sampler.as_ref().map(|s| s.event()), Ok(FaultEvent::Tracepoint(_))) {
            "the page-fault event is not the tracepoint exceptions:page_fault_user, so hinting faults cannot be told from first touches (see the page-faults source)"
        } else if self.topo.nodes.len() < 2 {
            "this machine has one NUMA node: the kernel accepts the setting, but with no other node to place memory on its balancer gave no hinting faults here \
             (on this kind of machine it may scan without the process taking any); record on a machine with two nodes or more for access samples"
        } else {
            "the kernel's balancer starts scanning a process about a second after it starts and then scans slowly: record longer, or a process that keeps touching its memory"
        };
        format!("--numa-balancing on: no NUMA hinting faults (access samples) were recorded: {why}{counts}")
    }

    /// The manifest of the recorded trace; takes the session's notes.
    pub(super) fn manifest(
        &mut self,
        t: &Tally,
        stop: &Stop,
        exit_code: Option<i32>,
        applied_plans: Vec<serde_json::Value>,
    ) -> Manifest {
        let used_sources = self.secondary_sources(t);
        if let Some(Ok(m)) = &self.mem.sampler {
            if m.counts.lost > 0 {
                self.notes.push(format!("{} PMU memory-access records were lost (ring buffers full)", m.counts.lost));
            }
        }
        if let Some(n) = &self.faults.note {
            self.notes.push(n.clone());
        }
        if self.opts.numa_balancing == NumaBalancingChoice::On && t.hint_rows() == 0 {
            self.notes.push(self.no_hinting_note());
        }
        if self.faults.hinting && !self.faults.hinting_at_start {
            self.notes.push(
                "automatic NUMA balancing was switched on during the recording: hinting faults are access samples from then on"
                    .into(),
            );
        }
        let capabilities = self.capabilities(t, &used_sources);
        let primary = vec![self.fault_status(t), self.procfs_status(t), self.sysfs_status()];
        let mut notes = std::mem::take(&mut self.notes);
        notes.extend(self.topo.notes.iter().cloned());
        let mut topo = self.topo.clone();
        let calibration = embedded_calibration(&mut topo, &mut notes);
        Manifest {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            producer: Producer::default(),
            created_at: iso8601_utc(unix_now_ms()),
            host: Some(self.topo.hostname.clone()).filter(|h| !h.is_empty()),
            trace_id: Some(crate::trace::writer::new_trace_id()),
            origin: self.origin(t),
            machine: topo.machine(),
            capture: Capture {
                start_monotonic_ns: self.start_ns.to_string(),
                start_unix_ms: self.start_unix_ms,
                duration_us: t.duration_us,
                stop_reason: stop.reason.into(),
                sources: self.probe.capture_sources(&[primary, used_sources].concat()),
                capabilities,
                lost_samples: t.lost,
                sample_count: 0,
                notes,
                page_scan: self.scan.facts(),
            },
            process: Some(ProcessInfo {
                pid: self.pid,
                start_time_ticks: self.start_ticks.map(|t| t.to_string()),
                command: self.command.clone(),
                attached: self.attached,
                exit_code,
                left_running: Some(self.left_running),
            }),
            applied_plans,
            tables: Vec::new(),
            calibration,
        }
    }

    fn origin(&self, t: &Tally) -> Origin {
        Origin {
            kind: "recorded".into(),
            generator: "numascope record".into(),
            seed: None,
            model: None,
            description: format!(
                "{} {} (pid {}) on {} for {:.1} s: page faults{} and /proc placement",
                if self.attached { "Attached to" } else { "Launched" },
                self.command.first().map(|s| s.as_str()).unwrap_or("?"),
                self.pid,
                self.topo.hostname,
                t.duration_us as f64 / 1e6,
                if t.mem_rows > 0 {
                    ", PMU memory-access samples"
                } else if t.hint_rows() > 0 {
                    ", NUMA hinting faults"
                } else {
                    ""
                }
            ),
            command: self.opts.command_line.clone(),
            from: None,
        }
    }

    /// Counters, uncore and the PMU events, used or failed.
    fn secondary_sources(&self, t: &Tally) -> Vec<SourceStatus> {
        let mut used: Vec<SourceStatus> = Vec::new();
        let interval_ms = self.opts.interval.as_millis() as u64;
        match &self.counters {
            Some(Ok(c)) => used.push(SourceStatus {
                id: "core-counters".into(),
                status: "used".into(),
                reason: Some(format!(
                    "per-thread counting events {} ({}), {} threads, {} rows (scope thread, cumulative, scaled by time_enabled/time_running{}){}{}",
                    c.names().join(", "),
                    if self.opts.counters == CounterChoice::Software { "software events: this machine's stand-in for the core set" } else { "hardware" },
                    c.thread_count(),
                    t.counter_rows,
                    if c.multiplexed_reads > 0 { format!("; {} reads were multiplexed", c.multiplexed_reads) } else { String::new() },
                    if c.exclude_kernel() { "; user mode only (no kernel profiling permission)" } else { "" },
                    if c.failed_threads.is_empty() { String::new() } else { format!("; {} threads could not be followed: {}", c.failed_threads.len(), c.failed_threads[0].1) }
                )),
                sample_period: None,
                interval_ms: Some(interval_ms),
            }),
            Some(Err(e)) => used.push(failed("core-counters", e)),
            None => {}
        }
        used.extend(crate::sources::uncore::source_status(&self.uncore, interval_ms));
        for (id, why) in &self.mem.refused {
            used.push(failed(id, why));
        }
        self.pmu_sources(&mut used);
        used
    }

    fn pmu_sources(&self, used: &mut Vec<SourceStatus>) {
        match &self.mem.sampler {
            Some(Ok(m)) => {
                let c = &m.counts;
                let other = self.mem.other;
                for id in m.sources() {
                    let n = self.mem.raw.iter().filter(|s| s.event == id).count();
                    used.push(SourceStatus {
                        id: id.into(),
                        status: "used".into(),
                        reason: Some(format!(
                            "{n} memory-access samples at about {} samples/s per event (frequency mode; weight = the period in force), {} event(s); \
                             all PMU events together: {} samples read, {} not a load/store, {} without a data address, {} undecodable, {} lost{}",
                            self.opts.mem_rate_hz,
                            m.event_count(),
                            c.samples + c.skipped_not_load_store + c.skipped_no_address,
                            c.skipped_not_load_store,
                            c.skipped_no_address,
                            c.bad,
                            c.lost,
                            if other > 0 { format!(", {other} from child processes not kept") } else { String::new() }
                        )),
                        sample_period: None,
                        interval_ms: None,
                    });
                }
            }
            Some(Err(e)) => {
                for spec in &self.mem.specs {
                    if !used.iter().any(|u| u.id == spec.source) {
                        used.push(failed(spec.source, e));
                    }
                }
            }
            None => {}
        }
    }

    fn fault_status(&self, t: &Tally) -> SourceStatus {
        let (adaptive, fault_period) = (self.adaptive(), self.fault_period());
        let sample_period = if adaptive { None } else { Some(fault_period) };
        let s = match &self.faults.sampler {
            Ok(s) => s,
            Err(e) => {
                return SourceStatus { sample_period, ..failed("page-faults", e) };
            }
        };
        let event = match s.event() {
            FaultEvent::Tracepoint(_) => format!(
                "tracepoint exceptions:page_fault_user ({})",
                if self.faults.hinting {
                    format!("NUMA balancing on{}: a repeat fault on a page is a hinting fault, a load or store by the error code's write bit; {} access rows",
                        if self.opts.numa_balancing == NumaBalancingChoice::On { " (switched on for this recording by --numa-balancing on, restored afterwards)" } else { "" },
                        t.hint_rows())
                } else {
                    "NUMA balancing was off, so no hinting faults: every fault is an ordinary one".to_string()
                }
            ),
            _ => "software page-fault event".to_string(),
        };
        let sampling = if adaptive {
            format!(
                "adaptive: every fault while a thread faults under {} /s, about {} samples/s above (kernel frequency mode; each sample's weight is the period in force: {})",
                self.opts.fault_rate_hz,
                self.opts.fault_rate_hz,
                if t.max_period > 1 { format!("{} samples had a period above 1, up to {}", t.subsampled, t.max_period) } else { "every fault was sampled".to_string() }
            )
        } else if fault_period == 1 {
            "every fault sampled".to_string()
        } else {
            format!("one fault in {fault_period} sampled")
        };
        SourceStatus {
            id: "page-faults".into(),
            status: "used".into(),
            reason: Some(format!(
                "{event}, {sampling}, {} event(s) ({} cpus{}), {} KiB ring each{}",
                s.event_count(),
                self.topo.online_cpus.len(),
                if self.attached { format!(" x {} threads", s.opened_tids().len()) } else { String::new() },
                s.ring_bytes_per_event() / 1024,
                if self.faults.base.exclude_kernel {
                    "; user-mode faults only (no kernel profiling permission)"
                } else {
                    ""
                }
            )),
            sample_period,
            interval_ms: None,
        }
    }

    fn procfs_status(&self, t: &Tally) -> SourceStatus {
        SourceStatus {
            id: "procfs".into(),
            status: "used".into(),
            reason: Some(format!(
                "thread cpu (task stat), se.nr_migrations, numa_maps ({} snapshots), vmstat and node numastat, polled",
                t.numa_snapshots
            )),
            sample_period: None,
            interval_ms: Some(self.opts.interval.as_millis() as u64),
        }
    }

    fn sysfs_status(&self) -> SourceStatus {
        SourceStatus {
            id: "sysfs-topology".into(),
            status: "used".into(),
            reason: Some(self.probe.source("sysfs-topology").map(|s| s.reason.clone()).unwrap_or_default()),
            sample_period: None,
            interval_ms: None,
        }
    }

    /// The probe's capabilities, corrected by what this recording did.
    fn capabilities(&self, t: &Tally, used_sources: &[SourceStatus]) -> Vec<Capability> {
        let mut caps = self.probe.capture_capabilities();
        self.first_touch_capability(t, &mut caps);
        self.placement_capability(&mut caps);
        self.thread_capability(&mut caps);
        crate::sources::uncore::update_capabilities(&mut caps, &self.uncore, self.opts.uncore);
        if t.counter_rows > 0 && self.opts.counters == CounterChoice::Core {
            for (metric, what) in [("ipc", "instructions / cycles"), ("l3-mpki", "llc-misses per 1000 instructions")] {
                set(
                    &mut caps,
                    metric,
                    Some("measured"),
                    format!("{what} from per-thread counting events ({} rows)", t.counter_rows),
                );
            }
        } else if let Some(Err(e)) = &self.counters {
            for metric in ["ipc", "l3-mpki"] {
                set(&mut caps, metric, Some("unavailable"), format!("core counters: {e}"));
            }
        }
        self.access_capabilities(t, used_sources, &mut caps);
        self.alloc.update_capabilities(&mut caps);
        if let Some(code) = &self.code {
            code.update_capabilities(&mut caps);
        }
        if let Err(e) = &self.faults.sampler {
            set(&mut caps, "first-touch", Some("unavailable"), format!("page-fault sampling failed: {e}"));
        }
        caps
    }

    fn first_touch_capability(&self, t: &Tally, caps: &mut [Capability]) {
        let (adaptive, fault_period) = (self.adaptive(), self.fault_period());
        let rate = self.opts.fault_rate_hz;
        let (seen, weight) = (t.touch_samples, t.touch_weight);
        if !adaptive && fault_period > 1 {
            set(caps, "first-touch", Some("estimated"), format!(
                "sampled: page-fault sampling, one fault in {fault_period}: {seen} first touches seen, standing for about {weight} by their weights; a page's first-touching thread is known only when its fault was sampled (about 1 page in {fault_period}); page placement is unaffected (the placement scan covers every resident page)"
            ));
        }
        if (!adaptive && fault_period == 1) || (adaptive && t.max_period <= 1) {
            let reason = if adaptive {
                format!("page-fault sampling: every fault was sampled (adaptive sampling at {rate} /s never had to thin them)")
            } else {
                "page-fault sampling, every fault (--fault-period 1)".to_string()
            };
            set(caps, "first-touch", None, reason);
        }
        if adaptive && t.max_period > 1 {
            set(caps, "first-touch", Some("estimated"), format!(
                "sampled: adaptive page-fault sampling (at most about {rate} samples/s per thread): while the program faulted faster, faults were sampled ({} samples stood for up to {} faults each): {seen} first touches seen, standing for about {weight} by their weights; a page's first-touching thread is known only when its fault was sampled; record with --fault-period 1 for every first touch; page placement is unaffected (the placement scan covers every resident page)",
                t.subsampled, t.max_period
            ));
        }
    }

    /// thread-placement: the thread list is complete when the task records came (the poller
    /// alone misses threads that live between two polls).
    fn thread_capability(&self, caps: &mut [Capability]) {
        if self.faults.sampler.is_err() {
            return;
        }
        let log = &self.seen.tasks;
        let created = log.threads.values().filter(|t| t.created.is_some()).count();
        let exited = log.threads.values().filter(|t| t.exited_ns.is_some()).count();
        // The rings are shared with the fault samples: what the kernel dropped may hold task records.
        let lost = self.faults.last_lost;
        set(caps, "thread-placement", Some("measured"), format!(
            "threads: {} from the kernel's task records (perf fork, exit and comm records: {created} created and {exited} ended during the recording, with their exact times; {} record(s) read{}); each thread's cpu from /proc/PID/task/TID/stat field 39 (processor), polled every {} ms",
            if lost > 0 {
                format!("every thread the /proc polls, the samples and the task records saw (the kernel dropped {lost} ring records, which may have held thread starts or exits)")
            } else {
                "every thread".to_string()
            },
            log.records,
            if log.child_processes > 0 { format!(", {} child process(es) not counted as threads", log.child_processes) } else { String::new() },
            self.opts.interval.as_millis(),
        ));
    }

    /// page-placement: measured by an exhaustive scan of the resident pages when one completed.
    fn placement_capability(&self, caps: &mut [Capability]) {
        let Some(f) = self.scan.facts() else { return };
        if !caps.iter().any(|c| c.metric == "page-placement" && c.status == "measured") {
            return;
        }
        if f.scans == 0 {
            let why = f.error.clone().unwrap_or_else(|| "the process exited before a scan completed".into());
            set(caps, "page-placement", None, format!(
                "numa_maps snapshots per mapping and move_pages queries of the pages fault samples saw; the placement scan of every resident page did not complete ({why})"
            ));
            return;
        }
        let nodes: Vec<String> =
            f.resident_pages_by_node.iter().map(|n| format!("node {}: {}", n.node, n.pages)).collect();
        set(caps, "page-placement", Some("measured"), format!(
            "exhaustive scan of resident pages (pagemap + move_pages, {} scans, the last {}): {} pages resident ({}){}; numa_maps snapshots per mapping",
            f.scans,
            if f.last_scan_at_stop { "at the stop".to_string() } else { format!("at {:.1} s (the process exited before the stop)", f.last_scan_us.unwrap_or(0) as f64 / 1e6) },
            f.resident_pages,
            nodes.join(", "),
            if f.limit_hit { format!("; capped at {} pages: pages beyond have no row (see the notes)", f.page_limit) } else { String::new() },
        ));
    }

    /// memory-accesses, access-latency, data-source: from the PMU, from hinting faults, or why not.
    fn access_capabilities(&self, t: &Tally, used_sources: &[SourceStatus], caps: &mut [Capability]) {
        if t.mem_rows == 0 && t.hint_rows() > 0 {
            set(caps, "memory-accesses", Some("estimated"), format!(
                "from NUMA hinting faults ({} loads, {} stores; automatic NUMA balancing was on): which thread touched which page, about once per page per scan pass of the kernel's balancer, not how often; traffic from them is relative, and stores include copy-on-write faults",
                t.hint_loads, t.hint_stores
            ));
        }
        let metrics = [
            ("memory-accesses", "sampled memory accesses"),
            ("access-latency", "load latency"),
            ("data-source", "data source per access"),
        ];
        if t.mem_rows > 0 {
            let by: Vec<&str> =
                self.mem.sampler.as_ref().and_then(|p| p.as_ref().ok()).map(|m| m.sources()).unwrap_or_default();
            for (metric, what) in metrics {
                set(caps, metric, Some("measured"), format!("{what} from {} ({} samples)", by.join(", "), t.mem_rows));
            }
            return;
        }
        // The probe may have promised IBS/PEBS: say why this recording has no access samples.
        let why: Vec<String> = used_sources
            .iter()
            .filter(|u| u.status != "used")
            .map(|u| format!("{}: {}", u.id, u.reason.clone().unwrap_or_default()))
            .collect();
        for (metric, _) in metrics {
            if metric == "memory-accesses" && t.hint_rows() > 0 {
                continue;
            }
            if let Some(c) = caps.iter_mut().find(|c| c.metric == metric && c.status == "measured") {
                c.status = "unavailable".into();
                c.reason = if !self.opts.mem_sampling {
                    "PMU memory-access sampling was turned off (--no-pmu)".into()
                } else if why.is_empty() {
                    "the PMU memory events recorded no load/store sample with an address".into()
                } else {
                    format!("PMU memory-access sampling failed: {}", why.join("; "))
                };
            }
        }
    }
}

/// The latest `numascope bench` calibration of this machine from the cache directory, with a
/// capture note saying which one was embedded (docs/bench.md).
fn embedded_calibration(topo: &mut crate::topology::Topology, notes: &mut Vec<String>) -> Option<serde_json::Value> {
    let dir = crate::bench::output::cache_dir();
    let (path, machine) = crate::bench::output::describe_calibration(topo, dir.as_deref())?;
    let cal = &machine["calibration"];
    notes.push(format!(
        "embedded this machine's numascope bench calibration of {} (fingerprint {}, {})",
        cal["date"].as_str().unwrap_or("?"),
        cal["fingerprint"].as_str().unwrap_or("?"),
        path.display()
    ));
    Some(machine)
}
