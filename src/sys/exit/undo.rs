//! Undoing the knobs schedlab changed on processes it did not start (an attached row's nice,
//! policy and CPU affinity, and the cgroup it was placed in), on every exit path.
//!
//! A placement is journalled as the group (before it holds anything) and each process's
//! groups before its move: putting it back empties the group to where they came from and
//! removes it (src/sys/kernel/cgroup_attached.rs).
//!
//! Before a change, each thread's old values are written to a journal file, with the thread's
//! start time (/proc/TID/stat) so that a reused tid is never touched. Detaching a row
//! (stop, remove, restart, its processes gone) restores its threads and drops them from the
//! journal; a normal end, a signal (SIGINT, SIGTERM, SIGHUP) and a panic restore everything
//! (the lifeline's exit hook, and `main` after the command returns). For SIGKILL, which no
//! hook sees, a restorer process is started with the first journal: `schedlab
//! __restore-knobs JOURNAL` in a session of its own, blocked reading a pipe whose only writer
//! is this process. When this process is gone however it went, the read returns EOF and the
//! restorer replays the journal (if it is still there), removes it and exits. It never
//! signals anything: it only sets nice, policy and affinity back on threads whose start time
//! still matches, and moves processes back to their cgroups. Once the journal is empty, it is removed, the pipe is closed and the
//! restorer is reaped: a normal exit leaves neither behind.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::sys::kernel::cgroup::WorkloadCgroup;
use crate::sys::kernel::cgroup_attached::{self as placed, Origin};
use crate::sys::kernel::proc;

/// The hidden first argument that makes `schedlab` the restorer.
pub const RESTORER_ARG: &str = "__restore-knobs";

/// One thread's values before schedlab changed them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Saved {
    /// The workload (row) it was changed for.
    pub owner: u32,
    pub tid: u32,
    /// Its start time in clock ticks since boot (field 22 of /proc/TID/stat).
    pub start: u64,
    pub nice: i32,
    /// As sched_getscheduler returns it (SCHED_RESET_ON_FORK included).
    pub policy: i32,
    pub rt_priority: i32,
    pub cpus: Vec<usize>,
}

impl Saved {
    /// `owner tid start nice policy rt_priority cpus` (cpus as "0-3,6").
    fn line(&self) -> String {
        format!(
            "{} {} {} {} {} {} {}",
            self.owner,
            self.tid,
            self.start,
            self.nice,
            self.policy,
            self.rt_priority,
            self.cpus
                .iter()
                .map(|&c| c as u32)
                .collect::<crate::sys::kernel::cpuset::CpuSet>()
        )
    }

    fn parse(line: &str) -> Option<Saved> {
        let mut f = line.split_whitespace();
        let mut n = || f.next();
        let owner = n()?.parse().ok()?;
        let tid = n()?.parse().ok()?;
        let start = n()?.parse().ok()?;
        let nice = n()?.parse().ok()?;
        let policy = n()?.parse().ok()?;
        let rt_priority = n()?.parse().ok()?;
        let cpus = crate::sys::kernel::cpuset::CpuSet::parse(n().unwrap_or(""))
            .map(|s| s.iter().map(|c| c as usize).collect())
            .unwrap_or_default();
        Some(Saved {
            owner,
            tid,
            start,
            nice,
            policy,
            rt_priority,
            cpus,
        })
    }

    /// The thread's values now, or None when it is gone.
    pub(crate) fn read(owner: u32, tid: u32) -> Option<Saved> {
        let st = proc::read_stat(tid)?;
        if matches!(st.state, b'Z' | b'X') {
            return None;
        }
        // SAFETY: sched_getscheduler takes a pid only.
        let policy = unsafe { libc::sched_getscheduler(tid as libc::pid_t) };
        if policy < 0 {
            return None;
        }
        let cpus = sched_getaffinity(Pid::from_raw(tid as i32)).ok()?;
        let cpus = (0..CpuSet::count())
            .filter(|&c| cpus.is_set(c).unwrap_or(false))
            .collect();
        Some(Saved {
            owner,
            tid,
            start: st.start,
            nice: st.nice,
            policy,
            rt_priority: st.rt_priority as i32,
            cpus,
        })
    }

