//! `schedlab compare A B [C ...]`: result files of many kernels, schedulers or settings against
//! the first, the baseline. Per workload and metric: each file's `%change ± %stddev` against
//! the baseline and whether the change is significant or within noise (Welch's t-test,
//! Welch–Satterthwaite degrees of freedom), as a table, JSON or a Markdown table for a mailing
//! list; `--fail-on-regression METRIC:PCT` turns a regression into an exit status. Latency
//! percentiles are compared by a rank test on the repeats' values instead (Mann–Whitney, with
//! the Hodges–Lehmann shift's interval): few, skewed and tied values, which a t-test misjudges
//! and whose spread a bootstrap over so few repeats understates.

mod tables;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::model::rank::{self, RankTest};
use crate::model::stats::{self, Summary, Welch};
use crate::record::latency::Figure;
use crate::record::results::{Better, Metric, RunResults, WorkloadResult};
use crate::record::suite::SuiteResults;

pub use tables::{to_markdown, to_text};

/// The exit status when a `--fail-on-regression` threshold was crossed (1 is an error, 2 a
/// usage error).
pub(crate) const REGRESSION_EXIT: i32 = 3;

/// Arguments of `schedlab compare`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: 0 when no --fail-on-regression threshold was crossed, \
    3 when one was, 1 on an error (a missing or bad file).\n\n\
    Example, three kernels against the first, as a table for a mailing list:\n  \
    schedlab compare 6.17.json 6.18.json 6.18-eevdf-fix.json --markdown \
    --fail-on-regression throughput:5"
)]
pub struct Args {
    /// Result files from `schedlab run --format json`: the first is the baseline, each other is
    /// compared against it.
    #[arg(required = true, num_args = 2.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with_all = ["format", "markdown"])]
    pub json: bool,
    /// Same as --format markdown: a table fit for a mailing list.
    #[arg(long, conflicts_with = "format")]
    pub markdown: bool,
    /// Exit with status 3 when METRIC got worse than the baseline by more than PCT percent in
    /// any workload of any file, and the change is significant (or cannot be tested: too few
    /// runs). Metrics: throughput (higher is better), runq_wait_pct (lower is better),
    /// fairness_ratio (closer to 1 is better; PCT in points of the ratio), latency_p50,
    /// latency_p99, latency_p999, latency_mean (lower is better). Repeatable.
    #[arg(long, value_name = "METRIC:PCT", value_parser = parse_gate)]
    pub fail_on_regression: Vec<Gate>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

/// What a `--fail-on-regression` threshold watches: a metric, or a latency figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gated {
    Metric(Metric),
    /// Lower is better.
    Latency(Figure),
}

impl Gated {
    /// As the command line and the JSON report name it: `throughput`, `latency_p99`.
    pub fn name(self) -> &'static str {
        match self {
            Gated::Metric(m) => m.name(),
            Gated::Latency(f) => f.gate_name(),
        }
    }

    fn from_name(name: &str) -> Option<Gated> {
        Metric::from_name(name)
            .map(Gated::Metric)
            .or_else(|| Figure::from_gate_name(name).map(Gated::Latency))
    }
}

impl Serialize for Gated {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A `--fail-on-regression` threshold.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Gate {
    pub metric: Gated,
    /// How much worse, in percent, is still tolerated.
    pub pct: f64,
}

/// `METRIC:PCT`, for a metric with a better direction or a latency figure.
pub fn parse_gate(s: &str) -> Result<Gate, String> {
    let gated: Vec<&str> = Metric::ALL
        .iter()
        .filter(|m| m.better() != Better::Neither)
        .map(|m| m.name())
        .chain(Figure::ALL.iter().map(|f| f.gate_name()))
        .collect();
    let (name, pct) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not METRIC:PCT (e.g. throughput:5)"))?;
    let metric = Gated::from_name(name.trim())
        .ok_or_else(|| format!("no metric `{}`; one of {}", name.trim(), gated.join(", ")))?;
    if matches!(metric, Gated::Metric(m) if m.better() == Better::Neither) {
        return Err(format!(
            "{} has no better direction to regress from; one of {}",
            metric.name(),
            gated.join(", ")
        ));
    }
    match pct.trim().trim_end_matches('%').parse::<f64>() {
        Ok(pct) if pct.is_finite() && pct >= 0.0 => Ok(Gate { metric, pct }),
        _ => Err(format!(
            "`{}` is not a percentage (e.g. throughput:5)",
            pct.trim()
        )),
    }
}

/// What the test says about one difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// p < 0.05: unlikely to be noise.
    Significant,
    /// The runs' spread covers the difference.
    WithinNoise,
    /// Too few runs on a side to test: fewer than two (Welch's test), fewer than four (the
    /// rank test of latency figures; three against five will do).
    CannotTell,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Significant => "significant",
            Verdict::WithinNoise => "within noise",
            Verdict::CannotTell => "cannot tell (needs 2+ runs each)",
        }
    }
}

