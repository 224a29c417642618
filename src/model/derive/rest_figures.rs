//! The rest of the machine in a Frame: what it received by /proc/stat and by its groups, what
//! it was due, its verdict over the window, and its busiest groups by name.

use super::*;

impl Model {
    /// The rest of the machine's verdict over the window; none while the host distorts it.
    pub(super) fn rest_verdict(&self, means: &Means, t: f64) -> Verdict {
        let host = self.host.taken(&CpuSet::new(), t);
        if host.distorts(means.shares.fair, means.span) {
            return Verdict::None;
        }
        Verdict::from_shares(means.shares.received, means.shares.fair)
    }

    /// The rest of the machine: received from /proc/stat (what the workloads did not), due
    /// from its tasks, over the interval and the window, and its busiest groups.
    pub(super) fn rest_figures(
        &mut self,
        iv: &Interval,
        frames: &[WorkloadFrame],
        all: &Claimants,
        sol: &solver::Solution,
    ) -> RestFigures {
        let ours: f64 = frames.iter().map(|f| f.cpu_received).sum();
        let busy = iv
            .cur
            .machine
            .busy_ns
            .saturating_sub(iv.prev.machine.busy_ns) as f64;
        let idx: Vec<usize> = (0..all.tasks.len())
            .filter(|&i| matches!(all.owners[i], Owner::Rest(_)))
            .collect();
        // What its groups took: every task seen, and what each process's tasks took unseen
        // (threads and children born and gone between reads), as of the rest's last read.
        let received: f64 = idx.iter().map(|&i| all.received[i]).sum();
        // What /proc/stat says the CPUs did beside the workloads: its groups' part, time no
        // task took (interrupts, softirqs: their own fields, never due to a group), and
        // what no read saw (processes born and gone between reads whose parent is not read,
        // the ticks' rounding). Over the same span as the groups' figures, the rest's read
        // interval: between its reads they stand still while /proc/stat moves on.
        let irq = irq_cpus(iv.prev, iv.cur, iv.t_ns);
        self.rest_span.t_ns += iv.t_ns;
        self.rest_span.beside_ns += busy - (ours + irq) * iv.t_ns;
        if let Some(r) = &iv.cur.machine.rest {
            if r.since_ns != 0 {
                let beside = self.rest_span.beside_ns / self.rest_span.t_ns;
                self.rest_unattributed = (beside - received).max(0.0);
            }
            self.rest_span = StatSpan::default();
        }
        let unattributed = self.rest_unattributed;
        let fair: f64 = idx.iter().map(|&i| sol.share[i]).sum::<f64>();
        let demand = idx
            .iter()
            .map(|&i| all.tasks[i].demand)
            .sum::<f64>()
            .max(received);
        // Its tasks' waits as of its last read (ns), those after wakeups, and the wakeups.
        let (waited, woken, wakeups) = idx.iter().fold((0.0, 0.0, 0.0), |(a, w, n), &i| match all
            .owners[i]
        {
            Owner::Rest(k) => {
                let c = &self.rest[k];
                (a + c.wait_ns, w + c.woken_wait_ns, n + c.wakeups)
            }
            Owner::Workload(_) => (a, w, n),
        });
        let secs = iv.t_ns / 1e9;
        let means = self.windows.push(
            "rest",
            Slot {
                t: iv.t_end,
                dt: secs,
                shares: Shares {
                    received,
                    fair,
                    demand,
                    // In the units of a workload's (per second of its read's interval):
                    // only their ratios are read.
                    wait: waited / 1e9,
                    woken_wait: woken / 1e3,
                    wakeups,
                    ..Shares::default()
                },
            },
        );
        let groups = self.rest_groups(&idx, all, sol, iv.t_end, secs);
        RestFigures {
            received,
            fair,
            demand,
            irq,
            unattributed,
            means,
            groups,
        }
    }

