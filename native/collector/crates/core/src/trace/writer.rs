//! Writes a [`TraceData`] as a `.numascope` file: a ZIP holding `manifest.json` (deflated) and
//! one Arrow IPC file per table (stored, 64-byte aligned; Arrow body compression ZSTD).
//!
//! Files are created safely (docs/robustness.md): a trace is written to a temporary file made
//! exclusively in the output's directory under a random name (`O_CREAT|O_EXCL|O_NOFOLLOW`,
//! mode 0600 when running as root), synced, then renamed over the output, so a planted name or
//! link is never followed and an existing trace is replaced only by a complete new one.
//! [`check_output`] finds an unwritable output before a recording starts, and
//! [`write_trace_or_keep`] keeps a recording whose output cannot be written in a private
//! fallback file. The same helpers ([`TempFile`], [`private_dir`]) write plans, rollback
//! records and audit entries.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, UInt16Array,
    UInt32Array, UInt64Array,
};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_ipc::CompressionType;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::columns::{dict16, dict8};
use super::limits::{check_trace, MAX_ENTRY_BYTES, MAX_MANIFEST_BYTES, MAX_TOTAL_BYTES};
use super::model::*;
use super::schema::table_schema;
use super::TraceError;

/// Rows per Arrow record batch.
const BATCH_ROWS: usize = 65_536;

/// zstd level of the Arrow body compression (docs/trace-format.md, "Size on disk": level 1 and 3
/// give the same size at this batch size; 1 compresses faster).
const ZSTD_LEVEL: i32 = 1;

/// Arrow IPC options of every table: body compression ZSTD (version 4 files written before it are
/// uncompressed; readers take both).
fn ipc_options() -> Result<IpcWriteOptions, TraceError> {
    Ok(IpcWriteOptions::default()
        .try_with_compression(Some(CompressionType::ZSTD))?
        .try_with_compression_level(Some(ZSTD_LEVEL))?)
}

fn check_len(table: &str, columns: &[(&str, usize)]) -> Result<usize, TraceError> {
    let n = columns[0].1;
    for (name, len) in columns {
        if *len != n {
            return Err(TraceError::Invalid(format!(
                "{table}: column {name} has {len} rows but {} has {n}",
                columns[0].0
            )));
        }
    }
    Ok(n)
}

