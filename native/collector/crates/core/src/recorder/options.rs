//! Record options: every range and default in one place ([`RECORD_LIMITS`]), checked by one
//! [`RecordRequest::validate`] that the CLI, `numascope serve` and the Node binding all call, with
//! error messages that name the option the way each of them spells it ([`Naming`]).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

/// The longest `--duration` accepted: 30 days. Trace times are 64-bit µs (format v4: no limit a
/// recording reaches); what bounds a long recording is its sample rows ([`MAX_RECORD_SAMPLES`]).
pub const MAX_CAPTURE: Duration = Duration::from_secs(30 * 86_400);

/// Most memory-access sample rows one recording keeps: the samples table stays under the trace
/// readers' 2 GiB an entry (about 38 bytes a row: 1.9 GB), and the recorder's memory bounded. At
/// the defaults (1 kHz of page-fault samples per thread) 8 busy threads reach it after 104 minutes;
/// the recorder then stops, writes what it has and says so (stop reason `sample-limit`). Lower
/// `--fault-rate` or `--mem-rate` to record longer.
pub const MAX_RECORD_SAMPLES: usize = 50_000_000;

/// Default of [`RecordOptions::fault_rate_hz`].
pub const DEFAULT_FAULT_RATE_HZ: u64 = crate::sources::pagefault::DEFAULT_RATE_HZ;

/// A numeric option's accepted range (inclusive) and its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Limit {
    pub min: u64,
    pub max: u64,
    /// None: the option is unset unless given (see its documentation).
    pub default: Option<u64>,
}

impl Limit {
    fn contains(&self, v: u64) -> bool {
        (self.min..=self.max).contains(&v)
    }
}

