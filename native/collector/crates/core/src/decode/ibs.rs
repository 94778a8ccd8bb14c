//! AMD IBS op samples: the PERF_SAMPLE_RAW payload (`struct perf_ibs_data`) → register fields,
//! and the kernel's normalisation of those registers into `perf_mem_data_src`, weight, addr
//! and phys_addr (`perf_ibs_parse_ld_st_data` in `arch/x86/events/amd/ibs.c`).
//!
//! Layouts: the kernel's PERF_SAMPLE_RAW payload and the bit fields of
//! `arch/x86/include/asm/amd-ibs.h`, PPR for Family 19h Model 01h B1, 55898 Rev 0.35.
//! Raw payload (after PERF_SAMPLE_RAW's own u32 size): `u32 caps` then `u64 regs[]`:
//! IbsOpCtl, IbsOpRip, IbsOpData, IbsOpData2, IbsOpData3, IbsDcLinAd, IbsDcPhysAd, then only if
//! present (caps bits 5 and 10, in this order) IbsBrTarget and IbsOpData4.

use super::data_src::{dtlb, lock, lvl, lvlnum, op, shift, snoop, MemDataSrc};

/// IBS capability bits (CPUID 0x8000001B EAX, `IBS_CAPS_*`).
pub mod caps {
    pub const AVAIL: u32 = 1 << 0;
    pub const FETCHSAM: u32 = 1 << 1;
    pub const OPSAM: u32 = 1 << 2;
    pub const RDWROPCNT: u32 = 1 << 3;
    pub const OPCNT: u32 = 1 << 4;
    pub const BRNTRGT: u32 = 1 << 5;
    pub const OPCNTEXT: u32 = 1 << 6;
    pub const RIPINVALIDCHK: u32 = 1 << 7;
    pub const OPBRNFUSE: u32 = 1 << 8;
    pub const FETCHCTLEXTD: u32 = 1 << 9;
    pub const OPDATA4: u32 = 1 << 10;
    pub const ZEN4: u32 = 1 << 11;
    pub const OPLDLAT: u32 = 1 << 12;
    pub const OPDTLBPGSIZE: u32 = 1 << 19;
}

/// DataSrc values of IbsOpData2 (pre-Zen4: 3 bits; Zen4+: `hi<<3 | lo`).
pub mod src {
    pub const LOC_CACHE: u8 = 2; // pre-Zen4: local cache
    pub const DRAM: u8 = 3;
    pub const REM_CACHE: u8 = 4; // pre-Zen4: remote cache
    pub const IO: u8 = 7;
    pub const EXT_LOC_CACHE: u8 = 1; // Zen4: local L3 / CCX
    pub const EXT_NEAR_CCX_CACHE: u8 = 2; // Zen4: another CCX, same node
    pub const EXT_DRAM: u8 = 3;
    pub const EXT_FAR_CCX_CACHE: u8 = 5; // Zen4: another node
    pub const EXT_PMEM: u8 = 6;
    pub const EXT_IO: u8 = 7;
    pub const EXT_EXT_MEM: u8 = 8; // Zen4: extension memory (CXL)
    pub const EXT_PEER_AGENT_MEM: u8 = 12;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IbsError {
    #[error("IBS raw payload of {0} bytes is too short: need 4 (caps) + 7 × 8 (IbsOpCtl..IbsDcPhysAd) = 60")]
    TooShort(usize),
    #[error("IBS raw payload of {0} bytes is not 4 + a multiple of 8")]
    BadLength(usize),
}

/// One IBS op sample's registers, as the kernel put them into PERF_SAMPLE_RAW.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IbsOpRaw {
    pub caps: u32,
    pub op_ctl: u64,
    pub op_rip: u64,
    pub op_data: u64,
    pub op_data2: u64,
    pub op_data3: u64,
    pub dc_lin_ad: u64,
    pub dc_phys_ad: u64,
    pub br_target: Option<u64>,
    pub op_data4: Option<u64>,
}

const fn bit(v: u64, b: u32) -> bool {
    (v >> b) & 1 == 1
}
const fn field(v: u64, lo: u32, width: u32) -> u64 {
    (v >> lo) & ((1u64 << width) - 1)
}

