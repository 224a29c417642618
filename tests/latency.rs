//! In-band latency on the real kernel: each workload's histograms against what the workload
//! itself counts, the ping-pong's p50 against its mean round trip, the wakeup probe beside a
//! SCHED_FIFO hog against the probe alone, and chat's delivery through schedlab's server
//! against a stand-in server that relays zeros.
//!
//! The real-time cases need root (CI runs as root); without it they say so and pass.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedlab::engine::lab::Lab;
use schedlab::model::latency::{interval, Distribution};
use schedlab::model::Latency;
use schedlab::probe::LatencySample;
use schedlab::scenario::WorkloadDecl;
use schedlab::sys::shared::counters::{CounterRegion, ENV_FD, ENV_LATENCY};
use schedlab::workload::registry::WorkloadKind;

mod common;
use common::BIN;

/// Runs `schedlab ARGS` to its end (killed after `within`), counting into `region` when
/// given, with `env` set.
fn run(args: &[&str], region: Option<&CounterRegion>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    // A duplicate without close-on-exec is what the child inherits.
    let inherited: Option<OwnedFd> = region.map(|r| {
        // SAFETY: the region keeps its descriptor open for as long as it lives, past this call.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(r.raw_fd()) };
        let fd = nix::unistd::dup(borrowed).expect("dup the region");
        cmd.env(ENV_FD, fd.as_raw_fd().to_string());
        fd
    });
    let child = cmd.spawn().expect("start schedlab");
    drop(inherited);
    wait_bounded(child, Duration::from_secs(120), args)
}

/// Runs schedlab with `args` to its end, counting into a fresh region of `slots` slots: the
/// region and what the run wrote.
fn run_counted(args: &[&str], slots: usize) -> (CounterRegion, Output) {
    let region = CounterRegion::create(slots).unwrap();
    let out = run(args, Some(&region), &[]);
    (region, out)
}

fn wait_bounded(mut child: std::process::Child, within: Duration, what: &[&str]) -> Output {
    let deadline = Instant::now() + within;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what:?} hung; stdout:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn latency_of(region: &CounterRegion) -> Vec<LatencySample> {
    region.read_latency().into_iter().map(Into::into).collect()
}