/// Every range and default of the record options, in the units the front ends take them in.
/// The Node binding exports it (`recordLimits()`), so that other checks (the desktop app's
/// schemas) can be compared with the collector's.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordLimits {
    /// Seconds: more than 0 (fractions allowed), at most this. No default: until the process
    /// exits or the recording is stopped, and at most this long.
    pub duration_max_s: u64,
    /// /proc polling interval, ms.
    pub interval_ms: Limit,
    /// Sample one page fault in N. Unset by default: adaptive sampling (`fault_rate_hz`).
    pub fault_period: Limit,
    /// Adaptive page-fault sampling rate per thread; not together with `fault_period`.
    pub fault_rate_hz: Limit,
    /// PMU memory-access samples per second per event.
    pub mem_rate_hz: Limit,
    /// Live window length, ms (serve's WebSocket, the Node binding's `onWindow`).
    pub window_ms: Limit,
    /// Most resident pages one placement scan records (4 KiB pages; 0: no scan). The scan reads
    /// where every resident page of the target sits (recorder/placement_scan.rs); beyond this
    /// many, pages get no row and the manifest says so (numa_maps still counts them per region).
    pub scan_max_pages: Limit,
    /// User call-stack frames per page-fault sample (the sampled instruction included; 0: no
    /// code locations). The kernel caps it at /proc/sys/kernel/perf_event_max_stack (127).
    pub call_stack_depth: Limit,
    /// Values of the fault event option; the first is the default.
    pub fault_events: [&'static str; 3],
    /// Values of the per-thread counter option; the first is the default.
    pub counter_sets: [&'static str; 3],
}

pub const RECORD_LIMITS: RecordLimits = RecordLimits {
    duration_max_s: MAX_CAPTURE.as_secs(),
    interval_ms: Limit { min: 1, max: 60_000, default: Some(100) },
    fault_period: Limit { min: 1, max: 1_000_000, default: None },
    fault_rate_hz: Limit { min: 100, max: 1_000_000, default: Some(DEFAULT_FAULT_RATE_HZ) },
    mem_rate_hz: Limit { min: 1, max: 100_000, default: Some(crate::sources::pmu::DEFAULT_MEM_RATE_HZ) },
    window_ms: Limit { min: 10, max: 60_000, default: Some(250) },
    // 4 Mi pages = 16 GiB resident: about 200 MiB of recorder memory and a second of scan at most.
    scan_max_pages: Limit { min: 0, max: 1 << 26, default: Some(1 << 22) },
    // 32 frames: deep enough for the call path of most loops (bench/overhead.sh has the cost).
    call_stack_depth: Limit { min: 0, max: 127, default: Some(32) },
    fault_events: ["auto", "software", "tracepoint"],
    counter_sets: ["core", "software", "off"],
};

/// What to record.
#[derive(Clone, Debug)]
pub enum Target {
    /// Launch this argv (program resolved through PATH) and record it from its exec.
    Launch(Vec<String>),
    /// Attach to a running process.
    Attach(i32),
}

/// Options of one recording, as the recorder uses them. Build them with [`RecordRequest::validate`]
/// (or [`RecordOptions::new`] and [`RecordOptions::validate`]).
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
    /// An extra stop flag (for embedders such as the Node binding).
    pub stop: Option<Arc<AtomicBool>>,
    /// Live per-window aggregates (for `numascope serve`): see [`crate::live`] for the window
    /// contents and how they agree with the trace. None: no live reporting.
    pub live: Option<crate::live::LiveSink>,
    /// How often a live window is sent (when `live` is set).
    pub live_window: Duration,
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
    /// A launched command still running when the capture stops is terminated (SIGTERM, then
    /// SIGKILL) instead of being left running (`--kill-on-stop`, `killOnStop`). Off by default:
    /// the recorder detaches and the program keeps running, so that a plan can be applied to it
    /// and it can be recorded again (see [`crate::recorder`], "Stopping").
    pub kill_on_stop: bool,
    /// Switch automatic NUMA balancing on for the recording (`--numa-balancing on`), so that its
    /// hinting faults give access samples; the previous value is restored at the end.
    pub numa_balancing: NumaBalancingChoice,
    /// Preload the allocation-site shim into a launched command and store its allocations with
    /// their call stacks (`--no-alloc-sites` turns it off; docs/alloc-sites.md). Ignored when
    /// attaching: the capability `allocation-sites` then says why there are none.
    pub alloc_sites: bool,
    /// Most resident pages a placement scan records (`--scan-max-pages`; 0: no scan).
    pub scan_max_pages: u64,
    /// User call-stack frames per page-fault sample (`--call-stack-depth`; 0: no code locations).
    pub call_stack_depth: u16,
    /// When attaching: open the page-fault and PMU sampling events on these threads of the
    /// process only (and the threads they create, by inheritance), as `perf record -t`; empty:
    /// every thread. /proc polling, counters and the placement scan still cover the process.
    pub sample_tids: Vec<u32>,
}

/// What [`RecordOptions::numa_balancing`] does with /proc/sys/kernel/numa_balancing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaBalancingChoice {
    /// Leave it as it is (the default).
    Leave,
    /// Set it to 1 for the recording (needs root), restore the previous value afterwards.
    On,
}

impl std::str::FromStr for NumaBalancingChoice {
    type Err = String;
    /// `leave` or `on` (the CLI's `--numa-balancing`, serve's and napi's `numaBalancing`).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "leave" => Ok(NumaBalancingChoice::Leave),
            "on" => Ok(NumaBalancingChoice::On),
            _ => Err(format!("NUMA balancing {s:?}: expected leave or on")),
        }
    }
}

/// Which perf event [`RecordOptions::fault_event`] samples page faults with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultEventChoice {
    /// The tracepoint `exceptions:page_fault_user` while automatic NUMA balancing is on (its
    /// error codes' write bit makes the kernel's hinting faults, i.e. sampled accesses, loads or
    /// stores; see [`crate::sources::pagefault::classify`]),
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

/// Which per-thread counters [`RecordOptions::counters`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterChoice {
    /// cycles, instructions, llc-misses (needs a cpu PMU; the source is `failed` without one).
    Core,
    /// task-clock, page-faults, context-switches (every kernel).
    Software,
    Off,
}

