//! The chatroom benchmark end to end: schedlab's client against its server, each side against
//! a byte-level stand-in for the original's other side, bad input, and chat-bench.

mod chat_common;
mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chat_common::*;
use common::child::read_to_end;

const SECS: fn(u64) -> Duration = Duration::from_secs;

#[test]
fn two_rooms_fifty_messages_give_exact_counts_on_both_sides() {
    let server = Server::start(&["--runs", "1"]);
    let out = run(
        &[
            "chat-client",
            "127.0.0.1",
            "2",
            "50",
            &server.port.to_string(),
        ],
        SECS(60),
    );
    let report = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(report_value(&report, "Messages sent"), 2_000);
    assert_eq!(report_value(&report, "Messages received"), 38_000);
    assert_eq!(report_value(&report, "Total messages"), 40_000);
    assert!(report.contains("Simulator version  : 1.0.1\n"));
    // The original's progress lines, in order.
    let expected_start = "Creating room number 1 ...\n20 connections so far.\n\
        Creating room number 2 ...\n40 connections so far.\nRunning the test ...\nTest complete.\n";
    assert!(report.starts_with(expected_start), "{report}");
    // Scripts read the 4th field of the last line (`awk '{print $4}'`).
    let last = report.lines().last().unwrap();
    assert!(last.starts_with("Average throughput : "), "{last}");
    assert!(last.ends_with(" messages per second"), "{last}");
    let n: f64 = last.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!(n > 0.0);

    let pid = server.pid();
    let stdout = server.stdout.clone();
    assert!(server.wait(SECS(10)).success());
    let stdout = stdout.lock().unwrap().clone();
    assert_eq!(
        stdout,
        "SRV: client connected, rooms = 2 messages = 50\n\
         SRV(1) 2000 messages received, 38000 messages sent\n"
    );
    assert!(!has_ledger(pid), "server left its SysV ledger");
}

