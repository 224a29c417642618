//! What several test files share: deterministic Frames for exporter tests (two workloads
//! over ten half-second intervals), and the real schedlab binary in place of the test
//! harness wherever a workload would run "this binary".
#![allow(dead_code)]

use schedlab::model::{Frame, MachineFrame, WorkloadFrame, WorkloadState};
use schedlab::scenario::WorkloadDecl;
use schedlab::supervisor::{spawn, Knobs, LaunchSpec, Program, Running};
use schedlab::workload::kind::WorkloadKind;

/// The command succeeded; its stderr says why not.
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The real schedlab binary's command line for `args` (a subcommand and its arguments).
pub fn real_argv(args: Vec<String>) -> Vec<String> {
    std::iter::once(env!("CARGO_BIN_EXE_schedlab").to_string())
        .chain(args)
        .collect()
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
