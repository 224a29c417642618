//! Starts workloads as child processes, each in a process group of its own, and makes sure
//! they end: stopped by hand, or when their supervisor dies however it dies.
//!
//! A workload is usually this very binary with a subcommand (`schedlab fork-load ...`), so
//! the dashboard, `run`, contest and the standalone commands run the same code. It can also be
//! any command (a user's `make -j4`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::fcntl::OFlag;
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::prctl;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::{getppid, pipe2, setpgid, setsid, Pid};
use serde::{Deserialize, Serialize};

use crate::knobs::{Knobs, Placement, Policy, RT_PRIORITY};
use crate::sys::exit::lifeline::ENV_LIFELINE_FD;
use crate::sys::shared::counters::{self, CounterRegion};

pub mod change;
pub mod stderr;

pub use stderr::StderrTail;

use crate::sys::kernel::cgroup::{self, WorkloadCgroup};

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Program {
    /// This binary with these arguments (a subcommand).
    SelfExe(Vec<String>),
    /// Any program: argv[0] looked up in PATH.
    Command(Vec<String>),
}

impl std::fmt::Display for Program {
    /// As a person would type it: `schedlab hackbench -g 10`, `make -j4`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Program::SelfExe(args) => write!(f, "`schedlab {}`", args.join(" ")),
            Program::Command(argv) => write!(f, "`{}`", argv.join(" ")),
        }
    }
}

/// A workload about to be started.
#[derive(Clone, Debug)]
pub struct LaunchSpec {
    pub name: String,
    pub program: Program,
    pub knobs: Knobs,
    /// Keep the child's stdout/stderr (standalone-style reports) instead of discarding them.
    pub capture_output: bool,
}

/// A started workload. Dropping it kills its whole process group and reaps the leader.
pub struct Running {
    pub name: String,
    /// Pid of the leader; also its process group id (and session id with OwnSession).
    pub pid: u32,
    pub started: Instant,
    pub counters: CounterRegion,
    pub knobs: Knobs,
    child: Child,
    exit: Option<ExitStatus>,
    _lifeline: OwnedFd,
    /// Its own cgroup, with `Placement::Cgroup`; removed when the workload ends.
    cgroup: Option<WorkloadCgroup>,
    /// The last lines of its stderr (without `capture_output`).
    pub stderr: StderrTail,
}

impl Running {
    pub fn pgid(&self) -> u32 {
        self.pid
    }

    /// Its own cgroup, while it has one (`Placement::Cgroup`, until it ends).
    pub fn cgroup(&self) -> Option<&WorkloadCgroup> {
        self.cgroup.as_ref()
    }

    /// Changes nice, policy and affinity of every thread it has now, live. Placement cannot
    /// change under a running group (restart it); a new cgroup weight can.
    pub(crate) fn set_knobs(&mut self, new: &Knobs) -> Result<usize> {
        let changed = {
            let scope = match &self.cgroup {
                Some(g) => change::Scope::Cgroup(g),
                None => change::Scope::ProcessGroup(self.pgid()),
            };
            change::apply(&scope, &change::Change::between(&self.knobs, new))?
        };
        match (&self.knobs.placement, &new.placement) {
            (a, b) if a == b => {}
            (Placement::Cgroup { .. }, Placement::Cgroup { weight }) if self.cgroup.is_some() => {
                self.cgroup.as_mut().unwrap().set_weight(*weight)?;
            }
            _ => bail!("a new placement needs a restart"),
        }
        if new.cpu_quota != self.knobs.cpu_quota {
            match self.cgroup.as_mut() {
                Some(g) => g.set_quota(new.cpu_quota)?,
                None => bail!("a CPU quota needs a cgroup of its own (placement cgroup)"),
            }
        }
        self.knobs = new.clone();
        Ok(changed)
    }

