//! What each task did over an interval, before fairness: CPU received (reaped children
//! included, counted once), what it wanted (with the wait the kernel has not reported yet),
//! its weight and class, the CPUs it may use and where it sits in the group tree. For the
//! workloads from two consecutive Samples; for the rest of the machine from its deltas.

// foldhash, not SipHash: a thousand-thread workload costs several lookups per thread per tick,
// and these keys (pids, tids) come from the kernel, not from a peer that could pick them.
use foldhash::{HashMap, HashMapExt};

use super::cpuset::CpuSet;
use super::demand::{self, Observed, TaskMemo};
use super::solver::Class;
use super::tree::Placement;
use super::Accounting;
use crate::probe::parse::{nice_to_weight, NS_PER_TICK, WEIGHT_IDLE};
use crate::probe::{ProcessSample, TaskSample, WorkloadSample};

mod clock;
use clock::{clock_run, match_clock};

const SCHED_FIFO: u32 = 1;
const SCHED_RR: u32 = 2;
const SCHED_IDLE: u32 = 5;
const SCHED_DEADLINE: u32 = 6;

/// A claimant of the fairness model.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    /// CPUs it wanted (0..=1).
    pub demand: f64,
    /// CPUs it received, when known per task (0 for the rest between its reads).
    pub received: f64,
    pub weight: f64,
    pub class: Class,
    /// The CPUs it may use (empty: all).
    pub cpus: CpuSet,
    /// The CPU it was last seen on.
    pub cpu: Option<u32>,
    pub placement: Placement,
}

impl Claim {
    pub fn realtime(&self) -> bool {
        !matches!(self.class, Class::Fair)
    }
}

/// The class and weight the kernel gives a task.
pub(crate) fn class_of(
    policy: u32,
    nice: i32,
    rt_priority: u32,
    dl_bw: Option<f64>,
) -> (Class, f64) {
    match policy {
        SCHED_FIFO | SCHED_RR => (Class::RealTime(rt_priority.max(1)), 1024.0),
        SCHED_DEADLINE => (Class::Deadline(dl_bw.unwrap_or(0.0)), 1024.0),
        SCHED_IDLE => (Class::Fair, WEIGHT_IDLE),
        _ => (Class::Fair, nice_to_weight(nice)),
    }
}

type ProcKey = (u32, u64);

/// What the model keeps of a workload between intervals.
#[derive(Default)]
pub(crate) struct WorkloadMemo {
    /// CPU already credited to each process (its threads plus what it reaped), so a child's
    /// time is not counted twice when its parent reaps it.
    credited: HashMap<ProcKey, u64>,
    /// Per process, per thread (sorted by tid, as the probe lists threads): the wait counted
    /// ahead of schedstat, its state, its switches. A list walked beside the thread list, not a
    /// map keyed by thread: at 1,000 threads a tick, the map's lookups (a cache miss each) and
    /// the old Sample's binary searches were half of the model's accounting.
    tasks: HashMap<ProcKey, Vec<(u32, TaskMemo)>>,
}

/// One workload over one interval.
#[derive(Debug)]
pub(crate) struct Account {
    pub received_ns: f64,
    /// Task-ns spent waiting for a CPU (what schedstat reported plus what it has not yet).
    pub wait_ns: f64,
    /// The same with what its reaped children likely waited (gone with them): its tasks'
    /// wait per ns they ran, times what the children ran.
    pub with_children_wait_ns: f64,
    /// The part of it that followed a wakeup (latency), and how many timeslices began after
    /// one (demand::Wanted).
    pub woken_wait_ns: f64,
    pub wakeups: f64,
    pub slices: u64,
    pub claims: Vec<Claim>,
    pub accounting: Accounting,
    /// The union of its tasks' allowed CPUs, and the CPUs its tasks were seen on.
    pub cpus_allowed: CpuSet,
    pub cpus_used: CpuSet,
    /// Tasks that wanted most of the interval.
    pub busy_tasks: usize,
}

/// A thread's run and wait deltas, rescaled from the interval between its own two reads to
/// the sample interval `t`. Without this, a sweep preempted midway reads the threads after the
/// pause late, their deltas span more than `t`, and a busy workload seems to receive more than
/// the machine has. Unknown read times (0), or an own interval under an eighth of `t` (not a
/// sweep's skew but clocks from elsewhere, as in synthetic samples), leave the deltas as they are.
pub(crate) fn over_interval(
    dr: u64,
    dw: u64,
    read_before: u64,
    read_now: u64,
    t: u64,
) -> (u64, u64) {
    let own = read_now.saturating_sub(read_before);
    if read_before == 0 || own < t / 8 || own == t {
        return (dr, dw);
    }
    let scale = t as f64 / own as f64;
    // Wait is not capped here: wait that arrives late may be paid back against what was
    // counted ahead (demand::wanted caps run plus wait at the interval after that).
    (
        (dr as f64 * scale).round() as u64,
        (dw as f64 * scale).round() as u64,
    )
}

