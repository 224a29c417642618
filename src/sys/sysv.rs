//! SysV semaphores and message queues, with a ledger that outlives a SIGKILL.
//!
//! Every object schedlab creates is written into a ledger file
//! `/dev/shm/schedlab-sysv-<pid>-<starttime>`, mapped shared, before it is used. Recording an
//! id is a plain store into the mapping, so even msgbench's timed msgget loop pays no syscall
//! for it. Objects are removed when their owner drops them, when a termination signal or a
//! panic runs [`remove_all`], and, after a SIGKILL, by [`sweep_orphans`]: every command that
//! creates SysV objects calls it at start, the supervisor calls it when a workload dies, and
//! `schedlab cleanup` calls it by hand. A ledger is only swept once its owner is dead (its pid
//! gone, or reused by a process with another start time).

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use anyhow::{Context, Result};

const LEDGER_DIR: &str = "/dev/shm";
const LEDGER_PREFIX: &str = "schedlab-sysv-";
/// Entries in one process's ledger: msgbench's 32,000 queues fit with room to spare.
const LEDGER_CAPACITY: usize = 1 << 17;

const KIND_SEM: u64 = 1;
const KIND_MSG: u64 = 2;

/// One ledger entry: kind in the high 32 bits, id + 1 in the low 32 (0 means free).
fn encode(kind: u64, id: i32) -> u64 {
    (kind << 32) | (id as u32 as u64 + 1)
}

fn decode(word: u64) -> Option<(u64, i32)> {
    let low = word & 0xffff_ffff;
    (low != 0).then(|| (word >> 32, (low - 1) as u32 as i32))
}

struct Ledger {
    /// The process that made the ledger. A forked child inherits the mapping and the atexit
    /// handler; only the owner may remove what the ledger lists, or the file.
    owner: u32,
    words: &'static [AtomicU64],
    path: Option<PathBuf>,
    /// Free entry ranges; touched only when objects are created or removed, never per operation.
    free: Mutex<Vec<(usize, usize)>>,
}

fn ledger() -> &'static Ledger {
    static LEDGER: OnceLock<Ledger> = OnceLock::new();
    LEDGER.get_or_init(|| {
        let (words, path) = match map_ledger_file() {
            Ok(mapped) => mapped,
            Err(err) => {
                crate::errln!("schedlab: warning: no SysV ledger in {LEDGER_DIR} ({err:#}); objects left by a SIGKILL will need `ipcrm`");
                (anonymous_words(), None)
            }
        };
        // A normal exit (return from main, process::exit) removes what is left and the file.
        // SAFETY: atexit stores a plain `extern "C" fn()` that lives as long as the program; it is
        // registered once, inside this OnceLock initialiser.
        unsafe { libc::atexit(remove_all_at_exit) };
        Ledger {
            owner: std::process::id(),
            words,
            path,
            free: Mutex::new(vec![(0, LEDGER_CAPACITY)]),
        }
    })
}

extern "C" fn remove_all_at_exit() {
    remove_all();
    remove_ledger_file();
}

fn ledger_path_for(pid: u32, start: u64) -> PathBuf {
    Path::new(LEDGER_DIR).join(format!("{LEDGER_PREFIX}{pid}-{start}"))
}

fn map_ledger_file() -> Result<(&'static [AtomicU64], Option<PathBuf>)> {
    let pid = std::process::id();
    let start = process_start_time(pid).context("reading our own start time")?;
    let path = ledger_path_for(pid, start);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    let len = LEDGER_CAPACITY * 8;
    file.set_len(len as u64)?;
    // SAFETY: a new shared mapping (null hint) of the ledger file, which set_len just sized to
    // `len` bytes: no existing memory is touched; MAP_FAILED is checked below. The mapping outlives
    // `file`.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        let _ = std::fs::remove_file(&path);
        return Err(io::Error::last_os_error()).context("mapping the SysV ledger");
    }
    // SAFETY: `base` is a readable, writable, page-aligned mapping of LEDGER_CAPACITY * 8 bytes
    // that is never unmapped (hence 'static); AtomicU64 is valid for any bits, and other processes
    // only read the file once its owner is dead.
    let words = unsafe { std::slice::from_raw_parts(base as *const AtomicU64, LEDGER_CAPACITY) };
    Ok((words, Some(path)))
}

