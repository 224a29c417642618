//! Per-second rates of per-thread counters that the probe reads in rotation, each thread at its
//! own time: a thread's rate is its counts' change over its own read interval, a thread not read
//! again since holds its last rate, and the workload's rate is the sum. Migrations
//! (`se.nr_migrations`, from each thread's sched file) and voluntary/involuntary switches (from
//! its status file) are both read so: a sum over the threads read at one sweep, divided by the
//! time since the last, counted only the threads read then (a tenth of 1,000 threads read in
//! rotation: the switch rates read 10-30% of the machine's).

use foldhash::{HashMap, HashMapExt};

use super::account::{by_tid, seek};
use crate::probe::{TaskSample, WorkloadSample};

/// A process as named across samples: its pid and start time.
type ProcKey = (u32, u64);

/// One thread's last read and the rates its last two reads gave.
#[derive(Clone, Copy)]
struct Seen<const N: usize> {
    counts: [u64; N],
    at_ns: u64,
    rates: Option<[f64; N]>,
}

/// What the model keeps of one kind of counter of a workload between intervals: per process,
/// its threads' last reads, sorted by tid (walked beside the thread list, as in `account`).
pub(crate) struct RateMemo<const N: usize> {
    threads: HashMap<ProcKey, Vec<(u32, Seen<N>)>>,
}

impl<const N: usize> Default for RateMemo<N> {
    fn default() -> Self {
        Self {
            threads: HashMap::new(),
        }
    }
}

/// A thread's counters and when they were read (CLOCK_MONOTONIC ns), if they were.
pub(crate) type Reading<const N: usize> = fn(&TaskSample) -> Option<([u64; N], u64)>;

/// Its migrations, when its sched file was read.
pub fn migrations(th: &TaskSample) -> Option<([u64; 1], u64)> {
    th.migrations
        .filter(|_| th.migrations_ns != 0)
        .map(|m| ([m], th.migrations_ns))
}

/// Its voluntary and involuntary switches, when its status was read.
pub fn switches(th: &TaskSample) -> Option<([u64; 2], u64)> {
    Some(([th.vol?, th.invol?], th.vol_ns)).filter(|r| r.1 != 0)
}

/// The workload's counts per second: the sum over its threads with a rate, standing for all
/// its threads (scaled by threads / threads with a rate); None until a quarter of its threads
/// have been read twice (or when the kernel has no such file). A big workload's reads are
/// spread over a period (1,000 threads: 200 status reads a second), so its threads get their
/// rates one by one over seconds: their bare sum climbed from nothing to the workload's rate
/// as if the workload were speeding up. `pw` is the same workload in the previous Sample: a
/// thread the memo has not met yet starts from its read there. A thread that went away takes
/// its rate with it; one born since the last read counts from its second read.
pub fn rate<const N: usize>(
    pw: Option<&WorkloadSample>,
    w: &WorkloadSample,
    memo: &mut RateMemo<N>,
    read: Reading<N>,
) -> Option<[f64; N]> {
    let mut next = HashMap::with_capacity(memo.threads.len());
    let mut sum: Option<[f64; N]> = None;
    let (mut threads, mut rated) = (0usize, 0usize);
    for p in &w.processes {
        threads += p.threads.len();
        let before = memo.threads.remove(&(p.pid, p.start)).unwrap_or_default();
        let mut seen_now = Vec::with_capacity(before.len());
        let mut at = 0;
        for th in &p.threads {
            let Some((counts, at_ns)) = read(th) else {
                continue;
            };
            let old = seek(&before, &mut at, th.tid, |s| s.0)
                .map(|s| s.1)
                .or_else(|| read_before(pw?, (p.pid, p.start, th.tid), read));
            let seen = match old {
                // Not read again since: its last rate holds.
                Some(old) if old.at_ns == at_ns => old,
                Some(old) if old.at_ns < at_ns => {
                    let secs = (at_ns - old.at_ns) as f64 / 1e9;
                    Seen {
                        counts,
                        at_ns,
                        rates: Some(std::array::from_fn(|k| {
                            counts[k].saturating_sub(old.counts[k]) as f64 / secs
                        })),
                    }
                }
                // First seen, or read before the last read (a replay that went back).
                _ => Seen {
                    counts,
                    at_ns,
                    rates: None,
                },
            };
            if let Some(r) = seen.rates {
                rated += 1;
                let s = sum.get_or_insert([0.0; N]);
                for k in 0..N {
                    s[k] += r[k];
                }
            }
            seen_now.push((th.tid, seen));
        }
        next.insert((p.pid, p.start), by_tid(seen_now));
    }
    memo.threads = next;
    if rated * 4 < threads {
        return None;
    }
    let stand_for = threads as f64 / rated as f64;
    sum.map(|s| s.map(|x| x * stand_for))
}

