//! Room in this process's descriptor table, made before the sampler needs it.
//!
//! The probe keeps three files open per thread it watches: 3,000 at 1,000 threads, 48,000 at
//! 16,000. When a multi-threaded process's table must grow, the thread that asked for the
//! descriptor waits in the kernel for an RCU grace period (`expand_fdtable` calls
//! `synchronize_rcu`), and beside 1,000 busy threads on 2 CPUs one took 2-3 s here: the sampler
//! slept in `openat`, in D state, and 20-30 samples were missed. So:
//! - [`reserve_early`] makes [`EARLY_ROOM`] slots while the process still has one thread, when
//!   there is no grace period to wait for (the commands that sample call it first thing);
//! - [`keep_ahead`], told of each descriptor the probe opens, has a helper thread grow the table
//!   fourfold once a descriptor passes half of it, so that the helper, not the sampler, waits.
//!
//! 65,536 slots take 512 KiB of kernel memory; a fork copies only the slots in use.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, OnceLock};

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// Slots made up front: the probe's three files for each of 16,000 threads, and more.
pub(crate) const EARLY_ROOM: usize = 1 << 16;
/// The table every process starts with (NR_OPEN_DEFAULT on 64-bit).
const FIRST_ROOM: usize = 64;

/// Slots known to exist.
static ROOM: AtomicUsize = AtomicUsize::new(FIRST_ROOM);
/// The largest room asked of the helper.
static ASKED: AtomicUsize = AtomicUsize::new(0);
static HELPER: OnceLock<mpsc::Sender<usize>> = OnceLock::new();

/// Lifts the soft descriptor limit to the hard one (the probe needs far more than the usual
/// 1,024) and makes [`EARLY_ROOM`] slots, or as many as the limit allows. Call it before the
/// process has a second thread: then growing the table waits for nothing.
pub fn reserve_early() {
    raise_soft_limit();
    grow(std::io::stderr().as_fd(), EARLY_ROOM);
}

/// Lifts the soft descriptor limit to the hard one: the probe keeps three files open per
/// thread, and a 5,000-thread workload would exceed the usual 1,024.
pub(crate) fn raise_soft_limit() {
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
    LIMIT.store(soft_limit_now(), Relaxed);
}

/// Descriptors the probe leaves free for everything else it opens for a moment (a task
/// directory to list, a process's stat, a cgroup file, a recording): past the limit less these,
/// a file is opened at each read instead of kept open. Without them, a 16,000-thread workload
/// under a limit of 20,000 took the last descriptors, and the listings and process reads that
/// followed failed (EMFILE), dropping the workload's processes every other sweep.
pub(crate) const SPARE: usize = 1_024;

/// The soft limit as last read (0: not yet).
static LIMIT: AtomicUsize = AtomicUsize::new(0);

fn soft_limit_now() -> usize {
    getrlimit(Resource::RLIMIT_NOFILE).map_or(usize::MAX, |(soft, _)| soft as usize)
}

fn limit() -> usize {
    let mut limit = LIMIT.load(Relaxed);
    if limit == 0 {
        limit = soft_limit_now();
        LIMIT.store(limit, Relaxed);
    }
    limit
}

/// Whether `fd` is among the last [`SPARE`] descriptors the limit allows: too near to keep.
pub(crate) fn too_near_limit(fd: RawFd) -> bool {
    (fd.max(0) as usize).saturating_add(SPARE) >= limit()
}

/// Files the probe may keep open per thread: schedstat, stat, status and sched.
const FILES_PER_THREAD: usize = 4;

/// Threads the probe watches, listed or still to be opened, over every process it keeps.
static WATCHED: AtomicUsize = AtomicUsize::new(0);

/// A process's count of watched threads went from `old` to `new`.
pub(crate) fn rewatch(old: usize, new: usize) {
    if new >= old {
        WATCHED.fetch_add(new - old, Relaxed);
    } else {
        WATCHED.fetch_sub(old - new, Relaxed);
    }
}

/// Whether the limit holds every file of every watched thread and [`SPARE`]. When it does
/// not, the files read rarely (stat, status and sched, at status sweeps: each of 16,000
/// threads once a minute) are opened at each read, so that schedstat, read at every sweep,
/// keeps a descriptor for every thread. Under a limit of 20,000, three files kept for each of
/// the first 6,300 threads of a 16,000-thread run had left the other 9,700 to reopen their
/// schedstat at every read, at ten times the cost.
pub(crate) fn rare_files_fit() -> bool {
    fits(WATCHED.load(Relaxed), limit())
}

fn fits(threads: usize, limit: usize) -> bool {
    threads
        .saturating_mul(FILES_PER_THREAD)
        .saturating_add(SPARE)
        <= limit
}

/// Called with each descriptor the probe opens: past half the table, the helper grows it.
pub(crate) fn keep_ahead(fd: RawFd) {
    let room = ROOM.load(Relaxed);
    if (fd.max(0) as usize) < room / 2 {
        return;
    }
    let want = room.saturating_mul(4);
    if ASKED.fetch_max(want, Relaxed) >= want {
        return;
    }
    let helper = HELPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<usize>();
        let _ = std::thread::Builder::new()
            .name("schedlab-fdtable".into())
            .stack_size(64 * 1024)
            .spawn(move || {
                for want in rx {
                    grow(std::io::stderr().as_fd(), want);
                }
            });
        tx
    });
    let _ = helper.send(want);
}

/// Grows the table to at least `want` slots (capped by the soft limit), by taking the lowest
/// free descriptor at or above `want - 1` and closing it again.
fn grow(any: BorrowedFd, want: usize) {
    let limit = getrlimit(Resource::RLIMIT_NOFILE).map_or(0, |(soft, _)| soft as usize);
    let want = want.min(limit);
    if want <= ROOM.load(Relaxed) {
        return;
    }
    if let Ok(fd) = nix::fcntl::fcntl(
        any,
        nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC((want - 1) as RawFd),
    ) {
        // SAFETY: the kernel just made `fd` for us alone: owned here, closed at once.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
        ROOM.fetch_max(want, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rare_files_are_kept_only_while_the_limit_holds_every_threads_files() {
        // 16,000 threads under this machine's limit of 20,000: schedstat only.
        assert!(!fits(16_000, 20_000));
        assert!(fits(1_000, 20_000));
        // Exactly at the line: four files each and the spare.
        assert!(fits(1_000, 4 * 1_000 + SPARE));
        assert!(!fits(1_000, 4 * 1_000 + SPARE - 1));
        assert!(fits(0, SPARE));
        assert!(!fits(usize::MAX, usize::MAX - 1));
    }

    #[test]
    fn rewatching_adds_and_takes_away() {
        // Other tests' probes may watch threads at the same time: only the difference counts.
        rewatch(0, 10);
        let with = WATCHED.load(Relaxed);
        rewatch(10, 4);
        rewatch(4, 0);
        assert!(with >= 10 && WATCHED.load(Relaxed) <= with);
    }

    #[test]
    fn an_early_reservation_makes_the_room_at_once() {
        // The test harness has threads already: this grows the table the slow way, which
        // shows the room, not the speed.
        reserve_early();
        let want = EARLY_ROOM.min(
            getrlimit(Resource::RLIMIT_NOFILE)
                .map(|(s, _)| s as usize)
                .unwrap(),
        );
        let fdsize = crate::sys::kernel::proc::own_fd_table_size().unwrap() as usize;
        assert!(fdsize >= want, "FDSize {fdsize}, below {want}");
        assert!(ROOM.load(Relaxed) >= want);
    }
}
