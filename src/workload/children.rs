//! Child processes of a load generator (hackbench's tasks, fork-load's forkers, ref-job's
//! workers): forked from this process, never outliving it.
//!
//! Each child gets SIGKILL if this process dies (PR_SET_PDEATHSIG, from the main thread that
//! lives as long as the run), the default action for the signals the parent catches, and is
//! listed so that the lifeline hook kills and reaps it on Ctrl-C, SIGTERM or a panic.

use std::sync::{Mutex, Once};

use anyhow::Result;

static LIVE: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

/// Forks a child that runs `body` and exits with its return value.
///
/// The child is a copy of a multi-threaded process with only this thread in it: `body` must
/// only make system calls and touch memory prepared before the fork (no allocation, no lock).
pub fn fork(body: impl FnOnce() -> i32) -> Result<libc::pid_t> {
    install_hook();
    // SAFETY: getpid has no preconditions and cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: fork itself is sound; what the child may do is the contract documented above (system
    // calls and memory prepared before the fork), whose breach could deadlock the child, never the
    // parent.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let err = std::io::Error::last_os_error();
        let hint = if err.raw_os_error() == Some(libc::EAGAIN) {
            " (process limit: ulimit -u, or the cgroup's pids.max)"
        } else {
            ""
        };
        return Err(anyhow::Error::new(err).context(format!("fork{hint}")));
    }
    if pid == 0 {
        // SAFETY: in the child: signal gets SIG_DFL, prctl, getppid and _exit take integers only,
        // all async-signal-safe; `body` keeps to the contract above and _exit ends the child
        // without the parent's clean-up.
        unsafe {
            // The parent's signal-hook handlers would swallow these here: no thread reads them.
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            let code = body();
            libc::_exit(code)
        }
    }
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
    Ok(pid)
}

/// Forgets children that were reaped (kept out of timed loops: reaping is a plain wait()).
pub fn forget_all() {
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Kills every listed child and reaps it. Safe to call twice, or while another thread reaps.
pub fn kill_all() {
    let pids = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for &pid in &pids {
        // SAFETY: kill takes no pointer; the pids are our children, taken out of LIVE so each is
        // killed once.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    for &pid in &pids {
        // SAFETY: a null status pointer is allowed; the pids are our children.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
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
    ONCE.call_once(|| crate::sys::lifeline::on_exit(kill_all));
}

/// Waits for any child; returns its pid and its exit code (minus the signal that killed it).
#[inline]
pub fn wait_any() -> std::io::Result<(libc::pid_t, i32)> {
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
pub fn child_fail(msg: &[u8], code: i32) -> i32 {
    // SAFETY: `msg` is msg.len() live bytes that write only reads.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    code
}