/// Builds the Arrow columns of one table, checking that all columns have the same length.
pub fn table_columns(trace: &TraceData, table: &str) -> Result<Vec<ArrayRef>, TraceError> {
    let cols: Vec<ArrayRef> = match table {
        "samples" => {
            let s = &trace.samples;
            check_len(
                table,
                &[
                    ("time_us", s.time_us.len()),
                    ("thread", s.thread.len()),
                    ("cpu", s.cpu.len()),
                    ("page", s.page.len()),
                    ("offset", s.offset.len()),
                    ("op", s.op.len()),
                    ("event", s.event.len()),
                    ("data_source", s.data_source.len()),
                    ("hops", s.hops.len()),
                    ("node", s.node.len()),
                    ("latency_cycles", s.latency_cycles.len()),
                    ("weight", s.weight.len()),
                    ("stack", s.stack.len()),
                    ("hitm", s.hitm.len()),
                ],
            )?;
            vec![
                Arc::new(Int64Array::from(s.time_us.clone())),
                Arc::new(UInt32Array::from(s.thread.clone())),
                Arc::new(Int16Array::from(s.cpu.clone())),
                Arc::new(Int32Array::from(s.page.clone())),
                Arc::new(UInt16Array::from(s.offset.clone())),
                dict8(&s.op, table, "op")?,
                dict8(&s.event, table, "event")?,
                dict8(&s.data_source, table, "data_source")?,
                Arc::new(Int8Array::from(s.hops.clone())),
                Arc::new(Int8Array::from(s.node.clone())),
                Arc::new(UInt32Array::from(s.latency_cycles.clone())),
                Arc::new(UInt32Array::from(s.weight.clone())),
                Arc::new(Int32Array::from(s.stack.clone())),
                Arc::new(Int8Array::from(s.hitm.clone())),
            ]
        }
        "pages" => {
            let p = &trace.pages;
            check_len(
                table,
                &[
                    ("address", p.address.len()),
                    ("region", p.region.len()),
                    ("node", p.node.len()),
                    ("page_size", p.page_size.len()),
                    ("first_touch_us", p.first_touch_us.len()),
                    ("first_touch_thread", p.first_touch_thread.len()),
                    ("first_touch_cpu", p.first_touch_cpu.len()),
                ],
            )?;
            vec![
                Arc::new(UInt64Array::from(p.address.clone())),
                Arc::new(Int32Array::from(p.region.clone())),
                Arc::new(Int8Array::from(p.node.clone())),
                Arc::new(UInt32Array::from(p.page_size.clone())),
                Arc::new(Int64Array::from(p.first_touch_us.clone())),
                Arc::new(Int32Array::from(p.first_touch_thread.clone())),
                Arc::new(Int16Array::from(p.first_touch_cpu.clone())),
            ]
        }
        "threads" => {
            let t = &trace.threads;
            check_len(
                table,
                &[
                    ("tid", t.tid.len()),
                    ("pid", t.pid.len()),
                    ("name", t.name.len()),
                    ("first_seen_us", t.first_seen_us.len()),
                    ("last_seen_us", t.last_seen_us.len()),
                    ("migrations", t.migrations.len()),
                ],
            )?;
            vec![
                Arc::new(Int32Array::from(t.tid.clone())),
                Arc::new(Int32Array::from(t.pid.clone())),
                Arc::new(StringArray::from_iter_values(t.name.iter())),
                Arc::new(Int64Array::from(t.first_seen_us.clone())),
                Arc::new(Int64Array::from(t.last_seen_us.clone())),
                Arc::new(Int64Array::from(t.migrations.clone())),
            ]
        }
        "regions" => {
            let r = &trace.regions;
            check_len(
                table,
                &[
                    ("start", r.start.len()),
                    ("end", r.end.len()),
                    ("kind", r.kind.len()),
                    ("path", r.path.len()),
                    ("policy", r.policy.len()),
                    ("alloc_site", r.alloc_site.len()),
                    ("prot", r.prot.len()),
                ],
            )?;
            vec![
                Arc::new(UInt64Array::from(r.start.clone())),
                Arc::new(UInt64Array::from(r.end.clone())),
                dict8(&r.kind, table, "kind")?,
                Arc::new(StringArray::from(r.path.iter().map(|p| p.as_deref()).collect::<Vec<_>>())),
                Arc::new(StringArray::from_iter_values(r.policy.iter())),
                Arc::new(StringArray::from(r.alloc_site.iter().map(|p| p.as_deref()).collect::<Vec<_>>())),
                Arc::new(StringArray::from(r.prot.iter().map(|p| p.as_deref()).collect::<Vec<_>>())),
            ]
        }
        "thread_placements" => {
            let t = &trace.thread_placements;
            check_len(
                table,
                &[
                    ("time_us", t.time_us.len()),
                    ("thread", t.thread.len()),
                    ("cpu", t.cpu.len()),
                    ("node", t.node.len()),
                ],
            )?;
            vec![
                Arc::new(Int64Array::from(t.time_us.clone())),
                Arc::new(UInt32Array::from(t.thread.clone())),
                Arc::new(Int16Array::from(t.cpu.clone())),
                Arc::new(Int8Array::from(t.node.clone())),
            ]
        }
        "region_placements" => {
            let r = &trace.region_placements;
            check_len(
                table,
                &[
                    ("time_us", r.time_us.len()),
                    ("region", r.region.len()),
                    ("node", r.node.len()),
                    ("pages", r.pages.len()),
                    ("page_size", r.page_size.len()),
                ],
            )?;
            vec![
                Arc::new(Int64Array::from(r.time_us.clone())),
                Arc::new(UInt32Array::from(r.region.clone())),
                Arc::new(Int8Array::from(r.node.clone())),
                Arc::new(UInt32Array::from(r.pages.clone())),
                Arc::new(UInt32Array::from(r.page_size.clone())),
            ]
        }
        "counters" => {
            let c = &trace.counters;
            check_len(
                table,
                &[
                    ("time_us", c.time_us.len()),
                    ("counter", c.counter.len()),
                    ("scope", c.scope.len()),
                    ("scope_id", c.scope_id.len()),
                    ("value", c.value.len()),
                ],
            )?;
            vec![
                Arc::new(Int64Array::from(c.time_us.clone())),
                dict16(&c.counter, table, "counter")?,
                dict8(&c.scope, table, "scope")?,
                Arc::new(Int32Array::from(c.scope_id.clone())),
                Arc::new(Float64Array::from(c.value.clone())),
            ]
        }
        "events" => {
            let e = &trace.events;
            check_len(
                table,
                &[
                    ("time_us", e.time_us.len()),
                    ("kind", e.kind.len()),
                    ("thread", e.thread.len()),
                    ("value", e.value.len()),
                    ("detail", e.detail.len()),
                ],
            )?;
            vec![
                Arc::new(Int64Array::from(e.time_us.clone())),
                dict8(&e.kind, table, "kind")?,
                Arc::new(Int32Array::from(e.thread.clone())),
                Arc::new(Int64Array::from(e.value.clone())),
                Arc::new(StringArray::from_iter_values(e.detail.iter())),
            ]
        }
        other => match super::alloc::columns(&trace.alloc, other) {
            Some(cols) => cols?,
            None => return Err(TraceError::Invalid(format!("unknown table {other}"))),
        },
    };
    Ok(cols)
}

