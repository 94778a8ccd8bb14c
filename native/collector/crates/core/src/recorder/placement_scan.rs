//! The placement scan: where every resident page of the target sits, not only the pages a
//! (sampled) fault showed.
//!
//! One scan walks the mappings in /proc/PID/maps, reads /proc/PID/pagemap in bounded batches for
//! which pages are present (bit 63) or swapped (bit 62; the PFN bits are zero without
//! CAP_SYS_ADMIN and are not needed), and asks move_pages (nodes = NULL) for the node of the
//! present pages, again in bounded batches. It runs on its own thread so that the capture keeps
//! draining its rings meanwhile:
//! - at the start of an attached recording; for a launched command (which starts with nothing
//!   resident) once [`FIRST_LAUNCH_SCAN`] after the launch, outside the time budget, so that a
//!   short run that exits before the budget allows a periodic scan is still scanned once;
//! - periodically, at least [`MIN_INTERVAL`] apart, and only when the scans so far plus the next
//!   one fit in [`TIME_SHARE`] of the time since the start: each scan is timed, and the next one's
//!   time is estimated as the resident pages now (/proc/PID/statm) times the last scan's time per
//!   page ([`FIRST_GUESS_NS_PER_PAGE`] before the first);
//! - at the stop, while the process still lives.
//!
//! Only complete scans count: a process that exits mid-scan (ESRCH, EINVAL, ENOENT, an empty
//! maps file, a pagemap read of 0 bytes) leaves the last complete scan in place. A scan records at
//! most `scan_max_pages` present pages ([`super::options::RECORD_LIMITS`]); the manifest and a
//! warning say when it stopped there. Huge address spaces with little resident (reservations,
//! sanitizer shadows) are bounded too: above [`PREFILTER_VIRTUAL_PAGES`] of mappings, mappings
//! numa_maps shows nothing resident in are skipped, and one scan reads at most
//! [`MAX_VIRTUAL_PAGES`] pagemap entries.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::pages::PageTracker;
use crate::procfs;
use crate::time::{mono_now_ns, us_since};
use crate::trace::{NodePages, PageScan};

/// pagemap entry: page present in RAM.
const PM_PRESENT: u64 = 1 << 63;
/// pagemap entry: page swapped out.
const PM_SWAPPED: u64 = 1 << 62;

/// Shortest time between two periodic scans.
pub(super) const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// When a launched command's first scan runs (whatever it costs: bounded by the page cap).
pub(super) const FIRST_LAUNCH_SCAN: Duration = Duration::from_millis(500);
/// Largest share of the wall time periodic scans may take.
pub(super) const TIME_SHARE: f64 = 0.02;
/// Time per resident page assumed before a scan has been timed (measured here: 0.35 µs on an idle
/// 2-vCPU VM, 1.4 µs while the program kept both cpus busy).
const FIRST_GUESS_NS_PER_PAGE: f64 = 1000.0;
/// How often a due periodic scan checks its budget.
const CHECK_EVERY: Duration = Duration::from_millis(250);
/// pagemap entries read per `pread` (64 KiB).
const PAGEMAP_BATCH: usize = 8192;
/// Present pages asked per move_pages call.
const QUERY_BATCH: usize = 16_384;
/// Above this many pages of mappings, mappings with nothing resident in numa_maps are skipped.
const PREFILTER_VIRTUAL_PAGES: u64 = 1 << 21;
/// pagemap entries one scan reads at most (256 GiB of address space of 4 KiB pages, 512 MiB of
/// pagemap).
const MAX_VIRTUAL_PAGES: u64 = 1 << 26;

/// A mapping to walk, [start, end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Vma {
    pub(super) start: u64,
    pub(super) end: u64,
}

/// Why a scan did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum ScanError {
    /// The process (or its address space) is gone: the last complete scan stands.
    Gone(String),
    /// Reading was refused or failed: no further scans.
    Failed(String),
}

impl ScanError {
    fn from_io(what: &str, e: &io::Error) -> ScanError {
        match e.raw_os_error() {
            Some(libc::ESRCH) | Some(libc::EINVAL) | Some(libc::ENOENT) => ScanError::Gone(format!("{what}: {e}")),
            Some(libc::EPERM) | Some(libc::EACCES) => {
                ScanError::Failed(format!("{what}: {e} (needs the same user as the target, or CAP_SYS_PTRACE)"))
            }
            _ if e.kind() == io::ErrorKind::NotFound => ScanError::Gone(format!("{what}: {e}")),
            _ => ScanError::Failed(format!("{what}: {e}")),
        }
    }
}

