//! The rest of the machine, task by task: every process outside the workloads, listed about
//! once a second and read as often as the workloads while it keeps a CPU busy and is small
//! enough to read cheaply (the fairness model needs what else wanted the CPUs, grouped the way
//! the kernel groups it, not one lump, and a busy neighbour is part of the experiment).
//! Bounded by a budget of tasks per read on big machines.

use std::collections::HashMap;

use super::task::{ProcGone, ProcState, Sweep};
use super::{RestProc, RestSample, RestTask, NS_PER_TICK};

/// How often the rest of the machine is listed (new processes found) and read.
pub(super) const REST_EVERY_NS: u64 = 1_000_000_000;
/// A rest that took at least this many CPUs at its last read is read every sweep...
const REST_BUSY_CPUS: f64 = 0.2;
/// ...while it has at most this many threads: under a millisecond of reading per sweep.
const REST_FAST_MAX_TASKS: usize = 400;
/// Most tasks read per rest read: about 5 ms of reading on these machines.
pub(super) const REST_MAX_TASKS: usize = 4_000;
/// Allowed CPUs, cgroup and autogroup of the rest are re-read this often.
pub(super) const REST_META_EVERY_NS: u64 = 10_000_000_000;

#[derive(Default)]
pub(super) struct Rest {
    procs: HashMap<u32, ProcState>,
    /// The last read, the last listing of its processes, and the last read of allowed CPUs
    /// and groups.
    pub(super) last_ns: u64,
    pub(super) listed_ns: u64,
    pub(super) meta_ns: u64,
    /// Whether each thread was runnable at the last read.
    runnable: HashMap<u32, bool>,
    /// Each process's own CPU (its threads', the exited ones' included) at the last read, ns.
    own: HashMap<u32, u64>,
    /// CLOCK_BOOTTIME at the last listing: a process first read since that started after it
    /// was born since, and all it ran is this interval's.
    boot_ns: u64,
    /// Whether its last read found it busy and small enough to read every sweep.
    fast: bool,
}

impl Rest {
    /// Whether a read is due at `now`: once a second, and every sweep while it is fast.
    pub(super) fn due(&self, now: u64) -> bool {
        self.fast || self.listing_due(now)
    }

    /// Whether its processes are due to be listed again (a scan of /proc) at `now`.
    pub(super) fn listing_due(&self, now: u64) -> bool {
        now + REST_EVERY_NS / 10 >= self.listed_ns + REST_EVERY_NS
    }

    /// Reads every process in `members` ((pid, start), not in any workload); `listed`: the
    /// members were listed afresh for this read.
    pub(super) fn read(
        &mut self,
        members: &[(u32, u64)],
        sweep: &mut Sweep,
        buf: &mut Vec<u8>,
        listed: bool,
    ) -> RestSample {
        let since = self.last_ns;
        self.last_ns = sweep.now;
        // Between listings no new process is admitted: the boundary for "born since" stays
        // the last listing's.
        let boot_before = if listed {
            self.listed_ns = sweep.now;
            std::mem::replace(&mut self.boot_ns, boottime_ns())
        } else {
            self.boot_ns
        };
        // Per parent: the CPU its children that are gone had when last read, already counted
        // as theirs; its cutime takes it in again when it reaps them.
        let mut counted: HashMap<u32, u64> = HashMap::new();
        let known: std::collections::HashSet<u32> = self.procs.keys().copied().collect();
        let skipped = self.admit(members, sweep, buf, &mut counted);
        let child_before = self.read_all(sweep, buf, &mut counted);
        let born_since = |pid: u32, start: u64| {
            known.contains(&pid) || (boot_before != 0 && start * NS_PER_TICK > boot_before)
        };
        let (mut tasks, mut procs) =
            self.tasks(since, &child_before, &counted, sweep.real_proc, born_since);
        tasks.sort_by_key(|t| t.tid);
        procs.sort_by_key(|p| p.pid);
        // What it took: its processes' own and reaped CPU, or what its tasks were seen to run
        // where their processes' clocks are not read.
        let took_ns = procs
            .iter()
            .map(|p| p.own_ns + p.reaped_ns)
            .sum::<u64>()
            .max(tasks.iter().map(|t| t.run_ns).sum());
        let threads: usize = self.procs.values().map(|p| p.tasks.len()).sum();
        self.fast = since != 0
            && took_ns as f64 >= REST_BUSY_CPUS * sweep.now.saturating_sub(since) as f64
            && threads <= REST_FAST_MAX_TASKS;
        RestSample {
            t_ns: sweep.now,
            since_ns: since,
            tasks,
            procs,
            skipped,
        }
    }

    /// Forgets the processes no longer listed and opens the new ones, within the budget of
    /// tasks; returns how many were left out.
    fn admit(
        &mut self,
        members: &[(u32, u64)],
        sweep: &mut Sweep,
        buf: &mut Vec<u8>,
        counted: &mut HashMap<u32, u64>,
    ) -> u64 {
        let wanted: HashMap<u32, u64> = members.iter().copied().collect();
        self.procs.retain(|pid, p| {
            let keep = wanted.get(pid) == Some(&p.start);
            if !keep {
                count_gone(counted, p);
            }
            keep
        });
        let mut tasks_seen: usize = self.procs.values().map(|p| p.tasks.len()).sum();
        let mut skipped = 0u64;
        for &(pid, start) in members {
            if self.procs.contains_key(&pid) {
                continue;
            }
            if tasks_seen >= REST_MAX_TASKS {
                skipped += 1;
                continue;
            }
            if let Ok(Some(p)) = ProcState::open(sweep, pid, start, buf) {
                tasks_seen += p.tasks.len();
                self.procs.insert(pid, p);
            }
        }
        skipped
    }

