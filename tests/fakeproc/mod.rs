//! Fake /proc and /sys trees for the probe, and a session that drives the probe and the
//! model over them with pinned clocks, so the Frames they give are exactly reproducible.
//!
//! Files are rewritten in place: the probe keeps them open and re-reads them with pread, as
//! it does on the real /proc.
#![allow(dead_code)]

pub mod big;

use std::cell::RefCell;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use schedlab::model::{Frame, Model};
use schedlab::probe::{monotonic_ns, Probe, ProbeConfig, Sample, Target};

pub const S: u64 = 1_000_000_000;
pub const MS: u64 = 1_000_000;

/// One fake thread: tid, run ns, wait ns, slices, voluntary, involuntary.
pub type Thread = (u32, u64, u64, u64, u64, u64);

/// What /proc/stat says.
#[derive(Clone)]
struct MachineText {
    /// The `cpu` line's busy and idle ticks.
    total: (u64, u64),
    /// Each `cpuN` line's busy and idle ticks.
    per_cpu: Vec<(u64, u64)>,
    ctxt: u64,
    /// Bumped when a new pid appears, as on Linux.
    forks: u64,
}

pub struct FakeProc {
    dir: tempfile::TempDir,
    machine: RefCell<MachineText>,
    /// Where the cpu controller's hierarchy is mounted, once mounted.
    cgroup_point: RefCell<Option<PathBuf>>,
}

/// A process as the first fake-tree tests describe it: every thread runnable, on CPU 0,
/// of the process's nice and policy 0, free to run anywhere.
pub struct Proc<'a> {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    pub session: u32,
    pub start: u64,
    pub cpu_ticks: u64,
    pub child_ticks: u64,
    pub nice: i32,
    pub autogroup: (u64, i32),
    pub threads: &'a [Thread],
}

impl<'a> Proc<'a> {
    /// A child of init that leads its own process group and session, at nice 0, with nothing
    /// used yet: a test writes `Proc { what differs, ..Proc::leader(..) }`.
    pub fn leader(pid: u32, start: u64, autogroup: u64, threads: &'a [Thread]) -> Self {
        Self {
            pid,
            ppid: 1,
            pgid: pid,
            session: pid,
            start,
            cpu_ticks: 0,
            child_ticks: 0,
            nice: 0,
            autogroup: (autogroup, 0),
            threads,
        }
    }
}

/// A process with everything the probe reads of it.
#[derive(Clone, Debug)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    pub session: u32,
    pub start: u64,
    pub comm: String,
    pub cpu_ticks: u64,
    pub child_ticks: u64,
    /// The autogroup file: Some((id, nice)), or None for the root autogroup (the kernel
    /// prints nothing then).
    pub autogroup: Option<(u64, i32)>,
    /// The text of /proc/PID/cgroup; None writes no such file.
    pub cgroup: Option<String>,
    pub threads: Vec<Task>,
}

/// A thread with everything the probe reads of it.
#[derive(Clone, Debug)]
pub struct Task {
    pub tid: u32,
    /// schedstat: cumulative ns on CPU, ns waiting on a run queue, timeslices.
    pub run_ns: u64,
    pub wait_ns: u64,
    pub slices: u64,
    /// status: switches and `Cpus_allowed_list` (None: no such line).
    pub vol: u64,
    pub invol: u64,
    pub cpus_allowed: Option<String>,
    /// stat: state letter, last CPU, nice, real-time priority, policy.
    pub state: char,
    pub cpu: u32,
    pub nice: i32,
    pub rt_priority: u32,
    pub policy: u32,
}

impl Process {
    /// A process leading its own group and session, in its session's autogroup (id = pid).
    pub fn new(pid: u32) -> Process {
        Process {
            pid,
            ppid: 1,
            pgid: pid,
            session: pid,
            start: u64::from(pid) * 10,
            comm: format!("fake {pid}"),
            cpu_ticks: 0,
            child_ticks: 0,
            autogroup: Some((u64::from(pid), 0)),
            cgroup: None,
            threads: Vec::new(),
        }
    }

    /// The same process with one thread, its main one.
    pub fn single(pid: u32, main: Task) -> Process {
        Process {
            threads: vec![Task { tid: pid, ..main }],
            ..Process::new(pid)
        }
    }

    /// In session `sid` (led by another process), whose autogroup has the same id.
    pub fn session(mut self, sid: u32) -> Process {
        self.session = sid;
        self.autogroup = Some((u64::from(sid), 0));
        self
    }

