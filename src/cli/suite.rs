//! `schedlab suite [FINDING ...]`: runs the findings (assets/findings/, or a directory of
//! them) with repeats, one after the other, shows progress and the time left, and writes one
//! results file and a report: what each workload received and was due, what the kernel's
//! rules say it is due, and the verdicts, which are the findings (docs/findings.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::run::{output_file, parse_duration, results_of, run_once, write_results, Plan};
use crate::cli::ArgumentError;
use crate::finding::{self, Machine};
use crate::record::machine;
use crate::record::results::{Host, Provenance};
use crate::record::suite::{FindingResult, SuiteResults, SUITE_SCHEMA_VERSION};
use crate::scenario::Scenario;
use crate::sys::kernel::priority::SamplerPriority;

/// The exit status when a finding's due differs from the kernel's rules on a quiet machine
/// (1 is an error, 2 a usage error, 3 a regression in `compare`).
pub(crate) const DUE_DIFFERS_EXIT: i32 = 4;

/// How long each run of `--quick` lasts: a verdict window and a settled span after it.
const QUICK_SECONDS: f64 = 10.0;
/// Repeats without --repeat: enough for `compare` to test a difference.
const DEFAULT_REPEATS: u32 = 3;

/// Arguments of `schedlab suite`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: 0, or 4 when a finding's due differs from what the \
    kernel's rules give on a quiet machine (a fault of the model, or rules that changed), \
    1 on an error.\n\n\
    Example, before and after a scheduler patch:\n  \
    schedlab suite --format json -o before.json\n  \
    schedlab suite --format json -o after.json\n  \
    schedlab compare before.json after.json --fail-on-regression fairness_ratio:10"
)]
pub struct Args {
    /// Findings to run, by name (all when none; --list names them).
    #[arg(value_name = "FINDING")]
    pub findings: Vec<String>,
    /// One repeat of 10 s each: the whole catalogue in about three minutes.
    #[arg(long)]
    pub quick: bool,
    /// Repeats of each finding (default 3; 1 with --quick).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// How long each run lasts (e.g. 20, 20s, 1m); default: each finding's own.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// Report format: a table per finding, Markdown for a mailing list, or JSON (which
    /// `schedlab compare` reads).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE (whole or not at all) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Read the findings from DIR (scenario files with a [finding] table) instead of the
    /// catalogue shipped with schedlab.
    #[arg(long, value_name = "DIR")]
    pub findings_dir: Option<PathBuf>,
    /// List the findings, one line each, and run nothing.
    #[arg(long)]
    pub list: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// The findings shipped with schedlab (assets/findings/), as scenarios; each one's name is its
/// file's stem.
pub(crate) fn catalogue() -> impl Iterator<Item = Scenario> {
    finding::CATALOGUE.iter().map(|(name, src)| {
        Scenario::from_toml(src, &format!("assets/findings/{name}.toml"))
            .expect("the catalogue parses (tested)")
    })
}

/// The findings to choose from: the catalogue, or every scenario with a [finding] table in
/// a directory, by name.
fn available(dir: Option<&Path>) -> Result<Vec<Scenario>> {
    let Some(dir) = dir else {
        return Ok(catalogue().collect());
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the findings directory {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let sc = Scenario::load(&p)?;
        if sc.finding.is_some() {
            out.push(sc);
        }
    }
    if out.is_empty() {
        anyhow::bail!(
            "no findings in {}: a finding is a scenario file with a [finding] table",
            dir.display()
        );
    }
    Ok(out)
}

/// The findings asked for, in the catalogue's order.
fn chosen(all: Vec<Scenario>, names: &[String]) -> Result<Vec<Scenario>> {
    if let Some(bad) = names.iter().find(|n| !all.iter().any(|s| &s.name == *n)) {
        let known: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        return Err(ArgumentError(format!(
            "no finding `{bad}`; the findings are {}",
            known.join(", ")
        ))
        .into());
    }
    Ok(all
        .into_iter()
        .filter(|s| names.is_empty() || names.contains(&s.name))
        .collect())
}

pub fn main(args: Args) -> Result<()> {
    let all = available(args.findings_dir.as_deref())?;
    if args.list {
        for s in &all {
            let f = s.finding.as_ref().expect("findings have a [finding] table");
            crate::outln!("{:<28} {}", s.name, f.title);
        }
        return Ok(());
    }
    let findings = chosen(all, &args.findings)?;
    let repeats = args
        .repeat
        .unwrap_or(if args.quick { 1 } else { DEFAULT_REPEATS });
    let seconds = |s: &Scenario| {
        args.duration
            .or(args.quick.then_some(QUICK_SECONDS))
            .or(s.duration)
            .unwrap_or(QUICK_SECONDS)
    };
    let here = Machine::here();
    crate::engine::live_groups::install_exit_hook();
    let mut output = output_file(args.output.as_deref())?;
    let started = machine::now_utc();
    let runnable = findings.iter().filter(|s| unmet(s, here).is_none());
    let total: f64 = runnable.map(|s| seconds(s) * repeats as f64).sum();
    let progress = progress_bar(total);
    let mut done = 0.0;
    let mut host: Option<Host> = None;
    let mut results = Vec::new();
    let n = findings.len();
    for (k, sc) in findings.iter().enumerate() {
        let f = sc
            .finding
            .as_ref()
            .expect("findings have a [finding] table");
        if let Some(why) = unmet(sc, here) {
            progress.suspend(|| crate::errln!("schedlab suite: {}: skipped: {why}", sc.name));
            results.push(FindingResult::skipped(&sc.name, f, why));
            continue;
        }
        let limit = seconds(sc);
        let mut frames = Vec::new();
        let mut latencies = Vec::new();
        for r in 1..=repeats {
            progress.set_message(format!("{}/{n} {} repeat {r}/{repeats}", k + 1, sc.name));
            let plan = Plan {
                scenario: sc,
                limit: Some(limit),
                sampler: SamplerPriority::Realtime,
                progress_from: (done * 10.0) as u64,
                on_sample: None,
                serve: None,
            };
            let (fr, lat) = run_once(&plan, r, &mut None, None, &progress, &mut host)
                .with_context(|| format!("finding {}, repeat {r}", sc.name))?;
            frames.push(fr);
            latencies.push(lat);
            done += limit;
        }
        let names: Vec<String> = sc.workloads.iter().map(|w| w.name.clone()).collect();
        let run = results_of(sc, None, Some(limit), host.clone(), &frames, &latencies);
        // Start-up and a first verdict window are left out of the figures.
        let settle = sc.verdict_window.unwrap_or(5.0) + 2.0;
        results.push(FindingResult::from_repeats(
            &sc.name, f, &names, &frames, settle, run,
        ));
    }
    progress.finish_and_clear();
    let suite = SuiteResults {
        suite_schema_version: SUITE_SCHEMA_VERSION,
        provenance: Provenance {
            started_utc: Some(started),
            command_line: Some(machine::command_line()),
            ..Provenance::this_build()
        },
        host: host.unwrap_or_else(|| Host::here(crate::supervisor::usable_cpus(), here.autogroup)),
        quick: args.quick,
        repeats,
        findings: results,
    };
    let text = match args.format {
        Format::Text => suite.to_text(),
        Format::Markdown => suite.to_markdown(),
        Format::Json => suite.to_json(),
    };
    write_results(output.take(), &text)?;
    let faults = suite.due_faults();
    if faults.is_empty() {
        return Ok(());
    }
    for f in &faults {
        crate::errln!("schedlab suite: due differs from the kernel's rules: {f}");
    }
    std::process::exit(DUE_DIFFERS_EXIT);
}

/// Why this machine cannot run a finding, when it cannot.
fn unmet(sc: &Scenario, here: Machine) -> Option<String> {
    sc.finding.as_ref().and_then(|f| f.unmet(here))
}

/// A bar over a whole set of runs, with the time left; none when stderr is not a terminal.
pub(crate) fn progress_bar(total_secs: f64) -> ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new((total_secs * 10.0).round() as u64);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb
}
