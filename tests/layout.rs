//! The layout holds: only the probe (src/probe/) and the plumbing it and others use (src/sys/)
//! open files under /proc, and everything else asks them, through named functions; and the
//! model, the probe and the plumbing never import the engine, the dashboard or the commands
//! (`crate::engine`, `crate::ui`, `crate::cli`), so data flows one way.
//! No file under src/ runs past 900 lines.
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

/// Folders that sit below the engine and the frontends, and what they must never import.
const LOWER: [&str; 3] = ["src/model", "src/probe", "src/sys"];
const UPPER: [&str; 3] = ["engine", "ui", "cli"];

/// The module a line of Rust code names from the crate's upper layers, if any: `crate::ui`
/// in a `use` or a path. Comment lines are prose.
fn names_upper(line: &str) -> Option<&'static str> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return None;
    }
    // `crate::engine...`, and `crate::{engine, ...}` as a grouped `use` writes it.
    let grouped: Vec<&str> = code
        .match_indices("crate::{")
        .flat_map(|(i, _)| {
            let rest = &code[i + "crate::{".len()..];
            rest[..rest.find('}').unwrap_or(rest.len())].split(',')
        })
        .map(|item| item.trim().split("::").next().unwrap_or(""))
        .collect();
    UPPER.into_iter().find(|m| {
        let path = format!("crate::{m}");
        grouped.contains(m)
            || code.match_indices(&path).any(|(i, _)| {
                let after = code[i + path.len()..].chars().next();
                !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
    })
}

#[test]
fn the_upward_rule_tells_imports_from_names() {
    assert_eq!(names_upper("use crate::engine::Event;"), Some("engine"));
    assert_eq!(
        names_upper("    let x = crate::ui::theme::Theme::default();"),
        Some("ui")
    );
    assert_eq!(names_upper("use crate::cli;"), Some("cli"));
    assert_eq!(names_upper("use crate::client::Thing;"), None);
    assert_eq!(names_upper("use crate::{model, ui::App};"), Some("ui"));
    assert_eq!(names_upper("use crate::{model, uinput};"), None);
    assert_eq!(names_upper("/// As crate::engine says."), None);
}

/// Data flows one way: the model, the probe and the plumbing under them never reach up to the
/// engine, the dashboard or the commands, so each can be read, tested and replayed alone.
#[test]
fn model_probe_and_sys_never_import_engine_ui_or_cli() {
    let mut offenders = Vec::new();
    for dir in LOWER {
        for file in files_under(dir, "rs") {
            let text = fs::read_to_string(repo().join(&file)).unwrap();
            for (n, line) in text.lines().enumerate() {
                if let Some(m) = names_upper(line) {
                    offenders.push(format!(
                        "{}:{}: crate::{m}: {}",
                        file.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} line(s) of {} reach up to {}:\n{}",
        offenders.len(),
        LOWER.join(", "),
        UPPER.join(", "),
        offenders.join("\n")
    );
}

/// No file under src/ runs past this many lines: a longer one holds more than one concern
/// (issue 31's bound).
const MOST_LINES: usize = 900;

#[test]
fn no_source_file_runs_past_the_bound() {
    let long: Vec<String> = files_under("src", "rs")
        .into_iter()
        .filter_map(|file| {
            let lines = fs::read_to_string(repo().join(&file))
                .unwrap()
                .lines()
                .count();
            (lines > MOST_LINES).then(|| format!("{}: {lines} lines", file.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "over {MOST_LINES} lines, split by concern:\n{}",
        long.join("\n")
    );
}
