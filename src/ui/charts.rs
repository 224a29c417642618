//! The three charts, side by side over the same time window: throughput, CPU share against
//! fair share, and context switches. Each workload keeps its colour. Throughput and switch
//! rates span decades (a chat run does 60,000 msg/s, a fork loop 900 forks/s), so those two
//! use a log scale; CPU share is linear, in % of one CPU, up to the whole machine.
//! The second series of a chart (fair share; involuntary switches) is drawn in dots.
//! Wide screens add the latency panel (ui/latency.rs) as a fourth; narrower ones show it in
//! the charts' place when asked.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType};
use ratatui::Frame as TermFrame;

use super::app::App;
use super::fmt::span;
use super::history::Point;

/// One number of a Point, for one line of a chart.
type Getter<'a> = &'a dyn Fn(&Point) -> f64;

struct Line2 {
    slot: usize,
    name: String,
    main: Vec<(f64, f64)>,
    second: Vec<(f64, f64)>,
}

/// The three charts, in the three areas given.
pub fn draw(f: &mut TermFrame, [a, b, c]: [Rect; 3], app: &App) {
    let end = app.view_end();
    let from = end - app.window;

    // Braille gives two dots per cell across; a chart cannot show more columns than that.
    let columns = 2 * a.width as usize;
    // Values are thinned before `scale` (monotone: the extremes stay the extremes), so that
    // log10 runs on the few points drawn, not on every point of the window.
    let lines = |main: Getter, second: Option<Getter>, scale: &dyn Fn(f64) -> f64| -> Vec<Line2> {
        app.workloads
            .iter()
            .map(|w| {
                let series = |v: &dyn Fn(&Point) -> f64| {
                    let mut pts = thin(
                        w.series.window(from, end).map(|p| (p.t - end, v(p))),
                        -app.window,
                        app.window,
                        columns,
                    );
                    pts.iter_mut().for_each(|p| p.1 = scale(p.1));
                    pts
                };
                Line2 {
                    slot: w.slot,
                    name: w.decl.name.clone(),
                    main: series(main),
                    second: second.map_or_else(Vec::new, |s| series(s)),
                }
            })
            .collect()
    };

    let log = |v: f64| v.max(1.0).log10();
    let mut ops = lines(&|p| p.ops_per_sec, None, &log);
    // An attached row counts no operations: no line rather than one at zero.
    for (line, w) in ops.iter_mut().zip(&app.workloads) {
        if w.decl.kind.attached() {
            line.main.clear();
        }
    }
    draw_log_chart(f, a, app, "Throughput ops/s", "", &ops);

    let cpu = lines(
        &|p| p.cpu_received * 100.0,
        Some(&|p| p.cpu_fair * 100.0),
        &|v| v,
    );
    draw_cpu_chart(f, b, app, &cpu);

    let cs = lines(&|p| p.voluntary, Some(&|p| p.involuntary), &log);
    draw_log_chart(f, c, app, "Switches/s", "vol ⣿ invol •", &cs);
}

