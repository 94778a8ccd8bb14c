//! The steps of a benchmark run, in order, and their sizes.

use crate::topology::Topology;

/// One measurement step.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Copy and triad bandwidth, then idle latency, of cpu node `cpu` (index) on memory node `mem`.
    Pair { cpu: usize, mem: usize },
    /// Every cpu node runs triad on its own memory, all at once.
    AllLocal,
    /// Every cpu node runs triad on memory node `mem`, all at once.
    AllToOne { mem: usize },
    /// Latency on memory node `mem` while `load` threads read from it.
    Loaded { mem: usize, load: usize },
}

impl Step {
    pub fn describe(&self, topo: &Topology) -> String {
        let id = |i: usize| topo.nodes[i].id;
        match *self {
            Step::Pair { cpu, mem } => {
                format!("cpu node {} → memory node {}: copy, triad, idle latency", id(cpu), id(mem))
            }
            Step::AllLocal => "all cpu nodes on their own memory at once (triad)".into(),
            Step::AllToOne { mem } => format!("all cpu nodes on memory node {} at once (triad)", id(mem)),
            Step::Loaded { mem, load } => {
                format!("loaded latency on memory node {} with {load} load thread(s)", id(mem))
            }
        }
    }
}

/// Sizes and repetitions of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Sizes {
    /// Bytes of each of the three STREAM arrays of one cpu node.
    pub array_bytes: u64,
    /// Bytes of the pointer-chase buffer.
    pub chase_bytes: u64,
    /// Repetitions of each bandwidth kernel.
    pub reps: usize,
    /// Repetitions of each idle-latency chase.
    pub latency_reps: usize,
    /// Milliseconds one chase runs for (about).
    pub chase_ms: f64,
    /// Most loaded-latency points per memory node.
    pub loaded_points: usize,
}

const MIB: u64 = 1 << 20;

/// Sizes for `quick` or full mode from the last-level cache size (bytes, per cache instance) and
/// the number of cpu nodes: STREAM's rule, each array at least 4 × the caches of the cpus using it.
pub fn sizes(quick: bool, llc_bytes: Option<u64>, cpu_nodes: usize) -> Sizes {
    let llc = llc_bytes.unwrap_or(32 * MIB) * cpu_nodes.max(1) as u64;
    if quick {
        Sizes {
            array_bytes: (4 * llc).max(32 * MIB),
            chase_bytes: (4 * llc).max(64 * MIB),
            reps: 3,
            latency_reps: 2,
            chase_ms: 150.0,
            loaded_points: 3,
        }
    } else {
        Sizes {
            array_bytes: (8 * llc).max(128 * MIB),
            chase_bytes: (8 * llc).max(512 * MIB),
            reps: 10,
            latency_reps: 5,
            chase_ms: 400.0,
            loaded_points: 8,
        }
    }
}

/// A memory limit the sizes must fit: at most `bytes` mapped at once, and what sets it (for the note).
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    pub bytes: u64,
    pub what: String,
}

/// How the default sizes were scaled down to fit memory ([`fit_to_memory`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    /// The sizes before (array, chase bytes).
    pub from: (u64, u64),
    /// The limit that bound.
    pub limit: Limit,
}

/// Granularity of scaled sizes, and the smallest a scaled size gets (the chase needs 64 KiB).
const FIT_STEP: u64 = 64 * 1024;

