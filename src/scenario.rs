//! A scenario: a set of workloads with their knobs, start delays and durations, and the
//! sampling interval. Scenario files are TOML (assets/scenarios/); the built-in default is
//! contest's fork_load against a -j4 reference job in one session.
//!
//! The file form is flat, to be written by hand:
//!
//! ```toml
//! name = "contest-fork-load"
//! interval_ms = 500          # sampling interval, 100..=10000
//! verdict_window = 5         # seconds the table's verdicts cover, 1..=600
//! duration = 30              # seconds; omit = until the last finite workload ends
//!
//! [[workload]]
//! name = "fork_load"         # omit = the kind's label
//! kind = "fork-load"
//! forkers = 1                # the kind's own parameters, each with a default
//! nice = 0                   # knobs: nice, policy, rt_priority, affinity, placement
//! placement = "own-session"  # shared | own-session | cgroup (+ cgroup_weight, cpu_quota %)
//! start_delay = 0            # seconds after the scenario starts
//! duration = 10              # seconds; omit = until the scenario ends
//! ```
//!
//! Every error names `file:line:column` and says what was expected there.

use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::supervisor::{Knobs, Placement, Policy};
use crate::sys::guard::{self, Demand};
use crate::workload::chat::limits;
use crate::workload::kind::{IpcKind, Pin, WorkloadKind};

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
    /// Seconds the table's verdicts cover; None = the default (5 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_window: Option<f64>,
    pub workloads: Vec<WorkloadDecl>,
}

/// The presets shipped in assets/scenarios/, by file stem.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "contest-fork-load",
        include_str!("../assets/scenarios/contest-fork-load.toml"),
    ),
    (
        "fork-load-own-session",
        include_str!("../assets/scenarios/fork-load-own-session.toml"),
    ),
    (
        "chat-30x1000",
        include_str!("../assets/scenarios/chat-30x1000.toml"),
    ),
    (
        "hackbench",
        include_str!("../assets/scenarios/hackbench.toml"),
    ),
    (
        "sysv-pingpong-per-cpu",
        include_str!("../assets/scenarios/sysv-pingpong-per-cpu.toml"),
    ),
    ("mix", include_str!("../assets/scenarios/mix.toml")),
];

/// Sampling interval bounds, in milliseconds.
pub const INTERVAL_MS: std::ops::RangeInclusive<u64> = 100..=10_000;
const DEFAULT_INTERVAL_MS: u64 = 500;

impl Scenario {
    /// The scenario `schedlab` opens with no arguments: the 2002 contest thread's fork_load
    /// debate. Four reference-job workers and one fork loop, all in one session, so on two CPUs
    /// each of the five runnable tasks is due 40% of a CPU.
    pub fn builtin_default() -> Self {
        Self::from_toml(PRESETS[0].1, "assets/scenarios/contest-fork-load.toml")
            .expect("the built-in default scenario parses (tested)")
    }

    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        use anyhow::Context;
        let src = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read scenario {}", path.display()))?;
        Ok(Self::from_toml(&src, &path.display().to_string())?)
    }

    /// Parses a scenario from TOML text; `origin` names it in error messages.
    pub fn from_toml(src: &str, origin: &str) -> Result<Self, ScenarioError> {
        let at = |span: Option<Range<usize>>, message: String| {
            ScenarioError::new(origin, src, span, message)
        };
        let file: ScenarioFile = toml::from_str(src).map_err(|e| {
            // serde names Rust types; a TOML writer thinks in TOML's.
            let message = e
                .message()
                .trim_end()
                .replace('\n', " ")
                .replace("expected i64", "expected an integer")
                .replace("expected f64", "expected a number")
                .replace("expected u64", "expected an integer");
            at(e.span(), suggest_key(message))
        })?;
        file.into_scenario(origin)
            .map_err(|(span, message)| at(Some(span), message))
    }
}

