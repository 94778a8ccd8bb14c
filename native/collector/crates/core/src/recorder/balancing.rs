//! `--numa-balancing on`: automatic NUMA balancing switched on for one recording, so that the
//! kernel's NUMA hinting faults give access samples (which thread touched which page) on a
//! machine without a PMU, then the previous value of /proc/sys/kernel/numa_balancing restored.
//!
//! The restore happens when the recording finishes, when opening it fails (the guard's `Drop`),
//! and on a second Ctrl-C/SIGTERM that makes the CLI exit at once ([`emergency_restore`], called
//! from the signal handler with async-signal-safe calls only). SIGKILL cannot be handled: the
//! setting then stays on, and the next `--numa-balancing on` recording notes that it found
//! balancing already on. Recordings that overlap (`numascope serve`) share one switch: the first
//! saves the previous value, the last restores it.

use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use super::RecordError;
use crate::sources::pagefault;

/// NUMA hinting faults on ordinary memory happen in the classic mode (bit 0). Here, below the
/// opening of a recording (open.rs) and its session (session.rs), which both ask.
pub(super) fn hinting_on(proc_root: &Path) -> bool {
    pagefault::numa_balancing_mode(proc_root).is_some_and(|m| m & 1 != 0)
}

/// Per sysctl path: how many recordings hold it on, and the value to restore after the last.
static HELD: Mutex<Option<HashMap<PathBuf, (usize, String)>>> = Mutex::new(None);

/// For [`emergency_restore`]: leaked NUL-terminated path and value (null when nothing to restore).
static EMERGENCY_PATH: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
static EMERGENCY_VALUE: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// The sysctl under a /proc root.
pub(super) fn sysctl_path(proc_root: &Path) -> PathBuf {
    proc_root.join("sys/kernel/numa_balancing")
}

/// Holds automatic NUMA balancing on for a recording; [`Self::restore`] (or dropping it) gives
/// the previous value back once no other recording holds it.
#[derive(Debug)]
pub(super) struct BalancingGuard {
    path: PathBuf,
    /// The value found before this recording (`0`, `1`, `2`, `3`: the kernel's mode bits).
    pub(super) previous: String,
    /// What this recording wrote, if it wrote (None: balancing was already on).
    pub(super) wrote: Option<String>,
    released: bool,
}

