//! Live metrics over HTTP in the shape Prometheus expects (docs/metrics.md): cumulative
//! counters (`_total`) from which any rate is `rate()`, so a scrape every 15 s loses nothing
//! that happened in between; gauges only for levels; every series labelled with host, kernel
//! release and scenario, and the workload's series with its name. `run --metrics-addr` starts
//! a [`MetricsServer`] and [`MetricsServer::publish`]es every Frame into it.
//!
//! The counters are integrated here from the Frames' per-interval figures (CPUs received ×
//! interval = CPU seconds, and so on), so the model needs no field of its own for them. What
//! is exported is the tables below: adding a figure is one line in one of them.
//!
//! The endpoint itself, axum on hyper in a current-thread tokio runtime of its own thread, with
//! a deadline and a size limit per connection and a bound on open connections, is in server.rs.

use std::fmt::Write as _;

use crate::model::latency::Distribution;
use crate::model::{Frame, Verdict, WorkloadFrame};
use crate::probe::Sample;
use crate::record::latency::Tally;

mod server;

pub use server::{parse_addr, MetricsServer};

/// A counter: what one interval of `dt` seconds adds to it.
struct Counter<T: 'static> {
    /// The family's name; its samples carry `_total` after it.
    name: &'static str,
    /// OpenMetrics unit, which the name ends with ("" = none).
    unit: &'static str,
    help: &'static str,
    /// A label of this series besides the common ones. Consecutive entries with the same
    /// name are one family.
    label: Label,
    add: fn(&T, f64) -> f64,
}

/// A gauge: a level read from the latest Frame (None = no sample).
struct Gauge<T: 'static> {
    name: &'static str,
    unit: &'static str,
    help: &'static str,
    get: fn(&T) -> Option<f64>,
}

