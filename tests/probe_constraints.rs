//! Golden Frames from fake /proc and cgroup trees, one per rule the fairness model enforces
//! (docs/fairness.md): allowed CPUs, the cgroup tree (v1 and v2), autogroup only in the root
//! cgroup, real time first with the fair server's reserve, quotas, starved tasks that show no
//! wait yet, the rest of the machine, SCHED_IDLE, and the verdict window. Each test drives
//! the real probe over the fake files and the real model over its Samples, as the engine does,
//! and asserts the numbers that follow from the kernel's rules as well as the snapshot.

mod fakeproc;

use std::time::Duration;

use fakeproc::{target, FakeProc, Process, Session, Task, EPOCH, MS, S};
use schedlab::model::{Cause, Due, Frame, Model, Verdict, WorkloadFrame};
use schedlab::probe::Target;

const SCHED_FIFO: u32 = 1;
const SCHED_IDLE: u32 = 5;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[track_caller]
fn assert_close(a: f64, b: f64, what: &str) {
    assert!(close(a, b), "{what}: {a} is not {b}");
}

/// Received what it was due over the window, so nothing to explain.
#[track_caller]
fn assert_fair(w: &WorkloadFrame) {
    assert_eq!(
        (w.verdict, &w.cause),
        (Verdict::Fair, &Cause::None),
        "{}: {w:?}",
        w.name
    );
}

fn row<'a>(f: &'a Frame, name: &str) -> &'a WorkloadFrame {
    f.workloads
        .iter()
        .find(|w| w.name == name)
        .unwrap_or_else(|| panic!("no workload {name} in {f:#?}"))
}

/// Due `weight` of `of_weight` × `pool` CPUs (what `pool_name` says it is), wanting `wants`.
fn share(weight: f64, of_weight: f64, pool: f64, pool_name: &str, wants: f64) -> Due {
    Due::Share {
        weight,
        of_weight,
        pool,
        pool_name: pool_name.into(),
        wants,
    }
}

/// Workload `name` was due `weight` of `of_weight` × `pool` CPUs (`pool_name`), wanting a
/// whole CPU.
#[track_caller]
fn assert_due_share(
    fr: &Frame,
    name: &str,
    weight: f64,
    of_weight: f64,
    pool: f64,
    pool_name: &str,
) {
    let want = share(weight, of_weight, pool, pool_name, 1.0);
    assert_eq!(row(fr, name).due, want, "{name}");
}

fn golden(name: &str, f: &Frame) {
    // How old the rest's last read is follows the real time the sweeps took (the rest is read
    // once a real second), not the fake tree's: not part of what a golden Frame pins.
    let mut f = f.clone();
    f.machine.rest_age = 0.0;
    insta::assert_snapshot!(name, serde_json::to_string_pretty(&f).unwrap());
}

/// A session reading status at every sweep, one Sample a second.
fn session(f: &FakeProc) -> Session {
    Session::new(
        f.probe_every(Duration::ZERO),
        Model::new(),
        Duration::from_secs(1),
    )
}

/// A single-threaded hog: `run` and `wait` ns in all so far.
fn hog(pid: u32, run: u64, wait: u64) -> Process {
    Process::single(pid, Task::ran(run, wait))
}

/// Sweeps 0, 1 and 2, a second apart: before sweep k, `put(k)` writes what the processes and
/// the CPUs show then. With `rest`, the sweeps after the first wait for the probe's read of
/// the rest of the machine.
fn sweeps(f: &FakeProc, targets: &[Target], rest: bool, mut put: impl FnMut(u64)) -> Session {
    let mut s = session(f);
    for k in 0..3 {
        put(k);
        if rest && k > 0 {
            rest_read(&mut s, targets);
        } else {
            s.sample(targets);
        }
    }
    s
}

/// (pid, workload name, share, group): a hog that wants the whole CPU and runs `share` of
/// every second, due `share` in `group`.
type ShareHog<'a> = (u32, &'a str, f64, &'a str);

/// The hogs over three sweeps on `cpus` CPUs, each placed by `place` (given its index: a
/// cgroup, an autogroup).
fn share_hogs(
    f: &FakeProc,
    cpus: usize,
    hogs: &[ShareHog],
    place: impl Fn(usize, Process) -> Process,
) -> Session {
    let targets: Vec<Target> = hogs
        .iter()
        .map(|&(pid, name, ..)| target(pid, name, pid))
        .collect();
    sweeps(f, &targets, false, |k| {
        for (i, &(pid, _, share, _)) in hogs.iter().enumerate() {
            let run = (k as f64 * share * S as f64) as u64;
            f.put(&place(i, hog(pid, run, k * S - run)));
        }
        f.cpus(&vec![(k * 100, 0); cpus], 0);
    })
}

/// Each hog was due its share in its group, and got it.
#[track_caller]
fn assert_shares(fr: &Frame, hogs: &[ShareHog]) {
    for &(_, name, share, group) in hogs {
        let w = row(fr, name);
        assert_close(w.cpu_fair, share, name);
        assert_eq!(w.group, group, "{name}");
        assert_fair(w);
    }
}

// 1. Affinity -------------------------------------------------------------------------------

