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

use crate::finding::Finding;
use crate::knobs::{
    Knobs, Placement, Policy, CGROUP_WEIGHT, DEFAULT_CGROUP_WEIGHT, MAX_CPU_QUOTA, NICE,
    RT_PRIORITY,
};
use crate::sys::kernel::guard::{self, Demand};
use crate::workload::registry::{self, Absent, Kind, Param, Ty, Value, WorkloadKind};

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
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Sampling interval in milliseconds (100..=10000).
    pub interval_ms: u64,
    /// Seconds a headless run lasts; None = until the last finite workload ends.
    #[serialize_always]
    pub duration: Option<f64>,
    /// Seconds the table's verdicts cover; None = the default (5 s).
    pub verdict_window: Option<f64>,
    pub workloads: Vec<WorkloadDecl>,
    /// What it reproduces, when it is a finding (a `[finding]` table: src/finding.rs).
    pub finding: Option<Finding>,
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
pub(crate) const INTERVAL_MS: std::ops::RangeInclusive<u64> = 100..=10_000;
const DEFAULT_INTERVAL_MS: u64 = 500;

impl Scenario {
    /// The scenario `schedlab` opens with no arguments: the 2002 contest thread's fork_load
    /// debate. Four reference-job workers and one fork loop, all in one session, so on two CPUs
    /// each of the five runnable tasks is due 40% of a CPU.
    pub fn builtin_default() -> Self {
        Self::from_toml(PRESETS[0].1, "assets/scenarios/contest-fork-load.toml")
            .expect("the built-in default scenario parses (tested)")
    }

    /// A scenario of nothing, by this name: what a dashboard watching a served lab names
    /// (the lab runs its own).
    pub fn empty(name: &str) -> Self {
        Scenario {
            name: name.into(),
            description: "a lab served elsewhere".into(),
            ..Self::attached_only()
        }
    }

    /// The scenario of `run --attach` without a scenario: only what is attached, until
    /// `--duration`.
    pub fn attached_only() -> Self {
        Scenario {
            name: "attached".into(),
            description: "processes schedlab did not start, watched".into(),
            interval_ms: DEFAULT_INTERVAL_MS,
            duration: None,
            verdict_window: None,
            workloads: Vec::new(),
            finding: None,
        }
    }

    /// Adds an `attach` workload for each selector, named as the selector (`pid:1234`),
    /// numbered when that name is taken.
    pub fn attach(&mut self, selectors: &[crate::probe::Selector]) {
        for sel in selectors {
            let base = sel.to_string();
            let mut name = base.clone();
            let mut k = 2;
            while self.workloads.iter().any(|w| w.name == name) {
                name = format!("{base}-{k}");
                k += 1;
            }
            self.workloads.push(WorkloadDecl {
                name,
                kind: WorkloadKind::attach(sel),
                knobs: Knobs::default(),
                start_delay: 0.0,
                duration: None,
            });
        }
    }

    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        use anyhow::Context;
        let src = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read scenario {}", path.display()))?;
        Ok(Self::from_toml(&src, &path.display().to_string())?)
    }

    /// A scenario file, or a preset by name (`chat-30x1000`, with or without `.toml`), as
    /// every command that takes a scenario accepts it; with where it came from.
    pub fn open(arg: &str) -> anyhow::Result<(Self, Option<String>)> {
        let path = Path::new(arg);
        if path.exists() {
            return Ok((Self::load(path)?, Some(arg.to_owned())));
        }
        let stem = arg.strip_suffix(".toml").unwrap_or(arg);
        if let Some((name, src)) = PRESETS.iter().find(|(n, _)| *n == stem) {
            let origin = format!("assets/scenarios/{name}.toml");
            return Ok((Self::from_toml(src, &origin)?, Some(origin)));
        }
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        anyhow::bail!(
            "no scenario file `{arg}`, and no preset of that name (presets: {})",
            names.join(", ")
        )
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
        // The same text again, every workload table as keys and values with their spans:
        // which keys a table may hold depends on its kind, read from the registry.
        let raw: RawFile = toml::from_str(src).map_err(|e| at(e.span(), e.message().into()))?;
        file.into_scenario(origin, raw)
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
    suggest(key, &known)
}

/// "unknown key", with the nearest of `known` when one is close.
fn suggest(key: &str, known: &[&str]) -> String {
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
    finding: Option<Spanned<Finding>>,
}

