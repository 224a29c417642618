//! Why a workload is due what it is due (from the rule that bounded it in the solver), and why
//! it got less or more (from what the data over the verdict window shows).

use super::cpuset::CpuSet;
use super::frame::{Cause, Due, Verdict};
use super::solver::{Class, Limit, Solution, Task};
use super::tree::Tree;
use super::window::Means;

/// A claimant's share below this (CPUs) says nothing worth explaining.
const TINY: f64 = 1e-4;

/// The usable CPUs of a task: its set within the machine's, or all of them.
pub fn usable(t: &Task, online: &CpuSet) -> CpuSet {
    let m = t.cpus.intersection(online);
    if m.is_empty() {
        online.clone()
    } else {
        m
    }
}

/// Why the tasks `mine` (indices into `tasks`) are due what they are due.
pub fn due(mine: &[usize], tasks: &[Task], sol: &Solution, tree: &Tree, online: &CpuSet) -> Due {
    let wants: f64 = mine.iter().map(|&i| tasks[i].demand).sum();
    let fair: f64 = mine.iter().map(|&i| sol.share[i]).sum();
    if wants < 0.005 && fair < 0.005 {
        return Due::Nothing;
    }
    // The rule behind most of its due share.
    let mut by_limit: Vec<(Limit, f64)> = Vec::new();
    for &i in mine {
        let weight = sol.share[i].max(tasks[i].demand * 1e-3);
        match by_limit.iter_mut().find(|(l, _)| *l == sol.limit[i]) {
            Some((_, w)) => *w += weight,
            None => by_limit.push((sol.limit[i].clone(), weight)),
        }
    }
    by_limit.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some((limit, _)) = by_limit.into_iter().next() else {
        return Due::Nothing;
    };
    // Due within a hair of all it wants (the last free CPU filled as it got there, or the
    // observer's own sliver): that is all it wants.
    if fair >= 0.97 * wants && !matches!(limit, Limit::Quota(_) | Limit::Reservation) {
        return Due::AllItWants { wants };
    }
    match limit {
        Limit::Idle => Due::Nothing,
        Limit::Demand => Due::AllItWants { wants },
        Limit::Reservation => Due::Reservation { cpus: fair },
        Limit::Quota(g) => Due::Quota {
            cpus: tree.groups[g].quota.unwrap_or(fair),
            group: tree.names[g].clone(),
        },
        Limit::Cpus(set) => share_of(mine, tasks, sol, tree, online, &set, wants),
    }
}

/// Real-time and deadline tasks confined to these CPUs took their part first: when that is
/// more than a sliver, it is what a fair task there is due.
fn realtime_took(tasks: &[Task], sol: &Solution, online: &CpuSet, set: &CpuSet) -> Option<Due> {
    let taken: f64 = tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.class != Class::Fair)
        .filter(|(_, t)| usable(t, online).is_subset(set))
        .map(|(k, _)| sol.share[k])
        .sum();
    (taken > 0.05 * set.len() as f64).then(|| Due::RealTime {
        taken: taken / set.len() as f64,
        cpus: set.to_string(),
    })
}

/// What the pool is: a group's part, or what a set of CPUs has left once those who want
/// less (and real-time tasks) have theirs.
fn pool_name(set: &CpuSet, online: &CpuSet, node: usize, pool: f64) -> String {
    let whole = pool >= set.len() as f64 - 0.01;
    let place = if set == online {
        "the machine".to_string()
    } else {
        format!("CPU {set}")
    };
    if node != 0 && set != online {
        format!("its group gets on CPU {set}")
    } else if node != 0 {
        "its group gets".to_string()
    } else if whole {
        format!("of {place}")
    } else {
        format!("{place} has left")
    }
}