impl std::str::FromStr for CounterChoice {
    type Err = String;
    /// `core`, `software` or `off` (the CLI's `--counters`).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "core" => Ok(CounterChoice::Core),
            "software" => Ok(CounterChoice::Software),
            "off" => Ok(CounterChoice::Off),
            _ => Err(format!("counter set {s:?}: expected core, software or off")),
        }
    }
}

fn ms(limit: &Limit) -> Duration {
    Duration::from_millis(limit.default.unwrap_or(limit.min))
}

impl RecordOptions {
    /// The defaults of [`RECORD_LIMITS`] for every option.
    pub fn new(target: Target, output: PathBuf) -> Self {
        let l = &RECORD_LIMITS;
        RecordOptions {
            target,
            output,
            duration: None,
            interval: ms(&l.interval_ms),
            command_line: Vec::new(),
            stop: None,
            live: None,
            live_window: ms(&l.window_ms),
            damon: false,
            fault_period: 1,
            fault_rate_hz: l.fault_rate_hz.default.unwrap_or(DEFAULT_FAULT_RATE_HZ),
            mem_sampling: true,
            mem_rate_hz: l.mem_rate_hz.default.unwrap_or(crate::sources::pmu::DEFAULT_MEM_RATE_HZ),
            counters: CounterChoice::Core,
            uncore: true,
            fault_event: FaultEventChoice::Auto,
            kill_on_stop: false,
            numa_balancing: NumaBalancingChoice::Leave,
            alloc_sites: true,
            scan_max_pages: l.scan_max_pages.default.unwrap_or(0),
            call_stack_depth: l.call_stack_depth.default.unwrap_or(0) as u16,
            sample_tids: Vec::new(),
        }
    }

