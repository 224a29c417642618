//! Live per-workload metrics over HTTP in the Prometheus / OpenMetrics text format, so a fleet
//! of machines can be scraped and compared. `run --metrics-addr` and the dashboard start a
//! [`MetricsServer`] and [`MetricsServer::publish`] every Frame; a scrape returns the latest.
//!
//! One small thread answers `GET /metrics`, one request per connection. It binds exactly the
//! address it is given (a bare port means loopback).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

use crate::model::Frame;

/// Content types: OpenMetrics when the scraper asks for it, else Prometheus text 0.0.4.
const OPENMETRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

struct Shared {
    scenario: String,
    frame: Mutex<Option<Frame>>,
}

/// A running metrics endpoint; stops when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// `HOST:PORT`, `[V6]:PORT`, or a bare `PORT` (loopback).
pub fn parse_addr(addr: &str) -> Result<SocketAddr> {
    let addr = addr.trim();
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            anyhow!("metrics address `{addr}` is not HOST:PORT (e.g. 127.0.0.1:9464) or a port")
        })
}

impl MetricsServer {
    /// Binds `addr` now (so a busy port fails before any work) and serves in the background.
    pub fn start(addr: &str, scenario: &str) -> Result<Self> {
        let want = parse_addr(addr)?;
        let listener =
            TcpListener::bind(want).with_context(|| format!("cannot serve metrics on {want}"))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            scenario: scenario.to_owned(),
            frame: Mutex::new(None),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::Builder::new()
                .name("metrics".into())
                .spawn(move || serve(listener, &shared, &stop))?
        };
        Ok(MetricsServer {
            addr,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens (the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Makes `frame` what the next scrape returns.
    pub fn publish(&self, frame: &Frame) {
        if let Ok(mut f) = self.shared.frame.lock() {
            *f = Some(frame.clone());
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept; it sees the flag and returns.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, shared: &Shared, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(stream) = conn {
            let _ = answer(stream, shared);
        }
    }
}

fn answer(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    // A scraper that stalls must not stall the next one for long.
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let request = String::from_utf8_lossy(&buf);
    let mut first = request.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET", "/metrics") => {
            let openmetrics = request.lines().any(|l| {
                let l = l.to_ascii_lowercase();
                l.starts_with("accept:") && l.contains("application/openmetrics-text")
            });
            let frame = shared.frame.lock().map(|f| f.clone()).unwrap_or(None);
            let body = exposition(frame.as_ref(), &shared.scenario, openmetrics);
            let ctype = if openmetrics {
                OPENMETRICS_TYPE
            } else {
                PROMETHEUS_TYPE
            };
            ("200 OK", ctype, body)
        }
        ("GET", "/") => (
            "200 OK",
            "text/plain; charset=utf-8",
            "schedlab: metrics at /metrics\n".to_owned(),
        ),
        ("GET", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: try /metrics\n".to_owned(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_owned(),
        ),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// A gauge family: name, help, and how to read it from a workload.
type Family = (
    &'static str,
    &'static str,
    fn(&crate::model::WorkloadFrame) -> f64,
);

const WORKLOAD_FAMILIES: &[Family] = &[
    (
        "schedlab_workload_ops_per_second",
        "Operations per second from the workload's own counters (label unit: what one is).",
        |w| w.ops_per_sec,
    ),
    (
        "schedlab_workload_cpu_received",
        "CPUs the workload received over the last interval (1 = one whole CPU).",
        |w| w.cpu_received,
    ),
    (
        "schedlab_workload_cpu_fair",
        "CPUs the weighted max-min fairness model says the workload was due.",
        |w| w.cpu_fair,
    ),
    (
        "schedlab_workload_fairness_ratio",
        "CPU received divided by fair share (1 = fair, below = starved).",
        |w| w.fairness_ratio,
    ),
    (
        "schedlab_workload_voluntary_switches_per_second",
        "Voluntary context switches per second over all the workload's threads.",
        |w| w.voluntary_cs_per_sec,
    ),
    (
        "schedlab_workload_involuntary_switches_per_second",
        "Involuntary context switches per second over all the workload's threads.",
        |w| w.involuntary_cs_per_sec,
    ),
    (
        "schedlab_workload_runqueue_wait_percent",
        "Time runnable but waiting, in percent of one task-interval summed over tasks.",
        |w| w.runq_wait_pct,
    ),
    (
        "schedlab_workload_tasks",
        "Live tasks (threads) of the workload.",
        |w| w.tasks as f64,
    ),
];

/// The exposition text for the latest Frame (families without samples before the first).
pub fn exposition(frame: Option<&Frame>, scenario: &str, openmetrics: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let sc = escape(scenario);
    for (name, help, get) in WORKLOAD_FAMILIES {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for w in frame.map_or(&[][..], |f| &f.workloads[..]) {
            let unit = if *name == "schedlab_workload_ops_per_second" {
                format!(",unit=\"{}\"", escape(&w.ops_unit))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "{name}{{scenario=\"{sc}\",workload=\"{}\"{unit}}} {}",
                escape(&w.name),
                value(get(w))
            );
        }
    }
    let machine: [(&str, &str, Option<f64>); 3] = [
        (
            "schedlab_machine_context_switches_per_second",
            "Context switches per second on the whole machine (/proc/stat ctxt).",
            frame.map(|f| f.machine.ctxt_per_sec),
        ),
        (
            "schedlab_jain_index",
            "Jain's fairness index over the workloads' fairness ratios (1 = perfectly fair).",
            frame.map(|f| f.jain_index),
        ),
        (
            "schedlab_observer_cpu_percent",
            "schedlab's own CPU use, in percent of one CPU.",
            frame.map(|f| f.observer_cpu_pct),
        ),
    ];
    for (name, help, v) in machine {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        if let Some(v) = v {
            let _ = writeln!(out, "{name}{{scenario=\"{sc}\"}} {}", value(v));
        }
    }
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// Label values escape backslash, double quote and newline.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_port_means_loopback() {
        assert_eq!(
            parse_addr("9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert!(parse_addr("nowhere").is_err());
    }

    #[test]
    fn labels_and_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(value(f64::INFINITY), "+Inf");
        assert_eq!(value(1.5), "1.5");
    }
}
