//! Where each workload's group entity stood during the traced run, from the scheduler's debug
//! table read a few times a second: on the CPUs where the group had tasks queued, how often
//! EEVDF held it eligible and by how much virtual time it trailed or led its queue's average.
//! Two groups side by side, one always eligible and one never, show the scheduler choosing
//! between groups, not between tasks (`pingpong-beside-hog`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::probe::parse;
use crate::sys::kernel::proc;
use crate::sys::kernel::sched_debug::{self, GroupQueue};

/// One workload's group entity over the reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupStanding {
    pub workload: String,
    /// Its group's path in the table ("/autogroup-12", a cgroup's path).
    pub group: String,
    /// Readings of its entity (one per CPU with its tasks queued, per read), and how many of
    /// them found it eligible (its virtual lag at or above zero).
    pub readings: u64,
    pub eligible: u64,
    /// Its mean virtual lag, in ms (positive: owed time), and its mean weight (1.0: a nice-0
    /// task).
    pub lag_ms: f64,
    pub weight: f64,
}

#[derive(Default)]
struct Tally {
    group: String,
    readings: u64,
    eligible: u64,
    lag_ms: f64,
    weight: f64,
}

/// The reads so far, by workload.
#[derive(Default)]
pub struct GroupWatch {
    /// Each workload's process group's leader and the group path found for it (None: it is
    /// in the root group, or gone).
    paths: HashMap<u32, Option<String>>,
    tallies: HashMap<String, Tally>,
}

impl GroupWatch {
    /// Reads the table once and notes where each workload's group stands; false when the
    /// table cannot be read here (then there is no point reading it again).
    pub fn read(&mut self, workloads: &HashMap<u32, String>) -> bool {
        let Some(queues) = sched_debug::read() else {
            return false;
        };
        for (&leader, name) in workloads {
            let path = self
                .paths
                .entry(leader)
                .or_insert_with(|| group_of(leader, &queues))
                .clone();
            let Some(path) = path else { continue };
            let t = self.tallies.entry(name.clone()).or_default();
            t.group = path.clone();
            for s in sched_debug::standing(&queues, &path) {
                t.readings += 1;
                t.eligible += u64::from(s.lag_ms >= 0.0);
                t.lag_ms += s.lag_ms;
                t.weight += s.weight;
            }
        }
        true
    }

    /// Each workload read at least once, by name.
    pub fn report(self) -> Vec<GroupStanding> {
        let mut out: Vec<GroupStanding> = self
            .tallies
            .into_iter()
            .filter(|(_, t)| t.readings > 0)
            .map(|(workload, t)| GroupStanding {
                workload,
                group: t.group,
                readings: t.readings,
                eligible: t.eligible,
                lag_ms: t.lag_ms / t.readings as f64,
                weight: t.weight / t.readings as f64,
            })
            .collect();
        out.sort_by(|a, b| a.workload.cmp(&b.workload));
        out
    }
}

/// The group a process's tasks are queued under, as the table names it: its cgroup in the cpu
/// controller's hierarchy (or the nearest ancestor the table has), else, in the root group,
/// its session's autogroup. None for the root group itself: no entity stands for it.
fn group_of(pid: u32, queues: &[GroupQueue]) -> Option<String> {
    let cgroup = proc::process_file(pid, "cgroup")?;
    let (mut path, _) = parse::cpu_cgroup(&cgroup)?;
    while path != "/" && !sched_debug::has_group(queues, &path) {
        path = sched_debug::parent(&path).to_string();
    }
    if path != "/" {
        return Some(path);
    }
    let autogroup = proc::process_file(pid, "autogroup")?;
    let (id, _) = parse::autogroup(&autogroup)?;
    let path = format!("/autogroup-{id}");
    sched_debug::has_group(queues, &path).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_in_the_root_group_has_its_session_s_autogroup() {
        // This test process: a table made up to hold its autogroup finds it there; one
        // without it finds nothing (the root group has no entity).
        let me = std::process::id();
        let Some(text) = proc::process_file(me, "autogroup") else {
            return;
        };
        let cgroup = proc::process_file(me, "cgroup").unwrap();
        let in_root = parse::cpu_cgroup(&cgroup).is_some_and(|(p, _)| p == "/");
        let Some((id, _)) = parse::autogroup(&text) else {
            return;
        };
        let queue = |path: &str| GroupQueue {
            cpu: 0,
            path: path.into(),
            h_nr_queued: 1,
            avg_vruntime_ms: Some(0.0),
            entity: None,
        };
        let mine = format!("/autogroup-{id}");
        let with = [queue("/"), queue(&mine)];
        if in_root && id != 0 {
            assert_eq!(group_of(me, &with), Some(mine));
        }
        assert_eq!(group_of(me, &[queue("/")]), None);
        assert_eq!(group_of(u32::MAX, &with), None, "a process gone");
    }
}
