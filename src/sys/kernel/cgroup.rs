//! A cgroup of its own for one workload, with a CPU weight.
//!
//! cgroup v2 is used when its hierarchy has the `cpu` controller; otherwise cgroup v1's `cpu`
//! hierarchy (weight) plus `cpuacct` (exact usage), as these machines mount them. The directory
//! is named `schedlab-<supervisor pid>-<seq>-<name>`, so a later run can remove what a
//! SIGKILLed supervisor left behind ([`sweep_orphans`]). The weight is given on the v2 scale
//! (1..10000, 100 = default); on v1 it becomes `cpu.shares` = weight × 1024 / 100.

use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The largest quota a workload may be given, in % of one CPU (100 CPUs).
pub const MAX_CPU_QUOTA: u32 = 10_000;

/// Which cgroup interface a workload's group lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where schedlab may create workload cgroups on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hierarchy {
    /// The directory new groups go in (the `cpu` controller is enabled for its children).
    V2 { base: PathBuf },
    /// The `cpu` hierarchy's directory, and the `cpuacct` one when mounted separately.
    V1 {
        cpu: PathBuf,
        cpuacct: Option<PathBuf>,
    },
}

/// One mounted cgroup hierarchy, from /proc/self/mountinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mount {
    /// The hierarchy path mounted there (not "/" inside some containers).
    root: String,
    point: PathBuf,
    v2: bool,
    /// Controllers of a v1 hierarchy (`cpu`, `cpuacct`, ...).
    controllers: Vec<String>,
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut mounts = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.len() < 5 || fields.len() < sep + 4 {
            continue;
        }
        let fstype = fields[sep + 1];
        let v2 = match fstype {
            "cgroup2" => true,
            "cgroup" => false,
            _ => continue,
        };
        let controllers = fields[sep + 3]
            .split(',')
            .filter(|o| matches!(*o, "cpu" | "cpuacct"))
            .map(str::to_owned)
            .collect();
        mounts.push(Mount {
            root: unescape(fields[3]),
            point: PathBuf::from(unescape(fields[4])),
            v2,
            controllers,
        });
    }
    mounts
}

/// mountinfo escapes spaces and such as octal (`\040`).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's path in each hierarchy, from /proc/self/cgroup: ("" for v2, or the v1
/// controller list) → path.
fn parse_self_cgroup(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            let ctl = parts.next()?;
            let path = parts.next()?;
            Some((ctl.to_owned(), path.to_owned()))
        })
        .collect()
}

/// The directory of `own` (a path in the hierarchy) under `mount`.
fn dir_of(mount: &Mount, own: &str) -> PathBuf {
    let rel = own
        .strip_prefix(mount.root.trim_end_matches('/'))
        .unwrap_or(own);
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() {
        mount.point.clone()
    } else {
        mount.point.join(rel)
    }
}

fn v2_has_cpu(dir: &Path) -> bool {
    fs::read_to_string(dir.join("cgroup.controllers"))
        .map(|s| s.split_whitespace().any(|c| c == "cpu"))
        .unwrap_or(false)
}

/// Finds where workload cgroups can go, from the given mountinfo and self-cgroup texts.
fn find_hierarchy(mountinfo: &str, self_cgroup: &str) -> Result<Hierarchy> {
    let mounts = parse_mountinfo(mountinfo);
    let own = parse_self_cgroup(self_cgroup);
    let own_path = |pred: &dyn Fn(&str) -> bool| {
        own.iter()
            .find(|(c, _)| pred(c))
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| "/".into())
    };
    if let Some(m) = mounts.iter().find(|m| m.v2 && v2_has_cpu(&m.point)) {
        let own_dir = dir_of(m, &own_path(&|c| c.is_empty()));
        // v2 forbids processes in a group whose children use controllers: our own group
        // holds us, so workload groups go beside it (in its parent), or in the root.
        let base = if own_dir == m.point {
            own_dir
        } else {
            own_dir.parent().map(Path::to_path_buf).unwrap_or(own_dir)
        };
        return Ok(Hierarchy::V2 { base });
    }
    let v1 = |name: &str| {
        mounts
            .iter()
            .find(|m| !m.v2 && m.controllers.iter().any(|c| c == name))
            .map(|m| {
                let path = own_path(&|c| c.split(',').any(|x| x == name));
                (m.point.clone(), dir_of(m, &path))
            })
    };
    match v1("cpu") {
        Some((cpu_point, cpu)) => {
            let cpuacct = v1("cpuacct")
                .filter(|(point, _)| *point != cpu_point)
                .map(|(_, dir)| dir);
            Ok(Hierarchy::V1 { cpu, cpuacct })
        }
        None => bail!("no cgroup hierarchy with the cpu controller is mounted"),
    }
}

