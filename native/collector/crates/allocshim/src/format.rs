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

pub const MAGIC: [u8; 8] = *b"NSALLOC\0";
pub const VERSION: u32 = 2;
pub const HEADER_LEN: usize = 64;
pub const CLOCK_MONOTONIC_ID: u32 = 1;

/// File blocks: the unit of the file (a multiple of the page size).
pub const BLOCK_BYTES: usize = 64 * 1024;
/// A thread's first mapping is one block; each next one twice the last, up to this many blocks
/// (1 MiB), so a thread that records one event holds 64 KiB of the file and a busy one maps,
/// reserves and unmaps once per MiB.
pub const MAX_THREAD_SPAN: usize = 16;
pub const BLOCK_HEAD: usize = 16;
pub const BLOCK_MAGIC: [u8; 4] = *b"NSBK";

pub const REC_EVENT: u16 = 1;
pub const REC_MODULES: u16 = 2;
pub const REC_END: u16 = 3;

/// Event record flags.
pub const EV_SAMPLED: u16 = 1;
pub const EV_STACK_TRUNCATED: u16 = 2;

/// Fixed part of an event payload: time u64, tid u32, op u8, reserved u8, depth u16, addr u64,
/// size u64, old_addr u64, aux u64; then depth u64 code addresses.
pub const EVENT_FIXED: usize = 48;

/// Modules record: time u64, count u32, flags u32; entries of bias u64, lo u64, hi u64,
/// path_len u16, build_id_len u16, reserved u32, path bytes, build-id bytes, padded to 8.
pub const MODULES_FIXED: usize = 16;
pub const MOD_LIST_TRUNCATED: u32 = 1;

/// End record: time u64, events u64, dropped u64, untracked u64 (recorded blocks whose free
/// could not be watched), flags u32, reserved u32.
pub const END_LEN: usize = 40;
pub const END_TRUNCATED: u32 = 1;
pub const END_SIZE_LIMIT: u32 = 2;
pub const END_BUFFERS_LOST: u32 = 4;
pub const END_INTERNAL_FAILURE: u32 = 8;
/// The process image ended by exec (the new image writes its own file).
pub const END_EXEC: u32 = 16;

pub const OP_MALLOC: u8 = 1;
pub const OP_CALLOC: u8 = 2;
pub const OP_REALLOC: u8 = 3;
pub const OP_POSIX_MEMALIGN: u8 = 4;
pub const OP_ALIGNED_ALLOC: u8 = 5;
pub const OP_MEMALIGN: u8 = 6;
pub const OP_VALLOC: u8 = 7;
pub const OP_PVALLOC: u8 = 8;
pub const OP_REALLOCARRAY: u8 = 9;
pub const OP_FREE: u8 = 16;
pub const OP_MMAP: u8 = 32;
pub const OP_MUNMAP: u8 = 33;
pub const OP_MREMAP: u8 = 34;

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