/// A scenario that does not parse: where, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}:{line}:{column}: {message}")]
pub struct ScenarioError {
    pub origin: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

impl ScenarioError {
    fn new(origin: &str, src: &str, span: Option<Range<usize>>, message: String) -> Self {
        let offset = span.map_or(0, |s| s.start).min(src.len());
        let before = &src[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        ScenarioError {
            origin: origin.to_owned(),
            line,
            column,
            message,
        }
    }
}

/// Turns serde's "unknown field `x`, expected one of `a`, `b`, ..." into a suggestion of the
/// nearest key when there is one, since the full list is long.
fn suggest_key(message: String) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message;
    };
    let Some((key, list)) = rest.split_once("`, expected one of ") else {
        return message;
    };
    let known: Vec<&str> = list.split(", ").map(|k| k.trim_matches('`')).collect();
    let nearest = known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .min()
        .filter(|(d, k)| *d <= 2.max(k.len() / 4));
    match nearest {
        Some((_, k)) => format!("unknown key `{key}` (did you mean `{k}`?)"),
        None => format!("unknown key `{key}`, expected one of: {}", known.join(", ")),
    }
}

/// Levenshtein distance, for short keys.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// A semantic error: the span it points at and what is wrong.
type Bad = (Range<usize>, String);

/// The file as written: every value keeps its span so errors can point at it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: Option<Spanned<String>>,
    description: Option<String>,
    interval_ms: Option<Spanned<i64>>,
    duration: Option<Spanned<f64>>,
    verdict_window: Option<Spanned<f64>>,
    #[serde(default)]
    workload: Vec<Spanned<WorkloadFile>>,
}

/// One `[[workload]]` table. Kind parameters sit beside the knobs; which of them apply
/// depends on `kind`, checked after parsing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    name: Option<Spanned<String>>,
    kind: Spanned<String>,
    start_delay: Option<Spanned<f64>>,
    duration: Option<Spanned<f64>>,
    // Knobs.
    nice: Option<Spanned<i64>>,
    policy: Option<Spanned<String>>,
    rt_priority: Option<Spanned<i64>>,
    affinity: Option<Spanned<Vec<Spanned<i64>>>>,
    placement: Option<Spanned<String>>,
    cgroup_weight: Option<Spanned<i64>>,
    cpu_quota: Option<Spanned<i64>>,
    // Kind parameters.
    rooms: Option<Spanned<i64>>,
    messages: Option<Spanned<i64>>,
    runs: Option<Spanned<i64>>,
    groups: Option<Spanned<i64>>,
    loops: Option<Spanned<i64>>,
    datasize: Option<Spanned<i64>>,
    fds: Option<Spanned<i64>>,
    pipe: Option<Spanned<bool>>,
    /// A count for cpu-hog, a switch for hackbench and pingpong.
    threads: Option<Spanned<toml::Value>>,
    forkers: Option<Spanned<i64>>,
    jobs: Option<Spanned<i64>>,
    work: Option<Spanned<f64>>,
    ipc: Option<Spanned<String>>,
    pairs: Option<Spanned<i64>>,
    pin: Option<Spanned<String>>,
    batches: Option<Spanned<i64>>,
    queues: Option<Spanned<i64>>,
    argv: Option<Spanned<Vec<String>>>,
}

/// The workload kinds, as written in `kind = "..."`, with the parameters each takes.
const KINDS: &[(&str, &[&str])] = &[
    ("chat", &["rooms", "messages", "runs"]),
    (
        "hackbench",
        &[
            "groups", "loops", "datasize", "fds", "pipe", "threads", "runs",
        ],
    ),
    ("fork-load", &["forkers"]),
    ("ref-job", &["jobs", "work", "runs"]),
    ("cpu-hog", &["threads"]),
    ("pingpong", &["ipc", "pairs", "pin", "threads"]),
    ("msgbench", &["batches", "queues"]),
    ("command", &["argv"]),
];

fn span_of<T>(s: &Spanned<T>) -> Range<usize> {
    s.span()
}

