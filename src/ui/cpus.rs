//! The per-CPU view, in the charts' place: each CPU's busy share over the last interval as a
//! bar, split by whose tasks ran there (each workload in its colour, everything else as
//! "other"), then how often each workload's threads moved between CPUs. Many CPUs are laid out
//! in columns, their bars alone (the colours still say whose) when words no longer fit.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame as TermFrame;

use crate::model::CpuFrame;

use super::app::App;
use super::charts::titled_block;
use super::fmt::{self, si};
use super::status::clip_line;

/// The narrowest a CPU's entry is drawn with words (its name, a bar, its busy share and a
/// workload's), and with its bar alone.
const WORDS_WIDTH: usize = 40;
const BAR_ONLY_WIDTH: usize = 18;

pub fn draw(f: &mut TermFrame, area: Rect, app: &App) {
    let t = &app.theme;
    let frame = app.shown();
    let title = match frame.filter(|fr| fr.interval > 0.0) {
        Some(fr) => format!(
            "CPUs over the last {}:",
            fmt::interval(std::time::Duration::from_secs_f64(fr.interval))
        ),
        None => "CPUs".to_string(),
    };
    let names: Vec<(usize, &str)> = app
        .workloads
        .iter()
        .map(|w| (w.slot, w.decl.name.as_str()))
        .collect();
    let block = titled_block(
        app,
        &title,
        "busy, and whose tasks ran there",
        &names,
        area.width,
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let cpus = frame.map_or(&[][..], |fr| &fr.cpus[..]);
    if cpus.is_empty() {
        let words = "no per-CPU figures yet (they need two samples; a recording made before \
                     schedlab had them has none)";
        f.render_widget(
            Paragraph::new(Span::styled(words, t.dim()))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            inner,
        );
        return;
    }

    let most_columns = ((inner.width as usize + 1) / (BAR_ONLY_WIDTH + 1)).max(1);
    let mut footer = footer(app, inner.width as usize);
    // The note on how to read the view gives its line to CPUs that would not fit.
    if (inner.height as usize).saturating_sub(footer.len()) * most_columns < cpus.len() {
        footer.truncate(1);
    }
    let rows = inner.height.saturating_sub(footer.len() as u16).max(1) as usize;
    let columns = cpus.len().div_ceil(rows).clamp(1, most_columns);
    let per_column = cpus.len().div_ceil(columns);
    let shown = if per_column > rows {
        // Room for rows × columns entries, one of them saying how many are left out.
        rows * columns - 1
    } else {
        cpus.len()
    };
    let entry_w = (inner.width as usize + 1) / columns - 1;
    let label_w = cpus.iter().map(|c| label(c).len()).max().unwrap_or(4);
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new(); rows.min(per_column)];
    for (i, c) in cpus.iter().take(shown).enumerate() {
        let (col, row) = (i / rows.min(per_column), i % rows.min(per_column));
        let line = &mut lines[row];
        if col > 0 {
            line.push(Span::raw(" "));
        }
        let spans = entry(app, c, label_w, entry_w, columns == 1);
        let used: usize = spans.iter().map(|s| s.width()).sum();
        line.extend(spans);
        line.push(Span::raw(" ".repeat(entry_w.saturating_sub(used))));
    }
    let mut text: Vec<Line> = lines
        .into_iter()
        .map(|l| clip_line(l, inner.width as usize))
        .collect();
    if shown < cpus.len() {
        let more = format!(" +{} more CPUs", cpus.len() - shown);
        if let Some(last) = text.last_mut() {
            last.spans.push(Span::styled(more, t.dim()));
        }
    }
    // The footer sits at the bottom of the panel.
    let [top, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(footer.len() as u16)])
            .areas(inner);
    f.render_widget(Paragraph::new(text), top);
    f.render_widget(Paragraph::new(footer), bottom);
}

fn label(c: &CpuFrame) -> String {
    format!("cpu{}", c.id)
}

