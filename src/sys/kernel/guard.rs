//! The size guard: refuses, before anything starts, a workload the machine cannot hold.
//!
//! Thousands of tasks that fail half-way (EAGAIN from clone, an OOM kill) leave a machine
//! thrashing and a run that means nothing. The commands that start many tasks ask [`check`]
//! first; it compares the tasks against the headroom left under kernel.threads-max,
//! kernel.pid_max, the pids cgroup and RLIMIT_NPROC, and their memory against MemAvailable,
//! and names the limit that stops the run and how to raise it. `--force` skips it. A
//! supervised workload skips it too: its supervisor (`run`, the dashboard) checked the
//! scenario's total.

use anyhow::{bail, Result};
use nix::sys::resource::{getrlimit, Resource, RLIM_INFINITY};
use nix::unistd::{geteuid, getuid};

use super::proc;

/// Memory one thread of a load generator comes to cost: a small stack, its kernel stack,
/// slack. Conservative on purpose: the guard is for typos (1,000 groups), not for tuning.
pub(crate) const BYTES_PER_THREAD: u64 = 96 * 1024;
/// Memory one forked process comes to cost (page tables, kernel stack, touched pages).
pub(crate) const BYTES_PER_PROCESS: u64 = 512 * 1024;
/// Address space one thread reserves: its stack (64-128 KiB here), guard page, signal stack.
pub(crate) const VBYTES_PER_THREAD: u64 = 256 * 1024;
/// Address space glibc reserves for each malloc arena a new thread may get (8 per CPU at most).
const ARENA_BYTES: u64 = 64 << 20;

/// What a run asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    /// Threads and processes it will have alive at once.
    pub tasks: u64,
    /// Memory those tasks cost.
    pub bytes: u64,
    /// Threads among them sharing one address space (RLIMIT_AS is per process).
    pub threads: u64,
}

impl Demand {
    pub fn threads(n: u64) -> Self {
        Self {
            tasks: n,
            bytes: n.saturating_mul(BYTES_PER_THREAD),
            threads: n,
        }
    }

    pub fn processes(n: u64) -> Self {
        Self {
            tasks: n,
            bytes: n.saturating_mul(BYTES_PER_PROCESS),
            threads: 0,
        }
    }

    /// `n` tasks: threads of one process, or processes.
    pub fn tasks(n: u64, threads: bool) -> Self {
        if threads {
            Self::threads(n)
        } else {
            Self::processes(n)
        }
    }

    pub fn plus(self, other: Self) -> Self {
        Self {
            tasks: self.tasks.saturating_add(other.tasks),
            bytes: self.bytes.saturating_add(other.bytes),
            // Workloads of a scenario are processes of their own: the largest one counts.
            threads: self.threads.max(other.threads),
        }
    }
}

/// Refuses `demand` when it does not fit, unless `force`. `what` names the run in the error.
pub fn check(what: &str, demand: Demand, force: bool) -> Result<()> {
    if force || crate::sys::exit::lifeline::supervised() {
        return Ok(());
    }
    if let Some(why) = refusal(demand, &headroom()) {
        bail!("{what} is too big for this machine: {why}; add --force to start it anyway");
    }
    Ok(())
}

/// What the machine has left: tasks (and the limit that decides) and available memory.
#[derive(Clone, Debug, Default)]
pub(crate) struct Headroom {
    pub tasks: Option<(u64, String)>,
    pub mem_available: Option<u64>,
    /// RLIMIT_AS and the address space this process already uses, when limited.
    pub address_space: Option<(u64, u64)>,
    pub cpus: u64,
}

pub(crate) fn headroom() -> Headroom {
    let mut tasks = free_tasks();
    if let Some(n) = nproc_headroom() {
        if tasks.as_ref().is_none_or(|(t, _)| n.0 < *t) {
            tasks = Some(n);
        }
    }
    Headroom {
        tasks,
        mem_available: proc::mem_available(),
        address_space: address_space(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()) as u64,
    }
}

/// Why `demand` does not fit in `room`, or None when it does. Pure, for the unit tests.
pub(crate) fn refusal(demand: Demand, room: &Headroom) -> Option<String> {
    if let Some((free, why)) = &room.tasks {
        if demand.tasks > *free {
            return Some(format!(
                "{} tasks wanted but only {free} more can be created under {why}; \
                 raise it (sysctl, ulimit -u or the cgroup's pids.max) or ask for fewer",
                demand.tasks
            ));
        }
    }
    if let Some(avail) = room.mem_available {
        if demand.bytes > avail {
            return Some(format!(
                "{} tasks need about {} MiB but MemAvailable is {} MiB; free memory or ask for fewer",
                demand.tasks,
                demand.bytes >> 20,
                avail >> 20
            ));
        }
    }
    if let (Some((limit, used)), true) = (room.address_space, demand.threads > 0) {
        let arenas = demand.threads.min(8 * room.cpus.max(1));
        let need = used
            .saturating_add(demand.threads.saturating_mul(VBYTES_PER_THREAD))
            .saturating_add(arenas.saturating_mul(ARENA_BYTES));
        if need > limit {
            return Some(format!(
                "{} threads need about {} MiB of address space (stacks and malloc arenas) \
                 but RLIMIT_AS is {} MiB; raise it with ulimit -v or ask for fewer",
                demand.threads,
                need >> 20,
                limit >> 20
            ));
        }
    }
    None
}

