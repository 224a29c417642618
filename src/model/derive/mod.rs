//! From two Samples to a Frame: CPU received (with reaped children), demand, fair share with
//! every rule the kernel enforces, the verdict over a window and its cause, context-switch
//! rates, run-queue wait, latency percentiles, migrations, where tasks ran, Jain's index.
//! Pure: no I/O, no clock.
//!
//! The model keeps a little state between steps (when status was last read, the CPU already
//! credited to each process, wait counted ahead of the kernel, the verdict window, the rest of
//! the machine's last read), so feed it consecutive Samples, live or replayed: the same Samples
//! give the same Frames.

use std::collections::HashMap;

use super::account::{self, Account, Claim, WorkloadMemo};
use super::chains;
use super::contention;
use super::cpus::{self, TaskOnCpu};
use super::cpuset::CpuSet;
use super::demand::TaskMemo;
use super::explain::{self, Evidence};
use super::fair;
use super::frame::{
    self, Cause, Frame, MachineFrame, RestGroup, Verdict, WorkloadFrame, WorkloadState,
};
use super::host::{HostWatch, Taken};
use super::latency;
use super::rest::{self, RestClaim};
use super::solver::{self, Class};
use super::thread_rates::{self, RateMemo};
use super::tree::{Placement, Tree};
use crate::probe::parse::NS_PER_TICK;

mod rest_figures;
use super::window::{Means, Shares, Slot, Windows, DEFAULT_WINDOW};
use crate::probe::{CgroupNode, Health, Life, Sample, WorkloadSample};
use rest_figures::StatSpan;

/// The fair server's default: 50 ms of every second on each CPU for fair tasks.
const DEFAULT_FAIR_RESERVE: f64 = 0.05;
/// Rest groups listed in a Frame.
const REST_GROUPS_SHOWN: usize = 8;

#[derive(Default)]
struct PerWorkload {
    switches: RateMemo<2>,
    account: WorkloadMemo,
    migrations: RateMemo<1>,
}

/// Derives Frames from consecutive Samples.
pub struct Model {
    t0_ns: Option<u64>,
    memo: HashMap<u32, PerWorkload>,
    /// The cpu controller's groups as last read, and their throttled time one read before.
    cgroups: HashMap<String, CgroupNode>,
    throttled_before: HashMap<String, (u64, u64)>,
    /// The rest of the machine's claims from its last read, and its per-thread memory.
    rest: Vec<RestClaim>,
    rest_memo: HashMap<u32, TaskMemo>,
    /// When the rest was last read (CLOCK_MONOTONIC ns).
    rest_t_ns: Option<u64>,
    /// What /proc/stat said of the machine since the rest's last read, for what no read saw.
    rest_span: StatSpan,
    /// Busy time no read of the rest saw, over its last read's interval (CPUs).
    rest_unattributed: f64,
    /// Each group's throttled ns per ns, as of its last two reads.
    throttle_rates: HashMap<String, f64>,
    windows: Windows,
    /// Time the host took from each CPU, for holding the verdicts it distorts.
    host: HostWatch,
}

impl Default for Model {
    fn default() -> Self {
        Model::with_window(DEFAULT_WINDOW)
    }
}

/// Who a solver task belongs to.
#[derive(Clone, Copy, PartialEq)]
enum Owner {
    Workload(usize),
    Rest(usize),
}

impl Model {
    pub fn new() -> Self {
        Self::default()
    }

    /// A model whose verdicts cover the last `secs` seconds.
    pub(crate) fn with_window(secs: f64) -> Self {
        let windows = Windows::new(secs);
        Model {
            host: HostWatch::new(windows.secs()),
            t0_ns: None,
            memo: HashMap::new(),
            cgroups: HashMap::new(),
            throttled_before: HashMap::new(),
            rest: Vec::new(),
            rest_memo: HashMap::new(),
            rest_t_ns: None,
            rest_span: StatSpan::default(),
            rest_unattributed: 0.0,
            throttle_rates: HashMap::new(),
            windows,
        }
    }

