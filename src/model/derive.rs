//! From two Samples to a Frame: CPU received (with reaped children), demand, fair share,
//! context-switch rates, run-queue wait, Jain's index. Pure: no I/O, no clock.
//!
//! The model keeps a little state between steps (when status was last read, and how much CPU
//! it has already credited to each process), so feed it consecutive Samples, live or replayed.

use std::collections::HashMap;

use super::fair::{self, Claim, Entity};
use super::frame::{Accounting, Frame, MachineFrame, WorkloadFrame, WorkloadState};
use crate::probe::parse::{nice_to_weight, NS_PER_TICK, WEIGHT_IDLE};
use crate::probe::{Health, ProcessSample, Sample, WorkloadSample};

const SCHED_FIFO: u32 = 1;
const SCHED_RR: u32 = 2;
const SCHED_IDLE: u32 = 5;
/// Weight of the "rest of system" lump: one nice-0 entity.
const REST_WEIGHT: f64 = 1024.0;

type ProcKey = (u32, u64);

/// Voluntary/involuntary counts at the last status sweep, and the rates they gave.
#[derive(Default)]
struct StatusMemo {
    t_ns: u64,
    counts: HashMap<(u32, u64, u32), (u64, u64)>,
    rates: (f64, f64),
}

#[derive(Default)]
struct WorkloadMemo {
    status: StatusMemo,
    /// CPU already credited to each process (its threads plus what it reaped), so a
    /// child's time is not counted twice when its parent reaps it.
    credited: HashMap<ProcKey, u64>,
}

/// Derives Frames from consecutive Samples.
#[derive(Default)]
pub struct Model {
    t0_ns: Option<u64>,
    memo: HashMap<u32, WorkloadMemo>,
}

/// One claimant of the fairness model, with where it came from.
struct TaskClaim {
    claim: Claim,
    realtime: bool,
}

/// What one workload did over the interval, before fairness.
struct Account {
    received_ns: f64,
    wait_ns: u64,
    slices: u64,
    tasks: Vec<TaskClaim>,
    group: Option<(String, f64)>,
    accounting: Accounting,
}

impl Model {
    pub fn new() -> Self {
        Self::default()
    }

