//! The rest of the machine's waits against the kernel's own tracepoints: a second instrument
//! beside schedstat. As root, the test opens a tracefs instance of its own, records
//! sched_wakeup, sched_wakeup_new and sched_switch for every task outside the workloads while
//! the SysV ping-pong preset (one pinned pair per CPU) runs through the engine's Lab, and
//! holds three figures to each other over the same instants:
//!
//! - the tracepoints' wakeup-to-run delays (a wakeup to the task's next switch in), per task of
//!   the rest, pooled: the model's mean wakeup delay for the rest and for each of its groups;
//! - the tracepoints' run-queue waits (after wakeups and after preemptions), per task: the
//!   wait the same task's /proc/PID/schedstat gained between two reads by this test;
//! - and the rest's verdict: never `STARVED` or `short` when nothing else runs.
//!
//! Before 2026-12-05 this preset read the kernel's idle threads `STARVED`: their wakeup delays
//! were counted as CPU they wanted. bpftrace on the same preset timed them at tens of µs.
//!
//! The instance is removed and its events disabled whatever the outcome (the guard's Drop);
//! tracefs is mounted only when it was not, and then unmounted. Needs a quiet machine, as the
//! ground-truth suite does.

mod common;

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use schedlab::engine::lab::Lab;
use schedlab::model::{Frame, Verdict};
use schedlab::probe::monotonic_ns;
use schedlab::probe::sample::RestSample;
use schedlab::scenario::Scenario;
use schedlab::sys::kernel::tracefs::{
    event_dir, lost_in, new_instance, remove_instance, write_setting, TRACING,
};

const EVENTS: [&str; 3] = ["sched_wakeup", "sched_wakeup_new", "sched_switch"];
/// Per CPU. The pipe is drained every tick (250 ms), and the filters keep only the rest's
/// events: a few hundred a second on a quiet machine.
const BUFFER_KB: u32 = 512;
const INSTANCE_PREFIX: &str = "schedlab-test-";

const PRESET: &str = "sysv-pingpong-per-cpu";
const INTERVAL: Duration = Duration::from_millis(250);
/// The verdict window the figures are compared over.
const WINDOW: f64 = 6.0;
/// Start-up and a first window before tracing starts; tracing then runs this long before
/// the measured span, so that every task's state is known when the span begins.
const SETTLE: Duration = Duration::from_secs(5);
const PREROLL: Duration = Duration::from_secs(2);
/// The measured span: the window and the rest's read before it.
const MEASURE: Duration = Duration::from_secs(8);

/// Too few wakeups for a mean to say anything.
const MIN_WAKEUPS: usize = 30;
/// A group's delays are compared from this many wakeups in the window.
const MIN_GROUP_WAKEUPS: usize = 20;
/// The longest wait whose delay both instruments put in the same window: a read of the rest.
const LONGEST_COMPARABLE_NS: u64 = 1_000_000_000;

/// How far the model's mean wakeup delay may be from the tracepoints': the machine is
/// shared and the model estimates the split of a user task's waits (wakeups or preemptions)
/// from its switch counts.
fn delay_tolerance_us(trace_us: f64) -> f64 {
    30.0 + 0.5 * trace_us
}

/// How far one task's (or the rest's) tracepoint wait may be from its schedstat wait: the
/// same waits, timed by the trace clock (µs in trace output) and the run queue's clock.
///
/// Per wait, up to 10 µs: the test's own sampler, woken by its timer, waits about 10 µs from
/// `sched_wakeup` to `sched_switch` by the trace and about 1 µs by schedstat, whose clock
/// starts at the enqueue (measured over 32 wakeups: 0.321 ms and 0.038 ms).
fn wait_tolerance_ns(schedstat_ns: u64, waits: usize) -> u64 {
    50_000 + schedstat_ns / 20 + 10_000 * waits as u64
}

// ---- The tracefs instance ----------------------------------------------------------------

/// A tracefs instance of this test's own, with the three scheduler events in it. Dropping it
/// disables the events and removes the instance (and unmounts tracefs if this test mounted
/// it), whatever happened meanwhile.
struct Instance {
    dir: PathBuf,
    mounted: bool,
    pipe: Option<File>,
    buf: Vec<u8>,
}

