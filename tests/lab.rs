//! The Lab engine on the real kernel: starts, samples, stops, reaps, cleans up.

mod common;

use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use schedlab::engine::lab::Lab;
use schedlab::model::WorkloadState;
use schedlab::scenario::WorkloadDecl;
use schedlab::sys::kernel::proc::alive;
use schedlab::workload::registry::WorkloadKind;

fn sh(name: &str, script: &str) -> WorkloadDecl {
    WorkloadDecl {
        name: name.into(),
        kind: WorkloadKind::Command {
            argv: vec!["sh".into(), "-c".into(), script.into()],
        },
        knobs: Default::default(),
        start_delay: 0.0,
        duration: None,
    }
}

#[test]
fn lab_runs_samples_and_cleans_up() {
    let mut lab = Lab::new(Duration::from_millis(200)).unwrap();
    let hog = lab.add(sh("hog", "while :; do :; done")).unwrap();
    let forker = lab.add(sh("forks", "while :; do /bin/true; done")).unwrap();
    let mut late = sh("late", "sleep 30");
    late.start_delay = 0.3;
    late.duration = Some(0.3);
    let late = lab.add(late).unwrap();
    let done = lab.add(sh("done", "exit 3")).unwrap();

    let mut frames = Vec::new();
    for _ in 0..8 {
        std::thread::sleep(lab.interval());
        frames.push(lab.tick());
    }
    let last = frames.last().unwrap();
    for f in &frames {
        eprintln!("{}", serde_json::to_string(f).unwrap());
    }
    let row = |id: u32| last.workloads.iter().find(|w| w.id == id).unwrap();
    assert_eq!(row(hog).state, WorkloadState::Running);
    assert!(row(hog).cpu_received > 0.0, "{:?}", row(hog));
    assert!(row(forker).cpu_received > 0.0, "{:?}", row(forker));
    assert_eq!(row(done).state, WorkloadState::Done(3));
    assert_eq!(row(late).state, WorkloadState::Stopped);
    assert!(lab.last_sample().is_some());

    let pids: Vec<u32> = lab.workloads().iter().filter_map(|w| w.pid).collect();
    drop(lab);
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived the Lab");
    }
}

/// A child killed when dropped, so a failing assertion leaves no hog behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn attach_watches_an_existing_process_until_it_exits() {
    // Spins until killed: a loop of fixed length (200,000 counts, about 0.2 s of CPU) could end
    // before the second sample on a quiet machine, and a CI run read it gone there.
    let mut child = Killed(
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    let mut lab = Lab::new(Duration::from_millis(100)).unwrap();
    let id = lab.attach("counting", pid).unwrap();
    lab.tick();
    std::thread::sleep(Duration::from_millis(150));
    let f = lab.tick();
    let w = f.workloads.iter().find(|w| w.id == id).unwrap();
    assert_eq!(w.tasks, 1, "{w:?}");
    assert!(w.cpu_received > 0.0, "{w:?}");
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let f = lab.tick();
    let w = f.workloads.iter().find(|w| w.id == id).unwrap();
    let WorkloadState::Ended(why) = &w.state else {
        panic!("expected ended: {w:?}");
    };
    assert!(why.contains(&pid.to_string()), "{why}");
    assert!(lab.attach("nobody", 0x7fff_fff0).is_err());
}

#[test]
fn restart_remove_and_a_workload_killed_from_outside() {
    let mut lab = Lab::new(Duration::from_millis(100)).unwrap();
    let a = lab.add(sh("a", "sleep 30")).unwrap();
    let b = lab.add(sh("b", "sleep 30")).unwrap();
    lab.tick();
    let first = lab.running(a).unwrap().pid;
    lab.restart(a).unwrap();
    let second = lab.running(a).unwrap().pid;
    assert_ne!(first, second);
    assert!(!alive(first));

    // Killed by someone else: reaped, and shown as done with 128 + the signal.
    let pid_b = lab.running(b).unwrap().pid;
    let _ = kill(Pid::from_raw(pid_b as i32), Signal::SIGKILL);
    std::thread::sleep(Duration::from_millis(100));
    let f = lab.tick();
    let wb = f.workloads.iter().find(|w| w.id == b).unwrap();
    assert_eq!(wb.state, WorkloadState::Done(128 + libc::SIGKILL));

    lab.remove(a);
    assert!(!alive(second));
    assert!(lab.workloads().iter().all(|w| w.id != a));
    lab.stop(b);
    assert_eq!(
        lab.workloads().iter().find(|w| w.id == b).unwrap().state,
        WorkloadState::Done(128 + libc::SIGKILL)
    );
}

#[test]
fn bad_declarations_are_refused_with_a_reason() {
    let mut lab = Lab::new(Duration::from_millis(100)).unwrap();
    let mut bad = sh("neg", "true");
    bad.start_delay = -1.0;
    assert!(lab.add(bad).is_err());
    let missing = WorkloadDecl {
        kind: WorkloadKind::Command {
            argv: vec!["/nonexistent/schedlab-test-binary".into()],
        },
        ..sh("missing", "")
    };
    let err = lab.add(missing).unwrap_err();
    assert!(format!("{err:#}").contains("missing"), "{err:#}");
    // Intervals are clamped to 100 ms..10 s.
    lab.set_interval(Duration::from_millis(1));
    assert_eq!(lab.interval(), Duration::from_millis(100));
    lab.set_interval(Duration::from_secs(60));
    assert_eq!(lab.interval(), Duration::from_secs(10));
}

