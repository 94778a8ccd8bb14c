//! Launching a program with a plan (`numascope run --plan`, serve's `POST /api/runs`, the
//! binding's `runPlan()`): the checks before launch ([`prepare`]), the dry-run report, the
//! launch with the allocation shim preloaded ([`launch`]) and the report when the program exits
//! ([`Launched::wait`]). The pure parts (shim plan, log parser, report) are in `shim.rs`.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use super::shim::{self, RunReport, WeightsFallback};
use crate::alloc_sites::{preload_possible, shim_path, SHIM_FILE_NAME};
use crate::apply::plan::{parse_plan, Plan};
use crate::apply::{audit, weights};
use crate::topology;

/// Refused or failed before or while launching (`numascope run` exits 125 for it, as env(1)
/// does for its own failures).
pub const EXIT_RUNTIME: u8 = 1;
/// An invalid plan or request (serve's 400; `numascope run` exits 125 for it too).
pub const EXIT_USAGE: u8 = 2;
/// The command was found but cannot be executed (env(1)'s and the shell's 126).
pub const EXIT_CANNOT_EXECUTE: u8 = 126;
/// The command was not found (env(1)'s and the shell's 127).
pub const EXIT_NOT_FOUND: u8 = 127;

/// An exit code (above) and a message naming the problem.
pub type RunError = (u8, String);

/// What to launch and how.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The plan as JSON text (read with the size limit already).
    pub plan_text: String,
    /// How to name the plan in messages (its file, or "plan").
    pub plan_label: String,
    pub command: Vec<String>,
    pub dry_run: bool,
    /// Run even if the program's file name differs from the plan's target.command[0].
    pub any_program: bool,
    pub weights_fallback: Option<WeightsFallback>,
    /// Write the weighted-interleave weights for the run (root) and restore them after it.
    pub set_system_weights: bool,
}

/// Everything checked before launch: the plan, the machine, the program, the weights, the shim.
pub struct Prepared {
    pub text: String,
    pub plan: Plan,
    pub policies: Vec<crate::apply::plan::ObjectPolicy>,
    pub shim_plan: shim::ShimPlan,
    pub shim: PathBuf,
    pub page_size: u64,
    pub warnings: Vec<String>,
    pub command: Vec<String>,
    pub dry_run: bool,
    /// `set_system_weights`: what was written (the snapshot to restore after the run).
    pub system: Option<weights::SystemWeightsReport>,
}

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

/// `set_system_weights`: writes the weights the plan's entries need (a dry run only reads the
/// current ones) and says so; the report's `before` is restored after the run.
fn set_run_weights(
    o: &RunOptions,
    plan: &Plan,
    warnings: &mut Vec<String>,
) -> Result<Option<weights::SystemWeightsReport>, RunError> {
    if !o.set_system_weights {
        return Ok(None);
    }
    let Some(sw) = shim::run_system_weights(plan).map_err(|e| (EXIT_RUNTIME, e))? else {
        warnings.push(
            "--set-system-weights: the plan has no weighted-interleave entry and no systemWeights: nothing written"
                .into(),
        );
        return Ok(None);
    };
    let dir = Path::new(weights::WEIGHTS_SYSFS);
    let r =
        weights::apply_system(dir, &sw, o.dry_run).map_err(|e| (EXIT_RUNTIME, format!("--set-system-weights: {e}")))?;
    let want = weights::WeightsState { weights: sw.weights.clone(), auto: None }.describe();
    warnings.push(if o.dry_run {
        format!("--set-system-weights: would write the system-wide weights {want} for the run (now {}) and restore them after it", r.before.describe())
    } else {
        format!(
            "--set-system-weights: wrote the system-wide weights {want} for the run (they were {}; restored when the program exits)",
            r.before.describe()
        )
    });
    Ok(Some(r))
}

