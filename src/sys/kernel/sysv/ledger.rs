//! This process's ledger: a file in /dev/shm, mapped shared, naming every SysV object the
//! process may have created, by its key, before the object exists.
//!
//! Layout, in native-endian u64 words: a header (`MAGIC`, pid, start time, key block,
//! capacity, entries in use, IPC namespace, tag), then one entry of two words per object:
//! `kind << 32 | key` (0: unused), written before the object is created, and `id + 1` (0: not
//! created, or removed), written after. Recording costs plain stores into the mapping.
//!
//! Keys: the file's name, `schedlab-sysv-k<block>`, claims a block of 2^18 keys. It is given
//! with link(2), which fails when another ledger holds the name, so no two ledgers, live or
//! not yet swept, share a key. Entry i's key is the block's base + i; when another program
//! already uses that key (EEXIST), the entry moves to a spare key from the block's upper half,
//! written to the entry before the next try.
//!
//! Tags: creating under a key costs the kernel a hash-table insert and removing it a delete,
//! which doubles what msgbench's msgget and IPC_RMID loops measure (measured: 0.33 against
//! 0.64 us per msgget). Its queues are private instead, and carry a mode no other schedlab
//! process uses ([`TAGS`]), claimed the same way under a second name, `schedlab-sysv-t<mode>`:
//! a sweep finds them all by that mode, their ids recorded or not.
//!
//! Liveness: the owner takes a POSIX write lock on the file before the file has a name, and
//! holds it for life. The kernel drops it only when the owner's last thread has exited, after
//! every call that thread had in flight (a msgget a SIGKILL interrupted) returned: a sweeper
//! that gets the lock knows nothing more will be created under these keys. POSIX locks
//! belong to the process, so forked children do not hold it after their parent died; the
//! price is that this process must never open its own ledger a second time (closing any
//! descriptor of the file would drop the lock), which is why sweeps and readers skip it (by
//! inode, known before it has a name).

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

use anyhow::{bail, Context, Result};
use nix::fcntl::{AtFlags, FcntlArg, OFlag, AT_FDCWD};
use nix::sys::stat::Mode;

pub(super) const LEDGER_DIR: &str = "/dev/shm";
/// Ledgers of this format: `schedlab-sysv-k<block>`. (Earlier builds named theirs
/// `schedlab-sysv-<pid>-<start>`; [`super::sweep`] still knows those.)
pub(super) const PREFIX: &str = "schedlab-sysv-k";
pub(super) const MAGIC: u64 = u64::from_ne_bytes(*b"SLSYSV02");
pub(super) const HEADER_WORDS: usize = 8;
pub(super) const H_MAGIC: usize = 0;
pub(super) const H_PID: usize = 1;
pub(super) const H_START: usize = 2;
pub(super) const H_BLOCK: usize = 3;
pub(super) const H_CAPACITY: usize = 4;
/// Entries handed out so far (a high-water mark): sweeps and `remove_all` read no further.
pub(super) const H_IN_USE: usize = 5;
/// The mode tagging this ledger's private queues (0: none); it is the ledger's only while the
/// tag's name links to this file.
pub(super) const H_TAG: usize = 7;
/// The IPC namespace the objects live in (its inode; 0: unknown). Only a sweeper in the same
/// namespace can find them: one elsewhere (`unshare --ipc` sharing /dev/shm) must leave the
/// ledger to them.
pub(super) const H_IPC_NS: usize = 6;
/// Entries in one ledger: msgbench's 32,768 queues fit with room to spare.
pub(super) const CAPACITY: usize = 1 << 17;
/// Keys per block: twice the capacity, the upper half being spares for keys others hold.
const BLOCK_BITS: u32 = 18;
/// Blocks in the 32-bit key space; block 0 is never used (key 0 is IPC_PRIVATE, and small
/// keys are what hand-written programs pick).
const BLOCKS: u32 = 1 << (32 - BLOCK_BITS);
pub(super) const FILE_WORDS: usize = HEADER_WORDS + 2 * CAPACITY;