impl Instance {
    /// The instance, or why tracing cannot be done here.
    fn open() -> Result<Instance, String> {
        let (mounted, dir) = new_instance(INSTANCE_PREFIX)?;
        if let Err(e) = fs::create_dir(&dir) {
            if mounted {
                let _ = nix::mount::umount(TRACING);
            }
            return Err(format!("cannot create {}: {e}", dir.display()));
        }
        // From here on the Drop cleans up.
        let mut inst = Instance {
            dir,
            mounted,
            pipe: None,
            buf: vec![0; 64 * 1024],
        };
        for ev in EVENTS {
            if !event_dir(&inst.dir, ev).is_dir() {
                return Err(format!("this kernel has no sched:{ev} tracepoint"));
            }
        }
        write_setting(&inst.dir, "buffer_size_kb", &BUFFER_KB.to_string())?;
        // CLOCK_MONOTONIC: the clock the Samples and the schedstat reads are stamped with.
        write_setting(&inst.dir, "trace_clock", "mono")?;
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(inst.dir.join("trace_pipe"))
            .map_err(|e| format!("cannot open {}/trace_pipe: {e}", inst.dir.display()))?;
        inst.pipe = Some(pipe);
        Ok(inst)
    }

    /// Records the three events for every task but `excluded` (the workloads' tasks, whose
    /// switches would be hundreds of thousands a second).
    fn enable(&self, excluded: &HashSet<u32>) -> Result<(), String> {
        let mut pids: Vec<u32> = excluded.iter().copied().collect();
        pids.sort_unstable();
        let not_in = |field: &str, idle: bool| {
            let mut terms: Vec<String> = pids.iter().map(|p| format!("{field} != {p}")).collect();
            if idle {
                terms.push(format!("{field} != 0"));
            }
            terms.join(" && ")
        };
        let wakeup = if pids.is_empty() {
            "0".to_string()
        } else {
            not_in("pid", false)
        };
        // A switch is kept when either side is a task of the rest (not idle, not a workload).
        let switch = format!(
            "({}) || ({})",
            not_in("prev_pid", true),
            not_in("next_pid", true)
        );
        for (ev, filter) in [
            ("sched_wakeup", &wakeup),
            ("sched_wakeup_new", &wakeup),
            ("sched_switch", &switch),
        ] {
            let path = event_dir(&self.dir, ev).join("filter");
            fs::write(&path, filter).map_err(|e| format!("filter {filter:?} for {ev}: {e}"))?;
        }
        for ev in EVENTS {
            fs::write(event_dir(&self.dir, ev).join("enable"), "1")
                .map_err(|e| format!("enabling {ev}: {e}"))?;
        }
        Ok(())
    }

    fn disable(&self) {
        for ev in EVENTS {
            let _ = fs::write(event_dir(&self.dir, ev).join("enable"), "0");
        }
    }

    /// Reads what the pipe holds into `trace`: until it is empty, for at most a second.
    fn drain(&mut self, trace: &mut Trace) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            match pipe.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => trace.feed(&self.buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // WouldBlock: nothing more for now.
                Err(_) => break,
            }
        }
    }

    /// Events the ring buffer lost or dropped, over all CPUs (its per-CPU stats).
    fn lost(&self) -> u64 {
        lost_in(&self.dir)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // The kernel refuses to remove an instance whose pipe is open.
        self.pipe = None;
        self.disable();
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        if !remove_instance(&self.dir) {
            eprintln!(
                "tracing_truth: could not remove {} (its events are disabled)",
                self.dir.display()
            );
        }
        if self.mounted {
            if let Err(e) = nix::mount::umount(TRACING) {
                eprintln!("tracing_truth: could not unmount {TRACING}: {e}");
            }
        }
    }
}

// ---- The trace ---------------------------------------------------------------------------

/// One wait on a run queue as the tracepoints show it: when it ended (the task switched in;
/// CLOCK_MONOTONIC ns), how long it was, and whether a wakeup began it (else a preemption).
#[derive(Clone, Copy, Debug)]
struct Wait {
    end: u64,
    ns: u64,
    woken: bool,
}

