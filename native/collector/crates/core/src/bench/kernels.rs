//! STREAM copy and triad, run by threads pinned to a cpu node's cpus over arrays bound to a
//! memory node. Several groups (cpu node, memory node) can run at once, for contention.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use super::mem::{pin_to_cpu, NodeBuffer};

/// The two STREAM kernels measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// `c[i] = a[i]`.
    Copy,
    /// `a[i] = b[i] + s · c[i]`.
    Triad,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Triad => "triad",
        }
    }
}

/// Bytes one pass of `kernel` over `elems` f64 elements counts, by STREAM's convention: copy
/// reads one array and writes one (2 × 8 B per element), triad reads two and writes one (3 × 8 B).
/// Write-allocate traffic (the read for ownership of the written line) is not counted, as in STREAM.
pub fn stream_bytes(kernel: Kernel, elems: usize) -> u64 {
    let arrays = match kernel {
        Kernel::Copy => 2,
        Kernel::Triad => 3,
    };
    arrays * 8 * elems as u64
}

/// One set of threads: the cpus they are pinned to (one thread each) and the memory node their
/// arrays are bound to, with the element count of each of the three arrays.
#[derive(Clone, Debug)]
pub struct Group {
    pub cpus: Vec<u32>,
    pub mem_node: u32,
    pub elems: usize,
}

/// Result of one group: GB/s per repetition (STREAM bytes / the group's wall time) and the
/// smallest share of sampled array pages found on the memory node (move_pages).
#[derive(Clone, Debug)]
pub struct GroupRates {
    pub gbps: Vec<f64>,
    pub on_node_share: f64,
}

struct Arrays {
    a: NodeBuffer,
    b: NodeBuffer,
    c: NodeBuffer,
}

fn alloc(g: &Group) -> std::io::Result<Arrays> {
    let len = g.elems * 8;
    Ok(Arrays {
        a: NodeBuffer::new(len, g.mem_node, false)?,
        b: NodeBuffer::new(len, g.mem_node, false)?,
        c: NodeBuffer::new(len, g.mem_node, false)?,
    })
}

fn chunk(elems: usize, threads: usize, t: usize) -> std::ops::Range<usize> {
    let per = elems.div_ceil(threads);
    (t * per).min(elems)..((t + 1) * per).min(elems)
}

fn pass(kernel: Kernel, arr: &Arrays, r: std::ops::Range<usize>) {
    let (a, b, c) = (&mut arr.a.f64s()[r.clone()], &mut arr.b.f64s()[r.clone()], &mut arr.c.f64s()[r]);
    match kernel {
        Kernel::Copy => {
            c.copy_from_slice(a);
            black_box(c);
        }
        Kernel::Triad => {
            let s = black_box(3.0);
            for ((x, y), z) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                *x = y + s * z;
            }
            black_box(a);
        }
    }
}

