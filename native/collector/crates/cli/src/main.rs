//! `numascope`: the command-line tool of the numascope NUMA memory-placement profiler.

mod cmd_analyze;
mod cmd_apply;
mod cmd_bench;
mod cmd_export;
mod exit;

use exit::{EXIT_RUNTIME, EXIT_USAGE};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::PossibleValuesParser;
use clap::{ArgGroup, Parser, Subcommand};

mod cmd_import;
mod cmd_run;
mod cmd_serve;
use numascope_core::probe::{self, Probe};
use numascope_core::recorder::{self, Naming, RecordError, RecordRequest, Report, RECORD_LIMITS};
use numascope_core::topology::{self, Topology};

/// Defaults shown in `--help`, from the recorder's one table of limits and defaults.
const DEFAULT_INTERVAL_MS: u64 = RECORD_LIMITS.interval_ms.default.unwrap();
const DEFAULT_MEM_RATE_HZ: u64 = RECORD_LIMITS.mem_rate_hz.default.unwrap();
const DEFAULT_SCAN_MAX_PAGES: u64 = RECORD_LIMITS.scan_max_pages.default.unwrap();
const DEFAULT_CALL_STACK_DEPTH: u64 = RECORD_LIMITS.call_stack_depth.default.unwrap();

#[derive(Parser, Debug)]
#[command(
    name = "numascope",
    version,
    about = "NUMA memory-placement profiler: record where threads run and which memory they touch",
    long_about = "numascope records where a program's threads run and which memory pages they touch \
(page-fault sampling with perf_event_open plus /proc and /sys polling), and writes one \
self-contained trace file (NAME.numascope: a ZIP of manifest.json and Arrow tables) that the \
numascope app and any Arrow reader open.\n\n\
Exit codes: 0 success, 1 runtime error, 2 usage error; `numascope run` exits with its program's status, or 125, 126, 127 for its own failures (see `numascope run --help`).",
    after_help = "Examples:\n  numascope probe\n  numascope record -o run.numascope -- ./app --size 4G\n  numascope record -d 10 -o before.numascope -- ./app   (./app keeps running: apply a plan, then record -p PID)\n  numascope record -p 1234 -d 10 -o attached.numascope\n  numascope topology --json"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Record a trace of a launched command or of a running process.
    #[command(
        long_about = "Record a trace.\n\n\
Launch a command (everything after `--`) and record it from its first instruction, or attach to \
a running process with -p PID (or sample only some of its threads with -t TID,...). Without -o \
the trace goes to a new numascope-YYYYMMDD-HHMMSS.numascope in the current directory (never \
replacing a file); --json prints the summary as one JSON object on stdout. Recording stops when the duration (-d) elapses, when the process \
exits, or on Ctrl-C/SIGTERM; the trace is written in every case.\n\n\
Stopping does not kill: a launched command still running when the capture stops is left running \
(its pid is printed, to apply a plan to it with `numascope apply PLAN -p PID` or to record it \
again with `-p PID`; stop it with `kill PID`). It runs in a process group of its own, so that \
Ctrl-C stops only the recording; its stdout and stderr are the recorder's, and its stdin too \
unless stdin is a terminal (then /dev/null: a background process group cannot read the \
terminal). With --kill-on-stop it shares the recorder's process group and stdin (Ctrl-C reaches \
it too) and is sent SIGTERM (SIGKILL after 2 s) when the capture stops, as before.\n\n\
What is exhaustive, sampled and estimated:\n- Page placement is exhaustive: a placement scan reads where every resident page sits \
(/proc/PID/pagemap for presence, move_pages for the node) at the start of an attached recording, \
periodically (taking at most 2 % of the time) and at the stop, up to --scan-max-pages pages; \
numa_maps snapshots count the pages of each mapping per node.\n- First touches are sampled: page-fault sampling (which thread touched which page first, when, on \
which cpu) records every fault while a thread faults under --fault-rate a second and about that \
many samples a second above, each sample weighing the faults it stands for; above the rate, the \
number of first touches is an estimate from those weights and the first-touching thread is known \
only for the sampled faults. --fault-period 1 records every fault.\n- Memory accesses are sampled by the PMU (AMD IBS, Intel PEBS) where the machine has one; without \
one they are unavailable, or come from NUMA hinting faults while automatic NUMA balancing is on.\n- /proc polling measures thread cpu and node, migrations, vmstat and per-node numastat counters.\n\n\
If page-fault events cannot be opened (permissions, kernel), /proc data and the placement scan \
are still recorded and the manifest says why.\n\n\
Permissions: page-fault sampling of your own processes works with perf_event_paranoid <= 2; \
faults taken in kernel mode need CAP_PERFMON (or CAP_SYS_ADMIN, or perf_event_paranoid <= 1). \
Attaching to another user's process needs root or CAP_SYS_PTRACE.",
        group(ArgGroup::new("target").required(true).multiple(true).args(["pid", "tid", "command"]))
    )]
    Record(RecordArgs),

    /// Show which data sources and metrics work on this machine, and why not.
    #[command(long_about = "Probe this machine: for each data source (page-faults, procfs, sysfs-topology, \