/// Decoded IBS op fields used for memory profiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IbsOpFields {
    // IbsOpCtl
    pub op_max_cnt: u64,
    pub l3_miss_only: bool,
    pub op_val: bool,
    pub cnt_ctl: bool,
    pub op_cur_cnt: u64,
    pub ldlat_thrsh: u64,
    pub ldlat_en: bool,
    // IbsOpData
    pub comp_to_ret_ctr: u16,
    pub tag_to_ret_ctr: u16,
    pub op_return: bool,
    pub rip_invalid: bool,
    pub microcode: bool,
    // IbsOpData2
    pub data_src_lo: u8,
    pub data_src_hi: u8,
    /// `hi<<3 | lo` when caps has ZEN4, else `lo`.
    pub data_src: u8,
    pub rmt_node: bool,
    pub cache_hit_st: bool,
    // IbsOpData3
    pub ld_op: bool,
    pub st_op: bool,
    pub dc_l1tlb_miss: bool,
    pub dc_l2tlb_miss: bool,
    pub dc_l1tlb_hit_2m: bool,
    pub dc_l1tlb_hit_1g: bool,
    pub dc_l2tlb_hit_2m: bool,
    pub dc_miss: bool,
    pub dc_mis_acc: bool,
    pub dc_wc_mem_acc: bool,
    pub dc_uc_mem_acc: bool,
    pub dc_locked_op: bool,
    pub dc_miss_no_mab_alloc: bool,
    pub dc_lin_addr_valid: bool,
    pub dc_phy_addr_valid: bool,
    pub dc_l2tlb_hit_1g: bool,
    pub l2_miss: bool,
    pub sw_pf: bool,
    pub op_mem_width: u8,
    pub op_dc_miss_open_mem_reqs: u8,
    pub dc_miss_lat: u16,
    pub tlb_refill_lat: u16,
    // addresses
    pub lin_addr: Option<u64>,
    pub phys_addr: Option<u64>,
    pub rip: u64,
}

impl IbsOpRaw {
    /// Parses the PERF_SAMPLE_RAW data (without the leading u32 size; trailing zero padding,
    /// if any, must already be cut off by the caller — the kernel sizes it exactly).
    pub fn parse(raw: &[u8]) -> Result<Self, IbsError> {
        if raw.len() < 60 {
            return Err(IbsError::TooShort(raw.len()));
        }
        if !(raw.len() - 4).is_multiple_of(8) {
            return Err(IbsError::BadLength(raw.len()));
        }
        let caps = u32::from_le_bytes(raw[0..4].try_into().unwrap());
        let regs: Vec<u64> = raw[4..].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        let mut extra = regs[7..].iter().copied();
        let br_target = if caps & caps::BRNTRGT != 0 { extra.next() } else { None };
        let op_data4 = if caps & caps::OPDATA4 != 0 { extra.next() } else { None };
        Ok(IbsOpRaw {
            caps,
            op_ctl: regs[0],
            op_rip: regs[1],
            op_data: regs[2],
            op_data2: regs[3],
            op_data3: regs[4],
            dc_lin_ad: regs[5],
            dc_phys_ad: regs[6],
            br_target,
            op_data4,
        })
    }

    /// Serialises back to the raw payload (for fixtures and round trips).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = self.caps.to_le_bytes().to_vec();
        for r in [self.op_ctl, self.op_rip, self.op_data, self.op_data2, self.op_data3, self.dc_lin_ad, self.dc_phys_ad]
        {
            v.extend_from_slice(&r.to_le_bytes());
        }
        if self.caps & caps::BRNTRGT != 0 {
            v.extend_from_slice(&self.br_target.unwrap_or(0).to_le_bytes());
        }
        if self.caps & caps::OPDATA4 != 0 {
            v.extend_from_slice(&self.op_data4.unwrap_or(0).to_le_bytes());
        }
        v
    }

    pub fn is_zen4(&self) -> bool {
        self.caps & caps::ZEN4 != 0
    }

    pub fn fields(&self) -> IbsOpFields {
        let c = self.op_ctl;
        let d = self.op_data;
        let d2 = self.op_data2;
        let d3 = self.op_data3;
        let lo = field(d2, 0, 3) as u8;
        let hi = field(d2, 6, 2) as u8;
        let lin_valid = bit(d3, 17);
        let phy_valid = bit(d3, 18);
        IbsOpFields {
            op_max_cnt: field(c, 0, 16),
            l3_miss_only: bit(c, 16),
            op_val: bit(c, 18),
            cnt_ctl: bit(c, 19),
            op_cur_cnt: field(c, 32, 27),
            ldlat_thrsh: field(c, 59, 4),
            ldlat_en: bit(c, 63),
            comp_to_ret_ctr: field(d, 0, 16) as u16,
            tag_to_ret_ctr: field(d, 16, 16) as u16,
            op_return: bit(d, 34),
            rip_invalid: bit(d, 38),
            microcode: bit(d, 40),
            data_src_lo: lo,
            data_src_hi: hi,
            data_src: if self.is_zen4() { (hi << 3) | lo } else { lo },
            rmt_node: bit(d2, 4),
            cache_hit_st: bit(d2, 5),
            ld_op: bit(d3, 0),
            st_op: bit(d3, 1),
            dc_l1tlb_miss: bit(d3, 2),
            dc_l2tlb_miss: bit(d3, 3),
            dc_l1tlb_hit_2m: bit(d3, 4),
            dc_l1tlb_hit_1g: bit(d3, 5),
            dc_l2tlb_hit_2m: bit(d3, 6),
            dc_miss: bit(d3, 7),
            dc_mis_acc: bit(d3, 8),
            dc_wc_mem_acc: bit(d3, 13),
            dc_uc_mem_acc: bit(d3, 14),
            dc_locked_op: bit(d3, 15),
            dc_miss_no_mab_alloc: bit(d3, 16),
            dc_lin_addr_valid: lin_valid,
            dc_phy_addr_valid: phy_valid,
            dc_l2tlb_hit_1g: bit(d3, 19),
            l2_miss: bit(d3, 20),
            sw_pf: bit(d3, 21),
            op_mem_width: field(d3, 22, 4) as u8,
            op_dc_miss_open_mem_reqs: field(d3, 26, 6) as u8,
            dc_miss_lat: field(d3, 32, 16) as u16,
            tlb_refill_lat: field(d3, 48, 16) as u16,
            lin_addr: lin_valid.then_some(self.dc_lin_ad),
            phys_addr: phy_valid.then_some(self.dc_phys_ad),
            rip: self.op_rip,
        }
    }
}