/// A stand-in for the original chat_s, written from the protocol: it checks every byte the
/// schedlab client sends and plays the server's part.
#[test]
fn schedlab_client_speaks_chat_s_byte_for_byte() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut client = start_client(port, 2, 50, Stdio::piped(), Stdio::piped());
    let pid = client.id();

    let (mut control, _) = listener.accept().unwrap();
    let mut start = [0u8; 8];
    control.read_exact(&mut start).unwrap();
    let mut expect = Vec::new();
    expect.extend_from_slice(&2i32.to_ne_bytes());
    expect.extend_from_slice(&50i32.to_ne_bytes());
    assert_eq!(
        start.to_vec(),
        expect,
        "start message: two native-endian i32"
    );

    let conns: Vec<TcpStream> = (0..40).map(|_| listener.accept().unwrap().0).collect();
    // Every user has its send and receive thread before START; plus main and signal thread.
    let seen = wait_threads(pid, 2 * 40 + 2, SECS(10));
    assert_eq!(seen, 82, "client threads with 40 connections");
    // Nothing flows before START.
    for c in &conns {
        c.set_nonblocking(true).unwrap();
        let mut b = [0u8; 1];
        assert!(matches!((&*c).read(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
        c.set_nonblocking(false).unwrap();
    }
    control.write_all(&[0x11]).unwrap();

    std::thread::scope(|s| {
        for (i, c) in conns.iter().enumerate() {
            s.spawn(move || {
                // Each user sends exactly 50 messages of 100 bytes, then nothing.
                let mut got = Vec::new();
                let mut r = c;
                let mut buf = [0u8; 4096];
                while got.len() < 50 * MSG {
                    let n = r.read(&mut buf).unwrap();
                    assert!(n > 0, "user {i} closed early");
                    got.extend_from_slice(&buf[..n]);
                }
                assert_eq!(got.len(), 50 * MSG, "user {i} sent more than 50 messages");
            });
            s.spawn(move || {
                let mut w = c;
                let block = [i as u8; MSG];
                for _ in 0..50 * 19 {
                    w.write_all(&block).unwrap();
                }
            });
        }
    });
    let mut end = [0u8; 1];
    control.read_exact(&mut end).unwrap();
    assert_eq!(end[0], 0x22, "END byte");
    let status = wait_child(&mut client, SECS(20)).expect("client exits");
    let report = read_to_end(client.stdout.take().unwrap());
    assert!(status.success(), "{report}");
    assert_eq!(report_value(&report, "Messages sent"), 2_000);
    assert_eq!(report_value(&report, "Messages received"), 38_000);
    // After END the client closes its connections: nothing more was sent.
    for c in &conns {
        assert!(closed_within(&mut c.try_clone().unwrap(), SECS(5)));
    }
    assert!(!has_ledger(pid));
}

/// A stand-in for the original chat_c driving schedlab's server over raw sockets.
#[test]
fn schedlab_server_serves_chat_c_byte_for_byte() {
    let server = Server::start(&["--runs", "1"]);
    let pid = server.pid();
    let mut control = control(server.port, 2, 50);
    let conns: Vec<TcpStream> = (0..40).map(|_| connect(server.port)).collect();
    let mut start = [0u8; 1];
    control.set_read_timeout(Some(SECS(10))).unwrap();
    control.read_exact(&mut start).unwrap();
    assert_eq!(start[0], 0x11, "START byte");
    assert_eq!(
        threads(pid),
        2 * 40 + 2,
        "server threads with 40 connections"
    );
    let sems = ledger_ids(pid);
    assert_eq!(sems.len(), 2, "one semaphore set per room");

    std::thread::scope(|s| {
        for (i, c) in conns.iter().enumerate() {
            let (room, user) = (i / 20, i % 20);
            s.spawn(move || {
                let mut w = c;
                for seq in 0..50u8 {
                    let mut m = [seq; MSG];
                    m[0] = room as u8;
                    m[1] = user as u8;
                    w.write_all(&m).unwrap();
                }
            });
            s.spawn(move || {
                // 19 users x 50 messages come back, each one of the room's other users'.
                let mut r = c;
                let mut m = [0u8; MSG];
                for _ in 0..50 * 19 {
                    r.read_exact(&mut m).unwrap();
                    assert_eq!(m[0] as usize, room, "a message from another room");
                    assert!(
                        (m[1] as usize) < 20 && m[1] as usize != user,
                        "own message echoed"
                    );
                }
            });
        }
    });
    control.write_all(&[0x22]).unwrap();
    let out = server.stdout.clone();
    let status = server.wait(SECS(10));
    assert!(status.success());
    assert_eq!(
        *out.lock().unwrap(),
        "SRV: client connected, rooms = 2 messages = 50\n\
         SRV(1) 2000 messages received, 38000 messages sent\n"
    );
    // It closed every data connection and sent nothing more.
    for c in &conns {
        assert!(closed_within(&mut c.try_clone().unwrap(), SECS(5)));
    }
    assert_gone(&sems);
    assert!(!has_ledger(pid));
}

#[test]
fn the_seeds_awk_loop_works_on_the_output() {
    let server = Server::start(&["--runs", "3"]);
    let script = format!(
        "for i in `seq 1 1 3`; do {BIN} chat-client 127.0.0.1 1 20 {port} >> \"$OUT\"; done; \
         grep Average \"$OUT\" | awk '{{tot+=$4}}; END {{print \"Average throughput: \" tot/NR \" messages per second\"}}'",
        port = server.port
    );
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("sh")
        .args(["-c", &script])
        .env("OUT", dir.path().join("total.results"))
        .output()
        .unwrap();
    let line = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let avg: f64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(avg > 0.0, "{line}");
    assert!(server.wait(SECS(10)).success());
}

/// A mistake in the arguments: one line, and clap's status 2 whoever found it.
fn one_line_error(args: &[&str], what: &str) {
    one_line_exit(args, what, 2)
}

/// A failure of the run itself (the machine's limit, the network): one line, status 1.
fn one_line_failure(args: &[&str], what: &str) {
    one_line_exit(args, what, 1)
}

fn one_line_exit(args: &[&str], what: &str, code: i32) {
    let start = Instant::now();
    let out = run(args, SECS(20));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    assert!(
        err.starts_with(&format!("schedlab {}: error: ", args[0])),
        "{err}"
    );
    assert!(err.contains(what), "{args:?}: {err} lacks {what:?}");
    assert!(start.elapsed() < SECS(15));
}

#[test]
fn bad_input_gets_one_clear_line() {
    let port = dead_port().to_string();
    let c = |ip: &'static str, r: &'static str, m: &'static str| ["chat-client", ip, r, m, "9"];
    one_line_error(&c("300.1.2.3", "1", "1"), "invalid address");
    one_line_error(&c("localhost", "1", "1"), "invalid address");
    one_line_error(&c("127.0.0.1", "0", "1"), "rooms must be");
    one_line_error(&c("127.0.0.1", "-2", "1"), "rooms must be");
    one_line_failure(&c("127.0.0.1", "1e9", "1"), "this machine holds at most");
    one_line_error(&c("127.0.0.1", "1", "0"), "messages must be");
    one_line_error(&c("127.0.0.1", "1", "-7"), "messages must be");
    one_line_error(&c("127.0.0.1", "1", "1e9"), "messages must be");
    one_line_error(&c("127.0.0.1", "1", "x"), "whole number");
    one_line_error(&["chat-client", "127.0.0.1", "1", "1", "0"], "port must be");
    // No server listening: an answer within seconds.
    one_line_failure(
        &["chat-client", "127.0.0.1", "1", "1", &port],
        "cannot connect",
    );
    one_line_error(&["chat-server", "127.0.0.1", "99999"], "port must be");
    one_line_error(&["chat-server", "::x"], "invalid address");
    one_line_error(&["chat-server", "127.0.0.1", "0", "--runs", "0"], "--runs");
    one_line_error(&["chat-bench", "0", "10", "--runs", "1"], "rooms must be");
    // A port in use.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = taken.local_addr().unwrap().port().to_string();
    one_line_failure(&["chat-server", "127.0.0.1", &p], "in use");
}

#[test]
fn client_exits_with_an_error_when_the_server_dies_mid_run() {
    let server = Server::start(&[]);
    let mut client = start_client(server.port, 2, 30000, Stdio::null(), Stdio::piped());
    let cpid = client.id();
    server.wait_for("client connected", SECS(10));
    std::thread::sleep(Duration::from_millis(300));
    drop(server); // SIGKILL
    let status = wait_child(&mut client, SECS(15)).expect("client hung after the server died");
    let err = read_to_end(client.stderr.take().unwrap());
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("schedlab chat-client: error: "), "{err}");
    assert!(!has_ledger(cpid));
}

#[test]
fn chat_bench_runs_and_counts_and_leaves_nothing() {
    let out = run(&["chat-bench", "2", "50", "--runs", "2"], SECS(60));
    let text = text(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for l in lines {
        assert!(l.starts_with("Average throughput : "), "{l}");
        assert!(l.split_whitespace().nth(3).unwrap().parse::<f64>().unwrap() > 0.0);
    }
}

/// SIGTERM (what the lifeline sends) takes the bench and its server child down, mid-run.
#[test]
fn chat_bench_killed_mid_run_leaves_nothing() {
    let mut bench = Command::new(BIN)
        .args(["chat-bench", "2", "30000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = bench.id();
    // The server child, once the run is going (the bench has its 80 client threads).
    let deadline = Instant::now() + SECS(20);
    let server_pid = loop {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(c) = children.split_whitespace().next() {
            if threads(pid) >= 80 {
                break c.parse::<u32>().unwrap();
            }
        }
        assert!(Instant::now() < deadline, "chat-bench never started a run");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill takes no pointer and touches no memory of ours.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = wait_child(&mut bench, SECS(10)).expect("chat-bench ignored SIGTERM");
    assert!(!status.success());
    let deadline = Instant::now() + SECS(5);
    while std::path::Path::new(&format!("/proc/{server_pid}")).exists() {
        // Reaped by init once it exits; a zombie is gone for our purposes.
        let stat = std::fs::read_to_string(format!("/proc/{server_pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat[stat.rfind(')').unwrap() + 2..].starts_with('Z') {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server child outlived chat-bench"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(!has_ledger(pid), "chat-bench left its SysV ledger");
    assert!(
        !has_ledger(server_pid),
        "the server child left its SysV ledger"
    );
}

/// A client much faster than the server: its start message and all 100 users wait in the
/// backlog (the server is stopped) before the server reads anything. None of its users may be
/// taken for, or crowd out, its control connection.
#[test]
fn users_queued_behind_the_start_message_are_not_mistaken_for_control_connections() {
    let server = Server::start(&["--runs", "1"]);
    let pid = server.pid() as i32;
    // SAFETY: kill takes no pointer and touches no memory of ours.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let mut c = control(server.port, 5, 1);
    let conns: Vec<TcpStream> = (0..100).map(|_| connect(server.port)).collect();
    // SAFETY: kill takes no pointer and touches no memory of ours.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let mut b = [0u8; 1];
    c.set_read_timeout(Some(SECS(10))).unwrap();
    c.read_exact(&mut b).expect("START");
    assert_eq!(b[0], 0x11);
    std::thread::scope(|s| {
        for conn in &conns {
            s.spawn(move || {
                let mut io = conn;
                io.write_all(&[0u8; MSG]).unwrap();
                let mut m = [0u8; MSG];
                for _ in 0..19 {
                    io.read_exact(&mut m).unwrap();
                }
            });
        }
    });
    c.write_all(&[0x22]).unwrap();
    let out = server.stdout.clone();
    assert!(server.wait(SECS(10)).success());
    assert!(out
        .lock()
        .unwrap()
        .contains("SRV(1) 100 messages received, 1900 messages sent"));
}
