//! Everything that reads the kernel: which tasks belong to a workload, their
//! schedstat/stat/status, cgroup usage, /proc/stat, PSI, autogroup. Returns raw cumulative
//! counters with a timestamp (a Sample). Nothing else in the program opens /proc.
//!
//! Cost is the product's own noise, so the probe keeps every per-task file open and re-reads
//! it with `pread` at offset 0 (about ten times cheaper than open/read/close), re-lists a
//! process's threads only when its thread count changes or once a second, and finds a
//! group's processes by a /proc scan only when something forked (the /proc/stat `processes`
//! counter moved) or once a second, reading /proc/PID/stat only for pids it has not seen.

pub mod parse;
pub mod sample;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use sample::{
    CgroupSample, Health, MachineSample, ProcessSample, Sample, TaskSample, WorkloadSample,
};

/// A workload to watch.
#[derive(Clone)]
pub struct Target {
    pub id: u32,
    pub name: String,
    /// Its process group: every process in it, and all their threads. 0 = the leader alone.
    pub pgid: u32,
    pub leader: u32,
    /// Its own cgroup directory, if it has one (exact accounting).
    pub cgroup: Option<PathBuf>,
    pub counters: Option<crate::sys::counters::CounterRegion>,
    pub ops_unit: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("pgid", &self.pgid)
            .field("leader", &self.leader)
            .field("cgroup", &self.cgroup)
            .finish()
    }
}

/// Where and how often to read.
#[derive(Clone, Debug)]
pub struct ProbeConfig {
    /// "/proc", or a fake tree in tests.
    pub proc_root: PathBuf,
    /// "/sys", or a fake tree in tests.
    pub sys_root: PathBuf,
    /// How often to read status for voluntary/involuntary switches (and per-thread nice).
    pub status_every: Duration,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            proc_root: "/proc".into(),
            sys_root: "/sys".into(),
            status_every: Duration::from_secs(1),
        }
    }
}

/// How often the pid→pgid cache is rebuilt from scratch, catching processes that changed
/// group after we first saw them.
const CACHE_REFRESH_NS: u64 = 5_000_000_000;
/// Rescan /proc at least this often.
const RELIST_NS: u64 = 1_000_000_000;
/// Re-list a process's threads at least this often. A change in its thread count, or a
/// thread found gone at its read, re-lists at the next sweep; this only catches an exit and a birth
/// between two sweeps that left the count the same. Listing 1,000 threads costs more than
/// a sweep of their schedstat, so it is not done every second.
const TASK_RELIST_NS: u64 = 5_000_000_000;
/// Re-read every thread's nice at least this often (at once when the main thread's changes:
/// a renice of a whole workload touches the main thread too).
const NICE_EVERY_NS: u64 = 5_000_000_000;

/// A file kept open and re-read from offset 0; or, when descriptors run out, a path
/// reopened each time.
enum Reader {
    Open(File),
    Path(PathBuf),
}

/// Why a read failed.
enum ReadErr {
    /// The task or process has exited (ENOENT, ESRCH).
    Gone,
    /// Not allowed (hidepid, permissions) or something else; the reason.
    Failed(String),
}

fn classify(err: io::Error, path: &Path) -> ReadErr {
    match err.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ESRCH) => ReadErr::Gone,
        _ if path.as_os_str().is_empty() => ReadErr::Failed(err.to_string()),
        _ => ReadErr::Failed(format!("{}: {err}", path.display())),
    }
}

impl Reader {
    fn open(path: PathBuf) -> Result<Reader, ReadErr> {
        match File::open(&path) {
            Ok(f) => Ok(Reader::Open(f)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                Ok(Reader::Path(path))
            }
            Err(e) => Err(classify(e, &path)),
        }
    }

    /// Reads the whole file into `buf` (cleared first).
    fn read<'a>(&self, buf: &'a mut Vec<u8>) -> Result<&'a [u8], ReadErr> {
        match self {
            // The caller names the file: paths are not kept per open file.
            Reader::Open(f) => pread_all(f, buf).map_err(|e| classify(e, Path::new(""))),
            Reader::Path(p) => {
                let f = File::open(p).map_err(|e| classify(e, p))?;
                pread_all(&f, buf).map_err(|e| classify(e, p))
            }
        }
    }
}