/// The tasks that switched in with a wait of unknown start (queued before the events were
/// recorded), and when: schedstat counts such a wait whole when it ends, the trace cannot.
type UnknownWaits = HashMap<u32, Vec<u64>>;

#[derive(Clone, Copy, Debug)]
enum State {
    Running,
    Queued { since: u64, woken: bool },
    Asleep,
}

/// The rest's tasks as the events tell them: each task's state and every wait it ended.
#[derive(Default)]
struct Trace {
    partial: Vec<u8>,
    state: HashMap<u32, State>,
    waits: HashMap<u32, Vec<Wait>>,
    unknown: UnknownWaits,
    /// Tasks switched in while the trace had them on a CPU: their switches out were not
    /// recorded. On these machines no event is recorded in the context of the sandbox's own
    /// agent (its tokio workers: switched in every second, never out), so its waits cannot
    /// be timed.
    blind: HashSet<u32>,
    events: u64,
    /// Events the pipe said were lost.
    lost: u64,
}

impl Trace {
    /// Takes in bytes read from the pipe; a line cut by a read is kept for the next.
    fn feed(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let whole: Vec<u8> = self.partial.drain(..=end).collect();
        for line in String::from_utf8_lossy(&whole).lines() {
            self.line(line);
        }
    }

    /// One line: `  comm-pid  [001] d..2.  1234.567890: sched_switch: prev_comm=...`.
    fn line(&mut self, line: &str) {
        if line.contains("[LOST ") {
            // "CPU:1 [LOST 12 EVENTS]"
            self.lost += line
                .split("[LOST ")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(1);
            return;
        }
        let Some(at) = line.find(": sched_") else {
            return;
        };
        let Some(ts) = line[..at].rsplit(' ').next().and_then(timestamp_ns) else {
            return;
        };
        let Some((kind, fields)) = line[at + 2..].split_once(": ") else {
            return;
        };
        match kind {
            "sched_wakeup" | "sched_wakeup_new" => {
                if let Some(pid) = field(fields, "pid") {
                    self.events += 1;
                    self.woken(pid, ts);
                }
            }
            "sched_switch" => {
                let Some((prev, next)) = fields.split_once(" ==> ") else {
                    return;
                };
                let (Some(prev_pid), Some(prev_state), Some(next_pid)) = (
                    field(prev, "prev_pid"),
                    field_str(prev, "prev_state"),
                    field(next, "next_pid"),
                ) else {
                    return;
                };
                self.events += 1;
                self.switch(prev_pid, prev_state.starts_with('R'), next_pid, ts);
            }
            _ => {}
        }
    }

    /// A wakeup puts a sleeping task on a run queue. One already there (preempted before it
    /// could sleep) or still on its CPU keeps its state: the kernel's run delay goes on from
    /// when it was queued.
    fn woken(&mut self, pid: u32, ts: u64) {
        let s = self.state.entry(pid).or_insert(State::Asleep);
        if matches!(s, State::Asleep) {
            *s = State::Queued {
                since: ts,
                woken: true,
            };
        }
    }

    /// `prev` leaves its CPU (still runnable when preempted), `next` takes it.
    fn switch(&mut self, prev: u32, preempted: bool, next: u32, ts: u64) {
        if prev != 0 {
            self.state.insert(
                prev,
                if preempted {
                    State::Queued {
                        since: ts,
                        woken: false,
                    }
                } else {
                    State::Asleep
                },
            );
        }
        if next != 0 {
            // A task first seen switching in has a wait of unknown length (perhaps none):
            // not counted, and its schedstat not compared over a span where it ends.
            match self.state.get(&next).copied() {
                Some(State::Queued { since, woken }) => {
                    self.waits.entry(next).or_default().push(Wait {
                        end: ts,
                        ns: ts.saturating_sub(since),
                        woken,
                    });
                }
                None => self.unknown.entry(next).or_default().push(ts),
                Some(State::Running) => {
                    self.blind.insert(next);
                }
                // Switched in asleep: its wakeup was not recorded (it came from the agent's
                // context, which the trace does not see), so its wait is unknown.
                Some(State::Asleep) => {
                    self.blind.insert(next);
                }
            }
            self.state.insert(next, State::Running);
        }
    }

