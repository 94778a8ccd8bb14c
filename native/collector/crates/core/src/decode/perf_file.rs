//! Bounds-checked reading of the perf.data container for `numascope import`.
//!
//! A perf.data file is untrusted input: every size, count and offset in it is checked against
//! the file's length and the limits below before anything is allocated or seeked.
//!
//! linux-perf-data 0.13.0 (the newest release) reads the header, the event attributes and the
//! feature sections for us, but it trusts the sizes it reads: `vec![0; size]` for every feature
//! section, `Vec::with_capacity(nr)` for EVENT_DESC event and id counts and header strings,
//! a division by the header's `attr_size` (zero is a panic), `attr_size + 16` (overflow),
//! `data.offset + data.size` (overflow); its record iterator resizes a buffer to an AUXTRACE
//! record's size and decompresses zstd records without a limit, buffering a whole round; and
//! linux-perf-event-reader asserts that an MMAP2 build-id length is at most 20. So:
//!
//! - [`check_file_layout`] (normal files) and [`check_pipe_metadata`] (pipe-mode files) walk
//!   exactly what the crate's `parse_file` / `parse_pipe` will read, the same way the crate
//!   reads it, and refuse the file with a [`FormatError`] unless every allocation the crate
//!   makes is bounded by the file's length and [`MAX_ATTRS`] / [`MAX_ATTR_SIZE`];
//! - [`walk_records`] reads the records itself (the crate's iterator is not used): framing,
//!   AUXTRACE skipping and zstd decompression, with the offset of every record for error
//!   messages, a decompression budget ([`decompression_budget`]) and guaranteed progress
//!   (a record smaller than its own 8-byte header is an error, never a loop).
//!
//! Little-endian files only (`PERFILE2`); the caller refuses the others by their magic.

use std::io::{Read, Seek, SeekFrom};

/// `sizeof(struct perf_file_header)`.
pub const HEADER_SIZE: u64 = 104;
/// `sizeof(struct perf_pipe_file_header)`.
pub const PIPE_HEADER_SIZE: u64 = 16;
/// `sizeof(struct perf_event_header)`.
pub const RECORD_HEADER_SIZE: u64 = 8;
/// PERF_ATTR_SIZE_VER0: the smallest `perf_event_attr`.
pub const ATTR_SIZE_VER0: u64 = 64;
/// Largest `perf_event_attr` accepted (the kernel's is 136 bytes in Linux 6.x; it refuses
/// attrs larger than a page).
pub const MAX_ATTR_SIZE: u64 = 4096;
/// Most event attributes accepted in one file (`perf record` rarely writes more than a few
/// dozen; every attr costs the crate a few hundred bytes up front).
pub const MAX_ATTRS: u64 = 4096;
/// Decompressed bytes always allowed for zstd-compressed records (`perf record -z`).
pub const DECOMPRESSED_FLOOR: u64 = 16 << 20;
/// Beyond the floor, compressed records may expand at most this many times (perf's zstd
/// ratio on sample data is typically 3 to 10, at most 14 on the real files in
/// shared/data/perfdata compressed whole; perf compresses smaller chunks, for less).
pub const MAX_DECOMPRESSION_RATIO: u64 = 32;

/// Feature bits (`HEADER_*` in tools/perf/util/header.h).
pub mod feature {
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const SIMPLEPERF_META_INFO: u32 = 129;

    /// perf's name for a feature bit, for error messages.
    pub fn name(bit: u32) -> &'static str {
        const NAMES: [&str; 32] = [
            "RESERVED",
            "TRACING_DATA",
            "BUILD_ID",
            "HOSTNAME",
            "OSRELEASE",
            "VERSION",
            "ARCH",
            "NRCPUS",
            "CPUDESC",
            "CPUID",
            "TOTAL_MEM",
            "CMDLINE",
            "EVENT_DESC",
            "CPU_TOPOLOGY",
            "NUMA_TOPOLOGY",
            "BRANCH_STACK",
            "PMU_MAPPINGS",
            "GROUP_DESC",
            "AUXTRACE",
            "STAT",
            "CACHE",
            "SAMPLE_TIME",
            "MEM_TOPOLOGY",
            "CLOCKID",
            "DIR_FORMAT",
            "BPF_PROG_INFO",
            "BPF_BTF",
            "COMPRESSED",
            "CPU_PMU_CAPS",
            "CLOCK_DATA",
            "HYBRID_TOPOLOGY",
            "PMU_CAPS",
        ];
        match bit {
            128 => "SIMPLEPERF_FILE",
            129 => "SIMPLEPERF_META_INFO",
            130 => "SIMPLEPERF_DEBUG_UNWIND",
            131 => "SIMPLEPERF_DEBUG_UNWIND_FILE",
            132 => "SIMPLEPERF_FILE2",
            b => NAMES.get(b as usize).copied().unwrap_or("unknown"),
        }
    }
}

/// Record types the walker handles itself (`PERF_RECORD_*`, tools/perf/util/event.h).
pub mod record_type {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const LOST_SAMPLES: u32 = 13;
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const FINISHED_ROUND: u32 = 68;
    /// PERF_RECORD_TIME_CONV: time_shift, time_mult, time_zero (u64 each, then optional fields):
    /// the kernel's conversion of TSC cycles to perf_clock ns.
    pub const TIME_CONV: u32 = 79;
    pub const AUXTRACE: u32 = 71;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const COMPRESSED2: u32 = 83;
}

