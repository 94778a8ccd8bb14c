//! The /proc poller records each mapping's permissions (`regions.prot`): the maps field as
//! printed, unknown when it is not the kernel's four characters, and a new region row when an
//! mprotect of the whole mapping changes them.

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

#[test]
fn regions_keep_the_maps_permissions() {
    let tmp = common::TempDir::new("poller-prot");
    let proc_ = tmp.0.join("proc");
    let pid = 9;
    write(&proc_.join(format!("{pid}/task/{pid}/stat")), &stat_line(pid, "server", 0));
    let maps = |anon_perms: &str| {
        format!(
            "00400000-00401000 r-xp 00000000 fd:01 42 /usr/bin/server\n\
             7f0000000000-7f0040000000 r--s 00000000 fd:01 77 /models/llama 70b.gguf\n\
             7f1000000000-7f1000800000 {anon_perms} 00000000 00:00 0 \n\
             7f2000000000-7f2000001000 ---p 00000000 00:00 0 \n"
        )
    };
    write(&proc_.join(format!("{pid}/maps")), &maps("rw-p"));
    let mut p = Poller::new(PollerConfig {
        pid,
        interval: Duration::from_millis(100),
        start_ns: numascope_core::time::mono_now_ns(),
        roots: Roots { sys: tmp.0.join("sys"), proc: proc_.clone() },
        cpu_to_node: vec![0],
        node_ids: vec![0],
        attached: true,
        numa_maps: false,
    });
    p.poll(false);
    let prots: Vec<Option<&str>> = p.data.regions.iter().map(|r| r.prot.as_deref()).collect();
    assert_eq!(prots, vec![Some("r-xp"), Some("r--s"), Some("rw-p"), Some("---p")]);
    assert_eq!(p.data.regions[1].kind, "file");
    assert_eq!(p.data.regions[1].path.as_deref(), Some("/models/llama 70b.gguf"));

    // mprotect(PROT_READ) of the whole anonymous mapping: same range, new permissions, new row;
    // a field the collector does not understand is recorded as unknown.
    write(&proc_.join(format!("{pid}/maps")), &maps("r--p"));
    p.poll(false);
    write(&proc_.join(format!("{pid}/maps")), &maps("r??p"));
    p.poll(false);
    let anon: Vec<Option<&str>> =
        p.data.regions.iter().filter(|r| r.start == 0x7f10_0000_0000).map(|r| r.prot.as_deref()).collect();
    assert_eq!(anon, vec![Some("rw-p"), Some("r--p"), None]);
    assert_eq!(p.data.regions.len(), 6, "the unchanged mappings keep their rows");
}
