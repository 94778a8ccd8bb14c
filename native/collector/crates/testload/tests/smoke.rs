//! Runs the built testload once (this also makes `cargo test` build the binary that the
//! recorder tests launch).

use std::process::Command;

#[test]
fn prints_buffers_before_touching_them() {
    let out = Command::new(env!("CARGO_BIN_EXE_numascope-testload"))
        .args(["--threads", "2", "--mib", "1", "--shared-mib", "1", "--seconds", "0.01"])
        .output()
        .expect("run numascope-testload");
    assert!(out.status.success(), "testload failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ready pid="), "{text}");
    assert!(lines[1].starts_with("shared tid="), "{text}");
    let buffers: Vec<&&str> = lines.iter().filter(|l| l.starts_with("buffer tid=")).collect();
    assert_eq!(buffers.len(), 2, "{text}");
    for b in buffers {
        assert!(b.contains(" addr=0x") && b.ends_with(" len=1048576"), "{b}");
        let tid = b.split_whitespace().nth(1).unwrap();
        // The buffer line comes before the touched line of the same thread.
        let bi = lines.iter().position(|l| l == b).unwrap();
        let ti = lines.iter().position(|l| l.starts_with(&format!("touched {tid} "))).unwrap();
        assert!(bi < ti, "{text}");
    }
    assert_eq!(lines.last(), Some(&"done"));
    let bad = Command::new(env!("CARGO_BIN_EXE_numascope-testload")).arg("--bogus").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
