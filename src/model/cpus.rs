//! Where the workloads' tasks ran: each online CPU's busy share of the interval (its
//! /proc/stat line) and what each workload's tasks took of it. A task's CPU is its stat's
//! `processor`, the CPU it was last seen on (read every sweep for a process's main thread, at
//! status sweeps for the others), and all it ran over the interval is counted there: a task
//! that moved mid-interval counts on the CPU it ended on, and a process's reaped children on
//! their parent's.

use super::cpuset::CpuSet;
use super::frame::{CpuFrame, CpuShare};
use crate::probe::CpuTimes;

/// One task over the interval, for the per-CPU view.
#[derive(Clone, Copy, Debug)]
pub struct TaskOnCpu {
    /// Its workload, as an index into `workloads`.
    pub workload: usize,
    /// The CPU it was last seen on.
    pub cpu: Option<u32>,
    /// CPUs it received over the interval (1.0: a whole CPU).
    pub received: f64,
}

/// Each online CPU's figures, in CPU order. `workloads` are (id, name) in the Frame's order.
pub fn frames(
    before: &[CpuTimes],
    now: &[CpuTimes],
    online: &CpuSet,
    workloads: &[(u32, &str)],
    tasks: impl IntoIterator<Item = TaskOnCpu>,
) -> Vec<CpuFrame> {
    let ids: Vec<u32> = online.iter().collect();
    // Per CPU, per workload: share and tasks that ran.
    let mut took = vec![vec![(0.0_f64, 0_usize); workloads.len()]; ids.len()];
    for t in tasks {
        let Some(row) = t.cpu.and_then(|c| ids.binary_search(&c).ok()) else {
            continue;
        };
        let Some(cell) = took[row].get_mut(t.workload) else {
            continue;
        };
        if t.received > 0.0 {
            cell.0 += t.received;
            cell.1 += 1;
        }
    }
    ids.iter()
        .zip(took)
        .map(|(&id, row)| CpuFrame {
            id,
            busy: busy_share(before, now, id),
            by_workload: row
                .into_iter()
                .zip(workloads)
                .filter(|((_, tasks), _)| *tasks > 0)
                .map(|((share, tasks), &(wid, name))| CpuShare {
                    id: wid,
                    name: name.to_string(),
                    // Counting a moved task on one CPU can pass a whole one.
                    share: share.min(1.0),
                    tasks,
                })
                .collect(),
        })
        .collect()
}

/// CPU `id`'s busy time over busy and idle time between two reads; None when either read
/// lacks it, or no tick passed (/proc/stat counts in 10 ms ticks).
fn busy_share(before: &[CpuTimes], now: &[CpuTimes], id: u32) -> Option<f64> {
    let find = |list: &[CpuTimes]| list.iter().find(|c| c.id == id).cloned();
    let (a, b) = (find(before)?, find(now)?);
    let busy = b.busy_ns.saturating_sub(a.busy_ns) as f64;
    let idle = b.idle_ns.saturating_sub(a.idle_ns) as f64;
    (busy + idle > 0.0).then(|| busy / (busy + idle))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// One CPU's times since boot, in ms (the host's tests share it).
    pub(crate) fn times(id: u32, busy_ms: u64, idle_ms: u64) -> CpuTimes {
        CpuTimes {
            id,
            busy_ns: busy_ms * MS,
            idle_ns: idle_ms * MS,
            steal_ns: 0,
            irq_ns: 0,
        }
    }

    #[test]
    fn busy_and_whose_tasks_ran_where() {
        let before = [times(0, 1000, 5000), times(1, 2000, 5000)];
        // Over the interval CPU 0 was busy 750 of 1000 ms, CPU 1 250 of 1000.
        let now = [times(0, 1750, 5250), times(1, 2250, 5750)];
        let tasks = [
            // ref-job's two workers on CPU 0, a third that slept on CPU 1.
            TaskOnCpu {
                workload: 0,
                cpu: Some(0),
                received: 0.3,
            },
            TaskOnCpu {
                workload: 0,
                cpu: Some(0),
                received: 0.3,
            },
            TaskOnCpu {
                workload: 0,
                cpu: Some(1),
                received: 0.0,
            },
            // fork_load on CPU 1, and a task on a CPU that is not online.
            TaskOnCpu {
                workload: 1,
                cpu: Some(1),
                received: 0.2,
            },
            TaskOnCpu {
                workload: 1,
                cpu: Some(7),
                received: 0.5,
            },
            TaskOnCpu {
                workload: 1,
                cpu: None,
                received: 0.5,
            },
        ];
        let f = frames(
            &before,
            &now,
            &CpuSet::first(2),
            &[(1, "ref-job"), (2, "fork_load")],
            tasks,
        );
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].id, 0);
        assert_eq!(f[0].busy, Some(0.75));
        assert_eq!(f[0].by_workload.len(), 1);
        assert_eq!(f[0].by_workload[0].name, "ref-job");
        assert!((f[0].by_workload[0].share - 0.6).abs() < 1e-12);
        assert_eq!(f[0].by_workload[0].tasks, 2);
        assert_eq!(f[1].busy, Some(0.25));
        let names: Vec<&str> = f[1].by_workload.iter().map(|s| s.name.as_str()).collect();
        // A task that did not run is no task of CPU 1's.
        assert_eq!(names, ["fork_load"]);
        assert_eq!(f[1].by_workload[0].id, 2);
        assert!((f[1].by_workload[0].share - 0.2).abs() < 1e-12);
    }

    #[test]
    fn no_per_cpu_times_no_busy_share() {
        let f = frames(&[], &[], &CpuSet::first(1), &[], []);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].busy, None);
        assert!(f[0].by_workload.is_empty());
    }
}
