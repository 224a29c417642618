//! `schedlab chat ROOMS MESSAGES [--runs N]`: the dashboard's chat workload. A chat
//! server child on 127.0.0.1 (an ephemeral port, learnt through a pipe, same process group)
//! and client runs against it in this process, counting the client's messages sent plus
//! received, one `Average throughput` line per run.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{pipe2, Pid};

use super::client::{self, ClientConfig};
use super::protocol::{parse_count, RunSize};
use super::slots::SlotPool;
use super::{net, parse_timeout};
use crate::sys::exit::lifeline;
use crate::sys::shared::counters::{self, CounterRegion};
use crate::workload::registry::params::{refused, CHAT};

/// Arguments of `schedlab chat`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[arg(allow_hyphen_values = true, help = CHAT.param("rooms").cli_help())]
    pub rooms: String,
    #[arg(allow_hyphen_values = true, help = CHAT.param("messages").cli_help())]
    pub messages: String,
    #[arg(long, value_name = "N", default_value_t = CHAT.param("runs").default_count().into(),
          allow_negative_numbers = true, help = CHAT.param("runs").cli_help())]
    pub runs: i64,
    #[arg(long, value_name = "SECS", default_value_t = 10.0, help = super::TIMEOUT_HELP)]
    pub timeout: f64,
    /// Start even when the size guard finds it too big for this machine.
    #[arg(long)]
    pub force: bool,
}

/// Consecutive failed runs after which `schedlab chat` gives up.
const MAX_FAILED_IN_A_ROW: u32 = 3;

pub fn bench_main(args: BenchArgs) -> Result<()> {
    let (size, runs) = run_size(&args)?;
    let timeout = parse_timeout(args.timeout)?;
    let runs = Some(u64::from(runs)).filter(|&n| n > 0);
    super::guard("chat", size, 2, args.force)?;
    crate::sys::kernel::sysv::sweep_orphans()?;
    // Map the dashboard's region (closing the inherited descriptor) before forking the server,
    // which must count into a region of its own, not into ours.
    let region = CounterRegion::for_workload()?;
    if let Ok(fd) = std::env::var(lifeline::ENV_LIFELINE_FD) {
        if let Ok(fd) = fd.parse::<i32>() {
            // SAFETY: the lifeline descriptor was inherited for this process and stays open
            // for its life; the borrow lasts this one call.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            let _ = fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
        }
    }
    let server = ServerChild::start(timeout, runs)?;
    let cfg = ClientConfig {
        addr: SocketAddr::new(Ipv4Addr::LOCALHOST.into(), server.port),
        size,
        timeout,
        verbose: false,
    };
    let mut pool = SlotPool::new(region.clone());
    let mut done = 0u64;
    let mut failed_in_a_row = 0;
    while runs.is_none_or_more(done) {
        match client::run(&cfg, &mut pool) {
            Ok(report) => {
                crate::outln!("{}", report.throughput_line());
                let _ = std::io::stdout().flush();
                done += 1;
                failed_in_a_row = 0;
            }
            // On a machine loaded to the hilt a run can stall past the timeout and be
            // abandoned by the server; a looping workload should go on, not die of one.
            Err(err) if failed_in_a_row + 1 < MAX_FAILED_IN_A_ROW => {
                failed_in_a_row += 1;
                crate::errln!("schedlab chat: run failed, starting another: {err:#}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(err) => {
                return Err(err.context(format!("{MAX_FAILED_IN_A_ROW} runs in a row failed")))
            }
        }
    }
    region.mark_finished();
    drop(server);
    Ok(())
}

/// Rooms, messages and runs from the command line, each checked by the registry with the
/// message a scenario or the picker gives (the machine's limits are checked by the guard).
fn run_size(args: &BenchArgs) -> Result<(RunSize, u32)> {
    let check = |key, x| CHAT.param(key).check_count(x).map_err(refused);
    let count = |key, text: &str| check(key, parse_count(key, text).map_err(refused)?);
    let size = RunSize {
        rooms: count("rooms", &args.rooms)?,
        messages: count("messages", &args.messages)?,
    };
    Ok((size, check("runs", args.runs)?))
}

trait RunsLeft {
    fn is_none_or_more(&self, done: u64) -> bool;
}

impl RunsLeft for Option<u64> {
    fn is_none_or_more(&self, done: u64) -> bool {
        self.is_none_or(|n| done < n)
    }
}

/// The server child; stopped (SIGKILL, then a sweep) when dropped or when we are terminated.
struct ServerChild {
    pid: Arc<AtomicI32>,
    port: u16,
}

impl ServerChild {
    fn start(timeout: Duration, runs: Option<u64>) -> Result<Self> {
        let (read_end, write_end) =
            pipe2(OFlag::O_CLOEXEC).context("pipe2 for the server's port")?;
        let exe = std::env::current_exe().context("finding the schedlab binary")?;
        let mut cmd = Command::new(exe);
        cmd.args(["chat-server", "127.0.0.1", "0", "--port-fd"])
            .arg(write_end.as_raw_fd().to_string())
            .arg("--timeout")
            .arg(timeout.as_secs_f64().to_string());
        if let Some(n) = runs {
            cmd.arg("--runs").arg(n.to_string());
        }
        cmd.env_remove(counters::ENV_FD)
            .env_remove(lifeline::ENV_LIFELINE_FD)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let wfd = write_end.as_raw_fd();
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec, and makes only async-signal-safe calls
        // (fcntl, prctl, getppid) on values copied in before the fork.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(wfd, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // If we die by SIGKILL, the server still goes (our main thread spawned it and
                // lives as long as we do).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        let child = cmd.spawn().context("starting the chat server child")?;
        drop(write_end);
        let pid = Arc::new(AtomicI32::new(child.id() as i32));
        let hook_pid = pid.clone();
        lifeline::on_exit(move || stop(&hook_pid, false));
        let mut server = ServerChild { pid, port: 0 };
        server.port = read_port(&read_end).context("the chat server child did not start")?;
        Ok(server)
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        stop(&self.pid, true);
    }
}

/// The port the child wrote, within a few seconds.
fn read_port(pipe: &OwnedFd) -> Result<u16> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut text = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !net::wait_readable(pipe, left)? {
            bail!("no port within 10 s");
        }
        let mut buf = [0u8; 16];
        let n = match nix::unistd::read(pipe, &mut buf) {
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e).context("reading the port"),
        };
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&text);
    text.trim()
        .parse()
        .ok()
        .filter(|&p: &u16| p != 0)
        .with_context(|| format!("it exited before telling its port (said {text:?})"))
}

