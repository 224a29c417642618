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
/// in the first interval after it stopped, and still 0.24 to 0.35 in the sixth, measured. And
/// while they spin, their switches a second are what their status files say (1.05-1.10 of the
/// count by hand in five runs).
#[test]
fn a_workload_read_in_rotation_reads_its_clock_and_all_its_switches() {
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
        attach: None,
        paced: false,
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
    // Spinning for 4 s: the switches of every thread are read by then (200 status reads a
    // second), and counted by hand from the 2nd second to the 4th.
    let mut spinning: Vec<Sample> = (0..20).map(|_| sweep()).collect();
    let counted_from = (Instant::now(), switches_of_this_process());
    spinning.extend((0..20).map(|_| sweep()).collect::<Vec<_>>());
    let counted_to = (Instant::now(), switches_of_this_process());
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
        clocked >= 25,
        "the clock read at the sweeps in rotation: {clocked} of 38"
    );
    let cpus = spinning[0].machine.cpus as f64;
    let mut model = Model::new();
    let all: Vec<&Sample> = spinning.iter().chain(&after).collect();
    let frames: Vec<_> = all
        .windows(2)
        .map(|pair| model.step(pair[0], pair[1]).workloads[0].clone())
        .collect();
    let received: Vec<f64> = frames.iter().map(|w| w.cpu_received).collect();
    // Switches: the frames of the counted seconds against the count by hand. Before each
    // thread's rate was its own, a status sweep's sum over the threads read at it stood for
    // the workload: a fourth of them here.
    let secs = (counted_to.0 - counted_from.0).as_secs_f64();
    let by_hand = (counted_to.1 - counted_from.1) as f64 / secs;
    let counted = &frames[21..39];
    let read = counted
        .iter()
        .map(|w| w.voluntary_cs_per_sec + w.involuntary_cs_per_sec)
        .sum::<f64>()
        / counted.len() as f64;
    assert!(
        read > by_hand * 0.7 && read < by_hand * 1.4,
        "switches a second: {read:.0} read, {by_hand:.0} counted"
    );
    // Frames 2 to 38 are wholly while they spin (the first two take them in); 40 on, wholly
    // after they stopped (39 spans the stop).
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

/// Voluntary and involuntary switches of every thread of this process so far.
fn switches_of_this_process() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("status")).ok())
        .flat_map(|status| {
            status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .sum()
}
