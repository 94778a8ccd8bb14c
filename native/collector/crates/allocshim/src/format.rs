//! The output file's layout (version 2, little-endian). docs/alloc-sites.md is the reference;
//! numascope-core's `alloc_sites::format` reads it.
//!
//! ```text
//! header (64 bytes at offset 0): magic "NSALLOC\0", version u32, header_len u32, pid u32,
//!   ppid u32, min_bytes u64, sample_bytes u64, start_ns u64, max_depth u32, clock_id u32
//!   (1 = MONOTONIC), flags u32, block_bytes u32
//! then blocks of block_bytes each, the first at offset block_bytes (block 0 holds only the
//!   header); a block starts with magic "NSBK" u32, used u32 (record bytes after this 16-byte
//!   head that are complete), span u32 (blocks this one covers, ≥ 1), reserved u32, then records,
//!   each 8-byte aligned: kind u16, flags u16, len u32 (payload bytes, a multiple of 8), payload.
//!   A block whose head is zero was reserved but never written (skipped, one block).
//! ```
//!
//! A thread's events go into a block mapped shared into the process: each event is stored and
//! then `used` is raised past it, so the file holds every finished event at once, whatever
//! happens to the process afterwards (version 1 wrote each thread's buffer with `write`).

pub use numascope_allocformat::*;

/// File blocks: the unit of the file (a multiple of the page size).
pub const BLOCK_BYTES: usize = 64 * 1024;
/// A thread's first mapping is one block; each next one twice the last, up to this many blocks
/// (1 MiB), so a thread that records one event holds 64 KiB of the file and a busy one maps,
/// reserves and unmaps once per MiB.
pub const MAX_THREAD_SPAN: usize = 16;

/// A little-endian writer over a fixed byte slice; out-of-room writes are dropped and noted.
pub struct Put<'a> {
    pub buf: &'a mut [u8],
    pub at: usize,
    pub overflow: bool,
}

impl<'a> Put<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Put { buf, at: 0, overflow: false }
    }
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        match self.buf.get_mut(self.at..self.at + b.len()) {
            Some(dst) => {
                dst.copy_from_slice(b);
                self.at += b.len();
            }
            None => self.overflow = true,
        }
    }
    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    #[inline]
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    pub fn pad8(&mut self) {
        while !self.at.is_multiple_of(8) && !self.overflow {
            self.u8(0);
        }
    }
}
