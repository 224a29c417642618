//! What the charts draw: a few numbers per interval, per workload, kept as columns with their
//! timestamps (bottom's way) for the longest time window the dashboard offers, and no longer.

use std::collections::VecDeque;

use crate::model::{Frame, WorkloadFrame};

/// The longest time window a chart can show, in seconds.
pub(crate) const MAX_WINDOW: f64 = 600.0;

/// One workload's numbers at the end of one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point {
    pub t: f64,
    pub ops_per_sec: f64,
    pub cpu_received: f64,
    pub cpu_fair: f64,
    pub voluntary: f64,
    pub involuntary: f64,
    /// p50, p99 and p99.9 of its unit of work, in µs; None when nothing was timed, its
    /// latency is unavailable, or it has no unit to time.
    pub latency: Option<[f64; 3]>,
}

impl Point {
    pub fn of(t: f64, w: &WorkloadFrame) -> Self {
        Point {
            t,
            ops_per_sec: w.ops_per_sec,
            cpu_received: w.cpu_received,
            cpu_fair: w.cpu_fair,
            voluntary: w.voluntary_cs_per_sec,
            involuntary: w.involuntary_cs_per_sec,
            latency: w
                .latency
                .as_ref()
                .filter(|l| l.available && l.samples > 0)
                .map(|l| [l.p50_us, l.p99_us, l.p999_us]),
        }
    }
}

/// A time series bounded to [`MAX_WINDOW`] seconds.
#[derive(Clone, Debug, Default)]
pub struct Series {
    points: VecDeque<Point>,
}

impl Series {
    pub fn push(&mut self, p: Point) {
        // A restarted session clock, or a replayed frame: keep time monotonic.
        if let Some(last) = self.points.back() {
            if p.t <= last.t {
                return;
            }
        }
        self.points.push_back(p);
        while let Some(first) = self.points.front() {
            if first.t < p.t - MAX_WINDOW {
                self.points.pop_front();
            } else {
                break;
            }
        }
    }

    /// Points within [from, to], plus the one just before `from` so lines reach the left edge.
    pub fn window(&self, from: f64, to: f64) -> impl Iterator<Item = &Point> {
        window(&self.points, |p| p.t, from, to)
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// Machine-wide numbers over time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachinePoint {
    pub t: f64,
    pub ctxt_per_sec: f64,
}

#[derive(Clone, Debug, Default)]
pub struct MachineSeries {
    points: VecDeque<MachinePoint>,
}

impl MachineSeries {
    pub fn push(&mut self, f: &Frame) {
        if self.points.back().is_some_and(|l| f.t <= l.t) {
            return;
        }
        self.points.push_back(MachinePoint {
            t: f.t,
            ctxt_per_sec: f.machine.ctxt_per_sec,
        });
        while self.points.front().is_some_and(|p| p.t < f.t - MAX_WINDOW) {
            self.points.pop_front();
        }
    }

    /// Points within [from, to], plus the one just before `from`, as [`Series::window`].
    pub fn window(&self, from: f64, to: f64) -> impl Iterator<Item = &MachinePoint> {
        window(&self.points, |p| p.t, from, to)
    }
}

/// The points of a time-ordered series within [from, to], plus the one just before `from` so
/// lines reach the left edge.
fn window<P>(
    points: &VecDeque<P>,
    t: impl Fn(&P) -> f64,
    from: f64,
    to: f64,
) -> std::collections::vec_deque::Iter<'_, P> {
    let start = points.partition_point(|p| t(p) < from).saturating_sub(1);
    let end = points.partition_point(|p| t(p) <= to);
    points.range(start..end.max(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: f64) -> Point {
        Point {
            t,
            ..Point::default()
        }
    }

    #[test]
    fn keeps_only_the_longest_window() {
        let mut s = Series::default();
        for i in 0..2000 {
            s.push(p(i as f64 * 0.5));
        }
        // 600 s at 0.5 s, both ends included.
        assert_eq!(s.len(), 1201);
    }

    #[test]
    fn window_reaches_the_left_edge() {
        let mut s = Series::default();
        for i in 0..10 {
            s.push(p(i as f64));
        }
        let ts: Vec<f64> = s.window(3.5, 6.0).map(|p| p.t).collect();
        assert_eq!(ts, vec![3.0, 4.0, 5.0, 6.0]);
        let none: Vec<f64> = s.window(20.0, 30.0).map(|p| p.t).collect();
        assert_eq!(none, vec![9.0]);
    }

    #[test]
    fn time_only_moves_forward() {
        let mut s = Series::default();
        s.push(p(2.0));
        s.push(p(1.0));
        assert_eq!(s.len(), 1);
    }
}
