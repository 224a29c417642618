//! What the commands that start a live lab share (`tui`, `serve`, `run`): their lab options
//! (`--verdict-window`, `--sampler-priority`, `--force`, `--attach`), written once and
//! flattened into each, and the scenario a lab starts from. Kept apart so those commands
//! import it and not each other.

use anyhow::Result;

use crate::probe::Selector;
use crate::scenario::Scenario;
use crate::sys::kernel::priority::SamplerPriority;

/// The options of every command that starts a live lab.
#[derive(clap::Args, Debug, Default)]
pub struct LabArgs {
    /// Seconds each verdict covers (1 to 600; default: the scenario's, else 5).
    #[arg(long, value_name = "SECS", value_parser = verdict_window)]
    pub verdict_window: Option<f64>,
    /// How the sampling thread is scheduled: realtime (SCHED_FIFO 1 when permitted, so the
    /// load it watches cannot make it late; the fairness model counts it, and the dashboard's
    /// status line says `self … rt`) or normal.
    #[arg(long, value_enum, default_value_t = SamplerPriority::Realtime)]
    pub sampler_priority: SamplerPriority,
    /// Start even when the size guard finds it too big for this machine.
    #[arg(long)]
    pub force: bool,
    /// Also watch processes schedlab did not start (never signalled; stopping detaches):
    /// pid:PID, comm:NAME, session:SID or cgroup:PATH. Repeatable.
    #[arg(long, value_name = "SELECTOR", value_parser = attach_selector)]
    pub attach: Vec<Selector>,
}

impl LabArgs {
    /// `scenario` with what these options attach and the verdict window they set, checked
    /// against the machine's limits.
    pub(crate) fn apply(&self, scenario: &mut Scenario) -> Result<()> {
        scenario.attach(&self.attach);
        if self.verdict_window.is_some() {
            scenario.verdict_window = self.verdict_window;
        }
        crate::scenario::check_scenario(scenario, self.force)
    }
}

/// Parses `--attach`: a selector that matches something on this machine now.
pub fn attach_selector(s: &str) -> Result<Selector, String> {
    Selector::parse(s)?.resolve_here()
}

/// Parses a verdict window: 1 to 600 seconds.
pub fn verdict_window(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('s').parse::<f64>() {
        Ok(v) if (1.0..=600.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds from 1 to 600")),
    }
}

/// The scenario a live lab runs (the dashboard's or `serve`'s): the file or preset named, else
/// the built-in default, with the lab options applied.
pub(crate) fn lab_scenario(arg: Option<&str>, lab: &LabArgs) -> Result<Scenario> {
    let mut scenario = match arg {
        None => Scenario::builtin_default(),
        Some(arg) => Scenario::open(arg)?.0,
    };
    lab.apply(&mut scenario)?;
    Ok(scenario)
}
