//! The terminal dashboard: launches workloads and shows, live and side by side, their
//! throughput, their CPU share against their fair share, their context switches, the latency
//! of their own operations and where their tasks ran.
//!
//! Three threads: the engine (owns the workloads and the probe, sends a Frame per interval),
//! the input reader (sends terminal events), and this one, which waits on both, updates the
//! [`app::App`] and draws. Drawing never waits for sampling, and the UI never reads /proc.
//!
//! One file per concern: `app` (state), `input` (keys), `terminal` (taking the terminal over
//! and giving it back), and one per panel: `status`, `table`, `charts`, `latency`, `cpus`
//! (the per-CPU view), `help`, `popup` (picker and forms), with `theme` and `fmt` for looks.
//! It is a client of [`crate::engine`]; `schedlab tui` and `schedlab replay` open it from
//! [`crate::cli`].

pub mod app;
pub mod charts;
pub mod cpus;
pub(crate) mod evidence;
pub(crate) mod fmt;
pub mod form;
pub mod help;
pub mod history;
pub mod input;
pub mod latency;
pub mod pair;
pub mod picker;
pub(crate) mod popup;
pub mod status;
pub mod table;
pub mod terminal;
pub mod theme;

use std::ops::ControlFlow;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame as TermFrame;

use crate::engine::{Backend, Command, Event};
use crate::scenario::Scenario;

use app::{App, Mode};
use theme::Theme;

/// The smallest terminal the dashboard draws in.
pub(crate) const MIN_WIDTH: u16 = 72;
pub(crate) const MIN_HEIGHT: u16 = 20;
/// Lines the charts keep however many workloads the table lists.
const MIN_CHART_HEIGHT: u16 = 9;

/// What the UI thread waits on.
enum Msg {
    /// Boxed: a Frame is large, and every other message is small.
    Engine(Box<Event>),
    EngineFailed(String),
    Input(crossterm::event::Event),
    InputGone(String),
}

/// What the dashboard watches: a lab of its own or a served one.
pub enum Source {
    /// The engine on a thread of this process; the function makes its Backend on that
    /// thread, after the terminal is set up (so nothing is started if that fails). With a
    /// server, the engine's Events are served too and its clients' Commands taken.
    Local {
        make_backend: Box<dyn FnOnce(Duration) -> Result<Box<dyn Backend>> + Send>,
        serve: Option<Box<ServeOptions>>,
    },
    /// A lab served elsewhere (`tui --connect`), already welcomed.
    Remote(Box<crate::serve::Remote>),
}

/// How a dashboard serves its own lab (`tui --serve`).
pub struct ServeOptions {
    pub config: crate::serve::ServeConfig,
    pub welcome: crate::serve::Welcome,
}

