//! Watching processes schedlab did not start: a selector (a pid, a process name, a session,
//! a cgroup), what it matches now, and which processes it takes in at each /proc scan. An
//! attached workload is never signalled: nothing here or in the Lab kills it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::reader::{read_file, read_path, ReadErr};

/// What an attached workload watches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    /// A process, its threads and its children (born later too).
    Pid(u32),
    /// Every process of this `comm`, and their children.
    Comm(String),
    /// Every process of this session, and their children.
    Session(u32),
    /// Every process in this cgroup directory and the groups below it.
    Cgroup(PathBuf),
}

/// The selector keys of an `attach` workload, in the order they are named in messages.
pub const KEYS: [&str; 4] = ["pid", "comm", "session", "cgroup"];

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Pid(p) => write!(f, "pid:{p}"),
            Selector::Comm(c) => write!(f, "comm:{c}"),
            Selector::Session(s) => write!(f, "session:{s}"),
            Selector::Cgroup(d) => write!(f, "cgroup:{}", d.display()),
        }
    }
}

/// What an `attach` workload without exactly one selector is told.
pub const ONE_OF: &str = "kind attach needs exactly one of: pid, comm, session, cgroup";

/// The longest `comm` the kernel keeps (TASK_COMM_LEN - 1).
const COMM_LEN: usize = 15;

impl Selector {
    /// `pid:1234`, `comm:make`, `session:77`, `cgroup:/sys/fs/cgroup/x` (or a cgroup path as
    /// /proc/PID/cgroup writes it), as `--attach` takes it. Not checked against the machine:
    /// see [`Selector::resolve`].
    pub fn parse(s: &str) -> Result<Selector, String> {
        let (key, value) = s.split_once(':').ok_or_else(|| {
            format!("`{s}` is not a selector: pid:PID, comm:NAME, session:SID or cgroup:PATH")
        })?;
        Selector::from_key(key, value).map_err(|e| format!("`{s}`: {e}"))
    }

    /// The selector of one key and its value.
    pub fn from_key(key: &str, value: &str) -> Result<Selector, String> {
        let id = |what: &str| match value.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!(
                "{what} must be a positive integer, found `{value}`"
            )),
        };
        match key {
            "pid" => id("pid").map(Selector::Pid),
            "session" => id("session").map(Selector::Session),
            "comm" if value.is_empty() => Err("comm must not be empty".into()),
            "comm" if value.len() > COMM_LEN => Err(format!(
                "comm `{value}` is longer than the {COMM_LEN} bytes the kernel keeps of a name"
            )),
            "comm" => Ok(Selector::Comm(value.to_owned())),
            "cgroup" if value.is_empty() => Err("cgroup must not be empty".into()),
            "cgroup" => Ok(Selector::Cgroup(value.into())),
            _ => Err(format!(
                "unknown selector `{key}`, expected one of: {}",
                KEYS.join(", ")
            )),
        }
    }

    /// Checks it against the machine: the process or session exists, the name matches a
    /// process, the path is a cgroup (a cgroup path is found under the cgroup mounts). Returns
    /// it with a cgroup's directory made absolute; an error is one line.
    pub fn resolve(&self, proc_root: &Path) -> Result<Selector, String> {
        let table = ProcTable::read(proc_root);
        let me = std::process::id();
        match self {
            Selector::Pid(p) if *p == me => Err(format!("pid {p} is schedlab itself")),
            Selector::Pid(p) => match table.0.get(p) {
                Some(_) => Ok(self.clone()),
                None => Err(format!("no process {p}")),
            },
            Selector::Comm(c) => {
                if table.0.iter().any(|(pid, i)| *pid != me && &*i.comm == c) {
                    Ok(self.clone())
                } else {
                    Err(format!("no process is named `{c}`"))
                }
            }
            Selector::Session(s) => {
                if table.0.iter().any(|(pid, i)| *pid != me && i.sid == *s) {
                    Ok(self.clone())
                } else {
                    Err(format!("no process is in session {s}"))
                }
            }
            Selector::Cgroup(path) => cgroup_dir(proc_root, path).map(Selector::Cgroup),
        }
    }

    /// [`Selector::resolve`] against this machine's /proc.
    pub fn resolve_here(&self) -> Result<Selector, String> {
        self.resolve(Path::new("/proc"))
    }

    /// The directory whose usage counts it exactly (a cgroup's).
    pub fn cgroup(&self) -> Option<&Path> {
        match self {
            Selector::Cgroup(d) => Some(d),
            _ => None,
        }
    }
}

