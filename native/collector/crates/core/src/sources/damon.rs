//! DAMON region hotness through the sysfs interface (`/sys/kernel/mm/damon/admin`).
//!
//! One kdamond with one `vaddr` context monitors the recorded pid. A `stat` scheme that matches
//! every region (its action does nothing) makes the kernel export the monitored regions: writing
//! `update_schemes_tried_regions` to the kdamond's `state` file fills
//! `schemes/0/tried_regions/<i>/{start,end,nr_accesses,age}` with the regions of the last
//! aggregation. A reader thread does that every [`DamonConfig::read_every`].
//!
//! Monitoring attributes ([`DamonConfig::default`]): sampling 5 ms, aggregation 100 ms, operations
//! update (re-reading the vmas) 1 s, 10..1000 regions. These are DAMON's own defaults
//! (`damon_new_ctx()`): at most 1000 regions bounds the kdamond's cost (one access-bit check per
//! region per sample, i.e. ≤ 200 000 checks/s, independent of the process size), and
//! `nr_accesses` then ranges over 0..=20 (aggregation / sampling) per aggregation interval.
//!
//! Sharing: the sysfs interface can only change the number of kdamonds while none of them runs
//! (`nr_kdamonds` answers EBUSY), and changing it erases every kdamond's configuration. So the
//! recorder only uses DAMON when `nr_kdamonds` is 0: it creates kdamond 0, and at the end turns
//! it off and writes `nr_kdamonds` = 0 again. Otherwise the source is reported as `failed` with
//! the reason (for example the sandbox's own proactive-reclaim kdamond), and nothing is written.
//!
//! Cleanup runs on every way out: the normal end, an error (Drop), a panic (Drop while
//! unwinding), and a second SIGINT/SIGTERM, whose handler exits at once
//! ([`emergency_cleanup`] writes `off` and `0` with async-signal-safe calls first). SIGKILL of
//! the recorder cannot be handled: the kdamond then stops by itself when the target exits, and
//! the next `--damon` recording refuses to touch the leftover (nr_kdamonds is not 0); remove it
//! with `echo off > …/kdamonds/0/state; echo 0 > …/kdamonds/nr_kdamonds`.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::time::{mono_now_ns, us_since};

pub const DEFAULT_ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// The access pattern that matches every region: (field, max) of `access_pattern/<field>/{min,max}`,
/// min 0. `sz` is bytes (unsigned long), `nr_accesses` and `age` are unsigned int in the kernel.
pub const MATCH_ALL: [(&str, &str); 3] =
    [("sz", "18446744073709551615"), ("nr_accesses", "4294967295"), ("age", "4294967295")];

#[derive(Clone, Debug)]
pub struct DamonConfig {
    pub sample_us: u64,
    pub aggr_us: u64,
    pub update_us: u64,
    pub min_regions: u32,
    pub max_regions: u32,
    /// How often the regions are read (each read waits for the next aggregation).
    pub read_every: Duration,
}

impl Default for DamonConfig {
    fn default() -> Self {
        DamonConfig {
            sample_us: 5_000,
            aggr_us: 100_000,
            update_us: 1_000_000,
            min_regions: 10,
            max_regions: 1000,
            read_every: Duration::from_millis(200),
        }
    }
}

impl DamonConfig {
    /// The largest `nr_accesses` a region can show (aggregation / sampling interval).
    pub fn max_nr_accesses(&self) -> u64 {
        (self.aggr_us / self.sample_us.max(1)).max(1)
    }

    pub fn describe(&self) -> String {
        format!(
            "DAMON vaddr, sysfs: sampling {} ms, aggregation {} ms, update {} ms, {}..{} regions, read every {} ms (nr_accesses 0..{})",
            self.sample_us / 1000,
            self.aggr_us / 1000,
            self.update_us / 1000,
            self.min_regions,
            self.max_regions,
            self.read_every.as_millis(),
            self.max_nr_accesses()
        )
    }
}

/// One region of one snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct DamonRegion {
    pub time_us: i64,
    pub start: u64,
    pub end: u64,
    pub nr_accesses: u32,
    pub age: u32,
}

