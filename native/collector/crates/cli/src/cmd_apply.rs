//! `numascope apply PLAN.json -p PID` and `numascope rollback RECORD.json`.

use crate::exit::{EXIT_PARTIAL, EXIT_RUNTIME, EXIT_USAGE};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use numascope_core::apply::{self, retarget, ApplyError, ApplyOptions, ApplyReport, RollbackRecord, Status};
use numascope_core::topology;

/// Exit codes of apply/rollback: 0 complete (or dry run), 1 refused or failed (nothing or only
/// part was done: see the report), 2 usage, 3 partial (budget ran out, or some pages/threads
/// could not be changed).

#[derive(clap::Args, Debug)]
pub struct ApplyArgs {
    /// The placement plan (docs/plan-format.md).
    #[arg(value_name = "PLAN.json")]
    plan: PathBuf,

    /// The process to apply the plan to; must equal the plan's target.pid.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID",
        required_unless_present = "retarget",
        conflicts_with = "retarget"
    )]
    pid: Option<i32>,

    /// Apply nothing: re-target the plan to process PID, another run of the same program, and
    /// write the re-targeted plan (-o). Ranges in file-backed or named mappings map by file
    /// and offset, object entries onto the allocations in --allocations; everything else is
    /// listed as skipped with its reason (docs/apply.md, "Re-targeting a plan to another run").
    #[arg(long = "retarget", value_name = "PID")]
    retarget: Option<i32>,

    /// With --retarget: the new process's allocations, from a trace of it recorded with
    /// allocation sites (FILE.numascope) or the allocation shim's records (a *.nsalloc file, or
    /// the directory holding them).
    #[arg(long = "allocations", value_name = "PATH", requires = "retarget")]
    allocations: Option<PathBuf>,

    /// With --retarget: where to write the re-targeted plan (default:
    /// numascope-plan-PID-UNIXTIME.json in the current directory, never replacing a file).
    #[arg(short = 'o', long = "output", alias = "out", value_name = "FILE", requires = "retarget")]
    out: Option<PathBuf>,

    /// List every operation and its expected effect; change nothing.
    #[arg(long = "dry-run")]
    dry_run: bool,

    /// Print the report as JSON on stdout.
    #[arg(long = "json")]
    json: bool,

    /// Stop moving pages after N milliseconds (threads are still pinned, pages verified).
    #[arg(long = "budget-ms", value_name = "N")]
    budget_ms: Option<u64>,

    /// Pages per move_pages call (at most 65536). Default: adaptive, as many as one call moves in
    /// about 0.4 s (between 256 and 65536; the first call 4096), within the time budget.
    #[arg(long = "batch", value_name = "PAGES", value_parser = clap::value_parser!(u64).range(1..=65_536))]
    batch: Option<u64>,

    /// Where to write the rollback record (default: numascope-rollback-PID-UNIXTIME.json in
    /// the current directory, never replacing a file; mode 0600 when run as root).
    #[arg(long = "rollback-output", alias = "rollback-out", value_name = "FILE")]
    rollback_out: Option<PathBuf>,

    /// Pause N milliseconds between move_pages batches, to limit the impact on the running
    /// process (the time budget includes the pauses).
    #[arg(long = "pause-ms", value_name = "N")]
    pause_ms: Option<u64>,

    /// Also move pages that are already on their target node (the kernel treats these as
    /// no-ops; useful to exercise the move path on a one-node machine).
    #[arg(long = "no-skip")]
    no_skip: bool,

    /// Query every page's node with move_pages before and after the moves, also for move ranges
    /// that cover whole mappings, which are otherwise counted from /proc/PID/numa_maps (docs/apply.md).
    #[arg(long = "query-every-page")]
    query_every_page: bool,

    /// Threads issuing move_pages at once, on disjoint batches (default: the number of cpus, at
    /// most 8; --pause-ms implies 1).
    #[arg(long = "jobs", value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    jobs: Option<u64>,

    /// No progress lines on stderr.
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,

    /// Write the plan's systemWeights to /sys/kernel/mm/mempolicy/weighted_interleave/nodeN
    /// (Linux 6.9 or later, root). They are system-wide: every process's weighted interleave uses
    /// them. The previous weights and the auto mode go into the rollback record.
    #[arg(long = "set-system-weights")]
    set_system_weights: bool,

    /// Print where the time went on stderr (one `numascope: timings key=value …` line, also
    /// with --quiet; docs/apply.md, "Where the time goes").
    #[arg(long = "timings")]
    timings: bool,
}

