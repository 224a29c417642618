//! A `Sample`: raw cumulative counters read at one instant. Recordings store Samples, and a
//! replay runs the same model on them, so everything the model needs is here and nothing is
//! derived.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Everything the probe read in one sweep.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Sample {
    /// CLOCK_MONOTONIC at the middle of the sweep, in ns.
    pub t_ns: u64,
    pub machine: MachineSample,
    pub workloads: Vec<WorkloadSample>,
    /// CPU time of the whole observing process so far (CLOCK_PROCESS_CPUTIME_ID), in ns.
    pub observer_cpu_ns: u64,
    /// CPU time the probe's sweeps have cost so far (thread CPU time inside `sample`), in ns.
    pub probe_cpu_ns: u64,
    /// When the last status sweep (every visited thread's stat: state, nice, policy) began
    /// (CLOCK_MONOTONIC ns; 0 = never). Each thread's switch counts carry their own read time
    /// (`vol_ns`): status is read per thread, when its own period is up.
    pub status_t_ns: u64,
    /// How often status is read, in ns.
    pub status_every_ns: u64,
    /// When the session began, on the same clock as `t_ns` (0: unknown, the first Sample's
    /// time is used): Frame times count from it, live and replayed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub epoch_ns: u64,
    /// When this sample was due on the sampling grid, when its sweep began (both on `t_ns`'s
    /// clock; 0: unknown), the grid's interval, and the grid points skipped before it: how
    /// late the observer was, which its figures carry.
    #[serde(default, skip_serializing_if = "is_default")]
    pub due_ns: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub sweep_start_ns: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub interval_ns: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub missed: u32,
    /// The sampling thread ran under SCHED_FIFO (a prompt sampler).
    #[serde(default, skip_serializing_if = "is_default")]
    pub observer_rt: bool,
}

/// Machine-wide counters.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MachineSample {
    /// CPUs the fairness model shares out (capacity C).
    pub cpus: usize,
    /// /proc/sys/kernel/sched_autogroup_enabled.
    pub autogroup: bool,
    /// /proc/stat ctxt: all context switches since boot.
    pub ctxt: u64,
    /// /proc/stat procs_running.
    pub procs_running: u32,
    /// Busy CPU time over all CPUs since boot (/proc/stat, all but idle and iowait), in ns.
    pub busy_ns: u64,
    /// PSI cpu "some": avg10 (%) and total (µs).
    #[serialize_always]
    pub psi_some_avg10: Option<f64>,
    #[serialize_always]
    pub psi_some_total_us: Option<u64>,
    /// /proc/schedstat run and run-queue wait summed over CPUs, in ns (needs CONFIG_SCHEDSTATS).
    #[serialize_always]
    pub rq_run_ns: Option<u64>,
    #[serialize_always]
    pub rq_wait_ns: Option<u64>,
    /// The online CPUs' ids as the kernel lists them ("0-3"); None: CPUs 0..cpus.
    pub online: Option<String>,
    /// Per online CPU: its id, busy and idle time since boot (/proc/stat cpuN lines), in ns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_cpu: Vec<CpuTimes>,
    /// When /proc/stat was read (monotonic ns; 0: unknown, take the Sample's time): the
    /// interval its lines cover, for the time the host took (model/host.rs).
    #[serde(default, skip_serializing_if = "is_default")]
    pub stat_ns: u64,
    /// The share of each CPU real-time tasks must leave to fair tasks that want it: the fair
    /// server's runtime / period (kernel 6.12 and later), else 1 - sched_rt_runtime_us /
    /// sched_rt_period_us. None: unknown (the model takes the kernel's default, 5%).
    pub fair_reserve: Option<f64>,
    /// The cpu controller's groups that tasks in this Sample sit in, with their ancestors,
    /// as read at this sweep; None: not read this time (the last list still holds).
    pub cgroups: Option<Vec<CgroupNode>>,
    /// Every other task on the machine, read at a lower rate; None: not read this sweep.
    pub rest: Option<RestSample>,
}

