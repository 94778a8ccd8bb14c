//! Memory-controller and interconnect traffic from uncore PMUs, counted system-wide (every
//! process, not only the recorded one) and written as cumulative bytes into `counters`.
//!
//! | family | PMUs | counters | where the encoding comes from |
//! | --- | --- | --- | --- |
//! | Intel memory controller | `uncore_imc_*` (one per channel) | `mc-read-bytes`, `mc-write-bytes` | the kernel's sysfs events `cas_count_read` / `cas_count_write` with `.scale` and `.unit` |
//! | Intel UPI links | `uncore_upi_*` (one per link) | `link-tx-bytes`, `link-rx-bytes` | perf's event JSON per CPU model ([`intel_upi_model`]) |
//! | AMD Zen 4 / Zen 5 memory controller | `amd_umc_*` (one per channel) | `mc-read-bytes`, `mc-write-bytes` | perf's `amdzen4` / `amdzen5` `memory-controller.json` |
//! | AMD Zen 2 / Zen 3 data fabric | `amd_df` | `mc-bytes` (reads and writes together), `link-tx-bytes` (xGMI) | perf's `amdzen2` / `amdzen3` `data-fabric.json` |
//!
//! The kernel names no events for the UPI, UMC and DF PMUs, so their encodings are per CPU model
//! and taken from Linux perf's own lists (`tools/perf/pmu-events/arch/x86/<model>/*.json`, cited
//! at each table below); the bit positions of each term still come from the PMU's sysfs `format/`
//! files, as perf does. **None of this has run on hardware yet**: our machines have no uncore PMU,
//! so it is tested on sysfs trees with the documented files and on the failure path.
//!
//! Where the counts go: an uncore PMU's `cpumask` lists one cpu per socket (package), and an event
//! opened on that cpu counts that socket's boxes. Counts are summed per socket and written with
//! scope `node` (scope_id = the node id) when the socket holds exactly one NUMA node. A socket
//! split into several nodes (Intel SNC, AMD NPS2/NPS4, "L3 as NUMA node") does not say which
//! channel or link serves which node, so its totals are written with scope `socket` (scope_id =
//! the kernel's `physical_package_id`) and never attributed to one of its nodes; the source reason
//! says which nodes each such socket holds.
//!
//! System-wide uncore counting needs CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid ≤ 0. Each
//! read is scaled by time_enabled / time_running when the kernel multiplexed an event (the Zen 2/3
//! data fabric has 4 counters for 12 events); a (counter, scope) sum is written only when every one
//! of its events could be read.
//!
//! Files: `spec.rs` what is counted; `cpu.rs` the CPU model; `intel.rs`, `amd.rs` the per-model
//! encodings; `sysfs.rs` discovery from sysfs; `plan.rs` the planner and its verdicts;
//! `counters.rs` opening, reading, scaling and writing the counts; `tests.rs`.

mod amd;
mod counters;
mod cpu;
mod intel;
mod plan;
mod spec;
mod sysfs;
#[cfg(test)]
mod tests;

pub use amd::{amd_zen, DF_DRAM_CHANNELS, DF_XGMI_OUT, UMC_READ, UMC_WRITE};
pub use counters::{source_status, sum_by_scope, update_capabilities, UncoreCounters};
pub use cpu::{parse_cpuinfo, read_cpu_id, CpuId};
pub use intel::{intel_upi_model, UpiModel, UPI_BYTES_PER_FLIT, UPI_RX, UPI_TX};
pub use plan::{plan_uncore, FamilyVerdict, Outcome, UncorePlan};
pub use spec::{Scope, TableEvent, UncoreSpec};
