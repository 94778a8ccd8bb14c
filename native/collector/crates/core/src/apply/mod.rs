//! Apply a placement plan (docs/plan-format.md) to a live process, and roll it back.
//!
//! Order of work (docs/apply.md):
//! 1. validate the plan ([`plan::parse_plan`]), within the documented size limits;
//! 2. [`check_target`]: same machine (node ids, distances), same process (pid + start time),
//!    listed threads belong to it (a thread of another process is refused, naming its owner);
//! 3. the page ranges are clipped to the target's mappings (`/proc/PID/maps`): a range outside
//!    every mapping is refused, the unmapped part of a range is skipped and reported;
//! 4. permission pre-flight: the uid/capability rule for `sched_setaffinity`, and a
//!    `move_pages` query of every planned page (needs ptrace read access), before anything
//!    changes;
//! 5. move pages that are not already on their target node, in batches, under a time budget;
//! 6. pin threads to all cpus of their target nodes (each thread checked again just before);
//! 7. verify: query every page again and read every thread's affinity back;
//! 8. return a report (planned vs achieved) and a rollback record of what was changed.
//!
//! Pages are never listed: every pass walks the clipped ranges in batches ([`pages`]), so
//! memory is proportional to ranges, mappings and batches, not to pages. Only the process named
//! by the plan (or the rollback record) is touched.
//!
//! Files, by concern (each imports only those below it in this list, plus the plan files):
//! - [`operation`]: the two operations, [`apply`] and [`rollback`] (steps 1–3 and 8);
//! - `engine`: the passes once the target is checked (steps 4–8);
//! - `mover`: the page mover (step 5); `query`: batched page queries (dry run, pre-flight,
//!   verification);
//! - [`target`]: the checks of the machine, process, threads, credentials and THP mappings;
//! - [`report`]: the report types; [`record`]: the rollback record and its parser;
//! - [`options`]: [`ApplyOptions`] and [`ApplyError`];
//! - the plan ([`plan`], [`plan_objects`], [`weights`], over `plan_fields`), the page walk ([`pages`], [`vma_view`]),
//!   the syscalls ([`sys`]), the audit log ([`audit`]), `apply --retarget` ([`retarget`]) and
//!   `run --plan` ([`launch`]).

pub mod audit;
mod engine;
pub mod launch;
mod mover;
pub mod operation;
pub mod options;
pub mod pages;
pub mod plan;
mod plan_fields;
pub mod plan_objects;
mod query;
pub mod record;
pub mod report;
pub mod retarget;
pub mod sys;
pub mod target;
pub mod vma_view;
pub mod weights;

pub use operation::{apply, rollback};
pub use options::{ApplyError, ApplyOptions, MAX_AUTO_JOBS};
pub use plan::{
    parse_plan, Action, Expected, PageRange, Plan, PlanError, PlanErrorKind, ThreadPin, APPLY_MAX_RUNS, MAX_CPUS,
    MAX_NODES, MAX_PAGES_PER_RANGE, MAX_PAGE_RANGES, MAX_PLAN_BYTES, MAX_RECORD_BYTES, MAX_ROLLBACK_RUNS, MAX_THREADS,
    MAX_TOTAL_PAGES,
};
pub use record::{read_limited, PageRun, RollbackRecord, ThreadAffinity, ROLLBACK_FORMAT, ROLLBACK_VERSION};
pub use report::{
    ApplyOutcome, ApplyReport, NotMoved, PageStats, RangeReport, Status, ThreadReport, Timings, WeightCheck,
};
pub use target::{check_process, check_target, parse_smaps_thp, thp_mappings};