#[derive(Clone, Debug, Default)]
pub struct DamonData {
    pub regions: Vec<DamonRegion>,
    pub snapshots: usize,
    pub problems: Vec<String>,
    /// The kdamond stopped by itself (the target exited).
    pub stopped_by_kernel: bool,
}

fn read_trim(p: &Path) -> Result<String, String> {
    fs::read_to_string(p).map(|s| s.trim().to_string()).map_err(|e| format!("reading {}: {e}", p.display()))
}

fn write(p: &Path, v: &str) -> Result<(), String> {
    fs::write(p, v).map_err(|e| format!("writing {v:?} to {}: {e}", p.display()))
}

/// Whether a recording could set up a kdamond now: Ok(()) or the reason it cannot.
pub fn check_available(admin: &Path) -> Result<(), String> {
    let nr_path = admin.join("kdamonds/nr_kdamonds");
    if !admin.exists() {
        return Err(format!("no {} (kernel without CONFIG_DAMON_SYSFS)", admin.display()));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!("{} is writable by root only", admin.display()));
    }
    let nr: u32 = read_trim(&nr_path)?.parse().map_err(|_| format!("unreadable {}", nr_path.display()))?;
    if nr == 0 {
        return Ok(());
    }
    let mut busy = Vec::new();
    for i in 0..nr {
        let kd = admin.join(format!("kdamonds/{i}"));
        let state = read_trim(&kd.join("state")).unwrap_or_else(|_| "?".into());
        let ops = read_trim(&kd.join("contexts/0/operations")).unwrap_or_else(|_| "?".into());
        let pid = read_trim(&kd.join("pid")).unwrap_or_else(|_| "?".into());
        busy.push(format!(
            "kdamond {i}: {state}, {ops}{}",
            if state == "on" { format!(", pid {pid}") } else { String::new() }
        ));
    }
    Err(format!(
        "DAMON sysfs is in use ({}): the interface cannot add a kdamond while one runs (nr_kdamonds answers EBUSY) and \
         rewriting nr_kdamonds would erase the existing configuration, so numascope leaves it alone",
        busy.join("; ")
    ))
}

/// Paths the signal handler writes to (leaked CStrings; null when no session is active).
static EMERGENCY_STATE: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
static EMERGENCY_NR: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

fn leak_path(p: &Path) -> *mut libc::c_char {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).map(|c| c.into_raw()).unwrap_or(std::ptr::null_mut())
}

/// Turns off and removes the active kdamond using only async-signal-safe calls. Called by the
/// recorder's signal handler before it exits on a second signal.
pub fn emergency_cleanup() {
    let write_raw = |p: *mut libc::c_char, v: &[u8]| {
        if p.is_null() {
            return;
        }
        // SAFETY: p is a leaked, NUL-terminated CString; open/write/close are async-signal-safe.
        unsafe {
            let fd = libc::open(p, libc::O_WRONLY);
            if fd >= 0 {
                libc::write(fd, v.as_ptr() as *const libc::c_void, v.len());
                libc::close(fd);
            }
        }
    };
    write_raw(EMERGENCY_STATE.swap(std::ptr::null_mut(), Ordering::SeqCst), b"off");
    write_raw(EMERGENCY_NR.swap(std::ptr::null_mut(), Ordering::SeqCst), b"0");
}

/// A running DAMON monitor. Dropping it stops the kdamond and removes the configuration.
pub struct DamonSession {
    admin: PathBuf,
    kd: PathBuf,
    pub config: DamonConfig,
    stop: Arc<AtomicBool>,
    data: Arc<Mutex<DamonData>>,
    reader: Option<JoinHandle<()>>,
    cleaned: bool,
}

