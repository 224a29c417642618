//! A big machine in a fake /proc and cgroup tree: many CPUs (256 by default), 64 cpu cgroups
//! under 8 slices and many threads (100,000) in a few workloads and the rest of the machine,
//! with counters that advance plausibly from one tick to the next, so the probe and the model
//! run over it as over a kernel developer's machine (benches/big_machine.rs,
//! tests/ui_big_machine.rs). Everything follows from the shape: the same shape gives the same
//! files.
//!
//! The load: each workload wants a share of the machine; the first four are pinned to a node
//! of a quarter of the CPUs each (so the first node is oversubscribed), the others may run
//! anywhere. Two threads in three of a workload want CPU, the third sleeps. Each CPU gives its
//! threads what they want while it can and shares itself out in proportion past that; what a
//! thread wanted and did not get is run-queue wait.

use super::{FakeProc, Process, Task, MS, S};
use schedlab::probe::Target;

/// What the machine is made of.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub cpus: u32,
    /// Leaf cgroups, 8 to a slice.
    pub cgroups: u32,
    /// Threads in all, the rest of the machine's included.
    pub threads: u32,
    pub workloads: u32,
}

impl Shape {
    /// The machine of issue 32: 256 CPUs, 64 cgroups, 100,000 threads in 8 workloads.
    pub const BIG: Shape = Shape {
        cpus: 256,
        cgroups: 64,
        threads: 100_000,
        workloads: 8,
    };
}

/// Threads per workload process (a pool), and per process of the rest of the machine.
const POOL: u32 = 100;
const REST_THREADS: u32 = 10;
/// The rest of the machine's share of the threads: 1 in 25 (4,000 of 100,000, what the probe
/// reads of the rest at most).
const REST_PART: u32 = 25;
/// Each workload's share of the machine, in percent of its CPUs (the rest wants 5%).
const WANTS: [u32; 8] = [30, 20, 10, 5, 15, 10, 5, 5];
const REST_WANTS: u32 = 5;
const WORKLOAD_NAMES: [&str; 8] = [
    "build", "db", "web", "batch", "render", "cache", "logger", "cron",
];
/// A CPU is at most this busy (interrupts and the like take the rest).
const CPU_MAX: f64 = 0.97;

/// What a generated thread gets of a CPU each second, and waits for.
#[derive(Clone, Copy, Default)]
struct Rate {
    got: f64,
    waited: f64,
}

struct GenProc {
    /// The process and its threads as last written.
    proc: Process,
    /// Its leaf cgroup.
    leaf: usize,
    /// Each thread's, in the order of `proc.threads`.
    rates: Vec<Rate>,
}

/// The generated machine: its processes, and what each tick adds to them.
pub struct BigMachine {
    pub shape: Shape,
    procs: Vec<GenProc>,
    /// Each CPU's share busy each second.
    cpu_busy: Vec<f64>,
    /// Per leaf cgroup: CPU a second (ns), and whether it has a quota.
    cgroup_cpu: Vec<f64>,
    pub targets: Vec<Target>,
}

/// The first pid of workload `w`; the rest of the machine's start after the workloads'.
fn first_pid(w: u32) -> u32 {
    1000 + w * 100_000
}

/// A leaf cgroup's path: 8 leaves to a slice.
pub fn leaf(i: u32) -> String {
    format!("/slice{}.slice/g{:02}", i / 8, i)
}