/// Ledgers' second names, claiming a tag: `schedlab-sysv-t<mode in octal>`.
pub(super) const TAG_PREFIX: &str = "schedlab-sysv-t";
/// Modes that tag private queues: owner read-write, no write for anyone else, and execute
/// bits, which SysV permission checks ignore, in combinations that file modes rarely have
/// (0600, 0640, 0700, 0710, 0711, 0740, 0750 and 0751 are left out). Eight msgbench runs at
/// once, at most.
pub(super) const TAGS: [u32; 8] = [0o601, 0o610, 0o611, 0o641, 0o650, 0o651, 0o701, 0o741];

pub(super) const KIND_SEM: u64 = 1;
pub(super) const KIND_MSG: u64 = 2;

pub(super) fn ledger_path(block: u32) -> PathBuf {
    Path::new(LEDGER_DIR).join(format!("{PREFIX}{block}"))
}

pub(super) fn tag_path(tag: u32) -> PathBuf {
    Path::new(LEDGER_DIR).join(format!("{TAG_PREFIX}{tag:o}"))
}

pub(super) struct Ledger {
    /// The process that made the ledger. A forked child inherits the mapping and the atexit
    /// handler; only the owner may remove what the ledger lists, or the file.
    pub(super) owner: u32,
    words: &'static [AtomicU64],
    /// None when /dev/shm was unusable: objects are then IPC_PRIVATE, as no sweep could
    /// find them anyway.
    pub(super) path: Option<PathBuf>,
    /// The first key of the block.
    base: u32,
    /// Holds the lock that says the owner lives; never closed.
    file: Option<OwnedFd>,
    /// The mode tagging private queues, once claimed (0: not yet); read without a lock by
    /// the exit path.
    tag: AtomicU32,
    /// Held while claiming a tag.
    claiming: Mutex<()>,
    /// Free entry ranges; touched only when objects are reserved or released.
    free: Mutex<Vec<(usize, usize)>>,
    /// Next spare key (an offset into the block's upper half).
    spare: AtomicU32,
    /// One past the highest entry ever handed out.
    in_use: AtomicUsize,
}

/// This process's ledger, made on first use.
pub(super) fn ledger() -> &'static Ledger {
    static LEDGER: OnceLock<Ledger> = OnceLock::new();
    LEDGER.get_or_init(|| {
        let ledger = match Ledger::create_file() {
            Ok(ledger) => ledger,
            Err(err) => {
                crate::errln!("schedlab: warning: no SysV ledger in {LEDGER_DIR} ({err:#}); objects left by a SIGKILL will need `ipcrm`");
                Ledger::anonymous()
            }
        };
        // SAFETY: registers a plain extern "C" fn with no arguments; atexit has no other
        // requirement. A normal exit (return from main, process::exit) then removes what is
        // left and the file.
        unsafe { libc::atexit(super::remove_all_at_exit) };
        ledger
    })
}

/// The ledger if this process made one and owns it (not inherited through fork).
pub(super) fn own_ledger() -> Option<&'static Ledger> {
    OWN.get().copied().filter(|l| l.owner == std::process::id())
}

/// Inode and device of this process's ledger file (0: none).
static OWN_FILE: AtomicU64 = AtomicU64::new(0);
static OWN_DEV: AtomicU64 = AtomicU64::new(0);

/// Whether `path` names this process's ledger (the block's name or the tag's). Sweeps and
/// readers check it before opening anything: opening our own file and closing it again
/// would drop our lock. Inherited by a forked child, which leaves its parent's ledger alone.
pub(super) fn is_own(path: &Path) -> bool {
    let ino = OWN_FILE.load(Relaxed);
    ino != 0
        && nix::sys::stat::lstat(path)
            .is_ok_and(|s| s.st_ino == ino && s.st_dev == OWN_DEV.load(Relaxed))
}

/// Set once the ledger exists, so that clean-up paths never create one.
static OWN: OnceLock<&'static Ledger> = OnceLock::new();

pub(super) fn ensure_registered() -> &'static Ledger {
    OWN.get_or_init(ledger)
}

impl Ledger {
    fn anonymous() -> Self {
        let words: Vec<AtomicU64> = (0..FILE_WORDS).map(|_| AtomicU64::new(0)).collect();
        Self::new(Box::leak(words.into_boxed_slice()), None, 0, None)
    }

