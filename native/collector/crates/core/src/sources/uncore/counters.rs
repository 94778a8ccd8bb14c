//! Counting: the planned events opened system-wide, read and scaled (time_enabled /
//! time_running when multiplexed), summed per (counter, scope) into rows; the rows written into
//! the trace, and the recording's source status and capabilities.

use std::collections::{BTreeMap, BTreeSet};

use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::Counter;
use perf_event_open::event::dp::DynamicPmu;

use super::plan::plan_uncore;
use super::spec::{Scope, UncoreSpec};
use crate::topology::Roots;
use crate::trace::{Capability, SourceStatus};

/// The opened events and the rows read from them.
pub struct UncoreCounters {
    pub(super) specs: Vec<UncoreSpec>,
    pub(super) counters: Vec<Counter>,
    /// (time_us, counter, scope, cumulative bytes)
    pub(super) rows: Vec<(i64, &'static str, Scope, f64)>,
    /// Reads where the kernel had multiplexed an event (scaled by time_enabled / time_running).
    pub multiplexed_reads: u64,
    /// (counter, scope) sums left out of a poll because one of their events could not be read.
    pub incomplete_sums: u64,
    /// What was planned and why (the plan's summary).
    pub(super) summary: String,
}

impl UncoreCounters {
    /// Opens every planned event (system-wide on its cpu); the first failure is the error.
    #[allow(clippy::field_reassign_with_default)]
    pub fn open(specs: Vec<UncoreSpec>) -> Result<Self, String> {
        let mut opts = Opts::default();
        opts.enable = true;
        opts.stat_format.time_enabled = true;
        opts.stat_format.time_running = true;
        let mut counters = Vec::new();
        for s in &specs {
            let ev =
                DynamicPmu { ty: s.ty, config: s.config[0], config1: s.config[1], config2: s.config[2], config3: 0 };
            let c = Counter::new(ev, (Proc::ALL, Cpu(s.cpu)), &opts).map_err(|e| {
                let hint = match e.raw_os_error() {
                    Some(libc::EACCES) | Some(libc::EPERM) => {
                        " (system-wide uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid <= 0)"
                    }
                    _ => "",
                };
                format!("cannot open {}/{} ({}) on cpu {}: {e}{hint}", s.pmu, s.counter, s.event, s.cpu)
            })?;
            counters.push(c);
        }
        Ok(UncoreCounters {
            specs,
            counters,
            rows: Vec::new(),
            multiplexed_reads: 0,
            incomplete_sums: 0,
            summary: String::new(),
        })
    }

    /// Plans and opens the uncore events of the machine under `roots`. `None`: nothing to count
    /// (no uncore PMU with a known encoding, and no sysfs file that failed); `Some(Err)`: the
    /// source failed, with the reason.
    pub fn start(roots: &Roots, node_of_cpu: &dyn Fn(u32) -> i32) -> Option<Result<Self, String>> {
        let plan = plan_uncore(roots, node_of_cpu);
        if plan.specs.is_empty() {
            return plan.failure().map(Err);
        }
        let summary = plan.summary();
        Some(UncoreCounters::open(plan.specs).map(|mut u| {
            u.summary = summary;
            u
        }))
    }

    /// The PMUs counted, each once.
    pub fn pmus(&self) -> Vec<String> {
        let mut v: Vec<String> = self.specs.iter().map(|s| s.pmu.clone()).collect();
        v.dedup();
        v
    }

    /// The counters written, each once.
    pub fn counter_names(&self) -> Vec<&'static str> {
        let set: BTreeSet<&'static str> = self.specs.iter().map(|s| s.counter).collect();
        set.into_iter().collect()
    }

    /// Reads every event and adds one row per (counter, scope): the sum over that scope's events.
    pub fn read(&mut self, time_us: i64) {
        let mut values: Vec<Option<f64>> = Vec::with_capacity(self.counters.len());
        for c in &self.counters {
            values.push(match c.stat() {
                Ok(st) => {
                    let (en, run) = (st.time_enabled.unwrap_or(0), st.time_running.unwrap_or(0));
                    if run > 0 && run < en {
                        self.multiplexed_reads += 1;
                        Some(st.count as f64 * en as f64 / run as f64)
                    } else if run == 0 && en > 0 {
                        None // enabled but never on the PMU yet: no count to scale
                    } else {
                        Some(st.count as f64)
                    }
                }
                Err(_) => None,
            });
        }
        let (sums, incomplete) = sum_by_scope(&self.specs, &values);
        self.incomplete_sums += incomplete as u64;
        for ((counter, scope), v) in sums {
            self.rows.push((time_us, counter, scope, v));
        }
    }

    /// Rows read so far whose counter starts with `prefix`.
    pub fn rows_of(&self, prefix: &str) -> usize {
        self.rows.iter().filter(|r| r.1.starts_with(prefix)).count()
    }

