//! What several test files share: deterministic Frames for exporter tests (two workloads
//! over ten half-second intervals), the real schedlab binary in place of the test harness
//! wherever a workload would run "this binary", scenario files in a temporary directory, and
//! (in the submodules) waiting with a deadline, reading child processes and a drawn screen's text.
#![allow(dead_code)]

pub mod child;
pub mod netns;
pub mod screen;
pub mod tree;
pub mod wait;

use std::path::{Path, PathBuf};
use std::process::Command;

use schedlab::knobs::Knobs;
use schedlab::model::latency::Distribution;
use schedlab::model::{Frame, MachineFrame, WorkloadFrame, WorkloadState};
use schedlab::probe::LatencySample;
use schedlab::scenario::WorkloadDecl;
use schedlab::supervisor::{spawn, LaunchSpec, Program, Running};
use schedlab::workload::registry::WorkloadKind;

/// A repeat's latency timed as `unit`: `n` operations of `typical_ns` and one of `outlier_ns`.
pub fn latency_with_outlier(unit: &str, n: u64, typical_ns: u64, outlier_ns: u64) -> Distribution {
    let bucket = |ns| schedlab::sys::shared::histogram::bucket_of(ns) as u16;
    Distribution::cumulative(&LatencySample {
        unit: unit.into(),
        samples: n + 1,
        sum_ns: n * typical_ns + outlier_ns,
        rejected: 0,
        buckets: vec![(bucket(typical_ns), n), (bucket(outlier_ns), 1)],
    })
}

/// Runs `schedlab SUBCOMMAND ARGS --format json -o OUT`: how it ended, and its stderr.
pub fn run_json(subcommand: &str, args: &[&str], out: &Path) -> (std::process::Output, String) {
    let run = schedlab()
        .arg(subcommand)
        .args(args)
        .args(["--format", "json", "-o"])
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("schedlab {subcommand} does not run: {e}"));
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    (run, stderr)
}

/// The command succeeded; its stderr says why not.
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub const BIN: &str = env!("CARGO_BIN_EXE_schedlab");

/// A command running the real schedlab binary.
pub fn schedlab() -> Command {
    Command::new(BIN)
}

/// The real schedlab binary started with `args`: no stdin, stderr piped, stdout as given.
pub fn spawn_schedlab<S: AsRef<std::ffi::OsStr>>(
    args: impl IntoIterator<Item = S>,
    stdout: std::process::Stdio,
) -> std::process::Child {
    schedlab()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {BIN}: {e}"))
}

