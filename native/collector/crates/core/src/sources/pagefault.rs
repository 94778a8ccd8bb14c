//! Software page-fault sampling with perf_event_open: TID, TIME (CLOCK_MONOTONIC), the faulting
//! address, CPU and the period in force. Either one sample every `period` faults (1 = every
//! fault), or adaptive: the kernel's frequency mode, which keeps the period at 1 while a thread
//! faults less than `rate_hz` times a second and raises it above, so the sampler's cost stays
//! bounded on a program that faults in millions of pages; each sample's period says how many
//! faults it stands for.
//!
//! An inherited per-task event with cpu = -1 cannot be mmapped (kernel `perf_mmap` returns
//! EINVAL), so we open one event per (task, cpu) with `inherit`: threads the task creates later
//! are followed by the same events. For a launched command the events are opened disabled with
//! `enable_on_exec` on the stopped child; for `-p PID` one set is opened per existing thread.

use std::io;

use perf_event_open::config::{Clock, Cpu, Inherit, OnExecve, Opts, Proc, SampleOn};
use perf_event_open::count::Counter;
use perf_event_open::event::sw::Software;
use perf_event_open::sample::Sampler;

/// One page-fault sample as read from the ring buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultSample {
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub addr: u64,
    /// Faults this sample stands for (the sampling period in force when it was taken).
    pub period: u64,
}

/// PERF_RECORD_* types we decode.
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_LOST_SAMPLES: u32 = 13;

/// Options for [`PageFaultSampler::open`].
#[derive(Clone, Debug)]
pub struct PageFaultOptions {
    /// Count only user-mode faults (needed when the caller may not profile the kernel:
    /// perf_event_paranoid >= 2 without CAP_PERFMON).
    pub exclude_kernel: bool,
    /// Start counting at the target's next execve (launched, stopped child).
    pub enable_on_exec: bool,
    /// Ring-buffer size per event, as 2^exp data pages; reduced automatically if mmap fails.
    pub ring_exp: u8,
    /// Sample one fault in `period` (1 = every fault: exact first touch of every page). Used
    /// when `rate_hz` is 0.
    pub period: u64,
    /// Adaptive sampling: at most about this many samples a second per event (kernel frequency
    /// mode; every fault below that rate). 0 = fixed `period`.
    pub rate_hz: u64,
}

/// Errors opening the sampler.
#[derive(Debug)]
pub struct OpenError {
    pub tid: u32,
    pub cpu: u32,
    pub error: io::Error,
    pub stage: &'static str,
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (task {}, cpu {}): {}", self.stage, self.tid, self.cpu, self.error)
    }
}

/// Page-fault samplers for one process: one event per (task, cpu).
pub struct PageFaultSampler {
    // Samplers borrow nothing from the counters (they hold the fd), but the counters must live
    // as long as the samplers; keep them side by side.
    samplers: Vec<Sampler>,
    counters: Vec<Counter>,
    opened_tids: Vec<u32>,
    cpus: Vec<u32>,
    opts: Opts,
    ring_exp: u8,
    /// Samples carry PERIOD (frequency mode); else each stands for `fixed_period` faults.
    with_period: bool,
    fixed_period: u64,
    /// Records the kernel dropped (PERF_RECORD_LOST / LOST_SAMPLES), summed over all rings.
    pub lost: u64,
    /// Ring buffers read so far (for tests and progress).
    pub records_read: u64,
}

impl PageFaultSampler {
    #[allow(clippy::field_reassign_with_default)]
    fn opts(o: &PageFaultOptions) -> Opts {
        let mut opts = Opts::default();
        opts.sample_on = if o.rate_hz > 0 { SampleOn::Freq(o.rate_hz) } else { SampleOn::Count(o.period.max(1)) };
        opts.sample_format.data_addr = true;
        // PERIOD only in frequency mode: for a software event with a fixed period the kernel
        // takes a sample on *every* event when PERIOD is requested (perf_swevent_event():
        // `if (sample_type & PERF_SAMPLE_PERIOD && !attr.freq)`), which would void the period.
        opts.sample_format.period = o.rate_hz > 0;
        opts.record_id_format.task = true;
        opts.record_id_format.time = true;
        opts.record_id_format.cpu = true;
        opts.inherit = Some(Inherit::NewChild);
        opts.timer = Some(Clock::Monotonic);
        opts.exclude.kernel = o.exclude_kernel;
        opts.exclude.hv = true;
        opts.enable = false;
        if o.enable_on_exec {
            opts.on_execve = Some(OnExecve::Enable);
        }
        opts
    }

