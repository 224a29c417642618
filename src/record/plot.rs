//! A picture of a run, fit for a mailing list or a README: three panels over time, sharing the
//! time axis: throughput, CPU received against fair share (dashed), and context switches; then,
//! when the workloads time their operations, their latency over time (p50, p99, p99.9 on a log
//! axis) and each one's distribution over the run (a CDF on a scale of nines, where p99 and
//! p99.9 are as far apart as p50 and p90). SVG or PNG by the output's extension; the PNG's text
//! uses DejaVu Sans embedded in the binary, so it looks the same on every machine.

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, bail, Result};
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::Frame;
use crate::record::atomic::AtomicFile;
use crate::record::latency::Merged;

const WIDTH: u32 = 1200;
const PANEL_HEIGHT: u32 = 360;
const FONT: &str = "sans-serif";

/// Distinct colours for up to eight workloads, then round again.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // DejaVu Sans is a valid TrueType font; if registering ever failed the plot would
        // fail with a clear "font unavailable" error rather than panic.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
}

/// One workload's values over time.
struct Series {
    name: String,
    unit: String,
    ops: Vec<(f64, f64)>,
    cpu: Vec<(f64, f64)>,
    fair: Vec<(f64, f64)>,
    cs: Vec<(f64, f64)>,
}

/// A figure as drawn: a broken one (NaN, infinite) at zero.
fn clean(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

fn series(frames: &[Frame]) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for f in frames {
        for w in &f.workloads {
            let i = match out.iter().position(|s| s.name == w.name) {
                Some(i) => i,
                None => {
                    out.push(Series {
                        name: w.name.clone(),
                        unit: w.ops_unit.clone(),
                        ops: vec![],
                        cpu: vec![],
                        fair: vec![],
                        cs: vec![],
                    });
                    out.len() - 1
                }
            };
            let s = &mut out[i];
            s.ops.push((f.t, clean(w.ops_per_sec)));
            s.cpu.push((f.t, clean(w.cpu_received)));
            s.fair.push((f.t, clean(w.cpu_fair)));
            s.cs.push((
                f.t,
                clean(w.voluntary_cs_per_sec + w.involuntary_cs_per_sec),
            ));
        }
    }
    out
}

/// Draws `frames` to `out` (.svg or .png), whole or not at all.
pub fn plot(frames: &[Frame], title: &str, out: &Path) -> Result<()> {
    plot_run(frames, &[], title, out)
}

/// Draws `frames`, and the CDF of each latency distribution in `distributions` (the run's,
/// per workload and unit), to `out`, whole or not at all.
pub fn plot_run(frames: &[Frame], distributions: &[Merged], title: &str, out: &Path) -> Result<()> {
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if ext != "svg" && ext != "png" {
        bail!(
            "cannot tell the picture format of {}: name it .svg or .png",
            out.display()
        );
    }
    if frames.is_empty() {
        bail!("nothing to plot: no intervals recorded");
    }
    register_font();
    let file = AtomicFile::create(out)?;
    let lat = latency_series(frames);
    let cdfs: Vec<Cdf> = distributions.iter().filter_map(Cdf::of).collect();
    let panels = 3 + u32::from(!lat.is_empty()) + u32::from(!cdfs.is_empty());
    let size = (WIDTH, PANEL_HEIGHT * panels + 60);
    let what = Drawn {
        frames,
        latency: &lat,
        cdfs: &cdfs,
        panels,
    };
    let drawn = if ext == "svg" {
        let root = SVGBackend::new(file.tmp_path(), size).into_drawing_area();
        draw(&root, &what, title).and_then(|()| root.present().map_err(|e| anyhow!("{e}")))
    } else {
        let root = BitMapBackend::new(file.tmp_path(), size).into_drawing_area();
        draw(&root, &what, title).and_then(|()| root.present().map_err(|e| anyhow!("{e}")))
    };
    drawn.map_err(|e| anyhow!("cannot draw {}: {e}", out.display()))?;
    file.commit()
}

/// Everything one picture shows.
struct Drawn<'a> {
    frames: &'a [Frame],
    latency: &'a [LatencySeries],
    cdfs: &'a [Cdf],
    panels: u32,
}

