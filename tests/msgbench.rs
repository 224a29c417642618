//! `schedlab msgbench`: Nadia Derbey's report, consistent with itself, and no queue left behind.

mod common;
#[path = "pingpong_support/mod.rs"]
mod support;

use std::process::{Child, Stdio};
use std::time::Duration;

use common::child::read_to_end;
use common::wait::until_none_left;
use support::*;

const LIMIT: Duration = Duration::from_secs(60);

/// The tests of this file one at a time: they share the machine's queues (one fills up to
/// kernel.msgmni).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Ids and message counts of every queue on the machine (/proc/sysvipc/msg).
fn queues() -> Vec<(i32, u64)> {
    std::fs::read_to_string("/proc/sysvipc/msg")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some((f.get(1)?.parse().ok()?, f.get(4)?.parse().ok()?))
        })
        .collect()
}

#[derive(Debug)]
struct Line {
    iterations: u64,
    call: String,
    seconds: f64,
    per_sec: f64,
}

fn parse_line(l: &str) -> Line {
    // "150 msgget iterations in 0.000123 seconds = 1219512/sec"
    let w: Vec<&str> = l.split_whitespace().collect();
    assert_eq!(w.len(), 8, "{l}");
    assert_eq!(
        (w[2], w[3], w[5], w[6]),
        ("iterations", "in", "seconds", "=")
    );
    Line {
        iterations: w[0].parse().unwrap(),
        call: w[1].to_string(),
        seconds: w[4].parse().unwrap(),
        per_sec: w[7].strip_suffix("/sec").unwrap().parse().unwrap(),
    }
}

