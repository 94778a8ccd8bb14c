//! Named regression tests for the ways `numascope import` used to fail on hostile perf.data
//! files (issue #19). Each input is a real file from shared/data/perfdata with one field
//! set to a hostile value, imported by the binary in a child process under the fuzz
//! harness's limits (1 GiB of address space, 10 s), so a panic, an abort or a hang is a test
//! failure, not a crashed test run. The comment on each test says how the code before the
//! fix failed on it.

mod import_harness;

use import_harness::*;
use numascope_core::decode::perf_file;
use numascope_core::trace::reader::read_trace;
use numascope_core::trace::Manifest;

/// EVENT_DESC section of the IVB file (u32 nr = 1, u32 attr_size = 112, attr, u32 nr_ids,
/// string name), NUMA_TOPOLOGY (u32 nr = 4; per node u32 id, u64 total, u64 free, string).
const EVENT_DESC: u32 = 12;
const NUMA_TOPOLOGY: u32 = 14;
const CMDLINE: u32 = 11;
const NRCPUS: u32 = 7;
const TOTAL_MEM: u32 = 10;
const HOSTNAME: u32 = 3;
const BUILD_ID: u32 = 2;

fn ivb() -> Vec<u8> {
    real_file(IVB)
}

fn section(b: &[u8], bit: u32) -> usize {
    feature(b, bit).unwrap_or_else(|| panic!("feature {bit} not in the fixture")).0
}

/// Runs the import and returns the run; the trace's manifest if it succeeded.
fn import(name: &str, bytes: &[u8]) -> (Run, Option<Manifest>) {
    import_with(name, bytes, RunOptions::default())
}

fn import_with(name: &str, bytes: &[u8], opts: RunOptions) -> (Run, Option<Manifest>) {
    let work = work_dir(name);
    let run = run_bytes(bytes, &work, opts);
    let manifest = (run.outcome == Outcome::Ok)
        .then(|| read_trace(&work.join("out/x.numascope")).map(|t| t.manifest).ok())
        .flatten();
    let _ = std::fs::remove_dir_all(&work);
    (run, manifest)
}

/// Asserts a typed error of `kind` whose message contains every one of `words`, in a process
/// that stayed small.
fn expect_error(run: &Run, kind: &str, words: &[&str]) {
    match &run.outcome {
        Outcome::Error(k, msg) if k == kind => {
            for w in words {
                assert!(msg.contains(w), "message lacks {w:?}: {msg}");
            }
        }
        other => panic!("expected a {kind} error, got {} ({:?}); stderr: {}", other.class(), other, run.stderr),
    }
    assert!(run.max_rss_kib < 256 * 1024, "peak RSS {} KiB", run.max_rss_kib);
}

fn expect_ok(run: &Run, manifest: Option<Manifest>) -> Manifest {
    assert_eq!(run.outcome, Outcome::Ok, "stderr: {}", run.stderr);
    assert!(run.max_rss_kib < 256 * 1024, "peak RSS {} KiB", run.max_rss_kib);
    manifest.expect("the trace reads back")
}

fn has_note(m: &Manifest, words: &str) -> bool {
    m.capture.notes.iter().any(|n| n.contains(words))
}

/// Old code: `data_off + data_size` overflowed while formatting the truncation message (a
/// panic in a debug build).
#[test]
fn data_section_end_overflowing_u64_is_truncated() {
    let mut b = ivb();
    wr64(&mut b, 40, 1 << 63);
    wr64(&mut b, 48, (1 << 63) + 8);
    let (run, _) = import("reg-data-overflow", &b);
    expect_error(&run, "truncated", &["data section", "9223372036854775808"]);
}

/// Old code: linux-perf-data allocated `vec![0; size]` for the feature section: an abort
/// (allocation failure) under the 1 GiB limit.
#[test]
fn feature_section_of_a_terabyte_is_not_allocated() {
    let mut b = ivb();
    let entry = feature_table(&b).into_iter().find(|f| f.0 == BUILD_ID).unwrap().1;
    wr64(&mut b, entry + 8, 1 << 40);
    let (run, _) = import("reg-feature-size", &b);
    expect_error(&run, "truncated", &["BUILD_ID", "1.1 TB"]);
}