/// A thread's allowed CPUs; `last` keeps the last list parsed, since a process's threads
/// nearly always share one (a thousand parses a tick otherwise).
fn cpus_of<'s>(th: &'s TaskSample, last: &mut Option<(&'s str, CpuSet)>) -> CpuSet {
    let Some(text) = th.cpus.as_deref() else {
        return CpuSet::default();
    };
    if let Some((t, set)) = last {
        if *t == text {
            return set.clone();
        }
    }
    let set = CpuSet::parse_list(text).unwrap_or_default();
    *last = Some((text, set.clone()));
    set
}

fn placement_of(p: &ProcessSample) -> Placement {
    Placement {
        cgroup: p.cgroup.as_deref().map(Into::into),
        autogroup: p.autogroup,
        session: p.session,
    }
}

/// One workload over the interval between `pw` and `w` (`since_ns` is `pw`'s Sample time).
pub(crate) fn account(
    pw: &WorkloadSample,
    w: &WorkloadSample,
    t_ns: f64,
    since_ns: u64,
    memo: &mut WorkloadMemo,
) -> Account {
    let prev_procs: HashMap<ProcKey, &ProcessSample> =
        pw.processes.iter().map(|p| ((p.pid, p.start), p)).collect();
    let cur_keys: HashMap<u32, ProcKey> = w
        .processes
        .iter()
        .map(|p| (p.pid, (p.pid, p.start)))
        .collect();

    let already = already_credited(pw, &cur_keys, memo);

    let mut received: u64 = 0;
    let mut sums = Sums::default();
    // Per thread: pid, tid, run, wanted (ns), and its claim without demand yet.
    let threads: usize = w.processes.iter().map(|p| p.threads.len()).sum();
    let mut per_task: Vec<(u32, u32, u64, u64, Claim)> = Vec::with_capacity(threads);
    let mut reaped: Vec<(u32, u64, Placement)> = Vec::new();
    let mut task_memos: HashMap<ProcKey, Vec<(u32, TaskMemo)>> =
        HashMap::with_capacity(w.processes.len());
    for p in &w.processes {
        let key = (p.pid, p.start);
        let pp = prev_procs.get(&key).copied();
        let placement = placement_of(p);
        let mut own: u64 = 0;
        let mut last_cpus = None;
        let old_memos = memo.tasks.remove(&key).unwrap_or_default();
        let mut memos = Vec::with_capacity(p.threads.len());
        let (mut at_old, mut at_memo) = (0, 0);
        let mut intervals: Vec<ThreadInterval> = p
            .threads
            .iter()
            .map(|th| {
                let old = pp.and_then(|pp| seek(&pp.threads, &mut at_old, th.tid, |o| o.tid));
                let mut tm = seek(&old_memos, &mut at_memo, th.tid, |m| m.0)
                    .map(|m| m.1)
                    .unwrap_or_default();
                let iv = thread_interval(th, old, t_ns, since_ns, w.paced, &mut tm);
                memos.push((th.tid, tm));
                iv
            })
            .collect();
        // Threads that exited since the last Sample ran what the clock says beyond the
        // read ones: like reaped children, folded into the process's main thread.
        let mut exited = 0;
        if let Some(clock) = clock_run(p, pp, t_ns as u64) {
            if intervals.iter().any(|iv| iv.held) {
                match_clock(&mut intervals, clock, t_ns as u64);
            } else {
                let read: u64 = intervals.iter().map(|iv| iv.run).sum();
                // The clock brings a running thread's time up to now, schedstat only to its
                // last tick (4 ms here): under a fiftieth of the interval is that, not a
                // thread that exited.
                exited = clock.saturating_sub(read).saturating_sub(t_ns as u64 / 50);
            }
        }
        for (th, iv) in p.threads.iter().zip(intervals) {
            own += iv.run;
            let cpus = cpus_of(th, &mut last_cpus);
            sums.add(&iv, &cpus, th.cpu);
            let (class, weight) = class_of(th.policy, th.nice, th.rt_priority, th.dl_bw);
            per_task.push((
                p.pid,
                th.tid,
                iv.run,
                iv.busy,
                Claim {
                    demand: 0.0,
                    received: iv.run as f64 / t_ns,
                    weight,
                    class,
                    cpus,
                    cpu: th.cpu,
                    placement: placement.clone(),
                },
            ));
        }
        let before = already.get(&p.pid).copied().unwrap_or(0);
        let got = reaped_since(p, pp, before) + exited;
        own += got;
        reaped.push((p.pid, got, placement));
        // What it reaped counts as its own from now on, the part its children were credited
        // while they lived included: when it is reaped in turn (hackbench's lean program, a
        // make's sub-make), its parent's cutime holds all of it, and all of it was counted.
        let taken_back = before.min(reaped_since(p, pp, 0));
        *memo.credited.entry(key).or_default() += own + taken_back;
        received += own;
        task_memos.insert(key, by_tid(memos));
    }
    // Processes gone since are forgotten with their threads.
    memo.tasks = task_memos;

    // The wait they wanted (after preemptions), not their wakeup delays.
    let wait_ratio = if sums.run > 0 {
        (sums.wanted_wait as f64 / sums.run as f64).min(10.0)
    } else {
        0.0
    };
    // Reaped children's wait is gone with them: taken to be what its live threads waited
    // per ns they ran (all of it: for a closed loop every wait is the loop stalled).
    let reaped_ns: u64 = reaped.iter().map(|r| r.1).sum();
    let children_wait = if sums.run > 0 {
        reaped_ns as f64 * (sums.wait as f64 / sums.run as f64).min(10.0)
    } else {
        0.0
    };
    let (claims, busy_tasks) = fold_children(per_task, reaped, wait_ratio, t_ns);
    let wait_total = sums.wait as f64;

    let (received_ns, accounting) = match (&w.cgroup, &pw.cgroup) {
        (Some(c), Some(pc)) if c.path == pc.path => (
            c.usage_ns.saturating_sub(pc.usage_ns) as f64,
            Accounting::Cgroup,
        ),
        _ => (received as f64, Accounting::Proc),
    };
    Account {
        received_ns,
        wait_ns: wait_total,
        with_children_wait_ns: wait_total + children_wait,
        woken_wait_ns: sums.woken_wait as f64,
        wakeups: sums.wakeups,
        slices: sums.slices,
        claims,
        accounting,
        cpus_allowed: sums.cpus_allowed,
        cpus_used: sums.cpus_used,
        busy_tasks,
    }
}

