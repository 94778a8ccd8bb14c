//! `numascope run --plan PLAN [--dry-run] -- CMD ARGS...`: launches a program with a plan's
//! object entries (placement by allocation site) and thread entries (pinning by creation order
//! and name) applied from its first allocation, through the allocation shim preloaded into it
//! (docs/apply.md, "Applying at the next launch").

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use numascope_core::alloc_sites::{preload_possible, shim_path, SHIM_FILE_NAME};
use numascope_core::apply::launch::{self, RunReport, WeightsFallback};
use numascope_core::apply::{self, audit, Plan};
use numascope_core::recorder::resolve_program;
use numascope_core::topology;

const EXIT_RUNTIME: u8 = 1;
const EXIT_USAGE: u8 = 2;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The placement plan (docs/plan-format.md) with object entries and/or thread entries that
    /// have an order or a name.
    #[arg(long = "plan", value_name = "PLAN.json")]
    plan: PathBuf,

    /// Check everything and print what would be placed and pinned, and the numactl line; do not
    /// launch the program.
    #[arg(long = "dry-run")]
    dry_run: bool,

    /// Write the report as JSON to this file (the program's stdout stays the program's).
    #[arg(long = "report", value_name = "FILE")]
    report: Option<PathBuf>,

    /// Run the command even if its program's file name differs from the plan's target.command[0].
    #[arg(long = "any-program")]
    any_program: bool,

    /// What to do with weighted-interleave entries whose weights the kernel does not have
    /// (no MPOL_WEIGHTED_INTERLEAVE before Linux 6.9, or other system-wide weights in
    /// /sys/kernel/mm/mempolicy/weighted_interleave): `refuse` the run, or use plain `interleave`
    /// over the same nodes.
    #[arg(long = "weights-fallback", value_name = "WHAT", default_value = "refuse",
          value_parser = clap::builder::PossibleValuesParser::new(["refuse", "interleave"]))]
    weights_fallback: String,

    /// Write the weights of the plan's weighted-interleave entries (and its systemWeights) to
    /// /sys/kernel/mm/mempolicy/weighted_interleave/nodeN for the run (Linux 6.9 or later, root),
    /// and restore the previous weights and auto mode when the program exits. The weights are
    /// system-wide: other processes' weighted interleave uses them while the program runs.
    #[arg(long = "set-system-weights")]
    set_system_weights: bool,

    /// Print nothing on stderr but errors (the report still goes to --report).
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,

    /// The command to launch and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

