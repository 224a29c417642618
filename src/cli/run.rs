//! `schedlab run SCENARIO`: runs a scenario without the dashboard, N times, and prints per
//! workload and metric the mean, spread, 95% confidence interval and coefficient of variation,
//! warning when a figure is too noisy to trust, and the same for each workload's latency
//! percentiles, from its histograms merged over each repeat. Optionally records raw Samples
//! and serves live metrics while it runs.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::lab::Lab;
use crate::engine::thread::Engine;
use crate::engine::Event;
use crate::model::Frame;
use crate::probe::{Life, Sample, WorkloadSample};
use crate::record::atomic::AtomicFile;
use crate::record::latency::RepeatLatency;
use crate::record::machine;
use crate::record::metrics::MetricsServer;
use crate::record::recording::{Header, RecordingWriter};
use crate::record::results::{Host, RunResults, ScenarioInfo};
use crate::scenario::Scenario;
use crate::sys::kernel::priority::SamplerPriority;

/// Arguments of `schedlab run`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Example, the ten chat_c runs of the 2002 chatroom benchmark thread, with their \
    standard deviation:\n  \
    schedlab run assets/scenarios/chat-30x1000.toml --repeat 10 --format json"
)]
pub struct Args {
    /// A scenario file (TOML), or the name of a preset in assets/scenarios (e.g. chat-30x1000);
    /// may be left out when --attach names what to watch.
    #[arg(required_unless_present = "attach")]
    pub scenario: Option<String>,
    #[command(flatten)]
    pub lab: crate::cli::lab_args::LabArgs,
    /// How long each repeat lasts (e.g. 30, 30s, 500ms, 2m); overrides the scenario's duration.
    #[arg(long, value_parser = parse_duration, allow_negative_numbers = true)]
    pub duration: Option<f64>,
    /// How many times to run the scenario; statistics are across repeats.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub repeat: u32,
    /// Output format: a table, the JSON results schema (docs/results-schema.md), CSV of the
    /// statistics (a row per workload and metric), or CSV of every repeat's value
    /// (csv-repeats: a row per workload, metric and repeat; docs/headless.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the results to FILE (whole or not at all) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Record the raw samples to FILE (JSON lines), for `schedlab replay` and `schedlab plot`.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Serve live per-workload metrics (OpenMetrics) over HTTP at ADDR (HOST:PORT, or a port
    /// on loopback).
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<String>,
    /// Serve the run live, read-only, for `schedlab tui --connect` elsewhere: HOST:PORT, or a
    /// port on loopback (off loopback with a token: --token-file, or one is printed).
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<String>,
    /// The token clients of --serve must present, from the file's first line.
    #[arg(long, value_name = "FILE", requires = "serve")]
    pub token_file: Option<PathBuf>,
    /// When the run ends, send SIGTERM to the processes it watched but did not start
    /// (--attach, attach workloads): without it, schedlab never signals them.
    #[arg(long)]
    pub kill_attached: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    /// One row per workload and metric: the statistics across repeats.
    Csv,
    /// One row per workload, metric and repeat, with scenario, kernel and host columns.
    CsvRepeats,
}

/// Seconds from `30`, `30s`, `1.5s`, `500ms`, `2m`.
pub(crate) fn parse_duration(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x * scale),
        Ok(_) => Err(format!("`{s}` must be a positive duration")),
        Err(_) => Err(format!("`{s}` is not a duration (e.g. 30, 30s, 500ms, 2m)")),
    }
}

/// A scenario file, or a preset by name ([`Scenario::open`], as `tui` takes it too).
pub fn load_scenario(arg: &str) -> Result<(Scenario, Option<String>)> {
    Scenario::open(arg)
}

/// The TOML a scenario argument names: the file's text, or the preset's.
fn scenario_text(arg: &str) -> Option<String> {
    let path = std::path::Path::new(arg);
    if path.exists() {
        return std::fs::read_to_string(path).ok();
    }
    let stem = arg.strip_suffix(".toml").unwrap_or(arg);
    crate::scenario::PRESETS
        .iter()
        .find(|(n, _)| *n == stem)
        .map(|(_, src)| (*src).to_owned())
}

/// How long each repeat may last: the flag, the scenario's, or until its workloads end.
fn repeat_limit(sc: &Scenario, flag: Option<f64>) -> Result<Option<f64>> {
    let limit = flag.or(sc.duration);
    if limit.is_none() {
        if let Some(w) = sc
            .workloads
            .iter()
            .find(|w| w.duration.is_none() && !w.kind.ends_by_itself())
        {
            bail!(
                "scenario {} has no duration and workload {} runs until stopped: give --duration",
                sc.name,
                w.name
            );
        }
    }
    Ok(limit)
}