impl DamonSession {
    /// Creates kdamond 0 for `pid` and starts it. On error nothing is left behind.
    pub fn start(admin: &Path, pid: i32, config: DamonConfig, start_ns: u64) -> Result<DamonSession, String> {
        check_available(admin)?;
        write(&admin.join("kdamonds/nr_kdamonds"), "1")?;
        let kd = admin.join("kdamonds/0");
        let mut s = DamonSession {
            admin: admin.to_path_buf(),
            kd: kd.clone(),
            config,
            stop: Arc::new(AtomicBool::new(false)),
            data: Arc::new(Mutex::new(DamonData::default())),
            reader: None,
            cleaned: false,
        };
        EMERGENCY_STATE.store(leak_path(&kd.join("state")), Ordering::SeqCst);
        EMERGENCY_NR.store(leak_path(&admin.join("kdamonds/nr_kdamonds")), Ordering::SeqCst);
        // On error `s` is dropped, which removes what was written.
        s.configure(pid)?;
        write(&kd.join("state"), "on").map_err(|e| format!("starting the kdamond: {e}"))?;
        let (kd2, stop, data, every) = (kd.clone(), s.stop.clone(), s.data.clone(), s.config.read_every);
        s.reader = Some(
            std::thread::Builder::new()
                .name("numascope-damon".into())
                .spawn(move || reader_loop(&kd2, start_ns, every, &stop, &data))
                .map_err(|e| format!("cannot start the DAMON reader thread: {e}"))?,
        );
        Ok(s)
    }

    fn configure(&self, pid: i32) -> Result<(), String> {
        let c = &self.config;
        let ctx = self.kd.join("contexts");
        write(&ctx.join("nr_contexts"), "1")?;
        let ctx = ctx.join("0");
        let avail = read_trim(&ctx.join("avail_operations")).unwrap_or_default();
        if !avail.split_whitespace().any(|o| o == "vaddr") {
            return Err(format!("DAMON here has no vaddr operations (avail_operations: {avail:?})"));
        }
        write(&ctx.join("operations"), "vaddr")?;
        let a = ctx.join("monitoring_attrs");
        write(&a.join("intervals/sample_us"), &c.sample_us.to_string())?;
        write(&a.join("intervals/aggr_us"), &c.aggr_us.to_string())?;
        write(&a.join("intervals/update_us"), &c.update_us.to_string())?;
        write(&a.join("nr_regions/min"), &c.min_regions.to_string())?;
        write(&a.join("nr_regions/max"), &c.max_regions.to_string())?;
        write(&ctx.join("targets/nr_targets"), "1")?;
        write(&ctx.join("targets/0/pid_target"), &pid.to_string())?;
        write(&ctx.join("schemes/nr_schemes"), "1")?;
        // `stat` does nothing to the memory. The access pattern must match every region, and it
        // has to be written: sysfs starts every min and max at 0, which matches no region at all
        // (found on a real 6.12 kernel: tried_regions stayed empty).
        let scheme = ctx.join("schemes/0");
        write(&scheme.join("action"), "stat")?;
        for (field, max) in MATCH_ALL {
            write(&scheme.join(format!("access_pattern/{field}/min")), "0")?;
            write(&scheme.join(format!("access_pattern/{field}/max")), max)?;
        }
        Ok(())
    }

    /// Stops the reader and the kdamond, removes the configuration, returns what was read.
    pub fn finish(mut self) -> DamonData {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        let problems = self.cleanup();
        let mut d = std::mem::take(&mut *self.data.lock().unwrap());
        d.problems.extend(problems);
        d
    }

    /// Idempotent. Returns problems (the configuration could not be removed).
    fn cleanup(&mut self) -> Vec<String> {
        if self.cleaned {
            return Vec::new();
        }
        self.cleaned = true;
        self.stop.store(true, Ordering::SeqCst);
        let mut problems = Vec::new();
        let state = self.kd.join("state");
        if read_trim(&state).as_deref() == Ok("on") {
            if let Err(e) = write(&state, "off") {
                // It may have stopped by itself in between.
                if read_trim(&state).as_deref() == Ok("on") {
                    problems.push(format!("DAMON cleanup: {e}"));
                }
            }
        }
        // The kdamond thread ends asynchronously after `off`: retry EBUSY for a while.
        let nr = self.admin.join("kdamonds/nr_kdamonds");
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match write(&nr, "0") {
                Ok(()) => break,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    problems.push(format!("DAMON cleanup: {e} (the kdamond configuration was left in place)"));
                    break;
                }
            }
        }
        EMERGENCY_STATE.store(std::ptr::null_mut(), Ordering::SeqCst);
        EMERGENCY_NR.store(std::ptr::null_mut(), Ordering::SeqCst);
        problems
    }
}

