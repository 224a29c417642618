//! `schedlab ipc-pingpong`: every kind in every pin mode makes progress on every pair, and
//! nothing is left behind whatever ends the run (its end, SIGTERM, SIGKILL, a dead peer).

mod common;
#[path = "pingpong_support/mod.rs"]
mod support;

use std::process::Stdio;
use std::time::Duration;

use common::args_of;
use common::child::read_to_end;
use common::wait::until;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use support::*;

const LIMIT: Duration = Duration::from_secs(30);

fn need_two_cpus() {
    assert!(
        usable_cpus() >= 2,
        "these tests pin pairs to CPUs 0 and 1 and need two usable CPUs; this process has {}",
        usable_cpus()
    );
}

/// Round trips of each pair from the report's table.
fn pair_counts(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("pair "))
        .skip(1)
        .take_while(|l| !l.starts_with("Total:"))
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect()
}

/// `ipc-pingpong` with two pairs of `kind` for one second.
fn two_pairs_for_a_second<'a>(kind: &'a str, pin: &'a str) -> Vec<&'a str> {
    vec![
        "ipc-pingpong",
        "--kind",
        kind,
        "--pairs",
        "2",
        "--pin",
        pin,
        "--duration",
        "1",
    ]
}

fn check_run(kind: &str, pin: &str, threads: bool) {
    let mut args = two_pairs_for_a_second(kind, pin);
    if threads {
        args.push("--threads");
    }
    let out = run_bounded(&args, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{args:?}: {}", stderr_line(&out));
    let counts = pair_counts(&stdout);
    assert_eq!(counts.len(), 2, "{args:?}: two pair rows in\n{stdout}");
    assert!(
        counts.iter().all(|&n| n > 0),
        "{args:?}: a pair made no round trip\n{stdout}"
    );
    let total: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Total: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a Total line");
    assert_eq!(total, counts.iter().sum::<u64>(), "{stdout}");
    assert!(stdout.contains("Mean round-trip time: "), "{stdout}");
}

#[test]
fn every_kind_and_pin_mode_runs_two_pairs_of_processes() {
    need_two_cpus();
    for kind in ["msg", "sem", "pipe"] {
        for pin in ["same", "cross", "none"] {
            check_run(kind, pin, false);
        }
    }
}

#[test]
fn every_kind_runs_as_threads() {
    need_two_cpus();
    for kind in ["msg", "sem", "pipe"] {
        check_run(kind, "cross", true);
    }
}

/// Starts an open-ended run and waits until its pairs' objects exist.
fn start(kind: &str, pairs: usize, threads: bool) -> (std::process::Child, Vec<Obj>) {
    let pairs_arg = pairs.to_string();
    let mut args = vec![
        "ipc-pingpong",
        "--kind",
        kind,
        "--pairs",
        &pairs_arg,
        "--pin",
        "none",
    ];
    if threads {
        args.push("--threads");
    }
    let child = schedlab(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let objs = if kind == "pipe" {
        Vec::new()
    } else {
        wait_for_objects(child.id(), pairs, LIMIT).1
    };
    (child, objs)
}

/// Waits until the run's forked tasks exist.
fn tasks_of(pid: u32, n: usize) -> Vec<u32> {
    until(LIMIT, Duration::from_millis(5), || {
        let kids = children_of(pid);
        if kids.len() >= n {
            Ok(kids)
        } else {
            Err(())
        }
    })
    .unwrap_or_else(|()| panic!("no {n} tasks under {pid}"))
}

#[test]
fn a_normal_end_removes_every_object() {
    for kind in ["msg", "sem"] {
        let mut child = schedlab(&two_pairs_for_a_second(kind, "none"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let (ledger, objs) = wait_for_objects(child.id(), 2, LIMIT);
        assert!(wait_bounded(&mut child, LIMIT).success());
        assert!(objs.iter().all(|&o| !exists(o)), "{kind}: {objs:?} left");
        assert!(!ledger.exists(), "{kind}: ledger {ledger:?} left");
    }
}

#[test]
fn sigterm_and_sigint_remove_objects_and_tasks() {
    for (kind, threads, sig) in [
        ("msg", false, libc::SIGTERM),
        ("sem", false, libc::SIGINT),
        ("sem", true, libc::SIGTERM),
        ("pipe", false, libc::SIGTERM),
    ] {
        let (mut child, objs) = start(kind, 2, threads);
        let pid = child.id();
        let tasks = if threads {
            Vec::new()
        } else {
            tasks_of(pid, 4)
        };
        std::thread::sleep(Duration::from_millis(200));
        let _ = kill(Pid::from_raw(pid as i32), Signal::try_from(sig).unwrap());
        let status = wait_bounded(&mut child, LIMIT);
        assert_eq!(status.code(), Some(128 + sig), "{kind}: {status:?}");
        assert!(objs.iter().all(|&o| !exists(o)), "{kind}: {objs:?} left");
        assert!(ledger_of(pid).is_none(), "{kind}: ledger left");
        wait_gone(&tasks, Duration::from_secs(5));
        // An open-ended run stopped by a signal still reports what it did.
        let out = read_to_end(child.stdout.take().unwrap());
        assert!(out.contains("Total: "), "{kind}: no report in {out:?}");
    }
}

#[test]
fn after_sigkill_cleanup_or_the_next_run_removes_what_was_left() {
    for (kind, sweeper) in [("sem", "cleanup"), ("msg", "next run")] {
        let (mut child, objs) = start(kind, 2, false);
        let pid = child.id();
        let tasks = tasks_of(pid, 4);
        let ledger = ledger_of(pid).unwrap();
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        wait_bounded(&mut child, LIMIT);
        // The tasks die with their parent (PDEATHSIG), so none spins on.
        wait_gone(&tasks, Duration::from_secs(5));
        let out = if sweeper == "cleanup" {
            run_bounded(&["cleanup"], LIMIT)
        } else {
            let next = "ipc-pingpong --kind pipe --pairs 1 --pin none --duration 0.1";
            run_bounded(&args_of(next), LIMIT)
        };
        assert!(out.status.success(), "{sweeper}: {}", stderr_line(&out));
        assert!(
            objs.iter().all(|&o| !exists(o)),
            "{kind}: {objs:?} left after {sweeper}"
        );
        assert!(!ledger.exists(), "{kind}: ledger left after {sweeper}");
    }
}

#[test]
fn a_peer_killed_mid_run_ends_the_run_with_its_name() {
    for (kind, victim) in [("msg", 1), ("sem", 0), ("pipe", 1)] {
        let (mut child, objs) = start(kind, 1, false);
        let pid = child.id();
        let tasks = tasks_of(pid, 2);
        std::thread::sleep(Duration::from_millis(100));
        let _ = kill(Pid::from_raw(tasks[victim] as i32), Signal::SIGKILL);
        let status = wait_bounded(&mut child, LIMIT);
        let err = read_to_end(child.stderr.take().unwrap());
        assert_eq!(status.code(), Some(1), "{kind}: {err}");
        assert_eq!(err.lines().count(), 1, "{kind}: one line: {err}");
        assert!(
            err.contains(&format!("(pid {}) was killed by signal 9", tasks[victim])),
            "{kind}: {err}"
        );
        assert!(objs.iter().all(|&o| !exists(o)), "{kind}: {objs:?} left");
        assert!(ledger_of(pid).is_none(), "{kind}: ledger left");
        wait_gone(&tasks, Duration::from_secs(5));
    }
}

#[test]
fn bad_input_gets_one_line_and_leaves_nothing() {
    let cpus = usable_cpus().to_string();
    let too_many = (usable_cpus() + 1).to_string();
    for (args, expect) in [
        (vec!["--kind", "shm"], "unknown --kind"),
        (vec!["--pairs", too_many.as_str(), "--pin", "same"], "CPUs"),
        (vec!["--pairs", too_many.as_str(), "--pin", "cross"], "CPUs"),
        (vec!["--pairs", "0"], "at least 1"),
        (vec!["--pin", "diagonal"], "unknown --pin"),
        (
            vec!["--pairs", cpus.as_str(), "--duration", "soon"],
            "--duration",
        ),
    ] {
        let mut full = vec!["ipc-pingpong"];
        full.extend(&args);
        let out = run_bounded(&full, LIMIT);
        let err = stderr_line(&out);
        // A mistake in the arguments ends with clap's status, whoever found it.
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("schedlab ipc-pingpong: error: "), "{err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn forked_pingers_count_live_into_the_supervisors_region() {
    use schedlab::knobs::Knobs;
    use schedlab::supervisor::{spawn, LaunchSpec, Program};
    for threads in [false, true] {
        let mut argv: Vec<String> = [
            BIN,
            "ipc-pingpong",
            "--kind",
            "sem",
            "--pairs",
            "2",
            "--pin",
            "none",
        ]
        .map(String::from)
        .to_vec();
        if threads {
            argv.push("--threads".into());
        }
        let mut run = spawn(&LaunchSpec {
            name: "pingpong".into(),
            program: Program::Command(argv),
            knobs: Knobs::default(),
            capture_output: false,
        })
        .unwrap();
        let (_, objs) = wait_for_objects(run.pid, 2, LIMIT);
        // One slot per pinger, and the count moves while the run goes on.
        until(LIMIT, Duration::from_millis(10), || {
            (run.counters.total() >= 1000).then_some(()).ok_or(())
        })
        .expect("no round trips counted");
        assert_eq!(run.counters.claimed(), 2);
        let before = run.counters.total();
        std::thread::sleep(Duration::from_millis(100));
        assert!(run.counters.total() > before, "counting stopped");
        run.stop(Duration::from_secs(5));
        assert!(objs.iter().all(|&o| !exists(o)), "{objs:?} left");
    }
}
