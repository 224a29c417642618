//! contest: time a reference job alone and under each load, as Con Kolivas's contest (2002)
//! did; docs/workloads.md has its columns.
//!
//! The job (the built-in ref-job standing in for `make -j4 bzImage`, or any command) runs
//! first with no load, then once per load named: the load starts `--lead` seconds before the
//! job and is stopped when the job ends. A load is a workload of the Lab, which the engine
//! ticks on a thread of its own (as the dashboard's) every 10 s only, so that sampling costs the
//! job nothing that matters, and once more, on request, the moment the job ends: the load's
//! count, CPU and autogroup are that Sample's. The job is started and waited for here, so that
//! its time is exact, not a tick's. The table has contest's columns: the job's elapsed
//! time and CPU% (as `time` reports them), the load's work count and CPU%, and the Ratio of
//! the job's time under the load to its time alone. Where the load sits (the job's session or
//! its own, its nice value) decides what its fair share is, so the report says so.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::engine::lab::{Lab, MAX_INTERVAL};
use crate::engine::thread::Engine;
use crate::engine::{Command, Event};
use crate::knobs::{Knobs, Placement, NICE};
use crate::probe::{Life, Sample, WorkloadSample};
use crate::scenario::WorkloadDecl;
use crate::supervisor::{self, LaunchSpec, Program};
use crate::workload::refjob::children_cpu;
use crate::workload::registry::params::{refused, REF_JOB};
use crate::workload::registry::{self, WorkloadKind};

/// Arguments of `schedlab contest`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    #[arg(long = "load", value_name = "NAME", help = load_help())]
    pub loads: Vec<String>,
    /// Runs of the job per load, averaged.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Any command as the job, run with `sh -c` in its own process group.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["jobs", "work"])]
    pub job: Option<String>,
    /// The built-in reference job's workers: ref-job's `jobs`, as the registry declares it.
    #[arg(
        long,
        default_value_t = REF_JOB.param("jobs").default_count(),
        help = REF_JOB.param("jobs").cli_help()
    )]
    pub jobs: u32,
    /// The built-in reference job's work: ref-job's `work`.
    #[arg(
        long,
        default_value_t = REF_JOB.param("work").default_amount(),
        help = REF_JOB.param("work").cli_help()
    )]
    pub work: f64,
    /// Seconds each load runs before the job starts.
    #[arg(long, default_value_t = 3.0)]
    pub lead: f64,
    /// Nice value of the loads (-20..19; below 0 needs root). The job runs at nice 0.
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(i32)
        .range(i64::from(*NICE.start())..=i64::from(*NICE.end())))]
    pub nice: Option<i32>,
    /// Start each load in a session of its own (setsid), so in its own autogroup when
    /// autogroup is on; by default loads share the job's session.
    #[arg(long)]
    pub own_session: bool,
}

/// A load contest knows by name (the registry's contest loads).
pub(crate) fn load_kind(name: &str) -> Result<WorkloadKind> {
    registry::contest_load(name).ok_or_else(|| {
        let names = load_names();
        let (last, rest) = names.split_last().expect("contest has loads");
        refused(format!(
            "unknown load {name:?}: use {} or {last}",
            rest.join(", ")
        ))
    })
}

/// The loads' names, from the registry.
fn load_names() -> Vec<&'static str> {
    registry::contest_loads().map(|w| w.label()).collect()
}

/// `--load`'s help: the names, from the registry.
fn load_help() -> String {
    let names = load_names();
    format!(
        "A load to run the job under (repeatable): {}. The job always runs with no load first",
        names.join(", ")
    )
}

/// One row of the table, averaged over its runs.
#[derive(Clone, Debug)]
pub struct Row {
    pub load: String,
    pub runs: u32,
    pub time: f64,
    pub cpu_percent: f64,
    pub loads: u64,
    pub load_cpu_percent: f64,
    /// The autogroup the load ran in, when readable.
    pub autogroup: Option<u64>,
}

/// Process groups of the job to kill if contest is interrupted (a `sh -c` job's children
/// ignore the lifeline that reaches the shell); the engine's exit hook kills the loads.
static GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn track(pgid: u32) {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner()).push(pgid);
}

fn untrack(pgid: u32) {
    GROUPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&g| g != pgid);
}

fn kill_tracked() {
    let groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    crate::sys::exit::groups::kill_and_sweep(&groups, std::time::Duration::from_millis(1500));
}