    /// The waits of `tid` that ended in `from..=to` (ns).
    fn waits_of(&self, tid: u32, from: u64, to: u64) -> impl Iterator<Item = &Wait> {
        self.waits
            .get(&tid)
            .into_iter()
            .flatten()
            .filter(move |w| w.end > from && w.end <= to)
    }
}

/// "1234.567890" (seconds, µs) in ns.
fn timestamp_ns(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac: u64 = format!("{frac:0<9}").parse().ok()?;
    Some(secs * 1_000_000_000 + frac)
}

/// The value of `key=` in an event's fields, searched from the right (a command's name may
/// hold spaces).
fn field_str<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .rsplit(' ')
        .find_map(|tok| tok.strip_prefix(key)?.strip_prefix('='))
}

fn field(fields: &str, key: &str) -> Option<u32> {
    field_str(fields, key)?.parse().ok()
}

/// Woken waits and all waits: (count, ns) of each.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    woken: (usize, u64),
    all: (usize, u64),
    /// The longest wait, ns.
    longest: u64,
}

impl Sums {
    fn add(&mut self, w: &Wait) {
        if w.woken {
            self.woken.0 += 1;
            self.woken.1 += w.ns;
        }
        self.all.0 += 1;
        self.all.1 += w.ns;
        self.longest = self.longest.max(w.ns);
    }

    /// The mean wakeup-to-run delay in µs.
    fn wake_delay_us(&self) -> Option<f64> {
        (self.woken.0 > 0).then(|| self.woken.1 as f64 / 1e3 / self.woken.0 as f64)
    }

    /// The mean wait per switch in, after wakeups and preemptions alike, in µs.
    fn wait_per_slice_us(&self) -> Option<f64> {
        (self.all.0 > 0).then(|| self.all.1 as f64 / 1e3 / self.all.0 as f64)
    }
}

// ---- The rest's tasks --------------------------------------------------------------------

/// Every task (tid) of a process in one of `pgids`.
fn tids_of(pgids: &HashSet<u32>) -> HashSet<u32> {
    let mut out = HashSet::new();
    for (pid, pgrp) in processes() {
        if pgids.contains(&pgrp) {
            out.extend(tasks_of(pid));
        }
    }
    out
}

/// Every process (pid, process group).
fn processes() -> Vec<(u32, u32)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // pgrp is the third field after the command's closing parenthesis.
            let pgrp = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(2)?
                .parse()
                .ok()?;
            Some((pid, pgrp))
        })
        .collect()
}

fn tasks_of(pid: u32) -> Vec<u32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|t| t.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// One task's schedstat: ns waited on a run queue, and when it was read (CLOCK_MONOTONIC,
/// halfway between the clock reads either side of the read).
#[derive(Clone, Copy, Debug)]
struct TaskRead {
    wait: u64,
    at: u64,
}

/// The schedstat of every task outside the workloads' process groups, each stamped.
fn rest_schedstat(workload_pgids: &HashSet<u32>) -> HashMap<u32, TaskRead> {
    let mut out = HashMap::new();
    for (pid, pgrp) in processes() {
        if workload_pgids.contains(&pgrp) {
            continue;
        }
        for tid in tasks_of(pid) {
            let a = monotonic_ns();
            let s = fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat"));
            let b = monotonic_ns();
            let Some(wait) = s
                .ok()
                .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            else {
                continue;
            };
            out.insert(
                tid,
                TaskRead {
                    wait,
                    at: a + (b - a) / 2,
                },
            );
        }
    }
    out
}

/// The group the model puts a task of the rest in, as model/tree.rs names it.
fn group_key(t: &schedlab::probe::sample::RestTask, autogroup_on: bool) -> String {
    match t.cgroup.as_deref() {
        Some(path) if path != "/" && !path.is_empty() => return format!("cgroup {path}"),
        _ => {}
    }
    if !autogroup_on {
        return "root".into();
    }
    match t.autogroup {
        Some((0, _)) => "root".into(),
        Some((id, _)) => format!("autogroup-{id}"),
        None => format!("session {}", t.session),
    }
}

