//! A picture of a run, fit for a mailing list or a README: three panels over time, sharing the
//! time axis: throughput, CPU received against fair share (dashed), and context switches.
//! SVG or PNG by the output's extension; the PNG's text uses DejaVu Sans embedded in the
//! binary, so it looks the same on every machine.

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, bail, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::Frame;
use crate::record::atomic::AtomicFile;

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
            let clean = |v: f64| if v.is_finite() { v } else { 0.0 };
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
    let size = (WIDTH, PANEL_HEIGHT * 3 + 60);
    let drawn = if ext == "svg" {
        let root = SVGBackend::new(file.tmp_path(), size).into_drawing_area();
        draw(&root, frames, title).and_then(|()| root.present().map_err(|e| anyhow!("{e}")))
    } else {
        let root = BitMapBackend::new(file.tmp_path(), size).into_drawing_area();
        draw(&root, frames, title).and_then(|()| root.present().map_err(|e| anyhow!("{e}")))
    };
    drawn.map_err(|e| anyhow!("cannot draw {}: {e}", out.display()))?;
    file.commit()
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    frames: &[Frame],
    title: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, (FONT, 26).into_font()).map_err(err)?;
    let panels = root.split_evenly((3, 1));
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
    legend(&mut c).map_err(err)?;

    // Panel 2: CPU received (solid) against fair share (dashed, same colour).
    let ymax = top(&|s| &s.cpu).max(top(&|s| &s.fair));
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
    legend(&mut c).map_err(err)?;

    // Panel 3: context switches, voluntary plus involuntary.
    let ymax = top(&|s| &s.cs);
    let mut c = chart(&panels[2], "Context switches", t0..t1, ymax, "switches / s")?;
    for (i, s) in all.iter().enumerate() {
        line(&mut c, &s.cs, COLOURS[i % COLOURS.len()], s.name.clone()).map_err(err)?;
    }
    legend(&mut c).map_err(err)?;
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
    let mut c = ChartBuilder::on(area)
        .caption(caption, (FONT, 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(80)
        .build_cartesian_2d(x, 0.0..ymax)
        .map_err(err)?;
    c.configure_mesh()
        .x_desc("time (s)")
        .y_desc(ylabel)
        .y_label_formatter(&|v| crate::record::results::num(*v))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    Ok(c)
}

/// A workload's solid line in its colour, named in the legend.
fn line<'a, DB: DrawingBackend + 'a>(
    c: &mut Chart<'a, DB>,
    points: &[(f64, f64)],
    col: RGBColor,
    label: String,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    c.draw_series(LineSeries::new(points.iter().copied(), col.stroke_width(2)))?
        .label(label)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], col.stroke_width(2)));
    Ok(())
}

fn legend<'a, DB: DrawingBackend + 'a>(
    c: &mut Chart<'a, DB>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 14))
        .draw()
}