/// At most the lowest and the highest point of each of `columns` equal slices of
/// [x0, x0 + span], in time order. A chart draws a line segment per point pair: at 10 Hz over
/// a 600 s window that is 6,000 segments per line, most of them inside one dot column, and
/// drawing them cost 20 ms a frame (issue #9). Keeping each column's extremes draws the same
/// dots, spikes included, from at most two points per column.
pub(super) fn thin(
    points: impl Iterator<Item = (f64, f64)>,
    x0: f64,
    span: f64,
    columns: usize,
) -> Vec<(f64, f64)> {
    let points: Vec<(f64, f64)> = points.collect();
    // Sparse enough to draw as it is (and exactly as before thinning existed).
    if columns == 0 || span <= 0.0 || points.len() <= 4 * columns {
        return points;
    }
    let mut out: Vec<(f64, f64)> = Vec::new();
    let column = |x: f64| ((x - x0) / span * columns as f64).floor().max(-1.0) as i64;
    // The column being gathered: its number, lowest and highest point.
    type XY = (f64, f64);
    let mut current: Option<(i64, XY, XY)> = None;
    let flush = |out: &mut Vec<(f64, f64)>, lo: (f64, f64), hi: (f64, f64)| {
        if lo == hi {
            out.push(lo);
        } else if lo.0 <= hi.0 {
            out.extend([lo, hi]);
        } else {
            out.extend([hi, lo]);
        }
    };
    for p in points {
        let c = column(p.0);
        match &mut current {
            Some((col, lo, hi)) if *col == c => {
                if p.1 < lo.1 {
                    *lo = p;
                }
                if p.1 > hi.1 {
                    *hi = p;
                }
            }
            _ => {
                if let Some((_, lo, hi)) = current.take() {
                    flush(&mut out, lo, hi);
                }
                current = Some((c, p, p));
            }
        }
    }
    if let Some((_, lo, hi)) = current {
        flush(&mut out, lo, hi);
    }
    out
}

/// The chart's frame. Its title names the lines in their colours when there is room (a
/// legend box inside would hide data); otherwise the table's colours name them, and without
/// colour its bottom edge names them by the shapes of their lines.
fn block<'a>(app: &App, title: &'a str, key: &'a str, lines: &[Line2], width: u16) -> Block<'a> {
    let names: Vec<(usize, &str)> = lines.iter().map(|l| (l.slot, l.name.as_str())).collect();
    titled_block(app, title, key, &names, width)
}

/// A panel's frame titled `title`, its `key` dimmed, then the workloads (colour slot, name)
/// in their colours, all of them when there is room or none.
pub(super) fn titled_block<'a>(
    app: &App,
    title: &'a str,
    key: &'a str,
    names: &[(usize, &str)],
    width: u16,
) -> Block<'a> {
    let mut title_spans = vec![Span::styled(title, app.theme.title())];
    if !key.is_empty() {
        title_spans.push(Span::styled(format!(" {key}"), app.theme.dim()));
    }
    // All the names or none: a partial legend would mislead.
    let used: usize = title_spans.iter().map(|s| s.width()).sum();
    let names: Vec<Span> = names
        .iter()
        .map(|(slot, name)| {
            let mark = app.theme.mark(*slot);
            Span::styled(format!(" {mark}{name}"), app.theme.workload(*slot))
        })
        .collect();
    let names_width = names.iter().map(|s| s.width()).sum::<usize>();
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.border());
    if used + names_width + 2 <= width as usize {
        title_spans.extend(names);
    } else if !app.theme.colour && names_width + 2 <= width as usize {
        // Without colour the table cannot name the lines by colour: the legend goes under.
        block = block.title_bottom(Line::from(names));
    }
    block.title(Line::from(title_spans))
}

pub(super) fn x_axis<'a>(app: &App) -> Axis<'a> {
    Axis::default()
        .bounds([-app.window, 0.0])
        .labels(vec![
            Span::raw(format!("-{}", span(app.window))),
            Span::raw(format!("-{}", span(app.window / 2.0))),
            Span::raw("now"),
        ])
        .style(app.theme.dim())
}

fn datasets<'a>(app: &App, lines: &'a [Line2]) -> Vec<Dataset<'a>> {
    let mut sets = Vec::new();
    // Second series first, so the main one is drawn over it where they meet.
    for l in lines.iter().filter(|l| !l.second.is_empty()) {
        sets.push(
            Dataset::default()
                .marker(Marker::Dot)
                .graph_type(GraphType::Line)
                .style(app.theme.workload(l.slot).add_modifier(Modifier::DIM))
                .data(&l.second),
        );
    }
    for l in lines {
        sets.push(
            Dataset::default()
                .marker(app.theme.marker(l.slot))
                .graph_type(GraphType::Line)
                .style(app.theme.workload(l.slot))
                .data(&l.main),
        );
    }
    sets
}

