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
