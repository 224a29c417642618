//! Runs schedlab with the test process as a child subreaper, so that any task the command
//! leaves behind is reparented here, and asserts that none is left. (Uses the crate's
//! `common` module: a file that includes this one declares both.)
#![allow(dead_code)]

use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::common::wait::until_none_left;

/// The tests of one file check for leftover processes of this process: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Takes this file's turn and makes the test process the subreaper of what it starts.
pub fn serial() -> MutexGuard<'static, ()> {
    let turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _ = nix::sys::prctl::set_child_subreaper(true);
    turn
}

/// Runs `schedlab ARGS` to completion and asserts nothing of it is left running.
pub fn run(args: &[&str]) -> Output {
    let _serial = serial();
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .output()
        .expect("running schedlab");
    assert_no_leftovers(args);
    out
}

/// Reaps what was reparented here and waits a few seconds for the rest to go.
pub fn assert_no_leftovers(args: &[&str]) {
    let me = std::process::id().to_string();
    let gone = until_none_left(Duration::from_secs(5), Duration::from_millis(50), || {
        while matches!(
            waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)),
            Ok(status) if status != WaitStatus::StillAlive
        ) {}
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .filter(|s| s[s.rfind(')').unwrap() + 2..].split(' ').nth(1) == Some(&me))
            .collect()
    });
    if let Err(left) = gone {
        panic!("schedlab {args:?} left processes behind: {left:?}");
    }
}
