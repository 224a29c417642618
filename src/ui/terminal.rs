//! Taking the terminal over and giving it back, on every exit path.
//!
//! - `q`, Ctrl-C, an error: [`Session::leave`] (or its Drop).
//! - SIGTERM, SIGHUP, SIGINT, a panic: the lifeline hook registered by [`Session::enter`].
//! - SIGKILL, which no process can catch: a guardian. Before taking the terminal over, the
//!   dashboard forks a tiny process that only waits on a pipe. When the dashboard exits
//!   cleanly it says so on the pipe; when the pipe closes without a word, the dashboard died,
//!   and the guardian puts the terminal back (termios, main screen, no mouse reporting,
//!   cursor) before the shell prints its prompt.

use std::io::{IsTerminal, Stdout, Write};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;

use anyhow::{bail, Context, Result};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use libc::STDOUT_FILENO;
use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::sys::prctl;
use nix::sys::signal::{signal, SigHandler, Signal};
use nix::sys::stat::Mode;
use nix::sys::termios::{tcgetattr, tcsetattr, SetArg};
use nix::sys::wait::waitpid;
use nix::unistd::{fork, pipe2, read, write, ForkResult};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// True while the terminal is ours (raw mode, alternate screen, mouse reporting).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The write end of the guardian's pipe (-1: none), so every exit path can dismiss it.
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
        HOOK.call_once(|| crate::sys::lifeline::on_exit(|| restore(true)));
        if let Some(fd) = spawn_guardian() {
            GUARDIAN.store(fd, Ordering::SeqCst);
        }
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

    /// Gives the terminal back and dismisses the guardian.
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
    dismiss();
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
    if for_good {
        std::mem::forget(lock);
    }
}

/// Tells the guardian we restore the terminal ourselves, so it leaves it alone.
fn dismiss() {
    let fd = GUARDIAN.swap(-1, Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: `fd` is the guardian pipe's write end, which GUARDIAN alone held; the swap
        // took it out, so this OwnedFd is its only owner and closes it once.
        let pipe = unsafe { OwnedFd::from_raw_fd(fd) };
        let _ = write(&pipe, b"k");
    }
}

/// Forks the guardian; returns the write end of its pipe. None if it could not be made (the
/// dashboard still works; only a SIGKILL would then leave the terminal raw).
fn spawn_guardian() -> Option<RawFd> {
    // The descriptor whose termios raw mode changes: stdin if it is a terminal, else /dev/tty
    // (what crossterm uses).
    let stdin = std::io::stdin();
    let opened;
    let tty = if stdin.is_terminal() {
        stdin.as_fd()
    } else {
        opened = open(c"/dev/tty", OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty()).ok()?;
        opened.as_fd()
    };
    let saved = tcgetattr(tty).ok()?;
    let (r, w) = pipe2(OFlag::O_CLOEXEC).ok()?;
    // SAFETY: everything the child uses is made before the fork, and between fork and _exit it
    // only makes async-signal-safe calls, as a child of a multi-threaded process must.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            // Not our parent's signal handlers: they write to its signal thread's pipe.
            for sig in [
                Signal::SIGINT,
                Signal::SIGTERM,
                Signal::SIGHUP,
                Signal::SIGQUIT,
            ] {
                // SAFETY: SIG_DFL installs no handler of ours.
                let _ = unsafe { signal(sig, SigHandler::SigDfl) };
            }
            let _ = prctl::set_name(c"schedlab-ttyfix");
            drop(w);
            let mut byte = [0u8];
            let n = loop {
                match read(&r, &mut byte) {
                    Err(Errno::EINTR) => continue,
                    other => break other,
                }
            };
            if !matches!(n, Ok(1)) {
                // The dashboard died without a word: put the terminal back.
                let _ = tcsetattr(tty, SetArg::TCSANOW, &saved);
                // SAFETY: standard output stays open in this process until it exits.
                let _ = write(
                    unsafe { BorrowedFd::borrow_raw(STDOUT_FILENO) },
                    RESTORE_SEQ,
                );
            }
            // SAFETY: _exit ends the guardian without running the parent's exit handlers.
            unsafe { libc::_exit(0) }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(r);
            // Reap it whenever it ends, so it never lingers as a zombie.
            std::thread::Builder::new()
                .name("schedlab-ttyfix-reaper".into())
                .stack_size(32 * 1024)
                .spawn(move || {
                    let _ = waitpid(child, None);
                })
                .ok();
            Some(w.into_raw_fd())
        }
        Err(_) => None,
    }
}
