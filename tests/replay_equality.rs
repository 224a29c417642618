//! A live headless run and the replay of its recording give the same Frames, field by field,
//! the first one included: every Frame comes out of the model, from Samples that carry all
//! it needs (each workload's life, the session's start, the rest of the machine, the groups,
//! the latency histograms). The run's latency results, merged from the histograms, are the
//! same live and replayed too.

mod common;

use std::time::Duration;

use schedlab::engine::lab::Lab;
use schedlab::record::latency::{results_of, RepeatLatency};
use schedlab::record::recording::{Header, Recording, RecordingWriter};
use schedlab::scenario::Scenario;

#[test]
fn replayed_frames_equal_the_live_ones() {
    let cgroup = nix::unistd::geteuid().is_root();
    if !cgroup {
        eprintln!("\n*** replay_equality: not root, so no cgroup-placed workload in the mix ***\n");
    }
    let toml = format!(
        "name = \"equality\"\nverdict_window = 2\n\
         [[workload]]\nname = \"hogs\"\nkind = \"cpu-hog\"\nthreads = 2\nnice = 3\n\
         [[workload]]\nname = \"forks\"\nkind = \"fork-load\"\nforkers = 1\nplacement = \"own-session\"\n\
         [[workload]]\nname = \"late\"\nkind = \"cpu-hog\"\nthreads = 1\nstart_delay = 1.0\nduration = 1.0\n\
         [[workload]]\nname = \"pp\"\nkind = \"pingpong\"\nipc = \"pipe\"\npairs = 1\npin = \"none\"\n{}",
        if cgroup {
            "[[workload]]\nname = \"boxed\"\nkind = \"cpu-hog\"\nthreads = 1\nplacement = \"cgroup\"\ncgroup_weight = 50\ncpu_quota = 30\n"
        } else {
            ""
        }
    );
    let scenario = Scenario::from_toml(&toml, "equality").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("equality.jsonl");
    let mut rec = RecordingWriter::create(&path).unwrap();

    let mut lab = Lab::new(Duration::from_millis(200)).unwrap();
    lab.set_verdict_window(scenario.verdict_window.unwrap());
    for w in &scenario.workloads {
        lab.add(common::real_binary(w)).unwrap();
    }
    let mut live = Vec::new();
    let mut live_latency = RepeatLatency::default();
    for k in 0..20 {
        let f = lab.tick();
        if k == 0 {
            rec.header(&Header::new(&scenario, f.machine.cpus, f.machine.autogroup))
                .unwrap();
            rec.start_repeat(1).unwrap();
        }
        rec.sample(lab.last_sample().unwrap()).unwrap();
        live_latency.add(lab.last_sample().unwrap());
        live.push(f);
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(lab);
    rec.finish().unwrap();

    let recording = Recording::read(&path).unwrap();
    let replayed = recording.replayed().remove(0);
    assert_eq!(replayed.len(), live.len());
    for (k, (a, b)) in live.iter().zip(&replayed).enumerate() {
        assert_eq!(
            a, b,
            "Frame {k} differs between the live run and its replay"
        );
    }
    // The mix had something to say: starting, running, done and stopped rows all came out of
    // the model, and the late workload's stop shows.
    let states: Vec<String> = live
        .iter()
        .flat_map(|f| f.workloads.iter().map(|w| format!("{:?}", w.state)))
        .collect();
    assert!(states.iter().any(|s| s == "Starting"), "{states:?}");
    assert!(states.iter().any(|s| s == "Running"), "{states:?}");
    assert!(states.iter().any(|s| s == "Stopped"));

    // The ping-pong's round trips were timed, interval by interval, live as replayed.
    let timed: Vec<_> = live
        .iter()
        .flat_map(|f| f.workloads.iter().filter(|w| w.name == "pp"))
        .filter_map(|w| w.latency.as_ref().filter(|l| l.samples > 0))
        .collect();
    assert!(timed.len() >= 10, "round trips timed: {timed:?}");
    assert!(timed.iter().all(|l| l.unit == "round trip" && l.available));
    let from_file = RepeatLatency::of(&recording.repeats[0]);
    let (a, b) = (
        results_of("pp", &[live_latency]),
        results_of("pp", &[from_file]),
    );
    assert_eq!(
        a, b,
        "the run's latency results, live and from the recording"
    );
    assert!(a[0].pooled.samples > 0 && a[0].pooled.p99_us > 0.0, "{a:?}");
}
