//! The metrics endpoint against a real Prometheus server (Debian's `prometheus` package, which
//! .ci/run installs): the test starts Prometheus on a loopback port with its own config and
//! data directory and a 1 s scrape interval, lets it scrape a headless `schedlab run` for
//! several seconds, and asks it through its HTTP API for `rate()` of the CPU counter per
//! workload: that must agree with the run's own results within 5%; and, from the latency
//! histogram, the wakeup probe's median, which must fall in the bucket of the run's own. Prometheus
//! is killed and its data directory removed on every path; without the binary the test says so
//! loudly and skips.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use schedlab::record::results::{Metric, RunResults};

/// How long the headless run lasts: several 1 s scrapes.
const RUN_SECONDS: u32 = 8;

/// A child process killed and reaped when this goes out of scope, however the test ends.
struct Reaped {
    child: Child,
    /// Ask first (SIGTERM), so a schedlab run removes its workloads' cgroup; then SIGKILL.
    polite: bool,
}

impl Reaped {
    fn spawn(cmd: &mut Command, polite: bool) -> Reaped {
        // SAFETY: the closure runs in the forked child before exec and only makes one
        // async-signal-safe system call (prctl).
        unsafe {
            cmd.pre_exec(|| {
                // If this test process is killed outright, the child goes with it.
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
                Ok(())
            });
        }
        Reaped {
            child: cmd.spawn().expect("cannot start the child"),
            polite,
        }
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits for it to end by itself, at most `limit`.
    fn wait_for(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Some(s) = self.exited() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        if self.polite {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            if self.wait_for(Duration::from_secs(10)).is_some() {
                return;
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prometheus_installed() -> bool {
    Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A loopback port nobody listens on now (whoever binds it next may still lose a race; the
/// caller starts over with another port when that happens).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` over HTTP/1.0 (so the answer is not chunked): status code and body.
fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, body.to_owned()))
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A PromQL query at `time` (Unix seconds) through the HTTP API: its `data.result`.
fn query(prom: SocketAddr, promql: &str, time: f64) -> Vec<serde_json::Value> {
    let path = format!("/api/v1/query?query={}&time={time:.3}", url_encode(promql));
    let (code, body) = http_get(prom, &path).expect("Prometheus answers");
    assert_eq!(code, 200, "{promql}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{promql}: {body}");
    v["data"]["result"].as_array().unwrap().clone()
}

/// What the metadata API says of `metric` (its first entry: type, unit), and the whole
/// answer, for messages.
fn metadata(prom: SocketAddr, metric: &str) -> (serde_json::Value, String) {
    let (code, body) = http_get(prom, &format!("/api/v1/metadata?metric={metric}")).unwrap();
    assert_eq!(code, 200, "{body}");
    let meta: serde_json::Value = serde_json::from_str(&body).unwrap();
    (meta["data"][metric][0].clone(), body)
}

fn number(v: &serde_json::Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

/// Whether Prometheus has tried to scrape its target at least once.
fn scraping(prom: SocketAddr) -> bool {
    let path = format!("/api/v1/query?query={}", url_encode("up{job=\"schedlab\"}"));
    match http_get(prom, &path) {
        Ok((200, body)) => serde_json::from_str::<serde_json::Value>(&body).is_ok_and(|v| {
            v["data"]["result"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        }),
        _ => false,
    }
}

/// Prometheus on `port` with its own config and data under `dir`, scraping `target` every
/// second; None when it could not start (its port was taken meanwhile).
fn start_prometheus(
    dir: &Path,
    attempt: u32,
    port: u16,
    target: u16,
) -> Option<(Reaped, SocketAddr)> {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: schedlab\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let mut prom = Reaped::spawn(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join(format!("data-{attempt}")).display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log),
        false,
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if prom.exited().is_some() {
            return None;
        }
        // Ready is not enough: the scrape loop starts seconds later (target updates are
        // batched). It runs once `up` has a sample, 0 while nothing listens on the target yet.
        if matches!(http_get(addr, "/-/ready"), Ok((200, _))) && scraping(addr) {
            return Some((prom, addr));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "Prometheus was not scraping within 60 s: {}",
        std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
    );
}

/// One CPU hog in a cgroup of weight 10000, so the share it gets hardly depends on what else
/// the machine runs; a sleeper, which gets next to nothing; and a wakeup probe's timer thread,
/// which times a wakeup every millisecond.
const SCENARIO: &str = include_str!("scenarios/prometheus-check.toml");

#[test]
fn prometheus_rate_of_the_cpu_counter_agrees_with_the_run() {
    if !prometheus_installed() {
        eprintln!(
            "\n*** SKIPPED prometheus_rate_of_the_cpu_counter_agrees_with_the_run: no `prometheus` \
             binary; install Debian's prometheus package (.ci/run does) ***\n"
        );
        return;
    }
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs root to give its CPU hog a cgroup of its own (CI runs as root)"
    );
    // Dropped last: by then Prometheus is dead and its data directory can go.
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let results = dir.path().join("results.json");

    // Both ports are picked free and may be taken before they are bound: then start over.
    let mut attempt = 0;
    let (prom, prom_addr, run_status) = loop {
        attempt += 1;
        assert!(attempt <= 3, "no free loopback ports in three tries");
        let target = free_port();
        let Some((prom, prom_addr)) = start_prometheus(dir.path(), attempt, free_port(), target)
        else {
            continue;
        };
        let mut run = Reaped::spawn(
            Command::new(env!("CARGO_BIN_EXE_schedlab"))
                .arg("run")
                .arg(&scenario)
                .args(["--duration", &RUN_SECONDS.to_string(), "--format", "json"])
                .arg("-o")
                .arg(&results)
                .args(["--metrics-addr", &format!("127.0.0.1:{target}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
            true,
        );
        let mut err = BufReader::new(run.child.stderr.take().unwrap());
        let mut first = String::new();
        err.read_line(&mut first).unwrap();
        if first.contains("cannot serve metrics") {
            continue;
        }
        assert!(
            first.starts_with("schedlab run: metrics at http://"),
            "{first}"
        );
        let status = run
            .wait_for(Duration::from_secs(60 + u64::from(RUN_SECONDS)))
            .expect("the run ends by itself");
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        assert!(status.success(), "schedlab run failed: {first}{rest}");
        break (prom, prom_addr, status);
    };
    assert!(run_status.success());
    let run = RunResults::from_json(&std::fs::read_to_string(&results).unwrap(), "run").unwrap();

    // Every raw sample Prometheus stored, per workload: the span it covers.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let raw = query(
        prom_addr,
        "schedlab_workload_cpu_received_seconds_total[10m]",
        now,
    );
    assert_eq!(raw.len(), 3, "one series per workload: {raw:?}");
    let hog = raw
        .iter()
        .find(|s| s["metric"]["workload"] == "hog")
        .unwrap();
    let values = hog["values"].as_array().unwrap();
    assert!(
        values.len() >= 5,
        "several seconds of 1 s scrapes, got {}: {values:?}",
        values.len()
    );
    let t_first = values[0][0].as_f64().unwrap();
    let t_last = values.last().unwrap()[0].as_f64().unwrap();
    for label in ["host", "kernel", "scenario", "job", "instance"] {
        assert!(hog["metric"][label].is_string(), "{label}: {hog}");
    }
    assert_eq!(hog["metric"]["scenario"], "prometheus-check");

    // rate() over exactly the scraped span, at its last scrape: the mean CPUs received.
    let span_ms = ((t_last - t_first) * 1000.0).round() as u64 + 1;
    let rates = query(
        prom_addr,
        &format!("rate(schedlab_workload_cpu_received_seconds_total[{span_ms}ms])"),
        t_last,
    );
    assert_eq!(rates.len(), 3, "{rates:?}");
    for r in &rates {
        let name = r["metric"]["workload"].as_str().unwrap();
        let prometheus = number(&r["value"][1]);
        let own = run
            .workloads
            .iter()
            .find(|w| w.name == name)
            .and_then(|w| {
                w.metrics
                    .iter()
                    .find(|m| m.what.metric == Metric::CpuReceived)
            })
            .unwrap_or_else(|| panic!("{name} in the run's results"))
            .summary
            .mean;
        eprintln!("{name}: Prometheus rate() {prometheus:.4} CPUs, the run's results {own:.4}");
        // Within 5% of the run's own figure (the sleeper's is next to nothing: within 0.01 CPU).
        let tolerance = (0.05 * own).max(0.01);
        assert!(
            (prometheus - own).abs() <= tolerance,
            "{name}: Prometheus says {prometheus:.4} CPUs, the run {own:.4}"
        );
        if name == "hog" {
            assert!(own > 0.3, "the hog ran: {own}");
        }
    }

    // Prometheus parsed OpenMetrics (it asks for it first): only that format declares units.
    let (entry, body) = metadata(prom_addr, "schedlab_workload_cpu_received_seconds");
    assert_eq!(entry["type"], "counter", "{body}");
    assert_eq!(entry["unit"], "seconds", "{body}");
    // The latency histogram: the probe's median wakeup over the scraped span is read off a
    // bucket whose bounds are at most 1.5 times apart, and the run's own median (the fine
    // in-band buckets, without the first second) lies in the same one, give or take the spans'
    // difference: within a factor of 1.6 of each other.
    let probe = run.workloads.iter().find(|w| w.name == "probe").unwrap();
    let own = probe
        .latency
        .iter()
        .find(|l| l.unit == "timer wakeup")
        .unwrap();
    let median = query(
        prom_addr,
        &format!(
            "histogram_quantile(0.5, rate(schedlab_latency_seconds_bucket{{workload=\"probe\",unit=\"timer wakeup\"}}[{span_ms}ms]))"
        ),
        t_last,
    );
    assert_eq!(median.len(), 1, "{median:?}");
    let prometheus_us = number(&median[0]["value"][1]) * 1e6;
    let own_us = own.pooled.p50_us;
    eprintln!("probe: Prometheus histogram_quantile(0.5) {prometheus_us:.1} usec, the run's p50 {own_us:.1} usec");
    assert!(
        own_us / 1.6 <= prometheus_us && prometheus_us <= own_us * 1.6,
        "Prometheus's median {prometheus_us} usec against the run's {own_us} usec"
    );
    let wakeups = query(
        prom_addr,
        &format!("rate(schedlab_latency_seconds_count{{workload=\"probe\"}}[{span_ms}ms])"),
        t_last,
    );
    let per_sec = number(&wakeups[0]["value"][1]);
    assert!(
        0.0 < per_sec && per_sec <= 1050.0,
        "one wakeup a millisecond at most: {per_sec}/s"
    );
    let (entry, body) = metadata(prom_addr, "schedlab_latency_seconds");
    assert_eq!(entry["type"], "histogram", "{body}");
    assert_eq!(entry["unit"], "seconds", "{body}");

    let up = query(prom_addr, "up", t_last);
    assert_eq!(
        number(&up[0]["value"][1]),
        1.0,
        "the scrapes succeeded: {up:?}"
    );

    drop(prom);
    let kept = dir.path().to_owned();
    drop(dir);
    assert!(!kept.exists(), "Prometheus's data directory is removed");
}