    /// Removes its cgroup once nothing of it runs.
    fn drop_cgroup(&mut self) {
        if let Some(g) = self.cgroup.take() {
            let _ = g.remove(Duration::from_secs(2));
        }
    }

    /// Whether the leader has exited, reaping it if so.
    pub(crate) fn poll_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exit = Some(status);
                // The leader is gone: make sure nothing of its group lingers, and remove
                // SysV objects it may have left if it died by SIGKILL.
                kill_group(self.pid, Signal::SIGKILL);
                self.drop_cgroup();
                let _ = crate::sys::kernel::sysv::sweep_orphans();
            }
        }
        self.exit
    }

    #[cfg(test)]
    /// The child's output pipes, when `capture_output` was set.
    pub(crate) fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Asks the group to stop (SIGTERM), waits up to `grace`, then kills it outright.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.poll_exit().is_some() {
            return self.exit;
        }
        kill_group(self.pid, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.poll_exit().is_some() {
                return self.exit;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_group(self.pid, Signal::SIGKILL);
        self.exit = self.child.wait().ok();
        self.drop_cgroup();
        wait_group_gone(self.pid, GROUP_GONE_WITHIN);
        let _ = crate::sys::kernel::sysv::sweep_orphans();
        self.exit
    }

    /// Waits for the workload to end by itself.
    pub fn wait(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.exit {
            return Ok(status);
        }
        let status = self.child.wait().context("waiting for workload")?;
        self.exit = Some(status);
        kill_group(self.pid, Signal::SIGKILL);
        self.drop_cgroup();
        let _ = crate::sys::kernel::sysv::sweep_orphans();
        Ok(status)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.exit.is_none() {
            kill_group(self.pid, Signal::SIGKILL);
            let _ = self.child.wait();
            wait_group_gone(self.pid, GROUP_GONE_WITHIN);
            let _ = crate::sys::kernel::sysv::sweep_orphans();
        }
    }
}

/// How long a killed workload's other processes get to finish dying before its SysV objects
/// are swept.
const GROUP_GONE_WITHIN: Duration = Duration::from_secs(2);

/// Waits, up to `within`, until no process is left in the group. The leader is reaped first,
/// but a second process of the group (`schedlab chat`'s server beside its client) may still be
/// exiting, its ledger still held: a sweep then would pass over its objects, and with the
/// dashboard gone nobody would sweep again (CI saw 32 semaphore sets left after `q`).
fn wait_group_gone(pgid: u32, within: Duration) {
    let deadline = Instant::now() + within;
    while pgid > 1
        && killpg(Pid::from_raw(pgid as libc::pid_t), None).is_ok()
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Signals the workload's process group; pgid > 1 rules out our own group (0) and every
/// process (-1).
fn kill_group(pgid: u32, sig: Signal) {
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid as libc::pid_t), sig);
    }
}