#[test]
fn three_threads_pinned_to_cpu0_are_due_a_third_of_it_and_a_free_one_a_whole_cpu() {
    let f = FakeProc::new();
    let pinned = [101, 102, 103];
    let targets: Vec<Target> = pinned
        .iter()
        .enumerate()
        .map(|(i, &pid)| target(i as u32 + 1, &format!("pinned-{}", i + 1), pid))
        .chain([target(4, "free", 104)])
        .collect();
    let s = sweeps(&f, &targets, false, |k| {
        // One shell's jobs: three share CPU 0 (each ran a third, waited two thirds), one has
        // CPU 1 to itself.
        for &pid in &pinned {
            let t = Task::ran(k * S / 3, k * 2 * S / 3).cpus("0").on(0);
            f.put(&Process::single(pid, t).session(7));
        }
        let free = Task::ran(k * S, 0).cpus("0-1").on(1);
        f.put(&Process::single(104, free).session(7));
        f.cpus(&[(k * 100, 0), (k * 100, 0)], 0);
    });
    let fr = &s.frames[2];
    for i in 1..=3 {
        let w = row(fr, &format!("pinned-{i}"));
        assert_close(w.cpu_fair, 1.0 / 3.0, "a pinned thread's due");
        assert_close(w.cpu_received, 1.0 / 3.0, "a pinned thread's received");
        assert_close(w.cpu_demand, 1.0, "a pinned thread's demand");
        assert_eq!((w.cpus_allowed.as_str(), w.cpus_used.as_str()), ("0", "0"));
        assert_fair(w);
        assert_eq!(
            w.due,
            share(1024.0, 3072.0, 1.0, "its group gets on CPU 0", 1.0)
        );
    }
    let free = row(fr, "free");
    assert_close(free.cpu_fair, 1.0, "the free thread's due");
    assert_eq!(free.cpus_allowed, "0-1");
    assert_eq!(free.due, Due::AllItWants { wants: 1.0 });
    assert_fair(free);
    golden("affinity", fr);
}

// 2. The cgroup tree, v1 ----------------------------------------------------------------------

/// A /proc/PID/cgroup of a v1 machine: the cpu,cpuacct line puts it in `path`.
fn v1_cgroup(path: &str) -> String {
    format!("12:memory:/user.slice\n4:cpu,cpuacct:{path}\n1:name=systemd:/user.slice/session-1.scope\n0::/user.slice/session-1.scope\n")
}

#[test]
fn v1_sibling_groups_with_shares_1024_and_3072_are_due_a_quarter_and_three_quarters() {
    let f = FakeProc::new();
    f.mount_v1();
    f.cgroup_file("/a", "cpu.shares", "1024\n");
    f.cgroup_file("/b", "cpu.shares", "3072\n");
    let targets = [target(1, "in-a", 201), target(2, "in-b", 202)];
    let s = sweeps(&f, &targets, false, |k| {
        f.put(&hog(201, k * S / 4, k * 3 * S / 4).cgroup(&v1_cgroup("/a")));
        f.put(&hog(202, k * 3 * S / 4, k * S / 4).cgroup(&v1_cgroup("/b")));
        f.cpus(&[(k * 100, 0)], 0);
    });
    let fr = &s.frames[2];
    let nodes = s.samples[2].machine.cgroups.as_ref().unwrap();
    let weights: Vec<(&str, f64)> = nodes.iter().map(|n| (n.path.as_str(), n.weight)).collect();
    assert_eq!(weights, [("/a", 1024.0), ("/b", 3072.0)]);
    let (a, b) = (row(fr, "in-a"), row(fr, "in-b"));
    assert_close(a.cpu_fair, 0.25, "/a's due");
    assert_close(b.cpu_fair, 0.75, "/b's due");
    assert_eq!(
        (a.group.as_str(), b.group.as_str()),
        ("cgroup /a", "cgroup /b")
    );
    assert_eq!(a.due, share(1024.0, 4096.0, 1.0, "of the machine", 1.0));
    assert_fair(a);
    assert_fair(b);
    golden("cgroup_v1_siblings", fr);
}

#[test]
fn v1_nested_groups_share_level_by_level_with_tasks_and_groups_as_peers() {
    // /a and /b share the CPU equally; inside /a, a task of its own and the groups /a/x
    // (1024) and /a/y (2048) share /a's half as 1 : 1 : 2.
    let f = FakeProc::new();
    f.mount_v1();
    for (path, shares) in [("/a", 1024), ("/b", 1024), ("/a/x", 1024), ("/a/y", 2048)] {
        f.cgroup_file(path, "cpu.shares", &format!("{shares}\n"));
    }
    let hogs = [
        (211, "/a", 0.125, "cgroup /a"),
        (212, "/a/x", 0.125, "cgroup /a/x"),
        (213, "/a/y", 0.25, "cgroup /a/y"),
        (214, "/b", 0.5, "cgroup /b"),
    ];
    let s = share_hogs(&f, 1, &hogs, |i, p| p.cgroup(&v1_cgroup(hogs[i].1)));
    let fr = &s.frames[2];
    assert_shares(fr, &hogs);
    // The task in /a is due its weight's part of what /a gets.
    assert_due_share(fr, "/a", 1024.0, 4096.0, 0.5, "its group gets");
    golden("cgroup_v1_nested", fr);
}

// 3. The cgroup tree, v2 ----------------------------------------------------------------------

