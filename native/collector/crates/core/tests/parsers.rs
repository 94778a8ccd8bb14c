//! Parsers of /proc and /sys files, on real files from real machines and on handwritten input.

mod common;

use numascope_core::procfs::*;

#[test]
fn numa_maps_linux_doc_4node_example() {
    let path = common::shared_dir().join("data/numa_maps/linux-doc-proc.rst_4node-example.numa_maps");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("cannot read the numa_maps fixture {}: {e} (is ../shared beside the repository?)", path.display())
    });
    let e = parse_numa_maps(&text);
    assert_eq!(e.len(), 16, "one entry per mapping line");

    assert_eq!(e[0].start, 0x0040_0000);
    assert_eq!(e[0].policy, "default");
    assert_eq!(e[0].file.as_deref(), Some("/usr/local/bin/app"));
    assert_eq!(e[0].mapped, Some(1));
    assert_eq!(e[0].active, Some(0));
    assert_eq!(e[0].nodes, vec![(3, 1)]);
    assert_eq!(e[0].kernel_page_size_kb, Some(4));

    // ld.so: pages on two nodes.
    assert_eq!(e[2].start, 0x32_0600_0000);
    assert_eq!(e[2].nodes, vec![(0, 24), (3, 2)]);
    assert_eq!(e[2].mapmax, Some(6));
    assert_eq!(e[2].total_pages(), 26);

    // A libc mapping with no resident pages: no N entries, no page size.
    assert_eq!(e[7].start, 0x32_0698_b000);
    assert!(e[7].nodes.is_empty());
    assert_eq!(e[7].kernel_page_size_kb, None);
    assert_eq!(e[7].page_size_bytes(), 4096);

    // Anonymous mapping (no file).
    assert_eq!(e[5].file, None);
    assert_eq!(e[5].anon, Some(1));
    assert_eq!(e[5].dirty, Some(1));

    // Huge page mapping with an escaped path: "\040" is a space.
    let huge = &e[13];
    assert_eq!(huge.start, 0x7f4d_c120_0000);
    assert_eq!(huge.file.as_deref(), Some("/anon_hugepage (deleted)"));
    assert!(huge.huge);
    assert_eq!(huge.kernel_page_size_kb, Some(2048));
    assert_eq!(huge.page_size_bytes(), 2 * 1024 * 1024);

    // Stack marker.
    assert!(e[14].stack);
    assert_eq!(e[14].nodes, vec![(3, 3)]);
    assert_eq!(region_kind(None, Some(&e[14])), "stack");
}

#[test]
fn numa_maps_interleave_thp_example() {
    let path =
        common::shared_dir().join("data/numa_maps/linux-mm-2013-09_khugepaged_4node-interleave-thp.numa_maps.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // The file has comment lines (starting with '#'): they are skipped.
    let e = parse_numa_maps(&text);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].policy, "interleave:0-3");
    assert_eq!(e[0].nodes, vec![(0, 435), (1, 435), (2, 435), (3, 50098)]);
    assert_eq!(e[1].nodes, vec![(0, 12723), (1, 12723), (2, 13235), (3, 12722)]);
    assert_eq!(e[1].anon, Some(51403));
}

#[test]
fn numa_maps_handwritten_policies_and_markers() {
    let text = "\
55d4c8a00000 default heap anon=12 dirty=12 N0=8 N1=4 kernelpagesize_kB=4
7f0000000000 bind:1 anon=512 dirty=512 N1=512 kernelpagesize_kB=4
7f1000000000 prefer (many):0-1 anon=3 dirty=3 N0=3 kernelpagesize_kB=4
7f2000000000 weighted interleave:0-3 anon=4 dirty=4 N0=1 N1=1 N2=1 N3=1 kernelpagesize_kB=4
7f3000000000 interleave=static:0,2 file=/dev/shm/my\\040shm\\075x mapped=2 N0=1 N2=1 kernelpagesize_kB=4
7f4000000000 prefer=relative:1 file=/tmp/tab\\011name swapcache=1 writeback=2 N1=1 kernelpagesize_kB=4

not-an-address default
";
    let e = parse_numa_maps(text);
    assert_eq!(e.len(), 6);
    assert!(e[0].heap);
    assert_eq!(region_kind(Some("[heap]"), Some(&e[0])), "heap");
    assert_eq!(e[0].nodes, vec![(0, 8), (1, 4)]);
    assert_eq!(e[1].policy, "bind:1");
    assert_eq!(e[2].policy, "prefer (many):0-1");
    assert_eq!(e[2].nodes, vec![(0, 3)]);
    assert_eq!(e[3].policy, "weighted interleave:0-3");
    assert_eq!(e[3].nodes.len(), 4);
    assert_eq!(e[4].policy, "interleave=static:0,2");
    assert_eq!(e[4].file.as_deref(), Some("/dev/shm/my shm=x"));
    assert_eq!(region_kind(e[4].file.as_deref(), Some(&e[4])), "shm");
    assert_eq!(e[5].file.as_deref(), Some("/tmp/tab\tname"));
    assert_eq!(e[5].swapcache, Some(1));
    assert_eq!(e[5].writeback, Some(2));
}