ibs-op, pebs-load, pebs-store, damon, core-counters, uncore) whether it is available, with a one-line \
reason, and for each metric whether it can be measured here. Opens a software page-fault counter \
and a hardware instructions counter to confirm.")]
    Probe {
        /// Print the probe as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },

    /// Show the NUMA topology: nodes, their cpus and memory, and distances.
    #[command(long_about = "Show the machine description numascope writes into traces: NUMA nodes with \
their cpus and memory (sysfs node*/cpulist, node*/meminfo), the SLIT distance matrix (node*/distance), \
kernel, cpu model, and where each number came from.")]
    Topology {
        /// Print the manifest `machine` object as JSON.
        #[arg(long)]
        json: bool,
    },

    /// Apply a placement plan to a running process (move pages, pin threads), with a report.
    #[command(
        long_about = "Apply a placement plan (docs/plan-format.md) to the running process PID: \
checks it is the same process (pid + start time) on the same machine, moves pages with move_pages \
in batches (skipping pages already in place), pins threads with sched_setaffinity, verifies by \
querying the pages again, reports planned vs achieved and writes a rollback record.\n\n\
With --retarget PID it applies nothing: it maps the plan onto PID, another run of the same \
program (file-backed and named mappings by file and offset, object entries onto the allocations \
in --allocations, threads by name), lists what it could not map with the reason, and writes the \
re-targeted plan to dry-run and apply as usual (docs/apply.md, \"Re-targeting a plan to another run\").\n\n\
Exit codes: 0 complete or dry run, 1 refused or failed, 2 invalid plan or usage, 3 partly done \
(--retarget: something was skipped).",
        after_help = "Examples:\n  numascope apply plan.json -p 4242 --dry-run\n  numascope apply plan.json -p 4242 --budget-ms 500 --json\n  numascope apply plan.json --retarget 5151 --allocations run2.numascope -o plan-5151.json\n  numascope rollback numascope-rollback-4242-1790000000.json"
    )]
    Apply(cmd_apply::ApplyArgs),

    /// Launch a program with a plan applied from its first allocation (objects by allocation
    /// site, threads by creation order and name).
    #[command(
        long_about = "Launch COMMAND with a placement plan's object entries and thread entries applied from its first allocation (docs/apply.md, section Applying at the next launch). The allocation shim (libnumascope_allocshim.so) is preloaded into the program: when an allocation's call stack matches an object entry (module + offsets of its frames, which survive ASLR, and its size range), the shim sets the entry's policy (bind, interleave, weighted-interleave) on the block's whole pages with mbind before the program touches them; threads are pinned to all cpus of their entry's nodes by creation order (at pthread_create) and by name (when set). The plan's pid and start time are ignored; its machine (node ids) and program (target.command[0]'s file name) are checked; its pageRanges and tid-only thread entries, which name a past process, are not used.

Prints the report (objects matched, bytes placed per node, threads pinned, entries that never matched) and the whole-process numactl line on stderr, writes an audit-log entry, and exits with the program's exit code (128+N if killed by signal N). Static, set-ID and file-capability programs are refused (the loader ignores LD_PRELOAD for them).

Exit codes, as env(1), timeout(1) and docker run: the program's own exit status (128+N if it was killed by signal N); 125 numascope run itself failed (invalid plan or arguments, usage, a refusal before launch, cannot set up); 126 the command was found but cannot be executed (permissions, not an executable format); 127 the command was not found.",
        after_help = "Examples:\n  numascope run --plan plan.json --dry-run -- ./app --size 4G\n  numascope run --plan plan.json -o run.json -- ./app --size 4G"
    )]
    Run(cmd_run::RunArgs),

    /// Undo an apply: move pages back and restore thread affinities from a rollback record.
    Rollback(cmd_apply::RollbackArgs),

    /// Import a perf.data file (perf mem / perf c2c / ibs_op recordings) into a trace.
    #[command(long_about = "Import a perf.data file recorded with `perf mem record`, `perf c2c record` or \
