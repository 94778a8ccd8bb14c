//! `numascope run --plan PLAN -- CMD` (also serve's `POST /api/runs` and the binding's
//! `runPlan()`): a plan's object and thread entries applied to a new run of the program from its
//! first allocation, through the allocation shim (docs/apply.md, "Applying at the next launch").
//!
//! - `shim.rs`: what needs no process: the checks (machine, program, weighted interleave), the
//!   shim's plan file, the parser of its log, the run report, the whole-process `numactl` line;
//! - `process.rs`: the checks before launch ([`prepare`]), the launch with the shim preloaded
//!   ([`launch`]) and the report when the program exits ([`Launched::wait`]).

mod process;
mod shim;

pub use process::{
    exit_words, launch, prepare, Launched, Prepared, RunError, RunOptions, Stdio3, EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND,
    EXIT_RUNTIME, EXIT_USAGE,
};
pub use shim::{
    check_machine, check_program, check_weights, describe_report, numactl_line, parse_shim_log, plan_frames,
    run_report, run_system_weights, shell_quote, shim_plan, ModuleRunReport, ObjectRunReport, Pin, Placement,
    ProcessLog, RunReport, ShimLog, ShimPlan, ThreadPinned, ThreadRunReport, WeightsFallback, MAX_LOG_BYTES,
    MAX_RUN_CPU, MAX_RUN_THREAD_ENTRIES, WEIGHTED_INTERLEAVE_SYSFS,
};
