//! `schedlab run` end to end: real workloads (plain commands, so this does not depend on the
//! load generators), JSON that follows the schema, recordings, live metrics, and bad input.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use schedlab::record::latency::Figure;
use schedlab::record::results::{Metric, RunResults};

fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

/// A scenario of two commands that end by themselves: one spins for a while, one sleeps.
const FINITE: &str = include_str!("scenarios/two-commands.toml");

fn scenario(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A fresh directory holding `text` as s.toml: (the directory, the scenario's path).
fn with_scenario(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario(dir.path(), "s.toml", text);
    (dir, sc)
}

/// `schedlab run SCENARIO`, to add options to.
fn run_of(sc: &Path) -> Command {
    let mut cmd = schedlab();
    cmd.arg("run").arg(sc);
    cmd
}

/// `schedlab run SCENARIO --repeat N --format json`, which must succeed.
fn json_repeats(sc: &Path, repeats: &str) -> Output {
    let out = run_of(sc)
        .args(["--repeat", repeats, "--format", "json"])
        .output()
        .unwrap();
    common::assert_success(&out);
    out
}

fn one_line_error(out: &Output, cmd: &str) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with(&format!("schedlab {cmd}: error: ")),
        "{err}"
    );
    err
}

#[test]
fn json_output_follows_the_schema_and_gives_the_spread() {
    let (_dir, sc) = with_scenario(FINITE);
    let out = json_repeats(&sc, "3");
    assert!(out.stderr.is_empty(), "no progress bar when piped");
    let text = String::from_utf8(out.stdout).unwrap();
    let r = RunResults::from_json(&text, "stdout").expect("strict schema");
    assert_eq!(r.repeats, 3);
    assert_eq!(r.scenario.name, "two-commands");
    assert_eq!(r.scenario.duration_s, None);
    assert!(r.host.cpus >= 1);
    let spin = &r.workloads[0];
    assert_eq!(
        (spin.name.as_str(), spin.kind.as_str()),
        ("spin", "command")
    );
    assert!(
        spin.metrics
            .iter()
            .all(|m| m.what.metric != Metric::Throughput),
        "a command has no counters, so no throughput"
    );
    let cpu = spin
        .metrics
        .iter()
        .find(|m| m.what.metric == Metric::CpuReceived)
        .unwrap();
    assert_eq!(cpu.runs.len(), 3);
    assert!(cpu.summary.mean > 0.0, "a shell loop spins: {cpu:?}");
    assert!(
        cpu.summary.std_dev.is_some() && cpu.summary.ci95_low.is_some() && cpu.summary.cv.is_some()
    );

    // CSV and text views of the same run.
    let out = run_of(&sc).args(["--format", "csv"]).output().unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("workload,kind,metric,unit,n,mean"));
    assert!(csv.contains("\nspin,command,cpu_received,CPUs,1,"));
}

#[test]
fn results_carry_their_machine_and_every_repeat_in_csv() {
    let (_dir, sc) = with_scenario(FINITE);
    let out = json_repeats(&sc, "2");
    let r = RunResults::from_json(&String::from_utf8(out.stdout).unwrap(), "stdout").unwrap();
    let here = schedlab::record::results::Host::here(r.host.cpus, r.host.autogroup);
    assert_eq!(r.host, here, "the machine, field by field");
    assert_eq!(
        r.scenario.content.as_deref(),
        Some(FINITE),
        "the scenario's text"
    );
    let cmd = r.provenance.command_line.unwrap();
    assert!(
        cmd[1..]
            == [
                "run",
                sc.to_str().unwrap(),
                "--repeat",
                "2",
                "--format",
                "json"
            ],
        "{cmd:?}"
    );
    let started = r.provenance.started_utc.unwrap();
    assert!(
        started.starts_with("20") && started.ends_with('Z'),
        "{started}"
    );
    assert!(r.provenance.schedlab_commit.is_some());

    // Every repeat's value, one row each, with the scenario, kernel and host.
    let out = run_of(&sc)
        .args(["--repeat", "2", "--format", "csv-repeats"])
        .output()
        .unwrap();
    common::assert_success(&out);
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("scenario,kernel,host,workload,kind,metric,unit,run,value\n"));
    let lead = format!(
        "two-commands,{},{},spin,command,cpu_received,CPUs,",
        r.host.kernel,
        r.host.hostname.unwrap()
    );
    let spin: Vec<f64> = csv
        .lines()
        .filter_map(|l| l.strip_prefix(&lead))
        .map(|rest| rest.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(spin.len(), 2, "{csv}");
    assert!(spin.iter().all(|&v| v > 0.0), "{csv}");
}