/// One CPU's times since boot, in ns.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CpuTimes {
    pub id: u32,
    /// Busy (steal included) and idle (iowait included).
    pub busy_ns: u64,
    pub idle_ns: u64,
    /// Steal: the hypervisor ran something else while this CPU had work, when it tells the
    /// guest (model/host.rs also finds the time it does not tell).
    #[serde(default, skip_serializing_if = "is_default")]
    pub steal_ns: u64,
    /// Interrupts and softirqs (/proc/stat's irq and softirq): time no task took.
    #[serde(default, skip_serializing_if = "is_default")]
    pub irq_ns: u64,
}

/// A group of the cpu controller (a cgroup), as the scheduler sees it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CgroupNode {
    /// Its path inside the cpu hierarchy ("/" is the root).
    pub path: String,
    /// Its weight on the kernel's nice-0 = 1024 scale (v1 cpu.shares; v2 cpu.weight × 1024 /
    /// 100; 3 when v2's cpu.idle is set).
    pub weight: f64,
    /// Its bandwidth limit in CPUs (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us).
    pub quota: Option<f64>,
    /// Time it was throttled by that limit since it was made, in ns, and how many times.
    #[serde(default, skip_serializing_if = "is_default")]
    pub throttled_ns: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub nr_throttled: u64,
}

/// The rest of the machine: every task not in a workload that ran, waited or was runnable
/// since the previous rest read. Deltas, so a replay needs no earlier Sample to use it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RestSample {
    /// CLOCK_MONOTONIC ns of this read and of the previous one (0: none; nothing listed).
    pub t_ns: u64,
    pub since_ns: u64,
    pub tasks: Vec<RestTask>,
    /// Every process that used CPU since the previous read, with all it used: its threads'
    /// (those gone since included) and its reaped children's. Absent in recordings made
    /// before 2026-12-05, whose rest is then its tasks alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub procs: Vec<RestProc>,
    /// Tasks the read budget left out this time (a machine with very many tasks).
    #[serde(default, skip_serializing_if = "is_default")]
    pub skipped: u64,
}

/// One process of the rest of the machine over `since_ns..t_ns`: what it used in all, so
/// that threads and children born and gone between two reads are charged to its group.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RestProc {
    pub pid: u32,
    /// Its name (`comm`), its session and cpu cgroup, its autogroup.
    pub comm: String,
    pub session: u32,
    pub cgroup: Option<String>,
    pub autogroup: Option<(u64, i32)>,
    /// ns its threads ran, those that exited since included: its CPU clock's delta (exact),
    /// or its stat's utime + stime where the clock cannot be read (ticks).
    pub own_ns: u64,
    /// ns its children that it reaped used, less what was counted as theirs while they
    /// lived (cutime + cstime).
    #[serde(default, skip_serializing_if = "is_default")]
    pub reaped_ns: u64,
    /// Its main thread's nice, policy and allowed CPUs: what its unseen tasks most likely had.
    pub nice: i32,
    pub policy: u32,
    pub cpus: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub kthread: bool,
}

/// One task of the rest of the machine, over `since_ns..t_ns`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RestTask {
    pub pid: u32,
    pub tid: u32,
    /// The process's name (`comm`).
    pub comm: String,
    pub session: u32,
    pub cgroup: Option<String>,
    pub autogroup: Option<(u64, i32)>,
    /// ns on CPU and waiting on a run queue over the interval.
    pub run_ns: u64,
    pub wait_ns: u64,
    /// CPU of children its process reaped over the interval (main thread only), in ns.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reaped_ns: u64,
    /// Runnable (state R) at this read and at the previous one.
    #[serde(default, skip_serializing_if = "is_default")]
    pub runnable: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub runnable_before: bool,
    pub nice: i32,
    pub policy: u32,
    #[serde(default, skip_serializing_if = "is_default")]
    pub rt_priority: u32,
    pub dl_bw: Option<f64>,
    pub cpus: Option<Arc<str>>,
    pub cpu: Option<u32>,
    /// A kernel thread: it serves work queued by others, so the time it waits does not add
    /// to what it wants (a starved kworker would otherwise seem to want the whole CPU).
    #[serde(default, skip_serializing_if = "is_default")]
    pub kthread: bool,
    /// A thread of schedlab itself: it does one sweep per interval, so waiting makes it late
    /// (its skipped samples say so), not want more. It is always runnable at its own read.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observer: bool,
    /// Its voluntary and involuntary switch counts at this read, when it ran since the last
    /// (status is read for those only): which part of its wait followed a wakeup.
    pub vol: Option<u64>,
    pub invol: Option<u64>,
    /// Timeslices it ran over the interval.
    #[serde(default, skip_serializing_if = "is_default")]
    pub slices: u64,
}

