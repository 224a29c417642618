//! The latency panel: how long each workload's own unit of work took (a ping-pong's round
//! trip, a hackbench message, a fork cycle, a chat delivery, a wakeup), as p50, p99 and p99.9
//! per interval over the charts' time window. Latencies span decades (a round trip takes
//! microseconds, a wakeup behind a real-time hog most of a second), so the scale is log10 of
//! µs. Below the chart, each workload's latest figures in words: "latency unavailable" when
//! its stamps did not survive the trip. A workload that times nothing has no line at all.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame as TermFrame;

use crate::model::Latency;

use super::app::{App, WorkloadView};
use super::charts::{decade_axis, thin, titled_block, x_axis};
use super::fmt::{clip, latency as dur};

/// Lines the chart keeps however many workloads the words below it name.
const MIN_PLOT_HEIGHT: u16 = 5;
/// Below this latency (µs) the scale stops: the histograms' resolution is 32 ns.
const FLOOR_US: f64 = 0.1;

/// One workload's percentiles as runs of consecutive timed intervals (a gap, when nothing
/// was timed or the figure was unavailable, is not bridged by a line), in log10 µs.
struct Lines {
    slot: usize,
    /// p50, p99, p99.9; each a list of runs of (seconds before now, log10 µs).
    runs: [Vec<Vec<(f64, f64)>>; 3],
}

pub fn draw(f: &mut TermFrame, area: Rect, app: &App) {
    let timing: Vec<&WorkloadView> = app
        .workloads
        .iter()
        .filter(|w| times_something(app, w))
        .collect();
    let names: Vec<(usize, &str)> = timing
        .iter()
        .map(|w| (w.slot, w.decl.name.as_str()))
        .collect();
    let block = titled_block(app, "Latency", "p50 • p99 ⣿ p99.9 ⠂", &names, area.width);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if timing.is_empty() {
        let words = Paragraph::new(Span::styled(
            "none of these workloads times its operations",
            app.theme.dim(),
        ))
        .wrap(ratatui::widgets::Wrap { trim: true });
        f.render_widget(words, inner);
        return;
    }

    let mut words = words_of(app, &timing, inner.width as usize);
    let room = inner.height.saturating_sub(MIN_PLOT_HEIGHT) as usize;
    if words.len() > room {
        let left = words.len() + 1 - room.max(1);
        words.truncate(room.saturating_sub(1));
        words.push(Line::from(Span::styled(
            format!("+{left} more (a taller terminal shows them)"),
            app.theme.dim(),
        )));
        words.truncate(room);
    }
    let [plot_a, words_a] = Layout::vertical([
        Constraint::Min(MIN_PLOT_HEIGHT.min(inner.height)),
        Constraint::Length(words.len() as u16),
    ])
    .areas(inner);

    let lines: Vec<Lines> = timing
        .iter()
        .map(|w| lines_of(app, w, 2 * plot_a.width as usize))
        .collect();
    draw_chart(f, plot_a, app, &lines);
    f.render_widget(Paragraph::new(words), words_a);
}

/// It has a natural unit: the shown Frame says how long its operations took (or that it
/// cannot tell), or the window holds figures of earlier intervals.
fn times_something(app: &App, w: &WorkloadView) -> bool {
    app.frame_of(w.id).is_some_and(|f| f.latency.is_some())
        || w.series
            .window(app.view_end() - app.window, app.view_end())
            .any(|p| p.latency.is_some())
}

fn lines_of(app: &App, w: &WorkloadView, columns: usize) -> Lines {
    let end = app.view_end();
    let mut runs: [Vec<Vec<(f64, f64)>>; 3] = Default::default();
    let mut run: Vec<(f64, [f64; 3])> = Vec::new();
    let mut flush = |run: &mut Vec<(f64, [f64; 3])>| {
        if run.is_empty() {
            return;
        }
        for (k, out) in runs.iter_mut().enumerate() {
            let pts = run.iter().map(|&(t, v)| (t, v[k]));
            let mut pts = thin(pts, -app.window, app.window, columns);
            pts.iter_mut().for_each(|p| p.1 = p.1.max(FLOOR_US).log10());
            out.push(pts);
        }
        run.clear();
    };
    for p in w.series.window(end - app.window, end) {
        match p.latency {
            Some(v) => run.push((p.t - end, v)),
            None => flush(&mut run),
        }
    }
    flush(&mut run);
    Lines { slot: w.slot, runs }
}

