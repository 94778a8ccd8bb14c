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
//!
//! Two events can carry the faults ([`FaultEvent`]): the software event `page-faults` (any
//! kernel; the sample's ADDR is the faulting address), or, on x86, the tracepoint
//! `exceptions:page_fault_user`, whose raw record also holds the hardware **error code**: a
//! write (bit 1) or a read, a not-present page (bit 0 clear) or a protection fault on a present
//! one (bit 0 set: copy-on-write and the like).
//!
//! The same events carry the kernel's **task records** (`task` and `comm` in the attributes,
//! with `sample_id_all` so that every record has the thread, time and cpu): PERF_RECORD_FORK when
//! a followed task creates a thread or process, PERF_RECORD_EXIT when one ends and
//! PERF_RECORD_COMM when one is named (`pthread_setname_np`, `prctl(PR_SET_NAME)`) or execs. So
//! the recorder knows every thread of the program, with its exact start and end, even one that
//! lived between two /proc polls and never faulted ([`TaskEvent`]).
//!
//! With automatic NUMA balancing on, the kernel's scanner makes a range of pages inaccessible
//! every scan period, and the next access to each page takes a NUMA *hinting* fault: which thread
//! touched which page, without a PMU. On x86 such a page is PROT_NONE, which clears the present
//! bit, so a hinting fault has the error code of a first touch (bit 0 clear); what tells them
//! apart is that the page was faulted in before. [`classify`] takes that from the recorder, which
//! knows the pages it has seen.

use std::io;

use super::callchain::{self, CallStacks, CodeMapping, NO_STACK};

use perf_event_open::config::{Clock, Cpu, Inherit, OnExecve, Opts, Proc, SampleOn};
use perf_event_open::count::Counter;
use perf_event_open::event::sw::Software;
use perf_event_open::event::tp::Tracepoint;
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
    /// The x86 page-fault error code (tracepoint `exceptions:page_fault_user`); None from the
    /// software event, which does not carry it.
    pub error_code: Option<u64>,
    /// What the fault says about the page: `Touch` as decoded; the recorder sets it with
    /// [`classify`].
    pub kind: FaultKind,
    /// The sampled instruction and its user call stack: an id of the sampler's
    /// [`CallStacks`], [`NO_STACK`] when none was asked for or the chain was empty.
    pub stack: u32,
}

/// A task record from the rings: a thread (or process) created, ended or named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskEvent {
    pub kind: TaskKind,
    /// The process and thread the record is about (for a fork: the new one).
    pub pid: u32,
    pub tid: u32,
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    /// The cpu it happened on (for a fork: the creating thread's cpu).
    pub cpu: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// Created by thread `parent_tid` of process `parent_pid`.
    Fork {
        parent_pid: u32,
        parent_tid: u32,
    },
    Exit,
    /// Named (or renamed by an exec, `exec`): the kernel's comm, at most 15 bytes.
    Comm {
        name: String,
        exec: bool,
    },
}

/// What a fault sample says about the page, from its error code ([`FaultSample::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A fault on a not-present page: the first touch (or a page coming back in), or a fault
    /// whose error code is unknown (software event).
    Touch,
    /// A read of a page faulted in before, with NUMA balancing on: a NUMA hinting fault.
    AccessLoad,
    /// The same for a write.
    AccessStore,
}

/// x86 page-fault error code bits (arch/x86/include/asm/trap_pf.h).
pub const PF_PROT: u64 = 1 << 0;
pub const PF_WRITE: u64 = 1 << 1;

/// How to read a fault. `hinting`: automatic NUMA balancing is on; `seen_before`: the page was
/// faulted in earlier in this recording. A not-present fault on a page seen before is then a
/// hinting fault, a load or a store by the error code's write bit. Everything else (first faults,
/// protection faults such as copy-on-write, faults without an error code) stays an ordinary
/// fault: without the write bit an access could not be called a load or a store.
pub fn classify(error_code: Option<u64>, hinting: bool, seen_before: bool) -> FaultKind {
    match error_code {
        Some(e) if hinting && seen_before && e & PF_PROT == 0 => {
            if e & PF_WRITE != 0 {
                FaultKind::AccessStore
            } else {
                FaultKind::AccessLoad
            }
        }
        _ => FaultKind::Touch,
    }
}

/// Which perf event carries the faults.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum FaultEvent {
    /// PERF_COUNT_SW_PAGE_FAULTS with PERF_SAMPLE_ADDR.
    #[default]
    Software,
    /// The tracepoint `exceptions:page_fault_user` with PERF_SAMPLE_RAW (x86).
    Tracepoint(FaultTracepoint),
}

/// Where `exceptions:page_fault_user` keeps its fields, from its tracefs `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultTracepoint {
    pub id: u64,
    /// Byte offsets of `address` and `error_code` in the raw record.
    pub address_offset: usize,
    pub error_code_offset: usize,
}

/// Automatic NUMA balancing mode from `/proc/sys/kernel/numa_balancing` (0 off, bit 0 = the
/// classic mode that scans every task, bit 1 = memory tiering); None when the kernel has none.
pub fn numa_balancing_mode(proc_root: &std::path::Path) -> Option<u32> {
    std::fs::read_to_string(proc_root.join("sys/kernel/numa_balancing")).ok()?.trim().parse().ok()
}

/// Default adaptive sampling rate (`numascope record --fault-rate`): exact below 10 000 faults/s
/// per thread, and the sampler's cost bounded above (bench/overhead.sh has the figures).
pub const DEFAULT_RATE_HZ: u64 = 10_000;

