//! Reader of the allocation-site shim's per-process file (format versions 1 and 2,
//! little-endian; the layout is documented in docs/alloc-sites.md and written by
//! crates/allocshim/src/format.rs).
//!
//! Version 2 (the shim's since 2026-11) is a header and fixed-size blocks, each holding complete
//! records up to its `used` count (the shim maps a block into the process and raises `used` after
//! each event); version 1 is the header followed by records written with `write`.
//!
//! Every size read from the file is checked before it is used: records are at most
//! [`MAX_RECORD_BYTES`], stacks at most [`MAX_DEPTH`] frames, paths at most [`MAX_PATH_BYTES`],
//! blocks between [`MIN_BLOCK_BYTES`] and [`MAX_BLOCK_BYTES`]; the whole file must fit
//! [`ReadLimits`], and the reader holds at most one block's records besides what it returns. A
//! file that ends inside a record (version 1: the process was killed while writing; version 2: a
//! file cut short by a copy) is read up to the last whole record and marked `cut_short`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use thiserror::Error;

// The layout's constants, defined once for the shim that writes the file and this reader.
use numascope_allocformat::{
    BLOCK_HEAD, BLOCK_MAGIC, END_LEN, EVENT_FIXED, EV_SAMPLED, EV_STACK_TRUNCATED, MODULES_FIXED, MODULE_ENTRY_FIXED,
    REC_END, REC_EVENT, REC_MODULES,
};
pub use numascope_allocformat::{
    CLOCK_MONOTONIC_ID, END_BUFFERS_LOST, END_INTERNAL_FAILURE, END_SIZE_LIMIT, END_TRUNCATED, HEADER_LEN, MAGIC,
    VERSION,
};

pub const MAX_RECORD_BYTES: usize = 1 << 20;
pub const MAX_DEPTH: usize = 128;
pub const MAX_PATH_BYTES: usize = 4096;
pub const MAX_BUILD_ID_BYTES: usize = 64;
/// Version 2 block sizes this reader accepts (the shim writes 64 KiB; powers of two only).
pub const MIN_BLOCK_BYTES: u32 = 512;
pub const MAX_BLOCK_BYTES: u32 = 16 << 20;
/// The most one block head may span: a thread's mapping (at most 1 MiB) or one record.
const MAX_SPAN_BYTES: u64 = 2 * MAX_RECORD_BYTES as u64 + 2 * MAX_BLOCK_BYTES as u64;

/// The interposed call an event comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocOp {
    Malloc,
    Calloc,
    Realloc,
    PosixMemalign,
    AlignedAlloc,
    Memalign,
    Valloc,
    Pvalloc,
    Reallocarray,
    Free,
    Mmap,
    Munmap,
    Mremap,
}

impl AllocOp {
    pub fn from_code(c: u8) -> Option<AllocOp> {
        Some(match c {
            numascope_allocformat::OP_MALLOC => AllocOp::Malloc,
            numascope_allocformat::OP_CALLOC => AllocOp::Calloc,
            numascope_allocformat::OP_REALLOC => AllocOp::Realloc,
            numascope_allocformat::OP_POSIX_MEMALIGN => AllocOp::PosixMemalign,
            numascope_allocformat::OP_ALIGNED_ALLOC => AllocOp::AlignedAlloc,
            numascope_allocformat::OP_MEMALIGN => AllocOp::Memalign,
            numascope_allocformat::OP_VALLOC => AllocOp::Valloc,
            numascope_allocformat::OP_PVALLOC => AllocOp::Pvalloc,
            numascope_allocformat::OP_REALLOCARRAY => AllocOp::Reallocarray,
            numascope_allocformat::OP_FREE => AllocOp::Free,
            numascope_allocformat::OP_MMAP => AllocOp::Mmap,
            numascope_allocformat::OP_MUNMAP => AllocOp::Munmap,
            numascope_allocformat::OP_MREMAP => AllocOp::Mremap,
            _ => return None,
        })
    }