/// What is wrong with a perf.data file (the caller adds the path).
#[derive(Debug)]
pub enum FormatError {
    /// The magic is not a perf.data magic.
    NotPerfData(String),
    /// Something extends past the end of the file or data section.
    Truncated(String),
    /// Values that no perf writes (sizes smaller than their header, sections larger than the
    /// file taken together, inconsistent attrs).
    Corrupt(String),
    /// A valid file of a kind the importer does not read.
    Unsupported {
        what: String,
        hint: String,
    },
    /// Valid perhaps, but beyond what the importer accepts.
    Limit {
        what: String,
        hint: String,
    },
    Io(std::io::Error),
}

impl From<std::io::Error> for FormatError {
    fn from(e: std::io::Error) -> Self {
        FormatError::Io(e)
    }
}

/// `21584 bytes`, `1.2 GB (1234567890 bytes)`.
pub fn fmt_bytes(n: u64) -> String {
    if n < 10_000 {
        return format!("{n} bytes");
    }
    let units = ["kB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = n as f64 / 1000.0;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < units.len() {
        v /= 1000.0;
        u += 1;
    }
    format!("{v:.1} {} ({n} bytes)", units[u])
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// Reads exactly `buf.len()` bytes at `offset` (the caller has checked the range).
fn read_at<R: Read + Seek>(r: &mut R, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
    r.seek(SeekFrom::Start(offset))?;
    r.read_exact(buf)
}

/// Reads `len` bytes at `offset`; `len` must have been checked against the file and a limit.
fn read_vec_at<R: Read + Seek>(r: &mut R, offset: u64, len: u64) -> Result<Vec<u8>, FormatError> {
    let n = usize::try_from(len).map_err(|_| FormatError::Corrupt(format!("{len} bytes do not fit in memory")))?;
    let mut v = vec![0; n];
    read_at(r, offset, &mut v)?;
    Ok(v)
}

/// perf header string (`struct perf_header_string`: u32 len incl. NUL padding + bytes) as
/// valid UTF-8: cut at the first NUL, invalid sequences and control characters replaced by
/// U+FFFD, at most `max` bytes (longer ones end in `…`).
pub fn clean_string(bytes: &[u8], max: usize) -> String {
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    let s = String::from_utf8_lossy(&bytes[..end]);
    let mut out = String::with_capacity(s.len().min(max));
    for c in s.chars() {
        let c = if c.is_control() { '\u{fffd}' } else { c };
        if out.len() + c.len_utf8() > max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

/// A byte cursor over one in-memory section, naming the section in its errors.
pub struct SectionCursor<'a> {
    b: &'a [u8],
    pos: usize,
    /// File offset of `b[0]` (for messages).
    base: u64,
    what: &'a str,
}

impl<'a> SectionCursor<'a> {
    pub fn new(b: &'a [u8], base: u64, what: &'a str) -> Self {
        Self { b, pos: 0, base, what }
    }
    pub fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    fn short(&self, field: &str, need: u64) -> FormatError {
        FormatError::Corrupt(format!(
            "{} at offset {}: {field} needs {need} bytes at byte {} of the section, but the section has {} bytes",
            self.what,
            self.base,
            self.pos,
            self.b.len()
        ))
    }
    pub fn take(&mut self, n: u64, field: &str) -> Result<&'a [u8], FormatError> {
        if n > self.remaining() as u64 {
            return Err(self.short(field, n));
        }
        let s = &self.b[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }
    pub fn u32(&mut self, field: &str) -> Result<u32, FormatError> {
        let s = self.take(4, field)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub fn u64(&mut self, field: &str) -> Result<u64, FormatError> {
        let s = self.take(8, field)?;
        Ok(u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
    }
    /// A perf header string, cleaned (see [`clean_string`]).
    pub fn string(&mut self, field: &str, max: usize) -> Result<String, FormatError> {
        let len = self.u32(field)? as u64;
        Ok(clean_string(self.take(len, field)?, max))
    }
}

/// Bytes linux-perf-event-reader's `PerfEventAttr::parse` consumes for an attr whose own size
/// field says `size`: the fields of the largest PERF_ATTR_SIZE_VERn not above `size`, and for
/// sizes above VER7 (128) the extra bytes too.
fn attr_parse_len(size: u64) -> u64 {
    const VERS: [u64; 8] = [64, 72, 80, 96, 104, 112, 120, 128];
    if size >= 128 {
        size
    } else {
        VERS.iter().rev().copied().find(|&v| v <= size).unwrap_or(ATTR_SIZE_VER0)
    }
}

/// Checks one attr whose entry is `stride` bytes (its own size field is at byte 4) and
/// returns how many bytes the crate's `parse_single_attr` consumes for it.
fn check_attr(attr: &[u8], stride: u64, what: &dyn Fn() -> String) -> Result<u64, FormatError> {
    let size =
        u32_at(attr, 4).ok_or_else(|| FormatError::Corrupt(format!("{}: too short for an attr", what())))? as u64;
    if size < ATTR_SIZE_VER0 {
        return Err(FormatError::Corrupt(format!(
            "{}: the perf_event_attr says it is {size} bytes; the smallest is {ATTR_SIZE_VER0}",
            what()
        )));
    }
    if size > stride {
        return Err(FormatError::Corrupt(format!(
            "{}: the perf_event_attr says it is {size} bytes, more than the {stride} bytes the file gives each attr",
            what()
        )));
    }
    Ok(if size < stride { stride } else { attr_parse_len(size) })
}

/// One event of an EVENT_DESC section, as far as the importer uses it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventDescEntry {
    /// The event name, cleaned (valid UTF-8).
    pub name: String,
    /// Its first event id (pipe mode matches attrs to names by it).
    pub first_id: Option<u64>,
}

/// Longest event name kept.
pub const MAX_NAME: usize = 1024;

/// Checks an EVENT_DESC feature section the way linux-perf-data parses it
/// (`u32 nr; u32 attr_size; { attr; u32 nr_ids; string name; u64 ids[nr_ids]; } [nr]`) and
/// returns the events. `base` is its file offset (for messages).
pub fn check_event_desc(b: &[u8], base: u64) -> Result<Vec<EventDescEntry>, FormatError> {
    let mut c = SectionCursor::new(b, base, "the EVENT_DESC feature section");
    let nr = c.u32("the event count")? as u64;
    if nr > MAX_ATTRS {
        return Err(FormatError::Limit {
            what: format!(
                "the EVENT_DESC feature section at offset {base} lists {nr} events; at most {MAX_ATTRS} are read"
            ),
            hint: "the count is most likely damaged: re-copy the file".into(),
        });
    }
    let attr_size = c.u32("the attr size")? as u64;
    if !(ATTR_SIZE_VER0..=MAX_ATTR_SIZE).contains(&attr_size) {
        return Err(FormatError::Corrupt(format!(
            "the EVENT_DESC feature section at offset {base} gives each perf_event_attr {attr_size} bytes; \
             expected {ATTR_SIZE_VER0} to {MAX_ATTR_SIZE}"
        )));
    }
    let min_entry = attr_size + 8;
    if nr.saturating_mul(min_entry) > c.remaining() as u64 {
        return Err(FormatError::Corrupt(format!(
            "the EVENT_DESC feature section at offset {base} lists {nr} events of at least {min_entry} bytes each \
             but holds only {} bytes after its count",
            c.remaining()
        )));
    }
    let mut out = Vec::with_capacity(nr as usize);
    for i in 0..nr {
        let at = c.position();
        let attr = b.get(at..).unwrap_or(&[]);
        let what = || format!("event {i} of the EVENT_DESC feature section (file offset {})", base + at as u64);
        let consumed = check_attr(attr, attr_size, &what)?;
        c.take(consumed, "the perf_event_attr")?;
        let nr_ids = c.u32("the id count")? as u64;
        let name = c.string("the event name", MAX_NAME)?;
        if nr_ids.saturating_mul(8) > c.remaining() as u64 {
            return Err(FormatError::Corrupt(format!(
                "{}: {nr_ids} event ids need {} but only {} bytes of the section remain",
                what(),
                fmt_bytes(nr_ids.saturating_mul(8)),
                c.remaining()
            )));
        }
        let first_id = if nr_ids > 0 { Some(c.u64("an event id")?) } else { None };
        c.take(nr_ids.saturating_sub(1) * 8, "the event ids")?;
        out.push(EventDescEntry { name, first_id });
    }
    Ok(out)
}

/// Checks a sequence of attrs read by the crate from `offset`: `count` entries of
/// `stride` bytes each (attr section), or of `stride` + a 16-byte id section
/// (`with_ids`: the old event_types section). Id sections must lie in the file.
fn check_attr_sequence<R: Read + Seek>(
    r: &mut R,
    file_len: u64,
    name: &str,
    offset: u64,
    size: u64,
    stride: u64,
    with_ids: bool,
) -> Result<u64, FormatError> {
    let entry = stride + if with_ids { 16 } else { 0 };
    let count = size / entry;
    if count > MAX_ATTRS {
        return Err(FormatError::Limit {
            what: format!(
                "the {name} section at offset {offset} holds {count} event attributes; at most {MAX_ATTRS} are read"
            ),
            hint: "its size or the header's attr_size is most likely damaged: re-copy the file".into(),
        });
    }
    // The crate reads sequentially and may consume less than `stride` for an attr whose size
    // field is not a PERF_ATTR_SIZE_VERn; it never reads more than count * entry bytes.
    let bytes = read_vec_at(r, offset, count * entry)?;
    let mut pos = 0u64;
    let mut ids_total = 0u64;
    for i in 0..count {
        let at = pos;
        let what = || format!("attr {i} of the {name} section (file offset {})", offset + at);
        let attr = bytes.get(at as usize..).unwrap_or(&[]);
        pos += check_attr(attr, stride, &what)?;
        if with_ids {
            let (Some(ids_off), Some(ids_size)) = (u64_at(&bytes, pos as usize), u64_at(&bytes, pos as usize + 8))
            else {
                return Err(FormatError::Corrupt(format!("{}: its id list entry runs past the section", what())));
            };
            pos += 16;
            if ids_off.checked_add(ids_size).is_none_or(|end| end > file_len) {
                return Err(FormatError::Truncated(format!(
                    "{}: its id list claims {} at offset {ids_off} but the file has {}",
                    what(),
                    fmt_bytes(ids_size),
                    fmt_bytes(file_len)
                )));
            }
            ids_total = ids_total.saturating_add(ids_size);
            if ids_total > file_len {
                return Err(FormatError::Corrupt(format!(
                    "the id lists of the {name} section total {}, more than the whole file ({})",
                    fmt_bytes(ids_total),
                    fmt_bytes(file_len)
                )));
            }
        }
    }
    Ok(count)
}

/// A section of the file: where and how large.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    pub offset: u64,
    pub size: u64,
}

impl Section {
    fn at(h: &[u8], at: usize) -> Section {
        Section { offset: u64_at(h, at).unwrap_or(0), size: u64_at(h, at + 8).unwrap_or(0) }
    }
    /// The section lies in a file of `len` bytes.
    fn check(&self, name: &str, len: u64) -> Result<(), FormatError> {
        match self.offset.checked_add(self.size) {
            Some(end) if end <= len => Ok(()),
            _ => Err(FormatError::Truncated(format!(
                "the {name} claims {} at offset {} but the file has {}",
                fmt_bytes(self.size),
                self.offset,
                fmt_bytes(len)
            ))),
        }
    }
}

/// What [`check_file_layout`] / [`check_pipe_metadata`] learnt about the file.
#[derive(Clone, Debug, Default)]
pub struct FileLayout {
    pub pipe: bool,
    /// Where the records are: the data section, or everything after the pipe header.
    pub records: Section,
    /// Feature sections present (bit, section), in file order.
    pub features: Vec<(u32, Section)>,
    /// EVENT_DESC events, when the file has that feature (names for the attrs).
    pub event_desc: Option<Vec<EventDescEntry>>,
    /// Number of attrs the crate will return.
    pub attr_count: u64,
}

/// Checks the magic (first 8 bytes); `Ok(())` for little-endian PERFILE2.
pub fn check_magic(h: &[u8]) -> Result<(), FormatError> {
    let m = h.get(..8).ok_or_else(|| FormatError::NotPerfData(format!("the file has only {} bytes", h.len())))?;
    match m {
        b"PERFILE2" => Ok(()),
        b"2ELIFREP" => Err(FormatError::Unsupported {
            what: "big-endian perf.data".into(),
            hint: "convert it on a big-endian machine with `perf script`, or record on little-endian".into(),
        }),
        m if m.starts_with(b"PERFFILE") => Err(FormatError::Unsupported {
            what: "perf.data version 1 (PERFFILE)".into(),
            hint: "re-record with perf 2.6.32 or later".into(),
        }),
        m => Err(FormatError::NotPerfData(format!("it starts with {:?}", clean_string(m, 16)))),
    }
}

/// Checks a normal (seekable) perf.data file: header, sections, feature table, feature
/// sections and the attrs the crate will read. `len` is the file's length.
pub fn check_file_layout<R: Read + Seek>(r: &mut R, len: u64) -> Result<FileLayout, FormatError> {
    let mut h = [0u8; HEADER_SIZE as usize];
    let n = (len.min(HEADER_SIZE)) as usize;
    read_at(r, 0, &mut h[..n])?;
    check_magic(&h[..n])?;
    if n < 16 {
        return Err(FormatError::Truncated(format!("the file has only {n} bytes, too few for a perf.data header")));
    }
    let header_size = u64_at(&h, 8).unwrap_or(0);
    if header_size == PIPE_HEADER_SIZE {
        return check_pipe_metadata(r, len);
    }
    if len < HEADER_SIZE {
        return Err(FormatError::Truncated(format!(
            "the perf.data header needs {HEADER_SIZE} bytes but the file has {len}"
        )));
    }
    if header_size == 72 {
        return Err(FormatError::Unsupported {
            what: "a perf.data header of 72 bytes, without feature bits (perf before Linux 2.6.37)".into(),
            hint: "re-record with a newer perf".into(),
        });
    }
    if header_size != HEADER_SIZE {
        // perf itself refuses any other size (perf_file_header__read).
        return Err(FormatError::Corrupt(format!(
            "the header says it is {header_size} bytes; a perf.data header is {HEADER_SIZE} bytes \
             (or {PIPE_HEADER_SIZE} in a pipe-mode file)"
        )));
    }
    let attr_size = u64_at(&h, 16).unwrap_or(0);
    let attrs = Section::at(&h, 24);
    let data = Section::at(&h, 40);
    let event_types = Section::at(&h, 56);
    data.check("data section", len)?;
    // Feature table: one (offset, size) per set bit, right after the data section.
    let mut bits = Vec::new();
    for word in 0..4 {
        let w = u64_at(&h, 72 + word * 8).unwrap_or(0);
        for b in 0..64 {
            if w >> b & 1 == 1 {
                bits.push((word * 64 + b) as u32);
            }
        }
    }
    let table = Section { offset: data.offset + data.size, size: bits.len() as u64 * 16 };
    table.check(&format!("feature-section table ({} entries, after the data section)", bits.len()), len)?;
    let mut raw = vec![0u8; table.size as usize];
    read_at(r, table.offset, &mut raw)?;
    let mut features = Vec::with_capacity(bits.len());
    let mut total = 0u64;
    for (i, &bit) in bits.iter().enumerate() {
        let s = Section::at(&raw, i * 16);
        s.check(&format!("feature section {} (bit {bit})", feature::name(bit)), len)?;
        total = total.saturating_add(s.size);
        if total > len {
            return Err(FormatError::Corrupt(format!(
                "the feature sections up to {} (bit {bit}) total {}, more than the whole file ({}): \
                 the feature-section table at offset {} is damaged",
                feature::name(bit),
                fmt_bytes(total),
                fmt_bytes(len),
                table.offset
            )));
        }
        features.push((bit, s));
    }
    let section_of = |bit: u32| features.iter().find(|(b, _)| *b == bit).map(|(_, s)| *s);

    // The attrs: the same precedence as linux-perf-data's parse_file.
    let (event_desc, attr_count) = if let Some(s) = section_of(feature::EVENT_DESC) {
        let b = read_vec_at(r, s.offset, s.size)?;
        let ev = check_event_desc(&b, s.offset)?;
        let n = ev.len() as u64;
        (Some(ev), n)
    } else if event_types.size != 0 {
        event_types.check("event_types section", len)?;
        check_stride(attr_size, 0)?;
        (None, check_attr_sequence(r, len, "event_types", event_types.offset, event_types.size, attr_size, true)?)
    } else if section_of(feature::SIMPLEPERF_META_INFO).is_some() {
        return Err(FormatError::Unsupported {
            what: "an Android simpleperf recording".into(),
            hint: "record with Linux perf (`perf mem record`, `perf c2c record` or `perf record -e ibs_op//`)".into(),
        });
    } else {
        attrs.check("attr section", len)?;
        check_stride(attr_size, 16)?;
        (None, check_attr_sequence(r, len, "attr", attrs.offset, attrs.size, attr_size, false)?)
    };
    if attr_count == 0 {
        return Err(FormatError::Corrupt(
            "the file describes no events (its attr section and EVENT_DESC feature are empty)".into(),
        ));
    }
    Ok(FileLayout { pipe: false, records: data, features, event_desc, attr_count })
}

/// The header's attr_size: a perf_event_attr (+ `extra` bytes of id section) of sane size.
fn check_stride(attr_size: u64, extra: u64) -> Result<(), FormatError> {
    if attr_size < ATTR_SIZE_VER0 || attr_size > MAX_ATTR_SIZE + extra {
        return Err(FormatError::Corrupt(format!(
            "the header's attr_size is {attr_size}; expected {ATTR_SIZE_VER0} to {} bytes per attr",
            MAX_ATTR_SIZE + extra
        )));
    }
    Ok(())
}

/// Checks the metadata records at the start of a pipe-mode file (what the crate's
/// `parse_pipe` reads: HEADER_ATTR and HEADER_FEATURE records up to the first other record).
pub fn check_pipe_metadata<R: Read + Seek>(r: &mut R, len: u64) -> Result<FileLayout, FormatError> {
    let mut pos = PIPE_HEADER_SIZE;
    let mut attrs = 0u64;
    let mut event_desc = None;
    let mut hdr = [0u8; 8];
    let mut body = Vec::new();
    while len - pos >= RECORD_HEADER_SIZE {
        read_at(r, pos, &mut hdr)?;
        let type_ = u32_at(&hdr, 0).unwrap_or(0);
        let size = u16_at(&hdr, 6).unwrap_or(0) as u64;
        // The crate also reads the first record after the metadata: check it too.
        if size < RECORD_HEADER_SIZE {
            return Err(FormatError::Corrupt(format!(
                "record at offset {pos} (type {type_}) says its size is {size}, less than its own 8-byte header"
            )));
        }
        if size > len - pos {
            return Err(FormatError::Truncated(format!(
                "record at offset {pos} (type {type_}) is {size} bytes but the file ends {} bytes later",
                len - pos
            )));
        }
        if type_ != record_type::HEADER_ATTR && type_ != record_type::HEADER_FEATURE {
            break;
        }
        body.resize((size - RECORD_HEADER_SIZE) as usize, 0);
        r.read_exact(&mut body)?;
        if type_ == record_type::HEADER_ATTR {
            // perf_event_attr (its own size) + u64 ids, as HeaderAttr::parse reads it.
            let declared = u32_at(&body, 4).unwrap_or(0) as u64;
            let consumed = attr_parse_len(declared);
            if declared < ATTR_SIZE_VER0
                || consumed > body.len() as u64
                || !(body.len() as u64 - consumed).is_multiple_of(8)
            {
                return Err(FormatError::Corrupt(format!(
                    "HEADER_ATTR record at offset {pos}: a {declared}-byte perf_event_attr and a list of u64 ids \
                     do not make up its {}-byte body",
                    body.len()
                )));
            }
            attrs += 1;
            if attrs > MAX_ATTRS {
                return Err(FormatError::Limit {
                    what: format!("more than {MAX_ATTRS} HEADER_ATTR records"),
                    hint: "the stream is most likely damaged: record it again".into(),
                });
            }
        } else if u64_at(&body, 0) == Some(feature::EVENT_DESC as u64) {
            event_desc = Some(check_event_desc(&body[8..], pos + 16)?);
        }
        pos += size;
    }
    if attrs == 0 {
        return Err(FormatError::Corrupt("the pipe-mode stream starts with no HEADER_ATTR record".into()));
    }
    Ok(FileLayout {
        pipe: true,
        records: Section { offset: PIPE_HEADER_SIZE, size: len - PIPE_HEADER_SIZE },
        features: Vec::new(),
        event_desc,
        attr_count: attrs,
    })
}

/// One record as the walker hands it to its visitor.
#[derive(Clone, Copy, Debug)]
pub struct RawRecord<'a> {
    /// File offset of the record, or of the COMPRESSED record it was decompressed from.
    pub offset: u64,
    /// Set for records decompressed from a COMPRESSED record: their byte position in the
    /// decompressed stream.
    pub decompressed_at: Option<u64>,
    pub type_: u32,
    pub misc: u16,
    /// The bytes after the 8-byte header.
    pub body: &'a [u8],
}

impl RawRecord<'_> {
    /// "record at offset N" / "record at byte M of the data decompressed from offset N".
    pub fn place(&self) -> String {
        match self.decompressed_at {
            None => format!("offset {}", self.offset),
            Some(d) => {
                format!("byte {d} of the zstd data decompressed from the COMPRESSED record at offset {}", self.offset)
            }
        }
    }
}