    /// Sets its old values back if the thread is still the one saved (same start time).
    /// Returns whether it was.
    fn put_back(&self) -> bool {
        match proc::read_stat(self.tid) {
            Some(st) if st.start == self.start && !matches!(st.state, b'Z' | b'X') => {}
            _ => return false,
        }
        let tid = self.tid as libc::pid_t;
        let param = libc::sched_param {
            sched_priority: self.rt_priority,
        };
        // Policy first: back from real-time before nice matters again.
        // SAFETY: `param` is a live sched_param that sched_setscheduler only reads.
        unsafe { libc::sched_setscheduler(tid, self.policy, &param) };
        // SAFETY: setpriority takes integers only.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, self.tid as libc::id_t, self.nice) };
        if !self.cpus.is_empty() {
            let mut set = CpuSet::new();
            for &c in &self.cpus {
                let _ = set.set(c);
            }
            let _ = sched_setaffinity(Pid::from_raw(tid), &set);
        }
        true
    }
}

/// A cgroup an attached row was placed in: `group OWNER DIR..`, and each process moved into
/// it: `moved OWNER PID START DIR..` (its groups before, one per hierarchy).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Placed {
    Group { owner: u32, dirs: Vec<PathBuf> },
    Moved { owner: u32, origin: Origin },
}

impl Placed {
    fn owner(&self) -> u32 {
        match self {
            Placed::Group { owner, .. } | Placed::Moved { owner, .. } => *owner,
        }
    }

    fn line(&self) -> String {
        let dirs = |d: &[PathBuf]| {
            d.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            Placed::Group { owner, dirs: d } => format!("group {owner} {}", dirs(d)),
            Placed::Moved { owner, origin } => format!(
                "moved {owner} {} {} {}",
                origin.pid,
                origin.start,
                dirs(&origin.from)
            ),
        }
    }

    fn parse(line: &str) -> Option<Placed> {
        let mut f = line.split_whitespace();
        let kind = f.next()?;
        let owner = f.next()?.parse().ok()?;
        match kind {
            "group" => Some(Placed::Group {
                owner,
                dirs: f.map(PathBuf::from).collect(),
            }),
            "moved" => Some(Placed::Moved {
                owner,
                origin: Origin {
                    pid: f.next()?.parse().ok()?,
                    start: f.next()?.parse().ok()?,
                    from: f.map(PathBuf::from).collect(),
                },
            }),
            _ => None,
        }
    }
}

/// Empties the groups of `placed` back to where their processes came from (per owner).
/// Returns how many groups were emptied and removed.
fn put_back_placed(placed: &[Placed]) -> usize {
    placed
        .iter()
        .filter_map(|p| match p {
            Placed::Group { owner, dirs } => Some((*owner, dirs)),
            Placed::Moved { .. } => None,
        })
        .filter(|(owner, dirs)| {
            let origins: Vec<Origin> = placed
                .iter()
                .filter_map(|p| match p {
                    Placed::Moved { owner: o, origin } if o == owner => Some(origin.clone()),
                    _ => None,
                })
                .collect();
            placed::put_back(dirs, &origins)
        })
        .count()
}

struct Journal {
    path: PathBuf,
    saved: Vec<Saved>,
    placed: Vec<Placed>,
    /// The groups of `placed`, to change their weight and quota (never dropped whole: that
    /// would kill what is inside; see `unplace`).
    groups: Vec<(u32, WorkloadCgroup)>,
    /// The restorer and the write end of its pipe (this process is its only writer).
    restorer: Option<(Child, ChildStdin)>,
}

impl Journal {
    fn is_empty(&self) -> bool {
        self.saved.is_empty() && self.placed.is_empty()
    }

    fn write(&self) -> std::io::Result<()> {
        write(&self.path, &self.saved, &self.placed)
    }
}

static JOURNAL: Mutex<Option<Journal>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Journal>> {
    JOURNAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where this process's journal goes.
fn journal_path() -> PathBuf {
    std::env::temp_dir().join(format!("schedlab-undo-{}.journal", std::process::id()))
}

/// The schedlab binary: this one, or (under `cargo test`, whose harness is this process) the
/// one cargo built beside it.
fn schedlab_exe() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    if exe.file_name().is_some_and(|n| n == "schedlab") {
        return Ok(exe);
    }
    let beside = exe.with_file_name("schedlab");
    let above = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("schedlab"));
    [Some(beside), above]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .ok_or_else(|| anyhow::anyhow!("no schedlab binary beside {}", exe.display()))
}