#[test]
fn unescape_octal_edge_cases() {
    assert_eq!(unescape_octal("a\\040b"), "a b");
    assert_eq!(unescape_octal("\\012"), "\n");
    assert_eq!(unescape_octal("back\\slash"), "back\\slash");
    assert_eq!(unescape_octal("end\\04"), "end\\04");
    assert_eq!(unescape_octal("caf\\303\\251"), "café");
}

#[test]
fn maps_lines() {
    let text = "\
55d4c7a00000-55d4c7a21000 r--p 00000000 fd:01 1835010                    /usr/bin/cat
55d4c8a00000-55d4c8a21000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000800000 rw-p 00000000 00:00 0 
7f1000000000-7f1000001000 rw-s 00000000 00:05 42                         /dev/shm/with space (deleted)
7f2000000000-7f2000001000 rw-p 00000000 00:00 0                          [anon:my buffer]
7ffd12345000-7ffd12366000 rw-p 00000000 00:00 0                          [stack]
7ffd123a0000-7ffd123a2000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";
    let m = parse_maps(text);
    assert_eq!(m.len(), 8);
    assert_eq!(m[0].start, 0x55d4_c7a0_0000);
    assert_eq!(m[0].end, 0x55d4_c7a2_1000);
    assert_eq!(m[0].perms, "r--p");
    assert_eq!(m[0].dev, "fd:01");
    assert_eq!(m[0].inode, 1_835_010);
    assert_eq!(m[0].path.as_deref(), Some("/usr/bin/cat"));
    assert_eq!(region_kind(m[0].path.as_deref(), None), "file");
    assert_eq!(region_kind(m[1].path.as_deref(), None), "heap");
    assert_eq!(m[2].path, None);
    assert_eq!(region_kind(m[2].path.as_deref(), None), "anon");
    assert_eq!(m[3].path.as_deref(), Some("/dev/shm/with space (deleted)"));
    assert_eq!(region_kind(m[3].path.as_deref(), None), "shm");
    assert_eq!(region_kind(m[4].path.as_deref(), None), "anon");
    assert_eq!(region_kind(m[5].path.as_deref(), None), "stack");
    assert_eq!(region_kind(m[6].path.as_deref(), None), "vdso");
    assert_eq!(m[7].start, 0xffff_ffff_ff60_0000);
    assert_eq!(region_kind(m[7].path.as_deref(), None), "vdso");
}

#[test]
fn task_stat_with_awkward_comm() {
    // comm with spaces and parentheses; field 22 = 12345, field 39 = 3.
    let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
    fields[0] = "R".into();
    fields[22 - 3] = "12345".into();
    fields[39 - 3] = "3".into();
    let line = format!("4242 (my (weird) name) {}\n", fields.join(" "));
    let s = parse_task_stat(&line).unwrap();
    assert_eq!(s.pid, 4242);
    assert_eq!(s.comm, "my (weird) name");
    assert_eq!(s.state, 'R');
    assert_eq!(s.start_time_ticks, 12345);
    assert_eq!(s.processor, 3);
    assert_eq!(parse_task_stat("garbage"), None);
}

#[test]
fn task_stat_of_this_process() {
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    let s = parse_task_stat(&text).unwrap();
    assert_eq!(s.pid as i64, tid);
    let ncpu = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) } as i32;
    assert!(s.processor >= 0 && s.processor < ncpu.max(1) * 64);
    assert!(s.start_time_ticks > 0);
}

