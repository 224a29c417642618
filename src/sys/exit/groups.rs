//! Ending whole process groups at exit: every workload runs in a group of its own, and an
//! exit path (a signal, a panic) must leave nothing of them: no process, no SysV object.

use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// [`kill`], then [`wait_then_sweep`].
pub(crate) fn kill_and_sweep(pgids: &[u32], within: Duration) {
    kill(pgids);
    wait_then_sweep(pgids, within);
}

/// SIGKILLs every group in `pgids` (the leader's pid; 0 and 1 are never groups of ours).
pub fn kill(pgids: &[u32]) {
    for &pgid in pgids.iter().filter(|&&p| p > 1) {
        let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
    }
}

/// Waits until no process of `pgids` is alive (zombies count as gone: they hold nothing), at
/// most `within`, then sweeps the SysV objects they can no longer remove themselves (a
/// ledger is swept once its owner is dead).
pub(crate) fn wait_then_sweep(pgids: &[u32], within: Duration) {
    let pgids: Vec<u32> = pgids.iter().copied().filter(|&p| p > 1).collect();
    if pgids.is_empty() {
        return;
    }
    let deadline = Instant::now() + within;
    while Instant::now() < deadline && any_alive_in(&pgids) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = crate::sys::kernel::sysv::sweep_orphans();
}

/// Whether any live (non-zombie) process is in one of `pgids`, from /proc/PID/stat.
fn any_alive_in(pgids: &[u32]) -> bool {
    crate::sys::kernel::proc::pids().into_iter().any(|pid| {
        crate::sys::kernel::proc::read_stat(pid)
            .is_some_and(|s| !matches!(s.state, b'Z' | b'X') && pgids.contains(&s.pgrp))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_group_is_waited_for() {
        let mut child = std::process::Command::new("sleep");
        std::os::unix::process::CommandExt::process_group(&mut child, 0);
        let mut child = child.arg("60").spawn().unwrap();
        let pgid = child.id();
        assert!(any_alive_in(&[pgid]));
        let t0 = Instant::now();
        kill_and_sweep(&[pgid], Duration::from_secs(10));
        // A zombie until reaped: gone for our purpose.
        assert!(!any_alive_in(&[pgid]));
        assert!(t0.elapsed() < Duration::from_secs(5));
        let _ = child.wait();
    }
}
