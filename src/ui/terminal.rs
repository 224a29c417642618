//! Taking the terminal over and giving it back, on every exit path.
//!
//! - `q`, Ctrl-C, an error: [`Session::leave`] (or its Drop).
//! - SIGTERM, SIGHUP, SIGINT, a panic: the lifeline hook registered by [`Session::enter`].
//! - SIGKILL, which no process can catch: a guardian. The process the shell started forks
//!   first thing ([`guard`]): the child is the dashboard, the parent a tiny process that waits
//!   for it. The dashboard says on a pipe when it takes the terminal and when it gives it
//!   back; when it ends between the two, the guardian puts the terminal back (termios, main
//!   screen, no mouse reporting, cursor). The shell waits for the guardian, so its prompt
//!   always comes after the restore (a guardian forked by the dashboard raced the prompt, and
//!   lost it to the alternate screen under load).

use std::io::{IsTerminal, Stdout, Write};
use std::ops::ControlFlow;
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Once;

use anyhow::{bail, Context, Result};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use libc::STDOUT_FILENO;
use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::sys::prctl;
use nix::sys::signal::{sigaction, signal, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::stat::Mode;
use nix::sys::termios::{tcgetattr, tcsetattr, SetArg, Termios};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, pipe2, read, write, ForkResult, Pid};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub(crate) type Term = Terminal<CrosstermBackend<Stdout>>;

/// True while the terminal is ours (raw mode, alternate screen, mouse reporting).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The write end of the pipe to the guardian (-1: no guardian).
static GUARDIAN: AtomicI32 = AtomicI32::new(-1);

/// What undoes [`Session::enter`] on the wire: mouse reporting off (every mode crossterm
/// enables), main screen, cursor shown.
const RESTORE_SEQ: &[u8] =
    b"\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?1049l\x1b[?25h";

/// The terminal, taken over. Dropping it gives it back.
pub struct Session {
    pub term: Term,
}

impl Session {
    pub fn enter() -> Result<Session> {
        if !std::io::stdout().is_terminal() {
            bail!("the dashboard needs a terminal, and standard output is not one");
        }
        static HOOK: Once = Once::new();
        HOOK.call_once(|| crate::sys::exit::lifeline::on_exit(|| restore(true)));
        tell_guardian(b"e");
        ACTIVE.store(true, Ordering::SeqCst);
        let setup = (|| -> Result<Term> {
            crossterm::terminal::enable_raw_mode().context("entering raw mode")?;
            crossterm::execute!(
                std::io::stdout(),
                EnterAlternateScreen,
                EnableMouseCapture,
                crossterm::cursor::Hide
            )
            .context("setting up the terminal")?;
            Terminal::new(CrosstermBackend::new(std::io::stdout())).context("sizing the terminal")
        })();
        match setup {
            Ok(term) => Ok(Session { term }),
            Err(e) => {
                restore(false);
                Err(e)
            }
        }
    }

    /// Draws `state`, then waits for messages and hands `handle` every one waiting before
    /// drawing once more, and `after` the state after each such batch; until the channel
    /// closes, either says Break, or `handle` fails.
    pub(crate) fn run<S, M>(
        &mut self,
        state: &mut S,
        rx: &Receiver<M>,
        draw: impl Fn(&mut ratatui::Frame, &S),
        mut handle: impl FnMut(&mut S, M) -> Result<ControlFlow<()>>,
        mut after: impl FnMut(&mut S) -> ControlFlow<()>,
    ) -> Result<()> {
        loop {
            self.term.draw(|f| draw(f, state)).context("drawing")?;
            let Ok(first) = rx.recv() else { return Ok(()) };
            // Take everything that is waiting, then draw once.
            for msg in std::iter::once(first).chain(rx.try_iter()) {
                if handle(state, msg)?.is_break() {
                    return Ok(());
                }
            }
            if after(state).is_break() {
                return Ok(());
            }
        }
    }

    /// Gives the terminal back.
    pub fn leave(self) {
        drop(self);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        restore(false);
    }
}

/// Puts the terminal back, once. `for_good`: we are exiting; keep stdout locked so no other
/// thread draws over the shell between now and the exit.
pub fn restore(for_good: bool) {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let _ = crossterm::execute!(
        lock,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = lock.flush();
    let _ = crossterm::terminal::disable_raw_mode();
    tell_guardian(b"k");
    if for_good {
        std::mem::forget(lock);
    }
}

/// Tells the guardian what the terminal is in: `b'e'` before it is taken over, `b'k'` once it
/// is given back. The guardian restores it if the dashboard ended after an `e` with no `k`.
fn tell_guardian(word: &[u8]) {
    let fd = GUARDIAN.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: `fd` is the pipe's write end, stored by `guard` and never closed after.
        let _ = write(unsafe { BorrowedFd::borrow_raw(fd) }, word);
    }
}

/// The dashboard's process, seen from the guardian (0: none yet), for the forwarding handler.
static DASHBOARD: AtomicI32 = AtomicI32::new(0);

