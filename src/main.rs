//! The `schedlab` command line: one binary, one subcommand per tool.
// Output goes through schedlab::outln!/errln!, which never panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use schedlab::cli;
use schedlab::sys::exit::{lifeline, undo};
use schedlab::workload;

/// Ends on a command line clap refused: help and version as clap prints them; a usage error
/// in one line, then its usage line, exit 2.
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
    for line in cli::usage_lines(err, command) {
        schedlab::errln!("{line}");
    }
    std::process::exit(cli::USAGE_STATUS.into())
}

fn main() -> ExitCode {
    let args = workload::hackbench::rewrite_legacy_args(std::env::args_os().collect());
    if args.get(1).is_some_and(|a| a == undo::RESTORER_ARG) {
        // The knob restorer of a dashboard or `run` (src/sys/exit/undo.rs): nothing else.
        let journal = args
            .get(2)
            .map(std::path::PathBuf::from)
            .unwrap_or_default();
        std::process::exit(undo::restorer_main(&journal));
    }
    let command = args
        .get(1)
        .and_then(|a| a.to_str())
        .filter(|a| !a.starts_with('-'));
    if matches!(command, None | Some("tui" | "replay")) {
        // Before any thread exists: the dashboard runs in a child, guarded by this process.
        schedlab::ui::terminal::guard();
    }
    if matches!(command, None | Some("tui" | "run" | "contest" | "suite")) {
        // Still one thread: the sampler's descriptors will not wait for an RCU grace period.
        schedlab::sys::kernel::fdtable::reserve_early();
    }
    if matches!(
        command,
        None | Some("tui" | "run" | "contest" | "suite" | "explain" | "serve")
    ) {
        // Every command that steps the model: its per-step vectors stay in the heap.
        schedlab::sys::heap::keep_freed_memory();
    }
    lifeline::install();
    lifeline::arm_injected_panic(command.unwrap_or("tui"));
    schedlab::sys::exit::output::set_command(command.unwrap_or("tui"));
    let matches = match cli::command().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(err) => usage_error(&err, command),
    };
    // Errors name the command as it was typed (an old name too).
    let name = command.unwrap_or("tui");
    let result = cli::run(&matches);
    lifeline::settle();
    // Knobs changed on attached processes are put back on a normal end too.
    undo::restore_all();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line, the whole chain of causes: scripts grep it, people read it.
            schedlab::errln!("schedlab {name}: error: {err:#}");
            ExitCode::from(cli::exit_status(&err))
        }
    }
}