/// What the walk saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub records: u64,
    pub compressed_bytes: u64,
    pub decompressed_bytes: u64,
    /// Pipe mode only: the stream ends inside a record (offset of that record, bytes left).
    /// perf reports "unexpected end of event stream" and keeps what it read; so do we.
    pub cut_at: Option<(u64, u64)>,
}

/// Decompressed bytes allowed after `compressed` bytes of zstd input.
pub fn decompression_budget(compressed: u64) -> u64 {
    DECOMPRESSED_FLOOR.saturating_add(compressed.saturating_mul(MAX_DECOMPRESSION_RATIO))
}

struct Zstd {
    dctx: zstd_safe::DCtx<'static>,
    out: Vec<u8>,
    /// Decompressed bytes not yet forming a whole record.
    pending: Vec<u8>,
    /// Position in the decompressed stream of `pending[0]`.
    pending_at: u64,
}

/// Reads the records between `records.offset` and its end, calling `visit` for each one in
/// file order (records inside COMPRESSED records in their decompressed order). `pipe`: the
/// stream may hold HEADER_TRACING_DATA records followed by their data.
pub fn walk_records<R: Read + Seek>(
    r: &mut R,
    records: Section,
    pipe: bool,
    mut visit: impl FnMut(&RawRecord) -> Result<(), FormatError>,
) -> Result<WalkStats, FormatError> {
    let end = records.offset.checked_add(records.size).ok_or_else(|| {
        FormatError::Corrupt(format!("the data section at offset {} has an impossible size", records.offset))
    })?;
    let mut stats = WalkStats::default();
    let mut pos = records.offset;
    r.seek(SeekFrom::Start(pos))?;
    let mut hdr = [0u8; 8];
    let mut body: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut zstd: Option<Zstd> = None;
    while pos < end {
        if end - pos < RECORD_HEADER_SIZE {
            if pipe {
                stats.cut_at = Some((pos, end - pos));
                break;
            }
            return Err(FormatError::Truncated(format!(
                "the data section ends with {} bytes at offset {pos}, too few for a record header (8 bytes)",
                end - pos
            )));
        }
        r.read_exact(&mut hdr)?;
        let type_ = u32_at(&hdr, 0).unwrap_or(0);
        let misc = u16_at(&hdr, 4).unwrap_or(0);
        let size = u16_at(&hdr, 6).unwrap_or(0) as u64;
        if size < RECORD_HEADER_SIZE {
            return Err(FormatError::Corrupt(format!(
                "record at offset {pos} (type {type_}) says its size is {size}, less than its own 8-byte header \
                 (a record must advance the reader)"
            )));
        }
        if size > end - pos {
            if pipe {
                stats.cut_at = Some((pos, end - pos));
                break;
            }
            return Err(FormatError::Truncated(format!(
                "record at offset {pos} (type {type_}) is {size} bytes but the data section ends {} bytes later, at offset {end}",
                end - pos
            )));
        }
        body.resize((size - RECORD_HEADER_SIZE) as usize, 0);
        r.read_exact(&mut body)?;
        stats.records += 1;
        let mut next = pos + size;
        // Payload that follows some records without being counted in their size.
        let trailing = match type_ {
            record_type::AUXTRACE => Some((u64_at(&body, 0), "AUXTRACE", "trace data")),
            record_type::HEADER_TRACING_DATA if pipe => {
                Some((u32_at(&body, 0).map(|s| (s as u64).next_multiple_of(8)), "HEADER_TRACING_DATA", "tracing data"))
            }
            _ => None,
        };
        if let Some((extra, name, what)) = trailing {
            let extra = extra.ok_or_else(|| {
                FormatError::Corrupt(format!(
                    "{name} record at offset {pos} is {size} bytes, too short for its size field"
                ))
            })?;
            if extra > end - next {
                return Err(FormatError::Truncated(format!(
                    "{name} record at offset {pos} announces {} of {what} but only {} remain in the data section",
                    fmt_bytes(extra),
                    fmt_bytes(end - next)
                )));
            }
            next += extra;
            r.seek(SeekFrom::Start(next))?;
            pos = next;
            continue;
        }
        match type_ {
            record_type::COMPRESSED | record_type::COMPRESSED2 => {
                let data: &[u8] = if type_ == record_type::COMPRESSED {
                    &body
                } else {
                    let ds = u64_at(&body, 0).ok_or_else(|| {
                        FormatError::Corrupt(format!(
                            "COMPRESSED2 record at offset {pos} is too short for its data size"
                        ))
                    })?;
                    if ds > body.len() as u64 - 8 {
                        return Err(FormatError::Corrupt(format!(
                            "COMPRESSED2 record at offset {pos} says it holds {ds} bytes of zstd data but its body has {}",
                            body.len() - 8
                        )));
                    }
                    &body[8..8 + ds as usize]
                };
                let z = zstd.get_or_insert_with(|| Zstd {
                    dctx: zstd_safe::DCtx::create(),
                    out: vec![0; 1 << 20],
                    pending: Vec::new(),
                    pending_at: 0,
                });
                decompress_record(z, data, pos, &mut stats, &mut visit)?;
            }
            _ => visit(&RawRecord { offset: pos, decompressed_at: None, type_, misc, body: &body })?,
        }
        pos = next;
    }
    if let Some(z) = &zstd {
        if !z.pending.is_empty() {
            return Err(FormatError::Truncated(format!(
                "the compressed records end in the middle of a record ({} bytes of it at byte {} of the decompressed data)",
                z.pending.len(),
                z.pending_at
            )));
        }
    }
    Ok(stats)
}

