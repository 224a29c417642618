//! Everything that reads the kernel: which tasks belong to a workload, their
//! schedstat/stat/status, allowed CPUs and groups, cgroup usage, /proc/stat, PSI, autogroup,
//! and every other task on the machine. Returns raw cumulative counters with a timestamp (a
//! Sample). Outside the probe only `sys::proc` opens /proc (one process's stat, sysctls, this
//! process's own files), which tests/layout.rs holds.
//!
//! Cost is the product's own noise, so the probe keeps every per-task file open and re-reads
//! it with `pread` at offset 0 (about ten times cheaper than open/read/close), re-lists a
//! process's threads only when its thread count changes or every few seconds, and finds a
//! group's processes by a /proc scan only when something forked (the /proc/stat `processes`
//! counter moved) or once a second, reading /proc/PID/stat only for pids it has not seen. The
//! rest of the machine is listed once a second and read as often as the workloads while it is
//! busy and small, within a budget of tasks.

pub mod attach;
mod attrs;
mod budget;
mod cgroups;
pub mod host;
mod machine;
pub mod parse;
mod reader;
mod rest;
pub mod sample;
mod task;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use budget::{
    histogram_stride, read_stride, sched_budget, status_budget, status_period_ns, SchedReads,
    StatusReads, Suspects, SMALL_WORKLOAD_THREADS,
};
use parse::NS_PER_TICK;
use reader::{read_path, ReadErr, Reader};
use task::{ProcGone, ProcState, Sweep};

pub use budget::{
    HISTOGRAM_READS_PER_SEC, SCHEDSTAT_READS_PER_SEC, SCHEDSTAT_READS_PER_SEC_MAX,
    SCHED_READS_PER_SEC, STATUS_READS_PER_SEC,
};

