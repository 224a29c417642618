//! contest's fork_load: fork, exec a nil program, wait, repeat (Con Kolivas, 2002).
//!
//! Each forker is a process, as in the original: it forks, the child execs a program that
//! only returns 0, the forker waits for it and counts it, and repeats. At most one child per
//! forker exists at a time. When fork fails with EAGAIN (a pids limit) the forker backs off
//! and the report says how often. The forkers stop at a flag in shared memory, so the count
//! is exactly the children reaped; every exit path stops them and reaps them. Every cycle is
//! timed, from just before the fork to just after the reap, into the forker's histogram: two
//! clock readings (44 ns) per cycle of a millisecond or so.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::unistd::{access, AccessFlags};

use crate::model::latency::Distribution;
use crate::sys::shared::counters::{now_ns, CounterRegion, CounterSlot, Histogram};
use crate::sys::shared::histogram::Unit;
use crate::sys::shared::shm::{self, Shareable, SharedMapping};
use crate::workload::children;
use crate::workload::placement::PlacementArgs;
use crate::workload::registry::params::refused;
use crate::workload::registry::params::FORK_LOAD;

/// How long a forker waits after fork fails with EAGAIN before trying again.
const BACKOFF: Duration = Duration::from_millis(10);

/// Arguments of `schedlab fork-load`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    #[arg(long, default_value = FORK_LOAD.param("forkers").default_word(), value_parser = parse_forkers,
          help = FORK_LOAD.param("forkers").cli_help())]
    pub forkers: Forkers,
    /// Stop after this many seconds (default: run until stopped).
    #[arg(long)]
    pub duration: Option<f64>,
    /// The program each child execs (default: schedlab-nil next to this binary).
    #[arg(long, value_name = "PATH")]
    pub exec: Option<PathBuf>,
    /// Also print each forker's count.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

#[derive(Clone, Copy, Debug)]
pub enum Forkers {
    Cpus,
    N(u32),
}

fn parse_forkers(s: &str) -> std::result::Result<Forkers, String> {
    Ok(match FORK_LOAD.param("forkers").parse_count(s)? {
        None => Forkers::Cpus,
        Some(n) => Forkers::N(n),
    })
}

/// A forker's counter and cycle-latency histogram (None: not timed).
struct Tally {
    count: CounterSlot,
    latency: Option<Histogram>,
}

/// What the forkers share with the parent besides their counters: one cache line each.
#[repr(C, align(64))]
struct Line(AtomicU64);

// SAFETY: one atomic padded to a cache line: valid for any bits, only accessed atomically.
unsafe impl Shareable for Line {}

/// A shared mapping of a memfd (so an exec'd forker can map it too): line 0 is the stop
/// flag, line 1+i forker i's EAGAIN count, line 1+n+i forker i's "finished" flag.
struct Control {
    map: SharedMapping,
    fd: std::os::fd::OwnedFd,
}

impl Control {
    fn new(forkers: usize) -> Result<Self> {
        let len = std::mem::size_of::<Line>() * (1 + 2 * forkers);
        let fd =
            shm::memfd(c"schedlab-fork-control", len).context("a memfd for the control page")?;
        let map = SharedMapping::of_fd(&fd, len).context("mapping the control page")?;
        Ok(Self { map, fd })
    }
    fn line(&self, i: usize) -> &AtomicU64 {
        &self.map.get::<Line>(i * std::mem::size_of::<Line>()).0
    }
    fn stop(&self) -> &AtomicU64 {
        self.line(0)
    }
    fn eagain(&self, forker: usize) -> &AtomicU64 {
        self.line(1 + forker)
    }
    fn finished(&self, forker: usize, n: usize) -> &AtomicU64 {
        self.line(1 + n + forker)
    }
}

/// The lean forker, built with this binary (src/bin/schedlab-forker.rs), if it is there.
fn lean_forker() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.with_file_name("schedlab-forker");
    check_executable(&path).ok().map(|_| path)
}

