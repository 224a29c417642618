//! The cpu controller's groups as the scheduler sees them: which group a task is in (its
//! effective cpu cgroup), each group's weight, quota and throttled time, and a workload's own
//! cgroup usage for exact accounting.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::parse;
use super::reader::{read_path, ReadErr};
use super::{CgroupNode, CgroupSample};
use crate::sys::kernel::cgroup::{cpu_mount, CpuMount};

/// How long a v2 path's effective group (which ancestors enable `cpu`) is trusted.
const EFFECTIVE_TTL_NS: u64 = 10_000_000_000;

/// The groups of the cpu hierarchy, read on demand and cached briefly.
pub(super) struct Cgroups {
    mount: Option<CpuMount>,
    /// v2: a task's path → (the nearest group the cpu controller applies to, when computed).
    effective: HashMap<String, (String, u64)>,
}

impl Cgroups {
    /// Finds the cpu hierarchy from `{proc_root}/self/mountinfo`; none on a machine (or a fake
    /// tree) without one: every task is then in the root group.
    pub(super) fn discover(proc_root: &Path) -> Cgroups {
        let mount = std::fs::read_to_string(proc_root.join("self/mountinfo"))
            .ok()
            .and_then(|m| cpu_mount(&m));
        Cgroups {
            mount,
            effective: HashMap::new(),
        }
    }

    /// The group a task's /proc/PID/cgroup text puts it in, as the scheduler sees it: its
    /// path in the cpu hierarchy, cut (v2) to the deepest ancestor the controller is enabled
    /// for. None without a cpu hierarchy.
    pub(super) fn group_of(
        &mut self,
        cgroup_file: &[u8],
        buf: &mut Vec<u8>,
        now: u64,
    ) -> Option<String> {
        let mount = self.mount.as_ref()?;
        let (path, v2) = parse::cpu_cgroup(cgroup_file)?;
        if v2 != mount.v2 {
            // The controller is bound to the other hierarchy: the task is in its root.
            return Some("/".into());
        }
        if !v2 {
            return Some(path);
        }
        if let Some((eff, at)) = self.effective.get(&path) {
            if now.saturating_sub(*at) < EFFECTIVE_TTL_NS {
                return Some(eff.clone());
            }
        }
        let mut eff = String::from("/");
        for part in path.split('/').filter(|p| !p.is_empty()) {
            let parent = mount.dir(&eff);
            let enabled = read_path(&parent.join("cgroup.subtree_control"), buf).is_ok()
                && buf.split(|c| c.is_ascii_whitespace()).any(|w| w == b"cpu");
            if !enabled {
                break;
            }
            if eff != "/" {
                eff.push('/');
            }
            eff.push_str(part);
        }
        if eff.len() > 1 && !eff.starts_with('/') {
            eff.insert(0, '/');
        }
        self.effective.insert(path, (eff.clone(), now));
        self.effective
            .retain(|_, (_, at)| now.saturating_sub(*at) < 4 * EFFECTIVE_TTL_NS);
        Some(eff)
    }

    /// Weight, quota and throttling of every group in `paths` and of their ancestors (the
    /// scheduler shares out level by level, so each level's weight matters).
    pub(super) fn nodes<'a>(
        &self,
        paths: impl Iterator<Item = &'a str>,
        buf: &mut Vec<u8>,
    ) -> Vec<CgroupNode> {
        let Some(mount) = &self.mount else {
            return Vec::new();
        };
        let mut wanted: Vec<String> = Vec::new();
        for p in paths {
            let mut cur = p.trim_end_matches('/').to_string();
            while !cur.is_empty() && !wanted.contains(&cur) {
                wanted.push(cur.clone());
                cur = match cur.rfind('/') {
                    Some(i) => cur[..i].to_string(),
                    None => String::new(),
                };
            }
        }
        wanted.sort();
        wanted
            .into_iter()
            .map(|path| read_node(mount, &path, buf))
            .collect()
    }
}

