//! Closed standard streams: `schedlab ... 2>&-`, `>&-`, and a stdout or stderr pipe whose
//! reader is gone (`schedlab hackbench | head -0`). No panic: a lost diagnostic is dropped; a
//! lost stdout ends the process after its usual clean-up, quietly, with 141 (128 + SIGPIPE),
//! as a shell pipeline's writer ends. Nothing is left behind either way.

mod common;
#[path = "reliability/mod.rs"]
mod support;

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::args_of;
use common::wait::until;
use support::*;

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// `cmd` with descriptor `fd` closed, as `N>&-` does.
fn closing(mut cmd: Command, fd: i32) -> Command {
    // SAFETY: close is async-signal-safe; the child has not started yet.
    unsafe {
        cmd.pre_exec(move || {
            libc::close(fd);
            Ok(())
        })
    };
    cmd
}

/// Runs `cmd` to its end with its stdout and stderr ends both captured, except that the
/// reader of `broken` (1 or 2) is gone before it writes anything.
fn with_broken_pipe(mut cmd: Command, broken: i32, case: &str) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    match broken {
        1 => drop(child.stdout.take()),
        _ => drop(child.stderr.take()),
    }
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    rx.recv_timeout(SECS(60))
        .unwrap_or_else(|_| {
            // SAFETY: kill takes no pointer; -pid is our child's own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            panic!("{case}: still running after 60 s (a hang)")
        })
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `body` with a fresh tag between the suite's snapshot and its check, then checks that
/// no process of the tag is left.
fn leaves_nothing(test: &str, body: impl FnOnce(&str)) {
    let snap = Snapshot::take();
    let tag = unique_tag(test);
    body(&tag);
    assert_no_process(&tag, SECS(10), test);
    snap.check(test);
}

#[test]
fn a_closed_stderr_loses_only_the_text() {
    leaves_nothing("a_closed_stderr_loses_only_the_text", |tag| {
        // A normal run: its report on stdout, exit 0.
        let out = output_within(
            closing(schedlab(tag, &args_of("msgbench -n 2 --queues 8")), 2),
            SECS(60),
            "msgbench 2>&-",
        );
        assert!(out.status.success(), "{out:?}");
        assert!(text(&out.stdout).contains("msgget iterations"), "{out:?}");
        // An error: exit 1 with its line lost, not a panic (101). More queues than
        // kernel.msgmni holds: a failure of the run, not of its arguments (those exit 2).
        let out = output_within(
            closing(
                schedlab(tag, &args_of("msgbench -n 1 --queues 16777216")),
                2,
            ),
            SECS(60),
            "msgbench --queues 16777216 2>&-",
        );
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        // A long-running one: fd 2 is /dev/null (the runtime opens it on a closed fd 0-2), so
        // nothing it opens later can land there.
        let server = schedlab(tag, &args_of("chat-server 127.0.0.1 0 --timeout 3"));
        let mut server = closing(server, 2).stdout(Stdio::null()).spawn().unwrap();
        let fd2 = format!("/proc/{}/fd/2", server.id());
        let _ = until(SECS(10), Duration::from_millis(10), || {
            std::fs::read_link(&fd2)
        });
        assert_eq!(
            std::fs::read_link(&fd2).unwrap(),
            std::path::Path::new("/dev/null")
        );
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: kill takes no pointer; the pid is our unreaped child.
        unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
        let status = wait_within(&mut server, SECS(20)).expect("chat-server ends on SIGTERM");
        assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    });
}

#[test]
fn a_closed_stdout_loses_only_the_text() {
    leaves_nothing("a_closed_stdout_loses_only_the_text", |tag| {
        for line in ["msgbench -n 2 --queues 8", "hackbench -g 1 -f 2 -l 10"] {
            let out = output_within(closing(schedlab(tag, &args_of(line)), 1), SECS(60), "1>&-");
            assert!(out.status.success(), "{line} >&-: {out:?}");
            assert!(!text(&out.stderr).contains("panicked"), "{out:?}");
        }
    });
}

#[test]
fn a_stdout_reader_gone_ends_the_run_quietly_after_its_clean_up() {
    leaves_nothing(
        "a_stdout_reader_gone_ends_the_run_quietly_after_its_clean_up",
        |tag| {
            // hackbench writes at start: its 40 tasks must go with it. msgbench writes at the
            // end: its queues must be gone. chat-bench writes after each run: it must stop,
            // server too.
            for line in [
                "hackbench -g 1 -f 4 -l 100",
                "msgbench -n 3 --queues 16",
                "chat-bench 1 20",
                "ipc-pingpong --kind sem --pairs 1 --pin none --duration 0.3",
            ] {
                let case = format!("{line} | head -0");
                let out = with_broken_pipe(schedlab(tag, &args_of(line)), 1, &case);
                assert_eq!(
                    out.status.code(),
                    Some(141),
                    "{line} with its stdout reader gone: {out:?}"
                );
                assert!(
                    out.stderr.is_empty(),
                    "{line}: not quiet: {}",
                    text(&out.stderr)
                );
                assert_no_process(tag, SECS(10), &case);
            }
        },
    );
}

#[test]
fn a_stderr_reader_gone_loses_only_the_text() {
    leaves_nothing("a_stderr_reader_gone_loses_only_the_text", |tag| {
        let out = with_broken_pipe(
            schedlab(tag, &args_of("msgbench -n 1 --queues 16777216")),
            2,
            "error line",
        );
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let report = schedlab(tag, &args_of("msgbench -n 2 --queues 8"));
        let out = with_broken_pipe(report, 2, "report");
        assert!(out.status.success(), "{out:?}");
        assert!(text(&out.stdout).contains("msgget iterations"));
    });
}
