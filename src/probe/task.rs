//! One process and its threads, as the probe keeps them between sweeps: files held open, the
//! last values read, and the rules for what to read at each sweep.
//!
//! schedstat is read at every sweep (one small pread). stat (state, CPU, nice, policy) and the
//! switches cost more: stat is read at status sweeps, the switches when the thread's own status
//! period is up (within a budget of reads a second); and both, out of turn within a budget, for
//! a thread that ran little while CPUs were busy: it may be starving, and only its state says
//! so (the kernel adds run-queue wait to schedstat only when the task finally runs).
//!
//! On the real /proc the switches come from the sched file, with the thread's migrations
//! (`se.nr_migrations`: how often it moved to another CPU), and its allowed CPUs from
//! sched_getaffinity: one read of 4.8 µs and a 0.3 µs call here, where status took 6.3 µs and
//! a sched read for the migrations 4.8 more. Status is read instead where the sched file does
//! not give them (a fake tree, another kernel). Between those reads, the sched file is read for
//! the migrations alone, each thread's at most once a status period, within a budget of reads
//! a second shared by every workload; a thread read is not due again for a period, so those
//! the budget left out go next.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::attrs::{allowed_cpus, deadline_bandwidth, sched_attr, CpusMemo};
use super::budget::{take, SchedReads, StatusReads, Suspects, Turn};
use super::cgroups::{read_cgroup_file, Cgroups};
use super::parse;
use super::reader::{classify, read_path, ReadErr, Reader};
use super::{monotonic_ns, ProcessSample, TaskSample};

/// Re-list a process's threads at least this often. A change in its thread count re-lists at
/// the next sweep; this only catches an exit and a birth between two sweeps that left the
/// count the same (and the exit is found at the dead thread's next read anyway). Listing
/// 1,000 threads costs the kernel a dentry per thread, more than a sweep of their schedstat,
/// so it is rare. A falling count drops the dead at once, though they would be found at their
/// reads: a big process is read in rotation, and a thread not read in a sweep keeps its last
/// rate in the model (scaled to the process's CPU clock since 2026-12-04), so a dead one kept
/// until its turn (up to 8 s) took a share of what the live ones ran. On the real /proc they
/// are found without a listing (`drop_exited`).
pub(super) const TASK_RELIST_NS: u64 = 10_000_000_000;
/// Re-read every thread's nice at least this often (at once when the main thread's changes:
/// a renice of a whole workload touches the main thread too).
const NICE_EVERY_NS: u64 = 5_000_000_000;
/// A thread that used less than this share of its interval (run + wait) may be waiting for a
/// CPU it has not got yet.
const RAN_LITTLE: f64 = 0.95;
/// ...and was given a CPU at most this many times since its last read. A thread the kernel
/// switched in more often was being served: the wait it has not reported yet is the tail since
/// its last turn, which its next turn reports. Only a thread that hardly got a CPU can be waiting
/// unseen for most of an interval (a hog behind a real-time task, a thread starved by a group's
/// weight), and only its state says so. Without this, nearly every thread of a busy ping-pong
/// (it sleeps between messages) was a suspect, and their reads were a seventh of the observer's
/// CPU at 1,000 threads.
const SUSPECT_MAX_SLICES: u64 = 2;
/// SCHED_DEADLINE's policy number.
const SCHED_DEADLINE: u32 = 6;
/// A process with more threads than this has its main thread's stat read between status
/// sweeps, not the process's (which sums over every thread); and, read in rotation, its CPU
/// clock at every sweep.
const MAIN_STAT_THREADS: usize = 16;
/// A process with at least this many threads takes its new threads in by system calls
/// (on the real /proc): policy, nice and real-time priority from sched_getattr, allowed CPUs
/// from sched_getaffinity, instead of opening, reading and closing stat and status. Two cheap
/// calls against four file operations that cost the kernel a dentry, an inode and a formatted
/// page each: a 200-room chat run's 16,000 threads took half a second of the observer's CPU to
/// take in. Their state and CPU come with their next stat read, their switches with their
/// next status read (the first only gives a baseline).
const BULK_INTAKE_THREADS: usize = 256;
/// New threads whose files are opened a second, at most, per process: a workload that starts
/// 16,000 threads is taken in over a few sweeps instead of one that takes a second (500 a sweep
/// at 10 Hz, 5,000 at 1 Hz: a fixed 500 a sweep once left 200 chat rooms half unseen for the
/// whole of a 10 s run at 1 Hz).
const NEW_TASKS_PER_SEC: u64 = 5_000;

