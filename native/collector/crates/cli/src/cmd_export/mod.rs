//! `numascope export TRACE --format parquet -o DIR`: a trace as one denormalised Parquet table per
//! concept (docs/fleet.md), Hive-partitioned by host and date, so that many exports into one
//! directory make a fleet dataset DuckDB, Spark, Trino or ClickHouse query with no row-index joins.
//! `--format pprof -o FILE`: one gzip'd pprof profile of code and allocation stacks (pprof.rs).

mod pprof;
mod proto;
mod tables;

use crate::exit::EXIT_RUNTIME;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use numascope_core::trace::reader::read_trace_from;
use sha1::{Digest, Sha1};

#[cfg(test)]
use tables::host_component;
use tables::{export_tables, Identity};

/// Largest trace file export reads (it holds the file and its tables in memory).
const MAX_TRACE_BYTES: u64 = 8 << 30;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Apache Parquet, one directory per table, Hive-partitioned by host and date.
    Parquet,
    /// A gzip'd pprof profile (profile.proto): samples on their code stacks, memory on its
    /// allocation stacks, for `go tool pprof`, speedscope, Pyroscope.
    Pprof,
}

/// Where `--format parquet` writes without `-o`.
pub const DEFAULT_DATASET_DIR: &str = "numascope-export";

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The trace to export (NAME.numascope: recorded, imported or synthetic; formats 1 to 3).
    #[arg(value_name = "TRACE")]
    pub input: PathBuf,

    /// What to write.
    #[arg(long = "format", value_enum, default_value_t = Format::Parquet)]
    pub format: Format,

    /// Where to write. Parquet: the dataset directory (created if missing; exports of other
    /// traces into the same directory add to it), default `numascope-export`. pprof: the profile
    /// file, default the trace's name with `.pb.gz` in the current directory.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Host name to file the trace under (default: the manifest's `host`, the recording's host
    /// name; for a file without one, its machine name).
    #[arg(long = "host", value_name = "NAME")]
    pub host: Option<String>,

    /// Print what was written as JSON on stdout.
    #[arg(long = "json")]
    pub json: bool,

    /// Print nothing on stderr.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Whether `id` is a v4 `manifest.traceId` (32 lower-case hex digits): only such an id names
/// the exported files (it is part of their paths).
pub fn is_trace_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The trace id of a file without one in its manifest (format v3 and older): the first 16 hex
/// digits (64 bits) of the SHA-1 of the trace file, so that exporting the same file again
/// replaces its files instead of adding a copy.
pub fn trace_id(bytes: &[u8]) -> String {
    let digest = Sha1::digest(bytes);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}
/// `DIR/<table>/host=<host>/date=<yyyy-mm-dd>/<trace-id>.parquet`.
pub fn table_path(dir: &Path, table: &str, id: &Identity) -> PathBuf {
    dir.join(table)
        .join(format!("host={}", id.host_dir))
        .join(format!("date={}", id.date))
        .join(format!("{}.parquet", id.trace_id))
}