    /// The verdict window, in seconds.
    pub fn window(&self) -> f64 {
        self.windows.secs()
    }

    /// The Frame of the first Sample: who is there and in what state, no rates yet.
    pub fn first(&mut self, cur: &Sample) -> Frame {
        let t0 = *self.t0_ns.get_or_insert(epoch_of(cur));
        self.learn_machine(cur);
        Frame {
            t: cur.t_ns.saturating_sub(t0) as f64 / 1e9,
            interval: 0.0,
            jain_index: 1.0,
            workloads: cur
                .workloads
                .iter()
                .map(|w| WorkloadFrame {
                    state: state_of(w, false),
                    ..blank_row(w)
                })
                .collect(),
            machine: MachineFrame {
                cpus: cur.machine.cpus,
                autogroup: cur.machine.autogroup,
                procs_running: cur.machine.procs_running,
                psi_some_avg10: cur.machine.psi_some_avg10,
                verdict_window: self.windows.secs(),
                ..MachineFrame::default()
            },
            observer_cpu_pct: 0.0,
            status_interval: cur.status_every_ns as f64 / 1e9,
            late_ms: lateness_ms(cur),
            sweep_ms: sweep_ms(cur),
            missed: cur.missed,
            observer_rt: cur.observer_rt,
            cpus: Vec::new(),
        }
    }

    /// The Frame for the interval between `prev` and `cur`.
    pub fn step(&mut self, prev: &Sample, cur: &Sample) -> Frame {
        let t0 = *self.t0_ns.get_or_insert(epoch_of(prev));
        let iv = Interval {
            prev,
            cur,
            t_ns: cur.t_ns.saturating_sub(prev.t_ns).max(1) as f64,
            t_end: cur.t_ns.saturating_sub(t0) as f64 / 1e9,
            online: online_cpus(cur),
        };
        self.memo
            .retain(|id, _| cur.workloads.iter().any(|w| w.id == *id));
        let throttled = self.learn_machine(cur);
        let accounts = self.accounts(&iv, &throttled);
        let all = self.claimants(&iv, &accounts);
        let reserve = cur.machine.fair_reserve.unwrap_or(DEFAULT_FAIR_RESERVE);
        let sol = solver::solve(
            &solver::Machine {
                cpus: iv.online.clone(),
                fair_reserve: reserve,
            },
            &all.tree.groups,
            &all.tasks,
        );
        let host_stall_s = self.host.push(
            iv.t_end,
            stat_interval_s(prev, cur),
            &prev.machine.per_cpu,
            &cur.machine.per_cpu,
            |c| all.rt_on(&CpuSet::one(c)) > 0.5,
            reserve,
        );

        let mut frames = Vec::with_capacity(cur.workloads.len());
        let mut evidence = Vec::with_capacity(cur.workloads.len());
        for (k, (w, acc)) in cur.workloads.iter().zip(&accounts).enumerate() {
            let (f, e) = self.workload_row(&iv, k, w, acc.as_ref(), &all, &sol, &throttled);
            frames.push(f);
            evidence.push(e);
        }
        let rest = self.rest_figures(&iv, &frames, &all, &sol);
        let names: Vec<(u32, &str)> = cur
            .workloads
            .iter()
            .map(|w| (w.id, w.name.as_str()))
            .collect();
        let cpus = cpus::frames(
            &prev.machine.per_cpu,
            &cur.machine.per_cpu,
            &iv.online,
            &names,
            all.workload_tasks(),
        );
        name_causes(&mut frames, &evidence, &rest.groups);
        self.windows.retain_recent(iv.t_end);
        for f in &mut frames {
            f.tidy();
        }
        let ratios: Vec<f64> = frames
            .iter()
            .filter(|f| f.verdict != Verdict::None)
            .map(|f| f.window_ratio)
            .collect();
        let secs = iv.t_ns / 1e9;
        Frame {
            t: iv.t_end,
            interval: secs,
            jain_index: fair::jain(&ratios),
            workloads: frames,
            machine: MachineFrame {
                cpus: cur.machine.cpus,
                autogroup: cur.machine.autogroup,
                ctxt_per_sec: cur.machine.ctxt.saturating_sub(prev.machine.ctxt) as f64 / secs,
                procs_running: cur.machine.procs_running,
                psi_some_avg10: cur.machine.psi_some_avg10,
                rest_cpu_received: rest.received + 0.0,
                rest_cpu_fair: rest.fair + 0.0,
                rest_cpu_demand: rest.demand + 0.0,
                rest_window_received: rest.means.shares.received + 0.0,
                rest_window_fair: rest.means.shares.fair + 0.0,
                rest_verdict: self.rest_verdict(&rest.means, iv.t_end),
                rest_groups: rest.groups,
                rest_wake_delay_us: rest.means.shares.wake_delay_us(),
                rest_late: frame::is_late(
                    rest.means.shares.wake_delay_us(),
                    rest.means.shares.woken_wait / 1e6 / rest.means.shares.wait.max(1e-12),
                ),
                irq_cpu: rest.irq + 0.0,
                rest_unattributed: rest.unattributed + 0.0,
                rest_age: self
                    .rest_t_ns
                    .map_or(0.0, |at| cur.t_ns.saturating_sub(at) as f64 / 1e9),
                verdict_window: self.windows.secs(),
                rt_cpu: all.rt_cpu() + 0.0,
                host_stall_ms: host_stall_s * 1e3,
            },
            observer_cpu_pct: cur.observer_cpu_ns.saturating_sub(prev.observer_cpu_ns) as f64
                / iv.t_ns
                * 100.0,
            status_interval: cur.status_every_ns as f64 / 1e9,
            late_ms: lateness_ms(cur),
            sweep_ms: sweep_ms(cur),
            missed: cur.missed,
            observer_rt: cur.observer_rt,
            cpus,
        }
    }

