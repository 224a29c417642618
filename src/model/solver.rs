//! Fair shares under every rule the kernel enforces: weighted max-min over what each task
//! wanted, in the real group tree (cgroups, autogroups), within the CPUs each task may use,
//! after deadline and real-time tasks, and under bandwidth quotas.
//!
//! The method is progressive filling. Every task that still wants more grows at once, at a
//! rate its place in the tree gives it: the root grows at rate 1 and splits its rate among
//! its growing children in proportion to weight, and so on down to the tasks. A task stops
//! growing when
//! - it has all it wanted (its demand),
//! - a group above it reaches its quota (cpu.max), or
//! - a set of CPUs is full: the tasks that may run only on those CPUs have taken all of
//!   them (the most constrained set saturates first; the whole machine is the last set).
//!
//! Then its siblings split the rate it no longer uses. With every task free to use every CPU
//! and one level of groups this is plain water-filling; with CPU sets it is max-min fairness
//! over the sets (pinned tasks are due a share of their CPUs only, and free tasks take what is
//! left). Classes go in the kernel's order: deadline tasks get their reservation, real-time
//! tasks by priority get what they want up to what the kernel lets them take from each CPU
//! (all but the fair server's reserve), fair tasks share the rest, and real-time tasks take
//! back whatever reserve the fair tasks did not want.

use std::collections::HashMap;

use super::cpuset::CpuSet;

/// Which scheduling class serves a task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Class {
    /// SCHED_DEADLINE, with its reserved bandwidth (runtime / period, in CPUs).
    Deadline(f64),
    /// SCHED_FIFO or SCHED_RR at this priority (1..=99: higher runs first).
    RealTime(u32),
    /// SCHED_NORMAL, SCHED_BATCH, SCHED_IDLE: weighted sharing in the group tree.
    Fair,
}

/// A node of the group tree: the root (index 0), a cgroup, or an autogroup.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Its parent's index (ignored for the root). Parents come before their children.
    pub parent: usize,
    /// Its weight among its siblings (the kernel's scale: 1024 = a nice-0 task).
    pub weight: f64,
    /// A bandwidth limit over its whole subtree, in CPUs (cpu.max quota / period).
    pub quota: Option<f64>,
}

impl Group {
    pub fn root() -> Group {
        Group {
            parent: 0,
            weight: 1024.0,
            quota: None,
        }
    }
}

/// One claimant.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// The group it sits in (fair tasks; real-time and deadline tasks ignore it).
    pub group: usize,
    pub weight: f64,
    /// CPUs it wanted over the interval (0..=1: a task runs on one CPU at a time).
    pub demand: f64,
    /// The CPUs it may run on; those outside the machine's are ignored, and an empty set
    /// means every CPU.
    pub cpus: CpuSet,
    pub class: Class,
}

/// What the tasks share.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// The online CPUs, each worth one CPU of capacity.
    pub cpus: CpuSet,
    /// The part of each CPU that real-time tasks may not take while fair tasks want it
    /// (the fair server's runtime / period; older kernels: 1 - sched_rt_runtime/period).
    pub fair_reserve: f64,
}

/// Why a task stopped growing: what its share is bounded by.
#[derive(Clone, Debug, PartialEq)]
pub enum Limit {
    /// It wanted nothing.
    Idle,
    /// It got all it wanted.
    Demand,
    /// These CPUs were full: everyone who may use only them got their share of them.
    Cpus(CpuSet),
    /// The quota of this group (an index into the groups).
    Quota(usize),
    /// Its deadline reservation.
    Reservation,
}

/// Every task's fair share (CPUs) and what bounds it, in the order given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Solution {
    pub share: Vec<f64>,
    pub limit: Vec<Limit>,
}

const EPS: f64 = 1e-12;
/// Beyond this many distinct CPU sets, only unions of the most demanded ones are checked.
const MAX_EXACT_SETS: usize = 10;

