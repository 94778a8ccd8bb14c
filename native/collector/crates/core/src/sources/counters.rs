//! Per-thread counting events (no sampling): by default the core counters cycles, instructions
//! and last-level-cache misses, from which the engine derives IPC and L3MPKI.
//!
//! One counting event per (thread, counter) with cpu = -1 and no `inherit` (a per-thread value
//! needs a per-thread event), opened for every thread of the target as the recorder finds it and
//! read on every poll. Each read is scaled by time_enabled / time_running (the PMU multiplexes
//! when there are more events than counters) and written as a cumulative row of the `counters`
//! table: scope `thread`, scope_id = the thread's row in the `threads` table.
//!
//! A thread's counts start when the recorder first sees it: at its first poll after the thread
//! was created (within `--interval-ms`), so work a thread does in its first milliseconds is not
//! counted. Ratios (IPC, L3MPKI) are unaffected by the missing start; absolute totals are lower.
//!
//! The machinery is the same for any event: the tests here run it with software events
//! (task-clock, page-faults, context-switches), which every kernel has, because this project's
//! machines have no hardware PMU; there the hardware set fails to open and the source is
//! `failed` with the reason.

use std::collections::BTreeMap;

use perf_event_open::config::{Cpu, Opts, Proc};
use perf_event_open::count::Counter;
use perf_event_open::event::hw::Hardware;
use perf_event_open::event::sw::Software;

/// One counter to open per thread, and the name its rows get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    pub name: &'static str,
    pub event: CounterEvent,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CounterEvent {
    Hardware(Hardware),
    Software(Software),
}

/// cycles, instructions, llc-misses (the generic PERF_COUNT_HW_* events; `llc-misses` is
/// PERF_COUNT_HW_CACHE_MISSES, the last-level cache on current x86 CPUs).
pub fn core_counters() -> Vec<CounterSpec> {
    vec![
        CounterSpec { name: "cycles", event: CounterEvent::Hardware(Hardware::CpuCycle) },
        CounterSpec { name: "instructions", event: CounterEvent::Hardware(Hardware::Instr) },
        CounterSpec { name: "llc-misses", event: CounterEvent::Hardware(Hardware::CacheMiss) },
    ]
}

/// Software stand-ins with the same machinery (tests, and machines without a PMU).
pub fn software_counters() -> Vec<CounterSpec> {
    vec![
        CounterSpec { name: "task-clock-ns", event: CounterEvent::Software(Software::TaskClock) },
        CounterSpec { name: "page-faults", event: CounterEvent::Software(Software::PageFault) },
        CounterSpec { name: "context-switches", event: CounterEvent::Software(Software::CtxSwitch) },
    ]
}

/// Per-thread counters of one process, and the rows read so far.
pub struct ThreadCounters {
    specs: Vec<CounterSpec>,
    opts: Opts,
    exclude_kernel: bool,
    threads: BTreeMap<u32, Vec<Counter>>,
    /// Threads whose events could not be opened (they exited in between, or a limit was hit).
    pub failed_threads: Vec<(u32, String)>,
    /// (time_us, spec index, tid, scaled cumulative value)
    rows: Vec<(i64, usize, u32, f64)>,
    /// Reads where the PMU had multiplexed the event (time_running < time_enabled).
    pub multiplexed_reads: u64,
}

fn open_one(spec: &CounterSpec, tid: u32, opts: &Opts) -> std::io::Result<Counter> {
    match &spec.event {
        CounterEvent::Hardware(h) => Counter::new(h.clone(), (Proc(tid), Cpu::ALL), opts),
        CounterEvent::Software(s) => Counter::new(*s, (Proc(tid), Cpu::ALL), opts),
    }
}

