//! The pages Apply works on, without ever listing them: a plan range (or the runs of a rollback
//! record) clipped to the target's mappings is a handful of segments, and every pass (the
//! dry run's query, the moves, the verification) walks them in batches of at most
//! [`MAX_BATCH_PAGES`] pages, computing each page's address and target node on the fly. Memory
//! is proportional to ranges, mappings and batches, never to pages.
//!
//! The move pass claims its batches from a [`Cursor`] shared by its threads, each sized by a
//! [`Sizer`]: a fixed `--batch`, or by default as many pages as one `move_pages` call moves in
//! about [`TARGET_CALL`] (every call has a fixed cost — the kernel drains the per-cpu LRU
//! caches of every cpu before it migrates — so bigger calls are cheaper per page, while the time
//! budget and the progress lines want calls that end soon).

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Largest batch of pages handed to one `move_pages` call (and the cap of `--batch`).
pub const MAX_BATCH_PAGES: usize = 65_536;
/// The first batch of each move thread when the size is adaptive (no `--batch`): the largest
/// (256 MiB of 4 KiB pages: a fraction of a second on real hardware, about a second in an
/// emulated guest), or the thread's share of the work when that is smaller.
pub const FIRST_AUTO_BATCH: usize = MAX_BATCH_PAGES;
/// With adaptive batches, a move thread is started for every this many pages (up to `--jobs`).
pub const PAGES_PER_JOB: usize = 16_384;
/// The first adaptive batch under a time budget, before any call has been timed.
pub const FIRST_BUDGET_BATCH: usize = 4096;
/// The smallest adaptive batch (near the end of the time budget, or of the work).
pub const MIN_AUTO_BATCH: usize = 256;
/// How long one adaptive batch (its query and its `move_pages` call) aims to take: long enough
/// that the fixed cost of a call is small beside it, short enough for a progress line a second
/// (the time budget caps each batch separately).
pub const TARGET_CALL: Duration = Duration::from_secs(1);
/// An adaptive batch grows at most this many times over the last one.
const MAX_GROWTH: u64 = 4;
/// Pages per query call in the pre-flight and verification passes.
pub const QUERY_BATCH_PAGES: usize = 4096;
/// Pages in flight at once over all worker threads (`jobs` × batch): bounds memory, and how far
/// a pass can overrun the rollback record's run limit (see `APPLY_MAX_RUNS`).
pub const MAX_PAGES_IN_FLIGHT: usize = 1 << 20;

/// Mapped address ranges of process `pid` (`/proc/PID/maps`), sorted, touching ones merged.
/// Read line by line: memory is proportional to the number of mappings.
pub fn read_mappings(pid: i32, proc_root: &Path) -> io::Result<Vec<(u64, u64)>> {
    let f = File::open(proc_root.join(format!("{pid}/maps")))?;
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut line = String::new();
    let mut r = BufReader::new(f);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            break;
        }
        if let Some((a, b)) = parse_maps_range(&line) {
            // The kernel lists mappings in address order: join touching ones as they come.
            match out.last_mut() {
                Some(last) if a == last.1 => last.1 = b,
                _ => out.push((a, b)),
            }
        }
    }
    Ok(normalise(out))
}

/// `start-end` of a `/proc/PID/maps` line.
pub fn parse_maps_range(line: &str) -> Option<(u64, u64)> {
    let first = line.split_whitespace().next()?;
    let (a, b) = first.split_once('-')?;
    let (a, b) = (u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?);
    (a < b).then_some((a, b))
}

/// The parts of `[start, end)` inside `maps` (sorted, disjoint).
pub fn clip(start: u64, end: u64, maps: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let first = maps.partition_point(|m| m.1 <= start);
    for &(a, b) in &maps[first..] {
        if a >= end {
            break;
        }
        let (s, e) = (a.max(start), b.min(end));
        if s < e {
            out.push((s, e));
        }
    }
    out
}

/// Pages (of `page` bytes) of `[start, end)` that lie in `maps` (sorted, disjoint).
pub fn overlap_pages(start: u64, end: u64, maps: &[(u64, u64)], page: u64) -> u64 {
    clip(start, end, maps).iter().map(|(s, e)| (e - s) / page).sum()
}

