//! The results of a headless run: per workload and per metric, the value of every repeat and
//! their statistics. The JSON form is a stable, versioned schema (docs/results-schema.md);
//! text and CSV are views of the same data.

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::model::stats::{self, Noise, Spread, Summary, CONFIDENCE, NOISY_CV};
use crate::model::{Frame, WorkloadState};
use crate::record::latency::{self, LatencyResult, RepeatLatency};
pub use crate::record::machine::{Host, SchedSetting};
pub use crate::record::other_tasks::{OtherTasksGroup, OtherTasksResult};
use crate::record::text;

/// Bumped on any change that could break a reader; additions bump it too, because readers
/// are strict (unknown fields are refused).
pub const SCHEMA_VERSION: u32 = 4;
/// Versions this schedlab reads (2 added the observer's own figures, 3 each workload's
/// latency and migrations, 4 the machine and run in full: time, host name, CPU model,
/// governor, scheduler settings, commit, command line, the scenario's text).
pub(crate) const READS_VERSIONS: [u32; 4] = [1, 2, 3, 4];

/// The metrics reported per workload, in output order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Operations per second from the workload's own counters.
    Throughput,
    /// CPUs received (1.0 = one whole CPU).
    CpuReceived,
    /// CPUs the fairness model says it was due.
    CpuFair,
    /// cpu_received / cpu_fair.
    FairnessRatio,
    /// Voluntary plus involuntary context switches per second over all its threads.
    CsPerSec,
    /// Time its tasks spent runnable but waiting, in % of one task-interval summed over tasks.
    RunqWaitPct,
    /// Moves of its threads to another CPU per second, summed over threads (schema 3; absent
    /// where the kernel has no per-task sched file).
    MigrationsPerSec,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::Throughput,
        Metric::CpuReceived,
        Metric::CpuFair,
        Metric::FairnessRatio,
        Metric::CsPerSec,
        Metric::RunqWaitPct,
        Metric::MigrationsPerSec,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::CpuReceived => "cpu_received",
            Metric::CpuFair => "cpu_fair",
            Metric::FairnessRatio => "fairness_ratio",
            Metric::CsPerSec => "cs_per_sec",
            Metric::RunqWaitPct => "runq_wait_pct",
            Metric::MigrationsPerSec => "migrations_per_sec",
        }
    }

    /// The metric of that name (as [`Metric::name`] spells it).
    pub(crate) fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Which way is better, so a comparison can say improved or regressed.
    pub fn better(self) -> Better {
        match self {
            Metric::Throughput => Better::Higher,
            Metric::RunqWaitPct => Better::Lower,
            Metric::FairnessRatio => Better::TowardOne,
            // More CPU for one workload is less for another; the fair share is the model's
            // answer, not a performance; a switch is overhead for a hog but the work itself
            // for a ping-pong; a migration costs a thread its cache but may buy it an idle CPU.
            Metric::CpuReceived | Metric::CpuFair | Metric::CsPerSec | Metric::MigrationsPerSec => {
                Better::Neither
            }
        }
    }

    /// The unit, given what one operation of the workload is.
    pub fn unit(self, ops_unit: &str) -> String {
        match self {
            Metric::Throughput if ops_unit.is_empty() => "ops/s".into(),
            Metric::Throughput => format!("{ops_unit}/s"),
            Metric::CpuReceived | Metric::CpuFair => "CPUs".into(),
            Metric::FairnessRatio => "ratio".into(),
            Metric::CsPerSec => "switches/s".into(),
            Metric::RunqWaitPct => "%".into(),
            Metric::MigrationsPerSec => "migrations/s".into(),
        }
    }

    fn of(self, w: &crate::model::WorkloadFrame) -> f64 {
        match self {
            Metric::Throughput => w.ops_per_sec,
            Metric::CpuReceived => w.cpu_received,
            Metric::CpuFair => w.cpu_fair,
            Metric::FairnessRatio => w.fairness_ratio,
            Metric::CsPerSec => w.voluntary_cs_per_sec + w.involuntary_cs_per_sec,
            Metric::RunqWaitPct => w.runq_wait_pct,
            // Not a number while unknown: the repeat's mean leaves such intervals out.
            Metric::MigrationsPerSec => w.migrations_per_sec.unwrap_or(f64::NAN),
        }
    }
}

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
    /// Closer to 1 (a fairness ratio: below is starved, above took another's share).
    TowardOne,
    /// Neither way is better in itself.
    Neither,
}

