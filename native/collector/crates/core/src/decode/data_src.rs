//! `union perf_mem_data_src` (PERF_SAMPLE_DATA_SRC): the raw u64 → all fields, and the
//! classification into the trace's `data_source` / `op` / `hops` columns.
//!
//! Bit layout: `include/uapi/linux/perf_event.h` (little-endian bitfields):
//!
//! | bits  | field       |
//! |-------|-------------|
//! | 0-4   | mem_op      |
//! | 5-18  | mem_lvl     |
//! | 19-23 | mem_snoop   |
//! | 24-25 | mem_lock    |
//! | 26-32 | mem_dtlb    |
//! | 33-36 | mem_lvl_num |
//! | 37    | mem_remote  |
//! | 38-39 | mem_snoopx  |
//! | 40-42 | mem_blk     |
//! | 43-45 | mem_hops    |
//! | 46-50 | mem_region  |

/// mem_op values.
pub mod op {
    pub const NA: u64 = 0x01;
    pub const LOAD: u64 = 0x02;
    pub const STORE: u64 = 0x04;
    pub const PFETCH: u64 = 0x08;
    pub const EXEC: u64 = 0x10;
}
/// mem_lvl (legacy) values.
pub mod lvl {
    pub const NA: u64 = 0x01;
    pub const HIT: u64 = 0x02;
    pub const MISS: u64 = 0x04;
    pub const L1: u64 = 0x08;
    pub const LFB: u64 = 0x10;
    pub const L2: u64 = 0x20;
    pub const L3: u64 = 0x40;
    pub const LOC_RAM: u64 = 0x80;
    pub const REM_RAM1: u64 = 0x100;
    pub const REM_RAM2: u64 = 0x200;
    pub const REM_CCE1: u64 = 0x400;
    pub const REM_CCE2: u64 = 0x800;
    pub const IO: u64 = 0x1000;
    pub const UNC: u64 = 0x2000;
}
/// mem_snoop values.
pub mod snoop {
    pub const NA: u64 = 0x01;
    pub const NONE: u64 = 0x02;
    pub const HIT: u64 = 0x04;
    pub const MISS: u64 = 0x08;
    pub const HITM: u64 = 0x10;
}
/// mem_snoopx values.
pub mod snoopx {
    pub const FWD: u64 = 0x01;
    pub const PEER: u64 = 0x02;
}
/// mem_lock values.
pub mod lock {
    pub const NA: u64 = 0x01;
    pub const LOCKED: u64 = 0x02;
}
/// mem_dtlb values.
pub mod dtlb {
    pub const NA: u64 = 0x01;
    pub const HIT: u64 = 0x02;
    pub const MISS: u64 = 0x04;
    pub const L1: u64 = 0x08;
    pub const L2: u64 = 0x10;
    pub const WK: u64 = 0x20;
    pub const OS: u64 = 0x40;
}
/// mem_lvl_num values.
pub mod lvlnum {
    pub const L1: u64 = 0x01;
    pub const L2: u64 = 0x02;
    pub const L3: u64 = 0x03;
    pub const L4: u64 = 0x04;
    pub const L2_MHB: u64 = 0x05;
    pub const MSC: u64 = 0x06;
    pub const L0: u64 = 0x07;
    pub const UNC: u64 = 0x08;
    pub const CXL: u64 = 0x09;
    pub const IO: u64 = 0x0a;
    pub const ANY_CACHE: u64 = 0x0b;
    pub const LFB: u64 = 0x0c;
    pub const RAM: u64 = 0x0d;
    pub const PMEM: u64 = 0x0e;
    pub const NA: u64 = 0x0f;
}
/// mem_blk values.
pub mod blk {
    pub const NA: u64 = 0x01;
    pub const DATA: u64 = 0x02;
    pub const ADDR: u64 = 0x04;
}
/// mem_hops values (perf numbering: 0 = n/a, 1 = HOPS_0 … 4 = HOPS_3).
pub mod hops {
    pub const HOPS_0: u64 = 1;
    pub const HOPS_1: u64 = 2;
    pub const HOPS_2: u64 = 3;
    pub const HOPS_3: u64 = 4;
}