/// What a scan reads: the mappings, pagemap entries, the nodes of pages. [`ProcSpace`] reads a
/// live process; tests give a fake one.
pub(super) trait AddressSpace {
    fn vmas(&mut self) -> Result<Vec<Vma>, ScanError>;
    /// Starts of the mappings numa_maps shows pages resident in; None if it cannot be read.
    fn resident_vma_starts(&mut self) -> Option<HashSet<u64>>;
    /// Fills `out` with the pagemap entries from page number `vpn` on; returns how many were read
    /// (0: the address space is gone).
    fn pagemap(&mut self, vpn: u64, out: &mut [u64]) -> Result<usize, ScanError>;
    /// The node of each page (a negative errno for a page without one).
    fn nodes(&mut self, addrs: &[u64]) -> Result<Vec<i32>, ScanError>;
}

/// Bounds of one scan.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScanLimits {
    pub(super) page_size: u64,
    /// Present pages recorded at most.
    pub(super) max_pages: u64,
    pub(super) pagemap_batch: usize,
    pub(super) query_batch: usize,
    pub(super) prefilter_virtual_pages: u64,
    pub(super) max_virtual_pages: u64,
}

impl ScanLimits {
    pub(super) fn new(max_pages: u64) -> Self {
        // SAFETY: sysconf has no preconditions.
        let ps = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        ScanLimits {
            page_size: if ps > 0 { ps as u64 } else { 4096 },
            max_pages,
            pagemap_batch: PAGEMAP_BATCH,
            query_batch: QUERY_BATCH,
            prefilter_virtual_pages: PREFILTER_VIRTUAL_PAGES,
            max_virtual_pages: MAX_VIRTUAL_PAGES,
        }
    }
}

/// Which bound a scan stopped at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cut {
    Pages,
    AddressSpace,
}

/// One complete scan: the present pages with a node, as two columns.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub(super) addrs: Vec<u64>,
    pub(super) nodes: Vec<i8>,
    pub(super) by_node: BTreeMap<i32, u64>,
    pub(super) swapped: u64,
    /// Present in pagemap, no node from move_pages.
    pub(super) unplaced: u64,
    pub(super) virtual_pages: u64,
    pub(super) pagemap_reads: u64,
    pub(super) queries: u64,
    pub(super) skipped_vmas: u64,
    pub(super) cut: Option<Cut>,
    pub(super) duration: Duration,
}

/// Asks the node of `pending`'s pages and records the answers.
fn flush(space: &mut dyn AddressSpace, pending: &mut Vec<u64>, scan: &mut Scan) -> Result<(), ScanError> {
    if pending.is_empty() {
        return Ok(());
    }
    let status = space.nodes(pending)?;
    scan.queries += 1;
    for (&a, &st) in pending.iter().zip(&status) {
        if st >= 0 {
            let n = st.min(i8::MAX as i32);
            scan.addrs.push(a);
            scan.nodes.push(n as i8);
            *scan.by_node.entry(n).or_default() += 1;
        } else {
            scan.unplaced += 1;
        }
    }
    pending.clear();
    Ok(())
}