/// `addr` lies in one of `maps` (sorted, disjoint).
pub fn contains(maps: &[(u64, u64)], addr: u64) -> bool {
    let i = maps.partition_point(|m| m.1 <= addr);
    i < maps.len() && maps[i].0 <= addr
}

/// Sorts and merges overlapping or touching ranges.
pub fn normalise(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// A run of mapped pages of a [`Group`] with one rule for their target node.
#[derive(Clone, Debug, PartialEq)]
pub struct Seg {
    pub start: u64,
    pub pages: u64,
    /// Index of the segment's first page among the group's pages.
    pub first: u64,
    /// `Some(node)`: every page goes there; `None`: the group's interleave rule.
    pub node: Option<u32>,
}

/// One group of pages with their target nodes (a plan range, or the runs of a rollback record).
#[derive(Clone, Debug)]
pub struct Group {
    pub start: u64,
    pub end: u64,
    /// `move`, `interleave`, `weighted-interleave` or `restore`.
    pub action: String,
    pub to_nodes: Vec<u32>,
    pub expected_nodes: Option<std::collections::BTreeMap<u32, u64>>,
    /// Interleave origin: page i counted from here goes to `to_nodes[i % n]` (the plan range's
    /// start, also when the range was clipped).
    pub origin: u64,
    /// Weighted interleave: the slot layout of the weights (page i to
    /// `to_nodes[slots.index(i)]`); `None`: plain interleave.
    pub slots: Option<super::weights::Slots>,
    /// The weights behind `slots`, for the report.
    pub weights: Option<Vec<u8>>,
    pub segs: Vec<Seg>,
    /// Mapped pages (the sum of the segments).
    pub pages: u64,
    /// Pages of the range (or record) outside every mapping: skipped.
    pub unmapped: u64,
}

impl Group {
    /// An empty group for `[start, end)`; [`Group::push`] adds its mapped parts.
    pub fn new(start: u64, end: u64, action: &str, to_nodes: Vec<u32>) -> Group {
        Group {
            start,
            end,
            action: action.into(),
            to_nodes,
            expected_nodes: None,
            origin: start,
            slots: None,
            weights: None,
            segs: Vec::new(),
            pages: 0,
            unmapped: 0,
        }
    }

    /// Appends a segment of `pages` pages from `start` (after every earlier one).
    pub fn push(&mut self, start: u64, pages: u64, node: Option<u32>) {
        if pages == 0 {
            return;
        }
        self.segs.push(Seg { start, pages, first: self.pages, node });
        self.pages += pages;
    }

    /// Target node of the page at `addr` in `seg`.
    pub fn target(&self, seg: &Seg, addr: u64, page: u64) -> u32 {
        match seg.node {
            Some(n) => n,
            None => {
                let i = (addr - self.origin) / page;
                match &self.slots {
                    Some(s) => self.to_nodes[s.index(i).min(self.to_nodes.len() - 1)],
                    None => self.to_nodes[(i % self.to_nodes.len() as u64) as usize],
                }
            }
        }
    }

    /// Fills `addrs` and `targets` with pages `from..from + n` of the group.
    pub fn fill(&self, from: u64, n: u64, page: u64, addrs: &mut Vec<u64>, targets: &mut Vec<u32>) {
        addrs.clear();
        targets.clear();
        let end = (from + n).min(self.pages);
        let mut i = from;
        let mut si = self.segs.partition_point(|s| s.first + s.pages <= from);
        while i < end && si < self.segs.len() {
            let s = &self.segs[si];
            let k0 = i - s.first;
            let k1 = (end - s.first).min(s.pages);
            for k in k0..k1 {
                let a = s.start + k * page;
                addrs.push(a);
                targets.push(self.target(s, a, page));
            }
            i = s.first + k1;
            si += 1;
        }
    }

    /// Pages of the group inside `maps` (sorted, disjoint).
    pub fn pages_in(&self, maps: &[(u64, u64)], page: u64) -> u64 {
        self.segs.iter().map(|s| overlap_pages(s.start, s.start + s.pages * page, maps, page)).sum()
    }
}

/// The batches of one pass over all groups: batch `k` is pages `from..from + n` of group `g`.
pub struct Batches {
    size: u64,
    /// `first[g]`: global index of group g's first batch; one more entry at the end.
    first: Vec<usize>,
}

impl Batches {
    pub fn new(groups: &[Group], size: usize) -> Batches {
        let size = size.clamp(1, MAX_BATCH_PAGES) as u64;
        let mut first = Vec::with_capacity(groups.len() + 1);
        let mut n = 0usize;
        for g in groups {
            first.push(n);
            n += g.pages.div_ceil(size) as usize;
        }
        first.push(n);
        Batches { size, first }
    }

    pub fn len(&self) -> usize {
        *self.first.last().unwrap_or(&0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (group, first page index, pages) of batch `k`.
    pub fn locate(&self, k: usize, groups: &[Group]) -> (usize, u64, u64) {
        let g = self.first.partition_point(|&f| f <= k) - 1;
        let from = (k - self.first[g]) as u64 * self.size;
        (g, from, self.size.min(groups[g].pages - from))
    }
}

/// Hands out the pages of all groups, in order, in batches that stay inside one group; shared by
/// the threads of a pass. What it has not handed out is what a stopped pass did not reach.
pub struct Cursor {
    /// (group, first page of the group not yet handed out)
    pos: Mutex<(usize, u64)>,
    left: AtomicU64,
}

impl Cursor {
    pub fn new(groups: &[Group]) -> Cursor {
        Cursor { pos: Mutex::new((0, 0)), left: AtomicU64::new(groups.iter().map(|g| g.pages).sum()) }
    }

    /// Pages not handed out yet.
    pub fn left(&self) -> u64 {
        self.left.load(Ordering::SeqCst)
    }

    /// The next batch of at most `want` (at least 1) pages: (group, first page index, pages).
    pub fn claim(&self, groups: &[Group], want: u64) -> Option<(usize, u64, u64)> {
        let mut pos = self.pos.lock().unwrap_or_else(|e| e.into_inner());
        while pos.0 < groups.len() && pos.1 >= groups[pos.0].pages {
            *pos = (pos.0 + 1, 0);
        }
        let g = groups.get(pos.0)?;
        let (gi, from) = *pos;
        let n = want.max(1).min(g.pages - from);
        pos.1 += n;
        self.left.fetch_sub(n, Ordering::SeqCst);
        Some((gi, from, n))
    }

    /// Pages not handed out, per group.
    pub fn left_per_group(&self, groups: &[Group]) -> Vec<u64> {
        let pos = *self.pos.lock().unwrap_or_else(|e| e.into_inner());
        groups
            .iter()
            .enumerate()
            .map(|(i, g)| match i.cmp(&pos.0) {
                std::cmp::Ordering::Less => 0,
                std::cmp::Ordering::Equal => g.pages.saturating_sub(pos.1),
                std::cmp::Ordering::Greater => g.pages,
            })
            .collect()
    }
}

/// Sizes the batches of one move thread: a fixed size (`--batch`), or adaptive: the first is
/// [`FIRST_AUTO_BATCH`], each next one as many pages as the last batch's time per page says fit
/// in [`TARGET_CALL`] (growing at most [`MAX_GROWTH`]-fold a step), never more than fits in the
/// time budget that is left, nor more than the thread's share of the pages left, and between
/// [`MIN_AUTO_BATCH`] and [`MAX_BATCH_PAGES`]. Under a time budget the first batch, not timed
/// yet, is [`FIRST_BUDGET_BATCH`].
#[derive(Clone, Debug)]
pub struct Sizer {
    fixed: Option<u64>,
    next: u64,
    /// Nanoseconds per page of the last batch.
    ns_per_page: Option<f64>,
}

impl Sizer {
    /// `fixed`: the `--batch` size (clamped to 1..=[`MAX_BATCH_PAGES`]), or `None` for adaptive.
    pub fn new(fixed: Option<usize>) -> Sizer {
        Sizer {
            fixed: fixed.map(|b| b.clamp(1, MAX_BATCH_PAGES) as u64),
            next: FIRST_AUTO_BATCH as u64,
            ns_per_page: None,
        }
    }

    /// Pages for the next batch, given the time budget left (`None`: no budget) and this
    /// thread's share of the work (all pages / threads, rounded up).
    pub fn size(&self, budget_left: Option<Duration>, share: u64) -> u64 {
        if let Some(f) = self.fixed {
            return f;
        }
        let mut n = self.next;
        match (budget_left, self.ns_per_page) {
            (Some(b), Some(p)) => n = n.min((b.as_nanos() as f64 / p) as u64),
            (Some(_), None) => n = n.min(FIRST_BUDGET_BATCH as u64),
            (None, _) => {}
        }
        n.min(share).clamp(MIN_AUTO_BATCH as u64, MAX_BATCH_PAGES as u64)
    }

    /// A batch of `pages` pages took `took`: sizes the next one.
    pub fn observe(&mut self, pages: u64, took: Duration) {
        if self.fixed.is_some() || pages == 0 {
            return;
        }
        let p = (took.as_nanos() as f64 / pages as f64).max(1.0);
        self.ns_per_page = Some(p);
        let fit = (TARGET_CALL.as_nanos() as f64 / p) as u64;
        self.next = fit.min(pages.saturating_mul(MAX_GROWTH)).clamp(MIN_AUTO_BATCH as u64, MAX_BATCH_PAGES as u64);
    }
}

/// Runs `f(state, k)` for every batch `k < n` on up to `jobs` threads, each with its own state
/// from `init`; returns the states. Falls back to fewer threads (at least the calling one) when
/// a thread cannot be started.
pub fn par_batches<S: Send>(
    n: usize,
    jobs: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) + Sync,
) -> Vec<S> {
    let next = AtomicUsize::new(0);
    let work = |s: &mut S| loop {
        let k = next.fetch_add(1, Ordering::SeqCst);
        if k >= n {
            break;
        }
        f(s, k);
    };
    if jobs <= 1 || n <= 1 {
        let mut s = init();
        work(&mut s);
        return vec![s];
    }
    std::thread::scope(|sc| {
        let mut hs = Vec::new();
        for _ in 0..jobs.min(n) - 1 {
            let h = std::thread::Builder::new().spawn_scoped(sc, || {
                let mut s = init();
                work(&mut s);
                s
            });
            match h {
                Ok(h) => hs.push(h),
                Err(_) => break,
            }
        }
        let mut s = init();
        work(&mut s);
        let mut out = vec![s];
        for h in hs {
            match h.join() {
                Ok(s) => out.push(s),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out
    })
}

/// Run-length encoding of (address, node) pairs pushed in increasing address order (mostly:
/// an out-of-order push starts a new run; [`merge_runs`] sorts and joins them at the end).
#[derive(Default)]
pub struct RunBuilder {
    pub runs: Vec<(u64, u64, u32)>,
}

impl RunBuilder {
    pub fn push(&mut self, addr: u64, node: u32, page: u64) {
        if let Some(last) = self.runs.last_mut() {
            if last.2 == node && last.0 + last.1 * page == addr {
                last.1 += 1;
                return;
            }
        }
        self.runs.push((addr, 1, node));
    }
}

/// Number of runs `pairs` (ascending addresses) form.
pub fn count_runs(pairs: impl Iterator<Item = (u64, u32)>, page: u64) -> usize {
    let mut n = 0;
    let mut last: Option<(u64, u32)> = None;
    for (a, node) in pairs {
        match last {
            Some((la, ln)) if ln == node && la + page == a => {}
            _ => n += 1,
        }
        last = Some((a, node));
    }
    n
}

/// Sorts the runs of several builders by address and joins consecutive ones with one node.
pub fn merge_runs(mut all: Vec<(u64, u64, u32)>, page: u64) -> Vec<(u64, u64, u32)> {
    all.sort_unstable();
    let mut out: Vec<(u64, u64, u32)> = Vec::with_capacity(all.len());
    for (a, c, n) in all {
        if let Some(last) = out.last_mut() {
            if last.2 == n && last.0 + last.1 * page == a {
                last.1 += c;
                continue;
            }
        }
        out.push((a, c, n));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = 0x1000;

    #[test]
    fn clip_to_mappings() {
        let maps = vec![(0x1000, 0x3000), (0x5000, 0x8000)];
        assert_eq!(clip(0, 0x10000, &maps), maps);
        assert_eq!(clip(0x2000, 0x6000, &maps), vec![(0x2000, 0x3000), (0x5000, 0x6000)]);
        assert!(clip(0x3000, 0x5000, &maps).is_empty());
        assert_eq!(overlap_pages(0, !0xfff, &maps, P), 5);
        assert!(contains(&maps, 0x5000) && !contains(&maps, 0x3000) && !contains(&maps, 0x8000));
        assert_eq!(normalise(vec![(5, 8), (1, 3), (3, 4)]), vec![(1, 4), (5, 8)]);
        assert_eq!(parse_maps_range("7f00-7f10 rw-p 00000000 00:00 0   [heap]\n"), Some((0x7f00, 0x7f10)));
    }

    #[test]
    fn weighted_interleave_counts_slots_from_the_range_start() {
        let mut g = Group::new(0x10000, 0x30000, "weighted-interleave", vec![2, 0]);
        g.slots = Some(super::super::weights::Slots::new(&[3, 1]));
        g.push(0x11000, 8, None); // pages 1..=8 of the range (clipped: page 0 unmapped)
        let (mut a, mut t) = (Vec::new(), Vec::new());
        g.fill(0, 8, P, &mut a, &mut t);
        assert_eq!(t, vec![2, 2, 0, 2, 2, 2, 0, 2]);
    }

    #[test]
    fn fill_walks_segments_and_interleave_counts_from_the_range_start() {
        let mut g = Group::new(0x10000, 0x20000, "interleave", vec![0, 1, 2]);
        g.push(0x11000, 2, None); // pages 1, 2 of the range
        g.push(0x15000, 3, None); // pages 5, 6, 7
        assert_eq!(g.pages, 5);
        let (mut a, mut t) = (Vec::new(), Vec::new());
        g.fill(0, 10, P, &mut a, &mut t);
        assert_eq!(a, vec![0x11000, 0x12000, 0x15000, 0x16000, 0x17000]);
        assert_eq!(t, vec![1, 2, 2, 0, 1]);
        g.fill(1, 3, P, &mut a, &mut t);
        assert_eq!(a, vec![0x12000, 0x15000, 0x16000]);
        let b = Batches::new(std::slice::from_ref(&g), 2);
        assert_eq!(b.len(), 3);
        assert_eq!(b.locate(2, std::slice::from_ref(&g)), (0, 4, 1));
    }

    #[test]
    fn batches_span_groups() {
        let mut a = Group::new(0, 0x10000, "move", vec![0]);
        a.push(0, 5, Some(0));
        let empty = Group::new(0x10000, 0x20000, "move", vec![0]);
        let mut c = Group::new(0x20000, 0x30000, "move", vec![1]);
        c.push(0x20000, 4, Some(1));
        let gs = vec![a, empty, c];
        let b = Batches::new(&gs, 4);
        assert_eq!(b.len(), 3);
        assert_eq!(b.locate(0, &gs), (0, 0, 4));
        assert_eq!(b.locate(1, &gs), (0, 4, 1));
        assert_eq!(b.locate(2, &gs), (2, 0, 4));
    }

    #[test]
    fn runs_build_count_and_merge() {
        let mut r = RunBuilder::default();
        for (a, n) in [(0x1000, 0), (0x2000, 0), (0x3000, 1), (0x5000, 1)] {
            r.push(a, n, P);
        }
        assert_eq!(r.runs, vec![(0x1000, 2, 0), (0x3000, 1, 1), (0x5000, 1, 1)]);
        assert_eq!(count_runs([(0x1000, 0), (0x2000, 0), (0x3000, 1), (0x5000, 1)].into_iter(), P), 3);
        let mut other = RunBuilder::default();
        other.push(0x4000, 1, P);
        let mut all = r.runs.clone();
        all.extend(other.runs);
        assert_eq!(merge_runs(all, P), vec![(0x1000, 2, 0), (0x3000, 3, 1)]);
    }

    #[test]
    fn cursor_hands_out_every_page_once_within_groups() {
        let mut a = Group::new(0, 0x10000, "move", vec![0]);
        a.push(0, 5, Some(0));
        let empty = Group::new(0x10000, 0x20000, "move", vec![0]);
        let mut c = Group::new(0x20000, 0x30000, "move", vec![1]);
        c.push(0x20000, 4, Some(1));
        let gs = vec![a, empty, c];
        let cur = Cursor::new(&gs);
        assert_eq!(cur.left(), 9);
        assert_eq!(cur.claim(&gs, 3), Some((0, 0, 3)));
        assert_eq!(cur.left_per_group(&gs), vec![2, 0, 4]);
        assert_eq!(cur.claim(&gs, 3), Some((0, 3, 2)), "a batch stays inside its group");
        assert_eq!(cur.claim(&gs, 0), Some((2, 0, 1)), "empty groups are skipped; at least one page");
        assert_eq!(cur.claim(&gs, 100), Some((2, 1, 3)));
        assert_eq!(cur.claim(&gs, 100), None);
        assert_eq!((cur.left(), cur.left_per_group(&gs)), (0, vec![0, 0, 0]));
        // shared by threads: every page once
        let cur = Cursor::new(&gs);
        let got = par_batches(8, 4, Vec::new, |v: &mut Vec<(usize, u64, u64)>, _| {
            while let Some(b) = cur.claim(&gs, 1) {
                v.push(b);
            }
        });
        let mut all: Vec<_> = got.into_iter().flatten().collect();
        all.sort_unstable();
        let want: Vec<_> = (0..5).map(|i| (0, i, 1)).chain((0..4).map(|i| (2, i, 1))).collect();
        assert_eq!(all, want);
    }

    #[test]
    fn sizer_grows_towards_the_target_and_respects_budget_and_share() {
        let ms = Duration::from_millis;
        let mut s = Sizer::new(None);
        assert_eq!(s.size(None, u64::MAX), FIRST_AUTO_BATCH as u64);
        assert_eq!(s.size(None, 16_384), 16_384, "the thread's share of the work");
        assert_eq!(s.size(Some(ms(10_000)), u64::MAX), FIRST_BUDGET_BATCH as u64, "not timed yet");
        // 4000 pages in 100 ms: 25 µs a page, 40 000 fit in 1 s, but growth is at most 4×
        s.observe(4000, ms(100));
        assert_eq!(s.size(None, u64::MAX), 16_000);
        s.observe(16_000, ms(400));
        assert_eq!(s.size(None, u64::MAX), 40_000);
        // fast pages: capped at the largest batch
        s.observe(40_000, ms(4));
        assert_eq!(s.size(None, u64::MAX), MAX_BATCH_PAGES as u64);
        // slow pages: shrinks at once, not below the smallest batch
        s.observe(65_536, Duration::from_secs(600));
        assert_eq!(s.size(None, u64::MAX), MIN_AUTO_BATCH as u64);
        // 25 µs a page and 50 ms of budget left: 2000 pages
        s.observe(400, ms(10));
        assert_eq!(s.size(Some(ms(500)), u64::MAX), 1600, "growth cap first");
        s.observe(40_000, ms(1000));
        assert_eq!(s.size(Some(ms(50)), u64::MAX), 2000);
        assert_eq!(s.size(None, 3000), 3000, "the thread's share of what is left");
        assert_eq!(s.size(None, 10), MIN_AUTO_BATCH as u64);
        // a fixed size stays fixed
        let mut f = Sizer::new(Some(100));
        f.observe(100, Duration::from_secs(100));
        assert_eq!(f.size(Some(ms(1)), 1), 100);
        assert_eq!(Sizer::new(Some(1 << 30)).size(None, 1), MAX_BATCH_PAGES as u64);
    }

    #[test]
    fn par_batches_visits_every_batch_once() {
        let states = par_batches(100, 4, Vec::new, |s: &mut Vec<usize>, k| s.push(k));
        let mut all: Vec<usize> = states.into_iter().flatten().collect();
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    }
}
