//! compare: a known difference is significant, two samples of one distribution are noise,
//! many files against the first find the one that moved, the Markdown table renders, the
//! exit status follows --fail-on-regression, and bad files are one clear error.

mod common;

use common::{schedlab, stdout_of};
use schedlab::cli::compare::{
    compare, compare_many, parse_gate, regressions, to_markdown, Verdict,
};
use schedlab::record::latency::{Figure, LatencyResult};
use schedlab::record::results::{
    Host, Metric, MetricResult, RunResults, ScenarioInfo, WorkloadResult,
};

fn results(kernel: &str, throughput: Vec<f64>) -> RunResults {
    let mut r = RunResults::new(
        Host {
            kernel: kernel.into(),
            cpus: 2,
            autogroup: true,
            ..Default::default()
        },
        ScenarioInfo {
            name: "chat-30x1000".into(),
            file: Some("assets/scenarios/chat-30x1000.toml".into()),
            interval_ms: 500,
            duration_s: None,
            content: None,
        },
        throughput.len(),
    );
    r.workloads.push(WorkloadResult {
        name: "chat".into(),
        kind: "chat".into(),
        ops_unit: "msg".into(),
        metrics: vec![MetricResult::new(Metric::Throughput, "msg", throughput).unwrap()],
        latency: vec![],
    });
    r
}

/// A deterministic normal sample (LCG + Box-Muller), so the test never flakes.
fn normal(seed: u64, n: usize, mean: f64, sd: f64) -> Vec<f64> {
    let mut state = seed;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u1, u2) = (uniform(), uniform());
            mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect()
}

const K2533: [f64; 10] = [
    60402.0, 63981.0, 60271.0, 61403.0, 61235.0, 60603.0, 61258.0, 61675.0, 62447.0, 64523.0,
];

#[test]
fn a_known_difference_is_significant() {
    let a = results("2.5.33", K2533.to_vec());
    let b = results("2.5.33+fix", K2533.iter().map(|x| x * 1.05).collect());
    let c = compare(&a, &b);
    assert_eq!(c.rows.len(), 1);
    let row = &c.rows[0];
    assert_eq!(row.verdict, Verdict::Significant);
    assert!((row.diff_pct.unwrap() - 5.0).abs() < 1e-9);
    let w = row.welch.as_ref().unwrap();
    assert!(w.ci95_low > 0.0 && w.ci95_low < w.diff && w.diff < w.ci95_high);
}

#[test]
fn two_samples_of_one_distribution_are_noise() {
    for seed in 1..=5 {
        let a = results("k", normal(seed, 10, 61000.0, 1500.0));
        let b = results("k", normal(seed + 100, 10, 61000.0, 1500.0));
        let row = &compare(&a, &b).rows[0];
        assert_eq!(row.verdict, Verdict::WithinNoise, "seed {seed}: {row:?}");
    }
}

#[test]
fn single_runs_cannot_be_told_apart() {
    let c = compare(&results("a", vec![1.0]), &results("b", vec![2.0]));
    assert_eq!(c.rows[0].verdict, Verdict::CannotTell);
}

#[test]
fn the_command_prints_the_verdicts_and_refuses_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let pa = dir.path().join("a.json");
    let pb = dir.path().join("b.json");
    std::fs::write(&pa, results("6.18-a", K2533.to_vec()).to_json()).unwrap();
    let shifted: Vec<f64> = K2533.iter().map(|x| x + 3000.0).collect();
    std::fs::write(&pb, results("6.18-b", shifted).to_json()).unwrap();
    let text = stdout_of(schedlab().arg("compare").arg(&pa).arg(&pb));
    assert!(text.contains("throughput (msg/s)"), "{text}");
    assert!(text.contains("+3.00 k"), "{text}");
    assert!(text.contains("significant"), "{text}");
    assert!(text.contains("kernel 6.18-a"), "{text}");

    let out = schedlab()
        .args(["compare", "--format", "json"])
        .arg(&pa)
        .arg(&pb)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"][0]["verdict"], "significant");

    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let out = schedlab()
        .arg("compare")
        .arg(&pa)
        .arg(&junk)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("schedlab compare: error: "), "{err}");
    assert!(err.contains("not a schedlab result file"), "{err}");

    let out = schedlab()
        .arg("compare")
        .arg(&pa)
        .arg("/nonexistent.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent.json"));
}

/// A result file with throughput and run-queue wait for one chat workload.
fn results2(kernel: &str, throughput: Vec<f64>, wait: Vec<f64>) -> RunResults {
    let mut r = results(kernel, throughput);
    r.workloads[0]
        .metrics
        .push(MetricResult::new(Metric::RunqWaitPct, "msg", wait).unwrap());
    r
}

