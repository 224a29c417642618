//! hackbench delivers exactly groups x fds x fds x loops messages in every mode, refuses bad
//! input with one line, and leaves no task behind.

use std::process::Output;

mod common;
mod subreaper;
use subreaper::run;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn delivers_exactly(mode: &[&str], header: &str) {
    let mut args = vec!["hackbench", "-g", "1", "-l", "10", "--verbose"];
    args.extend_from_slice(mode);
    let out = run(&args);
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(header), "{text}");
    assert!(
        text.contains("Each sender will pass 10 messages of 100 bytes"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("Time: ") && l[6..].parse::<f64>().is_ok()),
        "{text}"
    );
    // 20 senders x 20 receivers x 10 loops, each counted by its receiver.
    assert!(
        text.contains("Messages received: 4000 (expected 4000)"),
        "{text}"
    );
}

const PROCESS_HEADER: &str =
    "Running in process mode with 1 groups using 40 file descriptors each (== 40 tasks)";
const THREAD_HEADER: &str =
    "Running in threaded mode with 1 groups using 40 file descriptors each (== 40 tasks)";

#[test]
fn processes_over_sockets() {
    delivers_exactly(&[], PROCESS_HEADER);
}

#[test]
fn processes_over_pipes() {
    delivers_exactly(&["--pipe"], PROCESS_HEADER);
}

#[test]
fn threads_over_sockets() {
    delivers_exactly(&["-T"], THREAD_HEADER);
}

#[test]
fn threads_over_pipes() {
    delivers_exactly(&["-T", "-p"], THREAD_HEADER);
}

