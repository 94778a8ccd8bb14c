//! A bump arena for the few allocations made before the real allocator is resolved: `dlsym`
//! itself may call `calloc` (for its error state) while the shim is looking up `malloc`. Memory
//! from here is never reused; `free` ignores it and `realloc` copies out of it.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

const ARENA_BYTES: usize = 256 * 1024;
/// Each block starts with a 16-byte header: its usable size, then a word of all ones where
/// glibc keeps a chunk's size, so that `free`'s fast path, which reads that word, sends the block
/// to the full path (which sees it is the arena's) without a range check of its own.
const HEADER: usize = 16;

#[repr(C, align(4096))]
struct Arena(UnsafeCell<[u8; ARENA_BYTES]>);

// SAFETY: blocks are handed out by an atomic bump pointer, so no two callers share bytes.
unsafe impl Sync for Arena {}

static ARENA: Arena = Arena(UnsafeCell::new([0; ARENA_BYTES]));
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn base() -> usize {
    ARENA.0.get() as usize
}

/// Zeroed memory of `size` bytes aligned to `align` (a power of two, at most 4096), or null
/// when the arena is spent.
pub fn alloc(size: usize, align: usize) -> *mut u8 {
    let align = align.clamp(16, 4096);
    let mut cur = NEXT.load(Ordering::Relaxed);
    loop {
        // The block's data must be aligned; its header sits just before it.
        let data = (base() + cur + HEADER + align - 1) & !(align - 1);
        let end = match data.checked_add(size) {
            Some(e) => e,
            None => return core::ptr::null_mut(),
        };
        let new = end - base();
        if new > ARENA_BYTES {
            return core::ptr::null_mut();
        }
        match NEXT.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => {
                // SAFETY: [data - HEADER, end) lies in the arena and belongs to this caller alone.
                unsafe {
                    *((data - HEADER) as *mut usize) = size;
                    *((data - 8) as *mut usize) = usize::MAX;
                }
                return data as *mut u8;
            }
            Err(c) => cur = c,
        }
    }
}

/// Whether `p` points into the arena.
#[inline]
pub fn owns(p: *const u8) -> bool {
    (p as usize).wrapping_sub(base()) < ARENA_BYTES
}

/// Usable size of an arena block.
pub fn size_of(p: *const u8) -> usize {
    // SAFETY: callers pass pointers for which owns() is true, returned by alloc().
    unsafe { *((p as usize - HEADER) as *const usize) }
}
