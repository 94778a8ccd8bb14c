//! The set of recorded heap blocks that are still live, so that `free` records only the frees
//! of blocks whose allocation was recorded and stays cheap for all others.
//!
//! Lock-free: an open-addressing table of addresses (linear probing, tombstones), in front of
//! it a filter of small counters indexed by another part of the same hash. `free` of an
//! unrecorded block costs one hash and one byte load from a 64 KiB array. Under a race (a block
//! freed by one thread while another reuses its address) an event may be missed or attributed
//! to the wrong block; the reader ignores frees it cannot match. When a probe run is full the
//! block is recorded but its free is not (counted in `UNTRACKED`).

use core::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

const SLOT_BITS: u32 = 18;
const SLOTS: usize = 1 << SLOT_BITS;
const FILTER_BITS: u32 = 16;
const FILTER: usize = 1 << FILTER_BITS;
const PROBE: usize = 32;
const TOMB: usize = 1;

static TABLE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static COUNTS: [AtomicU8; FILTER] = [const { AtomicU8::new(0) }; FILTER];
pub static UNTRACKED: AtomicU64 = AtomicU64::new(0);

#[inline(always)]
fn hash(p: usize) -> u64 {
    ((p as u64) >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[inline(always)]
fn filter_index(h: u64) -> usize {
    (h >> (64 - FILTER_BITS)) as usize
}

#[inline(always)]
fn slot_index(h: u64) -> usize {
    // Bits below the filter's, so that the filter spreads table runs too.
    ((h >> 8) as usize) & (SLOTS - 1)
}

/// Whether `p` may be in the set (false is certain).
#[inline(always)]
pub fn maybe(p: usize) -> bool {
    COUNTS[filter_index(hash(p))].load(Ordering::Relaxed) != 0
}

pub fn insert(p: usize) {
    if p <= TOMB {
        return;
    }
    let h = hash(p);
    let start = slot_index(h);
    for i in 0..PROBE {
        let slot = &TABLE[(start + i) & (SLOTS - 1)];
        let cur = slot.load(Ordering::Relaxed);
        if (cur == 0 || cur == TOMB) && slot.compare_exchange(cur, p, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            // A counter at 255 stays there: the filter then only costs table look-ups.
            let _ = COUNTS[filter_index(h)].fetch_update(Ordering::AcqRel, Ordering::Relaxed, |c| {
                if c == u8::MAX {
                    None
                } else {
                    Some(c + 1)
                }
            });
            return;
        }
    }
    UNTRACKED.fetch_add(1, Ordering::Relaxed);
}

/// Removes `p`; true when it was present.
pub fn remove(p: usize) -> bool {
    if p <= TOMB {
        return false;
    }
    let h = hash(p);
    let start = slot_index(h);
    for i in 0..PROBE {
        let slot = &TABLE[(start + i) & (SLOTS - 1)];
        let cur = slot.load(Ordering::Relaxed);
        if cur == 0 {
            return false;
        }
        if cur == p && slot.compare_exchange(p, TOMB, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            let _ = COUNTS[filter_index(h)].fetch_update(Ordering::AcqRel, Ordering::Relaxed, |c| {
                if c == u8::MAX || c == 0 {
                    None
                } else {
                    Some(c - 1)
                }
            });
            return true;
        }
    }
    false
}