pub fn main(args: Args) -> Result<()> {
    let (mut scenario, file) = match &args.scenario {
        Some(arg) => load_scenario(arg)?,
        None => (Scenario::attached_only(), None),
    };
    args.lab.apply(&mut scenario)?;
    let limit = repeat_limit(&scenario, args.duration)?;
    let attached: Vec<(String, crate::probe::Selector)> = scenario
        .workloads
        .iter()
        .filter_map(|w| w.kind.selector()?.ok().map(|s| (w.name.clone(), s)))
        .collect();
    if args.kill_attached && attached.is_empty() {
        return Err(crate::cli::ArgumentError(
            "--kill-attached needs something attached (--attach, or a kind = \"attach\" workload)"
                .into(),
        )
        .into());
    }

    // A signal or a panic kills the workloads and sweeps what they made before we exit.
    crate::engine::live_groups::install_exit_hook();
    // Everything that can fail on the user's input fails before any workload starts.
    let mut output = output_file(args.output.as_deref())?;
    let metrics = args
        .metrics_addr
        .as_deref()
        .map(|a| MetricsServer::start(a, &scenario.name))
        .transpose()?;
    if let Some(m) = &metrics {
        crate::errln!("schedlab run: metrics at http://{}/metrics", m.local_addr());
    }
    // Served read-only: a run's workloads are its scenario's, and its repeats its own.
    let server = match &args.serve {
        Some(addr) => {
            let (config, said) = crate::cli::serve::ServeArgs {
                allow_control: false,
                token_file: args.token_file.clone(),
                max_clients: crate::serve::server::DEFAULT_MAX_CLIENTS as u16,
            }
            .config(addr, true)?;
            let welcome = crate::serve::welcome_here(&scenario.name, scenario.interval_ms);
            let (commands, _) = mpsc::channel();
            let s = crate::serve::Server::start(config, welcome, commands)?;
            crate::errln!(
                "schedlab run: serving on {} (read-only); watch with `schedlab tui --connect {}`",
                s.local_addr(),
                s.local_addr()
            );
            for line in said {
                crate::errln!("schedlab run: {line}");
            }
            Some(s)
        }
        None => None,
    };
    let mut recording = args
        .record
        .as_deref()
        .map(RecordingWriter::create)
        .transpose()?;

    let started = machine::now_utc();
    let content = args.scenario.as_deref().and_then(scenario_text);
    let progress = progress_bar(limit);
    let mut repeats = Vec::new();
    let mut latencies = Vec::new();
    let mut host = None;
    let mut ran = || -> Result<()> {
        for k in 1..=args.repeat {
            progress.set_message(format!("{} repeat {k}/{}", scenario.name, args.repeat));
            progress.set_position(0);
            let (frames, latency) = run_once(
                &Plan {
                    scenario: &scenario,
                    limit,
                    sampler: args.lab.sampler_priority,
                    progress_from: 0,
                    on_sample: None,
                    serve: server.as_ref(),
                },
                k,
                &mut recording,
                metrics.as_ref(),
                &progress,
                &mut host,
            )
            .with_context(|| format!("repeat {k}"))?;
            repeats.push(frames);
            latencies.push(latency);
        }
        Ok(())
    };
    let outcome = ran();
    progress.finish_and_clear();
    if let Err(e) = outcome {
        if let Some(r) = recording {
            if r.samples() == 0 {
                r.abandon();
            }
            // Otherwise it stays, without its end line: the reader says it was cut short.
        }
        return Err(e);
    }
    if let Some(r) = recording {
        r.finish()?;
    }

    let mut results = results_of(&scenario, file, limit, host, &repeats, &latencies);
    results.provenance.started_utc = Some(started);
    results.provenance.command_line = Some(machine::command_line());
    results.scenario.content = content;
    let text = match args.format {
        Format::Text => results.to_text(),
        Format::Json => results.to_json(),
        Format::Csv => results.to_csv(),
        Format::CsvRepeats => results.to_csv_repeats(),
    };
    write_results(output.take(), &text)?;
    if args.kill_attached {
        // Asked for on the command line: the one way `run` signals what it did not start.
        for (name, sel) in &attached {
            let n = crate::engine::lab::kill_matching(sel);
            let s = if n == 1 { "" } else { "es" };
            crate::errln!("schedlab run: {name}: sent SIGTERM to {n} process{s} (--kill-attached)");
        }
    }
    Ok(())
}