    /// The Frame for the interval between `prev` and `cur`.
    pub fn step(&mut self, prev: &Sample, cur: &Sample) -> Frame {
        let t0 = *self.t0_ns.get_or_insert(prev.t_ns);
        let t_ns = cur.t_ns.saturating_sub(prev.t_ns).max(1) as f64;
        let secs = t_ns / 1e9;
        let cpus = cur.machine.cpus.max(1) as f64;
        self.memo
            .retain(|id, _| cur.workloads.iter().any(|w| w.id == *id));

        let accounts: Vec<Option<Account>> = cur
            .workloads
            .iter()
            .map(|w| {
                let pw = prev.workloads.iter().find(|p| p.id == w.id)?;
                let memo = self.memo.entry(w.id).or_default();
                Some(account(pw, w, t_ns, &cur.machine, memo))
            })
            .collect();

        // Rest of the machine: what /proc/stat says was busy beyond our workloads.
        let ours_received: f64 = accounts.iter().flatten().map(|a| a.received_ns).sum();
        let busy = cur.machine.busy_ns.saturating_sub(prev.machine.busy_ns) as f64;
        let rest_received = ((busy - ours_received) / t_ns).max(0.0);
        let ours_demand_ns: f64 = accounts
            .iter()
            .flatten()
            .map(|a| a.tasks.iter().map(|t| t.claim.demand).sum::<f64>() * t_ns)
            .sum();
        let rest_demand = match (
            cur.machine.rq_run_ns.zip(cur.machine.rq_wait_ns),
            prev.machine.rq_run_ns.zip(prev.machine.rq_wait_ns),
        ) {
            (Some((r1, w1)), Some((r0, w0))) => {
                let all = (r1.saturating_sub(r0) + w1.saturating_sub(w0)) as f64;
                ((all - ours_demand_ns) / t_ns).max(rest_received)
            }
            // Without /proc/schedstat: procs_running (runnable tasks, instantaneous, averaged
            // over both ends) less ours (Σ (run + wait) / T is our mean runnable count) and
            // the observer itself. Noisy, but it sees a busy machine.
            _ => {
                let running =
                    (cur.machine.procs_running as f64 + prev.machine.procs_running as f64) / 2.0;
                (running - ours_demand_ns / t_ns - 1.0).max(rest_received)
            }
        };

        // Real-time tasks are served before any fair task.
        let rt_demand: f64 = accounts
            .iter()
            .flatten()
            .flat_map(|a| a.tasks.iter().filter(|t| t.realtime))
            .map(|t| t.claim.demand)
            .sum();
        let rt_scale = if rt_demand > cpus {
            cpus / rt_demand
        } else {
            1.0
        };
        let capacity = (cpus - rt_demand).max(0.0);

        // Build the entities: groups by key, loose tasks, and the rest of the system.
        let mut entities: Vec<Entity> = Vec::new();
        let mut group_index: HashMap<String, usize> = HashMap::new();
        // For each workload, for each of its tasks: (entity, position within it).
        let mut places: Vec<Vec<Option<(usize, usize)>>> = Vec::new();
        for acc in &accounts {
            let mut p = Vec::new();
            if let Some(acc) = acc {
                for t in &acc.tasks {
                    if t.realtime {
                        p.push(None);
                        continue;
                    }
                    match &acc.group {
                        Some((key, weight)) => {
                            let e = *group_index.entry(key.clone()).or_insert_with(|| {
                                entities.push(Entity::Group {
                                    weight: *weight,
                                    tasks: Vec::new(),
                                });
                                entities.len() - 1
                            });
                            let Entity::Group { tasks, .. } = &mut entities[e] else {
                                unreachable!()
                            };
                            tasks.push(t.claim);
                            p.push(Some((e, tasks.len() - 1)));
                        }
                        None => {
                            entities.push(Entity::Task(t.claim));
                            p.push(Some((entities.len() - 1, 0)));
                        }
                    }
                }
            }
            places.push(p);
        }
        let rest_index = entities.len();
        entities.push(Entity::Task(Claim {
            demand: rest_demand,
            weight: REST_WEIGHT,
        }));
        let shares = fair::hierarchical(capacity, &entities);
        let rest_fair = shares[rest_index][0];

        let mut frames = Vec::with_capacity(cur.workloads.len());
        for ((w, acc), place) in cur.workloads.iter().zip(&accounts).zip(&places) {
            let mut f = WorkloadFrame {
                id: w.id,
                name: w.name.clone(),
                ops_unit: w.ops_unit.clone(),
                tasks: w.processes.iter().map(|p| p.threads.len()).sum(),
                state: match &w.health {
                    Health::Ok => WorkloadState::Running,
                    Health::Partial(why) => WorkloadState::Partial(why.clone()),
                    Health::Gone(why) => WorkloadState::Gone(why.clone()),
                },
                progress: progress(w),
                ..WorkloadFrame::default()
            };
            let Some(acc) = acc else {
                f.state = match f.state {
                    WorkloadState::Running => WorkloadState::Starting,
                    s => s,
                };
                frames.push(f);
                continue;
            };
            let pw = prev.workloads.iter().find(|p| p.id == w.id);
            if let (Some(a), Some(b)) = (w.ops, pw.and_then(|p| p.ops)) {
                f.ops_per_sec = a.saturating_sub(b) as f64 / secs;
            }
            f.cpu_received = acc.received_ns / t_ns;
            let demand: f64 = acc.tasks.iter().map(|t| t.claim.demand).sum();
            f.cpu_demand = demand.max(f.cpu_received);
            f.cpu_fair = acc
                .tasks
                .iter()
                .zip(place)
                .map(|(t, p)| match p {
                    Some((e, i)) => shares[*e][*i],
                    None => t.claim.demand * rt_scale,
                })
                .sum();
            f.fairness_ratio = ratio(f.cpu_received, f.cpu_fair);
            f.weight = match &acc.group {
                Some((key, weight)) if group_members(&accounts, key) == 1 => *weight,
                _ => acc
                    .tasks
                    .iter()
                    .filter(|t| t.claim.demand > 0.0)
                    .map(|t| t.claim.weight)
                    .sum(),
            };
            f.runq_wait_pct = acc.wait_ns as f64 / t_ns * 100.0;
            f.wait_per_slice_us = if acc.slices > 0 {
                acc.wait_ns as f64 / acc.slices as f64 / 1000.0
            } else {
                0.0
            };
            let memo = self.memo.entry(w.id).or_default();
            let (vol, invol) = switch_rates(&mut memo.status, cur, w);
            f.voluntary_cs_per_sec = vol;
            f.involuntary_cs_per_sec = invol;
            f.accounting = acc.accounting;
            f.group = acc
                .group
                .as_ref()
                .map(|(k, _)| k.clone())
                .unwrap_or_else(|| "tasks".into());
            frames.push(f);
        }

        let ratios: Vec<f64> = frames
            .iter()
            .filter(|f| f.cpu_fair > 0.0 || f.cpu_received > 0.0)
            .map(|f| f.fairness_ratio)
            .collect();
        Frame {
            t: cur.t_ns.saturating_sub(t0) as f64 / 1e9,
            interval: secs,
            jain_index: fair::jain(&ratios),
            workloads: frames,
            machine: MachineFrame {
                cpus: cur.machine.cpus,
                autogroup: cur.machine.autogroup,
                ctxt_per_sec: cur.machine.ctxt.saturating_sub(prev.machine.ctxt) as f64 / secs,
                procs_running: cur.machine.procs_running,
                psi_some_avg10: cur.machine.psi_some_avg10,
                rest_cpu_received: rest_received,
                rest_cpu_fair: rest_fair,
            },
            observer_cpu_pct: cur.observer_cpu_ns.saturating_sub(prev.observer_cpu_ns) as f64
                / t_ns
                * 100.0,
            status_interval: cur.status_every_ns as f64 / 1e9,
        }
    }
}

