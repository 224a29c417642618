//! The probe and the model on fake /proc trees: golden Frames for the 2002 contest thread's
//! fork_load, reaped children counted once, and the faults (vanished tasks, unreadable files, a
//! reused pid, a dead workload) reported instead of panicking.

mod fakeproc;

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use fakeproc::{pin, target, FakeProc, Proc, Thread, S};
use schedlab::model::{Accounting, Frame, Model, WorkloadState};
use schedlab::probe::{Health, Probe, ProbeConfig, Sample, Target};

fn hogs(f: &FakeProc, k: u64, autogroup: u64) {
    // Four hogs in one process: each ran 0.4 s and waited 0.6 s of every second.
    let threads: Vec<Thread> = (0..4)
        .map(|i| (100 + i, k * 4 * S / 10, k * 6 * S / 10, k * 100, k, k * 50))
        .collect();
    f.process(&Proc {
        cpu_ticks: k * 160,
        ..Proc::leader(100, 1000, autogroup, &threads)
    });
}

fn forker(f: &FakeProc, k: u64, session: u32, autogroup: u64) {
    // A fork loop: the parent ran 50 ms and waited 50 ms per second; its reaped children
    // ran 350 ms per second in all (35 ticks).
    f.process(&Proc {
        session,
        cpu_ticks: k * 5,
        child_ticks: k * 35,
        ..Proc::leader(
            200,
            2000,
            autogroup,
            &[(200, k * S / 20, k * S / 20, k * 1000, k * 1000, k * 10)],
        )
    });
}

/// The Frame of fork_load's second second, against the jobs: in their session, or its own.
fn fork_load_frame(own_session: bool) -> Frame {
    let f = FakeProc::new();
    let (session, group) = if own_session { (200, 8) } else { (100, 7) };
    let targets = [target(1, "ref-job", 100), target(2, "fork_load", 200)];
    let mut probe = f.probe();
    let mut samples = Vec::new();
    for k in 0..3 {
        hogs(&f, k, 7);
        forker(&f, k, session, group);
        f.machine(k * 200, k * 10_000);
        let mut s = pin(probe.sample(&targets), k);
        // fork_load says its forker and child are one closed loop (its counter region).
        s.workloads[1].closed_loops = Some(1);
        samples.push(s);
    }
    let mut model = Model::new();
    model.step(&samples[0], &samples[1]);
    let mut f = model.step(&samples[1], &samples[2]);
    // How old the rest's last read is follows the real time the sweeps took, not the tree's.
    f.machine.rest_age = 0.0;
    f
}

/// A fake /proc with the four hogs of `hogs` (pid 100, autogroup 7), the ref-job workload
/// that is them, and a probe made before they were written.
fn ref_job() -> (FakeProc, [Target; 1], Probe) {
    let f = FakeProc::new();
    let targets = [target(1, "ref-job", 100)];
    let probe = f.probe();
    hogs(&f, 1, 7);
    (f, targets, probe)
}

/// Makes `file` unreadable. Tests run as root, which permissions do not stop: a directory where
/// a file should be gives the same kind of error (not ENOENT/ESRCH) as EACCES under hidepid
/// would.
fn unreadable(f: &FakeProc, file: &str) {
    let path = f.root().join(file);
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
}

/// The sample's first workload's health in a word ("ok", "partial", "gone") and its reason.
fn health(s: &Sample) -> (&'static str, &str) {
    match &s.workloads[0].health {
        Health::Ok => ("ok", ""),
        Health::Partial(why) => ("partial", why),
        Health::Gone(why) => ("gone", why),
    }
}

