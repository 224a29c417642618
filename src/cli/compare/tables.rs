//! compare's two tables for people: the text table (a block per workload, a line per file)
//! and the Markdown one for a mailing list (a row per workload and metric, a column per file).
//! JSON is the comparison itself, serialized by `main`.

use std::fmt::Write as _;

use super::{Against, Comparison, LatencyRow, Row, Verdict};
use crate::record::results::{Better, Metric, RunResults};
use crate::record::text::{fit, human as num, signed, wrap, COLUMNS};

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |d| format!("{d:+.1}%"))
}

fn spread(x: Option<f64>) -> String {
    x.map_or("± -".into(), |s| format!("± {s:.1}%"))
}

fn describe(r: &RunResults) -> String {
    format!(
        "scenario {}, kernel {}, {} CPUs, {} repeat{}",
        r.scenario.name,
        r.host.kernel,
        r.host.cpus,
        r.repeats,
        if r.repeats == 1 { "" } else { "s" }
    )
}

/// The workloads and metrics in the baseline's order, each with its rows.
fn groups<'a>(c: &'a Comparison, base: &RunResults) -> Vec<(&'a str, Metric, Vec<&'a Row>)> {
    let mut out: Vec<(&str, Metric, Vec<&Row>)> = Vec::new();
    for row in &c.rows {
        match out
            .iter_mut()
            .find(|(w, m, _)| *w == row.workload && *m == row.metric)
        {
            Some((_, _, rows)) => rows.push(row),
            None => out.push((&row.workload, row.metric, vec![row])),
        }
    }
    let place = |w: &str, m: Metric| {
        (
            base.workloads.iter().position(|x| x.name == w),
            Metric::ALL.iter().position(|x| *x == m),
        )
    };
    out.sort_by_key(|(w, m, _)| place(w, *m));
    out
}

const TEST_NOTE: &str = "significant: Welch's t-test, two-sided p < 0.05; within noise: the runs' spread covers the difference; cannot tell: fewer than 2 runs a side (latency: fewer than 4); %sd: each file's own standard deviation in % of its mean";

/// A table per workload: per metric the baseline's mean and spread, then one line per file
/// with its difference, `%change ± %stddev`, the 95% CI of the difference, p and the verdict.
pub fn to_text(c: &Comparison, files: &[RunResults], labels: &[String]) -> String {
    let mut out = String::new();
    for (i, (r, label)) in files.iter().zip(labels).enumerate() {
        let tag = if i == 0 {
            "baseline".to_owned()
        } else {
            format!("{i}")
        };
        let head = format!("{tag}: {label}: {}", describe(r));
        let _ = writeln!(out, "{}", wrap(&head, COLUMNS, 4));
    }
    let Some(base) = files.first() else {
        return out;
    };
    if files.iter().any(|r| r.scenario.name != base.scenario.name) {
        let _ = writeln!(out, "note: the files ran different scenarios");
    }
    for d in super::machine_differences(files) {
        let _ = writeln!(out, "{}", wrap(&format!("differs: {d}"), COLUMNS, 4));
    }
    let width = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(8, LABEL_MAX);
    let mut current = None;
    for (workload, _, rows) in groups(c, base) {
        if current != Some(workload) {
            if let Some(done) = current {
                latency_text(&mut out, c, done, labels, width);
            }
            current = Some(workload);
            let _ = writeln!(out, "\n{workload}");
            let _ = writeln!(
                out,
                "    {:<width$} {:>8} {:>8} {:>16} {:>17} {:>6}  verdict",
                "file", "mean", "diff", "%change ± %sd", "95% CI of diff", "p"
            );
        }
        let name = format!("{} ({})", rows[0].metric.name(), rows[0].unit);
        text_group(&mut out, name, &lines(&rows), labels, width);
    }
    if let Some(done) = current {
        latency_text(&mut out, c, done, labels, width);
    }
    for u in &c.unmatched {
        let _ = writeln!(out, "\nnot compared: {u}");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", wrap(TEST_NOTE, COLUMNS, 2));
    if !c.latency.is_empty() {
        let _ = writeln!(out, "{}", wrap(LATENCY_NOTE, COLUMNS, 2));
    }
    out
}

/// The widest file label the text table shows whole: the other columns take 82 of 100.
const LABEL_MAX: usize = 14;

const LATENCY_NOTE: &str = "latency (µs, lower is better): Mann–Whitney rank test on the repeats' values, exact, two-sided p < 0.05 (needs 4+ runs each); its CI is that of the Hodges–Lehmann shift";

/// A workload's latency figures, grouped by unit and figure as the metrics are.
fn latency_groups<'a>(c: &'a Comparison, workload: &str) -> Vec<Vec<&'a LatencyRow>> {
    let mut out: Vec<Vec<&LatencyRow>> = Vec::new();
    for row in c.latency.iter().filter(|r| r.workload == workload) {
        match out
            .iter_mut()
            .find(|g| g[0].unit == row.unit && g[0].figure == row.figure)
        {
            Some(g) => g.push(row),
            None => out.push(vec![row]),
        }
    }
    out
}