`perf record -e ibs_op//` (AMD IBS, Intel PEBS load latency / stores) into a numascope trace: one \
sample row per load/store with its data source (l1 … remote-dram), hops, latency and weight, pages \
from the data addresses, threads from the samples and COMM records, and the machine from the \
perf.data header (NUMA_TOPOLOGY). Non-memory samples are skipped and counted in the manifest notes.")]
    Import(cmd_import::ImportArgs),

    /// Export a trace: Parquet tables for DuckDB, Spark, Trino, ClickHouse; a pprof profile for flame graphs.
    #[command(
        long_about = "Export a trace as one denormalised Apache Parquet table per concept (traces, samples, \
pages, threads, thread_placements, region_placements, allocations, code_frames): every row carries the \
trace id and program, times are UTC timestamps, and row indices are replaced by what they point at \
(tid and thread name, address and node, region and allocation site, function, file and line), so SQL \
needs no index joins. Files go to DIR/<table>/host=<host>/date=<yyyy-mm-dd>/<trace-id>.parquet \
(Hive partitioning); exporting many traces into one DIR makes a fleet dataset, and exporting the same \
trace again replaces its files (the trace id is a hash of the file). --format pprof writes one gzip'd \
pprof profile instead (default: the trace's name with .pb.gz): access samples on the call stacks of \
their instructions (accesses, remote_accesses) and memory on its allocation stacks (alloc_space, \
object_accesses, object_remote_accesses, pages, pages_node<N>), for go tool pprof, speedscope or \
Pyroscope. See docs/fleet.md.",
        after_help = "Examples:\n  numascope export run.numascope -o fleet\n  numascope export run.numascope --format pprof && go tool pprof -top -sample_index=object_remote_accesses run.pb.gz\n  numascope export run.numascope --host db-07 -o fleet --json\n  duckdb -c \"SELECT host, count(*) FROM read_parquet('fleet/samples/*/*/*.parquet', hive_partitioning = true) GROUP BY host\""
    )]
    Export(cmd_export::ExportArgs),

    /// Serve the web UI and a live API (start recordings, stream aggregates) on 127.0.0.1 only.
    #[command(
        long_about = "Serve the built web UI and a live API on 127.0.0.1 only (never on other \
addresses). Prints the URL to open, with a fresh random token: every /api/ request needs the token \
(?token= or Authorization: Bearer), and a request with an Origin header must come from this server. \
The API probes the machine, lists processes, starts and stops recordings (a pid or a command) and \
streams per-window aggregates over a WebSocket; see docs/live-api.md.",
        after_help = "Examples:\n  numascope serve\n  numascope serve --port 0 --web-dir apps/web/dist"
    )]
    Serve(cmd_serve::ServeArgs),

    /// Measure this machine: bandwidth and latency per (cpu node, memory node), a calibrated model.
    #[command(
        long_about = "Measure the machine numascope runs on: STREAM copy and triad bandwidth for every \
(cpu node, memory node) pair with threads pinned to the cpu node and memory bound to the memory node, \
all nodes at once, idle latency by a dependent pointer chase, and a loaded-latency curve per memory \
node. Writes a machine model (the trace manifest's machine format, with a `calibration` object of raw \
points) and stores it in the cache directory for `numascope record` to embed. Ctrl-C stops and \
writes what was measured, marked partial. See docs/bench.md.",
        after_help = "Examples:\n  numascope bench --quick\n  numascope bench --json -o machine.json"
    )]
    Bench(cmd_bench::BenchArgs),

    /// Analyse a trace: each policy's predicted effect (the engine; `numascope analyze --help`).
    #[command(disable_help_flag = true)]
    Analyze(PassThrough),
    /// Diagnose a trace: the objects and threads behind remote traffic, with their fixes.
    #[command(disable_help_flag = true)]
    Diagnose(PassThrough),
    /// Write a placement plan from a policy or a diagnosed fix.
    #[command(disable_help_flag = true)]
    Plan(PassThrough),
    /// Compare two recordings, or policies on one.
    #[command(disable_help_flag = true)]
    Compare(PassThrough),
    /// The functions that access memory: their locality and first touches.
    #[command(disable_help_flag = true)]
    Code(PassThrough),
    /// perf c2c's contended cache lines of a PMU trace.
    #[command(disable_help_flag = true)]
    C2c(PassThrough),
    /// The machine presets the engine knows.
    #[command(disable_help_flag = true)]
    Presets(PassThrough),

    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Examples:\n  numascope completions bash > /etc/bash_completion.d/numascope\n  numascope completions zsh > \"${fpath[1]}/_numascope\""
    )]
    Completions {
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },

    /// Print the manual page (roff), or write one page per command into a directory.
    #[command(after_help = "Examples:\n  numascope man | man -l -\n  numascope man -o /usr/local/share/man/man1")]
    Man {
        /// Directory to write numascope.1 and numascope-COMMAND.1 into (created if missing);
        /// without it, numascope.1 goes to stdout.
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
    },

    /// Developer tools (not part of the stable interface).
    #[command(hide = true)]
    Debug {
        #[command(subcommand)]
        command: DebugCommand,
    },
}

/// Everything after an analysis command, for the engine to parse (its `--help` included).
#[derive(clap::Args, Debug)]
struct PassThrough {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0.., value_name = "ARGS")]
    args: Vec<std::ffi::OsString>,
}

#[derive(Subcommand, Debug)]
enum DebugCommand {
    /// Write roundtrip.numascope and roundtrip.expected.json (every table and column filled with
    /// known values) into DIR, for reader tests in other languages.
    WriteFixture {
        /// Directory to write into (created if missing).
        dir: PathBuf,
    },
    /// Print one JSON line per allocation of at least MIN bytes recorded by the allocation shim
    /// in DIR (`*.nsalloc`): size, site and the object-entry frames of its stack
    /// (docs/plan-format.md, "Object entries"), for writing `numascope run` plans by hand.
    AllocFrames {
        dir: PathBuf,
        #[arg(long = "min-bytes", default_value_t = 65536)]
        min_bytes: u64,
    },
    /// Print the limits every trace reader enforces and the writer checks (JSON), for the
    /// engine's test that its reader has the same.
    TraceLimits,
}

#[derive(clap::Args, Debug)]
struct RecordArgs {
    /// Trace file to write (conventionally NAME.numascope; replaced if it exists). Default:
    /// numascope-YYYYMMDD-HHMMSS.numascope in the current directory, named by the start time
    /// (UTC), with -2, -3, ... when that name is taken, so a default never replaces a trace; the
    /// summary (and --json) says which file was written.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,

    /// Print one JSON object on stdout at the end (the file written, duration, stop reason,
    /// threads, pages, samples, sources used or why not, each capability measured or unavailable
    /// with its reason); progress and the summary stay on stderr.
    #[arg(long = "json")]
    json: bool,

    /// Also write the live windows to FILE as they come, one JSON object a line (the
    /// `windowMs` aggregates `numascope serve` streams: faults, pages, sampled accesses per
    /// node, threads; docs/live-api.md), for scripts that watch a recording.
    #[arg(long = "live-output", value_name = "FILE")]
    live_output: Option<PathBuf>,

