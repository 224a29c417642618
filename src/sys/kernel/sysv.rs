//! SysV semaphores and message queues, with a ledger that outlives a SIGKILL.
//!
//! Every object schedlab creates is named in a ledger file in /dev/shm, by its key, before
//! the object exists ([`ledger`] has the format, the keys and the lock). Objects are removed
//! when their owner drops them, when a termination signal or a panic runs [`remove_all`],
//! and, after a SIGKILL, by [`sweep_orphans`] ([`sweep`]): every command that creates SysV
//! objects calls it at start, the supervisor calls it when a workload dies, and
//! `schedlab cleanup` calls it by hand. A ledger is swept only by whoever holds its lock,
//! which its owner holds for life: concurrent sweeps and a live owner are safe.
//!
//! The calls are raw libc: neither nix nor rustix wraps SysV semaphores or message queues.

mod ledger;
mod sweep;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use ledger::{KIND_MSG, KIND_SEM};
pub use sweep::{
    ledger_of, ledgers, read_ledger, remove_objects_of_stopped, sweep_orphans, LedgerView, Object,
};

/// Field 22 of /proc/PID/stat: start time in clock ticks since boot, to tell a reused pid.
pub fn process_start_time(pid: u32) -> Option<u64> {
    super::proc::read_stat(pid).map(|s| s.start)
}

/// Message queues that exist on the system now, anyone's (what `ipcs -q` lists).
pub(crate) fn queues_in_use() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/sysvipc/msg").context("reading /proc/sysvipc/msg")?;
    Ok(table_rows(&text))
}

/// The rows of a /proc/sysvipc table: its lines after the header, but blank ones.
fn table_rows(text: &str) -> u64 {
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count() as u64
}

/// Tries of a new key when others hold the ones we pick (EEXIST), before giving up.
const KEY_TRIES: usize = 1024;

/// A run of ledger entries reserved up front, so that recording an object costs plain
/// stores. Creating through [`LedgerRange::msgget`] is not held back by [`remove_all`]: a
/// caller creating on a hot path must stop between its loops first (msgbench's StopGate).
pub(crate) struct LedgerRange {
    start: usize,
    len: usize,
    /// The mode of the private queues [`LedgerRange::msgget`] makes (0: keyed objects only).
    tag: u32,
}

impl LedgerRange {
    /// Reserves `len` entries for queues made by [`LedgerRange::msgget`]: private ones, as
    /// msgbench's timed loop needs, with this process's tag (see the ledger).
    pub fn reserve(len: usize) -> Result<Self> {
        let ledger = ledger::ensure_registered();
        let tag = ledger.private_tag()?;
        let start = ledger.reserve(len)?;
        Ok(Self { start, len, tag })
    }

    /// Reserves `len` entries for objects made under keys.
    fn reserve_keyed(len: usize) -> Result<Self> {
        let start = ledger::ensure_registered().reserve(len)?;
        Ok(Self { start, len, tag: 0 })
    }