/// One `[[workload]]` table: the keys every kind has. Its kind's own parameters sit beside
/// them and are read from the same table as a [`RawTable`].
#[derive(Deserialize)]
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
}

/// The keys of [`WorkloadFile`].
const COMMON_KEYS: &[&str] = &[
    "name",
    "kind",
    "start_delay",
    "duration",
    "nice",
    "policy",
    "rt_priority",
    "affinity",
    "placement",
    "cgroup_weight",
    "cpu_quota",
];

/// A workload table as written: every key and value with its span.
type RawTable = std::collections::BTreeMap<Spanned<String>, Spanned<toml::Value>>;

#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    workload: Vec<RawTable>,
}

fn span_of<T>(s: &Spanned<T>) -> Range<usize> {
    s.span()
}

/// An integer in `lo..=hi` (a scenario's or a knob's; kind parameters are the registry's), or
/// an error at its span saying so.
fn int_in(v: &Spanned<i64>, what: &str, lo: i64, hi: i64) -> Result<i64, Bad> {
    let x = *v.get_ref();
    if x < lo || x > hi {
        return Err((span_of(v), format!("{what} must be {lo}..={hi}, found {x}")));
    }
    Ok(x)
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
        .ok_or_else(|| unknown_word(v, what, choices))
}

fn unknown_word(v: &Spanned<String>, what: &str, choices: &[&str]) -> Bad {
    (
        span_of(v),
        format!(
            "unknown {what} `{}`, expected one of: {}",
            v.get_ref(),
            choices.join(", ")
        ),
    )
}

