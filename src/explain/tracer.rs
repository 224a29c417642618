//! Records the kernel's scheduler events during a run, on a thread of its own: it drains the
//! tracefs instance's per-CPU buffers every 100 ms, puts the events in time order and hands
//! them to the [`Ledger`]. Who owns a task is read once per task from /proc (its process
//! group: a workload's; else its session), children inherit their parent's owner at fork,
//! so a fork loop's short-lived tasks are its own however fast they die.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::evidence::{Ledger, Owner, OwnerEvidence, Resolve};
use super::groups::{GroupStanding, GroupWatch};
use crate::probe::{monotonic_ns, thread_cpu_ns};
use crate::sys::kernel::proc;
use crate::sys::kernel::tracefs::{Instance, Stamped};

/// How often the buffers are drained.
const DRAIN_EVERY: Duration = Duration::from_millis(100);
/// Recording is judged, and stopped or started, in windows this long.
const WINDOW_NS: u64 = 100_000_000;
/// Events a second the kernel writes at full recording before recording is cut to a share of
/// the time: each costs the task that hits the tracepoint about 150 ns (a pinned ping-pong
/// writes 1.5 million a second, and lost 23% of its throughput recorded whole).
const EVENT_BUDGET: f64 = 100_000.0;
/// The least share of the time recorded.
const MIN_DUTY: f64 = 0.05;
/// How often the scheduler's debug table is read for the group entities' standing: seldom,
/// since it lists every task of every CPU, so its cost grows with the machine.
const GROUPS_EVERY_NS: u64 = 250_000_000;
/// Events this recent wait for the next drain: another CPU's events of the same instants may
/// not have been read yet.
const HOLD_BACK_NS: u64 = 5_000_000;
/// Ring buffer per CPU, in KiB: 100 ms of a pinned ping-pong pair's events (about 600,000 a
/// second, 40 bytes each) with room to spare; less on a machine of many CPUs.
fn buffer_kb(cpus: usize) -> u32 {
    (262_144 / cpus.max(1)).clamp(1024, 8192) as u32
}

/// Who owns the tasks: the workloads by process group, else the rest by session.
struct ProcResolver {
    workloads: Arc<Mutex<HashMap<u32, String>>>,
}

impl Resolve for ProcResolver {
    fn owner_of(&mut self, tid: u32) -> Owner {
        let rest = |name: String| Owner {
            name,
            workload: false,
        };
        if proc::own_thread(tid) {
            return rest("schedlab's observer".into());
        }
        let Some(stat) = proc::read_stat(tid) else {
            return rest("tasks gone before they were seen".into());
        };
        let named = self
            .workloads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&stat.pgrp)
            .cloned();
        if let Some(name) = named {
            return Owner {
                name,
                workload: true,
            };
        }
        if stat.kthread || stat.session == 0 {
            return rest("kernel threads".into());
        }
        let comm = proc::comm(stat.session).unwrap_or_else(|| "gone".into());
        rest(format!("session {} ({comm})", stat.session))
    }
}

/// What a traced run gives: the owners' evidence, and what tracing cost and lost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Seconds recorded, and their share of the span: recording is cut to windows when the
    /// events come faster than the budget (a ping-pong, hackbench).
    pub seconds: f64,
    pub recorded_share: f64,
    pub events: u64,
    /// Events the ring buffers lost: a figure over them would be short.
    pub lost: u64,
    /// The reader's own CPU (this thread), in % of one CPU over the recording. The kernel's
    /// cost of writing each event is the workloads' and shows in their throughput.
    pub reader_cpu_pct: f64,
    /// EEVDF's base slice here, in µs: the yardstick for a new task's delay to its first run.
    pub base_slice_us: f64,
    pub owners: Vec<OwnerEvidence>,
    /// Where each workload's group entity stood, from the scheduler's debug table (root with
    /// debugfs; workloads in a group of their own only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupStanding>,
}

/// The recording thread; dropping it stops it and removes the instance.
pub struct Tracer {
    go: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    workloads: Arc<Mutex<HashMap<u32, String>>>,
    thread: Option<JoinHandle<Evidence>>,
}