/// One scan of `space` within `lim`.
pub(super) fn scan(space: &mut dyn AddressSpace, lim: &ScanLimits) -> Result<Scan, ScanError> {
    let t0 = Instant::now();
    let vmas = space.vmas()?;
    if vmas.is_empty() {
        // Every live process has mappings; an empty maps file is an exited one.
        return Err(ScanError::Gone("no mappings: the process has exited".into()));
    }
    let ps = lim.page_size;
    let total_virtual: u64 = vmas.iter().map(|v| (v.end - v.start) / ps).sum();
    let filter = if total_virtual > lim.prefilter_virtual_pages { space.resident_vma_starts() } else { None };
    let mut scan = Scan::default();
    let mut buf = vec![0u64; lim.pagemap_batch.max(1)];
    let mut pending: Vec<u64> = Vec::with_capacity(lim.query_batch.max(1));
    let mut present = 0u64;
    'walk: for v in &vmas {
        if filter.as_ref().is_some_and(|f| !f.contains(&v.start)) {
            scan.skipped_vmas += 1;
            continue;
        }
        let (mut vpn, end) = (v.start / ps, v.end / ps);
        while vpn < end {
            let budget = lim.max_virtual_pages.saturating_sub(scan.virtual_pages);
            if budget == 0 {
                scan.cut = Some(Cut::AddressSpace);
                break 'walk;
            }
            let n = (buf.len() as u64).min(end - vpn).min(budget) as usize;
            let got = space.pagemap(vpn, &mut buf[..n])?;
            if got == 0 {
                return Err(ScanError::Gone("pagemap read nothing: the process has exited".into()));
            }
            scan.pagemap_reads += 1;
            for (i, &e) in buf[..got].iter().enumerate() {
                if e & PM_PRESENT != 0 {
                    if present >= lim.max_pages {
                        scan.cut = Some(Cut::Pages);
                        break 'walk;
                    }
                    present += 1;
                    pending.push((vpn + i as u64) * ps);
                    if pending.len() >= lim.query_batch.max(1) {
                        flush(space, &mut pending, &mut scan)?;
                    }
                } else if e & PM_SWAPPED != 0 {
                    scan.swapped += 1;
                }
            }
            vpn += got as u64;
            scan.virtual_pages += got as u64;
        }
    }
    flush(space, &mut pending, &mut scan)?;
    scan.duration = t0.elapsed();
    Ok(scan)
}

/// Resident pages of the process (/proc/PID/statm, second field).
fn resident_pages(proc_root: &Path, pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(proc_root.join(format!("{pid}/statm"))).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// A live process's address space: /proc/PID/maps, numa_maps and pagemap, and move_pages.
pub(super) struct ProcSpace {
    pid: i32,
    dir: PathBuf,
    pagemap: Option<File>,
}

impl ProcSpace {
    pub(super) fn new(proc_root: &Path, pid: i32) -> Self {
        ProcSpace { pid, dir: proc_root.join(pid.to_string()), pagemap: None }
    }
}

/// Mappings a page walk cannot place: the vsyscall page (a kernel address) and the vDSO data
/// pages (VM_PFNMAP/VM_IO, no struct page).
fn special(e: &procfs::MapsEntry) -> bool {
    e.path.as_deref().is_some_and(|p| p == "[vsyscall]" || p.starts_with("[vvar"))
}

impl AddressSpace for ProcSpace {
    fn vmas(&mut self) -> Result<Vec<Vma>, ScanError> {
        let text = std::fs::read_to_string(self.dir.join("maps"))
            .map_err(|e| ScanError::from_io(&format!("reading /proc/{}/maps", self.pid), &e))?;
        Ok(procfs::parse_maps(&text)
            .iter()
            .filter(|e| !special(e) && e.end > e.start)
            .map(|e| Vma { start: e.start, end: e.end })
            .collect())
    }

    fn resident_vma_starts(&mut self) -> Option<HashSet<u64>> {
        let text = std::fs::read_to_string(self.dir.join("numa_maps")).ok()?;
        Some(procfs::parse_numa_maps(&text).into_iter().filter(|e| e.total_pages() > 0).map(|e| e.start).collect())
    }

    fn pagemap(&mut self, vpn: u64, out: &mut [u64]) -> Result<usize, ScanError> {
        let what = || format!("reading /proc/{}/pagemap", self.pid);
        if self.pagemap.is_none() {
            self.pagemap = Some(File::open(self.dir.join("pagemap")).map_err(|e| ScanError::from_io(&what(), &e))?);
        }
        let f = self.pagemap.as_ref().expect("opened above");
        let mut bytes = vec![0u8; out.len() * 8];
        let mut filled = 0;
        // pagemap answers whole entries; a short read is a partial batch (end of the space).
        while filled < bytes.len() {
            match f.read_at(&mut bytes[filled..], vpn * 8 + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ScanError::from_io(&what(), &e)),
            }
        }
        let n = filled / 8;
        for (o, c) in out.iter_mut().zip(bytes.chunks_exact(8)).take(n) {
            *o = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
        }
        Ok(n)
    }

    fn nodes(&mut self, addrs: &[u64]) -> Result<Vec<i32>, ScanError> {
        crate::numa_sys::query_page_nodes(self.pid, addrs)
            .map_err(|e| ScanError::from_io(&format!("move_pages query of pid {}", self.pid), &e))
    }
}

