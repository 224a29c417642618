//! Latency over a whole run, with its buckets: what each workload's histograms recorded between
//! consecutive Samples, merged per workload and unit. The run's results take each repeat's
//! steady part (the first second left out) and its percentiles (docs/results-schema.md); the
//! metrics endpoint exposes the buckets as a Prometheus histogram; `plot` draws their CDF.
//! The Frames carry only each interval's percentiles, and percentiles do not add up: these
//! merged distributions are the only way to a run's p99.

use serde::{Deserialize, Serialize};

use crate::model::latency::Distribution;
use crate::model::stats::{self, Spread, Summary};
use crate::probe::{LatencySample, Sample};

/// The first second of a repeat is not its steady part: the first forks, connections and
/// cold caches. (The observer's own figures leave out the same second.)
pub(crate) const STEADY_AFTER_NS: u64 = 1_000_000_000;

/// What one workload's histograms of one unit recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    pub workload: String,
    pub unit: String,
    pub dist: Distribution,
}

/// Adds `d` to the entry of `workload` and `unit` in `all`, making it if needed.
pub(crate) fn merge_into(all: &mut Vec<Merged>, workload: &str, unit: &str, d: &Distribution) {
    match all
        .iter_mut()
        .find(|m| m.workload == workload && m.unit == unit)
    {
        Some(m) => m.dist.merge(d),
        None => all.push(Merged {
            workload: workload.to_owned(),
            unit: unit.to_owned(),
            dist: d.clone(),
        }),
    }
}

/// The previous Sample's histograms, so each new one gives what was recorded in between.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Per workload: its id, its leader's pid (a new process is a new region, counted from
    /// zero, as a restart or the next repeat is) and its cumulative histograms.
    last: Vec<(u32, u32, Vec<LatencySample>)>,
}

impl Tally {
    /// What each workload recorded since the previous Sample given to this tally (since it
    /// started, the first time), per unit, in the Sample's order.
    pub fn step(&mut self, cur: &Sample) -> Vec<(String, String, Distribution)> {
        let mut out = Vec::new();
        for w in &cur.workloads {
            let before = self
                .last
                .iter()
                .find(|(id, leader, _)| *id == w.id && *leader == w.leader)
                .map_or(&[][..], |(_, _, l)| &l[..]);
            for c in &w.latency {
                let p = before.iter().find(|p| p.unit == c.unit);
                out.push((w.name.clone(), c.unit.clone(), Distribution::between(p, c)));
            }
        }
        self.last = cur
            .workloads
            .iter()
            .map(|w| (w.id, w.leader, w.latency.clone()))
            .collect();
        out
    }
}

/// One repeat's latency, fed its Samples in order.
#[derive(Clone, Debug, Default)]
pub struct RepeatLatency {
    tally: Tally,
    /// The repeat's first Sample, and the one before the current.
    start_ns: Option<u64>,
    prev_ns: Option<u64>,
    whole: Vec<Merged>,
    steady: Vec<Merged>,
}

impl RepeatLatency {
    /// Takes the next Sample of the repeat.
    pub fn add(&mut self, s: &Sample) {
        let start = *self.start_ns.get_or_insert(s.t_ns);
        let steady = self
            .prev_ns
            .is_some_and(|p| p >= start.saturating_add(STEADY_AFTER_NS));
        for (workload, unit, d) in self.tally.step(s) {
            merge_into(&mut self.whole, &workload, &unit, &d);
            if steady {
                merge_into(&mut self.steady, &workload, &unit, &d);
            }
        }
        self.prev_ns = Some(s.t_ns);
    }

    /// A repeat of these Samples.
    pub fn of(samples: &[Sample]) -> Self {
        let mut r = Self::default();
        for s in samples {
            r.add(s);
        }
        r
    }

    /// Per workload and unit, its steady part: the whole repeat when nothing was recorded
    /// after the first second (a workload that ended sooner).
    pub(crate) fn distributions(&self) -> Vec<Merged> {
        self.whole
            .iter()
            .map(|w| {
                let steady = self
                    .steady
                    .iter()
                    .find(|s| s.workload == w.workload && s.unit == w.unit)
                    .filter(|s| s.dist.count() > 0 || s.dist.rejected() > 0);
                steady.unwrap_or(w).clone()
            })
            .collect()
    }
}

