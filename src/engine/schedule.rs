//! When each sample is due: a grid of one tick per interval from the first. The sampler
//! sleeps until the next due time; when it wakes late (its thread waited for a CPU behind the
//! load it watches) the Sample says how late, and when it fell behind by whole intervals it
//! skips them (no burst of catch-up samples) and says how many it missed.

use std::time::{Duration, Instant};

/// The sampling grid.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    interval: Duration,
    next: Instant,
}

/// One sample's place on the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// When it was due.
    pub due: Instant,
    /// Grid points skipped since the previous sample (it woke more than an interval late).
    pub missed: u32,
}

impl Schedule {
    /// A grid whose first tick is due at `first`.
    pub fn new(interval: Duration, first: Instant) -> Schedule {
        Schedule {
            interval: interval.max(Duration::from_millis(1)),
            next: first,
        }
    }

    /// When the next sample is due.
    pub(crate) fn next_due(&self) -> Instant {
        self.next
    }

    /// A new interval: the next tick is due one new interval after the last one taken.
    pub fn set_interval(&mut self, interval: Duration, now: Instant) {
        let last = self.next.checked_sub(self.interval).unwrap_or(self.next);
        self.interval = interval.max(Duration::from_millis(1));
        self.next = (last + self.interval).max(now);
    }

    /// Takes the sample due now (`now` is when the sampler got to it): its due time, and the
    /// grid points it had to skip. The grid then moves past `now`. A sample taken early is due
    /// when it is taken.
    pub fn take(&mut self, now: Instant) -> Slot {
        // Asked for before its time (a frontend's off-grid tick): on time, and the grid stays.
        if now < self.next {
            return Slot {
                due: now,
                missed: 0,
            };
        }
        let mut due = self.next;
        let mut missed = 0u32;
        // Woke past one or more later grid points: those are missed; this sample is the
        // latest one due.
        while due + self.interval <= now {
            due += self.interval;
            missed = missed.saturating_add(1);
        }
        self.next = due + self.interval;
        Slot { due, missed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn on_time_samples_keep_the_grid_and_late_ones_say_how_late() {
        let t0 = Instant::now();
        let mut s = Schedule::new(100 * MS, t0);
        // (woke at, due, missed, next due), in ms from the start: on time at 0; 30 ms late at
        // 130 (due at 100, the next still at 200); at 470, the 400 ms sample 70 ms late, with
        // 200 and 300 missed.
        for (woke, due, missed, next) in [(0, 0, 0, 100), (130, 100, 0, 200), (470, 400, 2, 500)] {
            let slot = s.take(t0 + woke * MS);
            assert_eq!(
                slot,
                Slot {
                    due: t0 + due * MS,
                    missed
                },
                "woke at {woke} ms"
            );
            assert_eq!(s.next_due(), t0 + next * MS, "woke at {woke} ms");
        }
    }

    #[test]
    fn a_new_interval_counts_from_the_last_tick() {
        let t0 = Instant::now();
        let mut s = Schedule::new(100 * MS, t0);
        s.take(t0);
        s.set_interval(500 * MS, t0 + 10 * MS);
        assert_eq!(s.next_due(), t0 + 500 * MS);
        s.set_interval(100 * MS, t0 + 300 * MS);
        assert_eq!(s.next_due(), t0 + 300 * MS);
    }
}