/// A derive without memory: for one-off pairs (tests, a replay's first frame).
pub fn derive(prev: &Sample, cur: &Sample) -> Frame {
    Model::new().step(prev, cur)
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

fn group_members(accounts: &[Option<Account>], key: &str) -> usize {
    accounts
        .iter()
        .flatten()
        .filter(|a| a.group.as_ref().is_some_and(|(k, _)| k == key))
        .count()
}

fn progress(w: &WorkloadSample) -> Option<f64> {
    if w.finished {
        return Some(1.0);
    }
    let (done, total) = (w.ops?, w.ops_expected?);
    Some((done as f64 / total as f64).clamp(0.0, 1.0))
}

fn task_weight(nice: i32, policy: u32) -> f64 {
    if policy == SCHED_IDLE {
        WEIGHT_IDLE
    } else {
        nice_to_weight(nice)
    }
}

/// The scheduling entity a workload's tasks share, if any: its cgroup, else its autogroup
/// (or session) when autogroup is on. None: its tasks compete one by one.
fn group_of(
    w: &WorkloadSample,
    machine: &crate::probe::MachineSample,
    accounting_cgroup: bool,
) -> Option<(String, f64)> {
    if let Some(cg) = w.cgroup.as_ref().filter(|_| accounting_cgroup) {
        return Some((format!("cgroup {}", cg.path), cg.weight.unwrap_or(1024.0)));
    }
    if !machine.autogroup {
        return None;
    }
    let leader = w
        .processes
        .iter()
        .find(|p| p.pid == w.leader)
        .or(w.processes.first())?;
    Some(match leader.autogroup {
        // The root autogroup is the root task group itself: no group to share.
        Some((crate::probe::parse::ROOT_AUTOGROUP, _)) => return None,
        Some((id, nice)) => (format!("autogroup-{id}"), nice_to_weight(nice)),
        None => (format!("session-{}", leader.session), 1024.0),
    })
}

/// A thread's run and wait deltas, rescaled from the interval between its own two reads to
/// the sample interval `t`. Without this, a sweep preempted midway reads the threads after the
/// pause late, their deltas span more than `t`, and a busy workload seems to receive more than
/// the machine has. Unknown read times (0), or an own interval under an eighth of `t` (not a
/// sweep's skew but clocks from elsewhere, as in synthetic samples), leave the deltas as they are.
fn over_interval(dr: u64, dw: u64, read_before: u64, read_now: u64, t: u64) -> (u64, u64) {
    let own = read_now.saturating_sub(read_before);
    if read_before == 0 || own < t / 8 || own == t {
        return (dr, dw);
    }
    let scale = t as f64 / own as f64;
    let dr = (dr as f64 * scale).round() as u64;
    // Run plus wait cannot exceed the interval.
    let dw = ((dw as f64 * scale).round() as u64).min(t.saturating_sub(dr));
    (dr, dw)
}

fn account(
    pw: &WorkloadSample,
    w: &WorkloadSample,
    t_ns: f64,
    machine: &crate::probe::MachineSample,
    memo: &mut WorkloadMemo,
) -> Account {
    let prev_procs: HashMap<ProcKey, &ProcessSample> =
        pw.processes.iter().map(|p| ((p.pid, p.start), p)).collect();
    let cur_keys: HashMap<u32, ProcKey> = w
        .processes
        .iter()
        .map(|p| (p.pid, (p.pid, p.start)))
        .collect();

    // CPU of children that vanished since the last sample and were reaped by a member: their
    // parent's cutime now holds all of it, and we already credited part of it.
    let mut already: HashMap<u32, u64> = HashMap::new();
    for p in &pw.processes {
        let key = (p.pid, p.start);
        if cur_keys.get(&p.pid) == Some(&key) {
            continue;
        }
        let credited = memo.credited.remove(&key).unwrap_or(0);
        if cur_keys.contains_key(&p.ppid) {
            *already.entry(p.ppid).or_default() += credited;
        }
    }

    let t = t_ns as u64;
    let mut received: u64 = 0;
    let mut wait_sum: u64 = 0;
    let mut run_sum: u64 = 0;
    let mut slices: u64 = 0;
    let mut per_task: Vec<(u32, u32, u64, u64, f64)> = Vec::new(); // pid, tid, run, wait, weight+rt
    let mut reaped: Vec<(u32, u64)> = Vec::new();
    let mut rt_flags: Vec<bool> = Vec::new();
    for p in &w.processes {
        let key = (p.pid, p.start);
        let pp = prev_procs.get(&key);
        let mut own: u64 = 0;
        for th in &p.threads {
            // The probe lists threads sorted by tid.
            let old = pp.and_then(|pp| {
                pp.threads
                    .binary_search_by_key(&th.tid, |o| o.tid)
                    .ok()
                    .map(|k| &pp.threads[k])
            });
            let (dr, dw, ds) = match old {
                Some(o) => {
                    let dr = th.run_ns.saturating_sub(o.run_ns);
                    let dw = th.wait_ns.saturating_sub(o.wait_ns);
                    let ds = th.slices.saturating_sub(o.slices);
                    let (dr, dw) = over_interval(dr, dw, o.read_ns, th.read_ns, t);
                    (dr, dw, ds)
                }
                // Born during the interval (or first seen): it cannot have run or waited
                // longer than the interval itself.
                None => {
                    let r = th.run_ns.min(t);
                    (r, th.wait_ns.min(t - r), th.slices)
                }
            };
            own += dr;
            wait_sum += dw;
            run_sum += dr;
            slices += ds;
            per_task.push((p.pid, th.tid, dr, dw, task_weight(th.nice, th.policy)));
            rt_flags.push(th.policy == SCHED_FIFO || th.policy == SCHED_RR);
        }
        let child_now = p.child_ticks * NS_PER_TICK;
        let child_before = pp.map(|pp| pp.child_ticks * NS_PER_TICK).unwrap_or(0);
        let got = child_now
            .saturating_sub(child_before)
            .saturating_sub(already.get(&p.pid).copied().unwrap_or(0));
        own += got;
        reaped.push((p.pid, got));
        *memo.credited.entry(key).or_default() += own;
        received += own;
    }

    // Reaped children ran as a chain with the process that waited for them (fork, exec,
    // wait): fold their CPU, and the run-queue wait they likely had, into that process's
    // main thread, so a fork loop counts as one task, not as hundreds.
    let wait_ratio = if run_sum > 0 {
        (wait_sum as f64 / run_sum as f64).min(10.0)
    } else {
        0.0
    };
    // The thread that carries each process's chain: its main thread, or its first thread
    // when the main one has exited.
    let mut carrier: HashMap<u32, usize> = HashMap::new();
    for (i, &(pid, tid, ..)) in per_task.iter().enumerate() {
        let e = carrier.entry(pid).or_insert(i);
        if tid == pid {
            *e = i;
        }
    }
    let reaped_of: HashMap<u32, u64> = reaped.iter().copied().collect();
    let mut tasks: Vec<TaskClaim> = Vec::with_capacity(per_task.len());
    for (i, &(pid, _, dr, dw, weight)) in per_task.iter().enumerate() {
        let mut busy = (dr + dw) as f64;
        if carrier.get(&pid) == Some(&i) {
            busy += reaped_of.get(&pid).copied().unwrap_or(0) as f64 * (1.0 + wait_ratio);
        }
        tasks.push(TaskClaim {
            claim: Claim {
                demand: (busy / t_ns).min(1.0),
                weight,
            },
            realtime: rt_flags[i],
        });
    }
    // A zombie parent with reaped CPU but no thread left still ran.
    for &(pid, got) in &reaped {
        if got > 0 && !carrier.contains_key(&pid) {
            tasks.push(TaskClaim {
                claim: Claim {
                    demand: (got as f64 * (1.0 + wait_ratio) / t_ns).min(1.0),
                    weight: 1024.0,
                },
                realtime: false,
            });
        }
    }

    let (received_ns, accounting) = match (&w.cgroup, &pw.cgroup) {
        (Some(c), Some(pc)) if c.path == pc.path => (
            c.usage_ns.saturating_sub(pc.usage_ns) as f64,
            Accounting::Cgroup,
        ),
        _ => (received as f64, Accounting::Proc),
    };
    let group = group_of(w, machine, accounting == Accounting::Cgroup);
    Account {
        received_ns,
        wait_ns: wait_sum,
        slices,
        tasks,
        group,
        accounting,
    }
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

#[cfg(test)]
mod tests {
    use super::over_interval;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_thread_read_late_is_rescaled_to_the_sample_interval() {
        // Sample interval 100 ms; this thread was read 150 ms apart (the second sweep was
        // preempted before reaching it) and ran the whole time: one CPU, not 1.5.
        assert_eq!(
            over_interval(150 * MS, 0, 1000 * MS, 1150 * MS, 100 * MS),
            (100 * MS, 0)
        );
        // Read 50 ms apart, ran 25 ms and waited 25 ms: half a CPU, the rest waiting.
        assert_eq!(
            over_interval(25 * MS, 25 * MS, 1000 * MS, 1050 * MS, 100 * MS),
            (50 * MS, 50 * MS)
        );
    }

    #[test]
    fn unknown_or_implausible_read_times_leave_deltas_alone() {
        assert_eq!(over_interval(7, 3, 0, 1150 * MS, 100 * MS), (7, 3));
        assert_eq!(over_interval(7, 3, 1000 * MS, 1001 * MS, 100 * MS), (7, 3));
        assert_eq!(over_interval(7, 3, 1000 * MS, 1100 * MS, 100 * MS), (7, 3));
    }
}
