//! Finding the program a command names, the way execvp would (a PATH search for names without a
//! slash). Shared by the recorder (launching a command) and `numascope run` (apply/launch/process.rs).

use std::path::{Path, PathBuf};

/// Why a program was not found.
#[derive(Debug)]
pub enum FindError {
    Empty,
    NotFound,
    /// It exists but is not an executable file.
    NotExecutable,
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The program `name` runs: the path itself when it has a slash, else the first executable file
/// of that name in `$PATH` (default `/usr/local/bin:/usr/bin:/bin`).
pub fn find_program(name: &str) -> Result<PathBuf, FindError> {
    if name.is_empty() {
        return Err(FindError::Empty);
    }
    if name.contains('/') {
        let p = PathBuf::from(name);
        if !p.exists() {
            return Err(FindError::NotFound);
        }
        if !is_executable(&p) {
            return Err(FindError::NotExecutable);
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(name);
        if is_executable(&cand) {
            return Ok(cand);
        }
    }
    Err(FindError::NotFound)
}
