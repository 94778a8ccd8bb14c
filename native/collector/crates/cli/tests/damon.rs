//! `numascope record --damon` on this machine.
//!
//! - When `/sys/kernel/mm/damon/admin` is free (root, nr_kdamonds 0): record a testload with
//!   DAMON, check that DAMON regions cover the shared buffer (read all the time) with nonzero
//!   access counts, and that the kdamond is gone afterwards, also after a SIGTERM.
//! - When it is in use by someone else (for example the sandbox's own reclaim kdamond, which
//!   makes nr_kdamonds unchangeable): check that the source is reported `failed` with the
//!   reason and that the DAMON sysfs state is exactly as before.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use numascope_core::sources::damon;
use numascope_core::trace::reader::read_trace;
use numascope_core::trace::TraceData;

mod common;
use common::{numascope, testload};

const ADMIN: &str = "/sys/kernel/mm/damon/admin";

/// The readable configuration of every kdamond (not the volatile result files).
fn sysfs_state() -> Vec<(String, String)> {
    let mut out = Vec::new();
    // DAMON's sysfs answers EBUSY while another writer holds its lock (a kdamond being turned
    // off, another tool's commit: seen in CI right after the recording stopped): read again.
    let rd = |p: &Path| {
        let mut r = std::fs::read_to_string(p);
        for _ in 0..50 {
            match &r {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    r = std::fs::read_to_string(p);
                }
                _ => break,
            }
        }
        r.map(|s| s.trim().to_string()).unwrap_or_else(|e| format!("<{e}>"))
    };
    let admin = Path::new(ADMIN);
    let nr = rd(&admin.join("kdamonds/nr_kdamonds"));
    out.push(("nr_kdamonds".into(), nr.clone()));
    for i in 0..nr.parse::<u32>().unwrap_or(0) {
        let kd = admin.join(format!("kdamonds/{i}"));
        for f in [
            "state",
            "pid",
            "contexts/nr_contexts",
            "contexts/0/operations",
            "contexts/0/targets/nr_targets",
            "contexts/0/schemes/nr_schemes",
            "contexts/0/schemes/0/action",
            "contexts/0/monitoring_attrs/intervals/sample_us",
            "contexts/0/monitoring_attrs/intervals/aggr_us",
        ] {
            out.push((format!("{i}/{f}"), rd(&kd.join(f))));
        }
    }
    out
}

fn damon_source(t: &TraceData) -> (String, String) {
    let s = t.manifest.capture.sources.iter().find(|s| s.id == "damon").expect("damon source entry");
    (s.status.clone(), s.reason.clone().unwrap_or_default())
}

struct Region {
    time: i64,
    start: u64,
    end: u64,
    nr: f64,
}

fn damon_regions(t: &TraceData) -> Vec<Region> {
    let c = &t.counters;
    let mut by: std::collections::BTreeMap<(i64, i32), Region> = Default::default();
    for i in 0..c.time_us.len() {
        if c.scope.get(i) != damon::SCOPE {
            continue;
        }
        let r = by.entry((c.time_us[i], c.scope_id[i])).or_insert(Region {
            time: c.time_us[i],
            start: 0,
            end: 0,
            nr: -1.0,
        });
        match c.counter.get(i) {
            damon::COUNTER_START => r.start = c.value[i] as u64,
            damon::COUNTER_END => r.end = c.value[i] as u64,
            damon::COUNTER_NR_ACCESSES => r.nr = c.value[i],
            _ => {}
        }
    }
    by.into_values().collect()
}

#[test]
fn record_with_damon() {
    if !Path::new(ADMIN).exists() || unsafe { libc::geteuid() } != 0 {
        numascope_testsupport::skip_outside_ci(format_args!("no DAMON sysfs or not root"));
        return;
    }
    let dir = std::env::temp_dir().join(format!("numascope-damon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("damon.numascope");
    let before = sysfs_state();
    let free = damon::check_available(Path::new(ADMIN));
    let tl = testload();
    let o = Command::new(numascope())
        .args(["record", "--damon", "-q", "-o", out.to_str().unwrap(), "--"])
        .arg(&tl)
        .args(["--threads", "2", "--mib", "16", "--shared-mib", "32", "--seconds", "2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let t = read_trace(&out).unwrap().to_trace_data();
    let (status, reason) = damon_source(&t);
    let cap = t.manifest.capture.capabilities.iter().find(|c| c.metric == "region-hotness").unwrap();
    assert_eq!(sysfs_state(), before, "DAMON sysfs state must be as before the recording");
    match free {
        Err(why) => {
            eprintln!("DAMON sysfs not free here ({why}): checking the refusal path only");
            assert_eq!(status, "failed");
            assert!(reason.contains("in use"), "{reason}");
            assert_eq!(cap.status, "unavailable");
            assert!(damon_regions(&t).is_empty());
        }
        Ok(()) => {
            assert_eq!(status, "used", "{reason}");
            assert_eq!(cap.status, "measured");
            let shared = stdout.lines().find(|l| l.starts_with("shared ")).expect("shared line");
            let addr =
                u64::from_str_radix(shared.split_whitespace().find_map(|w| w.strip_prefix("addr=0x")).unwrap(), 16)
                    .unwrap();
            let len: u64 = shared.split_whitespace().find_map(|w| w.strip_prefix("len=")).unwrap().parse().unwrap();
            let regs = damon_regions(&t);
            assert!(!regs.is_empty());
            let hot = regs.iter().filter(|r| r.start < addr + len && r.end > addr && r.nr > 0.0).count();
            assert!(hot > 0, "no DAMON region over the shared buffer with nr_accesses > 0");
            assert!(regs.windows(2).all(|w| w[0].time <= w[1].time));
            // SIGTERM during a --damon recording also removes the kdamond.
            let mut child = Command::new(numascope())
                .args([
                    "record",
                    "--damon",
                    "--kill-on-stop",
                    "-q",
                    "-o",
                    dir.join("term.numascope").to_str().unwrap(),
                    "--",
                ])
                .arg(&tl)
                .args(["--threads", "1", "--mib", "4", "--seconds", "30"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            assert!(child.wait().unwrap().success());
            assert_eq!(sysfs_state(), before, "DAMON sysfs state after SIGTERM");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