/// Whether a workload could be read.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Health {
    #[default]
    Ok,
    /// Some of its tasks or files could not be read.
    Partial(String),
    /// Nothing of it is left, or nothing could be read.
    Gone(String),
}

/// One workload's raw counters.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkloadSample {
    pub id: u32,
    pub name: String,
    pub ops_unit: String,
    pub pgid: u32,
    pub leader: u32,
    /// Operations counted so far by its own counters.
    #[serialize_always]
    pub ops: Option<u64>,
    #[serialize_always]
    pub ops_expected: Option<u64>,
    pub finished: bool,
    /// Closed loops its tasks form, as it said (ping-pong pairs, fork loops): each wants a
    /// whole CPU however its tasks take turns.
    pub closed_loops: Option<u32>,
    /// Its tasks are paced by timers, as its kind says (the wakeup probe): served sooner they
    /// would do the same work sooner, not more of it (model/demand.rs `paced`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub paced: bool,
    pub processes: Vec<ProcessSample>,
    #[serialize_always]
    pub cgroup: Option<CgroupSample>,
    pub health: Health,
    /// Where it is in its life, as whoever started it (the Lab) knows it.
    #[serde(default, skip_serializing_if = "Life::is_running")]
    pub life: Life,
    /// Its threads' latency histograms, merged per unit (none: it times nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<LatencySample>,
    /// A failed workload's last stderr lines, as its starter kept them (else empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
}

/// A workload's latency histograms of one unit, merged over its threads: raw cumulative
/// counts since it started, as its counter region holds them. The buckets are
/// [`sys::histogram`](crate::sys::shared::histogram)'s; the model takes deltas (model/latency.rs).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySample {
    /// What is timed: "round trip", "delivery", "message", "fork cycle", "timer wakeup",
    /// "thread wakeup".
    pub unit: String,
    /// Values recorded so far, and their sum in ns.
    pub samples: u64,
    pub sum_ns: u64,
    /// Operations whose latency could not be read (a chat server that does not relay the
    /// content it is sent).
    #[serde(default, skip_serializing_if = "is_default")]
    pub rejected: u64,
    /// The non-empty buckets as (index, count); index 896 counts values past 137 s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<(u16, u64)>,
}

#[cfg(test)]
impl LatencySample {
    /// What a region would report after timing `values` (ns), for tests.
    pub(crate) fn of_values(unit: &str, values: &[u64], rejected: u64) -> Self {
        use crate::sys::shared::histogram::{bucket_of, BUCKETS};
        let mut counts = vec![0u64; BUCKETS + 1];
        for &v in values {
            counts[bucket_of(v)] += 1;
        }
        Self {
            unit: unit.into(),
            samples: values.len() as u64,
            sum_ns: values.iter().sum(),
            rejected,
            buckets: counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (i as u16, c))
                .collect(),
        }
    }
}

impl From<crate::sys::shared::counters::LatencyTotals> for LatencySample {
    fn from(t: crate::sys::shared::counters::LatencyTotals) -> Self {
        Self {
            unit: t.unit.map_or("", |u| u.name()).to_string(),
            samples: t.samples,
            sum_ns: t.sum_ns,
            rejected: t.rejected,
            buckets: t.buckets,
        }
    }
}

/// A workload's life as its starter sees it; the probe only reads a running one.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Life {
    /// Waiting for its start delay.
    Pending,
    #[default]
    Running,
    /// Ended by itself, with this exit code.
    Done(i32),
    /// Stopped by the user or its time was up.
    Stopped,
    /// Could not start, or a watched process is gone; the reason.
    Failed(String),
    /// An attached workload whose processes all exited (or whose cgroup was removed): its
    /// row ends, which is no failure (schedlab did not start it and has no exit code).
    Ended(String),
}

impl Life {
    pub(crate) fn is_running(&self) -> bool {
        *self == Life::Running
    }
}