/// The item of `items` (sorted by tid) with this `tid`, looked for from `*at` on and `*at` moved
/// past it: when tids are asked in order, as the probe lists threads, a walk that reads each
/// item once; otherwise (a thread new since, a synthetic sample out of order) a binary search.
pub(super) fn seek<'a, T>(
    items: &'a [T],
    at: &mut usize,
    tid: u32,
    key: impl Fn(&T) -> u32,
) -> Option<&'a T> {
    while *at < items.len() && key(&items[*at]) < tid {
        *at += 1;
    }
    if let Some(item) = items.get(*at).filter(|x| key(x) == tid) {
        *at += 1;
        return Some(item);
    }
    items
        .binary_search_by_key(&tid, &key)
        .ok()
        .map(|k| &items[k])
}

/// A per-thread list made in the order threads came, sorted by tid for the next `seek`s if
/// they came out of order (a synthetic sample; the probe lists them in order).
pub(super) fn by_tid<T>(mut list: Vec<(u32, T)>) -> Vec<(u32, T)> {
    if !list.windows(2).all(|m| m[0].0 < m[1].0) {
        list.sort_unstable_by_key(|m| m.0);
    }
    list
}

/// A workload's threads summed over one interval.
#[derive(Default)]
struct Sums {
    run: u64,
    wait: u64,
    wanted_wait: u64,
    woken_wait: u64,
    wakeups: f64,
    slices: u64,
    cpus_allowed: CpuSet,
    cpus_used: CpuSet,
}

impl Sums {
    fn add(&mut self, iv: &ThreadInterval, cpus: &CpuSet, cpu: Option<u32>) {
        self.run += iv.run;
        self.wait += iv.waited;
        self.wanted_wait += iv.busy.saturating_sub(iv.run);
        self.woken_wait += iv.woken_wait;
        self.wakeups += iv.wakeups;
        self.slices += iv.slices;
        self.cpus_allowed.add_all(cpus);
        if iv.busy > 0 {
            if let Some(c) = cpu {
                self.cpus_used.insert(c);
            }
        }
    }
}

