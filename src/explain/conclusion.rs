//! What the variants' runs say: each variant's effect on the workload's fairness ratio against
//! the scenario as it is (Welch's test over the repeats), and a conclusion that names a
//! mechanism only where the variants separate it from the others they tested.

use serde::{Deserialize, Serialize};

use super::variant::{Change, Mechanism};
use crate::model::stats::{self, Summary, Welch};
use crate::model::{Frame, Verdict};

/// The fairness ratios the dashboard calls `fair` (Verdict::from_shares's band).
pub const FAIR_BAND: (f64, f64) = (0.9, 1.15);
/// A variant whose due is this close to what the workload wanted left it nothing to compete
/// for: its ratio says nothing about a mechanism.
const UNCONTENDED: f64 = 0.95;

/// The explained workload over one repeat's settled Frames, in CPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepeatFigures {
    pub received: f64,
    pub due: f64,
    pub demand: f64,
}

/// `workload`'s rows in the Frames from `settle` seconds on: the figures a run gives.
pub fn settled_rows<'a>(
    frames: &'a [Frame],
    workload: &str,
    settle: f64,
) -> Vec<&'a crate::model::WorkloadFrame> {
    frames
        .iter()
        .filter(|f| f.t >= settle)
        .filter_map(|f| f.workloads.iter().find(|w| w.name == workload))
        .collect()
}

/// `workload`'s means over the Frames from `settle` seconds on; None when it has none with a
/// due a ratio can be taken over.
pub fn repeat_figures(frames: &[Frame], workload: &str, settle: f64) -> Option<RepeatFigures> {
    let rows = settled_rows(frames, workload, settle);
    let n = rows.len() as f64;
    let mean = |get: &dyn Fn(&crate::model::WorkloadFrame) -> f64| {
        rows.iter().map(|w| get(w)).sum::<f64>() / n
    };
    let due = mean(&|w| w.cpu_fair);
    (!rows.is_empty() && due >= crate::model::frame::MIN_FAIR).then(|| RepeatFigures {
        received: mean(&|w| w.cpu_received),
        due,
        demand: mean(&|w| w.cpu_demand),
    })
}

/// What a variant did to the deviation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// The scenario as it is.
    AsIs,
    /// Fair under the variant, and significantly different from as it is.
    Removes,
    /// Less than half the deviation left (on a log scale), significantly.
    Reduces,
    /// Half the deviation or more left, on the same side.
    Leaves,
    /// Turned to the other side of fair.
    Reverses,
    /// Fair, but not significantly different from as it is: the runs cannot tell.
    Unclear,
    /// Its due reached what it wanted: nothing left to compete for, nothing to learn.
    Uncontended,
}

impl Effect {
    pub fn words(self) -> &'static str {
        match self {
            Effect::AsIs => "-",
            Effect::Removes => "removes it",
            Effect::Reduces => "reduces it",
            Effect::Leaves => "leaves it",
            Effect::Reverses => "reverses it",
            Effect::Unclear => "unclear (noise)",
            Effect::Uncontended => "no contention left",
        }
    }
}

/// One row of the table: the scenario as it is, or a variant.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// What this row changed ("as-is": nothing).
    pub what: Change,
    /// Means over the repeats, in CPUs.
    pub received: f64,
    pub due: f64,
    pub demand: f64,
    /// received / due of each repeat, and their statistics.
    pub ratios: Vec<f64>,
    pub ratio: Summary,
    /// The ratio's difference from as it is (Welch's test); None for as-is itself.
    pub against_as_is: Option<Welch>,
    pub effect: Effect,
}

impl Outcome {
    /// From each repeat's figures; None when no repeat had any. `as_is` is the row to compare
    /// with (None: this is it).
    pub fn new(
        what: Change,
        repeats: &[RepeatFigures],
        as_is: Option<&Outcome>,
    ) -> Option<Outcome> {
        let n = repeats.len() as f64;
        let ratios: Vec<f64> = repeats.iter().map(|r| r.received / r.due).collect();
        let ratio = stats::summarize(&ratios)?;
        let mean = |get: fn(&RepeatFigures) -> f64| repeats.iter().map(get).sum::<f64>() / n;
        let (received, due, demand) = (mean(|r| r.received), mean(|r| r.due), mean(|r| r.demand));
        let against_as_is = as_is.and_then(|a| stats::welch(&a.ratio, &ratio));
        let effect = match as_is {
            None => Effect::AsIs,
            Some(a) => effect(a.ratio.mean, &ratio, due, demand, against_as_is.as_ref()),
        };
        Some(Outcome {
            what,
            received,
            due,
            demand,
            ratios,
            ratio,
            against_as_is,
            effect,
        })
    }
}

fn fair(r: f64) -> bool {
    (FAIR_BAND.0..=FAIR_BAND.1).contains(&r)
}

/// Whether a ratio deviates from fair: the same band the dashboard's verdicts use.
pub fn deviates(r: f64) -> bool {
    !fair(r)
}