fn start_restorer(path: &Path) -> Result<(Child, ChildStdin)> {
    let mut child = Command::new(schedlab_exe()?)
        .arg(RESTORER_ARG)
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the knob restorer")?;
    // std makes the pipe close-on-exec: no workload started later holds its write end.
    let stdin = child.stdin.take().context("the knob restorer's pipe")?;
    Ok((child, stdin))
}

/// Writes the journal whole, then renames it over the old one: a SIGKILL mid-write leaves the
/// old journal, never half a new one.
fn write(path: &Path, saved: &[Saved], placed: &[Placed]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    for s in saved {
        writeln!(f, "{}", s.line())?;
    }
    for p in placed {
        writeln!(f, "{}", p.line())?;
    }
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Saves the values of `tids` not yet saved, for `owner`, before they are changed; starts the
/// restorer with the first. An error means nothing may be changed.
pub(crate) fn remember(owner: u32, tids: &[u32]) -> Result<()> {
    let mut guard = lock();
    let j = opened(&mut guard)?;
    let before = j.saved.len();
    for &tid in tids {
        if j.saved.iter().any(|s| s.tid == tid) {
            continue;
        }
        if let Some(s) = Saved::read(owner, tid) {
            j.saved.push(s);
        }
    }
    if j.saved.len() != before || !j.path.exists() {
        j.write()
            .with_context(|| format!("writing the undo journal {}", j.path.display()))?;
    }
    Ok(())
}

/// The journal, started (with its restorer and exit hook) when there is none yet.
fn opened(guard: &mut Option<Journal>) -> Result<&mut Journal> {
    if guard.is_none() {
        let path = journal_path();
        let restorer = start_restorer(&path)?;
        *guard = Some(Journal {
            path,
            saved: Vec::new(),
            placed: Vec::new(),
            groups: Vec::new(),
            restorer: Some(restorer),
        });
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| crate::sys::exit::lifeline::on_exit(restore_all));
    }
    Ok(guard.as_mut().expect("journal set above"))
}

/// Places the processes `pids` of `owner` (an attached row named `name`) in a cgroup of
/// their own with `weight` and `quota` (% of one CPU); when it has one, sets its weight and
/// quota. The group and each process's groups before its move are journalled first. An
/// error (EACCES when not root, a process that will not move) puts back what moved and
/// leaves nothing changed. Returns how many processes moved.
pub(crate) fn place(
    owner: u32,
    name: &str,
    pids: &[u32],
    weight: u32,
    quota: Option<u32>,
) -> Result<usize> {
    let mut guard = lock();
    let j = opened(&mut guard)?;
    if let Some((_, group)) = j.groups.iter_mut().find(|(o, _)| *o == owner) {
        group.set_weight(weight)?;
        group.set_quota(quota)?;
        return Ok(0);
    }
    let result = place_new(j, owner, name, pids, (weight, quota));
    if result.is_err() && j.is_empty() {
        finish(guard.take().expect("journal"));
    }
    result
}

/// `place` for an owner without a group yet; `(weight, quota)` as there.
fn place_new(
    j: &mut Journal,
    owner: u32,
    name: &str,
    pids: &[u32],
    (weight, quota): (u32, Option<u32>),
) -> Result<usize> {
    let mut group = WorkloadCgroup::create_attached(name, weight)?;
    let dirs = group.dirs().to_vec();
    if let Err(e) = group.set_quota(quota) {
        // Empty: removing it kills nothing.
        let _ = group.remove(Duration::from_millis(500));
        return Err(e);
    }
    j.groups.push((owner, group));
    j.placed.push(Placed::Group {
        owner,
        dirs: dirs.clone(),
    });
    let mut moved = 0;
    let mut failed = None;
    for &pid in pids {
        let (Some(from), Some(st)) = (
            crate::sys::kernel::cgroup::dirs_of_pid(pid),
            proc::read_stat(pid),
        ) else {
            continue; // gone meanwhile
        };
        if from
            .iter()
            .any(|d| d.to_string_lossy().contains(char::is_whitespace))
        {
            failed = Some(anyhow::anyhow!(
                "{pid} is in a cgroup whose path has a space: schedlab cannot note where to put it back"
            ));
            break;
        }
        j.placed.push(Placed::Moved {
            owner,
            origin: Origin {
                pid,
                start: st.start,
                from,
            },
        });
        let written = j
            .write()
            .with_context(|| format!("writing the undo journal {}", j.path.display()));
        if let Err(e) = written.and_then(|()| {
            placed::move_into(pid, &dirs)
                .with_context(|| format!("moving process {pid} into {}", dirs[0].display()))
        }) {
            failed = Some(e);
            break;
        }
        moved += 1;
    }
    match failed {
        None => Ok(moved),
        Some(e) => {
            unplace_in(j, owner);
            Err(e)
        }
    }
}