/// Scales the sizes not given on the command line (`scale_array`, `scale_chase`) down, by one
/// factor for both, to the largest multiples of 64 KiB whose `peak` (bytes mapped at once) fits
/// every limit; explicit sizes are never changed. `None` when the sizes already fit (or nothing
/// may be scaled); else what they were and the limit that bound. When even 64 KiB does not fit,
/// the sizes are left at 64 KiB and the memory check that follows refuses the run.
pub fn fit_to_memory(
    s: &mut Sizes,
    scale_array: bool,
    scale_chase: bool,
    peak: &dyn Fn(&Sizes) -> u64,
    limits: &[Limit],
) -> Option<Fitted> {
    let limit = limits.iter().min_by_key(|l| l.bytes)?.clone();
    if peak(s) <= limit.bytes || !(scale_array || scale_chase) {
        return None;
    }
    let from = (s.array_bytes, s.chase_bytes);
    let at = |f: f64| {
        let scaled = |b: u64, on: bool| {
            if on {
                (((b as f64 * f) as u64) / FIT_STEP * FIT_STEP).max(FIT_STEP)
            } else {
                b
            }
        };
        Sizes { array_bytes: scaled(from.0, scale_array), chase_bytes: scaled(from.1, scale_chase), ..s.clone() }
    };
    // the peak grows with the factor: bisect for the largest factor that fits
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..48 {
        let mid = (lo + hi) / 2.0;
        if peak(&at(mid)) <= limit.bytes {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    *s = at(lo);
    Some(Fitted { from, limit })
}

/// The note a calibration carries when [`fit_to_memory`] scaled its sizes down.
pub fn fitted_note(f: &Fitted, s: &Sizes, llc_bytes: Option<u64>) -> String {
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / MIB as f64);
    let llc = llc_bytes.map(|b| format!(" (last-level cache: {} per instance)", mib(b))).unwrap_or_default();
    format!(
        "the default sizes were scaled down to fit the memory available: each STREAM array {} (default {}), the \
         latency chase buffer {} (default {}), so that the largest step maps at most {} at once ({}); arrays and \
         buffers this small may be partly served from the cache{llc}, so bandwidth may read high and latency low \
         (cache effects); pass --size and --chase-size to choose the sizes",
        mib(s.array_bytes),
        mib(f.from.0),
        mib(s.chase_bytes),
        mib(f.from.1),
        mib(f.limit.bytes),
        f.limit.what
    )
}

/// Load-thread counts for one loaded-latency curve: 0 … `max`, at most `points` of them, evenly spread.
pub fn load_counts(max: usize, points: usize) -> Vec<usize> {
    let points = points.max(2).min(max + 1);
    let mut out: Vec<usize> = (0..points).map(|i| (i * max + (points - 1) / 2) / (points - 1).max(1)).collect();
    out.dedup();
    out
}

/// Node indexes with cpus.
pub fn cpu_nodes(topo: &Topology) -> Vec<usize> {
    (0..topo.nodes.len()).filter(|&i| !topo.nodes[i].cpus.is_empty()).collect()
}

/// Every step of a run, in order: pairs first (the matrix is the most useful part when stopped
/// early), then contention, then the loaded-latency curves.
pub fn steps(topo: &Topology, s: &Sizes, load_threads: &dyn Fn(usize) -> usize) -> Vec<Step> {
    let cpus = cpu_nodes(topo);
    let mems = 0..topo.nodes.len();
    let mut out: Vec<Step> =
        cpus.iter().flat_map(|&c| mems.clone().map(move |m| Step::Pair { cpu: c, mem: m })).collect();
    if topo.nodes.len() > 1 {
        out.push(Step::AllLocal);
        out.extend(mems.clone().map(|mem| Step::AllToOne { mem }));
    }
    for mem in mems {
        out.extend(load_counts(load_threads(mem), s.loaded_points).into_iter().map(|load| Step::Loaded { mem, load }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_counts_span_zero_to_max() {
        assert_eq!(load_counts(1, 3), vec![0, 1]);
        assert_eq!(load_counts(0, 3), vec![0]);
        assert_eq!(load_counts(7, 8), (0..=7).collect::<Vec<_>>());
        let q = load_counts(15, 3);
        assert_eq!((q[0], *q.last().unwrap(), q.len()), (0, 15, 3));
    }

    /// The bench's peak on 4 cpu nodes of one cpu each (as `peak_bytes`): AllToOne puts every
    /// node's three arrays on one node.
    fn peak4(s: &Sizes) -> u64 {
        (3 * s.array_bytes * 4).max(s.chase_bytes + s.array_bytes).max(s.chase_bytes + 3 * s.array_bytes)
    }

    fn lim(mib: u64, what: &str) -> Limit {
        Limit { bytes: mib * MIB, what: what.into() }
    }

    #[test]
    fn default_sizes_scale_down_to_the_tightest_limit() {
        // 4 nodes, 16 MiB last-level cache: 256 MiB arrays, 3 GiB at once
        let mut s = sizes(true, Some(16 * MIB), 4);
        assert_eq!(peak4(&s), 3 << 30);
        let limits = [lim(900, "half of MemAvailable"), lim(210, "half of node 2's free memory")];
        let f = fit_to_memory(&mut s, true, true, &peak4, &limits).expect("scaled");
        assert_eq!(f.from, (256 * MIB, 256 * MIB));
        assert_eq!(f.limit.what, "half of node 2's free memory");
        assert!(peak4(&s) <= 210 * MIB, "fits: {s:?}");
        // the largest 64 KiB multiple that fits, one factor for both
        assert_eq!(s.array_bytes % FIT_STEP, 0);
        let more = Sizes { array_bytes: s.array_bytes + FIT_STEP, chase_bytes: s.chase_bytes + FIT_STEP, ..s.clone() };
        assert!(peak4(&more) > 210 * MIB);
        assert_eq!(s.array_bytes, s.chase_bytes);
        assert_eq!(s.array_bytes, 17 * MIB + 512 * 1024, "210 MiB / 12");
        let note = fitted_note(&f, &s, Some(16 * MIB));
        assert!(note.contains("scaled down") && note.contains("cache effects") && note.contains("node 2"), "{note}");
        assert!(note.contains("default 256.0 MiB"), "{note}");
    }

    #[test]
    fn sizes_that_fit_and_explicit_sizes_are_kept() {
        let mut s = sizes(true, Some(MIB), 4);
        let before = s.clone();
        assert_eq!(fit_to_memory(&mut s, true, true, &peak4, &[lim(4096, "MemAvailable")]), None);
        assert_eq!(s, before);
        // no limit known: kept
        let mut big = sizes(true, Some(16 * MIB), 4);
        assert_eq!(fit_to_memory(&mut big, true, true, &peak4, &[]), None);
        // --size given: only the chase buffer is scaled; the array stays as asked
        let mut s = Sizes { array_bytes: 16 * MIB, ..sizes(true, Some(16 * MIB), 4) };
        let f = fit_to_memory(&mut s, false, true, &peak4, &[lim(210, "x")]).unwrap();
        assert_eq!(s.array_bytes, 16 * MIB);
        assert_eq!(f.from.1, 256 * MIB);
        assert!(s.chase_bytes + 3 * s.array_bytes <= 210 * MIB && s.chase_bytes >= 150 * MIB, "{s:?}");
        // both given: nothing changes, even when they do not fit (the memory check refuses)
        let mut s = Sizes { array_bytes: GIB, chase_bytes: GIB, ..sizes(true, None, 4) };
        assert_eq!(fit_to_memory(&mut s, false, false, &peak4, &[lim(210, "x")]), None);
        assert_eq!(s.array_bytes, GIB);
        // nothing fits: the smallest sizes, left to the memory check
        let mut s = sizes(true, Some(16 * MIB), 4);
        fit_to_memory(&mut s, true, true, &peak4, &[lim(0, "x")]).unwrap();
        assert_eq!((s.array_bytes, s.chase_bytes), (FIT_STEP, FIT_STEP));
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn arrays_are_beyond_the_cache() {
        let s = sizes(true, Some(256 * MIB), 2);
        assert_eq!(s.array_bytes, 4 * 512 * MIB);
        assert!(sizes(false, Some(MIB), 1).array_bytes >= 128 * MIB);
    }
}