/// The run's results from every repeat's Frames and latency.
pub(crate) fn results_of(
    scenario: &Scenario,
    file: Option<String>,
    limit: Option<f64>,
    host: Option<Host>,
    repeats: &[Vec<Frame>],
    latencies: &[RepeatLatency],
) -> RunResults {
    let workloads: Vec<(String, String, String)> = scenario
        .workloads
        .iter()
        .map(|w| {
            (
                w.name.clone(),
                w.kind.label().to_owned(),
                w.kind.ops_unit().to_owned(),
            )
        })
        .collect();
    let info = ScenarioInfo {
        name: scenario.name.clone(),
        file,
        interval_ms: scenario.interval_ms,
        duration_s: limit,
        content: None,
    };
    let mut results = RunResults::from_repeats(
        host.unwrap_or_else(|| Host::here(crate::supervisor::usable_cpus(), false)),
        info,
        &workloads,
        repeats,
    );
    results.add_latency(latencies);
    results
}

/// The file `-o` names, written whole or not at all; a signal's exit through the lifeline takes
/// the half-written temporary file with it.
pub(crate) fn output_file(path: Option<&std::path::Path>) -> Result<Option<AtomicFile>> {
    let output = path.map(AtomicFile::create).transpose()?;
    if let Some(out) = &output {
        let tmp = out.tmp_path().to_owned();
        crate::sys::exit::lifeline::on_exit(move || {
            let _ = std::fs::remove_file(&tmp);
        });
    }
    Ok(output)
}

/// Writes the results to the output file (whole, or not at all) or to stdout.
pub(crate) fn write_results(output: Option<AtomicFile>, text: &str) -> Result<()> {
    match output {
        Some(mut out) => {
            use std::io::Write;
            out.file()
                .write_all(text.as_bytes())
                .context("cannot write the results")?;
            out.commit()?;
        }
        None => crate::out!("{text}"),
    }
    Ok(())
}

fn progress_bar(limit: Option<f64>) -> ProgressBar {
    // A bar only for a person watching: none when stderr is piped or redirected.
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    match limit {
        Some(secs) => {
            let pb = ProgressBar::new((secs * 10.0).round() as u64);
            pb.set_style(
                ProgressStyle::with_template("{msg} [{bar:30}] {done} of {len}")
                    .map(|s| {
                        // Positions are tenths of a second of the current repeat.
                        let secs = |v: u64, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{:.0}s", v as f64 / 10.0);
                        };
                        s.with_key(
                            "done",
                            move |st: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                                secs(st.pos(), w)
                            },
                        )
                        .with_key(
                            "len",
                            move |st: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                                secs(st.len().unwrap_or(0), w)
                            },
                        )
                    })
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            pb
        }
        None => {
            let pb = ProgressBar::new_spinner();
            pb.enable_steady_tick(Duration::from_millis(200));
            pb
        }
    }
}

/// A failed workload's own words for the run's error line: its last stderr line, after its
/// earlier ones (printed here, each under its name) so that the run's own line stays last.
fn said(w: &WorkloadSample) -> String {
    let Some((last, earlier)) = w.stderr.split_last() else {
        return String::new();
    };
    for line in earlier {
        crate::errln!("  {}: {line}", w.name);
    }
    format!(": {last}")
}

/// What every repeat runs, and how.
pub(crate) struct Plan<'a> {
    pub scenario: &'a Scenario,
    /// Seconds a repeat may last.
    pub limit: Option<f64>,
    pub sampler: SamplerPriority,
    /// Where the progress bar stands when it starts, in tenths of a second (a suite's bar
    /// covers all its runs).
    pub progress_from: u64,
    /// Sees every Sample as it comes (explain's tracer learns the workloads' groups from it).
    pub on_sample: Option<&'a dyn Fn(&Sample)>,
    /// Serves every Event as it comes (`run --serve`).
    pub serve: Option<&'a crate::serve::Server>,
}

/// One repeat: starts the workloads, and has the engine tick them until the limit or until
/// they all ended. Returns its Frames and its latency histograms (which the Frames hold only
/// as percentiles).
pub(crate) fn run_once(
    plan: &Plan,
    repeat: u32,
    recording: &mut Option<RecordingWriter>,
    metrics: Option<&MetricsServer>,
    progress: &ProgressBar,
    host: &mut Option<Host>,
) -> Result<(Vec<Frame>, RepeatLatency)> {
    let sc = plan.scenario;
    let interval = Duration::from_millis(sc.interval_ms);
    let mut lab = Lab::new(interval)?;
    lab.set_sampler_priority(plan.sampler);
    if let Some(w) = sc.verdict_window {
        lab.set_verdict_window(w);
    }
    for d in &sc.workloads {
        let added = lab.add(d.clone());
        let id = added.context("cannot start a workload")?;
        // A dashboard watching the run learns its rows as from the engine's own Add.
        if let Some(s) = plan.serve {
            s.publish(&Event::Added(id, d.clone()));
        }
    }
    let mut repeat = Repeat {
        plan,
        number: repeat,
        recording,
        metrics,
        progress,
        host,
        start: Instant::now(),
        first: true,
        frames: Vec::new(),
        latency: RepeatLatency::default(),
        outcome: Ok(()),
    };
    // No commands: the sender is kept so that the engine waits for its grid, not for one.
    let (_commands, rx) = mpsc::channel();
    Engine::new(Box::new(lab), interval)
        .with_samples()
        .run(rx, |event| repeat.take(event));
    repeat.outcome?;
    Ok((repeat.frames, repeat.latency))
}