fn pread_all<'a>(f: &File, buf: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
    use std::os::fd::AsRawFd;
    buf.clear();
    if buf.capacity() < 4096 {
        buf.reserve(4096);
    }
    loop {
        let len = buf.len();
        let spare = buf.capacity() - len;
        // pread straight into the spare capacity: no zero-filling of a buffer per read.
        let n = unsafe {
            libc::pread(
                f.as_raw_fd(),
                buf.as_mut_ptr().add(len).cast(),
                spare,
                len as libc::off_t,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        // SAFETY: the kernel wrote n bytes there.
        unsafe { buf.set_len(len + n as usize) };
        // /proc files are produced whole by one read when the buffer is large enough; only a
        // full buffer needs another round.
        if n == 0 || buf.len() < buf.capacity() {
            break;
        }
        buf.reserve(buf.capacity());
    }
    Ok(&buf[..])
}

fn read_path(path: &Path, buf: &mut Vec<u8>) -> Result<(), ReadErr> {
    let f = File::open(path).map_err(|e| classify(e, path))?;
    pread_all(&f, buf).map_err(|e| classify(e, path))?;
    Ok(())
}

struct TaskState {
    schedstat: Reader,
    status: Option<Reader>,
    /// Read on status ticks only, for per-thread nice and policy.
    stat: Option<Reader>,
    /// Timeslices at the last status read: a thread not scheduled since cannot have switched
    /// (but for at most one switch-out, counted when it next runs), so its status is skipped.
    status_slices: u64,
    sample: TaskSample,
}

struct ProcState {
    start: u64,
    /// Files of this process that could not be opened or read, until the next re-list.
    notes: Vec<String>,
    stat: Reader,
    listed_ns: u64,
    /// When per-thread nice was last read, and the main thread's (nice, policy) then.
    nice_ns: u64,
    main_sched: (i32, u32),
    tasks: HashMap<u32, TaskState>,
    sample: ProcessSample,
}

#[derive(Default)]
struct GroupState {
    /// The leader's start time when first seen, to tell a reused pid.
    leader_start: Option<u64>,
    procs: HashMap<u32, ProcState>,
}

/// The sampler. Keeps descriptors and caches between sweeps; `sample` is cheap.
pub struct Probe {
    cfg: ProbeConfig,
    buf: Vec<u8>,
    proc_stat: Reader,
    psi: Option<Reader>,
    autogroup_enabled: Option<Reader>,
    schedstat: Option<Reader>,
    /// pid → (pgid, start) for every process seen in /proc.
    pid_cache: HashMap<u32, (u32, u64)>,
    /// Pids whose stat could not be read at the last scan, and why (hidepid, permissions).
    unreadable: HashMap<u32, String>,
    cache_built_ns: u64,
    scanned_ns: u64,
    /// /proc/stat `processes` now, and when /proc was last scanned.
    last_forks: u64,
    scan_forks: u64,
    groups: HashMap<u32, GroupState>,
    status_ns: u64,
    probe_cpu_ns: u64,
    /// Status values carried between status sweeps.
    status_every_ns: u64,
    /// Threads read in the last sweep, for the status budget.
    threads_last: u64,
}

/// Most per-thread status files read per second, on average. One costs ≈12 µs here (ten
/// times a schedstat read), so this caps status at ≈0.6% of a CPU: with more threads than
/// this, switches are read less often than asked (1,000 threads: every 2 s).
pub const STATUS_READS_PER_SEC: u64 = 500;

/// How often status is read: as asked, or less often when `threads` would exceed the budget.
/// Zero asks for status at every sweep (tests, benches): no budget then.
fn status_period_ns(asked_ns: u64, threads: u64) -> u64 {
    if asked_ns == 0 {
        return 0;
    }
    asked_ns.max(threads * 1_000_000_000 / STATUS_READS_PER_SEC)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in ns: the clock Samples are stamped with.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

impl Probe {
    pub fn new(cfg: ProbeConfig) -> anyhow::Result<Probe> {
        use anyhow::Context;
        let stat_path = cfg.proc_root.join("stat");
        let proc_stat = Reader::open(stat_path.clone())
            .map_err(|e| match e {
                ReadErr::Gone => format!("{} does not exist", stat_path.display()),
                ReadErr::Failed(s) => s,
            })
            .map_err(anyhow::Error::msg)
            .context("opening the machine counters (is /proc mounted?)")?;
        let opt = |rel: &str| Reader::open(cfg.proc_root.join(rel)).ok();
        raise_fd_limit();
        Ok(Probe {
            psi: opt("pressure/cpu"),
            autogroup_enabled: opt("sys/kernel/sched_autogroup_enabled"),
            schedstat: opt("schedstat"),
            proc_stat,
            buf: Vec::with_capacity(4096),
            pid_cache: HashMap::new(),
            unreadable: HashMap::new(),
            cache_built_ns: 0,
            scanned_ns: 0,
            last_forks: 0,
            scan_forks: u64::MAX,
            groups: HashMap::new(),
            status_ns: 0,
            probe_cpu_ns: 0,
            status_every_ns: cfg.status_every.as_nanos() as u64,
            threads_last: 0,
            cfg,
        })
    }

    /// Changes how often status (voluntary/involuntary switches) is read.
    pub fn set_status_every(&mut self, d: Duration) {
        self.cfg.status_every = d;
        self.status_every_ns = d.as_nanos() as u64;
    }

    pub fn config(&self) -> &ProbeConfig {
        &self.cfg
    }

    /// One sweep over the machine and every target.
    pub fn sample(&mut self, targets: &[Target]) -> Sample {
        let cpu0 = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        let t0 = monotonic_ns();
        let machine = self.read_machine();
        let forks = self.last_forks;

        // Forget workloads no longer asked for.
        let wanted: HashSet<u32> = targets.iter().map(|t| t.id).collect();
        self.groups.retain(|id, _| wanted.contains(id));
        let new_target = targets.iter().any(|t| !self.groups.contains_key(&t.id));

        let refresh = t0.saturating_sub(self.cache_built_ns) >= CACHE_REFRESH_NS;
        let scan = refresh
            || new_target
            || forks != self.scan_forks
            || t0.saturating_sub(self.scanned_ns) >= RELIST_NS;
        if scan {
            self.scan_proc(refresh, t0);
            self.scan_forks = forks;
        }

        // Status (voluntary/involuntary, per-thread nice) is due with a little slack, so a
        // 1 s period at a 500 ms interval does not slip to 1.5 s.
        let status_every_ns = status_period_ns(self.status_every_ns, self.threads_last);
        let status_due =
            self.status_ns == 0 || t0 + status_every_ns / 10 >= self.status_ns + status_every_ns;
        if status_due {
            self.status_ns = t0;
        }

        let mut workloads = Vec::with_capacity(targets.len());
        for target in targets {
            workloads.push(self.sample_target(target, scan, status_due, t0));
        }
        self.threads_last = workloads
            .iter()
            .flat_map(|w| &w.processes)
            .map(|p| p.threads.len() as u64)
            .sum();
        let t1 = monotonic_ns();
        self.probe_cpu_ns += clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).saturating_sub(cpu0);
        Sample {
            t_ns: t0 + (t1 - t0) / 2,
            machine,
            workloads,
            observer_cpu_ns: clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID),
            probe_cpu_ns: self.probe_cpu_ns,
            status_t_ns: self.status_ns,
            status_every_ns,
        }
    }
}