pub use attach::Selector;
pub use sample::{
    CgroupNode, CgroupSample, CpuTimes, Health, LatencySample, Life, MachineSample, ProcessSample,
    RestProc, RestSample, RestTask, Sample, TaskSample, WorkloadSample,
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
    pub counters: Option<crate::sys::shared::counters::CounterRegion>,
    pub ops_unit: String,
    /// Processes schedlab did not start, chosen by this selector instead of `pgid` (which is
    /// then 0; `leader` is the pid of a pid selector, else 0).
    pub attach: Option<Selector>,
    /// Its tasks are paced by timers (the wakeup probe): waiting does not make more work.
    pub paced: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("pgid", &self.pgid)
            .field("leader", &self.leader)
            .field("cgroup", &self.cgroup)
            .field("attach", &self.attach)
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
/// Out-of-turn stat reads of threads that may be starving, a second: ≈3 µs each here, so
/// at most ≈0.15% of a CPU.
const SUSPECT_STATS_PER_SEC: u64 = 500;
/// Out-of-turn status reads (voluntary switches: did it sleep?), a second: ≈12 µs each, so
/// at most ≈0.12% of a CPU.
const SUSPECT_STATUS_PER_SEC: u64 = 100;
/// A CPU idle for less than this share of an interval was contended.
const CONTENDED_IDLE: f64 = 0.05;
/// How often the fair server's reserve (or the RT throttle) is re-read.
const RESERVE_EVERY_NS: u64 = 10_000_000_000;

/// What one sweep reads of every target.
#[derive(Clone, Copy)]
struct SweepPlan {
    /// /proc was re-listed: look for new processes.
    scan: bool,
    status_due: bool,
    contended: bool,
    stride: u32,
    /// Time since the last sweep, for the budgets a second.
    gap_ns: u64,
}

#[derive(Default)]
struct GroupState {
    /// The leader's start time when first seen, to tell a reused pid.
    leader_start: Option<u64>,
    procs: HashMap<u32, ProcState>,
    /// An attached workload's processes at the last scan (pid → start).
    held: HashMap<u32, u64>,
    /// Its threads' latency histograms, as merged so far.
    latency: crate::sys::shared::counters::LatencyMerge,
}

impl GroupState {
    /// Its threads are read one in `stride` a sweep only if it is big: a small workload's few
    /// threads every sweep, or a hog a FIFO task starves beside a thousand ping-pong threads
    /// reads stale.
    fn stride(&self, stride: u32) -> u32 {
        let threads: usize = self.procs.values().map(|p| p.tasks.len()).sum();
        if threads <= SMALL_WORKLOAD_THREADS {
            1
        } else {
            stride
        }
    }

    /// Takes in a fresh listing of the workload's processes: forgets those /proc no longer
    /// lists (or lists as another process), opens those it has not seen.
    fn admit(
        &mut self,
        members: Vec<(u32, u64)>,
        pid_cache: &HashMap<u32, (u32, u64)>,
        sweep: &mut Sweep,
        buf: &mut Vec<u8>,
        problems: &mut Vec<String>,
    ) {
        self.procs
            .retain(|pid, p| pid_cache.get(pid).map(|e| e.1) == Some(p.start));
        for (pid, start) in members {
            if self.procs.get(&pid).map(|p| p.start) == Some(start) {
                continue;
            }
            match ProcState::open(sweep, pid, start, buf) {
                Ok(Some(p)) => {
                    self.procs.insert(pid, p);
                }
                Ok(None) => {}
                Err(why) => problems.push(why),
            }
        }
    }

    /// One sweep of every process of the workload; a process gone since is dropped, and its
    /// pid's group learnt again at the next scan.
    fn read_all(
        &mut self,
        pgid: u32,
        pid_cache: &mut HashMap<u32, (u32, u64)>,
        sweep: &mut Sweep,
        buf: &mut Vec<u8>,
        problems: &mut Vec<String>,
    ) {
        let mut gone_pids = Vec::new();
        for (&pid, p) in self.procs.iter_mut() {
            match p.read(pid, pgid, sweep, buf, problems) {
                Ok(()) => problems.extend(p.notes.iter().cloned()),
                Err(ProcGone::Gone) => gone_pids.push(pid),
            }
        }
        for pid in gone_pids {
            self.procs.remove(&pid);
            pid_cache.remove(&pid);
        }
    }
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
    /// pid → parent, session and name, for attached workloads' selectors.
    proc_info: HashMap<u32, attach::ProcInfo>,
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
    cgroups: cgroups::Cgroups,
    rest: rest::Rest,
    /// Per CPU (id, busy, idle) at the last sweep, to tell a contended CPU.
    cpu_last: Vec<(u32, u64, u64)>,
    fair_reserve: Option<f64>,
    reserve_ns: u64,
    /// The real /proc: threads may be asked about by id with system calls (SCHED_DEADLINE
    /// reservations, a big intake's attributes), which a fake tree's ids are not.
    real_proc: bool,
    /// Sweeps so far, and when the last one began: the rotation of a big workload's reads.
    sweeps: u32,
    last_sweep_ns: u64,
    /// Threads that ran little, met in the last sweep: how many the suspects' budget is
    /// shared among.
    suspects_last: u32,
}

fn clock_ns(clock: nix::time::ClockId) -> u64 {
    nix::time::clock_gettime(clock)
        .map(|ts| ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
        .unwrap_or(0)
}

/// CLOCK_MONOTONIC in ns: the clock Samples are stamped with.
pub fn monotonic_ns() -> u64 {
    clock_ns(nix::time::ClockId::CLOCK_MONOTONIC)
}

/// The calling thread's CPU time in ns: what one of schedlab's own threads cost.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
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
        crate::sys::kernel::fdtable::raise_soft_limit();
        Ok(Probe {
            psi: opt("pressure/cpu"),
            autogroup_enabled: opt("sys/kernel/sched_autogroup_enabled"),
            schedstat: opt("schedstat"),
            proc_stat,
            buf: Vec::with_capacity(4096),
            pid_cache: HashMap::new(),
            proc_info: HashMap::new(),
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
            cgroups: cgroups::Cgroups::discover(&cfg.proc_root),
            rest: rest::Rest::default(),
            cpu_last: Vec::new(),
            fair_reserve: None,
            reserve_ns: 0,
            real_proc: cfg.proc_root == Path::new("/proc"),
            sweeps: 0,
            suspects_last: 0,
            last_sweep_ns: 0,
            cfg,
        })
    }

    /// Changes how often status (voluntary/involuntary switches) is read.
    pub(crate) fn set_status_every(&mut self, d: Duration) {
        self.cfg.status_every = d;
        self.status_every_ns = d.as_nanos() as u64;
    }

    /// The processes (pid → start) an attached workload held at the last scan.
    pub(crate) fn held(&self, id: u32) -> HashMap<u32, u64> {
        self.groups
            .get(&id)
            .map(|g| g.held.clone())
            .unwrap_or_default()
    }

    pub fn config(&self) -> &ProbeConfig {
        &self.cfg
    }

    /// One sweep over the machine and every target.
    pub fn sample(&mut self, targets: &[Target]) -> Sample {
        let cpu0 = thread_cpu_ns();
        let t0 = monotonic_ns();
        let mut machine = self.read_machine(t0);
        let contended = self.contended(&machine);
        let forks = self.last_forks;

        // Forget workloads no longer asked for.
        let wanted: HashSet<u32> = targets.iter().map(|t| t.id).collect();
        self.groups.retain(|id, _| wanted.contains(id));
        let new_target = targets.iter().any(|t| !self.groups.contains_key(&t.id));

        let rest_due = self.rest.due(t0);
        let rest_listing = self.rest.listing_due(t0);
        let refresh = t0.saturating_sub(self.cache_built_ns) >= CACHE_REFRESH_NS;
        let scan = refresh
            || new_target
            || rest_listing
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

        let gap = if self.last_sweep_ns == 0 {
            1_000_000_000
        } else {
            t0.saturating_sub(self.last_sweep_ns)
        };
        self.last_sweep_ns = t0;
        self.sweeps = self.sweeps.wrapping_add(1);
        let stride = read_stride(self.threads_last, gap);
        let mut workloads = Vec::with_capacity(targets.len());
        let mut suspects = self.suspect_budget(gap);
        let mut sched = sched_budget(self.status_every_ns, self.threads_last, gap);
        let mut status = status_budget(self.status_every_ns, self.threads_last, gap);
        for target in targets {
            workloads.push(self.sample_target(
                target,
                targets,
                SweepPlan {
                    scan,
                    status_due,
                    contended,
                    stride,
                    gap_ns: gap,
                },
                (&mut suspects, &mut sched, &mut status),
                t0,
            ));
        }
        self.threads_last = workloads
            .iter()
            .flat_map(|w| &w.processes)
            .map(|p| p.threads.len() as u64)
            .sum();

        if rest_due {
            machine.rest = Some(self.read_rest(targets, contended, &mut suspects, t0, scan));
        }
        self.suspects_last = suspects.seen;
        if status_due || rest_due {
            machine.cgroups = Some(self.cgroup_nodes(&workloads, machine.rest.as_ref()));
        }

        let t1 = monotonic_ns();
        self.probe_cpu_ns += thread_cpu_ns().saturating_sub(cpu0);
        Sample {
            t_ns: t0 + (t1 - t0) / 2,
            machine,
            workloads,
            observer_cpu_ns: clock_ns(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID),
            probe_cpu_ns: self.probe_cpu_ns,
            status_t_ns: self.status_ns,
            status_every_ns,
            epoch_ns: 0,
            due_ns: 0,
            sweep_start_ns: t0,
            interval_ns: 0,
            missed: 0,
            observer_rt: false,
        }
    }
}