/// Runs the dashboard on `scenario` until the person quits.
pub fn run(scenario: Scenario, interval: Duration, source: Source) -> Result<()> {
    let mut session = terminal::Session::enter()?;
    crate::engine::live_groups::install_exit_hook();
    crate::sys::kernel::cgroup::sweep_orphans();
    crate::sys::kernel::cgroup_attached::sweep_orphans();

    let (tx, rx) = mpsc::channel::<Msg>();
    let (cmd_tx, cmd_rx) = mpsc::channel::<Command>();
    let etx = tx.clone();
    let remote = match &source {
        Source::Remote(lab) => Some(lab.addr.clone()),
        Source::Local { .. } => None,
    };
    let server = match &source {
        Source::Local {
            serve: Some(opts), ..
        } => Some(
            crate::serve::Server::start(opts.config.clone(), opts.welcome.clone(), cmd_tx.clone())
                .context("serving the lab")?,
        ),
        _ => None,
    };
    let engine = std::thread::Builder::new()
        .name("schedlab-engine".into())
        .spawn(move || match source {
            Source::Remote(lab) => {
                (*lab).run(cmd_rx, |e| etx.send(Msg::Engine(Box::new(e))).is_ok())
            }
            Source::Local { make_backend, .. } => match make_backend(interval) {
                Ok(backend) => {
                    crate::engine::thread::Engine::new(backend, interval).run(cmd_rx, |e| {
                        if let Some(s) = &server {
                            s.publish(&e);
                        }
                        etx.send(Msg::Engine(Box::new(e))).is_ok()
                    })
                }
                Err(e) => {
                    let _ = etx.send(Msg::EngineFailed(format!("{e:#}")));
                }
            },
        })
        .context("starting the engine thread")?;
    // A served lab runs its own scenario; this one names it.
    if remote.is_none() {
        for decl in &scenario.workloads {
            let _ = cmd_tx.send(Command::Add(decl.clone()));
        }
    }
    input::spawn_reader(tx.clone(), Msg::Input, Msg::InputGone)?;
    drop(tx);

    let cpus = crate::supervisor::usable_cpus();
    let mut app = App::new(scenario.name.clone(), interval, cpus, Theme::from_env());
    app.remote = remote;
    if let Some(finding) = &scenario.finding {
        // A finding opened as a guided tour: its title on the status line, its text in help.
        app.title = format!("{}: {} (? for what it shows)", scenario.name, finding.title);
        app.finding = Some(finding.clone());
    }
    let result = session.run(
        &mut app,
        &rx,
        draw,
        |app, msg| {
            match msg {
                Msg::Engine(ev) => {
                    if let Event::Frame(f) = &*ev {
                        app.cpus = f.machine.cpus.max(1);
                        // Debug builds only: lets the end-to-end test prove that a panic
                        // gives the terminal back and stops every workload.
                        #[cfg(debug_assertions)]
                        if f.t > 1.0 && std::env::var_os("SCHEDLAB_FAILPOINT_UI_PANIC").is_some() {
                            panic!("failpoint SCHEDLAB_FAILPOINT_UI_PANIC");
                        }
                    }
                    app.on_event(*ev)
                }
                Msg::Input(ev) => input::handle(app, &ev),
                Msg::EngineFailed(e) => bail!("{e}"),
                Msg::InputGone(e) => bail!("reading the terminal: {e}"),
            }
            Ok(ControlFlow::Continue(()))
        },
        |app| {
            for cmd in app.outbox.drain(..) {
                let _ = cmd_tx.send(cmd);
            }
            if app.quit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    );
    // The prompt comes back first; then every workload is stopped before we return.
    session.leave();
    let _ = cmd_tx.send(Command::Quit);
    let _ = engine.join();
    result
}

/// Draws the whole screen from `app`.
pub fn draw(f: &mut TermFrame, app: &App) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(f, area, app);
        return;
    }
    let details_h: u16 = if area.height >= 24 { 3 } else { 2 };
    let room = area.height - 2 - details_h - MIN_CHART_HEIGHT;
    let table_h = table::wanted_height(app).clamp(3, room.max(3));
    let [status_a, table_a, details_a, charts_a, keys_a] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(table_h),
        Constraint::Length(details_h),
        Constraint::Min(MIN_CHART_HEIGHT),
        Constraint::Length(1),
    ])
    .areas(area);
    status::draw_status(f, status_a, app);
    table::draw(f, table_a, app);
    status::draw_details(f, details_a, app);
    app.chart_width.set(charts_a.width);
    if app.cpu_view {
        cpus::draw(f, charts_a, app);
    } else {
        draw_panels(f, charts_a, app);
    }
    status::draw_keys(f, keys_a, app);
    match &app.mode {
        Mode::Normal => {}
        Mode::Help => help::draw(f, area, app),
        Mode::Picker(i) => popup::draw_picker(f, area, app, *i),
        Mode::NewWorkload(_, form) => popup::draw_form(f, area, app, form, "start"),
        Mode::EditKnobs(_, form) => popup::draw_form(f, area, app, form, "apply"),
        Mode::Stderr(id) => status::draw_stderr(f, area, app, *id),
        Mode::Messages => status::draw_messages(f, area, app),
        Mode::Evidence(lines) => status::draw_evidence(f, area, app, lines),
        Mode::ConfirmKill(id) => popup::draw_confirm_kill(f, area, app, *id),
    }
}

/// The charts, with the latency panel beside them from `LATENCY_BESIDE_WIDTH` columns, or in
/// their place when its key asks for it on a narrower screen.
fn draw_panels(f: &mut TermFrame, area: Rect, app: &App) {
    let latency = app.latency_shown(area.width);
    if latency && !app::latency_beside(area.width) {
        latency::draw(f, area, app);
        return;
    }
    let panels = if latency { 4 } else { 3 };
    let areas = Layout::horizontal(vec![Constraint::Ratio(1, panels); panels as usize]).split(area);
    if latency {
        latency::draw(f, areas[3], app);
    }
    charts::draw(f, [areas[0], areas[1], areas[2]], app);
}

fn too_small(f: &mut TermFrame, area: Rect, app: &App) {
    let text = vec![
        Line::from(Span::styled("Terminal too small", app.theme.warn())),
        Line::raw(format!(
            "{}x{} here; the dashboard needs at least {MIN_WIDTH}x{MIN_HEIGHT}.",
            area.width, area.height
        )),
        Line::raw("Enlarge the window, or press q to quit."),
    ];
    let h = (text.len() as u16).min(area.height);
    let y = area.y + (area.height - h) / 2;
    let rect = Rect {
        y,
        height: h,
        ..area
    };
    f.render_widget(
        Paragraph::new(text)
            .alignment(ratatui::layout::Alignment::Center)
            .wrap(Wrap { trim: true }),
        rect,
    );
}