/// The cpu the sample came from, for the kernel's model-specific errata handling. `None`
/// means "not Family 19h Model ≤ 0xF / 0x20..0x5F", i.e. no erratum applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AmdCpu {
    pub family: u32,
    pub model: u32,
}

impl AmdCpu {
    /// Erratum #1293 (Zen3 ≤ model 0xF): OpData2 is invalid for sw_pf / no-MAB samples.
    fn erratum_1293(c: Option<AmdCpu>) -> bool {
        matches!(c, Some(AmdCpu { family: 0x19, model }) if model <= 0xf)
    }
    /// `perf_ibs_cache_hit_st_valid()`.
    fn cache_hit_st_valid(c: Option<AmdCpu>) -> bool {
        !matches!(c, Some(AmdCpu { family: 0x19, model }) if model <= 0xf || (0x20..=0x5f).contains(&model))
    }
    /// Parses perf's CPUID header string, e.g. `AuthenticAMD,25,17,1` (vendor,family,model,stepping).
    pub fn from_cpuid_header(s: &str) -> Option<AmdCpu> {
        let mut it = s.split(',');
        if it.next()? != "AuthenticAMD" {
            return None;
        }
        Some(AmdCpu { family: it.next()?.trim().parse().ok()?, model: it.next()?.trim().parse().ok()? })
    }
}

/// What `perf_ibs_parse_ld_st_data` puts into the sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbsNormalised {
    pub data_src: u64,
    /// WEIGHT.full / WEIGHT_STRUCT var1_dw = dc_miss_lat; only for loads that missed the DC.
    pub weight_var1: Option<u64>,
    /// WEIGHT_STRUCT var2_w = tag_to_ret_ctr (same condition).
    pub weight_var2: Option<u16>,
    pub addr: Option<u64>,
    pub phys_addr: Option<u64>,
}

const fn l(x: u64) -> u64 {
    (x | lvl::HIT) << shift::LVL
}
const fn ln(x: u64) -> u64 {
    x << shift::LVLNUM
}
const REM: u64 = 1 << shift::REMOTE;
const fn hops(x: u64) -> u64 {
    x << shift::HOPS
}