#[test]
fn output_file_record_replay_and_plot() {
    let (dir, sc) = with_scenario(FINITE);
    let res = dir.path().join("res.json");
    let rec = dir.path().join("run.jsonl");
    let out = run_of(&sc)
        .args(["--format", "json", "-o"])
        .arg(&res)
        .arg("--record")
        .arg(&rec)
        .output()
        .unwrap();
    common::assert_success(&out);
    assert!(out.stdout.is_empty());
    RunResults::from_json(&std::fs::read_to_string(&res).unwrap(), "res").unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "no temp file left: {names:?}");

    let recording = schedlab::record::recording::Recording::read(&rec).unwrap();
    assert!(recording.complete);
    assert!(recording.sample_count() >= 3);
    assert_eq!(recording.header.scenario.name, "two-commands");
    assert!(recording.frames().iter().any(|f| f
        .workloads
        .iter()
        .any(|w| w.name == "spin" && w.cpu_received > 0.1)));

    let svg = dir.path().join("run.svg");
    let st = schedlab()
        .arg("plot")
        .arg(&rec)
        .arg("-o")
        .arg(&svg)
        .status()
        .unwrap();
    assert!(st.success());
    assert!(std::fs::read_to_string(&svg).unwrap().contains("</svg>"));
    let out = schedlab().arg("replay").arg(&rec).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("spin"));
}

#[test]
fn live_metrics_are_served_while_it_runs() {
    let (_dir, sc) = with_scenario("interval_ms = 100\n[[workload]]\nname = \"nap\"\nkind = \"command\"\nargv = [\"sleep\", \"5\"]\n");
    let mut child = run_of(&sc)
        .args(["--metrics-addr", "127.0.0.1:0", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("schedlab run: metrics at http://")
        .unwrap();
    let addr = url.strip_suffix("/metrics").unwrap();
    // Wait until a frame has been published (the scrape before the first tick is empty).
    let mut body = String::new();
    for _ in 0..100 {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        body = resp.split_once("\r\n\r\n").unwrap().1.to_owned();
        if body.contains("workload=\"nap\"") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        body.lines().any(
            |l| l.starts_with("schedlab_workload_cpu_received_seconds_total{")
                && l.contains(",scenario=\"s\",workload=\"nap\"}")
        ),
        "{body}"
    );
}

#[test]
fn bad_scenarios_are_one_line_pointing_at_the_mistake() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "unknown-key.toml",
            "[[workload]]\nkind = \"fork-load\"\nforkerz = 1\n",
            "unknown-key.toml:3:1: unknown key `forkerz` (did you mean `forkers`?)",
        ),
        (
            "wrong-type.toml",
            "interval_ms = \"fast\"\n[[workload]]\nkind = \"fork-load\"\n",
            "wrong-type.toml:1:15: invalid type: string \"fast\", expected an integer",
        ),
        (
            "negative.toml",
            "duration = -3\n[[workload]]\nkind = \"fork-load\"\n",
            "negative.toml:1:12: duration must be a positive number of seconds, found -3",
        ),
        (
            "kind.toml",
            "[[workload]]\nkind = \"fork-bomb\"\n",
            "kind.toml:2:8: unknown workload kind `fork-bomb`, expected one of",
        ),
        (
            "range.toml",
            "interval_ms = 20000\n[[workload]]\nkind = \"fork-load\"\n",
            "range.toml:1:15: interval_ms must be 100..=10000, found 20000",
        ),
    ];
    for (name, text, want) in cases {
        let sc = scenario(dir.path(), name, text);
        let out = schedlab().arg("run").arg(&sc).output().unwrap();
        let err = one_line_error(&out, "run");
        assert!(err.contains(want), "{name}: {err}");
    }
    let out = schedlab().args(["run", "no-such-preset"]).output().unwrap();
    assert!(one_line_error(&out, "run").contains("no scenario file `no-such-preset`"));
    let out = schedlab()
        .args(["run", "mix", "--duration", "-2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be a positive duration"));
}

