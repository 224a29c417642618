//! `schedlab tui`: the dashboard on a scenario file (the built-in default when none is given),
//! driving the live Lab.

use std::time::Duration;

use anyhow::Result;

use crate::engine::Backend;
use crate::scenario::{Scenario, INTERVAL_MS};

/// Arguments of `schedlab tui`.
#[derive(clap::Args, Debug, Default)]
pub struct TuiArgs {
    /// A scenario file (TOML), or the name of a preset in assets/scenarios (e.g.
    /// chat-30x1000). Without one: contest's fork_load against a -j4 reference job, in one
    /// session.
    pub scenario: Option<String>,
    /// Sampling interval in milliseconds, 100 to 10000 (default: the scenario's).
    #[arg(short, long, value_parser = clap::value_parser!(u64)
        .range(*INTERVAL_MS.start()..=*INTERVAL_MS.end()))]
    pub interval: Option<u64>,
    /// Seconds each verdict covers (1 to 600; default: the scenario's, else 5).
    #[arg(long, value_name = "SECS", value_parser = crate::cli::run::verdict_window)]
    pub verdict_window: Option<f64>,
    /// How the sampling thread is scheduled: realtime (SCHED_FIFO 1 when permitted; the
    /// status line then says `self … rt`) or normal.
    #[arg(long, value_enum, default_value_t = crate::sys::kernel::priority::SamplerPriority::Realtime)]
    pub sampler_priority: crate::sys::kernel::priority::SamplerPriority,
    /// Start even when the size guard finds it too big for this machine.
    #[arg(long)]
    pub force: bool,
    /// Also watch processes schedlab did not start (never signalled; stopping detaches):
    /// pid:PID, comm:NAME, session:SID or cgroup:PATH. Repeatable.
    #[arg(long, value_name = "SELECTOR", value_parser = crate::cli::run::attach_selector)]
    pub attach: Vec<crate::probe::Selector>,
}

pub fn main(args: TuiArgs) -> Result<()> {
    let mut scenario = match &args.scenario {
        None => Scenario::builtin_default(),
        Some(arg) => Scenario::open(arg)?.0,
    };
    scenario.attach(&args.attach);
    if args.verdict_window.is_some() {
        scenario.verdict_window = args.verdict_window;
    }
    let window = scenario.verdict_window;
    let sampler = args.sampler_priority;
    crate::scenario::check_scenario(&scenario, args.force)?;
    let interval = Duration::from_millis(args.interval.unwrap_or(scenario.interval_ms));
    crate::ui::run(scenario, interval, move |interval| {
        let mut lab = crate::engine::lab::Lab::new(interval)?;
        lab.set_sampler_priority(sampler);
        if let Some(w) = window {
            lab.set_verdict_window(w);
        }
        Ok(Box::new(lab) as Box<dyn Backend>)
    })
}