/// Every repeat's steady parts merged: the whole run's distribution per workload and unit.
pub fn pooled(repeats: &[RepeatLatency]) -> Vec<Merged> {
    let mut all = Vec::new();
    for r in repeats {
        for m in r.distributions() {
            merge_into(&mut all, &m.workload, &m.unit, &m.dist);
        }
    }
    all
}

/// One of the figures reported per repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Figure {
    #[serde(rename = "p50_us")]
    P50,
    #[serde(rename = "p99_us")]
    P99,
    #[serde(rename = "p999_us")]
    P999,
    #[serde(rename = "mean_us")]
    Mean,
}

impl Figure {
    pub const ALL: [Figure; 4] = [Figure::P50, Figure::P99, Figure::P999, Figure::Mean];

    /// As a table says it: "p50", "p99", "p99.9", "mean".
    pub fn label(self) -> &'static str {
        match self {
            Figure::P50 => "p50",
            Figure::P99 => "p99",
            Figure::P999 => "p99.9",
            Figure::Mean => "mean",
        }
    }

    /// As `--fail-on-regression` names it: "latency_p99".
    pub fn gate_name(self) -> &'static str {
        match self {
            Figure::P50 => "latency_p50",
            Figure::P99 => "latency_p99",
            Figure::P999 => "latency_p999",
            Figure::Mean => "latency_mean",
        }
    }

    pub(crate) fn from_gate_name(name: &str) -> Option<Figure> {
        Figure::ALL.into_iter().find(|f| f.gate_name() == name)
    }

    fn of(self, f: &LatencyFigures) -> f64 {
        match self {
            Figure::P50 => f.p50_us,
            Figure::P99 => f.p99_us,
            Figure::P999 => f.p999_us,
            Figure::Mean => f.mean_us,
        }
    }
}

/// A distribution's figures, in µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyFigures {
    /// Values timed.
    pub samples: u64,
    /// Operations whose stamp did not come back as sent.
    pub rejected: u64,
    /// False: "latency unavailable" (more rejected than timed); the figures are then 0.
    pub available: bool,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub mean_us: f64,
}

impl LatencyFigures {
    pub fn of(d: &Distribution) -> Self {
        let l = d.summary("");
        LatencyFigures {
            samples: l.samples,
            rejected: d.rejected(),
            available: l.available,
            p50_us: l.p50_us,
            p99_us: l.p99_us,
            p999_us: l.p999_us,
            mean_us: l.mean_us,
        }
    }

    /// Whether these are figures at all: something timed, and available.
    pub(crate) fn meaningful(&self) -> bool {
        self.samples > 0 && self.available
    }
}

/// Which latency figure it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureKey {
    pub figure: Figure,
}

/// One figure across the repeats that timed something, as the other metrics have it.
pub type FigureResult = Spread<FigureKey>;

impl FigureResult {
    fn new(figure: Figure, runs: Vec<f64>) -> Option<Self> {
        Spread::of(FigureKey { figure }, runs)
    }
}

/// One kind of latency of one workload over a run (docs/results-schema.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyResult {
    /// What was timed: "round trip", "delivery", "message", "fork cycle", "timer wakeup",
    /// "thread wakeup".
    pub unit: String,
    /// Values timed in each repeat's steady part, every repeat in order (0: none).
    pub samples: Vec<u64>,
    /// Operations whose stamp did not come back as sent, per repeat.
    pub rejected: Vec<u64>,
    /// False when some repeat's latency was unavailable (its figures are left out).
    pub available: bool,
    /// p50, p99, p99.9 and mean across the repeats that timed something.
    pub figures: Vec<FigureResult>,
    /// Every repeat's steady part merged into one distribution.
    pub pooled: LatencyFigures,
}

