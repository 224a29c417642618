//! The lines around the table and charts: the status line (sampling, machine, the observer's
//! own cost), the selected workload's details (why its fair share is what it is), and the key
//! hints or the last message.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame as TermFrame;

use crate::model::{Accounting, WorkloadFrame, WorkloadState};
use crate::supervisor::Program;

use super::app::{App, WorkloadView};
use super::fmt::{self, clip, pct, si};
use super::table::knobs_words;
use super::theme::Verdict;

/// A sample this late (ms) is worth a word on screen.
const LATE_MS: f64 = 5.0;

/// ", sample 45 ms late" / " +45ms", ", 2 samples missed" / " miss 2", or nothing.
fn lateness_words(fr: &crate::model::Frame) -> (String, String) {
    if fr.missed > 0 {
        let s = if fr.missed == 1 { "" } else { "s" };
        (
            format!(", {} sample{s} missed", fr.missed),
            format!(" miss {}", fr.missed),
        )
    } else if fr.late_ms >= LATE_MS {
        (
            format!(", sample {:.0} ms late", fr.late_ms),
            format!(" +{:.0}ms", fr.late_ms),
        )
    } else {
        (String::new(), String::new())
    }
}

/// An item's words for a machine figure shown only while above zero (`m` is the shown Frame's
/// machine, zero without one); an empty item else.
fn if_positive(x: f64, words: impl Fn(f64) -> (String, String)) -> (String, String) {
    if x > 0.0 {
        words(x)
    } else {
        Default::default()
    }
}

/// Total width of spans.
fn width(spans: &[Span]) -> usize {
    spans.iter().map(|s| s.width()).sum()
}

/// The status line's items, each in its long and its short form (all fit in 80 columns in
/// their short forms); an empty pair is an item left out.
fn status_items(app: &App) -> Vec<(String, String)> {
    let m = app.shown().map(|fr| fr.machine.clone()).unwrap_or_default();
    let frame = app.shown();
    let mut items: Vec<(String, String)> = Vec::new();
    // A served lab says whose it is first, however narrow the screen.
    if let Some(addr) = &app.remote {
        items.push((format!("watching {addr}"), format!("@{addr}")));
    }
    if let Some(r) = app.replay {
        let at = app.view_end();
        items.push((
            format!("replay {at:.1} s / {:.1} s", r.duration),
            format!("{at:.1}/{:.1} s", r.duration),
        ));
    }
    items.extend([
        (
            format!("every {}", fmt::interval(app.interval)),
            format!("tick {}", fmt::interval(app.interval)),
        ),
        (
            format!("window {}", fmt::span(app.window)),
            format!("win {}", fmt::span(app.window)),
        ),
        // Optional: the RATIO column's header always names the verdict window.
        (
            format!("verdicts over {}", fmt::span(m.verdict_window)),
            format!("vrd {}", fmt::span(m.verdict_window)),
        ),
        (format!("{} CPUs", app.cpus), format!("{} CPU", app.cpus)),
        (
            format!("autogroup {}", if m.autogroup { "on" } else { "off" }),
            format!("autogrp {}", if m.autogroup { "on" } else { "off" }),
        ),
        (
            format!("ctxt {}/s", si(m.ctxt_per_sec)),
            format!("{} cs/s", si(m.ctxt_per_sec)),
        ),
        match m.psi_some_avg10 {
            Some(p) => (format!("PSI cpu {p:.1}%"), format!("PSI {p:.1}")),
            None => ("PSI n/a".into(), "PSI -".into()),
        },
        // The rest of the machine is read about once a second: how old its figures are.
        if_positive(m.rest_age, |age| {
            (
                format!("rest read {age:.1} s ago"),
                format!("rest {age:.1}s"),
            )
        }),
        match frame {
            // Many threads: switches are read less often than every tick (the probe's budget).
            Some(fr) if fr.status_interval > app.interval.as_secs_f64().max(1.0) + 0.05 => (
                format!("switches every {:.0} s", fr.status_interval),
                format!("cs {:.0}s", fr.status_interval),
            ),
            _ => (String::new(), String::new()),
        },
        match frame {
            // The observer's cost, and, when its sample came late or it missed some, by how
            // much: every figure on screen carries the observer's effect.
            Some(fr) => {
                let (long, short) = lateness_words(fr);
                let rt = if fr.observer_rt { " rt" } else { "" };
                (
                    format!("self {:.1}% CPU{rt}{long}", fr.observer_cpu_pct),
                    format!("self {:.1}%{rt}{short}", fr.observer_cpu_pct),
                )
            }
            None => ("self -".into(), "self -".into()),
        },
        // The host stopped this VM: time its kernel charged to whatever ran.
        if_positive(m.host_stall_ms, |ms| {
            (
                format!("host stopped a CPU {ms:.0} ms"),
                format!("host {ms:.0}ms"),
            )
        }),
        match frame {
            Some(fr) if fr.workloads.len() > 1 && fr.jain_index > 0.0 => {
                (format!("Jain {:.2}", fr.jain_index), String::new())
            }
            _ => (String::new(), String::new()),
        },
    ]);
    items
}

