//! Whole screens of the dashboard, drawn with ratatui's TestBackend from a deterministic
//! model of the 2002 contest thread: contest's fork_load against a -j4 reference job in one
//! session on a 2-CPU machine. Five runnable tasks of equal weight: each is due 40% of a CPU;
//! the fork loop receives 16% (the O(1) kernels' 8%-of-20% story, scaled to two CPUs).

mod common;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;

use common::screen::text_of;

use schedlab::engine::{Command, Event};
use schedlab::knobs::Knobs;
use schedlab::model::{
    Accounting, Cause, CpuFrame, CpuShare, Due, Frame, Latency, MachineFrame, Verdict,
    WorkloadFrame, WorkloadState,
};
use schedlab::scenario::{Scenario, WorkloadDecl};
use schedlab::ui::app::{App, Mode};
use schedlab::ui::theme::Theme;
use schedlab::ui::{draw, input};

/// Draws `app` at `w`x`h`, checks that each of `must` is on the screen and the screen against its
/// snapshot (named after the test unless a name is given); the screen's text. Written
/// `shows!(&app, 80 x 24, [...])`, which rustfmt leaves as written.
macro_rules! shows {
    ($name:literal, $app:expr, $w:literal x $h:literal, $must:expr) => {{
        let term = screen($app, $w, $h);
        let text = must_show(&term, $must);
        insta::assert_snapshot!($name, term.backend());
        text
    }};
    ($app:expr, $w:literal x $h:literal, $must:expr) => {{
        let term = screen($app, $w, $h);
        let text = must_show(&term, $must);
        insta::assert_snapshot!(term.backend());
        text
    }};
}

/// The text of `term`, which holds each of `must`.
fn must_show<'a>(term: &Terminal<TestBackend>, must: impl IntoIterator<Item = &'a str>) -> String {
    let text = text_of(term);
    for must in must {
        assert!(text.contains(must), "{must} missing from\n{text}");
    }
    text
}

fn ref_job(t: f64, wobble: f64) -> WorkloadFrame {
    WorkloadFrame {
        id: 1,
        name: "ref-job".into(),
        state: WorkloadState::Running,
        tasks: 5,
        ops_per_sec: 3.7 + wobble * 0.2,
        ops_unit: "unit".into(),
        progress: Some((t / 20.0).fract()),
        cpu_received: 1.84 - wobble * 0.04,
        cpu_demand: 4.0,
        cpu_fair: 1.6,
        fairness_ratio: (1.84 - wobble * 0.04) / 1.6,
        weight: 4096.0,
        voluntary_cs_per_sec: 12.0 + wobble,
        involuntary_cs_per_sec: 410.0 + wobble * 30.0,
        runq_wait_pct: 118.0,
        wait_per_slice_us: 2900.0,
        migrations_per_sec: Some(3.0 + wobble),
        ..Default::default()
    }
    .in_the_session(4096.0, 4.0)
}

/// The verdict fields as the model fills them: the window holds the same figures here.
trait Judged {
    fn judged(self, due: Due) -> WorkloadFrame;

    /// Judged as `weight` of the 5120 in session 812, whose group gets 2 CPUs.
    fn in_the_session(self, weight: f64, wants: f64) -> WorkloadFrame;
}

impl Judged for WorkloadFrame {
    fn in_the_session(mut self, weight: f64, wants: f64) -> WorkloadFrame {
        self.accounting = Accounting::Proc;
        self.group = "session 812".into();
        self.judged(Due::Share {
            weight,
            of_weight: 5120.0,
            pool: 2.0,
            pool_name: "its group gets".into(),
            wants,
        })
    }

    fn judged(mut self, due: Due) -> WorkloadFrame {
        self.window_received = self.cpu_received;
        self.window_fair = self.cpu_fair;
        self.window_demand = self.cpu_demand;
        self.window_ratio = self.cpu_received / self.cpu_fair;
        self.verdict = Verdict::from_shares(self.cpu_received, self.cpu_fair);
        self.cause = match self.verdict {
            Verdict::Starved | Verdict::Short => Cause::RunQueue {
                wait_pct: self.runq_wait_pct,
                cpus: "0-1".into(),
                behind: Vec::new(),
            },
            Verdict::Ahead => Cause::PaidBy {
                names: vec!["fork_load".into()],
            },
            _ => Cause::None,
        };
        self.due = due;
        self.cpus_allowed = "0-1".into();
        self.cpus_used = "0-1".into();
        self
    }
}