/// The rest of the machine's line: apart from every workload's colour.
const REST_GREY: RGBColor = RGBColor(128, 128, 128);

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, what: &Drawn, title: &str) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, (FONT, 26).into_font()).map_err(err)?;
    let panels = root.split_evenly((what.panels as usize, 1));
    let frames = what.frames;
    let all = series(frames);
    let t0 = frames.first().map_or(0.0, |f| f.t - f.interval).max(0.0);
    let t1 = frames.last().map_or(1.0, |f| f.t).max(t0 + 1e-3);
    let top = |pick: &dyn Fn(&Series) -> &Vec<(f64, f64)>| {
        let m = all
            .iter()
            .flat_map(|s| pick(s).iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        if m > 0.0 {
            m * 1.1
        } else {
            1.0
        }
    };

    // Panel 1: throughput, each workload in its own unit.
    let ymax = top(&|s| &s.ops);
    let mut c = chart(&panels[0], "Throughput", t0..t1, ymax, "operations / s")?;
    for (i, s) in all.iter().enumerate() {
        let unit = if s.unit.is_empty() { "ops" } else { &s.unit };
        line(
            &mut c,
            &s.ops,
            COLOURS[i % COLOURS.len()],
            format!("{} ({unit}/s)", s.name),
        )
        .map_err(err)?;
    }
    legend(&mut c, SeriesLabelPosition::UpperRight).map_err(err)?;

    // Panel 2: CPU received (solid) against fair share (dashed, same colour), and the rest of
    // the machine in grey when it took or was due anything.
    let rest_cpu: Vec<(f64, f64)> = frames
        .iter()
        .map(|f| (f.t, clean(f.machine.rest_cpu_received)))
        .collect();
    let rest_fair: Vec<(f64, f64)> = frames
        .iter()
        .map(|f| (f.t, clean(f.machine.rest_cpu_fair)))
        .collect();
    let rest_top = rest_cpu
        .iter()
        .chain(&rest_fair)
        .map(|p| p.1)
        .fold(0.0f64, f64::max);
    let ymax = top(&|s| &s.cpu).max(top(&|s| &s.fair)).max(rest_top * 1.1);
    let mut c = chart(
        &panels[1],
        "CPU received (solid) vs fair share (dashed)",
        t0..t1,
        ymax,
        "CPUs",
    )?;
    for (i, s) in all.iter().enumerate() {
        let col = COLOURS[i % COLOURS.len()];
        line(&mut c, &s.cpu, col, s.name.clone()).map_err(err)?;
        c.draw_series(DashedLineSeries::new(
            s.fair.iter().copied(),
            8,
            6,
            col.stroke_width(2),
        ))
        .map_err(err)?;
    }
    if rest_top > 0.005 {
        line(&mut c, &rest_cpu, REST_GREY, "other tasks".into()).map_err(err)?;
        c.draw_series(DashedLineSeries::new(
            rest_fair.iter().copied(),
            8,
            6,
            REST_GREY.stroke_width(2),
        ))
        .map_err(err)?;
    }
    legend(&mut c, SeriesLabelPosition::UpperRight).map_err(err)?;

    // Panel 3: context switches, voluntary plus involuntary.
    let ymax = top(&|s| &s.cs);
    let mut c = chart(&panels[2], "Context switches", t0..t1, ymax, "switches / s")?;
    for (i, s) in all.iter().enumerate() {
        line(&mut c, &s.cs, COLOURS[i % COLOURS.len()], s.name.clone()).map_err(err)?;
    }
    legend(&mut c, SeriesLabelPosition::UpperRight).map_err(err)?;

    let mut next = 3;
    if !what.latency.is_empty() {
        latency_panel(&panels[next], what.latency, &all, t0..t1)?;
        next += 1;
    }
    if !what.cdfs.is_empty() {
        cdf_panel(&panels[next], what.cdfs, &all)?;
    }
    Ok(())
}

/// One workload's latency of one unit over time, in µs: (t, p50, p99, p99.9) per interval
/// with something timed.
struct LatencySeries {
    workload: String,
    unit: String,
    points: Vec<(f64, [f64; 3])>,
}

