//! Message, semaphore and pipe ping-pong between pairs of tasks (Manfred Spraul's pmsg
//! and psem, 2008; `perf bench sched pipe` for pipes).
//!
//! Each pair bounces a token: the pinger sends and waits for the reply, the ponger waits and
//! replies. `--pin same` puts both tasks of pair k on CPU k (every switch is a local wake-up),
//! `--pin cross` puts them on two CPUs (every wake-up crosses CPUs). Tasks are processes
//! (fork) unless `--threads`. Without `--duration` the run goes on until stopped, as the
//! dashboard runs it; each pinger counts its round trips in its own live counter and times one
//! in 16 of them into its own histogram.

mod endpoint;
mod tasks;

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use nix::fcntl::OFlag;
use nix::sched::{sched_getaffinity, CpuSet};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::model::latency::Distribution;
use crate::sys::kernel::guard::Demand;
use crate::sys::kernel::sysv::{self, MsgQueue, SemSet};
use crate::sys::shared::counters::{CounterRegion, CounterSlot, Histogram};
use crate::sys::shared::histogram::Unit;
use crate::workload::registry::params::refused;
use crate::workload::registry::params::PINGPONG;

pub use endpoint::{Call, TaskError};

/// Which IPC mechanism a ping-pong pair uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IpcKind {
    #[default]
    Msg,
    Sem,
    Pipe,
}

impl IpcKind {
    /// As `--kind` and a scenario's `ipc` write it.
    pub fn word(self) -> &'static str {
        match self {
            IpcKind::Msg => "msg",
            IpcKind::Sem => "sem",
            IpcKind::Pipe => "pipe",
        }
    }
}

/// How ping-pong pairs are bound to CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pin {
    /// Both tasks of pair k on CPU k.
    #[default]
    Same,
    /// The two tasks of a pair on two different CPUs.
    Cross,
    None,
}

impl Pin {
    /// As `--pin` and a scenario's `pin` write it.
    pub fn word(self) -> &'static str {
        match self {
            Pin::Same => "same",
            Pin::Cross => "cross",
            Pin::None => "none",
        }
    }
}

/// Arguments of `schedlab ipc-pingpong`. Values are checked by hand so that a bad one gets
/// one clear line, like every other error.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long, value_name = "IPC", default_value = PINGPONG.param("ipc").default_word(),
          help = PINGPONG.param("ipc").cli_help())]
    pub kind: String,
    #[arg(long, value_name = "N|cpus", default_value = PINGPONG.param("pairs").default_word(),
          help = PINGPONG.param("pairs").cli_help())]
    pub pairs: String,
    #[arg(long, value_name = "PIN", default_value = PINGPONG.param("pin").default_word(),
          help = PINGPONG.param("pin").cli_help())]
    pub pin: String,
    /// Seconds to run; without it, run until stopped (Ctrl-C prints the figures so far).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<String>,
    /// Threads of one process instead of forked processes.
    #[arg(long)]
    pub threads: bool,
    /// Start even when the size guard finds it too big for this machine.
    #[arg(long)]
    pub force: bool,
}

/// A checked run: what to start and where.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub kind: IpcKind,
    pub pin: Pin,
    pub threads: bool,
    pub duration: Option<Duration>,
    /// CPU of the pinger and of the ponger of each pair (None: unpinned).
    pub cpus: Vec<(Option<usize>, Option<usize>)>,
}

impl Plan {
    pub fn pairs(&self) -> usize {
        self.cpus.len()
    }

