//! A suite's results file: every finding's figures from its repeats (what each workload
//! received and was due, the verdicts the frames gave, what the kernel's rules say it is due),
//! with the machine it ran on, as text, Markdown for a mailing list, or JSON that `compare`
//! reads back (docs/findings.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::finding::{Finding, DUE_TOLERANCE};
use crate::model::{Frame, Verdict};
use crate::record::machine::Host;
use crate::record::results::{Provenance, RunResults};
use crate::record::text;

/// The suite file's own version (its findings' results follow the results schema).
pub const SUITE_SCHEMA_VERSION: u32 = 1;

/// A whole suite run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteResults {
    pub suite_schema_version: u32,
    /// Which schedlab ran it, when and how, as a results file has it.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub host: Host,
    /// `--quick`: one repeat of short runs.
    pub quick: bool,
    pub repeats: u32,
    pub findings: Vec<FindingResult>,
}

/// One finding: what it states, and what this kernel did.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingResult {
    pub name: String,
    pub title: String,
    pub text: String,
    /// Why it did not run here (a requirement this machine lacks), when it did not.
    pub skipped: Option<String>,
    /// Per workload, over the settled part of every repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<FindingWorkload>,
    /// Jain's index over the workloads' fairness ratios, mean over the settled frames.
    pub jain_index: Option<f64>,
    /// The rest of the machine took this many CPUs on average: the rules' due figures hold
    /// for a quiet machine.
    #[serde(default)]
    pub rest_cpu: f64,
    /// The run's full results (statistics across repeats, latency), as `run` writes them.
    pub results: Option<RunResults>,
}

/// One workload of a finding.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingWorkload {
    pub name: String,
    /// CPUs, mean over the settled frames of every repeat.
    pub received: f64,
    pub due: f64,
    /// What the kernel's rules make it due on a quiet machine (the finding's `due`), when
    /// the finding states it.
    pub rules_due: Option<f64>,
    /// The verdict most settled frames gave, and how many frames gave each.
    pub verdict: Verdict,
    pub verdicts: BTreeMap<String, usize>,
    /// Share of its time its cgroup's quota held it off the CPU, in %.
    #[serde(default)]
    pub throttled_pct: f64,
    /// Its mean wakeup delay (µs) and migrations per second, where known.
    pub wake_delay_us: Option<f64>,
    pub migrations_per_sec: Option<f64>,
}

impl FindingWorkload {
    /// received / due, or None where the due is too small for a ratio to mean anything.
    pub fn ratio(&self) -> Option<f64> {
        (self.due >= crate::model::frame::MIN_FAIR).then(|| self.received / self.due)
    }

    /// Whether the model's due agrees with the rules' (None: the finding states none).
    /// `rest_cpu`: what the rest of the machine took meanwhile. The rules' figures are a
    /// quiet machine's; the rest's tasks are due their part of the same CPUs, so the due may
    /// be under them by up to that much (the contest loop beside a `ref-job` on both CPUs,
    /// with the rest at 0.05 CPU: 1.297 for the rules' 1.333).
    pub fn due_agrees(&self, rest_cpu: f64) -> Option<bool> {
        self.rules_due.map(|r| {
            self.due <= r + DUE_TOLERANCE && self.due >= r - DUE_TOLERANCE - rest_cpu.max(0.0)
        })
    }
}

impl FindingResult {
    /// A finding this machine could not run.
    pub fn skipped(name: &str, f: &Finding, why: String) -> FindingResult {
        FindingResult {
            name: name.into(),
            title: f.title.clone(),
            text: f.text.clone(),
            skipped: Some(why),
            workloads: Vec::new(),
            jain_index: None,
            rest_cpu: 0.0,
            results: None,
        }
    }

