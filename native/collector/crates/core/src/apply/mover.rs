//! The page mover: `move_pages` batches on several threads, each batch queried just before it
//! is moved, busy pages retried once, the rollback record's page runs kept as it goes.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::options::ApplyOptions;
use super::pages::{self, Cursor, Group, RunBuilder, Sizer};
use super::plan::APPLY_MAX_RUNS;
use super::query::{count_before, lock, ms, query_jobs, query_pass, view_if_worth, QueryBufs};
use super::record::PageRun;
use super::report::{NotMoved, PageStats, RangeReport, Status, Timings};
use super::target::{check_process, page_permission_message};
use super::{sys, vma_view};

/// What the move pass did.
pub(super) struct Moved {
    pub(super) jobs: usize,
    pub(super) status: Status,
    pub(super) message: Option<String>,
    /// The rollback record's page runs.
    pub(super) runs: Vec<PageRun>,
    /// Pages never queried because the process exited first.
    pub(super) unreached: u64,
    pub(super) warning: Option<String>,
}

/// Moves the pages of `groups` (each batch queried just before it is moved), retries busy pages
/// once, then queries what a stop left unreached (so that every page is counted) and adds the
/// counters to `ranges`.
#[allow(clippy::too_many_arguments)]
pub(super) fn move_pass(
    pid: i32,
    start_time: u64,
    page: u64,
    groups: &[Group],
    thp: &[(u64, u64)],
    opts: &ApplyOptions,
    t0: Instant,
    ranges: &mut [RangeReport],
    timings: &mut Timings,
) -> Moved {
    let mapped: u64 = groups.iter().map(|g| g.pages).sum();
    let jobs = opts.effective_jobs(mapped as usize);
    let t = Instant::now();
    let known: Vec<Option<u32>> = match view_if_worth(pid, page, groups, opts) {
        Some(v) => groups.iter().map(|g| vma_view::single_node(g, &v, page)).collect(),
        None => vec![None; groups.len()],
    };
    timings.numa_maps_ms += ms(t);
    timings.view_pages_before = groups.iter().zip(&known).filter(|(_, k)| k.is_some()).map(|(g, _)| g.pages).sum();
    let mover = Mover {
        pid,
        known,
        start_time,
        proc_root: &opts.proc_root,
        opts,
        page,
        groups,
        thp,
        t0,
        share: mapped.div_ceil(jobs as u64),
        cursor: Cursor::new(groups),
        stop: AtomicBool::new(false),
        budget_hit: AtomicBool::new(false),
        exited: AtomicBool::new(false),
        runs_full: AtomicBool::new(false),
        runs_used: AtomicUsize::new(0),
        done: AtomicU64::new(0),
        moved: AtomicU64::new(0),
        last_progress: Mutex::new(Instant::now()),
        message: Mutex::new(None),
        query_error: Mutex::new(None),
        counts: Mutex::new(vec![(PageStats::default(), 0); groups.len()]),
        query_ns: AtomicU64::new(0),
        call_ns: AtomicU64::new(0),
        calls: AtomicU64::new(0),
        batch_max: AtomicU64::new(0),
    };
    let mut states = pages::par_batches(jobs, jobs, || MoveState::new(opts.fixed_batch()), |st, _| mover.work(st));
    // Pass 1: pages that were busy (-EBUSY, outside THP mappings) are retried once.
    for st in states.iter_mut() {
        mover.retry(st);
    }
    timings.move_query_ms = mover.query_ns.load(Ordering::SeqCst) as f64 / 1e6;
    timings.move_call_ms = mover.call_ns.load(Ordering::SeqCst) as f64 / 1e6;
    timings.move_calls = mover.calls.load(Ordering::SeqCst);
    timings.move_batch_max = mover.batch_max.load(Ordering::SeqCst);
    let mut all_runs = Vec::new();
    for st in states {
        all_runs.extend(st.runs.runs);
    }
    let runs = pages::merge_runs(all_runs, page)
        .into_iter()
        .map(|(a, c, n)| PageRun { start: format!("0x{a:x}"), count: c, node: n })
        .collect();
    let mut counts = std::mem::take(&mut *lock(&mover.counts));
    // What a stop (time budget, rollback record full, not permitted) left unreached is queried
    // now, so that its pages count as in place, to move (not attempted) or not present.
    let mut unreached = 0;
    let mut warning = lock(&mover.query_error).take();
    let mut exited = mover.exited.load(Ordering::SeqCst);
    let mut unknown = exited;
    if mover.cursor.left() > 0 && !exited {
        let mut rest = vec![PageStats::default(); groups.len()];
        let t = Instant::now();
        let jobs = query_jobs(opts, mover.cursor.left());
        let r = query_pass(pid, page, groups, &mover.cursor, jobs, opts.no_skip, &mut rest);
        timings.query_ms += ms(t);
        for (c, d) in counts.iter_mut().zip(&rest) {
            c.0.add_counts(d);
            unreached += d.not_attempted;
        }
        if let Err(e) = r {
            if mover.failed(&e).is_some() {
                warning.get_or_insert(format!("the query of the pages the move pass did not reach failed: {e}"));
            }
            exited = mover.exited.load(Ordering::SeqCst);
            unknown = true;
        }
    }
    if unknown {
        // Never queried (the process exited, or the query failed): their placement is unknown;
        // they count as not attempted.
        for (c, left) in counts.iter_mut().zip(mover.cursor.left_per_group(groups)) {
            c.0.not_attempted += left;
            unreached += left;
        }
    }
    for (r, (d, attempted)) in ranges.iter_mut().zip(counts) {
        r.stats.add_counts(&d);
        r.stats.not_attempted += r.stats.to_move.saturating_sub(attempted);
    }
    let (status, message) = move_status(&mover, exited, opts);
    if mapped > 0 {
        mover.progress();
    }
    Moved { jobs, status, message, runs, unreached, warning }
}