/// The latency rows of `workload` in the text table: the baseline's mean, then each file's.
fn latency_text(out: &mut String, c: &Comparison, workload: &str, labels: &[String], width: usize) {
    for rows in latency_groups(c, workload) {
        let name = format!("{} {} (µs)", rows[0].figure.label(), rows[0].unit);
        text_group(out, name, &lines(&rows), labels, width);
    }
}

/// What a table shows of one row against the baseline, a metric's or a latency figure's.
struct Line<'a> {
    candidate: usize,
    vs: &'a Against,
    verdict: Verdict,
    judgement: String,
    /// The test's 95% CI of the difference and its p, in words; "-" without a test.
    test: (String, String),
}

/// Row and LatencyRow name alike the fields a line shows; only their tests differ.
macro_rules! line_from {
    ($row:ty, $test:ident) => {
        impl<'a> From<&'a $row> for Line<'a> {
            fn from(row: &'a $row) -> Line<'a> {
                Line {
                    candidate: row.candidate,
                    vs: &row.against,
                    verdict: row.verdict,
                    judgement: row.judgement(),
                    test: $test(row),
                }
            }
        }
    };
}
line_from!(Row, welch_cells);
line_from!(LatencyRow, rank_cells);

/// A group's rows as the tables show them.
fn lines<'a, R>(rows: &[&'a R]) -> Vec<Line<'a>>
where
    Line<'a>: From<&'a R>,
{
    rows.iter().map(|&r| Line::from(r)).collect()
}

fn welch_cells(row: &Row) -> (String, String) {
    match &row.welch {
        Some(w) => (
            format!("{}..{}", signed(w.ci95_low), signed(w.ci95_high)),
            format!("{:.3}", w.p_value),
        ),
        None => ("-".into(), "-".into()),
    }
}

fn rank_cells(row: &LatencyRow) -> (String, String) {
    match &row.rank_test {
        Some(t) => (
            match (t.ci95_low, t.ci95_high) {
                (Some(lo), Some(hi)) => format!("{}..{}", signed(lo), signed(hi)),
                _ => "-".into(),
            },
            format!("{:.3}", t.p_value),
        ),
        None => ("-".into(), "-".into()),
    }
}

/// A group in the text table: the baseline's mean and spread under the group's name, then one
/// line per file with its mean, difference, `%change ± %stddev`, CI, p and verdict.
fn text_group(out: &mut String, name: String, lines: &[Line], labels: &[String], width: usize) {
    let first = &lines[0];
    let base = fit(labels.first().map_or("", |l| l.as_str()), width);
    let _ = writeln!(
        out,
        "  {name}\n    {base:<width$} {:>8} {:>8} {:>16}",
        num(first.vs.a.mean),
        "",
        spread(first.vs.a.pct_std_dev()),
    );
    for line in lines {
        let (ci, p) = &line.test;
        let label = fit(labels.get(line.candidate).map_or("", |l| l.as_str()), width);
        // "cannot tell (needs 2+ runs each)" in short: the note under the table says why.
        let judgement = if line.verdict == Verdict::CannotTell {
            "cannot tell"
        } else {
            line.judgement.as_str()
        };
        let _ = writeln!(
            out,
            "    {label:<width$} {:>8} {:>8} {:>16} {:>17} {:>6}  {judgement}",
            num(line.vs.b.mean),
            signed(line.vs.b.mean - line.vs.a.mean),
            format!("{} {}", pct(line.vs.diff_pct), spread(line.vs.pct_std_dev)),
            ci,
            p,
        );
    }
}