fn fork_load(wobble: f64) -> WorkloadFrame {
    let got = 0.16 + wobble * 0.03;
    WorkloadFrame {
        id: 2,
        name: "fork_load".into(),
        state: WorkloadState::Running,
        tasks: 1,
        ops_per_sec: 310.0 + wobble * 40.0,
        ops_unit: "fork".into(),
        progress: None,
        cpu_received: got,
        cpu_demand: 1.0,
        cpu_fair: 0.4,
        fairness_ratio: got / 0.4,
        weight: 1024.0,
        voluntary_cs_per_sec: 620.0 + wobble * 50.0,
        involuntary_cs_per_sec: 95.0 + wobble * 10.0,
        runq_wait_pct: 84.0,
        wait_per_slice_us: 5100.0,
        // A fork cycle (fork to reap) takes about a millisecond, more when it waits.
        latency: Some(Latency {
            unit: "fork cycle".into(),
            samples: 155,
            p50_us: 1150.0 + wobble * 60.0,
            p99_us: 4800.0 + wobble * 900.0,
            p999_us: 9100.0 + wobble * 2000.0,
            mean_us: 1600.0,
            available: true,
        }),
        migrations_per_sec: Some(41.0 + wobble * 6.0),
        ..Default::default()
    }
    .in_the_session(1024.0, 1.0)
}

fn frame(t: f64) -> Frame {
    // A deterministic wobble so lines are not flat.
    let wobble = ((t * 1.3).sin() + (t * 0.37).cos()) / 2.0;
    Frame {
        t,
        interval: 0.5,
        workloads: vec![ref_job(t, wobble), fork_load(wobble)],
        machine: MachineFrame {
            cpus: 2,
            autogroup: true,
            ctxt_per_sec: 2310.0 + wobble * 100.0,
            procs_running: 5,
            psi_some_avg10: Some(61.2),
            rest_cpu_received: 0.02,
            rest_cpu_fair: 0.0,
            rest_window_received: 0.02,
            verdict_window: 5.0,
            ..Default::default()
        },
        jain_index: 0.74,
        observer_cpu_pct: 0.8,
        status_interval: 1.0,
        // Four workers and the fork loop on two CPUs, the loop's CPU shared with two workers.
        cpus: vec![
            CpuFrame {
                id: 0,
                busy: Some(0.99),
                by_workload: vec![
                    share(1, "ref-job", 0.81 - wobble * 0.03, 2),
                    share(2, "fork_load", 0.16 + wobble * 0.03, 1),
                ],
            },
            CpuFrame {
                id: 1,
                busy: Some(1.0),
                by_workload: vec![share(1, "ref-job", 0.99, 2)],
            },
        ],
        ..Default::default()
    }
}

fn share(id: u32, name: &str, share: f64, tasks: usize) -> CpuShare {
    CpuShare {
        id,
        name: name.into(),
        share,
        tasks,
    }
}

/// The default scenario, 60 s of it at 500 ms.
fn seed_app() -> App {
    let mut app = App::new(
        "contest-fork-load",
        Duration::from_millis(500),
        2,
        Theme { colour: true },
    );
    for (i, decl) in Scenario::builtin_default()
        .workloads
        .into_iter()
        .enumerate()
    {
        app.on_event(Event::Added(i as u32 + 1, decl));
    }
    for i in 1..=120 {
        app.on_event(Event::Frame(frame(i as f64 * 0.5)));
    }
    app
}

fn screen(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| draw(f, app)).unwrap();
    term
}

fn key(app: &mut App, code: KeyCode) {
    input::on_key(app, KeyEvent::new(code, KeyModifiers::NONE));
}

/// The screen's text at `w`x`h` after the key `c`.
fn text_after(app: &mut App, c: char, w: u16, h: u16) -> String {
    key(app, KeyCode::Char(c));
    text_of(&screen(app, w, h))
}

#[test]
fn default_layout_80x24() {
    let app = seed_app();
    shows!(&app, 80 x 24, ["Throughput", "CPU %", "Switches/s", "ref-job", "fork_load",
        "STARVED", "autogrp on", "PSI 61.2", "self 0.8%"]);
}

#[test]
fn default_layout_160x48() {
    let app = seed_app();
    shows!(&app, 160 x 48, ["LAST RUN", "WEIGHT", "GROUP", "autogroup on", "Jain 0.74"]);
}

#[test]
fn help_overlay() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Char('?'));
    assert_eq!(app.mode, Mode::Help);
    let term = screen(&app, 80, 24);
    insta::assert_snapshot!(term.backend());
    // Every key of the help is on screen at 80x24.
    let text = text_of(&term);
    for (_, keys, _) in schedlab::ui::input::keys_for(false) {
        assert!(text.contains(keys), "{keys} missing from the help");
    }
    key(&mut app, KeyCode::Char('x'));
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn a_finding_shows_its_text_in_the_help() {
    let mut app = seed_app();
    let (name, src) = schedlab::finding::CATALOGUE[0];
    let sc = schedlab::scenario::Scenario::from_toml(src, name).unwrap();
    app.finding = sc.finding;
    let help = text_after(&mut app, '?', 120, 48);
    assert!(
        help.contains("The 2002 contest fork loop on one CPU"),
        "{help}"
    );
    assert!(
        help.contains("Five runnable tasks of equal weight"),
        "{help}"
    );
    // The keys are still there below it.
    assert!(help.contains("quit"), "{help}");
}

