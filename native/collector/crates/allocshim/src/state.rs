//! The shim's state and configuration: where it stands (resolving, passing through, recording),
//! the settings read at start-up, the fast path's thresholds, and each thread's state (its
//! guard, sampler counters, output buffer and stack cache).

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::{out, place, sys, unwind};

pub(crate) const ST_UNINIT: u8 = 0;
/// Resolving the real functions: allocations are served from the bootstrap arena.
pub(crate) const ST_RESOLVING: u8 = 1;
/// Real functions known; nothing recorded (not configured, stopped, or after exit).
pub(crate) const ST_PASS: u8 = 2;
pub(crate) const ST_RECORDING: u8 = 3;

pub(crate) static STATE: AtomicU8 = AtomicU8::new(ST_UNINIT);

pub(crate) const DEFAULT_MIN_BYTES: usize = 64 * 1024;
pub(crate) const DEFAULT_SAMPLE_BYTES: u64 = 2 * 1024 * 1024;
pub(crate) const DEFAULT_MAX_DEPTH: usize = 64;
pub(crate) const MAX_DEPTH_LIMIT: usize = 128;

/// Allocations at least this large are always recorded (usize::MAX until configured).
pub(crate) static MIN_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Mean sampling interval in bytes for smaller allocations; 0 = record none of them.
pub(crate) static SAMPLE_BYTES: AtomicU64 = AtomicU64::new(0);
pub(crate) static MAX_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_DEPTH);
pub(crate) static SEED: AtomicU64 = AtomicU64::new(0);
pub(crate) static THREAD_SEQ: AtomicU64 = AtomicU64::new(0);
pub(crate) static PTHREAD_KEY: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The real allocator is glibc's (its chunk header layout is known).
pub(crate) static GLIBC_CHUNKS: AtomicBool = AtomicBool::new(false);
/// The process whose file is open.
pub(crate) static REC_PID: AtomicU32 = AtomicU32::new(0);
/// The smallest threshold: the recording threshold (while recording) or the placement
/// threshold, capped at FAST_CAP. Each thread's sampler counter never holds more than this, so
/// every allocation at least this large runs it out and takes the full path ("the sampler and
/// the fast path" below). 0 until start-up has read the settings: counters stay at 0 and
/// everything before takes the full path.
pub(crate) static FAST_BELOW: AtomicUsize = AtomicUsize::new(0);
/// Larger requests always take the full path (and the counters' sums cannot overflow).
const FAST_CAP: usize = 1 << 48;
/// `free` (and `realloc`) of a pointer at or below this take the full path without looking at
/// the block: NULL always, and every pointer until start-up has found glibc's allocator
/// underneath (with another allocator the word before a block is not ours to read).
pub(crate) static FREE_FULL_AT_OR_BELOW: AtomicUsize = AtomicUsize::new(usize::MAX);
/// With glibc underneath, a block whose chunk word is smaller than this is not tracked, and its
/// `free` goes straight on to the real one: the threshold while recording, everything (but the
/// bootstrap arena's all-ones word) otherwise.
pub(crate) static FREE_CHUNK_MIN: AtomicUsize = AtomicUsize::new(0);

/// Stops recording for good in this process (a failure or the size limit); the program goes on
/// with the real allocator.
pub(crate) fn stop_recording() {
    let _ = STATE.compare_exchange(ST_RECORDING, ST_PASS, Ordering::AcqRel, Ordering::Relaxed);
}

/// Sets the fast-path thresholds from the state and settings (after start-up has configured
/// recording and placement). A stale value after recording stops is harmless: the full paths
/// check the state again.
pub(crate) fn publish_fast_path() {
    let recording = STATE.load(Ordering::Acquire) == ST_RECORDING;
    let rec_min = if recording { MIN_BYTES.load(Ordering::Relaxed) } else { usize::MAX };
    let fast = rec_min.min(place::MIN.load(Ordering::Acquire)).min(FAST_CAP);
    // A multiple of 8, so that the chunk word's three flag bits need no masking: below it,
    // word and size alike are below the threshold (0 when the threshold is under 8: no fast free).
    let chunk_min = if recording { rec_min & !7 } else { usize::MAX };
    FREE_CHUNK_MIN.store(chunk_min, Ordering::Release);
    if GLIBC_CHUNKS.load(Ordering::Relaxed) {
        FREE_FULL_AT_OR_BELOW.store(0, Ordering::Release);
    }
    FAST_BELOW.store(fast, Ordering::Release);
}

pub(crate) struct Tls {
    /// Set while the shim itself is working on this thread.
    pub(crate) guard: Cell<bool>,
    /// The sampler's two counters off x86-64 (see "the sampler and the fast path").
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    pub(crate) countdown: Cell<u64>,
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    pub(crate) rest: Cell<u64>,
    pub(crate) sampler_ready: Cell<bool>,
    pub(crate) rng: Cell<u64>,
    pub(crate) tid: Cell<u32>,
    pub(crate) buf: Cell<*mut out::ThreadBuf>,
    /// The last stack captured on this thread (unwind.rs, "the per-thread stack cache").
    pub(crate) stack: core::cell::UnsafeCell<unwind::StackCache>,
}

thread_local! {
    // Constant-initialised and without a destructor: access never allocates or registers
    // anything, which matters inside malloc.
    pub(crate) static TLS: Tls = const {
        Tls {
            guard: Cell::new(false),
            countdown: Cell::new(0),
            rest: Cell::new(0),
            sampler_ready: Cell::new(false),
            rng: Cell::new(0),
            tid: Cell::new(0),
            buf: Cell::new(core::ptr::null_mut()),
            stack: core::cell::UnsafeCell::new(unwind::StackCache::new()),
        }
    };
}

/// Runs `f` under the shim's guard (anything it allocates passes through), errno kept.
pub(crate) fn guarded(f: impl FnOnce()) {
    TLS.with(|t| {
        if t.guard.get() {
            return;
        }
        t.guard.set(true);
        let _errno = sys::ErrnoGuard::save();
        f();
        t.guard.set(false);
    });
}
