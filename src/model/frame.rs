//! A `Frame`: everything derived for one interval between two Samples. The dashboard draws
//! Frames, `run` aggregates them, exporters print them. Pure data, no I/O.

use serde::{Deserialize, Serialize};

/// Where a workload's CPU time came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Accounting {
    /// Exact: the workload's own cgroup (counts reaped children to the nanosecond).
    Cgroup,
    /// Per task from /proc (schedstat), plus reaped children's cutime/cstime.
    #[default]
    Proc,
}

/// A workload's life, as the dashboard shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadState {
    #[default]
    Starting,
    Running,
    /// Finished by itself (a finite run); exit code.
    Done(i32),
    /// Stopped by the user.
    Stopped,
    /// Died or could not be read; the reason.
    Gone(String),
    /// Only some of its tasks could be read; the reason.
    Partial(String),
}

/// One workload over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadFrame {
    pub id: u32,
    pub name: String,
    pub state: WorkloadState,
    /// Live tasks (threads) at the end of the interval.
    pub tasks: usize,
    /// Operations per second from the workload's own counters (messages, forks, round trips).
    pub ops_per_sec: f64,
    /// What an operation is: "msg", "fork", "rt", "unit".
    pub ops_unit: String,
    /// Progress of a finite run, 0..=1.
    pub progress: Option<f64>,
    /// CPUs received over the interval (1.0 = one whole CPU).
    pub cpu_received: f64,
    /// CPUs it would have used had it never waited on a run queue.
    pub cpu_demand: f64,
    /// CPUs the weighted max-min model says it should have received.
    pub cpu_fair: f64,
    /// cpu_received / cpu_fair (1.0 = fair; below = starved).
    pub fairness_ratio: f64,
    /// Its scheduling weight as the model sees it (sum over tasks, or its group's weight).
    pub weight: f64,
    /// Context switches per second summed over all its threads.
    pub voluntary_cs_per_sec: f64,
    pub involuntary_cs_per_sec: f64,
    /// Share of the interval its tasks spent runnable but waiting, in % of one task-interval
    /// summed over tasks (so it can exceed 100 with many tasks).
    pub runq_wait_pct: f64,
    /// Mean run-queue wait per timeslice, in microseconds.
    pub wait_per_slice_us: f64,
    pub accounting: Accounting,
    /// The autogroup / session / cgroup the fairness model put it in.
    pub group: String,
}

/// The machine over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineFrame {
    pub cpus: usize,
    pub autogroup: bool,
    pub ctxt_per_sec: f64,
    pub procs_running: u32,
    /// PSI cpu "some" avg10, when the kernel has PSI.
    pub psi_some_avg10: Option<f64>,
    /// CPUs used by everything outside schedlab's workloads.
    pub rest_cpu_received: f64,
    pub rest_cpu_fair: f64,
}

/// Everything derived from two Samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Seconds since the session started, at the end of the interval.
    pub t: f64,
    /// Real length of the interval in seconds.
    pub interval: f64,
    pub workloads: Vec<WorkloadFrame>,
    pub machine: MachineFrame,
    /// Jain's fairness index over the workloads' fairness ratios (1 = perfectly fair).
    pub jain_index: f64,
    /// The observer's own CPU use over the interval, in % of one CPU.
    pub observer_cpu_pct: f64,
    /// How often voluntary/involuntary switch counts were refreshed, in seconds.
    pub status_interval: f64,
}