/// One figure of one file against the baseline's, whichever test then judges it.
#[derive(Clone, Debug, Serialize)]
pub struct Against {
    /// The baseline.
    pub a: Summary,
    /// This file.
    pub b: Summary,
    /// (B - A) / |A| of the means in percent, when A's mean is not zero.
    pub diff_pct: Option<f64>,
    /// B's own standard deviation in percent of its mean.
    pub pct_std_dev: Option<f64>,
}

impl Against {
    pub fn new(a: Summary, b: Summary) -> Against {
        Against {
            diff_pct: stats::pct_change(a.mean, b.mean),
            pct_std_dev: b.pct_std_dev(),
            a,
            b,
        }
    }
}

/// Rows read their figures against the baseline as their own (`row.diff_pct`), as they did
/// when each declared them; in JSON they stay fields of the row.
macro_rules! reads_against {
    ($row:ty) => {
        impl std::ops::Deref for $row {
            type Target = Against;
            fn deref(&self) -> &Against {
                &self.against
            }
        }
    };
}
reads_against!(Row);
reads_against!(LatencyRow);

/// One workload and metric of one file against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Which file, by its place on the command line (1 = the first after the baseline).
    pub candidate: usize,
    pub workload: String,
    pub metric: Metric,
    pub unit: String,
    /// Which way is better for this metric.
    pub better: Better,
    #[serde(flatten)]
    pub against: Against,
    pub welch: Option<Welch>,
    pub verdict: Verdict,
}

impl Row {
    /// The verdict, with which way it went when the metric has a better direction.
    pub fn judgement(&self) -> String {
        let worse = self.better.worse_pct(self.a.mean, self.b.mean);
        match (self.verdict, worse) {
            (Verdict::Significant, Some(w)) if w > 0.0 => "significant, worse".into(),
            (Verdict::Significant, Some(w)) if w < 0.0 => "significant, better".into(),
            (v, _) => v.text().into(),
        }
    }

    /// How much worse than the baseline in percent, when the metric has a direction.
    pub fn worse_pct(&self) -> Option<f64> {
        self.better.worse_pct(self.a.mean, self.b.mean)
    }
}

/// One latency figure (p50, p99, p99.9 or mean) of one workload and unit of one file against
/// the baseline, by the rank test on the repeats' values.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyRow {
    /// Which file, by its place on the command line (1 = the first after the baseline).
    pub candidate: usize,
    pub workload: String,
    /// What was timed: "round trip", "fork cycle", ...
    pub unit: String,
    pub figure: Figure,
    /// The baseline's repeats and this file's (µs).
    #[serde(flatten)]
    pub against: Against,
    /// Mann–Whitney on the repeats' values; None with too few runs to test.
    pub rank_test: Option<RankTest>,
    pub verdict: Verdict,
}

/// A latency verdict that cannot be given: the rank test needs more runs than Welch's.
const LATENCY_CANNOT_TELL: &str = "cannot tell (needs 4+ runs each)";

impl LatencyRow {
    /// How much higher (worse) than the baseline, in percent of its mean.
    pub fn worse_pct(&self) -> Option<f64> {
        Better::Lower.worse_pct(self.a.mean, self.b.mean)
    }

