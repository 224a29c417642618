//! Starting the tasks of a ping-pong run (forked processes or threads), timing them, and
//! making sure the run ends: on time, on a signal, or when one task dies under its partner.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::prctl;
use nix::sys::signal::{kill, signal, SigHandler, Signal};
use nix::sys::wait::waitpid;
use nix::unistd::{close, fork, getpid, getppid, read, write, ForkResult, Pid};

use super::endpoint::{self, Call, Control, MsgEnd, PipeEnd, SemEnd, TaskError};
use super::{pipe, Handle, PairObjects, Plan, SharedSlot};

/// How long tasks get to finish once told to stop before they are killed.
const WIND_DOWN: Duration = Duration::from_secs(5);

const ROLE: [&str; 2] = ["ping", "pong"];

/// What the clean-up hook and the runner share.
pub(crate) struct RunState {
    /// Set by the exit hook before it kills the tasks, so their deaths are not reported.
    pub terminating: AtomicBool,
    /// Pids of forked tasks (0: none), two per pair.
    pids: Vec<AtomicI32>,
    /// When the measured part began.
    pub t0: OnceLock<Instant>,
}

impl RunState {
    pub fn new(pairs: usize) -> Self {
        Self {
            terminating: AtomicBool::new(false),
            pids: (0..2 * pairs).map(|_| AtomicI32::new(0)).collect(),
            t0: OnceLock::new(),
        }
    }

    /// For the exit hook: no lock, no allocation.
    pub(crate) fn kill_tasks(&self) {
        self.terminating.store(true, SeqCst);
        for pid in &self.pids {
            let pid = pid.load(SeqCst);
            if pid > 0 {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }

    /// The process is being terminated by its exit hook: wait here for the end.
    fn park_if_terminating(&self) {
        if self.terminating.load(SeqCst) {
            loop {
                std::thread::park();
            }
        }
    }
}

/// Runs one task to its end.
fn task_body(
    handle: Handle,
    role: usize,
    control: &Control,
    pair: usize,
    slot: &SharedSlot,
) -> Result<(), TaskError> {
    let stop = control.stop_flag();
    let pc = control.pair(pair);
    let (count, latency) = (slot.slot(), slot.latency());
    match (handle, role) {
        (Handle::Msg(id), 0) => {
            endpoint::ping(&mut MsgEnd::new(id, true), stop, pc, count, latency)
        }
        (Handle::Msg(id), _) => endpoint::pong(&mut MsgEnd::new(id, false), pc),
        (Handle::Sem(id), 0) => {
            endpoint::ping(&mut SemEnd::new(id, true), stop, pc, count, latency)
        }
        (Handle::Sem(id), _) => endpoint::pong(&mut SemEnd::new(id, false), pc),
        // fds: [ping->pong read, ping->pong write, pong->ping read, pong->ping write]
        (Handle::Pipe(fds), 0) => {
            endpoint::ping(&mut PipeEnd::new(fds[1], fds[2]), stop, pc, count, latency)
        }
        (Handle::Pipe(fds), _) => endpoint::pong(&mut PipeEnd::new(fds[3], fds[0]), pc),
    }
}

fn pin_self(cpu: Option<usize>) -> Result<(), TaskError> {
    let Some(cpu) = cpu else { return Ok(()) };
    let mut set = CpuSet::new();
    set.set(cpu)
        .and_then(|()| sched_setaffinity(Pid::from_raw(0), &set))
        .map_err(|errno| TaskError {
            call: Call::Affinity,
            errno: errno as i32,
        })
}

fn task_name(pair: usize, role: usize) -> String {
    format!("pair {pair}'s {} task", ROLE[role])
}

// ---------------------------------------------------------------------------------------
// Processes

struct Child {
    pid: i32,
    pidfd: OwnedFd,
    pair: usize,
    role: usize,
    status: Option<i32>,
}

impl Child {
    fn describe(&self) -> String {
        let what = match self.status {
            Some(s) if libc::WIFSIGNALED(s) => {
                let sig = libc::WTERMSIG(s);
                let name = nix::sys::signal::Signal::try_from(sig)
                    .map(|s| s.as_str())
                    .unwrap_or("?");
                format!("was killed by signal {sig} ({name})")
            }
            Some(s) if libc::WIFEXITED(s) => format!("exited with status {}", libc::WEXITSTATUS(s)),
            _ => "is still running".to_string(),
        };
        format!(
            "{} (pid {}) {what}",
            task_name(self.pair, self.role),
            self.pid
        )
    }

    fn ok(&self) -> bool {
        matches!(self.status, Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0)
    }

    /// Reaps the child if it has ended.
    fn try_reap(&mut self) -> bool {
        if self.status.is_some() {
            return true;
        }
        let mut status = 0;
        // Raw waitpid: the report wants the status word, which nix cannot represent for a
        // task killed by a real-time signal.
        // SAFETY: `status` is a live int for waitpid to fill; WNOHANG never blocks.
        if unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) } == self.pid {
            self.status = Some(status);
        }
        self.status.is_some()
    }
}

