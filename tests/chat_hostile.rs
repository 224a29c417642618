//! The chat server against hostile or broken peers (issue #8). Each case is followed by an
//! honest 2-room run with exact counts, and checks that the abandoned run's threads and
//! semaphore sets are gone.

mod chat_common;
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use chat_common::*;
use common::wait::until;

const SECS: fn(u64) -> Duration = Duration::from_secs;
/// The server's --timeout in these tests: short, so a stalled run is given up quickly.
const TIMEOUT: &str = "2";
/// Main thread and signal thread: what an idle server runs.
const IDLE_THREADS: usize = 2;

fn server(runs: u32) -> Server {
    Server::start(&["--runs", &runs.to_string(), "--timeout", TIMEOUT])
}

/// How each case ends: an honest 2-room run with exact counts, then the server's own end.
fn honest_run_then_finish(server: Server) {
    honest_run(server.port, 2, 50);
    finish(server);
}

fn finish(server: Server) {
    let pid = server.pid();
    let err = server.stderr.clone();
    let status = server.wait(SECS(10));
    assert!(status.success(), "{}", err.lock().unwrap());
    assert!(!has_ledger(pid), "server left its SysV ledger");
}

#[test]
fn nonsense_start_messages_are_refused_and_the_next_run_is_served() {
    let server = server(1);
    for (rooms, messages) in [
        (0, 10),
        (-1, 10),
        (i32::MAX, 10),
        (1, 0),
        (1, -5),
        (1, 1_000_000_000),
    ] {
        let mut c = control(server.port, rooms, messages);
        assert!(
            closed_within(&mut c, SECS(5)),
            "start message ({rooms}, {messages}) not refused"
        );
    }
    server.wait_for("rooms = 1 messages = 1000000000", SECS(5));
    let err = server.err();
    assert_eq!(err.matches("refused start message").count(), 6, "{err}");
    assert!(err.contains("rooms must be 1..="), "{err}");
    assert!(err.contains("this machine's limit"), "{err}");
    assert_eq!(threads(server.pid()), IDLE_THREADS);
    honest_run_then_finish(server);
}

#[test]
fn garbage_and_early_close_on_the_control_connection() {
    let server = server(1);
    let mut c = connect(server.port);
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(closed_within(&mut c, SECS(5)));
    let mut c = connect(server.port);
    c.write_all(&[1, 2, 3]).unwrap();
    drop(c);
    server.wait_for("closed after 3 of 8 bytes", SECS(5));
    server.wait_for("refused start message", SECS(5));
    honest_run_then_finish(server);
}

#[test]
fn a_half_sent_start_message_neither_blocks_others_nor_stays_forever() {
    let server = server(2);
    // Alone, it is closed by the timeout.
    let mut partial = connect(server.port);
    partial.write_all(&[2, 0, 0]).unwrap();
    assert!(
        closed_within(&mut partial, SECS(10)),
        "silent connection never closed"
    );
    server.wait_for(
        "sent 3 of 8 bytes of the start message, then nothing for",
        SECS(5),
    );
    // Next to an honest client, it does not hold that client up, and is closed when its
    // run starts (one run at a time).
    let mut partial = connect(server.port);
    partial.write_all(&[2, 0, 0]).unwrap();
    honest_run(server.port, 2, 50);
    assert!(closed_within(&mut partial, SECS(1)));
    server.wait_for("closing 1 other waiting connection(s)", SECS(5));
    honest_run_then_finish(server);
}

#[test]
fn data_connections_that_never_come_abandon_the_run() {
    let server = server(1);
    let mut c = control(server.port, 1, 10);
    let _some: Vec<TcpStream> = (0..5).map(|_| connect(server.port)).collect();
    server.wait_for("run abandoned", SECS(10));
    assert!(
        server.err().contains("5 of 20 data connections"),
        "{}",
        server.err()
    );
    assert!(closed_within(&mut c, SECS(5)));
    assert_eq!(threads(server.pid()), IDLE_THREADS);
    honest_run_then_finish(server);
}

/// Opens a fake client's run of one room and waits for START.
fn started_room(port: u16, messages: i32) -> (TcpStream, Vec<TcpStream>) {
    let mut c = control(port, 1, messages);
    let conns: Vec<TcpStream> = (0..20).map(|_| connect(port)).collect();
    let mut b = [0u8; 1];
    c.set_read_timeout(Some(SECS(10))).unwrap();
    c.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 0x11);
    (c, conns)
}