#[test]
fn seed_spelling_is_accepted() {
    let out = run(&["hackbench", "-pipe", "1", "-l", "5", "-v"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(PROCESS_HEADER), "{text}");
    assert!(
        text.contains("Messages received: 2000 (expected 2000)"),
        "{text}"
    );
}

#[test]
fn repeated_runs_each_report() {
    let out = run(&["hackbench", "-g", "1", "-l", "2", "--runs", "3", "-v"]);
    let text = stdout(&out);
    assert_eq!(text.matches("Time: ").count(), 3, "{text}");
    assert_eq!(
        text.matches("Messages received: 800 (expected 800)")
            .count(),
        3,
        "{text}"
    );
}

#[test]
fn bad_input_is_one_line_and_nonzero() {
    for (args, says) in [
        (&["hackbench", "-g", "0"][..], "groups must be at least 1"),
        (&["hackbench", "0"][..], "groups must be at least 1"),
        (&["hackbench", "-l", "0"][..], "loops must be at least 1"),
        (&["hackbench", "-s", "0"][..], "datasize must be at least 1"),
        (&["hackbench", "-s", "1000000", "-p"][..], "one pipe buffer"),
        (&["hackbench", "-f", "0"][..], "fds must be at least 1"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        // A mistake in the arguments ends with clap's status, whoever found it.
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("schedlab hackbench: error: "), "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// Under a supervisor (the dashboard, contest) the receivers count into the supervisor's
/// region, from their forked processes, and the run says when it is finished.
#[test]
fn counts_reach_a_supervisor() {
    use schedlab::knobs::Knobs;
    use schedlab::supervisor::{spawn, LaunchSpec, Program};
    use schedlab::workload::registry::WorkloadKind;
    let kind = WorkloadKind::Hackbench {
        groups: 1,
        loops: 10,
        datasize: 100,
        fds: 20,
        pipe: false,
        threads: false,
        runs: Some(2),
    };
    let Program::SelfExe(args) = kind.program() else {
        panic!("hackbench is a schedlab subcommand")
    };
    let mut argv = vec![env!("CARGO_BIN_EXE_schedlab").to_string()];
    argv.extend(args);
    let _serial = subreaper::serial();
    let mut run = spawn(&LaunchSpec {
        name: "hackbench".into(),
        program: Program::Command(argv),
        knobs: Knobs::default(),
        capture_output: false,
    })
    .unwrap();
    assert!(run.wait().unwrap().success());
    assert_eq!(run.counters.total(), 8000);
    assert_eq!(run.counters.expected_total(), Some(8000));
    assert!(run.counters.finished());
}

/// Thread mode once every thread runs: a receiver losing its peer mid-run (its socket shut
/// down, or its pipe's write end gone, by the test-only SCHEDLAB_INJECT_HACKBENCH_FAULT)
/// used to leave the senders blocked on full sockets forever. Now every thread is woken,
/// and the run ends with one line naming the first failure.
#[test]
fn a_thread_losing_its_peer_mid_run_ends_the_run_with_one_line() {
    for mode in [&["-T"][..], &["-T", "--pipe"]] {
        let _serial = subreaper::serial();
        let mut args = vec!["hackbench", "-g", "2", "-f", "4", "-l", "100000000"];
        args.extend_from_slice(mode);
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(&args)
            .env("SCHEDLAB_INJECT_HACKBENCH_FAULT", "300")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let watchdog = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(30));
            // SAFETY: kill takes no pointer; a hung run of ours (the test then fails anyway).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        });
        let out = child.wait_with_output().unwrap();
        assert!(
            !watchdog.is_finished(),
            "{args:?}: hung until the watchdog killed it"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            err.starts_with("schedlab hackbench: error: ")
                && err.contains(" of group ")
                && err.contains("every thread was stopped"),
            "{args:?}: {err}"
        );
        subreaper::assert_no_leftovers(&args);
    }
}

/// Processes of this test's schedlab-hackbench: (pid, parent pid), found in /proc by their
/// program (the lean hackbench and its tasks, forks of it, run the same file).
fn lean_processes() -> Vec<(i32, i32)> {
    let lean =
        std::path::Path::new(env!("CARGO_BIN_EXE_schedlab")).with_file_name("schedlab-hackbench");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == lean))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat[stat.rfind(')')? + 2..]
                .split(' ')
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// Waits up to 10 s for `schedlab` (pid) to run the lean hackbench with all `tasks` forked;
/// the lean hackbench's pid and its tasks' pids.
fn lean_run_of(schedlab: i32, tasks: usize) -> (i32, Vec<i32>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let procs = lean_processes();
        if let Some(&(lean, _)) = procs.iter().find(|&&(_, ppid)| ppid == schedlab) {
            let kids: Vec<i32> = procs
                .iter()
                .filter(|&&(_, p)| p == lean)
                .map(|&(p, _)| p)
                .collect();
            if kids.len() == tasks {
                return (lean, kids);
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no schedlab-hackbench with {tasks} tasks under {schedlab}: {procs:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Process mode's tasks are forks of the lean schedlab-hackbench, as the original's were forks
/// of a small C program (their exits, inside the timed run, tear down what they inherited);
/// SIGTERM to schedlab takes the lean hackbench and every task with it.
#[test]
fn process_mode_tasks_are_forks_of_the_lean_hackbench_and_go_with_schedlab() {
    let _serial = subreaper::serial();
    let args = [
        "hackbench",
        "-g",
        "1",
        "-f",
        "5",
        "-l",
        "100000000",
        "--pipe",
    ];
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (_lean, tasks) = lean_run_of(pid, 10);
    assert_eq!(tasks.len(), 10);
    // SAFETY: kill takes no pointer; the pid is our own child's.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    subreaper::assert_no_leftovers(&args);
    assert!(lean_processes().is_empty(), "{:?}", lean_processes());
}

/// A task that dies mid-run ends a process-mode run with a last line naming the first task
/// found failed, instead of leaving its peers blocked forever; nothing is left behind.
#[test]
fn a_task_killed_mid_run_ends_the_run_with_a_last_line_naming_a_failed_task() {
    for mode in [&[][..], &["--pipe"]] {
        let _serial = subreaper::serial();
        let mut args = vec!["hackbench", "-g", "1", "-f", "4", "-l", "100000000"];
        args.extend_from_slice(mode);
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (_lean, tasks) = lean_run_of(child.id() as i32, 8);
        // SAFETY: kill takes no pointer; the pid is a task of this test's run.
        unsafe { libc::kill(tasks[0], libc::SIGKILL) };
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        // Its peers may each say first that their write or read failed, as the original's do.
        let (last, before) = err
            .trim_end()
            .lines()
            .collect::<Vec<_>>()
            .split_last()
            .map(|(l, b)| (*l, b.to_vec()))
            .unwrap_or_default();
        // The first task reaped as failed is named: the one killed, or a peer whose write or
        // read failed with it and was reaped first.
        assert!(
            last.starts_with("schedlab hackbench: error: task ")
                && (last.ends_with(" of 8 was killed by signal 9; stopping the run")
                    || last.ends_with(" of 8 exited with code 1; stopping the run")),
            "{args:?}: {err}"
        );
        assert!(
            before
                .iter()
                .all(|l| l.starts_with("hackbench: sender: write failed")
                    || l.starts_with("hackbench: receiver: read failed")),
            "{args:?}: {err}"
        );
        subreaper::assert_no_leftovers(&args);
    }
}

/// `cargo run` builds only schedlab: copied alone into a directory, it has no
/// schedlab-hackbench beside it, forks the tasks itself, delivers every message, and says so.
#[test]
fn schedlab_alone_forks_the_tasks_itself_and_says_so() {
    let (_dir, lone) = common::lone_schedlab();
    let _serial = subreaper::serial();
    let args = ["hackbench", "-g", "1", "-l", "10", "--verbose", "--pipe"];
    let out = std::process::Command::new(&lone)
        .args(args)
        .output()
        .unwrap();
    subreaper::assert_no_leftovers(&args);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("Messages received: 4000 (expected 4000)"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no schedlab-hackbench beside schedlab") && err.lines().count() == 1,
        "{err}"
    );
}