/// CPU a process's reaped children used since its last Sample (from its cutime + cstime),
/// less what was credited already while they were still alive.
fn reaped_since(p: &ProcessSample, before: Option<&ProcessSample>, already: u64) -> u64 {
    let child_now = p.child_ticks * NS_PER_TICK;
    let child_before = before.map(|b| b.child_ticks * NS_PER_TICK).unwrap_or(0);
    child_now
        .saturating_sub(child_before)
        .saturating_sub(already)
}

/// Reaped children ran as a chain with the process that waited for them (fork, exec, wait):
/// their CPU, and the run-queue wait they likely had (`wait_ratio` of what they ran), are
/// folded into that process's main thread, so a fork loop counts as one task, not hundreds.
/// Returns the claims, and how many of them wanted most of the interval.
fn fold_children(
    per_task: Vec<(u32, u32, u64, u64, Claim)>,
    reaped: Vec<(u32, u64, Placement)>,
    wait_ratio: f64,
    t_ns: f64,
) -> (Vec<Claim>, usize) {
    // The thread that carries each process's chain: its main thread, or its first thread
    // when the main one has exited.
    let mut carrier: HashMap<u32, usize> = HashMap::new();
    for (i, &(pid, tid, ..)) in per_task.iter().enumerate() {
        let e = carrier.entry(pid).or_insert(i);
        if tid == pid {
            *e = i;
        }
    }
    let reaped_of: HashMap<u32, u64> = reaped.iter().map(|(p, g, _)| (*p, *g)).collect();
    let mut claims: Vec<Claim> = Vec::with_capacity(per_task.len());
    let mut busy_tasks = 0;
    for (i, (pid, _, _, busy, mut claim)) in per_task.into_iter().enumerate() {
        let mut busy = busy as f64;
        if carrier.get(&pid) == Some(&i) {
            let r = reaped_of.get(&pid).copied().unwrap_or(0) as f64;
            busy += r * (1.0 + wait_ratio);
            claim.received += r / t_ns;
        }
        claim.demand = busy / t_ns;
        for c in one_cpu_each(claim) {
            busy_tasks += usize::from(c.demand >= 0.5);
            claims.push(c);
        }
    }
    // A zombie parent with reaped CPU but no thread left still ran.
    for (pid, got, placement) in reaped {
        if got > 0 && !carrier.contains_key(&pid) {
            claims.extend(one_cpu_each(Claim {
                demand: got as f64 * (1.0 + wait_ratio) / t_ns,
                received: got as f64 / t_ns,
                weight: 1024.0,
                class: Class::Fair,
                cpus: CpuSet::new(),
                cpu: None,
                placement,
            }));
        }
    }
    (claims, busy_tasks)
}

/// A claim that carries more than one CPU (children that ran side by side, threads that
/// exited, folded into their process's main thread: a hackbench run's 40 tasks reaped at once)
/// as claims of at most one CPU each, since a task runs on one CPU at a time: folded into one,
/// they would be due one CPU at most and read `ahead`.
fn one_cpu_each(claim: Claim) -> Vec<Claim> {
    let n = claim.demand.ceil().max(1.0);
    if n <= 1.0 {
        return vec![claim];
    }
    let part = Claim {
        demand: claim.demand / n,
        received: claim.received / n,
        ..claim
    };
    vec![part; n as usize]
}

/// One thread over the interval: what it ran, its timeslices, and how long it wanted a CPU
/// and waited for one (ns), and what of that wait followed a wakeup (latency, not demand).
struct ThreadInterval {
    run: u64,
    slices: u64,
    busy: u64,
    waited: u64,
    woken_wait: u64,
    wakeups: f64,
    /// Read in rotation and not read this sweep: these are its last rates, held.
    held: bool,
}

