//! Intel PEBS: the kernel's mapping of the PEBS "data source" encoding (load-latency `dse`
//! bits 0-3) into `perf_mem_data_src`, store status, and the two weight formats.
//!
//! Source: `arch/x86/events/intel/ds.c` (`pebs_data_source[]`, `load_latency_data`,
//! `pebs_set_tlb_lock`, `precise_store_data`).
//! The kernel does this translation itself, so a perf.data file already carries the
//! normalised value; this module exists so the fixtures (and a future live PEBS reader that
//! asks for RAW) can go from the hardware encoding to the same class.

use super::data_src::{blk, dtlb, lock, lvl, lvlnum, op, shift, snoop};

const fn p_op(v: u64) -> u64 {
    v << shift::OP
}
const fn p_lvl(v: u64) -> u64 {
    v << shift::LVL
}
const fn p_snoop(v: u64) -> u64 {
    v << shift::SNOOP
}
const fn level(v: u64) -> u64 {
    v << shift::LVLNUM
}
const REM: u64 = 1 << shift::REMOTE;
const OP_LH: u64 = p_op(op::LOAD) | p_lvl(lvl::HIT);
const SNOOP_NONE_MISS: u64 = p_snoop(snoop::NONE) | p_snoop(snoop::MISS);

/// `pebs_data_source[]` (ds.c), indexed by the 4-bit load data source (`dse.ld_dse`).
///
/// Entry 0x0b carries `LEVEL(L3)` in ds.c (next to `REM_RAM1`), 0x0d `LEVEL(RAM)`: the
/// classifier lets the legacy `REM_RAM1` bit win, so both are remote DRAM.
pub const PEBS_DATA_SOURCE: [u64; 16] = [
    p_op(op::LOAD) | p_lvl(lvl::MISS) | level(lvlnum::L3) | p_snoop(snoop::NA), // 0x00: unknown L3 miss
    OP_LH | p_lvl(lvl::L1) | level(lvlnum::L1) | p_snoop(snoop::NONE),          // 0x01: L1 local
    OP_LH | p_lvl(lvl::LFB) | level(lvlnum::LFB) | p_snoop(snoop::NONE),        // 0x02: LFB hit
    OP_LH | p_lvl(lvl::L2) | level(lvlnum::L2) | p_snoop(snoop::NONE),          // 0x03: L2 hit
    OP_LH | p_lvl(lvl::L3) | level(lvlnum::L3) | p_snoop(snoop::NONE),          // 0x04: L3 hit
    OP_LH | p_lvl(lvl::L3) | level(lvlnum::L3) | p_snoop(snoop::MISS),          // 0x05: L3 hit, snoop miss
    OP_LH | p_lvl(lvl::L3) | level(lvlnum::L3) | p_snoop(snoop::HIT),           // 0x06: L3 hit, snoop hit
    OP_LH | p_lvl(lvl::L3) | level(lvlnum::L3) | p_snoop(snoop::HITM),          // 0x07: L3 hit, snoop hitm
    OP_LH | p_lvl(lvl::REM_CCE1) | REM | level(lvlnum::L3) | p_snoop(snoop::HIT), // 0x08: remote cache, hit
    OP_LH | p_lvl(lvl::REM_CCE1) | REM | level(lvlnum::L3) | p_snoop(snoop::HITM), // 0x09: remote cache, hitm
    OP_LH | p_lvl(lvl::LOC_RAM) | level(lvlnum::RAM) | p_snoop(snoop::HIT),     // 0x0a: local DRAM, shared
    OP_LH | p_lvl(lvl::REM_RAM1) | REM | level(lvlnum::L3) | p_snoop(snoop::HIT), // 0x0b: remote DRAM, shared
    OP_LH | p_lvl(lvl::LOC_RAM) | level(lvlnum::RAM) | SNOOP_NONE_MISS,         // 0x0c: local DRAM, exclusive
    OP_LH | p_lvl(lvl::REM_RAM1) | level(lvlnum::RAM) | REM | SNOOP_NONE_MISS,  // 0x0d: remote DRAM, exclusive
    OP_LH | p_lvl(lvl::IO) | level(lvlnum::NA) | p_snoop(snoop::NONE),          // 0x0e: I/O
    OP_LH | p_lvl(lvl::UNC) | level(lvlnum::NA) | p_snoop(snoop::NONE),         // 0x0f: uncached
];

/// What the PMU generation reports beyond the 4-bit source (ds.c `x86_pmu.pebs_no_tlb`,
/// `x86_pmu.pebs_block`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PebsFlavor {
    /// Nehalem: no TLB / lock information.
    pub no_tlb: bool,
    /// Skylake+: data/address block bits (dse bits 7, 8).
    pub block: bool,
}

