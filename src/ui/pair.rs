//! Two labs side by side (`tui --connect A --connect B`): a baseline kernel and a patched one
//! running the same scenario, watched live in one screen. Rows are paired by workload name:
//! each side's CPU received, due and ratio, and the ratio's difference; one chart overlays
//! both sides, one colour per workload and one line style per side (A solid, B dotted).
//!
//! Read-only: each lab is changed where it runs (or from a dashboard of its own). `q` or
//! Ctrl-C disconnects both; the labs go on.

use std::collections::{BTreeMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::mpsc;

use anyhow::{Context, Result};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Row, Table};
use ratatui::Frame as TermFrame;

use super::fmt;
use super::theme::Theme;
use crate::engine::{Command, Event};
use crate::model::{Frame, Verdict, WorkloadFrame};
use crate::serve::Remote;

/// Seconds of history the chart shows.
const WINDOW: f64 = 60.0;
/// Points kept per line: a minute at 10 Hz.
const POINTS: usize = 600;

/// One lab as this screen knows it.
#[derive(Default)]
pub struct Side {
    /// "A: host (kernel, 2 CPUs)".
    pub label: String,
    pub latest: Option<Frame>,
    /// Per workload: (t, CPU received) over the last minute.
    pub history: BTreeMap<String, VecDeque<(f64, f64)>>,
    /// The last error or notice the lab sent, or why it is gone.
    pub message: Option<String>,
}

impl Side {
    pub fn new(label: String) -> Side {
        Side {
            label,
            ..Side::default()
        }
    }

    /// Takes in what the lab sent.
    pub fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Frame(f) => self.on_frame(f),
            Event::History(frames) => frames.into_iter().for_each(|f| self.on_frame(f)),
            Event::Error(e) => self.message = Some(e),
            _ => {}
        }
    }

    fn on_frame(&mut self, f: Frame) {
        for w in &f.workloads {
            let h = self.history.entry(w.name.clone()).or_default();
            if h.len() == POINTS {
                h.pop_front();
            }
            h.push_back((f.t, w.cpu_received * 100.0));
        }
        self.latest = Some(f);
    }

    fn workload(&self, name: &str) -> Option<&WorkloadFrame> {
        self.latest
            .as_ref()?
            .workloads
            .iter()
            .find(|w| w.name == name)
    }
}

/// The screen's state: the two sides and how to draw them.
pub struct Pair {
    pub sides: [Side; 2],
    pub theme: Theme,
}

impl Pair {
    /// Every workload name either side has shown, in the order each first came (A's first).
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for s in &self.sides {
            for n in s.history.keys() {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        names
    }
}

/// What the UI thread waits on.
enum Msg {
    Lab(usize, Box<Event>),
    Input(TermEvent),
    InputGone(String),
}

/// Watches two served labs until the person quits.
pub fn run(a: Remote, b: Remote) -> Result<()> {
    let mut session = super::terminal::Session::enter()?;
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut pair = Pair {
        sides: [
            Side::new(format!("A: {}", a.describe())),
            Side::new(format!("B: {}", b.describe())),
        ],
        theme: Theme::from_env(),
    };
    let mut quits = Vec::new();
    for (i, lab) in [a, b].into_iter().enumerate() {
        let (cmd_tx, cmd_rx) = mpsc::channel::<Command>();
        quits.push(cmd_tx);
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("schedlab-remote-{i}"))
            .spawn(move || lab.run(cmd_rx, |e| tx.send(Msg::Lab(i, Box::new(e))).is_ok()))
            .context("starting a client thread")?;
    }
    super::input::spawn_reader(tx.clone(), Msg::Input, Msg::InputGone)?;
    drop(tx);
    let result = session.run(
        &mut pair,
        &rx,
        draw,
        |pair, msg| {
            match msg {
                Msg::Lab(i, ev) => pair.sides[i].on_event(*ev),
                Msg::Input(TermEvent::Key(k)) if k.kind != KeyEventKind::Release => {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                Msg::Input(_) => {}
                Msg::InputGone(e) => anyhow::bail!("reading the terminal: {e}"),
            }
            Ok(ControlFlow::Continue(()))
        },
        |_| ControlFlow::Continue(()),
    );
    session.leave();
    for q in quits {
        let _ = q.send(Command::Quit);
    }
    result
}

/// The whole screen: both labs named, the paired table, the overlaid chart, the keys.
pub fn draw(f: &mut TermFrame, p: &Pair) {
    let area = f.area();
    let names = p.names();
    let table_h = (names.len() as u16 + 3).min(area.height / 2).max(4);
    let [status_a, table_a, chart_a, keys_a] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(table_h),
        Constraint::Min(6),
        Constraint::Length(1),
    ])
    .areas(area);
    let t = &p.theme;
    let status: Vec<Line> = p
        .sides
        .iter()
        .map(|s| {
            let mut spans = vec![Span::styled(s.label.clone(), t.title())];
            if let Some(fr) = &s.latest {
                spans.push(Span::styled(
                    format!(
                        " │ t {:.0}s │ other tasks {}% │ self {:.1}%",
                        fr.t,
                        fmt::pct(fr.machine.rest_cpu_received),
                        fr.observer_cpu_pct
                    ),
                    t.dim(),
                ));
            }
            if let Some(m) = &s.message {
                spans.push(Span::styled(format!(" │ {m}"), t.error()));
            }
            Line::from(spans)
        })
        .collect();
    f.render_widget(Paragraph::new(status), status_a);
    draw_table(f, table_a, p, &names);
    draw_chart(f, chart_a, p, &names);
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled("q", t.key()),
            Span::raw(" disconnect (the labs go on)   "),
            Span::styled("A", t.title()),
            Span::raw(" solid   "),
            Span::styled("B", t.title()),
            Span::raw(" dotted"),
        ])),
        keys_a,
    );
}