    /// Checks every numeric option against [`RECORD_LIMITS`] (the recorder calls it before it
    /// starts anything, so options built by hand are held to the same ranges).
    pub fn validate(&self) -> Result<(), OptionError> {
        let l = &RECORD_LIMITS;
        let in_ms = |d: Duration, limit: &Limit| limit.contains(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        if self.duration.is_some_and(|d| d.is_zero() || d > MAX_CAPTURE) {
            return Err(OptionError::range(OptionField::Duration));
        }
        if !in_ms(self.interval, &l.interval_ms) {
            return Err(OptionError::range(OptionField::Interval));
        }
        if self.fault_rate_hz == 0 && !l.fault_period.contains(self.fault_period) {
            return Err(OptionError::range(OptionField::FaultPeriod));
        }
        if self.fault_rate_hz != 0 && !l.fault_rate_hz.contains(self.fault_rate_hz) {
            return Err(OptionError::range(OptionField::FaultRate));
        }
        if !l.mem_rate_hz.contains(self.mem_rate_hz) {
            return Err(OptionError::range(OptionField::MemRate));
        }
        if !in_ms(self.live_window, &l.window_ms) {
            return Err(OptionError::range(OptionField::Window));
        }
        if !l.call_stack_depth.contains(self.call_stack_depth as u64) {
            return Err(OptionError::range(OptionField::CallStackDepth));
        }
        if !l.scan_max_pages.contains(self.scan_max_pages) {
            return Err(OptionError::range(OptionField::ScanMaxPages));
        }
        match &self.target {
            Target::Attach(pid) if *pid <= 0 => Err(OptionError::range(OptionField::Pid)),
            Target::Launch(argv) if argv.first().is_none_or(|a| a.is_empty()) => {
                Err(OptionError::range(OptionField::Command))
            }
            _ => Ok(()),
        }
    }
}

/// Record options as a front end received them (CLI flags, serve's JSON body, the Node binding's
/// object): `None` takes the default. [`RecordRequest::validate`] turns them into
/// [`RecordOptions`].
#[derive(Clone, Debug, Default)]
pub struct RecordRequest {
    /// Attach to this process (exactly one of `pid` and `command`).
    pub pid: Option<i64>,
    /// Launch this argv.
    pub command: Option<Vec<String>>,
    pub output: PathBuf,
    pub duration_s: Option<f64>,
    pub interval_ms: Option<u64>,
    pub fault_period: Option<u64>,
    pub fault_rate_hz: Option<u64>,
    pub fault_event: Option<String>,
    pub counters: Option<String>,
    pub mem_rate_hz: Option<u64>,
    pub window_ms: Option<u64>,
    pub damon: Option<bool>,
    pub mem_sampling: Option<bool>,
    pub uncore: Option<bool>,
    /// Terminate a launched command still running at the stop (default: leave it running).
    pub kill_on_stop: Option<bool>,
    /// `leave` (default) or `on`.
    pub numa_balancing: Option<String>,
    pub scan_max_pages: Option<u64>,
    /// User call-stack frames per fault sample (default 32; 0: none).
    pub call_stack_depth: Option<u64>,
    /// Preload the allocation-site shim into a launched command (default true; `false` is
    /// `--no-alloc-sites`, serve's and the binding's `allocSites: false`).
    pub alloc_sites: Option<bool>,
}

impl RecordRequest {
    /// Checks every option (ranges, choices, the target) and fills in the defaults; the first
    /// problem found is the error. Nothing is started: whether the pid exists or the program can
    /// be found is checked when recording starts.
    pub fn validate(&self) -> Result<RecordOptions, OptionError> {
        use OptionField as F;
        let l = &RECORD_LIMITS;
        if self.fault_period.is_some_and(|n| !l.fault_period.contains(n)) {
            return Err(OptionError::range(F::FaultPeriod));
        }
        if self.fault_rate_hz.is_some_and(|n| !l.fault_rate_hz.contains(n)) {
            return Err(OptionError::range(F::FaultRate));
        }
        if self.fault_period.is_some() && self.fault_rate_hz.is_some() {
            return Err(OptionError { field: F::FaultSampling, problem: Problem::BothGiven });
        }
        let fault_event = match &self.fault_event {
            None => FaultEventChoice::Auto,
            Some(s) => {
                s.parse().map_err(|_| OptionError { field: F::FaultEvent, problem: Problem::Unknown(s.clone()) })?
            }
        };
        let counters = match &self.counters {
            None => CounterChoice::Core,
            Some(s) => {
                s.parse().map_err(|_| OptionError { field: F::Counters, problem: Problem::Unknown(s.clone()) })?
            }
        };
        let numa_balancing = match &self.numa_balancing {
            None => NumaBalancingChoice::Leave,
            Some(s) => {
                s.parse().map_err(|_| OptionError { field: F::NumaBalancing, problem: Problem::Unknown(s.clone()) })?
            }
        };
        let duration = match self.duration_s {
            None => None,
            Some(s) if s > 0.0 && s <= MAX_CAPTURE.as_secs_f64() => Some(Duration::from_secs_f64(s)),
            Some(_) => return Err(OptionError::range(F::Duration)),
        };
        let checked = |v: Option<u64>, limit: &Limit, field: OptionField| match v {
            Some(n) if !limit.contains(n) => Err(OptionError::range(field)),
            v => Ok(v.or(limit.default).unwrap_or(limit.min)),
        };
        let interval_ms = checked(self.interval_ms, &l.interval_ms, F::Interval)?;
        let mem_rate_hz = checked(self.mem_rate_hz, &l.mem_rate_hz, F::MemRate)?;
        let window_ms = checked(self.window_ms, &l.window_ms, F::Window)?;
        let scan_max_pages = checked(self.scan_max_pages, &l.scan_max_pages, F::ScanMaxPages)?;
        let call_stack_depth = checked(self.call_stack_depth, &l.call_stack_depth, F::CallStackDepth)?;
        let mut o = RecordOptions::new(self.target()?, self.output.clone());
        o.duration = duration;
        o.interval = Duration::from_millis(interval_ms);
        o.live_window = Duration::from_millis(window_ms);
        o.mem_rate_hz = mem_rate_hz;
        o.scan_max_pages = scan_max_pages;
        o.call_stack_depth = call_stack_depth as u16;
        o.fault_event = fault_event;
        o.counters = counters;
        if let Some(n) = self.fault_period {
            o.fault_period = n;
            o.fault_rate_hz = 0;
        }
        if let Some(hz) = self.fault_rate_hz {
            o.fault_rate_hz = hz;
        }
        o.damon = self.damon.unwrap_or(false);
        o.mem_sampling = self.mem_sampling.unwrap_or(true);
        o.uncore = self.uncore.unwrap_or(true);
        o.kill_on_stop = self.kill_on_stop.unwrap_or(false);
        o.alloc_sites = self.alloc_sites.unwrap_or(true);
        o.numa_balancing = numa_balancing;
        o.validate()?;
        Ok(o)
    }

