//! Imports the real perf.data files in shared/data/perfdata and cross-checks every sample
//! against `perf script` (Intel files) or the committed `perf c2c report` totals (Zen 4 file,
//! which perf 6.1 refuses: its attr is 136 bytes).

use std::path::PathBuf;
use std::process::Command;

use numascope_core::decode::data_src::MemDataSrc;
use numascope_core::decode::pebs::Weight;
use numascope_core::perfdata::{import_perf_data, read_perf_data};

fn data_dir() -> PathBuf {
    let base = std::env::var_os("NUMASCOPE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../../shared"));
    let d = base.join("data/perfdata");
    assert!(
        d.is_dir(),
        "real perf.data fixtures not found at {} (set NUMASCOPE_SHARED to the shared/ folder)",
        d.display()
    );
    d
}

const ZEN4: &str = "amd-zen4-epyc9254_ibs-op-c2c-phys-addr_ring.perf.data";
const IVB: &str = "intel-ivb-ep-4s_xeon-e5-4610v2_perf-mem-load_numatop-fork.perf.data";
const SKX: &str = "intel-skx-2s_platinum-8173m_ldlat64-weight-struct_quipper.perf.data";
const SNB: &str = "intel-snb-ep-2s_e5-2690_cycles-numa-topology-hdr_quipper.perf.data";

fn perf_script(file: &PathBuf) -> Option<Vec<(u64, u64, u64)>> {
    let out = match Command::new("perf").args(["script", "-F", "addr,data_src,weight", "-i"]).arg(file).output() {
        Ok(o) => o,
        Err(_) => {
            numascope_testsupport::skip_outside_ci(format_args!(
                "perf script cross-check: `perf` not installed (apt-get install linux-perf)"
            ));
            return None;
        }
    };
    assert!(out.status.success(), "perf script failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let addr = u64::from_str_radix(toks[0], 16).unwrap();
        let ds = u64::from_str_radix(toks[1], 16).unwrap();
        let w: u64 = toks.last().unwrap().parse().unwrap();
        v.push((addr, ds, w));
    }
    Some(v)
}

fn cross_check_perf_script(name: &str, expect: usize) {
    let f = data_dir().join(name);
    let pd = read_perf_data(&f).unwrap();
    let mut mine: Vec<(u64, u64, u64)> = pd
        .samples
        .iter()
        .filter(|s| pd.attrs[s.attr_index].kind != numascope_core::perfdata::EventKind::NonMemory)
        .map(|s| {
            let w = s.sample.weight.map(|w| Weight::decode(w, s.sample.weight_is_struct).latency).unwrap_or(0);
            (s.sample.addr.unwrap(), s.sample.data_src.unwrap(), w)
        })
        .collect();
    assert_eq!(mine.len(), expect, "{name}");
    let Some(mut theirs) = perf_script(&f) else { return };
    mine.sort();
    theirs.sort();
    assert_eq!(mine, theirs, "{name}: every sample's address, data_src and weight must match perf script");
}

#[test]
fn ivb_matches_perf_script() {
    cross_check_perf_script(IVB, 14);
}

#[test]
fn skx_weight_struct_matches_perf_script() {
    cross_check_perf_script(SKX, 14);
}