#[test]
fn a_partial_frame_that_stalls_is_timed_out_and_everything_freed() {
    let server = server(1);
    let pid = server.pid();
    let (_c, conns) = started_room(server.port, 10);
    assert_eq!(threads(pid), 40 + IDLE_THREADS);
    let sems = ledger_ids(pid);
    assert_eq!(sems.len(), 1);
    (&conns[0]).write_all(&[7u8; 50]).unwrap();
    server.wait_for("run abandoned", SECS(10));
    assert!(
        server.err().contains("no message moved"),
        "{}",
        server.err()
    );
    assert_eq!(wait_threads(pid, IDLE_THREADS, SECS(5)), IDLE_THREADS);
    assert_gone(&sems);
    for c in &conns {
        assert!(closed_within(&mut c.try_clone().unwrap(), SECS(5)));
    }
    honest_run_then_finish(server);
}

#[test]
fn garbage_on_data_connections_then_a_vanishing_client() {
    let server = server(1);
    let pid = server.pid();
    let (c, conns) = started_room(server.port, 2);
    let sems = ledger_ids(pid);
    let junk: Vec<u8> = (0..1037u32).map(|i| (i * 7919 % 251) as u8).collect();
    for s in &conns {
        let _ = (&*s).write_all(&junk);
    }
    drop(conns);
    drop(c);
    server.wait_for("run abandoned", SECS(10));
    assert_eq!(wait_threads(pid, IDLE_THREADS, SECS(5)), IDLE_THREADS);
    assert_gone(&sems);
    honest_run_then_finish(server);
}

#[test]
fn a_client_killed_mid_run_is_abandoned_and_cleaned_up() {
    let server = server(1);
    let pid = server.pid();
    // Long, and within chat's limit of 32,767 messages (SEMVMX).
    let mut client = start_client(server.port, 2, 30000, Stdio::null(), Stdio::null());
    let cpid = client.id();
    server.wait_for("client connected", SECS(10));
    // Wait until the run is under way on both sides: all 80 relay threads started.
    // Generous: on a loaded machine 40 accepts and 80 thread starts can take seconds, and
    // the wait ends as soon as they are all there. At least, not exactly: a poll starved
    // for a while (CI runs in the root autogroup, one task among hundreds) must not miss a
    // moment that a thread starting or ending makes brief.
    let seen = wait_threads_at_least(pid, 80 + IDLE_THREADS, SECS(60));
    assert!(
        seen >= 80 + IDLE_THREADS,
        "server threads: {seen}; server said:\n{}",
        server.stderr.lock().unwrap()
    );
    // Both sides record their semaphore sets in their ledgers; on a busy machine the client
    // may still be getting there: wait for them rather than guess a delay.
    let (server_sems, client_sems) = until(SECS(20), Duration::from_millis(50), || {
        let (s, c) = (ledger_ids(pid), ledger_ids(cpid));
        if s.len() == 2 && c.len() == 2 {
            Ok((s, c))
        } else {
            Err((s, c))
        }
    })
    .unwrap_or_else(|seen| seen);
    assert_eq!(server_sems.len(), 2);
    assert_eq!(client_sems.len(), 2, "barrier and done sets");
    client.kill().unwrap();
    client.wait().unwrap();
    server.wait_for("run abandoned", SECS(10));
    assert_eq!(wait_threads(pid, IDLE_THREADS, SECS(5)), IDLE_THREADS);
    assert_gone(&server_sems);
    // A SIGKILL leaves the client's sets; the next schedlab command sweeps them.
    honest_run(server.port, 2, 50);
    assert_gone(&client_sems);
    assert!(!has_ledger(cpid));
    finish(server);
}

#[test]
fn a_burst_of_a_thousand_connections_does_not_stop_an_honest_run() {
    raise_nofile();
    let server = server(2);
    let pid = server.pid();
    let burst: Vec<TcpStream> = (0..1000).map(|_| connect(server.port)).collect();
    honest_run(server.port, 2, 50);
    drop(burst);
    // The silent ones it still held are closed by their timeout; then a second run.
    std::thread::sleep(SECS(3));
    honest_run(server.port, 2, 50);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    assert!(fds < 100, "server holds {fds} descriptors after the burst");
    finish(server);
}

/// The test itself holds 1,000 sockets.
fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a live, writable rlimit for getrlimit to fill.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    assert!(
        lim.rlim_max >= 1200,
        "this test needs 1,200 open files; the hard limit is {}",
        lim.rlim_max
    );
    lim.rlim_cur = lim.rlim_cur.max(1200);
    // SAFETY: `lim` is a live rlimit that setrlimit only reads.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
}