pub fn main(args: Args) -> Result<()> {
    let kinds = args
        .loads
        .iter()
        .filter(|n| n.as_str() != "noload")
        .map(|n| Ok((n.clone(), load_kind(n)?)))
        .collect::<Result<Vec<_>>>()?;
    if !(args.lead.is_finite() && args.lead >= 0.0) {
        return Err(refused(format!(
            "--lead must be a number of seconds, not {}",
            args.lead
        )));
    }
    let job = match &args.job {
        Some(cmd) => Program::Command(vec!["sh".into(), "-c".into(), cmd.clone()]),
        None => {
            REF_JOB
                .param("jobs")
                .check_count(i64::from(args.jobs))
                .map_err(refused)?;
            REF_JOB
                .param("work")
                .check_amount(args.work)
                .map_err(refused)?;
            crate::workload::refjob::units_for(args.work)?;
            WorkloadKind::RefJob {
                jobs: args.jobs,
                work: args.work,
                runs: None,
            }
            .program()
        }
    };
    crate::sys::exit::lifeline::on_exit(kill_tracked);
    crate::engine::live_groups::install_exit_hook();

    let job_text = match &args.job {
        Some(cmd) => format!("`{cmd}`"),
        None => format!("schedlab ref-job -j{} --work {}", args.jobs, args.work),
    };
    crate::outln!("Job: {job_text} (own process group in contest's session, nice 0)");
    crate::outln!(
        "Loads: {}, nice {}; each started {} s before the job and stopped when it ends",
        if args.own_session {
            "in a session of their own (setsid: own autogroup)"
        } else {
            "in the job's session (shared autogroup)"
        },
        args.nice.unwrap_or(0),
        args.lead
    );
    crate::outln!("Autogroup: {}", autogroup_state());
    crate::outln!(
        "CPUs: {}. Loads counts: fork-load children forked, hackbench/chat messages, \
         ping-pong round trips, cpu-hog loops, wakeup-probe wakeups (from the load's start)",
        supervisor::usable_cpus()
    );
    crate::outln!();
    crate::outln!(
        "{:<14} {:>6} {:>8} {:>6} {:>12} {:>6} {:>6}",
        "Load",
        "[runs]",
        "Time",
        "CPU%",
        "Loads",
        "LCPU%",
        "Ratio"
    );

    let alone = measure("noload", None, &job, &args)?;
    print_row(&alone, alone.time);
    let mut rows = Vec::new();
    for (name, kind) in &kinds {
        let row = measure(name, Some(kind), &job, &args)?;
        print_row(&row, alone.time);
        rows.push(row);
    }
    // Show where each ran, so the placement line above can be checked.
    let own = crate::sys::kernel::proc::own_file("autogroup")
        .and_then(|text| crate::probe::parse::autogroup(&text))
        .map(|(id, _)| id);
    if let Some(own) = own {
        let mut line = format!(
            "Autogroups: the job's (contest's session) {}",
            autogroup_name(own)
        );
        for row in &rows {
            if let Some(id) = row.autogroup {
                line += &format!(", {} {}", row.load, autogroup_name(id));
            }
        }
        crate::outln!("{line}");
    }
    Ok(())
}

/// An autogroup id as the kernel numbers them; 0 is the root one (a session never made by
/// setsid), whose tasks compete one by one.
fn autogroup_name(id: u64) -> String {
    if id == crate::probe::parse::ROOT_AUTOGROUP {
        "root".into()
    } else {
        id.to_string()
    }
}

fn autogroup_state() -> String {
    match crate::sys::kernel::proc::sysctl_on("kernel.sched_autogroup_enabled") {
        Some(true) => {
            "on (kernel.sched_autogroup_enabled = 1): fair share is split per session first".into()
        }
        Some(false) => "off (kernel.sched_autogroup_enabled = 0): fair share is per task".into(),
        None => "not in this kernel: fair share is per task".into(),
    }
}

fn print_row(row: &Row, alone: f64) {
    crate::outln!(
        "{:<14} {:>6} {:>8.2} {:>5.0}% {:>12} {:>5.0}% {:>6.2}",
        row.load,
        format!("[{}]", row.runs),
        row.time,
        row.cpu_percent,
        row.loads,
        row.load_cpu_percent,
        row.time / alone
    );
}

/// Runs the job `runs` times under `load` (or none) and averages.
fn measure(name: &str, load: Option<&WorkloadKind>, job: &Program, args: &Args) -> Result<Row> {
    let mut row = Row {
        load: name.into(),
        runs: args.runs,
        time: 0.0,
        cpu_percent: 0.0,
        loads: 0,
        load_cpu_percent: 0.0,
        autogroup: None,
    };
    for _ in 0..args.runs {
        let running = match load {
            Some(kind) => Some(Load::start(name, kind, args)?),
            None => None,
        };
        let (time, cpu) = match run_job(job) {
            Ok(t) => t,
            Err(e) => {
                if let Some(l) = running {
                    l.stop();
                }
                return Err(e);
            }
        };
        row.time += time.as_secs_f64();
        row.cpu_percent += 100.0 * cpu.as_secs_f64() / time.as_secs_f64().max(1e-9);
        if let Some(l) = running {
            let seen = l.stop();
            row.autogroup = seen.autogroup;
            row.loads += seen.count;
            row.load_cpu_percent +=
                100.0 * seen.cpu.as_secs_f64() / seen.ran.as_secs_f64().max(1e-9);
        }
    }
    let n = args.runs as f64;
    row.time /= n;
    row.cpu_percent /= n;
    row.loads = (row.loads as f64 / n).round() as u64;
    row.load_cpu_percent /= n;
    Ok(row)
}

