//! Live data sources: the page-fault sampler (perf_event_open) and the /proc poller.

pub mod pagefault;
pub mod procfs;
