//! What the collector's tests share (a dev-dependency of the crates, never of the product).
//!
//! [`skip`]: a test that cannot run here (no root, no tracepoint, no compiler…) passes, as
//! libtest has no skip, but says so: on stderr, and as one line in the file
//! `$NUMASCOPE_SKIP_LOG` names, which the test command (scripts/test.sh) counts and lists
//! under its closing line, so a green run shows what it did not check.
//!
//! [`skip_outside_ci`]: the same for a test that CI must run. CI runs on a machine of the kind
//! the project is built on (root, software perf events and tracepoints, DAMON, numa_maps, a C
//! compiler, perf); there (`CI` set, as `.ci/run` does) a missing capability fails the test,
//! naming it, instead of passing green with the check left out.

use std::fmt::Display;
use std::io::Write;
use std::panic::Location;

/// Says that the calling test skips (part of) its check, and why. The caller then returns.
/// For what a machine of CI's kind may lack (another user who can run the test binaries, a
/// static C library, more than one cpu per node).
#[track_caller]
pub fn skip(reason: impl Display) {
    note_skip(Location::caller(), &reason);
}

/// As [`skip`] outside CI; under CI (the `CI` variable set, not "false" or "0") the test fails
/// with the reason, as CI's machine has what the test needs.
#[track_caller]
pub fn skip_outside_ci(reason: impl Display) {
    if in_ci() {
        panic!("this test must run in CI, but: {reason} (CI's machine has root, software perf events, tracepoints, DAMON, a C compiler and perf; set CI= to skip it elsewhere)");
    }
    note_skip(Location::caller(), &reason);
}

/// Whether the tests run in CI (`CI` set to anything but "", "false" or "0").
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn note_skip(at: &Location<'_>, reason: &dyn Display) {
    let thread = std::thread::current();
    // libtest names a test's thread after the test (not when it runs tests on the main thread).
    let test = thread.name().filter(|n| *n != "main").unwrap_or("?");
    let line = format!("{}:{} {test}: {reason}", at.file(), at.line()).replace('\n', " ");
    eprintln!("SKIPPED {line}");
    if let Some(path) = std::env::var_os("NUMASCOPE_SKIP_LOG") {
        // One write of one line with O_APPEND: lines from tests in parallel do not interleave.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!("(could not note the skip in {}: {e})", std::path::Path::new(&path).display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_one_line_in_the_log_with_where_and_why() {
        let dir = std::env::temp_dir().join(format!("numascope-skip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips.txt");
        // This crate's only test that reads or writes the environment.
        std::env::set_var("NUMASCOPE_SKIP_LOG", &log);
        skip("no tracepoint\nhere");
        skip(format_args!("needs {}", "root"));
        // Under CI a test that must run fails instead; elsewhere it skips like `skip`.
        let ci = std::env::var_os("CI");
        std::env::set_var("CI", "true");
        assert!(in_ci());
        let refused = std::panic::catch_unwind(|| skip_outside_ci("no DAMON here"));
        let message = refused.expect_err("a must-run test skipping in CI fails");
        assert!(message.downcast_ref::<String>().is_some_and(|m| m.contains("must run in CI, but: no DAMON here")));
        std::env::set_var("CI", "false");
        assert!(!in_ci());
        skip_outside_ci("no cc");
        match ci {
            Some(v) => std::env::set_var("CI", v),
            None => std::env::remove_var("CI"),
        }
        std::env::remove_var("NUMASCOPE_SKIP_LOG");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].contains("src/lib.rs:") && lines[0].ends_with(": no tracepoint here"), "{}", lines[0]);
        assert!(lines[1].ends_with(": needs root"), "{}", lines[1]);
        assert!(lines[2].ends_with(": no cc"), "{}", lines[2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