fn pidfd_open(pid: i32) -> std::io::Result<OwnedFd> {
    // Raw syscall: nix has no pidfd_open.
    // SAFETY: pidfd_open takes two integers, no pointer.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is the new descriptor pidfd_open just returned (checked non-negative);
    // nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Waits until one of the live children ends or `timeout` passes (None: forever). Returns
/// the index of an ended child.
fn wait_any(children: &mut [Child], timeout: Option<Duration>) -> Result<Option<usize>> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        if let Some(i) =
            (0..children.len()).find(|&i| children[i].status.is_none() && children[i].try_reap())
        {
            return Ok(Some(i));
        }
        let mut fds: Vec<PollFd> = children
            .iter()
            .filter(|c| c.status.is_none())
            .map(|c| PollFd::new(c.pidfd.as_fd(), PollFlags::POLLIN))
            .collect();
        if fds.is_empty() {
            return Ok(None);
        }
        let Some(timeout) = poll_timeout(deadline) else {
            return Ok(None);
        };
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(errno) => return Err(errno).context("poll on the tasks"),
        }
    }
}

/// What poll waits until `deadline` (None: for ever): at least 1 ms; None once it has passed.
fn poll_timeout(deadline: Option<Instant>) -> Option<PollTimeout> {
    let Some(d) = deadline else {
        return Some(PollTimeout::NONE);
    };
    let left = d.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return None;
    }
    let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
    Some(PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX))
}

/// What the tasks need to reach each pair's objects.
fn handles(objects: &[Option<PairObjects>]) -> Vec<Handle> {
    objects
        .iter()
        .map(|o| o.as_ref().expect("objects exist").handle())
        .collect()
}