/// The directories of the groups `cgroup` (a /proc/PID/cgroup text) names, in the hierarchies
/// [`find_hierarchy`] picks from `mountinfo`: v2's group, or v1's `cpu` group and its
/// `cpuacct` group when mounted apart. Where a process moved into a workload group came from.
fn find_dirs(mountinfo: &str, cgroup: &str) -> Option<Vec<PathBuf>> {
    let mounts = parse_mountinfo(mountinfo);
    let paths = parse_self_cgroup(cgroup);
    let path_of =
        |pred: &dyn Fn(&str) -> bool| paths.iter().find(|(c, _)| pred(c)).map(|(_, p)| p.clone());
    if let Some(m) = mounts.iter().find(|m| m.v2 && v2_has_cpu(&m.point)) {
        return Some(vec![dir_of(m, &path_of(&|c| c.is_empty())?)]);
    }
    let v1 = |name: &str| {
        let m = mounts
            .iter()
            .find(|m| !m.v2 && m.controllers.iter().any(|c| c == name))?;
        let path = path_of(&|c| c.split(',').any(|x| x == name))?;
        Some((m.point.clone(), dir_of(m, &path)))
    };
    let (cpu_point, cpu) = v1("cpu")?;
    let mut dirs = vec![cpu];
    dirs.extend(
        v1("cpuacct")
            .filter(|(point, _)| *point != cpu_point)
            .map(|(_, dir)| dir),
    );
    Some(dirs)
}

/// The directories of the groups process `pid` is in now, one per hierarchy a workload group
/// spans (see [`find_dirs`]); None when it is gone or the hierarchy is not found.
pub(crate) fn dirs_of_pid(pid: u32) -> Option<Vec<PathBuf>> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let cgroup = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    find_dirs(&mountinfo, &cgroup)
}

/// Where the cpu controller's hierarchy is mounted, as the probe reads tasks' groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CpuMount {
    /// The mount point, and the hierarchy path mounted there ("/" but inside some
    /// containers).
    pub point: PathBuf,
    pub root: String,
    pub v2: bool,
}

impl CpuMount {
    /// The directory of a path of the hierarchy (as /proc/PID/cgroup prints it).
    pub fn dir(&self, path: &str) -> PathBuf {
        dir_of(
            &Mount {
                root: self.root.clone(),
                point: self.point.clone(),
                v2: self.v2,
                controllers: Vec::new(),
            },
            path,
        )
    }
}

/// The hierarchy the cpu controller is bound to, from a mountinfo text: a v1 hierarchy with
/// `cpu` among its controllers, else a v2 one that has the controller.
pub(crate) fn cpu_mount(mountinfo: &str) -> Option<CpuMount> {
    let mounts = parse_mountinfo(mountinfo);
    let pick = mounts
        .iter()
        .find(|m| !m.v2 && m.controllers.iter().any(|c| c == "cpu"))
        .or_else(|| mounts.iter().find(|m| m.v2 && v2_has_cpu(&m.point)))?;
    Some(CpuMount {
        point: pick.point.clone(),
        root: pick.root.clone(),
        v2: pick.v2,
    })
}

/// Where workload cgroups go on this machine.
pub fn hierarchy() -> Result<Hierarchy> {
    let mountinfo =
        fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    let own = fs::read_to_string("/proc/self/cgroup").context("reading /proc/self/cgroup")?;
    find_hierarchy(&mountinfo, &own)
}

