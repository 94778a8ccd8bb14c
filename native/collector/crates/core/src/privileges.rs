//! Privileges of this process that decide which perf events and /proc files it may use:
//! perf_event_paranoid, the effective capabilities, the euid; and perf_event_open errors in
//! words (naming the privilege that is missing).

use std::fs;
use std::path::Path;

use serde::Serialize;

/// Capability bits (linux/capability.h).
pub const CAP_SYS_PTRACE: u32 = 19;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_NICE: u32 = 23;
pub const CAP_PERFMON: u32 = 38;

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Privileges {
    pub perf_event_paranoid: Option<i32>,
    pub cap_perfmon: bool,
    pub cap_sys_admin: bool,
    pub cap_sys_nice: bool,
    pub cap_sys_ptrace: bool,
    pub euid: u32,
}

impl Privileges {
    /// Kernel-side sampling (kernel-mode faults, IBS, system-wide) is allowed.
    pub fn can_profile_kernel(&self) -> bool {
        self.cap_perfmon || self.cap_sys_admin || self.perf_event_paranoid.is_some_and(|p| p <= 1)
    }

    /// Raw tracepoint records may be sampled (kernel perf_allow_tracepoint()).
    pub fn can_read_tracepoints(&self) -> bool {
        self.cap_perfmon || self.cap_sys_admin || self.perf_event_paranoid.is_some_and(|p| p <= -1)
    }

    /// Per-process user-space perf events are allowed at all.
    pub fn can_profile_user(&self) -> bool {
        self.cap_perfmon || self.cap_sys_admin || self.perf_event_paranoid.is_some_and(|p| p <= 2)
    }

    pub fn describe(&self) -> String {
        let p = match self.perf_event_paranoid {
            Some(p) => format!("perf_event_paranoid={p}"),
            None => "perf_event_paranoid unreadable".into(),
        };
        let caps = match (self.cap_perfmon, self.cap_sys_admin) {
            (true, true) => "CAP_PERFMON and CAP_SYS_ADMIN held",
            (true, false) => "CAP_PERFMON held",
            (false, true) => "CAP_SYS_ADMIN held, CAP_PERFMON not",
            (false, false) => "neither CAP_PERFMON nor CAP_SYS_ADMIN held",
        };
        format!("{p}, {caps}")
    }
}

/// Parses `CapEff:` from /proc/self/status into a bit mask.
pub fn parse_cap_eff(status: &str) -> Option<u64> {
    status.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

pub fn read_privileges(proc_root: &Path) -> Privileges {
    let paranoid =
        fs::read_to_string(proc_root.join("sys/kernel/perf_event_paranoid")).ok().and_then(|s| s.trim().parse().ok());
    let caps = fs::read_to_string(proc_root.join("self/status")).ok().and_then(|s| parse_cap_eff(&s)).unwrap_or(0);
    let has = |bit: u32| caps & (1u64 << bit) != 0;
    Privileges {
        perf_event_paranoid: paranoid,
        cap_perfmon: has(CAP_PERFMON),
        cap_sys_admin: has(CAP_SYS_ADMIN),
        cap_sys_nice: has(CAP_SYS_NICE),
        cap_sys_ptrace: has(CAP_SYS_PTRACE),
        // SAFETY: geteuid has no preconditions.
        euid: unsafe { libc::geteuid() },
    }
}

/// Describes an errno from perf_event_open in words.
pub fn perf_open_error(e: &std::io::Error, privs: &Privileges) -> String {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused ({e}): {}; run as root, grant CAP_PERFMON (setcap cap_perfmon+ep), or lower /proc/sys/kernel/perf_event_paranoid",
            privs.describe()
        ),
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
            format!("the kernel does not support this event ({e})")
        }
        Some(libc::ENOSYS) => "perf_event_open is not available (kernel without CONFIG_PERF_EVENTS)".into(),
        Some(libc::EMFILE) => format!("too many open files ({e}): raise `ulimit -n`"),
        _ => format!("perf_event_open failed: {e}"),
    }
}
