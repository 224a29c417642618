//! Where a standalone load generator puts itself: its nice value, and whether it gets a
//! session (so an autogroup, when `kernel.sched_autogroup_enabled` is 1) of its own.
//! A supervised workload gets these from the supervisor instead; both end up the same.

use std::os::unix::process::CommandExt;
use std::process::Command;

use anyhow::{Context, Result};
use nix::sys::prctl;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::waitpid;
use nix::unistd::{getpid, getsid, setsid, Pid};

/// The placement options shared by fork-load, ref-job and contest.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PlacementArgs {
    /// Nice value for this command and everything it starts (-20..19; below 0 needs root).
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub nice: Option<i32>,
    /// Run in a session of its own (setsid), so in its own autogroup when autogroup is on.
    #[arg(long)]
    pub own_session: bool,
}

/// Applies the nice value to this thread (children and threads started later inherit it).
pub(crate) fn apply_nice(nice: Option<i32>) -> Result<()> {
    if let Some(n) = nice {
        // Raw libc: nix has no setpriority.
        // SAFETY: setpriority takes integers only.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("setting nice {n} (below 0 needs root)"));
        }
    }
    Ok(())
}

/// Moves this process into a session of its own. A process group leader (what a shell makes
/// of every command) cannot call setsid, so then the command runs again as a child in a new
/// session and this process waits for it and exits with its status: it never returns then.
pub(crate) fn enter_own_session() -> Result<()> {
    if getsid(None).is_ok_and(|s| s == getpid()) || setsid().is_ok() {
        return Ok(());
    }
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let mut cmd = Command::new(exe);
    cmd.args(std::env::args_os().skip(1));
    // SAFETY: the closure runs in the forked child before exec and only calls setsid and
    // prctl, which are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            setsid()?;
            let _ = prctl::set_pdeathsig(Signal::SIGTERM);
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("starting a copy in a new session")?;
    let pid = Pid::from_raw(child.id() as i32);
    // Ctrl-C reaches only us (the copy has no terminal): pass it on, let it clean up.
    crate::sys::exit::lifeline::on_exit(move || {
        let _ = kill(pid, Signal::SIGTERM);
        let _ = waitpid(pid, None);
    });
    let status = child
        .wait()
        .context("waiting for the copy in a new session")?;
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    crate::sys::exit::lifeline::terminate(code)
}

impl PlacementArgs {
    /// Applies both knobs to this process.
    pub fn apply(&self) -> Result<()> {
        if self.own_session {
            enter_own_session()?;
        }
        apply_nice(self.nice)
    }

    /// A one-line description for reports.
    pub fn describe(&self) -> String {
        format!(
            "{}, nice {}",
            if self.own_session {
                "own session"
            } else {
                "caller's session"
            },
            self.nice.unwrap_or(0)
        )
    }
}