/// cgroup v1 `cpu.shares` for a v2-scale weight (100 ↔ 1024).
pub(crate) fn weight_to_shares(weight: u32) -> u64 {
    (u64::from(weight) * 1024 / 100).max(2)
}

const PREFIX: &str = "schedlab-";
/// Groups holding processes schedlab did not start (an attached row placed in a cgroup):
/// never killed, only emptied back to where their processes came from.
pub(crate) const ATTACHED_PREFIX: &str = "schedlab-attached-";

/// A workload's own cgroup. Dropping it kills whatever is still inside and removes it.
#[derive(Debug)]
pub struct WorkloadCgroup {
    version: Version,
    /// v2: the group. v1: the `cpu` group, then the `cpuacct` group when separate.
    dirs: Vec<PathBuf>,
    weight: u32,
}

impl WorkloadCgroup {
    /// Creates a group for workload `name` with a CPU weight (1..=10000, 100 = default).
    pub fn create(name: &str, weight: u32) -> Result<Self> {
        Self::create_in(&hierarchy()?, name, weight)
    }

    /// A group for processes schedlab did not start, named so that no sweep kills them. Its
    /// owner must [`disown`](Self::disown) it once emptied: dropping it kills what is inside.
    pub(crate) fn create_attached(name: &str, weight: u32) -> Result<Self> {
        Self::create_named(&hierarchy()?, ATTACHED_PREFIX, name, weight)
    }

    pub(crate) fn create_in(hierarchy: &Hierarchy, name: &str, weight: u32) -> Result<Self> {
        Self::create_named(hierarchy, PREFIX, name, weight)
    }

    fn create_named(hierarchy: &Hierarchy, prefix: &str, name: &str, weight: u32) -> Result<Self> {
        if !(1..=10_000).contains(&weight) {
            bail!("cgroup weight must be 1..10000, not {weight}");
        }
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let leaf = format!(
            "{prefix}{}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            sanitize(name)
        );
        let (version, bases) = match hierarchy {
            Hierarchy::V2 { base } => {
                enable_v2_cpu(base)?;
                (Version::V2, vec![base.clone()])
            }
            Hierarchy::V1 { cpu, cpuacct } => {
                let mut b = vec![cpu.clone()];
                b.extend(cpuacct.clone());
                (Version::V1, b)
            }
        };
        let mut group = WorkloadCgroup {
            version,
            dirs: Vec::new(),
            weight,
        };
        for base in bases {
            let dir = base.join(&leaf);
            fs::create_dir(&dir).with_context(|| {
                format!(
                    "creating cgroup {} (cgroup placement needs a writable cgroup hierarchy)",
                    dir.display()
                )
            })?;
            group.dirs.push(dir);
        }
        group.set_weight(weight)?;
        Ok(group)
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// The group's directory: v2's group, or v1's `cpu` group.
    pub fn dir(&self) -> &Path {
        &self.dirs[0]
    }

    /// Every directory of the group: v2's one, or v1's `cpu` and `cpuacct` ones.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    #[cfg(test)]
    /// Where its exact CPU usage is read: v2 `cpu.stat` (`usage_usec`), v1 `cpuacct.usage` (ns).
    pub(crate) fn usage_file(&self) -> PathBuf {
        match self.version {
            Version::V2 => self.dirs[0].join("cpu.stat"),
            Version::V1 => self.dirs.last().unwrap().join("cpuacct.usage"),
        }
    }

    /// Changes the CPU weight of a live group.
    pub(crate) fn set_weight(&mut self, weight: u32) -> Result<()> {
        if !(1..=10_000).contains(&weight) {
            bail!("cgroup weight must be 1..10000, not {weight}");
        }
        let (file, value) = match self.version {
            Version::V2 => ("cpu.weight", weight.to_string()),
            Version::V1 => ("cpu.shares", weight_to_shares(weight).to_string()),
        };
        let path = self.dirs[0].join(file);
        fs::write(&path, value).with_context(|| format!("writing {}", path.display()))?;
        self.weight = weight;
        Ok(())
    }

    /// Sets (or, with None, lifts) a bandwidth limit, in % of one CPU per 100 ms period.
    pub(crate) fn set_quota(&mut self, pct: Option<u32>) -> Result<()> {
        const PERIOD_US: u64 = 100_000;
        if let Some(p) = pct {
            if !(1..=MAX_CPU_QUOTA).contains(&p) {
                bail!(
                    "cpu quota must be 1..{} (% of one CPU), not {p}",
                    MAX_CPU_QUOTA
                );
            }
        }
        let quota_us = pct.map(|p| u64::from(p) * PERIOD_US / 100);
        let writes: Vec<(&str, String)> = match self.version {
            Version::V2 => vec![(
                "cpu.max",
                match quota_us {
                    Some(q) => format!("{q} {PERIOD_US}"),
                    None => format!("max {PERIOD_US}"),
                },
            )],
            Version::V1 => vec![
                ("cpu.cfs_period_us", PERIOD_US.to_string()),
                (
                    "cpu.cfs_quota_us",
                    quota_us.map_or_else(|| "-1".to_string(), |q| q.to_string()),
                ),
            ],
        };
        for (file, value) in writes {
            let path = self.dirs[0].join(file);
            fs::write(&path, &value)
                .with_context(|| format!("writing {value} to {}", path.display()))?;
        }
        Ok(())
    }

    /// Opens each hierarchy's `cgroup.procs`, for a child to join between fork and exec by
    /// writing "0" (= the writer) to them: see [`join_from_child`].
    pub(crate) fn open_procs(&self) -> Result<Vec<OwnedFd>> {
        self.dirs
            .iter()
            .map(|d| {
                let p = d.join("cgroup.procs");
                fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .map(OwnedFd::from)
                    .with_context(|| format!("opening {}", p.display()))
            })
            .collect()
    }

    /// Every thread in the group (v1 `tasks`, v2 `cgroup.threads`).
    pub fn threads(&self) -> Vec<u32> {
        let file = match self.version {
            Version::V2 => "cgroup.threads",
            Version::V1 => "tasks",
        };
        read_ids(&self.dirs[0].join(file))
    }

    /// Every process in the group.
    pub fn procs(&self) -> Vec<u32> {
        read_ids(&self.dirs[0].join("cgroup.procs"))
    }

    /// Its directories, leaving them and what is inside alone: the group is no longer this
    /// value's to kill or remove.
    pub(crate) fn disown(mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.dirs)
    }