#[test]
fn small_run_prints_five_lines_and_a_consistent_table() {
    let _serial = serial();
    let (batches, queues) = (4u64, 50u64);
    let out = run_bounded(&["msgbench", "-n", "4", "--queues", "50"], LIMIT);
    assert!(out.status.success(), "{}", stderr_line(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Five rate lines, each followed by a blank line, then the header and five rows.
    assert_eq!(lines.len(), 16, "{text}");
    let calls = [
        "msgget",
        "msgsnd",
        "msgctl(ipc_stat)",
        "msgctl(msg_stat)",
        "msgctl(ipc_rmid)",
    ];
    let labels = ["GET:", "SEND:", "IPC_STAT:", "MSG_STAT:", "RM:"];
    assert_eq!(
        lines[10],
        "             AVERAGE        STD_DEV      MIN     MAX"
    );
    for k in 0..5 {
        let line = parse_line(lines[2 * k]);
        assert_eq!(lines[2 * k + 1], "");
        assert_eq!(line.call, calls[k]);
        assert_eq!(line.iterations, batches * queues);
        assert!(line.seconds > 0.0);
        // Seconds are printed to the microsecond: the rate must fit within that rounding.
        let hi = line.iterations as f64 / (line.seconds - 0.5e-6).max(1e-9);
        let lo = line.iterations as f64 / (line.seconds + 0.5e-6);
        assert!(
            line.per_sec >= lo.floor() - 1.0 && line.per_sec <= hi + 1.0,
            "{line:?}: rate should be iterations / seconds"
        );

        let row = lines[11 + k];
        assert!(row.starts_with(labels[k]), "{row}");
        assert_eq!(
            &row[..12].trim_end(),
            &labels[k],
            "label column is 12 wide: {row}"
        );
        let v: Vec<f64> = row[12..]
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let (avg, sd, min, max) = (v[0], v[1], v[2], v[3]);
        // The average per batch, times the batches, is the line's total time.
        let total_us = line.seconds * 1e6;
        assert!(
            (avg * batches as f64 - total_us).abs() <= 1.0 + total_us * 1e-6,
            "{row} vs {line:?}"
        );
        assert!(min <= avg + 0.5 && avg <= max + 0.5, "{row}");
        assert!(sd >= 0.0 && sd <= (max - min) + 1.0, "{row}");
    }
}

#[test]
fn too_many_queues_names_the_sysctl_and_leaves_nothing() {
    let _serial = serial();
    let n = (common::sysctl("kernel.msgmni") + 1).to_string();
    let out = run_bounded(&["msgbench", "-n", "1", "--queues", &n], LIMIT);
    let err = stderr_line(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("schedlab msgbench: error: "), "{err}");
    assert!(err.contains("kernel.msgmni"), "{err}");
    assert!(out.stdout.is_empty());
    for bad in [["-n", "0"], ["-n", "many"], ["--queues", "0"]] {
        let mut args = vec!["msgbench"];
        args.extend(bad);
        let out = run_bounded(&args, LIMIT);
        // A mistake in the arguments ends with clap's status, whoever found it.
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert_eq!(stderr_line(&out).lines().count(), 1, "{bad:?}");
    }
}

/// The queue limit hit mid-run: in an IPC namespace of its own (so the machine's sysctls are
/// untouched and the namespace's queues vanish with it), msgbench takes all of msgmni and
/// the test grabs one queue between two batches.
#[test]
fn queue_limit_hit_mid_run_ends_with_one_line() {
    let _serial = serial();
    let script = format!(
        r#"
        sysctl -qw kernel.msgmni=20 || exit 90
        {BIN} msgbench -n 100000000 --queues 20 2>"$1" >/dev/null &
        pid=$!
        sleep 0.3
        tries=0
        until ipcmk -Q >/dev/null 2>&1; do
            tries=$((tries+1)); [ $tries -gt 20000 ] && {{ kill $pid; exit 91; }}
        done
        wait $pid
        echo "rc=$?"
        ipcs -q | grep -c '^0x' || true
        "#
    );
    let err_file = tempfile::NamedTempFile::new().unwrap();
    let out = std::process::Command::new("timeout")
        .args(["60", "unshare", "--ipc", "sh", "-c", &script, "sh"])
        .arg(err_file.path())
        .stdin(Stdio::null())
        .output()
        .expect("unshare (util-linux) is needed for this test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "unshare --ipc failed (needs root and util-linux): {} {}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let err = std::fs::read_to_string(err_file.path()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "rc=1", "{stdout} / {err}");
    // Only the test's own queue is left in the namespace: msgbench removed all of its own.
    assert_eq!(lines[1], "1", "{stdout}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("queue limit reached") && err.contains("kernel.msgmni"),
        "{err}"
    );
}

/// Waits up to 10 s for every queue that was not there `before` to be gone, except those
/// the ledger of a live process names (other runs on a shared machine); panics naming the
/// rest. No tolerance: every queue a killed msgbench made is under a key its ledger named.
fn assert_no_new_queue(before: &[i32], case: &str) {
    let gone = until_none_left(Duration::from_secs(10), Duration::from_millis(50), || {
        let now = queues();
        let live: Vec<Obj> = schedlab::sys::kernel::sysv::ledgers()
            .into_iter()
            .filter(|l| schedlab::sys::kernel::sysv::process_start_time(l.pid) == Some(l.start))
            .flat_map(|l| l.objects)
            .collect();
        now.into_iter()
            .filter(|(id, _)| !before.contains(id) && !live.contains(&Obj::Msg(*id)))
            .collect()
    });
    if let Err(stray) = gone {
        panic!("{case}: queues left (id, messages): {stray:?}");
    }
}

/// A msgbench of 200 queues that would run for days, its report discarded.
fn endless_msgbench() -> Child {
    schedlab(&["msgbench", "-n", "100000000", "--queues", "200"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn sigterm_mid_run_removes_every_queue() {
    let _serial = serial();
    let mut child = endless_msgbench();
    let pid = child.id();
    // Catch the queues of a batch while they exist.
    let (_, objs) = wait_for_objects(pid, 100, LIMIT);
    // SAFETY: kill takes no pointer; the pid is our unreaped child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = wait_bounded(&mut child, LIMIT);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(objs.iter().all(|&o| !exists(o)), "queues left");
    assert!(ledger_of(pid).is_none(), "ledger left");
}

/// SIGKILLs at random instants of a run, each followed by `cleanup`: whether the kill landed
/// between two loops, in the middle of a batch or inside a msgget, no queue is left.
#[test]
fn sigkill_mid_run_is_swept_by_cleanup() {
    let _serial = serial();
    let seed = common::clock_seed();
    eprintln!("seed {seed}");
    let mut rng = seed;
    let before: Vec<i32> = queues().into_iter().map(|(id, _)| id).collect();
    for round in 0..10 {
        let mut child = endless_msgbench();
        let pid = child.id();
        let (ledger, _) = wait_for_objects(pid, 1, LIMIT);
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_micros(rng % 200_000));
        // SAFETY: kill takes no pointer; the pid is our unreaped child.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        wait_bounded(&mut child, LIMIT);
        // What the ledger names at death (by id, or found under its keys) is what was left.
        let left = recorded(&ledger);
        let out = run_bounded(&["cleanup"], LIMIT);
        assert!(out.status.success(), "{}", stderr_line(&out));
        assert!(
            left.iter().all(|&o| !exists(o)),
            "round {round}: queues left after cleanup"
        );
        assert!(
            ledger_of(pid).is_none(),
            "round {round}: ledger left after cleanup"
        );
        assert_no_new_queue(&before, &format!("round {round} (seed {seed})"));
    }
}

/// `cleanup` runs racing a live msgbench: a sweep never takes a live ledger for a dead one
/// (a removed queue would fail the next msgsnd or msgctl and the run).
#[test]
fn cleanup_runs_racing_a_live_run_leave_its_queues_alone() {
    let _serial = serial();
    let before: Vec<i32> = queues().into_iter().map(|(id, _)| id).collect();
    let mut child = schedlab(&["msgbench", "-n", "400", "--queues", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_objects(child.id(), 1, LIMIT);
    let sweepers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..5 {
                    let out = run_bounded(&["cleanup"], LIMIT);
                    assert!(out.status.success(), "{}", stderr_line(&out));
                }
            })
        })
        .collect();
    for s in sweepers {
        s.join().unwrap();
    }
    let status = wait_bounded(&mut child, LIMIT);
    let err = read_to_end(child.stderr.take().unwrap());
    assert!(
        status.success(),
        "msgbench failed under racing sweeps: {err}"
    );
    assert_no_new_queue(&before, "after the raced run");
}
