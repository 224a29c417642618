//! The rest of the machine as claimants: its tasks seen at a read, and for each process the
//! CPU its tasks used unseen (threads and children born and gone between two reads), so that
//! every CPU-second it took lands in its group and the solver shares the CPUs over all groups
//! at once.
//!
//! A process's own CPU (its CPU clock, exited threads included) and its reaped children's
//! (cutime + cstime) say what it used in all; its threads read at this read say what of that
//! was seen. The difference was used by tasks that lived between two reads: under churn (a
//! build's compilers, a thread pool's bursts) most of a group's CPU. Such tasks wanted at least
//! what they took, and, as they ran beside the process's seen tasks, about the same wait per
//! CPU-second those wanted (the wait after a preemption: demand::wanted).

use foldhash::{HashMap, HashSet};

use super::account::{class_of, Claim};
use super::cpuset::CpuSet;
use super::demand::{self, Observed, TaskMemo};
use super::tree::Placement;
use crate::probe::{RestProc, RestSample, RestTask};

/// The weight of the latest read in a task's average share of time asleep: about the last
/// four reads count.
const ASLEEP_WEIGHT: f64 = 0.25;

/// The most a process's unseen tasks are taken to have waited per ns they ran: a bound on an
/// estimate, as for a fork loop's children (account::fold_children).
const MAX_WAIT_RATIO: f64 = 10.0;

/// Switches a task must have made before their kinds say whether it sleeps or is preempted.
const MIN_SWITCHES: u64 = 100;

/// How much a process's waits at one read weigh at the next (`wait_ratio`).
const WAITS_DECAY: f64 = 0.5;

/// A claimant of the rest of the machine, with what names it and its wakeups.
#[derive(Clone, Debug, PartialEq)]
pub struct RestClaim {
    pub claim: Claim,
    /// Its process, and the process's name (`comm`).
    pub pid: u32,
    pub comm: String,
    /// ns it waited on a run queue, the part of it after wakeups, and how many of its
    /// timeslices began after one.
    pub wait_ns: f64,
    pub woken_wait_ns: f64,
    pub wakeups: f64,
}

/// The rest's claimants from one read of it. `memo`: per thread, what demand::wanted keeps.
pub fn claims(
    r: &RestSample,
    memo: &mut std::collections::HashMap<u32, TaskMemo>,
) -> Vec<RestClaim> {
    let t = r.t_ns.saturating_sub(r.since_ns);
    if r.since_ns == 0 || t == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(r.tasks.len() + r.procs.len());
    let mut seen = HashSet::default();
    // Per process: what its read tasks ran, the wait they wanted beyond it, and their wait
    // after wakeups.
    let mut ran: HashMap<u32, Seen> = HashMap::default();
    for task in &r.tasks {
        seen.insert(task.tid);
        let tm = memo.entry(task.tid).or_default();
        let (c, contended) = task_claim(task, t, tm);
        let e = ran.entry(task.pid).or_default();
        e.run += task.run_ns.min(t);
        if !task.kthread {
            e.wanted_wait += contended;
            e.woken_wait += c.woken_wait_ns as u64;
        }
        out.push(c);
    }
    for p in &r.procs {
        let seen = ran.get(&p.pid).copied().unwrap_or_default();
        let ratio = wait_ratio(p, seen, t, memo.entry(p.pid).or_default());
        out.extend(unseen_claims(p, seen, ratio, t));
    }
    // Threads not listed were idle: they keep what they were credited and the share of their
    // switches that were preemptions (a sleeper stuck after a wakeup is late, not short),
    // and nothing else. A process's waits stay on its main thread's memo while it runs.
    seen.extend(r.procs.iter().map(|p| p.pid));
    memo.retain(|tid, m| seen.contains(tid) || m.credit_ns > 0 || m.preempted.is_some());
    if memo.len() > 100_000 {
        memo.clear();
    }
    out
}