/// A load as the engine runs it: a Lab of one workload, on a thread of its own.
struct Load {
    commands: Sender<Command>,
    samples: Receiver<Arc<Sample>>,
    engine: std::thread::JoinHandle<()>,
}

/// What the last Sample of a load saw.
#[derive(Default)]
struct Seen {
    /// Its own count since it started.
    count: u64,
    /// CPU used by every process of its group, with the children each reaped.
    cpu: Duration,
    /// How long it had run when sampled.
    ran: Duration,
    autogroup: Option<u64>,
}

impl Load {
    /// Starts it, and waits the lead time, watching that it did not die at once (a bad build,
    /// a subcommand this binary lacks).
    fn start(name: &str, kind: &WorkloadKind, args: &Args) -> Result<Load> {
        let mut lab = Lab::new(MAX_INTERVAL)?;
        lab.add(WorkloadDecl {
            name: name.into(),
            kind: kind.clone(),
            knobs: Knobs {
                nice: args.nice.unwrap_or(0),
                placement: if args.own_session {
                    Placement::OwnSession
                } else {
                    Placement::Shared
                },
                ..Knobs::default()
            },
            start_delay: 0.0,
            duration: None,
        })
        .context("starting the load")?;
        let (commands, rx) = mpsc::channel();
        let (samples_tx, samples) = mpsc::channel();
        let engine = std::thread::Builder::new()
            .name("contest-engine".into())
            .spawn(move || {
                Engine::new(Box::new(lab), MAX_INTERVAL)
                    .with_samples()
                    .run(rx, |event| match event {
                        Event::Sample(s) => samples_tx.send(s).is_ok(),
                        _ => true,
                    })
            })
            .context("starting the engine thread")?;
        let load = Load {
            commands,
            samples,
            engine,
        };
        let deadline = Instant::now() + Duration::from_secs_f64(args.lead.max(0.2));
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            let life = load.now().map(|(w, _)| w.life);
            if let Some(Life::Done(_) | Life::Failed(_)) = life {
                load.stop();
                bail!(
                    "load {name} exited before the job started ({}): try `schedlab {}` by hand",
                    match life {
                        Some(Life::Done(code)) => format!("exit status: {code}"),
                        Some(Life::Failed(why)) => why,
                        _ => unreachable!(),
                    },
                    match kind.program() {
                        Program::SelfExe(a) => a.join(" "),
                        Program::Command(a) => a.join(" "),
                    }
                );
            }
        }
        Ok(load)
    }

    /// The load as a Sample taken now shows it, and how long it had run then (the Lab
    /// started it as it started).
    fn now(&self) -> Option<(WorkloadSample, Duration)> {
        while self.samples.try_recv().is_ok() {}
        self.commands.send(Command::Tick).ok()?;
        let sample = self.samples.recv_timeout(Duration::from_secs(10)).ok()?;
        let ran = Duration::from_nanos(sample.t_ns.saturating_sub(sample.epoch_ns));
        Some((sample.workloads.first()?.clone(), ran))
    }

    /// Reads it one last time (before stopping: a load killed outright may die before reaping
    /// its children, whose CPU would then reach no one's cutime), then stops it (SIGTERM to
    /// its group, then SIGKILL).
    fn stop(self) -> Seen {
        let seen = self.now().map_or_else(Seen::default, |(w, ran)| {
            let ticks: u64 = w
                .processes
                .iter()
                .map(|p| p.cpu_ticks + p.child_ticks)
                .sum();
            Seen {
                count: w.ops.unwrap_or(0),
                cpu: Duration::from_nanos(ticks * crate::probe::parse::NS_PER_TICK),
                ran,
                autogroup: w
                    .processes
                    .iter()
                    .find(|p| p.pid == w.leader)
                    .and_then(|p| p.autogroup)
                    .map(|(id, _)| id),
            }
        });
        let _ = self.commands.send(Command::Quit);
        let _ = self.engine.join();
        seen
    }
}

/// Runs the job once; returns its elapsed time and the CPU time it and its children used.
fn run_job(job: &Program) -> Result<(Duration, Duration)> {
    let spec = LaunchSpec {
        name: "job".into(),
        program: job.clone(),
        knobs: Knobs::default(),
        capture_output: false,
    };
    let before = children_cpu();
    let start = Instant::now();
    let mut running = supervisor::spawn(&spec).context("starting the job")?;
    track(running.pgid());
    let status = running.wait();
    let elapsed = start.elapsed();
    untrack(running.pgid());
    let status = status?;
    if !status.success() {
        let what = match job {
            Program::SelfExe(a) => format!("schedlab {}", a.join(" ")),
            Program::Command(a) => a.last().cloned().unwrap_or_default(),
        };
        bail!("the job `{what}` failed ({status})");
    }
    Ok((elapsed, children_cpu().saturating_sub(before)))
}