/// A thread's read in an earlier Sample (processes sorted by pid, threads by tid).
fn read_before<const N: usize>(
    pw: &WorkloadSample,
    (pid, start, tid): (u32, u64, u32),
    read: Reading<N>,
) -> Option<Seen<N>> {
    let p = pw
        .processes
        .binary_search_by_key(&pid, |p| p.pid)
        .ok()
        .map(|i| &pw.processes[i])
        .filter(|p| p.start == start)?;
    let th = &p.threads[p.threads.binary_search_by_key(&tid, |t| t.tid).ok()?];
    let (counts, at_ns) = read(th)?;
    Some(Seen {
        counts,
        at_ns,
        rates: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::ProcessSample;

    const S: u64 = 1_000_000_000;

    fn mig(pw: Option<&WorkloadSample>, w: &WorkloadSample, memo: &mut RateMemo<1>) -> Option<f64> {
        rate(pw, w, memo, migrations).map(|r| r[0])
    }

    fn workload(threads: &[(u32, Option<u64>, u64)]) -> WorkloadSample {
        WorkloadSample {
            processes: vec![ProcessSample {
                pid: 10,
                start: 7,
                threads: threads
                    .iter()
                    .map(|&(tid, migrations, migrations_ns)| TaskSample {
                        tid,
                        migrations,
                        migrations_ns,
                        ..TaskSample::default()
                    })
                    .collect(),
                ..ProcessSample::default()
            }],
            ..WorkloadSample::default()
        }
    }

    #[test]
    fn each_thread_over_its_own_read_interval() {
        let mut memo = RateMemo::default();
        // Two threads read at different times: no rate before a second read.
        assert_eq!(
            mig(
                None,
                &workload(&[(10, Some(5), S), (11, Some(100), 2 * S)]),
                &mut memo
            ),
            None
        );
        // Thread 10: 30 more over 2 s (15/s); thread 11 not read again yet: thread 10 stands
        // for both.
        assert_eq!(
            mig(
                None,
                &workload(&[(10, Some(35), 3 * S), (11, Some(100), 2 * S)]),
                &mut memo
            ),
            Some(30.0)
        );
        // Thread 11: 40 more over 4 s (10/s); thread 10 holds its 15/s.
        assert_eq!(
            mig(
                None,
                &workload(&[(10, Some(35), 3 * S), (11, Some(140), 6 * S)]),
                &mut memo
            ),
            Some(25.0)
        );
        // Thread 10 is gone: its rate goes with it.
        assert_eq!(
            mig(None, &workload(&[(11, Some(140), 6 * S)]), &mut memo),
            Some(10.0)
        );
    }

    #[test]
    fn nothing_until_a_quarter_of_the_threads_have_rates() {
        // Eight threads, each read once; then one (an eighth) and two (a quarter) read again.
        let mut memo = RateMemo::default();
        let read = |again: u32| {
            let threads: Vec<_> = (0..8)
                .map(|k| match k < again {
                    true => (10 + k, Some(10), 2 * S),
                    false => (10 + k, Some(0), S),
                })
                .collect();
            workload(&threads)
        };
        assert_eq!(mig(None, &read(0), &mut memo), None);
        assert_eq!(mig(None, &read(1), &mut memo), None);
        // Two read again at 10/s stand for all eight.
        assert_eq!(mig(None, &read(2), &mut memo), Some(80.0));
    }

    #[test]
    fn a_first_interval_starts_from_the_previous_sample() {
        let mut memo = RateMemo::default();
        let before = workload(&[(10, Some(5), S)]);
        let now = workload(&[(10, Some(25), 3 * S)]);
        assert_eq!(mig(Some(&before), &now, &mut memo), Some(10.0));
    }

    #[test]
    fn unknown_without_sched_files() {
        let mut memo = RateMemo::default();
        for _ in 0..3 {
            assert_eq!(mig(None, &workload(&[(10, None, 0)]), &mut memo), None);
        }
    }
}