/// One task seen at the read, and its wait after preemptions before any bound for pacing:
/// how contended its process's CPUs were, which its threads born and gone shared
/// (`unseen_claims`). A churning process's spawner sleeps while its threads run; its own
/// demand is what it ran, but its waits say what its threads waited too.
fn task_claim(task: &RestTask, t: u64, tm: &mut TaskMemo) -> (RestClaim, u64) {
    tm.runnable = Some(task.runnable_before);
    // Its voluntary switches since its last status read (before `wanted` moves the memo).
    let slept = task
        .vol
        .zip(tm.switches)
        .map(|(v, (v0, _))| v.saturating_sub(v0));
    let w = demand::wanted(
        Observed {
            run_ns: task.run_ns,
            wait_ns: task.wait_ns,
            slices: task.slices,
            runnable: Some(task.runnable),
            vol: None,
            switches: task.vol.zip(task.invol),
            since_ns: 0,
        },
        t,
        tm,
    );
    // A kernel thread serves work queued by others (a kworker, ksoftirqd): waiting does not
    // make more of it, so it wanted what it ran, and all its wait was a delay. Counting its
    // wait would have a kworker starved beside a real-time hog want the whole CPU.
    //
    // So does a task of the rest that ran and was asleep at the read: it went to sleep after
    // its last wait, so whatever it waited after a preemption it made up before sleeping (a
    // daemon woken by a timer or a socket does the same work later, not more of it). Beside
    // hackbench, the root group's daemons waited 0.57 s for 0.06 s run; counted as CPU they
    // wanted, they read `short`. A task still runnable may have work left: its preempted
    // wait stays demand.
    //
    // schedlab's own threads do one sweep per interval and are runnable at their own read:
    // a wait makes them late, not want more. Counted, the observer's group read `STARVED`
    // beside 30 chat rooms (due 0.115 CPU for 0.057 received, the sweep's own).
    let caught_up = !task.runnable && task.run_ns > 0;
    //
    // A task runnable at the read that slept for most of the interval is paced by what wakes
    // it (a timer, a socket), not by the CPU: served at once, it would have done the same
    // bursts sooner, and at most the rest of the burst it was preempted in. Its preempted
    // wait is demand up to one burst (what it ran per sleep), the rest a delay. In CI's root
    // autogroup, beside 30 chat rooms, a nice -10 agent thread woke once a second, ran 4 ms,
    // was preempted and waited 200 to 340 ms: counted whole, its group read `STARVED`.
    let run = task.run_ns.min(t);
    // Its share of the interval asleep, averaged over every read it is listed at, those it
    // was asleep at too: averaged only over reads it was runnable at, a daemon's first read
    // runnable had no history. In CI's root autogroup, beside hackbench, pid 1's agent thread
    // asleep 80% of its seconds was first runnable at a read after a second it waited 500 ms:
    // taken for CPU-bound there, it was credited 0.1 s it never wanted, and its group read
    // `short`.
    let asleep = t.saturating_sub(run + w.waited);
    let share = asleep as f64 / t as f64;
    let usually_asleep = tm.asleep.map_or(share, |a| a + (share - a) * ASLEEP_WEIGHT);
    tm.asleep = Some(usually_asleep);
    let contended = if task.kthread || task.observer || caught_up {
        0
    } else {
        w.busy.saturating_sub(run)
    };
    let (busy, woken_wait, wakeups) = if task.kthread || task.observer || caught_up {
        (task.run_ns.min(t), task.wait_ns.min(t), task.slices as f64)
    } else {
        // Asleep most of the time over its recent reads, it is a sleeper even in an interval
        // whose wait outlasted its sleep: in CI's root autogroup, beside 30 chat rooms at
        // the same level, a tokio worker of pid 1 (nice -10, asleep 80% of its seconds) had
        // seconds of 600 ms waited for 5 ms run, and taken then for CPU-bound it was credited
        // ten times what it ran: its group read `short`. A task starved while CPU-bound
        // sleeps little at any read, and its average says so within a few.
        // The burst it was preempted in is pending at this read. When it was pending at the
        // last read too, that one was run in this interval, inside `run`: crediting a burst
        // at every read would count one burst more per interval for a task runnable at most
        // reads (a busy machine's agent threads).
        //
        // Its switch counts are read only every so often (status, not schedstat); unread at
        // this read, it still slept at least once, being neither on a CPU nor waiting for most
        // of the interval: a burst of at most what it ran (unbounded, the same pid 1 thread
        // was credited 73 ms it never wanted).
        //
        // Not run at all since the last read, it is still waiting after a wakeup: its burst is
        // credited by `paced` at the read after it runs, and its wait so far is a delay. In
        // CI's root autogroup beside hackbench, pid 1's agent thread, runnable at two reads
        // and not run between them, had a second of wait split by its share of preemptions:
        // 0.15 s of CPU it never wanted, and its group read `short` (0.149 for 0.183). A task
        // starved while CPU-bound stops being a sleeper within a few reads of waiting.
        //
        // So is one whose switches, over its life, nearly all ended in a sleep: each of its
        // runs is a burst paced by a wakeup, however long its wait now. Beside a pipe
        // ping-pong, a sandbox's agent (128,586 voluntary switches, 456 preemptions) stayed
        // runnable for four reads, running 9 µs in all after one preemption: taken for a
        // CPU-bound task starved, it wanted a CPU and its group read `STARVED`. A hog's
        // switches are mostly preemptions.
        let mostly_sleeps = tm
            .switches
            .is_some_and(|(v, i)| v + i >= MIN_SWITCHES && i * 10 <= v);
        let w = if asleep > run + w.waited || usually_asleep > 0.5 || mostly_sleeps {
            if run == 0 {
                demand::Wanted {
                    busy: 0,
                    woken_wait: w.waited,
                    ..w
                }
            } else {
                // Without a sleep since the last read, the burst it was preempted in.
                let slept = if mostly_sleeps {
                    slept.filter(|&n| n > 0)
                } else {
                    slept
                };
                demand::paced(w, run, slept.or(Some(1)), !task.runnable_before)
            }
        } else {
            w
        };
        (w.busy, w.woken_wait, w.wakeups)
    };
    // Children its process reaped (recordings before procs were kept): as before, with it.
    let reaped = task.reaped_ns as f64;
    let (class, weight) = class_of(task.policy, task.nice, task.rt_priority, task.dl_bw);
    let claim = RestClaim {
        claim: Claim {
            demand: ((busy as f64 + reaped) / t as f64).min(1.0),
            received: (task.run_ns as f64 + reaped) / t as f64,
            weight,
            class,
            cpus: cpus_of(task.cpus.as_deref()),
            cpu: task.cpu,
            placement: Placement {
                cgroup: task.cgroup.as_deref().map(Into::into),
                autogroup: task.autogroup,
                session: task.session,
            },
        },
        pid: task.pid,
        comm: task.comm.clone(),
        wait_ns: task.wait_ns.min(t) as f64,
        woken_wait_ns: woken_wait as f64,
        wakeups,
    };
    (claim, contended)
}