    /// The file's code (also the proposed `op` column value).
    pub fn code(self) -> u8 {
        match self {
            AllocOp::Malloc => numascope_allocformat::OP_MALLOC,
            AllocOp::Calloc => numascope_allocformat::OP_CALLOC,
            AllocOp::Realloc => numascope_allocformat::OP_REALLOC,
            AllocOp::PosixMemalign => numascope_allocformat::OP_POSIX_MEMALIGN,
            AllocOp::AlignedAlloc => numascope_allocformat::OP_ALIGNED_ALLOC,
            AllocOp::Memalign => numascope_allocformat::OP_MEMALIGN,
            AllocOp::Valloc => numascope_allocformat::OP_VALLOC,
            AllocOp::Pvalloc => numascope_allocformat::OP_PVALLOC,
            AllocOp::Reallocarray => numascope_allocformat::OP_REALLOCARRAY,
            AllocOp::Free => numascope_allocformat::OP_FREE,
            AllocOp::Mmap => numascope_allocformat::OP_MMAP,
            AllocOp::Munmap => numascope_allocformat::OP_MUNMAP,
            AllocOp::Mremap => numascope_allocformat::OP_MREMAP,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AllocOp::Malloc => "malloc",
            AllocOp::Calloc => "calloc",
            AllocOp::Realloc => "realloc",
            AllocOp::PosixMemalign => "posix_memalign",
            AllocOp::AlignedAlloc => "aligned_alloc",
            AllocOp::Memalign => "memalign",
            AllocOp::Valloc => "valloc",
            AllocOp::Pvalloc => "pvalloc",
            AllocOp::Reallocarray => "reallocarray",
            AllocOp::Free => "free",
            AllocOp::Mmap => "mmap",
            AllocOp::Munmap => "munmap",
            AllocOp::Mremap => "mremap",
        }
    }