impl LatencyResult {
    /// From each repeat's distribution of this unit (an empty one for a repeat without it).
    pub fn from_repeats(unit: &str, repeats: &[Distribution]) -> Self {
        let per: Vec<LatencyFigures> = repeats.iter().map(LatencyFigures::of).collect();
        let mut all = Distribution::default();
        for d in repeats {
            all.merge(d);
        }
        let counted: Vec<&LatencyFigures> = per.iter().filter(|f| f.meaningful()).collect();
        LatencyResult {
            unit: unit.to_owned(),
            samples: per.iter().map(|f| f.samples).collect(),
            rejected: per.iter().map(|f| f.rejected).collect(),
            available: per.iter().all(|f| f.available),
            figures: Figure::ALL
                .into_iter()
                .filter_map(|fig| {
                    FigureResult::new(fig, counted.iter().map(|f| fig.of(f)).collect())
                })
                .collect(),
            pooled: LatencyFigures::of(&all),
        }
    }

    pub fn figure(&self, f: Figure) -> Option<&FigureResult> {
        self.figures.iter().find(|r| r.what.figure == f)
    }
}

/// Per unit, in the order they first appear, the results of `workload` over `repeats`.
pub fn results_of(workload: &str, repeats: &[RepeatLatency]) -> Vec<LatencyResult> {
    let per_repeat: Vec<Vec<Merged>> = repeats
        .iter()
        .map(|r| {
            r.distributions()
                .into_iter()
                .filter(|m| m.workload == workload)
                .collect()
        })
        .collect();
    let mut units: Vec<&str> = Vec::new();
    for m in per_repeat.iter().flatten() {
        if !units.contains(&m.unit.as_str()) {
            units.push(&m.unit);
        }
    }
    units
        .iter()
        .map(|unit| {
            let dists: Vec<Distribution> = per_repeat
                .iter()
                .map(|ms| {
                    ms.iter()
                        .find(|m| m.unit == *unit)
                        .map(|m| m.dist.clone())
                        .unwrap_or_default()
                })
                .collect();
            LatencyResult::from_repeats(unit, &dists)
        })
        .collect()
}

/// The table rows of a workload's latency figures: label ("p99 round trip (µs)"), the name a
/// warning uses ("p99 round trip"), and the figure across repeats.
pub(crate) fn text_rows(all: &[LatencyResult]) -> Vec<(String, String, Summary)> {
    all.iter()
        .flat_map(|l| {
            l.figures.iter().map(|f| {
                let name = format!("{} {}", f.what.figure.label(), l.unit);
                (format!("{name} (µs)"), name, f.summary.clone())
            })
        })
        .collect()
}