/// Shift of each field.
pub mod shift {
    pub const OP: u32 = 0;
    pub const LVL: u32 = 5;
    pub const SNOOP: u32 = 19;
    pub const LOCK: u32 = 24;
    pub const DTLB: u32 = 26;
    pub const LVLNUM: u32 = 33;
    pub const REMOTE: u32 = 37;
    pub const SNOOPX: u32 = 38;
    pub const BLK: u32 = 40;
    pub const HOPS: u32 = 43;
    pub const REGION: u32 = 46;
}

/// `PERF_MEM_NA`: every field "not available" (what the kernel writes for non-memory samples).
pub const PERF_MEM_NA: u64 = op::NA
    | (lvl::NA << shift::LVL)
    | (snoop::NA << shift::SNOOP)
    | (lock::NA << shift::LOCK)
    | (dtlb::NA << shift::DTLB)
    | (lvlnum::NA << shift::LVLNUM);

/// Every field of a `perf_mem_data_src`, unshifted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MemDataSrc {
    pub raw: u64,
    pub op: u64,
    pub lvl: u64,
    pub snoop: u64,
    pub lock: u64,
    pub dtlb: u64,
    pub lvl_num: u64,
    pub remote: bool,
    pub snoopx: u64,
    pub blk: u64,
    /// perf numbering: 0 n/a, 1 HOPS_0 (remote core, same node), 2 HOPS_1 (remote node, same
    /// socket), 3 HOPS_2 (remote socket, same board), 4 HOPS_3 (remote board).
    pub hops: u64,
    /// Linux 7.0+ mem_region (0 = NA).
    pub region: u64,
}

const fn bits(v: u64, shift: u32, width: u32) -> u64 {
    (v >> shift) & ((1u64 << width) - 1)
}

/// Access kind for the trace's `op` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOp {
    Load,
    Store,
    Unknown,
}

impl MemOp {
    pub fn as_str(self) -> &'static str {
        match self {
            MemOp::Load => "load",
            MemOp::Store => "store",
            MemOp::Unknown => "unknown",
        }
    }
}

/// The trace's `data_source` classes (docs/trace-format.md, samples table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataSource {
    L1,
    Lfb,
    L2,
    L3,
    LocalDram,
    RemoteDram,
    RemoteCache,
    Pmem,
    Cxl,
    Io,
    Uncached,
    Unknown,
}

impl DataSource {
    pub const ALL: [DataSource; 12] = [
        DataSource::L1,
        DataSource::Lfb,
        DataSource::L2,
        DataSource::L3,
        DataSource::LocalDram,
        DataSource::RemoteDram,
        DataSource::RemoteCache,
        DataSource::Pmem,
        DataSource::Cxl,
        DataSource::Io,
        DataSource::Uncached,
        DataSource::Unknown,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            DataSource::L1 => "l1",
            DataSource::Lfb => "lfb",
            DataSource::L2 => "l2",
            DataSource::L3 => "l3",
            DataSource::LocalDram => "local-dram",
            DataSource::RemoteDram => "remote-dram",
            DataSource::RemoteCache => "remote-cache",
            DataSource::Pmem => "pmem",
            DataSource::Cxl => "cxl",
            DataSource::Io => "io",
            DataSource::Uncached => "uncached",
            DataSource::Unknown => "unknown",
        }
    }
    /// Served from the sampling cpu's own node (caches of this core/CCX, or local DRAM).
    pub fn is_local(self) -> bool {
        matches!(self, DataSource::L1 | DataSource::Lfb | DataSource::L2 | DataSource::L3 | DataSource::LocalDram)
    }
}

/// What a sample becomes in the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    pub op: MemOp,
    pub source: DataSource,
    /// Trace convention: -1 unknown, 0 same node, 1 other node same socket, 2 other socket,
    /// 3 other board.
    pub hops: i8,
}

