//! The chatroom benchmark 1.0.1: client and server, wire-compatible with chat_c and chat_s
//! (docs/workloads.md), and `schedlab chat`, the two together for the dashboard.

mod bench;
mod client;
pub(crate) mod limits;
mod net;
pub mod protocol;
mod run_flags;
mod server;
mod slots;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use crate::workload::registry::params::refused;
pub use bench::{bench_main, BenchArgs};
use protocol::{check_messages, check_range, parse_count, RunSize};

const TIMEOUT_HELP: &str =
    "Give up when nothing moves for this many seconds (a stalled peer, a lost server)";

/// Arguments of `schedlab chat-server`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Prints `SRV: client connected, rooms = R messages = M` when a run \
    starts and `SRV(n) X messages received, Y messages sent` when it ends, then waits for the \
    next run, like chat_s. Runs are sized by the client. Example: \
    `schedlab chat-server 127.0.0.1 &` then `schedlab chat-client 127.0.0.1 30 1000 9999`."
)]
pub(crate) struct ServerArgs {
    /// IP address to listen on (0.0.0.0 for every interface; loopback by default).
    #[arg(default_value = "127.0.0.1")]
    pub ip: String,
    /// TCP port to listen on (0: any free port, printed on stderr).
    #[arg(default_value_t = protocol::DEFAULT_PORT.to_string())]
    pub port: String,
    /// Exit after N completed runs (default: serve runs until killed, like chat_s).
    #[arg(long, value_name = "N")]
    pub runs: Option<u64>,
    #[arg(long, value_name = "SECS", default_value_t = 10.0, help = TIMEOUT_HELP)]
    pub timeout: f64,
    /// Write the bound port to this descriptor and close it (used by `schedlab chat`).
    #[arg(long, hide = true)]
    pub port_fd: Option<i32>,
}

/// Arguments of `schedlab chat-client`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Each room has 20 users; each user is one TCP connection with a send \
    and a receive thread, on both sides. Each user sends MESSAGES messages of 100 bytes; the \
    server relays each to the 19 other users of the room. Prints the original's report; \
    `Average throughput` counts messages sent plus received per second. The loop of the \
    2002 chatroom benchmark thread: \
    `schedlab chat-client 127.0.0.1 30 1000 9999 | grep Average | awk '{print $4}'`."
)]
pub(crate) struct ClientArgs {
    /// IP address of the chat server.
    pub ip: String,
    /// Number of chat rooms (20 users each).
    #[arg(default_value_t = protocol::DEFAULT_ROOMS.to_string(), allow_hyphen_values = true)]
    pub rooms: String,
    /// Messages each user sends (1..=32767: the server's per-user hand-off semaphore holds
    /// at most 32767).
    #[arg(default_value_t = protocol::DEFAULT_MESSAGES.to_string(), allow_hyphen_values = true)]
    pub messages: String,
    /// Server TCP port.
    #[arg(default_value_t = protocol::DEFAULT_PORT.to_string(), allow_hyphen_values = true)]
    pub port: String,
    #[arg(long, value_name = "SECS", default_value_t = 10.0, help = TIMEOUT_HELP)]
    pub timeout: f64,
    /// Start even when the size guard finds it too big for this machine.
    #[arg(long)]
    pub force: bool,
}

pub(crate) fn server_main(args: ServerArgs) -> Result<()> {
    let addr = SocketAddr::new(parse_ip(&args.ip)?, parse_port(&args.port, true)?);
    let timeout = parse_timeout(args.timeout)?;
    if args.runs == Some(0) {
        return Err(refused(
            "--runs must be at least 1 (leave it out to serve forever)",
        ));
    }
    crate::sys::kernel::sysv::sweep_orphans()?;
    let listener = server::listen(addr)?;
    let bound = listener.local_addr()?;
    if let Some(fd) = args.port_fd {
        report_port(fd, bound.port())?;
    } else if addr.port() == 0 {
        crate::errln!("SRV: listening on {bound}");
    }
    server::serve(
        listener,
        &server::ServerConfig {
            runs: args.runs,
            timeout,
        },
    )
}