impl Better {
    pub fn text(self) -> &'static str {
        match self {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
            Better::TowardOne => "closer to 1 is better",
            Better::Neither => "neither way is better",
        }
    }

    /// How much worse `b` is than `a`, in percent: the percent change against the direction
    /// (infinite when a is zero and b moved the wrong way); for a ratio toward one, how many
    /// percentage points further from 1 it went. None when neither way is better.
    pub fn worse_pct(self, a: f64, b: f64) -> Option<f64> {
        let change = || {
            stats::pct_change(a, b).unwrap_or(if b == a {
                0.0
            } else {
                (b - a).signum() * f64::INFINITY
            })
        };
        match self {
            Better::Higher => Some(-change()),
            Better::Lower => Some(change()),
            Better::TowardOne => Some(((b - 1.0).abs() - (a - 1.0).abs()) * 100.0),
            Better::Neither => None,
        }
    }
}

/// Which scenario ran.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioInfo {
    pub name: String,
    /// The file it came from; None for the built-in default.
    #[serialize_always]
    pub file: Option<String>,
    /// Sampling interval in milliseconds.
    pub interval_ms: u64,
    /// Seconds each repeat lasted at most; None = until its finite workloads ended.
    #[serialize_always]
    pub duration_s: Option<f64>,
    /// The scenario's TOML as it was read (the file's or the preset's text; schema 4). None
    /// for a scenario of attached processes only, and in older files.
    pub content: Option<String>,
}

/// Which metric a workload's figure is, and in what unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricKey {
    pub metric: Metric,
    pub unit: String,
}

/// One metric of one workload across repeats (each repeat's value is the time-weighted mean
/// over the repeat).
pub type MetricResult = Spread<MetricKey>;

impl MetricResult {
    pub fn new(metric: Metric, ops_unit: &str, runs: Vec<f64>) -> Option<Self> {
        let unit = metric.unit(ops_unit);
        Spread::of(MetricKey { metric, unit }, runs)
    }
}

/// One workload across repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadResult {
    pub name: String,
    /// The kind's label ("chat", "fork_load", "msg-pingpong", ...).
    pub kind: String,
    /// What one operation is ("msg", "fork", "rt", ...).
    pub ops_unit: String,
    pub metrics: Vec<MetricResult>,
    /// Its latency per unit it times, over each repeat's steady part (schema 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<LatencyResult>,
}

/// Which schedlab wrote a file, when and by what command: the head of a results file and of
/// a suite file alike (the fields after the version came in results schema 4).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub schedlab_version: String,
    /// The git commit schedlab was built from, "unknown" outside a checkout.
    pub schedlab_commit: Option<String>,
    /// When the first repeat started, UTC, RFC 3339.
    pub started_utc: Option<String>,
    /// The command line that ran it, one argument per element.
    pub command_line: Option<Vec<String>>,
}

impl Provenance {
    /// This schedlab, its start and command line not yet known.
    pub fn this_build() -> Self {
        Provenance {
            schedlab_version: env!("CARGO_PKG_VERSION").into(),
            schedlab_commit: Some(crate::record::machine::GIT_COMMIT.into()),
            started_utc: None,
            command_line: None,
        }
    }

    /// "schedlab 0.1.0 (ff47afa), started 2026-12-06T02:11:19Z", as much as is known.
    pub fn by_line(&self) -> String {
        let mut by = format!("schedlab {}", self.schedlab_version);
        if let Some(c) = &self.schedlab_commit {
            let _ = write!(by, " ({c})");
        }
        if let Some(t) = &self.started_utc {
            let _ = write!(by, ", started {t}");
        }
        by
    }
}