impl BigMachine {
    /// Lays out the machine of `shape`: no file is written yet.
    pub fn new(shape: Shape) -> BigMachine {
        let cpus = shape.cpus.max(4);
        let node = cpus / 4;
        let rest_threads = shape.threads / REST_PART;
        let per_workload = (shape.threads - rest_threads) / shape.workloads.max(1);
        let mut procs = Vec::new();
        // (thread index in procs, want) to share each CPU out afterwards.
        let mut wants: Vec<(usize, usize, f64, u32)> = Vec::new();
        let mut targets = Vec::new();
        let mut cpu_cursor = 0u32;
        for w in 0..shape.workloads {
            let pid0 = first_pid(w);
            let name = WORKLOAD_NAMES[w as usize % 8];
            targets.push(super::target(w + 1, name, pid0));
            let pinned = w < 4;
            let (lo, span) = if pinned { (w * node, node) } else { (0, cpus) };
            let allowed = format!("{lo}-{}", lo + span - 1);
            let runners = (per_workload * 2).div_ceil(3).max(1);
            let want =
                f64::from(WANTS[w as usize % 8]) / 100.0 * f64::from(cpus) / f64::from(runners);
            let nprocs = per_workload.div_ceil(POOL).max(1);
            let mut made = 0;
            for p in 0..nprocs {
                let pid = pid0 + p * (POOL + 1);
                let n = (per_workload - made).min(POOL);
                made += n;
                let cg = ((w % 8) * 8 + p % 8) % shape.cgroups.max(1);
                let mut proc = Process::new(pid)
                    .session(pid0)
                    .comm(&format!("{name}-{p}"))
                    .cgroup(&format!("0::{}\n", leaf(cg)));
                proc.pgid = pid0;
                proc.ppid = if p == 0 { 1 } else { pid0 };
                let mut threads = Vec::new();
                for i in 0..n {
                    let tid = pid + i;
                    let cpu = lo + (cpu_cursor % span);
                    cpu_cursor = cpu_cursor.wrapping_add(7);
                    let runs = (p * POOL + i) % 3 != 2;
                    let task =
                        Task::new(tid)
                            .on(cpu)
                            .cpus(&allowed)
                            .state(if runs { 'R' } else { 'S' });
                    if runs {
                        wants.push((procs.len(), threads.len(), want, cpu));
                    }
                    threads.push(task);
                }
                proc.threads = threads;
                procs.push(GenProc {
                    rates: vec![Rate::default(); proc.threads.len()],
                    proc,
                    leaf: cg as usize,
                });
            }
        }
        // The rest of the machine: small processes in sessions of their own, in every leaf.
        let rest_pid0 = first_pid(shape.workloads);
        let rest_procs = rest_threads.div_ceil(REST_THREADS);
        let rest_want =
            f64::from(REST_WANTS) / 100.0 * f64::from(cpus) / f64::from(rest_threads.max(1));
        let mut made = 0;
        for p in 0..rest_procs {
            let pid = rest_pid0 + p * (REST_THREADS + 1);
            let n = (rest_threads - made).min(REST_THREADS);
            made += n;
            let comm = ["kworker/u512:3", "cc1", "systemd-journal", "sshd", "make"][p as usize % 5];
            let cg = p % shape.cgroups.max(1);
            let mut proc = Process::new(pid)
                .comm(comm)
                .cgroup(&format!("0::{}\n", leaf(cg)));
            let mut threads = Vec::new();
            for i in 0..n {
                let cpu = (p * 13 + i * 5) % cpus;
                wants.push((procs.len(), threads.len(), rest_want, cpu));
                threads.push(Task::new(pid + i).on(cpu).cpus(&format!("0-{}", cpus - 1)));
            }
            proc.threads = threads;
            procs.push(GenProc {
                rates: vec![Rate::default(); proc.threads.len()],
                proc,
                leaf: cg as usize,
            });
        }

        // Each CPU gives what is wanted of it up to CPU_MAX, in proportion past that.
        let mut asked = vec![0.0; cpus as usize];
        for &(_, _, want, cpu) in &wants {
            asked[cpu as usize] += want;
        }
        let mut cpu_busy = vec![0.0; cpus as usize];
        for &(p, t, want, cpu) in &wants {
            let scale = (CPU_MAX / asked[cpu as usize]).min(1.0);
            let g = &mut procs[p].rates[t];
            g.got = want * scale;
            // Even an uncontended thread waits a little behind the others on its CPU.
            g.waited = want - g.got + want * 0.02;
            cpu_busy[cpu as usize] += g.got;
        }
        let mut cgroup_cpu = vec![0.0; shape.cgroups.max(1) as usize];
        for gp in &procs {
            cgroup_cpu[gp.leaf] += gp.rates.iter().map(|g| g.got).sum::<f64>();
        }
        BigMachine {
            shape: Shape { cpus, ..shape },
            procs,
            cpu_busy,
            cgroup_cpu,
            targets,
        }
    }

    /// Threads in all.
    pub fn threads(&self) -> usize {
        self.procs.iter().map(|p| p.proc.threads.len()).sum()
    }

    pub fn processes(&self) -> usize {
        self.procs.len()
    }