#[test]
fn picker_and_its_form() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Char('a'));
    insta::assert_snapshot!("picker", screen(&app, 80, 24).backend());
    key(&mut app, KeyCode::Enter); // chat
    insta::assert_snapshot!("picker_chat_form", screen(&app, 80, 24).backend());
    // Three rooms of 50 messages, looping.
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Backspace);
    key(&mut app, KeyCode::Backspace);
    key(&mut app, KeyCode::Char('3'));
    key(&mut app, KeyCode::Tab);
    for _ in 0..3 {
        key(&mut app, KeyCode::Backspace);
    }
    key(&mut app, KeyCode::Char('5'));
    key(&mut app, KeyCode::Char('0'));
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::Char(' ')); // the last field: loop
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.mode, Mode::Normal);
    let Some(Command::Add(decl)) = app.outbox.pop() else {
        panic!("no Add in {:?}", app.outbox)
    };
    assert_eq!(decl.name, "chat");
    assert_eq!(
        decl.kind,
        schedlab::workload::registry::WorkloadKind::Chat {
            rooms: 3,
            messages: 50,
            runs: Some(1)
        }
    );
    app.on_event(Event::Added(3, decl));
    assert!(app.workloads[2].looping);
}

#[test]
fn a_bad_parameter_keeps_the_form_open_with_the_reason() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Char('2')); // hackbench
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Char('x'));
    key(&mut app, KeyCode::Enter);
    let Mode::NewWorkload(_, form) = &app.mode else {
        panic!("form closed")
    };
    assert!(
        form.error.as_deref().unwrap().contains("groups: `10x`"),
        "{:?}",
        form.error
    );
    assert!(app.outbox.is_empty());
}

#[test]
fn starved_verdict_is_red_and_explained() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Down); // select fork_load
    let term = screen(&app, 80, 24);
    let text = text_of(&term);
    assert!(
        text.contains("due = weight 1024/5120 × the 200% its group gets (wants 100%)"),
        "no explanation in\n{text}"
    );
    // The verdict word is red wherever it is drawn.
    let buf = term.backend().buffer();
    let mut red = 0;
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        if let Some(col) = line.find("STARVED") {
            let x = line[..col].chars().count() as u16;
            assert_eq!(buf[(x, y)].fg, Color::Red, "line {y}: {line}");
            red += 1;
        }
    }
    assert!(
        red >= 2,
        "the verdict should be in the table and in the details"
    );
    insta::assert_snapshot!(term.backend());
}

#[test]
fn no_color_draws_no_colour() {
    let mut app = seed_app();
    app.theme = Theme { colour: false };
    let term = screen(&app, 80, 24);
    let buf = term.backend().buffer();
    for cell in buf.content() {
        assert_eq!(cell.fg, Color::Reset);
        assert_eq!(cell.bg, Color::Reset);
    }
}

#[test]
fn too_small_terminal_says_so() {
    let app = seed_app();
    let term = screen(&app, 60, 15);
    assert!(text_of(&term).contains("Terminal too small"));
    insta::assert_snapshot!(term.backend());
}

#[test]
fn frozen_view_stays_put_while_frames_arrive() {
    let mut app = seed_app();
    let before = text_after(&mut app, ' ', 80, 24);
    let mut f = frame(61.0);
    f.workloads[1].cpu_received = 0.4;
    f.workloads[1].fairness_ratio = 1.0;
    app.on_event(Event::Frame(f));
    let after = text_of(&screen(&app, 80, 24));
    assert_eq!(before, after);
    assert!(after.contains("FROZEN"));
    assert!(!text_after(&mut app, ' ', 80, 24).contains("FROZEN"));
}

#[test]
fn knob_keys_send_commands() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Char('j'));
    key(&mut app, KeyCode::Char(']'));
    key(&mut app, KeyCode::Char('g'));
    key(&mut app, KeyCode::Char('+'));
    key(&mut app, KeyCode::Char('s'));
    key(&mut app, KeyCode::Char('d'));
    key(&mut app, KeyCode::Char('d'));
    use schedlab::knobs::{Knobs, Placement};
    let nice = Knobs {
        nice: 1,
        ..Knobs::default()
    };
    // Knobs build on each other, before the engine has answered.
    let session = Knobs {
        nice: 1,
        placement: Placement::OwnSession,
        ..Knobs::default()
    };
    assert_eq!(
        app.outbox,
        vec![
            Command::SetKnobs(2, nice),
            Command::SetKnobs(2, session),
            Command::SetInterval(Duration::from_millis(1000)),
            Command::Stop(2),
            Command::Remove(2),
        ]
    );
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

