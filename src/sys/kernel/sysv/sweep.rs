//! Sweeping the ledgers of schedlab processes that died without cleaning up (a SIGKILL), and
//! reading ledgers for tests and diagnostics.
//!
//! A ledger is swept only by whoever takes its lock (see [`super::ledger`]): then its owner is
//! dead and no other sweep is at it. The sweeper removes every object found under the
//! ledger's keys and every private queue carrying its tag, whether or not its id reached the
//! ledger (a SIGKILL during msgget), checked to be its creator's (made by the file's uid);
//! keys and tag count only while their names still link to this file. Then it unlinks the
//! names, which frees the key block and the tag; only then does it let the lock go. A
//! sweeper that opened the file before another finished with it finds it nameless and
//! leaves it.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::ledger::{
    self, ledger_path, tag_path, CAPACITY, HEADER_WORDS, H_BLOCK, H_IN_USE, H_IPC_NS, H_MAGIC,
    H_PID, H_START, H_TAG, KIND_MSG, KIND_SEM, LEDGER_DIR, MAGIC, PREFIX, TAG_PREFIX,
};

/// Ledgers of builds before key blocks: `schedlab-sysv-<pid>-<start>`, one word per object
/// (`kind << 32 | id + 1`), swept when their owner is dead.
const LEGACY_PREFIX: &str = "schedlab-sysv-";

/// Removes the objects, and the ledgers, of schedlab processes that died without cleaning up.
/// Returns how many objects it removed.
pub fn sweep_orphans() -> Result<usize> {
    let entries = match std::fs::read_dir(LEDGER_DIR) {
        Ok(e) => e,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err).context(format!("listing {LEDGER_DIR}")),
    };
    let namespace = ledger::ipc_namespace();
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_ledger_name(name) {
            // Opening our own ledger and closing it again would drop our lock.
            if !ledger::is_own(&path) {
                removed += sweep_ledger(&path, namespace)?;
            }
        } else if let Some((pid, start)) = legacy_owner(name) {
            if !legacy_owner_alive(pid, start) {
                removed += sweep_legacy(&path)?;
            }
        }
    }
    Ok(removed)
}

/// A ledger's key-block name or tag name.
fn is_ledger_name(name: &str) -> bool {
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    name.strip_prefix(PREFIX).is_some_and(|b| digits(b, 10))
        || name.strip_prefix(TAG_PREFIX).is_some_and(|t| digits(t, 8))
}

/// Whether `path` names the file `stat` describes.
fn names(path: &Path, stat: &nix::sys::stat::FileStat) -> bool {
    nix::sys::stat::lstat(path).is_ok_and(|s| s.st_ino == stat.st_ino && s.st_dev == stat.st_dev)
}

/// The names that are still this ledger's: its key block's, and its tag's (with the tag).
fn claims(words: &[u64], stat: &nix::sys::stat::FileStat) -> (Option<PathBuf>, Option<u32>) {
    let block = ledger_path(words[H_BLOCK] as u32);
    let tag = words[H_TAG] as u32;
    (
        names(&block, stat).then_some(block),
        (tag != 0 && names(&tag_path(tag), stat)).then_some(tag),
    )
}

/// Sweeps one ledger if its lock can be had; 0 when its owner lives or another sweep has it.
fn sweep_ledger(path: &Path, namespace: u64) -> Result<usize> {
    let file = match open_ledger(path) {
        Ok(file) => file,
        // Gone already, or another user's (whose objects we may not remove anyway).
        Err(Errno::ENOENT | Errno::EACCES | Errno::EPERM | Errno::ELOOP) => return Ok(0),
        Err(err) => return Err(err).context(format!("opening {}", path.display())),
    };
    if !lock_unless_alive(&file, path)? {
        return Ok(0);
    }
    let stat = nix::sys::stat::fstat(&file).context("fstat of a ledger")?;
    if stat.st_nlink == 0 {
        return Ok(0); // another sweep finished with it while we were opening it
    }
    let Some(words) = read_words(&file)? else {
        return Ok(0); // not a ledger of ours
    };
    let theirs = words[H_IPC_NS];
    if theirs != 0 && namespace != 0 && theirs != namespace {
        return Ok(0); // its objects are in another IPC namespace: a sweep there finds them
    }
    empty_ledger(&words, &stat)
}