    /// Writes everything the probe reads before it is made: the cgroup hierarchy (mounted in
    /// self/mountinfo), /proc/schedstat, cpuinfo and the CPU lists; then tick 0.
    pub fn write_first(&mut self, f: &FakeProc) {
        f.mount_v2();
        f.cgroup_file("/", "cgroup.subtree_control", "cpu io memory\n");
        for s in 0..self.shape.cgroups.div_ceil(8) {
            let slice = format!("/slice{s}.slice");
            f.cgroup_file(&slice, "cpu.weight", &format!("{}\n", 100 * (1 + s % 4)));
            f.cgroup_file(&slice, "cgroup.subtree_control", "cpu memory\n");
        }
        for i in 0..self.shape.cgroups {
            // Weights 50 to 400; a quota on one leaf in eight, a fifth above what its tasks
            // get (the kernel would hold them to a quota below it).
            f.cgroup_file(&leaf(i), "cpu.weight", &format!("{}\n", 50 * (1 + i % 8)));
            let max = if i % 8 == 7 {
                let quota = (self.cgroup_cpu[i as usize] * 1.2).max(0.5);
                format!("{} 100000\n", (quota * 100_000.0) as u64)
            } else {
                "max 100000\n".to_string()
            };
            f.cgroup_file(&leaf(i), "cpu.max", &max);
        }
        let cpus = self.shape.cpus;
        let mut info = String::new();
        for c in 0..cpus {
            info.push_str(&format!(
                "processor\t: {c}\nvendor_id\t: AuthenticAMD\nmodel name\t: Fake EPYC 256-core\n\
                 physical id\t: {}\ncore id\t\t: {}\ncpu MHz\t\t: 2450.000\n\n",
                c / (cpus / 2).max(1),
                c % (cpus / 2).max(1)
            ));
        }
        f.write("cpuinfo", &info);
        let list = format!("0-{}\n", cpus - 1);
        for name in ["online", "possible", "present"] {
            f.write_sys(&format!("devices/system/cpu/{name}"), &list);
        }
        self.set_counters(0);
        for p in &self.procs {
            f.put(&p.proc);
        }
        self.write_machine(f, 0);
    }

    /// Writes what the machine shows `k` seconds in: every thread's schedstat and switches,
    /// each process's stat, /proc/stat, /proc/schedstat and the cgroups' cpu.stat.
    pub fn write_tick(&mut self, f: &FakeProc, k: u64) {
        self.set_counters(k);
        for gp in &self.procs {
            f.advance(&gp.proc);
        }
        self.write_machine(f, k);
    }

    /// Every thread's counters and each process's CPU ticks `k` seconds in.
    fn set_counters(&mut self, k: u64) {
        let secs = k as f64;
        for gp in &mut self.procs {
            let mut ticks = 0;
            for (t, g) in gp.proc.threads.iter_mut().zip(&gp.rates) {
                // A base so that no counter starts at zero, as on a machine up for a while.
                let base = u64::from(t.tid % 977) * 10 * MS;
                t.run_ns = base + (g.got * secs * S as f64) as u64;
                t.wait_ns = base / 4 + (g.waited * secs * S as f64) as u64;
                t.slices = t.run_ns / (3 * MS);
                t.invol = (g.waited * secs * 250.0) as u64 + u64::from(t.tid % 50);
                t.vol = (secs * if t.state == 'S' { 20.0 } else { 100.0 }) as u64
                    + u64::from(t.tid % 300);
                ticks += t.run_ns / (10 * MS);
            }
            gp.proc.cpu_ticks = ticks;
        }
    }

    /// /proc/stat, /proc/schedstat and the cgroups' cpu.stat `k` seconds in.
    fn write_machine(&self, f: &FakeProc, k: u64) {
        let secs = k as f64;
        let per_cpu: Vec<(u64, u64)> = self
            .cpu_busy
            .iter()
            .enumerate()
            .map(|(c, &b)| {
                let busy = (5000.0 + b * secs * 100.0) as u64 + c as u64;
                let idle = (20000.0 + (1.0 - b) * secs * 100.0) as u64;
                (busy, idle)
            })
            .collect();
        let switches: u64 = self.threads() as u64 * 60;
        f.cpus(&per_cpu, 1_000_000 + k * switches);
        let mut schedstat = String::from("version 15\ntimestamp 4295000000\n");
        for (c, &b) in self.cpu_busy.iter().enumerate() {
            let run = (b * secs * S as f64) as u64;
            schedstat.push_str(&format!(
                "cpu{c} 0 0 0 0 0 0 {run} {} {}\n",
                run / 20,
                k * 5000
            ));
        }
        f.write("schedstat", &schedstat);
        // Each slice counts its leaves' usage, as the kernel's hierarchy does.
        let slices = self.cgroup_cpu.chunks(8).map(|c| c.iter().sum::<f64>());
        for (s, cpu) in slices.enumerate() {
            let usage = (cpu * secs * 1e6) as u64;
            f.cgroup_file(
                &format!("/slice{s}.slice"),
                "cpu.stat",
                &format!("usage_usec {usage}\nuser_usec {usage}\nsystem_usec 0\n"),
            );
        }
        for (i, &cpu) in self.cgroup_cpu.iter().enumerate() {
            let usage = (cpu * secs * 1e6) as u64;
            let throttled = if i % 8 == 7 { k } else { 0 };
            f.cgroup_file(
                &leaf(i as u32),
                "cpu.stat",
                &format!(
                    "usage_usec {usage}\nuser_usec {usage}\nsystem_usec 0\nnr_periods {}\n\
                     nr_throttled {throttled}\nthrottled_usec {}\n",
                    k * 10,
                    throttled * 2_000
                ),
            );
        }
    }
}