/// Encodes one table as an Arrow IPC file (magic `ARROW1`), in batches of 65,536 rows, each
/// buffer ZSTD-compressed.
pub fn table_ipc_bytes(trace: &TraceData, table: &str) -> Result<(Vec<u8>, u64), TraceError> {
    let schema = table_schema(table).ok_or_else(|| TraceError::Invalid(format!("unknown table {table}")))?;
    let columns = table_columns(trace, table)?;
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let rows = batch.num_rows();
    let mut writer = FileWriter::try_new_with_options(Vec::new(), &schema, ipc_options()?)?;
    if rows == 0 {
        writer.write(&batch)?;
    }
    let mut offset = 0;
    while offset < rows {
        let len = BATCH_ROWS.min(rows - offset);
        writer.write(&batch.slice(offset, len))?;
        offset += len;
    }
    writer.finish()?;
    Ok((writer.into_inner()?, rows as u64))
}

/// Fills `manifest.tables` and `capture.sampleCount` from the tables.
pub fn finalize_manifest(trace: &mut TraceData) {
    let rows = |t: &str| -> u64 {
        (match t {
            "samples" => trace.samples.time_us.len(),
            "pages" => trace.pages.address.len(),
            "threads" => trace.threads.tid.len(),
            "regions" => trace.regions.start.len(),
            "thread_placements" => trace.thread_placements.time_us.len(),
            "region_placements" => trace.region_placements.time_us.len(),
            "counters" => trace.counters.time_us.len(),
            "events" => trace.events.time_us.len(),
            other => trace.alloc.rows(other),
        }) as u64
    };
    let tables = TABLE_NAMES
        .iter()
        .map(|t| TableEntry { name: t.to_string(), entry: format!("{t}.arrow"), rows: rows(t) })
        .collect();
    trace.manifest.tables = tables;
    trace.manifest.capture.sample_count = trace.samples.time_us.len() as u64;
}

/// Writes the trace as a ZIP to any seekable writer. Updates `manifest.tables` and
/// `capture.sampleCount` first.
pub fn write_trace_to<W: Write + Seek>(trace: &mut TraceData, out: W) -> Result<W, TraceError> {
    finalize_manifest(trace);
    check_trace(trace)?;
    let mut zip = ZipWriter::new(out);
    let manifest = serde_json::to_vec_pretty(&trace.manifest)?;
    if manifest.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(TraceError::Invalid(format!(
            "manifest.json would be {} bytes, more than the {MAX_MANIFEST_BYTES} numascope's readers accept",
            manifest.len()
        )));
    }
    let mut total = manifest.len() as u64;
    let deflated = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    zip.start_file("manifest.json", deflated)?;
    zip.write_all(&manifest)?;
    let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored).with_alignment(64);
    for table in TABLE_NAMES {
        let (bytes, _rows) = table_ipc_bytes(trace, table)?;
        total += bytes.len() as u64;
        if bytes.len() as u64 > MAX_ENTRY_BYTES || total > MAX_TOTAL_BYTES {
            return Err(TraceError::Invalid(format!(
                "table {table} is {} bytes ({total} bytes of tables so far); numascope's readers take at most \
                 {MAX_ENTRY_BYTES} bytes an entry and {MAX_TOTAL_BYTES} a file: record a shorter run or at a lower \
                 sample rate",
                bytes.len()
            )));
        }
        zip.start_file(format!("{table}.arrow"), stored)?;
        zip.write_all(&bytes)?;
    }
    Ok(zip.finish()?)
}

