//! hackbench's thread mode (`-T`): senders and receivers as threads of this process, each
//! failure waking every other thread so that a run with a broken descriptor ends, with the
//! test-only fault that proves it.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{close, fdpair, receiver, sender, Failure, Fds, Gate, Shape, Tally};

/// TEST-ONLY fault injection: `SCHEDLAB_INJECT_HACKBENCH_FAULT=<ms>` makes the first
/// receiver of a thread-mode run lose its peer `<ms>` milliseconds after the start (its
/// socket shut down, or its pipe's write end replaced by a dead one), as a failing
/// descriptor would. `tests/hackbench.rs` uses it to prove the run then ends instead of hanging.
pub const ENV_INJECT_FAULT: &str = "SCHEDLAB_INJECT_HACKBENCH_FAULT";

/// A thread's end: its index in the run, and how it ended.
type Ended = (usize, std::result::Result<(), Failure>);

pub(super) fn run(shape: Shape, slots: &mut Vec<Tally>) -> Result<Duration> {
    let gate = Gate::new(shape.pipe)?;
    let mut fds = Fds(Vec::with_capacity(shape.groups * shape.fds * 2));
    let packets = shape.fds * shape.loops;
    // A slot has one writer: each receiver thread takes its own and hands it back at the end.
    let mut free = std::mem::take(slots).into_iter();
    let mut handles = Vec::with_capacity(shape.tasks());
    let mut labels = Vec::with_capacity(shape.tasks());
    // Each thread says when it ends, so that the first failure is seen while others block.
    let (ended_tx, ended_rx) = std::sync::mpsc::channel::<Ended>();
    let spawn = |name: String, f: Box<dyn FnOnce() -> Option<Tally> + Send>| {
        std::thread::Builder::new()
            .name(name)
            .stack_size(128 * 1024)
            .spawn(f)
            .context("creating a thread")
    };
    let mut setup = || -> Result<()> {
        for group in 0..shape.groups {
            let first = fds.0.len();
            for i in 0..shape.fds {
                let (r, w) = fdpair(shape.pipe)?;
                fds.0.extend([r, w]);
                let slot = free.next().expect("one slot per receiver");
                let (ready_w, wake_r, datasize) = (gate.ready_w, gate.wake_r, shape.datasize);
                let (index, ended) = (handles.len(), ended_tx.clone());
                handles.push(spawn(
                    format!("hb-recv-{group}-{i}"),
                    Box::new(move || {
                        let mut buf = vec![0u8; datasize];
                        let end = receiver(r, packets, &mut buf, &slot, ready_w, wake_r);
                        let _ = ended.send((index, end));
                        Some(slot)
                    }),
                )?);
                labels.push(format!("receiver {i} of group {group}"));
            }
            let out: Vec<RawFd> = fds.0[first..].iter().skip(1).step_by(2).copied().collect();
            for i in 0..shape.fds {
                let out = out.clone();
                let (ready_w, wake_r) = (gate.ready_w, gate.wake_r);
                let (loops, datasize) = (shape.loops, shape.datasize);
                let (index, ended) = (handles.len(), ended_tx.clone());
                handles.push(spawn(
                    format!("hb-send-{group}-{i}"),
                    Box::new(move || {
                        let mut data = vec![0u8; datasize];
                        let stamped = shape.stamped();
                        let end = sender(&out, loops, &mut data, stamped, ready_w, wake_r);
                        let _ = ended.send((index, end));
                        None
                    }),
                )?);
                labels.push(format!("sender {i} of group {group}"));
            }
        }
        Ok(())
    };
    let outcome = setup();
    drop(ended_tx);
    if outcome.is_err() {
        wake_everyone(&fds.0, shape.pipe);
    }
    let tasks = handles.len();
    let start = match &outcome {
        Ok(()) => gate.release(tasks),
        Err(_) => {
            // Raw, as the run's other descriptors: the gate's ends are plain fds its tasks share.
            // SAFETY: the one-byte array lives until the end of the statement; write only reads it.
            unsafe { libc::write(gate.wake_w, [0u8].as_ptr().cast(), 1) };
            Ok(Instant::now())
        }
    };
    let fault = (outcome.is_ok() && start.is_ok())
        .then(|| inject_fault(&fds.0, shape.pipe))
        .flatten();
    let first_failure = first_failure(&ended_rx, &fds.0, shape.pipe);
    let measured = start.map(|t| t.elapsed());
    if let Some((cancel, thread)) = fault {
        drop(cancel);
        let _ = thread.join();
    }
    let panicked = join_all(handles, slots);
    outcome?;
    let elapsed = measured?;
    if let Some((index, failure)) = first_failure {
        bail!(
            "{} (one of {tasks} threads): {}; every thread was stopped",
            labels[index],
            failure.describe()
        );
    }
    if panicked > 0 {
        bail!("{panicked} of {tasks} threads panicked");
    }
    Ok(elapsed)
}