/// Removes what a ledger names (its owner dead, or stopped for good), then its names.
fn empty_ledger(words: &[u64], stat: &nix::sys::stat::FileStat) -> Result<usize> {
    let (block, tag) = claims(words, stat);
    let mut removed = 0;
    if block.is_some() {
        for (kind, key, _) in entries(words) {
            removed += remove_under_key(kind, key, stat.st_uid) as usize;
        }
    }
    if let Some(tag) = tag {
        for id in tagged_queues(tag, stat.st_uid) {
            removed += super::remove_object(KIND_MSG, id) as usize;
        }
    }
    // The names go last, the tag's first, and with the lock still held: from here on the key
    // block and the tag are free for others.
    for name in [tag.map(tag_path), block].into_iter().flatten() {
        match std::fs::remove_file(&name) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err).context(format!("removing {}", name.display())),
        }
    }
    Ok(removed)
}

/// Removes the SysV objects of process `pid`, and its ledger, while it lives: for a process
/// that is stopped (SIGSTOP, waited for) and will be killed, so that it creates nothing more.
/// Its lock does not matter then. Lets a parent end a child with thousands of threads without
/// waiting for the child's clean-up to be scheduled among them, or for its death.
pub fn remove_objects_of_stopped(pid: u32) -> Result<usize> {
    let Some(start) = super::process_start_time(pid) else {
        return Ok(0);
    };
    let Ok(dir) = std::fs::read_dir(LEDGER_DIR) else {
        return Ok(0);
    };
    for entry in dir.flatten() {
        let path = entry.path();
        let is_block = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(PREFIX) && is_ledger_name(n));
        if !is_block || ledger::is_own(&path) {
            continue;
        }
        let Ok(file) = open_ledger(&path) else {
            continue;
        };
        let stat = nix::sys::stat::fstat(&file).context("fstat of a ledger")?;
        let Some(words) = read_words(&file)? else {
            continue;
        };
        if words[H_PID] == pid as u64 && words[H_START] == start {
            return empty_ledger(&words, &stat);
        }
    }
    Ok(0)
}

/// Private queues with mode `tag` made by `uid`, from /proc/sysvipc/msg (what `ipcs -q`
/// lists: key, id, mode in octal, ..., creator's uid in the tenth column).
fn tagged_queues(tag: u32, uid: libc::uid_t) -> Vec<i32> {
    let text = std::fs::read_to_string("/proc/sysvipc/msg").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let private = f.first()?.parse::<i64>().ok()? == 0;
            let mode = u32::from_str_radix(f.get(2)?, 8).ok()?;
            let creator = f.get(9)?.parse::<libc::uid_t>().ok()?;
            let id = f.get(1)?.parse::<i32>().ok()?;
            (private && mode == tag && creator == uid).then_some(id)
        })
        .collect()
}

/// How long a sweep waits for another sweep of the same dead ledger to finish, so that when
/// `schedlab cleanup` returns, what dead processes left is gone.
const OTHER_SWEEP_WAIT: Duration = Duration::from_secs(3);