/// The wait a process's seen tasks wanted per ns they ran, over this read and the ones before
/// it (each read before weighing half the next), kept on its main thread's memo: what its
/// tasks born and gone unseen are taken to have wanted beyond what they ran.
///
/// One read's tasks can show nothing: a process spawning and joining eight spinning threads
/// at a time, read every 250 ms, had only its main thread (asleep in the join) listed at one
/// read in seven, while its spinners waited ten times what they ran at the others. Taken from
/// that read alone, its unseen threads wanted only what they took; beside a hog in a cgroup
/// weighted 100, its cgroup weighted 300 was taken to want 1.44 CPUs, not 2, and the hog was
/// due 0.56 to 0.61 CPU where the kernel's rules give 0.5.
fn wait_ratio(p: &RestProc, seen: Seen, t: u64, main: &mut TaskMemo) -> f64 {
    if p.kthread {
        return 0.0;
    }
    let t = t as f64;
    let now = (seen.wanted_wait as f64 / t, seen.run as f64 / t);
    let (wanted, ran) = main.process_waits.map_or(now, |(w, r)| {
        (w * WAITS_DECAY + now.0, r * WAITS_DECAY + now.1)
    });
    main.process_waits = Some((wanted, ran));
    if ran > 0.0 {
        (wanted / ran).min(MAX_WAIT_RATIO)
    } else {
        0.0
    }
}

/// What a process's read tasks showed: ns run, wait wanted beyond it, wait after wakeups.
#[derive(Clone, Copy, Default)]
struct Seen {
    run: u64,
    wanted_wait: u64,
    woken_wait: u64,
}