fn write_value(path: &Path, value: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

fn arm_emergency(path: &Path, value: &str) {
    use std::os::unix::ffi::OsStrExt;
    let (Ok(p), Ok(v)) = (CString::new(path.as_os_str().as_bytes()), CString::new(value)) else { return };
    let old_p = EMERGENCY_PATH.swap(p.into_raw(), Ordering::SeqCst);
    let old_v = EMERGENCY_VALUE.swap(v.into_raw(), Ordering::SeqCst);
    // SAFETY: both came from CString::into_raw above (or are null).
    unsafe {
        if !old_p.is_null() {
            drop(CString::from_raw(old_p));
        }
        if !old_v.is_null() {
            drop(CString::from_raw(old_v));
        }
    }
}

fn disarm_emergency() {
    for slot in [&EMERGENCY_PATH, &EMERGENCY_VALUE] {
        let old = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !old.is_null() {
            // SAFETY: came from CString::into_raw in arm_emergency.
            unsafe { drop(CString::from_raw(old)) };
        }
    }
}

/// Restores the saved value with async-signal-safe calls only (the CLI's second-signal exit).
pub fn emergency_restore() {
    let p = EMERGENCY_PATH.swap(std::ptr::null_mut(), Ordering::SeqCst);
    let v = EMERGENCY_VALUE.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if p.is_null() || v.is_null() {
        return;
    }
    // SAFETY: p and v are leaked NUL-terminated strings (never freed once swapped out here);
    // open, strlen, write and close are async-signal-safe.
    unsafe {
        let fd = libc::open(p, libc::O_WRONLY);
        if fd >= 0 {
            libc::write(fd, v as *const libc::c_void, libc::strlen(v));
            libc::close(fd);
        }
    }
}

impl BalancingGuard {
    /// Switches balancing on (mode bit 0) under `proc_root`, unless it is on already. Refuses
    /// with the reason when the kernel has no NUMA balancing or the sysctl cannot be written.
    pub(super) fn switch_on(proc_root: &Path) -> Result<BalancingGuard, RecordError> {
        let path = sysctl_path(proc_root);
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        let held = held.get_or_insert_with(HashMap::new);
        let current = match std::fs::read_to_string(&path) {
            Ok(s) => s.trim().to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RecordError::Usage(format!(
                    "--numa-balancing on: {} does not exist: this kernel has no automatic NUMA balancing (CONFIG_NUMA_BALANCING); nothing was recorded",
                    path.display()
                )))
            }
            Err(e) => return Err(RecordError::Io(format!("--numa-balancing on: reading {}: {e}", path.display()))),
        };
        if let Some((n, previous)) = held.get_mut(&path) {
            // Another recording of this process switched it on and will restore it last.
            *n += 1;
            return Ok(BalancingGuard { path, previous: previous.clone(), wrote: None, released: false });
        }
        let mode: u32 = current.parse().map_err(|_| {
            RecordError::Io(format!("--numa-balancing on: {} holds {current:?}, not a number", path.display()))
        })?;
        if mode & 1 != 0 {
            return Ok(BalancingGuard { path, previous: current, wrote: None, released: true });
        }
        let want = (mode | 1).to_string();
        if let Err(e) = write_value(&path, &want) {
            return Err(match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => RecordError::Permission(format!(
                    "--numa-balancing on needs root: it writes {} ({e}); run numascope as root, or switch balancing on yourself \
                     (`sudo sysctl kernel.numa_balancing=1`) and record without --numa-balancing; nothing was recorded",
                    path.display()
                )),
                _ => RecordError::Io(format!("--numa-balancing on: writing {want} to {}: {e}", path.display())),
            });
        }
        held.insert(path.clone(), (1, current.clone()));
        arm_emergency(&path, &current);
        Ok(BalancingGuard { path, previous: current, wrote: Some(want), released: false })
    }

    /// Gives the previous value back when this is the last recording holding it on. Answers
    /// what happened, for the manifest notes; an error names the value left behind.
    pub(super) fn restore(&mut self) -> Result<Restored, String> {
        if self.released {
            return Ok(Restored::NotChanged);
        }
        self.released = true;
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        let held = held.get_or_insert_with(HashMap::new);
        let Some((n, previous)) = held.get_mut(&self.path) else { return Ok(Restored::NotChanged) };
        *n -= 1;
        if *n > 0 {
            return Ok(Restored::StillHeld);
        }
        let previous = previous.clone();
        held.remove(&self.path);
        disarm_emergency();
        write_value(&self.path, &previous).map(|_| Restored::WroteBack(previous.clone())).map_err(|e| {
            format!(
                "restoring {} to {previous} failed ({e}): automatic NUMA balancing is still on; switch it off with `sysctl kernel.numa_balancing={previous}`",
                self.path.display()
            )
        })
    }
}

/// The balancer's own counts for a process, from /proc/PID/sched (kernels with
/// CONFIG_SCHED_DEBUG): (completed scan passes `mm->numa_scan_seq`, hinting faults
/// `total_numa_faults`). None when the file or the fields are missing.
pub(super) fn sched_numa_counts(proc_root: &Path, pid: i32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(proc_root.join(format!("{pid}/sched"))).ok()?;
    let value = |key: &str| {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.rsplit(':').next())
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((value("mm->numa_scan_seq")?, value("total_numa_faults")?))
}

/// What [`BalancingGuard::restore`] did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Restored {
    /// This recording did not change the setting (it was on already).
    NotChanged,
    /// Another recording still holds it on; that one restores it.
    StillHeld,
    /// The previous value was written back.
    WroteBack(String),
}