fn read_node(mount: &CpuMount, path: &str, buf: &mut Vec<u8>) -> CgroupNode {
    let dir = mount.dir(if path.is_empty() { "/" } else { path });
    let path = if path.is_empty() { "/" } else { path }.to_string();
    let mut node = CgroupNode {
        path,
        weight: 1024.0,
        ..CgroupNode::default()
    };
    let read = |name: &str, buf: &mut Vec<u8>| read_path(&dir.join(name), buf).is_ok();
    if mount.v2 {
        if read("cpu.weight", buf) {
            if let Some(w) = parse::single_u64(buf) {
                node.weight = w as f64 * 1024.0 / 100.0;
            }
        }
        if read("cpu.idle", buf) && parse::single_u64(buf) == Some(1) {
            node.weight = crate::probe::parse::WEIGHT_IDLE;
        }
        if read("cpu.max", buf) {
            node.quota = parse::cpu_max(buf).flatten();
        }
        if read("cpu.stat", buf) {
            node.throttled_ns = parse::keyed_u64(buf, "throttled_usec").unwrap_or(0) * 1000;
            node.nr_throttled = parse::keyed_u64(buf, "nr_throttled").unwrap_or(0);
        }
    } else {
        if read("cpu.shares", buf) {
            if let Some(w) = parse::single_u64(buf) {
                node.weight = w as f64;
            }
        }
        let quota = read("cpu.cfs_quota_us", buf)
            .then(|| parse::single_i64(buf))
            .flatten();
        let period = read("cpu.cfs_period_us", buf)
            .then(|| parse::single_u64(buf))
            .flatten();
        if let (Some(q), Some(p)) = (quota, period) {
            if q > 0 && p > 0 {
                node.quota = Some(q as f64 / p as f64);
            }
        }
        if read("cpu.stat", buf) {
            node.throttled_ns = parse::keyed_u64(buf, "throttled_time").unwrap_or(0);
            node.nr_throttled = parse::keyed_u64(buf, "nr_throttled").unwrap_or(0);
        }
    }
    node
}

/// Reads a workload's own cgroup: usage from v2 cpu.stat or v1 cpuacct.usage, weight from v2
/// cpu.weight or v1 cpu.shares. With v1 the cpu and cpuacct controllers may be mounted
/// apart (/sys/fs/cgroup/cpu and /sys/fs/cgroup/cpuacct): the same relative path is tried
/// in the sibling hierarchy.
pub(super) fn read_usage(
    sys_root: &Path,
    dir: &Path,
    buf: &mut Vec<u8>,
) -> Result<CgroupSample, String> {
    let base = sys_root.join("fs/cgroup");
    let siblings: Vec<PathBuf> = {
        let mut v = vec![dir.to_path_buf()];
        for (from, to) in [
            ("cpu", "cpuacct"),
            ("cpuacct", "cpu"),
            ("cpu,cpuacct", "cpu"),
        ] {
            if let Ok(rel) = dir.strip_prefix(base.join(from)) {
                v.push(base.join(to).join(rel));
            }
        }
        v
    };
    let mut usage = None;
    let mut weight = None;
    let mut version = 0;
    for d in &siblings {
        if usage.is_none() && read_path(&d.join("cpu.stat"), buf).is_ok() {
            if let Some(ns) = parse::cgroup2_usage_ns(buf) {
                usage = Some(ns);
                version = 2;
            }
        }
        if usage.is_none() && read_path(&d.join("cpuacct.usage"), buf).is_ok() {
            usage = parse::single_u64(buf);
            version = 1;
        }
        if weight.is_none() && read_path(&d.join("cpu.weight"), buf).is_ok() {
            weight = parse::single_u64(buf).map(|w| w as f64 * 1024.0 / 100.0);
        }
        if weight.is_none() && read_path(&d.join("cpu.shares"), buf).is_ok() {
            weight = parse::single_u64(buf).map(|w| w as f64);
        }
    }
    match usage {
        Some(usage_ns) => Ok(CgroupSample {
            path: dir.display().to_string(),
            version,
            usage_ns,
            weight,
        }),
        None => Err(format!(
            "{}: no cpu.stat usage_usec or cpuacct.usage (falling back to /proc)",
            dir.display()
        )),
    }
}

/// Reads /proc/PID/cgroup into `buf`; false when the process is gone or it is unreadable.
pub(super) fn read_cgroup_file(proc_root: &Path, pid: u32, buf: &mut Vec<u8>) -> bool {
    !matches!(
        read_path(&proc_root.join(format!("{pid}/cgroup")), buf),
        Err(ReadErr::Gone) | Err(ReadErr::Failed(_))
    )
}