    /// The rest's groups over the window, those that took most CPU first.
    fn rest_groups(
        &mut self,
        rest_idx: &[usize],
        all: &Claimants,
        sol: &solver::Solution,
        t_end: f64,
        secs: f64,
    ) -> Vec<RestGroup> {
        let mut groups: Vec<GroupSum> = Vec::new();
        for &i in rest_idx {
            let Owner::Rest(k) = all.owners[i] else {
                continue;
            };
            let c = &self.rest[k];
            let node = all.tasks[i].group;
            let at = match groups.iter().position(|g| g.node == node) {
                Some(at) => at,
                None => {
                    groups.push(GroupSum {
                        node,
                        session: c.claim.placement.session,
                        ..GroupSum::default()
                    });
                    groups.len() - 1
                }
            };
            let g = &mut groups[at];
            g.received += all.received[i];
            g.fair += sol.share[i];
            g.waited += c.wait_ns;
            g.woken += c.woken_wait_ns;
            g.wakeups += c.wakeups;
            if c.pid == g.session && g.session != 0 {
                g.leader = Some(c.comm.clone());
            }
            match g.comms.iter_mut().find(|(name, _)| *name == c.comm) {
                Some(e) => e.1 += all.received[i],
                None => g.comms.push((c.comm.clone(), all.received[i])),
            }
        }
        let mut out: Vec<RestGroup> = groups
            .into_iter()
            .map(|g| {
                let key = all.tree.names[g.node].clone();
                let m = self.windows.push(
                    &format!("rest {key}"),
                    Slot {
                        t: t_end,
                        dt: secs,
                        shares: Shares {
                            received: g.received,
                            fair: g.fair,
                            wait: g.waited / 1e9,
                            woken_wait: g.woken / 1e3,
                            wakeups: g.wakeups,
                            ..Shares::default()
                        },
                    },
                );
                let delay = m.shares.wake_delay_us();
                RestGroup {
                    name: g.name(&key),
                    key,
                    session: g.session,
                    received: m.shares.received,
                    fair: m.shares.fair,
                    verdict: Verdict::from_shares(m.shares.received, m.shares.fair),
                    wake_delay_us: delay,
                    late: frame::is_late(
                        delay,
                        m.shares.woken_wait / 1e6 / m.shares.wait.max(1e-12),
                    ),
                }
            })
            .collect();
        out.sort_by(|a, b| b.received.total_cmp(&a.received));
        out.truncate(REST_GROUPS_SHOWN);
        out
    }
}

/// One group of the rest over an interval, as its claims add up.
#[derive(Default)]
struct GroupSum {
    node: usize,
    session: u32,
    received: f64,
    fair: f64,
    /// Its tasks' run-queue wait, the part after wakeups (ns) and the wakeups.
    waited: f64,
    woken: f64,
    wakeups: f64,
    /// Its session leader's command, when the leader is one of its tasks.
    leader: Option<String>,
    /// Its commands and what each received.
    comms: Vec<(String, f64)>,
}

impl GroupSum {
    /// "session 812 (bash: make, cc1)", "cgroup /a (nginx)", "root (kworker/0:1, ...)".
    fn name(&self, key: &str) -> String {
        let mut comms = self.comms.clone();
        comms.sort_by(|a, b| b.1.total_cmp(&a.1));
        let busiest: Vec<&str> = comms
            .iter()
            .map(|(c, _)| c.as_str())
            .filter(|c| Some(*c) != self.leader.as_deref())
            .take(3)
            .collect();
        let what = match (&self.leader, busiest.is_empty()) {
            (Some(l), true) => l.clone(),
            (Some(l), false) => format!("{l}: {}", busiest.join(", ")),
            (None, _) => busiest.join(", "),
        };
        let group = if key.starts_with("autogroup-") {
            format!("session {}", self.session)
        } else {
            key.to_string()
        };
        format!("{group} ({what})")
    }
}

/// /proc/stat's busy time beside the workloads and interrupts, added up over several
/// intervals.
#[derive(Default)]
pub(super) struct StatSpan {
    t_ns: f64,
    beside_ns: f64,
}

/// The rest of the machine over one interval.
pub(super) struct RestFigures {
    pub(super) received: f64,
    pub(super) fair: f64,
    pub(super) demand: f64,
    /// CPUs interrupts and softirqs took, and busy time no read of the rest saw.
    pub(super) irq: f64,
    pub(super) unattributed: f64,
    pub(super) means: Means,
    pub(super) groups: Vec<RestGroup>,
}
