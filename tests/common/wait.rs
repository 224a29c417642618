//! Waiting for a condition with a deadline: the one polling loop the test files share.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Calls `check` every `every` until it returns `Ok`, for at most `within`. When time runs
/// out, the last `Err`: what was still not so, for the caller's message.
pub fn until<T, E>(
    within: Duration,
    every: Duration,
    mut check: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let deadline = Instant::now() + within;
    loop {
        match check() {
            Err(_) if Instant::now() < deadline => std::thread::sleep(every),
            done => return done,
        }
    }
}

/// Calls `left` every `every` until it returns nothing, for at most `within`. When time runs
/// out, what was still left, for the caller's message.
pub fn until_none_left<T>(
    within: Duration,
    every: Duration,
    mut left: impl FnMut() -> Vec<T>,
) -> Result<(), Vec<T>> {
    until(within, every, || {
        let now = left();
        if now.is_empty() {
            Ok(())
        } else {
            Err(now)
        }
    })
}

/// Ticks `lab` every `every` until the rest of the machine has wanted and received under 0.1
/// CPU for two seconds, for at most a minute: the tests that hold the model to the kernel
/// need a machine doing nothing else. When time runs out, the CPUs other tasks last wanted.
pub fn until_quiet(lab: &mut schedlab::engine::lab::Lab, every: Duration) -> Result<(), f64> {
    let mut quiet_since: Option<Instant> = None;
    until(Duration::from_secs(60), Duration::ZERO, || {
        std::thread::sleep(every);
        let f = lab.tick();
        let rest = f.machine.rest_cpu_demand.max(f.machine.rest_cpu_received);
        if f.interval > 0.0 && rest < 0.1 {
            if quiet_since.get_or_insert_with(Instant::now).elapsed() >= Duration::from_secs(2) {
                return Ok(());
            }
        } else {
            quiet_since = None;
        }
        Err(rest)
    })
}

/// A test's turn at a quiet machine: `machine` held (one such test at a time), then the rest
/// of the machine quiet, as [`until_quiet`] waits for it; panics when it never gets quiet.
pub fn quiet_turn(machine: &'static Mutex<()>) -> MutexGuard<'static, ()> {
    let turn = machine.lock().unwrap_or_else(|p| p.into_inner());
    let mut lab = schedlab::engine::lab::Lab::new(Duration::from_millis(250)).expect("lab");
    if let Err(last) = until_quiet(&mut lab, Duration::from_millis(250)) {
        panic!("the machine never got quiet (other tasks wanted {last:.2} CPUs)");
    }
    turn
}

/// Panics when another program got busy during the measured Frames: a session or cgroup of
/// the rest other than the root group (the kernel's threads, which the cases are about) and
/// this test's own session took or was due over 0.05 CPU. What is due would rightly change;
/// say so rather than report a false verdict that is not one.
pub fn check_quiet(name: &str, frames: &[schedlab::model::Frame]) {
    let own = std::fs::read_to_string("/proc/self/autogroup")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .map(|g| g.trim_start_matches('/').to_string())
        })
        .unwrap_or_default();
    for f in frames {
        for g in &f.machine.rest_groups {
            if g.key != "root" && g.key != own && g.received.max(g.fair) > 0.05 {
                panic!(
                    "{name}: the machine got busy at {:.1} s: {} got {:.2} CPUs and was due \
                     {:.2}; this case needs a machine doing nothing else",
                    f.t, g.name, g.received, g.fair
                );
            }
        }
    }
}
