//! The verdict window: received, due and wanted over the last few seconds (5 by default), so
//! the table's ratio and verdict hold still while the per-interval figures move in the charts.
//! A verdict that flips every tick is noise, not a finding.

use std::collections::{HashMap, VecDeque};

/// The default verdict window, in seconds.
pub(crate) const DEFAULT_WINDOW: f64 = 5.0;

/// What one claimant had of the CPUs: over one interval in a Slot, time-weighted in Means.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shares {
    /// CPUs received, due and wanted.
    pub received: f64,
    pub fair: f64,
    pub demand: f64,
    /// Task-CPUs spent waiting on a run queue, throttled by a quota, and CPUs real-time tasks
    /// took from the CPUs it may use.
    pub wait: f64,
    pub throttled: f64,
    pub rt_taken: f64,
    /// Run-queue wait that followed wakeups (µs), and the wakeups it followed, per second:
    /// their ratio over the window is the mean wakeup delay (latency, not demand).
    pub woken_wait: f64,
    pub wakeups: f64,
}

impl Shares {
    /// The mean delay from a wakeup to running, in µs (None: no wakeup was seen).
    pub(crate) fn wake_delay_us(&self) -> Option<f64> {
        (self.wakeups > 0.0).then(|| self.woken_wait / self.wakeups)
    }
}

/// One interval of one claimant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Slot {
    /// End of the interval (Sample time, s) and its length (s).
    pub t: f64,
    pub dt: f64,
    pub shares: Shares,
}

/// Time-weighted means over the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Means {
    pub shares: Shares,
    /// Seconds the means cover.
    pub span: f64,
}

/// Sliding windows, one per claimant key.
#[derive(Debug)]
pub(crate) struct Windows {
    secs: f64,
    slots: HashMap<String, VecDeque<Slot>>,
}

impl Windows {
    pub fn new(secs: f64) -> Windows {
        Windows {
            secs: if secs.is_finite() && secs > 0.0 {
                secs
            } else {
                DEFAULT_WINDOW
            },
            slots: HashMap::new(),
        }
    }

    pub fn secs(&self) -> f64 {
        self.secs
    }

    /// Adds an interval and returns the means over the window ending with it.
    pub fn push(&mut self, key: &str, slot: Slot) -> Means {
        let q = self.slots.entry(key.to_string()).or_default();
        q.push_back(slot);
        // Keep the intervals that end within the window; an interval longer than the window
        // stands alone.
        while q.len() > 1 && q.front().is_some_and(|s| s.t <= slot.t - self.secs + 1e-9) {
            q.pop_front();
        }
        means(q)
    }

    /// Forgets claimants not pushed in the last window (workloads removed, groups gone).
    pub(crate) fn retain_recent(&mut self, now: f64) {
        let secs = self.secs;
        self.slots
            .retain(|_, q| q.back().is_some_and(|s| s.t > now - secs));
    }
}

fn means(q: &VecDeque<Slot>) -> Means {
    let span: f64 = q.iter().map(|s| s.dt).sum();
    if span <= 0.0 {
        return Means::default();
    }
    let avg = |f: fn(&Shares) -> f64| q.iter().map(|s| f(&s.shares) * s.dt).sum::<f64>() / span;
    Means {
        shares: Shares {
            received: avg(|s| s.received),
            fair: avg(|s| s.fair),
            demand: avg(|s| s.demand),
            wait: avg(|s| s.wait),
            throttled: avg(|s| s.throttled),
            rt_taken: avg(|s| s.rt_taken),
            woken_wait: avg(|s| s.woken_wait),
            wakeups: avg(|s| s.wakeups),
        },
        span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(t: f64, received: f64, fair: f64) -> Slot {
        Slot {
            t,
            dt: 0.5,
            shares: Shares {
                received,
                fair,
                ..Shares::default()
            },
        }
    }

    #[test]
    fn the_window_averages_the_last_seconds_only() {
        let mut w = Windows::new(2.0);
        for k in 1..=4 {
            w.push("a", slot(k as f64 * 0.5, 1.0, 0.5));
        }
        // Then a second of nothing received: the window now holds 1 s of each.
        w.push("a", slot(2.5, 0.0, 0.5));
        let m = w.push("a", slot(3.0, 0.0, 0.5));
        assert!((m.span - 2.0).abs() < 1e-9, "{m:?}");
        assert!((m.shares.received - 0.5).abs() < 1e-9);
        assert!((m.shares.fair - 0.5).abs() < 1e-9);
        w.retain_recent(10.0);
        assert!(w.slots.is_empty());
    }
}