/// The default program: schedlab-nil, built with this binary.
pub(crate) fn default_nil() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    Ok(exe.with_file_name("schedlab-nil"))
}

/// Checks that `path` is a file this process may execute.
pub(crate) fn check_executable(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    if access(path, AccessFlags::X_OK).is_err() {
        bail!("{} is not executable", path.display());
    }
    Ok(())
}

pub fn main(args: Args) -> Result<()> {
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(refused(format!(
                "duration must be a positive number of seconds, not {d}"
            )));
        }
    }
    let program = exec_program(&args)?;
    args.placement.apply()?;
    let n = match args.forkers {
        Forkers::Cpus => crate::supervisor::usable_cpus(),
        Forkers::N(n) => n as usize,
    };

    let region = CounterRegion::for_workload()?;
    // Each forker and its child are a closed loop: the child runs while the forker waits.
    region.set_closed_loops(n as u64);
    let mut slots = (0..n)
        .map(|_| {
            let latency = region.claim_histogram(Unit::ForkCycle);
            region.claim().map(|count| Tally { count, latency })
        })
        .collect::<Result<Vec<_>>>()?;
    let control = Arc::new(Control::new(n)?);
    let path = CString::new(program.as_os_str().as_bytes()).context("a path with a NUL byte")?;
    let lean = LeanArgv::new(&program, &control, &region, &slots)?;

    let _kill = children::KillOnDrop;
    let start = Instant::now();
    start_forkers(&path, &lean, &mut slots, &control, &region)?;
    report_on_exit(&control, &region, start, n);
    let worst = wait_for_forkers(
        args.duration.map(|d| start + Duration::from_secs_f64(d)),
        n,
        &control,
    )?;
    let elapsed = start.elapsed();
    children::forget_all();
    region.mark_finished();
    report(region.total(), elapsed, n, &control);
    if args.verbose {
        for (i, s) in slots.iter().enumerate() {
            crate::outln!("forker {i}: {} children", s.count.get());
        }
        let cycles = Distribution::of(
            &region
                .read_latency()
                .into_iter()
                .map(Into::into)
                .collect::<Vec<_>>(),
            None,
        );
        if let Some((d, text)) = cycles.and_then(|d| Some((d.count(), d.percentiles_text()?))) {
            crate::outln!("Fork cycle (fork to reap): {text} ({d} cycles timed)");
        }
    }
    match worst {
        0 => Ok(()),
        EXIT_PROGRAM_FAILED => bail!(
            "{} exited with a failure status: fork-load needs a program that returns 0",
            program.display()
        ),
        _ => bail!("fork failed in a forker (not EAGAIN, which only backs off)"),
    }
}

/// The program each child execs: `--exec`, or schedlab-nil beside this binary; checked.
fn exec_program(args: &Args) -> Result<PathBuf> {
    Ok(match &args.exec {
        Some(p) => {
            check_executable(p).context("--exec")?;
            p.clone()
        }
        None => {
            let nil = default_nil()?;
            match check_executable(&nil) {
                Ok(()) => nil,
                // `cargo run` builds only schedlab: the dashboard's fork_load still runs, on the
                // system's program that only returns 0, and says so.
                Err(e) => {
                    match SYSTEM_TRUE
                        .iter()
                        .map(PathBuf::from)
                        .find(|t| check_executable(t).is_ok())
                    {
                        Some(t) => {
                            crate::errln!(
                            "fork-load: no schedlab-nil beside schedlab (`cargo build --release` builds it); children exec {}",
                            t.display()
                        );
                            t
                        }
                        None => return Err(e.context(
                            "the default program schedlab-nil (built with schedlab by cargo build)",
                        )),
                    }
                }
            }
        }
    })
}

/// Where a system keeps `true`, a program that only returns 0: the nil when schedlab-nil is
/// missing.
const SYSTEM_TRUE: [&str; 2] = ["/bin/true", "/usr/bin/true"];

