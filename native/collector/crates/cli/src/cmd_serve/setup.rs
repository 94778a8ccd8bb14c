//! Starting the server: the web UI directory, the out directory (private when created), and the
//! limit on open files.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ids::random_hex;

/// The web UI's directory: `--web-dir` (it must hold an `index.html`), else the one found by
/// [`find_web_dir`], else none (the API only). `Err` is the message for `--web-dir`.
pub(super) fn web_dir(given: Option<&Path>) -> Result<Option<PathBuf>, String> {
    let Some(d) = given else { return Ok(find_web_dir()) };
    let c = d.canonicalize().map_err(|e| format!("--web-dir {}: {e}", d.display()))?;
    if !c.join("index.html").is_file() {
        return Err(format!("--web-dir {}: no index.html there", d.display()));
    }
    Ok(Some(c))
}

/// The directory for the traces of recordings: `--output`, prepared by [`prepare_out_dir`] (its
/// warning printed), else a new private (0700) directory under $TMPDIR. `Err` is the message.
pub(super) fn out_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(d) = given {
        if let Some(warning) = prepare_out_dir(d).map_err(|e| format!("--output {}: {e}", d.display()))? {
            eprintln!("numascope: warning: --output {}: {warning}", d.display());
        }
        return Ok(d.to_path_buf());
    }
    let d = std::env::temp_dir().join(format!(
        "numascope-serve-{}-{}",
        std::process::id(),
        random_hex(4).unwrap_or_default()
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    Ok(d)
}

/// Creates `--output` 0700 when it is missing (parents as the umask says); an existing one is
/// used as it is. Answers a warning when other users can list or enter it (the traces in it are
/// 0600 all the same), or when another user owns it.
fn prepare_out_dir(d: &Path) -> Result<Option<String>, String> {
    if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let created = match std::fs::DirBuilder::new().mode(0o700).create(d) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(e.to_string()),
    };
    let meta = std::fs::metadata(d).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a directory".into());
    }
    if created {
        // The umask may have taken bits from 0700 (never added any): make it exactly 0700.
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).map_err(|e| e.to_string())?;
        return Ok(None);
    }
    let mut warnings = Vec::new();
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid && euid != 0 {
        warnings
            .push(format!("it belongs to uid {}, not to you: its owner can remove or replace the traces", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        warnings.push(format!(
            "other users can list it (mode {mode:04o}): traces are written 0600, unreadable to them, but their names show; `chmod 700 {}` hides them",
            d.display()
        ));
    }
    Ok((!warnings.is_empty()).then(|| warnings.join("; ")))
}

/// Raises the soft limit on open files to the hard limit (capped at 65536): connections and
/// the recordings' perf events share it.
pub(super) fn raise_open_files_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to our own struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            let want = lim.rlim_max.min(65_536);
            if lim.rlim_cur < want {
                lim.rlim_cur = want;
                let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            }
        }
    }
}

/// Looks for `apps/web/dist/index.html` above the binary and above the working directory, and
/// for `../share/numascope/web` next to the binary (an installed layout).
fn find_web_dir() -> Option<PathBuf> {
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let share = dir.join("../share/numascope/web");
            if share.join("index.html").is_file() {
                return share.canonicalize().ok();
            }
            starts.push(dir.to_path_buf());
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    for s in starts {
        for dir in s.ancestors() {
            let cand = dir.join("apps/web/dist");
            if cand.join("index.html").is_file() {
                return cand.canonicalize().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_dir_is_created_private() {
        let base = std::env::temp_dir().join(format!("numascope-outdir-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let d = base.join("a/b");
        assert_eq!(prepare_out_dir(&d), Ok(None));
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        // An existing open directory is used, with a warning.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let w = prepare_out_dir(&d).unwrap().expect("a warning");
        assert!(w.contains("0755") && w.contains("0600"), "{w}");
        std::fs::write(base.join("file"), "").unwrap();
        assert!(prepare_out_dir(&base.join("file")).is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