/// The whole result file.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunResults {
    pub schema_version: u32,
    /// Which schedlab ran it, when and how, written as fields of this object.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub host: Host,
    pub scenario: ScenarioInfo,
    pub repeats: usize,
    /// Confidence level of every interval (0.95).
    pub confidence: f64,
    /// Coefficient of variation above which a figure carries a warning (0.05).
    pub noise_threshold_cv: f64,
    pub workloads: Vec<WorkloadResult>,
    /// What observing cost and how punctual it was (schema 2).
    pub observer: Option<ObserverResult>,
    /// The rest of the machine beside the workloads: what it received and was due, and its
    /// groups, as the dashboard's "other tasks" row and its `x` rows (schema 4).
    pub other_tasks: Option<OtherTasksResult>,
}

/// The observer's own effect over a run: its CPU, and how late its samples were.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserverResult {
    /// schedlab's own CPU (probe, model, recording, metrics), in % of one CPU, per repeat,
    /// in steady state (the first second of a repeat, when every file is opened, left out).
    pub cpu_pct: Vec<f64>,
    pub cpu_pct_mean: f64,
    /// Samples taken, and samples due on the sampling grid (taken + missed).
    pub samples_taken: u64,
    pub samples_due: u64,
    /// How late the sweeps began against their due times, in ms.
    pub late_ms_p50: f64,
    pub late_ms_p99: f64,
    pub late_ms_max: f64,
    /// Samples taken within `ON_TIME_MS` of due, in % of samples due.
    pub on_time_pct: f64,
}

/// A sample within this of its due time is on time.
pub(crate) const ON_TIME_MS: f64 = 10.0;

impl ObserverResult {
    /// From each repeat's Frames.
    pub fn from_repeats(repeats: &[Vec<Frame>]) -> Option<ObserverResult> {
        let frames: Vec<&Frame> = repeats.iter().flatten().collect();
        if frames.is_empty() {
            return None;
        }
        // Steady state: the first second of a repeat (every file opened once) is left out
        // when the repeat is longer than that.
        let cpu_pct: Vec<f64> = repeats
            .iter()
            .filter_map(|fr| {
                let start = fr.first().map_or(0.0, |f| f.t);
                let steady: Vec<&Frame> = fr.iter().filter(|f| f.t - start > 1.0).collect();
                let used: Vec<&Frame> = if steady.is_empty() {
                    fr.iter().collect()
                } else {
                    steady
                };
                let t: f64 = used.iter().map(|f| f.interval).sum();
                (t > 0.0).then(|| {
                    used.iter()
                        .map(|f| f.observer_cpu_pct * f.interval)
                        .sum::<f64>()
                        / t
                })
            })
            .collect();
        let mut late: Vec<f64> = frames.iter().map(|f| f.late_ms).collect();
        late.sort_by(f64::total_cmp);
        let q = |p: f64| late[((late.len() - 1) as f64 * p).round() as usize];
        let taken = frames.len() as u64;
        let due = taken + frames.iter().map(|f| u64::from(f.missed)).sum::<u64>();
        let on_time = late.iter().filter(|&&l| l <= ON_TIME_MS).count() as f64;
        Some(ObserverResult {
            cpu_pct_mean: if cpu_pct.is_empty() {
                0.0
            } else {
                cpu_pct.iter().sum::<f64>() / cpu_pct.len() as f64
            },
            cpu_pct,
            samples_taken: taken,
            samples_due: due,
            late_ms_p50: q(0.5),
            late_ms_p99: q(0.99),
            late_ms_max: *late.last().unwrap_or(&0.0),
            on_time_pct: 100.0 * on_time / due.max(1) as f64,
        })
    }

    /// One line for people.
    pub fn text(&self) -> String {
        format!(
            "observer: {:.2}% of a CPU; {} of {} samples taken, {:.1}% within {ON_TIME_MS:.0} ms of due (late p50 {:.1} ms, p99 {:.1} ms, worst {:.1} ms)",
            self.cpu_pct_mean,
            self.samples_taken,
            self.samples_due,
            self.on_time_pct,
            self.late_ms_p50,
            self.late_ms_p99,
            self.late_ms_max
        )
    }
}