#[test]
fn v2_weights_share_level_by_level_and_a_level_without_cpu_is_its_ancestor() {
    // /a (weight 100) does not enable cpu for its children: a task in /a/inner is scheduled
    // as part of /a. /b (weight 300) does, and its children /b/leaf1 and /b/leaf2 (100, 200)
    // split its three quarters.
    let f = FakeProc::new();
    f.mount_v2();
    f.cgroup_file("/", "cgroup.subtree_control", "cpu io memory\n");
    f.cgroup_file("/a", "cpu.weight", "100\n");
    f.cgroup_file("/a", "cgroup.subtree_control", "memory\n");
    f.cgroup_file("/b", "cpu.weight", "300\n");
    f.cgroup_file("/b", "cgroup.subtree_control", "cpu memory\n");
    f.cgroup_file("/b/leaf1", "cpu.weight", "100\n");
    f.cgroup_file("/b/leaf2", "cpu.weight", "200\n");
    let hogs = [
        (301, "/a/inner", 0.25, "cgroup /a"),
        (302, "/b/leaf1", 0.25, "cgroup /b/leaf1"),
        (303, "/b/leaf2", 0.5, "cgroup /b/leaf2"),
    ];
    let s = share_hogs(&f, 1, &hogs, |i, p| {
        p.cgroup(&format!("0::{}\n", hogs[i].1))
    });
    let procs: Vec<Option<&str>> = s.samples[2]
        .workloads
        .iter()
        .map(|w| w.processes[0].cgroup.as_deref())
        .collect();
    assert_eq!(procs, [Some("/a"), Some("/b/leaf1"), Some("/b/leaf2")]);
    let fr = &s.frames[2];
    assert_shares(fr, &hogs);
    // /a/inner is scheduled as /a, a quarter of the machine.
    assert_due_share(fr, "/a/inner", 1024.0, 4096.0, 1.0, "of the machine");
    assert_due_share(fr, "/b/leaf2", 2048.0, 3072.0, 0.75, "its group gets");
    golden("cgroup_v2", fr);
}

// 4. Autogroup only in the root cgroup --------------------------------------------------------

#[test]
fn autogroup_applies_only_in_the_root_cgroup_and_the_root_autogroup_is_no_group() {
    // Root level, 2 CPUs: the cgroup /shared (two processes of autogroups 11 and 12), the
    // autogroups 13 and 14 (root cgroup), and two loose tasks of the root autogroup. Five
    // peers of equal weight: 0.4 CPU each; /shared's two processes split theirs.
    let f = FakeProc::new();
    f.mount_v2();
    f.cgroup_file("/", "cgroup.subtree_control", "cpu memory\n");
    f.cgroup_file("/shared", "cpu.weight", "100\n");
    let hogs = [
        (401, "p401", 0.2, "cgroup /shared"),
        (402, "p402", 0.2, "cgroup /shared"),
        (403, "p403", 0.4, "autogroup-13"),
        (404, "p404", 0.4, "autogroup-14"),
        (405, "p405", 0.4, "root"),
        (406, "p406", 0.4, "root"),
    ];
    // Each one's cgroup and autogroup (None: the root autogroup).
    let placed = [
        ("/shared", Some((11, 0))),
        ("/shared", Some((12, 0))),
        ("/", Some((13, 0))),
        ("/", Some((14, 0))),
        ("/", None),
        ("/", None),
    ];
    let s = share_hogs(&f, 2, &hogs, |i, p| {
        let (path, ag) = placed[i];
        p.autogroup(ag).cgroup(&format!("0::{path}\n"))
    });
    let fr = &s.frames[2];
    assert_shares(fr, &hogs);
    // In /shared: half of what the cgroup gets. At the root: a fifth of the machine, as
    // one of five peers (the loose tasks of the root autogroup among them).
    assert_due_share(fr, "p401", 1024.0, 2048.0, 0.4, "its group gets");
    assert_due_share(fr, "p403", 1024.0, 5120.0, 2.0, "of the machine");
    assert_due_share(fr, "p405", 1024.0, 5120.0, 2.0, "of the machine");
    golden("autogroup_root_cgroup_only", fr);
}

// 5. Real time first --------------------------------------------------------------------------

/// A FIFO hog and a normal hog on a one-CPU machine; the normal one gets `reserve` of it.
fn realtime_frames(f: &FakeProc, reserve: f64) -> Session {
    let targets = [target(1, "fifo", 501), target(2, "normal", 502)];
    sweeps(f, &targets, false, |k| {
        let rt_run = (k as f64 * (1.0 - reserve) * S as f64) as u64;
        // The FIFO hog waits while the fair server runs the normal one.
        let fifo = Task::ran(rt_run, k * S - rt_run).policy(SCHED_FIFO, 50);
        f.put(&Process::single(501, fifo).session(7));
        f.put(&hog(502, k * S - rt_run, rt_run).session(7));
        f.cpus(&[(k * 100, 0)], 0);
    })
}

#[track_caller]
fn assert_realtime_first(s: &Session, reserve: f64) {
    let fr = &s.frames[2];
    let (fifo, normal) = (row(fr, "fifo"), row(fr, "normal"));
    assert_close(fifo.cpu_fair, 1.0 - reserve, "the FIFO hog's due");
    assert_close(normal.cpu_fair, reserve, "the normal hog's due");
    assert_close(normal.cpu_demand, 1.0, "the normal hog's demand");
    assert_close(fr.machine.rt_cpu, 1.0 - reserve, "real-time CPU");
    // It is due all that real-time tasks may take of the CPU, not a weight's part of it.
    assert_eq!(
        fifo.due,
        share(1024.0, 1024.0, fifo.cpu_fair, "the machine has left", 1.0)
    );
    let Due::RealTime { taken, cpus } = &normal.due else {
        panic!(
            "the normal hog is due what real-time leaves: {:?}",
            normal.due
        );
    };
    assert_close(*taken, 1.0 - reserve, "what real-time takes");
    assert_eq!(cpus, "0");
    assert_fair(fifo);
    assert_fair(normal);
}

#[test]
fn realtime_leaves_the_fair_servers_reserve_from_debugfs() {
    let f = FakeProc::new();
    f.write("sys/kernel/osrelease", "6.18.44\n");
    f.write_sys("kernel/debug/sched/fair_server/cpu0/runtime", "100000000\n");
    f.write_sys("kernel/debug/sched/fair_server/cpu0/period", "1000000000\n");
    let s = realtime_frames(&f, 0.1);
    assert_eq!(s.samples[2].machine.fair_reserve, Some(0.1));
    assert_realtime_first(&s, 0.1);
    golden("realtime_fair_server", &s.frames[2]);
}

