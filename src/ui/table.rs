//! The workload table: one row per workload in its colour, then the rest of the machine, and
//! under it, expanded with `x`, its groups (sessions, cgroups, the root's loose tasks).
//! CPU%, FAIR% and RATIO are over the verdict window (the charts keep every interval).
//! Columns are chosen by priority to fit the width: name, state, tasks, throughput, CPU
//! against fair share and its ratio, switches, run-queue wait and the p99 of its own
//! operations always fit in 80 columns; wider terminals get units,
//! migrations, demand, weights, knobs, the last run's figure, then p50 and p99.9.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame as TermFrame;

use crate::knobs::cpus_text;
use crate::model::frame::weight_text;
use crate::model::{Cause, Due, Latency, WorkloadFrame, WorkloadState};

use super::app::{App, TableGeometry, WorkloadView};
use super::fmt::{clip, pct, si};
use super::theme::Verdict;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Name,
    State,
    Tasks,
    Ops,
    Unit,
    Cpu,
    Fair,
    Ratio,
    Vol,
    Invol,
    Wait,
    Migrations,
    P50,
    P99,
    P999,
    WaitSlice,
    Demand,
    Weight,
    Knobs,
    Group,
    LastRun,
}

/// (column, header, width, priority: lower fits first)
const COLUMNS: [(Col, &str, u16, u8); 21] = [
    (Col::Name, "NAME", 11, 0),
    (Col::State, "STATE", 7, 0),
    (Col::Tasks, "TASKS", 5, 0),
    (Col::Ops, "OPS/s", 5, 0),
    (Col::Unit, "UNIT", 4, 3),
    (Col::Cpu, "CPU%", 5, 0),
    (Col::Fair, "FAIR%", 5, 0),
    (Col::Ratio, "RATIO", 12, 0),
    (Col::Vol, "VOL/s", 5, 0),
    (Col::Invol, "INV/s", 5, 0),
    (Col::Migrations, "MIG/s", 5, 2),
    (Col::Wait, "WAIT%", 5, 1),
    (Col::P50, "P50", 5, 5),
    (Col::P99, "P99", 5, 1),
    (Col::P999, "P99.9", 5, 5),
    (Col::WaitSlice, "WAIT/SL", 7, 3),
    (Col::Demand, "WANT%", 5, 2),
    (Col::Weight, "WEIGHT", 6, 2),
    (Col::Knobs, "KNOBS", 15, 4),
    (Col::Group, "GROUP", 16, 4),
    (Col::LastRun, "LAST RUN", 14, 3),
];

/// The columns that fit in `width`, in their display order.
fn columns_for(width: u16) -> Vec<(Col, &'static str, u16)> {
    let mut chosen = vec![false; COLUMNS.len()];
    let mut used: u16 = 0;
    for prio in 0..=5 {
        for (i, (_, _, w, p)) in COLUMNS.iter().enumerate() {
            // `used` counts a space after each column chosen: the last needs none.
            if *p == prio && used + w <= width {
                chosen[i] = true;
                used += w + 1;
            }
        }
    }
    COLUMNS
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .map(|((c, h, w, _), _)| (*c, *h, *w))
        .collect()
}

/// Rows the table wants: header, workloads, the rest of the machine, and its groups when
/// expanded.
pub(crate) fn wanted_height(app: &App) -> u16 {
    app.workloads.len() as u16 + 2 + rest_groups_shown(app) as u16
}

/// The rest's groups listed under it: none until expanded (`x`).
fn rest_groups_shown(app: &App) -> usize {
    if !app.rest_expanded {
        return 0;
    }
    app.shown().map_or(0, |f| f.machine.rest_groups.len())
}