/// A series' own label.
#[derive(Clone, Copy)]
enum Label {
    None,
    /// `name="value"`, written as is.
    Fixed(&'static str),
    /// `operation="msg"`: what one of the workload's operations is; no series without one.
    Operation,
}

const WORKLOAD_COUNTERS: &[Counter<WorkloadFrame>] = &[
    Counter {
        name: "schedlab_workload_cpu_received_seconds",
        unit: "seconds",
        help: "CPU time the workload received (schedstat, or its cgroup); its rate is CPUs received.",
        label: Label::None,
        add: |w, dt| w.cpu_received * dt,
    },
    Counter {
        name: "schedlab_workload_cpu_due_seconds",
        unit: "seconds",
        help: "CPU time the weighted max-min fairness model says it was due; its rate is CPUs due.",
        label: Label::None,
        add: |w, dt| w.cpu_fair * dt,
    },
    Counter {
        name: "schedlab_workload_operations",
        unit: "",
        help: "Operations counted by the workload itself (label operation: what one is).",
        label: Label::Operation,
        add: |w, dt| w.ops_per_sec * dt,
    },
    Counter {
        name: "schedlab_workload_context_switches",
        unit: "",
        help: "Context switches over all the workload's threads (label switch: voluntary or involuntary).",
        label: Label::Fixed("switch=\"voluntary\""),
        add: |w, dt| w.voluntary_cs_per_sec * dt,
    },
    Counter {
        name: "schedlab_workload_context_switches",
        unit: "",
        help: "",
        label: Label::Fixed("switch=\"involuntary\""),
        add: |w, dt| w.involuntary_cs_per_sec * dt,
    },
    Counter {
        name: "schedlab_workload_runqueue_wait_seconds",
        unit: "seconds",
        help: "Time its tasks spent runnable but waiting on a run queue, summed over its tasks.",
        label: Label::None,
        add: |w, dt| w.runq_wait_pct / 100.0 * dt,
    },
    Counter {
        name: "schedlab_workload_throttled_seconds",
        unit: "seconds",
        help: "Time its cgroup's quota held it off the CPU (not counted as run-queue wait).",
        label: Label::None,
        add: |w, dt| w.throttled_pct / 100.0 * dt,
    },
];

const WORKLOAD_GAUGES: &[Gauge<WorkloadFrame>] = &[
    Gauge {
        name: "schedlab_workload_tasks",
        unit: "",
        help: "Live tasks (threads) of the workload.",
        get: |w| Some(w.tasks as f64),
    },
    Gauge {
        name: "schedlab_workload_fairness_ratio",
        unit: "ratio",
        help: "CPU received over CPU due over the verdict window (1 = fair, below = starved).",
        get: |w| Some(w.window_ratio),
    },
    Gauge {
        name: "schedlab_workload_verdict",
        unit: "",
        help: "The dashboard's verdict over the verdict window, with every rule the model applies: -2 STARVED, -1 short, 0 fair, 1 ahead (absent when there is none).",
        get: |w| verdict_code(w.verdict),
    },
];

/// A verdict as a number a dashboard maps back to its word; none without a verdict.
fn verdict_code(v: Verdict) -> Option<f64> {
    match v {
        Verdict::Starved => Some(-2.0),
        Verdict::Short => Some(-1.0),
        Verdict::Fair => Some(0.0),
        Verdict::Ahead => Some(1.0),
        Verdict::None => None,
    }
}

const MACHINE_COUNTERS: &[Counter<Frame>] = &[
    Counter {
        name: "schedlab_samples",
        unit: "",
        help: "Samples taken: one per sampling interval.",
        label: Label::None,
        add: |_, _| 1.0,
    },
    Counter {
        name: "schedlab_machine_context_switches",
        unit: "",
        help: "Context switches on the whole machine (/proc/stat ctxt).",
        label: Label::None,
        add: |f, dt| f.machine.ctxt_per_sec * dt,
    },
    Counter {
        name: "schedlab_other_tasks_cpu_received_seconds",
        unit: "seconds",
        help: "CPU time received by every task outside schedlab's workloads.",
        label: Label::None,
        add: |f, dt| f.machine.rest_cpu_received * dt,
    },
    Counter {
        name: "schedlab_other_tasks_cpu_due_seconds",
        unit: "seconds",
        help: "CPU time the fairness model says the tasks outside schedlab's workloads were due.",
        label: Label::None,
        add: |f, dt| f.machine.rest_cpu_fair * dt,
    },
    Counter {
        name: "schedlab_observer_cpu_seconds",
        unit: "seconds",
        help: "CPU time schedlab itself used to observe (the observer's cost).",
        label: Label::None,
        add: |f, dt| f.observer_cpu_pct / 100.0 * dt,
    },
    Counter {
        name: "schedlab_samples_late",
        unit: "",
        help: "Samples whose sweep began more than 10 ms after it was due.",
        label: Label::None,
        add: |f, _| f64::from(u8::from(f.late_ms > crate::record::results::ON_TIME_MS)),
    },
    Counter {
        name: "schedlab_samples_missed",
        unit: "",
        help: "Samples skipped because the observer fell behind by a whole interval.",
        label: Label::None,
        add: |f, _| f64::from(f.missed),
    },
];

const MACHINE_GAUGES: &[Gauge<Frame>] = &[
    Gauge {
        name: "schedlab_cpus",
        unit: "",
        help: "CPUs the workloads may use (the fairness model's capacity).",
        get: |f| Some(f.machine.cpus as f64),
    },
    Gauge {
        name: "schedlab_jain_index",
        unit: "",
        help: "Jain's fairness index over the workloads' fairness ratios (1 = perfectly fair).",
        get: |f| Some(f.jain_index),
    },
    Gauge {
        name: "schedlab_machine_procs_running",
        unit: "",
        help: "Runnable tasks on the whole machine (/proc/stat procs_running).",
        get: |f| Some(f64::from(f.machine.procs_running)),
    },
    Gauge {
        name: "schedlab_machine_cpu_pressure_some_avg10",
        unit: "",
        help: "CPU pressure: PSI cpu some avg10, in percent (absent without PSI).",
        get: |f| f.machine.psi_some_avg10,
    },
];

/// Everything one workload has accumulated, by table index.
#[derive(Clone, Debug)]
struct WorkloadTotals {
    name: String,
    ops_unit: String,
    /// In the latest Frame; a workload that left is no longer exposed (its totals are kept,
    /// so a workload of that name that comes back, as in the next repeat, counts on).
    live: bool,
    counters: [f64; WORKLOAD_COUNTERS.len()],
    levels: [Option<f64>; WORKLOAD_GAUGES.len()],
}

/// One workload's latency of one unit, from every Sample published so far.
#[derive(Clone, Debug)]
struct LatencyTotals {
    workload: String,
    unit: String,
    /// The buckets, merged interval by interval (so a restart or the next repeat counts on).
    dist: Distribution,
    /// Seconds: each interval's exact mean times its values, added up (never goes down).
    sum_s: f64,
}

/// The counters accumulated from every Frame published so far, and the latest levels.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    workloads: Vec<WorkloadTotals>,
    latency: Vec<LatencyTotals>,
    tally: Tally,
    machine: [f64; MACHINE_COUNTERS.len()],
    /// None before the first Frame.
    machine_levels: Option<[Option<f64>; MACHINE_GAUGES.len()]>,
    /// The rest of the machine's groups in the latest Frame, by their stable key (its node in
    /// the group tree): CPUs received and due over the verdict window, and whether it is in
    /// that Frame (a group that left keeps its slot, so its key allocates once).
    rest_groups: Vec<RestGroupLevels>,
}