    fn target(&self) -> Result<Target, OptionError> {
        match (self.pid, &self.command) {
            (Some(_), Some(_)) => Err(OptionError { field: OptionField::Target, problem: Problem::BothGiven }),
            (None, None) => Err(OptionError { field: OptionField::Target, problem: Problem::NoneGiven }),
            (Some(p), None) => match i32::try_from(p) {
                Ok(p) if p > 0 => Ok(Target::Attach(p)),
                _ => Err(OptionError::range(OptionField::Pid)),
            },
            (None, Some(argv)) if argv.first().is_some_and(|a| !a.is_empty()) => Ok(Target::Launch(argv.clone())),
            (None, Some(_)) => Err(OptionError::range(OptionField::Command)),
        }
    }
}

/// The option an [`OptionError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionField {
    /// pid or command: neither or both given.
    Target,
    Pid,
    Command,
    Duration,
    Interval,
    FaultPeriod,
    FaultRate,
    /// fault period and fault rate both given.
    FaultSampling,
    FaultEvent,
    Counters,
    MemRate,
    Window,
    NumaBalancing,
    /// Not a boolean (serve's JSON, where a value can be of any type).
    KillOnStop,
    ScanMaxPages,
    CallStackDepth,
    /// Not a boolean (serve's JSON).
    AllocSites,
}

/// How a front end spells the options, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// `numascope record` flags (`--interval-ms`).
    Cli,
    /// `numascope serve`'s JSON fields (`intervalMs`, `durationS`).
    Serve,
    /// The Node binding's fields (`intervalMs`, `durationMs`).
    Node,
    /// [`RecordOptions`]' own fields (options built in Rust).
    Rust,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Problem {
    OutOfRange,
    BothGiven,
    NoneGiven,
    Unknown(String),
}

/// A record option that is out of range, unknown, missing or in conflict with another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    pub field: OptionField,
    problem: Problem,
}

impl OptionError {
    /// The option's value is not one it accepts (its message states the range).
    pub fn range(field: OptionField) -> Self {
        OptionError { field, problem: Problem::OutOfRange }
    }