/// Splits the process in two before anything else runs (the process must still have a single
/// thread): the child returns from here and becomes the dashboard; this process, the one the
/// shell waits for, becomes its guardian and never returns. The shell can then print its
/// prompt only after the guardian has seen the dashboard end and, if it died without giving the
/// terminal back (SIGKILL), restored it. Returns without forking when standard output is no
/// terminal or the fork fails (the dashboard still works; only a SIGKILL would then leave the
/// terminal raw).
pub fn guard() {
    if !std::io::stdout().is_terminal() {
        return;
    }
    // The descriptor whose termios raw mode changes: stdin if it is a terminal, else /dev/tty
    // (what crossterm uses).
    let stdin = std::io::stdin();
    let opened;
    let tty = if stdin.is_terminal() {
        stdin.as_fd()
    } else {
        let Ok(fd) = open(c"/dev/tty", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty()) else {
            return;
        };
        opened = fd;
        opened.as_fd()
    };
    let Ok(saved) = tcgetattr(tty) else { return };
    let Ok((r, w)) = pipe2(OFlag::O_CLOEXEC) else {
        return;
    };
    let guardian = nix::unistd::getpid();
    // SAFETY: called first thing in main, while this process has one thread, so the child is a
    // whole copy of it and may do anything.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(r);
            // The guardian is gone (killed itself): end as on a hangup, giving the terminal back.
            let _ = prctl::set_pdeathsig(Signal::SIGHUP);
            if nix::unistd::getppid() != guardian {
                let _ = nix::sys::signal::raise(Signal::SIGHUP);
            }
            GUARDIAN.store(w.into_raw_fd(), Ordering::SeqCst);
        }
        Ok(ForkResult::Parent { child }) => {
            drop(w);
            stand_guard(child, r, tty, &saved)
        }
        Err(_) => {}
    }
}

/// The guardian's life: pass termination signals on, wait for the dashboard, restore the
/// terminal if it did not, and end as it ended (same exit code, or the same signal).
fn stand_guard(child: Pid, said: OwnedFd, tty: BorrowedFd, saved: &Termios) -> ! {
    // Not "schedlab…": `pkill -9 schedlab` must kill the dashboard, not what restores after it.
    let _ = prctl::set_name(c"ttyguard");
    DASHBOARD.store(child.as_raw(), Ordering::SeqCst);
    let forward = SigAction::new(
        SigHandler::Handler(forward_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for sig in [Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: forward_signal only loads an atomic and calls kill(2), both
        // async-signal-safe.
        let _ = unsafe { sigaction(sig, &forward) };
    }
    // Ctrl-C and Ctrl-\ reach the whole foreground group: the dashboard handles them.
    for sig in [Signal::SIGINT, Signal::SIGQUIT] {
        // SAFETY: SIG_IGN installs no handler.
        let _ = unsafe { signal(sig, SigHandler::SigIgn) };
    }
    let status = loop {
        match waitpid(child, None) {
            Ok(s @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..))) => break Some(s),
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => break None,
        }
    };
    if terminal_left_taken(&said) {
        // Debug builds only: a guardian slow to run must still restore before the prompt.
        if cfg!(debug_assertions) && std::env::var_os("SCHEDLAB_FAILPOINT_SLOW_TTYGUARD").is_some()
        {
            std::thread::sleep(std::time::Duration::from_millis(1500));
        }
        let _ = tcsetattr(tty, SetArg::TCSANOW, saved);
        // SAFETY: standard output stays open in this process until it exits.
        let _ = write(
            unsafe { BorrowedFd::borrow_raw(STDOUT_FILENO) },
            RESTORE_SEQ,
        );
    }
    match status {
        Some(WaitStatus::Exited(_, code)) => std::process::exit(code),
        Some(WaitStatus::Signaled(_, sig, _)) => {
            // SAFETY: SIG_DFL installs no handler of ours; the signal then ends us as it
            // ended the dashboard, so the shell reports the same ("Killed").
            let _ = unsafe { signal(sig, SigHandler::SigDfl) };
            let _ = nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_UNBLOCK,
                Some(&SigSet::from(sig)),
                None,
            );
            let _ = nix::sys::signal::raise(sig);
            std::process::exit(128 + sig as i32)
        }
        _ => std::process::exit(1),
    }
}

/// Whether the dashboard's last word was "taken" (`e`) with no "given back" (`k`) after it.
fn terminal_left_taken(said: &OwnedFd) -> bool {
    // Children of the dashboard that never exec'd may still hold the write end: never block.
    let _ = nix::fcntl::fcntl(said, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK));
    let mut last = 0u8;
    let mut buf = [0u8; 64];
    while let Ok(n @ 1..) = read(said, &mut buf) {
        last = buf[n - 1];
    }
    last == b'e'
}

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = DASHBOARD.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe; `pid` is our own child, not yet reaped.
        unsafe { libc::kill(pid, sig) };
    }
}
