//! `schedlab explain SCENARIO [--workload NAME]`: runs the scenario as it is and then
//! counterfactual variants of it, each changing one thing about the workload (its session,
//! its cgroup, its tasks long-lived, SCHED_BATCH, its affinity), with repeats, and reports
//! which variants remove the deviation and the mechanism they point to (docs/explain.md).

use std::cell::Cell;
use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::ProgressBar;

use crate::cli::run::{output_file, parse_duration, run_once, write_results, Plan};
use crate::cli::suite::{catalogue, Format};
use crate::cli::ArgumentError;
use crate::explain::conclusion::{self, Outcome, RepeatFigures};
use crate::explain::report::{ExplainReport, TracedRun, TracingCost, EXPLAIN_SCHEMA_VERSION};
use crate::explain::tracer::{Evidence, Tracer};
use crate::explain::variant::{self, Allowed, Change, Variant, KEYS};
use crate::finding::Machine;
use crate::model::Frame;
use crate::probe::sample::Sample;
use crate::record::machine;
use crate::record::results::Host;
use crate::scenario::Scenario;
use crate::sys::kernel::priority::SamplerPriority;

/// Repeats of each row without --repeat: enough for Welch's test to say something.
const DEFAULT_REPEATS: u32 = 3;
/// Seconds of settled figures each run gives without --duration, after its settling time.
const SETTLED_SECONDS: f64 = 6.0;

/// Arguments of `schedlab explain`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example, the 2002 contest question on one CPU:\n  \
    schedlab explain contest-one-cpu --workload fork_load\n\n\
    SCENARIO is a scenario file, a preset or a finding of `schedlab suite --list`.")]
pub struct Args {
    /// The scenario: a file, a preset or a finding, by name.
    #[arg(value_name = "SCENARIO")]
    pub scenario: String,
    /// The workload to explain (default: the one furthest from its due as it is).
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// Only these variants (comma-separated): own-session, shared-session, one-group,
    /// own-cgroup, long-lived, batch, unpinned (default: every one that fits the workload here); `none`
    /// for the scenario as it is and its traced run only.
    #[arg(long, value_name = "KEY", value_delimiter = ',')]
    pub variant: Vec<String>,
    /// Repeats of the scenario as it is and of each variant (2 or more: a test needs a spread).
    #[arg(long, default_value_t = DEFAULT_REPEATS,
          value_parser = clap::value_parser!(u32).range(2..=100))]
    pub repeat: u32,
    /// How long each run lasts (e.g. 12, 12s, 1m); default: the scenario's verdict window
    /// plus 8 s (2 s of start-up and 6 s of settled figures).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<f64>,
    /// No traced run: skip recording the kernel's scheduler events (as root, one more run as
    /// it is, with sched_switch, sched_wakeup, fork and migration events read from tracefs).
    #[arg(long)]
    pub no_evidence: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report to FILE (whole or not at all) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// A scenario file, a preset, or a finding of the catalogue, by name.
fn open(arg: &str) -> Result<Scenario> {
    let stem = arg.strip_suffix(".toml").unwrap_or(arg);
    if !std::path::Path::new(arg).exists() {
        if let Some(sc) = catalogue().find(|s| s.name == stem) {
            return Ok(sc);
        }
    }
    Ok(Scenario::open(arg)?.0)
}