    /// Stop after this many seconds (decimals allowed). Default: until the process exits or
    /// Ctrl-C (at most 30 days; a recording also stops at 50 million sample rows, the most one
    /// trace keeps).
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = parse_seconds)]
    duration: Option<f64>,

    /// /proc polling interval in milliseconds (thread placement, numa_maps, counters).
    #[arg(long = "interval-ms", value_name = "N", default_value_t = DEFAULT_INTERVAL_MS)]
    interval_ms: u64,

    /// Attach to this running process (all its threads) instead of launching a command. perf's
    /// comma list (-p 1,2) is accepted, but a trace holds one process: give one pid (record the
    /// others with one numascope record each).
    #[arg(short = 'p', long = "pid", value_name = "PID[,PID...]", value_parser = parse_ids)]
    pid: Option<Ids>,

    /// Sample page faults and memory accesses on these threads only (thread ids of one running
    /// process, comma-separated, as perf record -t; threads they create are followed). The
    /// process is attached (-p may name it); /proc polling, counters and the placement scan still
    /// cover the whole process, and the trace's notes say which threads were sampled.
    #[arg(short = 't', long = "tid", value_name = "TID[,TID...]", value_parser = parse_ids, conflicts_with = "command")]
    tid: Option<Ids>,

    /// Print no progress lines or summary on stderr.
    #[arg(short = 'q', long = "quiet")]
    quiet: bool,

    /// Also monitor region hotness with DAMON (needs root and a free
    /// /sys/kernel/mm/damon/admin; off by default). The kdamond is removed at the end.
    #[arg(long = "damon")]
    damon: bool,

    /// Sample one page fault in N (1: every fault, so the first touch of every page is recorded).
    /// Instead of the default adaptive sampling (--fault-rate). Sampling every fault costs most on
    /// programs that fault on most of their work (about +40-60 % on a pure first-touch loop
    /// here); each sample stands for N faults (its weight), so with N > 1 first-touch counts are
    /// estimates. Page placement is not affected: the placement scan finds every resident page.
    #[arg(long = "fault-period", value_name = "N")]
    fault_period: Option<u64>,

    /// Adaptive page-fault sampling, the default: every fault while a thread faults less than HZ
    /// times a second, about HZ samples a second above (the kernel's frequency mode), so the cost
    /// stays bounded on programs that fault in millions of pages. Each sample's weight is the
    /// period in force: above the rate, first touches are sampled and their number is estimated
    /// from the weights (the manifest says whether any fault went unsampled). Page placement is
    /// not affected: the placement scan finds every resident page. [default: 10000]
    #[arg(long = "fault-rate", value_name = "HZ")]
    fault_rate: Option<u64>,

    /// Which event carries the page faults. `auto`: while automatic NUMA balancing is on
    /// (/proc/sys/kernel/numa_balancing), the x86 tracepoint exceptions:page_fault_user: a
    /// fault on a page faulted in before is then one of the kernel's NUMA hinting faults (an
    /// access its scanner caught: which thread touched which page, without a PMU), recorded as a
    /// load or a store by the error code's write bit; the software event otherwise, or when the
    /// tracepoint cannot be used (tracefs not mounted, no CAP_PERFMON).
    /// `software`: always the software event. `tracepoint`: always the tracepoint, or an error.
    #[arg(long = "fault-event", value_name = "EVENT", default_value = RECORD_LIMITS.fault_events[0],
          value_parser = PossibleValuesParser::new(RECORD_LIMITS.fault_events))]
    fault_event: String,

    /// Per-thread counters read on every poll: `core` (cycles, instructions, llc-misses, for IPC
    /// and L3MPKI; needs a cpu PMU, else the source is reported failed with the reason),
    /// `software` (task-clock, page-faults, context-switches: every kernel), or `off`.
    #[arg(long = "counters", value_name = "SET", default_value = RECORD_LIMITS.counter_sets[0],
          value_parser = PossibleValuesParser::new(RECORD_LIMITS.counter_sets))]
    counters: String,

    /// Do not count memory-controller and link traffic with uncore PMUs (Intel uncore_imc and
    /// uncore_upi, AMD amd_umc and amd_df), even where the machine has them. By default it is
    /// counted system-wide (it needs CAP_PERFMON, root or perf_event_paranoid <= 0) and recorded
    /// per node, or per socket where a socket holds several nodes.
    #[arg(long = "no-uncore")]
    no_uncore: bool,

    /// Do not sample memory accesses with the PMU (AMD IBS op, Intel PEBS), even where the
    /// machine has one. By default they are recorded whenever `numascope probe` lists them as
    /// available.
    #[arg(long = "no-pmu")]
    no_pmu: bool,

    /// Do not record allocation sites. By default a launched (dynamically linked) command gets
    /// the allocation-site shim preloaded (LD_PRELOAD, kept before the user's own entries), which
    /// records every allocation of at least 64 KiB and a byte-sampled share of smaller ones with
    /// their call stacks; after the run they are symbolized (function, file:line, inlined frames)
    /// into the trace's allocation tables and each region's allocation site. Attached processes
    /// (-p) never get sites (docs/alloc-sites.md).
    #[arg(long = "no-alloc-sites")]
    no_alloc_sites: bool,

    /// PMU memory-access samples per second per event (IBS op, PEBS loads and stores; the
    /// kernel's frequency mode; each sample weighs the period in force).
    #[arg(long = "mem-rate", value_name = "HZ", default_value_t = DEFAULT_MEM_RATE_HZ)]
    mem_rate: u64,

    /// Terminate a launched command that is still running when the capture stops (SIGTERM, then
    /// SIGKILL after 2 s), and let Ctrl-C reach it (same process group and stdin as numascope).
    /// By default it is left running, in its own process group.
    #[arg(long = "kill-on-stop")]
    kill_on_stop: bool,

    /// `on`: switch automatic NUMA balancing on (/proc/sys/kernel/numa_balancing) for the
    /// recording, so that the kernel's NUMA hinting faults give access samples (which thread
    /// touched which page) without a PMU; the previous value is restored afterwards (also on
    /// error, Ctrl-C or SIGTERM; not on SIGKILL). Needs root. `leave` (default): do not touch it.
    /// The balancer migrates pages and threads while it is on: the recording shows the program
    /// under balancing.
    #[arg(long = "numa-balancing", value_name = "MODE", default_value = "leave",
          value_parser = PossibleValuesParser::new(["leave", "on"]))]
    numa_balancing: String,
    /// Most resident pages (4 KiB) one placement scan records; 0 turns the scan off. Beyond it
    /// pages get no row in the trace (a warning and the manifest say so; numa_maps still counts
    /// them per mapping). About 120 bytes of recorder memory per page at the peak.
    #[arg(long = "scan-max-pages", value_name = "N", default_value_t = DEFAULT_SCAN_MAX_PAGES)]
    scan_max_pages: u64,
    /// User call-stack frames kept per page-fault sample, the faulting instruction included
    /// (perf's user call chain, walked by frame pointers: code built without them gives short or
    /// wrong stacks, and the trace's `code-locations` capability says how many). 0 records no
    /// code locations. At most 127 (the kernel's perf_event_max_stack default).
    #[arg(long = "call-stack-depth", value_name = "N", default_value_t = DEFAULT_CALL_STACK_DEPTH)]
    call_stack_depth: u64,

    /// The command to launch and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// perf's comma list of process or thread ids (`1234` or `1234,1240`).