/// One line under the table: what was timed, and the figures of every repeat's steady part
/// merged, or why there are none.
pub(crate) fn text_line(l: &LatencyResult) -> String {
    let p = &l.pooled;
    let rejected: u64 = l.rejected.iter().sum();
    if !l.available {
        return format!(
            "{}: latency unavailable: {rejected} operations came back without the stamp they \
             were sent with (a peer that does not relay them); {} timed",
            l.unit, p.samples
        );
    }
    if p.samples == 0 {
        return format!("{}: nothing timed", l.unit);
    }
    let us = |v: f64| format!("{} µs", stats::num(v));
    format!(
        "{}: {} timed, the first second of each repeat left out; all repeats together: p50 {}, \
         p99 {}, p99.9 {}, mean {}",
        l.unit,
        p.samples,
        us(p.p50_us),
        us(p.p99_us),
        us(p.p999_us),
        us(p.mean_us)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::WorkloadSample;

    fn hist(unit: &str, values: &[u64]) -> LatencySample {
        LatencySample::of_values(unit, values, 0)
    }

    /// A Sample at `t_s` seconds in which workload "pp" (leader `leader`) has timed `values`
    /// so far.
    fn sample(t_s: f64, leader: u32, values: &[u64]) -> Sample {
        Sample {
            t_ns: (t_s * 1e9) as u64,
            workloads: vec![WorkloadSample {
                id: 0,
                name: "pp".into(),
                leader,
                latency: vec![hist("round trip", values)],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn the_steady_part_leaves_the_first_second_out() {
        // 10 slow values in the first second, then 100 fast ones.
        let mut values = vec![1_000_000u64; 10];
        let s0 = sample(0.0, 7, &values);
        let s1 = sample(1.0, 7, &values);
        values.extend(vec![3_000u64; 50]);
        let s2 = sample(1.5, 7, &values);
        values.extend(vec![3_000u64; 50]);
        let s3 = sample(2.0, 7, &values);
        let r = RepeatLatency::of(&[s0, s1, s2, s3]);
        let d = r.distributions();
        assert_eq!(d.len(), 1);
        // The intervals that begin at 1 s or later: 1.0 -> 1.5 and 1.5 -> 2.0.
        assert_eq!(d[0].dist.count(), 100);
        assert!((d[0].dist.quantile_ns(0.99).unwrap() - 3_000.0).abs() < 50.0);
        assert_eq!(r.whole[0].dist.count(), 110, "the whole repeat");
    }

    #[test]
    fn a_short_repeat_is_taken_whole() {
        let r = RepeatLatency::of(&[sample(0.0, 7, &[]), sample(0.5, 7, &[2_000, 2_000, 4_000])]);
        assert_eq!(r.distributions()[0].dist.count(), 3);
    }

    #[test]
    fn a_new_leader_counts_from_zero() {
        let mut t = Tally::default();
        t.step(&sample(0.0, 7, &[2_000; 40]));
        let same = t.step(&sample(0.5, 7, &[2_000; 50]));
        assert_eq!(same[0].2.count(), 10);
        // A fresh process with fewer values in some bucket and more in none: not a delta.
        let fresh = t.step(&sample(1.0, 8, &[2_000; 60]));
        assert_eq!(fresh[0].2.count(), 60);
    }

    #[test]
    fn results_give_each_repeat_and_the_pooled_distribution() {
        let repeat =
            |values: &[u64]| RepeatLatency::of(&[sample(0.0, 1, &[]), sample(0.5, 1, values)]);
        let a: Vec<u64> = (1..=100).map(|i| i * 1_000).collect();
        let b: Vec<u64> = (1..=100).map(|i| i * 2_000).collect();
        let r = results_of("pp", &[repeat(&a), repeat(&b), repeat(&[])]);
        assert_eq!(r.len(), 1);
        let l = &r[0];
        assert_eq!(l.unit, "round trip");
        assert_eq!(l.samples, [100, 100, 0]);
        assert!(l.available);
        let p99 = l.figure(Figure::P99).unwrap();
        assert_eq!(
            p99.summary.n, 2,
            "the repeat that timed nothing is left out"
        );
        assert!((p99.runs[0] - 99.0).abs() < 99.0 / 32.0, "{p99:?}");
        assert!((p99.runs[1] - 198.0).abs() < 198.0 / 32.0, "{p99:?}");
        // Pooled: the p50 of the 200 values together (the 100th: 67 of a's and 33 of b's lie
        // at or below 67 µs), not the mean of the two p50s (75 µs).
        assert_eq!(l.pooled.samples, 200);
        let want = 67.0;
        assert!(
            (l.pooled.p50_us - want).abs() < want / 32.0,
            "{:?}",
            l.pooled
        );
        assert!(results_of("other", &[repeat(&a)]).is_empty());
        assert!(
            text_line(l).starts_with("round trip: 200 timed, "),
            "{}",
            text_line(l)
        );
    }

    #[test]
    fn a_repeat_whose_stamps_did_not_survive_is_left_out_and_said_so() {
        let timed = Distribution::cumulative(&hist("delivery", &[20_000; 50]));
        let zeros = Distribution::cumulative(&LatencySample {
            unit: "delivery".into(),
            rejected: 900,
            ..Default::default()
        });
        let l = LatencyResult::from_repeats("delivery", &[timed, zeros]);
        assert!(!l.available);
        assert_eq!(
            (l.samples.as_slice(), l.rejected.as_slice()),
            (&[50, 0][..], &[0, 900][..])
        );
        assert_eq!(
            l.figure(Figure::P99).unwrap().summary.n,
            1,
            "only the repeat with figures"
        );
        let line = text_line(&l);
        assert!(
            line.starts_with("delivery: latency unavailable: 900 operations"),
            "{line}"
        );
    }
}