#[test]
fn realtime_leaves_the_default_five_percent_on_612_without_debugfs() {
    let f = FakeProc::new();
    f.write("sys/kernel/osrelease", "6.12.0-rc3\n");
    // RT throttling's files are ignored on kernels with the fair server.
    f.write("sys/kernel/sched_rt_runtime_us", "500000\n");
    f.write("sys/kernel/sched_rt_period_us", "1000000\n");
    let s = realtime_frames(&f, 0.05);
    assert_eq!(s.samples[2].machine.fair_reserve, None);
    assert_realtime_first(&s, 0.05);
    golden("realtime_default_reserve", &s.frames[2]);
}

#[test]
fn realtime_leaves_what_rt_throttling_leaves_on_older_kernels() {
    let f = FakeProc::new();
    f.write("sys/kernel/osrelease", "5.15.0-91-generic\n");
    f.write("sys/kernel/sched_rt_runtime_us", "900000\n");
    f.write("sys/kernel/sched_rt_period_us", "1000000\n");
    let s = realtime_frames(&f, 0.1);
    assert_close(s.samples[2].machine.fair_reserve.unwrap(), 0.1, "reserve");
    assert_realtime_first(&s, 0.1);
    golden("realtime_rt_throttling", &s.frames[2]);
}

// 6. Quotas -----------------------------------------------------------------------------------

/// A hog in the cgroup /capped (20% of a CPU) beside a free hog, one CPU. The capped one runs
/// 0.2 s a second and its schedstat shows the other 0.8 s as wait: the time it was throttled.
fn quota_frames(
    f: &FakeProc,
    cgroup: &dyn Fn(&str) -> String,
    cpu_stat: &dyn Fn(u64) -> String,
) -> Session {
    let targets = [target(1, "capped", 601), target(2, "free", 602)];
    sweeps(f, &targets, false, |k| {
        f.cgroup_file("/capped", "cpu.stat", &cpu_stat(k));
        f.put(&hog(601, k * S / 5, k * 4 * S / 5).cgroup(&cgroup("/capped")));
        f.put(&hog(602, k * 4 * S / 5, k * S / 5).cgroup(&cgroup("/")));
        f.cpus(&[(k * 100, 0)], 0);
    })
}

#[track_caller]
fn assert_quota(s: &Session) {
    let node = s.samples[2].machine.cgroups.as_ref().unwrap();
    assert_eq!(node.len(), 1, "{node:?}");
    assert_close(node[0].quota.unwrap(), 0.2, "the quota");
    // Every frame with a rate of throttled time to go by, the first one too.
    for fr in &s.frames[1..] {
        let (capped, free) = (row(fr, "capped"), row(fr, "free"));
        assert_close(capped.cpu_fair, 0.2, "the capped hog's due");
        assert_close(capped.cpu_demand, 1.0, "the capped hog's demand");
        assert_eq!(
            capped.due,
            Due::Quota {
                cpus: 0.2,
                group: "cgroup /capped".into()
            }
        );
        assert_close(capped.throttled_pct, 80.0, "throttled");
        // Its schedstat wait was all throttling: none of it is run-queue wait.
        assert_close(capped.runq_wait_pct, 0.0, "the capped hog's run-queue wait");
        assert_close(capped.wait_per_slice_us, 0.0, "its wait per slice");
        assert_eq!(
            (capped.verdict, capped.cause.clone()),
            (Verdict::Fair, Cause::None)
        );
        // What the quota leaves goes to the free hog.
        assert_close(free.cpu_fair, 0.8, "the free hog's due");
        assert_close(free.runq_wait_pct, 20.0, "the free hog's run-queue wait");
        assert_close(free.throttled_pct, 0.0, "the free hog is not throttled");
    }
}

#[test]
fn a_v1_quota_caps_the_due_share_and_throttled_time_is_not_run_queue_wait() {
    let f = FakeProc::new();
    f.mount_v1();
    f.cgroup_file("/capped", "cpu.cfs_quota_us", "20000\n");
    f.cgroup_file("/capped", "cpu.cfs_period_us", "100000\n");
    let cpu_stat = |k: u64| {
        format!(
            "nr_periods {}\nnr_throttled {}\nthrottled_time {}\n",
            k * 10,
            k * 8,
            k * 4 * S / 5
        )
    };
    let s = quota_frames(&f, &|p| v1_cgroup(p), &cpu_stat);
    assert_quota(&s);
    golden("quota_v1", &s.frames[2]);
}

#[test]
fn a_v2_quota_caps_the_due_share_and_throttled_time_is_not_run_queue_wait() {
    let f = FakeProc::new();
    f.mount_v2();
    f.cgroup_file("/", "cgroup.subtree_control", "cpu memory\n");
    f.cgroup_file("/capped", "cpu.max", "20000 100000\n");
    let cpu_stat = |k: u64| {
        format!(
            "usage_usec {u}\nuser_usec {u}\nsystem_usec 0\nnr_periods {}\nnr_throttled {}\nthrottled_usec {}\n",
            k * 10,
            k * 8,
            k * 800_000,
            u = k * 200_000
        )
    };
    let s = quota_frames(&f, &|p| format!("0::{p}\n"), &cpu_stat);
    assert_quota(&s);
    golden("quota_v2", &s.frames[2]);
}

// 7. A starved task shows no wait until it runs -------------------------------------------