    /// Checks the arguments against the CPUs this process may use (in order).
    pub fn new(args: &Args, allowed: &[usize]) -> Result<Self> {
        let unknown = |flag: &str, word: &str, words: &str| {
            refused(format!("unknown {flag} {word:?}: use {words}"))
        };
        let kind = [IpcKind::Msg, IpcKind::Sem, IpcKind::Pipe]
            .into_iter()
            .find(|k| k.word() == args.kind)
            .ok_or_else(|| unknown("--kind", &args.kind, "msg, sem or pipe"))?;
        let pin = [Pin::Same, Pin::Cross, Pin::None]
            .into_iter()
            .find(|p| p.word() == args.pin)
            .ok_or_else(|| unknown("--pin", &args.pin, "same, cross or none"))?;
        let ncpus = allowed.len();
        // The registry's limit, with the message a scenario or the picker gives.
        let pairs = match PINGPONG
            .param("pairs")
            .parse_count(&args.pairs)
            .map_err(refused)?
        {
            None => ncpus,
            Some(n) => n as usize,
        };
        if pin != Pin::None && pairs > ncpus {
            return Err(refused(format!(
                "--pairs {pairs} is more than the {ncpus} CPUs this process may use, and --pin {} puts pair k on CPU k: use --pairs {ncpus} or --pin none",
                args.pin
            )));
        }
        if pin == Pin::Cross && ncpus < 2 {
            return Err(refused(format!(
                "--pin cross needs two CPUs and this process may use only {ncpus}"
            )));
        }
        let duration = match args.duration.as_deref() {
            None => None,
            Some(text) => match text.parse::<f64>() {
                Ok(s) if s > 0.0 && s.is_finite() && s < 1e9 => Some(Duration::from_secs_f64(s)),
                _ => {
                    return Err(refused(format!(
                        "--duration {text:?} is not a positive number of seconds"
                    )))
                }
            },
        };
        let cpus = (0..pairs)
            .map(|k| match pin {
                Pin::Same => (Some(allowed[k]), Some(allowed[k])),
                Pin::Cross => (Some(allowed[k]), Some(allowed[(k + 1) % ncpus])),
                Pin::None => (None, None),
            })
            .collect();
        Ok(Self {
            kind,
            pin,
            threads: args.threads,
            duration,
            cpus,
        })
    }

    fn describe(&self) -> String {
        let kind = match self.kind {
            IpcKind::Msg => "msg",
            IpcKind::Sem => "sem",
            IpcKind::Pipe => "pipe",
        };
        let pin = match self.pin {
            Pin::Same => "same CPU per pair",
            Pin::Cross => "pairs split across CPUs",
            Pin::None => "unpinned",
        };
        let tasks = if self.threads { "threads" } else { "processes" };
        format!("{kind} ping-pong: {} pairs of {tasks}, {pin}", self.pairs())
    }
}

/// CPUs this process may run on, in increasing order.
pub(crate) fn allowed_cpus() -> Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).context("sched_getaffinity")?;
    let cpus: Vec<usize> = (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect();
    if cpus.is_empty() {
        bail!("this process may run on no CPU");
    }
    Ok(cpus)
}

/// The kernel objects of one pair.
pub(crate) enum PairObjects {
    Msg(MsgQueue),
    Sem(SemSet),
    /// Pinger-to-ponger read and write ends, then ponger-to-pinger read and write ends.
    Pipe([OwnedFd; 4]),
}

/// What a task needs to reach its pair's objects: plain numbers, so a forked child or a
/// thread can hold them without owning anything.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Handle {
    Msg(i32),
    Sem(i32),
    Pipe([i32; 4]),
}

impl PairObjects {
    fn create(kind: IpcKind) -> Result<Self> {
        Ok(match kind {
            IpcKind::Msg => PairObjects::Msg(MsgQueue::create()?),
            IpcKind::Sem => PairObjects::Sem(SemSet::create(2)?),
            IpcKind::Pipe => {
                let (a, b) = pipe().context("pipe for a pair")?;
                let (c, d) = pipe().context("pipe for a pair")?;
                PairObjects::Pipe([a, b, c, d])
            }
        })
    }

    fn handle(&self) -> Handle {
        match self {
            PairObjects::Msg(q) => Handle::Msg(q.id()),
            PairObjects::Sem(s) => Handle::Sem(s.id()),
            PairObjects::Pipe(fds) => Handle::Pipe(fds.each_ref().map(|f| f.as_raw_fd())),
        }
    }
}