/// Checks everything before launch (nothing is launched; with `set_system_weights` and not a
/// dry run the weights are written, and restored by [`Launched::wait`] or on a refusal here).
pub fn prepare(o: &RunOptions) -> Result<Prepared, RunError> {
    if o.command.is_empty() {
        return Err((EXIT_USAGE, "no command to launch".into()));
    }
    let topo = topology::read_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))?;
    let plan =
        parse_plan(&o.plan_text, topo.page_size_bytes).map_err(|e| (EXIT_USAGE, format!("{}: {e}", o.plan_label)))?;
    let usable_threads = plan.threads.iter().filter(|t| t.order.is_some() || t.name.is_some()).count();
    if plan.objects.is_empty() && usable_threads == 0 {
        return Err((
            EXIT_USAGE,
            format!(
                "{}: nothing to apply at launch: the plan has no objects[] and no thread entries with an order or a name \
                 (its pageRanges and tids belong to process {}: use numascope apply for those)",
                o.plan_label, plan.target.pid
            ),
        ));
    }
    shim::check_machine(&plan, &topo).map_err(|e| (EXIT_RUNTIME, e))?;
    let mut warnings = Vec::new();
    match shim::check_program(&plan, &o.command) {
        Ok(Some(note)) => warnings.push(note),
        Ok(None) => {}
        Err(e) if o.any_program => warnings.push(format!("{e} (run anyway: --any-program)")),
        Err(e) => return Err((EXIT_RUNTIME, e)),
    }
    if !plan.page_ranges.is_empty() {
        warnings.push(format!(
            "the plan's {} pageRanges name addresses of process {} and are not applied at launch",
            plan.page_ranges.len(),
            plan.target.pid
        ));
    }
    let program = crate::program::find_program(&o.command[0]).map_err(|e| match e {
        crate::program::FindError::Empty => (EXIT_USAGE, "empty command".to_string()),
        crate::program::FindError::NotFound => (
            EXIT_NOT_FOUND,
            format!("command not found: {} (not an executable file, and not found in PATH)", o.command[0]),
        ),
        crate::program::FindError::NotExecutable => {
            (EXIT_CANNOT_EXECUTE, format!("cannot execute {}: permission denied", o.command[0]))
        }
    })?;
    preload_possible(&program).map_err(|e| {
        // Not an executable format at all: the kernel could not execute it either (126); the
        // other refusals are numascope run's own (the shim cannot be preloaded).
        let code = if matches!(e, crate::alloc_sites::PreloadBlocked::NotElf { .. }) {
            EXIT_CANNOT_EXECUTE
        } else {
            EXIT_RUNTIME
        };
        let why = e.to_string();
        let why = why.split("; allocation sites cannot be recorded").next().unwrap_or(&why).to_string();
        (
            code,
            format!(
                "{why}: numascope run places objects through the preloaded allocation shim, so it cannot run this \
                 program; the whole-process fallback is: {}",
                shim::numactl_line(&plan, &o.command).unwrap_or_else(|| "(none)".into())
            ),
        )
    })?;
    let system = set_run_weights(o, &plan, &mut warnings)?;
    // Anything refused from here on restores the weights just written.
    let restore = |e: RunError| {
        if let Some(r) = system.as_ref().filter(|_| !o.dry_run) {
            let _ = weights::restore(Path::new(weights::WEIGHTS_SYSFS), &r.before);
        }
        e
    };
    let fallback = o.weights_fallback.unwrap_or(WeightsFallback::Refuse);
    let (policies, w) = if system.is_some() && o.dry_run {
        // a dry run writes nothing: the weighted entries are checked against the weights it would write
        (plan.objects.iter().map(|o| o.policy).collect(), Vec::new())
    } else {
        shim::check_weights(&plan, Path::new(shim::WEIGHTED_INTERLEAVE_SYSFS), fallback)
            .map_err(|e| restore((EXIT_RUNTIME, e)))?
    };
    warnings.extend(w);
    let shim_plan = shim::shim_plan(&plan, &policies, &topo).map_err(|e| restore((EXIT_RUNTIME, e)))?;
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
    Ok(Prepared {
        text: o.plan_text.clone(),
        plan,
        policies,
        shim_plan,
        shim,
        page_size: topo.page_size_bytes,
        warnings,
        command: o.command.clone(),
        dry_run: o.dry_run,
        system,
    })
}

impl Prepared {
    /// What the run plans (the dry-run report): objects and threads, nothing matched yet.
    pub fn planned_report(&self) -> RunReport {
        let mut r = shim::run_report(
            &self.plan,
            &self.policies,
            &self.shim_plan,
            &shim::ShimLog::default(),
            self.page_size,
            &self.command,
        );
        r.warnings.splice(0..0, self.warnings.iter().cloned());
        r.dry_run = self.dry_run;
        r
    }

    /// The whole-process `numactl` line (coarser), when there is one.
    pub fn fallback(&self) -> Option<String> {
        shim::numactl_line(&self.plan, &self.command)
    }

    /// Restores system-wide weights written for the run (`set_system_weights`); a warning line.
    fn restore_weights(&self) -> Option<String> {
        let s = self.system.as_ref().filter(|_| !self.dry_run)?;
        Some(match weights::restore_system(Path::new(weights::WEIGHTS_SYSFS), &s.before) {
            Ok((r, skipped)) => format!(
                "--set-system-weights: the system-wide weights were restored to {}{}{}",
                r.after.as_ref().map(|a| a.describe()).unwrap_or_default(),
                if r.matched { "" } else { " (they differ from the snapshot: another writer?)" },
                if skipped.is_empty() { String::new() } else { format!("; not restored: {}", skipped.join(", ")) }
            ),
            Err(e) => format!("--set-system-weights: restoring the system-wide weights failed: {e}"),
        })
    }
}

/// A launched program: wait for it to get the report.
pub struct Launched {
    child: Child,
    pid: u32,
    dir: PathBuf,
    log_file: PathBuf,
    prepared: Prepared,
    warnings: Vec<String>,
    started: Instant,
}

/// How the program's standard streams are set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdio3 {
    /// The caller's stdin, stdout and stderr (the CLI).
    Inherit,
    /// stdin from /dev/null, stdout and stderr inherited (a server: no terminal to read).
    NullStdin,
}

