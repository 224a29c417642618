//! The verdict on a busy machine, against the kernel's rules: the default scenario (contest's
//! fork_load against a -j4 reference job) beside a neighbour the test starts in a session of its
//! own, one that churns tasks born and gone between the rest's reads. After the window settles:
//! - the fair shares of all groups add up to at most the machine (3% over at most) in at least
//!   95% of Frames;
//! - the rest's groups account for at least 90% of what /proc/stat says the rest received;
//! - the workloads' session is due what the kernel's rules give it, within 0.1 CPU;
//! - every verdict follows received over due.
//!
//! The neighbours: bursts of short-lived threads, a fork-and-exec loop of a short program, a real
//! `make -j4` of a small C project rebuilt in a loop, and a hog in a cgroup of weight 100 beside
//! threads churning in a cgroup of weight 300 (root). Each is killed, its files and cgroup
//! removed, whatever the case's outcome.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use schedlab::engine::lab::Lab;
use schedlab::model::{Frame, Verdict};
use schedlab::scenario::Scenario;

static MACHINE: Mutex<()> = Mutex::new(());

const INTERVAL: Duration = Duration::from_millis(250);
const WINDOW: f64 = 4.0;
const SETTLE: Duration = Duration::from_secs(7);
const MEASURE: Duration = Duration::from_secs(8);

/// Eight threads that spin 2 ms and exit, again and again.
const CHURN_C: &str = r#"
#include <pthread.h>
#include <time.h>
static void *spin(void *a) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000L);
    return a;
}
int main(void) {
    for (;;) {
        pthread_t th[8];
        for (int i = 0; i < 8; i++) pthread_create(&th[i], 0, spin, 0);
        for (int i = 0; i < 8; i++) pthread_join(th[i], 0);
    }
}
"#;

/// A neighbour in a session of its own, killed with its whole group when dropped.
struct Neighbour {
    child: Child,
    /// A cpu cgroup the test made for it, removed once it is gone.
    cgroup: Option<PathBuf>,
}

