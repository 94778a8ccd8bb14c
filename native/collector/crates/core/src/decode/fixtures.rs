//! Byte-exact fixtures for the decoders, built from the documented layouts (see each table).

use super::data_src::{C2cStats, DataSource, MemDataSrc, MemOp};
use super::ibs::{self, IbsOpRaw};
use super::pebs::{self, PebsFlavor, Weight};
use super::sample::*;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// AMD IBS op PERF_SAMPLE_RAW payloads. Layout: platform.md Q2 "PERF_SAMPLE_RAW payload"
/// (u32 caps = 0x81f: AVAIL|FETCHSAM|OPSAM|RDWROPCNT|OPCNT|ZEN4, then u64 IbsOpCtl 0x41000,
/// IbsOpRip 0x401000, IbsOpData (tag_to_ret 0x30), IbsOpData2, IbsOpData3, IbsDcLinAd
/// 0x7f0000001040, IbsDcPhysAd) and the amd-ibs.h bit fields; expected values follow the
/// kernel's perf_ibs_parse_ld_st_data. Columns: name, hex, op, class, hops, latency (WEIGHT
/// var1 = dc_miss_lat, only for DC-missing loads), phys_addr (only with DcPhyAddrValid).
/// (name, hex payload, op, class, hops, latency, phys_addr).
type IbsFixture = (&'static str, &'static str, MemOp, DataSource, i8, Option<u64>, Option<u64>);
const IBS_FIXTURES: &[IbsFixture] = &[
    ("L1 load, nophys", "1f0800000010040000000000001040000000000000003000000000000000000000000000010002000000000040100000007f00000000000000000000", MemOp::Load, DataSource::L1, 0, None, None),
    ("L1 load, phys", "1f0800000010040000000000001040000000000000003000000000000000000000000000010006000000000040100000007f00004050341200000000", MemOp::Load, DataSource::L1, 0, None, Some(0x12345040)),
    ("L2 load, nophys", "1f0800000010040000000000001040000000000000003000000000000000000000000000810002000000000040100000007f00000000000000000000", MemOp::Load, DataSource::L2, 0, Some(0), None),
    ("L2 load, phys", "1f0800000010040000000000001040000000000000003000000000000000000000000000810006000000000040100000007f00004050341200000000", MemOp::Load, DataSource::L2, 0, Some(0), Some(0x12345040)),
    ("L3 load (Zen4 DataSrc 1 local CCX), nophys", "1f080000001004000000000000104000000000000000300000000000010000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::L3, 0, Some(200), None),
    ("L3 load (Zen4 DataSrc 1 local CCX), phys", "1f080000001004000000000000104000000000000000300000000000010000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::L3, 0, Some(200), Some(0x12345040)),
    ("local DRAM load (DataSrc 3), nophys", "1f080000001004000000000000104000000000000000300000000000030000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::LocalDram, 0, Some(200), None),
    ("local DRAM load (DataSrc 3), phys", "1f080000001004000000000000104000000000000000300000000000030000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::LocalDram, 0, Some(200), Some(0x12345040)),
    ("remote DRAM load (DataSrc 3 + RmtNode), nophys", "1f080000001004000000000000104000000000000000300000000000130000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::RemoteDram, 1, Some(200), None),
    ("remote DRAM load (DataSrc 3 + RmtNode), phys", "1f080000001004000000000000104000000000000000300000000000130000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::RemoteDram, 1, Some(200), Some(0x12345040)),
    ("near-CCX cache load (DataSrc 2), nophys", "1f080000001004000000000000104000000000000000300000000000220000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::RemoteCache, 0, Some(200), None),
    ("near-CCX cache load (DataSrc 2), phys", "1f080000001004000000000000104000000000000000300000000000220000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::RemoteCache, 0, Some(200), Some(0x12345040)),
    ("far-CCX cache load (DataSrc 5), nophys", "1f080000001004000000000000104000000000000000300000000000250000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::RemoteCache, 1, Some(200), None),
    ("far-CCX cache load (DataSrc 5), phys", "1f080000001004000000000000104000000000000000300000000000250000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::RemoteCache, 1, Some(200), Some(0x12345040)),
    ("PMEM load (DataSrc 6), nophys", "1f080000001004000000000000104000000000000000300000000000060000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::Pmem, -1, Some(200), None),
    ("PMEM load (DataSrc 6), phys", "1f080000001004000000000000104000000000000000300000000000060000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::Pmem, -1, Some(200), Some(0x12345040)),
    ("CXL load (DataSrc 8 = hi 1, lo 0), nophys", "1f080000001004000000000000104000000000000000300000000000400000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::Cxl, -1, Some(200), None),
    ("CXL load (DataSrc 8 = hi 1, lo 0), phys", "1f080000001004000000000000104000000000000000300000000000400000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::Cxl, -1, Some(200), Some(0x12345040)),
    ("IO load (DataSrc 7), nophys", "1f080000001004000000000000104000000000000000300000000000070000000000000081001200c800000040100000007f00000000000000000000", MemOp::Load, DataSource::Io, -1, Some(200), None),
    ("IO load (DataSrc 7), phys", "1f080000001004000000000000104000000000000000300000000000070000000000000081001600c800000040100000007f00004050341200000000", MemOp::Load, DataSource::Io, -1, Some(200), Some(0x12345040)),
    ("L1 store, nophys", "1f0800000010040000000000001040000000000000003000000000000000000000000000020002000000000040100000007f00000000000000000000", MemOp::Store, DataSource::L1, 0, None, None),
    ("L1 store, phys", "1f0800000010040000000000001040000000000000003000000000000000000000000000020006000000000040100000007f00004050341200000000", MemOp::Store, DataSource::L1, 0, None, Some(0x12345040)),
    ("L2 store, nophys", "1f0800000010040000000000001040000000000000003000000000000000000000000000820002000000000040100000007f00000000000000000000", MemOp::Store, DataSource::L2, 0, None, None),
    ("L2 store, phys", "1f0800000010040000000000001040000000000000003000000000000000000000000000820006000000000040100000007f00004050341200000000", MemOp::Store, DataSource::L2, 0, None, Some(0x12345040)),
    ("store missing L2, no MAB info, nophys", "1f0800000010040000000000001040000000000000003000000000000000000000000000820012000000000040100000007f00000000000000000000", MemOp::Store, DataSource::Unknown, -1, None, None),
    ("store missing L2, no MAB info, phys", "1f0800000010040000000000001040000000000000003000000000000000000000000000820016000000000040100000007f00004050341200000000", MemOp::Store, DataSource::Unknown, -1, None, Some(0x12345040)),
];

#[test]
fn ibs_raw_fixtures_decode_and_normalise() {
    for (name, hex, op, class, hops, lat, phys) in IBS_FIXTURES {
        let bytes = unhex(hex);
        assert_eq!(bytes.len(), 60, "{name}");
        let raw = IbsOpRaw::parse(&bytes).unwrap();
        assert_eq!(raw.to_bytes(), bytes, "{name}: round trip");
        let f = raw.fields();
        assert_eq!(f.lin_addr, Some(0x7f00_0000_1040), "{name}");
        assert_eq!(f.phys_addr, *phys, "{name}");
        assert_eq!(f.tag_to_ret_ctr, 0x30, "{name}");
        assert!(f.op_val, "{name}");
        let n = ibs::normalise(&raw, None, true);
        assert_eq!(n.weight_var1, *lat, "{name}: latency");
        assert_eq!(n.addr, Some(0x7f00_0000_1040), "{name}");
        assert_eq!(n.phys_addr, *phys, "{name}");
        let c = MemDataSrc::decode(n.data_src).classify();
        assert_eq!(
            (c.op, c.source, c.hops),
            (*op, *class, *hops),
            "{name}: {}",
            super::data_src::describe(&MemDataSrc::decode(n.data_src))
        );
    }
}

#[test]
fn ibs_extra_regs_and_errors() {
    // caps with BRNTRGT (bit 5) and OPDATA4 (bit 10): two more u64 after IbsDcPhysAd.
    let mut raw = IbsOpRaw {
        caps: 0x81f | (1 << 5) | (1 << 10),
        op_data3: 1,
        br_target: Some(0xaa),
        op_data4: Some(0xbb),
        ..Default::default()
    };
    let b = raw.to_bytes();
    assert_eq!(b.len(), 76);
    assert_eq!(IbsOpRaw::parse(&b).unwrap(), raw);
    raw.caps = 0x81f | (1 << 10);
    raw.br_target = None;
    assert_eq!(IbsOpRaw::parse(&raw.to_bytes()).unwrap().op_data4, Some(0xbb));
    assert!(IbsOpRaw::parse(&b[..40]).is_err());
    assert!(IbsOpRaw::parse(&b[..63]).is_err());
    // not a load or store -> PERF_MEM_NA, which the importer skips
    let na = ibs::normalise(&IbsOpRaw { caps: 0x81f, ..Default::default() }, None, true);
    assert!(MemDataSrc::decode(na.data_src).is_non_memory());
    // pre-Zen4 DataSrc 3 bits: hi bits ignored
    let pre = IbsOpRaw {
        caps: 0x1f,
        op_data2: 3 | (1 << 6),
        op_data3: 1 | (1 << 7) | (1 << 20) | (1 << 17),
        ..Default::default()
    };
    assert_eq!(ibs::normalised_data_src(&pre, None).classify().source, DataSource::LocalDram);
}

/// Generic perf_mem_data_src values (include/uapi/linux/perf_event.h layout, platform.md Q2
/// table): name, raw u64, op, class, trace hops (perf mem_hops − 1).
const DATA_SRC_FIXTURES: &[(&str, u64, MemOp, DataSource, i8)] = &[
    ("remote DRAM, HOPS_1 (other node same socket)", 0x0000103a00002042, MemOp::Load, DataSource::RemoteDram, 1),
    ("remote DRAM, HOPS_2 (other socket)", 0x0000183a00004042, MemOp::Load, DataSource::RemoteDram, 2),
    ("remote DRAM, HOPS_3 (other board)", 0x0000203a00004042, MemOp::Load, DataSource::RemoteDram, 3),
    ("remote DRAM, legacy REM_RAM1 only (no hops)", 0x0000000000002042, MemOp::Load, DataSource::RemoteDram, -1),
    (
        "remote cache near: REM_CCE1|ANY_CACHE|REMOTE|HOPS_0, HITM",
        0x0000083600808042,
        MemOp::Load,
        DataSource::RemoteCache,
        0,
    ),
    ("remote cache far: REM_CCE2|ANY_CACHE|REMOTE|HOPS_1", 0x0000103600010042, MemOp::Load, DataSource::RemoteCache, 1),
    ("local PMEM", 0x0000001c00001042, MemOp::Load, DataSource::Pmem, -1),
    ("remote PMEM HOPS_1", 0x0000103c00002042, MemOp::Load, DataSource::Pmem, 1),
    ("CXL", 0x0000001200001042, MemOp::Load, DataSource::Cxl, -1),
    ("IO", 0x0000001400020042, MemOp::Load, DataSource::Io, -1),
    ("uncached", 0x0000001000040042, MemOp::Load, DataSource::Uncached, -1),
    ("local DRAM lvl_num only", 0x0000001a00000042, MemOp::Load, DataSource::LocalDram, 0),
    ("L1 store hit", 0x0000000200000144, MemOp::Store, DataSource::L1, 0),
    ("store L1 miss", 0x0000000000000184, MemOp::Store, DataSource::Unknown, -1),
    ("L3 hit (lvl_num L3)", 0x0000000600000842, MemOp::Load, DataSource::L3, 0),
    ("L2 store (IBS)", 0x0000000400000444, MemOp::Store, DataSource::L2, 0),
    ("LFB", 0x0000001800000242, MemOp::Load, DataSource::Lfb, 0),
];

#[test]
fn data_src_fixtures_classify() {
    for (name, raw, op, class, hops) in DATA_SRC_FIXTURES {
        let d = MemDataSrc::decode(*raw);
        assert_eq!(d.encode(), *raw, "{name}: encode round trip");
        let c = d.classify();
        assert_eq!((c.op, c.source, c.hops), (*op, *class, *hops), "{name}: {}", super::data_src::describe(&d));
    }
}

#[test]
fn data_src_values_seen_in_real_files() {
    // Values printed by `perf script -F data_src` for the committed Intel files.
    let d = MemDataSrc::decode(0x68100142); // IVB-EP, kernel 4.4: "LVL L1 hit|SNP None|TLB L1 or L2 hit"
    assert_eq!((d.op, d.lvl, d.snoop, d.lvl_num), (2, 0xa, 2, 0));
    assert_eq!(d.classify().source, DataSource::L1);
    let d = MemDataSrc::decode(0x11868100242); // SKX: "LFB/MAB hit", lvl_num LFB
    assert_eq!(d.classify().source, DataSource::Lfb);
    assert_eq!(MemDataSrc::decode(0x10650100842).classify().source, DataSource::L3);
    assert_eq!(MemDataSrc::decode(super::data_src::PERF_MEM_NA).classify().source, DataSource::Unknown);
}

/// Intel PEBS load-latency data source index (dse bits 0-3) → class, following ds.c
/// pebs_data_source[] (platform.md Q2 "Intel PEBS").
#[test]
fn pebs_data_source_table() {
    use DataSource::*;
    let expect = [
        Unknown,
        L1,
        Lfb,
        L2,
        L3,
        L3,
        L3,
        L3,
        RemoteCache,
        RemoteCache,
        LocalDram,
        RemoteDram,
        LocalDram,
        RemoteDram,
        Io,
        Uncached,
    ];
    for (i, cls) in expect.iter().enumerate() {
        let v = pebs::load_latency_data(i as u64, PebsFlavor::default());
        let c = MemDataSrc::decode(v).classify();
        assert_eq!(c.source, *cls, "dse {i:#x}");
        assert_eq!(c.op, MemOp::Load, "dse {i:#x}");
    }
    // STLB miss (bit 4) and lock (bit 5)
    let d = MemDataSrc::decode(pebs::load_latency_data(0x31, PebsFlavor::default()));
    assert_eq!((d.dtlb, d.lock), (super::data_src::dtlb::MISS | super::data_src::dtlb::L2, 2));
    let st = MemDataSrc::decode(pebs::store_data(true, false, false)).classify();
    assert_eq!((st.op, st.source), (MemOp::Store, DataSource::L1));
    let st = MemDataSrc::decode(pebs::store_data(false, false, false)).classify();
    assert_eq!((st.op, st.source), (MemOp::Store, DataSource::Unknown));
    assert_eq!(pebs::pebs_event_for_config(0x01cd), pebs::PebsEvent::Load);
    assert_eq!(pebs::pebs_event_for_config(0x82d0), pebs::PebsEvent::Store);
}

#[test]
fn weight_formats() {
    // WEIGHT_STRUCT: var1_dw = 0x12c (300 cycles), var2_w = 0x21, var3_w = 0
    let w = Weight::decode(u64::from_le_bytes(unhex("2c01000021000000").try_into().unwrap()), true);
    assert_eq!((w.latency, w.var2, w.var3), (300, 0x21, 0));
    // old u64 WEIGHT: the same bytes are one number
    let w = Weight::decode(u64::from_le_bytes(unhex("2c01000021000000").try_into().unwrap()), false);
    assert_eq!(w.latency, 0x0000_0021_0000_012c);
}

/// Full PERF_RECORD_SAMPLE bodies (perf_output_sample order), `perf mem record` on Intel:
/// sample_type IP|TID|TIME|ADDR|PERIOD|DATA_SRC|WEIGHT_STRUCT (0x0100_810f) without, and with
/// PHYS_ADDR (0x0108_810f).
#[test]
fn sample_body_fixtures() {
    let st =
        SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_ADDR | SAMPLE_PERIOD | SAMPLE_DATA_SRC | SAMPLE_WEIGHT_STRUCT;
    assert_eq!(st, 0x0100_810f);
    let layout = SampleLayout { sample_type: st, ..Default::default() };
    // ip 0x401000 | pid 100 tid 101 | time 1e9 | addr 0x7f0000001040 | period 4000 |
    // weight var1 300 var2 0x21 | data_src 0x0000103a00002042 (remote DRAM, HOPS_1)
    let hex = concat!(
        "0010400000000000",
        "6400000065000000",
        "00ca9a3b00000000",
        "40100000007f0000",
        "a00f000000000000",
        "2c01000021000000",
        "422000003a100000"
    );
    let s = parse_sample(&unhex(hex), &layout).unwrap();
    assert_eq!(s.ip, Some(0x401000));
    assert_eq!((s.pid, s.tid), (Some(100), Some(101)));
    assert_eq!(s.time, Some(1_000_000_000));
    assert_eq!(s.addr, Some(0x7f00_0000_1040));
    assert_eq!(s.period, Some(4000));
    assert_eq!(Weight::decode(s.weight.unwrap(), s.weight_is_struct).latency, 300);
    let c = MemDataSrc::decode(s.data_src.unwrap()).classify();
    assert_eq!((c.op, c.source, c.hops), (MemOp::Load, DataSource::RemoteDram, 1));
    assert_eq!(s.phys_addr, None);
    assert_eq!(encode_sample(&s, &layout), unhex(hex));
    // with PHYS_ADDR (after DATA_SRC)
    let layout2 = SampleLayout { sample_type: st | SAMPLE_PHYS_ADDR, ..Default::default() };
    let hex2 = format!("{hex}{}", "4050341200000000");
    let s2 = parse_sample(&unhex(&hex2), &layout2).unwrap();
    assert_eq!(s2.phys_addr, Some(0x1234_5040));
    assert_eq!(s2.data_src, s.data_src);
    // truncated body -> error naming the field
    let e = parse_sample(&unhex(&hex2)[..60], &layout2).unwrap_err();
    assert_eq!(e.field, "PHYS_ADDR");
    // RAW + CPU + IDENTIFIER ordering (perf record -e ibs_op// -R): identifier, ip, tid, time,
    // addr, cpu, period, raw (u32 size 60 + 60 bytes = 64, already 8-aligned), data_src
    let st3 = SAMPLE_IDENTIFIER
        | SAMPLE_IP
        | SAMPLE_TID
        | SAMPLE_TIME
        | SAMPLE_ADDR
        | SAMPLE_CPU
        | SAMPLE_PERIOD
        | SAMPLE_RAW
        | SAMPLE_DATA_SRC;
    let layout3 = SampleLayout { sample_type: st3, ..Default::default() };
    let raw = unhex(IBS_FIXTURES[8].1); // remote DRAM load, no phys
    let s3 = PerfSample {
        identifier: Some(7),
        ip: Some(1),
        pid: Some(2),
        tid: Some(3),
        time: Some(4),
        addr: Some(0x7f00_0000_1040),
        cpu: Some(5),
        period: Some(16),
        raw: Some(raw.clone()),
        data_src: Some(ibs::normalise(&IbsOpRaw::parse(&raw).unwrap(), None, false).data_src),
        ..Default::default()
    };
    let body = encode_sample(&s3, &layout3);
    assert_eq!(body.len(), 8 * 7 + 64 + 8);
    assert_eq!(parse_sample(&body, &layout3).unwrap(), s3);
}

#[test]
fn c2c_stats_port() {
    let mut st = C2cStats::default();
    st.add(&MemDataSrc::decode(0x0000103a00002042), 0x1000); // remote DRAM via REM_RAM1
    st.add(&MemDataSrc::decode(super::data_src::PERF_MEM_NA), 0);
    assert_eq!((st.load, st.rmt_dram, st.noparse), (1, 1, 1));
}
