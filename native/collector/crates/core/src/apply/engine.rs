//! The passes of an apply or rollback once its target is checked: the permission pre-flight (or
//! the dry run's query), the page mover, pinning the threads, the verification, and the report.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use super::mover::move_pass;
use super::options::{ApplyError, ApplyOptions};
use super::pages::{self, Cursor, Group};
use super::query::view_if_worth;
use super::query::{ms, preflight, query_jobs, query_pass, verify, Found};
use super::record::{RollbackRecord, ThreadAffinity, ROLLBACK_FORMAT, ROLLBACK_VERSION};
use super::report::{ApplyOutcome, ApplyReport, PageStats, RangeReport, Status, ThreadReport, Timings, WeightCheck};
use super::target::{
    check_pin_permission, check_process, page_permission_message, task_owner, thp_mappings, TaskOwner,
};
use super::{sys, vma_view};

pub(super) struct Thread {
    pub(super) tid: i32,
    pub(super) to_nodes: Vec<u32>,
    pub(super) cpus: Vec<u32>,
    /// The thread's start time when checked; pinning checks it again just before.
    pub(super) start_ticks: Option<u64>,
    /// Why the thread is not to be changed (rollback: it exited, or the tid was reused).
    pub(super) skip: Option<String>,
}

/// Pins each thread not skipped, after checking it is still the process's thread from the plan,
/// reading the affinity back; the previous affinity goes into the rollback record.
fn pin_threads(
    pid: i32,
    threads: &[Thread],
    reports: &mut [ThreadReport],
    proc_root: &Path,
    rollback: &mut RollbackRecord,
) {
    for (t, r) in threads.iter().zip(reports.iter_mut()) {
        if t.skip.is_some() {
            continue;
        }
        match task_owner(pid, t.tid, proc_root) {
            TaskOwner::Ours { start_ticks } if t.start_ticks.is_none_or(|s| s == start_ticks) => {}
            TaskOwner::Ours { .. } => {
                r.error = Some("the thread exited and its id was reused by a new thread; not pinned".into());
                continue;
            }
            TaskOwner::Gone => {
                r.error = Some("the thread has exited".into());
                continue;
            }
            TaskOwner::Foreign(owner) => {
                r.error = Some(format!("the thread id now belongs to process {owner}; not pinned"));
                continue;
            }
        }
        match sys::set_affinity(t.tid, &t.cpus) {
            Ok(()) => {
                if let Some(prev) = &r.previous_cpus {
                    rollback.threads.push(ThreadAffinity {
                        tid: t.tid,
                        cpus: prev.clone(),
                        start_time_ticks: t.start_ticks.map(|s| s.to_string()),
                    });
                }
                match sys::get_affinity(t.tid) {
                    Ok(rb) => {
                        r.pinned = rb == t.cpus;
                        if !r.pinned {
                            r.error = Some(format!(
                                "affinity read back as {rb:?}, not {:?} (a cpuset cgroup restricts the thread?)",
                                t.cpus
                            ));
                        }
                        r.read_back = Some(rb);
                    }
                    Err(e) => r.error = Some(format!("sched_getaffinity: {e}")),
                }
            }
            Err(e) => {
                r.error = Some(match e.raw_os_error() {
                    Some(libc::ESRCH) => "the thread has exited".to_string(),
                    Some(libc::EPERM) => {
                        format!("sched_setaffinity: {e} (needs CAP_SYS_NICE for another user's thread)")
                    }
                    Some(libc::EINVAL) => {
                        format!("sched_setaffinity: {e} (none of the cpus {:?} is allowed for the thread)", t.cpus)
                    }
                    _ => format!("sched_setaffinity: {e}"),
                });
            }
        }
    }
}

/// The pages of every range together (after the apply, an empty plan has nothing off its node).
fn totals(ranges: &[RangeReport], dry_run: bool, status: Status) -> PageStats {
    let mut totals = PageStats::default();
    for (i, r) in ranges.iter().enumerate() {
        if i == 0 {
            totals = r.stats.clone();
        } else {
            totals.add(&r.stats);
        }
    }
    if ranges.is_empty() && !dry_run && status != Status::ProcessExited {
        totals.after = Some(BTreeMap::new());
        totals.on_target_after = Some(0);
    }
    totals
}