/// Old code: `Vec::with_capacity(nr)` of AttributeDescription in linux-perf-data: a
/// capacity-overflow panic.
#[test]
fn event_desc_event_count_huge_is_a_limit() {
    let mut b = ivb();
    let s = section(&b, EVENT_DESC);
    wr32(&mut b, s, u32::MAX);
    let (run, _) = import("reg-evdesc-nr", &b);
    expect_error(&run, "limit", &["EVENT_DESC", "4294967295 events"]);
}

/// Old code: `Vec::with_capacity(nr_ids)` (16 GiB): an abort.
#[test]
fn event_desc_id_count_huge_is_corrupt() {
    let mut b = ivb();
    let s = section(&b, EVENT_DESC);
    wr32(&mut b, s + 8 + 112, 0x7fff_ffff);
    let (run, _) = import("reg-evdesc-ids", &b);
    expect_error(&run, "corrupt", &["EVENT_DESC", "2147483647 event ids"]);
}

/// Old code: `vec![0; len]` for the event name (4 GiB): an abort.
#[test]
fn event_desc_name_length_huge_is_corrupt() {
    let mut b = ivb();
    let s = section(&b, EVENT_DESC);
    wr32(&mut b, s + 8 + 112 + 4, 0xffff_fff0);
    let (run, _) = import("reg-evdesc-name", &b);
    expect_error(&run, "corrupt", &["EVENT_DESC", "the event name"]);
}

/// Old code: without EVENT_DESC, linux-perf-data divides the attr section's size by the
/// header's attr_size: a division-by-zero panic.
#[test]
fn attr_size_zero_is_corrupt_not_a_division_by_zero() {
    let mut b = drop_feature(&ivb(), EVENT_DESC);
    wr64(&mut b, 16, 0);
    let (run, _) = import("reg-attr-size-0", &b);
    expect_error(&run, "corrupt", &["attr_size is 0"]);
}

/// Old code: the old event_types section path computes `attr_size + 16`: an overflow panic.
#[test]
fn attr_size_overflowing_in_the_event_types_section_is_corrupt() {
    let mut b = drop_feature(&ivb(), EVENT_DESC);
    let (aoff, asize) =
        (u64::from_le_bytes(b[24..32].try_into().unwrap()), u64::from_le_bytes(b[32..40].try_into().unwrap()));
    wr64(&mut b, 56, aoff);
    wr64(&mut b, 64, asize);
    wr64(&mut b, 16, u64::MAX - 8);
    let (run, _) = import("reg-attr-size-max", &b);
    expect_error(&run, "corrupt", &["attr_size is 18446744073709551607"]);
}

/// Without EVENT_DESC the attrs come from the attr section: still imported.
#[test]
fn attrs_from_the_attr_section_import() {
    let b = drop_feature(&ivb(), EVENT_DESC);
    let (run, m) = import("reg-attr-section", &b);
    let m = expect_ok(&run, m);
    assert_eq!(m.capture.sample_count, 14);
}

/// Old code: linux-perf-data's `cmdline()` reserved a Vec of 2^32 words: an abort.
#[test]
fn cmdline_word_count_huge_is_ignored_with_a_note() {
    let mut b = ivb();
    let s = section(&b, CMDLINE);
    wr32(&mut b, s, u32::MAX);
    let (run, m) = import("reg-cmdline", &b);
    let m = expect_ok(&run, m);
    assert!(has_note(&m, "CMDLINE header ignored"), "{:?}", m.capture.notes);
    assert!(m.origin.command.is_empty());
}

