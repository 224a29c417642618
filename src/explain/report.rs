//! An explain run's report: the table of variants against the scenario as it is, the
//! conclusion, what was not tried and how to rerun each variant; as text (100 columns),
//! Markdown for a mailing list, and JSON.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::conclusion::{Effect, Outcome};
use super::evidence::{Delays, OwnerEvidence};
use super::groups::GroupStanding;
use super::tracer::Evidence;
use crate::record::machine::Host;
use crate::record::text;

/// The report's own version: 2 added the traced run, 3 its group entities' standing.
pub const EXPLAIN_SCHEMA_VERSION: u32 = 3;

/// A whole explain run.
#[serde_with::skip_serializing_none]
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
    /// One more run as it is with the kernel's events recorded; none with --no-evidence.
    pub traced: Option<TracedRun>,
}

/// The run as it is once more, with the kernel's scheduler events recorded over its settled
/// span: the evidence, or why there is none, and what recording cost.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracedRun {
    /// Why the kernel's events are missing (not root, no tracefs), when they are.
    pub missing: Option<String>,
    pub evidence: Option<Evidence>,
    /// Each workload's throughput traced against its mean as it is (untraced).
    pub cost: Vec<TracingCost>,
}

/// What recording the events cost one workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TracingCost {
    pub workload: String,
    pub ops_unit: String,
    /// Operations a second, untraced (the mean of the runs as it is) and traced.
    pub untraced: f64,
    pub traced: f64,
}

impl TracingCost {
    pub fn ratio(&self) -> Option<f64> {
        (self.untraced > 0.0).then(|| self.traced / self.untraced)
    }
}

/// A count per second.
fn per_s(n: u64, seconds: f64) -> String {
    let r = n as f64 / seconds.max(1e-9);
    if r >= 100.0 {
        format!("{r:.0}/s")
    } else {
        format!("{r:.1}/s")
    }
}