    /// `numascope serve`'s error code.
    pub fn code(&self) -> &'static str {
        match self.field {
            OptionField::Target | OptionField::FaultSampling => "bad-request",
            OptionField::Pid => "bad-pid",
            OptionField::Command => "bad-command",
            OptionField::Duration => "bad-duration",
            OptionField::Interval => "bad-interval",
            OptionField::FaultPeriod => "bad-fault-period",
            OptionField::FaultRate => "bad-fault-rate",
            OptionField::FaultEvent => "bad-fault-event",
            OptionField::Counters => "bad-counters",
            OptionField::MemRate => "bad-mem-rate",
            OptionField::Window => "bad-window",
            OptionField::NumaBalancing => "bad-numa-balancing",
            OptionField::KillOnStop => "bad-kill-on-stop",
            OptionField::AllocSites => "bad-alloc-sites",
            OptionField::ScanMaxPages => "bad-scan-max-pages",
            OptionField::CallStackDepth => "bad-call-stack-depth",
        }
    }

    /// The option's name in the front end's spelling.
    fn name(field: OptionField, naming: Naming) -> &'static str {
        use OptionField as F;
        let names: [&str; 4] = match field {
            F::Target => ["-p PID or a command after `--`", "pid or command", "pid or command", "target"],
            F::Pid => ["-p PID", "pid", "pid", "Target::Attach pid"],
            F::Command => ["the command after `--`", "command", "command", "Target::Launch argv"],
            F::Duration => ["--duration", "durationS", "durationMs", "duration"],
            F::Interval => ["--interval-ms", "intervalMs", "intervalMs", "interval (ms)"],
            F::FaultPeriod => ["--fault-period", "faultPeriod", "faultPeriod", "fault_period"],
            F::FaultRate => ["--fault-rate", "faultRateHz", "faultRateHz", "fault_rate_hz"],
            F::FaultSampling => [
                "--fault-period or --fault-rate",
                "faultPeriod or faultRateHz",
                "faultPeriod or faultRateHz",
                "fault_period or fault_rate_hz",
            ],
            F::FaultEvent => ["--fault-event", "faultEvent", "faultEvent", "fault_event"],
            F::Counters => ["--counters", "counters", "counters", "counters"],
            F::MemRate => ["--mem-rate", "memRateHz", "memRateHz", "mem_rate_hz"],
            F::Window => ["--window-ms", "windowMs", "windowMs", "live_window (ms)"],
            F::NumaBalancing => ["--numa-balancing", "numaBalancing", "numaBalancing", "numa_balancing"],
            F::KillOnStop => ["--kill-on-stop", "killOnStop", "killOnStop", "kill_on_stop"],
            F::AllocSites => ["--no-alloc-sites", "allocSites", "allocSites", "alloc_sites"],
            F::ScanMaxPages => ["--scan-max-pages", "scanMaxPages", "scanMaxPages", "scan_max_pages"],
            F::CallStackDepth => ["--call-stack-depth", "callStackDepth", "callStackDepth", "call_stack_depth"],
        };
        names[naming as usize]
    }

    /// The message, naming the option as `naming` spells it.
    pub fn message(&self, naming: Naming) -> String {
        use OptionField as F;
        let l = &RECORD_LIMITS;
        let n = Self::name(self.field, naming);
        let int = |limit: &Limit| format!("{n} must be an integer from {} to {}", limit.min, limit.max);
        match (&self.problem, self.field) {
            (Problem::BothGiven, F::Target) => format!("give either {n}, not both"),
            (Problem::BothGiven, _) => format!("give {n}, not both"),
            (Problem::NoneGiven, _) => format!("nothing to record: give {n}"),
            (Problem::Unknown(v), F::FaultEvent) => {
                format!("{n}: fault event {v:?}: expected auto, software or tracepoint")
            }
            (Problem::Unknown(v), F::NumaBalancing) => format!("{n}: {v:?}: expected \"leave\" or \"on\""),
            (Problem::Unknown(v), _) => format!("{n}: counter set {v:?}: expected core, software or off"),
            (_, F::Pid) => format!("{n} must be a positive integer"),
            (_, F::Command) if naming == Naming::Cli => format!("{n} is empty: give the program to launch"),
            (_, F::Command) => format!("{n} must be a non-empty array of strings (argv)"),
            (_, F::Duration) if naming == Naming::Node => {
                format!("{n} must be a number of milliseconds > 0 and <= {}", l.duration_max_s * 1000)
            }
            (_, F::Duration) => format!("{n} must be a number of seconds > 0 and <= {}", l.duration_max_s),
            (_, F::Interval) => int(&l.interval_ms),
            (_, F::FaultPeriod) => int(&l.fault_period),
            (_, F::FaultRate) if naming == Naming::Rust => {
                format!(
                    "{n} must be 0 (a fixed fault_period) or from {} to {}",
                    l.fault_rate_hz.min, l.fault_rate_hz.max
                )
            }
            (_, F::FaultRate) => int(&l.fault_rate_hz),
            (_, F::FaultEvent) => format!("{n} must be \"auto\", \"software\" or \"tracepoint\""),
            (_, F::Counters) => format!("{n} must be \"core\", \"software\" or \"off\""),
            (_, F::MemRate) => int(&l.mem_rate_hz),
            (_, F::Window) => int(&l.window_ms),
            (_, F::NumaBalancing) => format!("{n} must be \"leave\" or \"on\""),
            (_, F::KillOnStop | F::AllocSites) => format!("{n} must be true or false"),
            (_, F::ScanMaxPages) => int(&l.scan_max_pages),
            (_, F::CallStackDepth) => int(&l.call_stack_depth),
            (_, F::Target | F::FaultSampling) => format!("give {n}"),
        }
    }
}

