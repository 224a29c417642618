//! Reports that fit and results that travel: the run's text table and compare's text fit a
//! 100-column terminal (snapshots), large numbers read as `1.30 G`, an interval never goes below
//! zero, the per-repeat CSV reads back into the same figures, and a results file's machine is
//! this machine, field by field. No workload runs here.

mod common;

use schedlab::cli::compare::{compare_many, machine_differences, to_text};
use schedlab::model::latency::Distribution;
use schedlab::model::Verdict;
use schedlab::record::latency::LatencyResult;
use schedlab::record::results::{
    Host, Metric, MetricResult, Provenance, RunResults, ScenarioInfo, SchedSetting, WorkloadResult,
    CSV_REPEATS_HEADER,
};

fn host(kernel: &str, governor: &str, rt_runtime: &str) -> Host {
    Host {
        kernel: kernel.into(),
        cpus: 2,
        autogroup: true,
        hostname: Some("lab1".into()),
        kernel_version: Some("#1 SMP PREEMPT_DYNAMIC Fri Nov 28 10:00:00 UTC 2026".into()),
        cpu_model: Some("AMD EPYC 7B12".into()),
        cpufreq_governor: Some(governor.into()),
        sched: vec![
            SchedSetting {
                name: "kernel.sched_autogroup_enabled".into(),
                value: "1".into(),
            },
            SchedSetting {
                name: "kernel.sched_rt_runtime_us".into(),
                value: rt_runtime.into(),
            },
        ],
    }
}

/// A repeat's round trips: `n` of 20 µs and one of 900 µs.
fn round_trips(n: u64) -> Distribution {
    common::latency_with_outlier("round trip", n, 20_000, 900_000)
}

fn workload(name: &str, kind: &str, unit: &str, metrics: &[(Metric, &[f64])]) -> WorkloadResult {
    WorkloadResult {
        name: name.into(),
        kind: kind.into(),
        ops_unit: unit.into(),
        metrics: metrics
            .iter()
            .map(|(m, runs)| MetricResult::new(*m, unit, runs.to_vec()).unwrap())
            .collect(),
        latency: vec![],
    }
}

/// Results as a chat run and a ping-pong would give them: throughputs in the billions (the
/// issue's `1303576696`), runs far apart, some intervals that would cross zero.
fn results(kernel: &str, governor: &str, repeats: usize, scale: f64) -> RunResults {
    let mut r = RunResults::new(
        host(kernel, governor, "950000"),
        ScenarioInfo {
            name: "chat-30x1000".into(),
            file: Some("assets/scenarios/chat-30x1000.toml".into()),
            interval_ms: 500,
            duration_s: Some(10.0),
            content: Some("name = \"chat-30x1000\"\n".into()),
        },
        repeats,
    );
    r.provenance.schedlab_commit = Some("ff47afa".into());
    r.provenance.started_utc = Some("2026-12-06T02:11:19Z".into());
    let tp: Vec<f64> = [
        1_303_576_696.0,
        1_298_004_112.0,
        1_311_950_020.0,
        1_301_228_777.0,
        1_306_000_001.0,
    ]
    .iter()
    .take(repeats)
    .map(|x| x * scale)
    .collect();
    let cpu = &[1.02, 0.97, 1.01, 0.99, 1.00][..repeats];
    let wait = &[0.4, 0.3, 12.8, 0.2, 0.5][..repeats];
    let mig = &[3.0, 250.0, 4.0, 6.0, 2.0][..repeats];
    r.workloads.push(workload(
        "chat",
        "chat",
        "msg",
        &[
            (Metric::Throughput, &tp),
            (Metric::CpuReceived, cpu),
            (Metric::FairnessRatio, cpu),
            (Metric::RunqWaitPct, wait),
            (Metric::MigrationsPerSec, mig),
        ],
    ));
    let mut pp = workload(
        "sysv-pingpong",
        "msg-pingpong",
        "rt",
        &[
            (
                Metric::Throughput,
                &[61_235.0, 60_402.0, 63_981.0, 60_271.0, 61_403.0][..repeats],
            ),
            (
                Metric::CsPerSec,
                &[122_470.0, 120_804.0, 127_962.0, 120_542.0, 122_806.0][..repeats],
            ),
        ],
    );
    let d: Vec<Distribution> = (0..repeats as u64)
        .map(|k| round_trips(4_000 + 100 * k))
        .collect();
    pp.latency = vec![LatencyResult::from_repeats("round trip", &d)];
    r.workloads.push(pp);
    r
}

/// The statistics of `runs`, as a results file computes them.
fn stats(runs: &[f64]) -> MetricResult {
    MetricResult::new(Metric::CpuReceived, "", runs.to_vec()).unwrap()
}

fn assert_fits(text: &str) {
    for l in text.lines() {
        assert!(
            l.chars().count() <= 100,
            "{} columns: {l}",
            l.chars().count()
        );
    }
}