/// Old code: one node with `(0..nr_cpus).collect()` cpus: 16 GiB, an abort.
#[test]
fn cpu_count_huge_without_numa_topology_is_ignored() {
    let mut b = drop_feature(&ivb(), NUMA_TOPOLOGY);
    let s = section(&b, NRCPUS);
    wr32(&mut b, s, u32::MAX);
    let (run, m) = import("reg-nrcpus", &b);
    let m = expect_ok(&run, m);
    assert!(has_note(&m, "NRCPUS header ignored"), "{:?}", m.capture.notes);
    assert_eq!(m.machine.nodes.len(), 1);
    assert!(m.machine.nodes[0].cpus.len() <= 32_768);
}

/// Old code: the cpu list `0-4000000000` expanded to 4 billion cpus: an abort (or, without
/// a memory limit, a hang while 16 GB were filled).
#[test]
fn numa_cpu_range_of_four_billion_cpus_is_ignored() {
    let mut b = ivb();
    let s = section(&b, NUMA_TOPOLOGY);
    let list = s + 4 + 24; // node 0's cpu list string (64 bytes)
    b[list..list + 64].fill(0);
    b[list..list + 12].copy_from_slice(b"0-4000000000");
    let (run, m) = import("reg-cpulist", &b);
    let m = expect_ok(&run, m);
    assert!(has_note(&m, "NUMA_TOPOLOGY header ignored"), "{:?}", m.capture.notes);
}

/// Old code: `kb * 1024` of a node's MemTotal overflowed: a panic.
#[test]
fn numa_node_memory_overflowing_bytes_is_ignored() {
    let mut b = ivb();
    let s = section(&b, NUMA_TOPOLOGY);
    wr64(&mut b, s + 8, u64::MAX);
    let (run, m) = import("reg-node-mem", &b);
    let m = expect_ok(&run, m);
    assert!(has_note(&m, "NUMA_TOPOLOGY header ignored"), "{:?}", m.capture.notes);
}

/// Old code: `k * 1024` of TOTAL_MEM overflowed: a panic.
#[test]
fn total_memory_overflowing_bytes_is_ignored() {
    let mut b = drop_feature(&ivb(), NUMA_TOPOLOGY);
    let s = section(&b, TOTAL_MEM);
    wr64(&mut b, s, u64::MAX);
    let (run, m) = import("reg-total-mem", &b);
    let m = expect_ok(&run, m);
    assert!(has_note(&m, "TOTAL_MEM header ignored"), "{:?}", m.capture.notes);
    assert_eq!(m.machine.nodes[0].memory_bytes, None);
}

/// Old code: `lost += count` overflowed on two LOST_SAMPLES records of 2^64-1: a panic.
#[test]
fn lost_sample_counts_saturate() {
    let mut b = ivb();
    let comms = records_of_type(&b, 3);
    assert!(comms.len() >= 2);
    for &o in &comms[..2] {
        wr32(&mut b, o, 13); // PERF_RECORD_LOST_SAMPLES
        wr64(&mut b, o + 8, u64::MAX);
    }
    let (run, m) = import("reg-lost", &b);
    let m = expect_ok(&run, m);
    assert_eq!(m.capture.lost_samples, u64::MAX);
}

/// Old code: every non-sample record went through linux-perf-event-reader's parser, which
/// asserts that an MMAP2 build id is at most 20 bytes: a panic.
#[test]
fn mmap2_build_id_longer_than_20_bytes_does_not_panic() {
    let mut b = ivb();
    let o = records_of_type(&b, 10)[0]; // PERF_RECORD_MMAP2
    let misc = u16::from_le_bytes(b[o + 4..o + 6].try_into().unwrap());
    wr16(&mut b, o + 4, misc | 0x4000); // PERF_RECORD_MISC_MMAP_BUILD_ID
    b[o + 8 + 32] = 0xff; // build_id_size
    let (run, m) = import("reg-mmap2", &b);
    let m = expect_ok(&run, m);
    assert_eq!(m.capture.sample_count, 14);
}