/// New threads one sweep may open per process, `gap_ns` after the last sweep.
pub(super) fn new_tasks_per_sweep(gap_ns: u64) -> usize {
    let gap = gap_ns.clamp(100_000_000, 1_000_000_000);
    (NEW_TASKS_PER_SEC * gap / 1_000_000_000) as usize
}

pub(super) struct TaskState {
    schedstat: Reader,
    /// Opened at first need (most threads of a big workload are listed long before their
    /// status or stat is due): a 16,000-thread chat run is not 48,000 opens in one sweep.
    /// status only where the sched file does not give the switches (a fake tree, a kernel
    /// without it).
    status: LazyFile,
    stat: LazyFile,
    /// What its first sweep reads; Seen once that sweep is done.
    first: FirstSweep,
    /// Timeslices at the last status read: a thread not scheduled since cannot have switched
    /// (but for at most one switch-out, counted when it next runs), so its status is skipped.
    status_slices: u64,
    /// run, wait and read time at the read before the last.
    prev: (u64, u64, u64),
    /// Timeslices at the read before the last.
    prev_slices: u64,
    /// Its sched file, for its migrations and (on the real /proc) its switches, opened at its
    /// first read; Absent also when it has no `se.nr_migrations` (another kernel's format):
    /// its migrations stay unknown, and status gives the switches.
    sched: LazyFile,
    pub(super) sample: TaskSample,
}

/// A thread's first sweep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FirstSweep {
    /// Just listed: its stat and status are read (nice, policy, CPUs).
    ReadFiles,
    /// Taken in by system calls, in bulk: its stat and status are not read, even at a status
    /// sweep (that is what the bulk intake saves).
    TakenIn,
    /// Its first sweep is done.
    Seen,
}

/// A file opened at its first need.
enum LazyFile {
    Unopened,
    Open(Reader),
    /// Not there or not readable (or not what it should be): not tried again.
    Absent,
}

impl LazyFile {
    /// The file, opened from `path()` by `open` ([`Reader::open`], or [`Reader::open_rare`]
    /// for one read only now and then) if this is its first need; why it could not be, other
    /// than its task's exit, into `notes` when given.
    fn open(
        &mut self,
        open: impl FnOnce(PathBuf) -> Result<Reader, ReadErr>,
        path: impl FnOnce() -> PathBuf,
        notes: Option<&mut Vec<String>>,
    ) -> Option<&Reader> {
        if matches!(self, LazyFile::Unopened) {
            *self = match open(path()) {
                Ok(r) => LazyFile::Open(r),
                Err(ReadErr::Gone) => LazyFile::Absent,
                Err(ReadErr::Failed(why)) => {
                    if let Some(notes) = notes {
                        notes.push(why);
                    }
                    LazyFile::Absent
                }
            };
        }
        match self {
            LazyFile::Open(r) => Some(r),
            _ => None,
        }
    }
}

pub(super) struct ProcState {
    pub(super) start: u64,
    /// Files of this process that could not be opened or read, until the next re-list.
    pub(super) notes: Vec<String>,
    stat: Reader,
    /// The main thread's own stat (task/PID/stat), read instead of `stat` between status
    /// sweeps when the process has many threads: the process's stat sums CPU time over every
    /// thread in the kernel (1,000 task_structs a read), and all else the probe needs of it
    /// (start, group, state, thread count, reaped children's time, nice) is the main thread's.
    /// Absent: not there (a fake tree), and the process's stat is read at every sweep.
    main_stat: LazyFile,
    listed_ns: u64,
    /// Threads the last listing found but had no budget left to open (tid order): opened at
    /// the next sweeps without listing again, while the thread count matches.
    pending: Vec<u32>,
    /// Its threads in the probe's count of watched threads (`fdtable::rewatch`): listed ones,
    /// opened or pending, as of the last listing or opening.
    watched: usize,
    /// The last allowed-CPU mask a system call found for one of its threads (a bulk intake, a
    /// read of switches), and its list.
    cpus_memo: CpusMemo,
    /// Its CPU clock's id, found at its first read (read when its threads are read in
    /// rotation).
    cpu_clock: Option<nix::time::ClockId>,
    /// When per-thread nice was last read, and the main thread's (nice, policy) then.
    nice_ns: u64,
    main_sched: (i32, u32),
    /// By tid: in order for the Sample, and a sweep in rotation steps over the threads it
    /// skips without touching them (a map's keys sit apart from its values; 1,000 threads a
    /// sweep, in a cache the workload keeps cold).
    pub(super) tasks: BTreeMap<u32, TaskState>,
    pub(super) sample: ProcessSample,
    /// The process's name, for the rest of the machine.
    pub(super) comm: String,
    /// The main thread's state at its last read.
    pub(super) state: u8,
    /// A kernel thread.
    pub(super) kthread: bool,
}

