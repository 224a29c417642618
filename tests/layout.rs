//! The layout holds: only the probe (src/probe/) and the plumbing it and others use (src/sys/)
//! open files under /proc. Everything else asks them, through named functions.
//!
//! The rule, kept simple so that a failure is obvious: outside those two folders, no line of
//! Rust code under src/ holds a string literal that starts with `/proc/` (or is `"/proc"`), as
//! a path opened there would. Comment lines (`//`, `///`, `//!`) are prose, and a metric's
//! `help:` line is text for people, so neither counts. A literal that merely names a /proc file
//! further in ("as /proc/stat says") is prose too and passes.

mod common;

use std::fs;

use common::tree::{files_under, repo};

/// Where /proc may be opened from, relative to the repository.
const ALLOWED: [&str; 2] = ["src/probe", "src/sys"];

/// Whether a line of Rust is code with a literal that opens a /proc path.
fn opens_proc(line: &str) -> bool {
    let code = line.trim_start();
    if code.starts_with("//") || code.starts_with("help:") {
        return false;
    }
    code.contains("\"/proc/") || code.contains("\"/proc\"")
}

#[test]
fn the_rule_tells_code_from_prose() {
    assert!(opens_proc(
        r#"    std::fs::read_to_string("/proc/sys/kernel/hostname")"#
    ));
    assert!(opens_proc(r#"let dir = format!("/proc/{pid}/task");"#));
    assert!(opens_proc(r#"for pid in fs::read_dir("/proc")? {"#));
    assert!(!opens_proc(
        r#"    /// Reads "/proc/self/maps" for the count."#
    ));
    assert!(!opens_proc(r#"//! See "/proc/stat"."#));
    assert!(!opens_proc(
        r#"        help: "Context switches (/proc/stat ctxt).","#
    ));
    assert!(!opens_proc(
        r#"let spec = sh("cg", "cat /proc/self/cgroup; sleep 30");"#
    ));
}

#[test]
fn only_the_probe_and_sys_open_proc() {
    let files = files_under("src", "rs");
    assert!(
        files.len() > 50,
        "src/ holds only {} .rs files?",
        files.len()
    );
    let mut offenders = Vec::new();
    for file in files
        .iter()
        .filter(|f| !ALLOWED.iter().any(|dir| f.starts_with(dir)))
    {
        let text = fs::read_to_string(repo().join(file)).unwrap();
        for (n, line) in text.lines().enumerate() {
            if opens_proc(line) {
                offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} line(s) outside {} open /proc; read it through a function there:\n{}",
        offenders.len(),
        ALLOWED.join(" and "),
        offenders.join("\n")
    );
}