fn us(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// What the events say of the explained workload, in one or two sentences: the preemptions it
/// caused and suffered, and how soon its new tasks first ran against a base slice.
fn reading(workload: &str, e: &Evidence) -> Option<String> {
    let me = e.owners.iter().find(|o| o.owner == workload)?;
    let s = e.seconds;
    let mut said = Vec::new();
    let victims: Vec<String> = e
        .owners
        .iter()
        .filter(|o| o.owner != workload && o.workload && o.preempted > 0)
        .filter_map(|o| {
            let n = o.preempted_by.iter().find(|(who, _)| who == workload)?.1;
            Some(format!(
                "{} of {}'s {} preemptions ({:.0}%)",
                per_s(n, s),
                o.owner,
                per_s(o.preempted, s),
                100.0 * n as f64 / o.preempted as f64
            ))
        })
        .collect();
    if !victims.is_empty() {
        said.push(format!(
            "{workload}'s tasks took the CPU in {}",
            victims.join(" and ")
        ));
    }
    if me.preempted > 0 {
        let top = me
            .preempted_by
            .first()
            .map(|(who, n)| {
                format!(
                    ", {:.0}% of them by {who}",
                    100.0 * *n as f64 / me.preempted as f64
                )
            })
            .unwrap_or_default();
        said.push(format!("it was preempted {}{top}", per_s(me.preempted, s)));
    }
    if let Some(p50) = me.new_tasks.p50_us {
        said.push(format!(
            "its new tasks ({}) first ran after p50 {} µs, {} a base slice ({:.0} µs), and ran \
             p50 {} µs",
            per_s(me.new_tasks.count, s),
            us(Some(p50)),
            if p50 < e.base_slice_us {
                "within"
            } else {
                "longer than"
            },
            e.base_slice_us,
            us(me.first_run.p50_us)
        ));
    }
    if let Some(mine) = e.groups.iter().find(|g| g.workload == workload) {
        let others: Vec<String> = e
            .groups
            .iter()
            .filter(|g| g.workload != workload)
            .map(|g| format!("{}'s {:.0}%", g.workload, eligible_pct(g)))
            .collect();
        said.push(format!(
            "its group entity was eligible in {:.0}% of readings{}",
            eligible_pct(mine),
            if others.is_empty() {
                String::new()
            } else {
                format!(" ({})", others.join(", "))
            }
        ));
    }
    (!said.is_empty()).then(|| format!("In the kernel's events, {}.", said.join("; ")))
}

fn eligible_pct(g: &GroupStanding) -> f64 {
    100.0 * g.eligible as f64 / g.readings.max(1) as f64
}

/// One workload's group entity on one line: how often EEVDF held it eligible, and by how much
/// virtual time it trailed its queue's average (positive: owed).
fn group_line(g: &GroupStanding) -> String {
    format!(
        "  {}'s group entity ({}, weight {:.2}): eligible in {:.0}% of {} readings where it \
         had tasks queued, virtual lag {:+.1} ms on average (the scheduler's debug table).",
        g.workload,
        g.group,
        g.weight,
        eligible_pct(g),
        g.readings,
        g.lag_ms
    )
}

/// The evidence as lines: the reading of `workload`, then each workload's line and the four
/// groups of the rest preempted most (the dashboard's `E` shows the same).
pub fn evidence_lines(workload: &str, e: &Evidence) -> Vec<String> {
    let mut out: Vec<String> = reading(workload, e).into_iter().collect();
    let shown = e
        .owners
        .iter()
        .filter(|o| o.workload)
        .chain(e.owners.iter().filter(|o| !o.workload).take(4));
    out.extend(shown.map(owner_line));
    out.extend(e.groups.iter().map(group_line));
    out
}

impl TracedRun {
    /// The section as lines of prose (text and Markdown alike), `workload` read first.
    fn lines(&self, workload: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(why) = &self.missing {
            out.push(format!(
                "The kernel's events: not recorded ({why}); the variants alone explain."
            ));
        }
        let Some(e) = &self.evidence else {
            return out;
        };
        let share = if e.recorded_share < 0.99 {
            format!(
                " (recorded {:.0}% of the time, in windows: the events came too fast to record whole)",
                100.0 * e.recorded_share
            )
        } else {
            String::new()
        };
        out.push(format!(
            "The kernel's events, one more run as it is, traced over {:.1} s of settled \
             figures{share}: {} events, {} lost; the reader took {:.1}% of a CPU.",
            e.seconds, e.events, e.lost, e.reader_cpu_pct
        ));
        if e.lost > 0 {
            out.push(
                "  Events were lost: the counts below are short, the delays may be long.".into(),
            );
        }
        out.extend(evidence_lines(workload, e));
        let costs: Vec<String> = self
            .cost
            .iter()
            .filter_map(|c| {
                c.ratio().map(|r| {
                    format!(
                        "{} {r:.3} ({:.0} {} a second traced, {:.0} untraced)",
                        c.workload, c.traced, c.ops_unit, c.untraced
                    )
                })
            })
            .collect();
        if !costs.is_empty() {
            out.push(format!(
                "Tracing cost, throughput traced over untraced: {}.",
                costs.join("; ")
            ));
        }
        out
    }
}

/// One owner's evidence on one line (wrapped by the caller).
fn owner_line(o: &OwnerEvidence) -> String {
    let s = o.seconds;
    let by: Vec<String> = o
        .preempted_by
        .iter()
        .take(4)
        .map(|(who, n)| {
            format!(
                "{who} {:.0}%",
                100.0 * *n as f64 / o.preempted.max(1) as f64
            )
        })
        .collect();
    let mut parts = vec![format!(
        "preempted {}{}",
        per_s(o.preempted, s),
        if by.is_empty() {
            String::new()
        } else {
            format!(" (by {})", by.join(", "))
        }
    )];
    let delays = |d: &Delays| format!("p50 {} µs, p99 {} µs", us(d.p50_us), us(d.p99_us));
    if o.wakeups.count > 0 {
        parts.push(format!(
            "woken {}, ran after {}",
            per_s(o.wakeups.count, s),
            delays(&o.wakeups)
        ));
    }
    if o.new_tasks.count > 0 {
        parts.push(format!(
            "new tasks {}, first ran after {}, for {}",
            per_s(o.new_tasks.count, s),
            delays(&o.new_tasks),
            delays(&o.first_run)
        ));
    }
    parts.push(format!("migrated {}", per_s(o.migrations, s)));
    format!(
        "  {}{}: {}.",
        if o.workload { "" } else { "the rest's " },
        o.owner,
        parts.join("; ")
    )
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

    /// A row's figures as both tables show them: received, due, ratio, the ratio's 95%
    /// interval, the change against the scenario as it is, and the effect.
    fn cells(o: &Outcome) -> [String; 6] {
        [
            format!("{:.2}", o.received),
            format!("{:.2}", o.due),
            format!("{:.2}", o.ratio.mean),
            text::Interval::of(&o.ratio).cell(),
            Self::change_cell(o),
            o.effect.words().to_string(),
        ]
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for l in self.header() {
            text::push_wrapped(&mut out, &l, 4);
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<15} {:>8} {:>5} {:>7}  {:<18} {:<22} effect",
            "variant", "received", "due", "ratio", "95% interval", "change vs as-is"
        );
        for o in &self.outcomes {
            let [received, due, ratio, interval, change, effect] = Self::cells(o);
            let row = format!(
                "{:<15} {received:>8} {due:>5} {ratio:>7}  {interval:<18} {change:<22} {effect}",
                text::fit(&o.what.key, 15),
            );
            let _ = writeln!(out, "{}", row.trim_end());
        }
        let _ = writeln!(out);
        for o in &self.outcomes {
            text::push_wrapped(&mut out, &format!("  {}: {}", o.what.key, o.what.change), 6);
        }
        let _ = writeln!(out);
        text::push_wrapped(&mut out, &format!("Conclusion: {}", self.conclusion), 4);
        for n in &self.not_tried {
            text::push_wrapped(&mut out, &format!("Not tried: {n}"), 4);
        }
        if let Some(t) = &self.traced {
            let _ = writeln!(out);
            for l in t.lines(&self.workload) {
                text::push_wrapped(&mut out, &l, 6);
            }
        }
        // Whole lines, however long: they are for copying.
        out + &self.reruns("Rerun a variant by hand:\n", "")
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
            let [received, due, ratio, interval, change, effect] = Self::cells(o);
            let _ = writeln!(
                out,
                "| {} | {} | {received} | {due} | {ratio} {interval} | {change} | {effect} |",
                o.what.key, o.what.change,
            );
        }
        let _ = writeln!(out, "\n**Conclusion.** {}", self.conclusion);
        for n in &self.not_tried {
            let _ = writeln!(out, "\nNot tried: {n}");
        }
        if let Some(t) = &self.traced {
            let _ = writeln!(out);
            for l in t.lines(&self.workload) {
                // Owner lines as a list.
                match l.strip_prefix("  ") {
                    Some(item) => {
                        let _ = writeln!(out, "- {item}");
                    }
                    None => {
                        let _ = writeln!(out, "\n{l}\n");
                    }
                }
            }
        }
        out + &self.reruns("\nRerun a variant by hand:\n\n", "    ")
    }

    /// Under `heading`, the command line that reruns each variant, one a line after `indent`;
    /// nothing when only the scenario as it is ran.
    fn reruns(&self, heading: &str, indent: &str) -> String {
        let mut out = String::new();
        if self.outcomes.len() > 1 {
            out.push_str(heading);
            for o in &self.outcomes[1..] {
                let _ = writeln!(out, "{indent}{}", self.rerun(&o.what.key));
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
    use crate::explain::conclusion::repeats_at;
    use crate::explain::variant::{Change, Mechanism};

    fn report() -> ExplainReport {
        let figures = |ratio: f64| repeats_at(ratio, [0.97, 1.0, 1.03]);
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
            traced: Some(TracedRun {
                missing: None,
                evidence: Some(Evidence {
                    seconds: 8.0,
                    recorded_share: 1.0,
                    events: 412_345,
                    lost: 0,
                    reader_cpu_pct: 1.2,
                    base_slice_us: 1500.0,
                    owners: vec![OwnerEvidence {
                        owner: "fork_load".into(),
                        workload: true,
                        seconds: 8.0,
                        preempted: 8000,
                        preempted_by: vec![("ref-job".into(), 6000), ("itself".into(), 2000)],
                        wakeups: Delays::default(),
                        new_tasks: Delays {
                            count: 16_000,
                            mean_us: Some(40.0),
                            p50_us: Some(30.5),
                            p99_us: Some(900.0),
                            max_us: Some(2000.0),
                        },
                        first_run: Delays {
                            count: 16_000,
                            mean_us: Some(300.0),
                            p50_us: Some(250.0),
                            p99_us: Some(1400.0),
                            max_us: Some(3000.0),
                        },
                        migrations: 0,
                    }],
                    groups: vec![
                        GroupStanding {
                            workload: "fork_load".into(),
                            group: "/autogroup-2066".into(),
                            readings: 64,
                            eligible: 60,
                            lag_ms: 2.25,
                            weight: 1.0,
                        },
                        GroupStanding {
                            workload: "ref-job".into(),
                            group: "/autogroup-1979".into(),
                            readings: 64,
                            eligible: 16,
                            lag_ms: -4.5,
                            weight: 0.61,
                        },
                    ],
                }),
                cost: vec![TracingCost {
                    workload: "fork_load".into(),
                    ops_unit: "forks".into(),
                    untraced: 2000.0,
                    traced: 1950.0,
                }],
            }),
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
        for (doc, line) in [
            (&md, "| batch | a workload with a long name"),
            (
                &text,
                "fork_load: preempted 1000/s (by ref-job 75%, itself 25%)",
            ),
            (&md, "new tasks 2000/s, first ran after p50 30.5 µs"),
            (&text, "fork_load 0.975 (1950 forks a second traced"),
            (&md, "- fork_load: preempted 1000/s"),
            (
                &md,
                "its new tasks (2000/s) first ran after p50 30.5 µs, within a base slice",
            ),
            (
                &md,
                "its group entity was eligible in 94% of readings (ref-job's 25%)",
            ),
            (
                &md,
                "ref-job's group entity (/autogroup-1979, weight 0.61): eligible in 25% of 64 \
                 readings where it had tasks queued, virtual lag -4.5 ms on average",
            ),
        ] {
            assert!(doc.contains(line), "{doc}");
        }
        let back: ExplainReport = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(back, r);
    }
}
