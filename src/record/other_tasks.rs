//! The rest of the machine over a headless run (the dashboard's "other tasks" row and its `x`
//! rows): received and due over each repeat's last verdict window, and each group of the rest.
//! Part of the results schema (docs/results-schema.md, `other_tasks`).

use serde::{Deserialize, Serialize};

use crate::model::{Frame, Verdict};

/// The rest of the machine over a run: each repeat's last verdict window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtherTasksResult {
    /// CPUs received and due over each repeat's last verdict window, and their means.
    pub cpu_received: Vec<f64>,
    pub cpu_due: Vec<f64>,
    pub cpu_received_mean: f64,
    pub cpu_due_mean: f64,
    /// Its groups at the end of each repeat, by their node in the group tree, the busiest
    /// first; figures are means over the repeats the group was in.
    pub groups: Vec<OtherTasksGroup>,
}

/// One group of the rest (a session, a cgroup, the root group) over the repeats it was in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtherTasksGroup {
    /// Its node in the group tree ("autogroup-12", "cgroup /a/b", "root") and its name as
    /// at the last repeat ("session 812 (bash: make, cc1)").
    pub key: String,
    pub name: String,
    pub repeats: usize,
    pub cpu_received_mean: f64,
    pub cpu_due_mean: f64,
    /// Its verdict at the end of each repeat it was in.
    pub verdicts: Vec<Verdict>,
}

impl OtherTasksResult {
    /// From each repeat's last Frame; None when no repeat has one.
    pub fn from_repeats(repeats: &[Vec<Frame>]) -> Option<OtherTasksResult> {
        let last: Vec<&Frame> = repeats.iter().filter_map(|fr| fr.last()).collect();
        if last.is_empty() {
            return None;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let cpu_received: Vec<f64> = last
            .iter()
            .map(|f| f.machine.rest_window_received)
            .collect();
        let cpu_due: Vec<f64> = last.iter().map(|f| f.machine.rest_window_fair).collect();
        let mut groups: Vec<OtherTasksGroup> = Vec::new();
        for g in last.iter().flat_map(|f| &f.machine.rest_groups) {
            let key = if g.key.is_empty() { &g.name } else { &g.key };
            let i = match groups.iter().position(|o| &o.key == key) {
                Some(i) => i,
                None => {
                    groups.push(OtherTasksGroup {
                        key: key.clone(),
                        name: String::new(),
                        repeats: 0,
                        cpu_received_mean: 0.0,
                        cpu_due_mean: 0.0,
                        verdicts: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            let o = &mut groups[i];
            o.name.clone_from(&g.name);
            o.repeats += 1;
            // Sums for now, means below.
            o.cpu_received_mean += g.received;
            o.cpu_due_mean += g.fair;
            o.verdicts.push(g.verdict);
        }
        for o in &mut groups {
            o.cpu_received_mean /= o.repeats as f64;
            o.cpu_due_mean /= o.repeats as f64;
        }
        groups.sort_by(|a, b| b.cpu_received_mean.total_cmp(&a.cpu_received_mean));
        Some(OtherTasksResult {
            cpu_received_mean: mean(&cpu_received),
            cpu_due_mean: mean(&cpu_due),
            cpu_received,
            cpu_due,
            groups,
        })
    }

    /// Its lines for people: the whole, then each group.
    pub fn text(&self) -> Vec<String> {
        let mut out = vec![format!(
            "other tasks: received {:.2} CPU, due {:.2} (the last verdict window, mean over repeats)",
            self.cpu_received_mean, self.cpu_due_mean
        )];
        for g in &self.groups {
            let verdicts: Vec<&str> = g
                .verdicts
                .iter()
                .map(|v| v.word())
                .filter(|w| !w.is_empty())
                .collect();
            out.push(format!(
                "  {}: received {:.2}, due {:.2}, {}",
                g.name,
                g.cpu_received_mean,
                g.cpu_due_mean,
                if verdicts.is_empty() {
                    "no verdict (due under 0.02 CPU)".to_string()
                } else {
                    verdicts.join(" ")
                }
            ));
        }
        out
    }
}