impl RunResults {
    pub fn new(host: Host, scenario: ScenarioInfo, repeats: usize) -> Self {
        RunResults {
            schema_version: SCHEMA_VERSION,
            provenance: Provenance::this_build(),
            host,
            scenario,
            repeats,
            confidence: CONFIDENCE,
            noise_threshold_cv: NOISY_CV,
            workloads: Vec::new(),
            observer: None,
            other_tasks: None,
        }
    }

    /// Builds the per-metric statistics from each repeat's Frames. `workloads` gives names,
    /// kind labels and ops units in scenario order.
    pub fn from_repeats(
        host: Host,
        scenario: ScenarioInfo,
        workloads: &[(String, String, String)],
        repeats: &[Vec<Frame>],
    ) -> Self {
        let mut r = RunResults::new(host, scenario, repeats.len());
        r.observer = ObserverResult::from_repeats(repeats);
        r.other_tasks = OtherTasksResult::from_repeats(repeats);
        for (name, kind, unit) in workloads {
            let per_run: Vec<[f64; Metric::ALL.len()]> = repeats
                .iter()
                .filter_map(|frames| repeat_values(frames, name))
                .collect();
            let metrics = Metric::ALL
                .iter()
                .enumerate()
                // A workload without counters (a plain command) has no throughput to report.
                .filter(|(_, m)| !(**m == Metric::Throughput && unit.is_empty()))
                .filter_map(|(i, m)| {
                    // A repeat that could not measure it (not a number) is left out.
                    let runs = per_run.iter().map(|v| v[i]).filter(|x| x.is_finite());
                    MetricResult::new(*m, unit, runs.collect())
                })
                .collect();
            r.workloads.push(WorkloadResult {
                name: name.clone(),
                kind: kind.clone(),
                ops_unit: unit.clone(),
                metrics,
                latency: Vec::new(),
            });
        }
        r
    }

    /// Adds each workload's latency from each repeat's histograms (one per repeat, in order).
    pub(crate) fn add_latency(&mut self, repeats: &[RepeatLatency]) {
        for w in &mut self.workloads {
            w.latency = latency::results_of(&w.name, repeats);
        }
    }

    /// Reads a result file written by `schedlab run --format json`, strictly.
    pub fn from_json(text: &str, origin: &str) -> Result<Self> {
        #[derive(Deserialize)]
        struct Version {
            schema_version: Option<u32>,
        }
        let v: Version = serde_json::from_str(text)
            .with_context(|| format!("{origin} is not a schedlab JSON result file"))?;
        match v.schema_version {
            Some(v) if READS_VERSIONS.contains(&v) => {}
            Some(other) => bail!(
                "{origin} has results schema version {other}; this schedlab reads versions 1 to {SCHEMA_VERSION}"
            ),
            None => bail!("{origin} is not a schedlab result file (no schema_version)"),
        }
        serde_json::from_str(text)
            .with_context(|| format!("{origin} does not follow the results schema"))
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("results serialise");
        s.push('\n');
        s
    }

