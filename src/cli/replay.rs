//! `schedlab replay`: a recording played back in the dashboard, or printed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::engine::replay::ReplayBackend;
use crate::engine::Backend;
use crate::model::stats::num;
use crate::record::recording::Replay;

/// Arguments of `schedlab replay`.
#[derive(clap::Args, Debug)]
pub(crate) struct ReplayArgs {
    /// A recording made with `schedlab run --record FILE`.
    pub recording: PathBuf,
    /// Print the frames instead of opening the dashboard: a table, CSV (one row per workload
    /// per interval), or JSON lines (one Frame per line). The default when standard output
    /// is not a terminal is text.
    #[arg(long, value_enum)]
    pub format: Option<ReplayFormat>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplayFormat {
    Text,
    Csv,
    Json,
}

/// Opens the dashboard on the recording (on a terminal), or prints its Frames; either way
/// they come from the same model code a live run uses.
pub(crate) fn replay_main(args: ReplayArgs) -> Result<()> {
    use std::io::IsTerminal;
    let format = match args.format {
        Some(f) => f,
        None if std::io::stdout().is_terminal() => return dashboard(&args.recording),
        None => ReplayFormat::Text,
    };
    let replay = Replay::open(&args.recording)?;
    match format {
        ReplayFormat::Text => crate::out!("{}", replay_text(&replay)),
        ReplayFormat::Csv => crate::out!("{}", frames_csv(replay.frames())),
        ReplayFormat::Json => {
            for f in replay.frames() {
                crate::outln!("{}", serde_json::to_string(f)?);
            }
        }
    }
    Ok(())
}

/// Opens the dashboard on a recording.
pub fn dashboard(path: &Path) -> Result<()> {
    let replay = Replay::open(path)?;
    let mut scenario = replay.header().scenario.clone();
    // The header line says it is a replay, and of which run.
    scenario.name = format!(
        "replay of {}{}",
        scenario.name,
        if replay.complete() {
            ""
        } else {
            " (cut short)"
        }
    );
    let interval = Duration::from_millis(scenario.interval_ms);
    crate::ui::run(
        scenario,
        interval,
        crate::ui::Source::Local {
            make_backend: Box::new(move |_| {
                Ok(Box::new(ReplayBackend::new(replay)) as Box<dyn Backend>)
            }),
            serve: None,
        },
    )
}

/// The time series as CSV, one row per workload per interval, for a spreadsheet; the last
/// columns are the interval's latency (its first unit; empty when it times nothing).
pub(crate) fn frames_csv(frames: &[crate::model::Frame]) -> String {
    let mut out = String::from(
        "t,interval,workload,ops_per_sec,ops_unit,cpu_received,cpu_demand,cpu_fair,fairness_ratio,\
         voluntary_cs_per_sec,involuntary_cs_per_sec,runq_wait_pct,tasks,\
         latency_unit,latency_samples,latency_available,p50_us,p99_us,p999_us,mean_us\n",
    );
    for f in frames {
        for w in &f.workloads {
            let name = if w.name.contains([',', '"', '\n']) {
                format!("\"{}\"", w.name.replace('"', "\"\""))
            } else {
                w.name.clone()
            };
            let latency = w.latency.as_ref().map_or(",,,,,,".to_owned(), |l| {
                format!(
                    "{},{},{},{},{},{},{}",
                    l.unit, l.samples, l.available, l.p50_us, l.p99_us, l.p999_us, l.mean_us
                )
            });
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{latency}",
                f.t,
                f.interval,
                name,
                w.ops_per_sec,
                w.ops_unit,
                w.cpu_received,
                w.cpu_demand,
                w.cpu_fair,
                w.fairness_ratio,
                w.voluntary_cs_per_sec,
                w.involuntary_cs_per_sec,
                w.runq_wait_pct,
                w.tasks
            );
        }
    }
    out
}

/// A header line, then one line per workload per Frame.
pub(crate) fn replay_text(replay: &Replay) -> String {
    let h = replay.header();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "recording of {} by schedlab {}: kernel {}, {} CPUs, autogroup {}, {} intervals, {:.1} s{}",
        h.scenario.name,
        h.schedlab_version,
        h.kernel,
        h.cpus,
        if h.autogroup { "on" } else { "off" },
        replay.len(),
        replay.duration(),
        if replay.complete() {
            ""
        } else {
            " (cut short: no end line)"
        }
    );
    let _ = writeln!(
        out,
        "{:>8}  {:<16} {:>12} {:>8} {:>8} {:>7} {:>11} {:>8} {:>9}",
        "t (s)", "workload", "ops/s", "CPU", "fair", "ratio", "switches/s", "wait %", "p99 µs"
    );
    for f in replay.frames() {
        for w in &f.workloads {
            let p99 = match &w.latency {
                Some(l) if !l.available => "n/a".to_owned(),
                Some(l) if l.samples > 0 => num(l.p99_us),
                _ => "-".to_owned(),
            };
            let _ = writeln!(
                out,
                "{:>8.2}  {:<16} {:>12} {:>8} {:>8} {:>7} {:>11} {:>8} {:>9}",
                f.t,
                w.name,
                format!("{} {}", num(w.ops_per_sec), w.ops_unit),
                num(w.cpu_received),
                num(w.cpu_fair),
                num(w.fairness_ratio),
                num(w.voluntary_cs_per_sec + w.involuntary_cs_per_sec),
                num(w.runq_wait_pct),
                p99
            );
        }
    }
    out
}
