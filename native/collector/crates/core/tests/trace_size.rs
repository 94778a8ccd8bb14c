//! Issue 33: a sample costs at most 16 bytes on disk (Arrow body compression ZSTD), and the
//! reader bounds what a compressed buffer may decompress to (docs/trace-format.md, "Size on disk").

use std::io::Cursor;
use std::time::Instant;

use numascope_core::fixture::fixture_trace;
use numascope_core::trace::reader::{read_table_bytes, read_trace_from};
use numascope_core::trace::writer::{table_ipc_bytes, write_trace_to};
use numascope_core::trace::TraceData;

/// xorshift64*: the same rows every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` samples shaped like the synthetic generator's (`two-groups`, 16 threads on 4 nodes,
/// 5,184 pages, PMU loads and stores with latency and data source) and as random as its rows:
/// the least compressible case measured (recordings compress better).
fn realistic_trace(n: usize) -> TraceData {
    let mut t = fixture_trace();
    let s = &mut t.samples;
    *s = Default::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut time = 0i64;
    let sources = ["l1", "lfb", "l2", "l3", "local-dram", "remote-dram", "remote-cache"];
    for _ in 0..n {
        time += rng.below(4) as i64;
        let thread = rng.below(16) as u32;
        let node = (thread / 4) as i8;
        let remote = rng.below(3) == 0;
        s.time_us.push(time);
        s.thread.push(thread);
        s.cpu.push((thread % 4) as i16); // the fixture machine's cpus
        s.page.push(rng.below(3) as i32); // the fixture's pages
        s.offset.push((rng.below(512) * 8) as u16);
        s.op.push(if rng.below(4) == 0 { "store" } else { "load" });
        s.event.push("ibs-op");
        s.data_source.push(sources[rng.below(sources.len() as u64) as usize]);
        s.hops.push(if remote { 1 } else { 0 });
        s.node.push(if remote { (node + 1) % 2 } else { node % 2 });
        s.latency_cycles.push(if remote { 250 + rng.below(300) as u32 } else { 20 + rng.below(250) as u32 });
        s.weight.push(1);
        s.stack.push(-1);
        s.hitm.push(if rng.below(50) == 0 { 1 } else { 0 });
    }
    t
}

#[test]
fn a_sample_takes_at_most_16_bytes() {
    let n = 1_000_000;
    let mut t = realistic_trace(n);
    let started = Instant::now();
    let buf = write_trace_to(&mut t, Cursor::new(Vec::new())).unwrap().into_inner();
    let wrote = started.elapsed();
    let per_sample = buf.len() as f64 / n as f64;
    let started = Instant::now();
    let back = read_trace_from(Cursor::new(buf.clone())).unwrap();
    println!(
        "{n} samples: {} bytes, {per_sample:.2} B/sample; write {wrote:?}, read {:?}",
        buf.len(),
        started.elapsed()
    );
    assert!(per_sample <= 16.0, "{per_sample:.2} bytes a sample, more than 16");
    assert_eq!(back.to_trace_data().samples, t.samples);
}

/// The samples table's IPC bytes and the positions of its compressed buffers' length prefixes
/// (the 8 bytes before each ZSTD frame's magic).
fn samples_ipc() -> (Vec<u8>, Vec<usize>) {
    let t = realistic_trace(70_000);
    let (bytes, _) = table_ipc_bytes(&t, "samples").unwrap();
    let prefixes =
        bytes.windows(4).enumerate().filter(|(_, w)| *w == [0x28, 0xb5, 0x2f, 0xfd]).map(|(i, _)| i - 8).collect();
    (bytes, prefixes)
}

#[test]
fn a_hostile_decompressed_length_is_refused_before_allocating() {
    let (bytes, prefixes) = samples_ipc();
    assert!(prefixes.len() > 10, "the samples table is ZSTD-compressed");
    read_table_bytes("samples", bytes.clone()).unwrap();
    for (declared, want) in [
        (1i64 << 40, "decompress to more than"),
        (1 << 62, "decompress to more than"),
        (-5, "decompressed length of -5"),
    ] {
        let mut b = bytes.clone();
        b[prefixes[3]..prefixes[3] + 8].copy_from_slice(&declared.to_le_bytes());
        let err = read_table_bytes("samples", b).unwrap_err().to_string();
        assert!(err.contains(want), "{declared}: {err}");
    }
    // A length that disagrees with the frame's own content size.
    let mut b = bytes.clone();
    let at = prefixes[3];
    let declared = i64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    b[at..at + 8].copy_from_slice(&(declared + 8).to_le_bytes());
    let err = read_table_bytes("samples", b).unwrap_err().to_string();
    assert!(err.contains("its ZSTD frame holds"), "{err}");
}

#[test]
fn corrupt_compressed_buffers_give_errors_not_panics() {
    let (bytes, prefixes) = samples_ipc();
    let mut rng = Rng(7);
    for round in 0..300 {
        let mut b = bytes.clone();
        let at = prefixes[rng.below(prefixes.len() as u64) as usize] + 8 + rng.below(64) as usize;
        for k in 0..1 + rng.below(4) as usize {
            if let Some(x) = b.get_mut(at + k * 3) {
                *x ^= 1 + rng.below(255) as u8;
            }
        }
        let result = std::panic::catch_unwind(|| read_table_bytes("samples", b));
        assert!(result.is_ok(), "round {round}: the reader panicked on a corrupt buffer at byte {at}");
    }
}
