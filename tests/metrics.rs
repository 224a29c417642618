//! The metrics endpoint, over real HTTP on loopback: counters integrated from Frames, both
//! exposition formats by content negotiation, promtool's lint, hostile clients, and the Grafana
//! dashboard asking only for series that exist.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use schedlab::probe::{LatencySample, Sample, WorkloadSample};
use schedlab::record::metrics::{common_labels, MetricsServer};
use schedlab::sys::shared::histogram::bucket_of;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0";

fn get_raw(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp
}

fn get(addr: SocketAddr, path: &str, accept: &str) -> (String, String) {
    let resp = get_raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n"),
    );
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

/// One family as the exposition declares it.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    unit: Option<String>,
    /// Each sample: its name (with `_total` for a counter), labels, value.
    samples: Vec<(String, String, f64)>,
}

/// Checks the grammar of either format line by line and returns the families by name (the
/// family name: without `_total` in OpenMetrics, with it in the text format).
fn parse(body: &str, openmetrics: bool) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current = String::new();
    let lines: Vec<&str> = body.lines().collect();
    if openmetrics {
        assert_eq!(lines.last(), Some(&"# EOF"), "OpenMetrics ends with # EOF");
    } else {
        assert!(!body.contains("# EOF") && !body.contains("# UNIT"));
    }
    for (i, line) in lines.iter().enumerate() {
        if *line == "# EOF" {
            assert_eq!(i, lines.len() - 1, "# EOF only at the end");
            continue;
        }
        // A family's metadata lines (HELP, TYPE, UNIT, in any order) come before its samples.
        let meta = ["# HELP ", "# TYPE ", "# UNIT "]
            .iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (&p[2..6], rest)));
        if let Some((what, rest)) = meta {
            let (name, text) = rest.split_once(' ').unwrap();
            if name != current {
                assert!(
                    !families.contains_key(name),
                    "family {name} declared twice: its samples must be together"
                );
                current = name.to_owned();
                families.insert(name.to_owned(), Family::default());
            }
            let family = families.get_mut(name).unwrap();
            match what {
                "TYPE" => {
                    assert!(["counter", "gauge", "histogram"].contains(&text), "{line}");
                    family.kind = text.to_owned();
                }
                "UNIT" => {
                    assert!(name.ends_with(&format!("_{text}")), "{line}");
                    family.unit = Some(text.to_owned());
                }
                _ => assert!(!text.is_empty(), "{line}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("name{labels} value");
        let value = value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("bad value in {line}"));
        let (name, labels) = series.split_once('{').expect("labels");
        assert!(labels.ends_with('}'), "{line}");
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        let family = families.get_mut(&current).expect("a sample after its TYPE");
        if family.kind == "histogram" {
            let part = name.strip_prefix(current.as_str()).unwrap_or("");
            assert!(
                ["_bucket", "_sum", "_count"].contains(&part),
                "sample of another family: {line}"
            );
            assert!(value >= 0.0, "a histogram counts: {line}");
        } else {
            let want = if openmetrics && family.kind == "counter" {
                format!("{current}_total")
            } else {
                current.clone()
            };
            assert_eq!(name, want, "sample of another family: {line}");
        }
        if family.kind == "counter" {
            assert!(value >= 0.0, "a counter is never negative: {line}");
        }
        family.samples.push((
            name.to_owned(),
            labels.trim_end_matches('}').to_owned(),
            value,
        ));
    }
    families
}

fn value(families: &BTreeMap<String, Family>, family: &str, labels_contain: &[&str]) -> f64 {
    let f = &families[family];
    let hits: Vec<_> = f
        .samples
        .iter()
        .filter(|(_, l, _)| labels_contain.iter().all(|want| l.contains(want)))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "{family} {labels_contain:?}: {:?}",
        f.samples
    );
    hits[0].2
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

fn server() -> MetricsServer {
    MetricsServer::start_labelled(
        "127.0.0.1:0",
        common_labels("lab1", "6.18.0-test", "contest"),
    )
    .unwrap()
}