/// Writes the trace to `path`: into an exclusive temporary file in the same directory, synced,
/// then renamed over `path` (see the module comment). On failure `path` is left as it was and
/// the temporary file is removed.
pub fn write_trace(trace: &mut TraceData, path: &Path) -> Result<u64, TraceError> {
    write_trace_via(trace, path, |f| f)
}

/// [`write_trace`] through a wrapper of the temporary file (tests inject write errors here).
fn write_trace_via<W: Write + Seek + IntoFile>(
    trace: &mut TraceData,
    path: &Path,
    wrap: impl FnOnce(BufWriter<File>) -> W,
) -> Result<u64, TraceError> {
    let (dir, name) = split_output(path).map_err(|e| TraceError::io(path, e))?;
    let mut tmp = TempFile::new_in(&dir, &name, file_mode()).map_err(|e| TraceError::io(&dir, e))?;
    let file = tmp.take_file();
    let w = write_trace_to(trace, wrap(BufWriter::new(file)))?;
    let file = w.into_file().map_err(|e| TraceError::io(tmp.path(), e))?;
    let size = file.metadata().map_err(|e| TraceError::io(tmp.path(), e))?.len();
    tmp.put_file(file);
    tmp.persist(path).map_err(|e| TraceError::io(path, e))?;
    Ok(size)
}

/// A writer that gives back its file once flushed.
pub trait IntoFile {
    fn into_file(self) -> io::Result<File>;
}

impl IntoFile for BufWriter<File> {
    fn into_file(self) -> io::Result<File> {
        self.into_inner().map_err(|e| e.into_error())
    }
}

// ---------------------------------------------------------------- files created safely

/// Mode of the files numascope creates: 0600 when running as root (traces, plans, rollback
/// records and audit entries describe other users' processes), else 0666 less the umask.
pub fn file_mode() -> u32 {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        0o600
    } else {
        0o666
    }
}