/// Starts a workload in a process group of its own, with its knobs applied before exec. Its
/// errors say what went wrong, not which workload: the caller knows that.
pub fn spawn(spec: &LaunchSpec) -> Result<Running> {
    if spec.knobs.policy.is_realtime() && !RT_PRIORITY.contains(&spec.knobs.rt_priority) {
        bail!(
            "real-time priority must be 1..99, not {}",
            spec.knobs.rt_priority
        );
    }
    let cgroup = own_cgroup(spec)?;
    let cgroup_procs = match &cgroup {
        Some(g) => g.open_procs()?,
        None => Vec::new(),
    };
    let counters = CounterRegion::create(counters::DEFAULT_CAPACITY)?;
    let (lifeline_r, lifeline_w) = pipe_cloexec()?;

    let mut cmd = command(spec)?;
    cmd.env(counters::ENV_FD, counters.raw_fd().to_string())
        .env(ENV_LIFELINE_FD, lifeline_r.as_raw_fd().to_string())
        .stdin(Stdio::null());
    let mut stderr_read = None;
    if !spec.capture_output {
        // Its stderr into a ring of its last lines, to say why when it fails.
        let (read_end, write_end) = pipe_cloexec()?;
        stderr_read = Some(read_end);
        cmd.stdout(Stdio::null()).stderr(Stdio::from(write_end));
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }

    let setup = ChildSetup {
        own_session: spec.knobs.placement == Placement::OwnSession,
        cgroup_fds: cgroup::raw(&cgroup_procs),
        keep_fds: [counters.raw_fd(), lifeline_r.as_raw_fd()],
        lifeline_fd: lifeline_r.as_raw_fd(),
        nice: spec.knobs.nice,
        policy: spec.knobs.policy,
        rt_priority: spec.knobs.rt_priority,
        cpuset: spec.knobs.affinity.as_deref().map(cpu_set).transpose()?,
    };
    let pinned = setup.cpuset.is_some();
    // SAFETY: the closure runs in the child between fork and exec and does only what
    // ChildSetup::in_child does: async-signal-safe system calls on values prepared here, no
    // allocation, no lock.
    unsafe {
        cmd.pre_exec(move || setup.in_child());
    }

    let child = cmd.spawn().map_err(|err| {
        let what = spawn_failure(spec, err.raw_os_error(), pinned);
        anyhow::Error::new(err).context(what)
    })?;
    drop(lifeline_r);
    // Our copy of its stderr's write end goes with the Command: end of file then means the
    // workload and all it started are gone.
    drop(cmd);
    // Without a thread to read it (none could be made), its stderr is not kept: it still
    // runs (the pipe's read end closes, and its writes there fail).
    let stderr = stderr_read
        .and_then(|read_end| StderrTail::start(read_end, &spec.name).ok())
        .unwrap_or_default();
    Ok(Running {
        name: spec.name.clone(),
        pid: child.id(),
        started: Instant::now(),
        counters,
        knobs: spec.knobs.clone(),
        child,
        exit: None,
        _lifeline: lifeline_w,
        cgroup,
        stderr,
    })
}

/// What a failed spawn means, in words: the child's setup before exec (its knobs) or the
/// exec itself.
fn spawn_failure(spec: &LaunchSpec, errno: Option<i32>, pinned: bool) -> String {
    let (policy, nice) = (spec.knobs.policy, spec.knobs.nice);
    match errno {
        Some(libc::EPERM) if policy.is_realtime() || nice < 0 => format!(
            "not permitted to set the {} policy / nice {nice} (needs root or CAP_SYS_NICE)",
            policy.word(),
        ),
        Some(libc::EINVAL) if pinned => "its CPU affinity names no usable CPU".to_string(),
        _ => format!("{} could not be run", spec.program),
    }
}

/// The workload's own cgroup, when its placement asks for one.
fn own_cgroup(spec: &LaunchSpec) -> Result<Option<WorkloadCgroup>> {
    match spec.knobs.placement {
        Placement::Cgroup { weight } => {
            let mut g = WorkloadCgroup::create(&spec.name, weight)
                .context("cannot place it in a cgroup of its own")?;
            if spec.knobs.cpu_quota.is_some() {
                g.set_quota(spec.knobs.cpu_quota)?;
            }
            Ok(Some(g))
        }
        _ if spec.knobs.cpu_quota.is_some() => {
            bail!("a CPU quota needs a cgroup of its own (placement cgroup)")
        }
        _ => Ok(None),
    }
}

/// The command its program runs: this binary with a subcommand, or any program.
fn command(spec: &LaunchSpec) -> Result<Command> {
    Ok(match &spec.program {
        Program::SelfExe(args) => {
            let exe = std::env::current_exe().context("finding the schedlab binary")?;
            let mut c = Command::new(exe);
            c.args(args);
            c
        }
        Program::Command(argv) => {
            let Some((first, rest)) = argv.split_first() else {
                bail!("an empty command");
            };
            let mut c = Command::new(first);
            c.args(rest);
            c
        }
    })
}

