//! `numascope import [-i perf.data] [-o OUT.numascope]`: perf.data → numascope trace.

use crate::exit::{EXIT_INTERNAL, EXIT_RUNTIME};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use numascope_core::perfdata::{self, ImportError};

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// perf.data file from `perf mem record`, `perf c2c record` or `perf record -e ibs_op//`
    /// (as perf's default: perf.data in the current directory).
    #[arg(short = 'i', long = "input", value_name = "FILE", conflicts_with = "input_positional")]
    pub input: Option<PathBuf>,

    /// The perf.data file, as -i (kept for `numascope import FILE`).
    #[arg(value_name = "FILE", id = "input_positional")]
    pub input_positional: Option<PathBuf>,

    /// Trace file to write (replaced if it exists). Default: the input's name with .numascope
    /// in the current directory (perf.data -> perf.numascope).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Print one JSON object on stdout at the end (input, output, samples, what was skipped,
    /// events, data sources, capabilities); the summary stays on stderr.
    #[arg(long = "json")]
    pub json: bool,

    /// Print no summary on stderr.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// `DIR/NAME.data` -> `NAME.numascope`, in the current directory.
fn default_output(input: &Path) -> PathBuf {
    let stem = input.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "perf".into());
    PathBuf::from(format!("{stem}.numascope"))
}

/// Where the last panic happened (filled by the panic hook installed during an import).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Runs the import; errors are (exit code, message).
///
/// A panic is a bug (every size in the file is checked first; the fuzz harness counts them):
/// it is reported as an "internal error" naming where it happened, with exit code 70, instead
/// of the default panic message and backtrace.
pub fn cmd_import(args: ImportArgs) -> Result<(), (u8, String)> {
    let input =
        args.input.clone().or_else(|| args.input_positional.clone()).unwrap_or_else(|| PathBuf::from("perf.data"));
    if args.input.is_none() && args.input_positional.is_none() && !input.exists() {
        return Err((
            EXIT_RUNTIME,
            "perf.data: no such file in the current directory (the default input): name the perf.data file with -i FILE"
                .into(),
        ));
    }
    let output = args.output.clone().unwrap_or_else(|| default_output(&input));
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!("{msg}{at}"));
        }
    }));
    let result = std::panic::catch_unwind(|| perfdata::import_to_file(&input, &output));
    std::panic::set_hook(previous);
    let last_panic = || LAST_PANIC.lock().ok().and_then(|mut l| l.take()).unwrap_or_else(|| "unknown".into());
    let s = match result {
        Ok(Ok(s)) => s,
        Ok(Err(e @ ImportError::Internal { .. })) => {
            return Err((EXIT_INTERNAL, format!("{e} [panic: {}]", last_panic())));
        }
        Ok(Err(e)) => return Err((EXIT_RUNTIME, e.to_string())),
        Err(_) => {
            return Err((
                EXIT_INTERNAL,
                format!(
                    "{}: internal error while importing ({}); please report it with the file",
                    input.display(),
                    last_panic()
                ),
            ))
        }
    };
    if !args.quiet {
        eprintln!(
            "numascope: imported {} of {} samples from {} into {}",
            s.trace.samples.len(),
            s.total_samples,
            input.display(),
            output.display()
        );
        eprintln!(
            "  skipped: {} not a memory event, {} not a load/store (data_src OP N/A), {} without an address",
            s.skipped_non_memory_event, s.skipped_not_load_store, s.skipped_no_address
        );
        let by = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        };
        eprintln!("  events: {}", by(&s.by_event));
        eprintln!("  data sources: {}", by(&s.by_source));
        eprintln!("  lost samples: {}", s.trace.manifest.capture.lost_samples);
        if s.trace.samples.is_empty() {
            eprintln!("{}", no_memory_samples(&input, &s));
        }
    }
    if args.json {
        let m = &s.trace.manifest;
        let out = serde_json::json!({
            "input": input,
            "output": output,
            "samples": s.trace.samples.len(),
            "totalSamples": s.total_samples,
            "skipped": {
                "notMemoryEvent": s.skipped_non_memory_event,
                "notLoadStore": s.skipped_not_load_store,
                "noAddress": s.skipped_no_address,
            },
            "events": s.by_event,
            "dataSources": s.by_source,
            "lostSamples": m.capture.lost_samples,
            "capabilities": m.capture.capabilities,
            "warning": s.trace.samples.is_empty().then(|| no_memory_samples(&input, &s)),
        });
        println!("{out}");
    }
    Ok(())
}

/// What an import without a single memory-access sample says (exit 0: the trace still holds the
/// machine, threads and code mappings; but nothing in it can be analysed for placement).
fn no_memory_samples(input: &std::path::Path, s: &perfdata::ImportSummary) -> String {
    format!(
        "numascope: warning: {} holds no memory-access samples with a data address (of its {} samples, {} are of \
         no memory event, {} not a load or store, {} without an address): the trace has the machine and threads but \
         nothing to analyse for placement. Record memory samples with `perf mem record` or `perf c2c record` (a \
         `cycles` profile has none) and import that file.",
        input.display(),
        s.total_samples,
        s.skipped_non_memory_event,
        s.skipped_not_load_store,
        s.skipped_no_address
    )
}
