//! From two Samples to a Frame: CPU received (with reaped children), demand, fair share with
//! every rule the kernel enforces, the verdict over a window and its cause, context-switch
//! rates, run-queue wait, latency percentiles, Jain's index. Pure: no I/O, no clock.
//!
//! The model keeps a little state between steps (when status was last read, the CPU already
//! credited to each process, wait counted ahead of the kernel, the verdict window, the rest of
//! the machine's last read), so feed it consecutive Samples, live or replayed: the same Samples
//! give the same Frames.

use std::collections::HashMap;

use super::account::{self, Account, Claim, RestClaim, WorkloadMemo};
use super::cpuset::CpuSet;
use super::demand::TaskMemo;
use super::explain::{self, Evidence};
use super::fair;
use super::frame::{Frame, MachineFrame, RestGroup, Verdict, WorkloadFrame, WorkloadState};
use super::latency;
use super::solver::{self, Class};
use super::tree::Tree;
use super::window::{Means, Slot, Windows, DEFAULT_WINDOW};
use crate::probe::{CgroupNode, Health, Life, Sample, WorkloadSample};

/// The fair server's default: 50 ms of every second on each CPU for fair tasks.
const DEFAULT_FAIR_RESERVE: f64 = 0.05;
/// Rest groups listed in a Frame.
const REST_GROUPS_SHOWN: usize = 5;

/// Voluntary/involuntary counts at the last status sweep, and the rates they gave.
#[derive(Default)]
struct StatusMemo {
    t_ns: u64,
    counts: HashMap<(u32, u64, u32), (u64, u64)>,
    rates: (f64, f64),
}

#[derive(Default)]
struct PerWorkload {
    status: StatusMemo,
    account: WorkloadMemo,
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
    /// Each group's throttled ns per ns, as of its last two reads.
    throttle_rates: HashMap<String, f64>,
    windows: Windows,
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
    pub fn with_window(secs: f64) -> Self {
        Model {
            t0_ns: None,
            memo: HashMap::new(),
            cgroups: HashMap::new(),
            throttled_before: HashMap::new(),
            rest: Vec::new(),
            rest_memo: HashMap::new(),
            throttle_rates: HashMap::new(),
            windows: Windows::new(secs),
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
        }
    }