struct Running {
    handle: JoinHandle<Result<Scan, ScanError>>,
    start_ns: u64,
}

/// Runs the scans of one recording and keeps their facts for the manifest (`capture.pageScan`).
pub(super) struct PageScanner {
    pid: i32,
    proc_root: PathBuf,
    limits: ScanLimits,
    /// False when the scan is off (`scan_max_pages` 0), the process is gone, or a scan failed.
    enabled: bool,
    running: Option<Running>,
    /// No periodic scan before this (the last scan's end + MIN_INTERVAL).
    next_at: Instant,
    next_check: Instant,
    /// The scan at the start of an attached recording runs whatever it costs.
    first_free: bool,
    t0: Instant,
    /// Time all scans took, and the last one's time per present page, ns.
    spent: Duration,
    ns_per_page: f64,
    facts: PageScan,
    /// Which limit cut a scan short, if one did.
    cut: Option<Cut>,
}

impl PageScanner {
    /// `scan_now`: the first scan starts at the first poll (attach), else (launch) after
    /// [`FIRST_LAUNCH_SCAN`]; either way the first scan is outside the time budget.
    pub(super) fn new(pid: i32, proc_root: &Path, max_pages: u64, scan_now: bool) -> Self {
        let now = Instant::now();
        PageScanner {
            pid,
            proc_root: proc_root.to_path_buf(),
            limits: ScanLimits::new(max_pages),
            enabled: max_pages > 0,
            running: None,
            next_at: if scan_now { now } else { now + FIRST_LAUNCH_SCAN },
            next_check: now,
            first_free: true,
            t0: now,
            spent: Duration::ZERO,
            ns_per_page: FIRST_GUESS_NS_PER_PAGE,
            facts: PageScan { page_limit: max_pages, ..Default::default() },
            cut: None,
        }
    }

    /// One turn: takes in a finished scan, starts a due one.
    pub(super) fn poll(&mut self, pages: &mut PageTracker, start_ns: u64) {
        if self.running.as_ref().is_some_and(|r| r.handle.is_finished()) {
            self.join(pages, start_ns, false);
        }
        let now = Instant::now();
        if self.enabled && self.running.is_none() && now >= self.next_at && now >= self.next_check {
            self.next_check = now + CHECK_EVERY;
            if !self.first_free && !self.within_budget(now) {
                return;
            }
            self.first_free = false;
            let (pid, root, lim) = (self.pid, self.proc_root.clone(), self.limits);
            let start = mono_now_ns();
            let spawned = std::thread::Builder::new()
                .name("numascope-scan".into())
                .spawn(move || scan(&mut ProcSpace::new(&root, pid), &lim));
            match spawned {
                Ok(handle) => self.running = Some(Running { handle, start_ns: start }),
                Err(e) => self.stop_scanning(format!("cannot start the scan thread: {e}")),
            }
        }
    }

    /// Whether the scans so far and the next one (estimated from the resident pages now) fit in
    /// [`TIME_SHARE`] of the time since the start.
    fn within_budget(&self, now: Instant) -> bool {
        let resident = resident_pages(&self.proc_root, self.pid).unwrap_or(0).min(self.limits.max_pages);
        let next = Duration::from_nanos((resident as f64 * self.ns_per_page) as u64);
        (self.spent + next).as_secs_f64() <= now.duration_since(self.t0).as_secs_f64() * TIME_SHARE
    }

    /// At the stop: waits for a running scan, then scans once more if the process still lives
    /// (`alive`); a scan that does not complete leaves the last complete one.
    pub(super) fn finish(&mut self, pages: &mut PageTracker, start_ns: u64, alive: bool) {
        if self.running.is_some() {
            self.join(pages, start_ns, false);
        }
        if self.enabled && alive {
            let start = mono_now_ns();
            let r = scan(&mut ProcSpace::new(&self.proc_root, self.pid), &self.limits);
            self.take(r, pages, start_ns, start, true);
        }
    }

    fn join(&mut self, pages: &mut PageTracker, start_ns: u64, at_stop: bool) {
        let Some(r) = self.running.take() else { return };
        let result = r.handle.join().unwrap_or_else(|_| Err(ScanError::Failed("the scan thread panicked".into())));
        self.take(result, pages, start_ns, r.start_ns, at_stop);
    }