/// What one sweep reads, shared by every process it visits.
pub(super) struct Sweep<'a> {
    pub proc_root: &'a Path,
    pub now: u64,
    /// Status (switches, allowed CPUs), stat (state, CPU, nice), cgroup and autogroup.
    pub status_due: bool,
    /// Some CPU was busy for (nearly) the whole last interval: threads that ran little may be
    /// waiting for one, so their state is worth a read.
    pub contended: bool,
    /// Out-of-turn reads of threads that may be starving, left in this sweep.
    pub suspects: Suspects,
    /// Read stat for every thread that ran or waited since its last read (the rest of the
    /// machine, read once a second, wants each active task's state and CPU).
    pub stat_active: bool,
    /// Read status for every thread that ran since its last read (the rest of the machine:
    /// its switches say which part of its wait followed a wakeup).
    pub status_active: bool,
    pub cgroups: &'a mut Cgroups,
    /// The real /proc: its ids name live tasks, which system calls can ask about (a
    /// SCHED_DEADLINE thread's reservation, a rotated process's CPU clock); a fake tree's do
    /// not.
    pub real_proc: bool,
    /// Read one thread in `stride` at this sweep (by tid, turning with `phase`): the budget
    /// of schedstat reads a second, for very large workloads. 1: every thread.
    pub stride: u32,
    pub phase: u32,
    /// Sched-file reads (migrations) left in this sweep, and how often each thread's is due.
    pub sched: SchedReads,
    /// Status reads (switches, allowed CPUs) left in this sweep, and how often each thread's
    /// is due.
    pub status: StatusReads,
    /// New threads whose files a process's listing may open in this sweep.
    pub new_tasks: usize,
    /// New threads of a big process may be taken in by system calls (the real /proc: the
    /// calls name threads by id, which a fake tree's are not).
    pub bulk_intake: bool,
}

/// One thread of a process, as a sweep visits it.
struct Thread<'s> {
    pid: u32,
    tid: u32,
    /// The process's stat, read this sweep.
    main: &'s parse::Stat,
    /// Nice and policy are due for every thread (they changed, or it is time).
    nice_due: bool,
}

/// Why a process could not be read this sweep.
pub(super) enum ProcGone {
    /// It exited, or its pid now names another process, or it left the group.
    Gone,
}

impl ProcState {
    /// Opens a newly found process. Ok(None): it exited or is not the one listed.
    pub(super) fn open(
        sweep: &mut Sweep,
        pid: u32,
        start: u64,
        buf: &mut Vec<u8>,
    ) -> Result<Option<ProcState>, String> {
        let proc_root = sweep.proc_root;
        let path = proc_root.join(pid.to_string()).join("stat");
        let stat = match Reader::open(path) {
            Ok(r) => r,
            Err(ReadErr::Gone) => return Ok(None),
            Err(ReadErr::Failed(why)) => return Err(why),
        };
        let (st, comm) = match stat.read(buf) {
            Ok(b) => (
                parse::stat(b),
                parse::stat_comm(b).unwrap_or("").to_string(),
            ),
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
            main_stat: LazyFile::Unopened,
            listed_ns: 0,
            pending: Vec::new(),
            watched: 0,
            cpus_memo: None,
            cpu_clock: None,
            nice_ns: sweep.now,
            main_sched: (st.nice, st.policy),
            tasks: BTreeMap::new(),
            sample: ProcessSample {
                pid,
                ppid: st.ppid,
                start,
                session: st.session,
                autogroup: read_autogroup(proc_root, pid, buf),
                cpu_ticks: st.cpu_ticks,
                child_ticks: st.child_ticks,
                threads: Vec::new(),
                cpu_ns: 0,
                cpu_read_ns: 0,
                cgroup: None,
            },
            comm,
            state: st.state,
            kthread: st.kthread,
        };
        p.sample.cgroup = read_group(sweep, pid, buf);
        p.list_tasks(
            proc_root,
            sweep.now,
            sweep.new_tasks,
            bulk_intake(sweep, &st),
        );
        Ok(Some(p))
    }

