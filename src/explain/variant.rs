//! The counterfactual variants of a scenario: each changes one thing about the workload being
//! explained, chosen from what that workload is (its placement, policy, affinity, whether its
//! tasks are born and gone), or (`one-group`) whether the workloads' sessions stand between
//! them, and names the scheduler mechanism its outcome speaks for.

use serde::{Deserialize, Serialize};

use crate::knobs::{Placement, Policy, DEFAULT_CGROUP_WEIGHT};
use crate::scenario::Scenario;
use crate::workload::registry::WorkloadKind;

/// A scheduler mechanism a variant can remove, and so point at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// EEVDF places each new task at zero lag and drops an exiting task's lag; a group entity
    /// keeps its lag across its tasks' births and deaths.
    NewTaskPlacement,
    /// A waking task may preempt the running one (not under SCHED_BATCH).
    WakeupPreemption,
    /// The CPUs the workload may use, and who shares them.
    Affinity,
    /// A group entity between competing tasks: its weight on a CPU is recomputed from its
    /// tasks' load there as they sleep and wake.
    GroupEntities,
}

impl Mechanism {
    /// As the conclusion names it.
    pub fn words(self) -> &'static str {
        match self {
            Mechanism::NewTaskPlacement => "new-task placement",
            Mechanism::WakeupPreemption => "wakeup preemption",
            Mechanism::Affinity => "its CPU affinity",
            Mechanism::GroupEntities => "the group entities between the workloads",
        }
    }

    /// The kernel's rule behind it, in a sentence for the conclusion.
    pub fn rule(self) -> &'static str {
        match self {
            Mechanism::NewTaskPlacement => {
                "EEVDF starts each new task at zero lag with half a slice to its first deadline \
                 and drops its lag when it exits, while a group entity keeps its lag across its \
                 tasks' births and deaths"
            }
            Mechanism::WakeupPreemption => {
                "a waking task with an earlier deadline preempts the running one, which \
                 SCHED_BATCH turns off"
            }
            Mechanism::Affinity => "the tasks it shares its CPUs with decide what it gets",
            Mechanism::GroupEntities => {
                "with autogroup each session's tasks compete as one group entity, whose weight \
                 on a CPU the kernel recomputes from its tasks' load there as they sleep and \
                 wake; tasks of one session compete one by one"
            }
        }
    }
}

/// What a row of the report changed: its key (as `--variant` takes it; "as-is" for the
/// scenario as it is), the change in words, the same in a few words for the conclusion, and
/// the mechanism it tests.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub key: String,
    pub change: String,
    pub gist: String,
    pub mechanism: Option<Mechanism>,
}

impl Change {
    /// The scenario as it is.
    pub fn none() -> Change {
        Change {
            key: "as-is".into(),
            change: "nothing changed".into(),
            gist: "as it is".into(),
            mechanism: None,
        }
    }
}

/// One variant: what it changes, and the scenario it runs.
#[derive(Clone, Debug)]
pub struct Variant {
    pub what: Change,
    pub scenario: Scenario,
}

/// Every key a variant can have, in the order they run.
/// The key that asks for no variant: the scenario as it is and its traced run only.
pub const NONE: &str = "none";

pub const KEYS: [&str; 7] = [
    "own-session",
    "shared-session",
    "one-group",
    "own-cgroup",
    "long-lived",
    "batch",
    "unpinned",
];

/// Err names the first of `keys` that is no variant's.
pub fn check_keys(keys: &[String]) -> Result<(), String> {
    if keys.iter().any(|k| k == NONE) {
        return match keys.len() {
            1 => Ok(()),
            _ => Err(format!("variant `{NONE}` goes alone: it runs no variant")),
        };
    }
    match keys.iter().find(|k| !KEYS.contains(&k.as_str())) {
        Some(bad) => Err(format!(
            "no variant `{bad}`; the variants are {}, or {NONE} alone",
            KEYS.join(", ")
        )),
        None => Ok(()),
    }
}

/// What the machine allows a variant to change.
#[derive(Clone, Copy, Debug)]
pub struct Allowed {
    /// A cgroup of its own can be made (root and a writable cpu controller).
    pub cgroups: bool,
    /// Sessions have groups of their own (autogroup on): otherwise a session changes nothing.
    pub autogroup: bool,
}

