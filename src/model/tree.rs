//! The group tree as the kernel builds it: a task sits in its cpu cgroup (each level weighted
//! by cpu.shares or cpu.weight, with its quota), and only when that cgroup is the root, in its
//! session's autogroup (weighted by the autogroup's nice) when autogroup is on. Tasks of the
//! root autogroup (kernel threads, anything never moved by setsid) compete one by one in the
//! root.

use std::collections::HashMap;

use super::solver::Group;
use crate::probe::parse::{nice_to_weight, ROOT_AUTOGROUP};
use crate::probe::CgroupNode;

/// Where a task's process sits, as the probe read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Placement {
    /// Its path in the cpu hierarchy ("/": root); None when unknown. Shared: every claim
    /// of a process carries its process's placement.
    pub cgroup: Option<std::sync::Arc<str>>,
    /// Its autogroup id and nice, when readable.
    pub autogroup: Option<(u64, i32)>,
    pub session: u32,
}

/// The tree the solver shares CPUs over, built as tasks are placed in it.
pub struct Tree {
    pub groups: Vec<Group>,
    /// A name per node: "root", "cgroup /a/b", "autogroup-12", "session 300".
    pub names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            groups: vec![Group::root()],
            names: vec!["root".into()],
            index: HashMap::new(),
        }
    }
}

impl Tree {
    /// The node a task goes in. `own_cgroup`: a workload's own cgroup and weight, used when
    /// the task's cgroup path is unknown (a fake /proc, a replay of an older recording).
    pub fn place(
        &mut self,
        p: &Placement,
        autogroup_on: bool,
        cgroups: &HashMap<String, CgroupNode>,
        own_cgroup: Option<(&str, f64)>,
    ) -> usize {
        match p.cgroup.as_deref() {
            Some(path) if path != "/" && !path.is_empty() => {
                return self.cgroup_node(path, cgroups);
            }
            None => {
                if let Some((path, weight)) = own_cgroup {
                    return self.child(0, format!("cgroup {path}"), weight, None);
                }
            }
            _ => {}
        }
        if !autogroup_on {
            return 0;
        }
        match p.autogroup {
            // The root autogroup is the root task group itself: no group to share.
            Some((ROOT_AUTOGROUP, _)) => 0,
            Some((id, nice)) => {
                self.child(0, format!("autogroup-{id}"), nice_to_weight(nice), None)
            }
            None => self.child(0, format!("session {}", p.session), 1024.0, None),
        }
    }

    /// The node of a cgroup path, with its ancestors.
    fn cgroup_node(&mut self, path: &str, cgroups: &HashMap<String, CgroupNode>) -> usize {
        let mut node = 0;
        let mut cur = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            cur.push('/');
            cur.push_str(part);
            let info = cgroups.get(&cur);
            let weight = info.map_or(1024.0, |c| c.weight);
            let quota = info.and_then(|c| c.quota);
            node = self.child(node, format!("cgroup {cur}"), weight, quota);
        }
        node
    }

    fn child(&mut self, parent: usize, name: String, weight: f64, quota: Option<f64>) -> usize {
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        self.groups.push(Group {
            parent,
            weight: weight.max(1.0),
            quota,
        });
        self.names.push(name.clone());
        self.index.insert(name, self.groups.len() - 1);
        self.groups.len() - 1
    }

    /// The node's parent (the root's is itself).
    pub fn parent(&self, node: usize) -> usize {
        if node == 0 {
            0
        } else {
            self.groups[node].parent
        }
    }

    /// Whether `node` is `ancestor` or below it.
    pub(crate) fn is_under(&self, mut node: usize, ancestor: usize) -> bool {
        loop {
            if node == ancestor {
                return true;
            }
            if node == 0 {
                return false;
            }
            node = self.groups[node].parent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, weight: f64, quota: Option<f64>) -> (String, CgroupNode) {
        (
            path.into(),
            CgroupNode {
                path: path.into(),
                weight,
                quota,
                ..CgroupNode::default()
            },
        )
    }

    #[test]
    fn autogroup_applies_only_in_the_root_cgroup() {
        let cg: HashMap<String, CgroupNode> =
            [node("/a", 300.0, None), node("/a/b", 100.0, Some(0.5))]
                .into_iter()
                .collect();
        let mut t = Tree::default();
        let placed = |cgroup: &str, autogroup: (u64, i32), session: u32| Placement {
            cgroup: Some(cgroup.into()),
            autogroup: Some(autogroup),
            session,
        };
        let in_session = placed("/", (12, 5), 7);
        let n = t.place(&in_session, true, &cg, None);
        assert_eq!(t.names[n], "autogroup-12");
        assert_eq!(t.groups[n].weight, 335.0);
        assert_eq!(t.place(&in_session, false, &cg, None), 0);
        let n = t.place(&placed("/a/b", (12, 0), 7), true, &cg, None);
        assert_eq!(t.names[n], "cgroup /a/b");
        assert_eq!(t.groups[n].quota, Some(0.5));
        let a = t.parent(n);
        assert_eq!(
            (t.names[a].as_str(), t.groups[a].weight),
            ("cgroup /a", 300.0)
        );
        assert!(t.is_under(n, a) && !t.is_under(a, n));
        let kernel = placed("/", (ROOT_AUTOGROUP, 0), 0);
        assert_eq!(t.place(&kernel, true, &cg, None), 0);
    }
}
