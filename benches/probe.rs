//! One probe sweep over a helper process that sleeps in 100, 1,000 and 5,000 threads.
//!
//! `cargo bench --bench probe` prints criterion's time per sweep; the last lines print
//! microseconds per task and what sampling 1,000 tasks at 10 Hz, with voluntary/involuntary
//! switches read once a second, costs in % of one CPU.
//!
//! The helper is this same binary re-executed with SCHEDLAB_BENCH_SLEEPERS=N: it starts N
//! threads that block, prints "ready", and exits when its stdin closes.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use nix::time::{clock_gettime, ClockId};
use schedlab::model::Model;
use schedlab::probe::{Probe, ProbeConfig, Target};

const ENV: &str = "SCHEDLAB_BENCH_SLEEPERS";
/// Set to make every helper thread wake every 100 ms instead of blocking for good.
const ENV_WAKE: &str = "SCHEDLAB_BENCH_WAKE";

fn sleeper_main(n: usize) {
    let wake = std::env::var_os(ENV_WAKE).is_some();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let mut handles = Vec::new();
    for _ in 1..n {
        let rx = rx.clone();
        handles.push(
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    if wake {
                        loop {
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                    // Block until the channel closes (the main thread drops tx).
                    let _ = rx.lock().map(|r| r.recv());
                })
                .expect("spawning a sleeper thread"),
        );
    }
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(tx);
    std::process::exit(0);
}

struct Sleepers {
    child: Child,
    target: Target,
}

impl Sleepers {
    fn start(n: usize, wake: bool) -> Sleepers {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        if wake {
            cmd.env(ENV_WAKE, "1");
        }
        let mut child = cmd
            .env(ENV, n.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("starting the sleeper helper");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        let pid = child.id();
        Sleepers {
            target: Target {
                id: 1,
                name: format!("sleepers-{n}"),
                pgid: 0,
                leader: pid,
                cgroup: None,
                counters: None,
                ops_unit: String::new(),
                attach: None,
                paced: false,
            },
            child,
        }
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn probe(status_every: Duration) -> Probe {
    Probe::new(ProbeConfig {
        status_every,
        ..ProbeConfig::default()
    })
    .unwrap()
}

fn cpu_ns() -> u64 {
    let ts = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("this thread's CPU clock");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// CPU per sweep in µs, averaged over `rounds` sweeps.
fn cpu_per_sweep(p: &mut Probe, targets: &[Target], rounds: u32) -> f64 {
    let c0 = cpu_ns();
    for _ in 0..rounds {
        std::hint::black_box(p.sample(targets));
    }
    (cpu_ns() - c0) as f64 / rounds as f64 / 1000.0
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("probe_sweep");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3));
    let mut summary = Vec::new();
    for (n, wake) in [
        (100usize, false),
        (1000, false),
        (5000, false),
        (1000, true),
    ] {
        let s = Sleepers::start(n, wake);
        let targets = vec![s.target.clone()];
        let label = if wake { "waking" } else { "sleeping" };
        group.throughput(Throughput::Elements(n as u64));
        let rounds = (20_000 / n as u32).max(5);
        // schedstat (+ process stat) only: what every tick costs.
        let mut fast = probe(Duration::from_secs(3600));
        // The probe takes in at most 500 new threads a listing: sweep until it has them all.
        let seen_by = |p: &mut Probe| -> usize {
            p.sample(&targets).workloads[0]
                .processes
                .iter()
                .map(|p| p.threads.len())
                .sum()
        };
        let mut seen = 0;
        for _ in 0..n / 500 + 3 {
            seen = seen_by(&mut fast);
        }
        assert_eq!(seen, n, "the probe should see every thread");
        group.bench_with_input(
            BenchmarkId::new(format!("schedstat/{label}"), n),
            &n,
            |b, _| b.iter(|| fast.sample(&targets)),
        );
        let fast_cpu = cpu_per_sweep(&mut fast, &targets, rounds);
        if !wake {
            // Deriving a Frame from two Samples: the rest of the observer's work per tick.
            let a = fast.sample(&targets);
            let b = fast.sample(&targets);
            group.bench_with_input(BenchmarkId::new("model_step", n), &n, |bch, _| {
                bch.iter(|| Model::new().step(&a, &b))
            });
        }
        drop(fast); // its descriptors: two probes on 5,000 threads exceed the fd limit
                    // A status tick: schedstat, plus status of every thread scheduled since the last
                    // one (all of them when they wake), plus per-thread nice. Sleep 150 ms between
                    // sweeps so the waking threads have run.
        let mut full = probe(Duration::ZERO);
        for _ in 0..n / 500 + 3 {
            full.sample(&targets);
        }
        group.bench_with_input(
            BenchmarkId::new(format!("with_status/{label}"), n),
            &n,
            |b, _| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        if wake {
                            std::thread::sleep(Duration::from_millis(150));
                        }
                        let t = Instant::now();
                        std::hint::black_box(full.sample(&targets));
                        spent += t.elapsed();
                    }
                    spent
                })
            },
        );
        let full_cpu = if wake {
            let mut total = 0.0;
            for _ in 0..5 {
                std::thread::sleep(Duration::from_millis(150));
                total += cpu_per_sweep(&mut full, &targets, 1);
            }
            total / 5.0
        } else {
            cpu_per_sweep(&mut full, &targets, rounds)
        };
        summary.push((n, label, fast_cpu, full_cpu));
    }
    group.finish();
    println!("\nCPU time per sweep (thread CPU time, this machine):");
    println!(
        "{:>7} {:>9} {:>11} {:>11} {:>9} {:>13}",
        "tasks", "threads", "plain µs", "status µs", "µs/task", "status µs/task"
    );
    for &(n, label, fast, full) in &summary {
        println!(
            "{n:>7} {label:>9} {fast:>11.0} {full:>11.0} {:>9.2} {:>13.2}",
            fast / n as f64,
            full / n as f64
        );
    }
    for &(n, label, fast, full) in summary.iter().filter(|s| s.0 == 1000) {
        // 10 Hz, status asked once a second but held to the probe's budget of status reads
        // (1,000 threads: one status sweep every 2 s).
        let status_every = (n as f64 / schedlab::probe::STATUS_READS_PER_SEC as f64).max(1.0);
        let status_per_sec = 1.0 / status_every;
        let per_sec = (10.0 - status_per_sec) * fast + status_per_sec * full;
        println!(
            "{n} {label} threads at 10 Hz, status every {status_every:.0} s: {per_sec:.0} µs of CPU per second = {:.2}% of one CPU",
            per_sec / 1e4
        );
    }
}

fn main() {
    if let Ok(n) = std::env::var(ENV) {
        sleeper_main(n.parse().expect("thread count"));
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