#[derive(Clone, Debug)]
struct RestGroupLevels {
    key: String,
    live: bool,
    received: f64,
    due: f64,
}

/// A counter only goes up: an interval adds nothing unless its figure is a real, positive one.
fn increment(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v
    } else {
        0.0
    }
}

impl Totals {
    /// Adds one Frame: its interval to every counter, its levels to the gauges. No allocation
    /// except the first time a workload name appears: this runs beside the measurement.
    pub fn add(&mut self, f: &Frame) {
        let dt = if f.interval.is_finite() && f.interval > 0.0 {
            f.interval
        } else {
            0.0
        };
        for w in &mut self.workloads {
            w.live = false;
        }
        for wf in &f.workloads {
            let i = match self.workloads.iter().position(|w| w.name == wf.name) {
                Some(i) => i,
                None => {
                    self.workloads.push(WorkloadTotals {
                        name: wf.name.clone(),
                        ops_unit: wf.ops_unit.clone(),
                        live: false,
                        counters: [0.0; WORKLOAD_COUNTERS.len()],
                        levels: [None; WORKLOAD_GAUGES.len()],
                    });
                    self.workloads.len() - 1
                }
            };
            let w = &mut self.workloads[i];
            w.live = true;
            if dt > 0.0 {
                for (total, c) in w.counters.iter_mut().zip(WORKLOAD_COUNTERS) {
                    *total += increment((c.add)(wf, dt));
                }
            }
            for (level, g) in w.levels.iter_mut().zip(WORKLOAD_GAUGES) {
                *level = (g.get)(wf);
            }
        }
        if dt > 0.0 {
            for (total, c) in self.machine.iter_mut().zip(MACHINE_COUNTERS) {
                *total += increment((c.add)(f, dt));
            }
        }
        self.machine_levels = Some(std::array::from_fn(|i| (MACHINE_GAUGES[i].get)(f)));
        for g in &mut self.rest_groups {
            g.live = false;
        }
        for rg in &f.machine.rest_groups {
            let key = if rg.key.is_empty() { &rg.name } else { &rg.key };
            let i = match self.rest_groups.iter().position(|g| &g.key == key) {
                Some(i) => i,
                None => {
                    self.rest_groups.push(RestGroupLevels {
                        key: key.clone(),
                        live: false,
                        received: 0.0,
                        due: 0.0,
                    });
                    self.rest_groups.len() - 1
                }
            };
            let g = &mut self.rest_groups[i];
            (g.live, g.received, g.due) = (true, rg.received, rg.fair);
        }
    }
}

