//! Every writer of trace files goes through `trace::writer::write_trace`, which never follows a
//! planted name (issue 19): here for `numascope import` (core `perfdata::import_to_file`). The
//! recorder (CLI, serve, napi binding: all core `record`) is tested end to end in
//! crates/cli/tests/record.rs.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

fn shared_perfdata(name: &str) -> PathBuf {
    let base = std::env::var_os("NUMASCOPE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../../shared"));
    base.join("data/perfdata").join(name)
}

#[test]
fn import_does_not_follow_a_planted_partial_symlink() {
    let input = shared_perfdata("intel-ivb-ep-4s_xeon-e5-4610v2_perf-mem-load_numatop-fork.perf.data");
    assert!(input.exists(), "{} missing (set NUMASCOPE_SHARED to the shared/ folder)", input.display());
    let dir = std::env::temp_dir().join(format!("numascope-safe-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let out = dir.join("imported.numascope");
    // the name the old writer used (`path.with_extension("numascope.partial")`)
    symlink(&victim, dir.join("imported.numascope.partial")).unwrap();
    numascope_core::perfdata::import_to_file(&input, &out).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n", "the victim was not written");
    numascope_core::trace::reader::read_trace(&out).unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, vec!["imported.numascope", "imported.numascope.partial", "victim"]);
    let _ = std::fs::remove_dir_all(&dir);
}