#[test]
fn finished_runs_record_their_figure_and_loop() {
    let mut app = seed_app();
    app.workloads[0].looping = true;
    // ref-job here is a finite run: make it finish.
    if let schedlab::workload::registry::WorkloadKind::RefJob { runs, .. } =
        &mut app.workloads[0].decl.kind
    {
        *runs = Some(1);
    }
    let mut f = frame(60.5);
    f.workloads[0].state = WorkloadState::Done(0);
    app.on_event(Event::Frame(f));
    assert_eq!(app.workloads[0].runs.len(), 1);
    assert_eq!(app.outbox, vec![Command::Restart(1)]);
}

#[test]
fn mouse_click_selects_a_row() {
    let mut app = seed_app();
    let _ = screen(&app, 80, 24);
    let g = app.table_geometry.get();
    let click = crossterm::event::Event::Mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: 3,
        row: g.rows.y + 1,
        modifiers: KeyModifiers::NONE,
    });
    input::handle(&mut app, &click);
    assert_eq!(app.selected, 1);
}

/// A 60 s replay of the 2002 contest thread's situation, played to 30 s.
fn replay_app() -> (App, Vec<Frame>) {
    use schedlab::engine::ReplayStatus;
    let mut app = App::new(
        "replay of contest-fork-load",
        Duration::from_millis(500),
        2,
        Theme { colour: true },
    );
    app.on_event(Event::Replay(ReplayStatus {
        duration: 60.0,
        paused: false,
    }));
    for (i, decl) in Scenario::builtin_default()
        .workloads
        .into_iter()
        .enumerate()
    {
        app.on_event(Event::Added(i as u32 + 1, decl));
    }
    let recording: Vec<Frame> = (1..=120).map(|i| frame(i as f64 * 0.5)).collect();
    for f in &recording[..60] {
        app.on_event(Event::Frame(f.clone()));
    }
    (app, recording)
}

#[test]
fn replay_keys_ask_the_engine_and_a_seek_rebuilds_the_history() {
    use schedlab::engine::{Playback, ReplayStatus};
    let (mut app, recording) = replay_app();
    assert_eq!(app.workloads[1].series.len(), 60);
    // Space pauses playback instead of freezing the view; the seek keys go to the engine.
    key(&mut app, KeyCode::Char(' '));
    key(&mut app, KeyCode::Char(','));
    key(&mut app, KeyCode::Char('.'));
    key(&mut app, KeyCode::PageUp);
    key(&mut app, KeyCode::PageDown);
    assert!(app.frozen.is_none());
    assert_eq!(
        app.outbox,
        vec![
            Command::Playback(Playback::TogglePause),
            Command::Playback(Playback::Step(-1)),
            Command::Playback(Playback::Step(1)),
            Command::Playback(Playback::SeekFraction(-0.1)),
            Command::Playback(Playback::SeekFraction(0.1)),
        ]
    );
    app.outbox.clear();
    // The engine seeks back to 12.5 s: charts and table end there.
    app.on_event(Event::History(recording[..25].to_vec()));
    app.on_event(Event::Replay(ReplayStatus {
        duration: 60.0,
        paused: true,
    }));
    assert_eq!(app.view_end(), 12.5);
    for w in &app.workloads {
        assert_eq!(w.series.len(), 25, "{}", w.decl.name);
    }
    assert_eq!(
        app.frame_of(2).unwrap().ops_per_sec,
        recording[24].workloads[1].ops_per_sec
    );
    // The same Frame again (a paused replay) adds nothing.
    app.on_event(Event::Frame(recording[24].clone()));
    assert_eq!(app.workloads[1].series.len(), 25);
    assert!(app.outbox.is_empty());
    shows!("paused_replay_80x24", &app, 80 x 24, ["paused", "12.5/60.0 s", "space pause",
        "PgUp PgDn seek"]);
    let wide = text_of(&screen(&app, 160, 48));
    assert!(wide.contains("replay 12.5 s / 60.0 s"), "{wide}");
    // The help of a replay lists its keys, and not the ones that change workloads.
    let help = text_after(&mut app, '?', 80, 24);
    for keys in ["PgUp  PgDn", ",  .", "space  f", "q  Ctrl-C"] {
        assert!(help.contains(keys), "{keys} missing from\n{help}");
    }
    assert!(!help.contains("cgroup weight"), "{help}");
}

#[test]
fn live_space_still_freezes_and_seek_keys_do_nothing() {
    let mut app = seed_app();
    key(&mut app, KeyCode::PageDown);
    key(&mut app, KeyCode::Char('.'));
    assert!(app.outbox.is_empty());
    key(&mut app, KeyCode::Char(' '));
    assert!(app.frozen.is_some());
}