    /// The Frame for the interval between `prev` and `cur`.
    pub fn step(&mut self, prev: &Sample, cur: &Sample) -> Frame {
        let t0 = *self.t0_ns.get_or_insert(epoch_of(prev));
        let t_ns = cur.t_ns.saturating_sub(prev.t_ns).max(1) as f64;
        let secs = t_ns / 1e9;
        let t_end = cur.t_ns.saturating_sub(t0) as f64 / 1e9;
        self.memo
            .retain(|id, _| cur.workloads.iter().any(|w| w.id == *id));
        let throttled = self.learn_machine(cur);
        let online = online_cpus(cur);
        let autogroup_on = cur.machine.autogroup;

        // Each running workload's interval.
        let accounts: Vec<Option<Account>> = cur
            .workloads
            .iter()
            .map(|w| {
                if w.life != Life::Running {
                    return None;
                }
                let pw = prev
                    .workloads
                    .iter()
                    .find(|p| p.id == w.id && p.life == Life::Running)?;
                let memo = self.memo.entry(w.id).or_default();
                Some(account::account(pw, w, t_ns, prev.t_ns, &mut memo.account))
            })
            .collect();

        // Every claimant in the group tree.
        let mut tree = Tree::default();
        let mut tasks: Vec<solver::Task> = Vec::new();
        let mut owners: Vec<Owner> = Vec::new();
        let mut received: Vec<f64> = Vec::new();
        let mut cpu_of: Vec<Option<u32>> = Vec::new();
        let mut push = |claim: &Claim, own: Option<(&str, f64)>, owner: Owner, tree: &mut Tree| {
            let node = tree.place(&claim.placement, autogroup_on, &self.cgroups, own);
            tasks.push(solver::Task {
                group: node,
                weight: claim.weight,
                demand: claim.demand,
                cpus: claim.cpus.clone(),
                class: claim.class,
            });
            owners.push(owner);
            received.push(claim.received);
            cpu_of.push(claim.cpu);
        };
        for (k, (w, acc)) in cur.workloads.iter().zip(&accounts).enumerate() {
            let Some(acc) = acc else { continue };
            let own = w
                .cgroup
                .as_ref()
                .map(|c| (c.path.as_str(), c.weight.unwrap_or(1024.0)));
            for c in &acc.claims {
                push(c, own, Owner::Workload(k), &mut tree);
            }
        }
        for (k, r) in self.rest.iter().enumerate() {
            push(&r.claim, None, Owner::Rest(k), &mut tree);
        }
        let machine = solver::Machine {
            cpus: online.clone(),
            fair_reserve: cur.machine.fair_reserve.unwrap_or(DEFAULT_FAIR_RESERVE),
        };
        let sol = solver::solve(&machine, &tree.groups, &tasks);

        // Real-time tasks' CPU, by the CPU they were seen on (for "real-time took its CPUs").
        let rt_cpu: f64 = (0..tasks.len())
            .filter(|&i| tasks[i].class != Class::Fair)
            .map(|i| received[i])
            .sum();
        let rt_on = |allowed: &CpuSet| -> f64 {
            (0..tasks.len())
                .filter(|&i| tasks[i].class != Class::Fair)
                .filter(|&i| allowed.is_empty() || cpu_of[i].map_or(true, |c| allowed.contains(c)))
                .map(|i| received[i])
                .sum()
        };

        // Per workload: this interval, then the window.
        let mut frames = Vec::with_capacity(cur.workloads.len());
        let mut pending: Vec<Option<(Means, CpuSet, CpuSet, usize)>> = Vec::new();
        for (k, (w, acc)) in cur.workloads.iter().zip(&accounts).enumerate() {
            let mut f = WorkloadFrame {
                state: state_of(w, acc.is_some()),
                ..blank_row(w)
            };
            let Some(acc) = acc else {
                frames.push(f);
                pending.push(None);
                continue;
            };
            let mine: Vec<usize> = (0..tasks.len())
                .filter(|&i| owners[i] == Owner::Workload(k))
                .collect();
            let pw = prev.workloads.iter().find(|p| p.id == w.id);
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
            f.weight = weight_of(&mine, &tasks, &tree);
            let throttled_ns = throttled_of(acc, &throttled, t_ns);
            let wait_ns = (acc.wait_ns - throttled_ns).max(0.0);
            f.runq_wait_pct = wait_ns / t_ns * 100.0;
            f.throttled_pct = throttled_ns / t_ns * 100.0;
            f.wait_per_slice_us = if acc.slices > 0 {
                wait_ns / acc.slices as f64 / 1000.0
            } else {
                0.0
            };
            let memo = self.memo.entry(w.id).or_default();
            let (vol, invol) = switch_rates(&mut memo.status, cur, w);
            f.voluntary_cs_per_sec = vol;
            f.involuntary_cs_per_sec = invol;
            f.accounting = acc.accounting;
            f.group = mine
                .first()
                .map(|&i| tree.names[tasks[i].group].clone())
                .unwrap_or_else(|| "tasks".into());
            f.due = explain::due(&mine, &tasks, &sol, &tree, &online);
            f.cpus_allowed = if acc.cpus_allowed.is_empty() {
                online.to_string()
            } else {
                acc.cpus_allowed.intersection(&online).to_string()
            };
            f.cpus_used = acc.cpus_used.to_string();
            let allowed = CpuSet::parse_list(&f.cpus_allowed).unwrap_or_default();
            let means = self.windows.push(
                &format!("workload {}", w.id),
                Slot {
                    t: t_end,
                    dt: secs,
                    received: f.cpu_received,
                    fair: f.cpu_fair,
                    demand: f.cpu_demand,
                    wait: wait_ns / t_ns,
                    throttled: throttled_ns / t_ns,
                    rt_taken: if mine.iter().all(|&i| tasks[i].class == Class::Fair) {
                        rt_on(&allowed)
                    } else {
                        0.0
                    },
                },
            );
            f.window_received = means.received;
            f.window_fair = means.fair;
            f.window_demand = means.demand;
            f.window_ratio = ratio(means.received, means.fair);
            f.verdict = Verdict::from_shares(means.received, means.fair);
            pending.push(Some((
                means,
                allowed,
                acc.cpus_used.clone(),
                acc.busy_tasks,
            )));
            frames.push(f);
        }

        // The rest of the machine: received from /proc/stat, due from its tasks.
        let ours_received: f64 = frames.iter().map(|f| f.cpu_received).sum();
        let busy = cur.machine.busy_ns.saturating_sub(prev.machine.busy_ns) as f64;
        let rest_received = (busy / t_ns - ours_received).max(0.0);
        let rest_idx: Vec<usize> = (0..tasks.len())
            .filter(|&i| matches!(owners[i], Owner::Rest(_)))
            .collect();
        let rest_fair: f64 = rest_idx.iter().map(|&i| sol.share[i]).sum();
        let rest_demand: f64 = rest_idx.iter().map(|&i| tasks[i].demand).sum();
        let rest_means = self.windows.push(
            "rest",
            Slot {
                t: t_end,
                dt: secs,
                received: rest_received,
                fair: rest_fair,
                demand: rest_demand.max(rest_received),
                ..Slot::default()
            },
        );
        let rest_groups = self.rest_groups(
            &rest_idx, &owners, &tasks, &tree, &sol, &received, t_end, secs,
        );

        // Causes need everyone's window: who was short pays for who is ahead.
        let mut short: Vec<(f64, String)> = frames
            .iter()
            .filter(|f| f.window_fair - f.window_received > 0.02)
            .map(|f| (f.window_fair - f.window_received, f.name.clone()))
            .collect();
        short.extend(
            rest_groups
                .iter()
                .filter(|g| g.fair - g.received > 0.02)
                .map(|g| (g.fair - g.received, format!("other tasks: {}", g.name))),
        );
        short.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (f, p) in frames.iter_mut().zip(&pending) {
            let Some((means, allowed, used, busy_tasks)) = p else {
                continue;
            };
            f.cause = explain::cause(Evidence {
                verdict: f.verdict,
                means: *means,
                allowed,
                used,
                busy_tasks: *busy_tasks,
                short_ones: short
                    .iter()
                    .filter(|(_, n)| *n != f.name)
                    .take(3)
                    .map(|(_, n)| n.clone())
                    .collect(),
            });
        }
        self.windows.retain_recent(t_end);
        for f in &mut frames {
            f.tidy();
        }

        let ratios: Vec<f64> = frames
            .iter()
            .filter(|f| f.verdict != Verdict::None)
            .map(|f| f.window_ratio)
            .collect();
        Frame {
            t: t_end,
            interval: secs,
            jain_index: fair::jain(&ratios),
            workloads: frames,
            machine: MachineFrame {
                cpus: cur.machine.cpus,
                autogroup: cur.machine.autogroup,
                ctxt_per_sec: cur.machine.ctxt.saturating_sub(prev.machine.ctxt) as f64 / secs,
                procs_running: cur.machine.procs_running,
                psi_some_avg10: cur.machine.psi_some_avg10,
                rest_cpu_received: rest_received + 0.0,
                rest_cpu_fair: rest_fair + 0.0,
                rest_cpu_demand: rest_demand.max(rest_received) + 0.0,
                rest_window_received: rest_means.received + 0.0,
                rest_window_fair: rest_means.fair + 0.0,
                rest_verdict: Verdict::from_shares(rest_means.received, rest_means.fair),
                rest_groups,
                verdict_window: self.windows.secs(),
                rt_cpu: rt_cpu + 0.0,
            },
            observer_cpu_pct: cur.observer_cpu_ns.saturating_sub(prev.observer_cpu_ns) as f64
                / t_ns
                * 100.0,
            status_interval: cur.status_every_ns as f64 / 1e9,
        }
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
            self.rest = account::rest_claims(r, &mut self.rest_memo);
        }
        self.throttle_rates.clone()
    }

    /// The rest's groups over the window, busiest first.
    #[allow(clippy::too_many_arguments)]
    fn rest_groups(
        &mut self,
        rest_idx: &[usize],
        owners: &[Owner],
        tasks: &[solver::Task],
        tree: &Tree,
        sol: &solver::Solution,
        received: &[f64],
        t_end: f64,
        secs: f64,
    ) -> Vec<RestGroup> {
        // Per node: received, due, and a few of its processes' names.
        let mut groups: Vec<(usize, f64, f64, Vec<String>)> = Vec::new();
        for &i in rest_idx {
            let Owner::Rest(k) = owners[i] else { continue };
            let comm = self.rest[k].comm.clone();
            let node = tasks[i].group;
            match groups.iter_mut().find(|g| g.0 == node) {
                Some(g) => {
                    g.1 += received[i];
                    g.2 += sol.share[i];
                    if !g.3.contains(&comm) && g.3.len() < 3 {
                        g.3.push(comm);
                    }
                }
                None => groups.push((node, received[i], sol.share[i], vec![comm])),
            }
        }
        let mut out: Vec<RestGroup> = groups
            .into_iter()
            .map(|(node, rec, fair, comms)| {
                let m = self.windows.push(
                    &format!("rest {}", tree.names[node]),
                    Slot {
                        t: t_end,
                        dt: secs,
                        received: rec,
                        fair,
                        ..Slot::default()
                    },
                );
                RestGroup {
                    name: format!("{} ({})", tree.names[node], comms.join(", ")),
                    received: m.received,
                    fair: m.fair,
                }
            })
            .collect();
        out.sort_by(|a, b| b.fair.total_cmp(&a.fair));
        out.truncate(REST_GROUPS_SHOWN);
        out
    }
}

