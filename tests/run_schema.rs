//! The results JSON follows its documented schema (docs/results-schema.md): every field written
//! is documented, output round-trips through the strict reader, and strays are refused.

mod common;

use schedlab::model::latency::Distribution;
use schedlab::record::latency::LatencyResult;
use schedlab::record::results::{Host, RunResults, ScenarioInfo, SchedSetting, SCHEMA_VERSION};

/// A repeat's fork cycles: `n` of 1 ms and one of 40 ms.
fn fork_cycles(n: u64) -> Distribution {
    common::latency_with_outlier("fork cycle", n, 1_000_000, 40_000_000)
}

/// A machine with every field known.
fn host() -> Host {
    Host {
        kernel: "6.18.0-test".into(),
        cpus: 2,
        autogroup: true,
        hostname: Some("lab1".into()),
        kernel_version: Some("#1 SMP PREEMPT_DYNAMIC Fri Nov 28 10:00:00 UTC 2026".into()),
        cpu_model: Some("AMD EPYC 7B12".into()),
        cpufreq_governor: Some("performance".into()),
        sched: vec![SchedSetting {
            name: "kernel.sched_rt_runtime_us".into(),
            value: "950000".into(),
        }],
    }
}

fn example() -> RunResults {
    let frames = common::frames();
    let mut second = common::frames();
    for f in &mut second {
        f.workloads[0].ops_per_sec *= 1.1;
    }
    // A neighbour's session at the end of the second repeat: the rest's groups are written.
    if let Some(f) = second.last_mut() {
        f.machine.rest_groups = vec![schedlab::model::RestGroup {
            name: "session 812 (bash: make, cc1)".into(),
            key: "autogroup-12".into(),
            received: 0.9,
            fair: 1.0,
            verdict: schedlab::model::Verdict::Fair,
            ..Default::default()
        }];
    }
    let mut r = RunResults::from_repeats(
        host(),
        ScenarioInfo {
            name: "contest-fork-load".into(),
            file: None,
            interval_ms: 500,
            duration_s: Some(5.0),
            content: Some("name = \"contest-fork-load\"\n".into()),
        },
        &[
            ("ref-job".into(), "ref-job".into(), "unit".into()),
            ("fork \"loop\"".into(), "fork_load".into(), "fork".into()),
        ],
        &[frames, second],
    );
    r.provenance.schedlab_commit = Some("ff47afa".into());
    r.provenance.started_utc = Some("2026-12-06T02:11:19Z".into());
    r.provenance.command_line = Some(vec![
        "schedlab".into(),
        "run".into(),
        "contest-fork-load".into(),
    ]);
    r.workloads[1].latency = vec![LatencyResult::from_repeats(
        "fork cycle",
        &[fork_cycles(4_400), fork_cycles(4_000)],
    )];
    r
}

fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                keys(v, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

fn documented_fields() -> Vec<String> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results-schema.md"),
    )
    .unwrap();
    // The results part: table rows "| `field` | type | meaning |" before the compare section.
    let results = doc.split("## `schedlab compare").next().unwrap();
    results
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_field_written_is_documented_and_every_documented_field_written() {
    let json = serde_json::to_value(example()).unwrap();
    let mut written = Vec::new();
    keys(&json, &mut written);
    written.sort();
    written.dedup();
    let mut documented = documented_fields();
    documented.sort();
    documented.dedup();
    assert_eq!(written, documented);
    assert_eq!(json["schema_version"], SCHEMA_VERSION);
}

#[test]
fn output_round_trips_through_the_strict_reader() {
    let r = example();
    let text = r.to_json();
    let back = RunResults::from_json(&text, "x.json").unwrap();
    assert_eq!(back, r);
    let m = &back.workloads[0].metrics[0];
    assert_eq!(m.runs.len(), 2);
    assert_eq!(m.what.unit, "unit/s");
    assert!(m.summary.std_dev.unwrap() > 0.0);
    assert!(
        m.summary.ci95_low.unwrap() < m.summary.mean
            && m.summary.mean < m.summary.ci95_high.unwrap()
    );
    // Two runs 10% apart: far above the 5% threshold.
    assert!(m.warning.as_deref().unwrap().contains("too noisy"));
    let l = &back.workloads[1].latency[0];
    assert_eq!(
        (l.unit.as_str(), l.samples.as_slice()),
        ("fork cycle", &[4_401, 4_001][..])
    );
    assert_eq!(l.pooled.samples, 8_402);
    assert!((l.pooled.p50_us - 1_000.0).abs() < 16.0, "{l:?}");
}