impl Probe {
    fn read_machine(&mut self) -> MachineSample {
        let mut m = MachineSample::default();
        if let Ok(b) = self.proc_stat.read(&mut self.buf) {
            if let Some(ps) = parse::proc_stat(b) {
                m.cpus = ps.cpus.max(1);
                m.busy_ns = ps.busy_ticks * parse::NS_PER_TICK;
                m.ctxt = ps.ctxt;
                m.procs_running = ps.procs_running;
                self.last_forks = ps.processes;
            }
        }
        if let Some(r) = &self.psi {
            if let Some((avg10, total)) = r.read(&mut self.buf).ok().and_then(parse::psi_some) {
                m.psi_some_avg10 = Some(avg10);
                m.psi_some_total_us = Some(total);
            }
        }
        if let Some(r) = &self.autogroup_enabled {
            m.autogroup = r
                .read(&mut self.buf)
                .ok()
                .and_then(parse::single_u64)
                .is_some_and(|v| v != 0);
        }
        if let Some(r) = &self.schedstat {
            if let Some((run, wait)) = r.read(&mut self.buf).ok().and_then(parse::proc_schedstat) {
                m.rq_run_ns = Some(run);
                m.rq_wait_ns = Some(wait);
            }
        }
        m
    }

    /// Lists /proc and learns the group and start time of every process not seen before.
    fn scan_proc(&mut self, refresh: bool, now: u64) {
        let Ok(dir) = std::fs::read_dir(&self.cfg.proc_root) else {
            return;
        };
        if refresh {
            self.pid_cache.clear();
            self.unreadable.clear();
            self.cache_built_ns = now;
        }
        let mut seen = HashSet::with_capacity(self.pid_cache.len() + 16);
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            seen.insert(pid);
            if self.pid_cache.contains_key(&pid) {
                continue;
            }
            let path = self.cfg.proc_root.join(name).join("stat");
            match read_path(&path, &mut self.buf) {
                Ok(()) => {
                    if let Some(st) = parse::stat(&self.buf) {
                        self.pid_cache.insert(pid, (st.pgrp, st.start));
                        self.unreadable.remove(&pid);
                    }
                }
                Err(ReadErr::Failed(why)) => {
                    // Cached as belonging to no group, so it is retried only at a refresh.
                    self.pid_cache.insert(pid, (u32::MAX, 0));
                    self.unreadable.insert(pid, why);
                }
                Err(ReadErr::Gone) => {}
            }
        }
        self.pid_cache.retain(|pid, _| seen.contains(pid));
        self.unreadable.retain(|pid, _| seen.contains(pid));
        self.scanned_ns = now;
    }

    fn sample_target(
        &mut self,
        target: &Target,
        scan: bool,
        status_due: bool,
        now: u64,
    ) -> WorkloadSample {
        let Probe {
            cfg,
            buf,
            pid_cache,
            unreadable,
            groups,
            ..
        } = self;
        let group = groups.entry(target.id).or_default();
        let mut problems: Vec<String> = Vec::new();
        if let Some(why) = unreadable.get(&target.leader) {
            problems.push(format!("cannot read the leader's stat: {why}"));
        }

        // The leader's identity, to tell its exit from a reused pid.
        if let Some(&(_, start)) = pid_cache
            .get(&target.leader)
            .filter(|(pgid, _)| *pgid != u32::MAX)
        {
            match group.leader_start {
                None => group.leader_start = Some(start),
                Some(s) if s != start && group.procs.is_empty() => {
                    problems.push(format!(
                        "pid {} now belongs to another process (reused)",
                        target.leader
                    ));
                }
                _ => {}
            }
        }

        if scan {
            // A process no longer listed in /proc (or listed as another) is gone.
            group
                .procs
                .retain(|pid, p| pid_cache.get(pid).map(|e| e.1) == Some(p.start));
            let members: Vec<(u32, u64)> = if target.pgid == 0 {
                pid_cache
                    .get(&target.leader)
                    .filter(|(_, start)| Some(*start) == group.leader_start)
                    .map(|&(_, start)| vec![(target.leader, start)])
                    .unwrap_or_default()
            } else {
                pid_cache
                    .iter()
                    .filter(|(_, (pgid, _))| *pgid == target.pgid)
                    .map(|(&pid, &(_, start))| (pid, start))
                    .collect()
            };
            for (pid, start) in members {
                if group.procs.get(&pid).map(|p| p.start) == Some(start) {
                    continue;
                }
                match open_process(&cfg.proc_root, pid, start, buf, now) {
                    Ok(Some(p)) => {
                        group.procs.insert(pid, p);
                    }
                    Ok(None) => {}
                    Err(why) => problems.push(why),
                }
            }
        }

        let mut gone_pids = Vec::new();
        for (&pid, p) in group.procs.iter_mut() {
            let st = match p.stat.read(buf) {
                Ok(b) => parse::stat(b),
                Err(ReadErr::Gone) => None,
                Err(ReadErr::Failed(why)) => {
                    problems.push(format!("{}/{pid}/stat: {why}", cfg.proc_root.display()));
                    None
                }
            };
            let Some(st) = st else {
                gone_pids.push(pid);
                continue;
            };
            if st.start != p.start || (target.pgid != 0 && st.pgrp != target.pgid) {
                // It moved to another group (setsid, setpgid) or is not the process we knew.
                gone_pids.push(pid);
                continue;
            }
            p.sample.ppid = st.ppid;
            p.sample.session = st.session;
            p.sample.cpu_ticks = st.cpu_ticks;
            p.sample.child_ticks = st.child_ticks;
            if st.state == b'Z' {
                // A zombie has no threads left to read; its times stay in its stat.
                p.tasks.clear();
                continue;
            }
            if st.num_threads as usize != p.tasks.len()
                || now.saturating_sub(p.listed_ns) >= TASK_RELIST_NS
            {
                list_tasks(&cfg.proc_root, pid, p, now);
            }
            let main_nice = st.nice;
            let nice_due = status_due
                && ((st.nice, st.policy) != p.main_sched
                    || now.saturating_sub(p.nice_ns) >= NICE_EVERY_NS);
            if nice_due {
                p.nice_ns = now;
                p.main_sched = (st.nice, st.policy);
            }
            p.tasks.retain(|&tid, t| {
                match t.schedstat.read(buf) {
                    Ok(b) => match parse::schedstat(b) {
                        Some((run, wait, slices)) => {
                            t.sample.run_ns = run;
                            t.sample.wait_ns = wait;
                            t.sample.slices = slices;
                            // A vDSO call (tens of ns) next to the read's syscall (~1 µs).
                            t.sample.read_ns = monotonic_ns();
                        }
                        None => return false,
                    },
                    Err(ReadErr::Gone) => return false,
                    Err(ReadErr::Failed(why)) => {
                        problems.push(format!(
                            "{}/{pid}/task/{tid}/schedstat: {why}",
                            cfg.proc_root.display()
                        ));
                        return false;
                    }
                }
                if tid == pid {
                    // The process stat is the main thread's: its nice and policy are free.
                    t.sample.nice = main_nice;
                    t.sample.policy = st.policy;
                }
                if status_due && t.sample.slices != t.status_slices {
                    t.status_slices = t.sample.slices;
                    if let Some(r) = &t.status {
                        match r.read(buf) {
                            Ok(b) => {
                                if let Some((v, i)) = parse::status_switches(b) {
                                    t.sample.vol = Some(v);
                                    t.sample.invol = Some(i);
                                }
                            }
                            Err(ReadErr::Gone) => return false,
                            Err(ReadErr::Failed(why)) => {
                                p.notes.push(format!(
                                    "{}/{pid}/task/{tid}/status: {why}",
                                    cfg.proc_root.display()
                                ));
                                t.status = None;
                            }
                        }
                    }
                }
                if nice_due {
                    if let Some(r) = t.stat.as_ref().filter(|_| tid != pid) {
                        if let Some(ts) = r.read(buf).ok().and_then(parse::stat) {
                            t.sample.nice = ts.nice;
                            t.sample.policy = ts.policy;
                        }
                    }
                }
                true
            });
            if status_due {
                p.sample.autogroup = read_autogroup(&cfg.proc_root, pid, buf);
            }
            problems.extend(p.notes.iter().cloned());
        }
        for pid in gone_pids {
            group.procs.remove(&pid);
            // Learn its new group (or its successor's) at the next scan.
            pid_cache.remove(&pid);
        }

        let mut processes: Vec<ProcessSample> = group
            .procs
            .values()
            .map(|p| {
                let mut s = p.sample.clone();
                s.threads = p.tasks.values().map(|t| t.sample.clone()).collect();
                s.threads.sort_by_key(|t| t.tid);
                s
            })
            .collect();
        processes.sort_by_key(|p| p.pid);

        let cgroup = target.cgroup.as_deref().and_then(|dir| {
            read_cgroup(&cfg.sys_root, dir, buf)
                .map_err(|why| problems.push(why))
                .ok()
        });

        if processes.is_empty() && target.leader != 0 {
            // Nothing left: tell a reused leader pid from a plain exit.
            let path = cfg.proc_root.join(format!("{}/stat", target.leader));
            if read_path(&path, buf).is_ok() {
                if let (Some(st), Some(start)) = (parse::stat(buf), group.leader_start) {
                    if st.start != start {
                        problems.push(format!(
                            "pid {} now belongs to another process (reused)",
                            target.leader
                        ));
                    }
                }
            }
        }
        problems.sort();
        problems.dedup();
        let health = if processes.is_empty() {
            Health::Gone(if problems.is_empty() {
                if target.pgid == 0 {
                    format!("process {} has exited", target.leader)
                } else {
                    format!("no process left in group {}", target.pgid)
                }
            } else {
                problems.join("; ")
            })
        } else if !problems.is_empty() {
            Health::Partial(problems.join("; "))
        } else {
            Health::Ok
        };

        WorkloadSample {
            id: target.id,
            name: target.name.clone(),
            ops_unit: target.ops_unit.clone(),
            pgid: target.pgid,
            leader: target.leader,
            ops: target.counters.as_ref().map(|c| c.total()),
            ops_expected: target.counters.as_ref().and_then(|c| c.expected_total()),
            finished: target.counters.as_ref().is_some_and(|c| c.finished()),
            processes,
            cgroup,
            health,
        }
    }
}

