//! A Rust program with known allocation sites, run under the shim by tests/sites.rs. Each site
//! carries a `SITE:<name> bytes=<size>` marker on the line of the allocating call; the test
//! reads the markers and checks that every large allocation of that size is attributed to that
//! line. Sizes are distinct so an allocation names its site.

use std::hint::black_box;

#[inline(never)]
fn grow(v: &mut Vec<u8>) {
    v.reserve_exact(5 << 20); // SITE:rust_grow bytes=5242880
    black_box(v.capacity()); // not a tail call, so grow's frame stays on the stack
}

fn main() {
    let a: Vec<u8> = Vec::with_capacity(3 << 20); // SITE:rust_vec bytes=3145728
    let b = vec![0u64; 1 << 18]; // SITE:rust_zeroed bytes=2097152
    let mut c: Vec<u8> = Vec::with_capacity(1 << 20); // SITE:rust_small_start bytes=1048576
    grow(&mut c);
    let t = std::thread::spawn(|| {
        let d: Vec<u32> = Vec::with_capacity((1 << 19) + 1); // SITE:rust_thread bytes=2097156
        black_box(d.capacity())
    });
    let _ = t.join();
    black_box((a.capacity(), b.len(), c.capacity()));
}