    /// Opens (disabled) events for each task in `tids` on each cpu in `cpus`.
    pub fn open(tids: &[u32], cpus: &[u32], o: &PageFaultOptions) -> Result<Self, OpenError> {
        let mut s = PageFaultSampler {
            samplers: Vec::new(),
            counters: Vec::new(),
            opened_tids: Vec::new(),
            cpus: cpus.to_vec(),
            opts: Self::opts(o),
            ring_exp: o.ring_exp,
            with_period: o.rate_hz > 0,
            fixed_period: o.period.max(1),
            lost: 0,
            records_read: 0,
        };
        for &tid in tids {
            s.add_task(tid)?;
        }
        Ok(s)
    }

    /// Opens events for one more task (a thread found after the first enumeration) and enables
    /// them if `enable` is set.
    pub fn add_task(&mut self, tid: u32) -> Result<(), OpenError> {
        if self.opened_tids.contains(&tid) {
            return Ok(());
        }
        let cpus = self.cpus.clone();
        for cpu in cpus {
            let counter = match Counter::new(Software::PageFault, (Proc(tid), Cpu(cpu)), &self.opts) {
                Ok(c) => c,
                // The thread exited since it was listed: nothing to follow.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) && !self.opened_tids.is_empty() => return Ok(()),
                Err(error) => return Err(OpenError { tid, cpu, error, stage: "perf_event_open page-faults" }),
            };
            let sampler = loop {
                match counter.sampler(self.ring_exp) {
                    Ok(s) => break s,
                    // Locked-memory limit (perf_event_mlock_kb / RLIMIT_MEMLOCK): retry smaller.
                    Err(e)
                        if self.ring_exp > 0 && matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) =>
                    {
                        self.ring_exp -= 1;
                    }
                    Err(error) => {
                        return Err(OpenError { tid, cpu, error, stage: "mmap perf ring buffer" });
                    }
                }
            };
            self.counters.push(counter);
            self.samplers.push(sampler);
        }
        self.opened_tids.push(tid);
        Ok(())
    }

    pub fn opened_tids(&self) -> &[u32] {
        &self.opened_tids
    }

    pub fn event_count(&self) -> usize {
        self.counters.len()
    }

    pub fn ring_bytes_per_event(&self) -> usize {
        (1usize << self.ring_exp) * crate::topology::page_size() as usize
    }

    pub fn enable(&self) -> io::Result<()> {
        for c in &self.counters {
            c.enable()?;
        }
        Ok(())
    }

    pub fn disable(&self) -> io::Result<()> {
        for c in &self.counters {
            c.disable()?;
        }
        Ok(())
    }

    /// Reads every ring buffer empty, appending samples to `out`. Returns the samples added.
    pub fn drain(&mut self, out: &mut Vec<FaultSample>) -> usize {
        let before = out.len();
        for sampler in &self.samplers {
            let Some(iter) = sampler.iter() else { continue };
            let mut cow = iter.into_cow();
            while let Some(rec) = cow.lending_next() {
                self.records_read += 1;
                let bytes = rec.as_raw().as_bytes();
                match decode_record(bytes, self.with_period, self.fixed_period) {
                    Decoded::Sample(s) => out.push(s),
                    Decoded::Lost(n) => self.lost += n,
                    Decoded::Other => {}
                }
            }
        }
        out.len() - before
    }
}

/// A decoded ring-buffer record.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    Sample(FaultSample),
    Lost(u64),
    Other,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// Decodes one record of our fixed sample layout.