#[test]
fn a_starved_thread_wants_every_interval_and_its_late_wait_is_not_counted_twice() {
    // CPU 0 is busy throughout (its idle time does not move), CPU 1 idle. On CPU 0: a hog,
    // and a worker thread of another process that is runnable at every read but runs only
    // in interval 4, when schedstat reports all its wait at once (3.9 s). Status is read at
    // the first sweep only: the worker's state is read out of turn, because it ran little
    // while a CPU was contended.
    let f = FakeProc::new();
    let targets = [target(1, "hog", 701), target(2, "starved", 702)];
    let mut s = Session::new(
        f.probe_every(Duration::from_secs(3600)),
        Model::new(),
        Duration::from_secs(1),
    );
    // (run, wait) of the worker so far, after sweep k.
    let worker = |k: u64| match k {
        0..=3 => (50 * MS, 950 * MS),
        _ => (150 * MS, 4850 * MS),
    };
    for k in 0..6 {
        let (wr, ww) = worker(k);
        let hog_run = k * S - (wr - 50 * MS);
        let hog_wait = if k >= 4 { 100 * MS } else { 0 };
        f.put(&Process::single(701, Task::ran(hog_run, hog_wait).cpus("0")).session(7));
        let main = Task::new(702).state('S').cpus("0-1");
        let w = Task::ran(wr, ww).cpus("0");
        f.put(&Process {
            threads: vec![main, Task { tid: 703, ..w }],
            ..Process::new(702).session(7)
        });
        f.cpus(&[(k * 100, 1000), (0, 1000 + k * 100)], 0);
        s.sample(&targets);
    }
    // Its state was read at every sweep in which it had not run, though status was not due.
    for k in [1, 2, 3, 5] {
        let th = &s.samples[k].workloads[1].processes[0].threads[1];
        assert_eq!((th.tid, th.state), (703, Some('R')), "sweep {k}");
    }
    assert_eq!(
        s.samples[5].status_t_ns, EPOCH,
        "status was read at the first sweep only"
    );

    // Intervals 1-3: runnable throughout, never ran: it wanted all of each and waited all of
    // it. Interval 4: it ran 0.1 s and schedstat reported 3.9 s of wait at once, of which 3 s
    // were counted already: 0.9 s is this interval's. Interval 5: starved again.
    for (k, want_wait) in (1..=5).zip([100.0, 100.0, 100.0, 90.0, 100.0]) {
        let w = row(&s.frames[k], "starved");
        assert_close(w.cpu_demand, 1.0, &format!("demand in interval {k}"));
        assert_close(w.cpu_fair, 0.5, &format!("due in interval {k}"));
        assert_close(
            w.runq_wait_pct,
            want_wait,
            &format!("WAIT% in interval {k}"),
        );
    }
    // The wait schedstat reported over intervals 1-4 counted once in all.
    let counted: f64 = (1..=4)
        .map(|k| row(&s.frames[k], "starved").runq_wait_pct / 100.0)
        .sum();
    assert_close(counted, 3.9, "wait counted over intervals 1-4");

    let fr = &s.frames[5];
    let (hog, starved) = (row(fr, "hog"), row(fr, "starved"));
    assert_close(starved.window_received, 0.02, "received over the window");
    assert_eq!(starved.verdict, Verdict::Starved);
    assert_eq!(
        starved.due,
        share(1024.0, 2048.0, 1.0, "its group gets on CPU 0", 1.0)
    );
    let Cause::RunQueue { wait_pct, cpus, .. } = &starved.cause else {
        panic!("it waited on CPU 0's run queue: {:?}", starved.cause);
    };
    assert_close(*wait_pct, 98.0, "its wait over the window");
    assert_eq!(cpus, "0");
    assert_eq!(hog.verdict, Verdict::Ahead);
    assert_eq!(
        hog.cause,
        Cause::PaidBy {
            names: vec!["starved".into()]
        }
    );
    golden("starved_thread", fr);
}

// 8. The rest of the machine ------------------------------------------------------------------

/// Sleeps until the probe reads the rest of the machine again (about once a second).
fn rest_read(s: &mut Session, targets: &[Target]) {
    std::thread::sleep(Duration::from_millis(950));
    s.sample(targets);
    assert!(
        s.samples.last().unwrap().machine.rest.is_some(),
        "the rest of the machine was not read"
    );
}

#[test]
fn the_rest_of_the_machine_is_grouped_as_the_kernel_groups_it() {
    // 2 CPUs. The workload (session 7) beside, from the rest of the machine: the shell it was
    // started from (session 7 too: its autogroup), a make in session 9, a kernel worker in
    // the root autogroup, and a sleeper. Root level: autogroups 7 and 9 and the kworker;
    // the kworker wants 1 to 2% and has it, the autogroups split the rest.
    let f = FakeProc::new();
    let targets = [target(1, "job", 801)];
    let s = sweeps(&f, &targets, true, |k| {
        f.put(&hog(801, k * S / 2, k * S / 2).session(7));
        f.put(&hog(802, k * S / 2, k * S / 2).session(7).comm("bash"));
        f.put(
            &hog(803, k * 99 * S / 100, k * S / 100)
                .session(9)
                .comm("make"),
        );
        let kworker = hog(804, k * S / 100, k * S / 100).comm("kworker/0:1");
        f.put(&kworker.autogroup(None));
        let sleeper = Process::single(805, Task::ran(3 * MS, 0).state('S'));
        f.put(&sleeper.session(9).comm("sleep"));
        f.cpus(&[(k * 100, 0), (k * 100, 0)], 0);
    });
    let rest = s.samples[2].machine.rest.as_ref().unwrap();
    let comms: Vec<&str> = rest.tasks.iter().map(|t| t.comm.as_str()).collect();
    // The sleeper neither ran nor was runnable: not listed.
    assert_eq!(comms, ["bash", "make", "kworker/0:1"]);

    let fr = &s.frames[2];
    let job = row(fr, "job");
    assert_close(job.cpu_fair, 0.495, "the job's due");
    assert_eq!(job.group, "autogroup-7");
    // It shares its autogroup's due share with the shell.
    assert_eq!(job.due, share(1024.0, 2048.0, 0.99, "its group gets", 1.0));
    let m = &fr.machine;
    assert_close(m.rest_cpu_received, 1.5, "the rest's received");
    assert_close(m.rest_cpu_fair, 1.505, "the rest's due");
    assert_eq!(m.rest_verdict, Verdict::Fair);
    let groups: Vec<(&str, f64)> = m
        .rest_groups
        .iter()
        .map(|g| (g.name.as_str(), g.fair))
        .collect();
    assert_eq!(groups.len(), 3, "{groups:?}");
    // Over the window: the kworker, runnable at both reads and asleep 98% of each second,
    // wanted its 1% wait at the first read and no more at the second (its one pending burst
    // was credited once): 0.015; the autogroups share what that leaves.
    for ((name, fair), (want_name, want_fair)) in groups.iter().zip([
        ("session 9 (make)", 0.9925),
        ("session 7 (bash)", 0.49625),
        ("root (kworker/0:1)", 0.015),
    ]) {
        assert_eq!(*name, want_name);
        assert_close(*fair, want_fair, name);
    }
    golden("rest_of_the_machine", fr);
}

