//! `schedlab plot`: a recording turned into a picture.

use std::path::PathBuf;

use anyhow::Result;

use crate::record::latency::{pooled, RepeatLatency};
use crate::record::plot::plot_run;
use crate::record::recording::Recording;

/// Arguments of `schedlab plot`.
#[derive(clap::Args, Debug)]
pub(crate) struct PlotArgs {
    /// A recording made with `schedlab run --record FILE`.
    pub recording: PathBuf,
    /// The picture to write: .svg or .png.
    #[arg(short, long, value_name = "OUT.svg|OUT.png")]
    pub output: PathBuf,
}

pub(crate) fn plot_main(args: PlotArgs) -> Result<()> {
    let rec = Recording::read(&args.recording)?;
    let h = &rec.header;
    let title = format!(
        "{}: kernel {}, {} CPUs, autogroup {}{}",
        h.scenario.name,
        h.kernel,
        h.cpus,
        if h.autogroup { "on" } else { "off" },
        if rec.complete { "" } else { " (cut short)" }
    );
    // The run's latency distributions, as its results merge them: each repeat's steady part.
    let repeats: Vec<RepeatLatency> = rec.repeats.iter().map(|r| RepeatLatency::of(r)).collect();
    plot_run(&rec.frames(), &pooled(&repeats), &title, &args.output)
}
