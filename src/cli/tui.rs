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
    #[command(flatten)]
    pub lab: crate::cli::lab_args::LabArgs,
    /// Watch a lab served elsewhere (`schedlab serve`, or `--serve` on its dashboard or run)
    /// instead of starting one: HOST:PORT. Twice: two labs side by side (a baseline kernel and
    /// a patched one), rows paired by workload name. The token from --token-file or
    /// SCHEDLAB_TOKEN.
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["scenario", "attach", "serve"])]
    pub connect: Vec<String>,
    /// Serve this dashboard's lab too, for `tui --connect` elsewhere: HOST:PORT, or a port
    /// on loopback.
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<String>,
    #[command(flatten)]
    pub serving: crate::cli::serve::ServeArgs,
}

pub fn main(args: TuiArgs) -> Result<()> {
    match args.connect.as_slice() {
        [] => {}
        [addr] => return connect(addr, &args),
        [a, b] => return side_by_side(a, b, &args),
        _ => {
            return Err(crate::cli::ArgumentError(
                "--connect: one lab, or two side by side; not more".into(),
            )
            .into())
        }
    }
    let scenario = crate::cli::lab_args::lab_scenario(args.scenario.as_deref(), &args.lab)?;
    let window = scenario.verdict_window;
    let sampler = args.lab.sampler_priority;
    let interval = Duration::from_millis(args.interval.unwrap_or(scenario.interval_ms));
    let serve = match &args.serve {
        Some(addr) => {
            // The token, when one is generated, must be seen before the dashboard takes the
            // screen: it is printed, and the dashboard waits for Enter.
            let (config, said) = args.serving.config(addr, false)?;
            if !said.is_empty() {
                for line in &said {
                    crate::errln!("schedlab tui: {line}");
                }
                crate::errln!("schedlab tui: press Enter to open the dashboard");
                let _ = std::io::stdin().read_line(&mut String::new());
            }
            let welcome = crate::serve::welcome_here(&scenario.name, interval.as_millis() as u64);
            Some(Box::new(crate::ui::ServeOptions { config, welcome }))
        }
        None => None,
    };
    crate::ui::run(
        scenario,
        interval,
        crate::ui::Source::Local {
            make_backend: Box::new(move |interval| {
                let mut lab = crate::engine::lab::Lab::new(interval)?;
                lab.set_sampler_priority(sampler);
                if let Some(w) = window {
                    lab.set_verdict_window(w);
                }
                Ok(Box::new(lab) as Box<dyn Backend>)
            }),
            serve,
        },
    )
}

/// `tui --connect`: the dashboard on a served lab. The hello happens before the terminal is
/// taken, so a refusal is one line on the prompt.
fn connect(addr: &str, args: &TuiArgs) -> Result<()> {
    let token = crate::serve::client_token(args.serving.token_file.as_deref())?;
    let remote = crate::serve::Remote::connect(addr, token)?;
    let mut scenario = Scenario::empty(&remote.describe());
    scenario.interval_ms = remote.welcome.interval_ms;
    let interval = Duration::from_millis(remote.welcome.interval_ms.max(1));
    crate::ui::run(
        scenario,
        interval,
        crate::ui::Source::Remote(Box::new(remote)),
    )
}

/// `tui --connect A --connect B`: two served labs side by side. Both hellos happen before the
/// terminal is taken.
fn side_by_side(a: &str, b: &str, args: &TuiArgs) -> Result<()> {
    let token = crate::serve::client_token(args.serving.token_file.as_deref())?;
    let first = crate::serve::Remote::connect(a, token.clone())?;
    let second = crate::serve::Remote::connect(b, token)?;
    crate::ui::pair::run(first, second)
}
