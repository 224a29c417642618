//! What a task wanted over an interval: the CPU it would have used had it never been kept
//! waiting, told apart from the time it merely waited after a wakeup (latency).
//!
//! schedstat gives a task's time on CPU (`run`) and on a run queue (`wait`, the kernel's
//! `run_delay`). Not all of that wait is CPU the task was refused:
//!
//! - **After a preemption** (an involuntary switch) the task was running and still wanted to:
//!   every ns it then waits is CPU it wanted and did not get.
//! - **After a wakeup** (it slept: a voluntary switch) the task waits until it first runs, then
//!   runs what it needs and sleeps again. Had it been given more CPU, it would not have used
//!   more: it would have used the same, sooner. That wait is latency, not demand; it shows as
//!   the row's wakeup delay, never as a CPU deficit.
//!
//! schedstat sums both kinds of wait; the switch counts in `status` say how many of each the
//! task had (each wait follows one switch-out), so its wait is split in that proportion: the
//! share of its recent switches that were involuntary is the share of its wait it wanted
//! (`TaskMemo::preempted`, from its last two status reads that moved). A CPU hog is preempted
//! and never sleeps (all its wait is demand), a kworker sleeps and is never preempted (none
//! of it is), a ping-pong task does each once a round trip (half). Tracepoints, which time each
//! wait from the switch or wakeup that began it, check this split in the kernel suite.
//!
//! One more correction: the kernel adds run-queue wait to `run_delay` only when the task
//! finally gets a CPU, so a task runnable for a whole interval without running shows no wait
//! at all until it runs, and then all of it at once. A task seen runnable at both ends of an
//! interval that cannot have slept in between (it never ran, or its voluntary switches did
//! not move) wanted the whole interval; the wait credited in advance is taken off the late
//! wait when it arrives, so every interval gets the wait that belongs to it, and none is
//! counted twice. A starved task never reads as idle.

/// What the model remembers of one task between intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskMemo {
    /// Wait already counted in earlier intervals that schedstat has not reported yet, in ns.
    pub credit_ns: u64,
    /// Runnable at the end of the last interval (Some(true)), not (Some(false)), unknown.
    pub runnable: Option<bool>,
    /// The voluntary switch count at its last read, and when it was read.
    pub vol: Option<(u64, u64)>,
    /// Its voluntary and involuntary switch counts at the last status read.
    pub switches: Option<(u64, u64)>,
    /// The share of its switches that were involuntary (preemptions), between its last two
    /// status reads that moved: the share of its run-queue wait that was CPU it wanted.
    pub preempted: Option<f64>,
    /// What it wanted and waited per ns of its last interval read (a thread of a big
    /// workload, read in rotation, is not read at every sweep: its last rate holds then).
    pub rate: (f64, f64),
    /// The share of its intervals it spent asleep (neither on a CPU nor waiting), averaged
    /// over the reads that listed it: what tells a daemon paced by events from a task paced by
    /// the CPU when one interval's long wait hides its sleep (rest.rs).
    pub asleep: Option<f64>,
    /// On a process's main thread, in the rest of the machine: the wait its seen threads
    /// wanted and what they ran, per ns of interval, summed over recent reads with decay
    /// (rest.rs `wait_ratio`).
    pub process_waits: Option<(f64, f64)>,
}

/// One task over one interval of `t_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observed {
    /// schedstat deltas: ns on CPU, ns of wait reported, timeslices run.
    pub run_ns: u64,
    pub wait_ns: u64,
    pub slices: u64,
    /// Its state at the end, when read: runnable or not.
    pub runnable: Option<bool>,
    /// Its voluntary switch count and when it was read, when read this interval.
    pub vol: Option<(u64, u64)>,
    /// Its voluntary and involuntary switch counts, when status was read this interval.
    pub switches: Option<(u64, u64)>,
    /// When the interval began (the previous Sample's time).
    pub since_ns: u64,
}

/// A task's interval, told apart (ns, each at most the interval).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Wanted {
    /// How long it wanted a CPU: what it ran, the wait it wanted, and wait the kernel has
    /// not reported yet for a task runnable throughout.
    pub busy: u64,
    /// All the run-queue wait counted for it this interval (schedstat's, and what was
    /// credited ahead of it).
    pub waited: u64,
    /// The part of that wait that followed a wakeup: latency, not demand.
    pub woken_wait: u64,
    /// How many of its timeslices began after a wakeup (its slices × the share of its
    /// switches that were voluntary): `woken_wait` over this is its mean wakeup delay.
    pub wakeups: f64,
}

