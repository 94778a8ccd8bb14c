//! `numascope import FILE -o OUT.numascope`: perf.data → numascope trace.

use std::path::PathBuf;
use std::sync::Mutex;

use numascope_core::perfdata::{self, ImportError};

/// Exit code of an input or output error (the message says which).
const EXIT_IMPORT: u8 = 1;
/// Exit code of a bug (a caught panic): sysexits' EX_SOFTWARE.
const EXIT_INTERNAL: u8 = 70;

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// perf.data file from `perf mem record`, `perf c2c record` or `perf record -e ibs_op//`.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,

    /// Trace file to write (conventionally NAME.numascope).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,

    /// Print no summary on stderr.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Where the last panic happened (filled by the panic hook installed during an import).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Runs the import; errors are (exit code, message).
///
/// A panic is a bug (every size in the file is checked first; the fuzz harness counts them):
/// it is reported as an "internal error" naming where it happened, with exit code 70, instead
/// of the default panic message and backtrace.
pub fn cmd_import(args: ImportArgs) -> Result<(), (u8, String)> {
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
    let result = std::panic::catch_unwind(|| perfdata::import_to_file(&args.input, &args.output));
    std::panic::set_hook(previous);
    let last_panic = || LAST_PANIC.lock().ok().and_then(|mut l| l.take()).unwrap_or_else(|| "unknown".into());
    let s = match result {
        Ok(Ok(s)) => s,
        Ok(Err(e @ ImportError::Internal { .. })) => {
            return Err((EXIT_INTERNAL, format!("{e} [panic: {}]", last_panic())));
        }
        Ok(Err(e)) => return Err((EXIT_IMPORT, e.to_string())),
        Err(_) => {
            return Err((
                EXIT_INTERNAL,
                format!(
                    "{}: internal error while importing ({}); please report it with the file",
                    args.input.display(),
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
            args.input.display(),
            args.output.display()
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
    }
    Ok(())
}
