//! What the collector's tests share (a dev-dependency of the crates, never of the product).
//!
//! [`skip`]: a test that cannot run here (no root, no tracepoint, no compiler…) passes, as
//! libtest has no skip, but says so: on stderr, and as one line in the file
//! `$NUMASCOPE_SKIP_LOG` names, which the test command (scripts/test.sh) counts and lists
//! under its closing line, so a green run shows what it did not check.

use std::fmt::Display;
use std::io::Write;
use std::panic::Location;

/// Says that the calling test skips (part of) its check, and why. The caller then returns.
#[track_caller]
pub fn skip(reason: impl Display) {
    let at = Location::caller();
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
        std::env::remove_var("NUMASCOPE_SKIP_LOG");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].contains("src/lib.rs:") && lines[0].ends_with(": no tracepoint here"), "{}", lines[0]);
        assert!(lines[1].ends_with(": needs root"), "{}", lines[1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