/// Its weight's part of the pool it shares, or what real-time tasks leave of its CPUs.
fn share_of(
    mine: &[usize],
    tasks: &[Task],
    sol: &Solution,
    tree: &Tree,
    online: &CpuSet,
    set: &CpuSet,
    wants: f64,
) -> Due {
    let set = if set.is_empty() {
        online.clone()
    } else {
        set.clone()
    };
    let fair_class = mine.iter().any(|&i| tasks[i].class == Class::Fair);
    if fair_class {
        if let Some(due) = realtime_took(tasks, sol, online, &set) {
            return due;
        }
    }
    // Its peers are tasks of its own kind: real-time tasks take theirs before fair tasks share
    // what is left by weight, so neither is part of the other's pool.
    let bound_here = |k: usize| {
        matches!(&sol.limit[k], Limit::Cpus(s) if *s == set)
            && sol.share[k] > TINY
            && (tasks[k].class == Class::Fair) == fair_class
    };
    // Found once, in task order (the sums below add in the same order as a scan of every
    // task would): a CpuSet comparison per task per level of the climb otherwise.
    let is_bound: Vec<bool> = (0..tasks.len()).map(bound_here).collect();
    let bound: Vec<usize> = (0..tasks.len()).filter(|&k| is_bound[k]).collect();
    // Groups that hold a bound task, themselves or below.
    let mut holds_bound = vec![false; tree.groups.len()];
    for &k in &bound {
        let mut g = tasks[k].group;
        while g < holds_bound.len() && !holds_bound[g] {
            holds_bound[g] = true;
            if g == 0 {
                break;
            }
            g = tree.groups[g].parent;
        }
    }
    // The node most of it sits in.
    let mut nodes: Vec<(usize, f64)> = Vec::new();
    for &i in mine.iter().filter(|&&i| is_bound[i]) {
        let n = tasks[i].group.min(tree.groups.len() - 1);
        match nodes.iter_mut().find(|(m, _)| *m == n) {
            Some((_, w)) => *w += tasks[i].weight,
            None => nodes.push((n, tasks[i].weight)),
        }
    }
    nodes.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(&(mut node, mut weight)) = nodes.first() else {
        return Due::AllItWants { wants };
    };
    // Climb while it holds all the weight still growing at its level: a workload alone in its
    // session is due its session's part of what the session's parent shares out.
    let (of_weight, pool) = loop {
        let mut of_weight = 0.0;
        for &k in &bound {
            if tasks[k].group == node {
                of_weight += tasks[k].weight;
            }
        }
        for (c, group) in tree.groups.iter().enumerate().skip(1) {
            if group.parent == node && c != node && holds_bound[c] {
                of_weight += group.weight;
            }
        }
        let pool: f64 = bound
            .iter()
            .filter(|&&k| tree.is_under(tasks[k].group, node))
            .map(|&k| sol.share[k])
            .sum();
        if node != 0 && weight >= of_weight * 0.999 {
            weight = tree.groups[node].weight;
            node = tree.parent(node);
            continue;
        }
        break (of_weight, pool);
    };
    Due::Share {
        weight,
        of_weight,
        pool_name: pool_name(&set, online, node, pool),
        pool,
        wants,
    }
}

/// What the data shows about a gap, given the verdict over the window.
pub struct Evidence<'a> {
    pub verdict: Verdict,
    pub means: Means,
    /// Its CPUs and the CPUs its tasks were seen on.
    pub allowed: &'a CpuSet,
    pub used: &'a CpuSet,
    /// Tasks that wanted most of the interval.
    pub busy_tasks: usize,
    /// For "ahead": those who got less than they were due, most short first.
    pub short_ones: Vec<String>,
    /// For "short": those who got more than they were due, most ahead first.
    pub ahead_ones: Vec<String>,
}

pub fn cause(e: Evidence) -> Cause {
    match e.verdict {
        Verdict::Starved | Verdict::Short => {
            let m = e.means.shares;
            let allowed = e.allowed.len().max(1) as f64;
            if m.throttled > 0.1 * m.demand.max(TINY) {
                Cause::Throttled {
                    pct: 100.0 * m.throttled / m.demand.max(TINY),
                }
            } else if m.rt_taken > 0.1 * allowed {
                Cause::RealTime {
                    pct: 100.0 * m.rt_taken / allowed,
                }
            } else if e.busy_tasks >= 2
                && !e.used.is_empty()
                && e.used.len() < e.busy_tasks.min(e.allowed.len())
            {
                Cause::Crowded {
                    used: e.used.to_string(),
                    allowed: e.allowed.to_string(),
                }
            } else if m.wait > 0.0 {
                Cause::RunQueue {
                    wait_pct: m.wait * 100.0,
                    cpus: if e.used.is_empty() {
                        e.allowed.to_string()
                    } else {
                        e.used.to_string()
                    },
                    behind: e.ahead_ones,
                }
            } else {
                Cause::None
            }
        }
        Verdict::Ahead if !e.short_ones.is_empty() => Cause::PaidBy {
            names: e.short_ones,
        },
        _ => Cause::None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::model::solver::{self, Machine};
    use crate::model::tree::Placement;

    #[test]
    fn a_real_time_task_is_due_its_part_of_what_the_fair_reserve_leaves() {
        // A FIFO hog and a normal hog of one session on one CPU; the fair server keeps 10%.
        let mut tree = Tree::default();
        let session = Placement {
            cgroup: None,
            autogroup: Some((7, 0)),
            session: 7,
        };
        let group = tree.place(&session, true, &HashMap::new(), None);
        let hog = |class| Task {
            group,
            weight: 1024.0,
            demand: 1.0,
            cpus: CpuSet::new(),
            class,
        };
        let tasks = [hog(Class::RealTime(50)), hog(Class::Fair)];
        let online = CpuSet::first(1);
        let machine = Machine {
            cpus: online.clone(),
            fair_reserve: 0.1,
        };
        let sol = solver::solve(&machine, &tree.groups, &tasks);
        let Due::Share {
            weight,
            of_weight,
            pool,
            ..
        } = due(&[0], &tasks, &sol, &tree, &online)
        else {
            panic!("{:?}", due(&[0], &tasks, &sol, &tree, &online));
        };
        // Not half of the CPU it shares with the fair task: all of what it may take.
        assert!((sol.share[0] - 0.9).abs() < 1e-9);
        assert!(
            (weight / of_weight * pool - 0.9).abs() < 1e-9,
            "{weight}/{of_weight} × {pool}"
        );
        assert!(matches!(
            due(&[1], &tasks, &sol, &tree, &online),
            Due::RealTime { taken, .. } if (taken - 0.9).abs() < 1e-9
        ));
    }
}
