//! The SIGKILL storm (issue 14): msgbench, the msg and sem ping-pongs and a chat run, each
//! SIGKILLed at 200 random instants of its first ~0.7 s (so at every stage: before its
//! ledger exists, while it creates its objects, mid-run), while `schedlab cleanup` runs and
//! fresh ping-pong runs start in a loop, racing each other's sweeps. Afterwards, once one
//! last `cleanup` has run, the SysV objects (what `ipcs -q -s` lists) are exactly what they
//! were before: no tolerance for a stray queue. The fresh runs must all succeed: a sweep that
//! took a live run's objects for a dead one's would fail them.
//!
//! Everything runs in an IPC namespace and a /dev/shm of its own (`unshare`, so root; CI is
//! root): "exactly as before" is then exact on a machine shared with other schedlab runs,
//! and whatever a failure left ends with the namespace. Bounded: about two minutes on
//! 2 CPUs in a debug build.

mod common;
#[path = "reliability/mod.rs"]
mod support;

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::args_of;
use common::child::first_line;
use support::*;

const KILLS: usize = 200;
/// Kills land within this long of the start; a quarter within the first 50 ms, where the
/// ping-pongs make their objects.
const WINDOW_MS: u64 = 700;

/// A process holding an IPC namespace and a private /dev/shm for the storm.
struct Namespace {
    holder: Child,
}

impl Namespace {
    fn new() -> Self {
        let mut holder = Command::new("unshare")
            .args(["--ipc", "--mount", "--propagation", "private", "sh", "-c"])
            .arg("mount -t tmpfs -o mode=1777 schedlab-storm /dev/shm && echo ready && exec sleep 600")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("unshare (util-linux) is needed");
        let line = first_line(holder.stdout.take().unwrap());
        assert_eq!(
            line.trim(),
            "ready",
            "unshare --ipc --mount failed: this test needs root"
        );
        Self { holder }
    }

    /// `program args` inside the namespace (nsenter execs it: its pid is the program's).
    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("nsenter");
        c.args([
            "-t",
            &self.holder.id().to_string(),
            "--ipc",
            "--mount",
            "--",
        ])
        .arg(program)
        .args(args)
        .stdin(Stdio::null());
        c
    }

    /// A tagged schedlab command inside the namespace, in a process group of its own.
    fn schedlab(&self, tag: &str, args: &[&str]) -> Command {
        let mut c = self.command(BIN, args);
        c.env(TAG_VAR, tag)
            .env("RUST_BACKTRACE", "0")
            .env_remove("SCHEDLAB_INJECT_PANIC")
            .process_group(0);
        c
    }

    /// What `ipcs -q -s` would list in the namespace: ids from /proc/sysvipc, by kind.
    fn sysv(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for (kind, file) in [("q", "/proc/sysvipc/msg"), ("s", "/proc/sysvipc/sem")] {
            let out = self.command("cat", &[file]).output().unwrap();
            assert!(out.status.success(), "reading {file} in the namespace");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            for line in text.lines().skip(1) {
                if let Some(id) = line.split_whitespace().nth(1) {
                    ids.push(format!("{kind}{id}"));
                }
            }
        }
        ids
    }

    /// The schedlab files in the namespace's /dev/shm (ledgers and their tag names).
    fn ledgers(&self) -> Vec<String> {
        let out = self.command("ls", &["/dev/shm"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("schedlab-sysv"))
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // The namespace ends with its last process: whatever a failure left goes with it.
        // SAFETY: kill takes no pointer; the holder leads a process group of its own.
        unsafe { libc::kill(-(self.holder.id() as i32), libc::SIGKILL) };
        let _ = self.holder.wait();
    }
}

/// xorshift64: the instants, reproducible from the seed printed at the start.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A kill instant: a quarter within 50 ms, the rest within WINDOW_MS.
    fn instant(&mut self) -> Duration {
        let limit = if self.next().is_multiple_of(4) {
            50
        } else {
            WINDOW_MS
        };
        Duration::from_micros(self.next() % (limit * 1000))
    }
}

