//! Changing a running workload's knobs: nice, scheduling policy and CPU affinity, for every
//! thread of every process in its group.
//!
//! The kernel applies these per thread, and a new thread inherits them from the thread that
//! created it. So each change sweeps the group's threads until a sweep finds none it has not
//! already changed: a fork loop's next child is born from a parent already changed.
//! Placement (session, cgroup) cannot change under a live process group: the caller restarts
//! the workload for that.

use std::collections::HashSet;

use anyhow::{bail, Result};
use nix::errno::Errno;
use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use super::{policy_number, usable_cpus};
use crate::knobs::{Knobs, Policy};
use crate::sys::kernel::cgroup::WorkloadCgroup;
use crate::sys::kernel::proc;

/// Which threads belong to a workload.
pub enum Scope<'a> {
    /// Every thread of every process whose process group is this.
    ProcessGroup(u32),
    /// Every thread in this cgroup (exact, even for a process that left its group).
    Cgroup(&'a WorkloadCgroup),
    /// These threads (an attached workload's, each saved in the undo journal first).
    Threads(&'a [u32]),
}

impl Scope<'_> {
    /// The thread ids in scope now. A task may vanish right after: callers treat ESRCH as gone.
    pub fn threads(&self) -> Vec<u32> {
        match self {
            Scope::Cgroup(g) => g.threads(),
            Scope::ProcessGroup(pgid) => group_threads(*pgid),
            Scope::Threads(tids) => tids.to_vec(),
        }
    }
}

/// Threads of the processes in process group `pgid`, from /proc.
fn group_threads(pgid: u32) -> Vec<u32> {
    let mut tids = Vec::new();
    for pid in proc::pids() {
        if proc::read_stat(pid).map(|s| s.pgrp) != Some(pgid) {
            continue;
        }
        match proc::threads(pid) {
            Some(threads) => tids.extend(threads),
            None => tids.push(pid),
        }
    }
    tids
}

/// What changed between two sets of knobs, in the order it is applied.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub nice: Option<i32>,
    pub policy: Option<(Policy, u8)>,
    /// Some(None) = back to every CPU.
    pub affinity: Option<Option<Vec<usize>>>,
}

impl Change {
    pub fn between(old: &Knobs, new: &Knobs) -> Self {
        Change {
            nice: (old.nice != new.nice).then_some(new.nice),
            policy: (old.policy != new.policy
                || (new.policy.is_realtime() && old.rt_priority != new.rt_priority))
                .then_some((new.policy, new.rt_priority)),
            affinity: (old.affinity != new.affinity).then(|| new.affinity.clone()),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Change::default()
    }
}

/// Applies `change` to every thread in `scope`. Returns how many threads were changed.
/// A refused change (EPERM) is a clear error naming what needs privilege.
pub fn apply(scope: &Scope, change: &Change) -> Result<usize> {
    if change.is_empty() {
        return Ok(0);
    }
    if let Some(nice) = change.nice {
        if !(-20..=19).contains(&nice) {
            bail!("nice must be -20..19, not {nice}");
        }
    }
    if let Some((policy, prio)) = change.policy {
        if policy.is_realtime() && !(1..=99).contains(&prio) {
            bail!("real-time priority must be 1..99, not {prio}");
        }
    }
    let cpuset = match &change.affinity {
        Some(Some(cpus)) => Some(super::cpu_set(cpus)?),
        Some(None) => Some(super::cpu_set(&(0..usable_cpus()).collect::<Vec<_>>())?),
        None => None,
    };
    let mut done: HashSet<u32> = HashSet::new();
    // New threads inherit from their (already changed) creator, so this settles quickly; the
    // bound only guards against a group that spawns threads faster than we sweep.
    for _ in 0..8 {
        let fresh: Vec<u32> = scope
            .threads()
            .into_iter()
            .filter(|t| !done.contains(t))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for tid in fresh {
            if apply_one(tid, change, cpuset.as_ref())? {
                done.insert(tid);
            }
        }
    }
    Ok(done.len())
}

/// Returns Ok(false) when the thread is already gone.
fn apply_one(tid: u32, change: &Change, cpuset: Option<&CpuSet>) -> Result<bool> {
    let id = tid as libc::id_t;
    if let Some(nice) = change.nice {
        // Raw libc: nix has no setpriority.
        // SAFETY: setpriority takes integers only.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, id, nice) } < 0 {
            return refused(std::io::Error::last_os_error(), || {
                format!("setting nice {nice} (lowering nice needs root or CAP_SYS_NICE)")
            });
        }
    }
    if let Some((policy, prio)) = change.policy {
        let param = libc::sched_param {
            sched_priority: if policy.is_realtime() { prio as i32 } else { 0 },
        };
        // Raw libc: nix has no sched_setscheduler.
        // SAFETY: `param` is a live sched_param that sched_setscheduler only reads.
        if unsafe { libc::sched_setscheduler(tid as libc::pid_t, policy_number(policy), &param) }
            < 0
        {
            return refused(std::io::Error::last_os_error(), || {
                if policy.is_realtime() {
                    format!(
                        "setting the {} policy (real-time needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO above 0)",
                        policy.word()
                    )
                } else {
                    format!("setting the {} policy", policy.word())
                }
            });
        }
    }
    if let Some(set) = cpuset {
        if let Err(errno) = sched_setaffinity(Pid::from_raw(tid as i32), set) {
            return refused(errno.into(), || "setting the CPU affinity".to_string());
        }
    }
    Ok(true)
}

fn refused(err: std::io::Error, what: impl FnOnce() -> String) -> Result<bool> {
    match err.raw_os_error() {
        Some(e) if e == Errno::ESRCH as i32 => Ok(false),
        Some(e) if e == Errno::EPERM as i32 || e == Errno::EACCES as i32 => {
            bail!("{}: not permitted", what())
        }
        _ => Err(anyhow::Error::new(err).context(what())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::spawn;
    use crate::supervisor::tests::sh;

    #[test]
    fn stat_pgrp_survives_odd_comm() {
        let line = b"12 (a) b) S 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n";
        assert_eq!(proc::stat(line).map(|s| s.pgrp), Some(77));
    }

    #[test]
    fn change_lists_only_differences() {
        let old = Knobs::default();
        let new = Knobs {
            nice: 5,
            ..Knobs::default()
        };
        assert_eq!(
            Change::between(&old, &new),
            Change {
                nice: Some(5),
                ..Change::default()
            }
        );
        assert!(Change::between(&old, &old).is_empty());
    }

    fn nice_of(tid: u32) -> i32 {
        proc::read_stat(tid).unwrap().nice
    }

    /// Renices a live shell and its background child (one process group) at once.
    #[test]
    fn renice_reaches_every_process_of_the_group() {
        let spec = sh("knobs-test", "sleep 30 & echo $!; wait", Knobs::default());
        let mut run = spawn(&spec).unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(run.child_mut().stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let sleeper: u32 = line.trim().parse().unwrap();
        let change = Change {
            nice: Some(7),
            policy: Some((Policy::Batch, 0)),
            ..Change::default()
        };
        let n = apply(&Scope::ProcessGroup(run.pgid()), &change).unwrap();
        assert!(n >= 2, "changed {n} threads");
        assert_eq!(nice_of(run.pid), 7);
        assert_eq!(nice_of(sleeper), 7);
        assert_eq!(
            // SAFETY: sched_getscheduler takes a pid only.
            unsafe { libc::sched_getscheduler(sleeper as libc::pid_t) },
            libc::SCHED_BATCH
        );
        run.stop(std::time::Duration::from_millis(500));
    }
}