#[test]
fn the_run_table_fits_100_columns_with_two_repeats() {
    let text = results("6.18.0", "performance", 2, 1.0).to_text();
    assert_fits(&text);
    assert!(text.contains("1.30 G"), "{text}");
    assert!(!text.contains("1303576696"), "{text}");
    assert!(
        text.contains("(2 runs)") && text.contains("two repeats cannot give"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn the_run_table_fits_100_columns_and_clamps_at_zero() {
    let text = results("6.18.0", "performance", 5, 1.0).to_text();
    assert_fits(&text);
    // The run queue wait's runs (0.4, 0.3, 12.8, 0.2, 0.5) give a t interval from below zero.
    let wait = stats(&[0.4, 0.3, 12.8, 0.2, 0.5]);
    assert!(wait.summary.ci95_low.unwrap() < 0.0);
    let row = text.lines().find(|l| l.contains("runq_wait_pct")).unwrap();
    assert!(row.contains("0*.."), "{row}");
    assert!(
        text.contains("0*: the interval's low end fell below zero"),
        "{text}"
    );
    assert!(
        !text.lines().any(|l| l.contains("..-")),
        "no interval ends below zero: {text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn compare_fits_100_columns_and_says_where_the_machines_differ() {
    let a = results("6.17.0", "performance", 5, 1.0);
    let mut b = results("6.18.0", "schedutil", 5, 0.9);
    b.host.sched[1].value = "-1".into();
    b.scenario.content = Some("name = \"chat-30x1000\"\nduration = 20\n".into());
    let files = [a, b];
    let diffs = machine_differences(&files);
    assert_eq!(
        diffs,
        [
            "kernel: baseline 6.17.0; 1 6.18.0",
            "cpufreq governor: baseline performance; 1 schedutil",
            "kernel.sched_rt_runtime_us: baseline 950000; 1 -1",
            "scenario text: not the same in every file (their scenario.content)",
        ]
    );
    let c = compare_many(&files.iter().collect::<Vec<_>>());
    let labels = [
        "6.17.json".to_owned(),
        "a-long-file-name-6.18.json".to_owned(),
    ];
    let text = to_text(&c, &files, &labels);
    assert_fits(&text);
    assert!(
        text.contains("differs: kernel: baseline 6.17.0; 1 6.18.0"),
        "{text}"
    );
    assert!(text.contains("a-long-file-n…"), "{text}");
    insta::assert_snapshot!(text);

    // The same machine twice: nothing differs; an older file (no machine in full) neither.
    let same = [files[0].clone(), files[0].clone()];
    assert!(machine_differences(&same).is_empty());
    let mut old = files[0].clone();
    old.host = Host {
        kernel: "6.17.0".into(),
        cpus: 2,
        autogroup: true,
        ..Default::default()
    };
    old.provenance.schedlab_commit = None;
    old.scenario.content = None;
    assert_eq!(
        machine_differences(&[old, files[0].clone()]),
        Vec::<String>::new()
    );
}

/// A (workload, metric) and its value in each run.
type Figures = ((String, String), Vec<f64>);

/// The per-repeat CSV, parsed: (workload, metric) -> values in run order, and the leading
/// columns of every row.
fn parse_repeats(csv: &str) -> (Vec<Figures>, Vec<String>) {
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(CSV_REPEATS_HEADER));
    let mut out: Vec<Figures> = Vec::new();
    let mut leads = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 9, "{l}");
        leads.push(f[..3].join(","));
        let key = (f[3].to_owned(), f[5].to_owned());
        let run: usize = f[7].parse().unwrap();
        let v: f64 = f[8].parse().unwrap();
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, vs)) => {
                assert_eq!(run, vs.len() + 1, "runs in order: {l}");
                vs.push(v);
            }
            None => {
                assert_eq!(run, 1, "{l}");
                out.push((key, vec![v]));
            }
        }
    }
    (out, leads)
}

#[test]
fn the_per_repeat_csv_reads_back_into_the_same_figures() {
    let r = results("6.18.0", "performance", 5, 1.0);
    let csv = r.to_csv_repeats();
    let (parsed, leads) = parse_repeats(&csv);
    assert!(
        leads.iter().all(|l| l == "chat-30x1000,6.18.0,lab1"),
        "{leads:?}"
    );
    // The runs the CSV has for a workload's figure of that name.
    let runs_of = |workload: &str, name: &str| {
        let key = (workload.to_owned(), name.to_owned());
        &parsed.iter().find(|(k, _)| *k == key).unwrap().1
    };
    let mut expected = 0;
    for w in &r.workloads {
        for m in &w.metrics {
            let runs = runs_of(&w.name, m.what.metric.name());
            assert_eq!(runs, &m.runs, "exact doubles: {}", m.what.metric.name());
            assert_eq!(stats(runs).summary, m.summary);
            expected += 1;
        }
        for f in w.latency.iter().flat_map(|l| &l.figures) {
            let runs = runs_of(&w.name, f.what.figure.gate_name());
            assert_eq!(runs, &f.runs);
            assert_eq!(stats(runs).summary, f.summary);
            expected += 1;
        }
    }
    assert_eq!(parsed.len(), expected, "no row of anything else");
    assert_eq!(csv.lines().count(), 1 + expected * 5);
}