fn latency_series(frames: &[Frame]) -> Vec<LatencySeries> {
    let mut out: Vec<LatencySeries> = Vec::new();
    for f in frames {
        for w in &f.workloads {
            for l in w.latency.iter().chain(&w.more_latency) {
                let i = match out
                    .iter()
                    .position(|s| s.workload == w.name && s.unit == l.unit)
                {
                    Some(i) => i,
                    None => {
                        out.push(LatencySeries {
                            workload: w.name.clone(),
                            unit: l.unit.clone(),
                            points: Vec::new(),
                        });
                        out.len() - 1
                    }
                };
                let figures = [l.p50_us, l.p99_us, l.p999_us];
                if l.samples > 0 && l.available && figures.iter().all(|v| v.is_finite() && *v > 0.0)
                {
                    out[i].points.push((f.t, figures));
                }
            }
        }
    }
    out.retain(|s| !s.points.is_empty());
    out
}

/// A colour for each series of `workloads` (one name per series, in order): a workload's first
/// takes its colour in the other panels, a further one (a second kind of latency) the next
/// colour after every workload's.
fn colours_for<'a>(workloads: impl Iterator<Item = &'a str>, all: &[Series]) -> Vec<RGBColor> {
    let mut seen: Vec<&str> = Vec::new();
    let mut extra = 0;
    workloads
        .map(|w| {
            let i = match all.iter().position(|s| s.name == w) {
                Some(i) if !seen.contains(&w) => i,
                _ => {
                    extra += 1;
                    all.len() + extra - 1
                }
            };
            seen.push(w);
            COLOURS[i % COLOURS.len()]
        })
        .collect()
}

/// The lowest and highest positive values, widened to a log axis's range.
fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return 0.1..10.0;
    }
    (lo / 1.5)..(hi * 1.5).max(lo * 2.0)
}

/// Panel 4: p50 (dashed), p99 (solid) and p99.9 (dotted) of each workload's latency over
/// time, on a log axis; intervals with nothing timed leave a gap.
fn latency_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lat: &[LatencySeries],
    all: &[Series],
    x: std::ops::Range<f64>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    let y = log_range(lat.iter().flat_map(|s| s.points.iter().flat_map(|p| p.1)));
    let mut c = panel(area, "Latency: p50 (dashed), p99 (solid), p99.9 (dotted)")
        .build_cartesian_2d(x, y.log_scale())
        .map_err(err)?;
    draw_mesh(
        c.configure_mesh()
            .x_desc("time (s)")
            .y_desc("µs (log scale)")
            .y_labels(8)
            .y_label_formatter(&|v| crate::model::stats::num(*v)),
    )
    .map_err(err)?;
    let colours = colours_for(lat.iter().map(|s| s.workload.as_str()), all);
    for (s, &col) in lat.iter().zip(&colours) {
        // Consecutive intervals with figures make one stretch of line; a gap breaks it.
        let mut stretches: Vec<Vec<(f64, [f64; 3])>> = Vec::new();
        let mut last_t = f64::NEG_INFINITY;
        let step = s
            .points
            .windows(2)
            .map(|w| w[1].0 - w[0].0)
            .fold(f64::INFINITY, f64::min);
        for &p in &s.points {
            if stretches.is_empty() || p.0 - last_t > step * 1.5 {
                stretches.push(Vec::new());
            }
            stretches.last_mut().expect("pushed").push(p);
            last_t = p.0;
        }
        for (n, stretch) in stretches.iter().enumerate() {
            let at = |q: usize| stretch.iter().map(move |p| (p.0, p.1[q]));
            c.draw_series(DashedLineSeries::new(at(0), 8, 6, col.stroke_width(2)))
                .map_err(err)?;
            c.draw_series(DashedLineSeries::new(at(2), 2, 5, col.stroke_width(2)))
                .map_err(err)?;
            let solid = c
                .draw_series(LineSeries::new(at(1), col.stroke_width(2)))
                .map_err(err)?;
            if n == 0 {
                solid
                    .label(format!("{} ({})", s.workload, s.unit))
                    .legend(swatch(col));
            }
            if stretch.len() == 1 {
                // A lone interval draws no line: a dot says it was there.
                c.draw_series(at(1).map(|p| Circle::new(p, 3, col.filled())))
                    .map_err(err)?;
            }
        }
    }
    legend(&mut c, SeriesLabelPosition::UpperRight).map_err(err)?;
    Ok(())
}

/// A distribution's CDF as steps: (value in µs, nines) at each bucket's upper edge, nines
/// being -log10(1 - F): 1 at 90%, 2 at 99%, 3 at 99.9%.
struct Cdf {
    workload: String,
    unit: String,
    points: Vec<(f64, f64)>,
    /// The scale's top: the nines the number of values can tell apart.
    top: f64,
}