/// 16 random hex digits (getrandom; the time and pid if that fails). Exclusive creation makes
/// a guessed name harmless; randomness only keeps a planted one from blocking us. Never waits
/// for the entropy pool: early after boot (a fresh VM) a blocking getrandom stalls for seconds.
fn random_suffix() -> String {
    const GRND_INSECURE: libc::c_uint = 0x0004; // Linux 5.6+
    let mut b = [0u8; 8];
    let mut n = -1;
    for flags in [GRND_INSECURE, libc::GRND_NONBLOCK] {
        // SAFETY: b is 8 writable bytes.
        n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), flags) };
        if n == b.len() as isize {
            break;
        }
    }
    if n != b.len() as isize {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let c = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        b = ((t as u64) ^ ((std::process::id() as u64) << 32) ^ c.rotate_left(17)).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A new trace id (`manifest.traceId`, v4): 32 random lower-case hex digits (128 bits, the size
/// of a W3C / OpenTelemetry trace id).
pub fn new_trace_id() -> String {
    random_suffix() + &random_suffix()
}

/// Creates `path` exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`) with `mode`: fails if
/// anything, a symlink included, is already there.
pub fn create_exclusive(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new().write(true).read(true).create_new(true).custom_flags(libc::O_NOFOLLOW).mode(mode).open(path)
}

/// The directory and file name of an output path; an error for a path that names a directory.
pub fn split_output(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let bytes = path.as_os_str().as_bytes();
    let name = match path.file_name() {
        Some(n) if !bytes.ends_with(b"/") && n != "." && n != ".." => n.to_os_string(),
        _ => {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the path names a directory, not a file"));
        }
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name))
}

/// A temporary file created exclusively in the directory of its destination, under a random
/// name (`.NAME.RANDOM.tmp`); removed when dropped unless [`TempFile::persist`]ed.
pub struct TempFile {
    path: PathBuf,
    file: Option<File>,
    keep: bool,
}

impl TempFile {
    /// Creates `.{name}.{random}.tmp` in `dir` with `mode` (a few tries if a name is taken).
    pub fn new_in(dir: &Path, name: &std::ffi::OsStr, mode: u32) -> io::Result<TempFile> {
        let mut last = None;
        for _ in 0..16 {
            let mut n = OsString::from(".");
            n.push(name);
            n.push(format!(".{}.tmp", random_suffix()));
            let path = dir.join(n);
            match create_exclusive(&path, mode) {
                Ok(file) => return Ok(TempFile { path, file: Some(file), keep: false }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file.
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("the file is present until persisted")
    }

    fn take_file(&mut self) -> File {
        self.file.take().expect("the file is present until persisted")
    }

    fn put_file(&mut self, f: File) {
        self.file = Some(f);
    }

    /// Syncs the file, renames it over `dest` (replacing what is there: a file, or a link,
    /// which is not followed) and syncs the directory.
    pub fn persist(mut self, dest: &Path) -> io::Result<()> {
        self.file().sync_all()?;
        fs::rename(&self.path, dest)?;
        self.keep = true;
        sync_parent(dest);
        Ok(())
    }

    /// As [`TempFile::persist`], but fails with `AlreadyExists` if `dest` exists
    /// (`renameat2(RENAME_NOREPLACE)`; a plain existence check where the kernel lacks it).
    pub fn persist_new(mut self, dest: &Path) -> io::Result<()> {
        self.file().sync_all()?;
        rename_noreplace(&self.path, dest)?;
        self.keep = true;
        sync_parent(dest);
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn sync_parent(path: &Path) {
    if let Ok((dir, _)) = split_output(path) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput));
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: two NUL-terminated paths; RENAME_NOREPLACE = 1.
    let r = unsafe {
        libc::syscall(libc::SYS_renameat2, libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), 1 as libc::c_uint)
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EINVAL)) {
        // Old kernel or a file system without RENAME_NOREPLACE: link() is exclusive too.
        fs::hard_link(from, to)?;
        let _ = fs::remove_file(from);
        return Ok(());
    }
    Err(e)
}

/// Creates (or checks) a private directory: made with mode 0700 (parents as needed, 0700 too
/// where created), and refused unless it is a real directory (not a link), owned by us, that
/// nobody else can write to or list (`mode & 077 == 0`).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let m = fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() {
        return Err(io::Error::other(format!("{} is not a directory (a link?)", dir.display())));
    }
    if m.uid() != me {
        return Err(io::Error::other(format!(
            "{} belongs to uid {}, not to us (uid {me}): not a private directory",
            dir.display(),
            m.uid()
        )));
    }
    if m.mode() & 0o077 != 0 {
        // Ours: make it private.
        fs::set_permissions(dir, fs::Permissions::from_mode(m.mode() & 0o700))?;
    }
    Ok(())
}

// ---------------------------------------------------------------- recording endings

/// Checks before a recording starts that its trace can be written to `path`: the path names a
/// file (not a directory) in an existing directory where we can create files (an exclusive
/// temporary file is created and removed). The error says which of these fails.
pub fn check_output(path: &Path) -> Result<(), String> {
    let (dir, _) = split_output(path).map_err(|_| format!("{} names a directory, not a trace file", path.display()))?;
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(format!("{} is a directory, not a trace file", path.display())),
        _ => {}
    }
    match fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{} is not a directory", dir.display())),
        Err(_) => return Err(format!("output directory {} does not exist", dir.display())),
    }
    let name = path.file_name().unwrap_or_default();
    TempFile::new_in(&dir, name, file_mode()).map(drop).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::EROFS) => format!("the file system is read-only ({e})"),
            Some(libc::EACCES) | Some(libc::EPERM) => format!("no permission to create files there ({e})"),
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => format!("the file system is full ({e})"),
            _ => e.to_string(),
        };
        format!("cannot write the trace to {}: {why}", path.display())
    })
}