    /// One sweep of this process: its stat, every thread's schedstat, and what else is due.
    /// `pgid`: the group it must still be in (0: any).
    pub(super) fn read(
        &mut self,
        pid: u32,
        pgid: u32,
        sweep: &mut Sweep,
        buf: &mut Vec<u8>,
        problems: &mut Vec<String>,
    ) -> Result<(), ProcGone> {
        let whole = sweep.status_due || self.tasks.len() <= MAIN_STAT_THREADS;
        let st = self.read_own_stat(pid, pgid, whole, sweep.proc_root, buf, problems)?;
        if st.state == b'Z' {
            // A zombie has no threads left to read; its times stay in its stat.
            self.tasks.clear();
            return Ok(());
        }
        let bulk = bulk_intake(sweep, &st);
        let relist_due = sweep.now.saturating_sub(self.listed_ns) >= TASK_RELIST_NS;
        if (st.num_threads as usize) < self.tasks.len() + self.pending.len()
            && sweep.real_proc
            && !relist_due
        {
            self.drop_exited(pid);
        }
        if st.num_threads as usize != self.tasks.len() + self.pending.len() || relist_due {
            self.list_tasks(sweep.proc_root, sweep.now, sweep.new_tasks, bulk);
        } else if !self.pending.is_empty() && self.listed_ns != sweep.now {
            // Listed at an earlier sweep (not this one, whose budget that listing spent): a
            // readdir of 16,000 threads costs more than the opens it feeds.
            self.open_pending(sweep.proc_root, sweep.new_tasks, bulk);
        }
        let nice_due = sweep.status_due
            && ((st.nice, st.policy) != self.main_sched
                || sweep.now.saturating_sub(self.nice_ns) >= NICE_EVERY_NS);
        if nice_due {
            self.nice_ns = sweep.now;
            self.main_sched = (st.nice, st.policy);
        }
        let notes = &mut self.notes;
        let cpus_memo = &mut self.cpus_memo;
        self.tasks.retain(|&tid, t| {
            // A big workload is read in rotation (the budget of reads a second): a thread
            // skipped this sweep keeps its last values, untouched (its Sample says it was not
            // read: `sample_of`).
            if sweep.stride > 1 && tid != pid && !(tid + sweep.phase).is_multiple_of(sweep.stride) {
                return true;
            }
            let thread = Thread {
                pid,
                tid,
                main: &st,
                nice_due,
            };
            t.sweep(&thread, sweep, buf, cpus_memo, notes, problems)
        });
        // A big process's clock says what its threads ran, those read in rotation and held,
        // and those that exited since the last sweep (a chat run's 160 threads come and go
        // within a second): a small one's few threads hold for a second at most, and 500
        // two-thread processes would cost 500 reads a tick. Once clocked, always.
        let clocked = self.tasks.len() > MAIN_STAT_THREADS || self.cpu_clock.is_some();
        (self.sample.cpu_ns, self.sample.cpu_read_ns) = if clocked && sweep.real_proc {
            self.read_clock(pid).unwrap_or((0, 0))
        } else {
            (0, 0)
        };
        if sweep.status_due {
            self.sample.autogroup = read_autogroup(sweep.proc_root, pid, buf);
            self.sample.cgroup = read_group(sweep, pid, buf);
        }
        Ok(())
    }

    /// Its CPU clock now, and when it was read: one system call, which sums its threads'
    /// run time in the kernel (exact, in ns) without formatting anything. None: it is gone.
    pub(super) fn read_clock(&mut self, pid: u32) -> Option<(u64, u64)> {
        let id = match self.cpu_clock {
            Some(id) => id,
            None => {
                let id =
                    nix::time::clock_getcpuclockid(nix::unistd::Pid::from_raw(pid as i32)).ok()?;
                *self.cpu_clock.insert(id)
            }
        };
        // Timed on both sides: a preemption between the two calls must not move the time
        // the clock is taken to have been read at.
        let before = monotonic_ns();
        let ts = nix::time::clock_gettime(id).ok()?;
        let at = before + monotonic_ns().saturating_sub(before) / 2;
        Some((ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64, at))
    }