type CmdResult = Result<u8, (u8, String)>;

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A fresh private directory for the shim's plan file and log.
fn private_scratch() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    for n in 0..100u32 {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let d = base.join(format!("numascope-run-{}-{nanos}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("could not create a private directory"))
}

fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    f.write_all(bytes)
}

/// Everything checked before launch: the plan, the machine, the program, the weights, the shim.
struct Prepared {
    text: String,
    plan: Plan,
    policies: Vec<apply::plan::ObjectPolicy>,
    shim_plan: launch::ShimPlan,
    shim: PathBuf,
    page_size: u64,
    warnings: Vec<String>,
    /// `--set-system-weights`: what was written (the snapshot to restore after the run).
    system: Option<apply::weights::SystemWeightsReport>,
}

/// `--set-system-weights`: writes the weights the plan's entries need (a dry run only reads the
/// current ones) and says so; the report's `before` is restored after the run.
fn set_run_weights(
    args: &RunArgs,
    plan: &Plan,
    warnings: &mut Vec<String>,
) -> Result<Option<apply::weights::SystemWeightsReport>, (u8, String)> {
    use apply::weights;
    if !args.set_system_weights {
        return Ok(None);
    }
    let Some(sw) = launch::run_system_weights(plan).map_err(|e| (EXIT_RUNTIME, e))? else {
        warnings.push(
            "--set-system-weights: the plan has no weighted-interleave entry and no systemWeights: nothing written"
                .into(),
        );
        return Ok(None);
    };
    let dir = Path::new(weights::WEIGHTS_SYSFS);
    let r = weights::apply_system(dir, &sw, args.dry_run)
        .map_err(|e| (EXIT_RUNTIME, format!("--set-system-weights: {e}")))?;
    let want = weights::WeightsState { weights: sw.weights.clone(), auto: None }.describe();
    warnings.push(if args.dry_run {
        format!("--set-system-weights: would write the system-wide weights {want} for the run (now {}) and restore them after it", r.before.describe())
    } else {
        format!(
            "--set-system-weights: wrote the system-wide weights {want} for the run (they were {}; restored when the program exits)",
            r.before.describe()
        )
    });
    Ok(Some(r))
}

fn prepare(args: &RunArgs) -> Result<Prepared, (u8, String)> {
    let text =
        apply::read_limited(&args.plan, apply::MAX_PLAN_BYTES, "plan").map_err(|e| (EXIT_USAGE, e.to_string()))?;
    let topo = topology::read_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let plan = apply::parse_plan(&text, topo.page_size_bytes)
        .map_err(|e| (EXIT_USAGE, format!("{}: {e}", args.plan.display())))?;
    let usable_threads = plan.threads.iter().filter(|t| t.order.is_some() || t.name.is_some()).count();
    if plan.objects.is_empty() && usable_threads == 0 {
        return Err((
            EXIT_USAGE,
            format!(
                "{}: nothing to apply at launch: the plan has no objects[] and no thread entries with an order or a name \
                 (its pageRanges and tids belong to process {}: use numascope apply for those)",
                args.plan.display(),
                plan.target.pid
            ),
        ));
    }
    launch::check_machine(&plan, &topo).map_err(|e| (EXIT_RUNTIME, e))?;
    let mut warnings = Vec::new();
    match launch::check_program(&plan, &args.command) {
        Ok(Some(note)) => warnings.push(note),
        Ok(None) => {}
        Err(e) if args.any_program => warnings.push(format!("{e} (run anyway: --any-program)")),
        Err(e) => return Err((EXIT_RUNTIME, e)),
    }
    if !plan.page_ranges.is_empty() {
        warnings.push(format!(
            "the plan's {} pageRanges name addresses of process {} and are not applied at launch",
            plan.page_ranges.len(),
            plan.target.pid
        ));
    }
    let program = resolve_program(&args.command[0]).map_err(|e| (EXIT_RUNTIME, e.to_string()))?;
    preload_possible(&program).map_err(|e| {
        let why = e.to_string();
        let why = why.split("; allocation sites cannot be recorded").next().unwrap_or(&why).to_string();
        (
            EXIT_RUNTIME,
            format!(
                "{why}: numascope run places objects through the preloaded allocation shim, so it cannot run this \
                 program; the whole-process fallback is: {}",
                launch::numactl_line(&plan, &args.command).unwrap_or_else(|| "(none)".into())
            ),
        )
    })?;
    let system = set_run_weights(args, &plan, &mut warnings)?;
    // Anything refused from here on restores the weights just written.
    let restore = |e: (u8, String)| {
        if let Some(r) = system.as_ref().filter(|_| !args.dry_run) {
            let _ = apply::weights::restore(Path::new(apply::weights::WEIGHTS_SYSFS), &r.before);
        }
        e
    };
    let fallback =
        if args.weights_fallback == "interleave" { WeightsFallback::Interleave } else { WeightsFallback::Refuse };
    let (policies, w) = if system.is_some() && args.dry_run {
        // a dry run writes nothing: the weighted entries are checked against the weights it would write
        (plan.objects.iter().map(|o| o.policy).collect(), Vec::new())
    } else {
        launch::check_weights(&plan, Path::new(launch::WEIGHTED_INTERLEAVE_SYSFS), fallback)
            .map_err(|e| restore((EXIT_RUNTIME, e)))?
    };
    warnings.extend(w);
    let shim_plan = launch::shim_plan(&plan, &policies, &topo).map_err(|e| restore((EXIT_RUNTIME, e)))?;
    let shim = shim_path().filter(|p| p.is_file()).ok_or_else(|| {
        restore((
            EXIT_RUNTIME,
            format!("{SHIM_FILE_NAME} was not found next to numascope; set NUMASCOPE_ALLOC_SHIM to its path"),
        ))
    })?;
    let shim_s = shim.to_string_lossy();
    if shim_s.contains([':', ' ']) || !shim.is_absolute() {
        return Err(restore((
            EXIT_RUNTIME,
            format!("the shim's path {shim_s:?} must be absolute and without ':' or spaces to go in LD_PRELOAD"),
        )));
    }
    Ok(Prepared { text, plan, policies, shim_plan, shim, page_size: topo.page_size_bytes, warnings, system })
}

fn say(quiet: bool, s: &str) {
    if !quiet {
        eprint!("{s}");
    }
}

fn write_report(path: Option<&Path>, r: &RunReport) -> Result<(), (u8, String)> {
    let Some(path) = path else { return Ok(()) };
    let json = serde_json::to_string_pretty(r).map_err(|e| (EXIT_RUNTIME, e.to_string()))? + "\n";
    std::fs::write(path, json).map_err(|e| (EXIT_RUNTIME, format!("writing the report to {}: {e}", path.display())))
}

pub fn cmd_run(args: RunArgs) -> CmdResult {
    let started = Instant::now();
    let p = prepare(&args)?;
    let fallback = launch::numactl_line(&p.plan, &args.command);
    let mut report =
        launch::run_report(&p.plan, &p.policies, &p.shim_plan, &launch::ShimLog::default(), p.page_size, &args.command);
    report.warnings.splice(0..0, p.warnings.iter().cloned());
    if args.dry_run {
        report.dry_run = true;
        say(
            args.quiet,
            &format!("numascope run (dry run): would launch {:?} with {} preloaded:\n", args.command, p.shim.display()),
        );
        say(args.quiet, &launch::describe_report(&report, &p.plan));
        for w in &report.warnings {
            say(args.quiet, &format!("  warning: {w}\n"));
        }
        if let Some(f) = &fallback {
            say(args.quiet, &format!("whole-process fallback (coarser): {f}{}\n", weights_note(f)));
        }
        write_report(args.report.as_deref(), &report)?;
        return Ok(0);
    }

    let dir = private_scratch().map_err(|e| (EXIT_RUNTIME, format!("creating a private temporary directory: {e}")));
    let result = dir.and_then(|dir| {
        let r = launch_and_wait(&args, &p, &dir, report, started);
        let _ = std::fs::remove_dir_all(&dir);
        r
    });
    // --set-system-weights: the previous weights come back whatever happened to the program
    let restored =
        p.system.as_ref().map(|s| apply::weights::restore_system(Path::new(apply::weights::WEIGHTS_SYSFS), &s.before));
    let mut report = result?;
    match restored {
        Some(Ok((r, skipped))) => report.warnings.push(format!(
            "--set-system-weights: the system-wide weights were restored to {}{}{}",
            r.after.as_ref().map(|a| a.describe()).unwrap_or_default(),
            if r.matched { "" } else { " (they differ from the snapshot: another writer?)" },
            if skipped.is_empty() { String::new() } else { format!("; not restored: {}", skipped.join(", ")) }
        )),
        Some(Err(e)) => {
            report.warnings.push(format!("--set-system-weights: restoring the system-wide weights failed: {e}"))
        }
        None => {}
    }
    say(args.quiet, &format!("numascope run: {:?} exited ({}):\n", args.command, exit_words(&report)));
    say(args.quiet, &launch::describe_report(&report, &p.plan));
    for w in &report.warnings {
        say(args.quiet, &format!("  warning: {w}\n"));
    }
    if let Some(f) = &fallback {
        say(args.quiet, &format!("whole-process fallback (coarser): {f}{}\n", weights_note(f)));
    }
    write_report(args.report.as_deref(), &report)?;
    Ok(match (report.exit_code, report.signal) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(s)) => (128 + s).clamp(0, 255) as u8,
        _ => EXIT_RUNTIME,
    })
}

