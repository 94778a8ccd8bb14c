//! PERF_RECORD_SAMPLE body decoder.
//!
//! Field order follows the kernel's `perf_output_sample()` (kernel/events/core.c) and the
//! `perf_event_open(2)` man page:
//!
//! IDENTIFIER, IP, TID (pid u32, tid u32), TIME, ADDR, ID, STREAM_ID, CPU (cpu u32, res u32),
//! PERIOD, READ, CALLCHAIN (nr + ips), RAW (u32 size + data), BRANCH_STACK (nr, [hw_idx],
//! entries × 24 B, [counters]), REGS_USER (abi + regs), STACK_USER (size + data + [dyn_size]),
//! WEIGHT or WEIGHT_STRUCT, DATA_SRC, TRANSACTION, REGS_INTR (abi + regs), PHYS_ADDR, CGROUP,
//! DATA_PAGE_SIZE, CODE_PAGE_SIZE, AUX (size + data).
//!
//! linux-perf-event-reader 0.10.2 drops DATA_SRC/WEIGHT and misparses WEIGHT_STRUCT
//! (platform.md Q3), hence this decoder. Little-endian files only (every x86-64 perf.data).

pub const SAMPLE_IP: u64 = 1 << 0;
pub const SAMPLE_TID: u64 = 1 << 1;
pub const SAMPLE_TIME: u64 = 1 << 2;
pub const SAMPLE_ADDR: u64 = 1 << 3;
pub const SAMPLE_READ: u64 = 1 << 4;
pub const SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const SAMPLE_ID: u64 = 1 << 6;
pub const SAMPLE_CPU: u64 = 1 << 7;
pub const SAMPLE_PERIOD: u64 = 1 << 8;
pub const SAMPLE_STREAM_ID: u64 = 1 << 9;
pub const SAMPLE_RAW: u64 = 1 << 10;
pub const SAMPLE_BRANCH_STACK: u64 = 1 << 11;
pub const SAMPLE_REGS_USER: u64 = 1 << 12;
pub const SAMPLE_STACK_USER: u64 = 1 << 13;
pub const SAMPLE_WEIGHT: u64 = 1 << 14;
pub const SAMPLE_DATA_SRC: u64 = 1 << 15;
pub const SAMPLE_IDENTIFIER: u64 = 1 << 16;
pub const SAMPLE_TRANSACTION: u64 = 1 << 17;
pub const SAMPLE_REGS_INTR: u64 = 1 << 18;
pub const SAMPLE_PHYS_ADDR: u64 = 1 << 19;
pub const SAMPLE_AUX: u64 = 1 << 20;
pub const SAMPLE_CGROUP: u64 = 1 << 21;
pub const SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
pub const SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
pub const SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub const FORMAT_ID: u64 = 1 << 2;
pub const FORMAT_GROUP: u64 = 1 << 3;
pub const FORMAT_LOST: u64 = 1 << 4;

pub const BRANCH_HW_INDEX: u64 = 1 << 17;
pub const BRANCH_COUNTERS: u64 = 1 << 19;

/// What the sample body contains: the attr fields that decide its layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleLayout {
    pub sample_type: u64,
    pub read_format: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_regs_intr: u64,
}

/// The decoded fields (None = not in sample_type).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfSample {
    pub identifier: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub callchain_len: Option<u64>,
    /// Byte offset in the body of the callchain's first entry (its `callchain_len` u64 values
    /// follow): [`callchain_entries`] reads them back.
    pub callchain_at: Option<usize>,
    /// PERF_SAMPLE_RAW data, without its u32 size (includes any trailing alignment padding
    /// only if the producer counted it in the size; the kernel does not).
    pub raw: Option<Vec<u8>>,
    /// WEIGHT (u64) or WEIGHT_STRUCT (u64 bits: var1_dw | var2_w << 32 | var3_w << 48).
    pub weight: Option<u64>,
    pub weight_is_struct: bool,
    pub data_src: Option<u64>,
    pub transaction: Option<u64>,
    pub phys_addr: Option<u64>,
    pub cgroup: Option<u64>,
    pub data_page_size: Option<u64>,
    pub code_page_size: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sample record truncated: needed {needed} more bytes at offset {offset} while reading {field} (body is {len} bytes)")]
pub struct SampleError {
    pub field: &'static str,
    pub offset: usize,
    pub needed: usize,
    pub len: usize,
}

struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], SampleError> {
        if self.b.len() - self.pos < n {
            return Err(SampleError {
                field,
                offset: self.pos,
                needed: n - (self.b.len() - self.pos),
                len: self.b.len(),
            });
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u64(&mut self, field: &'static str) -> Result<u64, SampleError> {
        Ok(u64::from_le_bytes(self.take(8, field)?.try_into().unwrap()))
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, SampleError> {
        Ok(u32::from_le_bytes(self.take(4, field)?.try_into().unwrap()))
    }
    fn skip_u64s(&mut self, n: u64, field: &'static str) -> Result<(), SampleError> {
        let bytes = usize::try_from(n).ok().and_then(|n| n.checked_mul(8)).unwrap_or(usize::MAX);
        if bytes == usize::MAX {
            return Err(SampleError { field, offset: self.pos, needed: usize::MAX, len: self.b.len() });
        }
        self.take(bytes, field).map(|_| ())
    }
}

/// The raw callchain entries of sample `s` decoded from `body` (the `nr` u64 values after
/// `u64 nr`, context markers included), empty without a callchain.
pub fn callchain_entries<'a>(body: &'a [u8], s: &PerfSample) -> &'a [u8] {
    match (s.callchain_at, s.callchain_len) {
        (Some(at), Some(nr)) => usize::try_from(nr)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .and_then(|n| body.get(at..at.checked_add(n)?))
            .unwrap_or(&[]),
        _ => &[],
    }
}

/// Decodes one sample body (the bytes after the 8-byte `perf_event_header`).
pub fn parse_sample(body: &[u8], layout: &SampleLayout) -> Result<PerfSample, SampleError> {
    let st = layout.sample_type;
    let mut c = Cur { b: body, pos: 0 };
    let mut s = PerfSample::default();
    if st & SAMPLE_IDENTIFIER != 0 {
        s.identifier = Some(c.u64("IDENTIFIER")?);
    }
    if st & SAMPLE_IP != 0 {
        s.ip = Some(c.u64("IP")?);
    }
    if st & SAMPLE_TID != 0 {
        s.pid = Some(c.u32("TID")? as i32);
        s.tid = Some(c.u32("TID")? as i32);
    }
    if st & SAMPLE_TIME != 0 {
        s.time = Some(c.u64("TIME")?);
    }
    if st & SAMPLE_ADDR != 0 {
        s.addr = Some(c.u64("ADDR")?);
    }
    if st & SAMPLE_ID != 0 {
        s.id = Some(c.u64("ID")?);
    }
    if st & SAMPLE_STREAM_ID != 0 {
        s.stream_id = Some(c.u64("STREAM_ID")?);
    }
    if st & SAMPLE_CPU != 0 {
        s.cpu = Some(c.u32("CPU")?);
        c.u32("CPU")?;
    }
    if st & SAMPLE_PERIOD != 0 {
        s.period = Some(c.u64("PERIOD")?);
    }
    if st & SAMPLE_READ != 0 {
        let rf = layout.read_format;
        let per_value = 1 + (rf & FORMAT_ID != 0) as u64 + (rf & FORMAT_LOST != 0) as u64;
        if rf & FORMAT_GROUP != 0 {
            let nr = c.u64("READ")?;
            let times = (rf & FORMAT_TOTAL_TIME_ENABLED != 0) as u64 + (rf & FORMAT_TOTAL_TIME_RUNNING != 0) as u64;
            c.skip_u64s(times, "READ")?;
            c.skip_u64s(nr.saturating_mul(per_value), "READ")?;
        } else {
            let times = (rf & FORMAT_TOTAL_TIME_ENABLED != 0) as u64 + (rf & FORMAT_TOTAL_TIME_RUNNING != 0) as u64;
            c.skip_u64s(per_value + times, "READ")?;
        }
    }
    if st & SAMPLE_CALLCHAIN != 0 {
        let nr = c.u64("CALLCHAIN")?;
        let at = c.pos;
        c.skip_u64s(nr, "CALLCHAIN")?;
        s.callchain_len = Some(nr);
        s.callchain_at = Some(at);
    }
    if st & SAMPLE_RAW != 0 {
        let size = c.u32("RAW")? as usize;
        s.raw = Some(c.take(size, "RAW")?.to_vec());
        // The u32 size + data are padded to a multiple of 8 bytes.
        let pad = (8 - (4 + size) % 8) % 8;
        c.take(pad, "RAW padding")?;
    }
    if st & SAMPLE_BRANCH_STACK != 0 {
        let nr = c.u64("BRANCH_STACK")?;
        if layout.branch_sample_type & BRANCH_HW_INDEX != 0 {
            c.u64("BRANCH_STACK hw_idx")?;
        }
        c.skip_u64s(nr.saturating_mul(3), "BRANCH_STACK")?;
        if layout.branch_sample_type & BRANCH_COUNTERS != 0 {
            c.skip_u64s(nr, "BRANCH_STACK counters")?;
        }
    }
    if st & SAMPLE_REGS_USER != 0 {
        let abi = c.u64("REGS_USER")?;
        if abi != 0 {
            c.skip_u64s(layout.sample_regs_user.count_ones() as u64, "REGS_USER")?;
        }
    }
    if st & SAMPLE_STACK_USER != 0 {
        let size = c.u64("STACK_USER")?;
        if size != 0 {
            let n = usize::try_from(size).unwrap_or(usize::MAX);
            c.take(n, "STACK_USER")?;
            c.u64("STACK_USER dyn_size")?;
        }
    }
    if st & (SAMPLE_WEIGHT | SAMPLE_WEIGHT_STRUCT) != 0 {
        s.weight = Some(c.u64("WEIGHT")?);
        s.weight_is_struct = st & SAMPLE_WEIGHT_STRUCT != 0;
    }
    if st & SAMPLE_DATA_SRC != 0 {
        s.data_src = Some(c.u64("DATA_SRC")?);
    }
    if st & SAMPLE_TRANSACTION != 0 {
        s.transaction = Some(c.u64("TRANSACTION")?);
    }
    if st & SAMPLE_REGS_INTR != 0 {
        let abi = c.u64("REGS_INTR")?;
        if abi != 0 {
            c.skip_u64s(layout.sample_regs_intr.count_ones() as u64, "REGS_INTR")?;
        }
    }
    if st & SAMPLE_PHYS_ADDR != 0 {
        s.phys_addr = Some(c.u64("PHYS_ADDR")?);
    }
    if st & SAMPLE_CGROUP != 0 {
        s.cgroup = Some(c.u64("CGROUP")?);
    }
    if st & SAMPLE_DATA_PAGE_SIZE != 0 {
        s.data_page_size = Some(c.u64("DATA_PAGE_SIZE")?);
    }
    if st & SAMPLE_CODE_PAGE_SIZE != 0 {
        s.code_page_size = Some(c.u64("CODE_PAGE_SIZE")?);
    }
    if st & SAMPLE_AUX != 0 {
        let size = c.u64("AUX")?;
        let n = usize::try_from(size).unwrap_or(usize::MAX);
        c.take(n, "AUX")?;
    }
    Ok(s)
}