/// The Frame as JSON matches its snapshot `name`.
fn snapshot(name: &str, f: &Frame) {
    insta::assert_snapshot!(name, serde_json::to_string_pretty(f).unwrap());
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn fork_load_in_one_session_is_due_two_fifths_of_a_cpu() {
    let f = &fork_load_frame(false);
    let (jobs, loop_) = (&f.workloads[0], &f.workloads[1]);
    assert!(close(jobs.cpu_received, 1.6), "{jobs:?}");
    assert!(close(jobs.cpu_fair, 1.6), "{jobs:?}");
    assert!(close(loop_.cpu_received, 0.4), "{loop_:?}");
    // The loop and its reaped children are one chain: one task of 5, 2 CPUs: 0.4.
    assert!(close(loop_.cpu_fair, 0.4), "{loop_:?}");
    assert!(close(loop_.fairness_ratio, 1.0));
    assert_eq!(loop_.group, "autogroup-7");
    assert_eq!(loop_.accounting, Accounting::Proc);
    assert!(close(f.jain_index, 1.0));
    snapshot("fork_load_one_session", f);
}

#[test]
fn fork_load_in_its_own_session_is_due_its_whole_demand() {
    let f = &fork_load_frame(true);
    let (jobs, loop_) = (&f.workloads[0], &f.workloads[1]);
    // Two autogroups of equal weight share 2 CPUs. The loop (a closed loop: one of its tasks
    // is runnable whenever none runs) wants what it ran, 0.4, and what it waited while the
    // hogs ran: the parent's 0.05 and its children's likely 0.35 (its wait per ns run), 0.8.
    assert!(close(loop_.cpu_demand, 0.8), "{loop_:?}");
    assert!(close(loop_.cpu_fair, 0.8), "{loop_:?}");
    assert!(close(jobs.cpu_fair, 1.2), "{jobs:?}");
    assert_eq!(loop_.group, "autogroup-8");
    assert_eq!(jobs.group, "autogroup-7");
    snapshot("fork_load_own_session", f);
}

#[test]
fn rates_wait_and_machine_counters() {
    let f = &fork_load_frame(false);
    let jobs = &f.workloads[0];
    assert_eq!(jobs.tasks, 4);
    // 4 threads × 0.6 s waiting per second.
    assert!(close(jobs.runq_wait_pct, 240.0));
    // 2.4 s of wait over 400 slices: 6 ms each.
    assert!(close(jobs.wait_per_slice_us, 6000.0));
    assert!(close(jobs.voluntary_cs_per_sec, 4.0));
    assert!(close(jobs.involuntary_cs_per_sec, 200.0));
    assert!(close(f.machine.ctxt_per_sec, 10_000.0));
    assert_eq!(f.machine.procs_running, 5);
    assert_eq!(f.machine.psi_some_avg10, Some(12.5));
    assert!(f.machine.autogroup);
    assert!(close(f.machine.rest_cpu_received, 0.0));
    assert!(close(f.interval, 1.0));
    assert!(close(f.status_interval, 0.0));
}

#[test]
fn a_child_reaped_by_the_workload_is_counted_once() {
    let f = FakeProc::new();
    let targets = [target(1, "forks", 200)];
    let mut probe = f.probe();
    let parent = |run: u64, child_ticks: u64, nthreads_child: bool| {
        f.process(&Proc {
            child_ticks,
            ..Proc::leader(200, 2000, 8, &[(200, run, 0, 1, 0, 0)])
        });
        if nthreads_child {
            f.process(&Proc {
                ppid: 200,
                pgid: 200,
                session: 200,
                ..Proc::leader(201, 2050, 8, &[(201, 3_000_000, 0, 1, 0, 0)])
            });
        }
    };
    parent(0, 0, false);
    let s0 = pin(probe.sample(&targets), 0);
    parent(1_000_000, 0, true);
    let s1 = pin(probe.sample(&targets), 1);
    // The child (3 ms when last seen) has ended and been reaped: 1 tick (10 ms) in cutime.
    f.remove(201);
    parent(2_000_000, 1, false);
    let s2 = pin(probe.sample(&targets), 2);
    assert_eq!(s1.workloads[0].processes.len(), 2);
    assert_eq!(s2.workloads[0].processes.len(), 1);
    let mut model = Model::new();
    let a = model.step(&s0, &s1);
    let b = model.step(&s1, &s2);
    assert!(
        close(a.workloads[0].cpu_received, 0.004),
        "{:?}",
        a.workloads[0]
    );
    // 1 ms of the parent + the 7 ms of the child not yet counted.
    assert!(
        close(b.workloads[0].cpu_received, 0.008),
        "{:?}",
        b.workloads[0]
    );
}

#[test]
fn a_thread_that_exits_is_dropped_without_fuss() {
    let (f, targets, mut probe) = ref_job();
    let s0 = probe.sample(&targets);
    assert_eq!(s0.workloads[0].processes[0].threads.len(), 4);
    // One thread exits: its directory goes and the thread count drops.
    let threads: Vec<Thread> = (0..3).map(|i| (100 + i, 2 * S, 0, 1, 0, 0)).collect();
    f.process(&Proc::leader(100, 1000, 7, &threads));
    let s1 = probe.sample(&targets);
    assert_eq!(s1.workloads[0].processes[0].threads.len(), 3);
    assert_eq!(s1.workloads[0].health, Health::Ok);
}

#[test]
fn an_unreadable_file_makes_the_workload_partial_with_the_reason() {
    let (f, targets, mut probe) = ref_job();
    unreadable(&f, "100/task/101/schedstat");
    let s = probe.sample(&targets);
    let (state, why) = health(&s);
    assert_eq!(state, "partial", "{why}");
    assert!(
        why.contains("100/task/101/schedstat: Is a directory"),
        "{why}"
    );
    assert_eq!(s.workloads[0].processes[0].threads.len(), 3);
    let frame = Model::new().step(&pin(s.clone(), 0), &pin(s, 1));
    assert!(matches!(
        frame.workloads[0].state,
        WorkloadState::Partial(_)
    ));
}

#[test]
fn an_unreadable_leader_is_gone_with_the_reason() {
    let f = FakeProc::new();
    hogs(&f, 1, 7);
    unreadable(&f, "100/stat");
    let s = f.probe().sample(&[target(1, "ref-job", 100)]);
    let (state, why) = health(&s);
    assert_eq!(state, "gone", "{why}");
    assert!(why.contains("100/stat"), "{why}");
}

#[test]
fn a_dead_workload_is_gone_and_a_reused_pid_is_not_mistaken_for_it() {
    let (f, targets, mut probe) = ref_job();
    assert_eq!(probe.sample(&targets).workloads[0].health, Health::Ok);
    // The workload dies; pid 100 is reused by an unrelated process in another group.
    f.remove(100);
    f.process(&Proc {
        pgid: 555,
        session: 555,
        ..Proc::leader(100, 9999, 9, &[(100, 1, 1, 1, 0, 0)])
    });
    let s = probe.sample(&targets);
    let (state, why) = health(&s);
    assert_eq!(state, "gone", "{why}");
    assert!(why.contains("reused"), "{why}");
    assert!(s.workloads[0].processes.is_empty());
}

#[test]
fn a_process_leaving_the_group_is_dropped() {
    let (f, targets, mut probe) = ref_job();
    forker(&f, 1, 100, 7);
    // The forker joins group 100 first, then setsid()s away into its own.
    let mut text = fs::read_to_string(f.root().join("200/stat")).unwrap();
    text = text.replacen(" 200 100 0 -1", " 100 100 0 -1", 1);
    f.write("200/stat", &text);
    let s = probe.sample(&targets);
    assert_eq!(s.workloads[0].processes.len(), 2, "{:?}", s.workloads[0]);
    forker(&f, 2, 200, 8);
    let s = probe.sample(&targets);
    assert_eq!(s.workloads[0].processes.len(), 1);
}

#[test]
fn cgroup_accounting_v1_split_hierarchies() {
    let f = FakeProc::new();
    let sys = f.root().join("sys");
    let acct = sys.join("fs/cgroup/cpuacct/schedlab/w1");
    let cpu = sys.join("fs/cgroup/cpu/schedlab/w1");
    fs::create_dir_all(&acct).unwrap();
    fs::create_dir_all(&cpu).unwrap();
    fs::write(cpu.join("cpu.shares"), "2048\n").unwrap();
    let mut probe = Probe::new(ProbeConfig {
        proc_root: f.root().to_path_buf(),
        sys_root: sys.clone(),
        status_every: Duration::ZERO,
    })
    .unwrap();
    let mut t = target(1, "ref-job", 100);
    t.cgroup = Some(cpu.clone());
    let mut samples = Vec::new();
    for k in 0..2 {
        hogs(&f, k, 7);
        f.machine(k * 200, 0);
        fs::write(
            acct.join("cpuacct.usage"),
            format!("{}\n", k * 1_700_000_000),
        )
        .unwrap();
        samples.push(pin(probe.sample(std::slice::from_ref(&t)), k));
    }
    let cg = samples[1].workloads[0].cgroup.as_ref().unwrap();
    assert_eq!((cg.version, cg.weight), (1, Some(2048.0)));
    let frame = Model::new().step(&samples[0], &samples[1]);
    let w = &frame.workloads[0];
    assert_eq!(w.accounting, Accounting::Cgroup);
    assert!(close(w.cpu_received, 1.7), "{w:?}");
    assert!(w.group.starts_with("cgroup "), "{}", w.group);
}

#[test]
fn cgroup_v2_usage_and_weight() {
    let f = FakeProc::new();
    let cg: PathBuf = f.root().join("sys/fs/cgroup/unified/w2");
    fs::create_dir_all(&cg).unwrap();
    fs::write(cg.join("cpu.stat"), "usage_usec 2500\nuser_usec 2000\n").unwrap();
    fs::write(cg.join("cpu.weight"), "200\n").unwrap();
    hogs(&f, 1, 7);
    let mut t = target(1, "ref-job", 100);
    t.cgroup = Some(cg);
    let s = f.probe().sample(&[t]);
    let c = s.workloads[0].cgroup.as_ref().unwrap();
    assert_eq!(
        (c.version, c.usage_ns, c.weight),
        (2, 2_500_000, Some(2048.0))
    );
}

#[test]
fn samples_round_trip_through_json() {
    let f = FakeProc::new();
    hogs(&f, 1, 7);
    let s = f.probe().sample(&[target(1, "ref-job", 100)]);
    let text = serde_json::to_string(&s).unwrap();
    let back: Sample = serde_json::from_str(&text).unwrap();
    assert_eq!(back, s);
}

#[test]
fn an_unreadable_status_stays_reported_while_it_lasts() {
    let f = FakeProc::new();
    let targets = [target(1, "ref-job", 100)];
    hogs(&f, 1, 7);
    unreadable(&f, "100/task/102/status");
    let mut probe = f.probe();
    for _ in 0..3 {
        let s = probe.sample(&targets);
        let (state, why) = health(&s);
        assert_eq!(state, "partial", "{why}");
        assert!(why.contains("102/status"), "{why}");
        // Its CPU is still read; only its switch counts are missing.
        assert_eq!(s.workloads[0].processes[0].threads.len(), 4);
    }
}