    /// One row per workload and metric.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "workload,kind,metric,unit,n,mean,std_dev,min,max,ci95_low,ci95_high,cv,warning\n",
        );
        for w in &self.workloads {
            for m in &w.metrics {
                csv_row(
                    &mut out,
                    w,
                    m.what.metric.name(),
                    &m.what.unit,
                    &m.summary,
                    &m.warning,
                );
            }
            // Latency figures as rows of their own: `latency_p99`, in µs of the unit timed.
            for l in &w.latency {
                for f in &l.figures {
                    let unit = format!("µs ({})", l.unit);
                    let name = f.what.figure.gate_name();
                    csv_row(&mut out, w, name, &unit, &f.summary, &f.warning);
                }
            }
        }
        out
    }

    /// One row per workload, metric and run: every repeat's own value, with the scenario,
    /// kernel and host on each row so that files of many machines concatenate into one table.
    /// `run` counts the repeats that measured the figure (1-based): it is the repeat's number
    /// whenever `n` equals `repeats`.
    pub fn to_csv_repeats(&self) -> String {
        let mut out = String::from(CSV_REPEATS_HEADER);
        out.push('\n');
        let host = self.host.hostname.as_deref().unwrap_or("");
        let lead = format!(
            "{},{},{}",
            csv_field(&self.scenario.name),
            csv_field(&self.host.kernel),
            csv_field(host)
        );
        let mut rows = |w: &WorkloadResult, metric: &str, unit: &str, runs: &[f64]| {
            for (k, v) in runs.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{lead},{},{},{metric},{},{},{v}",
                    csv_field(&w.name),
                    csv_field(&w.kind),
                    csv_field(unit),
                    k + 1
                );
            }
        };
        for w in &self.workloads {
            for m in &w.metrics {
                rows(w, m.what.metric.name(), &m.what.unit, &m.runs);
            }
            for l in &w.latency {
                for f in &l.figures {
                    let unit = format!("µs ({})", l.unit);
                    rows(w, f.what.figure.gate_name(), &unit, &f.runs);
                }
            }
        }
        out
    }

    /// A table per workload, for people, fitting a 100-column terminal: numbers scaled
    /// (`1.30 G`), the 95% interval as one `lo..hi` column that never goes below zero, and
    /// notes and warnings wrapped.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, s: String| text::push_wrapped(out, &s, 4);
        let h = &self.host;
        line(
            &mut out,
            format!(
                "scenario {}: {} repeat{}, kernel {}, {} CPUs, autogroup {}",
                self.scenario.name,
                self.repeats,
                if self.repeats == 1 { "" } else { "s" },
                h.kernel,
                h.cpus,
                if h.autogroup { "on" } else { "off" }
            ),
        );
        let machine: Vec<String> = [
            h.hostname.as_ref().map(|n| format!("host {n}")),
            h.cpu_model.clone(),
            h.cpufreq_governor.as_ref().map(|g| format!("governor {g}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !machine.is_empty() {
            line(&mut out, machine.join(", "));
        }
        line(&mut out, self.provenance.by_line());
        let (mut two_runs, mut clamped) = (false, false);
        for w in &self.workloads {
            let _ = writeln!(out, "\n{} ({})", w.name, w.kind);
            let mut noisy = Vec::new();
            let mut single = false;
            let mut rows: Vec<(String, String, Summary)> = w
                .metrics
                .iter()
                .map(|m| {
                    let label = format!("{} ({})", m.what.metric.name(), m.what.unit);
                    (label, m.what.metric.name().to_owned(), m.summary.clone())
                })
                .collect();
            rows.extend(latency::text_rows(&w.latency));
            // The label column fits the longest label ("migrations_per_sec (migrations/s)"),
            // up to what leaves the figures their room in 100 columns.
            let width = rows
                .iter()
                .map(|(label, _, _)| label.chars().count())
                .max()
                .unwrap_or(0)
                .clamp(20, LABEL_MAX);
            let _ = writeln!(
                out,
                "  {:<width$} {:>8} {:>8} {:>8} {:>8} {:>17} {:>6}",
                "metric", "mean", "std dev", "min", "max", "95% CI", "CV"
            );
            for (label, name, s) in &rows {
                let ci = text::Interval::of(s);
                two_runs |= ci == text::Interval::TwoRuns;
                clamped |= matches!(ci, text::Interval::Shown { clamped: true, .. });
                text_row(&mut out, &text::fit(label, width), width, s, &ci);
                match s.noise() {
                    Some(Noise::SingleRun) => single = true,
                    Some(Noise::HighCv(cv)) => noisy.push(format!("{name} {:.1}%", cv * 100.0)),
                    None => {}
                }
            }
            for l in &w.latency {
                line(&mut out, format!("  {}", latency::text_line(l)));
            }
            if single {
                line(
                    &mut out,
                    "  warning: one run only: the spread is unknown; use --repeat 5 or more".into(),
                );
            }
            if !noisy.is_empty() {
                line(
                    &mut out,
                    format!(
                        "  warning: too noisy to trust (runs vary by more than {:.0}%): {}",
                        self.noise_threshold_cv * 100.0,
                        noisy.join(", ")
                    ),
                );
            }
        }
        if two_runs || clamped {
            let _ = writeln!(out);
        }
        if two_runs {
            line(&mut out, text::TWO_RUNS_NOTE.into());
        }
        if clamped {
            line(&mut out, text::CLAMPED_NOTE.into());
        }
        if let Some(o) = &self.observer {
            let _ = writeln!(out);
            line(&mut out, o.text());
        }
        if let Some(o) = &self.other_tasks {
            for l in o.text() {
                line(&mut out, l);
            }
        }
        out
    }
}