impl Totals {
    /// Adds what each workload's latency histograms recorded since the previous Sample.
    pub(crate) fn add_latency(&mut self, s: &Sample) {
        for (workload, unit, d) in self.tally.step(s) {
            let i = match self
                .latency
                .iter()
                .position(|l| l.workload == workload && l.unit == unit)
            {
                Some(i) => i,
                None => {
                    self.latency.push(LatencyTotals {
                        workload,
                        unit,
                        dist: Distribution::default(),
                        sum_s: 0.0,
                    });
                    self.latency.len() - 1
                }
            };
            let l = &mut self.latency[i];
            l.dist.merge(&d);
            l.sum_s += increment(d.mean_ns().unwrap_or(0.0) * d.count() as f64 / 1e9);
        }
    }
}

/// The histogram's bucket bounds in ns: 1.024 µs, then 1 and 1.5 times each power of two up
/// to 2^37 ns (137 s, where the in-band histograms end). Each is an edge of the in-band
/// buckets (each power of two is split in 32 there), so every count below is exact.
pub(crate) fn latency_bounds_ns() -> impl Iterator<Item = u64> {
    (10..37u32)
        .flat_map(|k| [1u64 << k, 3u64 << (k - 1)])
        .chain(std::iter::once(1u64 << 37))
}

/// ns as seconds, exactly: "0.000001536".
fn seconds(ns: u64) -> String {
    let s = format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

const LATENCY_HISTOGRAM: &str = "schedlab_latency_seconds";
const LATENCY_HELP: &str = "How long the workload's own operations took, timed in-band (label unit: what was timed, such as round trip or fork cycle).";
const LATENCY_REJECTED: &str = "schedlab_latency_rejected";
const LATENCY_REJECTED_HELP: &str = "Operations whose stamp did not come back as sent (a peer that does not relay it); more of them than timed ones means latency unavailable.";

/// The latency families: a histogram per workload and unit, and its rejected operations.
fn latency_exposition(out: &mut String, totals: &Totals, common: &str, format: Format) {
    let live: Vec<&LatencyTotals> = totals
        .latency
        .iter()
        .filter(|l| {
            totals
                .workloads
                .iter()
                .any(|w| w.live && w.name == l.workload)
        })
        .collect();
    let labels = |l: &LatencyTotals| {
        format!(
            "{common},workload=\"{}\",unit=\"{}\"",
            escape(&l.workload),
            escape(&l.unit)
        )
    };
    metadata(
        out,
        format,
        LATENCY_HISTOGRAM,
        "histogram",
        "seconds",
        LATENCY_HELP,
    );
    for l in &live {
        let labels = labels(l);
        let mut steps = l.dist.buckets().peekable();
        let mut below = 0u64;
        for bound in latency_bounds_ns() {
            while let Some((_, _, c)) = steps.next_if(|&(_, high, _)| high <= bound) {
                below += c;
            }
            let le = seconds(bound);
            sample(
                out,
                LATENCY_HISTOGRAM,
                "_bucket",
                &format!("{labels},le=\"{le}\""),
                below as f64,
            );
        }
        let count = l.dist.count() as f64;
        sample(
            out,
            LATENCY_HISTOGRAM,
            "_bucket",
            &format!("{labels},le=\"+Inf\""),
            count,
        );
        sample(out, LATENCY_HISTOGRAM, "_sum", &labels, l.sum_s);
        sample(out, LATENCY_HISTOGRAM, "_count", &labels, count);
    }
    metadata(
        out,
        format,
        LATENCY_REJECTED,
        "counter",
        "",
        LATENCY_REJECTED_HELP,
    );
    for l in &live {
        sample(
            out,
            LATENCY_REJECTED,
            "_total",
            &labels(l),
            l.dist.rejected() as f64,
        );
    }
}

/// The two exposition formats a scraper can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0: `# UNIT`, counter families named without `_total`, `# EOF`.
    OpenMetrics,
    /// The classic Prometheus text format 0.0.4.
    Text,
}