/// tracefs mount points, in the order tried.
pub const TRACEFS_ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Finds `exceptions:page_fault_user` under the first tracefs root that has an `events`
/// directory, and reads where its fields are. The error names what is missing.
pub fn find_fault_tracepoint(roots: &[&std::path::Path]) -> Result<FaultTracepoint, String> {
    let Some(root) = roots.iter().find(|r| r.join("events").is_dir()) else {
        return Err(format!(
            "tracefs is not mounted (looked at {}; mount it with `mount -t tracefs nodev /sys/kernel/tracing`)",
            roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    };
    let dir = root.join("events/exceptions/page_fault_user");
    if !dir.is_dir() {
        return Err(format!(
            "no tracepoint exceptions:page_fault_user under {} (it exists on x86 only)",
            root.display()
        ));
    }
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).map_err(|e| format!("{}: {e}", dir.join(f).display()));
    let id_text = read("id")?;
    let id: u64 =
        id_text.trim().parse().map_err(|_| format!("{}/id is not a number: {:?}", dir.display(), id_text.trim()))?;
    let format = read("format")?;
    let field = |name: &str| -> Result<usize, String> {
        // `\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;`
        for line in format.lines() {
            let Some(decl) = line.trim().strip_prefix("field:") else { continue };
            let mut parts = decl.split(';').map(str::trim);
            let ty_name = parts.next().unwrap_or("");
            if ty_name.rsplit(|c: char| c.is_whitespace() || c == '*').next() != Some(name) {
                continue;
            }
            let mut offset = None;
            let mut size = None;
            for p in parts {
                if let Some(v) = p.strip_prefix("offset:") {
                    offset = v.parse::<usize>().ok();
                } else if let Some(v) = p.strip_prefix("size:") {
                    size = v.parse::<usize>().ok();
                }
            }
            return match (offset, size) {
                (Some(o), Some(8)) => Ok(o),
                _ => Err(format!("{}/format: field {name} is not an 8-byte field with an offset", dir.display())),
            };
        }
        Err(format!("{}/format has no field {name}", dir.display()))
    };
    Ok(FaultTracepoint { id, address_offset: field("address")?, error_code_offset: field("error_code")? })
}

/// PERF_RECORD_* types we decode.
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_COMM: u32 = 3;
const PERF_RECORD_EXIT: u32 = 4;
const PERF_RECORD_FORK: u32 = 7;
const PERF_RECORD_MMAP2: u32 = 10;
/// PERF_RECORD_COMM's misc bit: the name changed because the task exec'd.
const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;
/// The `sample_id` every record ends with (`sample_id_all`, sample_type TID | TIME | CPU):
/// `u32 pid, tid; u64 time; u32 cpu, res;`.
const SAMPLE_ID_LEN: usize = 24;
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
    /// The event that carries the faults.
    pub event: FaultEvent,
    /// User call-stack frames asked of the kernel per sample (`PERF_SAMPLE_CALLCHAIN`,
    /// `sample_max_stack`), the sampled instruction included; 0 = none.
    pub stack_depth: u16,
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
    layout: SampleLayout,
    event: FaultEvent,
    /// Records the kernel dropped (PERF_RECORD_LOST / LOST_SAMPLES), summed over all rings.
    pub lost: u64,
    /// Ring buffers read so far (for tests and progress).
    pub records_read: u64,
    /// Task records read since the last [`PageFaultSampler::take_tasks`].
    tasks: Vec<TaskEvent>,
    /// The samples' call chains.
    pub stacks: CallStacks,
    /// Executable file mappings the kernel reported (PERF_RECORD_MMAP2), in arrival order.
    pub code_mappings: Vec<CodeMapping>,
    chain_scratch: Vec<u64>,
}