#[derive(Clone, Debug)]
struct Ids(Vec<i32>);

fn parse_ids(s: &str) -> Result<Ids, String> {
    let ids: Vec<i32> = s
        .split(',')
        .map(|t| match t.trim().parse::<i32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{t:?} is not a process or thread id (a positive number; lists are comma-separated)")),
        })
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Err("no id given".into());
    }
    Ok(Ids(ids))
}

/// `numascope-YYYYMMDD-HHMMSS.numascope` (UTC) in the current directory, `-2`, `-3`, … when taken.
fn default_record_output() -> PathBuf {
    let iso = numascope_core::time::iso8601_utc(numascope_core::time::unix_now_ms());
    // 2026-12-03T11:47:05.123Z -> 20261203-114705
    let digits: String = iso.chars().take(19).filter(|c| c.is_ascii_digit()).collect();
    let stamp = if digits.len() == 14 { format!("{}-{}", &digits[..8], &digits[8..]) } else { digits };
    let mut n = 1;
    loop {
        let name =
            if n == 1 { format!("numascope-{stamp}.numascope") } else { format!("numascope-{stamp}-{n}.numascope") };
        let p = PathBuf::from(name);
        if std::fs::symlink_metadata(&p).is_err() || n >= 1000 {
            return p;
        }
        n += 1;
    }
}

/// A number; its range is checked with the other options (`RecordRequest::validate`).
fn parse_seconds(s: &str) -> Result<f64, String> {
    s.parse().map_err(|_| format!("{s:?} is not a number of seconds"))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // `numascope run`'s own failures exit 125 (env(1)'s convention), usage errors too;
            // every other command's usage errors exit 2 as clap's do; --help and --version 0.
            let run = std::env::args_os().nth(1).is_some_and(|a| a == "run");
            return match e.exit_code() {
                0 => ExitCode::SUCCESS,
                _ if run => ExitCode::from(exit::EXIT_RUN_FAILED),
                c => ExitCode::from(u8::try_from(c).unwrap_or(EXIT_USAGE)),
            };
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("numascope: error: {msg}");
            ExitCode::from(code)
        }
    }
}

type CliResult = Result<(), (u8, String)>;

fn runtime<E: std::fmt::Display>(e: E) -> (u8, String) {
    (EXIT_RUNTIME, e.to_string())
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Record(args) => cmd_record(args),
        Command::Probe { json } => cmd_probe(json),
        Command::Topology { json } => cmd_topology(json),
        Command::Import(args) => cmd_import::cmd_import(args),
        Command::Export(args) => cmd_export::cmd_export(args),
        Command::Serve(args) => cmd_serve::cmd_serve(args),
        Command::Apply(args) => cmd_apply::cmd_apply(args),
        Command::Rollback(args) => cmd_apply::cmd_rollback(args),
        Command::Run(args) => {
            let code = cmd_run::cmd_run(args)?;
            // The program's exit code is numascope run's.
            std::process::exit(code as i32)
        }
        Command::Debug { command: DebugCommand::AllocFrames { dir, min_bytes } } => debug_alloc_frames(&dir, min_bytes),
        Command::Bench(args) => cmd_bench::cmd_bench(args),
        Command::Analyze(a) => pass_through("analyze", a),
        Command::Diagnose(a) => pass_through("diagnose", a),
        Command::Plan(a) => pass_through("plan", a),
        Command::Compare(a) => pass_through("compare", a),
        Command::Code(a) => pass_through("code", a),
        Command::C2c(a) => pass_through("c2c", a),
        Command::Presets(a) => pass_through("presets", a),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "numascope",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Man { output } => cmd_man(output),
        Command::Debug { command: DebugCommand::TraceLimits } => {
            println!("{}", numascope_core::trace::limits::limits_json());
            Ok(())
        }
        Command::Debug { command: DebugCommand::WriteFixture { dir } } => {
            let (t, j) = numascope_core::fixture::write_fixture(&dir).map_err(runtime)?;
            println!("{}\n{}", t.display(), j.display());
            Ok(())
        }
    }
}

/// An analysis command: the engine's exit code is numascope's.
fn pass_through(command: &str, a: PassThrough) -> CliResult {
    let code = cmd_analyze::cmd_analyze(command, a.args)?;
    std::process::exit(i32::from(code))
}