    pub fn judgement(&self) -> String {
        match (self.verdict, self.worse_pct()) {
            (Verdict::Significant, Some(w)) if w > 0.0 => "significant, worse".into(),
            (Verdict::Significant, Some(w)) if w < 0.0 => "significant, better".into(),
            (Verdict::CannotTell, _) => LATENCY_CANNOT_TELL.into(),
            (v, _) => v.text().into(),
        }
    }
}

/// A verdict in words, for what it was given on.
fn verdict_text(what: Gated, v: Verdict) -> &'static str {
    match (what, v) {
        (Gated::Latency(_), Verdict::CannotTell) => LATENCY_CANNOT_TELL,
        (_, v) => v.text(),
    }
}

/// A threshold crossed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Serialize)]
pub struct Regression {
    pub candidate: usize,
    pub file: String,
    pub workload: String,
    /// The latency unit of a latency figure ("round trip"); absent for a metric.
    pub unit: Option<String>,
    pub metric: Gated,
    /// How much worse than the baseline, in percent.
    pub worse_pct: f64,
    /// The threshold it crossed.
    pub threshold_pct: f64,
    pub verdict: Verdict,
}

/// Everything compared, plus what could not be paired.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// One row per file after the baseline, workload and metric present in both.
    pub rows: Vec<Row>,
    /// Workloads present in only some of the files, said in words.
    pub unmatched: Vec<String>,
    /// One row per file after the baseline, workload, latency unit and figure in both.
    pub latency: Vec<LatencyRow>,
}

/// A workload's latency figures of one file against the baseline's, unit by unit.
fn pair_latency(wa: &WorkloadResult, wb: &WorkloadResult, candidate: usize, c: &mut Comparison) {
    for la in &wa.latency {
        let Some(lb) = wb.latency.iter().find(|l| l.unit == la.unit) else {
            continue;
        };
        for fa in &la.figures {
            let Some(fb) = lb.figure(fa.what.figure) else {
                continue;
            };
            let test = rank::mann_whitney(&fa.runs, &fb.runs);
            let verdict = match &test {
                Some(t) if t.significant => Verdict::Significant,
                Some(_) => Verdict::WithinNoise,
                None => Verdict::CannotTell,
            };
            let (sa, sb) = (fa.summary.clone(), fb.summary.clone());
            c.latency.push(LatencyRow {
                candidate,
                workload: wa.name.clone(),
                unit: la.unit.clone(),
                figure: fa.what.figure,
                against: Against::new(sa, sb),
                rank_test: test,
                verdict,
            });
        }
    }
}

/// One file against the baseline: workloads paired by name, metrics by kind, each
/// difference tested.
fn pair(base: &RunResults, other: &RunResults, candidate: usize, c: &mut Comparison) {
    for wa in &base.workloads {
        let Some(wb) = other.workloads.iter().find(|w| w.name == wa.name) else {
            c.unmatched.push(format!(
                "{}: in the baseline, not in file {candidate}",
                wa.name
            ));
            continue;
        };
        for ma in &wa.metrics {
            let Some(mb) = wb.metrics.iter().find(|m| m.what.metric == ma.what.metric) else {
                continue;
            };
            let (sa, sb) = (ma.summary.clone(), mb.summary.clone());
            let welch = stats::welch(&sa, &sb);
            let verdict = match &welch {
                Some(w) if w.significant => Verdict::Significant,
                Some(_) => Verdict::WithinNoise,
                None => Verdict::CannotTell,
            };
            c.rows.push(Row {
                candidate,
                workload: wa.name.clone(),
                metric: ma.what.metric,
                unit: ma.what.unit.clone(),
                better: ma.what.metric.better(),
                against: Against::new(sa, sb),
                welch,
                verdict,
            });
        }
        pair_latency(wa, wb, candidate, c);
    }
    for wb in &other.workloads {
        if !base.workloads.iter().any(|w| w.name == wb.name) {
            c.unmatched.push(format!(
                "{}: in file {candidate}, not in the baseline",
                wb.name
            ));
        }
    }
}