impl Drop for DamonSession {
    fn drop(&mut self) {
        if let Some(h) = self.reader.take() {
            self.stop.store(true, Ordering::SeqCst);
            let _ = h.join();
        }
        for p in self.cleanup() {
            eprintln!("numascope: warning: {p}");
        }
    }
}

/// Reads `schemes/0/tried_regions/<i>/…` of a kdamond directory.
pub fn read_tried_regions(kd: &Path, time_us: i64) -> Result<Vec<DamonRegion>, String> {
    let dir = kd.join("contexts/0/schemes/0/tried_regions");
    let mut idx: Vec<u32> = fs::read_dir(&dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    idx.sort_unstable();
    let mut out = Vec::with_capacity(idx.len());
    for i in idx {
        let r = dir.join(i.to_string());
        let num = |f: &str| -> Result<u64, String> {
            read_trim(&r.join(f))?.parse().map_err(|_| format!("bad number in {}", r.join(f).display()))
        };
        out.push(DamonRegion {
            time_us,
            start: num("start")?,
            end: num("end")?,
            nr_accesses: num("nr_accesses")?.min(u32::MAX as u64) as u32,
            age: num("age")?.min(u32::MAX as u64) as u32,
        });
    }
    Ok(out)
}

fn reader_loop(kd: &Path, start_ns: u64, every: Duration, stop: &AtomicBool, data: &Mutex<DamonData>) {
    let state = kd.join("state");
    let mut next = Instant::now() + every;
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
            continue;
        }
        next += every;
        // Blocks until the kdamond has applied the scheme once more (≤ one aggregation).
        if let Err(e) = write(&state, "update_schemes_tried_regions") {
            let mut d = data.lock().unwrap();
            if read_trim(&state).as_deref() == Ok("off") {
                d.stopped_by_kernel = true;
                break;
            }
            if d.problems.len() < 5 {
                d.problems.push(format!("DAMON read: {e}"));
            }
            continue;
        }
        let t = us_since(start_ns, mono_now_ns());
        match read_tried_regions(kd, t) {
            Ok(regs) => {
                let mut d = data.lock().unwrap();
                if !regs.is_empty() {
                    d.snapshots += 1;
                }
                d.regions.extend(regs);
            }
            Err(e) => {
                let mut d = data.lock().unwrap();
                if d.problems.len() < 5 {
                    d.problems.push(format!("DAMON read: {e}"));
                }
            }
        }
    }
}

/// Counter names written into the `counters` table (scope `damon-region`, scope_id = the
/// region's index within its snapshot; one snapshot = all rows with one `time_us`).
pub const COUNTER_START: &str = "damon_region_start";
pub const COUNTER_END: &str = "damon_region_end";
pub const COUNTER_NR_ACCESSES: &str = "damon_nr_accesses";
pub const COUNTER_AGE: &str = "damon_age";
/// Scope `system`: the largest possible `damon_nr_accesses` (aggregation / sampling interval).
pub const COUNTER_MAX_NR_ACCESSES: &str = "damon_max_nr_accesses";
pub const SCOPE: &str = "damon-region";
/// Addresses are stored as float64: exact below 2^53 (every 4- and 5-level-paging user address
/// the kernel hands out without an explicit high hint).
const EXACT_F64: u64 = 1 << 53;