    pub fn autogroup(mut self, ag: Option<(u64, i32)>) -> Process {
        self.autogroup = ag;
        self
    }

    /// Its /proc/PID/cgroup text.
    pub fn cgroup(mut self, text: &str) -> Process {
        self.cgroup = Some(text.to_string());
        self
    }

    pub fn comm(mut self, comm: &str) -> Process {
        self.comm = comm.to_string();
        self
    }
}

impl Task {
    /// A runnable thread on CPU 0 that has not run yet.
    pub fn new(tid: u32) -> Task {
        Task {
            tid,
            run_ns: 0,
            wait_ns: 0,
            slices: 0,
            vol: 0,
            invol: 0,
            cpus_allowed: None,
            state: 'R',
            cpu: 0,
            nice: 0,
            rt_priority: 0,
            policy: 0,
        }
    }

    /// A thread that ran `run_ns` and waited `wait_ns` in all, one slice per 10 ms it ran.
    pub fn ran(run_ns: u64, wait_ns: u64) -> Task {
        Task {
            run_ns,
            wait_ns,
            slices: run_ns / (10 * MS),
            invol: run_ns / (10 * MS),
            ..Task::new(0)
        }
    }

    pub fn cpus(mut self, list: &str) -> Task {
        self.cpus_allowed = Some(list.to_string());
        self
    }

    pub fn on(mut self, cpu: u32) -> Task {
        self.cpu = cpu;
        self
    }

    pub fn policy(mut self, policy: u32, rt_priority: u32) -> Task {
        self.policy = policy;
        self.rt_priority = rt_priority;
        self
    }

    pub fn state(mut self, state: char) -> Task {
        self.state = state;
        self
    }
}

impl FakeProc {
    pub fn new() -> FakeProc {
        FakeProc::with_dir(tempfile::tempdir().unwrap())
    }

    /// A tree in a temporary directory under `parent`: /dev/shm for a big one, where a file
    /// is rewritten in microseconds (on this VM's ext4 /tmp, truncating one took 250 µs).
    pub fn new_in(parent: &Path) -> FakeProc {
        FakeProc::with_dir(tempfile::tempdir_in(parent).unwrap())
    }

    fn with_dir(dir: tempfile::TempDir) -> FakeProc {
        let f = FakeProc {
            dir,
            machine: RefCell::new(MachineText {
                total: (0, 1000),
                per_cpu: vec![(0, 0), (0, 0)],
                ctxt: 0,
                forks: 500,
            }),
            cgroup_point: RefCell::new(None),
        };
        fs::create_dir_all(f.root()).unwrap();
        fs::create_dir_all(f.sys()).unwrap();
        f.write("sys/kernel/sched_autogroup_enabled", "1\n");
        f.write(
            "pressure/cpu",
            "some avg10=12.50 avg60=4.07 avg300=4.94 total=36218594\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        );
        f.machine(0, 0);
        f
    }

    /// The fake /proc.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("proc")
    }

    /// The fake /sys, beside it.
    pub fn sys(&self) -> PathBuf {
        self.dir.path().join("sys")
    }

    /// Writes a file under the fake /proc.
    pub fn write(&self, rel: &str, text: &str) {
        write_in_place(&self.root().join(rel), text);
    }

    /// Writes a file under the fake /sys.
    pub fn write_sys(&self, rel: &str, text: &str) {
        write_in_place(&self.sys().join(rel), text);
    }

    /// /proc/stat with `busy_ticks` of busy time over 2 CPUs whose own lines say nothing.
    pub fn machine(&self, busy_ticks: u64, ctxt: u64) {
        {
            let mut m = self.machine.borrow_mut();
            m.total = (busy_ticks, 1000);
            // Two CPUs, busy alike.
            m.per_cpu = vec![(busy_ticks / 2, 500), (busy_ticks - busy_ticks / 2, 500)];
            m.ctxt = ctxt;
        }
        self.write_machine();
    }

    /// /proc/stat with these CPUs' (busy, idle) ticks since boot, and their sum.
    pub fn cpus(&self, per_cpu: &[(u64, u64)], ctxt: u64) {
        {
            let mut m = self.machine.borrow_mut();
            m.total = per_cpu
                .iter()
                .fold((0, 0), |(b, i), &(b1, i1)| (b + b1, i + i1));
            m.per_cpu = per_cpu.to_vec();
            m.ctxt = ctxt;
        }
        self.write_machine();
    }

    fn fork(&self) {
        self.machine.borrow_mut().forks += 1;
        self.write_machine();
    }

