//! Time the host took. A virtual machine's CPU that the hypervisor stops (a paused VM, a host
//! page fault, another guest) keeps its clock running: whichever task was on it is charged the
//! pause, so a fair share can read ahead or starved for what was the host's doing, not the
//! kernel's. The kernel's tick accounting shows it: a busy CPU's /proc/stat line grows by less
//! than the time that passed (no tick fired during the pause), or its steal grows, when the
//! hypervisor tells the guest.
//!
//! The model holds verdicts while such time distorts them (docs/fairness.md, "When the host
//! stalls"): over any window in which the host took more of a workload's CPUs than a tenth of
//! what it was due; and on a CPU real-time tasks hold, for as long as the fair server needs to
//! pay back a pause charged to it, since it then runs nothing until it has.

use std::collections::{HashMap, VecDeque};

use super::cpuset::CpuSet;
use crate::probe::CpuTimes;

/// Lost time under this, per CPU per window, is /proc/stat's 10 ms ticks rounding at both
/// ends of the window (and the read's place within the sweep), not the host.
const ROUNDING_S: f64 = 0.03;
/// A pause this long in one interval on a CPU real-time tasks hold starts a payback hold.
const PAUSE_S: f64 = 0.05;

/// Each CPU's lost time over the recent intervals, and the payback holds.
#[derive(Debug)]
pub(crate) struct HostWatch {
    window: f64,
    /// Per CPU: (end of interval, seconds lost in it; slightly negative from tick rounding).
    lost: HashMap<u32, VecDeque<(f64, f64)>>,
    /// Per CPU: until when a pause charged to the fair server is being paid back.
    payback_until: HashMap<u32, f64>,
}

/// What the host took from some CPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Taken {
    /// Seconds over the window, beyond tick rounding.
    pub window_s: f64,
    /// The CPUs it took them from, and those still paying a pause back.
    pub cpus: CpuSet,
    pub paying_back: bool,
}

impl HostWatch {
    pub fn new(window: f64) -> HostWatch {
        HostWatch {
            window,
            lost: HashMap::new(),
            payback_until: HashMap::new(),
        }
    }

    /// Records one interval ending at `t` (s) of `dt_s` seconds. `rt_held(cpu)`: real-time
    /// tasks held that CPU most of the interval; `reserve`: the fair server's share. Returns
    /// the longest time the host took from one CPU in this interval (s, 0 when none).
    pub fn push(
        &mut self,
        t: f64,
        dt_s: f64,
        before: &[CpuTimes],
        now: &[CpuTimes],
        rt_held: impl Fn(u32) -> bool,
        reserve: f64,
    ) -> f64 {
        let mut longest: f64 = 0.0;
        for b in now {
            let Some(a) = before.iter().find(|a| a.id == b.id) else {
                continue;
            };
            // A line that did not move at all is not being kept (a fake /proc, a CPU going
            // offline): a whole-machine pause still leaves the sampler's own part of it.
            if (a.busy_ns, a.idle_ns) == (b.busy_ns, b.idle_ns) {
                continue;
            }
            let lost = lost_s(a, b, dt_s);
            let q = self.lost.entry(b.id).or_default();
            q.push_back((t, lost));
            while q
                .front()
                .is_some_and(|&(t0, _)| t0 <= t - self.window + 1e-9)
            {
                q.pop_front();
            }
            if lost >= PAUSE_S {
                longest = longest.max(lost);
                if rt_held(b.id) && reserve > 0.0 {
                    // The fair server, charged the pause, runs again only once its budget
                    // has paid it back at `reserve` CPU per second; a window after that.
                    let until = t + lost / reserve + self.window;
                    let e = self.payback_until.entry(b.id).or_insert(until);
                    *e = e.max(until);
                }
            }
        }
        self.lost
            .retain(|id, q| now.iter().any(|c| c.id == *id) && !q.is_empty());
        self.payback_until.retain(|_, until| *until > t);
        longest
    }

    /// What the host took from `cpus` (empty: every CPU) over the window ending at `t`.
    pub fn taken(&self, cpus: &CpuSet, t: f64) -> Taken {
        let mut out = Taken::default();
        for (&id, q) in &self.lost {
            if !cpus.is_empty() && !cpus.contains(id) {
                continue;
            }
            // The sum over the window telescopes: its rounding is that of two reads.
            let lost = q.iter().map(|&(_, s)| s).sum::<f64>() - ROUNDING_S;
            if lost > 0.0 {
                out.window_s += lost;
                out.cpus.insert(id);
            }
            if self.payback_until.get(&id).is_some_and(|&u| u > t) {
                out.paying_back = true;
                out.cpus.insert(id);
            }
        }
        out
    }
}

