//! Helpers shared by the chat tests: the real binary as server and client, a fake chat_c and
//! chat_s at the byte level, and the checks that nothing is left behind. (Uses the crate's
//! `common` module: a file that includes this one declares both.)
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::common::child::{port_in, through};
use crate::common::wait::until;

pub const BIN: &str = env!("CARGO_BIN_EXE_schedlab");
pub const MSG: usize = 100;

/// A `schedlab chat-server` on 127.0.0.1 and a port the kernel picked; killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub stdout: Arc<Mutex<String>>,
    pub stderr: Arc<Mutex<String>>,
    collectors: [JoinHandle<()>; 2],
}

/// Reads `pipe` into `into` line by line, on a thread of its own, until the pipe's end.
fn collect(pipe: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            let mut s = into.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    })
}

/// Waits for `collectors` to reach their pipes' end once the child has exited: its last lines
/// may still be on their way (a fixed pause lost them on a loaded machine). Bounded, as
/// something the child left behind could hold a pipe open.
fn drained(collectors: &[JoinHandle<()>]) {
    let _ = until(Duration::from_secs(5), Duration::from_millis(5), || {
        let done = collectors.iter().all(JoinHandle::is_finished);
        done.then_some(()).ok_or(())
    });
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        Self::start_with(&[], "127.0.0.1", extra)
    }

    /// `prefix` runs the binary through another command (`ip netns exec NS`).
    pub fn start_with(prefix: &[&str], ip: &str, extra: &[&str]) -> Server {
        let mut child = spawn_piped(prefix, &[&["chat-server", ip, "0"], extra].concat());
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        err.read_line(&mut first).expect("server stderr");
        let port = port_in(&first);
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let collectors = [
            collect(child.stdout.take().unwrap(), stdout.clone()),
            collect(err.into_inner(), stderr.clone()),
        ];
        Server {
            child,
            port,
            stdout,
            stderr,
            collectors,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn out(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }

    pub fn err(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until the server's stderr (or stdout) contains `text`.
    pub fn wait_for(&self, text: &str, within: Duration) {
        let said = until(within, Duration::from_millis(20), || {
            let said = self.err().contains(text) || self.out().contains(text);
            said.then_some(()).ok_or(())
        });
        if said.is_err() {
            panic!(
                "server never said {text:?}; stdout:\n{}\nstderr:\n{}",
                self.out(),
                self.err()
            );
        }
    }

    /// Waits for the server to exit by itself (it was given --runs).
    pub fn wait(mut self, within: Duration) -> ExitStatus {
        let status = wait_child(&mut self.child, within)
            .unwrap_or_else(|| panic!("server did not exit; stderr:\n{}", self.err()));
        drained(&self.collectors);
        status
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait_child(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let ended = until(within, Duration::from_millis(10), || {
        child.try_wait().unwrap().ok_or(())
    });
    if ended.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    ended.ok()
}

/// Starts `schedlab chat-client` against 127.0.0.1:`port`: `rooms` rooms of 20 users, each
/// sending `messages` messages.
pub fn start_client(port: u16, rooms: u32, messages: u32, stdout: Stdio, stderr: Stdio) -> Child {
    Command::new(BIN)
        .args(["chat-client", "127.0.0.1"])
        .args([rooms, messages, port.into()].map(|n| n.to_string()))
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("start chat-client")
}

/// Starts `schedlab ARGS` through `prefix`, stdin empty, stdout and stderr piped to the test.
fn spawn_piped(prefix: &[&str], args: &[&str]) -> Child {
    through(prefix, BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start schedlab {args:?}: {e}"))
}

/// Runs `schedlab ARGS` to the end (at most `within`), killing it if it hangs.
pub fn run(args: &[&str], within: Duration) -> Output {
    run_with(&[], args, within)
}

pub fn run_with(prefix: &[&str], args: &[&str], within: Duration) -> Output {
    let mut child = spawn_piped(prefix, args);
    let out = Arc::new(Mutex::new(String::new()));
    let err = Arc::new(Mutex::new(String::new()));
    let collectors = [
        collect(child.stdout.take().unwrap(), out.clone()),
        collect(child.stderr.take().unwrap(), err.clone()),
    ];
    let status = wait_child(&mut child, within);
    drained(&collectors);
    let stdout = out.lock().unwrap().clone().into_bytes();
    let stderr = err.lock().unwrap().clone().into_bytes();
    let status = status.unwrap_or_else(|| {
        panic!(
            "schedlab {args:?} hung for {within:?}; stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )
    });
    Output {
        status,
        stdout,
        stderr,
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The value of a report line such as `Messages sent      : 2000`.
pub fn report_value(report: &str, label: &str) -> u64 {
    report
        .lines()
        .find(|l| l.starts_with(label))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in report:\n{report}"))
}

/// An honest schedlab client run against `port`, with its exact counts checked.
pub fn honest_run(port: u16, rooms: u64, messages: u64) {
    let out = run(
        &[
            "chat-client",
            "127.0.0.1",
            &rooms.to_string(),
            &messages.to_string(),
            &port.to_string(),
        ],
        Duration::from_secs(60),
    );
    let report = text(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {}\n{report}",
        text(&out.stderr)
    );
    assert_eq!(
        report_value(&report, "Messages sent"),
        rooms * 20 * messages
    );
    assert_eq!(
        report_value(&report, "Messages received"),
        rooms * 20 * messages * 19
    );
}

/// Threads of a process (entries of /proc/PID/task).
pub fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Waits until `pid` has exactly `n` threads; returns the last count seen.
pub fn wait_threads(pid: u32, n: usize, within: Duration) -> usize {
    wait_thread_count(pid, within, |now| now == n)
}

/// Waits until `pid` has at least `n` threads; returns the last count seen.
pub fn wait_threads_at_least(pid: u32, n: usize, within: Duration) -> usize {
    wait_thread_count(pid, within, |now| now >= n)
}

fn wait_thread_count(pid: u32, within: Duration, done: impl Fn(usize) -> bool) -> usize {
    until(within, Duration::from_millis(10), || {
        let now = threads(pid);
        if done(now) {
            Ok(now)
        } else {
            Err(now)
        }
    })
    .unwrap_or_else(|now| now)
}

/// The SysV ids a schedlab process's ledger names right now.
pub fn ledger_ids(pid: u32) -> Vec<i32> {
    use schedlab::sys::kernel::sysv::Object;
    schedlab::sys::kernel::sysv::ledger_of(pid).map_or_else(Vec::new, |l| {
        l.objects
            .iter()
            .map(|o| match *o {
                Object::Sem(id) | Object::Msg(id) => id,
            })
            .collect()
    })
}

/// Whether a ledger file of `pid` is still in /dev/shm.
pub fn has_ledger(pid: u32) -> bool {
    schedlab::sys::kernel::sysv::ledger_of(pid).is_some()
}

/// Semaphore set ids alive in the kernel (what `ipcs -s` lists).
pub fn live_sems() -> Vec<i32> {
    let text = std::fs::read_to_string("/proc/sysvipc/sem").unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

/// Asserts that none of `ids` is alive any more.
pub fn assert_gone(ids: &[i32]) {
    let live = live_sems();
    let left: Vec<_> = ids.iter().filter(|id| live.contains(id)).collect();
    assert!(left.is_empty(), "semaphore sets left behind: {left:?}");
}

/// A connection to the server on 127.0.0.1:`port` that has said nothing yet.
pub fn connect(port: u16) -> TcpStream {
    TcpStream::connect(("127.0.0.1", port)).expect("connecting to the chat server")
}

/// A fake chat_c: opens the control connection and sends a raw start message.
pub fn control(port: u16, rooms: i32, messages: i32) -> TcpStream {
    let mut c = connect(port);
    let mut start = Vec::new();
    start.extend_from_slice(&rooms.to_ne_bytes());
    start.extend_from_slice(&messages.to_ne_bytes());
    c.write_all(&start).unwrap();
    c
}

/// True when the peer closes `s` within `within` (read returns 0 or an error).
pub fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

/// A port nobody listens on (bound, then released).
pub fn dead_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
