//! A workload's knobs: its nice value, scheduling policy and real-time priority, the CPUs it
//! may use, where it sits (its placement, which decides its fair share) and a CPU quota;
//! their limits, and the words people write and read them in (scenario files, the
//! dashboard's forms and table, messages). Values only: the supervisor applies them.

use serde::{Deserialize, Serialize};

use crate::sys::kernel::cpuset::CpuSet;

/// The knobs' limits, stated once for scenario files, the knob editor and the launch.
pub(crate) const NICE: std::ops::RangeInclusive<i32> = -20..=19;
pub(crate) const RT_PRIORITY: std::ops::RangeInclusive<u8> = 1..=99;
pub(crate) const CGROUP_WEIGHT: std::ops::RangeInclusive<u32> = 1..=10_000;
/// The weight of a cgroup when none is given (cgroup v2's default).
pub(crate) const DEFAULT_CGROUP_WEIGHT: u32 = 100;
/// The largest quota a workload may be given, in % of one CPU (100 CPUs); the cgroup
/// plumbing, which enforces it, holds it.
pub use crate::sys::kernel::cgroup::MAX_CPU_QUOTA;

/// Scheduling policy a workload runs under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    #[default]
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl Policy {
    /// Every policy, in the order forms offer them.
    pub const ALL: [Policy; 5] = [
        Policy::Other,
        Policy::Batch,
        Policy::Idle,
        Policy::Fifo,
        Policy::Rr,
    ];

    pub(crate) fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// The word a person types for it: "other", "batch", "idle", "fifo", "rr".
    pub fn word(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
        }
    }

    /// The words of every policy.
    pub fn words() -> Vec<&'static str> {
        Policy::ALL.iter().map(|p| p.word()).collect()
    }

    pub(crate) fn from_word(word: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.word() == word)
    }
}

/// Where a workload sits, which decides what its fair share is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Its own process group in the supervisor's session: it shares the session's autogroup
    /// with every other shared workload, as `make -j4` and a fork loop typed in one shell do.
    #[default]
    Shared,
    /// Its own session (setsid), so its own autogroup when autogroup is enabled.
    OwnSession,
    /// Its own cgroup with this CPU weight (cgroup v2 scale, 1..10000; 100 is the default).
    Cgroup { weight: u32 },
}

impl Placement {
    /// As a scenario file writes it: "shared", "own-session", "cgroup".
    pub(crate) const FILE_WORDS: [&'static str; 3] = ["shared", "own-session", "cgroup"];
    /// As the dashboard's form offers it: "shared session", "own session", "own cgroup".
    pub(crate) const FORM_WORDS: [&'static str; 3] =
        ["shared session", "own session", "own cgroup"];

    /// The placement a word of either list names; a cgroup with `weight`.
    pub(crate) fn from_word(word: &str, weight: u32) -> Option<Placement> {
        let at = |list: [&str; 3]| list.iter().position(|w| *w == word);
        Some(
            match at(Placement::FILE_WORDS).or_else(|| at(Placement::FORM_WORDS))? {
                0 => Placement::Shared,
                1 => Placement::OwnSession,
                _ => Placement::Cgroup { weight },
            },
        )
    }

    /// Its word in the form.
    pub(crate) fn form_word(&self) -> &'static str {
        Placement::FORM_WORDS[match self {
            Placement::Shared => 0,
            Placement::OwnSession => 1,
            Placement::Cgroup { .. } => 2,
        }]
    }

    /// As a person says it: "shared session", "own cgroup (weight 100)".
    pub fn words(&self) -> String {
        match self {
            Placement::Cgroup { weight } => format!("own cgroup (weight {weight})"),
            p => p.form_word().to_string(),
        }
    }
}

/// The knobs set on a workload before it starts.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knobs {
    pub nice: i32,
    pub policy: Policy,
    /// Real-time priority, for the FIFO and RR policies (1..99).
    pub rt_priority: u8,
    /// CPUs it may run on; None = all.
    #[serialize_always]
    pub affinity: Option<Vec<usize>>,
    pub placement: Placement,
    /// A bandwidth limit for its cgroup (placement = cgroup only), in % of one CPU: cgroup
    /// v2 `cpu.max`, v1 `cpu.cfs_quota_us` over a 100 ms period.
    pub cpu_quota: Option<u32>,
}

/// A CPU list as people and the kernel write it ("0-3,6"), for CPUs a workload may use.
pub(crate) fn cpus_text(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|&c| c as u32)
        .collect::<CpuSet>()
        .to_string()
}

/// The CPUs of a list as typed ("0", "0,2", "0-3, 6"), each one of the `cpus` this machine
/// has (0..cpus); the message says what is wrong.
pub(crate) fn parse_cpus(text: &str, cpus: usize) -> Result<Vec<usize>, String> {
    let set = CpuSet::parse(text)?;
    if set.is_empty() {
        return Err("an empty CPU list".into());
    }
    let list: Vec<usize> = set.iter().map(|c| c as usize).collect();
    match list.iter().find(|&&c| c >= cpus) {
        Some(c) => Err(format!(
            "CPU {c} does not exist: this machine has CPUs {}",
            cpus_text(&(0..cpus).collect::<Vec<_>>())
        )),
        None => Ok(list),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for p in Policy::ALL {
            assert_eq!(Policy::from_word(p.word()), Some(p));
        }
        for p in [
            Placement::Shared,
            Placement::OwnSession,
            Placement::Cgroup { weight: 7 },
        ] {
            assert_eq!(Placement::from_word(p.form_word(), 7), Some(p.clone()));
        }
        assert_eq!(
            Placement::from_word("own-session", 1),
            Some(Placement::OwnSession)
        );
        assert_eq!(
            Placement::Cgroup { weight: 50 }.words(),
            "own cgroup (weight 50)"
        );
    }

    #[test]
    fn cpu_lists_are_checked_against_the_machine() {
        assert_eq!(parse_cpus("0-3, 6", 8), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(cpus_text(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(
            parse_cpus("0,5", 2).unwrap_err(),
            "CPU 5 does not exist: this machine has CPUs 0-1"
        );
        assert!(parse_cpus("3-1", 8).is_err());
        assert!(parse_cpus("x", 8).is_err());
        assert_eq!(parse_cpus("", 8).unwrap_err(), "an empty CPU list");
    }
}
