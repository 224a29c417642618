//! The per-CPU view, in the charts' place: each CPU's busy share over the last interval as a
//! bar, split by whose tasks ran there (each workload in its colour, everything else as
//! "other"), then how often each workload's threads moved between CPUs. Many CPUs are laid out
//! in columns, their bars alone (the colours still say whose) when words no longer fit. More
//! than fit so (a 256-CPU machine) are a grid of one cell per CPU, its height how busy and its
//! colour whose tasks ran most there, above a summary and the busiest CPUs with their bars.

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

    let width = inner.width as usize;
    let mut footer = footer(app, width);
    let room = (inner.height as usize).saturating_sub(footer.len());
    let text = if room * most_columns(width) >= cpus.len() {
        let all: Vec<&CpuFrame> = cpus.iter().collect();
        columns(app, &all, room.max(1), width)
    } else {
        // Too many CPUs for a bar each: a cell each, then the busiest with their bars.
        let long = "a cell a CPU: ▁ to █ how busy, in the colour of the workload that ran most \
                    there (dim: other tasks); · idle. A task counts on the CPU it was last seen on";
        let short = "a cell a CPU: ▁ to █ how busy, coloured by who ran most there; · idle";
        let legend = if long.chars().count() <= width {
            long
        } else {
            short
        };
        footer[1] = clip_line(vec![Span::styled(legend, t.dim())], width);
        let mut lines = grid(app, cpus, width, room);
        lines.extend(summary(app, cpus, width));
        let left = room.saturating_sub(lines.len() + 1);
        if left > 0 {
            lines.push(Line::from(Span::styled("busiest first:", t.dim())));
            let mut busiest: Vec<&CpuFrame> = cpus.iter().collect();
            // Stable: among equals the lower id first.
            busiest.sort_by(|a, b| b.busy.unwrap_or(0.0).total_cmp(&a.busy.unwrap_or(0.0)));
            lines.extend(columns(app, &busiest, left, width));
        }
        lines.truncate(room.max(1));
        lines
    };
    // The footer sits at the bottom of the panel.
    let [top, bottom] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(footer.len() as u16)])
            .areas(inner);
    f.render_widget(Paragraph::new(text), top);
    f.render_widget(Paragraph::new(footer), bottom);
}

/// `cpus` in columns of `rows` lines: with words while each column has room for them, bars
/// alone past that, and what does not fit counted.
fn columns(app: &App, cpus: &[&CpuFrame], rows: usize, width: usize) -> Vec<Line<'static>> {
    let columns = cpus.len().div_ceil(rows).clamp(1, most_columns(width));
    let per_column = cpus.len().div_ceil(columns);
    let shown = if per_column > rows {
        // Room for rows × columns entries, one of them saying how many are left out.
        rows * columns - 1
    } else {
        cpus.len()
    };
    let entry_w = (width + 1) / columns - 1;
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
    let mut text: Vec<Line> = lines.into_iter().map(|l| clip_line(l, width)).collect();
    if shown < cpus.len() {
        let more = format!(" +{} more CPUs", cpus.len() - shown);
        if let Some(last) = text.last_mut() {
            last.spans.push(Span::styled(more, app.theme.dim()));
        }
    }
    text
}

/// How many columns of bars alone fit in `width`.
fn most_columns(width: usize) -> usize {
    ((width + 1) / (BAR_ONLY_WIDTH + 1)).max(1)
}

/// Below this share of its interval busy, a CPU counts as idle (the grid's `·`).
const IDLE_BELOW: f64 = 0.05;

/// The glyph of a CPU `busy` share of its interval.
fn cell(busy: Option<f64>) -> &'static str {
    const LEVELS: [&str; 8] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];
    match busy {
        None => "?",
        Some(b) if b < IDLE_BELOW => "·",
        Some(b) => LEVELS[((b * 8.0).ceil() as usize).clamp(1, 8) - 1],
    }
}

