//! hackbench: groups of senders and receivers over socketpairs or pipes (Rusty Russell, 2002).
//!
//! Each group has `fds` receivers (20), each owning one socketpair (AF_UNIX, SOCK_STREAM) or
//! pipe, and `fds` senders, each writing `loops` messages of `datasize` bytes to every
//! receiver of its group. Every task reports ready on a pipe and blocks until the parent
//! writes one byte to a wake pipe; the clock runs from just before that byte until the last
//! task is reaped (process mode, the default: real forked processes) or joined (threads).
//! Each receiver counts the messages it received in its own counter slot. Each sender stamps
//! one message in [`TIME_EVERY`] with its send time (inside the data, when it holds
//! [`stamp::STAMP_LEN`] bytes), and the receiver records how long the message took from the
//! write to its read.
//!
//! System calls on descriptors and children are raw libc, as the original's: they run in the
//! forked tasks (where nothing but prepared memory and system calls is safe) and in the timed
//! loop that docs/performance.md holds against the C hackbench.

use std::ffi::{CString, OsString};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::resource::{getrlimit, setrlimit, Resource};

use crate::model::latency::Distribution;
use crate::sys::kernel::guard::Demand;
use crate::sys::kernel::raw_io;
use crate::sys::shared::counters::{
    self, now_ns, CounterRegion, CounterSlot, Histogram, LatencyTotals, Sampler,
};
use crate::sys::shared::histogram::Unit;
use crate::workload::fork_load::check_executable;
use crate::workload::registry::params::refused;
use crate::workload::registry::params::HACKBENCH;
use crate::workload::{children, stamp};

mod threads;

pub use threads::ENV_INJECT_FAULT;

/// Messages timed: one in this many per sender. A write of 100 bytes costs about 1.1 µs of CPU
/// here and a clock reading 22 ns, so stamping each would cost 2%; one in 32 costs the sender
/// 0.7 ns a message and the receiver a 24-byte check and 0.7 ns (docs/latency.md).
pub(crate) const TIME_EVERY: u32 = 32;

/// A receiver's counter and message-latency histogram (None: not timed).
struct Tally {
    count: CounterSlot,
    latency: Option<Histogram>,
}

/// Arguments of `schedlab hackbench`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Number of groups, the original hackbench's positional argument (overrides -g).
    #[arg(value_name = "GROUPS")]
    pub groups_arg: Option<u32>,
    #[arg(short = 'g', long, default_value_t = HACKBENCH.param("groups").default_count(),
          help = HACKBENCH.param("groups").cli_help())]
    pub groups: u32,
    #[arg(short = 'l', long, default_value_t = HACKBENCH.param("loops").default_count(),
          help = HACKBENCH.param("loops").cli_help())]
    pub loops: u32,
    #[arg(short = 's', long, default_value_t = HACKBENCH.param("datasize").default_count(),
          help = HACKBENCH.param("datasize").cli_help() + "; at most one pipe buffer of this machine")]
    pub datasize: u32,
    #[arg(short = 'f', long, default_value_t = HACKBENCH.param("fds").default_count(),
          help = HACKBENCH.param("fds").cli_help())]
    pub fds: u32,
    /// Use pipes instead of socketpairs (the original's `-pipe`).
    #[arg(short = 'p', long)]
    pub pipe: bool,
    /// Senders and receivers are threads of this process.
    #[arg(short = 'T', long, conflicts_with = "process")]
    pub threads: bool,
    /// Senders and receivers are forked processes (the default).
    #[arg(short = 'P', long)]
    pub process: bool,
    #[arg(long, default_value_t = HACKBENCH.param("runs").default_count().into(),
          allow_negative_numbers = true, help = HACKBENCH.param("runs").cli_help())]
    pub runs: i64,
    /// Also print the messages received in each run.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Start even when the size guard finds it too big for this machine.
    #[arg(long)]
    pub force: bool,
}

/// One run's shape, checked.
#[derive(Clone, Copy, Debug)]
struct Shape {
    groups: usize,
    fds: usize,
    loops: usize,
    datasize: usize,
    pipe: bool,
    threads: bool,
    /// Runs to do; 0 = repeat until stopped.
    runs: u32,
}

