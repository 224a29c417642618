//! A `Frame`: everything derived for one interval between two Samples. The dashboard draws
//! Frames, `run` aggregates them, exporters print them. Pure data, no I/O.

use serde::{Deserialize, Serialize};

use crate::probe::sample::is_default;

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
    /// Attached, and what it watched is gone (exited, cgroup removed); the reason.
    Ended(String),
}

impl From<&crate::probe::Life> for WorkloadState {
    /// A workload's state as its starter knows it (the probe's health may say more of a
    /// running one: gone, partial, not measured yet).
    fn from(life: &crate::probe::Life) -> Self {
        use crate::probe::Life;
        match life {
            Life::Pending => WorkloadState::Starting,
            Life::Running => WorkloadState::Running,
            Life::Done(code) => WorkloadState::Done(*code),
            Life::Stopped => WorkloadState::Stopped,
            Life::Failed(why) => WorkloadState::Gone(why.clone()),
            Life::Ended(why) => WorkloadState::Ended(why.clone()),
        }
    }
}

/// One workload over one interval.
#[serde_with::skip_serializing_none]
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
    #[serialize_always]
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
    /// Received, due and wanted over the verdict window (CPUs, averaged), and their ratio:
    /// what the table shows, so a verdict holds still while the per-interval figures above
    /// move in the charts.
    #[serde(default)]
    pub window_received: f64,
    #[serde(default)]
    pub window_fair: f64,
    #[serde(default)]
    pub window_demand: f64,
    #[serde(default = "one")]
    pub window_ratio: f64,
    #[serde(default)]
    pub verdict: Verdict,
    /// Why it is due what it is due.
    #[serde(default)]
    pub due: Due,
    /// Why it got less (short, starved) or more (ahead) than it was due, when the data shows it.
    #[serde(default)]
    pub cause: Cause,
    /// Time its cgroup's quota held it off the CPU over the interval, in % of one task-interval
    /// (not counted in `runq_wait_pct`).
    #[serde(default)]
    pub throttled_pct: f64,
    /// The CPUs its tasks may use, and those they were seen on over the interval.
    #[serde(default)]
    pub cpus_allowed: String,
    #[serde(default)]
    pub cpus_used: String,
    /// How long its own operations took over the interval, from its in-band histograms
    /// (model/latency.rs); None: it times nothing (a CPU hog, any command).
    pub latency: Option<Latency>,
    /// Its other kinds of latency, when it times more than one (the wakeup probe's thread
    /// wakeups beside its timer wakeups, which are `latency`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_latency: Vec<Latency>,
    /// A failed workload's last stderr lines (else empty), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
    /// Its tasks' mean delay from a wakeup to running, over the verdict window, in µs: the
    /// run-queue wait that followed wakeups (latency, not CPU it was refused:
    /// model/demand.rs). None: no wakeup seen.
    pub wake_delay_us: Option<f64>,
    /// Its tasks waited long after wakeups (frame::is_late): latency, shown beside a CPU
    /// verdict that it does not change.
    #[serde(default, skip_serializing_if = "is_default")]
    pub late: bool,
    /// How often its threads moved to another CPU, per second, summed over threads
    /// (`se.nr_migrations`, each thread's over its own read interval: model/migrations.rs).
    /// None: not known yet, or the kernel has no per-task sched file.
    pub migrations_per_sec: Option<f64>,
}

/// Percentiles of one kind of latency over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// What was timed: "round trip", "delivery", "message", "fork cycle", "timer wakeup",
    /// "thread wakeup".
    pub unit: String,
    /// Values over the interval (0: none; the figures below are then 0 and mean nothing).
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub mean_us: f64,
    /// False: "latency unavailable": the operations' stamps did not survive the trip (a chat
    /// server that does not relay the bytes it is sent), so no figure above is one.
    pub available: bool,
}

fn one() -> f64 {
    1.0
}