pub(crate) fn client_main(args: ClientArgs) -> Result<()> {
    let addr = SocketAddr::new(parse_ip(&args.ip)?, parse_port(&args.port, false)?);
    let size = parse_size(&args.rooms, &args.messages)?;
    let timeout = parse_timeout(args.timeout)?;
    guard("chat-client", size, 1, args.force)?;
    crate::sys::kernel::sysv::sweep_orphans()?;
    let region = crate::sys::shared::counters::CounterRegion::for_workload()?;
    let mut pool = slots::SlotPool::new(region.clone());
    let report = client::run(
        &client::ClientConfig {
            addr,
            size,
            timeout,
            verbose: true,
        },
        &mut pool,
    )?;
    crate::out!("{report}");
    region.mark_finished();
    Ok(())
}

/// Rooms and messages from the command line, in range (the machine's limits are checked
/// when the run starts, where the limit that stops it can be named).
fn parse_size(rooms: &str, messages: &str) -> Result<RunSize> {
    let r = parse_count("rooms", rooms).map_err(refused)?;
    let m = parse_count("messages", messages).map_err(refused)?;
    Ok(RunSize {
        rooms: check_range("rooms", r, i32::MAX as i64).map_err(refused)?,
        messages: check_messages(m).map_err(refused)?,
    })
}

fn parse_ip(text: &str) -> Result<IpAddr> {
    text.parse().map_err(|_| {
        refused(format!(
            "invalid address {text:?}: expected an IP address such as 127.0.0.1"
        ))
    })
}

fn parse_port(text: &str, zero_ok: bool) -> Result<u16> {
    let min = if zero_ok { 0 } else { 1 };
    match text.parse::<u16>() {
        Ok(p) if p >= min => Ok(p),
        _ => Err(refused(format!("port must be {min}..=65535, not {text:?}"))),
    }
}

fn parse_timeout(secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        return Err(refused(format!(
            "--timeout must be more than 0 and at most 86400 seconds, not {secs}"
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Tells `schedlab chat` which port the kernel gave us.
fn report_port(fd: i32, port: u16) -> Result<()> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // Raw: nix's fcntl takes a descriptor known to be open, and this call is what checks it.
    // SAFETY: fcntl(F_GETFD) takes no pointer; a descriptor that is not open fails with EBADF.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        bail!("--port-fd {fd} is not an open descriptor");
    }
    // SAFETY: `schedlab chat` handed us `fd` (--port-fd) for the port alone, it is open (checked above),
    // and this File becomes its only owner, closing it once when dropped.
    let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    writeln!(pipe, "{port}").map_err(|e| anyhow!("writing the port to --port-fd {fd}: {e}"))?;
    Ok(())
}

/// The size guard for a chat run (`sides`: 1 for the client, 2 for `schedlab chat`). A run
/// beyond the rooms this process can hold is refused now with chat's own reason (it names
/// the limit precisely; `schedlab chat` would otherwise retry a run that can never start); the
/// guard adds what that check does not see (RLIMIT_AS, RLIMIT_NPROC, both sides together).
pub(crate) fn guard(what: &str, size: RunSize, sides: u64, force: bool) -> Result<()> {
    if !force && size.rooms > limits::max_rooms().0 {
        return limits::reserve_for(size.rooms).map_err(|why| anyhow!(why));
    }
    crate::sys::kernel::guard::check(what, demand(size.rooms, sides), force)
}

/// What `rooms` rooms ask of the machine on `sides` sides (a client, a server, or both).
pub fn demand(rooms: u32, sides: u64) -> crate::sys::kernel::guard::Demand {
    crate::sys::kernel::guard::Demand::threads(u64::from(rooms) * limits::THREADS_PER_ROOM * sides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_numbers_get_one_clear_line() {
        let err = |r: &str, m: &str| parse_size(r, m).unwrap_err().to_string();
        assert_eq!(err("0", "100"), "rooms must be 1..=2147483647, not 0");
        assert_eq!(err("10", "-3"), "messages must be 1..=32767, not -3");
        assert!(err("10", "1e9")
            .starts_with("messages must be 1..=32767, not 1000000000 (the server hands"));
        assert!(parse_size("10", "32767").is_ok());
        assert!(err("ten", "1").contains("whole number"));
        assert!(parse_ip("300.1.1.1").is_err());
        assert!(parse_ip("::1").is_ok());
        assert!(parse_port("0", false).is_err());
        assert!(parse_port("0", true).is_ok());
        assert!(parse_port("70000", true).is_err());
        assert!(parse_timeout(0.0).is_err());
        assert!(parse_timeout(f64::NAN).is_err());
    }
}
