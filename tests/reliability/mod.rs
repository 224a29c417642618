//! Helpers of the reliability suite: a tagged launcher, "nothing of this run is left"
//! (processes by tag, SysV objects by id), and the suite-wide before/after snapshot. (Uses
//! the crate's `common` module: a file that includes this one declares both.)
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::common::wait::{until, until_none_left};

pub const BIN: &str = env!("CARGO_BIN_EXE_schedlab");
/// Every process a case starts carries `TAG_VAR=<tag>` in its environment, inherited by
/// everything it forks or execs: "nothing of this run is left" is then exact on a machine
/// where other schedlab runs are going on.
pub const TAG_VAR: &str = "SCHEDLAB_RELIABILITY_TAG";

/// One case at a time: the SysV and process checks compare whole-machine snapshots.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn unique_tag(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{what}-{nanos}", std::process::id())
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
}

/// A `schedlab` command tagged with `tag`, in a process group of its own (so a test can
/// send a terminal's Ctrl-C to the group, as a shell would).
pub fn schedlab(tag: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env(TAG_VAR, tag)
        .env_remove("SCHEDLAB_INJECT_PANIC")
        // A debug build symbolising a backtrace on a loaded 2-CPU machine takes many seconds.
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .process_group(0);
    c
}

/// The pids of live (non-zombie) processes carrying `tag`.
pub fn tagged(tag: &str) -> Vec<i32> {
    let needle = format!("{TAG_VAR}={tag}");
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `within` for every process of `tag` to be gone; panics naming the survivors.
pub fn assert_no_process(tag: &str, within: Duration, case: &str) {
    let gone = until_none_left(within, Duration::from_millis(20), || tagged(tag));
    let Err(left) = gone else { return };
    let names: Vec<String> = left
        .iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            format!(
                "{p}: {} [{}]",
                String::from_utf8_lossy(&cmd).replace('\0', " "),
                stat.trim()
            )
        })
        .collect();
    for p in &left {
        // SAFETY: kill takes no pointer and touches no memory of ours; these are processes
        // the case left behind.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    panic!("{case}: processes left behind: {names:?}");
}

/// SysV message queue and semaphore set ids, from /proc/sysvipc (what `ipcs -q -s` lists).
pub fn sysv_ids() -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for (kind, file) in [("q", "/proc/sysvipc/msg"), ("s", "/proc/sysvipc/sem")] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            if let Some(id) = line.split_whitespace().nth(1) {
                ids.insert(format!("{kind}{id}"));
            }
        }
    }
    ids
}

/// SysV ids held by live processes outside this suite: other schedlab runs on a shared
/// machine (other tests, other users), read from the ledgers every schedlab process keeps in
/// /dev/shm. An object whose owner is dead, or carries this suite's tag, is never excused.
pub fn foreign_ids() -> BTreeSet<String> {
    use schedlab::sys::kernel::sysv::{self, Object};
    let mut ids = BTreeSet::new();
    for ledger in sysv::ledgers() {
        if sysv::process_start_time(ledger.pid) != Some(ledger.start) {
            continue; // dead (or its pid reused): its objects count as leaks
        }
        let Ok(env) = std::fs::read(format!("/proc/{}/environ", ledger.pid)) else {
            continue;
        };
        if env
            .split(|&b| b == 0)
            .any(|v| v.starts_with(format!("{TAG_VAR}=").as_bytes()))
        {
            continue;
        }
        for object in ledger.objects {
            ids.insert(match object {
                Object::Sem(id) => format!("s{id}"),
                Object::Msg(id) => format!("q{id}"),
            });
        }
    }
    ids
}

/// Waits up to `within` for the SysV objects to be `before` again; panics naming the extra.
/// Objects of live schedlab processes outside this suite are not ours and are ignored.
/// Returns false when the check could not be exact (see the warning below).
pub fn assert_sysv_back_to(before: &BTreeSet<String>, within: Duration, case: &str) -> bool {
    let back = until_none_left(within, Duration::from_millis(50), || {
        let now = sysv_ids();
        let foreign = foreign_ids();
        now.difference(before)
            .filter(|id| !foreign.contains(*id))
            .cloned()
            .collect()
    });
    let Err(extra) = back else { return true };
    let others = foreign_schedlab();
    if !others.is_empty() {
        // Another build's schedlab is running on this machine (a shared host): its objects
        // cannot all be told from ours (an older build may keep no ledger). CI runs the suite
        // alone, where this check is strict.
        eprintln!(
            "WARNING {case}: SysV objects appeared that no ledger explains {extra:?}, \
             while other schedlab builds run here {others:?}: not counted as leaks"
        );
        return false;
    }
    panic!("{case}: SysV objects left (q = queue, s = semaphore set): {extra:?}");
}

