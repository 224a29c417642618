//! A scenario: a set of workloads with their knobs, start delays and durations, and the
//! sampling interval. Scenario files are TOML (assets/scenarios/); the built-in default is
//! contest's fork_load against a -j4 reference job in one session.

use serde::{Deserialize, Serialize};

use crate::supervisor::Knobs;
use crate::workload::kind::WorkloadKind;

/// One workload in a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadDecl {
    /// Unique within the scenario; shown in tables and legends.
    pub name: String,
    pub kind: WorkloadKind,
    pub knobs: Knobs,
    /// Seconds after the scenario starts.
    pub start_delay: f64,
    /// Seconds it runs before being stopped; None = until the scenario ends.
    pub duration: Option<f64>,
}

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Sampling interval in milliseconds (100..=10000).
    pub interval_ms: u64,
    /// Seconds a headless run lasts; None = until the last finite workload ends.
    pub duration: Option<f64>,
    pub workloads: Vec<WorkloadDecl>,
}

impl Scenario {
    /// The scenario `schedlab` opens with no arguments: the seed's fork_load debate. Four
    /// reference-job workers and one fork loop, all in one session, so on two CPUs each of the
    /// five runnable tasks is due 40% of a CPU.
    pub fn builtin_default() -> Self {
        Scenario {
            name: "contest-fork-load".into(),
            description: "contest's fork_load against a -j4 reference job, in one session".into(),
            interval_ms: 500,
            duration: Some(30.0),
            workloads: vec![
                WorkloadDecl {
                    name: "ref-job".into(),
                    kind: WorkloadKind::RefJob {
                        jobs: 4,
                        work: 1.0,
                        runs: Some(0),
                    },
                    knobs: Knobs::default(),
                    start_delay: 0.0,
                    duration: None,
                },
                WorkloadDecl {
                    name: "fork_load".into(),
                    kind: WorkloadKind::ForkLoad { forkers: Some(1) },
                    knobs: Knobs::default(),
                    start_delay: 0.0,
                    duration: None,
                },
            ],
        }
    }
}