    /// A finding's figures from each repeat's Frames, from `settle` seconds on (start-up and
    /// a first verdict window left out).
    pub fn from_repeats(
        name: &str,
        f: &Finding,
        workloads: &[String],
        repeats: &[Vec<Frame>],
        settle: f64,
        results: RunResults,
    ) -> FindingResult {
        let settled: Vec<&Frame> = repeats
            .iter()
            .flat_map(|frames| frames.iter().filter(|fr| fr.t >= settle))
            .collect();
        let mean = |xs: &mut dyn Iterator<Item = f64>| {
            let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
            (n > 0).then(|| sum / n as f64)
        };
        let rows = workloads
            .iter()
            .map(|name| {
                let ws: Vec<_> = settled
                    .iter()
                    .filter_map(|fr| fr.workloads.iter().find(|w| &w.name == name))
                    .collect();
                let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
                for w in &ws {
                    *verdicts.entry(verdict_word(w.verdict).into()).or_default() += 1;
                }
                let verdict = [
                    Verdict::Fair,
                    Verdict::Ahead,
                    Verdict::Short,
                    Verdict::Starved,
                    Verdict::None,
                ]
                .into_iter()
                .max_by_key(|v| verdicts.get(verdict_word(*v)).copied().unwrap_or(0))
                .unwrap_or_default();
                FindingWorkload {
                    name: name.clone(),
                    received: mean(&mut ws.iter().map(|w| w.cpu_received)).unwrap_or(0.0),
                    due: mean(&mut ws.iter().map(|w| w.cpu_fair)).unwrap_or(0.0),
                    rules_due: f.due.get(name).copied(),
                    verdict,
                    verdicts,
                    throttled_pct: mean(&mut ws.iter().map(|w| w.throttled_pct)).unwrap_or(0.0),
                    wake_delay_us: mean(&mut ws.iter().filter_map(|w| w.wake_delay_us)),
                    migrations_per_sec: mean(&mut ws.iter().filter_map(|w| w.migrations_per_sec)),
                }
            })
            .collect();
        FindingResult {
            name: name.into(),
            title: f.title.clone(),
            text: f.text.clone(),
            skipped: None,
            workloads: rows,
            jain_index: mean(&mut settled.iter().map(|fr| fr.jain_index)),
            rest_cpu: mean(&mut settled.iter().map(|fr| fr.machine.rest_cpu_received))
                .unwrap_or(0.0),
            results: Some(results),
        }
    }

    /// Workloads whose model due is off the rules' by more than the tolerance.
    pub fn due_disagreements(&self) -> Vec<&FindingWorkload> {
        self.workloads
            .iter()
            .filter(|w| w.due_agrees(self.rest_cpu) == Some(false))
            .collect()
    }
}

/// A verdict's word in files and reports ("none" where the due is too small for one).
pub fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::None => "none",
        v => v.word(),
    }
}

/// The rest of the machine took more than this: the rules' quiet-machine due may not hold.
const BUSY_REST: f64 = 0.1;