    /// The process's own stat, still the process we knew, in the group it must be in.
    /// `whole`: the process's stat, with its CPU time; otherwise its main thread's, when it
    /// can be opened.
    fn read_own_stat(
        &mut self,
        pid: u32,
        pgid: u32,
        whole: bool,
        proc_root: &Path,
        buf: &mut Vec<u8>,
        problems: &mut Vec<String>,
    ) -> Result<parse::Stat, ProcGone> {
        let main = if whole {
            None
        } else {
            self.main_stat.open(
                Reader::open,
                || proc_root.join(format!("{pid}/task/{pid}/stat")),
                None,
            )
        };
        let from_main = main.is_some();
        let reader = main.unwrap_or(&self.stat);
        let st = match reader.read(buf) {
            Ok(b) => parse::stat(b),
            Err(ReadErr::Gone) => None,
            Err(ReadErr::Failed(why)) => {
                problems.push(format!("{}/{pid}/stat: {why}", proc_root.display()));
                None
            }
        };
        let Some(st) = st else {
            return Err(ProcGone::Gone);
        };
        if st.start != self.start || (pgid != 0 && st.pgrp != pgid) {
            // It moved to another group (setsid, setpgid) or is not the process we knew.
            return Err(ProcGone::Gone);
        }
        self.sample.ppid = st.ppid;
        self.sample.session = st.session;
        if !from_main {
            self.sample.cpu_ticks = st.cpu_ticks;
        }
        self.sample.child_ticks = st.child_ticks;
        self.state = st.state;
        Ok(st)
    }

    /// Brings the thread list up to date: opens files of up to `budget` new threads (the rest
    /// wait in `pending`), drops dead ones.
    fn list_tasks(&mut self, proc_root: &Path, now: u64, budget: usize, bulk: bool) {
        let pid = self.sample.pid;
        self.listed_ns = now;
        self.notes.clear();
        self.pending.clear();
        let dir = proc_root.join(format!("{pid}/task"));
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                if let ReadErr::Failed(why) = classify(e, &dir) {
                    self.notes.push(why);
                }
                return;
            }
        };
        let mut seen = HashSet::with_capacity(self.tasks.len() + 4);
        let mut opened = 0usize;
        for entry in entries.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            seen.insert(tid);
            if let Some(t) = self.tasks.get_mut(&tid) {
                // Retry files that could not be opened before.
                for f in [&mut t.status, &mut t.stat] {
                    if matches!(f, LazyFile::Absent) {
                        *f = LazyFile::Unopened;
                    }
                }
                continue;
            }
            if opened >= budget {
                self.pending.push(tid);
                continue;
            }
            let memo = bulk.then_some(&mut self.cpus_memo);
            if let Some(t) = new_task(&dir, tid, memo, &mut self.notes) {
                opened += 1;
                self.tasks.insert(tid, t);
            }
        }
        self.tasks.retain(|tid, _| seen.contains(tid));
        self.pending.sort_unstable();
        self.recount();
    }

    /// Drops the threads that exited, asking the kernel of each known one whether it still
    /// is one of this process's: a falling count needs no listing to say who left, and a chat
    /// run's rooms end one by one, so at 16,000 threads the count fell at nearly every sweep
    /// and listings of 8,000 entries were a third of the observer's CPU. A count still off
    /// (threads born too) lists them after all.
    fn drop_exited(&mut self, pid: u32) {
        use crate::sys::kernel::proc::thread_of;
        self.tasks.retain(|&tid, _| thread_of(pid, tid));
        self.pending.retain(|&tid| thread_of(pid, tid));
        self.recount();
    }

    /// Tells the descriptor table's count how many threads this process has now.
    fn recount(&mut self) {
        let now = self.tasks.len() + self.pending.len();
        crate::sys::kernel::fdtable::rewatch(self.watched, now);
        self.watched = now;
    }

    /// Opens up to `budget` of the threads the last listing left pending. One gone since is
    /// dropped (its open fails).
    fn open_pending(&mut self, proc_root: &Path, budget: usize, bulk: bool) {
        let dir = proc_root.join(format!("{}/task", self.sample.pid));
        let take = budget.min(self.pending.len());
        for tid in self.pending.drain(..take) {
            let memo = bulk.then_some(&mut self.cpus_memo);
            if let Some(t) = new_task(&dir, tid, memo, &mut self.notes) {
                self.tasks.insert(tid, t);
            }
        }
        self.recount();
    }
}