fn decompress_record(
    z: &mut Zstd,
    data: &[u8],
    offset: u64,
    stats: &mut WalkStats,
    visit: &mut impl FnMut(&RawRecord) -> Result<(), FormatError>,
) -> Result<(), FormatError> {
    use zstd_safe::{InBuffer, OutBuffer};
    stats.compressed_bytes = stats.compressed_bytes.saturating_add(data.len() as u64);
    let budget = decompression_budget(stats.compressed_bytes);
    let mut input = InBuffer::around(data);
    loop {
        let in_before = input.pos();
        let mut out = OutBuffer::around(&mut z.out[..]);
        z.dctx.decompress_stream(&mut out, &mut input).map_err(|code| {
            FormatError::Corrupt(format!(
                "the zstd data of the COMPRESSED record at offset {offset} does not decompress: {}",
                zstd_safe::get_error_name(code)
            ))
        })?;
        let n = out.pos();
        stats.decompressed_bytes = stats.decompressed_bytes.saturating_add(n as u64);
        if stats.decompressed_bytes > budget {
            return Err(FormatError::Limit {
                what: format!(
                    "the compressed records up to offset {offset} expand to more than {} \
                     ({MAX_DECOMPRESSION_RATIO} × their {} of zstd data + {})",
                    fmt_bytes(budget),
                    fmt_bytes(stats.compressed_bytes),
                    fmt_bytes(DECOMPRESSED_FLOOR)
                ),
                hint: "this is a decompression bomb or a damaged file; a genuine recording can be decompressed \
                       first with `perf inject -i FILE -o OUT` and OUT imported"
                    .into(),
            });
        }
        z.pending.extend_from_slice(&z.out[..n]);
        // Hand out every whole record.
        let mut p = 0usize;
        while z.pending.len() - p >= RECORD_HEADER_SIZE as usize {
            let type_ = u32_at(&z.pending, p).unwrap_or(0);
            let misc = u16_at(&z.pending, p + 4).unwrap_or(0);
            let size = u16_at(&z.pending, p + 6).unwrap_or(0) as usize;
            let at = z.pending_at + p as u64;
            if size < RECORD_HEADER_SIZE as usize {
                return Err(FormatError::Corrupt(format!(
                    "record at byte {at} of the zstd data decompressed from the COMPRESSED record at offset {offset} \
                     (type {type_}) says its size is {size}, less than its own 8-byte header"
                )));
            }
            if z.pending.len() - p < size {
                break;
            }
            stats.records += 1;
            visit(&RawRecord { offset, decompressed_at: Some(at), type_, misc, body: &z.pending[p + 8..p + size] })?;
            p += size;
        }
        z.pending.drain(..p);
        z.pending_at += p as u64;
        if n < z.out.len() && input.pos() == data.len() {
            return Ok(());
        }
        if n == 0 && input.pos() == in_before {
            return Err(FormatError::Corrupt(format!(
                "the zstd data of the COMPRESSED record at offset {offset} stops making progress at byte {}",
                input.pos()
            )));
        }
    }
}