/// Runs `kernel` `reps` times on all groups at once (every thread starts each repetition together)
/// and returns each group's rates; stops early (fewer repetitions) when `stop` is set.
pub fn run_groups(
    groups: &[Group],
    kernel: Kernel,
    reps: usize,
    stop: &AtomicBool,
) -> std::io::Result<Vec<GroupRates>> {
    let arrays: Vec<Arrays> = groups.iter().map(alloc).collect::<Result<_, _>>()?;
    let threads: usize = groups.iter().map(|g| g.cpus.len()).sum();
    let barrier = Barrier::new(threads + 1);
    let ends: Vec<Mutex<Vec<Instant>>> = groups.iter().map(|_| Mutex::new(Vec::new())).collect();
    let go = AtomicBool::new(true);
    let pin_error: Mutex<Option<std::io::Error>> = Mutex::new(None);
    let mut starts = Vec::new();
    std::thread::scope(|s| {
        for (gi, g) in groups.iter().enumerate() {
            for (t, &cpu) in g.cpus.iter().enumerate() {
                let (arr, barrier, ends, go, pin_error) = (&arrays[gi], &barrier, &ends[gi], &go, &pin_error);
                let r = chunk(g.elems, g.cpus.len(), t);
                s.spawn(move || {
                    if let Err(e) = pin_to_cpu(cpu) {
                        *pin_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                    // First touch by the pinned thread (the binding decides the node anyway).
                    for arr_buf in [&arr.a, &arr.b, &arr.c] {
                        arr_buf.f64s()[r.clone()].iter_mut().for_each(|x| *x = 1.0);
                    }
                    loop {
                        barrier.wait();
                        if !go.load(Ordering::SeqCst) {
                            break;
                        }
                        pass(kernel, arr, r.clone());
                        ends.lock().unwrap_or_else(|p| p.into_inner()).push(Instant::now());
                        barrier.wait();
                    }
                });
            }
        }
        for rep in 0..reps {
            if rep > 0 && stop.load(Ordering::SeqCst) {
                break;
            }
            barrier.wait();
            starts.push(Instant::now());
            barrier.wait();
        }
        go.store(false, Ordering::SeqCst);
        barrier.wait();
    });
    if let Some(e) = pin_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut out = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let ends = ends[gi].lock().unwrap_or_else(|p| p.into_inner());
        let n = g.cpus.len();
        let gbps = starts
            .iter()
            .enumerate()
            .map(|(rep, start)| {
                let end = ends[rep * n..(rep + 1) * n].iter().max().copied().unwrap_or(*start);
                stream_bytes(kernel, g.elems) as f64 / end.duration_since(*start).as_secs_f64().max(1e-9) / 1e9
            })
            .collect();
        let on_node_share = [&arrays[gi].a, &arrays[gi].b, &arrays[gi].c]
            .iter()
            .map(|b| b.share_on_node(g.mem_node, 64).unwrap_or(0.0))
            .fold(1.0, f64::min);
        out.push(GroupRates { gbps, on_node_share });
    }
    Ok(out)
}

/// Reads `buf` (already touched) over and over from a thread pinned to `cpu` until `go` is cleared; returns bytes read.
pub fn read_load(cpu: u32, buf: &NodeBuffer, go: &AtomicBool) -> u64 {
    let _ = pin_to_cpu(cpu);
    let data = buf.f64s();
    let mut bytes = 0u64;
    let mut sum = 0.0;
    while go.load(Ordering::Relaxed) {
        for block in data.chunks(1 << 16) {
            sum += block.iter().sum::<f64>();
            bytes += block.len() as u64 * 8;
            if !go.load(Ordering::Relaxed) {
                break;
            }
        }
    }
    black_box(sum);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_bytes_follow_streams_convention() {
        assert_eq!(stream_bytes(Kernel::Copy, 1000), 16_000);
        assert_eq!(stream_bytes(Kernel::Triad, 1000), 24_000);
        assert_eq!(stream_bytes(Kernel::Triad, 0), 0);
    }

    #[test]
    fn chunks_cover_every_element_once() {
        for (elems, threads) in [(10, 3), (7, 7), (5, 8), (1 << 20, 6)] {
            let mut covered = 0;
            let mut next = 0;
            for t in 0..threads {
                let r = chunk(elems, threads, t);
                assert_eq!(r.start, next.min(elems));
                next = r.end;
                covered += r.len();
            }
            assert_eq!(covered, elems);
        }
    }

    #[test]
    fn a_group_on_this_machine_reports_finite_positive_rates_and_its_node() {
        let g = Group { cpus: vec![0], mem_node: 0, elems: 1 << 18 };
        let stop = AtomicBool::new(false);
        let r = run_groups(&[g], Kernel::Triad, 3, &stop).expect("bench group");
        assert_eq!(r[0].gbps.len(), 3);
        assert!(r[0].gbps.iter().all(|v| v.is_finite() && *v > 0.0), "{:?}", r[0].gbps);
        assert!(r[0].on_node_share > 0.99, "pages on node 0: {}", r[0].on_node_share);
    }
}