/// Fair shares of `tasks` on `machine` over the group tree `groups` (index 0 is the root).
pub fn solve(machine: &Machine, groups: &[Group], tasks: &[Task]) -> Solution {
    let n = tasks.len();
    let mut sol = Solution {
        share: vec![0.0; n],
        limit: vec![Limit::Idle; n],
    };
    if n == 0 || machine.cpus.is_empty() {
        return sol;
    }
    let root_only = [Group::root()];
    let groups = if groups.is_empty() {
        &root_only[..]
    } else {
        groups
    };

    // Each task's usable CPUs, deduplicated into a table of masks.
    let mut masks: Vec<CpuSet> = Vec::new();
    let mut mask_of: HashMap<CpuSet, usize> = HashMap::new();
    let task_mask: Vec<usize> = tasks
        .iter()
        .map(|t| {
            let mut m = t.cpus.intersection(&machine.cpus);
            if m.is_empty() {
                m = machine.cpus.clone();
            }
            *mask_of.entry(m.clone()).or_insert_with(|| {
                masks.push(m);
                masks.len() - 1
            })
        })
        .collect();
    // What earlier passes gave, per mask.
    let mut used = vec![0.0; masks.len()];
    let reserve = machine.fair_reserve.clamp(0.0, 1.0);
    let flat = [Group::root()];

    let run_pass = |picked: &[usize],
                    demand: &dyn Fn(usize) -> f64,
                    weight: &dyn Fn(usize) -> f64,
                    tree: &[Group],
                    group_of: &dyn Fn(usize) -> usize,
                    cpu_cap: f64,
                    used: &[f64]|
     -> Vec<(f64, Limit)> {
        let leaves: Vec<Leaf> = picked
            .iter()
            .map(|&i| Leaf {
                node: group_of(i),
                weight: weight(i).max(EPS),
                demand: demand(i).clamp(0.0, 1.0),
                mask: task_mask[i],
            })
            .collect();
        fill(tree, &leaves, &masks, used, cpu_cap)
    };

    // Deadline tasks: their reservation, in proportion to it if the CPUs cannot hold them all.
    let dl: Vec<usize> = (0..n)
        .filter(|&i| matches!(tasks[i].class, Class::Deadline(_)))
        .collect();
    if !dl.is_empty() {
        let bw = |i: usize| match tasks[i].class {
            Class::Deadline(b) => b.max(0.0),
            _ => 0.0,
        };
        let out = run_pass(
            &dl,
            &|i| tasks[i].demand.min(bw(i)),
            &|i| bw(i).max(1e-6),
            &flat,
            &|_| 0,
            1.0,
            &used,
        );
        for (&i, (x, lim)) in dl.iter().zip(out) {
            sol.share[i] = x;
            sol.limit[i] = if lim == Limit::Demand && tasks[i].demand > bw(i) + EPS {
                Limit::Reservation
            } else {
                lim
            };
            used[task_mask[i]] += x;
        }
    }

    // Real-time tasks by priority, each level after the ones above it.
    let mut prios: Vec<u32> = tasks
        .iter()
        .filter_map(|t| match t.class {
            Class::RealTime(p) => Some(p),
            _ => None,
        })
        .collect();
    prios.sort_unstable_by(|a, b| b.cmp(a));
    prios.dedup();
    for &p in &prios {
        let level: Vec<usize> = (0..n)
            .filter(|&i| tasks[i].class == Class::RealTime(p))
            .collect();
        let out = run_pass(
            &level,
            &|i| tasks[i].demand,
            &|_| 1.0,
            &flat,
            &|_| 0,
            1.0 - reserve,
            &used,
        );
        for (&i, (x, lim)) in level.iter().zip(out) {
            sol.share[i] = x;
            sol.limit[i] = lim;
            used[task_mask[i]] += x;
        }
    }

    // Fair tasks share what is left, over the group tree.
    let fair: Vec<usize> = (0..n).filter(|&i| tasks[i].class == Class::Fair).collect();
    if !fair.is_empty() {
        let out = run_pass(
            &fair,
            &|i| tasks[i].demand,
            &|i| tasks[i].weight,
            groups,
            &|i| tasks[i].group.min(groups.len() - 1),
            1.0,
            &used,
        );
        for (&i, (x, lim)) in fair.iter().zip(out) {
            sol.share[i] = x;
            sol.limit[i] = lim;
            used[task_mask[i]] += x;
        }
    }

    // Real-time tasks take back the reserve fair tasks did not want.
    if reserve > 0.0 {
        let hungry: Vec<usize> = (0..n)
            .filter(|&i| {
                matches!(tasks[i].class, Class::RealTime(_))
                    && tasks[i].demand.min(1.0) > sol.share[i] + 1e-9
            })
            .collect();
        if !hungry.is_empty() {
            let out = run_pass(
                &hungry,
                &|i| tasks[i].demand.min(1.0) - sol.share[i],
                &|_| 1.0,
                &flat,
                &|_| 0,
                1.0,
                &used,
            );
            for (&i, (x, lim)) in hungry.iter().zip(out) {
                sol.share[i] += x;
                if x > 1e-9 || lim == Limit::Demand {
                    sol.limit[i] = lim;
                }
                used[task_mask[i]] += x;
            }
        }
    }
    sol
}