    fn take(
        &mut self,
        result: Result<Scan, ScanError>,
        pages: &mut PageTracker,
        start_ns: u64,
        scan_start_ns: u64,
        at_stop: bool,
    ) {
        match result {
            Ok(s) => {
                let ms = s.duration.as_secs_f64() * 1e3;
                let f = &mut self.facts;
                f.scans += 1;
                f.total_scan_ms += ms;
                f.max_scan_ms = f.max_scan_ms.max(ms);
                f.last_scan_us = Some(us_since(start_ns, scan_start_ns));
                f.last_scan_at_stop = at_stop;
                f.resident_pages = s.addrs.len() as u64;
                f.resident_pages_by_node = s.by_node.iter().map(|(&node, &pages)| NodePages { node, pages }).collect();
                f.swapped_pages = s.swapped;
                f.unplaced_pages = s.unplaced;
                if s.cut.is_some() {
                    f.limit_hit = true;
                    self.cut = s.cut;
                }
                pages.merge_scan(&s.addrs, &s.nodes, mono_now_ns());
                self.spent += s.duration;
                let present = s.addrs.len() as u64 + s.unplaced;
                self.ns_per_page = (s.duration.as_nanos() as f64 / present.max(1) as f64).max(1.0);
                self.next_at = Instant::now() + MIN_INTERVAL;
            }
            Err(ScanError::Gone(_)) => {
                self.facts.incomplete_scans += 1;
                self.enabled = false;
            }
            Err(ScanError::Failed(e)) => {
                self.facts.incomplete_scans += 1;
                self.stop_scanning(e);
            }
        }
    }

    fn stop_scanning(&mut self, why: String) {
        self.enabled = false;
        self.facts.error.get_or_insert(why);
    }

    /// The last complete scan ran at the stop.
    pub(super) fn last_at_stop(&self) -> bool {
        self.facts.last_scan_at_stop
    }

    /// `capture.pageScan`; None when the scan was turned off.
    pub(super) fn facts(&self) -> Option<PageScan> {
        (self.facts.page_limit > 0).then(|| self.facts.clone())
    }