const WAIT: [f64; 10] = [20.1, 19.5, 21.0, 20.4, 19.8, 20.6, 20.0, 19.7, 20.9, 20.2];

/// The baseline, a file whose runs are the baseline's 1% lower (within their 2.4% spread), and
/// one 10% slower with 30% more run-queue wait.
fn three() -> [RunResults; 3] {
    let scale = |xs: &[f64], k: f64| xs.iter().map(|x| x * k).collect::<Vec<_>>();
    [
        results2("6.17", K2533.to_vec(), WAIT.to_vec()),
        results2("6.18", scale(&K2533, 0.99), scale(&WAIT, 1.01)),
        results2("6.18-rc", scale(&K2533, 0.90), scale(&WAIT, 1.30)),
    ]
}

/// The first of `rows` that is `wanted`; the test fails without one.
fn find_row<T>(rows: &[T], wanted: impl Fn(&T) -> bool) -> &T {
    rows.iter().find(|r| wanted(r)).unwrap()
}

#[test]
fn many_files_against_the_first_find_the_one_shift() {
    let files = three();
    let c = compare_many(&files.iter().collect::<Vec<_>>());
    assert_eq!(c.rows.len(), 4, "2 files x 2 metrics");
    let row =
        |candidate, metric| find_row(&c.rows, |r| r.candidate == candidate && r.metric == metric);
    let noise = row(1, Metric::Throughput);
    assert_eq!(noise.verdict, Verdict::WithinNoise);
    assert!((noise.diff_pct.unwrap() + 1.0).abs() < 1e-9);
    assert_eq!(row(1, Metric::RunqWaitPct).verdict, Verdict::WithinNoise);
    let shift = row(2, Metric::Throughput);
    assert_eq!(shift.verdict, Verdict::Significant);
    assert!((shift.diff_pct.unwrap() + 10.0).abs() < 1e-9);
    assert_eq!(shift.judgement(), "significant, worse");
    let wait = row(2, Metric::RunqWaitPct);
    assert_eq!(wait.verdict, Verdict::Significant);
    assert_eq!(wait.judgement(), "significant, worse", "more wait is worse");
    // %stddev is the file's own spread: scaling every run keeps it.
    let base_sd = shift.a.pct_std_dev().unwrap();
    assert!((shift.pct_std_dev.unwrap() - base_sd).abs() < 1e-9);

    // Regressions: only where worse beyond the threshold and not noise.
    let labels: Vec<String> = ["6.17", "6.18", "6.18-rc"].map(String::from).into();
    let gate = |s: &str| parse_gate(s).unwrap();
    let r = regressions(&c, &[gate("throughput:5")], &labels);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].candidate, r[0].file.as_str()), (2, "6.18-rc"));
    assert!((r[0].worse_pct - 10.0).abs() < 1e-9);
    assert!(regressions(&c, &[gate("throughput:10.5")], &labels).is_empty());
    // 6.18 is 1% slower, but within noise: a zero threshold still does not fire on it.
    assert_eq!(regressions(&c, &[gate("throughput:0")], &labels).len(), 1);
    assert_eq!(
        regressions(&c, &[gate("runq_wait_pct:25%")], &labels).len(),
        1
    );
    assert!(regressions(&c, &[gate("runq_wait_pct:35")], &labels).is_empty());
}

#[test]
fn the_markdown_table_is_fit_for_a_mailing_list() {
    let files = three();
    let c = compare_many(&files.iter().collect::<Vec<_>>());
    let labels: Vec<String> = ["6.17", "6.18", "6.18-rc"].map(String::from).into();
    let md = to_markdown(&c, &files, &labels);
    insta::assert_snapshot!(md);
}

#[test]
fn gates_need_a_metric_with_a_direction() {
    assert!(parse_gate("throughput").unwrap_err().contains("METRIC:PCT"));
    assert!(parse_gate("speed:5")
        .unwrap_err()
        .contains("no metric `speed`"));
    let e = parse_gate("cpu_received:5").unwrap_err();
    assert!(e.contains("no better direction"), "{e}");
    assert!(
        e.contains("throughput, fairness_ratio, runq_wait_pct"),
        "{e}"
    );
    assert!(parse_gate("throughput:-1").is_err());
    assert_eq!(parse_gate("fairness_ratio:5").unwrap().pct, 5.0);
}