impl MemDataSrc {
    pub fn decode(raw: u64) -> Self {
        MemDataSrc {
            raw,
            op: bits(raw, shift::OP, 5),
            lvl: bits(raw, shift::LVL, 14),
            snoop: bits(raw, shift::SNOOP, 5),
            lock: bits(raw, shift::LOCK, 2),
            dtlb: bits(raw, shift::DTLB, 7),
            lvl_num: bits(raw, shift::LVLNUM, 4),
            remote: bits(raw, shift::REMOTE, 1) == 1,
            snoopx: bits(raw, shift::SNOOPX, 2),
            blk: bits(raw, shift::BLK, 3),
            hops: bits(raw, shift::HOPS, 3),
            region: bits(raw, shift::REGION, 5),
        }
    }

    /// Re-encodes the fields (inverse of [`MemDataSrc::decode`]; `raw` is ignored).
    pub fn encode(&self) -> u64 {
        (self.op << shift::OP)
            | (self.lvl << shift::LVL)
            | (self.snoop << shift::SNOOP)
            | (self.lock << shift::LOCK)
            | (self.dtlb << shift::DTLB)
            | (self.lvl_num << shift::LVLNUM)
            | ((self.remote as u64) << shift::REMOTE)
            | (self.snoopx << shift::SNOOPX)
            | (self.blk << shift::BLK)
            | (self.hops << shift::HOPS)
            | (self.region << shift::REGION)
    }

    pub fn mem_op(&self) -> MemOp {
        if self.op & op::LOAD != 0 {
            MemOp::Load
        } else if self.op & op::STORE != 0 {
            MemOp::Store
        } else {
            MemOp::Unknown
        }
    }

    /// True when the sample is not a memory access at all (perf prints "OP N/A" / "N/A"):
    /// neither LOAD nor STORE (nor PFETCH) is set.
    pub fn is_non_memory(&self) -> bool {
        self.op & (op::LOAD | op::STORE | op::PFETCH) == 0
    }

    /// The `data_source` class.
    ///
    /// Follows perf's `c2c_decode_stats` (tools/perf/util/mem-events.c) with the upstream fix
    /// that only counts `mem_remote` as remote DRAM when `mem_lvl_num` is RAM/PMEM (and as a
    /// remote cache only for cache levels), so both old kernels (legacy `mem_lvl` bits only,
    /// e.g. Linux 4.4 PEBS) and new ones (`mem_lvl_num` + `mem_remote` + `mem_hops`, e.g. AMD
    /// IBS) land in the same class. Precedence, first match wins:
    ///
    /// 1. `mem_lvl` has MISS but not HIT: the named level *missed*, the source is unknown
    ///    (PEBS 0x00 "unknown L3 miss", stores that missed L1).
    /// 2. lvl_num PMEM → pmem; lvl_num CXL → cxl (local or remote: the class names the medium,
    ///    `hops` says how far).
    /// 3. lvl IO or lvl_num IO → io; lvl UNC or lvl_num UNC → uncached.
    /// 4. lvl REM_RAM1/REM_RAM2, or remote with lvl_num RAM → remote-dram.
    /// 5. lvl LOC_RAM or lvl_num RAM → local-dram.
    /// 6. lvl REM_CCE1/REM_CCE2, or remote with a cache lvl_num (L2, L3, L4, ANY_CACHE) →
    ///    remote-cache (HOPS_0 = another core/CCX of the *same* node: still remote-cache, hops 0).
    /// 7. lvl_num L3/L4/MSC/ANY_CACHE or lvl L3 → l3; L2/L2_MHB → l2; LFB → lfb; L1/L0 → l1.
    /// 8. otherwise unknown (lvl NA, lvl_num NA, all zero).
    pub fn source(&self) -> DataSource {
        let l = self.lvl;
        let n = self.lvl_num;
        if l & lvl::MISS != 0 && l & lvl::HIT == 0 {
            return DataSource::Unknown;
        }
        if n == lvlnum::PMEM {
            return DataSource::Pmem;
        }
        if n == lvlnum::CXL {
            return DataSource::Cxl;
        }
        if l & lvl::IO != 0 || n == lvlnum::IO {
            return DataSource::Io;
        }
        if l & lvl::UNC != 0 || n == lvlnum::UNC {
            return DataSource::Uncached;
        }
        if l & (lvl::REM_RAM1 | lvl::REM_RAM2) != 0 || (self.remote && n == lvlnum::RAM) {
            return DataSource::RemoteDram;
        }
        if l & lvl::LOC_RAM != 0 || n == lvlnum::RAM {
            return DataSource::LocalDram;
        }
        let cache_num = matches!(n, lvlnum::L2 | lvlnum::L3 | lvlnum::L4 | lvlnum::ANY_CACHE);
        if l & (lvl::REM_CCE1 | lvl::REM_CCE2) != 0 || (self.remote && cache_num) {
            return DataSource::RemoteCache;
        }
        if matches!(n, lvlnum::L3 | lvlnum::L4 | lvlnum::MSC | lvlnum::ANY_CACHE) || l & lvl::L3 != 0 {
            return DataSource::L3;
        }
        if matches!(n, lvlnum::L2 | lvlnum::L2_MHB) || l & lvl::L2 != 0 {
            return DataSource::L2;
        }
        if n == lvlnum::LFB || l & lvl::LFB != 0 {
            return DataSource::Lfb;
        }
        if matches!(n, lvlnum::L1 | lvlnum::L0) || l & lvl::L1 != 0 {
            return DataSource::L1;
        }
        DataSource::Unknown
    }