impl Drop for ProcState {
    fn drop(&mut self) {
        crate::sys::kernel::fdtable::rewatch(self.watched, 0);
    }
}

/// A thread of `dir` (a process's task directory) first seen: its schedstat opened, the rest
/// at their first need; with `bulk` (a big process on the real /proc), its attributes taken by
/// system calls ([`BULK_INTAKE_THREADS`]). None when it is gone; an open that fails for another
/// reason than an exit (EACCES under hidepid) is also a note.
fn new_task(
    dir: &Path,
    tid: u32,
    bulk: Option<&mut CpusMemo>,
    notes: &mut Vec<String>,
) -> Option<TaskState> {
    let schedstat = match Reader::open(dir.join(format!("{tid}/schedstat"))) {
        Ok(r) => r,
        Err(ReadErr::Gone) => return None,
        Err(ReadErr::Failed(why)) => {
            notes.push(why);
            return None;
        }
    };
    let mut t = TaskState {
        schedstat,
        status: LazyFile::Unopened,
        stat: LazyFile::Unopened,
        first: FirstSweep::ReadFiles,
        status_slices: u64::MAX,
        prev: (0, 0, 0),
        prev_slices: 0,
        sched: LazyFile::Unopened,
        sample: TaskSample {
            tid,
            ..TaskSample::default()
        },
    };
    if let Some(memo) = bulk {
        // A call that fails (the thread just exited, or a seccomp filter) leaves its files
        // to say, at its first sweep.
        if let (Some(attr), Some(cpus)) = (sched_attr(tid), allowed_cpus(tid, memo)) {
            t.sample.policy = attr.policy;
            t.sample.nice = attr.nice;
            t.sample.rt_priority = attr.priority;
            t.sample.cpus = Some(cpus);
            t.first = FirstSweep::TakenIn;
        }
    }
    Some(t)
}

/// Whether a process whose stat reads `st` takes its new threads in by system calls.
fn bulk_intake(sweep: &Sweep, st: &parse::Stat) -> bool {
    sweep.bulk_intake && st.num_threads as usize >= BULK_INTAKE_THREADS
}

impl TaskState {
    /// This sweep's reads of one thread: schedstat always, stat and status when due or
    /// when it may be starving. False: it is gone (or its files are not what they were).
    fn sweep(
        &mut self,
        th: &Thread,
        sweep: &mut Sweep,
        buf: &mut Vec<u8>,
        cpus_memo: &mut CpusMemo,
        notes: &mut Vec<String>,
        problems: &mut Vec<String>,
    ) -> bool {
        let (pid, tid, proc_root) = (th.pid, th.tid, sweep.proc_root);
        let path = |name: &str| proc_root.join(format!("{pid}/task/{tid}/{name}"));
        match self.read_schedstat(buf) {
            Ok(true) => {}
            Ok(false) | Err(ReadErr::Gone) => return false,
            Err(ReadErr::Failed(why)) => {
                problems.push(format!(
                    "{}/{pid}/task/{tid}/schedstat: {why}",
                    proc_root.display()
                ));
                return false;
            }
        }
        if tid == pid {
            // The process's stat is the main thread's: its state, CPU, nice and policy come
            // free with it.
            self.take_sched(th.main);
        }
        let turn = if self.ran_little() {
            sweep.suspects.turn()
        } else {
            Turn::No
        };
        let first = std::mem::replace(&mut self.first, FirstSweep::Seen);
        let (fresh, taken_in) = (first == FirstSweep::ReadFiles, first == FirstSweep::TakenIn);
        let stat_due = tid != pid
            && !taken_in
            && (sweep.status_due
                || fresh
                || th.nice_due
                || (sweep.stat_active && self.active())
                || (sweep.contended && Suspects::spend(turn, &mut sweep.suspects.stat_left)));
        if stat_due {
            if let Some(ts) = self
                .stat
                .open(Reader::open_rare, || path("stat"), Some(notes))
                .and_then(|r| r.read(buf).ok())
                .and_then(parse::stat)
            {
                self.take_sched(&ts);
            }
        }
        // A runnable thread that ran a little and then waited: did it sleep in between? Its
        // voluntary switches say (read out of turn, within the budget).
        let waiting = turn != Turn::No
            && self.sample.state == Some('R')
            && self.ran_at_all()
            && Suspects::spend(turn, &mut sweep.suspects.status_left);
        let due = !taken_in && !fresh && sweep.status.due(self.sample.vol_ns, sweep.now);
        let mut periodic = false;
        if due && self.sample.vol.is_some() && self.sample.slices == self.status_slices {
            // Not scheduled since its last read: it cannot have switched (but for at most one
            // switch-out, counted when it next runs). Its counts stand as of now, unread.
            self.sample.vol_ns = sweep.now;
        } else if due {
            periodic = take(&mut sweep.status.left);
        }
        let active = sweep.status_active && self.ran_at_all();
        if periodic || waiting || fresh || active {
            self.status_slices = self.sample.slices;
            // On the real /proc the sched file gives the switches (and migrations with them)
            // and a system call the allowed CPUs, for less than status alone costs.
            let by_sched = sweep.real_proc
                && self.read_sched(&path, buf, sweep.now, true)
                && self.take_allowed_cpus(tid, cpus_memo);
            if !by_sched {
                if let Err(why) = self.read_status(&path, buf, sweep.now, notes) {
                    notes.push(format!(
                        "{}/{pid}/task/{tid}/status: {why}",
                        proc_root.display()
                    ));
                    self.status = LazyFile::Absent;
                }
            }
        }
        if sweep.real_proc && self.sample.policy == SCHED_DEADLINE {
            self.sample.dl_bw = deadline_bandwidth(tid);
        }
        if !matches!(self.sched, LazyFile::Absent)
            && sweep.sched.turn(self.sample.migrations_ns, sweep.now)
        {
            self.read_sched(&path, buf, sweep.now, sweep.real_proc);
        }
        true
    }