    /// Whether the event starts a heap block that `free`/`realloc` ends.
    pub fn is_heap_alloc(self) -> bool {
        !matches!(self, AllocOp::Free | AllocOp::Mmap | AllocOp::Munmap | AllocOp::Mremap)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub pid: u32,
    pub ppid: u32,
    /// Allocations of at least this many bytes were all recorded.
    pub min_bytes: u64,
    /// Mean byte interval of the sampler for smaller ones (0: none recorded).
    pub sample_bytes: u64,
    /// CLOCK_MONOTONIC nanoseconds when recording started.
    pub start_ns: u64,
    pub max_depth: u32,
}

/// One event as recorded. `ips` indexes [`AllocFile::ips`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawEvent {
    pub time_ns: u64,
    pub tid: u32,
    pub op: AllocOp,
    pub sampled: bool,
    pub stack_truncated: bool,
    pub address: u64,
    pub size: u64,
    /// realloc/mremap: the old address.
    pub old_address: u64,
    /// mmap: prot | flags << 32; mremap: old length; realloc: 1 when the old block was recorded.
    pub aux: u64,
    pub ips: std::ops::Range<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawModule {
    /// Load bias: runtime address minus the ELF virtual address.
    pub bias: u64,
    pub lo: u64,
    pub hi: u64,
    pub path: PathBuf,
    pub build_id: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleSnapshot {
    pub time_ns: u64,
    /// The shim ran out of room for the list.
    pub list_truncated: bool,
    pub modules: Vec<RawModule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndRecord {
    pub time_ns: u64,
    pub events: u64,
    pub dropped: u64,
    pub untracked: u64,
    pub flags: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocFile {
    pub header: Header,
    pub events: Vec<RawEvent>,
    /// Code addresses of all stacks, innermost first per event, each already inside its call
    /// instruction.
    pub ips: Vec<u64>,
    pub snapshots: Vec<ModuleSnapshot>,
    pub end: Option<EndRecord>,
    /// The file ends inside a record.
    pub cut_short: bool,
    /// Records of kinds this reader does not know (skipped).
    pub unknown_records: u32,
}

impl AllocFile {
    /// The process exited normally and the shim lost nothing.
    pub fn complete(&self) -> bool {
        !self.cut_short && self.end.as_ref().is_some_and(|e| e.flags & END_TRUNCATED == 0 && e.dropped == 0)
    }

    /// Why the file is not complete, in words; None when it is.
    pub fn incomplete_reason(&self) -> Option<String> {
        if self.cut_short {
            return Some("the file ends inside a record (the process was killed while the shim wrote)".into());
        }
        let Some(end) = &self.end else {
            return Some(if self.header.version >= 2 {
                "no end record: the process has not exited, or did not exit normally (killed or crashed); every event it finished is in the file".into()
            } else {
                "no end record: the process did not exit normally (killed, _exit, exec or crash), so events still in its buffers are missing"
                    .into()
            });
        };
        let mut why = Vec::new();
        if end.flags & END_SIZE_LIMIT != 0 {
            why.push("the file reached NUMASCOPE_ALLOC_MAX_FILE_BYTES and recording stopped");
        }
        if end.flags & END_INTERNAL_FAILURE != 0 {
            why.push("a write failed and recording stopped");
        }
        if end.flags & END_BUFFERS_LOST != 0 {
            why.push("threads were still recording at exit and the events they were storing were lost");
        }
        if end.flags & END_TRUNCATED != 0 && why.is_empty() {
            why.push("the shim stopped recording early");
        }
        if end.dropped > 0 {
            why.push("events were dropped (thread slots or buffers exhausted)");
        }
        if why.is_empty() {
            None
        } else {
            Some(why.join("; "))
        }
    }

    pub fn stack(&self, e: &RawEvent) -> &[u64] {
        self.ips.get(e.ips.clone()).unwrap_or(&[])
    }
}

/// Bounds on what one file may hold.
#[derive(Clone, Copy, Debug)]
pub struct ReadLimits {
    pub max_file_bytes: u64,
    pub max_events: usize,
    pub max_snapshots: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        // The shim stops at 1 GiB by default; a little more leaves room for a raised limit.
        ReadLimits { max_file_bytes: 4 << 30, max_events: 50_000_000, max_snapshots: 100_000 }
    }
}

#[derive(Debug, Error)]
pub enum AllocFileError {
    #[error("{path}: cannot read the allocation-site file: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {size} bytes is above the {limit}-byte limit for allocation-site files")]
    TooLarge { path: PathBuf, size: u64, limit: u64 },
    #[error("not a numascope allocation-site file (the first 8 bytes are {found:02x?}, expected \"NSALLOC\\0\")")]
    BadMagic { found: Vec<u8> },
    #[error("allocation-site file is {len} bytes, shorter than its {HEADER_LEN}-byte header")]
    ShortHeader { len: usize },
    #[error(
        "allocation-site file format version {found} is newer than this numascope reads (up to {VERSION}); use a numascope at least as new as the shim that wrote it"
    )]
    TooNew { found: u32 },
    #[error("allocation-site file header: {what}")]
    BadHeader { what: String },
    #[error("allocation-site file, record at byte {offset}: {what}")]
    BadRecord { offset: usize, what: String },
    #[error("allocation-site file has more than {limit} {what}; raise ReadLimits or record less")]
    TooMany { what: &'static str, limit: usize },
}

/// Reads and parses one file, refusing files above `limits.max_file_bytes` before reading. A
/// version 2 file is read block by block, so the unwritten room in its blocks is never held.
pub fn read_alloc_file(path: &Path, limits: &ReadLimits) -> Result<AllocFile, AllocFileError> {
    let io = |source| AllocFileError::Io { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > limits.max_file_bytes {
        return Err(AllocFileError::TooLarge { path: path.to_path_buf(), size: len, limit: limits.max_file_bytes });
    }
    parse_from(&mut FileSource { file, len }, limits).map_err(|e| match e {
        Failed::Io(source) => io(source),
        Failed::Format(e) => e,
    })
}

/// Parses a whole file held in memory.
pub fn parse_alloc_file(bytes: &[u8], limits: &ReadLimits) -> Result<AllocFile, AllocFileError> {
    parse_from(&mut SliceSource(bytes), limits).map_err(|e| match e {
        Failed::Io(e) => AllocFileError::BadHeader { what: e.to_string() },
        Failed::Format(e) => e,
    })
}

enum Failed {
    Io(std::io::Error),
    Format(AllocFileError),
}

impl From<AllocFileError> for Failed {
    fn from(e: AllocFileError) -> Self {
        Failed::Format(e)
    }
}

/// Where the bytes come from: memory or a file read piece by piece.
trait Source {
    fn len(&self) -> u64;
    /// Reads up to `n` bytes at `off` into `out` (replacing its content); fewer at the end.
    fn read_into(&mut self, off: u64, n: usize, out: &mut Vec<u8>) -> std::io::Result<()>;
}

struct SliceSource<'a>(&'a [u8]);

impl Source for SliceSource<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_into(&mut self, off: u64, n: usize, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.clear();
        let start = usize::try_from(off).unwrap_or(usize::MAX).min(self.0.len());
        let end = start.saturating_add(n).min(self.0.len());
        out.extend_from_slice(&self.0[start..end]);
        Ok(())
    }
}

struct FileSource {
    file: std::fs::File,
    len: u64,
}

impl Source for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_into(&mut self, off: u64, n: usize, out: &mut Vec<u8>) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        // Never more than the file holds, whatever `n` says.
        let n = n.min(self.len.saturating_sub(off) as usize);
        out.clear();
        out.resize(n, 0);
        let mut got = 0;
        while got < n {
            match self.file.read_at(&mut out[got..], off + got as u64) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        out.truncate(got);
        Ok(())
    }
}

struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cur<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let s = self.b.get(self.at..self.at.checked_add(N)?)?;
        self.at += N;
        s.try_into().ok()
    }
    fn u16(&mut self) -> Option<u16> {
        self.take::<2>().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take::<8>().map(u64::from_le_bytes)
    }
    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
}

fn parse_from(src: &mut dyn Source, limits: &ReadLimits) -> Result<AllocFile, Failed> {
    let mut buf = Vec::new();
    src.read_into(0, HEADER_LEN, &mut buf).map_err(Failed::Io)?;
    let bytes = &buf[..];
    let total = src.len();
    if bytes.len() < 8 || bytes[..8] != MAGIC {
        return Err(AllocFileError::BadMagic { found: bytes[..bytes.len().min(8)].to_vec() }.into());
    }
    if bytes.len() < HEADER_LEN {
        return Err(AllocFileError::ShortHeader { len: bytes.len() }.into());
    }
    let mut c = Cur { b: bytes, at: 8 };
    let short = || AllocFileError::ShortHeader { len: bytes.len() };
    let version = c.u32().ok_or_else(short)?;
    if version > VERSION {
        return Err(AllocFileError::TooNew { found: version }.into());
    }
    if version == 0 {
        return Err(AllocFileError::BadHeader { what: "version 0 is not a valid format version".into() }.into());
    }
    let header_len = c.u32().ok_or_else(short)? as usize;
    if header_len < HEADER_LEN || header_len as u64 > total || !header_len.is_multiple_of(8) {
        return Err(AllocFileError::BadHeader {
            what: format!("header length {header_len} is not a multiple of 8 between {HEADER_LEN} and the file size"),
        }
        .into());
    }
    let pid = c.u32().ok_or_else(short)?;
    let ppid = c.u32().ok_or_else(short)?;
    let min_bytes = c.u64().ok_or_else(short)?;
    let sample_bytes = c.u64().ok_or_else(short)?;
    let start_ns = c.u64().ok_or_else(short)?;
    let max_depth = c.u32().ok_or_else(short)?;
    let clock = c.u32().ok_or_else(short)?;
    let _flags = c.u32().ok_or_else(short)?;
    let block = c.u32().ok_or_else(short)?;
    if clock != CLOCK_MONOTONIC_ID {
        return Err(AllocFileError::BadHeader {
            what: format!("clock id {clock} is not {CLOCK_MONOTONIC_ID} (CLOCK_MONOTONIC)"),
        }
        .into());
    }
    if max_depth as usize > MAX_DEPTH {
        return Err(
            AllocFileError::BadHeader { what: format!("stack depth limit {max_depth} is above {MAX_DEPTH}") }.into()
        );
    }
    if version >= 2
        && (!block.is_power_of_two()
            || !(MIN_BLOCK_BYTES..=MAX_BLOCK_BYTES).contains(&block)
            || (block as usize) < header_len)
    {
        return Err(AllocFileError::BadHeader {
            what: format!(
                "block size {block} is not a power of two between {MIN_BLOCK_BYTES} and {MAX_BLOCK_BYTES} that holds the header"
            ),
        }
        .into());
    }
    let header = Header { version, pid, ppid, min_bytes, sample_bytes, start_ns, max_depth };
    let mut file = AllocFile {
        header,
        events: Vec::new(),
        ips: Vec::new(),
        snapshots: Vec::new(),
        end: None,
        cut_short: false,
        unknown_records: 0,
    };

    if version == 1 {
        let n = usize::try_from(total - header_len as u64).unwrap_or(usize::MAX);
        src.read_into(header_len as u64, n, &mut buf).map_err(Failed::Io)?;
        let whole = parse_records(&buf, header_len, false, limits, &mut file)?;
        file.cut_short = !whole;
        return Ok(file);
    }
    let block = block as u64;
    let mut off = block;
    while off < total {
        src.read_into(off, BLOCK_HEAD, &mut buf).map_err(Failed::Io)?;
        if buf.len() < BLOCK_HEAD {
            file.cut_short = true;
            break;
        }
        let bad = |what: String| AllocFileError::BadRecord { offset: off as usize, what };
        if buf.iter().all(|&b| b == 0) {
            // Reserved but never written (the process ended first).
            off += block;
            continue;
        }
        if buf[..4] != BLOCK_MAGIC {
            return Err(
                bad(format!("block at byte {off} does not start with \"NSBK\" (found {:02x?})", &buf[..4])).into()
            );
        }
        let used = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]) as u64;
        let span = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]) as u64;
        let max_span = MAX_SPAN_BYTES / block;
        if span == 0 || span > max_span {
            return Err(bad(format!("block spans {span} blocks, expected 1 to {max_span}")).into());
        }
        if used > span * block - BLOCK_HEAD as u64 || !used.is_multiple_of(8) {
            return Err(bad(format!(
                "block's used count {used} is not a multiple of 8 within its {} bytes",
                span * block - BLOCK_HEAD as u64
            ))
            .into());
        }
        let data = off + BLOCK_HEAD as u64;
        src.read_into(data, used as usize, &mut buf).map_err(Failed::Io)?;
        let complete = buf.len() as u64 == used;
        let whole = parse_records(&buf, data as usize, complete, limits, &mut file)?;
        if !complete || !whole {
            file.cut_short = true;
            break;
        }
        off += span * block;
    }
    Ok(file)
}