pub fn draw(f: &mut TermFrame, area: Rect, app: &App) {
    let theme = &app.theme;
    let cols = columns_for(area.width);
    let frame = app.shown();
    // Leave the last lines for the rest of the machine; scroll to keep the selection visible.
    let groups = rest_groups_shown(app);
    let visible = area.height.saturating_sub(2 + groups as u16).max(1) as usize;
    let offset = app.selected.saturating_sub(visible - 1);
    app.table_geometry.set(TableGeometry {
        rows: Rect {
            y: area.y + 1,
            height: area.height.saturating_sub(2 + groups as u16),
            ..area
        },
        offset,
    });

    // The ratio is over the verdict window: its header says how long.
    let window = frame.map_or(0.0, |fr| fr.machine.verdict_window);
    let ratio_header = if window > 0.0 {
        format!("RATIO {}", super::fmt::span(window))
    } else {
        "RATIO".to_string()
    };
    let header = Row::new(cols.iter().map(|(c, h, _)| {
        let cell = if *c == Col::Ratio {
            Cell::from(ratio_header.clone())
        } else {
            Cell::from(*h)
        };
        if matches!(
            c,
            Col::Name | Col::State | Col::Knobs | Col::Group | Col::Ratio | Col::LastRun
        ) {
            cell
        } else {
            Cell::from(Line::from(*h).right_aligned())
        }
    }))
    .style(theme.header());

    let mut rows: Vec<Row> = app
        .workloads
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .map(|(i, w)| {
            let wf = app.frame_of(w.id);
            let row = Row::new(
                cols.iter()
                    .map(|(c, _, width)| workload_cell(app, w, wf, *c, *width)),
            );
            if i == app.selected {
                row.style(theme.selected())
            } else {
                row
            }
        })
        .collect();

    if let Some(fr) = frame {
        let m = &fr.machine;
        // The rest, like every row, over the verdict window; no verdict when it wants little.
        rows.push(
            Row::new(cols.iter().map(|(c, _, width)| match c {
                Col::Name => Cell::from(if *width >= 16 {
                    "rest of machine"
                } else {
                    "other tasks"
                }),
                Col::State => late_cell(app, m.rest_late),
                Col::Cpu => num(pct(m.rest_window_received)),
                Col::Fair => num(pct(m.rest_window_fair)),
                Col::Ratio => ratio_cell(
                    app,
                    m.rest_window_received,
                    m.rest_window_fair,
                    m.rest_verdict,
                ),
                Col::P99 => delay_cell(m.rest_wake_delay_us),
                _ => Cell::from(""),
            }))
            .style(theme.dim()),
        );
        for g in m.rest_groups.iter().take(groups) {
            rows.push(
                Row::new(cols.iter().map(|(c, _, width)| match c {
                    Col::Name => Cell::from(format!(
                        "  {}",
                        clip(&g.name, (*width as usize).saturating_sub(2))
                    )),
                    Col::State => late_cell(app, g.late),
                    Col::Cpu => num(pct(g.received)),
                    Col::Fair => num(pct(g.fair)),
                    Col::Ratio => ratio_cell(app, g.received, g.fair, g.verdict),
                    Col::P99 => delay_cell(g.wake_delay_us),
                    Col::Group => Cell::from(clip(&g.key, *width as usize)),
                    _ => Cell::from(""),
                }))
                .style(theme.dim()),
            );
        }
    }

    let widths: Vec<Constraint> = cols
        .iter()
        .map(|(_, _, w)| Constraint::Length(*w))
        .collect();
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    f.render_widget(table, area);
}

/// `late` when its woken tasks waited long before running (latency, not CPU).
fn late_cell(app: &App, late: bool) -> Cell<'static> {
    if late {
        Cell::from(Span::styled("late", app.theme.warn()))
    } else {
        Cell::from("")
    }
}

/// A mean wakeup delay, in the latency column of a row that times nothing of its own.
fn delay_cell(us: Option<f64>) -> Cell<'static> {
    match us {
        Some(us) => num(super::fmt::latency(us)),
        None => Cell::from(""),
    }
}

fn num(s: String) -> Cell<'static> {
    Cell::from(Line::from(s).right_aligned())
}

fn ratio_cell(app: &App, received: f64, fair: f64, v: Verdict) -> Cell<'static> {
    if v == Verdict::None {
        return Cell::from("  -");
    }
    let r = received / fair;
    Cell::from(Line::from(vec![
        Span::raw(format!("{r:>4.2} ")),
        Span::styled(v.word(), app.theme.verdict(v)),
    ]))
}