// Fixture builders (tests and the fuzz harness).

/// Builds a copy of an uncompressed perf.data file whose data section is zstd-compressed into
/// PERF_RECORD_COMPRESSED records (one zstd frame per record, each from whole records of at
/// most `chunk` bytes, at most 16 KiB), as `perf record -z` writes them: header.size = 8 +
/// compressed size, unpadded. For tests and the fuzz harness; the feature sections follow the
/// new data section.
pub fn compress_data_section(file: &[u8], chunk: usize) -> Option<Vec<u8>> {
    let chunk = chunk.clamp(8, 16 * 1024);
    let data = Section::at(file, 40);
    let start = usize::try_from(data.offset).ok()?;
    let end = start.checked_add(usize::try_from(data.size).ok()?)?;
    let records = file.get(start..end)?;
    let mut cctx = zstd_safe::CCtx::create();
    let mut out_data = Vec::new();
    let mut p = 0;
    while p < records.len() {
        let mut q = p;
        while q < records.len() {
            let size = u16_at(records, q + 6)? as usize;
            if size < 8 || (q - p + size > chunk && q > p) {
                break;
            }
            q += size;
        }
        if q == p || q > records.len() {
            return None;
        }
        let mut buf = vec![0u8; zstd_safe::compress_bound(q - p)];
        let n = cctx.compress(&mut buf[..], &records[p..q], 1).ok()?;
        let size = u16::try_from(n + 8).ok()?;
        out_data.extend_from_slice(&record_type::COMPRESSED.to_le_bytes());
        out_data.extend_from_slice(&0u16.to_le_bytes());
        out_data.extend_from_slice(&size.to_le_bytes());
        out_data.extend_from_slice(&buf[..n]);
        p = q;
    }
    Some(replace_data_section(file, &out_data))
}

