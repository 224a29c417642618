//! A failed workload says why: its last stderr lines reach `run`'s output (the run's own
//! error line last, ending with the workload's last line), its recording, and the Frames a
//! replay derives from it. (The dashboard's details line and `v` are in ui_snapshots.)

#[path = "reliability/mod.rs"]
mod support;

use std::time::Duration;

use support::*;

const FAILING: &str = r#"
name = "failing"
interval_ms = 100

[[workload]]
name = "bad"
kind = "command"
argv = ["sh", "-c", "echo 'first: a warning' >&2; echo 'bad: cannot go on: out of widgets' >&2; sleep 0.3; exit 3"]
"#;

#[test]
fn run_prints_a_failed_workloads_last_lines_and_records_them() {
    let snap = Snapshot::take();
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("failing.toml");
    std::fs::write(&sc, FAILING).unwrap();
    let rec = dir.path().join("r.jsonl");
    let tag = unique_tag("stderr");
    let out = output_within(
        schedlab(
            &tag,
            &[
                "run",
                sc.to_str().unwrap(),
                "--record",
                rec.to_str().unwrap(),
            ],
        ),
        Duration::from_secs(30),
        "run a failing workload",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.trim_end().lines().collect();
    assert_eq!(
        lines,
        [
            "  bad: first: a warning",
            "schedlab run: error: repeat 1: workload bad failed (exit code 3): bad: cannot go on: out of widgets",
        ],
        "{err}"
    );

    // The recording carries them in the failed workload's Sample, and replay shows them.
    let r = schedlab::record::recording::Recording::read(&rec).unwrap();
    let recorded = r.repeats[0]
        .iter()
        .flat_map(|s| &s.workloads)
        .find(|w| !w.stderr.is_empty())
        .expect("a Sample with the failed workload's stderr");
    assert_eq!(
        recorded.stderr,
        ["first: a warning", "bad: cannot go on: out of widgets"]
    );
    let replayed = r.frames();
    assert!(
        replayed.iter().flat_map(|f| &f.workloads).any(|w| w
            .stderr
            .last()
            .is_some_and(|l| l.contains("out of widgets"))),
        "no replayed Frame carries the lines"
    );
    assert_no_process(&tag, Duration::from_secs(10), "failing run");
    snap.check("run_prints_a_failed_workloads_last_lines_and_records_them");
}

/// A workload that ends well, or is stopped, carries no lines (its chatter is not news).
#[test]
fn a_workload_that_did_not_fail_carries_no_stderr() {
    let snap = Snapshot::take();
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("ok.toml");
    std::fs::write(
        &sc,
        "name = \"ok\"\ninterval_ms = 100\n[[workload]]\nname = \"chatty\"\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"echo noise >&2; sleep 0.3\"]\n",
    )
    .unwrap();
    let rec = dir.path().join("r.jsonl");
    let tag = unique_tag("stderr-ok");
    let out = output_within(
        schedlab(
            &tag,
            &[
                "run",
                sc.to_str().unwrap(),
                "--record",
                rec.to_str().unwrap(),
            ],
        ),
        Duration::from_secs(30),
        "run a workload that ends well",
    );
    assert!(out.status.success(), "{out:?}");
    let r = schedlab::record::recording::Recording::read(&rec).unwrap();
    assert!(r
        .repeats
        .iter()
        .flatten()
        .flat_map(|s| &s.workloads)
        .all(|w| w.stderr.is_empty()));
    snap.check("a_workload_that_did_not_fail_carries_no_stderr");
}