/// The status after the move pass and why it is not `complete`.
fn move_status(mover: &Mover, exited: bool, opts: &ApplyOptions) -> (Status, Option<String>) {
    let mut status = Status::Complete;
    let mut message = None;
    if exited {
        status = Status::ProcessExited;
    } else if let Some(m) = lock(&mover.message).clone() {
        status = Status::Partial;
        message = Some(m);
    }
    if mover.runs_full.load(Ordering::SeqCst) && status != Status::ProcessExited {
        status = Status::Partial;
        message.get_or_insert(format!(
            "the rollback record reached its limit of {APPLY_MAX_RUNS} page runs (the pages' previous nodes \
             alternate too often to record compactly), so the remaining pages were not moved: split the plan \
             into smaller plans"
        ));
    }
    if let (true, Status::Complete, Some(b)) = (mover.budget_hit.load(Ordering::SeqCst), status, opts.budget) {
        status = Status::BudgetExhausted;
        message = Some(format!("the time budget of {} ms ran out; remaining pages were not moved", b.as_millis()));
    }
    (status, message)
}

/// The order in which to hand the pages `work` (indices into `targets`, ascending addresses) to
/// one `move_pages` call: positions in `work`, grouped by target node, stable (ascending addresses
/// within a node); the identity when there is one target.
fn grouped_by_target(work: &[usize], targets: &[u32], order: &mut Vec<usize>) {
    order.clear();
    order.extend(0..work.len());
    if work.windows(2).any(|w| targets[w[0]] != targets[w[1]]) {
        order.sort_by_key(|&j| targets[work[j]]);
    }
}

/// One worker's buffers and findings during the move pass.
struct MoveState {
    sizer: Sizer,
    q: QueryBufs,
    /// Indices (into `q`) of the batch's pages to move, and their addresses, target nodes and
    /// statuses as handed to `move_pages`.
    work: Vec<usize>,
    wa: Vec<u64>,
    wn: Vec<i32>,
    /// Statuses in `work` order; `call_status` in the call's order (`order`: grouped by target).
    status: Vec<i32>,
    order: Vec<usize>,
    call_status: Vec<i32>,
    /// Moved pages with the node they were on before (the rollback record).
    runs: RunBuilder,
    /// Busy pages to retry once: (group, address, target, node before).
    retry: Vec<(usize, u64, u32, u32)>,
}

impl MoveState {
    fn new(fixed_batch: Option<usize>) -> MoveState {
        MoveState {
            sizer: Sizer::new(fixed_batch),
            q: QueryBufs::default(),
            work: Vec::new(),
            wa: Vec::new(),
            wn: Vec::new(),
            status: Vec::new(),
            order: Vec::new(),
            call_status: Vec::new(),
            runs: RunBuilder::default(),
            retry: Vec::new(),
        }
    }
}