impl WorkloadFrame {
    /// Turns the -0.0 of empty sums into 0.0, so files and screens never show "-0".
    pub(crate) fn tidy(&mut self) {
        for x in [
            &mut self.cpu_received,
            &mut self.cpu_demand,
            &mut self.cpu_fair,
            &mut self.runq_wait_pct,
            &mut self.throttled_pct,
            &mut self.wait_per_slice_us,
            &mut self.window_received,
            &mut self.window_fair,
            &mut self.window_demand,
        ] {
            *x += 0.0;
        }
    }
}

/// What the ratio of received to due means, in one word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Due too little CPU (under 2% of one) for a ratio to mean anything.
    #[default]
    None,
    /// Received under 60% of its due: the 2002 contest thread's fork_load (8% of 20% = 0.4).
    Starved,
    /// 60% to 90%.
    Short,
    /// 90% to 115%.
    Fair,
    /// More than 115% of its due: someone else pays for it.
    Ahead,
}

/// A fair share below this (CPUs) makes the ratio noise.
pub(crate) const MIN_FAIR: f64 = 0.02;
/// A difference between received and due under this (CPUs) is within what the figures
/// resolve: two 10 ms ticks a second (the grain of reaped children's time and of
/// /proc/stat), and the wait split by switch counts of tasks read once a second.
pub const MIN_GAP: f64 = 0.02;

impl Verdict {
    pub fn from_shares(received: f64, fair: f64) -> Verdict {
        if fair.is_nan() || fair < MIN_FAIR {
            return Verdict::None;
        }
        let r = received / fair;
        if (received - fair).abs() < MIN_GAP {
            Verdict::Fair
        } else if r < 0.6 {
            Verdict::Starved
        } else if r < 0.9 {
            Verdict::Short
        } else if r <= 1.15 {
            Verdict::Fair
        } else {
            Verdict::Ahead
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Verdict::None => "",
            Verdict::Starved => "STARVED",
            Verdict::Short => "short",
            Verdict::Fair => "fair",
            Verdict::Ahead => "ahead",
        }
    }
}

/// Why a workload is due what it is due: the rule that bounds most of its due share.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Due {
    /// It wants no CPU now.
    #[default]
    Nothing,
    /// Everything it wants: less than its weight's share.
    AllItWants { wants: f64 },
    /// Its weight's part of a pool: `weight / of_weight × pool` CPUs, where the pool is what
    /// its group gets (or, at the top, the CPUs it may use) after those who want less.
    Share {
        weight: f64,
        of_weight: f64,
        pool: f64,
        /// "its group", "CPU 0", "the machine".
        pool_name: String,
        wants: f64,
    },
    /// The quota of its cgroup (cpu.max): at most this many CPUs.
    Quota { cpus: f64, group: String },
    /// Real-time tasks take `taken` of the CPUs it may use (`cpus`), and leave the rest.
    RealTime { taken: f64, cpus: String },
    /// A SCHED_DEADLINE reservation.
    Reservation { cpus: f64 },
}

/// What the data shows about a gap between received and due.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Cause {
    #[default]
    None,
    /// Its tasks waited on run queues: `wait_pct` (of one task-interval) on these CPUs.
    RunQueue {
        wait_pct: f64,
        cpus: String,
        /// Who got more than it was due meanwhile: who took its CPU.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        behind: Vec<String>,
    },
    /// Its busy tasks ran on fewer CPUs than they may use.
    Crowded { used: String, allowed: String },
    /// Real-time tasks ran on its CPUs for this share of them.
    RealTime { pct: f64 },
    /// Its quota throttled it for this share of the time.
    Throttled { pct: f64 },
    /// It is ahead: these got less than they were due.
    PaidBy { names: Vec<String> },
    /// No verdict: the host stopped its CPUs for `ms` over the window (time the kernel
    /// charged to whatever was running), or the fair server is still paying back such a
    /// pause (model/host.rs).
    HostStall {
        ms: f64,
        cpus: String,
        paying_back: bool,
    },
}