    /// Each running workload's interval (None: not running at both ends), its demand bounded
    /// by what others took where it may run (model/contention.rs) and shaped into its closed
    /// loops when it runs any (model/chains.rs).
    fn accounts(
        &mut self,
        iv: &Interval,
        throttled: &HashMap<String, f64>,
    ) -> Vec<Option<Account>> {
        iv.cur
            .workloads
            .iter()
            .map(|w| {
                if w.life != Life::Running {
                    return None;
                }
                let pw = iv
                    .prev
                    .workloads
                    .iter()
                    .find(|p| p.id == w.id && p.life == Life::Running)?;
                let memo = self.memo.entry(w.id).or_default();
                let mut acc = account::account(pw, w, iv.t_ns, iv.prev.t_ns, &mut memo.account);
                let received = acc.received_ns / iv.t_ns;
                // Without per-CPU figures (older recordings) its waits alone bound it.
                let others = busy_on(iv, &acc.cpus_allowed)
                    .map_or(f64::INFINITY, |busy| (busy - received).max(0.0));
                let held = throttled_of(&acc, throttled, iv.t_ns) / iv.t_ns;
                if let Some(loops) = w.closed_loops {
                    let waited = acc.with_children_wait_ns / iv.t_ns;
                    let wanted = chains::demand(loops, received, waited, others + held);
                    chains::reshape(&mut acc.claims, loops, wanted);
                } else {
                    let capacity = if acc.cpus_allowed.is_empty() {
                        iv.online.len()
                    } else {
                        acc.cpus_allowed.intersection(&iv.online).len()
                    };
                    // One /proc/stat tick a CPU: within it, the CPUs were full.
                    let slack = capacity as f64 * NS_PER_TICK as f64 / iv.t_ns;
                    contention::cap(
                        &mut acc.claims,
                        received + others + held,
                        capacity as f64,
                        slack,
                    );
                }
                acc.busy_tasks = acc.claims.iter().filter(|c| c.demand >= 0.5).count();
                Some(acc)
            })
            .collect()
    }