#[test]
fn unwritable_outputs_and_busy_metrics_fail_before_anything_runs() {
    let (dir, sc) = with_scenario(FINITE);
    let out = run_of(&sc)
        .args(["-o", "/nonexistent/dir/r.json"])
        .output()
        .unwrap();
    assert!(one_line_error(&out, "run").contains("cannot write /nonexistent/dir/r.json"));
    let out = run_of(&sc)
        .args(["--record", "/nonexistent/dir/r.jsonl"])
        .output()
        .unwrap();
    assert!(one_line_error(&out, "run").contains("cannot write /nonexistent/dir/r.jsonl"));

    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let res = dir.path().join("r.json");
    let out = run_of(&sc)
        .args(["--metrics-addr", &addr, "-o"])
        .arg(&res)
        .output()
        .unwrap();
    let err = one_line_error(&out, "run");
    assert!(
        err.contains(&format!("cannot serve metrics on {addr}")),
        "{err}"
    );
    assert!(err.to_lowercase().contains("in use"), "{err}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the scenario: no partial result file, no temp file"
    );
}

#[test]
fn a_failing_workload_fails_the_run_and_leaves_no_recording_claiming_to_be_whole() {
    let (dir, sc) = with_scenario("interval_ms = 100\n[[workload]]\nname = \"bad\"\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"sleep 0.3; exit 3\"]\n");
    let rec = dir.path().join("r.jsonl");
    let out = run_of(&sc).arg("--record").arg(&rec).output().unwrap();
    let err = one_line_error(&out, "run");
    assert!(err.contains("workload bad failed (exit code 3)"), "{err}");
    let r = schedlab::record::recording::Recording::read(&rec).unwrap();
    assert!(!r.complete, "no end line: the reader says it was cut short");
}