/// A claimant inside one pass.
struct Leaf {
    node: usize,
    weight: f64,
    demand: f64,
    mask: usize,
}

/// A set of CPUs that may saturate: a union of masks.
struct Candidate {
    set: CpuSet,
    capacity: f64,
    /// Every mask that lies inside it (its tasks can only use these CPUs).
    inside: Vec<usize>,
}

/// One pass of progressive filling. `used[m]`: what earlier passes gave tasks confined to
/// mask m; `cpu_cap`: what this pass may use of each CPU. Returns (share, limit) per leaf.
fn fill(
    tree: &[Group],
    leaves: &[Leaf],
    masks: &[CpuSet],
    used: &[f64],
    cpu_cap: f64,
) -> Vec<(f64, Limit)> {
    let nl = leaves.len();
    let nn = tree.len();
    let mut out: Vec<(f64, Limit)> = vec![(0.0, Limit::Idle); nl];
    let mut active = vec![false; nl];
    for (i, l) in leaves.iter().enumerate() {
        active[i] = l.demand > EPS;
    }
    if !active.iter().any(|a| *a) || cpu_cap <= 0.0 {
        for (i, l) in leaves.iter().enumerate() {
            if l.demand > EPS {
                out[i].1 = Limit::Cpus(CpuSet::new());
            }
        }
        return out;
    }

    // The tree, top-down order, children counts.
    let parent: Vec<usize> = (0..nn)
        .map(|g| {
            if g == 0 {
                0
            } else {
                tree[g].parent.min(nn - 1)
            }
        })
        .collect();
    // Each node's depth; a malformed tree (a loop of parents) is cut at 64.
    let depth: Vec<usize> = (0..nn)
        .map(|g| {
            let (mut k, mut n) = (g, 0);
            while k != 0 && n < 64 {
                k = parent[k];
                n += 1;
            }
            n
        })
        .collect();
    let mut order: Vec<usize> = (0..nn).collect();
    order.sort_by_key(|&g| depth[g]);

    // Per node: its growing leaf children sorted by the level at which each is satisfied.
    let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); nn];
    for i in 0..nl {
        if active[i] {
            by_node[leaves[i].node.min(nn - 1)].push(i);
        }
    }
    for list in &mut by_node {
        list.sort_by(|&a, &b| {
            (leaves[a].demand / leaves[a].weight).total_cmp(&(leaves[b].demand / leaves[b].weight))
        });
    }
    let mut next = vec![0usize; nn];

    // Active weight per node (leaf children + growing child nodes), and per (node, mask).
    let mut w_active = vec![0.0f64; nn];
    let mut live_children = vec![0usize; nn];
    let mut w_mask: Vec<HashMap<usize, f64>> = vec![HashMap::new(); nn];
    for i in 0..nl {
        if active[i] {
            let g = leaves[i].node.min(nn - 1);
            w_active[g] += leaves[i].weight;
            live_children[g] += 1;
            *w_mask[g].entry(leaves[i].mask).or_default() += leaves[i].weight;
        }
    }
    let mut node_active = vec![false; nn];
    for &g in order.iter().rev() {
        if live_children[g] > 0 {
            node_active[g] = true;
            if g != 0 {
                let p = parent[g];
                w_active[p] += tree[g].weight.max(EPS);
                live_children[p] += 1;
            }
        }
    }

    // Sets of CPUs that may saturate.
    let candidates = candidate_sets(leaves, &active, masks, used, cpu_cap);

    let mut level = vec![0.0f64; nn];
    let mut node_x = vec![0.0f64; nn];
    let mut mask_x: Vec<f64> = used.to_vec();
    let mut rate = vec![0.0f64; nn];
    let mut left: usize = active.iter().filter(|a| **a).count();

    // Each round freezes at least one leaf; the bound only guards against a bug.
    for _round in 0..(4 * nl + 16) {
        if left == 0 {
            break;
        }
        // Rates, top-down.
        for &g in &order {
            rate[g] = if !node_active[g] {
                0.0
            } else if g == 0 {
                1.0
            } else {
                let p = parent[g];
                rate[p] * tree[g].weight.max(EPS) / w_active[p].max(EPS)
            };
        }
        let level_rate = |g: usize| rate[g] / w_active[g].max(EPS);
        let mut mask_rate = vec![0.0f64; masks.len()];
        for g in 0..nn {
            if node_active[g] {
                let lr = level_rate(g);
                for (&m, &w) in &w_mask[g] {
                    mask_rate[m] += lr * w;
                }
            }
        }

        // The next event of each kind.
        let mut delta = f64::INFINITY;
        for g in 0..nn {
            if !node_active[g] {
                continue;
            }
            while next[g] < by_node[g].len() && !active[by_node[g][next[g]]] {
                next[g] += 1;
            }
            if let Some(&i) = by_node[g].get(next[g]) {
                let lr = level_rate(g);
                if lr > 0.0 {
                    let theta = leaves[i].demand / leaves[i].weight;
                    delta = delta.min(((theta - level[g]) / lr).max(0.0));
                }
            }
            if let Some(q) = tree[g].quota {
                if rate[g] > 0.0 {
                    delta = delta.min(((q - node_x[g]) / rate[g]).max(0.0));
                }
            }
        }
        let set_x = |c: &Candidate, mx: &[f64]| c.inside.iter().map(|&m| mx[m]).sum::<f64>();
        for c in &candidates {
            let r: f64 = c.inside.iter().map(|&m| mask_rate[m]).sum();
            if r > 0.0 {
                delta = delta.min(((c.capacity - set_x(c, &mask_x)) / r).max(0.0));
            }
        }
        if !delta.is_finite() {
            break;
        }

        // Advance everyone.
        for g in 0..nn {
            if node_active[g] {
                level[g] += level_rate(g) * delta;
                node_x[g] += rate[g] * delta;
            }
        }
        for (x, r) in mask_x.iter_mut().zip(&mask_rate) {
            *x += r * delta;
        }

        // Freeze what reached a bound: demand first (a task that has all it wants is
        // satisfied, whatever else filled at the same instant), then quotas, then CPU sets.
        let mut frozen: Vec<(usize, Limit)> = Vec::new();
        for g in 0..nn {
            if !node_active[g] {
                continue;
            }
            while next[g] < by_node[g].len() {
                let i = by_node[g][next[g]];
                if !active[i] {
                    next[g] += 1;
                    continue;
                }
                let theta = leaves[i].demand / leaves[i].weight;
                if theta <= level[g] * (1.0 + 1e-9) + EPS {
                    frozen.push((i, Limit::Demand));
                    next[g] += 1;
                } else {
                    break;
                }
            }
        }
        for g in 0..nn {
            match tree[g].quota {
                Some(q) if node_active[g] && node_x[g] >= q - 1e-9 * q.max(1.0) => {
                    for i in 0..nl {
                        if active[i] && is_under(leaves[i].node.min(nn - 1), g, &parent) {
                            frozen.push((i, Limit::Quota(g)));
                        }
                    }
                }
                _ => {}
            }
        }
        for c in &candidates {
            let r: f64 = c.inside.iter().map(|&m| mask_rate[m]).sum();
            if r > 0.0 && set_x(c, &mask_x) >= c.capacity - 1e-9 * c.capacity.max(1.0) {
                for i in 0..nl {
                    if active[i] && c.inside.contains(&leaves[i].mask) {
                        frozen.push((i, Limit::Cpus(c.set.clone())));
                    }
                }
            }
        }
        if frozen.is_empty() {
            // Rounding left the nearest event a hair away: stop one leaf where it stands, so
            // the fill always ends.
            if let Some(i) = (0..nl).find(|&i| active[i]) {
                frozen.push((i, Limit::Cpus(CpuSet::new())));
            }
        }
        for (i, lim) in frozen {
            if !active[i] {
                continue;
            }
            let g = leaves[i].node.min(nn - 1);
            let x = match lim {
                Limit::Demand => leaves[i].demand,
                _ => (leaves[i].weight * level[g]).min(leaves[i].demand),
            };
            // Keep the set sums exact: what the leaf holds, not what its level said.
            mask_x[leaves[i].mask] += x - leaves[i].weight * level[g];
            out[i] = (x, lim);
            active[i] = false;
            left -= 1;
            w_active[g] -= leaves[i].weight;
            if let Some(w) = w_mask[g].get_mut(&leaves[i].mask) {
                *w -= leaves[i].weight;
                if *w <= EPS {
                    w_mask[g].remove(&leaves[i].mask);
                }
            }
            live_children[g] -= 1;
            let mut k = g;
            while live_children[k] == 0 && node_active[k] {
                node_active[k] = false;
                if k == 0 {
                    break;
                }
                let p = parent[k];
                w_active[p] -= tree[k].weight.max(EPS);
                live_children[p] -= 1;
                k = p;
            }
        }
    }
    out
}