/// `numascope man`: the page of the whole tool on stdout, or every (visible) command's page in DIR.
fn cmd_man(output: Option<PathBuf>) -> CliResult {
    let cmd = <Cli as clap::CommandFactory>::command();
    match output {
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout()).map_err(runtime),
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| (EXIT_RUNTIME, format!("{}: {e}", dir.display())))?;
            clap_mangen::generate_to(cmd, &dir).map_err(|e| (EXIT_RUNTIME, format!("{}: {e}", dir.display())))?;
            eprintln!("numascope: manual pages written into {}", dir.display());
            Ok(())
        }
    }
}

fn debug_alloc_frames(dir: &std::path::Path, min_bytes: u64) -> CliResult {
    use numascope_core::alloc_sites::{load_dir, ReadLimits, SymbolizeOptions};
    let files = load_dir(dir, &ReadLimits::default(), &SymbolizeOptions::default()).map_err(runtime)?;
    for (path, r) in files {
        let s = r.map_err(|e| (EXIT_RUNTIME, format!("{}: {e}", path.display())))?;
        for (i, a) in s.allocations.iter().enumerate() {
            if a.size < min_bytes {
                continue;
            }
            let site = a.site.and_then(|f| s.frames.get(f as usize)).map(|f| {
                let file = f.file.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p)).unwrap_or("?");
                format!("{file}:{} {}", f.line.unwrap_or(0), f.function.as_deref().unwrap_or("?"))
            });
            let frames = numascope_core::apply::launch::plan_frames(&s, i, 4);
            let line = serde_json::json!({ "pid": s.pid, "size": a.size, "site": site, "frames": frames });
            println!("{line}");
        }
    }
    Ok(())
}

fn read_topology() -> Result<Topology, (u8, String)> {
    topology::read_topology().map_err(|e| (EXIT_RUNTIME, format!("reading the NUMA topology: {e}")))
}

fn cmd_record(args: RecordArgs) -> CliResult {
    let pid = match args.pid.as_ref().map(|p| p.0.as_slice()) {
        None => None,
        Some([one]) => Some(*one),
        Some(many) => {
            return Err((
                EXIT_USAGE,
                format!(
                    "-p {}: a trace holds one process, so numascope record attaches to one pid; record each \
                     process with its own `numascope record -p PID -o NAME.numascope` (at the same time, with -d)",
                    many.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
                ),
            ))
        }
    };
    let tids: Vec<u32> = args.tid.as_ref().map(|t| t.0.iter().map(|&t| t as u32).collect()).unwrap_or_default();
    let pid = match (pid, tids.first()) {
        (None, Some(&first)) => Some(thread_group(&tids, first)?),
        (p, _) => p,
    };
    let output = args.output.clone().unwrap_or_else(default_record_output);
    let request = RecordRequest {
        pid: pid.map(i64::from),
        command: (!args.command.is_empty()).then(|| args.command.clone()),
        output: output.clone(),
        duration_s: args.duration,
        interval_ms: Some(args.interval_ms),
        fault_period: args.fault_period,
        fault_rate_hz: args.fault_rate,
        fault_event: Some(args.fault_event.clone()),
        counters: Some(args.counters.clone()),
        mem_rate_hz: Some(args.mem_rate),
        window_ms: None,
        damon: Some(args.damon),
        mem_sampling: Some(!args.no_pmu),
        uncore: Some(!args.no_uncore),
        kill_on_stop: Some(args.kill_on_stop),
        numa_balancing: Some(args.numa_balancing.clone()),
        scan_max_pages: Some(args.scan_max_pages),
        call_stack_depth: Some(args.call_stack_depth),
        alloc_sites: Some(!args.no_alloc_sites),
    };
    let mut opts = request.validate().map_err(|e| (EXIT_USAGE, e.message(Naming::Cli)))?;
    opts.sample_tids = tids.clone();
    opts.command_line = std::env::args().collect();
    let live_writer = match &args.live_output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| (EXIT_RUNTIME, format!("--live-output {}: {e}", path.display())))?;
            let (tx, rx) = std::sync::mpsc::channel();
            opts.live = Some(numascope_core::live::LiveSink::new(tx));
            Some(std::thread::spawn(move || write_live_lines(file, rx)))
        }
        None => None,
    };
    recorder::install_signal_handlers();
    let topo = read_topology()?;
    let probe = probe::probe(&topo);
    let roots = topology::Roots::default();
    let quiet = args.quiet;
    let mut shown = std::collections::HashSet::new();
    let s = recorder::record_observed(&opts, &roots, &topo, &probe, &mut |r| match r {
        Report::Warning(w) => {
            eprintln!("numascope: warning: {w}");
            shown.insert(w.0.clone());
        }
        Report::Progress(p) if !quiet => eprintln!("numascope: {p}"),
        Report::Progress(_) => {}
    })
    .map_err(|e| match e {
        RecordError::Usage(m) => (EXIT_USAGE, m),
        e => (EXIT_RUNTIME, e.to_string()),
    });
    // The recorder has sent its last window: close the channel and let the writer finish.
    opts.live = None;
    if let Some(w) = live_writer {
        if let Ok(Err(e)) = w.join() {
            eprintln!("numascope: warning: --live-output: {e} (the trace is complete; the live lines are not)");
        }
    }
    let s = s?;
    // Warnings not shown at the start: found while recording (the placement scan's limit) or
    // finishing (an allocation-site file that could not be read).
    for w in s.warnings.iter().filter(|w| !shown.contains(*w)) {
        eprintln!("numascope: warning: {w}");
    }
    if s.left_running && pid.is_none() {
        // Printed even with -q: the user must know that a process they started is still running.
        eprintln!(
            "numascope: pid {pid} is still running (numascope left it running; record with --kill-on-stop to terminate it at the stop).\n\
             numascope:   apply a plan to it:  numascope apply PLAN.json -p {pid} --dry-run   (then without --dry-run)\n\
             numascope:   record it again:     numascope record -p {pid} -o after.numascope\n\
             numascope:   stop it:             kill {pid}",
            pid = s.pid
        );
    }
    if args.json {
        println!("{}", record_json(&s));
    }
    if !args.quiet {
        let exit = match s.exit_code {
            Some(c) => format!(", exit code {c}"),
            None => String::new(),
        };
        eprintln!(
            "numascope: recorded {:.2} s of pid {} (stop: {}{exit})\n\
             numascope:   threads {} ({}), pages {} (resident at the last placement scan, or seen in a fault sample), samples {}, lost samples {}\n\
             numascope:   page-fault sampling: {}\n\
             numascope:   damon: {}\n\
             numascope:   wrote {} ({})\n\
             numascope:   collector peak memory {}",
            s.duration_us as f64 / 1e6,
            s.pid,
            s.stop_reason,
            s.threads,
            // The page-fault events carry the kernel's task records (every thread); without
            // them only the /proc polls and the samples saw threads.
            match (s.page_faults.starts_with("used") && tids.is_empty(), s.lost_samples) {
                (true, 0) => "every thread, from the kernel's task records",
                (true, _) => "from the task records, /proc polls and samples; the lost records may have held more",
                (false, _) => "those a /proc poll or a sample saw",
            },
            s.pages,
            s.samples,
            s.lost_samples,
            s.page_faults,
            s.damon,
            s.output.display(),
            human_bytes(s.size_bytes),
            own_peak_memory().map(human_bytes).unwrap_or_else(|| "unknown".into())
        );
        // The manifest embeds the latest stored calibration of this machine (and its capture
        // notes say which): said here too, so the user knows the engine will use it.
        if let Some((path, m)) =
            numascope_core::bench::output::cache_dir().and_then(|d| numascope_core::bench::output::latest(&d, &topo))
        {
            eprintln!(
                "numascope:   machine calibration: embedded this machine's numascope bench calibration of {} ({})",
                m["calibration"]["date"].as_str().unwrap_or("?"),
                path.display()
            );
        }
    }
    Ok(())
}