/// Launches the program with the shim preloaded and writes the audit-log entry. On failure the
/// weights written for the run are restored.
pub fn launch(p: Prepared, stdio: Stdio3) -> Result<Launched, RunError> {
    let started = Instant::now();
    let fail = |p: &Prepared, e: RunError| {
        let _ = p.restore_weights();
        e
    };
    let dir = match private_scratch() {
        Ok(d) => d,
        Err(e) => return Err(fail(&p, (EXIT_RUNTIME, format!("creating a private temporary directory: {e}")))),
    };
    let plan_file = dir.join("plan.nsplace");
    let log_file = dir.join("place.log");
    let io = |what: &str, e: std::io::Error| (EXIT_RUNTIME, format!("{what} in {}: {e}", dir.display()));
    let written = write_new(&plan_file, p.shim_plan.text.as_bytes())
        .map_err(|e| io("writing the shim's plan", e))
        .and_then(|_| write_new(&log_file, b"").map_err(|e| io("creating the shim's log", e)));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(fail(&p, e));
    }
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(v) if !v.trim().is_empty() => format!("{}:{v}", p.shim.display()),
        _ => p.shim.display().to_string(),
    };
    let mut cmd = Command::new(&p.command[0]);
    cmd.args(&p.command[1..])
        .env("LD_PRELOAD", preload)
        .env("NUMASCOPE_PLACE_PLAN", &plan_file)
        .env("NUMASCOPE_PLACE_LOG", &log_file);
    if stdio == Stdio3::NullStdin {
        cmd.stdin(Stdio::null());
    }
    let launched_ms = unix_ms();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            let msg = format!("cannot start {:?}: {e}", p.command[0]);
            // As a shell would: not found 127, found but not executable (permissions, not an
            // executable format) 126, anything else numascope's own failure.
            let code = match e.kind() {
                std::io::ErrorKind::NotFound => EXIT_NOT_FOUND,
                std::io::ErrorKind::PermissionDenied => EXIT_CANNOT_EXECUTE,
                _ if e.raw_os_error() == Some(libc::ENOEXEC) => EXIT_CANNOT_EXECUTE,
                _ => EXIT_RUNTIME,
            };
            return Err(fail(&p, (code, msg)));
        }
    };
    let pid = child.id();
    let mut warnings = Vec::new();
    let start_ticks = crate::procfs::process_start_ticks(Path::new("/proc"), pid as i32);
    // Audit log: the plan is in force from launch (docs/apply.md, "Audit log").
    let plan_json: serde_json::Value = serde_json::from_str(&p.text).unwrap_or(serde_json::Value::Null);
    let planned = serde_json::to_value(p.planned_report()).unwrap_or(serde_json::Value::Null);
    let entry = audit::run_entry(&plan_json, &planned, pid as i32, start_ticks, launched_ms);
    if let Err(e) = audit::spool(&audit::spool_dir(), &entry) {
        warnings.push(format!("could not write the audit-log entry to {}: {e}", audit::spool_dir().display()));
    }
    Ok(Launched { child, pid, dir, log_file, prepared: p, warnings, started })
}

impl Launched {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    /// Waits for the program to exit; the report of what was matched, placed and pinned. The
    /// shim's scratch directory is removed and weights written for the run restored.
    pub fn wait(mut self) -> Result<RunReport, RunError> {
        let status = self.child.wait();
        let p = &self.prepared;
        let mut warnings = std::mem::take(&mut self.warnings);
        let log_text = match std::fs::metadata(&self.log_file) {
            Ok(m) if m.len() > shim::MAX_LOG_BYTES => {
                warnings.push(format!(
                    "the shim's log is {} bytes, more than {}: it was not read",
                    m.len(),
                    shim::MAX_LOG_BYTES
                ));
                String::new()
            }
            _ => String::from_utf8_lossy(&std::fs::read(&self.log_file).unwrap_or_default()).into_owned(),
        };
        let _ = std::fs::remove_dir_all(&self.dir);
        let restored = p.restore_weights();
        let status = status.map_err(|e| (EXIT_RUNTIME, format!("waiting for {}: {e}", self.pid)))?;
        let log = shim::parse_shim_log(&log_text);
        let mut r = shim::run_report(&p.plan, &p.policies, &p.shim_plan, &log, p.page_size, &p.command);
        let mut front = p.warnings.clone();
        front.extend(warnings);
        r.warnings.splice(0..0, front);
        if log.processes.is_empty() {
            r.warnings.push(
                "the shim wrote nothing: it was not loaded into the program (LD_PRELOAD removed or ignored?)"
                    .to_string(),
            );
        }
        r.warnings.extend(restored);
        r.pid = Some(self.pid);
        r.exit_code = status.code();
        r.signal = status.signal();
        r.elapsed_ms = self.started.elapsed().as_secs_f64() * 1e3;
        Ok(r)
    }
}

/// "exit code 3", "killed by signal 9".
pub fn exit_words(r: &RunReport) -> String {
    match (r.exit_code, r.signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "unknown status".into(),
    }
}
