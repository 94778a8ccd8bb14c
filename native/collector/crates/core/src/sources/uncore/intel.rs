//! Intel's per-model encodings: the UPI link events from Linux perf's event JSON (the memory
//! controllers' events are named in sysfs, `imc_specs` in plan.rs).

use super::cpu::CpuId;
use super::spec::TableEvent;

/// Bytes per UPI data flit: perf's metrics `upi_data_transmit_bw` / `upi_data_receive_bw` use
/// `UNC_UPI_TxL_FLITS.ALL_DATA * 7.111111111111111` (= 64/9: nine data flits carry 64 bytes) in
/// skylakex/skx-metrics.json, cascadelakex/clx-metrics.json, icelakex/icx-metrics.json,
/// sapphirerapids/spr-metrics.json, emeraldrapids/emr-metrics.json (transmit only) and
/// graniterapids/gnr-metrics.json.
pub const UPI_BYTES_PER_FLIT: f64 = 64.0 / 9.0;

/// `UNC_UPI_TxL_FLITS.ALL_DATA`: EventCode 0x02, UMask 0x0f, Unit UPI in
/// `<model>/uncore-interconnect.json` of skylakex, cascadelakex, icelakex, sapphirerapids,
/// emeraldrapids and graniterapids alike.
pub const UPI_TX: TableEvent = TableEvent {
    name: "UNC_UPI_TxL_FLITS.ALL_DATA",
    terms: "event=0x02,umask=0x0f",
    counter: "link-tx-bytes",
    bytes_per_count: UPI_BYTES_PER_FLIT,
};

/// `UNC_UPI_RxL_FLITS.ALL_DATA`: EventCode 0x03, UMask 0x0f, Unit UPI in the same files.
pub const UPI_RX: TableEvent = TableEvent {
    name: "UNC_UPI_RxL_FLITS.ALL_DATA",
    terms: "event=0x03,umask=0x0f",
    counter: "link-rx-bytes",
    bytes_per_count: UPI_BYTES_PER_FLIT,
};

/// An Intel server model with UPI events in perf's JSON.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpiModel {
    pub label: &'static str,
    /// perf's `tools/perf/pmu-events/arch/x86/<dir>`.
    pub perf_dir: &'static str,
    pub events: &'static [TableEvent],
}

/// The UPI events of an Intel model, by perf's `arch/x86/mapfile.csv` (GenuineIntel-6-55-[01234]
/// skylakex, 6-55-[56789ABCDEF] cascadelakex, 6-6[AC] icelakex, 6-8F sapphirerapids, 6-CF
/// emeraldrapids, 6-A[DE] graniterapids). Received bytes only where perf has a receive metric
/// (`upi_data_receive_bw`): not for Emerald Rapids, whose emr-metrics.json has only the transmit one.
pub fn intel_upi_model(id: &CpuId) -> Option<UpiModel> {
    const TX_RX: &[TableEvent] = &[UPI_TX, UPI_RX];
    const TX: &[TableEvent] = &[UPI_TX];
    if id.vendor != "GenuineIntel" || id.family != 6 {
        return None;
    }
    let m = |label, perf_dir, events| Some(UpiModel { label, perf_dir, events });
    match id.model {
        0x55 if id.stepping.is_some_and(|s| s >= 5) => m("Cascade Lake-SP", "cascadelakex", TX_RX),
        0x55 => m("Skylake-SP", "skylakex", TX_RX),
        0x6a | 0x6c => m("Ice Lake-SP", "icelakex", TX_RX),
        0x8f => m("Sapphire Rapids", "sapphirerapids", TX_RX),
        0xcf => m("Emerald Rapids", "emeraldrapids", TX),
        0xad | 0xae => m("Granite Rapids", "graniterapids", TX_RX),
        _ => None,
    }
}