/// Every preset runs for two seconds headless. Presets whose load generators are not built
/// yet fail here loudly, naming the preset and the reason.
#[test]
fn every_preset_runs_two_seconds_headless() {
    let mut failures = Vec::new();
    for (name, _) in schedlab::scenario::PRESETS {
        let out = schedlab()
            .args(["run", name, "--duration", "2", "--format", "json"])
            .output()
            .unwrap();
        if !out.status.success() {
            failures.push(format!(
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            continue;
        }
        let r = RunResults::from_json(&String::from_utf8_lossy(&out.stdout), name).unwrap();
        let (sc, _) = schedlab::cli::run::load_scenario(name).unwrap();
        for w in &r.workloads {
            let decl = sc.workloads.iter().find(|d| d.name == w.name).unwrap();
            if decl.start_delay >= 2.0 {
                assert!(w.metrics.is_empty(), "{name}: {} was not due yet", w.name);
                continue;
            }
            let cpu = w
                .metrics
                .iter()
                .find(|m| m.what.metric == Metric::CpuReceived);
            assert!(
                cpu.is_some_and(|m| m.summary.mean > 0.0),
                "{name}: workload {} received no CPU",
                w.name
            );
        }
    }
    assert!(
        failures.is_empty(),
        "presets that did not run:\n{}",
        failures.join("\n")
    );
}

/// CPU time all CPUs have been busy since boot, in seconds (/proc/stat).
fn busy_cpu_seconds() -> f64 {
    let stat = std::fs::read("/proc/stat").unwrap();
    let ticks = schedlab::probe::parse::proc_stat(&stat).unwrap().busy_ticks;
    (ticks * schedlab::probe::parse::NS_PER_TICK) as f64 / 1e9
}

/// A semaphore ping-pong, one pair on one CPU, for three seconds (under SCHED_FIFO as root, so
/// the other builds on a shared machine do not preempt it: preemption moves the mean, not the
/// median).
fn pingpong_scenario(fifo: bool) -> String {
    format!(
        "name = \"pp\"\ninterval_ms = 250\nduration = 3\n\
         [[workload]]\nname = \"pp\"\nkind = \"pingpong\"\nipc = \"sem\"\npairs = 1\npin = \"same\"\n{}",
        if fifo { "policy = \"fifo\"\n" } else { "" }
    )
}

#[test]
fn results_carry_a_ping_pong_s_latency_and_its_p50_agrees_with_its_mean_round_trip() {
    let fifo = nix::unistd::geteuid().is_root();
    if !fifo {
        eprintln!("\n*** run: not root, so the ping-pong is time-shared and its p50 is not checked against its mean ***\n");
    }
    let (dir, sc) = with_scenario(&pingpong_scenario(fifo));
    let json = dir.path().join("pp.json");
    let (busy_before, started) = (busy_cpu_seconds(), std::time::Instant::now());
    let out = run_of(&sc)
        .args(["--repeat", "2", "--format", "json", "-o"])
        .arg(&json)
        .output()
        .unwrap();
    let busy_cpus = (busy_cpu_seconds() - busy_before) / started.elapsed().as_secs_f64();
    common::assert_success(&out);
    let r = RunResults::from_json(&std::fs::read_to_string(&json).unwrap(), "pp.json").unwrap();
    let w = &r.workloads[0];
    assert_eq!(w.latency.len(), 1, "{:?}", w.latency);
    let l = &w.latency[0];
    assert_eq!(l.unit, "round trip");
    assert!(l.available);
    assert_eq!(l.samples.len(), 2, "one count per repeat");
    assert!(l.samples.iter().all(|&n| n > 1_000), "{:?}", l.samples);
    assert_eq!(l.rejected, [0, 0]);
    let figure = |f: Figure| l.figure(f).unwrap_or_else(|| panic!("{f:?} in {l:?}"));
    for f in Figure::ALL {
        assert_eq!(figure(f).runs.len(), 2, "{f:?}");
    }
    let p = &l.pooled;
    assert_eq!(p.samples, l.samples.iter().sum::<u64>());
    assert!(
        0.0 < p.p50_us && p.p50_us <= p.p99_us && p.p99_us <= p.p999_us,
        "{p:?}"
    );

    // One pair on one CPU: one of its two tasks runs at any moment, so a round trip takes
    // the CPU it received over its round trips per second, on average. (Wall time over round
    // trips would also count what other tasks took: a shared machine's builds, or other
    // tests' real-time hogs, which stall even a SCHED_FIFO pair now and then.)
    let mean_of = |metric: Metric| {
        w.metrics
            .iter()
            .find(|m| m.what.metric == metric)
            .unwrap_or_else(|| panic!("{metric:?} in {:?}", w.metrics))
            .summary
            .mean
    };
    let (throughput, cpu) = (mean_of(Metric::Throughput), mean_of(Metric::CpuReceived));
    if Path::new("/proc/self/sched").exists() {
        // Both tasks are pinned to one CPU: they do not move once in place. The ping-pong
        // pins itself after it starts, so its moves into place may fall after the first
        // reading: a few in a 3 s repeat (1.6 a second was seen), never a steady rate.
        assert!(mean_of(Metric::MigrationsPerSec) < 3.0, "{:?}", w.metrics);
    }
    let mean_rt_us = 1e6 * cpu / throughput;
    let others = busy_cpus - cpu - r.observer.as_ref().map_or(0.0, |o| o.cpu_pct_mean / 100.0);
    eprintln!(
        "pp: p50 {:.3} usec, p99 {:.3} usec, mean timed {:.3} usec; mean round trip {mean_rt_us:.3} usec on {cpu:.3} CPUs, {:.3} usec of wall time; {others:.2} CPUs busy besides",
        p.p50_us, p.p99_us, p.mean_us, 1e6 / throughput
    );
    // Round trips are bounded below, never far below their median: a p50 above the mean
    // would be a misplaced one, whatever else runs. The timed round trips are wall time, so
    // they are held to the wall-time mean here (the CPU one leaves out what others took, and
    // a pair that got half a CPU beside other tests' hogs waits within its round trips).
    let wall_rt_us = 1e6 / throughput;
    assert!(
        p.p50_us <= 1.2 * wall_rt_us,
        "{p:?} against {wall_rt_us} usec of wall time per round trip"
    );
    // Other tasks keeping the other CPU busy (a shared machine's builds) slow some round trips
    // through the caches they share, which moves the mean and not the median: the two agree
    // only on a quiet machine, where this test checks them (CI's, or this one between builds).
    if fifo && others > 0.5 {
        eprintln!(
            "\n*** run: the machine was busy ({others:.2} CPUs besides the run): the p50 is not checked against the mean ***\n"
        );
    } else if fifo {
        assert!(
            (p.p50_us - mean_rt_us).abs() <= 0.2 * mean_rt_us,
            "p50 {} usec against a mean round trip of {mean_rt_us} usec ({others:.2} CPUs busy besides the run)",
            p.p50_us
        );
    }

    // The text and CSV views show the same figures.
    let out = run_of(&sc).args(["--format", "text"]).output().unwrap();
    common::assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("  p99 round trip (µs)"), "{text}");
    assert!(text.contains("round trip: "), "{text}");
    assert!(
        text.contains(
            " timed, the first second of each repeat left out; all repeats together: p50 "
        ),
        "{text}"
    );
    let out = run_of(&sc).args(["--format", "csv"]).output().unwrap();
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(
        csv.contains("\npp,sem-pingpong,latency_p99,µs (round trip),1,"),
        "{csv}"
    );
}