/// What a process used that its read tasks do not show, as claimants of its group: one per
/// CPU it kept busy (a task runs on one CPU at a time), each wanting its part of the unseen
/// CPU and the wait its seen tasks wanted per ns they ran.
///
/// A process whose reaped children did more than its own threads (a shell running a short
/// program in a loop, a build's driver) is a closed loop: it forks, sleeps until the child
/// exits, and forks again, so each of its waits and its children's delays the next round, and
/// the loop would run faster if it never waited on a run queue. Its children, started on the
/// same run queues, waited about as long as it did after its wakeups; a loop paced by a
/// sleeping child (`while :; do sleep 1; cat f; done`) speeds up by what the waits took of
/// its time, not by their length in CPU.
fn unseen_claims(p: &RestProc, seen: Seen, ratio: f64, t: u64) -> Vec<RestClaim> {
    let Seen {
        run: seen_run,
        woken_wait,
        ..
    } = seen;
    // Its own time is never less than what its threads were seen to run (a stat's ticks can
    // lag a thread's ns).
    let unseen = (p.own_ns.max(seen_run) + p.reaped_ns).saturating_sub(seen_run);
    // Under a microsecond a second is the clock's and schedstat's reads a few µs apart.
    if unseen * 1000 < t {
        return Vec::new();
    }
    let received = unseen as f64 / t as f64;
    // Init (pid 1) reaps every orphan on the machine: what it reaped ran in the orphans' own
    // groups, for their own reasons, and took what it took; it is no loop init drives, and
    // its agent threads' waits say nothing of it. (On this project's VMs pid 1 is a nice -10
    // agent whose threads wait long beside a busy lab: taken for a fork loop, its reaped
    // orphans' CPU was inflated by those waits.) Its own threads' unseen CPU is as anyone's.
    if p.pid == 1 {
        let own = p.own_ns.max(seen_run).saturating_sub(seen_run) as f64 / t as f64;
        let reaped = p.reaped_ns as f64 / t as f64;
        return spread(p, own * (1.0 + ratio) + reaped, received);
    }
    let forks_and_waits = !p.kthread && p.reaped_ns > p.own_ns.max(seen_run);
    let wanted = if forks_and_waits {
        // One loop, the process and a child at a time: it runs, waits on a run queue or
        // sleeps (a `sleep` child, input), one after the other. Without the waits each round
        // ends sooner and the loop runs that much more, at most a CPU, its own part included.
        let t = t as f64;
        let ran = (seen_run + unseen) as f64 / t;
        let waited = (2.0 * woken_wait as f64 / t).min(0.95);
        ((ran / (1.0 - waited)).min(1.0) - seen_run as f64 / t).max(received)
    } else {
        received * (1.0 + ratio)
    };
    spread(p, wanted, received)
}

/// A process's unseen CPU as claimants of its group: one per CPU it wanted (a task runs on
/// one CPU at a time), each with its part of what it wanted and received.
fn spread(p: &RestProc, wanted: f64, received: f64) -> Vec<RestClaim> {
    let n = wanted.ceil().max(1.0);
    let (class, weight) = class_of(p.policy, p.nice, 0, None);
    (0..n as usize)
        .map(|_| RestClaim {
            claim: Claim {
                demand: (wanted / n).min(1.0),
                received: received / n,
                weight,
                class,
                cpus: cpus_of(p.cpus.as_deref()),
                cpu: None,
                placement: Placement {
                    cgroup: p.cgroup.as_deref().map(Into::into),
                    autogroup: p.autogroup,
                    session: p.session,
                },
            },
            pid: p.pid,
            comm: p.comm.clone(),
            wait_ns: 0.0,
            woken_wait_ns: 0.0,
            wakeups: 0.0,
        })
        .collect()
}