#[test]
fn threads_exiting_while_sampled_are_dropped_without_panic() {
    use schedlab::probe::{Health, Probe, ProbeConfig, Target};
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let hs: Vec<_> = (0..8).map(|_| std::thread::spawn(|| ())).collect();
                hs.into_iter().for_each(|h| h.join().unwrap());
            }
        })
    };
    let target = Target {
        id: 1,
        name: "self".into(),
        pgid: 0,
        leader: std::process::id(),
        cgroup: None,
        counters: None,
        ops_unit: String::new(),
        attach: None,
        paced: false,
    };
    let mut probe = Probe::new(ProbeConfig {
        status_every: Duration::ZERO,
        ..ProbeConfig::default()
    })
    .unwrap();
    let mut model = schedlab::model::Model::new();
    let mut prev = probe.sample(std::slice::from_ref(&target));
    for _ in 0..300 {
        let cur = probe.sample(std::slice::from_ref(&target));
        let _ = model.step(&prev, &cur);
        assert_eq!(cur.workloads[0].health, Health::Ok);
        prev = cur;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
}

#[test]
fn the_default_scenario_runs_and_counts_its_operations() {
    let scenario = schedlab::scenario::Scenario::builtin_default();
    let mut lab = Lab::new(Duration::from_millis(scenario.interval_ms)).unwrap();
    let ids: Vec<u32> = scenario
        .workloads
        .iter()
        .map(|d| lab.add(common::real_binary(d)).unwrap())
        .collect();
    lab.tick();
    // Bounded: wait until both have shown CPU and the fork loop has counted forks.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen_cpu = [false; 2];
    let mut forks = 0.0;
    while std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        let f = lab.tick();
        for (k, id) in ids.iter().enumerate() {
            let w = f.workloads.iter().find(|w| w.id == *id).unwrap();
            assert!(
                matches!(w.state, WorkloadState::Running | WorkloadState::Starting),
                "{w:?}"
            );
            seen_cpu[k] |= w.cpu_received > 0.0;
            if w.name == "fork_load" {
                forks += w.ops_per_sec * f.interval;
                assert!(w.tasks >= 1);
            }
        }
        if seen_cpu == [true, true] && forks > 0.0 {
            break;
        }
    }
    assert_eq!(seen_cpu, [true, true]);
    assert!(forks > 0.0, "fork_load's counter never moved");
}

/// The process `a_lab_stopped_by_a_signal_takes_its_workloads_and_cgroups_with_it` runs: a Lab
/// with a hog in a cgroup of its own, ticking until it is stopped. Not a test by itself.
#[test]
#[ignore = "the child of a_lab_stopped_by_a_signal_takes_its_workloads_and_cgroups_with_it"]
fn lab_ticking_until_stopped() {
    if std::env::var_os("SCHEDLAB_LAB_CHILD").is_none() {
        return;
    }
    let mut lab = Lab::new(Duration::from_millis(100)).unwrap();
    let mut hog = sh("hog", "while :; do :; done");
    hog.knobs.placement = schedlab::knobs::Placement::Cgroup { weight: 100 };
    lab.add(hog).unwrap();
    loop {
        std::thread::sleep(lab.interval());
        lab.tick();
        if let Some(pid) = lab.workloads().iter().find_map(|w| w.pid) {
            use std::io::Write;
            println!("hog {pid}");
            std::io::stdout().flush().unwrap();
        }
    }
}

/// The cgroups process `pid`'s Lab made (`schedlab-PID-...`), in any of the hierarchies.
fn cgroups_of(pid: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("schedlab-{pid}-");
    common::schedlab_cgroups()
        .into_iter()
        .filter(|g| {
            g.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .collect()
}

/// A process that drives a Lab in-process (this test binary) and is stopped by SIGTERM, as
/// a test run's time limit stops it, kills its workloads and removes their cgroups: a test
/// stopped midway once left `schedlab-PID-*` groups that failed a later test's check.
#[test]
fn a_lab_stopped_by_a_signal_takes_its_workloads_and_cgroups_with_it() {
    use std::io::BufRead;
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: cgroups need root");
        return;
    }
    let mut child = Killed(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "lab_ticking_until_stopped",
                "--ignored",
                "--nocapture",
            ])
            .env("SCHEDLAB_LAB_CHILD", "1")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child_pid = child.0.id();
    let mut lines = std::io::BufReader::new(child.0.stdout.take().unwrap()).lines();
    let hog: u32 = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("hog ")?.parse().ok())
        .expect("the child's hog");
    let groups = cgroups_of(child_pid);
    assert!(!groups.is_empty(), "the hog's cgroup");
    kill(Pid::from_raw(child_pid as i32), Signal::SIGTERM).unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "ended by its signal thread");
    assert!(!alive(hog), "the hog {hog} outlived its Lab");
    let left: Vec<_> = groups.iter().filter(|g| g.exists()).collect();
    assert!(left.is_empty(), "cgroups left: {left:?}");
}