/// An integer in `lo..=hi`, or an error at its span saying so.
fn int_in(v: &Spanned<i64>, what: &str, lo: i64, hi: i64) -> Result<i64, Bad> {
    let x = *v.get_ref();
    if x < lo || x > hi {
        let range = if hi == i64::from(u32::MAX) {
            format!("at least {lo}")
        } else {
            format!("{lo}..={hi}")
        };
        return Err((span_of(v), format!("{what} must be {range}, found {x}")));
    }
    Ok(x)
}

fn u32_opt(v: &Option<Spanned<i64>>, what: &str, lo: i64) -> Result<Option<u32>, Bad> {
    v.as_ref()
        .map(|v| int_in(v, what, lo, i64::from(u32::MAX)).map(|x| x as u32))
        .transpose()
}

fn u32_or(v: &Option<Spanned<i64>>, what: &str, lo: i64, default: u32) -> Result<u32, Bad> {
    Ok(u32_opt(v, what, lo)?.unwrap_or(default))
}

/// Seconds: finite and not negative (or strictly positive when `positive`).
fn seconds(v: &Spanned<f64>, what: &str, positive: bool) -> Result<f64, Bad> {
    let x = *v.get_ref();
    let ok = x.is_finite() && if positive { x > 0.0 } else { x >= 0.0 };
    if !ok {
        let want = if positive {
            "a positive number of seconds"
        } else {
            "a number of seconds, 0 or more"
        };
        return Err((span_of(v), format!("{what} must be {want}, found {x}")));
    }
    Ok(x)
}

/// One of the words `choices`, or an error listing them.
fn word<'a>(v: &Spanned<String>, what: &str, choices: &[&'a str]) -> Result<&'a str, Bad> {
    choices
        .iter()
        .find(|c| **c == v.get_ref().as_str())
        .copied()
        .ok_or_else(|| {
            (
                span_of(v),
                format!(
                    "unknown {what} `{}`, expected one of: {}",
                    v.get_ref(),
                    choices.join(", ")
                ),
            )
        })
}

impl ScenarioFile {
    fn into_scenario(self, origin: &str) -> Result<Scenario, Bad> {
        let name = match &self.name {
            Some(n) if n.get_ref().trim().is_empty() => {
                return Err((span_of(n), "name must not be empty".into()))
            }
            Some(n) => n.get_ref().clone(),
            None => Path::new(origin)
                .file_stem()
                .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned()),
        };
        let interval_ms = match &self.interval_ms {
            Some(v) => int_in(
                v,
                "interval_ms",
                *INTERVAL_MS.start() as i64,
                *INTERVAL_MS.end() as i64,
            )? as u64,
            None => DEFAULT_INTERVAL_MS,
        };
        let duration = self
            .duration
            .as_ref()
            .map(|d| seconds(d, "duration", true))
            .transpose()?;
        let verdict_window = match &self.verdict_window {
            Some(v) if !(1.0..=600.0).contains(v.get_ref()) => {
                return Err((
                    span_of(v),
                    format!(
                        "verdict_window must be from 1 to 600 seconds, found {}",
                        v.get_ref()
                    ),
                ))
            }
            v => v.as_ref().map(|v| *v.get_ref()),
        };
        if self.workload.is_empty() {
            return Err((
                0..0,
                "a scenario needs at least one [[workload]] table".into(),
            ));
        }
        let mut workloads: Vec<WorkloadDecl> = Vec::new();
        for w in &self.workload {
            let mut decl = w.get_ref().to_decl()?;
            match &w.get_ref().name {
                Some(n) => {
                    if n.get_ref().trim().is_empty() {
                        return Err((span_of(n), "workload name must not be empty".into()));
                    }
                    if workloads.iter().any(|d| d.name == decl.name) {
                        return Err((
                            span_of(n),
                            format!("workload name `{}` is used twice", decl.name),
                        ));
                    }
                }
                None => {
                    // Unnamed: the kind's label, numbered when it repeats.
                    let base = decl.name.clone();
                    let mut k = 2;
                    while workloads.iter().any(|d| d.name == decl.name) {
                        decl.name = format!("{base}-{k}");
                        k += 1;
                    }
                }
            }
            workloads.push(decl);
        }
        Ok(Scenario {
            name,
            description: self.description.unwrap_or_default(),
            interval_ms,
            duration,
            verdict_window,
            workloads,
        })
    }
}