fn effect(as_is: f64, v: &Summary, due: f64, demand: f64, w: Option<&Welch>) -> Effect {
    let significant = w.is_some_and(|w| w.significant);
    if due >= UNCONTENDED * demand {
        return Effect::Uncontended;
    }
    if fair(v.mean) {
        return if significant {
            Effect::Removes
        } else {
            Effect::Unclear
        };
    }
    if (v.mean > 1.0) != (as_is > 1.0) {
        return Effect::Reverses;
    }
    if v.mean.ln().abs() >= 0.5 * as_is.ln().abs() {
        Effect::Leaves
    } else if significant {
        Effect::Reduces
    } else {
        Effect::Unclear
    }
}

/// The conclusion in one or two sentences, from the as-is row and the variants' rows.
pub fn conclude(workload: &str, as_is: &Outcome, variants: &[Outcome]) -> String {
    let r0 = as_is.ratio.mean;
    if !deviates(r0) {
        return format!(
            "No deviation to explain: {workload} received {:.2} of its due ({}).",
            r0,
            Verdict::from_shares(as_is.received, as_is.due).word()
        );
    }
    let what = if r0 > 1.0 { "excess" } else { "shortfall" };
    if variants.is_empty() {
        return format!(
            "{workload} received {r0:.2} of its due ({}); no variant ran, so no mechanism is \
             named or ruled out.",
            Verdict::from_shares(as_is.received, as_is.due).word()
        );
    }
    let tested: Vec<Mechanism> = {
        let mut m: Vec<Mechanism> = variants
            .iter()
            .filter(|v| v.effect != Effect::Uncontended)
            .filter_map(|v| v.what.mechanism)
            .collect();
        m.sort();
        m.dedup();
        m
    };
    let of = |m: Mechanism| variants.iter().filter(move |v| v.what.mechanism == Some(m));
    let supported: Vec<Mechanism> = tested
        .iter()
        .copied()
        .filter(|&m| of(m).any(|v| v.effect == Effect::Removes))
        .filter(|&m| of(m).all(|v| v.effect != Effect::Leaves))
        .collect();
    let ruled_out: Vec<Mechanism> = tested
        .iter()
        .copied()
        .filter(|&m| of(m).all(|v| matches!(v.effect, Effect::Leaves | Effect::Uncontended)))
        .collect();
    let changes = |pred: &dyn Fn(&Outcome) -> bool| {
        join(
            variants
                .iter()
                .filter(|v| pred(v))
                .map(|v| v.what.gist.clone()),
        )
    };
    let removing = changes(&|v| v.effect == Effect::Removes);
    let mut out = match supported.as_slice() {
        [m] => format!(
            "The {what} disappears with {}: {} ({}).",
            changes(&|v| v.what.mechanism == Some(*m) && v.effect == Effect::Removes),
            m.words(),
            m.rule()
        ),
        [] if !removing.is_empty() => format!(
            "The {what} disappears with {removing} but stays with {}, which test the same \
             mechanism: the variants do not separate the candidates.",
            changes(&|v| {
                v.effect == Effect::Leaves
                    && v.what.mechanism.is_some_and(|m| !ruled_out.contains(&m))
            })
        ),
        [] => {
            let partly = changes(&|v| matches!(v.effect, Effect::Reduces | Effect::Reverses));
            if partly.is_empty() {
                format!(
                    "None of the variants removes the {what}: they do not separate the candidates."
                )
            } else {
                format!(
                    "{} changes the {what} but no variant removes it: the variants do not \
                     separate the candidates.",
                    capitalise(&partly)
                )
            }
        }
        several => format!(
            "The {what} disappears with {removing}, which test {}: the variants do not separate \
             these candidates.",
            join(several.iter().map(|m| m.words().to_string()))
        ),
    };
    if !ruled_out.is_empty() {
        let leaving = variants
            .iter()
            .filter(|v| v.what.mechanism.is_some_and(|x| ruled_out.contains(&x)))
            .filter(|v| v.effect == Effect::Leaves)
            .map(|v| format!("{} (ratio {:.2})", v.what.gist, v.ratio.mean));
        out.push_str(&format!(
            " It stays with {}: {} ruled out.",
            join(leaving),
            join(ruled_out.iter().map(|m| m.words().to_string()))
        ));
    } else if supported.len() == 1 {
        out.push_str(" No other candidate was ruled out by these variants.");
    }
    out
}