/// Zen 4: perf 6.1 cannot read the file, so compare with the committed c2c report totals.
#[test]
fn zen4_matches_c2c_report() {
    let dir = data_dir();
    let report =
        std::fs::read_to_string(dir.join("amd-zen4-epyc9254_ibs-op-c2c-phys-addr_ring.c2c-report.txt")).unwrap();
    let val = |label: &str| -> u64 {
        let line = report
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("{label} not in report"));
        line.rsplit(':').next().unwrap().trim().parse().unwrap()
    };
    let s = import_perf_data(&dir.join(ZEN4)).unwrap();
    let c = s.c2c;
    assert_eq!(s.total_samples, val("Total records"));
    assert_eq!(c.load, val("Load Operations"));
    assert_eq!(c.store, val("Store Operations"));
    assert_eq!(c.noparse, val("Unable to parse data source"));
    assert_eq!(c.ld_noadrs, val("Loads - no mapping"));
    assert_eq!(c.st_noadrs, val("Store - no mapping"));
    assert_eq!(c.ld_l1hit, val("Load L1D hit"));
    assert_eq!(c.ld_l2hit, val("Load L2D hit"));
    assert_eq!(c.rmt_hitm, val("Load Remote HITM"));
    assert_eq!(c.lcl_dram, val("Load Local DRAM"));
    assert_eq!(c.rmt_dram, val("Load Remote DRAM"));
    assert_eq!(c.st_l1hit, val("Store L1D Hit"));
    assert_eq!(c.st_na, val("Store No available memory level"));
    // what the trace gets
    assert_eq!(s.skipped_not_load_store, val("Unable to parse data source"));
    assert_eq!(s.skipped_no_address, val("Loads - no mapping") + val("Store - no mapping"));
    assert_eq!(s.by_source.get("local-dram"), Some(&val("Load Local DRAM")));
    assert_eq!(s.by_source.get("l1"), Some(&(val("Load L1D hit") + val("Store L1D Hit"))));
    // a remote-cache HITM on a single-node machine is "remote core, same node": hops 0
    let t = &s.trace.samples;
    for i in 0..t.len() {
        if t.data_source.get(i) == "remote-cache" {
            assert_eq!(t.hops[i], 0);
        }
    }
    let _ = MemDataSrc::decode(0);
    // samples.hitm (format v3): the report's HITM loads, sample by sample, on the lines of its
    // Shared Data Cache Line Table (0x624b89b17180: 2 remote HITM, 0xff3b73af50bb3200: 1).
    let tr = &s.trace;
    let hitm_rows: Vec<usize> = (0..t.len()).filter(|&i| t.hitm[i] > 0).collect();
    assert_eq!(hitm_rows.iter().filter(|&&i| t.hitm[i] == 2).count() as u64, val("Load Remote HITM"));
    assert_eq!(hitm_rows.iter().filter(|&&i| t.hitm[i] == 1).count() as u64, val("Load Local HITM"));
    let mut lines: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for &i in &hitm_rows {
        let addr = tr.pages.address[t.page[i] as usize] + t.offset[i] as u64;
        *lines.entry(addr & !63).or_insert(0) += 1;
    }
    assert_eq!(lines.len() as u64, val("Total Shared Cache Lines"));
    assert_eq!(lines.into_iter().collect::<Vec<_>>(), vec![(0x624b_89b1_7180, 2), (0xff3b_73af_50bb_3200, 1)]);
    assert!(t.hitm.iter().all(|&h| (0..=3).contains(&h)), "every imported sample has DATA_SRC: its class is known");
    // Class 3, a clean line in a remote cache (perf's RMT Load Hit): none in the report; the one
    // remote-cache load on line 0 without HITM had snoop N/A (class 0, in no column of perf's).
    assert_eq!(t.hitm.iter().filter(|&&h| h == 3).count() as u64, val("Load Remote HIT "));
    assert_eq!(c.rmt_hit, val("Load Remote HIT "));
    // samples.stack: each sample's instruction, placed in its module by the file's MMAP records.
    // On line 0 the report's code addresses 0x624b6f7d488a (85 records) and 0x624b6f7d44aa (14)
    // in `bench`: the module offsets end in the same page offsets (mappings are page-aligned).
    let cap = tr.manifest.capture.capabilities.iter().find(|c| c.metric == "code-locations").unwrap();
    assert_eq!(cap.status, "measured", "{}", cap.reason);
    assert!(t.stack.iter().all(|&s| s >= 0));
    let f = &tr.alloc.frames;
    let mut code: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for i in 0..t.len() {
        if t.page[i] >= 0 && (tr.pages.address[t.page[i] as usize] + t.offset[i] as u64) & !63 == 0x624b_89b1_7180 {
            let frames = tr.alloc.stack_frames(t.stack[i] as u32);
            let fr = frames[0] as usize;
            assert_eq!(tr.alloc.modules.path[f.module[fr] as usize].rsplit('/').next(), Some("bench"));
            *code.entry(f.module_offset[fr] & 0xfff).or_insert(0) += 1;
        }
    }
    assert_eq!(code.get(&0x88a), Some(&85), "{code:x?}");
    assert_eq!(code.get(&0x4aa), Some(&14), "{code:x?}");
}