impl Shape {
    fn tasks(&self) -> usize {
        self.groups * self.fds * 2
    }
    fn messages(&self) -> u64 {
        (self.groups * self.fds * self.fds * self.loops) as u64
    }
    /// Whether senders stamp their data: recording is on and the data holds a stamp.
    fn stamped(&self) -> bool {
        counters::latency_enabled() && self.datasize >= stamp::STAMP_LEN
    }
}

/// What a run of `groups` groups of `fds` senders and as many receivers asks of the machine.
pub fn demand(groups: u32, fds: u32, threads: bool) -> Demand {
    Demand::tasks(u64::from(groups) * u64::from(fds) * 2, threads)
}

pub fn main(args: Args) -> Result<()> {
    let shape = check(&args)?;
    // What the run asks of the machine, as the registry declares it for a scenario too.
    let demand = demand(shape.groups as u32, shape.fds as u32, shape.threads);
    crate::sys::kernel::guard::check("hackbench", demand, args.force)?;
    crate::outln!(
        "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)",
        if shape.threads { "threaded" } else { "process" },
        shape.groups,
        shape.fds * 2,
        shape.tasks()
    );
    crate::outln!(
        "Each sender will pass {} messages of {} bytes",
        shape.loops,
        shape.datasize
    );
    // Threads keep every descriptor open at once; processes one group's at a time.
    let groups_open = if shape.threads { shape.groups } else { 1 };
    raise_fd_limit(groups_open * shape.fds * 2 + 16)?;
    let region = CounterRegion::for_workload()?;
    // Data too short for a stamp is sent as it is, and nothing is timed.
    let timed = shape.stamped();
    let mut slots = (0..shape.groups * shape.fds)
        .map(|_| {
            let latency = timed
                .then(|| region.claim_histogram(Unit::Message))
                .flatten();
            region.claim().map(|count| Tally { count, latency })
        })
        .collect::<Result<Vec<_>>>()?;
    let runs = shape.runs;
    if runs > 0 {
        region.set_expected_total(shape.messages() * runs as u64);
    }
    let lean = if shape.threads {
        None
    } else {
        lean_hackbench(shape)
    };
    let mut run = 0u32;
    while runs == 0 || run < runs {
        let before = region.total();
        let latency_before = region.read_latency();
        let elapsed = if shape.threads {
            threads::run(shape, &mut slots)?
        } else {
            match &lean {
                Some(path) => run_lean(path, shape, &slots, &region)?,
                None => run_processes(shape, &slots)?,
            }
        };
        crate::outln!("Time: {}.{:03}", elapsed.as_secs(), elapsed.subsec_millis());
        if args.verbose {
            crate::outln!(
                "Messages received: {} (expected {})",
                region.total() - before,
                shape.messages()
            );
            report_latency(&latency_before, &region.read_latency());
        }
        run += 1;
    }
    region.mark_finished();
    Ok(())
}

/// With -v: the run's message latencies (write to read), when they were timed.
fn report_latency(before: &[LatencyTotals], after: &[LatencyTotals]) {
    let (Some(a), b) = (after.first(), before.first()) else {
        return;
    };
    let d = Distribution::between(b.cloned().map(Into::into).as_ref(), &a.clone().into());
    if let Some(text) = d.percentiles_text() {
        crate::outln!(
            "Message latency (write to read): {text} ({} messages timed, one in {TIME_EVERY} per sender)",
            d.count()
        );
    } else if !d.available() {
        crate::outln!("Message latency: unavailable (the stamps did not survive the trip)");
    }
}