#[test]
fn sched_nr_migrations() {
    let text = "\
cat (1234, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :      12345678.901234
se.vruntime                                  :            12.345678
se.nr_migrations                             :                    7
nr_switches                                  :                   12
";
    assert_eq!(parse_sched_nr_migrations(text), Some(7));
    assert_eq!(parse_sched_nr_migrations("nothing here"), None);
    // The live file, where the kernel has it (CONFIG_SCHED_DEBUG).
    if let Ok(live) = std::fs::read_to_string("/proc/self/sched") {
        assert!(parse_sched_nr_migrations(&live).is_some(), "se.nr_migrations missing from /proc/self/sched");
    }
}

#[test]
fn vmstat_and_numastat() {
    let text = "nr_free_pages 12345\nnuma_hit 100\nnuma_miss 2\nnuma_foreign 2\nnuma_interleave 5\nnuma_local 98\nnuma_other 2\nnuma_pages_migrated 0\npgmigrate_success 3\npgmigrate_fail 1\npgfault 999\n";
    let v = parse_vmstat_numa(text);
    let names: Vec<&str> = v.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "numa_hit",
            "numa_miss",
            "numa_foreign",
            "numa_interleave",
            "numa_local",
            "numa_other",
            "numa_pages_migrated",
            "pgmigrate_success",
            "pgmigrate_fail"
        ]
    );
    assert_eq!(v[0].1, 100);
    let live = std::fs::read_to_string("/proc/vmstat").unwrap();
    let live = parse_vmstat_numa(&live);
    if std::path::Path::new("/sys/devices/system/node/node0").exists() {
        assert!(live.iter().any(|(k, _)| k == "numa_hit"), "numa_hit missing from /proc/vmstat on a NUMA kernel");
        let ns = read_node_numastat(std::path::Path::new("/sys"), 0).unwrap();
        assert!(ns.iter().any(|(k, _)| k == "numa_hit"));
        let mi = read_node_meminfo(std::path::Path::new("/sys"), 0).unwrap();
        assert!(mi["MemTotal"] > 0 && mi.contains_key("MemFree"));
    }
}

#[test]
fn numa_maps_of_this_process_matches_maps() {
    let Ok(numa) = std::fs::read_to_string("/proc/self/numa_maps") else {
        numascope_testsupport::skip_outside_ci(format_args!("no /proc/self/numa_maps (kernel without CONFIG_NUMA)"));
        return;
    };
    let maps = parse_maps(&std::fs::read_to_string("/proc/self/maps").unwrap());
    let numa = parse_numa_maps(&numa);
    assert!(!numa.is_empty());
    let starts: std::collections::HashSet<u64> = maps.iter().map(|m| m.start).collect();
    let matched = numa.iter().filter(|n| starts.contains(&n.start)).count();
    assert!(matched * 10 >= numa.len() * 9, "numa_maps and maps should list the same mappings");
}

#[test]
fn status_fields_uids_and_thread_group() {
    let status = "Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4243\nUid:\t1000\t1001\t1002\t1003\nCapEff:\t000001ffffffffff\nThreads:\t3\n";
    assert_eq!(status_field(status, "Name"), Some("bash"));
    assert_eq!(status_field(status, "Tgid"), Some("4242"));
    assert_eq!(status_field(status, "Pid"), Some("4243"));
    // A field name is matched whole: "Pi" is not "Pid", "Thread" not "Threads".
    assert_eq!(status_field(status, "Pi"), None);
    assert_eq!(status_field(status, "Thread"), None);
    assert_eq!(status_uids(status), Some([1000, 1001, 1002, 1003]));
    assert_eq!(status_uids("Uid:\t1000\t1001\n"), None, "a Uid line with fewer than four ids");
    assert_eq!(status_uids("Uid:\t1000\tx\t1\t2\n"), None);
    assert_eq!(status_uids("Name:\tx\n"), None);
    // This process: its own thread group, a thread of it names it too, no thread gives None.
    let me = std::process::id() as i32;
    let proc = std::path::Path::new("/proc");
    assert_eq!(thread_group(proc, me), Some(me));
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = done_rx.recv();
    });
    let tid = rx.recv().unwrap();
    assert_ne!(tid, me);
    assert_eq!(thread_group(proc, tid), Some(me), "a thread of this process");
    done_tx.send(()).unwrap();
    worker.join().unwrap();
    assert_eq!(thread_group(proc, i32::MAX), None, "no such thread (above any pid_max)");
    assert_eq!(process_uid(proc, me), Some(unsafe { libc::getuid() }));
}