fn thread_interval(
    th: &TaskSample,
    old: Option<&TaskSample>,
    t_ns: f64,
    since_ns: u64,
    paced: bool,
    tm: &mut TaskMemo,
) -> ThreadInterval {
    let t = t_ns as u64;
    // Read in rotation and not read this sweep: its last rate holds (its next read covers
    // the whole time since, and is rescaled to its interval then).
    if old.is_some_and(|o| th.read_ns != 0 && th.read_ns == o.read_ns) {
        let busy = ((tm.rate.0 * t_ns) as u64).min(t);
        let waited = ((tm.rate.1 * t_ns) as u64).min(busy);
        return ThreadInterval {
            run: busy.saturating_sub(waited),
            slices: 0,
            busy,
            waited,
            woken_wait: 0,
            wakeups: 0.0,
            held: true,
        };
    }
    let (dr, dw, ds) = match old {
        Some(o) => {
            let dr = th.run_ns.saturating_sub(o.run_ns);
            let dw = th.wait_ns.saturating_sub(o.wait_ns);
            let ds = th.slices.saturating_sub(o.slices);
            let (dr, dw) = over_interval(dr, dw, o.read_ns, th.read_ns, t);
            (dr, dw, ds)
        }
        // Born during the interval (or first seen): it cannot have run or waited longer
        // than the interval itself.
        None => {
            let r = th.run_ns.min(t);
            (r, th.wait_ns.min(t - r), th.slices)
        }
    };
    if tm.runnable.is_none() {
        // Its first interval: its state at the start is in the previous Sample.
        tm.runnable = old.and_then(|o| o.state).map(|c| c == 'R');
    }
    let fresh = th.vol_ns > since_ns;
    // Its voluntary switches over the interval, before `wanted` moves the memo on.
    let slept = th
        .vol
        .filter(|_| fresh)
        .zip(tm.switches)
        .map(|(v, (v0, _))| v.saturating_sub(v0));
    let w = demand::wanted(
        Observed {
            run_ns: dr,
            wait_ns: dw,
            slices: ds,
            runnable: th.state.map(|c| c == 'R'),
            vol: th.vol.filter(|_| fresh).map(|v| (v, th.vol_ns)),
            switches: th.vol.zip(th.invol).filter(|_| fresh),
            since_ns,
        },
        t,
        tm,
    );
    // A wakeup probe's wait after a preemption delays its timer's work; it makes no more.
    // Counted whole, beside a hog on its CPU it read `STARVED` (0.022 CPU for 0.040 due).
    // Without a fresh switch count its timeslices bound the bursts: each began after a sleep
    // or a preemption, so a burst is at least a slice's run.
    let w = if paced {
        demand::paced(w, dr.min(t), slept.or(Some(ds)), th.state == Some('R'))
    } else {
        w
    };
    tm.rate = (w.busy as f64 / t_ns, w.waited as f64 / t_ns);
    ThreadInterval {
        run: dr,
        slices: ds,
        busy: w.busy,
        waited: w.waited,
        woken_wait: w.woken_wait,
        wakeups: w.wakeups,
        held: false,
    }
}