    /// Kills everything inside, waits (up to `patience`) for it to go, and removes the group.
    pub fn remove(mut self, patience: Duration) -> Result<()> {
        self.teardown(patience)
    }

    fn teardown(&mut self, patience: Duration) -> Result<()> {
        let dirs = std::mem::take(&mut self.dirs);
        kill_and_remove(&dirs, Instant::now() + patience)
    }
}

impl Drop for WorkloadCgroup {
    fn drop(&mut self) {
        let _ = self.teardown(Duration::from_secs(2));
    }
}

/// Joins the groups whose `cgroup.procs` descriptors are given. Runs in the child between
/// fork and exec: async-signal-safe, no allocation.
///
/// # Safety
/// Only call in a freshly forked child, with every descriptor of `fds` open (they are raw).
pub(crate) unsafe fn join_from_child(fds: &[RawFd]) -> std::io::Result<()> {
    for &fd in fds {
        // SAFETY: the caller keeps `fd` open for the call.
        nix::unistd::write(unsafe { BorrowedFd::borrow_raw(fd) }, b"0")?;
    }
    Ok(())
}

/// Raw descriptors of `fds`, for [`join_from_child`].
pub fn raw(fds: &[OwnedFd]) -> Vec<RawFd> {
    fds.iter().map(AsRawFd::as_raw_fd).collect()
}

/// The exit path's kill-and-remove, for groups whose [`WorkloadCgroup`] another thread may
/// still hold: [`kill_and_remove`] on their directories, with nowhere to report a failure.
pub(crate) fn kill_and_remove_dirs(dirs: &[PathBuf], deadline: Instant) {
    let _ = kill_and_remove(dirs, deadline);
}