pub fn main(args: Args) -> Result<()> {
    let sc = open(&args.scenario)?;
    variant::check_keys(&args.variant).map_err(ArgumentError)?;
    let here = Machine::here();
    let allowed = Allowed {
        cgroups: here.root && crate::sys::kernel::cgroup::hierarchy().is_ok(),
        autogroup: here.autogroup,
    };
    if let Some(w) = &args.workload {
        // Before anything runs: a wrong name or a variant that does not fit is one line.
        variant::choose(&sc, w, allowed, &args.variant).map_err(ArgumentError)?;
    }
    let settle = sc.verdict_window.unwrap_or(5.0) + 2.0;
    let duration = args.duration.unwrap_or(settle + SETTLED_SECONDS);
    if duration <= settle {
        return Err(ArgumentError(format!(
            "--duration {duration} leaves no settled figures: runs settle for {settle} s \
             (the verdict window and 2 s)"
        ))
        .into());
    }
    crate::engine::live_groups::install_exit_hook();
    let mut output = output_file(args.output.as_deref())?;
    let started = machine::now_utc();
    let mut runner = Runner {
        repeats: args.repeat,
        duration,
        progress: crate::cli::suite::progress_bar(0.0),
        done: 0.0,
        host: None,
    };
    // The bar's length is known once the variants are: as it is first, then at most these.
    let at_most = if args.variant.is_empty() {
        KEYS.len()
    } else if args.variant.iter().any(|k| k == variant::NONE) {
        0
    } else {
        args.variant.len()
    };
    // The traced run is a row of one repeat.
    let traced_row = if args.no_evidence {
        0.0
    } else {
        1.0 / args.repeat as f64
    };
    runner.set_rows(1.0 + traced_row + at_most as f64);
    let as_is_frames = runner.rows("as it is", &sc)?;
    let traced = (!args.no_evidence)
        .then(|| runner.traced(&sc, settle, &as_is_frames))
        .transpose()?;
    let workload = match &args.workload {
        Some(w) => w.clone(),
        None => furthest(&sc, &as_is_frames, settle)
            .context("no workload was due enough CPU to explain (0.02 CPU or more)")?,
    };
    let figures = |frames: &[Vec<Frame>]| -> Vec<RepeatFigures> {
        frames
            .iter()
            .filter_map(|f| conclusion::repeat_figures(f, &workload, settle))
            .collect()
    };
    let as_is = Outcome::new(Change::none(), &figures(&as_is_frames), None)
        .with_context(|| format!("{workload} was never due enough CPU for a ratio"))?;
    let mut outcomes = vec![as_is.clone()];
    let variants: Vec<Variant> = if conclusion::deviates(as_is.ratio.mean) {
        variant::choose(&sc, &workload, allowed, &args.variant).map_err(ArgumentError)?
    } else {
        Vec::new()
    };
    runner.set_rows(1.0 + traced_row + variants.len() as f64);
    for v in &variants {
        let frames = runner.rows(&v.what.key, &v.scenario)?;
        if let Some(o) = Outcome::new(v.what.clone(), &figures(&frames), Some(&as_is)) {
            outcomes.push(o);
        }
    }
    runner.progress.finish_and_clear();
    let report = ExplainReport {
        explain_schema_version: EXPLAIN_SCHEMA_VERSION,
        schedlab_version: env!("CARGO_PKG_VERSION").into(),
        schedlab_commit: machine::GIT_COMMIT.into(),
        started_utc: started,
        command_line: machine::command_line(),
        host: runner
            .host
            .unwrap_or_else(|| Host::here(crate::supervisor::usable_cpus(), here.autogroup)),
        scenario_arg: args.scenario.clone(),
        scenario: sc.name.clone(),
        workload: workload.clone(),
        repeats: args.repeat,
        duration,
        settle,
        conclusion: conclusion::conclude(&workload, &as_is, &outcomes[1..]),
        outcomes,
        not_tried: not_tried(allowed, variants.is_empty()),
        traced,
    };
    let text = match args.format {
        Format::Text => report.to_text(),
        Format::Markdown => report.to_markdown(),
        Format::Json => report.to_json(),
    };
    write_results(output.take(), &text)
}

/// What this run could not try, so the reader knows the conclusion's limits.
fn not_tried(allowed: Allowed, no_variants: bool) -> Vec<String> {
    if no_variants {
        return Vec::new();
    }
    let mut out = vec![
        "a custom slice (sched_attr.sched_runtime, kernel 6.12 and later): schedlab has no \
         knob for it yet"
            .to_string(),
    ];
    if !allowed.cgroups {
        out.push("own-cgroup: needs root and a writable cpu controller".into());
    }
    if !allowed.autogroup {
        out.push("own-session: autogroup is off, so a session of its own changes nothing".into());
    }
    out
}