/// Opens a newly found member process. Ok(None): it exited or is not the one we listed.
fn open_process(
    proc_root: &Path,
    pid: u32,
    start: u64,
    buf: &mut Vec<u8>,
    now: u64,
) -> Result<Option<ProcState>, String> {
    let path = proc_root.join(pid.to_string()).join("stat");
    let stat = match Reader::open(path) {
        Ok(r) => r,
        Err(ReadErr::Gone) => return Ok(None),
        Err(ReadErr::Failed(why)) => return Err(why),
    };
    let st = match stat.read(buf) {
        Ok(b) => parse::stat(b),
        Err(ReadErr::Gone) => return Ok(None),
        Err(ReadErr::Failed(why)) => {
            return Err(format!("{}/{pid}/stat: {why}", proc_root.display()))
        }
    };
    let Some(st) = st.filter(|s| s.start == start) else {
        return Ok(None);
    };
    let mut p = ProcState {
        start,
        notes: Vec::new(),
        stat,
        listed_ns: 0,
        nice_ns: now,
        main_sched: (st.nice, st.policy),
        tasks: HashMap::new(),
        sample: ProcessSample {
            pid,
            ppid: st.ppid,
            start,
            session: st.session,
            autogroup: read_autogroup(proc_root, pid, buf),
            cpu_ticks: st.cpu_ticks,
            child_ticks: st.child_ticks,
            threads: Vec::new(),
        },
    };
    list_tasks(proc_root, pid, &mut p, now);
    Ok(Some(p))
}