fn preset(name: &str) -> String {
    let path = format!(
        "{}/assets/scenarios/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    fs::read_to_string(path).expect("preset")
}

fn fmt_us(us: Option<f64>) -> String {
    us.map_or("-".into(), |d| format!("{d:.1} µs"))
}

#[test]
fn the_rests_waits_agree_with_the_tracepoints() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: tracing the scheduler's events needs root (CI runs as root)");
        return;
    }
    let mut tracing = match Instance::open() {
        Ok(t) => t,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let scenario = Scenario::from_toml(&preset(PRESET), PRESET).expect("preset parses");
    let mut lab = Lab::new(INTERVAL).expect("lab");
    lab.set_verdict_window(WINDOW);
    if let Err(last) = common::wait::until_quiet(&mut lab, INTERVAL) {
        panic!(
            "the machine never got quiet (other tasks wanted {last:.2} CPUs); this test needs a \
             machine doing nothing else"
        );
    }
    for w in scenario.workloads {
        lab.add(common::real_binary(&w)).expect("workload starts");
    }

    let mut trace = Trace::default();
    let mut pgids = HashSet::new();
    let mut workload_tids = HashSet::new();
    let mut enabled_ns = None;
    let mut before = None;
    // The measured Frames, each with the rest's read it was derived from (since, t), and
    // every read of the rest.
    let mut frames: Vec<(Frame, Option<(u64, u64)>)> = Vec::new();
    let mut reads: Vec<RestSample> = Vec::new();
    let mut read_now: Option<(u64, u64)> = None;
    let start = Instant::now();
    let mut next = start;
    while start.elapsed() < SETTLE + PREROLL + MEASURE {
        next += INTERVAL;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let f = lab.tick();
        if let Some(s) = lab.last_sample() {
            pgids.extend(s.workloads.iter().map(|w| w.pgid).filter(|&g| g != 0));
            if let Some(r) = s.machine.rest.as_ref().filter(|r| r.since_ns != 0) {
                read_now = Some((r.since_ns, r.t_ns));
                reads.push(r.clone());
            }
        }
        let elapsed = start.elapsed();
        if elapsed >= SETTLE && enabled_ns.is_none() {
            workload_tids = tids_of(&pgids);
            assert!(
                !workload_tids.is_empty(),
                "the ping-pong's tasks are running"
            );
            tracing.enable(&workload_tids).expect("events enabled");
            enabled_ns = Some(monotonic_ns());
        }
        if elapsed >= SETTLE + PREROLL {
            if before.is_none() {
                before = Some(rest_schedstat(&pgids));
            }
            frames.push((f, read_now));
        }
        tracing.drain(&mut trace);
    }
    let after = rest_schedstat(&pgids);
    tracing.disable();
    tracing.drain(&mut trace);
    let lost = tracing.lost() + trace.lost;
    drop(tracing);
    // Every task of the workloads, those that came after tracing began included.
    workload_tids.extend(tids_of(&pgids));
    drop(lab);

    let measured: Vec<Frame> = frames.iter().map(|(f, _)| f.clone()).collect();
    common::wait::check_quiet("tracing_truth", &measured);
    assert_eq!(
        lost, 0,
        "the trace lost {lost} events: the machine was too busy for a {BUFFER_KB} KB buffer"
    );
    let enabled_ns = enabled_ns.expect("tracing began");
    let before = before.expect("a measured span");

    // The span the last Frame's window covers: the rest's reads its Frames were derived from.
    let last = measured.last().expect("measured Frames");
    let in_window: Vec<(u64, u64)> = frames
        .iter()
        .filter(|(f, _)| f.t > last.t - WINDOW + 1e-9)
        .filter_map(|(_, r)| *r)
        .collect();
    let from = in_window
        .iter()
        .map(|r| r.0)
        .min()
        .expect("a read of the rest");
    let to = in_window
        .iter()
        .map(|r| r.1)
        .max()
        .expect("a read of the rest");
    assert!(
        from >= enabled_ns + 500_000_000,
        "the window's first read of the rest began {:.2} s after tracing did: the test's \
         timing does not let every task's state be known",
        (from as f64 - enabled_ns as f64) / 1e9
    );
    // Which group the model put each task in, as its reads in the window say.
    let autogroup_on = last.machine.autogroup;
    let mut group_of: HashMap<u32, String> = HashMap::new();
    for r in reads.iter().filter(|r| r.t_ns > from && r.t_ns <= to) {
        for t in &r.tasks {
            group_of.insert(t.tid, group_key(t, autogroup_on));
        }
    }

    // The rest never reads starved or short where the tracepoints can tell: nothing competes
    // with it but the ping-pong, whose pairs leave each CPU whenever anything else wakes
    // there. A group holding a task the trace is blind to (the sandbox's agent, whose tokio
    // workers are never seen leaving a CPU) may be really kept off the CPUs when it has work:
    // the same ping-pong kept a CPU hog in a session of its own waiting 9.77 s of 10. Its
    // verdict can neither be confirmed nor refused here: said, not asserted.
    let blind_groups: HashSet<String> = reads
        .iter()
        .flat_map(|r| &r.tasks)
        .filter(|t| trace.blind.contains(&t.tid))
        .map(|t| group_key(t, autogroup_on))
        .collect();
    for f in &measured {
        let short = |v: Verdict| matches!(v, Verdict::Starved | Verdict::Short);
        let unseen_short = f
            .machine
            .rest_groups
            .iter()
            .any(|g| short(g.verdict) && blind_groups.contains(&g.key));
        if unseen_short {
            eprintln!(
                "at {:.1} s a group with tasks the trace cannot see read short: {:?}",
                f.t, f.machine.rest_groups
            );
            continue;
        }
        let v = f.machine.rest_verdict;
        assert!(
            !short(v),
            "the rest of the machine read {v:?} at {:.1} s (got {:.3}, due {:.3}; {:?})",
            f.t,
            f.machine.rest_window_received,
            f.machine.rest_window_fair,
            f.machine.rest_groups
        );
        for g in &f.machine.rest_groups {
            assert!(
                !short(g.verdict),
                "{} read {:?} at {:.1} s (got {:.3}, due {:.3})",
                g.name,
                g.verdict,
                f.t,
                g.received,
                g.fair
            );
        }
    }

    // The tracepoints over the window, per task and pooled, overall and per group.
    let mut rest = Sums::default();
    let mut groups: HashMap<String, Sums> = HashMap::new();
    let mut per_task: Vec<(u32, Sums)> = Vec::new();
    for &tid in trace.waits.keys() {
        if workload_tids.contains(&tid) {
            continue;
        }
        let mut s = Sums::default();
        for w in trace.waits_of(tid, from, to) {
            s.add(w);
        }
        if s.all.0 == 0 {
            continue;
        }
        for w in trace.waits_of(tid, from, to) {
            rest.add(w);
            if let Some(key) = group_of.get(&tid) {
                groups.entry(key.clone()).or_default().add(w);
            }
        }
        per_task.push((tid, s));
    }
    per_task.sort_by_key(|(_, s)| std::cmp::Reverse(s.woken.1));
    eprintln!(
        "tracepoints: {} events, {} rest tasks woke in the window of {:.2} s",
        trace.events,
        per_task.len(),
        (to - from) as f64 / 1e9
    );
    for (tid, s) in per_task.iter().take(12) {
        eprintln!(
            "  {tid:>7} {:<16} {:>5} wakeups, mean delay {:>10}, max {:>8.1} µs; waited {:.3} ms",
            common::comm(*tid),
            s.woken.0,
            fmt_us(s.wake_delay_us()),
            trace
                .waits_of(*tid, from, to)
                .filter(|w| w.woken)
                .map(|w| w.ns as f64 / 1e3)
                .fold(0.0, f64::max),
            s.all.1 as f64 / 1e6
        );
    }

    // 1. The model's mean wakeup delay for the rest, and for each of its groups.
    let trace_delay = rest.wake_delay_us();
    let model_delay = last.machine.rest_wake_delay_us;
    eprintln!(
        "the rest: {} wakeups, tracepoints' mean delay {} (wait per switch-in {}), model {}",
        rest.woken.0,
        fmt_us(trace_delay),
        fmt_us(rest.wait_per_slice_us()),
        fmt_us(model_delay)
    );
    assert!(
        rest.woken.0 >= MIN_WAKEUPS,
        "only {} wakeups of the rest in {:.1} s: the events were not recorded",
        rest.woken.0,
        (to - from) as f64 / 1e9
    );
    let trace_delay = trace_delay.expect("wakeups");
    let model_delay = model_delay.expect("the model saw the rest's wakeups");
    // A wait longer than a read of the rest (a kworker once waited 3 s here) is one the
    // model spreads over the reads it spans, and the trace puts whole at its end: over one
    // window the two then rightly differ, and the comparison says so instead.
    let comparable = |s: &Sums| s.longest <= LONGEST_COMPARABLE_NS;
    // The model counts the waits of tasks the trace is blind to (the agent's), the trace
    // cannot: while the agent works, the two rightly differ there. Compared, but asserted
    // only where the trace sees every task.
    let sees_all = blind_groups.is_empty();
    if comparable(&rest) && !sees_all {
        eprintln!(
            "the rest's delays not asserted: groups {blind_groups:?} hold tasks the trace \
             cannot see"
        );
    } else if comparable(&rest) {
        assert!(
            (model_delay - trace_delay).abs() <= delay_tolerance_us(trace_delay),
            "the model's mean wakeup delay for the rest is {model_delay:.1} µs, the \
             tracepoints' {trace_delay:.1} µs over the same span"
        );
    } else {
        eprintln!(
            "the rest's delays not compared: one wait of {:.0} ms, longer than a read",
            rest.longest as f64 / 1e6
        );
    }
    let (mut compared, mut long, mut blind_skipped) = (0, 0, 0);
    for g in &last.machine.rest_groups {
        let s = groups.get(&g.key).copied().unwrap_or_default();
        eprintln!(
            "  group {}: {} wakeups, tracepoints {}, model {}",
            g.name,
            s.woken.0,
            fmt_us(s.wake_delay_us()),
            fmt_us(g.wake_delay_us)
        );
        if s.woken.0 < MIN_GROUP_WAKEUPS {
            continue;
        }
        if !comparable(&s) {
            long += 1;
            continue;
        }
        if blind_groups.contains(&g.key) {
            blind_skipped += 1;
            continue;
        }
        let (Some(t), Some(m)) = (s.wake_delay_us(), g.wake_delay_us) else {
            panic!(
                "{}: the tracepoints saw {} wakeups, the model none",
                g.name, s.woken.0
            );
        };
        assert!(
            (m - t).abs() <= delay_tolerance_us(t),
            "{}: the model's mean wakeup delay is {m:.1} µs, the tracepoints' {t:.1} µs",
            g.name
        );
        compared += 1;
    }
    assert!(
        compared + long + blind_skipped > 0,
        "no group of the rest had enough wakeups to compare"
    );

    // 2. The tracepoints' waits against the same tasks' schedstat, read by this test.
    let (mut sched_sum, mut trace_sum, mut waits_sum) = (0u64, 0u64, 0usize);
    let (mut unknown_start, mut blind, mut moved) = (0, 0, 0);
    let mut worst: Option<(u32, u64, u64)> = None;
    for (tid, b) in &before {
        if workload_tids.contains(tid) {
            continue;
        }
        let Some(a) = after.get(tid) else { continue };
        if trace.blind.contains(tid) {
            blind += 1;
            continue;
        }
        // Queued before the events were on (beside this preset kdamond.0 once waited 3 s in
        // one go): schedstat counts that wait whole, the trace only from its end.
        if trace
            .unknown
            .get(tid)
            .is_some_and(|ends| ends.iter().any(|&e| e > b.at && e <= a.at))
        {
            unknown_start += 1;
            continue;
        }
        let sched = a.wait.saturating_sub(b.wait);
        let (n, traced) = trace
            .waits_of(*tid, b.at, a.at)
            .fold((0, 0), |(n, s), w| (n + 1, s + w.ns));
        // Still waiting when the events went off, or waited by schedstat and never switched
        // in by the trace: schedstat also adds a queued task's wait so far when it is taken
        // off its run queue without running (an unbound kworker moved to another CPU:
        // sched_info_dequeue), which no sched_switch marks, while the trace counts a wait
        // when it ends. Seen here: kworker/u8:0 2,225 ms by schedstat, no switch in; 459 ms
        // by schedstat, 4 ms traced, still queued at the end.
        let queued_at_end = matches!(trace.state.get(tid), Some(State::Queued { .. }));
        if queued_at_end || (n == 0 && sched > 0) {
            moved += 1;
            continue;
        }
        sched_sum += sched;
        trace_sum += traced;
        waits_sum += n;
        let off = sched.abs_diff(traced);
        // Said, not asserted, task by task: a wait schedstat closes at a dequeue without a
        // switch in (above) can also fall in the middle of a traced one (kworker/0:1H: 2.7 ms
        // by schedstat, 1.4 ms traced in 4 waits). The rest's total is asserted below.
        if off > wait_tolerance_ns(sched, n) {
            eprintln!(
                "task {tid} ({}): schedstat says it waited {:.3} ms, the tracepoints {:.3} ms \
                 in {n} waits",
                common::comm(*tid),
                sched as f64 / 1e6,
                traced as f64 / 1e6
            );
        }
        if worst.is_none_or(|(_, s, t)| s.abs_diff(t) < off) {
            worst = Some((*tid, sched, traced));
        }
    }
    let span = after.values().map(|r| r.at).max().unwrap_or(0) as f64
        - before.values().map(|r| r.at).min().unwrap_or(0) as f64;
    eprintln!(
        "run-queue wait of the rest over {:.2} s: schedstat {:.3} ms, tracepoints {:.3} ms in \
         {waits_sum} waits; worst task {:?}; {unknown_start} tasks left out (a wait begun \
         before the events were on), {blind} whose switches out the trace does not see, {moved} still waiting at the end or moved while queued",
        span / 1e9,
        sched_sum as f64 / 1e6,
        trace_sum as f64 / 1e6,
        worst.map(|(t, s, tr)| (t, common::comm(t), s, tr))
    );
    assert!(
        sched_sum.abs_diff(trace_sum) <= 2_000_000 + wait_tolerance_ns(sched_sum, waits_sum),
        "the rest waited {:.3} ms by schedstat, {:.3} ms by the tracepoints",
        sched_sum as f64 / 1e6,
        trace_sum as f64 / 1e6
    );
    assert!(
        waits_sum >= MIN_WAKEUPS,
        "only {waits_sum} waits of the rest traced"
    );
}