/// The widest metric label the text table shows whole: with the six figure columns (63
/// characters) a row fits 100 columns.
const LABEL_MAX: usize = text::COLUMNS - 63;

/// The value of each metric over one repeat: the time-weighted mean over the intervals in
/// which the workload was alive. Throughput is operations done / time from the first interval
/// with a counted operation to the last one, so a chat run's connection set-up does not dilute
/// it (chat_c's own clock also starts after set-up).
pub(crate) fn repeat_values(frames: &[Frame], workload: &str) -> Option<[f64; Metric::ALL.len()]> {
    let alive: Vec<(f64, &crate::model::WorkloadFrame)> = frames
        .iter()
        .filter(|f| f.interval.is_finite() && f.interval > 0.0)
        .filter_map(|f| {
            let w = f.workloads.iter().find(|w| w.name == workload)?;
            // An interval counts while the workload runs, and the one in which it ended.
            let alive = matches!(w.state, WorkloadState::Running | WorkloadState::Partial(_))
                || w.ops_per_sec > 0.0
                || w.cpu_received > 0.0;
            alive.then_some((f.interval, w))
        })
        .collect();
    let mean = |span: &[(f64, &crate::model::WorkloadFrame)], m: Metric| {
        let time: f64 = span.iter().map(|(dt, _)| dt).sum();
        let sum: f64 = span
            .iter()
            .map(|(dt, w)| Some(m.of(w)).filter(|v| v.is_finite()).unwrap_or(0.0) * dt)
            .sum();
        if time > 0.0 {
            sum / time
        } else {
            0.0
        }
    };
    if alive.is_empty() {
        return None;
    }
    let first = alive.iter().position(|(_, w)| w.ops_per_sec > 0.0);
    let last = alive.iter().rposition(|(_, w)| w.ops_per_sec > 0.0);
    let working = match (first, last) {
        (Some(a), Some(b)) => &alive[a..=b],
        _ => &alive[..],
    };
    // Migrations over the intervals in which they were read (their reading is slower than the
    // sampling, and absent on kernels without the sched file: then not a number, left out).
    let known = |m: Metric| -> Vec<(f64, &crate::model::WorkloadFrame)> {
        alive
            .iter()
            .copied()
            .filter(|(_, w)| m.of(w).is_finite())
            .collect()
    };
    Some(Metric::ALL.map(|m| match m {
        Metric::Throughput => mean(working, m),
        Metric::MigrationsPerSec => {
            let span = known(m);
            if span.is_empty() {
                f64::NAN
            } else {
                mean(&span, m)
            }
        }
        _ => mean(&alive, m),
    }))
}

/// The per-repeat CSV's header line.
pub const CSV_REPEATS_HEADER: &str = "scenario,kernel,host,workload,kind,metric,unit,run,value";

/// One metric's line in a workload's table.
fn text_row(out: &mut String, label: &str, width: usize, s: &Summary, ci: &text::Interval) {
    let _ = writeln!(
        out,
        "  {:<width$} {:>8} {:>8} {:>8} {:>8} {:>17} {:>6}",
        label,
        text::human(s.mean),
        s.std_dev.map_or("-".into(), text::human),
        text::human(s.min),
        text::human(s.max),
        ci.cell(),
        s.cv.map_or("-".into(), |c| format!("{:.1}%", c * 100.0)),
    );
}