#[test]
fn every_file_imports_to_a_readable_trace() {
    let dir = data_dir();
    let tmp = std::env::temp_dir().join(format!("numascope-import-test-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for (name, rows, nodes) in [(ZEN4, 5855u64, 1usize), (IVB, 14, 4), (SKX, 14, 2), (SNB, 0, 2)] {
        let out = tmp.join(format!("{name}.numascope"));
        let s = numascope_core::perfdata::import_to_file(&dir.join(name), &out).unwrap();
        let back = numascope_core::trace::reader::read_trace(&out).unwrap().to_trace_data();
        assert_eq!(back.samples.len() as u64, rows, "{name}");
        assert_eq!(back.manifest.capture.sample_count, rows, "{name}");
        assert_eq!(back.manifest.origin.kind, "imported");
        assert_eq!(back.manifest.origin.from, Some(serde_json::Value::String(name.into())));
        assert_eq!(back.manifest.machine.nodes.len(), nodes, "{name}");
        assert_eq!(s.trace.samples.len() as u64, rows);
    }
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn clear_errors() {
    let tmp = std::env::temp_dir().join(format!("numascope-import-err-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let not = tmp.join("not.data");
    std::fs::write(&not, b"hello world, not perf").unwrap();
    let e = import_perf_data(&not).unwrap_err().to_string();
    assert!(e.contains("not a perf.data"), "{e}");
    let full = std::fs::read(data_dir().join(IVB)).unwrap();
    let trunc = tmp.join("trunc.data");
    std::fs::write(&trunc, &full[..5000]).unwrap();
    let e = import_perf_data(&trunc).unwrap_err().to_string();
    assert!(e.contains("truncated"), "{e}");
    std::fs::remove_dir_all(&tmp).ok();
}

/// What each real file says about its cpu clock (machine.cpuClockGHz of the import): the
/// CPUDESC header's `@ x.xxGHz` on the Intel files; on the Zen 4 file, whose CPUDESC names no
/// clock, the TSC rate of its TIME_CONV record (2^31 / 740511858 = 2.9 GHz, the EPYC 9254's base
/// clock). The imported trace carries it, with its provenance.
#[test]
fn each_file_gives_its_clock() {
    let dir = data_dir();
    let tmp = std::env::temp_dir().join(format!("numascope-import-clock-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for (name, ghz, source) in [
        (ZEN4, 2.9, "measured:perf.data TIME_CONV record, the kernel's TSC rate 2.9 GHz (2^time_shift / time_mult = 2^31 / 740511858)"),
        (IVB, 2.3, "documented:perf.data CPUDESC header \"Intel(R) Xeon(R) CPU E5-4610 v2 @ 2.30GHz\" names 2.3 GHz"),
        (SKX, 2.0, "documented:perf.data CPUDESC header \"Intel(R) Xeon(R) Platinum 8173M CPU @ 2.00GHz\" names 2 GHz"),
        (SNB, 2.9, "documented:perf.data CPUDESC header \"Intel(R) Xeon(R) CPU E5-2690 0 @ 2.90GHz\" names 2.9 GHz"),
    ] {
        let out = tmp.join(format!("{name}.numascope"));
        numascope_core::perfdata::import_to_file(&dir.join(name), &out).unwrap();
        let m = numascope_core::trace::reader::read_trace(&out).unwrap().to_trace_data().manifest.machine;
        assert_eq!(m.cpu_clock_ghz, Some(ghz), "{name}");
        let p = m.provenance.cpu_clock_ghz.unwrap();
        assert!(p.starts_with(source), "{name}: {p}");
    }
    std::fs::remove_dir_all(&tmp).ok();
    // The Skylake file's TIME_CONV record says the same as its CPUDESC: 2^31 / 1073650027 = 2.0002 GHz.
    let mut skx = read_perf_data(&dir.join(SKX)).unwrap();
    assert_eq!(skx.time_conv, Some((31, 1_073_650_027)));
    skx.cpu_desc = Some("Intel(R) Xeon(R) Platinum 8173M CPU".into());
    assert_eq!(numascope_core::perfdata::import_clock(&skx).0, Some(2.0002));
    // Files without TIME_CONV (perf 3.3, perf 4.4) and no clock in CPUDESC: unknown, said why.
    let mut ivb = read_perf_data(&dir.join(IVB)).unwrap();
    assert_eq!(ivb.time_conv, None);
    ivb.cpu_desc = None;
    let (none, why) = numascope_core::perfdata::import_clock(&ivb);
    assert_eq!(none, None);
    assert!(
        why.starts_with("unavailable:the perf.data file has no CPUDESC header, and it has no TIME_CONV record"),
        "{why}"
    );
    // Hostile TIME_CONV values: a rate out of range, a shift past 63 or a zero multiplier give no clock.
    for (shift, mult) in [(63u64, 1u64), (64, 5), (u64::MAX, 1), (31, 0)] {
        skx.time_conv = Some((shift, mult));
        let (clock, why) = numascope_core::perfdata::import_clock(&skx);
        assert_eq!(clock, None, "({shift}, {mult}): {why}");
        assert!(why.starts_with("unavailable:"), "{why}");
    }
    skx.time_conv = Some((31, 1_073_650_027));
    // A TIME_CONV counter that is not an x86 TSC (arm64: the generic timer) is not the cpu clock.
    skx.cpu_id = Some("0x00000000410fd0c0".into());
    let (arm, why) = numascope_core::perfdata::import_clock(&skx);
    assert_eq!(arm, None);
    assert!(why.contains("not an x86 TSC"), "{why}");
}

/// The Zen 4 c2c file rewritten as `perf c2c record -g` would have written it: CALLCHAIN added
/// to the event's sample_type and a chain in every sample (a user sample: PERF_CONTEXT_USER, its
/// instruction, two return addresses in `bench`; a kernel sample: PERF_CONTEXT_KERNEL, its
/// instruction, then PERF_CONTEXT_USER and the same two user return addresses). The import
/// keeps each sample's instruction innermost (the c2c code addresses do not move) and adds the
/// return addresses as its callers.
#[test]
fn zen4_with_call_chains_imports_the_callers() {
    use numascope_core::decode::perf_file::replace_data_section;
    use numascope_core::decode::sample::*;
    let dir = data_dir();
    let mut file = std::fs::read(dir.join(ZEN4)).unwrap();
    let rd64 = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (attr_size, attrs_at, attrs_len) =
        (rd64(&file, 16) as usize, rd64(&file, 24) as usize, rd64(&file, 32) as usize);
    let (data_at, data_len) = (rd64(&file, 40) as usize, rd64(&file, 48) as usize);
    let sample_type = rd64(&file, attrs_at + 24);
    for a in (attrs_at..attrs_at + attrs_len).step_by(attr_size) {
        assert_eq!(rd64(&file, a + 24), sample_type, "every event of the file samples the same fields");
        file[a + 24..a + 32].copy_from_slice(&(sample_type | SAMPLE_CALLCHAIN).to_le_bytes());
    }
    assert_eq!(sample_type & (SAMPLE_READ | SAMPLE_CALLCHAIN), 0);
    // The EVENT_DESC feature (bit 12) holds a copy of each attr, which readers prefer: patch it too.
    // Its section is the n-th entry of the feature table after the data section, n = the set
    // feature bits below 12; the section is `u32 nr, u32 attr_size`, then per event its attr, `u32
    // nr_ids`, a string (`u32 len` + bytes) and the ids.
    let bits = rd64(&file, 72);
    assert!(bits & 1 << 12 != 0);
    let entry = data_at + data_len + 16 * (bits & ((1 << 12) - 1)).count_ones() as usize;
    let desc = rd64(&file, entry) as usize;
    let rd32 = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let (nr, desc_attr_size) = (rd32(&file, desc), rd32(&file, desc + 4));
    let mut at = desc + 8;
    for _ in 0..nr {
        assert_eq!(rd64(&file, at + 24), sample_type);
        file[at + 24..at + 32].copy_from_slice(&(sample_type | SAMPLE_CALLCHAIN).to_le_bytes());
        let ids = rd32(&file, at + desc_attr_size);
        let name_len = rd32(&file, at + desc_attr_size + 4);
        at += desc_attr_size + 8 + name_len + 8 * ids;
    }
    // CALLCHAIN follows IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU and PERIOD (8 bytes each).
    let before = [
        SAMPLE_IDENTIFIER,
        SAMPLE_IP,
        SAMPLE_TID,
        SAMPLE_TIME,
        SAMPLE_ADDR,
        SAMPLE_ID,
        SAMPLE_STREAM_ID,
        SAMPLE_CPU,
        SAMPLE_PERIOD,
    ];
    let chain_at = 8 * before.iter().filter(|&&b| sample_type & b != 0).count();
    let ip_at = 8 * (sample_type & SAMPLE_IDENTIFIER != 0) as usize;
    const CONTEXT_KERNEL: u64 = (-128i64) as u64;
    const CONTEXT_USER: u64 = (-512i64) as u64;
    let (r1, r2) = (0x624b_6f7d_4101u64, 0x624b_6f7d_4201u64);
    let old = &file[data_at..data_at + data_len];
    let mut new = Vec::with_capacity(old.len() * 2);
    let (mut at, mut samples) = (0, 0);
    while at + 8 <= old.len() {
        let ty = u32::from_le_bytes(old[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(old[at + 6..at + 8].try_into().unwrap()) as usize;
        let rec = &old[at..at + size];
        if ty == 9 {
            let body = &rec[8..];
            let ip = rd64(body, ip_at);
            let chain: Vec<u64> = if ip >= 1 << 47 {
                vec![CONTEXT_KERNEL, ip, CONTEXT_USER, r1, r2]
            } else {
                vec![CONTEXT_USER, ip, r1, r2]
            };
            let mut b = body[..chain_at].to_vec();
            b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
            chain.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
            b.extend_from_slice(&body[chain_at..]);
            new.extend_from_slice(&rec[..6]);
            new.extend_from_slice(&((b.len() + 8) as u16).to_le_bytes());
            new.extend_from_slice(&b);
            samples += 1;
        } else {
            new.extend_from_slice(rec);
        }
        at += size.max(8);
    }
    assert_eq!(samples, 27_447);
    let out = std::env::temp_dir().join(format!("numascope-zen4-g-{}.perf.data", std::process::id()));
    std::fs::write(&out, replace_data_section(&file, &new)).unwrap();
    let s = import_perf_data(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let (tr, t) = (&s.trace, &s.trace.samples);
    let cap = tr.manifest.capture.capabilities.iter().find(|c| c.metric == "code-locations").unwrap();
    assert_eq!(cap.status, "measured", "{}", cap.reason);
    assert!(cap.reason.contains(&format!("{} of them with return addresses", t.len())), "{}", cap.reason);
    let (f, modules) = (&tr.alloc.frames, &tr.alloc.modules);
    let module_of = |fr: u32| modules.path[f.module[fr as usize] as usize].rsplit('/').next().unwrap().to_string();
    let mut code: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    let mut kernel_rows = 0;
    for i in 0..t.len() {
        let line = (tr.pages.address[t.page[i] as usize] + t.offset[i] as u64) & !63;
        let frames = tr.alloc.stack_frames(t.stack[i] as u32);
        if line == 0x624b_89b1_7180 {
            // Innermost: the sampled instruction, as before; then each return address minus one.
            assert_eq!(frames.len(), 3, "row {i}");
            assert_eq!(module_of(frames[0]), "bench");
            *code.entry(f.module_offset[frames[0] as usize] & 0xfff).or_insert(0) += 1;
            assert_eq!((module_of(frames[1]), f.module_offset[frames[1] as usize] & 0xfff), ("bench".into(), 0x100));
            assert_eq!((module_of(frames[2]), f.module_offset[frames[2] as usize] & 0xfff), ("bench".into(), 0x200));
        }
        if line == 0xff3b_73af_50bb_3200 {
            // A kernel sample: the kernel instruction innermost, the user code that entered it after.
            kernel_rows += 1;
            assert_eq!(frames.len(), 3, "row {i}");
            assert!(f.module[frames[0] as usize] < 0 || module_of(frames[0]) != "bench");
            assert_eq!(module_of(frames[1]), "bench");
        }
    }
    assert_eq!(code.get(&0x88a), Some(&85), "{code:x?}");
    assert_eq!(code.get(&0x4aa), Some(&14), "{code:x?}");
    assert_eq!(kernel_rows, 1);
}