/// Where a recording goes when its output cannot be written: `$NUMASCOPE_FALLBACK_DIR`, else a
/// private `numascope-kept-<uid>` directory in `$TMPDIR` (or /tmp), `/dev/shm` and `/var/tmp`,
/// tried in that order.
pub fn fallback_dirs() -> Vec<PathBuf> {
    if let Some(d) = std::env::var_os("NUMASCOPE_FALLBACK_DIR").filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(d)];
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let sub = format!("numascope-kept-{uid}");
    let mut out = vec![std::env::temp_dir().join(&sub)];
    for d in ["/dev/shm", "/var/tmp"] {
        let p = Path::new(d).join(&sub);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A trace that could not be written to its output.
#[derive(Debug)]
pub struct WriteFailure {
    pub output: PathBuf,
    pub error: TraceError,
    /// Where the recording was kept instead, or why keeping it failed too.
    pub kept: Result<PathBuf, String>,
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let out = self.output.display();
        write!(f, "writing the trace to {out} failed: {}; {out} was left as it was", self.error)?;
        match &self.kept {
            Ok(p) => write!(f, "; the recording was kept in {} (move it where you want it)", p.display()),
            Err(e) => write!(f, "; keeping the recording elsewhere failed too ({e}): it is lost"),
        }
    }
}

impl std::error::Error for WriteFailure {}

/// Writes the trace to `path` ([`write_trace`]); if that fails, writes it to a new private
/// file in the first usable [`fallback_dirs`] and says where.
pub fn write_trace_or_keep(trace: &mut TraceData, path: &Path) -> Result<u64, Box<WriteFailure>> {
    keep_on_failure(trace, path, &fallback_dirs(), write_trace)
}