fn anonymous_words() -> &'static [AtomicU64] {
    let v: Vec<AtomicU64> = (0..LEDGER_CAPACITY).map(|_| AtomicU64::new(0)).collect();
    Box::leak(v.into_boxed_slice())
}

/// Field 22 of /proc/PID/stat: start time in clock ticks since boot, to tell a reused pid.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 2..];
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process that wrote a ledger still runs: same pid, same start time, and not a
/// zombie (a SIGKILLed owner stays one until reaped, and will never use its objects again).
fn owner_alive(pid: u32, start: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(after_comm) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
        return false;
    };
    let mut fields = after_comm.split_whitespace();
    let state = fields.next();
    let started = fields.nth(18).and_then(|f| f.parse::<u64>().ok());
    !matches!(state, Some("Z" | "X")) && started == Some(start)
}

/// A run of ledger entries reserved up front, so that recording an id is a plain store.
pub struct LedgerRange {
    start: usize,
    len: usize,
}

impl LedgerRange {
    /// Reserves `len` entries (one per object the caller will create).
    pub fn reserve(len: usize) -> Result<Self> {
        ensure_cleanup_registered();
        let ledger = ledger();
        let mut free = ledger.free.lock().unwrap();
        let Some(pos) = free.iter().position(|&(_, n)| n >= len) else {
            anyhow::bail!("SysV ledger full: more than {LEDGER_CAPACITY} live objects");
        };
        let (start, n) = free[pos];
        if n == len {
            free.remove(pos);
        } else {
            free[pos] = (start + len, n - len);
        }
        Ok(Self { start, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn record(&self, i: usize, kind: u64, id: i32) {
        assert!(i < self.len);
        ledger().words[self.start + i].store(encode(kind, id), Relaxed);
    }

    #[inline]
    fn forget(&self, i: usize) {
        ledger().words[self.start + i].store(0, Relaxed);
    }

    /// Creates a private message queue and records it at entry `i`.
    #[inline]
    pub fn msgget(&self, i: usize) -> io::Result<i32> {
        // SAFETY: msgget takes no pointer.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(io::Error::last_os_error());
        }
        self.record(i, KIND_MSG, id);
        Ok(id)
    }

    /// Removes the queue recorded at entry `i`.
    #[inline]
    pub fn msg_rmid(&self, i: usize, id: i32) -> io::Result<()> {
        // SAFETY: msgctl(IPC_RMID) ignores its buffer argument, so null is allowed.
        let rc = unsafe { libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        self.forget(i);
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes whatever is still recorded in this range.
    pub fn remove_recorded(&self) {
        for i in 0..self.len {
            let word = ledger().words[self.start + i].swap(0, Relaxed);
            if let Some((kind, id)) = decode(word) {
                remove_object(kind, id);
            }
        }
    }
}

impl Drop for LedgerRange {
    fn drop(&mut self) {
        self.remove_recorded();
        let mut free = ledger().free.lock().unwrap();
        free.push((self.start, self.len));
    }
}

fn remove_object(kind: u64, id: i32) -> bool {
    let rc = match kind {
        // SAFETY: semctl(IPC_RMID) takes no fourth argument.
        KIND_SEM => unsafe { libc::semctl(id, 0, libc::IPC_RMID) },
        // SAFETY: msgctl(IPC_RMID) ignores its buffer argument, so null is allowed.
        KIND_MSG => unsafe { libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()) },
        _ => return false,
    };
    rc == 0
}

/// Removes every object this process has recorded. Safe to call from a signal-handling
/// thread or a panic hook: it takes no lock and allocates nothing.
pub fn remove_all() {
    let Some(ledger) = LEDGER_FOR_CLEANUP
        .get()
        .filter(|l| l.owner == std::process::id())
    else {
        return;
    };
    for word in ledger.words {
        if let Some((kind, id)) = decode(word.swap(0, Relaxed)) {
            remove_object(kind, id);
        }
    }
}

/// Set once the ledger exists, so `remove_all` never creates one.
static LEDGER_FOR_CLEANUP: OnceLock<&'static Ledger> = OnceLock::new();

fn ensure_cleanup_registered() {
    LEDGER_FOR_CLEANUP.get_or_init(ledger);
}

/// Removes this process's ledger file; call at a normal exit, after every object is gone.
pub fn remove_ledger_file() {
    if let Some(ledger) = LEDGER_FOR_CLEANUP
        .get()
        .filter(|l| l.owner == std::process::id())
    {
        if let Some(path) = &ledger.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Removes the objects, and the ledgers, of schedlab processes that died without cleaning up.
/// Returns how many objects it removed.
pub fn sweep_orphans() -> Result<usize> {
    let mut removed = 0;
    let entries = match std::fs::read_dir(LEDGER_DIR) {
        Ok(e) => e,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err).context(format!("listing {LEDGER_DIR}")),
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(LEDGER_PREFIX)) else {
            continue;
        };
        let Some((pid, start)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
            continue;
        };
        if owner_alive(pid, start) {
            continue; // its objects are its own business
        }
        removed += sweep_ledger_file(&entry.path())?;
    }
    Ok(removed)
}

fn sweep_ledger_file(path: &Path) -> Result<usize> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err).context(format!("reading {}", path.display())),
    };
    let mut removed = 0;
    for chunk in bytes.chunks_exact(8) {
        let word = u64::from_ne_bytes(chunk.try_into().unwrap());
        if let Some((kind, id)) = decode(word) {
            removed += remove_object(kind, id) as usize;
        }
    }
    let _ = std::fs::remove_file(path);
    Ok(removed)
}

