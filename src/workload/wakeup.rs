//! The wakeup-latency probe, in the spirit of cyclictest and schbench: threads that sleep and
//! are woken, each recording how late it ran. Added beside any mix of workloads, it shows what
//! latency a task that wakes up sees in that mix.
//!
//! - A **timer** thread sleeps to absolute deadlines one period apart (clock_nanosleep with
//!   TIMER_ABSTIME on CLOCK_MONOTONIC, as cyclictest) and records wake time − deadline. A
//!   deadline it overslept past is not timed again: it sleeps to the next one on the grid.
//! - A **pair** is a waker and a woken thread: every period the waker stamps the time and
//!   wakes the other through a futex (as schbench's message threads wake its workers), which
//!   records wake time − stamp. A hand-off the woken thread has not taken yet is not stamped
//!   again, so a thread kept off its CPU for a second records that second, once.
//!
//! Every probe thread sets its timer slack to 1 ns (the default 50 µs would be in every
//! figure). With `--cpu N` the timer threads and the woken threads run on CPU N and the wakers
//! on the other CPUs, so that a hand-off measures what a task on CPU N waits, not when its
//! waker got to run. Each thread counts its wakes in its own counter and records into its own
//! histogram; the command prints percentiles every few seconds and at the end.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
// rustix, not nix (docs/architecture.md): nix has no futex, and the probe's measured loop
// (futex wake, absolute clock_nanosleep, the vDSO clock) is this crate's calls, errno-free.
use rustix::thread::futex;
use rustix::time::{ClockId, Timespec};

use crate::model::latency::Distribution;
use crate::probe::LatencySample;
use crate::sys::kernel::guard::Demand;
use crate::sys::shared::counters::{now_ns, CounterRegion, CounterSlot, Histogram};
use crate::sys::shared::histogram::Unit;
use crate::workload::registry::params::refused;
use crate::workload::registry::params::WAKEUP_PROBE;

/// How long a woken thread waits on its futex before it looks at the stop flag again.
const RECHECK: Duration = Duration::from_millis(100);
/// The percentiles printed, as schbench prints them.
const PERCENTILES: [(f64, &str); 4] = [
    (0.5, "50.0th"),
    (0.9, "90.0th"),
    (0.99, "99.0th"),
    (0.999, "99.9th"),
];

/// Arguments of `schedlab wakeup-probe`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "Prints each kind of wakeup's percentiles (usec) every --interval seconds and \
    over the whole run at the end. Example, beside a fork loop: `schedlab fork-load & \
    schedlab wakeup-probe --duration 10`."
)]
pub struct Args {
    #[arg(long, default_value_t = WAKEUP_PROBE.param("timers").default_count().into(),
          allow_negative_numbers = true, help = WAKEUP_PROBE.param("timers").cli_help())]
    pub timers: i64,
    #[arg(long, default_value_t = WAKEUP_PROBE.param("pairs").default_count().into(),
          allow_negative_numbers = true, help = WAKEUP_PROBE.param("pairs").cli_help())]
    pub pairs: i64,
    #[arg(long, value_name = "USEC",
          default_value_t = WAKEUP_PROBE.param("period").default_count().into(),
          allow_negative_numbers = true, help = WAKEUP_PROBE.param("period").cli_help())]
    pub period: i64,
    #[arg(long, value_name = "CPU|none", default_value = "none", allow_hyphen_values = true,
          help = WAKEUP_PROBE.param("cpu").cli_help())]
    pub cpu: String,
    /// Seconds to run; without it, run until stopped (Ctrl-C prints the whole run's figures).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Seconds between two printed reports.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub interval: f64,
    /// Start even when the size guard finds it too big for this machine.
    #[arg(long)]
    pub force: bool,
}

/// A checked run.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub timers: u32,
    pub pairs: u32,
    pub period: Duration,
    /// Where the timed threads run (None: anywhere), and where the wakers run.
    pub timed_cpu: Option<usize>,
    pub waker_cpus: Vec<usize>,
    pub duration: Option<Duration>,
    pub interval: Duration,
}