/// What the child does to itself between fork and exec: its session or process group, its
/// cgroup, the lifeline, the descriptors it keeps, its nice value, policy and CPUs.
struct ChildSetup {
    own_session: bool,
    cgroup_fds: Vec<std::os::fd::RawFd>,
    keep_fds: [std::os::fd::RawFd; 2],
    lifeline_fd: std::os::fd::RawFd,
    nice: i32,
    policy: Policy,
    rt_priority: u8,
    cpuset: Option<CpuSet>,
}

impl ChildSetup {
    /// Runs in the child between fork and exec: only async-signal-safe calls, no allocation.
    fn in_child(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        if self.own_session {
            setsid()?;
        } else {
            setpgid(Pid::from_raw(0), Pid::from_raw(0))?;
        }
        // Join its cgroup before exec, so not one instruction of it runs outside.
        // SAFETY: we are the freshly forked child, which is what join_from_child requires.
        unsafe { cgroup::join_from_child(&self.cgroup_fds)? };
        // Second line of defence: the parent thread's death sends SIGTERM.
        let _ = prctl::set_pdeathsig(Signal::SIGTERM);
        if getppid() == Pid::from_raw(1) {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        // Raw libc from here: nix's fcntl wants a BorrowedFd and knows neither F_SETOWN nor
        // F_SETSIG, and nix has no setpriority or sched_setscheduler.
        // SAFETY: each call is an async-signal-safe system call on this process or on the
        // descriptors it keeps (open: the parent holds them across the spawn); `param` points
        // to a live sched_param.
        unsafe {
            for fd in self.keep_fds {
                if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    return fail();
                }
            }
            // The lifeline: when the supervisor (the only writer) is gone, the kernel signals
            // the reader. F_SETSIG makes that signal SIGTERM, so it works for any program.
            let fd = self.lifeline_fd;
            if libc::fcntl(fd, libc::F_SETOWN, libc::getpid()) < 0
                || libc::fcntl(fd, F_SETSIG, libc::SIGTERM) < 0
                || libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC | libc::O_NONBLOCK) < 0
            {
                return fail();
            }
            if self.nice != 0 && libc::setpriority(libc::PRIO_PROCESS, 0, self.nice) < 0 {
                return fail();
            }
            if self.policy != Policy::Other {
                let param = libc::sched_param {
                    sched_priority: if self.policy.is_realtime() {
                        i32::from(self.rt_priority)
                    } else {
                        0
                    },
                };
                if libc::sched_setscheduler(0, policy_number(self.policy), &param) < 0 {
                    return fail();
                }
            }
        }
        if let Some(set) = &self.cpuset {
            sched_setaffinity(Pid::from_raw(0), set)?;
        }
        Ok(())
    }
}

/// fcntl's F_SETSIG (Linux), missing from the libc crate.
const F_SETSIG: libc::c_int = 10;

fn pipe_cloexec() -> Result<(OwnedFd, OwnedFd)> {
    pipe2(OFlag::O_CLOEXEC).context("pipe2 for a lifeline")
}

/// The kernel's number for a policy (sched_setscheduler).
fn policy_number(p: Policy) -> libc::c_int {
    match p {
        Policy::Other => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
        Policy::Idle => libc::SCHED_IDLE,
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::Rr => libc::SCHED_RR,
    }
}

/// A CPU set holding `cpus`, checked against the machine.
pub(crate) fn cpu_set(cpus: &[usize]) -> Result<CpuSet> {
    let online = usable_cpus();
    let mut set = CpuSet::new();
    if cpus.is_empty() {
        bail!("an empty CPU list");
    }
    for &cpu in cpus {
        if cpu >= online {
            bail!(
                "CPU {cpu} does not exist: this machine has CPUs 0..{}",
                online - 1
            );
        }
        set.set(cpu)
            .with_context(|| format!("CPU {cpu} is past what a CPU set holds"))?;
    }
    Ok(set)
}