#[test]
fn an_idle_rest_of_the_machine_has_no_verdict() {
    let f = FakeProc::new();
    let targets = [target(1, "job", 811)];
    let s = sweeps(&f, &targets, true, |k| {
        f.put(&hog(811, k * S, 0).session(7));
        // A cron that ran one tick a second, and a sleeper.
        f.put(&hog(812, k * 10 * MS, 0).session(9).comm("cron"));
        let sleeper = Process::single(813, Task::ran(3 * MS, 0).state('S'));
        f.put(&sleeper.session(9).comm("sleep"));
        f.cpus(&[(k * 100, 0), (k, 99 * k)], 0);
    });
    let fr = &s.frames[2];
    assert_close(fr.machine.rest_cpu_received, 0.01, "the rest's received");
    assert_close(fr.machine.rest_cpu_fair, 0.01, "the rest's due");
    assert_eq!(fr.machine.rest_verdict, Verdict::None);
    assert_fair(row(fr, "job"));
    golden("rest_idle", fr);
}

#[test]
fn threads_and_children_gone_between_reads_land_in_their_group() {
    // 2 CPUs. Beside the job (a hog, session 7), a churning process in session 9: its main
    // thread runs 10 ms a second; each second a thread is born, runs 50 ms and is read once,
    // and others live and die between reads (the process's stat holds their time: 0.6 s a
    // second in all), and it reaps children that ran 0.3 s a second. /proc/stat: the job's
    // CPU and 0.9 beside it. Every CPU-second of it lands in session 9, none unseen.
    let f = FakeProc::new();
    let targets = [target(1, "job", 821)];
    let s = sweeps(&f, &targets, true, |k| {
        f.put(&hog(821, k * S, 0).session(7));
        let mut churn = Process::single(822, Task::ran(k * 10 * MS, 0).state('S'));
        churn.threads.push(Task {
            tid: 8220 + k as u32,
            ..Task::ran(50 * MS, 0).state('S')
        });
        churn.cpu_ticks = k * 60;
        churn.child_ticks = k * 30;
        f.put(&churn.session(9).comm("churn"));
        f.cpus(&[(k * 100, 0), (k * 90, k * 10)], 0);
    });
    let fr = &s.frames[2];
    let m = &fr.machine;
    assert_close(m.rest_cpu_received, 0.9, "the rest's received");
    assert_close(m.rest_unattributed, 0.0, "the rest's unseen time");
    let churn = m
        .rest_groups
        .iter()
        .find(|g| g.name == "session 9 (churn)")
        .expect("session 9 is a group of the rest");
    assert_close(churn.received, 0.9, "session 9's received");
    let total: f64 = fr.workloads.iter().map(|w| w.cpu_fair).sum::<f64>() + m.rest_cpu_fair;
    assert!(total <= 2.0 + 1e-6, "the fair shares add up to {total}");
    golden("rest_churn_between_reads", fr);
}

#[test]
fn a_busy_rest_is_read_at_every_sweep_and_an_idle_one_once_a_second() {
    for (busy, want) in [(true, true), (false, false)] {
        let f = FakeProc::new();
        let targets = [target(1, "job", 831)];
        let neighbour = |k: u64| {
            let ran = if busy { k * 900 * MS } else { k * 10 * MS };
            f.put(&hog(832, ran, 0).session(9).comm("make"));
        };
        let mut s = sweeps(&f, &targets, true, |k| {
            f.put(&hog(831, k * S, 0).session(7));
            neighbour(k);
            f.cpus(&[(k * 100, 0), (k * 91, k * 9)], 0);
        });
        std::thread::sleep(Duration::from_millis(250));
        neighbour(3);
        s.sample(&targets);
        let read = s.samples.last().unwrap().machine.rest.is_some();
        assert_eq!(
            read, want,
            "busy {busy}: read a quarter second after the last read"
        );
    }
}

// 9. SCHED_IDLE -------------------------------------------------------------------------------