    /// Creates an object of `kind` at entry `i` with `create(key)` (IPC_CREAT | IPC_EXCL):
    /// the key is in the ledger before the call, the id after it. A key another program
    /// holds (EEXIST) is replaced by a spare one, recorded first, and tried again.
    #[inline]
    fn create(
        &self,
        i: usize,
        kind: u64,
        mut create: impl FnMut(libc::key_t) -> libc::c_int,
    ) -> io::Result<i32> {
        assert!(i < self.len);
        let ledger = ledger::ledger();
        let (key_word, id_word) = ledger.entry(self.start + i);
        if id_word.load(Relaxed) != 0 {
            // Its object is still there: a second one would push it out of the ledger.
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        let mut word = key_word.load(Relaxed);
        if word >> 32 != kind {
            word = kind << 32 | ledger.primary_key(self.start + i) as u32 as u64;
            key_word.store(word, Relaxed);
        }
        for _ in 0..KEY_TRIES {
            // The store above is a store to shared memory before an opaque call: it is in
            // the file before the object can exist.
            let id = create(word as u32 as libc::key_t);
            if id >= 0 {
                id_word.store(id as u32 as u64 + 1, Relaxed);
                return Ok(id);
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EEXIST) || ledger.path.is_none() {
                return Err(err);
            }
            word = kind << 32 | ledger.spare_key() as u32 as u64;
            key_word.store(word, Relaxed);
        }
        Err(io::Error::other(format!(
            "{KEY_TRIES} SysV keys in a row are held by other programs"
        )))
    }

    /// Forgets entry `i`'s object (it was removed); its key stays for the next one.
    #[inline]
    fn forget(&self, i: usize) {
        ledger::ledger().entry(self.start + i).1.store(0, Relaxed);
    }

    /// Creates a private message queue at entry `i`, tagged by its mode: one msgget, exactly
    /// what an untracked IPC_PRIVATE queue costs, then one store.
    #[inline]
    pub fn msgget(&self, i: usize) -> io::Result<i32> {
        assert!(i < self.len && self.tag != 0);
        let (key_word, id_word) = ledger::ledger().entry(self.start + i);
        if id_word.load(Relaxed) != 0 {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        if key_word.load(Relaxed) != KIND_MSG << 32 {
            key_word.store(KIND_MSG << 32, Relaxed); // a private queue: no key
        }
        // SAFETY: msgget takes no pointers.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | self.tag as i32) };
        if id < 0 {
            return Err(io::Error::last_os_error());
        }
        id_word.store(id as u32 as u64 + 1, Relaxed);
        Ok(id)
    }

    /// Removes the queue recorded at entry `i`.
    #[inline]
    pub(crate) fn msg_rmid(&self, i: usize, id: i32) -> io::Result<()> {
        // SAFETY: IPC_RMID takes no buffer; a null one is allowed.
        let rc = unsafe { libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        self.forget(i);
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes whatever is still recorded in this range: each object first, then its entry,
    /// so that a SIGKILL in between leaves it to a sweep, never unrecorded.
    pub(crate) fn remove_recorded(&self) {
        let ledger = ledger::ledger();
        for i in 0..self.len {
            let (key_word, id_word) = ledger.entry(self.start + i);
            let id = id_word.load(Relaxed);
            if id != 0 {
                remove_object(key_word.load(Relaxed) >> 32, (id - 1) as u32 as i32);
                id_word.store(0, Relaxed);
            }
        }
    }
}

impl Drop for LedgerRange {
    fn drop(&mut self) {
        self.remove_recorded();
        let ledger = ledger::ledger();
        for i in 0..self.len {
            ledger.entry(self.start + i).0.store(0, Relaxed);
        }
        ledger.release(self.start, self.len);
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

/// Set by [`remove_all`]: no [`SemSet`] or [`MsgQueue`] may be created any more.
static CLOSING: AtomicBool = AtomicBool::new(false);
/// Creations of SemSet and MsgQueue under way, which [`remove_all`] waits for.
static CREATING: AtomicUsize = AtomicUsize::new(0);

/// Runs one creation unless [`remove_all`] has begun: then either it sees the creation
/// (CREATING counted first) or the creation sees CLOSING, never neither.
fn unless_closing<T>(create: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    CREATING.fetch_add(1, SeqCst);
    let made = if CLOSING.load(SeqCst) {
        Err(io::Error::other("the process is ending"))
    } else {
        create()
    };
    CREATING.fetch_sub(1, SeqCst);
    made
}

/// Removes every object this process has recorded. Safe to call from a signal-handling
/// thread or a panic hook: it takes no lock and allocates nothing. Creations under way on
/// other threads finish first (up to a second) and are removed too; later ones fail.
pub(crate) fn remove_all() {
    let Some(ledger) = ledger::own_ledger() else {
        return;
    };
    CLOSING.store(true, SeqCst);
    let deadline = Instant::now() + Duration::from_secs(1);
    while CREATING.load(SeqCst) != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    for i in 0..ledger.in_use() {
        let (key_word, id_word) = ledger.entry(i);
        let id = id_word.load(Relaxed);
        if id != 0 {
            remove_object(key_word.load(Relaxed) >> 32, (id - 1) as u32 as i32);
            id_word.store(0, Relaxed);
        }
    }
}

extern "C" fn remove_all_at_exit() {
    remove_all();
    remove_ledger_file();
}

/// Removes this process's ledger file; call at a normal exit, after every object is gone.
pub(crate) fn remove_ledger_file() {
    let Some(ledger) = ledger::own_ledger() else {
        return;
    };
    // The tag's name first: a name left behind must always be the block's, which a sweep
    // lists (and a sweep of it removes the tag's name too).
    for path in [ledger.tag_path(), ledger.path.clone()]
        .into_iter()
        .flatten()
    {
        let _ = std::fs::remove_file(path);
    }
}

/// A set of SysV semaphores, removed when dropped (by its ledger entry).
pub(crate) struct SemSet {
    id: i32,
    _entry: LedgerRange,
}

impl SemSet {
    /// Creates a set of `nsems` semaphores, all zero, readable by this user only.
    pub fn create(nsems: usize) -> Result<Self> {
        let entry = LedgerRange::reserve_keyed(1)?;
        let made = unless_closing(|| {
            entry.create(0, KIND_SEM, |key| {
                // SAFETY: semget takes no pointers.
                unsafe { libc::semget(key, nsems as i32, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) }
            })
        });
        let id = made.map_err(|err| {
            let code = err.raw_os_error();
            anyhow::Error::new(err).context(match code {
                Some(libc::ENOSPC) => "semget: the system's semaphore limit is reached (raise kernel.sem: SEMMNI/SEMMNS)".to_string(),
                Some(libc::EINVAL) => format!("semget: {nsems} semaphores exceed SEMMSL in kernel.sem"),
                _ => "semget".to_string(),
            })
        })?;
        Ok(Self { id, _entry: entry })
    }

    pub fn id(&self) -> i32 {
        self.id
    }

    /// Adds `delta` to semaphore `num`, blocking while that would make it negative.
    #[inline]
    pub(crate) fn op(&self, num: u16, delta: i16) -> io::Result<()> {
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

    #[cfg(test)]
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
pub(crate) struct MsgQueue {
    id: i32,
    _entry: LedgerRange,
}

impl MsgQueue {
    pub fn create() -> Result<Self> {
        let entry = LedgerRange::reserve_keyed(1)?;
        let made = unless_closing(|| {
            entry.create(0, KIND_MSG, |key| {
                // SAFETY: msgget takes no pointers.
                unsafe { libc::msgget(key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) }
            })
        });
        let id = made.map_err(|err| {
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

    #[cfg(test)]
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

    #[cfg(test)]
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
pub(crate) struct MsgBuf {
    pub mtype: libc::c_long,
    pub text: [u8; MsgBuf::TEXT],
}

impl MsgBuf {
    pub(crate) const TEXT: usize = 128;

    pub fn new(mtype: i64) -> Self {
        Self {
            mtype: mtype as libc::c_long,
            text: [0; Self::TEXT],
        }
    }

    #[cfg(test)]
    fn as_ptr(&self) -> *const libc::c_void {
        (self as *const Self).cast()
    }

    #[cfg(test)]
    fn as_mut_ptr(&mut self) -> *mut libc::c_void {
        (self as *mut Self).cast()
    }
}

#[cfg(test)]
mod tests {
    use super::ledger::{self, FILE_WORDS, HEADER_WORDS, H_IN_USE, H_MAGIC, H_PID, MAGIC};
    use super::*;
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::FileExt;
    use std::path::PathBuf;

    fn exists_sem(id: i32) -> bool {
        // SAFETY: GETVAL takes no buffer.
        unsafe { libc::semctl(id, 0, libc::GETVAL) >= 0 }
    }

    fn exists_msg(id: i32) -> bool {
        // SAFETY: msqid_ds is plain data; IPC_STAT writes into it.
        let mut ds: libc::msqid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: `ds` is valid and writable for the call.
        unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) >= 0 }
    }

    /// The key of queue `id`, from /proc/sysvipc/msg.
    fn key_of_queue(id: i32) -> Option<libc::key_t> {
        let text = std::fs::read_to_string("/proc/sysvipc/msg").unwrap();
        text.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1)?.parse::<i32>().ok()? == id).then(|| f[0].parse().ok())?
        })
    }

    fn msg_key(key: libc::key_t, flags: libc::c_int) -> i32 {
        // SAFETY: msgget takes no pointers.
        unsafe { libc::msgget(key, flags) }
    }

    /// A ledger of this format, with a key block of its own and entries `(kind, offset of the
    /// key in the block, recorded id)`, whose lock the returned descriptor holds as a live
    /// owner would: dropping it is the owner's death (until then, the sweeps of tests running
    /// alongside leave it alone). Returns its path and the block's first key.
    fn fake_ledger(entries: &[(u64, u32, Option<i32>)]) -> (PathBuf, u32, OwnedFd) {
        use nix::fcntl::OFlag;
        let file = nix::fcntl::open(
            ledger::LEDGER_DIR,
            OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .unwrap();
        ledger::lock(&file, libc::F_OFD_SETLK).unwrap();
        let mut words = vec![0u64; FILE_WORDS];
        words[H_MAGIC] = MAGIC;
        // Our own pid and start time: while held, it looks alive (sweeps do not wait for it).
        words[H_PID] = std::process::id() as u64;
        words[ledger::H_START] = process_start_time(std::process::id()).unwrap();
        words[H_IN_USE] = entries.len() as u64;
        // Blocks from the top down, where our own ledger (hashed from the pid) rarely is.
        for block in (1..1u32 << 14).rev() {
            let base = block << 18;
            words[ledger::H_BLOCK] = block as u64;
            for (i, &(kind, offset, id)) in entries.iter().enumerate() {
                words[HEADER_WORDS + 2 * i] = kind << 32 | (base + offset) as u64;
                words[HEADER_WORDS + 2 * i + 1] = id.map_or(0, |id| id as u32 as u64 + 1);
            }
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let f = std::fs::File::from(file.try_clone().unwrap());
            f.write_all_at(&bytes, 0).unwrap();
            let path = ledger::ledger_path(block);
            match ledger::give_name(&file, &path) {
                Ok(()) => return (path, base, file),
                Err(nix::errno::Errno::EEXIST) => continue,
                Err(err) => panic!("{err}"),
            }
        }
        panic!("no free key block");
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
    fn queues_in_use_counts_the_rows_of_the_table() {
        let header = "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n";
        assert_eq!(table_rows(header), 0);
        let rows = "         0          3   600           0          0     0     0     0     0     0     0          0          0 1700000000\n\n 305419896          4   644           5          1    10    11     0     0     0     0 1700000001          0 1700000000\n";
        assert_eq!(table_rows(&format!("{header}{rows}")), 2);
        // Ours is among them while it lives, whatever other processes make or remove.
        let q = MsgQueue::create().unwrap();
        assert!(queues_in_use().unwrap() >= 1);
        drop(q);
    }

    /// Key and mode (octal) of queue `id`, from /proc/sysvipc/msg.
    fn key_and_mode(id: i32) -> Option<(libc::key_t, u32)> {
        let text = std::fs::read_to_string("/proc/sysvipc/msg").unwrap();
        text.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1)?.parse::<i32>().ok()? == id)
                .then(|| Some((f[0].parse().ok()?, u32::from_str_radix(f[2], 8).ok()?)))?
        })
    }

    fn keyed_msgget(range: &LedgerRange, i: usize) -> io::Result<i32> {
        range.create(i, KIND_MSG, |key| {
            msg_key(key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600)
        })
    }

    #[test]
    fn reserved_range_removes_what_it_recorded() {
        let range = LedgerRange::reserve(3).unwrap();
        let a = range.msgget(0).unwrap();
        let b = range.msgget(2).unwrap();
        // Private queues, tagged with this process's mode (the only one using it).
        let tag = ledger::ledger().private_tag().unwrap();
        assert!(ledger::TAGS.contains(&tag));
        assert_eq!(key_and_mode(a), Some((libc::IPC_PRIVATE, tag)));
        range.msg_rmid(0, a).unwrap();
        let c = range.msgget(0).unwrap();
        assert!(range.msgget(2).is_err(), "a second object on a busy entry");
        drop(range);
        for id in [a, b, c] {
            assert!(!exists_msg(id));
        }
    }

    #[test]
    fn the_ledger_names_each_key_before_its_object_exists() {
        let range = LedgerRange::reserve_keyed(2).unwrap();
        let own = ledger::ledger();
        assert!(own.path.is_some(), "no ledger file in /dev/shm");
        let (key_word, id_word) = own.entry(range.start + 1);
        let id = range
            .create(1, KIND_MSG, |key| {
                // At the moment of the call, the key is in the ledger and no id yet.
                assert_eq!(key_word.load(Relaxed), KIND_MSG << 32 | key as u32 as u64);
                assert_eq!(id_word.load(Relaxed), 0);
                msg_key(key, libc::IPC_CREAT | libc::IPC_EXCL | 0o600)
            })
            .unwrap();
        assert_eq!(id_word.load(Relaxed), id as u32 as u64 + 1);
        assert_eq!(
            key_of_queue(id),
            Some(key_word.load(Relaxed) as u32 as libc::key_t)
        );
        // (Reading our own file here would drop our lock: other processes read it, in
        // tests/msgbench.rs and tests/pingpong.rs.)
    }

    #[test]
    fn a_key_another_program_holds_moves_the_entry_to_a_spare_key() {
        let range = LedgerRange::reserve_keyed(1).unwrap();
        let own = ledger::ledger();
        let taken = own.primary_key(range.start);
        let foreign = msg_key(taken, libc::IPC_CREAT | 0o600);
        assert!(foreign >= 0);
        let ours = keyed_msgget(&range, 0).unwrap();
        assert_ne!(ours, foreign);
        let recorded = own.entry(range.start).0.load(Relaxed) as u32 as libc::key_t;
        assert_ne!(recorded, taken);
        assert_eq!(key_of_queue(ours), Some(recorded));
        drop(range);
        assert!(!exists_msg(ours));
        assert!(exists_msg(foreign), "another program's queue was removed");
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::msgctl(foreign, libc::IPC_RMID, std::ptr::null_mut()) };
    }

    #[test]
    fn a_forked_child_exiting_leaves_the_parents_objects() {
        let q = MsgQueue::create().unwrap();
        // SAFETY: the child only calls exit, which is what this test is about.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // exit() runs the inherited atexit handler: it must not touch the parent's ledger.
            // SAFETY: ends the child.
            unsafe { libc::exit(0) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(exists_msg(q.id()));
        if let Some(path) = &ledger::own_ledger().unwrap().path {
            assert!(path.exists());
        }
    }

    #[test]
    fn a_dead_ledger_is_swept_by_key_whether_or_not_its_ids_were_recorded() {
        // Entry 2 records the id of a stranger's queue (a reused id): not under our key.
        let stranger = msg_key(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600);
        // The block is only known once the ledger has a name: create the objects after.
        let (path, base, owner) = fake_ledger(&[
            (KIND_MSG, 0, None),
            (KIND_SEM, 1, None),
            (KIND_MSG, 2, Some(stranger)),
        ]);
        // Entry 0: the msgget a SIGKILL interrupted (no id). Entry 1: a recorded set.
        let q = msg_key(base as i32, libc::IPC_CREAT | libc::IPC_EXCL | 0o600);
        // SAFETY: semget takes no pointers.
        let s =
            unsafe { libc::semget(base as i32 + 1, 1, libc::IPC_CREAT | libc::IPC_EXCL | 0o600) };
        assert!(q >= 0 && s >= 0 && stranger >= 0);
        drop(owner);
        sweep_until("the ledger survived", || !path.exists());
        assert!(!exists_msg(q), "the unrecorded queue survived");
        assert!(!exists_sem(s), "the set survived");
        assert!(exists_msg(stranger));
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::msgctl(stranger, libc::IPC_RMID, std::ptr::null_mut()) };
    }

    /// Sweeps until `done` (another test's sweep may be at the ledger just then: a sweep
    /// leaves alone what another is sweeping), for at most 10 s.
    fn sweep_until(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            sweep_orphans().unwrap();
            if done() {
                return;
            }
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Gives the fake ledger at `path` the tag `tag`: in its header, and (with `claim`) the
    /// tag's name too. Returns whether the name could be had.
    fn tag_fake(path: &std::path::Path, tag: u32, claim: bool) -> bool {
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.write_all_at(&(tag as u64).to_ne_bytes(), (ledger::H_TAG * 8) as u64)
            .unwrap();
        !claim || std::fs::hard_link(path, ledger::tag_path(tag)).is_ok()
    }

    #[test]
    fn a_dead_ledgers_tagged_queues_are_swept_recorded_or_not() {
        let (path, _, owner) = fake_ledger(&[(KIND_MSG, 0, None)]);
        // A tag no live process holds (tests in this binary share one, ours).
        let own = ledger::ledger().private_tag().unwrap();
        let tag = *ledger::TAGS
            .iter()
            .find(|&&t| t != own && tag_fake(&path, t, true))
            .expect("a free tag");
        let q = msg_key(libc::IPC_PRIVATE, libc::IPC_CREAT | tag as i32);
        // A private queue of another mode is nobody's business here.
        let other = msg_key(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600);
        assert!(q >= 0 && other >= 0);
        drop(owner);
        sweep_until("the ledger survived", || !path.exists());
        assert!(!exists_msg(q), "the tagged queue survived");
        assert!(!ledger::tag_path(tag).exists());
        assert!(exists_msg(other));
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::msgctl(other, libc::IPC_RMID, std::ptr::null_mut()) };
    }

    #[test]
    fn a_tag_whose_name_is_another_ledgers_is_not_swept_by() {
        // A dead ledger whose header names our tag, whose name links to our ledger instead
        // (it died before it could claim it): our queues must survive its sweep.
        let (path, _, owner) = fake_ledger(&[(KIND_MSG, 0, None)]);
        let range = LedgerRange::reserve(1).unwrap();
        let ours = range.msgget(0).unwrap();
        assert!(tag_fake(&path, range.tag, false));
        drop(owner);
        sweep_until("the ledger survived", || !path.exists());
        assert!(exists_msg(ours), "a live process's tagged queue was swept");
    }

    #[test]
    fn a_ledger_of_another_ipc_namespace_is_left_to_a_sweep_there() {
        let (path, base, owner) = fake_ledger(&[(KIND_MSG, 0, None)]);
        let q = msg_key(base as i32, libc::IPC_CREAT | libc::IPC_EXCL | 0o600);
        assert!(q >= 0);
        let set_namespace = |ns: u64| {
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all_at(&ns.to_ne_bytes(), (ledger::H_IPC_NS * 8) as u64)
                .unwrap();
        };
        // Its objects live where this sweep cannot look them up: it must not unlink it.
        set_namespace(ledger::ipc_namespace() + 1);
        drop(owner);
        for _ in 0..3 {
            sweep_orphans().unwrap();
            assert!(path.exists(), "a sweep removed another namespace's ledger");
        }
        set_namespace(ledger::ipc_namespace());
        sweep_until("the ledger survived", || !path.exists());
        assert!(!exists_msg(q));
    }

    #[test]
    fn a_held_ledger_is_never_swept_and_is_once_let_go() {
        let (path, base, holder) = fake_ledger(&[(KIND_MSG, 0, None)]);
        let q = msg_key(base as i32, libc::IPC_CREAT | libc::IPC_EXCL | 0o600);
        assert!(q >= 0);
        for _ in 0..3 {
            sweep_orphans().unwrap();
            assert!(exists_msg(q) && path.exists(), "a held ledger was swept");
        }
        drop(holder);
        sweep_until("the ledger survived", || !path.exists());
        assert!(!exists_msg(q));
    }

    #[test]
    fn concurrent_sweeps_remove_everything_once() {
        let n = 64;
        let entries: Vec<(u64, u32, Option<i32>)> = (0..n).map(|i| (KIND_MSG, i, None)).collect();
        let (path, base, holder) = fake_ledger(&entries);
        let ids: Vec<i32> = (0..n)
            .map(|i| msg_key((base + i) as i32, libc::IPC_CREAT | libc::IPC_EXCL | 0o600))
            .collect();
        assert!(ids.iter().all(|&id| id >= 0));
        drop(holder); // the owner dies: eight sweepers race for it
        let sweepers: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..20 {
                        sweep_orphans().unwrap();
                    }
                })
            })
            .collect();
        for sweeper in sweepers {
            sweeper.join().unwrap();
        }
        sweep_until("the ledger survived", || !path.exists());
        assert!(ids.iter().all(|&id| !exists_msg(id)), "queues survived");
    }

    #[test]
    fn a_zombie_or_reused_pid_owns_no_legacy_ledger() {
        // SAFETY: the child only calls _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: ends the child without running anything of the parent's.
            unsafe { libc::_exit(0) };
        }
        // Not reaped yet: a zombie with its pid and start time intact.
        let deadline = Instant::now() + Duration::from_secs(5);
        let (stat, start) = loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            if stat[stat.rfind(')').unwrap() + 2..].starts_with('Z') {
                break (stat, process_start_time(pid as u32).unwrap());
            }
            assert!(Instant::now() < deadline, "child never exited");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(!sweep::stat_says_alive(&stat, start));
        let me = std::fs::read_to_string("/proc/self/stat").unwrap();
        let my_start = process_start_time(std::process::id()).unwrap();
        assert!(sweep::stat_says_alive(&me, my_start));
        assert!(!sweep::stat_says_alive(&me, my_start + 1), "a reused pid");
        let mut status = 0;
        // SAFETY: reaps our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }

    #[test]
    fn a_dead_legacy_ledger_is_swept_by_id() {
        let id = msg_key(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600);
        assert!(id >= 0);
        let path = PathBuf::from(format!("/dev/shm/schedlab-sysv-{}-1", u32::MAX - 1));
        let mut bytes = vec![0u8; 16];
        bytes[8..].copy_from_slice(&(KIND_MSG << 32 | (id as u32 as u64 + 1)).to_ne_bytes());
        std::fs::write(&path, bytes).unwrap();
        sweep_until("the legacy ledger survived", || !path.exists());
        assert!(!exists_msg(id));
    }
}
