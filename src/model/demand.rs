//! What a task wanted over an interval, including the time it spent waiting that the kernel
//! has not accounted yet.
//!
//! schedstat's wait (`run_delay`) grows only when a task arrives on a CPU: a task runnable for
//! a whole interval that never got a CPU shows no wait at all until it finally runs, and then
//! all of it at once. So a task seen runnable at both ends of an interval, and that cannot
//! have slept in between (it never ran, or its voluntary switches did not move), wanted the
//! whole interval; the wait it was credited in advance is taken off the late wait when it
//! arrives, so every interval gets the wait that belongs to it, and none is counted twice.

/// What the model remembers of one task between intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskMemo {
    /// Wait already counted in earlier intervals that schedstat has not reported yet, in ns.
    pub credit_ns: u64,
    /// Runnable at the end of the last interval (Some(true)), not (Some(false)), unknown.
    pub runnable: Option<bool>,
    /// The voluntary switch count at its last read, and when it was read.
    pub vol: Option<(u64, u64)>,
    /// What it wanted and waited per ns of its last interval read (a thread of a big
    /// workload, read in rotation, is not read at every sweep: its last rate holds then).
    pub rate: (f64, f64),
}

/// One task over one interval of `t_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observed {
    /// schedstat deltas: ns on CPU, ns of wait reported.
    pub run_ns: u64,
    pub wait_ns: u64,
    /// Its state at the end, when read: runnable or not.
    pub runnable: Option<bool>,
    /// Its voluntary switch count and when it was read, when read this interval.
    pub vol: Option<(u64, u64)>,
    /// When the interval began (the previous Sample's time).
    pub since_ns: u64,
}

/// How long it wanted a CPU, and how long it waited for one, over the interval (ns, each at
/// most `t_ns`).
pub fn wanted(o: Observed, t_ns: u64, memo: &mut TaskMemo) -> (u64, u64) {
    // Late wait first pays back what was counted ahead.
    let paid = o.wait_ns.min(memo.credit_ns);
    memo.credit_ns -= paid;
    let wait = o.wait_ns - paid;
    let run = o.run_ns.min(t_ns);
    let mut busy = (run + wait).min(t_ns);
    let before = memo.runnable == Some(true);
    // Unread, but it was runnable and has not run since: a task must run to go to sleep, so
    // it still is (a starved thread among thousands, whose state the probe's budget skipped).
    let runnable = o.runnable.or((before && run == 0).then_some(true));
    if runnable == Some(true) && busy < t_ns && before {
        // It cannot have slept if it never ran; if it ran, it did not sleep when its
        // voluntary switches stood still since a read made before the interval began.
        let stayed_awake = run == 0
            || matches!((memo.vol, o.vol), (Some((v0, at0)), Some((v1, at1)))
                if v0 == v1 && at0 <= o.since_ns && at1 > o.since_ns);
        if stayed_awake {
            memo.credit_ns += t_ns - busy;
            busy = t_ns;
        }
    }
    memo.runnable = match runnable {
        Some(r) => Some(r),
        // Unread: a task busy for almost all of it was most likely still runnable.
        None if busy * 20 >= t_ns * 19 => Some(true),
        None => None,
    };
    if let Some(v) = o.vol {
        memo.vol = Some(v);
    }
    (busy, busy - run)
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
            vol: None,
            since_ns: 0,
        }
    }

    #[test]
    fn a_starved_task_wants_every_interval_and_its_late_wait_is_not_counted_twice() {
        // A fair hog beside a real-time one, 500 ms intervals: it runs 50 ms a second.
        let mut m = TaskMemo::default();
        // Running when first seen.
        assert_eq!(
            wanted(obs(500, 0, Some(true)), 500 * MS, &mut m),
            (500 * MS, 0)
        );
        // Never ran, runnable at both ends: waited throughout (not idle).
        assert_eq!(
            wanted(obs(0, 0, Some(true)), 500 * MS, &mut m),
            (500 * MS, 500 * MS)
        );
        assert_eq!(m.credit_ns, 500 * MS);
        // Then it runs 50 ms; schedstat reports its 950 ms wait at once: 500 were counted.
        assert_eq!(
            wanted(obs(50, 950, Some(true)), 500 * MS, &mut m),
            (500 * MS, 450 * MS)
        );
        assert_eq!(m.credit_ns, 0);
    }

    #[test]
    fn a_task_that_just_woke_is_not_taken_for_a_starved_one() {
        let mut m = TaskMemo {
            runnable: Some(false),
            ..TaskMemo::default()
        };
        assert_eq!(wanted(obs(0, 0, Some(true)), 500 * MS, &mut m), (0, 0));
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
        assert_eq!(wanted(o, 500 * MS, &mut m), (500 * MS, 470 * MS));
        // The same, but it slept in between (its voluntary switches moved): only what it used.
        let mut m = TaskMemo {
            runnable: Some(true),
            vol: Some((7, 100)),
            ..TaskMemo::default()
        };
        o.vol = Some((8, 2_000));
        assert_eq!(wanted(o, 500 * MS, &mut m), (30 * MS, 0));
    }

    #[test]
    fn a_starved_task_whose_state_went_unread_still_wants_it_all() {
        // Runnable at its last read; then neither run nor state moves (not read this time).
        let mut m = TaskMemo {
            runnable: Some(true),
            ..TaskMemo::default()
        };
        assert_eq!(
            wanted(obs(0, 0, None), 100 * MS, &mut m),
            (100 * MS, 100 * MS)
        );
        assert_eq!(m.runnable, Some(true));
        // Once it ran, an unread state says nothing: it may have slept since. (Its 5 ms of
        // late wait pay back part of the 100 counted ahead.)
        assert_eq!(wanted(obs(20, 5, None), 100 * MS, &mut m), (20 * MS, 0));
        assert_eq!((m.runnable, m.credit_ns), (None, 95 * MS));
    }

    #[test]
    fn a_sleeper_wants_nothing() {
        let mut m = TaskMemo::default();
        assert_eq!(wanted(obs(0, 0, Some(false)), 500 * MS, &mut m), (0, 0));
        assert_eq!(wanted(obs(0, 0, None), 500 * MS, &mut m), (0, 0));
        assert_eq!(m.runnable, None);
    }
}