/// Takes the ledger's lock: false if its owner lives. Held by a dead owner's ledger, the lock
/// is another sweep's: wait for it to finish (then the file is nameless, or the other sweep
/// died and it is ours).
fn lock_unless_alive(file: &OwnedFd, path: &Path) -> Result<bool> {
    let deadline = Instant::now() + OTHER_SWEEP_WAIT;
    loop {
        match ledger::lock(file, libc::F_OFD_SETLK) {
            Ok(()) => return Ok(true),
            Err(Errno::EAGAIN | Errno::EACCES) => {}
            Err(err) => return Err(err).context(format!("locking {}", path.display())),
        }
        // The owner's pid and start time, from the header (fixed before the file had a name).
        let owner = read_words(file)?.map(|w| (w[H_PID] as u32, w[H_START]));
        let owner_alive = owner.is_none_or(|(pid, start)| {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Ok(stat) => stat_says_alive(&stat, start),
                Err(err) => err.kind() != io::ErrorKind::NotFound,
            }
        });
        if owner_alive || Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn open_ledger(path: &Path) -> nix::Result<OwnedFd> {
    nix::fcntl::open(
        path,
        OFlag::O_RDWR | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
        Mode::empty(),
    )
}

/// The header and the entries in use, or None if the file is not a ledger of this format.
fn read_words(file: &OwnedFd) -> Result<Option<Vec<u64>>> {
    let file = std::fs::File::from(file.try_clone().context("dup of a ledger")?);
    let read = |words: usize, at: usize| -> Result<Vec<u64>> {
        let mut bytes = vec![0u8; words * 8];
        file.read_exact_at(&mut bytes, (at * 8) as u64)
            .context("reading a ledger")?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect())
    };
    let mut words = read(HEADER_WORDS, 0)?;
    if words[H_MAGIC] != MAGIC {
        return Ok(None);
    }
    let in_use = (words[H_IN_USE] as usize).min(CAPACITY);
    words.extend(read(2 * in_use, HEADER_WORDS)?);
    Ok(Some(words))
}

/// The entries in use: kind, key, and the id if it was recorded.
fn entries(words: &[u64]) -> impl Iterator<Item = (u64, libc::key_t, Option<i32>)> + '_ {
    words[HEADER_WORDS..].chunks_exact(2).filter_map(|e| {
        let (kind, key) = (e[0] >> 32, e[0] as u32 as libc::key_t);
        let id = (e[1] != 0).then(|| (e[1] - 1) as u32 as i32);
        (kind != 0 && key != libc::IPC_PRIVATE).then_some((kind, key, id))
    })
}

/// The id of the object of `kind` under `key`, if there is one.
fn lookup(kind: u64, key: libc::key_t) -> Option<i32> {
    // SAFETY: without IPC_CREAT, msgget and semget only look a key up; no memory is passed.
    let id = unsafe {
        match kind {
            KIND_MSG => libc::msgget(key, 0),
            KIND_SEM => libc::semget(key, 0, 0),
            _ => return None,
        }
    };
    (id >= 0).then_some(id)
}

/// The uid that created object `id`.
fn creator(kind: u64, id: i32) -> Option<libc::uid_t> {
    match kind {
        KIND_MSG => {
            // SAFETY: msqid_ds is plain data, all-zero valid; IPC_STAT fills it in.
            let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
            // SAFETY: `ds` is a valid, writable msqid_ds for the call's duration.
            (unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) } == 0).then_some(ds.msg_perm.cuid)
        }
        KIND_SEM => {
            // SAFETY: semid_ds is plain data, all-zero valid; IPC_STAT fills it in.
            let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
            // SAFETY: IPC_STAT takes a `struct semid_ds *` as its fourth (semun) argument.
            let rc = unsafe { libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) };
            (rc == 0).then_some(ds.sem_perm.cuid)
        }
        _ => None,
    }
}

/// Removes the object under `key` if the ledger's owner (by uid) made it.
fn remove_under_key(kind: u64, key: libc::key_t, uid: libc::uid_t) -> bool {
    match lookup(kind, key) {
        Some(id) if creator(kind, id) == Some(uid) => super::remove_object(kind, id),
        _ => false,
    }
}

fn legacy_owner(name: &str) -> Option<(u32, u64)> {
    let (pid, start) = name.strip_prefix(LEGACY_PREFIX)?.split_once('-')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Whether the writer of a legacy ledger still runs: same pid, same start time, not a zombie.
/// Anything but "no such process" that stops us reading it counts as alive: a wrong "dead"
/// would sweep a live process's objects.
fn legacy_owner_alive(pid: u32, start: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_says_alive(&stat, start),
        Err(err) => {
            err.kind() != io::ErrorKind::NotFound && err.raw_os_error() != Some(libc::ESRCH)
        }
    }
}