impl ThreadCounters {
    /// Opens the counters for the first thread: an error here (no PMU, permissions) means the
    /// source cannot be used at all; it names the counter and the reason.
    #[allow(clippy::field_reassign_with_default)]
    pub fn open(specs: Vec<CounterSpec>, first_tid: u32, exclude_kernel: bool) -> Result<Self, String> {
        let mut opts = Opts::default();
        opts.stat_format.time_enabled = true;
        opts.stat_format.time_running = true;
        opts.exclude.kernel = exclude_kernel;
        opts.exclude.hv = true;
        opts.enable = true;
        let mut s = ThreadCounters {
            specs,
            opts,
            exclude_kernel,
            threads: BTreeMap::new(),
            failed_threads: Vec::new(),
            rows: Vec::new(),
            multiplexed_reads: 0,
        };
        let mut counters = Vec::new();
        for spec in &s.specs {
            match open_one(spec, first_tid, &s.opts) {
                Ok(c) => counters.push(c),
                Err(e) => {
                    return Err(match e.raw_os_error() {
                        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
                            format!("cannot open the {} counter: no cpu PMU here ({e}; a VM without PMU passthrough?)", spec.name)
                        }
                        Some(libc::EACCES) | Some(libc::EPERM) => format!(
                            "cannot open the {} counter: {e} (needs perf_event_paranoid <= 2 for your own threads, CAP_PERFMON for others')",
                            spec.name
                        ),
                        _ => format!("cannot open the {} counter for thread {first_tid}: {e}", spec.name),
                    })
                }
            }
        }
        s.threads.insert(first_tid, counters);
        Ok(s)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.specs.iter().map(|s| s.name).collect()
    }

    pub fn exclude_kernel(&self) -> bool {
        self.exclude_kernel
    }

    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// Opens the counters of a thread found later (no-op if it has them).
    pub fn add_thread(&mut self, tid: u32) {
        if self.threads.contains_key(&tid) || self.failed_threads.iter().any(|(t, _)| *t == tid) {
            return;
        }
        let mut counters = Vec::new();
        for spec in &self.specs {
            match open_one(spec, tid, &self.opts) {
                Ok(c) => counters.push(c),
                Err(e) => {
                    if e.raw_os_error() != Some(libc::ESRCH) {
                        self.failed_threads.push((tid, format!("{}: {e}", spec.name)));
                    }
                    return;
                }
            }
        }
        self.threads.insert(tid, counters);
    }

    /// Reads every counter of every thread (a thread that has exited keeps its last rows).
    pub fn read(&mut self, time_us: i64) {
        for (&tid, counters) in &self.threads {
            for (k, c) in counters.iter().enumerate() {
                let Ok(st) = c.stat() else { continue };
                let (en, run) = (st.time_enabled.unwrap_or(0), st.time_running.unwrap_or(0));
                let value = if run > 0 && run < en {
                    self.multiplexed_reads += 1;
                    st.count as f64 * en as f64 / run as f64
                } else {
                    st.count as f64
                };
                self.rows.push((time_us, k, tid, value));
            }
        }
    }

    /// Rows read so far: (time_us, counter name, tid, value).
    pub fn rows(&self) -> impl Iterator<Item = (i64, &'static str, u32, f64)> + '_ {
        self.rows.iter().map(|&(t, k, tid, v)| (t, self.specs[k].name, tid, v))
    }

    /// Writes the rows into the trace's `counters` table (scope `thread`, scope_id = thread row;
    /// threads missing from the threads table are skipped), keeping the table in time order.
    /// Returns the rows written.
    pub fn add_to_trace(&self, trace: &mut crate::trace::TraceData) -> usize {
        let index: BTreeMap<i32, i32> = trace.threads.tid.iter().enumerate().map(|(i, &t)| (t, i as i32)).collect();
        let c = &mut trace.counters;
        let mut n = 0;
        for (t, name, tid, v) in self.rows() {
            let Some(&ti) = index.get(&(tid as i32)) else { continue };
            c.time_us.push(t);
            c.counter.push(name);
            c.scope.push("thread");
            c.scope_id.push(ti);
            c.value.push(v);
            n += 1;
        }
        crate::sources::damon::sort_counters_by_time(c);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gettid() -> u32 {
        unsafe { libc::syscall(libc::SYS_gettid) as u32 }
    }

    #[test]
    fn software_counters_count_this_threads_work() {
        let tid = gettid();
        let mut tc = ThreadCounters::open(software_counters(), tid, false).expect("software events open everywhere");
        tc.read(0);
        // Touch 512 fresh pages, and burn a little cpu.
        let len = 512 * 4096;
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        for i in 0..512 {
            unsafe { std::ptr::write_volatile((p as *mut u8).add(i * 4096), 1) };
        }
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
        tc.read(1000);
        unsafe { libc::munmap(p, len) };
        let rows: Vec<_> = tc.rows().collect();
        assert_eq!(rows.len(), 6, "3 counters x 2 reads: {rows:?}");
        let delta = |name: &str| {
            let v: Vec<f64> = rows.iter().filter(|r| r.1 == name).map(|r| r.3).collect();
            v[1] - v[0]
        };
        let faults = delta("page-faults");
        assert!((512.0..5000.0).contains(&faults), "page-faults delta {faults}");
        assert!(delta("task-clock-ns") > 100_000.0, "task-clock advanced {}", delta("task-clock-ns"));
        assert!(rows.iter().all(|r| r.2 == tid));
    }

    #[test]
    fn hardware_counters_say_why_they_cannot_open() {
        let has_cpu_pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists();
        match ThreadCounters::open(core_counters(), gettid(), true) {
            Ok(tc) => assert!(has_cpu_pmu, "opened {:?} without a cpu PMU", tc.names()),
            Err(e) => {
                assert!(!has_cpu_pmu || e.contains("cannot open"), "{e}");
                if !has_cpu_pmu {
                    assert!(e.starts_with("cannot open the cycles counter: no cpu PMU here"), "{e}");
                }
            }
        }
    }

    #[test]
    fn rows_go_into_the_trace_by_thread_row_in_time_order() {
        let tid = gettid();
        let mut tc = ThreadCounters::open(software_counters(), tid, false).unwrap();
        tc.read(500);
        tc.read(100);
        let mut t = crate::trace::TraceData {
            manifest: crate::trace::empty_manifest(),
            samples: Default::default(),
            pages: Default::default(),
            threads: Default::default(),
            regions: Default::default(),
            thread_placements: Default::default(),
            region_placements: Default::default(),
            counters: Default::default(),
            events: Default::default(),
            alloc: Default::default(),
        };
        t.threads.tid = vec![1, tid as i32];
        t.counters.time_us.push(300);
        t.counters.counter.push("numa_hit");
        t.counters.scope.push("system");
        t.counters.scope_id.push(-1);
        t.counters.value.push(7.0);
        assert_eq!(tc.add_to_trace(&mut t), 6);
        assert_eq!(t.counters.time_us, vec![100, 100, 100, 300, 500, 500, 500]);
        assert!((0..7).filter(|&i| t.counters.scope.get(i) == "thread").all(|i| t.counters.scope_id[i] == 1));
        assert_eq!(t.counters.counter.get(3), "numa_hit");
    }
}
