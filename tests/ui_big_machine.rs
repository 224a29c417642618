//! The dashboard on a big machine: a generated fake /proc and cgroup tree of 256 CPUs and 64
//! cgroups (tests/fakeproc/big.rs; 1,000 threads here, where the bench has 100,000), swept by
//! the real probe and stepped by the real model with pinned clocks, its Frames drawn at 160x48
//! with the per-CPU view open: the table of eight workloads and a grid of 256 CPUs that fits.

mod common;
mod fakeproc;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use common::screen::text_of;
use fakeproc::big::{BigMachine, Shape};
use fakeproc::{FakeProc, Session};
use schedlab::engine::Event;
use schedlab::knobs::Knobs;
use schedlab::model::{Frame, Model};
use schedlab::probe::Selector;
use schedlab::scenario::WorkloadDecl;
use schedlab::ui::app::App;
use schedlab::ui::theme::Theme;
use schedlab::ui::{draw, input};
use schedlab::workload::registry::WorkloadKind;

/// Three Frames of the big machine a second apart, from 1,000 threads: few enough that the
/// probe reads every one at every sweep a second apart (no rotation), so the Frames are the
/// same at every run.
fn frames() -> (BigMachine, Vec<Frame>) {
    let mut m = BigMachine::new(Shape {
        threads: 1_000,
        ..Shape::BIG
    });
    let f = FakeProc::new();
    m.write_first(&f);
    let mut s = Session::new(
        f.probe_every(Duration::ZERO),
        Model::new(),
        Duration::from_secs(1),
    );
    let targets = m.targets.clone();
    for k in 0..3 {
        if k > 0 {
            // The probe's read budgets follow real time: a second between sweeps reads all.
            std::thread::sleep(Duration::from_secs(1));
            m.write_tick(&f, k);
        }
        s.sample(&targets);
    }
    (m, s.frames)
}

#[test]
fn a_256_cpu_machine_in_the_table_and_the_cpu_view_160x48() {
    let (m, frames) = frames();
    let last = frames.last().unwrap();
    assert_eq!(last.cpus.len(), 256, "every CPU in the Frame");
    assert_eq!(last.workloads.len(), 8);
    let mut app = App::new(
        "big-machine",
        Duration::from_secs(1),
        256,
        Theme { colour: true },
    );
    for t in &m.targets {
        // Shown as attached sessions: the generated processes are nobody's children.
        let decl = WorkloadDecl {
            name: t.name.clone(),
            kind: WorkloadKind::attach(&Selector::Session(t.pgid)),
            knobs: Knobs::default(),
            start_delay: 0.0,
            duration: None,
        };
        app.on_event(Event::Added(t.id, decl));
    }
    for fr in frames {
        app.on_event(Event::Frame(fr));
    }
    input::on_key(
        &mut app,
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::NONE),
    );
    let mut term = Terminal::new(TestBackend::new(160, 48)).unwrap();
    term.draw(|f| draw(f, &app)).unwrap();
    let text = text_of(&term);
    for must in [
        "256 CPUs",
        "build",
        "cron",
        "cpu0-63",
        "cpu192-255",
        "busiest first:",
        "whose, in CPUs",
        "a cell a CPU",
    ] {
        assert!(text.contains(must), "no {must:?} in\n{text}");
    }
    insta::assert_snapshot!("cpu_view_of_256_cpus_160x48", term.backend());
}
