//! The help overlay: every key (from input::KEYS), and how to read the screen.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame as TermFrame;

use super::app::App;
use super::input::keys_for;
use super::theme::Theme;

const READING: &[&str] = &[
    "CPU% and FAIR% are % of one CPU (200 = two whole CPUs).",
    "FAIR%: weighted max-min share of what the tasks wanted, by nice",
    "weight, per autogroup (session) or cgroup first. RATIO = got/fair:",
    "STARVED < 0.6 ≤ short < 0.9 ≤ fair ≤ 1.15 < ahead.",
    "late: its woken tasks waited 4 ms or more before running",
    "(latency, not CPU); P99 of the rest: its mean wakeup delay.",
];

pub fn draw(f: &mut TermFrame, area: Rect, app: &App) {
    let t = &app.theme;
    let replay = app.replay.is_some();
    let key_width = keys_for(replay)
        .map(|(_, k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines: Vec<Line> = Vec::new();
    if let Some(fd) = &app.finding {
        // The finding's text first: what the screen shows and why it matters.
        lines.push(Line::from(Span::styled(fd.title.clone(), t.title())));
        let width = (area.width as usize).saturating_sub(6).clamp(40, 76);
        let text = crate::record::text::wrap(fd.text.trim(), width, 0);
        lines.extend(text.lines().map(|l| Line::raw(l.to_owned())));
        lines.push(Line::raw(""));
    }
    let mut group = "";
    for (g, keys, what) in keys_for(replay) {
        if *g != group {
            if !group.is_empty() && area.height >= 30 {
                lines.push(Line::raw(""));
            }
            group = g;
            lines.push(Line::from(Span::styled(*g, t.title())));
        }
        lines.push(Line::from(vec![
            Span::styled(format!("  {keys:<key_width$}  "), t.key()),
            Span::raw(*what),
        ]));
    }
    // How to read the screen, when there is room (README has it all).
    if lines.len() + READING.len() + 3 <= area.height as usize {
        lines.push(Line::raw(""));
        lines.extend(
            READING
                .iter()
                .map(|l| Line::from(Span::styled(*l, t.dim()))),
        );
    }

    let content_w = lines.iter().map(Line::width).max().unwrap_or(40) as u16 + 4;
    let w = content_w.min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let body = Paragraph::new(lines).wrap(Wrap { trim: false });
    draw_popup(f, centered(area, w, h), " Help: any key closes ", t, body);
}

/// Draws `body` in a bordered, titled box at `popup`, over what is there.
pub(crate) fn draw_popup(f: &mut TermFrame, popup: Rect, title: &str, t: &Theme, body: Paragraph) {
    f.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border())
        .title(Span::styled(title.to_string(), t.title()))
        .style(t.popup());
    f.render_widget(body.block(block), popup);
}

/// A `w`×`h` rectangle in the middle of `area`.
pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}