/// Puts the processes of `owner`'s group back where they came from and removes the group.
/// Whether it had one.
pub(crate) fn unplace(owner: u32) -> bool {
    let mut guard = lock();
    let Some(j) = guard.as_mut() else {
        return false;
    };
    let had = unplace_in(j, owner);
    if j.is_empty() {
        finish(guard.take().expect("journal"));
    }
    had
}

fn unplace_in(j: &mut Journal, owner: u32) -> bool {
    let (mine, rest): (Vec<Placed>, Vec<Placed>) =
        j.placed.drain(..).partition(|p| p.owner() == owner);
    j.placed = rest;
    if let Some(k) = j.groups.iter().position(|(o, _)| *o == owner) {
        // Emptied below: the value must not kill what is inside when it goes.
        j.groups.remove(k).1.disown();
    }
    if mine.is_empty() {
        return false;
    }
    if put_back_placed(&mine) == 0 {
        // Something would not leave: keep it journalled, for the restorer or a sweep.
        j.placed.extend(mine);
    }
    let _ = j.write();
    true
}

/// Whether anything is saved for `owner` (its knobs were changed and not yet put back).
pub(crate) fn owns(owner: u32) -> bool {
    lock()
        .as_ref()
        .is_some_and(|j| j.saved.iter().any(|s| s.owner == owner))
}

/// Takes in the threads of `pids` born since `owner`'s knobs were changed: a new thread of a
/// saved process, or the threads of a child of one, inherited the change from its creator, so
/// it is saved with its creator's old values (and its own start time) to be put back with it.
/// A process that descends from nothing saved (a new match of a selector) is left alone.
/// Returns how many threads were taken in.
pub(crate) fn adopt(owner: u32, pids: &[u32]) -> usize {
    let mut guard = lock();
    let Some(j) = guard.as_mut() else {
        return 0;
    };
    let mut added = 0;
    for &pid in pids {
        let Some(tids) = proc::threads(pid) else {
            continue;
        };
        if tids
            .iter()
            .all(|t| j.saved.iter().any(|s| s.tid == *t && s.owner == owner))
        {
            continue;
        }
        // Its own process's saved threads first (the leader's when it is there), else its
        // parent's: where it inherited the change from.
        let origin_of = |j: &Journal, p: u32| -> Option<Saved> {
            let own = proc::threads(p).unwrap_or_default();
            j.saved
                .iter()
                .filter(|s| s.owner == owner && own.contains(&s.tid))
                .min_by_key(|s| (s.tid != p, s.tid))
                .cloned()
        };
        let origin = origin_of(j, pid).or_else(|| {
            let ppid = proc::read_stat(pid)?.ppid;
            origin_of(j, ppid)
        });
        let Some(origin) = origin else {
            continue;
        };
        for tid in tids {
            if j.saved.iter().any(|s| s.tid == tid) {
                continue;
            }
            let Some(st) = proc::read_stat(tid) else {
                continue;
            };
            j.saved.push(Saved {
                tid,
                start: st.start,
                ..origin.clone()
            });
            added += 1;
        }
    }
    if added > 0 {
        let _ = j.write();
    }
    added
}

/// Restores what was saved for `owner` and forgets it. Returns how many threads were put back.
pub(crate) fn restore(owner: u32) -> usize {
    let mut guard = lock();
    let Some(j) = guard.as_mut() else {
        return 0;
    };
    let (mine, rest): (Vec<Saved>, Vec<Saved>) = j.saved.drain(..).partition(|s| s.owner == owner);
    j.saved = rest;
    let n = mine.iter().filter(|s| s.put_back()).count();
    let placed = unplace_in(j, owner);
    if j.is_empty() {
        finish(guard.take().expect("journal"));
    } else if !mine.is_empty() || placed {
        let _ = j.write();
    }
    n
}

