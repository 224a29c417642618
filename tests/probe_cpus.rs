//! Where tasks ran, from fake /proc trees: migrations per second from each thread's sched file
//! (a known `se.nr_migrations` delta gives a known rate, each thread over its own read
//! interval, within the read budget), and each CPU's busy share with the workloads whose tasks
//! ran there. The real probe reads the fake files and the real model derives the Frames.

mod fakeproc;

use std::time::Duration;

use fakeproc::{pin, target, FakeProc, Process, Task, MS};
use schedlab::model::{Frame, Model};
use schedlab::probe::{Health, Sample};

/// A thread's sched file as the kernel prints it, with `migrations` moves so far.
fn sched_text(pid: u32, migrations: u64) -> String {
    format!(
        "fake ({pid}, #threads: 2)\n\
         -------------------------------------------------------------------\n\
         se.exec_start                                :      16073813.652125\n\
         se.vruntime                                  :          6495.536963\n\
         se.sum_exec_runtime                          :             0.239245\n\
         se.nr_migrations                             : {migrations:>20}\n\
         nr_switches                                  :                   12\n\
         nr_voluntary_switches                        :                   10\n\
         nr_involuntary_switches                      :                    2\n\
         se.load.weight                               :              1048576\n\
         policy                                       :                    0\n\
         prio                                         :                  120\n"
    )
}

fn write_sched(f: &FakeProc, pid: u32, tid: u32, migrations: u64) {
    f.write(
        &format!("{pid}/task/{tid}/sched"),
        &sched_text(pid, migrations),
    );
}

/// Pins a Sample to `k` seconds (not 0: a read at 0 is "never"), its sched reads too (the probe stamps them with the real
/// clock; here every file is read at every sweep).
fn pinned(s: Sample, k: u64) -> Sample {
    let mut s = pin(s, k);
    for th in s
        .workloads
        .iter_mut()
        .flat_map(|w| &mut w.processes)
        .flat_map(|p| &mut p.threads)
    {
        if th.migrations_ns != 0 {
            th.migrations_ns = s.t_ns;
        }
    }
    s
}

/// A two-thread process (pid 100) whose threads ran 0.3 and 0.2 s a second on CPUs 0 and 1.
fn two_threads(k: u64) -> Process {
    Process {
        threads: vec![
            Task {
                tid: 100,
                ..Task::ran(k * 300 * MS, 0)
            }
            .on(0),
            Task {
                tid: 101,
                ..Task::ran(k * 200 * MS, 0)
            }
            .on(1),
        ],
        ..Process::new(100)
    }
}

/// `n` samples of the target `ping` (pid 100) in a fake tree holding `two_threads(k)` at
/// sweep k; `second` writes the rest of the tree for sweep k and says how to stamp its Sample.
fn sampled<P: FnOnce(Sample) -> Sample>(
    n: u64,
    second: impl Fn(&FakeProc, u64) -> P,
) -> Vec<Sample> {
    let f = FakeProc::new();
    let targets = [target(1, "ping", 100)];
    let mut probe = f.probe();
    (0..n)
        .map(|k| {
            f.put(&two_threads(k));
            let stamp = second(&f, k);
            stamp(probe.sample(&targets))
        })
        .collect()
}

/// Three one-second intervals of `two_threads`, its threads moving 10 and 30 times a second,
/// CPU 0 busy 60% and CPU 1 25% of each second (/proc/stat's ticks: 100 a second).
fn frames_and_samples() -> (Vec<Frame>, Vec<Sample>) {
    let samples = sampled(4, |f, k| {
        write_sched(f, 100, 100, 7 + 10 * k);
        write_sched(f, 100, 101, 1000 + 30 * k);
        f.cpus(&[(k * 60, k * 40), (k * 25, k * 75)], k * 100);
        move |s| pinned(s, k + 1)
    });
    let mut model = Model::new();
    let mut frames = vec![model.first(&samples[0])];
    frames.extend(samples.windows(2).map(|w| model.step(&w[0], &w[1])));
    (frames, samples)
}

#[test]
fn a_known_migrations_delta_gives_its_rate() {
    let (frames, samples) = frames_and_samples();
    let th = &samples[1].workloads[0].processes[0].threads;
    assert_eq!(th[0].migrations, Some(17));
    assert_eq!(th[1].migrations, Some(1030));
    assert_eq!(samples[1].workloads[0].health, Health::Ok);
    // No rate before a thread's second read.
    assert_eq!(frames[0].workloads[0].migrations_per_sec, None);
    for f in &frames[1..] {
        // 10 + 30 moves a second.
        assert_eq!(f.workloads[0].migrations_per_sec, Some(40.0), "{f:#?}");
    }
}