/// Two files: B against the baseline A.
pub fn compare(a: &RunResults, b: &RunResults) -> Comparison {
    compare_many(&[a, b])
}

/// Every file after the first against the first.
pub fn compare_many(files: &[&RunResults]) -> Comparison {
    let mut c = Comparison {
        rows: Vec::new(),
        unmatched: Vec::new(),
        latency: Vec::new(),
    };
    if let Some((base, others)) = files.split_first() {
        for (i, other) in others.iter().enumerate() {
            pair(base, other, i + 1, &mut c);
        }
    }
    c
}

/// The rows that cross a threshold: worse by more than it, and not within noise.
pub fn regressions(c: &Comparison, gates: &[Gate], labels: &[String]) -> Vec<Regression> {
    // Each row as what a gate watches: a metric, or a latency figure in any unit the workload
    // times (one that rose beyond its interval, or could not be tested).
    let metrics = c.rows.iter().map(|r| {
        let what = Gated::Metric(r.metric);
        (
            r.candidate,
            &r.workload,
            None,
            what,
            r.worse_pct(),
            r.verdict,
        )
    });
    let latency = c.latency.iter().map(|r| {
        let what = Gated::Latency(r.figure);
        (
            r.candidate,
            &r.workload,
            Some(&r.unit),
            what,
            r.worse_pct(),
            r.verdict,
        )
    });
    let mut out = Vec::new();
    for (candidate, workload, unit, what, worse, verdict) in metrics.chain(latency) {
        let Some(worse) = worse else {
            continue;
        };
        for gate in gates.iter().filter(|g| g.metric == what) {
            if worse > gate.pct && verdict != Verdict::WithinNoise {
                out.push(Regression {
                    candidate,
                    file: labels.get(candidate).cloned().unwrap_or_default(),
                    workload: workload.clone(),
                    unit: unit.cloned(),
                    metric: what,
                    worse_pct: worse,
                    threshold_pct: gate.pct,
                    verdict,
                });
            }
        }
    }
    out
}

/// A short name per file for column heads: the file name without `.json`, or `file N` when
/// two files would look the same.
pub fn labels(paths: &[&Path]) -> Vec<String> {
    let stems: Vec<String> = paths
        .iter()
        .map(|p| {
            p.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string())
        })
        .collect();
    (0..stems.len())
        .map(|i| {
            if stems.iter().filter(|s| **s == stems[i]).count() > 1 {
                format!("file {i}")
            } else {
                stems[i].clone()
            }
        })
        .collect()
}

/// What `--format json` prints.
#[serde_with::skip_serializing_none]
#[derive(Serialize)]
struct Report<'a> {
    files: Vec<FileInfo<'a>>,
    /// Where the files' machines or runs differ, one line per field.
    machine_differences: Vec<String>,
    test: &'static str,
    rows: &'a [Row],
    latency_test: &'static str,
    latency_rows: &'a [LatencyRow],
    unmatched: &'a [String],
    regressions: &'a [Regression],
    /// Suite files only: the findings whose figures moved.
    moved_findings: Option<&'a [Moved]>,
}

fn c_of(files: &[RunResults]) -> Comparison {
    compare_many(&files.iter().collect::<Vec<_>>())
}

/// A finding of a suite whose figures moved in one file against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Moved {
    pub candidate: usize,
    pub finding: String,
    /// What moved, in words: `fork_load fairness_ratio 2.86 -> 1.41`.
    pub what: Vec<String>,
    /// Whether a test said so (false: too few repeats to test; moved beyond the tolerance).
    pub tested: bool,
}

/// How far a figure must move for a finding to have moved: a tenth of a fairness ratio or
/// of what it received (at least the model's tolerance in CPUs), the model's tolerance in
/// what it is due, a tenth of a latency. Below it a change is immaterial however
/// significant; with dozens of figures a suite would otherwise flag noise.
const MOVED_RATIO: f64 = 0.1;
const MOVED_LATENCY_PCT: f64 = 10.0;

