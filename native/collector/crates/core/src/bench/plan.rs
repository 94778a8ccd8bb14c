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

    #[test]
    fn arrays_are_beyond_the_cache() {
        let s = sizes(true, Some(256 * MIB), 2);
        assert_eq!(s.array_bytes, 4 * 512 * MIB);
        assert!(sizes(false, Some(MIB), 1).array_bytes >= 128 * MIB);
    }
}