#[test]
fn each_cpu_is_busy_with_the_tasks_seen_on_it() {
    let (frames, _) = frames_and_samples();
    assert!(frames[0].cpus.is_empty());
    for f in &frames[1..] {
        assert_eq!(f.cpus.len(), 2, "{f:#?}");
        let (c0, c1) = (&f.cpus[0], &f.cpus[1]);
        assert_eq!((c0.id, c1.id), (0, 1));
        assert!((c0.busy.unwrap() - 0.6).abs() < 1e-9, "{c0:?}");
        assert!((c1.busy.unwrap() - 0.25).abs() < 1e-9, "{c1:?}");
        // The main thread's 0.3 s on CPU 0, the other's 0.2 s on CPU 1.
        assert_eq!(c0.by_workload.len(), 1);
        assert_eq!((c0.by_workload[0].id, c0.by_workload[0].tasks), (1, 1));
        assert_eq!(c0.by_workload[0].name, "ping");
        assert!((c0.by_workload[0].share - 0.3).abs() < 1e-9, "{c0:?}");
        assert!((c1.by_workload[0].share - 0.2).abs() < 1e-9, "{c1:?}");
    }
}

#[test]
fn a_replay_of_the_samples_gives_the_same_placement() {
    let (frames, samples) = frames_and_samples();
    // Through a recording's JSON and back.
    let replayed: Vec<Sample> = samples
        .iter()
        .map(|s| serde_json::from_str(&serde_json::to_string(s).unwrap()).unwrap())
        .collect();
    let mut model = Model::new();
    let mut again = vec![model.first(&replayed[0])];
    again.extend(replayed.windows(2).map(|w| model.step(&w[0], &w[1])));
    assert_eq!(again, frames);
}

#[test]
fn without_sched_files_migrations_are_unknown_and_the_workload_healthy() {
    let samples = sampled(3, |f, k| {
        f.machine(k * 50, 0);
        move |s| pin(s, k)
    });
    let frame = Model::new().step(&samples[1], &samples[2]);
    assert_eq!(frame.workloads[0].migrations_per_sec, None);
    assert_eq!(samples[2].workloads[0].health, Health::Ok);
    assert!(samples[2].workloads[0].processes[0]
        .threads
        .iter()
        .all(|t| t.migrations.is_none() && t.migrations_ns == 0));
}

/// Process `pid` with `n` threads, tids `pid`, `pid + 1`, ...: their tids.
fn put_threads(f: &FakeProc, pid: u32, n: u32) -> Vec<u32> {
    let tids: Vec<u32> = (pid..pid + n).collect();
    f.put(&Process {
        threads: tids
            .iter()
            .map(|&tid| Task {
                tid,
                ..Task::new(tid)
            })
            .collect(),
        ..Process::new(pid)
    });
    tids
}

#[test]
fn sched_files_are_read_once_a_period_within_the_budget() {
    // 300 threads, a status period of an hour: the first sweep reads 100 sched files (a
    // second's budget), the rest in the sweeps after (5 each, the budget of the shortest gap
    // counted, 50 ms), and none twice within the period.
    let f = FakeProc::new();
    let tids = put_threads(&f, 100, 300);
    for &tid in &tids {
        write_sched(&f, 100, tid, u64::from(tid));
    }
    let targets = [target(1, "many", 100)];
    let mut probe = f.probe_every(Duration::from_secs(3600));
    let read = |s: &Sample| -> Vec<(u32, u64)> {
        s.workloads[0].processes[0]
            .threads
            .iter()
            .filter(|t| t.migrations.is_some())
            .map(|t| (t.tid, t.migrations_ns))
            .collect()
    };
    let first = read(&probe.sample(&targets));
    assert_eq!(first.len(), 100);
    let mut last = first.clone();
    for _ in 0..50 {
        let now = read(&probe.sample(&targets));
        // Read once: its read time holds for the period.
        for (tid, at) in &first {
            assert!(now.contains(&(*tid, *at)), "thread {tid} read again");
        }
        assert!(now.len() >= last.len());
        last = now;
    }
    assert_eq!(last.len(), 300, "every thread's turn came");
    assert!(last.iter().all(|&(tid, _)| tids.contains(&tid)));
}

/// On the real kernel: this test's own thread, moved between CPUs by its affinity, counts
/// every move in its sched file, and the probe reads them.
#[test]
fn the_real_kernel_counts_forced_moves() {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::{gettid, Pid};
    use schedlab::probe::{Probe, ProbeConfig, Target};

    let me = Pid::from_raw(0);
    let allowed = sched_getaffinity(me).unwrap();
    let cpus: Vec<usize> = (0..CpuSet::count())
        .filter(|&c| allowed.is_set(c).unwrap_or(false))
        .take(2)
        .collect();
    if cpus.len() < 2 {
        eprintln!("one CPU allowed: no move to force");
        return;
    }
    let mut probe = Probe::new(ProbeConfig {
        status_every: Duration::ZERO,
        ..ProbeConfig::default()
    })
    .unwrap();
    let target = Target {
        leader: std::process::id(),
        ..target(1, "this test", 0)
    };
    let tid = gettid().as_raw() as u32;
    let mine = |s: &Sample| -> Option<u64> {
        s.workloads[0]
            .processes
            .iter()
            .flat_map(|p| &p.threads)
            .find(|t| t.tid == tid)
            .and_then(|t| t.migrations)
    };
    let targets = [target];
    let before = mine(&probe.sample(&targets));
    for i in 0..10 {
        let mut one = CpuSet::new();
        one.set(cpus[i % 2]).unwrap();
        // A running thread whose CPU leaves its mask is moved before the call returns.
        sched_setaffinity(me, &one).unwrap();
    }
    sched_setaffinity(me, &allowed).unwrap();
    let after = mine(&probe.sample(&targets));
    if !std::path::Path::new(&format!("/proc/self/task/{tid}/sched")).exists() {
        assert_eq!((before, after), (None, None));
        eprintln!("this kernel has no per-task sched file: migrations stay unknown");
        return;
    }
    let (before, after) = (before.unwrap(), after.unwrap());
    // The first flip may find it on that CPU already.
    assert!(after - before >= 9, "{before} → {after}");
}

