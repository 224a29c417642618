//! `schedlab suite` on the real kernel: the quick catalogue runs, each finding's due agrees
//! with the kernel's rules where the machine was quiet, its verdicts are recorded, nothing is
//! left behind; and `compare` between suites flags nothing between two runs of the same
//! kernel, and exactly the finding changed on purpose (the fork loop at nice 5).

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use schedlab::record::suite::SuiteResults;

static MACHINE: Mutex<()> = Mutex::new(());

/// The quick suite must stay well inside CI's time.
const QUICK_LIMIT: Duration = Duration::from_secs(300);

/// Runs `schedlab suite ARGS --format json -o FILE` and reads the file back.
fn suite(args: &[&str], out: &Path) -> (SuiteResults, String, std::process::ExitStatus) {
    let (run, stderr) = common::run_json("suite", args, out);
    let text = std::fs::read_to_string(out)
        .unwrap_or_else(|e| panic!("no results ({e}); stderr: {stderr}"));
    (
        SuiteResults::from_json(&text, "suite").expect("a suite file"),
        stderr,
        run.status,
    )
}

fn schedlab_processes() -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| p != me)
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.contains("schedlab") && !c.contains("cargo"))
        })
        .collect()
}

#[test]
fn the_quick_suite_states_what_the_rules_give_and_records_the_verdicts() {
    let _m = common::wait::quiet_turn(&MACHINE);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("quick.json");
    let before = schedlab_processes();
    let start = Instant::now();
    let (s, stderr, status) = suite(&["--quick"], &out);
    let took = start.elapsed();
    eprintln!("{}", s.to_text());
    eprintln!(
        "the quick suite took {:.0} s; stderr: {stderr}",
        took.as_secs_f64()
    );
    assert!(took < QUICK_LIMIT, "the quick suite took {took:?}");
    assert_eq!(s.findings.len(), schedlab::finding::CATALOGUE.len());
    let mut checked = 0;
    for f in &s.findings {
        if let Some(why) = &f.skipped {
            eprintln!("{}: skipped: {why}", f.name);
            continue;
        }
        let res = f.results.as_ref().expect("a run's results");
        assert_eq!(res.repeats, 1, "{}", f.name);
        for w in &f.workloads {
            // The verdicts are recorded, one count per settled frame.
            let frames: usize = w.verdicts.values().sum();
            assert!(
                frames >= 8,
                "{}: {} has {frames} settled frames",
                f.name,
                w.name
            );
            if w.due_agrees(f.rest_cpu) == Some(false) && f.rest_cpu <= 0.1 {
                panic!(
                    "{}: {} due {:.3}, the kernel's rules {:.3} (rest {:.2} CPU)",
                    f.name,
                    w.name,
                    w.due,
                    w.rules_due.unwrap_or(0.0),
                    f.rest_cpu
                );
            }
            checked += usize::from(w.rules_due.is_some());
        }
    }
    assert!(checked >= 8, "only {checked} due figures checked");
    assert!(status.success(), "exit {status}: {stderr}");
    // Nothing left: no schedlab process started by it, no temp file beside the results.
    let left: Vec<u32> = schedlab_processes()
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(names.len(), 1, "only the results file");
    // The report fits 100 columns.
    let text = s.to_text();
    let wide = text.lines().find(|l| l.chars().count() > 100);
    assert!(wide.is_none(), "{wide:?}");
}

/// Writes a findings directory with the contest fork loop on one CPU (its fork loop at
/// `nice`) and the nice-within-session finding.
fn findings_dir(dir: &Path, nice: i32) {
    let src = |name: &str| {
        schedlab::finding::CATALOGUE
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1
            .to_owned()
    };
    // At nice 5 the loop weighs 335 against the workers' 4 x 1024: due 335/4431.
    let loop_due = match nice {
        0 => 0.2,
        5 => 335.0 / 4431.0,
        _ => unreachable!("weights for nice 0 and 5 only"),
    };
    let contest = src("contest-one-cpu")
        .replace("forkers = 1\n", &format!("forkers = 1\nnice = {nice}\n"))
        .replace(
            "due = { fork_load = 0.20, ref-job = 0.80 }",
            &format!(
                "due = {{ fork_load = {loop_due:.4}, ref-job = {:.4} }}",
                1.0 - loop_due
            ),
        );
    assert!(contest.contains(&format!("fork_load = {loop_due:.4}")));
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("contest-one-cpu.toml"), contest).unwrap();
    std::fs::write(
        dir.join("nice-within-session.toml"),
        src("nice-within-session"),
    )
    .unwrap();
}

#[test]
fn compare_flags_only_the_finding_changed_on_purpose() {
    let _m = common::wait::quiet_turn(&MACHINE);
    let dir = tempfile::tempdir().unwrap();
    let (same, niced) = (dir.path().join("same"), dir.path().join("niced"));
    findings_dir(&same, 0);
    findings_dir(&niced, 5);
    let args = |d: &Path| {
        vec![
            "--findings-dir".to_owned(),
            d.display().to_string(),
            "--repeat".into(),
            "3".into(),
            "--duration".into(),
            "9".into(),
        ]
    };
    let mut files = Vec::new();
    for (name, d) in [("a", &same), ("b", &same), ("c", &niced)] {
        let out = dir.path().join(format!("{name}.json"));
        let a = args(d);
        let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        let (_, stderr, status) = suite(&a, &out);
        // The niced fork loop is due what its weight gives: no fault.
        assert!(status.success(), "{name}: {stderr}");
        files.push(out);
    }
    let compare = |a: &Path, b: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .arg("compare")
            .arg(a)
            .arg(b)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!("{text}");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let text = compare(&files[0], &files[1]);
    assert!(text.contains("findings that moved: none"), "{text}");
    let text = compare(&files[0], &files[2]);
    let moved: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("finding moved"))
        .collect();
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert!(moved[0].contains(": contest-one-cpu: "), "{moved:?}");
    // Its line (wrapped at 100 columns) names the figure that moved.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Its due went from a fifth to 335/4431 = 0.076 (the model's within 0.03 of both).
    let due_moved = words
        .split("; ")
        .find_map(|w| w.strip_prefix("fork_load cpu_fair "))
        .and_then(|w| w.split_once(" -> "))
        .map(|(a, b)| (a.parse::<f64>().unwrap(), b[..5].parse::<f64>().unwrap()))
        .unwrap_or_else(|| panic!("no fork_load cpu_fair in {text}"));
    assert!(
        (due_moved.0 - 0.2).abs() < 0.03 && (due_moved.1 - 0.076).abs() < 0.03,
        "{due_moved:?}"
    );
}