    /// Every claimant, the workloads' tasks and the rest's, placed in the group tree.
    fn claimants(&self, iv: &Interval, accounts: &[Option<Account>]) -> Claimants {
        let mut all = Claimants::default();
        let n = accounts
            .iter()
            .flatten()
            .map(|a| a.claims.len())
            .sum::<usize>()
            + self.rest.len();
        all.reserve(n);
        let autogroup_on = iv.cur.machine.autogroup;
        for (k, (w, acc)) in iv.cur.workloads.iter().zip(accounts).enumerate() {
            let Some(acc) = acc else { continue };
            let own = w
                .cgroup
                .as_ref()
                .map(|c| (c.path.as_str(), c.weight.unwrap_or(1024.0)));
            // Its own cgroup places tasks whose cgroup is unknown: not the last workload's.
            all.last_placed = None;
            for c in &acc.claims {
                all.push(c, own, Owner::Workload(k), autogroup_on, &self.cgroups);
            }
        }
        all.last_placed = None;
        for (k, r) in self.rest.iter().enumerate() {
            all.push(&r.claim, None, Owner::Rest(k), autogroup_on, &self.cgroups);
        }
        all
    }

    /// One workload's row for this interval and its window, and what its cause needs.
    #[allow(clippy::too_many_arguments)]
    fn workload_row(
        &mut self,
        iv: &Interval,
        k: usize,
        w: &WorkloadSample,
        acc: Option<&Account>,
        all: &Claimants,
        sol: &solver::Solution,
        throttled: &HashMap<String, f64>,
    ) -> (WorkloadFrame, Option<Clues>) {
        let mut f = WorkloadFrame {
            state: state_of(w, acc.is_some()),
            ..blank_row(w)
        };
        let Some(acc) = acc else {
            return (f, None);
        };
        let (t_ns, secs) = (iv.t_ns, iv.t_ns / 1e9);
        let mine = all.of(Owner::Workload(k));
        let pw = iv.prev.workloads.iter().find(|p| p.id == w.id);
        if let (Some(a), Some(b)) = (w.ops, pw.and_then(|p| p.ops)) {
            f.ops_per_sec = a.saturating_sub(b) as f64 / secs;
        }
        (f.latency, f.more_latency) =
            latency::interval(pw.map_or(&[][..], |p| &p.latency), &w.latency);
        f.cpu_received = acc.received_ns / t_ns;
        let demand: f64 = acc.claims.iter().map(|c| c.demand).sum();
        f.cpu_demand = demand.max(f.cpu_received);
        f.cpu_fair = mine.iter().map(|&i| sol.share[i]).sum();
        f.fairness_ratio = ratio(f.cpu_received, f.cpu_fair);
        f.weight = weight_of(&mine, &all.tasks, &all.tree);
        let throttled_ns = throttled_of(acc, throttled, t_ns);
        let wait_ns = (acc.wait_ns - throttled_ns).max(0.0);
        f.runq_wait_pct = wait_ns / t_ns * 100.0;
        f.throttled_pct = throttled_ns / t_ns * 100.0;
        f.wait_per_slice_us = if acc.slices > 0 {
            wait_ns / acc.slices as f64 / 1000.0
        } else {
            0.0
        };
        let memo = self.memo.entry(w.id).or_default();
        let [vol, invol] = thread_rates::rate(pw, w, &mut memo.switches, thread_rates::switches)
            .unwrap_or_default();
        f.voluntary_cs_per_sec = vol;
        f.involuntary_cs_per_sec = invol;
        f.migrations_per_sec =
            thread_rates::rate(pw, w, &mut memo.migrations, thread_rates::migrations).map(|[m]| m);
        f.accounting = acc.accounting;
        f.group = mine
            .first()
            .map(|&i| all.tree.names[all.tasks[i].group].clone())
            .unwrap_or_else(|| "tasks".into());
        f.due = explain::due(&mine, &all.tasks, sol, &all.tree, &iv.online);
        let allowed = if acc.cpus_allowed.is_empty() {
            iv.online.clone()
        } else {
            acc.cpus_allowed.intersection(&iv.online)
        };
        f.cpus_allowed = allowed.to_string();
        f.cpus_used = acc.cpus_used.to_string();
        let fair_class = mine.iter().all(|&i| all.tasks[i].class == Class::Fair);
        let means = self.windows.push(
            &format!("workload {}", w.id),
            Slot {
                t: iv.t_end,
                dt: secs,
                shares: Shares {
                    received: f.cpu_received,
                    fair: f.cpu_fair,
                    demand: f.cpu_demand,
                    wait: wait_ns / t_ns,
                    throttled: throttled_ns / t_ns,
                    rt_taken: if fair_class { all.rt_on(&allowed) } else { 0.0 },
                    woken_wait: acc.woken_wait_ns / 1e3 / secs,
                    wakeups: acc.wakeups / secs,
                },
            },
        );
        f.window_received = means.shares.received;
        f.window_fair = means.shares.fair;
        f.window_demand = means.shares.demand;
        f.window_ratio = ratio(means.shares.received, means.shares.fair);
        f.wake_delay_us = means.shares.wake_delay_us();
        let woken_share = if means.shares.wait > 0.0 {
            means.shares.woken_wait / 1e6 / means.shares.wait
        } else {
            0.0
        };
        f.late = frame::is_late(f.wake_delay_us, woken_share);
        f.verdict = Verdict::from_shares(means.shares.received, means.shares.fair);
        let taken = self.host.taken(&allowed, iv.t_end);
        let host = (f.verdict != Verdict::None && taken.distorts(means.shares.fair, means.span))
            .then_some(taken);
        if host.is_some() {
            f.verdict = Verdict::None;
        }
        let evidence = Clues {
            means,
            allowed,
            used: acc.cpus_used.clone(),
            busy_tasks: acc.busy_tasks,
            host,
        };
        (f, Some(evidence))
    }