/// Carries out an apply or rollback whose target is checked (`operation` names which): the
/// permission pre-flight (or the dry run's query of every page), the move pass ([`move_pass`]),
/// pinning, the verification, and the report with the rollback record.
#[allow(clippy::too_many_arguments)]
pub(super) fn execute(
    pid: i32,
    start_time: u64,
    page: u64,
    groups: Vec<Group>,
    threads: Vec<Thread>,
    opts: &ApplyOptions,
    operation: &str,
    mut warnings: Vec<String>,
) -> Result<ApplyOutcome, ApplyError> {
    let t0 = Instant::now();
    let proc_root = &opts.proc_root;
    let mut timings = Timings::default();

    // -- permission pre-flight for pinning (nothing has changed yet)
    if threads.iter().any(|t| t.skip.is_none()) {
        check_pin_permission(pid, proc_root)?;
    }

    // -- the dry run queries every page; a real apply one page per range (the permission
    // pre-flight for move_pages) and each batch just before it moves it
    let mapped: u64 = groups.iter().map(|g| g.pages).sum();
    let query_jobs = query_jobs(opts, mapped);
    let mut stats: Vec<PageStats> = groups
        .iter()
        .map(|g| PageStats { pages: g.pages + g.unmapped, unmapped: g.unmapped, ..Default::default() })
        .collect();
    let queried = if opts.dry_run {
        query_pass(pid, page, &groups, &Cursor::new(&groups), query_jobs, opts.no_skip, &mut stats)
    } else {
        preflight(pid, &groups)
    };
    queried.map_err(|e| match e.raw_os_error() {
        Some(libc::ESRCH) => ApplyError::NoProcess { pid },
        Some(libc::EPERM) | Some(libc::EACCES) => ApplyError::Permission(page_permission_message(pid, proc_root, &e)),
        _ => ApplyError::Io(format!("move_pages query of process {pid} failed: {e}")),
    })?;
    timings.query_ms = ms(t0);
    let t = Instant::now();
    let thp = pages::normalise(thp_mappings(pid, proc_root));
    timings.thp_ms = ms(t);

    let mut ranges: Vec<RangeReport> = Vec::with_capacity(groups.len());
    for (g, s) in groups.iter().zip(stats) {
        let thp_pages = if thp.is_empty() { 0 } else { g.pages_in(&thp, page) };
        if thp_pages > 0 {
            warnings.push(format!(
                "range 0x{:x}-0x{:x}: {thp_pages} pages are in mappings backed by transparent huge pages (smaps \
                 AnonHugePages): move_pages moves a whole 2 MiB page when asked to move any 4 KiB page of it, so an \
                 interleave at 4 KiB granularity cannot be achieved there, and tail pages may report EBUSY",
                g.start, g.end
            ));
        }
        ranges.push(RangeReport {
            start: g.start,
            end: g.end,
            action: g.action.clone(),
            to_nodes: g.to_nodes.clone(),
            weights: g.weights.clone(),
            stats: s,
            weight_check: None,
            expected_nodes: g.expected_nodes.clone(),
            thp_pages,
        });
    }

    let mut status = if opts.dry_run { Status::DryRun } else { Status::Complete };
    let mut message = None;
    let mut rollback = RollbackRecord {
        format: ROLLBACK_FORMAT.into(),
        version: ROLLBACK_VERSION,
        pid,
        start_time_ticks: start_time.to_string(),
        page_size: page,
        pages: Vec::new(),
        threads: Vec::new(),
        system_weights: None,
    };
    let mut thread_reports: Vec<ThreadReport> = threads
        .iter()
        .map(|t| ThreadReport {
            tid: t.tid,
            to_nodes: t.to_nodes.clone(),
            cpus: t.cpus.clone(),
            previous_cpus: if t.skip.is_none() { sys::get_affinity(t.tid).ok() } else { None },
            read_back: None,
            pinned: false,
            error: t.skip.clone(),
        })
        .collect();

    let mut jobs = 1;
    if !opts.dry_run {
        // -- move pages
        let t_move = Instant::now();
        let m = move_pass(pid, start_time, page, &groups, &thp, opts, t0, &mut ranges, &mut timings);
        timings.move_ms = ms(t_move);
        let unreached = m.unreached;
        (jobs, status, message) = (m.jobs, m.status, m.message);
        rollback.pages = m.runs;
        warnings.extend(m.warning);

        // -- pin threads (each checked again just before: still ours, same start time)
        let t = Instant::now();
        if status != Status::ProcessExited {
            pin_threads(pid, &threads, &mut thread_reports, proc_root, &mut rollback);
        }
        timings.pin_ms = ms(t);
        let t = Instant::now();

        // -- verify (is it still the same process?)
        let alive = check_process(pid, Some(start_time), proc_root).is_ok();
        if !alive {
            status = Status::ProcessExited;
        }
        if status == Status::ProcessExited {
            let moved: u64 = ranges.iter().map(|r| r.stats.moved).sum();
            let pinned = thread_reports.iter().filter(|t| t.pinned).count();
            let rest = if unreached > 0 {
                format!("; {unreached} pages of the plan were not reached (counted as not attempted)")
            } else {
                String::new()
            };
            message = Some(format!(
                "process {pid} exited midway: {moved} pages had been moved and {pinned} threads pinned before it \
                 exited{rest}"
            ));
        } else {
            let tv = Instant::now();
            let from_view: Vec<Found> = match view_if_worth(pid, page, &groups, opts) {
                Some(v) => groups.iter().map(|g| vma_view::counts(g, &v, page)).collect(),
                None => vec![None; groups.len()],
            };
            timings.numa_maps_ms += ms(tv);
            timings.view_pages_after =
                groups.iter().zip(&from_view).filter(|(_, f)| f.is_some()).map(|(g, _)| g.pages).sum();
            for (r, after) in ranges.iter_mut().zip(verify(pid, page, &groups, query_jobs, from_view)) {
                match after {
                    Some((hist, on)) => {
                        if let Some(w) = &r.weights {
                            r.weight_check = Some(WeightCheck::new(&r.to_nodes, w, &hist));
                        }
                        r.stats.after = Some(hist);
                        r.stats.on_target_after = Some(on);
                    }
                    None => warnings.push(format!("verification query of range 0x{:x}-0x{:x} failed", r.start, r.end)),
                }
            }
            let not_moved: u64 = ranges.iter().map(|r| r.stats.not_moved.total()).sum();
            if status == Status::Complete && (not_moved > 0 || thread_reports.iter().any(|t| !t.pinned)) {
                status = Status::Partial;
            }
            // The kernel's per-page status is not the last word (a THP moves as a whole, a
            // page can be migrated again by someone else): the verification query decides.
            let present: u64 =
                ranges.iter().map(|r| r.stats.pages - r.stats.unmapped - r.stats.not_present_before).sum();
            let on: u64 = ranges.iter().filter_map(|r| r.stats.on_target_after).sum();
            if on < present && matches!(status, Status::Complete | Status::Partial) {
                status = Status::Partial;
                let thp = if ranges.iter().any(|r| r.thp_pages > 0) {
                    " (transparent huge pages move as whole 2 MiB pages: see the warning)"
                } else {
                    ""
                };
                message.get_or_insert(format!(
                    "verification found {on} of {present} present pages on their planned node{thp}"
                ));
            }
        }
        timings.verify_ms = ms(t);
    }

    let totals = totals(&ranges, opts.dry_run, status);
    Ok(ApplyOutcome {
        report: ApplyReport {
            operation: operation.into(),
            pid,
            start_time_ticks: start_time,
            dry_run: opts.dry_run,
            status,
            message,
            page_size: page,
            pages: totals,
            ranges,
            threads: thread_reports,
            expected: None,
            warnings,
            jobs,
            elapsed_ms: t0.elapsed().as_secs_f64() * 1e3,
            rollback_record: None,
            system_weights: None,
        },
        rollback,
        timings,
    })
}
