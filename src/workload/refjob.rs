//! The reference job: a fixed amount of parallel CPU work standing in for `make -j4 bzImage`.
//!
//! The work is `work` x 2,000 units of pure computation (about 10 ms of one CPU each on the
//! machine the constants were set on, so `--work 1` with `-j4` takes about 10 s on 2 CPUs),
//! cut into chunks of 10 units, like a kernel tree's compile jobs. `-j N` worker processes pull
//! chunks from a shared counter until none are left, as make's jobs pull targets. The amount
//! is fixed, never calibrated at run time: a slower machine or a competing load shows up as a
//! longer time, which is what contest measures. Each worker counts the units it finished.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;

use crate::sys::shared::counters::{CounterRegion, CounterSlot};
use crate::sys::shared::shm::SharedMapping;
use crate::workload::children;
use crate::workload::placement::PlacementArgs;
use crate::workload::registry::params::refused;
use crate::workload::registry::params::REF_JOB;

/// Units in `--work 1`.
pub(crate) const UNITS_PER_WORK: f64 = 2000.0;
/// Units per chunk (one "compile job").
pub(crate) const UNITS_PER_CHUNK: u64 = 10;
/// Dependent xorshift steps in one unit (about 10 ms on a 2026 x86-64 core, release build).
const STEPS_PER_UNIT: u64 = 6_200_000;

/// Arguments of `schedlab ref-job`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    #[arg(short = 'j', long = "jobs", default_value_t = REF_JOB.param("jobs").default_count(),
          help = REF_JOB.param("jobs").cli_help())]
    pub jobs: u32,
    #[arg(long, default_value_t = REF_JOB.param("work").default_amount(),
          help = REF_JOB.param("work").cli_help())]
    pub work: f64,
    #[arg(long, default_value_t = REF_JOB.param("runs").default_count().into(),
          allow_negative_numbers = true, help = REF_JOB.param("runs").cli_help())]
    pub runs: i64,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// One run's outcome, as `time` would report it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobTimes {
    pub elapsed: Duration,
    /// User plus system CPU time of the workers.
    pub cpu: Duration,
    pub units: u64,
}

impl JobTimes {
    pub(crate) fn cpu_percent(&self) -> f64 {
        100.0 * self.cpu.as_secs_f64() / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// One unit of work: a chain of dependent steps the compiler cannot shorten.
#[inline(never)]
pub fn unit(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..black_box(STEPS_PER_UNIT) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

pub fn main(args: Args) -> Result<()> {
    // The registry's limits, with the message a scenario or the picker gives.
    let check = |key, x: i64| REF_JOB.param(key).check_count(x).map_err(refused);
    check("jobs", i64::from(args.jobs))?;
    let runs = check("runs", args.runs)?;
    REF_JOB
        .param("work")
        .check_amount(args.work)
        .map_err(refused)?;
    let units = units_for(args.work)?;
    args.placement.apply()?;
    let region = CounterRegion::for_workload()?;
    let mut slots = (0..args.jobs)
        .map(|_| region.claim())
        .collect::<Result<Vec<_>>>()?;
    if runs > 0 {
        region.set_expected_total(units * runs as u64);
    }
    crate::outln!(
        "Reference job: -j{} work {} = {units} units in {} chunks",
        args.jobs,
        args.work,
        units.div_ceil(UNITS_PER_CHUNK)
    );
    let mut run = 0;
    while runs == 0 || run < runs {
        let t = run_once(units, &mut slots)?;
        crate::outln!(
            "Time: {:.3} s  CPU: {:.0}%  units: {}",
            t.elapsed.as_secs_f64(),
            t.cpu_percent(),
            t.units
        );
        run += 1;
    }
    region.mark_finished();
    Ok(())
}

/// Units of work in `work`.
pub(crate) fn units_for(work: f64) -> Result<u64> {
    if !(work.is_finite() && work > 0.0) {
        return Err(refused(format!(
            "--work must be a positive number, not {work}"
        )));
    }
    let units = (work * UNITS_PER_WORK).round() as u64;
    if units == 0 {
        return Err(refused(format!(
            "--work {work} is less than one unit (1/{UNITS_PER_WORK})",
        )));
    }
    Ok(units)
}

/// Runs the job once with one worker process per slot.
pub(crate) fn run_once(units: u64, slots: &mut [CounterSlot]) -> Result<JobTimes> {
    let _kill = children::KillOnDrop;
    // The chunk queue the workers pull from: one counter in a page they all share.
    let queue = SharedMapping::anonymous(4096).context("mapping the chunk counter")?;
    let next: &AtomicU64 = queue.get(0);
    let chunks = units.div_ceil(UNITS_PER_CHUNK);
    let before = children_cpu();
    let start = Instant::now();
    let done_before: u64 = slots.iter().map(|s| s.get()).sum();
    let mut forked = 0;
    for slot in slots.iter_mut() {
        children::fork(|| loop {
            let chunk = next.fetch_add(1, Relaxed);
            if chunk >= chunks {
                return 0;
            }
            let first = chunk * UNITS_PER_CHUNK;
            for u in first..(first + UNITS_PER_CHUNK).min(units) {
                black_box(unit(u));
                slot.add(1);
            }
        })?;
        forked += 1;
    }
    let mut failed = 0;
    for _ in 0..forked {
        let (_, code) = children::wait_any().context("reaping the workers")?;
        failed += usize::from(code != 0);
    }
    let elapsed = start.elapsed();
    children::forget_all();
    if failed > 0 {
        bail!("{failed} workers failed");
    }
    let done: u64 = slots.iter().map(|s| s.get()).sum();
    Ok(JobTimes {
        elapsed,
        cpu: children_cpu().saturating_sub(before),
        units: done - done_before,
    })
}

/// User plus system time of every reaped child (and their reaped descendants) so far.
pub(crate) fn children_cpu() -> Duration {
    let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) else {
        return Duration::ZERO;
    };
    let tv = |t: TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(usage.user_time()) + tv(usage.system_time())
}