#[test]
fn a_sched_idle_task_weighs_3_beside_1024_and_gets_no_verdict() {
    let f = FakeProc::new();
    let targets = [target(1, "normal", 901), target(2, "idle", 902)];
    let s = sweeps(&f, &targets, false, |k| {
        f.put(&hog(901, k * 997 * MS, k * 3 * MS).session(7));
        let idle = Task::ran(k * 3 * MS, k * 997 * MS).policy(SCHED_IDLE, 0);
        f.put(&Process::single(902, idle).session(7));
        f.cpus(&[(k * 100, 0)], 0);
    });
    let fr = &s.frames[2];
    let (normal, idle) = (row(fr, "normal"), row(fr, "idle"));
    assert_eq!((normal.weight, idle.weight), (1024.0, 3.0));
    assert_close(idle.cpu_fair, 3.0 / 1027.0, "the idle task's due");
    assert_close(normal.cpu_fair, 1024.0 / 1027.0, "the normal task's due");
    assert_eq!(idle.verdict, Verdict::None, "under 2% of a CPU");
    assert_eq!(idle.cause, Cause::None);
    assert_fair(normal);
    // 99.7% of all it wants: all it wants, plainly.
    assert_eq!(normal.due, Due::AllItWants { wants: 1.0 });
    assert_eq!(idle.due, share(3.0, 1027.0, 1.0, "its group gets", 1.0));
    golden("sched_idle", fr);
}

// 10. The verdict window ----------------------------------------------------------------------

#[test]
fn the_verdict_holds_through_noise_and_turns_within_the_window_on_a_real_change() {
    // Two hogs on one CPU, due half of it each, sampled every 500 ms (the default 5 s window
    // holds ten intervals). For 5 s they get half each; for 10 s "a" gets a quarter and three
    // quarters on alternate intervals (ratio 0.5 and 1.5); then for 6 s it is starved
    // (runnable, never running: its schedstat does not move).
    let f = FakeProc::new();
    let targets = [target(1, "a", 1001), target(2, "b", 1002)];
    let mut s = Session::new(
        f.probe_every(Duration::ZERO),
        Model::new(),
        Duration::from_millis(500),
    );
    let half = S / 2;
    let (mut a_run, mut b_run) = (0, 0);
    let (mut a_wait, mut b_wait) = (0, 0);
    let (steady, swinging, starved) = (10, 20, 12);
    for k in 0..=(steady + swinging + starved) {
        if k > 0 {
            let a = if k <= steady {
                half / 2
            } else if k <= steady + swinging {
                if k % 2 == 1 {
                    half / 4
                } else {
                    3 * half / 4
                }
            } else {
                0
            };
            a_run += a;
            b_run += half - a;
            b_wait += a;
            // A starved task's wait shows only when it runs again: not in this test.
            if a > 0 {
                a_wait += half - a;
            }
        }
        f.put(&hog(1001, a_run, a_wait).session(7));
        f.put(&hog(1002, b_run, b_wait).session(8));
        f.cpus(&[(k * 50, 0)], 0);
        s.sample(&targets);
    }
    for k in 1..=(steady + swinging + starved) as usize {
        let a = row(&s.frames[k], "a");
        assert_close(a.cpu_fair, 0.5, &format!("a's due in interval {k}"));
        assert_close(a.cpu_demand, 1.0, &format!("a's demand in interval {k}"));
    }
    for k in (steady + 1) as usize..=(steady + swinging) as usize {
        let a = row(&s.frames[k], "a");
        let per_interval = if k % 2 == 1 { 0.5 } else { 1.5 };
        assert_close(a.fairness_ratio, per_interval, &format!("interval {k}"));
        assert!(
            (0.95 - 1e-9..=1.0 + 1e-9).contains(&a.window_ratio),
            "interval {k}: {a:?}"
        );
        assert_eq!(a.verdict, Verdict::Fair, "interval {k}");
    }
    // Starved from interval 31: short after 1 s, starved after 2.5 s, nothing received over
    // the whole window after 5 s.
    let verdict = |j: u64| row(&s.frames[(steady + swinging + j) as usize], "a").verdict;
    assert_eq!(verdict(1), Verdict::Fair);
    assert_eq!((verdict(2), verdict(3)), (Verdict::Short, Verdict::Short));
    for j in 5..=starved {
        assert_eq!(verdict(j), Verdict::Starved, "{j} intervals starved");
    }
    let fr = s.frames.last().unwrap();
    let (a, b) = (row(fr, "a"), row(fr, "b"));
    assert_close(a.window_received, 0.0, "a over the last 5 s");
    assert_close(a.window_ratio, 0.0, "a's ratio");
    assert_eq!(a.verdict, Verdict::Starved);
    assert_eq!(
        a.cause,
        Cause::RunQueue {
            wait_pct: 100.0,
            cpus: "0".into(),
            behind: vec!["b".into()],
        }
    );
    assert_eq!(b.verdict, Verdict::Ahead);
    assert_eq!(
        b.cause,
        Cause::PaidBy {
            names: vec!["a".into()]
        }
    );
    for w in [a, b] {
        assert_eq!(w.due, share(1024.0, 2048.0, 1.0, "of the machine", 1.0));
    }
    golden("verdict_window", fr);
}

