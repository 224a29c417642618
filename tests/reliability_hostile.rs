//! Hostile chat peers, the gaps tests/chat_hostile.rs leaves: what one peer can make the
//! server spend before it has proved anything. A start message for the largest run the
//! machine allows, then silence, must not make the server create that run's threads
//! up front; a peer holding many half-open control connections must not stop an honest run.
//! Each case ends with an honest 2-room run with exact counts.

#[path = "chat_common/mod.rs"]
mod chat_common;
mod common;

use std::net::TcpStream;
use std::time::Duration;

use chat_common::*;

const SECS: fn(u64) -> Duration = Duration::from_secs;
/// An idle server: main thread and signal thread.
const IDLE_THREADS: usize = 2;

#[test]
fn a_huge_announced_run_costs_nothing_until_its_connections_come() {
    let server = Server::start(&["--runs", "1", "--timeout", "2"]);
    // 200 rooms = 4,000 users = 8,000 threads if started eagerly.
    let mut c = control(server.port, 200, 10);
    std::thread::sleep(Duration::from_millis(500));
    let spent = threads(server.pid());
    assert!(
        spent <= IDLE_THREADS + 4,
        "an announced but unconnected run made the server start {spent} threads"
    );
    server.wait_for("run abandoned", SECS(15));
    assert!(closed_within(&mut c, SECS(5)));
    assert_eq!(
        wait_threads(server.pid(), IDLE_THREADS, SECS(10)),
        IDLE_THREADS
    );
    honest_run(server.port, 2, 50);
    let pid = server.pid();
    let status = server.wait(SECS(10));
    assert!(status.success());
    assert!(!has_ledger(pid), "server left its SysV ledger");
}

#[test]
fn many_silent_control_connections_do_not_stop_an_honest_run() {
    raise_nofile();
    let server = Server::start(&["--runs", "1", "--timeout", "2"]);
    // 200 peers that connect and say nothing, held open during the honest run.
    let silent: Vec<TcpStream> = (0..200).map(|_| connect(server.port)).collect();
    honest_run(server.port, 2, 50);
    drop(silent);
    let pid = server.pid();
    let status = server.wait(SECS(20));
    assert!(
        status.success(),
        "the server did not end well after its one honest run"
    );
    assert!(!has_ledger(pid), "server left its SysV ledger");
}

fn raise_nofile() {
    let lim = libc::rlimit {
        rlim_cur: 4096,
        rlim_max: 4096,
    };
    let mut cur = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `cur` is a live, writable rlimit for getrlimit to fill.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut cur) };
    if cur.rlim_cur < 4096 {
        // SAFETY: `lim` is a live rlimit that setrlimit only reads.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}