///
/// With `sample_type = TID | TIME | ADDR | CPU [| PERIOD]` a PERF_RECORD_SAMPLE body is, in this
/// order (include/uapi/linux/perf_event.h): `u32 pid, tid; u64 time; u64 addr; u32 cpu, res;
/// [u64 period;]`. Without PERIOD (`with_period` false) every sample stands for `fixed_period`.
/// PERF_RECORD_LOST is `u64 id; u64 lost;` and PERF_RECORD_LOST_SAMPLES is `u64 lost;`.
pub fn decode_record(bytes: &[u8], with_period: bool, fixed_period: u64) -> Decoded {
    let Some(ty) = u32_at(bytes, 0) else { return Decoded::Other };
    const H: usize = 8;
    match ty {
        PERF_RECORD_SAMPLE => {
            let s = (|| {
                Some(FaultSample {
                    pid: u32_at(bytes, H)?,
                    tid: u32_at(bytes, H + 4)?,
                    time_ns: u64_at(bytes, H + 8)?,
                    addr: u64_at(bytes, H + 16)?,
                    cpu: u32_at(bytes, H + 24)?,
                    period: if with_period { u64_at(bytes, H + 32)? } else { fixed_period },
                })
            })();
            s.map(Decoded::Sample).unwrap_or(Decoded::Other)
        }
        PERF_RECORD_LOST => u64_at(bytes, H + 8).map(Decoded::Lost).unwrap_or(Decoded::Other),
        PERF_RECORD_LOST_SAMPLES => u64_at(bytes, H).map(Decoded::Lost).unwrap_or(Decoded::Other),
        _ => Decoded::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ty: u32, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn decodes_sample_and_lost_records() {
        let mut body = Vec::new();
        body.extend_from_slice(&42u32.to_ne_bytes());
        body.extend_from_slice(&43u32.to_ne_bytes());
        body.extend_from_slice(&123_456_789u64.to_ne_bytes());
        body.extend_from_slice(&0x7f00_dead_b000u64.to_ne_bytes());
        body.extend_from_slice(&1u32.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend_from_slice(&37u64.to_ne_bytes());
        assert_eq!(
            decode_record(&rec(PERF_RECORD_SAMPLE, &body), true, 1),
            Decoded::Sample(FaultSample {
                time_ns: 123_456_789,
                pid: 42,
                tid: 43,
                cpu: 1,
                addr: 0x7f00_dead_b000,
                period: 37
            })
        );
        // Without PERIOD in the layout (fixed period): the 32-byte body, the fixed period applies.
        assert_eq!(
            decode_record(&rec(PERF_RECORD_SAMPLE, &body[..32]), false, 16),
            Decoded::Sample(FaultSample {
                time_ns: 123_456_789,
                pid: 42,
                tid: 43,
                cpu: 1,
                addr: 0x7f00_dead_b000,
                period: 16
            })
        );
        // With PERIOD expected but missing: not a sample of ours.
        assert_eq!(decode_record(&rec(PERF_RECORD_SAMPLE, &body[..32]), true, 1), Decoded::Other);
        let mut lost = Vec::new();
        lost.extend_from_slice(&7u64.to_ne_bytes());
        lost.extend_from_slice(&99u64.to_ne_bytes());
        assert_eq!(decode_record(&rec(PERF_RECORD_LOST, &lost), true, 1), Decoded::Lost(99));
        assert_eq!(decode_record(&rec(PERF_RECORD_LOST_SAMPLES, &5u64.to_ne_bytes()), true, 1), Decoded::Lost(5));
        assert_eq!(decode_record(&rec(3, &[0; 8]), true, 1), Decoded::Other);
        assert_eq!(decode_record(&[1, 2], true, 1), Decoded::Other);
    }

    /// Samples our own page faults on a freshly mapped buffer (needs a perf_event kernel; skips
    /// with a message when perf_event_open is refused).
    #[test]
    fn samples_own_page_faults() {
        let tid = unsafe { libc::gettid() } as u32;
        let cpus = crate::topology::read_topology().unwrap().online_cpus;
        let privs = crate::probe::read_privileges(std::path::Path::new("/proc"));
        let o = PageFaultOptions {
            exclude_kernel: !privs.can_profile_kernel(),
            enable_on_exec: false,
            ring_exp: 6,
            period: 1,
            rate_hz: 0,
        };
        let mut s = match PageFaultSampler::open(&[tid], &cpus, &o) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipping: cannot open page-fault events here: {e}");
                return;
            }
        };
        s.enable().unwrap();
        const PAGES: usize = 64;
        let len = PAGES * 4096;
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
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        for i in 0..PAGES {
            unsafe { *(p as *mut u8).add(i * 4096) = 1 };
        }
        s.disable().unwrap();
        let mut out = Vec::new();
        s.drain(&mut out);
        let base = p as u64;
        let hits: std::collections::HashSet<u64> = out
            .iter()
            .filter(|f| f.addr >= base && f.addr < base + len as u64 && f.tid == tid)
            .map(|f| f.addr & !4095)
            .collect();
        unsafe { libc::munmap(p, len) };
        assert_eq!(hits.len(), PAGES, "expected a fault sample for each page; got {} of {PAGES}", hits.len());
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
        let now_ns = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
        assert!(
            out.iter().all(|f| f.time_ns <= now_ns && now_ns - f.time_ns < 60_000_000_000),
            "times must be CLOCK_MONOTONIC"
        );
    }
}