impl Drop for BalancingGuard {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A /proc root with a writable numa_balancing file holding `value`.
    fn fake_proc(tag: &str, value: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("numascope-balancing-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("sys/kernel")).unwrap();
        std::fs::write(sysctl_path(&root), format!("{value}\n")).unwrap();
        root
    }

    fn read(root: &Path) -> String {
        std::fs::read_to_string(sysctl_path(root)).unwrap().trim().to_string()
    }

    #[test]
    fn switched_on_then_restored_on_finish_and_on_drop() {
        let root = fake_proc("finish", "0");
        let mut g = BalancingGuard::switch_on(&root).unwrap();
        assert_eq!((read(&root).as_str(), g.previous.as_str(), g.wrote.as_deref()), ("1", "0", Some("1")));
        assert_eq!(g.restore(), Ok(Restored::WroteBack("0".into())));
        assert_eq!(read(&root), "0");
        drop(g); // restored once only
        assert_eq!(read(&root), "0");

        // An error path: the guard is dropped without finishing.
        let g = BalancingGuard::switch_on(&root).unwrap();
        assert_eq!(read(&root), "1");
        drop(g);
        assert_eq!(read(&root), "0");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn tiering_mode_keeps_its_bit_and_an_on_setting_is_left_alone() {
        let root = fake_proc("tiering", "2");
        let mut g = BalancingGuard::switch_on(&root).unwrap();
        assert_eq!(read(&root), "3");
        g.restore().unwrap();
        assert_eq!(read(&root), "2");
        std::fs::write(sysctl_path(&root), "1\n").unwrap();
        let mut g = BalancingGuard::switch_on(&root).unwrap();
        assert_eq!(g.wrote, None);
        assert_eq!(g.restore(), Ok(Restored::NotChanged));
        assert_eq!(read(&root), "1");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn overlapping_recordings_restore_after_the_last() {
        let root = fake_proc("overlap", "0");
        let mut a = BalancingGuard::switch_on(&root).unwrap();
        let mut b = BalancingGuard::switch_on(&root).unwrap();
        assert_eq!(b.previous, "0");
        assert_eq!(a.restore(), Ok(Restored::StillHeld));
        assert_eq!(read(&root), "1", "b still records");
        assert_eq!(b.restore(), Ok(Restored::WroteBack("0".into())));
        assert_eq!(read(&root), "0");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn emergency_restore_writes_the_saved_value() {
        let root = fake_proc("emergency", "0");
        let mut g = BalancingGuard::switch_on(&root).unwrap();
        assert_eq!(read(&root), "1");
        // Other tests may arm their own files meanwhile: arm this one explicitly.
        arm_emergency(&sysctl_path(&root), "0");
        emergency_restore();
        assert_eq!(read(&root), "0");
        g.released = true; // the process would have exited here
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn sched_counts_are_read() {
        let root = fake_proc("sched", "0");
        std::fs::create_dir_all(root.join("42")).unwrap();
        std::fs::write(
            root.join("42/sched"),
            "app (42, #threads: 3)\n-----\nmm->numa_scan_seq                            :                    2\n\
             numa_pages_migrated                          :                    0\ntotal_numa_faults                            :                  517\n",
        )
        .unwrap();
        assert_eq!(sched_numa_counts(&root, 42), Some((2, 517)));
        assert_eq!(sched_numa_counts(&root, 43), None);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn missing_sysctl_is_a_clear_refusal() {
        let root = std::env::temp_dir().join(format!("numascope-balancing-none-{}", std::process::id()));
        let e = BalancingGuard::switch_on(&root).unwrap_err().to_string();
        assert!(e.contains("no automatic NUMA balancing"), "{e}");
    }

    /// The real sysctl, as root: switched on for the guard's life, the previous value back after.
    #[test]
    fn real_sysctl_is_restored() {
        let proc_root = Path::new("/proc");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !sysctl_path(proc_root).exists() {
            numascope_testsupport::skip_outside_ci(format_args!(
                "real_sysctl_is_restored: needs root and /proc/sys/kernel/numa_balancing"
            ));
            return;
        }
        let before = read(proc_root);
        let mut g = BalancingGuard::switch_on(proc_root).unwrap();
        let during: u32 = read(proc_root).parse().unwrap();
        assert_eq!(during & 1, 1, "balancing on while held");
        g.restore().unwrap();
        assert_eq!(read(proc_root), before, "previous value restored");
    }
}
