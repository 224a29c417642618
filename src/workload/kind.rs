//! The workloads a scenario, the dashboard's picker or contest can launch, as values. What
//! each kind's parameters accept, how it becomes a `schedlab` command line, whether it ends
//! by itself and what it asks of the machine are declared once, in
//! [`registry`](super::registry).

use serde::{Deserialize, Serialize};

/// Which IPC mechanism a ping-pong pair uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IpcKind {
    #[default]
    Msg,
    Sem,
    Pipe,
}

/// How ping-pong pairs are bound to CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pin {
    /// Both tasks of pair k on CPU k.
    #[default]
    Same,
    /// The two tasks of a pair on two different CPUs.
    Cross,
    None,
}

/// One kind of workload and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadKind {
    /// Chat server and client on loopback, in one process group.
    /// `schedlab chat-bench ROOMS MESSAGES [--runs N]` (no --runs: repeat until stopped).
    Chat {
        rooms: u32,
        messages: u32,
        runs: Option<u32>,
    },
    /// `schedlab hackbench -g G -l L -s S -f F [--pipe] [--threads] [--runs N]`
    /// (--runs 0 = repeat until stopped; default 1).
    Hackbench {
        groups: u32,
        loops: u32,
        datasize: u32,
        fds: u32,
        pipe: bool,
        threads: bool,
        runs: Option<u32>,
    },
    /// `schedlab fork-load [--forkers N] [--duration SECS]` (no duration: until stopped).
    ForkLoad { forkers: Option<u32> },
    /// `schedlab ref-job -j JOBS --work W [--runs N]` (--runs 0 = repeat until stopped).
    RefJob {
        jobs: u32,
        work: f64,
        runs: Option<u32>,
    },
    /// `schedlab cpu-hog --threads N` (until stopped).
    CpuHog { threads: u32 },
    /// `schedlab ipc-pingpong --kind K --pairs N --pin P [--threads]` (no duration: until
    /// stopped).
    Pingpong {
        ipc: IpcKind,
        pairs: Option<u32>,
        pin: Pin,
        threads: bool,
    },
    /// `schedlab msgbench -n BATCHES [--queues N]`.
    Msgbench { batches: u32, queues: Option<u32> },
    /// `schedlab wakeup-probe --timers N --pairs N --period USEC [--cpu CPU]` (until stopped).
    WakeupProbe {
        timers: u32,
        pairs: u32,
        /// µs between two wakeups of each thread.
        period: u32,
        /// The CPU its woken threads run on (None: unpinned).
        cpu: Option<u32>,
    },
    /// Any command, run as given (argv[0] looked up in PATH).
    Command { argv: Vec<String> },
}

impl WorkloadKind {
    /// What one counted operation is, for the throughput column.
    pub fn ops_unit(&self) -> &'static str {
        match self {
            WorkloadKind::Chat { .. } | WorkloadKind::Hackbench { .. } => "msg",
            WorkloadKind::ForkLoad { .. } => "fork",
            WorkloadKind::RefJob { .. } => "unit",
            WorkloadKind::CpuHog { .. } => "loop",
            WorkloadKind::Pingpong { .. } => "rt",
            WorkloadKind::Msgbench { .. } => "op",
            WorkloadKind::WakeupProbe { .. } => "wake",
            WorkloadKind::Command { .. } => "",
        }
    }

    /// A short name for tables and legends.
    pub fn label(&self) -> &'static str {
        match self {
            WorkloadKind::Chat { .. } => "chat",
            WorkloadKind::Hackbench { .. } => "hackbench",
            WorkloadKind::ForkLoad { .. } => "fork_load",
            WorkloadKind::RefJob { .. } => "ref-job",
            WorkloadKind::CpuHog { .. } => "cpu-hog",
            WorkloadKind::Pingpong { ipc, .. } => match ipc {
                IpcKind::Msg => "msg-pingpong",
                IpcKind::Sem => "sem-pingpong",
                IpcKind::Pipe => "pipe-pingpong",
            },
            WorkloadKind::Msgbench { .. } => "msgbench",
            WorkloadKind::WakeupProbe { .. } => "wakeup-probe",
            WorkloadKind::Command { .. } => "command",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::Program;

    #[test]
    fn pingpong_maps_to_its_subcommand() {
        let kind = WorkloadKind::Pingpong {
            ipc: IpcKind::Sem,
            pairs: Some(2),
            pin: Pin::Cross,
            threads: false,
        };
        assert_eq!(
            kind.program(),
            Program::SelfExe(
                [
                    "ipc-pingpong",
                    "--kind",
                    "sem",
                    "--pin",
                    "cross",
                    "--pairs",
                    "2"
                ]
                .map(String::from)
                .to_vec()
            )
        );
    }
}