#[test]
fn strays_and_other_versions_are_refused() {
    let mut v = serde_json::to_value(example()).unwrap();
    v["workloads"][0]["metrics"][0]["median"] = 1.into();
    let e = RunResults::from_json(&v.to_string(), "x.json").unwrap_err();
    assert!(format!("{e:#}").contains("unknown field `median`"), "{e:#}");
    let mut v = serde_json::to_value(example()).unwrap();
    v["workloads"][1]["latency"][0]["figures"][0]["median"] = 1.into();
    let e = RunResults::from_json(&v.to_string(), "x.json").unwrap_err();
    assert!(format!("{e:#}").contains("unknown field `median`"), "{e:#}");
    let mut v = serde_json::to_value(example()).unwrap();
    v["workloads"][1]["latency"][0]["pooled"]["p95_us"] = 1.into();
    let e = RunResults::from_json(&v.to_string(), "x.json").unwrap_err();
    assert!(format!("{e:#}").contains("unknown field `p95_us`"), "{e:#}");
    // Schema 3, without the machine in full, is still read: the new fields are absent.
    let mut v = serde_json::to_value(example()).unwrap();
    v["schema_version"] = 3.into();
    for k in ["schedlab_commit", "started_utc", "command_line"] {
        v.as_object_mut().unwrap().remove(k);
    }
    for k in [
        "hostname",
        "kernel_version",
        "cpu_model",
        "cpufreq_governor",
        "sched",
    ] {
        v["host"].as_object_mut().unwrap().remove(k);
    }
    v["scenario"].as_object_mut().unwrap().remove("content");
    let old = RunResults::from_json(&v.to_string(), "x.json").unwrap();
    assert_eq!((old.host.hostname, old.host.sched.len()), (None, 0));
    assert_eq!(
        (old.provenance.started_utc, old.scenario.content),
        (None, None)
    );
    // Schema 2, without latency, is still read.
    let mut v = serde_json::to_value(example()).unwrap();
    v["schema_version"] = 2.into();
    v["workloads"][1].as_object_mut().unwrap().remove("latency");
    assert!(RunResults::from_json(&v.to_string(), "x.json").is_ok());
    let mut v = serde_json::to_value(example()).unwrap();
    v["schema_version"] = 99.into();
    let e = RunResults::from_json(&v.to_string(), "x.json").unwrap_err();
    assert!(format!("{e:#}").contains("schema version 99"), "{e:#}");
    assert!(RunResults::from_json("not json", "x.json").is_err());
}

#[test]
fn csv_has_a_row_per_workload_and_metric() {
    let csv = example().to_csv();
    let lines: Vec<_> = csv.lines().collect();
    assert_eq!(
        lines.len(),
        1 + 2 * 6 + 4,
        "and the fork cycles' four figures"
    );
    assert!(lines[0].starts_with("workload,kind,metric,unit,n,mean,std_dev"));
    assert!(lines[1].starts_with("ref-job,ref-job,throughput,unit/s,2,"));
    assert!(
        lines[7].starts_with("\"fork \"\"loop\"\"\",fork_load,throughput,fork/s,2,885,0,"),
        "{}",
        lines[7]
    );
    assert!(
        lines[13].starts_with("\"fork \"\"loop\"\"\",fork_load,latency_p50,µs (fork cycle),2,"),
        "{}",
        lines[13]
    );
}

#[test]
fn text_warns_plainly() {
    let text = example().to_text();
    assert!(
        text.contains(
            "scenario contest-fork-load: 2 repeats, kernel 6.18.0-test, 2 CPUs, autogroup on"
        ),
        "{text}"
    );
    assert!(
        text.contains("warning: too noisy to trust (runs vary by more than 5%): throughput 6.7%"),
        "{text}"
    );
}