#[test]
fn trace_lines_parse() {
    let mut t = Trace::default();
    t.feed(
        b"  kworker/0:1-12  [000] d..2.  100.000010: sched_wakeup: comm=tmux: server pid=40 prio=120 target_cpu=001\n\
          <idle>-0       [001] d..2.  100.000025: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=tmux: server next_pid=40 next_prio=120\n\
          tmux: server-40 [001] d..2.  100.000125: sched_switch: prev_comm=tmux: server prev_pid=40 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=7 next_prio=120\n\
          x-7 [001] d..2.  100.000",
    );
    // The cut line waits for its end.
    assert_eq!(t.events, 3);
    t.feed(b"200: sched_switch: prev_comm=x prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=tmux: server next_pid=40 next_prio=120\n");
    let w = &t.waits[&40];
    assert_eq!(w.len(), 2);
    assert_eq!((w[0].ns, w[0].woken), (15_000, true));
    assert_eq!((w[1].ns, w[1].woken), (75_000, false));
    // Task 7 was first seen switching in: its wait is unknown.
    assert!(!t.waits.contains_key(&7));
    t.feed(b"CPU:1 [LOST 12 EVENTS]\n");
    assert_eq!(t.lost, 12);
    assert_eq!(timestamp_ns("5.5"), Some(5_500_000_000));
}
