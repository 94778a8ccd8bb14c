//! `numascope completions SHELL` and `numascope man`: generated from the same clap definition
//! as the parser, so every command is in them; long help wraps to the terminal (clap wrap_help).

use std::process::Command;

mod common;
use common::{numascope, Tmp};

fn out(args: &[&str]) -> (bool, String) {
    let o = Command::new(numascope()).args(args).env("COLUMNS", "80").output().expect("run numascope");
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned())
}

const COMMANDS: [&str; 10] =
    ["record", "probe", "topology", "import", "export", "serve", "apply", "rollback", "run", "bench"];

#[test]
fn bash_completion_is_valid_bash_and_completes_every_command() {
    let (ok, script) = out(&["completions", "bash"]);
    assert!(ok);
    let top = script.lines().find(|l| l.contains("opts=\"-h -V --help --version")).expect("the top-level word list");
    for c in COMMANDS {
        assert!(top.split(['"', ' ']).any(|w| w == c), "completion lacks {c}: {top}");
    }
    let check = Command::new("bash").args(["-n", "-c", &script]).status().expect("run bash");
    assert!(check.success(), "bash -n refused the completion script");
    let (ok, zsh) = out(&["completions", "zsh"]);
    assert!(ok && zsh.starts_with("#compdef numascope"));
    let (ok, _) = out(&["completions", "tcsh"]);
    assert!(!ok, "an unknown shell is a usage error");
}

#[test]
fn man_prints_the_tools_page_and_writes_one_page_per_command() {
    let (ok, page) = out(&["man"]);
    assert!(ok && page.contains(".TH numascope 1"));
    let tmp = Tmp::new("man");
    let dir = tmp.file("man1");
    let o = Command::new(numascope()).arg("man").arg("-o").arg(&dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for c in COMMANDS {
        let p = dir.join(format!("numascope-{c}.1"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(text.contains(&format!(".TH numascope-{c} 1")), "{}", p.display());
    }
    let export = std::fs::read_to_string(dir.join("numascope-export.1")).unwrap();
    assert!(export.contains("pprof"), "the page carries the long help");
}

#[test]
fn long_help_wraps_to_the_terminal_width() {
    let (ok, help) = out(&["export", "--help"]);
    assert!(ok);
    let longest = help.lines().map(|l| l.chars().count()).max().unwrap();
    // a path-like word longer than the width may stand alone on its line
    let over: Vec<&str> = help.lines().filter(|l| l.chars().count() > 80 && l.contains(' ')).collect();
    assert!(over.is_empty(), "lines over 80 columns: {over:?} (longest {longest})");
}
