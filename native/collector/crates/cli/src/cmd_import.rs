//! `numascope import FILE -o OUT.numascope`: perf.data → numascope trace.

use std::path::PathBuf;

use numascope_core::perfdata::{self, ImportError};

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

/// Runs the import; errors are (exit code, message).
pub fn cmd_import(args: ImportArgs) -> Result<(), (u8, String)> {
    let s = perfdata::import_to_file(&args.input, &args.output).map_err(|e| {
        let code = match e {
            ImportError::Io { .. } | ImportError::Trace(_) => 1,
            _ => 1,
        };
        (code, e.to_string())
    })?;
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