impl Probe {
    /// The cpu controller's groups the workloads' processes and the rest's tasks sit in,
    /// with their ancestors.
    fn cgroup_nodes(
        &mut self,
        workloads: &[WorkloadSample],
        rest: Option<&RestSample>,
    ) -> Vec<CgroupNode> {
        let mut paths: Vec<&str> = workloads
            .iter()
            .flat_map(|w| &w.processes)
            .filter_map(|p| p.cgroup.as_deref())
            .collect();
        if let Some(r) = rest {
            paths.extend(r.tasks.iter().filter_map(|t| t.cgroup.as_deref()));
        }
        paths.sort_unstable();
        paths.dedup();
        self.cgroups.nodes(paths.into_iter(), &mut self.buf)
    }

    /// Lists /proc and learns the group and start time of every process not seen before. A
    /// plain listing, not procfs's: this runs at every sweep while anything forks, and procfs
    /// opens each listed process's directory, one more system call for every process on the
    /// machine at each scan, where this reads only the stat of processes it has not seen.
    fn scan_proc(&mut self, refresh: bool, now: u64) {
        let Ok(dir) = std::fs::read_dir(&self.cfg.proc_root) else {
            return;
        };
        if refresh {
            self.pid_cache.clear();
            self.proc_info.clear();
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
                        if let Some(info) = attach::info_of(&self.buf) {
                            self.proc_info.insert(pid, info);
                        }
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
        self.proc_info.retain(|pid, _| seen.contains(pid));
        self.unreadable.retain(|pid, _| seen.contains(pid));
        self.scanned_ns = now;
    }

    /// The processes of a target, as /proc listed them at the last scan.
    fn members(
        &mut self,
        target: &Target,
        targets: &[Target],
        leader_start: Option<u64>,
    ) -> Vec<(u32, u64)> {
        if let Some(sel) = &target.attach {
            // Never schedlab itself, nor a workload it started (those are rows of their own).
            let me = std::process::id();
            let started: Vec<(u32, u32)> = targets
                .iter()
                .filter(|t| t.attach.is_none())
                .map(|t| (t.pgid, t.leader))
                .collect();
            let skip = |pid: u32, pgid: u32| {
                pid == me
                    || started
                        .iter()
                        .any(|&(g, l)| (g != 0 && g == pgid) || (g == 0 && l == pid))
            };
            let held = self
                .groups
                .get(&target.id)
                .map(|g| g.held.clone())
                .unwrap_or_default();
            let now = attach::members(
                sel,
                &held,
                &self.pid_cache,
                &self.proc_info,
                &skip,
                &mut self.buf,
            );
            let out = now.iter().map(|(&p, &s)| (p, s)).collect();
            self.groups.entry(target.id).or_default().held = now;
            return out;
        }
        if target.pgid == 0 {
            self.pid_cache
                .get(&target.leader)
                .filter(|(_, start)| Some(*start) == leader_start)
                .map(|&(_, start)| vec![(target.leader, start)])
                .unwrap_or_default()
        } else {
            self.pid_cache
                .iter()
                .filter(|(_, (pgid, _))| *pgid == target.pgid)
                .map(|(&pid, &(_, start))| (pid, start))
                .collect()
        }
    }

    /// One target's sweep; `budgets`: the suspects' and the sched files' reads left, shared
    /// by every target of the sweep.
    fn sample_target(
        &mut self,
        target: &Target,
        targets: &[Target],
        plan: SweepPlan,
        budgets: (&mut Suspects, &mut SchedReads, &mut StatusReads),
        now: u64,
    ) -> WorkloadSample {
        let (suspects, sched, status) = budgets;
        let SweepPlan {
            scan,
            status_due,
            contended,
            stride,
            gap_ns: gap,
        } = plan;
        let mut problems: Vec<String> = Vec::new();
        if let Some(why) = self.unreadable.get(&target.leader) {
            problems.push(format!("cannot read the leader's stat: {why}"));
        }
        self.note_leader(target, &mut problems);
        let members = if scan {
            let start = self.groups.get(&target.id).and_then(|g| g.leader_start);
            Some(self.members(target, targets, start))
        } else {
            None
        };

        let Probe {
            cfg,
            buf,
            pid_cache,
            groups,
            cgroups,
            real_proc,
            sweeps,
            ..
        } = self;
        let group = groups.entry(target.id).or_default();
        let mut sweep = Sweep {
            proc_root: &cfg.proc_root,
            now,
            status_due,
            contended,
            suspects: suspects.for_target(),
            stat_active: false,
            status_active: false,
            cgroups,
            real_proc: *real_proc,
            stride: group.stride(stride),
            phase: *sweeps,
            sched: *sched,
            status: *status,
            new_tasks: task::new_tasks_per_sweep(gap),
            bulk_intake: *real_proc,
        };
        if let Some(members) = members {
            group.admit(members, pid_cache, &mut sweep, buf, &mut problems);
        }
        group.read_all(target.pgid, pid_cache, &mut sweep, buf, &mut problems);
        if target.attach.is_some() {
            // An attached process that exited and waits for its parent to reap it has ended:
            // a zombie runs no more (our own workloads are reaped by us at once).
            group
                .procs
                .retain(|_, p| p.state != b'Z' || p.tasks.len() > 1);
        }
        *suspects = sweep.suspects;
        *sched = sweep.sched;
        *status = sweep.status;

        let mut processes: Vec<ProcessSample> = group
            .procs
            .values()
            .map(|p| process_sample(p, now))
            .collect();
        processes.sort_by_key(|p| p.pid);

        let cgroup = target.cgroup.as_deref().and_then(|dir| {
            cgroups::read_usage(&cfg.sys_root, dir, buf)
                .map_err(|why| problems.push(why))
                .ok()
        });
        if let Some(dir) = target.attach.as_ref().and_then(Selector::cgroup) {
            if !attach::cgroup_exists(dir) {
                problems.push(format!("cgroup {} was removed", dir.display()));
            }
        }
        if processes.is_empty() && target.leader != 0 {
            if let Some(why) = reused_leader(&cfg.proc_root, target.leader, group.leader_start, buf)
            {
                problems.push(why);
            }
        }
        // An empty cgroup is watched until it is removed (a container between its runs).
        let waiting_group = target
            .attach
            .as_ref()
            .and_then(Selector::cgroup)
            .is_some_and(attach::cgroup_exists);
        let health = health_of(target, processes.is_empty() && !waiting_group, problems);

        WorkloadSample {
            id: target.id,
            name: target.name.clone(),
            ops_unit: target.ops_unit.clone(),
            pgid: target.pgid,
            leader: target.leader,
            ops: target.counters.as_ref().map(|c| c.total()),
            ops_expected: target.counters.as_ref().and_then(|c| c.expected_total()),
            closed_loops: target.counters.as_ref().and_then(|c| c.closed_loops()),
            paced: target.paced,
            finished: target.counters.as_ref().is_some_and(|c| c.finished()),
            processes,
            cgroup,
            health,
            life: Life::Running,
            latency: target.counters.as_ref().map_or_else(Vec::new, |c| {
                let stride = histogram_stride(c.histograms_claimed(), gap);
                let merged = group.latency.read(c, stride, *sweeps);
                merged.into_iter().map(Into::into).collect()
            }),
            stderr: Vec::new(),
        }
    }

    /// Learns the leader's identity, to tell its exit from a reused pid.
    fn note_leader(&mut self, target: &Target, problems: &mut Vec<String>) {
        let Some(&(_, start)) = self
            .pid_cache
            .get(&target.leader)
            .filter(|(pgid, _)| *pgid != u32::MAX)
        else {
            return;
        };
        let group = self.groups.entry(target.id).or_default();
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

    /// This sweep's share of the suspects' reads a second, over the time since the last
    /// sweep, and which of last sweep's suspects get their turn.
    fn suspect_budget(&self, gap_ns: u64) -> Suspects {
        let gap = gap_ns.clamp(50_000_000, 10_000_000_000);
        let per_sweep = |per_sec: u64| (per_sec * gap / 1_000_000_000).max(1) as u32;
        let stat_left = per_sweep(SUSPECT_STATS_PER_SEC);
        Suspects {
            stat_left,
            status_left: per_sweep(SUSPECT_STATUS_PER_SEC),
            every: self.suspects_last.div_ceil(stat_left).clamp(1, 64),
            phase: self.sweeps,
            seen: 0,
            here: 0,
        }
    }

    /// Reads every process that belongs to no target.
    fn read_rest(
        &mut self,
        targets: &[Target],
        contended: bool,
        suspects: &mut Suspects,
        now: u64,
        listed: bool,
    ) -> RestSample {
        let gap = now.saturating_sub(self.rest.last_ns);
        let pgids: HashSet<u32> = targets
            .iter()
            .filter(|t| t.pgid != 0)
            .map(|t| t.pgid)
            .collect();
        let mut leaders: HashSet<u32> = targets
            .iter()
            .filter(|t| t.pgid == 0 && t.attach.is_none())
            .map(|t| t.leader)
            .collect();
        // An attached workload's processes are its row's, not the rest's.
        for t in targets.iter().filter(|t| t.attach.is_some()) {
            if let Some(g) = self.groups.get(&t.id) {
                leaders.extend(g.held.keys().copied());
                leaders.extend(g.procs.keys().copied());
            }
        }
        let mut members: Vec<(u32, u64)> = self
            .pid_cache
            .iter()
            .filter(|(pid, (pgid, _))| {
                *pgid != u32::MAX && !pgids.contains(pgid) && !leaders.contains(pid)
            })
            .map(|(&pid, &(_, start))| (pid, start))
            .collect();
        members.sort_unstable();
        let meta_due = now.saturating_sub(self.rest.meta_ns) >= rest::REST_META_EVERY_NS;
        if meta_due {
            self.rest.meta_ns = now;
        }
        let Probe {
            cfg,
            buf,
            cgroups,
            rest,
            real_proc,
            ..
        } = self;
        let mut sweep = Sweep {
            proc_root: &cfg.proc_root,
            now,
            status_due: meta_due,
            contended,
            suspects: suspects.for_target(),
            stat_active: true,
            status_active: true,
            cgroups,
            real_proc: *real_proc,
            stride: 1,
            phase: 0,
            // The rest of the machine's migrations are not read.
            sched: SchedReads::default(),
            // Status (allowed CPUs) with the rest's other metadata, every thread visited.
            status: if meta_due {
                StatusReads::every_sweep()
            } else {
                StatusReads::default()
            },
            new_tasks: task::new_tasks_per_sweep(gap),
            // The rest is read for its active tasks' state and CPU, which only stat gives.
            bulk_intake: false,
        };
        let out = rest.read(&members, &mut sweep, buf, listed);
        *suspects = sweep.suspects;
        out
    }
}

/// A process and its threads (by tid), as the sweep that began at `sweep_ns` found them.
fn process_sample(p: &ProcState, sweep_ns: u64) -> ProcessSample {
    let mut s = p.sample.clone();
    s.threads = p.tasks.values().map(|t| t.sample_of(sweep_ns)).collect();
    s
}

/// Nothing of a workload is left: is its leader's pid now another process's?
fn reused_leader(
    proc_root: &Path,
    leader: u32,
    start: Option<u64>,
    buf: &mut Vec<u8>,
) -> Option<String> {
    let path = proc_root.join(format!("{leader}/stat"));
    read_path(&path, buf).ok()?;
    let st = parse::stat(buf)?;
    (st.start != start?).then(|| format!("pid {leader} now belongs to another process (reused)"))
}

/// Whether a workload could be read, from what was found and what went wrong.
fn health_of(target: &Target, nothing_left: bool, mut problems: Vec<String>) -> Health {
    problems.sort();
    problems.dedup();
    if nothing_left {
        Health::Gone(if problems.is_empty() {
            if let Some(sel) = target
                .attach
                .as_ref()
                .filter(|s| !matches!(s, Selector::Pid(_)))
            {
                format!("no process matches {sel} any more")
            } else if target.pgid == 0 {
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
    }
}