/// Runs `cmd` to its end, asserts it succeeded, and returns its stdout.
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert_success(&out);
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// The arguments of a command line written as one string ("chat-bench 2 20 --runs 1").
pub fn args_of(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Writes `text` as the scenario file `dir/name`; returns its path.
pub fn scenario_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A fresh directory holding `text` as the scenario file `name`: (the directory, the path).
/// The directory goes when the first is dropped.
pub fn scenario_in_tempdir(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario_file(dir.path(), name, text);
    (dir, path)
}

/// Every cgroup schedlab made (`schedlab-...`) in the hierarchies it uses (v2's root, v1's cpu
/// and cpuacct), whoever made it.
pub fn schedlab_cgroups() -> Vec<PathBuf> {
    [
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/cpu",
        "/sys/fs/cgroup/cpuacct",
    ]
    .iter()
    .filter_map(|d| std::fs::read_dir(d).ok())
    .flat_map(|d| d.flatten())
    .filter(|e| e.file_name().to_string_lossy().starts_with("schedlab-"))
    .map(|e| e.path())
    .collect()
}

/// A kernel setting from /proc/sys, by its sysctl name ("kernel.msgmni").
pub fn sysctl(name: &str) -> u64 {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A seed for a test's random choices, from the clock, odd (never 0, as xorshift needs); the
/// test prints it so that a failure can be replayed.
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1
}

/// The real schedlab binary's command line for `args` (a subcommand and its arguments).
pub fn real_argv(args: Vec<String>) -> Vec<String> {
    std::iter::once(BIN.to_string()).chain(args).collect()
}

/// Under cargo test the supervisor's "this binary" is the test harness: the declaration with
/// the real schedlab binary and the same arguments instead (other programs as they are).
pub fn real_binary(d: &WorkloadDecl) -> WorkloadDecl {
    let Program::SelfExe(args) = d.kind.program() else {
        return d.clone();
    };
    WorkloadDecl {
        kind: WorkloadKind::Command {
            argv: real_argv(args),
        },
        ..d.clone()
    }
}

/// Starts `kind` under the supervisor as the real schedlab binary, output not captured.
pub fn spawn_real(name: &str, kind: &WorkloadKind) -> Running {
    let Program::SelfExe(args) = kind.program() else {
        panic!("{name} is a schedlab subcommand")
    };
    spawn(&LaunchSpec {
        name: name.into(),
        program: Program::Command(real_argv(args)),
        knobs: Knobs::default(),
        capture_output: false,
    })
    .unwrap()
}

pub fn frames() -> Vec<Frame> {
    (1..=10)
        .map(|i| {
            let t = i as f64 * 0.5;
            Frame {
                t,
                interval: 0.5,
                workloads: vec![
                    WorkloadFrame {
                        id: 0,
                        name: "ref-job".into(),
                        state: WorkloadState::Running,
                        tasks: 4,
                        ops_per_sec: 400.0 + i as f64,
                        ops_unit: "unit".into(),
                        cpu_received: 1.2,
                        cpu_demand: 2.0,
                        cpu_fair: 1.6,
                        fairness_ratio: 0.75,
                        window_ratio: 0.75,
                        weight: 4096.0,
                        voluntary_cs_per_sec: 2.0,
                        involuntary_cs_per_sec: 300.0,
                        runq_wait_pct: 40.0,
                        ..Default::default()
                    },
                    WorkloadFrame {
                        id: 1,
                        name: "fork \"loop\"".into(),
                        state: WorkloadState::Running,
                        tasks: 1,
                        ops_per_sec: 885.0,
                        ops_unit: "fork".into(),
                        cpu_received: 0.8,
                        cpu_demand: 1.0,
                        cpu_fair: 0.4,
                        fairness_ratio: 2.0,
                        window_ratio: 2.0,
                        weight: 1024.0,
                        voluntary_cs_per_sec: 1770.0,
                        involuntary_cs_per_sec: 20.0,
                        runq_wait_pct: 10.0,
                        ..Default::default()
                    },
                ],
                machine: MachineFrame {
                    cpus: 2,
                    autogroup: true,
                    ctxt_per_sec: 5000.0,
                    ..Default::default()
                },
                jain_index: 0.8,
                observer_cpu_pct: 0.5,
                status_interval: 0.5,
                ..Default::default()
            }
        })
        .collect()
}

/// Removes a tmux server's socket file: `kill-server` leaves it in the socket directory
/// (`$TMUX_TMPDIR` or /tmp, then `tmux-UID`), and a test leaves nothing behind.
pub fn remove_tmux_socket(name: &str) {
    let dir = std::env::var_os("TMUX_TMPDIR").map_or_else(|| "/tmp".into(), PathBuf::from);
    let uid = nix::unistd::getuid();
    let own = dir.join(format!("tmux-{uid}"));
    let _ = std::fs::remove_file(own.join(name));
    // tmux made the directory for its first server; gone with the last socket (remove_dir
    // leaves a directory that still holds another server's socket).
    let _ = std::fs::remove_dir(own);
}

/// A process's name (its comm), empty when it is gone.
pub fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_default()
}

/// The schedlab binary copied alone into a directory of its own (as `cargo run` leaves it:
/// without the programs built beside it), with the directory that holds it.
#[allow(dead_code)]
pub fn lone_schedlab() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let lone = dir.path().join("schedlab");
    std::fs::copy(BIN, &lone).unwrap();
    (dir, lone)
}