/// Encodes a sample body from fields, in the same order (for fixtures and round trips).
/// Only fields that [`parse_sample`] returns are written; READ/CALLCHAIN/BRANCH/REGS/STACK/AUX
/// are written empty.
pub fn encode_sample(s: &PerfSample, layout: &SampleLayout) -> Vec<u8> {
    let st = layout.sample_type;
    let mut v = Vec::new();
    let p64 = |v: &mut Vec<u8>, x: u64| v.extend_from_slice(&x.to_le_bytes());
    if st & SAMPLE_IDENTIFIER != 0 {
        p64(&mut v, s.identifier.unwrap_or(0));
    }
    if st & SAMPLE_IP != 0 {
        p64(&mut v, s.ip.unwrap_or(0));
    }
    if st & SAMPLE_TID != 0 {
        v.extend_from_slice(&(s.pid.unwrap_or(0) as u32).to_le_bytes());
        v.extend_from_slice(&(s.tid.unwrap_or(0) as u32).to_le_bytes());
    }
    if st & SAMPLE_TIME != 0 {
        p64(&mut v, s.time.unwrap_or(0));
    }
    if st & SAMPLE_ADDR != 0 {
        p64(&mut v, s.addr.unwrap_or(0));
    }
    if st & SAMPLE_ID != 0 {
        p64(&mut v, s.id.unwrap_or(0));
    }
    if st & SAMPLE_STREAM_ID != 0 {
        p64(&mut v, s.stream_id.unwrap_or(0));
    }
    if st & SAMPLE_CPU != 0 {
        v.extend_from_slice(&s.cpu.unwrap_or(0).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
    }
    if st & SAMPLE_PERIOD != 0 {
        p64(&mut v, s.period.unwrap_or(0));
    }
    if st & SAMPLE_CALLCHAIN != 0 {
        p64(&mut v, 0);
    }
    if st & SAMPLE_RAW != 0 {
        let raw = s.raw.clone().unwrap_or_default();
        v.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        v.extend_from_slice(&raw);
        v.resize(v.len() + (8 - (4 + raw.len()) % 8) % 8, 0);
    }
    if st & (SAMPLE_WEIGHT | SAMPLE_WEIGHT_STRUCT) != 0 {
        p64(&mut v, s.weight.unwrap_or(0));
    }
    if st & SAMPLE_DATA_SRC != 0 {
        p64(&mut v, s.data_src.unwrap_or(0));
    }
    if st & SAMPLE_TRANSACTION != 0 {
        p64(&mut v, s.transaction.unwrap_or(0));
    }
    if st & SAMPLE_PHYS_ADDR != 0 {
        p64(&mut v, s.phys_addr.unwrap_or(0));
    }
    if st & SAMPLE_CGROUP != 0 {
        p64(&mut v, s.cgroup.unwrap_or(0));
    }
    if st & SAMPLE_DATA_PAGE_SIZE != 0 {
        p64(&mut v, s.data_page_size.unwrap_or(0));
    }
    if st & SAMPLE_CODE_PAGE_SIZE != 0 {
        p64(&mut v, s.code_page_size.unwrap_or(0));
    }
    v
}
