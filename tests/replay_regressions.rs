//! Model regressions held on recorded Samples: a real run's raw counters, kept in
//! tests/recordings/, replayed through today's model, whose verdicts must stay true.
//!
//! `sysv-pingpong-per-cpu.jsonl`: `schedlab run sysv-pingpong-per-cpu --duration 8 --record`
//! on a quiet 2-CPU machine (kernel 6.18, 2026-12-06). Before 2026-12-05 this preset read the
//! ping-pong 19 times `ahead` and the rest of the machine `STARVED`, its demand climbing to 4
//! and 5 CPUs: the kernel's idle threads' wakeup delays were counted as CPU they wanted.

use std::path::Path;

use schedlab::model::Verdict;
use schedlab::record::recording::Recording;

fn recording(name: &str) -> Recording {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/recordings")
        .join(name);
    Recording::read(&path).expect("the recording reads")
}

#[test]
fn the_sysv_ping_pong_alone_is_fair_and_starves_nobody() {
    let frames = recording("sysv-pingpong-per-cpu.jsonl")
        .replayed()
        .remove(0);
    // Once a verdict window has passed.
    let settled: Vec<_> = frames
        .iter()
        .filter(|f| f.t >= f.machine.verdict_window + 0.5)
        .collect();
    assert!(settled.len() >= 4, "{} settled Frames", settled.len());
    for f in &settled {
        let m = &f.machine;
        assert!(
            !matches!(m.rest_verdict, Verdict::Starved | Verdict::Short),
            "the rest read {:?} at {:.1} s (got {:.3}, due {:.3})",
            m.rest_verdict,
            f.t,
            m.rest_window_received,
            m.rest_window_fair
        );
        // What the rest wanted is near what it took: the kernel's threads ran a few ms a
        // second and slept; the old model had them want whole CPUs.
        assert!(
            m.rest_cpu_demand <= m.rest_cpu_received + 0.05,
            "the rest wanted {:.3} CPUs at {:.1} s for {:.3} received",
            m.rest_cpu_demand,
            f.t,
            m.rest_cpu_received
        );
        for w in &f.workloads {
            assert_eq!(w.verdict, Verdict::Fair, "{} at {:.1} s", w.name, f.t);
            assert!(
                (0.9..=1.1).contains(&w.window_ratio),
                "{}: ratio {:.2} at {:.1} s",
                w.name,
                w.window_ratio,
                f.t
            );
        }
    }
}