    /// Takes in what the Sample says of the machine: its groups and the rest of its tasks.
    /// Returns each group's throttled time per unit of time, as of its last two reads.
    fn learn_machine(&mut self, cur: &Sample) -> HashMap<String, f64> {
        if let Some(nodes) = &cur.machine.cgroups {
            let mut rates = HashMap::new();
            for n in nodes {
                if let Some(&(before, at)) = self.throttled_before.get(&n.path) {
                    let dt = cur.t_ns.saturating_sub(at).max(1) as f64;
                    rates.insert(
                        n.path.clone(),
                        n.throttled_ns.saturating_sub(before) as f64 / dt,
                    );
                }
                self.throttled_before
                    .insert(n.path.clone(), (n.throttled_ns, cur.t_ns));
            }
            self.cgroups = nodes.iter().map(|n| (n.path.clone(), n.clone())).collect();
            self.throttled_before
                .retain(|p, _| nodes.iter().any(|n| n.path == *p));
            self.throttle_rates = rates;
        }
        if let Some(r) = &cur.machine.rest {
            self.rest = rest::claims(r, &mut self.rest_memo);
            self.rest_t_ns = Some(r.t_ns);
        }
        self.throttle_rates.clone()
    }
}

/// The interval a step derives.
struct Interval<'a> {
    prev: &'a Sample,
    cur: &'a Sample,
    t_ns: f64,
    /// Seconds from the session's start to the interval's end.
    t_end: f64,
    online: CpuSet,
}