fn read_autogroup(proc_root: &Path, pid: u32, buf: &mut Vec<u8>) -> Option<(u64, i32)> {
    let path = proc_root.join(format!("{pid}/autogroup"));
    read_path(&path, buf).ok()?;
    parse::autogroup(buf)
}

/// Brings a process's thread list up to date: opens files of new threads, drops dead ones.
fn list_tasks(proc_root: &Path, pid: u32, p: &mut ProcState, now: u64) {
    p.listed_ns = now;
    p.notes.clear();
    let dir = proc_root.join(format!("{pid}/task"));
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => {
            if let ReadErr::Failed(why) = classify(e, &dir) {
                p.notes.push(why);
            }
            return;
        }
    };
    let mut seen = HashSet::with_capacity(p.tasks.len() + 4);
    let mut buf = Vec::with_capacity(512);
    // An open that fails for another reason than an exit (EACCES under hidepid) is a note.
    let open = |path: PathBuf, notes: &mut Vec<String>| match Reader::open(path) {
        Ok(r) => Some(r),
        Err(ReadErr::Gone) => None,
        Err(ReadErr::Failed(why)) => {
            notes.push(why);
            None
        }
    };
    for entry in entries.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        seen.insert(tid);
        let tdir = dir.join(tid.to_string());
        if let Some(t) = p.tasks.get_mut(&tid) {
            if t.status.is_none() {
                // Retry a status file that could not be read before.
                t.status = open(tdir.join("status"), &mut p.notes);
            }
            continue;
        }
        let Some(schedstat) = open(tdir.join("schedstat"), &mut p.notes) else {
            continue;
        };
        let status = open(tdir.join("status"), &mut p.notes);
        let stat = open(tdir.join("stat"), &mut p.notes);
        let mut sample = TaskSample {
            tid,
            ..TaskSample::default()
        };
        if let Some(ts) = stat
            .as_ref()
            .and_then(|r| r.read(&mut buf).ok().and_then(parse::stat))
        {
            sample.nice = ts.nice;
            sample.policy = ts.policy;
        }
        p.tasks.insert(
            tid,
            TaskState {
                schedstat,
                status,
                stat,
                status_slices: u64::MAX,
                sample,
            },
        );
    }
    p.tasks.retain(|tid, _| seen.contains(tid));
}

