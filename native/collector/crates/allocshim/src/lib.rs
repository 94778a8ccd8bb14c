//! numascope allocation-site shim: a shared object loaded with `LD_PRELOAD` into a program that
//! `numascope record` launches. It interposes the C allocation functions and records, into a
//! per-process file, every allocation of at least NUMASCOPE_ALLOC_MIN_BYTES and a byte-sampled
//! share of smaller ones, each with thread, time, size, address and call stack. See README.md
//! and docs/alloc-sites.md.
//!
//! Rules this file keeps: nothing here allocates through the allocator it wraps (memory comes
//! from the kernel, files are written with raw system calls); every slow path runs under a
//! per-thread guard, so allocations made by the unwinder, the loader or a signal handler while
//! the shim is busy pass straight through; errno is preserved; any failure stops recording
//! (marked in the file) and leaves the program running with the real allocator.
//!
//! Files: `interpose/` the exported entry points (allocation, mapping, threads, exit and exec);
//! `state.rs` the shim's state, settings and per-thread state; `real.rs` the real functions;
//! `sampler.rs` the byte sampler and the fast path; `record.rs` what the interposers do around
//! the real call; `lifecycle.rs` start-up, fork and exit; `out.rs` the output file; `unwind.rs`
//! the stacks; `modules.rs` the loaded modules; `place.rs` placement at launch; `live.rs` the
//! recorded live blocks; `boot.rs` the bootstrap arena; `sys.rs` raw system calls; `format.rs`
//! the file layout.

#![allow(clippy::missing_safety_doc)]

mod boot;
mod format;
mod interpose;
mod lifecycle;
mod live;
mod modules;
mod out;
mod place;
mod real;
mod record;
mod sampler;
mod state;
mod sys;
mod unwind;
