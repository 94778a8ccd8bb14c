//! The /proc poller on a fake /proc and /sys tree: threads, placements, migrations, regions,
//! numa_maps snapshots and counters.

mod common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use numascope_core::sources::procfs::{Poller, PollerConfig};
use numascope_core::topology::Roots;

fn write(p: &Path, text: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn stat_line(tid: i32, comm: &str, cpu: i32) -> String {
    let mut f: Vec<String> = (3..=52).map(|_| "0".to_string()).collect();
    f[0] = "S".into();
    f[22 - 3] = "777".into();
    f[39 - 3] = cpu.to_string();
    format!("{tid} ({comm}) {}\n", f.join(" "))
}

fn sched(n: u64) -> String {
    format!("x (1, #threads: 2)\n---\nse.exec_start : 1.0\nse.nr_migrations : {n}\n")
}

#[test]
fn poller_on_a_fake_tree() {
    let tmp = common::TempDir::new("poller");
    let proc_ = tmp.0.join("proc");
    let sys = tmp.0.join("sys");
    let pid = 100;
    let task = |tid: i32| proc_.join(format!("{pid}/task/{tid}"));
    write(&task(100).join("stat"), &stat_line(100, "main", 0));
    write(&task(100).join("sched"), &sched(5));
    write(&task(101).join("stat"), &stat_line(101, "worker one", 2));
    write(&task(101).join("sched"), &sched(1));
    write(
        &proc_.join(format!("{pid}/maps")),
        "00400000-00401000 r-xp 00000000 fd:01 42 /usr/bin/app\n\
         7f0000000000-7f0000800000 rw-p 00000000 00:00 0 \n\
         7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n",
    );
    write(
        &proc_.join(format!("{pid}/numa_maps")),
        "00400000 default file=/usr/bin/app mapped=1 N0=1 kernelpagesize_kB=4\n\
         7f0000000000 interleave:0-1 anon=2048 dirty=2048 N0=1024 N1=1024 kernelpagesize_kB=4\n\
         7ffd00000000 default stack anon=3 dirty=3 N1=3 kernelpagesize_kB=4\n",
    );
    write(&proc_.join("vmstat"), "nr_free_pages 1\nnuma_hit 10\nnuma_miss 1\npgmigrate_success 2\n");
    for n in 0..2 {
        let d = sys.join(format!("devices/system/node/node{n}"));
        write(&d.join("numastat"), "numa_hit 5\nnuma_miss 0\nnuma_foreign 0\n");
        write(
            &d.join("meminfo"),
            &format!("Node {n} MemTotal: 100 kB\nNode {n} MemFree: 40 kB\nNode {n} MemUsed: 60 kB\n"),
        );
    }
    let cfg = PollerConfig {
        pid,
        interval: Duration::from_millis(100),
        start_ns: numascope_core::time::mono_now_ns(),
        roots: Roots { sys, proc: proc_.clone() },
        cpu_to_node: vec![0, 0, 1, 1],
        node_ids: vec![0, 1],
        attached: true,
        numa_maps: true,
    };
    let mut p = Poller::new(cfg);
    p.poll(false);
    // Worker moves from cpu 2 (node 1) to cpu 1 (node 0); main thread exits; a new thread starts.
    write(&task(101).join("stat"), &stat_line(101, "worker one", 1));
    write(&task(101).join("sched"), &sched(4));
    fs::remove_dir_all(task(100)).unwrap();
    write(&task(102).join("stat"), &stat_line(102, "late", 3));
    write(&task(102).join("sched"), &sched(2));
    p.poll(true);
    let d = &p.data;

    assert_eq!(d.threads.len(), 3);
    let w = &d.threads[&101];
    assert_eq!(w.name, "worker one");
    assert_eq!(w.last_cpu, 1);
    assert_eq!(w.migrations(), 3, "attached: delta from the first observation");
    let late = &d.threads[&102];
    assert_eq!(late.migrations(), 2, "started during the capture: counted from zero");
    assert!(!d.threads[&100].alive);

    // Placements: 2 threads in poll 1, 2 in poll 2.
    assert_eq!(d.placements.len(), 4);
    assert!(d.placements.contains(&(d.placements[0].0, 101, 2, 1)));
    let kinds: Vec<&str> = d.events.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&"thread-migration"));
    assert!(kinds.contains(&"thread-exit"));
    assert!(kinds.contains(&"thread-start"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "thread-start").count(),
        1,
        "threads present at attach are not 'started'"
    );
    let mig = d.events.iter().find(|e| e.kind == "thread-migration").unwrap();
    assert_eq!(mig.value, 1);
    assert_eq!(mig.tid, Some(101));
    assert!(mig.detail.contains("cpu 2 (node 1) to cpu 1 (node 0)"), "{}", mig.detail);

    // Regions: three mappings (unchanged between polls), two snapshots.
    assert_eq!(d.regions.len(), 3);
    assert_eq!(d.numa_maps_snapshots, 2);
    assert_eq!(d.regions[0].kind, "file");
    assert_eq!(d.regions[1].kind, "anon");
    assert_eq!(d.regions[1].policy, "interleave:0-1");
    assert_eq!(d.regions[1].end, 0x7f00_0080_0000);
    assert_eq!(d.regions[2].kind, "stack");
    let rp = &d.region_placements;
    assert_eq!(rp.time_us.len(), 2 * 4);
    let anon_rows: Vec<(i8, u32)> =
        (0..rp.time_us.len()).filter(|&i| rp.region[i] == 1).map(|i| (rp.node[i], rp.pages[i])).collect();
    assert_eq!(anon_rows, vec![(0, 1024), (1, 1024), (0, 1024), (1, 1024)]);
    let last = d.last_region_nodes();
    assert_eq!(last[&2], vec![(1, 3)]);

    // Counters: system vmstat (numa_* and pgmigrate_* only), per-node numastat and memory.
    let c = &d.counters;
    let names: Vec<(String, String, i32)> = (0..c.time_us.len())
        .map(|i| (c.counter.get(i).to_string(), c.scope.get(i).to_string(), c.scope_id[i]))
        .collect();
    assert!(names.contains(&("numa_hit".into(), "system".into(), -1)));
    assert!(names.contains(&("pgmigrate_success".into(), "system".into(), -1)));
    assert!(!names.iter().any(|(n, _, _)| n == "nr_free_pages"));
    assert!(names.contains(&("numa_hit".into(), "node".into(), 1)));
    assert!(names.contains(&("mem_free_bytes".into(), "node".into(), 0)));
    let used = (0..c.time_us.len()).find(|&i| c.counter.get(i) == "mem_used_bytes").unwrap();
    assert_eq!(c.value[used], 60.0 * 1024.0);

    // The process disappears: the poller notices.
    fs::remove_dir_all(proc_.join(format!("{pid}"))).unwrap();
    p.poll(false);
    assert!(p.data.process_gone);
    assert!(!p.data.threads[&101].alive);
}

#[test]
fn regions_without_numa_maps() {
    let tmp = common::TempDir::new("poller-nonuma");
    let proc_ = tmp.0.join("proc");
    write(&proc_.join("7/task/7/stat"), &stat_line(7, "x", 0));
    write(&proc_.join("7/maps"), "00400000-00401000 r-xp 00000000 fd:01 42 /usr/bin/app\n");
    let mut p = Poller::new(PollerConfig {
        pid: 7,
        interval: Duration::from_millis(100),
        start_ns: numascope_core::time::mono_now_ns(),
        roots: Roots { sys: tmp.0.join("sys"), proc: proc_ },
        cpu_to_node: vec![0],
        node_ids: vec![0],
        attached: false,
        numa_maps: false,
    });
    p.poll(false);
    assert_eq!(p.data.regions.len(), 1);
    assert_eq!(p.data.regions[0].policy, "unknown");
    assert!(p.data.region_placements.time_us.is_empty());
    assert_eq!(p.data.numa_maps_snapshots, 0);
    assert!(p.data.sched_unavailable);
    assert_eq!(p.data.threads[&7].migrations(), -1);
}