impl Plan {
    /// Checks the arguments against the CPUs this process may use.
    pub fn new(args: &Args, allowed: &[usize]) -> Result<Self> {
        // The registry's limits, with the message a scenario or the picker gives.
        let p = |key, x: i64| WAKEUP_PROBE.param(key).check_count(x).map_err(refused);
        let (timers, pairs, period) = (
            p("timers", args.timers)?,
            p("pairs", args.pairs)?,
            p("period", args.period)?,
        );
        if timers == 0 && pairs == 0 {
            return Err(refused(
                "nothing to probe: ask for at least one timer thread or one pair",
            ));
        }
        let timed_cpu = WAKEUP_PROBE
            .param("cpu")
            .parse_count(&args.cpu)
            .map_err(refused)?
            .map(|c| c as usize);
        if let Some(c) = timed_cpu {
            if !allowed.contains(&c) {
                return Err(refused(format!(
                    "--cpu {c} is not one of the CPUs this process may use ({})",
                    crate::knobs::cpus_text(allowed)
                )));
            }
        }
        let waker_cpus = match timed_cpu {
            None => Vec::new(),
            Some(c) if allowed.len() == 1 => vec![c],
            Some(c) => allowed.iter().copied().filter(|&o| o != c).collect(),
        };
        let secs = |what: &str, x: f64| -> Result<Duration> {
            if x.is_finite() && x > 0.0 && x < 1e9 {
                Ok(Duration::from_secs_f64(x))
            } else {
                Err(refused(format!(
                    "{what} must be a positive number of seconds, not {x}"
                )))
            }
        };
        Ok(Self {
            timers,
            pairs,
            period: Duration::from_micros(u64::from(period)),
            timed_cpu,
            waker_cpus,
            duration: args.duration.map(|d| secs("--duration", d)).transpose()?,
            interval: secs("--interval", args.interval)?,
        })
    }

    fn describe(&self) -> String {
        let place = match self.timed_cpu {
            None => "unpinned".to_string(),
            Some(c) => format!("woken threads on CPU {c}"),
        };
        format!(
            "wakeup probe: {} timer thread{}, {} pair{}, period {} usec, {place}",
            self.timers,
            if self.timers == 1 { "" } else { "s" },
            self.pairs,
            if self.pairs == 1 { "" } else { "s" },
            self.period.as_micros()
        )
    }
}

/// One pair's hand-off word (the futex), the waker's stamp and the last hand-off the woken
/// thread took, on a line of their own.
#[repr(C, align(64))]
struct Handoff {
    seq: AtomicU32,
    sent_ns: AtomicU64,
    taken: AtomicU32,
}

/// The running probe's threads.
pub struct Probe {
    stop: Arc<AtomicBool>,
    handoffs: Vec<Arc<Handoff>>,
    threads: Vec<JoinHandle<()>>,
}

impl Probe {
    /// Starts every thread of `plan`, counting and recording into `region`.
    pub fn start(plan: &Plan, region: &CounterRegion) -> Result<Self> {
        let mut probe = Probe {
            stop: Arc::new(AtomicBool::new(false)),
            handoffs: Vec::new(),
            threads: Vec::new(),
        };
        let period = plan.period.as_nanos() as u64;
        let timed = plan.timed_cpu.map(|c| vec![c]).unwrap_or_default();
        for i in 0..plan.timers {
            let t = Timed {
                count: region.claim()?,
                latency: region.claim_histogram(Unit::TimerWakeup),
            };
            let (stop, cpus) = (probe.stop.clone(), timed.clone());
            probe.spawn(format!("wake-timer-{i}"), move || {
                settle(&cpus);
                timer_loop(period, &stop, &t);
            })?;
        }
        for i in 0..plan.pairs {
            let handoff = Arc::new(Handoff {
                seq: AtomicU32::new(0),
                sent_ns: AtomicU64::new(0),
                taken: AtomicU32::new(0),
            });
            probe.handoffs.push(handoff.clone());
            let t = Timed {
                count: region.claim()?,
                latency: region.claim_histogram(Unit::ThreadWakeup),
            };
            let (stop, h, cpus) = (probe.stop.clone(), handoff.clone(), timed.clone());
            probe.spawn(format!("wake-woken-{i}"), move || {
                settle(&cpus);
                woken_loop(&h, &stop, &t);
            })?;
            let (stop, cpus) = (probe.stop.clone(), plan.waker_cpus.clone());
            probe.spawn(format!("wake-waker-{i}"), move || {
                settle(&cpus);
                waker_loop(period, &handoff, &stop);
            })?;
        }
        Ok(probe)
    }

    fn spawn(&mut self, name: String, body: impl FnOnce() + Send + 'static) -> Result<()> {
        let handle = std::thread::Builder::new()
            .name(name)
            .stack_size(64 * 1024)
            .spawn(body)
            .context("starting a probe thread");
        match handle {
            Ok(h) => {
                self.threads.push(h);
                Ok(())
            }
            Err(e) => {
                self.stop_threads();
                Err(e)
            }
        }
    }