/// Kills every process of the group whose directories (v2's one, or v1's one per hierarchy)
/// are `dirs`, again until none is left (a fork loop may fork while we kill), then removes
/// the directories innermost first; gives up at `deadline`. A v2 group (5.14+) is killed
/// whole through `cgroup.kill`; elsewhere each process is killed by its pid.
fn kill_and_remove(dirs: &[PathBuf], deadline: Instant) -> Result<()> {
    loop {
        let procs: Vec<u32> = dirs
            .iter()
            .flat_map(|d| read_ids(&d.join("cgroup.procs")))
            .collect();
        if procs.is_empty() {
            break;
        }
        if !kill_whole_group(&dirs[0]) {
            for pid in procs {
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut last_err = None;
    for dir in dirs.iter().rev() {
        if let Err(e) = rmdir_patiently(dir, deadline) {
            last_err = Some(e);
        }
    }
    last_err.map_or(Ok(()), Err)
}

/// Writes "1" to the group's `cgroup.kill`, where there is one (v2, 5.14+); false elsewhere.
fn kill_whole_group(dir: &Path) -> bool {
    fs::OpenOptions::new()
        .write(true)
        .open(dir.join("cgroup.kill"))
        .and_then(|mut f| f.write_all(b"1"))
        .is_ok()
}

/// A removed group still busy for a moment (its last task exiting) answers EBUSY.
pub(crate) fn rmdir_patiently(dir: &Path, deadline: Instant) -> Result<()> {
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e)
                if Instant::now() < deadline && e.raw_os_error() == Some(Errno::EBUSY as i32) =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e).with_context(|| format!("removing cgroup {}", dir.display())),
        }
    }
}

