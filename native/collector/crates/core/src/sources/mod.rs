//! Live data sources: the page-fault sampler (perf_event_open), the /proc poller and DAMON.

pub mod callchain;
pub mod counters;
pub mod damon;
pub mod pagefault;
pub mod pmu;
pub mod procfs;
pub mod uncore;