/// Parses the records in `b` (which starts at file offset `base`). Returns false when `b` ends
/// inside a record; with `exact` (a version 2 block's complete bytes) that is an error instead.
fn parse_records(
    b: &[u8],
    base: usize,
    exact: bool,
    limits: &ReadLimits,
    file: &mut AllocFile,
) -> Result<bool, AllocFileError> {
    let mut at = 0;
    while at < b.len() {
        let rest = &b[at..];
        let offset = base + at;
        let bad = |what: String| AllocFileError::BadRecord { offset, what };
        let Some(head) = rest.get(..8) else {
            return if exact { Err(bad("record head runs past its block's complete bytes".into())) } else { Ok(false) };
        };
        let kind = u16::from_le_bytes([head[0], head[1]]);
        let flags = u16::from_le_bytes([head[2], head[3]]);
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        if !len.is_multiple_of(8) {
            return Err(bad(format!("payload length {len} is not a multiple of 8")));
        }
        if len > MAX_RECORD_BYTES {
            return Err(bad(format!("payload length {len} is above {MAX_RECORD_BYTES}")));
        }
        let Some(payload) = rest.get(8..8 + len) else {
            return if exact {
                Err(bad(format!("record of {len} bytes runs past its block's complete bytes")))
            } else {
                Ok(false)
            };
        };
        match kind {
            REC_EVENT => {
                if file.events.len() >= limits.max_events {
                    return Err(AllocFileError::TooMany { what: "events", limit: limits.max_events });
                }
                let e = parse_event(payload, flags, &mut file.ips).map_err(bad)?;
                file.events.push(e);
            }
            REC_MODULES => {
                if file.snapshots.len() >= limits.max_snapshots {
                    return Err(AllocFileError::TooMany { what: "module snapshots", limit: limits.max_snapshots });
                }
                file.snapshots.push(parse_modules(payload).map_err(bad)?);
            }
            REC_END => {
                let mut p = Cur { b: payload, at: 0 };
                let short = || bad(format!("end record of {len} bytes, expected {END_LEN}"));
                file.end = Some(EndRecord {
                    time_ns: p.u64().ok_or_else(short)?,
                    events: p.u64().ok_or_else(short)?,
                    dropped: p.u64().ok_or_else(short)?,
                    untracked: p.u64().ok_or_else(short)?,
                    flags: p.u32().ok_or_else(short)?,
                });
            }
            _ => file.unknown_records += 1,
        }
        at += 8 + len;
    }
    Ok(true)
}

