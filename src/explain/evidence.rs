//! The kernel's own events as evidence: what the scheduler did to each workload and to each
//! group of the rest of the machine, from sched_switch, sched_wakeup(_new), sched_process_fork
//! and sched_migrate_task (read by `tracer.rs`). Per owner:
//!
//! - involuntary preemptions suffered (a switch out while still runnable), and by whose tasks
//!   (the task switched in): a who-preempted-whom matrix;
//! - new tasks' delay from `sched_wakeup_new` to their first run, and that run's length;
//! - the wakeup-to-run delay (a sleeper's `sched_wakeup` to its switch in), by the kernel's
//!   timestamps;
//! - migrations.
//!
//! Pure bookkeeping over time-ordered events; who owns a task is asked of a [`Resolve`].

use foldhash::HashMap;
use serde::{Deserialize, Serialize};

use crate::model::latency::Distribution;
use crate::sys::kernel::tracefs::{SchedEvent, Stamped};

/// Who a task belongs to: a workload's name or a group of the rest ("session 812 (bash)").
pub trait Resolve {
    fn owner_of(&mut self, tid: u32) -> Owner;
}

/// A task's owner, as the report names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    pub name: String,
    pub workload: bool,
}

/// Who takes a CPU from a preempted task when no task does: it went idle (its group was
/// throttled, or it moved).
const IDLE: &str = "idle (throttled or moved)";

#[derive(Clone, Copy, Debug)]
enum State {
    /// First seen switching in or waking: what it did before is unknown.
    Unknown,
    Running,
    Queued {
        since: u64,
        woken: bool,
    },
    Asleep,
}

struct Task {
    owner: usize,
    state: State,
    /// Woken for the first time (`sched_wakeup_new`), not yet run.
    new: bool,
    /// Its first run began here and has not ended.
    first_run_from: Option<u64>,
}

#[derive(Default)]
struct Tally {
    preempted: u64,
    preempted_by: HashMap<usize, u64>,
    wakeups: Distribution,
    first_run_delay: Distribution,
    first_run: Distribution,
    migrations: u64,
}

/// Every task's state and every owner's counts so far.
#[derive(Default)]
pub struct Ledger {
    tasks: HashMap<u32, Task>,
    owners: Vec<(Owner, Tally)>,
    ids: HashMap<Owner, usize>,
    events: u64,
}

impl Ledger {
    /// Events stopped being recorded for a while: what each task did meanwhile is unknown,
    /// so no wait that began before the gap is timed (its owner is still known).
    pub fn gap(&mut self) {
        for t in self.tasks.values_mut() {
            t.state = State::Unknown;
            t.new = false;
            t.first_run_from = None;
        }
    }

    fn owner_id(&mut self, owner: Owner) -> usize {
        if let Some(&id) = self.ids.get(&owner) {
            return id;
        }
        self.owners.push((owner.clone(), Tally::default()));
        self.ids.insert(owner, self.owners.len() - 1);
        self.owners.len() - 1
    }

    fn task(&mut self, tid: u32, r: &mut dyn Resolve) -> &mut Task {
        if !self.tasks.contains_key(&tid) {
            let owner = if tid == 0 {
                Owner {
                    name: IDLE.into(),
                    workload: false,
                }
            } else {
                r.owner_of(tid)
            };
            let owner = self.owner_id(owner);
            self.tasks.insert(
                tid,
                Task {
                    owner,
                    state: State::Unknown,
                    new: false,
                    first_run_from: None,
                },
            );
        }
        self.tasks.get_mut(&tid).expect("just inserted")
    }

    /// Takes one event; events must come in time order.
    pub fn take(&mut self, e: &Stamped, r: &mut dyn Resolve) {
        let ns = e.ns;
        self.events += 1;
        match e.event {
            SchedEvent::Fork { parent, child } => {
                let owner = self.task(parent, r).owner;
                self.tasks.insert(
                    child,
                    Task {
                        owner,
                        state: State::Asleep,
                        new: false,
                        first_run_from: None,
                    },
                );
            }
            SchedEvent::WakeupNew { pid } => {
                let t = self.task(pid, r);
                t.new = true;
                t.state = State::Queued {
                    since: ns,
                    woken: true,
                };
            }
            SchedEvent::Wakeup { pid } => {
                // A wakeup of a task still running or queued (woken before it could sleep)
                // leaves it as it is: the kernel's run delay goes on from its queueing.
                let t = self.task(pid, r);
                if let State::Asleep = t.state {
                    t.state = State::Queued {
                        since: ns,
                        woken: true,
                    };
                }
            }
            SchedEvent::Migrate { pid } => {
                let owner = self.task(pid, r).owner;
                self.owners[owner].1.migrations += 1;
            }
            SchedEvent::Switch {
                prev,
                prev_runnable,
                prev_dead,
                next,
            } => self.switch(ns, prev, prev_runnable, prev_dead, next, r),
        }
    }