impl WorkloadFile {
    /// The parameters present in the table, with their spans, by key.
    fn present_params(&self) -> Vec<(&'static str, Range<usize>)> {
        fn s<T>(v: &Option<Spanned<T>>) -> Option<Range<usize>> {
            v.as_ref().map(span_of)
        }
        [
            ("rooms", s(&self.rooms)),
            ("messages", s(&self.messages)),
            ("runs", s(&self.runs)),
            ("groups", s(&self.groups)),
            ("loops", s(&self.loops)),
            ("datasize", s(&self.datasize)),
            ("fds", s(&self.fds)),
            ("pipe", s(&self.pipe)),
            ("threads", s(&self.threads)),
            ("forkers", s(&self.forkers)),
            ("jobs", s(&self.jobs)),
            ("work", s(&self.work)),
            ("ipc", s(&self.ipc)),
            ("pairs", s(&self.pairs)),
            ("pin", s(&self.pin)),
            ("batches", s(&self.batches)),
            ("queues", s(&self.queues)),
            ("argv", s(&self.argv)),
        ]
        .into_iter()
        .filter_map(|(k, s)| s.map(|s| (k, s)))
        .collect()
    }

    fn to_decl(&self) -> Result<WorkloadDecl, Bad> {
        let kinds: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
        // Accept the subcommand's name too, as people will type it.
        let kind_word = if self.kind.get_ref() == "ipc-pingpong" {
            "pingpong"
        } else {
            word(&self.kind, "workload kind", &kinds)?
        };
        let takes = KINDS.iter().find(|(k, _)| *k == kind_word).unwrap().1;
        for (key, span) in self.present_params() {
            if !takes.contains(&key) {
                let takes = if takes.is_empty() {
                    "no parameters".to_owned()
                } else {
                    takes.join(", ")
                };
                return Err((
                    span,
                    format!("`{key}` does not apply to kind {kind_word} (it takes: {takes})"),
                ));
            }
        }
        let kind = self.kind_params(kind_word)?;
        let name = self
            .name
            .as_ref()
            .map_or_else(|| kind.label().to_owned(), |n| n.get_ref().clone());
        Ok(WorkloadDecl {
            name,
            kind,
            knobs: self.knobs()?,
            start_delay: self
                .start_delay
                .as_ref()
                .map(|v| seconds(v, "start_delay", false))
                .transpose()?
                .unwrap_or(0.0),
            duration: self
                .duration
                .as_ref()
                .map(|v| seconds(v, "duration", true))
                .transpose()?,
        })
    }

    fn threads_switch(&self) -> Result<bool, Bad> {
        match &self.threads {
            None => Ok(false),
            Some(v) => match v.get_ref() {
                toml::Value::Boolean(b) => Ok(*b),
                other => Err((
                    span_of(v),
                    format!(
                        "threads must be true or false here, found {}",
                        other.type_str()
                    ),
                )),
            },
        }
    }