/// A copy of a perf.data file keeping only the first `max_records` records of its data section
/// (for tests and the fuzz harness: smaller inputs that are still complete files).
pub fn cut_data_section(file: &[u8], max_records: usize) -> Option<Vec<u8>> {
    let data = Section::at(file, 40);
    let start = usize::try_from(data.offset).ok()?;
    let end = start.checked_add(usize::try_from(data.size).ok()?)?;
    let records = file.get(start..end)?;
    let mut p = 0;
    for _ in 0..max_records {
        if p >= records.len() {
            break;
        }
        let size = u16_at(records, p + 6)? as usize;
        if size < 8 || p + size > records.len() {
            return None;
        }
        p += size;
    }
    Some(replace_data_section(file, &records[..p]))
}

/// `file` (a well-formed perf.data file) with its data section replaced by `new_data` and the
/// feature-section table and sections moved after it (for tests and the fuzz harness).
pub fn replace_data_section(file: &[u8], new_data: &[u8]) -> Vec<u8> {
    let data = Section::at(file, 40);
    let start = data.offset as usize;
    let old_end = start + data.size as usize;
    let mut out = file[..start].to_vec();
    out.extend_from_slice(new_data);
    let shift = new_data.len() as i64 - data.size as i64;
    out.extend_from_slice(&file[old_end..]);
    out[48..56].copy_from_slice(&(new_data.len() as u64).to_le_bytes());
    // Feature table entries: offsets after the old data section move by `shift`.
    let nbits: u32 = (0..4).map(|w| u64_at(file, 72 + w * 8).unwrap_or(0).count_ones()).sum();
    let table = start + new_data.len();
    for i in 0..nbits as usize {
        let at = table + i * 16;
        if let Some(off) = u64_at(&out, at) {
            if off >= old_end as u64 {
                out[at..at + 8].copy_from_slice(&((off as i64 + shift) as u64).to_le_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(fmt_bytes(21_584), "21.6 kB (21584 bytes)");
        assert_eq!(fmt_bytes(512), "512 bytes");
        assert_eq!(fmt_bytes(u64::MAX), "18.4 EB (18446744073709551615 bytes)");
    }

    #[test]
    fn strings_are_cut_cleaned_and_bounded() {
        assert_eq!(clean_string(b"server3\0\0garbage", 64), "server3");
        assert_eq!(clean_string(b"a\xffb\x1bc", 64), "a\u{fffd}b\u{fffd}c");
        assert_eq!(clean_string("ééé".as_bytes(), 4), "éé…");
    }

    #[test]
    fn attr_consumption_follows_the_reader() {
        assert_eq!(attr_parse_len(64), 64);
        assert_eq!(attr_parse_len(100), 96);
        assert_eq!(attr_parse_len(136), 136);
        let mut attr = vec![0u8; 136];
        attr[4..8].copy_from_slice(&136u32.to_le_bytes());
        let what = || "attr".to_string();
        assert_eq!(check_attr(&attr, 152, &what).unwrap(), 152);
        assert_eq!(check_attr(&attr, 136, &what).unwrap(), 136);
        assert!(matches!(check_attr(&attr, 128, &what), Err(FormatError::Corrupt(_))));
        attr[4..8].copy_from_slice(&8u32.to_le_bytes());
        assert!(matches!(check_attr(&attr, 128, &what), Err(FormatError::Corrupt(_))));
    }

    #[test]
    fn event_desc_counts_are_checked_against_the_section() {
        let mut b = Vec::new();
        b.extend_from_slice(&2u32.to_le_bytes()); // two events
        b.extend_from_slice(&64u32.to_le_bytes());
        let mut attr = vec![0u8; 64];
        attr[4..8].copy_from_slice(&64u32.to_le_bytes());
        b.extend_from_slice(&attr);
        b.extend_from_slice(&1u32.to_le_bytes()); // one id
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(b"cycles\0\0");
        b.extend_from_slice(&7u64.to_le_bytes());
        // only one event present: the count says two
        assert!(matches!(check_event_desc(&b, 0), Err(FormatError::Corrupt(_))));
        b[0..4].copy_from_slice(&1u32.to_le_bytes());
        let ev = check_event_desc(&b, 0).unwrap();
        assert_eq!(ev, vec![EventDescEntry { name: "cycles".into(), first_id: Some(7) }]);
        b[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(check_event_desc(&b, 0), Err(FormatError::Limit { .. })));
    }

    #[test]
    fn records_smaller_than_their_header_stop_the_walk() {
        let mut data = vec![0u8; 24];
        data[6] = 8; // one 8-byte record
        data[8 + 6] = 0; // then a zero-size one
        let mut r = std::io::Cursor::new(data);
        let mut seen = 0;
        let e = walk_records(&mut r, Section { offset: 0, size: 24 }, false, |_| {
            seen += 1;
            Ok(())
        });
        assert!(matches!(e, Err(FormatError::Corrupt(m)) if m.contains("offset 8")));
        assert_eq!(seen, 1);
    }

    #[test]
    fn the_decompression_budget_grows_with_the_input() {
        assert_eq!(decompression_budget(0), DECOMPRESSED_FLOOR);
        assert_eq!(decompression_budget(1 << 20), DECOMPRESSED_FLOOR + MAX_DECOMPRESSION_RATIO * (1 << 20));
        assert_eq!(decompression_budget(u64::MAX), u64::MAX);
    }
}
