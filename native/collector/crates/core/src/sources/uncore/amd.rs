//! AMD's per-model encodings from Linux perf's event JSON: the Zen 4 / Zen 5 memory controllers
//! (UMC) and the Zen 2 / Zen 3 data fabric (DRAM channels, xGMI links), and the Zen generation.

use super::cpu::CpuId;
use super::spec::TableEvent;

/// `umc_cas_cmd.rd` (EventCode 0x0a, RdWrMask 0x1, Unit UMCPMC) in amdzen4/memory-controller.json
/// and amdzen5/memory-controller.json; perf's metric `umc_mem_read_bandwidth` in
/// amdzen4/recommended.json and amdzen5/recommended.json is `umc_cas_cmd.rd * 64`.
pub const UMC_READ: TableEvent = TableEvent {
    name: "umc_cas_cmd.rd",
    terms: "event=0x0a,rdwrmask=0x1",
    counter: "mc-read-bytes",
    bytes_per_count: 64.0,
};

/// `umc_cas_cmd.wr` (EventCode 0x0a, RdWrMask 0x2); metric `umc_mem_write_bandwidth` =
/// `umc_cas_cmd.wr * 64`.
pub const UMC_WRITE: TableEvent = TableEvent {
    name: "umc_cas_cmd.wr",
    terms: "event=0x0a,rdwrmask=0x2",
    counter: "mc-write-bytes",
    bytes_per_count: 64.0,
};

const fn df_dram(name: &'static str, terms: &'static str) -> TableEvent {
    TableEvent { name, terms, counter: "mc-bytes", bytes_per_count: 64.0 }
}

/// `dram_channel_data_controller_0..7` in amdzen2/data-fabric.json and amdzen3/data-fabric.json:
/// "DRAM Channel Controller Request Types: Requests with Data (64B)", EventCode 0x07, 0x47, 0x87,
/// 0xc7, 0x107, 0x147, 0x187, 0x1c7, UMask 0x38, Unit DFPMC. Reads and writes together (perf's
/// metric `nps1_die_to_dram` sums them, ScaleUnit 6.1e-5MiB: 64 bytes rounded); the high bits of
/// event codes above 0xff land in config bits 32-35 through the PMU's `format/event`.
pub const DF_DRAM_CHANNELS: [TableEvent; 8] = [
    df_dram("dram_channel_data_controller_0", "event=0x07,umask=0x38"),
    df_dram("dram_channel_data_controller_1", "event=0x47,umask=0x38"),
    df_dram("dram_channel_data_controller_2", "event=0x87,umask=0x38"),
    df_dram("dram_channel_data_controller_3", "event=0xc7,umask=0x38"),
    df_dram("dram_channel_data_controller_4", "event=0x107,umask=0x38"),
    df_dram("dram_channel_data_controller_5", "event=0x147,umask=0x38"),
    df_dram("dram_channel_data_controller_6", "event=0x187,umask=0x38"),
    df_dram("dram_channel_data_controller_7", "event=0x1c7,umask=0x38"),
];

const fn df_link(name: &'static str, terms: &'static str) -> TableEvent {
    TableEvent { name, terms, counter: "link-tx-bytes", bytes_per_count: 32.0 }
}

/// `remote_outbound_data_controller_0..3` in amdzen2/data-fabric.json and amdzen3/data-fabric.json:
/// "Remote Link Controller Outbound Packet Types: Data (32B)", EventCode 0x7c7, 0x807, 0x847,
/// 0x887, UMask 0x02, Unit DFPMC: data leaving the socket over its xGMI links (perf's metric
/// `all_remote_links_outbound` sums them, ScaleUnit 3e-5MiB: 32 bytes rounded).
pub const DF_XGMI_OUT: [TableEvent; 4] = [
    df_link("remote_outbound_data_controller_0", "event=0x7c7,umask=0x02"),
    df_link("remote_outbound_data_controller_1", "event=0x807,umask=0x02"),
    df_link("remote_outbound_data_controller_2", "event=0x847,umask=0x02"),
    df_link("remote_outbound_data_controller_3", "event=0x887,umask=0x02"),
];

/// AMD Zen generations by perf's mapfile.csv (AuthenticAMD-23-([12][0-9A-F]|[0-9A-F]) amdzen1,
/// AuthenticAMD-23 other models amdzen2, AuthenticAMD-25-([245][0-9A-F]|[0-9A-F]) amdzen3,
/// AuthenticAMD-25 other models amdzen4, AuthenticAMD-26 amdzen5): (label, perf dir, generation).
pub fn amd_zen(id: &CpuId) -> Option<(&'static str, &'static str, u32)> {
    if id.vendor != "AuthenticAMD" {
        return None;
    }
    match (id.family, id.model) {
        (0x17, 0x00..=0x2f) => Some(("Zen 1", "amdzen1", 1)),
        (0x17, _) => Some(("Zen 2", "amdzen2", 2)),
        (0x19, 0x00..=0x0f) | (0x19, 0x20..=0x5f) => Some(("Zen 3", "amdzen3", 3)),
        (0x19, _) => Some(("Zen 4", "amdzen4", 4)),
        (0x1a, _) => Some(("Zen 5", "amdzen5", 5)),
        _ => None,
    }
}
