//! How many files a sweep may read, so that watching a workload of 16,000 threads costs the
//! machine a bounded share of a CPU: the budgets of schedstat, status, sched and histogram
//! reads a second, the rotation that spreads a big workload's reads over sweeps, and the
//! reads one sweep may make.

/// schedstat reads a second, at most, on average: about 0.25% of a CPU here (2-2.5 µs each with
/// the syscall). A workload with more threads than this at its interval is read in rotation
/// (each thread every few sweeps, its deltas over its own read interval); fewer, every thread
/// every sweep. 1,000 threads at 10 Hz: each every tenth sweep, once a second. (2,000 read each
/// every half second for 12% of the observer's CPU, measured: a rate a thread keeps for a
/// second is as good as one it keeps for half, beside a verdict over five.)
pub const SCHEDSTAT_READS_PER_SEC: u64 = 1_000;

/// More reads a second, up to this, for a workload so big that the budget above would read
/// each thread less often than every `SCHEDSTAT_STALE_NS`: 16,000 threads, each every 8 s.
pub const SCHEDSTAT_READS_PER_SEC_MAX: u64 = 2_000;
const SCHEDSTAT_STALE_NS: u64 = 8_000_000_000;

/// The schedstat reads a second for `threads` threads.
pub(super) fn schedstat_budget(threads: u64) -> u64 {
    (threads.saturating_mul(1_000_000_000) / SCHEDSTAT_STALE_NS)
        .clamp(SCHEDSTAT_READS_PER_SEC, SCHEDSTAT_READS_PER_SEC_MAX)
}

/// One thread in how many to read this sweep, for `threads` threads `gap_ns` after the last.
/// A workload with this many threads or fewer is read whole at every sweep, outside the
/// rotation (16 schedstat reads at 10 Hz: 0.02% of a CPU).
pub(super) const SMALL_WORKLOAD_THREADS: usize = 16;

pub(super) fn read_stride(threads: u64, gap_ns: u64) -> u32 {
    rotation_stride(threads, schedstat_budget(threads), gap_ns)
}

/// Latency histogram reads a second, at most, on average. One reads a header line and every
/// line of buckets its thread ever wrote, which that thread's CPU keeps dirtying: about 2 µs at
/// 1,000 threads of busy ping-pong (whose round trips span 14 octaves, 56 lines), so 500 a
/// second cost about 0.1% of a CPU (more, measured: 5% of the observer at 1,000 threads, so
/// 250). With more histograms than this at the interval, each is read every few sweeps (1,000
/// threads at 10 Hz: every 4 s; the merge, `LatencyMerge`, adds what each gained since its
/// last read), and an interval's percentiles are those of the histograms read in it, over
/// their own read intervals.
pub const HISTOGRAM_READS_PER_SEC: u64 = 250;

/// One histogram in how many to read this sweep, for `histograms` of them `gap_ns` after the
/// last sweep.
pub(super) fn histogram_stride(histograms: usize, gap_ns: u64) -> u32 {
    rotation_stride(histograms as u64, HISTOGRAM_READS_PER_SEC, gap_ns)
}

/// One item in how many to read this sweep, for `items` read within `per_sec` reads a second
/// on average, `gap_ns` after the last sweep: the rotation of a big workload's reads.
pub(super) fn rotation_stride(items: u64, per_sec: u64, gap_ns: u64) -> u32 {
    let gap = gap_ns.clamp(50_000_000, 10_000_000_000);
    let budget = (per_sec * gap / 1_000_000_000).max(1);
    items.div_ceil(budget).clamp(1, 64) as u32
}

/// Most reads of per-thread switches a second, on average (each a sched file and an affinity
/// call on the real /proc, else a status file; `task.rs`). A status read cost ≈13 µs here in
/// a sweep (ten times a schedstat read), so this capped it at ≈0.27% of a CPU: with more
/// threads than this, switches are read less often than asked (1,000 threads: every 5 s, the
/// verdict's window). Each sweep has its share of it, and a thread's status is read at its
/// visit when its own period is up. (250 a second, once every thread's status was read in
/// turn, took the observer from 1.62% to 1.96% of a CPU at 1,000 threads and 10 Hz.)
pub const STATUS_READS_PER_SEC: u64 = 200;

