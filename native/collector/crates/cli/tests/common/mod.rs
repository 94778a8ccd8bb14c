//! Helpers shared by the CLI's integration tests: the binaries under test and temp dirs.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `numascope` binary cargo built for these tests.
pub fn numascope() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_numascope"))
}

/// The testload binary: `$NUMASCOPE_TESTLOAD`, else next to `numascope` in the target dir
/// (built by `cargo test` of the workspace; built here with cargo if missing).
pub fn testload() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        if let Some(p) = std::env::var_os("NUMASCOPE_TESTLOAD") {
            return PathBuf::from(p);
        }
        let dir = numascope().parent().unwrap().to_path_buf();
        let p = dir.join("numascope-testload");
        if !p.exists() {
            let cargo = option_env!("CARGO").unwrap_or("cargo");
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "-p", "numascope-testload"]).current_dir(env!("CARGO_MANIFEST_DIR"));
            if dir.ends_with("release") {
                cmd.arg("--release");
            }
            let st = cmd.status().expect("run cargo to build numascope-testload");
            assert!(st.success(), "building numascope-testload failed");
        }
        assert!(p.exists(), "{} not found: run `cargo build -p numascope-testload` first", p.display());
        p
    })
    .clone()
}

/// The shim next to `numascope`, built (or rebuilt when older than its sources) with cargo.
pub fn shim() -> PathBuf {
    let p = numascope().parent().unwrap().join("libnumascope_allocshim.so");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../allocshim/src");
    let newest_src =
        std::fs::read_dir(&src).unwrap().flatten().filter_map(|e| e.metadata().ok()?.modified().ok()).max().unwrap();
    let stale = std::fs::metadata(&p).and_then(|m| m.modified()).map_or(true, |t| t < newest_src);
    if stale {
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "numascope-allocshim", "--lib"]).current_dir(env!("CARGO_MANIFEST_DIR"));
        if p.parent().unwrap().ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().expect("run cargo").success(), "building the allocation shim failed");
    }
    assert!(p.is_file(), "{} missing", p.display());
    p
}

/// A temp dir removed on drop; the tag and the test process's pid keep concurrent tests apart.
pub struct Tmp(pub PathBuf);
impl Tmp {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("numascope-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