/// Every claimant of the solver, with whose it is and what it received.
#[derive(Default)]
struct Claimants {
    tree: Tree,
    tasks: Vec<solver::Task>,
    owners: Vec<Owner>,
    received: Vec<f64>,
    cpu_of: Vec<Option<u32>>,
    /// The last placement and its node: a process's threads share one, and placing a task
    /// formats and looks up its group's names (a thousand times a tick otherwise).
    last_placed: Option<(Placement, usize)>,
}

impl Claimants {
    fn reserve(&mut self, n: usize) {
        self.tasks.reserve(n);
        self.owners.reserve(n);
        self.received.reserve(n);
        self.cpu_of.reserve(n);
    }

    fn push(
        &mut self,
        claim: &Claim,
        own: Option<(&str, f64)>,
        owner: Owner,
        autogroup_on: bool,
        cgroups: &HashMap<String, CgroupNode>,
    ) {
        let node = match &self.last_placed {
            Some((p, node)) if *p == claim.placement => *node,
            _ => {
                let node = self
                    .tree
                    .place(&claim.placement, autogroup_on, cgroups, own);
                self.last_placed = Some((claim.placement.clone(), node));
                node
            }
        };
        self.tasks.push(solver::Task {
            group: node,
            weight: claim.weight,
            demand: claim.demand,
            cpus: claim.cpus.clone(),
            class: claim.class,
        });
        self.owners.push(owner);
        self.received.push(claim.received);
        self.cpu_of.push(claim.cpu);
    }

    /// The tasks of one owner.
    fn of(&self, owner: Owner) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|&i| self.owners[i] == owner)
            .collect()
    }

    /// The workloads' tasks: where each was last seen and what it received.
    fn workload_tasks(&self) -> impl Iterator<Item = TaskOnCpu> + '_ {
        (0..self.tasks.len()).filter_map(|i| match self.owners[i] {
            Owner::Workload(k) => Some(TaskOnCpu {
                workload: k,
                cpu: self.cpu_of[i],
                received: self.received[i],
            }),
            Owner::Rest(_) => None,
        })
    }

    /// CPUs real-time and deadline tasks received.
    fn rt_cpu(&self) -> f64 {
        (0..self.tasks.len())
            .filter(|&i| self.tasks[i].class != Class::Fair)
            .map(|i| self.received[i])
            .sum()
    }

    /// CPUs real-time tasks received on these CPUs (by the CPU each was seen on).
    fn rt_on(&self, allowed: &CpuSet) -> f64 {
        (0..self.tasks.len())
            .filter(|&i| self.tasks[i].class != Class::Fair)
            .filter(|&i| allowed.is_empty() || self.cpu_of[i].is_none_or(|c| allowed.contains(c)))
            .map(|i| self.received[i])
            .sum()
    }
}

/// What a workload's cause needs, once everyone's window is known.
struct Clues {
    means: Means,
    allowed: CpuSet,
    used: CpuSet,
    busy_tasks: usize,
    /// The host's time that holds its verdict, if any.
    host: Option<Taken>,
}

/// Who got over 0.02 CPU less than due (`sign` 1) or more (`sign` -1), workloads and the
/// rest's groups, largest gap first, with its name.
fn gaps(frames: &[WorkloadFrame], rest: &[RestGroup], sign: f64) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = frames
        .iter()
        .map(|f| (sign * (f.window_fair - f.window_received), f.name.clone()))
        .chain(rest.iter().map(|g| {
            (
                sign * (g.fair - g.received),
                format!("other tasks: {}", g.name),
            )
        }))
        .filter(|(gap, _)| *gap > 0.02)
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out
}