/// The findings of two or more suites whose fairness ratio, CPU received or due, or latency
/// moved materially, and not within noise (a finding run once a side is said untested).
pub fn moved_findings(c: &Comparison) -> Vec<Moved> {
    let mut out: Vec<Moved> = Vec::new();
    let mut note = |candidate: usize, workload: &str, what: String, tested: bool| {
        let (finding, _) = workload.split_once('/').unwrap_or((workload, ""));
        match out
            .iter_mut()
            .find(|m| m.candidate == candidate && m.finding == finding)
        {
            Some(m) => {
                m.what.push(what);
                m.tested &= tested;
            }
            None => out.push(Moved {
                candidate,
                finding: finding.to_owned(),
                what: vec![what],
                tested,
            }),
        }
    };
    for r in &c.rows {
        // What a workload received moves with the machine's noise, by a share of itself;
        // what it is due only when the rules or the setup changed.
        let limit = match r.metric {
            Metric::FairnessRatio => MOVED_RATIO.max(MOVED_RATIO * r.a.mean.abs()),
            Metric::CpuReceived => crate::finding::DUE_TOLERANCE.max(MOVED_RATIO * r.a.mean),
            Metric::CpuFair => crate::finding::DUE_TOLERANCE,
            _ => continue,
        };
        if r.verdict == Verdict::WithinNoise || (r.b.mean - r.a.mean).abs() < limit {
            continue;
        }
        let what = format!(
            "{} {} {:.3} -> {:.3}",
            r.workload.split_once('/').map_or(&*r.workload, |(_, w)| w),
            r.metric.name(),
            r.a.mean,
            r.b.mean
        );
        note(
            r.candidate,
            &r.workload,
            what,
            r.verdict == Verdict::Significant,
        );
    }
    for r in &c.latency {
        let big = r.diff_pct.is_some_and(|d| d.abs() >= MOVED_LATENCY_PCT);
        if r.verdict != Verdict::Significant || !big {
            continue;
        }
        let what = format!(
            "{} {} {} {:+.0}%",
            r.workload.split_once('/').map_or(&*r.workload, |(_, w)| w),
            r.figure.gate_name(),
            r.unit,
            r.diff_pct.unwrap_or(0.0)
        );
        note(r.candidate, &r.workload, what, true);
    }
    out
}

/// The moved findings, a line each, under the tables.
fn moved_text(moved: &[Moved], labels: &[String]) -> String {
    let mut out = String::from("\n");
    if moved.is_empty() {
        out.push_str("findings that moved: none\n");
    }
    for m in moved {
        let how = if m.tested {
            ""
        } else {
            " (too few repeats to test: moved beyond the tolerance)"
        };
        let line = format!(
            "finding moved in {}: {}: {}{how}",
            labels.get(m.candidate).map_or("?", |l| l.as_str()),
            m.finding,
            m.what.join("; ")
        );
        crate::record::text::push_wrapped(&mut out, &line, 4);
    }
    out
}

/// Where the files' machines or runs differ, one line per field, the baseline first:
/// `kernel: baseline 6.17.0; 1: 6.18.0`. Fields: those of [`crate::record::results::Host`]
/// (kernel, its version string, host, CPU model, CPUs, governor, autogroup, each scheduler
/// setting), schedlab's version and commit, and the scenario's text. Not the time or the
/// command line: they differ between any two runs. A field a file did not record (an older
/// file) is "not recorded" and alone makes no difference; a scheduler setting one kernel has
/// and another lacks is "absent".
pub fn machine_differences(files: &[RunResults]) -> Vec<String> {
    let per_file: Vec<Vec<(String, Option<String>)>> = files
        .iter()
        .map(|r| {
            let mut f = r.host.fields();
            f.push((
                "schedlab".into(),
                Some(r.provenance.schedlab_version.clone()),
            ));
            f.push((
                "schedlab commit".into(),
                r.provenance.schedlab_commit.clone(),
            ));
            f
        })
        .collect();
    let mut names: Vec<&str> = Vec::new();
    for f in &per_file {
        for (n, _) in f {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    let mut out = Vec::new();
    for name in names {
        let values: Vec<Option<String>> = per_file
            .iter()
            .zip(files)
            .map(|(f, r)| match f.iter().find(|(n, _)| n == name) {
                Some((_, v)) => v.clone(),
                // A setting this kernel does not have, where it showed others.
                None if !r.host.sched.is_empty() => Some("absent".into()),
                None => None,
            })
            .collect();
        let mut known: Vec<&String> = values.iter().flatten().collect();
        known.sort();
        known.dedup();
        if known.len() > 1 {
            let each: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let who = if i == 0 {
                        "baseline".to_owned()
                    } else {
                        i.to_string()
                    };
                    format!("{who} {}", v.as_deref().unwrap_or("not recorded"))
                })
                .collect();
            out.push(format!("{name}: {}", each.join("; ")));
        }
    }
    let mut texts: Vec<&String> = files
        .iter()
        .filter_map(|r| r.scenario.content.as_ref())
        .collect();
    texts.sort();
    texts.dedup();
    if texts.len() > 1 {
        out.push("scenario text: not the same in every file (their scenario.content)".into());
    }
    out
}