/// The process the threads `tids` belong to (their thread group, /proc/TID/status Tgid): one
/// for all of them, or a usage error.
/// Writes each live window as one JSON line, flushed, until the recorder drops its sender.
fn write_live_lines(
    file: std::fs::File,
    rx: std::sync::mpsc::Receiver<numascope_core::live::LiveWindow>,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(file);
    for w in rx {
        serde_json::to_writer(&mut out, &w)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}

fn thread_group(tids: &[u32], first: u32) -> Result<i32, (u8, String)> {
    let tgid = |t: u32| -> Result<i32, (u8, String)> {
        let status = std::fs::read_to_string(format!("/proc/{t}/status")).map_err(|_| {
            (EXIT_USAGE, format!("-t {t}: no thread {t} (not in /proc; check the thread ids with `ps -L`)"))
        })?;
        numascope_core::procfs::status_field(&status, "Tgid")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| (EXIT_RUNTIME, format!("/proc/{t}/status: no Tgid line")))
    };
    let pid = tgid(first)?;
    for &t in tids {
        let p = tgid(t)?;
        if p != pid {
            return Err((
                EXIT_USAGE,
                format!(
                    "-t: thread {first} belongs to process {pid} and thread {t} to process {p}: a trace holds one \
                     process, so give threads of one process"
                ),
            ));
        }
    }
    Ok(pid)
}

/// `numascope record --json`: the summary as data, with the capabilities from the written
/// trace's manifest (each metric measured, estimated or unavailable, with the reason).
fn record_json(s: &recorder::RecordSummary) -> serde_json::Value {
    let (manifest, manifest_error) = match read_manifest(&s.output) {
        Ok(m) => (m, None),
        Err(e) => (serde_json::Value::Null, Some(e)),
    };
    let mut v = serde_json::json!({
        "output": s.output,
        "traceId": manifest["traceId"],
        "host": manifest["host"],
        "sizeBytes": s.size_bytes,
        "pid": s.pid,
        "durationS": s.duration_us as f64 / 1e6,
        "stopReason": s.stop_reason,
        "exitCode": s.exit_code,
        "leftRunning": s.left_running,
        "threads": s.threads,
        "pages": s.pages,
        "samples": s.samples,
        "lostSamples": s.lost_samples,
        "pageFaultSampling": s.page_faults,
        "damon": s.damon,
        "warnings": s.warnings,
        "collectorPeakMemoryBytes": own_peak_memory(),
        "capabilities": manifest["capture"]["capabilities"],
    });
    if let Some(e) = manifest_error {
        v["capabilitiesError"] = serde_json::Value::String(e);
    }
    v
}

/// The manifest of a written trace (its `manifest.json` entry only, the tables unread).
fn read_manifest(path: &std::path::Path) -> Result<serde_json::Value, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(f)).map_err(|e| format!("{}: {e}", path.display()))?;
    let entry = zip.by_name("manifest.json").map_err(|e| format!("{}: manifest.json: {e}", path.display()))?;
    // The recorder wrote it: small, but read with a bound all the same.
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(entry, 64 << 20), &mut text)
        .map_err(|e| format!("{}: manifest.json: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: manifest.json: {e}", path.display()))
}

/// This process's peak resident memory (VmHWM), bytes: the collector's own cost, not the target's.
fn own_peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

