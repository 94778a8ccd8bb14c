//! Allocation sites: reading the files the allocation-site shim (crates/allocshim) writes for a
//! launched program, and turning them into allocations, stacks and frames after the run.
//!
//! `numascope record` (recorder/alloc.rs) preloads the shim into a launched program (checking
//! [`preload_possible`] first), then calls [`load_dir`] and writes the trace's allocation-site
//! tables. docs/alloc-sites.md describes the file format, the sampling rule and the limits.

pub mod format;
pub mod preload;
pub mod symbolize;

use std::path::{Path, PathBuf};

pub use format::{parse_alloc_file, read_alloc_file, AllocFile, AllocFileError, AllocOp, ReadLimits};
pub use preload::{find_shim, preload_possible, shim_path, PreloadBlocked, SHIM_FILE_NAME};
pub use symbolize::{
    is_runtime_frame, symbolize, AllocSites, Allocation, Frame, FrameIndex, Module, ModuleIndex, StackIndex, StackNode,
    SymbolizeOptions,
};

/// File name suffix of the shim's per-process files.
pub const FILE_SUFFIX: &str = ".nsalloc";

/// Reads and symbolizes every `*.nsalloc` file of a run's directory (one per process), in
/// name order. A file that cannot be read gives its error in place; the others still load.
pub fn load_dir(
    dir: &Path,
    limits: &ReadLimits,
    opts: &SymbolizeOptions,
) -> std::io::Result<Vec<(PathBuf, Result<AllocSites, AllocFileError>)>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(FILE_SUFFIX)))
        .collect();
    paths.sort();
    Ok(paths
        .into_iter()
        .map(|p| {
            let r = read_alloc_file(&p, limits).map(|f| symbolize(&f, opts));
            (p, r)
        })
        .collect())
}