#[test]
fn a_host_pause_charged_to_the_fair_server_holds_the_verdicts_until_it_is_paid_back() {
    // A FIFO hog and a normal one on CPU 0, the normal one running on the fair server's 5%.
    // In the fifth second the host stops the VM for 300 ms while the normal one runs: the
    // kernel charges the pause to it, and /proc/stat's line grows 70 ticks instead of 100.
    // The fair server then runs it not at all for 6 s, paying the pause back.
    let f = FakeProc::new();
    f.write("sys/kernel/osrelease", "6.18.44\n");
    let targets = [target(1, "fifo", 501), target(2, "normal", 502)];
    let mut s = session(&f);
    let (mut normal, mut ticks) = (0_u64, 0_u64);
    let mut frames = Vec::new();
    for k in 0..=17_u64 {
        if k > 0 {
            normal += match k {
                5 => 350 * MS,
                6..=11 => 0,
                _ => 50 * MS,
            };
            ticks += if k == 5 { 70 } else { 100 };
        }
        let fifo = Task::ran(k * S - normal, normal).policy(SCHED_FIFO, 50);
        f.put(&Process::single(501, fifo).session(7));
        f.put(&hog(502, normal, k * S - normal).session(7));
        f.cpus(&[(ticks, 0)], 0);
        frames.push(s.sample(&targets).clone());
    }
    // Before the pause: fair. The pause interval shows the host's 300 ms.
    assert_fair(row(&frames[4], "normal"));
    assert!((frames[5].machine.host_stall_ms - 300.0).abs() < 1.0);
    // From the pause until the payback is over and a window has passed (5 + 6 + 5 s): no
    // verdict, never 'ahead' for the 300 ms charged, nor 'STARVED' for the payback.
    for fr in &frames[5..16] {
        let n = row(fr, "normal");
        assert_eq!(n.verdict, Verdict::None, "at {} s: {n:?}", fr.t);
        let Cause::HostStall { cpus, .. } = &n.cause else {
            panic!("at {} s: {:?}", fr.t, n.cause);
        };
        assert_eq!(cpus, "0");
        assert!(
            n.cause.text().contains("host stopped CPU 0"),
            "{}",
            n.cause.text()
        );
    }
    assert!(
        matches!(row(&frames[6], "normal").cause, Cause::HostStall { ms, .. } if ms > 250.0),
        "{:?}",
        row(&frames[6], "normal").cause
    );
    // Then fair again.
    assert_fair(row(&frames[17], "normal"));
    assert_fair(row(&frames[17], "fifo"));
}

#[test]
fn a_small_workload_is_read_whole_at_every_sweep_beside_a_big_one_in_rotation() {
    // 400 ping-pong threads, read in rotation within the schedstat budget, and a hog of two
    // threads beside them: the hog's threads are read at every sweep, or a hog a FIFO task
    // keeps off its CPU would read as wanting nothing between its turns.
    let f = FakeProc::new();
    let targets = [target(1, "big", 2000), target(2, "small", 3000)];
    let mut s = session(&f);
    // Written once, so the sweeps follow each other closely (the budget is a second's).
    let big = Process {
        threads: (2000..2400)
            .map(|tid| Task {
                tid,
                ..Task::ran(10 * MS, 0)
            })
            .collect(),
        ..Process::new(2000)
    };
    f.put(&big);
    for k in 0..6_u64 {
        let small = Process {
            threads: vec![
                Task {
                    tid: 3000,
                    state: 'S',
                    ..Task::new(0)
                },
                Task {
                    tid: 3001,
                    ..Task::ran(k * 50 * MS, k * 950 * MS)
                },
            ],
            ..Process::new(3000)
        };
        f.put(&small);
        f.cpus(&[(k * 100, 0)], 0);
        s.sample(&targets);
    }
    let read_at = |k: usize, w: usize, tid: u32| {
        s.samples[k].workloads[w].processes[0]
            .threads
            .iter()
            .find(|t| t.tid == tid)
            .unwrap()
            .read_ns
    };
    // The rotation follows the real time between sweeps (the budget is a second's): on a
    // machine too slow for one, every thread is read and the case below holds trivially.
    let skipped = (2001..2400)
        .filter(|&tid| read_at(3, 0, tid) == read_at(2, 0, tid))
        .count();
    if skipped == 0 {
        eprintln!("the big workload was read whole: the sweeps were too far apart for rotation");
    }
    for k in 1..6 {
        assert_ne!(read_at(k, 1, 3001), read_at(k - 1, 1, 3001), "sweep {k}");
        let hog = &s.samples[k].workloads[1].processes[0].threads[1];
        assert_eq!(hog.state, Some('R'), "sweep {k}: {hog:?}");
    }
}

#[test]
fn a_child_the_rest_saw_alive_is_not_counted_again_when_its_parent_reaps_it() {
    // A make (session 9) and its compiler (pid 806), read alive at the first rest read with
    // 50 ticks (500 ms) of CPU, gone by the second, when make's cutime shows all 110 ticks it
    // used: only the 60 ticks since the compiler was last read are new. And schedlab's own
    // process (this one, here) reaps its workloads, which are counted as workloads: nothing.
    let f = FakeProc::new();
    let targets = [target(1, "job", 801)];
    let me = std::process::id();
    let s = sweeps(&f, &targets, true, |k| {
        f.put(&hog(801, k * S / 2, k * S / 2).session(7));
        let make = Process {
            child_ticks: if k == 2 { 110 } else { 0 },
            ..hog(803, k * S / 10, 0).session(9).comm("make")
        };
        f.put(&make);
        if k < 2 {
            let cc1 = Process {
                ppid: 803,
                cpu_ticks: 50 * k,
                ..hog(806, k * S / 2, 0).session(9).comm("cc1")
            };
            f.put(&cc1);
        } else {
            f.remove(806);
        }
        let ours = Process {
            child_ticks: 1000 * k,
            ..hog(me, k * S / 100, 0).session(7).comm("schedlab")
        };
        f.put(&ours);
        f.cpus(&[(k * 100, 0), (k * 100, 0)], 0);
    });
    let rest = s.samples[2].machine.rest.as_ref().unwrap();
    let proc_ = |comm: &str| rest.procs.iter().find(|p| p.comm == comm);
    assert_eq!(
        proc_("make").map(|p| p.reaped_ns),
        Some(600 * MS),
        "{rest:?}"
    );
    assert_eq!(proc_("schedlab").map_or(0, |p| p.reaped_ns), 0, "{rest:?}");
    assert!(rest.tasks.iter().all(|t| t.comm != "cc1"));
}
