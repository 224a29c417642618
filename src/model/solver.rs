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

// foldhash, not SipHash: a CPU set is hashed per task per tick.
use foldhash::{HashMap, HashMapExt};

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
    if tasks.is_empty() || machine.cpus.is_empty() {
        return Solution {
            share: vec![0.0; tasks.len()],
            limit: vec![Limit::Idle; tasks.len()],
        };
    }
    let root_only = [Group::root()];
    let groups = if groups.is_empty() {
        &root_only[..]
    } else {
        groups
    };
    let mut s = Solver::new(machine, tasks);
    s.serve_deadline();
    s.serve_realtime(1.0 - s.reserve);
    s.serve_fair(groups);
    if s.reserve > 0.0 {
        s.take_back_reserve();
    }
    s.sol
}

/// The passes of one solve, class by class, and what each left.
struct Solver<'a> {
    tasks: &'a [Task],
    /// Each task's usable CPUs, deduplicated into a table of masks.
    masks: Vec<CpuSet>,
    task_mask: Vec<usize>,
    /// What earlier passes gave, per mask.
    used: Vec<f64>,
    reserve: f64,
    sol: Solution,
}

/// What one pass serves: the tasks, what each wants and weighs, and in which tree.
struct Pass<'p> {
    picked: &'p [usize],
    demand: &'p dyn Fn(usize) -> f64,
    weight: &'p dyn Fn(usize) -> f64,
    tree: &'p [Group],
    group_of: &'p dyn Fn(usize) -> usize,
    /// What this pass may use of each CPU.
    cpu_cap: f64,
}