/// A workload that failed: its last stderr line leads its details, and `v` shows its last
/// lines over the dashboard.
#[test]
fn a_failed_workloads_stderr_is_in_its_details_and_behind_v() {
    let mut app = seed_app();
    let mut last = frame(60.5);
    let failed = &mut last.workloads[1];
    failed.state = WorkloadState::Done(1);
    failed.stderr = vec![
        "fork: retry: Resource temporarily unavailable".into(),
        "schedlab fork-load: error: forker 2 of 2: fork: Resource temporarily unavailable (process limit: ulimit -u, or the cgroup's pids.max)".into(),
    ];
    app.on_event(Event::Frame(last));
    key(&mut app, KeyCode::Down);
    let term = screen(&app, 80, 24);
    let text = text_of(&term);
    assert!(
        text.contains("stderr (v: more): schedlab fork-load: error: forker 2 of 2"),
        "{text}"
    );
    insta::assert_snapshot!("failed_workload_details", term.backend());
    key(&mut app, KeyCode::Char('v'));
    assert_eq!(app.mode, Mode::Stderr(2));
    let term = screen(&app, 80, 24);
    assert!(text_of(&term).contains("fork: retry: Resource temporarily unavailable"));
    insta::assert_snapshot!("failed_workload_stderr", term.backend());
    key(&mut app, KeyCode::Char('x'));
    assert_eq!(app.mode, Mode::Normal);
}

// ---- The latency panel and the per-CPU view ----------------------------------------------

fn latency(unit: &str, p50: f64, p99: f64, p999: f64) -> Option<Latency> {
    Some(Latency {
        unit: unit.into(),
        samples: 4000,
        p50_us: p50,
        p99_us: p99,
        p999_us: p999,
        mean_us: p50 * 1.1,
        available: true,
    })
}

/// A mix where every kind of latency shows: a sem ping-pong (round trips of a few µs, nothing
/// timed for a few seconds while it was stopped), a chat run against a server that does not
/// relay what it is sent (chat_s-like: "latency unavailable"), the wakeup probe (timer and
/// thread wakeups), and a reference job, which times nothing.
fn latency_frame(t: f64) -> Frame {
    let wobble = ((t * 1.3).sin() + (t * 0.37).cos()) / 2.0;
    let row = |id: u32, name: &str, unit: &str| {
        WorkloadFrame {
            id,
            name: name.into(),
            state: WorkloadState::Running,
            tasks: 2,
            ops_per_sec: 1000.0,
            ops_unit: unit.into(),
            cpu_received: 0.4,
            cpu_demand: 0.4,
            cpu_fair: 0.4,
            fairness_ratio: 1.0,
            weight: 1024.0,
            ..Default::default()
        }
        .judged(Due::AllItWants { wants: 0.4 })
    };
    let stopped = (20.0..25.0).contains(&t);
    let mut ping = row(1, "pingpong", "rt");
    ping.latency = if stopped {
        Some(Latency {
            unit: "round trip".into(),
            available: true,
            ..Latency::default()
        })
    } else {
        latency(
            "round trip",
            2.6 + wobble * 0.2,
            3.1 + wobble * 0.4,
            29.0 + wobble * 8.0,
        )
    };
    let mut chat = row(2, "chat", "msg");
    chat.latency = Some(Latency {
        unit: "delivery".into(),
        available: false,
        ..Latency::default()
    });
    let mut probe = row(3, "wakeup", "wakeup");
    probe.latency = latency(
        "timer wakeup",
        85.0 + wobble * 10.0,
        174.0 + wobble * 30.0,
        3244.0 + wobble * 900.0,
    );
    probe.more_latency = vec![latency("thread wakeup", 34.3, 61.0, 880.0).unwrap()];
    let job = row(4, "ref-job", "unit");
    Frame {
        t,
        interval: 0.5,
        workloads: vec![ping, chat, probe, job],
        machine: MachineFrame {
            cpus: 2,
            autogroup: true,
            verdict_window: 5.0,
            ..Default::default()
        },
        jain_index: 1.0,
        status_interval: 1.0,
        ..Default::default()
    }
}

/// The latency mix, 60 s of it at 500 ms.
fn latency_app() -> App {
    let toml = "name = \"latency\"\n\
        [[workload]]\nname = \"pingpong\"\nkind = \"pingpong\"\n\
        [[workload]]\nname = \"chat\"\nkind = \"chat\"\n\
        [[workload]]\nname = \"wakeup\"\nkind = \"wakeup-probe\"\n\
        [[workload]]\nname = \"ref-job\"\nkind = \"ref-job\"\n";
    let scenario = Scenario::from_toml(toml, "latency").unwrap();
    let mut app = App::new(
        "latency",
        Duration::from_millis(500),
        2,
        Theme { colour: true },
    );
    for (i, decl) in scenario.workloads.into_iter().enumerate() {
        app.on_event(Event::Added(i as u32 + 1, decl));
    }
    for i in 1..=120 {
        app.on_event(Event::Frame(latency_frame(i as f64 * 0.5)));
    }
    app
}