/// A derive without memory: for one-off pairs (tests).
pub fn derive(prev: &Sample, cur: &Sample) -> Frame {
    Model::new().step(prev, cur)
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
        ..WorkloadFrame::default()
    }
}

/// Its state from what its starter says and what the probe found; `measured`: it has an
/// interval this step.
fn state_of(w: &WorkloadSample, measured: bool) -> WorkloadState {
    match &w.life {
        Life::Pending => WorkloadState::Starting,
        Life::Done(code) => WorkloadState::Done(*code),
        Life::Stopped => WorkloadState::Stopped,
        Life::Failed(why) => WorkloadState::Gone(why.clone()),
        Life::Running => match &w.health {
            Health::Gone(why) => WorkloadState::Gone(why.clone()),
            Health::Partial(why) => WorkloadState::Partial(why.clone()),
            Health::Ok if measured => WorkloadState::Running,
            Health::Ok => WorkloadState::Starting,
        },
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
    let alone = node != 0
        && mine.iter().all(|&i| tasks[i].group == node)
        && tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.group == node && t.demand > 0.01)
            .all(|(k, _)| mine.contains(&k));
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
    let mut paths: Vec<&str> = acc
        .claims
        .iter()
        .filter_map(|c| c.placement.cgroup.as_deref())
        .collect();
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

/// Voluntary and involuntary switches per second, summed over threads, from the last two
/// status sweeps (status may be read less often than the sampling interval).
fn switch_rates(memo: &mut StatusMemo, cur: &Sample, w: &WorkloadSample) -> (f64, f64) {
    if cur.status_t_ns == 0 || cur.status_t_ns == memo.t_ns {
        return memo.rates;
    }
    let mut counts = HashMap::with_capacity(memo.counts.len());
    let (mut dv, mut di) = (0u64, 0u64);
    for p in &w.processes {
        for th in &p.threads {
            let (Some(v), Some(i)) = (th.vol, th.invol) else {
                continue;
            };
            let key = (p.pid, p.start, th.tid);
            let (ov, oi) = memo.counts.get(&key).copied().unwrap_or((0, 0));
            dv += v.saturating_sub(ov);
            di += i.saturating_sub(oi);
            counts.insert(key, (v, i));
        }
    }
    if memo.t_ns != 0 {
        let secs = cur.status_t_ns.saturating_sub(memo.t_ns) as f64 / 1e9;
        if secs > 0.0 {
            memo.rates = (dv as f64 / secs, di as f64 / secs);
        }
    }
    memo.t_ns = cur.status_t_ns;
    memo.counts = counts;
    memo.rates
}