/// Each forker's command line for the lean forker, when it is there (a forker's size is
/// part of every fork): the strings, and the pointer arrays execv takes, built before any
/// fork so that the forked child allocates nothing.
struct LeanArgv {
    /// Owns the strings `ptrs` point into (moving the Vec does not move them).
    _args: Vec<Vec<CString>>,
    ptrs: Vec<Vec<*const libc::c_char>>,
}

impl LeanArgv {
    fn new(
        program: &Path,
        control: &Control,
        region: &CounterRegion,
        slots: &[Tally],
    ) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let n = slots.len();
        let args: Vec<Vec<CString>> = match lean_forker() {
            Some(forker_path) => slots
                .iter()
                .enumerate()
                .map(|(i, slot)| {
                    [
                        forker_path.as_os_str().as_bytes().to_vec(),
                        program.as_os_str().as_bytes().to_vec(),
                        control.fd.as_raw_fd().to_string().into_bytes(),
                        i.to_string().into_bytes(),
                        n.to_string().into_bytes(),
                        region.raw_fd().to_string().into_bytes(),
                        slot.count.offset().to_string().into_bytes(),
                        // 0: not timed (the region's header is never a histogram).
                        slot.latency
                            .as_ref()
                            .map_or(0, Histogram::offset)
                            .to_string()
                            .into_bytes(),
                    ]
                    .into_iter()
                    .map(|a| CString::new(a).context("a path with a NUL byte"))
                    .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        let ptrs = args
            .iter()
            .map(|args| {
                args.iter()
                    .map(|a| a.as_ptr())
                    .chain(std::iter::once(std::ptr::null()))
                    .collect()
            })
            .collect();
        Ok(Self { _args: args, ptrs })
    }
}

/// Forks the forkers. Each execs the lean forker when it is there, else runs the same loop
/// in the forked copy of this process.
fn start_forkers(
    path: &CString,
    lean: &LeanArgv,
    slots: &mut [Tally],
    control: &Control,
    region: &CounterRegion,
) -> Result<()> {
    use std::os::fd::AsRawFd;
    let n = slots.len();
    let argv = [path.as_ptr(), std::ptr::null()];
    let shared_fds = [control.fd.as_raw_fd(), region.raw_fd()];
    for (i, slot) in slots.iter_mut().enumerate() {
        let lean = lean.ptrs.get(i);
        children::fork(|| {
            if let Some(args) = lean {
                // In the forked child: only async-signal-safe calls, nothing allocated (raw
                // libc: nix's execv builds its argument array on the heap).
                // SAFETY: the descriptors are this process's own, open until it execs or
                // exits; `args` is a null-terminated array of pointers to NUL-terminated
                // strings that live in the parent's memory, copied into this child.
                unsafe {
                    for fd in shared_fds {
                        libc::fcntl(fd, libc::F_SETFD, 0);
                    }
                    libc::execv(args[0], args.as_ptr());
                }
                // The exec failed: run the loop here instead.
            }
            forker(i, n, path, &argv, slot, control)
        })?;
    }
    Ok(())
}

/// On Ctrl-C or SIGTERM: lets the forkers finish their current child, then reports.
fn report_on_exit(control: &Arc<Control>, region: &CounterRegion, start: Instant, n: usize) {
    let control = control.clone();
    let region = region.clone();
    crate::sys::exit::lifeline::on_exit(move || {
        control.stop().store(1, Relaxed);
        let deadline = Instant::now() + Duration::from_millis(500);
        while (0..n).any(|i| control.finished(i, n).load(Relaxed) == 0) && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        report(region.total(), start.elapsed(), n, &control);
    });
}

/// Runs until `deadline` (or for ever), then stops and reaps the forkers; returns the worst
/// exit code. A forker only ends when told to: one that ends before is a crash (killed,
/// OOM), and the run must say so rather than carry on short of a forker.
fn wait_for_forkers(deadline: Option<Instant>, n: usize, control: &Control) -> Result<i32> {
    let mut early = None;
    while deadline.is_none_or(|d| Instant::now() < d) {
        let mut status = 0;
        // Raw waitpid: the status word says which signal killed a forker, which nix cannot
        // represent for a real-time one.
        // SAFETY: waitpid with WNOHANG only reads our children's state into `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            early = Some((pid, status));
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    control.stop().store(1, Relaxed);
    let mut worst = 0;
    for _ in 0..n - usize::from(early.is_some()) {
        let (_, code) = children::wait_any().context("reaping the forkers")?;
        worst = worst.max(code);
    }
    if let Some((pid, status)) = early {
        if libc::WIFSIGNALED(status) {
            children::forget_all();
            bail!(
                "forker {pid} was killed by signal {} mid-run",
                libc::WTERMSIG(status)
            );
        }
        // It stopped on its own (the program failed, fork failed): reported by the caller.
        worst = worst.max(libc::WEXITSTATUS(status));
    }
    Ok(worst)
}

/// A forker's exit code when the exec'd program did not return 0.
const EXIT_PROGRAM_FAILED: i32 = 2;

fn report(total: u64, elapsed: Duration, n: usize, control: &Control) {
    let secs = elapsed.as_secs_f64();
    crate::outln!("Children forked: {total}");
    crate::outln!(
        "Rate: {:.0} forks/s over {secs:.3} s with {n} forker{}",
        total as f64 / secs,
        if n == 1 { "" } else { "s" }
    );
    let eagain: u64 = (0..n).map(|i| control.eagain(i).load(Relaxed)).sum();
    if eagain > 0 {
        crate::outln!(
            "fork failed with EAGAIN {eagain} times (process limit reached); each time the forker waited {} ms",
            BACKOFF.as_millis()
        );
    }
}

/// One forker's loop. Runs in a forked child: system calls and inherited memory only. The
/// measured loop (when the lean forker is not there): raw libc, exactly contest's calls.
fn forker(
    i: usize,
    n: usize,
    path: &CString,
    argv: &[*const libc::c_char; 2],
    slot: &Tally,
    control: &Control,
) -> i32 {
    let backoff = libc::timespec {
        tv_sec: 0,
        tv_nsec: BACKOFF.as_nanos() as libc::c_long,
    };
    // Looked up once: the loop itself only loads and stores.
    let (stop, eagain) = (control.stop(), control.eagain(i));
    let mut code = 0;
    while stop.load(Relaxed) == 0 {
        let start = slot.latency.as_ref().map(|_| now_ns());
        // SAFETY: the forker is a single-threaded forked process; its child only calls execv and
        // _exit on memory prepared before the fork. (Without atfork handlers: see bare_fork.)
        let pid = unsafe { super::children::bare_fork() };
        if pid == 0 {
            // SAFETY: `path` and `argv` (= [path, null]) are NUL-terminated and live across the
            // call; execv only reads them, and _exit ends the child if the exec fails.
            unsafe {
                libc::execv(path.as_ptr(), argv.as_ptr());
                libc::_exit(127);
            }
        }
        if pid < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error();
            if errno == Some(libc::EAGAIN) {
                eagain.fetch_add(1, Relaxed);
                // SAFETY: `backoff` is a live timespec that nanosleep only reads; a null remainder
                // pointer is allowed.
                unsafe { libc::nanosleep(&backoff, std::ptr::null_mut()) };
                continue;
            }
            code = 1;
            break;
        }
        let mut status = 0;
        // SAFETY: `status` is a live int for waitpid to fill; `pid` is our child.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        if let (Some(h), Some(start)) = (&slot.latency, start) {
            h.record_since(start);
        }
        slot.count.add(1);
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            code = EXIT_PROGRAM_FAILED;
            break;
        }
    }
    control.finished(i, n).store(1, Relaxed);
    code
}