/// Old code: linux-perf-data resized its record buffer to the AUXTRACE size (1 TiB): an abort.
#[test]
fn auxtrace_record_of_a_terabyte_is_truncated() {
    let mut b = ivb();
    let o = records_of_type(&b, 10)[0];
    wr32(&mut b, o, 71); // PERF_RECORD_AUXTRACE
    wr64(&mut b, o + 8, 1 << 40);
    let (run, _) = import("reg-auxtrace", &b);
    expect_error(&run, "truncated", &["AUXTRACE record at offset", "1.1 TB"]);
}

/// Old code: an untyped "cannot read perf.data: The specified size in the perf event header
/// was smaller than the header itself", without the record's offset.
#[test]
fn zero_size_record_is_corrupt_and_named_by_offset() {
    let mut b = ivb();
    let o = record_offsets(&b)[5];
    wr16(&mut b, o + 6, 0);
    let (run, _) = import("reg-zero-size", &b);
    expect_error(&run, "corrupt", &[&format!("record at offset {o}"), "says its size is 0"]);
}

/// A pipe-mode stream cut inside its last record keeps what came before, with a note (perf:
/// "unexpected end of event stream"); a normal file cut inside its data section is an error.
#[test]
fn pipe_stream_cut_inside_a_record_keeps_the_rest() {
    let mut p = to_pipe(&ivb());
    let n = p.len();
    p.truncate(n - 5);
    let (run, m) = import("reg-pipe-cut", &p);
    let m = expect_ok(&run, m);
    assert!(has_note(&m, "pipe-mode stream ends inside the record"), "{:?}", m.capture.notes);
    let mut b = ivb();
    let (_, end) = records_span(&b);
    let last = *record_offsets(&b).last().unwrap();
    b.drain(last + 4..end);
    let (run, _) = import("reg-file-cut", &b);
    expect_error(&run, "truncated", &[]);
}

/// Old code: linux-perf-data does not read the body of a FINISHED_ROUND record, so one with
/// a body (here an EXIT record retyped) made it read the body as the next record: an error.
/// The walker skips whole records.
#[test]
fn finished_round_with_a_body_is_skipped_whole() {
    let mut b = ivb();
    let o = records_of_type(&b, 4)[0]; // PERF_RECORD_EXIT
    wr32(&mut b, o, 68);
    let (run, m) = import("reg-round-body", &b);
    let m = expect_ok(&run, m);
    assert_eq!(m.capture.sample_count, 14);
}

/// A 72-byte header (perf before 2.6.37, no feature bits) is refused as unsupported; any
/// other header size as corrupt, as perf does.
#[test]
fn header_sizes_other_than_104_are_refused() {
    let mut b = ivb();
    wr64(&mut b, 8, 72);
    let (run, _) = import("reg-hdr-72", &b);
    expect_error(&run, "unsupported", &["72 bytes"]);
    wr64(&mut b, 8, 21_592);
    let (run, _) = import("reg-hdr-big", &b);
    expect_error(&run, "corrupt", &["the header says it is 21592 bytes"]);
}

/// Old code: linux-perf-data decompressed everything and buffered every record until a
/// FINISHED_ROUND outside the compressed data: 128 MB of 8-byte records became 16 million
/// buffered records, over 1 GiB (an abort).
#[test]
fn zstd_bomb_stops_at_the_decompression_budget() {
    let ivb = ivb();
    let round = [68u8, 0, 0, 0, 0, 0, 8, 0]; // PERF_RECORD_FINISHED_ROUND
    let data: Vec<u8> = round.iter().copied().cycle().take(128 << 20).collect();
    let plain = perf_file::replace_data_section(&ivb, &data);
    drop(data);
    let bomb = perf_file::compress_data_section(&plain, 16 * 1024).unwrap();
    drop(plain);
    assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
    let (run, _) = import("reg-zstd-bomb", &bomb);
    expect_error(&run, "limit", &["expand to more than", "perf inject"]);
}