/// numactl's weighted interleave takes the kernel's system-wide weights, not the plan's.
fn weights_note(line: &str) -> &'static str {
    if line.contains("--weighted-interleave") {
        "  (with the kernel's system-wide weights in /sys/kernel/mm/mempolicy/weighted_interleave, which --set-system-weights sets)"
    } else {
        ""
    }
}

fn exit_words(r: &RunReport) -> String {
    match (r.exit_code, r.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "unknown status".into(),
    }
}

fn launch_and_wait(
    args: &RunArgs,
    p: &Prepared,
    dir: &Path,
    mut report: RunReport,
    started: Instant,
) -> Result<RunReport, (u8, String)> {
    let plan_file = dir.join("plan.nsplace");
    let log_file = dir.join("place.log");
    let io = |what: &str, e: std::io::Error| (EXIT_RUNTIME, format!("{what} in {}: {e}", dir.display()));
    write_new(&plan_file, p.shim_plan.text.as_bytes()).map_err(|e| io("writing the shim's plan", e))?;
    write_new(&log_file, b"").map_err(|e| io("creating the shim's log", e))?;
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(v) if !v.trim().is_empty() => format!("{}:{v}", p.shim.display()),
        _ => p.shim.display().to_string(),
    };
    say(
        args.quiet,
        &format!(
            "numascope run: launching {:?} with {} object entries and {} thread entries ({} preloaded)\n",
            args.command,
            p.plan.objects.len(),
            p.shim_plan.thread_entries.len(),
            SHIM_FILE_NAME
        ),
    );
    let launched_ms = unix_ms();
    let mut child = Command::new(&args.command[0])
        .args(&args.command[1..])
        .env("LD_PRELOAD", preload)
        .env("NUMASCOPE_PLACE_PLAN", &plan_file)
        .env("NUMASCOPE_PLACE_LOG", &log_file)
        .spawn()
        .map_err(|e| (EXIT_RUNTIME, format!("cannot start {:?}: {e}", args.command[0])))?;
    let pid = child.id();
    // Ctrl-C and Ctrl-\ go to the whole foreground group: the program decides; numascope stays
    // to report.
    // SAFETY: setting dispositions of this process's signals to ignore.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let start_ticks = numascope_core::procfs::process_start_ticks(Path::new("/proc"), pid as i32);
    // Audit log: the plan is in force from launch (docs/apply.md, "Audit log").
    let plan_json: serde_json::Value = serde_json::from_str(&p.text).unwrap_or(serde_json::Value::Null);
    let planned = serde_json::to_value(&report).unwrap_or(serde_json::Value::Null);
    let entry = audit::run_entry(&plan_json, &planned, pid as i32, start_ticks, launched_ms);
    if let Err(e) = audit::spool(&audit::spool_dir(), &entry) {
        report.warnings.push(format!("could not write the audit-log entry to {}: {e}", audit::spool_dir().display()));
    }
    let status = child.wait().map_err(|e| (EXIT_RUNTIME, format!("waiting for {pid}: {e}")))?;
    let log_text = match std::fs::metadata(&log_file) {
        Ok(m) if m.len() > launch::MAX_LOG_BYTES => {
            report.warnings.push(format!(
                "the shim's log is {} bytes, more than {}: it was not read",
                m.len(),
                launch::MAX_LOG_BYTES
            ));
            String::new()
        }
        _ => String::from_utf8_lossy(&std::fs::read(&log_file).unwrap_or_default()).into_owned(),
    };
    let log = launch::parse_shim_log(&log_text);
    let mut r = launch::run_report(&p.plan, &p.policies, &p.shim_plan, &log, p.page_size, &args.command);
    r.warnings.splice(0..0, report.warnings);
    if log.processes.is_empty() {
        r.warnings.push(
            "the shim wrote nothing: it was not loaded into the program (LD_PRELOAD removed or ignored?)".to_string(),
        );
    }
    r.pid = Some(pid);
    r.exit_code = status.code();
    r.signal = status.signal();
    r.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(r)
}