fn check(args: &Args) -> Result<Shape> {
    let groups = args.groups_arg.unwrap_or(args.groups);
    // The registry's limits first, with the message a scenario or the picker gives.
    for (key, value) in [
        ("groups", groups),
        ("loops", args.loops),
        ("datasize", args.datasize),
        ("fds", args.fds),
    ] {
        HACKBENCH
            .param(key)
            .check_count(i64::from(value))
            .map_err(refused)?;
    }
    let runs = HACKBENCH
        .param("runs")
        .check_count(args.runs)
        .map_err(refused)?;
    let pipe_buffer = pipe_buffer_size()?;
    if args.datasize == 0 || args.datasize as usize > pipe_buffer {
        return Err(refused(format!(
            "datasize must be 1..={pipe_buffer} bytes (one pipe buffer), not {}",
            args.datasize
        )));
    }
    Ok(Shape {
        groups: groups as usize,
        fds: args.fds as usize,
        loops: args.loops as usize,
        datasize: args.datasize as usize,
        pipe: args.pipe,
        threads: args.threads,
        runs,
    })
}

fn pipe_buffer_size() -> Result<usize> {
    let (r, w) = fdpair(true)?;
    // SAFETY: fcntl(F_GETPIPE_SZ) takes no pointer; `r` is the pipe just made.
    let size = unsafe { libc::fcntl(r, libc::F_GETPIPE_SZ) };
    close(r);
    close(w);
    if size <= 0 {
        return Ok(65536);
    }
    Ok(size as usize)
}

/// Makes room for the descriptors a run holds open at once.
fn raise_fd_limit(needed: usize) -> Result<()> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap_or((0, 0));
    if soft as usize >= needed {
        return Ok(());
    }
    if (hard as usize) < needed {
        bail!("this run needs {needed} open files, the limit is {hard} (ulimit -n)");
    }
    setrlimit(Resource::RLIMIT_NOFILE, needed as u64, hard)
        .map_err(std::io::Error::from)
        .context("raising the open files limit")
}

/// (read end, write end) of a pipe or a socketpair, like the original's fdpair().
fn fdpair(pipe: bool) -> Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    let rc = if pipe {
        // SAFETY: `fds` is a live array of two ints for pipe2 to fill.
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }
    } else {
        // SAFETY: `fds` is a live array of two ints for socketpair to fill.
        unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        }
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context(if pipe {
            "creating a pipe"
        } else {
            "creating a socketpair"
        });
    }
    Ok((fds[0], fds[1]))
}

fn close(fd: RawFd) {
    // SAFETY: close takes no pointer; callers pass descriptors this module made (fdpair) and close
    // each once (Fds marks closed ones -1).
    unsafe { libc::close(fd) };
}

/// Descriptors of one run, closed when dropped.
struct Fds(Vec<RawFd>);

impl Drop for Fds {
    fn drop(&mut self) {
        for &fd in self.0.iter().filter(|&&fd| fd >= 0) {
            close(fd);
        }
    }
}

/// The ready and wake pipes shared by every task of a run.
struct Gate {
    ready_r: RawFd,
    ready_w: RawFd,
    wake_r: RawFd,
    wake_w: RawFd,
}

impl Gate {
    fn new(pipe: bool) -> Result<Self> {
        let (ready_r, ready_w) = fdpair(pipe)?;
        let (wake_r, wake_w) = fdpair(pipe).inspect_err(|_| {
            close(ready_r);
            close(ready_w);
        })?;
        Ok(Self {
            ready_r,
            ready_w,
            wake_r,
            wake_w,
        })
    }

    /// Waits for `tasks` ready bytes, then releases everyone; returns the start time.
    fn release(&self, tasks: usize) -> Result<Instant> {
        let mut byte = 0u8;
        for _ in 0..tasks {
            if read_full(self.ready_r, std::slice::from_mut(&mut byte)) != Ok(true) {
                bail!("a task died before it was ready");
            }
        }
        let start = Instant::now();
        // SAFETY: the one-byte array lives until the end of the statement; write only reads it.
        if unsafe { libc::write(self.wake_w, [0u8].as_ptr().cast(), 1) } != 1 {
            return Err(std::io::Error::last_os_error()).context("releasing the tasks");
        }
        Ok(start)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        for fd in [self.ready_r, self.ready_w, self.wake_r, self.wake_w] {
            close(fd);
        }
    }
}