/// Issues `move_pages` batches, on `jobs` threads at once when asked (disjoint page sets of one
/// process: the kernel allows concurrent `move_pages` on one mm). Each thread claims its next
/// batch from the shared cursor, sized by its own [`Sizer`], and queries it just before moving it
/// (the current node decides what to move, is what the rollback record keeps, and gives the
/// report's before / to-move counters). Shared state: the stop flag (budget out, process gone,
/// not permitted, rollback record full), the progress counters and their 250 ms throttle, the
/// per-group counters.
struct Mover<'a> {
    pid: i32,
    start_time: u64,
    proc_root: &'a Path,
    opts: &'a ApplyOptions,
    page: u64,
    groups: &'a [Group],
    /// Per group: the node all its pages were on when numa_maps was read before the pass
    /// (`vma_view::single_node`), which then stands for the query before each move.
    known: Vec<Option<u32>>,
    thp: &'a [(u64, u64)],
    t0: Instant,
    /// Each thread's share of the work (pages / threads, rounded up): no batch is larger, so
    /// that every thread gets work at once.
    share: u64,
    cursor: Cursor,
    stop: AtomicBool,
    budget_hit: AtomicBool,
    exited: AtomicBool,
    runs_full: AtomicBool,
    /// Runs the workers' rollback builders hold (reserved before each move).
    runs_used: AtomicUsize,
    /// Pages handed to `move_pages` (first pass), and pages it reported moved.
    done: AtomicU64,
    moved: AtomicU64,
    last_progress: Mutex<Instant>,
    /// Why moving stopped for lack of permission.
    message: Mutex<Option<String>>,
    query_error: Mutex<Option<String>>,
    /// Per group: the batches' counters, and pages handed to move_pages in pass 0.
    counts: Mutex<Vec<(PageStats, u64)>>,
    /// Nanoseconds in queries and in moving `move_pages` calls (summed over threads), calls,
    /// and the largest batch.
    query_ns: AtomicU64,
    call_ns: AtomicU64,
    calls: AtomicU64,
    batch_max: AtomicU64,
}