    fn write_machine(&self) {
        let m = self.machine.borrow().clone();
        let mut text = format!("cpu  {} 0 0 {} 0 0 0 0 0 0\n", m.total.0, m.total.1);
        for (id, (busy, idle)) in m.per_cpu.iter().enumerate() {
            text.push_str(&format!("cpu{id} {busy} 0 0 {idle} 0 0 0 0 0 0\n"));
        }
        text.push_str(&format!(
            "intr 0\nctxt {}\nbtime 1\nprocesses {}\nprocs_running 5\nprocs_blocked 0\n",
            m.ctxt, m.forks
        ));
        self.write("stat", &text);
    }

    /// A stat line. `main` gives the fields that are the main thread's in a process's stat.
    fn stat_line(
        p: &Process,
        id: u32,
        nthreads: usize,
        cpu: u64,
        child: u64,
        main: &Task,
    ) -> String {
        let zeros = vec!["0"; 14].join(" ");
        format!(
            "{id} ({}) {} {} {} {} 0 -1 0 0 0 0 0 {cpu} 0 {child} 0 20 {} {nthreads} 0 {} 0 0 {zeros} {} {} {} 0 0\n",
            p.comm,
            main.state,
            p.ppid,
            p.pgid,
            p.session,
            main.nice,
            p.start,
            main.cpu,
            main.rt_priority,
            main.policy
        )
    }

    /// Writes a process as the first fake-tree tests describe it.
    pub fn process(&self, p: &Proc) {
        let threads = p
            .threads
            .iter()
            .map(|&(tid, run, wait, slices, vol, invol)| Task {
                tid,
                run_ns: run,
                wait_ns: wait,
                slices,
                vol,
                invol,
                nice: p.nice,
                ..Task::new(tid)
            })
            .collect();
        self.put(&Process {
            pid: p.pid,
            ppid: p.ppid,
            pgid: p.pgid,
            session: p.session,
            start: p.start,
            comm: format!("fake {}", p.pid),
            cpu_ticks: p.cpu_ticks,
            child_ticks: p.child_ticks,
            autogroup: Some(p.autogroup),
            cgroup: None,
            threads,
        });
    }

    /// Writes a process and its threads, dropping threads no longer listed.
    pub fn put(&self, p: &Process) {
        let base = format!("{}", p.pid);
        if !self.root().join(&base).exists() {
            self.fork();
        }
        // The process's stat holds the main thread's state, CPU, nice and policy.
        let fallback = Task::new(p.pid);
        let main = p
            .threads
            .iter()
            .find(|t| t.tid == p.pid)
            .or(p.threads.first())
            .unwrap_or(&fallback);
        self.write(
            &format!("{base}/stat"),
            &Self::stat_line(p, p.pid, p.threads.len(), p.cpu_ticks, p.child_ticks, main),
        );
        self.write(
            &format!("{base}/autogroup"),
            &match p.autogroup {
                Some((id, nice)) => format!("/autogroup-{id} nice {nice}\n"),
                None => String::new(),
            },
        );
        if let Some(text) = &p.cgroup {
            self.write(&format!("{base}/cgroup"), text);
        }
        let task_dir = self.root().join(format!("{base}/task"));
        if task_dir.exists() {
            for entry in fs::read_dir(&task_dir).unwrap() {
                let tid: u32 = entry
                    .unwrap()
                    .file_name()
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                if !p.threads.iter().any(|t| t.tid == tid) {
                    // As an exited thread's files held open read on Linux (ESRCH, or nothing).
                    for rel in ["schedstat", "status", "stat"] {
                        self.write(&format!("{base}/task/{tid}/{rel}"), "");
                    }
                    fs::remove_dir_all(task_dir.join(tid.to_string())).unwrap();
                }
            }
        }
        for t in &p.threads {
            self.write_thread(p, t, true);
        }
    }

    /// A thread's schedstat and status, and with `stat` its stat.
    fn write_thread(&self, p: &Process, t: &Task, stat: bool) {
        let dir = format!("{}/task/{}", p.pid, t.tid);
        self.write(
            &format!("{dir}/schedstat"),
            &format!("{} {} {}\n", t.run_ns, t.wait_ns, t.slices),
        );
        let cpus = t
            .cpus_allowed
            .as_ref()
            .map(|l| format!("Cpus_allowed_list:\t{l}\n"))
            .unwrap_or_default();
        self.write(
            &format!("{dir}/status"),
            &format!(
                "Name:\tfake\nState:\t{}\n{cpus}voluntary_ctxt_switches:\t{}\nnonvoluntary_ctxt_switches:\t{}\n",
                t.state, t.vol, t.invol
            ),
        );
        if stat {
            // A thread's stat gives its process's thread count, as Linux's does: a process
            // of more than 16 threads is re-listed whenever its main thread's stat disagrees.
            self.write(
                &format!("{dir}/stat"),
                &Self::stat_line(p, t.tid, p.threads.len(), 0, 0, t),
            );
        }
    }