/// A cgroup directory: `path` itself when it holds `cgroup.procs`, else `path` under each
/// cgroup mount (v2 first, then v1 cpu, cpuacct, any other).
fn cgroup_dir(proc_root: &Path, path: &Path) -> Result<PathBuf, String> {
    let is_cgroup = |d: &Path| d.join("cgroup.procs").is_file();
    if path.is_absolute() && is_cgroup(path) {
        return Ok(path.to_path_buf());
    }
    let mounts = std::fs::read_to_string(proc_root.join("self/mountinfo")).unwrap_or_default();
    let rel = path.strip_prefix("/").unwrap_or(path);
    let mut points: Vec<(u8, PathBuf)> = mounts
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let fstype = r.next()?;
            let opts = r.nth(1).unwrap_or("");
            let rank = match fstype {
                "cgroup2" => 0,
                "cgroup" if opts.split(',').any(|o| o == "cpu") => 1,
                "cgroup" if opts.split(',').any(|o| o == "cpuacct") => 2,
                "cgroup" => 3,
                _ => return None,
            };
            Some((rank, PathBuf::from(point)))
        })
        .collect();
    points.sort();
    points
        .into_iter()
        .map(|(_, p)| p.join(rel))
        .find(|d| is_cgroup(d))
        .ok_or_else(|| {
            format!(
                "{} is not a cgroup (no cgroup.procs there, nor under a cgroup mount)",
                path.display()
            )
        })
}

/// What the attach selectors need of a process, learnt once per process at a /proc scan.
#[derive(Clone, Debug)]
pub(super) struct ProcInfo {
    pub ppid: u32,
    pub sid: u32,
    pub comm: Box<str>,
}

/// Every process's parent, session and name (a one-off read for [`Selector::resolve`]).
struct ProcTable(HashMap<u32, ProcInfo>);

impl ProcTable {
    fn read(proc_root: &Path) -> ProcTable {
        let mut out = HashMap::new();
        each_stat(proc_root, &mut Vec::new(), |pid, stat| {
            if let Some(i) = info_of(stat) {
                out.insert(pid, i);
            }
        });
        ProcTable(out)
    }
}

/// Each process under `proc_root` (the real /proc or a fake tree) with its stat line, for the
/// one-off listings here (a selector's resolution, a knob change's members): procfs lists the
/// processes and holds each one's directory open, and the stat line is opened under that
/// directory, so a pid reused since the listing is never read as the process listed. The
/// probe's own scan at sweeps stays on a plain listing (see `Probe::scan_proc`).
fn each_stat(proc_root: &Path, buf: &mut Vec<u8>, mut each: impl FnMut(u32, &[u8])) {
    let Ok(all) = procfs::process::all_processes_with_root(proc_root) else {
        return;
    };
    for p in all.flatten() {
        let Ok(pid) = u32::try_from(p.pid) else {
            continue;
        };
        let Ok(file) = p.open_relative("stat") else {
            continue;
        };
        if read_file(&file, buf).is_ok() {
            each(pid, buf);
        }
    }
}

/// A stat line's parent, session and name.
pub(super) fn info_of(stat: &[u8]) -> Option<ProcInfo> {
    let st = super::parse::stat(stat)?;
    let comm = crate::sys::kernel::proc::stat_comm(stat)?;
    Some(ProcInfo {
        ppid: st.ppid,
        sid: st.session,
        comm: comm.into(),
    })
}