#[test]
fn a_big_process_is_taken_in_at_the_budget_of_new_threads_and_then_whole() {
    // 5,600 threads: the first sweep (a second's budget, 5,000) opens 5,000; the next opens
    // at least 500 more (the budget of the shortest gap counted, 100 ms; more when the first
    // sweep's 5,000 opens took longer than that) from the threads the first listing left
    // pending, until every one is read.
    let f = FakeProc::new();
    let tids = put_threads(&f, 100, 5_600);
    let targets = [target(1, "many", 100)];
    let mut probe = f.probe_every(Duration::from_secs(3600));
    let seen = |s: &Sample| -> Vec<u32> {
        s.workloads[0].processes[0]
            .threads
            .iter()
            .map(|t| t.tid)
            .collect()
    };
    let counts: Vec<usize> = (0..3)
        .map(|_| seen(&probe.sample(&targets)).len())
        .collect();
    assert_eq!(counts[0], 5_000, "{counts:?}");
    assert!(counts[1] >= 5_500, "{counts:?}");
    assert_eq!(counts[2], 5_600, "{counts:?}");
    assert_eq!(
        seen(&probe.sample(&targets)),
        tids,
        "every thread, in tid order"
    );
}

/// On the real kernel: a process of 300 threads is taken in by system calls (its threads'
/// nice, policy and allowed CPUs known at once, without reading their stat and status, which
/// their next reads bring: their state and switches).
#[test]
fn a_big_process_on_the_real_kernel_is_taken_in_by_system_calls() {
    use nix::sched::{sched_getaffinity, CpuSet};
    use nix::unistd::Pid;
    use schedlab::probe::{Probe, ProbeConfig, Target};
    use std::sync::{mpsc, Arc, Barrier};

    let allowed = sched_getaffinity(Pid::from_raw(0)).unwrap();
    let list = schedlab::sys::kernel::cpuset::CpuSet::parse_list(
        &(0..CpuSet::count())
            .filter(|&c| allowed.is_set(c).unwrap_or(false))
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(","),
    )
    .unwrap()
    .to_string();
    let n = 300;
    let (tx, rx) = mpsc::channel();
    let done = Arc::new(Barrier::new(n + 1));
    let workers: Vec<_> = (0..n)
        .map(|_| {
            let (tx, done) = (tx.clone(), done.clone());
            std::thread::spawn(move || {
                let tid = nix::unistd::gettid().as_raw();
                // SAFETY: setpriority takes no pointer; `tid` is this thread's own id.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 3) };
                tx.send(tid as u32).unwrap();
                done.wait();
            })
        })
        .collect();
    let tids: Vec<u32> = (0..n).map(|_| rx.recv().unwrap()).collect();
    let mut probe = Probe::new(ProbeConfig {
        status_every: Duration::ZERO,
        ..ProbeConfig::default()
    })
    .unwrap();
    let targets = [Target {
        leader: std::process::id(),
        ..target(1, "this test", 0)
    }];
    let mine = |s: &Sample| -> Vec<schedlab::probe::TaskSample> {
        s.workloads[0]
            .processes
            .iter()
            .flat_map(|p| &p.threads)
            .filter(|t| tids.contains(&t.tid))
            .cloned()
            .collect()
    };
    let first = mine(&probe.sample(&targets));
    // The next sweeps (status at every sweep here) read them, a share of them a sweep (the
    // budget of reads a second).
    let mut read = std::collections::BTreeMap::new();
    for _ in 0..20 {
        for t in mine(&probe.sample(&targets)) {
            if t.state.is_some() && t.vol.is_some() {
                read.insert(t.tid, t);
            }
        }
    }
    done.wait();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(first.len(), n, "every worker taken in at the first sweep");
    for t in &first {
        assert_eq!((t.nice, t.policy), (3, 0), "{t:?}");
        assert_eq!(t.cpus.as_deref(), Some(list.as_str()), "{t:?}");
        // No stat read; switches only with the sched file the migrations read anyway.
        assert_eq!(t.state, None, "no stat read: {t:?}");
        assert_eq!(
            t.vol.is_some(),
            t.migrations.is_some(),
            "no status read: {t:?}"
        );
    }
    assert_eq!(
        read.len(),
        n,
        "every worker's stat and status read in 20 sweeps"
    );
    assert!(read.values().all(|t| t.nice == 3), "{read:?}");
}