impl PageFaultSampler {
    #[allow(clippy::field_reassign_with_default)]
    fn opts(o: &PageFaultOptions) -> Opts {
        let mut opts = Opts::default();
        opts.sample_on = if o.rate_hz > 0 { SampleOn::Freq(o.rate_hz) } else { SampleOn::Count(o.period.max(1)) };
        // The software event's ADDR is the faulting address; a tracepoint's ADDR is 0 and the
        // address is a field of its RAW record.
        match o.event {
            FaultEvent::Software => opts.sample_format.data_addr = true,
            FaultEvent::Tracepoint(_) => opts.sample_format.raw = true,
        }
        // PERIOD only in frequency mode: for a software event with a fixed period the kernel
        // takes a sample on *every* event when PERIOD is requested (perf_swevent_event():
        // `if (sample_type & PERF_SAMPLE_PERIOD && !attr.freq)`), which would void the period.
        opts.sample_format.period = o.rate_hz > 0;
        opts.record_id_format.task = true;
        opts.record_id_format.time = true;
        opts.record_id_format.cpu = true;
        // Thread creation, exit and names (TaskEvent), each with the thread, time and cpu.
        opts.extra_record.task = true;
        opts.extra_record.comm = true;
        if o.stack_depth > 0 {
            // User frames only: the kernel's own frames of the fault path say nothing about the
            // program. The chain starts with the user instruction (regs->ip).
            opts.sample_format.call_chain = Some(perf_event_open::config::CallChain {
                exclude_user: false,
                exclude_kernel: true,
                defer_user: false,
                max_stack_frames: o.stack_depth,
            });
            // Executable mappings as they are made (MMAP2: file offset of each), so that the
            // addresses of a program that exits before the next /proc poll find their module.
            opts.extra_record.mmap.ext = Some(perf_event_open::config::UseBuildId(false));
            // The user stack pointer and the word it points at: the return address a frameless
            // leaf function (memset) keeps there, which the frame-pointer walk skips.
            if LEAF_WORD_SUPPORTED {
                opts.sample_format.user_regs = Some(perf_event_open::config::RegsMask(1 << PERF_REG_X86_SP));
                opts.sample_format.user_stack = Some(perf_event_open::config::Size(8));
            }
        }
        opts.record_id_all = true;
        opts.inherit = Some(Inherit::NewChild);
        opts.timer = Some(Clock::Monotonic);
        // A tracepoint fires in kernel mode: excluding the kernel would drop every sample (and
        // its raw data needs CAP_PERFMON anyway, which allows kernel profiling).
        opts.exclude.kernel = o.exclude_kernel && o.event == FaultEvent::Software;
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
            layout: SampleLayout::of(o),
            event: o.event.clone(),
            lost: 0,
            records_read: 0,
            tasks: Vec::new(),
            stacks: CallStacks::default(),
            code_mappings: Vec::new(),
            chain_scratch: Vec::new(),
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
            let opened = match &self.event {
                FaultEvent::Software => Counter::new(Software::PageFault, (Proc(tid), Cpu(cpu)), &self.opts),
                FaultEvent::Tracepoint(tp) => Counter::new(Tracepoint { id: tp.id }, (Proc(tid), Cpu(cpu)), &self.opts),
            };
            let counter = match opened {
                Ok(c) => c,
                // The thread exited since it was listed: nothing to follow.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) && !self.opened_tids.is_empty() => return Ok(()),
                Err(error) => {
                    let stage = match self.event {
                        FaultEvent::Software => "perf_event_open page-faults",
                        FaultEvent::Tracepoint(_) => "perf_event_open exceptions:page_fault_user",
                    };
                    return Err(OpenError { tid, cpu, error, stage });
                }
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

    /// The event the faults come from.
    pub fn event(&self) -> &FaultEvent {
        &self.event
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
                match decode_record_with(bytes, &self.layout, Some((&mut self.stacks, &mut self.chain_scratch))) {
                    Decoded::Sample(s) => out.push(s),
                    Decoded::Lost(n) => self.lost += n,
                    Decoded::Task(t) => self.tasks.push(t),
                    Decoded::Mmap(m) => {
                        if self.code_mappings.len() < MAX_CODE_MAPPINGS && !self.code_mappings.contains(&m) {
                            self.code_mappings.push(m);
                        }
                    }
                    Decoded::Other => {}
                }
            }
        }
        out.len() - before
    }

    /// The task records read by [`PageFaultSampler::drain`] since the last call.
    pub fn take_tasks(&mut self) -> Vec<TaskEvent> {
        std::mem::take(&mut self.tasks)
    }
}

/// A decoded ring-buffer record.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    Sample(FaultSample),
    Lost(u64),
    Task(TaskEvent),
    /// An executable file mapping (PERF_RECORD_MMAP2).
    Mmap(CodeMapping),
    Other,
}

/// `PERF_REG_X86_SP` (arch/x86/include/uapi/asm/perf_regs.h).
const PERF_REG_X86_SP: u32 = 7;
/// The leaf word (user SP and the 8 bytes at it) is asked on x86-64, whose register numbering
/// the mask uses.
const LEAF_WORD_SUPPORTED: bool = cfg!(target_arch = "x86_64");

/// Most executable mappings kept from MMAP2 records (a program that maps and unmaps code in a
/// loop would otherwise grow the list without bound).
pub const MAX_CODE_MAPPINGS: usize = 65_536;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// The sample layout our events were opened with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleLayout {
    /// Samples carry PERIOD (frequency mode); else each stands for `fixed_period` faults.
    pub with_period: bool,
    pub fixed_period: u64,
    /// RAW instead of ADDR: the tracepoint's field offsets.
    pub tracepoint: Option<FaultTracepoint>,
    /// Samples carry CALLCHAIN (between PERIOD and RAW) of at most this many user frames; 0 none.
    pub stack_depth: u16,
    /// Samples carry REGS_USER (SP only) and an 8-byte STACK_USER, after RAW.
    pub leaf_word: bool,
}

impl SampleLayout {
    pub fn of(o: &PageFaultOptions) -> Self {
        SampleLayout {
            with_period: o.rate_hz > 0,
            fixed_period: o.period.max(1),
            tracepoint: match &o.event {
                FaultEvent::Software => None,
                FaultEvent::Tracepoint(t) => Some(t.clone()),
            },
            stack_depth: o.stack_depth,
            leaf_word: o.stack_depth > 0 && LEAF_WORD_SUPPORTED,
        }
    }
}

/// Decodes one record of our sample layout.
///
/// PERF_RECORD_SAMPLE bodies, in the order of include/uapi/linux/perf_event.h:
/// - software event, `sample_type = TID | TIME | ADDR | CPU [| PERIOD]`:
///   `u32 pid, tid; u64 time; u64 addr; u32 cpu, res; [u64 period;]`;
/// - tracepoint, `sample_type = TID | TIME | CPU [| PERIOD] | RAW`:
///   `u32 pid, tid; u64 time; u32 cpu, res; [u64 period;] u32 size; u8 data[size];` with the
///   tracepoint's fields at the offsets of its format file within `data`.
///
/// Without PERIOD every sample stands for `fixed_period`. PERF_RECORD_LOST is
/// `u64 id; u64 lost;` and PERF_RECORD_LOST_SAMPLES is `u64 lost;`.
///
/// Task records, each followed by the 24-byte `sample_id` (TID, TIME, CPU):
/// PERF_RECORD_FORK and PERF_RECORD_EXIT are `u32 pid, ppid, tid, ptid; u64 time;`,
/// PERF_RECORD_COMM is `u32 pid, tid; char comm[];` (NUL-terminated, padded to 8 bytes; its time
/// is the sample_id's). A record shorter than its layout, or whose header size disagrees with
/// the bytes, is `Other`.
pub fn decode_record(bytes: &[u8], layout: &SampleLayout) -> Decoded {
    decode_record_with(bytes, layout, None)
}