/// Starts `args` KILLS times, each SIGKILLed at a random instant.
fn storm(ns: &Namespace, tag: &str, args: &[&str], seed: u64) -> usize {
    let mut rng = Rng(seed);
    let mut ended_before = 0;
    for _ in 0..KILLS {
        let mut child = ns
            .schedlab(tag, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(rng.instant());
        if child.try_wait().unwrap().is_some() {
            ended_before += 1; // refused or failed early: still a run whose leftovers count
            continue; // reaped: its pid is no longer ours to signal
        }
        // SAFETY: kill takes no pointer; the pid is our unreaped child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        wait_within(&mut child, Duration::from_secs(20)).expect("a SIGKILLed run did not end");
    }
    ended_before
}

/// Runs `args` in a loop until `stop`; returns the runs and how many failed.
fn looping(
    ns: &Namespace,
    tag: &str,
    args: &[&str],
    stop: &AtomicBool,
    swept: &AtomicUsize,
) -> (usize, Vec<String>) {
    let (mut runs, mut failures) = (0, Vec::new());
    while !stop.load(SeqCst) {
        let out = output_within(
            ns.schedlab(tag, args),
            Duration::from_secs(30),
            "a loop run",
        );
        runs += 1;
        if !out.status.success() {
            failures.push(format!(
                "{args:?}: {:?}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        // "removed N SysV objects left by dead schedlab processes"
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(n) = text
            .strip_prefix("removed ")
            .and_then(|r| r.split(' ').next())
        {
            swept.fetch_add(n.parse().unwrap_or(0), SeqCst);
        }
    }
    (runs, failures)
}

#[test]
fn a_sigkill_storm_leaves_exactly_what_was_there() {
    let started = Instant::now();
    let ns = Arc::new(Namespace::new());
    let before = ns.sysv();
    let tag = unique_tag("storm");
    let seed = common::clock_seed();
    eprintln!("storm seed {seed}");

    let stop = Arc::new(AtomicBool::new(false));
    let swept = Arc::new(AtomicUsize::new(0));
    let loops: Vec<_> = [
        vec!["cleanup"],
        vec!["cleanup"],
        // Fresh starts: each sweeps at start, then makes objects of its own.
        args_of("ipc-pingpong --kind sem --pairs 1 --pin none --duration 0.05"),
    ]
    .into_iter()
    .map(|args| {
        let (ns, tag, stop, swept) = (ns.clone(), tag.clone(), stop.clone(), swept.clone());
        std::thread::spawn(move || looping(&ns, &tag, &args, &stop, &swept))
    })
    .collect();

    let kinds: Vec<Vec<&'static str>> = vec![
        args_of("msgbench -n 100000000 --queues 64"),
        args_of("ipc-pingpong --kind msg --pairs 2 --pin none"),
        args_of("ipc-pingpong --kind sem --pairs 2 --pin none --threads"),
        args_of("chat-bench 1 30000"),
    ];
    let storms: Vec<_> = kinds
        .into_iter()
        .enumerate()
        .map(|(k, args)| {
            let (ns, tag) = (ns.clone(), tag.clone());
            let seed = seed.wrapping_mul(k as u64 + 1) | 1;
            std::thread::spawn(move || (args.join(" "), storm(&ns, &tag, &args, seed)))
        })
        .collect();
    let mut report = Vec::new();
    for s in storms {
        let (what, early) = s.join().unwrap();
        report.push(format!(
            "{what}: {KILLS} SIGKILLs ({early} runs had ended by then)"
        ));
    }
    stop.store(true, SeqCst);
    let mut failures = Vec::new();
    for l in loops {
        let (runs, failed) = l.join().unwrap();
        report.push(format!("{runs} loop runs"));
        failures.extend(failed);
    }
    assert_no_process(&tag, Duration::from_secs(20), "the storm");
    let out = output_within(
        ns.schedlab(&tag, &["cleanup"]),
        Duration::from_secs(30),
        "the last cleanup",
    );
    assert!(out.status.success(), "the last cleanup failed: {out:?}");
    let after = ns.sysv();
    let ledgers = ns.ledgers();
    eprintln!(
        "{}\nsweeps removed {} objects along the way; {:.0} s in all",
        report.join("\n"),
        swept.load(SeqCst),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "runs failed during the storm: {failures:#?}"
    );
    let extra: Vec<&String> = after.iter().filter(|id| !before.contains(id)).collect();
    assert!(
        extra.is_empty() && after.len() == before.len(),
        "{} SysV objects left (q = queue, s = semaphore set), the first: {:?}",
        extra.len(),
        &extra[..extra.len().min(20)]
    );
    assert!(ledgers.is_empty(), "ledgers left in /dev/shm: {ledgers:?}");
}