fn state_text(w: &WorkloadView, wf: Option<&WorkloadFrame>) -> String {
    match wf.map(|f| (&f.state, f.progress)) {
        None | Some((WorkloadState::Starting, _)) => "start…".into(),
        Some((WorkloadState::Running, Some(p))) if w.finite() => format!("run{:>3.0}%", p * 100.0),
        Some((WorkloadState::Running, _)) => "running".into(),
        Some((WorkloadState::Done(0), _)) => "done".into(),
        Some((WorkloadState::Done(c), _)) => format!("exit {c}"),
        // Detached: the column holds 7 characters.
        Some((WorkloadState::Stopped, _)) if w.decl.kind.attached() => "let go".into(),
        Some((WorkloadState::Stopped, _)) => "stopped".into(),
        Some((WorkloadState::Gone(_), _)) => "gone".into(),
        Some((WorkloadState::Ended(_), _)) => "ended".into(),
        Some((WorkloadState::Partial(_), _)) => "partial".into(),
    }
}

fn workload_cell<'a>(
    app: &App,
    w: &WorkloadView,
    wf: Option<&WorkloadFrame>,
    col: Col,
    width: u16,
) -> Cell<'a> {
    let colour = app.theme.workload(w.slot);
    let dash = || Cell::from(Line::from("-").right_aligned());
    let live = wf.filter(|f| !matches!(f.state, WorkloadState::Starting));
    match col {
        Col::Name => {
            let mark = if w.looping { " ↻" } else { "" };
            let name = clip(
                &w.decl.name,
                (width as usize).saturating_sub(2 + mark.chars().count()),
            );
            Cell::from(Line::from(vec![
                Span::styled(format!("{} ", app.theme.mark(w.slot)), colour),
                Span::styled(name, colour),
                Span::raw(mark),
            ]))
        }
        // A running workload whose woken tasks waited long reads `late` (the details say how
        // long): latency, beside a CPU verdict it does not change.
        Col::State if wf.is_some_and(|f| f.late && f.state == WorkloadState::Running) => {
            late_cell(app, true)
        }
        Col::State => {
            let style = match wf.map(|f| &f.state) {
                Some(WorkloadState::Gone(_) | WorkloadState::Partial(_)) => app.theme.warn(),
                Some(WorkloadState::Running) => Style::new(),
                _ => app.theme.dim(),
            };
            Cell::from(Span::styled(state_text(w, wf), style))
        }
        Col::Tasks => live.map_or_else(dash, |f| num(f.tasks.to_string())),
        // Nothing counts an attached row's operations: absent, not zero.
        Col::Ops if w.decl.kind.attached() => dash(),
        Col::Ops => live.map_or_else(dash, |f| num(si(f.ops_per_sec))),
        Col::Unit => Cell::from(w.decl.kind.ops_unit()),
        // Received, due and their ratio over the verdict window: a verdict that holds still.
        Col::Cpu => live.map_or_else(dash, |f| num(pct(f.window_received))),
        Col::Fair => live.map_or_else(dash, |f| num(pct(f.window_fair))),
        Col::Ratio => match live {
            // A verdict the host's pause held (the details say why).
            Some(f) if matches!(f.cause, Cause::HostStall { .. }) => {
                Cell::from(Span::styled("host", app.theme.warn()))
            }
            Some(f) => ratio_cell(app, f.window_received, f.window_fair, f.verdict),
            None => Cell::from("  -"),
        },
        Col::Vol => live.map_or_else(dash, |f| num(si(f.voluntary_cs_per_sec))),
        Col::Invol => live.map_or_else(dash, |f| num(si(f.involuntary_cs_per_sec))),
        Col::Wait => live.map_or_else(dash, |f| num(format!("{:.0}", f.runq_wait_pct))),
        Col::Migrations => match live.map(|f| f.migrations_per_sec) {
            Some(Some(rate)) => num(si(rate)),
            _ => dash(),
        },
        Col::P50 => latency_cell(live, |l| l.p50_us),
        Col::P99 => latency_cell(live, |l| l.p99_us),
        Col::P999 => latency_cell(live, |l| l.p999_us),
        Col::WaitSlice => live.map_or_else(dash, |f| num(micros(f.wait_per_slice_us))),
        Col::Demand => live.map_or_else(dash, |f| num(pct(f.cpu_demand))),
        Col::Weight => live.map_or_else(dash, |f| num(weight_text(shown_weight(f)))),
        Col::Knobs => Cell::from(clip(&knobs_words(w), width as usize)),
        Col::Group => Cell::from(clip(
            &live.map_or_else(|| w.decl.knobs.placement.words(), |f| f.group.clone()),
            width as usize,
        )),
        Col::LastRun => Cell::from(match w.runs.last() {
            Some(r) => clip(
                &format!("{}/s {}", si(r.ops_per_sec), super::fmt::span(r.seconds)),
                width as usize,
            ),
            None => String::new(),
        }),
    }
}

