//! Deterministic Frames for exporter tests: two workloads over ten half-second intervals.
#![allow(dead_code)]

use schedlab::model::{Frame, MachineFrame, WorkloadFrame, WorkloadState};

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