fn draw_table(f: &mut TermFrame, area: Rect, p: &Pair, names: &[String]) {
    let t = &p.theme;
    let cell = |w: Option<&WorkloadFrame>, what: fn(&WorkloadFrame) -> String| {
        w.map_or("-".to_owned(), what)
    };
    let header = Row::new(vec![
        "NAME",
        "A GOT%",
        "A DUE%",
        "A RATIO",
        "B GOT%",
        "B DUE%",
        "B RATIO",
        "B-A RATIO",
    ])
    .style(t.header());
    let rows: Vec<Row> = names
        .iter()
        .enumerate()
        .map(|(slot, name)| {
            let (a, b) = (p.sides[0].workload(name), p.sides[1].workload(name));
            let ratio = |w: &WorkloadFrame| {
                let v = w.verdict;
                let word = if v == Verdict::None { "" } else { v.word() };
                format!("{:.2} {word}", w.window_ratio)
            };
            let diff = match (a, b) {
                (Some(a), Some(b)) if a.window_fair > 0.0 && b.window_fair > 0.0 => {
                    format!("{:+.2}", b.window_ratio - a.window_ratio)
                }
                _ => "-".into(),
            };
            Row::new(vec![
                Span::styled(format!("{} {name}", t.mark(slot)), t.workload(slot)),
                Span::raw(cell(a, |w| format!("{:.1}", w.window_received * 100.0))),
                Span::raw(cell(a, |w| format!("{:.1}", w.window_fair * 100.0))),
                Span::styled(cell(a, ratio), a.map_or(t.dim(), |w| t.verdict(w.verdict))),
                Span::raw(cell(b, |w| format!("{:.1}", w.window_received * 100.0))),
                Span::raw(cell(b, |w| format!("{:.1}", w.window_fair * 100.0))),
                Span::styled(cell(b, ratio), b.map_or(t.dim(), |w| t.verdict(w.verdict))),
                Span::raw(diff),
            ])
        })
        .collect();
    let name_w = names.iter().map(|n| n.chars().count()).max().unwrap_or(4) + 3;
    let widths = [
        Constraint::Length(name_w.clamp(6, 40) as u16),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(13),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(13),
        Constraint::Length(9),
        Constraint::Min(0),
    ];
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border())
        .title(Span::styled(
            "received and due over the verdict window, side by side",
            t.title(),
        ));
    f.render_widget(Table::new(rows, widths).header(header).block(block), area);
}

fn draw_chart(f: &mut TermFrame, area: Rect, p: &Pair, names: &[String]) {
    let t = &p.theme;
    // Each side's own clock: its latest Frame is "now".
    // Per line: the workload's colour slot, its side, its points.
    type Points = Vec<(f64, f64)>;
    let lines: Vec<(usize, usize, Points)> = names
        .iter()
        .enumerate()
        .flat_map(|(slot, name)| {
            p.sides.iter().enumerate().filter_map(move |(side, s)| {
                let now = s.latest.as_ref()?.t;
                let pts = s
                    .history
                    .get(name)?
                    .iter()
                    .filter(|(at, _)| now - at <= WINDOW)
                    .map(|(at, v)| (at - now, *v))
                    .collect();
                Some((slot, side, pts))
            })
        })
        .collect();
    let top = lines
        .iter()
        .flat_map(|l| l.2.iter().map(|p| p.1))
        .fold(100.0_f64, f64::max);
    let sets: Vec<Dataset> = lines
        .iter()
        .map(|(slot, side, pts)| {
            let style = t.workload(*slot);
            Dataset::default()
                .marker(if *side == 0 {
                    t.marker(*slot)
                } else {
                    Marker::Dot
                })
                .graph_type(GraphType::Line)
                .style(if *side == 0 {
                    style
                } else {
                    style.add_modifier(Modifier::DIM)
                })
                .data(pts)
        })
        .collect();
    let legend: Vec<Span> = names
        .iter()
        .enumerate()
        .map(|(slot, n)| Span::styled(format!(" {}{n}", t.mark(slot)), t.workload(slot)))
        .collect();
    let mut title = vec![Span::styled("CPU % got", t.title())];
    title.extend(legend);
    let chart = Chart::new(sets)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.border())
                .title(Line::from(title)),
        )
        .x_axis(
            Axis::default()
                .bounds([-WINDOW, 0.0])
                .labels(vec![Span::raw("-1m"), Span::raw("-30s"), Span::raw("now")])
                .style(t.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(vec![Span::raw("0"), Span::raw(format!("{top:.0}"))])
                .style(t.dim()),
        )
        .legend_position(None);
    f.render_widget(chart, area);
}