fn join(items: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = items.collect();
    match v.len() {
        0 => String::new(),
        1 => v[0].clone(),
        n => format!("{} and {}", v[..n - 1].join(", "), v[n - 1]),
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Three repeats at `ratio` of a 0.2 due, times each of `spread`, wanting a whole CPU: the
/// figures this module's tests and the report's share.
#[cfg(test)]
pub(crate) fn repeats_at(ratio: f64, spread: [f64; 3]) -> Vec<RepeatFigures> {
    spread
        .iter()
        .map(|k| RepeatFigures {
            received: 0.2 * ratio * k,
            due: 0.2,
            demand: 1.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three repeats around `ratio` of a 0.2 due, wanting a whole CPU.
    fn repeats(ratio: f64) -> Vec<RepeatFigures> {
        repeats_at(ratio, [0.98, 1.0, 1.02])
    }

    fn change(gist: &str, m: Mechanism) -> Change {
        Change {
            key: gist.into(),
            change: gist.into(),
            gist: gist.into(),
            mechanism: Some(m),
        }
    }

    fn row(gist: &str, m: Mechanism, ratio: f64, as_is: &Outcome) -> Outcome {
        Outcome::new(change(gist, m), &repeats(ratio), Some(as_is)).unwrap()
    }

    fn as_is(ratio: f64) -> Outcome {
        Outcome::new(Change::none(), &repeats(ratio), None).unwrap()
    }

    #[test]
    fn the_fork_loop_case_names_new_task_placement_and_rules_out_wakeup_preemption() {
        let a = as_is(2.9);
        let vs = [
            row("a session of its own", Mechanism::NewTaskPlacement, 1.0, &a),
            row("long-lived tasks", Mechanism::NewTaskPlacement, 1.02, &a),
            row("SCHED_BATCH", Mechanism::WakeupPreemption, 2.56, &a),
        ];
        assert_eq!(vs[0].effect, Effect::Removes);
        assert_eq!(vs[2].effect, Effect::Leaves);
        let c = conclude("fork_load", &a, &vs);
        assert!(
            c.starts_with(
                "The excess disappears with a session of its own and long-lived tasks: \
                 new-task placement"
            ),
            "{c}"
        );
        assert!(
            c.contains("It stays with SCHED_BATCH (ratio 2.56): wakeup preemption ruled out."),
            "{c}"
        );
    }

    #[test]
    fn with_no_variant_run_nothing_is_named_or_ruled_out() {
        let c = conclude("fork_load", &as_is(2.9), &[]);
        assert_eq!(
            c,
            "fork_load received 2.90 of its due (ahead); no variant ran, so no mechanism is \
             named or ruled out."
        );
    }

    #[test]
    fn a_mechanism_is_named_only_where_the_variants_separate_it() {
        let a = as_is(2.9);
        // Both remove it: not separated.
        let both = [
            row("own session", Mechanism::NewTaskPlacement, 1.0, &a),
            row("batch", Mechanism::WakeupPreemption, 1.01, &a),
        ];
        let c = conclude("w", &a, &both);
        assert!(c.contains("do not separate these candidates"), "{c}");
        // Neither does.
        let neither = [
            row("own session", Mechanism::NewTaskPlacement, 2.8, &a),
            row("batch", Mechanism::WakeupPreemption, 2.7, &a),
        ];
        let c = conclude("w", &a, &neither);
        assert!(
            c.starts_with("None of the variants removes the excess"),
            "{c}"
        );
        // One removes it, nothing else tested: pointed at, nothing ruled out.
        let alone = [row("own session", Mechanism::NewTaskPlacement, 1.0, &a)];
        let c = conclude("w", &a, &alone);
        assert!(c.contains("No other candidate was ruled out"), "{c}");
        // Two variants of one mechanism disagree: not named.
        let split = [
            row("own session", Mechanism::NewTaskPlacement, 1.0, &a),
            row("long-lived", Mechanism::NewTaskPlacement, 2.8, &a),
            row("batch", Mechanism::WakeupPreemption, 2.8, &a),
        ];
        let c = conclude("w", &a, &split);
        assert!(!c.contains("new-task placement ("), "{c}");
        assert!(
            c.starts_with(
                "The excess disappears with own session but stays with long-lived, which test \
                 the same mechanism"
            ),
            "{c}"
        );
        assert!(
            c.ends_with("It stays with batch (ratio 2.80): wakeup preemption ruled out."),
            "{c}"
        );
        // Halfway there: changes it, removes nothing.
        let half = [row("batch", Mechanism::WakeupPreemption, 1.4, &a)];
        assert_eq!(half[0].effect, Effect::Reduces);
        let c = conclude("w", &a, &half);
        assert!(
            c.starts_with("Batch changes the excess but no variant"),
            "{c}"
        );
    }

    #[test]
    fn a_fair_workload_has_nothing_to_explain_and_an_uncontended_variant_teaches_nothing() {
        let a = as_is(1.02);
        let c = conclude("hog", &a, &[]);
        assert_eq!(
            c,
            "No deviation to explain: hog received 1.02 of its due (fair)."
        );
        let b = as_is(2.9);
        let free: Vec<RepeatFigures> = (0..3)
            .map(|i| RepeatFigures {
                received: 0.97 + 0.01 * i as f64,
                due: 0.98,
                demand: 1.0,
            })
            .collect();
        let v = Outcome::new(change("no pinning", Mechanism::Affinity), &free, Some(&b)).unwrap();
        assert_eq!(v.effect, Effect::Uncontended);
        let c = conclude("w", &b, &[v]);
        assert!(c.starts_with("None of the variants"), "{c}");
    }

    #[test]
    fn a_shortfall_is_called_one() {
        let a = as_is(0.4);
        let vs = [row("batch", Mechanism::WakeupPreemption, 1.0, &a)];
        let c = conclude("w", &a, &vs);
        assert!(c.starts_with("The shortfall disappears with batch"), "{c}");
    }
}
