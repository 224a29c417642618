//! Migrations per second per workload: how often its threads moved to another CPU, from each
//! thread's `se.nr_migrations` (its sched file). The probe reads those files less often than
//! schedstat and in rotation, each thread at its own time, so a thread's rate is its count's
//! change over its own read interval, and a thread not read again since holds its last rate.

use foldhash::{HashMap, HashMapExt};

use super::account::{by_tid, seek};
use crate::probe::WorkloadSample;

/// A process as named across samples: its pid and start time.
type ProcKey = (u32, u64);

/// One thread's last read and the rate its last two reads gave.
#[derive(Clone, Copy)]
struct Seen {
    count: u64,
    at_ns: u64,
    rate: Option<f64>,
}

/// What the model keeps of a workload's migrations between intervals: per process, its
/// threads' last reads, sorted by tid (walked beside the thread list, as in `account`).
#[derive(Default)]
pub struct MigrationMemo {
    threads: HashMap<ProcKey, Vec<(u32, Seen)>>,
}

/// The workload's migrations per second, summed over its threads with a rate; None until
/// some thread has been read twice (or when the kernel has no sched file). `pw` is the same
/// workload in the previous Sample: a thread the memo has not met yet starts from its read
/// there. A thread that went away takes its rate with it; one born since the last read
/// counts from its second read.
pub fn rate(
    pw: Option<&WorkloadSample>,
    w: &WorkloadSample,
    memo: &mut MigrationMemo,
) -> Option<f64> {
    let mut next = HashMap::with_capacity(memo.threads.len());
    let mut sum: Option<f64> = None;
    for p in &w.processes {
        let before = memo.threads.remove(&(p.pid, p.start)).unwrap_or_default();
        let mut seen_now = Vec::with_capacity(before.len());
        let mut at = 0;
        for th in &p.threads {
            let Some(count) = th.migrations.filter(|_| th.migrations_ns != 0) else {
                continue;
            };
            let at_ns = th.migrations_ns;
            let old = seek(&before, &mut at, th.tid, |s| s.0)
                .map(|s| s.1)
                .or_else(|| read_before(pw?, (p.pid, p.start, th.tid)));
            let seen = match old {
                // Not read again since: its last rate holds.
                Some(old) if old.at_ns == at_ns => old,
                Some(old) if old.at_ns < at_ns => Seen {
                    count,
                    at_ns,
                    rate: Some(
                        count.saturating_sub(old.count) as f64 / ((at_ns - old.at_ns) as f64 / 1e9),
                    ),
                },
                // First seen, or read before the last read (a replay that went back).
                _ => Seen {
                    count,
                    at_ns,
                    rate: None,
                },
            };
            if let Some(r) = seen.rate {
                *sum.get_or_insert(0.0) += r;
            }
            seen_now.push((th.tid, seen));
        }
        next.insert((p.pid, p.start), by_tid(seen_now));
    }
    memo.threads = next;
    sum
}

/// A thread's read in an earlier Sample (processes sorted by pid, threads by tid).
fn read_before(pw: &WorkloadSample, (pid, start, tid): (u32, u64, u32)) -> Option<Seen> {
    let p = pw
        .processes
        .binary_search_by_key(&pid, |p| p.pid)
        .ok()
        .map(|i| &pw.processes[i])
        .filter(|p| p.start == start)?;
    let th = &p.threads[p.threads.binary_search_by_key(&tid, |t| t.tid).ok()?];
    Some(Seen {
        count: th.migrations?,
        at_ns: th.migrations_ns,
        rate: None,
    })
    .filter(|s| s.at_ns != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{ProcessSample, TaskSample};

    const S: u64 = 1_000_000_000;

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
        let mut memo = MigrationMemo::default();
        // Two threads read at different times: no rate before a second read.
        assert_eq!(
            rate(
                None,
                &workload(&[(10, Some(5), S), (11, Some(100), 2 * S)]),
                &mut memo
            ),
            None
        );
        // Thread 10: 30 more over 2 s (15/s); thread 11 not read again yet.
        assert_eq!(
            rate(
                None,
                &workload(&[(10, Some(35), 3 * S), (11, Some(100), 2 * S)]),
                &mut memo
            ),
            Some(15.0)
        );
        // Thread 11: 40 more over 4 s (10/s); thread 10 holds its 15/s.
        assert_eq!(
            rate(
                None,
                &workload(&[(10, Some(35), 3 * S), (11, Some(140), 6 * S)]),
                &mut memo
            ),
            Some(25.0)
        );
        // Thread 10 is gone: its rate goes with it.
        assert_eq!(
            rate(None, &workload(&[(11, Some(140), 6 * S)]), &mut memo),
            Some(10.0)
        );
    }

    #[test]
    fn a_first_interval_starts_from_the_previous_sample() {
        let mut memo = MigrationMemo::default();
        let before = workload(&[(10, Some(5), S)]);
        let now = workload(&[(10, Some(25), 3 * S)]);
        assert_eq!(rate(Some(&before), &now, &mut memo), Some(10.0));
    }

    #[test]
    fn unknown_without_sched_files() {
        let mut memo = MigrationMemo::default();
        for _ in 0..3 {
            assert_eq!(rate(None, &workload(&[(10, None, 0)]), &mut memo), None);
        }
    }
}
