//! Querying where pages are (`move_pages` without nodes) in batches on several threads: the
//! dry run's query of every page, the permission pre-flight, and the verification after the
//! moves (or numa_maps, `vma_view`, where it covers enough of the process).

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use super::options::ApplyOptions;
use super::pages::{self, Cursor, Group, QUERY_BATCH_PAGES};
use super::report::{addmap, PageStats};
use super::{sys, vma_view};

/// Milliseconds since `t`.
pub(super) fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Locks, also after a worker panicked (the data are counters).
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds the pages of one queried batch to `d`: per node before, per planned node, in place or
/// to move (the indices of those to move go to `work` when given), not present.
pub(super) fn count_before(
    status: &[i32],
    targets: &[u32],
    no_skip: bool,
    d: &mut PageStats,
    mut work: Option<&mut Vec<usize>>,
) {
    let (mut before, mut planned) = (NodeCounts::default(), NodeCounts::default());
    for (i, (&b, &t)) in status.iter().zip(targets).enumerate() {
        if b >= 0 {
            before.add(b as u32);
            planned.add(t);
            if b as u32 == t && !no_skip {
                d.already_in_place += 1;
            } else {
                d.to_move += 1;
                if let Some(w) = work.as_deref_mut() {
                    w.push(i);
                }
            }
        } else {
            d.not_present_before += 1;
        }
    }
    before.into_map(&mut d.before);
    planned.into_map(&mut d.planned_after);
}

/// Pages per node of one batch, counted in an array (no map operation per page).
#[derive(Default)]
struct NodeCounts(Vec<u64>);

impl NodeCounts {
    fn add(&mut self, node: u32) {
        let n = node as usize;
        if n >= self.0.len() {
            // bounded: the kernel's node ids and the plan's (checked) are below MAX_NODES
            self.0.resize(n + 1, 0);
        }
        self.0[n] += 1;
    }

    fn into_map(self, m: &mut BTreeMap<u32, u64>) {
        for (n, &c) in self.0.iter().enumerate().filter(|(_, &c)| c > 0) {
            *m.entry(n as u32).or_default() += c;
        }
    }
}

/// One thread's buffers of a query pass (reused from batch to batch).
#[derive(Default)]
pub(super) struct QueryBufs {
    pub(super) addrs: Vec<u64>,
    pub(super) targets: Vec<u32>,
    pub(super) status: Vec<i32>,
}

impl QueryBufs {
    /// Fills the buffers with pages `from..from + n` of `g` and queries their nodes.
    pub(super) fn query(&mut self, pid: i32, g: &Group, from: u64, n: u64, page: u64) -> io::Result<()> {
        g.fill(from, n, page, &mut self.addrs, &mut self.targets);
        self.status.resize(self.addrs.len(), 0);
        sys::query_nodes(pid, &self.addrs, &mut self.status)
    }
}

