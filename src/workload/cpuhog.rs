//! A plain CPU hog: threads that spin, each counting its loops in its own counter slot.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::sys::shared::counters::CounterRegion;
use crate::workload::registry::params::refused;
use crate::workload::registry::params::CPU_HOG;

/// Arguments of `schedlab cpu-hog`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    #[arg(long, default_value_t = CPU_HOG.param("threads").default_count(),
          help = CPU_HOG.param("threads").cli_help())]
    pub threads: u32,
    /// Stop after this many seconds (default: run until stopped).
    #[arg(long)]
    pub duration: Option<f64>,
}

pub fn main(args: Args) -> Result<()> {
    let n = CPU_HOG
        .param("threads")
        .check_count(i64::from(args.threads))
        .map_err(refused)?;
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(refused(format!(
                "duration must be a positive number of seconds, not {d}"
            )));
        }
    }
    let region = CounterRegion::for_workload()?;
    static STOP: AtomicBool = AtomicBool::new(false);
    let start = Instant::now();
    let mut handles = Vec::new();
    for i in 0..n {
        let slot = region.claim()?;
        handles.push(
            std::thread::Builder::new()
                .name(format!("hog-{i}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    while !STOP.load(Relaxed) {
                        slot.add(1);
                    }
                })
                .context("creating a thread")?,
        );
    }
    match args.duration {
        Some(d) => std::thread::sleep(Duration::from_secs_f64(d)),
        None => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
    }
    STOP.store(true, Relaxed);
    for h in handles {
        let _ = h.join();
    }
    region.mark_finished();
    let secs = start.elapsed().as_secs_f64();
    crate::outln!("Loops: {} in {secs:.3} s with {n} threads", region.total());
    Ok(())
}