/// Waits until every thread has said it ended. The first failure wakes every other thread (a
/// sender blocked on a full socket whose receiver is gone would wait forever); their own
/// failures are its consequences.
fn first_failure(
    ended: &std::sync::mpsc::Receiver<Ended>,
    fds: &[RawFd],
    pipe: bool,
) -> Option<(usize, Failure)> {
    let mut first = None;
    for (index, end) in ended.iter() {
        if let (Err(failure), None) = (end, &first) {
            first = Some((index, failure));
            wake_everyone(fds, pipe);
        }
    }
    first
}

/// Joins the run's threads, taking back the receivers' slots; how many panicked.
fn join_all(handles: Vec<std::thread::JoinHandle<Option<Tally>>>, slots: &mut Vec<Tally>) -> usize {
    let mut panicked = 0;
    for h in handles {
        match h.join() {
            Ok(slot) => slots.extend(slot),
            Err(_) => panicked += 1,
        }
    }
    panicked
}

/// Makes every thread of a run blocked on its descriptors return, and fail at its next call:
/// sockets are shut down (reads see end of file, writes EPIPE); pipe ends are replaced by
/// ends of dead pipes (a read end without a writer, a write end without a reader), which
/// frees the run's pipes (a reader blocked on an empty one sees end of file, a writer blocked
/// on a full one EPIPE) and keeps the descriptor numbers taken, so that no late call lands on
/// a file opened since. `fds` holds (read end, write end) pairs.
fn wake_everyone(fds: &[RawFd], pipe: bool) {
    if !pipe {
        for &fd in fds {
            let _ = nix::sys::socket::shutdown(fd, nix::sys::socket::Shutdown::Both);
        }
        return;
    }
    let dead = DeadEnds::new();
    for (k, &fd) in fds.iter().enumerate() {
        dead.replace(fd, k % 2 == 1);
    }
}

/// Pipe ends that fail at once: a read end whose pipe has no writer (end of file), a write
/// end whose pipe has no reader (EPIPE).
struct DeadEnds(Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>);

impl DeadEnds {
    fn new() -> Self {
        let open = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok();
        // Keep one end of each pipe; dropping the other leaves it without a peer.
        Self(
            open()
                .zip(open())
                .map(|((read_end, _), (_, write_end))| (read_end, write_end)),
        )
    }

    /// Replaces pipe end `fd` (a write end if `write`) by the dead end of its kind.
    fn replace(&self, fd: RawFd, write: bool) {
        use std::os::fd::AsRawFd;
        let Some((read_end, write_end)) = &self.0 else {
            close(fd); // out of descriptors: closing still frees the pipe
            return;
        };
        let dead = if write { write_end } else { read_end };
        // Raw: nix's dup3 wants the target as an OwnedFd, and this one stays its Fds' to close.
        // SAFETY: `fd` is one of the run's descriptors, owned by its Fds, which closes it at
        // the end as before; it now refers to the dead end instead.
        unsafe { libc::dup3(dead.as_raw_fd(), fd, libc::O_CLOEXEC) };
    }
}

/// Arms [`ENV_INJECT_FAULT`]: a thread that waits, then breaks the first receiver's
/// descriptor, unless the sender it returns is dropped first (the run ended).
fn inject_fault(
    fds: &[RawFd],
    pipe: bool,
) -> Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)> {
    let ms: u64 = std::env::var(ENV_INJECT_FAULT).ok()?.parse().ok()?;
    let (read_end, write_end) = (*fds.first()?, *fds.get(1)?);
    let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        if cancelled.recv_timeout(Duration::from_millis(ms))
            != Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        {
            return;
        }
        if pipe {
            DeadEnds::new().replace(write_end, true);
        } else {
            let _ = nix::sys::socket::shutdown(read_end, nix::sys::socket::Shutdown::Both);
        }
    });
    Some((cancel, thread))
}