/// A close-on-exec pipe: (read end, write end).
pub(crate) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(OFlag::O_CLOEXEC)?)
}

/// A pinger's counter and round-trip histogram, readable by the parent (for the report)
/// while the pinger stores to them.
pub(crate) struct SharedSlot(CounterSlot, Option<Histogram>);

// SAFETY: Sync: the slot and the histogram are reached only through their AtomicU64s; one writer
// (the pinger) is the counting and recording protocol, and every other thread only loads them.
unsafe impl Sync for SharedSlot {}

impl SharedSlot {
    pub fn slot(&self) -> &CounterSlot {
        &self.0
    }

    pub fn latency(&self) -> Option<&Histogram> {
        self.1.as_ref()
    }
}

/// The report: per pair and in total, round trips, their rate and the mean round-trip time;
/// then the timed round trips' percentiles, when they were timed.
pub fn report(
    plan: &Plan,
    counts: &[u64],
    elapsed: Duration,
    latency: Option<&Distribution>,
) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let cpu = |c: Option<usize>| c.map_or("-".to_string(), |c| c.to_string());
    let usec = |n: u64| {
        if n == 0 {
            "-".to_string()
        } else {
            format!("{:.3}", secs * 1e6 / n as f64)
        }
    };
    let mut out = format!("{}, {:.3} s\n", plan.describe(), secs);
    out += "pair  ping-cpu  pong-cpu   round-trips        rt/sec   usec/rt\n";
    for (k, (&n, &(a, b))) in counts.iter().zip(&plan.cpus).enumerate() {
        out += &format!(
            "{k:>4}  {:>8}  {:>8}  {n:>12}  {:>12.0}  {:>8}\n",
            cpu(a),
            cpu(b),
            n as f64 / secs,
            usec(n)
        );
    }
    let total: u64 = counts.iter().sum();
    out += &format!(
        "Total: {total} round trips in {secs:.3} s = {:.0} round trips/sec\n",
        total as f64 / secs
    );
    // Pairs run at once, so one round trip took, on average, pairs * elapsed / total.
    let mean = if total == 0 {
        "-".to_string()
    } else {
        format!("{:.3}", secs * 1e6 * counts.len() as f64 / total as f64)
    };
    out += &format!("Mean round-trip time: {mean} usec\n");
    if let Some((d, text)) = latency.and_then(|d| Some((d, d.percentiles_text()?))) {
        out += &format!(
            "Round-trip latency: {text} ({} round trips timed, one in {})\n",
            d.count(),
            endpoint::TIME_EVERY
        );
    }
    out
}

/// What `pairs` pairs ask of the machine: two tasks each, threads or processes.
pub fn demand(pairs: u64, threads: bool) -> Demand {
    Demand::tasks(2 * pairs, threads)
}