    /// Reads its sched file: `se.nr_migrations`, and with `switches` its voluntary and
    /// involuntary switches. True when it gave the switches. A file that is not there (a
    /// kernel without it) or has no migrations line leaves the figure unknown, silently: it is
    /// an extra, and its absence says nothing about the workload's health.
    fn read_sched(
        &mut self,
        path: &impl Fn(&str) -> PathBuf,
        buf: &mut Vec<u8>,
        now: u64,
        switches: bool,
    ) -> bool {
        let Some(r) = self.sched.open(Reader::open_rare, || path("sched"), None) else {
            return false;
        };
        match r.read(buf) {
            Ok(b) => {
                let counts = parse::sched_counts(b);
                match counts.migrations {
                    Some(n) => {
                        self.sample.migrations = Some(n);
                        self.sample.migrations_ns = monotonic_ns();
                    }
                    // An empty read is a thread on its way out (schedstat says so next sweep).
                    None if b.is_empty() => return false,
                    None => {
                        self.sched = LazyFile::Absent;
                        return false;
                    }
                }
                match counts.switches {
                    Some((vol, invol)) if switches => {
                        self.sample.vol = Some(vol);
                        self.sample.invol = Some(invol);
                        self.sample.vol_ns = now;
                        self.status_slices = self.sample.slices;
                        true
                    }
                    _ => false,
                }
            }
            Err(ReadErr::Gone) => false,
            Err(ReadErr::Failed(_)) => {
                self.sched = LazyFile::Absent;
                false
            }
        }
    }

    /// Its allowed CPUs by sched_getaffinity, as status would list them. False when the call
    /// fails (a seccomp filter): status is read instead.
    fn take_allowed_cpus(&mut self, tid: u32, memo: &mut CpusMemo) -> bool {
        let Some(list) = allowed_cpus(tid, memo) else {
            return false;
        };
        if self.sample.cpus.as_deref() != Some(&*list) {
            self.sample.cpus = Some(list);
        }
        true
    }

    /// What a stat line says of its scheduling: state, CPU, nice, policy, priority.
    fn take_sched(&mut self, st: &parse::Stat) {
        self.sample.state = Some(st.state as char);
        self.sample.cpu = st.processor.or(self.sample.cpu);
        self.sample.nice = st.nice;
        self.sample.policy = st.policy;
        self.sample.rt_priority = st.rt_priority;
    }