/// Tells the parent this task is ready, then blocks until the wake byte arrives.
fn ready(ready_w: RawFd, wake_r: RawFd) -> bool {
    // SAFETY: the one-byte array lives until the end of the statement; write only reads it.
    if unsafe { libc::write(ready_w, [0u8].as_ptr().cast(), 1) } != 1 {
        return false;
    }
    let mut pfd = libc::pollfd {
        fd: wake_r,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `pfd` is one live, writable pollfd and nfds is 1.
        let rc = unsafe { libc::poll(&mut pfd, 1, -1) };
        if rc == 1 {
            return true;
        }
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return false;
    }
}

// The message loop calls read(2) and write(2) raw (sys::kernel::raw_io says why).
/// Reads exactly `buf.len()` bytes: Ok(true), or Ok(false) on end of file.
#[inline]
fn read_full(fd: RawFd, buf: &mut [u8]) -> std::result::Result<bool, i32> {
    let mut done = 0;
    while done < buf.len() {
        let n = raw_io::read(fd, &mut buf[done..]);
        if n > 0 {
            done += n as usize;
        } else if n == 0 {
            return Ok(false);
        } else {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if errno != libc::EINTR {
                return Err(errno);
            }
        }
    }
    Ok(true)
}

/// Writes all of `buf`, as the original's sender does after a short write.
#[inline]
fn write_full(fd: RawFd, buf: &[u8]) -> bool {
    let mut done = 0;
    while done < buf.len() {
        let n = raw_io::write(fd, &buf[done..]);
        if n > 0 {
            done += n as usize;
        } else if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return false;
        }
    }
    true
}

/// How a sender or receiver failed: a fixed line a forked task can write without allocating,
/// and the errno (0: end of file, its peer gone).
#[derive(Clone, Copy, Debug)]
struct Failure {
    line: &'static str,
    errno: i32,
}

impl Failure {
    fn last_os_error(line: &'static str) -> Self {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        Self { line, errno }
    }

    /// The exit code of a forked task, after its line on stderr.
    fn exit(self) -> i32 {
        children::child_fail(self.line.as_bytes(), 1)
    }

    /// `what failed (why)`, for the run's one line.
    fn describe(self) -> String {
        let what = self
            .line
            .trim_end()
            .trim_start_matches("hackbench: ")
            .split_once(": ")
            .map_or(self.line, |(_, what)| what);
        let why = match self.errno {
            0 => "end of file: its peer went away".to_string(),
            e => std::io::Error::from_raw_os_error(e).to_string(),
        };
        format!("{what} ({why})")
    }
}

/// A sender: `loops` times, one message down every descriptor of its group; when `stamped`,
/// one message in [`TIME_EVERY`] carries its send time.
fn sender(
    out: &[RawFd],
    loops: usize,
    data: &mut [u8],
    stamped: bool,
    ready_w: RawFd,
    wake_r: RawFd,
) -> std::result::Result<(), Failure> {
    if stamped {
        // Its first write to the data (inherited, copied on write) is a page fault: before
        // the start, not inside the timed run.
        stamp::prepare(data);
    }
    if !ready(ready_w, wake_r) {
        return Err(Failure::last_os_error("hackbench: sender: ready failed\n"));
    }
    let sent = if stamped {
        send_stamped(out, loops, data)
    } else {
        send(out, loops, data)
    };
    if !sent {
        return Err(Failure::last_os_error("hackbench: sender: write failed\n"));
    }
    Ok(())
}

/// The original's loop, and what stamping is measured against.
#[inline(always)]
fn send(out: &[RawFd], loops: usize, data: &[u8]) -> bool {
    for _ in 0..loops {
        for &fd in out {
            if !write_full(fd, data) {
                return false;
            }
        }
    }
    true
}

#[inline(always)]
fn send_stamped(out: &[RawFd], loops: usize, data: &mut [u8]) -> bool {
    let mut sampler = Sampler::new(TIME_EVERY);
    for _ in 0..loops {
        for &fd in out {
            if sampler.due() {
                stamp::stamp(data, now_ns());
                let ok = write_full(fd, data);
                stamp::clear(data);
                if !ok {
                    return false;
                }
            } else if !write_full(fd, data) {
                return false;
            }
        }
    }
    true
}