/// Reads a workload's cgroup: usage from v2 cpu.stat or v1 cpuacct.usage, weight from v2
/// cpu.weight or v1 cpu.shares. With v1 the cpu and cpuacct controllers may be mounted
/// apart (/sys/fs/cgroup/cpu and /sys/fs/cgroup/cpuacct): the same relative path is tried
/// in the sibling hierarchy.
fn read_cgroup(sys_root: &Path, dir: &Path, buf: &mut Vec<u8>) -> Result<CgroupSample, String> {
    let base = sys_root.join("fs/cgroup");
    let siblings: Vec<PathBuf> = {
        let mut v = vec![dir.to_path_buf()];
        for (from, to) in [
            ("cpu", "cpuacct"),
            ("cpuacct", "cpu"),
            ("cpu,cpuacct", "cpu"),
        ] {
            if let Ok(rel) = dir.strip_prefix(base.join(from)) {
                v.push(base.join(to).join(rel));
            }
        }
        v
    };
    let mut usage = None;
    let mut weight = None;
    let mut version = 0;
    for d in &siblings {
        if usage.is_none() && read_path(&d.join("cpu.stat"), buf).is_ok() {
            if let Some(ns) = parse::cgroup2_usage_ns(buf) {
                usage = Some(ns);
                version = 2;
            }
        }
        if usage.is_none() && read_path(&d.join("cpuacct.usage"), buf).is_ok() {
            usage = parse::single_u64(buf);
            version = 1;
        }
        if weight.is_none() && read_path(&d.join("cpu.weight"), buf).is_ok() {
            weight = parse::single_u64(buf).map(|w| w as f64 * 1024.0 / 100.0);
        }
        if weight.is_none() && read_path(&d.join("cpu.shares"), buf).is_ok() {
            weight = parse::single_u64(buf).map(|w| w as f64);
        }
    }
    match usage {
        Some(usage_ns) => Ok(CgroupSample {
            path: dir.display().to_string(),
            version,
            usage_ns,
            weight,
        }),
        None => Err(format!(
            "{}: no cpu.stat usage_usec or cpuacct.usage (falling back to /proc)",
            dir.display()
        )),
    }
}

