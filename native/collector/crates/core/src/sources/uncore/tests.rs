//! The planner on sysfs trees of several models (Intel Skylake-SP and Sapphire Rapids with SNC,
//! AMD Zen 2/3 data fabric and Zen 4 UMC with NPS2), unknown models, bad files, an event that
//! cannot be opened, and a recording's rows, source reason and capabilities.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::topology::Roots;
use crate::trace::Capability;

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn fresh(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("numascope-uncore-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root).unwrap();
    root
}

fn roots(root: &Path) -> Roots {
    Roots { sys: root.join("sys"), proc: root.join("proc") }
}

/// `sockets` sockets × `per` cpus; cpu c is in socket c / per; node of each socket listed.
fn topology(root: &Path, sockets: u32, per: u32, nodes: &[&[u32]]) {
    for c in 0..sockets * per {
        put(root, &format!("sys/devices/system/cpu/cpu{c}/topology/physical_package_id"), &format!("{}\n", c / per));
    }
    for (n, cpus) in nodes.iter().enumerate() {
        let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        put(root, &format!("sys/devices/system/node/node{n}/cpulist"), &list.join(","));
    }
}

fn node_map<'a>(nodes: &'a [&'a [u32]]) -> impl Fn(u32) -> i32 + 'a {
    move |cpu| nodes.iter().position(|n| n.contains(&cpu)).map(|n| n as i32).unwrap_or(-1)
}

fn cpuinfo(root: &Path, vendor: &str, family: u32, model: u32, stepping: u32) {
    put(
        root,
        "proc/cpuinfo",
        &format!(
            "processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\nmodel name\t: x\nstepping\t: {stepping}\n\nprocessor\t: 1\nvendor_id\t: {vendor}\n"
        ),
    );
}

fn pmu(root: &Path, name: &str, ty: u32, mask: &str, formats: &[(&str, &str)]) {
    let d = format!("sys/bus/event_source/devices/{name}");
    put(root, &format!("{d}/type"), &format!("{ty}\n"));
    put(root, &format!("{d}/cpumask"), &format!("{mask}\n"));
    for (f, v) in formats {
        put(root, &format!("{d}/format/{f}"), &format!("{v}\n"));
    }
}

fn imc(root: &Path, name: &str, ty: u32, mask: &str) {
    pmu(root, name, ty, mask, &[("event", "config:0-7"), ("umask", "config:8-15")]);
    let d = format!("sys/bus/event_source/devices/{name}");
    put(root, &format!("{d}/events/cas_count_read"), "event=0x04,umask=0x03\n");
    put(root, &format!("{d}/events/cas_count_read.scale"), "6.103515625e-5\n");
    put(root, &format!("{d}/events/cas_count_read.unit"), "MiB\n");
    put(root, &format!("{d}/events/cas_count_write"), "event=0x04,umask=0x0c\n");
    put(root, &format!("{d}/events/cas_count_write.scale"), "6.103515625e-5\n");
    put(root, &format!("{d}/events/cas_count_write.unit"), "MiB\n");
}

const SKX_NODES: &[&[u32]] = &[&[0, 1, 2, 3], &[4, 5, 6, 7]];

/// A two-socket Skylake-SP: 2 memory channels and 3 UPI links per socket, each PMU's cpumask
/// one cpu per socket (0 and 4), one node per socket.
fn skx(name: &str) -> PathBuf {
    let root = fresh(name);
    topology(&root, 2, 4, SKX_NODES);
    cpuinfo(&root, "GenuineIntel", 6, 0x55, 4);
    imc(&root, "uncore_imc_0", 14, "0,4");
    imc(&root, "uncore_imc_1", 15, "0,4");
    for (i, ty) in [(0, 20), (1, 21), (2, 22)] {
        pmu(&root, &format!("uncore_upi_{i}"), ty, "0,4", &[("event", "config:0-7"), ("umask", "config:8-15")]);
    }
    put(&root, "sys/bus/event_source/devices/cpu/type", "4\n");
    root
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn parses_cpuinfo_first_processor() {
    let id = parse_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9654\nstepping\t: 1\n\nprocessor\t: 1\n").unwrap();
    assert_eq!(id, CpuId { vendor: "AuthenticAMD".into(), family: 0x19, model: 0x11, stepping: Some(1) });
    assert_eq!(id.describe(), "AuthenticAMD family 0x19 model 0x11");
    assert_eq!(parse_cpuinfo("processor : 0\n"), None);
}

#[test]
fn models_follow_perfs_mapfile() {
    let intel = |model, stepping| CpuId { vendor: "GenuineIntel".into(), family: 6, model, stepping: Some(stepping) };
    let dir = |id: CpuId| intel_upi_model(&id).map(|m| (m.perf_dir, m.events.len()));
    assert_eq!(dir(intel(0x55, 4)), Some(("skylakex", 2)));
    assert_eq!(dir(intel(0x55, 7)), Some(("cascadelakex", 2)));
    assert_eq!(dir(intel(0x6a, 6)), Some(("icelakex", 2)));
    assert_eq!(dir(intel(0x8f, 8)), Some(("sapphirerapids", 2)));
    assert_eq!(dir(intel(0xcf, 2)), Some(("emeraldrapids", 1)), "perf has no receive metric for EMR");
    assert_eq!(dir(intel(0xad, 1)), Some(("graniterapids", 2)));
    assert_eq!(dir(intel(0xaf, 3)), None, "Sierra Forest: not in the table");
    assert_eq!(dir(intel(0x9e, 3)), None, "a client part");
    let amd = |family, model| CpuId { vendor: "AuthenticAMD".into(), family, model, stepping: None };
    let gen = |id: CpuId| amd_zen(&id).map(|z| z.2);
    assert_eq!(gen(amd(0x17, 0x01)), Some(1));
    assert_eq!(gen(amd(0x17, 0x31)), Some(2));
    assert_eq!(gen(amd(0x19, 0x01)), Some(3));
    assert_eq!(gen(amd(0x19, 0x21)), Some(3));
    assert_eq!(gen(amd(0x19, 0x11)), Some(4));
    assert_eq!(gen(amd(0x19, 0xa0)), Some(4));
    assert_eq!(gen(amd(0x1a, 0x02)), Some(5));
    assert_eq!(gen(amd(0x18, 0x00)), None, "Hygon");
}

#[test]
fn skx_two_sockets_imc_and_upi_links_per_node() {
    let root = skx("skx");
    let nodes = node_map(SKX_NODES);
    let plan = plan_uncore(&roots(&root), &nodes);
    // 2 channels × 2 events × 2 sockets + 3 links × 2 events × 2 sockets.
    assert_eq!(plan.specs.len(), 8 + 12, "{:#?}", plan.families);
    let r0 = &plan.specs[0];
    assert_eq!(
        (r0.pmu.as_str(), r0.ty, r0.config, r0.cpu, r0.scope, r0.counter),
        ("uncore_imc_0", 14, [0x0304, 0, 0], 0, Scope::Node(0), "mc-read-bytes")
    );
    // 6.103515625e-5 MiB per count = 64 bytes (one cache line per CAS).
    assert!(close(r0.bytes_per_count, 64.0), "{}", r0.bytes_per_count);
    assert_eq!((plan.specs[1].cpu, plan.specs[1].scope), (4, Scope::Node(1)), "the second cpu of the cpumask");
    assert_eq!(plan.specs[2].config, [0x0c04, 0, 0]);
    let upi: Vec<&UncoreSpec> = plan.specs.iter().filter(|s| s.pmu.starts_with("uncore_upi")).collect();
    assert_eq!(upi.len(), 12);
    let tx0 = upi[0];
    assert_eq!(
        (tx0.pmu.as_str(), tx0.ty, tx0.config, tx0.cpu, tx0.scope, tx0.counter, tx0.event),
        ("uncore_upi_0", 20, [0x0f02, 0, 0], 0, Scope::Node(0), "link-tx-bytes", "UNC_UPI_TxL_FLITS.ALL_DATA")
    );
    assert!(close(tx0.bytes_per_count, 64.0 / 9.0));
    let rx1 = upi[3];
    assert_eq!((rx1.config, rx1.cpu, rx1.scope, rx1.counter), ([0x0f03, 0, 0], 4, Scope::Node(1), "link-rx-bytes"));
    // Sums: socket 1's three links' transmitted flits go to node 1.
    let counts: Vec<Option<f64>> = plan
        .specs
        .iter()
        .map(|s| {
            Some(match (s.counter, s.cpu) {
                ("link-tx-bytes", 4) => 900.0,
                ("link-tx-bytes", 0) => 90.0,
                ("mc-read-bytes", 0) => 10.0,
                _ => 1.0,
            })
        })
        .collect();
    let (by, incomplete) = sum_by_scope(&plan.specs, &counts);
    assert_eq!(incomplete, 0);
    assert!(close(by[&("link-tx-bytes", Scope::Node(1))], 3.0 * 900.0 * 64.0 / 9.0));
    assert!(close(by[&("link-tx-bytes", Scope::Node(0))], 3.0 * 90.0 * 64.0 / 9.0));
    assert!(close(by[&("link-rx-bytes", Scope::Node(0))], 3.0 * 64.0 / 9.0));
    assert!(close(by[&("mc-read-bytes", Scope::Node(0))], 2.0 * 10.0 * 64.0));
    assert!(close(by[&("mc-write-bytes", Scope::Node(1))], 2.0 * 64.0));
    assert!(plan.counts("mc-") && plan.counts("link-"));
    assert_eq!(plan.failure(), None);
    assert_eq!(
        plan.summary(),
        "uncore_imc: 2 PMUs, sysfs events cas_count_read/cas_count_write × .scale × .unit → mc-read-bytes, mc-write-bytes, per node; \
         uncore_upi: 3 links, Skylake-SP (GenuineIntel family 0x6 model 0x55), UNC_UPI_TxL_FLITS.ALL_DATA and UNC_UPI_RxL_FLITS.ALL_DATA from perf's skylakex JSON, 64/9 bytes per flit → link-tx-bytes, link-rx-bytes summed over the socket's links, per node"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn an_unreadable_event_leaves_its_sum_out() {
    let root = skx("unreadable");
    let plan = plan_uncore(&roots(&root), &node_map(SKX_NODES));
    let mut counts: Vec<Option<f64>> = vec![Some(1.0); plan.specs.len()];
    counts[1] = None; // uncore_imc_0 cas_count_read on cpu 4 (node 1)
    let (by, incomplete) = sum_by_scope(&plan.specs, &counts);
    assert_eq!(incomplete, 1);
    assert!(!by.contains_key(&("mc-read-bytes", Scope::Node(1))), "no partial sum is written");
    assert!(by.contains_key(&("mc-read-bytes", Scope::Node(0))));
    let _ = fs::remove_dir_all(&root);
}

/// Sapphire Rapids with SNC-2: two nodes per socket, four UPI links with the wider umask.
#[test]
fn spr_with_snc_counts_per_socket() {
    let root = fresh("spr");
    let nodes: &[&[u32]] = &[&[0, 1], &[2, 3], &[4, 5], &[6, 7]];
    topology(&root, 2, 4, nodes);
    cpuinfo(&root, "GenuineIntel", 6, 0x8f, 8);
    for i in 0..4 {
        pmu(
            &root,
            &format!("uncore_upi_{i}"),
            30 + i,
            "0,4",
            &[("event", "config:0-7"), ("umask", "config:8-15,32-55")],
        );
    }
    imc(&root, "uncore_imc_0", 40, "0,4");
    let plan = plan_uncore(&roots(&root), &node_map(nodes));
    let upi: Vec<&UncoreSpec> = plan.specs.iter().filter(|s| s.pmu.starts_with("uncore_upi")).collect();
    assert_eq!(upi.len(), 4 * 2 * 2);
    assert_eq!((upi[0].config, upi[0].scope), ([0x0f02, 0, 0], Scope::Socket(0)));
    assert_eq!((upi[1].cpu, upi[1].scope), (4, Scope::Socket(1)));
    assert!(plan.specs.iter().all(|s| matches!(s.scope, Scope::Socket(_))), "never one node of several");
    let counts = vec![Some(9.0); plan.specs.len()];
    let (by, _) = sum_by_scope(&plan.specs, &counts);
    assert!(close(by[&("link-tx-bytes", Scope::Socket(1))], 4.0 * 9.0 * 64.0 / 9.0));
    assert!(close(by[&("mc-write-bytes", Scope::Socket(0))], 9.0 * 64.0));
    let s = plan.summary();
    assert!(s.contains("uncore_upi: 4 links, Sapphire Rapids (GenuineIntel family 0x6 model 0x8f)"), "{s}");
    assert!(s.contains("from perf's sapphirerapids JSON"), "{s}");
    assert!(s.contains("socket 0 holds nodes 0, 1, socket 1 holds nodes 2, 3 (SNC/NPS"), "{s}");
    assert!(s.contains(", per socket"), "{s}");
    let _ = fs::remove_dir_all(&root);
}

/// Zen 3 (Milan), two sockets, NPS1: amd_df with one cpu per socket in its cpumask.
#[test]
fn zen3_data_fabric_dram_and_xgmi() {
    let root = fresh("zen3");
    let nodes: &[&[u32]] = &[&[0, 1, 2, 3], &[4, 5, 6, 7]];
    topology(&root, 2, 4, nodes);
    cpuinfo(&root, "AuthenticAMD", 25, 0x01, 1);
    pmu(&root, "amd_df", 11, "0,4", &[("event", "config:0-7,32-35,59-60"), ("umask", "config:8-15")]);
    pmu(&root, "amd_l3", 12, "0,4", &[("event", "config:0-7")]);
    let plan = plan_uncore(&roots(&root), &node_map(nodes));
    assert_eq!(plan.specs.len(), 12 * 2);
    let find = |event: &str, cpu: u32| plan.specs.iter().find(|s| s.event == event && s.cpu == cpu).unwrap();
    let ch0 = find("dram_channel_data_controller_0", 0);
    assert_eq!((ch0.ty, ch0.config, ch0.scope, ch0.counter), (11, [0x3807, 0, 0], Scope::Node(0), "mc-bytes"));
    assert_eq!(ch0.bytes_per_count, 64.0);
    // EventCode 0x107: 0x07 in bits 0-7, 0x1 in bits 32-35.
    assert_eq!(find("dram_channel_data_controller_4", 4).config, [0x1_0000_3807, 0, 0]);
    assert_eq!(find("dram_channel_data_controller_7", 4).config, [0x1_0000_38c7, 0, 0]);
    let x0 = find("remote_outbound_data_controller_0", 4);
    assert_eq!((x0.config, x0.scope, x0.counter), ([0x7_0000_02c7, 0, 0], Scope::Node(1), "link-tx-bytes"));
    assert_eq!(x0.bytes_per_count, 32.0);
    assert_eq!(find("remote_outbound_data_controller_3", 0).config, [0x8_0000_0287, 0, 0]);
    let counts: Vec<Option<f64>> = plan.specs.iter().map(|s| Some(if s.cpu == 0 { 2.0 } else { 5.0 })).collect();
    let (by, _) = sum_by_scope(&plan.specs, &counts);
    assert!(close(by[&("mc-bytes", Scope::Node(0))], 8.0 * 2.0 * 64.0));
    assert!(close(by[&("link-tx-bytes", Scope::Node(1))], 4.0 * 5.0 * 32.0));
    let s = plan.summary();
    assert!(s.starts_with("no amd_umc PMU; amd_df: Zen 3 (AuthenticAMD family 0x19 model 0x01)"), "{s}");
    assert!(s.contains("from perf's amdzen3 JSON → mc-bytes (reads and writes together), link-tx-bytes"), "{s}");
    assert!(s.contains("12 events share the data fabric's counters (multiplexed, scaled), per node"), "{s}");
    let _ = fs::remove_dir_all(&root);
}

/// Zen 4 (Genoa), one socket, NPS2: amd_umc_0..3 each counted on cpu 0, per socket.
#[test]
fn zen4_umc_channels_nps2_per_socket() {
    let root = fresh("zen4");
    let nodes: &[&[u32]] = &[&[0, 1], &[2, 3]];
    topology(&root, 1, 4, nodes);
    cpuinfo(&root, "AuthenticAMD", 25, 0x11, 1);
    for i in 0..4 {
        pmu(&root, &format!("amd_umc_{i}"), 50 + i, "0", &[("event", "config:0-7"), ("rdwrmask", "config:8-9")]);
    }
    pmu(&root, "amd_df", 11, "0", &[("event", "config:0-7,32-37"), ("umask", "config:8-15,24-27")]);
    let plan = plan_uncore(&roots(&root), &node_map(nodes));
    assert_eq!(plan.specs.len(), 4 * 2);
    let rd = &plan.specs[0];
    assert_eq!(
        (rd.pmu.as_str(), rd.ty, rd.config, rd.cpu, rd.scope, rd.counter, rd.event),
        ("amd_umc_0", 50, [0x010a, 0, 0], 0, Scope::Socket(0), "mc-read-bytes", "umc_cas_cmd.rd")
    );
    assert_eq!(rd.bytes_per_count, 64.0);
    assert_eq!((plan.specs[1].config, plan.specs[1].counter), ([0x020a, 0, 0], "mc-write-bytes"));
    assert_eq!(plan.specs[7].pmu, "amd_umc_3");
    let counts: Vec<Option<f64>> = (0..8).map(|i| Some(i as f64)).collect();
    let (by, _) = sum_by_scope(&plan.specs, &counts);
    assert!(close(by[&("mc-read-bytes", Scope::Socket(0))], (0.0 + 2.0 + 4.0 + 6.0) * 64.0));
    assert!(close(by[&("mc-write-bytes", Scope::Socket(0))], (1.0 + 3.0 + 5.0 + 7.0) * 64.0));
    assert!(!plan.counts("link-"));
    let s = plan.summary();
    assert!(s.starts_with("amd_umc: 4 channels, Zen 4 (AuthenticAMD family 0x19 model 0x11), umc_cas_cmd.rd/umc_cas_cmd.wr from perf's amdzen4 JSON, 64 bytes per CAS → mc-read-bytes, mc-write-bytes, per socket"), "{s}");
    assert!(s.contains("amd_df present: not used (Zen 4 memory traffic comes from amd_umc"), "{s}");
    assert!(s.ends_with("socket 0 holds nodes 0, 1 (SNC/NPS: the kernel does not say which channel or link serves which node, so these are counted per socket, scope socket)"), "{s}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn unknown_models_are_not_counted_and_say_why() {
    let root = fresh("unknown");
    topology(&root, 1, 2, &[&[0, 1]]);
    cpuinfo(&root, "AuthenticAMD", 0x18, 0x00, 1);
    pmu(&root, "amd_df", 11, "0", &[("event", "config:0-7,32-35,59-60"), ("umask", "config:8-15")]);
    let plan = plan_uncore(&roots(&root), &node_map(&[&[0, 1]]));
    assert!(plan.specs.is_empty() && plan.any_pmu() && plan.failure().is_none());
    assert_eq!(
        plan.summary(),
        "no amd_umc PMU; amd_df present but AuthenticAMD family 0x18 model 0x00 has no known encoding: not counted"
    );
    // An Intel model outside perf's UPI tables, and a kernel with QPI.
    cpuinfo(&root, "GenuineIntel", 6, 0xaf, 3);
    fs::remove_dir_all(root.join("sys/bus/event_source/devices/amd_df")).unwrap();
    pmu(&root, "uncore_upi_0", 20, "0", &[("event", "config:0-7"), ("umask", "config:8-15")]);
    pmu(&root, "uncore_qpi_0", 21, "0", &[("event", "config:0-7")]);
    let plan = plan_uncore(&roots(&root), &node_map(&[&[0, 1]]));
    assert!(plan.specs.is_empty());
    assert_eq!(
        plan.summary(),
        "no uncore_imc PMU; uncore_upi present but GenuineIntel family 0x6 model 0xaf has no known encoding: not counted; \
         uncore_qpi present (QPI, before Skylake-SP): no encoding here: not counted"
    );
    // No /proc/cpuinfo at all.
    fs::remove_file(root.join("proc/cpuinfo")).unwrap();
    let plan = plan_uncore(&roots(&root), &node_map(&[&[0, 1]]));
    assert!(plan.summary().contains("uncore_upi present but the CPU model is unknown (no /proc/cpuinfo): not counted"));
    assert!(UncoreCounters::start(&roots(&root), &node_map(&[&[0, 1]])).is_none(), "nothing to count, nothing failed");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn bad_sysfs_files_are_named() {
    let root = skx("bad");
    put(&root, "sys/bus/event_source/devices/uncore_imc_1/events/cas_count_read.unit", "furlongs\n");
    let plan = plan_uncore(&roots(&root), &node_map(SKX_NODES));
    let e = plan.failure().unwrap();
    assert_eq!(e, "uncore_imc: uncore_imc_1/events/cas_count_read.unit \"furlongs\" is not a byte unit");
    assert!(plan.specs.iter().all(|s| s.pmu.starts_with("uncore_upi")), "the links are still planned");
    // Without the links, nothing is left: the source fails with the reason.
    for i in 0..3 {
        fs::remove_dir_all(root.join(format!("sys/bus/event_source/devices/uncore_upi_{i}"))).unwrap();
    }
    match UncoreCounters::start(&roots(&root), &node_map(SKX_NODES)) {
        Some(Err(e)) => assert!(e.contains("is not a byte unit"), "{e}"),
        _ => panic!("expected a failure"),
    }
    // A socket that cannot be told on a machine with several nodes: not attributed.
    let root2 = skx("nosocket");
    fs::remove_dir_all(root2.join("sys/devices/system/cpu/cpu4")).unwrap();
    let plan = plan_uncore(&roots(&root2), &node_map(SKX_NODES));
    assert!(plan.failure().unwrap().contains("cannot tell which socket cpu 4 belongs to"), "{:?}", plan.failure());
    let _ = fs::remove_dir_all(&root);
    let _ = fs::remove_dir_all(&root2);
    // No uncore PMU (our machines): nothing to plan.
    let empty = fresh("none");
    let plan = plan_uncore(&roots(&empty), &|_| 0);
    assert!(plan.specs.is_empty() && !plan.any_pmu());
    let _ = fs::remove_dir_all(&empty);
}

#[test]
fn an_unopenable_event_names_pmu_counter_event_and_cpu() {
    let root = skx("open");
    let mut specs = plan_uncore(&roots(&root), &node_map(SKX_NODES)).specs;
    specs.truncate(1);
    specs[0].ty = 0x7fff_0000; // no such PMU on this kernel
    let e = UncoreCounters::open(specs).err().expect("cannot open");
    assert!(e.starts_with("cannot open uncore_imc_0/mc-read-bytes (cas_count_read) on cpu 0:"), "{e}");
    let u: Option<Result<UncoreCounters, String>> = Some(Err(e.clone()));
    let st = source_status(&u, 100).unwrap();
    assert_eq!((st.status.as_str(), st.reason.as_deref()), ("failed", Some(e.as_str())));
    let mut caps: Vec<Capability> = ["memory-bandwidth", "link-bandwidth"]
        .iter()
        .map(|m| Capability { metric: (*m).into(), status: "measured".into(), reason: "probe".into() })
        .collect();
    update_capabilities(&mut caps, &u, true);
    for c in &caps {
        assert_eq!(c.status, "unavailable");
        assert!(c.reason.starts_with("uncore counters: cannot open"), "{c:?}");
    }
    let mut caps2 = caps.clone();
    caps2.iter_mut().for_each(|c| c.status = "measured".into());
    update_capabilities(&mut caps2, &None, false);
    assert!(caps2.iter().all(|c| c.status == "unavailable" && c.reason.contains("--no-uncore")));
    let _ = fs::remove_dir_all(&root);
}

/// A recording's side, without a PMU: rows as `read` leaves them, written into the table,
/// the source reason and the capabilities.
#[test]
fn recorded_rows_source_reason_and_capabilities() {
    let root = skx("recorded");
    let plan = plan_uncore(&roots(&root), &node_map(SKX_NODES));
    let summary = plan.summary();
    let u = UncoreCounters {
        specs: plan.specs,
        counters: Vec::new(),
        rows: vec![
            (0, "mc-read-bytes", Scope::Node(0), 0.0),
            (0, "link-tx-bytes", Scope::Node(1), 0.0),
            (100, "mc-read-bytes", Scope::Node(0), 6400.0),
            (100, "link-tx-bytes", Scope::Node(1), 640.0),
            (100, "mc-bytes", Scope::Socket(1), 128.0),
        ],
        multiplexed_reads: 3,
        incomplete_sums: 0,
        summary,
    };
    let mut c = crate::trace::Counters::default();
    assert_eq!(u.write_counters(&mut c), 5);
    assert_eq!(c.time_us, vec![0, 0, 100, 100, 100]);
    let scopes: Vec<&str> = c.scope.keys.iter().map(|&k| c.scope.values[k as usize].as_str()).collect();
    assert_eq!(scopes, vec!["node", "node", "node", "node", "socket"]);
    assert_eq!(c.scope_id, vec![0, 1, 0, 1, 1]);
    assert_eq!(c.value[3], 640.0);
    let st = source_status(&Some(Ok(u)), 100).unwrap();
    assert_eq!((st.status.as_str(), st.interval_ms), ("used", Some(100)));
    let reason = st.reason.unwrap();
    assert!(
        reason.starts_with("system-wide uncore counting of uncore_imc_0, uncore_imc_1, uncore_upi_0, uncore_upi_1, uncore_upi_2 (link-rx-bytes, link-tx-bytes, mc-read-bytes, mc-write-bytes), cumulative bytes (5 rows); encodings from the kernel's sysfs events and Linux perf's event JSON, not yet checked on hardware by this project: uncore_imc: 2 PMUs"),
        "{reason}"
    );
    assert!(reason.ends_with("; 3 reads were multiplexed and scaled"), "{reason}");
    let u = UncoreCounters {
        specs: plan_uncore(&roots(&root), &node_map(SKX_NODES)).specs,
        counters: Vec::new(),
        rows: vec![(100, "mc-read-bytes", Scope::Node(0), 64.0)],
        multiplexed_reads: 0,
        incomplete_sums: 0,
        summary: String::new(),
    };
    let mut caps: Vec<Capability> = ["memory-bandwidth", "link-bandwidth"]
        .iter()
        .map(|m| Capability { metric: (*m).into(), status: "measured".into(), reason: "probe".into() })
        .collect();
    update_capabilities(&mut caps, &Some(Ok(u)), true);
    assert_eq!(caps[0].status, "measured");
    assert_eq!(caps[0].reason, "memory-controller bytes from uncore counters (1 rows of mc-read-bytes, mc-write-bytes; whole machine, not only the recorded process; encodings not yet checked on hardware)");
    assert_eq!(
        (caps[1].status.as_str(), caps[1].reason.as_str()),
        ("unavailable", "uncore interconnect link bytes (UPI / xGMI data): no rows were read")
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn readings_since_gives_only_the_new_readings() {
    let root = skx("recorded");
    let mut u = UncoreCounters {
        specs: plan_uncore(&roots(&root), &node_map(SKX_NODES)).specs,
        counters: Vec::new(),
        rows: vec![(0, "mc-read-bytes", Scope::Node(0), 0.0), (100, "mc-read-bytes", Scope::Node(0), 64.0)],
        multiplexed_reads: 0,
        incomplete_sums: 0,
        summary: String::new(),
    };
    assert_eq!(u.readings_since(0).len(), 2);
    let seen = u.readings_since(0).len();
    u.rows.push((200, "mc-read-bytes", Scope::Node(0), 128.0));
    assert_eq!(u.readings_since(seen), &[(200, "mc-read-bytes", Scope::Node(0), 128.0)]);
    assert!(u.readings_since(3).is_empty());
    assert!(u.readings_since(99).is_empty(), "past the end: nothing, no panic");
}