pub fn cmd_export(args: ExportArgs) -> Result<(), (u8, String)> {
    let err = |m: String| (EXIT_RUNTIME, m);
    let shown = args.input.display().to_string();
    let len = std::fs::metadata(&args.input).map_err(|e| err(format!("{shown}: {e}")))?.len();
    if len > MAX_TRACE_BYTES {
        return Err(err(format!("{shown}: {len} bytes, more than the {MAX_TRACE_BYTES} export reads at once")));
    }
    let bytes = std::fs::read(&args.input).map_err(|e| err(format!("{shown}: {e}")))?;
    let id = trace_id(&bytes);
    let trace = read_trace_from(Cursor::new(&bytes)).map_err(|e| {
        err(format!(
            "{shown}: {e}; nothing was written (is it a numascope trace? `numascope import` converts perf.data)"
        ))
    })?;
    drop(bytes);
    let data = trace.to_trace_data();
    let id = data.manifest.trace_id.as_deref().filter(|t| is_trace_id(t)).map(str::to_string).unwrap_or(id);
    let host =
        args.host.clone().or_else(|| data.manifest.host.clone()).unwrap_or_else(|| data.manifest.machine.name.clone());
    let identity = Identity::new(id, host, &data.manifest);
    if args.format == Format::Pprof {
        return export_pprof(&args, &shown, &data, &identity);
    }
    let output = args.output.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DATASET_DIR));
    let tables = export_tables(&data, &identity).map_err(|e| err(format!("{shown}: {e}")))?;
    let mut written = Vec::new();
    for t in &tables {
        let path = table_path(&output, t.name, &identity);
        tables::write_parquet(&path, &t.batch).map_err(|e| err(format!("{}: {e}", path.display())))?;
        if !args.quiet {
            eprintln!("  {:<18} {:>10} rows  {}", t.name, t.batch.num_rows(), path.display());
        }
        written.push(
            serde_json::json!({ "table": t.name, "rows": t.batch.num_rows(), "path": path.display().to_string() }),
        );
    }
    if !args.quiet {
        eprintln!(
            "numascope: exported {shown} as trace {} of host {} ({}) into {}",
            identity.trace_id,
            identity.host,
            identity.date,
            output.display()
        );
    }
    if args.json {
        let out = serde_json::json!({
            "trace": shown,
            "traceId": identity.trace_id,
            "host": identity.host,
            "date": identity.date,
            "directory": output.display().to_string(),
            "tables": written,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    Ok(())
}

/// `TRACE.numascope` -> `TRACE.pb.gz`, in the current directory.
pub fn default_profile_path(input: &Path) -> PathBuf {
    let stem = input.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "numascope".into());
    PathBuf::from(format!("{stem}.pb.gz"))
}

fn export_pprof(
    args: &ExportArgs,
    shown: &str,
    data: &numascope_core::trace::TraceData,
    identity: &Identity,
) -> Result<(), (u8, String)> {
    let path = args.output.clone().unwrap_or_else(|| default_profile_path(&args.input));
    let profile = pprof::build_profile(data, identity, shown);
    let bytes = pprof::write_pprof(&path, &profile).map_err(|e| (EXIT_RUNTIME, format!("{}: {e}", path.display())))?;
    let stacks = profile.sample.len();
    if !args.quiet {
        eprintln!(
            "numascope: exported {shown} as a pprof profile ({} samples over {} locations, {} functions, {} \
             modules; {bytes} bytes) into {}\n  open it: go tool pprof -http=: {}",
            stacks,
            profile.location.len(),
            profile.function.len(),
            profile.mapping.len(),
            path.display(),
            path.display()
        );
    }
    if args.json {
        let types: Vec<&str> =
            profile.sample_type.iter().map(|v| profile.string_table[v.r#type as usize].as_str()).collect();
        let out = serde_json::json!({
            "trace": shown,
            "traceId": identity.trace_id,
            "host": identity.host,
            "format": "pprof",
            "path": path.display().to_string(),
            "bytes": bytes,
            "sampleTypes": types,
            "samples": stacks,
            "locations": profile.location.len(),
            "functions": profile.function.len(),
            "mappings": profile.mapping.len(),
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_cannot_leave_the_dataset_directory() {
        assert_eq!(host_component("db-07.example.com"), "db-07.example.com");
        assert_eq!(host_component("../../etc"), ".._.._etc");
        assert_eq!(host_component(".."), "unknown");
        assert_eq!(host_component(""), "unknown");
        assert_eq!(host_component("a=b/c d"), "a_b_c_d");
    }

    #[test]
    fn only_a_well_formed_manifest_trace_id_names_files() {
        assert!(is_trace_id("0123456789abcdef0123456789abcdef"));
        assert!(!is_trace_id("0123456789ABCDEF0123456789abcdef"));
        assert!(!is_trace_id("../../../../../../../../etc/passwd"));
        assert!(!is_trace_id("0123456789abcdef"));
    }

    #[test]
    fn the_trace_id_is_the_files_hash() {
        assert_eq!(trace_id(b"abc"), "a9993e364706816a");
        assert_ne!(trace_id(b"abc"), trace_id(b"abd"));
    }
}
