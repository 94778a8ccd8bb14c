//! numascope collector core: machine topology, capability probe, live data sources
//! (page-fault sampling, /proc polling), the trace writer and reader, and the recorder
//! (`numascope record` in phases). No Node or napi code lives here.

pub mod alloc_sites;
pub mod apply;
pub mod bench;
pub mod decode;
pub mod live;
pub mod numa_sys;
pub mod perfdata;
pub mod privileges;
pub mod probe;
pub mod probe_placement;
pub mod procfs;
pub mod program;
pub mod recorder;
pub mod sources;
pub mod time;
pub mod topology;
pub mod trace;

/// The round-trip fixture lives with the trace model; `numascope debug write-fixture` reaches it here.
pub use trace::fixture;

/// Version of this crate (the `producer.version` of traces it writes).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