/// Runs the pairs as forked processes; returns the measured time.
pub(crate) fn run_processes(
    plan: &Plan,
    objects: &mut [Option<PairObjects>],
    control: &Control,
    slots: &[Arc<SharedSlot>],
    state: &RunState,
) -> Result<Duration> {
    let handles = handles(objects);
    let (ready_r, ready_w) = pipe().context("pipe for the start")?;
    let (go_r, go_w) = pipe().context("pipe for the start")?;
    let fds = StartFds {
        ready_r: ready_r.as_fd(),
        ready_w: ready_w.as_fd(),
        go_r: go_r.as_fd(),
        go_w: go_w.as_fd(),
    };
    let mut children = fork_tasks(plan, &handles, &fds, control, slots, state)?;
    // The parent holds no end of the pairs' pipes: a dead task's partner must see EOF/EPIPE.
    for o in objects.iter_mut() {
        if matches!(o, Some(PairObjects::Pipe(_))) {
            *o = None;
        }
    }
    drop(ready_w);
    drop(go_r);

    // Every task reports once it is pinned: 0 = ready.
    let mut ready = vec![0u8; children.len()];
    let got = read_full(ready_r.as_fd(), &mut ready);
    if got < ready.len() || ready.iter().any(|&b| b != 0) {
        drop(go_w); // the waiting tasks read EOF and leave
        let _ = wait_all(&mut children, WIND_DOWN);
        state.park_if_terminating();
        return Err(start_failure(&children, control));
    }

    let t0 = Instant::now();
    let _ = state.t0.set(t0);
    let go = vec![1u8; children.len()];
    write_full(go_w.as_fd(), &go).context("starting the tasks")?;
    drop(go_w);

    let early = wait_any(&mut children, plan.duration)?;
    control.stop_flag().store(1, SeqCst);
    let elapsed = t0.elapsed();
    if let Some(first) = early {
        return Err(mid_run_failure(
            &mut children,
            first,
            objects,
            control,
            state,
        ));
    }
    let stuck = wait_all(&mut children, WIND_DOWN);
    state.park_if_terminating();
    if let Some(c) = children.iter().find(|c| !c.ok()) {
        let cause = control
            .pair(c.pair)
            .error(c.role)
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        let stuck = if stuck { " (did not stop in time)" } else { "" };
        bail!("{}{cause}{stuck}", c.describe());
    }
    Ok(elapsed)
}

/// Forks both tasks of every pair, each watched through a pidfd; on a failure kills the
/// ones already forked.
fn fork_tasks(
    plan: &Plan,
    handles: &[Handle],
    fds: &StartFds,
    control: &Control,
    slots: &[Arc<SharedSlot>],
    state: &RunState,
) -> Result<Vec<Child>> {
    let parent = getpid();
    let mut children: Vec<Child> = Vec::with_capacity(2 * plan.pairs());
    for (k, &(cpu_a, cpu_b)) in plan.cpus.iter().enumerate() {
        for (role, cpu) in [(0, cpu_a), (1, cpu_b)] {
            // SAFETY: the child only runs child_main, which makes async-signal-safe calls
            // on memory prepared before the fork and never returns.
            let child = match unsafe { fork() } {
                Ok(ForkResult::Parent { child }) => child,
                Ok(ForkResult::Child) => {
                    child_main(parent, fds, handles, k, role, cpu, control, &slots[k])
                }
                Err(errno) => {
                    state.kill_tasks_quietly(&children);
                    return Err(errno).with_context(|| format!("fork for {}", task_name(k, role)));
                }
            };
            let pid = child.as_raw();
            state.pids[2 * k + role].store(pid, SeqCst);
            let pidfd = match pidfd_open(pid) {
                Ok(fd) => fd,
                Err(err) => {
                    // Our own child, not yet reaped: kill and reap it.
                    let _ = kill(child, Signal::SIGKILL);
                    let _ = waitpid(child, None);
                    state.kill_tasks_quietly(&children);
                    return Err(err).context("pidfd_open");
                }
            };
            children.push(Child {
                pid,
                pidfd,
                pair: k,
                role,
                status: None,
            });
        }
    }
    Ok(children)
}