pub(crate) fn draw_status(f: &mut TermFrame, area: Rect, app: &App) {
    let t = &app.theme;
    let items = status_items(app);
    let sep = Span::styled(" │ ", t.dim());
    // The verdict window's item (after the replay's position, the tick and the chart window).
    let optional = usize::from(app.remote.is_some()) + usize::from(app.replay.is_some()) + 2;
    let build = |long: bool, title: u8, keep: usize, with_optional: bool| -> Vec<Span> {
        let mut spans = Vec::new();
        if app.replay.is_some_and(|r| r.paused) {
            spans.push(Span::styled(" paused ", t.frozen()));
            spans.push(Span::raw(" "));
        }
        if app.frozen.is_some() {
            spans.push(Span::styled(" FROZEN ", t.frozen()));
            spans.push(Span::raw(" "));
        }
        let mut first = true;
        match title {
            2 => spans.push(Span::styled(format!("schedlab: {}", app.title), t.title())),
            1 => spans.push(Span::styled("schedlab", t.title())),
            _ => {}
        }
        if title > 0 {
            first = false;
        }
        for (i, (l, s)) in items.iter().enumerate().take(keep) {
            if i == optional && !with_optional {
                continue;
            }
            let text = if long { l } else { s };
            if !text.is_empty() {
                if !first {
                    spans.push(sep.clone());
                }
                first = false;
                spans.push(Span::raw(text.clone()));
            }
        }
        spans
    };
    let w = area.width as usize;
    let spans = [
        build(true, 2, items.len(), true),
        build(true, 2, items.len(), false),
        build(true, 1, items.len(), true),
        build(true, 1, items.len(), false),
        build(false, 1, items.len(), true),
        build(false, 1, items.len(), false),
        build(false, 0, items.len(), true),
        build(false, 0, items.len(), false),
    ]
    .into_iter()
    // Still too wide (a replay's position comes first): drop items from the end.
    .chain(
        (1..items.len())
            .rev()
            .map(|keep| build(false, 0, keep, false)),
    )
    .find(|s| width(s) <= w)
    .unwrap_or_else(|| build(false, 0, 1, false));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The command line a workload runs, as a person would type it.
fn command_line(w: &WorkloadView) -> String {
    if let Some(Ok(sel)) = w.decl.kind.selector() {
        return format!("attached {sel} (not started by schedlab)");
    }
    let words = match w.decl.kind.program() {
        Program::SelfExe(args) => std::iter::once("schedlab".to_string())
            .chain(args)
            .collect(),
        Program::Command(argv) => argv,
    };
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// A word as a shell would need it typed.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Why `w` is due what it is due: the model's reason, in words.
pub(crate) fn explain_fair(wf: &WorkloadFrame) -> String {
    wf.due.text()
}

pub(crate) fn draw_details(f: &mut TermFrame, area: Rect, app: &App) {
    let t = &app.theme;
    let Some(w) = app.selected_view() else {
        let text = "No workloads: press a to add one.";
        f.render_widget(Paragraph::new(Span::styled(text, t.dim())), area);
        return;
    };
    let colour = t.workload(w.slot);
    let width = area.width as usize;
    let wf = app.frame_of(w.id);

    // Line 1: what it is and how it was placed.
    let group = wf.map_or_else(String::new, |f| format!(" │ group {}", f.group));
    let first = vec![
        Span::styled(
            format!("■ {}", w.decl.name),
            colour.add_modifier(ratatui::style::Modifier::BOLD),
        ),
        Span::raw(format!(
            " │ {} │ {} │ {}{}",
            command_line(w),
            knobs_words(w),
            w.decl.knobs.placement.words(),
            group
        )),
    ];

    // Then pieces that flow onto the lines left.
    let pieces = detail_pieces(app, w, wf);

    let mut lines = vec![clip_line(first, width)];
    let mut current: Vec<Span<'static>> = Vec::new();
    for piece in pieces {
        let sep = if current.is_empty() { "  " } else { " │ " };
        if !current.is_empty() && self::width(&current) + sep.len() + self::width(&piece) > width {
            lines.push(clip_line(std::mem::take(&mut current), width));
        }
        let sep = if current.is_empty() { "  " } else { " │ " };
        current.push(Span::styled(sep, t.dim()));
        current.extend(piece);
    }
    if !current.is_empty() {
        lines.push(clip_line(current, width));
    }
    lines.truncate(area.height as usize);
    f.render_widget(Paragraph::new(lines), area);
}

/// The details' pieces that flow onto the lines below the first: the verdict, why it is due
/// what it is due, and the run's story.
fn detail_pieces(
    app: &App,
    w: &WorkloadView,
    wf: Option<&WorkloadFrame>,
) -> Vec<Vec<Span<'static>>> {
    let t = &app.theme;
    let mut pieces: Vec<Vec<Span<'static>>> = Vec::new();
    // A failed workload's own last word comes first: it says why.
    if let Some(last) = wf.and_then(|wf| wf.stderr.last()) {
        pieces.push(vec![
            Span::styled("stderr", t.warn()),
            Span::styled(" (v: more)", t.dim()),
            Span::styled(format!(": {last}"), t.warn()),
        ]);
    }
    match (wf, app.shown()) {
        (Some(wf), Some(frame)) if !matches!(wf.state, WorkloadState::Starting) => {
            let v = wf.verdict;
            let mut got = vec![Span::raw(format!(
                "got {}% of a CPU, due {}% over {}",
                pct(wf.window_received),
                pct(wf.window_fair),
                fmt::span(frame.machine.verdict_window),
            ))];
            if v != Verdict::None {
                got.push(Span::raw(format!(" → {:.2} ", wf.window_ratio)));
                got.push(Span::styled(v.word(), t.verdict(v)));
            }
            pieces.push(got);
            pieces.push(vec![Span::raw(explain_fair(wf))]);
            let cause = wf.cause.text();
            if !cause.is_empty() {
                pieces.push(vec![Span::styled(cause, t.verdict(v))]);
            }
            if let Some(us) = wf.wake_delay_us.filter(|_| wf.late) {
                pieces.push(vec![Span::styled(
                    format!(
                        "late: woken tasks waited {} before running (latency, not CPU)",
                        fmt::latency(us)
                    ),
                    t.warn(),
                )]);
            }
            if wf.throttled_pct >= 1.0 {
                pieces.push(vec![Span::raw(format!(
                    "throttled {:.0}% of the time by its quota",
                    wf.throttled_pct
                ))]);
            }
            if let WorkloadState::Gone(why)
            | WorkloadState::Partial(why)
            | WorkloadState::Ended(why) = &wf.state
            {
                pieces.push(vec![Span::styled(why.clone(), t.warn())]);
            }
            if let Some(p) = wf.progress.filter(|_| wf.state == WorkloadState::Running) {
                pieces.push(vec![Span::raw(format!("run {:.0}% done", p * 100.0))]);
            }
        }
        _ => pieces.push(vec![Span::styled("starting…", t.dim())]),
    }
    if let Some(r) = w.runs.last() {
        pieces.push(vec![Span::raw(format!(
            "last run: {}/s {} over {}{}",
            si(r.ops_per_sec),
            w.decl.kind.ops_unit(),
            fmt::span(r.seconds),
            if w.runs.len() > 1 {
                format!(" ({} runs)", w.runs.len())
            } else {
                String::new()
            }
        ))]);
    }
    if w.looping {
        pieces.push(vec![Span::raw("↻ loops")]);
    }
    if let Some(wf) = wf {
        pieces.push(vec![Span::styled(
            match wf.accounting {
                Accounting::Cgroup => "CPU from its cgroup (exact)",
                Accounting::Proc => "CPU from /proc",
            },
            t.dim(),
        )]);
    }
    pieces
}

/// Cuts a line of spans to `width` columns.
pub(super) fn clip_line(spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
    let mut out = Vec::new();
    let mut used = 0;
    for s in spans {
        let w = s.width();
        if used + w <= width {
            used += w;
            out.push(s);
        } else {
            let room = width.saturating_sub(used);
            if room > 0 {
                out.push(Span::styled(clip(&s.content, room), s.style));
            }
            break;
        }
    }
    Line::from(out)
}

/// Key hints, or the last message in their place.
pub(crate) fn draw_keys(f: &mut TermFrame, area: Rect, app: &App) {
    let t = &app.theme;
    let room = area.width as usize;
    if let Some(m) = &app.message {
        let style = if m.error { t.error() } else { t.warn() };
        // Too long for the line: cut, with the key that shows it whole.
        const MORE: &str = " m: all";
        let line = if m.text.chars().count() > room {
            clip_line(
                vec![
                    Span::styled(clip(&m.text, room.saturating_sub(MORE.len())), style),
                    Span::styled(MORE, t.key()),
                ],
                room,
            )
        } else {
            Line::from(Span::styled(m.text.clone(), style))
        };
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let replay_hints: &[(&str, &str)] = &[
        ("?", "help"),
        ("space", "pause"),
        (", .", "step"),
        ("PgUp PgDn", "seek"),
        ("f", "freeze"),
        ("L", "latency"),
        ("q", "quit"),
        ("c", "CPUs"),
        ("z Z", "zoom"),
    ];
    let live_hints: &[(&str, &str)] = &[
        ("?", "help"),
        ("a", "add"),
        ("s", "stop/start"),
        ("e", "knobs"),
        ("[ ]", "nice"),
        ("g", "placement"),
        ("L", "latency"),
        ("c", "CPUs"),
        ("space", "freeze"),
        ("z Z", "zoom"),
        ("+ -", "interval"),
        ("q", "quit"),
    ];
    let hints = if app.replay.is_some() {
        replay_hints
    } else {
        live_hints
    };
    let mut spans = Vec::new();
    for (k, what) in hints {
        let add = vec![
            Span::styled(*k, t.key()),
            Span::styled(format!(" {what}  "), Style::new()),
        ];
        if width(&spans) + width(&add) > room {
            break;
        }
        spans.extend(add);
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The last lines a failed workload wrote on stderr, over the dashboard (any key closes it).
pub(crate) fn draw_stderr(f: &mut TermFrame, area: Rect, app: &App, id: u32) {
    let Some(wf) = app.frame_of(id) else {
        return;
    };
    let lines = wf.stderr.iter().map(|l| Line::raw(l.clone())).collect();
    draw_lines(
        f,
        area,
        app,
        &format!(" {}: its last lines on stderr ", wf.name),
        lines,
        true,
    );
}

/// The last messages, each in full, the newest last (any key closes it).
pub(crate) fn draw_messages(f: &mut TermFrame, area: Rect, app: &App) {
    let t = &app.theme;
    let lines = app
        .messages
        .iter()
        .map(|m| {
            let style = if m.error { t.error() } else { Style::new() };
            Line::from(Span::styled(m.text.clone(), style))
        })
        .collect();
    draw_lines(f, area, app, " the last messages ", lines, true);
}

/// What the kernel's events said of a row (`E`).
pub(crate) fn draw_evidence(f: &mut TermFrame, area: Rect, app: &App, lines: &[String]) {
    let lines = lines.iter().map(|l| Line::raw(l.clone())).collect();
    // The reading and the workloads come first: they stay in view, the rest's groups go.
    draw_lines(f, area, app, " the kernel's events ", lines, false);
}

/// `lines` in a box over the dashboard, long ones wrapped, with a closing hint.
fn draw_lines(
    f: &mut TermFrame,
    area: Rect,
    app: &App,
    title: &str,
    mut lines: Vec<Line>,
    newest_in_view: bool,
) {
    use ratatui::widgets::Wrap;
    let t = &app.theme;
    let w = area.width.saturating_sub(4).min(100);
    let inner = w.saturating_sub(2).max(1) as usize;
    // Rows once long lines wrap (roughly: by characters), plus the hint and the borders.
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled(" any key closes", t.dim())));
    let h = (rows as u16 + 4).min(area.height);
    // The newest lines are the ones to keep in view when they do not all fit (or the first).
    let hidden = if newest_in_view {
        (rows + 2).saturating_sub(h.saturating_sub(2) as usize)
    } else {
        0
    };
    let body = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((hidden as u16, 0));
    super::help::draw_popup(f, super::help::centered(area, w, h), title, t, body);
}