/// A receiver: reads `packets` messages from its descriptor, counting each one and taking
/// the stamped ones' ages into its histogram.
fn receiver(
    fd: RawFd,
    packets: usize,
    buf: &mut [u8],
    tally: &Tally,
    ready_w: RawFd,
    wake_r: RawFd,
) -> std::result::Result<(), Failure> {
    // Its pages of the shared counters, faulted in before the start rather than inside the
    // timed run (the original has no counters to fault).
    tally.count.prefault();
    if let Some(h) = &tally.latency {
        h.prefault();
    }
    if !ready(ready_w, wake_r) {
        return Err(Failure::last_os_error(
            "hackbench: receiver: ready failed\n",
        ));
    }
    for _ in 0..packets {
        match read_full(fd, buf) {
            Ok(true) => {}
            Ok(false) => {
                return Err(Failure {
                    line: "hackbench: receiver: read failed\n",
                    errno: 0,
                })
            }
            Err(errno) => {
                return Err(Failure {
                    line: "hackbench: receiver: read failed\n",
                    errno,
                })
            }
        }
        tally.count.add(1);
        if let Some(h) = &tally.latency {
            stamp::take(buf, h);
        }
    }
    Ok(())
}

/// Most receivers the lean hackbench takes on its command line (two offsets each: about
/// 200 kB of arguments at most).
const LEAN_MAX_RECEIVERS: usize = 16_384;

/// The lean hackbench, built with this binary (src/bin/schedlab-hackbench.rs), when it is
/// there and takes this run; otherwise the tasks are forks of this process, and it says so.
fn lean_hackbench(shape: Shape) -> Option<PathBuf> {
    let path = std::env::current_exe()
        .ok()?
        .with_file_name("schedlab-hackbench");
    if shape.groups * shape.fds > LEAN_MAX_RECEIVERS {
        return None;
    }
    if check_executable(&path).is_err() {
        crate::errln!(
            "hackbench: no schedlab-hackbench beside schedlab (`cargo build --release` builds it); \
             the tasks are forks of schedlab itself, whose bigger address space takes longer to \
             tear down at each task's exit, inside the timed run"
        );
        return None;
    }
    Some(path)
}

