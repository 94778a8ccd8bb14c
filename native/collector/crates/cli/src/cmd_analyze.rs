//! `numascope analyze|diagnose|plan|compare|code|c2c|presets …`: the analysis CLI of the
//! TypeScript engine, run with Node from its one-file bundle (`numascope-analyze.mjs`,
//! packages/policy-engine/bin/build-bundle.mjs), so one binary is the front door. Arguments after
//! the command go to the engine unchanged (its own `--help`, `--opt=value` and `--`); its exit
//! code is numascope's.
//!
//! The bundle is looked for in `$NUMASCOPE_ANALYZE_BUNDLE`, beside the binary, in
//! `../share/numascope/` from it, then in the repository the binary was built in
//! (`target/<profile>/` → `packages/policy-engine/dist/`). Node is `$NUMASCOPE_NODE` or `node` on
//! PATH, version 20 or later.

use crate::exit::EXIT_NOT_FOUND;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Oldest Node major the bundle is built for (bin/build-bundle.mjs, target node20).
pub const MIN_NODE_MAJOR: u32 = 20;
const BUNDLE: &str = "numascope-analyze.mjs";

/// Where the bundle may be, in the order looked at.
pub fn bundle_candidates(exe: &Path) -> Vec<PathBuf> {
    let mut c = Vec::new();
    if let Some(p) = std::env::var_os("NUMASCOPE_ANALYZE_BUNDLE") {
        c.push(PathBuf::from(p));
        return c;
    }
    if let Some(dir) = exe.parent() {
        c.push(dir.join(BUNDLE));
        c.push(dir.join("../share/numascope").join(BUNDLE));
        // native/collector/target/<profile>/numascope -> the repository root
        c.push(dir.join("../../../../packages/policy-engine/dist").join(BUNDLE));
    }
    c
}

/// `v22.11.0` -> 22.
pub fn node_major(version: &str) -> Option<u32> {
    version.trim().trim_start_matches('v').split('.').next()?.parse().ok()
}

pub fn cmd_analyze(command: &str, args: Vec<OsString>) -> Result<u8, (u8, String)> {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("numascope"));
    let candidates = bundle_candidates(&exe);
    let Some(bundle) = candidates.iter().find(|p| p.is_file()) else {
        let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err((
            EXIT_NOT_FOUND,
            format!(
                "`numascope {command}` runs the analysis engine's bundle, {BUNDLE}, which is not installed (looked at: {}); \
                 build it with `node packages/policy-engine/bin/build-bundle.mjs` in the repository (npm test and npm start do) \
                 and put it beside the numascope binary",
                looked.join(", ")
            ),
        ));
    };
    let node = std::env::var_os("NUMASCOPE_NODE").unwrap_or_else(|| OsString::from("node"));
    let shown = PathBuf::from(&node).display().to_string();
    let version = Command::new(&node).arg("--version").output().map_err(|e| {
        (
            EXIT_NOT_FOUND,
            format!(
                "`numascope {command}` needs Node.js {MIN_NODE_MAJOR} or later to run the analysis engine, and `{shown}` \
                 could not be run ({e}): install Node.js {MIN_NODE_MAJOR}+ (or set NUMASCOPE_NODE to its path)"
            ),
        )
    })?;
    let v = String::from_utf8_lossy(&version.stdout).trim().to_string();
    match node_major(&v) {
        Some(m) if m >= MIN_NODE_MAJOR => {}
        _ => {
            return Err((
                EXIT_NOT_FOUND,
                format!(
                    "`numascope {command}` needs Node.js {MIN_NODE_MAJOR} or later; `{shown}` is {}: install Node.js {MIN_NODE_MAJOR}+ \
                     (or set NUMASCOPE_NODE to its path)",
                    if v.is_empty() { "of an unknown version".to_string() } else { v }
                ),
            ))
        }
    }
    let status = Command::new(&node)
        .arg(bundle)
        .arg(command)
        .args(&args)
        .status()
        .map_err(|e| (EXIT_NOT_FOUND, format!("cannot run {shown} {}: {e}", bundle.display())))?;
    // A signal death reads as 128 + the signal, as a shell reports it.
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(s)) => u8::try_from(128 + s).unwrap_or(1),
        _ => 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_versions_parse() {
        assert_eq!(node_major("v20.19.5\n"), Some(20));
        assert_eq!(node_major("v24.0.0"), Some(24));
        assert_eq!(node_major("garbage"), None);
    }

    #[test]
    fn the_bundle_is_looked_for_beside_the_binary_first() {
        let c = bundle_candidates(Path::new("/opt/numascope/bin/numascope"));
        if std::env::var_os("NUMASCOPE_ANALYZE_BUNDLE").is_none() {
            assert_eq!(c[0], Path::new("/opt/numascope/bin/numascope-analyze.mjs"));
            assert_eq!(c[1], Path::new("/opt/numascope/bin/../share/numascope/numascope-analyze.mjs"));
        }
    }
}
