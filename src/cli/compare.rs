//! `schedlab compare A B`: two result files (two kernels, preempt on and off) side by side,
//! per workload and metric: the difference, its 95% confidence interval, and whether it is
//! significant or within noise (Welch's t-test, Welch–Satterthwaite degrees of freedom).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::model::stats::{self, Summary, Welch};
use crate::record::results::{num, Metric, RunResults};

/// Arguments of `schedlab compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The baseline: a result file from `schedlab run --format json`.
    pub a: PathBuf,
    /// The candidate, compared against A (differences are B - A).
    pub b: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// What the test says about one difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// p < 0.05: unlikely to be noise.
    Significant,
    /// The runs' spread covers the difference.
    WithinNoise,
    /// Fewer than two runs on a side: no spread to test against.
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

/// One workload and metric present in both files.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub workload: String,
    pub metric: Metric,
    pub unit: String,
    pub a: Summary,
    pub b: Summary,
    /// (B - A) / A in percent, when A's mean is not zero.
    pub diff_pct: Option<f64>,
    pub welch: Option<Welch>,
    pub verdict: Verdict,
}

/// Everything compared, plus what could not be paired.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub rows: Vec<Row>,
    /// Workloads present in only one file ("A: name" or "B: name").
    pub unmatched: Vec<String>,
}

/// Pairs workloads by name and metrics by kind, and tests each difference.
pub fn compare(a: &RunResults, b: &RunResults) -> Comparison {
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for wa in &a.workloads {
        let Some(wb) = b.workloads.iter().find(|w| w.name == wa.name) else {
            unmatched.push(format!("A: {}", wa.name));
            continue;
        };
        for ma in &wa.metrics {
            let Some(mb) = wb.metrics.iter().find(|m| m.metric == ma.metric) else {
                continue;
            };
            let (sa, sb) = (ma.summary(), mb.summary());
            let welch = stats::welch(&sa, &sb);
            let verdict = match &welch {
                Some(w) if w.significant => Verdict::Significant,
                Some(_) => Verdict::WithinNoise,
                None => Verdict::CannotTell,
            };
            rows.push(Row {
                workload: wa.name.clone(),
                metric: ma.metric,
                unit: ma.unit.clone(),
                diff_pct: (sa.mean != 0.0).then(|| (sb.mean - sa.mean) / sa.mean.abs() * 100.0),
                a: sa,
                b: sb,
                welch,
                verdict,
            });
        }
    }
    for wb in &b.workloads {
        if !a.workloads.iter().any(|w| w.name == wb.name) {
            unmatched.push(format!("B: {}", wb.name));
        }
    }
    Comparison { rows, unmatched }
}

fn signed(x: f64) -> String {
    let s = num(x);
    if x > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// The comparison as a table per workload.
pub fn to_text(c: &Comparison, a: &RunResults, b: &RunResults, names: (&str, &str)) -> String {
    let mut out = String::new();
    for (tag, r, name) in [("A", a, names.0), ("B", b, names.1)] {
        let _ = writeln!(
            out,
            "{tag}: {name}: scenario {}, kernel {}, {} CPUs, {} repeat{}",
            r.scenario.name,
            r.host.kernel,
            r.host.cpus,
            r.repeats,
            if r.repeats == 1 { "" } else { "s" }
        );
    }
    if a.scenario.name != b.scenario.name {
        let _ = writeln!(out, "note: the two files ran different scenarios");
    }
    let mut current = None;
    for row in &c.rows {
        if current != Some(&row.workload) {
            current = Some(&row.workload);
            let _ = writeln!(out, "\n{}", row.workload);
            let _ = writeln!(
                out,
                "  {:<26} {:>11} {:>11} {:>11} {:>8} {:>25} {:>7}  verdict",
                "metric", "A mean", "B mean", "B - A", "diff %", "95% CI of B - A", "p"
            );
        }
        let (ci, p) = match &row.welch {
            Some(w) => (
                format!("{} .. {}", signed(w.ci95_low), signed(w.ci95_high)),
                format!("{:.3}", w.p_value),
            ),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "  {:<26} {:>11} {:>11} {:>11} {:>8} {:>25} {:>7}  {}",
            format!("{} ({})", row.metric.name(), row.unit),
            num(row.a.mean),
            num(row.b.mean),
            signed(row.b.mean - row.a.mean),
            row.diff_pct.map_or("-".into(), |d| format!("{d:+.1}%")),
            ci,
            p,
            row.verdict.text()
        );
    }
    for u in &c.unmatched {
        let _ = writeln!(out, "\nonly in {u}");
    }
    let _ = writeln!(
        out,
        "\nsignificant: Welch's t-test, two-sided p < 0.05; within noise: the runs' spread covers the difference"
    );
    out
}

pub fn main(args: Args) -> Result<()> {
    let load = |p: &PathBuf| -> Result<RunResults> {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
        RunResults::from_json(&text, &p.display().to_string())
    };
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    let c = compare(&a, &b);
    match args.format {
        Format::Text => crate::out!(
            "{}",
            to_text(
                &c,
                &a,
                &b,
                (&args.a.display().to_string(), &args.b.display().to_string())
            )
        ),
        Format::Json => crate::outln!("{}", serde_json::to_string_pretty(&c)?),
    }
    Ok(())
}
