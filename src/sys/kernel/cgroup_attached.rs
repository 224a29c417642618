//! Placing processes schedlab did not start in a cgroup of their own (an attached row given
//! `placement = "cgroup"`), and putting them back where they were.
//!
//! A process moves by writing its pid to the group's `cgroup.procs` (its threads go with it);
//! children it starts afterwards are born inside. Putting back empties the group: each
//! process goes to the groups it came from, or, for one born inside, to those its nearest
//! moved ancestor came from; then the group is removed. Nothing is ever signalled: a process
//! that will not move keeps the group, which is left in place.

use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::cgroup::{self, read_ids, rmdir_patiently};
use super::proc;

/// Where one moved process came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub pid: u32,
    /// Its start time (field 22 of /proc/PID/stat): a reused pid is not taken for it.
    pub start: u64,
    /// Its groups before the move, one per hierarchy of the group it moved into.
    pub from: Vec<PathBuf>,
}

/// Moves process `pid` (all its threads) into the groups `dirs`, one per hierarchy.
pub(crate) fn move_into(pid: u32, dirs: &[PathBuf]) -> io::Result<()> {
    for d in dirs {
        fs::write(d.join("cgroup.procs"), pid.to_string())?;
    }
    Ok(())
}

/// The group process `pid` goes back to in hierarchy `i`: its own origin, or its nearest
/// moved ancestor's (it was born inside), or the first moved process's.
fn home_of(pid: u32, origins: &[Origin], i: usize) -> Option<PathBuf> {
    let mut p = pid;
    // A process tree is shallow; the bound only guards against a loop in a racing read.
    for _ in 0..64 {
        let Some(st) = proc::read_stat(p) else { break };
        if let Some(o) = origins.iter().find(|o| o.pid == p && o.start == st.start) {
            return o.from.get(i).cloned();
        }
        if st.ppid <= 1 {
            break;
        }
        p = st.ppid;
    }
    origins.first().and_then(|o| o.from.get(i).cloned())
}

/// Empties the group whose directories (one per hierarchy) are `group` back to where its
/// processes came from and removes it. False when something stayed: the group is left.
pub(crate) fn put_back(group: &[PathBuf], origins: &[Origin]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let mut moved = 0;
        for (i, dir) in group.iter().enumerate() {
            for pid in read_ids(&dir.join("cgroup.procs")) {
                moved += 1;
                let parent = dir.parent().unwrap_or(dir).to_path_buf();
                let home = home_of(pid, origins, i).unwrap_or_else(|| parent.clone());
                // Its old group removed since: the group's parent takes it.
                if move_into(pid, std::slice::from_ref(&home)).is_err() {
                    let _ = move_into(pid, std::slice::from_ref(&parent));
                }
            }
        }
        // Once a pass finds nothing: a fork during the pass may have added a child.
        if moved == 0 || Instant::now() >= deadline {
            break;
        }
    }
    let deadline = Instant::now() + Duration::from_millis(500);
    group
        .iter()
        .rev()
        .map(|d| rmdir_patiently(d, deadline).is_ok())
        .filter(|ok| !ok)
        .count()
        == 0
}

/// The attached groups dead supervisors left whose restorer could not empty them: their
/// processes go back to the parent group, unharmed, and the groups are removed. How many were.
pub fn sweep_orphans() -> usize {
    let mut removed = 0;
    for base in cgroup::bases() {
        let Ok(entries) = fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let owner = cgroup::attached_owner(&e.file_name().to_string_lossy());
            if owner.is_some_and(|o| !cgroup::alive(o)) && put_back(&[e.path()], &[]) {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_goes_home_to_its_own_origin_or_its_ancestors() {
        // SAFETY: getpid and getppid take nothing.
        let (me, parent) = unsafe { (libc::getpid() as u32, libc::getppid() as u32) };
        let start = |p| proc::read_stat(p).unwrap().start;
        let origin = |pid, start, dir: &str| Origin {
            pid,
            start,
            from: vec![PathBuf::from(dir)],
        };
        let origins = [
            origin(parent, start(parent), "/a"),
            origin(me, start(me), "/b"),
        ];
        assert_eq!(home_of(me, &origins, 0), Some(PathBuf::from("/b")));
        // Born inside: its parent's.
        assert_eq!(home_of(me, &origins[..1], 0), Some(PathBuf::from("/a")));
        // A reused pid (another start time) is not the one saved: the ancestor's.
        let reused = [origins[0].clone(), origin(me, start(me) + 1, "/b")];
        assert_eq!(home_of(me, &reused, 0), Some(PathBuf::from("/a")));
        assert_eq!(home_of(me, &[], 0), None);
    }

    #[test]
    fn an_orphaned_attached_group_is_emptied_into_its_parent_unharmed() {
        // SAFETY: geteuid takes nothing.
        if unsafe { libc::geteuid() } != 0 {
            return eprintln!("skipped: cgroups need root");
        }
        let Some(base) = cgroup::bases().into_iter().next() else {
            return eprintln!("skipped: no cpu hierarchy");
        };
        // A dead owner: a child that ran and was reaped.
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let owner = gone.id();
        gone.wait().unwrap();
        let dir = base.join(format!("{}{owner}-0-orphan-test", cgroup::ATTACHED_PREFIX));
        if fs::create_dir(&dir).is_err() {
            return eprintln!("skipped: {} is not writable", base.display());
        }
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        fs::write(dir.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
        let removed = sweep_orphans();
        let alive = sleeper.try_wait().unwrap().is_none();
        let groups = fs::read_to_string(format!("/proc/{}/cgroup", sleeper.id())).unwrap();
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        let _ = fs::remove_dir(&dir);
        assert!(removed >= 1 && !dir.exists(), "{removed} removed");
        assert!(alive, "the sweep signalled what it did not start");
        assert!(!groups.contains("orphan-test"), "{groups}");
    }
}