fn is_under(mut g: usize, ancestor: usize, parent: &[usize]) -> bool {
    for _ in 0..=64 {
        if g == ancestor {
            return true;
        }
        if g == 0 {
            return false;
        }
        g = parent[g];
    }
    false
}

/// The sets of CPUs that can saturate in this pass: unions of the masks of growing tasks
/// whose tasks (with what earlier passes gave) want more than the set holds.
fn candidate_sets(
    leaves: &[Leaf],
    active: &[bool],
    masks: &[CpuSet],
    used: &[f64],
    cpu_cap: f64,
) -> Vec<Candidate> {
    let mut demand_of = vec![0.0f64; masks.len()];
    for (l, _) in leaves.iter().zip(active).filter(|(_, a)| **a) {
        demand_of[l.mask] += l.demand;
    }
    // Sets that fill up are unions of the masks of growing tasks and of tasks served
    // earlier (a real-time task on CPUs 0 and 2 shares CPU 0 with tasks pinned there).
    let mut live: Vec<usize> = (0..masks.len())
        .filter(|&m| demand_of[m] > 0.0 || used[m] > 0.0)
        .collect();
    if live.len() > MAX_EXACT_SETS {
        // The sets that bind are those of heavy claimants: keep the masks most wanted per CPU.
        live.sort_by(|&a, &b| {
            let da = (demand_of[a] + used[a]) / masks[a].len() as f64;
            let db = (demand_of[b] + used[b]) / masks[b].len() as f64;
            db.total_cmp(&da)
        });
        live.truncate(MAX_EXACT_SETS);
    }
    let mut sets: Vec<CpuSet> = Vec::new();
    for bits in 1u32..(1u32 << live.len()) {
        let mut s = CpuSet::new();
        for (k, &m) in live.iter().enumerate() {
            if bits & (1 << k) != 0 {
                s = s.union(&masks[m]);
            }
        }
        if !sets.contains(&s) {
            sets.push(s);
        }
    }
    // The whole machine always closes the fill.
    let all = masks.iter().fold(CpuSet::new(), |a, m| a.union(m));
    if !sets.contains(&all) {
        sets.push(all);
    }
    sets.into_iter()
        .filter_map(|set| {
            let inside: Vec<usize> = (0..masks.len())
                .filter(|&m| masks[m].is_subset(&set))
                .collect();
            let capacity = set.len() as f64 * cpu_cap;
            let wanted: f64 = inside.iter().map(|&m| demand_of[m] + used[m]).sum();
            let grows = inside.iter().any(|&m| demand_of[m] > 0.0);
            // A set with nobody growing in it, or whose tasks want less than it holds, can
            // never fill up.
            (grows && wanted > capacity * (1.0 - 1e-9)).then_some(Candidate {
                set,
                capacity,
                inside,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(list: &str) -> CpuSet {
        CpuSet::parse_list(list).unwrap()
    }

    fn machine(n: usize) -> Machine {
        Machine {
            cpus: CpuSet::first(n),
            fair_reserve: 0.05,
        }
    }

    fn hog(group: usize, weight: f64, list: &str) -> Task {
        Task {
            group,
            weight,
            demand: 1.0,
            cpus: cpus(list),
            class: Class::Fair,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn nice_levels_on_one_cpu_split_it_by_weight() {
        let t = [hog(0, 1024.0, "0"), hog(0, 335.0, "0"), hog(0, 110.0, "0")];
        let s = solve(&machine(2), &[], &t);
        let total = 1024.0 + 335.0 + 110.0;
        assert!(close(s.share[0], 1024.0 / total));
        assert!(close(s.share[1], 335.0 / total));
        assert!(close(s.share[2], 110.0 / total));
        assert_eq!(s.limit[0], Limit::Cpus(cpus("0")));
    }

    #[test]
    fn pinned_hogs_get_their_cpu_and_the_free_one_the_other() {
        let t = [
            hog(0, 1024.0, "0"),
            hog(0, 1024.0, "0"),
            hog(0, 1024.0, "0"),
            hog(0, 1024.0, "0-1"),
        ];
        let s = solve(&machine(2), &[], &t);
        for x in &s.share[..3] {
            assert!(close(*x, 1.0 / 3.0), "{s:?}");
        }
        assert!(close(s.share[3], 1.0), "{s:?}");
        assert_eq!(s.limit[3], Limit::Demand);
    }

    #[test]
    fn sessions_split_first_then_their_tasks() {
        // Autogroups A (one hog) and B (three hogs), all pinned to CPU 0.
        let groups = [
            Group::root(),
            Group {
                parent: 0,
                weight: 1024.0,
                quota: None,
            },
            Group {
                parent: 0,
                weight: 1024.0,
                quota: None,
            },
        ];
        let t = [
            hog(1, 1024.0, "0"),
            hog(2, 1024.0, "0"),
            hog(2, 1024.0, "0"),
            hog(2, 1024.0, "0"),
        ];
        let s = solve(&machine(2), &groups, &t);
        assert!(close(s.share[0], 0.5));
        for x in &s.share[1..] {
            assert!(close(*x, 1.0 / 6.0));
        }
    }

    #[test]
    fn a_quota_caps_its_group_and_the_rest_goes_to_others() {
        let groups = [
            Group::root(),
            Group {
                parent: 0,
                weight: 1024.0,
                quota: Some(0.2),
            },
        ];
        let t = [hog(1, 1024.0, "0"), hog(0, 1024.0, "0")];
        let s = solve(&machine(2), &groups, &t);
        assert!(close(s.share[0], 0.2));
        assert_eq!(s.limit[0], Limit::Quota(1));
        assert!(close(s.share[1], 0.8));
    }

    #[test]
    fn real_time_takes_its_cpu_but_the_fair_reserve() {
        let mut rt = hog(0, 1024.0, "1");
        rt.class = Class::RealTime(10);
        let t = [rt, hog(0, 1024.0, "1")];
        let s = solve(&machine(2), &[], &t);
        assert!(close(s.share[0], 0.95), "{s:?}");
        assert!(close(s.share[1], 0.05), "{s:?}");
        // Without a fair task beside it, the RT hog has the whole CPU.
        let mut rt = hog(0, 1024.0, "1");
        rt.class = Class::RealTime(10);
        let s = solve(&machine(2), &[], &[rt, hog(0, 1024.0, "0")]);
        assert!(close(s.share[0], 1.0), "{s:?}");
        assert!(close(s.share[1], 1.0), "{s:?}");
    }

    #[test]
    fn sched_idle_weight_against_a_normal_task() {
        let t = [hog(0, 1024.0, "0"), hog(0, 3.0, "0")];
        let s = solve(&machine(2), &[], &t);
        assert!(close(s.share[1], 3.0 / 1027.0));
    }

    #[test]
    fn deadline_gets_its_reservation_first() {
        let mut dl = hog(0, 1024.0, "0");
        dl.class = Class::Deadline(0.3);
        let s = solve(&machine(1), &[], &[dl, hog(0, 1024.0, "0")]);
        assert!(close(s.share[0], 0.3));
        assert_eq!(s.limit[0], Limit::Reservation);
        assert!(close(s.share[1], 0.7));
    }

    #[test]
    fn low_demand_keeps_its_demand() {
        let mut small = hog(0, 1024.0, "0-1");
        small.demand = 0.1;
        let t = [small, hog(0, 1024.0, "0-1"), hog(0, 1024.0, "0-1")];
        let s = solve(&machine(2), &[], &t);
        assert!(close(s.share[0], 0.1));
        assert!(close(s.share[1], 0.95));
        assert!(close(s.share[2], 0.95));
    }
}