/// CPU of children that vanished since the last sample and were reaped by a member: their
/// parent's cutime now holds all of it, and part of it was already credited. Per parent pid.
/// A child whose parent vanished too (hackbench's lean program and its tasks, reaped within
/// one interval) is counted at the nearest member above it: the kernel adds a reaped child's
/// own cutime to its reaper's, so that member's cutime holds the whole chain.
fn already_credited(
    pw: &WorkloadSample,
    cur_keys: &HashMap<u32, ProcKey>,
    memo: &mut WorkloadMemo,
) -> HashMap<u32, u64> {
    let mut gone: HashMap<u32, (u32, u64)> = HashMap::new();
    for p in &pw.processes {
        let key = (p.pid, p.start);
        if cur_keys.get(&p.pid) == Some(&key) {
            continue;
        }
        let credited = memo.credited.remove(&key).unwrap_or(0);
        gone.insert(p.pid, (p.ppid, credited));
    }
    let mut already: HashMap<u32, u64> = HashMap::new();
    for &(ppid, credited) in gone.values() {
        let mut reaper = ppid;
        // A bound on the walk: pids can be reused, and a cycle must not hang the model.
        for _ in 0..64 {
            match gone.get(&reaper) {
                Some(&(up, _)) if up != reaper => reaper = up,
                _ => break,
            }
        }
        if cur_keys.contains_key(&reaper) {
            *already.entry(reaper).or_default() += credited;
        }
    }
    already
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn workload(state: char, read_ns: u64) -> WorkloadSample {
        WorkloadSample {
            processes: vec![ProcessSample {
                pid: 7,
                threads: vec![TaskSample {
                    tid: 7,
                    run_ns: 50 * MS,
                    wait_ns: 950 * MS,
                    state: Some(state),
                    read_ns,
                    ..TaskSample::default()
                }],
                ..ProcessSample::default()
            }],
            ..WorkloadSample::default()
        }
    }

    #[test]
    fn a_grandchild_reaped_twice_over_is_counted_once() {
        // hackbench's shape: schedlab (1) runs a lean program (2), whose task (3) runs, dies
        // and is reaped by 2 (its cutime), which then exits and is reaped by 1 (whose cutime
        // holds 2's and 3's). Every ns once: 100 ms alive, 50 more before it died.
        let proc_ = |pid: u32, ppid: u32, child_ms: u64, run_ms: Option<u64>| ProcessSample {
            pid,
            ppid,
            start: 1,
            child_ticks: child_ms / 10,
            threads: run_ms
                .map(|r| TaskSample {
                    tid: pid,
                    run_ns: r * MS,
                    ..TaskSample::default()
                })
                .into_iter()
                .collect(),
            ..ProcessSample::default()
        };
        let w = |procs: Vec<ProcessSample>| WorkloadSample {
            processes: procs,
            ..WorkloadSample::default()
        };
        let samples = [
            w(vec![
                proc_(1, 0, 0, Some(0)),
                proc_(2, 1, 0, Some(0)),
                proc_(3, 2, 0, Some(0)),
            ]),
            w(vec![
                proc_(1, 0, 0, Some(0)),
                proc_(2, 1, 0, Some(0)),
                proc_(3, 2, 0, Some(100)),
            ]),
            w(vec![proc_(1, 0, 0, Some(0)), proc_(2, 1, 150, Some(0))]),
            w(vec![proc_(1, 0, 150, Some(0))]),
        ];
        // And the lean program and its task gone in the same interval.
        let at_once = [
            samples[0].clone(),
            samples[1].clone(),
            w(vec![proc_(1, 0, 150, Some(0))]),
        ];
        let mut memo = WorkloadMemo::default();
        let t = 1000.0 * MS as f64;
        let got: Vec<f64> = samples
            .windows(2)
            .map(|p| account(&p[0], &p[1], t, 0, &mut memo).received_ns / MS as f64)
            .collect();
        assert_eq!(got, vec![100.0, 50.0, 0.0]);
        let mut memo = WorkloadMemo::default();
        let got: Vec<f64> = at_once
            .windows(2)
            .map(|p| account(&p[0], &p[1], t, 0, &mut memo).received_ns / MS as f64)
            .collect();
        assert_eq!(got, vec![100.0, 50.0]);
    }

    #[test]
    fn a_thread_runnable_at_both_ends_of_its_first_interval_wanted_all_of_it() {
        // Seen runnable when first read and again 500 ms later, schedstat unmoved: starved,
        // not idle, from the first interval on.
        let (t0, t1) = (1000 * MS, 1500 * MS);
        let first_interval = |first: char| {
            let mut memo = WorkloadMemo::default();
            let prev = workload(first, t0);
            account(&prev, &workload('R', t1), 500.0 * MS as f64, t0, &mut memo)
        };
        let acc = first_interval('R');
        assert_eq!(acc.claims[0].demand, 1.0);
        assert_eq!(acc.wait_ns, 500.0 * MS as f64);
        // Asleep when first read: it may have just woken, so only what it used counts.
        let acc = first_interval('S');
        assert_eq!(acc.claims[0].demand, 0.0);
    }

    #[test]
    fn a_thread_read_in_rotation_keeps_its_rate_between_reads() {
        // A busy thread read at 1.0 s and 1.1 s (half its time on CPU, half waiting), then not
        // re-read at 1.2 s (its read time unchanged): it still wanted all of it.
        let at = |run: u64, wait: u64, read_ns: u64| WorkloadSample {
            processes: vec![ProcessSample {
                pid: 7,
                threads: vec![TaskSample {
                    tid: 8,
                    run_ns: run * MS,
                    wait_ns: wait * MS,
                    read_ns,
                    ..TaskSample::default()
                }],
                ..ProcessSample::default()
            }],
            ..WorkloadSample::default()
        };
        let t = 100.0 * MS as f64;
        let mut memo = WorkloadMemo::default();
        let a = at(0, 0, 1000 * MS);
        let b = at(50, 50, 1100 * MS);
        let read = account(&a, &b, t, 1000 * MS, &mut memo);
        assert_eq!(read.claims[0].demand, 1.0);
        assert!((read.received_ns - 50.0 * MS as f64).abs() < 1.0);
        let carried = account(&b, &at(50, 50, 1100 * MS), t, 1100 * MS, &mut memo);
        assert_eq!(carried.claims[0].demand, 1.0);
        assert!((carried.received_ns - 50.0 * MS as f64).abs() < 1.0);
        assert!((carried.wait_ns - 50.0 * MS as f64).abs() < 1.0);
    }

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
