//! The numascope trace file (format v4): model, Arrow schemas, writer and reader.

pub mod alloc;
mod columns;
mod compressed;
pub mod fixture;
pub mod limits;
pub mod model;
pub mod reader;
pub mod schema;
pub mod writer;

pub use alloc::{AllocFrames, AllocModules, AllocStacks, AllocTables, Allocations};
pub use model::*;

use std::path::Path;

/// Errors while writing or reading a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("I/O error: {0}")]
    PlainIo(#[from] std::io::Error),
    #[error("Arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("ZIP: {0}")]
    Zip(#[from] zip::result::ZipError),
    #[error("manifest JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("invalid trace: {0}")]
    Invalid(String),
}

impl TraceError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        TraceError::Io { path: path.display().to_string(), source }
    }
}