impl Neighbour {
    fn start(script: &str, dir: &Path) -> Neighbour {
        let child = Command::new("setsid")
            .args(["sh", "-c", script])
            .current_dir(dir)
            // gcc killed mid-compile leaves its cc*.s behind: in the test's directory, which
            // goes with it, not in /tmp.
            .env("TMPDIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("setsid sh");
        Neighbour {
            child,
            cgroup: None,
        }
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        // setsid made it the leader of its own process group: the group goes at once.
        let pgid = nix::unistd::Pid::from_raw(-(self.child.id() as i32));
        let _ = nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
        if let Some(dir) = &self.cgroup {
            // Its tasks are gone once they are reaped; give the kernel a moment.
            let deadline = Instant::now() + Duration::from_secs(3);
            while fs::remove_dir(dir).is_err() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn compile_churn(dir: &Path) -> PathBuf {
    let src = dir.join("churn.c");
    fs::write(&src, CHURN_C).unwrap();
    let bin = dir.join("churn");
    let out = Command::new("gcc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .expect("gcc (CI installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// A small C project: eight files of some arithmetic and a Makefile.
fn c_project(dir: &Path) {
    let mut objs = Vec::new();
    for i in 0..8 {
        let body: String = (0..60)
            .map(|k| format!("int f{i}_{k}(int x) {{ for (int j = 0; j < 50; j++) x = x * 31 + j; return x; }}\n"))
            .collect();
        fs::write(dir.join(format!("u{i}.c")), body).unwrap();
        objs.push(format!("u{i}.o"));
    }
    fs::write(dir.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    let makefile = format!(
        "all: prog\nprog: main.o {objs}\n\tgcc -o prog main.o {objs}\n%.o: %.c\n\tgcc -O2 -c $< -o $@\nclean:\n\trm -f *.o prog\n",
        objs = objs.join(" ")
    );
    fs::write(dir.join("Makefile"), makefile).unwrap();
}

/// The default scenario in this process's session, beside `neighbour`; the Frames once settled.
fn run_beside(name: &str) -> Vec<Frame> {
    let path = format!(
        "{}/assets/scenarios/contest-fork-load.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = fs::read_to_string(path)
        .unwrap()
        .replace("runs = 1", "runs = 0");
    run(Scenario::from_toml(&text, name).expect("preset parses"))
}

/// `scenario` run in this process's session, after its window settled: its Frames.
fn run(scenario: Scenario) -> Vec<Frame> {
    let mut lab = Lab::new(INTERVAL).expect("lab");
    lab.set_verdict_window(WINDOW);
    for w in scenario.workloads {
        lab.add(common::real_binary(&w)).expect("workload starts");
    }
    let start = Instant::now();
    let mut next = Instant::now();
    let mut frames = Vec::new();
    while start.elapsed() < SETTLE + MEASURE {
        next += INTERVAL;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let f = lab.tick();
        if start.elapsed() >= SETTLE {
            frames.push(f);
        }
    }
    frames
}

/// Whether this process sits in the kernel's root autogroup (as CI runs): the kernel prints
/// nothing in /proc/self/autogroup for it.
fn in_root_autogroup() -> bool {
    fs::read_to_string("/proc/self/autogroup").is_ok_and(|s| s.trim().is_empty())
}

fn mean(frames: &[Frame], f: impl Fn(&Frame) -> f64) -> f64 {
    frames.iter().map(f).sum::<f64>() / frames.len().max(1) as f64
}

/// The checks every case makes; `due` is what the kernel's rules give the workloads together.
fn check(name: &str, frames: &[Frame], due: f64) {
    let cpus = frames[0].machine.cpus as f64;
    let within = frames
        .iter()
        .filter(|f| {
            let total: f64 =
                f.workloads.iter().map(|w| w.cpu_fair).sum::<f64>() + f.machine.rest_cpu_fair;
            total <= cpus * 1.03
        })
        .count();
    assert!(
        within * 100 >= frames.len() * 95,
        "{name}: the fair shares added up to more than the machine in {} of {} Frames",
        frames.len() - within,
        frames.len()
    );
    let groups = mean(frames, |f| f.machine.rest_cpu_received);
    let seen = groups + mean(frames, |f| f.machine.rest_unattributed);
    assert!(
        groups >= 0.9 * seen,
        "{name}: the rest's groups account for {groups:.3} of the {seen:.3} CPUs it received"
    );
    let got_due: f64 = mean(frames, |f| f.workloads.iter().map(|w| w.window_fair).sum());
    assert!(
        (got_due - due).abs() <= 0.1,
        "{name}: the workloads were due {got_due:.3} CPUs together; the kernel's rules give {due:.3} \
         (last: {:?})",
        frames.last().map(|f| (&f.machine.rest_groups, f.machine.rest_cpu_fair))
    );
    for f in frames {
        for w in &f.workloads {
            assert_eq!(
                w.verdict,
                if w.verdict == Verdict::None {
                    Verdict::None
                } else {
                    Verdict::from_shares(w.window_received, w.window_fair)
                },
                "{name}: {} at {:.1} s",
                w.name,
                f.t
            );
        }
    }
    let last = frames.last().unwrap();
    eprintln!(
        "{name}: workloads got {:.2} due {:.2}; the rest got {:.2} due {:.2} ({:?})",
        mean(frames, |f| f
            .workloads
            .iter()
            .map(|w| w.window_received)
            .sum()),
        got_due,
        mean(frames, |f| f.machine.rest_window_received),
        mean(frames, |f| f.machine.rest_window_fair),
        last.machine
            .rest_groups
            .iter()
            .map(|g| format!(
                "{} got {:.2} due {:.2} {:?}",
                g.name, g.received, g.fair, g.verdict
            ))
            .collect::<Vec<_>>()
    );
}

/// What the kernel's rules give the workloads beside one neighbour session that wants at least
/// a CPU: half the machine when they have a session of their own; in the root autogroup their
/// five tasks are peers of the neighbour's one group entity.
fn due_beside_a_session() -> f64 {
    if in_root_autogroup() {
        2.0 * 5.0 / 6.0
    } else {
        1.0
    }
}

#[test]
fn beside_bursts_of_short_lived_threads() {
    beside_a_session("churn", |dir| {
        format!("exec {}", compile_churn(dir).display())
    });
}

#[test]
fn beside_a_fork_and_exec_loop() {
    // One loop wants one CPU at most: what the kernel's rules give the workloads is the
    // machine less the loop's part, half of it in sessions of their own.
    beside_a_session("fork-exec", |_| "while :; do /bin/true; done".into());
}

#[test]
fn beside_a_make_j4_rebuilt_in_a_loop() {
    beside_a_session("make", |dir| {
        c_project(dir);
        "while :; do make -s -j4 clean all >/dev/null 2>&1; done".into()
    });
}

/// The default scenario beside a session of its own running the script `prepare` writes in a
/// directory of the case's, checked against what the kernel's rules give the workloads.
fn beside_a_session(name: &str, prepare: impl FnOnce(&Path) -> String) {
    let _m = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let script = prepare(dir.path());
    let _n = Neighbour::start(&script, dir.path());
    let frames = run_beside(name);
    check(name, &frames, due_beside_a_session());
}

/// The v1 cpu hierarchy's root, when writable (as root on these machines), else v2's.
fn cpu_hierarchy() -> Option<(PathBuf, bool)> {
    let v1 = PathBuf::from("/sys/fs/cgroup/cpu");
    if v1.join("cpu.shares").exists() {
        return Some((v1, true));
    }
    let v2 = PathBuf::from("/sys/fs/cgroup");
    fs::read_to_string(v2.join("cgroup.subtree_control"))
        .ok()
        .filter(|c| c.split_whitespace().any(|x| x == "cpu"))
        .map(|_| (v2, false))
}

#[test]
fn a_hog_weighted_100_beside_a_churning_cgroup_weighted_300() {
    let _m = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    if !nix::unistd::geteuid().is_root() {
        eprintln!("\n*** SKIPPED busy_truth cgroups: needs root (CI runs as root) ***\n");
        return;
    }
    let Some((root, v1)) = cpu_hierarchy() else {
        eprintln!("\n*** SKIPPED busy_truth cgroups: no writable cpu controller ***\n");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = compile_churn(dir.path());
    let cg = root.join(format!("schedlab-busy-{}", std::process::id()));
    fs::create_dir(&cg).unwrap();
    let (file, value) = if v1 {
        ("cpu.shares", "3072")
    } else {
        ("cpu.weight", "300")
    };
    fs::write(cg.join(file), value).unwrap();
    let procs = cg.join("cgroup.procs");
    // The neighbour puts itself into the cgroup before it execs the churner.
    let mut n = Neighbour::start(
        &format!("echo $$ > {} && exec {}", procs.display(), bin.display()),
        dir.path(),
    );
    n.cgroup = Some(cg);
    let text = r#"
name = "cgroup-hog"
interval_ms = 250
[[workload]]
name = "hog"
kind = "cpu-hog"
threads = 2
placement = "cgroup"
cgroup_weight = 100
"#;
    let frames = run(Scenario::from_toml(text, "cgroup-hog").unwrap());
    // Weights 100 : 300 over 2 CPUs, both wanting both: a quarter of the machine.
    check("cgroups", &frames, 0.5);
}
