//! Writing to stdout and stderr without panicking: `println!` and `eprintln!` panic when a
//! write fails, and a write fails with EPIPE once the reader of a pipe is gone
//! (`schedlab hackbench | head -0`). Use [`outln!`](crate::outln), [`out!`](crate::out) and
//! [`errln!`](crate::errln) instead.
//!
//! A closed descriptor is not such a case: Rust's runtime opens /dev/null on any of fds 0-2
//! it finds closed at start, so `2>&-` only loses the text and a later `open` never lands on
//! fd 2 (`reliability_output` checks both).
//!
//! - stderr: a failed write is dropped. There is nowhere left to report it, and losing a
//!   diagnostic is no reason to stop a benchmark or a server.
//! - stdout: the output is what the user asked for, so once it cannot be written the process
//!   ends like a shell pipeline's writer does: after its usual clean-up (workloads stopped,
//!   SysV objects removed), quietly, with status 141 (128 + SIGPIPE) when the reader went away,
//!   or with one line on stderr and status 1 for any other error (a full disk).

use std::fmt;
use std::io::{self, Write};
use std::sync::OnceLock;

use crate::sys::exit::lifeline;

/// The status of a process whose stdout reader went away, as a shell shows a SIGPIPE death.
pub(crate) const EXIT_BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

static COMMAND: OnceLock<String> = OnceLock::new();

/// Names the subcommand in the line that reports a failed stdout (`schedlab CMD: error:`).
pub fn set_command(name: &str) {
    let _ = COMMAND.set(name.to_owned());
}

/// Writes to stdout; what [`out!`](crate::out) and [`outln!`](crate::outln) expand to.
pub(crate) fn stdout_fmt(args: fmt::Arguments<'_>, newline: bool) {
    let written = {
        let mut out = io::stdout().lock();
        out.write_fmt(args).and_then(|()| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
    };
    if let Err(err) = written {
        stdout_failed(&err);
    }
}

/// Writes to stderr, dropping the text if that fails; what [`errln!`](crate::errln) expands to.
pub fn stderr_fmt(args: fmt::Arguments<'_>, newline: bool) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| {
        if newline {
            err.write_all(b"\n")
        } else {
            Ok(())
        }
    });
}

fn stdout_failed(err: &io::Error) {
    if lifeline::ending() {
        return; // already on the way out: the clean-up's own report may be lost
    }
    if err.kind() == io::ErrorKind::BrokenPipe {
        lifeline::end(EXIT_BROKEN_PIPE);
    }
    let name = COMMAND.get().map_or(String::new(), |c| format!(" {c}"));
    stderr_fmt(
        format_args!("schedlab{name}: error: cannot write to stdout: {err}"),
        true,
    );
    lifeline::end(1);
}

/// `print!` that never panics (see [`crate::sys::exit::output`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::sys::exit::output::stdout_fmt(format_args!($($arg)*), false)
    };
}

/// `println!` that never panics (see [`crate::sys::exit::output`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::__line_to!($crate::sys::exit::output::stdout_fmt; $($arg)*)
    };
}

/// `eprintln!` that never panics (see [`crate::sys::exit::output`]).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::__line_to!($crate::sys::exit::output::stderr_fmt; $($arg)*)
    };
}

/// One line through `write` (stdout_fmt or stderr_fmt), empty when no format is given: what
/// [`outln!`] and [`errln!`] share.
#[doc(hidden)]
#[macro_export]
macro_rules! __line_to {
    ($write:path;) => {
        $write(format_args!(""), true)
    };
    ($write:path; $($arg:tt)+) => {
        $write(format_args!($($arg)+), true)
    };
}