/// Why the tasks did not all report ready: the first task's own error, or how each ended.
fn start_failure(children: &[Child], control: &Control) -> anyhow::Error {
    let failed = children
        .iter()
        .find_map(|c| control.pair(c.pair).error(c.role).map(|e| (c, e)));
    match failed {
        Some((c, e)) => anyhow!("{} could not start: {e}", task_name(c.pair, c.role)),
        None => anyhow!(
            "a task ended before the start: {}",
            children
                .iter()
                .map(Child::describe)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// A task ended mid-run (`first` of `children`): stops the others and says which task
/// ended, how, and what became of its partner.
fn mid_run_failure(
    children: &mut [Child],
    first: usize,
    objects: &mut [Option<PairObjects>],
    control: &Control,
    state: &RunState,
) -> anyhow::Error {
    state.park_if_terminating();
    let i = culprit(children, first, control);
    // Remove the pair's objects so its survivor's blocked call fails (EIDRM); a pipe
    // survivor already sees EOF or EPIPE. The other pairs stop on the flag.
    objects[children[i].pair] = None;
    let stuck = wait_all(children, WIND_DOWN);
    state.park_if_terminating();
    let dead = &children[i];
    let partner = children
        .iter()
        .find(|c| c.pair == dead.pair && c.role != dead.role)
        .expect("pairs have two tasks");
    let mut msg = format!("{} mid-run", dead.describe());
    if let Some(e) = control.pair(dead.pair).error(dead.role) {
        if !e.peer_gone() {
            msg += &format!(" after {e}");
        }
    }
    msg += &format!(
        "; its partner (pid {}) {}",
        partner.pid,
        match control.pair(partner.pair).error(partner.role) {
            Some(e) => format!("ended with {e}"),
            None => "ended".to_string(),
        }
    );
    if stuck {
        msg += "; tasks that did not stop were killed";
    }
    anyhow!(msg)
}

/// The task to blame for an early end. A pipe task whose partner was killed can read EOF
/// and exit before the kernel reports the partner's death: then the partner is the one.
fn culprit(children: &mut [Child], first: usize, control: &Control) -> usize {
    let c = &children[first];
    let peer_gone = control
        .pair(c.pair)
        .error(c.role)
        .is_some_and(|e| e.peer_gone());
    if !peer_gone {
        return first;
    }
    let Some(j) = children
        .iter()
        .position(|p| p.pair == c.pair && p.role != c.role)
    else {
        return first;
    };
    let deadline = Instant::now() + Duration::from_secs(1);
    while !children[j].try_reap() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let p = &children[j];
    let blamed = matches!(p.status, Some(s) if libc::WIFSIGNALED(s))
        || (p.status.is_some()
            && !p.ok()
            && !control
                .pair(p.pair)
                .error(p.role)
                .is_some_and(|e| e.peer_gone()));
    if blamed {
        j
    } else {
        first
    }
}

/// Waits for every child; kills those still running after `grace`. True if any was killed.
fn wait_all(children: &mut [Child], grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match wait_any(children, Some(left)) {
            Ok(Some(_)) => continue,
            Ok(None) if children.iter().all(|c| c.status.is_some()) => return false,
            _ => break,
        }
    }
    for c in children.iter_mut().filter(|c| c.status.is_none()) {
        // Our child, not reaped yet (no status): the pid cannot have been reused.
        let _ = kill(Pid::from_raw(c.pid), Signal::SIGKILL);
        let mut status = 0;
        // Raw waitpid for the status word (see Child::try_reap).
        // SAFETY: `status` is a live int for waitpid to fill; `c.pid` is our unreaped child.
        unsafe { libc::waitpid(c.pid, &mut status, 0) };
        c.status = Some(status);
    }
    true
}

impl RunState {
    fn kill_tasks_quietly(&self, children: &[Child]) {
        for c in children {
            // Ours, and not reaped yet: forking is still under way.
            let _ = kill(Pid::from_raw(c.pid), Signal::SIGKILL);
            let _ = waitpid(Pid::from_raw(c.pid), None);
        }
    }
}

/// The start pipes, borrowed from the parent's OwnedFds (a forked task's copies of those are
/// never dropped: it leaves by _exit).
struct StartFds<'a> {
    ready_r: BorrowedFd<'a>,
    ready_w: BorrowedFd<'a>,
    go_r: BorrowedFd<'a>,
    go_w: BorrowedFd<'a>,
}

/// The forked task. Only system calls and stores to shared memory until `_exit`: it never
/// returns into the parent's code, runs no destructor and no atexit hook (those would
/// remove the run's objects).
#[allow(clippy::too_many_arguments)]
fn child_main(
    parent: Pid,
    fds: &StartFds,
    handles: &[Handle],
    pair: usize,
    role: usize,
    cpu: Option<usize>,
    control: &Control,
    slot: &SharedSlot,
) -> ! {
    // Die with the parent, whatever kills it.
    let _ = prctl::set_pdeathsig(Signal::SIGKILL);
    if getppid() != parent {
        exit_task(3);
    }
    // Ctrl-C reaches the whole process group: the parent handles it and kills us.
    for (sig, action) in [
        (Signal::SIGINT, SigHandler::SigIgn),
        (Signal::SIGTERM, SigHandler::SigDfl),
        (Signal::SIGHUP, SigHandler::SigDfl),
        (Signal::SIGPIPE, SigHandler::SigIgn),
    ] {
        // SAFETY: SIG_IGN and SIG_DFL install no handler of ours.
        let _ = unsafe { signal(sig, action) };
    }
    // A panic here must not run the parent's clean-up (it would remove every object).
    std::panic::set_hook(Box::new(|info| {
        crate::errln!("schedlab ipc-pingpong: a task panicked: {info}");
        exit_task(101)
    }));
    // The parent's OwnedFds of these stay in its code, which this task never returns to: each
    // is closed once, here.
    let _ = close(fds.go_w.as_raw_fd());
    let _ = close(fds.ready_r.as_raw_fd());
    // Keep only this task's two pipe ends, so a dead partner means EOF or EPIPE.
    for (k, h) in handles.iter().enumerate() {
        if let Handle::Pipe(p) = h {
            for (j, &fd) in p.iter().enumerate() {
                let mine = k == pair
                    && (if role == 0 {
                        j == 1 || j == 2
                    } else {
                        j == 0 || j == 3
                    });
                if !mine {
                    let _ = close(fd);
                }
            }
        }
    }
    let pinned = pin_self(cpu);
    let status: u8 = if pinned.is_ok() { 0 } else { 1 };
    if let Err(e) = pinned {
        control.pair(pair).record(role, e);
    }
    let _ = write(fds.ready_w, &[status]);
    let _ = close(fds.ready_w.as_raw_fd());
    if status != 0 {
        exit_task(1);
    }
    let mut go = [0u8];
    let n = read(fds.go_r, &mut go);
    let _ = close(fds.go_r.as_raw_fd());
    if n != Ok(1) {
        exit_task(0); // the run was called off before it began
    }
    match task_body(handles[pair], role, control, pair, slot) {
        Ok(()) => exit_task(0),
        Err(e) => {
            control.pair(pair).record(role, e);
            exit_task(1)
        }
    }
}

/// Ends a forked task at once: no destructor, no atexit hook, none of the parent's clean-up.
fn exit_task(code: i32) -> ! {
    // SAFETY: _exit (which nix lacks) ends this process and runs nothing of ours.
    unsafe { libc::_exit(code) }
}

fn read_full(fd: BorrowedFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match read(fd, &mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    got
}

fn write_full(fd: BorrowedFd, buf: &[u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match write(fd, &buf[done..]) {
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Threads

/// Runs the pairs as threads of this process; returns the measured time.
pub(crate) fn run_threads(
    plan: &Plan,
    objects: &mut [Option<PairObjects>],
    control: &Arc<Control>,
    slots: &[Arc<SharedSlot>],
    state: &RunState,
) -> Result<Duration> {
    let handles = handles(objects);
    let tasks = 2 * plan.pairs();
    let barrier = Arc::new(Barrier::new(tasks + 1));
    let setup_failed = Arc::new(AtomicBool::new(false));
    // Each thread writes its index here when it ends: the main thread learns of an early end
    // without polling.
    let (done_r, done_w) = pipe().context("pipe for the tasks' ends")?;
    let done_w = Arc::new(done_w);
    for (k, &(cpu_a, cpu_b)) in plan.cpus.iter().enumerate() {
        for (role, cpu) in [(0, cpu_a), (1, cpu_b)] {
            let (barrier, failed, control, slot, done_w) = (
                barrier.clone(),
                setup_failed.clone(),
                control.clone(),
                slots[k].clone(),
                done_w.clone(),
            );
            let handle = handles[k];
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{k}", ROLE[role]))
                .stack_size(64 * 1024)
                .spawn(move || {
                    if let Err(e) = pin_self(cpu) {
                        control.pair(k).record(role, e);
                        failed.store(true, SeqCst);
                    }
                    barrier.wait();
                    if !failed.load(SeqCst) {
                        if let Err(e) = task_body(handle, role, &control, k, &slot) {
                            control.pair(k).record(role, e);
                        }
                    }
                    let me = (2 * k + role) as u32;
                    let _ = write(&*done_w, &me.to_ne_bytes());
                });
            if let Err(err) = spawned {
                // The threads already started wait at the barrier: release them unrun.
                setup_failed.store(true, SeqCst);
                bail!("starting {}: {err}", task_name(k, role));
            }
        }
    }
    barrier.wait();
    if setup_failed.load(SeqCst) {
        let _ = collect_ends(done_r.as_fd(), tasks, WIND_DOWN);
        let failed = (0..tasks).find_map(|i| control.pair(i / 2).error(i % 2).map(|e| (i, e)));
        return Err(match failed {
            Some((i, e)) => anyhow!("{} could not start: {e}", task_name(i / 2, i % 2)),
            None => anyhow!("a task could not start"),
        });
    }
    let t0 = Instant::now();
    let _ = state.t0.set(t0);
    let early = next_end(done_r.as_fd(), plan.duration)?;
    control.stop_flag().store(1, SeqCst);
    let elapsed = t0.elapsed();
    let mut ended = 0;
    if let Some(i) = early {
        ended = 1;
        let pair = i / 2;
        // Wake the partner: remove a SysV object (EIDRM), or hand a pipe task a last token.
        if let Some(PairObjects::Pipe(fds)) = &objects[pair] {
            control.pair(pair).quit.store(1, SeqCst);
            for w in [&fds[1], &fds[3]] {
                let _ = write(w, &[0u8; endpoint::TOKEN_LEN]);
            }
        } else {
            objects[pair] = None;
        }
    }
    let all_ended = collect_ends(done_r.as_fd(), tasks - ended, WIND_DOWN);
    state.park_if_terminating();
    let first_error = (0..tasks).find_map(|i| control.pair(i / 2).error(i % 2).map(|e| (i, e)));
    if let Some(i) = early {
        let cause = control
            .pair(i / 2)
            .error(i % 2)
            .map(|e| format!(" with {e}"))
            .unwrap_or_default();
        bail!("{} ended mid-run{cause}", task_name(i / 2, i % 2));
    }
    if let Some((i, e)) = first_error {
        bail!("{} failed: {e}", task_name(i / 2, i % 2));
    }
    if !all_ended {
        bail!("tasks did not stop within {} s", WIND_DOWN.as_secs());
    }
    Ok(elapsed)
}

/// Waits for one task's end, or for `timeout` (None: forever). Returns its index.
fn next_end(fd: BorrowedFd, timeout: Option<Duration>) -> Result<Option<usize>> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let Some(timeout) = poll_timeout(deadline) else {
            return Ok(None);
        };
        match poll(&mut [PollFd::new(fd, PollFlags::POLLIN)], timeout) {
            Ok(0) | Err(Errno::EINTR) => {}
            Ok(_) => {
                let mut idx = [0u8; 4];
                if read_full(fd, &mut idx) == 4 {
                    return Ok(Some(u32::from_ne_bytes(idx) as usize));
                }
            }
            Err(errno) => return Err(errno).context("poll on the tasks"),
        }
    }
}

/// Waits until `n` tasks have ended or `grace` passes. True if all did.
fn collect_ends(fd: BorrowedFd, n: usize, grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    for _ in 0..n {
        let left = deadline.saturating_duration_since(Instant::now());
        match next_end(fd, Some(left)) {
            Ok(Some(_)) => {}
            _ => return false,
        }
    }
    true
}
