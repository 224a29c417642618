//! `schedlab serve`: a lab without a dashboard, served over the network for `schedlab tui
//! --connect` (docs/serve.md), and the serving options `tui`, `replay` and `run` share.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Result;

use crate::engine::thread::Engine;
use crate::scenario::INTERVAL_MS;
use crate::serve::{ServeConfig, Server};

/// How a lab is served: shared by `serve`, and by `tui`, `replay` and `run` as `--serve`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct ServeArgs {
    /// Let connected dashboards start, stop and change workloads (default: they only watch).
    #[arg(long)]
    pub allow_control: bool,
    /// The token clients must present, from the file's first line (16 characters or more).
    /// Off loopback one is required: without this file a fresh one is generated and printed.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The most dashboards served at once; more are refused in words.
    #[arg(long, value_name = "N", default_value_t = crate::serve::server::DEFAULT_MAX_CLIENTS as u16,
        value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub max_clients: u16,
}

impl ServeArgs {
    /// The configuration for `addr`, and what the person must be told (the address, whether
    /// clients control, a generated token) before anything runs.
    pub fn config(&self, addr: &str, log: bool) -> Result<(ServeConfig, Vec<String>)> {
        let addr = crate::serve::parse_addr(addr)?;
        let (token, generated) = crate::serve::token_for(&addr, self.token_file.as_deref())?;
        let mut said = Vec::new();
        if generated {
            let t = token.as_deref().unwrap_or_default();
            said.push(format!(
                "token: {t} (off loopback every client needs it: save it to a file for \
                 `--token-file`, or set SCHEDLAB_TOKEN)"
            ));
        }
        Ok((
            ServeConfig {
                addr,
                token,
                allow_control: self.allow_control,
                max_clients: usize::from(self.max_clients),
                write_deadline: crate::serve::server::WRITE_DEADLINE,
                log,
            },
            said,
        ))
    }
}

/// Arguments of `schedlab serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A scenario file (TOML) or a preset's name (default: the dashboard's built-in one).
    pub scenario: Option<String>,
    /// Where to listen: HOST:PORT, or a port on loopback. Off loopback a token is required.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub addr: String,
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Sampling interval in milliseconds, 100 to 10000 (default: the scenario's).
    #[arg(short, long, value_parser = clap::value_parser!(u64)
        .range(*INTERVAL_MS.start()..=*INTERVAL_MS.end()))]
    pub interval: Option<u64>,
    #[command(flatten)]
    pub lab: crate::cli::lab_args::LabArgs,
}

/// Serves the lab until a signal (Ctrl-C, SIGTERM, SIGHUP) ends it; every workload it
/// started is stopped then, by the exit hook.
pub fn main(args: Args) -> Result<()> {
    let scenario = crate::cli::lab_args::lab_scenario(args.scenario.as_deref(), &args.lab)?;
    let interval = Duration::from_millis(args.interval.unwrap_or(scenario.interval_ms));
    let (config, said) = args.serve.config(&args.addr, true)?;
    crate::engine::live_groups::install_exit_hook();
    crate::sys::kernel::cgroup::sweep_orphans();
    crate::sys::kernel::cgroup_attached::sweep_orphans();

    let (commands, rx) = mpsc::channel();
    let welcome = crate::serve::welcome_here(&scenario.name, interval.as_millis() as u64);
    let control = config.allow_control;
    let server = Server::start(config, welcome, commands.clone())?;
    // The address first, alone on its line: a script (or a test) reads the port from it.
    crate::outln!("serving on {}", server.local_addr());
    let at = server.local_addr();
    // 0.0.0.0 is where it listens, not where to connect: name this host instead.
    let reach = if at.ip().is_unspecified() {
        format!("{}:{}", crate::record::metrics::hostname(), at.port())
    } else {
        at.to_string()
    };
    crate::errln!(
        "schedlab serve: {} on {at} ({}); watch it with `schedlab tui --connect {reach}`; \
         Ctrl-C stops it",
        scenario.name,
        if control {
            "clients may control it"
        } else {
            "read-only"
        },
    );
    for line in said {
        crate::errln!("schedlab serve: {line}");
    }
    let mut lab = crate::engine::lab::Lab::new(interval)?;
    lab.set_sampler_priority(args.lab.sampler_priority);
    if let Some(w) = scenario.verdict_window {
        lab.set_verdict_window(w);
    }
    for decl in &scenario.workloads {
        let _ = commands.send(crate::engine::Command::Add(decl.clone()));
    }
    Engine::new(Box::new(lab), interval).run(rx, |e| {
        if let crate::engine::Event::Error(why) = &e {
            crate::errln!("schedlab serve: {why}");
        }
        server.publish(&e);
        true
    });
    Ok(())
}