/// The latency rows of `workload` in the Markdown table.
fn latency_markdown(out: &mut String, c: &Comparison, workload: &str, labels: &[String]) {
    for rows in latency_groups(c, workload) {
        let first = rows[0];
        let _ = write!(
            out,
            "| {} | {} {} (µs, lower is better) | {} {} |",
            cell(workload),
            first.figure.label(),
            cell(&first.unit),
            num(first.a.mean),
            spread(first.a.pct_std_dev())
        );
        candidate_cells(&mut *out, labels.len(), &lines(&rows));
    }
}

/// A Markdown row's cells for each candidate file: its change, spread and mark, or "-" where
/// the file has no such figure; then the row's end.
fn candidate_cells(out: &mut String, files: usize, lines: &[Line]) {
    for candidate in 1..files {
        let text = match lines.iter().find(|l| l.candidate == candidate) {
            None => "-".to_owned(),
            Some(l) => format!(
                "{} {}{}",
                pct(l.vs.diff_pct),
                spread(l.vs.pct_std_dev),
                mark(l.verdict)
            ),
        };
        let _ = write!(out, " {text} |");
    }
    let _ = writeln!(out);
}

/// A Markdown cell's mark for a verdict.
fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Significant => " *",
        Verdict::WithinNoise => "",
        Verdict::CannotTell => " ?",
    }
}

/// Markdown cells must not contain a bare `|`.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// One table, a row per workload and metric, a column per file: the baseline's mean ± its
/// %stddev, then each file's %change ± its own %stddev and a mark when the change is
/// significant. Plain enough to read in a mail as it is.
pub fn to_markdown(c: &Comparison, files: &[RunResults], labels: &[String]) -> String {
    let mut out = String::new();
    let Some(base) = files.first() else {
        return out;
    };
    for (i, (r, label)) in files.iter().zip(labels).enumerate() {
        let role = if i == 0 { " (baseline)" } else { "" };
        let _ = writeln!(out, "- **{}**{role}: {}", cell(label), describe(r));
    }
    for d in super::machine_differences(files) {
        let _ = writeln!(out, "- differs: {}", cell(&d));
    }
    let _ = writeln!(out);
    let _ = write!(out, "| workload | metric |");
    for (i, label) in labels.iter().enumerate() {
        let head = if i == 0 {
            format!(" {} mean ± %stddev |", cell(label))
        } else {
            format!(" {} %change ± %stddev |", cell(label))
        };
        out.push_str(&head);
    }
    let _ = writeln!(out);
    let _ = write!(out, "| --- | --- |");
    for _ in labels {
        out.push_str(" ---: |");
    }
    let _ = writeln!(out);
    let mut current = None;
    for (workload, metric, rows) in groups(c, base) {
        if let Some(done) = current.filter(|w| *w != workload) {
            latency_markdown(&mut out, c, done, labels);
        }
        current = Some(workload);
        let first = rows[0];
        let direction = match first.better {
            Better::Higher => ", higher is better",
            Better::Lower => ", lower is better",
            Better::TowardOne => ", closer to 1 is better",
            Better::Neither => "",
        };
        let _ = write!(
            out,
            "| {} | {} ({}{direction}) | {} {} |",
            cell(workload),
            metric.name(),
            cell(&first.unit),
            num(first.a.mean),
            spread(first.a.pct_std_dev())
        );
        candidate_cells(&mut out, labels.len(), &lines(&rows));
    }
    if let Some(done) = current {
        latency_markdown(&mut out, c, done, labels);
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "`*` significant, Welch's t-test, two-sided p < 0.05; `?` cannot tell, fewer than two runs; \
         no mark: within noise. %stddev is each file's own standard deviation in percent of its mean."
    );
    if !c.latency.is_empty() {
        let _ = writeln!(
            out,
            "Latency rows (µs): `*` significant by a Mann–Whitney rank test on the repeats' values, \
             exact, two-sided p < 0.05; `?` cannot tell, fewer than four runs a side."
        );
    }
    for u in &c.unmatched {
        let _ = writeln!(out, "\nNot compared: {}", cell(u));
    }
    out
}
