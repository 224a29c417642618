//! The Lab engine on the real kernel: starts, samples, stops, reaps, cleans up.

use std::time::Duration;

use schedlab::lab::Lab;
use schedlab::model::WorkloadState;
use schedlab::scenario::WorkloadDecl;
use schedlab::workload::kind::WorkloadKind;

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

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(false)
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
    assert!(row(hog).cpu_received > 0.3, "{:?}", row(hog));
    assert!(row(forker).cpu_received > 0.1, "{:?}", row(forker));
    assert_eq!(row(done).state, WorkloadState::Done(3));
    assert_eq!(row(late).state, WorkloadState::Stopped);
    assert!(lab.last_sample().is_some());

    let pids: Vec<u32> = lab.workloads().iter().filter_map(|w| w.pid).collect();
    drop(lab);
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived the Lab");
    }
}
