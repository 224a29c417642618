//! A workload's stderr, kept as its last few lines: when it fails, the user sees why, not
//! only `exit N`.
//!
//! The workload writes to a pipe; a thread of ours reads it as fast as it comes (so a chatty
//! workload never blocks on a full pipe) into a small ring. Only the read end is ours, and it
//! is close-on-exec: no other child holds it, and the workload's end of the lifeline pipe is
//! untouched, so its death still follows ours however we die.

use std::collections::VecDeque;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Lines kept.
pub(crate) const LINES: usize = 20;
/// Bytes kept of one line; the rest of a longer line is dropped.
const LINE_BYTES: usize = 300;

#[derive(Default)]
struct Ring {
    lines: VecDeque<String>,
    /// A line still being written (no newline yet).
    partial: Vec<u8>,
    /// The pipe reached end of file: every writer is gone.
    ended: bool,
}

impl Ring {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
            } else if self.partial.len() < LINE_BYTES {
                self.partial.push(b);
            }
        }
    }

    fn end_line(&mut self) {
        let line = String::from_utf8_lossy(&self.partial)
            .trim_end()
            .to_string();
        self.partial.clear();
        if self.lines.len() == LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }
}

/// The last lines a workload wrote to its stderr. Cheap to clone (shared).
#[derive(Clone, Default)]
pub struct StderrTail(Arc<(Mutex<Ring>, Condvar)>);

impl StderrTail {
    /// Starts the thread that reads `read_end` until end of file.
    pub fn start(read_end: OwnedFd, name: &str) -> std::io::Result<Self> {
        let tail = Self::default();
        let ring = tail.clone();
        std::thread::Builder::new()
            .name(format!("stderr-{name}"))
            .stack_size(64 * 1024)
            .spawn(move || ring.read_all(std::fs::File::from(read_end)))?;
        Ok(tail)
    }

    fn read_all(&self, mut pipe: std::fs::File) {
        let mut buf = [0u8; 4096];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            self.ring().push(&buf[..n]);
        }
        let mut ring = self.ring();
        if !ring.partial.is_empty() {
            ring.end_line();
        }
        ring.ended = true;
        self.0 .1.notify_all();
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits up to `within` for the pipe's end (the workload and everything it started are
    /// gone), so that its last lines are in.
    pub fn settle(&self, within: Duration) {
        let deadline = Instant::now() + within;
        let mut ring = self.ring();
        while !ring.ended {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            ring = self
                .0
                 .1
                .wait_timeout(ring, left)
                .map_or_else(|e| e.into_inner().0, |r| r.0);
        }
    }

    /// The last `n` lines, oldest first, without blank ones.
    pub fn last(&self, n: usize) -> Vec<String> {
        let ring = self.ring();
        let lines: Vec<String> = ring
            .lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .cloned()
            .collect();
        lines[lines.len().saturating_sub(n)..].to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn keeps_the_last_lines_cut_to_length_until_the_end() {
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let tail = StderrTail::start(r, "test").unwrap();
        let mut w = std::fs::File::from(w);
        for i in 0..30 {
            writeln!(w, "line {i}").unwrap();
        }
        write!(w, "{}", "x".repeat(1000)).unwrap();
        drop(w);
        tail.settle(Duration::from_secs(10));
        let lines = tail.last(LINES);
        assert_eq!(lines.len(), LINES);
        assert_eq!(lines[0], "line 11");
        assert_eq!(lines[LINES - 2], "line 29");
        assert_eq!(lines[LINES - 1], "x".repeat(LINE_BYTES));
        assert_eq!(tail.last(2)[0], "line 29");
    }
}