/// [`decode_record`], interning a sample's call chain (`u64 nr; u64 ips[nr]`, after PERIOD) into
/// `stacks` when given (`scratch` is reused between calls); without them the chain is skipped and
/// the sample has [`NO_STACK`].
pub fn decode_record_with(
    bytes: &[u8],
    layout: &SampleLayout,
    mut stacks: Option<(&mut CallStacks, &mut Vec<u64>)>,
) -> Decoded {
    let Some(ty) = u32_at(bytes, 0) else { return Decoded::Other };
    const H: usize = 8;
    match ty {
        PERF_RECORD_FORK | PERF_RECORD_EXIT | PERF_RECORD_COMM => {
            decode_task(ty, bytes).map(Decoded::Task).unwrap_or(Decoded::Other)
        }
        PERF_RECORD_MMAP2 => callchain::decode_mmap2(bytes, SAMPLE_ID_LEN).map(Decoded::Mmap).unwrap_or(Decoded::Other),
        PERF_RECORD_SAMPLE => {
            let s = (|| {
                let pid = u32_at(bytes, H)?;
                let tid = u32_at(bytes, H + 4)?;
                let time_ns = u64_at(bytes, H + 8)?;
                let mut at = H + 16;
                let mut addr = 0;
                if layout.tracepoint.is_none() {
                    addr = u64_at(bytes, at)?;
                    at += 8;
                }
                let cpu = u32_at(bytes, at)?;
                at += 8;
                let period = if layout.with_period {
                    at += 8;
                    u64_at(bytes, at - 8)?
                } else {
                    layout.fixed_period
                };
                let mut stack = NO_STACK;
                let mut entries: &[u8] = &[];
                if layout.stack_depth > 0 {
                    let nr = u64_at(bytes, at)?;
                    if nr > callchain::MAX_CHAIN_ENTRIES {
                        return None;
                    }
                    entries = bytes.get(at + 8..at + 8 + 8 * nr as usize)?;
                    at += 8 + 8 * nr as usize;
                }
                let mut error_code = None;
                if let Some(tp) = &layout.tracepoint {
                    let size = u32_at(bytes, at)? as usize;
                    let data = bytes.get(at + 4..at + 4 + size)?;
                    addr = u64_at(data, tp.address_offset)?;
                    error_code = Some(u64_at(data, tp.error_code_offset)?);
                    at += 4 + size;
                }
                // REGS_USER (`u64 abi; u64 sp` unless abi is 0) and STACK_USER (`u64 size;
                // u8 data[size]; u64 dyn_size` unless size is 0): the word at the user SP.
                let mut leaf = 0;
                if layout.leaf_word {
                    let abi = u64_at(bytes, at)?;
                    at += 8;
                    let mut sp = None;
                    if abi != 0 {
                        sp = Some(u64_at(bytes, at)?);
                        at += 8;
                    }
                    let size = u64_at(bytes, at)? as usize;
                    if size > 0 {
                        let word = u64_at(bytes, at + 8)?;
                        let dyn_size = u64_at(bytes, at.checked_add(8 + size)?)?;
                        // A code address is neither in the stack (near SP) nor outside user space.
                        let plausible = |w: u64, sp: u64| (4096..1 << 47).contains(&w) && w.abs_diff(sp) > 1 << 26;
                        if sp.is_some_and(|sp| dyn_size >= 8 && plausible(word, sp)) {
                            leaf = word;
                        }
                    }
                }
                if let Some((stacks, scratch)) = stacks.as_mut() {
                    if layout.stack_depth > 0 {
                        callchain::user_addresses(entries, scratch);
                        if scratch.len() >= layout.stack_depth as usize {
                            stacks.at_depth_limit += 1;
                        }
                        stack = stacks.intern(scratch, leaf);
                    }
                }
                Some(FaultSample { pid, tid, time_ns, addr, cpu, period, error_code, kind: FaultKind::Touch, stack })
            })();
            s.map(Decoded::Sample).unwrap_or(Decoded::Other)
        }
        PERF_RECORD_LOST => u64_at(bytes, H + 8).map(Decoded::Lost).unwrap_or(Decoded::Other),
        PERF_RECORD_LOST_SAMPLES => u64_at(bytes, H).map(Decoded::Lost).unwrap_or(Decoded::Other),
        _ => Decoded::Other,
    }
}

