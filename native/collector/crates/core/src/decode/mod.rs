//! Decoders for hardware memory-access samples (issue #4 item 2):
//!
//! - [`data_src`]: `perf_mem_data_src` → fields → the trace's `data_source` / `op` / `hops`.
//! - [`ibs`]: AMD IBS op PERF_SAMPLE_RAW payload → registers → the kernel's normalisation.
//! - [`pebs`]: Intel PEBS data-source table, store status, WEIGHT vs WEIGHT_STRUCT.
//! - [`sample`]: PERF_RECORD_SAMPLE bodies in the kernel's `perf_output_sample` order.
//! - [`perf_file`]: the perf.data container, bounds-checked (header, sections, attrs, records).
//! - [`mem_sample`]: one decoded sample → a memory sample (shared by live PMU recording and import).

pub mod data_src;
pub mod ibs;
pub mod mem_sample;
pub mod pebs;
pub mod perf_file;
pub mod sample;

#[cfg(test)]
mod fixtures;