/// The variants that fit `workload` of `sc`, each changing one thing about it; `only` keeps
/// those keys (all that fit when empty). Err names a workload the scenario does not have.
pub fn choose(
    sc: &Scenario,
    workload: &str,
    allowed: Allowed,
    only: &[String],
) -> Result<Vec<Variant>, String> {
    let Some(i) = sc.workloads.iter().position(|w| w.name == workload) else {
        let names: Vec<&str> = sc.workloads.iter().map(|w| w.name.as_str()).collect();
        return Err(format!(
            "scenario {} has no workload `{workload}` (it has {})",
            sc.name,
            names.join(", ")
        ));
    };
    let w = &sc.workloads[i];
    let mut out = Vec::new();
    let mut with =
        |key: &str, change: String, gist: &str, mechanism, edit: &dyn Fn(&mut Scenario)| {
            let mut s = sc.clone();
            edit(&mut s);
            out.push(Variant {
                what: Change {
                    key: key.into(),
                    change,
                    gist: gist.into(),
                    mechanism: Some(mechanism),
                },
                scenario: s,
            });
        };
    let name = &w.name;
    match w.knobs.placement {
        Placement::Shared if allowed.autogroup => with(
            "own-session",
            format!("{name} in a session of its own (one group entity)"),
            "a session of its own",
            Mechanism::NewTaskPlacement,
            &|s| s.workloads[i].knobs.placement = Placement::OwnSession,
        ),
        Placement::OwnSession => with(
            "shared-session",
            format!("{name} in the shared session (its tasks side by side with the others')"),
            "the shared session",
            Mechanism::NewTaskPlacement,
            &|s| s.workloads[i].knobs.placement = Placement::Shared,
        ),
        _ => {}
    }
    // Every workload in the shared session, when another than this one has a session of its
    // own (this one alone is `shared-session`): no group entity stands between them. Those in
    // a cgroup of their own stay there (a move would change two things).
    let others_own_sessions = sc
        .workloads
        .iter()
        .enumerate()
        .any(|(j, o)| j != i && o.knobs.placement == Placement::OwnSession);
    if allowed.autogroup
        && others_own_sessions
        && !matches!(w.knobs.placement, Placement::Cgroup { .. })
    {
        with(
            "one-group",
            format!(
                "{name} and the others in the shared session: one group, no entity between them"
            ),
            "one group for all",
            Mechanism::GroupEntities,
            &|s| {
                for o in &mut s.workloads {
                    if o.knobs.placement == Placement::OwnSession {
                        o.knobs.placement = Placement::Shared;
                    }
                }
            },
        );
    }
    if allowed.cgroups && !matches!(w.knobs.placement, Placement::Cgroup { .. }) {
        with(
            "own-cgroup",
            format!("{name} in a cgroup of its own, weight {DEFAULT_CGROUP_WEIGHT}"),
            "a cgroup of its own",
            Mechanism::NewTaskPlacement,
            &|s| {
                s.workloads[i].knobs.placement = Placement::Cgroup {
                    weight: DEFAULT_CGROUP_WEIGHT,
                };
                s.workloads[i].knobs.cpu_quota = None;
            },
        );
    }
    if let WorkloadKind::ForkLoad { forkers } = w.kind {
        let threads = forkers.unwrap_or(1);
        with(
            "long-lived",
            if threads == 1 {
                format!("{name}'s loop as one long-lived task (cpu-hog): no task born")
            } else {
                format!("{name}'s {threads} loops as long-lived tasks (cpu-hog): no task born")
            },
            "long-lived tasks",
            Mechanism::NewTaskPlacement,
            &|s| s.workloads[i].kind = WorkloadKind::CpuHog { threads },
        );
    }
    if w.knobs.policy == Policy::Other {
        with(
            "batch",
            format!("{name} as SCHED_BATCH (no wakeup preemption)"),
            "SCHED_BATCH",
            Mechanism::WakeupPreemption,
            &|s| s.workloads[i].knobs.policy = Policy::Batch,
        );
    }
    if w.knobs.affinity.is_some() {
        with(
            "unpinned",
            format!("{name} free to run on any CPU"),
            "no pinning",
            Mechanism::Affinity,
            &|s| s.workloads[i].knobs.affinity = None,
        );
    }
    check_keys(only)?;
    if only.iter().any(|k| k == NONE) {
        return Ok(Vec::new());
    }
    if !only.is_empty() {
        if let Some(unfit) = only.iter().find(|k| !out.iter().any(|v| &v.what.key == *k)) {
            return Err(format!(
                "variant `{unfit}` does not fit {name} here (those that do: {})",
                out.iter()
                    .map(|v| v.what.key.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out.retain(|v| only.contains(&v.what.key));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contest_one_cpu() -> Scenario {
        let src = crate::finding::CATALOGUE
            .iter()
            .find(|(n, _)| *n == "contest-one-cpu")
            .unwrap()
            .1;
        Scenario::from_toml(src, "contest-one-cpu").unwrap()
    }

    fn keys_of(vs: Vec<Variant>) -> Vec<String> {
        vs.into_iter().map(|v| v.what.key).collect()
    }

    const ALL: Allowed = Allowed {
        cgroups: true,
        autogroup: true,
    };

    #[test]
    fn a_pinned_fork_loop_in_a_shared_session_gets_every_variant() {
        let sc = contest_one_cpu();
        let vs = choose(&sc, "fork_load", ALL, &[]).unwrap();
        let keys: Vec<&str> = vs.iter().map(|v| v.what.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "own-session",
                "own-cgroup",
                "long-lived",
                "batch",
                "unpinned"
            ]
        );
        // Each changes only the fork loop, and only one thing.
        for v in &vs {
            assert_eq!(v.scenario.workloads[0], sc.workloads[0], "{}", v.what.key);
            assert_ne!(v.scenario.workloads[1], sc.workloads[1], "{}", v.what.key);
        }
        let long = vs.iter().find(|v| v.what.key == "long-lived").unwrap();
        assert_eq!(
            long.scenario.workloads[1].kind,
            WorkloadKind::CpuHog { threads: 1 }
        );
        assert_eq!(long.scenario.workloads[1].knobs, sc.workloads[1].knobs);
    }

    #[test]
    fn workloads_in_sessions_of_their_own_can_share_one_group() {
        let src = crate::finding::CATALOGUE
            .iter()
            .find(|(n, _)| *n == "pingpong-beside-hog")
            .unwrap()
            .1;
        let sc = Scenario::from_toml(src, "pingpong-beside-hog").unwrap();
        let vs = choose(&sc, "hog", ALL, &[]).unwrap();
        assert_eq!(
            keys_of(vs.clone()),
            [
                "shared-session",
                "one-group",
                "own-cgroup",
                "batch",
                "unpinned"
            ]
        );
        let one = vs.iter().find(|v| v.what.key == "one-group").unwrap();
        assert_eq!(one.what.mechanism, Some(Mechanism::GroupEntities));
        for (w, was) in one.scenario.workloads.iter().zip(&sc.workloads) {
            assert_eq!(w.knobs.placement, Placement::Shared, "{}", w.name);
            assert_eq!(w.kind, was.kind, "nothing else changed");
        }
        // Without autogroup a session is no group: no such variant.
        let no_autogroup = Allowed {
            cgroups: true,
            autogroup: false,
        };
        let keys = keys_of(choose(&sc, "hog", no_autogroup, &[]).unwrap());
        assert!(!keys.contains(&"one-group".to_string()), "{keys:?}");
    }

    #[test]
    fn none_runs_no_variant_and_goes_alone() {
        let sc = contest_one_cpu();
        let none = vec![NONE.to_string()];
        assert!(choose(&sc, "fork_load", ALL, &none).unwrap().is_empty());
        let mixed = vec![NONE.to_string(), "batch".to_string()];
        assert!(check_keys(&mixed).unwrap_err().contains("goes alone"));
        assert!(choose(&sc, "nope", ALL, &none).is_err());
    }

    #[test]
    fn what_the_machine_forbids_or_the_workload_already_is_is_not_a_variant() {
        let sc = contest_one_cpu();
        let none = Allowed {
            cgroups: false,
            autogroup: false,
        };
        let keys = keys_of(choose(&sc, "ref-job", none, &[]).unwrap());
        // No fork loop, no cgroups, no autogroup.
        assert_eq!(keys, ["batch", "unpinned"]);
        let mut own = sc.clone();
        own.workloads[1].knobs.placement = Placement::OwnSession;
        own.workloads[1].knobs.policy = Policy::Batch;
        own.workloads[1].knobs.affinity = None;
        let keys = keys_of(choose(&own, "fork_load", ALL, &[]).unwrap());
        assert_eq!(keys, ["shared-session", "own-cgroup", "long-lived"]);
    }

    #[test]
    fn chosen_variants_and_bad_names_are_one_line() {
        let sc = contest_one_cpu();
        let only = ["batch".to_string(), "own-session".to_string()];
        let keys = keys_of(choose(&sc, "fork_load", ALL, &only).unwrap());
        assert_eq!(keys, ["own-session", "batch"]);
        let e = choose(&sc, "nope", ALL, &[]).unwrap_err();
        assert!(
            e.contains("no workload `nope`") && e.contains("fork_load"),
            "{e}"
        );
        let e = choose(&sc, "fork_load", ALL, &["slice".into()]).unwrap_err();
        assert!(e.starts_with("no variant `slice`"), "{e}");
        let e = choose(&sc, "ref-job", ALL, &["long-lived".into()]).unwrap_err();
        assert!(e.contains("does not fit ref-job"), "{e}");
    }
}
