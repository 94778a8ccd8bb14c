//! The program's threads from the kernel's task records (sources/pagefault.rs, [`TaskEvent`]):
//! when each was created and by which thread, when it ended, and its names. The /proc poller
//! sees a thread only if it is alive at one of its polls (every 100 ms by default) and the fault
//! samples only if it faults; the task records see every thread the followed tasks create, so
//! the threads table is complete and its times exact for the threads they cover.
//!
//! Kept per thread, not per record: memory grows with the program's threads (as the threads
//! table does), whatever the number of renames.

use std::collections::HashMap;

use crate::sources::pagefault::{TaskEvent, TaskKind};

/// What the task records said about one thread of the recorded process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct TaskInfo {
    /// Created during the recording: (CLOCK_MONOTONIC ns, the creating thread, its cpu).
    pub(super) created: Option<(u64, u32, u32)>,
    /// Ended during the recording (ns).
    pub(super) exited_ns: Option<u64>,
    /// The last name the kernel gave it (PERF_RECORD_COMM), if any.
    pub(super) name: Option<String>,
    /// When it was given that name (ns).
    pub(super) named_ns: u64,
}

#[derive(Debug, Default)]
pub(super) struct TaskLog {
    pub(super) threads: HashMap<u32, TaskInfo>,
    /// Task records read, of every followed process (the recorded one's and its children's).
    pub(super) records: u64,
    /// Processes the recorded one created (their threads are not the program's).
    pub(super) child_processes: u64,
    /// The first [`CHILD_PIDS_KEPT`] of them.
    pub(super) child_pids: Vec<u32>,
}

/// How many child pids a [`TaskLog`] keeps to name.
pub(super) const CHILD_PIDS_KEPT: usize = 16;

impl TaskLog {
    /// Folds in the records of one drain (the rings are read one after another, so records
    /// arrive out of time order across cpus: each field keeps its earliest or latest value).
    pub(super) fn add(&mut self, pid: i32, records: Vec<TaskEvent>) {
        for r in records {
            self.records += 1;
            if r.pid as i32 != pid {
                if matches!(r.kind, TaskKind::Fork { parent_pid, .. } if parent_pid as i32 == pid) {
                    self.child_processes += 1;
                    if self.child_pids.len() < CHILD_PIDS_KEPT {
                        self.child_pids.push(r.pid);
                    }
                }
                continue;
            }
            let t = self.threads.entry(r.tid).or_default();
            match r.kind {
                // The process's main thread "created" by a fork from its parent is not a
                // thread start inside the program.
                TaskKind::Fork { parent_pid, .. } if parent_pid as i32 != pid => {}
                TaskKind::Fork { parent_tid, .. } => {
                    if t.created.is_none_or(|(at, _, _)| r.time_ns < at) {
                        t.created = Some((r.time_ns, parent_tid, r.cpu));
                    }
                }
                TaskKind::Exit => {
                    if t.exited_ns.is_none_or(|at| r.time_ns > at) {
                        t.exited_ns = Some(r.time_ns);
                    }
                }
                TaskKind::Comm { name, .. } => {
                    // The latest by time: two renames on two cpus can be read in either order.
                    if t.name.is_none() || r.time_ns >= t.named_ns {
                        t.name = Some(name);
                        t.named_ns = r.time_ns;
                    }
                }
            }
        }
    }

    pub(super) fn get(&self, tid: i32) -> Option<&TaskInfo> {
        u32::try_from(tid).ok().and_then(|t| self.threads.get(&t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: TaskKind, pid: u32, tid: u32, time_ns: u64) -> TaskEvent {
        TaskEvent { kind, pid, tid, time_ns, cpu: 1 }
    }

    #[test]
    fn folds_threads_of_the_process_only() {
        let mut log = TaskLog::default();
        log.add(
            100,
            vec![
                ev(TaskKind::Comm { name: "prog".into(), exec: true }, 100, 100, 5),
                ev(TaskKind::Fork { parent_pid: 100, parent_tid: 100 }, 100, 101, 10),
                ev(TaskKind::Comm { name: "worker-1".into(), exec: false }, 100, 101, 12),
                // A child process and its thread: counted, not the program's threads.
                ev(TaskKind::Fork { parent_pid: 100, parent_tid: 101 }, 200, 200, 15),
                ev(TaskKind::Fork { parent_pid: 200, parent_tid: 200 }, 200, 201, 16),
                ev(TaskKind::Exit, 100, 101, 30),
            ],
        );
        // A later drain with an earlier duplicate of the exit from another ring, and an earlier
        // name read after the later one (another cpu's ring): neither wins.
        log.add(
            100,
            vec![
                ev(TaskKind::Exit, 100, 101, 29),
                ev(TaskKind::Comm { name: "worker-0".into(), exec: false }, 100, 101, 11),
            ],
        );
        assert_eq!(log.records, 8);
        assert_eq!(log.child_processes, 1);
        assert_eq!(log.child_pids, vec![200]);
        assert_eq!(log.threads.len(), 2);
        let w = log.get(101).unwrap();
        assert_eq!(w.created, Some((10, 100, 1)));
        assert_eq!(w.exited_ns, Some(30));
        assert_eq!(w.name.as_deref(), Some("worker-1"));
        let main = log.get(100).unwrap();
        assert_eq!(main.created, None);
        assert_eq!(main.name.as_deref(), Some("prog"));
        assert!(log.get(200).is_none() && log.get(-1).is_none());
    }

    #[test]
    fn the_main_thread_forked_from_outside_is_not_created_inside() {
        let mut log = TaskLog::default();
        log.add(300, vec![ev(TaskKind::Fork { parent_pid: 1, parent_tid: 1 }, 300, 300, 3)]);
        assert_eq!(log.get(300).unwrap().created, None);
    }
}
