//! The `schedlab` command line: one binary, one subcommand per tool.
// Output goes through schedlab::outln!/errln!, which never panic on a closed pipe.
#![warn(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use schedlab::sys::lifeline;
use schedlab::{cli, workload};

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
    Tui(cli::tui::TuiArgs),
    /// The chatroom benchmark's server (chat_s): serves runs one after another.
    ChatServer(workload::chat::ServerArgs),
    /// The chatroom benchmark's client (chat_c): runs the rooms and prints the throughput.
    ChatClient(workload::chat::ClientArgs),
    /// Chat server and client runs together on loopback (the dashboard's chat workload).
    ChatBench(workload::chat::BenchArgs),
    /// hackbench: groups of 20 senders and 20 receivers over sockets or pipes.
    Hackbench(workload::hackbench::Args),
    /// contest's fork_load: fork, exec a nil program, wait, repeat.
    ForkLoad(workload::fork_load::Args),
    /// The reference job: fixed parallel CPU work standing in for `make -j4 bzImage`.
    RefJob(workload::refjob::Args),
    /// A plain CPU hog.
    CpuHog(workload::cpuhog::Args),
    /// contest: time a reference job alone and under each load.
    Contest(cli::contest::Args),
    /// msgbench: timed batches of msgget, msgsnd, msgctl over many queues.
    Msgbench(workload::msgbench::Args),
    /// Message, semaphore or pipe ping-pong between pairs of tasks.
    IpcPingpong(workload::pingpong::Args),
    /// Threads woken by a timer and by another thread, timing how late they run.
    WakeupProbe(workload::wakeup::Args),
    /// Remove SysV objects left by schedlab processes that were killed outright.
    Cleanup,
    /// Run a scenario without the dashboard, N times, and print statistics across repeats.
    Run(cli::run::Args),
    /// Compare result files with the first: %change ± %stddev, significant or within noise.
    Compare(cli::compare::Args),
    /// Draw a recording as a picture: throughput, CPU share vs fair share, context switches.
    Plot(cli::plot::PlotArgs),
    /// Play a recording back.
    Replay(cli::replay::ReplayArgs),
}

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
        Cli::command()
            .get_subcommands()
            .any(|c| c.get_name() == name)
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
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => usage_error(&err, command),
    };
    let (name, result) = match cli.command {
        None => ("tui", cli::tui::main(cli::tui::TuiArgs::default())),
        Some(Cmd::Tui(a)) => ("tui", cli::tui::main(a)),
        Some(Cmd::ChatServer(a)) => ("chat-server", workload::chat::server_main(a)),
        Some(Cmd::ChatClient(a)) => ("chat-client", workload::chat::client_main(a)),
        Some(Cmd::ChatBench(a)) => ("chat-bench", workload::chat::bench_main(a)),
        Some(Cmd::Hackbench(a)) => ("hackbench", workload::hackbench::main(a)),
        Some(Cmd::ForkLoad(a)) => ("fork-load", workload::fork_load::main(a)),
        Some(Cmd::RefJob(a)) => ("ref-job", workload::refjob::main(a)),
        Some(Cmd::CpuHog(a)) => ("cpu-hog", workload::cpuhog::main(a)),
        Some(Cmd::Contest(a)) => ("contest", cli::contest::main(a)),
        Some(Cmd::Msgbench(a)) => ("msgbench", workload::msgbench::main(a)),
        Some(Cmd::IpcPingpong(a)) => ("ipc-pingpong", workload::pingpong::main(a)),
        Some(Cmd::WakeupProbe(a)) => ("wakeup-probe", workload::wakeup::main(a)),
        Some(Cmd::Cleanup) => ("cleanup", cli::cleanup::main()),
        Some(Cmd::Run(a)) => ("run", cli::run::main(a)),
        Some(Cmd::Compare(a)) => ("compare", cli::compare::main(a)),
        Some(Cmd::Plot(a)) => ("plot", cli::plot::plot_main(a)),
        Some(Cmd::Replay(a)) => ("replay", cli::replay::replay_main(a)),
    };
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