/// One process of a workload.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessSample {
    pub pid: u32,
    pub ppid: u32,
    /// Start time after boot in ticks: (pid, start) names a process across pid reuse.
    pub start: u64,
    pub session: u32,
    /// Its autogroup id and autogroup nice, when readable.
    #[serialize_always]
    pub autogroup: Option<(u64, i32)>,
    /// utime + stime over all its threads, dead ones too, in ticks; for a process of more
    /// than 16 threads, as of the last status sweep (summing them costs the kernel a walk of
    /// every thread, so its main thread's stat is read in between).
    pub cpu_ticks: u64,
    /// cutime + cstime: children it has reaped, in ticks.
    pub child_ticks: u64,
    /// Its CPU clock (CLOCK_PROCESS_CPUTIME_ID of this pid): what all its threads ran, dead
    /// ones too, in ns; and when it was read (CLOCK_MONOTONIC ns). Read at every sweep that
    /// reads its threads in rotation, if it has more than 16, and only then (0, 0 otherwise):
    /// the threads a sweep skips keep their last rates in the model, which this total corrects.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cpu_ns: u64,
    #[serde(default, skip_serializing_if = "is_default")]
    pub cpu_read_ns: u64,
    pub threads: Vec<TaskSample>,
    /// Its cgroup in the cpu controller's hierarchy ("/": the root), when readable.
    pub cgroup: Option<String>,
}

/// One thread.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TaskSample {
    pub tid: u32,
    /// schedstat: ns on CPU, ns runnable but waiting, timeslices.
    pub run_ns: u64,
    pub wait_ns: u64,
    pub slices: u64,
    pub nice: i32,
    pub policy: u32,
    /// Voluntary and involuntary switches (the sched file, or status where it lacks them),
    /// refreshed every `status_every`; None until first read.
    #[serialize_always]
    pub vol: Option<u64>,
    #[serialize_always]
    pub invol: Option<u64>,
    /// CLOCK_MONOTONIC ns when its schedstat was read (0: unknown, as in older recordings).
    /// A sweep over thousands of threads can be preempted midway, so threads are read at
    /// different times; each thread's deltas are over its own interval, not the sample's.
    #[serde(default, skip_serializing_if = "is_default")]
    pub read_ns: u64,
    /// Its state letter from stat ('R' runnable, 'S', 'D', ...) when stat was read at this
    /// sweep; None when not read this time (stat is read at status sweeps, and at every sweep
    /// for a thread that ran little while CPUs were busy: it may be starving).
    pub state: Option<char>,
    /// The CPU it was last seen on (stat's `processor`).
    pub cpu: Option<u32>,
    /// The CPUs it may run on (sched_getaffinity, or status `Cpus_allowed_list`, as the kernel
    /// lists them); None: unknown, taken as all.
    /// Shared, not owned: a Sample copies every thread's at every sweep, and the list
    /// nearly never changes.
    pub cpus: Option<Arc<str>>,
    /// Its real-time priority (1..=99 under SCHED_FIFO/RR).
    #[serde(default, skip_serializing_if = "is_default")]
    pub rt_priority: u32,
    /// A SCHED_DEADLINE task's reserved bandwidth (runtime / period).
    pub dl_bw: Option<f64>,
    /// When `vol` was read (CLOCK_MONOTONIC ns; 0 = never): a thread that may be starving has
    /// its status read out of turn, so this can be later than the Sample's status time.
    #[serde(default, skip_serializing_if = "is_default")]
    pub vol_ns: u64,
    /// `se.nr_migrations` from its sched file: how many times it moved to another CPU since
    /// it began. None: not read yet, or this kernel has no such file.
    pub migrations: Option<u64>,
    /// When `migrations` was read (CLOCK_MONOTONIC ns; 0 = never). The sched file is read less
    /// often than schedstat and in rotation, so each thread's rate is over its own interval.
    #[serde(default, skip_serializing_if = "is_default")]
    pub migrations_ns: u64,
}

/// A field at its default (0, false) is left out of a Sample or a Frame: older files lack it,
/// and serde's `default` reads it back as the same value.
pub(crate) fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

/// The workload's own cgroup.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CgroupSample {
    pub path: String,
    /// 1 (cpuacct) or 2 (cpu.stat).
    pub version: u8,
    /// CPU used by everything that ever ran in it, in ns.
    pub usage_ns: u64,
    /// Its CPU weight on the kernel's nice-0 = 1024 scale (v1 cpu.shares; v2 cpu.weight
    /// × 1024 / 100), when readable.
    pub weight: Option<f64>,
}