impl ScenarioFile {
    fn into_scenario(self, origin: &str, raw: RawFile) -> Result<Scenario, Bad> {
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
        for (w, table) in self.workload.iter().zip(&raw.workload) {
            let mut decl = w.get_ref().to_decl(table)?;
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
        let finding = match self.finding {
            Some(f) => {
                let names: Vec<String> = workloads.iter().map(|w| w.name.clone()).collect();
                f.get_ref().check(&names).map_err(|m| (span_of(&f), m))?;
                Some(f.into_inner())
            }
            None => None,
        };
        Ok(Scenario {
            name,
            description: self.description.unwrap_or_default(),
            interval_ms,
            duration,
            verdict_window,
            workloads,
            finding,
        })
    }
}

impl WorkloadFile {
    fn to_decl(&self, table: &RawTable) -> Result<WorkloadDecl, Bad> {
        let words: Vec<&str> = registry::KINDS.iter().map(|k| k.word).collect();
        let kind = registry::find(self.kind.get_ref())
            .ok_or_else(|| unknown_word(&self.kind, "workload kind", &words))?;
        let kind = kind_params(kind, table, span_of(&self.kind))?;
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

    /// The knobs, each checked where it stands: the policy and its priority, the placement
    /// with what only a cgroup takes, the CPUs, the nice level.
    fn knobs(&self) -> Result<Knobs, Bad> {
        let (policy, rt_priority) = self.policy()?;
        let (placement, cpu_quota) = self.placement()?;
        Ok(Knobs {
            affinity: self.affinity()?,
            nice: self
                .nice
                .as_ref()
                .map(|v| int_in(v, "nice", (*NICE.start()).into(), (*NICE.end()).into()))
                .transpose()?
                .unwrap_or(0) as i32,
            policy,
            rt_priority,
            placement,
            cpu_quota,
        })
    }

    /// The scheduling policy and its real-time priority (which only fifo and rr take).
    fn policy(&self) -> Result<(Policy, u8), Bad> {
        let policy = match &self.policy {
            None => Policy::Other,
            Some(v) => {
                Policy::from_word(word(v, "policy", &Policy::words())?).expect("one of the words")
            }
        };
        let rt_priority = match (&self.rt_priority, policy.is_realtime()) {
            (Some(v), true) => int_in(
                v,
                "rt_priority",
                (*RT_PRIORITY.start()).into(),
                (*RT_PRIORITY.end()).into(),
            )? as u8,
            (Some(v), false) => {
                return Err((
                    span_of(v),
                    "rt_priority applies only with policy \"fifo\" or \"rr\"".into(),
                ))
            }
            (None, true) => *RT_PRIORITY.start(),
            (None, false) => 0,
        };
        Ok((policy, rt_priority))
    }

    /// Where the workload runs, and its CPU quota: a cgroup's weight and quota apply only
    /// with placement = "cgroup".
    fn placement(&self) -> Result<(Placement, Option<u32>), Bad> {
        let placement = match &self.placement {
            None => Placement::Shared,
            Some(v) => {
                let weight = match &self.cgroup_weight {
                    Some(w) => int_in(
                        w,
                        "cgroup_weight",
                        (*CGROUP_WEIGHT.start()).into(),
                        (*CGROUP_WEIGHT.end()).into(),
                    )? as u32,
                    None => DEFAULT_CGROUP_WEIGHT,
                };
                let w = word(v, "placement", &Placement::FILE_WORDS)?;
                Placement::from_word(w, weight).expect("one of the words")
            }
        };
        let in_cgroup = matches!(placement, Placement::Cgroup { .. });
        if let (Some(w), false) = (&self.cgroup_weight, in_cgroup) {
            return Err((
                span_of(w),
                "cgroup_weight applies only with placement = \"cgroup\"".into(),
            ));
        }
        let cpu_quota = match (&self.cpu_quota, in_cgroup) {
            (None, _) => None,
            (Some(q), true) => {
                Some(int_in(q, "cpu_quota (% of one CPU)", 1, MAX_CPU_QUOTA as i64)? as u32)
            }
            (Some(q), false) => {
                return Err((
                    span_of(q),
                    "cpu_quota applies only with placement = \"cgroup\"".into(),
                ))
            }
        };
        Ok((placement, cpu_quota))
    }

    /// The CPUs it may run on; None: all of them.
    fn affinity(&self) -> Result<Option<Vec<usize>>, Bad> {
        match &self.affinity {
            None => Ok(None),
            Some(list) if list.get_ref().is_empty() => Err((
                span_of(list),
                "affinity must list at least one CPU (omit it for all CPUs)".into(),
            )),
            Some(list) => list
                .get_ref()
                .iter()
                .map(|c| int_in(c, "a CPU number", 0, 4095).map(|c| c as usize))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
        }
    }
}

/// The kind's parameters from its table: each key checked by the registry's declaration of
/// it, with the message every other source gives; keys of no kind, or of another kind, are
/// refused where they stand.
fn kind_params(
    kind: &'static Kind,
    table: &RawTable,
    kind_span: Range<usize>,
) -> Result<WorkloadKind, Bad> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    for (key, value) in entries {
        let key_text = key.get_ref().as_str();
        if COMMON_KEYS.contains(&key_text) || kind.params.iter().any(|p| p.key == key_text) {
            continue;
        }
        if registry::KINDS
            .iter()
            .any(|k| k.params.iter().any(|p| p.key == key_text))
        {
            let takes = kind.keys();
            let takes = if takes.is_empty() {
                "no parameters".to_owned()
            } else {
                takes.join(", ")
            };
            return Err((
                value.span(),
                format!(
                    "`{key_text}` does not apply to kind {} (it takes: {takes})",
                    kind.word
                ),
            ));
        }
        let mut known: Vec<&str> = COMMON_KEYS.to_vec();
        for p in registry::KINDS.iter().flat_map(|k| k.params) {
            if !known.contains(&p.key) {
                known.push(p.key);
            }
        }
        return Err((key.span(), suggest(key_text, &known)));
    }
    let values = kind
        .params
        .iter()
        .map(|p| match table.get(p.key) {
            Some(v) => param_value(p, v.get_ref()).map_err(|m| (v.span(), m)),
            None if matches!(p.ty, Ty::Words) => Err((
                kind_span.clone(),
                format!(
                    "kind {} needs {} = [\"program\", \"arg\", ...]",
                    kind.word, p.key
                ),
            )),
            None => Ok(p.absent()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let built = kind.build(values);
    if built.attached() {
        check_attach(&built, table, kind_span)?;
    }
    Ok(built)
}

/// An `attach` workload names exactly one selector, and it matches something on this machine
/// now: the process or session exists, the name is a process's, the path is a cgroup. Each
/// error points at the key or value it is about.
fn check_attach(kind: &WorkloadKind, table: &RawTable, kind_span: Range<usize>) -> Result<(), Bad> {
    use crate::probe::attach::{KEYS, ONE_OF};
    let mut given: Vec<(&Spanned<String>, &Spanned<toml::Value>)> = table
        .iter()
        .filter(|(k, _)| KEYS.contains(&k.get_ref().as_str()))
        .collect();
    given.sort_by_key(|(k, _)| k.span().start);
    match given.as_slice() {
        [] => Err((kind_span, ONE_OF.into())),
        [_, (second, _), ..] => Err((second.span(), ONE_OF.into())),
        [(_, value)] => {
            let sel = kind
                .selector()
                .expect("an attach kind")
                .map_err(|m| (value.span(), m))?;
            sel.resolve_here()
                .map(|_| ())
                .map_err(|m| (value.span(), m))
        }
    }
}

/// One parameter's value as TOML wrote it, checked against its declaration.
fn param_value(p: &Param, v: &toml::Value) -> Result<Value, String> {
    let found = |want: &str| format!("{} must be {want}, found {v}", p.key);
    match (&p.ty, v) {
        (Ty::Count { .. }, toml::Value::Integer(n)) => {
            p.check_count(*n).map(|n| Value::Count(Some(n)))
        }
        (
            Ty::Count {
                absent: Absent::Auto { word: Some(w), .. },
                ..
            },
            toml::Value::String(s),
        ) if s == w => Ok(Value::Count(None)),
        (
            Ty::Count {
                absent: Absent::Auto { word: Some(w), .. },
                ..
            },
            _,
        ) => Err(found(&format!("an integer or \"{w}\""))),
        (Ty::Count { .. }, _) => Err(found("an integer")),
        (Ty::Amount { .. }, toml::Value::Float(x)) => p.check_amount(*x).map(Value::Amount),
        (Ty::Amount { .. }, toml::Value::Integer(n)) => {
            p.check_amount(*n as f64).map(Value::Amount)
        }
        (Ty::Amount { .. }, _) => Err(found("a number")),
        (Ty::Switch, toml::Value::Boolean(b)) => Ok(Value::Switch(*b)),
        (Ty::Switch, _) => Err(found("true or false")),
        (Ty::Choice { .. }, toml::Value::String(s)) => p.check_word(s).map(Value::Word),
        (Ty::Choice { words, .. }, _) => Err(found(&format!("one of: {}", words.join(", ")))),
        (Ty::Words, toml::Value::Array(items)) => {
            let words: Option<Vec<String>> = items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect();
            match words {
                Some(w) if w.first().is_some_and(|w0| !w0.is_empty()) => Ok(Value::Words(w)),
                Some(_) => Err(format!("{} must name a program to run", p.key)),
                None => Err(found("a list of strings")),
            }
        }
        (Ty::Words, _) => Err(found("a list of strings")),
        (Ty::Text, toml::Value::String(s)) => Ok(Value::Text(Some(s.clone()))),
        (Ty::Text, _) => Err(found("a string")),
    }
}

/// Refuses a scenario whose workloads, all alive at once, do not fit.
pub(crate) fn check_scenario(scenario: &Scenario, force: bool) -> anyhow::Result<()> {
    guard::check(
        &format!("scenario `{}`", scenario.name),
        scenario_demand(scenario),
        force,
    )
}

/// Every workload of the scenario alive at once: the worst case the run can reach.
pub(crate) fn scenario_demand(scenario: &Scenario) -> Demand {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    scenario
        .workloads
        .iter()
        .map(|w| w.kind.demand(cpus))
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
                finding: None,
            }
        );
    }

    /// The registry's test-only kind (workload/registry/toy.rs) is read from a scenario file,
    /// by its name and its old one, with its limits, and nothing is written for it here.
    #[test]
    fn a_kind_in_the_registry_is_read_from_scenario_files() {
        let s = Scenario::from_toml("[[workload]]\nkind = \"toy\"\nspins = 7\n", "t").unwrap();
        assert_eq!(s.workloads[0].kind, WorkloadKind::Toy { spins: 7 });
        assert_eq!(s.workloads[0].name, "toy");
        let s = Scenario::from_toml("[[workload]]\nkind = \"plaything\"\n", "t").unwrap();
        assert_eq!(s.workloads[0].kind, WorkloadKind::Toy { spins: 3 });
        let e = Scenario::from_toml("[[workload]]\nkind = \"toy\"\nspins = 0\n", "t");
        assert_eq!(e.unwrap_err().message, "spins must be at least 1, found 0");
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