fn parse_event(payload: &[u8], flags: u16, ips: &mut Vec<u64>) -> Result<RawEvent, String> {
    let mut p = Cur { b: payload, at: 0 };
    let short = || format!("event record of {} bytes is shorter than {EVENT_FIXED}", payload.len());
    let time_ns = p.u64().ok_or_else(short)?;
    let tid = p.u32().ok_or_else(short)?;
    let [code, _] = p.take::<2>().ok_or_else(short)?;
    let depth = p.u16().ok_or_else(short)? as usize;
    let address = p.u64().ok_or_else(short)?;
    let size = p.u64().ok_or_else(short)?;
    let old_address = p.u64().ok_or_else(short)?;
    let aux = p.u64().ok_or_else(short)?;
    let op = AllocOp::from_code(code).ok_or_else(|| format!("unknown operation code {code}"))?;
    if depth > MAX_DEPTH {
        return Err(format!("stack depth {depth} is above {MAX_DEPTH}"));
    }
    if payload.len() != EVENT_FIXED + 8 * depth {
        return Err(format!("event record of {} bytes does not hold its {depth} stack frames", payload.len()));
    }
    let start = ips.len();
    for _ in 0..depth {
        ips.push(p.u64().ok_or_else(short)?);
    }
    Ok(RawEvent {
        time_ns,
        tid,
        op,
        sampled: flags & EV_SAMPLED != 0,
        stack_truncated: flags & EV_STACK_TRUNCATED != 0,
        address,
        size,
        old_address,
        aux,
        ips: start..ips.len(),
    })
}

fn parse_modules(payload: &[u8]) -> Result<ModuleSnapshot, String> {
    let mut p = Cur { b: payload, at: 0 };
    let short = || format!("modules record of {} bytes is shorter than {MODULES_FIXED}", payload.len());
    let time_ns = p.u64().ok_or_else(short)?;
    let count = p.u32().ok_or_else(short)? as usize;
    let flags = p.u32().ok_or_else(short)?;
    // Each entry takes at least MODULE_ENTRY_FIXED bytes, so the payload bounds the count.
    if count > (payload.len() - MODULES_FIXED) / MODULE_ENTRY_FIXED {
        return Err(format!("modules record claims {count} modules in {} bytes", payload.len()));
    }
    let mut modules = Vec::with_capacity(count);
    for i in 0..count {
        let trunc = || format!("module {i} of {count} runs past the end of its record");
        let bias = p.u64().ok_or_else(trunc)?;
        let lo = p.u64().ok_or_else(trunc)?;
        let hi = p.u64().ok_or_else(trunc)?;
        let path_len = p.u16().ok_or_else(trunc)? as usize;
        let id_len = p.u16().ok_or_else(trunc)? as usize;
        let _ = p.u32().ok_or_else(trunc)?;
        if path_len > MAX_PATH_BYTES || id_len > MAX_BUILD_ID_BYTES {
            return Err(format!("module {i}: path of {path_len} or build id of {id_len} bytes is too long"));
        }
        if lo > hi {
            return Err(format!("module {i}: range {lo:#x}..{hi:#x} is reversed"));
        }
        let path = PathBuf::from(OsString::from_vec(p.bytes(path_len).ok_or_else(trunc)?.to_vec()));
        let build_id = p.bytes(id_len).ok_or_else(trunc)?.to_vec();
        let pad = (8 - p.at % 8) % 8;
        p.bytes(pad).ok_or_else(trunc)?;
        modules.push(RawModule { bias, lo, hi, path, build_id });
    }
    Ok(ModuleSnapshot { time_ns, list_truncated: flags & 1 != 0, modules })
}