/// One CPU: "cpu0 ██████▒▒░░··· 72% ■ref-job 45% (3 tasks) ■fork_load 12% other 15%".
fn entry(app: &App, c: &CpuFrame, label_w: usize, width: usize, roomy: bool) -> Vec<Span<'static>> {
    let t = &app.theme;
    // A bar-only entry is its name, the bar and its share.
    let bar_w = if width < WORDS_WIDTH {
        width.saturating_sub(label_w + 6).max(4)
    } else {
        (width / 3).clamp(8, 40)
    };
    let ours: f64 = c.by_workload.iter().map(|s| s.share).sum();
    let busy = c.busy.map(|b| b.max(ours.min(1.0)));
    let other = busy.map_or(0.0, |b| (b - ours).max(0.0));
    let mut spans = vec![Span::styled(format!("{:<label_w$} ", label(c)), t.title())];

    // The bar: each workload's share in its colour, then the rest's, then idle. Cells come
    // from the running sum, so rounding never makes the bar longer than it is.
    let slot_of = |id: u32| app.workloads.iter().find(|w| w.id == id).map(|w| w.slot);
    let mut parts: Vec<(f64, &str, Style)> = c
        .by_workload
        .iter()
        .map(|s| {
            let style = slot_of(s.id).map_or_else(|| t.dim(), |k| t.workload(k));
            (s.share, "█", style)
        })
        .collect();
    parts.push((other, "▒", t.dim()));
    let (mut sum, mut drawn) = (0.0, 0usize);
    for (share, glyph, style) in parts {
        sum += share;
        let upto = ((sum.min(1.0)) * bar_w as f64).round() as usize;
        if upto > drawn {
            spans.push(Span::styled(glyph.repeat(upto - drawn), style));
            drawn = upto;
        }
    }
    spans.push(Span::styled("·".repeat(bar_w - drawn), t.dim()));
    spans.push(Span::raw(match busy {
        Some(b) => format!(" {:>3.0}%", b * 100.0),
        None => "   ?%".to_string(),
    }));
    if width < WORDS_WIDTH {
        return spans;
    }

    // Whose tasks: in full when the entry is the only one on its line and there is room.
    // A task that ran a little there is no "0%".
    let pct = |x: f64| {
        if x > 0.0 && x < 0.005 {
            "<1%".to_string()
        } else {
            format!("{:.0}%", x * 100.0)
        }
    };
    let mut words: Vec<(String, Style)> = c
        .by_workload
        .iter()
        .map(|s| {
            let style = slot_of(s.id).map_or_else(|| t.dim(), |k| t.workload(k));
            let tasks = if s.tasks == 1 { "task" } else { "tasks" };
            let long = format!(" ■{} {} ({} {tasks})", s.name, pct(s.share), s.tasks);
            let short = format!(" ■{} {}", s.name, pct(s.share));
            (if roomy { long } else { short }, style)
        })
        .collect();
    if other >= 0.005 {
        words.push((format!(" other {}", pct(other)), t.dim()));
    }
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let long: usize = words.iter().map(|(w, _)| w.chars().count()).sum();
    if roomy && used + long > width {
        // Drop the task counts rather than a workload.
        for (w, _) in &mut words {
            if let Some(i) = w.find(" (") {
                w.truncate(i);
            }
        }
    }
    spans.extend(words.into_iter().map(|(w, s)| Span::styled(w, s)));
    spans
}

/// Migrations per second per workload, and how to read the view, as room allows.
fn footer(app: &App, width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut moves = vec![Span::raw("moves between CPUs a second:")];
    let mut known = false;
    for w in &app.workloads {
        if let Some(rate) = app.frame_of(w.id).and_then(|f| f.migrations_per_sec) {
            known = true;
            moves.push(Span::styled(
                format!(" ■{} {}", w.decl.name, si(rate)),
                t.workload(w.slot),
            ));
        }
    }
    if !known {
        moves.push(Span::styled(" not known yet", t.dim()));
    }
    vec![
        clip_line(moves, width),
        clip_line(
            vec![Span::styled(
                "a task counts on the CPU it was last seen on; ▒ other tasks, · idle",
                t.dim(),
            )],
            width,
        ),
    ]
}