    /// Stops every thread and waits for it (at most a period and [`RECHECK`]).
    pub fn stop(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for h in &self.handoffs {
            h.seq.fetch_add(1, Ordering::SeqCst);
            let _ = futex::wake(&h.seq, futex::Flags::PRIVATE, u32::MAX);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// A timed thread's counter and histogram.
struct Timed {
    count: CounterSlot,
    latency: Option<Histogram>,
}

impl Timed {
    #[inline]
    fn woke(&self, late_ns: u64) {
        if let Some(h) = &self.latency {
            h.record(late_ns);
        }
        self.count.add(1);
    }
}

/// Pins the calling thread to `cpus` (none: leaves it) and drops its timer slack to 1 ns.
fn settle(cpus: &[usize]) {
    if !cpus.is_empty() {
        let mut set = rustix::thread::CpuSet::new();
        for &c in cpus {
            set.set(c);
        }
        // Checked by Plan::new against the CPUs we may use; a CPU taken offline since only
        // leaves the thread where it was.
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

fn timespec(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    }
}

/// Sleeps until CLOCK_MONOTONIC reads `deadline_ns` (signals do not cut it short).
fn sleep_until(deadline_ns: u64) {
    let at = timespec(deadline_ns);
    while rustix::thread::clock_nanosleep_absolute(ClockId::Monotonic, &at).is_err() {}
}

/// The next deadline after `deadline` on the grid of `period`, past `now` (missed ones are
/// not slept to).
fn next_deadline(deadline: u64, period: u64, now: u64) -> u64 {
    let next = deadline + period;
    if next > now {
        next
    } else {
        next + ((now - next) / period + 1) * period
    }
}

fn timer_loop(period: u64, stop: &AtomicBool, t: &Timed) {
    let mut deadline = now_ns() + period;
    while !stop.load(Ordering::Relaxed) {
        sleep_until(deadline);
        let woke = now_ns();
        t.woke(woke.saturating_sub(deadline));
        deadline = next_deadline(deadline, period, woke);
    }
}

fn waker_loop(period: u64, h: &Handoff, stop: &AtomicBool) {
    let mut deadline = now_ns() + period;
    while !stop.load(Ordering::Relaxed) {
        sleep_until(deadline);
        // Only once the last hand-off was taken: its stamp stays until it is.
        let seq = h.seq.load(Ordering::Relaxed);
        if h.taken.load(Ordering::Acquire) == seq {
            // The stamp first, then the new word the woken thread waits to see changed.
            h.sent_ns.store(now_ns(), Ordering::Relaxed);
            h.seq.store(seq.wrapping_add(1), Ordering::Release);
            let _ = futex::wake(&h.seq, futex::Flags::PRIVATE, 1);
        }
        deadline = next_deadline(deadline, period, now_ns());
    }
}

fn woken_loop(h: &Handoff, stop: &AtomicBool, t: &Timed) {
    let recheck = timespec(RECHECK.as_nanos() as u64);
    // The last hand-off taken, not the word now: one made before this thread first ran is
    // still to be taken (the waker makes no other until it is).
    let mut seen = h.taken.load(Ordering::Acquire);
    loop {
        let seq = h.seq.load(Ordering::Acquire);
        if seq == seen {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            // Returns at a wake, a changed word (EAGAIN), a signal or the recheck timeout.
            let _ = futex::wait(&h.seq, futex::Flags::PRIVATE, seen, Some(&recheck));
            continue;
        }
        let woke = now_ns();
        seen = seq;
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let sent = h.sent_ns.load(Ordering::Relaxed);
        // Read before the waker may stamp again.
        h.taken.store(seq, Ordering::Release);
        t.woke(woke.saturating_sub(sent));
    }
}

/// The report for one stretch of the run: each kind of wakeup's percentiles in usec.
pub fn report(what: &str, before: &[LatencySample], now: &[LatencySample]) -> String {
    let mut out = String::new();
    for s in now {
        let d = Distribution::between(before.iter().find(|b| b.unit == s.unit), s);
        let unit = capitalised(&s.unit);
        out += &format!("{unit} latencies {what} ({} samples), usec:\n", d.count());
        if d.count() == 0 {
            continue;
        }
        let us = |ns: Option<f64>| ns.unwrap_or(0.0) / 1000.0;
        for (q, label) in PERCENTILES {
            out += &format!("\t{label}: {:.1}\n", us(d.quantile_ns(q)));
        }
        out += &format!(
            "\tmean: {:.1}, min: {:.1}, max: {:.1}\n",
            us(d.mean_ns()),
            us(d.min_ns()),
            us(d.max_ns())
        );
    }
    out
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn latency_of(region: &CounterRegion) -> Vec<LatencySample> {
    region.read_latency().into_iter().map(Into::into).collect()
}

/// What a probe asks of the machine: its threads and the main thread that reports.
pub fn demand(timers: u32, pairs: u32) -> Demand {
    Demand::threads(u64::from(timers) + 2 * u64::from(pairs) + 1)
}

pub fn main(args: Args) -> Result<()> {
    let plan = Plan::new(&args, &crate::workload::pingpong::allowed_cpus()?)?;
    let demand = demand(plan.timers, plan.pairs);
    crate::sys::kernel::guard::check("wakeup-probe", demand, args.force)?;
    let region = CounterRegion::for_workload()?;
    let probe = Probe::start(&plan, &region)?;
    let start = Instant::now();
    crate::outln!("{}", plan.describe());
    {
        // A signal or a panic: the threads go with the process; say what the run saw.
        let region = region.clone();
        crate::sys::exit::lifeline::on_exit(move || {
            let whole = format!("over the whole run, {:.1} s", start.elapsed().as_secs_f64());
            crate::out!("{}", report(&whole, &[], &latency_of(&region)));
        });
    }
    let mut before = Vec::new();
    let mut last = start;
    let end = plan.duration.map(|d| start + d);
    loop {
        let next = last + plan.interval;
        let until = end.map_or(next, |e| e.min(next));
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        if end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        let now = latency_of(&region);
        let over = format!("over the last {:.1} s", last.elapsed().as_secs_f64());
        crate::out!("{}", report(&over, &before, &now));
        (before, last) = (now, Instant::now());
    }
    probe.stop();
    region.mark_finished();
    let whole = format!("over the whole run, {:.1} s", start.elapsed().as_secs_f64());
    crate::out!("{}", report(&whole, &[], &latency_of(&region)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(timers: i64, pairs: i64, cpu: &str) -> Args {
        Args {
            timers,
            pairs,
            period: 1000,
            cpu: cpu.into(),
            duration: Some(1.0),
            interval: 5.0,
            force: false,
        }
    }

    #[test]
    fn pinning_puts_the_wakers_on_the_other_cpus() {
        let p = Plan::new(&args(1, 2, "1"), &[0, 1, 2]).unwrap();
        assert_eq!((p.timed_cpu, p.waker_cpus), (Some(1), vec![0, 2]));
        let alone = Plan::new(&args(1, 1, "3"), &[3]).unwrap();
        assert_eq!(alone.waker_cpus, vec![3]);
        let free = Plan::new(&args(1, 1, "none"), &[0, 1]).unwrap();
        assert_eq!((free.timed_cpu, free.waker_cpus), (None, vec![]));
        assert_eq!(free.period, Duration::from_millis(1));
    }

    #[test]
    fn bad_arguments_are_refused() {
        let err = |a: Args| Plan::new(&a, &[0, 1]).unwrap_err().to_string();
        assert!(err(args(0, 0, "none")).contains("nothing to probe"));
        assert!(err(args(1, 0, "7")).contains("not one of the CPUs"));
        assert!(err(args(1, 0, "x")).contains("neither"));
        let mut a = args(1, 0, "none");
        a.period = 5;
        assert!(err(a).contains("period must be at least 20"));
        let mut a = args(1, 0, "none");
        a.interval = 0.0;
        assert!(err(a).contains("--interval"));
    }

    #[test]
    fn missed_deadlines_are_skipped_on_the_grid() {
        assert_eq!(next_deadline(1_000, 100, 1_050), 1_100);
        assert_eq!(next_deadline(1_000, 100, 1_100), 1_200);
        assert_eq!(next_deadline(1_000, 100, 1_350), 1_400);
    }

    #[test]
    fn a_short_probe_times_both_kinds_of_wakeup() {
        let region = CounterRegion::create_with(8, 8).unwrap();
        let plan = Plan::new(&args(1, 1, "none"), &[0]).unwrap();
        let probe = Probe::start(&plan, &region).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        // Ten wakes of each kind, however busy the machine.
        while region
            .read_latency()
            .iter()
            .map(|t| t.samples.min(10))
            .sum::<u64>()
            < 20
        {
            assert!(Instant::now() < deadline, "{:?}", region.read_latency());
            std::thread::sleep(Duration::from_millis(10));
        }
        probe.stop();
        let read = latency_of(&region);
        let units: Vec<&str> = read.iter().map(|s| s.unit.as_str()).collect();
        assert_eq!(units, ["timer wakeup", "thread wakeup"]);
        let text = report("over the test", &[], &read);
        assert!(
            text.contains("Timer wakeup latencies over the test ("),
            "{text}"
        );
        assert!(text.contains("\t99.0th: "), "{text}");
        assert!(region.total() >= 20);
    }
}
