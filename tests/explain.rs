//! `schedlab explain` on the real kernel: the 2002 contest fork loop on one CPU, whose excess
//! the variants pin on new-task placement and not on wakeup preemption; a fair control case
//! with nothing to explain; and bad arguments as one line each, before anything runs. As root,
//! the kernel's events are checked against both known setups: the loop's new tasks first run
//! within a base slice and take the CPU from the reference job; two pinned hogs preempt each
//! other and no other workload. Without root, the report says the events are missing.

mod common;

use std::path::Path;
use std::sync::Mutex;

use schedlab::explain::conclusion::{Effect, Outcome};
use schedlab::explain::evidence::OwnerEvidence;
use schedlab::explain::report::ExplainReport;
use schedlab::explain::tracer::Evidence;

static MACHINE: Mutex<()> = Mutex::new(());

fn is_root() -> bool {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `schedlab explain ARGS --format json -o FILE` and reads the report back.
fn explain(args: &[&str], out: &Path) -> ExplainReport {
    let (run, stderr) = common::run_json("explain", args, out);
    assert!(run.status.success(), "{:?}: {stderr}", run.status);
    let text = std::fs::read_to_string(out).unwrap_or_else(|e| panic!("no report ({e}); {stderr}"));
    serde_json::from_str(&text).expect("a report")
}

fn row<'a>(r: &'a ExplainReport, key: &str) -> &'a Outcome {
    r.outcomes
        .iter()
        .find(|o| o.what.key == key)
        .unwrap_or_else(|| panic!("no row {key}: {}", r.to_text()))
}

/// The kernel's events the report holds: as root, there must be some; else it says why not.
fn evidence(r: &ExplainReport) -> Option<&Evidence> {
    let traced = r.traced.as_ref().expect("a traced run by default");
    if !is_root() {
        eprintln!("\n*** explain: the kernel's events SKIPPED: tracefs needs root ***\n");
        assert!(traced.missing.is_some(), "{traced:?}");
        return None;
    }
    let e = traced
        .evidence
        .as_ref()
        .unwrap_or_else(|| panic!("no events as root: {:?}", traced.missing));
    assert_eq!(e.lost, 0, "events lost");
    assert!(e.seconds > 1.0, "recorded {} s", e.seconds);
    Some(e)
}

fn owner<'a>(e: &'a Evidence, name: &str) -> &'a OwnerEvidence {
    e.owners
        .iter()
        .find(|o| o.owner == name)
        .unwrap_or_else(|| panic!("no events for {name}: {e:?}"))
}

/// Who preempted `o` how often, by name.
fn by(o: &OwnerEvidence, who: &str) -> u64 {
    o.preempted_by
        .iter()
        .find(|(w, _)| w == who)
        .map_or(0, |(_, n)| *n)
}

/// Instances of tracefs schedlab left (none: each is removed when its run ends).
fn instances_left() -> usize {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("schedlab-"))
                .count()
        })
        .unwrap_or(0)
}

fn left_behind() -> (usize, usize) {
    let me = std::process::id();
    let procs = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p != me)
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).is_ok_and(|c| {
                c.contains("schedlab") && c.contains("explain") && !c.contains("cargo")
            })
        })
        .count();
    (procs, common::schedlab_cgroups().len())
}

