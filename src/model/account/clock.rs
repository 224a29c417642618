//! A process's CPU clock (CLOCK_PROCESS_CPUTIME_ID), the exact sum of what its threads ran,
//! and the rules for trusting it: its rate over a span near the interval, held to the CPUs its
//! threads may use, and the threads read in rotation scaled to it.

use super::{cpus_of, ThreadInterval};
use crate::model::cpuset::CpuSet;
use crate::probe::ProcessSample;

/// What a process's threads ran over the interval by its CPU clock, at the rate it ran
/// between the clock's two reads (which need not be the sample's ends: a sweep that took
/// long puts its middle far from where it read this process). None unless the clock was read
/// at both ends, a span from half to twice the interval apart: the kernel brings a running
/// thread's time up to date only at its CPU's tick (4 ms here), so over a much shorter span the
/// clock's rate is noise (up to 34 CPUs on a 2-CPU machine, measured, between reads a
/// millisecond apart). Held to the CPUs its threads may use (`most_run`).
pub(super) fn clock_run(p: &ProcessSample, before: Option<&ProcessSample>, t: u64) -> Option<u64> {
    let b = before?;
    let own = p.cpu_read_ns.checked_sub(b.cpu_read_ns)?;
    if b.cpu_read_ns == 0 || own < t / 2 || own > t.saturating_mul(2) {
        return None;
    }
    let ran = p.cpu_ns.checked_sub(b.cpu_ns)?;
    let run = (ran as f64 * t as f64 / own as f64) as u64;
    Some(if run > t {
        run.min(most_run(p, t))
    } else {
        run
    })
}

/// The most a process's threads could run in `t`: one CPU each of those they may use (the
/// threads' count is no bound: the clock counts threads that exited since, side by side). Its
/// CPU clock's rate can read above that: the kernel brings a thread running on another CPU up
/// to date only at that CPU's tick, so each read lags by up to a tick per busy CPU, and two
/// reads 100 ms apart differ by up to a tenth either way (300 spinners on 2 CPUs read 2.22
/// CPUs in CI's setting). Only computed when the clock says more than one CPU.
fn most_run(p: &ProcessSample, t: u64) -> u64 {
    let mut allowed = CpuSet::default();
    let mut last = None;
    for th in &p.threads {
        let set = cpus_of(th, &mut last);
        if set.is_empty() {
            // Not read: no bound.
            return u64::MAX;
        }
        allowed.add_all(&set);
    }
    if allowed.is_empty() {
        return u64::MAX;
    }
    t.saturating_mul(allowed.len() as u64)
}