fn decode_task(ty: u32, bytes: &[u8]) -> Option<TaskEvent> {
    const H: usize = 8;
    let misc = u16::from_ne_bytes(bytes.get(4..6)?.try_into().ok()?);
    let size = u16::from_ne_bytes(bytes.get(6..8)?.try_into().ok()?) as usize;
    // The record as the header sizes it, which must hold its body and the sample_id.
    let rec = bytes.get(..size)?;
    let id = size.checked_sub(SAMPLE_ID_LEN)?;
    let cpu = u32_at(rec, id + 16)?;
    if ty == PERF_RECORD_COMM {
        let pid = u32_at(rec, H)?;
        let tid = u32_at(rec, H + 4)?;
        let name = rec.get(H + 8..id)?;
        let name = &name[..name.iter().position(|&b| b == 0)?];
        // The kernel's comm is at most 15 bytes (TASK_COMM_LEN 16 with the NUL).
        let name = &name[..name.len().min(15)];
        let kind = TaskKind::Comm {
            name: String::from_utf8_lossy(name).into_owned(),
            exec: misc & PERF_RECORD_MISC_COMM_EXEC != 0,
        };
        return Some(TaskEvent { kind, pid, tid, time_ns: u64_at(rec, id + 8)?, cpu });
    }
    if id < H + 24 {
        return None;
    }
    let (pid, ppid, tid, ptid) = (u32_at(rec, H)?, u32_at(rec, H + 4)?, u32_at(rec, H + 8)?, u32_at(rec, H + 12)?);
    let time_ns = u64_at(rec, H + 16)?;
    let kind =
        if ty == PERF_RECORD_FORK { TaskKind::Fork { parent_pid: ppid, parent_tid: ptid } } else { TaskKind::Exit };
    Some(TaskEvent { kind, pid, tid, time_ns, cpu })
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

    fn lay(with_period: bool, fixed_period: u64) -> SampleLayout {
        SampleLayout { with_period, fixed_period, tracepoint: None, stack_depth: 0, leaf_word: false }
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
        let sample = FaultSample {
            time_ns: 123_456_789,
            pid: 42,
            tid: 43,
            cpu: 1,
            addr: 0x7f00_dead_b000,
            period: 37,
            error_code: None,
            kind: FaultKind::Touch,
            stack: NO_STACK,
        };
        assert_eq!(decode_record(&rec(PERF_RECORD_SAMPLE, &body), &lay(true, 1)), Decoded::Sample(sample));
        // Without PERIOD in the layout (fixed period): the 32-byte body, the fixed period applies.
        assert_eq!(
            decode_record(&rec(PERF_RECORD_SAMPLE, &body[..32]), &lay(false, 16)),
            Decoded::Sample(FaultSample { period: 16, ..sample })
        );
        // With PERIOD expected but missing: not a sample of ours.
        assert_eq!(decode_record(&rec(PERF_RECORD_SAMPLE, &body[..32]), &lay(true, 1)), Decoded::Other);
        let mut lost = Vec::new();
        lost.extend_from_slice(&7u64.to_ne_bytes());
        lost.extend_from_slice(&99u64.to_ne_bytes());
        assert_eq!(decode_record(&rec(PERF_RECORD_LOST, &lost), &lay(true, 1)), Decoded::Lost(99));
        assert_eq!(decode_record(&rec(PERF_RECORD_LOST_SAMPLES, &5u64.to_ne_bytes()), &lay(true, 1)), Decoded::Lost(5));
        assert_eq!(decode_record(&rec(3, &[0; 8]), &lay(true, 1)), Decoded::Other);
        assert_eq!(decode_record(&[1, 2], &lay(true, 1)), Decoded::Other);
    }

    /// A task record as the kernel writes it with sample_id_all (TID | TIME | CPU).
    fn task_rec(ty: u32, misc: u16, body: &[u8], id: (u32, u32, u64, u32)) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&misc.to_ne_bytes());
        v.extend_from_slice(&((8 + body.len() + SAMPLE_ID_LEN) as u16).to_ne_bytes());
        v.extend_from_slice(body);
        v.extend_from_slice(&id.0.to_ne_bytes());
        v.extend_from_slice(&id.1.to_ne_bytes());
        v.extend_from_slice(&id.2.to_ne_bytes());
        v.extend_from_slice(&id.3.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v
    }

    fn fork_body(pid: u32, ppid: u32, tid: u32, ptid: u32, time: u64) -> Vec<u8> {
        [pid, ppid, tid, ptid].iter().flat_map(|v| v.to_ne_bytes()).chain(time.to_ne_bytes()).collect()
    }

    fn comm_body(pid: u32, tid: u32, name: &[u8]) -> Vec<u8> {
        let mut b: Vec<u8> = [pid, tid].iter().flat_map(|v| v.to_ne_bytes()).collect();
        b.extend_from_slice(name);
        b.push(0);
        while !b.len().is_multiple_of(8) {
            b.push(0);
        }
        b
    }

    #[test]
    fn decodes_fork_exit_and_comm_records() {
        let lay = lay(true, 1);
        let fork = task_rec(PERF_RECORD_FORK, 0, &fork_body(500, 500, 502, 500, 7_000), (500, 502, 7_000, 3));
        assert_eq!(fork.len(), 8 + 24 + 24);
        assert_eq!(
            decode_record(&fork, &lay),
            Decoded::Task(TaskEvent {
                kind: TaskKind::Fork { parent_pid: 500, parent_tid: 500 },
                pid: 500,
                tid: 502,
                time_ns: 7_000,
                cpu: 3
            })
        );
        let exit = task_rec(PERF_RECORD_EXIT, 0, &fork_body(500, 500, 502, 502, 9_000), (500, 502, 9_000, 1));
        assert_eq!(
            decode_record(&exit, &lay),
            Decoded::Task(TaskEvent { kind: TaskKind::Exit, pid: 500, tid: 502, time_ns: 9_000, cpu: 1 })
        );
        // A rename by the thread itself, and an exec (misc bit); the time is the sample_id's.
        let comm = task_rec(PERF_RECORD_COMM, 0, &comm_body(500, 502, b"worker-1"), (500, 502, 8_000, 0));
        assert_eq!(
            decode_record(&comm, &lay),
            Decoded::Task(TaskEvent {
                kind: TaskKind::Comm { name: "worker-1".into(), exec: false },
                pid: 500,
                tid: 502,
                time_ns: 8_000,
                cpu: 0
            })
        );
        let exec =
            task_rec(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, &comm_body(500, 500, b"prog"), (500, 500, 1, 2));
        assert!(matches!(
            decode_record(&exec, &lay),
            Decoded::Task(TaskEvent { kind: TaskKind::Comm { exec: true, .. }, .. })
        ));
        // Cut short, or sized beyond its bytes, or a name without its NUL: not a record of ours.
        assert_eq!(decode_record(&fork[..fork.len() - 1], &lay), Decoded::Other);
        let mut short = fork.clone();
        short[6..8].copy_from_slice(&40u16.to_ne_bytes());
        assert_eq!(decode_record(&short, &lay), Decoded::Other);
        let mut body: Vec<u8> = [1u32, 1].iter().flat_map(|v| v.to_ne_bytes()).collect();
        body.extend_from_slice(&[b'x'; 16]);
        let no_nul = task_rec(PERF_RECORD_COMM, 0, &body, (1, 1, 1, 1));
        assert_eq!(decode_record(&no_nul, &lay), Decoded::Other);
    }

    /// Mutated and cut task and sample records: decoding never panics and never reads past the
    /// record (bounded: 20 000 cases, a fixed seed).
    #[test]
    fn hostile_records_decode_without_panicking() {
        let lay = lay(true, 1);
        let seeds = [
            task_rec(PERF_RECORD_FORK, 0, &fork_body(1, 1, 2, 1, 5), (1, 2, 5, 0)),
            task_rec(PERF_RECORD_EXIT, 0, &fork_body(1, 1, 2, 2, 6), (1, 2, 6, 0)),
            task_rec(PERF_RECORD_COMM, 0, &comm_body(1, 2, b"a-rather-long-name"), (1, 2, 7, 0)),
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..20_000 {
            let mut b = seeds[i % seeds.len()].clone();
            for _ in 0..(next() % 4) {
                let at = (next() as usize) % b.len();
                b[at] = next() as u8;
            }
            if next() % 3 == 0 {
                let cut = (next() as usize) % (b.len() + 1);
                b.truncate(cut);
            }
            if let Decoded::Task(TaskEvent { kind: TaskKind::Comm { name, .. }, .. }) = decode_record(&b, &lay) {
                assert!(name.len() <= 15 * 3, "a name of at most 15 bytes (lossy UTF-8 may widen them)");
            }
        }
    }

    /// Every fault of this test's thread (and the threads it creates), disabled until enabled;
    /// None (and a line saying why) where the event cannot be opened here.
    fn on_this_thread(event: FaultEvent, ring_exp: u8) -> Option<(u32, PageFaultSampler)> {
        let tid = unsafe { libc::gettid() } as u32;
        let cpus = crate::topology::read_topology().unwrap().online_cpus;
        // A tracepoint fires in kernel mode: kernel samples must not be excluded for it.
        let exclude_kernel = event == FaultEvent::Software;
        let o = PageFaultOptions {
            exclude_kernel,
            enable_on_exec: false,
            ring_exp,
            period: 1,
            rate_hz: 0,
            event,
            stack_depth: 0,
        };
        match PageFaultSampler::open(&[tid], &cpus, &o) {
            Ok(s) => Some((tid, s)),
            Err(e) => {
                numascope_testsupport::skip_outside_ci(format_args!("cannot open the page-fault event here: {e}"));
                None
            }
        }
    }

    /// A real thread of this test, followed by an event on the test's thread with `inherit`: its
    /// creation, its name and its exit come as task records with its tid.
    #[test]
    fn a_thread_started_named_and_ended_gives_its_task_records() {
        let Some((tid, mut s)) = on_this_thread(FaultEvent::Software, 4) else { return };
        s.enable().unwrap();
        let child = std::thread::Builder::new()
            .name("ns-task-rec".into())
            .spawn(|| unsafe { libc::gettid() } as u32)
            .unwrap()
            .join()
            .unwrap();
        // The exit record is written as the thread leaves the kernel's exit path, after join
        // returned: give it a moment.
        std::thread::sleep(std::time::Duration::from_millis(50));
        s.disable().unwrap();
        let mut out = Vec::new();
        s.drain(&mut out);
        let tasks: Vec<TaskEvent> = s.take_tasks().into_iter().filter(|t| t.tid == child).collect();
        let pid = std::process::id();
        assert!(
            tasks.iter().any(|t| t.kind == TaskKind::Fork { parent_pid: pid, parent_tid: tid } && t.pid == pid),
            "fork: {tasks:?}"
        );
        assert!(
            tasks.iter().any(|t| matches!(&t.kind, TaskKind::Comm { name, exec: false } if name == "ns-task-rec")),
            "comm: {tasks:?}"
        );
        assert!(tasks.iter().any(|t| t.kind == TaskKind::Exit), "exit: {tasks:?}");
        let (fork, exit) = (
            tasks.iter().find(|t| matches!(t.kind, TaskKind::Fork { .. })).unwrap().time_ns,
            tasks.iter().find(|t| t.kind == TaskKind::Exit).unwrap().time_ns,
        );
        assert!(fork <= exit, "fork at {fork} ns, exit at {exit} ns");
        assert!(s.take_tasks().is_empty(), "taken once");
    }

    /// The format file of exceptions:page_fault_user as Linux 6.x writes it.
    const PF_FORMAT: &str = "name: page_fault_user\nID: 190\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:unsigned long ip;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:unsigned long error_code;\toffset:24;\tsize:8;\tsigned:0;\n\n\
print fmt: \"address=%ps ip=%ps error_code=0x%lx\", (void *)REC->address, (void *)REC->ip, REC->error_code\n";

    fn tracefs(name: &str, format: Option<&str>) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("numascope-tracefs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("events/sched")).unwrap();
        if let Some(f) = format {
            let d = root.join("events/exceptions/page_fault_user");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("id"), "190\n").unwrap();
            std::fs::write(d.join("format"), f).unwrap();
        }
        root
    }

    #[test]
    fn finds_the_tracepoint_and_its_field_offsets() {
        let root = tracefs("ok", Some(PF_FORMAT));
        let missing = std::env::temp_dir().join("numascope-no-such-tracefs");
        let tp = find_fault_tracepoint(&[&missing, &root]).unwrap();
        assert_eq!(tp, FaultTracepoint { id: 190, address_offset: 8, error_code_offset: 24 });
        // Offsets come from the file, not from a table: a kernel that lays the record out
        // differently is read right.
        let moved = tracefs("moved", Some(&PF_FORMAT.replace("offset:24", "offset:32")));
        assert_eq!(find_fault_tracepoint(&[&moved]).unwrap().error_code_offset, 32);
        let e = find_fault_tracepoint(&[&missing]).unwrap_err();
        assert!(e.starts_with("tracefs is not mounted (looked at ") && e.contains("mount -t tracefs"), "{e}");
        let none = tracefs("none", None);
        let e = find_fault_tracepoint(&[&none]).unwrap_err();
        assert!(e.contains("no tracepoint exceptions:page_fault_user") && e.contains("x86 only"), "{e}");
        let bad = tracefs("bad", Some(&PF_FORMAT.replace("error_code;", "error_kode;")));
        let e = find_fault_tracepoint(&[&bad]).unwrap_err();
        assert!(e.ends_with("format has no field error_code"), "{e}");
        let small = tracefs("small", Some(&PF_FORMAT.replace("offset:8;\tsize:8", "offset:8;\tsize:4")));
        let e = find_fault_tracepoint(&[&small]).unwrap_err();
        assert!(e.contains("field address is not an 8-byte field"), "{e}");
        for r in [root, moved, none, bad, small] {
            let _ = std::fs::remove_dir_all(r);
        }
    }

    /// A tracepoint sample: TID, TIME, CPU, [PERIOD], RAW with the page_fault_user record.
    fn tp_body(period: Option<u64>, addr: u64, error_code: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&42u32.to_ne_bytes());
        b.extend_from_slice(&43u32.to_ne_bytes());
        b.extend_from_slice(&5_000u64.to_ne_bytes());
        b.extend_from_slice(&3u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        if let Some(p) = period {
            b.extend_from_slice(&p.to_ne_bytes());
        }
        // 4-byte size, 32 bytes of record, 4 bytes of padding: u32 + data ends 8-aligned.
        let mut raw = vec![0u8; 36];
        raw[0..2].copy_from_slice(&190u16.to_ne_bytes());
        raw[4..8].copy_from_slice(&43i32.to_ne_bytes());
        raw[8..16].copy_from_slice(&addr.to_ne_bytes());
        raw[16..24].copy_from_slice(&0x40_1000u64.to_ne_bytes());
        raw[24..32].copy_from_slice(&error_code.to_ne_bytes());
        b.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
        b.extend_from_slice(&raw);
        b
    }

    #[test]
    fn decodes_the_user_call_chain_and_interns_it() {
        // TID TIME ADDR CPU PERIOD CALLCHAIN: the chain is PERF_CONTEXT_USER, the user ip, returns.
        let mut body = Vec::new();
        body.extend_from_slice(&42u32.to_ne_bytes());
        body.extend_from_slice(&43u32.to_ne_bytes());
        body.extend_from_slice(&1_000u64.to_ne_bytes());
        body.extend_from_slice(&0x7f00_0000_1000u64.to_ne_bytes());
        body.extend_from_slice(&[2u32, 0].map(u32::to_ne_bytes).concat());
        body.extend_from_slice(&1u64.to_ne_bytes());
        let chain = [(-512i64) as u64, 0x5555_0000_1234, 0x5555_0000_2000, 0x5555_0000_3000];
        body.extend_from_slice(&(chain.len() as u64).to_ne_bytes());
        for c in chain {
            body.extend_from_slice(&c.to_ne_bytes());
        }
        // REGS_USER: abi 2 (64-bit), sp; STACK_USER: 8 bytes (a return address), dyn_size 8.
        for w in [2u64, 0x7ffd_0000_1000, 8, 0x5555_0000_0777, 8] {
            body.extend_from_slice(&w.to_ne_bytes());
        }
        let layout =
            SampleLayout { with_period: true, fixed_period: 1, tracepoint: None, stack_depth: 3, leaf_word: true };
        let mut stacks = CallStacks::default();
        let mut scratch = Vec::new();
        let r = rec(PERF_RECORD_SAMPLE, &body);
        let Decoded::Sample(a) = decode_record_with(&r, &layout, Some((&mut stacks, &mut scratch))) else { panic!() };
        let Decoded::Sample(b) = decode_record_with(&r, &layout, Some((&mut stacks, &mut scratch))) else { panic!() };
        assert_eq!((a.addr, a.period, a.stack), (0x7f00_0000_1000, 1, 0));
        assert_eq!(b.stack, a.stack, "the same chain is one stack");
        assert_eq!(
            stacks.get(0),
            Some((&[0x5555_0000_1234u64, 0x5555_0000_2000, 0x5555_0000_3000][..], 0x5555_0000_0777))
        );
        // A word near the stack pointer is a stack address, not a return address: no leaf word.
        let mut near = body.clone();
        let w = near.len() - 16;
        near[w..w + 8].copy_from_slice(&0x7ffd_0000_0ff0u64.to_ne_bytes());
        let Decoded::Sample(d) =
            decode_record_with(&rec(PERF_RECORD_SAMPLE, &near), &layout, Some((&mut stacks, &mut scratch)))
        else {
            panic!()
        };
        assert_eq!(stacks.get(d.stack).unwrap().1, 0);
        assert_eq!(
            stacks.at_depth_limit, 3,
            "three frames asked, three found (three decodes): the walk may have gone deeper"
        );
        // Without an interner the chain is skipped, the rest decodes the same.
        let Decoded::Sample(c) = decode_record(&r, &layout) else { panic!() };
        assert_eq!((c.addr, c.stack), (a.addr, NO_STACK));
        // A chain claiming more entries than the record holds, or than any kernel writes, is refused.
        let mut bad = body.clone();
        let at = 40;
        bad[at..at + 8].copy_from_slice(&5u64.to_ne_bytes());
        assert_eq!(decode_record(&rec(PERF_RECORD_SAMPLE, &bad), &layout), Decoded::Other);
        bad[at..at + 8].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert_eq!(decode_record(&rec(PERF_RECORD_SAMPLE, &bad), &layout), Decoded::Other);
        // Every cut of the record decodes without a panic.
        for cut in 0..r.len() {
            let _ = decode_record_with(&r[..cut], &layout, Some((&mut stacks, &mut scratch)));
        }
    }

    #[test]
    fn decodes_tracepoint_samples_with_their_error_code() {
        let tp = FaultTracepoint { id: 190, address_offset: 8, error_code_offset: 24 };
        let with = SampleLayout {
            with_period: true,
            fixed_period: 1,
            tracepoint: Some(tp.clone()),
            stack_depth: 0,
            leaf_word: false,
        };
        let fixed = SampleLayout {
            with_period: false,
            fixed_period: 4,
            tracepoint: Some(tp),
            stack_depth: 0,
            leaf_word: false,
        };
        let want = FaultSample {
            time_ns: 5_000,
            pid: 42,
            tid: 43,
            cpu: 3,
            addr: 0x7f12_3456_7008,
            period: 9,
            error_code: Some(0x7),
            kind: FaultKind::Touch,
            stack: NO_STACK,
        };
        let body = tp_body(Some(9), 0x7f12_3456_7008, 0x7);
        assert_eq!(decode_record(&rec(PERF_RECORD_SAMPLE, &body), &with), Decoded::Sample(want));
        let body = tp_body(None, 0x7f12_3456_7008, 0x7);
        assert_eq!(
            decode_record(&rec(PERF_RECORD_SAMPLE, &body), &fixed),
            Decoded::Sample(FaultSample { period: 4, ..want })
        );
        // A raw record shorter than its fields: not a sample of ours.
        let mut short = tp_body(None, 1, 2);
        short.truncate(short.len() - 12);
        assert_eq!(decode_record(&rec(PERF_RECORD_SAMPLE, &short), &fixed), Decoded::Other);
    }

    #[test]
    fn hinting_faults_are_repeat_not_present_faults_with_balancing_on() {
        use FaultKind::*;
        // x86 error codes: 0x4 user read, 0x6 user write (not present); 0x5/0x7 protection faults.
        for (code, hinting, seen, want) in [
            (Some(0x4), true, true, AccessLoad),
            (Some(0x6), true, true, AccessStore),
            (Some(0x4), true, false, Touch), // the first fault on a page: its first touch
            (Some(0x6), false, true, Touch), // balancing off: a re-fault (swap-in, reclaim), no hinting
            (Some(0x7), true, true, Touch),  // copy-on-write on a present page
            (Some(0x5), true, true, Touch),
            (None, true, true, Touch), // software event: no write bit, not called a load or a store
        ] {
            assert_eq!(classify(code, hinting, seen), want, "{code:?} hinting={hinting} seen={seen}");
        }
    }

    /// Mounts tracefs at /sys/kernel/tracing when it is not mounted and we are root (as a test
    /// setup; the collector itself never mounts anything). Returns the tracepoint or why not.
    fn tracepoint_here() -> Result<FaultTracepoint, String> {
        let root = std::path::Path::new(TRACEFS_ROOTS[0]);
        if !root.join("events").is_dir() && unsafe { libc::geteuid() } == 0 {
            let c = |s: &str| std::ffi::CString::new(s).unwrap();
            unsafe {
                libc::mount(
                    c("nodev").as_ptr(),
                    c(TRACEFS_ROOTS[0]).as_ptr(),
                    c("tracefs").as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
        }
        let roots: Vec<&std::path::Path> = TRACEFS_ROOTS.iter().map(std::path::Path::new).collect();
        find_fault_tracepoint(&roots)
    }

    /// The tracepoint on our own thread: a read of a fresh page (not present: 0x4), a write to
    /// that page (present, read-only zero page: copy-on-write, 0x7) and a write to another fresh
    /// page (0x6), each with its exact address and error code.
    #[test]
    fn tracepoint_gives_our_faults_with_their_error_codes() {
        let tp = match tracepoint_here() {
            Ok(t) => t,
            Err(e) => {
                numascope_testsupport::skip_outside_ci(format_args!("{e}"));
                return;
            }
        };
        let Some((tid, mut s)) = on_this_thread(FaultEvent::Tracepoint(tp), 6) else { return };
        let len = 4 * 4096;
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as *mut u8;
        assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
        unsafe { libc::madvise(p as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE) };
        s.enable().unwrap();
        unsafe {
            let a = p.add(8);
            let _ = std::ptr::read_volatile(a);
            std::ptr::write_volatile(a, 1);
            std::ptr::write_volatile(p.add(2 * 4096 + 16), 1);
        }
        s.disable().unwrap();
        let mut out = Vec::new();
        s.drain(&mut out);
        let base = p as u64;
        unsafe { libc::munmap(p as *mut libc::c_void, len) };
        let ours: Vec<(u64, u64)> = out
            .iter()
            .filter(|f| f.tid == tid && f.addr >= base && f.addr < base + len as u64)
            .map(|f| (f.addr - base, f.error_code.expect("tracepoint samples carry the error code") & 0x7))
            .collect();
        assert_eq!(ours, vec![(8, 0x4), (8, 0x7), (2 * 4096 + 16, 0x6)], "all samples: {out:?}");
    }
}
