//! Child processes of a load generator (hackbench's tasks, fork-load's forkers, ref-job's
//! workers): forked from this process, never outliving it.
//!
//! Each child gets SIGKILL if this process dies (PR_SET_PDEATHSIG, from the main thread that
//! lives as long as the run), the default action for the signals the parent catches, and is
//! listed so that the lifeline hook kills and reaps it on Ctrl-C, SIGTERM or a panic.

use std::sync::Once;

use anyhow::Result;
use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{kill, signal, SigHandler, Signal};
use nix::sys::wait::waitpid;
use nix::unistd::{getpid, getppid, write, ForkResult, Pid};

use crate::sys::exit::kill_list::KillList;

/// The children forked and not yet reaped.
static LIVE: KillList<libc::pid_t> = KillList::new();

/// Forks a child that runs `body` and exits with its return value.
///
/// The child is a copy of a multi-threaded process with only this thread in it: `body` must
/// only make system calls and touch memory prepared before the fork (no allocation, no lock).
pub fn fork(body: impl FnOnce() -> i32) -> Result<libc::pid_t> {
    install_hook();
    let parent = getpid();
    let child = match fork_bare() {
        Ok(ForkResult::Parent { child }) => child,
        Ok(ForkResult::Child) => {
            // The parent's signal-hook handlers would swallow these here: no thread reads them.
            for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
                // SAFETY: SIG_DFL installs no handler of ours.
                let _ = unsafe { signal(sig, SigHandler::SigDfl) };
            }
            let _ = prctl::set_pdeathsig(Signal::SIGKILL);
            let code = if getppid() == parent { body() } else { 1 };
            // SAFETY: _exit (which nix lacks) ends the child without the parent's clean-up.
            unsafe { libc::_exit(code) }
        }
        Err(errno) => {
            let hint = if errno == Errno::EAGAIN {
                " (process limit: ulimit -u, or the cgroup's pids.max)"
            } else {
                ""
            };
            return Err(
                anyhow::Error::new(std::io::Error::from(errno)).context(format!("fork{hint}"))
            );
        }
    };
    let pid = child.as_raw();
    LIVE.add(pid);
    Ok(pid)
}

extern "C" {
    /// glibc's (2.34 and later) and musl's fork without the atfork handlers: no malloc arena,
    /// stdio or unwinder bookkeeping on either side. Those writes would fault on pages the
    /// fork has just made copy-on-write, in the parent and in every child: hackbench's 400
    /// forks took 16,000 page faults against the C original's 8,500 (9,200 with this).
    /// A child of it must fork with it too: glibc's fork would take the malloc locks that
    /// another thread of the parent may have held at the fork, and wait on them forever.
    #[link_name = "_Fork"]
    pub fn bare_fork() -> libc::pid_t;
}

/// One fork, as `_Fork` does it.
fn fork_bare() -> nix::Result<ForkResult> {
    // SAFETY: `_Fork` is fork(2) without atfork handlers. The child is a copy of this
    // multi-threaded process with only the calling thread, and with any lock another thread
    // held (malloc's included, which the handlers would have reset) still held: `fork`'s
    // contract (system calls and memory prepared before the fork only, no allocation, no
    // lock) is what keeps the child from touching one; its breach could deadlock the child,
    // never the parent.
    match unsafe { bare_fork() } {
        -1 => Err(Errno::last()),
        0 => Ok(ForkResult::Child),
        pid => Ok(ForkResult::Parent {
            child: Pid::from_raw(pid),
        }),
    }
}

/// Forgets children that were reaped (kept out of timed loops: reaping is a plain wait()).
pub(crate) fn forget_all() {
    LIVE.clear();
}

/// Kills every listed child and reaps it. Safe to call twice, or while another thread reaps.
pub(crate) fn kill_all() {
    let pids = LIVE.take();
    for &pid in &pids {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    for &pid in &pids {
        let _ = waitpid(Pid::from_raw(pid), None);
    }
}

/// Kills the listed children when dropped: every early return of a run goes through it.
pub struct KillOnDrop;

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        kill_all();
    }
}

fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| crate::sys::exit::lifeline::on_exit(kill_all));
}

/// Waits for any child; returns its pid and its exit code (minus the signal that killed it).
/// Raw waitpid, as the originals' wait(): hackbench's clock runs until its last task is reaped.
#[inline]
pub(crate) fn wait_any() -> std::io::Result<(libc::pid_t, i32)> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a live int for waitpid to fill.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -libc::WTERMSIG(status)
            };
            return Ok((pid, code));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// Writes a fixed message to stderr from a forked child (no allocation) and returns `code`.
pub(crate) fn child_fail(msg: &[u8], code: i32) -> i32 {
    let _ = write(std::io::stderr(), msg);
    code
}