/// Restores everything saved and ends the journal and its restorer: on every exit path. Does
/// not wait for a lock held elsewhere (a panic while it was held): the restorer then replays
/// the journal once this process is gone.
pub fn restore_all() {
    let journal = match JOURNAL.try_lock() {
        Ok(mut g) => g.take(),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().take(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    if let Some(mut j) = journal {
        for s in &j.saved {
            s.put_back();
        }
        for (_, group) in j.groups.drain(..) {
            group.disown();
        }
        put_back_placed(&j.placed);
        finish(j);
    }
}

/// Removes the journal, closes the restorer's pipe and reaps it (it finds no journal and exits).
fn finish(mut j: Journal) {
    // Emptied by now; dropped whole, a group would kill what is inside.
    for (_, group) in j.groups.drain(..) {
        group.disown();
    }
    let _ = std::fs::remove_file(&j.path);
    if let Some((mut child, stdin)) = j.restorer.take() {
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Ours, and stuck: it is the restorer only, never an attached process.
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Threads saved now (tests).
pub fn saved_count() -> usize {
    lock().as_ref().map_or(0, |j| j.saved.len())
}

/// The journal of this process while it has one (tests).
pub fn journal_file() -> Option<PathBuf> {
    lock().as_ref().map(|j| j.path.clone())
}

/// The restorer's pid while it runs (tests).
pub fn restorer_pid() -> Option<u32> {
    lock()
        .as_ref()
        .and_then(|j| j.restorer.as_ref().map(|(c, _)| c.id()))
}

/// The restorer (`schedlab __restore-knobs JOURNAL`): leaves the dashboard's session and
/// terminal, waits for EOF on stdin (its parent is gone, or done), replays the journal if it
/// is still there, removes it and returns the exit code.
pub fn restorer_main(journal: &Path) -> i32 {
    // Out of the terminal's process group: a Ctrl-C or a hang-up that ends the dashboard must
    // not end its restorer first.
    let _ = nix::unistd::setsid();
    for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGPIPE, libc::SIGQUIT] {
        // SAFETY: SIG_IGN installs no handler code; the disposition is process-wide and this
        // process has no other thread yet.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    replay(journal);
    0
}

/// Puts back every thread of a journal file that is still the one saved, and removes it.
pub(crate) fn replay(journal: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(journal) else {
        return 0;
    };
    let n = text
        .lines()
        .filter_map(Saved::parse)
        .filter(|s| s.put_back())
        .count();
    let placed: Vec<Placed> = text.lines().filter_map(Placed::parse).collect();
    put_back_placed(&placed);
    let _ = std::fs::remove_file(journal);
    let _ = std::fs::remove_file(journal.with_extension("tmp"));
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips() {
        let s = Saved {
            owner: 3,
            tid: 1234,
            start: 998877,
            nice: -5,
            policy: 0x4000_0003,
            rt_priority: 0,
            cpus: vec![0, 1, 3],
        };
        assert_eq!(s.line(), "3 1234 998877 -5 1073741827 0 0-1,3");
        assert_eq!(Saved::parse(&s.line()), Some(s));
        assert_eq!(Saved::parse("3 x"), None);
    }

    #[test]
    fn a_placement_round_trips_and_is_not_taken_for_a_thread() {
        let group = Placed::Group {
            owner: 2,
            dirs: vec!["/sys/fs/cgroup/cpu/schedlab-attached-9-0-db".into()],
        };
        let moved = Placed::Moved {
            owner: 2,
            origin: Origin {
                pid: 4321,
                start: 77,
                from: vec![
                    "/sys/fs/cgroup/cpu/user.slice".into(),
                    "/sys/fs/cgroup/cpuacct".into(),
                ],
            },
        };
        for p in [group, moved] {
            assert_eq!(Placed::parse(&p.line()), Some(p.clone()));
            assert_eq!(Saved::parse(&p.line()), None);
        }
        assert_eq!(Placed::parse("3 1234 998877 -5 0 0 0-1"), None);
    }

    #[test]
    fn a_reused_tid_is_never_touched() {
        // This thread, saved with a start time it does not have: left as it is.
        // SAFETY: gettid takes nothing.
        let tid = unsafe { libc::gettid() } as u32;
        let mut s = Saved::read(1, tid).unwrap();
        // A nice it does not have, whatever it runs at (`nice -n 19 cargo test` too).
        let now = proc::read_stat(tid).unwrap().nice;
        let other = if now < 19 { 19 } else { 18 };
        s.start += 1;
        s.nice = other;
        assert!(!s.put_back());
        assert_eq!(proc::read_stat(tid).unwrap().nice, now);
    }
}