/// How many CPUs this process may use (its affinity), which is what a workload can get.
pub fn usable_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sys::kernel::proc::alive;

    /// A `sh -c SCRIPT` workload with its output captured.
    pub(crate) fn sh(name: &str, script: &str, knobs: Knobs) -> LaunchSpec {
        LaunchSpec {
            name: name.into(),
            program: Program::Command(vec!["sh".into(), "-c".into(), script.into()]),
            knobs,
            capture_output: true,
        }
    }

    #[test]
    fn workload_gets_its_own_group_and_knobs() {
        let knobs = Knobs {
            nice: 5,
            ..Knobs::default()
        };
        let mut run = spawn(&sh("test", "echo $(ps -o pgid= -o ni= -p $$)", knobs)).unwrap();
        let pid = run.pid;
        let mut out = String::new();
        use std::io::Read;
        run.child_mut()
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(run.wait().unwrap().success());
        let fields: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(fields, vec![pid.to_string().as_str(), "5"]);
    }

    #[test]
    fn stop_kills_the_whole_group() {
        let mut run = spawn(&sh("test", "sleep 30 & echo $!; wait", Knobs::default())).unwrap();
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(run.child_mut().stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        assert!(alive(grandchild));
        run.stop(Duration::from_millis(500));
        // The grandchild was reparented; give init a moment to reap it.
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(grandchild) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(grandchild));
    }

    #[test]
    fn spawn_errors_are_words_without_the_name_or_rust_debug_text() {
        let mut spec = sh("w", "true", Knobs::default());
        spec.program = Program::Command(vec!["/nonexistent/prog".into(), "-x".into()]);
        let err = format!("{:#}", spawn(&spec).err().unwrap());
        assert!(
            err.starts_with("`/nonexistent/prog -x` could not be run: "),
            "{err}"
        );
        spec.knobs.policy = Policy::Fifo;
        spec.knobs.rt_priority = 1;
        assert_eq!(
            spawn_failure(&spec, Some(libc::EPERM), false),
            "not permitted to set the fifo policy / nice 0 (needs root or CAP_SYS_NICE)"
        );
    }

    #[test]
    fn bad_affinity_is_refused_before_starting() {
        let knobs = Knobs {
            affinity: Some(vec![4096]),
            ..Knobs::default()
        };
        let err = spawn(&sh("test", "true", knobs)).err().unwrap();
        assert!(format!("{err:#}").contains("does not exist"), "{err:#}");
    }
}

#[cfg(test)]
mod cgroup_placement_tests {
    use super::*;

    /// A workload placed in its own cgroup runs inside it from its first instruction, and the
    /// group is gone once the workload is stopped. Needs a writable cgroup hierarchy (root).
    #[test]
    fn cgroup_placement_joins_and_cleans_up() {
        let knobs = Knobs {
            placement: Placement::Cgroup { weight: 200 },
            ..Knobs::default()
        };
        let spec = tests::sh("cg test", "cat /proc/self/cgroup; sleep 30", knobs);
        let mut run = match spawn(&spec) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("SKIPPED cgroup_placement_joins_and_cleans_up: {e:#}");
                return;
            }
        };
        let dir = run.cgroup().unwrap().dir().to_path_buf();
        let leaf = dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut line = String::new();
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(run.child_mut().stdout.take().unwrap());
        let mut seen = false;
        while out.read_line(&mut line).unwrap() > 0 {
            if line.contains(&leaf) {
                seen = true;
                break;
            }
        }
        assert!(seen, "the child's /proc/self/cgroup never named {leaf}");
        let mut knobs = run.knobs.clone();
        knobs.placement = Placement::Cgroup { weight: 50 };
        run.set_knobs(&knobs).unwrap();
        assert_eq!(run.cgroup().unwrap().weight(), 50);
        run.stop(Duration::from_millis(500));
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}
