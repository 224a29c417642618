//! fork-load counts exactly the children it reaped, refuses bad input with one line, and
//! leaves nothing behind.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

mod subreaper;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use subreaper::run;

fn count(text: &str, prefix: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {prefix:?} in {text}"))
}

#[test]
fn count_equals_children_reaped() {
    // Each child appends one line to a file before it exits: the file counts what ran.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ran");
    let script = dir.path().join("child.sh");
    let mut f = std::fs::File::create(&script).unwrap();
    writeln!(f, "#!/bin/sh\necho x >> '{}'", log.display()).unwrap();
    drop(f);
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let out = run(&[
        "fork-load",
        "--forkers",
        "2",
        "--duration",
        "2",
        "--exec",
        script.to_str().unwrap(),
        "-v",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let forked = count(&text, "Children forked: ");
    let ran = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    assert!(forked > 0, "{text}");
    assert_eq!(forked, ran, "reported {forked}, {ran} children ran\n{text}");
    let per_forker: u64 = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("forker ")?
                .split(' ')
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .sum();
    assert_eq!(per_forker, forked, "{text}");
    assert!(text.contains("forks/s over "), "{text}");
}

/// The run succeeded and forked children.
fn assert_forked(out: &std::process::Output) {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(count(&text, "Children forked: ") > 0, "{text}");
}

#[test]
fn default_program_is_the_nil_binary() {
    let out = run(&["fork-load", "--forkers", "1", "--duration", "0.5"]);
    assert_forked(&out);
}

#[test]
fn schedlab_alone_forks_the_systems_true_and_says_so() {
    // `cargo run` builds only schedlab: copied alone into a directory, it has no schedlab-nil
    // beside it, and its children exec /bin/true instead (said on stderr).
    let (_dir, lone) = common::lone_schedlab();
    let _serial = subreaper::serial();
    let out = Command::new(&lone)
        .args(["fork-load", "--forkers", "1", "--duration", "0.3"])
        .output()
        .unwrap();
    subreaper::assert_no_leftovers(&["fork-load"]);
    assert_forked(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no schedlab-nil") && err.contains("true"),
        "{err}"
    );
}

#[test]
fn own_session_and_nice_are_applied() {
    let out = run(&[
        "fork-load",
        "--forkers",
        "1",
        "--duration",
        "0.3",
        "--own-session",
        "--nice",
        "3",
    ]);
    assert_forked(&out);
}

#[test]
fn sigterm_stops_reports_and_leaves_nothing() {
    let _serial = subreaper::serial();
    let child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["fork-load", "--forkers", "2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM), "{text}");
    assert!(count(&text, "Children forked: ") > 0, "{text}");
    drop(_serial);
    run(&["fork-load", "--forkers", "0"]); // and the leftover check runs
}

#[test]
fn bad_input_is_one_line_and_nonzero() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    let missing = dir.path().join("missing");
    for (args, says) in [
        (vec!["--exec", missing.to_str().unwrap()], "No such file"),
        (vec!["--exec", plain.to_str().unwrap()], "is not executable"),
        (
            vec!["--exec", dir.path().to_str().unwrap()],
            "is not a regular file",
        ),
        (vec!["--duration", "0"], "duration must be a positive"),
        (
            vec!["--exec", "/bin/false", "--duration", "1"],
            "exited with a failure status",
        ),
    ] {
        let mut full = vec!["fork-load"];
        full.extend(&args);
        let out = run(&full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("schedlab fork-load: error: "),
            "{args:?}: {err}"
        );
        assert!(last.contains(says), "{args:?}: {err}");
    }
    let out = run(&["fork-load", "--forkers", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Under a supervisor the forkers count live into its region, and stopping the group leaves
/// nothing behind.
#[test]
fn counts_reach_a_supervisor_and_stop_is_clean() {
    use schedlab::workload::registry::WorkloadKind;
    let _serial = subreaper::serial();
    let mut run = common::spawn_real("fork_load", &WorkloadKind::ForkLoad { forkers: Some(2) });
    let deadline = Instant::now() + Duration::from_secs(20);
    while run.counters.total() < 20 {
        assert!(Instant::now() < deadline, "no forks counted");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(run.counters.claimed(), 2, "one slot per forker");
    run.stop(Duration::from_secs(5));
    drop(_serial);
    run_checked_clean();
}

/// The leftover check of `run`, on its own.
fn run_checked_clean() {
    let out = run(&["fork-load", "--duration", "0.1", "--forkers", "1"]);
    assert!(out.status.success());
}