/// The workload furthest from its due as it is (on a log scale), among those due enough for
/// a ratio.
fn furthest(sc: &Scenario, repeats: &[Vec<Frame>], settle: f64) -> Option<String> {
    sc.workloads
        .iter()
        .filter_map(|w| {
            let fs: Vec<RepeatFigures> = repeats
                .iter()
                .filter_map(|f| conclusion::repeat_figures(f, &w.name, settle))
                .collect();
            let mean = fs.iter().map(|f| f.received / f.due).sum::<f64>() / fs.len() as f64;
            (!fs.is_empty()).then(|| (w.name.clone(), mean.ln().abs()))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(name, _)| name)
}

/// Runs rows of repeats one after the other on one progress bar.
struct Runner {
    repeats: u32,
    duration: f64,
    progress: ProgressBar,
    /// Seconds run so far.
    done: f64,
    host: Option<Host>,
}

impl Runner {
    /// Sizes the bar for `rows` rows in all (those run so far included).
    fn set_rows(&self, rows: f64) {
        let total = rows * self.repeats as f64 * self.duration;
        self.progress.set_length((total * 10.0).round() as u64);
    }

    /// Every repeat of one row; each repeat's Frames.
    fn rows(&mut self, label: &str, sc: &Scenario) -> Result<Vec<Vec<Frame>>> {
        let mut out = Vec::new();
        for r in 1..=self.repeats {
            self.progress
                .set_message(format!("{label}, repeat {r}/{}", self.repeats));
            out.push(self.one(label, sc, r, None)?);
        }
        Ok(out)
    }

    fn one(
        &mut self,
        label: &str,
        sc: &Scenario,
        repeat: u32,
        on_sample: Option<&dyn Fn(&Sample)>,
    ) -> Result<Vec<Frame>> {
        let plan = Plan {
            scenario: sc,
            limit: Some(self.duration),
            sampler: SamplerPriority::Realtime,
            progress_from: (self.done * 10.0) as u64,
            on_sample,
            serve: None,
        };
        let (frames, _) = run_once(
            &plan,
            repeat,
            &mut None,
            None,
            &self.progress,
            &mut self.host,
        )
        .with_context(|| format!("{label}, repeat {repeat}"))?;
        self.done += self.duration;
        Ok(frames)
    }

    /// One more run as it is, with the kernel's scheduler events recorded from `settle` on
    /// (when the figures count), and its throughput against the untraced runs'.
    fn traced(&mut self, sc: &Scenario, settle: f64, untraced: &[Vec<Frame>]) -> Result<TracedRun> {
        self.progress
            .set_message("as it is, with the kernel's events recorded");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let tracer = Tracer::open(cpus);
        let first = Cell::new(None::<u64>);
        let see = |s: &Sample| {
            let Ok(t) = &tracer else { return };
            // Frame times count from the session's start, when the Sample says it.
            let t0 = match s.epoch_ns {
                0 => first.get().unwrap_or(s.t_ns),
                epoch => epoch,
            };
            first.set(Some(t0));
            t.set_workloads(s.workloads.iter().map(|w| (w.pgid, w.name.clone())));
            if s.t_ns.saturating_sub(t0) as f64 / 1e9 >= settle {
                t.go();
            }
        };
        let frames = self.one("as it is, traced", sc, self.repeats + 1, Some(&see))?;
        let (evidence, missing): (Option<Evidence>, Option<String>) = match tracer {
            Ok(t) => match t.finish() {
                Some(e) if e.seconds > 0.0 => (Some(e), None),
                Some(_) => (
                    None,
                    Some("the run ended before its figures settled".into()),
                ),
                None => (None, Some("the recording thread failed".into())),
            },
            Err(why) => (None, Some(why)),
        };
        let cost = if evidence.is_some() {
            sc.workloads
                .iter()
                .filter_map(|w| {
                    let rate = |f: &[Frame]| mean_rate(f, &w.name, settle);
                    let runs: Vec<(f64, String)> =
                        untraced.iter().filter_map(|f| rate(f)).collect();
                    let (traced, unit) = rate(&frames)?;
                    (!runs.is_empty()).then(|| TracingCost {
                        workload: w.name.clone(),
                        ops_unit: unit,
                        untraced: runs.iter().map(|r| r.0).sum::<f64>() / runs.len() as f64,
                        traced,
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(TracedRun {
            missing,
            evidence,
            cost,
        })
    }
}

/// A workload's mean throughput over the Frames from `settle` on, and its unit; None when it
/// counts nothing.
fn mean_rate(frames: &[Frame], workload: &str, settle: f64) -> Option<(f64, String)> {
    let rows = conclusion::settled_rows(frames, workload, settle);
    let unit = rows.first()?.ops_unit.clone();
    let mean = rows.iter().map(|w| w.ops_per_sec).sum::<f64>() / rows.len() as f64;
    (mean > 0.0).then_some((mean, unit))
}