#[test]
fn the_exit_status_says_whether_a_threshold_was_crossed() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<_> = three()
        .iter()
        .zip(["6.17.json", "6.18.json", "6.18-rc.json"])
        .map(|(r, name)| {
            let p = dir.path().join(name);
            std::fs::write(&p, r.to_json()).unwrap();
            p
        })
        .collect();
    let run = |files: &[&std::path::PathBuf], extra: &[&str]| {
        schedlab()
            .arg("compare")
            .args(files)
            .args(extra)
            .output()
            .unwrap()
    };
    let (base, noise, slower) = (&paths[0], &paths[1], &paths[2]);

    let out = run(
        &[base, noise, slower],
        &["--fail-on-regression", "throughput:5"],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("schedlab compare: regression: chat in 6.18-rc: throughput 10.0% worse"),
        "{err}"
    );
    // The report is printed all the same.
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("baseline: 6.17: scenario chat-30x1000, kernel 6.17"),
        "{text}"
    );
    assert!(text.contains("-10.0% ± 2.4%"), "{text}");
    assert!(text.contains("significant, worse"), "{text}");
    assert!(text.contains("within noise"), "{text}");

    for (files, gates, want) in [
        // Under the threshold, within noise, or an improvement: success.
        (vec![base, slower], vec!["throughput:12"], 0),
        (vec![base, noise], vec!["throughput:0"], 0),
        (vec![slower, base], vec!["throughput:0"], 0),
        // Wait is lower-is-better: 30% more of it crosses 10%.
        (vec![base, slower], vec!["runq_wait_pct:10"], 3),
        (
            vec![base, noise, slower],
            vec!["throughput:50", "runq_wait_pct:10"],
            3,
        ),
        (vec![base, noise], vec![], 0),
    ] {
        let mut extra = Vec::new();
        for g in &gates {
            extra.extend(["--fail-on-regression", g]);
        }
        let out = run(&files, &extra);
        assert_eq!(
            out.status.code(),
            Some(want),
            "{files:?} {gates:?}: {out:?}"
        );
    }

    // A metric without a direction is a usage error, before any file is read.
    let out = run(&[base, slower], &["--fail-on-regression", "cs_per_sec:5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no better direction"));

    // One run each: nothing to test against, so the threshold alone decides.
    let one = dir.path().join("one.json");
    let one_slower = dir.path().join("one-slower.json");
    std::fs::write(&one, results("a", vec![100.0]).to_json()).unwrap();
    std::fs::write(&one_slower, results("b", vec![90.0]).to_json()).unwrap();
    let out = run(
        &[&one, &one_slower],
        &["--fail-on-regression", "throughput:5"],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot tell"));

    // JSON and Markdown are the same comparison.
    let out = run(&[base, noise, slower], &["--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
    assert_eq!(v["files"][2]["label"], "6.18-rc");
    assert_eq!(v["test"], "welch");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().any(|r| r["candidate"] == 2
        && r["metric"] == "throughput"
        && r["verdict"] == "significant"));
    assert_eq!(rows[0]["better"], "higher");
    let out = run(&[base, noise, slower], &["--markdown"]);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("| chat | throughput (msg/s, higher is better) |"),
        "{md}"
    );
    assert!(
        run(&[base], &[]).status.code() == Some(2),
        "two files at least"
    );
}

/// One repeat's distribution of round trips: 980 of 3 µs and 20 of `p99_us`, whose p99 is
/// therefore `p99_us` (its bucket's midpoint).
fn repeat_of(p99_us: f64) -> schedlab::model::latency::Distribution {
    let mut values = vec![3_000u64; 980];
    values.extend(vec![(p99_us * 1000.0) as u64; 20]);
    let mut counts = std::collections::BTreeMap::new();
    for &v in &values {
        *counts
            .entry(schedlab::sys::shared::histogram::bucket_of(v) as u16)
            .or_insert(0u64) += 1;
    }
    schedlab::model::latency::Distribution::cumulative(&schedlab::probe::LatencySample {
        unit: "round trip".into(),
        samples: values.len() as u64,
        sum_ns: values.iter().sum(),
        rejected: 0,
        buckets: counts.into_iter().collect(),
    })
}

/// A result file of a ping-pong whose repeats had these p99s (µs), and 300,000 rt/s each.
fn pingpong(kernel: &str, p99s: &[f64]) -> RunResults {
    let mut r = results(kernel, vec![300_000.0; p99s.len()]);
    let w = &mut r.workloads[0];
    w.name = "pp".into();
    let dists: Vec<_> = p99s.iter().map(|&p| repeat_of(p)).collect();
    w.latency = vec![LatencyResult::from_repeats("round trip", &dists)];
    r
}

const P99: [f64; 6] = [100.0, 104.0, 98.0, 102.0, 110.0, 96.0];