fn cpus_of(list: Option<&str>) -> CpuSet {
    list.and_then(CpuSet::parse_list).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn sample(tasks: Vec<RestTask>, procs: Vec<RestProc>) -> RestSample {
        RestSample {
            t_ns: 2_000 * MS,
            since_ns: 1_000 * MS,
            tasks,
            procs,
            skipped: 0,
        }
    }

    fn task(pid: u32, tid: u32, run: u64, wait: u64) -> RestTask {
        RestTask {
            pid,
            tid,
            comm: "churn".into(),
            session: pid,
            autogroup: Some((7, 0)),
            run_ns: run * MS,
            wait_ns: wait * MS,
            runnable: true,
            ..RestTask::default()
        }
    }

    fn proc(pid: u32, own: u64, reaped: u64) -> RestProc {
        RestProc {
            pid,
            comm: "churn".into(),
            session: pid,
            autogroup: Some((7, 0)),
            own_ns: own * MS,
            reaped_ns: reaped * MS,
            ..RestProc::default()
        }
    }

    /// What a process's unseen tasks wanted, from a read of its threads and itself.
    fn unseen_demand(tasks: Vec<RestTask>, procs: Vec<RestProc>) -> f64 {
        let cs = claims(&sample(tasks, procs), &mut Default::default());
        cs[1..].iter().map(|c| c.claim.demand).sum()
    }

    /// What the tasks gone unseen wanted is `want` CPUs, to `within`.
    #[track_caller]
    fn assert_unseen(tasks: Vec<RestTask>, procs: Vec<RestProc>, want: f64, within: f64) {
        let unseen = unseen_demand(tasks, procs);
        assert!((unseen - want).abs() < within, "{unseen}");
    }

    /// The first claim wanted `want` CPUs, to 1e-9.
    #[track_caller]
    fn assert_demand(cs: &[RestClaim], want: f64) {
        let got = cs[0].claim.demand;
        assert!((got - want).abs() < 1e-9, "{got}");
    }

    fn received(cs: &[RestClaim]) -> f64 {
        cs.iter().map(|c| c.claim.received).sum()
    }

    #[test]
    fn threads_born_and_gone_between_reads_are_charged_to_their_process() {
        // One survivor seen (100 ms run, 100 ms wait after preemptions); its process's clock
        // says 1,700 ms: 1,600 ms ran in threads that came and went unseen.
        let s = sample(vec![task(10, 11, 100, 100)], vec![proc(10, 1700, 0)]);
        let cs = claims(&s, &mut Default::default());
        assert!((received(&cs) - 1.7).abs() < 1e-9);
        // Its unseen tasks wanted what they took and the wait its seen one wanted per ns:
        // 1.6 × 2 = 3.2 CPUs, as four claimants of at most one CPU each.
        let unseen: Vec<_> = cs[1..].iter().map(|c| c.claim.demand).collect();
        assert_eq!(unseen.len(), 4);
        assert!(unseen.iter().all(|d| (d - 0.8).abs() < 1e-9));
        assert!(cs
            .iter()
            .all(|c| c.claim.placement.autogroup == Some((7, 0))));
    }

    #[test]
    fn reaped_children_count_and_nothing_is_counted_twice() {
        // A make: its own thread ran 10 ms; its compilers, reaped, 900 ms.
        let s = sample(vec![task(20, 20, 10, 0)], vec![proc(20, 10, 900)]);
        let cs = claims(&s, &mut Default::default());
        assert!((received(&cs) - 0.91).abs() < 1e-9);
        // A process whose threads were all read adds nothing.
        let s = sample(vec![task(30, 30, 200, 0)], vec![proc(30, 200, 0)]);
        assert_eq!(claims(&s, &mut Default::default()).len(), 1);
    }

    #[test]
    fn a_shell_running_a_short_program_in_a_loop_is_a_closed_loop() {
        // sh ran 30 ms and waited 150 ms after its wakeups (each child's exit); its children,
        // reaped, ran 600 ms and waited unseen. The loop wanted its CPU and both waits.
        let mut sh = task(50, 50, 30, 150);
        (sh.runnable, sh.slices, sh.vol, sh.invol) = (false, 1000, Some(1000), Some(0));
        assert_unseen(vec![sh.clone()], vec![proc(50, 30, 600)], 0.87, 0.01);
        // Never more than one CPU for the loop, the shell's own run included.
        let mut busy = sh.clone();
        busy.wait_ns = 600 * MS;
        assert_unseen(vec![busy], vec![proc(50, 30, 600)], 0.97, 0.01);
        // A process whose own threads did the work is not taken for a loop.
        assert_unseen(vec![sh], vec![proc(50, 700, 100)], 0.77, 0.01);
    }

    #[test]
    fn init_reaping_orphans_is_no_fork_loop() {
        // pid 1, an agent whose thread ran 2 ms and waited 40 ms after wakeups beside a busy
        // lab, reaped orphans that had run 30 ms unseen: they took 30 ms, and wanted that.
        let mut init = task(1, 1, 2, 40);
        (init.runnable, init.slices, init.vol, init.invol) = (false, 4, Some(4), Some(0));
        assert_unseen(vec![init.clone()], vec![proc(1, 2, 30)], 0.030, 1e-9);
        // Any other process reaping that much more than it ran is a closed loop.
        let mut sh = init;
        (sh.pid, sh.tid) = (50, 50);
        assert!(unseen_demand(vec![sh], vec![proc(50, 2, 30)]) > 0.032);
    }

    #[test]
    fn a_shell_polling_with_sleep_wants_little_more_than_it_took() {
        // A busy machine: sh ran 1 ms and waited 20 ms after its wakeups; its children (a
        // `sleep` and a `cat` each round) ran 30 ms. Most of its second was the sleep: no
        // wait removed would make it take more than about 32 ms.
        let mut sh = task(50, 50, 1, 20);
        (sh.runnable, sh.slices, sh.vol, sh.invol) = (false, 4, Some(4), Some(0));
        assert_unseen(vec![sh], vec![proc(50, 1, 30)], 0.031, 0.002);
    }

    #[test]
    fn a_daemon_asleep_at_the_read_wants_what_it_ran_and_its_waits_are_latency() {
        // Woken 10 times and preempted 10 times (half its switches): it ran 7 ms and waited
        // 90 ms, and was asleep at the read: it did its work, later.
        let mut d = task(60, 60, 7, 90);
        (d.runnable, d.slices, d.vol, d.invol) = (false, 20, Some(10), Some(10));
        let cs = claims(&sample(vec![d.clone()], vec![]), &mut Default::default());
        assert_demand(&cs, 0.007);
        assert!((cs[0].woken_wait_ns - 90.0 * MS as f64).abs() < 1.0);
        // Runnable at the read it may have work left, but it slept most of the second: at
        // most the burst pending, which without an earlier count of its sleeps is at most
        // what it ran (7 ms), not its whole preempted half (45 ms).
        d.runnable = true;
        let cs = claims(&sample(vec![d], vec![]), &mut Default::default());
        assert_demand(&cs, 0.014);
    }

    #[test]
    fn a_sleeping_kernel_thread_wants_what_it_ran_and_its_wait_is_latency() {
        let mut kworker = task(40, 40, 1, 971);
        (kworker.kthread, kworker.runnable, kworker.slices) = (true, false, 12);
        let cs = claims(&sample(vec![kworker], vec![]), &mut Default::default());
        assert_demand(&cs, 0.001);
        assert!((cs[0].woken_wait_ns - 971.0 * MS as f64).abs() < 1.0);
        assert_eq!(cs[0].wakeups, 12.0);
    }

    #[test]
    fn the_observer_runnable_at_its_own_read_wants_what_it_ran() {
        // The sweep's thread is always runnable when it reads itself; beside 30 chat rooms
        // it ran 57 ms and waited 60 ms after preemptions. Waiting made it late, not busier.
        let mut me = task(70, 70, 57, 60);
        (me.observer, me.slices, me.vol, me.invol) = (true, 20, Some(10), Some(10));
        let cs = claims(&sample(vec![me], vec![]), &mut Default::default());
        assert_demand(&cs, 0.057);
    }

    #[test]
    fn a_sleeper_preempted_in_its_burst_wants_at_most_the_burst_more() {
        // CI's root autogroup beside 30 chat rooms: an agent's thread woke once, ran 4.6 ms,
        // was preempted twice and waited 327 ms, and was runnable at the read. It slept most
        // of the second: served at once it would have run its 4.6 ms sooner, and at most one
        // more burst before the read.
        let mut a = task(1, 103, 4, 327);
        a.run_ns = 4_600_000;
        (a.slices, a.vol, a.invol) = (2, Some(69_667), Some(55_111));
        // Its last status read: one voluntary switch and two preemptions ago.
        let memo = || {
            std::collections::HashMap::from([(
                103,
                TaskMemo {
                    switches: Some((69_666, 55_109)),
                    preempted: Some(0.5),
                    ..TaskMemo::default()
                },
            )])
        };
        let cs = claims(&sample(vec![a.clone()], vec![]), &mut memo());
        assert_demand(&cs, 0.0092);
        // The wait it did not want is a delay.
        assert!(
            (cs[0].woken_wait_ns - 322.4 * MS as f64).abs() < 1.0,
            "{}",
            cs[0].woken_wait_ns
        );
        // Pending at the last read too: that burst was run in this second, within its 4.6 ms,
        // and the one pending now replaces it. It wanted what it ran.
        let mut again = a.clone();
        again.runnable_before = true;
        let cs = claims(&sample(vec![again], vec![]), &mut memo());
        assert_demand(&cs, 0.0046);
        // Its switch counts unread at this read (status is read every few reads): it slept
        // at least once, so at most one burst, its whole run, is pending.
        let mut unread = a.clone();
        (unread.vol, unread.invol) = (None, None);
        let cs = claims(&sample(vec![unread.clone()], vec![]), &mut memo());
        assert_demand(&cs, 0.0092);
        unread.runnable_before = true;
        let cs = claims(&sample(vec![unread], vec![]), &mut memo());
        assert_demand(&cs, 0.0046);
        // A second of 600 ms waited for one that usually sleeps 90% of its seconds: still a
        // sleeper, one burst pending at most.
        let mut long_wait = a.clone();
        long_wait.wait_ns = 600 * MS;
        let mut sleepy = memo();
        sleepy.get_mut(&103).unwrap().asleep = Some(0.9);
        let cs = claims(&sample(vec![long_wait], vec![]), &mut sleepy);
        assert_demand(&cs, 0.0092);
        // Runnable for most of the second, it is CPU-bound: its preempted wait is demand.
        a.wait_ns = 900 * MS;
        let cs = claims(&sample(vec![a], vec![]), &mut memo());
        assert!(cs[0].claim.demand > 0.6, "{}", cs[0].claim.demand);
    }

    #[test]
    fn seconds_asleep_at_the_read_count_in_how_much_a_task_sleeps() {
        // CI's root autogroup beside hackbench: pid 1's agent thread ran 5 ms a second and
        // slept the rest, asleep at three reads; then it waited 550 ms, ran 30 ms, was
        // preempted and runnable at the read. Its seconds asleep say it is a sleeper: one
        // burst pending at most (30 ms), not its preempted wait.
        let mut memo = std::collections::HashMap::new();
        let mut a = task(1, 105, 5, 2);
        (a.runnable, a.slices, a.vol, a.invol) = (false, 3, None, None);
        for _ in 0..3 {
            let cs = claims(&sample(vec![a.clone()], vec![]), &mut memo);
            assert_demand(&cs, 0.005);
        }
        let mut late = task(1, 105, 30, 550);
        late.slices = 4;
        let cs = claims(&sample(vec![late.clone()], vec![]), &mut memo);
        assert_demand(&cs, 0.060);
        // Seen first at that read, nothing says it sleeps: its preempted wait is demand.
        let cs = claims(&sample(vec![late], vec![]), &mut Default::default());
        assert!(cs[0].claim.demand > 0.5, "{}", cs[0].claim.demand);
    }

    #[test]
    fn a_sleeper_runnable_and_not_run_since_the_last_read_is_late_not_short() {
        // CI's root autogroup beside hackbench: pid 1's agent thread, asleep at three reads
        // (5 ms run a second), then runnable at two reads in a row without running between
        // them. Its second of waiting is a delay; what it will run is credited once it runs.
        let mut memo = std::collections::HashMap::new();
        let mut a = task(1, 105, 5, 2);
        (a.runnable, a.vol, a.invol) = (false, Some(100), Some(100));
        for _ in 0..3 {
            let cs = claims(&sample(vec![a.clone()], vec![]), &mut memo);
            assert_demand(&cs, 0.005);
            (a.vol, a.invol) = (a.vol.map(|v| v + 1), a.invol.map(|v| v + 1));
        }
        let mut woken = task(1, 105, 0, 0);
        (woken.vol, woken.invol) = (a.vol, a.invol);
        let cs = claims(&sample(vec![woken.clone()], vec![]), &mut memo);
        assert_demand(&cs, 0.0);
        woken.runnable_before = true;
        let cs = claims(&sample(vec![woken.clone()], vec![]), &mut memo);
        assert_demand(&cs, 0.0);
        assert!(
            cs[0].woken_wait_ns > 900.0 * MS as f64,
            "{}",
            cs[0].woken_wait_ns
        );
        // Kept waiting read after read, it no longer sleeps: a CPU-bound task starved.
        let mut wanted = 0.0;
        for _ in 0..4 {
            wanted = claims(&sample(vec![woken.clone()], vec![]), &mut memo)[0]
                .claim
                .demand;
        }
        assert!(wanted > 0.4, "{wanted}");
    }

    #[test]
    fn a_task_whose_switches_were_nearly_all_sleeps_stays_paced_however_long_it_waits() {
        // A sandbox's agent beside a pipe ping-pong: runnable at four reads in a row after one
        // preemption, it ran 0, 0, 0 and 9 µs and waited about a second each time. It wants
        // at most the burst it was preempted in, and its waits are a delay.
        let mut memo = std::collections::HashMap::new();
        let mut a = task(14719, 14719, 0, 1000);
        (a.runnable_before, a.vol, a.invol) = (true, Some(128_586), Some(456));
        let cs = claims(&sample(vec![a.clone()], vec![]), &mut memo);
        assert_demand(&cs, 0.0);
        (a.vol, a.invol) = (None, None);
        for _ in 0..2 {
            let cs = claims(&sample(vec![a.clone()], vec![]), &mut memo);
            assert_demand(&cs, 0.0);
        }
        a.run_ns = 9_000;
        (a.vol, a.invol, a.slices) = (Some(128_586), Some(457), 1);
        let cs = claims(&sample(vec![a.clone()], vec![]), &mut memo);
        assert!(cs[0].claim.demand <= 18e-6, "{}", cs[0].claim.demand);
        // A hog's switches are preemptions: starved like that, it wants the CPU.
        let mut hog = a;
        (hog.vol, hog.invol) = (Some(456), Some(128_586));
        let mut memo = std::collections::HashMap::new();
        let mut wanted = 0.0;
        for _ in 0..4 {
            wanted = claims(&sample(vec![hog.clone()], vec![]), &mut memo)[0]
                .claim
                .demand;
            hog.invol = hog.invol.map(|i| i + 1);
        }
        assert!(wanted > 0.9, "{wanted}");
    }

    #[test]
    fn a_read_that_shows_only_a_sleeping_spawner_keeps_its_threads_waits() {
        // A process spawning and joining spinners, reads 1 s apart: a spinner seen waiting
        // 100 ms for the 10 ms it ran, 1,100 ms of CPU run by threads gone unseen. They
        // wanted what they ran and ten times that in wait: 1.1 x 11, at most one CPU each.
        let mut memo = std::collections::HashMap::new();
        let spinner = task(80, 81, 10, 100);
        let busy = vec![proc(80, 1110, 0)];
        let cs = claims(&sample(vec![spinner], busy.clone()), &mut memo);
        let unseen: f64 = cs[1..].iter().map(|c| c.claim.demand).sum();
        assert!((unseen - 12.1).abs() < 1e-6, "{unseen}");
        // Next read, only its main thread is listed, asleep in the join (it ran 10 ms): the
        // waits its threads wanted at the read before still count, at half weight.
        let mut main = task(80, 80, 10, 0);
        main.runnable = false;
        let cs = claims(&sample(vec![main.clone()], busy.clone()), &mut memo);
        let unseen: f64 = cs[1..].iter().map(|c| c.claim.demand).sum();
        // 0.05 s wanted for 0.015 s seen run: 1.1 x (1 + 3.33).
        assert!(
            (unseen - 1.1 * (1.0 + 0.05 / 0.015)).abs() < 1e-6,
            "{unseen}"
        );
        // Read alone, that read says they wanted only what they ran.
        let cs = claims(&sample(vec![main], busy), &mut Default::default());
        let unseen: f64 = cs[1..].iter().map(|c| c.claim.demand).sum();
        assert!((unseen - 1.1).abs() < 1e-6, "{unseen}");
    }
}