impl Tracer {
    /// Makes ready to record (which takes a while: the buffers are allocated), or says why it
    /// cannot here (not root, no tracefs). Recording starts with [`Tracer::go`].
    pub fn open(cpus: usize) -> Result<Tracer, String> {
        let instance = Instance::open(buffer_kb(cpus))?;
        let go = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let workloads = Arc::new(Mutex::new(HashMap::new()));
        let resolver = ProcResolver {
            workloads: workloads.clone(),
        };
        let (going, stopping) = (go.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("schedlab-tracer".into())
            .spawn(move || record(instance, resolver, cpus, &going, &stopping))
            .map_err(|e| format!("no tracing thread: {e}"))?;
        Ok(Tracer {
            go,
            stop,
            workloads,
            thread: Some(thread),
        })
    }

    /// Starts recording (within 100 ms).
    pub fn go(&self) {
        self.go.store(true, Ordering::Relaxed);
    }

    /// The workloads' process groups and names, as the latest Sample gives them.
    pub fn set_workloads(&self, groups: impl IntoIterator<Item = (u32, String)>) {
        let mut w = self.workloads.lock().unwrap_or_else(|e| e.into_inner());
        w.clear();
        w.extend(groups);
    }

    /// Stops recording and gives what it found.
    pub fn finish(mut self) -> Option<Evidence> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take()?.join().ok()
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Where recording stands.
#[derive(Clone, Copy)]
enum Phase {
    /// Not yet told to go.
    Waiting,
    /// Recording since then, with that many events read so far.
    On { since: u64, read: u64 },
    /// Cut until then (the events came too fast).
    Off { until: u64 },
}

/// The thread: records once told to go, until told to stop, and sums up. Every window it
/// judges the event rate: past the budget, recording stops for as long as keeps the average
/// within it, and the ledger forgets what it cannot know across the gap.
fn record(
    mut instance: Instance,
    mut resolver: ProcResolver,
    cpus: usize,
    go: &AtomicBool,
    stop: &AtomicBool,
) -> Evidence {
    let cpu0 = thread_cpu_ns();
    let mut started = None;
    let mut ledger = Ledger::default();
    let mut pending: Vec<Stamped> = Vec::new();
    let mut recorded_ns = 0;
    let mut phase = Phase::Waiting;
    // Events read from the buffers so far (the ledger takes them up to the hold-back).
    let mut read = 0;
    let mut groups = GroupWatch::default();
    // When the debug table is next read; None once it proved unreadable.
    let mut groups_due = Some(0);
    loop {
        let last = stop.load(Ordering::Relaxed);
        let now = monotonic_ns();
        if started.is_some() && groups_due.is_some_and(|due| now >= due) {
            let workloads = resolver
                .workloads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            groups_due = groups.read(&workloads).then_some(now + GROUPS_EVERY_NS);
        }
        match phase {
            Phase::Waiting | Phase::Off { .. } if last => {}
            Phase::Waiting if go.load(Ordering::Relaxed) => {
                started = Some(now);
                if instance.set_recording(true).is_ok() {
                    phase = Phase::On { since: now, read };
                }
            }
            Phase::Waiting => {}
            Phase::Off { until } if now >= until => {
                if instance.set_recording(true).is_ok() {
                    phase = Phase::On { since: now, read };
                }
            }
            Phase::Off { .. } => {}
            Phase::On { since, read: read0 } => {
                let horizon = now.saturating_sub(HOLD_BACK_NS);
                read += take(
                    &mut instance,
                    &mut pending,
                    horizon,
                    &mut ledger,
                    &mut resolver,
                );
                if last || now.saturating_sub(since) >= WINDOW_NS {
                    let span = now.saturating_sub(since).max(1) as f64;
                    let rate = (read - read0) as f64 * 1e9 / span;
                    let duty = (EVENT_BUDGET / rate.max(1.0)).clamp(MIN_DUTY, 1.0);
                    if last || duty < 1.0 {
                        // Off first, then everything it wrote.
                        let _ = instance.set_recording(false);
                        let off = monotonic_ns();
                        read += take(
                            &mut instance,
                            &mut pending,
                            u64::MAX,
                            &mut ledger,
                            &mut resolver,
                        );
                        recorded_ns += off.saturating_sub(since);
                        ledger.gap();
                        phase = Phase::Off {
                            until: off + (WINDOW_NS as f64 * (1.0 / duty - 1.0)) as u64,
                        };
                    } else {
                        recorded_ns += now.saturating_sub(since);
                        phase = Phase::On { since: now, read };
                    }
                }
            }
        }
        if last {
            break;
        }
        std::thread::sleep(DRAIN_EVERY);
    }
    let span = started.map_or(1, |s| monotonic_ns().saturating_sub(s).max(1));
    let cpu = thread_cpu_ns().saturating_sub(cpu0);
    let seconds = recorded_ns as f64 / 1e9;
    Evidence {
        seconds,
        recorded_share: recorded_ns as f64 / span as f64,
        events: ledger.events(),
        lost: instance.lost(),
        reader_cpu_pct: 100.0 * cpu as f64 / span as f64,
        base_slice_us: crate::probe::host::base_slice_ns(cpus) as f64 / 1e3,
        owners: ledger.report(seconds),
        groups: groups.report(),
    }
}

/// Reads what the buffers hold and gives the ledger, in time order, the events up to
/// `horizon`; later ones wait in `pending` for the other CPUs' of the same instants. How many
/// events it read.
fn take(
    instance: &mut Instance,
    pending: &mut Vec<Stamped>,
    horizon: u64,
    ledger: &mut Ledger,
    resolver: &mut ProcResolver,
) -> u64 {
    let before = pending.len();
    instance.drain(pending);
    let read = (pending.len() - before) as u64;
    // Runs sorted per CPU: the sort merges them.
    pending.sort_by_key(|e| e.ns);
    let ready = pending.partition_point(|e| e.ns <= horizon);
    for e in pending.drain(..ready) {
        ledger.take(&e, resolver);
    }
    read
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_the_workloads_by_group_then_the_observer_and_the_rest() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut r = ProcResolver {
            workloads: Arc::new(Mutex::new(HashMap::from([(pid, "w".to_string())]))),
        };
        let as_workload = r.owner_of(pid);
        let me = r.owner_of(nix::unistd::gettid().as_raw() as u32);
        let kthreadd = r.owner_of(2);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            as_workload,
            Owner {
                name: "w".into(),
                workload: true
            }
        );
        assert_eq!(me.name, "schedlab's observer");
        assert_eq!(kthreadd.name, "kernel threads");
        assert_eq!(
            r.owner_of(u32::MAX).name,
            "tasks gone before they were seen"
        );
    }

    #[test]
    fn buffers_shrink_on_many_cpus_within_bounds() {
        assert_eq!(buffer_kb(2), 8192);
        assert_eq!(buffer_kb(64), 4096);
        assert_eq!(buffer_kb(1024), 1024);
    }
}
