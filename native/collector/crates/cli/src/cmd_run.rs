//! `numascope run --plan PLAN [--dry-run] -- CMD ARGS...`: launches a program with a plan's
//! object entries (placement by allocation site) and thread entries (pinning by creation order
//! and name) applied from its first allocation, through the allocation shim preloaded into it
//! (docs/apply.md, "Applying at the next launch").

use crate::exit::{EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_RUN_FAILED};
use std::path::{Path, PathBuf};

use numascope_core::alloc_sites::SHIM_FILE_NAME;
use numascope_core::apply;
use numascope_core::apply::launch::{self, RunOptions, RunReport, WeightsFallback};

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
    #[arg(short = 'o', long = "output", alias = "report", value_name = "FILE")]
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

    /// Print nothing on stderr but errors (the report still goes to -o).
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,

    /// The command to launch and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

type CmdResult = Result<u8, (u8, String)>;

/// The exit code of a failure of numascope run itself: 126 and 127 (the command cannot be
/// executed, is not found) stay; every other failure is 125.
fn own_failure((code, msg): (u8, String)) -> (u8, String) {
    match code {
        EXIT_CANNOT_EXECUTE | EXIT_NOT_FOUND => (code, msg),
        _ => (EXIT_RUN_FAILED, msg),
    }
}

pub fn cmd_run(args: RunArgs) -> CmdResult {
    run_plan(args).map_err(own_failure)
}

fn say(quiet: bool, s: &str) {
    if !quiet {
        eprint!("{s}");
    }
}

fn write_report(path: Option<&Path>, r: &RunReport) -> Result<(), (u8, String)> {
    let Some(path) = path else { return Ok(()) };
    let json = serde_json::to_string_pretty(r).map_err(|e| (EXIT_RUN_FAILED, e.to_string()))? + "\n";
    std::fs::write(path, json).map_err(|e| (EXIT_RUN_FAILED, format!("writing the report to {}: {e}", path.display())))
}

fn run_plan(args: RunArgs) -> CmdResult {
    let plan_text =
        apply::read_limited(&args.plan, apply::MAX_PLAN_BYTES, "plan").map_err(|e| (EXIT_RUN_FAILED, e.to_string()))?;
    let opts = RunOptions {
        plan_text,
        plan_label: args.plan.display().to_string(),
        command: args.command.clone(),
        dry_run: args.dry_run,
        any_program: args.any_program,
        weights_fallback: Some(if args.weights_fallback == "interleave" {
            WeightsFallback::Interleave
        } else {
            WeightsFallback::Refuse
        }),
        set_system_weights: args.set_system_weights,
    };
    let p = launch::prepare(&opts)?;
    let fallback = p.fallback();
    if args.dry_run {
        let report = p.planned_report();
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
    let launched = launch::launch(p, launch::Stdio3::Inherit)?;
    // Ctrl-C and Ctrl-\ go to the whole foreground group: the program decides; numascope stays
    // to report.
    // SAFETY: setting dispositions of this process's signals to ignore.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let plan = launched.prepared().plan.clone();
    let report = launched.wait()?;
    say(args.quiet, &format!("numascope run: {:?} exited ({}):\n", args.command, launch::exit_words(&report)));
    say(args.quiet, &launch::describe_report(&report, &plan));
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
        _ => EXIT_RUN_FAILED,
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