#[test]
fn this_machine_is_described_field_by_field() {
    let h = Host::here(2, true);
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    let uname = nix::sys::utsname::uname().unwrap();
    assert_eq!(h.kernel, uname.release().to_str().unwrap());
    assert_eq!(h.kernel_version.as_deref(), uname.version().to_str());
    assert_eq!(
        h.hostname.as_deref(),
        read("/proc/sys/kernel/hostname").as_deref()
    );
    let model = read("/proc/cpuinfo").and_then(|c| {
        c.lines()
            .find(|l| l.starts_with("model name"))
            .map(|l| l.split_once(':').unwrap().1.trim().to_owned())
    });
    if model.is_some() {
        assert_eq!(h.cpu_model, model);
    }
    assert_eq!(
        h.cpufreq_governor,
        read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    );
    // Every readable kernel.sched_* file, with its value; nothing else but base_slice_ns.
    let mut want: Vec<(String, String)> = std::fs::read_dir("/proc/sys/kernel")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("sched_"))
        .filter_map(|e| {
            let v = std::fs::read_to_string(e.path()).ok()?;
            let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
            Some((format!("kernel.{}", e.file_name().to_string_lossy()), v))
        })
        .collect();
    want.sort();
    if let Some(v) = read("/sys/kernel/debug/sched/base_slice_ns") {
        want.push(("debug/sched/base_slice_ns".into(), v));
    }
    let got: Vec<(String, String)> = h
        .sched
        .iter()
        .map(|s| (s.name.clone(), s.value.clone()))
        .collect();
    assert_eq!(got, want);
    if std::path::Path::new("/proc/sys/kernel/sched_autogroup_enabled").exists() {
        assert!(got
            .iter()
            .any(|(n, _)| n == "kernel.sched_autogroup_enabled"));
    }
    // A results file carries it, with the commit and round-trips through the strict reader.
    let mut r = RunResults::new(h.clone(), ScenarioInfo::default(), 1);
    r.provenance.started_utc = Some("2026-12-06T02:11:19Z".into());
    let back = RunResults::from_json(&r.to_json(), "x.json").unwrap();
    assert_eq!(back.host, h);
    let commit = back.provenance.schedlab_commit.unwrap();
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
}

/// A suite of two findings run, one skipped, with what the kernel did.
fn suite() -> schedlab::record::suite::SuiteResults {
    use schedlab::record::suite::{FindingResult, FindingWorkload, SuiteResults};
    let row =
        |name: &str, received: f64, due: f64, rules: Option<f64>, v: Verdict| FindingWorkload {
            name: name.into(),
            received,
            due,
            rules_due: rules,
            verdict: v,
            verdicts: [(schedlab::record::suite::verdict_word(v).to_owned(), 24)].into(),
            throttled_pct: 0.0,
            wake_delay_us: Some(533.2),
            migrations_per_sec: Some(1.4),
        };
    let finding = |name: &str, title: &str, workloads| FindingResult {
        name: name.into(),
        title: title.into(),
        text: "What it shows.".into(),
        skipped: None,
        workloads,
        jain_index: Some(0.926),
        rest_cpu: 0.02,
        results: None,
    };
    SuiteResults {
        suite_schema_version: schedlab::record::suite::SUITE_SCHEMA_VERSION,
        provenance: Provenance {
            schedlab_version: "0.1.0".into(),
            schedlab_commit: Some("b73b6f3".into()),
            started_utc: Some("2026-12-06T04:56:44Z".into()),
            command_line: Some(vec!["schedlab".into(), "suite".into(), "--quick".into()]),
        },
        host: host("6.18.44", "performance", "950000"),
        quick: true,
        repeats: 1,
        findings: vec![
            finding(
                "contest-one-cpu",
                "The 2002 contest fork loop on one CPU",
                vec![
                    row("ref-job", 0.698, 0.797, Some(0.8), Verdict::Short),
                    row("fork_load", 0.302, 0.199, Some(0.2), Verdict::Ahead),
                ],
            ),
            finding(
                "a-finding-with-a-very-long-name-for-its-workloads",
                "Names longer than their column are cut with an ellipsis, never wrapped",
                vec![row(
                    "a-workload-name-far-longer-than-the-column",
                    0.5,
                    0.5,
                    None,
                    Verdict::Fair,
                )],
            ),
            FindingResult {
                skipped: Some("needs root (cgroups or real time)".into()),
                ..finding("cgroup-weights", "cgroup weights 100 : 300", Vec::new())
            },
        ],
    }
}

#[test]
fn the_suite_report_fits_100_columns_and_reads_back() {
    let s = suite();
    let text = s.to_text();
    assert_fits(&text);
    insta::assert_snapshot!("suite_text", text);
    insta::assert_snapshot!("suite_markdown", s.to_markdown());
    let back = schedlab::record::suite::SuiteResults::from_json(&s.to_json(), "s.json").unwrap();
    assert_eq!(back, s);
    assert!(schedlab::record::suite::SuiteResults::is_suite(
        &s.to_json()
    ));
    assert!(s.due_faults().is_empty());
}