impl Cdf {
    fn of(m: &Merged) -> Option<Cdf> {
        let n = m.dist.count();
        if n == 0 || !m.dist.available() {
            return None;
        }
        let top = (n as f64).log10().ceil().clamp(2.0, 6.0);
        let nines = |f: f64| {
            if f >= 1.0 {
                top
            } else {
                (-(1.0 - f).log10()).min(top)
            }
        };
        // Steps: flat between buckets, rising across each (its values lie somewhere in it).
        let mut points = Vec::new();
        let mut seen = 0u64;
        for (low, high, c) in m.dist.buckets() {
            // The overflow ends nowhere: its start stands for it. A log axis has no 0.
            let high = if high == u64::MAX { low } else { high };
            let low = if low > 0 { low } else { high / 2 };
            points.push((low as f64 / 1000.0, nines(seen as f64 / n as f64)));
            seen += c;
            points.push((high as f64 / 1000.0, nines(seen as f64 / n as f64)));
        }
        Some(Cdf {
            workload: m.workload.clone(),
            unit: m.unit.clone(),
            points,
            top,
        })
    }
}

/// "99.9%" for 3 nines.
fn nines_label(v: f64) -> String {
    let pct = 100.0 * (1.0 - 10f64.powf(-v));
    if v < 0.5 {
        "0%".into()
    } else {
        let digits = (v.round() as usize).saturating_sub(2);
        format!("{pct:.digits$}%")
    }
}

/// Panel 5: each workload's latency distribution over the run.
fn cdf_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    cdfs: &[Cdf],
    all: &[Series],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    let x = log_range(cdfs.iter().flat_map(|c| c.points.iter().map(|p| p.0)));
    let top = cdfs.iter().map(|c| c.top).fold(2.0, f64::max);
    let caption = "Latency distribution over the run (first second of each repeat left out)";
    let mut c = panel(area, caption)
        .build_cartesian_2d(x.log_scale(), 0.0..top)
        .map_err(err)?;
    draw_mesh(
        c.configure_mesh()
            .x_desc("µs (log scale)")
            .y_desc("values at or below")
            .x_label_formatter(&|v| crate::model::stats::num(*v))
            .y_labels(top as usize + 1)
            .y_label_formatter(&|v| nines_label(*v)),
    )
    .map_err(err)?;
    let colours = colours_for(cdfs.iter().map(|d| d.workload.as_str()), all);
    for (d, &col) in cdfs.iter().zip(&colours) {
        let label = format!("{} ({})", d.workload, d.unit);
        line(&mut c, &d.points, col, label).map_err(err)?;
    }
    legend(&mut c, SeriesLabelPosition::LowerRight).map_err(err)?;
    Ok(())
}

type Chart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: std::ops::Range<f64>,
    ymax: f64,
    ylabel: &str,
) -> Result<Chart<'a, DB>>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    let mut c = panel(area, caption)
        .build_cartesian_2d(x, 0.0..ymax)
        .map_err(err)?;
    draw_mesh(
        c.configure_mesh()
            .x_desc("time (s)")
            .y_desc(ylabel)
            .y_label_formatter(&|v| crate::model::stats::num(*v)),
    )
    .map_err(err)?;
    Ok(c)
}

/// A panel's caption, margin and room for its axes' labels, the same on every panel.
fn panel<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.caption(caption, (FONT, 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(80);
    b
}

/// Draws a panel's mesh, its axes described by the caller, in the fonts and faint grid of
/// every panel.
fn draw_mesh<X, Y, DB>(
    mesh: &mut MeshStyle<'_, '_, X, Y, DB>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
    DB: DrawingBackend,
{
    mesh.label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
}

/// A workload's solid line in its colour, named in the legend.
fn line<'a, DB, CT>(
    c: &mut ChartContext<'a, DB, CT>,
    points: &[(f64, f64)],
    col: RGBColor,
    label: String,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    c.draw_series(LineSeries::new(points.iter().copied(), col.stroke_width(2)))?
        .label(label)
        .legend(swatch(col));
    Ok(())
}

/// The legend's sample of a workload's line: a short stroke in its colour.
fn swatch(col: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(2))
}

fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    c: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    c.configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 14))
        .draw()
}