#[derive(clap::Args, Debug)]
pub struct RollbackArgs {
    /// A rollback record written by `numascope apply`.
    #[arg(value_name = "RECORD.json")]
    record: PathBuf,

    /// Print the report as JSON on stdout.
    #[arg(long = "json")]
    json: bool,

    /// No progress lines on stderr.
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,
}

type CmdResult = Result<(), (u8, String)>;

fn err_code(e: &ApplyError) -> u8 {
    match e {
        ApplyError::Plan(_) => EXIT_USAGE,
        _ => EXIT_RUNTIME,
    }
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

pub fn cmd_apply(args: ApplyArgs) -> CmdResult {
    if let Some(pid) = args.retarget {
        return cmd_retarget(&args, pid);
    }
    let Some(pid) = args.pid else { return Err((EXIT_USAGE, "give the process with -p PID".into())) };
    let t_start = Instant::now();
    let text =
        apply::read_limited(&args.plan, apply::MAX_PLAN_BYTES, "plan").map_err(|e| (err_code(&e), e.to_string()))?;
    let topo = topology::read_numa_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let plan = apply::parse_plan(&text, topo.page_size_bytes)
        .map_err(|e| (EXIT_USAGE, format!("{}: {e}", args.plan.display())))?;
    if plan.target.pid != pid {
        return Err((
            EXIT_RUNTIME,
            format!(
                "the plan targets process {} (target.pid), not {}; numascope only touches the process it is given",
                plan.target.pid, pid
            ),
        ));
    }
    let opts = ApplyOptions {
        dry_run: args.dry_run,
        budget: args.budget_ms.map(Duration::from_millis),
        batch_pages: args.batch.unwrap_or(0) as usize,
        progress: !args.quiet,
        no_skip: args.no_skip,
        query_every_page: args.query_every_page,
        pause: args.pause_ms.map(Duration::from_millis),
        jobs: args.jobs.unwrap_or(0) as usize,
        set_system_weights: args.set_system_weights,
        ..Default::default()
    };
    let started_ms = unix_ms();
    let read_ms = ms(t_start);
    let out = apply::apply(&plan, &topo, &opts).map_err(|e| (err_code(&e), e.to_string()))?;
    let t_after = Instant::now();
    let mut report = out.report;
    if !plan.objects.is_empty() {
        report.warnings.push(format!(
            "the plan's {} object entries (allocation sites) are for the next launch (numascope run --plan) and were not \
             applied to this process",
            plan.objects.len()
        ));
    }
    // Audit log: a recorder of this process picks the entry up (docs/apply.md, "Audit log").
    if !args.dry_run {
        let plan_json: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        let entry = apply::audit::entry(&plan_json, &report, started_ms, unix_ms());
        if let Err(e) = apply::audit::spool(&apply::audit::spool_dir(), &entry) {
            report
                .warnings
                .push(format!("could not write the audit-log entry to {}: {e}", apply::audit::spool_dir().display()));
        }
    }
    let audit_ms = ms(t_after);
    let t_record = Instant::now();
    let mut write_err = None;
    if !args.dry_run && !out.rollback.is_empty() {
        match write_rollback_record(&out.rollback, args.rollback_out.as_deref(), pid) {
            Ok(path) => report.rollback_record = Some(path.display().to_string()),
            Err(e) => write_err = Some(e),
        }
    }
    let record_ms = ms(t_record);
    emit(&report, args.json)?;
    if args.timings {
        let batch = opts.fixed_batch().map(|b| b.to_string()).unwrap_or_else(|| "auto".into());
        eprintln!("{}", timings_line(&out.timings, &report, &batch, read_ms, audit_ms, record_ms, ms(t_start)));
    }
    if let Some(e) = write_err {
        return Err((EXIT_RUNTIME, e));
    }
    finish(&report)
}

/// Writes the rollback record safely (write_new_file): to `out` (replacing it) or, by default, to
/// a new `numascope-rollback-PID-UNIXTIME.json` in the current directory. Large records are
/// written compact.
fn write_rollback_record(rec: &RollbackRecord, out: Option<&Path>, pid: i32) -> Result<PathBuf, String> {
    let text = if rec.pages.len() > 4096 { serde_json::to_string(rec) } else { serde_json::to_string_pretty(rec) }
        .map_err(|e| e.to_string())?
        + "\n";
    write_new_file(&text, out, &format!("numascope-rollback-{pid}"), "the rollback record")
}

/// Writes `text` safely (an exclusive temporary file in the destination's directory, synced, then
/// renamed; mode 0600 as root): to `out` (replacing it) or, by default, to a new
/// `STEM-UNIXTIME.json` in the current directory (`-2`, `-3`, … when that name is taken: an
/// earlier file is never replaced). `what` names the file in errors.
fn write_new_file(text: &str, out: Option<&Path>, stem: &str, what: &str) -> Result<PathBuf, String> {
    use numascope_core::trace::writer::{file_mode, split_output, TempFile};
    use std::io::Write;
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let default = PathBuf::from(format!("{stem}-{secs}.json"));
    let path = out.map(Path::to_path_buf).unwrap_or(default);
    let err = |p: &Path, e: std::io::Error| format!("writing {what} {}: {e}", p.display());
    let (dir, name) = split_output(&path).map_err(|e| err(&path, e))?;
    for n in 1..100 {
        let mut tmp = TempFile::new_in(&dir, &name, file_mode()).map_err(|e| err(&path, e))?;
        tmp.file().write_all(text.as_bytes()).map_err(|e| err(&path, e))?;
        if out.is_some() {
            return tmp.persist(&path).map(|_| path.clone()).map_err(|e| err(&path, e));
        }
        let p = if n == 1 { path.clone() } else { PathBuf::from(format!("{stem}-{secs}-{n}.json")) };
        match tmp.persist_new(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(err(&p, e)),
        }
    }
    Err(format!("writing {what}: every name {stem}-{secs}-N.json is taken"))
}

pub fn cmd_rollback(args: RollbackArgs) -> CmdResult {
    let text = apply::read_limited(&args.record, apply::MAX_RECORD_BYTES, "rollback record")
        .map_err(|e| (err_code(&e), e.to_string()))?;
    let record = RollbackRecord::parse(&text).map_err(|e| (EXIT_USAGE, format!("{}: {e}", args.record.display())))?;
    let topo = topology::read_numa_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let opts = ApplyOptions { progress: !args.quiet, ..Default::default() };
    let out = apply::rollback(&record, &topo, &opts).map_err(|e| (err_code(&e), e.to_string()))?;
    emit(&out.report, args.json)?;
    finish(&out.report)
}

/// Milliseconds since `t`.
fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// The `--timings` line: the command's phases in milliseconds (docs/apply.md lists the keys).
pub fn timings_line(
    t: &apply::Timings,
    r: &ApplyReport,
    batch: &str,
    read_ms: f64,
    audit_ms: f64,
    record_ms: f64,
    total_ms: f64,
) -> String {
    format!(
        "numascope: timings total_ms={total_ms:.1} read_ms={read_ms:.1} prepare_ms={:.1} query_ms={:.1} thp_ms={:.1} \
         move_ms={:.1} move_query_ms={:.1} move_call_ms={:.1} move_calls={} batch={batch} batch_max={} jobs={} pin_ms={:.1} \
         verify_ms={:.1} numa_maps_ms={:.1} view_pages_before={} view_pages_after={} audit_ms={audit_ms:.1} \
         record_ms={record_ms:.1} pages_moved={}",
        t.prepare_ms,
        t.query_ms,
        t.thp_ms,
        t.move_ms,
        t.move_query_ms,
        t.move_call_ms,
        t.move_calls,
        t.move_batch_max,
        r.jobs,
        t.pin_ms,
        t.verify_ms,
        t.numa_maps_ms,
        t.view_pages_before,
        t.view_pages_after,
        r.pages.moved
    )
}

fn finish(r: &ApplyReport) -> CmdResult {
    match r.status {
        Status::Complete | Status::DryRun => Ok(()),
        Status::ProcessExited => {
            Err((EXIT_RUNTIME, r.message.clone().unwrap_or_else(|| "the process exited midway".into())))
        }
        Status::Partial | Status::BudgetExhausted => Err((
            EXIT_PARTIAL,
            format!(
                "{} was only partly done: {}",
                r.operation,
                r.message.clone().unwrap_or_else(|| "see the not-moved counts and thread errors in the report".into())
            ),
        )),
    }
}

fn emit(r: &ApplyReport, json: bool) -> CmdResult {
    if json {
        println!("{}", serde_json::to_string_pretty(r).map_err(|e| (EXIT_RUNTIME, e.to_string()))?);
    } else {
        print!("{}", human(r));
    }
    Ok(())
}

fn nodes(m: &std::collections::BTreeMap<u32, u64>) -> String {
    if m.is_empty() {
        return "-".into();
    }
    m.iter().map(|(n, c)| format!("N{n}={c}")).collect::<Vec<_>>().join(" ")
}

/// "1 page is", "3 pages are".
fn pages_are(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what} is")
    } else {
        format!("{n} {what}s are")
    }
}