/// (RLIMIT_AS, VmSize now) when the address space is limited.
fn address_space() -> Option<(u64, u64)> {
    let (soft, _) = getrlimit(Resource::RLIMIT_AS).ok()?;
    if soft == RLIM_INFINITY {
        return None;
    }
    Some((soft, proc::own_vm_size()?))
}

/// RLIMIT_NPROC counts every task of our real uid; the kernel ignores it for root.
fn nproc_headroom() -> Option<(u64, String)> {
    if geteuid().is_root() {
        return None;
    }
    let (soft, _) = getrlimit(Resource::RLIMIT_NPROC).ok()?;
    if soft == RLIM_INFINITY {
        return None;
    }
    let mine = proc::threads_of_user(getuid().as_raw());
    Some((
        soft.saturating_sub(mine),
        format!("RLIMIT_NPROC ({soft}, {mine} tasks of this user exist)"),
    ))
}

/// Tasks the system (and our pids cgroup) can still create, and the limit that decides it.
pub(crate) fn free_tasks() -> Option<(u64, String)> {
    let total = proc::task_count()?;
    let mut best: Option<(u64, String)> = None;
    let mut consider = |free: u64, why: String| {
        if best.as_ref().is_none_or(|(b, _)| free < *b) {
            best = Some((free, why));
        }
    };
    if let Some(max) = proc::threads_max() {
        consider(
            max.saturating_sub(total),
            format!("kernel.threads-max ({max}, {total} tasks exist)"),
        );
    }
    if let Some(max) = proc::pid_max() {
        consider(
            max.saturating_sub(total),
            format!("kernel.pid_max ({max}, {total} tasks exist)"),
        );
    }
    if let Some((max, current, path)) = pids_cgroup() {
        consider(
            max.saturating_sub(current),
            format!("the pids cgroup {path} (pids.max {max}, {current} in use)"),
        );
    }
    best
}

/// pids.max and pids.current of our cgroup (v1 pids controller or v2), when limited.
fn pids_cgroup() -> Option<(u64, u64, String)> {
    let text = proc::own_cgroups()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let dirs: Vec<String> = if controllers.split(',').any(|c| c == "pids") {
            vec![format!("/sys/fs/cgroup/pids{path}")]
        } else if controllers.is_empty() {
            vec![
                format!("/sys/fs/cgroup{path}"),
                format!("/sys/fs/cgroup/unified{path}"),
            ]
        } else {
            continue;
        };
        for dir in dirs {
            if let (Some(max), Some(cur)) = (
                proc::read_u64(&format!("{dir}/pids.max")),
                proc::read_u64(&format!("{dir}/pids.current")),
            ) {
                return Some((max, cur, dir));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(tasks: u64, mem: u64) -> Headroom {
        Headroom {
            tasks: Some((tasks, "kernel.threads-max (100)".into())),
            mem_available: Some(mem),
            address_space: Some((1 << 40, 0)),
            cpus: 2,
        }
    }

    #[test]
    fn fits_passes_and_each_limit_is_named() {
        assert_eq!(refusal(Demand::threads(10), &room(100, 1 << 30)), None);
        let why = refusal(Demand::threads(101), &room(100, 1 << 30)).unwrap();
        assert!(why.contains("kernel.threads-max"), "{why}");
        let why = refusal(Demand::processes(10), &room(100, 1 << 20)).unwrap();
        assert!(why.contains("MemAvailable"), "{why}");
        assert_eq!(
            refusal(Demand::threads(u64::MAX), &Headroom::default()),
            None
        );
        let small_as = Headroom {
            address_space: Some((256 << 20, 16 << 20)),
            ..room(1_000_000, 1 << 40)
        };
        let why = refusal(Demand::threads(800), &small_as).unwrap();
        assert!(
            why.contains("RLIMIT_AS") && why.contains("ulimit -v"),
            "{why}"
        );
        // Processes each have their own address space.
        assert_eq!(refusal(Demand::processes(800), &small_as), None);
    }

    #[test]
    fn force_skips_the_check() {
        assert!(check("x", Demand::threads(u64::MAX), true).is_ok());
        assert!(check("x", Demand::threads(u64::MAX), false).is_err());
    }
}
