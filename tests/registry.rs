//! Every limit of every workload kind, driven from the one registry: a value just outside each
//! range is refused with the same message from a scenario file (at its file:line:column), from
//! the dashboard's picker form, and from the kind's own command line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use schedlab::scenario::Scenario;
use schedlab::supervisor::Program;
use schedlab::ui::form::Value as FieldValue;
use schedlab::ui::picker::TEMPLATES;
use schedlab::workload::registry::{Absent, Flag, Kind, Param, Ty, Value, KINDS};

mod common;
use common::BIN;

/// The values just outside a parameter's range, as text, with the message each must get.
fn just_outside(p: &Param) -> Vec<(String, String)> {
    match &p.ty {
        Ty::Count { range, .. } => [i64::from(*range.start()) - 1, i64::from(*range.end()) + 1]
            .into_iter()
            .map(|x| (x.to_string(), p.check_count(x).unwrap_err()))
            .collect(),
        Ty::Amount { max, .. } => [0.0, max + 0.5]
            .into_iter()
            .map(|x| (format!("{x:?}"), p.check_amount(x).unwrap_err()))
            .collect(),
        Ty::Switch | Ty::Choice { .. } | Ty::Words | Ty::Text => Vec::new(),
    }
}

fn from_scenario(kind: &Kind, p: &Param, text: &str) -> String {
    let src = format!(
        "[[workload]]\nkind = \"{}\"\n{} = {text}\n",
        kind.word, p.key
    );
    let e = Scenario::from_toml(&src, "limits.toml").expect_err(&src);
    assert_eq!(
        (e.line, e.column),
        (3, p.key.len() + 4),
        "{src}: the error points at the value: {e}"
    );
    assert!(e.to_string().starts_with("limits.toml:3:"), "{e}");
    e.message
}

fn from_picker(kind: &Kind, p: &Param, text: &str) -> String {
    let template = TEMPLATES
        .iter()
        .find(|t| std::ptr::eq(t.kind(), kind))
        .unwrap_or_else(|| panic!("the picker offers {}", kind.word));
    let mut form = template.form(2);
    let field = form
        .fields
        .iter_mut()
        .find(|f| f.key == p.key)
        .unwrap_or_else(|| panic!("{}'s form asks for {}", kind.word, p.key));
    field.value = FieldValue::Text(text.to_owned());
    template.decl(&form, &[]).expect_err(text)
}

/// The kind's command line as the registry builds it from its defaults, with `p` set to
/// `text`.
fn command_line(kind: &Kind, p: &Param, text: &str) -> Vec<String> {
    let values = kind
        .params
        .iter()
        .map(|q| match (&q.ty, q.absent()) {
            // Every parameter written out, so that the one under test has its place.
            (
                Ty::Count {
                    absent: Absent::Omitted(n),
                    ..
                },
                _,
            ) => Value::Count(Some(*n)),
            (
                Ty::Count {
                    absent: Absent::Auto { .. },
                    ..
                },
                _,
            ) => Value::Count(Some(1)),
            (_, v) => v,
        })
        .collect();
    let Program::SelfExe(mut args) = kind.build(values).program() else {
        panic!("{} runs a schedlab subcommand", kind.word)
    };
    match p.flag {
        Flag::Named(flag) => {
            let at = args.iter().position(|a| a == flag).expect(flag) + 1;
            args[at] = text.to_owned();
        }
        Flag::Positional => {
            let at = kind
                .params
                .iter()
                .filter(|q| q.flag == Flag::Positional)
                .position(|q| q.key == p.key)
                .unwrap();
            args[1 + at] = text.to_owned();
        }
    }
    args
}

fn from_command_line(args: &[String]) -> String {
    let mut child = common::spawn_schedlab(args, Stdio::null());
    // Refused before anything starts: a bound against a hang, not a figure.
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} did not refuse its value within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{args:?} was accepted");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_limit_is_refused_the_same_way_from_a_scenario_the_picker_and_the_command_line() {
    let mut checked = 0;
    for kind in KINDS {
        for p in kind.params {
            for (text, message) in just_outside(p) {
                let case = format!("{} {} = {text}", kind.word, p.key);
                assert_eq!(from_scenario(kind, p, &text), message, "{case}: scenario");
                assert_eq!(from_picker(kind, p, &text), message, "{case}: picker");
                checked += 1;
                if kind.cli.is_none() {
                    // attach runs nothing: no command line to refuse it.
                    continue;
                }
                let args = command_line(kind, p, &text);
                let err = from_command_line(&args);
                assert!(
                    err.contains(&message),
                    "{case}: `schedlab {}` says\n{err}\nnot\n{message}",
                    args.join(" ")
                );
            }
        }
    }
    // Two sides of every range: chat 3, hackbench 5, fork-load 1, ref-job 3, cpu-hog 1,
    // pingpong 1, msgbench 2, wakeup-probe 4, attach 2 (pid, session).
    assert_eq!(checked, 2 * 22, "every ranged parameter was driven");
}

#[test]
fn a_huge_room_count_is_refused_by_the_parser_with_its_position() {
    let src = "name = \"big\"\n\n[[workload]]\nkind = \"chat\"\nrooms = 4294967295\n";
    let e = Scenario::from_toml(src, "big.toml").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("big.toml:5:9: rooms must be between 1 and 2147483647, found 4294967295"),
        "{e}"
    );
}

#[test]
fn help_shows_the_registry_ranges_and_defaults() {
    let help = |command: &str| {
        let out = Command::new(BIN)
            .args([command, "--help"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let hackbench = help("hackbench");
    assert!(
        hackbench.contains("(1 to 2097152) [default: 10]"),
        "{hackbench}"
    );
    let chat = help("chat-bench");
    assert!(chat.contains("(1 to 32767 messages)"), "{chat}");
}

/// docs/scenarios.md's table of parameters is the registry's, written out: a limit or a
/// default changed in the registry fails here until the page says the same.
#[test]
fn the_scenario_page_lists_the_registry_parameters() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/scenarios.md")).unwrap();
    let table = schedlab::workload::registry::parameters_markdown();
    assert!(
        page.contains(&table),
        "docs/scenarios.md should hold, under Parameters of each kind:\n{table}"
    );
}