/// Live processes running a `schedlab*` binary, with the directory it was run from.
fn schedlab_processes() -> Vec<(i32, PathBuf)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
            continue;
        };
        let exe = PathBuf::from(exe.to_string_lossy().trim_end_matches(" (deleted)"));
        let schedlab = exe
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("schedlab"));
        if let (true, Some(dir)) = (schedlab, exe.parent()) {
            found.push((pid, dir.to_owned()));
        }
    }
    found
}

/// Live schedlab processes of another build (another worktree, a release binary), untagged.
pub fn foreign_schedlab() -> Vec<i32> {
    let ours = Path::new(BIN).parent().unwrap();
    schedlab_processes()
        .into_iter()
        .filter(|(_, dir)| dir != ours)
        .map(|(pid, _)| pid)
        .collect()
}

/// Processes running a binary of this build (schedlab, schedlab-nil, schedlab-forker,
/// schedlab-hackbench).
pub fn our_binaries() -> BTreeSet<i32> {
    let ours = Path::new(BIN).parent().unwrap();
    schedlab_processes()
        .into_iter()
        .filter(|(_, dir)| dir == ours)
        .map(|(pid, _)| pid)
        .collect()
}

/// The suite-wide check of the issue: SysV ids and this build's processes, snapshotted when
/// a test starts and compared when it ends. Holding it also serialises the tests.
pub struct Snapshot {
    _serial: MutexGuard<'static, ()>,
    sysv: BTreeSet<String>,
    procs: BTreeSet<i32>,
}

impl Snapshot {
    pub fn take() -> Self {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        Self {
            _serial: serial,
            sysv: sysv_ids(),
            procs: our_binaries(),
        }
    }

    pub fn sysv(&self) -> &BTreeSet<String> {
        &self.sysv
    }

    /// Everything as it was: no new SysV object, no new process of this build.
    pub fn check(self, test: &str) {
        assert_sysv_back_to(&self.sysv, Duration::from_secs(15), test);
        let gone = until_none_left(Duration::from_secs(10), Duration::from_millis(50), || {
            our_binaries().difference(&self.procs).copied().collect()
        });
        if let Err(extra) = gone {
            panic!("{test}: processes of this build left: {extra:?}");
        }
    }
}

/// Starts `cmd` with its stdout discarded and its stderr read to the end on a thread of its
/// own (so that a chatty run never blocks on a full pipe); join the thread for the text.
pub fn spawn_reading_stderr(mut cmd: Command) -> (Child, JoinHandle<String>) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn schedlab");
    let stderr = crate::common::child::read_in_background(child.stderr.take().unwrap());
    (child, stderr)
}

/// Waits for `child` up to `within`; None (after killing its group) if it is still running.
pub fn wait_within(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let ended = until(within, Duration::from_millis(10), || {
        child.try_wait().unwrap().ok_or(())
    });
    if ended.is_err() {
        // SAFETY: kill takes no pointer; the child, not yet reaped, leads its own process
        // group.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
    }
    ended.ok()
}

/// Runs to completion with a bound; panics (after killing it) if it hangs.
pub fn output_within(mut cmd: Command, within: Duration, case: &str) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn schedlab");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(within) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill takes no pointer and touches no memory of ours; -pid is the case's own
            // process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            panic!("{case}: still running after {within:?} (a hang)");
        }
    }
}

/// Bad input's contract: one line `schedlab <cmd>: error: ...`, no panic; exit 1, or 2 for
/// a usage error the argument parser found, which may add one `Usage: ...` line.
pub fn assert_one_line_error(out: &Output, case: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !err.contains("panicked"),
        "{case}: panicked instead of an error line:\n{err}"
    );
    let code = out.status.code();
    assert!(
        matches!(code, Some(1) | Some(2)),
        "{case}: exit {:?}, want 1 (or 2 from the argument parser)\n{err}",
        out.status
    );
    let lines: Vec<&str> = err.trim_end().lines().collect();
    let first = lines.first().copied().unwrap_or("").to_owned();
    assert!(
        first.starts_with("schedlab") && first.contains(": error: "),
        "{case}: first line is not an error line: {err}"
    );
    match code {
        Some(2) => assert!(
            lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("Usage: schedlab")),
            "{case}: one line, then at most the usage: {err}"
        ),
        _ => assert_eq!(lines.len(), 1, "{case}: one line: {err}"),
    }
    first
}

/// Children of `pid` (direct), from /proc/<pid>/task/*/children.
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut kids = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
                kids.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
    kids
}

pub fn exe_name(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Kills a helper process's group when the test ends, pass or fail.
pub struct KillOnDrop(pub i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill takes no pointer and touches no memory of ours; the group is the helper's
        // own.
        unsafe { libc::kill(-self.0, libc::SIGKILL) };
    }
}