#[test]
fn latency_panel_80x24() {
    let mut app = seed_app();
    assert!(!text_of(&screen(&app, 80, 24)).contains("Latency"));
    // The table has its p99 column, with its unit, at 80 columns.
    assert!(text_of(&screen(&app, 80, 24)).contains("P99"));
    key(&mut app, KeyCode::Char('L'));
    let text = shows!(&app, 80 x 24, ["Latency", "p99.9", "fork cycle", "1ms"]);
    // The reference job times nothing: no words, no line.
    assert!(!text.contains("■ref-job "), "{text}");
    assert!(text_after(&mut app, 'L', 80, 24).contains("Throughput"));
}

#[test]
fn latency_panel_160x48() {
    let mut app = latency_app();
    // Wide enough: beside the three charts, without a key.
    let text = shows!(&app, 160 x 48, ["Throughput", "Latency", "round trip",
        "delivery: latency unavailable", "timer wakeup", "thread wakeup", "P99", "n/a"]);
    assert!(!text.contains("■ref-job round"), "{text}");
    // Its key hides it there.
    assert!(!text_after(&mut app, 'L', 160, 48).contains("Latency"));
}

#[test]
fn latency_mix_80x24() {
    let mut app = latency_app();
    key(&mut app, KeyCode::Char('L'));
    shows!(&app, 80 x 24, ["latency unavailable", "round trip", "n/a", "3.0µs"]);
}

#[test]
fn cpu_view_80x24() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Char('c'));
    assert!(app.cpu_view);
    let text =
        shows!(&app, 80 x 24, ["CPUs over the last 500ms", "cpu0", "cpu1", "moves between CPUs"]);
    assert!(!text.contains("Throughput"), "{text}");
    // The latency key leaves it for the latency panel.
    key(&mut app, KeyCode::Char('L'));
    assert!(!app.cpu_view);
    assert!(text_of(&screen(&app, 80, 24)).contains("Latency"));
}

#[test]
fn cpu_view_160x48() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Char('c'));
    shows!(&app, 160 x 48, ["■ref-job 99% (2 tasks)", "(1 task)", "MIG/s",
        "moves between CPUs"]);
    assert!(text_after(&mut app, 'c', 160, 48).contains("Throughput"));
}

/// 64 CPUs at 80x24: more than a bar each can show, so a grid of a cell per CPU (every CPU
/// in it), then the busiest with their bars and the rest counted.
#[test]
fn cpu_view_of_many_cpus() {
    let mut app = seed_app();
    let mut f = frame(60.5);
    f.machine.cpus = 64;
    f.cpus = (0..64)
        .map(|id| CpuFrame {
            id,
            busy: Some(f64::from(id % 10) / 10.0),
            by_workload: vec![share(1, "ref-job", f64::from(id % 10) / 20.0, 1)],
        })
        .collect();
    app.on_event(Event::Frame(f));
    key(&mut app, KeyCode::Char('c'));
    shows!(&app, 80 x 24, ["cpu0-31", "cpu32-63", "64 CPUs 43% busy", "busiest first:",
        "cpu9 ", "+41 more CPUs", "coloured by who ran most"]);
}

/// A workload added from the picker is the selected one once the engine adds it: the next
/// `]` renices it, not the row that was selected before.
#[test]
fn a_workload_added_from_the_picker_is_selected() {
    let mut app = seed_app();
    assert_eq!(app.selected, 0);
    key(&mut app, KeyCode::Char('a'));
    key(&mut app, KeyCode::Char('5')); // cpu-hog
    key(&mut app, KeyCode::Enter);
    let Some(Command::Add(decl)) = app.outbox.pop() else {
        panic!("no Add in {:?}", app.outbox)
    };
    app.on_event(Event::Added(3, decl));
    assert_eq!(app.selected, 2);
    key(&mut app, KeyCode::Char(']'));
    assert!(
        matches!(app.outbox.last(), Some(Command::SetKnobs(3, k)) if k.nice == 1),
        "{:?}",
        app.outbox
    );
}

/// In a replay the keys that would add or change a workload say why not at once, and open
/// no form.
#[test]
fn a_replay_refuses_add_and_knob_keys_at_once() {
    let (mut app, _) = replay_app();
    for c in ['a', 'e', ']', 'p', 'g', 'W', 's', 'r', 'o'] {
        app.message = None;
        key(&mut app, KeyCode::Char(c));
        assert_eq!(app.mode, Mode::Normal, "{c}");
        let m = app
            .message
            .as_ref()
            .unwrap_or_else(|| panic!("{c}: no message"));
        assert!(m.error && m.text.contains("a replay"), "{c}: {}", m.text);
    }
    assert!(app.outbox.is_empty(), "{:?}", app.outbox);
}