/// Causes need everyone's window: who was short pays for who is ahead.
fn name_causes(frames: &mut [WorkloadFrame], evidence: &[Option<Clues>], rest: &[RestGroup]) {
    let short = gaps(frames, rest, 1.0);
    // Who got more than it was due: who took a short one's CPU.
    let ahead = gaps(frames, rest, -1.0);
    let others = |list: &[(f64, String)], me: &str| -> Vec<String> {
        list.iter()
            .filter(|(_, n)| n != me)
            .take(3)
            .map(|(_, n)| n.clone())
            .collect()
    };
    for (f, e) in frames.iter_mut().zip(evidence) {
        let Some(e) = e else { continue };
        if let Some(h) = &e.host {
            f.cause = Cause::HostStall {
                ms: h.window_s * 1e3,
                cpus: h.cpus.to_string(),
                paying_back: h.paying_back,
            };
            continue;
        }
        f.cause = explain::cause(Evidence {
            verdict: f.verdict,
            means: e.means,
            allowed: &e.allowed,
            used: &e.used,
            busy_tasks: e.busy_tasks,
            short_ones: others(&short, &f.name),
            ahead_ones: others(&ahead, &f.name),
        });
    }
}

/// Seconds between the two reads of /proc/stat (the Samples' times when either is unknown).
fn stat_interval_s(prev: &Sample, cur: &Sample) -> f64 {
    let (a, b) = match (prev.machine.stat_ns, cur.machine.stat_ns) {
        (0, _) | (_, 0) => (prev.t_ns, cur.t_ns),
        ab => ab,
    };
    b.saturating_sub(a) as f64 / 1e9
}

/// How busy these CPUs were over the interval, in CPUs (/proc/stat; empty: every CPU). None:
/// the Samples have no per-CPU times.
fn busy_on(iv: &Interval, cpus: &CpuSet) -> Option<f64> {
    if iv.prev.machine.per_cpu.is_empty() || iv.cur.machine.per_cpu.is_empty() {
        return None;
    }
    let busy = |s: &Sample, id: u32| {
        s.machine
            .per_cpu
            .iter()
            .find(|c| c.id == id)
            .map_or(0, |c| c.busy_ns)
    };
    let ns: u64 = iv
        .online
        .iter()
        .filter(|&c| cpus.is_empty() || cpus.contains(c))
        .map(|c| busy(iv.cur, c).saturating_sub(busy(iv.prev, c)))
        .sum();
    Some(ns as f64 / iv.t_ns)
}

/// CPUs spent serving interrupts and softirqs over the interval (/proc/stat).
fn irq_cpus(prev: &Sample, cur: &Sample, t_ns: f64) -> f64 {
    let total = |s: &Sample| s.machine.per_cpu.iter().map(|c| c.irq_ns).sum::<u64>();
    total(cur).saturating_sub(total(prev)) as f64 / t_ns
}

/// A derive without memory: for one-off pairs (tests).
pub fn derive(prev: &Sample, cur: &Sample) -> Frame {
    Model::new().step(prev, cur)
}

/// How late the sweep began against its due time, in ms; 0 when either is unknown.
pub(crate) fn lateness_ms(s: &Sample) -> f64 {
    if s.due_ns == 0 || s.sweep_start_ns == 0 {
        return 0.0;
    }
    s.sweep_start_ns.saturating_sub(s.due_ns) as f64 / 1e6
}

/// How long the sweep took, in ms (its start to the Sample's time, which is mid-sweep).
fn sweep_ms(s: &Sample) -> f64 {
    if s.sweep_start_ns == 0 {
        return 0.0;
    }
    2.0 * s.t_ns.saturating_sub(s.sweep_start_ns) as f64 / 1e6
}

/// Where Frame times count from: the session's start when the Sample knows it.
fn epoch_of(s: &Sample) -> u64 {
    if s.epoch_ns != 0 && s.epoch_ns <= s.t_ns {
        s.epoch_ns
    } else {
        s.t_ns
    }
}

fn online_cpus(s: &Sample) -> CpuSet {
    s.machine
        .online
        .as_deref()
        .and_then(CpuSet::parse_list)
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| CpuSet::first(s.machine.cpus.max(1)))
}

