//! compare: a known difference is significant, two samples of one distribution are noise,
//! and bad files are one clear error.

use std::process::Command;

use schedlab::cli::compare::{compare, Verdict};
use schedlab::record::results::{
    Host, Metric, MetricResult, RunResults, ScenarioInfo, WorkloadResult,
};

fn results(kernel: &str, throughput: Vec<f64>) -> RunResults {
    let mut r = RunResults::new(
        Host {
            kernel: kernel.into(),
            cpus: 2,
            autogroup: true,
        },
        ScenarioInfo {
            name: "chat-30x1000".into(),
            file: Some("assets/scenarios/chat-30x1000.toml".into()),
            interval_ms: 500,
            duration_s: None,
        },
        throughput.len(),
    );
    r.workloads.push(WorkloadResult {
        name: "chat".into(),
        kind: "chat".into(),
        ops_unit: "msg".into(),
        metrics: vec![MetricResult::new(Metric::Throughput, "msg", throughput).unwrap()],
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

fn schedlab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_schedlab"))
}

#[test]
fn the_command_prints_the_verdicts_and_refuses_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let pa = dir.path().join("a.json");
    let pb = dir.path().join("b.json");
    std::fs::write(&pa, results("6.18-a", K2533.to_vec()).to_json()).unwrap();
    let shifted: Vec<f64> = K2533.iter().map(|x| x + 3000.0).collect();
    std::fs::write(&pb, results("6.18-b", shifted).to_json()).unwrap();
    let out = schedlab()
        .arg("compare")
        .arg(&pa)
        .arg(&pb)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("throughput (msg/s)"), "{text}");
    assert!(text.contains("+3000"), "{text}");
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
