//! The pages seen in fault samples, and the nodes move_pages reports for them (the node rule is in
//! the module docs of [`super`]).

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
    /// Last node any query reported.
    pub(super) node_last: i8,
}

#[derive(Default)]
pub(super) struct PageTracker {
    pub(super) index: HashMap<u64, usize>,
    pub(super) pages: Vec<PageState>,
    pub(super) unqueried: Vec<usize>,
    pub(super) query_failures: u64,
    pub(super) query_error: Option<String>,
}

impl PageTracker {
    pub(super) fn add(&mut self, s: &FaultSample) {
        let addr = s.addr & !4095;
        // Only a first-touch fault says who touched a page first; a hinting fault is a later access.
        let touch = s.kind == FaultKind::Touch;
        match self.index.get(&addr) {
            Some(&i) => {
                let p = &mut self.pages[i];
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

    pub(super) fn query_all(&mut self, pid: i32) {
        self.unqueried.clear();
        let which: Vec<usize> = (0..self.pages.len()).collect();
        self.query(pid, &which);
    }
}