    fn new(
        words: &'static [AtomicU64],
        path: Option<PathBuf>,
        base: u32,
        file: Option<OwnedFd>,
    ) -> Self {
        Self {
            owner: std::process::id(),
            words,
            path,
            base,
            file,
            tag: AtomicU32::new(0),
            claiming: Mutex::new(()),
            free: Mutex::new(vec![(0, CAPACITY)]),
            spare: AtomicU32::new(0),
            in_use: AtomicUsize::new(0),
        }
    }

    /// An unnamed file, locked and filled in, then given a block's name.
    fn create_file() -> Result<Self> {
        let pid = std::process::id();
        let start = super::process_start_time(pid).context("reading our own start time")?;
        let file = nix::fcntl::open(
            LEDGER_DIR,
            OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
            Mode::S_IRUSR | Mode::S_IWUSR,
        )
        .context("creating a file")?;
        lock(&file, libc::F_SETLK).context("locking it")?;
        // Known before the file has a name, so that no sweep of ours ever opens it.
        let stat = nix::sys::stat::fstat(&file).context("fstat of it")?;
        OWN_FILE.store(stat.st_ino, Relaxed);
        OWN_DEV.store(stat.st_dev, Relaxed);
        let len = FILE_WORDS * 8;
        nix::unistd::ftruncate(&file, len as libc::off_t).context("sizing it")?;
        let words = map_shared(&file, len)?;
        words[H_PID].store(pid as u64, Relaxed);
        words[H_START].store(start, Relaxed);
        words[H_CAPACITY].store(CAPACITY as u64, Relaxed);
        words[H_IPC_NS].store(ipc_namespace(), Relaxed);
        words[H_MAGIC].store(MAGIC, Relaxed);
        // Start where this pid points, so concurrent starts rarely try the same names.
        let first = (pid.wrapping_mul(2_654_435_761) ^ start as u32) % (BLOCKS - 1);
        for attempt in 0..BLOCKS - 1 {
            let block = 1 + (first + attempt) % (BLOCKS - 1);
            words[H_BLOCK].store(block as u64, Relaxed);
            let path = ledger_path(block);
            match give_name(&file, &path) {
                Ok(()) => {
                    return Ok(Self::new(
                        words,
                        Some(path),
                        block << BLOCK_BITS,
                        Some(file),
                    ))
                }
                Err(nix::errno::Errno::EEXIST) => continue,
                Err(err) => return Err(err).context(format!("naming it {}", path.display())),
            }
        }
        bail!(
            "all {} SysV key blocks are taken by other schedlab processes",
            BLOCKS - 1
        )
    }

    /// Two words of entry `i`: the kind and key, the id + 1.
    #[inline]
    pub(super) fn entry(&self, i: usize) -> (&AtomicU64, &AtomicU64) {
        let at = HEADER_WORDS + 2 * i;
        (&self.words[at], &self.words[at + 1])
    }

    /// Entry `i`'s own key; IPC_PRIVATE when there is no ledger file to claim keys with.
    #[inline]
    pub(super) fn primary_key(&self, i: usize) -> libc::key_t {
        if self.path.is_none() {
            return libc::IPC_PRIVATE;
        }
        (self.base + i as u32) as libc::key_t
    }

    /// A key from the block's upper half, for an entry whose own key another program holds.
    pub(super) fn spare_key(&self) -> libc::key_t {
        let offset = self.spare.fetch_add(1, Relaxed) % CAPACITY as u32;
        (self.base + CAPACITY as u32 + offset) as libc::key_t
    }

    /// The mode this process's private queues carry, claimed on first use. Without a
    /// ledger file, plain 0600: no sweep could find them anyway.
    pub(super) fn private_tag(&self) -> Result<u32> {
        let _claiming = self.claiming.lock().unwrap_or_else(|e| e.into_inner());
        let claimed = self.tag.load(Relaxed);
        let Some(file) = self.file.as_ref().filter(|_| claimed == 0) else {
            return Ok(if claimed == 0 { 0o600 } else { claimed });
        };
        let first = self.owner as usize % TAGS.len();
        for k in 0..TAGS.len() {
            let candidate = TAGS[(first + k) % TAGS.len()];
            // In the header first: a sweeper trusts it only while the name links here.
            self.words[H_TAG].store(candidate as u64, Relaxed);
            match give_name(file, &tag_path(candidate)) {
                Ok(()) => {
                    self.tag.store(candidate, Relaxed);
                    return Ok(candidate);
                }
                Err(nix::errno::Errno::EEXIST) => continue,
                Err(err) => {
                    self.words[H_TAG].store(0, Relaxed);
                    return Err(err).context("claiming a mode for private queues");
                }
            }
        }
        self.words[H_TAG].store(0, Relaxed);
        bail!(
            "{} msgbench runs are going on at once (or were killed outright: `schedlab cleanup` removes what they left)",
            TAGS.len()
        )
    }