    fn switch(
        &mut self,
        ns: u64,
        prev: u32,
        runnable: bool,
        dead: bool,
        next: u32,
        r: &mut dyn Resolve,
    ) {
        let next_owner = self.task(next, r).owner;
        if prev != 0 {
            let t = self.task(prev, r);
            let (owner, first) = (t.owner, t.first_run_from.take());
            t.state = if runnable {
                State::Queued {
                    since: ns,
                    woken: false,
                }
            } else {
                State::Asleep
            };
            let tally = &mut self.owners[owner].1;
            if let Some(from) = first {
                tally.first_run.record(ns.saturating_sub(from));
            }
            if runnable {
                tally.preempted += 1;
                *tally.preempted_by.entry(next_owner).or_default() += 1;
            }
            if dead {
                self.tasks.remove(&prev);
            }
        }
        if next != 0 {
            let t = self.task(next, r);
            let was = std::mem::replace(&mut t.state, State::Running);
            if let State::Queued { since, woken: true } = was {
                let delay = ns.saturating_sub(since);
                let new = std::mem::take(&mut t.new);
                if new {
                    t.first_run_from = Some(ns);
                }
                let tally = &mut self.owners[next_owner].1;
                if new {
                    tally.first_run_delay.record(delay);
                } else {
                    tally.wakeups.record(delay);
                }
            }
        }
    }

    /// Events taken so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The counts as a report over `seconds` recorded, owners with nothing to show left out.
    pub fn report(&self, seconds: f64) -> Vec<OwnerEvidence> {
        let mut out: Vec<OwnerEvidence> = self
            .owners
            .iter()
            .filter(|(o, _)| o.name != IDLE)
            .map(|(o, t)| {
                let mut by: Vec<(String, u64)> = t
                    .preempted_by
                    .iter()
                    .map(|(&id, &n)| {
                        let name = &self.owners[id].0.name;
                        (
                            if *name == o.name {
                                "itself".into()
                            } else {
                                name.clone()
                            },
                            n,
                        )
                    })
                    .collect();
                by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                OwnerEvidence {
                    owner: o.name.clone(),
                    workload: o.workload,
                    seconds,
                    preempted: t.preempted,
                    preempted_by: by,
                    wakeups: Delays::of(&t.wakeups),
                    new_tasks: Delays::of(&t.first_run_delay),
                    first_run: Delays::of(&t.first_run),
                    migrations: t.migrations,
                }
            })
            .filter(|e| e.workload || e.preempted > 0 || e.wakeups.count > 0 || e.migrations > 0)
            .collect();
        // Workloads first, then the rest by how often it was preempted.
        out.sort_by(|a, b| {
            b.workload
                .cmp(&a.workload)
                .then(b.preempted.cmp(&a.preempted))
                .then(a.owner.cmp(&b.owner))
        });
        out
    }
}

/// A distribution of delays, summed up in µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Delays {
    pub count: u64,
    pub mean_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
}

impl Delays {
    fn of(d: &Distribution) -> Delays {
        let us = |ns: Option<f64>| ns.map(|v| v / 1e3);
        Delays {
            count: d.count(),
            mean_us: us(d.mean_ns()),
            p50_us: us(d.quantile_ns(0.5)),
            p99_us: us(d.quantile_ns(0.99)),
            max_us: us(d.max_ns()),
        }
    }
}

