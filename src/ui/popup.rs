//! The picker's list of workload kinds and the forms (new workload, knobs), drawn over the
//! dashboard, which keeps updating underneath.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame as TermFrame;

use super::app::App;
use super::fmt::clip;
use super::form::Form;
use super::help::{centered, draw_popup};
use super::picker::TEMPLATES;

pub(crate) fn draw_picker(f: &mut TermFrame, area: Rect, app: &App, selected: usize) {
    let t = &app.theme;
    let label_w = TEMPLATES
        .iter()
        .map(|x| x.label().len())
        .max()
        .unwrap_or(10);
    let w = 78.min(area.width);
    let mut lines = Vec::new();
    for (i, tpl) in TEMPLATES.iter().enumerate() {
        let key = tpl.key().unwrap_or(' ');
        let text = format!(" {key} {:<label_w$}  {}", tpl.label(), tpl.about());
        let text = clip(&text, w.saturating_sub(2) as usize);
        lines.push(if i == selected {
            Line::from(Span::styled(
                format!("{text:<width$}", width = w.saturating_sub(2) as usize),
                t.field_focus(),
            ))
        } else {
            Line::raw(text)
        });
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled(
        " ↑↓ choose · Enter or its number: parameters · Esc close",
        t.dim(),
    )));
    let popup = centered(area, w, lines.len() as u16 + 2);
    draw_popup(f, popup, " Add a workload ", t, Paragraph::new(lines));
}

pub(crate) fn draw_form(f: &mut TermFrame, area: Rect, app: &App, form: &Form, verb: &str) {
    let t = &app.theme;
    let w = 64.min(area.width);
    let inner_w = w.saturating_sub(2) as usize;
    let label_w = form.fields.iter().map(|x| x.label.len()).max().unwrap_or(8);
    let value_w = inner_w.saturating_sub(label_w + 4);
    // Fields that fit: keep the focused one in view.
    let room = area.height.saturating_sub(5) as usize;
    let first = form.focus.saturating_sub(room.saturating_sub(1));
    let mut lines = Vec::new();
    for (i, field) in form.fields.iter().enumerate().skip(first).take(room) {
        let value = clip(&field.display(), value_w);
        let focused = i == form.focus;
        let cursor = if focused && matches!(field.value, super::form::Value::Text(_)) {
            "▏"
        } else {
            ""
        };
        lines.push(Line::from(vec![
            Span::raw(format!(" {:>label_w$}  ", field.label)),
            Span::styled(
                format!(
                    "{value}{cursor}{:pad$}",
                    "",
                    pad = value_w.saturating_sub(value.chars().count() + cursor.len().min(1))
                ),
                if focused {
                    t.field_focus()
                } else {
                    ratatui::style::Style::new()
                },
            ),
        ]));
    }
    let foot = match &form.error {
        Some(e) => Span::styled(clip(e, inner_w), t.error()),
        None => Span::styled(clip(form.focused_hint(), inner_w), t.dim()),
    };
    lines.push(Line::from(foot));
    lines.push(Line::from(Span::styled(
        clip(
            &format!("Tab/↑↓ field · ←→ choose · Enter {verb} · Esc back"),
            inner_w,
        ),
        t.dim(),
    )));
    let popup = centered(area, w, lines.len() as u16 + 2);
    let title = format!(" {} ", form.title);
    draw_popup(f, popup, &title, t, Paragraph::new(lines));
}

/// Asks before killing an attached row's processes: schedlab did not start them, and never
/// signals them otherwise.
pub(crate) fn draw_confirm_kill(f: &mut TermFrame, area: Rect, app: &App, id: u32) {
    let t = &app.theme;
    let name = app
        .workloads
        .iter()
        .find(|w| w.id == id)
        .map_or("it", |w| w.decl.name.as_str());
    let lines = vec![
        Line::raw(format!("Kill the processes attached as {name}?")),
        Line::raw("schedlab did not start them; their knobs are put back first."),
        Line::raw(""),
        Line::from(vec![
            Span::styled("y", t.key()),
            Span::raw(": send them SIGTERM   any other key: keep them"),
        ]),
    ];
    let w = lines.iter().map(Line::width).max().unwrap_or(40) as u16 + 4;
    let body = Paragraph::new(lines);
    draw_popup(
        f,
        centered(area, w, 6),
        " Kill what schedlab did not start ",
        t,
        body,
    );
}