#[test]
fn a_p99_that_doubled_is_flagged_and_one_within_noise_is_not() {
    let base = pingpong("6.17", &P99);
    let doubled = pingpong("6.18-rc", &P99.map(|p| p * 2.0));
    let noise = pingpong("6.18", &[103.0, 99.0, 101.0, 107.0, 97.0, 100.0]);
    let c = compare_many(&[&base, &noise, &doubled]);
    let row = |candidate, figure| {
        find_row(&c.latency, |r| {
            r.candidate == candidate && r.figure == figure
        })
    };
    let p99 = row(2, Figure::P99);
    assert_eq!(p99.unit, "round trip");
    assert_eq!(p99.verdict, Verdict::Significant, "{p99:?}");
    assert_eq!(p99.judgement(), "significant, worse");
    let t = p99.rank_test.as_ref().unwrap();
    assert!(t.exact && t.p_value < 0.01, "{t:?}");
    assert!((p99.diff_pct.unwrap() - 100.0).abs() < 3.2, "{p99:?}");
    // The shift's interval: about +100 µs, and away from zero.
    assert!(t.ci95_low.unwrap() > 50.0 && t.shift > 90.0, "{t:?}");
    // The p50 did not move (every repeat's is the 3 µs bucket): no difference at all.
    let p50 = row(2, Figure::P50);
    assert_eq!(p50.verdict, Verdict::WithinNoise);
    assert_eq!(p50.rank_test.as_ref().unwrap().p_value, 1.0);
    assert_eq!(row(1, Figure::P99).verdict, Verdict::WithinNoise);

    let labels: Vec<String> = ["6.17", "6.18", "6.18-rc"].map(String::from).into();
    let gate = |s: &str| parse_gate(s).unwrap();
    let r = regressions(&c, &[gate("latency_p99:10")], &labels);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].candidate, r[0].unit.as_deref()),
        (2, Some("round trip"))
    );
    assert!(regressions(&c, &[gate("latency_p99:150")], &labels).is_empty());
    assert!(regressions(&c, &[gate("latency_p50:0")], &labels).is_empty());
    // Better is not worse: the doubled file as the baseline improves.
    let back = compare(&doubled, &base);
    let improved = back
        .latency
        .iter()
        .find(|r| r.figure == Figure::P99)
        .unwrap();
    assert_eq!(improved.judgement(), "significant, better");
    assert!(regressions(&back, &[gate("latency_p99:0")], &labels).is_empty());
}

#[test]
fn three_runs_a_side_cannot_tell_and_the_threshold_alone_decides() {
    let c = compare(
        &pingpong("a", &P99[..3]),
        &pingpong("b", &P99[..3].iter().map(|p| p * 2.0).collect::<Vec<_>>()),
    );
    let p99 = c.latency.iter().find(|r| r.figure == Figure::P99).unwrap();
    assert_eq!(p99.verdict, Verdict::CannotTell);
    assert_eq!(p99.judgement(), "cannot tell (needs 4+ runs each)");
    let labels: Vec<String> = ["a", "b"].map(String::from).into();
    let r = regressions(&c, &[parse_gate("latency_p99:10").unwrap()], &labels);
    assert_eq!(r.len(), 1);
}

#[test]
fn the_command_reports_latency_in_every_format_and_fails_on_its_regression() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, r: RunResults| {
        let p = dir.path().join(name);
        std::fs::write(&p, r.to_json()).unwrap();
        p
    };
    let base = write("6.17.json", pingpong("6.17", &P99));
    let slower = write("6.18-rc.json", pingpong("6.18-rc", &P99.map(|p| p * 2.0)));
    let run = |extra: &[&str]| {
        schedlab()
            .arg("compare")
            .args([&base, &slower])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("  p99 round trip (µs)"), "{text}");
    assert!(text.contains("significant, worse"), "{text}");
    assert!(
        text.contains("latency (µs, lower is better): Mann–Whitney rank test"),
        "{text}"
    );

    let out = run(&["--markdown"]);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("| pp | p99 round trip (µs, lower is better) | "),
        "{md}"
    );
    assert!(md.contains("Mann–Whitney rank test"), "{md}");

    let out = run(&["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["latency_test"], "mann_whitney");
    let rows = v["latency_rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "p50, p99, p99.9 and mean");
    let p99 = rows.iter().find(|r| r["figure"] == "p99_us").unwrap();
    assert_eq!(p99["verdict"], "significant");
    assert!(p99["rank_test"]["p_value"].as_f64().unwrap() < 0.01);

    let out = run(&["--fail-on-regression", "latency_p99:10"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(
            "schedlab compare: regression: pp in 6.18-rc: latency_p99 (round trip) 100.0% worse"
        ),
        "{err}"
    );
    let out = run(&["--fail-on-regression", "latency_p50:5"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let e = parse_gate("latency_p95:5").unwrap_err();
    assert!(
        e.contains("latency_p50, latency_p99, latency_p999, latency_mean"),
        "{e}"
    );
}