fn keep_on_failure(
    trace: &mut TraceData,
    path: &Path,
    dirs: &[PathBuf],
    write: impl FnOnce(&mut TraceData, &Path) -> Result<u64, TraceError>,
) -> Result<u64, Box<WriteFailure>> {
    let error = match write(trace, path) {
        Ok(n) => return Ok(n),
        Err(e) => e,
    };
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "trace".into());
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut why = Vec::new();
    for d in dirs {
        if let Err(e) = private_dir(d) {
            why.push(format!("{}: {e}", d.display()));
            continue;
        }
        let kept = d.join(format!("{stem}-{secs}-{}.numascope", &random_suffix()[..8]));
        match write_trace(trace, &kept) {
            Ok(_) => return Err(Box::new(WriteFailure { output: path.to_path_buf(), error, kept: Ok(kept) })),
            Err(e) => why.push(format!("{}: {e}", d.display())),
        }
    }
    if why.is_empty() {
        why.push("no fallback directory".into());
    }
    Err(Box::new(WriteFailure { output: path.to_path_buf(), error, kept: Err(why.join("; ")) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A temp dir removed on drop.
    struct Dir(PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            let p = std::env::temp_dir().join(format!("numascope-writer-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        fn names(&self) -> Vec<String> {
            let mut v: Vec<String> = fs::read_dir(&self.0)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn trace() -> TraceData {
        crate::trace::fixture::fixture_trace()
    }

    /// A writer that fails with ENOSPC after `left` bytes (a full disk).
    struct FailAfter {
        inner: BufWriter<File>,
        left: u64,
    }
    impl Write for FailAfter {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if b.len() as u64 > self.left {
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.left -= b.len() as u64;
            self.inner.write(b)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
    }
    impl Seek for FailAfter {
        fn seek(&mut self, p: io::SeekFrom) -> io::Result<u64> {
            self.inner.seek(p)
        }
    }
    impl IntoFile for FailAfter {
        fn into_file(self) -> io::Result<File> {
            self.inner.into_file()
        }
    }

    #[test]
    fn planted_partial_symlink_is_not_followed() {
        let d = Dir::new("plant");
        let victim = d.0.join("victim");
        fs::write(&victim, "precious\n").unwrap();
        let out = d.0.join("t.numascope");
        // the names the old writer used, and the output itself, planted as links to the victim
        symlink(&victim, d.0.join("t.numascope.partial")).unwrap();
        symlink(&victim, d.0.join("t.numascope.numascope.partial")).unwrap();
        write_trace(&mut trace(), &out).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(fs::symlink_metadata(&out).unwrap().file_type().is_file(), "the link at the output was replaced");
        crate::trace::reader::read_trace(&out).unwrap();
        // a link planted at the output is replaced, not followed
        fs::remove_file(&out).unwrap();
        symlink(&victim, &out).unwrap();
        write_trace(&mut trace(), &out).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(d.names(), vec!["t.numascope", "t.numascope.numascope.partial", "t.numascope.partial", "victim"]);
    }

    #[test]
    fn exclusive_create_refuses_an_existing_name_or_link() {
        let d = Dir::new("excl");
        let victim = d.0.join("victim");
        fs::write(&victim, "x").unwrap();
        symlink(&victim, d.0.join("l")).unwrap();
        assert_eq!(create_exclusive(&d.0.join("l"), 0o600).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(create_exclusive(&victim, 0o600).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        let f = create_exclusive(&d.0.join("new"), 0o600).unwrap();
        assert_eq!(f.metadata().unwrap().mode() & 0o077, 0);
    }

    #[test]
    fn existing_trace_kept_when_a_write_fails() {
        let d = Dir::new("fail");
        let out = d.0.join("t.numascope");
        write_trace(&mut trace(), &out).unwrap();
        let before = fs::read(&out).unwrap();
        let kept_dir = d.0.join("kept");
        let r = keep_on_failure(&mut trace(), &out, std::slice::from_ref(&kept_dir), |t, p| {
            write_trace_via(t, p, |w| FailAfter { inner: w, left: 1000 })
        });
        let f = r.unwrap_err();
        assert!(f.error.to_string().contains("No space left"), "{}", f.error);
        let kept = f.kept.as_ref().unwrap().clone();
        assert!(kept.starts_with(&kept_dir));
        let msg = f.to_string();
        assert!(msg.contains(&kept.display().to_string()) && msg.contains("was left as it was"), "{msg}");
        // the old trace is intact, nothing is left beside it, the recording is in the fallback
        assert_eq!(fs::read(&out).unwrap(), before);
        assert_eq!(d.names(), vec!["kept", "t.numascope"]);
        crate::trace::reader::read_trace(&kept).unwrap();
        assert_eq!(fs::metadata(&kept_dir).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn unwritable_outputs_are_found_before_writing() {
        let d = Dir::new("check");
        assert!(check_output(&d.0.join("t.numascope")).is_ok());
        assert!(check_output(&d.0).unwrap_err().contains("is a directory"));
        assert!(check_output(&d.0.join("missing/t.numascope")).unwrap_err().contains("does not exist"));
        let with_slash = PathBuf::from(format!("{}/", d.0.join("x").display()));
        assert!(check_output(&with_slash).unwrap_err().contains("names a directory"));
        assert_eq!(d.names(), Vec::<String>::new(), "the probe leaves nothing behind");
    }

    #[test]
    fn private_dir_refuses_a_foreign_or_linked_dir() {
        let d = Dir::new("private");
        let p = d.0.join("a/b");
        private_dir(&p).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&p).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o700, "made private again");
        symlink(&p, d.0.join("link")).unwrap();
        assert!(private_dir(&d.0.join("link")).is_err());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let other = d.0.join("other");
            fs::create_dir(&other).unwrap();
            std::os::unix::fs::chown(&other, Some(65534), None).unwrap();
            assert!(private_dir(&other).unwrap_err().to_string().contains("belongs to uid 65534"));
        }
    }

    #[test]
    fn persist_new_does_not_replace() {
        let d = Dir::new("noreplace");
        let dest = d.0.join("r.json");
        fs::write(&dest, "old").unwrap();
        let mut t = TempFile::new_in(&d.0, std::ffi::OsStr::new("r.json"), 0o600).unwrap();
        t.file().write_all(b"new").unwrap();
        assert_eq!(t.persist_new(&dest).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&dest).unwrap(), "old");
        assert_eq!(d.names(), vec!["r.json"], "the temporary file was removed");
    }
}