/// The processes (pid, start) an attached selector holds now. `held`: those it held at the
/// last scan, kept while they live (a process that leaves the session or is renamed stays
/// watched, as do children its parent's death handed to init); `cache`: every process's
/// (pgid, start); `info`: their parent, session and name; `skip`: processes never to take
/// (schedlab itself, the workloads it started).
pub(super) fn members(
    sel: &Selector,
    held: &HashMap<u32, u64>,
    cache: &HashMap<u32, (u32, u64)>,
    info: &HashMap<u32, ProcInfo>,
    skip: &dyn Fn(u32, u32) -> bool,
    buf: &mut Vec<u8>,
) -> HashMap<u32, u64> {
    let alive = |pid: u32, start: u64| cache.get(&pid).is_some_and(|e| e.1 == start);
    let mut out: HashMap<u32, u64> = HashMap::new();
    let take = |pid: u32, out: &mut HashMap<u32, u64>| {
        if let Some(&(pgid, start)) = cache.get(&pid) {
            if pgid != u32::MAX && !skip(pid, pgid) {
                out.insert(pid, start);
            }
        }
    };
    match sel {
        Selector::Cgroup(dir) => {
            // Exactly who is in the group now: its processes and its descendants groups'.
            for pid in cgroup_procs(dir, buf) {
                take(pid, &mut out);
            }
            return out;
        }
        Selector::Pid(p) => take(*p, &mut out),
        Selector::Comm(c) => {
            for (pid, i) in info {
                if &*i.comm == c {
                    take(*pid, &mut out);
                }
            }
        }
        Selector::Session(s) => {
            for (pid, i) in info {
                if i.sid == *s {
                    take(*pid, &mut out);
                }
            }
        }
    }
    for (&pid, &start) in held {
        if alive(pid, start) {
            out.insert(pid, start);
        }
    }
    // Their children, and theirs: born after their parent (a reused parent pid is not ours).
    let by_parent: HashMap<u32, Vec<u32>> = info.iter().fold(HashMap::new(), |mut m, (p, i)| {
        m.entry(i.ppid).or_default().push(*p);
        m
    });
    let mut todo: Vec<u32> = out.keys().copied().collect();
    let mut seen: HashSet<u32> = todo.iter().copied().collect();
    while let Some(parent) = todo.pop() {
        let parent_start = out.get(&parent).copied().unwrap_or(0);
        for &child in by_parent.get(&parent).into_iter().flatten() {
            let Some(&(pgid, start)) = cache.get(&child) else {
                continue;
            };
            if start >= parent_start && pgid != u32::MAX && !skip(child, pgid) && seen.insert(child)
            {
                out.insert(child, start);
                todo.push(child);
            }
        }
    }
    out
}

/// The processes `sel` holds now, read afresh from `proc_root` (for a knob change, which may
/// come before the first sample): what [`members`] takes, plus `held`, those the probe held at
/// its last scan while they live. `skip` as for [`members`].
/// The processes a selector matches now in /proc (a pid's descendants too), less `skip`.
pub(crate) fn matching_now(sel: &Selector, skip: &dyn Fn(u32) -> bool) -> Vec<u32> {
    members_now(sel, Path::new("/proc"), &HashMap::new(), &|pid, _| {
        skip(pid)
    })
}

pub(crate) fn members_now(
    sel: &Selector,
    proc_root: &Path,
    held: &HashMap<u32, u64>,
    skip: &dyn Fn(u32, u32) -> bool,
) -> Vec<u32> {
    let mut cache = HashMap::new();
    let mut info = HashMap::new();
    let mut buf = Vec::new();
    each_stat(proc_root, &mut buf, |pid, stat| {
        let Some(st) = super::parse::stat(stat) else {
            return;
        };
        if st.kthread || matches!(st.state, b'Z' | b'X') {
            return;
        }
        cache.insert(pid, (st.pgrp, st.start));
        if let Some(i) = info_of(stat) {
            info.insert(pid, i);
        }
    });
    let mut pids: Vec<u32> = members(sel, held, &cache, &info, skip, &mut buf)
        .into_keys()
        .collect();
    pids.sort_unstable();
    pids
}

/// The pids in a cgroup and every group below it.
fn cgroup_procs(dir: &Path, buf: &mut Vec<u8>) -> Vec<u32> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        match read_path(&d.join("cgroup.procs"), buf) {
            Ok(()) => out.extend(
                buf.split(|c| *c == b'\n')
                    .filter_map(|l| std::str::from_utf8(l).ok()?.trim().parse::<u32>().ok()),
            ),
            Err(ReadErr::Gone | ReadErr::Failed(_)) => continue,
        }
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(e.path());
            }
        }
    }
    out
}

