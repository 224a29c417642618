//! An explain run's report: the table of variants against the scenario as it is, the
//! conclusion, what was not tried and how to rerun each variant; as text (100 columns),
//! Markdown for a mailing list, and JSON.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::conclusion::{Effect, Outcome};
use crate::record::machine::Host;
use crate::record::text;

/// The report's own version.
pub const EXPLAIN_SCHEMA_VERSION: u32 = 1;

/// A whole explain run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainReport {
    pub explain_schema_version: u32,
    pub schedlab_version: String,
    pub schedlab_commit: String,
    pub started_utc: String,
    pub command_line: Vec<String>,
    pub host: Host,
    /// The scenario as it was named, and its name.
    pub scenario_arg: String,
    pub scenario: String,
    pub workload: String,
    pub repeats: u32,
    /// Seconds each run lasted, and from when its figures count.
    pub duration: f64,
    pub settle: f64,
    /// The scenario as it is first, then each variant.
    pub outcomes: Vec<Outcome>,
    pub conclusion: String,
    /// Variants this run did not try, and why.
    pub not_tried: Vec<String>,
}

impl ExplainReport {
    /// The command that reruns one variant (with the scenario as it is beside it).
    pub fn rerun(&self, key: &str) -> String {
        format!(
            "schedlab explain {} --workload {} --variant {key} --repeat {} --duration {}",
            self.scenario_arg, self.workload, self.repeats, self.duration
        )
    }

    fn header(&self) -> Vec<String> {
        let h = &self.host;
        vec![
            format!(
                "schedlab explain: {} in {} (kernel {}, {} CPUs, autogroup {})",
                self.workload,
                self.scenario,
                h.kernel,
                h.cpus,
                if h.autogroup { "on" } else { "off" }
            ),
            format!(
                "{} repeats of {} s for each row, figures from {} s on; started {}",
                self.repeats, self.duration, self.settle, self.started_utc
            ),
        ]
    }

    fn change_cell(o: &Outcome) -> String {
        match &o.against_as_is {
            None if o.effect == Effect::AsIs => "-".into(),
            None => "? (one repeat)".into(),
            Some(w) => format!(
                "{:+.2} {}",
                w.diff,
                if w.significant {
                    "significant"
                } else {
                    "within noise"
                }
            ),
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, s: &str, indent: usize| {
            let _ = writeln!(out, "{}", text::wrap(s, text::COLUMNS, indent));
        };
        for l in self.header() {
            line(&mut out, &l, 4);
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<15} {:>8} {:>5} {:>7}  {:<18} {:<22} effect",
            "variant", "received", "due", "ratio", "95% interval", "change vs as-is"
        );
        for o in &self.outcomes {
            let row = format!(
                "{:<15} {:>8.2} {:>5.2} {:>7.2}  {:<18} {:<22} {}",
                text::fit(&o.what.key, 15),
                o.received,
                o.due,
                o.ratio.mean,
                text::Interval::of(&o.ratio).cell(),
                Self::change_cell(o),
                o.effect.words()
            );
            let _ = writeln!(out, "{}", row.trim_end());
        }
        let _ = writeln!(out);
        for o in &self.outcomes {
            line(&mut out, &format!("  {}: {}", o.what.key, o.what.change), 6);
        }
        let _ = writeln!(out);
        line(&mut out, &format!("Conclusion: {}", self.conclusion), 4);
        for n in &self.not_tried {
            line(&mut out, &format!("Not tried: {n}"), 4);
        }
        if self.outcomes.len() > 1 {
            // Whole lines, however long: they are for copying.
            let _ = writeln!(out, "Rerun a variant by hand:");
            for o in &self.outcomes[1..] {
                let _ = writeln!(out, "{}", self.rerun(&o.what.key));
            }
        }
        out
    }

    /// The same as a mailing list reads it.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for l in self.header() {
            let _ = writeln!(out, "{l}  ");
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "| variant | what it changes | received | due | ratio [95%] | change vs as-is | effect |"
        );
        let _ = writeln!(out, "|---|---|---:|---:|---|---|---|");
        for o in &self.outcomes {
            let _ = writeln!(
                out,
                "| {} | {} | {:.2} | {:.2} | {:.2} {} | {} | {} |",
                o.what.key,
                o.what.change,
                o.received,
                o.due,
                o.ratio.mean,
                text::Interval::of(&o.ratio).cell(),
                Self::change_cell(o),
                o.effect.words()
            );
        }
        let _ = writeln!(out, "\n**Conclusion.** {}", self.conclusion);
        for n in &self.not_tried {
            let _ = writeln!(out, "\nNot tried: {n}");
        }
        if self.outcomes.len() > 1 {
            let _ = writeln!(out, "\nRerun a variant by hand:\n");
            for o in &self.outcomes[1..] {
                let _ = writeln!(out, "    {}", self.rerun(&o.what.key));
            }
        }
        out
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serialises") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::conclusion::RepeatFigures;
    use crate::explain::variant::{Change, Mechanism};

    fn report() -> ExplainReport {
        let figures = |ratio: f64| -> Vec<RepeatFigures> {
            [0.97, 1.0, 1.03]
                .iter()
                .map(|k| RepeatFigures {
                    received: 0.2 * ratio * k,
                    due: 0.2,
                    demand: 1.0,
                })
                .collect()
        };
        let as_is = Outcome::new(Change::none(), &figures(2.13), None).unwrap();
        let batch = Change {
            key: "batch".into(),
            change: "a workload with a long name as SCHED_BATCH (no wakeup preemption)".into(),
            gist: "SCHED_BATCH".into(),
            mechanism: Some(Mechanism::WakeupPreemption),
        };
        let b = Outcome::new(batch, &figures(2.25), Some(&as_is)).unwrap();
        let conclusion =
            crate::explain::conclusion::conclude("fork_load", &as_is, std::slice::from_ref(&b));
        ExplainReport {
            explain_schema_version: EXPLAIN_SCHEMA_VERSION,
            schedlab_version: "0.1.0".into(),
            schedlab_commit: "f3eef41".into(),
            started_utc: "2026-12-06T20:35:54Z".into(),
            command_line: vec!["schedlab".into(), "explain".into()],
            host: Host {
                kernel: "6.18.44".into(),
                cpus: 2,
                autogroup: true,
                ..Host::here(2, true)
            },
            scenario_arg: "contest-one-cpu".into(),
            scenario: "contest-one-cpu".into(),
            workload: "fork_load".into(),
            repeats: 3,
            duration: 12.0,
            settle: 6.0,
            outcomes: vec![as_is, b],
            conclusion,
            not_tried: vec!["a custom slice".into()],
        }
    }

    #[test]
    fn the_text_fits_100_columns_but_for_the_commands_to_copy() {
        let r = report();
        let text = r.to_text();
        for l in text
            .lines()
            .filter(|l| !l.starts_with("schedlab explain contest"))
        {
            assert!(l.chars().count() <= text::COLUMNS, "{l}");
        }
        assert!(text.contains("leaves it"), "{text}");
        assert!(text.contains(
            "schedlab explain contest-one-cpu --workload fork_load --variant batch --repeat 3 \
             --duration 12\n"
        ));
        let md = r.to_markdown();
        assert!(md.contains("| batch | a workload with a long name"), "{md}");
        let back: ExplainReport = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(back, r);
    }
}
