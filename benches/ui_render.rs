//! How long the dashboard takes to draw one whole screen (issue #9's goal: under 5 ms with
//! 5,000 tasks watched), drawn with ratatui's TestBackend from a deterministic model.
//!
//! The model: every workload of the shipped `mix`, `chat-30x1000` and `hackbench` presets plus
//! the default scenario (eight workloads), whose task counts add up to 5,000, with ten
//! minutes of history sampled at 10 Hz (6,000 frames: the longest window the charts keep).
//! The dashboard draws per workload, not per task, so the task count reaches the screen only
//! through the numbers; the history length is what the charts walk through.
//!
//! `cargo bench --bench ui_render` prints criterion's time per frame for three screens:
//! 80x24, 160x50 and 240x70, the default 60 s window, and the 600 s window at 240x70.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use schedlab::engine::Event;
use schedlab::model::{Accounting, Frame, MachineFrame, WorkloadFrame, WorkloadState};
use schedlab::scenario::{Scenario, PRESETS};
use schedlab::ui::app::App;
use schedlab::ui::draw;
use schedlab::ui::theme::Theme;

const TASKS: usize = 5_000;
const HZ: f64 = 10.0;
const HISTORY_SECS: f64 = 600.0;

/// A deterministic wobble so that lines are not flat and every point differs.
fn wobble(t: f64, k: usize) -> f64 {
    ((t * 1.3 + k as f64).sin() + (t * 0.37 + 2.0 * k as f64).cos()) / 2.0
}

fn workload_frame(id: u32, name: &str, tasks: usize, t: f64) -> WorkloadFrame {
    let w = wobble(t, id as usize);
    let got = 0.25 + 0.05 * w;
    WorkloadFrame {
        id,
        name: name.into(),
        state: WorkloadState::Running,
        tasks,
        ops_per_sec: 10_000.0 * (id as f64) * (1.0 + 0.1 * w),
        ops_unit: "msg".into(),
        progress: Some((t / 30.0).fract()),
        cpu_received: got,
        cpu_demand: 0.4,
        cpu_fair: 0.25,
        fairness_ratio: got / 0.25,
        weight: 1024.0 * tasks as f64,
        voluntary_cs_per_sec: 5_000.0 + 400.0 * w,
        involuntary_cs_per_sec: 800.0 + 90.0 * w,
        runq_wait_pct: 40.0 + 5.0 * w,
        wait_per_slice_us: 1_200.0 + 100.0 * w,
        accounting: Accounting::Proc,
        group: format!("session {}", 800 + id),
        window_received: got,
        window_fair: 0.25,
        window_ratio: got / 0.25,
        verdict: schedlab::model::Verdict::from_shares(got, 0.25),
        ..Default::default()
    }
}

/// The eight workloads, added to `app`; returns (id, name, tasks) with tasks summing to TASKS.
fn add_workloads(app: &mut App) -> Vec<(u32, String, usize)> {
    let mut decls = Vec::new();
    for preset in ["contest-fork-load", "mix", "chat-30x1000", "hackbench"] {
        let src = PRESETS.iter().find(|(n, _)| *n == preset).unwrap().1;
        decls.extend(Scenario::from_toml(src, preset).unwrap().workloads);
    }
    let n = decls.len();
    let mut out = Vec::new();
    for (i, mut decl) in decls.into_iter().enumerate() {
        decl.name = format!("{}-{i}", decl.name);
        let id = i as u32 + 1;
        // Spread the tasks unevenly (the chat run gets most), summing to TASKS exactly.
        let tasks = if i + 1 == n {
            TASKS - out.iter().map(|(_, _, t)| t).sum::<usize>()
        } else {
            TASKS / (2 * n) + i * 10
        };
        out.push((id, decl.name.clone(), tasks));
        app.on_event(Event::Added(id, decl));
    }
    assert_eq!(out.iter().map(|(_, _, t)| t).sum::<usize>(), TASKS);
    out
}

fn model() -> App {
    let mut app = App::new(
        "bench-5000-tasks",
        Duration::from_millis(100),
        2,
        Theme { colour: true },
    );
    let workloads = add_workloads(&mut app);
    let frames = (HISTORY_SECS * HZ) as usize;
    for i in 1..=frames {
        let t = i as f64 / HZ;
        let w = wobble(t, 0);
        app.on_event(Event::Frame(Frame {
            t,
            interval: 1.0 / HZ,
            workloads: workloads
                .iter()
                .map(|(id, name, tasks)| workload_frame(*id, name, *tasks, t))
                .collect(),
            machine: MachineFrame {
                cpus: 2,
                autogroup: true,
                ctxt_per_sec: 40_000.0 + 1_000.0 * w,
                procs_running: 12,
                psi_some_avg10: Some(70.0),
                rest_cpu_received: 0.02,
                rest_cpu_fair: 0.0,
                verdict_window: 5.0,
                ..Default::default()
            },
            jain_index: 0.9,
            observer_cpu_pct: 0.8,
            status_interval: 1.0,
            ..Default::default()
        }));
    }
    app
}

fn bench(c: &mut Criterion) {
    let mut app = model();
    let mut group = c.benchmark_group("ui_frame_5000_tasks");
    for (w, h) in [(80u16, 24u16), (160, 50), (240, 70)] {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        group.bench_function(format!("{w}x{h}_window_60s"), |b| {
            b.iter(|| {
                term.draw(|f| draw(f, black_box(&app))).unwrap();
            })
        });
    }
    // The longest window: the charts walk all 6,000 points of each series.
    while app.window < HISTORY_SECS {
        app.zoom(false);
    }
    let mut term = Terminal::new(TestBackend::new(240, 70)).unwrap();
    group.bench_function("240x70_window_600s", |b| {
        b.iter(|| {
            term.draw(|f| draw(f, black_box(&app))).unwrap();
        })
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    bench(&mut c);
    c.final_summary();
}