impl SuiteResults {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("suite results serialize") + "\n"
    }

    /// Reads a file written by `schedlab suite --format json`, strictly.
    pub fn from_json(text: &str, origin: &str) -> Result<Self> {
        #[derive(Deserialize)]
        struct Version {
            suite_schema_version: Option<u32>,
        }
        let v: Version = serde_json::from_str(text)
            .with_context(|| format!("{origin} is not a schedlab JSON file"))?;
        match v.suite_schema_version {
            Some(SUITE_SCHEMA_VERSION) => {}
            Some(other) => bail!(
                "{origin} has suite schema version {other}; this schedlab reads version \
                 {SUITE_SCHEMA_VERSION}"
            ),
            None => bail!("{origin} is not a schedlab suite file (no suite_schema_version)"),
        }
        serde_json::from_str(text)
            .with_context(|| format!("{origin} does not follow the suite schema"))
    }

    /// Whether a JSON text is a suite file rather than a run's results.
    pub fn is_suite(text: &str) -> bool {
        #[derive(Deserialize)]
        struct Version {
            suite_schema_version: Option<u32>,
        }
        serde_json::from_str::<Version>(text).is_ok_and(|v| v.suite_schema_version.is_some())
    }

    /// Every finding's run as one results file, its workloads named `finding/workload`, so
    /// that `compare` pairs them across two suites.
    pub fn as_run_results(&self) -> RunResults {
        let info = crate::record::results::ScenarioInfo {
            name: "suite".into(),
            ..Default::default()
        };
        let mut r = RunResults::new(self.host.clone(), info, self.repeats as usize);
        r.provenance = Provenance {
            command_line: None,
            ..self.provenance.clone()
        };
        for f in &self.findings {
            let Some(res) = &f.results else { continue };
            for w in &res.workloads {
                let mut w = w.clone();
                w.name = format!("{}/{}", f.name, w.name);
                r.workloads.push(w);
            }
        }
        r
    }

    fn header(&self) -> Vec<String> {
        let h = &self.host;
        let mut lines = vec![format!(
            "schedlab suite: {} findings, {} repeat{}{}, kernel {}, {} CPUs, autogroup {}",
            self.findings.len(),
            self.repeats,
            if self.repeats == 1 { "" } else { "s" },
            if self.quick { " (quick)" } else { "" },
            h.kernel,
            h.cpus,
            if h.autogroup { "on" } else { "off" }
        )];
        let mut by = self.provenance.by_line();
        if let Some(m) = &h.cpu_model {
            let _ = write!(by, ", {m}");
        }
        lines.push(by);
        lines
    }

    /// What each finding showed, for people, in 100 columns.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for l in self.header() {
            text::push_wrapped(&mut out, &l, 4);
        }
        for f in &self.findings {
            let _ = writeln!(out);
            text::push_wrapped(&mut out, &format!("{}: {}", f.name, f.title), 4);
            if let Some(why) = &f.skipped {
                text::push_wrapped(&mut out, &format!("  skipped: {why}"), 4);
                continue;
            }
            let _ = writeln!(
                out,
                "  {:<22} {:>9} {:>6} {:>6} {:>6}  {:<8} also",
                "workload", "received", "due", "rules", "ratio", "verdict"
            );
            for w in &f.workloads {
                let row = format!(
                    "  {:<22} {:>9.3} {:>6.3} {:>6} {:>6}  {:<8} {}",
                    text::fit(&w.name, 22),
                    w.received,
                    w.due,
                    w.rules_due.map_or("-".into(), |r| format!("{r:.3}")),
                    w.ratio().map_or("-".into(), |r| format!("{r:.2}")),
                    verdict_word(w.verdict),
                    text::fit(&also(w), 40)
                );
                let _ = writeln!(out, "{}", row.trim_end());
            }
            for l in findings_notes(f) {
                text::push_wrapped(&mut out, &format!("  {l}"), 4);
            }
        }
        out
    }

    /// The same as a mailing list reads it: a table per finding.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for l in self.header() {
            let _ = writeln!(out, "{l}  ");
        }
        for f in &self.findings {
            let _ = writeln!(out, "\n### {}: {}\n", f.name, f.title);
            if let Some(why) = &f.skipped {
                let _ = writeln!(out, "skipped: {why}");
                continue;
            }
            let _ = writeln!(
                out,
                "| workload | received | due | rules | ratio | verdict | also |\n\
                 | --- | ---: | ---: | ---: | ---: | --- | --- |"
            );
            for w in &f.workloads {
                let _ = writeln!(
                    out,
                    "| {} | {:.3} | {:.3} | {} | {} | {} | {} |",
                    w.name,
                    w.received,
                    w.due,
                    w.rules_due.map_or("-".into(), |r| format!("{r:.3}")),
                    w.ratio().map_or("-".into(), |r| format!("{r:.2}")),
                    verdict_word(w.verdict),
                    also(w)
                );
            }
            let notes = findings_notes(f);
            if !notes.is_empty() {
                let _ = writeln!(out);
                for l in notes {
                    let _ = writeln!(out, "{l}  ");
                }
            }
        }
        out
    }

    /// Findings whose model due is off the rules' on a quiet machine: a fault of the model
    /// (or a kernel whose rules changed), which the suite's exit status reports.
    pub fn due_faults(&self) -> Vec<String> {
        self.findings
            .iter()
            .filter(|f| f.rest_cpu <= BUSY_REST)
            .flat_map(|f| {
                f.due_disagreements().into_iter().map(move |w| {
                    format!(
                        "{}: {} due {:.3}, the rules say {:.3}",
                        f.name,
                        w.name,
                        w.due,
                        w.rules_due.unwrap_or(0.0)
                    )
                })
            })
            .collect()
    }
}

/// A workload's other figures, in few words.
fn also(w: &FindingWorkload) -> String {
    let mut parts = Vec::new();
    if w.throttled_pct >= 0.5 {
        parts.push(format!("throttled {:.0}%", w.throttled_pct));
    }
    if let Some(d) = w.wake_delay_us {
        parts.push(format!("wake {} µs", crate::model::stats::num(d)));
    }
    if let Some(m) = w.migrations_per_sec.filter(|m| *m >= 0.05) {
        parts.push(format!("{m:.1} migr/s"));
    }
    parts.join(", ")
}

/// What a finding's table needs said under it: the rules' due against the model's, a busy
/// rest of the machine, Jain's index where several workloads do the same work.
fn findings_notes(f: &FindingResult) -> Vec<String> {
    let mut notes = Vec::new();
    if f.workloads.iter().any(|w| w.rules_due.is_some()) {
        let off = f.due_disagreements();
        if off.is_empty() {
            notes.push(format!(
                "due as the kernel's rules say (within {DUE_TOLERANCE} CPU)"
            ));
        } else if f.rest_cpu > BUSY_REST {
            notes.push(format!(
                "due differs from the rules' quiet-machine figures: the rest of the machine \
                 took {:.2} CPU",
                f.rest_cpu
            ));
        } else {
            let names: Vec<&str> = off.iter().map(|w| w.name.as_str()).collect();
            notes.push(format!(
                "DUE DIFFERS from the kernel's rules for {} (more than {DUE_TOLERANCE} CPU)",
                names.join(", ")
            ));
        }
    }
    if let Some(j) = f.jain_index.filter(|_| f.workloads.len() > 1) {
        notes.push(format!("Jain's index across the workloads: {j:.3}"));
    }
    notes
}