/// Whether a cgroup directory is still there (a removed group ends its row).
pub(super) fn cgroup_exists(dir: &Path) -> bool {
    dir.join("cgroup.procs").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_from_their_words() {
        assert_eq!(Selector::parse("pid:12"), Ok(Selector::Pid(12)));
        assert_eq!(
            Selector::parse("comm:make"),
            Ok(Selector::Comm("make".into()))
        );
        assert_eq!(Selector::parse("session:7"), Ok(Selector::Session(7)));
        assert_eq!(
            Selector::parse("cgroup:/sys/fs/cgroup/x"),
            Ok(Selector::Cgroup("/sys/fs/cgroup/x".into()))
        );
        assert!(Selector::parse("pid:0").unwrap_err().contains("positive"));
        assert!(Selector::parse("pid:x").is_err());
        assert!(Selector::parse("make")
            .unwrap_err()
            .contains("not a selector"));
        assert!(Selector::parse("uid:0")
            .unwrap_err()
            .contains("unknown selector"));
        assert!(Selector::parse("comm:abcdefghijklmnopq")
            .unwrap_err()
            .contains("15 bytes"));
        assert_eq!(Selector::Pid(3).to_string(), "pid:3");
    }

    #[test]
    fn a_fake_tree_is_listed_with_its_stat_lines() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let proc = |pid: u32, comm: &str, state: char, ppid: u32, start: u64, flags: u64| {
            std::fs::create_dir(root.join(pid.to_string())).unwrap();
            let line = format!(
                "{pid} ({comm}) {state} {ppid} {ppid} {ppid} 0 -1 {flags} 0 0 0 0 0 0 0 0 20 0 1 0 \
                 {start} 0 0 0 1 2 3 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
            );
            std::fs::write(root.join(pid.to_string()).join("stat"), line).unwrap();
        };
        proc(10, "make", 'S', 1, 100, 4194304);
        proc(11, "cc 1", 'R', 10, 101, 4194304);
        // A zombie child and a kernel thread are never members.
        proc(12, "as", 'Z', 11, 102, 4194304);
        proc(2, "kthreadd", 'S', 0, 1, 0x0020_0000);
        // Not a process; and a process whose stat cannot be read.
        std::fs::create_dir(root.join("self")).unwrap();
        std::fs::create_dir(root.join("13")).unwrap();
        let mut listed = Vec::new();
        each_stat(root, &mut Vec::new(), |pid, stat| {
            listed.push((
                pid,
                crate::sys::kernel::proc::stat_comm(stat)
                    .unwrap()
                    .to_owned(),
            ));
        });
        listed.sort();
        let names: Vec<(u32, &str)> = listed.iter().map(|(p, c)| (*p, c.as_str())).collect();
        assert_eq!(
            names,
            [(2, "kthreadd"), (10, "make"), (11, "cc 1"), (12, "as")]
        );
        let none = |_: u32, _: u32| false;
        let pids = members_now(&Selector::Pid(10), root, &HashMap::new(), &none);
        assert_eq!(pids, [10, 11]);
        assert_eq!(
            Selector::Comm("cc 1".into()).resolve(root),
            Ok(Selector::Comm("cc 1".into()))
        );
        assert_eq!(
            Selector::Pid(14).resolve(root),
            Err("no process 14".to_owned())
        );
    }

    #[test]
    fn children_and_their_children_are_taken_in_but_never_a_skipped_one() {
        let info = |ppid, sid, comm: &str| ProcInfo {
            ppid,
            sid,
            comm: comm.into(),
        };
        let infos: HashMap<u32, ProcInfo> = [
            (10, info(1, 10, "make")),
            (11, info(10, 10, "cc1")),
            (12, info(11, 10, "as")),
            (13, info(1, 13, "make")),
            (20, info(1, 20, "other")),
            (21, info(10, 10, "schedlab")),
        ]
        .into();
        let cache: HashMap<u32, (u32, u64)> = [
            (10, (10, 100)),
            (11, (10, 101)),
            (12, (10, 102)),
            (13, (13, 50)),
            (20, (20, 10)),
            (21, (10, 103)),
        ]
        .into();
        let skip = |pid: u32, _| pid == 21;
        let mut buf = Vec::new();
        let mut pids_of = |sel: &Selector, held: &HashMap<u32, u64>| {
            let mut pids: Vec<u32> = members(sel, held, &cache, &infos, &skip, &mut buf)
                .into_keys()
                .collect();
            pids.sort();
            pids
        };
        assert_eq!(pids_of(&Selector::Pid(10), &HashMap::new()), [10, 11, 12]);
        let m = pids_of(&Selector::Comm("make".into()), &HashMap::new());
        assert_eq!(m.len(), 4, "{m:?}");
        // A held process that left the session stays; one whose pid was reused does not.
        let held: HashMap<u32, u64> = [(20, 10), (13, 49)].into();
        assert_eq!(pids_of(&Selector::Session(10), &held), [10, 11, 12, 20]);
    }
}