/// Splits the interval of one task into what it wanted and what it merely waited.
pub fn wanted(o: Observed, t_ns: u64, memo: &mut TaskMemo) -> Wanted {
    // Late wait first pays back what was counted ahead.
    let paid = o.wait_ns.min(memo.credit_ns);
    memo.credit_ns -= paid;
    let wait = o.wait_ns - paid;
    let run = o.run_ns.min(t_ns);
    if let Some((v, i)) = o.switches {
        // Between two reads, the switches since the last; at its first read, all since it
        // was born (a new thread's are its whole life so far).
        let (v0, i0) = memo.switches.unwrap_or((0, 0));
        let (dv, di) = (v.saturating_sub(v0), i.saturating_sub(i0));
        if dv + di > 0 {
            memo.preempted = Some(di as f64 / (dv + di) as f64);
        }
        memo.switches = Some((v, i));
    }
    // Until two status reads tell, its state at the read does: a task asleep at the end most
    // likely slept before its waits; one runnable or unread is taken as preempted (as every
    // task was before the split: a starved task must not read as merely late).
    let preempted = memo
        .preempted
        .unwrap_or(if o.runnable == Some(false) { 0.0 } else { 1.0 });
    let wanted_wait = (wait as f64 * preempted).round() as u64;
    let mut out = Wanted {
        busy: (run + wanted_wait).min(t_ns),
        waited: wait.min(t_ns - run),
        woken_wait: wait.saturating_sub(wanted_wait).min(t_ns - run),
        wakeups: o.slices as f64 * (1.0 - preempted),
    };
    let before = memo.runnable == Some(true);
    // Unread, but it was runnable and has not run since: a task must run to go to sleep, so
    // it still is (a starved thread among thousands, whose state the probe's budget skipped).
    let runnable = o.runnable.or((before && run == 0).then_some(true));
    if runnable == Some(true) && out.busy < t_ns && before {
        // It cannot have slept if it never ran; if it ran, it did not sleep when its
        // voluntary switches stood still since a read made before the interval began.
        let stayed_awake = run == 0
            || matches!((memo.vol, o.vol), (Some((v0, at0)), Some((v1, at1)))
                if v0 == v1 && at0 <= o.since_ns && at1 > o.since_ns);
        if stayed_awake {
            // It waited the whole rest of the interval, unreported yet: counted now, and
            // paid back when the kernel reports it. Like any wait, it is demand as far as the
            // task waits after preemptions (a hog kept off its CPU: `STARVED`), and a delay as
            // far as after wakeups (a sleeper woken and not run for a second: late, by a
            // second, which the kernel's tracepoints show too).
            let ahead = t_ns - run - wait.min(t_ns - run);
            memo.credit_ns += ahead;
            let waited = t_ns - run;
            // One that ran and did not sleep since was preempted, whatever its history.
            let preempted = if run == 0 { preempted } else { 1.0 };
            let wanted_wait = (waited as f64 * preempted).round() as u64;
            out = Wanted {
                busy: run + wanted_wait,
                waited,
                woken_wait: waited - wanted_wait,
                // At least the wakeup it is still waiting after.
                wakeups: (o.slices as f64).max(1.0) * (1.0 - preempted),
            };
        }
    }
    memo.runnable = match runnable {
        Some(r) => Some(r),
        // Unread: a task busy for almost all of it was most likely still runnable.
        None if out.busy * 20 >= t_ns * 19 => Some(true),
        None => None,
    };
    if let Some(v) = o.vol {
        memo.vol = Some(v);
    }
    out
}

