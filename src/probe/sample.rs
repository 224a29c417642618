//! A `Sample`: raw cumulative counters read at one instant. Recordings store Samples, and a
//! replay runs the same model on them, so everything the model needs is here and nothing is
//! derived.

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
    /// When the voluntary/involuntary counts in this Sample were read (CLOCK_MONOTONIC ns;
    /// 0 = never). Between status sweeps the previous values are carried.
    pub status_t_ns: u64,
    /// How often status is read, in ns.
    pub status_every_ns: u64,
}

/// Machine-wide counters.
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
    pub psi_some_avg10: Option<f64>,
    pub psi_some_total_us: Option<u64>,
    /// /proc/schedstat run and run-queue wait summed over CPUs, in ns (needs CONFIG_SCHEDSTATS).
    pub rq_run_ns: Option<u64>,
    pub rq_wait_ns: Option<u64>,
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
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WorkloadSample {
    pub id: u32,
    pub name: String,
    pub ops_unit: String,
    pub pgid: u32,
    pub leader: u32,
    /// Operations counted so far by its own counters.
    pub ops: Option<u64>,
    pub ops_expected: Option<u64>,
    pub finished: bool,
    pub processes: Vec<ProcessSample>,
    pub cgroup: Option<CgroupSample>,
    pub health: Health,
}

/// One process of a workload.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessSample {
    pub pid: u32,
    pub ppid: u32,
    /// Start time after boot in ticks: (pid, start) names a process across pid reuse.
    pub start: u64,
    pub session: u32,
    /// Its autogroup id and autogroup nice, when readable.
    pub autogroup: Option<(u64, i32)>,
    /// utime + stime over all its threads, dead ones too, in ticks.
    pub cpu_ticks: u64,
    /// cutime + cstime: children it has reaped, in ticks.
    pub child_ticks: u64,
    pub threads: Vec<TaskSample>,
}

/// One thread.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TaskSample {
    pub tid: u32,
    /// schedstat: ns on CPU, ns runnable but waiting, timeslices.
    pub run_ns: u64,
    pub wait_ns: u64,
    pub slices: u64,
    pub nice: i32,
    pub policy: u32,
    /// From status, refreshed every `status_every`; None until first read.
    pub vol: Option<u64>,
    pub invol: Option<u64>,
    /// CLOCK_MONOTONIC ns when its schedstat was read (0: unknown, as in older recordings).
    /// A sweep over thousands of threads can be preempted midway, so threads are read at
    /// different times; each thread's deltas are over its own interval, not the sample's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub read_ns: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
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