    /// The tag's name, if one was claimed.
    pub(super) fn tag_path(&self) -> Option<PathBuf> {
        let tag = self.tag.load(Relaxed);
        (tag != 0).then(|| tag_path(tag))
    }

    pub(super) fn in_use(&self) -> usize {
        self.in_use.load(Relaxed)
    }

    /// Reserves `len` consecutive entries; returns the first.
    pub(super) fn reserve(&self, len: usize) -> Result<usize> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let Some(pos) = free.iter().position(|&(_, n)| n >= len) else {
            bail!("SysV ledger full: more than {CAPACITY} live objects");
        };
        let (start, n) = free[pos];
        if n == len {
            free.remove(pos);
        } else {
            free[pos] = (start + len, n - len);
        }
        let top = self.in_use.fetch_max(start + len, Relaxed).max(start + len);
        self.words[H_IN_USE].store(top as u64, Relaxed);
        Ok(start)
    }

    /// Gives entries back; their objects must be gone and the entries cleared.
    pub(super) fn release(&self, start: usize, len: usize) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.push((start, len));
    }
}

/// This process's IPC namespace (the inode of /proc/self/ns/ipc), 0 if unknown.
pub(super) fn ipc_namespace() -> u64 {
    std::fs::metadata("/proc/self/ns/ipc").map_or(0, |m| {
        use std::os::unix::fs::MetadataExt;
        m.ino()
    })
}

/// Takes a write lock on the whole file: `cmd` F_SETLK (the process's, for the owner) or
/// F_OFD_SETLK (the open file's, for a sweeper: threads of one process exclude each other).
/// Never waits.
pub(super) fn lock(file: &OwnedFd, cmd: libc::c_int) -> nix::Result<()> {
    let whole = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    let arg = if cmd == libc::F_SETLK {
        FcntlArg::F_SETLK(&whole)
    } else {
        FcntlArg::F_OFD_SETLK(&whole)
    };
    nix::fcntl::fcntl(file, arg).map(drop)
}

/// Links the unnamed file at `path`; EEXIST when another ledger has that name.
pub(super) fn give_name(file: &OwnedFd, path: &Path) -> nix::Result<()> {
    let by_proc = format!("/proc/self/fd/{}", file.as_raw_fd());
    match nix::unistd::linkat(
        AT_FDCWD,
        by_proc.as_str(),
        AT_FDCWD,
        path,
        AtFlags::AT_SYMLINK_FOLLOW,
    ) {
        // Without /proc: linking the descriptor itself needs CAP_DAC_READ_SEARCH.
        Err(nix::errno::Errno::ENOENT) => {
            nix::unistd::linkat(file.as_fd(), "", AT_FDCWD, path, AtFlags::AT_EMPTY_PATH)
        }
        other => other,
    }
}

fn map_shared(file: &OwnedFd, len: usize) -> Result<&'static [AtomicU64]> {
    use nix::sys::mman::{MapFlags, ProtFlags};
    let length = std::num::NonZeroUsize::new(len).expect("a ledger has a header");
    // SAFETY: a fresh shared mapping of a file we sized to `len` bytes; nothing else maps
    // this range. It is never unmapped, so the 'static slice stays valid; its words are
    // accessed only as atomics (other processes read the file, never write it).
    let words = unsafe {
        let base = nix::sys::mman::mmap(
            None,
            length,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
            file,
            0,
        )
        .map_err(io::Error::from)
        .context("mapping it")?;
        std::slice::from_raw_parts(base.as_ptr() as *const AtomicU64, len / 8)
    };
    Ok(words)
}