/// One repeat as the engine reports it: its Frames and Samples go to the results, the
/// recording and the metrics endpoint, until the limit or until every workload ended.
struct Repeat<'a, 'p> {
    plan: &'a Plan<'p>,
    number: u32,
    recording: &'a mut Option<RecordingWriter>,
    metrics: Option<&'a MetricsServer>,
    progress: &'a ProgressBar,
    host: &'a mut Option<Host>,
    start: Instant,
    /// The first tick is the baseline: recorded, and the host read from it, but no interval.
    first: bool,
    frames: Vec<Frame>,
    latency: RepeatLatency,
    outcome: Result<()>,
}

impl Repeat<'_, '_> {
    /// Takes one event; false when the repeat is over (or failed: `outcome` says why).
    fn take(&mut self, event: Event) -> bool {
        if let Some(s) = self.plan.serve {
            s.publish(&event);
        }
        let go_on = match event {
            Event::Frame(frame) => self.frame(frame),
            Event::Sample(sample) => self.sample(&sample),
            _ => Ok(true),
        };
        go_on.unwrap_or_else(|e| {
            self.outcome = Err(e);
            false
        })
    }

    fn frame(&mut self, frame: Frame) -> Result<bool> {
        if self.first {
            let h = self
                .host
                .get_or_insert_with(|| Host::here(frame.machine.cpus, frame.machine.autogroup));
            if let Some(rec) = self.recording.as_mut() {
                if self.number == 1 {
                    rec.header(&Header::of(self.plan.scenario, h.clone()))?;
                }
                rec.start_repeat(self.number)?;
            }
            return Ok(true);
        }
        if let Some(m) = self.metrics {
            m.publish(&frame);
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        self.progress
            .set_position(self.plan.progress_from + (elapsed * 10.0) as u64);
        self.frames.push(frame);
        Ok(true)
    }

    /// The Sample behind the Frame just taken: recorded, and its workloads' lives decide
    /// whether the repeat goes on.
    fn sample(&mut self, s: &Sample) -> Result<bool> {
        if let Some(see) = self.plan.on_sample {
            see(s);
        }
        self.latency.add(s);
        if let Some(rec) = self.recording.as_mut() {
            rec.sample(s)?;
        }
        if std::mem::take(&mut self.first) {
            return Ok(true);
        }
        if let Some(m) = self.metrics {
            m.publish_latency(s);
        }
        for w in &s.workloads {
            match &w.life {
                Life::Failed(why) => bail!("workload {}: {why}{}", w.name, said(w)),
                Life::Done(code) if *code != 0 => {
                    bail!("workload {} failed (exit code {code}){}", w.name, said(w))
                }
                _ => {}
            }
        }
        let all_ended = s
            .workloads
            .iter()
            .all(|w| matches!(w.life, Life::Done(_) | Life::Stopped));
        let elapsed = self.start.elapsed().as_secs_f64();
        Ok(!(all_ended || self.plan.limit.is_some_and(|l| elapsed >= l)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("30"), Ok(30.0));
        assert_eq!(parse_duration("1.5s"), Ok(1.5));
        assert_eq!(parse_duration("500ms"), Ok(0.5));
        assert_eq!(parse_duration("2m"), Ok(120.0));
        assert!(parse_duration("-3").unwrap_err().contains("positive"));
        assert!(parse_duration("soon")
            .unwrap_err()
            .contains("not a duration"));
    }

    #[test]
    fn an_endless_scenario_needs_a_duration() {
        let mut sc = Scenario::builtin_default();
        sc.duration = None;
        let e = repeat_limit(&sc, None).unwrap_err().to_string();
        assert!(
            e.contains("workload ref-job runs until stopped: give --duration"),
            "{e}"
        );
        assert_eq!(repeat_limit(&sc, Some(2.0)).unwrap(), Some(2.0));
    }

    #[test]
    fn presets_load_by_name() {
        let (sc, file) = load_scenario("chat-30x1000").unwrap();
        assert_eq!(sc.name, "chat-30x1000");
        assert_eq!(file.as_deref(), Some("assets/scenarios/chat-30x1000.toml"));
        assert!(load_scenario("nope")
            .unwrap_err()
            .to_string()
            .contains("presets: contest-fork-load"));
    }
}