/// Puts the DAMON result (None: not requested) into the trace: counters rows, the `damon`
/// source entry and the `region-hotness` capability. Returns the summary's `damon` string.
pub fn add_to_trace(
    trace: &mut crate::trace::TraceData,
    damon: Option<&Result<DamonData, String>>,
    cfg: &DamonConfig,
    warnings: &mut Vec<String>,
) -> String {
    let cap_metric = "region-hotness";
    let (status, reason, cap_status, cap_reason, summary) = match damon {
        None => (
            None,
            None,
            "unavailable",
            "DAMON not requested (numascope record --damon)".to_string(),
            "not-requested".to_string(),
        ),
        Some(Err(e)) => {
            (Some("failed"), Some(e.clone()), "unavailable", format!("DAMON failed: {e}"), format!("failed: {e}"))
        }
        Some(Ok(d)) => {
            let c = &mut trace.counters;
            let mut rows = 0usize;
            let mut skipped = 0usize;
            let k = [COUNTER_START, COUNTER_END, COUNTER_NR_ACCESSES, COUNTER_AGE].map(|n| c.counter.intern(n));
            let k_scope = c.scope.intern(SCOPE);
            if let Some(first) = d.regions.first() {
                c.time_us.push(first.time_us);
                c.counter.push(COUNTER_MAX_NR_ACCESSES);
                c.scope.push("system");
                c.scope_id.push(-1);
                c.value.push(cfg.max_nr_accesses() as f64);
            }
            let mut idx = 0i32;
            let mut last_t = None;
            for r in &d.regions {
                if last_t != Some(r.time_us) {
                    idx = 0;
                    last_t = Some(r.time_us);
                }
                if r.end > EXACT_F64 {
                    skipped += 1;
                    continue;
                }
                for (key, v) in k.iter().zip([r.start as f64, r.end as f64, r.nr_accesses as f64, r.age as f64]) {
                    c.time_us.push(r.time_us);
                    c.counter.push_key(*key);
                    c.scope.push_key(k_scope);
                    c.scope_id.push(idx);
                    c.value.push(v);
                }
                idx += 1;
                rows += 1;
            }
            sort_counters_by_time(c);
            let notes = &mut trace.manifest.capture.notes;
            if skipped > 0 {
                notes.push(format!(
                    "{skipped} DAMON regions above 2^53 were left out (float64 counters are not exact there)"
                ));
            }
            for p in &d.problems {
                warnings.push(p.clone());
                notes.push(format!("warning: {p}"));
            }
            if d.stopped_by_kernel {
                notes.push("the kdamond stopped by itself before the capture ended (the target exited)".into());
            }
            notes.push(format!(
                "DAMON: {} snapshots, {rows} region rows in counters (scope damon-region: damon_region_start/end, damon_nr_accesses 0..{}, damon_age in aggregation intervals); the kdamond was removed at the end",
                d.snapshots,
                cfg.max_nr_accesses()
            ));
            if d.snapshots == 0 {
                (
                    Some("failed"),
                    Some(format!("{}; no regions were read", cfg.describe())),
                    "unavailable",
                    "DAMON ran but no region snapshot was read".to_string(),
                    "failed: no regions were read".to_string(),
                )
            } else {
                (
                    Some("used"),
                    Some(cfg.describe()),
                    "measured",
                    format!("DAMON vaddr access frequency per region, {} snapshots", d.snapshots),
                    format!("used: {} snapshots, {rows} region rows", d.snapshots),
                )
            }
        }
    };
    let cap = &mut trace.manifest.capture;
    if let (Some(st), Some(src)) = (status, cap.sources.iter_mut().find(|s| s.id == "damon")) {
        src.status = st.into();
        src.reason = reason;
        src.sample_period = None;
        src.interval_ms = Some(cfg.read_every.as_millis() as u64);
    }
    match cap.capabilities.iter_mut().find(|c| c.metric == cap_metric) {
        Some(c) => {
            c.status = cap_status.into();
            c.reason = cap_reason;
        }
        None => cap.capabilities.push(crate::trace::Capability {
            metric: cap_metric.into(),
            status: cap_status.into(),
            reason: cap_reason,
        }),
    }
    summary
}