/// Every CPU as one cell, as many to a line as fit in groups of 8 (64, 32, 16 or 8 a line),
/// each line labelled with its first and last CPU: "cpu64-127  ▆▆▇█▆▅▆▇ ▆▆▇█▆▅▆▇ …". At most
/// `rows` lines.
fn grid(app: &App, cpus: &[CpuFrame], width: usize, rows: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let label_of = |chunk: &[CpuFrame]| {
        format!(
            "cpu{}-{}",
            chunk[0].id,
            chunk.last().map_or(chunk[0].id, |c| c.id)
        )
    };
    let fits = |n: usize| {
        let label_w = cpus.chunks(n).map(|c| label_of(c).len()).max().unwrap_or(0);
        label_w + 1 + n + n / 8 - 1 <= width
    };
    let (per_line, spaced) = [64, 32, 16, 8]
        .into_iter()
        .find(|&n| fits(n))
        .map_or((width.saturating_sub(12).max(1), false), |n| (n, true));
    let label_w = cpus
        .chunks(per_line)
        .map(|c| label_of(c).len())
        .max()
        .unwrap_or(0);
    let slot_of = |id: u32| app.workloads.iter().find(|w| w.id == id).map(|w| w.slot);
    let mut lines: Vec<Line<'static>> = Vec::new();
    for chunk in cpus.chunks(per_line).take(rows) {
        let mut spans = vec![Span::styled(
            format!("{:<label_w$} ", label_of(chunk)),
            t.title(),
        )];
        for (i, c) in chunk.iter().enumerate() {
            if spaced && i > 0 && i % 8 == 0 {
                spans.push(Span::raw(" "));
            }
            // The colour of whoever ran most there: the busiest workload, or the rest.
            let ours: f64 = c.by_workload.iter().map(|s| s.share).sum();
            let other = c.busy.map_or(0.0, |b| (b - ours).max(0.0));
            let top = c
                .by_workload
                .iter()
                .filter(|s| s.share > other)
                .max_by(|a, b| a.share.total_cmp(&b.share));
            let style = top
                .and_then(|s| slot_of(s.id))
                .map_or_else(|| t.dim(), |k| t.workload(k));
            spans.push(Span::styled(cell(c.busy), style));
        }
        lines.push(clip_line(spans, width));
    }
    let drawn = lines.len() * per_line;
    if drawn < cpus.len() {
        if let Some(last) = lines.last_mut() {
            let more = format!(" +{} more CPUs", cpus.len() - drawn);
            last.spans.push(Span::styled(more, t.dim()));
        }
    }
    lines
}

/// How busy the CPUs were, and each workload's CPUs and on how many: two lines.
fn summary(app: &App, cpus: &[CpuFrame], width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let known: Vec<f64> = cpus.iter().filter_map(|c| c.busy).collect();
    let mean = known.iter().sum::<f64>() / known.len().max(1) as f64;
    let idle = known.iter().filter(|&&b| b < IDLE_BELOW).count();
    let full = known.iter().filter(|&&b| b >= 0.95).count();
    let machine = format!(
        "{} CPUs {:.0}% busy on average: {full} at 95% or more, {idle} idle",
        cpus.len(),
        mean * 100.0
    );
    let mut spans = vec![Span::raw("whose, in CPUs (on how many):")];
    for w in &app.workloads {
        let shares: Vec<f64> = cpus
            .iter()
            .filter_map(|c| c.by_workload.iter().find(|s| s.id == w.id))
            .map(|s| s.share)
            .filter(|&s| s > 0.0)
            .collect();
        if shares.is_empty() {
            continue;
        }
        spans.push(Span::styled(
            format!(
                " ■{} {} ({})",
                w.decl.name,
                si(shares.iter().sum()),
                shares.len()
            ),
            t.workload(w.slot),
        ));
    }
    vec![
        clip_line(vec![Span::raw(machine)], width),
        clip_line(spans, width),
    ]
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