impl Mover<'_> {
    /// Reserves room for `n` more runs in the rollback record; false (and moving stops) when
    /// the record would exceed [`APPLY_MAX_RUNS`].
    fn reserve_runs(&self, n: usize) -> bool {
        let mut cur = self.runs_used.load(Ordering::SeqCst);
        loop {
            if cur + n > APPLY_MAX_RUNS {
                self.runs_full.store(true, Ordering::SeqCst);
                self.stop.store(true, Ordering::SeqCst);
                return false;
            }
            match self.runs_used.compare_exchange(cur, cur + n, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return true,
                Err(x) => cur = x,
            }
        }
    }

    /// Replaces a reservation of `reserved` runs by the `added` runs a move really made.
    fn settle_runs(&self, reserved: usize, added: usize) {
        if added > reserved {
            self.runs_used.fetch_add(added - reserved, Ordering::SeqCst);
        } else {
            self.runs_used.fetch_sub(reserved - added, Ordering::SeqCst);
        }
    }

    /// A whole call failed. Returns the errno name when the pages count as not moved; `None`
    /// when moving stops (the process exited, or it is not permitted).
    fn failed(&self, e: &io::Error) -> Option<String> {
        let exited = e.raw_os_error() == Some(libc::ESRCH)
            || check_process(self.pid, Some(self.start_time), self.proc_root).is_err();
        if exited {
            self.exited.store(true, Ordering::SeqCst);
            self.stop.store(true, Ordering::SeqCst);
            return None;
        }
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                self.stop.store(true, Ordering::SeqCst);
                lock(&self.message).get_or_insert_with(|| page_permission_message(self.pid, self.proc_root, e));
                None
            }
            Some(n) => Some(sys::errno_name(n)),
            None => Some("unknown".into()),
        }
    }

    fn out_of_time(&self) -> bool {
        if let Some(b) = self.opts.budget {
            if self.t0.elapsed() >= b {
                self.budget_hit.store(true, Ordering::SeqCst);
                self.stop.store(true, Ordering::SeqCst);
                return true;
            }
        }
        false
    }

    fn budget_left(&self) -> Option<Duration> {
        self.opts.budget.map(|b| b.saturating_sub(self.t0.elapsed()))
    }

    /// `numascope: moved M pages; W/T pages of the plan walked (P%) in S s` on stderr.
    fn progress(&self) {
        if self.opts.progress {
            let total: u64 = self.groups.iter().map(|g| g.pages).sum();
            let walked = total - self.cursor.left();
            let pct = if total > 0 { walked as f64 * 100.0 / total as f64 } else { 100.0 };
            eprintln!(
                "numascope: moved {} pages; {walked}/{total} pages of the plan walked ({pct:.0}%) in {:.2} s",
                self.moved.load(Ordering::SeqCst),
                self.t0.elapsed().as_secs_f64()
            );
        }
    }

    /// One thread of the move pass: claims batches until the pages run out or moving stops.
    fn work(&self, st: &mut MoveState) {
        loop {
            if self.stop.load(Ordering::SeqCst) || self.out_of_time() {
                return;
            }
            if let (Some(p), true) = (self.opts.pause, self.done.load(Ordering::SeqCst) > 0) {
                std::thread::sleep(p);
            }
            let want = st.sizer.size(self.budget_left(), self.share);
            let Some((g, from, n)) = self.cursor.claim(self.groups, want) else { return };
            let t = Instant::now();
            self.batch(st, g, from, n);
            st.sizer.observe(n, t.elapsed());
            if let Ok(mut last) = self.last_progress.lock() {
                if last.elapsed() >= Duration::from_millis(250) {
                    self.progress();
                    *last = Instant::now();
                }
            }
            if st.retry.len() >= self.opts.fixed_batch().unwrap_or(pages::PAGES_PER_JOB) {
                self.retry(st);
            }
        }
    }

    /// Queries pages `from..from + n` of group `g` and moves those not on their target node.
    fn batch(&self, st: &mut MoveState, g: usize, from: u64, n: u64) {
        let page = self.page;
        let tq = Instant::now();
        let queried = match self.known[g] {
            Some(node) => {
                let q = &mut st.q;
                self.groups[g].fill(from, n, page, &mut q.addrs, &mut q.targets);
                q.status.clear();
                q.status.resize(q.addrs.len(), node as i32);
                Ok(())
            }
            None => st.q.query(self.pid, &self.groups[g], from, n, page),
        };
        self.query_ns.fetch_add(tq.elapsed().as_nanos() as u64, Ordering::SeqCst);
        let mut d = PageStats::default();
        if let Err(e) = queried {
            if let Some(name) = self.failed(&e) {
                lock(&self.query_error).get_or_insert(format!(
                    "a move_pages query of process {} failed with {name}: the {n} pages of that batch were not \
                     moved (counted as to move, not attempted)",
                    self.pid
                ));
                d.to_move += n;
                lock(&self.counts)[g].0.add_counts(&d);
            } else {
                // not counted: the process exited, or moving stopped for lack of permission
                lock(&self.counts)[g].0.not_attempted += n;
            }
            return;
        }
        st.work.clear();
        count_before(&st.q.status, &st.q.targets, self.opts.no_skip, &mut d, Some(&mut st.work));
        let attempted = self.move_work(st, g, &mut d);
        let mut c = lock(&self.counts);
        c[g].0.add_counts(&d);
        c[g].1 += attempted;
    }

    /// Moves the pages `st.work` lists; returns how many were handed to `move_pages`.
    fn move_work(&self, st: &mut MoveState, g: usize, d: &mut PageStats) -> u64 {
        let (page, q) = (self.page, &st.q);
        if st.work.is_empty() {
            return 0;
        }
        let reserved = pages::count_runs(st.work.iter().map(|&i| (q.addrs[i], q.status[i] as u32)), page);
        if !self.reserve_runs(reserved) {
            return 0;
        }
        // The kernel migrates the pages it has gathered each time the target node changes from
        // one entry to the next (do_pages_move), so pages in address order with alternating
        // targets (an interleave) were moved one migration at a time. The call gets them grouped
        // by target node (stable: ascending addresses within a node); `st.order[k]` is the
        // position in `st.work` of call entry k, and the statuses are put back in work order.
        grouped_by_target(&st.work, &q.targets, &mut st.order);
        st.wa.clear();
        st.wa.extend(st.order.iter().map(|&j| q.addrs[st.work[j]]));
        st.wn.clear();
        st.wn.extend(st.order.iter().map(|&j| q.targets[st.work[j]] as i32));
        st.call_status.clear();
        st.call_status.resize(st.work.len(), sys::STATUS_UNSET);
        let runs_before = st.runs.runs.len();
        let tc = Instant::now();
        let moved = sys::move_pages(self.pid, &st.wa, &st.wn, &mut st.call_status);
        st.status.clear();
        st.status.resize(st.work.len(), sys::STATUS_UNSET);
        for (k, &j) in st.order.iter().enumerate() {
            st.status[j] = st.call_status[k];
        }
        self.call_ns.fetch_add(tc.elapsed().as_nanos() as u64, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.batch_max.fetch_max(st.work.len() as u64, Ordering::SeqCst);
        let n = st.work.len() as u64;
        match moved {
            Ok(_) => {
                for (j, &i) in st.work.iter().enumerate() {
                    let (r, a, t, b0) = (st.status[j], q.addrs[i], q.targets[i], q.status[i] as u32);
                    if r >= 0 {
                        if r as u32 == t {
                            d.moved += 1;
                        } else {
                            d.not_moved.elsewhere += 1;
                        }
                        st.runs.push(a, b0, page);
                    } else if pages::contains(self.thp, a) {
                        d.not_moved.huge_page += 1;
                    } else if r == sys::STATUS_UNSET || -r == libc::EBUSY {
                        // busy, or not reached after the kernel gave up on another page: once more
                        st.retry.push((g, a, t, b0));
                    } else {
                        classify(&mut d.not_moved, -r);
                    }
                }
            }
            Err(e) => {
                if let Some(name) = self.failed(&e) {
                    *d.not_moved.other.entry(name).or_default() += n;
                } else {
                    self.settle_runs(reserved, 0);
                    return 0;
                }
            }
        }
        self.settle_runs(reserved, st.runs.runs.len() - runs_before);
        self.done.fetch_add(n, Ordering::SeqCst);
        self.moved.fetch_add(d.moved, Ordering::SeqCst);
        n
    }

    /// Moves the busy pages of `st` once more; what still fails is counted as busy.
    fn retry(&self, st: &mut MoveState) {
        let mut list = std::mem::take(&mut st.retry);
        if list.is_empty() {
            return;
        }
        // grouped by target node, as in move_work (one migration per node, not per change)
        list.sort_by_key(|x| x.2);
        let page = self.page;
        let mut d: BTreeMap<usize, PageStats> = BTreeMap::new();
        let give_up = |d: &mut BTreeMap<usize, PageStats>| {
            for &(g, ..) in &list {
                d.entry(g).or_default().not_moved.busy += 1;
            }
        };
        let reserved = pages::count_runs(list.iter().map(|&(_, a, _, b0)| (a, b0)), page);
        if self.stop.load(Ordering::SeqCst) || self.out_of_time() || !self.reserve_runs(reserved) {
            give_up(&mut d);
        } else {
            let wa: Vec<u64> = list.iter().map(|x| x.1).collect();
            let wn: Vec<i32> = list.iter().map(|x| x.2 as i32).collect();
            let mut status = vec![0i32; list.len()];
            let runs_before = st.runs.runs.len();
            let tc = Instant::now();
            let moved = sys::move_pages(self.pid, &wa, &wn, &mut status);
            self.call_ns.fetch_add(tc.elapsed().as_nanos() as u64, Ordering::SeqCst);
            self.calls.fetch_add(1, Ordering::SeqCst);
            match moved {
                Ok(_) => {
                    for (j, &(g, a, t, b0)) in list.iter().enumerate() {
                        let s = d.entry(g).or_default();
                        let r = status[j];
                        if r >= 0 {
                            if r as u32 == t {
                                s.moved += 1;
                            } else {
                                s.not_moved.elsewhere += 1;
                            }
                            st.runs.push(a, b0, page);
                        } else if r == sys::STATUS_UNSET || -r == libc::EBUSY {
                            s.not_moved.busy += 1;
                        } else {
                            classify(&mut s.not_moved, -r);
                        }
                    }
                }
                Err(e) => match self.failed(&e) {
                    Some(name) => {
                        for &(g, ..) in &list {
                            *d.entry(g).or_default().not_moved.other.entry(name.clone()).or_default() += 1;
                        }
                    }
                    None => give_up(&mut d),
                },
            }
            self.settle_runs(reserved, st.runs.runs.len() - runs_before);
        }
        let mut c = lock(&self.counts);
        for (g, s) in d {
            c[g].0.add_counts(&s);
        }
    }
}

fn classify(n: &mut NotMoved, errno: i32) {
    match errno {
        libc::EBUSY => n.busy += 1,
        libc::EFAULT | libc::ENOENT => n.not_present += 1,
        libc::EACCES | libc::EPERM => n.not_permitted += 1,
        e => *n.other.entry(sys::errno_name(e)).or_default() += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn move_calls_get_pages_grouped_by_target_node() {
        // an interleave over 3 nodes, page 4 already in place (not in the work list)
        let targets = [0u32, 1, 2, 0, 1, 2, 0];
        let work = [0usize, 1, 2, 3, 5, 6];
        let mut order = Vec::new();
        grouped_by_target(&work, &targets, &mut order);
        let call: Vec<(usize, u32)> = order.iter().map(|&j| (work[j], targets[work[j]])).collect();
        assert_eq!(call, vec![(0, 0), (3, 0), (6, 0), (1, 1), (2, 2), (5, 2)]);
        // one target: the work order as it is
        grouped_by_target(&[2, 4, 7], &[1; 8], &mut order);
        assert_eq!(order, vec![0, 1, 2]);
        grouped_by_target(&[], &targets, &mut order);
        assert!(order.is_empty());
    }
}
