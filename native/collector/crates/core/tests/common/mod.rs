//! Helpers shared by the core integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// The project's `shared/` folder (beside the repository): `$NUMASCOPE_SHARED`, else the first
/// ancestor of this crate that has a `shared/data` folder.
pub fn shared_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("NUMASCOPE_SHARED") {
        return PathBuf::from(p);
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for a in here.ancestors() {
        let cand = a.join("shared");
        if cand.join("data").is_dir() {
            return cand;
        }
    }
    panic!(
        "cannot find the shared/ folder (expected ../shared beside the repository, with data/numa_maps/); \
         set NUMASCOPE_SHARED=/path/to/shared"
    );
}

/// A fresh temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("numascope-{tag}-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
