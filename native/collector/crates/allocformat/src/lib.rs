//! The allocation-site file's layout (version 2, little-endian), defined once: the shim
//! (numascope-allocshim) writes it and numascope-core's `alloc_sites::format` reads it.
//! docs/alloc-sites.md is the reference. No dependencies: the shim is loaded into other programs.
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

#![no_std]

pub const MAGIC: [u8; 8] = *b"NSALLOC\0";
/// The format version the shim writes and the newest the reader understands.
pub const VERSION: u32 = 2;
pub const HEADER_LEN: usize = 64;
pub const CLOCK_MONOTONIC_ID: u32 = 1;

/// A block's head: magic, used, span, reserved (u32 each).
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
/// The least bytes one module entry takes (its fixed fields), which bounds a record's count.
pub const MODULE_ENTRY_FIXED: usize = 32;

/// End record: time u64, events u64, dropped u64, untracked u64 (recorded blocks whose free
/// could not be watched), flags u32, reserved u32.
pub const END_LEN: usize = 40;
/// End-record flags.
pub const END_TRUNCATED: u32 = 1;
pub const END_SIZE_LIMIT: u32 = 2;
pub const END_BUFFERS_LOST: u32 = 4;
pub const END_INTERNAL_FAILURE: u32 = 8;
/// The process image ended by exec (the new image writes its own file).
pub const END_EXEC: u32 = 16;

/// The interposed call of an event (its `op` byte).
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