    fn kind_params(&self, kind: &str) -> Result<WorkloadKind, Bad> {
        Ok(match kind {
            "chat" => WorkloadKind::Chat {
                rooms: u32_or(&self.rooms, "rooms", 1, 10)?,
                messages: match &self.messages {
                    Some(m) => crate::workload::chat::protocol::check_messages(*m.get_ref())
                        .map_err(|e| (span_of(m), e))?,
                    None => 100,
                },
                runs: u32_opt(&self.runs, "runs", 1)?,
            },
            "hackbench" => WorkloadKind::Hackbench {
                groups: u32_or(&self.groups, "groups", 1, 10)?,
                loops: u32_or(&self.loops, "loops", 1, 100)?,
                datasize: u32_or(&self.datasize, "datasize", 1, 100)?,
                fds: u32_or(&self.fds, "fds", 1, 20)?,
                pipe: self.pipe.as_ref().is_some_and(|p| *p.get_ref()),
                threads: self.threads_switch()?,
                runs: u32_opt(&self.runs, "runs", 0)?,
            },
            "fork-load" => WorkloadKind::ForkLoad {
                forkers: u32_opt(&self.forkers, "forkers", 1)?,
            },
            "ref-job" => WorkloadKind::RefJob {
                jobs: u32_or(&self.jobs, "jobs", 1, 4)?,
                work: self
                    .work
                    .as_ref()
                    .map(|w| seconds(w, "work", true))
                    .transpose()?
                    .unwrap_or(1.0),
                runs: u32_opt(&self.runs, "runs", 0)?,
            },
            "cpu-hog" => WorkloadKind::CpuHog {
                threads: match &self.threads {
                    None => 1,
                    Some(v) => match v.get_ref() {
                        toml::Value::Integer(n) if (1..=i64::from(u32::MAX)).contains(n) => {
                            *n as u32
                        }
                        other => {
                            return Err((
                                span_of(v),
                                format!(
                                    "threads must be a count of at least 1 here, found {}",
                                    other
                                ),
                            ))
                        }
                    },
                },
            },
            "pingpong" => WorkloadKind::Pingpong {
                ipc: match &self.ipc {
                    None => IpcKind::Msg,
                    Some(v) => match word(v, "ipc", &["msg", "sem", "pipe"])? {
                        "msg" => IpcKind::Msg,
                        "sem" => IpcKind::Sem,
                        _ => IpcKind::Pipe,
                    },
                },
                pairs: u32_opt(&self.pairs, "pairs", 1)?,
                pin: match &self.pin {
                    None => Pin::Same,
                    Some(v) => match word(v, "pin", &["same", "cross", "none"])? {
                        "same" => Pin::Same,
                        "cross" => Pin::Cross,
                        _ => Pin::None,
                    },
                },
                threads: self.threads_switch()?,
            },
            "msgbench" => WorkloadKind::Msgbench {
                batches: u32_or(&self.batches, "batches", 1, 10)?,
                queues: u32_opt(&self.queues, "queues", 1)?,
            },
            "command" => match &self.argv {
                Some(a) if !a.get_ref().is_empty() && !a.get_ref()[0].is_empty() => {
                    WorkloadKind::Command {
                        argv: a.get_ref().clone(),
                    }
                }
                Some(a) => {
                    return Err((span_of(a), "argv must name a program to run".into()));
                }
                None => {
                    return Err((
                        span_of(&self.kind),
                        "kind command needs argv = [\"program\", \"arg\", ...]".into(),
                    ))
                }
            },
            _ => unreachable!("kind words come from KINDS"),
        })
    }