/// The region's latency since it was made, as the model reports an interval.
fn whole_run(region: &CounterRegion) -> Option<Latency> {
    interval(&[], &latency_of(region)).0
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The number after `label` on the first line that has it.
fn number_after(text: &str, label: &str) -> f64 {
    text.lines()
        .find_map(|l| l.split_once(label))
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|w| w.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in\n{text}"))
}

fn usable_cpus() -> Vec<usize> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    (0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// Held by every test here, one at a time. The tests that run real-time tasks: two at once
/// would leave ordinary tasks (this harness, the probe's reporter, the hog before it turns
/// real-time) no CPU at all. The others: whatever they run on the FIFO ping-pong's CPU (forks
/// and their page-table shootdowns, a chat run, a workload the dashboard watches) is served
/// there by the fair server, 50 ms a second, and drags the ping-pong's mean round trip from
/// its median (the check failed one run in ten beside the forks, one in four beside the rest:
/// p50 2.7 µs, mean 3.4 µs, p99.9 44 µs).
static REAL_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn real_time_turn() -> std::sync::MutexGuard<'static, ()> {
    REAL_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether this process may use SCHED_FIFO (root, or CAP_SYS_NICE with an RT limit).
fn may_use_fifo() -> bool {
    let ok = set_fifo(libc::SCHED_FIFO, 1);
    set_fifo(libc::SCHED_OTHER, 0);
    ok
}

/// Sets the calling thread's policy; true on success.
fn set_fifo(policy: libc::c_int, priority: libc::c_int) -> bool {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler on the calling thread (0) with a valid sched_param.
    unsafe { libc::sched_setscheduler(0, policy, &param) == 0 }
}

#[test]
fn fork_load_times_every_cycle_it_counts() {
    let _turn = real_time_turn();
    let (region, out) = run_counted(&["fork-load", "--forkers", "1", "--duration", "0.5"], 16);
    let forked = number_after(&stdout(&out), "Children forked:") as u64;
    let l = whole_run(&region).expect("fork-load timed its cycles");
    assert_eq!(l.unit, "fork cycle");
    assert_eq!(l.samples, forked, "one timed cycle per child reaped");
    assert_eq!(region.total(), forked);
    assert!(
        l.available && l.p50_us > 0.0 && l.p50_us <= l.p99_us,
        "{l:?}"
    );
}

#[test]
fn hackbench_times_one_message_in_32_from_write_to_read() {
    let _turn = real_time_turn();
    for mode in [&[][..], &["--pipe"][..], &["--threads"][..]] {
        let region = CounterRegion::create(64).unwrap();
        let mut args = vec!["hackbench", "-g", "1", "-l", "20"];
        args.extend(mode);
        run(&args, Some(&region), &[]);
        // 20 senders, each writing 20 x 20 messages and stamping the first and every 32nd:
        // 13 each, every one read by exactly one receiver.
        let totals = region.read_latency();
        assert_eq!(totals.len(), 1, "{mode:?}: {totals:?}");
        assert_eq!(
            (totals[0].samples, totals[0].rejected),
            (260, 0),
            "{mode:?}"
        );
        let l = whole_run(&region).unwrap();
        assert_eq!(l.unit, "message");
        assert!(l.p50_us > 0.0 && l.p999_us >= l.p50_us, "{mode:?}: {l:?}");
    }
    // Data too short to hold a stamp is sent as it is, and nothing is timed.
    let (region, _) = run_counted(&["hackbench", "-g", "1", "-l", "5", "-s", "10"], 64);
    assert_eq!(region.read_latency(), vec![]);
}

#[test]
fn recording_off_times_nothing() {
    let _turn = real_time_turn();
    let region = CounterRegion::create(16).unwrap();
    let out = run(
        &common::args_of("ipc-pingpong --kind pipe --pairs 1 --pin none --duration 0.3"),
        Some(&region),
        &[(ENV_LATENCY, "off")],
    );
    assert!(region.total() > 0);
    assert_eq!(region.read_latency(), vec![]);
    assert!(
        !stdout(&out).contains("Round-trip latency"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn pingpong_p50_round_trip_agrees_with_its_mean() {
    // On a shared machine a time-shared pair is preempted now and then, which drags its mean
    // far from its median; under SCHED_FIFO, on its own CPU, it runs as the kernel allows.
    if !may_use_fifo() {
        eprintln!("skipped: SCHED_FIFO needs root (CI runs as root)");
        return;
    }
    let _turn = real_time_turn();
    let mut cmd = Command::new("chrt");
    cmd.args(["-f", "1", BIN, "ipc-pingpong", "--kind", "sem"])
        .args(["--pairs", "1", "--pin", "same", "--duration", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = wait_bounded(cmd.spawn().unwrap(), Duration::from_secs(60), &["chrt"]);
    let text = stdout(&out);
    let mean = number_after(&text, "Mean round-trip time:");
    let p50 = number_after(&text, "Round-trip latency: p50");
    eprintln!("p50 {p50} usec, mean {mean} usec");
    // Within 20% above the mean; below it, within 40%. This VM's round trip switches between
    // about 4.0 and 2.6 µs within a run now and then (the host's doing, under SCHED_FIFO), and
    // a run that spends most of its time in the faster mode has its median there and its mean
    // between the two: p50 2.66 against a mean of 3.44, and 2.59 against 3.59, in two CI-like
    // runs of 2026-12-02; 3.9-4.3 against 4.1-4.4 otherwise. A wrong clock (a unit off, a
    // stamp not from the message's own send) is off by far more either way.
    assert!(
        p50 <= 1.2 * mean && p50 >= 0.6 * mean,
        "p50 {p50} usec against a mean of {mean} usec:\n{text}"
    );
}

/// A SCHED_FIFO thread spinning on `cpu` until `stop` (at most `limit`).
fn fifo_hog(cpu: usize, stop: Arc<AtomicBool>, limit: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut set = nix::sched::CpuSet::new();
        set.set(cpu).unwrap();
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
        assert!(set_fifo(libc::SCHED_FIFO, 1), "SCHED_FIFO for the hog");
        let end = Instant::now() + limit;
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            std::hint::spin_loop();
        }
    })
}

/// Stops the hog however the test ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The figure after `label` (in usec) in the whole-run block for `unit` in a probe's report.
fn probe_figure(report: &str, unit: &str, label: &str) -> f64 {
    let block = report
        .split_once(&format!("{unit} latencies over the whole run"))
        .unwrap_or_else(|| panic!("no whole-run {unit} block in\n{report}"))
        .1;
    number_after(block, label)
}

#[test]
fn wakeup_probe_beside_a_fifo_hog_sees_a_p99_ten_times_its_p99_alone() {
    let cpus = usable_cpus();
    if cpus.len() < 2 {
        eprintln!("skipped: the hog takes one CPU and the test needs another");
        return;
    }
    if !may_use_fifo() {
        eprintln!("skipped: SCHED_FIFO needs root (CI runs as root)");
        return;
    }
    let _turn = real_time_turn();
    let cpu = *cpus.last().unwrap();
    let cpu_arg = cpu.to_string();
    // Four timer threads and four pairs woken every 100 ms: see below for the period.
    let probe = || {
        let args = [
            "wakeup-probe",
            "--cpu",
            &cpu_arg,
            "--timers",
            "4",
            "--pairs",
            "4",
            "--period",
            "100000",
            "--duration",
            "4",
            "--interval",
            "100",
        ];
        let child = common::spawn_schedlab(args, Stdio::piped());
        (child, args.map(String::from))
    };
    let (alone, what) = probe();
    let alone = stdout(&wait_bounded(alone, Duration::from_secs(60), &[&what[0]]));

    // The hog spins on that CPU for the whole of the probe's run, so the probe's threads there
    // run only when the fair server does. The server is deferred: the probe waits for it up to
    // 950 ms, then runs promptly for a few hundred ms (its 50 ms of budget lasts a probe that
    // runs microseconds a wakeup), and so on. At a 10 ms period those windows hold 30-100
    // prompt wakeups for each one that waited, under 1% of the samples, so the p99 saw the
    // waits in some runs only; at 100 ms a few in a hundred wait (of 88-92 samples, the p90
    // was 0.2-18 ms and the p99 0.88-0.93 s on 2026-12-02), and the p99 sees them every time.
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = StopOnDrop(stop.clone());
    let hog = fifo_hog(cpu, stop.clone(), Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(100));
    let (hogged, what) = probe();
    let hogged = wait_bounded(hogged, Duration::from_secs(60), &[&what[0]]);
    stop.store(true, Ordering::Relaxed);
    hog.join().unwrap();
    let hogged = stdout(&hogged);

    for unit in ["Timer wakeup", "Thread wakeup"] {
        let a = probe_figure(&alone, unit, "99.0th:");
        let h = probe_figure(&hogged, unit, "99.0th:");
        eprintln!("{unit}: p99 {a} usec alone, {h} usec beside a SCHED_FIFO hog");
        assert!(
            h >= 10.0 * a,
            "{unit}: p99 {h} usec beside the hog, {a} usec alone\nalone:\n{alone}\nhogged:\n{hogged}"
        );
    }
}

/// A stand-in chat server that speaks the protocol but relays zeros instead of what it was
/// sent: one thread per user reads its messages and writes 100 zero bytes to the 19 others.
fn zero_relay(listener: TcpListener) {
    let (mut control, _) = listener.accept().unwrap();
    let mut start = [0u8; 8];
    control.read_exact(&mut start).unwrap();
    let rooms = i32::from_ne_bytes(start[..4].try_into().unwrap()) as usize;
    let messages = i32::from_ne_bytes(start[4..].try_into().unwrap()) as usize;
    let users: Vec<Arc<TcpStream>> = (0..rooms * 20)
        .map(|_| Arc::new(listener.accept().unwrap().0))
        .collect();
    let mut relays = Vec::new();
    for (i, user) in users.iter().enumerate() {
        let room: Vec<Arc<TcpStream>> = users[i / 20 * 20..i / 20 * 20 + 20].to_vec();
        let user = user.clone();
        relays.push(std::thread::spawn(move || {
            let mut msg = [0u8; 100];
            for _ in 0..messages {
                (&*user).read_exact(&mut msg).unwrap();
                for (j, other) in room.iter().enumerate() {
                    if j != i % 20 {
                        (&**other).write_all(&[0u8; 100]).unwrap();
                    }
                }
            }
        }));
    }
    control.write_all(&[0x11]).unwrap();
    for r in relays {
        r.join().unwrap();
    }
    let mut end = [0u8; 1];
    control.read_exact(&mut end).unwrap();
    assert_eq!(end[0], 0x22);
}

#[test]
fn chat_delivery_is_timed_through_schedlab_and_unavailable_through_a_zero_relay() {
    let _turn = real_time_turn();
    // schedlab's own server relays what it is sent: the stamps come back.
    let (region, _) = run_counted(&["chat-bench", "1", "50", "--runs", "1"], 256);
    let l = whole_run(&region).expect("the client timed its deliveries");
    assert_eq!(l.unit, "delivery");
    assert!(l.available, "{l:?}");
    // 20 receive threads of 19 x 50 messages each read the first stamp and every 8th: 119
    // each. (A stamp torn by the server's relay, which copies the buffer while the next
    // message may be read into it, is rejected: rare.)
    let totals = region.read_latency();
    assert_eq!(
        totals[0].samples + totals[0].rejected,
        20 * 119,
        "{totals:?}"
    );
    assert!(l.p50_us > 0.0 && l.p50_us <= l.p99_us, "{l:?}");

    // A server that relays zeros: the client still completes, and says it cannot tell.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let server = std::thread::spawn(move || zero_relay(listener));
    let region = CounterRegion::create(256).unwrap();
    let out = run(
        &["chat-client", "127.0.0.1", "1", "20", &port],
        Some(&region),
        &[],
    );
    server.join().unwrap();
    assert!(
        stdout(&out).contains("Messages received  : 7600"),
        "{}",
        stdout(&out)
    );
    let totals = region.read_latency();
    assert_eq!(totals.len(), 1);
    // 380 messages per receive thread, the first and every 8th looked at: 48 each.
    assert_eq!((totals[0].samples, totals[0].rejected), (0, 20 * 48));
    let l = whole_run(&region).unwrap();
    assert!(!l.available, "{l:?}");
    assert_eq!((l.samples, l.p50_us, l.p99_us), (0, 0.0, 0.0));
}

#[test]
fn the_dashboard_reads_a_workload_s_latency_each_interval() {
    let _turn = real_time_turn();
    // What the dashboard does: start a workload with a counter region, sample it, derive.
    let mut lab = Lab::new(Duration::from_millis(200)).unwrap();
    let argv = [
        BIN,
        "ipc-pingpong",
        "--kind",
        "pipe",
        "--pairs",
        "1",
        "--pin",
        "none",
    ];
    let id = lab
        .add(WorkloadDecl {
            name: "pp".into(),
            kind: WorkloadKind::Command {
                argv: argv.map(String::from).to_vec(),
            },
            knobs: Default::default(),
            start_delay: 0.0,
            duration: None,
        })
        .unwrap();
    let mut seen: Vec<Latency> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.len() < 3 && Instant::now() < deadline {
        std::thread::sleep(lab.interval());
        let frame = lab.tick();
        let w = frame.workloads.iter().find(|w| w.id == id).unwrap();
        if let Some(l) = w.latency.clone().filter(|l| l.samples > 0) {
            seen.push(l);
        }
    }
    drop(lab);
    assert!(
        seen.len() >= 3,
        "three intervals with round trips timed: {seen:?}"
    );
    for l in &seen {
        assert_eq!(l.unit, "round trip");
        assert!(l.available, "{l:?}");
        assert!(
            0.0 < l.p50_us && l.p50_us <= l.p99_us && l.p99_us <= l.p999_us,
            "{l:?}"
        );
    }
}

#[test]
fn percentiles_of_a_real_run_match_the_histogram_s_own_count() {
    let _turn = real_time_turn();
    // The probe merges per unit; a Distribution made from it counts what the workload did.
    let (region, _) = run_counted(
        &["wakeup-probe", "--period", "1000", "--duration", "0.5"],
        16,
    );
    let samples = latency_of(&region);
    let units: Vec<&str> = samples.iter().map(|s| s.unit.as_str()).collect();
    assert_eq!(units, ["timer wakeup", "thread wakeup"]);
    let all = Distribution::of(&samples, None).unwrap();
    assert_eq!(all.count(), samples.iter().map(|s| s.samples).sum::<u64>());
    assert_eq!(
        all.count(),
        region.total(),
        "one count per wake, one sample per wake"
    );
}

#[test]
fn a_recorded_sample_s_latency_replays_to_the_same_figures() {
    let _turn = real_time_turn();
    // Samples are stored as JSON lines and replayed through the same model.
    let region = CounterRegion::create_with(4, 4).unwrap();
    let h = region
        .claim_histogram(schedlab::sys::shared::histogram::Unit::RoundTrip)
        .unwrap();
    for ns in [2_000, 2_500, 40_000] {
        h.record(ns);
    }
    let first = latency_of(&region);
    for ns in [
        3_000,
        1_000_000,
        schedlab::sys::shared::histogram::TOP_NS * 2,
    ] {
        h.record(ns);
    }
    let second = latency_of(&region);
    let live = interval(&first, &second);
    let through_json = |s: &Vec<LatencySample>| -> Vec<LatencySample> {
        serde_json::from_str(&serde_json::to_string(s).unwrap()).unwrap()
    };
    let replayed = interval(&through_json(&first), &through_json(&second));
    assert_eq!(live, replayed);
    assert_eq!(live.0.unwrap().samples, 3);
}
