//! Idle and loaded latency by a dependent pointer chase: every load's address comes from the
//! previous load, in one random cycle over a buffer far larger than the last-level cache, so
//! neither the prefetchers nor out-of-order execution can overlap the misses.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::mem::{pin_to_cpu, NodeBuffer};

/// One chase slot per cache line, so every step touches a new line.
pub const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / std::mem::size_of::<usize>();

/// SplitMix64: a small, well-mixed generator (reproducible from its seed).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0; the modulo bias is below 2^-40 for the sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// A random cyclic permutation of `0..n` (Sattolo's algorithm): `next[i]` is the slot after `i`,
/// and following `next` from any slot visits all `n` slots before coming back.
pub fn cyclic_permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix(seed);
    for i in (1..n).rev() {
        let j = rng.below(i);
        next.swap(i, j);
    }
    next
}

/// Writes the chase into `buf`: slot i (line i) holds the word index of the next slot's line.
pub fn build_chase(buf: &NodeBuffer, seed: u64) -> usize {
    let words = buf.words();
    let slots = words.len() / WORDS_PER_LINE;
    let next = cyclic_permutation(slots, seed);
    for (i, &n) in next.iter().enumerate() {
        words[i * WORDS_PER_LINE] = n as usize * WORDS_PER_LINE;
    }
    slots
}

/// Follows the chase for `steps` loads from a thread pinned to `cpu`; ns per load.
pub fn chase_ns(buf: &NodeBuffer, cpu: u32, steps: usize) -> std::io::Result<f64> {
    pin_to_cpu(cpu)?;
    let words = buf.words();
    let ptr = words.as_ptr();
    // Warm the TLB and the page tables once over a short stretch.
    let mut at = 0usize;
    for _ in 0..steps.min(1 << 14) {
        // SAFETY: every stored index is a slot start inside the buffer (build_chase).
        at = unsafe { std::ptr::read_volatile(ptr.add(at)) };
    }
    let t0 = Instant::now();
    for _ in 0..steps {
        // SAFETY: as above.
        at = unsafe { std::ptr::read_volatile(ptr.add(at)) };
    }
    let dt = t0.elapsed();
    black_box(at);
    Ok(dt.as_secs_f64() * 1e9 / steps.max(1) as f64)
}

/// Chase steps that take about `ms` milliseconds at `guess_ns` per load (at least 10 000).
pub fn steps_for(ms: f64, guess_ns: f64) -> usize {
    ((ms * 1e6 / guess_ns.max(1.0)) as usize).max(10_000)
}

/// Chases while the load threads run; returns (ns per load, delivered GB/s of the load threads).
pub fn loaded_chase(
    chase: &NodeBuffer,
    chase_cpu: u32,
    loads: &[(u32, &NodeBuffer)],
    steps: usize,
) -> std::io::Result<(f64, f64)> {
    let go = AtomicBool::new(true);
    std::thread::scope(|s| {
        let go = &go;
        let handles: Vec<_> =
            loads.iter().map(|&(cpu, buf)| s.spawn(move || super::kernels::read_load(cpu, buf, go))).collect();
        // Let the load threads reach their steady rate.
        std::thread::sleep(std::time::Duration::from_millis(if loads.is_empty() { 0 } else { 50 }));
        let t0 = Instant::now();
        let ns = chase_ns(chase, chase_cpu, steps);
        let secs = t0.elapsed().as_secs_f64();
        go.store(false, Ordering::SeqCst);
        // Bytes read during the whole run, over the whole run's time (warm-up included).
        let total: u64 = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
        let run_secs = secs + if loads.is_empty() { 0.0 } else { 0.05 };
        ns.map(|ns| (ns, total as f64 / run_secs.max(1e-9) / 1e9))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle_length(next: &[u32]) -> usize {
        let mut at = 0usize;
        let mut len = 0;
        loop {
            at = next[at] as usize;
            len += 1;
            if at == 0 || len > next.len() {
                return len;
            }
        }
    }

    #[test]
    fn the_permutation_is_one_cycle_over_every_slot() {
        for (n, seed) in [(2, 1), (3, 7), (1000, 42), (65_537, 3)] {
            let next = cyclic_permutation(n, seed);
            assert_eq!(cycle_length(&next), n, "n={n} seed={seed}");
            let mut seen = vec![false; n];
            next.iter().for_each(|&x| seen[x as usize] = true);
            assert!(seen.iter().all(|&s| s), "a permutation: every slot is someone's successor");
            assert!(next.iter().enumerate().all(|(i, &x)| i != x as usize), "no fixed point");
        }
    }

    #[test]
    fn the_permutation_is_random_not_sequential() {
        let next = cyclic_permutation(4096, 9);
        let sequential = next.iter().enumerate().filter(|(i, &x)| x as usize == i + 1).count();
        assert!(sequential < 20, "{sequential} slots point at their neighbour");
        assert_ne!(next, cyclic_permutation(4096, 10));
    }

    #[test]
    fn a_chase_buffer_holds_one_cycle_of_line_offsets() {
        let buf = NodeBuffer::new(1 << 20, 0, false).expect("buffer on node 0");
        let slots = build_chase(&buf, 5);
        assert_eq!(slots, (1 << 20) / LINE);
        let words = buf.words();
        let (mut at, mut len) = (0usize, 0usize);
        loop {
            at = words[at];
            assert_eq!(at % WORDS_PER_LINE, 0);
            len += 1;
            if at == 0 || len > slots {
                break;
            }
        }
        assert_eq!(len, slots);
        let ns = chase_ns(&buf, 0, 100_000).expect("chase");
        assert!(ns.is_finite() && ns > 0.0);
    }
}