pub(crate) fn read_ids(path: &Path) -> Vec<u32> {
    fs::read_to_string(path)
        .map(|s| {
            s.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Makes sure the children of `base` get the cpu controller.
fn enable_v2_cpu(base: &Path) -> Result<()> {
    let control = base.join("cgroup.subtree_control");
    let enabled = fs::read_to_string(&control)
        .map(|s| s.split_whitespace().any(|c| c == "cpu"))
        .unwrap_or(false);
    if !enabled {
        fs::OpenOptions::new()
            .write(true)
            .open(&control)
            .and_then(|mut f| f.write_all(b"+cpu"))
            .with_context(|| {
                format!(
                    "enabling the cpu controller in {} (cgroup placement needs it)",
                    control.display()
                )
            })?;
    }
    Ok(())
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if s.is_empty() {
        "workload".into()
    } else {
        s
    }
}

/// The supervisor pid in a group name `schedlab-<pid>-<seq>-<name>`.
fn owner_of(leaf: &str) -> Option<i32> {
    leaf.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Whether process `pid` exists. Signal 0 only asks (EPERM: it does, as another user's).
pub(crate) fn alive(pid: i32) -> bool {
    matches!(kill(Pid::from_raw(pid), None), Ok(()) | Err(Errno::EPERM))
}

/// Removes groups left by schedlab supervisors that no longer exist (a SIGKILLed dashboard
/// cannot clean up after itself). Returns how many were removed.
pub fn sweep_orphans() -> usize {
    let mut removed = 0;
    for base in bases() {
        let Ok(entries) = fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // What an attached row was placed in holds processes schedlab did not start:
            // cgroup_attached::sweep_orphans puts them back, never killing.
            if attached_owner(&name).is_some() {
                continue;
            }
            let Some(owner) = owner_of(&name) else {
                continue;
            };
            if alive(owner) {
                continue;
            }
            let dir = e.path();
            let deadline = Instant::now() + Duration::from_millis(500);
            if kill_and_remove(std::slice::from_ref(&dir), deadline).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// The roots schedlab's groups are made under: v2's, or v1's cpu and cpuacct hierarchies.
pub(crate) fn bases() -> Vec<PathBuf> {
    match hierarchy() {
        Ok(Hierarchy::V2 { base }) => vec![base],
        Ok(Hierarchy::V1 { cpu, cpuacct }) => std::iter::once(cpu).chain(cpuacct).collect(),
        Err(_) => Vec::new(),
    }
}

/// The supervisor that made an attached row's group, from the group's name.
pub(crate) fn attached_owner(name: &str) -> Option<i32> {
    name.strip_prefix(ATTACHED_PREFIX)?
        .split('-')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_split_cpu_and_cpuacct_as_on_these_machines() {
        // The v2 mount has no cpu controller (the test cannot fake its cgroup.controllers, and
        // /sys/fs/cgroup/unified on a hybrid machine lists none): v1 is chosen.
        let self_cg = "2:cpuacct:/\n1:cpu:/\n0::/\n";
        let h = find_hierarchy(V1_MOUNTS, self_cg).unwrap();
        if let Hierarchy::V1 { cpu, cpuacct } = h {
            assert_eq!(cpu, PathBuf::from("/sys/fs/cgroup/cpu"));
            assert_eq!(cpuacct, Some(PathBuf::from("/sys/fs/cgroup/cpuacct")));
        } else if !v2_has_cpu(Path::new("/sys/fs/cgroup/unified")) {
            panic!("expected v1, got {h:?}");
        }
    }

    #[test]
    fn v1_combined_mount_and_nested_own_group() {
        let mounts =
            "40 31 0:29 /lxc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        let self_cg = "3:cpu,cpuacct:/lxc/box\n";
        let h = find_hierarchy(mounts, self_cg).unwrap();
        assert_eq!(
            h,
            Hierarchy::V1 {
                cpu: PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/box"),
                cpuacct: None
            }
        );
    }

    #[test]
    fn no_cpu_controller_is_a_clear_error() {
        let mounts = "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let err = find_hierarchy(mounts, "4:memory:/\n").unwrap_err();
        assert!(err.to_string().contains("cpu controller"), "{err}");
    }

    #[test]
    fn shares_follow_weight() {
        assert_eq!(weight_to_shares(100), 1024);
        assert_eq!(weight_to_shares(50), 512);
        assert_eq!(weight_to_shares(1), 10);
        assert_eq!(weight_to_shares(10_000), 102_400);
    }

    #[test]
    fn names_are_sanitized_and_owned() {
        assert_eq!(sanitize("a b/c"), "a_b_c");
        assert_eq!(owner_of("schedlab-123-4-fork_load"), Some(123));
        assert_eq!(owner_of("user.slice"), None);
    }

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape("/a\\040b"), "/a b");
    }

    /// Creates a real group, puts a sleeping child in it, and checks removal kills and cleans.
    /// Needs a writable cgroup hierarchy (root in CI); says so when it has none.
    #[test]
    fn real_group_holds_a_child_and_is_removed() {
        let group = match WorkloadCgroup::create("unit-test", 50) {
            Ok(g) => g,
            Err(e) => {
                eprintln!(
                    "SKIPPED real_group_holds_a_child_and_is_removed: no writable cgroup: {e:#}"
                );
                return;
            }
        };
        let shares_or_weight = match group.version() {
            Version::V1 => fs::read_to_string(group.dir().join("cpu.shares")).unwrap(),
            Version::V2 => fs::read_to_string(group.dir().join("cpu.weight")).unwrap(),
        };
        assert!(["512", "50"].contains(&shares_or_weight.trim()));
        let fds = group.open_procs().unwrap();
        let raw_fds = raw(&fds);
        use std::os::unix::process::CommandExt;
        // SAFETY: pre_exec's closure runs in the forked child before exec, where join_from_child's
        // only calls, write(2) on the group's open cgroup.procs descriptors, are async-signal-safe.
        let mut child = unsafe {
            std::process::Command::new("sleep")
                .arg("30")
                .pre_exec(move || join_from_child(&raw_fds))
                .spawn()
                .unwrap()
        };
        assert_eq!(group.procs(), vec![child.id()]);
        assert!(group.usage_file().exists());
        let dir = group.dir().to_path_buf();
        group.remove(Duration::from_secs(2)).unwrap();
        assert!(!dir.exists());
        let status = child.wait().unwrap();
        assert!(!status.success());
    }
}