/// The fork loop and four reference-job workers pinned to CPU 0 in one session: the loop gets
/// more than its fifth (2.1 to 2.9 times measured in a session of its own; 1.59 in the kernel's
/// root autogroup, as CI runs). In a session or a cgroup of its own it is one group entity whose
/// lag outlives its tasks, and gets its due; as SCHED_BATCH (no wakeup preemption) it keeps its
/// excess. The issue asked for a ratio above 2 under SCHED_BATCH; in the root autogroup the
/// loop reads 1.6 even as it is, so the test asks for what rules wakeup preemption out: most of
/// the excess kept (`leaves it`: half of it or more on a log scale) and a ratio above 1.3.
#[test]
fn the_contest_fork_loop_excess_is_new_task_placement_not_wakeup_preemption() {
    let _m = common::wait::quiet_turn(&MACHINE);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("explain.json");
    let variants = if is_root() {
        "own-session,own-cgroup,batch"
    } else {
        eprintln!("\n*** explain: own-cgroup SKIPPED: cgroups need root (CI runs as root) ***\n");
        "own-session,batch"
    };
    let r = explain(
        &[
            "contest-one-cpu",
            "--workload",
            "fork_load",
            "--variant",
            variants,
            // Three: with two, Welch's test has one degree of freedom, and one CI-like run
            // read own-session 1.01 and own-cgroup 1.00 against 1.62 as it is "within noise".
            "--repeat",
            "3",
            "--duration",
            "10",
        ],
        &out,
    );
    eprintln!("{}", r.to_text());
    let as_is = row(&r, "as-is");
    assert!(as_is.ratio.mean > 1.3, "as it is: {:.2}", as_is.ratio.mean);
    for key in variants.split(',').filter(|k| *k != "batch") {
        let v = row(&r, key);
        assert!(
            (v.ratio.mean - 1.0).abs() <= 0.1,
            "{key}: ratio {:.2}",
            v.ratio.mean
        );
        assert_eq!(v.effect, Effect::Removes, "{key}");
    }
    let batch = row(&r, "batch");
    assert!(batch.ratio.mean > 1.3, "batch: {:.2}", batch.ratio.mean);
    assert_eq!(batch.effect, Effect::Leaves);
    assert!(
        r.conclusion.contains(": new-task placement ("),
        "{}",
        r.conclusion
    );
    assert!(
        r.conclusion.contains("wakeup preemption ruled out"),
        "{}",
        r.conclusion
    );
    if let Some(e) = evidence(&r) {
        let fork = owner(e, "fork_load");
        assert!(fork.new_tasks.count > 100, "{fork:?}");
        let first_run = fork.new_tasks.p50_us.unwrap();
        assert!(
            first_run < e.base_slice_us,
            "new tasks first ran after p50 {first_run} µs; a base slice is {} µs",
            e.base_slice_us
        );
        let job = owner(e, "ref-job");
        assert!(
            by(job, "fork_load") > 0,
            "the loop never took the CPU from the job: {job:?}"
        );
    }
    assert_eq!(left_behind(), (0, 0), "processes, cgroups");
    assert_eq!(instances_left(), 0, "tracefs instances");
}

/// Two CPU hogs at nice 0 on one CPU share it evenly: nothing to explain, and no variant runs.
#[test]
fn a_fair_control_case_has_no_deviation_to_explain() {
    let _m = common::wait::quiet_turn(&MACHINE);
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("control.toml");
    std::fs::write(
        &scenario,
        "name = \"control\"\ninterval_ms = 250\nverdict_window = 3\n\
         [[workload]]\nname = \"a\"\nkind = \"cpu-hog\"\nthreads = 1\naffinity = [0]\n\
         [[workload]]\nname = \"b\"\nkind = \"cpu-hog\"\nthreads = 1\naffinity = [0]\n",
    )
    .unwrap();
    let out = dir.path().join("control.json");
    let r = explain(
        &[
            scenario.to_str().unwrap(),
            "--repeat",
            "2",
            "--duration",
            "8",
        ],
        &out,
    );
    eprintln!("{}", r.to_text());
    assert_eq!(r.outcomes.len(), 1, "variants ran for a fair workload");
    assert!(
        r.conclusion.starts_with("No deviation to explain"),
        "{}",
        r.conclusion
    );
    assert!(
        (r.outcomes[0].due - 0.5).abs() < 0.05,
        "{:?}",
        r.outcomes[0]
    );
    if let Some(e) = evidence(&r) {
        // Each hog is preempted, mostly by the other; the machine's own threads (kernel
        // threads, the observer) may take a turn, no other workload can.
        for (me, other) in [("a", "b"), ("b", "a")] {
            let o = owner(e, me);
            assert!(o.preempted > 10, "{o:?}");
            assert!(
                by(o, other) as f64 >= 0.75 * o.preempted as f64,
                "{me} preempted by {other} {} of {} times: {o:?}",
                by(o, other),
                o.preempted
            );
            assert_eq!(o.migrations, 0, "pinned, {me} moved: {o:?}");
        }
    }
    assert_eq!(left_behind(), (0, 0), "processes, cgroups");
    assert_eq!(instances_left(), 0, "tracefs instances");
}

#[test]
fn bad_arguments_are_one_line_and_run_nothing() {
    for (args, says) in [
        (
            &["contest-one-cpu", "--workload", "nope"][..],
            "no workload `nope`",
        ),
        (
            &["contest-one-cpu", "--variant", "slice"][..],
            "no variant `slice`",
        ),
        (
            &[
                "contest-one-cpu",
                "--workload",
                "ref-job",
                "--variant",
                "long-lived",
            ][..],
            "does not fit ref-job",
        ),
        (&["contest-one-cpu", "--repeat", "1"][..], "--repeat"),
        (
            &["no-such-scenario"][..],
            "no scenario file `no-such-scenario`",
        ),
        (
            &["contest-one-cpu", "--duration", "5"][..],
            "leaves no settled figures",
        ),
    ] {
        let run = common::schedlab()
            .arg("explain")
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            err.lines()
                .next()
                .unwrap_or("")
                .starts_with("schedlab explain: error: ")
                || err.starts_with("schedlab: error: "),
            "{args:?}: {err}"
        );
        assert!(err.lines().count() <= 2, "{args:?}: {err}");
    }
}