    fn knobs(&self) -> Result<Knobs, Bad> {
        let policy = match &self.policy {
            None => Policy::Other,
            Some(v) => match word(v, "policy", &["other", "batch", "idle", "fifo", "rr"])? {
                "other" => Policy::Other,
                "batch" => Policy::Batch,
                "idle" => Policy::Idle,
                "fifo" => Policy::Fifo,
                _ => Policy::Rr,
            },
        };
        let rt_priority = match (&self.rt_priority, policy.is_realtime()) {
            (Some(v), true) => int_in(v, "rt_priority", 1, 99)? as u8,
            (Some(v), false) => {
                return Err((
                    span_of(v),
                    "rt_priority applies only with policy \"fifo\" or \"rr\"".into(),
                ))
            }
            (None, true) => 1,
            (None, false) => 0,
        };
        let placement = match &self.placement {
            None => Placement::Shared,
            Some(v) => match word(v, "placement", &["shared", "own-session", "cgroup"])? {
                "shared" => Placement::Shared,
                "own-session" => Placement::OwnSession,
                _ => Placement::Cgroup {
                    weight: match &self.cgroup_weight {
                        Some(w) => int_in(w, "cgroup_weight", 1, 10_000)? as u32,
                        None => 100,
                    },
                },
            },
        };
        if let (Some(w), false) = (
            &self.cgroup_weight,
            matches!(placement, Placement::Cgroup { .. }),
        ) {
            return Err((
                span_of(w),
                "cgroup_weight applies only with placement = \"cgroup\"".into(),
            ));
        }
        let cpu_quota = match (
            &self.cpu_quota,
            matches!(placement, Placement::Cgroup { .. }),
        ) {
            (None, _) => None,
            (Some(q), true) => Some(int_in(
                q,
                "cpu_quota (% of one CPU)",
                1,
                crate::supervisor::MAX_CPU_QUOTA as i64,
            )? as u32),
            (Some(q), false) => {
                return Err((
                    span_of(q),
                    "cpu_quota applies only with placement = \"cgroup\"".into(),
                ))
            }
        };
        let affinity = match &self.affinity {
            None => None,
            Some(list) if list.get_ref().is_empty() => {
                return Err((
                    span_of(list),
                    "affinity must list at least one CPU (omit it for all CPUs)".into(),
                ))
            }
            Some(list) => Some(
                list.get_ref()
                    .iter()
                    .map(|c| int_in(c, "a CPU number", 0, 4095).map(|c| c as usize))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(Knobs {
            nice: self
                .nice
                .as_ref()
                .map(|v| int_in(v, "nice", -20, 19))
                .transpose()?
                .unwrap_or(0) as i32,
            policy,
            rt_priority,
            affinity,
            placement,
            cpu_quota,
        })
    }
}

/// Refuses a scenario whose workloads, all alive at once, do not fit.
pub fn check_scenario(scenario: &Scenario, force: bool) -> anyhow::Result<()> {
    guard::check(
        &format!("scenario `{}`", scenario.name),
        scenario_demand(scenario),
        force,
    )
}

/// Every workload of the scenario alive at once: the worst case the run can reach.
pub fn scenario_demand(scenario: &Scenario) -> Demand {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    scenario
        .workloads
        .iter()
        .map(|w| match &w.kind {
            WorkloadKind::Chat { rooms, .. } => {
                Demand::threads(*rooms as u64 * limits::THREADS_PER_ROOM * 2)
            }
            WorkloadKind::Hackbench {
                groups,
                fds,
                threads,
                ..
            } => {
                let n = *groups as u64 * *fds as u64 * 2;
                if *threads {
                    Demand::threads(n)
                } else {
                    Demand::processes(n)
                }
            }
            WorkloadKind::ForkLoad { forkers } => {
                Demand::processes(2 * forkers.unwrap_or(1) as u64)
            }
            WorkloadKind::RefJob { jobs, .. } => Demand::processes(*jobs as u64 + 1),
            WorkloadKind::CpuHog { threads } => Demand::threads(*threads as u64),
            WorkloadKind::Pingpong { pairs, threads, .. } => {
                let n = 2 * pairs.map_or(cpus, u64::from);
                if *threads {
                    Demand::threads(n)
                } else {
                    Demand::processes(n)
                }
            }
            WorkloadKind::Msgbench { .. } | WorkloadKind::Command { .. } => Demand::processes(1),
        })
        .fold(Demand::default(), Demand::plus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_default_is_the_contest_preset() {
        let s = Scenario::builtin_default();
        assert_eq!(
            s,
            Scenario {
                name: "contest-fork-load".into(),
                description: "contest's fork_load against a -j4 reference job, in one session"
                    .into(),
                interval_ms: 500,
                duration: Some(30.0),
                verdict_window: None,
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
        );
    }

    #[test]
    fn unknown_keys_suggest_the_nearest() {
        let m = "unknown field `forker`, expected one of `name`, `forkers`".to_owned();
        assert_eq!(
            suggest_key(m),
            "unknown key `forker` (did you mean `forkers`?)"
        );
        let m = "unknown field `zzz`, expected one of `name`, `kind`".to_owned();
        assert_eq!(
            suggest_key(m),
            "unknown key `zzz`, expected one of: name, kind"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn error_positions_are_one_based_lines_and_columns() {
        let e = ScenarioError::new("f.toml", "a = 1\nbb = 2\n", Some(9..10), "x".into());
        assert_eq!((e.line, e.column), (2, 4));
        assert_eq!(e.to_string(), "f.toml:2:4: x");
    }
}