/// A CPU the machine lacks is refused inside the knob form, which stays open with what was
/// typed, not after it closed.
#[test]
fn a_bad_cpu_list_keeps_the_knob_form_open_with_the_edits() {
    let mut app = seed_app();
    key(&mut app, KeyCode::Char('e'));
    let Mode::EditKnobs(_, form) = &mut app.mode else {
        panic!("no knob form")
    };
    let at = form
        .fields
        .iter()
        .position(|f| f.key == "affinity")
        .unwrap();
    form.fields[at].value = schedlab::ui::form::Value::Text("0,4096".into());
    let nice = form.fields.iter().position(|f| f.key == "nice").unwrap();
    form.fields[nice].value = schedlab::ui::form::Value::Text("7".into());
    key(&mut app, KeyCode::Enter);
    let Mode::EditKnobs(_, form) = &app.mode else {
        panic!("the form closed")
    };
    let error = form.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with("CPUs: CPU 4096 does not exist"),
        "{error}"
    );
    assert_eq!(form.text("nice"), "7");
    assert_eq!(form.text("affinity"), "0,4096");
    assert!(app.outbox.is_empty());
}

/// A message too long for the bottom line is cut with the key that shows it, and `m` shows
/// the last messages whole, wrapped.
#[test]
fn long_messages_can_be_read_in_full() {
    let mut app = seed_app();
    let long = format!("cannot add x: {} the end", "a long reason ".repeat(12));
    app.on_event(Event::Error(long.clone()));
    let bottom = text_of(&screen(&app, 80, 24));
    let last = bottom.lines().last().unwrap();
    assert!(last.ends_with("m: all"), "{last}");
    let shown = text_after(&mut app, 'm', 80, 24);
    assert_eq!(app.mode, Mode::Messages);
    let flat: String = shown
        .lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains("the end"), "{shown}");
    key(&mut app, KeyCode::Char('x'));
    assert_eq!(app.mode, Mode::Normal);
}

/// Without colour at 80 columns each chart names its lines under it, by the shape each
/// workload's lines are drawn in, which the table's rows show too.
#[test]
fn no_color_charts_have_a_legend_at_80_columns() {
    let mut app = seed_app();
    app.theme = Theme { colour: false };
    let text = text_of(&screen(&app, 80, 24));
    assert!(text.contains("⣿ ref-job"), "{text}");
    assert!(text.contains("█ fork_load"), "{text}");
    let legends = text
        .lines()
        .filter(|l| l.contains("⣿ref-job █fork_load"))
        .count();
    assert_eq!(
        legends, 1,
        "one line of legends under the three charts:\n{text}"
    );
    let under = text
        .lines()
        .find(|l| l.contains("⣿ref-job █fork_load"))
        .unwrap();
    assert_eq!(under.matches("⣿ref-job █fork_load").count(), 3, "{text}");
}

/// An attached row: no throughput (a dash, not 0), its selector in the details, `ended` with
/// its reason when what it watched exited, `let go` once stopped (detached).
#[test]
fn an_attached_row_shows_no_throughput_and_ends_with_its_reason() {
    let mut app = seed_app();
    let decl = WorkloadDecl {
        name: "build".into(),
        kind: schedlab::workload::registry::WorkloadKind::attach(&schedlab::probe::Selector::Comm(
            "make".into(),
        )),
        knobs: Knobs::default(),
        start_delay: 0.0,
        duration: None,
    };
    app.on_event(Event::Added(3, decl));
    let attached = |t: f64, state: WorkloadState| {
        let mut f = frame(t);
        f.workloads.push(WorkloadFrame {
            id: 3,
            name: "build".into(),
            state,
            tasks: 5,
            cpu_received: 0.4,
            cpu_fair: 0.4,
            window_received: 0.4,
            window_fair: 0.4,
            fairness_ratio: 1.0,
            window_ratio: 1.0,
            ..WorkloadFrame::default()
        });
        f
    };
    app.on_event(Event::Frame(attached(60.5, WorkloadState::Running)));
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    let text = text_of(&screen(&app, 100, 30));
    let row = text
        .lines()
        .find(|l| l.contains("build"))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    // ■ NAME STATE TASKS THROUGHPUT ...
    assert_eq!(cells[3], "5", "{row}");
    assert_eq!(cells[4], "-", "no throughput, not zero: {row}");
    assert!(text.contains("attached comm:make"), "{text}");
    app.on_event(Event::Frame(attached(
        61.0,
        WorkloadState::Ended("no process matches comm:make any more".into()),
    )));
    let text = text_of(&screen(&app, 100, 30));
    let row = text.lines().find(|l| l.contains("build")).unwrap();
    assert!(row.contains("ended"), "{row}");
    assert!(
        text.contains("no process matches comm:make any more"),
        "{text}"
    );
    app.on_event(Event::Frame(attached(61.5, WorkloadState::Stopped)));
    let text = text_of(&screen(&app, 100, 30));
    let row = text.lines().find(|l| l.contains("build")).unwrap();
    assert!(row.contains("let go"), "{row}");

    // K asks before killing what schedlab did not start; only `y` kills.
    app.outbox.clear();
    key(&mut app, KeyCode::Char('K'));
    assert_eq!(app.mode, Mode::ConfirmKill(3));
    let text = text_of(&screen(&app, 100, 30));
    assert!(
        text.contains("Kill the processes attached as build?"),
        "{text}"
    );
    key(&mut app, KeyCode::Char('n'));
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.outbox.is_empty(), "{:?}", app.outbox);
    key(&mut app, KeyCode::Char('K'));
    key(&mut app, KeyCode::Char('y'));
    assert_eq!(app.outbox, vec![Command::KillAttached(3)]);
    // On a row schedlab started, K kills nothing and says what does.
    app.outbox.clear();
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Char('K'));
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.outbox.is_empty(), "{:?}", app.outbox);
}