/// What the kernel's events say of one workload or one group of the rest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnerEvidence {
    pub owner: String,
    pub workload: bool,
    /// Seconds recorded.
    pub seconds: f64,
    /// Times one of its tasks left a CPU still runnable, and whose task took it ("itself":
    /// one of its own), most first.
    pub preempted: u64,
    pub preempted_by: Vec<(String, u64)>,
    /// A sleeper's wakeup to its run.
    pub wakeups: Delays,
    /// A new task's first wakeup to its first run, and that first run's length.
    pub new_tasks: Delays,
    pub first_run: Delays,
    pub migrations: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks 1-9 are workload "a"'s, 10-19 "b"'s, the rest "session 7 (bash)".
    struct ByRange;
    impl Resolve for ByRange {
        fn owner_of(&mut self, tid: u32) -> Owner {
            let (name, workload) = match tid {
                1..=9 => ("a", true),
                10..=19 => ("b", true),
                _ => ("session 7 (bash)", false),
            };
            Owner {
                name: name.into(),
                workload,
            }
        }
    }

    fn sw(ns: u64, prev: u32, runnable: bool, next: u32) -> Stamped {
        Stamped {
            ns,
            event: SchedEvent::Switch {
                prev,
                prev_runnable: runnable,
                prev_dead: false,
                next,
            },
        }
    }

    fn ev(ns: u64, event: SchedEvent) -> Stamped {
        Stamped { ns, event }
    }

    fn run(events: &[Stamped]) -> Vec<OwnerEvidence> {
        let mut l = Ledger::default();
        for e in events {
            l.take(e, &mut ByRange);
        }
        l.report(1.0)
    }

    #[test]
    fn preemptions_are_charged_to_whom_they_befell_and_by_whom() {
        let r = run(&[
            sw(0, 1, true, 10),
            sw(100, 10, true, 1),
            sw(200, 1, true, 2),
            sw(300, 2, true, 20),
            sw(400, 20, false, 0),
        ]);
        let a = r.iter().find(|o| o.owner == "a").unwrap();
        assert_eq!(a.preempted, 3);
        assert_eq!(
            a.preempted_by,
            vec![
                ("b".to_string(), 1),
                ("itself".to_string(), 1),
                ("session 7 (bash)".to_string(), 1)
            ]
        );
        let b = r.iter().find(|o| o.owner == "b").unwrap();
        assert_eq!(b.preempted_by, vec![("a".to_string(), 1)]);
        // The session went to sleep: not preempted, and idle is nobody's row.
        assert!(r.iter().all(|o| o.owner != IDLE));
        assert_eq!(r[0].owner, "a");
    }

    #[test]
    fn wakeup_delays_count_only_sleepers_woken_and_run() {
        let r = run(&[
            // 1 runs, sleeps, is woken at 1000 and runs at 1500: 500 ns.
            sw(0, 0, false, 1),
            sw(100, 1, false, 0),
            ev(1000, SchedEvent::Wakeup { pid: 1 }),
            sw(1500, 0, false, 1),
            // Woken while running: nothing to time.
            ev(1600, SchedEvent::Wakeup { pid: 1 }),
            // 2 was never seen asleep: its first wait is unknown.
            ev(1700, SchedEvent::Wakeup { pid: 2 }),
            sw(1800, 1, true, 2),
        ]);
        let a = r.iter().find(|o| o.owner == "a").unwrap();
        assert_eq!(a.wakeups.count, 1);
        assert!((a.wakeups.mean_us.unwrap() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn new_tasks_are_timed_to_their_first_run_and_through_it() {
        let r = run(&[
            sw(0, 0, false, 1),
            ev(
                100,
                SchedEvent::Fork {
                    parent: 1,
                    child: 40,
                },
            ),
            ev(150, SchedEvent::WakeupNew { pid: 40 }),
            ev(160, SchedEvent::Migrate { pid: 40 }),
            sw(400, 1, true, 40),
            Stamped {
                ns: 1400,
                event: SchedEvent::Switch {
                    prev: 40,
                    prev_runnable: false,
                    prev_dead: true,
                    next: 1,
                },
            },
        ]);
        // The child is its parent's, a workload's, though its tid says otherwise.
        let a = r.iter().find(|o| o.owner == "a").unwrap();
        assert_eq!(a.new_tasks.count, 1);
        assert!((a.new_tasks.mean_us.unwrap() - 0.25).abs() < 1e-9);
        assert_eq!(a.first_run.count, 1);
        assert!((a.first_run.mean_us.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(a.migrations, 1);
        assert_eq!(a.preempted_by, vec![("itself".to_string(), 1)]);
        // Its first wait is not a sleeper's wakeup.
        assert_eq!(a.wakeups.count, 0);
        assert!(r.iter().all(|o| o.owner != "session 7 (bash)"));
    }

    #[test]
    fn waits_across_a_gap_are_not_timed() {
        let mut l = Ledger::default();
        for e in [sw(0, 0, false, 1), sw(100, 1, false, 0)] {
            l.take(&e, &mut ByRange);
        }
        l.gap();
        for e in [
            ev(5000, SchedEvent::Wakeup { pid: 1 }),
            sw(5100, 0, false, 1),
            sw(5200, 1, false, 0),
            ev(6000, SchedEvent::Wakeup { pid: 1 }),
            sw(6300, 0, false, 1),
        ] {
            l.take(&e, &mut ByRange);
        }
        let a = l.report(1.0).into_iter().find(|o| o.owner == "a").unwrap();
        // Only the wakeup after the task was seen asleep again.
        assert_eq!(a.wakeups.count, 1);
        assert!((a.wakeups.mean_us.unwrap() - 0.3).abs() < 1e-9);
    }
}
