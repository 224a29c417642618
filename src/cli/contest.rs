//! contest: time a reference job alone and under each load, as Con Kolivas's contest (2002)
//! did; docs/workloads.md has its columns.
//!
//! The job (the built-in ref-job standing in for `make -j4 bzImage`, or any command) runs
//! first with no load, then once per load named: the load starts `--lead` seconds before the
//! job and is stopped when the job ends. The table has contest's columns: the job's elapsed
//! time and CPU% (as `time` reports them), the load's work count and CPU%, and the Ratio of
//! the job's time under the load to its time alone. Where the load sits (the job's session or
//! its own, its nice value) decides what its fair share is, so the report says so.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::probe::{Probe, ProbeConfig, Target};
use crate::supervisor::{self, Knobs, LaunchSpec, Placement, Program, Running, NICE};
use crate::workload::refjob::children_cpu;
use crate::workload::registry::params::REF_JOB;
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
pub fn load_kind(name: &str) -> Result<WorkloadKind> {
    registry::contest_load(name).ok_or_else(|| {
        let names = load_names();
        let (last, rest) = names.split_last().expect("contest has loads");
        anyhow::anyhow!("unknown load {name:?}: use {} or {last}", rest.join(", "))
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

/// Process groups to kill if contest is interrupted (a `sh -c` job's children ignore the
/// lifeline that reaches the shell).
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
    crate::sys::groups::kill_and_sweep(&groups, std::time::Duration::from_millis(1500));
}

pub fn main(args: Args) -> Result<()> {
    let kinds = args
        .loads
        .iter()
        .filter(|n| n.as_str() != "noload")
        .map(|n| Ok((n.clone(), load_kind(n)?)))
        .collect::<Result<Vec<_>>>()?;
    if !(args.lead.is_finite() && args.lead >= 0.0) {
        bail!("--lead must be a number of seconds, not {}", args.lead);
    }
    let job = match &args.job {
        Some(cmd) => Program::Command(vec!["sh".into(), "-c".into(), cmd.clone()]),
        None => {
            REF_JOB
                .param("jobs")
                .check_count(i64::from(args.jobs))
                .map_err(anyhow::Error::msg)?;
            REF_JOB
                .param("work")
                .check_amount(args.work)
                .map_err(anyhow::Error::msg)?;
            crate::workload::refjob::units_for(args.work)?;
            WorkloadKind::RefJob {
                jobs: args.jobs,
                work: args.work,
                runs: None,
            }
            .program()
        }
    };
    crate::sys::lifeline::on_exit(kill_tracked);

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
        supervisor::online_cpus()
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
    let me = std::process::id();
    // SAFETY: getpgrp has no preconditions and cannot fail.
    let (_, own) = group_cpu("contest", unsafe { libc::getpgrp() } as u32, me);
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
    match crate::sys::proc::sysctl_on("kernel.sched_autogroup_enabled") {
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
        let mut running = match load {
            Some(kind) => Some(start_load(name, kind, args)?),
            None => None,
        };
        let (time, cpu) = run_job(job).inspect_err(|_| {
            if let Some(l) = &mut running {
                stop_load(l);
            }
        })?;
        row.time += time.as_secs_f64();
        row.cpu_percent += 100.0 * cpu.as_secs_f64() / time.as_secs_f64().max(1e-9);
        if let Some(mut l) = running {
            // Read before stopping: a load killed outright may die before reaping its
            // children, whose CPU would then reach no one's cutime.
            let count = l.counters.total();
            let (lcpu, autogroup) = group_cpu(&l.name, l.pgid(), l.pid);
            row.autogroup = autogroup;
            let wall = stop_load(&mut l);
            row.loads += count;
            row.load_cpu_percent += 100.0 * lcpu.as_secs_f64() / wall.as_secs_f64().max(1e-9);
        }
    }
    let n = args.runs as f64;
    row.time /= n;
    row.cpu_percent /= n;
    row.loads = (row.loads as f64 / n).round() as u64;
    row.load_cpu_percent /= n;
    Ok(row)
}

fn start_load(name: &str, kind: &WorkloadKind, args: &Args) -> Result<Running> {
    let spec = LaunchSpec {
        name: name.into(),
        program: kind.program(),
        knobs: Knobs {
            nice: args.nice.unwrap_or(0),
            placement: if args.own_session {
                Placement::OwnSession
            } else {
                Placement::Shared
            },
            ..Knobs::default()
        },
        capture_output: false,
    };
    let mut load = supervisor::spawn(&spec)?;
    track(load.pgid());
    // The lead time, watching that the load did not die at once (a bad build, a subcommand
    // this binary lacks).
    let deadline = Instant::now() + Duration::from_secs_f64(args.lead.max(0.2));
    while Instant::now() < deadline {
        if let Some(status) = load.poll_exit() {
            untrack(load.pgid());
            bail!(
                "load {name} exited before the job started ({status}): \
                 try `schedlab {}` by hand",
                match kind.program() {
                    Program::SelfExe(a) => a.join(" "),
                    Program::Command(a) => a.join(" "),
                }
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(load)
}

/// CPU time used so far by a process group (every process in it, with the children each has
/// reaped: a fork loop's children, hackbench's earlier runs), and the autogroup its leader
/// is in, read by the probe.
fn group_cpu(name: &str, pgid: u32, leader: u32) -> (Duration, Option<u64>) {
    let Ok(mut probe) = Probe::new(ProbeConfig::default()) else {
        return (Duration::ZERO, None);
    };
    let target = Target {
        id: 1,
        name: name.into(),
        pgid,
        leader,
        cgroup: None,
        counters: None,
        ops_unit: String::new(),
    };
    let sample = probe.sample(&[target]);
    let procs = || sample.workloads.iter().flat_map(|w| &w.processes);
    let ticks: u64 = procs().map(|p| p.cpu_ticks + p.child_ticks).sum();
    let autogroup = procs()
        .find(|p| p.pid == leader)
        .and_then(|p| p.autogroup)
        .map(|(id, _)| id);
    (
        Duration::from_nanos(ticks * crate::probe::parse::NS_PER_TICK),
        autogroup,
    )
}

/// Stops a load (SIGTERM, then SIGKILL after 5 s) and returns how long it ran.
fn stop_load(load: &mut Running) -> Duration {
    let wall = load.started.elapsed();
    load.stop(Duration::from_secs(5));
    untrack(load.pgid());
    wall
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