/// Query pass: walks the pages `cursor` has not handed out (in batches, on `jobs` threads) and
/// adds them to the before/planned/to-move counters of their group in `stats`. The dry run walks
/// every page this way; a real apply only what a stopped move pass did not reach.
#[allow(clippy::too_many_arguments)]
pub(super) fn query_pass(
    pid: i32,
    page: u64,
    groups: &[Group],
    cursor: &Cursor,
    jobs: usize,
    no_skip: bool,
    stats: &mut [PageStats],
) -> io::Result<()> {
    let shared = Mutex::new(stats);
    let failed: Mutex<Option<io::Error>> = Mutex::new(None);
    let stop = AtomicBool::new(false);
    pages::par_batches(jobs, jobs, QueryBufs::default, |q, _| {
        while !stop.load(Ordering::SeqCst) {
            let Some((g, from, n)) = cursor.claim(groups, QUERY_BATCH_PAGES as u64) else { return };
            match q.query(pid, &groups[g], from, n, page) {
                Ok(()) => {
                    let mut d = PageStats::default();
                    count_before(&q.status, &q.targets, no_skip, &mut d, None);
                    lock(&shared)[g].add_counts(&d);
                }
                Err(e) => {
                    // never queried: counted as not attempted (a dry run reports the error)
                    lock(&shared)[g].not_attempted += n;
                    stop.store(true, Ordering::SeqCst);
                    lock(&failed).get_or_insert(e);
                }
            }
        }
    });
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The permission pre-flight of a real apply, before anything changes: one query of the first
/// page of every range. Reading (and moving) another process's pages is allowed or refused per
/// process (ptrace read access), so one page says what every page would; the move pass queries
/// each batch just before it moves it.
pub(super) fn preflight(pid: i32, groups: &[Group]) -> io::Result<()> {
    let addrs: Vec<u64> = groups.iter().filter_map(|g| g.segs.first()).map(|s| s.start).collect();
    let mut status = vec![0; addrs.len()];
    if addrs.is_empty() {
        return Ok(());
    }
    sys::query_nodes(pid, &addrs, &mut status)
}

/// Pages per node found by the verification, and how many are on their planned node.
pub(super) type Found = Option<(BTreeMap<u32, u64>, u64)>;

/// numa_maps joined with maps (`vma_view`), when the `move` groups hold at least half of the
/// process's resident pages (reading it walks every mapping); `None` otherwise or unreadable.
pub(super) fn view_if_worth(pid: i32, page: u64, groups: &[Group], opts: &ApplyOptions) -> Option<Vec<vma_view::Vma>> {
    if opts.query_every_page {
        return None;
    }
    let proc_root = &opts.proc_root;
    let covered: u64 = groups.iter().filter(|g| g.action == "move").map(|g| g.pages).sum();
    let resident = vma_view::resident_pages(pid, proc_root)?;
    if !vma_view::worth_reading(covered, resident) {
        return None;
    }
    vma_view::read(pid, proc_root, page)
}

/// Verification pass: pages per node after, and pages on their planned node, per group
/// (`None` where a query failed).
/// Groups whose counts `from_view` has (numa_maps, `vma_view::counts`) are not queried.
pub(super) fn verify(pid: i32, page: u64, groups: &[Group], jobs: usize, from_view: Vec<Found>) -> Vec<Found> {
    let cursor = Cursor::new(groups);
    let served: Vec<bool> = from_view.iter().map(Option::is_some).collect();
    let acc: Mutex<Vec<Found>> = Mutex::new(from_view.into_iter().map(|f| Some(f.unwrap_or_default())).collect());
    pages::par_batches(jobs, jobs, QueryBufs::default, |q, _| {
        while let Some((g, from, n)) = cursor.claim(groups, QUERY_BATCH_PAGES as u64) {
            if served[g] || lock(&acc)[g].is_none() {
                continue;
            }
            match q.query(pid, &groups[g], from, n, page) {
                Ok(()) => {
                    let mut counts = NodeCounts::default();
                    let mut on = 0;
                    for (&a, &t) in q.status.iter().zip(&q.targets) {
                        if a >= 0 {
                            counts.add(a as u32);
                            if a as u32 == t {
                                on += 1;
                            }
                        }
                    }
                    let mut hist = BTreeMap::new();
                    counts.into_map(&mut hist);
                    if let Some((h, o)) = lock(&acc)[g].as_mut() {
                        addmap(h, &hist);
                        *o += on;
                    }
                }
                Err(_) => lock(&acc)[g] = None,
            }
        }
    });
    acc.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Threads of a query pass over `mapped` pages: `jobs`, one per 65536 pages at most (a query
/// is cheap per page; concurrent queries of one process contend for its page tables' locks).
pub(super) fn query_jobs(opts: &ApplyOptions, mapped: u64) -> usize {
    opts.max_jobs().min(mapped.div_ceil(65_536) as usize).max(1)
}