    /// The counters of a process already written with `put` and of the same threads in the
    /// same states: its stat, and each thread's schedstat and status. A tree of 100,000
    /// threads advances in a third fewer writes than `put` takes.
    pub fn advance(&self, p: &Process) {
        let main = p
            .threads
            .iter()
            .find(|t| t.tid == p.pid)
            .or(p.threads.first())
            .expect("a process with threads");
        self.write(
            &format!("{}/stat", p.pid),
            &Self::stat_line(p, p.pid, p.threads.len(), p.cpu_ticks, p.child_ticks, main),
        );
        for t in &p.threads {
            self.write_thread(p, t, false);
        }
    }

    /// The process exits. The probe holds its files open: on Linux they then fail with
    /// ESRCH; here they are emptied before removal, which the probe must treat the same.
    pub fn remove(&self, pid: u32) {
        let dir = self.root().join(pid.to_string());
        for rel in ["stat", "autogroup"] {
            self.write(&format!("{pid}/{rel}"), "");
        }
        for entry in fs::read_dir(dir.join("task")).unwrap() {
            let tid = entry.unwrap().file_name();
            for rel in ["schedstat", "status", "stat"] {
                self.write(&format!("{pid}/task/{}/{rel}", tid.to_str().unwrap()), "");
            }
        }
        fs::remove_dir_all(dir).unwrap();
    }

    /// A probe with no /sys to read, reading status at every sweep.
    pub fn probe(&self) -> Probe {
        Probe::new(ProbeConfig {
            proc_root: self.root(),
            sys_root: self.root().join("sys-none"),
            status_every: Duration::ZERO,
        })
        .unwrap()
    }

    /// A probe of the fake /proc and /sys, reading status this often (zero: every sweep).
    pub fn probe_every(&self, status_every: Duration) -> Probe {
        Probe::new(ProbeConfig {
            proc_root: self.root(),
            sys_root: self.sys(),
            status_every,
        })
        .unwrap()
    }

    /// Mounts a cgroup v1 hierarchy with the cpu and cpuacct controllers at
    /// sys/fs/cgroup/cpu,cpuacct, as self/mountinfo says (before the probe is made: it reads
    /// mountinfo once).
    pub fn mount_v1(&self) {
        let memory = self.sys().join("fs/cgroup/memory");
        self.mount(
            "fs/cgroup/cpu,cpuacct",
            "shared:9 - cgroup cgroup rw,cpu,cpuacct",
            &format!(
                "31 22 0:27 / {} rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,memory\n",
                memory.display()
            ),
        );
    }

    /// Mounts the cgroup v2 hierarchy at sys/fs/cgroup with the cpu controller available.
    /// Which levels enable it for their children is up to each test (cgroup.subtree_control).
    pub fn mount_v2(&self) {
        let point = self.mount("fs/cgroup", "shared:4 - cgroup2 cgroup2 rw,nsdelegate", "");
        write_in_place(
            &point.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        );
    }

    /// Makes `dir` (under sys/) the cgroup hierarchy self/mountinfo mounts with `fields` (its
    /// optional fields onwards), after the root filesystem and before `more` lines.
    fn mount(&self, dir: &str, fields: &str, more: &str) -> PathBuf {
        let point = self.sys().join(dir);
        fs::create_dir_all(&point).unwrap();
        self.write(
            "self/mountinfo",
            &format!(
                "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw\n\
                 30 22 0:26 / {} rw,nosuid,nodev,noexec,relatime {fields}\n{more}",
                point.display()
            ),
        );
        *self.cgroup_point.borrow_mut() = Some(point.clone());
        point
    }

    /// Writes `file` of the cgroup at `path` ("/" is the root) in the mounted hierarchy.
    pub fn cgroup_file(&self, path: &str, file: &str, text: &str) {
        let point = self
            .cgroup_point
            .borrow()
            .clone()
            .expect("mount a hierarchy first");
        write_in_place(&point.join(path.trim_start_matches('/')).join(file), text);
    }
}