/// Stable sort of the counters rows by time (DAMON rows are appended after the poller's).
pub(crate) fn sort_counters_by_time(c: &mut crate::trace::Counters) {
    if c.time_us.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    let mut order: Vec<usize> = (0..c.time_us.len()).collect();
    order.sort_by_key(|&i| c.time_us[i]);
    c.time_us = order.iter().map(|&i| c.time_us[i]).collect();
    c.counter.keys = order.iter().map(|&i| c.counter.keys[i]).collect();
    c.scope.keys = order.iter().map(|&i| c.scope.keys[i]).collect();
    c.scope_id = order.iter().map(|&i| c.scope_id[i]).collect();
    c.value = order.iter().map(|&i| c.value[i]).collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numascope-damon-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn reads_tried_regions_in_index_order() {
        let kd = tmp("tried");
        let dir = kd.join("contexts/0/schemes/0/tried_regions");
        for (i, (s, e, n, a)) in [(4096u64, 8192u64, 3u32, 1u32), (8192, 65536, 0, 7)].iter().enumerate().rev() {
            let r = dir.join(i.to_string());
            fs::create_dir_all(&r).unwrap();
            fs::write(r.join("start"), format!("{s}\n")).unwrap();
            fs::write(r.join("end"), format!("{e}\n")).unwrap();
            fs::write(r.join("nr_accesses"), format!("{n}\n")).unwrap();
            fs::write(r.join("age"), format!("{a}\n")).unwrap();
        }
        fs::write(dir.join("total_bytes"), "61440\n").unwrap();
        let regs = read_tried_regions(&kd, 42).unwrap();
        assert_eq!(regs.len(), 2);
        assert_eq!(regs[0], DamonRegion { time_us: 42, start: 4096, end: 8192, nr_accesses: 3, age: 1 });
        assert_eq!(regs[1].end, 65536);
        let _ = fs::remove_dir_all(&kd);
    }

    #[test]
    fn busy_interface_is_refused_and_left_alone() {
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let admin = tmp("busy");
        fs::create_dir_all(admin.join("kdamonds/0/contexts/0")).unwrap();
        fs::write(admin.join("kdamonds/nr_kdamonds"), "1\n").unwrap();
        fs::write(admin.join("kdamonds/0/state"), "on\n").unwrap();
        fs::write(admin.join("kdamonds/0/pid"), "77\n").unwrap();
        fs::write(admin.join("kdamonds/0/contexts/0/operations"), "paddr\n").unwrap();
        let e = DamonSession::start(&admin, 1, DamonConfig::default(), mono_now_ns()).err().unwrap();
        assert!(e.contains("kdamond 0: on, paddr, pid 77"), "{e}");
        assert_eq!(fs::read_to_string(admin.join("kdamonds/nr_kdamonds")).unwrap(), "1\n");
        assert_eq!(fs::read_to_string(admin.join("kdamonds/0/state")).unwrap(), "on\n");
        let _ = fs::remove_dir_all(&admin);
    }

    #[test]
    fn configure_writes_a_match_everything_access_pattern() {
        // sysfs starts every access_pattern min/max at 0 (matches no region): configure must
        // write the full ranges, or tried_regions stays empty on a real kernel.
        let admin = tmp("configure");
        let kd = admin.join("kdamonds/0");
        fs::create_dir_all(kd.join("contexts/0")).unwrap();
        fs::write(kd.join("contexts/0/avail_operations"), "vaddr\nfvaddr\npaddr\n").unwrap();
        let s = DamonSession {
            admin: admin.clone(),
            kd: kd.clone(),
            config: DamonConfig::default(),
            stop: Arc::new(AtomicBool::new(false)),
            data: Arc::new(Mutex::new(DamonData::default())),
            reader: None,
            cleaned: true,
        };
        // The fake tree has no subdirectories for the files configure writes: create them.
        for d in [
            "monitoring_attrs/intervals",
            "monitoring_attrs/nr_regions",
            "targets/0",
            "schemes/0/access_pattern/sz",
            "schemes/0/access_pattern/nr_accesses",
            "schemes/0/access_pattern/age",
        ] {
            fs::create_dir_all(kd.join("contexts/0").join(d)).unwrap();
        }
        s.configure(4242).unwrap();
        let read = |p: &str| fs::read_to_string(kd.join("contexts/0").join(p)).unwrap();
        assert_eq!(read("operations"), "vaddr");
        assert_eq!(read("targets/0/pid_target"), "4242");
        assert_eq!(read("schemes/0/action"), "stat");
        assert_eq!(read("schemes/0/access_pattern/sz/max"), u64::MAX.to_string());
        assert_eq!(read("schemes/0/access_pattern/nr_accesses/max"), u32::MAX.to_string());
        assert_eq!(read("schemes/0/access_pattern/age/max"), u32::MAX.to_string());
        for f in ["sz", "nr_accesses", "age"] {
            assert_eq!(read(&format!("schemes/0/access_pattern/{f}/min")), "0");
        }
        drop(s);
        let _ = fs::remove_dir_all(&admin);
    }

    #[test]
    fn config_defaults() {
        let c = DamonConfig::default();
        assert_eq!(c.max_nr_accesses(), 20);
        assert!(c.describe().contains("10..1000 regions"));
    }
}