/// Memory stays proportional to the data: 14 MB of memory samples, each on its own page
/// (the most the trace builder keeps per sample), zstd-compressed within the budget.
#[test]
fn many_compressed_samples_import_in_bounded_memory() {
    let ivb = ivb();
    let samples: Vec<usize> = records_of_type(&ivb, 9);
    let mut data = Vec::new();
    let mut n = 0u64;
    while data.len() < 14 << 20 {
        for &o in &samples {
            let size = u16::from_le_bytes(ivb[o + 6..o + 8].try_into().unwrap()) as usize;
            let start = data.len();
            data.extend_from_slice(&ivb[o..o + size]);
            // sample_type IP, TID, TIME, ADDR, ...: ADDR at body byte 24; a new page each time.
            wr64(&mut data, start + 8 + 24, 0x7f00_0000_0000 + n * 4096);
            n += 1;
        }
    }
    let z = perf_file::compress_data_section(&perf_file::replace_data_section(&ivb, &data), 16 * 1024).unwrap();
    drop(data);
    let (run, m) = import("reg-zstd-many", &z);
    let m = expect_ok(&run, m);
    assert_eq!(m.capture.sample_count, n);
    eprintln!(
        "{n} samples from {} of zstd data: peak RSS {} MiB in {:.2} s",
        z.len(),
        run.max_rss_kib / 1024,
        run.wall.as_secs_f64()
    );
}

/// zstd-compressed records (`perf record -z`) import like the plain file.
#[test]
fn compressed_file_imports_like_the_original() {
    let z = perf_file::compress_data_section(&ivb(), 2048).unwrap();
    let (run, m) = import("reg-zstd", &z);
    let m = expect_ok(&run, m);
    assert_eq!(m.capture.sample_count, 14);
}

/// A pipe-mode file (`perf record -o -`) imports like the plain file.
#[test]
fn pipe_mode_file_imports_like_the_original() {
    let (run, m) = import("reg-pipe", &to_pipe(&ivb()));
    let m = expect_ok(&run, m);
    assert_eq!(m.capture.sample_count, 14);
}

/// Old code: the hostname was dropped (linux-perf-data refuses non-UTF-8 strings) and event
/// and thread names were taken as they were. Now every string from the file is valid UTF-8
/// without control characters, and the manifest is valid JSON.
#[test]
fn hostile_strings_become_valid_utf8() {
    let mut b = ivb();
    let h = section(&b, HOSTNAME);
    b[h + 4..h + 4 + 13].copy_from_slice(b"ho\xff\xfest\x01\x1b[2J\"\\");
    let e = section(&b, EVENT_DESC);
    let name = e + 8 + 112 + 8; // after nr_ids and the string length
    b[name..name + 6].copy_from_slice(b"\xc3(\x07mem");
    let comm = records_of_type(&b, 3)[0];
    b[comm + 16..comm + 20].copy_from_slice(b"\xf0\x28\x8c\x28");
    let (run, m) = import("reg-strings", &b);
    let m = expect_ok(&run, m);
    assert!(m.machine.name.starts_with("ho\u{fffd}\u{fffd}st\u{fffd}\u{fffd}[2J\"\\"), "{:?}", m.machine.name);
    let json = serde_json::to_string(&m).unwrap();
    assert!(!json.chars().any(|c| c.is_control()), "{json}");
    assert!(m.capture.notes.iter().any(|n| n.contains("\u{fffd}(\u{fffd}mem")), "{:?}", m.capture.notes);
}

/// Old code: a failed write (here: the file-size limit, EFBIG) left `x.numascope.partial`
/// beside the output.
#[test]
fn failed_write_leaves_no_partial_file() {
    let (run, _) = import_with("reg-write-fail", &real_file(ZEN4), RunOptions { file_size_limit: Some(16 * 1024) });
    // (The zip crate also prints "ZipWriter::drop: failed to finalize archive" when the
    // writer drops an unfinished archive, before our one-line error.)
    match &run.outcome {
        Outcome::Error(k, _) if k == "trace" => {}
        Outcome::Untyped(m) if m.contains("numascope: error: writing the trace") => {}
        other => panic!("expected a write error and no files left, got {other:?}"),
    }
}