/// A workload that is the process group `pgid`.
pub fn target(id: u32, name: &str, pgid: u32) -> Target {
    Target {
        id,
        name: name.into(),
        pgid,
        leader: pgid,
        cgroup: None,
        counters: None,
        ops_unit: "unit".into(),
        attach: None,
        paced: false,
    }
}

/// Fixes the clocks so Frames are exactly reproducible: sample k at k seconds, no observer.
pub fn pin(mut s: Sample, k: u64) -> Sample {
    s.t_ns = k * S;
    s.status_t_ns = s.t_ns;
    s.machine.stat_ns = s.t_ns;
    // Every thread read at the sample's instant, as a sweep that took no time; its switches
    // too, once read (these trees ask for status at every sweep).
    for w in &mut s.workloads {
        for p in &mut w.processes {
            for th in &mut p.threads {
                th.read_ns = s.t_ns;
                if th.vol_ns != 0 {
                    th.vol_ns = s.t_ns;
                }
            }
        }
    }
    s.observer_cpu_ns = 0;
    s.probe_cpu_ns = 0;
    s
}

/// The probe and the model over a fake tree, as the engine runs them (the first Frame from
/// the first Sample, then one per interval), with the clocks pinned: sweep k happens at
/// `EPOCH` + k × `step`, and every time the probe stamped during a sweep (status, schedstat
/// and switch reads, the rest of the machine's reads) becomes that sweep's. Frame times
/// count from the first sweep.
pub struct Session {
    pub probe: Probe,
    pub model: Model,
    step_ns: u64,
    /// Monotonic time before and after each sweep.
    sweeps: Vec<(u64, u64)>,
    pub samples: Vec<Sample>,
    pub frames: Vec<Frame>,
    /// Monotonic ns each sweep took, and each model step (the first Frame's included).
    pub sweep_ns: Vec<u64>,
    pub model_ns: Vec<u64>,
}

/// Where pinned time starts: a monotonic clock is never 0, which Samples use for "never".
pub const EPOCH: u64 = 1000 * S;

impl Session {
    pub fn new(probe: Probe, model: Model, step: Duration) -> Session {
        Session {
            probe,
            model,
            step_ns: step.as_nanos() as u64,
            sweeps: Vec::new(),
            samples: Vec::new(),
            frames: Vec::new(),
            sweep_ns: Vec::new(),
            model_ns: Vec::new(),
        }
    }

    /// One sweep; returns its Frame.
    pub fn sample(&mut self, targets: &[Target]) -> &Frame {
        let before = monotonic_ns();
        let s = self.probe.sample(targets);
        let after = monotonic_ns();
        self.sweeps.push((before, after));
        self.sweep_ns.push(after - before);
        let s = self.pin(s);
        let stepping = monotonic_ns();
        let frame = match self.samples.last() {
            Some(prev) => self.model.step(prev, &s),
            None => self.model.first(&s),
        };
        self.model_ns.push(monotonic_ns() - stepping);
        self.samples.push(s);
        self.frames.push(frame);
        self.frames.last().unwrap()
    }

    /// The sweep a monotonic time falls in, as pinned time (0 stays 0: never).
    fn at(&self, ts: u64) -> u64 {
        if ts == 0 {
            return 0;
        }
        let k = self
            .sweeps
            .iter()
            .position(|&(a, b)| a <= ts && ts <= b)
            .unwrap_or_else(|| panic!("time {ts} is in no sweep"));
        EPOCH + k as u64 * self.step_ns
    }

    fn pin(&self, mut s: Sample) -> Sample {
        s.t_ns = EPOCH + (self.sweeps.len() as u64 - 1) * self.step_ns;
        s.status_t_ns = self.at(s.status_t_ns);
        for w in &mut s.workloads {
            for p in &mut w.processes {
                for th in &mut p.threads {
                    th.read_ns = self.at(th.read_ns);
                    th.vol_ns = self.at(th.vol_ns);
                }
            }
        }
        s.machine.stat_ns = self.at(s.machine.stat_ns);
        if let Some(r) = &mut s.machine.rest {
            r.t_ns = self.at(r.t_ns);
            r.since_ns = self.at(r.since_ns);
        }
        s.observer_cpu_ns = 0;
        s.probe_cpu_ns = 0;
        s
    }
}

fn write_in_place(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    use std::io::{Seek, Write};
    let mut f = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .unwrap();
    f.set_len(0).unwrap();
    f.seek(std::io::SeekFrom::Start(0)).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}