impl Format {
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// OpenMetrics when an Accept header prefers it to the text format (by q value; ties go
    /// to OpenMetrics, which Prometheus lists first), the text format otherwise.
    pub(crate) fn negotiate<'a>(accept_headers: impl IntoIterator<Item = &'a str>) -> Format {
        let (mut openmetrics, mut text) = (0.0_f64, 0.0_f64);
        for header in accept_headers {
            for range in header.split(',') {
                let mut parts = range.split(';');
                let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
                let q = parts
                    .filter_map(|p| p.trim().strip_prefix("q="))
                    .find_map(|q| q.trim().parse::<f64>().ok())
                    .unwrap_or(1.0);
                match media.as_str() {
                    "application/openmetrics-text" => openmetrics = openmetrics.max(q),
                    "text/plain" | "text/*" | "*/*" => text = text.max(q),
                    _ => {}
                }
            }
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }
}

/// The exposition of `totals`, every series labelled with `common` (`host="..",...`).
pub fn exposition(totals: &Totals, common: &str, format: Format) -> String {
    let mut out = String::with_capacity(4096);
    let live: Vec<&WorkloadTotals> = totals.workloads.iter().filter(|w| w.live).collect();
    let series = |w: &WorkloadTotals, label: Label| -> Option<String> {
        let own = match label {
            Label::None => String::new(),
            Label::Fixed(l) => format!(",{l}"),
            Label::Operation if w.ops_unit.is_empty() => return None,
            Label::Operation => format!(",operation=\"{}\"", escape(&w.ops_unit)),
        };
        Some(format!("{common},workload=\"{}\"{own}", escape(&w.name)))
    };

    for (i, c) in WORKLOAD_COUNTERS.iter().enumerate() {
        if i == 0 || WORKLOAD_COUNTERS[i - 1].name != c.name {
            metadata(&mut out, format, c.name, "counter", c.unit, c.help);
        }
        for w in &live {
            if let Some(labels) = series(w, c.label) {
                sample(&mut out, c.name, "_total", &labels, w.counters[i]);
            }
        }
    }
    for (i, g) in WORKLOAD_GAUGES.iter().enumerate() {
        metadata(&mut out, format, g.name, "gauge", g.unit, g.help);
        for w in &live {
            if let (Some(v), Some(labels)) = (w.levels[i], series(w, Label::None)) {
                sample(&mut out, g.name, "", &labels, v);
            }
        }
    }
    latency_exposition(&mut out, totals, common, format);
    for (i, c) in MACHINE_COUNTERS.iter().enumerate() {
        if i == 0 || MACHINE_COUNTERS[i - 1].name != c.name {
            metadata(&mut out, format, c.name, "counter", c.unit, c.help);
        }
        let labels = match c.label {
            Label::Fixed(l) => format!("{common},{l}"),
            Label::None | Label::Operation => common.to_owned(),
        };
        sample(&mut out, c.name, "_total", &labels, totals.machine[i]);
    }
    for (i, g) in MACHINE_GAUGES.iter().enumerate() {
        metadata(&mut out, format, g.name, "gauge", g.unit, g.help);
        if let Some(v) = totals.machine_levels.and_then(|l| l[i]) {
            sample(&mut out, g.name, "", common, v);
        }
    }
    rest_group_exposition(&mut out, totals, common, format);
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// The rest of the machine's groups (sessions, cgroups, the root group), one series each,
/// labelled by the group's node in the tree ("autogroup-12", "cgroup /a/b", "root"): what the
/// "other tasks" row expands into on the dashboard.
fn rest_group_exposition(out: &mut String, totals: &Totals, common: &str, format: Format) {
    let families: [Gauge<RestGroupLevels>; 2] = [
        Gauge {
            name: "schedlab_other_tasks_group_cpu_received",
            unit: "",
            help: "CPUs a group of the tasks outside schedlab's workloads received over the \
                   verdict window.",
            get: |g| Some(g.received),
        },
        Gauge {
            name: "schedlab_other_tasks_group_cpu_due",
            unit: "",
            help: "CPUs the fairness model says a group of the tasks outside schedlab's \
                   workloads was due over the verdict window.",
            get: |g| Some(g.due),
        },
    ];
    for f in families {
        metadata(out, format, f.name, "gauge", f.unit, f.help);
        for g in totals.rest_groups.iter().filter(|g| g.live) {
            let labels = format!("{common},group=\"{}\"", escape(&g.key));
            if let Some(v) = (f.get)(g) {
                sample(out, f.name, "", &labels, v);
            }
        }
    }
}

/// A family's metadata. The text format names a counter by its samples (`x_total`) and has no
/// unit line; OpenMetrics names the family (`x`) and declares the unit.
fn metadata(out: &mut String, format: Format, name: &str, kind: &str, unit: &str, help: &str) {
    match format {
        Format::Text => {
            let suffix = if kind == "counter" { "_total" } else { "" };
            let _ = writeln!(out, "# HELP {name}{suffix} {help}");
            let _ = writeln!(out, "# TYPE {name}{suffix} {kind}");
        }
        Format::OpenMetrics => {
            let _ = writeln!(out, "# TYPE {name} {kind}");
            if !unit.is_empty() {
                let _ = writeln!(out, "# UNIT {name} {unit}");
            }
            let _ = writeln!(out, "# HELP {name} {help}");
        }
    }
}

fn sample(out: &mut String, name: &str, suffix: &str, labels: &str, v: f64) {
    let _ = writeln!(out, "{name}{suffix}{{{labels}}} {}", value(v));
}

/// Label values escape backslash, double quote and newline (both formats).
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

/// `host="..",kernel="..",scenario=".."`: the labels every series carries, so a fleet's
/// machines and kernels stay apart however the scraper relabels its targets.
pub fn common_labels(host: &str, kernel: &str, scenario: &str) -> String {
    format!(
        "host=\"{}\",kernel=\"{}\",scenario=\"{}\"",
        escape(host),
        escape(kernel),
        escape(scenario)
    )
}

/// This machine's name, as `uname -n` says it.
pub fn hostname() -> String {
    crate::sys::kernel::proc::sysctl_text("kernel.hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WorkloadState;

    #[test]
    fn labels_and_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(value(f64::INFINITY), "+Inf");
        assert_eq!(value(1.5), "1.5");
    }

    #[test]
    fn negotiation_follows_the_accept_header() {
        // What Prometheus 2.x sends.
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate([prometheus]), Format::OpenMetrics);
        assert_eq!(Format::negotiate(["*/*"]), Format::Text);
        assert_eq!(Format::negotiate(Vec::<&str>::new()), Format::Text);
        assert_eq!(
            Format::negotiate(["text/plain, application/openmetrics-text;q=0.5"]),
            Format::Text
        );
        assert_eq!(
            Format::negotiate(["Application/OpenMetrics-Text; version=1.0.0"]),
            Format::OpenMetrics
        );
        assert_eq!(
            Format::negotiate(["application/openmetrics-text;q=0"]),
            Format::Text
        );
    }

    fn frame(interval: f64, cpu: f64, present: bool) -> Frame {
        Frame {
            interval,
            workloads: present
                .then(|| WorkloadFrame {
                    name: "hog".into(),
                    state: WorkloadState::Running,
                    tasks: 2,
                    ops_unit: "loop".into(),
                    ops_per_sec: 100.0,
                    cpu_received: cpu,
                    cpu_fair: 1.0,
                    fairness_ratio: cpu,
                    voluntary_cs_per_sec: 4.0,
                    involuntary_cs_per_sec: 10.0,
                    runq_wait_pct: 50.0,
                    ..Default::default()
                })
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_rests_groups_are_series_by_their_node_and_leave_with_it() {
        let group = |key: &str, name: &str, received: f64, fair: f64| crate::model::RestGroup {
            name: name.into(),
            key: key.into(),
            received,
            fair,
            ..Default::default()
        };
        let mut f = frame(0.5, 1.0, true);
        f.machine.rest_groups = vec![
            group("autogroup-9", "session 9 (make)", 0.9, 1.0),
            group("root", "root (kworker/0:1)", 0.01, 0.01),
        ];
        let mut t = Totals::default();
        t.add(&f);
        let out = exposition(&t, "host=\"h\"", Format::Text);
        assert!(out.contains(
            "schedlab_other_tasks_group_cpu_received{host=\"h\",group=\"autogroup-9\"} 0.9\n"
        ));
        assert!(out
            .contains("schedlab_other_tasks_group_cpu_due{host=\"h\",group=\"autogroup-9\"} 1\n"));
        // Its name changes with its busiest commands; its series does not. A group gone from
        // the Frame is gone from the exposition.
        f.machine.rest_groups = vec![group("root", "root (rcu_preempt)", 0.02, 0.02)];
        t.add(&f);
        let out = exposition(&t, "host=\"h\"", Format::Text);
        assert!(!out.contains("autogroup-9"));
        assert!(out
            .contains("schedlab_other_tasks_group_cpu_received{host=\"h\",group=\"root\"} 0.02\n"));
    }

    #[test]
    fn counters_integrate_the_frames_and_never_go_down() {
        let mut t = Totals::default();
        t.add(&frame(0.5, 1.0, true));
        t.add(&frame(0.25, 2.0, true));
        // A broken interval and a negative or NaN figure add nothing.
        t.add(&frame(f64::NAN, 5.0, true));
        t.add(&frame(0.5, -1.0, true));
        t.add(&frame(0.5, f64::NAN, true));
        let w = &t.workloads[0];
        assert_eq!(
            w.counters[0],
            0.5 * 1.0 + 0.25 * 2.0,
            "CPU seconds received"
        );
        assert_eq!(w.counters[1], 1.75, "CPU seconds due");
        assert_eq!(w.counters[2], 175.0, "operations");
        assert_eq!(w.counters[5], 0.875, "run-queue wait seconds");
        assert_eq!(t.machine[0], 4.0, "samples with a real interval");

        // A workload that leaves is not exposed, and counts on when it comes back.
        t.add(&frame(0.5, 1.0, false));
        let text = exposition(&t, "host=\"h\"", Format::Text);
        assert!(!text.contains("workload=\"hog\""), "{text}");
        t.add(&frame(0.5, 1.0, true));
        let text = exposition(&t, "host=\"h\"", Format::Text);
        assert!(text.contains(
            "schedlab_workload_cpu_received_seconds_total{host=\"h\",workload=\"hog\"} 1.5\n"
        ));
    }

    #[test]
    fn latency_bounds_are_edges_of_the_in_band_buckets() {
        use crate::sys::shared::histogram::{bucket_range, BUCKETS};
        let edges: Vec<u64> = (0..BUCKETS).map(|i| bucket_range(i).1).collect();
        let bounds: Vec<u64> = latency_bounds_ns().collect();
        assert_eq!(bounds.len(), 55);
        assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        for b in &bounds {
            assert!(edges.contains(b), "{b} ns is inside an in-band bucket");
        }
        assert_eq!(bounds[0], 1024);
        assert_eq!(
            *bounds.last().unwrap(),
            crate::sys::shared::histogram::TOP_NS
        );
        assert_eq!(seconds(1536), "0.000001536");
        assert_eq!(seconds(1 << 37), "137.438953472");
        assert_eq!(seconds(3 << 29), "1.610612736");
    }

    #[test]
    fn help_texts_need_no_escaping() {
        // OpenMetrics escapes quotes in HELP and the text format does not: keep them out.
        let helps = WORKLOAD_COUNTERS
            .iter()
            .map(|c| c.help)
            .chain(MACHINE_COUNTERS.iter().map(|c| c.help))
            .chain(WORKLOAD_GAUGES.iter().map(|g| g.help))
            .chain(MACHINE_GAUGES.iter().map(|g| g.help))
            .chain([LATENCY_HELP, LATENCY_REJECTED_HELP]);
        for h in helps {
            assert!(!h.contains(['"', '\\', '\n']), "{h}");
        }
        for (name, unit) in WORKLOAD_COUNTERS
            .iter()
            .map(|c| (c.name, c.unit))
            .chain(MACHINE_COUNTERS.iter().map(|c| (c.name, c.unit)))
            .chain(WORKLOAD_GAUGES.iter().map(|g| (g.name, g.unit)))
            .chain(MACHINE_GAUGES.iter().map(|g| (g.name, g.unit)))
        {
            assert!(!name.ends_with("_total"), "{name}");
            if !unit.is_empty() {
                assert!(name.ends_with(&format!("_{unit}")), "OpenMetrics: {name}");
            }
        }
    }
}
