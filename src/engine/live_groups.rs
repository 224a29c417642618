//! The registry of live process groups and cgroups that the exit hook kills when the process
//! is ended by a signal or a panic: every Lab publishes its live workloads here after every
//! change and sample, and the dashboard's evidence names them from here.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::LiveGroup;
use crate::sys::kernel::cgroup;

/// What the exit hook kills when the process is ended by a signal or a panic, while the Lab
/// that started them may be busy: each Lab's live workloads, by the Lab's key, kept up to date
/// by the Lab itself after every change and sample (a test binary runs several Labs at once).
static LIVE: Mutex<Vec<(u64, Vec<LiveGroup>)>> = Mutex::new(Vec::new());

/// Registers, once, the exit hook that kills every live workload (lifeline runs it on
/// SIGTERM, SIGHUP, SIGINT and panics). A SIGKILL leaves it to the supervisor's lifeline
/// pipe: each workload gets SIGTERM when the pipe's writer, us, is gone. Every Lab calls it.
pub(crate) fn install_exit_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| crate::sys::exit::lifeline::on_exit(kill_live_groups));
}

fn kill_live_groups() {
    let groups = match LIVE.try_lock() {
        Ok(mut g) => std::mem::take(&mut *g),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    let groups: Vec<LiveGroup> = groups.into_iter().flat_map(|(_, g)| g).collect();
    if groups.is_empty() {
        return;
    }
    let pgids: Vec<u32> = groups.iter().map(|g| g.pgid).collect();
    crate::sys::exit::groups::kill(&pgids);
    // cgroups outlive their tasks unless removed; give the killed tasks a moment to exit.
    let deadline = Instant::now() + Duration::from_millis(500);
    for g in &groups {
        cgroup::kill_and_remove_dirs(&g.cgroup_dirs, deadline);
    }
    // What they made in SysV, once they are gone: nothing is left when we exit.
    crate::sys::exit::groups::wait_then_sweep(&pgids, Duration::from_millis(1500));
}

/// The live workloads' process groups and names, as last published.
pub(crate) fn live_workloads() -> Vec<(u32, String)> {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .flat_map(|(_, groups)| groups)
        .map(|g| (g.pgid, g.name.clone()))
        .collect()
}

/// Tells the exit hook which workloads the Lab keyed `lab` has live now.
pub(super) fn publish(lab: u64, groups: Vec<LiveGroup>) {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    match live.iter_mut().find(|(key, _)| *key == lab) {
        Some(entry) => entry.1 = groups,
        None => live.push((lab, groups)),
    }
}

/// Forgets the Lab keyed `lab`: it stopped its workloads itself.
pub(super) fn forget(lab: u64) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(key, _)| *key != lab);
}