/// Stops the server child once, without waking anything while we still have work to do: a
/// dead server's sockets would wake our 1,200 client threads of a 30-room run at once, and
/// on 2 CPUs the clean-up (or the signal thread running it) waits its turn among them for
/// seconds. So: SIGSTOP, and wait until it has stopped; remove its semaphore sets and its
/// ledger ourselves (a stopped process creates nothing more); then SIGKILL it. `reap`: wait
/// for its death too (a normal end); an exit path leaves the zombie to our own end.
fn stop(pid: &AtomicI32, reap: bool) {
    let pid = pid.swap(0, SeqCst);
    if pid <= 0 {
        return;
    }
    // `pid` is our child, swapped out so it is stopped once, not yet reaped (a reaped pid
    // could be another process's).
    let pid = Pid::from_raw(pid);
    let _ = kill(pid, Signal::SIGSTOP);
    let deadline = Instant::now() + Duration::from_secs(2);
    let (stopped, reaped) = loop {
        match waitpid(pid, Some(WaitPidFlag::WUNTRACED | WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1))
            }
            // Not stopped yet (stuck in the kernel?): kill, sweep.
            Ok(WaitStatus::StillAlive) => break (false, false),
            Ok(WaitStatus::Stopped(..)) => break (true, false),
            _ => break (false, true), // it had died (a crash), reaped now
        }
    };
    if stopped {
        let _ = crate::sys::kernel::sysv::remove_objects_of_stopped(pid.as_raw() as u32);
    }
    if !reaped {
        let _ = kill(pid, Signal::SIGKILL);
        if !stopped || reap {
            let _ = waitpid(pid, None);
        }
    }
    if !stopped {
        // Dead and reaped: its ledger is an orphan's now, ours to sweep.
        let _ = crate::sys::kernel::sysv::sweep_orphans();
    }
}