impl Due {
    /// One line for the details panel: "due = weight 1024/5120 × the 200% its group gets".
    pub fn text(&self) -> String {
        let pct = |x: f64| format!("{:.0}%", x * 100.0);
        match self {
            Due::Nothing => "it wants no CPU now, so it is due none".into(),
            Due::AllItWants { wants } => {
                format!(
                    "due = all it wants ({}): less than its weight's share",
                    pct(*wants)
                )
            }
            Due::Share {
                weight,
                of_weight,
                pool,
                pool_name,
                wants,
            } => format!(
                "due = weight {}/{} × the {} {} (wants {})",
                weight_text(*weight),
                weight_text(*of_weight),
                pct(*pool),
                pool_name,
                pct(*wants)
            ),
            Due::Quota { cpus, group } => {
                format!("due = its quota: {} of a CPU ({group})", pct(*cpus))
            }
            Due::RealTime { taken, cpus } => format!(
                "due = what real-time tasks leave: they take {} of CPU {cpus}",
                pct(*taken)
            ),
            Due::Reservation { cpus } => {
                format!("due = its deadline reservation, {} of a CPU", pct(*cpus))
            }
        }
    }
}

impl Cause {
    /// One line for the details panel; empty when there is nothing to say.
    pub fn text(&self) -> String {
        match self {
            Cause::None => String::new(),
            Cause::RunQueue {
                wait_pct,
                cpus,
                behind,
            } => {
                let who = if behind.is_empty() {
                    String::new()
                } else {
                    format!(", behind {}", behind.join(", "))
                };
                format!(
                    "waited on the run queue of CPU {cpus} ({wait_pct:.0}% of a task's time){who}"
                )
            }
            Cause::Crowded { used, allowed } => {
                format!("crowded onto CPU {used} though it may use CPU {allowed}")
            }
            Cause::RealTime { pct } => {
                format!("real-time tasks took {pct:.0}% of its CPUs")
            }
            Cause::Throttled { pct } => {
                format!("its quota throttled it {pct:.0}% of the time")
            }
            Cause::PaidBy { names } => format!("paid by {}", names.join(", ")),
            Cause::HostStall {
                paying_back: true,
                cpus,
                ..
            } => format!(
                "no verdict: the host stopped CPU {cpus}, and the fair server is still paying \
                 back the pause it was charged"
            ),
            Cause::HostStall { ms, cpus, .. } => format!(
                "no verdict: the host stopped CPU {cpus} for {ms:.0} ms in the window, time the \
                 kernel charged to whatever was running"
            ),
        }
    }
}

/// A scheduling weight as the kernel writes it (1024 for nice 0), or with one decimal when
/// it has a fraction; the details line and the table's WEIGHT both print it so.
pub(crate) fn weight_text(w: f64) -> String {
    if (w - w.round()).abs() < 0.05 {
        format!("{}", w.round() as i64)
    } else {
        format!("{w:.1}")
    }
}

/// The machine over one interval.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineFrame {
    pub cpus: usize,
    pub autogroup: bool,
    pub ctxt_per_sec: f64,
    pub procs_running: u32,
    /// PSI cpu "some" avg10, when the kernel has PSI.
    #[serialize_always]
    pub psi_some_avg10: Option<f64>,
    /// CPUs used by everything outside schedlab's workloads.
    pub rest_cpu_received: f64,
    pub rest_cpu_fair: f64,
    /// What the rest wanted, and its figures over the verdict window.
    #[serde(default)]
    pub rest_cpu_demand: f64,
    #[serde(default)]
    pub rest_window_received: f64,
    #[serde(default)]
    pub rest_window_fair: f64,
    #[serde(default)]
    pub rest_verdict: Verdict,
    /// The rest's tasks' mean wakeup delay over the window, in µs (None: none seen).
    pub rest_wake_delay_us: Option<f64>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub rest_late: bool,
    /// CPUs interrupts and softirqs took over the interval (/proc/stat irq + softirq): no
    /// task's, never due to a group.
    #[serde(default, skip_serializing_if = "is_default")]
    pub irq_cpu: f64,
    /// CPUs /proc/stat counts busy that neither the workloads nor any read of the rest's
    /// groups accounts for (processes born and gone between reads whose parent is not read,
    /// tick rounding).
    #[serde(default, skip_serializing_if = "is_default")]
    pub rest_unattributed: f64,
    /// How old the rest's figures are at the end of the interval, in seconds (it is read
    /// about once a second).
    #[serde(default, skip_serializing_if = "is_default")]
    pub rest_age: f64,
    /// The rest's busiest groups over the window (by due share), for "who paid".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rest_groups: Vec<RestGroup>,
    /// The verdict window, in seconds.
    #[serde(default)]
    pub verdict_window: f64,
    /// CPUs real-time and deadline tasks received over the interval (workloads and rest).
    #[serde(default)]
    pub rt_cpu: f64,
    /// The longest time the host stopped one CPU in this interval (ms; 0: none seen): a
    /// virtual machine's time its kernel never saw (model/host.rs).
    #[serde(default, skip_serializing_if = "is_default")]
    pub host_stall_ms: f64,
}