fn chart<'a>(app: &App, sets: Vec<Dataset<'a>>, block: Block<'a>, y: Axis<'a>) -> Chart<'a> {
    Chart::new(sets)
        .block(block)
        .x_axis(x_axis(app))
        .y_axis(y)
        .legend_position(None)
}

/// A chart whose y values are log10 of the rate.
fn draw_log_chart(
    f: &mut TermFrame,
    area: Rect,
    app: &App,
    title: &str,
    key: &str,
    lines: &[Line2],
) {
    let all = lines
        .iter()
        .flat_map(|l| l.main.iter().chain(l.second.iter()))
        .map(|p| p.1);
    let hi = all.fold(0.0_f64, f64::max).ceil().max(1.0);
    let lo = 0.0;
    let y = decade_axis(app, lo, hi, decade);
    let sets = datasets(app, lines);
    f.render_widget(
        chart(app, sets, block(app, title, key, lines, area.width), y),
        area,
    );
}

/// 10^e as people write it: 1, 10, 100, 1k, 10k, 100k, 1M...
/// A log-scale y axis from decade `lo` to decade `hi`, labelled by `label` only on whole decades:
/// a middle one when there is a decade between the ends.
pub(super) fn decade_axis(app: &App, lo: f64, hi: f64, label: fn(f64) -> String) -> Axis<'static> {
    let mut labels = vec![Span::raw(label(lo))];
    if hi - lo >= 2.0 {
        labels.push(Span::raw(label(((lo + hi) / 2.0).round())));
    }
    labels.push(Span::raw(label(hi)));
    Axis::default()
        .bounds([lo, hi])
        .labels(labels)
        .style(app.theme.dim())
}

fn decade(e: f64) -> String {
    let e = e.round().max(0.0) as u32;
    let (base, suffix) = match e {
        0..=2 => (e, ""),
        3..=5 => (e - 3, "k"),
        6..=8 => (e - 6, "M"),
        _ => (e - 9, "G"),
    };
    format!("{}{suffix}", 10u64.pow(base))
}

/// CPU share in % of one CPU, 0 to the whole machine; fair share dotted.
fn draw_cpu_chart(f: &mut TermFrame, area: Rect, app: &App, lines: &[Line2]) {
    let top = (app.cpus.max(1) * 100) as f64;
    let y = Axis::default()
        .bounds([0.0, top])
        .labels(vec![
            Span::raw("0"),
            Span::raw(format!("{:.0}", top / 2.0)),
            Span::raw(format!("{top:.0}")),
        ])
        .style(app.theme.dim());
    let sets = datasets(app, lines);
    let block = block(app, "CPU %", "got ⣿ fair •", lines, area.width);
    f.render_widget(chart(app, sets, block, y).style(Style::new()), area);
}

#[cfg(test)]
mod tests {
    use super::thin;

    #[test]
    fn thin_keeps_short_series_as_they_are() {
        let pts = vec![(-10.0, 1.0), (-5.0, 3.0), (0.0, 2.0)];
        assert_eq!(thin(pts.clone().into_iter(), -60.0, 60.0, 100), pts);
    }

    #[test]
    fn thin_keeps_each_columns_extremes_in_time_order() {
        // 100 points in one column: a spike down, then a spike up.
        let pts: Vec<(f64, f64)> = (0..100)
            .map(|i| {
                let v = match i {
                    20 => -7.0,
                    70 => 9.0,
                    _ => 1.0,
                };
                (-60.0 + i as f64 * 0.05, v)
            })
            .collect();
        assert_eq!(
            thin(pts.into_iter(), -60.0, 60.0, 1),
            vec![(-59.0, -7.0), (-56.5, 9.0)]
        );
    }

    #[test]
    fn thin_bounds_the_points_by_the_columns() {
        let pts = (0..6000).map(|i| (-600.0 + i as f64 * 0.1, (i as f64).sin()));
        let out = thin(pts, -600.0, 600.0, 160);
        assert!(out.len() <= 2 * 160, "{} points", out.len());
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