/// Why the pages to move now differ from the planner's count: the process changed since the
/// recording. Only the totals are known here (the plan carries no per-page recorded node), so the
/// line names each count that can account for the difference rather than attributing it page by page.
fn to_move_difference(expected: u64, p: &numascope_core::apply::PageStats) -> String {
    let diff = p.to_move as i64 - expected as i64;
    let mut parts = Vec::new();
    if p.not_present_before > 0 {
        parts.push(format!(
            "{} not present now (freed or swapped out since the recording, or never touched)",
            pages_are(p.not_present_before, "planned page")
        ));
    }
    if p.unmapped > 0 {
        parts.push(format!("{} outside the process's mappings now (unmapped since)", pages_are(p.unmapped, "page")));
    }
    parts.push(format!(
        "{} already on their planned node (moved since the recording, by the kernel or an earlier apply, or touched first there)",
        pages_are(p.already_in_place, "present page")
    ));
    format!(
        "{} pages to move now, {} {} than the planner's count: {}",
        p.to_move,
        diff.unsigned_abs(),
        if diff > 0 {
            "more (pages touched since the recording, or moved away from their planned node)"
        } else {
            "fewer"
        },
        parts.join("; ")
    )
}

/// The human-readable report.
pub fn human(r: &ApplyReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let verb = if r.dry_run { "dry run (nothing changed)" } else { "done" };
    let _ = writeln!(s, "numascope {} on process {} (start time {}): {verb}", r.operation, r.pid, r.start_time_ticks);
    let status = match r.status {
        Status::DryRun => "dry-run",
        Status::Complete => "complete",
        Status::Partial => "partial",
        Status::BudgetExhausted => "budget-exhausted",
        Status::ProcessExited => "process-exited",
    };
    let _ = writeln!(s, "status: {status}{}", r.message.as_ref().map(|m| format!(" — {m}")).unwrap_or_default());
    let kib = r.page_size / 1024;
    for (i, g) in r.ranges.iter().enumerate() {
        let st = &g.stats;
        let _ = writeln!(
            s,
            "range {i}: 0x{:x}-0x{:x} ({} pages of {kib} KiB) {} to nodes {:?}",
            g.start, g.end, st.pages, g.action, g.to_nodes
        );
        if st.unmapped > 0 {
            let _ = writeln!(s, "  unmapped:       {} pages outside the process's mappings (skipped)", st.unmapped);
        }
        let _ = writeln!(s, "  before:         {}  (not present: {})", nodes(&st.before), st.not_present_before);
        let _ = writeln!(s, "  planned after:  {}", nodes(&st.planned_after));
        let _ = writeln!(s, "  to move:        {} pages ({} already in place)", st.to_move, st.already_in_place);
        if !r.dry_run {
            let nm = &st.not_moved;
            let _ = writeln!(
                s,
                "  moved:          {}; not moved {} (busy {}, not present {}, not permitted {}, huge page {}, elsewhere {}{}); not attempted {}",
                st.moved,
                nm.total(),
                nm.busy,
                nm.not_present,
                nm.not_permitted,
                nm.huge_page,
                nm.elsewhere,
                nm.other.iter().map(|(k, v)| format!(", {k} {v}")).collect::<String>(),
                st.not_attempted
            );
            if let (Some(a), Some(on)) = (&st.after, st.on_target_after) {
                let _ = writeln!(
                    s,
                    "  achieved after: {}  ({on} of {} present pages on their planned node)",
                    nodes(a),
                    a.values().sum::<u64>()
                );
            }
        }
        if let Some(w) = &g.weight_check {
            let _ = writeln!(
                s,
                "  weights:        {:?} over {:?}: expected {} found {} (tolerance {} pages, one per weight cycle): {}",
                g.weights.as_deref().unwrap_or(&[]),
                g.to_nodes,
                nodes(&w.expected),
                nodes(&w.found),
                w.cycles,
                if w.ok { "match" } else { "MISMATCH" }
            );
        }
        if g.thp_pages > 0 {
            let _ = writeln!(s, "  transparent huge pages: {} base pages of this range", g.thp_pages);
        }
    }
    for t in &r.threads {
        let cpus = |v: &Vec<u32>| v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
        let prev = t.previous_cpus.as_ref().map(cpus).unwrap_or_else(|| "?".into());
        if r.dry_run {
            let _ = writeln!(
                s,
                "thread {}: pin to nodes {:?} = cpus {} (now cpus {prev})",
                t.tid,
                t.to_nodes,
                cpus(&t.cpus)
            );
        } else {
            let rb = t.read_back.as_ref().map(cpus).unwrap_or_else(|| "?".into());
            let _ = writeln!(
                s,
                "thread {}: {} cpus {} (was {prev}, read back {rb}){}",
                t.tid,
                if t.pinned { "pinned to" } else { "NOT pinned to" },
                cpus(&t.cpus),
                t.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
            );
        }
    }
    if let Some(w) = &r.system_weights {
        let _ = writeln!(
            s,
            "system weights ({}): before {}; {} {}{}",
            w.operation,
            w.before.describe(),
            if r.dry_run { "would write" } else { "wrote" },
            numascope_core::apply::weights::WeightsState { weights: w.planned.clone(), auto: None }.describe(),
            w.after
                .as_ref()
                .map(|a| format!("; read back {}{}", a.describe(), if w.matched { "" } else { " (DIFFERS)" }))
                .unwrap_or_default()
        );
    }
    let p = &r.pages;
    let _ = writeln!(s, "total: {} pages planned to move, {} already in place", p.to_move, p.already_in_place);
    if let Some(e) = &r.expected {
        if let Some(m) = e.pages_to_move {
            let _ =
                writeln!(s, "  planner expected {m} pages to move (the recording's pages whose node the plan changes)");
            if m != p.to_move {
                // One count per thing (issue 30): say where the difference comes from.
                let _ = writeln!(s, "  {}", to_move_difference(m, p));
            }
        }
        if let Some(m) = &e.pages_per_node_after {
            let _ = writeln!(s, "  planner expected after: {}", nodes(m));
        }
    }
    if !r.dry_run {
        let _ = writeln!(
            s,
            "  moved {}, not moved {}, not attempted {}; achieved after: {}",
            p.moved,
            p.not_moved.total(),
            p.not_attempted,
            p.after.as_ref().map(nodes).unwrap_or_else(|| "unknown".into())
        );
    }
    let pinned = r.threads.iter().filter(|t| t.pinned).count();
    if !r.threads.is_empty() && !r.dry_run {
        let _ = writeln!(s, "threads: {pinned} of {} pinned", r.threads.len());
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    if let Some(p) = &r.rollback_record {
        let _ = writeln!(s, "rollback record: {p}  (undo with `numascope rollback {p}`)");
    }
    let _ = writeln!(
        s,
        "elapsed: {:.1} ms ({} move_pages thread{})",
        r.elapsed_ms,
        r.jobs,
        if r.jobs == 1 { "" } else { "s" }
    );
    s
}

/// The new process's allocations from `--allocations PATH`: a trace (`.numascope`), one
/// `*.nsalloc` file of the allocation shim, or a directory of them (the one of process `pid`).
fn read_allocations(path: &Path, pid: i32) -> Result<retarget::Allocations, String> {
    use numascope_core::alloc_sites::{load_dir, read_alloc_file, symbolize, ReadLimits, SymbolizeOptions};
    let (limits, opts) = (ReadLimits::default(), SymbolizeOptions::default());
    if path.is_dir() {
        let files = load_dir(path, &limits, &opts).map_err(|e| format!("--allocations {}: {e}", path.display()))?;
        let mut pids = Vec::new();
        for (p, r) in files {
            match r {
                Ok(s) if s.pid as i32 == pid => {
                    return Ok(retarget::allocations_from_sites(
                        &s,
                        &format!("allocation-shim records {}", p.display()),
                    ))
                }
                Ok(s) => pids.push(s.pid.to_string()),
                Err(e) => pids.push(format!("(unreadable {}: {e})", p.display())),
            }
        }
        return Err(format!(
            "--allocations {}: no allocation-shim records of process {pid} there (found: {})",
            path.display(),
            if pids.is_empty() { "none".into() } else { pids.join(", ") }
        ));
    }
    if path.extension().is_some_and(|e| e == "nsalloc") {
        let f = read_alloc_file(path, &limits).map_err(|e| format!("--allocations {}: {e}", path.display()))?;
        let s = symbolize(&f, &opts);
        return Ok(retarget::allocations_from_sites(&s, &format!("allocation-shim records {}", path.display())));
    }
    let t = numascope_core::trace::reader::read_trace(path)
        .map_err(|e| format!("--allocations {}: {e}", path.display()))?;
    let Some(proc_) = t.manifest.process.as_ref() else {
        return Err(format!("--allocations {}: the trace names no process (manifest.process)", path.display()));
    };
    let tables = numascope_core::trace::alloc::from_batches(|name| t.tables.get(name).cloned());
    if tables.rows("allocations") == 0 {
        return Err(format!(
            "--allocations {}: the trace has no allocations (recorded with --no-alloc-sites, attached, or an older \
             format): record the new run with allocation sites, or pass the shim's records",
            path.display()
        ));
    }
    let ticks = proc_.start_time_ticks.as_deref().and_then(|s| s.parse().ok());
    Ok(retarget::allocations_from_trace(&tables, proc_.pid, ticks, &format!("trace {}", path.display())))
}

/// Writes the re-targeted plan (write_new_file): to `out` (replacing it), or to a new
/// numascope-plan-PID-UNIXTIME[-N].json in the current directory.
fn write_plan(text: &str, out: Option<&Path>, pid: i32) -> Result<PathBuf, String> {
    write_new_file(text, out, &format!("numascope-plan-{pid}"), "the re-targeted plan")
}

/// `numascope apply PLAN --retarget PID`: exit 0 when everything was mapped, 3 when something
/// was skipped (listed), 1 refused, 2 invalid plan.
fn cmd_retarget(args: &ApplyArgs, pid: i32) -> CmdResult {
    let started_ms = unix_ms();
    let text =
        apply::read_limited(&args.plan, apply::MAX_PLAN_BYTES, "plan").map_err(|e| (err_code(&e), e.to_string()))?;
    let topo = topology::read_numa_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let plan = apply::parse_plan(&text, topo.page_size_bytes)
        .map_err(|e| (EXIT_USAGE, format!("{}: {e}", args.plan.display())))?;
    let plan_json: serde_json::Value = serde_json::from_str(&text).map_err(|e| (EXIT_USAGE, e.to_string()))?;
    let proc_root = Path::new("/proc");
    let new = retarget::ProcessView::read(proc_root, pid).map_err(|e| (EXIT_RUNTIME, e))?;
    // The original process's maps are used only when it provably still is that process.
    let old_pid = plan.target.pid;
    let mut early_warnings = Vec::new();
    let original = match plan.target.start_time_ticks {
        Some(t) if numascope_core::procfs::process_start_ticks(proc_root, old_pid) == Some(t) => {
            retarget::ProcessView::read(proc_root, old_pid).ok()
        }
        None if numascope_core::procfs::process_start_ticks(proc_root, old_pid).is_some() => {
            early_warnings.push(format!(
                "process {old_pid} runs, but the plan records no start time (target.startTimeTicks) to tell whether it \
                 is the process the plan was made for: its mappings were not used"
            ));
            None
        }
        _ => None,
    };
    let allocations = match &args.allocations {
        Some(p) => Some(read_allocations(p, pid).map_err(|e| (EXIT_RUNTIME, e))?),
        None => None,
    };
    let input = retarget::RetargetInput {
        original: original.as_ref(),
        new: &new,
        allocations: allocations.as_ref(),
        page_size: topo.page_size_bytes,
        now_iso: numascope_core::time::iso8601_utc(started_ms),
    };
    let (out, mut rep) = retarget::retarget(&plan_json, &plan, &input).map_err(|e| (EXIT_RUNTIME, e))?;
    rep.warnings.splice(0..0, early_warnings);
    let text = serde_json::to_string_pretty(&out).map_err(|e| (EXIT_RUNTIME, e.to_string()))? + "\n";
    let path = write_plan(&text, args.out.as_deref(), pid).map_err(|e| (EXIT_RUNTIME, e))?;
    rep.output = Some(path.display().to_string());
    // Audit log: a recorder of the new process picks the entry up (docs/apply.md, "Audit log").
    let entry = apply::audit::retarget_entry(&out, &rep, started_ms, unix_ms());
    if let Err(e) = apply::audit::spool(&apply::audit::spool_dir(), &entry) {
        rep.warnings
            .push(format!("could not write the audit-log entry to {}: {e}", apply::audit::spool_dir().display()));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rep).map_err(|e| (EXIT_RUNTIME, e.to_string()))?);
    } else {
        print!("{}", retarget::describe(&rep));
    }
    if rep.skipped.is_empty() {
        Ok(())
    } else {
        Err((
            EXIT_PARTIAL,
            format!(
                "{} entries of the plan could not be re-targeted (listed above as skipped); the re-targeted plan {} has \
                 the rest",
                rep.skipped.len(),
                path.display()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numascope_core::apply::PageStats;

    /// The difference between the planner's count and the pages to move now is said with the
    /// counts that account for it; equal counts need no line.
    #[test]
    fn the_difference_from_the_planners_count_names_its_causes() {
        let p = PageStats {
            pages: 100,
            to_move: 40,
            already_in_place: 35,
            not_present_before: 20,
            unmapped: 5,
            ..Default::default()
        };
        let line = to_move_difference(50, &p);
        assert!(line.starts_with("40 pages to move now, 10 fewer than the planner's count"), "{line}");
        assert!(line.contains("20 planned pages are not present now"), "{line}");
        assert!(line.contains("5 pages are outside the process's mappings"), "{line}");
        assert!(line.contains("35 present pages are already on their planned node"), "{line}");
        let more = to_move_difference(30, &p);
        assert!(more.contains("10 more (pages touched since the recording"), "{more}");
        let one = PageStats { to_move: 49, not_present_before: 1, ..Default::default() };
        assert!(to_move_difference(50, &one).contains("1 planned page is not present now"));
        let clean = PageStats { to_move: 50, ..Default::default() };
        assert!(!to_move_difference(50, &clean).contains("not present"));
    }
}
