//! The commands, one file each: `tui` opens the dashboard on the live engine, `replay` on a
//! recording; the others (run, contest, compare, plot, cleanup) print or write their results.
//! The workloads' own subcommands come from the registry; [`command`] puts them all on one
//! command line and [`run`] runs the one clap found.

pub mod cleanup;
pub mod compare;
pub mod contest;
pub mod plot;
pub mod replay;
pub mod run;
pub mod tui;

use anyhow::Result;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::workload::registry;

#[derive(Parser)]
#[command(
    name = "schedlab",
    version,
    about = "A terminal lab for Linux scheduler behaviour",
    long_about = "A terminal lab for Linux scheduler behaviour.\n\n\
        With no command, opens the dashboard on the built-in default scenario: contest's \
        fork_load against a -j4 reference job in one session, with each one's CPU share \
        next to its fair share.\n\n\
        Each classic workload also runs on its own and prints what the original printed."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Open the dashboard on a scenario file (the built-in default when none is given).
    Tui(tui::TuiArgs),
    /// Run a scenario without the dashboard, N times, and print statistics across repeats.
    Run(run::Args),
    /// contest: time a reference job alone and under each load.
    Contest(contest::Args),
    /// Compare result files with the first: %change ± %stddev, significant or within noise.
    Compare(compare::Args),
    /// Play a recording back.
    Replay(replay::ReplayArgs),
    /// Draw a recording as a picture: throughput, CPU share vs fair share, context switches.
    Plot(plot::PlotArgs),
    /// Remove SysV objects left by schedlab processes that were killed outright.
    Cleanup,
}

/// The whole `schedlab` command line: the commands above, then every workload kind's.
pub fn command() -> clap::Command {
    Cli::command().subcommands(registry::subcommands())
}

/// Runs what clap found on the command line (the dashboard when it found no command).
pub fn run(matches: &ArgMatches) -> Result<()> {
    if let Some((name, sub)) = matches.subcommand() {
        if let Some(result) = registry::run_subcommand(name, sub) {
            return result;
        }
    }
    match Cli::from_arg_matches(matches)?.command {
        None => tui::main(tui::TuiArgs::default()),
        Some(Cmd::Tui(a)) => tui::main(a),
        Some(Cmd::Run(a)) => run::main(a),
        Some(Cmd::Contest(a)) => contest::main(a),
        Some(Cmd::Compare(a)) => compare::main(a),
        Some(Cmd::Replay(a)) => replay::replay_main(a),
        Some(Cmd::Plot(a)) => plot::plot_main(a),
        Some(Cmd::Cleanup) => cleanup::main(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(args: &[&str]) -> String {
        let err = command().try_get_matches_from(args).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
        err.render().to_string()
    }

    /// The registry's test-only kind (workload/registry/toy.rs) is a subcommand, with its
    /// parameters' help and defaults, and nothing is written for it here.
    #[test]
    fn a_kind_in_the_registry_is_a_subcommand_with_its_help() {
        let top = help(&["schedlab", "--help"]);
        assert!(top.contains("toy"), "{top}");
        let toy = help(&["schedlab", "toy", "--help"]);
        assert!(toy.contains("A kind that exists only in tests"), "{toy}");
        assert!(
            toy.contains("Times it spins before it ends (1 to 1000) [default: 3]"),
            "{toy}"
        );
        for name in ["toy", "plaything"] {
            let m = command()
                .try_get_matches_from(["schedlab", name, "--spins", "5"])
                .unwrap();
            assert_eq!(m.subcommand_name(), Some("toy"));
            run(&m).unwrap();
        }
        let m = command()
            .try_get_matches_from(["schedlab", "toy", "--spins", "0"])
            .unwrap();
        assert_eq!(
            run(&m).unwrap_err().to_string(),
            "spins must be at least 1, found 0"
        );
    }
}