/// How often status is read: as asked, or less often when `threads` would exceed the budget.
/// Zero asks for status at every sweep (tests, benches): no budget then.
pub(super) fn status_period_ns(asked_ns: u64, threads: u64) -> u64 {
    if asked_ns == 0 {
        return 0;
    }
    asked_ns.max(threads * 1_000_000_000 / STATUS_READS_PER_SEC)
}

/// This sweep's status reads, `gap_ns` after the last: each thread's at the status period as
/// asked, or less often when `threads` would exceed the budget, and this sweep's share of the
/// budget. A zero period (status at every sweep: tests, benches) reads every thread visited.
pub(super) fn status_budget(asked_ns: u64, threads: u64, gap_ns: u64) -> StatusReads {
    if asked_ns == 0 {
        return StatusReads::every_sweep();
    }
    let gap = gap_ns.clamp(50_000_000, 10_000_000_000);
    StatusReads {
        left: (STATUS_READS_PER_SEC * gap / 1_000_000_000).max(1) as u32,
        period_ns: status_period_ns(asked_ns, threads),
    }
}

/// Most per-thread sched files read per second (for migrations), on average. One costs
/// 3-8 µs here (the kernel formats its 1.8 kB from scratch, docs/performance.md), so this caps
/// them at under 0.1% of a CPU: with more threads than this, each thread's migrations are read
/// less often than once a second (1,000 threads: every 10 s), in rotation.
pub const SCHED_READS_PER_SEC: u64 = 100;

/// This sweep's sched reads, `gap_ns` after the last: each thread's at the status period as
/// asked, or less often when `threads` would exceed the budget, and this sweep's share of the
/// budget. A zero period (status at every sweep: tests, benches) reads every thread every
/// sweep, with no budget.
pub(super) fn sched_budget(asked_ns: u64, threads: u64, gap_ns: u64) -> SchedReads {
    if asked_ns == 0 {
        return SchedReads {
            left: u32::MAX,
            period_ns: 0,
        };
    }
    let gap = gap_ns.clamp(50_000_000, 10_000_000_000);
    SchedReads {
        left: (SCHED_READS_PER_SEC * gap / 1_000_000_000).max(1) as u32,
        period_ns: asked_ns.max(threads * 1_000_000_000 / SCHED_READS_PER_SEC),
    }
}

/// The sched-file reads one sweep may make: each thread's at most once a `period_ns` (with a
/// tenth of slack, so a 1 s period at a 500 ms interval does not slip to 1.5 s), and no more
/// than `left` in all. A thread read is not due again for a period, so when the budget runs
/// out the ones left over are read at the next sweeps.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SchedReads {
    pub left: u32,
    pub period_ns: u64,
}

impl SchedReads {
    /// Whether a thread last read at `last_ns` (0: never) is read now.
    pub fn turn(&mut self, last_ns: u64, now: u64) -> bool {
        let due = last_ns == 0 || now + self.period_ns / 10 >= last_ns + self.period_ns;
        due && take(&mut self.left)
    }
}

/// The status reads one sweep may make: each thread's when its last is `period_ns` old (with a
/// tenth of slack, as the sched files), and no more than `left` in all. Due per thread, not at
/// a status sweep: a big workload is read in rotation, and a status sweep read only the threads
/// whose turn it was (a tenth of 1,000), whose switches alone then stood for the workload's.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StatusReads {
    pub left: u32,
    pub period_ns: u64,
}

impl StatusReads {
    /// Every thread visited, at every sweep (tests and benches ask for it), with no budget.
    pub(crate) fn every_sweep() -> StatusReads {
        StatusReads {
            left: u32::MAX,
            period_ns: 0,
        }
    }

    /// Whether a thread whose status was last read at `last_ns` (0: never) is due now.
    pub fn due(&self, last_ns: u64, now: u64) -> bool {
        self.left > 0 && (last_ns == 0 || now + self.period_ns / 10 >= last_ns + self.period_ns)
    }
}

/// The out-of-turn reads one sweep may make of threads that ran little (are they waiting for
/// a CPU, or did they sleep?), within a budget a second: a status read costs ten schedstat
/// reads, and on a busy machine nearly every thread of a ping-pong is such a suspect.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Suspects {
    /// stat reads (state, CPU) left.
    pub stat_left: u32,
    /// status reads (voluntary switches) left.
    pub status_left: u32,
    /// One suspect in `every` is considered, turning with `phase`: with more suspects than
    /// the budget, each sweep looks at different ones rather than the first in the list.
    pub every: u32,
    pub phase: u32,
    /// Suspects met so far in this sweep, and in this target.
    pub seen: u32,
    pub here: u32,
}