pub fn main(args: Args) -> Result<()> {
    let plan = Plan::new(&args, &allowed_cpus()?)?;
    // What the run asks of the machine, as the registry declares it for a scenario too.
    let demand = demand(plan.pairs() as u64, plan.threads);
    crate::sys::kernel::guard::check("ipc-pingpong", demand, args.force)?;
    sysv::sweep_orphans()?;
    let counters = CounterRegion::for_workload()?;
    // Each pair is a closed loop: one of its two tasks is runnable whenever the other sleeps.
    counters.set_closed_loops(plan.pairs() as u64);
    let slots = (0..plan.pairs())
        .map(|_| {
            let latency = counters.claim_histogram(Unit::RoundTrip);
            counters.claim().map(|s| Arc::new(SharedSlot(s, latency)))
        })
        .collect::<Result<Vec<_>>>()?;
    let control =
        Arc::new(endpoint::Control::new(plan.pairs()).context("mapping the control page")?);
    let state = Arc::new(tasks::RunState::new(plan.pairs()));
    {
        // A signal or a panic: kill the tasks; an open-ended run prints what it did so far.
        let (state, slots, plan) = (state.clone(), slots.clone(), plan.clone());
        crate::sys::exit::lifeline::on_exit(move || {
            state.kill_tasks();
            if plan.duration.is_none() {
                if let Some(t0) = state.t0.get() {
                    let counts: Vec<u64> = slots.iter().map(|s| s.slot().get()).collect();
                    let latency = round_trips(&slots);
                    crate::out!("{}", report(&plan, &counts, t0.elapsed(), latency.as_ref()));
                }
            }
        });
    }
    let mut objects = Vec::with_capacity(plan.pairs());
    for _ in 0..plan.pairs() {
        objects.push(Some(PairObjects::create(plan.kind)?));
    }
    let elapsed = if plan.threads {
        tasks::run_threads(&plan, &mut objects, &control, &slots, &state)?
    } else {
        tasks::run_processes(&plan, &mut objects, &control, &slots, &state)?
    };
    counters.mark_finished();
    let counts: Vec<u64> = slots.iter().map(|s| s.slot().get()).collect();
    drop(objects);
    let latency = round_trips(&slots);
    crate::out!("{}", report(&plan, &counts, elapsed, latency.as_ref()));
    Ok(())
}

/// The round trips the pingers timed, merged (None: recording is off).
fn round_trips(slots: &[Arc<SharedSlot>]) -> Option<Distribution> {
    let mut all: Option<Distribution> = None;
    for h in slots.iter().filter_map(|s| s.latency()) {
        let one = Distribution::cumulative(&h.totals().into());
        all.get_or_insert_with(Distribution::default).merge(&one);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(kind: &str, pairs: &str, pin: &str) -> Args {
        Args {
            kind: kind.into(),
            pairs: pairs.into(),
            pin: pin.into(),
            duration: Some("1".into()),
            threads: false,
            force: false,
        }
    }

    #[test]
    fn pinning_places_pairs() {
        let p = Plan::new(&args("sem", "cpus", "same"), &[2, 5]).unwrap();
        assert_eq!(p.cpus, vec![(Some(2), Some(2)), (Some(5), Some(5))]);
        let p = Plan::new(&args("msg", "2", "cross"), &[0, 1]).unwrap();
        assert_eq!(p.cpus, vec![(Some(0), Some(1)), (Some(1), Some(0))]);
        let p = Plan::new(&args("pipe", "3", "none"), &[0, 1]).unwrap();
        assert_eq!(p.cpus, vec![(None, None); 3]);
    }

    #[test]
    fn bad_arguments_are_refused() {
        let err = |a: Args| Plan::new(&a, &[0, 1]).unwrap_err().to_string();
        assert!(err(args("shm", "1", "same")).contains("unknown --kind"));
        assert!(err(args("msg", "3", "same")).contains("more than the 2 CPUs"));
        assert!(err(args("msg", "0", "none")).contains("at least 1"));
        assert!(err(args("msg", "x", "none")).contains("neither"));
        assert!(err(args("msg", "1", "diagonal")).contains("unknown --pin"));
        let one = Plan::new(&args("msg", "1", "cross"), &[0]).unwrap_err();
        assert!(one.to_string().contains("two CPUs"));
        let mut a = args("msg", "1", "same");
        a.duration = Some("-1".into());
        assert!(err(a).contains("--duration"));
    }

    #[test]
    fn report_rows_add_up() {
        let p = Plan::new(&args("sem", "2", "same"), &[0, 1]).unwrap();
        let text = report(&p, &[100, 300], Duration::from_secs(2), None);
        assert!(text.contains("Total: 400 round trips in 2.000 s = 200 round trips/sec"));
        assert!(text.contains("Mean round-trip time: 10000.000 usec"));
        let row: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(row, ["0", "0", "0", "100", "50", "20000.000"]);
    }
}
