//! A failed workload says why: its last stderr lines reach `run`'s output (the run's own
//! error line last, ending with the workload's last line), its recording, and the Frames a
//! replay derives from it. (The dashboard's details line and `v` are in ui_snapshots.)

mod common;
#[path = "reliability/mod.rs"]
mod support;

use std::process::Output;
use std::time::Duration;

use schedlab::record::recording::Recording;
use support::*;

/// A command that warns on stderr, says why it cannot go on, and exits 3.
const FAILING: &str = include_str!("scenarios/failing.toml");

/// `schedlab run` of the scenario `text`, recorded, under `tag`: its output and recording.
fn run_recorded(tag: &str, text: &str, case: &str) -> (Output, Recording) {
    let (dir, sc) = common::scenario_in_tempdir("s.toml", text);
    let rec = dir.path().join("r.jsonl");
    let args = [sc.to_str().unwrap(), "--record", rec.to_str().unwrap()];
    let out = output_within(
        schedlab(tag, &[&["run"][..], &args].concat()),
        Duration::from_secs(30),
        case,
    );
    let recording = Recording::read(&rec).unwrap_or_else(|e| panic!("{case}: {e:#}\n{out:?}"));
    (out, recording)
}

#[test]
fn run_prints_a_failed_workloads_last_lines_and_records_them() {
    let snap = Snapshot::take();
    let tag = unique_tag("stderr");
    let (out, r) = run_recorded(&tag, FAILING, "run a failing workload");
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
    let tag = unique_tag("stderr-ok");
    let (out, r) = run_recorded(
        &tag,
        "name = \"ok\"\ninterval_ms = 100\n[[workload]]\nname = \"chatty\"\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"echo noise >&2; sleep 0.3\"]\n",
        "run a workload that ends well",
    );
    assert!(out.status.success(), "{out:?}");
    assert!(r
        .repeats
        .iter()
        .flatten()
        .flat_map(|s| &s.workloads)
        .all(|w| w.stderr.is_empty()));
    snap.check("a_workload_that_did_not_fail_carries_no_stderr");
}