/// A task paced by what wakes it (a timer, a socket) rather than by the CPU: served at once,
/// it would have run the same bursts sooner, and at most the rest of the one it was preempted
/// in. Its preempted wait is demand up to one burst (what it ran per sleep) when it is
/// runnable at the read, none when it is asleep; the rest is a delay. `slept`: its voluntary
/// switches over the interval. A task that never slept or never ran is left as it is (a hog,
/// or one starved throughout, wants it all).
pub fn paced(w: Wanted, run: u64, slept: Option<u64>, runnable: bool) -> Wanted {
    let Some(n) = slept.filter(|&n| n > 0 && run > 0) else {
        return w;
    };
    let burst = if runnable { run / n } else { 0 };
    let busy = w.busy.min(run + burst);
    Wanted {
        busy,
        woken_wait: w.woken_wait + (w.busy - busy),
        ..w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn obs(run: u64, wait: u64, runnable: Option<bool>) -> Observed {
        Observed {
            run_ns: run * MS,
            wait_ns: wait * MS,
            runnable,
            ..Observed::default()
        }
    }

    /// busy and waited, in ms.
    fn bw(w: Wanted) -> (u64, u64) {
        (w.busy / MS, w.waited / MS)
    }

    /// What it wanted over an interval of `interval_ns` in which `o` was seen: busy and
    /// waited, in ms.
    fn wants(o: Observed, interval_ns: u64, m: &mut TaskMemo) -> (u64, u64) {
        bw(wanted(o, interval_ns, m))
    }

    /// A task runnable at its last read, with those switch counts (voluntary, involuntary)
    /// and that share of its waits taken as preemptions.
    fn runnable_switching(switches: (u64, u64), preempted: f64) -> TaskMemo {
        TaskMemo {
            runnable: Some(true),
            switches: Some(switches),
            preempted: Some(preempted),
            ..TaskMemo::default()
        }
    }

    #[test]
    fn a_starved_task_wants_every_interval_and_its_late_wait_is_not_counted_twice() {
        // A fair hog beside a real-time one, 500 ms intervals: it runs 50 ms a second.
        let mut m = TaskMemo::default();
        // Running when first seen.
        assert_eq!(wants(obs(500, 0, Some(true)), 500 * MS, &mut m), (500, 0));
        // Never ran, runnable at both ends: waited throughout (not idle).
        assert_eq!(wants(obs(0, 0, Some(true)), 500 * MS, &mut m), (500, 500));
        assert_eq!(m.credit_ns, 500 * MS);
        // Then it runs 50 ms; schedstat reports its 950 ms wait at once: 500 were counted.
        assert_eq!(
            wants(obs(50, 950, Some(true)), 500 * MS, &mut m),
            (500, 450)
        );
        assert_eq!(m.credit_ns, 0);
    }

    #[test]
    fn a_thread_starved_for_whole_intervals_still_wants_them() {
        // A CPU hog by its switches (only ever preempted), runnable and never run for two
        // whole intervals: it wanted both (STARVED, not late).
        let mut m = runnable_switching((0, 100), 1.0);
        for _ in 0..2 {
            let w = wanted(obs(0, 0, Some(true)), 500 * MS, &mut m);
            assert_eq!((bw(w), w.woken_wait), ((500, 500), 0));
        }
        assert_eq!(m.credit_ns, 1000 * MS);
    }

    #[test]
    fn a_sleeper_woken_and_not_run_for_a_whole_interval_is_late_not_short() {
        // The VM's agent beside a free pipe ping-pong: it sleeps at nearly every switch, and
        // once woke and waited 6 s (the kernel's tracepoints timed it). Over such a second it
        // wanted almost none of the CPU; the second is a wakeup delay.
        let mut m = runnable_switching((61_218, 264), 0.0);
        let w = wanted(obs(0, 0, Some(true)), 1000 * MS, &mut m);
        assert_eq!(bw(w), (0, 1000));
        assert_eq!(w.woken_wait, 1000 * MS);
        assert_eq!(w.wakeups, 1.0);
        // The 6 s the kernel reports when it finally runs pay back what was counted ahead.
        assert_eq!(m.credit_ns, 1000 * MS);
    }

    #[test]
    fn a_task_that_just_woke_is_not_taken_for_a_starved_one() {
        let mut m = TaskMemo {
            runnable: Some(false),
            ..TaskMemo::default()
        };
        assert_eq!(wants(obs(0, 0, Some(true)), 500 * MS, &mut m), (0, 0));
        assert_eq!(m.credit_ns, 0);
    }

    #[test]
    fn a_task_that_ran_then_waited_without_sleeping_wanted_it_all() {
        let mut m = TaskMemo {
            runnable: Some(true),
            vol: Some((7, 100)),
            ..TaskMemo::default()
        };
        let mut o = obs(30, 0, Some(true));
        o.since_ns = 1_000;
        o.vol = Some((7, 2_000));
        assert_eq!(wants(o, 500 * MS, &mut m), (500, 470));
        // The same, but it slept in between (its voluntary switches moved): only what it used.
        let mut m = TaskMemo {
            runnable: Some(true),
            vol: Some((7, 100)),
            ..TaskMemo::default()
        };
        o.vol = Some((8, 2_000));
        assert_eq!(wants(o, 500 * MS, &mut m), (30, 0));
    }

    #[test]
    fn a_starved_task_whose_state_went_unread_still_wants_it_all() {
        // Runnable at its last read; then neither run nor state moves (not read this time).
        let mut m = TaskMemo {
            runnable: Some(true),
            ..TaskMemo::default()
        };
        assert_eq!(wants(obs(0, 0, None), 100 * MS, &mut m), (100, 100));
        assert_eq!(m.runnable, Some(true));
        // Once it ran, an unread state says nothing: it may have slept since. (Its 5 ms of
        // late wait pay back part of the 100 counted ahead.)
        assert_eq!(wants(obs(20, 5, None), 100 * MS, &mut m), (20, 0));
        assert_eq!((m.runnable, m.credit_ns), (None, 95 * MS));
    }

    #[test]
    fn a_sleeper_wants_nothing() {
        let mut m = TaskMemo::default();
        assert_eq!(wants(obs(0, 0, Some(false)), 500 * MS, &mut m), (0, 0));
        assert_eq!(wants(obs(0, 0, None), 500 * MS, &mut m), (0, 0));
        assert_eq!(m.runnable, None);
    }

    #[test]
    fn an_idle_kernel_thread_wants_nothing_however_long_it_sleeps() {
        // State I (an idle kworker) at every read, never run: nothing wanted, no wait, no
        // wakeup, no credit, interval after interval.
        let mut m = TaskMemo::default();
        for _ in 0..5 {
            let w = wanted(obs(0, 0, Some(false)), 1000 * MS, &mut m);
            assert_eq!(w, Wanted::default());
        }
        assert_eq!((m.credit_ns, m.runnable), (0, Some(false)));
    }

    /// A task that sleeps `vol` times and is preempted `invol` times an interval, as two
    /// status reads see it, then runs `run` and waits `wait` (ms) over 1 s.
    fn switching(vol: u64, invol: u64, run: u64, wait: u64) -> Wanted {
        let mut m = TaskMemo::default();
        let mut o = obs(0, 0, Some(false));
        o.switches = Some((1000, 1000));
        wanted(o, 1000 * MS, &mut m);
        let mut o = obs(run, wait, Some(false));
        o.switches = Some((1000 + vol, 1000 + invol));
        o.slices = vol + invol;
        wanted(o, 1000 * MS, &mut m)
    }

    #[test]
    fn a_sleeper_that_waits_after_each_wakeup_wanted_what_it_ran_and_was_late() {
        // A kworker beside a pinned ping-pong (measured: 12 wakeups a second, 0.8 ms run,
        // 971 ms of wait): it slept every time, so the wait was the delay before each run.
        let w = switching(12, 0, 1, 971);
        assert_eq!(bw(w), (1, 971));
        assert_eq!(w.woken_wait, 971 * MS);
        assert!((w.wakeups - 12.0).abs() < 1e-9);
        // Its mean wakeup delay: about 81 ms.
        assert_eq!(w.woken_wait as f64 / w.wakeups / MS as f64, 971.0 / 12.0);
    }

    #[test]
    fn a_preempted_hog_wanted_all_its_wait() {
        let w = switching(0, 250, 330, 670);
        assert_eq!((bw(w), w.woken_wait), ((1000, 670), 0));
        assert_eq!(w.wakeups, 0.0);
    }

    #[test]
    fn a_ping_pong_task_sleeps_and_is_preempted_once_a_round_trip() {
        // Each round trip: preempted by the partner it woke, later asleep on its reply.
        let w = switching(1000, 1000, 500, 400);
        assert_eq!((bw(w), w.woken_wait), ((700, 400), 200 * MS));
    }

    #[test]
    fn until_two_status_reads_tell_its_state_decides() {
        let mut m = TaskMemo::default();
        // Runnable at the read: taken as preempted.
        assert_eq!(
            wants(obs(100, 50, Some(true)), 1000 * MS, &mut m),
            (150, 50)
        );
        // Asleep at the read: taken as woken.
        let mut m = TaskMemo::default();
        let w = wanted(obs(100, 50, Some(false)), 1000 * MS, &mut m);
        assert_eq!((bw(w), w.woken_wait), ((100, 50), 50 * MS));
    }

    #[test]
    fn a_paced_task_wants_what_it_ran_and_at_most_one_burst_more() {
        // A timer's thread woke 50 times, ran 25 ms and waited 18 ms after preemptions.
        let w = Wanted {
            busy: 43 * MS,
            waited: 30 * MS,
            woken_wait: 12 * MS,
            wakeups: 25.0,
        };
        // Asleep at the read: it did its work, later.
        let p = paced(w, 25 * MS, Some(50), false);
        assert_eq!((p.busy, p.woken_wait), (25 * MS, 30 * MS));
        // Runnable at the read: at most the rest of one burst (0.5 ms) is still to come.
        let p = paced(w, 25 * MS, Some(50), true);
        assert_eq!(p.busy, 25 * MS + MS / 2);
        // Never slept or never ran: a hog, or a task starved throughout, keeps its demand.
        assert_eq!(paced(w, 25 * MS, Some(0), true), w);
        assert_eq!(paced(w, 0, Some(3), true), w);
    }
}