    /// Reads every process, forgets those gone; returns each one's children's ticks before.
    fn read_all(
        &mut self,
        sweep: &mut Sweep,
        buf: &mut Vec<u8>,
        counted: &mut HashMap<u32, u64>,
    ) -> HashMap<u32, u64> {
        let mut problems = Vec::new();
        let mut gone = Vec::new();
        let mut child_before: HashMap<u32, u64> = HashMap::with_capacity(self.procs.len());
        for (&pid, p) in self.procs.iter_mut() {
            child_before.insert(pid, p.sample.child_ticks);
            if let Err(ProcGone::Gone) = p.read(pid, 0, sweep, buf, &mut problems) {
                count_gone(counted, p);
                gone.push(pid);
            }
        }
        for pid in &gone {
            self.procs.remove(pid);
        }
        child_before
    }

    /// The tasks that ran, waited or are runnable, with what they did since the last read,
    /// and every process that used CPU, with all it used. `known(pid, start)`: the process
    /// was read before, or was born since the last read (so a thread of it that is new was
    /// born in the interval, and its counters since birth are this interval's).
    fn tasks(
        &mut self,
        since: u64,
        child_before: &HashMap<u32, u64>,
        counted: &HashMap<u32, u64>,
        real_proc: bool,
        known: impl Fn(u32, u64) -> bool,
    ) -> (Vec<RestTask>, Vec<RestProc>) {
        let me = std::process::id();
        let mut out = Vec::new();
        let mut procs = Vec::new();
        let mut runnable_now: HashMap<u32, bool> = HashMap::with_capacity(self.runnable.len());
        let mut own_now: HashMap<u32, u64> = HashMap::with_capacity(self.procs.len());
        for (&pid, p) in self.procs.iter_mut() {
            let born_here = known(pid, p.start);
            // What its children used since the last read, less what was counted as theirs
            // while they lived. schedlab's own children are its workloads, counted as such.
            let reaped = if pid == me {
                0
            } else {
                let before = child_before
                    .get(&pid)
                    .copied()
                    .unwrap_or(p.sample.child_ticks);
                (p.sample.child_ticks.saturating_sub(before) * NS_PER_TICK)
                    .saturating_sub(counted.get(&pid).copied().unwrap_or(0))
            };
            let mut seen_ran = false;
            for (&tid, t) in &p.tasks {
                let runnable = t.sample.state == Some('R');
                let before = self.runnable.get(&tid).copied().unwrap_or(false);
                runnable_now.insert(tid, runnable);
                // A thread read for the first time was born since the last read when its
                // process was known then: all it did is this interval's.
                let (run, wait) = match t.deltas() {
                    Some(d) => d,
                    None if born_here => (t.sample.run_ns, t.sample.wait_ns),
                    None => continue,
                };
                seen_ran |= run > 0;
                if since == 0 || (run == 0 && wait == 0 && !runnable) {
                    continue;
                }
                let fresh = t.sample.vol_ns == self.last_ns;
                out.push(RestTask {
                    pid,
                    tid,
                    comm: p.comm.clone(),
                    session: p.sample.session,
                    cgroup: p.sample.cgroup.clone(),
                    autogroup: p.sample.autogroup,
                    run_ns: run,
                    wait_ns: wait,
                    reaped_ns: 0,
                    runnable,
                    runnable_before: before,
                    nice: t.sample.nice,
                    policy: t.sample.policy,
                    rt_priority: t.sample.rt_priority,
                    dl_bw: t.sample.dl_bw,
                    cpus: t.sample.cpus.clone(),
                    cpu: t.sample.cpu,
                    kthread: p.kthread,
                    observer: pid == me,
                    vol: t.sample.vol.filter(|_| fresh),
                    invol: t.sample.invol.filter(|_| fresh),
                    slices: if t.first_read() {
                        t.sample.slices
                    } else {
                        t.slices_since()
                    },
                });
            }
            // Its own CPU, exited threads included: the clock where it can be read (exact),
            // else its stat's ticks. Read only when something of it moved.
            let last = self.own.get(&pid).copied();
            let moved = seen_ran || last.is_none() || p.tasks.is_empty();
            let own = if !moved {
                last
            } else if real_proc {
                p.read_clock(pid)
                    .map(|(ns, _)| ns)
                    .or(Some(p.sample.cpu_ticks * NS_PER_TICK))
            } else {
                Some(p.sample.cpu_ticks * NS_PER_TICK)
            };
            let Some(own) = own else { continue };
            own_now.insert(pid, own);
            let base = match last {
                Some(b) => b,
                None if born_here && since != 0 => 0,
                None => continue,
            };
            let own_ns = own.saturating_sub(base);
            if since == 0 || (own_ns == 0 && reaped == 0) {
                continue;
            }
            let main = p.tasks.get(&pid).or_else(|| p.tasks.values().next());
            procs.push(RestProc {
                pid,
                comm: p.comm.clone(),
                session: p.sample.session,
                cgroup: p.sample.cgroup.clone(),
                autogroup: p.sample.autogroup,
                own_ns,
                reaped_ns: reaped,
                nice: main.map_or(0, |t| t.sample.nice),
                policy: main.map_or(0, |t| t.sample.policy),
                cpus: main.and_then(|t| t.sample.cpus.clone()),
                kthread: p.kthread,
            });
        }
        self.runnable = runnable_now;
        self.own = own_now;
        (out, procs)
    }
}

/// CLOCK_BOOTTIME now, in ns: the clock processes' start times count from.
fn boottime_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Adds a process that is gone to what its parent's cutime will count again.
fn count_gone(counted: &mut HashMap<u32, u64>, p: &ProcState) {
    *counted.entry(p.sample.ppid).or_default() +=
        (p.sample.cpu_ticks + p.sample.child_ticks) * NS_PER_TICK;
}
