//! Helpers shared by the CLI's integration tests: the binaries under test and temp dirs.
#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;
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
