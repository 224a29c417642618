//! contest prints its whole table, a Ratio of 1.00 for the job alone, the placement it used,
//! and leaves nothing running; a failing job is one clear line. Also ref-job's exact units.

use std::process::Output;

mod common;
mod subreaper;
use subreaper::run;

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The table's row for `load`: its fields after the name.
fn row<'a>(text: &'a str, load: &str) -> Vec<&'a str> {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(load))
        .unwrap_or_else(|| panic!("no {load} row in {text}"))
        .split_whitespace()
        .skip(1)
        .collect()
}

#[test]
fn tiny_job_prints_every_column_and_ratio_one_alone() {
    let out = run(&["contest", "--jobs", "2", "--work", "0.005", "--runs", "2"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let header: Vec<&str> = t
        .lines()
        .find(|l| l.starts_with("Load ") && l.contains("[runs]"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["Load", "[runs]", "Time", "CPU%", "Loads", "LCPU%", "Ratio"]
    );
    let noload = row(&t, "noload");
    assert_eq!(noload.len(), 6, "{t}");
    assert_eq!(noload[0], "[2]");
    assert!(noload[1].parse::<f64>().unwrap() > 0.0, "{t}");
    assert!(
        noload[2].trim_end_matches('%').parse::<f64>().unwrap() > 0.0,
        "{t}"
    );
    assert_eq!(noload[5], "1.00", "{t}");
    assert!(t.contains("in the job's session (shared autogroup)"), "{t}");
    assert!(t.contains("Autogroup: "), "{t}");
}

#[test]
fn loads_get_a_row_each_with_their_work_and_cpu() {
    let out = run(&[
        "contest",
        "--jobs",
        "2",
        "--work",
        "0.005",
        "--lead",
        "1",
        "--load",
        "fork_load",
        "--load",
        "cpu_hog",
        "--own-session",
        "--nice",
        "2",
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("in a session of their own"), "{t}");
    assert!(t.contains("nice 2"), "{t}");
    for load in ["fork_load", "cpu_hog"] {
        let r = row(&t, load);
        assert_eq!(r.len(), 6, "{t}");
        assert!(r[3].parse::<u64>().unwrap() > 0, "{load} did no work: {t}");
        // CPU comes in 10 ms ticks: a short load on a crowded machine may show 0%.
        assert!(
            r[4].trim_end_matches('%').parse::<f64>().unwrap() >= 0.0,
            "{t}"
        );
        assert!(r[5].parse::<f64>().unwrap() > 0.0, "{t}");
    }
    // In a session of their own, the loads sit in autogroups other than the job's.
    if std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .is_ok_and(|s| s.trim() == "1")
    {
        let line = t
            .lines()
            .find(|l| l.starts_with("Autogroups: "))
            .unwrap_or_else(|| panic!("no Autogroups line: {t}"));
        let ids: Vec<&str> = line
            .split(", ")
            .map(|part| part.rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(ids.len(), 3, "{line}");
        assert!(ids[1] != ids[0] && ids[2] != ids[0], "{line}");
    } else {
        eprintln!("autogroup is off or missing here: the autogroup check was skipped");
    }
}

#[test]
fn a_failing_job_is_one_line_and_leaves_nothing() {
    // The job's background sleep must die with its process group.
    let out = run(&[
        "contest",
        "--job",
        "sleep 30 & exit 3",
        "--load",
        "cpu_hog",
        "--lead",
        "0.2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("schedlab contest: error: the job"), "{err}");
    assert!(err.contains("exit status: 3"), "{err}");
}

#[test]
fn bad_input_is_one_line() {
    for (args, says) in [
        (
            &["contest", "--load", "bogus"][..],
            "unknown load \"bogus\"",
        ),
        (&["contest", "--work", "0"][..], "work must be more than 0"),
        (&["contest", "--lead=-1"][..], "--lead must be"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        // A mistake in the arguments ends with clap's status, whoever found it.
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn ref_job_does_exactly_its_units() {
    let out = run(&["ref-job", "-j", "3", "--work", "0.0125", "--runs", "2"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("= 25 units in 3 chunks"), "{t}");
    assert_eq!(t.matches("units: 25\n").count(), 2, "{t}");
    for (args, says) in [
        (&["ref-job", "-j", "0"][..], "jobs must be at least 1"),
        (&["ref-job", "--work=-1"][..], "work must be more than 0"),
        (&["ref-job", "--work", "0.0001"][..], "less than one unit"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
