//! `schedlab plot`: a recording turned into a picture.

use std::path::PathBuf;

use anyhow::Result;

use crate::record::plot::plot;
use crate::record::recording::Recording;

/// Arguments of `schedlab plot`.
#[derive(clap::Args, Debug)]
pub struct PlotArgs {
    /// A recording made with `schedlab run --record FILE`.
    pub recording: PathBuf,
    /// The picture to write: .svg or .png.
    #[arg(short, long, value_name = "OUT.svg|OUT.png")]
    pub output: PathBuf,
}

pub fn plot_main(args: PlotArgs) -> Result<()> {
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
    plot(&rec.frames(), &title, &args.output)
}