impl<'a> Solver<'a> {
    fn new(machine: &Machine, tasks: &'a [Task]) -> Solver<'a> {
        let mut masks: Vec<CpuSet> = Vec::new();
        let mut mask_of: HashMap<CpuSet, usize> = HashMap::new();
        // A process's threads nearly always share one list: the last one's mask is looked
        // up once for all of them.
        let mut last: Option<(&CpuSet, usize)> = None;
        let task_mask: Vec<usize> = tasks
            .iter()
            .map(|t| {
                if let Some((cpus, k)) = last {
                    if *cpus == t.cpus {
                        return k;
                    }
                }
                let mut m = t.cpus.intersection(&machine.cpus);
                if m.is_empty() {
                    m = machine.cpus.clone();
                }
                let k = *mask_of.entry(m.clone()).or_insert_with(|| {
                    masks.push(m);
                    masks.len() - 1
                });
                last = Some((&t.cpus, k));
                k
            })
            .collect();
        Solver {
            tasks,
            used: vec![0.0; masks.len()],
            masks,
            task_mask,
            reserve: machine.fair_reserve.clamp(0.0, 1.0),
            sol: Solution {
                share: vec![0.0; tasks.len()],
                limit: vec![Limit::Idle; tasks.len()],
            },
        }
    }

    fn run(&self, pass: Pass) -> Vec<(f64, Limit)> {
        let leaves: Vec<Leaf> = pass
            .picked
            .iter()
            .map(|&i| Leaf {
                node: (pass.group_of)(i),
                weight: (pass.weight)(i).max(EPS),
                demand: (pass.demand)(i).clamp(0.0, 1.0),
                mask: self.task_mask[i],
            })
            .collect();
        Fill::new(pass.tree, &leaves, &self.masks, &self.used, pass.cpu_cap).run()
    }

    /// Records what a pass gave: the task's share and bound, and its CPUs as used.
    fn give(&mut self, i: usize, x: f64, lim: Limit) {
        self.sol.share[i] = x;
        self.sol.limit[i] = lim;
        self.used[self.task_mask[i]] += x;
    }

    fn picked(&self, f: impl Fn(&Task) -> bool) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|&i| f(&self.tasks[i]))
            .collect()
    }

    /// Deadline tasks: their reservation, in proportion to it if the CPUs cannot hold them all.
    fn serve_deadline(&mut self) {
        let dl = self.picked(|t| matches!(t.class, Class::Deadline(_)));
        if dl.is_empty() {
            return;
        }
        let tasks = self.tasks;
        let bw = |i: usize| match tasks[i].class {
            Class::Deadline(b) => b.max(0.0),
            _ => 0.0,
        };
        let flat = [Group::root()];
        let out = self.run(Pass {
            picked: &dl,
            demand: &|i| tasks[i].demand.min(bw(i)),
            weight: &|i| bw(i).max(1e-6),
            tree: &flat,
            group_of: &|_| 0,
            cpu_cap: 1.0,
        });
        for (&i, (x, lim)) in dl.iter().zip(out) {
            let lim = if lim == Limit::Demand && tasks[i].demand > bw(i) + EPS {
                Limit::Reservation
            } else {
                lim
            };
            self.give(i, x, lim);
        }
    }

    /// Real-time tasks by priority, each level after the ones above it, up to `cpu_cap` of
    /// each CPU.
    fn serve_realtime(&mut self, cpu_cap: f64) {
        let mut prios: Vec<u32> = self
            .tasks
            .iter()
            .filter_map(|t| match t.class {
                Class::RealTime(p) => Some(p),
                _ => None,
            })
            .collect();
        prios.sort_unstable_by(|a, b| b.cmp(a));
        prios.dedup();
        let tasks = self.tasks;
        let flat = [Group::root()];
        for &p in &prios {
            let level = self.picked(|t| t.class == Class::RealTime(p));
            let out = self.run(Pass {
                picked: &level,
                demand: &|i| tasks[i].demand,
                weight: &|_| 1.0,
                tree: &flat,
                group_of: &|_| 0,
                cpu_cap,
            });
            for (&i, (x, lim)) in level.iter().zip(out) {
                self.give(i, x, lim);
            }
        }
    }

    /// Fair tasks share what is left, over the group tree.
    fn serve_fair(&mut self, groups: &[Group]) {
        let fair = self.picked(|t| t.class == Class::Fair);
        if fair.is_empty() {
            return;
        }
        let tasks = self.tasks;
        let out = self.run(Pass {
            picked: &fair,
            demand: &|i| tasks[i].demand,
            weight: &|i| tasks[i].weight,
            tree: groups,
            group_of: &|i| tasks[i].group.min(groups.len() - 1),
            cpu_cap: 1.0,
        });
        for (&i, (x, lim)) in fair.iter().zip(out) {
            self.give(i, x, lim);
        }
    }

    /// Real-time tasks take back the reserve fair tasks did not want.
    fn take_back_reserve(&mut self) {
        let tasks = self.tasks;
        let hungry: Vec<usize> = (0..tasks.len())
            .filter(|&i| {
                matches!(tasks[i].class, Class::RealTime(_))
                    && tasks[i].demand.min(1.0) > self.sol.share[i] + 1e-9
            })
            .collect();
        if hungry.is_empty() {
            return;
        }
        let had = self.sol.share.clone();
        let flat = [Group::root()];
        let out = self.run(Pass {
            picked: &hungry,
            demand: &|i| tasks[i].demand.min(1.0) - had[i],
            weight: &|_| 1.0,
            tree: &flat,
            group_of: &|_| 0,
            cpu_cap: 1.0,
        });
        for (&i, (x, lim)) in hungry.iter().zip(out) {
            let lim = if x > 1e-9 || lim == Limit::Demand {
                lim
            } else {
                self.sol.limit[i].clone()
            };
            self.give(i, had[i] + x, lim);
            // give() counted the whole share again: only the new part is new use.
            self.used[self.task_mask[i]] -= had[i];
        }
    }
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

/// One pass of progressive filling over a tree: the state of every node and leaf as the
/// fill rises. Each round finds the nearest bound (a demand, a quota, a full set of CPUs),
/// raises everyone to it, and stops whoever reached it.
struct Fill<'a> {
    tree: &'a [Group],
    leaves: &'a [Leaf],
    parent: Vec<usize>,
    /// Nodes, parents first.
    order: Vec<usize>,
    /// Per node: its growing leaf children, sorted by the level at which each is satisfied,
    /// and how far through that list the fill is.
    by_node: Vec<Vec<usize>>,
    next: Vec<usize>,
    /// Active weight per node (leaf children and growing child nodes), per (node, mask), and
    /// how many children still grow.
    w_active: Vec<f64>,
    w_mask: Vec<HashMap<usize, f64>>,
    live_children: Vec<usize>,
    node_active: Vec<bool>,
    active: Vec<bool>,
    left: usize,
    candidates: Vec<Candidate>,
    /// Per node: its leaf children's level (a growing leaf holds weight × level), what its
    /// subtree holds, and its rate of growth this round.
    level: Vec<f64>,
    node_x: Vec<f64>,
    rate: Vec<f64>,
    /// What each mask's tasks hold (earlier passes included), and grow by this round.
    mask_x: Vec<f64>,
    mask_rate: Vec<f64>,
    out: Vec<(f64, Limit)>,
}

