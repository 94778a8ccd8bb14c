//! `record` with PMU memory-access sampling and uncore counting planned but impossible to open: a
//! /sys whose `ibs_op` and `uncore_imc_0` PMUs have types the kernel does not know (this machine
//! has no PMU at all). The
//! recording must still succeed with page faults and /proc data, and the trace must say, per
//! source and per metric, that memory accesses were not measured and why.

use std::fs;
use std::path::PathBuf;

use numascope_core::probe::probe;
use numascope_core::recorder::{record_with, RecordOptions, Target};
use numascope_core::topology::{read_topology_at, Roots};
use numascope_core::trace::reader::read_trace;

fn fake_sys(dir: &std::path::Path) -> PathBuf {
    let sys = dir.join("sys");
    fs::create_dir_all(sys.join("bus/event_source/devices/ibs_op")).unwrap();
    // A dynamic PMU type no kernel has.
    fs::write(sys.join("bus/event_source/devices/ibs_op/type"), "2147418112\n").unwrap();
    // An Intel memory-controller PMU of a type no kernel has.
    let imc = sys.join("bus/event_source/devices/uncore_imc_0");
    for (f, v) in [
        ("type", "2147418113"),
        ("cpumask", "0"),
        ("format/event", "config:0-7"),
        ("format/umask", "config:8-15"),
        ("events/cas_count_read", "event=0x04,umask=0x03"),
        ("events/cas_count_read.scale", "6.103515625e-5"),
        ("events/cas_count_read.unit", "MiB"),
    ] {
        fs::create_dir_all(imc.join(f).parent().unwrap()).unwrap();
        fs::write(imc.join(f), format!("{v}\n")).unwrap();
    }
    for d in ["devices", "kernel", "fs", "firmware"] {
        std::os::unix::fs::symlink(PathBuf::from("/sys").join(d), sys.join(d)).unwrap();
    }
    sys
}

#[test]
fn unopenable_pmu_events_are_reported_and_nothing_else_is_lost() {
    if unsafe { libc::geteuid() } != 0 {
        // Planning IBS needs kernel-profiling rights; CI runs as root.
        return;
    }
    let dir = std::env::temp_dir().join(format!("numascope-pmu-record-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let roots = Roots { sys: fake_sys(&dir), proc: PathBuf::from("/proc") };
    let topo = read_topology_at(&Roots::default()).unwrap();
    let pr = probe(&topo);
    let out = dir.join("t.numascope");
    let mut opts = RecordOptions::new(
        Target::Launch(vec!["sh".into(), "-c".into(), "head -c 8000000 /dev/zero | cat > /dev/null".into()]),
        out.clone(),
    );
    opts.fault_period = 1;
    opts.fault_rate_hz = 0;
    let summary = record_with(&opts, &roots, &topo, &pr).expect("the recording itself succeeds");
    assert!(
        summary.warnings.iter().any(|w| w.contains("memory-access sampling (PMU) unavailable: perf_event_open ibs-op")),
        "{:?}",
        summary.warnings
    );
    let t = read_trace(&out).unwrap().to_trace_data();
    let m = &t.manifest;
    let ibs = m.capture.sources.iter().find(|s| s.id == "ibs-op").unwrap();
    assert_eq!(ibs.status, "failed", "{ibs:?}");
    assert!(ibs.reason.as_deref().unwrap().starts_with("perf_event_open ibs-op (task "), "{ibs:?}");
    let pf = m.capture.sources.iter().find(|s| s.id == "page-faults").unwrap();
    assert_eq!(pf.status, "used");
    assert!(!t.samples.time_us.is_empty(), "page-fault samples are still recorded");
    assert!(t.samples.op.iter().all(|o| o == "fault"), "no access rows were invented");
    let unc = m.capture.sources.iter().find(|s| s.id == "uncore").unwrap();
    assert_eq!(unc.status, "failed", "{unc:?}");
    assert!(
        unc.reason.as_deref().unwrap().starts_with("cannot open uncore_imc_0/mc-read-bytes (cas_count_read) on cpu 0:"),
        "{unc:?}"
    );
    for metric in ["memory-bandwidth", "link-bandwidth"] {
        let bw = m.capture.capabilities.iter().find(|c| c.metric == metric).unwrap();
        assert_eq!(bw.status, "unavailable", "{bw:?}");
        assert!(bw.reason.starts_with("uncore counters: cannot open"), "{bw:?}");
    }
    assert!(
        !t.counters.counter.iter().any(|c| c.starts_with("mc-") || c.starts_with("link-")),
        "no memory-controller or link rows were invented"
    );
    for metric in ["memory-accesses", "access-latency", "data-source"] {
        let c = m.capture.capabilities.iter().find(|c| c.metric == metric).unwrap();
        assert_eq!(c.status, "unavailable", "{c:?}");
    }
    // Turned off: not even planned.
    let out2 = dir.join("off.numascope");
    let mut off = RecordOptions::new(Target::Launch(vec!["true".into()]), out2.clone());
    off.mem_sampling = false;
    let s2 = record_with(&off, &roots, &topo, &pr).unwrap();
    assert!(!s2.warnings.iter().any(|w| w.contains("PMU")), "{:?}", s2.warnings);
    let t2 = read_trace(&out2).unwrap().to_trace_data();
    let ibs2 = t2.manifest.capture.sources.iter().find(|s| s.id == "ibs-op").unwrap();
    assert_ne!(ibs2.status, "failed", "{ibs2:?}");
    let _ = fs::remove_dir_all(&dir);
}