fn draw_chart(f: &mut TermFrame, area: Rect, app: &App, lines: &[Lines]) {
    let all = lines
        .iter()
        .flat_map(|l| l.runs.iter().flatten().flatten())
        .map(|p| p.1);
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (lo, hi) = if lo.is_finite() {
        let lo = lo.floor();
        (lo, hi.ceil().max(lo + 1.0))
    } else {
        // Nothing timed in the window yet: 1 µs to 1 ms.
        (0.0, 3.0)
    };
    let y = decade_axis(app, lo, hi, decade_us);

    let mut sets = Vec::new();
    // p50 and p99.9 first and dimmed, so each workload's p99 is drawn over them.
    for l in lines {
        let dim = app.theme.workload(l.slot).add_modifier(Modifier::DIM);
        for run in &l.runs[0] {
            sets.push(set(run, Marker::Dot, GraphType::Line, dim));
        }
        for run in &l.runs[2] {
            sets.push(set(run, Marker::Braille, GraphType::Scatter, dim));
        }
    }
    for l in lines {
        for run in &l.runs[1] {
            let style = app.theme.workload(l.slot);
            sets.push(set(run, Marker::Braille, GraphType::Line, style));
        }
    }
    let chart = Chart::new(sets)
        .x_axis(x_axis(app))
        .y_axis(y)
        .legend_position(None);
    f.render_widget(chart, area);
}

fn set(data: &[(f64, f64)], marker: Marker, kind: GraphType, style: Style) -> Dataset<'_> {
    Dataset::default()
        .marker(marker)
        .graph_type(kind)
        .style(style)
        .data(data)
}

/// 10^e µs as people write it: 100ns, 1µs, 10µs, 100µs, 1ms, ... 1s, 10s, 100s.
fn decade_us(e: f64) -> String {
    let e = e.round() as i32;
    match e {
        i32::MIN..=-1 => "100ns".into(),
        0..=2 => format!("{}µs", 10u64.pow(e as u32)),
        3..=5 => format!("{}ms", 10u64.pow(e as u32 - 3)),
        _ => format!("{}s", 10u64.pow((e - 6).min(12) as u32)),
    }
}

/// Each timing workload's latest figures, one line per kind of latency it times.
fn words_of(app: &App, timing: &[&WorkloadView], width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for w in timing {
        let colour = app.theme.workload(w.slot);
        let Some(wf) = app.frame_of(w.id) else {
            continue;
        };
        let kinds = wf.latency.iter().chain(&wf.more_latency);
        let mut any = false;
        for l in kinds {
            any = true;
            let name = Span::styled(format!("■{} ", w.decl.name), colour);
            out.push(fit(name, &l.unit, words(l), width, app));
        }
        if !any {
            out.push(Line::from(vec![
                Span::styled(format!("■{} ", w.decl.name), colour),
                Span::styled("not timing now", app.theme.dim()),
            ]));
        }
    }
    out
}

/// What one kind of latency says over the last interval: its long and short forms.
fn words(l: &Latency) -> (String, String) {
    if !l.available {
        // Its stamps came back other than sent (a server that does not relay them).
        return (
            "latency unavailable (the stamps did not come back as sent)".into(),
            "latency unavailable".into(),
        );
    }
    if l.samples == 0 {
        return ("none timed this interval".into(), "none timed".into());
    }
    (
        format!(
            "p50 {}  p99 {}  p99.9 {}  mean {}",
            dur(l.p50_us),
            dur(l.p99_us),
            dur(l.p999_us),
            dur(l.mean_us)
        ),
        format!("p99 {}", dur(l.p99_us)),
    )
}

/// "■name unit: words", in its long form when it fits, else the short one, clipped.
fn fit(
    name: Span<'static>,
    unit: &str,
    (long, short): (String, String),
    width: usize,
    app: &App,
) -> Line<'static> {
    let used = name.width();
    let style = if long.starts_with("latency unavailable") {
        app.theme.warn()
    } else {
        Style::new()
    };
    let full = format!("{unit}: {long}");
    let text = if used + full.chars().count() <= width {
        full
    } else {
        clip(&format!("{unit}: {short}"), width.saturating_sub(used))
    };
    Line::from(vec![name, Span::styled(text, style)])
}

#[cfg(test)]
mod tests {
    use super::decade_us;

    #[test]
    fn decades_in_time_units() {
        let want = [(-1.0, "100ns"), (0.0, "1µs"), (2.0, "100µs"), (3.0, "1ms")];
        let more = [(5.0, "100ms"), (6.0, "1s"), (8.0, "100s")];
        for (e, text) in want.into_iter().chain(more) {
            assert_eq!(decade_us(e), text, "decade {e}");
        }
    }
}