#[derive(Serialize)]
struct FileInfo<'a> {
    path: String,
    label: &'a str,
    kernel: &'a str,
    scenario: &'a str,
    cpus: usize,
    repeats: usize,
}

pub fn main(args: Args) -> Result<()> {
    let mut suites = 0;
    let mut load = |p: &PathBuf| -> Result<RunResults> {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        let origin = p.display().to_string();
        if SuiteResults::is_suite(&text) {
            suites += 1;
            return Ok(SuiteResults::from_json(&text, &origin)?.as_run_results());
        }
        RunResults::from_json(&text, &origin)
    };
    let files = args
        .files
        .iter()
        .map(&mut load)
        .collect::<Result<Vec<_>>>()?;
    if suites != 0 && suites != files.len() {
        return Err(crate::cli::ArgumentError(
            "compare takes suite files with suite files, run results with run results".into(),
        )
        .into());
    }
    let paths: Vec<&Path> = args.files.iter().map(|p| p.as_path()).collect();
    let labels = labels(&paths);
    let c = c_of(&files);
    let moved = (suites != 0).then(|| moved_findings(&c));
    let regressed = regressions(&c, &args.fail_on_regression, &labels);
    let format = if args.json {
        Format::Json
    } else if args.markdown {
        Format::Markdown
    } else {
        args.format
    };
    let moved_lines = moved.as_deref().map(|m| moved_text(m, &labels));
    let text = match format {
        Format::Text => to_text(&c, &files, &labels) + &moved_lines.unwrap_or_default(),
        Format::Markdown => to_markdown(&c, &files, &labels) + &moved_lines.unwrap_or_default(),
        Format::Json => {
            let report = Report {
                files: files
                    .iter()
                    .zip(&paths)
                    .zip(&labels)
                    .map(|((r, p), label)| FileInfo {
                        path: p.display().to_string(),
                        label,
                        kernel: &r.host.kernel,
                        scenario: &r.scenario.name,
                        cpus: r.host.cpus,
                        repeats: r.repeats,
                    })
                    .collect(),
                machine_differences: machine_differences(&files),
                test: "welch",
                rows: &c.rows,
                latency_test: "mann_whitney",
                latency_rows: &c.latency,
                unmatched: &c.unmatched,
                regressions: &regressed,
                moved_findings: moved.as_deref(),
            };
            let mut s = serde_json::to_string_pretty(&report)?;
            s.push('\n');
            s
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("cannot write the comparison")?;
    if regressed.is_empty() {
        return Ok(());
    }
    for r in &regressed {
        let unit = r.unit.as_ref().map_or(String::new(), |u| format!(" ({u})"));
        crate::errln!(
            "schedlab compare: regression: {} in {}: {}{unit} {:.1}% worse than the baseline (threshold {}%), {}",
            r.workload,
            r.file,
            r.metric.name(),
            r.worse_pct,
            r.threshold_pct,
            verdict_text(r.metric, r.verdict)
        );
    }
    // A status of its own, so a script (or `git bisect run`) tells a regression from an error.
    std::process::exit(REGRESSION_EXIT);
}