/// A group of the rest of the machine (a session, a cgroup, the root's loose tasks).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RestGroup {
    /// As people know it: "session 812 (bash: make, cc1)", "cgroup /system.slice/x (nginx)",
    /// "root (kworker/0:1, rcu_preempt)": its session leader's command first when it is
    /// there, then its busiest commands.
    pub name: String,
    /// Its node in the group tree ("autogroup-12", "cgroup /a/b", "root"): the same group
    /// from Frame to Frame.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
    /// The session of its tasks (of the first seen, for a cgroup or the root, which may hold
    /// several): what the dashboard attaches when it is promoted to a row of its own (a
    /// replay promotes nothing; a dashboard watching a served lab asks the lab to).
    #[serde(default, skip_serializing_if = "is_default")]
    pub session: u32,
    /// CPUs received and due over the verdict window, and its verdict.
    pub received: f64,
    pub fair: f64,
    #[serde(default)]
    pub verdict: Verdict,
    /// Its tasks' mean wakeup delay over the window (µs), and whether that makes it late.
    pub wake_delay_us: Option<f64>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub late: bool,
}

/// A mean wakeup delay this long or longer marks a row `late`: a woken task waited more than
/// a whole tick of a 250 Hz kernel, so it was passed over more than once.
pub(crate) const LATE_WAKEUP_US: f64 = 4_000.0;
/// ... when at least this share of its run-queue wait followed wakeups: a CPU hog that sleeps
/// once a second is not late, whatever its one wakeup's estimated delay.
pub(crate) const LATE_WOKEN_SHARE: f64 = 0.1;

/// Whether a row is `late`: its mean wakeup delay, and the share of its wait that followed
/// wakeups.
pub(crate) fn is_late(wake_delay_us: Option<f64>, woken_share: f64) -> bool {
    wake_delay_us.is_some_and(|d| d >= LATE_WAKEUP_US) && woken_share >= LATE_WOKEN_SHARE
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
    /// How late this sample's sweep began against the time it was due, in ms (0 when on time
    /// or unknown), how long the sweep took, and the samples skipped before it (the observer
    /// fell behind by whole intervals): the observer's effect, carried with every figure.
    #[serde(default)]
    pub late_ms: f64,
    #[serde(default)]
    pub sweep_ms: f64,
    #[serde(default)]
    pub missed: u32,
    /// The sampling thread ran under SCHED_FIFO (a prompt sampler; the fairness model counts
    /// it as the real-time task it is).
    #[serde(default)]
    pub observer_rt: bool,
    /// Each online CPU over the interval: how busy it was and whose tasks ran there
    /// (model/cpus.rs). Empty in the first Frame.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuFrame>,
}

/// One CPU over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuFrame {
    pub id: u32,
    /// Its busy share of the interval, 0..=1 (/proc/stat's cpuN line: all but idle and
    /// iowait). None: the Samples have no per-CPU times.
    pub busy: Option<f64>,
    /// The workloads whose tasks ran there, in the workloads' order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_workload: Vec<CpuShare>,
}

/// What one workload's tasks took of one CPU over an interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuShare {
    /// The workload's id and name, as in `Frame.workloads`.
    pub id: u32,
    pub name: String,
    /// The share of the CPU its tasks took, 0..=1: what each task ran over the interval,
    /// counted on the CPU it was last seen on.
    pub share: f64,
    /// Its tasks that ran over the interval and were last seen there.
    pub tasks: usize,
}
