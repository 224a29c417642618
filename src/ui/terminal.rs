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
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;

use anyhow::{bail, Context, Result};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
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
        // SAFETY: `fd` is the guardian pipe's write end, taken out of GUARDIAN by the swap so it is
        // written and closed exactly once; the one-byte literal is 'static.
        unsafe {
            libc::write(fd, b"k".as_ptr().cast(), 1);
            libc::close(fd);
        }
    }
}

/// The descriptor whose termios raw mode changes: stdin if it is a terminal, else /dev/tty
/// (what crossterm uses).
fn tty_fd() -> Option<RawFd> {
    if std::io::stdin().is_terminal() {
        return Some(libc::STDIN_FILENO);
    }
    // SAFETY: the path is a NUL-terminated C string literal; open only reads it.
    let fd = unsafe { libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    (fd >= 0).then_some(fd)
}

/// Forks the guardian; returns the write end of its pipe. None if it could not be made (the
/// dashboard still works; only a SIGKILL would then leave the terminal raw).
fn spawn_guardian() -> Option<RawFd> {
    let tty = tty_fd()?;
    // SAFETY: libc::termios is plain old data: all-zero bytes are a valid value.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `saved` is a live, writable termios for tcgetattr to fill.
    if unsafe { libc::tcgetattr(tty, &mut saved) } < 0 {
        return None;
    }
    let mut fds = [0; 2];
    // SAFETY: `fds` is a live array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return None;
    }
    let (r, w) = (fds[0], fds[1]);
    let out = libc::STDOUT_FILENO;
    // SAFETY: everything the child uses is made before the fork, and between fork and _exit it only
    // makes async-signal-safe calls, as a child of a multi-threaded process must.
    match unsafe { libc::fork() } {
        // SAFETY: in the guardian child: signal gets SIG_DFL, prctl and tcsetattr read
        // NUL-terminated literals and the live `saved`, read fills the live `byte`, write reads the
        // 'static RESTORE_SEQ; all async-signal-safe, and _exit ends it.
        0 => unsafe {
            // Not our parent's signal handlers: they write to its signal thread's pipe.
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            libc::prctl(libc::PR_SET_NAME, c"schedlab-ttyfix".as_ptr());
            libc::close(w);
            let mut byte = 0u8;
            let n = loop {
                let n = libc::read(r, (&mut byte as *mut u8).cast(), 1);
                if n < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break n;
            };
            if n <= 0 {
                // The dashboard died without a word: put the terminal back.
                libc::tcsetattr(tty, libc::TCSANOW, &saved);
                libc::write(out, RESTORE_SEQ.as_ptr().cast(), RESTORE_SEQ.len());
            }
            libc::_exit(0)
        },
        pid if pid > 0 => {
            // SAFETY: `r` is the pipe's read end, which the parent no longer needs; closed once.
            unsafe { libc::close(r) };
            // Reap it whenever it ends, so it never lingers as a zombie.
            std::thread::Builder::new()
                .name("schedlab-ttyfix-reaper".into())
                .stack_size(32 * 1024)
                // SAFETY: `pid` is the guardian this process forked; a null status pointer is
                // allowed.
                .spawn(move || unsafe {
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                })
                .ok();
            Some(w)
        }
        _ => {
            // SAFETY: fork failed: both pipe ends are ours and closed once here.
            unsafe {
                libc::close(r);
                libc::close(w);
            }
            None
        }
    }
}