/// Old code: opening a FIFO waited for a writer forever (a hang). A pipe or device is refused.
#[test]
fn fifo_input_is_refused_without_waiting() {
    let work = work_dir("reg-fifo");
    let fifo = work.join("in.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let run = run_import(&fifo, &work, RunOptions::default());
    expect_error(&run, "io", &["not a regular file"]);
    assert!(run.wall < std::time::Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&work);
}

/// An output that cannot be written is refused before the input is read.
#[test]
fn missing_output_directory_is_refused_first() {
    let work = work_dir("reg-out-dir");
    let input = perfdata_dir().join(IVB);
    let out = work.join("no/such/dir/x.numascope");
    let o = std::process::Command::new(bin()).arg("import").arg(&input).arg("-o").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write the trace there") && err.contains("does not exist"), "{err}");
    let _ = std::fs::remove_dir_all(&work);
}

/// An output on a read-only file system is refused before the input is converted (the writer's
/// exclusive temporary file is tried first), and nothing is left there. Needs root (mount).
#[test]
fn read_only_output_is_refused_before_converting() {
    if unsafe { libc::geteuid() } != 0 {
        numascope_testsupport::skip_outside_ci(format_args!("needs root to mount a read-only tmpfs"));
        return;
    }
    let work = work_dir("reg-out-ro");
    let mnt = work.join("ro");
    std::fs::create_dir_all(&mnt).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        numascope_testsupport::skip(format_args!("mount -t tmpfs is not permitted here"));
        return;
    }
    let input = perfdata_dir().join(IVB);
    let o = std::process::Command::new(bin())
        .arg("import")
        .arg(&input)
        .arg("-o")
        .arg(mnt.join("x.numascope"))
        .output()
        .unwrap();
    let listed: Vec<_> = std::fs::read_dir(&mnt).unwrap().collect();
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write the trace there: the file system is read-only"), "{err}");
    assert!(!err.contains("imported"), "refused before converting: {err}");
    assert!(listed.is_empty());
    let _ = std::fs::remove_dir_all(&work);
}

/// Every real file, unmodified, still imports.
#[test]
fn real_files_import() {
    for name in [ZEN4, IVB, SKX, SNB] {
        let (run, m) = import("reg-real", &real_file(name));
        expect_ok(&run, m);
    }
}

/// Old code: a sample 83 minutes after the first was written with its time clamped to u32::MAX µs
/// and `capture.durationUs` above 2³², which numascope's own readers refused (8 of 158 fuzzed
/// imports, issue 32); then such a span was refused (format v3's 32-bit microseconds). Format v4
/// keeps 64-bit times: 83 minutes import with the right duration, and only a span beyond what
/// the readers hold exactly (2^53 - 1 µs, 285 years: a damaged timestamp) is refused, by name.
#[test]
fn long_spans_import_and_only_a_damaged_one_is_refused() {
    let at_last_sample = |offset_ns: u64| {
        let mut b = ivb();
        let samples = records_of_type(&b, 9);
        // sample_type IP, TID, TIME, ADDR, ...: TIME at body byte 16.
        let first = samples.iter().map(|&o| u64::from_le_bytes(b[o + 24..o + 32].try_into().unwrap())).min().unwrap();
        let last = *samples.last().unwrap();
        wr64(&mut b, last + 8 + 16, first + offset_ns);
        b
    };
    let (run, m) = import("reg-span-83min", &at_last_sample(5_000_000_000_000));
    let m = expect_ok(&run, m);
    assert!(
        m.capture.duration_us >= 5_000_000_000 && m.capture.duration_us < 5_001_000_000,
        "83 minutes: {}",
        m.capture.duration_us
    );
    let (run, _) = import("reg-span-damaged", &at_last_sample(1 << 63));
    expect_error(&run, "limit", &["days", "2^53 - 1 µs", "damaged file"]);
}