/// Suspects of each target read at every sweep, outside the budget: a small workload's
/// starving thread (a hog a FIFO task keeps off its CPU) must not wait its turn behind a
/// thousand ping-pong threads, or it reads as wanting nothing between turns.
const ALWAYS_PER_TARGET: u32 = 4;

/// Whether a suspect is read this sweep, and on whose account.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    No,
    /// One of its target's first few: outside the budget.
    Always,
    /// Its turn in the rotation: if the budget has reads left.
    Budget,
}

impl Suspects {
    /// This target's suspects from the first.
    pub(crate) fn for_target(self) -> Suspects {
        Suspects { here: 0, ..self }
    }

    /// Whether this suspect's turn is now.
    pub fn turn(&mut self) -> Turn {
        let always = self.here < ALWAYS_PER_TARGET;
        let mine = (self.seen + self.phase).is_multiple_of(self.every.max(1));
        self.here += 1;
        self.seen += 1;
        match (always, mine) {
            (true, _) => Turn::Always,
            (false, true) => Turn::Budget,
            (false, false) => Turn::No,
        }
    }

    /// Whether the turn may spend one read from `left` (always-reads spend nothing).
    pub fn spend(turn: Turn, left: &mut u32) -> bool {
        match turn {
            Turn::No => false,
            Turn::Always => true,
            Turn::Budget => take(left),
        }
    }
}

/// Takes one read from a budget.
pub(super) fn take(left: &mut u32) -> bool {
    if *left == 0 {
        return false;
    }
    *left -= 1;
    true
}

#[cfg(test)]
mod tests {
    use super::status_period_ns;

    const S: u64 = 1_000_000_000;

    #[test]
    fn big_workloads_are_read_in_rotation_within_the_budget() {
        use super::read_stride;
        const MS: u64 = 1_000_000;
        // 1,000 threads at 10 Hz: 10,000 reads a second, over the 1,000 budget: every tenth.
        assert_eq!(read_stride(1_000, 100 * MS), 10);
        assert_eq!(read_stride(100, 100 * MS), 1);
        // 8,000 threads at 1 Hz: each every 8 s, within the 1,000.
        assert_eq!(read_stride(8_000, 1_000 * MS), 8);
        // 16,000 threads at 1 Hz: 2,000 a second keep each within 8 s, every eighth sweep;
        // beyond, the cap holds.
        assert_eq!(read_stride(16_000, 1_000 * MS), 8);
        assert_eq!(read_stride(32_000, 1_000 * MS), 16);
        assert_eq!(read_stride(0, 0), 1);
        // Latency histograms, 250 a second: 1,000 at 10 Hz, every 40th sweep.
        let hist = super::histogram_stride;
        assert_eq!((hist(1_000, 100 * MS), hist(25, 100 * MS)), (40, 1));
    }

    #[test]
    fn sched_files_are_read_within_their_budget() {
        use super::sched_budget;
        const MS: u64 = 1_000_000;
        // Few threads at 10 Hz: each once a second, 10 reads a sweep at most.
        let b = sched_budget(S, 10, 100 * MS);
        assert_eq!((b.left, b.period_ns), (10, S));
        // 1,000 threads at 100 a second: each every 10 s.
        assert_eq!(sched_budget(S, 1000, 100 * MS).period_ns, 10 * S);
        assert_eq!(sched_budget(S, 1000, 1000 * MS).left, 100);
        // Status at every sweep (tests): every thread every sweep.
        let all = sched_budget(0, 5000, 100 * MS);
        assert_eq!((all.left, all.period_ns), (u32::MAX, 0));
    }

    #[test]
    fn status_is_read_as_asked_until_the_budget_is_reached() {
        assert_eq!(status_period_ns(S, 10), S);
        assert_eq!(status_period_ns(S, 200), S);
        // 1,000 threads at 200 reads a second: every 5 s.
        assert_eq!(status_period_ns(S, 1000), 5 * S);
        assert_eq!(status_period_ns(8 * S, 1000), 8 * S);
        assert_eq!(status_period_ns(0, 5000), 0);
    }
}