    /// What the manifest notes and the caller's warnings should say about the scan.
    pub(super) fn notes(&self) -> Vec<String> {
        let f = &self.facts;
        let mut out = Vec::new();
        match self.cut {
            Some(Cut::Pages) => out.push(format!(
                "the placement scan stopped at {} resident pages (--scan-max-pages): pages beyond it have no row in `pages` unless a fault sample saw them; region_placements (numa_maps) still counts every page per region",
                f.page_limit
            )),
            Some(Cut::AddressSpace) => out.push(format!(
                "the placement scan stopped after {MAX_VIRTUAL_PAGES} pagemap entries (its address-space budget per scan): pages of the mappings beyond have no row in `pages` unless a fault sample saw them; region_placements (numa_maps) still counts every page per region"
            )),
            None => {}
        }
        if let Some(e) = &f.error {
            out.push(format!(
                "placement scan: {e}; pages seen only by fault samples have rows, numa_maps counts the rest per region"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake address space: present pages by page number, and every call recorded.
    struct Fake {
        vmas: Vec<Vma>,
        present: HashSet<u64>,
        swapped: HashSet<u64>,
        resident_starts: Option<HashSet<u64>>,
        node_of: fn(u64) -> i32,
        pagemap_calls: Vec<(u64, usize)>,
        query_sizes: Vec<usize>,
        /// Fail the move_pages query after this many calls with ESRCH.
        gone_after_queries: Option<usize>,
    }

    impl Fake {
        fn new(vmas: Vec<Vma>, present: impl IntoIterator<Item = u64>) -> Self {
            Fake {
                vmas,
                present: present.into_iter().collect(),
                swapped: HashSet::new(),
                resident_starts: None,
                node_of: |vpn| (vpn % 3) as i32,
                pagemap_calls: Vec::new(),
                query_sizes: Vec::new(),
                gone_after_queries: None,
            }
        }
    }

    impl AddressSpace for Fake {
        fn vmas(&mut self) -> Result<Vec<Vma>, ScanError> {
            Ok(self.vmas.clone())
        }
        fn resident_vma_starts(&mut self) -> Option<HashSet<u64>> {
            self.resident_starts.clone()
        }
        fn pagemap(&mut self, vpn: u64, out: &mut [u64]) -> Result<usize, ScanError> {
            self.pagemap_calls.push((vpn, out.len()));
            for (i, o) in out.iter_mut().enumerate() {
                let p = vpn + i as u64;
                *o = if self.present.contains(&p) {
                    PM_PRESENT | 0x1234 // a PFN the scan must ignore
                } else if self.swapped.contains(&p) {
                    PM_SWAPPED
                } else {
                    0
                };
            }
            Ok(out.len())
        }
        fn nodes(&mut self, addrs: &[u64]) -> Result<Vec<i32>, ScanError> {
            if self.gone_after_queries.is_some_and(|n| self.query_sizes.len() >= n) {
                return Err(ScanError::from_io("move_pages", &io::Error::from_raw_os_error(libc::ESRCH)));
            }
            self.query_sizes.push(addrs.len());
            // The zero page: present, no node.
            Ok(addrs.iter().map(|&a| if a / 4096 == 7 { -libc::EFAULT } else { (self.node_of)(a / 4096) }).collect())
        }
    }

    fn lim(max_pages: u64) -> ScanLimits {
        ScanLimits {
            page_size: 4096,
            max_pages,
            pagemap_batch: 100,
            query_batch: 64,
            prefilter_virtual_pages: 1 << 40,
            max_virtual_pages: 1 << 40,
        }
    }

    fn vma(first: u64, pages: u64) -> Vma {
        Vma { start: first * 4096, end: (first + pages) * 4096 }
    }

    #[test]
    fn every_present_page_gets_its_node_in_bounded_batches() {
        // Two mappings, 1000 and 250 pages; every other page present, page 7 the zero page.
        let mut f = Fake::new(vec![vma(0, 1000), vma(5000, 250)], (0..1000).chain(5000..5250).filter(|p| p % 2 == 1));
        f.swapped = [2, 4, 5002].into_iter().collect();
        let s = scan(&mut f, &lim(1 << 20)).unwrap();
        // 500 + 125 present, one without a node.
        assert_eq!(s.addrs.len(), 624);
        assert_eq!(s.unplaced, 1);
        assert_eq!(s.swapped, 3);
        assert_eq!(s.by_node.values().sum::<u64>(), 624);
        for (&a, &n) in s.addrs.iter().zip(&s.nodes) {
            assert_eq!(n as u64, (a / 4096) % 3, "page {a:#x}");
        }
        assert_eq!(s.cut, None);
        assert_eq!(s.virtual_pages, 1250);
        // pagemap read in batches of at most 100 entries, never past a mapping's end.
        assert!(f.pagemap_calls.iter().all(|&(_, n)| n <= 100));
        assert_eq!(f.pagemap_calls.len(), 10 + 3);
        assert!(f.pagemap_calls.contains(&(5200, 50)));
        // move_pages asked at most 64 pages at a time, every present page once.
        assert!(f.query_sizes.iter().all(|&n| (1..=64).contains(&n)), "{:?}", f.query_sizes);
        assert_eq!(f.query_sizes.iter().sum::<usize>(), 625);
    }

    #[test]
    fn the_page_cap_stops_the_scan_and_says_so() {
        let mut f = Fake::new(vec![vma(0, 10_000)], 0..10_000);
        let s = scan(&mut f, &lim(1000)).unwrap();
        assert_eq!(s.addrs.len(), 1000 - 1, "the cap counts present pages (page 7 has no node)");
        assert_eq!(s.cut, Some(Cut::Pages));
        // It stopped reading pagemap once the cap was reached.
        assert!(f.pagemap_calls.len() <= 11, "{} pagemap reads", f.pagemap_calls.len());
        assert_eq!(f.query_sizes.iter().sum::<usize>(), 1000);
    }

    #[test]
    fn the_address_space_budget_bounds_pagemap_reading() {
        let mut f = Fake::new(vec![vma(0, 1 << 20)], [3, 500_000]);
        let l = ScanLimits { max_virtual_pages: 4096, ..lim(1 << 20) };
        let s = scan(&mut f, &l).unwrap();
        assert_eq!(s.cut, Some(Cut::AddressSpace));
        assert_eq!(s.virtual_pages, 4096);
        assert_eq!(s.addrs, vec![3 * 4096]);
    }

    #[test]
    fn large_spaces_skip_mappings_with_nothing_resident() {
        let mut f = Fake::new(vec![vma(0, 100), vma(1 << 30, 1 << 20)], [1, 2]);
        f.resident_starts = Some([0].into_iter().collect());
        let l = ScanLimits { prefilter_virtual_pages: 1000, ..lim(1 << 20) };
        let s = scan(&mut f, &l).unwrap();
        assert_eq!(s.skipped_vmas, 1);
        assert_eq!(s.virtual_pages, 100);
        assert_eq!(s.addrs.len(), 2);
    }

    #[test]
    fn a_process_gone_mid_scan_is_not_a_scan() {
        let mut f = Fake::new(vec![vma(0, 1000)], 0..1000);
        f.gone_after_queries = Some(2);
        assert!(matches!(scan(&mut f, &lim(1 << 20)), Err(ScanError::Gone(_))));
        let mut empty = Fake::new(vec![], []);
        assert!(matches!(scan(&mut empty, &lim(1 << 20)), Err(ScanError::Gone(_))));
    }

    #[test]
    fn errors_are_told_apart() {
        let gone = |e| matches!(ScanError::from_io("x", &io::Error::from_raw_os_error(e)), ScanError::Gone(_));
        assert!(gone(libc::ESRCH) && gone(libc::EINVAL) && gone(libc::ENOENT));
        assert!(!gone(libc::EPERM) && !gone(libc::EIO));
        let ScanError::Failed(m) = ScanError::from_io("reading", &io::Error::from_raw_os_error(libc::EACCES)) else {
            panic!()
        };
        assert!(m.contains("CAP_SYS_PTRACE"), "{m}");
    }

    #[test]
    fn scans_of_this_process_agree_with_numa_maps() {
        // A real scan of ourselves: 4 MiB touched, every page found with a node.
        let mut buf = vec![1u8; 4 << 20];
        for i in (0..buf.len()).step_by(4096) {
            buf[i] = 2;
        }
        let mut space = ProcSpace::new(Path::new("/proc"), std::process::id() as i32);
        let s = scan(&mut space, &ScanLimits::new(1 << 22)).unwrap();
        let start = buf.as_ptr() as u64 & !4095;
        let mine = s.addrs.iter().filter(|&&a| a >= start && a < start + (4 << 20)).count();
        assert!(mine >= 1023, "found {mine} of the 1024 touched pages");
        assert!(s.nodes.iter().all(|&n| n >= 0));
        assert!(s.duration < Duration::from_secs(10));
        std::hint::black_box(&buf);
    }

    #[test]
    fn periodic_scans_wait_for_their_time_budget() {
        let me = std::process::id() as i32;
        let resident = resident_pages(Path::new("/proc"), me).unwrap();
        assert!(resident > 0);
        let mut s = PageScanner::new(me, Path::new("/proc"), 1 << 22, false);
        // Just started: not even a first scan fits in 2 % of no time.
        assert!(!s.within_budget(s.t0));
        // After T seconds, a scan estimated at resident x 1 µs fits once T x 2 % covers it (the
        // margins allow for other tests' threads changing this process's resident pages).
        let need = Duration::from_nanos(resident * 1000).as_secs_f64() / TIME_SHARE;
        assert!(s.within_budget(s.t0 + Duration::from_secs_f64(need * 3.0)));
        assert!(!s.within_budget(s.t0 + Duration::from_secs_f64(need * 0.5)));
        // Time already spent counts.
        s.spent = Duration::from_secs(1000);
        assert!(!s.within_budget(s.t0 + Duration::from_secs_f64(need * 3.0)));
        assert!(s.within_budget(s.t0 + Duration::from_secs_f64(need * 3.0 + 50_000.0)));
    }

    #[test]
    fn the_tracker_keeps_the_last_scan_and_fault_pages() {
        let mut t = PageTracker::default();
        t.merge_scan(&[0x1000, 0x2000], &[0, 1], 100);
        t.merge_scan(&[0x2000, 0x3000], &[1, 1], 200);
        let kept: Vec<u64> = t.pages.iter().filter(|p| t.kept(p)).map(|p| p.addr).collect();
        assert_eq!(kept, vec![0x2000, 0x3000], "0x1000 was freed since the first scan");
        // Found by the first scan (ended at 100): a fault at 150 is a refault, at 50 a first touch.
        assert!(t.seen_before(0x2000, 150));
        assert!(!t.seen_before(0x2000, 50));
        assert!(!t.seen_before(0x9000, 500));
    }
}