    /// Hop distance in the trace convention: perf `mem_hops` 1..4 (HOPS_0..HOPS_3) becomes
    /// 0..3 (`mem_hops − 1`). Without `mem_hops` (0 = n/a), a source served by this node's
    /// caches or local DRAM is 0 (same node) and everything else is -1 (unknown: e.g. legacy
    /// `REM_RAM1` says "remote" but not how many hops in the trace's socket/board sense).
    pub fn trace_hops(&self, source: DataSource) -> i8 {
        if (1..=4).contains(&self.hops) {
            return self.hops as i8 - 1;
        }
        if source.is_local() {
            0
        } else {
            -1
        }
    }

    pub fn classify(&self) -> Classified {
        let source = self.source();
        Classified { op: self.mem_op(), source, hops: self.trace_hops(source) }
    }
}

/// perf c2c's class of a load served by another core's cache, by `c2c_decode_stats`'s rules (as
/// [`C2cStats::add`]): 1 a load that hit a modified line in the node's LLC (another core's:
/// local HITM), 2 a load served by a modified line of a remote cache (remote HITM), 3 a load
/// served by a clean line of a remote cache (perf's "RMT Load Hit": snoop HIT, or a peer), else
/// 0 (a remote-cache load whose snoop result is none of these counts in no c2c column).
pub fn hitm_class(d: &MemDataSrc) -> i8 {
    let (l, n) = (d.lvl, d.lvl_num);
    if d.op & op::LOAD == 0 || l & lvl::HIT == 0 {
        return 0;
    }
    if l & lvl::L3 != 0 && d.snoop & snoop::HITM != 0 {
        return 1;
    }
    let remote_cache = l & (lvl::REM_CCE1 | lvl::REM_CCE2) != 0 || (d.remote && n == lvlnum::ANY_CACHE);
    if remote_cache {
        if d.snoop & snoop::HIT != 0 {
            return 3;
        }
        if d.snoop & snoop::HITM != 0 {
            return 2;
        }
        if d.snoopx & snoopx::PEER != 0 {
            return 3;
        }
    }
    0
}

