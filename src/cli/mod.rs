//! The commands, one file each: `tui` opens the dashboard on the live engine, `replay` on a
//! recording; the others (run, contest, compare, suite, explain, plot, cleanup) print or write their results.
//! The workloads' own subcommands come from the registry; [`command`] puts them all on one
//! command line and [`run`] runs the one clap found.

pub mod cleanup;
pub mod compare;
pub mod contest;
pub mod explain;
pub mod lab_args;
pub mod plot;
pub mod replay;
pub mod run;
pub mod serve;
pub mod suite;
pub mod tui;

use anyhow::Result;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::workload::registry;
pub use crate::workload::registry::params::ArgumentError;

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
    /// Run the findings (known scheduler behaviours) and report what this kernel did.
    Suite(suite::Args),
    /// Explain a workload's deviation from its fair share: the scenario as it is against
    /// variants that each change one thing, with repeats, and the mechanism they point to.
    Explain(explain::Args),
    /// Serve a lab over the network, without a dashboard, for `schedlab tui --connect`.
    Serve(serve::Args),
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
        Some(Cmd::Suite(a)) => suite::main(a),
        Some(Cmd::Explain(a)) => explain::main(a),
        Some(Cmd::Serve(a)) => serve::main(a),
        Some(Cmd::Replay(a)) => replay::replay_main(a),
        Some(Cmd::Plot(a)) => plot::plot_main(a),
        Some(Cmd::Cleanup) => cleanup::main(),
    }
}

/// The status of a command whose arguments were wrong: clap's, whoever found the mistake.
pub const USAGE_STATUS: u8 = 2;

/// The status a failed command ends with: [`USAGE_STATUS`] for a value its arguments gave
/// that is not taken ([`ArgumentError`]), 1 for anything else.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    if err.chain().any(|e| e.is::<ArgumentError>()) {
        USAGE_STATUS
    } else {
        1
    }
}

/// A usage error clap found, as schedlab writes every error: one line naming the command as
/// typed (`schedlab tui: error: ...`, clap's tips folded in, std's parse errors in words),
/// then clap's usage line when it has one.
pub fn usage_lines(err: &clap::Error, typed: Option<&str>) -> Vec<String> {
    let known = |name: &str| {
        command()
            .get_subcommands()
            .any(|c| c.get_name() == name || c.get_all_aliases().any(|a| a == name))
    };
    let who = match typed.filter(|c| known(c)) {
        Some(c) => format!("schedlab {c}"),
        None => "schedlab".to_string(),
    };
    let (line, usage) = one_line(&err.render().to_string());
    let mut lines = vec![format!("{who}: error: {line}")];
    lines.extend(usage.map(|u| format!("{u} (more with --help)")));
    lines
}

/// std's words for a number that did not parse, as a person would say them.
const PARSE_WORDS: [(&str, &str); 5] = [
    ("invalid digit found in string", "not a whole number"),
    ("invalid float literal", "not a number"),
    ("cannot parse integer from empty string", "empty"),
    ("number too large to fit in target type", "too large"),
    ("number too small to fit in target type", "too small"),
];

/// clap's rendering (`error: ...`, indented details, `tip: ...` paragraphs, `Usage: ...`,
/// `For more information ...`) as one line, and the usage line.
fn one_line(rendered: &str) -> (String, Option<String>) {
    let mut message = String::new();
    let mut tips = Vec::new();
    let mut usage = None;
    for paragraph in rendered.split("\n\n") {
        let mut lines = paragraph.lines().map(str::trim).filter(|l| !l.is_empty());
        let Some(first) = lines.next() else { continue };
        if let Some(text) = first.strip_prefix("error: ") {
            message = text.to_string();
            let details: Vec<&str> = lines.collect();
            if !details.is_empty() {
                let sep = if message.ends_with(':') { " " } else { "; " };
                message = format!("{message}{sep}{}", details.join(", "));
            }
        } else if let Some(tip) = first.strip_prefix("tip: ") {
            tips.push(tip.to_string());
        } else if first.starts_with("Usage: ") && usage.is_none() {
            usage = Some(first.to_string());
        }
    }
    for (std_words, words) in PARSE_WORDS {
        message = message.replace(std_words, words);
    }
    if !tips.is_empty() {
        message = format!("{message} ({})", tips.join("; "));
    }
    (message, usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(args: &[&str]) -> String {
        let err = command().try_get_matches_from(args).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
        err.render().to_string()
    }

    #[test]
    fn a_number_that_does_not_parse_is_said_in_words() {
        let err = command()
            .try_get_matches_from(["schedlab", "tui", "-i", "abc"])
            .unwrap_err();
        assert_eq!(
            usage_lines(&err, Some("tui"))[0],
            "schedlab tui: error: invalid value 'abc' for '--interval <INTERVAL>': not a \
             whole number"
        );
    }

    #[test]
    fn argument_mistakes_end_with_clap_s_status() {
        let m = command()
            .try_get_matches_from(["schedlab", "toy", "--spins", "0"])
            .unwrap();
        let err = run(&m).unwrap_err().context("whatever came above");
        assert_eq!(exit_status(&err), USAGE_STATUS);
        assert_eq!(exit_status(&anyhow::anyhow!("the disk is full")), 1);
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