#[test]
fn counters_accumulate_and_both_formats_say_the_same() {
    let server = server();
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());

    // Before the first frame: valid, the families declared, no workload sample.
    let (head, body) = get(addr, "/metrics", "text/plain");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    let empty = parse(&body, false);
    assert!(!body.contains("workload="), "{body}");
    assert_eq!(
        value(&empty, "schedlab_samples_total", &["host=\"lab1\""]),
        0.0
    );

    for f in common::frames() {
        server.publish(&f);
    }
    let (head, om_body) = get(addr, "/metrics", OPENMETRICS);
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    let om = parse(&om_body, true);
    let (_, text_body) = get(addr, "/metrics", "*/*");
    let text = parse(&text_body, false);

    // Ten frames of half a second: ref-job got 1.2 CPUs, so 6 CPU seconds; due 1.6 -> 8.
    for (families, suffix) in [(&om, ""), (&text, "_total")] {
        let f = |name: &str| format!("{name}{suffix}");
        let cpu = f("schedlab_workload_cpu_received_seconds");
        assert_eq!(families[&cpu].kind, "counter");
        assert!(close(value(families, &cpu, &["workload=\"ref-job\""]), 6.0));
        assert!(close(
            value(
                families,
                &f("schedlab_workload_cpu_due_seconds"),
                &["workload=\"ref-job\""]
            ),
            8.0
        ));
        // 885 forks/s for 5 s; the label says what one operation is.
        assert!(close(
            value(
                families,
                &f("schedlab_workload_operations"),
                &[r#"workload="fork \"loop\"""#, "operation=\"fork\""]
            ),
            4425.0
        ));
        let switches = f("schedlab_workload_context_switches");
        assert!(close(
            value(
                families,
                &switches,
                &["workload=\"ref-job\"", "switch=\"involuntary\""]
            ),
            1500.0
        ));
        assert!(close(
            value(
                families,
                &switches,
                &["workload=\"ref-job\"", "switch=\"voluntary\""]
            ),
            10.0
        ));
        // 40% of a task-interval waiting, over 5 s.
        assert!(close(
            value(
                families,
                &f("schedlab_workload_runqueue_wait_seconds"),
                &["workload=\"ref-job\""]
            ),
            2.0
        ));
        assert_eq!(
            value(families, &f("schedlab_samples"), &["scenario=\"contest\""]),
            10.0
        );
        // Levels are gauges, from the latest frame.
        assert_eq!(families["schedlab_workload_tasks"].kind, "gauge");
        assert_eq!(
            value(
                families,
                "schedlab_workload_tasks",
                &["workload=\"ref-job\""]
            ),
            4.0
        );
        assert_eq!(
            value(
                families,
                "schedlab_workload_fairness_ratio",
                &[r#"workload="fork \"loop\"""#]
            ),
            2.0
        );
        // Every series carries host, kernel and scenario, so fleets stay apart.
        for fam in families.values() {
            for (name, labels, _) in &fam.samples {
                assert!(
                    labels.starts_with("host=\"lab1\",kernel=\"6.18.0-test\",scenario=\"contest\""),
                    "{name}{{{labels}}}"
                );
            }
        }
    }
    assert_eq!(
        om["schedlab_workload_cpu_received_seconds"].unit.as_deref(),
        Some("seconds")
    );
    assert_eq!(
        om["schedlab_workload_fairness_ratio"].unit.as_deref(),
        Some("ratio")
    );
    // The same series in both formats.
    let names = |fs: &BTreeMap<String, Family>| -> BTreeSet<(String, String)> {
        fs.values()
            .flat_map(|f| f.samples.iter().map(|(n, l, _)| (n.clone(), l.clone())))
            .collect()
    };
    assert_eq!(names(&om), names(&text));

    let (head, _) = get(addr, "/nope", "*/*");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let resp = get_raw(addr, "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(resp.starts_with("HTTP/1.1 405"), "{resp}");
}

/// Samples of the fork loop of `common::frames()` with its fork cycles timed: `values` (ns)
/// recorded so far by the process led by `leader`.
fn timed(leader: u32, values: &[u64]) -> Sample {
    let mut counts = BTreeMap::new();
    for &v in values {
        *counts.entry(bucket_of(v) as u16).or_insert(0u64) += 1;
    }
    Sample {
        workloads: vec![WorkloadSample {
            id: 1,
            name: "fork \"loop\"".into(),
            leader,
            latency: vec![LatencySample {
                unit: "fork cycle".into(),
                samples: values.len() as u64,
                sum_ns: values.iter().sum(),
                rejected: 0,
                buckets: counts.into_iter().collect(),
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A server that has seen the common Frames and, beside them, fork cycles: 900 of 1 ms, 90 of
/// 3 ms and 10 of 50 ms, then a restarted fork loop's 100 of 1 ms.
fn server_with_latency() -> MetricsServer {
    let server = server();
    let mut values: Vec<u64> = Vec::new();
    server.publish_latency(&timed(100, &values));
    for (k, f) in common::frames().iter().enumerate() {
        if k < 5 {
            values.extend(vec![1_000_000; 180]);
            values.extend(vec![3_000_000; 18]);
            values.extend(vec![50_000_000; 2]);
            server.publish_latency(&timed(100, &values));
        } else if k == 5 {
            server.publish_latency(&timed(200, &[1_000_000; 100]));
        }
        server.publish(f);
    }
    server
}

#[test]
fn latency_is_a_histogram_of_the_in_band_buckets() {
    let server = server_with_latency();
    let addr = server.local_addr();
    let (_, om_body) = get(addr, "/metrics", OPENMETRICS);
    let (_, text_body) = get(addr, "/metrics", "text/plain");
    let (om, text) = (parse(&om_body, true), parse(&text_body, false));
    for families in [&om, &text] {
        let h = &families["schedlab_latency_seconds"];
        assert_eq!(h.kind, "histogram");
        let labels = r#"workload="fork \"loop\"",unit="fork cycle""#;
        let buckets: Vec<(f64, f64)> = h
            .samples
            .iter()
            .filter(|(n, l, _)| n.ends_with("_bucket") && l.contains(labels))
            .map(|(_, l, v)| {
                let le = l.rsplit_once("le=\"").unwrap().1.trim_end_matches('"');
                (
                    if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().unwrap()
                    },
                    *v,
                )
            })
            .collect();
        assert_eq!(buckets.len(), 56, "55 bounds and +Inf");
        assert!(buckets
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        // 1,100 cycles in all: the restart counts on. At or below 1.048576 ms: the 1 ms ones.
        let at = |le: f64| buckets.iter().find(|b| b.0 == le).unwrap().1;
        assert_eq!(at(0.000786432), 0.0);
        assert_eq!(at(0.001048576), 1_000.0);
        assert_eq!(at(0.003145728), 1_090.0);
        assert_eq!(at(0.050331648), 1_100.0);
        assert_eq!(at(f64::INFINITY), 1_100.0);
        let ending = |suffix: &str| {
            h.samples
                .iter()
                .find(|(n, _, _)| n.ends_with(suffix))
                .unwrap()
                .2
        };
        let (count, sum) = (ending("_count"), ending("_sum"));
        assert_eq!(count, 1_100.0);
        // The exact sum: 1,000 × 1 ms + 90 × 3 ms + 10 × 50 ms.
        assert!(close(sum, 1.0 + 0.27 + 0.5), "{sum}");
    }
    assert_eq!(
        value(&om, "schedlab_latency_rejected", &["unit=\"fork cycle\""]),
        0.0
    );
    // A workload that times nothing has no histogram.
    assert!(!text_body.contains("schedlab_latency_seconds_count{host=\"lab1\",kernel=\"6.18.0-test\",scenario=\"contest\",workload=\"ref-job\""));
}

#[test]
fn the_real_host_and_kernel_label_every_series() {
    let server = MetricsServer::start("127.0.0.1:0", "s").unwrap();
    server.publish(&common::frames()[0]);
    let (_, body) = get(server.local_addr(), "/metrics", "text/plain");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let want = format!(
        "{{host=\"{}\",kernel=\"{}\",scenario=\"s\",workload=\"ref-job\"}}",
        host.trim(),
        kernel.trim()
    );
    assert!(body.contains(&want), "{want} in {body}");
}

/// promtool from the prometheus package, or None with a loud note (CI installs it).
fn promtool() -> Option<Command> {
    let found = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        eprintln!(
            "\n*** SKIPPED: promtool not found; install Debian's prometheus package (.ci/run does) ***\n"
        );
        return None;
    }
    Some(Command::new("promtool"))
}

#[test]
fn the_text_format_passes_promtool() {
    let Some(mut promtool) = promtool() else {
        return;
    };
    let server = server_with_latency();
    let (_, body) = get(server.local_addr(), "/metrics", "text/plain");
    assert!(
        body.contains("# TYPE schedlab_latency_seconds histogram"),
        "{body}"
    );
    let mut child = promtool
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    // promtool's lint checks names, units, help and counter suffixes; any complaint fails.
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // promtool reads only the text format (OpenMetrics' `# UNIT` and `_total` samples under
    // a family without it are lint errors to it); tests/prometheus.rs has Prometheus itself
    // parse the OpenMetrics exposition.
}

#[test]
fn hostile_clients_are_cut_off() {
    let server = server();
    let addr = server.local_addr();

    // A request head beyond the size limit is refused.
    let mut big = String::from("GET /metrics HTTP/1.1\r\n");
    while big.len() < 20 * 1024 {
        big.push_str("X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    big.push_str("\r\n");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The server may close while we still write: only what it answered matters.
    let _ = s.write_all(big.as_bytes());
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    assert!(
        String::from_utf8_lossy(&resp).starts_with("HTTP/1.1 431"),
        "{}",
        String::from_utf8_lossy(&resp)
    );

    // A client that connects and says nothing, and one that trickles a byte at a time, are
    // dropped at the request deadline: a real scrape behind them is still answered.
    let _silent = TcpStream::connect(addr).unwrap();
    let mut trickle = TcpStream::connect(addr).unwrap();
    trickle
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut cut_off = false;
    for _ in 0..100 {
        if trickle.write_all(b"G").is_err() {
            cut_off = true;
            break;
        }
        let mut byte = [0u8; 1];
        match trickle.read(&mut byte) {
            Ok(0) => {
                cut_off = true;
                break;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => {
                cut_off = true;
                break;
            }
        }
    }
    assert!(cut_off, "a trickling client must not hold the endpoint");
    let (head, _) = get(addr, "/metrics", "text/plain");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[test]
fn a_crowd_of_silent_clients_is_bounded_timed_out_and_does_not_delay_stopping() {
    let server = server();
    let addr = server.local_addr();
    // More silent connections than the endpoint keeps open at once.
    let mut silent: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    // A scrape is answered once there is room: at the latest when the silent ones time out.
    let start = std::time::Instant::now();
    let answered = loop {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut resp = String::new();
        let sent = s
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .is_ok();
        if sent && s.read_to_string(&mut resp).is_ok() && resp.starts_with("HTTP/1.1 200") {
            break true;
        }
        if start.elapsed() > Duration::from_secs(8) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        answered,
        "no scrape answered within 8 s of 100 silent clients"
    );
    // Each silent one was closed: at its request deadline, or at once when there was no room.
    for s in &mut silent {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut byte = [0u8; 1];
        assert!(
            matches!(s.read(&mut byte), Ok(0) | Err(_)),
            "a silent client was answered or kept open"
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );

    // Stopping with connections open waits for none of them.
    let _held: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(100));
    let stopping = std::time::Instant::now();
    drop(server);
    assert!(
        stopping.elapsed() < Duration::from_secs(1),
        "stopping took {:?}",
        stopping.elapsed()
    );
    assert!(
        TcpStream::connect(addr).is_err(),
        "still listening after drop"
    );
}

#[test]
fn address_in_use_is_one_clear_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = MetricsServer::start(&addr, "x").err().expect("must fail");
    let msg = format!("{err:#}");
    assert!(
        msg.contains(&format!("cannot serve metrics on {addr}")),
        "{msg}"
    );
    assert!(msg.to_lowercase().contains("in use"), "{msg}");
    assert!(MetricsServer::start("not an address", "x").is_err());
}

#[test]
fn the_grafana_dashboard_asks_only_for_series_that_exist() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/grafana/schedlab.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();

    // Beside the common Frames, one with what they lack: the rest's groups, PSI, a verdict.
    let server = server_with_latency();
    let mut last = common::frames().pop().unwrap();
    last.t += last.interval;
    last.machine.psi_some_avg10 = Some(12.5);
    last.workloads[0].verdict = schedlab::model::Verdict::Ahead;
    last.machine.rest_groups = vec![schedlab::model::RestGroup {
        name: "session 9 (make)".into(),
        key: "autogroup-9".into(),
        received: 0.5,
        fair: 0.6,
        ..Default::default()
    }];
    server.publish(&last);
    let (_, body) = get(server.local_addr(), "/metrics", "text/plain");
    let exposed: BTreeSet<String> = parse(&body, false)
        .values()
        .flat_map(|f| f.samples.iter().map(|(n, _, _)| n.clone()))
        .collect();

    let mut exprs = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr" | "query", serde_json::Value::String(s)) => out.push(s.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(&dashboard, &mut exprs);
    assert!(exprs.len() >= 10, "{exprs:?}");
    for e in &exprs {
        let mut rest = e.as_str();
        while let Some(i) = rest.find("schedlab_") {
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(exposed.contains(&name), "{name} (in `{e}`) is not exposed");
            rest = &rest[i + name.len()..];
        }
    }

    // The variables: hosts, their kernels, then the scenarios run on those.
    let variables: Vec<_> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(variables, ["datasource", "host", "kernel", "scenario"]);

    // A row repeated for each host, holding the charts.
    let panels = dashboard["panels"].as_array().unwrap();
    let rows: Vec<_> = panels.iter().filter(|p| p["type"] == "row").collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["repeat"], "host");
    let charts: Vec<_> = panels.iter().filter(|p| p["type"] != "row").collect();
    let titles: Vec<_> = charts
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    let want = [
        "Throughput",
        "CPU share",
        "Context switches",
        "Latency",
        "Fairness ratio",
        "Verdict",
        "Other tasks",
        "Run-queue wait",
        "CPU pressure",
    ];
    assert_eq!(titles.len(), want.len(), "{titles:?}");
    for (t, w) in titles.iter().zip(want) {
        assert!(t.starts_with(w), "{titles:?}");
    }

    // Every series a chart asks for is filtered by the host, kernel and scenario chosen, so
    // a fleet's kernels can be told apart.
    for chart in &charts {
        let targets = chart["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "{}", chart["title"]);
        for t in targets {
            let e = t["expr"].as_str().unwrap();
            let mut rest = e;
            let mut selectors = 0;
            while let Some(i) = rest.find("schedlab_") {
                rest =
                    rest[i..].trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
                let labels = rest
                    .strip_prefix('{')
                    .and_then(|r| r.split_once('}'))
                    .map(|(labels, _)| labels)
                    .unwrap_or_else(|| panic!("a series without labels in `{e}`"));
                for want in [
                    r#"host=~"$host""#,
                    r#"kernel=~"$kernel""#,
                    r#"scenario=~"$scenario""#,
                ] {
                    assert!(labels.split(',').any(|l| l == want), "{want} in `{e}`");
                }
                selectors += 1;
            }
            assert!(selectors > 0, "`{e}` asks for no series");
        }
    }
}
