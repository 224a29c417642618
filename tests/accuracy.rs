//! Accuracy on the real kernel: four CPU hogs and a fork loop on this machine; the CPU
//! seconds schedlab's probe and model give each workload over a 5 s window must agree with
//! an independent measure, the CPU usage of a cgroup created for the check (cgroup v1
//! cpuacct, or v2 cpu.stat), within 2% of the machine. Once with the fork loop in the test's
//! session, once in its own (setsid), where autogroup gives it a different fair share.
//!
//! The accounting cgroup only measures: on these machines cpuacct is mounted apart from the
//! cpu controller, so the scheduling (and autogroup) is unchanged. The probe is not told
//! about the cgroup: it is the /proc accounting (schedstat + reaped children) under test.

use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::{setpgid, setsid, write, Pid};
use schedlab::model::Model;
use schedlab::probe::{Probe, ProbeConfig, Target};

/// A measuring cgroup, removed on drop (after its processes are gone).
struct Cgroup {
    dir: PathBuf,
    v2: bool,
}

impl Cgroup {
    fn create(name: &str) -> Cgroup {
        let candidates = [
            ("/sys/fs/cgroup/cpuacct", false),
            ("/sys/fs/cgroup/cpu,cpuacct", false),
            ("/sys/fs/cgroup/unified", true),
            ("/sys/fs/cgroup", true),
        ];
        let mut why = Vec::new();
        for (base, v2) in candidates {
            let marker = if v2 {
                "cgroup.controllers"
            } else {
                "cpuacct.usage"
            };
            if !Path::new(base).join(marker).exists() {
                continue;
            }
            let dir =
                Path::new(base).join(format!("schedlab-accuracy-{}-{name}", std::process::id()));
            match fs::create_dir(&dir) {
                Ok(()) => return Cgroup { dir, v2 },
                Err(e) => why.push(format!("{}: {e}", dir.display())),
            }
        }
        panic!(
            "THIS TEST NEEDS root and a writable cgroup (v1 cpuacct or v2) to measure CPU \
             independently; none found: {why:?}"
        );
    }

    fn usage_ns(&self) -> u64 {
        if self.v2 {
            let text = fs::read_to_string(self.dir.join("cpu.stat")).unwrap();
            let line = text.lines().find(|l| l.starts_with("usage_usec ")).unwrap();
            line[11..].trim().parse::<u64>().unwrap() * 1000
        } else {
            fs::read_to_string(self.dir.join("cpuacct.usage"))
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The killed processes leave the cgroup as they are reaped.
        for _ in 0..200 {
            if fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!("warning: could not remove {}", self.dir.display());
    }
}

/// A shell workload in its own process group (or session), inside `cg` from its first
/// instruction; killed with its whole group on drop.
struct Workload {
    child: Child,
}

impl Workload {
    fn start(script: &str, cg: &Cgroup, own_session: bool) -> Workload {
        let procs = fs::OpenOptions::new()
            .write(true)
            .open(cg.dir.join("cgroup.procs"))
            .unwrap();
        let fd = procs.as_raw_fd();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        // SAFETY: the closure runs in the forked child before exec and only calls setsid, setpgid
        // and write(2) of a 'static byte to `fd`, which `procs` keeps open until after spawn; all
        // async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if own_session {
                    let _ = setsid();
                } else {
                    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
                }
                // "0" moves the writing process itself.
                // `procs` keeps `fd` open until after the spawn.
                if write(BorrowedFd::borrow_raw(fd), b"0")? != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        drop(procs);
        Workload { child }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

fn target(id: u32, name: &str, w: &Workload) -> Target {
    Target {
        id,
        name: name.into(),
        pgid: w.pid(),
        leader: w.pid(),
        cgroup: None,
        counters: None,
        ops_unit: String::new(),
        attach: None,
        paced: false,
    }
}

/// One measurement at a time: two sets of hogs would only slow each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn check(own_session: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cg_hogs = Cgroup::create(if own_session { "hogs-s" } else { "hogs" });
    let cg_forks = Cgroup::create(if own_session { "forks-s" } else { "forks" });
    let hogs = Workload::start(
        "for i in 1 2 3 4; do (while :; do :; done) & done; wait",
        &cg_hogs,
        false,
    );
    let forks = Workload::start("while :; do /bin/true; done", &cg_forks, own_session);
    std::thread::sleep(Duration::from_millis(300));

    let targets = [target(1, "hogs", &hogs), target(2, "fork-loop", &forks)];
    let mut probe = Probe::new(ProbeConfig {
        status_every: Duration::from_secs(1),
        ..ProbeConfig::default()
    })
    .unwrap();
    let mut model = Model::new();
    let mut prev = probe.sample(&targets);
    let u0 = (cg_hogs.usage_ns(), cg_forks.usage_ns());
    let mut ours = [0.0f64; 2];
    let mut fair = [0.0f64; 2];
    let mut window = 0.0;
    let mut groups = Vec::new();
    // Ten 500 ms intervals: 5 s.
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(500));
        let cur = probe.sample(&targets);
        let frame = model.step(&prev, &cur);
        for (i, w) in frame.workloads.iter().enumerate() {
            ours[i] += w.cpu_received * frame.interval;
            fair[i] += w.cpu_fair * frame.interval;
        }
        window += frame.interval;
        groups = frame.workloads.iter().map(|w| w.group.clone()).collect();
        prev = cur;
    }
    let u1 = (cg_hogs.usage_ns(), cg_forks.usage_ns());
    let truth = [(u1.0 - u0.0) as f64 / 1e9, (u1.1 - u0.1) as f64 / 1e9];
    let cpus = prev.machine.cpus as f64;
    let machine = cpus * window;
    let mut report = std::io::stderr();
    for (i, name) in ["hogs", "fork-loop"].iter().enumerate() {
        let _ =
            writeln!(
            report,
            "{} {name:9}: schedlab {:.3} CPU-s, cgroup {:.3} CPU-s, diff {:+.2}% of the machine; \
             fair share {:.2} CPUs, received {:.2} ({})",
            if own_session { "own session" } else { "one session" },
            ours[i],
            truth[i],
            (ours[i] - truth[i]) / machine * 100.0,
            fair[i] / window,
            ours[i] / window,
            groups[i],
        );
    }
    for i in 0..2 {
        assert!(
            (ours[i] - truth[i]).abs() <= 0.02 * machine,
            "workload {i}: schedlab {:.3} CPU-s vs cgroup {:.3} CPU-s over {window:.2} s on {cpus} CPUs",
            ours[i],
            truth[i]
        );
        // Not a timing check (the machine may be busy): only that there was something to
        // measure.
        assert!(truth[i] > 0.01, "workload {i} did not run: {truth:?}");
    }
    // With autogroup on, the loop in its own session is in another scheduling group.
    if prev.machine.autogroup {
        assert_eq!(groups[0] != groups[1], own_session, "{groups:?}");
    }
    drop(hogs);
    drop(forks);
}

#[test]
fn cpu_seconds_match_the_cgroup_fork_loop_in_the_same_session() {
    check(false);
}

#[test]
fn cpu_seconds_match_the_cgroup_fork_loop_in_its_own_session() {
    check(true);
}
