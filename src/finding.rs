//! Findings: scenarios that each reproduce one known scheduler behaviour, with what the
//! kernel's rules make each workload due on a quiet machine and a short text of what it shows.
//! A finding is a scenario file with a `[finding]` table (docs/findings.md); `schedlab suite`
//! runs the catalogue shipped in assets/findings/, and the dashboard opens any of them.

use serde::{Deserialize, Serialize};

/// The catalogue shipped in assets/findings/, by file stem, in the order the suite runs it.
pub const CATALOGUE: &[(&str, &str)] = &[
    (
        "contest-one-cpu",
        include_str!("../assets/findings/contest-one-cpu.toml"),
    ),
    (
        "contest-every-cpu",
        include_str!("../assets/findings/contest-every-cpu.toml"),
    ),
    (
        "busy-neighbour-session",
        include_str!("../assets/findings/busy-neighbour-session.toml"),
    ),
    (
        "nice-across-sessions",
        include_str!("../assets/findings/nice-across-sessions.toml"),
    ),
    (
        "nice-within-session",
        include_str!("../assets/findings/nice-within-session.toml"),
    ),
    (
        "cgroup-weights",
        include_str!("../assets/findings/cgroup-weights.toml"),
    ),
    (
        "cpu-quota",
        include_str!("../assets/findings/cpu-quota.toml"),
    ),
    (
        "rt-hog-beside-normal",
        include_str!("../assets/findings/rt-hog-beside-normal.toml"),
    ),
    (
        "sched-idle-beside-normal",
        include_str!("../assets/findings/sched-idle-beside-normal.toml"),
    ),
    (
        "three-hogs-two-cpus",
        include_str!("../assets/findings/three-hogs-two-cpus.toml"),
    ),
    (
        "pingpong-beside-hog",
        include_str!("../assets/findings/pingpong-beside-hog.toml"),
    ),
    (
        "wakeup-latency-beside-hog",
        include_str!("../assets/findings/wakeup-latency-beside-hog.toml"),
    ),
    (
        "chat-rooms",
        include_str!("../assets/findings/chat-rooms.toml"),
    ),
    (
        "hackbench-groups",
        include_str!("../assets/findings/hackbench-groups.toml"),
    ),
];

/// How far the model's due may be from the rules' on a quiet machine: the ground-truth
/// suite's tolerance (tests/fair_truth.rs).
pub const DUE_TOLERANCE: f64 = 0.03;

/// What a scenario's `[finding]` table says.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// One line: what it reproduces.
    pub title: String,
    /// What it shows and why it matters, a few sentences.
    pub text: String,
    /// CPUs each named workload is due by the kernel's rules on a quiet machine, worked out
    /// in `text`; workloads whose due is what they want (a sleeper) are left out.
    #[serde(default)]
    pub due: std::collections::BTreeMap<String, f64>,
    /// What the machine must have for it: `root` (cgroups, real time), `autogroup`, `cpus:N`.
    #[serde(default)]
    pub requires: Vec<String>,
}

/// What a machine offers a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    pub root: bool,
    pub autogroup: bool,
    pub cpus: usize,
}

impl Machine {
    /// This machine, as schedlab runs here.
    pub fn here() -> Machine {
        Machine {
            root: nix::unistd::geteuid().is_root(),
            autogroup: crate::sys::kernel::proc::sysctl_on("kernel.sched_autogroup_enabled")
                .unwrap_or(false),
            cpus: crate::supervisor::usable_cpus(),
        }
    }
}

impl Finding {
    /// Checks what the file says against its workloads: every due names one, and every
    /// requirement is known. The message names the offending key.
    pub fn check(&self, workloads: &[String]) -> Result<(), String> {
        for (name, due) in &self.due {
            if !workloads.contains(name) {
                return Err(format!(
                    "finding.due names `{name}`, which is no workload of this scenario ({})",
                    workloads.join(", ")
                ));
            }
            if !(0.0..=4096.0).contains(due) {
                return Err(format!(
                    "finding.due.{name} must be CPUs from 0, found {due}"
                ));
            }
        }
        for r in &self.requires {
            requirement(r)?;
        }
        if self.title.trim().is_empty() {
            return Err("finding.title must not be empty".into());
        }
        Ok(())
    }

    /// Why this machine cannot run it, when it cannot.
    pub fn unmet(&self, m: Machine) -> Option<String> {
        self.requires.iter().find_map(|r| match requirement(r) {
            Ok(Need::Root) if !m.root => Some("needs root (cgroups or real time)".into()),
            Ok(Need::Autogroup) if !m.autogroup => {
                Some("needs autogroup on (kernel.sched_autogroup_enabled = 1)".into())
            }
            Ok(Need::Cpus(n)) if m.cpus < n => Some(format!(
                "needs {n} CPUs, this machine lets schedlab use {}",
                m.cpus
            )),
            _ => None,
        })
    }
}

enum Need {
    Root,
    Autogroup,
    Cpus(usize),
}

fn requirement(r: &str) -> Result<Need, String> {
    match r {
        "root" => Ok(Need::Root),
        "autogroup" => Ok(Need::Autogroup),
        _ => r
            .strip_prefix("cpus:")
            .and_then(|n| n.parse().ok())
            .map(Need::Cpus)
            .ok_or_else(|| {
                format!("finding.requires: `{r}` is not one of root, autogroup, cpus:N")
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn every_finding_parses_and_states_what_it_shows() {
        for (name, src) in CATALOGUE {
            let sc = Scenario::from_toml(src, &format!("assets/findings/{name}.toml"))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(sc.name, *name);
            let f = sc.finding.expect("a [finding] table");
            assert!(f.text.len() > 80, "{name}: say what it shows");
            assert!(sc.duration.is_some(), "{name}: a finding has a duration");
        }
    }

    #[test]
    fn a_due_must_name_a_workload_and_requirements_are_known() {
        let f = Finding {
            title: "t".into(),
            due: [("nope".to_string(), 0.5)].into(),
            ..Finding::default()
        };
        assert!(f.check(&["hog".into()]).unwrap_err().contains("`nope`"));
        let f = Finding {
            title: "t".into(),
            requires: vec!["gpu".into()],
            ..Finding::default()
        };
        assert!(f.check(&[]).unwrap_err().contains("`gpu`"));
        let f = Finding {
            requires: vec!["root".into(), "cpus:2".into()],
            ..Finding::default()
        };
        let m = Machine {
            root: true,
            autogroup: true,
            cpus: 1,
        };
        assert!(f.unmet(m).unwrap().contains("needs 2 CPUs"));
        assert_eq!(f.unmet(Machine { cpus: 2, ..m }), None);
    }
}