fn cmd_probe(json: bool) -> CliResult {
    let mut topo = read_topology()?;
    numascope_core::bench::output::describe_calibration(
        &mut topo,
        numascope_core::bench::output::cache_dir().as_deref(),
    );
    let p: Probe = probe::probe(&topo);
    if json {
        println!("{}", serde_json::to_string_pretty(&p).map_err(runtime)?);
        return Ok(());
    }
    println!(
        "numascope probe on {} ({} NUMA node(s), kernel {})",
        topo.hostname,
        topo.nodes.len(),
        topo.kernel.as_deref().unwrap_or("?")
    );
    println!("privileges: {}", p.privileges.describe());
    println!("PMUs: {}", if p.pmus.is_empty() { "(none)".to_string() } else { p.pmus.join(" ") });
    println!();
    let w = p.sources.iter().map(|s| s.id.len()).max().unwrap_or(6).max(6);
    println!("{:<w$}  {:<13}  REASON", "SOURCE", "STATUS");
    for s in &p.sources {
        let status = match (s.available, s.implemented) {
            (true, true) => "available",
            (true, false) => "not-recorded",
            (false, _) => "unavailable",
        };
        println!("{:<w$}  {:<13}  {}", s.id, status, s.reason);
    }
    println!();
    let w = p.capabilities.iter().map(|c| c.metric.len()).max().unwrap_or(6).max(6);
    println!("{:<w$}  {:<13}  REASON", "METRIC", "STATUS");
    for c in &p.capabilities {
        println!("{:<w$}  {:<13}  {}", c.metric, c.status, c.reason);
    }
    println!();
    let w = p.placement.iter().map(|f| f.id.len()).max().unwrap_or(9).max(9);
    println!("{:<w$}  {:<13}  WHAT IT MEANS FOR PLACEMENT", "PLACEMENT", "STATE");
    for f in &p.placement {
        println!("{:<w$}  {:<13}  {}", f.id, f.state, f.meaning);
    }
    Ok(())
}

fn cpulist(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j { cpus[i].to_string() } else { format!("{}-{}", cpus[i], cpus[j]) });
        i = j + 1;
    }
    if out.is_empty() {
        "(none)".into()
    } else {
        out.join(",")
    }
}

fn cmd_topology(json: bool) -> CliResult {
    let mut topo = read_topology()?;
    // The same calibration state as `record` embeds and `probe` says (issue 30).
    let stored = numascope_core::bench::output::describe_calibration(
        &mut topo,
        numascope_core::bench::output::cache_dir().as_deref(),
    );
    let m = topo.machine();
    if json {
        println!("{}", serde_json::to_string_pretty(&m).map_err(runtime)?);
        return Ok(());
    }
    println!("host      {}", m.name);
    println!("kernel    {}", m.kernel.as_deref().unwrap_or("?"));
    println!("cpu       {}", m.cpu_model.as_deref().unwrap_or("?"));
    println!("clock     {}", m.cpu_clock_ghz.map_or("unknown".to_string(), |g| format!("{g} GHz")));
    println!("page size {} bytes", m.page_size_bytes);
    println!("nodes     {}", m.nodes.len());
    for n in &m.nodes {
        let mem = n.memory_bytes.map(human_bytes).unwrap_or_else(|| "unknown".into());
        let cpus = if n.cpus.is_empty() { "- (memory only)".to_string() } else { cpulist(&n.cpus) };
        // The rank among the kernel's memory tiers (0 = fastest), as `numascope probe` ranks them.
        let tier = n
            .memory_tier
            .map(|t| format!("  tier rank {t}{}", if t == 0 { " (fastest)" } else { "" }))
            .unwrap_or_default();
        let hmat = n
            .hmat
            .as_ref()
            .map(|h| {
                let f = |v: Option<u64>| v.map_or("?".to_string(), |x| x.to_string());
                format!(
                    "  HMAT read {} MB/s {} ns from node {:?} (firmware)",
                    f(h.read_bandwidth_mbps),
                    f(h.read_latency_ns),
                    h.initiators
                )
            })
            .unwrap_or_default();
        println!("  node {:<3} cpus {:<20} memory {mem}{tier}{hmat}", n.id, cpus);
    }
    println!("distances (SLIT, 10 = local)");
    print!("       ");
    for n in &m.nodes {
        print!("{:>5}", n.id);
    }
    println!();
    for (i, row) in m.distances.iter().enumerate() {
        print!("  {:>3}  ", m.nodes[i].id);
        for d in row {
            print!("{d:>5}");
        }
        println!();
    }
    println!("provenance");
    let p = &m.provenance;
    println!("  distances           {}", p.distances);
    println!("  memoryBytes         {}", p.memory_bytes);
    println!("  latenciesNs         {}", p.latencies_ns);
    println!("  links               {}", p.links);
    println!("  memoryBandwidthGBps {}", p.memory_bandwidth_gbps);
    if let Some(t) = &p.memory_tier {
        println!("  memoryTier          {t}");
    }
    if let Some(h) = &p.hmat {
        println!("  hmat                {h}");
    }
    if let Some(c) = &p.cpu_clock_ghz {
        println!("  cpuClockGHz         {c}");
    }
    match &stored {
        Some((path, m)) => println!(
            "calibration         numascope bench of {} ({}): embedded by `numascope record`, used by the engine",
            m["calibration"]["date"].as_str().unwrap_or("date unknown"),
            path.display()
        ),
        None => println!(
            "calibration         none stored for this machine (`numascope bench` measures latencies and bandwidth)"
        ),
    }
    for n in &topo.notes {
        println!("note: {n}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cpulist_format() {
        assert_eq!(cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpulist(&[]), "(none)");
    }
}
