//! On the real kernel: a workload big enough to be read in rotation is held to its process's
//! CPU clock. Alone in its test binary, since the workload is this process (its clock counts
//! every thread of it, and another test's would count too).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use schedlab::model::Model;
use schedlab::probe::{Probe, ProbeConfig, Sample, Target};

/// 300 threads spin, then all stop at once. At 10 Hz the probe reads a third of them a sweep
/// (the budget of schedstat reads a second), so two thirds of them hold their spinning rates
/// in every sweep: without the clock, the model kept those rates until each thread's turn
/// (their deltas then averaged over their whole rotation): the workload read 1.2 to 1.5 CPUs
/// in the first interval after it stopped, and still 0.24 to 0.35 in the sixth, measured.
#[test]
fn a_workload_read_in_rotation_reads_its_clock_when_its_threads_stop() {
    let n = 300;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(Barrier::new(n + 1));
    let workers: Vec<_> = (0..n)
        .map(|_| {
            let (stop, done) = (stop.clone(), done.clone());
            std::thread::spawn(move || {
                // SCHED_IDLE, so that 300 spinners leave the probe's thread, which sleeps
                // between sweeps, on time (the observer has its own session for that).
                let idle = libc::sched_param { sched_priority: 0 };
                // SAFETY: `idle` outlives the call, which only reads it; 0 is this thread.
                unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle) };
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                done.wait();
            })
        })
        .collect();
    let mut probe = Probe::new(ProbeConfig::default()).unwrap();
    let targets = [Target {
        id: 1,
        name: "spinners".into(),
        pgid: 0,
        leader: std::process::id(),
        cgroup: None,
        counters: None,
        ops_unit: "unit".into(),
    }];
    // The probe's thread sleeps between sweeps on a 10 Hz grid, and skips the points it
    // missed, as the observer does.
    let tick = Duration::from_millis(100);
    let mut next = Instant::now();
    let mut sweep = || -> Sample {
        let now = Instant::now();
        while next < now {
            next += tick;
        }
        std::thread::sleep(next - now);
        probe.sample(&targets)
    };
    let spinning: Vec<Sample> = (0..12).map(|_| sweep()).collect();
    stop.store(true, Ordering::Relaxed);
    let after: Vec<Sample> = (0..6).map(|_| sweep()).collect();
    done.wait();
    for w in workers {
        w.join().unwrap();
    }

    let clocked = spinning[2..]
        .iter()
        .filter(|s| s.workloads[0].processes[0].cpu_read_ns > 0)
        .count();
    // A sweep that came late (a gap of 300 ms or more) had the budget to read every thread,
    // and then needs no clock: most sweeps, not all, are in rotation.
    assert!(
        clocked >= 6,
        "the clock read at the sweeps in rotation: {clocked} of 10"
    );
    let cpus = spinning[0].machine.cpus as f64;
    let mut model = Model::new();
    let all: Vec<&Sample> = spinning.iter().chain(&after).collect();
    let received: Vec<f64> = all
        .windows(2)
        .map(|pair| model.step(pair[0], pair[1]).workloads[0].cpu_received)
        .collect();
    // Frames 2 to 10 are wholly while they spin (the first two take them in); 12 on, wholly
    // after they stopped (11 spans the stop).
    let (busy, idle) = received.split_at(spinning.len());
    assert!(
        busy[2..spinning.len() - 1]
            .iter()
            .all(|&r| r > 0.5 && r <= cpus * 1.1),
        "while spinning, at most the machine: {busy:?}"
    );
    assert!(
        idle.iter().all(|&r| r < 0.25),
        "stopped: the clock's near nothing, not the held rates: {idle:?}"
    );
}
