//! The workloads a scenario, the dashboard's picker or contest can launch, and how each maps
//! onto a `schedlab` subcommand. This is the contract between the launchers and the
//! load generators: every argument listed here must be accepted by that subcommand.

use serde::{Deserialize, Serialize};

use crate::supervisor::Program;

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
            WorkloadKind::Command { .. } => "command",
        }
    }

    /// The program that runs it.
    pub fn program(&self) -> Program {
        let s = |v: &dyn ToString| v.to_string();
        let args: Vec<String> = match self {
            WorkloadKind::Chat {
                rooms,
                messages,
                runs,
            } => {
                let mut a = vec!["chat-bench".into(), s(rooms), s(messages)];
                if let Some(n) = runs {
                    a.extend(["--runs".into(), s(n)]);
                }
                a
            }
            WorkloadKind::Hackbench {
                groups,
                loops,
                datasize,
                fds,
                pipe,
                threads,
                runs,
            } => {
                let mut a = vec![
                    "hackbench".into(),
                    "-g".into(),
                    s(groups),
                    "-l".into(),
                    s(loops),
                    "-s".into(),
                    s(datasize),
                    "-f".into(),
                    s(fds),
                ];
                if *pipe {
                    a.push("--pipe".into());
                }
                if *threads {
                    a.push("--threads".into());
                }
                if let Some(n) = runs {
                    a.extend(["--runs".into(), s(n)]);
                }
                a
            }
            WorkloadKind::ForkLoad { forkers } => {
                let mut a = vec!["fork-load".into()];
                if let Some(n) = forkers {
                    a.extend(["--forkers".into(), s(n)]);
                }
                a
            }
            WorkloadKind::RefJob { jobs, work, runs } => {
                let mut a = vec![
                    "ref-job".into(),
                    "-j".into(),
                    s(jobs),
                    "--work".into(),
                    s(work),
                ];
                if let Some(n) = runs {
                    a.extend(["--runs".into(), s(n)]);
                }
                a
            }
            WorkloadKind::CpuHog { threads } => {
                vec!["cpu-hog".into(), "--threads".into(), s(threads)]
            }
            WorkloadKind::Pingpong {
                ipc,
                pairs,
                pin,
                threads,
            } => {
                let mut a = vec![
                    "ipc-pingpong".into(),
                    "--kind".into(),
                    enum_word(ipc),
                    "--pin".into(),
                    enum_word(pin),
                ];
                if let Some(n) = pairs {
                    a.extend(["--pairs".into(), s(n)]);
                }
                if *threads {
                    a.push("--threads".into());
                }
                a
            }
            WorkloadKind::Msgbench { batches, queues } => {
                let mut a = vec!["msgbench".into(), "-n".into(), s(batches)];
                if let Some(n) = queues {
                    a.extend(["--queues".into(), s(n)]);
                }
                a
            }
            WorkloadKind::Command { argv } => return Program::Command(argv.clone()),
        };
        Program::SelfExe(args)
    }
}

/// The kebab-case word serde uses for a unit enum variant.
fn enum_word<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| j.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
