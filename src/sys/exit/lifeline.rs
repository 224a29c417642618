//! How a schedlab process ends, whatever ends it.
//!
//! Every command calls [`install`] first. Then SIGINT, SIGTERM and SIGHUP, and a panic on any
//! thread, run the registered clean-up hooks (restore the terminal, kill children, ...), remove
//! every SysV object the process made, and exit. A Lab driven in-process elsewhere (a test
//! binary) installs the signal part alone ([`install_signals`]). A supervised workload (one the dashboard,
//! `run` or contest started) is also the leader of its own process group, and takes that whole
//! group with it, so a fork loop's children or hackbench's 400 processes cannot outlive it.
//!
//! A supervised workload learns of its parent's death without a thread of its own: the
//! supervisor gives it the read end of a pipe set to raise SIGTERM (F_SETSIG) when the last
//! writer, the parent, goes away, plus PR_SET_PDEATHSIG as a second line.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, Once};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Set in a supervised child: the descriptor of its lifeline pipe.
pub(crate) const ENV_LIFELINE_FD: &str = "SCHEDLAB_LIFELINE_FD";

type Hook = Box<dyn Fn() + Send>;
/// Set once a signal or a panic has started the clean-up: the main thread must then leave the
/// exit to it, not race it with an error that the clean-up itself caused ("child gone").
static ENDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());
/// The process that installed the hooks: a forked child inherits the panic hook, but the
/// parent's clean-ups (kill its children, restore its terminal) are not the child's to run.
static INSTALLER: AtomicU32 = AtomicU32::new(0);

/// Registers a clean-up to run on a termination signal, a lost parent or a panic. Hooks run in
/// the reverse order of registration and must not block for long.
pub(crate) fn on_exit(hook: impl Fn() + Send + 'static) {
    HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Box::new(hook));
}

/// Installs the signal thread and the panic hook. Idempotent.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        install_signals();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::process::id() != INSTALLER.load(Ordering::Relaxed) {
                // A forked child without exec: report, then leave without the parent's exits.
                previous(info);
                // SAFETY: _exit ends this forked child at once, without the parent's exit handlers,
                // which are not its own.
                unsafe { libc::_exit(101) };
            }
            ENDING.store(true, std::sync::atomic::Ordering::SeqCst);
            // Hooks first: the dashboard's restores the terminal, or the message is lost
            // with the alternate screen.
            run_hooks();
            previous(info);
            finish(101);
        }));
    });
}

/// Installs the signal thread alone: SIGINT, SIGTERM and SIGHUP run the clean-up hooks and
/// exit. Idempotent. Every Lab installs it, so that a process that drives one in-process (a
/// test binary, whose panics are its own to report) kills its workloads and removes their
/// cgroups when it is stopped.
pub(crate) fn install_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        INSTALLER.store(std::process::id(), Ordering::Relaxed);
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(mut signals) => {
                let spawned = std::thread::Builder::new()
                    .name("schedlab-signals".into())
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        if let Some(sig) = signals.forever().next() {
                            terminate(128 + sig);
                        }
                    });
                if let Err(err) = spawned {
                    crate::errln!("schedlab: warning: no signal thread ({err}); Ctrl-C may leave objects behind");
                }
            }
            Err(err) => crate::errln!("schedlab: warning: cannot catch signals: {err}"),
        }
    });
}

/// TEST-ONLY fault injection: `SCHEDLAB_INJECT_PANIC=<command>:<ms>` makes the process
/// running subcommand `<command>` panic on a thread of its own `<ms>` milliseconds after it
/// starts (`*` matches any command). The reliability suite uses it to prove that a panic
/// mid-run leaves nothing behind, in a parent (`run:500`) or in one of its workloads
/// (`fork-load:500` under `run`). Read once, at start; never set it outside tests.
pub(crate) const ENV_INJECT_PANIC: &str = "SCHEDLAB_INJECT_PANIC";

/// Arms the test-only panic of [`ENV_INJECT_PANIC`] when it names `command`.
pub fn arm_injected_panic(command: &str) {
    let Some(spec) = std::env::var_os(ENV_INJECT_PANIC) else {
        return;
    };
    let spec = spec.to_string_lossy();
    let Some((who, ms)) = spec.split_once(':') else {
        return;
    };
    let Ok(ms) = ms.parse::<u64>() else {
        return;
    };
    if who != command && who != "*" {
        return;
    }
    let command = command.to_owned();
    let _ = std::thread::Builder::new()
        .name("schedlab-inject".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(ms));
            panic!("{ENV_INJECT_PANIC}: injected panic in {command} (test-only)");
        });
}

/// True when a supervisor started this process (and made it leader of its process group).
pub(crate) fn supervised() -> bool {
    std::env::var_os(ENV_LIFELINE_FD).is_some()
}

/// Runs every clean-up and exits with `code`. Also the path for a fatal error in a thread.
pub(crate) fn terminate(code: i32) -> ! {
    ENDING.store(true, std::sync::atomic::Ordering::SeqCst);
    run_hooks();
    finish(code)
}

/// True once a signal, a panic or [`terminate`] has started the clean-up.
pub fn ending() -> bool {
    ENDING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Ends the process with `code` from any thread: with the clean-up in the process that
/// installed the hooks, without it in a forked child (the parent's clean-ups are not its own).
pub fn end(code: i32) -> ! {
    if std::process::id() == INSTALLER.load(Ordering::Relaxed) {
        terminate(code)
    }
    // SAFETY: _exit only ends the calling process; nothing of ours needs running first.
    unsafe { libc::_exit(code) }
}

/// Called by main before it reports and exits: when a signal or a panic is already ending the
/// process, waits for that to finish (it exits with its own code), so the run's end is told
/// by what ended it, not by an error its clean-up provoked in the main thread.
pub fn settle() {
    if ENDING.load(std::sync::atomic::Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

fn run_hooks() {
    // A panic while the lock is held must not stop the clean-up: take the poisoned value.
    let hooks = match HOOKS.try_lock() {
        Ok(mut guard) => std::mem::take(&mut *guard),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => Vec::new(),
    };
    for hook in hooks.iter().rev() {
        hook();
    }
    crate::sys::kernel::sysv::remove_all();
}

fn finish(code: i32) -> ! {
    crate::sys::kernel::sysv::remove_ledger_file();
    if supervised() {
        // Our process group is ours alone: take every descendant with us, then ourselves.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(0), nix::sys::signal::SIGKILL);
    }
    std::process::exit(code)
}