/// One metric's CSV row.
fn csv_row(
    out: &mut String,
    w: &WorkloadResult,
    metric: &str,
    unit: &str,
    s: &Summary,
    warning: &Option<String>,
) {
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let _ = writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{}",
        csv_field(&w.name),
        csv_field(&w.kind),
        metric,
        csv_field(unit),
        s.n,
        s.mean,
        opt(s.std_dev),
        s.min,
        s.max,
        opt(s.ci95_low),
        opt(s.ci95_high),
        opt(s.cv),
        csv_field(warning.as_deref().unwrap_or("")),
    );
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WorkloadFrame;

    fn frame(interval: f64, ops: f64, state: WorkloadState) -> Frame {
        Frame {
            interval,
            workloads: vec![WorkloadFrame {
                name: "w".into(),
                state,
                ops_per_sec: ops,
                cpu_received: if ops > 0.0 { 0.5 } else { 0.0 },
                cpu_fair: 1.0,
                fairness_ratio: 0.5,
                voluntary_cs_per_sec: 10.0,
                involuntary_cs_per_sec: 5.0,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn repeat_value_is_time_weighted() {
        let frames = vec![
            frame(1.0, 0.0, WorkloadState::Starting),
            frame(0.5, 0.0, WorkloadState::Running),
            frame(0.5, 100.0, WorkloadState::Running),
            frame(1.5, 300.0, WorkloadState::Running),
            frame(1.0, 0.0, WorkloadState::Done(0)),
        ];
        let v = repeat_values(&frames, "w").unwrap();
        // (0.5*100 + 1.5*300) / 2.0 = 250: operations done / time working (set-up excluded).
        assert_eq!(v[0], 250.0);
        // CPU over the whole time alive, set-up included: (0 + 0.5*0.5 + 1.5*0.5) / 2.5.
        assert_eq!(v[1], 0.4);
        assert_eq!(v[4], 15.0);
        assert!(
            v[6].is_nan(),
            "no migrations read: not a number, so left out"
        );
        assert!(repeat_values(&frames, "other").is_none());
    }

    #[test]
    fn migrations_are_averaged_over_the_intervals_that_read_them() {
        let mut frames = vec![
            frame(0.5, 100.0, WorkloadState::Running),
            frame(0.5, 100.0, WorkloadState::Running),
            frame(1.0, 100.0, WorkloadState::Running),
        ];
        frames[1].workloads[0].migrations_per_sec = Some(40.0);
        frames[2].workloads[0].migrations_per_sec = Some(10.0);
        let v = repeat_values(&frames, "w").unwrap();
        // (0.5 * 40 + 1.0 * 10) / 1.5: the first interval had no reading yet.
        assert_eq!(v[6], 20.0);
    }

    #[test]
    fn worse_follows_each_metrics_direction() {
        let worse = |m: Metric, a, b| m.better().worse_pct(a, b);
        assert_eq!(worse(Metric::Throughput, 200.0, 190.0), Some(5.0));
        assert_eq!(worse(Metric::Throughput, 200.0, 210.0), Some(-5.0));
        assert_eq!(worse(Metric::RunqWaitPct, 20.0, 25.0), Some(25.0));
        assert_eq!(worse(Metric::RunqWaitPct, 0.0, 3.0), Some(f64::INFINITY));
        assert_eq!(worse(Metric::RunqWaitPct, 0.0, 0.0), Some(0.0));
        // 0.95 -> 0.80 is 15 points further from fair; 0.9 -> 1.05 is 5 points closer.
        assert!((worse(Metric::FairnessRatio, 0.95, 0.80).unwrap() - 15.0).abs() < 1e-9);
        assert!((worse(Metric::FairnessRatio, 0.9, 1.05).unwrap() + 5.0).abs() < 1e-9);
        assert_eq!(worse(Metric::CpuReceived, 1.0, 0.5), None);
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()), Some(m));
        }
        assert_eq!(Metric::from_name("ops"), None);
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
