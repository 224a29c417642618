//! Helpers shared by the SysV IPC tests: running the binary with a bound on time, and
//! reading a process's SysV ledger to learn which objects it made. (Uses the crate's
//! `common` module: a file that includes this one declares both.)
#![allow(dead_code)]

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use crate::common::wait::{until, until_none_left};

pub const BIN: &str = env!("CARGO_BIN_EXE_schedlab");

pub fn schedlab(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).stdin(Stdio::null());
    c
}

/// Runs to the end, killing it (and failing) if it takes longer than `limit`.
pub fn run_bounded(args: &[&str], limit: Duration) -> Output {
    let child = schedlab(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start schedlab");
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    let watchdog = std::thread::spawn(move || {
        let ended = until(limit, Duration::from_millis(20), || {
            flag.load(std::sync::atomic::Ordering::SeqCst)
                .then_some(())
                .ok_or(())
        });
        if ended.is_err() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        ended.is_err()
    });
    let out = child.wait_with_output().expect("wait for schedlab");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(
        !watchdog.join().unwrap(),
        "schedlab {args:?} ran longer than {limit:?} and was killed"
    );
    out
}

/// Waits for a child started with `spawn`, killing it (and failing) after `limit`.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    until(limit, Duration::from_millis(10), || {
        child.try_wait().unwrap().ok_or(())
    })
    .unwrap_or_else(|()| {
        let _ = child.kill();
        let _ = child.wait();
        panic!("pid {} did not end within {limit:?}", child.id());
    })
}

/// The ledger file of a schedlab process, if it has one (yet, or still).
pub fn ledger_of(pid: u32) -> Option<PathBuf> {
    schedlab::sys::kernel::sysv::ledger_of(pid).map(|l| l.path)
}

pub use schedlab::sys::kernel::sysv::Object as Obj;

/// Objects a ledger names now: recorded by id, or found under its keys.
pub fn recorded(path: &std::path::Path) -> Vec<Obj> {
    schedlab::sys::kernel::sysv::read_ledger(path).map_or_else(Vec::new, |l| l.objects)
}

/// Waits until `pid`'s ledger records at least `n` objects; returns them.
pub fn wait_for_objects(pid: u32, n: usize, limit: Duration) -> (PathBuf, Vec<Obj>) {
    until(limit, Duration::from_millis(5), || {
        let path = ledger_of(pid).ok_or(())?;
        let objs = recorded(&path);
        if objs.len() >= n {
            Ok((path, objs))
        } else {
            Err(())
        }
    })
    .unwrap_or_else(|()| panic!("pid {pid} recorded fewer than {n} SysV objects within {limit:?}"))
}

pub fn exists(obj: Obj) -> bool {
    match obj {
        // SAFETY: semctl(GETVAL) takes no fourth argument; an id that is gone fails with EINVAL.
        Obj::Sem(id) => unsafe { libc::semctl(id, 0, libc::GETVAL) >= 0 },
        Obj::Msg(id) => {
            // SAFETY: libc::msqid_ds is plain old data: all-zero bytes are a valid value.
            let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
            // SAFETY: `ds` is a live, writable msqid_ds for IPC_STAT to fill.
            unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) >= 0 }
        }
    }
}

/// Children of a live process (from /proc/PID/task/*/children).
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|w| w.parse::<u32>().ok()),
                );
            }
        }
    }
    out
}

pub use schedlab::sys::kernel::proc::alive;

/// Waits until none of `pids` is alive; fails after `limit`.
pub fn wait_gone(pids: &[u32], limit: Duration) {
    let gone = until_none_left(limit, Duration::from_millis(10), || {
        pids.iter().filter(|&&p| alive(p)).collect()
    });
    if let Err(left) = gone {
        panic!("tasks {left:?} still alive after {limit:?}");
    }
}

pub fn usable_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

pub fn stderr_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim_end().to_string()
}