/// Seconds of the interval the guest's accounting of one CPU is missing, plus the steal it
/// was told of.
///
/// The kernel counts busy time by its ticks, and stops them while a CPU idles (NOHZ): a burst
/// of work between two idle periods that ends before the next tick is counted neither busy
/// nor idle. A CPU that keeps waking for a few µs loses much of its line that way (a SysV
/// ping-pong across two CPUs: 17% of each, idling 60% of the time, on this project's 2-CPU
/// machine, kernel 6.18, with no host anywhere in it). A CPU that idled at least as long as
/// its line is missing is taken to have lost that time so; the host's pauses that distort a
/// verdict land on a CPU kept busy, which idles little.
fn lost_s(a: &CpuTimes, b: &CpuTimes, dt_s: f64) -> f64 {
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64 / 1e9;
    let idle = d(a.idle_ns, b.idle_ns);
    // Slightly negative at times: the ticks' rounding, which telescopes over a window.
    let unaccounted = dt_s - d(a.busy_ns, b.busy_ns) - idle;
    let unaccounted = if unaccounted > 0.0 && idle >= unaccounted {
        0.0
    } else {
        unaccounted
    };
    unaccounted + d(a.steal_ns, b.steal_ns)
}

impl Taken {
    /// Whether this distorts a verdict on a share of `due` CPUs over `span` seconds: the host
    /// took more than a tenth of it, or a pause is being paid back.
    pub fn distorts(&self, due: f64, span: f64) -> bool {
        self.paying_back || self.window_s > (0.1 * due * span).max(PAUSE_S)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cpus::tests::times as cpu;

    const MS: u64 = 1_000_000;

    #[test]
    fn ticks_missing_from_a_busy_cpu_are_the_hosts() {
        let mut h = HostWatch::new(5.0);
        // CPU 0 accounts its whole 250 ms; CPU 1 only 40 of them: 210 ms the host took.
        let a = [cpu(0, 1000, 1000), cpu(1, 1000, 1000)];
        let b = [cpu(0, 1250, 1000), cpu(1, 1040, 1000)];
        let longest = h.push(0.25, 0.25, &a, &b, |_| false, 0.05);
        assert!((longest - 0.21).abs() < 1e-9, "{longest}");
        let on1 = h.taken(&CpuSet::one(1), 0.25);
        assert!((on1.window_s - 0.18).abs() < 1e-9, "{on1:?}");
        assert!(!on1.paying_back);
        assert_eq!(h.taken(&CpuSet::one(0), 0.25), Taken::default());
        // A hog due a whole CPU over 5 s is moved 3.6%: no hold; one due 5% is moved 72%.
        assert!(!on1.distorts(1.0, 5.0));
        assert!(on1.distorts(0.05, 5.0));
    }

    #[test]
    fn busy_bursts_between_idle_periods_that_no_tick_counted_are_not_a_stall() {
        // A ping-pong across CPUs: each CPU's line counts 90 ms busy and 120 ms idle of 250;
        // the 40 ms missing were bursts that ended before a tick, not the host.
        let mut h = HostWatch::new(5.0);
        let a = [cpu(0, 1000, 1000)];
        let b = [cpu(0, 1090, 1120)];
        assert_eq!(h.push(0.25, 0.25, &a, &b, |_| false, 0.05), 0.0);
        assert_eq!(h.taken(&CpuSet::new(), 0.25), Taken::default());
    }

    #[test]
    fn rounding_of_the_ticks_is_not_a_stall() {
        let mut h = HostWatch::new(5.0);
        // 10 ms short, then 10 ms long, and so on: ticks land either side of the reads.
        let mut t = 0.0;
        let mut busy = 0;
        let mut before = [cpu(0, 0, 0)];
        for k in 0..40 {
            t += 0.25;
            busy += if k % 2 == 0 { 240 } else { 260 };
            let now = [cpu(0, busy, 0)];
            assert_eq!(h.push(t, 0.25, &before, &now, |_| true, 0.05), 0.0);
            before = now;
        }
        assert_eq!(h.taken(&CpuSet::new(), t), Taken::default());
    }

    #[test]
    fn a_pause_under_real_time_holds_until_the_fair_server_has_paid_it_back() {
        let mut h = HostWatch::new(5.0);
        let a = [cpu(1, 0, 0)];
        let b = [cpu(1, 30, 0)];
        // 220 ms lost on a CPU a FIFO hog holds: 4.4 s of payback at 5%, then a window.
        h.push(1.0, 0.25, &a, &b, |_| true, 0.05);
        let mut before = b;
        let mut t = 1.0;
        while t < 10.1 {
            t += 0.25;
            let now = [cpu(1, before[0].busy_ns / MS + 250, 0)];
            h.push(t, 0.25, &before, &now, |_| true, 0.05);
            before = now;
            let taken = h.taken(&CpuSet::new(), t);
            assert!(taken.paying_back, "at {t}");
            assert!(taken.distorts(0.05, 5.0));
        }
        t += 0.25;
        let now = [cpu(1, before[0].busy_ns / MS + 250, 0)];
        h.push(t, 0.25, &before, &now, |_| true, 0.05);
        assert_eq!(h.taken(&CpuSet::new(), t), Taken::default());
    }

    #[test]
    fn steal_the_hypervisor_reports_is_the_hosts_too() {
        let mut h = HostWatch::new(5.0);
        let a = [CpuTimes {
            steal_ns: 0,
            irq_ns: 0,
            ..cpu(0, 0, 0)
        }];
        let b = [CpuTimes {
            steal_ns: 100 * MS,
            irq_ns: 0,
            ..cpu(0, 250, 0)
        }];
        assert!((h.push(0.25, 0.25, &a, &b, |_| false, 0.05) - 0.1).abs() < 1e-9);
    }
}