pub(super) fn stat_says_alive(stat: &str, start: u64) -> bool {
    // A line we cannot read counts as alive: a wrong "dead" would sweep a live process's objects.
    crate::sys::kernel::proc::stat(stat.as_bytes())
        .is_none_or(|s| !matches!(s.state, b'Z' | b'X') && s.start == start)
}

fn sweep_legacy(path: &Path) -> Result<usize> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => return Ok(0),
        Err(err) => return Err(err).context(format!("reading {}", path.display())),
    };
    let mut removed = 0;
    for (kind, id) in legacy_objects(&bytes) {
        removed += super::remove_object(kind, id) as usize;
    }
    let _ = std::fs::remove_file(path);
    Ok(removed)
}

fn legacy_objects(bytes: &[u8]) -> impl Iterator<Item = (u64, i32)> + '_ {
    bytes.chunks_exact(8).filter_map(|c| {
        let word = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
        let low = word & 0xffff_ffff;
        (low != 0).then(|| (word >> 32, (low - 1) as u32 as i32))
    })
}

/// A SysV object a ledger names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Object {
    Sem(i32),
    Msg(i32),
}

impl Object {
    fn new(kind: u64, id: i32) -> Option<Self> {
        match kind {
            KIND_SEM => Some(Object::Sem(id)),
            KIND_MSG => Some(Object::Msg(id)),
            _ => None,
        }
    }
}

/// A ledger in /dev/shm as another process sees it, for tests and diagnostics.
#[derive(Clone, Debug)]
pub struct LedgerView {
    pub path: PathBuf,
    /// The process that wrote it, and its start time (clock ticks since boot).
    pub pid: u32,
    pub start: u64,
    /// What it names now: objects with their id recorded, and objects found under the keys of
    /// entries whose id is not (yet) recorded.
    pub objects: Vec<Object>,
}

/// Every ledger this process may read, of this format and the earlier one; never its own
/// (reading it through a second descriptor would drop its lock).
pub fn ledgers() -> Vec<LedgerView> {
    let Ok(dir) = std::fs::read_dir(LEDGER_DIR) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| read_ledger(&entry.path()))
        .collect()
}

/// The ledger at `path`, if it is one and this process may read it (never its own).
pub fn read_ledger(path: &Path) -> Option<LedgerView> {
    let name = path.file_name()?.to_str()?;
    if is_ledger_name(name) {
        if ledger::is_own(path) {
            return None;
        }
        let file = OwnedFd::from(std::fs::File::open(path).ok()?);
        let stat = nix::sys::stat::fstat(&file).ok()?;
        let words = read_words(&file).ok()??;
        let (_, tag) = claims(&words, &stat);
        let mut objects: Vec<Object> = entries(&words)
            .filter_map(|(kind, key, id)| Object::new(kind, id.or_else(|| lookup(kind, key))?))
            .collect();
        if let Some(tag) = tag {
            for id in tagged_queues(tag, stat.st_uid) {
                if !objects.contains(&Object::Msg(id)) {
                    objects.push(Object::Msg(id));
                }
            }
        }
        Some(LedgerView {
            path: path.to_owned(),
            pid: words[H_PID] as u32,
            start: words[H_START],
            objects,
        })
    } else {
        let (pid, start) = legacy_owner(name)?;
        let bytes = std::fs::read(path).ok()?;
        let objects = legacy_objects(&bytes)
            .filter_map(|(kind, id)| Object::new(kind, id))
            .collect();
        Some(LedgerView {
            path: path.to_owned(),
            pid,
            start,
            objects,
        })
    }
}

/// A ledger written by process `pid`, if one is left (by pid alone: the process may be gone).
pub fn ledger_of(pid: u32) -> Option<LedgerView> {
    ledgers().into_iter().find(|l| l.pid == pid)
}