/// `perf_ibs_get_mem_lvl`: returns lvl | lvl_num | remote | hops bits.
fn mem_lvl(f: &IbsOpFields, zen4: bool, is_load: bool, cpu: Option<AmdCpu>) -> u64 {
    use super::data_src::hops::{HOPS_0, HOPS_1};
    let s = f.data_src;
    if f.dc_uc_mem_acc && s != src::EXT_IO {
        return l(lvl::UNC) | ln(lvlnum::UNC);
    }
    if !f.dc_miss {
        return l(lvl::L1) | ln(lvlnum::L1);
    }
    if !f.l2_miss && (!AmdCpu::erratum_1293(cpu) || !(f.sw_pf || f.dc_miss_no_mab_alloc)) {
        return l(lvl::L2) | ln(lvlnum::L2);
    }
    if is_load {
        if zen4 {
            match s {
                src::EXT_LOC_CACHE => return l(lvl::L3) | ln(lvlnum::L3),
                src::EXT_NEAR_CCX_CACHE => return l(lvl::REM_CCE1) | ln(lvlnum::ANY_CACHE) | REM | hops(HOPS_0),
                src::EXT_FAR_CCX_CACHE => return l(lvl::REM_CCE2) | ln(lvlnum::ANY_CACHE) | REM | hops(HOPS_1),
                _ => {}
            }
        } else {
            match s {
                src::LOC_CACHE => return l(lvl::L3) | l(lvl::REM_CCE1) | ln(lvlnum::ANY_CACHE) | REM | hops(HOPS_0),
                src::REM_CACHE => return l(lvl::REM_CCE2) | ln(lvlnum::ANY_CACHE) | REM | hops(HOPS_1),
                _ => {}
            }
        }
        if s == src::EXT_DRAM {
            return if f.rmt_node {
                l(lvl::REM_RAM1) | ln(lvlnum::RAM) | REM | hops(HOPS_1)
            } else {
                l(lvl::LOC_RAM) | ln(lvlnum::RAM)
            };
        }
        if zen4 && (s == src::EXT_PMEM || s == src::EXT_EXT_MEM) {
            let n = if s == src::EXT_PMEM { lvlnum::PMEM } else { lvlnum::CXL };
            return if f.rmt_node { l(lvl::REM_RAM1) | ln(n) | REM | hops(HOPS_1) } else { l(lvl::LOC_RAM) | ln(n) };
        }
        if s == src::EXT_IO {
            return l(lvl::IO) | ln(lvlnum::IO);
        }
    }
    // check_mab
    if f.dc_miss_no_mab_alloc {
        return l(lvl::LFB) | ln(lvlnum::LFB);
    }
    (lvl::NA << shift::LVL) | ln(lvlnum::NA)
}

/// `perf_ibs_parse_ld_st_data` (+ get_mem_op / get_mem_snoop / get_tlb_lvl / get_mem_lock).
/// `cpu` selects the errata handling (None = no erratum). The weight is only produced when the
/// event asked for a weight; pass `want_weight` accordingly.
pub fn normalise(raw: &IbsOpRaw, cpu: Option<AmdCpu>, want_weight: bool) -> IbsNormalised {
    let mut f = raw.fields();
    let mem_op = if f.ld_op {
        op::LOAD
    } else if f.st_op {
        op::STORE
    } else {
        return IbsNormalised {
            data_src: super::data_src::PERF_MEM_NA,
            weight_var1: None,
            weight_var2: None,
            addr: None,
            phys_addr: None,
        };
    };
    // Erratum #1293: the kernel zeroes OpData2 for these samples.
    if AmdCpu::erratum_1293(cpu) && (f.sw_pf || f.dc_miss_no_mab_alloc) {
        let z = IbsOpRaw { op_data2: 0, ..*raw };
        f = IbsOpFields { lin_addr: f.lin_addr, phys_addr: f.phys_addr, ..z.fields() };
    }
    let is_load = mem_op == op::LOAD;
    let mut ds = mem_op << shift::OP;
    ds |= mem_lvl(&f, raw.is_zen4(), is_load, cpu);
    let lvl_bits = (ds >> shift::LVL) & 0x3fff;
    // snoop
    let mut sn = snoop::NA;
    if AmdCpu::cache_hit_st_valid(cpu) && is_load && lvl_bits & (lvl::L1 | lvl::L2) == 0 && !f.cache_hit_st {
        let s = f.data_src;
        let hitm = if raw.is_zen4() {
            matches!(s, src::EXT_LOC_CACHE | src::EXT_NEAR_CCX_CACHE | src::EXT_FAR_CCX_CACHE)
        } else {
            s == src::LOC_CACHE
        };
        if hitm {
            sn = snoop::HITM;
        }
    }
    ds |= sn << shift::SNOOP;
    // dTLB
    let tlb = if !f.dc_lin_addr_valid {
        dtlb::NA
    } else if !f.dc_l1tlb_miss {
        dtlb::L1 | dtlb::HIT
    } else if !f.dc_l2tlb_miss {
        dtlb::L2 | dtlb::HIT
    } else {
        dtlb::L2 | dtlb::MISS
    };
    ds |= tlb << shift::DTLB;
    ds |= (if f.dc_locked_op { lock::LOCKED } else { lock::NA }) << shift::LOCK;
    let (w1, w2) = if want_weight && f.dc_miss && is_load {
        (Some(f.dc_miss_lat as u64), Some(f.tag_to_ret_ctr))
    } else {
        (None, None)
    };
    IbsNormalised { data_src: ds, weight_var1: w1, weight_var2: w2, addr: f.lin_addr, phys_addr: f.phys_addr }
}

/// Convenience: decode the normalised data_src.
pub fn normalised_data_src(raw: &IbsOpRaw, cpu: Option<AmdCpu>) -> MemDataSrc {
    MemDataSrc::decode(normalise(raw, cpu, false).data_src)
}