/// The weight its due share was counted with, as the details line says it (its group's when
/// it is alone in one); the model's sum over its tasks when its due share is no weight's.
fn shown_weight(f: &WorkloadFrame) -> f64 {
    match f.due {
        Due::Share { weight, .. } => weight,
        _ => f.weight,
    }
}

/// One percentile of its operations' latency, with its unit; blank for a workload that times
/// nothing, "n/a" when its latency is unavailable, "-" when nothing was timed.
fn latency_cell<'a>(wf: Option<&WorkloadFrame>, pick: impl Fn(&Latency) -> f64) -> Cell<'a> {
    match wf.and_then(|f| f.latency.as_ref()) {
        None => Cell::from(""),
        Some(l) if !l.available => num("n/a".into()),
        Some(l) if l.samples == 0 => num("-".into()),
        Some(l) => num(super::fmt::latency(pick(l))),
    }
}

/// Microseconds, as µs up to 10 ms, then ms.
fn micros(us: f64) -> String {
    if !us.is_finite() {
        "-".into()
    } else if us < 10_000.0 {
        format!("{us:.0}µs")
    } else {
        format!("{:.0}ms", us / 1000.0)
    }
}

/// "nice 5 batch 0-1": the knobs that differ from the defaults.
pub(crate) fn knobs_words(w: &WorkloadView) -> String {
    let k = &w.decl.knobs;
    let mut parts = vec![format!("nice {}", k.nice)];
    parts.push(if k.policy.is_realtime() {
        format!("{} {}", k.policy.word(), k.rt_priority)
    } else {
        k.policy.word().to_string()
    });
    if let Some(cpus) = &k.affinity {
        parts.push(format!("cpu {}", cpus_text(cpus)));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_is_the_details_figure_and_never_minus_zero() {
        let mut f = WorkloadFrame {
            weight: 2048.0,
            due: Due::Share {
                weight: 4096.0,
                of_weight: 5120.0,
                pool: 2.0,
                pool_name: "its group".into(),
                wants: 4.0,
            },
            ..WorkloadFrame::default()
        };
        assert_eq!(weight_text(shown_weight(&f)), "4096");
        assert!(
            f.due.text().contains("weight 4096/5120"),
            "{}",
            f.due.text()
        );
        // An empty sum of f64 is -0.0.
        f.due = Due::Nothing;
        f.weight = std::iter::empty::<f64>().sum();
        assert_eq!(weight_text(shown_weight(&f)), "0");
    }

    #[test]
    fn required_columns_fit_in_80() {
        let cols: Vec<Col> = columns_for(80).into_iter().map(|c| c.0).collect();
        for c in [
            Col::Name,
            Col::State,
            Col::Tasks,
            Col::Ops,
            Col::Cpu,
            Col::Fair,
            Col::Ratio,
            Col::Vol,
            Col::Invol,
            Col::Wait,
            Col::P99,
        ] {
            assert!(cols.contains(&c));
        }
        // Nothing past the edge.
        let used: u16 = columns_for(80).iter().map(|c| c.2 + 1).sum();
        assert!(used - 1 <= 80);
        assert_eq!(columns_for(200).len(), COLUMNS.len());
    }
}