/// Lifts the soft descriptor limit to the hard one: the probe keeps three files open per
/// thread, and a 5,000-thread workload would exceed the usual 1,024.
fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The process group of a running pid, for watching an existing process a user names.
pub fn pgid_of(proc_root: &Path, pid: u32) -> anyhow::Result<u32> {
    let path = proc_root.join(format!("{pid}/stat"));
    let mut buf = Vec::new();
    match read_path(&path, &mut buf) {
        Ok(()) => parse::stat(&buf)
            .map(|s| s.pgrp)
            .ok_or_else(|| anyhow::anyhow!("{}: unexpected format", path.display())),
        Err(ReadErr::Gone) => anyhow::bail!("no process {pid}"),
        Err(ReadErr::Failed(why)) => anyhow::bail!("cannot read process {pid}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::status_period_ns;

    const S: u64 = 1_000_000_000;

    #[test]
    fn status_is_read_as_asked_until_the_budget_is_reached() {
        assert_eq!(status_period_ns(S, 10), S);
        assert_eq!(status_period_ns(S, 500), S);
        // 1,000 threads at 500 reads a second: every 2 s.
        assert_eq!(status_period_ns(S, 1000), 2 * S);
        assert_eq!(status_period_ns(5 * S, 1000), 5 * S);
        assert_eq!(status_period_ns(0, 5000), 0);
    }
}