/// `load_latency_data()`: PEBS load-latency `dse` (status) → `perf_mem_data_src`.
/// dse bits: 0-3 ld_dse, 4 ld_stlb_miss, 5 ld_locked, 7 ld_data_blk, 8 ld_addr_blk.
pub fn load_latency_data(dse: u64, flavor: PebsFlavor) -> u64 {
    let mut val = PEBS_DATA_SOURCE[(dse & 0xf) as usize];
    if flavor.no_tlb {
        return val | (dtlb::NA << shift::DTLB) | (lock::NA << shift::LOCK);
    }
    val |= tlb_lock(dse & (1 << 4) != 0, dse & (1 << 5) != 0);
    if flavor.block {
        if dse & (1 << 7) != 0 {
            val |= blk::DATA << shift::BLK;
        }
        if dse & (1 << 8) != 0 {
            val |= blk::ADDR << shift::BLK;
        }
        if dse & (3 << 7) == 0 {
            val |= blk::NA << shift::BLK;
        }
    } else {
        val |= blk::NA << shift::BLK;
    }
    val
}

/// `pebs_set_tlb_lock()`.
fn tlb_lock(stlb_miss: bool, locked: bool) -> u64 {
    let mut v = if stlb_miss {
        (dtlb::MISS | dtlb::L2) << shift::DTLB
    } else {
        (dtlb::HIT | dtlb::L1 | dtlb::L2) << shift::DTLB
    };
    if locked {
        v |= lock::LOCKED << shift::LOCK;
    }
    v
}

/// `precise_store_data()` / `precise_datala_hsw()` for stores: the PEBS store status says only
/// whether the store hit L1 (bit 0 on SNB `dse.st_l1d_hit`), plus STLB miss (bit 4) and lock
/// (bit 5). A miss leaves the source unknown.
pub fn store_data(l1_hit: bool, stlb_miss: bool, locked: bool) -> u64 {
    let mut val = p_op(op::STORE);
    if l1_hit {
        val |= p_lvl(lvl::L1 | lvl::HIT) | level(lvlnum::L1);
    } else {
        val |= p_lvl(lvl::L1 | lvl::MISS);
    }
    val | tlb_lock(stlb_miss, locked)
}

/// A decoded sample weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Weight {
    /// PERF_SAMPLE_WEIGHT's u64, or WEIGHT_STRUCT's `var1_dw` (load latency, core cycles).
    pub latency: u64,
    /// WEIGHT_STRUCT `var2_w`: instruction latency (Intel PMU_FL_INSTR_LATENCY) or, for AMD
    /// IBS, tag_to_ret_ctr; 0 with the old u64 format.
    pub var2: u16,
    /// WEIGHT_STRUCT `var3_w`.
    pub var3: u16,
    /// True for WEIGHT_STRUCT (PERF_SAMPLE_WEIGHT_STRUCT, bit 24), false for the u64 WEIGHT.
    pub is_struct: bool,
}

impl Weight {
    /// Decodes the 8 weight bytes. `union perf_sample_weight { u64 full; struct { u32 var1_dw;
    /// u16 var2_w; u16 var3_w; }; }` (little-endian).
    pub fn decode(word: u64, is_struct: bool) -> Self {
        if is_struct {
            Weight {
                latency: word & 0xffff_ffff,
                var2: ((word >> 32) & 0xffff) as u16,
                var3: ((word >> 48) & 0xffff) as u16,
                is_struct,
            }
        } else {
            Weight { latency: word, var2: 0, var3: 0, is_struct }
        }
    }
}

/// The PEBS event a (raw `cpu` PMU) config selects, from the kernel's event aliases
/// (`arch/x86/events/intel/core.c`): `mem-loads` 0x01cd (SNB+), 0x100b (Nehalem), 0x05d0
/// (Gracemont); `mem-stores` 0x82d0 (HSW..ICL), 0x02cd (SNB, SPR+), 0x06d0 (Gracemont);
/// `mem-loads-aux` 0x8203 (SPR+ group leader, not a memory sample).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PebsEvent {
    Load,
    Store,
    LoadAux,
    Other,
}

pub fn pebs_event_for_config(config: u64) -> PebsEvent {
    match config & 0xffff {
        0x01cd | 0x100b | 0x05d0 => PebsEvent::Load,
        0x82d0 | 0x02cd | 0x06d0 => PebsEvent::Store,
        0x8203 => PebsEvent::LoadAux,
        _ => PebsEvent::Other,
    }
}
