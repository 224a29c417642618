//! What the commands that start a live lab share (`tui`, `serve`, `run`): the parsers of
//! `--attach` and `--verdict-window`, and the scenario a lab starts from. Kept apart so those
//! commands import it and not each other.

use anyhow::Result;

use crate::scenario::Scenario;

/// Parses `--attach`: a selector that matches something on this machine now.
pub fn attach_selector(s: &str) -> Result<crate::probe::Selector, String> {
    crate::probe::Selector::parse(s)?.resolve_here()
}

/// Parses a verdict window: 1 to 600 seconds.
pub fn verdict_window(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('s').parse::<f64>() {
        Ok(v) if (1.0..=600.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds from 1 to 600")),
    }
}

/// The scenario a live lab runs (the dashboard's or `serve`'s): the file or preset named, else
/// the built-in default, with what is attached and the verdict window given, checked against
/// the machine's limits.
pub(crate) fn lab_scenario(
    arg: Option<&str>,
    attach: &[crate::probe::Selector],
    verdict_window: Option<f64>,
    force: bool,
) -> Result<Scenario> {
    let mut scenario = match arg {
        None => Scenario::builtin_default(),
        Some(arg) => Scenario::open(arg)?.0,
    };
    scenario.attach(attach);
    if verdict_window.is_some() {
        scenario.verdict_window = verdict_window;
    }
    crate::scenario::check_scenario(&scenario, force)?;
    Ok(scenario)
}