impl std::fmt::Display for OptionError {
    /// The message in [`Naming::Rust`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(Naming::Rust))
    }
}

impl std::error::Error for OptionError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> RecordRequest {
        RecordRequest { command: Some(vec!["true".into()]), output: "x.numascope".into(), ..Default::default() }
    }

    #[test]
    fn defaults_come_from_the_limits() {
        let o = req().validate().unwrap();
        assert_eq!(o.interval, Duration::from_millis(100));
        assert_eq!(o.live_window, Duration::from_millis(250));
        assert_eq!((o.fault_rate_hz, o.fault_period), (DEFAULT_FAULT_RATE_HZ, 1));
        assert_eq!(o.mem_rate_hz, crate::sources::pmu::DEFAULT_MEM_RATE_HZ);
        assert_eq!((o.fault_event, o.counters), (FaultEventChoice::Auto, CounterChoice::Core));
        assert!(o.duration.is_none() && !o.damon && o.mem_sampling && o.uncore);
        assert!(o.validate().is_ok());
        let r = RecordOptions::new(Target::Attach(1), "x".into());
        assert_eq!((r.interval, r.fault_rate_hz, r.live_window), (o.interval, o.fault_rate_hz, o.live_window));
    }

    #[test]
    fn every_range_is_checked_at_both_ends() {
        let l = &RECORD_LIMITS;
        type Set = fn(&mut RecordRequest, u64);
        let cases: [(Set, Limit, OptionField); 5] = [
            (|r, v| r.interval_ms = Some(v), l.interval_ms, OptionField::Interval),
            (|r, v| r.fault_period = Some(v), l.fault_period, OptionField::FaultPeriod),
            (|r, v| r.fault_rate_hz = Some(v), l.fault_rate_hz, OptionField::FaultRate),
            (|r, v| r.mem_rate_hz = Some(v), l.mem_rate_hz, OptionField::MemRate),
            (|r, v| r.window_ms = Some(v), l.window_ms, OptionField::Window),
        ];
        for (set, limit, field) in cases {
            for (v, ok) in [(limit.min, true), (limit.max, true), (limit.min - 1, false), (limit.max + 1, false)] {
                let mut r = req();
                set(&mut r, v);
                match r.validate() {
                    Ok(_) => assert!(ok, "{field:?} {v} accepted"),
                    Err(e) => {
                        assert!(!ok, "{field:?} {v} refused: {e}");
                        assert_eq!(e.field, field);
                    }
                }
            }
        }
        for (d, ok) in
            [(0.001, true), (2_592_000.0, true), (0.0, false), (-1.0, false), (2_592_000.5, false), (f64::NAN, false)]
        {
            let r = RecordRequest { duration_s: Some(d), ..req() };
            assert_eq!(r.validate().is_ok(), ok, "duration {d}");
        }
    }

    #[test]
    fn messages_name_the_option_as_each_front_end_spells_it() {
        let e = RecordRequest { interval_ms: Some(0), ..req() }.validate().unwrap_err();
        assert_eq!(e.message(Naming::Cli), "--interval-ms must be an integer from 1 to 60000");
        assert_eq!(e.message(Naming::Serve), "intervalMs must be an integer from 1 to 60000");
        assert_eq!(e.code(), "bad-interval");
        let e = RecordRequest { duration_s: Some(3e6), ..req() }.validate().unwrap_err();
        assert_eq!(e.message(Naming::Serve), "durationS must be a number of seconds > 0 and <= 2592000");
        assert_eq!(e.message(Naming::Node), "durationMs must be a number of milliseconds > 0 and <= 2592000000");
        let e = RecordRequest { fault_period: Some(1), fault_rate_hz: Some(1000), ..req() }.validate().unwrap_err();
        assert_eq!(e.message(Naming::Node), "give faultPeriod or faultRateHz, not both");
        assert_eq!(e.message(Naming::Cli), "give --fault-period or --fault-rate, not both");
        assert_eq!(e.code(), "bad-request");
        let e = RecordRequest { fault_event: Some("pmu".into()), ..req() }.validate().unwrap_err();
        assert_eq!(e.message(Naming::Serve), "faultEvent: fault event \"pmu\": expected auto, software or tracepoint");
        assert_eq!(e.code(), "bad-fault-event");
        let e = RecordRequest { pid: Some(1), ..req() }.validate().unwrap_err();
        assert_eq!(e.message(Naming::Cli), "give either -p PID or a command after `--`, not both");
        assert_eq!(e.message(Naming::Serve), "give either pid or command, not both");
        let e = RecordRequest { command: None, ..req() }.validate().unwrap_err();
        assert_eq!(e.message(Naming::Serve), "nothing to record: give pid or command");
        let e = RecordRequest { command: None, pid: Some(0), ..req() }.validate().unwrap_err();
        assert_eq!((e.code(), e.message(Naming::Serve).as_str()), ("bad-pid", "pid must be a positive integer"));
        let e = RecordRequest { command: Some(vec![]), ..req() }.validate().unwrap_err();
        assert_eq!(e.code(), "bad-command");
        let e = RecordRequest { numa_balancing: Some("off".into()), ..req() }.validate().unwrap_err();
        assert_eq!(e.message(Naming::Cli), "--numa-balancing: \"off\": expected \"leave\" or \"on\"");
        assert_eq!(e.code(), "bad-numa-balancing");
    }

    #[test]
    fn stop_and_balancing_defaults() {
        let o = req().validate().unwrap();
        assert!(!o.kill_on_stop, "a launched command is left running by default");
        assert!(o.alloc_sites, "allocation sites are recorded by default");
        assert!(!RecordRequest { alloc_sites: Some(false), ..req() }.validate().unwrap().alloc_sites);
        assert_eq!(o.numa_balancing, NumaBalancingChoice::Leave);
        let o =
            RecordRequest { kill_on_stop: Some(true), numa_balancing: Some("on".into()), ..req() }.validate().unwrap();
        assert!(o.kill_on_stop);
        assert_eq!(o.numa_balancing, NumaBalancingChoice::On);
    }

    #[test]
    fn options_built_by_hand_are_held_to_the_same_limits() {
        let mut o = RecordOptions::new(Target::Launch(vec!["true".into()]), "x".into());
        o.interval = Duration::ZERO;
        assert_eq!(o.validate().unwrap_err().to_string(), "interval (ms) must be an integer from 1 to 60000");
        o.interval = Duration::from_millis(100);
        o.fault_rate_hz = 0;
        o.fault_period = 0;
        assert_eq!(o.validate().unwrap_err().field, OptionField::FaultPeriod);
        o.fault_period = 7;
        assert!(o.validate().is_ok());
        o.duration = Some(MAX_CAPTURE + Duration::from_secs(1));
        assert_eq!(o.validate().unwrap_err().field, OptionField::Duration);
    }
}
