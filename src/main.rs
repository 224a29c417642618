//! The `schedlab` command line: one binary, one subcommand per tool.
// Output goes through schedlab::outln!/errln!, which never panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use schedlab::cli;
use schedlab::sys::lifeline;
use schedlab::workload;

/// Ends on a command line clap refused: help and version as clap prints them; a usage error
/// in the one-line form of every other error (clap's tips folded in), then its usage line,
/// exit 2.
fn usage_error(err: &clap::Error, command: Option<&str>) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        err.exit();
    }
    let known = |name: &str| {
        cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == name || c.get_all_aliases().any(|a| a == name))
    };
    let who = match command.filter(|c| known(c)) {
        Some(c) => format!("schedlab {c}"),
        None => "schedlab".to_string(),
    };
    let (line, usage) = one_line(&err.render().to_string());
    schedlab::errln!("{who}: error: {line}");
    if let Some(usage) = usage {
        schedlab::errln!("{usage} (more with --help)");
    }
    std::process::exit(2)
}

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
    if !tips.is_empty() {
        message = format!("{message} ({})", tips.join("; "));
    }
    (message, usage)
}

fn main() -> ExitCode {
    let args = workload::hackbench::rewrite_legacy_args(std::env::args_os().collect());
    let command = args
        .get(1)
        .and_then(|a| a.to_str())
        .filter(|a| !a.starts_with('-'));
    if matches!(command, None | Some("tui" | "replay")) {
        // Before any thread exists: the dashboard runs in a child, guarded by this process.
        schedlab::ui::terminal::guard();
    }
    if matches!(command, None | Some("tui" | "run" | "contest")) {
        // Still one thread: the sampler's descriptors will not wait for an RCU grace period.
        schedlab::sys::fdtable::reserve_early();
    }
    lifeline::install();
    lifeline::arm_injected_panic(command.unwrap_or("tui"));
    schedlab::sys::output::set_command(command.unwrap_or("tui"));
    let matches = match cli::command().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(err) => usage_error(&err, command),
    };
    // Errors name the command as it was typed (an old name too).
    let name = command.unwrap_or("tui");
    let result = cli::run(&matches);
    lifeline::settle();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, the whole chain of causes: scripts grep it, people read it.
            schedlab::errln!("schedlab {name}: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