fn blank_row(w: &WorkloadSample) -> WorkloadFrame {
    WorkloadFrame {
        id: w.id,
        name: w.name.clone(),
        ops_unit: w.ops_unit.clone(),
        tasks: w.processes.iter().map(|p| p.threads.len()).sum(),
        progress: progress(w),
        window_ratio: 1.0,
        stderr: w.stderr.clone(),
        ..WorkloadFrame::default()
    }
}

/// Its state from what its starter says and what the probe found; `measured`: it has an
/// interval this step.
fn state_of(w: &WorkloadSample, measured: bool) -> WorkloadState {
    match &w.life {
        Life::Running => match &w.health {
            Health::Gone(why) => WorkloadState::Gone(why.clone()),
            Health::Partial(why) => WorkloadState::Partial(why.clone()),
            Health::Ok if measured => WorkloadState::Running,
            Health::Ok => WorkloadState::Starting,
        },
        life => life.into(),
    }
}

fn ratio(received: f64, fair: f64) -> f64 {
    if fair < 1e-6 {
        if received < 1e-6 {
            1.0
        } else {
            // Received CPU it was not due: report against a floor, not infinity (JSON).
            received / 1e-3
        }
    } else {
        received / fair
    }
}

/// Its weight as the model sees it: its group's, when it is alone in a group of its own;
/// else the sum over its tasks that want CPU.
fn weight_of(mine: &[usize], tasks: &[solver::Task], tree: &Tree) -> f64 {
    let Some(&first) = mine.first() else {
        return 0.0;
    };
    let node = tasks[first].group;
    // Alone: all of it in one group, and no other task of that group wanting CPU (counted,
    // not searched: a thousand-thread workload would cost a million comparisons a tick).
    let alone = node != 0
        && mine.iter().all(|&i| tasks[i].group == node)
        && tasks
            .iter()
            .filter(|t| t.group == node && t.demand > 0.01)
            .count()
            == mine.iter().filter(|&&i| tasks[i].demand > 0.01).count();
    if alone {
        return tree.groups[node].weight;
    }
    mine.iter()
        .filter(|&&i| tasks[i].demand > 0.0)
        .map(|&i| tasks[i].weight)
        .sum()
}

/// The ns its cgroup's quota held it off the CPU over the interval: its groups' throttled
/// rate (one throttled group counts once however many tasks sit in it).
fn throttled_of(acc: &Account, rates: &HashMap<String, f64>, t_ns: f64) -> f64 {
    // A process's claims come together and share one path: skip repeats by address before
    // sorting by content (a thousand string comparisons a tick otherwise).
    let mut paths: Vec<&str> = Vec::new();
    for path in acc
        .claims
        .iter()
        .filter_map(|c| c.placement.cgroup.as_deref())
    {
        if !paths.last().is_some_and(|last| std::ptr::eq(*last, path)) {
            paths.push(path);
        }
    }
    paths.sort_unstable();
    paths.dedup();
    paths.iter().filter_map(|p| rates.get(*p)).sum::<f64>() * t_ns
}

fn progress(w: &WorkloadSample) -> Option<f64> {
    if w.finished {
        return Some(1.0);
    }
    let (done, total) = (w.ops?, w.ops_expected?);
    Some((done as f64 / total as f64).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_is_the_sweep_start_against_its_due_time() {
        // A fake clock: due at 10 s, the sweep began 42 ms later and took 6 ms.
        let s = Sample {
            t_ns: 10_045_000_000,
            due_ns: 10_000_000_000,
            sweep_start_ns: 10_042_000_000,
            missed: 2,
            ..Sample::default()
        };
        let mut m = Model::new();
        let f = m.first(&s);
        assert!((f.late_ms - 42.0).abs() < 1e-9);
        assert!((f.sweep_ms - 6.0).abs() < 1e-9);
        assert_eq!(f.missed, 2);
        // A Sample without a due time (an older recording) is not called late.
        let old = Sample {
            t_ns: 10_045_000_000,
            ..Sample::default()
        };
        assert_eq!(m.first(&old).late_ms, 0.0);
    }
}