/// A process read in rotation: the threads this sweep skipped hold their last rates, which
/// overstate it once they stop (an ending 200-room chat read 257% of one CPU on 2 CPUs) and
/// understate it once they speed up. Its CPU clock says what all its threads ran (`clock`,
/// exact, dead threads too): the held threads' run and wait are scaled so that, beside what
/// the read ones ran, the process ran what its clock says. Wait is scaled with run, so a held
/// thread wants no more than its share of the clock lets it seem to: a thread that went to
/// sleep does not read as starved until its turn. (If the read ones alone ran more than the
/// clock, since their deltas average over their whole rotation, they are scaled down too.)
pub(super) fn match_clock(intervals: &mut [ThreadInterval], clock: u64, t: u64) {
    let held = intervals.iter().filter(|iv| iv.held).count() as u64;
    if held == 0 {
        return;
    }
    let run_of = |read: bool| -> u64 {
        intervals
            .iter()
            .filter(|iv| iv.held != read)
            .map(|iv| iv.run)
            .sum()
    };
    let (read_run, held_run) = (run_of(true), run_of(false));
    let scale = |iv: &mut ThreadInterval, k: f64| {
        iv.run = ((iv.run as f64 * k) as u64).min(t);
        iv.waited = ((iv.waited as f64 * k) as u64).min(t - iv.run);
        iv.woken_wait = ((iv.woken_wait as f64 * k) as u64).min(iv.waited);
        iv.busy = (iv.busy as f64 * k) as u64;
        iv.busy = iv.busy.clamp(iv.run, iv.run + iv.waited);
    };
    if read_run >= clock {
        let k = if read_run > 0 {
            clock as f64 / read_run as f64
        } else {
            0.0
        };
        for iv in intervals.iter_mut() {
            scale(iv, if iv.held { 0.0 } else { k });
        }
        return;
    }
    let left = clock - read_run;
    if held_run > 0 {
        let k = left as f64 / held_run as f64;
        for iv in intervals.iter_mut().filter(|iv| iv.held) {
            scale(iv, k);
        }
    } else {
        // They held no run: what the clock adds is theirs, evenly (no rate says otherwise).
        let each = (left / held).min(t);
        for iv in intervals.iter_mut().filter(|iv| iv.held) {
            (iv.run, iv.waited, iv.woken_wait, iv.busy) = (each, 0, 0, each);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{account, WorkloadMemo};
    use crate::probe::{ProcessSample, TaskSample, WorkloadSample};

    const MS: u64 = 1_000_000;

    /// Process 7 at `read_ns`, its CPU clock at `clock` ms (0: not read): threads 7, 8 and
    /// 9 with (run, wait) ms and their read times.
    fn rotated(clock: u64, read_ns: u64, threads: [(u64, u64, u64); 3]) -> WorkloadSample {
        WorkloadSample {
            processes: vec![ProcessSample {
                pid: 7,
                cpu_ns: clock * MS,
                cpu_read_ns: if clock > 0 { read_ns } else { 0 },
                threads: threads
                    .iter()
                    .zip(7..)
                    .map(|(&(run, wait, read), tid)| TaskSample {
                        tid,
                        run_ns: run * MS,
                        wait_ns: wait * MS,
                        read_ns: read,
                        ..TaskSample::default()
                    })
                    .collect(),
                ..ProcessSample::default()
            }],
            ..WorkloadSample::default()
        }
    }

    #[test]
    fn threads_held_in_rotation_are_scaled_to_their_process_clock() {
        // Three threads, each half on CPU and half waiting from 1.0 s to 1.1 s (150 ms of
        // clock). From 1.1 s to 1.2 s the main thread is read and ran 10 ms more; 8 and 9 are
        // not read (they hold 50 ms of run each), but the clock moved only 30 ms: they ran
        // 20 ms between them, and wanted in proportion.
        let (a, b, c) = (1000 * MS, 1100 * MS, 1200 * MS);
        let t = 100.0 * MS as f64;
        let mut memo = WorkloadMemo::default();
        let first = rotated(1, a, [(0, 0, a); 3]);
        let second = rotated(151, b, [(50, 50, b); 3]);
        let read = account(&first, &second, t, a, &mut memo);
        assert!((read.received_ns - 150.0 * MS as f64).abs() < 1.0);
        let third = rotated(181, c, [(60, 50, c), (50, 50, b), (50, 50, b)]);
        let acc = account(&second, &third, t, b, &mut memo);
        assert!(
            (acc.received_ns - 30.0 * MS as f64).abs() < 1.0,
            "the clock's 30 ms, not 110: {}",
            acc.received_ns
        );
        for held in &acc.claims[1..] {
            assert!((held.received - 0.1).abs() < 1e-6, "{held:?}");
            assert!((held.demand - 0.2).abs() < 1e-6, "{held:?}");
        }
        // Without the clock (an older recording) they keep their rates.
        let mut memo = WorkloadMemo::default();
        let unclocked = |w: &WorkloadSample| {
            let mut w = w.clone();
            w.processes[0].cpu_read_ns = 0;
            w
        };
        account(&unclocked(&first), &unclocked(&second), t, a, &mut memo);
        let acc = account(&unclocked(&second), &unclocked(&third), t, b, &mut memo);
        assert!((acc.received_ns - 110.0 * MS as f64).abs() < 1.0);
    }

    #[test]
    fn a_process_whose_read_threads_ran_more_than_its_clock_runs_its_clock() {
        // The main thread's delta says 80 ms, but the clock moved 40 ms: everything scales to
        // the clock, and the held threads ran nothing.
        let (a, b, c) = (1000 * MS, 1100 * MS, 1200 * MS);
        let t = 100.0 * MS as f64;
        let mut memo = WorkloadMemo::default();
        let second = rotated(301, b, [(100, 0, b); 3]);
        account(&rotated(1, a, [(0, 0, a); 3]), &second, t, a, &mut memo);
        let third = rotated(341, c, [(180, 0, c), (100, 0, b), (100, 0, b)]);
        let acc = account(&second, &third, t, b, &mut memo);
        assert!((acc.received_ns - 40.0 * MS as f64).abs() < 1.0);
        assert!((acc.claims[0].received - 0.4).abs() < 1e-6);
        assert!(acc.claims[1..].iter().all(|c| c.demand == 0.0));
    }

    #[test]
    fn a_clock_that_reads_more_than_the_allowed_cpus_runs_them_all_and_no_more() {
        // Three spinners allowed CPUs 0-1, read in rotation: the clock moved 222 ms in 100 ms
        // (the ticks' lag of its two reads), 2.22 CPUs on 2. Held to 2; one CPU more allowed,
        // the same clock stands.
        let (a, b, c) = (1000 * MS, 1100 * MS, 1200 * MS);
        let t = 100.0 * MS as f64;
        let on = |mut w: WorkloadSample, cpus: &str| {
            for th in &mut w.processes[0].threads {
                th.cpus = Some(cpus.into());
            }
            w
        };
        for (cpus, want) in [("0-1", 200.0), ("0-2", 222.0)] {
            let mut memo = WorkloadMemo::default();
            let first = on(rotated(1, a, [(0, 0, a); 3]), cpus);
            let second = on(rotated(201, b, [(66, 0, b); 3]), cpus);
            account(&first, &second, t, a, &mut memo);
            let third = on(rotated(423, c, [(140, 0, c), (66, 0, b), (66, 0, b)]), cpus);
            let acc = account(&second, &third, t, b, &mut memo);
            assert!(
                (acc.received_ns - want * MS as f64).abs() < 1.0,
                "on {cpus}: {} ms",
                acc.received_ns / MS as f64
            );
        }
    }
}