/// One process-mode run by the lean hackbench, exec'd once: it forks the tasks, releases
/// them and times them (its tasks are forks of a small program, as the original's were).
fn run_lean(
    path: &Path,
    shape: Shape,
    slots: &[Tally],
    region: &CounterRegion,
) -> Result<Duration> {
    let _kill = children::KillOnDrop;
    let (r, w) = fdpair(true)?;
    // SAFETY: both descriptors were just made by fdpair, and nothing else owns them.
    let (mut result_r, result_w) =
        unsafe { (std::fs::File::from_raw_fd(r), OwnedFd::from_raw_fd(w)) };
    let every = if shape.stamped() { TIME_EVERY } else { 0 };
    let mut args: Vec<Vec<u8>> = vec![path.as_os_str().as_bytes().to_vec()];
    args.extend(
        [
            shape.groups,
            shape.fds,
            shape.loops,
            shape.datasize,
            usize::from(shape.pipe),
            every as usize,
            w as usize,
            region.raw_fd() as usize,
        ]
        .iter()
        .map(|n| n.to_string().into_bytes()),
    );
    for slot in slots {
        args.push(slot.count.offset().to_string().into_bytes());
        // 0: not timed (the region's header is never a histogram).
        let hist = slot.latency.as_ref().map_or(0, Histogram::offset);
        args.push(hist.to_string().into_bytes());
    }
    let args = args
        .into_iter()
        .map(|a| CString::new(a).context("a path with a NUL byte"))
        .collect::<Result<Vec<_>>>()?;
    let argv: Vec<*const libc::c_char> = args
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let shared = [w, region.raw_fd()];
    let forked = children::fork(|| {
        // In the forked child: only async-signal-safe calls, nothing allocated.
        // SAFETY: the descriptors are this process's own, open until it execs or exits;
        // `argv` is a null-terminated array of pointers to NUL-terminated strings that live
        // in the parent's memory, copied into this child.
        unsafe {
            for fd in shared {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            // Ctrl-C and a hang-up reach the whole process group: this process handles them
            // and kills the lean hackbench, whose tasks die with it (PR_SET_PDEATHSIG). Had
            // they died of it first, the run would end as a failed run, not as interrupted.
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            libc::execv(argv[0], argv.as_ptr());
        }
        children::child_fail(b"hackbench: could not execute schedlab-hackbench\n", 127)
    });
    // Only the lean hackbench holds the write end now: its exit ends the reading.
    drop(result_w);
    forked?;
    let mut said = Vec::new();
    std::io::Read::read_to_end(&mut result_r, &mut said).context("reading schedlab-hackbench")?;
    let (_, code) = children::wait_any().context("reaping schedlab-hackbench")?;
    children::forget_all();
    let said = String::from_utf8_lossy(&said);
    let line = said.lines().next().unwrap_or("");
    if let Some(ns) = line.strip_prefix("T ").and_then(|n| n.parse::<u64>().ok()) {
        if code == 0 {
            return Ok(Duration::from_nanos(ns));
        }
    }
    match line.strip_prefix("E ") {
        Some(why) => bail!("{why}"),
        None if code < 0 => bail!("schedlab-hackbench was killed by signal {}", -code),
        None => bail!("schedlab-hackbench exited with code {code} and no result"),
    }
}

fn run_processes(shape: Shape, slots: &[Tally]) -> Result<Duration> {
    let _kill = children::KillOnDrop;
    let gate = Gate::new(shape.pipe)?;
    // Buffers exist before any fork: the children only use memory they inherit.
    let mut data = vec![0u8; shape.datasize];
    let stamped = shape.stamped();
    let mut buf = vec![0u8; shape.datasize];
    let packets = shape.fds * shape.loops;
    let mut tasks = 0;
    for group in 0..shape.groups {
        let mut out = Fds(Vec::with_capacity(shape.fds));
        for i in 0..shape.fds {
            let (r, w) = fdpair(shape.pipe)?;
            let slot = &slots[group * shape.fds + i];
            let forked = children::fork(|| {
                close(w);
                receiver(r, packets, &mut buf, slot, gate.ready_w, gate.wake_r)
                    .map_or_else(Failure::exit, |()| 0)
            });
            close(r);
            if let Err(e) = forked {
                close(w);
                return Err(e);
            }
            out.0.push(w);
            tasks += 1;
        }
        for _ in 0..shape.fds {
            children::fork(|| {
                let (loops, w) = (shape.loops, gate.ready_w);
                sender(&out.0, loops, &mut data, stamped, w, gate.wake_r)
                    .map_or_else(Failure::exit, |()| 0)
            })?;
            tasks += 1;
        }
    }
    let start = gate.release(tasks)?;
    for _ in 0..tasks {
        let (pid, code) = children::wait_any().context("reaping the tasks")?;
        if code != 0 {
            // Its peers would wait forever for the messages it will never send or read: stop
            // the run now (KillOnDrop takes the others down) instead of hanging.
            let how = if code < 0 {
                format!("was killed by signal {}", -code)
            } else {
                format!("exited with code {code}")
            };
            bail!("task {pid} of {tasks} {how}; stopping the run");
        }
    }
    let elapsed = start.elapsed();
    children::forget_all();
    Ok(elapsed)
}

/// Rewrites the 2002 original's single-dash spelling (`hackbench -pipe 10`) into the modern one.
pub fn rewrite_legacy_args(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.get(1).is_some_and(|a| a == "hackbench") {
        for a in args.iter_mut().skip(2) {
            if a == "-pipe" {
                *a = "--pipe".into();
            }
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn seed_spelling_becomes_modern() {
        assert_eq!(
            rewrite_legacy_args(os(&["schedlab", "hackbench", "-pipe", "10"])),
            os(&["schedlab", "hackbench", "--pipe", "10"])
        );
        // Other commands keep their arguments as given.
        assert_eq!(
            rewrite_legacy_args(os(&["schedlab", "fork-load", "-pipe"])),
            os(&["schedlab", "fork-load", "-pipe"])
        );
    }
}