/// `X` promotes the busiest group of the rest that no row attaches yet: an autogroup by its
/// session, a cgroup by its path; never the root group. Once it is a row, the next `X` takes
/// the next group; with none left it says so. A replay refuses it.
#[test]
fn x_promotes_the_rests_busiest_group_to_an_attached_row() {
    use schedlab::model::RestGroup;
    use schedlab::probe::Selector;
    let mut app = seed_app();
    let group = |key: &str, session: u32, received: f64| RestGroup {
        name: format!("{key} (sh)"),
        key: key.into(),
        session,
        received,
        ..Default::default()
    };
    let mut f = frame(60.5);
    f.machine.rest_groups = vec![
        group("root", 1, 0.4),
        group("autogroup-12", 812, 0.3),
        group("cgroup /db", 900, 0.1),
    ];
    app.on_event(Event::Frame(f.clone()));
    let added = |app: &mut App| match app.outbox.pop() {
        Some(Command::Add(decl)) => decl,
        other => panic!("no Add: {other:?}"),
    };
    key(&mut app, KeyCode::Char('X'));
    let decl = added(&mut app);
    assert_eq!(
        decl.kind,
        schedlab::workload::registry::WorkloadKind::attach(&Selector::Session(812))
    );
    assert_eq!(decl.name, "session:812");
    assert_eq!(decl.knobs, Knobs::default());
    app.on_event(Event::Added(3, decl));
    app.on_event(Event::Frame(f.clone()));
    key(&mut app, KeyCode::Char('X'));
    let decl = added(&mut app);
    assert_eq!(
        decl.kind,
        schedlab::workload::registry::WorkloadKind::attach(&Selector::Cgroup("/db".into()))
    );
    app.on_event(Event::Added(4, decl));
    app.on_event(Event::Frame(f));
    app.message = None;
    key(&mut app, KeyCode::Char('X'));
    assert!(app.outbox.is_empty(), "{:?}", app.outbox);
    let m = app.message.as_ref().expect("a message");
    assert!(
        m.error && m.text.contains("no group of the rest"),
        "{}",
        m.text
    );

    let (mut replay, _) = replay_app();
    key(&mut replay, KeyCode::Char('X'));
    assert!(replay.outbox.is_empty());
    assert!(replay
        .message
        .as_ref()
        .is_some_and(|m| m.text.contains("a replay")));
}

/// Two labs side by side (`tui --connect A --connect B`): the 2002 contest scenario on a
/// baseline kernel (A) and on a patched one (B) where the fork loop gets its due.
#[test]
fn two_labs_side_by_side_160x48() {
    use schedlab::ui::pair::{draw as draw_pair, Pair, Side};
    let mut pair = Pair {
        sides: [
            Side::new("A: contest-fork-load on base (6.18.0, 2 CPUs, read-only)".into()),
            Side::new(
                "B: contest-fork-load on patched (6.18.0-eevdf-fix, 2 CPUs, read-only)".into(),
            ),
        ],
        theme: Theme::default(),
    };
    for i in 0..40 {
        let t = i as f64 * 0.5;
        pair.sides[0].on_event(Event::Frame(frame(t)));
        let mut fixed = frame(t);
        for w in &mut fixed.workloads {
            // The patched kernel gives each its due.
            w.window_received = w.window_fair;
            w.cpu_received = w.cpu_fair;
            w.window_ratio = 1.0;
            w.verdict = Verdict::Fair;
        }
        pair.sides[1].on_event(Event::Frame(fixed));
    }
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
    term.draw(|f| draw_pair(f, &pair)).unwrap();
    let text = must_show(
        &term,
        [
            "A: contest-fork-load on base",
            "B: contest-fork-load on patched",
            "fork_load",
            "ref-job",
            "B-A RATIO",
            "A solid",
        ],
    );
    assert!(
        text.contains("+0."),
        "the ratio's difference is shown:\n{text}"
    );
    insta::assert_snapshot!(term.backend());
}
