//! An `attach` workload and its selector, one to the other: the kind's keys (exactly one of
//! pid, comm, session, cgroup) as the probe's [`Selector`], and back. Here, not in the probe,
//! so that the probe never reads a workload kind.

use super::WorkloadKind;
use crate::probe::attach::ONE_OF;
use crate::probe::Selector;

impl WorkloadKind {
    /// The selector of an `attach` workload; None for any other kind. Exactly one of its
    /// keys must be set.
    pub fn selector(&self) -> Option<Result<Selector, String>> {
        let WorkloadKind::Attach {
            pid,
            comm,
            session,
            cgroup,
        } = self
        else {
            return None;
        };
        let set: Vec<Result<Selector, String>> = [
            pid.map(|p| Selector::from_key("pid", &p.to_string())),
            comm.as_deref().map(|c| Selector::from_key("comm", c)),
            session.map(|s| Selector::from_key("session", &s.to_string())),
            cgroup.as_deref().map(|c| Selector::from_key("cgroup", c)),
        ]
        .into_iter()
        .flatten()
        .collect();
        Some(match <[_; 1]>::try_from(set) {
            Ok([one]) => one,
            Err(_) => Err(ONE_OF.into()),
        })
    }

    /// The `attach` workload of a selector.
    pub fn attach(sel: &Selector) -> WorkloadKind {
        let (mut pid, mut comm, mut session, mut cgroup) = (None, None, None, None);
        match sel {
            Selector::Pid(p) => pid = Some(*p),
            Selector::Comm(c) => comm = Some(c.clone()),
            Selector::Session(s) => session = Some(*s),
            Selector::Cgroup(d) => cgroup = Some(d.display().to_string()),
        }
        WorkloadKind::Attach {
            pid,
            comm,
            session,
            cgroup,
        }
    }
}