impl<'a> Fill<'a> {
    fn new(
        tree: &'a [Group],
        leaves: &'a [Leaf],
        masks: &[CpuSet],
        used: &[f64],
        cpu_cap: f64,
    ) -> Fill<'a> {
        let nl = leaves.len();
        let nn = tree.len();
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
        let active: Vec<bool> = leaves
            .iter()
            .map(|l| l.demand > EPS && cpu_cap > 0.0)
            .collect();
        let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); nn];
        let mut w_active = vec![0.0f64; nn];
        let mut live_children = vec![0usize; nn];
        let mut w_mask: Vec<HashMap<usize, f64>> = vec![HashMap::new(); nn];
        for (i, l) in leaves.iter().enumerate().filter(|(i, _)| active[*i]) {
            let g = l.node.min(nn - 1);
            by_node[g].push(i);
            w_active[g] += l.weight;
            live_children[g] += 1;
            *w_mask[g].entry(l.mask).or_default() += l.weight;
        }
        // Each leaf's level computed once, not twice per comparison (1,000 leaves a tick).
        let level: Vec<f64> = leaves.iter().map(|l| l.demand / l.weight).collect();
        // Sorted on (level, index) pairs: the order a stable sort by level gives, without an
        // indirect lookup per comparison.
        let mut keyed: Vec<(f64, usize)> = Vec::new();
        for list in &mut by_node {
            keyed.clear();
            keyed.extend(list.iter().map(|&i| (level[i], i)));
            keyed.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            list.clear();
            list.extend(keyed.iter().map(|&(_, i)| i));
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
        let mut out: Vec<(f64, Limit)> = vec![(0.0, Limit::Idle); nl];
        if cpu_cap <= 0.0 {
            // Nothing to share: whoever wanted some is held by a set with no room.
            for (o, l) in out.iter_mut().zip(leaves) {
                if l.demand > EPS {
                    o.1 = Limit::Cpus(CpuSet::new());
                }
            }
        }
        Fill {
            tree,
            leaves,
            parent,
            order,
            by_node,
            next: vec![0; nn],
            w_active,
            w_mask,
            live_children,
            node_active,
            left: active.iter().filter(|a| **a).count(),
            active,
            candidates: candidate_sets(leaves, masks, used, cpu_cap),
            level: vec![0.0; nn],
            node_x: vec![0.0; nn],
            rate: vec![0.0; nn],
            mask_x: used.to_vec(),
            mask_rate: vec![0.0; masks.len()],
            out,
        }
    }

    fn run(mut self) -> Vec<(f64, Limit)> {
        // Each round freezes at least one leaf; the bound only guards against a bug.
        for _round in 0..(4 * self.leaves.len() + 16) {
            if self.left == 0 {
                break;
            }
            self.rates();
            let delta = self.next_delta();
            if !delta.is_finite() {
                break;
            }
            self.advance(delta);
            let mut reached = self.bounds_reached();
            if reached.is_empty() {
                // Rounding left the nearest bound a hair away: stop one leaf where it
                // stands, so the fill always ends.
                if let Some(i) = (0..self.leaves.len()).find(|&i| self.active[i]) {
                    reached.push((i, Limit::Cpus(CpuSet::new())));
                }
            }
            for (i, lim) in reached {
                self.freeze(i, lim);
            }
        }
        self.out
    }

    fn level_rate(&self, g: usize) -> f64 {
        self.rate[g] / self.w_active[g].max(EPS)
    }

    /// Rates, top-down: the root grows at 1 and splits it among its growing children.
    fn rates(&mut self) {
        for &g in &self.order {
            self.rate[g] = if !self.node_active[g] {
                0.0
            } else if g == 0 {
                1.0
            } else {
                let p = self.parent[g];
                self.rate[p] * self.tree[g].weight.max(EPS) / self.w_active[p].max(EPS)
            };
        }
        self.mask_rate.iter_mut().for_each(|r| *r = 0.0);
        for g in 0..self.tree.len() {
            if self.node_active[g] {
                let lr = self.level_rate(g);
                for (&m, &w) in &self.w_mask[g] {
                    self.mask_rate[m] += lr * w;
                }
            }
        }
    }

    fn set_x(&self, c: &Candidate) -> f64 {
        c.inside.iter().map(|&m| self.mask_x[m]).sum()
    }

    fn set_rate(&self, c: &Candidate) -> f64 {
        c.inside.iter().map(|&m| self.mask_rate[m]).sum()
    }

    /// How far the fill may rise before the next bound: a demand, a quota, a full set.
    fn next_delta(&mut self) -> f64 {
        let mut delta = f64::INFINITY;
        for g in 0..self.tree.len() {
            if !self.node_active[g] {
                continue;
            }
            while self.next[g] < self.by_node[g].len()
                && !self.active[self.by_node[g][self.next[g]]]
            {
                self.next[g] += 1;
            }
            if let Some(&i) = self.by_node[g].get(self.next[g]) {
                let lr = self.level_rate(g);
                if lr > 0.0 {
                    let theta = self.leaves[i].demand / self.leaves[i].weight;
                    delta = delta.min(((theta - self.level[g]) / lr).max(0.0));
                }
            }
            if let Some(q) = self.tree[g].quota {
                if self.rate[g] > 0.0 {
                    delta = delta.min(((q - self.node_x[g]) / self.rate[g]).max(0.0));
                }
            }
        }
        for c in &self.candidates {
            let r = self.set_rate(c);
            if r > 0.0 {
                delta = delta.min(((c.capacity - self.set_x(c)) / r).max(0.0));
            }
        }
        delta
    }

    fn advance(&mut self, delta: f64) {
        for g in 0..self.tree.len() {
            if self.node_active[g] {
                self.level[g] += self.level_rate(g) * delta;
                self.node_x[g] += self.rate[g] * delta;
            }
        }
        for (x, r) in self.mask_x.iter_mut().zip(&self.mask_rate) {
            *x += r * delta;
        }
    }

    /// Who reached a bound: demand first (a task that has all it wants is satisfied,
    /// whatever else filled at the same instant), then quotas, then sets of CPUs.
    fn bounds_reached(&mut self) -> Vec<(usize, Limit)> {
        let nn = self.tree.len();
        let mut reached = Vec::new();
        for g in 0..nn {
            if !self.node_active[g] {
                continue;
            }
            while let Some(&i) = self.by_node[g].get(self.next[g]) {
                if !self.active[i] {
                    self.next[g] += 1;
                    continue;
                }
                let theta = self.leaves[i].demand / self.leaves[i].weight;
                if theta > self.level[g] * (1.0 + 1e-9) + EPS {
                    break;
                }
                reached.push((i, Limit::Demand));
                self.next[g] += 1;
            }
        }
        for g in 0..nn {
            match self.tree[g].quota {
                Some(q) if self.node_active[g] && self.node_x[g] >= q - 1e-9 * q.max(1.0) => {
                    for (i, l) in self.leaves.iter().enumerate() {
                        if self.active[i] && is_under(l.node.min(nn - 1), g, &self.parent) {
                            reached.push((i, Limit::Quota(g)));
                        }
                    }
                }
                _ => {}
            }
        }
        for c in &self.candidates {
            if self.set_rate(c) > 0.0 && self.set_x(c) >= c.capacity - 1e-9 * c.capacity.max(1.0) {
                for (i, l) in self.leaves.iter().enumerate() {
                    if self.active[i] && c.inside.contains(&l.mask) {
                        reached.push((i, Limit::Cpus(c.set.clone())));
                    }
                }
            }
        }
        reached
    }

    /// Stops a leaf where its bound holds it; a node whose children all stopped stops too.
    fn freeze(&mut self, i: usize, lim: Limit) {
        if !self.active[i] {
            return;
        }
        let leaf = &self.leaves[i];
        let g = leaf.node.min(self.tree.len() - 1);
        let x = match lim {
            Limit::Demand => leaf.demand,
            _ => (leaf.weight * self.level[g]).min(leaf.demand),
        };
        // Keep the set sums exact: what the leaf holds, not what its level said.
        self.mask_x[leaf.mask] += x - leaf.weight * self.level[g];
        self.out[i] = (x, lim);
        self.active[i] = false;
        self.left -= 1;
        self.w_active[g] -= leaf.weight;
        if let Some(w) = self.w_mask[g].get_mut(&leaf.mask) {
            *w -= leaf.weight;
            if *w <= EPS {
                self.w_mask[g].remove(&leaf.mask);
            }
        }
        self.live_children[g] -= 1;
        let mut k = g;
        while self.live_children[k] == 0 && self.node_active[k] {
            self.node_active[k] = false;
            if k == 0 {
                break;
            }
            let p = self.parent[k];
            self.w_active[p] -= self.tree[k].weight.max(EPS);
            self.live_children[p] -= 1;
            k = p;
        }
    }
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
fn candidate_sets(leaves: &[Leaf], masks: &[CpuSet], used: &[f64], cpu_cap: f64) -> Vec<Candidate> {
    let mut demand_of = vec![0.0f64; masks.len()];
    for l in leaves.iter().filter(|l| l.demand > EPS) {
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
