//! The pages seen in fault samples or found resident by the placement scan, and the nodes
//! move_pages reports for them (the node rule is in the module docs of [`super`]).

use std::collections::HashMap;

use crate::sources::pagefault::{FaultKind, FaultSample};

#[derive(Clone, Debug)]
pub(super) struct PageState {
    pub(super) addr: u64,
    /// The earliest first-touch fault seen ([`FaultKind::Touch`]); u64::MAX while the page was
    /// only seen in hinting faults (touched before the recording started).
    pub(super) first_time_ns: u64,
    pub(super) first_tid: u32,
    pub(super) first_cpu: u32,
    /// Node reported by the first query after the page was seen.
    pub(super) node_first: i8,
    /// Last node any query (or scan) reported.
    pub(super) node_last: i8,
    /// Seen in a fault sample (a first touch or a hinting fault).
    pub(super) faulted: bool,
    /// The last complete placement scan that found the page resident (0: none).
    pub(super) scan_gen: u32,
    /// The first scan that found it (0: none).
    pub(super) first_gen: u32,
}

#[derive(Default)]
pub(super) struct PageTracker {
    pub(super) index: HashMap<u64, usize>,
    pub(super) pages: Vec<PageState>,
    pub(super) unqueried: Vec<usize>,
    pub(super) query_failures: u64,
    pub(super) query_error: Option<String>,
    /// The last complete placement scan merged in (0: none).
    pub(super) scan_gen: u32,
    /// CLOCK_MONOTONIC end of each merged scan, ns (`[g - 1]` for scan g).
    pub(super) scan_end_ns: Vec<u64>,
}

impl PageTracker {
    pub(super) fn add(&mut self, s: &FaultSample) {
        let addr = s.addr & !4095;
        // Only a first-touch fault says who touched a page first; a hinting fault is a later access.
        let touch = s.kind == FaultKind::Touch;
        match self.index.get(&addr) {
            Some(&i) => {
                let p = &mut self.pages[i];
                p.faulted = true;
                if touch && s.time_ns < p.first_time_ns {
                    p.first_time_ns = s.time_ns;
                    p.first_tid = s.tid;
                    p.first_cpu = s.cpu;
                }
            }
            None => {
                let i = self.pages.len();
                self.pages.push(PageState {
                    addr,
                    first_time_ns: if touch { s.time_ns } else { u64::MAX },
                    first_tid: s.tid,
                    first_cpu: s.cpu,
                    node_first: -1,
                    node_last: -1,
                    faulted: true,
                    scan_gen: 0,
                    first_gen: 0,
                });
                self.index.insert(addr, i);
                self.unqueried.push(i);
            }
        }
    }

    /// Queries the pages listed in `which` and records their nodes.
    fn query(&mut self, pid: i32, which: &[usize]) {
        if which.is_empty() {
            return;
        }
        let addrs: Vec<u64> = which.iter().map(|&i| self.pages[i].addr).collect();
        match crate::numa_sys::query_page_nodes(pid, &addrs) {
            Ok(status) => {
                for (&i, &st) in which.iter().zip(&status) {
                    if st >= 0 {
                        let n = st.min(127) as i8;
                        let p = &mut self.pages[i];
                        if p.node_first < 0 {
                            p.node_first = n;
                        }
                        p.node_last = n;
                    }
                }
            }
            Err(e) => {
                self.query_failures += 1;
                if self.query_error.is_none() {
                    self.query_error = Some(match e.raw_os_error() {
                        Some(libc::EPERM) | Some(libc::EACCES) => format!(
                            "move_pages query refused ({e}): needs the same user as the target or CAP_SYS_NICE/CAP_SYS_PTRACE"
                        ),
                        Some(libc::ENOSYS) => "move_pages not available (kernel without CONFIG_NUMA/MIGRATION)".into(),
                        // find_mm_struct() answers EINVAL when the task has no mm any more, ESRCH when it is gone.
                        Some(libc::EINVAL) | Some(libc::ESRCH) => format!(
                            "move_pages query after the process had exited ({e}): its address space was gone, so the last query could not run"
                        ),
                        _ => format!("move_pages query failed: {e}"),
                    });
                }
            }
        }
    }

    pub(super) fn query_new(&mut self, pid: i32) {
        let which = std::mem::take(&mut self.unqueried);
        self.query(pid, &which);
    }

    /// Queries every page again, but those the last scan found (when it ran at the stop, so
    /// their node is already the last one).
    pub(super) fn query_all(&mut self, pid: i32, skip_scanned: bool) {
        self.unqueried.clear();
        let g = self.scan_gen;
        let which: Vec<usize> =
            (0..self.pages.len()).filter(|&i| !(skip_scanned && g > 0 && self.pages[i].scan_gen == g)).collect();
        self.query(pid, &which);
    }

    /// Takes in a complete placement scan: each resident page gets its node (a page not seen
    /// before becomes a row with no first touch).
    pub(super) fn merge_scan(&mut self, addrs: &[u64], nodes: &[i8], end_ns: u64) {
        self.scan_gen += 1;
        self.scan_end_ns.push(end_ns);
        let g = self.scan_gen;
        self.index.reserve(addrs.len().saturating_sub(self.index.len()));
        for (&addr, &n) in addrs.iter().zip(nodes) {
            match self.index.get(&addr) {
                Some(&i) => {
                    let p = &mut self.pages[i];
                    if p.node_first < 0 {
                        p.node_first = n;
                    }
                    p.node_last = n;
                    p.scan_gen = g;
                }
                None => {
                    self.index.insert(addr, self.pages.len());
                    self.pages.push(PageState {
                        addr,
                        first_time_ns: u64::MAX,
                        first_tid: 0,
                        first_cpu: 0,
                        node_first: n,
                        node_last: n,
                        faulted: false,
                        scan_gen: g,
                        first_gen: g,
                    });
                }
            }
        }
    }

    /// Whether the page was mapped before `time_ns`: seen in an earlier fault sample, or found
    /// resident by a scan that had ended by then. A fault during or before that scan (its sample
    /// drained later) is taken for the page's first touch: first touches are what a scan races
    /// with while a program faults its memory in.
    pub(super) fn seen_before(&self, addr: u64, time_ns: u64) -> bool {
        self.index.get(&addr).is_some_and(|&i| {
            let p = &self.pages[i];
            p.faulted || (p.first_gen > 0 && self.scan_end_ns[p.first_gen as usize - 1] <= time_ns)
        })
    }

    /// A page the trace keeps: seen in a fault sample, or resident at the last complete scan
    /// (a page only earlier scans found was freed since).
    pub(super) fn kept(&self, p: &PageState) -> bool {
        p.faulted || p.scan_gen == self.scan_gen
    }
}