/// c2c-style counters (perf's `struct c2c_stats`, the fields `perf c2c report` prints in its
/// "Trace Event Information" block), computed by a port of `c2c_decode_stats` with the
/// upstream RAM/PMEM gating of `mem_remote`. Used to cross-check imports against a report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct C2cStats {
    pub nr_entries: u64,
    pub locks: u64,
    pub load: u64,
    pub ld_noadrs: u64,
    pub ld_uncache: u64,
    pub ld_io: u64,
    pub ld_fbhit: u64,
    pub ld_l1hit: u64,
    pub ld_l2hit: u64,
    pub ld_llchit: u64,
    pub lcl_hitm: u64,
    pub rmt_hitm: u64,
    pub rmt_hit: u64,
    pub lcl_dram: u64,
    pub rmt_dram: u64,
    pub ld_miss: u64,
    pub store: u64,
    pub st_noadrs: u64,
    pub st_uncache: u64,
    pub st_l1hit: u64,
    pub st_l1miss: u64,
    pub st_na: u64,
    pub noparse: u64,
}

impl C2cStats {
    /// Adds one sample (data_src and data address), as `c2c_decode_stats` does.
    pub fn add(&mut self, d: &MemDataSrc, daddr: u64) {
        let l = d.lvl;
        let n = d.lvl_num;
        let mrem = d.remote;
        self.nr_entries += 1;
        if d.lock & lock::LOCKED != 0 {
            self.locks += 1;
        }
        if d.op & op::LOAD != 0 {
            self.load += 1;
            if daddr == 0 {
                self.ld_noadrs += 1;
                return;
            }
            if l & lvl::HIT != 0 {
                if l & lvl::UNC != 0 {
                    self.ld_uncache += 1;
                }
                if l & lvl::IO != 0 {
                    self.ld_io += 1;
                }
                if l & lvl::LFB != 0 {
                    self.ld_fbhit += 1;
                }
                if l & lvl::L1 != 0 {
                    self.ld_l1hit += 1;
                }
                if l & lvl::L2 != 0 {
                    self.ld_l2hit += 1;
                }
                if l & lvl::L3 != 0 {
                    if d.snoop & snoop::HITM != 0 {
                        self.lcl_hitm += 1;
                    } else {
                        self.ld_llchit += 1;
                    }
                }
                if l & lvl::LOC_RAM != 0 {
                    self.lcl_dram += 1;
                }
                if l & (lvl::REM_RAM1 | lvl::REM_RAM2) != 0 || (mrem && (n == lvlnum::RAM || n == lvlnum::PMEM)) {
                    self.rmt_dram += 1;
                }
                if l & (lvl::REM_CCE1 | lvl::REM_CCE2) != 0 || (mrem && n == lvlnum::ANY_CACHE) {
                    if d.snoop & snoop::HIT != 0 {
                        self.rmt_hit += 1;
                    } else if d.snoop & snoop::HITM != 0 {
                        self.rmt_hitm += 1;
                    } else if d.snoopx & snoopx::PEER != 0 {
                        self.rmt_hit += 1;
                    }
                }
                if l & lvl::MISS != 0 {
                    self.ld_miss += 1;
                }
            } else {
                self.ld_miss += 1;
            }
        } else if d.op & op::STORE != 0 {
            self.store += 1;
            if daddr == 0 {
                self.st_noadrs += 1;
                return;
            }
            if l & lvl::HIT != 0 {
                if l & lvl::UNC != 0 {
                    self.st_uncache += 1;
                }
                if l & lvl::L1 != 0 {
                    self.st_l1hit += 1;
                }
            }
            if l & lvl::MISS != 0 && l & lvl::L1 != 0 {
                self.st_l1miss += 1;
            }
            if l & lvl::NA != 0 {
                self.st_na += 1;
            }
        } else {
            self.noparse += 1;
        }
    }
}

/// A one-line rendering close to `perf script`'s data_src column, for diagnostics.
pub fn describe(d: &MemDataSrc) -> String {
    let c = d.classify();
    format!(
        "op={} lvl={:#x} lvl_num={:#x} remote={} snoop={:#x} snoopx={:#x} hops={} -> {} hops {}",
        c.op.as_str(),
        d.lvl,
        d.lvl_num,
        d.remote as u8,
        d.snoop,
        d.snoopx,
        d.hops,
        c.source.as_str(),
        c.hops
    )
}