/// A set of SysV semaphores, removed when dropped (by its ledger entry).
pub struct SemSet {
    id: i32,
    nsems: usize,
    _entry: LedgerRange,
}

impl SemSet {
    /// Creates a private set of `nsems` semaphores, all zero.
    pub fn create(nsems: usize) -> Result<Self> {
        let entry = LedgerRange::reserve(1)?;
        // SAFETY: semget takes no pointer.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, nsems as i32, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            let err = io::Error::last_os_error();
            let code = err.raw_os_error();
            return Err(err).context(match code {
                Some(libc::ENOSPC) => "semget: the system's semaphore limit is reached (raise kernel.sem: SEMMNI/SEMMNS)".to_string(),
                Some(libc::EINVAL) => format!("semget: {nsems} semaphores exceed SEMMSL in kernel.sem"),
                _ => "semget".to_string(),
            });
        }
        entry.record(0, KIND_SEM, id);
        Ok(Self {
            id,
            nsems,
            _entry: entry,
        })
    }

    pub fn id(&self) -> i32 {
        self.id
    }

    pub fn len(&self) -> usize {
        self.nsems
    }

    pub fn is_empty(&self) -> bool {
        self.nsems == 0
    }

    /// Adds `delta` to semaphore `num`, blocking while that would make it negative.
    #[inline]
    pub fn op(&self, num: u16, delta: i16) -> io::Result<()> {
        self.ops(&mut [libc::sembuf {
            sem_num: num,
            sem_op: delta,
            sem_flg: 0,
        }])
    }

    /// Applies several operations atomically; retries when a signal interrupts the wait.
    #[inline]
    pub fn ops(&self, ops: &mut [libc::sembuf]) -> io::Result<()> {
        loop {
            // SAFETY: `ops` is a live, exclusively borrowed slice of `ops.len()` sembufs; semop
            // reads exactly that many.
            if unsafe { libc::semop(self.id, ops.as_mut_ptr(), ops.len()) } == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
    }

    pub fn set(&self, num: u16, value: i32) -> io::Result<()> {
        // SAFETY: SETVAL passes the value itself (the int of the semun union) as the fourth
        // argument: no pointer.
        if unsafe { libc::semctl(self.id, num as i32, libc::SETVAL, value) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn get(&self, num: u16) -> io::Result<i32> {
        // SAFETY: semctl(GETVAL) takes no fourth argument.
        let v = unsafe { libc::semctl(self.id, num as i32, libc::GETVAL) };
        if v < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(v)
    }
}

/// A SysV message queue, removed when dropped (by its ledger entry).
pub struct MsgQueue {
    id: i32,
    _entry: LedgerRange,
}

impl MsgQueue {
    pub fn create() -> Result<Self> {
        let entry = LedgerRange::reserve(1)?;
        let id = entry.msgget(0).map_err(|err| {
            let hint = if err.raw_os_error() == Some(libc::ENOSPC) {
                ": the system's queue limit is reached (raise kernel.msgmni)"
            } else {
                ""
            };
            anyhow::anyhow!("msgget: {err}{hint}")
        })?;
        Ok(Self { id, _entry: entry })
    }

    pub fn id(&self) -> i32 {
        self.id
    }

    /// Sends `text` as a message of type `mtype` (> 0). `buf` must start with room for the
    /// type: the caller owns the buffer so that sending allocates nothing.
    #[inline]
    pub fn send(&self, buf: &mut MsgBuf, len: usize) -> io::Result<()> {
        loop {
            // SAFETY: msgsnd reads the type and `len` text bytes from `buf`, a live MsgBuf of
            // MsgBuf::TEXT text bytes: sound for len <= MsgBuf::TEXT, which every caller passes
            // (the only one, a test, sends 5).
            let rc = unsafe { libc::msgsnd(self.id, buf.as_ptr(), len, 0) };
            if rc == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
    }

    /// Receives a message of type `mtype` (0 = any) into `buf`; returns the text length.
    #[inline]
    pub fn recv(&self, buf: &mut MsgBuf, mtype: i64) -> io::Result<usize> {
        loop {
            // SAFETY: msgrcv writes at most the type and MsgBuf::TEXT text bytes into `buf`,
            // exactly its size, exclusively borrowed.
            let rc = unsafe {
                libc::msgrcv(
                    self.id,
                    buf.as_mut_ptr(),
                    MsgBuf::TEXT,
                    mtype as libc::c_long,
                    0,
                )
            };
            if rc >= 0 {
                return Ok(rc as usize);
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
    }
}

/// A message buffer in the layout msgsnd/msgrcv expect: a long type, then the text.
#[repr(C)]
pub struct MsgBuf {
    pub mtype: libc::c_long,
    pub text: [u8; MsgBuf::TEXT],
}

impl MsgBuf {
    pub const TEXT: usize = 128;

    pub fn new(mtype: i64) -> Self {
        Self {
            mtype: mtype as libc::c_long,
            text: [0; Self::TEXT],
        }
    }

    fn as_ptr(&self) -> *const libc::c_void {
        (self as *const Self).cast()
    }

    fn as_mut_ptr(&mut self) -> *mut libc::c_void {
        (self as *mut Self).cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exists_sem(id: i32) -> bool {
        // SAFETY: semctl(GETVAL) takes no fourth argument; an id that is gone fails with EINVAL.
        unsafe { libc::semctl(id, 0, libc::GETVAL) >= 0 }
    }

    fn exists_msg(id: i32) -> bool {
        // SAFETY: libc::msqid_ds is plain old data: all-zero bytes are a valid value.
        let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: `ds` is a live, writable msqid_ds for IPC_STAT to fill.
        unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) >= 0 }
    }

    #[test]
    fn semaphores_work_and_vanish_on_drop() {
        let set = SemSet::create(2).unwrap();
        let id = set.id();
        set.op(1, 3).unwrap();
        set.op(1, -2).unwrap();
        assert_eq!(set.get(1).unwrap(), 1);
        assert_eq!(set.get(0).unwrap(), 0);
        drop(set);
        assert!(!exists_sem(id));
    }

    #[test]
    fn queues_carry_messages_and_vanish_on_drop() {
        let q = MsgQueue::create().unwrap();
        let id = q.id();
        let mut out = MsgBuf::new(7);
        out.text[..5].copy_from_slice(b"hello");
        q.send(&mut out, 5).unwrap();
        let mut back = MsgBuf::new(0);
        assert_eq!(q.recv(&mut back, 7).unwrap(), 5);
        assert_eq!(&back.text[..5], b"hello");
        drop(q);
        assert!(!exists_msg(id));
    }

    #[test]
    fn reserved_range_removes_what_it_recorded() {
        let range = LedgerRange::reserve(3).unwrap();
        let a = range.msgget(0).unwrap();
        let b = range.msgget(2).unwrap();
        range.msg_rmid(0, a).unwrap();
        drop(range);
        assert!(!exists_msg(a));
        assert!(!exists_msg(b));
    }

    #[test]
    fn a_forked_child_exiting_leaves_the_parents_objects() {
        let q = MsgQueue::create().unwrap();
        // SAFETY: the child only calls exit(0), whose inherited atexit handler is what this test
        // checks; that handler returns at its owner check and takes no lock another thread could
        // hold at the fork.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // exit() runs the inherited atexit handler: it must not touch the parent's ledger.
            // SAFETY: exit runs the atexit handlers in this single-threaded child; see the fork
            // above.
            unsafe { libc::exit(0) };
        }
        let mut status = 0;
        // SAFETY: `status` is a live int for waitpid to fill; `pid` is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(exists_msg(q.id()));
        let path = LEDGER_FOR_CLEANUP.get().unwrap().path.clone();
        if let Some(path) = path {
            assert!(path.exists());
        }
    }

    #[test]
    fn a_zombie_owners_objects_are_swept() {
        // SAFETY: the child only calls _exit, which is async-signal-safe, so forking a
        // multi-threaded test process is sound.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: _exit ends the child at once, running nothing else.
            unsafe { libc::_exit(0) };
        }
        // Not reaped yet: a zombie with its pid and start time intact.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let start = loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            if stat[stat.rfind(')').unwrap() + 2..].starts_with('Z') {
                break process_start_time(pid as u32).unwrap();
            }
            assert!(std::time::Instant::now() < deadline, "child never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert!(!owner_alive(pid as u32, start));
        assert!(owner_alive(
            std::process::id(),
            process_start_time(std::process::id()).unwrap()
        ));
        let mut status = 0;
        // SAFETY: `status` is a live int for waitpid to fill; `pid` is our child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }

    #[test]
    fn encoding_round_trips() {
        assert_eq!(decode(encode(KIND_MSG, 0)), Some((KIND_MSG, 0)));
        assert_eq!(
            decode(encode(KIND_SEM, i32::MAX)),
            Some((KIND_SEM, i32::MAX))
        );
        assert_eq!(decode(0), None);
    }

    #[test]
    fn sweep_removes_a_dead_owners_objects() {
        // A ledger named after a pid that cannot be alive, holding one real queue.
        // SAFETY: msgget takes no pointer; the sweep below removes the queue.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        assert!(id >= 0);
        let path = ledger_path_for(u32::MAX - 1, 1);
        let mut bytes = vec![0u8; 16];
        bytes[8..].copy_from_slice(&encode(KIND_MSG, id).to_ne_bytes());
        std::fs::write(&path, bytes).unwrap();
        assert!(sweep_orphans().unwrap() >= 1);
        assert!(!exists_msg(id));
        assert!(!path.exists());
    }
}