    /// The readings taken after the first `from` (in the order read: time order), as
    /// (time µs, counter, scope, cumulative bytes): a reader that keeps how many it has seen
    /// (the live windows) takes only the new ones.
    pub fn readings_since(&self, from: usize) -> &[(i64, &'static str, Scope, f64)] {
        &self.rows[from.min(self.rows.len())..]
    }

    /// Writes the rows into `counters` (scope `node` or `socket`), keeping the table in time order.
    pub fn add_to_trace(&self, trace: &mut crate::trace::TraceData) -> usize {
        self.write_counters(&mut trace.counters)
    }

    pub(super) fn write_counters(&self, c: &mut crate::trace::Counters) -> usize {
        for &(t, name, scope, v) in &self.rows {
            c.time_us.push(t);
            c.counter.push(name);
            c.scope.push(scope.name());
            c.scope_id.push(scope.id());
            c.value.push(v);
        }
        crate::sources::damon::sort_counters_by_time(c);
        self.rows.len()
    }

    /// The `uncore` source's reason for a recording.
    pub fn source_reason(&self) -> String {
        let mut s = format!(
            "system-wide uncore counting of {} ({}), cumulative bytes ({} rows); encodings from the kernel's sysfs events and Linux perf's event JSON, not yet checked on hardware by this project",
            self.pmus().join(", "),
            self.counter_names().join(", "),
            self.rows.len()
        );
        if !self.summary.is_empty() {
            s.push_str(&format!(": {}", self.summary));
        }
        if self.multiplexed_reads > 0 {
            s.push_str(&format!("; {} reads were multiplexed and scaled", self.multiplexed_reads));
        }
        if self.incomplete_sums > 0 {
            s.push_str(&format!(
                "; {} sums were left out because one of their events could not be read",
                self.incomplete_sums
            ));
        }
        s
    }
}

/// Bytes per (counter, scope) from raw counts (None: that event could not be read), and how many
/// sums were left out because one of their events was unreadable.
pub fn sum_by_scope(specs: &[UncoreSpec], counts: &[Option<f64>]) -> (BTreeMap<(&'static str, Scope), f64>, usize) {
    let mut out: BTreeMap<(&'static str, Scope), f64> = BTreeMap::new();
    let mut broken: BTreeSet<(&'static str, Scope)> = BTreeSet::new();
    for (s, v) in specs.iter().zip(counts) {
        let k = (s.counter, s.scope);
        match v {
            Some(v) => *out.entry(k).or_insert(0.0) += v * s.bytes_per_count,
            None => {
                broken.insert(k);
            }
        }
    }
    for k in &broken {
        out.remove(k);
    }
    (out, broken.len())
}

/// The `uncore` entry of `capture.sources` for a recording (None: not planned, the probe's
/// verdict stands).
pub fn source_status(u: &Option<Result<UncoreCounters, String>>, interval_ms: u64) -> Option<SourceStatus> {
    match u {
        Some(Ok(u)) => Some(SourceStatus {
            id: "uncore".into(),
            status: "used".into(),
            reason: Some(u.source_reason()),
            sample_period: None,
            interval_ms: Some(interval_ms),
        }),
        Some(Err(e)) => Some(SourceStatus {
            id: "uncore".into(),
            status: "failed".into(),
            reason: Some(e.clone()),
            sample_period: None,
            interval_ms: None,
        }),
        None => None,
    }
}

/// Sets `memory-bandwidth` and `link-bandwidth` from what a recording read: measured when rows
/// were read, unavailable with the reason otherwise. `enabled`: uncore counting was asked for.
pub fn update_capabilities(caps: &mut [Capability], u: &Option<Result<UncoreCounters, String>>, enabled: bool) {
    for (metric, prefix, what) in [
        ("memory-bandwidth", "mc-", "memory-controller bytes"),
        ("link-bandwidth", "link-", "interconnect link bytes (UPI / xGMI data)"),
    ] {
        let Some(c) = caps.iter_mut().find(|c| c.metric == metric) else { continue };
        match u {
            Some(Ok(u)) if u.rows_of(prefix) > 0 => {
                c.status = "measured".into();
                c.reason = format!(
                    "{what} from uncore counters ({} rows of {}; whole machine, not only the recorded process; encodings not yet checked on hardware)",
                    u.rows_of(prefix),
                    u.counter_names().iter().filter(|n| n.starts_with(prefix)).copied().collect::<Vec<_>>().join(", ")
                );
            }
            Some(Err(e)) => {
                c.status = "unavailable".into();
                c.reason = format!("uncore counters: {e}");
            }
            Some(Ok(u)) if u.specs.iter().any(|s| s.counter.starts_with(prefix)) => {
                c.status = "unavailable".into();
                c.reason = format!("uncore {what}: no rows were read");
            }
            _ if c.status == "measured" => {
                c.status = "unavailable".into();
                c.reason = if enabled {
                    format!("no uncore {what} were read")
                } else {
                    "uncore counting was turned off (--no-uncore)".into()
                };
            }
            _ => {}
        }
    }
}