    /// Reads schedstat; Ok(false) when its text is not schedstat's.
    fn read_schedstat(&mut self, buf: &mut Vec<u8>) -> Result<bool, ReadErr> {
        let b = self.schedstat.read(buf)?;
        let Some((run, wait, slices)) = parse::schedstat(b) else {
            return Ok(false);
        };
        // Keep the last read's values to judge what this interval held.
        self.prev = (self.sample.run_ns, self.sample.wait_ns, self.sample.read_ns);
        self.prev_slices = self.sample.slices;
        self.sample.run_ns = run;
        self.sample.wait_ns = wait;
        self.sample.slices = slices;
        // A vDSO call (tens of ns) next to the read's syscall (~1 µs).
        self.sample.read_ns = monotonic_ns();
        self.sample.state = None;
        Ok(true)
    }

    /// Its Sample as of the sweep that began at `sweep_ns`: one not read in that sweep (a big
    /// workload's rotation) has no state, which only a read tells.
    pub(super) fn sample_of(&self, sweep_ns: u64) -> TaskSample {
        let mut s = self.sample.clone();
        if s.read_ns < sweep_ns {
            s.state = None;
        }
        s
    }

    /// Whether it used (ran or waited for, as far as schedstat knows yet) less than most of
    /// the time since its last read, and hardly got a CPU in it: it may be waiting unseen.
    fn ran_little(&self) -> bool {
        let (run0, wait0, at0) = self.prev;
        if at0 == 0 || self.sample.slices.saturating_sub(self.prev_slices) > SUSPECT_MAX_SLICES {
            return false;
        }
        let own = self.sample.read_ns.saturating_sub(at0) as f64;
        let used =
            self.sample.run_ns.saturating_sub(run0) + self.sample.wait_ns.saturating_sub(wait0);
        (used as f64) < RAN_LITTLE * own
    }

    /// It ran or waited since its last read.
    pub(super) fn active(&self) -> bool {
        self.sample.run_ns != self.prev.0 || self.sample.wait_ns != self.prev.1
    }

    /// run and wait since the last read, when there was one.
    pub(super) fn deltas(&self) -> Option<(u64, u64)> {
        (self.prev.2 != 0).then(|| {
            (
                self.sample.run_ns.saturating_sub(self.prev.0),
                self.sample.wait_ns.saturating_sub(self.prev.1),
            )
        })
    }

    fn ran_at_all(&self) -> bool {
        self.sample.run_ns > self.prev.0
    }

    /// Timeslices run since the last read.
    pub(super) fn slices_since(&self) -> u64 {
        self.sample.slices.saturating_sub(self.prev_slices)
    }

    /// Never read before this sweep: its counters hold all it did since it was born.
    pub(super) fn first_read(&self) -> bool {
        self.prev.2 == 0
    }

    /// Reads status: switches and allowed CPUs.
    fn read_status(
        &mut self,
        path: &impl Fn(&str) -> PathBuf,
        buf: &mut Vec<u8>,
        now: u64,
        notes: &mut Vec<String>,
    ) -> Result<(), String> {
        let Some(r) = self
            .status
            .open(Reader::open_rare, || path("status"), Some(notes))
        else {
            return Ok(());
        };
        match r.read(buf) {
            Ok(b) => {
                let st = parse::status(b);
                if let (Some(v), Some(i)) = (st.vol, st.invol) {
                    self.sample.vol = Some(v);
                    self.sample.invol = Some(i);
                    self.sample.vol_ns = now;
                }
                if let Some(list) = st.cpus_allowed {
                    if self.sample.cpus.as_deref() != Some(list) {
                        self.sample.cpus = Some(list.into());
                    }
                }
                Ok(())
            }
            Err(ReadErr::Gone) => Ok(()),
            Err(ReadErr::Failed(why)) => Err(why),
        }
    }
}

pub(super) fn read_autogroup(proc_root: &Path, pid: u32, buf: &mut Vec<u8>) -> Option<(u64, i32)> {
    let path = proc_root.join(format!("{pid}/autogroup"));
    read_path(&path, buf).ok()?;
    parse::autogroup(buf)
}

fn read_group(sweep: &mut Sweep, pid: u32, buf: &mut Vec<u8>) -> Option<String> {
    if !read_cgroup_file(sweep.proc_root, pid, buf) {
        return None;
    }
    let text = buf.clone();
    sweep.cgroups.group_of(&text, buf, sweep.now)
}
